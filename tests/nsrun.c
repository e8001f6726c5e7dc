/*
 * tests/nsrun.c - run a command in a new cgroup namespace, as a container
 * runtime starts one: unshare --cgroup, which busybox lacks, for the VM.
 */
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: nsrun COMMAND [ARG]...\n");
        return 125;
    }
    if (unshare(CLONE_NEWCGROUP) < 0) {
        perror("nsrun: unshare(CLONE_NEWCGROUP)");
        return 125;
    }
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}
