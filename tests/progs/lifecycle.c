/* Process life cycles with known stacks, for tests/views/test_script_lifecycles.py.
 * Built twice: -DPHASE=first and -DPHASE=second (function names
 * first_leaf/first_work or second_leaf/second_work).
 *   PROG                    first_work: PHASE_leaf <- PHASE_work <- main
 *   PROG exec PROG2 ARGS... PHASE_work, then execv(PROG2): the same pid,
 *                           comm and maps of the other program after it
 *   PROG fork LIBA LIBB     PHASE_work, then fork: the child dlopens LIBA
 *                           and runs a_work, the parent LIBB's b_work
 *   PROG threads            PHASE_work, then 3 rounds of 4 threads that each
 *                           run PHASE_work(40) and exit
 *   PROG dl LIB SYM ...     dlopen, SYM (a_work/b_work) 150 times, dlclose,
 *                           for each pair in turn; prints each base to stderr;
 *                           a pair "mv SRC:DST" renames SRC over DST instead
 *                           (a library replaced on disk between two dlopens)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define FN(name) CAT(PHASE, name)

volatile long sink;

__attribute__((noinline)) long FN(leaf)(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++) {
        s += i * i % 7;
        sink = s;
    }
    return s;
}

__attribute__((noinline)) long FN(work)(int reps)
{
    long t = 0;
    for (int k = 0; k < reps; k++)
        t += FN(leaf)(200000);
    return t;
}

static void *thread_main(void *arg)
{
    (void)arg;
    FN(work)(40);
    return NULL;
}

typedef long (*work_fn)(long);

static long run_lib(const char *path, const char *sym, int reps, int close)
{
    void *h = dlopen(path, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        exit(1);
    }
    work_fn f = (work_fn)dlsym(h, sym);
    Dl_info info;
    if (f && dladdr((void *)f, &info))
        fprintf(stderr, "%s base %p\n", path, info.dli_fbase);
    long t = 0;
    for (int k = 0; k < reps; k++)
        t += f(200000);
    if (close)
        dlclose(h);
    return t;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "dl")) {
        long t = 0;
        for (int i = 2; i + 1 < argc; i += 2) {
            char *dst = strchr(argv[i + 1], ':');
            if (!strcmp(argv[i], "mv") && dst) {
                *dst++ = 0;
                if (rename(argv[i + 1], dst)) {
                    perror("rename");
                    return 1;
                }
                continue;
            }
            t += run_lib(argv[i], argv[i + 1], 150, 1);
        }
        return t == 42;
    }
    FN(work)(60);
    if (!strcmp(mode, "exec") && argc > 2) {
        execv(argv[2], argv + 2);
        perror("execv");
        return 1;
    }
    if (!strcmp(mode, "fork") && argc > 3) {
        pid_t child = fork();
        if (child == 0) {
            run_lib(argv[2], "a_work", 80, 0);
            _exit(0);
        }
        run_lib(argv[3], "b_work", 80, 0);
        waitpid(child, NULL, 0);
        return 0;
    }
    if (!strcmp(mode, "threads")) {
        pthread_t t[4];
        for (int r = 0; r < 3; r++) {
            for (int i = 0; i < 4; i++)
                pthread_create(&t[i], NULL, thread_main, NULL);
            for (int i = 0; i < 4; i++)
                pthread_join(t[i], NULL);
        }
    }
    return 0;
}
