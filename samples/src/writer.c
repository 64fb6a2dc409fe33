/* writer: a small program for the tracepoint recording: writes 20 short
 * lines with write(2), sleeping 5 ms between them.
 * Stack at sys_enter_write: write (libc) <- emit_line <- main */
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void emit_line(int i)
{
    char buf[32];
    memcpy(buf, "writer line xx\n", 16);
    buf[12] = (char)('0' + i / 10);
    buf[13] = (char)('0' + i % 10);
    write(1, buf, 15);
}

int main(void)
{
    struct timespec ts = {0, 5000000};
    for (int i = 0; i < 20; i++) {
        emit_line(i);
        nanosleep(&ts, NULL);
    }
    return 0;
}
