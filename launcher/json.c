/*
 * json.c - the JSON writer (see json.h).
 */
#include "json.h"
#include "util.h"

#include <stdlib.h>

/* A JSON string: escaped, and valid UTF-8 whatever the bytes were. */
static void quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        default:
            if (*p < 0x20) {
                fprintf(f, "\\u%04x", *p);
            } else if (*p < 0x80) {
                fputc(*p, f);
            } else {
                size_t n = utf8_valid(p);
                if (n == 0) {
                    fputs("\\ufffd", f); /* not UTF-8: replaced, as JSON requires */
                } else {
                    fwrite(p, 1, n, f);
                    p += n - 1;
                }
            }
        }
    }
    fputc('"', f);
}

/* The comma, line and indent before a member, and its key. */
static void lead(struct json *j, const char *key)
{
    if (j->depth > 0 && j->member[j->depth])
        fputc(',', j->f);
    if (j->depth > 0 && j->depth <= 2)
        fprintf(j->f, "\n%*s", (int)(2 * j->depth), "");
    else if (j->depth > 0 && j->member[j->depth])
        fputc(' ', j->f);
    if (j->depth > 0)
        j->member[j->depth] = true;
    if (key) {
        quoted(j->f, key);
        fputs(": ", j->f);
    }
}

void json_start(struct json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    for (unsigned i = 0; i < JSON_DEPTH; i++) {
        j->member[i] = false;
        j->close[i] = '\0';
    }
}

/* A container opens a level; deeper than JSON_DEPTH would be a caller's bug, and stays flat. */
static void open_level(struct json *j, const char *key, char open, char close)
{
    lead(j, key);
    fputc(open, j->f);
    if (j->depth + 1 < JSON_DEPTH)
        j->depth++;
    j->member[j->depth] = false;
    j->close[j->depth] = close;
}

void json_object(struct json *j, const char *key)
{
    open_level(j, key, '{', '}');
}

void json_array(struct json *j, const char *key)
{
    open_level(j, key, '[', ']');
}

void json_end(struct json *j)
{
    if (j->depth == 0)
        return;
    /* a container of lines ends on a line of its own */
    if (j->member[j->depth] && j->depth <= 2)
        fprintf(j->f, "\n%*s", (int)(2 * (j->depth - 1)), "");
    fputc(j->close[j->depth], j->f);
    j->depth--;
}

void json_finish(struct json *j)
{
    while (j->depth > 0)
        json_end(j);
    fputc('\n', j->f);
}

void json_str(struct json *j, const char *key, const char *s)
{
    lead(j, key);
    if (s)
        quoted(j->f, s);
    else
        fputs("null", j->f);
}

void json_int(struct json *j, const char *key, long long v)
{
    lead(j, key);
    fprintf(j->f, "%lld", v);
}

void json_uint(struct json *j, const char *key, unsigned long long v)
{
    lead(j, key);
    fprintf(j->f, "%llu", v);
}

void json_bool(struct json *j, const char *key, bool v)
{
    lead(j, key);
    fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
    lead(j, key);
    fputs("null", j->f);
}

void json_set(struct json *j, const char *key, hwloc_const_bitmap_t set)
{
    char *list = hwloc_bitmap_iszero(set) ? NULL : bitmap_list(set);
    json_str(j, key, list ? list : "");
    free(list);
}
