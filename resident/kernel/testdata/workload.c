// The kernel tests' workload: exactly N getppid calls, opens the files it
// is given, burns CPU for a while, sleeps 10 ms, then reports its CPU time
// as /proc sees it.
//
//   workload N BURN_MS OUT FILE...
//
// OUT receives four lines: /proc/self/stat's utime+stime (clock ticks),
// /proc/self/schedstat's run time (ns) at the end, and at the start of
// main (what ran before — the launcher's shim — is not the workload's),
// and the time the N calls took (ns, monotonic clock). Built statically, so that nothing
// but what is written here runs in the process (no dynamic loader opening
// libraries).
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long elapsed_ns(struct timespec *a, struct timespec *b) {
	return (b->tv_sec - a->tv_sec) * 1000000000L + (b->tv_nsec - a->tv_nsec);
}

static int slurp(const char *path, char *buf, int size) {
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	int n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: workload N BURN_MS OUT FILE...\n");
		return 2;
	}
	long n = atol(argv[1]), burn = atol(argv[2]);
	char sched0[256];
	if (slurp("/proc/self/schedstat", sched0, sizeof sched0) < 0)
		return 3;
	struct timespec c0, c1;
	clock_gettime(CLOCK_MONOTONIC, &c0);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &c1);
	for (int i = 4; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY);
		if (fd >= 0)
			close(fd);
	}
	struct timespec s, e;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &s);
	volatile unsigned long x = 0;
	do {
		for (int k = 0; k < 100000; k++)
			x += k;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &e);
	} while (elapsed_ns(&s, &e) < burn * 1000000L);
	// Off the processor for 10 ms.
	struct timespec nap = {0, 10 * 1000000L};
	nanosleep(&nap, NULL);

	char stat[4096], sched[256];
	if (slurp("/proc/self/stat", stat, sizeof stat) < 0 || slurp("/proc/self/schedstat", sched, sizeof sched) < 0)
		return 3;
	// utime and stime are fields 14 and 15; the command (field 2) may hold spaces.
	char *p = strrchr(stat, ')');
	unsigned long utime = 0, stime = 0;
	int field = 2;
	for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " ")) {
		field++;
		if (field == 14)
			utime = strtoul(tok, NULL, 10);
		if (field == 15) {
			stime = strtoul(tok, NULL, 10);
			break;
		}
	}
	int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return 4;
	dprintf(fd, "%lu\n%lu\n%lu\n%ld\n", utime + stime, strtoul(sched, NULL, 10), strtoul(sched0, NULL, 10), elapsed_ns(&c0, &c1));
	close(fd);
	return 0;
}
