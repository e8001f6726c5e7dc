/*
 * facts.c - the process and host facts a launch needs, each read once.
 *
 * The order matters twice: the state directory comes first, as the
 * topology cache lives in it; and what a missing state directory costs is
 * said once the cgroup says whether this is a container, whose fix is
 * another. Everything the planner weighs is read here, before the plan,
 * and nothing is read again after it: a step that needs a fact (whether
 * CAP_SYS_RESOURCE is held, the THP mode inherited, fs.nr_open) takes it
 * from here.
 */
#include "facts.h"
#include "nic.h"
#include "disk.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef PR_GET_THP_DISABLE
#define PR_GET_THP_DISABLE 42
#endif
#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1) /* Linux 6.18 */
#endif

/*
 * The state directory a launch registers in and reads the topology cache
 * from. A default one that cannot be had costs the cache and, for root,
 * the registry (said once the cgroup is known: see say_state()); one that
 * someone else could write is never used. A --state-dir that cannot be
 * used is an error: it was asked for. A read-only one (a unit's /run
 * without ReadWritePaths=) still gives the cache, and a launch runs
 * unregistered: `*unregistered` then.
 */
static bool open_state(struct facts *f, const struct facts_request *rq, enum state_status *st,
                       bool *unregistered, struct err *e)
{
    *st = state_dir_open(&f->sd, rq->state_dir, true, e);
    if (*st != STATE_OK && rq->state_dir) {
        struct err why = *e;
        err_set(e, "--state-dir: %s", why.msg);
        return false;
    }
    *unregistered = *st == STATE_OK && f->sd.readonly &&
                    (rq->use == FACTS_LAUNCH || (rq->use == FACTS_PLAN && !rq->state_dir));
    if (*unregistered && rq->state_dir) {
        err_set(e, "--state-dir: state directory %s: %s", f->sd.path, strerror(EROFS));
        return false;
    }
    if (*unregistered && rq->use == FACTS_PLAN) {
        log_info("state directory %s: %s; a launch runs unregistered, as planned here", f->sd.path,
                 strerror(EROFS));
    } else if (*unregistered) {
        *st = STATE_UNAVAILABLE;
        err_set(e, "state directory %s: %s", f->sd.path, strerror(EROFS));
    }
    return true;
}

/* What a default state directory that cannot be used costs, and its fix. */
static void say_state(const struct facts *f, enum state_status st, const struct err *why)
{
    if (st == STATE_UNSAFE) {
        log_warn("%s; no topology cache, and running services are not known", why->msg);
    } else if (st == STATE_UNAVAILABLE && f->euid == 0) {
        /* root's services are the ones others must know of: a unit's read-only /run */
        bool boxed = f->cgroup_known ? f->cgroup.container : cgroup_in_container();
        log_warn("%s; this service is not registered, so services started later do not know "
                 "of it (fix: %s)",
                 why->msg,
                 boxed ? "a writable /run in the container: docker run --tmpfs /run, a pod's "
                         "emptyDir volume there, or --state-dir on a volume the containers "
                         "that must know of each other share"
                       : "the tmpfiles.d entry tunerun installs creates it at boot; a unit "
                         "with ProtectSystem=strict needs ReadWritePaths=/run/tunerun");
    } else if (st == STATE_UNAVAILABLE) {
        log_info("%s", why->msg);
    }
}

/* The effective capabilities as a mask (libcap), or 0 when they cannot be read. */
static uint64_t effective_caps(void)
{
    uint64_t mask = 0;
    cap_t caps = cap_get_proc();
    for (int c = 0; caps && c <= CAP_LAST_CAP && c < 64; c++) {
        cap_flag_value_t v = CAP_CLEAR;
        if (cap_get_flag(caps, (cap_value_t)c, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET)
            mask |= UINT64_C(1) << c;
    }
    if (caps)
        cap_free(caps);
    return mask;
}

/*
 * The THP mode this process's disable flags set, as its parent left them
 * (PR_GET_THP_DISABLE): THP_NEVER, THP_MADVISE, or THP_SYSTEM for none,
 * and where a seccomp filter refuses the call.
 */
static enum thp_mode inherited_thp(void)
{
    int flags = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
    return flags <= 0                              ? THP_SYSTEM
           : flags & PR_THP_DISABLE_EXCEPT_ADVISED ? THP_MADVISE
                                                   : THP_NEVER;
}

/*
 * This process, as a launch from it changes it: its limits where the
 * profile sets one, fs.nr_open where the profile's nofile would pass the
 * hard limit it has (a hard limit no higher than its own is within
 * fs.nr_open already), and its capabilities and THP mode.
 */
static void read_process(struct facts *f, const struct profile *p)
{
    f->caps = effective_caps();
    f->thp_inherited = inherited_thp();
    for (int r = 0; p && r < PROFILE_NLIMITS; r++) {
        f->limits[r] = (struct rlimit){RLIM_INFINITY, RLIM_INFINITY}; /* unknown: no warning */
        if (p->limits[r].set)
            f->limits_read[r] = getrlimit(r, &f->limits[r]) == 0;
    }
    const struct profile_limit *l = p ? &p->limits[RLIMIT_NOFILE] : NULL;
    if (l && l->set && f->limits_read[RLIMIT_NOFILE] &&
        l->hard > f->limits[RLIMIT_NOFILE].rlim_max) {
        long v = read_long_file("/proc/sys/fs/nr_open");
        f->nr_open = v > 0 ? v : 0;
    }
}

bool facts_gather(struct facts *f, const struct facts_request *rq, struct err *e)
{
    memset(f, 0, sizeof(*f));
    f->sd.fd = -1;
    f->here = rq->topology == NULL;
    f->euid = geteuid();
    f->environ = environ;
    f->thp_inherited = THP_SYSTEM; /* another machine's plan: none inherited */
    enum state_status st = STATE_OK;
    bool unregistered = false;
    struct err why = {0};
    if (f->here && !open_state(f, rq, &st, &unregistered, &why)) {
        *e = why;
        return false;
    }
    if (!topo_load(&f->topo, rq->topology, f->sd.fd >= 0 ? &f->sd : NULL, e))
        return false;
    if (f->topo.cache_note)
        log_info("%s", f->topo.cache_note);
    if (unregistered && f->sd.fd >= 0) {
        close(f->sd.fd); /* the cache read, no registry: as if there were no directory */
        f->sd.fd = -1;
    }
    f->registry = f->sd.fd >= 0;
    const struct profile *p = rq->profile;
    if (f->here && p) {
        /* a launch needs the memory limit and CPU quota only to size a JVM */
        cgroup_detect(&f->cgroup,
                      rq->use == FACTS_PLAN || p->java.max_ram == JAVA_AUTO ||
                          p->java.active_processor_count == JAVA_AUTO,
                      p->placement.enforce);
        f->cgroup_known = true;
    }
    if (f->here)
        say_state(f, st, &why);
    /*
     * A launch with one node to run on has nothing for `near` to rank, and
     * leaves the disk alone (a plan still shows what it would find).
     */
    if (f->here && p && p->placement.near &&
        (rq->use == FACTS_PLAN || topo_cpu_nodes(&f->topo) > 1)) {
        /* looked up before the registry is locked: a path on a stalled NFS mount holds one launch
         */
        f->near.nodes = hwloc_bitmap_alloc();
        if (nic_spec(p->placement.near))
            f->near.status = nic_nodes("/", p->placement.near, f->near.nodes, &f->near.what,
                                       &f->near.nics, &f->near.nnics);
        else
            f->near.status = disk_nodes("/", p->placement.near, f->near.nodes, &f->near.what,
                                        &f->near.disks, &f->near.ndisks);
        f->near_known = true;
    }
    /* the kernel's weights, only for a profile that interleaves by them */
    if (f->here && p && p->placement.memory == MEM_WEIGHTED) {
        weights_read(&f->weights, NULL);
        f->weights_known = true;
    }
    if (f->here && p)
        read_process(f, p);
    if (f->registry && rq->use != FACTS_TOPO)
        registry_witness(&f->witness);
    return true;
}

void facts_free(struct facts *f)
{
    if (f->near_known) {
        hwloc_bitmap_free(f->near.nodes);
        free(f->near.what);
        disk_free(f->near.disks, f->near.ndisks);
        nic_free(f->near.nics, f->near.nnics);
    }
    if (f->cgroup_known)
        cgroup_free(&f->cgroup);
    if (f->weights_known)
        weights_free(&f->weights);
    topo_free(&f->topo);
    state_dir_close(&f->sd);
    memset(f, 0, sizeof(*f));
    f->sd.fd = -1;
}
