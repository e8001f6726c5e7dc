/*
 * verbs.h - the verbs that show what tunerun finds, each gathered by its
 * module and printed by report.c (see verbs.c).
 */
#ifndef TUNERUN_VERBS_H
#define TUNERUN_VERBS_H

#include <stdbool.h>

#include "profile.h"

/* `tunerun profiles [--keys]`: what the search path holds; 125 when it holds none. */
int verb_profiles(bool keys, const struct profile_paths *paths);
/* `tunerun topo`: the topology as a launch would see it; 0, or 125. */
int verb_topo(const char *topology, const char *state_dir, bool json);
/* `tunerun ps`: the services in state_dir (NULL: the default one); 0, or 125. */
int verb_ps(const char *state_dir, bool json, bool metrics);
/*
 * `tunerun doctor`: every check, shown; p may be NULL. 0 for ok or info,
 * 1 for a warning, 2 for a critical finding, 125 when root or data_dir
 * cannot be audited (doctor.h).
 */
int verb_doctor(const char *root, const struct profile *p, const char *data_dir, bool json);

#endif
