/* coroutine: makecontext/swapcontext; the hot work runs on the coroutine's
 * own (malloc'ed) stack.
 * Stack inside the coroutine: coro_hot_work <- coro_entry <- __start_context
 * (the stack really ends there; frame-pointer walks go on into garbage).
 * Main side: swapcontext <- run_coroutine <- main. */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>
#include "common.h"

static ucontext_t main_ctx, coro_ctx;
static volatile unsigned long sink;
static unsigned long chunk = 3000000;

__attribute__((noinline)) void coro_hot_work(unsigned long n)
{
    unsigned long x = 7;
    for (unsigned long i = 0; i < n; i++)
        x = (x ^ (x << 7)) * 2654435761UL + i;
    sink += x;
}

__attribute__((noinline)) void coro_entry(void)
{
    for (;;) {
        coro_hot_work(chunk);
        swapcontext(&coro_ctx, &main_ctx);   /* yield */
    }
}

__attribute__((noinline)) void run_coroutine(int rounds)
{
    for (int r = 0; r < rounds; r++)
        swapcontext(&main_ctx, &coro_ctx);   /* resume */
}

int main(int argc, char **argv)
{
    size_t size = 256 * 1024;
    chunk = (unsigned long)(chunk * sample_scale(argc, argv));
    getcontext(&coro_ctx);
    coro_ctx.uc_stack.ss_sp = malloc(size);
    coro_ctx.uc_stack.ss_size = size;
    coro_ctx.uc_link = &main_ctx;
    makecontext(&coro_ctx, coro_entry, 0);
    run_coroutine(100);
    printf("coroutine: %lu\n", sink);
    return 0;
}
