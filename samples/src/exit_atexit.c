/* exit_atexit: main -> work_then_exit -> exit(); the atexit handler does the
 * hot work.  work_then_exit's last instruction is `call exit` (exit is
 * noreturn), so its return address points past its end, at the first byte of
 * whatever follows it (here: after_work_then_exit, when the linker keeps the
 * source order).  A symbolizer must look up return address - 1.
 * Stack: hot_atexit_spin <- atexit_handler <- __run_exit_handlers <- exit
 *        <- work_then_exit <- main */
#include <stdio.h>
#include <stdlib.h>
#include "common.h"

static volatile unsigned long sink;
static unsigned long iterations = 450000000UL;

__attribute__((noinline)) void hot_atexit_spin(unsigned long n)
{
    unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
}

__attribute__((noinline)) void atexit_handler(void)
{
    hot_atexit_spin(iterations);
    sink += 1;                  /* keeps the call a call, not a sibling jmp */
}

__attribute__((noinline)) void work_then_exit(int code)
{
    sink = code;
    exit(code);                 /* last instruction: call exit */
}

__attribute__((noinline)) void after_work_then_exit(void)
{
    sink = 42;                  /* never called: marks the byte after work_then_exit */
}

int main(int argc, char **argv)
{
    iterations = (unsigned long)(iterations * sample_scale(argc, argv));
    atexit(atexit_handler);
    if (argc > 5)
        after_work_then_exit();
    work_then_exit(0);
}
