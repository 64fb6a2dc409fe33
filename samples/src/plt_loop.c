/* plt_loop: a hot loop calling libc's strlen() through the PLT.
 * Built twice: plain (.plt stubs) and with -fcf-protection=full -z ibtplt
 * (IBT: the call goes through a .plt.sec stub).
 * Stack: strlen (libc: __strlen_avx2/evex/sse2) <- strlen@plt <- hot_plt_loop <- main
 * -fno-builtin keeps gcc from folding strlen itself. */
#include <string.h>
#include <stdio.h>
#include "common.h"

static const char *volatile text = "ab";

__attribute__((noinline)) unsigned long hot_plt_loop(unsigned long n)
{
    unsigned long total = 0;
    for (unsigned long i = 0; i < n; i++)
        total += strlen(text);          /* call strlen@plt */
    return total;
}

int main(int argc, char **argv)
{
    unsigned long n = (unsigned long)(200000000 * sample_scale(argc, argv));
    unsigned long t = hot_plt_loop(n);
    printf("plt_loop: %lu\n", t);
    return 0;
}
