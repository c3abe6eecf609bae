/* rate R S [FILE]: R getppid calls per second for S seconds, evenly
 * paced (absolute deadlines, so the average rate is exact even if a
 * wake-up is late); with FILE, writes there each call's CLOCK_MONOTONIC
 * time (ns, read as the call returns), one a line: the calls as they
 * happened, late wake-ups included. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

int main(int argc, char **argv) {
	long rate = argc > 1 ? atol(argv[1]) : 1000;
	long secs = argc > 2 ? atol(argv[2]) : 3;
	long step = 1000000000L / rate;
	long n = rate * secs;
	long long *at = calloc(n, sizeof *at);
	struct timespec t, now;
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (long i = 0; i < n; i++) {
		t.tv_nsec += step;
		while (t.tv_nsec >= 1000000000L) {
			t.tv_nsec -= 1000000000L;
			t.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		syscall(SYS_getppid);
		clock_gettime(CLOCK_MONOTONIC, &now);
		at[i] = now.tv_sec * 1000000000LL + now.tv_nsec;
	}
	if (argc > 3) {
		FILE *f = fopen(argv[3], "w");
		if (!f)
			return 1;
		for (long i = 0; i < n; i++)
			fprintf(f, "%lld\n", at[i]);
		fclose(f);
	}
	return 0;
}
