/*
 * plan_steps.c - the steps that belong to the launch itself rather than to
 * one of the profile's settings: the claim, the yield of shared pools, the
 * privilege drop, the final resource limits and the exec.
 *
 * They used to be coded inline in the launch; as steps they are listed by
 * `tunerun plan` like every other effect, named in every message, and
 * undone by the same loop. What each does at run time is apply.c's.
 */
#include "planner.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

/*
 * FNV-1a over the profile's name and every word of the command, each
 * ended by its NUL: a name, not a secret. Two launches with the same
 * profile and arguments are the same service to the registry.
 */
void plan_launch_key(const char *profile, char *const *command, char *out, size_t n)
{
    unsigned long long h = 14695981039346656037ULL;
    const char *name = profile ? profile : "";
    for (size_t i = 0; i == 0 || command[i - 1]; i++) {
        const char *s = i == 0 ? name : command[i - 1];
        for (; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        h = (h ^ 0) * 1099511628211ULL; /* the NUL between words */
    }
    snprintf(out, n, "%016llx", h);
}

/*
 * First: the registry learns where this service runs before anything else
 * changes, under the lock that makes concurrent launches decide one at a
 * time. A claim the default state directory cannot take costs what no
 * state directory costs (a warning); one in a directory given with
 * --state-dir was asked for, and refuses the launch.
 */
void plan_add_claim_step(struct ctx *c, const struct plan_input *in)
{
    if (!in->registry)
        return;
    struct plan_step *s = plan_add_step(
        c->pl, STEP_CLAIM,
        xasprintf("services started later keep off what it holds, as their profiles ask, and "
                  "a restart finds its placement again; the claim lives while a process of "
                  "the service holds its file open"));
    const struct profile *p = in->profile;
    s->required = in->state_dir_asked;
    s->u.claim.dir = in->state_dir;
    s->u.claim.exclusive = p->placement.exclusive;
    s->u.claim.pool = !p->placement.exclusive && p->placement.cpus == CPUS_ALL;
    s->u.claim.avoid = p->placement.avoid;
    s->u.claim.navoid = p->placement.navoid;
    plan_launch_key(in->profile->name, in->command ? in->command : (char *const[]){NULL},
                    s->u.claim.key, sizeof(s->u.claim.key));
}

/* After the placement: the pools that plan_add_shrinks() found give up what it takes. */
void plan_add_yield_step(struct ctx *c)
{
    if (c->pl->nshrinks == 0)
        return;
    plan_add_step(c->pl, STEP_YIELD,
                  xasprintf("a shared pool on every CPU it may use gives up the ones placed "
                            "here, so that what this service keeps apart from does not run "
                            "on them; it gets them back if the launch fails"));
}

/*
 * The capabilities that make whoever holds them as good as root, each with
 * the way it gets there: kept by a user other than root, they undo what
 * [security] user is for. The list follows capabilities(7) and the
 * well-known escalations of each.
 */
static const struct {
    int cap;
    const char *name, *how;
} root_caps[] = {
    {CAP_CHOWN, "cap_chown", "takes /etc/shadow for its own"},
    {CAP_DAC_OVERRIDE, "cap_dac_override", "writes any file, /etc/shadow and units included"},
    {CAP_DAC_READ_SEARCH, "cap_dac_read_search", "reads any file, root's keys included"},
    {CAP_FOWNER, "cap_fowner", "changes the mode of any file"},
    {CAP_SETGID, "cap_setgid", "joins the disk group, whose devices hold every file"},
    {CAP_SETUID, "cap_setuid", "becomes uid 0"},
    {CAP_SETFCAP, "cap_setfcap", "gives a program of its own every capability"},
    {CAP_SYS_MODULE, "cap_sys_module", "loads kernel code"},
    {CAP_SYS_RAWIO, "cap_sys_rawio", "writes the disks and memory raw"},
    {CAP_SYS_PTRACE, "cap_sys_ptrace", "runs its code in root's processes"},
    {CAP_SYS_ADMIN, "cap_sys_admin", "mounts over any file"},
    {CAP_SYS_BOOT, "cap_sys_boot", "boots a kernel of its own (kexec)"},
    {CAP_MKNOD, "cap_mknod", "makes a device node of the root disk"},
};

/*
 * What [security] means for the plan: a drop this process cannot make
 * (said by `plan` ahead of the launch that would refuse it), uid 0 with
 * fewer capabilities, and a user other than root who keeps a capability
 * that is as good as root, which is root in all but name: a warning, as
 * the drop the profile asks for then contains nothing.
 */
void plan_note_privileges(struct plan *pl, const struct plan_input *in)
{
    const struct privs *pv = in->privs;
    if (in->privs_refused)
        plan_note_add(pl, NOTE_WARN,
                      "privileges: %s; a launch from here refuses to execute (exit 125)",
                      in->privs_refused);
    if (pv && pv->caps && (!pv->change_id || pv->uid == 0))
        plan_note_add(
            pl, NOTE_INFO,
            "security: the service keeps uid 0: with fewer capabilities it still owns root's "
            "files (/etc, units, cron); [security] user contains it");
    if (pv == NULL || !pv->caps || !pv->change_id || pv->uid == 0)
        return;
    char *which = NULL;
    for (size_t i = 0; i < sizeof(root_caps) / sizeof(root_caps[0]); i++) {
        if (!(pv->keep & (UINT64_C(1) << root_caps[i].cap)))
            continue;
        char *more = xasprintf("%s%s%s (%s)", which ? which : "", which ? ", " : "",
                               root_caps[i].name, root_caps[i].how);
        free(which);
        which = more;
    }
    if (which)
        plan_note_add(
            pl, NOTE_WARN,
            "security: %s keeps what makes %s as good as root: %s; keep only what the service "
            "needs (such as cap_net_bind_service), or run it as root on purpose",
            pv->caps_at, pv->user ? pv->user : "the service's user", which);
    free(which);
}

/*
 * The PATH execvp() will search: the plan's own [env] PATH, else the one
 * the command inherits; NULL for none (execvp then searches /bin:/usr/bin).
 */
static const char *exec_path(const struct plan *pl, char *const *environ)
{
    for (size_t i = pl->nsteps; i-- > 0;)
        if (pl->steps[i].type == STEP_SETENV && strcmp(pl->steps[i].u.env.name, "PATH") == 0)
            return pl->steps[i].u.env.value;
    return plan_getenv(environ, "PATH");
}

/*
 * The drop comes after everything that needs root (the claim, the cgroup,
 * raising limits, the oom score, moving other services' threads), as
 * util-linux setpriv and bubblewrap order it. Its refusal is never a
 * warning: the service would run with more than its profile gives it.
 * The command is checked as the service's user, in the PATH the
 * environment step will set (added before it, so known once the plan's
 * environment is).
 */
void plan_add_privileges_step(struct ctx *c, const struct plan_input *in)
{
    if (in->privs == NULL)
        return;
    struct plan_step *s =
        plan_add_step(c->pl, STEP_PRIVILEGES,
                      xasprintf("a service that is broken into gets no more than its profile "
                                "gives it: dropped after everything that needs root"));
    s->required = true;
    s->u.privileges.pv = in->privs;
}

/* Once the environment steps are in: where the command is looked for. */
void plan_settle_exec_path(struct plan *pl, char *const *environ)
{
    const char *path = exec_path(pl, environ);
    for (size_t i = 0; i < pl->nsteps; i++)
        if (pl->steps[i].type == STEP_PRIVILEGES)
            pl->steps[i].u.privileges.path = path ? xstrdup(path) : NULL;
}

/*
 * The limits below tunerun's own come last: a low fsize, as, data or
 * stack limit binds the service, not the claim, cgroup and table work
 * tunerun does on its way there. The raise steps went first, as only root
 * may raise a hard limit.
 */
void plan_add_final_rlimits_step(struct ctx *c)
{
    bool any = false;
    for (size_t i = 0; i < c->pl->nsteps && !any; i++)
        any = c->pl->steps[i].type == STEP_RLIMIT;
    if (!any)
        return;
    struct plan_step *s =
        plan_add_step(c->pl, STEP_RLIMITS_FINAL,
                      xasprintf("each limit as the profile asks it, lowered last so that it "
                                "binds the service, not tunerun's own work before the exec"));
    s->required = true;
}

/* Last: tunerun becomes the service, as execvp(3) does it. */
void plan_add_exec_step(struct ctx *c, const struct plan_input *in)
{
    struct plan_step *s = plan_add_step(
        c->pl, STEP_EXEC,
        xasprintf("tunerun becomes the service in place: the same pid, so that a unit's main "
                  "process and a container's PID 1 are the service, and everything above "
                  "holds for it"));
    s->required = true;
    s->u.exec.argv = c->pl->argv ? c->pl->argv : in->command;
}
