/*
 * json.h - the one JSON writer, for report.c's renderings.
 *
 * A stream of members: the writer remembers, per level, whether a member
 * was written yet, so that commas and nesting are never a caller's
 * business and the output is always valid. Strings are escaped and made
 * valid UTF-8 whatever a profile, path or process name held. Members of
 * the outer two levels go on lines of their own, deeper ones inline.
 *
 * Written by hand: the output is small and flat, and none of tunerun's
 * libraries (hwloc, libnuma, libcap, inih) writes JSON.
 */
#ifndef TUNERUN_JSON_H
#define TUNERUN_JSON_H

#include <hwloc/bitmap.h>
#include <stdbool.h>
#include <stdio.h>

#define JSON_DEPTH 16

struct json {
    FILE *f;
    unsigned depth;
    bool member[JSON_DEPTH]; /* a member is written at this level already */
    char close[JSON_DEPTH];  /* what ends the container at this level: '}' or ']' */
};

/*
 * Each call writes one member: with `key` inside an object, without (NULL)
 * inside an array or for the whole document.
 */
void json_start(struct json *j, FILE *f);
void json_object(struct json *j, const char *key);
void json_array(struct json *j, const char *key);
void json_end(struct json *j);    /* of the innermost object or array */
void json_finish(struct json *j); /* the document's end: a newline */

void json_str(struct json *j, const char *key, const char *s); /* NULL: null */
void json_int(struct json *j, const char *key, long long v);
void json_uint(struct json *j, const char *key, unsigned long long v);
void json_bool(struct json *j, const char *key, bool v);
void json_null(struct json *j, const char *key);
/* A CPU or node set in hwloc's list format ("0-3,8"); "" when empty. */
void json_set(struct json *j, const char *key, hwloc_const_bitmap_t set);

#endif
