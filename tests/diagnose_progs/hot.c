/* Planted causes "no debuginfo" (built with -g, debug split off, stripped)
 * and "stale binary" (rebuilt with another -DVARIANT after recording).
 * True stack, leaf first: hot_inner <- hot_outer <- main.
 * argv[1]: seconds to run (default 0.3). */
#include <stdlib.h>
#include <time.h>

#ifndef VARIANT
#define VARIANT 1
#endif

volatile unsigned long sink;

__attribute__((noinline)) unsigned long hot_inner(unsigned long x)
{
    for (int i = 0; i < 2000; i++)
        x = x * 6364136223846793005UL + VARIANT;
    return x;
}

__attribute__((noinline)) void hot_outer(double seconds)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long x = 1;
    do {
        for (int i = 0; i < 200; i++)
            x = hot_inner(x);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    sink = x;
}

int main(int argc, char **argv)
{
    hot_outer(argc > 1 ? atof(argv[1]) : 0.3);
    return 0;
}
