/* Two stacks the kernel builds: a signal handler running on top of the
   signal frame (glibc's __restore_rt, an 'S' FDE whose rules are DWARF
   expressions into the ucontext), and a call into the vdso, whose CFI is
   only in the process's memory. */
#include <signal.h>
#include <stdio.h>
#include <time.h>

volatile int sink;

__attribute__((noinline)) void in_handler(int n)
{
    sink = n;
}

static void handler(int sig)
{
    in_handler(sig);
    sink++;
}

__attribute__((noinline)) long read_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_nsec + sink;
}

int main(void)
{
    signal(SIGUSR1, handler);
    raise(SIGUSR1);
    printf("%ld\n", read_clock());
    return 0;
}
