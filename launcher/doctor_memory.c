/*
 * doctor_memory.c - the memory checks of the seed's list: THP (the global
 * mode and per process), swappiness, overcommit and dirty pages, each read
 * against what the profile fears.
 */
#include "doctor_internal.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- memory --------------------------------------------------------------- */

/*
 * THP: the global mode, its defrag, and whether this kernel gives the
 * profile's madvise per process.
 */
void doctor_check_thp(struct doc *d)
{
    char buf[256], mode[32], rel[128] = "";
    const char *thp = doc_rd(d, "/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf))
                          ? sysfs_choice(buf, mode, sizeof(mode))
                          : NULL;
    int major = 0, minor = 0;
    bool per_process = doc_rd(d, "/proc/sys/kernel/osrelease", rel, sizeof(rel)) &&
                       sscanf(rel, "%d.%d", &major, &minor) == 2 &&
                       (major > 6 || (major == 6 && minor >= 18));
    if (thp) {
        /*
         * tunerun turns THP off per process on any kernel (never), and gives
         * madvise per process from Linux 6.18: only a madvise profile on an
         * older kernel, or no profile at all, lives with the global mode.
         */
        bool always = strcmp(thp, "always") == 0;
        bool never_ok = major > 3 || (major == 3 && minor >= 15); /* PR_SET_THP_DISABLE */
        bool exposed = d->p == NULL || (d->p->memory.thp == THP_MADVISE && !per_process) ||
                       (d->p->memory.thp == THP_NEVER && !never_ok) ||
                       d->p->memory.thp == THP_SYSTEM;
        enum severity sev = !always ? SEV_OK : !exposed ? SEV_INFO : d->p ? SEV_WARN : SEV_INFO;
        doc_add(
            d, "memory", "thp.enabled", sev, doc_fmt("transparent_hugepage/enabled = %s", thp),
            always && exposed
                ? doc_fmt(
                      "always: every large allocation of %s may stall to assemble a 2 MiB page, "
                      "and a fork copies 2 MiB per touched page",
                      doc_who(d))
            : always ? doc_fmt("tunerun sets %s's THP mode per process, whatever the global one",
                               doc_who(d))
                     : NULL,
            always && exposed
                ? doc_fmt("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled")
                : NULL,
            always && exposed ? doc_fmt("transparent_hugepage=madvise on the kernel command line")
                              : NULL);
    }
    char dbuf[256], dmode[32];
    const char *defrag = doc_rd(d, "/sys/kernel/mm/transparent_hugepage/defrag", dbuf, sizeof(dbuf))
                             ? sysfs_choice(dbuf, dmode, sizeof(dmode))
                             : NULL;
    if (defrag) {
        bool bad = strcmp(defrag, "always") == 0;
        doc_add(
            d, "memory", "thp.defrag", bad ? SEV_WARN : SEV_OK,
            doc_fmt("transparent_hugepage/defrag = %s", defrag),
            bad ? doc_fmt("always: page faults compact memory synchronously, a latency spike of "
                          "milliseconds")
                : NULL,
            bad ? doc_fmt("echo %s > /sys/kernel/mm/transparent_hugepage/defrag",
                          doc_offered(dbuf, (const char *const[]){"defer+madvise", "madvise", NULL})
                              ?: "madvise")
                : NULL,
            bad ? doc_fmt("w /sys/kernel/mm/transparent_hugepage/defrag - - - - %s in "
                          "/etc/tmpfiles.d/thp.conf",
                          doc_offered(dbuf, (const char *const[]){"defer+madvise", "madvise", NULL})
                              ?: "madvise")
                : NULL);
    }
    if (d->p && d->p->memory.thp == THP_MADVISE && rel[0]) {
        bool global_always = thp && strcmp(thp, "always") == 0;
        doc_add(d, "memory", "thp.per_process",
                per_process     ? SEV_OK
                : global_always ? SEV_WARN
                                : SEV_INFO,
                doc_fmt("kernel %s: per-process THP madvise %s", rel,
                        per_process ? "available" : "missing (Linux 6.18+)"),
                per_process
                    ? NULL
                    : doc_fmt("the profile's thp = madvise cannot apply to %s alone; the global "
                              "mode holds",
                              doc_who(d)),
                per_process ? NULL
                            : doc_fmt("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"),
                per_process
                    ? NULL
                    : doc_fmt("transparent_hugepage=madvise on the kernel command line, or Linux "
                              "6.18 or later"));
    }
}

/*
 * The vm.overcommit_memory a profile's [host] asks for. Strict (2) keeps
 * the OOM killer from a service that would rather see an allocation fail,
 * as PostgreSQL's documentation advises (19.4.4). Its commit limit is
 * swap plus vm.overcommit_ratio percent of the memory hugetlbfs does not
 * hold (or vm.overcommit_kbytes), and it must hold what the host commits
 * already, with a quarter more to grow, or every process's allocations
 * start failing: the fix names the ratio that does.
 */
static void overcommit_wished(struct doc *d, long long oc, int wish)
{
    static const char *const names[] = {"heuristic", "always", "strict"};
    unsigned long long committed = doc_meminfo_kb(d, "Committed_AS"),
                       total = doc_meminfo_kb(d, "MemTotal"), swap = doc_meminfo_kb(d, "SwapTotal"),
                       huge = doc_meminfo_kb(d, "Hugetlb");
    long long ratio = 50, kbytes = 0;
    doc_rd_long(d, "/proc/sys/vm/overcommit_ratio", &ratio);
    doc_rd_long(d, "/proc/sys/vm/overcommit_kbytes", &kbytes);
    unsigned long long usable = total > huge ? total - huge : 0, want = committed + committed / 4,
                       limit =
                           (kbytes > 0 ? (unsigned long long)kbytes : usable * ratio / 100) + swap;
    long long need = ratio; /* the ratio strict mode needs, where the one set is short */
    if (wish == 2 && committed && usable && limit < want)
        need = (long long)(((want > swap ? want - swap : 0) * 100 + usable - 1) / usable);
    bool ok = oc == wish;
    char room[400] = "", basis[64] = "vm.overcommit_kbytes";
    if (kbytes <= 0)
        snprintf(basis, sizeof(basis), "%lld%% of the memory hugetlbfs does not hold", ratio);
    if (wish == 2 && committed && usable)
        snprintf(room, sizeof(room),
                 "; strict mode's commit limit would be %llu MiB (swap and %s), against %llu MiB "
                 "committed now (Committed_AS): %s",
                 limit / 1024, basis, committed / 1024,
                 limit >= want ? "room enough"
                 : need <= 100
                     ? "too little, so the fix raises vm.overcommit_ratio first"
                     : "too little even at 100%: add swap first, or stay out of strict mode");
    char *where = d->p->host.overcommit_at.file ? doc_fmt("%s:%d", d->p->host.overcommit_at.file,
                                                          d->p->host.overcommit_at.line)
                                                : doc_fmt("--set");
    bool raise = wish == 2 && need != ratio;
    long long set = need > 100 ? 100 : need;
    doc_add(
        d, "memory", "vm.overcommit_memory", ok ? SEV_OK : SEV_WARN,
        doc_fmt("vm.overcommit_memory = %lld (%s)", oc, oc >= 0 && oc <= 2 ? names[oc] : "unknown"),
        ok ? NULL
           : doc_fmt("%s's profile asks for %d (%s) of the host ([host] overcommit_memory, "
                     "%s)%s",
                     doc_who(d), wish, names[wish], where, room),
        ok      ? NULL
        : raise ? doc_fmt("sysctl -w vm.overcommit_ratio=%lld vm.overcommit_memory=%d", set, wish)
                : doc_fmt("sysctl -w vm.overcommit_memory=%d", wish),
        ok      ? NULL
        : raise ? doc_fmt("vm.overcommit_ratio = %lld and vm.overcommit_memory = %d in "
                          "/etc/sysctl.d/90-tunerun.conf",
                          set, wish)
                : doc_fmt("vm.overcommit_memory = %d in /etc/sysctl.d/90-tunerun.conf", wish));
    free(where);
}

/*
 * Swap, overcommit and dirty pages: how the kernel reclaims, promises and
 * writes back the service's memory.
 */
void doctor_check_vm(struct doc *d)
{
    long long sw;
    if (doc_rd_long(d, "/proc/sys/vm/swappiness", &sw)) {
        enum severity s = SEV_OK;
        char *why = NULL;
        if (doc_swap_areas(d) == 0 && (sw == 0 || (sw > 10 && doc_swap_sensitive(d)))) {
            s = SEV_INFO;
            why = doc_fmt("no swap here, so it decides nothing until swap is added");
        } else if (sw == 0) {
            s = SEV_WARN;
            why =
                doc_fmt("0 turns a little memory pressure into the OOM killer (in cgroup v2 above "
                        "all); 1 still keeps memory in RAM but lets the kernel breathe");
        } else if (sw > 10 && doc_swap_sensitive(d)) {
            s = SEV_WARN;
            why =
                doc_fmt("%lld lets reclaim swap %s's memory out early under pressure, and a page "
                        "read back from swap costs a disk read; its profile sets a swap policy of "
                        "its own (on cgroup v1 tunerun sets it for the service where it may write "
                        "its cgroup: see tunerun plan)",
                        sw, doc_who(d));
        }
        bool fix = s == SEV_WARN;
        doc_add(
            d, "memory", "vm.swappiness", s, doc_fmt("vm.swappiness = %lld", sw), why,
            fix ? doc_fmt("sysctl -w vm.swappiness=1") : NULL,
            fix ? doc_fmt("vm.swappiness = 1 in /etc/sysctl.d/90-tunerun.conf (tuned profiles may "
                          "override it: check `tuned-adm active`)")
                : NULL);
    }
    long long oc;
    int wish = d->p ? d->p->host.overcommit_memory : -1;
    bool known = doc_rd_long(d, "/proc/sys/vm/overcommit_memory", &oc);
    if (known && wish >= 0) {
        overcommit_wished(d, oc, wish);
    } else if (known) {
        bool forks = doc_forks_to_save(d);
        enum severity s = forks && oc != 1 ? SEV_WARN : (!forks && oc == 2 ? SEV_INFO : SEV_OK);
        doc_add(
            d, "memory", "vm.overcommit_memory", s, doc_fmt("vm.overcommit_memory = %lld", oc),
            forks && oc != 1
                ? doc_fmt("%s's profile turns THP off and allows no swap, as a service that forks "
                          "its whole memory to save it does: without overcommit that fork can fail "
                          "with ENOMEM, and the save with it",
                          doc_who(d))
            : s ? doc_fmt("2 (strict) refuses allocations beyond the commit limit: fine only if "
                          "sized for")
                : NULL,
            forks && oc != 1 ? doc_fmt("sysctl -w vm.overcommit_memory=1") : NULL,
            forks && oc != 1 ? doc_fmt("vm.overcommit_memory = 1 in /etc/sysctl.d/90-tunerun.conf")
                             : NULL);
    }
    long long ratio, bg;
    if (doc_rd_long(d, "/proc/sys/vm/dirty_ratio", &ratio) &&
        doc_rd_long(d, "/proc/sys/vm/dirty_background_ratio", &bg)) {
        long long total_kb = (long long)doc_meminfo_kb(d, "MemTotal");
        long long dirty_mb = total_kb * ratio / 100 / 1024, bytes = 0;
        if (doc_rd_long(d, "/proc/sys/vm/dirty_bytes", &bytes) && bytes > 0)
            dirty_mb = bytes >> 20; /* set in bytes, the ratios read 0 */
        bool bad = bytes > 0 ? bytes > (1LL << 30) : (ratio > 10 || bg > 5);
        /*
         * A warning for a service whose data directory was named (its writes
         * flush there), on a disk that does not spin: a spinning one absorbs
         * big flushes better than it does many small ones.
         */
        bool writes = d->p && d->data_dir && d->disk[0];
        enum severity sev = !bad ? SEV_OK : writes && !d->spinning ? SEV_WARN : SEV_INFO;
        char on[96] = "";
        if (d->disk[0])
            snprintf(on, sizeof(on), " onto %s (%s)", d->disk,
                     d->spinning ? "spinning" : "SSD or virtual");
        doc_add(
            d, "memory", "vm.dirty", sev,
            doc_fmt(
                "vm.dirty_ratio = %lld, vm.dirty_background_ratio = %lld (up to %lld MiB dirty)",
                ratio, bg, dirty_mb),
            bad ? doc_fmt(
                      "dirty pages pile up before writeback starts, then flush%s in a storm that "
                      "stalls writers; a low-latency disk wants small, steady flushes",
                      on)
                : NULL,
            bad ? doc_fmt("sysctl -w vm.dirty_ratio=10 vm.dirty_background_ratio=5") : NULL,
            bad ? doc_fmt("vm.dirty_ratio = 10 and vm.dirty_background_ratio = 5 in "
                          "/etc/sysctl.d/90-tunerun.conf")
                : NULL);
    }
}
