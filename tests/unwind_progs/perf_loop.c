/* A workload for `perf record --call-graph=dwarf`: qsort callbacks (libc
   frames) reached directly and from the bottom of recursions of varying
   depth, some deeper than the 8 KiB stack copy. */
#include <stdio.h>
#include <stdlib.h>

volatile int sink;

__attribute__((noinline)) int compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    sink++;
    return (x > y) - (x < y);
}

__attribute__((noinline)) int sort_some(int n, int seed)
{
    int values[64];
    for (int i = 0; i < n; i++)
        values[i] = (i * 7919 + seed) % 61;
    qsort(values, n, sizeof values[0], compare_ints);
    return values[0];
}

__attribute__((noinline)) int recurse(int depth, int seed)
{
    volatile char pad[64];
    pad[0] = (char)depth;
    if (depth == 0)
        return sort_some(40, seed);
    return recurse(depth - 1, seed) + pad[0];
}

int main(int argc, char **argv)
{
    int loops = argc > 1 ? atoi(argv[1]) : 100000;
    long s = 0;
    for (int k = 0; k < loops; k++)
        s += (k & 1) ? sort_some(40, k) : recurse(k % 150, k);
    printf("%ld\n", s);
    return 0;
}
