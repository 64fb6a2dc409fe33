/* offcpu_waits: threads that wait for known durations in known functions
 * (the off-CPU tests, tests/views/test_offcpu.py).
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
 *     thread COMM TID WALL_NS CPU_NS START_NS
 * (CPU_NS: the thread's CPU clock; START_NS: CLOCK_MONOTONIC at its start,
 * the clock of `perf record -k mono`), after every thread has ended.
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

/* What a thread measured of itself, printed by main after the joins (no
 * lock taken while measuring: a lock would be a wait of its own). */
struct job {
    const char *comm;
    void (*run)(struct job *);
    int pin;
    int tid;
    const char *func, *state;
    long long wait_ns, wall_ns, cpu_ns, start_ns;
};

static long long now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void report_wait(struct job *job, const char *func, const char *state, long long ns)
{
    job->func = func;
    job->state = state;
    job->wait_ns = ns;
}

static void sleep_ms(double ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)((ms - (long)(ms / 1000) * 1000) * 1e6) };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

__attribute__((noinline)) void wait_sleep(struct job *job)
{
    long long t0 = now(CLOCK_MONOTONIC);
    sleep_ms(300 * scale);
    report_wait(job, "wait_sleep", "S", now(CLOCK_MONOTONIC) - t0);
}

__attribute__((noinline)) void wait_pipe(struct job *job)
{
    char c;
    long long t0 = now(CLOCK_MONOTONIC);
    if (read(pipefd[0], &c, 1) != 1)
        exit(3);
    report_wait(job, "wait_pipe", "S", now(CLOCK_MONOTONIC) - t0);
}

__attribute__((noinline)) void wait_mutex(struct job *job)
{
    while (!held)
        sleep_ms(1);
    long long t0 = now(CLOCK_MONOTONIC);
    pthread_mutex_lock(&lock);
    long long ns = now(CLOCK_MONOTONIC) - t0;
    pthread_mutex_unlock(&lock);
    report_wait(job, "wait_mutex", "S", ns);
}

__attribute__((noinline)) void hold_mutex(struct job *job)
{
    pthread_mutex_lock(&lock);
    held = 1;
    long long t0 = now(CLOCK_MONOTONIC);
    sleep_ms(250 * scale);
    report_wait(job, "hold_mutex", "S", now(CLOCK_MONOTONIC) - t0);
    pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void wait_vfork(struct job *job)
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
    report_wait(job, "wait_vfork", "D", ns);
}

__attribute__((noinline)) void spin_pinned(struct job *job)
{
    (void)job;
    long long end = now(CLOCK_THREAD_CPUTIME_ID) + (long long)(150e6 * scale);
    volatile unsigned long x = 0;
    while (now(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 10000; i++)
            x += i;
}

static void *thread_main(void *arg)
{
    struct job *job = arg;
    long long t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
    job->tid = (int)syscall(SYS_gettid);
    pthread_setname_np(pthread_self(), job->comm);
    if (job->pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(0, &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    job->run(job);
    job->cpu_ns = now(CLOCK_THREAD_CPUTIME_ID) - c0;
    job->wall_ns = now(CLOCK_MONOTONIC) - t0;
    job->start_ns = t0;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        scale = atof(argv[1]);
    if (pipe(pipefd) != 0)
        return 2;
    struct job jobs[] = {
        { .comm = "sleeper", .run = wait_sleep }, { .comm = "piper", .run = wait_pipe },
        { .comm = "holder", .run = hold_mutex }, { .comm = "locker", .run = wait_mutex },
        { .comm = "vforker", .run = wait_vfork }, { .comm = "spin1", .run = spin_pinned, .pin = 1 },
        { .comm = "spin2", .run = spin_pinned, .pin = 1 },
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
    for (int i = 0; i < N; i++) {
        if (jobs[i].func)
            printf("wait %s %d %s %s %lld\n", jobs[i].comm, jobs[i].tid, jobs[i].func,
                   jobs[i].state, jobs[i].wait_ns);
        printf("thread %s %d %lld %lld %lld\n", jobs[i].comm, jobs[i].tid, jobs[i].wall_ns,
               jobs[i].cpu_ns, jobs[i].start_ns);
    }
    return 0;
}
