/*
 * probe.c - what a child launched by tunerun sees, as "key=value" lines.
 *
 * Host tests and the demo run it as COMMAND. It reports from inside the
 * exec'd process: pid, affinity, cpuset lists, memory policy, THP prctl,
 * rlimits and environment variables named on its command line.
 *
 *   probe [--env NAME]... [--limit NAME]...
 */
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
    printf("pid=%d\n", (int)getpid());
    status_line("Cpus_allowed_list");
    status_line("Mems_allowed_list");
    status_line("THP_enabled");
    printf("thp_disable=%d\n", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
    mempolicy();
    limit("nofile");
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--env") == 0) {
            const char *v = getenv(argv[i + 1]);
            printf("env_%s=%s\n", argv[i + 1], v ? v : "(unset)");
        } else if (strcmp(argv[i], "--limit") == 0) {
            limit(argv[i + 1]);
        }
    }
    return 0;
}
