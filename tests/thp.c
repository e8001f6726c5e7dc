/*
 * tests/thp.c - run a command with its THP disable flag set, as a parent
 * that turned huge pages off leaves it: a unit's MemoryTHP= (systemd 260),
 * a shell started under `tunerun redis`. The flag survives fork and exec,
 * so tunerun starts with it.
 *
 *   thp never|madvise COMMAND [ARG]...
 *
 * madvise is PR_THP_DISABLE_EXCEPT_ADVISED, which needs Linux 6.18.
 */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1)
#endif

int main(int argc, char **argv)
{
    unsigned long flags =
        argc > 1 && strcmp(argv[1], "madvise") == 0 ? PR_THP_DISABLE_EXCEPT_ADVISED : 0;
    if (argc < 3 || (flags == 0 && strcmp(argv[1], "never") != 0)) {
        fprintf(stderr, "usage: thp never|madvise COMMAND [ARG]...\n");
        return 125;
    }
    if (prctl(PR_SET_THP_DISABLE, 1, flags, 0, 0) < 0) {
        perror("thp: prctl(PR_SET_THP_DISABLE)");
        return 125;
    }
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    return 127;
}
