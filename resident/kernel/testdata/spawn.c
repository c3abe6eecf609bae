/* spawn: a process and K children, all alive at once and all with the
 * program's command name, each opening one known file — for the bound of
 * processes selected by their command at once.
 *
 *   spawn K DIR
 *   spawn -w      (waits until its standard input ends, opening nothing)
 *
 * The parent forks K children, which wait on a pipe until the parent has
 * forked them all (and closes it); then child i opens DIR/i, the parent
 * opens DIR/p, and the parent waits for its children. Built statically:
 * no other file is opened. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void open_one(const char *dir, const char *name) {
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_RDONLY);
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv) {
	if (argc == 2 && argv[1][0] == '-') {
		char c;
		while (read(0, &c, 1) > 0)
			;
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: spawn K DIR\n");
		return 2;
	}
	int k = atoi(argv[1]);
	int p[2];
	if (pipe(p) < 0)
		return 3;
	for (int i = 0; i < k; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 4;
		if (pid == 0) {
			char c, name[16];
			close(p[1]);
			while (read(p[0], &c, 1) > 0)
				;
			snprintf(name, sizeof name, "%d", i);
			open_one(argv[2], name);
			_exit(0);
		}
	}
	close(p[0]);
	close(p[1]);
	open_one(argv[2], "p");
	while (wait(NULL) > 0)
		;
	return 0;
}
