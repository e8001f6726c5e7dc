/*
 * systemd.h - `tunerun systemd PROFILE [-- COMMAND]`: a unit drop-in,
 * composed here and written out by report.c.
 */
#ifndef TUNERUN_SYSTEMD_H
#define TUNERUN_SYSTEMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "profile.h"

/* The installed systemd's release number, 0 when there is none. */
int systemd_version(void);

/*
 * A drop-in whose ExecStart= runs COMMAND (or a placeholder) under
 * `tunerun PROFILE`, with the profile's limits, OOM score, swap limit and
 * THP mode as unit settings (MemoryTHP= only for systemd >= 260), written
 * into f.
 */
struct dropin_args {
    const char *tunerun;      /* its absolute path */
    const char *profile_file; /* absolute, or NULL for the profile's name */
    const char *const *sets;  /* --set assignments, kept as given */
    size_t nsets;
    char *const *command; /* NULL: a placeholder */
    bool strict;
    const char *verbosity; /* "-q", "-v" or NULL */
    const char *state_dir; /* absolute, or NULL for the default */
    bool run;              /* an explicit "run": the profile is named like a verb */
};

void systemd_dropin(FILE *f, const struct profile *p, const struct dropin_args *a, int version,
                    bool cgroup_v2);

/*
 * The verb: the drop-in for this binary (said when someone else may
 * change it), with `a`'s profile file and state directory by their
 * absolute paths, as the unit needs them; 0, or 125 (said).
 */
int systemd_run(const struct profile *p, const struct dropin_args *a);

#endif
