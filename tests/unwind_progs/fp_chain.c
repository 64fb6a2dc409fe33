/* Built with frame pointers and without unwind tables (.eh_frame is then
   removed): the unwinder must fall back to frame-pointer steps between
   libc's CFI frames. */
#include <stdio.h>
#include <unistd.h>

volatile int sink;

__attribute__((noinline)) int fp_leaf(int n)
{
    /* the sample is taken inside libc (which has CFI), as most are */
    sink = n + (int)getppid();
    return n + 1;
}

__attribute__((noinline)) int fp_middle(int n)
{
    return fp_leaf(n * 2) + 3;
}

__attribute__((noinline)) int fp_outer(int n)
{
    return fp_middle(n + 1) * 5;
}

int main(void)
{
    printf("%d\n", fp_outer(2));
    return 0;
}
