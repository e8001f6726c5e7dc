/*
 * profile.c - INI profile -> struct profile.
 *
 * Loading happens in two passes. First every file is read with inih into a
 * flat list of entries (section, key, value, file, line), includes first,
 * so that a later entry overrides an earlier one. Then each entry is
 * applied through a table of keys, each with its own strict parser. The
 * table is the single list of what a profile may say: unknown sections,
 * unknown keys and bad values are errors that name file:line.
 *
 * inih is built by Debian without INI_HANDLER_LINENO, so we feed it through
 * ini_parse_stream() with a reader that counts lines itself; the count is
 * the line of the key inih is handing us (it would join no continuation
 * line: the reader refuses them).
 */
#include "profile.h"
#include "parse.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROFILE_MAX_BYTES (256 * 1024) /* a profile is a page of text, not a data file */
#define INCLUDE_DEPTH_MAX 16

const char *const profile_env_vars[] = {"cpus", "ncpus", "nodes", "nnodes", "node_mem", NULL};

static const struct {
    const char *name;
    int resource;
} rlimits[] = {
    {"as", RLIMIT_AS},           {"core", RLIMIT_CORE},         {"cpu", RLIMIT_CPU},
    {"data", RLIMIT_DATA},       {"fsize", RLIMIT_FSIZE},       {"locks", RLIMIT_LOCKS},
    {"memlock", RLIMIT_MEMLOCK}, {"msgqueue", RLIMIT_MSGQUEUE}, {"nice", RLIMIT_NICE},
    {"nofile", RLIMIT_NOFILE},   {"nproc", RLIMIT_NPROC},       {"rss", RLIMIT_RSS},
    {"rtprio", RLIMIT_RTPRIO},   {"rttime", RLIMIT_RTTIME},     {"sigpending", RLIMIT_SIGPENDING},
    {"stack", RLIMIT_STACK},
};

const char *rlimit_name(int resource)
{
    for (size_t i = 0; i < sizeof(rlimits) / sizeof(rlimits[0]); i++)
        if (rlimits[i].resource == resource)
            return rlimits[i].name;
    return "?";
}

char *rlimit_raise_fix(int resource, rlim_t soft, rlim_t hard)
{
    char s[24], h[24], unit[24];
    rlim_str(s, sizeof(s), soft);
    rlim_str(h, sizeof(h), hard);
    const char *name = rlimit_name(resource);
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof(unit); i++) /* systemd's Limit*= name it in capitals */
        unit[i] = (char)toupper((unsigned char)name[i]);
    unit[i] = '\0';
    return xasprintf("raise it where tunerun starts: Limit%s=%s:%s in the unit, or docker run "
                     "--ulimit %s=%s:%s",
                     unit, s, h, name, s, h);
}

const char *mem_mode_name(enum mem_mode m)
{
    static const char *const names[] = {"local", "bind", "preferred", "interleave", "auto"};
    return names[m];
}

const char *thp_mode_name(enum thp_mode m)
{
    static const char *const names[] = {"system", "madvise", "never"};
    return names[m];
}

/* ---- the raw entry list ------------------------------------------------ */

struct entry {
    char *section, *key, *value;
    struct origin at;
};

struct entries {
    struct entry *v;
    size_t n, cap;
};

static void entries_add(struct entries *es, const char *section, const char *key, const char *value,
                        struct origin at)
{
    if (es->n == es->cap) {
        es->cap = es->cap ? es->cap * 2 : 32;
        es->v = xrealloc(es->v, es->cap * sizeof(*es->v));
    }
    es->v[es->n++] = (struct entry){xstrdup(section), xstrdup(key), xstrdup(value), at};
}

static void entries_free(struct entries *es)
{
    for (size_t i = 0; i < es->n; i++) {
        free(es->v[i].section);
        free(es->v[i].key);
        free(es->v[i].value);
    }
    free(es->v);
}

/* Interned file names: origins point into p->files, freed with the profile. */
static const char *intern_file(struct profile *p, const char *path)
{
    for (size_t i = 0; i < p->nfiles; i++)
        if (strcmp(p->files[i], path) == 0)
            return p->files[i];
    p->files = xrealloc(p->files, (p->nfiles + 1) * sizeof(*p->files));
    p->files[p->nfiles] = xstrdup(path);
    return p->files[p->nfiles++];
}

/* Interned include chains, the same way (struct origin's via). */
static const char *intern_via(struct profile *p, char *via)
{
    for (size_t i = 0; i < p->nvias; i++)
        if (strcmp(p->vias[i], via) == 0) {
            free(via);
            return p->vias[i];
        }
    p->vias = xrealloc(p->vias, (p->nvias + 1) * sizeof(*p->vias));
    p->vias[p->nvias] = via;
    return p->vias[p->nvias++];
}

/* ---- text in values and in messages ------------------------------------ */

/* The longest line inih reads whole: its buffer also holds the newline and the NUL. */
#define LINE_MAX_CHARS (INI_MAX_LINE - 2)

/*
 * Why a value with str_harmful()'s byte at cc is not text: tab is, but a
 * newline (from --set) or an escape sequence, a C1 control or a bidi
 * control would break the one-line messages and plans that print the
 * value, act on the terminal, or reorder what it shows.
 */
static const char *control_why(const char *cc)
{
    static char buf[160];
    unsigned char c = (unsigned char)*cc;
    char shown[20] = "";
    if (c == '\n')
        return "a newline in the value: a value is one line of text";
    if (c < 0x80) {
        snprintf(buf, sizeof(buf),
                 "a control character (\\x%02x) in the value: a value is text, without control "
                 "characters",
                 c);
        return buf;
    }
    /* the character's bytes, as far as they are one */
    size_t len = utf8_lead_len(c) ? utf8_lead_len(c) : 1;
    for (size_t i = 0; i < len && (i == 0 || ((unsigned char)cc[i] & 0xc0) == 0x80); i++)
        snprintf(shown + 4 * i, sizeof(shown) - 4 * i, "\\x%02x", (unsigned char)cc[i]);
    snprintf(buf, sizeof(buf),
             "'%s' in the value: a value is UTF-8 text, without control characters or characters "
             "that reorder the line",
             shown);
    return buf;
}

/* ---- reading one file with inih ---------------------------------------- */

static const char *const sections[] = {"profile", "placement", "memory",   "limits",
                                       "env",     "java",      "security", NULL};
#define KNOWN_SECTIONS "profile, placement, memory, limits, env, java, security"

static void unknown_section(struct err *e, struct origin at, const char *name)
{
    char shown[ESCAPED_SIZE(32)];
    err_set(e, "%s%s:%d: unknown section [%s] (known: " KNOWN_SECTIONS ")", at.via ? at.via : "",
            at.file, at.line, str_escaped(shown, sizeof(shown), name, 32));
}

static bool known_section(const char *name, size_t len)
{
    for (size_t i = 0; sections[i]; i++)
        if (strlen(sections[i]) == len && strncmp(sections[i], name, len) == 0)
            return true;
    return false;
}

struct reader {
    const char *pos;   /* next unread byte of the text */
    int line;          /* line number of the text last handed to inih */
    int long_line;     /* first line longer than inih's buffer, 0 if none */
    int bad_section;   /* first line with an unknown [section], 0 if none */
    char bad_name[32]; /* its name */
    int odd_line;      /* first line inih would read other than as written, 0 if none */
    const char *odd_why;
    bool after_key; /* inih's: a key was read since the last section header */
};

static char *reader_next(char *buf, int size, void *stream)
{
    struct reader *r = stream;
    if (*r->pos == '\0')
        return NULL;
    const char *nl = strchr(r->pos, '\n');
    size_t chars = nl ? (size_t)(nl - r->pos) : strlen(r->pos);
    /* a \r ending the line is part of its end (\r\n): inih strips it as white space */
    if (chars > 0 && r->pos[chars - 1] == '\r')
        chars--;
    r->line++;
    /* The limit counts characters, not the line's end: a last line without one is held to it too.
     */
    if (chars > LINE_MAX_CHARS && r->long_line == 0)
        r->long_line = r->line;
    /* inih would split a longer line and parse its tail as a new line: refused above anyway */
    size_t n = chars < (size_t)size - 2 ? chars : (size_t)size - 2;
    memcpy(buf, r->pos, n);
    if (nl)
        buf[n++] = '\n';
    buf[n] = '\0';
    /* a carriage return ends nothing for inih: a file of old Mac line ends is one long line */
    if (memchr(r->pos, '\r', chars) && r->odd_line == 0) {
        r->odd_line = r->line;
        r->odd_why = "a carriage return inside a line: lines end with a newline (\\n or \\r\\n)";
    }
    r->pos = nl ? nl + 1 : r->pos + strlen(r->pos);
    /* where inih reads the line from: past a byte order mark on the first, then white space */
    const char *open = buf;
    if (r->line == 1 && strncmp(open, "\xef\xbb\xbf", 3) == 0)
        open += 3;
    while (isspace((unsigned char)*open))
        open++;
    bool text = *open != '\0' && *open != ';' && *open != '#';
    /*
     * An indented line after a key (blank lines and comments between, up to
     * the next section header) is one more value of that key to inih, which
     * replaces the first; an indented [section] is such a line, and the
     * keys after it would land in the section before.
     */
    if (text && open > buf && r->after_key) {
        if (r->odd_line == 0) {
            r->odd_line = r->line;
            r->odd_why = "an indented line after a key continues that key, and replaces its "
                         "value: unindent it";
        }
        return buf;
    }
    if (text)
        r->after_key = *open != '[';
    /* inih only reports keys; catch an unknown section at its header, even an empty one. */
    const char *close = *open == '[' ? strchr(open, ']') : NULL;
    /* and what follows a header, which inih drops unread: "[memory] thp = never" */
    const char *after = close ? close + 1 : NULL;
    while (after && isspace((unsigned char)*after)) /* inih strips what isspace() says */
        after++;
    if (after && *after && *after != ';' && *after != '#' && r->odd_line == 0) {
        r->odd_line = r->line;
        r->odd_why = "text after the section header: a key goes on a line of its own";
    }
    if (close && r->bad_section == 0) {
        char name[32];
        snprintf(name, sizeof(name), "%.*s", (int)(close - open - 1), open + 1);
        char *trimmed = str_trim(name);
        if (!known_section(trimmed, strlen(trimmed))) {
            r->bad_section = r->line;
            snprintf(r->bad_name, sizeof(r->bad_name), "%s", trimmed);
        }
    }
    return buf;
}

struct file_ctx {
    struct profile *p;
    struct reader *rd;
    const char *file;
    const char *via;
    struct entries *out;
    char **includes; /* the values of `include`, in order */
    int *include_lines;
    size_t nincludes;
};

static int on_entry(void *user, const char *section, const char *key, const char *value)
{
    struct file_ctx *c = user;
    struct origin at = {c->file, c->rd->line, c->via};
    if (strcmp(section, "profile") == 0 && strcmp(key, "include") == 0) {
        c->includes = xrealloc(c->includes, (c->nincludes + 1) * sizeof(*c->includes));
        c->include_lines =
            xrealloc(c->include_lines, (c->nincludes + 1) * sizeof(*c->include_lines));
        c->include_lines[c->nincludes] = c->rd->line;
        c->includes[c->nincludes++] = xstrdup(value);
        /* kept as an entry too, so that its line is known for errors */
    }
    entries_add(c->out, section, key, value, at);
    return 1;
}

/*
 * As root, a profile decides what root's service runs with: like sudo with
 * sudoers and ssh with authorized_keys, refuse one another user could have
 * written, because it or its directory is theirs or writable by them.
 * Checked on the open file, and on the directory it was found in.
 */
static bool trusted_as_root(const char *path, int fd, const struct stat *st, struct err *e)
{
    const char *fix = "chown root: and chmod go-w it, or use a root-owned copy";
    if (st->st_uid != 0) {
        err_set(e, "%s: owned by uid %u, not root; refusing it as root (%s)", path,
                (unsigned)st->st_uid, fix);
        return false;
    }
    if (st->st_mode & 022) {
        err_set(e, "%s: writable by %s; refusing it as root (%s)", path,
                st->st_mode & 002 ? "others" : "its group", fix);
        return false;
    }
    /*
     * The directory the path names and the one the file really is in (a
     * symbolic link may lead elsewhere), and every directory on the way to
     * that one: whoever may write any of them may swap the profile.
     */
    char link[64], real[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd); /* where the open file is, in one call */
    ssize_t len = readlink(link, real, sizeof(real) - 1);
    if (len > 0)
        real[len] = '\0';
    if ((len <= 0 || real[0] != '/') && realpath(path, real) == NULL) { /* no /proc */
        err_set(e, "%s: cannot tell which directory it is in: %s", path, strerror(errno));
        return false;
    }
    bool ok = true;
    const char *named[] = {path, real};
    /* the same path twice is checked once (a profile named by its real path, the common case) */
    for (size_t i = 0; i < (strcmp(path, real) == 0 ? 1 : 2) && ok; i++) {
        char *copy = xstrdup(named[i]), *slash = strrchr(copy, '/');
        const char *dir = slash == NULL ? "." : slash == copy ? "/" : (*slash = '\0', copy);
        struct stat ds;
        ok = stat(dir, &ds) == 0;
        if (!ok)
            err_set(e, "%s: cannot check its directory %s: %s", path, dir, strerror(errno));
        else if (ds.st_uid != 0 || (ds.st_mode & 022)) {
            err_set(e,
                    "%s: its directory %s is %s; refusing it as root (anyone who may write there "
                    "may replace the profile: keep profiles in a root-owned directory)",
                    path, dir, ds.st_uid != 0 ? "not root's" : "writable by group or others");
            ok = false;
        }
        free(copy);
    }
    /* the way as named too: a link of another user's on it picks the directory it leads to */
    char at[4096], cwd[PATH_MAX];
    char *as_named = path[0] == '/'             ? xstrdup(path)
                     : getcwd(cwd, sizeof(cwd)) ? xasprintf("%s/%s", cwd, path)
                                                : NULL;
    if (ok && as_named == NULL) {
        err_set(e, "%s: cannot tell which directory it is named from: %s", path, strerror(errno));
        ok = false;
    }
    const char *way = ok ? path_untrusted_way(as_named, 0, at, sizeof(at)) : NULL;
    if (ok && way == NULL && strcmp(as_named, real) != 0)
        way = path_untrusted_way(real, 0, at, sizeof(at));
    free(as_named);
    if (way) {
        err_set(e,
                "%s: %s on the way to it %s; refusing it as root (keep profiles where only root "
                "may change them)",
                path, at, way);
        ok = false;
    }
    return ok;
}

static bool read_text(const char *path, char **text, struct err *e)
{
    /*
     * Checked to be a regular file before it is opened: as root, a name on
     * a way someone else may change (refused below, once open) could be
     * a link to a device, which a plain open() would already have touched.
     */
    int fd = open_regular(path);
    if (fd < 0 && errno == EINVAL) {
        err_set(e, "%s: not a regular file", path);
        return false;
    }
    if (fd < 0) {
        err_set(e, "cannot open profile %s: %s", path, strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        err_set(e, "%s: not a regular file", path);
        close(fd);
        return false;
    }
    if (geteuid() == 0 && !trusted_as_root(path, fd, &st, e)) {
        close(fd);
        return false;
    }
    char *buf;
    size_t got;
    int error = read_fd_text(fd, PROFILE_MAX_BYTES, &buf, &got);
    close(fd);
    if (error == EFBIG) {
        err_set(e, "%s: too large for a profile (limit %d bytes)", path, PROFILE_MAX_BYTES);
        return false;
    }
    if (error) {
        err_set(e, "%s: read failed: %s", path, strerror(error));
        return false;
    }
    if (strlen(buf) != got) {
        int line = 1; /* the NUL's */
        for (const char *s = buf; *s; s++)
            line += *s == '\n';
        err_set(e, "%s:%d: a NUL byte; not a text profile", path, line);
        free(buf);
        return false;
    }
    *text = buf;
    return true;
}

/* The identity of a file on the include stack: same inode, same file. */
struct file_id {
    dev_t dev;
    ino_t ino;
    const char *path;
};

struct loader {
    struct profile *p;
    const struct profile_paths *paths;
    struct file_id stack[INCLUDE_DEPTH_MAX];
    size_t depth;
    /* profile_load_files: the files, in place of the filesystem */
    const struct profile_file *mem;
    size_t nmem;
};

/*
 * An include chain is a prefix of every message about what it led to, and
 * a message is one line of at most sizeof(struct err): past this the
 * chain keeps its first link and its last, and says the middle was cut.
 */
#define CHAIN_MAX 320

/* The length of a chain's first link, "FILE:LINE: in include 'NAME': "; 0 if none. */
static size_t first_link_len(const char *chain)
{
    const char *in = strstr(chain, ": in include '"), *end = in ? strstr(in + 14, "': ") : NULL;
    return end ? (size_t)(end + 3 - chain) : 0;
}

static const char *chain_with(struct loader *L, const char *via, const char *file, int line,
                              const char *tok)
{
    char *chain = xasprintf("%s%s:%d: in include '%s': ", via ? via : "", file, line, tok);
    /* cut only where there is a middle: more than this chain's own first link before */
    size_t first = via ? first_link_len(via) : 0;
    if (strlen(chain) > CHAIN_MAX && first > 0 && first < strlen(via)) {
        free(chain);
        chain = xasprintf("%.*s...: %s:%d: in include '%s': ", (int)first, via, file, line, tok);
    }
    return intern_via(L->p, chain);
}

/*
 * The error met in an include, after the link that led there; links
 * further in are cut from the front of it, with "...", when the whole
 * would not fit: what went wrong, and where, is at its end.
 */
static void nest_error(struct err *e, const char *file, int line, const char *tok, const char *sub)
{
    char *link = xasprintf("%s:%d: in include '%s': ", file, line, tok);
    const char *rest = sub;
    size_t first;
    bool cut = false;
    while (strlen(link) + strlen(rest) + 8 >= sizeof(e->msg) &&
           (first = first_link_len(rest)) > 0) {
        rest += first;
        cut = true;
    }
    if (cut && strncmp(rest, "...: ", 5) == 0)
        rest += 5;                                        /* cut further in already */
    err_set(e, "%s%s%s", link, cut ? "...: " : "", rest); /* err_set() keeps the end */
    free(link);
}

static const char *mem_text(const struct loader *L, const char *path)
{
    for (size_t i = 0; i < L->nmem; i++)
        if (strcmp(L->mem[i].path, path) == 0)
            return L->mem[i].text;
    return NULL;
}

/* Whether cand exists and is not the including file itself (on disk: the same inode). */
static bool include_candidate(const struct loader *L, const char *cand, const char *from,
                              const struct stat *self, bool have_self)
{
    if (L->mem)
        return mem_text(L, cand) != NULL && strcmp(cand, from) != 0;
    struct stat st;
    return stat(cand, &st) == 0 &&
           !(have_self && st.st_dev == self->st_dev && st.st_ino == self->st_ino);
}

static bool load_file(struct loader *L, const char *path, const char *text, const char *via,
                      struct entries *out, struct err *e);

/*
 * The relative path name in the directory of the file `from`, written as
 * a user would: "dir/x.ini" for "./x.ini" from "dir/top.ini", and
 * "x.ini" from "top.ini" (not "././x.ini").
 */
static char *in_dir_of(const char *from, const char *name)
{
    while (name[0] == '.' && name[1] == '/')
        for (name += 2; *name == '/'; name++)
            ;
    if (*name == '\0')
        name = ".";
    if (strchr(from, '/') == NULL)
        return xstrdup(name);
    char *dirbuf = xstrdup(from);
    const char *dir = dirname(dirbuf);
    char *out = xasprintf("%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name);
    free(dirbuf);
    return out;
}

/*
 * Resolve an include value. A name is looked up in the including file's
 * directory, then along the search path, skipping the including file itself: that is how an admin's
 * /etc/tunerun/profiles/mysql.ini says `include = mysql` to extend the
 * shipped mysql profile. A value with a '/' is a path, relative to the
 * including file's directory.
 */
static char *resolve_include(struct loader *L, const char *name, const char *from)
{
    if (strchr(name, '/'))
        return name[0] == '/' ? xstrdup(name) : in_dir_of(from, name);
    struct stat self;
    bool have_self = L->mem == NULL && stat(from, &self) == 0;
    /* the including file's own directory first, then the search path */
    char *file = xasprintf("%s.ini", name);
    for (size_t i = 0; i <= L->paths->n; i++) {
        char *cand =
            i == 0 ? in_dir_of(from, file) : xasprintf("%s/%s", L->paths->dirs[i - 1], file);
        if (include_candidate(L, cand, from, &self, have_self)) {
            free(file);
            return cand;
        }
        free(cand);
    }
    free(file);
    return NULL;
}

static bool valid_profile_name(const char *s)
{
    if (*s == '\0' || *s == '.' || strlen(s) > 64)
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '-' || *s == '_' || *s == '.' || *s == '@'))
            return false;
    return true;
}

/*
 * Read one file and, first, its includes into out. via is the include chain
 * that led here (NULL for the top file); errors found while reading are
 * wrapped in it by the callers, entries carry it for the errors found later.
 */
static bool load_file(struct loader *L, const char *path, const char *text, const char *via,
                      struct entries *out, struct err *e)
{
    char *owned = NULL;
    struct stat st = {0};
    if (text == NULL && L->mem) {
        if ((text = mem_text(L, path)) == NULL) {
            err_set(e, "cannot open profile %s: %s", path, strerror(ENOENT));
            return false;
        }
    } else if (text == NULL) {
        if (!read_text(path, &owned, e))
            return false;
        text = owned;
        if (stat(path, &st) < 0)
            st = (struct stat){0};
    }
    for (size_t i = 0; i < L->depth; i++) {
        bool same =
            strcmp(L->stack[i].path, path) == 0 ||
            (st.st_ino != 0 && L->stack[i].ino == st.st_ino && L->stack[i].dev == st.st_dev);
        if (same) {
            err_set(e, "%s: include cycle: %s is already being loaded (via %s)", path, path,
                    L->stack[L->depth - 1].path);
            free(owned);
            return false;
        }
    }
    if (L->depth == INCLUDE_DEPTH_MAX) {
        err_set(e, "%s: includes nested deeper than %d", path, INCLUDE_DEPTH_MAX);
        free(owned);
        return false;
    }
    const char *file = intern_file(L->p, path);
    L->stack[L->depth++] = (struct file_id){st.st_dev, st.st_ino, file};

    struct entries mine = {0};
    struct reader rd = {.pos = text};
    struct file_ctx c = {L->p, &rd, file, via, &mine, NULL, NULL, 0};
    int bad = ini_parse_stream(reader_next, &rd, on_entry, &c);
    bool ok = true;
    /* the first line at fault, whoever saw it; on one line, in this order */
    int first = INT_MAX;
    const int at[] = {rd.bad_section, rd.long_line, rd.odd_line, bad};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
        if (at[i] > 0 && at[i] < first)
            first = at[i];
    if (rd.bad_section == first) {
        unknown_section(e, (struct origin){file, rd.bad_section, NULL}, rd.bad_name);
        ok = false;
    } else if (rd.long_line == first) {
        err_set(e, "%s:%d: line too long (at most %d characters)", file, rd.long_line,
                LINE_MAX_CHARS);
        ok = false;
    } else if (rd.odd_line == first) {
        err_set(e, "%s:%d: %s", file, rd.odd_line, rd.odd_why);
        ok = false;
    } else if (bad > 0) {
        err_set(e, "%s:%d: syntax error: expected '[section]', 'key = value' or a comment", file,
                bad);
        ok = false;
    } else if (bad < 0) {
        err_set(e, "%s: cannot parse: out of memory", file);
        ok = false;
    }

    for (size_t i = 0; ok && i < c.nincludes; i++) {
        /* one `include` may list several profiles, applied left to right */
        char *list = xstrdup(c.includes[i]);
        int line = c.include_lines[i];
        const char *cc = str_harmful(list);
        if (cc) {
            err_set(e, "%s:%d: profile.include: %s", file, line, control_why(cc));
            ok = false;
        }
        for (char *tok = list, *next; ok && tok; tok = next) {
            next = strchr(tok, ',');
            if (next)
                *next++ = '\0';
            tok = str_trim(tok);
            if (*tok == '\0') {
                /* "mysql,,redis", "mysql," or nothing at all: a slip, not a way to say none */
                char shown[ESCAPED_SIZE(64)];
                if (*c.includes[i] == '\0')
                    err_set(e,
                            "%s:%d: profile.include: no name given; name a profile or drop "
                            "the line",
                            file, line);
                else
                    err_set(e, "%s:%d: profile.include: an empty name in '%s'", file, line,
                            str_escaped(shown, sizeof(shown), c.includes[i], 64));
                ok = false;
                break;
            }
            if (!strchr(tok, '/') && !valid_profile_name(tok)) {
                err_set(e, "%s:%d: profile.include: '%s' is not a profile name", file, line, tok);
                ok = false;
                break;
            }
            char *inc = resolve_include(L, tok, file);
            if (inc == NULL) {
                const char *why = L->paths->unsearched;
                err_set(e, "%s:%d: profile.include: no profile '%s' found%s%s", file, line, tok,
                        why ? "; " : "", why ? why : "");
                ok = false;
                break;
            }
            struct err sub;
            if (!load_file(L, inc, NULL, chain_with(L, via, file, line, tok), out, &sub)) {
                nest_error(e, file, line, tok, sub.msg);
                ok = false;
            }
            free(inc);
        }
        free(list);
    }
    for (size_t i = 0; ok && i < mine.n; i++)
        entries_add(out, mine.v[i].section, mine.v[i].key, mine.v[i].value, mine.v[i].at);

    for (size_t i = 0; i < c.nincludes; i++)
        free(c.includes[i]);
    free(c.includes);
    free(c.include_lines);
    entries_free(&mine);
    free(owned);
    L->depth--;
    return ok;
}

/* ---- applying entries through the key table ----------------------------- */

/* Each setter parses one value; on failure it leaves a phrase in *why. */
typedef bool (*setter)(struct profile *p, const char *v, struct origin at, const char **why);

static const char *why_buf(const char *fmt, const char *arg)
{
    static char buf[256];
    snprintf(buf, sizeof(buf), fmt, arg);
    return buf;
}

static bool set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = xstrdup(v);
    return true;
}

static bool set_name(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    if (!valid_profile_name(v)) {
        *why = why_buf("'%s' is not a valid name (letters, digits, '-', '_', '.', '@')", v);
        return false;
    }
    return set_str(&p->name, v);
}

static bool set_description(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at, (void)why;
    return set_str(&p->description, v);
}

static bool set_fears(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at, (void)why;
    return set_str(&p->fears, v);
}

static bool set_include(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)p, (void)v, (void)why;
    /* Resolved while reading; an include given with --set is too late. */
    if (at.line == 0) {
        *why = "include can only be given in a profile file";
        return false;
    }
    return true;
}

static bool set_nodes(struct profile *p, const char *v, struct origin at, const char **why)
{
    long n;
    p->placement.nodes_at = at;
    if (strcasecmp(v, "all") == 0) {
        p->placement.nodes = 0;
        return true;
    }
    if (!parse_long(v, 1, 4096, &n)) {
        *why = why_buf("%s; use a node count from 1 or 'all'", parse_error());
        return false;
    }
    p->placement.nodes = (unsigned)n;
    return true;
}

/*
 * Whether the first len characters of s are a decimal integer, so that a
 * value a number parser refuses is out of range rather than no number.
 */
static bool integer(const char *s, size_t len)
{
    size_t i = len > 0 && (*s == '-' || *s == '+');
    if (i == len)
        return false;
    for (; i < len; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* After a failed parse: the parser's own reason for a number out of range, else `otherwise`. */
static const char *range_or(const char *otherwise, const char *v)
{
    if (parse_error_is_range())
        return why_buf("%s", parse_error());
    return why_buf(otherwise, v);
}

static bool set_cpus(struct profile *p, const char *v, struct origin at, const char **why)
{
    long n;
    p->placement.cpus_at = at;
    size_t len = strlen(v);
    if (strcasecmp(v, "node") == 0) {
        p->placement.cpus = CPUS_NODE;
        return true;
    }
    if (strcasecmp(v, "all") == 0) {
        p->placement.cpus = CPUS_ALL;
        return true;
    }
    if (len > 1 && v[len - 1] == '%' && integer(v, len - 1)) {
        char num[64];
        snprintf(num, sizeof(num), "%.*s", (int)(len - 1), v);
        if (len - 1 >= sizeof(num) || !parse_long(num, 1, 100, &n)) {
            *why = why_buf("'%.40s' is out of range 1%%..100%%", v);
            return false;
        }
        p->placement.cpus = CPUS_PERCENT;
        p->placement.cpus_value = (unsigned)n;
        return true;
    }
    if (parse_long(v, 1, 1 << 20, &n)) {
        p->placement.cpus = CPUS_COUNT;
        p->placement.cpus_value = (unsigned)n;
        return true;
    }
    if (integer(v, len)) {
        *why = why_buf("%s (a CPU count; or node, all, or a percentage)", parse_error());
        return false;
    }
    *why = why_buf("'%s' is not node, all, a CPU count or a percentage (1%%..100%%)", v);
    return false;
}

static bool set_bool(bool *dst, const char *v, const char **why)
{
    if (!parse_bool(v, dst)) {
        *why = why_buf("%s", parse_error());
        return false;
    }
    return true;
}

static bool set_smt(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_bool(&p->placement.smt, v, why);
}

static bool set_exclusive(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_bool(&p->placement.exclusive, v, why);
}

/*
 * Whether a comma-separated list has an empty item: "a,,b", "a," or ",a".
 * strtok_r() would pass over it; it is a slip, not a way to say none.
 */
static bool empty_item(const char *v, const char **why)
{
    for (const char *item = v;; item++) {
        const char *end = strchrnul(item, ',');
        const char *p = item;
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (p == end) {
            *why = "an empty item in the list (',,', or a ',' at either end): a slip, not a way "
                   "to say none";
            return true;
        }
        if (*end == '\0')
            return false;
        item = end;
    }
}

static bool set_avoid(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    if (*v && empty_item(v, why))
        return false;
    for (size_t i = 0; i < p->placement.navoid; i++)
        free(p->placement.avoid[i]);
    p->placement.navoid = 0;
    char *list = xstrdup(v), *save = NULL;
    bool ok = true;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        tok = str_trim(tok);
        if (*tok == '\0')
            continue;
        if (!valid_profile_name(tok)) {
            *why = why_buf("'%s' is not a profile name", tok);
            ok = false;
            break;
        }
        p->placement.avoid =
            xrealloc(p->placement.avoid, (p->placement.navoid + 1) * sizeof(char *));
        p->placement.avoid[p->placement.navoid++] = xstrdup(tok);
    }
    free(list);
    return ok;
}

/*
 * A path on the disk the service does its IO on (its data directory, or a
 * block device): absolute, since it is looked up at each launch from
 * wherever tunerun runs; empty undoes what an include set.
 */
static bool set_near(struct profile *p, const char *v, struct origin at, const char **why)
{
    if (*v != '\0' && *v != '/') {
        *why = why_buf("'%.60s' is not an absolute path", v);
        return false;
    }
    free(p->placement.near);
    p->placement.near = *v ? xstrdup(v) : NULL;
    p->placement.near_at = at;
    return true;
}

static bool set_enum(int *dst, const char *v, const char *const *names, const char *list,
                     const char **why)
{
    for (int i = 0; names[i]; i++)
        if (strcasecmp(v, names[i]) == 0) {
            *dst = i;
            return true;
        }
    static char buf[256];
    snprintf(buf, sizeof(buf), "'%.60s' is not one of %s", v, list);
    *why = buf;
    return false;
}

static bool set_memory(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    static const char *const names[] = {"local", "bind", "preferred", "interleave", "auto", NULL};
    int m;
    if (!set_enum(&m, v, names, "bind, preferred, interleave, local, auto", why))
        return false;
    p->placement.memory = (enum mem_mode)m;
    return true;
}

static bool set_memory_size(struct profile *p, const char *v, struct origin at, const char **why)
{
    p->placement.memory_size_at = at;
    if (!parse_size(v, &p->placement.memory_size)) {
        *why = why_buf("%s", parse_error());
        return false;
    }
    return true;
}

static bool set_thp(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    static const char *const names[] = {"system", "madvise", "never", NULL};
    int m;
    if (!set_enum(&m, v, names, "madvise, never, system", why))
        return false;
    p->memory.thp = (enum thp_mode)m;
    return true;
}

static bool set_arena(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    long n;
    if (strcasecmp(v, "auto") == 0) {
        p->memory.arena = ARENA_AUTO;
        return true;
    }
    if (strcasecmp(v, "unset") == 0) {
        p->memory.arena = ARENA_UNSET;
        return true;
    }
    if (!parse_long(v, 1, 65536, &n)) {
        *why = range_or("'%s' is not auto, unset or an arena count from 1", v);
        return false;
    }
    p->memory.arena = ARENA_VALUE;
    p->memory.arena_value = (unsigned)n;
    return true;
}

static bool set_oom(struct profile *p, const char *v, struct origin at, const char **why)
{
    long n;
    if (!parse_long(v, -1000, 1000, &n)) {
        *why = why_buf("%s", parse_error());
        return false;
    }
    p->memory.oom_set = true;
    p->memory.oom_score_adj = (int)n;
    p->memory.oom_at = at;
    return true;
}

static bool set_swappiness(struct profile *p, const char *v, struct origin at, const char **why)
{
    long n;
    if (strcasecmp(v, "system") == 0) {
        p->memory.swappiness = -1;
        return true;
    }
    if (!parse_long(v, 0, 100, &n)) {
        *why = range_or("'%s' is not system or a swappiness from 0 to 100", v);
        return false;
    }
    p->memory.swappiness = (int)n;
    p->memory.swappiness_at = at;
    return true;
}

static bool set_swap_max(struct profile *p, const char *v, struct origin at, const char **why)
{
    if (strcasecmp(v, "system") == 0) {
        p->memory.swap_max_set = false;
        return true;
    }
    if (strcasecmp(v, "max") == 0) {
        p->memory.swap_max = UINT64_MAX;
    } else if (!parse_size(v, &p->memory.swap_max)) {
        *why = range_or("'%s' is not system, max or a size like 0 or 512M", v);
        return false;
    }
    p->memory.swap_max_set = true;
    p->memory.swap_max_at = at;
    return true;
}

static bool set_java(enum java_mode *mode, unsigned *count, uint64_t *size, const char *v,
                     const char **why)
{
    if (strcasecmp(v, "auto") == 0) {
        *mode = JAVA_AUTO;
        return true;
    }
    if (strcasecmp(v, "off") == 0) {
        *mode = JAVA_OFF;
        return true;
    }
    if (count) {
        long n;
        if (!parse_long(v, 1, 1 << 20, &n)) {
            *why = range_or("'%s' is not auto, off or a CPU count", v);
            return false;
        }
        *count = (unsigned)n;
    } else if (size) {
        const char *want = "'%s' is not auto, off or a size of at least 1M, like 8G";
        uint64_t bytes;
        if (!parse_size(v, &bytes)) {
            *why = range_or(want, v);
            return false;
        }
        if (bytes < (1 << 20)) {
            *why = why_buf(want, v);
            return false;
        }
        *size = bytes;
    } else {
        bool b;
        if (!parse_bool(v, &b)) {
            *why = why_buf("'%s' is not auto, off, yes or no", v);
            return false;
        }
        *mode = b ? JAVA_VALUE : JAVA_OFF;
        return true;
    }
    *mode = JAVA_VALUE;
    return true;
}

static bool set_java_apc(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_java(&p->java.active_processor_count, &p->java.active_processor_count_value, NULL, v,
                    why);
}

static bool set_java_numa(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_java(&p->java.use_numa, NULL, NULL, v, why);
}

static bool set_java_max_ram(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_java(&p->java.max_ram, NULL, &p->java.max_ram_value, v, why);
}

static bool set_loader_env(struct profile *p, const char *v, struct origin at, const char **why);

/*
 * A user or group as the profile names it: a name useradd would accept (or
 * sssd's user@domain), or a number. Empty undoes what an include set.
 */
static bool valid_account(const char *v)
{
    if (*v == '-' || strlen(v) > 64)
        return false;
    for (const char *c = v; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '-' || *c == '.' || *c == '@' ||
              (*c == '$' && c[1] == '\0')))
            return false;
    return true;
}

static bool set_account(char **dst, struct origin *dst_at, const char *what, const char *v,
                        struct origin at, const char **why)
{
    if (*v == '\0') {
        free(*dst);
        *dst = NULL;
        return true;
    }
    if (!valid_account(v)) {
        *why = why_buf(what, v);
        return false;
    }
    free(*dst);
    *dst = xstrdup(v);
    *dst_at = at;
    return true;
}

static bool set_user(struct profile *p, const char *v, struct origin at, const char **why)
{
    return set_account(&p->security.user, &p->security.user_at, "'%.60s' is not a user name or uid",
                       v, at, why);
}

static bool set_group(struct profile *p, const char *v, struct origin at, const char **why)
{
    return set_account(&p->security.group, &p->security.group_at,
                       "'%.60s' is not a group name or gid", v, at, why);
}

/*
 * Names as capabilities(7) gives them (libcap's cap_from_name), or `none`;
 * empty undoes what an include set.
 */
static bool set_keep_caps(struct profile *p, const char *v, struct origin at, const char **why)
{
    if (*v == '\0') {
        p->security.keep_caps_set = false;
        p->security.keep_caps = 0;
        return true;
    }
    if (strcasecmp(v, "none") == 0) {
        p->security.keep_caps_set = true;
        p->security.keep_caps = 0;
        p->security.keep_caps_at = at;
        return true;
    }
    if (empty_item(v, why))
        return false;
    uint64_t mask = 0;
    char *list = xstrdup(v), *save = NULL;
    bool ok = true;
    for (char *t = strtok_r(list, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
        cap_value_t cap;
        t = str_trim(t);
        if (*t == '\0')
            continue;
        /*
         * One name and nothing else: cap_from_name() would take a prefix of
         * "cap_a cap_b", a number, and "none" among names.
         */
        bool name =
            isalpha((unsigned char)*t) && strcasecmp(t, "none") != 0 &&
            t[strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")] == '\0';
        if (!name || cap_from_name(t, &cap) < 0 || cap < 0 || cap > 63) {
            *why = why_buf("'%.60s' is not a capability (see capabilities(7); for example "
                           "cap_net_bind_service)",
                           t);
            ok = false;
        } else {
            mask |= UINT64_C(1) << cap;
        }
    }
    free(list);
    if (ok) {
        p->security.keep_caps_set = true;
        p->security.keep_caps = mask;
        p->security.keep_caps_at = at;
    }
    return ok;
}

static bool set_no_new_privs(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    return set_bool(&p->security.no_new_privs, v, why);
}

static const struct key_def {
    const char *section;
    const char *key;
    setter set;
} keys[] = {
    {"profile", "name", set_name},
    {"profile", "description", set_description},
    {"profile", "fears", set_fears},
    {"profile", "include", set_include},
    {"placement", "nodes", set_nodes},
    {"placement", "cpus", set_cpus},
    {"placement", "smt", set_smt},
    {"placement", "exclusive", set_exclusive},
    {"placement", "avoid", set_avoid},
    {"placement", "memory", set_memory},
    {"placement", "memory_size", set_memory_size},
    {"placement", "near", set_near},
    {"memory", "thp", set_thp},
    {"memory", "malloc_arena_max", set_arena},
    {"memory", "oom_score_adj", set_oom},
    {"memory", "swappiness", set_swappiness},
    {"memory", "swap_max", set_swap_max},
    {"java", "active_processor_count", set_java_apc},
    {"java", "use_numa", set_java_numa},
    {"java", "max_ram", set_java_max_ram},
    {"security", "loader_env", set_loader_env},
    {"security", "user", set_user},
    {"security", "group", set_group},
    {"security", "keep_caps", set_keep_caps},
    {"security", "no_new_privs", set_no_new_privs},
};

void profile_list_keys(FILE *f)
{
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        fprintf(f, "%s.%s\n", keys[i].section, keys[i].key);
    for (size_t i = 0; i < sizeof(rlimits) / sizeof(rlimits[0]); i++)
        fprintf(f, "limits.%s\n", rlimits[i].name);
    fputs("env.NAME\n", f);
}

static bool valid_env_name(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

/* Check every ${name} in an env value names a plan variable. */
static bool check_env_refs(const char *v, const char **why)
{
    for (const char *s = strstr(v, "${"); s; s = strstr(s + 2, "${")) {
        const char *close = strchr(s, '}');
        if (close == NULL) {
            *why = "unterminated ${ in value";
            return false;
        }
        size_t len = (size_t)(close - s - 2);
        bool known = false;
        for (size_t i = 0; profile_env_vars[i]; i++)
            if (strlen(profile_env_vars[i]) == len && strncmp(s + 2, profile_env_vars[i], len) == 0)
                known = true;
        if (!known) {
            static char buf[160];
            snprintf(buf, sizeof(buf),
                     "unknown variable ${%.*s} (known: cpus, ncpus, nodes, nnodes, node_mem)",
                     (int)(len > 40 ? 40 : len), s + 2);
            *why = buf;
            return false;
        }
    }
    return true;
}

static bool set_env(struct profile *p, const char *name, const char *v, struct origin at,
                    const char **why)
{
    if (!valid_env_name(name)) {
        *why = "not a valid environment variable name";
        return false;
    }
    if (strncmp(name, "HWLOC_", 6) == 0) {
        *why = "HWLOC_* belong to tunerun's own topology discovery";
        return false;
    }
    if (strcmp(name, "MALLOC_ARENA_MAX") == 0) {
        *why = "set it with [memory] malloc_arena_max, which the plan derives and reports";
        return false;
    }
    if (!check_env_refs(v, why))
        return false;
    for (size_t i = 0; i < p->nenv; i++)
        if (strcmp(p->env[i].name, name) == 0) {
            set_str(&p->env[i].value, v);
            p->env[i].at = at;
            return true;
        }
    p->env = xrealloc(p->env, (p->nenv + 1) * sizeof(*p->env));
    p->env[p->nenv++] = (struct profile_env){xstrdup(name), xstrdup(v), at};
    return true;
}

/*
 * Variables that make the dynamic loader or glibc load code or data from
 * where they say: the dynamic loader's LD_*, and what glibc drops for
 * setuid programs (unsecvars.h). A profile sets them only when
 * [security] loader_env names them, one by one.
 */
static bool loader_variable(const char *name)
{
    static const char *const glibc[] = {
        "GCONV_PATH",  "GETCONF_DIR",      "GLIBC_TUNABLES", "HOSTALIASES",
        "LOCALDOMAIN", "LOCPATH",          "MALLOC_TRACE",   "NIS_PATH",
        "NLSPATH",     "RESOLV_HOST_CONF", "RES_OPTIONS",    "TZDIR",
        NULL};
    if (strncmp(name, "LD_", 3) == 0)
        return true;
    for (size_t i = 0; glibc[i]; i++)
        if (strcmp(name, glibc[i]) == 0)
            return true;
    return false;
}

static bool check_loader_env(const struct profile *p, struct err *e)
{
    for (size_t i = 0; i < p->nenv; i++) {
        const struct profile_env *v = &p->env[i];
        if (!loader_variable(v->name))
            continue;
        bool allowed = false;
        for (size_t k = 0; k < p->security.nloader_env && !allowed; k++)
            allowed = strcmp(p->security.loader_env[k], v->name) == 0;
        if (allowed)
            continue;
        char loc[256];
        profile_where(loc, sizeof(loc), v->at, "env", v->name, NULL);
        err_set(e,
                "%s: a loader variable, which makes every program of the service load what it "
                "names; set it only by naming it in [security] loader_env = %s",
                loc, v->name);
        return false;
    }
    return true;
}

static bool set_loader_env(struct profile *p, const char *v, struct origin at, const char **why)
{
    (void)at;
    if (*v && empty_item(v, why))
        return false;
    for (size_t i = 0; i < p->security.nloader_env; i++)
        free(p->security.loader_env[i]);
    p->security.nloader_env = 0;
    char *list = xstrdup(v), *save = NULL;
    bool ok = true;
    for (char *t = strtok_r(list, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
        t = str_trim(t);
        if (*t == '\0')
            continue;
        if (!valid_env_name(t) || !loader_variable(t)) {
            *why =
                why_buf("'%s' is not a loader variable (LD_*, GCONV_PATH, GLIBC_TUNABLES, ...)", t);
            ok = false;
            break;
        }
        p->security.loader_env =
            xrealloc(p->security.loader_env, (p->security.nloader_env + 1) * sizeof(char *));
        p->security.loader_env[p->security.nloader_env++] = xstrdup(t);
    }
    free(list);
    return ok;
}

/*
 * The fewest open files a profile may leave the service: below it, ld.so
 * fails to load the service's libraries (EMFILE), it has none left for its
 * logs and sockets, and tunerun's own steps after the limit (a cgroup file
 * written) fail. Linux starts processes at 1024.
 */
#define NOFILE_MIN 64
/*
 * Limits under which no service can even be executed: the kernel builds
 * the new stack, and ld.so maps the libraries (address space, private
 * data), after execve() has passed its point of no return, so a failure
 * there kills the service with SIGSEGV, and a CPU limit of 0 with SIGKILL,
 * with no message (/bin/true alone needs 2.4 MiB of address space, 120 KiB
 * of data and 16 KiB of stack). A value below one of these is a slip.
 */
static const struct {
    int resource;
    rlim_t min;
    const char *shown, *why;
} limit_floors[] = {
    {RLIMIT_AS, 16 << 20, "16 MiB",
     "ld.so maps the service's libraries after the exec can no longer fail, and SIGSEGV kills "
     "it there"},
    {RLIMIT_DATA, 1 << 20, "1 MiB",
     "ld.so maps the libraries' data after the exec can no longer fail, and SIGSEGV kills it "
     "there"},
    {RLIMIT_STACK, 128 << 10, "128 KiB",
     "the kernel builds the new stack after the exec can no longer fail, and SIGSEGV kills it "
     "there"},
    {RLIMIT_CPU, 1, "1 second", "the kernel kills it (SIGKILL) before it runs"},
};

/* The most fs.nr_open may be set to: the kernel's sysctl_nr_open_max. */
#define NR_OPEN_MAX                                                                                \
    (((size_t)INT_MAX < SIZE_MAX / sizeof(void *) ? (size_t)INT_MAX : SIZE_MAX / sizeof(void *)) & \
     ~(size_t)(sizeof(long) * 8 - 1))

static bool set_limit(struct profile *p, const char *name, const char *v, struct origin at,
                      const char **why)
{
    for (size_t i = 0; i < sizeof(rlimits) / sizeof(rlimits[0]); i++) {
        if (strcmp(rlimits[i].name, name) != 0)
            continue;
        rlim_t soft, hard;
        if (!parse_rlim_pair(v, &soft, &hard)) {
            *why = why_buf("%s", parse_error());
            return false;
        }
        /* soft <= hard: a hard limit below the floor has a soft one below it too */
        if (rlimits[i].resource == RLIMIT_NOFILE && (soft < NOFILE_MIN || hard < NOFILE_MIN)) {
            static char buf[320], what[96];
            if (soft == hard)
                snprintf(what, sizeof(what), "a limit of %llu open files is",
                         (unsigned long long)soft);
            else if (hard < NOFILE_MIN)
                snprintf(what, sizeof(what), "soft and hard limits of %llu and %llu open files are",
                         (unsigned long long)soft, (unsigned long long)hard);
            else
                snprintf(what, sizeof(what), "a soft limit of %llu open files is",
                         (unsigned long long)soft);
            snprintf(buf, sizeof(buf),
                     "%s below %d, the least a service can run with: its libraries, logs and "
                     "sockets, and tunerun's own steps after the limit, need descriptors",
                     what, NOFILE_MIN);
            *why = buf;
            return false;
        }
        for (size_t f = 0; f < sizeof(limit_floors) / sizeof(limit_floors[0]); f++) {
            if (limit_floors[f].resource != (int)rlimits[i].resource || soft >= limit_floors[f].min)
                continue; /* soft <= hard */
            static char buf[320];
            bool secs = rlimits[i].resource == RLIMIT_CPU;
            snprintf(buf, sizeof(buf),
                     "a %slimit of %llu %s%s is below %s, the least a service can be executed "
                     "with: %s",
                     soft == hard ? "" : "soft ", (unsigned long long)soft,
                     secs ? "second" : "byte", soft == 1 ? "" : "s", limit_floors[f].shown,
                     limit_floors[f].why);
            *why = buf;
            return false;
        }
        if (rlimits[i].resource == RLIMIT_NOFILE &&
            (soft == RLIM_INFINITY || hard == RLIM_INFINITY)) {
            *why = "'unlimited' is no limit Linux can set for open files: it caps them at "
                   "fs.nr_open (1048576 unless raised); give a number";
            return false;
        }
        if (rlimits[i].resource == RLIMIT_NOFILE && hard > NR_OPEN_MAX) {
            static char buf[160];
            snprintf(buf, sizeof(buf),
                     "%llu open files is more than fs.nr_open may ever be raised to (%llu); give "
                     "a number at most that",
                     (unsigned long long)hard, (unsigned long long)NR_OPEN_MAX);
            *why = buf;
            return false;
        }
        struct profile_limit *l = &p->limits[rlimits[i].resource];
        l->soft = soft;
        l->hard = hard;
        l->set = true;
        l->at = at;
        return true;
    }
    *why = "unknown limit (known: as, core, cpu, data, fsize, locks, memlock, msgqueue, nice, "
           "nofile, nproc, rss, rtprio, rttime, sigpending, stack)";
    return false;
}

void profile_where(char *buf, size_t n, struct origin at, const char *section, const char *key,
                   const char *value)
{
    char s[ESCAPED_SIZE(32)], k[ESCAPED_SIZE(64)], v[ESCAPED_SIZE(64)];
    str_escaped(s, sizeof(s), section, 32);
    str_escaped(k, sizeof(k), key, 64);
    if (at.line > 0)
        snprintf(buf, n, "%s%s:%d: %s.%s", at.via ? at.via : "", at.file, at.line, s, k);
    else if (value)
        snprintf(buf, n, "--set %s.%s=%s", s, k, str_escaped(v, sizeof(v), value, 64));
    else
        snprintf(buf, n, "--set %s.%s", s, k);
}

static bool apply_entry(struct profile *p, const struct entry *en, struct err *e)
{
    char loc[16 * sizeof(e->msg)]; /* an include chain included: err_set() then cuts its middle */
    const char *why = NULL;
    if (!known_section(en->section, strlen(en->section))) {
        char s[ESCAPED_SIZE(64)];
        if (en->at.line > 0 && en->section[0] == '\0') {
            /* inih hands a key before the first [section] over with section "" */
            err_set(e,
                    "%s%s:%d: '%s' is a key outside any section; put it under its [section] "
                    "(known: " KNOWN_SECTIONS ")",
                    en->at.via ? en->at.via : "", en->at.file, en->at.line,
                    str_escaped(s, sizeof(s), en->key, 64));
        } else if (en->at.line > 0) {
            unknown_section(e, en->at, en->section);
        } else {
            profile_where(loc, sizeof(loc), en->at, en->section, en->key, en->value);
            err_set(e, "%s: unknown section '%s' (known: " KNOWN_SECTIONS ")", loc,
                    str_escaped(s, sizeof(s), en->section, 32));
        }
        return false;
    }
    profile_where(loc, sizeof(loc), en->at, en->section, en->key, en->value);
    /* No value holds a control character, and --set none a line could not. */
    const char *cc = str_harmful(en->value);
    if (cc) {
        err_set(e, "%s: %s", loc, control_why(cc));
        return false;
    }
    size_t line = strlen(en->key) + 1 + strlen(en->value);
    if (en->at.line == 0 && line > LINE_MAX_CHARS) {
        err_set(e,
                "%s: too long: as a line of a profile, KEY=VALUE would be %zu characters, and a "
                "line holds at most %d",
                loc, line, LINE_MAX_CHARS);
        return false;
    }
    bool ok;
    if (strcmp(en->section, "env") == 0) {
        ok = set_env(p, en->key, en->value, en->at, &why);
    } else if (strcmp(en->section, "limits") == 0) {
        ok = set_limit(p, en->key, en->value, en->at, &why);
    } else {
        const struct key_def *k = NULL;
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            if (strcmp(keys[i].section, en->section) == 0 && strcmp(keys[i].key, en->key) == 0)
                k = &keys[i];
        if (k == NULL) {
            char known[256] = "";
            for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                if (strcmp(keys[i].section, en->section) == 0) {
                    if (known[0])
                        strncat(known, ", ", sizeof(known) - strlen(known) - 1);
                    strncat(known, keys[i].key, sizeof(known) - strlen(known) - 1);
                }
            err_set(e, "%s: unknown key (known in [%s]: %s)", loc, en->section, known);
            return false;
        }
        ok = k->set(p, en->value, en->at, &why);
    }
    if (!ok)
        err_set(e, "%s: %s", loc, why ? why : "bad value");
    return ok;
}

static void profile_defaults(struct profile *p)
{
    memset(p, 0, sizeof(*p));
    /* Without a [placement], tunerun does not narrow anything. */
    p->placement.nodes = 0;
    p->placement.cpus = CPUS_ALL;
    p->placement.smt = true;
    p->placement.memory = MEM_LOCAL;
    p->memory.thp = THP_SYSTEM;
    p->memory.arena = ARENA_UNSET;
    p->memory.swappiness = -1;
}

static char *name_from_path(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *name = xstrdup(base);
    size_t n = strlen(name);
    if (n > 4 && strcmp(name + n - 4, ".ini") == 0)
        name[n - 4] = '\0';
    return name;
}

static bool load_common(struct profile *p, const char *path, const char *text,
                        const struct profile_file *mem, size_t nmem,
                        const struct profile_paths *paths, struct err *e)
{
    static const struct profile_paths none = {{0}, {0}, 0, NULL};
    profile_defaults(p);
    struct loader L = {.p = p, .paths = paths ? paths : &none, .mem = mem, .nmem = nmem};
    struct entries all = {0};
    bool ok = load_file(&L, path, text, NULL, &all, e);
    for (size_t i = 0; ok && i < all.n; i++)
        ok = apply_entry(p, &all.v[i], e);
    entries_free(&all);
    ok = ok && check_loader_env(p, e);
    if (!ok) {
        profile_free(p);
        return false;
    }
    p->path = xstrdup(path);
    if (p->name == NULL) {
        p->name = name_from_path(path);
        /* it names claims and messages, and other profiles avoid it by it */
        if (!valid_profile_name(p->name)) {
            err_set(e,
                    "%s: '%s' is not a profile name (letters, digits, '-', '_', '.', '@'); "
                    "rename the file or set [profile] name",
                    path, p->name);
            return false;
        }
    }
    return true;
}

bool profile_load(struct profile *p, const char *path, const struct profile_paths *paths,
                  struct err *e)
{
    if (*path == '\0') {
        memset(p, 0, sizeof(*p)); /* as a failed load leaves it: profile_free() may follow */
        err_set(e, "--profile-file '': an empty path names no profile file");
        return false;
    }
    return load_common(p, path, NULL, NULL, 0, paths, e);
}

bool profile_load_string(struct profile *p, const char *path, const char *text,
                         const struct profile_paths *paths, struct err *e)
{
    return load_common(p, path, text, NULL, 0, paths, e);
}

bool profile_load_files(struct profile *p, const struct profile_file *files, size_t n,
                        const struct profile_paths *paths, struct err *e)
{
    if (n == 0) {
        err_set(e, "no profile");
        return false;
    }
    return load_common(p, files[0].path, NULL, files, n, paths, e);
}

bool profile_check(const struct profile *p, struct err *e)
{
    return check_loader_env(p, e);
}

bool profile_set(struct profile *p, const char *assignment, struct err *e)
{
    const char *eq = strchr(assignment, '=');
    const char *dot = strchr(assignment, '.');
    if (eq == NULL || dot == NULL || dot > eq || dot == assignment || dot + 1 == eq) {
        char shown[ESCAPED_SIZE(64)];
        err_set(e, "--set %s: expected SECTION.KEY=VALUE",
                str_escaped(shown, sizeof(shown), assignment, 64));
        return false;
    }
    char *section = strndup(assignment, (size_t)(dot - assignment));
    char *key = strndup(dot + 1, (size_t)(eq - dot - 1));
    char *value = xstrdup(eq + 1);
    struct entry en = {str_trim(section), str_trim(key), str_trim(value), {"--set", 0, NULL}};
    bool ok = apply_entry(p, &en, e);
    free(section);
    free(key);
    free(value);
    return ok;
}

char *profile_find(const char *name, const struct profile_paths *paths, size_t *dir_index)
{
    if (!valid_profile_name(name))
        return NULL;
    for (size_t i = 0; i < paths->n; i++) {
        char *cand = NULL;
        if (asprintf(&cand, "%s/%s.ini", paths->dirs[i], name) < 0)
            return NULL;
        if (access(cand, F_OK) == 0) {
            if (dir_index)
                *dir_index = i;
            return cand;
        }
        free(cand);
    }
    return NULL;
}

char *profile_locate(const char *name, const struct profile_paths *paths, struct err *e)
{
    if (*name == '\0') {
        err_set(e, "an empty profile name: name one that 'tunerun profiles' lists, or give a file "
                   "with --profile-file FILE");
        return NULL;
    }
    char *path = profile_find(name, paths, NULL);
    if (path)
        return path;
    char shown[ESCAPED_SIZE(64)], where[PATH_MAX] = "";
    str_escaped(shown, sizeof(shown), name, 64);
    for (size_t i = 0; i < paths->n; i++)
        snprintf(where + strlen(where), sizeof(where) - strlen(where), "%s%s", i ? ", " : "",
                 paths->dirs[i]);
    /* A path, or a file name with its .ini, is a file to read, not a name to look up. */
    size_t len = strlen(name);
    if (!strchr(name, '/') && !(len > 4 && strcmp(name + len - 4, ".ini") == 0)) {
        err_set(e, "no profile '%s' in %s (see 'tunerun profiles')%s%s", shown, where,
                paths->unsearched ? "; " : "", paths->unsearched ? paths->unsearched : "");
        return NULL;
    }
    char *stem = name_from_path(name), also[128] = "";
    char *found = profile_find(stem, paths, NULL);
    if (found)
        snprintf(also, sizeof(also), " ('%s' is one)", stem);
    err_set(e,
            "no profile '%s' in %s: a profile's name has no directory and no .ini%s; to read "
            "the file %s, use --profile-file %s",
            shown, where, also, shown, shown);
    free(found);
    free(stem);
    return NULL;
}

void profile_free(struct profile *p)
{
    free(p->name);
    free(p->path);
    free(p->description);
    free(p->fears);
    for (size_t i = 0; i < p->placement.navoid; i++)
        free(p->placement.avoid[i]);
    free(p->placement.avoid);
    free(p->placement.near);
    for (size_t i = 0; i < p->nenv; i++) {
        free(p->env[i].name);
        free(p->env[i].value);
    }
    for (size_t i = 0; i < p->security.nloader_env; i++)
        free(p->security.loader_env[i]);
    free(p->security.loader_env);
    free(p->security.user);
    free(p->security.group);
    free(p->env);
    for (size_t i = 0; i < p->nfiles; i++)
        free(p->files[i]);
    free(p->files);
    for (size_t i = 0; i < p->nvias; i++)
        free(p->vias[i]);
    free(p->vias);
    memset(p, 0, sizeof(*p));
}
