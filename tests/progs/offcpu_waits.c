/* offcpu_waits: threads that wait for known durations in known functions
 * (the off-CPU tests, tests/test_offcpu.py).
 *
 * Each thread is named (its comm) and does one kind of wait, in a function
 * of its own, measuring that wait itself with CLOCK_MONOTONIC:
 *   sleeper   wait_sleep:  nanosleep            state S
 *   piper     wait_pipe:   read() of a pipe that main writes later, S
 *   locker    wait_mutex:  pthread_mutex_lock of a mutex holder keeps, S
 *   holder    hold_mutex:  sleeps holding the mutex,                  S
 *   vforker   wait_vfork:  vfork() whose child sleeps, then _exits:
 *                          the parent waits uninterruptibly,          D
 *   spin1/2   spin_pinned: both pinned to one cpu, spinning: each is
 *                          preempted for the other,                   R+
 * It prints one line per wait,
 *     wait COMM TID FUNCTION STATE NS
 * and one per thread, from the thread function's start to its end,
 *     thread COMM TID WALL_NS CPU_NS
 * (CPU_NS: the thread's CPU clock), then exits.
 * argv[1]: scale of the waits (default 1: 200 to 300 ms each).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double scale = 1.0;
static int pipefd[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int held;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static char out[8192];
static size_t out_len;

static long long now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void say(const char *fmt, const char *comm, long long a, long long b, const char *f,
                const char *state)
{
    pthread_mutex_lock(&out_lock);
    int tid = (int)syscall(SYS_gettid);
    if (f)
        out_len += snprintf(out + out_len, sizeof out - out_len, fmt, comm, tid, f, state, a);
    else
        out_len += snprintf(out + out_len, sizeof out - out_len, fmt, comm, tid, a, b);
    pthread_mutex_unlock(&out_lock);
}

static void report_wait(const char *comm, const char *func, const char *state, long long ns)
{
    say("wait %s %d %s %s %lld\n", comm, ns, 0, func, state);
}

static void sleep_ms(double ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)((ms - (long)(ms / 1000) * 1000) * 1e6) };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

__attribute__((noinline)) void wait_sleep(void)
{
    long long t0 = now(CLOCK_MONOTONIC);
    sleep_ms(300 * scale);
    report_wait("sleeper", "wait_sleep", "S", now(CLOCK_MONOTONIC) - t0);
}

__attribute__((noinline)) void wait_pipe(void)
{
    char c;
    long long t0 = now(CLOCK_MONOTONIC);
    if (read(pipefd[0], &c, 1) != 1)
        exit(3);
    report_wait("piper", "wait_pipe", "S", now(CLOCK_MONOTONIC) - t0);
}

__attribute__((noinline)) void wait_mutex(void)
{
    while (!held)
        sleep_ms(1);
    long long t0 = now(CLOCK_MONOTONIC);
    pthread_mutex_lock(&lock);
    long long ns = now(CLOCK_MONOTONIC) - t0;
    pthread_mutex_unlock(&lock);
    report_wait("locker", "wait_mutex", "S", ns);
}

__attribute__((noinline)) void hold_mutex(void)
{
    pthread_mutex_lock(&lock);
    held = 1;
    long long t0 = now(CLOCK_MONOTONIC);
    sleep_ms(250 * scale);
    report_wait("holder", "hold_mutex", "S", now(CLOCK_MONOTONIC) - t0);
    pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void wait_vfork(void)
{
    long long t0 = now(CLOCK_MONOTONIC);
    pid_t child = vfork();
    if (child == 0) {
        /* (only system calls here: the child shares the parent's memory) */
        struct timespec ts = { 0, (long)(200e6 * scale) };
        syscall(SYS_nanosleep, &ts, NULL);
        _exit(0);
    }
    long long ns = now(CLOCK_MONOTONIC) - t0;
    waitpid(child, NULL, 0);
    report_wait("vforker", "wait_vfork", "D", ns);
}

__attribute__((noinline)) void spin_pinned(void)
{
    long long end = now(CLOCK_THREAD_CPUTIME_ID) + (long long)(150e6 * scale);
    volatile unsigned long x = 0;
    while (now(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 10000; i++)
            x += i;
}

struct job { const char *comm; void (*run)(void); int pin; };

static void *thread_main(void *arg)
{
    struct job *job = arg;
    pthread_setname_np(pthread_self(), job->comm);
    if (job->pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(0, &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    long long t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
    job->run();
    say("thread %s %d %lld %lld\n", job->comm, now(CLOCK_MONOTONIC) - t0,
        now(CLOCK_THREAD_CPUTIME_ID) - c0, NULL, NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        scale = atof(argv[1]);
    if (pipe(pipefd) != 0)
        return 2;
    struct job jobs[] = {
        { "sleeper", wait_sleep, 0 }, { "piper", wait_pipe, 0 },
        { "holder", hold_mutex, 0 }, { "locker", wait_mutex, 0 },
        { "vforker", wait_vfork, 0 }, { "spin1", spin_pinned, 1 },
        { "spin2", spin_pinned, 1 },
    };
    enum { N = sizeof jobs / sizeof jobs[0] };
    pthread_t threads[N];
    for (int i = 0; i < N; i++)
        pthread_create(&threads[i], NULL, thread_main, &jobs[i]);
    sleep_ms(200 * scale);
    if (write(pipefd[1], "x", 1) != 1)
        return 2;
    for (int i = 0; i < N; i++)
        pthread_join(threads[i], NULL);
    fputs(out, stdout);
    return 0;
}
