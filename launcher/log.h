/*
 * log.h - how tunerun talks to stderr (usage() and the "Try --help" line after a
 * usage error aside, which are the command line's, not messages).
 *
 * Every line reads "tunerun: PROFILE: message". When stderr is the systemd
 * journal (JOURNAL_STREAM names our stderr), each line starts with its
 * syslog priority ("<3>" error, "<4>" warning, "<5>" notice, "<6>" info) so that
 * `journalctl -p warning` finds tunerun's warnings.
 */
#ifndef TUNERUN_LOG_H
#define TUNERUN_LOG_H

#include <stdarg.h>
#include <stddef.h>

/* As env(1) has them: tunerun's own failure, a command that cannot run, one not found. */
#define EXIT_TUNERUN    125
#define EXIT_CANNOT_RUN 126
#define EXIT_NOT_FOUND  127

enum log_level { LOG_QUIET = 0, LOG_NORMAL = 1, LOG_VERBOSE = 2 };

void log_init(enum log_level level);
/* Change the level alone (after the options are read); the stream test stays. */
void log_set_level(enum log_level level);
/* The profile name that prefixes every later message (NULL for none). */
void log_set_subject(const char *subject);
enum log_level log_level(void);

void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A line of an error's own, not "tunerun: "'s (a usage hint): its priority too, for the journal. */
void log_error_line(const char *line);

/*
 * Errors are values, of this one type everywhere: a function that can
 * fail fills a struct err and returns false (or -1); the caller decides
 * what it costs, and only main() picks the exit status. A step's result
 * (apply.h) carries one too, for what went wrong and its fix.
 */
struct err {
    int code;       /* the errno of the call that failed; 0 when no call did */
    char msg[1024]; /* one line: what failed, on what, and the fix where there is one */
};
/* The message; code 0. */
void err_set(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The message, and the errno of the call that failed. */
void err_errno(struct err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
