/*
 * util.h - the few helpers every module needs, written once.
 *
 * Allocation failures end tunerun with status 125: a launcher that cannot
 * allocate a few bytes cannot place anything, and must not exec half-done.
 */
#ifndef TUNERUN_UTIL_H
#define TUNERUN_UTIL_H

#include <hwloc/bitmap.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/types.h>

void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* "0-3,8" (hwloc's list format), or "none" for an empty set; caller frees. */
char *bitmap_list(hwloc_const_bitmap_t set);

/*
 * The highest CPU or node index tunerun reads from a file: Linux has at most
 * 8192 CPUs (NR_CPUS) and 1024 nodes, and a set of 8192 bits is 1 KiB.
 */
#define BITMAP_MAX_INDEX 8191UL
/* bitmap_list()'s inverse: the kernel's list grammar or "none"; no index beyond the max. */
bool bitmap_parse(hwloc_bitmap_t set, const char *list);

/* An rlimit value as text: a number or "unlimited". */
void rlim_str(char *buf, size_t n, rlim_t v);

/*
 * Read all of fd into a NUL-terminated buffer of at most `max` bytes of
 * text. Returns 0, or an errno value (EFBIG when the content exceeds max).
 */
int read_fd_text(int fd, size_t max, char **text, size_t *len);

/* mountinfo's escapes (space, tab, newline, backslash as \\ooo) decoded in place. */
void mountinfo_unescape(char *s);

/*
 * s as a message may show it: control characters (tab too) escaped as \n,
 * \t, \xHH, a backslash as \\, and every byte that is not part of a
 * UTF-8 character a terminal shows as text (C1 controls included) as \xHH,
 * so that the message stays one harmless line that says what the bytes
 * were; cut after max bytes with "...". Returns buf.
 */
const char *str_escaped(char *buf, size_t n, const char *s, size_t max);
/* A buffer that holds max bytes escaped (four each at most) and the "...". */
#define ESCAPED_SIZE(max) (4 * (max) + 16)
/*
 * The same but for backslashes, which stay as they are: what it makes
 * is unchanged by it again, so that a message whose names were escaped
 * above is not escaped twice (log.c passes every message through it).
 */
const char *str_unharmful(char *buf, size_t n, const char *s);
/*
 * The first byte of s that str_escaped() escapes, but for tab and
 * backslash: a control character, a C1 control, a character that
 * reorders or breaks the line as shown, a byte of no UTF-8 character;
 * NULL when there is none.
 */
const char *str_harmful(const char *s);

/*
 * UTF-8, decoded by hand: glibc's mbrtowc() follows the locale, and tunerun
 * runs in whatever locale its caller has, often C. utf8_lead_len() is how
 * many bytes a sequence that starts with c has (2 to 4), 0 for a byte that
 * starts none; utf8_valid() the length of the well-formed character at p,
 * 0 also for an overlong form, a surrogate or one past U+10FFFF.
 */
size_t utf8_lead_len(unsigned char c);
size_t utf8_valid(const unsigned char *p);

/*
 * The choice a sysfs file marks among those it lists ("always [madvise]
 * never" -> "madvise"), into buf, or NULL: the THP mode, and block queue
 * schedulers.
 */
const char *sysfs_choice(const char *text, char *buf, size_t n);

/*
 * root as the prefix of the paths under it: "" for "/", so that this
 * host's paths stay as the kernel names them, else root itself.
 */
const char *root_prefix(const char *root);

/*
 * The NUMA node of the device a sysfs directory belongs to: the first
 * `numa_node` on the way up from dir (the NVMe controller; the PCI
 * function of a SATA disk or of a virtio device, which has none of its
 * own), stopping above root's /sys/devices/; -1 when none says one, or the
 * nearest says -1. dir is a path under root, prefix included, with no link
 * or ".." in it. With `held`, the length of the part of dir that is the
 * directory whose numa_node was read (0 when none was).
 */
int sysfs_node_up(const char *root, const char *dir, size_t *held);

/* The first line of a small file (a sysfs or procfs value), without "\n". */
bool read_line_file(const char *path, char *buf, size_t n);
/* The same on the heap, for a line that may be long (a CPU list); NULL when unread. */
char *read_line_alloc(const char *path);
/* That line's leading number (a sysctl, oom_score_adj); -1 when there is none. */
long read_long_file(const char *path);

/* Whether path is dir or below it ("/a/b" is in "/a" and in "/a/", not in "/ab"). */
bool path_within(const char *path, const char *dir);

/*
 * A file of a tree someone else made (doctor's --root, a fixture, a path a
 * service user can change), opened for reading only when it is a regular
 * file (or, with dirs, a directory), checked on the very inode opened: a
 * link there to a device must not be opened (a watchdog starts counting, a
 * tape rewinds), nor a FIFO hang the read. Returns an fd, or -1 with errno
 * (EINVAL: something else). Without /proc the file is opened by name again
 * and kept only if it is the same inode.
 */
int open_inert(const char *path, bool dirs);
int open_regular(const char *path); /* open_inert(path, false) */
/*
 * From now on, open_inert() resolves a path under dir (as named) inside
 * dir, as if it were / (openat2's RESOLVE_IN_ROOT: no link in the tree
 * leads out of it), and opens no regular file above INERT_MAX bytes:
 * doctor's --root, a tree someone else may have made. False, with errno,
 * when dir cannot be opened.
 */
bool open_inert_within(const char *dir);
#define INERT_MAX (16UL << 20)
/* The same, as a stream. */
FILE *fopen_regular(const char *path);
/* read_line_file() through open_regular(). */
bool read_line_regular(const char *path, char *buf, size_t n);

/* This boot's id (/proc/sys/kernel/random/boot_id), read once per process; NULL if none. */
const char *boot_id(void);

/*
 * Why the way to `path` cannot be trusted, or NULL: every directory on it,
 * from / (or the current directory) down to the one holding its last
 * component, must exist, belong to root or `uid` and be writable by no one
 * else, unless it is sticky like /tmp (where no one else may replace what
 * root or `uid` put there); a symbolic link on it must belong to root or
 * `uid`, and the way to where it really leads is held to the same rule.
 * `at` gets the part of the path at fault.
 */
const char *path_untrusted_way(const char *path, uid_t uid, char *at, size_t n);

/*
 * Whether execvp() would find `cmd` and may execute it, with the effective
 * ids: 0, or the errno execvp would fail with: ENOENT when nothing is there,
 * EACCES when something is but none may be executed (no execute bit, a
 * directory). Like execvp, it looks in `path` (PATH's value) for a name
 * without a '/' (an empty element is the current directory; NULL, no PATH,
 * is /bin:/usr/bin). A
 * script's "#!" interpreter must be there and executable too (ENOENT,
 * EACCES), as the kernel would look for it. With `found`, the file it
 * would execute (malloc()ed) when it returns 0, else NULL.
 */
int command_error(const char *cmd, const char *path, char **found);

#endif
