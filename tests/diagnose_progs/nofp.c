/* Planted cause "frame-pointer chain broken": nofp_mid is compiled without
 * a frame pointer (and gcc 12 gives the leaf fp_leaf none either), so a -g
 * walk from fp_leaf follows main's %rbp and skips nofp_mid and main.
 * True stack, leaf first: fp_leaf <- nofp_mid <- main.
 * Build: gcc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer. */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) unsigned long fp_leaf(unsigned long x)
{
    for (int i = 0; i < 2000; i++)
        x = x * 2862933555777941757UL + 3037000493UL;
    return x;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline, optimize("omit-frame-pointer")))
unsigned long nofp_mid(unsigned long x, double seconds)
{
    double end = now() + seconds;
    do {
        for (int i = 0; i < 200; i++)
            x = fp_leaf(x);
    } while (now() < end);
    return x;
}

int main(int argc, char **argv)
{
    sink = nofp_mid(1, argc > 1 ? atof(argv[1]) : 0.3);
    return 0;
}
