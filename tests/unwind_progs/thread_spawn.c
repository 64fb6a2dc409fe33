/* Creates and joins argv[1] threads one after the other: most of its time
   is the kernel's copy_process inside glibc's clone3 (or clone), whose CFI
   ends at the syscall instruction, and the new threads' first instants. */
#include <pthread.h>
#include <stdlib.h>

static void *work(void *arg) { return arg; }

__attribute__((noinline)) void spawn_one(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, work, NULL) == 0)
        pthread_join(t, NULL);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    for (int i = 0; i < n; i++)
        spawn_one();
    return 0;
}
