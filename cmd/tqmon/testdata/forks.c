/* forks: a process tree making known numbers of getppid calls, for
 * --follow. The root makes 100 and forks two children; each child makes
 * 20 and the second forks a grandchild that makes 3. Each parent waits
 * for its children. Total: 100 + 2*20 + 3 = 143; the root alone: 100. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void calls(int n) {
	for (int i = 0; i < n; i++)
		syscall(SYS_getppid);
}

int main(void) {
	calls(100);
	for (int c = 0; c < 2; c++) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			calls(20);
			if (c == 1) {
				pid_t g = fork();
				if (g == 0) {
					calls(3);
					_exit(0);
				}
				waitpid(g, NULL, 0);
			}
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	return 0;
}
