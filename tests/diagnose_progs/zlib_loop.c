/* Planted cause "dynsym only": the hot code is in libz.so.1 (a packaged
 * library without its debug symbols installed), inside deflate's static
 * functions, which .dynsym does not name.  Linked against the library file
 * itself, so no zlib headers are needed.
 * True stack, leaf first: deflate internals <- deflate <- compress2 <-
 * squeeze <- main.  argv[1]: seconds to run (default 0.3). */
#include <stdlib.h>
#include <time.h>

extern int compress2(unsigned char *dest, unsigned long *destLen,
                     const unsigned char *source, unsigned long sourceLen, int level);

static unsigned char in[1 << 16], out[(1 << 16) + 1024];

__attribute__((noinline)) void squeeze(double seconds)
{
    struct timespec t0, t;
    unsigned int x = 12345;
    for (unsigned i = 0; i < sizeof in; i++) {
        x = x * 1103515245 + 12345;
        in[i] = "abcdefgh"[(x >> 16) & 7];
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        unsigned long n = sizeof out;
        compress2(out, &n, in, sizeof in, 9);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
    squeeze(argc > 1 ? atof(argv[1]) : 0.3);
    return 0;
}
