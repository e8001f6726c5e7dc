/*
 * report.c - rendering only.
 *
 * The JSON writer is a few lines by hand: the output is small and flat,
 * and none of our libraries (hwloc, libnuma, libcap, inih) writes JSON.
 */
#include "report.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

/* A JSON string: escaped, and valid UTF-8 whatever a profile or path held. */
void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        default:
            if (*p < 0x20) {
                fprintf(f, "\\u%04x", *p);
            } else if (*p < 0x80) {
                fputc(*p, f);
            } else {
                size_t n = utf8_valid(p);
                if (n == 0) {
                    fputs("\\ufffd", f); /* not UTF-8: replaced, as JSON requires */
                } else {
                    fwrite(p, 1, n, f);
                    p += n - 1;
                }
            }
        }
    }
    fputc('"', f);
}

void json_field(FILE *f, const char *lead, const char *s)
{
    fputs(lead, f);
    json_string(f, s);
}

/* A set in hwloc's list format; "" for an empty set in JSON. */
void json_list(FILE *f, hwloc_const_bitmap_t set)
{
    char *s = hwloc_bitmap_iszero(set) ? NULL : bitmap_list(set);
    json_string(f, s ? s : "");
    free(s);
}

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

void report_plan_json(FILE *f, const struct profile *p, const struct topo *t, const struct plan *pl)
{
    fprintf(f, "{\n  \"profile\": ");
    json_string(f, p->name);
    fprintf(f, ",\n  \"path\": ");
    json_string(f, p->path);
    fprintf(f, ",\n  \"files\": [");
    for (size_t i = 0; i < p->nfiles; i++) {
        fprintf(f, "%s", i ? ", " : "");
        json_string(f, p->files[i]);
    }
    fprintf(f, "],\n  \"description\": ");
    json_string(f, p->description);
    fprintf(f, ",\n  \"fears\": ");
    json_string(f, p->fears);
    fprintf(f, ",\n  \"topology\": {\"source\": \"%s\", \"description\": ", source_name(t->source));
    json_string(f, t->desc);
    fprintf(f, ", \"cache\": \"%s\"", cache_name(t->cache));
    fprintf(f, ", \"nodes\": %zu, \"cpus\": ", t->nnodes);
    json_list(f, t->cpus);
    fprintf(f, ", \"inherited_affinity\": ");
    json_list(f, t->binding);
    fprintf(f, "},\n  \"placement\": {\"cpus\": ");
    json_list(f, pl->cpus);
    fprintf(f, ", \"ncpus\": %d, \"nodes\": ", hwloc_bitmap_weight(pl->cpus));
    json_list(f, pl->nodes);
    fprintf(f, ", \"cpus_without_node\": ");
    json_list(f, pl->nodeless);
    fprintf(f, ", \"memory_nodes\": ");
    json_list(f, pl->mem_nodes);
    fprintf(f, ", \"memory_policy\": \"%s\"", plan_mpol_name(pl->mpol));
    /* near: the path (null: none), what was found on this machine (null: not looked up) */
    if (p->placement.near)
        json_field(f, ", \"near\": ", p->placement.near);
    else
        fputs(", \"near\": null", f);
    if (pl->near) {
        fprintf(f,
                ", \"near_status\": \"%s\", \"near_nodes\": ", near_status_name(pl->near->status));
        json_list(f, pl->near->nodes);
        fputs(", \"near_disks\": [", f);
        for (size_t k = 0; k < pl->near->ndisks; k++) {
            json_field(f, k ? ", {\"name\": " : "{\"name\": ", pl->near->disks[k].name);
            fputs(", \"nodes\": ", f);
            json_list(f, pl->near->disks[k].nodes);
            fputc('}', f);
        }
        /* at the cap, there may be more disks than listed */
        fprintf(f, "], \"near_disks_capped\": %s", pl->near->ndisks >= DISK_MAX ? "true" : "false");
        json_field(f, ", \"near_found\": ", pl->near->what);
    } else {
        fputs(", \"near_status\": null, \"near_nodes\": null, \"near_disks\": null, "
              "\"near_disks_capped\": null, \"near_found\": null",
              f);
    }
    fprintf(f, "},\n");
    if (pl->cgroup) {
        const struct cgroup *cg = pl->cgroup;
        fprintf(f, "  \"cgroup\": {\"mode\": \"%s\", \"memory\": ", cgroup_mode_name(cg->mode));
        json_string(f, cg->path);
        fprintf(f, ", \"v2\": %s, \"writable\": %s, \"why_not\": ", cg->v2 ? "true" : "false",
                cgroup_writable(cg) ? "true" : "false");
        json_string(f, cgroup_writable(cg) ? NULL : cg->why);
        fprintf(f, ", \"unit\": ");
        json_string(f, cg->unit[0] ? cg->unit : NULL);
        fprintf(f, ", \"container\": %s, \"memory_limit\": %llu},\n",
                cg->container ? "true" : "false", (unsigned long long)cg->mem_limit);
    }
    if (pl->privs) {
        const struct privs *pv = pl->privs;
        /* null: unchanged */
        fprintf(f, "  \"privileges\": {\"user\": ");
        if (pv->change_id) {
            json_string(f, pv->user_name);
            fprintf(f, ", \"group\": ");
            json_string(f, pv->group_name);
            fprintf(f, ", \"uid\": %lu, \"gid\": %lu, \"groups\": [", (unsigned long)pv->uid,
                    (unsigned long)pv->gid);
        } else {
            fprintf(f, "null, \"group\": null, \"uid\": null, \"gid\": null, \"groups\": null");
        }
        for (size_t i = 0; pv->change_id && i < pv->ngroups; i++)
            fprintf(f, "%s%lu", i ? ", " : "", (unsigned long)pv->groups[i]);
        fprintf(f, "%s, \"capabilities\": %s", pv->change_id ? "]" : "", pv->caps ? "[" : "null");
        for (int c = 0, first = 1; pv->caps && c < 64; c++) {
            if (!(pv->keep & (UINT64_C(1) << c)))
                continue;
            char *name = privs_cap_list(UINT64_C(1) << c);
            fprintf(f, "%s", first ? "" : ", ");
            json_string(f, name);
            free(name);
            first = 0;
        }
        fprintf(f, "%s, \"no_new_privs\": %s},\n", pv->caps ? "]" : "",
                pv->no_new_privs ? "true" : "false");
    }
    fprintf(f, "  \"degraded\": %s,\n  \"notes\": [", pl->degraded ? "true" : "false");
    for (size_t i = 0; i < pl->nnotes; i++) {
        fprintf(f, "%s\n    {\"level\": \"%s\", \"text\": ", i ? "," : "",
                pl->notes[i].level == NOTE_WARN ? "warning" : "info");
        json_string(f, pl->notes[i].text);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"steps\": [");
    for (size_t i = 0; i < pl->nsteps; i++) {
        char name[64], value[512];
        plan_step_name(&pl->steps[i], name, sizeof(name));
        plan_step_value(pl, &pl->steps[i], value, sizeof(value));
        fprintf(f, "%s\n    {\"step\": ", i ? "," : "");
        json_string(f, name);
        fprintf(f, ", \"value\": ");
        json_string(f, value);
        fprintf(f, ", \"why\": ");
        json_string(f, pl->steps[i].why);
        fprintf(f, ", \"required\": %s}", pl->steps[i].required ? "true" : "false");
    }
    fprintf(f, "\n  ]\n}\n");
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
        char kind[64], memory[32];
        bool none = hwloc_bitmap_iszero(n->cpus); /* a cpuset may allow none of its CPUs */
        snprintf(kind, sizeof(kind), "%s%s%s%s", n->subtype,
                 *n->subtype && (none || !n->has_memory) ? ", " : "",
                 !none        ? ""
                 : n->cpuless ? "CPU-less"
                              : "no allowed CPU",
                 n->has_memory ? "" : "memoryless");
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
    fprintf(f, "{\n  \"source\": \"%s\",\n  \"description\": ", source_name(t->source));
    json_string(f, t->desc);
    fprintf(f, ",\n  \"cache\": \"%s\",\n  \"cache_note\": ", cache_name(t->cache));
    json_string(f, t->cache_note);
    fprintf(f, ",\n  \"memory_note\": "); /* what the nodes' meminfo left out, or null */
    if (t->memory_note)
        json_string(f, t->memory_note);
    else
        fputs("null", f);
    fprintf(f, ",\n  \"guess\": "); /* why hwloc could only guess the machine, or null */
    if (t->guess)
        json_string(f, t->guess->why);
    else
        fputs("null", f);
    fprintf(f, ",\n  \"cpus\": ");
    json_list(f, t->cpus);
    /* as in the text: an export's missing CPUs may be offline or outside its cpuset */
    fprintf(f, ",\n  \"%s\": ", t->source == TOPO_HOST ? "offline" : "absent");
    json_list(f, t->offline);
    if (t->source == TOPO_HOST) { /* an export's is no process's */
        fprintf(f, ",\n  \"inherited_affinity\": ");
        json_list(f, t->binding);
    }
    hwloc_bitmap_t nodeless = hwloc_bitmap_alloc();
    topo_nodeless(t, t->cpus, nodeless);
    fprintf(f, ",\n  \"cpus_without_node\": ");
    json_list(f, nodeless);
    hwloc_bitmap_free(nodeless);
    fprintf(f, ",\n  \"cores\": %zu,\n  \"kinds\": [", t->ncores);
    for (size_t i = 0; i < t->nkinds; i++) {
        fprintf(f, "%s{\"cpus\": ", i ? ", " : "");
        json_list(f, t->kinds[i].cpus);
        fprintf(f, ", \"label\": ");
        json_string(f, t->kinds[i].label);
        fputc('}', f);
    }
    fprintf(f, "],\n  \"nodes\": [");
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct topo_node *n = &t->nodes[i];
        fprintf(f, "%s\n    {\"os_index\": %u, \"cpus\": ", i ? "," : "", n->os_index);
        json_list(f, n->cpus);
        fprintf(f, ", \"memory\": %llu, \"free\": %llu, \"has_memory\": %s, \"subtype\": ",
                (unsigned long long)n->mem_total, (unsigned long long)n->mem_free,
                n->has_memory ? "true" : "false");
        json_string(f, n->subtype);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"distances\": ");
    if (!t->distance) {
        fprintf(f, "null");
    } else {
        fputc('[', f);
        for (size_t a = 0; a < t->nnodes; a++) {
            fprintf(f, "%s[", a ? ", " : "");
            for (size_t b = 0; b < t->nnodes; b++)
                fprintf(f, "%s%u", b ? ", " : "", t->distance[a * t->nnodes + b]);
            fputc(']', f);
        }
        fputc(']', f);
    }
    fprintf(f, "\n}\n");
}
