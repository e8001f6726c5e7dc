/*
 * probe.c - what a child launched by tunerun sees, as "key=value" lines.
 *
 * Host tests and the demo run it as COMMAND. It reports from inside the
 * exec'd process: pid, affinity, cpuset lists, memory policy, THP prctl,
 * rlimits and environment variables named on its command line. With
 * --touch it maps and writes MIB mebibytes, then asks the kernel which node
 * holds each page (get_mempolicy with MPOL_F_NODE|MPOL_F_ADDR): the proof
 * that memory lands where the plan says, on a multi-node kernel.
 *
 * With --wait it then waits until FILE exists and reports its affinity
 * again, as after_affinity: what a running service sees once another one
 * has arrived (and perhaps made it yield CPUs).
 *
 *   probe [--env NAME]... [--limit NAME]... [--touch MIB] [--wait FILE]
 */
#include <errno.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#ifndef PR_GET_THP_DISABLE
#define PR_GET_THP_DISABLE 42
#endif

static void status_line(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[4096];
    size_t len = strlen(key);
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, key, len) == 0 && line[len] == ':') {
            char *v = line + len + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            v[strcspn(v, "\n")] = '\0';
            printf("%s=%s\n", key, v);
        }
    if (f)
        fclose(f);
}

static const char *mode_name(int mode)
{
    static const char *const names[] = {
        "default",        "preferred",          "bind", "interleave", "local",
        "preferred-many", "weighted-interleave"};
    mode &= 0xff;
    return mode >= 0 && mode < 7 ? names[mode] : "unknown";
}

static void mempolicy(void)
{
    unsigned long mask[16] = {0};
    int mode = -1;
    if (get_mempolicy(&mode, mask, sizeof(mask) * 8, NULL, 0) < 0) {
        perror("probe: get_mempolicy");
        return;
    }
    printf("mempolicy=%s\nmempolicy_nodes=", mode_name(mode));
    const char *sep = "";
    for (unsigned i = 0; i < sizeof(mask) * 8; i++)
        if (mask[i / (8 * sizeof(long))] & (1UL << (i % (8 * sizeof(long))))) {
            printf("%s%u", sep, i);
            sep = ",";
        }
    printf("\n");
}

static void limit(const char *name)
{
    static const struct {
        const char *name;
        int res;
    } map[] = {{"nofile", RLIMIT_NOFILE},   {"nproc", RLIMIT_NPROC}, {"core", RLIMIT_CORE},
               {"memlock", RLIMIT_MEMLOCK}, {"stack", RLIMIT_STACK}, {"as", RLIMIT_AS}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (strcmp(map[i].name, name) != 0)
            continue;
        struct rlimit rl;
        getrlimit(map[i].res, &rl);
        printf("limit_%s=", name);
        if (rl.rlim_cur == RLIM_INFINITY)
            printf("unlimited:");
        else
            printf("%llu:", (unsigned long long)rl.rlim_cur);
        if (rl.rlim_max == RLIM_INFINITY)
            printf("unlimited\n");
        else
            printf("%llu\n", (unsigned long long)rl.rlim_max);
    }
}

static void affinity(const char *key)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) < 0) {
        perror("probe: sched_getaffinity");
        return;
    }
    printf("%s=", key);
    const char *sep = "";
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &set)) {
            int last = cpu;
            while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
                last++;
            if (last == cpu)
                printf("%s%d", sep, cpu);
            else
                printf("%s%d-%d", sep, cpu, last);
            sep = ",";
            cpu = last;
        }
    printf("\n");
}

#define MAX_NODES 1024

/* Write `mib` MiB, then count on which node each page landed. */
static int touch(long mib)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t len = (size_t)mib << 20;
    char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        printf("touch_error=mmap %ld MiB: %s\n", mib, strerror(errno));
        return 1;
    }
    /* THP would put 512 pages on one node at once; count base pages honestly. */
    madvise(buf, len, MADV_NOHUGEPAGE);
    for (size_t off = 0; off < len; off += (size_t)page)
        buf[off] = 1;
    static long count[MAX_NODES];
    long unknown = 0;
    for (size_t off = 0; off < len; off += (size_t)page) {
        int node = -1;
        if (get_mempolicy(&node, NULL, 0, buf + off, MPOL_F_NODE | MPOL_F_ADDR) < 0 || node < 0 ||
            node >= MAX_NODES)
            unknown++;
        else
            count[node]++;
    }
    printf("touched_mib=%ld\ntouched_pages=%zu\npages_on_node=", mib, len / (size_t)page);
    const char *sep = "";
    for (int n = 0; n < MAX_NODES; n++)
        if (count[n]) {
            printf("%s%d:%ld", sep, n, count[n]);
            sep = ",";
        }
    printf("\npages_unknown=%ld\n", unknown);
    munmap(buf, len);
    return 0;
}

int main(int argc, char **argv)
{
    printf("pid=%d\n", (int)getpid());
    affinity("affinity");
    status_line("Cpus_allowed_list");
    status_line("Mems_allowed_list");
    status_line("THP_enabled");
    /* who it runs as: what a [security] drop must have left */
    const char *const who[] = {"Uid",    "Gid",    "Groups", "CapInh",     "CapPrm",
                               "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", NULL};
    for (size_t i = 0; who[i]; i++)
        status_line(who[i]);
    printf("thp_disable=%d\n", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
    mempolicy();
    limit("nofile");
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--env") == 0) {
            const char *v = getenv(argv[i + 1]);
            printf("env_%s=%s\n", argv[i + 1], v ? v : "(unset)");
        } else if (strcmp(argv[i], "--limit") == 0) {
            limit(argv[i + 1]);
        } else if (strcmp(argv[i], "--touch") == 0) {
            char *end;
            long mib = strtol(argv[i + 1], &end, 10);
            if (*end || mib < 1 || mib > 1L << 20) {
                fprintf(stderr, "probe: --touch wants MiB, 1 or more: %s\n", argv[i + 1]);
                return 2;
            }
            fflush(stdout);
            if (touch(mib) != 0)
                return 1;
        } else if (strcmp(argv[i], "--wait") == 0) {
            printf("waiting=%s\n", argv[i + 1]);
            fflush(stdout);
            for (int tick = 0; access(argv[i + 1], F_OK) != 0; tick++) {
                if (tick == 12000) {
                    printf("wait_error=%s did not appear in 120 s\n", argv[i + 1]);
                    return 1;
                }
                usleep(10000);
            }
            affinity("after_affinity");
        }
    }
    return 0;
}
