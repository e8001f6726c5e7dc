/*
 * systemd.h - `tunerun systemd PROFILE [-- COMMAND]`: a unit drop-in.
 */
#ifndef TUNERUN_SYSTEMD_H
#define TUNERUN_SYSTEMD_H

#include <stdio.h>

#include "profile.h"

/* The installed systemd's release number, 0 when there is none. */
int systemd_version(void);

/*
 * Print a drop-in whose ExecStart= runs COMMAND (or a placeholder) under
 * `tunerun PROFILE`, with the profile's limits, OOM score, swap limit and
 * THP mode as unit settings (MemoryTHP= only for systemd >= 260).
 */
void systemd_dropin(FILE *f, const struct profile *p, const char *tunerun, char *const *command,
                    int version);

#endif
