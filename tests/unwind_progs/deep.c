/* Recursion far deeper than an 8 KiB stack window: the unwind is cut by
   the snapshot and must say so. */
#include <stdio.h>

volatile int sink;

__attribute__((noinline)) int bottom(int n)
{
    sink = n;
    return n;
}

__attribute__((noinline)) int recurse(int n)
{
    volatile char pad[100];
    pad[0] = (char)n;
    if (n == 0)
        return bottom(pad[0]);
    return recurse(n - 1) + pad[0];
}

int main(void)
{
    printf("%d\n", recurse(400));
    return 0;
}
