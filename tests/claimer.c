/*
 * tests/claimer.c - the launch path up to the claim, on a machine that is
 * not this one: for many launches at once on a synthetic topology, which
 * `tunerun run` rightly refuses to bind to.
 *
 *   claimer STATE_DIR TOPOLOGY PROFILE_INI GO_FILE
 *
 * Loads the profile and topology, waits until GO_FILE exists (so that all
 * the claimers start together), then does what run() does before it
 * applies anything: lock the registry, read the live claims, plan, claim,
 * release the lock. It prints the claimed CPUs, or "degraded" and exits 125
 * as --strict would, and holds its claim until killed.
 */
#include "plan.h"
#include "profile.h"
#include "registry.h"
#include "state.h"
#include "topo.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
    struct err e;
    struct profile p;
    struct topo t;
    struct state_dir sd;
    if (argc != 5) {
        fprintf(stderr, "usage: claimer STATE_DIR TOPOLOGY PROFILE_INI GO_FILE\n");
        return 2;
    }
    if (state_dir_open(&sd, argv[1], true, &e) != STATE_OK || !topo_load(&t, argv[2], NULL, &e) ||
        !profile_load(&p, argv[3], NULL, &e)) {
        fprintf(stderr, "claimer: %s\n", e.msg);
        return 2;
    }
    while (access(argv[4], F_OK) != 0)
        nanosleep(&(struct timespec){0, 1000000}, NULL);

    struct registry reg;
    struct plan pl;
    if (!registry_open(&reg, &sd, REGISTRY_WRITE, NULL, &e)) {
        fprintf(stderr, "claimer: %s\n", e.msg);
        return 2;
    }
    registry_check(&reg, NULL, NULL);
    struct plan_input in = {.profile = &p,
                            .topo = &t,
                            .environ = environ,
                            .registry = true,
                            .claims = reg.claims,
                            .nclaims = reg.nclaims};
    if (!plan_build(&pl, &in, &e)) {
        fprintf(stderr, "claimer: %s\n", e.msg);
        return 2;
    }
    if (pl.degraded) {
        registry_close(&reg);
        plan_free(&pl);
        topo_free(&t);
        profile_free(&p);
        state_dir_close(&sd);
        printf("degraded\n");
        return 125;
    }
    struct claim k = {.profile = (char *)p.name,
                      .cpus = pl.cpus,
                      .nodes = pl.nodes,
                      .mem_nodes = pl.mem_nodes,
                      .mpol = "bind",
                      .exclusive = p.placement.exclusive,
                      .pid = (long)getpid()};
    char name[256];
    if (registry_claim(&reg, &k, name, sizeof(name), &e) < 0) {
        fprintf(stderr, "claimer: %s\n", e.msg);
        return 2;
    }
    registry_close(&reg);
    char *cpus = bitmap_list(pl.cpus);
    printf("%s\n", cpus);
    fflush(stdout);
    free(cpus);
    pause(); /* the claim lives while this process holds its fd */
    return 0;
}
