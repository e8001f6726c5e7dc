/*
 * report.c - rendering only: what a verb writes to stdout, as text or JSON
 * (see report.h). Names that come from outside (paths, profile and
 * process names, a --root tree's words) are escaped in text, so that
 * they stay one harmless line, and made valid UTF-8 in JSON.
 */
#include "report.h"
#include "nic.h"
#include "json.h"
#include "log.h"
#include "util.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

static const char *source_name(enum topo_source s)
{
    static const char *const names[] = {"host", "xml", "synthetic"};
    return names[s];
}

static const char *cache_name(enum topo_cache c)
{
    static const char *const names[] = {"off", "hit", "written", "failed"};
    return names[c];
}

/* A path as a line of text shows it: what str_escaped() makes of it, whole. */
static char *shown_path(const char *path)
{
    size_t len = strlen(path);
    char *buf = xcalloc(ESCAPED_SIZE(len), 1);
    str_escaped(buf, ESCAPED_SIZE(len), path, len);
    return buf;
}

static void topo_summary(FILE *f, const struct topo *t)
{
    char *cpus = bitmap_list(t->cpus);
    size_t homes = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        homes += !hwloc_bitmap_iszero(t->nodes[i].cpus);
    int n = hwloc_bitmap_weight(t->cpus);
    char *desc = shown_path(t->desc); /* --topology FILE */
    fprintf(f, "%s: %zu NUMA node%s (%zu with CPUs), %d CPU%s allowed (%s)", desc, t->nnodes,
            t->nnodes == 1 ? "" : "s", homes, n, n == 1 ? "" : "s", cpus ? cpus : "");
    free(desc);
    free(cpus);
}

/*
 * The kind column of a node: its kind, its tier and speed against the
 * memory next to the CPUs (with HMAT's latency and bandwidth where known),
 * and what it lacks: "DRAM, tier 4", "slower tier, tier 90, 40 ns,
 * 2048 MiB/s, CPU-less".
 */
static void node_kind(const struct topo_node *n, bool none, char *buf, size_t size)
{
    size_t len = 0;
    *buf = '\0';
#define PART(...)                                                                                  \
    do {                                                                                           \
        if (len + 2 < size && len)                                                                 \
            len += (size_t)snprintf(buf + len, size - len, ", ");                                  \
        if (len < size)                                                                            \
            len += (size_t)snprintf(buf + len, size - len, __VA_ARGS__);                           \
    } while (0)
    if (n->subtype[0])
        PART("%s", n->subtype);
    if (n->has_memory && n->speed != SPEED_FAST)
        PART("%s", n->speed == SPEED_SLOW ? "slower tier" : "more bandwidth");
    if (n->tier_known)
        PART("%s %d", n->tier_hwloc ? "MemoryTier" : "tier", n->tier);
    if (n->latency_ns)
        PART("%u ns", n->latency_ns);
    if (n->bandwidth_mibs)
        PART("%u MiB/s", n->bandwidth_mibs);
    if (none && n->shares)
        PART("node %u's CPUs", n->shares_cpus_of);
    else if (none)
        PART("%s", n->cpuless ? "CPU-less" : "no allowed CPU");
    if (!n->has_memory)
        PART("memoryless");
#undef PART
}

static const char *speed_name(enum topo_speed s)
{
    return s == SPEED_SLOW ? "slow" : s == SPEED_BANDWIDTH ? "bandwidth" : "fast";
}

/* A node's tier and speed, as the JSON of topo and plan say them. */
static void tier_json(struct json *j, const struct topo_node *n)
{
    if (n->tier_known)
        json_int(j, "tier", n->tier);
    else
        json_null(j, "tier");
    json_str(j, "tier_source", !n->tier_known ? NULL : n->tier_hwloc ? "hwloc" : "kernel");
    json_str(j, "speed", speed_name(n->speed));
    json_str(j, "speed_why", n->speed_why[0] ? n->speed_why : NULL);
    if (n->latency_ns)
        json_uint(j, "latency_ns", n->latency_ns);
    else
        json_null(j, "latency_ns");
    if (n->bandwidth_mibs)
        json_uint(j, "bandwidth_mibs", n->bandwidth_mibs);
    else
        json_null(j, "bandwidth_mibs");
}

void report_plan_text(FILE *f, const struct profile *p, const struct topo *t, const struct plan *pl)
{
    char *cpus = bitmap_list(pl->cpus), *nodes = bitmap_list(pl->nodes),
         *mem = bitmap_list(pl->mem_nodes);
    char *path = shown_path(p->path);
    fprintf(f, "profile    %s (%s)\n", p->name, path);
    free(path);
    if (p->description)
        fprintf(f, "           %s\n", p->description);
    for (size_t i = 0; i + 1 < p->nfiles; i++) {
        char *file = shown_path(p->files[i + 1]);
        fprintf(f, "includes   %s\n", file);
        free(file);
    }
    if (p->fears)
        fprintf(f, "fears      %s\n", p->fears);
    fprintf(f, "topology   ");
    topo_summary(f, t);
    int nnodes = hwloc_bitmap_weight(pl->nodes);
    char *away = hwloc_bitmap_iszero(pl->nodeless) ? NULL : bitmap_list(pl->nodeless);
    char where[256];
    if (nnodes == 0)
        snprintf(where, sizeof(where), "no allowed node");
    else if (away)
        snprintf(where, sizeof(where), "node%s %s (%s on no allowed node)", nnodes > 1 ? "s" : "",
                 nodes ? nodes : "", away);
    else
        snprintf(where, sizeof(where), "node%s %s", nnodes > 1 ? "s" : "", nodes ? nodes : "");
    fprintf(f, "\nplacement  cpus %s (%d) on %s; memory %s%s%s\n", cpus ? cpus : "",
            hwloc_bitmap_weight(pl->cpus), where, plan_mpol_name(pl->mpol),
            pl->mpol == PLAN_MPOL_LOCAL ? "" : " ", pl->mpol == PLAN_MPOL_LOCAL ? "" : mem);
    free(away);
    free(cpus);
    free(nodes);
    free(mem);
    /* where tiers are known, what each memory node is */
    for (size_t i = 0; t->tiers_known && i < t->nnodes; i++) {
        char kind[256];
        if (!hwloc_bitmap_isset(pl->mem_nodes, t->nodes[i].os_index))
            continue;
        node_kind(&t->nodes[i], false, kind, sizeof(kind));
        fprintf(f, "memory     node %u: %s%s%s\n", t->nodes[i].os_index,
                t->nodes[i].speed == SPEED_FAST ? "fastest tier" : "",
                t->nodes[i].speed == SPEED_FAST && *kind ? ", " : "", kind);
    }
    const struct cgroup *cg = pl->cgroup;
    if (cg)
        fprintf(f, "cgroup     %s; memory %s%s%s\n", cgroup_mode_name(cg->mode),
                cg->path ? cg->path : "not found",
                cgroup_writable(cg) ? ", tunerun's to write" : ": ",
                cgroup_writable(cg) ? "" : cg->why);
    if (pl->privs) {
        char *who = privs_describe(pl->privs);
        fprintf(f, "privileges %s; dropped after everything that needs root\n", who);
        free(who);
    }

    fprintf(f, "\ndecisions\n");
    for (size_t i = 0; i < pl->nnotes; i++)
        fprintf(f, "  %s %s\n", pl->notes[i].level == NOTE_WARN ? "!" : "-", pl->notes[i].text);

    fprintf(f, "\nsteps\n");
    for (size_t i = 0; i < pl->nsteps; i++) {
        char name[64], value[512];
        plan_step_name(&pl->steps[i], name, sizeof(name));
        plan_step_value(pl, &pl->steps[i], value, sizeof(value));
        fprintf(f, "  %-22s %-24s %s\n", name, value, pl->steps[i].why);
    }
    if (pl->degraded)
        fprintf(f, "\nThis plan does not fully honour the profile (see '!' above); "
                   "--strict would refuse it.\n");
}

/* `near` as this machine's lookup found it: null members where it was not looked up. */
static void near_json(struct json *j, const struct profile *p, const struct plan *pl)
{
    json_str(j, "near", p->placement.near);
    if (pl->near == NULL) {
        static const char *const unknown[] = {"near_status",       "near_nodes", "near_disks",
                                              "near_disks_capped", "near_nics",  "near_found"};
        for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
            json_null(j, unknown[i]);
        return;
    }
    json_str(j, "near_status", near_status_name(pl->near->status));
    json_set(j, "near_nodes", pl->near->nodes);
    json_array(j, "near_disks");
    for (size_t k = 0; k < pl->near->ndisks; k++) {
        json_object(j, NULL);
        json_str(j, "name", pl->near->disks[k].name);
        json_set(j, "nodes", pl->near->disks[k].nodes);
        json_end(j);
    }
    json_end(j);
    json_bool(j, "near_disks_capped", pl->near->ndisks >= DISK_MAX); /* there may be more */
    json_array(j, "near_nics"); /* a NIC's near: the physical devices, each with its node */
    for (size_t k = 0; k < pl->near->nnics; k++) {
        const struct nic *n = &pl->near->nics[k];
        json_object(j, NULL);
        json_str(j, "name", n->name);
        json_str(j, "via", n->via[0] ? n->via : NULL);
        json_str(j, "driver", n->driver[0] ? n->driver : NULL);
        if (n->node >= 0)
            json_uint(j, "node", (unsigned)n->node);
        else
            json_null(j, "node");
        json_end(j);
    }
    json_end(j);
    json_str(j, "near_found", pl->near->what);
}

static void privileges_json(struct json *j, const struct privs *pv)
{
    json_object(j, "privileges"); /* user null: unchanged */
    if (pv->change_id) {
        json_str(j, "user", pv->user_name);
        json_str(j, "group", pv->group_name);
        json_uint(j, "uid", pv->uid);
        json_uint(j, "gid", pv->gid);
        json_array(j, "groups");
        for (size_t i = 0; i < pv->ngroups; i++)
            json_uint(j, NULL, pv->groups[i]);
        json_end(j);
    } else {
        static const char *const none[] = {"user", "group", "uid", "gid", "groups"};
        for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
            json_null(j, none[i]);
    }
    if (pv->caps) {
        json_array(j, "capabilities");
        for (int c = 0; c < 64; c++) {
            if (!(pv->keep & (UINT64_C(1) << c)))
                continue;
            char *name = privs_cap_list(UINT64_C(1) << c);
            json_str(j, NULL, name);
            free(name);
        }
        json_end(j);
    } else {
        json_null(j, "capabilities");
    }
    json_bool(j, "no_new_privs", pv->no_new_privs);
    json_end(j);
}

/*
 * [args]: the commands they are for, and each argument, added or not
 * (`passed`: the command's own words for it); null members without [args].
 */
static void args_json(struct json *j, const struct profile *p, const struct plan *pl)
{
    json_object(j, "args");
    if (p->args.n == 0) {
        json_null(j, "for");
        json_null(j, "command_is_other");
        json_null(j, "arguments");
        json_end(j);
        return;
    }
    json_array(j, "for");
    for (size_t i = 0; i < p->args.ncommands; i++)
        json_str(j, NULL, p->args.commands[i]);
    json_end(j);
    json_str(j, "command_is_other", pl->args_for_other);
    json_array(j, "arguments");
    for (size_t i = 0; i < pl->nargs; i++) {
        json_object(j, NULL);
        json_str(j, "option", pl->args[i].option);
        json_str(j, "value", pl->args[i].value);
        json_bool(j, "added", pl->args[i].added);
        json_str(j, "passed", pl->args[i].passed);
        json_end(j);
    }
    json_end(j);
    json_end(j);
}

void report_plan_json(FILE *f, const struct profile *p, const struct topo *t, const struct plan *pl)
{
    struct json j;
    json_start(&j, f);
    json_object(&j, NULL);
    json_str(&j, "profile", p->name);
    json_str(&j, "path", p->path);
    json_array(&j, "files");
    for (size_t i = 0; i < p->nfiles; i++)
        json_str(&j, NULL, p->files[i]);
    json_end(&j);
    json_str(&j, "description", p->description);
    json_str(&j, "fears", p->fears);
    json_object(&j, "topology");
    json_str(&j, "source", source_name(t->source));
    json_str(&j, "description", t->desc);
    json_str(&j, "cache", cache_name(t->cache));
    json_uint(&j, "nodes", t->nnodes);
    json_set(&j, "cpus", t->cpus);
    json_set(&j, "inherited_affinity", t->binding);
    json_end(&j);
    json_object(&j, "placement");
    json_set(&j, "cpus", pl->cpus);
    json_int(&j, "ncpus", hwloc_bitmap_weight(pl->cpus));
    json_set(&j, "nodes", pl->nodes);
    json_set(&j, "cpus_without_node", pl->nodeless);
    json_set(&j, "memory_nodes", pl->mem_nodes);
    json_str(&j, "memory_policy", plan_mpol_name(pl->mpol));
    json_str(&j, "tiers",
             p->placement.tiers == TIERS_ALL         ? "all"
             : p->placement.tiers == TIERS_BANDWIDTH ? "bandwidth"
                                                     : "fastest");
    /* each memory node's tier and speed, as topo --json gives them */
    json_array(&j, "memory_tiers");
    for (size_t i = 0; i < t->nnodes; i++) {
        if (!hwloc_bitmap_isset(pl->mem_nodes, t->nodes[i].os_index))
            continue;
        json_object(&j, NULL);
        json_uint(&j, "node", t->nodes[i].os_index);
        json_str(&j, "subtype", t->nodes[i].subtype);
        tier_json(&j, &t->nodes[i]);
        json_end(&j);
    }
    json_end(&j);
    near_json(&j, p, pl);
    json_end(&j);
    if (pl->cgroup) {
        const struct cgroup *cg = pl->cgroup;
        json_object(&j, "cgroup");
        json_str(&j, "mode", cgroup_mode_name(cg->mode));
        json_str(&j, "memory", cg->path);
        json_bool(&j, "v2", cg->v2);
        json_bool(&j, "writable", cgroup_writable(cg));
        json_str(&j, "why_not", cgroup_writable(cg) ? NULL : cg->why);
        json_str(&j, "unit", cg->unit[0] ? cg->unit : NULL);
        json_bool(&j, "container", cg->container);
        json_uint(&j, "memory_limit", cg->mem_limit);
        json_end(&j);
    }
    if (pl->privs)
        privileges_json(&j, pl->privs);
    args_json(&j, p, pl);
    json_bool(&j, "degraded", pl->degraded);
    json_array(&j, "notes");
    for (size_t i = 0; i < pl->nnotes; i++) {
        json_object(&j, NULL);
        json_str(&j, "level", pl->notes[i].level == NOTE_WARN ? "warning" : "info");
        json_str(&j, "text", pl->notes[i].text);
        json_end(&j);
    }
    json_end(&j);
    json_array(&j, "steps");
    for (size_t i = 0; i < pl->nsteps; i++) {
        char name[64], value[512];
        plan_step_name(&pl->steps[i], name, sizeof(name));
        plan_step_value(pl, &pl->steps[i], value, sizeof(value));
        json_object(&j, NULL);
        json_str(&j, "step", name);
        json_str(&j, "value", value);
        json_str(&j, "why", pl->steps[i].why);
        json_bool(&j, "required", pl->steps[i].required);
        json_end(&j);
    }
    json_finish(&j);
}

void report_topo_text(FILE *f, const struct topo *t)
{
    fprintf(f, "topology   ");
    topo_summary(f, t);
    char *aff = bitmap_list(t->binding), *off = bitmap_list(t->offline);
    if (t->guess)
        fprintf(f, "\nguess      %s (fix: %s)", t->guess->why, t->guess->fix);
    if (t->source == TOPO_HOST) /* an export's is no process's */
        fprintf(f, "\naffinity   %s (inherited)\n", aff ? aff : "");
    else
        fputc('\n', f);
    /* an export leaves out the CPUs outside the cpuset it was made in as it does offline ones */
    if (!hwloc_bitmap_iszero(t->offline))
        fprintf(f,
                t->source == TOPO_HOST
                    ? "offline    %s\n"
                    : "absent     %s: offline, or outside the cpuset the export was made in\n",
                off ? off : "");
    free(aff);
    free(off);
    fprintf(f, "cores      %zu\n", t->ncores);
    hwloc_bitmap_t nodeless = hwloc_bitmap_alloc();
    topo_nodeless(t, t->cpus, nodeless);
    if (!hwloc_bitmap_iszero(nodeless)) {
        char *c = bitmap_list(nodeless);
        fprintf(
            f,
            "no node    %s: allowed CPUs whose NUMA node is not among the allowed memory nodes\n",
            c ? c : "");
        free(c);
    }
    hwloc_bitmap_free(nodeless);
    for (size_t i = 0; i < t->nkinds; i++) {
        char *c = bitmap_list(t->kinds[i].cpus);
        fprintf(f, "%s%s %s%s", i ? "; " : "kinds      fastest first: ", t->kinds[i].label,
                c ? c : "", i + 1 == t->nkinds ? "\n" : "");
        free(c);
    }
    if (t->source == TOPO_HOST)
        fprintf(f, "cache      %s%s%s\n", cache_name(t->cache), t->cache_note ? ": " : "",
                t->cache_note ? t->cache_note : "");
    if (t->memory_note)
        fprintf(f, "memory     %s\n", t->memory_note);
    fputc('\n', f);
    int width = 16; /* the cpus column: as wide as its longest list */
    for (size_t i = 0; i < t->nnodes; i++) {
        char *c = bitmap_list(t->nodes[i].cpus);
        if (c && (int)strlen(c) > width)
            width = (int)strlen(c);
        free(c);
    }
    fprintf(f, "  node  %-*s %13s %12s  %s\n", width, "cpus", "memory", "free", "kind");
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct topo_node *n = &t->nodes[i];
        char *c = bitmap_list(n->cpus);
        char kind[256], memory[32];
        bool none = hwloc_bitmap_iszero(n->cpus); /* a cpuset may allow none of its CPUs */
        node_kind(n, none, kind, sizeof(kind));
        if (t->memory_known)
            snprintf(memory, sizeof(memory), "%9.1f GiB %8.1f GiB", n->mem_total / GIB,
                     n->mem_free / GIB);
        else /* an export without memory sizes */
            snprintf(memory, sizeof(memory), "%13s %12s", "unknown", "unknown");
        fprintf(f, "  %4u  %-*s %s%s%s\n", n->os_index, width, none ? "-" : (c ? c : ""), memory,
                *kind ? "  " : "", kind);
        free(c);
    }
    if (t->distance) {
        fprintf(f, "\ndistances\n      ");
        for (size_t b = 0; b < t->nnodes; b++)
            fprintf(f, " %4u", t->nodes[b].os_index);
        fputc('\n', f);
        for (size_t a = 0; a < t->nnodes; a++) {
            fprintf(f, "  %4u", t->nodes[a].os_index);
            for (size_t b = 0; b < t->nnodes; b++)
                fprintf(f, " %4u", t->distance[a * t->nnodes + b]);
            fputc('\n', f);
        }
    }
}

void report_topo_json(FILE *f, const struct topo *t)
{
    struct json j;
    json_start(&j, f);
    json_object(&j, NULL);
    json_str(&j, "source", source_name(t->source));
    json_str(&j, "description", t->desc);
    json_str(&j, "cache", cache_name(t->cache));
    json_str(&j, "cache_note", t->cache_note ? t->cache_note : "");
    json_str(&j, "memory_note", t->memory_note); /* what the nodes' meminfo left out, or null */
    json_str(&j, "guess", t->guess ? t->guess->why : NULL); /* why hwloc could only guess */
    json_set(&j, "cpus", t->cpus);
    /* as in the text: an export's missing CPUs may be offline or outside its cpuset */
    json_set(&j, t->source == TOPO_HOST ? "offline" : "absent", t->offline);
    if (t->source == TOPO_HOST) /* an export's is no process's */
        json_set(&j, "inherited_affinity", t->binding);
    hwloc_bitmap_t nodeless = hwloc_bitmap_alloc();
    topo_nodeless(t, t->cpus, nodeless);
    json_set(&j, "cpus_without_node", nodeless);
    hwloc_bitmap_free(nodeless);
    json_uint(&j, "cores", t->ncores);
    json_array(&j, "kinds");
    for (size_t i = 0; i < t->nkinds; i++) {
        json_object(&j, NULL);
        json_set(&j, "cpus", t->kinds[i].cpus);
        json_str(&j, "label", t->kinds[i].label);
        json_end(&j);
    }
    json_end(&j);
    json_array(&j, "nodes");
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct topo_node *n = &t->nodes[i];
        json_object(&j, NULL);
        json_uint(&j, "os_index", n->os_index);
        json_set(&j, "cpus", n->cpus);
        json_uint(&j, "memory", n->mem_total);
        json_uint(&j, "free", n->mem_free);
        json_bool(&j, "has_memory", n->has_memory);
        json_str(&j, "subtype", n->subtype);
        tier_json(&j, n);
        if (n->shares)
            json_uint(&j, "shares_cpus_of", n->shares_cpus_of);
        else
            json_null(&j, "shares_cpus_of");
        json_end(&j);
    }
    json_end(&j);
    if (t->distance) {
        json_array(&j, "distances");
        for (size_t a = 0; a < t->nnodes; a++) {
            json_array(&j, NULL);
            for (size_t b = 0; b < t->nnodes; b++)
                json_uint(&j, NULL, t->distance[a * t->nnodes + b]);
            json_end(&j);
        }
        json_end(&j);
    } else {
        json_null(&j, "distances");
    }
    json_finish(&j);
}

/* ---- tunerun ps ------------------------------------------------------------- */

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

/* A process's lines: its threads, and each that left the claim's CPUs. */
static void ps_proc_text(FILE *f, const struct ps_proc *pr)
{
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

static void ps_text(FILE *f, const struct ps_report *r)
{
    if (r->n == 0) {
        fprintf(f, "no service is running under tunerun here (%s)%s\n",
                r->state_dir ? r->state_dir : r->none,
                r->not_root ? "; root's services are listed by root" : "");
        return;
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct ps_service *ps = &r->v[i];
        const struct claim *c = ps->c;
        char *cpus = bitmap_list(c->cpus), *nodes = bitmap_list(c->nodes),
             *mem = bitmap_list(c->mem_nodes), since[32];
        char name[ESCAPED_SIZE(64)], mpol[ESCAPED_SIZE(32)];
        ago(since, sizeof(since), c->time);
        /* the table's words, as the messages show names: one line whatever they hold */
        fprintf(f, "%s: cpus %s, nodes %s, memory %s %s%s%s, up %s, %s\n",
                str_escaped(name, sizeof(name), c->profile, 64), cpus, nodes,
                str_escaped(mpol, sizeof(mpol), c->mpol && *c->mpol ? c->mpol : "?", 32), mem,
                c->exclusive ? ", exclusive" : "", c->pool ? ", shared pool" : "", since,
                ps->nprocs == 0 ? "processes not visible here"
                : ps->inside    ? "inside"
                                : "ESCAPED");
        free(cpus);
        free(nodes);
        free(mem);
        if (ps->nprocs == 0)
            fprintf(f, "  held by processes in another pid namespace (claim %s)\n",
                    str_escaped(name, sizeof(name), c->file, 64));
        for (size_t k = 0; k < ps->nprocs; k++)
            ps_proc_text(f, &ps->procs[k]);
    }
}

static void ps_json(FILE *f, const struct ps_report *r)
{
    struct json j;
    json_start(&j, f);
    json_object(&j, NULL);
    json_str(&j, "state_dir", r->state_dir);
    json_array(&j, "claims");
    for (size_t i = 0; i < r->n; i++) {
        const struct ps_service *ps = &r->v[i];
        const struct claim *c = ps->c;
        json_object(&j, NULL);
        json_str(&j, "profile", c->profile);
        json_str(&j, "key", c->key);
        json_str(&j, "file", c->file);
        json_set(&j, "cpus", c->cpus);
        json_set(&j, "nodes", c->nodes);
        json_set(&j, "mem_nodes", c->mem_nodes);
        json_str(&j, "mpol", c->mpol ? c->mpol : "");
        json_bool(&j, "exclusive", c->exclusive);
        json_bool(&j, "pool", c->pool);
        json_array(&j, "avoid");
        for (size_t a = 0; a < c->navoid; a++)
            json_str(&j, NULL, c->avoid[a]);
        json_end(&j);
        json_int(&j, "since", c->time);
        json_int(&j, "pid", c->pid);
        json_str(&j, "alive_by", ps->by_lock ? "lock" : "pid");
        json_bool(&j, "visible", ps->nprocs > 0);
        json_bool(&j, "inside", ps->inside);
        json_array(&j, "processes");
        for (size_t k = 0; k < ps->nprocs; k++) {
            const struct ps_proc *pr = &ps->procs[k];
            json_object(&j, NULL);
            json_int(&j, "pid", pr->pid);
            json_str(&j, "comm", pr->comm);
            json_uint(&j, "threads", pr->nthreads);
            json_array(&j, "escaped");
            for (size_t t = 0; t < pr->nescaped; t++) {
                json_object(&j, NULL);
                json_int(&j, "tid", pr->escaped[t].tid);
                json_str(&j, "cpus", pr->escaped[t].cpus);
                json_end(&j);
            }
            json_end(&j);
            if (pr->pages_elsewhere < 0)
                json_null(&j, "pages_elsewhere");
            else
                json_int(&j, "pages_elsewhere", pr->pages_elsewhere);
            json_end(&j);
        }
        json_end(&j);
        json_end(&j);
    }
    json_finish(&j);
}

void report_ps(FILE *f, const struct ps_report *r, bool json)
{
    if (json)
        ps_json(f, r);
    else
        ps_text(f, r);
}

/* ---- tunerun doctor --------------------------------------------------------- */

/*
 * One line of the audit: what a --root tree, a cgroup path or a process
 * put into it is shown as text, its control characters escaped, never
 * sent to the terminal as they are.
 */
static void put_line(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_line(FILE *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *raw = xvasprintf(fmt, ap);
    va_end(ap);
    size_t n = ESCAPED_SIZE(strlen(raw));
    char *shown = xcalloc(n, 1);
    fprintf(out, "%s\n", str_unharmful(shown, n, raw));
    free(shown);
    free(raw);
}

static void doctor_text(FILE *out, const struct doctor_report *r)
{
    put_line(out, "tunerun doctor%s%s: root %s, data %s%s", r->profile ? " " : "",
             r->profile ? r->profile : "", r->root, r->data_dir ? r->data_dir : "/",
             r->data_dir == NULL ? " (none named)"
             : r->data_from_near ? " (the profile's near)"
                                 : "");
    if (r->fears) /* what the findings below are read against */
        put_line(out, "fears: %s", r->fears);
    for (size_t g = 0; g < DOCTOR_NGROUPS; g++) {
        bool any = false;
        for (size_t i = 0; i < r->n; i++) {
            const struct doctor_finding *f = &r->v[i];
            if (strcmp(f->group, doctor_groups[g][0]) != 0)
                continue;
            if (!any)
                fprintf(out, "\n%s\n", doctor_groups[g][1]);
            any = true;
            put_line(out, "  %-4s  %-22s %s", doctor_severity_name(f->sev), f->id, f->observed);
            if (f->why)
                put_line(out, "        %-22s why: %s", "", f->why);
            if (f->fix)
                put_line(out, "        %-22s fix: %s", "", f->fix);
            if (f->persist)
                put_line(out, "        %-22s for good: %s", "", f->persist);
        }
    }
    fprintf(out, "\nworst: %s\n", doctor_severity_name(r->worst));
}

static void doctor_json(FILE *out, const struct doctor_report *r)
{
    struct json j;
    json_start(&j, out);
    json_object(&j, NULL);
    json_str(&j, "profile", r->profile);
    json_str(&j, "root", r->root);
    json_str(&j, "data_dir", r->data_dir);
    json_bool(&j, "data_dir_from_near", r->data_from_near);
    json_str(&j, "fears", r->fears);
    json_str(&j, "worst", doctor_severity_name(r->worst));
    json_array(&j, "findings");
    for (size_t i = 0; i < r->n; i++) {
        const struct doctor_finding *f = &r->v[i];
        json_object(&j, NULL);
        json_str(&j, "id", f->id);
        json_str(&j, "group", f->group);
        json_str(&j, "severity", doctor_severity_name(f->sev));
        json_str(&j, "observed", f->observed);
        json_str(&j, "why", f->why);
        json_object(&j, "fix");
        json_str(&j, "runtime", f->fix);
        json_str(&j, "persistent", f->persist);
        json_end(&j);
        json_end(&j);
    }
    json_finish(&j);
}

void report_doctor(FILE *f, const struct doctor_report *r, bool json)
{
    if (json)
        doctor_json(f, r);
    else
        doctor_text(f, r);
}

/* ---- tunerun profiles, and the drop-in of tunerun systemd -------------------- */

void report_profiles(FILE *f, const struct profile_listing *l)
{
    if (l->unsearched) /* what is listed may not be all there is */
        log_notice("%s", l->unsearched);
    if (l->n > 0) /* a header over nothing would read as an empty success */
        fprintf(f, "%-12s %-20s %s\n", "NAME", "SOURCE", "PATH");
    for (size_t i = 0; i < l->n; i++) {
        const struct profile_entry *e = &l->v[i];
        /* a name is a file's, which a build tree's profiles/ lets its owner choose */
        char shown[ESCAPED_SIZE(255)], file[ESCAPED_SIZE(255)];
        fprintf(f, "%-12s %-20s %s/%s%s\n", str_escaped(shown, sizeof(shown), e->name, 255),
                e->source, e->dir, str_escaped(file, sizeof(file), e->file, 255),
                e->shadowed ? "  (shadowed)" : "");
    }
}

void report_keys(FILE *f)
{
    char key[64];
    for (size_t i = 0; profile_key_name(i, key, sizeof(key)); i++)
        fprintf(f, "%s\n", key);
}

void report_dropin(FILE *f, const char *text)
{
    fputs(text, f);
}
