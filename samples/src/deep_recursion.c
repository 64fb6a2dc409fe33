/* deep_recursion: 600 nested calls of deep_recurse, each with ~300 bytes of
 * locals (~180 KiB of stack), and the hot work at the bottom.  An 8 KiB DWARF
 * stack snapshot holds only the innermost ~25 frames; the kernel's fp
 * callchain stops at perf_event_max_stack (127).
 * Stack: deep_leaf_work <- deep_recurse x600 <- main */
#include <stdio.h>
#include "common.h"

#define DEPTH 600

static volatile unsigned long sink;
static unsigned long iterations = 450000000UL;

__attribute__((noinline)) unsigned long deep_leaf_work(unsigned long n)
{
    unsigned long x = 9;
    for (unsigned long i = 0; i < n; i++)
        x = (x + i) * 0x9E3779B97F4A7C15UL;
    return x;
}

__attribute__((noinline)) unsigned long deep_recurse(int depth)
{
    volatile unsigned char pad[288];
    pad[0] = (unsigned char)depth;
    pad[sizeof pad - 1] = (unsigned char)(depth >> 1);
    unsigned long r;
    if (depth <= 1)
        r = deep_leaf_work(iterations);
    else
        r = deep_recurse(depth - 1);
    return r + pad[0] + pad[sizeof pad - 1];   /* not a tail call */
}

int main(int argc, char **argv)
{
    iterations = (unsigned long)(iterations * sample_scale(argc, argv));
    sink = deep_recurse(DEPTH);
    printf("deep_recursion: %lu\n", sink);
    return 0;
}
