/* A tiny JIT: copies a hot loop into anonymous executable memory, runs it,
   and describes it in /tmp/perf-PID.map as perf, V8 and Python 3.12 do. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

/* mov $N, %rcx; 1: dec %rcx; jnz 1b; ret  -- position-independent */
static const unsigned char code[] = {
    0x48, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0,   /* movabs $imm64, %rcx */
    0x48, 0xff, 0xc9,                     /* dec %rcx */
    0x75, 0xfb,                           /* jnz -5 */
    0xc3                                  /* ret */
};

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.3;
    unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return 1;
    memcpy(mem + 64, code, sizeof code);
    unsigned long n = 1000000;
    memcpy(mem + 64 + 2, &n, sizeof n);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
    FILE *f = fopen(path, "w");
    fprintf(f, "%lx %zx jitted_hot_loop\n", (unsigned long)(mem + 64), sizeof code);
    fclose(f);
    void (*fn)(void) = (void (*)(void))(mem + 64);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        fn();
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    if (argc > 2) {
        /* argv[2]: a FIFO; say so on stdout, then live until its writer
           closes it (a container's JIT read while it runs) */
        printf("spun\n");
        fflush(stdout);
        int fd = open(argv[2], O_RDONLY);
        char c;
        while (fd >= 0 && read(fd, &c, 1) > 0) {}
    }
    return 0;
}
