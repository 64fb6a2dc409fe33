/* garbage_fp: a hot loop run with its frame pointer (rbp) aimed at a made-up
 * chain of frames, as code built without frame pointers leaves in rbp
 * whatever it computed last: perf's frame-pointer walk (`perf record -g`)
 * follows the chain into garbage (the flame-graph tests' tall case).
 *
 * Each burst of the loop gets a new chain of 40 to 200 links (the kernel
 * stops a walk at kernel.perf_event_max_stack, 127 by default), each link's
 * return address inside one of 32 decoy functions or unmapped: long, deep
 * and unique chains whose leaf is spin_on_garbage.  x86-64 only.
 *
 * Usage: garbage_fp [BURSTS]   (default 2000 bursts of 300,000 iterations:
 * a fixed amount of work, so a recording at a fixed period of the program's
 * own CPU time, -e cpu-clock:u -c N, has the same number of samples however
 * busy the machine is) */
#include <stdint.h>
#include <stdlib.h>

struct frame { struct frame *next; uintptr_t ret; };

#define DECOY(n) __attribute__((noinline)) int decoy##n(int x) { return x * (n + 3) + 1; }
#define DECOY8(a) DECOY(a##0) DECOY(a##1) DECOY(a##2) DECOY(a##3) \
                  DECOY(a##4) DECOY(a##5) DECOY(a##6) DECOY(a##7)
DECOY8(1) DECOY8(2) DECOY8(3) DECOY8(4)
#define AT(n) (uintptr_t)decoy##n
#define AT8(a) AT(a##0), AT(a##1), AT(a##2), AT(a##3), AT(a##4), AT(a##5), AT(a##6), AT(a##7)
static const uintptr_t decoys[] = { AT8(1), AT8(2), AT8(3), AT8(4) };

static struct frame chain[200];

static unsigned next_random(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 8;
}

static void make_chain(unsigned *state)
{
    unsigned links = 40 + next_random(state) % 161;
    for (unsigned i = 0; i < links; i++) {
        unsigned r = next_random(state);
        chain[i].next = i + 1 < links ? &chain[i + 1] : 0;
        chain[i].ret = r % 4 == 0 ? 0x10000u + (r & 0xfff0)          /* unmapped */
                                  : decoys[r % 32] + 4 + (r >> 16) % 8;
    }
}

/* rbp := the chain while the loop runs; r12 keeps the real one. */
__attribute__((noinline)) void spin_on_garbage(struct frame *fp, long n)
{
    __asm__ volatile("mov %%rbp, %%r12\n\t"
                     "mov %0, %%rbp\n\t"
                     "1: dec %1\n\t"
                     "jnz 1b\n\t"
                     "mov %%r12, %%rbp"
                     : "+D"(fp), "+c"(n) : : "r12", "memory", "cc");
}

int main(int argc, char **argv)
{
    long bursts = argc > 1 ? atol(argv[1]) : 2000;
    unsigned state = 12345;
    for (long i = 0; i < bursts; i++) {
        make_chain(&state);
        spin_on_garbage(chain, 300000);
    }
    return 0;
}
