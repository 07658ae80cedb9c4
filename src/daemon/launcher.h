/* Starting a job: the daemon forks a small supervisor (the "shim") in its own session; the
 * shim is a child subreaper, forks the job into a new session as the submitting user, waits
 * for it, kills what it left behind, and writes the exit status to a file.  The shim
 * outlives a daemon restart, so a re-adopted job still reports how it ended. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gw_launch {
        char *const *argv;
        char *const *envp;
        const char *cwd;
        bool drop_privileges;      /* daemon is root: become uid/gid with their groups */
        uid_t uid;
        gid_t gid;
        const char *log_path;      /* stdout+stderr */
        bool log_is_private;       /* created by the shim (as root) and chowned to uid */
        const char *cgroup_dir;    /* join this cgroup before exec, or NULL */
        const char *exit_path;     /* where the shim writes the wait status */
};

/* Forks the shim; returns 0 with the shim's and the job's pids.  All memory the children
 * need is prepared before fork: they run only async-signal-safe code. */
int gw_launch_start(const struct gw_launch *l, pid_t *ret_shim, pid_t *ret_job, char *err, size_t errlen);

/* Reads the wait status the shim wrote (-ENOENT if it wrote none). */
int gw_launch_read_exit(const char *exit_path, int *ret_status);
