/* The job's child born in its cgroup: clone3(CLONE_INTO_CGROUP) with vfork's sharing, so that
 * no write to cgroup.procs (a migration under the kernel's cgroup locks: ~15 us of a start with
 * the supervisor waiting, far more in its tail) stands between the start and the job's exec,
 * and no process of the job is ever outside its cgroup. */
#pragma once

#include <sys/types.h>

/* Runs child(arg) in a new process that shares this one's memory, on a stack of its own,
 * inside the cgroup v2 directory open at cgroup_fd, and returns its pid once it has exec'ed
 * or exited (as vfork).  child must exec or _exit, never return, and use only what a vfork
 * child may.  -errno when it was not made: -ENOSYS where this architecture or kernel has no
 * such call, another error for a cgroup the kernel refuses (cgroup v1, no permission): the
 * caller then forks as before and joins the cgroup in the child. */
pid_t shim_fork_into_cgroup(int cgroup_fd, size_t argc, void (*child)(void *), void *arg);
