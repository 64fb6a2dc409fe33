/* stripped: the recorded binary is stripped (no .symtab, no .debug_*);
 * its debug info lives in samples/debug/ (found by build-id or by the
 * .gnu_debuglink name stripped.debug).
 * Stack: stripped_hot_inner <- stripped_hot_outer <- main */
#include <stdio.h>
#include "common.h"

static volatile unsigned long sink;

__attribute__((noinline)) unsigned long stripped_hot_inner(unsigned long n)
{
    unsigned long x = 5;
    for (unsigned long i = 0; i < n; i++)
        x = (x * 31 + i) ^ (x >> 3);
    return x;
}

__attribute__((noinline)) unsigned long stripped_hot_outer(unsigned long n)
{
    unsigned long r = stripped_hot_inner(n);
    sink = r;
    return r + 1;
}

int main(int argc, char **argv)
{
    unsigned long n = (unsigned long)(500000000 * sample_scale(argc, argv));
    printf("stripped: %lu\n", stripped_hot_outer(n));
    return 0;
}
