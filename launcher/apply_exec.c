/*
 * apply_exec.c - the last steps of a launch: the privilege drop (privs.c
 * does it), the final resource limits, and the exec.
 *
 * Until the exec the drop keeps the way back to root (privs_regain()), so
 * that a launch that fails after it can still undo what it took as root;
 * the exec clears it. The final limits are set after everything else that
 * tunerun writes, so that a low one binds the service and not tunerun;
 * their undo gives tunerun its own back for that undo.
 */
#include "apply.h"
#include "process.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* RLIM_INFINITY is the largest rlim_t */
#define RLIM_MIN(a, b) ((a) < (b) ? (a) : (b))

/* The exit status of a refused drop: the command's (127, 126) where it is to blame. */
static int drop_status(int exec_error)
{
    return exec_error == 0                                 ? EXIT_TUNERUN
           : exec_error == ENOENT || exec_error == ENOTDIR ? EXIT_NOT_FOUND
                                                           : EXIT_CANNOT_RUN;
}

void apply_privileges(struct launch_state *ls, const struct plan_step *s, struct step_result *r)
{
    const struct privs *pv = s->u.privileges.pv;
    int exec_error;
    struct err e;
    ls->dropped = true; /* even a drop refused part way is taken back */
    if (privs_drop(pv, ls->argv[0], s->u.privileges.path, &exec_error, &e) != 0) {
        step_result_set(r, STEP_FAILED, e.code, "%s", e.msg);
        r->exit_status = drop_status(exec_error);
        return;
    }
    char *who = privs_describe(pv);
    step_result_set(r, STEP_OK, 0, "%s", who);
    free(who);
}

/*
 * Where root cannot be had again, nothing that needs it is undone, and
 * whoever will undo it is named: the next launch prunes the claim, a
 * later launch's sweep removes the cgroup once empty, and a pool that
 * yielded keeps the smaller set until it restarts.
 */
bool apply_root_again(struct launch_state *ls)
{
    if (!ls->dropped || ls->root_lost)
        return !ls->root_lost;
    ls->root_lost = privs_regain(&ls->root_why) != 0;
    ls->dropped = ls->root_lost; /* taken back: nothing more to undo */
    if (ls->root_lost)
        log_notice("cannot be root again (%s): its claim is left for the next launch to "
                   "remove, its cgroup for the sweep, and services that yielded CPUs to it keep "
                   "the smaller set until they restart",
                   ls->root_why.msg);
    return !ls->root_lost;
}

/*
 * The limits as the service gets them: each as the profile asks, as far as
 * the hard limit the raise step reached. Only lowers, which needs no
 * privilege, so it works after the drop too; a lowered hard limit cannot
 * be raised back without CAP_SYS_RESOURCE. What each was is kept for the
 * undo, and for the E2BIG reason: the limit tunerun had.
 */
void apply_final_rlimits(struct launch_state *ls, struct step_result *r)
{
    const struct plan *pl = ls->pl;
    memcpy(ls->before_final, ls->limits, sizeof(ls->limits));
    ls->final_set = true;
    char names[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < pl->nsteps; i++) {
        const struct plan_step *s = &pl->steps[i];
        if (s->type != STEP_RLIMIT)
            continue;
        int res = s->u.rlimit.resource;
        struct rlimit now = ls->limits[res];
        struct rlimit want = {RLIM_MIN(s->u.rlimit.soft, now.rlim_max),
                              RLIM_MIN(s->u.rlimit.hard, now.rlim_max)};
        if (setrlimit(res, &want) < 0) {
            int error = errno;
            apply_final_rlimits_undo(ls); /* all or none: tunerun's own, for what it says now */
            step_result_set(r, STEP_FAILED, error, "cannot lower %s to the plan's limits: %s",
                            rlimit_name(res), strerror(error));
            return;
        }
        ls->limits[res] = want;
        int w =
            snprintf(names + len, sizeof(names) - len, "%s%s", len ? ", " : "", rlimit_name(res));
        len += w > 0 && (size_t)w < sizeof(names) - len ? (size_t)w : 0;
    }
    step_result_set(r, STEP_OK, 0, "%s", names);
}

/*
 * After a failed exec: the limits as they were before the final step
 * (root may raise a hard limit again only with CAP_SYS_RESOURCE, which the
 * drop took: root is taken back first; without it, each soft limit as
 * high as its hard one goes), for what tunerun still does; and past a file
 * size limit writes fail with EFBIG instead of killing it (there is no
 * exec left to inherit SIG_IGN).
 */
void apply_final_rlimits_undo(struct launch_state *ls)
{
    if (!ls->final_set)
        return;
    apply_root_again(ls);
    signal(SIGXFSZ, SIG_IGN);
    for (size_t i = 0; i < ls->pl->nsteps; i++) {
        if (ls->pl->steps[i].type != STEP_RLIMIT)
            continue;
        int res = ls->pl->steps[i].u.rlimit.resource;
        struct rlimit now;
        if (setrlimit(res, &ls->before_final[res]) == 0) {
            ls->limits[res] = ls->before_final[res];
            continue;
        }
        if (getrlimit(res, &now) < 0)
            continue;
        now.rlim_cur = now.rlim_max;
        if (setrlimit(res, &now) == 0)
            ls->limits[res] = now;
    }
    ls->final_set = false;
}

/*
 * The room an exec leaves the argument and environment strings under a
 * soft stack limit: a quarter of it, at most 6 MiB (three quarters of
 * _STK_LIM) and at least 128 KiB (ARG_MAX), less a pointer per string, as
 * fs/exec.c computes it (prepare_arg_pages(), later bprm_stack_limits()).
 */
static size_t exec_room(rlim_t stack, size_t pointers)
{
    size_t quarter = stack == RLIM_INFINITY || stack / 4 > (6u << 20) ? 6u << 20 : stack / 4;
    size_t room = quarter < (128u << 10) ? 128u << 10 : quarter;
    return room > pointers ? room - pointers : 0;
}

/*
 * Why execvp() failed with E2BIG, where the stack limit the plan set is the
 * reason: the strings the kernel copies (the file's name, the environment,
 * the arguments, under a first pointer's slot) pass the room that limit
 * leaves them, and not the room tunerun's own had (before the final step).
 * A string over 128 KiB (MAX_ARG_STRLEN) is too long under any limit.
 * Writes nothing else.
 */
static void e2big_reason(const struct launch_state *ls, char *const *argv, char *buf, size_t n)
{
    bool planned = false;
    for (size_t i = 0; i < ls->pl->nsteps && !planned; i++)
        planned = ls->pl->steps[i].type == STEP_RLIMIT &&
                  ls->pl->steps[i].u.rlimit.resource == RLIMIT_STACK;
    char *file = NULL;
    if (!planned || !ls->final_set || command_error(argv[0], getenv("PATH"), &file) != 0) {
        free(file);
        return; /* the plan set no stack limit: not the plan's doing */
    }
    rlim_t now = ls->limits[RLIMIT_STACK].rlim_cur,
           before = ls->before_final[RLIMIT_STACK].rlim_cur;
    size_t need = strlen(file) + 1 + sizeof(char *), pointers = 0, longest = 0;
    free(file);
    for (int pass = 0; pass < 2; pass++)
        for (char *const *s = pass == 0 ? argv : environ; s && *s; s++) {
            size_t len = strlen(*s) + 1;
            need += len;
            pointers += sizeof(char *);
            longest = len > longest ? len : longest;
        }
    if (longest > (128u << 10) || need <= exec_room(now, pointers) ||
        need > exec_room(before, pointers))
        return;
    char limit[24];
    rlim_str(limit, sizeof(limit), now);
    snprintf(buf, n,
             ": its arguments and environment take %zu KiB, more than the %zu KiB the plan's "
             "stack limit leaves them (limits.stack = %s bytes: a quarter of it, and at least "
             "128 KiB; fix: limits.stack = %zuK or more)",
             (need + 1023) / 1024, exec_room(now, pointers) / 1024, limit,
             (4 * (need + pointers) + 1023) / 1024);
}

/*
 * tunerun becomes the command: fds 0-2 and SIGPIPE as the caller gave
 * them, then execvp(). It returns only when the exec failed, with this
 * process tunerun again: the fds held, SIGPIPE ignored, and why (E2BIG's
 * reason computed under the plan's stack limit, before the undo gives
 * tunerun its own back).
 */
void apply_exec(struct launch_state *ls, const struct plan_step *s, struct step_result *r)
{
    char *const *argv = s->u.exec.argv;
    fflush(NULL);
    process_release_std_fds();
    process_sigpipe_restore();
    execvp(argv[0], argv);
    int error = errno;
    process_sigpipe_ignore();
    (void)process_hold_std_fds(); /* what the undo opens must not land on 0-2 */
    char reason[384] = "";
    if (error == E2BIG)
        e2big_reason(ls, argv, reason, sizeof(reason));
    step_result_set(r, STEP_FAILED, error, "cannot execute '%s': %s%s", ls->shown, strerror(error),
                    reason);
    r->exit_status = error == ENOENT || error == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}
