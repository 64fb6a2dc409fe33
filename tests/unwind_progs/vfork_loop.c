/* vfork in a loop, for `perf record --call-graph=dwarf`: glibc's vfork pops
   its return address into %rdi before the syscall and pushes it back after
   (its CFI says so: DW_CFA_register rip, rdi).  The child's first moments
   (ret_from_fork, schedule_tail) and the parent's return from the syscall
   are sampled with the user ip just after the syscall and the return
   address in %rdi, not on the stack. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int spawn_one(void)
{
    pid_t pid = vfork();
    if (pid == 0)
        _exit(0);
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

__attribute__((noinline)) int spawn_loop(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += spawn_one();
    return s;
}

int main(int argc, char **argv)
{
    return spawn_loop(argc > 1 ? atoi(argv[1]) : 2000) & 1;
}
