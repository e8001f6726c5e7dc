/*
 * fuzz_profile.c - libFuzzer: the profile parser, includes, --set and the checks.
 *
 * The input is a set of files separated by lines "%%". The first is the
 * profile (/fz/etc/main.ini); the next ones are /fz/etc/a.ini, b.ini, c.ini,
 * then /fz/share/a.ini and d.ini: the search path is /fz/etc then
 * /fz/share, so `include = a` from the admin's a.ini extends the shipped
 * one, as on disk. A part that starts with "set\n" instead holds --set
 * assignments, one per line. Nothing is read from disk.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "privs.h"
#include "profile.h"

#define MAX_FILES 6

static const char *const names[MAX_FILES] = {
    "/fz/etc/main.ini", "/fz/etc/a.ini",   "/fz/etc/b.ini",
    "/fz/etc/c.ini",    "/fz/share/a.ini", "/fz/share/d.ini",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';

    struct profile_file files[MAX_FILES];
    size_t nfiles = 0;
    char *sets = NULL;
    for (char *part = text; part && nfiles < MAX_FILES;) {
        char *sep = strstr(part, "\n%%\n");
        if (sep)
            *sep = '\0';
        if (strncmp(part, "set\n", 4) == 0 && sets == NULL)
            sets = part + 4;
        else
            files[nfiles] = (struct profile_file){names[nfiles], part}, nfiles++;
        part = sep ? sep + 4 : NULL;
    }

    const struct profile_paths paths = {{"/fz/etc", "/fz/share"}, {"admin", "installed"}, 2, NULL, NULL};
    struct profile p;
    struct err e;
    if (nfiles > 0 && profile_load_files(&p, files, nfiles, &paths, &e)) {
        bool ok = true;
        for (char *line = sets, *next; ok && line && *line; line = next) {
            next = strchr(line, '\n');
            if (next)
                *next++ = '\0';
            ok = profile_set(&p, line, &e);
        }
        if (ok && profile_check(&p, &e) && privs_wanted(&p)) {
            char *caps = privs_cap_list(p.security.keep_caps);
            free(caps);
        }
        profile_free(&p);
    }
    free(text);
    return 0;
}
