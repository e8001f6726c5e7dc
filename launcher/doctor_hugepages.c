/*
 * doctor_hugepages.c - whether vm.nr_hugepages holds the shared memory a
 * service maps from hugetlbfs, for a profile whose [host] hugepages says
 * whose: PostgreSQL's.
 *
 * PostgreSQL maps its main shared memory (shared_buffers, and a little
 * more) from huge pages with huge_pages = try, its default, and only when
 * all of it fits: with too few it falls back to 4 KiB pages without a word
 * beyond its log ("mmap ... with MAP_HUGETLB failed, huge pages
 * disabled"), and with huge_pages = on it does not start. The count it
 * needs is shared_memory_size_in_huge_pages (`postgres -C`, with the
 * server stopped); the audit reads the cluster's configuration instead,
 * as the server does, and counts shared_buffers, the WAL buffers and a
 * margin for the rest, so that its fix is never short. No library reads
 * postgresql.conf, hence by hand: lines of NAME = VALUE, the last one
 * winning, postgresql.conf and its include_dir, then postgresql.auto.conf
 * (ALTER SYSTEM's), which wins over both.
 */
#include "doctor_internal.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIB           (1024ULL * 1024ULL)
#define CONF_MAX      (1 << 20)  /* a postgresql.conf is some 30 KiB */
#define SHARED_MARGIN (32 * MIB) /* the rest of the main shared memory, over its defaults */
#define BLOCK         8192ULL    /* BLCKSZ: a size without a unit counts blocks */

/* The value NAME is set to in a configuration's text, the last setting winning; into out. */
static bool conf_value(const char *text, const char *name, char *out, size_t n)
{
    bool found = false;
    size_t len = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncasecmp(p, name, len) != 0 || !(isspace((unsigned char)p[len]) || p[len] == '='))
            continue;
        const char *v = p + len;
        while (*v == ' ' || *v == '\t')
            v++;
        if (*v == '=')
            v++;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t k = 0;
        if (*v == '\'') /* quoted: up to the closing quote ('' inside is one) */
            for (v++; *v && *v != '\n' && k + 1 < n; v++) {
                if (*v == '\'' && v[1] != '\'')
                    break;
                out[k++] = *v;
                v += *v == '\'';
            }
        else
            while (*v && !isspace((unsigned char)*v) && *v != '#' && k + 1 < n)
                out[k++] = *v++;
        out[k] = '\0';
        found = true;
    }
    return found;
}

/* A PostgreSQL memory size: a number and kB, MB, GB or TB, or without a unit, 8 kB blocks. */
static bool pg_size(const char *v, uint64_t *bytes)
{
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v)
        return false;
    static const struct {
        const char *unit;
        uint64_t scale;
    } units[] = {{"", BLOCK}, {"B", 1},           {"kB", 1024},
                 {"MB", MIB}, {"GB", 1024 * MIB}, {"TB", 1024ULL * 1024 * MIB}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(end, units[i].unit) == 0) {
            *bytes = n * units[i].scale;
            return true;
        }
    return false;
}

/* The settings the check needs, as the files that set them leave them. */
struct pg_conf {
    char shared_buffers[64], wal_buffers[64], huge_pages[16];
    char from[4096]; /* the files read, for the finding */
};

static void read_conf(const struct doc *d, const char *path, struct pg_conf *c, bool includes)
{
    char *text = doc_rd_text(d, path, CONF_MAX);
    if (text == NULL)
        return;
    snprintf(c->from + strlen(c->from), sizeof(c->from) - strlen(c->from), "%s%s",
             c->from[0] ? ", " : "", path);
    conf_value(text, "shared_buffers", c->shared_buffers, sizeof(c->shared_buffers));
    conf_value(text, "wal_buffers", c->wal_buffers, sizeof(c->wal_buffers));
    conf_value(text, "huge_pages", c->huge_pages, sizeof(c->huge_pages));
    char dir[1024];
    if (includes && conf_value(text, "include_dir", dir, sizeof(dir)) && dir[0]) {
        /* relative to the file that names it; its *.conf files in name order */
        char *base = xstrdup(path), *slash = strrchr(base, '/');
        if (slash)
            *slash = '\0';
        char *full = dir[0] == '/' ? xstrdup(dir) : xasprintf("%s/%s", base, dir), at[8192];
        doc_at_root(d, full, at, sizeof(at));
        struct dirent **names;
        int n = scandir(at, &names, NULL, alphasort);
        for (int i = 0; i < n; i++) {
            size_t len = strlen(names[i]->d_name);
            if (len > 5 && strcmp(names[i]->d_name + len - 5, ".conf") == 0) {
                char *inc = xasprintf("%s/%s", full, names[i]->d_name);
                read_conf(d, inc, c, false);
                free(inc);
            }
            free(names[i]);
        }
        if (n >= 0)
            free(names);
        free(full);
        free(base);
    }
    free(text);
}

/*
 * The cluster under dir: dir itself where it holds PG_VERSION, else the
 * one DIR/VERSION/NAME of Debian's layout (/var/lib/postgresql/15/main);
 * NULL, with why, where there is none or more than one.
 */
static char *cluster_under(const struct doc *d, const char *dir, char **why)
{
    char *file = xasprintf("%s/PG_VERSION", dir);
    bool here = doc_has_file(d, file);
    free(file);
    if (here)
        return xstrdup(dir);
    char at[8192], *found = NULL;
    size_t n = 0;
    doc_at_root(d, dir, at, sizeof(at));
    DIR *versions = opendir(at);
    for (struct dirent *v; versions && (v = readdir(versions)) != NULL;) {
        if (v->d_name[0] == '.')
            continue;
        char *vdir = xasprintf("%s/%s", dir, v->d_name), vat[8192];
        doc_at_root(d, vdir, vat, sizeof(vat));
        DIR *clusters = opendir(vat);
        for (struct dirent *c; clusters && (c = readdir(clusters)) != NULL;) {
            char *cdir = xasprintf("%s/%s", vdir, c->d_name),
                 *pv = xasprintf("%s/PG_VERSION", cdir);
            if (c->d_name[0] != '.' && doc_has_file(d, pv) && n++ == 0)
                found = xstrdup(cdir);
            free(pv);
            free(cdir);
        }
        if (clusters)
            closedir(clusters);
        free(vdir);
    }
    if (versions)
        closedir(versions);
    if (n == 1)
        return found;
    free(found);
    *why = n ? doc_fmt("%zu clusters under %s: name one with --data-dir", n, dir)
             : doc_fmt("no PostgreSQL cluster (no PG_VERSION) in %s or below it: name one with "
                       "--data-dir",
                       dir);
    return NULL;
}

/* The cluster's settings: Debian's /etc/postgresql/V/NAME, then the data directory's own. */
static void cluster_conf(const struct doc *d, const char *cluster, struct pg_conf *c)
{
    memset(c, 0, sizeof(*c));
    char *copy = xstrdup(cluster), *name = strrchr(copy, '/');
    if (name && name != copy) {
        *name++ = '\0';
        const char *version = strrchr(copy, '/');
        char *etc =
            xasprintf("/etc/postgresql/%s/%s/postgresql.conf", version ? version + 1 : copy, name);
        read_conf(d, etc, c, true);
        free(etc);
    }
    free(copy);
    char *own = xasprintf("%s/postgresql.conf", cluster),
         *aut = xasprintf("%s/postgresql.auto.conf", cluster);
    read_conf(d, own, c, true);
    read_conf(d, aut, c, false);
    free(own);
    free(aut);
}

void doctor_check_hugepages(struct doc *d)
{
    if (d->p == NULL || d->p->host.hugepages != HUGEPAGES_POSTGRESQL)
        return;
    long long nr;
    uint64_t page = doc_meminfo_kb(d, "Hugepagesize") * 1024;
    if (!doc_rd_long(d, "/proc/sys/vm/nr_hugepages", &nr) || page == 0)
        return; /* no hugetlbfs in this kernel: PostgreSQL's try uses normal pages */
    char *why = NULL;
    char *cluster = d->data_dir ? cluster_under(d, d->data_dir, &why) : NULL;
    if (cluster == NULL) {
        doc_add(d, "memory", "vm.nr_hugepages", SEV_INFO,
                doc_fmt("vm.nr_hugepages = %lld (%llu MiB pages)", nr,
                        (unsigned long long)(page / MIB)),
                why ? why
                    : doc_fmt("PostgreSQL's shared_buffers is unknown: name its cluster with "
                              "--data-dir"),
                NULL, NULL);
        return;
    }
    struct pg_conf c;
    cluster_conf(d, cluster, &c);
    uint64_t shared = 128 * MIB, wal = 0;
    if (c.shared_buffers[0] && !pg_size(c.shared_buffers, &shared))
        shared = 128 * MIB;
    /* wal_buffers -1: 1/32 of shared_buffers, at least 64 kB, at most a 16 MB segment */
    if (!c.wal_buffers[0] || !pg_size(c.wal_buffers, &wal) || wal == 0)
        wal = shared / 32 < 65536 ? 65536 : shared / 32 > 16 * MIB ? 16 * MIB : shared / 32;
    unsigned long long need = (shared + wal + SHARED_MARGIN + page - 1) / page;
    bool off = strcasecmp(c.huge_pages, "off") == 0, on = strcasecmp(c.huge_pages, "on") == 0;
    enum severity sev = off || (unsigned long long)nr >= need ? SEV_OK
                        : on                                  ? SEV_CRIT
                        : nr > 0                              ? SEV_WARN
                                                              : SEV_INFO;
    char *observed = doc_fmt("vm.nr_hugepages = %lld; %s's shared_buffers = %s (%s)", nr, cluster,
                             c.shared_buffers[0] ? c.shared_buffers : "128MB (its default)",
                             c.from[0] ? c.from : "no configuration file found");
    if (sev == SEV_OK) {
        doc_add(d, "memory", "vm.nr_hugepages", SEV_OK, observed,
                off ? doc_fmt("huge_pages = off: PostgreSQL maps no huge page") : NULL, NULL, NULL);
    } else {
        doc_add(d, "memory", "vm.nr_hugepages", sev, observed,
                doc_fmt("%s: shared_buffers and the rest of its main shared memory take about "
                        "%llu huge pages of %llu MiB, and PostgreSQL maps them only when all "
                        "fit (huge_pages = %s: %s); `postgres -D %s -C "
                        "shared_memory_size_in_huge_pages`, with the server stopped, gives the "
                        "exact count",
                        nr == 0 ? "no huge page is set aside" : "too few huge pages", need,
                        (unsigned long long)(page / MIB), c.huge_pages[0] ? c.huge_pages : "try",
                        on ? "the server does not start" : "it falls back to 4 KiB pages", cluster),
                doc_fmt("sysctl -w vm.nr_hugepages=%llu", need),
                doc_fmt("vm.nr_hugepages = %llu in /etc/sysctl.d/90-tunerun.conf", need));
    }
    free(cluster);
}
