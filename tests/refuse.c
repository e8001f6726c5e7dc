/*
 * tests/refuse.c - run a command with some system calls refused (EPERM)
 * by a seccomp filter, as Docker's default profile refuses get_mempolicy,
 * set_mempolicy, mbind and set_mempolicy_home_node to a container without
 * CAP_SYS_NICE, or a unit's SystemCallFilter= with
 * SystemCallErrorNumber=EPERM refuses @resources.
 *
 *   refuse set_mempolicy[,sched_setaffinity] COMMAND [ARG]...
 *
 * Exits 77 (skip) on an architecture it has no audit value for.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

static const struct {
    const char *name;
    long nr;
} known[] = {
    {"set_mempolicy", SYS_set_mempolicy},
    {"sched_setaffinity", SYS_sched_setaffinity},
    {"mbind", SYS_mbind},
    {"get_mempolicy", SYS_get_mempolicy},
#ifdef SYS_set_mempolicy_home_node
    {"set_mempolicy_home_node", SYS_set_mempolicy_home_node},
#endif
};

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: refuse SYSCALL[,SYSCALL]... COMMAND [ARG]...\n");
        return 125;
    }
#ifndef ARCH
    fprintf(stderr, "refuse: no seccomp audit value for this architecture\n");
    return 77;
#else
    struct sock_filter f[16] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    };
    unsigned short n = 4;
    char list[256];
    snprintf(list, sizeof(list), "%s", argv[1]);
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        size_t k = 0;
        while (k < sizeof(known) / sizeof(known[0]) && strcmp(known[k].name, name) != 0)
            k++;
        if (k == sizeof(known) / sizeof(known[0]) || n > 12) {
            fprintf(stderr, "refuse: unknown or too many system calls: %s\n", name);
            return 125;
        }
        f[n++] =
            (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)known[k].nr, 0, 1);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    }
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {n, f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
        perror("refuse: seccomp");
        return 125;
    }
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    return 127;
#endif
}
