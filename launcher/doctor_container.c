/*
 * doctor_container.c - the limits of the cgroup the audited process is in
 * (memory, CPU quota, cpuset), and the capabilities tunerun needs for what
 * the profile asks: what a container or unit decides that the host's
 * sysctls do not.
 */
#include "doctor_internal.h"
#include "cgroup.h"
#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

/* ---- container: the cgroup's limits, and capabilities ---------------------- */

/* The limits of the cgroup the audited process is in: memory, CPU quota, cpuset. */
void doctor_check_cgroup(struct doc *d)
{
    char path[4096], v[256], v2[256];
    /* cgroup.c's lookup, under the root: the hierarchy's mount, the process's path in it */
    char *cg_path = NULL, *mem = cgroup_dir_under(d->root, "memory", &cg_path), *dir = NULL;
    if (mem == NULL && cg_path == NULL) /* no v1 memory hierarchy: cgroup2's */
        dir = cgroup_dir_under(d->root, NULL, &cg_path);
    if (dir) {
        char high[64] = "(none)";
        snprintf(path, sizeof(path), "%s/memory.high", dir);
        doc_rd(d, path, high, sizeof(high));
        snprintf(path, sizeof(path), "%s/memory.max", dir);
        bool lim = doc_rd(d, path, v, sizeof(v));
        snprintf(path, sizeof(path), "%s/cpu.max", dir);
        bool cpu = doc_rd(d, path, v2, sizeof(v2));
        doc_add(d, "container", "cgroup.memory", SEV_INFO,
                doc_fmt("cgroup v2 %s: memory.max %s, memory.high %s", cg_path, lim ? v : "(none)",
                        high),
                lim && strcmp(v, "max") != 0
                    ? doc_fmt("%s's memory must fit it (for java, tunerun caps MaxRAM to it)",
                              doc_who(d))
                    : NULL,
                NULL, NULL);
        doc_add(
            d, "container", "cgroup.cpu", SEV_INFO, doc_fmt("cpu.max %s", cpu ? v2 : "(none)"),
            cpu && strncmp(v2, "max", 3) != 0
                ? doc_fmt(
                      "a CPU quota throttles once it is spent in each period: size thread pools "
                      "to it, not to the host's CPUs")
                : NULL,
            NULL, NULL);
        snprintf(path, sizeof(path), "%s/cpuset.cpus.effective", dir);
        if (doc_rd(d, path, v, sizeof(v)))
            doc_add(d, "container", "cgroup.cpuset", SEV_INFO,
                    doc_fmt("cpuset.cpus.effective %s", v), NULL, NULL, NULL);
    } else if (mem) {
        long long lim;
        snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", mem);
        bool limited = doc_rd_long(d, path, &lim) && lim < (1LL << 60);
        char limit[32] = "(none)";
        if (limited)
            snprintf(limit, sizeof(limit), "%lld", lim);
        doc_add(d, "container", "cgroup.memory", SEV_INFO,
                doc_fmt("cgroup v1 %s: memory.limit_in_bytes %s", cg_path, limit), NULL, NULL,
                NULL);
        char *cpu = cgroup_dir_under(d->root, "cpu", NULL);
        long long quota = 0, period;
        bool q = false;
        if (cpu) {
            snprintf(path, sizeof(path), "%s/cpu.cfs_quota_us", cpu);
            q = doc_rd_long(d, path, &quota);
            snprintf(path, sizeof(path), "%s/cpu.cfs_period_us", cpu);
            if (!doc_rd_long(d, path, &period))
                period = 100000;
        }
        char quota_s[64] = "(none)";
        if (cpu == NULL)
            snprintf(quota_s, sizeof(quota_s), "unknown: no cpu hierarchy mounted for it");
        else if (q && quota > 0)
            snprintf(quota_s, sizeof(quota_s), "%lld/%lld us", quota, period);
        doc_add(d, "container", "cgroup.cpu", SEV_INFO, doc_fmt("cpu quota %s", quota_s), NULL,
                NULL, NULL);
        free(cpu);
        char *cpuset = cgroup_dir_under(d->root, "cpuset", NULL);
        snprintf(path, sizeof(path), "%s/cpuset.cpus", cpuset ? cpuset : "");
        if (cpuset && doc_rd(d, path, v, sizeof(v)))
            doc_add(d, "container", "cgroup.cpuset", SEV_INFO, doc_fmt("cpuset.cpus %s", v), NULL,
                    NULL, NULL);
        free(cpuset);
    } else if (cg_path) {
        doc_add(
            d, "container", "cgroup.memory", SEV_INFO,
            doc_fmt("its cgroup %s is under no mount of its memory hierarchy (not mounted, or a "
                    "cgroup namespace made after the mount)",
                    cg_path),
            NULL, NULL, NULL);
    } else {
        doc_add(d, "container", "cgroup.memory", SEV_INFO, doc_fmt("no memory cgroup found"), NULL,
                NULL, NULL);
    }
    free(mem);
    free(dir);
    free(cg_path);
}

/*
 * The capabilities tunerun needs for what the profile asks: this
 * process's (libcap), or a fixture's CapEff under a root.
 */
void doctor_check_caps(struct doc *d)
{
    char text[8192], full[4096];
    FILE *f;
    unsigned long long eff = 0;
    bool known = false;
    if (strcmp(d->root, "/") == 0) {
        cap_t caps = cap_get_proc();
        for (cap_value_t c = 0; caps && c < 64 && CAP_IS_SUPPORTED(c); c++) {
            cap_flag_value_t on = CAP_CLEAR;
            if (cap_get_flag(caps, c, CAP_EFFECTIVE, &on) == 0 && on == CAP_SET)
                eff |= 1ULL << c;
        }
        known = caps != NULL;
        cap_free(caps);
    } else {
        doc_at_root(d, "/proc/self/status", full, sizeof(full));
        f = fopen_regular(full);
        while (f && fgets(text, sizeof(text), f))
            if (sscanf(text, "CapEff: %llx", &eff) == 1)
                known = true;
        if (f)
            fclose(f);
    }
    if (!known)
        return;
    /* raising nofile needs CAP_SYS_RESOURCE only above the hard limit it inherits */
    long long hard = -1;
    doc_at_root(d, "/proc/self/limits", full, sizeof(full));
    f = fopen_regular(full);
    while (f && fgets(text, sizeof(text), f))
        if (strncmp(text, "Max open files", 14) == 0) {
            char soft[32], h[32];
            if (sscanf(text + 14, "%31s %31s", soft, h) == 2)
                hard = strcmp(h, "unlimited") == 0 ? LLONG_MAX : strtoll(h, NULL, 10);
        }
    if (f)
        fclose(f);
    const struct profile_limit *nofile = d->p ? &d->p->limits[RLIMIT_NOFILE] : NULL;
    bool raise = nofile && nofile->set && (hard < 0 || (long long)nofile->hard > hard);
    /* a score below 0 needs it too (below what a privileged parent allowed, strictly) */
    bool lower = d->p && d->p->memory.oom_set && d->p->memory.oom_score_adj < 0;
    int adj = lower ? d->p->memory.oom_score_adj : 0;
    char fix[256] = "raise the limit where tunerun starts instead: LimitNOFILE= in the unit, "
                    "docker run --ulimit nofile=N:N",
         persist[160] = "LimitNOFILE= in the unit (tunerun systemd prints it)";
    if (lower && raise) {
        snprintf(fix + strlen(fix), sizeof(fix) - strlen(fix),
                 "; set the score there too: OOMScoreAdjust=%d, docker run --oom-score-adj %d", adj,
                 adj);
        snprintf(persist, sizeof(persist),
                 "LimitNOFILE= and OOMScoreAdjust=%d in the unit (tunerun systemd prints them)",
                 adj);
    } else if (lower) {
        snprintf(fix, sizeof(fix),
                 "set the score where tunerun starts instead: OOMScoreAdjust=%d in the unit, "
                 "docker run --oom-score-adj %d",
                 adj, adj);
        snprintf(persist, sizeof(persist),
                 "OOMScoreAdjust=%d in the unit (tunerun systemd prints it)", adj);
    }
    struct {
        const char *id;
        cap_value_t cap;
        bool needed;
        const char *what, *fix, *persist;
    } caps[] = {
        {"cap.sys_resource", CAP_SYS_RESOURCE, raise || lower,
         "raise the hard nofile limit above what it inherits, and lower oom_score_adj", fix,
         persist},
        {"cap.sys_nice", CAP_SYS_NICE, d->p != NULL,
         "move the threads of a shared pool that yields CPUs to this service",
         "docker run --cap-add SYS_NICE",
         "AmbientCapabilities=CAP_SYS_NICE in the unit, when it "
         "runs as another user"},
    };
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        char *name = cap_to_name(caps[i].cap);
        bool has = eff >> caps[i].cap & 1;
        char now[64] = "";
        if (caps[i].cap == CAP_SYS_RESOURCE && hard >= 0 && hard != LLONG_MAX)
            snprintf(now, sizeof(now), " (nofile hard limit now %lld)", hard);
        doc_add(d, "container", caps[i].id, has ? SEV_OK : (caps[i].needed ? SEV_WARN : SEV_INFO),
                doc_fmt("%s %s%s", name ? name : "?", has ? "held" : "missing", now),
                has ? NULL : doc_fmt("tunerun needs it to %s", caps[i].what),
                has ? NULL : doc_fmt("%s", caps[i].fix),
                has ? NULL : doc_fmt("%s", caps[i].persist));
        cap_free(name);
    }
}
