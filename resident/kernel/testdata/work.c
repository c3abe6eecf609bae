// The uprobe tests' C program: calls work(i) N times, each call a little
// busy (and, with a second argument, PAUSE microseconds apart), and prints
// the sum of what it returned.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) long work(long i) {
	volatile long x = 0;
	for (long k = 0; k < 1000; k++)
		x += k ^ i;
	return i * 2;
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 10, sum = 0;
	long pause = argc > 2 ? atol(argv[2]) : 0;
	for (long i = 0; i < n; i++) {
		sum += work(i);
		if (pause > 0)
			usleep(pause);
	}
	printf("%ld\n", sum);
	return 0;
}
