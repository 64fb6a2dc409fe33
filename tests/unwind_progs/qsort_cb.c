/* A leaf called back from libc's qsort: the stack runs through libc's
   msort frames, unwound with libc's .eh_frame. */
#include <stdlib.h>
#include <stdio.h>

volatile int sink;

__attribute__((noinline)) int compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    sink++;
    return (x > y) - (x < y);
}

__attribute__((noinline)) int sort_some(int n)
{
    int values[64];
    for (int i = 0; i < n; i++)
        values[i] = (i * 7919) % 61;
    qsort(values, n, sizeof values[0], compare_ints);
    return values[0];
}

int main(void)
{
    printf("%d\n", sort_some(40));
    return 0;
}
