/*
 * util.c - allocation that cannot fail quietly, and shared formatting.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void out_of_memory(void)
{
    fputs("tunerun: out of memory\n", stderr);
    exit(125);
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        out_of_memory();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        out_of_memory();
    return q;
}

char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (d == NULL)
        out_of_memory();
    return d;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    char *s;
    if (vasprintf(&s, fmt, ap) < 0)
        out_of_memory();
    return s;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

char *bitmap_list(hwloc_const_bitmap_t set)
{
    char *s = NULL;
    if (hwloc_bitmap_iszero(set))
        return xstrdup("none");
    if (hwloc_bitmap_list_asprintf(&s, set) < 0)
        out_of_memory();
    return s;
}

/*
 * A CPU or node list, in the kernel's grammar: "N" or "N-M" (N <= M),
 * comma-separated. hwloc's parser is lenient ("1 2", "1,,2" and "3-1" all
 * pass), takes "0-" for every index there is, allocates up to the highest
 * index it reads, and in 2.9 never returns from "-7": so the grammar and a
 * bound on the indexes are checked here, and hwloc parses only what passes.
 */
static const char *list_index(const char *p, unsigned long *n)
{
    if (*p < '0' || *p > '9')
        return NULL;
    for (*n = 0; *p >= '0' && *p <= '9'; p++)
        if ((*n = *n * 10 + (unsigned long)(*p - '0')) > BITMAP_MAX_INDEX)
            return NULL;
    return p;
}

bool bitmap_parse(hwloc_bitmap_t set, const char *v)
{
    if (strcmp(v, "none") == 0) {
        hwloc_bitmap_zero(set);
        return true;
    }
    for (const char *p = v;;) {
        unsigned long lo, hi;
        if ((p = list_index(p, &lo)) == NULL)
            return false;
        if (*p == '-' && ((p = list_index(p + 1, &hi)) == NULL || hi < lo))
            return false;
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return false;
    }
    return hwloc_bitmap_list_sscanf(set, v) == 0;
}

void rlim_str(char *buf, size_t n, rlim_t v)
{
    if (v == RLIM_INFINITY)
        snprintf(buf, n, "unlimited");
    else
        snprintf(buf, n, "%llu", (unsigned long long)v);
}

int read_fd_text(int fd, size_t max, char **text, size_t *len)
{
    size_t cap = 4096, got = 0;
    char *buf = xrealloc(NULL, cap);
    for (;;) {
        if (got + 1 == cap) {
            if (cap > max) {
                free(buf);
                return EFBIG;
            }
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t r = read(fd, buf + got, cap - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int error = errno;
            free(buf);
            return error;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    if (got > max) {
        free(buf);
        return EFBIG;
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return 0;
}

/*
 * open_inert_within()'s directory: open, as named (the prefix of the paths
 * that name files in it), and as its real path for kernels without
 * openat2(2).
 */
static int within_fd = -1;
static char *within_name, *within;

bool open_inert_within(const char *dir)
{
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char *real = realpath(dir, NULL);
    if (real == NULL) {
        int saved = errno;
        close(fd);
        errno = saved;
        return false;
    }
    within_fd = fd;
    within_name = xstrdup(dir);
    within = real;
    return true;
}

bool path_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 &&
           (path[n] == '/' || path[n] == '\0' || (n > 0 && dir[n - 1] == '/'));
}

/*
 * An O_PATH descriptor of path. A path in open_inert_within()'s directory
 * is resolved inside it, as if it were / (RESOLVE_IN_ROOT): no link there,
 * absolute or by "..", leads out of it, whatever the directory is (a
 * container's /proc/PID/root, whose real path is "/", included). Before
 * openat2 (Linux 5.6) the path is opened by name and kept only when its
 * real path lies under the directory's, which is the same where that is
 * not "/".
 */
static int open_path(const char *path)
{
    if (within_fd < 0 || !path_within(path, within_name))
        return open(path, O_PATH | O_CLOEXEC);
    const char *rest = path + strlen(within_name);
    while (*rest == '/')
        rest++;
    struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, within_fd, *rest ? rest : ".", &how, sizeof(how));
    if (fd >= 0 || errno != ENOSYS)
        return fd;
    char self[64], real[PATH_MAX];
    if ((fd = open(path, O_PATH | O_CLOEXEC)) < 0)
        return -1;
    snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
    ssize_t len = readlink(self, real, sizeof(real) - 1);
    if (len >= 0)
        real[len] = '\0';
    /* without /proc nothing says where it is, and under "/" nothing can: not read */
    if (len < 0 || strcmp(within, "/") == 0 || !path_within(real, within)) {
        close(fd);
        errno = EXDEV;
        return -1;
    }
    return fd;
}

int open_inert(const char *path, bool dirs)
{
    /*
     * O_PATH opens nothing a driver sees; the descriptor it gives is then
     * reopened through /proc, which opens that very inode: no name can be
     * swapped for a device between the check and the open.
     */
    int at = open_path(path);
    struct stat st;
    if (at < 0)
        return -1;
    /*
     * Once open_inert_within() was called (doctor's --root, a tree someone
     * else made), no file larger than any a host's /proc or /sys holds: a
     * sparse file of terabytes would keep a line by line reader busy for
     * hours.
     */
    if (fstat(at, &st) < 0 || !(S_ISREG(st.st_mode) || (dirs && S_ISDIR(st.st_mode))) ||
        (within_fd >= 0 && S_ISREG(st.st_mode) && (unsigned long)st.st_size > INERT_MAX)) {
        close(at);
        errno = EINVAL;
        return -1;
    }
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", at);
    int fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    int saved = errno;
    close(at);
    if (fd < 0 && saved == ENOENT && access("/proc/self", F_OK) < 0) {
        /*
         * No /proc (a chroot without it): by name again, kept only if it is
         * the inode looked at. A name swapped for a device in between is
         * opened before it is refused; with /proc it never is.
         */
        struct stat now;
        fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0 &&
            (fstat(fd, &now) < 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino)) {
            close(fd);
            fd = -1;
            saved = EINVAL;
        } else {
            saved = errno;
        }
    }
    errno = saved;
    return fd;
}

int open_regular(const char *path)
{
    return open_inert(path, false);
}

FILE *fopen_regular(const char *path)
{
    int fd = open_regular(path);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (f == NULL && fd >= 0)
        close(fd);
    return f;
}

static bool read_line_fd(int fd, char *buf, size_t n)
{
    ssize_t r;
    do
        r = read(fd, buf, n - 1);
    while (r < 0 && errno == EINTR);
    close(fd);
    if (r < 0)
        return false;
    buf[r] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return true;
}

bool read_line_file(const char *path, char *buf, size_t n)
{
    /* O_NONBLOCK and a regular file only: a FIFO must not hang a read */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return false;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return false;
    }
    return read_line_fd(fd, buf, n);
}

char *read_line_alloc(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    char *text = NULL;
    size_t len;
    if (fd < 0)
        return NULL;
    /* a sysfs value is at most a page; 64 KiB holds one of any page size */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read_fd_text(fd, 1 << 16, &text, &len) == 0)
        text[strcspn(text, "\n")] = '\0';
    close(fd);
    return text;
}

long read_long_file(const char *path)
{
    char buf[64], *end;
    if (!read_line_file(path, buf, sizeof(buf)))
        return -1;
    long v = strtol(buf, &end, 10);
    return end == buf ? -1 : v;
}

bool read_line_regular(const char *path, char *buf, size_t n)
{
    int fd = open_regular(path);
    return fd >= 0 && read_line_fd(fd, buf, n);
}

void mountinfo_unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* One directory on a way, as path_untrusted_way() wants it; a link is followed by the caller. */
static const char *dir_untrusted(const struct stat *st, uid_t uid)
{
    if (!S_ISDIR(st->st_mode))
        return "is not a directory";
    if (st->st_uid != 0 && st->st_uid != uid)
        return "belongs to another user";
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
        return "is writable by group or others";
    return NULL;
}

static const char *walk(const char *path, bool whole, uid_t uid, int depth, char *at, size_t n);

/*
 * One step of a way: a directory, or a symbolic link that is root's or
 * uid's and whose own way, to where it really leads, passes too (once:
 * `depth`). `at` names the step.
 */
static const char *step_untrusted(const char *dir, uid_t uid, int depth, char *at, size_t n)
{
    snprintf(at, n, "%s", dir);
    struct stat st;
    if (lstat(dir, &st) < 0)
        return errno == ENOENT ? "does not exist" : strerror(errno);
    if (!S_ISLNK(st.st_mode))
        return dir_untrusted(&st, uid);
    if (st.st_uid != 0 && st.st_uid != uid)
        return "is a symbolic link that belongs to another user";
    if (depth > 0)
        return "is a symbolic link on the way a symbolic link leads";
    char *real = realpath(dir, NULL);
    if (real == NULL)
        return strerror(errno);
    const char *why = walk(real, true, uid, depth + 1, at, n);
    free(real);
    return why;
}

/* The steps of `path` before its last component, and that one too with `whole`. */
static const char *walk(const char *path, bool whole, uid_t uid, int depth, char *at, size_t n)
{
    const char *why = step_untrusted(path[0] == '/' ? "/" : ".", uid, depth, at, n);
    char *p = xstrdup(path);
    size_t len = strlen(p);
    for (size_t i = 1; why == NULL && i <= len; i++) {
        if (p[i - 1] == '/' || (i < len && p[i] != '/') || (i == len && !whole))
            continue; /* not the end of a component, or the last one unasked */
        char c = p[i];
        p[i] = '\0';
        why = step_untrusted(p, uid, depth, at, n);
        p[i] = c;
    }
    free(p);
    return why;
}

/*
 * Written by hand: neither libc nor the libraries tunerun uses walks a
 * path for ownership, as sudo and OpenSSH's StrictModes each do for their
 * own files.
 */
const char *path_untrusted_way(const char *path, uid_t uid, char *at, size_t n)
{
    return walk(path, false, uid, 0, at, n);
}

/* One candidate for execve(): a regular file this process may execute. */
#define BINPRM_BUF 256 /* what binfmt_script reads of a script (BINPRM_BUF_SIZE) */

static int exec_error(const char *file, int depth)
{
    struct stat st;
    if (stat(file, &st) < 0)
        return errno == ENOTDIR ? ENOENT : errno;
    if (!S_ISREG(st.st_mode))
        return EACCES; /* what execve says of a directory or a device */
    if (faccessat(AT_FDCWD, file, X_OK, AT_EACCESS) < 0)
        return errno;
    /*
     * A script's interpreter, found as the kernel's binfmt_script finds it:
     * execve fails with ENOENT when it is missing, which only the exec
     * itself would otherwise tell, after the privileges were dropped. What
     * the kernel refuses with ENOEXEC (no interpreter named, or its name
     * cut off by the 256 bytes it reads) execvp() runs with /bin/sh, and a
     * file this user cannot read is the exec's to judge: both pass here.
     */
    int fd = open_regular(file);
    char buf[BINPRM_BUF + 1] = {0}; /* the kernel's buffer is zero past a short file */
    ssize_t got = fd >= 0 ? read(fd, buf, BINPRM_BUF) : -1;
    if (fd >= 0)
        close(fd);
    if (got < 2 || buf[0] != '#' || buf[1] != '!')
        return 0;
    char *end = memchr(buf, '\n', BINPRM_BUF), *name = buf + 2 + strspn(buf + 2, " \t");
    if (end == NULL) {
        /* no newline: the name must end (a blank, or the zeros past the file) by its last byte */
        if (name > buf + BINPRM_BUF - 1 ||
            strcspn(name, " \t") > (size_t)(buf + BINPRM_BUF - 1 - name))
            return 0;
    } else if (name >= end) {
        return 0;
    }
    name[strcspn(name, " \t\n")] = '\0';
    if (*name == '\0')
        return 0;
    /* the kernel follows at most five scripts, then says ELOOP */
    return depth >= 5 ? ELOOP : exec_error(name, depth + 1);
}

int command_error(const char *cmd, const char *path, char **found)
{
    if (found)
        *found = NULL;
    if (*cmd == '\0')
        return ENOENT;
    if (strchr(cmd, '/')) {
        int error = exec_error(cmd, 0);
        if (found && error == 0)
            *found = xstrdup(cmd);
        return error;
    }
    char *dirs = xstrdup(path ? path : "/bin:/usr/bin"), *rest = dirs, *d;
    int error = ENOENT;
    /* strsep, not strtok: an empty element means the current directory */
    while (error != 0 && (d = strsep(&rest, ":")) != NULL) {
        char *full = xasprintf("%s/%s", *d ? d : ".", cmd);
        int e = exec_error(full, 0);
        if (e == 0 && found)
            *found = full;
        else
            free(full);
        if (e == 0 || e == EACCES) { /* like execvp, a later entry may still do */
            error = e;
        } else if (e != ENOENT && e != ESTALE && e != ENODEV && e != ETIMEDOUT) {
            error = e; /* and like execvp, anything else ends the search */
            break;
        }
    }
    free(dirs);
    return error;
}

const char *boot_id(void)
{
    static char id[64];
    static int state; /* 0: not read yet, 1: read, -1: none */
    if (state == 0)
        state = read_line_file("/proc/sys/kernel/random/boot_id", id, sizeof(id)) ? 1 : -1;
    return state > 0 ? id : NULL;
}

size_t utf8_lead_len(unsigned char c)
{
    return c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
}

size_t utf8_valid(const unsigned char *p)
{
    size_t len = utf8_lead_len(p[0]);
    for (size_t k = 1; k < len; k++)
        if ((p[k] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
        return 0; /* overlong, a surrogate, beyond U+10FFFF */
    return len;
}

/*
 * The length of the UTF-8 character at s that a terminal may show as text:
 * 0 for a byte that starts none, a C1 control (U+0080..U+009F, which a
 * UTF-8 terminal may act on as it would on ESC), or a character that
 * reorders or breaks the line as shown (bidi controls, line separators).
 */
static size_t utf8_char(const unsigned char *s)
{
    size_t len = utf8_valid(s);
    if (len == 0 || (s[0] == 0xc2 && s[1] < 0xa0))
        return 0; /* not UTF-8, or C1 */
    /* what reorders or breaks the line as shown: U+061C, U+200E/F, U+2028..E, U+2066..9 */
    if (s[0] == 0xd8 && s[1] == 0x9c)
        return 0;
    if (s[0] == 0xe2 &&
        ((s[1] == 0x80 && (s[2] == 0x8e || s[2] == 0x8f || (s[2] >= 0xa8 && s[2] <= 0xae))) ||
         (s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)))
        return 0;
    return len;
}

static const char *escape(char *buf, size_t n, const char *s, size_t max, bool backslash)
{
    size_t o = 0;
    for (size_t i = 0; s[i] && o + 8 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c >= 0x80 ? utf8_char((const unsigned char *)s + i) : 1;
        if (i >= max) {
            o += (size_t)snprintf(buf + o, n - o, "...");
            break;
        }
        if (c == '\n' || c == '\t' || c == '\r' || (c == '\\' && backslash)) {
            o += (size_t)snprintf(buf + o, n - o, "\\%c",
                                  c == '\n'   ? 'n'
                                  : c == '\t' ? 't'
                                  : c == '\r' ? 'r'
                                              : '\\');
        } else if (c < 0x20 || c == 0x7f || len == 0) {
            o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
        } else if (o + len + 8 < n) {
            memcpy(buf + o, s + i, len);
            o += len;
            i += len - 1;
        } else {
            break;
        }
    }
    buf[o] = '\0';
    return buf;
}

const char *str_escaped(char *buf, size_t n, const char *s, size_t max)
{
    return escape(buf, n, s, max, true);
}

const char *str_unharmful(char *buf, size_t n, const char *s)
{
    return escape(buf, n, s, n, false);
}

const char *str_harmful(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        size_t len = c >= 0x80 ? utf8_char((const unsigned char *)s) : 1;
        if ((c < 0x20 && c != '\t') || c == 0x7f || len == 0)
            return s;
        s += len - 1;
    }
    return NULL;
}

const char *sysfs_choice(const char *text, char *buf, size_t n)
{
    const char *open = strchr(text, '['), *close = open ? strchr(open, ']') : NULL;
    if (!open || !close || (size_t)(close - open - 1) >= n)
        return NULL;
    memcpy(buf, open + 1, (size_t)(close - open - 1));
    buf[close - open - 1] = '\0';
    return buf;
}

const char *root_prefix(const char *root)
{
    return strcmp(root, "/") == 0 ? "" : root;
}

int sysfs_node_up(const char *root, const char *dir, size_t *held)
{
    char *at = xstrdup(dir), *top = xasprintf("%s/sys/devices/", root_prefix(root)), buf[32];
    size_t n = strlen(top);
    int node = -1;
    if (held)
        *held = 0;
    /*
     * This host's sysfs holds attributes, never a device a driver would
     * see opened: read them as they are. Another tree (doctor's --root) is
     * whoever made it's, and opened inertly.
     */
    bool (*read_line)(const char *, char *, size_t) =
        *root_prefix(root) ? read_line_regular : read_line_file;
    for (char *slash; node < 0 && strncmp(at, top, n) == 0 && (slash = strrchr(at, '/')) != NULL &&
                      (size_t)(slash - at) >= n;
         *slash = '\0') {
        char *file = xasprintf("%s/numa_node", at), *end;
        bool read = read_line(file, buf, sizeof(buf));
        free(file);
        if (read) {
            if (held)
                *held = strlen(at);
            long v = strtol(buf, &end, 10);
            if (end != buf && *end == '\0' && v >= 0 && (unsigned long)v <= BITMAP_MAX_INDEX)
                node = (int)v;
            else
                break; /* -1: the device is known to have none */
        }
    }
    free(at);
    free(top);
    return node;
}
