/* offcpu_wakeups: one thread wakes two others from known functions (the
 * waker tests of tests/views/test_offcpu.py).
 *
 *   waker       wake_pipe:  writes a byte to a pipe      (wakes piper)
 *               wake_cond:  signals a condition variable (wakes condwaiter)
 *   piper       wait_pipe:  reads the pipe, blocking until waker writes
 *   condwaiter  wait_cond:  waits on the condition variable
 *
 * The waker sleeps 4 ms before each wake, ROUNDS times each.  Each waiting
 * thread measures the time it spends in its wait function with
 * CLOCK_MONOTONIC, and main prints, after the joins,
 *     wait COMM TID FUNCTION NS
 *     waker COMM TID
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 25

static int pipefd[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int posted, seen;
static long long pipe_ns, cond_ns;
static int piper_tid, cond_tid, waker_tid;

static long long now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void wait_pipe(void)
{
    char c;
    long long t0 = now();
    if (read(pipefd[0], &c, 1) != 1)
        exit(1);
    pipe_ns += now() - t0;
}

__attribute__((noinline)) void wait_cond(void)
{
    long long t0 = now();
    pthread_mutex_lock(&lock);
    while (posted == seen)
        pthread_cond_wait(&cond, &lock);
    seen++;
    pthread_mutex_unlock(&lock);
    cond_ns += now() - t0;
}

__attribute__((noinline)) void wake_pipe(void)
{
    char c = 1;
    if (write(pipefd[1], &c, 1) != 1)
        exit(1);
}

__attribute__((noinline)) void wake_cond(void)
{
    pthread_mutex_lock(&lock);
    posted++;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
}

static void sleep_ms(int ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void *piper(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "piper");
    piper_tid = syscall(SYS_gettid);
    for (int i = 0; i < ROUNDS; i++)
        wait_pipe();
    return NULL;
}

static void *condwaiter(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "condwaiter");
    cond_tid = syscall(SYS_gettid);
    for (int i = 0; i < ROUNDS; i++)
        wait_cond();
    return NULL;
}

static void *waker(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "waker");
    waker_tid = syscall(SYS_gettid);
    for (int i = 0; i < ROUNDS; i++) {
        sleep_ms(4);
        wake_pipe();
        sleep_ms(4);
        wake_cond();
    }
    return NULL;
}

int main(void)
{
    pthread_t a, b, w;
    if (pipe(pipefd) != 0)
        return 1;
    pthread_create(&a, NULL, piper, NULL);
    pthread_create(&b, NULL, condwaiter, NULL);
    sleep_ms(20);               /* (both waiting before the first wake) */
    pthread_create(&w, NULL, waker, NULL);
    pthread_join(w, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("wait piper %d wait_pipe %lld\n", piper_tid, pipe_ns);
    printf("wait condwaiter %d wait_cond %lld\n", cond_tid, cond_ns);
    printf("waker waker %d\n", waker_tid);
    return 0;
}
