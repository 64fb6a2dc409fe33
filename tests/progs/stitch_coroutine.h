/* The coroutine mode of the stitching programs (stitch_stacks.c,
 * stitch_depths.c): path a runs on the main stack, path b (the program's
 * coro_main) on a makecontext stack of 1 MiB, and they switch after every
 * leaf (yield_a on path a, yield_b on path b), both deep. */
#ifndef STITCH_COROUTINE_H
#define STITCH_COROUTINE_H

#include <stdlib.h>
#include <ucontext.h>

static void (*yield_a)(void), (*yield_b)(void);

static ucontext_t main_ctx, coro_ctx;
static volatile int coro_done;  /* set by coro_main as path b ends */

static void to_coroutine(void)
{
    if (!coro_done)
        swapcontext(&main_ctx, &coro_ctx);
}

static void to_main(void) { swapcontext(&coro_ctx, &main_ctx); }

/* coro_main started on its own stack (it returns to main_ctx: uc_link),
 * then path_a (a statement) run here, in the caller's frame, then the
 * coroutine let finish. */
#define RUN_COROUTINE(coro_main, path_a) do {           \
        size_t size = 1 << 20;                          \
        getcontext(&coro_ctx);                          \
        coro_ctx.uc_stack.ss_sp = malloc(size);         \
        coro_ctx.uc_stack.ss_size = size;               \
        coro_ctx.uc_link = &main_ctx;                   \
        makecontext(&coro_ctx, coro_main, 0);           \
        yield_a = to_coroutine;                         \
        yield_b = to_main;                              \
        path_a;                                         \
        while (!coro_done)                              \
            to_coroutine();                             \
    } while (0)

#endif
