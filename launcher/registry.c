/*
 * registry.c - claims in the state directory, kept alive by file locks.
 *
 * Liveness is asked of the kernel, never of a file. Each claim file carries
 * an open file description lock (F_OFD_SETLK, read, whole file). OFD locks,
 * like flock and unlike POSIX locks, belong to the open file: they pass
 * through fork and exec, outlive the process that took them while a child
 * holds the fd, and go when the last holder exits. A probe opens the file
 * and asks (F_OFD_GETLK) without taking anything. A claim nobody holds is
 * alive only while its pid, in the same pid namespace and boot, still has
 * the start time it was written with.
 *
 * The table, `claims`, holds one line per claim, its claim file's name
 * first, and an `ended` line for each claim pruned, naming its file and
 * where it ran:
 *
 *   claim.mysql.3f2a... profile=mysql key=... cpus=0-3 nodes=0 ... time=...
 *   ended claim.redis.77c1... profile=redis key=... cpus=4-7 ... time=...
 *
 * Launches append to it; it is written whole only when lines that no
 * longer count outnumber a quarter of the live ones. Probing a claim costs
 * an open, so a launch probes only the claims its plan depends on (see
 * registry_check()) and a few others in turn; with a thousand shared
 * services running, a launch reads their lines but probes few of them.
 *
 * A claim's own words, and its witness, are claim.c's.
 */
#include "registry.h"
#include "parse.h"
#include "procs.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOCK_NAME   "lock"
#define TABLE_NAME  "claims"
#define TABLE_MAX   (4u << 20) /* ten thousand lines: a thousand services and their past */
#define CLAIM_MAX   (64u << 10)
#define ENDED_KEPT  256 /* launch keys whose last placement is remembered */
#define CHECK_ALL   64  /* up to this many claims, a launch probes them all */
#define CHECK_BATCH 16  /* past it, this many others in turn, beyond what it depends on */

static const char table_header[] =
    "# tunerun claims, one line per service; each lives while its claim file is held\n";
static const char claim_header[] =
    "# a service launched by tunerun; its claim lives while a process holds this file\n";

/*
 * Call fn on each whole line of the file at fd that is not a comment. A
 * last line without its newline is a write that was cut short: left out,
 * and counted in *torn. A line with a NUL in it is no line tunerun wrote:
 * left out, and counted in *broken (its start may read as a claim with
 * fields missing). The file is read a piece at a time: a table of a
 * thousand claims is some 240 KiB, and a buffer that held it whole would
 * cost a page fault for each of its pages, more than the parsing. 0, or
 * an errno (EFBIG past max bytes); fn may have seen some lines by then.
 */
static int each_line(int fd, size_t max, size_t *torn, size_t *broken,
                     void (*fn)(char *line, void *arg), void *arg)
{
    size_t cap = 16384, have = 0, total = 0;
    size_t scanned = 0; /* of what was carried over: no newline in it */
    char *buf = xrealloc(NULL, cap);
    int error = 0;
    for (;;) {
        if (have + 1 == cap) /* a line longer than the buffer */
            buf = xrealloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + have, cap - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            error = r < 0 ? errno : 0;
            if (r == 0 && have)
                (*torn)++;
            break;
        }
        if ((total += (size_t)r) > max) {
            error = EFBIG;
            break;
        }
        have += (size_t)r;
        char *p = buf, *from = buf + scanned, *nl;
        while ((nl = memchr(from, '\n', have - (size_t)(from - buf))) != NULL) {
            if (memchr(p, '\0', (size_t)(nl - p)))
                (*broken)++;
            else if (*p != '#' && p != nl) {
                *nl = '\0';
                fn(p, arg);
            }
            p = from = nl + 1;
        }
        have -= (size_t)(p - buf);
        memmove(buf, p, have);
        scanned = have;
    }
    free(buf);
    return error;
}

enum held { HELD, NOT_HELD, GONE };

/* The whole file, for the claim's holders (F_RDLCK) or a probe (F_WRLCK). */
static struct flock whole_file(short type)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET};
    return fl;
}

/*
 * Three syscalls and no trust check: nothing is read from the file (the
 * table says what the claim is), O_NOFOLLOW refuses a planted symlink and
 * O_NONBLOCK a FIFO.
 */
static enum held probe(const struct registry *r, const char *file)
{
    int fd = openat(r->sd->fd, file, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? GONE : NOT_HELD;
    struct flock fl = whole_file(F_WRLCK);
    bool held = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    close(fd);
    return held ? HELD : NOT_HELD;
}

bool registry_held(const struct registry *r, const struct claim *c)
{
    return probe(r, c->file) == HELD;
}

bool registry_pid_alive(const struct registry *r, const struct claim *c)
{
    return claim_pid_alive(&r->self, c);
}

void registry_holders(const struct registry *r, const struct claim *claims, size_t n,
                      bool witness_too, struct pid_list *out)
{
    struct file_id *ids = xcalloc(n ? n : 1, sizeof(*ids));
    long *witness = xcalloc(n ? n : 1, sizeof(*witness));
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (fstatat(r->sd->fd, claims[i].file, &st, AT_SYMLINK_NOFOLLOW) == 0)
            ids[i] = (struct file_id){st.st_ino};
        witness[i] = claim_pid_alive(&r->self, &claims[i]) ? claims[i].pid : 0;
    }
    /* one pass over /proc for all of them */
    procs_holding(ids, n, procs_mount_dev(r->sd->fd), witness, witness_too, out);
    free(ids);
    free(witness);
    for (size_t i = 0; i < n; i++) {
        /* never this process: a launch placed already, or a ps run from inside a service */
        for (size_t k = 0; k < out[i].n; k++)
            if (out[i].v[k] == (long)getpid())
                out[i].v[k--] = out[i].v[--out[i].n];
    }
}

static void pend(struct registry *r, const char *line)
{
    r->lines++;
    char *all = xasprintf("%s%s", r->pending ? r->pending : "", line);
    free(r->pending);
    r->pending = all;
}

/*
 * The newest placement per key. Only the newest ENDED_KEPT are written
 * back, so no more than twice that are kept while reading: a table of a
 * hundred thousand ended lines (written by hand, or by a root of a
 * container sharing the directory) costs a launch that many short
 * searches, not a hundred thousand long ones under the lock.
 */
static void note_ended(struct registry *r, struct claim *c)
{
    if (r->nended == 2 * ENDED_KEPT) {
        for (size_t i = 0; i < ENDED_KEPT; i++)
            claim_free(&r->ended[i]);
        memmove(r->ended, r->ended + ENDED_KEPT, ENDED_KEPT * sizeof(*r->ended));
        r->nended = ENDED_KEPT;
    }
    for (size_t i = 0; i < r->nended; i++) {
        if (strcmp(r->ended[i].key, c->key) == 0) {
            claim_free(&r->ended[i]);
            memmove(&r->ended[i], &r->ended[i + 1], (r->nended - i - 1) * sizeof(*r->ended));
            r->nended--;
            break;
        }
    }
    r->ended = xrealloc(r->ended, (r->nended + 1) * sizeof(*r->ended));
    r->ended[r->nended++] = *c;
    memset(c, 0, sizeof(*c));
}

/* Room for one more claim: the array doubles at each power of two. */
static void claims_grow(struct registry *r)
{
    if ((r->nclaims & (r->nclaims - 1)) == 0)
        r->claims = xrealloc(r->claims, (r->nclaims ? 2 * r->nclaims : 1) * sizeof(*r->claims));
}

static void keep(struct registry *r, struct claim *c)
{
    claims_grow(r);
    r->claims[r->nclaims++] = *c;
    memset(c, 0, sizeof(*c));
}

/*
 * Whether claim c is alive; if not, prune it (a writer only): remove its
 * file and add an `ended` line that names it, so that later launches pass
 * over its line without probing again, and a restart of it finds where it
 * ran. The claim itself stays for the caller to drop.
 */
static bool alive_or_prune(struct registry *r, struct claim *c)
{
    enum held h = probe(r, c->file);
    if (h == HELD || (h == NOT_HELD && claim_pid_alive(&r->self, c)))
        return true;
    /* what the service held until now is the caller's to hand back (yield_return_ended()) */
    r->dead = xrealloc(r->dead, (r->ndead + 1) * sizeof(*r->dead));
    r->dead[r->ndead++] = xstrdup(c->file);
    if (r->readonly) {
        if (h != GONE && c->key[0]) { /* in memory only: a plan shows the restart's placement */
            struct claim copy;
            claim_copy(&copy, c);
            note_ended(r, &copy);
        }
        return false;
    }
    if (h != GONE) {
        /* unlinkat never follows a symlink: a planted one is removed, not its target */
        unlinkat(r->sd->fd, c->file, 0);
        r->pruned++;
    } else {
        c->key[0] = '\0'; /* its launch never ran (or failed): no placement to go back to */
    }
    char *line = claim_format_ended(c);
    pend(r, line);
    free(line);
    if (c->key[0]) {
        struct claim copy;
        claim_copy(&copy, c);
        note_ended(r, &copy);
    }
    return false;
}

void registry_check(struct registry *r, bool (*depends)(const struct claim *, void *), void *arg)
{
    if (r->readonly && r->checked)
        return; /* registry_open() probed them all */
    size_t n = r->nclaims, batch = 0, start = n ? state_random() % n : 0, kept = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = (start + k) % n;
        struct claim *c = &r->claims[i];
        bool check = n <= CHECK_ALL || depends == NULL || depends(c, arg);
        if (!check && batch < CHECK_BATCH) {
            check = true; /* one of a few others, in turn: the stale go eventually */
            batch++;
        }
        if (check && !alive_or_prune(r, c)) {
            claim_free(c);
            c->file = NULL; /* dropped below */
        }
    }
    for (size_t i = 0; i < n; i++)
        if (r->claims[i].file)
            r->claims[kept++] = r->claims[i];
    r->nclaims = kept;
}

/* ---- the table ----------------------------------------------------------- */

static bool write_table(struct registry *r, const char *extra, struct err *e)
{
    size_t first = r->nended > ENDED_KEPT ? r->nended - ENDED_KEPT : 0;
    size_t n = 1 + r->nclaims + (r->nended - first) + (extra != NULL);
    const char **bufs = xcalloc(n, sizeof(char *));
    size_t *lens = xcalloc(n, sizeof(size_t)), k = 0;
    bufs[k++] = table_header;
    for (size_t i = first; i < r->nended; i++)
        bufs[k++] = claim_format_ended(&r->ended[i]);
    for (size_t i = 0; i < r->nclaims; i++)
        bufs[k++] = claim_format(&r->claims[i], r->claims[i].file);
    if (extra)
        bufs[k++] = extra;
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(bufs[i]);
    bool ok = state_write(r->sd, TABLE_NAME, bufs, lens, n, e);
    for (size_t i = 1; i < n - (extra != NULL); i++)
        free((char *)bufs[i]);
    free(bufs);
    free(lens);
    if (ok) {
        r->rewrite = false;
        r->lines = n - 1; /* the header is no line of the table's */
        free(r->pending);
        r->pending = NULL;
    }
    return ok;
}

/* Append lines. Under the lock nobody else writes; a reader without it skips a torn line. */
static bool append_table(struct registry *r, const char *lines, struct err *e)
{
    int fd = openat(r->sd->fd, TABLE_NAME,
                    O_WRONLY | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        err_set(e, "%s/%s: %s", r->sd->path, TABLE_NAME, strerror(errno));
        return false;
    }
    const char *why = state_distrust(fd);
    size_t len = strlen(lines);
    ssize_t w = why ? -1 : write(fd, lines, len);
    int error = errno;
    close(fd);
    if (why)
        err_set(e, "%s/%s %s; refusing it", r->sd->path, TABLE_NAME, why);
    else if (w != (ssize_t)len)
        err_set(e, "cannot write %s/%s: %s", r->sd->path, TABLE_NAME,
                w < 0 ? strerror(error) : "short write");
    if (why == NULL && w == (ssize_t)len) {
        free(r->pending);
        r->pending = NULL;
        return true;
    }
    return false;
}

/* What this launch has to add (pruned claims' placements, then `extra`), appended or whole. */
static bool flush_table(struct registry *r, const char *extra, struct err *e)
{
    size_t live = r->nclaims + (r->nended < ENDED_KEPT ? r->nended : ENDED_KEPT);
    if (r->rewrite || r->lines > live + 32 + r->nclaims / 4 ||
        faccessat(r->sd->fd, TABLE_NAME, F_OK, AT_SYMLINK_NOFOLLOW) != 0)
        return write_table(r, extra, e);
    char *lines = xasprintf("%s%s", r->pending ? r->pending : "", extra ? extra : "");
    bool ok = *lines == '\0' || append_table(r, lines, e);
    free(lines);
    return ok;
}

struct table_read {
    struct registry *r;
    char **gone; /* claim files that `ended` lines say are gone */
    size_t ngone, gone_cap;
    bool bad;
};

static void on_table_line(char *line, void *arg)
{
    struct table_read *tr = arg;
    struct claim c;
    bool ended;
    tr->r->lines++;
    claim_init(&c);
    if (!claim_parse(line, &c, &ended)) {
        tr->bad = true;
        claim_free(&c);
    } else if (ended) {
        if (tr->ngone == tr->gone_cap)
            tr->gone = xrealloc(tr->gone, (tr->gone_cap = 2 * tr->gone_cap + 16) * sizeof(char *));
        tr->gone[tr->ngone++] = xstrdup(c.file);
        if (c.key[0])
            note_ended(tr->r, &c);
        else
            claim_free(&c);
    } else {
        keep(tr->r, &c);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void drop_all(struct registry *r)
{
    for (size_t i = 0; i < r->nclaims; i++)
        claim_free(&r->claims[i]);
    for (size_t i = 0; i < r->nended; i++)
        claim_free(&r->ended[i]);
    r->nclaims = r->nended = 0;
}

/* Read the table; false when it must be rebuilt (missing, untrusted, unreadable). */
static bool read_table(struct registry *r)
{
    struct err e;
    int fd = state_open_read(r->sd, TABLE_NAME, &e);
    if (fd < 0) {
        if (errno != ENOENT)
            log_warn("registry: %s; rebuilding it from the claim files", e.msg);
        return false;
    }
    size_t torn = 0, broken = 0;
    struct table_read tr = {.r = r};
    int error = each_line(fd, TABLE_MAX, &torn, &broken, on_table_line, &tr);
    close(fd);
    tr.bad = tr.bad || broken;
    if (error) {
        log_warn("registry: cannot read %s/%s: %s; rebuilding it from the claim files", r->sd->path,
                 TABLE_NAME, strerror(error));
        drop_all(r); /* what it read before is not trusted either */
        r->lines = 0;
    } else if (tr.bad) {
        log_warn("registry: %s/%s holds a line that is not a claim; rebuilding it from the "
                 "claim files",
                 r->sd->path, TABLE_NAME);
        drop_all(r);
    } else if (tr.ngone) {
        /* claims whose `ended` line follows: gone already, never probed again */
        qsort(tr.gone, tr.ngone, sizeof(char *), cmp_str);
        size_t kept = 0;
        for (size_t i = 0; i < r->nclaims; i++) {
            char *name = r->claims[i].file;
            if (bsearch(&name, tr.gone, tr.ngone, sizeof(char *), cmp_str))
                claim_free(&r->claims[i]);
            else
                r->claims[kept++] = r->claims[i];
        }
        r->nclaims = kept;
    }
    for (size_t i = 0; i < tr.ngone; i++)
        free(tr.gone[i]);
    free(tr.gone);
    if (torn)
        r->rewrite = true; /* a launch was killed mid-append: write the table whole */
    return !error && !tr.bad;
}

/* The claim files themselves, when there is no table to trust. */
static void rebuild(struct registry *r)
{
    int dfd = openat(r->sd->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (dir == NULL) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    struct dirent *d;
    while ((d = readdir(dir)) != NULL) {
        if (strncmp(d->d_name, CLAIM_PREFIX, strlen(CLAIM_PREFIX)) != 0)
            continue;
        struct err e;
        struct claim c;
        bool ended = false;
        claim_init(&c);
        int fd = state_open_read(r->sd, d->d_name, &e);
        char *text = NULL, *save = NULL;
        size_t len;
        if (fd >= 0 && read_fd_text(fd, CLAIM_MAX, &text, &len) == 0) {
            char *p = strtok_r(text, "\n", &save);
            while (p && *p == '#')
                p = strtok_r(NULL, "\n", &save);
            if (p && (!claim_parse(p, &c, &ended) || ended)) {
                free(c.file);
                c.file = NULL;
            }
        }
        if (fd >= 0)
            close(fd);
        free(text);
        if (c.file == NULL || strcmp(c.file, d->d_name) != 0) {
            /* not a claim we can read (or not ours): kept if held, and said; else it goes */
            claim_free(&c);
            if (probe(r, d->d_name) == HELD)
                log_warn("registry: %s/%s is held but is not a claim tunerun can read; "
                         "ignoring it",
                         r->sd->path, d->d_name);
            else if (!r->readonly)
                unlinkat(r->sd->fd, d->d_name, 0);
            continue;
        }
        keep(r, &c); /* probed by registry_check(), like the table's */
    }
    closedir(dir);
    r->rewrite = true;
}

/* Wakes a blocked lock wait once, so that it can say what it waits for. */
static void woken(int sig)
{
    (void)sig;
}

/*
 * The lock, waited for as long as it takes: launches decide one at a
 * time. A wait of LOCK_PATIENCE seconds says so (a launch that hangs
 * otherwise tells an operator nothing), from a SIGALRM of a timer of its
 * own that no exec inherits; the caller's SIGALRM handling comes back.
 * SIGALRM is unblocked for the wait: blocked, as a caller may leave it,
 * the timer's signal would stay pending, say nothing, and (before Linux
 * 6.13 removed a deleted timer's queued signal) reach the service, whose
 * default action for it is to end. One the caller has pending already
 * stays its own: then there is no timer.
 */
#define LOCK_PATIENCE 5
static int lock_patiently(const struct registry *r, struct flock *fl)
{
    if (fcntl(r->lock_fd, F_OFD_SETLK, fl) == 0)
        return 0;
    if (errno != EAGAIN && errno != EACCES)
        return -1;
    struct sigaction wake = {.sa_handler = woken}, old; /* no SA_RESTART: the wait ends */
    sigemptyset(&wake.sa_mask);
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
    struct itimerspec when = {.it_value = {LOCK_PATIENCE, 0}};
    timer_t timer;
    sigset_t alarm, mask, pending;
    sigemptyset(&alarm);
    sigaddset(&alarm, SIGALRM);
    bool theirs = sigpending(&pending) == 0 && sigismember(&pending, SIGALRM) == 1;
    bool handled = !theirs && sigaction(SIGALRM, &wake, &old) == 0;
    bool unblocked = handled && sigprocmask(SIG_UNBLOCK, &alarm, &mask) == 0;
    bool armed = unblocked && timer_create(CLOCK_MONOTONIC, &ev, &timer) == 0;
    if (armed && timer_settime(timer, 0, &when, NULL) < 0) {
        timer_delete(timer);
        armed = false;
    }
    int rc;
    bool said = false;
    while ((rc = fcntl(r->lock_fd, F_OFD_SETLKW, fl)) < 0 && errno == EINTR) {
        if (armed && !said)
            log_warn("registry: waiting for %s/%s, which another launch holds, or a process "
                     "that has it open (fuser -v %s/%s names it)",
                     r->sd->path, LOCK_NAME, r->sd->path, LOCK_NAME);
        said = true;
    }
    int error = errno;
    if (armed)
        timer_delete(timer);
    if (unblocked)
        sigprocmask(SIG_SETMASK, &mask, NULL);
    if (handled)
        sigaction(SIGALRM, &old, NULL);
    errno = error;
    return rc;
}

bool registry_open(struct registry *r, const struct state_dir *sd, enum registry_mode mode,
                   const struct witness *self, struct err *e)
{
    memset(r, 0, sizeof(*r));
    r->sd = sd;
    r->readonly = mode == REGISTRY_READ;
    int flags = r->readonly ? O_RDONLY : O_RDWR | O_CREAT;
    r->lock_fd =
        openat(sd->fd, LOCK_NAME, flags | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0600);
    if (r->lock_fd < 0 && r->readonly && errno == ENOENT)
        return true; /* nothing was ever launched here */
    if (r->lock_fd < 0) {
        err_set(e, "%s/%s: %s", sd->path, LOCK_NAME,
                errno == ELOOP ? "is a symbolic link; refusing it" : strerror(errno));
        return false;
    }
    const char *why = state_distrust(r->lock_fd);
    if (why) {
        err_set(e, "%s/%s %s; refusing it", sd->path, LOCK_NAME, why);
        close(r->lock_fd);
        r->lock_fd = -1;
        return false;
    }
    /* One an older tunerun made readable: another user could lock it and stall every launch. */
    struct stat st;
    if (!r->readonly && fstat(r->lock_fd, &st) == 0 && (st.st_mode & 077))
        fchmod(r->lock_fd, 0600);
    struct flock whole = whole_file(r->readonly ? F_RDLCK : F_WRLCK);
    if (lock_patiently(r, &whole) < 0) {
        err_set(e, "cannot lock %s/%s: %s", sd->path, LOCK_NAME, strerror(errno));
        close(r->lock_fd);
        r->lock_fd = -1;
        return false;
    }
    if (self)
        r->self = *self;
    else
        registry_witness(&r->self);
    if (!read_table(r))
        rebuild(r);
    if (r->readonly) {
        registry_check(r, NULL, NULL);
        r->checked = true;
    }
    return true;
}

/* Write the claim file: our record after a comment; the fd stays open and locked. */
static int create_claim_file(struct registry *r, const char *name, const char *line, struct err *e)
{
    /* Not close-on-exec: the command inherits it, and with it the claim. */
    int fd = openat(r->sd->fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, 0600);
    if (fd < 0) {
        err_set(e, "cannot create %s/%s: %s", r->sd->path, name, strerror(errno));
        return -1;
    }
    /*
     * The service keeps a read-only descriptor: one that may have dropped
     * its privileges must not be able to rewrite what tunerun reads back.
     */
    struct flock fl = whole_file(F_RDLCK);
    int ro = -1;
    if (dprintf(fd, "%s%s", claim_header, line) < 0 ||
        (ro = openat(r->sd->fd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY)) < 0 ||
        fcntl(ro, F_OFD_SETLK, &fl) < 0) {
        err_set(e, "cannot write %s/%s: %s", r->sd->path, name, strerror(errno));
        unlinkat(r->sd->fd, name, 0);
        close(fd);
        if (ro >= 0)
            close(ro);
        return -1;
    }
    close(fd);
    return ro;
}

/*
 * Take back the line that flush_table() just ended the table with, when
 * the table cannot be written again without it: a full disk refuses the
 * new file a rewrite needs, but never a shorter file. Appended or written
 * whole, the line is the table's last bytes; anything else there is left
 * as it is.
 */
static void cut_line(struct registry *r, const char *line)
{
    size_t len = strlen(line);
    int fd = openat(r->sd->fd, TABLE_NAME, O_RDWR | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    char *tail = xcalloc(1, len + 1);
    if (fd >= 0 && state_distrust(fd) == NULL && fstat(fd, &st) == 0 && (size_t)st.st_size >= len &&
        pread(fd, tail, len, st.st_size - (off_t)len) == (ssize_t)len &&
        memcmp(tail, line, len) == 0)
        (void)!ftruncate(fd, st.st_size - (off_t)len);
    free(tail);
    if (fd >= 0)
        close(fd);
}

int registry_claim(struct registry *r, const struct claim *c, char *name, size_t n, struct err *e)
{
    snprintf(name, n, CLAIM_PREFIX "%s.%016llx", c->profile, state_random());
    char *line = claim_format(c, name);
    /*
     * The table first: a launch killed between the two leaves a line whose
     * file is missing, which the next reader passes over; the other order
     * would leave a file that no table names.
     */
    bool ok = flush_table(r, line, e);
    int fd = ok ? create_claim_file(r, name, line, e) : -1;
    r->told = fd < 0; /* the caller says why; registry_release() must not say it again */
    if (ok && fd < 0) {
        struct err ignored;
        if (!write_table(r, NULL, &ignored))
            cut_line(r, line);
    }
    free(line);
    if (fd >= 0) {
        /* one of the live claims now, for a rewrite before the lock goes */
        claims_grow(r);
        claim_copy(&r->claims[r->nclaims], c);
        free(r->claims[r->nclaims].file);
        r->claims[r->nclaims++].file = xstrdup(name);
    }
    return fd;
}

void registry_drop(struct registry *r, const char *name, int fd)
{
    for (size_t i = 0; i < r->nclaims; i++) {
        if (strcmp(r->claims[i].file, name) == 0) {
            claim_free(&r->claims[i]);
            r->claims[i] = r->claims[--r->nclaims];
            break;
        }
    }
    unlinkat(r->sd->fd, name, 0);
    if (fd >= 0)
        close(fd);
    if (r->lock_fd >= 0) {
        struct err ignored;
        write_table(r, NULL, &ignored); /* without its line; else the next launch passes over it */
    }
}

bool registry_update(struct registry *r, size_t i, hwloc_const_bitmap_t cpus,
                     hwloc_const_bitmap_t nodes, struct err *e)
{
    struct claim *c = &r->claims[i];
    hwloc_bitmap_t old_cpus = hwloc_bitmap_dup(c->cpus), old_nodes = hwloc_bitmap_dup(c->nodes);
    hwloc_bitmap_copy(c->cpus, cpus);
    hwloc_bitmap_copy(c->nodes, nodes);
    /* Its file too, or a rebuild would restore the CPUs it gave up. */
    int fd = openat(r->sd->fd, c->file, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    const char *why = fd < 0 ? strerror(errno) : state_distrust(fd);
    char *line = claim_format(c, c->file);
    char *text = xasprintf("%s%s", claim_header, line);
    size_t len = strlen(text);
    /* over the old text, then cut: a crash between leaves a whole line, never an empty file */
    bool ok =
        why == NULL && pwrite(fd, text, len, 0) == (ssize_t)len && ftruncate(fd, (off_t)len) == 0;
    free(text);
    if (!ok)
        err_set(e, "cannot update %s/%s: %s", r->sd->path, c->file, why ? why : strerror(errno));
    free(line);
    if (fd >= 0)
        close(fd);
    if (ok) {
        r->rewrite = true;
    } else { /* the claim stays as its file says: the table must not say otherwise */
        hwloc_bitmap_copy(c->cpus, old_cpus);
        hwloc_bitmap_copy(c->nodes, old_nodes);
    }
    hwloc_bitmap_free(old_cpus);
    hwloc_bitmap_free(old_nodes);
    return ok;
}

const struct claim *registry_previous(struct registry *r, const char *key)
{
    for (size_t i = 0; i < r->nended; i++)
        if (strcmp(r->ended[i].key, key) == 0)
            return &r->ended[i];
    return NULL;
}

void registry_disown(const struct state_dir *sd)
{
    struct stat dir;
    DIR *fds = opendir("/proc/self/fd");
    if (fds == NULL || fstat(sd->fd, &dir) < 0) {
        if (fds)
            closedir(fds);
        return;
    }
    struct dirent *d;
    while ((d = readdir(fds)) != NULL) {
        char *end, link[64], target[4096];
        long fd = strtol(d->d_name, &end, 10);
        struct stat st, named;
        if (*end || end == d->d_name || fd == dirfd(fds) || fd == sd->fd ||
            fstat((int)fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != dir.st_dev)
            continue;
        snprintf(link, sizeof(link), "/proc/self/fd/%ld", fd);
        ssize_t len = readlink(link, target, sizeof(target) - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        const char *base = strrchr(target, '/');
        base = base ? base + 1 : target;
        if (strncmp(base, CLAIM_PREFIX, strlen(CLAIM_PREFIX)) == 0 &&
            fstatat(sd->fd, base, &named, AT_SYMLINK_NOFOLLOW) == 0 && named.st_ino == st.st_ino)
            close((int)fd); /* another service's claim, not ours to keep alive */
    }
    closedir(fds);
}

bool registry_flush(struct registry *r, struct err *e)
{
    return r->lock_fd < 0 || r->readonly || !(r->pending || r->rewrite) || flush_table(r, NULL, e);
}

void registry_release(struct registry *r)
{
    struct err e;
    if (!registry_flush(r, &e) && !r->told)
        log_warn("registry: %s", e.msg);
    if (r->lock_fd >= 0)
        close(r->lock_fd);
    r->lock_fd = -1;
}

void registry_close(struct registry *r)
{
    registry_release(r);
    for (size_t i = 0; i < r->nclaims; i++)
        claim_free(&r->claims[i]);
    for (size_t i = 0; i < r->nended; i++)
        claim_free(&r->ended[i]);
    for (size_t i = 0; i < r->ndead; i++)
        free(r->dead[i]);
    free(r->claims);
    free(r->ended);
    free(r->pending);
    free(r->dead);
    r->claims = NULL;
    r->ended = NULL;
    r->pending = NULL;
    r->dead = NULL;
    r->nclaims = r->nended = r->ndead = 0;
}
