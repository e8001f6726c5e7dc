/*
 * plan_limits.c - the resource limits, the OOM score and the environment.
 *
 * Each limit's step says what the resource is for in words true of any
 * service; why this one needs it is the profile's comment at the file and
 * line the step cites. The environment is the profile's [env] with the
 * plan's ${...} filled in, MALLOC_ARENA_MAX from the placed CPUs, and the
 * JVM's options (plan_java.c).
 */
#include "planner.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * What each step does, in words true of any service: the reason this one
 * needs it is the profile's, in the comment at the file and line each step
 * cites (and in its `fears`, which head the plan). The planner never
 * guesses which service it is placing.
 */
static const char *limit_reason(int resource)
{
    switch (resource) {
    case RLIMIT_NOFILE:
        return "every open file, socket and pipe takes a descriptor; at the limit open() and "
               "accept() fail with EMFILE";
    case RLIMIT_NPROC:
        return "every thread and process of its user counts; at the limit fork() and "
               "pthread_create() fail";
    case RLIMIT_MEMLOCK:
        return "memory locked in RAM (mlock, io_uring's registered buffers) counts against it";
    case RLIMIT_CORE:
        return "the size of a crash's core dump: enough to debug, or 0 to keep memory contents "
               "off the disk";
    case RLIMIT_STACK:
        return "the main thread's stack, and glibc's default stack size for every new thread";
    case RLIMIT_AS:
        return "the address space it may map; past it mmap() and brk() fail";
    case RLIMIT_DATA:
        return "its heap and private mappings; past it brk() and mmap() fail";
    case RLIMIT_FSIZE:
        return "the largest file it may write; past it a write gets SIGXFSZ, or EFBIG";
    case RLIMIT_CPU:
        return "the CPU seconds it may use: SIGXCPU at the soft limit, SIGKILL at the hard one";
    case RLIMIT_LOCKS:
        return "flock() locks and leases (Linux has not enforced it since 2.4.25)";
    case RLIMIT_MSGQUEUE:
        return "the bytes of POSIX message queues its user may allocate";
    case RLIMIT_NICE:
        return "how far it may raise its own CPU priority: down to nice 20 minus the limit";
    case RLIMIT_RTPRIO:
        return "the highest real-time priority it may give itself";
    case RLIMIT_RTTIME:
        return "the microseconds a real-time thread may run without blocking";
    case RLIMIT_SIGPENDING:
        return "the signals its user may have queued";
    case RLIMIT_RSS:
        return "its resident memory (Linux has not enforced it since 2.6)";
    default:
        return "a resource limit";
    }
}

void plan_add_limit_steps(struct ctx *c)
{
    for (int r = 0; r < PROFILE_NLIMITS; r++) {
        const struct profile_limit *l = &c->p->limits[r];
        if (!l->set)
            continue;
        char *at = plan_origin(l->at);
        struct plan_step *s =
            plan_add_step(c->pl, STEP_RLIMIT, xasprintf("%s (%s)", limit_reason(r), at));
        s->u.rlimit.resource = r;
        s->u.rlimit.soft = l->soft;
        s->u.rlimit.hard = l->hard;
        s->u.rlimit.nr_open = r == RLIMIT_NOFILE ? c->nr_open : 0;
        if (r == RLIMIT_NOFILE && c->nr_open > 0 && l->hard > (rlim_t)c->nr_open) {
            /* the kernel's ceiling for everyone, root with every capability included */
            bool boxed = c->cgroup && c->cgroup->container; /* the sysctl is the host's */
            char *then = boxed ? xasprintf("; then docker run --ulimit nofile=%llu:%llu",
                                           (unsigned long long)l->soft, (unsigned long long)l->hard)
                               : xstrdup("");
            plan_note_add(
                c->pl, NOTE_WARN,
                "nofile: %llu (%s) is more than this host's fs.nr_open (%ld), past which no "
                "process may raise it: the service gets at most the hard limit it inherits "
                "(fix: %ssysctl -w fs.nr_open=%llu, and the same in /etc/sysctl.d/%s)",
                (unsigned long long)l->hard, at, c->nr_open,
                boxed ? "on the host, not in this container: " : "", (unsigned long long)l->hard,
                then);
            free(then);
        } else if (c->fixed_limits && l->hard > c->fixed_limits[r].rlim_max) {
            char want[24], have[24], *fix = rlimit_raise_fix(r, l->soft, l->hard);
            rlim_str(want, sizeof(want), l->hard);
            rlim_str(have, sizeof(have), c->fixed_limits[r].rlim_max);
            plan_note_add(
                c->pl, NOTE_WARN,
                "%s: the hard limit %s (%s) is above this process's %s, and raising it needs "
                "CAP_SYS_RESOURCE, which it lacks: a launch from here gets at most %s (fix: %s)",
                rlimit_name(r), want, at, have, have, fix);
            free(fix);
        }
        free(at);
    }
    if (c->p->memory.oom_set) {
        char *at = plan_origin(c->p->memory.oom_at);
        int adj = c->p->memory.oom_score_adj;
        struct plan_step *s =
            plan_add_step(c->pl, STEP_OOM_SCORE_ADJ,
                          xasprintf("%s (%s)",
                                    adj <= -1000 ? "the OOM killer never picks it"
                                    : adj < 0    ? "the OOM killer picks other processes before it"
                                    : adj == 0   ? "the OOM killer weighs it by its memory alone, "
                                                   "as by default"
                                    : adj < 1000 ? "the OOM killer picks it before other processes"
                                                 : "the OOM killer picks it first",
                                    at));
        /*
         * Without CAP_SYS_RESOURCE the kernel refuses a value below the
         * lowest one a privileged writer set (oom_score_adj_min, inherited,
         * 0 from init), which /proc does not show. A value below both the
         * one now and 0 is below it but where a privileged parent lowered
         * the score and raised it again; a launch's step says what it met.
         */
        if (c->fixed_oom && adj < *c->fixed_oom && adj < 0)
            plan_note_add(c->pl, NOTE_WARN,
                          "oom_score_adj: %d (%s) is below this process's %d, and lowering it "
                          "needs CAP_SYS_RESOURCE, which it lacks: a launch from here keeps %d "
                          "(fix: OOMScoreAdjust=%d in the unit, or docker run --oom-score-adj %d)",
                          adj, at, *c->fixed_oom, *c->fixed_oom, adj, adj);
        free(at);
        s->u.oom_score_adj = c->p->memory.oom_score_adj;
    }
}

const char *plan_getenv(char *const *env, const char *name)
{
    size_t len = strlen(name);
    for (; env && *env; env++)
        if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
            return *env + len + 1;
    return NULL;
}

char *plan_expand(const struct ctx *c, const char *v)
{
    const struct plan *pl = c->pl;
    size_t cap = strlen(v) + 64, len = 0;
    char *out = xrealloc(NULL, cap);
    while (*v) {
        char *val = NULL;
        const char *close = NULL;
        if (v[0] == '$' && v[1] == '{' && (close = strchr(v, '}'))) {
            size_t n = (size_t)(close - v - 2);
            if (n == 4 && strncmp(v + 2, "cpus", 4) == 0)
                val = bitmap_list(pl->cpus);
            else if (n == 5 && strncmp(v + 2, "ncpus", 5) == 0)
                val = xasprintf("%d", hwloc_bitmap_weight(pl->cpus));
            else if (n == 5 && strncmp(v + 2, "nodes", 5) == 0)
                val = bitmap_list(pl->nodes);
            else if (n == 6 && strncmp(v + 2, "nnodes", 6) == 0)
                val = xasprintf("%d", hwloc_bitmap_weight(pl->nodes));
            else if (n == 8 && strncmp(v + 2, "node_mem", 8) == 0)
                val = xasprintf(
                    "%lluM", (unsigned long long)(plan_sum_mem(c->t, pl->mem_nodes, false) / MIB));
        }
        const char *piece = val ? val : v;
        size_t plen = val ? strlen(val) : 1;
        if (len + plen + 1 > cap) {
            cap = (len + plen + 1) * 2;
            out = xrealloc(out, cap);
        }
        memcpy(out + len, piece, plen);
        len += plen;
        v = val ? close + 1 : v + 1;
        free(val);
    }
    out[len] = '\0';
    return out;
}

void plan_add_env(struct plan *pl, const char *name, char *value, char *why)
{
    struct plan_step *s = plan_add_step(pl, STEP_SETENV, why);
    s->u.env.name = xasprintf("%s", name);
    s->u.env.value = value;
}

static void add_arena_step(struct ctx *c)
{
    const struct profile *p = c->p;
    int ncpus = hwloc_bitmap_weight(c->pl->cpus);
    switch (p->memory.arena) {
    case ARENA_UNSET:
        plan_note_add(c->pl, NOTE_INFO, "MALLOC_ARENA_MAX: left alone (the profile says unset)");
        break;
    case ARENA_VALUE:
        plan_add_env(c->pl, "MALLOC_ARENA_MAX", xasprintf("%u", p->memory.arena_value),
                     xasprintf("glibc's default is 8 arenas per online CPU, each with its own "
                               "fragmentation; the profile sets %u",
                               p->memory.arena_value));
        break;
    case ARENA_AUTO: {
        /* glibc counts online CPUs, not our affinity; one arena per placed CPU
         * bounds contention, and 2 keeps a preempted lock holder from
         * serialising everyone (the seed: never 1). */
        int n = ncpus < 2 ? 2 : ncpus;
        plan_add_env(c->pl, "MALLOC_ARENA_MAX", xasprintf("%d", n),
                     xasprintf("glibc sizes arenas from online CPUs, not the %d placed %s; "
                               "fewer arenas, less fragmentation",
                               ncpus, ncpus == 1 ? "one" : "ones"));
        break;
    }
    }
}

void plan_add_env_steps(struct ctx *c, char *const *environ)
{
    const struct profile *p = c->p;
    add_arena_step(c);
    const char *java_base = plan_getenv(environ, "JAVA_TOOL_OPTIONS");
    char *java_from_profile = NULL;
    for (size_t i = 0; i < p->nenv; i++) {
        char *v = plan_expand(c, p->env[i].value);
        if (strcmp(p->env[i].name, "JAVA_TOOL_OPTIONS") == 0) {
            java_from_profile = v; /* merged with the derived options below */
            continue;
        }
        char *at = plan_origin(p->env[i].at);
        plan_add_env(c->pl, p->env[i].name, v, xasprintf("profile environment (%s)", at));
        free(at);
    }
    bool java = p->java.active_processor_count != JAVA_OFF || p->java.use_numa != JAVA_OFF ||
                p->java.max_ram != JAVA_OFF;
    /* the caller's options first, then the profile's, then the derived ones: a JVM
     * option the caller set (a -Xmx in the unit) is never dropped by a profile */
    char *base = java_from_profile && java_base && *java_base
                     ? xasprintf("%s %s", java_base, java_from_profile)
                     : xasprintf("%s", java_from_profile ? java_from_profile
                                       : java_base       ? java_base
                                                         : "");
    if (java)
        plan_add_java_step(c, base);
    else if (java_from_profile)
        plan_add_env(c->pl, "JAVA_TOOL_OPTIONS", xasprintf("%s", base),
                     xasprintf("profile environment, after the inherited value"));
    free(base);
    free(java_from_profile);
}
