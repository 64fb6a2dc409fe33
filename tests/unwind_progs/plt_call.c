/* A call through the PLT: stop on the puts@plt stub and in the PLT header,
   where the CFA is a DWARF expression of rip. */
#include <stdio.h>

__attribute__((noinline)) void say(const char *s)
{
    puts(s);
    puts(s);    /* not a tail call: keeps say() on the stack */
}

int main(void)
{
    say("hello");
    return 0;
}
