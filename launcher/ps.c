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
#include "report.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct ps_thread {
    long tid;
    char *cpus; /* its affinity, as a list */
    bool one;   /* of one CPU */
};

struct ps_proc {
    long pid;
    char comm[64];
    size_t nthreads;
    struct ps_thread *escaped; /* threads outside the claim's CPUs */
    size_t nescaped;
    long long pages_elsewhere; /* pages off the claim's memory nodes; -1: not checked */
};

struct ps_claim {
    const struct claim *c;
    bool by_lock; /* alive by its fd lock (else by its pid) */
    struct ps_proc *procs;
    size_t nprocs;
    bool inside;
};

/* Pages of a process on nodes outside `nodes`: the N<node>=<pages> fields of numa_maps. */
static long long pages_outside(long pid, hwloc_const_bitmap_t nodes)
{
    char path[64], *line = NULL;
    size_t cap = 0;
    snprintf(path, sizeof(path), "/proc/%ld/numa_maps", pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    long long n = 0;
    /* whole lines: a file's path may be 4 KiB, and the end of its line no file's */
    while (getline(&line, &cap, f) > 0) {
        /* anonymous memory only: a shared library's page cache may sit on any node */
        if (strstr(line, " file=") || !strstr(line, " anon="))
            continue;
        for (char *p = strstr(line, " N"); p; p = strstr(p + 1, " N")) {
            unsigned node;
            long long pages;
            if (sscanf(p, " N%u=%lld", &node, &pages) == 2 && !hwloc_bitmap_isset(nodes, node))
                n += pages;
        }
    }
    free(line);
    fclose(f);
    return n;
}

static void look_at(struct ps_proc *pr, const struct claim *c)
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
    if (c->mpol && strcmp(c->mpol, "bind") == 0 && !hwloc_bitmap_iszero(c->mem_nodes))
        pr->pages_elsewhere = pages_outside(pr->pid, c->mem_nodes);
}

static void gather(struct registry *r, struct ps_claim *out)
{
    size_t n = r->nclaims;
    struct pid_list *holders = xcalloc(n ? n : 1, sizeof(*holders));
    registry_holders(r, r->claims, n, true, holders);
    for (size_t i = 0; i < n; i++) {
        const struct claim *c = &r->claims[i];
        struct ps_claim *pc = &out[i];
        pc->c = c;
        pc->by_lock = registry_held(r, c);
        pc->nprocs = holders[i].n;
        pc->procs = xcalloc(pc->nprocs ? pc->nprocs : 1, sizeof(*pc->procs));
        pc->inside = true;
        for (size_t k = 0; k < pc->nprocs; k++) {
            struct ps_proc *pr = &pc->procs[k];
            pr->pid = holders[i].v[k];
            look_at(pr, c);
            if (pr->nescaped || pr->pages_elsewhere > 0)
                pc->inside = false;
        }
        pid_list_free(&holders[i]);
    }
    free(holders);
}

static void free_gathered(struct ps_claim *pcs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < pcs[i].nprocs; k++) {
            for (size_t t = 0; t < pcs[i].procs[k].nescaped; t++)
                free(pcs[i].procs[k].escaped[t].cpus);
            free(pcs[i].procs[k].escaped);
        }
        free(pcs[i].procs);
    }
    free(pcs);
}

static void ago(char *buf, size_t n, long long when)
{
    long long s = (long long)time(NULL) - when;
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(buf, n, "%llds", s);
    else if (s < 7200)
        snprintf(buf, n, "%lldm", s / 60);
    else if (s < 172800)
        snprintf(buf, n, "%lldh", s / 3600);
    else
        snprintf(buf, n, "%lldd", s / 86400);
}

static void print_text(FILE *f, const struct state_dir *sd, const struct ps_claim *pcs, size_t n)
{
    if (n == 0) {
        fprintf(f, "no service is running under tunerun here (%s)%s\n", sd->path,
                geteuid() != 0 ? "; root's services are listed by root" : "");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct ps_claim *pc = &pcs[i];
        const struct claim *c = pc->c;
        char *cpus = bitmap_list(c->cpus), *nodes = bitmap_list(c->nodes),
             *mem = bitmap_list(c->mem_nodes), since[32];
        char name[ESCAPED_SIZE(64)], mpol[ESCAPED_SIZE(32)];
        ago(since, sizeof(since), c->time);
        /* the table's words, as the messages show names: one line whatever they hold */
        fprintf(f, "%s: cpus %s, nodes %s, memory %s %s%s%s, up %s, %s\n",
                str_escaped(name, sizeof(name), c->profile, 64), cpus, nodes,
                str_escaped(mpol, sizeof(mpol), c->mpol && *c->mpol ? c->mpol : "?", 32), mem,
                c->exclusive ? ", exclusive" : "", c->pool ? ", shared pool" : "", since,
                pc->nprocs == 0 ? "processes not visible here"
                : pc->inside    ? "inside"
                                : "ESCAPED");
        free(cpus);
        free(nodes);
        free(mem);
        if (pc->nprocs == 0)
            fprintf(f, "  held by processes in another pid namespace (claim %s)\n",
                    str_escaped(name, sizeof(name), c->file, 64));
        for (size_t k = 0; k < pc->nprocs; k++) {
            const struct ps_proc *pr = &pc->procs[k];
            /* a process names itself: escaped, so that it sends the terminal nothing */
            char comm[ESCAPED_SIZE(sizeof(pr->comm))];
            fprintf(f, "  pid %ld %s: %zu thread%s", pr->pid,
                    str_escaped(comm, sizeof(comm), pr->comm, sizeof(pr->comm)), pr->nthreads,
                    pr->nthreads == 1 ? "" : "s");
            if (pr->nescaped)
                fprintf(f, ", %zu outside the claim's CPUs", pr->nescaped);
            if (pr->pages_elsewhere > 0)
                fprintf(f, ", %lld pages on other nodes", pr->pages_elsewhere);
            fputc('\n', f);
            for (size_t t = 0; t < pr->nescaped; t++)
                fprintf(f, "    ! thread %ld runs on CPU%s %s\n", pr->escaped[t].tid,
                        pr->escaped[t].one ? "" : "s", pr->escaped[t].cpus);
        }
    }
}

static void print_json(FILE *f, const struct state_dir *sd, const struct ps_claim *pcs, size_t n)
{
    fprintf(f, "{\"state_dir\": ");
    json_string(f, sd->path);
    fprintf(f, ", \"claims\": [");
    for (size_t i = 0; i < n; i++) {
        const struct ps_claim *pc = &pcs[i];
        const struct claim *c = pc->c;
        fprintf(f, "%s\n  {\"profile\": ", i ? "," : "");
        json_string(f, c->profile);
        fprintf(f, ", \"file\": ");
        json_string(f, c->file);
        fprintf(f, ", \"cpus\": ");
        json_list(f, c->cpus);
        fprintf(f, ", \"nodes\": ");
        json_list(f, c->nodes);
        fprintf(f, ", \"mem_nodes\": ");
        json_list(f, c->mem_nodes);
        fprintf(f, ", \"mpol\": ");
        json_string(f, c->mpol ? c->mpol : "");
        fprintf(f, ", \"exclusive\": %s, \"pool\": %s, \"avoid\": [",
                c->exclusive ? "true" : "false", c->pool ? "true" : "false");
        for (size_t a = 0; a < c->navoid; a++) {
            fprintf(f, "%s", a ? ", " : "");
            json_string(f, c->avoid[a]);
        }
        fprintf(f,
                "], \"since\": %lld, \"pid\": %ld, \"alive_by\": \"%s\", \"visible\": %s, "
                "\"inside\": %s, \"processes\": [",
                c->time, c->pid, pc->by_lock ? "lock" : "pid", pc->nprocs ? "true" : "false",
                pc->inside ? "true" : "false");
        for (size_t k = 0; k < pc->nprocs; k++) {
            const struct ps_proc *pr = &pc->procs[k];
            fprintf(f, "%s{\"pid\": %ld, \"comm\": ", k ? ", " : "", pr->pid);
            json_string(f, pr->comm);
            fprintf(f, ", \"threads\": %zu, \"escaped\": [", pr->nthreads);
            for (size_t t = 0; t < pr->nescaped; t++) {
                fprintf(f, "%s{\"tid\": %ld, \"cpus\": ", t ? ", " : "", pr->escaped[t].tid);
                json_string(f, pr->escaped[t].cpus);
                fputc('}', f);
            }
            fprintf(f, "], \"pages_elsewhere\": ");
            if (pr->pages_elsewhere < 0)
                fprintf(f, "null}");
            else
                fprintf(f, "%lld}", pr->pages_elsewhere);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "%s]}\n", n ? "\n" : "");
}

bool ps_show(FILE *f, const struct state_dir *sd, bool json, struct err *e)
{
    struct registry r;
    if (!registry_open(&r, sd, REGISTRY_READ, NULL, e))
        return false;
    /* the claims are read and probed: launches need not wait while /proc is searched */
    registry_release(&r);
    struct ps_claim *pcs = xcalloc(r.nclaims ? r.nclaims : 1, sizeof(*pcs));
    gather(&r, pcs);
    if (json)
        print_json(f, sd, pcs, r.nclaims);
    else
        print_text(f, sd, pcs, r.nclaims);
    free_gathered(pcs, r.nclaims);
    registry_close(&r);
    return true;
}
