/* stitch_depths: a recursive descent whose depth is drawn at random (1 to
 * 120 levels) at each iteration of the same loop, frames of 200, 400 and
 * 600 bytes; deeper than perf's 8 KiB DWARF stack copy holds (about 20
 * levels), so the outer frames of a deep sample are seen only in samples
 * of other depths, taken in other iterations (the --stitch tests).
 *
 * Level L of the descent is step_<L % 3> (frames of 200, 400, 600 bytes);
 * the deepest level D calls the leaf of its path and depth, leaf_<P>_<D>,
 * which only burns CPU.  So a sample in leaf_P_D has the stack
 *     leaf_P_D <- step_<D % 3> <- step_<(D - 1) % 3> ... <- step_0 <- descend <- entry_P
 *     <- (the root of P)
 * Modes (argv[1]):
 *   recursive  path a on the main thread
 *   callers    entry_a and entry_b (frames of the same size) called at
 *              random from the same loop: the descent's frames lie at the
 *              same places with the same return addresses under either
 *   coroutine  path a on the main stack, path b on a makecontext stack,
 *              switching after every leaf
 *   threads    paths a, b, c on three threads
 * argv[2]: iterations (default 750).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stitch_coroutine.h"

#define DEPTHS 121

typedef void (*leaf_fn)(void);

static volatile unsigned long sink;
static unsigned long burn_iters = 1700000;

#define LEAF(p, n) __attribute__((noinline)) void leaf_##p##_##n(void) \
    { unsigned long x = sink; for (unsigned long i = 0; i < burn_iters; i++) \
          x = x * 6364136223846793005UL + i; sink = x; }
#define TEN(m, p, t) m(p, t##0) m(p, t##1) m(p, t##2) m(p, t##3) m(p, t##4) \
    m(p, t##5) m(p, t##6) m(p, t##7) m(p, t##8) m(p, t##9)
#define ALL(m, p) TEN(m, p, ) TEN(m, p, 1) TEN(m, p, 2) TEN(m, p, 3) TEN(m, p, 4) \
    TEN(m, p, 5) TEN(m, p, 6) TEN(m, p, 7) TEN(m, p, 8) TEN(m, p, 9) TEN(m, p, 10) \
    TEN(m, p, 11) m(p, 120)
#define NAME(p, n) leaf_##p##_##n,
#define LEAVES(p) ALL(LEAF, p) static const leaf_fn leaves_##p[DEPTHS] = { ALL(NAME, p) };

LEAVES(a)
LEAVES(b)
LEAVES(c)

struct walk {
    const leaf_fn *leaves;
    int depth;
    void (*yield)(void);        /* after every leaf (coroutine mode) */
};

void step_0(const struct walk *w, int level);
void step_1(const struct walk *w, int level);
void step_2(const struct walk *w, int level);

#define STEP(k, next, size) __attribute__((noinline)) \
    void step_##k(const struct walk *w, int level) \
    { \
        volatile char pad[size]; \
        pad[0] = (char)level; \
        if (level == w->depth) { \
            w->leaves[level](); \
            if (w->yield) \
                w->yield(); \
        } else { \
            next(w, level + 1); \
        } \
        pad[size - 1] = pad[0];     /* no tail call: the frame stays */ \
    }
STEP(0, step_1, 168)
STEP(1, step_2, 368)
STEP(2, step_0, 568)

static unsigned int seed_a = 1, seed_b = 2, seed_c = 3, seed_main = 4;
static int iterations = 750;

__attribute__((noinline)) void descend(const leaf_fn *leaves, unsigned int *seed, void (*yield)(void))
{
    struct walk w = { leaves, rand_r(seed) % DEPTHS, yield };
    step_0(&w, 0);
}

__attribute__((noinline)) void entry_a(void) { descend(leaves_a, &seed_a, yield_a); }
__attribute__((noinline)) void entry_b(void) { descend(leaves_b, &seed_b, yield_b); }
__attribute__((noinline)) void entry_c(void) { descend(leaves_c, &seed_c, 0); }

__attribute__((noinline)) void loop(void (*entry)(void))
{
    for (int i = 0; i < iterations; i++)
        entry();
}

__attribute__((noinline)) void *thread_a(void *arg) { loop(entry_a); return arg; }
__attribute__((noinline)) void *thread_b(void *arg) { loop(entry_b); return arg; }
__attribute__((noinline)) void *thread_c(void *arg) { loop(entry_c); return arg; }

__attribute__((noinline)) void coro_main(void)
{
    loop(entry_b);
    coro_done = 1;              /* returns to main_ctx (uc_link) */
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "recursive";
    if (argc > 2)
        iterations = atoi(argv[2]);
    if (!strcmp(mode, "recursive")) {
        loop(entry_a);
    } else if (!strcmp(mode, "callers")) {
        for (int i = 0; i < iterations; i++)
            (rand_r(&seed_main) & 1 ? entry_a : entry_b)();
    } else if (!strcmp(mode, "coroutine")) {
        RUN_COROUTINE(coro_main, loop(entry_a));
    } else if (!strcmp(mode, "threads")) {
        pthread_t t[3];
        iterations /= 3;
        pthread_create(&t[0], 0, thread_a, 0);
        pthread_create(&t[1], 0, thread_b, 0);
        pthread_create(&t[2], 0, thread_c, 0);
        for (int i = 0; i < 3; i++)
            pthread_join(t[i], 0);
    } else {
        fprintf(stderr, "usage: stitch_depths recursive|callers|coroutine|threads [iterations]\n");
        return 2;
    }
    printf("stitch_depths %s: %lu\n", mode, sink);
    return 0;
}
