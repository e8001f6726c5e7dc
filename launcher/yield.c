/*
 * yield.c - running shared pools give up the CPUs a launch takes.
 *
 * A pool (nginx's workers) claims every CPU it may run on; a placed service
 * started later (mysql on one node) takes some, and the pool's threads are
 * moved off them here, from outside: sched_setaffinity() per thread, found
 * through /proc. What moved is recorded, so that --strict can put it back,
 * and so can a launch whose exec fails.
 *
 * A pool launched with enforce has a cpuset cgroup of its own, which would
 * let it move its threads back (nginx pins its workers again when it
 * reloads): that cpuset shrinks too, once its threads moved. On kernels
 * before 6.2 a cpuset write resets the affinity of every thread in it to
 * the whole cpuset, so a pool's pinned workers float over what it keeps
 * there; from 6.2 the kernel keeps what each thread asked for within it.
 */
#include "yield.h"
#include "cgroup.h"
#include "log.h"
#include "procs.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Move every thread of one process off `taken`. A thread left with no CPU
 * (one pinned to a taken CPU, as nginx's worker_cpu_affinity does) gets
 * what its service keeps. Returns how many threads failed to move.
 */
static int shrink_process(long pid, size_t shrink, hwloc_const_bitmap_t taken,
                          hwloc_const_bitmap_t keeps, const char *who, struct yield *y,
                          size_t *moved, bool first)
{
    struct pid_list tids;
    int failed = 0;
    if (!procs_threads(pid, &tids))
        return 0; /* exited meanwhile */
    hwloc_bitmap_t cur = hwloc_bitmap_alloc(), want = hwloc_bitmap_alloc(),
                   got = hwloc_bitmap_alloc();
    for (size_t i = 0; i < tids.n; i++) {
        /*
         * The threads there before any of the process's moved: what
         * adopt_newborn() must tell from one born since from a moved one
         */
        if (first)
            pid_list_add(&y->seen, tids.v[i]);
        if (thread_cpus(tids.v[i], cur) < 0)
            continue; /* exited meanwhile */
        hwloc_bitmap_andnot(want, cur, taken);
        if (hwloc_bitmap_iszero(want))
            hwloc_bitmap_copy(want, keeps);
        if (hwloc_bitmap_isequal(want, cur))
            continue;
        if (thread_set_cpus(tids.v[i], want) < 0) {
            if (errno != ESRCH) {
                log_warn("%s: cannot move thread %ld of pid %ld off CPUs it yields: %s", who,
                         tids.v[i], pid, strerror(errno));
                failed++;
            }
            continue;
        }
        /* read back: the kernel keeps a mask within the thread's cpuset */
        if (thread_cpus(tids.v[i], got) == 0)
            hwloc_bitmap_copy(want, got);
        bool seen = false;
        for (size_t k = 0; k < y->nthreads && !seen; k++)
            if ((seen = y->threads[k].tid == tids.v[i]))
                hwloc_bitmap_copy(y->threads[k].to, want);
        if (!seen) {
            y->threads = xrealloc(y->threads, (y->nthreads + 1) * sizeof(*y->threads));
            y->threads[y->nthreads++] = (struct moved_thread){
                tids.v[i], pid, shrink, hwloc_bitmap_dup(cur), hwloc_bitmap_dup(want)};
            (*moved)++;
        }
    }
    hwloc_bitmap_free(cur);
    hwloc_bitmap_free(want);
    hwloc_bitmap_free(got);
    pid_list_free(&tids);
    return failed;
}

#define SHRINK_PASSES 5

/*
 * The pool's own cpuset cgroups (one per process launched with enforce,
 * shared by what it forked) shrunk to what it keeps. Returns how many
 * could not be.
 */
static int shrink_cpusets(struct yield *y, size_t shrink, const struct pid_list *holders,
                          const char *keeps, const char *who)
{
    int failed = 0;
    for (size_t h = 0; h < holders->n; h++) {
        char *dir = cgroup_cpuset_dir_of(holders->v[h]), *was = NULL;
        bool known = dir == NULL;
        for (size_t k = 0; k < y->ncpusets && !known; k++)
            known = strcmp(y->cpusets[k].dir, dir) == 0;
        if (known) {
            free(dir);
            continue;
        }
        int error = cgroup_cpuset_set_cpus(dir, keeps, &was);
        if (error != 0) {
            log_warn("%s: cannot shrink its cpuset %s to CPUs %s: %s; it may move its threads "
                     "back onto the CPUs it gave up",
                     who, dir, keeps, strerror(error));
            failed++;
            free(dir);
            free(was);
            continue;
        }
        y->cpusets = xrealloc(y->cpusets, (y->ncpusets + 1) * sizeof(*y->cpusets));
        y->cpusets[y->ncpusets++] = (struct shrunk_cpuset){shrink, dir, was};
    }
    return failed;
}

/* Each shrunk cpuset of shrink `which` (SIZE_MAX: every one) given cpus, or what it had (NULL). */
static void restore_cpusets(struct yield *y, size_t which, const char *cpus)
{
    for (size_t k = 0; k < y->ncpusets; k++) {
        const struct shrunk_cpuset *c = &y->cpusets[k];
        const char *to = cpus ? cpus : c->was;
        if ((which != SIZE_MAX && c->shrink != which) || to == NULL)
            continue;
        int error = cgroup_cpuset_set_cpus(c->dir, to, NULL);
        if (error != 0 && error != ENOENT)
            log_warn("cannot give the cpuset %s CPUs %s back: %s", c->dir, to, strerror(error));
    }
}

static int tid_order(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int yield_take(struct yield *y, const struct plan *pl, struct registry *reg)
{
    int failed = 0;
    y->done = xcalloc(pl->nshrinks ? pl->nshrinks : 1, sizeof(bool));
    for (size_t i = 0; i < pl->nshrinks; i++) {
        const struct plan_shrink *s = &pl->shrinks[i];
        const struct claim *k = &reg->claims[s->claim];
        char *gives = bitmap_list(s->gives), *keeps = bitmap_list(s->cpus);
        size_t moved = 0, seen = 0;
        int f = 0;
        struct pid_list holders = {NULL, 0}; /* the last pass's: what the cpusets are found by */
        for (int pass = 0; pass < SHRINK_PASSES && f == 0; pass++) {
            size_t was = moved;
            pid_list_free(&holders);
            /* the table's pid only where it cannot be told to hold no claim file */
            registry_holders(reg, k, 1, false, &holders);
            seen = holders.n > seen ? holders.n : seen;
            for (size_t h = 0; h < holders.n; h++)
                f += shrink_process(holders.v[h], i, s->gives, s->cpus, k->profile, y, &moved,
                                    pass == 0);
            if (moved == was)
                break;
        }
        if (f == 0 && seen > 0)
            f += shrink_cpusets(y, i, &holders, keeps, k->profile);
        pid_list_free(&holders);
        if (seen == 0 && registry_pid_alive(reg, k)) {
            log_warn("%s: its process %ld holds no claim file (a daemon that closed its files, "
                     "or a line not of tunerun's), and only a process holding one is moved, so "
                     "it keeps CPUs %s too",
                     k->profile, (long)k->pid, gives);
            f++;
        } else if (seen == 0) {
            log_warn("%s: none of its processes is visible from here (another pid namespace?), "
                     "so it keeps CPUs %s too",
                     k->profile, gives);
            f++;
        } else if (f > 0) {
            log_warn("%s: moved %zu thread%s of %zu process%s off CPUs %s; %d could not be moved "
                     "(above), so it keeps them too and shares them with this service (fix: "
                     "CAP_SYS_NICE, and CAP_SYS_PTRACE to see what other users run)",
                     k->profile, moved, moved == 1 ? "" : "s", seen, seen == 1 ? "" : "es", gives,
                     f);
        } else {
            log_notice("%s: moved %zu thread%s of %zu process%s off CPUs %s; it keeps CPUs %s",
                       k->profile, moved, moved == 1 ? "" : "s", seen, seen == 1 ? "" : "es", gives,
                       keeps);
        }
        y->done[i] = f == 0;
        failed += f;
        free(gives);
        free(keeps);
    }
    if (y->seen.n > 1)
        qsort(y->seen.v, y->seen.n, sizeof(*y->seen.v), tid_order);
    return failed;
}

/*
 * Threads the yield's processes started since it moved their threads: a
 * thread is born with its creator's CPUs, so one that was not there then
 * and is on the very set a moved thread of its process was moved to is
 * taken for moved too. What it had is not known (which thread made it
 * is not): it gets back what the process's moved threads gave up. A
 * thread the yield saw and left alone (one the service pinned) is not
 * one of them. (A pool that starts threads per request, or a JVM.)
 */
static void adopt_newborn(struct yield *y)
{
    size_t moved = y->nthreads;
    hwloc_bitmap_t cur = hwloc_bitmap_alloc(), lost = hwloc_bitmap_alloc(),
                   gave = hwloc_bitmap_alloc();
    for (size_t i = 0; i < moved; i++) {
        long pid = y->threads[i].pid;
        bool done = false; /* each process once */
        for (size_t k = 0; k < i && !done; k++)
            done = y->threads[k].pid == pid;
        struct pid_list tids;
        if (done || !procs_threads(pid, &tids))
            continue;
        hwloc_bitmap_zero(lost); /* what its moved threads gave up */
        for (size_t k = 0; k < moved; k++)
            if (y->threads[k].pid == pid) {
                hwloc_bitmap_andnot(gave, y->threads[k].was, y->threads[k].to);
                hwloc_bitmap_or(lost, lost, gave);
            }
        for (size_t t = 0; t < tids.n; t++) {
            bool known = y->seen.n > 0 && bsearch(&tids.v[t], y->seen.v, y->seen.n,
                                                  sizeof(*y->seen.v), tid_order) != NULL;
            for (size_t k = 0; k < y->nthreads && !known; k++)
                known = y->threads[k].tid == tids.v[t];
            if (known || thread_cpus(tids.v[t], cur) < 0)
                continue;
            for (size_t k = 0; k < moved; k++) {
                const struct moved_thread *m = &y->threads[k];
                if (m->pid != pid || !hwloc_bitmap_isequal(cur, m->to))
                    continue;
                struct moved_thread born = {tids.v[t], pid, m->shrink, hwloc_bitmap_dup(cur),
                                            hwloc_bitmap_dup(cur)};
                hwloc_bitmap_or(born.was, born.was, lost);
                y->threads = xrealloc(y->threads, (y->nthreads + 1) * sizeof(*y->threads));
                y->threads[y->nthreads++] = born;
                break;
            }
        }
        pid_list_free(&tids);
    }
    hwloc_bitmap_free(cur);
    hwloc_bitmap_free(lost);
    hwloc_bitmap_free(gave);
}

void yield_undo(struct yield *y)
{
    restore_cpusets(y, SIZE_MAX, NULL); /* first: the threads' wider sets must fit */
    for (size_t pass = 0, from = 0; pass < SHRINK_PASSES; pass++, from = y->nthreads) {
        adopt_newborn(y);
        if (pass > 0 && from == y->nthreads)
            break; /* none born since */
        for (size_t i = from; i < y->nthreads; i++)
            thread_set_cpus(y->threads[i].tid, y->threads[i].was);
    }
}

/* Whether the yield moved any thread of shrink i. */
static bool moved_any(const struct yield *y, size_t shrink)
{
    for (size_t k = 0; k < y->nthreads; k++)
        if (y->threads[k].shrink == shrink)
            return true;
    return false;
}

void yield_record(struct yield *y, const struct plan *pl, struct registry *reg, const char *own)
{
    y->placed = xcalloc(reg->nclaims ? reg->nclaims : 1, sizeof(*y->placed));
    y->placed_cpus = xcalloc(reg->nclaims ? reg->nclaims : 1, sizeof(*y->placed_cpus));
    for (size_t i = 0; i < reg->nclaims; i++) {
        if (reg->claims[i].pool || (own && strcmp(reg->claims[i].file, own) == 0))
            continue;
        y->placed[y->nplaced] = xstrdup(reg->claims[i].file);
        y->placed_cpus[y->nplaced++] = hwloc_bitmap_dup(reg->claims[i].cpus);
    }
    y->claims = xcalloc(pl->nshrinks ? pl->nshrinks : 1, sizeof(*y->claims));
    for (size_t i = 0; i < pl->nshrinks; i++) {
        const struct plan_shrink *s = &pl->shrinks[i];
        if (!y->done[i] && !moved_any(y, i))
            continue; /* nothing changed */
        const struct claim *k = &reg->claims[s->claim];
        struct shrunk_claim before = {i,
                                      xstrdup(k->file),
                                      hwloc_bitmap_dup(k->cpus),
                                      hwloc_bitmap_dup(k->nodes),
                                      false,
                                      hwloc_bitmap_dup(s->gives),
                                      k->pid,
                                      k->start};
        struct err e;
        /* the claim shrinks only with its threads: one that stayed is no smaller */
        if (y->done[i] &&
            !(before.recorded = registry_update(reg, s->claim, s->cpus, s->nodes, &e)))
            log_warn("registry: %s", e.msg);
        y->claims[y->nclaims++] = before;
    }
    yield_save(y, reg, own);
}

/* Which of y->claims shrink i made smaller, or y->nclaims. */
static size_t claim_of(const struct yield *y, size_t shrink)
{
    size_t c = 0;
    while (c < y->nclaims && y->claims[c].shrink != shrink)
        c++;
    return c;
}

void yield_give_back(struct yield *y, struct registry *reg, const struct topo *t, const char *own)
{
    /*
     * The lock was let go before the exec: a launch since may have taken
     * some of the CPUs this one took, and a pool given those back would run
     * on them. What placed services hold now is never given back.
     */
    hwloc_bitmap_t held = hwloc_bitmap_alloc(), cpus = hwloc_bitmap_alloc();
    for (size_t i = 0; i < reg->nclaims; i++) {
        if (reg->claims[i].pool || (own && strcmp(reg->claims[i].file, own) == 0))
            continue;
        /* held since: a placed service that shared CPUs with a pool before still shares them */
        hwloc_bitmap_copy(cpus, reg->claims[i].cpus);
        for (size_t k = 0; k < y->nplaced; k++)
            if (strcmp(y->placed[k], reg->claims[i].file) == 0)
                hwloc_bitmap_andnot(cpus, cpus, y->placed_cpus[k]);
        hwloc_bitmap_or(held, held, cpus);
    }
    /* per claim: what it got back, and all it holds then (NULL: not restored) */
    hwloc_bitmap_t *given = xcalloc(y->nclaims ? y->nclaims : 1, sizeof(*given));
    hwloc_bitmap_t *holds = xcalloc(y->nclaims ? y->nclaims : 1, sizeof(*holds));
    for (size_t c = 0; c < y->nclaims; c++) {
        const struct shrunk_claim *k = &y->claims[c];
        size_t i = 0;
        while (i < reg->nclaims && strcmp(reg->claims[i].file, k->file) != 0)
            i++;
        if (i == reg->nclaims)
            continue; /* it ended meanwhile: nothing to give back to */
        const struct claim *now = &reg->claims[i];
        if (!k->recorded) {
            /* never shrunk: its threads go back within what it holds now */
            given[c] = hwloc_bitmap_dup(now->cpus);
            holds[c] = hwloc_bitmap_dup(now->cpus);
            continue;
        }
        hwloc_bitmap_t give = hwloc_bitmap_alloc();
        hwloc_bitmap_andnot(give, k->cpus, now->cpus);
        hwloc_bitmap_andnot(give, give, held);
        if (hwloc_bitmap_iszero(give)) {
            char *taken = bitmap_list(k->cpus);
            log_notice("%s: gets none of CPUs %s back: services placed since hold them",
                       now->profile, taken);
            free(taken);
            hwloc_bitmap_free(give);
            continue;
        }
        hwloc_bitmap_or(cpus, now->cpus, give);
        /* its nodes: as they were when all came back, else those its CPUs are on */
        hwloc_bitmap_t nodes = hwloc_bitmap_dup(k->nodes);
        if (!hwloc_bitmap_isequal(cpus, k->cpus)) {
            hwloc_bitmap_copy(nodes, now->nodes);
            topo_nodes_of(t, cpus, nodes);
        }
        struct err e;
        char *list = bitmap_list(give), *all = bitmap_list(cpus);
        bool updated = registry_update(reg, i, cpus, nodes, &e);
        hwloc_bitmap_free(nodes);
        if (updated) {
            log_notice("%s: gets CPUs %s back (%s in all)", now->profile, list, all);
            given[c] = give;
            holds[c] = hwloc_bitmap_dup(cpus);
        } else {
            log_warn("registry: %s; its threads keep the smaller set until it restarts", e.msg);
            hwloc_bitmap_free(give);
        }
        free(list);
        free(all);
    }
    for (size_t c = 0; c < y->nclaims; c++)
        if (holds[c]) {
            char *list = bitmap_list(holds[c]);
            restore_cpusets(y, y->claims[c].shrink, list);
            free(list);
        }
    size_t failed = 0;
    int error = 0;
    hwloc_bitmap_t cur = hwloc_bitmap_alloc();
    /* in passes, as the yield took them: a moved thread may start others until it is back */
    for (size_t pass = 0, from = 0; pass < SHRINK_PASSES; pass++, from = y->nthreads) {
        adopt_newborn(y);
        if (pass > 0 && from == y->nthreads)
            break; /* none born since */
        for (size_t k = from; k < y->nthreads; k++) {
            const struct moved_thread *m = &y->threads[k];
            size_t c = claim_of(y, m->shrink);
            if (c == y->nclaims || given[c] == NULL || thread_cpus(m->tid, cur) < 0)
                continue; /* not given back, or the thread ended */
            /*
             * Where the move left it: what it had, within what its claim holds now (a
             * thread pinned to a CPU it gave up is pinned there again). Moved since by
             * someone else: only what came back is added to that.
             */
            if (hwloc_bitmap_isequal(cur, m->to)) {
                hwloc_bitmap_and(cpus, m->was, holds[c]);
                if (hwloc_bitmap_iszero(cpus))
                    continue;
            } else {
                hwloc_bitmap_and(cpus, m->was, given[c]);
                hwloc_bitmap_or(cpus, cpus, cur);
            }
            if (!hwloc_bitmap_isequal(cpus, cur) && thread_set_cpus(m->tid, cpus) < 0 &&
                errno != ESRCH) {
                error = errno;
                failed++;
            }
        }
    }
    if (failed > 0)
        log_warn("%zu thread%s of the services that yielded CPUs could not be moved back: %s; "
                 "they keep the smaller set until they restart",
                 failed, failed == 1 ? "" : "s", strerror(error));
    for (size_t c = 0; c < y->nclaims; c++) {
        hwloc_bitmap_free(given[c]);
        hwloc_bitmap_free(holds[c]);
    }
    free(given);
    free(holds);
    hwloc_bitmap_free(cur);
    hwloc_bitmap_free(cpus);
    hwloc_bitmap_free(held);
}

void yield_free(struct yield *y)
{
    for (size_t i = 0; i < y->nthreads; i++) {
        hwloc_bitmap_free(y->threads[i].was);
        hwloc_bitmap_free(y->threads[i].to);
    }
    for (size_t i = 0; i < y->nclaims; i++) {
        free(y->claims[i].file);
        hwloc_bitmap_free(y->claims[i].cpus);
        hwloc_bitmap_free(y->claims[i].nodes);
        hwloc_bitmap_free(y->claims[i].gave);
    }
    for (size_t i = 0; i < y->nplaced; i++) {
        free(y->placed[i]);
        hwloc_bitmap_free(y->placed_cpus[i]);
    }
    free(y->placed);
    free(y->placed_cpus);
    for (size_t i = 0; i < y->ncpusets; i++) {
        free(y->cpusets[i].dir);
        free(y->cpusets[i].was);
    }
    free(y->cpusets);
    pid_list_free(&y->seen);
    free(y->threads);
    free(y->done);
    free(y->claims);
    memset(y, 0, sizeof(*y));
}
