/* threads: two pthreads running different hot functions.
 * Stacks: hot_alpha <- thread_alpha <- start_thread <- clone3
 *         hot_beta  <- thread_beta  <- start_thread <- clone3 */
#include <pthread.h>
#include <stdio.h>
#include "common.h"

static volatile unsigned long sink_a, sink_b;
static unsigned long iterations = 500000000UL;

__attribute__((noinline)) void hot_alpha(unsigned long n)
{
    unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++)
        x = x * 2862933555777941757UL + 3037000493UL;
    sink_a = x;
}

__attribute__((noinline)) void hot_beta(unsigned long n)
{
    unsigned long x = 3;
    for (unsigned long i = 0; i < n; i++)
        x ^= (x << 13) ^ (x >> 7) ^ i;
    sink_b = x;
}

__attribute__((noinline)) void *thread_alpha(void *arg)
{
    (void)arg;
    hot_alpha(iterations);
    return NULL;
}

__attribute__((noinline)) void *thread_beta(void *arg)
{
    (void)arg;
    hot_beta(iterations);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t a, b;
    iterations = (unsigned long)(iterations * sample_scale(argc, argv));
    pthread_create(&a, NULL, thread_alpha, NULL);
    pthread_create(&b, NULL, thread_beta, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("threads: %lu %lu\n", sink_a, sink_b);
    return 0;
}
