/*
 * plan_java.c - the JVM's options, derived from the placement.
 *
 * HotSpot sizes its GC threads from the CPUs it sees and its heap from the
 * machine's or the container's memory, not from the nodes it is bound to:
 * -XX:ActiveProcessorCount, -XX:+UseNUMA and -XX:MaxRAM say what tunerun
 * placed, appended to JAVA_TOOL_OPTIONS after what the caller and the
 * profile set, which always win.
 */
#include "planner.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Whether the JVM options already set a flag: a word starting with `flag`
 * when it ends in '=' (-XX:MaxRAM=), else the word -XX:+flag or -XX:-flag.
 * Whole words: -XX:+UseNUMAInterleaving is not UseNUMA, and -XX:MaxRAM= is
 * not -XX:MaxRAMPercentage=.
 */
static bool user_sets(const char *opts, const char *flag)
{
    size_t n = strlen(flag);
    bool prefix = n > 0 && flag[n - 1] == '=';
    for (const char *w = opts; w && *w;) {
        w += strspn(w, " \t");
        size_t len = strcspn(w, " \t");
        if (prefix ? len >= n && strncmp(w, flag, n) == 0
                   : len == n + 5 && (strncmp(w, "-XX:+", 5) == 0 || strncmp(w, "-XX:-", 5) == 0) &&
                         strncmp(w + 5, flag, n) == 0)
            return true;
        w += len;
    }
    return false;
}

void plan_add_java_step(struct ctx *c, const char *base)
{
    const struct profile *p = c->p;
    struct plan *pl = c->pl;
    char *opts = xasprintf("%s", "");
    int ncpus = hwloc_bitmap_weight(pl->cpus);
    int nmem = hwloc_bitmap_weight(pl->mem_nodes);

#define APPEND(...)                                                                                \
    do {                                                                                           \
        char *add = xasprintf(__VA_ARGS__);                                                        \
        char *joined = xasprintf("%s%s%s", opts, *opts ? " " : "", add);                           \
        free(opts);                                                                                \
        free(add);                                                                                 \
        opts = joined;                                                                             \
    } while (0)

    if (p->java.active_processor_count != JAVA_OFF) {
        unsigned count = p->java.active_processor_count == JAVA_AUTO
                             ? (unsigned)ncpus
                             : p->java.active_processor_count_value;
        /* a CPU quota (docker --cpus, a pod's limit) is all the CPU time the threads get */
        unsigned quota = c->cgroup ? c->cgroup->cpu_quota : 0;
        if (p->java.active_processor_count == JAVA_AUTO && quota && quota < count) {
            plan_note_add(
                pl, NOTE_INFO,
                "java: ActiveProcessorCount %u from the cgroup's CPU quota, below the %u placed "
                "CPUs: more GC threads than that would only be throttled",
                quota, count);
            count = quota;
        }
        if (user_sets(base, "-XX:ActiveProcessorCount="))
            plan_note_add(pl, NOTE_INFO,
                          "java: JAVA_TOOL_OPTIONS already sets ActiveProcessorCount; kept");
        else
            APPEND("-XX:ActiveProcessorCount=%u", count);
    }
    if (p->java.use_numa != JAVA_OFF) {
        if (user_sets(base, "UseNUMA"))
            plan_note_add(pl, NOTE_INFO, "java: JAVA_TOOL_OPTIONS already sets UseNUMA; kept");
        else if (p->java.use_numa == JAVA_VALUE || nmem > 1)
            APPEND("-XX:+UseNUMA");
        else
            plan_note_add(pl, NOTE_INFO, "java: no -XX:+UseNUMA, memory is on %s",
                          nmem == 1 ? "a single node" : "the local node");
    }
    if (p->java.max_ram != JAVA_OFF) {
        uint64_t ram = p->java.max_ram_value;
        if (p->java.max_ram == JAVA_AUTO) {
            hwloc_bitmap_t nodes = hwloc_bitmap_dup(nmem ? pl->mem_nodes : pl->nodes);
            ram = c->t->memory_known ? plan_sum_mem(c->t, nodes, false) : 0;
            hwloc_bitmap_free(nodes);
            /* the heap must fit the container too, whichever is smaller */
            if (c->cgroup && c->cgroup->mem_limit && (ram == 0 || c->cgroup->mem_limit < ram)) {
                plan_note_add(
                    pl, NOTE_INFO,
                    "java: MaxRAM from the cgroup memory limit (%.1f GiB), below the bound "
                    "nodes' memory",
                    plan_gib(c->cgroup->mem_limit));
                ram = c->cgroup->mem_limit;
            }
            /* the JVM would look for a limit itself; MaxRAM replaces what it finds */
            if (c->cgroup && c->cgroup->dir == NULL && c->cgroup->mem_limit == 0 && ram &&
                !user_sets(base, "-XX:MaxRAM="))
                plan_note_add(
                    pl, NOTE_INFO,
                    "java: MaxRAM from the bound nodes' memory alone: %s, so a memory limit "
                    "below it cannot be seen",
                    c->cgroup->why);
        }
        if (user_sets(base, "-XX:MaxRAM=")) {
            plan_note_add(pl, NOTE_INFO, "java: JAVA_TOOL_OPTIONS already sets MaxRAM; kept");
        } else if (ram == 0) {
            plan_note_add(pl, NOTE_INFO, "java: node memory unknown, no MaxRAM");
        } else if (ram < MIB) {
            /* -XX:MaxRAM=0m: the JVM would take its default, the opposite of a cap */
            plan_note_add(pl, NOTE_INFO,
                          "java: less than 1 MiB of memory to give (%llu bytes), no MaxRAM",
                          (unsigned long long)ram);
        } else {
            /* a size of the profile's own beyond what a strict bind holds: the heap outgrows it */
            uint64_t bound = pl->mpol == PLAN_MPOL_BIND && c->t->memory_known
                                 ? plan_sum_mem(c->t, pl->mem_nodes, false)
                                 : 0;
            /* what the JVM is given, in whole MiB */
            uint64_t given = ram / MIB * MIB;
            if (p->java.max_ram == JAVA_VALUE && bound && given > bound) {
                char *list = bitmap_list(pl->mem_nodes), r[32], b[32];
                plan_sizes_apart(r, b, sizeof(r), given, bound);
                plan_note_add(
                    pl, NOTE_WARN,
                    "java.max_ram %s is more than memory bind %s holds (%s): the JVM sizes its "
                    "heap from it, and a heap that outgrows the bind is killed (fix: a smaller "
                    "java.max_ram, max_ram = auto, or memory = preferred)",
                    r, list, b);
                free(list);
            }
            APPEND("-XX:MaxRAM=%llum", (unsigned long long)(ram / MIB));
        }
    }
#undef APPEND
    if (*opts == '\0') {
        free(opts);
        return;
    }
    char *value = base && *base ? xasprintf("%s %s", base, opts) : xasprintf("%s", opts);
    plan_add_env(pl, "JAVA_TOOL_OPTIONS", value,
                 xasprintf("the JVM sizes its threads and heap from the whole machine or the "
                           "container, not its placement; appended: %s",
                           opts));
    free(opts);
}
