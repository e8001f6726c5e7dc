/*
 * yield_return.c - a shared pool gets back the CPUs it yielded once the
 * service it yielded them to has ended.
 *
 * tunerun execs into the service and leaves no daemon behind, so nothing
 * sees a service end the moment it does. The next launch sees it: the
 * registry finds its claim dead under the lock (registry_check()), and
 * before that launch plans, each pool the service took CPUs from gets
 * back those no one it must keep apart from holds now, as Kubernetes'
 * static CPU manager returns an exclusive container's CPUs to its shared
 * pool. Until then the CPUs stay yielded, which only ever keeps the pool
 * off CPUs that nothing uses.
 *
 * What a yield changed is kept beside the claim that took the CPUs, in
 * yielded.PROFILE.RANDOM (the rest of that claim file's name): for each
 * pool, its claim file, pid and start time, what it held and what it gave;
 * for each thread moved, what it had and where it went; and the threads
 * the yield saw and left alone. A thread cannot be asked later what it had
 * before, and without that a worker the pool had pinned to a CPU it gave
 * up would come back spread over every CPU instead of pinned again.
 *
 * The order is one a crash may stop anywhere without two claims holding a
 * CPU apart: the dead claim is pruned, each pool's claim grows (its file
 * at once) by CPUs no live claim it must keep apart from holds, the table
 * is written, and only then is the record removed. A crash before the
 * table is written leaves the dead claim in it, and the next launch does
 * the same again, which gives nothing twice: what a pool holds already is
 * never given. Then each pool's own cpuset cgroups grow (on cgroup v1 a
 * thread's CPUs must fit in its cpuset), and last its threads.
 */
#include "yield.h"
#include "cgroup.h"
#include "log.h"
#include "procs.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RECORDS_MAX   (8u << 20) /* a JVM's thousands of threads, many times over */
#define SEEN_PER      512        /* thread ids on one `seen` line */
#define RETURN_PASSES 5          /* over the pool's threads, for those it starts meanwhile */

static char *records_name(const char *claim_file)
{
    size_t skip =
        strncmp(claim_file, CLAIM_PREFIX, strlen(CLAIM_PREFIX)) == 0 ? strlen(CLAIM_PREFIX) : 0;
    return xasprintf(YIELDED_PREFIX "%s", claim_file + skip);
}

static int long_order(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static bool listed(const struct pid_list *sorted, long v)
{
    return sorted->n > 0 &&
           bsearch(&v, sorted->v, sorted->n, sizeof(*sorted->v), long_order) != NULL;
}

/* ---- the record's text ---------------------------------------------------- */

/* Its pool's index among y->claims, for a thread moved by plan shrink `shrink`. */
static size_t pool_of(const struct yield *y, size_t shrink)
{
    size_t c = 0;
    while (c < y->nclaims && y->claims[c].shrink != shrink)
        c++;
    return c;
}

static void append(char **text, size_t *len, size_t *cap, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > *cap)
        *text = xrealloc(*text, *cap = 2 * (*len + n + 1));
    memcpy(*text + *len, s, n + 1);
    *len += n;
}

char *yield_records_format(const struct yield *y, const char *profile)
{
    size_t len = 0, cap = 0;
    char *text = NULL, *line;
    append(&text, &len, &cap,
           "# CPUs shared pools yielded to a service tunerun launched; they get them back when "
           "it ends\n");
    line = xasprintf("by %s\n", profile);
    append(&text, &len, &cap, line);
    free(line);
    for (size_t c = 0; c < y->nclaims; c++) {
        const struct shrunk_claim *k = &y->claims[c];
        char *cpus = bitmap_list(k->cpus), *nodes = bitmap_list(k->nodes),
             *gave = bitmap_list(k->gave);
        line = xasprintf("pool %s pid=%ld start=%llu cpus=%s nodes=%s gave=%s\n", k->file, k->pid,
                         k->start, cpus, nodes, gave);
        append(&text, &len, &cap, line);
        free(line);
        free(cpus);
        free(nodes);
        free(gave);
    }
    struct pid_list moved = {NULL, 0};
    for (size_t i = 0; i < y->nthreads; i++) {
        const struct moved_thread *m = &y->threads[i];
        size_t c = pool_of(y, m->shrink);
        if (c == y->nclaims)
            continue; /* of no pool the record names (none is: each pool a thread moved in is) */
        char *was = bitmap_list(m->was), *to = bitmap_list(m->to);
        line = xasprintf("moved %zu pid=%ld tid=%ld was=%s to=%s\n", c, m->pid, m->tid, was, to);
        append(&text, &len, &cap, line);
        free(line);
        free(was);
        free(to);
        pid_list_add(&moved, m->tid);
    }
    if (moved.n > 1)
        qsort(moved.v, moved.n, sizeof(*moved.v), long_order);
    /* the threads seen and not moved, a few hundred to a line */
    size_t on = 0;
    for (size_t i = 0; i < y->seen.n; i++) {
        if (listed(&moved, y->seen.v[i]))
            continue;
        line = xasprintf("%s%ld", on == 0 ? "seen " : ",", y->seen.v[i]);
        append(&text, &len, &cap, line);
        free(line);
        if (++on == SEEN_PER) {
            append(&text, &len, &cap, "\n");
            on = 0;
        }
    }
    if (on > 0)
        append(&text, &len, &cap, "\n");
    pid_list_free(&moved);
    return text;
}

/* A number of the record's (v NULL: a field missing), whole and in range. */
static bool number(const char *v, unsigned long long max, unsigned long long *out)
{
    char *end;
    if (v == NULL || *v < '0' || *v > '9')
        return false;
    errno = 0;
    *out = strtoull(v, &end, 10);
    return *end == '\0' && errno == 0 && *out <= max;
}

/* The value of key `key` among a line's `key=value` words, or NULL. */
static const char *field(char *const *words, size_t n, const char *key)
{
    size_t len = strlen(key);
    for (size_t i = 0; i < n; i++)
        if (strncmp(words[i], key, len) == 0 && words[i][len] == '=')
            return words[i] + len + 1;
    return NULL;
}

static bool set_of(char *const *words, size_t n, const char *key, hwloc_bitmap_t *out)
{
    const char *v = field(words, n, key);
    *out = hwloc_bitmap_alloc();
    return v != NULL && bitmap_parse(*out, v);
}

static bool parse_pool(char *const *w, size_t n, struct yield *y)
{
    unsigned long long pid, start;
    struct shrunk_claim k = {.shrink = y->nclaims};
    bool ok = n >= 2 && strncmp(w[1], CLAIM_PREFIX, strlen(CLAIM_PREFIX)) == 0 &&
              strchr(w[1], '/') == NULL && number(field(w, n, "pid"), 1ULL << 30, &pid) &&
              number(field(w, n, "start"), ~0ULL, &start);
    /* every set allocated, whatever failed, so that yield_free() frees them all */
    ok = set_of(w, n, "cpus", &k.cpus) && ok;
    ok = set_of(w, n, "nodes", &k.nodes) && ok;
    ok = set_of(w, n, "gave", &k.gave) && ok;
    k.file = xstrdup(n >= 2 ? w[1] : "");
    k.pid = ok ? (long)pid : 0;
    k.start = ok ? start : 0;
    k.recorded = true;
    y->claims = xrealloc(y->claims, (y->nclaims + 1) * sizeof(*y->claims));
    y->claims[y->nclaims++] = k;
    return ok;
}

static bool parse_moved(char *const *w, size_t n, struct yield *y)
{
    unsigned long long c, pid, tid;
    struct moved_thread m = {0};
    bool ok = n >= 2 && y->nclaims > 0 && number(w[1], y->nclaims - 1, &c) &&
              number(field(w, n, "pid"), 1ULL << 30, &pid) &&
              number(field(w, n, "tid"), 1ULL << 30, &tid);
    ok = set_of(w, n, "was", &m.was) && ok;
    ok = set_of(w, n, "to", &m.to) && ok;
    if (ok) {
        m.shrink = (size_t)c;
        m.pid = (long)pid;
        m.tid = (long)tid;
    }
    y->threads = xrealloc(y->threads, (y->nthreads + 1) * sizeof(*y->threads));
    y->threads[y->nthreads++] = m;
    return ok;
}

static bool parse_seen(const char *list, struct yield *y)
{
    for (const char *p = list; *p;) {
        unsigned long long tid;
        char num[24];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof(num))
            return false;
        memcpy(num, p, len);
        num[len] = '\0';
        if (!number(num, 1ULL << 30, &tid))
            return false;
        pid_list_add(&y->seen, (long)tid);
        p += len;
        if (*p == ',' && *++p == '\0')
            return false; /* a list does not end in a comma */
    }
    return true;
}

/* A profile's name as profiles have them (letters, digits, '-', '_', '.', '@'): said in messages.
 */
static bool plain_name(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@");
    return n > 0 && n <= 64 && s[n] == '\0';
}

/* One line, cut into words in place. */
static bool parse_line(char *line, struct yield *y, char **profile)
{
    char *words[16], *save = NULL;
    size_t n = 0;
    for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        if (n == sizeof(words) / sizeof(*words))
            return false;
        words[n++] = t;
    }
    if (n == 0)
        return false;
    if (strcmp(words[0], "by") == 0 && n == 2 && *profile == NULL && plain_name(words[1])) {
        *profile = xstrdup(words[1]);
        return true;
    }
    if (strcmp(words[0], "pool") == 0)
        return parse_pool(words, n, y);
    if (strcmp(words[0], "moved") == 0)
        return parse_moved(words, n, y);
    return strcmp(words[0], "seen") == 0 && n == 2 && parse_seen(words[1], y);
}

bool yield_records_parse(const char *text, struct yield *y, char **profile, struct err *e)
{
    char *copy = xstrdup(text), *save = NULL;
    size_t lineno = 0;
    bool ok = true;
    *profile = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line && ok; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        if (*line != '#' && !(ok = parse_line(line, y, profile)))
            err_set(e, "line %zu is not one tunerun wrote", lineno);
    }
    free(copy);
    if (ok && *profile == NULL) {
        err_set(e, "it names no service");
        ok = false;
    }
    if (y->seen.n > 1)
        qsort(y->seen.v, y->seen.n, sizeof(*y->seen.v), long_order);
    return ok;
}

/* ---- what comes back ---------------------------------------------------------- */

static bool names(const char *name, char *const *list, size_t n)
{
    for (size_t i = 0; i < n && name; i++)
        if (strcmp(list[i], name) == 0)
            return true;
    return false;
}

void yield_returnable(const struct claim *claims, size_t n, size_t pool, hwloc_const_bitmap_t gave,
                      hwloc_bitmap_t out)
{
    const struct claim *p = &claims[pool];
    hwloc_bitmap_andnot(out, gave, p->cpus);
    for (size_t i = 0; i < n; i++) {
        const struct claim *k = &claims[i];
        /* as plan_note_claims() keeps them apart: exclusive, or avoid either way */
        if (i == pool || k->pool)
            continue;
        if (k->exclusive || names(k->profile, p->avoid, p->navoid) ||
            names(p->profile, k->avoid, k->navoid))
            hwloc_bitmap_andnot(out, out, k->cpus);
    }
}

/*
 * A thread the yield moved from `was` to `to` and still there gets what it
 * had, within what its pool holds now: all of it where nothing is still
 * taken, and a worker pinned to a CPU the pool gave up is pinned there
 * again. One moved since (a pool that re-pins its workers when it
 * reloads) keeps where it went, with what it had of the CPUs that come
 * back. A thread the yield saw and left alone is left alone again.
 *
 * A thread born since has no record: it was born with its creator's CPUs.
 * Where those are the very set the yield moved a thread of the pool to, it
 * is taken for that thread's child, and gets what comes back of what such
 * threads gave up; a thread on any other set was placed by the service
 * itself, and is left alone. Worker processes the pool started since (a
 * reload) are found the same way, as they hold its claim.
 */
void yield_thread_back(const struct yield *y, size_t c, long pid, long tid,
                       hwloc_const_bitmap_t cur, hwloc_const_bitmap_t give,
                       hwloc_const_bitmap_t holds, hwloc_bitmap_t out)
{
    hwloc_bitmap_copy(out, cur);
    for (size_t i = 0; i < y->nthreads; i++) {
        const struct moved_thread *m = &y->threads[i];
        if (m->shrink != c || m->pid != pid || m->tid != tid)
            continue;
        hwloc_bitmap_t had = hwloc_bitmap_alloc();
        if (hwloc_bitmap_isequal(cur, m->to)) {
            hwloc_bitmap_and(had, m->was, holds);
            if (!hwloc_bitmap_iszero(had))
                hwloc_bitmap_copy(out, had);
        } else {
            hwloc_bitmap_and(had, m->was, give);
            hwloc_bitmap_or(out, cur, had);
        }
        hwloc_bitmap_free(had);
        return;
    }
    if (listed(&y->seen, tid))
        return;
    hwloc_bitmap_t lost = hwloc_bitmap_alloc(), gone = hwloc_bitmap_alloc();
    bool born = false;
    for (size_t i = 0; i < y->nthreads; i++) {
        const struct moved_thread *m = &y->threads[i];
        if (m->shrink != c || !hwloc_bitmap_isequal(cur, m->to))
            continue;
        born = true;
        hwloc_bitmap_andnot(gone, m->was, m->to);
        hwloc_bitmap_or(lost, lost, gone);
    }
    if (born) {
        hwloc_bitmap_and(lost, lost, give);
        hwloc_bitmap_or(out, cur, lost);
    }
    hwloc_bitmap_free(lost);
    hwloc_bitmap_free(gone);
}

/* ---- kept, and forgotten ----------------------------------------------------- */

void yield_save(const struct yield *y, struct registry *reg, const char *own)
{
    if (y->nclaims == 0 || own == NULL || reg->lock_fd < 0)
        return;
    const char *profile = "service"; /* (its own claim is always there) */
    for (size_t i = 0; i < reg->nclaims; i++)
        if (strcmp(reg->claims[i].file, own) == 0)
            profile = reg->claims[i].profile;
    char *name = records_name(own), *text = yield_records_format(y, profile);
    const char *bufs[] = {text};
    size_t lens[] = {strlen(text)};
    struct err e;
    if (!state_write(reg->sd, name, bufs, lens, 1, &e))
        log_warn("registry: %s; the pools that yielded CPUs to this service get them back only "
                 "when they restart",
                 e.msg);
    free(text);
    free(name);
}

void yield_forget(struct registry *reg, const char *own)
{
    char *name = records_name(own);
    unlinkat(reg->sd->fd, name, 0);
    free(name);
}

/* ---- given back ---------------------------------------------------------------- */

/* One ended service's record, as read, and what each of its pools gets. */
struct returning {
    char *name; /* the record's file in the state directory */
    char *by;   /* the profile of the service that ended */
    struct yield y;
    size_t *at;           /* per pool: its claim's index in the registry; SIZE_MAX: passed over */
    hwloc_bitmap_t *give; /* per pool: what comes back to it */
};

static void returning_free(struct returning *r)
{
    for (size_t c = 0; r->give && c < r->y.nclaims; c++)
        hwloc_bitmap_free(r->give[c]);
    free(r->give);
    free(r->at);
    free(r->name);
    free(r->by);
    yield_free(&r->y);
}

/*
 * The record dead claim `file` left, read; false when there is none. One
 * that cannot be read or trusted is said, and removed by a writer: the
 * pools it names keep what they yielded.
 */
static bool load(struct registry *reg, const char *file, struct returning *r)
{
    struct err e;
    char *text = NULL;
    size_t len;
    memset(r, 0, sizeof(*r));
    r->name = records_name(file);
    int fd = state_open_read(reg->sd, r->name, &e), error = errno;
    if (fd < 0 && error == ENOENT)
        return false; /* it took no CPU from a pool */
    if (fd >= 0) {
        if ((error = read_fd_text(fd, RECORDS_MAX, &text, &len)) != 0)
            err_set(&e, "%s", strerror(error));
        close(fd);
    }
    bool ok = fd >= 0 && error == 0 && yield_records_parse(text, &r->y, &r->by, &e);
    free(text);
    if (ok) {
        r->at = xcalloc(r->y.nclaims ? r->y.nclaims : 1, sizeof(*r->at));
        r->give = xcalloc(r->y.nclaims ? r->y.nclaims : 1, sizeof(*r->give));
        return true;
    }
    if (!reg->readonly) {
        log_warn("registry: %s/%s: %s; the pools it names keep the CPUs they yielded until they "
                 "restart",
                 reg->sd->path, r->name, e.msg);
        unlinkat(reg->sd->fd, r->name, 0);
    }
    return false;
}

/*
 * Pool c of the record gets its CPUs back in the registry (in memory only,
 * read-only), when its claim is alive and still the process that yielded
 * them; r->at[c] says which claim it is, or SIZE_MAX.
 */
static void grow_claim(struct registry *reg, const struct topo *t, struct returning *r, size_t c)
{
    const struct shrunk_claim *k = &r->y.claims[c];
    r->at[c] = SIZE_MAX;
    r->give[c] = hwloc_bitmap_alloc();
    size_t i = 0;
    while (i < reg->nclaims && strcmp(reg->claims[i].file, k->file) != 0)
        i++;
    struct claim *now = i < reg->nclaims ? &reg->claims[i] : NULL;
    /*
     * A claim file's name is never used twice; its pid and start time say
     * all the same that it is the process that yielded, and a probe that it
     * is alive (a claim the registry did not probe counts as alive).
     */
    if (now == NULL || !now->pool || now->pid != k->pid || now->start != k->start ||
        !(registry_held(reg, now) || registry_pid_alive(reg, now))) {
        log_info("the pool of %s, which yielded CPUs to %s, has ended too", k->file, r->by);
        return;
    }
    r->at[c] = i;
    hwloc_bitmap_t lacks = hwloc_bitmap_alloc(), cpus = hwloc_bitmap_alloc(),
                   nodes = hwloc_bitmap_dup(k->nodes);
    hwloc_bitmap_andnot(lacks, k->gave, now->cpus);
    yield_returnable(reg->claims, reg->nclaims, i, k->gave, r->give[c]);
    char *list = bitmap_list(r->give[c]), *all = NULL;
    hwloc_bitmap_or(cpus, now->cpus, r->give[c]);
    /* its nodes: as they were when all came back, else those its CPUs are on */
    if (!hwloc_bitmap_isequal(cpus, k->cpus)) {
        hwloc_bitmap_copy(nodes, now->nodes);
        topo_nodes_of(t, cpus, nodes);
    }
    struct err e;
    if (hwloc_bitmap_iszero(r->give[c])) {
        if (!hwloc_bitmap_iszero(lacks) && !reg->readonly) {
            char *none = bitmap_list(lacks);
            log_notice("%s: gets none of CPUs %s back from %s, which has ended: services it keeps "
                       "apart from hold them",
                       now->profile, none, r->by);
            free(none);
        }
    } else if (reg->readonly) {
        log_info("%s gets CPUs %s back from %s, which has ended, at the next launch; this plan "
                 "counts them as its own",
                 now->profile, list, r->by);
        hwloc_bitmap_copy(now->cpus, cpus);
        hwloc_bitmap_copy(now->nodes, nodes);
    } else if (registry_update(reg, i, cpus, nodes, &e)) {
        all = bitmap_list(cpus);
        log_notice("%s: gets CPUs %s back from %s, which has ended (%s in all)", now->profile, list,
                   r->by, all);
    } else {
        log_warn("registry: %s; its threads keep the smaller set until it restarts", e.msg);
        hwloc_bitmap_zero(r->give[c]);
    }
    free(list);
    free(all);
    hwloc_bitmap_free(lacks);
    hwloc_bitmap_free(cpus);
    hwloc_bitmap_free(nodes);
}

/* The pool's own cpuset cgroups, as its processes are in them now, grown by `give`. */
static void grow_cpusets(const struct pid_list *holders, hwloc_const_bitmap_t give, const char *who)
{
    char **done = xcalloc(holders->n ? holders->n : 1, sizeof(*done)), *list = bitmap_list(give);
    size_t ndone = 0;
    for (size_t h = 0; h < holders->n; h++) {
        char *dir = cgroup_cpuset_dir_of(holders->v[h]);
        bool known = dir == NULL;
        for (size_t k = 0; k < ndone && !known; k++)
            known = strcmp(done[k], dir) == 0;
        if (known) {
            free(dir);
            continue;
        }
        int error = cgroup_cpuset_add_cpus(dir, list);
        if (error != 0)
            log_warn("%s: cannot give its cpuset %s CPUs %s back: %s; its threads keep the smaller "
                     "set until it restarts",
                     who, dir, list, strerror(error));
        done[ndone++] = dir;
    }
    for (size_t k = 0; k < ndone; k++)
        free(done[k]);
    free(done);
    free(list);
}

/*
 * The threads of pool c's processes, found as the yield found them (those
 * holding its claim, and the table's pid only where that cannot be told),
 * given back what yield_thread_back() says, in passes until one changes
 * nothing: a thread given back may start others meanwhile.
 */
static void return_threads(struct registry *reg, struct returning *r, size_t c)
{
    const struct claim *pool = &reg->claims[r->at[c]];
    hwloc_bitmap_t cur = hwloc_bitmap_alloc(), want = hwloc_bitmap_alloc(),
                   got = hwloc_bitmap_alloc();
    size_t failed = 0;
    int error = 0;
    for (size_t pass = 0; pass < RETURN_PASSES; pass++) {
        struct pid_list holders, tids;
        size_t changed = 0;
        failed = 0;
        registry_holders(reg, pool, 1, false, &holders);
        if (pass == 0 && !hwloc_bitmap_iszero(r->give[c]))
            grow_cpusets(&holders, r->give[c], pool->profile); /* first: the threads must fit */
        for (size_t h = 0; h < holders.n; h++) {
            if (!procs_threads(holders.v[h], &tids))
                continue; /* it ended meanwhile */
            for (size_t i = 0; i < tids.n; i++) {
                if (thread_cpus(tids.v[i], cur) < 0)
                    continue;
                yield_thread_back(&r->y, c, holders.v[h], tids.v[i], cur, r->give[c], pool->cpus,
                                  want);
                if (hwloc_bitmap_isequal(want, cur))
                    continue;
                if (thread_set_cpus(tids.v[i], want) < 0) {
                    if (errno != ESRCH) {
                        error = errno;
                        failed++;
                    }
                } else if (thread_cpus(tids.v[i], got) == 0 && !hwloc_bitmap_isequal(got, cur)) {
                    changed++;
                }
            }
            pid_list_free(&tids);
        }
        pid_list_free(&holders);
        if (changed == 0)
            break;
    }
    if (failed > 0)
        log_warn("%s: %zu thread%s could not be given back the CPUs %s gave up: %s; they keep the "
                 "smaller set until they restart (fix: CAP_SYS_NICE)",
                 pool->profile, failed, failed == 1 ? "" : "s", r->by, strerror(error));
    hwloc_bitmap_free(cur);
    hwloc_bitmap_free(want);
    hwloc_bitmap_free(got);
}

void yield_return_ended(struct registry *reg, const struct topo *t)
{
    if (reg->ndead == 0)
        return;
    struct returning *r = xcalloc(reg->ndead, sizeof(*r));
    size_t n = 0;
    for (size_t d = 0; d < reg->ndead; d++) {
        if (!load(reg, reg->dead[d], &r[n])) {
            returning_free(&r[n]);
            continue;
        }
        for (size_t c = 0; c < r[n].y.nclaims; c++)
            grow_claim(reg, t, &r[n], c);
        n++;
    }
    /*
     * The table, with the dead claims gone and the pools grown, is written
     * before the records go. A crash before it leaves the dead claims in
     * the table with their records, and the next launch does it all again;
     * records removed first would leave the table's pools smaller, with
     * nothing left to say why.
     */
    struct err e;
    bool written = reg->readonly || n == 0 || registry_flush(reg, &e);
    if (!written)
        log_warn("registry: %s; the next launch gives the pools their CPUs back again", e.msg);
    for (size_t k = 0; k < n; k++) {
        if (!reg->readonly && written)
            unlinkat(reg->sd->fd, r[k].name, 0);
        for (size_t c = 0; c < r[k].y.nclaims && !reg->readonly; c++)
            if (r[k].at[c] != SIZE_MAX)
                return_threads(reg, &r[k], c);
        returning_free(&r[k]);
    }
    free(r);
}
