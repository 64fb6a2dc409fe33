/* A makecontext coroutine: its stack ends in glibc's __start_context,
   whose CFI marks the return address undefined. */
#include <stdio.h>
#include <ucontext.h>

static ucontext_t main_ctx, coro_ctx;
static char coro_stack[64 * 1024] __attribute__((aligned(16)));
volatile int sink;

__attribute__((noinline)) void coro_leaf(int n)
{
    sink = n;
}

__attribute__((noinline)) void coro_body(void)
{
    coro_leaf(1);
    sink++;
}

int main(void)
{
    getcontext(&coro_ctx);
    coro_ctx.uc_stack.ss_sp = coro_stack;
    coro_ctx.uc_stack.ss_size = sizeof coro_stack;
    coro_ctx.uc_link = &main_ctx;
    makecontext(&coro_ctx, coro_body, 0);
    swapcontext(&main_ctx, &coro_ctx);
    printf("%d\n", sink);
    return 0;
}
