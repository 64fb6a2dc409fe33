/* diff_work: three functions whose work is known, for `perfdata diff` and
 * the differential flame graph (tests/views/test_diff*.py).
 *
 *   diff_work FACTOR [N]
 *
 * Each of ten rounds calls steady(N), grows(N * FACTOR) and other(N / 2):
 * run with FACTOR 1 then 2, grows' work doubles and the others' stays the
 * same (steady : grows : other is 2 : 2 : 1, then 2 : 4 : 1).  Each loop
 * only adds to a volatile, so the time is the loop's, whatever the
 * optimisation level (the tests build -O1 and -O2: other addresses). */
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void steady(long n)
{
	for (long i = 0; i < n; i++)
		sink += i * 3;
}

__attribute__((noinline)) void grows(long n)
{
	for (long i = 0; i < n; i++)
		sink += i ^ 5;
}

__attribute__((noinline)) void other(long n)
{
	for (long i = 0; i < n; i++)
		sink += i + 7;
}

int main(int argc, char **argv)
{
	long factor = argc > 1 ? atol(argv[1]) : 1;
	long n = argc > 2 ? atol(argv[2]) : 4000000;

	for (int round = 0; round < 10; round++) {
		steady(n);
		grows(n * factor);
		other(n / 2);
	}
	return 0;
}
