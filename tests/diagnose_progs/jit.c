/* Planted cause "JIT code without a perf map": the hot loop runs from an
 * anonymous executable mapping (//anon), as JIT-compiled code does.  With
 * argv[2] = "map" the program writes /tmp/perf-PID.map naming it jit_loop,
 * as a JIT with perf support does (the fix).
 * True stack, leaf first: jit_loop (//anon) <- run_jit <- main.
 * argv[1]: seconds to run (default 0.3). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* mov $0x100000,%ecx; 1: dec %ecx; jnz 1b; ret */
static const unsigned char code[] = {0xb9, 0x00, 0x00, 0x10, 0x00, 0xff, 0xc9, 0x75, 0xfc,
                                     0xc3};

__attribute__((noinline)) void run_jit(void (*fn)(void), double seconds)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 20; i++)
            fn();
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
    unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return 1;
    memcpy(mem, code, sizeof code);
    if (argc > 2 && strcmp(argv[2], "map") == 0) {
        char name[64];
        snprintf(name, sizeof name, "/tmp/perf-%d.map", (int)getpid());
        FILE *f = fopen(name, "w");
        if (f) {
            fprintf(f, "%lx %zx jit_loop\n", (unsigned long)mem, sizeof code);
            fclose(f);
        }
    }
    run_jit((void (*)(void))mem, argc > 1 ? atof(argv[1]) : 0.3);
    return 0;
}
