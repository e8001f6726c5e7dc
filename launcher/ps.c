/*
 * ps.c - `tunerun ps`: the services running under claims, and whether each
 * thread is still where tunerun put it.
 *
 * A service's processes are found through its claim file in /proc/PID/fd, so
 * a daemonized nginx's master and workers all show, plus the claim's own
 * pid for daemons that closed the fd. A thread escapes when its affinity
 * leaves the claim's CPUs (nginx's `worker_cpu_affinity auto` re-pins
 * workers onto every CPU); memory escapes when a service bound to its nodes
 * has pages elsewhere (/proc/PID/numa_maps).
 */
#include "ps.h"
#include "procs.h"
#include "registry.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * A numa_maps line's mapping as the service's own memory: private
 * anonymous memory (anon=, no file), or shared anonymous memory, which
 * numa_maps shows as a deleted file: MAP_SHARED|MAP_ANONYMOUS as
 * /dev/zero (PostgreSQL's shared_buffers), System V segments as /SYSV...
 * Other files' page cache is theirs, wherever they were read (a shared
 * library's may sit on any node).
 */
static bool own_memory(const char *line, bool *shared)
{
    const char *file = strstr(line, " file=");
    static const char zero[] = "/dev/zero\\040(deleted)", sysv[] = "/SYSV";
    *shared = file && (strncmp(file + 6, zero, sizeof(zero) - 1) == 0 ||
                       strncmp(file + 6, sysv, sizeof(sysv) - 1) == 0);
    return file ? *shared : strstr(line, " anon=") != NULL;
}

/* Whether a shared mapping at the line's address was counted before; if not, it is now. */
static bool seen_before(const char *line, struct pid_list *seen)
{
    long at = (long)strtoul(line, NULL, 16); /* addresses kept in a pid list: longs both */
    for (size_t i = 0; i < seen->n; i++)
        if (seen->v[i] == at)
            return true;
    pid_list_add(seen, at);
    return false;
}

/* bytes more on node, in the process's node_bytes, grown to hold it */
static void add_bytes(struct ps_proc *pr, unsigned node, unsigned long long bytes)
{
    if (node >= pr->nnodes) {
        pr->node_bytes = xrealloc(pr->node_bytes, (node + 1) * sizeof(*pr->node_bytes));
        memset(pr->node_bytes + pr->nnodes, 0, (node + 1 - pr->nnodes) * sizeof(*pr->node_bytes));
        pr->nnodes = node + 1;
    }
    pr->node_bytes[node] += bytes;
}

/*
 * One read of a process's numa_maps, for what ps was asked: with `bound`,
 * its private anonymous pages on nodes outside it (pages_elsewhere); with
 * `seen`, its own memory by node in bytes (node_bytes: each mapping's
 * N<node>=<pages> times its kernelpagesize_kB), where a shared mapping
 * counts once for the service, as forked processes map it at the same
 * address and one seen before is left out. Neither is set when the file
 * cannot be read.
 */
static void read_numa_maps(struct ps_proc *pr, hwloc_const_bitmap_t bound, struct pid_list *seen)
{
    char path[64], *line = NULL;
    size_t cap = 0;
    snprintf(path, sizeof(path), "/proc/%ld/numa_maps", pr->pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return;
    if (bound)
        pr->pages_elsewhere = 0;
    if (seen)
        pr->node_bytes = xcalloc(1, sizeof(*pr->node_bytes)); /* read: known, if empty */
    /* whole lines: a file's path may be 4 KiB, and the end of its line no file's */
    while (getline(&line, &cap, f) > 0) {
        bool shared;
        if (!own_memory(line, &shared))
            continue;
        bool count = seen && !(shared && seen_before(line, seen));
        const char *ps = strstr(line, " kernelpagesize_kB=");
        unsigned long long page = ps ? strtoull(ps + 19, NULL, 10) * 1024 : 4096;
        for (char *p = strstr(line, " N"); p; p = strstr(p + 1, " N")) {
            unsigned node;
            unsigned long long pages;
            if (sscanf(p, " N%u=%llu", &node, &pages) != 2 || node >= 4096)
                continue;
            if (bound && !shared && !hwloc_bitmap_isset(bound, node))
                pr->pages_elsewhere += (long long)pages;
            if (count)
                add_bytes(pr, node, pages * page);
        }
    }
    free(line);
    fclose(f);
}

/* A process's threads against the claim's CPUs, and its memory as read_numa_maps() says. */
static void look_at(struct ps_proc *pr, const struct claim *c, struct pid_list *seen)
{
    struct pid_list tids;
    proc_comm(pr->pid, pr->comm, sizeof(pr->comm));
    pr->pages_elsewhere = -1;
    if (!procs_threads(pr->pid, &tids))
        return;
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
    for (size_t i = 0; i < tids.n; i++) {
        if (thread_cpus(tids.v[i], cpus) < 0)
            continue;
        pr->nthreads++;
        if (!hwloc_bitmap_isincluded(cpus, c->cpus)) {
            pr->escaped = xrealloc(pr->escaped, (pr->nescaped + 1) * sizeof(*pr->escaped));
            pr->escaped[pr->nescaped++] =
                (struct ps_thread){tids.v[i], bitmap_list(cpus), hwloc_bitmap_weight(cpus) == 1};
        }
    }
    hwloc_bitmap_free(cpus);
    pid_list_free(&tids);
    /* only a bound service promises where its pages are */
    bool bound = c->mpol && strcmp(c->mpol, "bind") == 0 && !hwloc_bitmap_iszero(c->mem_nodes);
    if (bound || seen)
        read_numa_maps(pr, bound ? c->mem_nodes : NULL, seen);
}

static void gather(struct registry *r, struct ps_service *out, bool memory)
{
    size_t n = r->nclaims;
    struct pid_list *holders = xcalloc(n ? n : 1, sizeof(*holders));
    registry_holders(r, r->claims, n, true, holders);
    for (size_t i = 0; i < n; i++) {
        const struct claim *c = &r->claims[i];
        struct ps_service *pc = &out[i];
        pc->c = c;
        pc->by_lock = registry_held(r, c);
        pc->nprocs = holders[i].n;
        pc->procs = xcalloc(pc->nprocs ? pc->nprocs : 1, sizeof(*pc->procs));
        pc->inside = true;
        struct pid_list shared = {0}; /* shared mappings' addresses, counted once */
        for (size_t k = 0; k < pc->nprocs; k++) {
            struct ps_proc *pr = &pc->procs[k];
            pr->pid = holders[i].v[k];
            look_at(pr, c, memory ? &shared : NULL);
            pc->threads += pr->nthreads;
            pc->threads_outside += pr->nescaped;
            if (pr->nescaped || pr->pages_elsewhere > 0)
                pc->inside = false;
        }
        pid_list_free(&shared);
        pid_list_free(&holders[i]);
    }
    free(holders);
}

static void free_gathered(struct ps_service *pcs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < pcs[i].nprocs; k++) {
            for (size_t t = 0; t < pcs[i].procs[k].nescaped; t++)
                free(pcs[i].procs[k].escaped[t].cpus);
            free(pcs[i].procs[k].escaped);
            free(pcs[i].procs[k].node_bytes);
        }
        free(pcs[i].procs);
    }
    free(pcs);
}

bool ps_gather(struct ps_report *r, const struct state_dir *sd, bool memory, struct err *e)
{
    memset(r, 0, sizeof(*r));
    r->state_dir = sd->path;
    r->not_root = geteuid() != 0;
    if (!registry_open(&r->reg, sd, REGISTRY_READ, NULL, e))
        return false;
    /* the claims are read and probed: launches need not wait while /proc is searched */
    registry_release(&r->reg);
    r->n = r->reg.nclaims;
    r->v = xcalloc(r->n ? r->n : 1, sizeof(*r->v));
    gather(&r->reg, r->v, memory);
    return true;
}

void ps_free(struct ps_report *r)
{
    free_gathered(r->v, r->n);
    registry_close(&r->reg);
    memset(r, 0, sizeof(*r));
}
