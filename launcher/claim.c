/*
 * claim.c - one claim as one line of the registry's table, and the
 * witness of the process that made it.
 *
 * Lines are parsed here by hand rather than with inih, as profiles are:
 * every launch reads every claim, and one line each keeps that to a split
 * per line. Every value is a profile name, an hwloc list or a number, none
 * with a space. Unknown keys are skipped, so a newer tunerun can add some.
 */
#include "claim.h"
#include "parse.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void claim_free(struct claim *c)
{
    free(c->file);
    free(c->profile);
    free(c->mpol);
    hwloc_bitmap_free(c->cpus);
    hwloc_bitmap_free(c->nodes);
    hwloc_bitmap_free(c->mem_nodes);
    for (size_t i = 0; i < c->navoid; i++)
        free(c->avoid[i]);
    free(c->avoid);
    memset(c, 0, sizeof(*c));
}

void claim_init(struct claim *c)
{
    memset(c, 0, sizeof(*c));
    c->cpus = hwloc_bitmap_alloc();
    c->nodes = hwloc_bitmap_alloc();
    c->mem_nodes = hwloc_bitmap_alloc();
}

void claim_copy(struct claim *to, const struct claim *from)
{
    claim_init(to);
    to->file = from->file ? xstrdup(from->file) : NULL;
    to->profile = xstrdup(from->profile);
    memcpy(to->key, from->key, sizeof(to->key));
    hwloc_bitmap_copy(to->cpus, from->cpus);
    hwloc_bitmap_copy(to->nodes, from->nodes);
    hwloc_bitmap_copy(to->mem_nodes, from->mem_nodes);
    to->mpol = from->mpol ? xstrdup(from->mpol) : NULL;
    to->exclusive = from->exclusive;
    to->pool = from->pool;
    to->avoid = xcalloc(from->navoid ? from->navoid : 1, sizeof(char *));
    for (size_t i = 0; i < from->navoid; i++)
        to->avoid[i] = xstrdup(from->avoid[i]);
    to->navoid = from->navoid;
    to->pid = from->pid;
    to->pidns = from->pidns;
    to->start = from->start;
    memcpy(to->boot_id, from->boot_id, sizeof(to->boot_id));
    to->time = from->time;
}

/* ---- one claim as one line -------------------------------------------- */

char *claim_format(const struct claim *c, const char *file)
{
    char *cpus = bitmap_list(c->cpus), *nodes = bitmap_list(c->nodes),
         *mem = bitmap_list(c->mem_nodes);
    char *avoid = xstrdup("");
    for (size_t i = 0; i < c->navoid; i++) {
        char *a = xasprintf("%s%s%s", avoid, i ? "," : "", c->avoid[i]);
        free(avoid);
        avoid = a;
    }
    char *line = xasprintf("%s profile=%s key=%s cpus=%s nodes=%s mem_nodes=%s mpol=%s "
                           "exclusive=%s pool=%s avoid=%s pid=%ld pidns=%llu start=%llu "
                           "boot_id=%s time=%lld\n",
                           file, c->profile, c->key, cpus, nodes, mem, c->mpol ? c->mpol : "",
                           c->exclusive ? "yes" : "no", c->pool ? "yes" : "no", avoid, c->pid,
                           c->pidns, c->start, c->boot_id, c->time);
    free(cpus);
    free(nodes);
    free(mem);
    free(avoid);
    return line;
}

/* "ended claim.X profile=...": where a claim ran, kept after it ended */
char *claim_format_ended(const struct claim *c)
{
    char *line = claim_format(c, c->file), *ended = xasprintf(ENDED_TOKEN " %s", line);
    free(line);
    return ended;
}

/* A bounded copy: snprintf would do, at ten times the cost, a dozen times per claim. */
static void copy_field(char *dst, size_t n, const char *v)
{
    size_t len = strnlen(v, n - 1);
    memcpy(dst, v, len);
    dst[len] = '\0';
}

static bool parse_yes(const char *v, bool *out)
{
    if (strcmp(v, "yes") == 0 || strcmp(v, "no") == 0) {
        *out = v[0] == 'y';
        return true;
    }
    return parse_bool(v, out);
}

static bool parse_ull(const char *v, unsigned long long *out)
{
    unsigned long long n = 0;
    if (*v == '\0')
        return false;
    for (; *v; v++) {
        unsigned d = (unsigned)(*v - '0');
        if (d > 9 || n > (~0ULL - d) / 10)
            return false;
        n = n * 10 + d;
    }
    *out = n;
    return true;
}

/*
 * One key=value. Keys are told apart by their first letter, then length and
 * bytes: this runs sixteen times per claim, a thousand claims per launch.
 */
static bool parse_field(struct claim *c, const char *key, size_t klen, const char *v)
{
    unsigned long long n;
#define IS(name) (klen == sizeof(name) - 1 && memcmp(key, name, sizeof(name) - 1) == 0)
    switch (key[0]) {
    case 'a':
        if (IS("avoid")) {
            char *list = xstrdup(v), *save = NULL;
            for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                c->avoid = xrealloc(c->avoid, (c->navoid + 1) * sizeof(*c->avoid));
                c->avoid[c->navoid++] = xstrdup(t);
            }
            free(list);
        }
        break;
    case 'b':
        if (IS("boot_id"))
            copy_field(c->boot_id, sizeof(c->boot_id), v);
        break;
    case 'c':
        if (IS("cpus"))
            return bitmap_parse(c->cpus, v);
        break;
    case 'e':
        if (IS("exclusive"))
            return parse_yes(v, &c->exclusive);
        break;
    case 'k':
        if (IS("key"))
            copy_field(c->key, sizeof(c->key), v);
        break;
    case 'm':
        if (IS("mem_nodes"))
            return bitmap_parse(c->mem_nodes, v);
        if (IS("mpol")) {
            free(c->mpol);
            c->mpol = xstrdup(v);
        }
        break;
    case 'n':
        if (IS("nodes"))
            return bitmap_parse(c->nodes, v);
        break;
    case 'p':
        if (IS("profile")) {
            free(c->profile);
            c->profile = xstrdup(v);
        } else if (IS("pid")) {
            if (!parse_ull(v, &n) || n > (1ULL << 30))
                return false;
            c->pid = (long)n;
        } else if (IS("pidns")) {
            return parse_ull(v, &c->pidns);
        } else if (IS("pool")) {
            return parse_yes(v, &c->pool);
        }
        break;
    case 's':
        if (IS("start"))
            return parse_ull(v, &c->start);
        break;
    case 't':
        if (IS("time")) {
            if (!parse_ull(v, &n))
                return false;
            c->time = (long long)n;
        }
        break;
    }
#undef IS
    return true;
}

/*
 * Parse one line (modified in place): a claim, its file's name first, or an
 * `ended` placement. False for anything else.
 */
bool claim_parse(char *line, struct claim *c, bool *ended)
{
    char *p = line, *tok = line;
    while (*p && *p != ' ')
        p++;
    if (*p)
        *p++ = '\0';
    *ended = strcmp(tok, ENDED_TOKEN) == 0;
    if (*ended) {
        for (tok = p; *p && *p != ' '; p++)
            ;
        if (*p)
            *p++ = '\0';
    }
    if (strncmp(tok, CLAIM_PREFIX, strlen(CLAIM_PREFIX)) != 0 || strchr(tok, '/'))
        return false;
    c->file = xstrdup(tok);
    while (*p) {
        char *key = p;
        while (*p && *p != '=' && *p != ' ')
            p++;
        if (*p != '=')
            return false;
        size_t klen = (size_t)(p - key);
        char *v = ++p;
        while (*p && *p != ' ')
            p++;
        if (*p)
            *p++ = '\0';
        if (!parse_field(c, key, klen, v))
            return false;
    }
    return c->profile != NULL && !hwloc_bitmap_iszero(c->cpus);
}

bool registry_parse_line(const char *line, struct claim *c, bool *ended)
{
    char *copy = xstrdup(line);
    claim_init(c);
    bool ok = claim_parse(copy, c, ended);
    free(copy);
    return ok;
}

/* ---- liveness ------------------------------------------------------------ */

/*
 * Whether a zombie's process still has threads running: its leader called
 * pthread_exit() (only a leader lingers as a zombie; other threads go at
 * once), so /proc/PID/task lists more than it.
 */
static bool threads_left(const char *stat_path)
{
    char task[64];
    int len = (int)strlen(stat_path) - (int)strlen("stat");
    snprintf(task, sizeof(task), "%.*stask", len > 0 ? len : 0, stat_path);
    DIR *d = opendir(task);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL && n < 2;)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n > 1;
}

/*
 * Field 22 of /proc/PID/stat: the start time in clock ticks after boot;
 * false for a process that has ended (a zombie its parent has yet to
 * reap runs nothing, and holds no CPU).
 */
bool claim_start_time(const char *stat_path, unsigned long long *start)
{
    char buf[1024];
    if (!read_line_file(stat_path, buf, sizeof(buf)))
        return false;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    if (p == NULL || p[1] != ' ' || p[2] == 'X' || (p[2] == 'Z' && !threads_left(stat_path)))
        return false;
    p++;
    for (int field = 2; field < 21; field++) {
        p = strchr(p + 1, ' ');
        if (p == NULL)
            return false;
    }
    return sscanf(p, " %llu", start) == 1;
}

void registry_witness(struct witness *w)
{
    struct stat st;
    const char *id = boot_id();
    memset(w, 0, sizeof(*w));
    if (stat("/proc/self/ns/pid", &st) < 0 || id == NULL ||
        !claim_start_time("/proc/self/stat", &w->start))
        return;
    w->pidns = st.st_ino;
    snprintf(w->boot_id, sizeof(w->boot_id), "%s", id);
    w->known = true;
}

bool claim_pid_alive(const struct witness *self, const struct claim *c)
{
    unsigned long long now;
    char path[64];
    if (c->pid <= 0 || !self->known)
        return false;
    if (self->pidns != c->pidns || strcmp(self->boot_id, c->boot_id) != 0)
        return false; /* its pid means nothing here: only the fd lock can speak for it */
    snprintf(path, sizeof(path), "/proc/%ld/stat", c->pid);
    return claim_start_time(path, &now) && now == c->start;
}
