/* rate R S: R getppid calls per second for S seconds, evenly paced
 * (absolute deadlines, so the average rate is exact even if a wake-up is
 * late). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

int main(int argc, char **argv) {
	long rate = argc > 1 ? atol(argv[1]) : 1000;
	long secs = argc > 2 ? atol(argv[2]) : 3;
	long step = 1000000000L / rate;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (long i = 0; i < rate * secs; i++) {
		t.tv_nsec += step;
		while (t.tv_nsec >= 1000000000L) {
			t.tv_nsec -= 1000000000L;
			t.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		syscall(SYS_getppid);
	}
	return 0;
}
