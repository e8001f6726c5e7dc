/*
 * topologies.h - where the tests find real machine topologies.
 *
 * The hwloc XML exports in ../shared/topologies come from hwloc's own test
 * suite (tests/hwloc/xml at tag hwloc-2.14.0, BSD-3-Clause, copyright the
 * hwloc authors). TUNERUN_TOPOLOGIES overrides the directory.
 */
#ifndef TUNERUN_TEST_TOPOLOGIES_H
#define TUNERUN_TEST_TOPOLOGIES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline const char *topologies_dir(void)
{
    const char *d = getenv("TUNERUN_TOPOLOGIES");
    return d ? d : "../shared/topologies";
}

/* The XML files in the directory, sorted; NULL-terminated; exits if none. */
static inline char **topology_files(void)
{
    struct dirent **names;
    int n = scandir(topologies_dir(), &names, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "cannot read %s (set TUNERUN_TOPOLOGIES): the planner tests need the "
                        "machine topologies\n",
                topologies_dir());
        exit(1);
    }
    char **files = calloc((size_t)n + 1, sizeof(char *));
    int k = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]->d_name);
        if (len > 4 && strcmp(names[i]->d_name + len - 4, ".xml") == 0) {
            files[k] = malloc(strlen(topologies_dir()) + len + 2);
            sprintf(files[k++], "%s/%s", topologies_dir(), names[i]->d_name);
        }
        free(names[i]);
    }
    free(names);
    if (k == 0) {
        fprintf(stderr, "no .xml topologies in %s\n", topologies_dir());
        exit(1);
    }
    return files;
}

static inline void topology_files_free(char **files)
{
    for (char **f = files; *f; f++)
        free(*f);
    free(files);
}

#endif
