/*
 * log.c - stderr messages with journald priority prefixes.
 */
#include "log.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

enum log_level log_level(void)
{
    return current_level;
}

static void emit(int priority, const char *fmt, va_list ap)
{
    char line[2048];
    vsnprintf(line, sizeof(line), fmt, ap);
    if (to_journal)
        fprintf(stderr, "<%d>", priority);
    if (subject)
        fprintf(stderr, "tunerun: %s: %s\n", subject, line);
    else
        fprintf(stderr, "tunerun: %s\n", line);
}

void log_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(3, fmt, ap);
    va_end(ap);
}

void log_warn(const char *fmt, ...)
{
    if (current_level < LOG_NORMAL)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(4, fmt, ap);
    va_end(ap);
}

void log_info(const char *fmt, ...)
{
    if (current_level < LOG_VERBOSE)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(6, fmt, ap);
    va_end(ap);
}

void err_set(struct err *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
}
