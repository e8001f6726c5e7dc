/*
 * util.c - allocation that cannot fail quietly, and shared formatting.
 */
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_of_memory(void)
{
    fputs("tunerun: out of memory\n", stderr);
    exit(125);
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        out_of_memory();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        out_of_memory();
    return q;
}

char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (d == NULL)
        out_of_memory();
    return d;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    char *s;
    if (vasprintf(&s, fmt, ap) < 0)
        out_of_memory();
    return s;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

char *bitmap_list(hwloc_const_bitmap_t set)
{
    char *s = NULL;
    if (hwloc_bitmap_iszero(set))
        return xstrdup("none");
    if (hwloc_bitmap_list_asprintf(&s, set) < 0)
        out_of_memory();
    return s;
}

void rlim_str(char *buf, size_t n, rlim_t v)
{
    if (v == RLIM_INFINITY)
        snprintf(buf, n, "unlimited");
    else
        snprintf(buf, n, "%llu", (unsigned long long)v);
}
