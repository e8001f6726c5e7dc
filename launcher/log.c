/*
 * log.c - stderr messages with journald priority prefixes.
 */
#include "log.h"
#include "util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static enum log_level current_level = LOG_NORMAL;
static const char *subject;
static bool to_journal;

/*
 * systemd sets JOURNAL_STREAM=DEV:INODE for a unit whose stderr is connected
 * to the journal; it only counts if that is still our stderr (a shell started
 * from the unit may have redirected it).
 */
static bool stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
        return false;
    if (fstat(2, &st) < 0)
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(enum log_level level)
{
    current_level = level;
    to_journal = stderr_is_journal();
}

void log_set_subject(const char *s)
{
    subject = s;
}

void log_set_level(enum log_level level)
{
    current_level = level;
}

enum log_level log_level(void)
{
    return current_level;
}

static void emit(int priority, const char *fmt, va_list ap)
{
    char raw[2048], line[2048];
    vsnprintf(raw, sizeof(raw), fmt, ap);
    /* one line, whatever a name in it holds: a newline or a terminal's escape sequence */
    str_unharmful(line, sizeof(line), raw);
    if (to_journal)
        fprintf(stderr, "<%d>", priority);
    char who[ESCAPED_SIZE(64)];
    if (subject)
        fprintf(stderr, "tunerun: %s: %s\n", str_escaped(who, sizeof(who), subject, 64), line);
    else
        fprintf(stderr, "tunerun: %s\n", line);
}

void log_error_line(const char *line)
{
    if (to_journal)
        fputs("<3>", stderr);
    fprintf(stderr, "%s\n", line);
}

/* The syslog priority of each message kind, and the level from which it is shown. */
#define LOG_AT(name, priority, from)                                                               \
    void name(const char *fmt, ...)                                                                \
    {                                                                                              \
        if (current_level < (from))                                                                \
            return;                                                                                \
        va_list ap;                                                                                \
        va_start(ap, fmt);                                                                         \
        emit(priority, fmt, ap);                                                                   \
        va_end(ap);                                                                                \
    }

LOG_AT(log_error, 3, LOG_QUIET)
LOG_AT(log_warn, 4, LOG_NORMAL)
/* Something another service will notice (its threads moved): said unless -q. */
LOG_AT(log_notice, 5, LOG_NORMAL)
LOG_AT(log_info, 6, LOG_VERBOSE)

/*
 * A message longer than struct err holds keeps its start (what it is
 * about) and its end (what went wrong, and the fix), and loses the
 * middle: a long include chain or path must not cut off the reason.
 */
static void err_text(struct err *e, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

void err_set(struct err *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_text(e, 0, fmt, ap);
    va_end(ap);
}

void err_errno(struct err *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_text(e, code, fmt, ap);
    va_end(ap);
}

static void err_text(struct err *e, int code, const char *fmt, va_list ap)
{
    char *text = xvasprintf(fmt, ap);
    e->code = code;
    size_t len = strlen(text), head = 256, cut = sizeof(" ... ") - 1;
    if (len < sizeof(e->msg)) {
        memcpy(e->msg, text, len + 1);
    } else {
        size_t tail = len - (sizeof(e->msg) - 1 - head - cut);
        /*
         * Both cuts at a character's start, so that a path in UTF-8 stays
         * valid UTF-8: back or on over at most three continuation bytes,
         * since text that is not UTF-8 may hold any number of them in a row.
         */
        for (int k = 0; k < 3 && head > 0 && ((unsigned char)text[head] & 0xc0) == 0x80; k++)
            head--;
        for (int k = 0; k < 3 && ((unsigned char)text[tail] & 0xc0) == 0x80; k++)
            tail++;
        snprintf(e->msg, sizeof(e->msg), "%.*s ... %s", (int)head, text, text + tail);
    }
    free(text);
}
