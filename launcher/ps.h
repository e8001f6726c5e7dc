/*
 * ps.h - `tunerun ps`: each live claim, the processes holding it, and
 * whether every thread is still inside its CPUs (and memory inside its
 * nodes, for a bound service).
 */
#ifndef TUNERUN_PS_H
#define TUNERUN_PS_H

#include <stdbool.h>
#include <stdio.h>

#include "log.h"
#include "state.h"

/* Print them as text or JSON; false (e set) when the registry cannot be read. */
bool ps_show(FILE *f, const struct state_dir *sd, bool json, struct err *e);

#endif
