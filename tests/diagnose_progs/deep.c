/* Planted cause "DWARF stack snapshot exhausted": deep_recurse nests DEPTH
 * (default 80) frames of ~320 bytes (~25 KiB of stack), more than perf's
 * default --call-graph=dwarf snapshot of 8192 bytes and less than 65528.
 * True stack, leaf first: deep_leaf <- deep_recurse x DEPTH <- main.
 * argv[1]: seconds to run (default 0.3). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef DEPTH
#define DEPTH 80
#endif

volatile unsigned long sink;

__attribute__((noinline)) unsigned long deep_leaf(unsigned long x, double seconds)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 200000; i++)
            x = x * 6364136223846793005UL + 1;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    return x;
}

__attribute__((noinline)) unsigned long deep_recurse(int n, unsigned long x, double seconds)
{
    volatile char pad[288];
    memset((char *)pad, n, sizeof pad);
    if (n == 0)
        return deep_leaf(x + pad[7], seconds);
    return deep_recurse(n - 1, x + pad[n % 288], seconds) + pad[3];
}

int main(int argc, char **argv)
{
    sink = deep_recurse(DEPTH, 1, argc > 1 ? atof(argv[1]) : 0.3);
    return 0;
}
