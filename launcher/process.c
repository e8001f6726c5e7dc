/*
 * process.c - fds 0-2 and SIGPIPE, held from main()'s first step until the
 * exec gives the command what its caller gave tunerun (see process.h).
 */
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <unistd.h>

/*
 * An ignored signal stays ignored across exec, so the exec must give the
 * command the caller's disposition back. The verbs that print to stdout
 * get it back at once, so that `tunerun plan | head -1` ends quietly, as
 * any filter does.
 */
static struct sigaction caller_pipe;
static bool pipe_saved;

void process_sigpipe_ignore(void)
{
    struct sigaction ignored = {.sa_handler = SIG_IGN};
    sigemptyset(&ignored.sa_mask);
    if (pipe_saved)
        sigaction(SIGPIPE, &ignored, NULL);
    else
        pipe_saved = sigaction(SIGPIPE, &ignored, &caller_pipe) == 0;
}

void process_sigpipe_restore(void)
{
    if (pipe_saved)
        sigaction(SIGPIPE, &caller_pipe, NULL);
}

/* Which of fds 0-2 the caller had closed: held on /dev/null until the exec. */
static unsigned closed_std;

bool process_stdout_was_closed(void)
{
    return closed_std & 2;
}

/*
 * A closed fd 0, 1 or 2 would be the next file tunerun opens: the state
 * directory or its lock, and every message would go into that file. So
 * each is held open on /dev/null while tunerun runs, and closed again just
 * before the exec: the command gets the fds its caller gave.
 */
bool process_hold_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
            return false; /* no /dev/null (a bare chroot): the next open would take fd */
        closed_std |= 1u << fd;
    }
    return true;
}

void process_release_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++)
        if (closed_std & (1u << fd))
            close(fd);
}
