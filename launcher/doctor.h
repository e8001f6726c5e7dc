/*
 * doctor.h - `tunerun doctor [PROFILE]`: the seed's checklist as a host
 * audit. Read-only: every source is read under a root path (default "/"),
 * so the same checks run against fixture trees of /proc and /sys.
 */
#ifndef TUNERUN_DOCTOR_H
#define TUNERUN_DOCTOR_H

#include <stdbool.h>
#include <stdio.h>

#include "profile.h"

enum severity { SEV_OK, SEV_INFO, SEV_WARN, SEV_CRIT };

/* tunerun's own failure (env(1)'s 125): a --root or --data-dir it cannot use. */
#define DOCTOR_EXIT_UNUSABLE 125

/*
 * Run every check and print them (text grouped in the seed's order, or
 * JSON). p may be NULL for a profile-free audit. Returns the exit status:
 * 0 for ok/info, 1 for a warning, 2 for a critical finding, and
 * DOCTOR_EXIT_UNUSABLE, with an error on stderr naming the option and
 * nothing printed to out, when root (NULL: "/") is not a directory holding
 * proc/ and sys/, or data_dir is not a directory (under another root: not
 * an absolute path).
 */
int doctor_run(FILE *out, const char *root, const struct profile *p, const char *data_dir,
               bool json);

#endif
