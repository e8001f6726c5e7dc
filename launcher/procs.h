/*
 * procs.h - the processes and threads of running services, through /proc.
 *
 * A service is whatever holds its claim file open: the process tunerun
 * became, and every process that inherited the fd (a daemonized nginx's
 * master and workers). `tunerun ps` lists them; an arriving service that
 * a shared one must yield CPUs to moves every thread of them.
 */
#ifndef TUNERUN_PROCS_H
#define TUNERUN_PROCS_H

#include <hwloc/bitmap.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct file_id {
    ino_t ino; /* on the mount procs_holding() is given */
};

struct pid_list {
    long *v;
    size_t n;
};

/* The inode a "lock:" line of /proc/PID/fdinfo names ("... READ -1 fe:00:10989516 0 EOF"); 0 if
 * none. */
unsigned long long procs_lock_ino(const char *lock_line);

/* The device of the mount fd is open on, as /proc/self/mountinfo lists it; 0 when unknown. */
unsigned long long procs_mount_dev(int fd);

/*
 * For each of n files, all on the filesystem of device dev (as mountinfo
 * lists it: procs_mount_dev()), the processes with an fd
 * open on it, found through /proc/PID/fd in one pass over /proc, and
 * witness[i] when it is above 0
 * (a pid said to hold it): always with `trust`, else only when its fds
 * cannot be read to tell (found holding it, it is a holder anyway).
 * out[] has n entries; free each with
 * pid_list_free(). A process whose fds this one may not read (another
 * user's, or one with capabilities this one lacks, without CAP_SYS_PTRACE)
 * counts as a holder when its parent is one. Processes in pid namespaces
 * this one cannot see are not found.
 */
void procs_holding(const struct file_id *files, size_t n, unsigned long long dev,
                   const long *witness, bool trust, struct pid_list *out);
void pid_list_add(struct pid_list *l, long pid);
void pid_list_free(struct pid_list *l);

/* The thread ids of a process (/proc/PID/task), or false when it is gone. */
bool procs_threads(long pid, struct pid_list *out);

/* A CPU set for sched_{get,set}affinity from an hwloc bitmap; CPU_FREE it. */
cpu_set_t *cpuset_alloc(hwloc_const_bitmap_t set, size_t *size);

/* A thread's CPU affinity, or -1 with errno set. */
int thread_cpus(long tid, hwloc_bitmap_t out);
int thread_set_cpus(long tid, hwloc_const_bitmap_t set);

/* A process's command name (/proc/PID/comm), "?" when gone. */
void proc_comm(long pid, char *buf, size_t n);

#endif
