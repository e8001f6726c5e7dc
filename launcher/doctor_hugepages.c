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
 * margin for the rest that grows as they do (PostgreSQL 15 needs about
 * 2.3% of shared_buffers and some 25 kB a connection more), so that its
 * fix is never short and seldom more than a few percent long. No library reads
 * postgresql.conf, hence by hand: lines of NAME = VALUE, the last one
 * winning, postgresql.conf and its include_dir, then postgresql.auto.conf
 * (ALTER SYSTEM's), which wins over both.
 */
#include "doctor_internal.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIB        (1024ULL * 1024ULL)
#define CONF_MAX   (1 << 20) /* a postgresql.conf is some 30 KiB */
#define BASE_SHMEM (8 * MIB) /* the main shared memory's fixed part, and then some */
#define PER_PROC   65536ULL  /* its part per connection or worker, rounded up */
#define BLOCK      8192ULL   /* BLCKSZ: a size without a unit counts blocks */

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

/*
 * A PostgreSQL memory size as its GUC parser reads one: a number, which
 * may have a fraction, then spaces and a unit (B, kB, MB, GB or TB, case
 * as written), or none for 8 kB blocks. False for anything else and for a
 * negative size (wal_buffers' -1 is "derive it").
 */
static bool pg_size(const char *v, uint64_t *bytes)
{
    char *end;
    errno = 0;
    double n = strtod(v, &end);
    if (end == v || errno || !isfinite(n) || n < 0)
        return false;
    while (*end == ' ' || *end == '\t')
        end++;
    static const struct {
        const char *unit;
        uint64_t scale;
    } units[] = {{"", BLOCK}, {"B", 1},           {"kB", 1024},
                 {"MB", MIB}, {"GB", 1024 * MIB}, {"TB", 1024ULL * 1024 * MIB}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(end, units[i].unit) == 0) {
            double b = n * (double)units[i].scale;
            if (b >= 18e18)
                return false;
            *bytes = (uint64_t)b;
            return true;
        }
    return false;
}

/* A count setting (max_connections), or def where unset or unreadable. */
static uint64_t pg_count(const char *v, uint64_t def)
{
    if (!isdigit((unsigned char)v[0]))
        return def; /* unset, or not a count */
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    return *end == '\0' && n < 1000000 ? n : def;
}

/* huge_pages as PostgreSQL reads it: on, off and try, and the booleans' spellings of on and off. */
static bool pg_is(const char *v, const char *const *spellings)
{
    for (; *spellings; spellings++)
        if (strcasecmp(v, *spellings) == 0)
            return true;
    return false;
}
static const char *const HUGE_ON[] = {"on", "true", "yes", "1", NULL};
static const char *const HUGE_OFF[] = {"off", "false", "no", "0", NULL};

/* The settings the check needs, as the files that set them leave them. */
struct pg_conf {
    char shared_buffers[64], wal_buffers[64], huge_pages[16];
    char max_connections[16], autovacuum_max_workers[16], max_worker_processes[16],
        max_wal_senders[16];
    char from[4096]; /* the files read, for the finding */
    bool in_etc;     /* Debian's /etc/postgresql/V/NAME/postgresql.conf among them */
};

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void read_conf(const struct doc *d, const char *path, struct pg_conf *c, bool includes);

/* include_dir's *.conf files, in name order (C collation, as PostgreSQL sorts them). */
static void read_include_dir(const struct doc *d, const char *path, const char *dir,
                             struct pg_conf *c)
{
    /* relative to the file that names it */
    char *base = xstrdup(path), *slash = strrchr(base, '/');
    if (slash)
        *slash = '\0';
    char *full = dir[0] == '/' ? xstrdup(dir) : xasprintf("%s/%s", base, dir), **names = NULL;
    size_t n = 0;
    int error;
    DIR *h = doc_opendir(d, full, &error);
    for (struct dirent *e; h && (e = readdir(h)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] != '.' && len > 5 && strcmp(e->d_name + len - 5, ".conf") == 0) {
            names = xrealloc(names, (n + 1) * sizeof(*names));
            names[n++] = xstrdup(e->d_name);
        }
    }
    if (h)
        closedir(h);
    qsort(names, n, sizeof(*names), by_name);
    for (size_t i = 0; i < n; i++) {
        char *inc = xasprintf("%s/%s", full, names[i]);
        read_conf(d, inc, c, false);
        free(inc);
        free(names[i]);
    }
    free(names);
    free(full);
    free(base);
}

static void read_conf(const struct doc *d, const char *path, struct pg_conf *c, bool includes)
{
    char *text = doc_rd_text(d, path, CONF_MAX);
    if (text == NULL)
        return;
    snprintf(c->from + strlen(c->from), sizeof(c->from) - strlen(c->from), "%s%s",
             c->from[0] ? ", " : "", path);
    static const struct {
        const char *name;
        size_t at, size;
    } keys[] = {
#define KEY(k) {#k, offsetof(struct pg_conf, k), sizeof(((struct pg_conf *)0)->k)}
        KEY(shared_buffers),
        KEY(wal_buffers),
        KEY(huge_pages),
        KEY(max_connections),
        KEY(autovacuum_max_workers),
        KEY(max_worker_processes),
        KEY(max_wal_senders),
#undef KEY
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        conf_value(text, keys[i].name, (char *)c + keys[i].at, keys[i].size);
    char dir[1024];
    if (includes && conf_value(text, "include_dir", dir, sizeof(dir)) && dir[0])
        read_include_dir(d, path, dir, c);
    free(text);
}

/*
 * The cluster under dir: dir itself where it holds PG_VERSION, else the
 * one DIR/VERSION/NAME of Debian's layout (/var/lib/postgresql/15/main);
 * NULL, with why, where there is none, more than one, or a directory
 * this process may not read (a cluster's is its owner's alone, 0700).
 */
static char *cluster_under(const struct doc *d, const char *dir, char **why)
{
    char *file = xasprintf("%s/PG_VERSION", dir);
    bool here = doc_has_file(d, file);
    char *found = NULL, *denied = !here && errno == EACCES ? xstrdup(dir) : NULL;
    free(file);
    if (here)
        return xstrdup(dir);
    size_t n = 0;
    int error;
    DIR *versions = doc_opendir(d, dir, &error);
    if (versions == NULL && error == EACCES && denied == NULL)
        denied = xstrdup(dir);
    for (struct dirent *v; versions && (v = readdir(versions)) != NULL;) {
        if (v->d_name[0] == '.')
            continue;
        char *vdir = xasprintf("%s/%s", dir, v->d_name);
        DIR *clusters = doc_opendir(d, vdir, &error);
        if (clusters == NULL && error == EACCES && denied == NULL)
            denied = xstrdup(vdir);
        for (struct dirent *c; clusters && (c = readdir(clusters)) != NULL;) {
            char *cdir = xasprintf("%s/%s", vdir, c->d_name),
                 *pv = xasprintf("%s/PG_VERSION", cdir);
            bool has = c->d_name[0] != '.' && doc_has_file(d, pv);
            if (has && n++ == 0)
                found = xstrdup(cdir);
            else if (!has && c->d_name[0] != '.' && errno == EACCES && denied == NULL)
                denied = xstrdup(cdir);
            free(pv);
            free(cdir);
        }
        if (clusters)
            closedir(clusters);
        free(vdir);
    }
    if (versions)
        closedir(versions);
    if (n == 1) {
        free(denied);
        return found;
    }
    free(found);
    *why = n        ? doc_fmt("%zu clusters under %s: name one with --data-dir", n, dir)
           : denied ? doc_fmt("%s may not be read by this process (a cluster's directory is its "
                              "owner's alone): run doctor as root",
                              denied)
                    : doc_fmt("no PostgreSQL cluster (no PG_VERSION) in %s or below it: name one "
                              "with --data-dir",
                              dir);
    free(denied);
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
        c->in_etc = c->from[0] != '\0';
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

/*
 * What the main shared memory takes, in bytes: shared_buffers, the WAL
 * buffers (-1, the default: 1/32 of shared_buffers, at least 64 kB, at
 * most a 16 MB segment), and the rest: 1/32 of shared_buffers for their
 * descriptors and the like, a fixed part, and a part per process that
 * may connect (connections, autovacuum workers, background workers, WAL
 * senders and PostgreSQL's own five).
 */
static uint64_t shared_memory(const struct pg_conf *c, uint64_t shared)
{
    uint64_t wal = 0;
    if (!c->wal_buffers[0] || !pg_size(c->wal_buffers, &wal) || wal == 0)
        wal = shared / 32 < 65536 ? 65536 : shared / 32 > 16 * MIB ? 16 * MIB : shared / 32;
    uint64_t procs = pg_count(c->max_connections, 100) + pg_count(c->autovacuum_max_workers, 3) +
                     pg_count(c->max_worker_processes, 8) + pg_count(c->max_wal_senders, 10) + 5;
    return shared + wal + shared / 32 + BASE_SHMEM + procs * PER_PROC;
}

/* The exact count's command, as Debian's layout runs it: as postgres, with the server stopped. */
static char *exact_count(const struct doc *d, const char *cluster, const struct pg_conf *c)
{
    char *file = xasprintf("%s/PG_VERSION", cluster), version[16] = "";
    bool known = doc_rd(d, file, version, sizeof(version)) && version[0];
    free(file);
    char *conf = NULL;
    if (c->in_etc) { /* postgres -D takes the configuration's directory, which names the data */
        const char *name = strrchr(cluster, '/');
        conf = xasprintf("/etc/postgresql/%s/%s", known ? version : "VERSION", name + 1);
    }
    char *cmd = xasprintf("runuser -u postgres -- /usr/lib/postgresql/%s/bin/postgres -D %s -C "
                          "shared_memory_size_in_huge_pages",
                          known ? version : "VERSION", conf ? conf : cluster);
    free(conf);
    return cmd;
}

/* Nodes with memory, where vm.nr_hugepages spreads the pool evenly; 1 where unknown. */
static int memory_nodes(const struct doc *d)
{
    char list[256];
    if (!doc_rd(d, "/sys/devices/system/node/has_memory", list, sizeof(list)))
        return 1;
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    int n = bitmap_parse(nodes, list) ? hwloc_bitmap_weight(nodes) : 1;
    hwloc_bitmap_free(nodes);
    return n > 0 ? n : 1;
}

void doctor_check_hugepages(struct doc *d)
{
    if (d->p == NULL || d->p->host.hugepages != HUGEPAGES_POSTGRESQL)
        return;
    long long nr;
    uint64_t page = doc_meminfo_kb(d, "Hugepagesize") * 1024;
    if (!doc_rd_long(d, "/proc/sys/vm/nr_hugepages", &nr) || page == 0)
        return; /* no hugetlbfs in this kernel: PostgreSQL's try uses normal pages */
    char *why = NULL, *dir = d->data_dir ? xstrdup(d->data_dir) : NULL;
    for (size_t len = dir ? strlen(dir) : 0; len > 1 && dir[len - 1] == '/'; len--)
        dir[len - 1] = '\0'; /* "main/" is "main", whose parent names its version */
    char *cluster = dir ? cluster_under(d, dir, &why) : NULL;
    free(dir);
    char *observed =
        doc_fmt("vm.nr_hugepages = %lld (%llu MiB pages)", nr, (unsigned long long)(page / MIB));
    if (cluster == NULL) {
        doc_add(d, "memory", "vm.nr_hugepages", SEV_INFO, observed,
                why ? why
                    : doc_fmt("PostgreSQL's shared_buffers is unknown: name its cluster with "
                              "--data-dir"),
                NULL, NULL);
        return;
    }
    free(observed);
    struct pg_conf c;
    cluster_conf(d, cluster, &c);
    uint64_t shared = 128 * MIB;
    if (c.shared_buffers[0] && !pg_size(c.shared_buffers, &shared)) {
        char *cmd = exact_count(d, cluster, &c);
        doc_add(d, "memory", "vm.nr_hugepages", SEV_INFO,
                doc_fmt("vm.nr_hugepages = %lld; %s's shared_buffers = %s (%s)", nr, cluster,
                        c.shared_buffers, c.from),
                doc_fmt("a size this audit cannot read, so it cannot count the huge pages it "
                        "needs; `%s` gives the count",
                        cmd),
                NULL, NULL);
        free(cmd);
        free(cluster);
        return;
    }
    unsigned long long need = (shared_memory(&c, shared) + page - 1) / page;
    bool off = pg_is(c.huge_pages, HUGE_OFF), on = pg_is(c.huge_pages, HUGE_ON);
    enum severity sev = off || (unsigned long long)nr >= need ? SEV_OK
                        : on                                  ? SEV_CRIT
                        : nr > 0                              ? SEV_WARN
                                                              : SEV_INFO;
    observed = doc_fmt("vm.nr_hugepages = %lld; %s's shared_buffers = %s (%s)", nr, cluster,
                       c.shared_buffers[0] ? c.shared_buffers : "128MB (its default)",
                       c.from[0] ? c.from : "no configuration file found");
    if (sev == SEV_OK) {
        doc_add(d, "memory", "vm.nr_hugepages", SEV_OK, observed,
                off ? doc_fmt("huge_pages = %s: PostgreSQL maps no huge page", c.huge_pages) : NULL,
                NULL, NULL);
        free(cluster);
        return;
    }
    int nodes = memory_nodes(d);
    char *cmd = exact_count(d, cluster, &c);
    char spread[320] = "";
    if (nodes > 1)
        snprintf(spread, sizeof(spread),
                 "; vm.nr_hugepages spreads them over the %d nodes with memory, so that a "
                 "cluster placed on one takes the others' once its own run out, and they are "
                 "remote: set its node's own count instead (/sys/devices/system/node/nodeN/"
                 "hugepages/hugepages-%llukB/nr_hugepages)",
                 nodes, (unsigned long long)(page / 1024));
    doc_add(d, "memory", "vm.nr_hugepages", sev, observed,
            doc_fmt("%s: shared_buffers and the rest of its main shared memory take about %llu "
                    "huge pages of %llu MiB, and PostgreSQL maps them only when all fit "
                    "(huge_pages = %s: %s); `%s` gives the exact count%s",
                    nr == 0 ? "no huge page is set aside" : "too few huge pages", need,
                    (unsigned long long)(page / MIB), c.huge_pages[0] ? c.huge_pages : "try",
                    on ? "the server does not start" : "it falls back to 4 KiB pages", cmd, spread),
            doc_fmt("sysctl -w vm.nr_hugepages=%llu", need),
            doc_fmt("vm.nr_hugepages = %llu in /etc/sysctl.d/90-tunerun.conf", need));
    free(cmd);
    free(cluster);
}
