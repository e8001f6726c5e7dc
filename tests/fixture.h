/*
 * fixture.h - a tree shaped like a host's /proc and /sys, made for a suite
 * under a temporary root: directories, files, and links relative as
 * sysfs's are. The modules read it as doctor's --root, so a suite can give
 * them any machine's devices.
 */
#ifndef TUNERUN_TEST_FIXTURE_H
#define TUNERUN_TEST_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

/* A temporary root, /tmp/tunerun-NAME.XXXXXX. */
static inline void make_root(const char *name)
{
    snprintf(root, sizeof(root), "/tmp/tunerun-%s.XXXXXX", name);
    if (mkdtemp(root) == NULL)
        fail_msg("mkdtemp: %s", strerror(errno));
}

static inline int remove_root(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    return system(cmd) == 0 ? 0 : -1;
}

static inline void mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                fail_msg("mkdir %s: %s", buf, strerror(errno));
            *p = '/';
        }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        fail_msg("mkdir %s: %s", buf, strerror(errno));
}

/* Write `text` to root/rel, making its directories. */
static inline void put(const char *rel, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s%s", root, rel);
    *strrchr(path, '/') = '\0';
    mkdirs(path);
    path[strlen(path)] = '/';
    FILE *f = fopen(path, "w");
    if (f == NULL)
        fail_msg("%s: %s", path, strerror(errno));
    fprintf(f, "%s\n", text);
    fclose(f);
}

/* A link root/rel -> target, as sysfs's are (relative). */
static inline void link_to(const char *rel, const char *target)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s%s", root, rel);
    *strrchr(path, '/') = '\0';
    mkdirs(path);
    path[strlen(path)] = '/';
    if (symlink(target, path) < 0)
        fail_msg("symlink %s: %s", path, strerror(errno));
}

#endif
