/* stitch_stacks: call stacks known by construction, deeper than perf's
 * 8 KiB DWARF stack copy, whose depth varies over time (the --stitch tests).
 *
 * descend() recurses with a 1 KiB frame; at each level it calls the leaf of
 * its path and level, leaf_<path>_<level>, which only burns CPU.  So a
 * sample in leaf_P_L has the stack
 *     leaf_P_L <- descend x (L + 1) <- sweep <- entry_P <- (the root of P)
 * and 8 KiB hold about 7 levels: the outer frames of deep samples are seen
 * only in shallower samples of the same thread.  A sweep walks the levels
 * down and up (deep samples after shallow ones), straight down then up
 * (deep samples first: only later samples know their outer frames), and
 * down then straight back (shallow samples after a jump).
 *
 * Modes (argv[1]):
 *   recursive  path a on the main thread
 *   threads    paths a, b, c on three threads
 *   coroutine  path a on the main stack, path b on a makecontext stack;
 *              they switch after every leaf, both deep
 *   phases     paths a then b then a ... on the main thread: entry_a and
 *              entry_b have the same frame, so the descend frames lie at the
 *              same addresses with the same return addresses, and only the
 *              frames above them differ (each phase starts and ends shallow)
 * argv[2]: scale of the work (default 1).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stitch_coroutine.h"

#define LEVELS 24
#define PAD 1024

typedef void (*leaf_fn)(void);

static volatile unsigned long sink;
static unsigned long burn_iters = 700000;

#define LEAF(p, n) __attribute__((noinline)) void leaf_##p##_##n(void) \
    { unsigned long x = sink; for (unsigned long i = 0; i < burn_iters; i++) \
          x = x * 6364136223846793005UL + i; sink = x; }
#define LEAVES(p) \
    LEAF(p, 0) LEAF(p, 1) LEAF(p, 2) LEAF(p, 3) LEAF(p, 4) LEAF(p, 5) LEAF(p, 6) \
    LEAF(p, 7) LEAF(p, 8) LEAF(p, 9) LEAF(p, 10) LEAF(p, 11) LEAF(p, 12) LEAF(p, 13) \
    LEAF(p, 14) LEAF(p, 15) LEAF(p, 16) LEAF(p, 17) LEAF(p, 18) LEAF(p, 19) \
    LEAF(p, 20) LEAF(p, 21) LEAF(p, 22) LEAF(p, 23) \
    static const leaf_fn leaves_##p[LEVELS] = { \
    leaf_##p##_0, leaf_##p##_1, leaf_##p##_2, leaf_##p##_3, leaf_##p##_4, leaf_##p##_5, \
    leaf_##p##_6, leaf_##p##_7, leaf_##p##_8, leaf_##p##_9, leaf_##p##_10, leaf_##p##_11, \
    leaf_##p##_12, leaf_##p##_13, leaf_##p##_14, leaf_##p##_15, leaf_##p##_16, \
    leaf_##p##_17, leaf_##p##_18, leaf_##p##_19, leaf_##p##_20, leaf_##p##_21, \
    leaf_##p##_22, leaf_##p##_23 };

LEAVES(a)
LEAVES(b)
LEAVES(c)

struct walk {
    const leaf_fn *leaves;
    int max, work_down, work_up;
    void (*yield)(void);        /* after every leaf (coroutine mode) */
};

__attribute__((noinline)) void descend(const struct walk *w, int level)
{
    volatile char pad[PAD];
    pad[0] = (char)level;
    if (w->work_down) {
        w->leaves[level]();
        if (w->yield)
            w->yield();
    }
    if (level + 1 < w->max)
        descend(w, level + 1);
    if (w->work_up) {
        w->leaves[level]();
        if (w->yield)
            w->yield();
    }
    pad[PAD - 1] = pad[0];      /* no tail call: the frame stays */
}

__attribute__((noinline)) void sweep(const leaf_fn *leaves, void (*yield)(void))
{
    struct walk walks[4] = {
        { leaves, LEVELS, 1, 1, yield },        /* down and up */
        { leaves, LEVELS, 0, 1, yield },        /* straight down, then up */
        { leaves, LEVELS, 1, 0, yield },        /* down, then straight back */
        { leaves, 3, 1, 1, yield },             /* shallow */
    };
    /* one call site: descend's frames have one caller (a frame called from
     * two places of sweep is ambiguous to --stitch) */
    for (volatile int i = 0; i < 4; i++)
        descend(&walks[i], 0);
}

__attribute__((noinline)) void entry_a(void) { sweep(leaves_a, yield_a); }
__attribute__((noinline)) void entry_b(void) { sweep(leaves_b, yield_b); }
__attribute__((noinline)) void entry_c(void) { sweep(leaves_c, 0); }

__attribute__((noinline)) void *thread_a(void *arg) { entry_a(); return arg; }
__attribute__((noinline)) void *thread_b(void *arg) { entry_b(); return arg; }
__attribute__((noinline)) void *thread_c(void *arg) { entry_c(); return arg; }

__attribute__((noinline)) void coro_main(void)
{
    entry_b();
    coro_done = 1;              /* returns to main_ctx (uc_link) */
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "recursive";
    if (argc > 2)
        burn_iters = (unsigned long)(burn_iters * atof(argv[2]));
    if (!strcmp(mode, "recursive")) {
        entry_a();
    } else if (!strcmp(mode, "threads")) {
        pthread_t t[3];
        pthread_create(&t[0], 0, thread_a, 0);
        pthread_create(&t[1], 0, thread_b, 0);
        pthread_create(&t[2], 0, thread_c, 0);
        for (int i = 0; i < 3; i++)
            pthread_join(t[i], 0);
    } else if (!strcmp(mode, "coroutine")) {
        RUN_COROUTINE(coro_main, entry_a());
    } else if (!strcmp(mode, "phases")) {
        for (int i = 0; i < 2; i++) {
            entry_a();
            entry_b();
        }
    } else {
        fprintf(stderr, "usage: stitch_stacks recursive|threads|coroutine|phases [scale]\n");
        return 2;
    }
    printf("stitch_stacks %s: %lu\n", mode, sink);
    return 0;
}
