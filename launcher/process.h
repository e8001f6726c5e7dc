/*
 * process.h - this process as the command must get it at the exec: fds
 * 0-2 as the caller gave them, and SIGPIPE as the caller left it.
 *
 * From main()'s first step until the exec, tunerun holds a closed fd 0, 1
 * or 2 open on /dev/null (the next file it opened would take the number,
 * and every message would land in it), and ignores SIGPIPE (a warning to
 * a stderr whose reader has gone must not end a launch with 141, the
 * service never run). The exec step gives both back, and takes them
 * again if the exec fails.
 */
#ifndef TUNERUN_PROCESS_H
#define TUNERUN_PROCESS_H

#include <stdbool.h>

/* SIGPIPE ignored; the caller's disposition kept for process_sigpipe_restore(). */
void process_sigpipe_ignore(void);
/* The caller's disposition back: at the exec, and for the verbs that print to stdout. */
void process_sigpipe_restore(void);
/* Closed fds 0-2 held on /dev/null; false (errno) when there is no /dev/null to hold them. */
bool process_hold_std_fds(void);
/* Those fds closed again, just before the exec. */
void process_release_std_fds(void);
/* Whether the caller had closed stdout, for a verb's write check. */
bool process_stdout_was_closed(void);

#endif
