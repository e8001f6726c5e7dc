/*
 * metrics.c - the registry and the host's audit as Prometheus metrics.
 *
 * Prometheus's text exposition format (version 0.0.4): for each metric a
 * # HELP and a # TYPE line, then one line per series, NAME{LABEL="VALUE",
 * ...} VALUE. Names follow Prometheus's conventions: a tunerun_ prefix,
 * base units in the name (_bytes, _seconds), _ratio for a fraction, and
 * every one a gauge, as each is a state read now, not a count that grows.
 * Labels are bounded: a service is its profile, its claim's key (the
 * hash of its profile and command line, the same across restarts) and
 * its replica, 0 for the first of the running launches of that key (a
 * template unit's instances, identical workers) in the order they
 * started, so that no two series are the same; a node is its number, a
 * severity one of four; never a pid or a time. Written by
 * hand: the format is a few lines of printf, and Debian ships no C client
 * library for it (libprom is not packaged).
 */
#include "metrics.h"
#include "util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A label value, escaped as the format asks: backslash, double quote and newline. */
static void label_value(FILE *out, const char *v)
{
    for (; *v; v++)
        if (*v == '\\' || *v == '"')
            fprintf(out, "\\%c", *v);
        else if (*v == '\n')
            fputs("\\n", out);
        else
            fputc(*v, out);
}

static void header(FILE *out, const char *name, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/*
 * What the series need of each service, worked out once: which of the
 * running launches of its key it is (0 for the one that started first),
 * and its memory by node (service_nodes()).
 */
struct worked {
    size_t replica;
    unsigned long long *bytes; /* NULL: its memory could not be read */
    unsigned nnodes;
};

/* NAME{profile="...",service="...",replica="N" and the further labels as given */
static void series(FILE *out, const char *name, const struct ps_report *r, const struct worked *v,
                   size_t i)
{
    fprintf(out, "%s{profile=\"", name);
    label_value(out, r->v[i].c->profile ? r->v[i].c->profile : "");
    fputs("\",service=\"", out);
    label_value(out, r->v[i].c->key);
    fprintf(out, "\",replica=\"%zu\"", v[i].replica);
}

/*
 * Anonymous memory of the service's processes by node, summed, and *n its
 * length; NULL where no process's memory could be read.
 */
static unsigned long long *service_nodes(const struct ps_service *s, unsigned *n)
{
    unsigned long long *bytes = NULL;
    bool read = false;
    *n = 0;
    for (size_t k = 0; k < s->nprocs; k++) {
        const struct ps_proc *p = &s->procs[k];
        read |= p->node_bytes != NULL;
        if (p->nnodes > *n) {
            bytes = xrealloc(bytes, p->nnodes * sizeof(*bytes));
            memset(bytes + *n, 0, (p->nnodes - *n) * sizeof(*bytes));
            *n = p->nnodes;
        }
        for (unsigned i = 0; i < p->nnodes; i++)
            bytes[i] += p->node_bytes[i];
    }
    if (read && bytes == NULL)
        bytes = xcalloc(1, sizeof(*bytes)); /* read, and none resident */
    return bytes;
}

static void service_metrics(FILE *out, const struct ps_report *r, const struct worked *v)
{
    header(out, "tunerun_service_info",
           "A service running under a tunerun claim, with its placement as labels: its CPUs, "
           "nodes and memory policy.");
    for (size_t i = 0; i < r->n; i++) {
        char *cpus = bitmap_list(r->v[i].c->cpus), *nodes = bitmap_list(r->v[i].c->nodes);
        series(out, "tunerun_service_info", r, v, i);
        fprintf(out, ",cpus=\"%s\",nodes=\"%s\",memory_policy=\"", cpus, nodes);
        label_value(out, r->v[i].c->mpol ? r->v[i].c->mpol : "");
        fprintf(out, "\",pool=\"%s\"} 1\n", r->v[i].c->pool ? "true" : "false");
        free(cpus);
        free(nodes);
    }
    header(out, "tunerun_service_cpus", "CPUs placed for the service.");
    for (size_t i = 0; i < r->n; i++) {
        series(out, "tunerun_service_cpus", r, v, i);
        fprintf(out, "} %d\n", hwloc_bitmap_weight(r->v[i].c->cpus));
    }
    header(out, "tunerun_service_nodes", "NUMA nodes placed for the service's CPUs.");
    for (size_t i = 0; i < r->n; i++) {
        series(out, "tunerun_service_nodes", r, v, i);
        fprintf(out, "} %d\n", hwloc_bitmap_weight(r->v[i].c->nodes));
    }
    header(out, "tunerun_service_start_time_seconds",
           "When the service's claim was taken, as seconds since the epoch.");
    for (size_t i = 0; i < r->n; i++) {
        series(out, "tunerun_service_start_time_seconds", r, v, i);
        fprintf(out, "} %lld\n", r->v[i].c->time);
    }
    header(out, "tunerun_service_processes", "Processes holding the service's claim.");
    for (size_t i = 0; i < r->n; i++) {
        series(out, "tunerun_service_processes", r, v, i);
        fprintf(out, "} %zu\n", r->v[i].nprocs);
    }
    header(out, "tunerun_service_threads",
           "Threads of the service's processes, by whether their CPU affinity is inside its "
           "placed CPUs or has left them.");
    for (size_t i = 0; i < r->n; i++) {
        series(out, "tunerun_service_threads", r, v, i);
        fprintf(out, ",placement=\"inside\"} %zu\n", r->v[i].threads - r->v[i].threads_outside);
        series(out, "tunerun_service_threads", r, v, i);
        fprintf(out, ",placement=\"outside\"} %zu\n", r->v[i].threads_outside);
    }
}

/*
 * Where the service's memory is: resident anonymous bytes by node, and
 * the share on nodes other than its memory nodes (its CPUs' nodes, for a
 * policy that names none). Shared anonymous memory counts once (ps.c); a
 * service whose memory could not be read (numa_maps of another user's
 * process) has no series, rather than one that reads as all local.
 */
static void memory_metrics(FILE *out, const struct ps_report *r, const struct worked *v)
{
    header(out, "tunerun_service_resident_bytes",
           "Anonymous memory, private and shared, the service's processes have resident on the "
           "NUMA node (numa_maps); a shared mapping counts once.");
    for (size_t i = 0; i < r->n; i++)
        for (unsigned node = 0; v[i].bytes && node < v[i].nnodes; node++) {
            series(out, "tunerun_service_resident_bytes", r, v, i);
            fprintf(out, ",node=\"%u\"} %llu\n", node, v[i].bytes[node]);
        }
    header(out, "tunerun_service_remote_memory_ratio",
           "The share of the service's resident anonymous memory on nodes outside its "
           "placement, 0 to 1.");
    for (size_t i = 0; i < r->n; i++) {
        const struct claim *c = r->v[i].c;
        if (v[i].bytes == NULL)
            continue;
        hwloc_const_bitmap_t home = hwloc_bitmap_iszero(c->mem_nodes) ? c->nodes : c->mem_nodes;
        unsigned long long all = 0, far = 0;
        for (unsigned node = 0; node < v[i].nnodes; node++) {
            all += v[i].bytes[node];
            if (!hwloc_bitmap_isset(home, (int)node))
                far += v[i].bytes[node];
        }
        series(out, "tunerun_service_remote_memory_ratio", r, v, i);
        fprintf(out, "} %.6g\n", all ? (double)far / (double)all : 0.0);
    }
}

static void doctor_metrics(FILE *out, const struct doctor_report *d)
{
    header(out, "tunerun_doctor_findings",
           "Findings of tunerun doctor's audit of this host (no profile), by severity.");
    size_t count[4] = {0};
    for (size_t i = 0; i < d->n; i++)
        if ((int)d->v[i].sev >= 0 && (int)d->v[i].sev < 4)
            count[d->v[i].sev]++;
    for (int s = SEV_OK; s <= SEV_CRIT; s++)
        fprintf(out, "tunerun_doctor_findings{severity=\"%s\"} %zu\n",
                doctor_severity_name((enum severity)s), count[s]);
}

void metrics_write(FILE *out, const struct ps_report *r, const struct doctor_report *d)
{
    header(out, "tunerun_doctor_up",
           "1 where the host's audit ran, so that its findings below are there; 0 where it "
           "could not.");
    fprintf(out, "tunerun_doctor_up %d\n", d != NULL);
    header(out, "tunerun_services", "Services running under tunerun claims on this host.");
    fprintf(out, "tunerun_services %zu\n", r->n);
    struct worked *v = xcalloc(r->n ? r->n : 1, sizeof(*v));
    for (size_t i = 0; i < r->n; i++) {
        v[i].bytes = service_nodes(&r->v[i], &v[i].nnodes);
        for (size_t k = 0; k < r->n; k++) {
            const struct claim *a = r->v[k].c, *b = r->v[i].c;
            if (k != i && strcmp(a->key, b->key) == 0 &&
                (a->time < b->time || (a->time == b->time && k < i)))
                v[i].replica++;
        }
    }
    service_metrics(out, r, v); /* each family's HELP and TYPE even without a series */
    memory_metrics(out, r, v);
    for (size_t i = 0; i < r->n; i++)
        free(v[i].bytes);
    free(v);
    if (d)
        doctor_metrics(out, d);
}
