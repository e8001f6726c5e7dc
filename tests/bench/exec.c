/*
 * tests/bench/exec.c - exec argv[1..] and nothing else.
 *
 * The bench builds it twice: linked against tunerun's libraries (hwloc,
 * numa, libcap, inih) and against libnuma alone, as numactl is. Their
 * launch times are the floor for any launcher linked that way: loading the
 * libraries and a second exec. What tunerun adds beyond the first is its
 * own work; what numactl adds beyond the second, numactl's.
 */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: exec COMMAND [ARG]...\n");
        return 125;
    }
    execv(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}
