/* vdso_clock: a hot loop on clock_gettime(), served by the vDSO.
 * Stack: (vdso) __vdso_clock_gettime <- (libc) clock_gettime <- hot_clock_loop <- main */
#include <stdio.h>
#include <time.h>
#include "common.h"

__attribute__((noinline)) long hot_clock_loop(unsigned long n)
{
    struct timespec ts;
    long acc = 0;
    for (unsigned long i = 0; i < n; i++) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        acc += ts.tv_nsec & 1;
    }
    return acc;
}

int main(int argc, char **argv)
{
    unsigned long n = (unsigned long)(20000000 * sample_scale(argc, argv));
    printf("vdso_clock: %ld\n", hot_clock_loop(n));
    return 0;
}
