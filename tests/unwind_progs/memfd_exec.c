/* Runs itself from a memfd: copies /proc/self/exe into memfd_create("memfd-elf")
   and fexecve()s the copy, whose code is then mapped from
   "/memfd:memfd-elf (deleted)", a file no tool can open afterwards.  The copy
   spins for argv[1] ms in leaf <- mid <- top <- main: main keeps a frame
   pointer, the others do not, so a frame-pointer step from the leaf reads
   main's frame (and names __libc_start_call_main as the leaf's caller). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;
#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))

NOFP unsigned long leaf(unsigned long x) {
    unsigned long s = 0;
    for (int i = 0; i < 20000; i++) s += (x ^ i) * i;
    sink = s;
    return s;
}
NOFP unsigned long mid(int d, unsigned long x) {
    unsigned long r = d ? mid(d - 1, x * 3 + 1) : leaf(x);
    sink += r;
    return r + d;
}
NOFP unsigned long top(unsigned long x) { return mid(4, x) ^ mid(2, x + 1); }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[2], "inner") == 0) {
        double end = now() + atoi(argv[1]) / 1000.0;
        unsigned long x = 0;
        while (now() < end) x += top(x);
        sink = x;
        return 0;
    }
    int in = open("/proc/self/exe", O_RDONLY);
    int fd = memfd_create("memfd-elf", MFD_CLOEXEC);
    if (in < 0 || fd < 0) { perror("memfd"); return 1; }
    static char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(fd, buf, n) != n) { perror("write"); return 1; }
    char *args[] = {argv[0], argc > 1 ? argv[1] : "500", "inner", NULL};
    char *env[] = {NULL};
    fexecve(fd, args, env);
    perror("fexecve");
    return 1;
}
