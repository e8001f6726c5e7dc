/*
 * parse.c - strict parsers for the small value languages of profiles.
 *
 * Written by hand because no library in our set parses sizes, booleans and
 * rlimit pairs with the error messages we want; CPU lists go through
 * hwloc_bitmap_list_sscanf() instead, in the callers.
 */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char parse_err[128];
static bool parse_err_range;

const char *parse_error(void)
{
    return parse_err;
}

bool parse_error_is_range(void)
{
    return parse_err_range;
}

static bool fail(const char *fmt, const char *arg)
{
    snprintf(parse_err, sizeof(parse_err), fmt, arg);
    parse_err_range = false;
    return false;
}

/* A number written well but too big (or small) for its type or key; fmt has one %s. */
static bool fail_range(const char *fmt, const char *arg)
{
    snprintf(parse_err, sizeof(parse_err), fmt, arg);
    parse_err_range = true;
    return false;
}

char *str_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

bool parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return fail("'%s' is not yes or no", s);
}

bool parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    if (*s == '\0' || isspace((unsigned char)*s))
        return fail("'%s' is not a number", s);
    long v = strtol(s, &end, 10);
    if (*end != '\0')
        return fail("'%s' is not a number", s);
    if (errno == ERANGE || v < min || v > max) {
        snprintf(parse_err, sizeof(parse_err), "'%.40s' is out of range %ld..%ld", s, min, max);
        parse_err_range = true;
        return false;
    }
    *out = v;
    return true;
}

bool parse_size(const char *s, uint64_t *out)
{
    static const char units[] = "bkmgtp"; /* b = bytes, then powers of 1024 */
    char *end;
    if (*s == '\0' || !isdigit((unsigned char)*s))
        return fail("'%s' is not a size (like 512M or 4G)", s);
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    bool range = errno == ERANGE;
    unsigned shift = 0;
    if (*end != '\0') {
        const char *u = strchr(units, tolower((unsigned char)*end));
        if (u == NULL)
            return fail("'%s' has an unknown unit (use K, M, G, T or P)", s);
        shift = 10 * (unsigned)(u - units);
        end++;
        /* "M", "MB" and "MiB" all mean 2^20: nobody sizes memory in 10^6. */
        if (shift && strcasecmp(end, "b") != 0 && strcasecmp(end, "ib") != 0 && *end != '\0')
            return fail("'%s' has trailing characters", s);
        if (!shift && *end != '\0')
            return fail("'%s' has trailing characters", s);
    }
    if (range || (shift && v > (UINT64_MAX >> shift)))
        return fail_range("'%.40s' is out of range 0..18446744073709551615 bytes (16 EiB less one)",
                          s);
    *out = (uint64_t)v << shift;
    return true;
}

bool parse_rlim(const char *s, rlim_t *out)
{
    if (strcasecmp(s, "unlimited") == 0 || strcasecmp(s, "infinity") == 0) {
        *out = RLIM_INFINITY;
        return true;
    }
    uint64_t v;
    bool ok = parse_size(s, &v);
    if (!ok && !parse_err_range)
        return fail("'%s' is not a number or 'unlimited'", s);
    if (!ok || v >= (uint64_t)RLIM_INFINITY)
        return fail_range("'%.40s' is out of range 0..18446744073709551614 (or unlimited)", s);
    *out = (rlim_t)v;
    return true;
}

bool parse_rlim_pair(const char *s, rlim_t *soft, rlim_t *hard)
{
    char buf[256]; /* a line of a profile, and so a --set, is shorter */
    if (strlen(s) >= sizeof(buf))
        return fail("'%.40s...' is too long", s);
    strcpy(buf, s);
    char *colon = strchr(buf, ':');
    if (colon)
        *colon = '\0';
    if (!parse_rlim(str_trim(buf), soft))
        return false;
    if (!colon) {
        *hard = *soft;
        return true;
    }
    if (!parse_rlim(str_trim(colon + 1), hard))
        return false;
    if (*hard != RLIM_INFINITY && (*soft == RLIM_INFINITY || *soft > *hard))
        return fail("soft limit above hard limit in '%s'", s);
    return true;
}
