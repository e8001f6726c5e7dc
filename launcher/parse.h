/*
 * parse.h - value parsers shared by profiles, --set and the command line.
 *
 * Every parser is strict (no trailing junk, no silent wrap-around) and
 * reports failure as a short phrase that callers put after "file:line: key:".
 * They touch nothing but their arguments and the reason kept for
 * parse_error(), so the fuzzers can drive them.
 */
#ifndef TUNERUN_PARSE_H
#define TUNERUN_PARSE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

/* A short reason for the last failure, valid until the next call. */
const char *parse_error(void);
/* Whether that failure was a number out of range (the reason gives the range). */
bool parse_error_is_range(void);

bool parse_bool(const char *s, bool *out);
bool parse_long(const char *s, long min, long max, long *out);
/* "64M", "1G", "512k", "4096": binary units, case-insensitive, optional "B"/"iB". */
bool parse_size(const char *s, uint64_t *out);
/* "N" (bytes or count), "unlimited"/"infinity", size suffixes allowed. */
bool parse_rlim(const char *s, rlim_t *out);
/* "soft[:hard]"; a single value sets both, as prlimit(1) and LimitNOFILE= do. */
bool parse_rlim_pair(const char *s, rlim_t *soft, rlim_t *hard);

/* Trim leading and trailing blanks in place; returns s. */
char *str_trim(char *s);

#endif
