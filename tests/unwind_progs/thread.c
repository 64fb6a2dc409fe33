/* A thread's stack: it starts in glibc's clone3, whose CFI marks the
   return address undefined, so the walk ends there cleanly. */
#include <pthread.h>
#include <stdio.h>

volatile int sink;

__attribute__((noinline)) void thread_leaf(int n)
{
    sink = n;
}

static void *thread_main(void *arg)
{
    thread_leaf((int)(long)arg);
    sink++;
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, thread_main, (void *)5L);
    pthread_join(t, NULL);
    printf("%d\n", sink);
    return 0;
}
