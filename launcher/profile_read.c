/*
 * profile_read.c - a profile's files as entries: inih, includes, and the
 * checks that what root reads may be trusted.
 *
 * inih is built by Debian without INI_HANDLER_LINENO, so we feed it through
 * ini_parse_stream() with a reader that counts lines itself; the count is
 * the line of the key inih is handing us (it would join no continuation
 * line: the reader refuses them).
 */
#include "profile_internal.h"
#include "parse.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the raw entry list ------------------------------------------------ */

static void entries_add(struct entries *es, const char *section, const char *key, const char *value,
                        struct origin at)
{
    if (es->n == es->cap) {
        es->cap = es->cap ? es->cap * 2 : 32;
        es->v = xrealloc(es->v, es->cap * sizeof(*es->v));
    }
    es->v[es->n++] = (struct entry){xstrdup(section), xstrdup(key), xstrdup(value), at};
}

void entries_free(struct entries *es)
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

/*
 * Why a value with str_harmful()'s byte at cc is not text: tab is, but a
 * newline (from --set) or an escape sequence, a C1 control or a bidi
 * control would break the one-line messages and plans that print the
 * value, act on the terminal, or reorder what it shows.
 */
const char *profile_control_why(const char *cc)
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

static const char *const sections[] = {"profile", "placement", "memory", "limits",   "env",
                                       "args",    "host",      "java",   "security", NULL};

void profile_unknown_section(struct err *e, struct origin at, const char *name)
{
    char shown[ESCAPED_SIZE(32)];
    err_set(e, "%s%s:%d: unknown section [%s] (known: " KNOWN_SECTIONS ")", at.via ? at.via : "",
            at.file, at.line, str_escaped(shown, sizeof(shown), name, 32));
}

bool profile_known_section(const char *name, size_t len)
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
        if (!profile_known_section(trimmed, strlen(trimmed))) {
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
    /*
     * Paths on the heap, not the stack: a launch's deepest frame is the
     * number of stack pages it faults in, each a cost paid at every launch.
     */
    char link[64], *real = xrealloc(NULL, PATH_MAX), *at = xrealloc(NULL, PATH_MAX);
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd); /* where the open file is, in one call */
    ssize_t len = readlink(link, real, PATH_MAX - 1);
    if (len > 0)
        real[len] = '\0';
    if ((len <= 0 || real[0] != '/') && realpath(path, real) == NULL) { /* no /proc */
        err_set(e, "%s: cannot tell which directory it is in: %s", path, strerror(errno));
        free(real);
        free(at);
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
    char *cwd = path[0] == '/' ? NULL : getcwd(NULL, 0);
    char *as_named = path[0] == '/' ? xstrdup(path) : cwd ? xasprintf("%s/%s", cwd, path) : NULL;
    free(cwd);
    if (ok && as_named == NULL) {
        err_set(e, "%s: cannot tell which directory it is named from: %s", path, strerror(errno));
        ok = false;
    }
    const char *way = ok ? path_untrusted_way(as_named, 0, at, PATH_MAX) : NULL;
    if (ok && way == NULL && strcmp(as_named, real) != 0)
        way = path_untrusted_way(real, 0, at, PATH_MAX);
    free(as_named);
    if (way) {
        err_set(e,
                "%s: %s on the way to it %s; refusing it as root (keep profiles where only root "
                "may change them)",
                path, at, way);
        ok = false;
    }
    free(real);
    free(at);
    return ok;
}

/* The text of the profile at path, and in *st the file it was read from. */
static bool read_text(const char *path, char **text, struct stat *st, struct err *e)
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
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        err_set(e, "%s: not a regular file", path);
        close(fd);
        return false;
    }
    if (geteuid() == 0 && !trusted_as_root(path, fd, st, e)) {
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

bool profile_valid_name(const char *s)
{
    if (*s == '\0' || *s == '.' || strlen(s) > 64)
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '-' || *s == '_' || *s == '.' || *s == '@'))
            return false;
    return true;
}

/*
 * Whether inih and the reader found nothing wrong with a file; else e
 * names the first line at fault, whoever saw it (on one line, in this
 * order: an unknown section, a line too long, an odd line, inih's own).
 */
static bool file_parsed(const struct reader *rd, int bad, const char *file, struct err *e)
{
    int first = INT_MAX;
    const int at[] = {rd->bad_section, rd->long_line, rd->odd_line, bad};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
        if (at[i] > 0 && at[i] < first)
            first = at[i];
    if (rd->bad_section == first) {
        profile_unknown_section(e, (struct origin){file, rd->bad_section, NULL}, rd->bad_name);
        return false;
    } else if (rd->long_line == first) {
        err_set(e, "%s:%d: line too long (at most %d characters)", file, rd->long_line,
                LINE_MAX_CHARS);
        return false;
    } else if (rd->odd_line == first) {
        err_set(e, "%s:%d: %s", file, rd->odd_line, rd->odd_why);
        return false;
    } else if (bad > 0) {
        err_set(e, "%s:%d: syntax error: expected '[section]', 'key = value' or a comment", file,
                bad);
        return false;
    } else if (bad < 0) {
        err_set(e, "%s: cannot parse: out of memory", file);
        return false;
    }
    return true;
}

/*
 * The includes a file names, read before its own entries (one `include`
 * may list several profiles, applied left to right), each found along the
 * search path and wrapped in its chain for errors.
 */
static bool read_includes(struct loader *L, const struct file_ctx *c, const char *file,
                          const char *via, struct entries *out, struct err *e)
{
    bool ok = true;
    for (size_t i = 0; ok && i < c->nincludes; i++) {
        /* one `include` may list several profiles, applied left to right */
        char *list = xstrdup(c->includes[i]);
        int line = c->include_lines[i];
        const char *cc = str_harmful(list);
        if (cc) {
            err_set(e, "%s:%d: profile.include: %s", file, line, profile_control_why(cc));
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
                if (*c->includes[i] == '\0')
                    err_set(e,
                            "%s:%d: profile.include: no name given; name a profile or drop "
                            "the line",
                            file, line);
                else
                    err_set(e, "%s:%d: profile.include: an empty name in '%s'", file, line,
                            str_escaped(shown, sizeof(shown), c->includes[i], 64));
                ok = false;
                break;
            }
            if (!strchr(tok, '/') && !profile_valid_name(tok)) {
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
            if (!profile_read_file(L, inc, NULL, chain_with(L, via, file, line, tok), out, &sub)) {
                nest_error(e, file, line, tok, sub.msg);
                ok = false;
            }
            free(inc);
        }
        free(list);
    }
    return ok;
}

/*
 * Read one file and, first, its includes into out. via is the include chain
 * that led here (NULL for the top file); errors found while reading are
 * wrapped in it by the callers, entries carry it for the errors found later.
 */
bool profile_read_file(struct loader *L, const char *path, const char *text, const char *via,
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
        if (!read_text(path, &owned, &st, e))
            return false;
        text = owned; /* st: the file read, which an include cycle names again */
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
    bool ok = file_parsed(&rd, bad, file, e) && read_includes(L, &c, file, via, out, e);
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
