/* Starting a job: the daemon starts a gpuward-shim supervisor (src/shim/shim.h) in its own
 * session, forked by the resident launcher or spawned; the shim is a child subreaper, forks
 * the job into a new session as the submitting user, waits for it, kills what it left
 * behind, and appends the job's wait status to the daemon's exits journal (one line per
 * job, O_APPEND: no file is created per job).  The shim outlives a daemon restart, so a
 * re-adopted job still reports how it ended. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/time.h"

/* How an attempt ended, as its supervisor told it (on the report pipe or in the exits
 * journal). */
struct gw_exit_report {
        bool known; /* told at all; else the rest is 0 */
        int status; /* the job's wait status */
        gw_usec_t wall; /* when: CLOCK_REALTIME right after the wait; 0 unknown (an
                                    * older supervisor's journal line) */
        gw_usec_t mono; /* the same instant on CLOCK_MONOTONIC (this boot's); 0 unknown */
        pid_t pid; /* the job's pid, when it came with the end (untold before); 0 else */
};

struct gw_launch {
        char *const *argv;
        char *const *envp;
        const char *cwd;
        bool drop_privileges; /* daemon is root: become uid/gid with their groups */
        uid_t uid;
        gid_t gid;
        const uint32_t *groups; /* uid's groups (gid alone when n_groups is 0) */
        int n_groups;
        const char *log_path; /* stdout+stderr */
        bool log_is_private; /* created by the shim (as root) and chowned to uid */
        uint64_t log_max, log_reserve; /* for a private log: its cap, the free space it leaves */
        const char *cgroup_dir; /* join this cgroup before exec, or NULL */
        const char *exits_path; /* the exits journal the shim appends its end to (shim.h) */
        int64_t job_id;
        int attempt;
        const char *tty_path; /* interactive: the session's socket (shim/tty.h), or NULL */
};

struct gw_launch_server;
struct gw_warm;

/* A started supervisor: its pid; a pidfd (readable when it exits) if the resident launcher
 * forked it, else -1 (it is then the daemon's child, reaped on SIGCHLD); a non-blocking fd on
 * which it reports the job's pid (read it with gw_launch_read_report when readable). */
struct gw_launched {
        pid_t shim;
        int pidfd;
        int report_fd; /* -1 when job is already known */
        pid_t job; /* 0: not known yet (it comes on report_fd) */
        bool pending; /* asked of the launcher: shim and pidfd come with its answer */
        int chan; /* the channel to send the shim its next job on (warm.h), or -1 */
        uint64_t shim_start; /* its /proc start time when already known, else 0 */
};

/* Starts the job in an idle supervisor from warm (warm.h) when one takes it; else a new
 * supervisor through the resident launcher srv (launch_server.h) when it is up
 * (ret->pending: its answer comes later, gw_launch_server_next); else by spawning
 * gpuward-shim. */
int gw_launch_start(const struct gw_launch *l, struct gw_warm *warm, struct gw_launch_server *srv,
                    struct gw_launched *ret, char *err, size_t errlen);
/* The launcher died before answering a: the supervisor it may have forked, found through
 * the job's pid (job, or read from the report pipe; then ret->report_fd is -1 and ret->job
 * set), else one spawned from the kept request (ret->report_fd is its new report pipe). */
struct gw_launch_answer;
int gw_launch_recover(struct gw_launch_answer *a, int report_fd, pid_t job, struct gw_launched *ret, char *err,
                      size_t errlen);
/* posix_spawn of a gpuward-shim in its own session: stdio on /dev/null, fd3 as fd 3. */
int gw_launch_spawn(const char *path, char *const *argv, char *const *envp, int fd3, pid_t *ret_pid);
/* The gpuward-shim beside this gpuwardd, or NULL. */
const char *gw_launch_shim_path(void);
/* 0 with the job's pid; -EAGAIN not yet; -EPIPE the shim closed (after its end, or without
 * one: it died); -EIO no job started.  why (if given) gets the reason a job could not be set
 * up, when the read brought one (it comes before the pid); ret_end (if given) the job's end,
 * when the read brought it (it comes after the pid, before the pipe closes). */
int gw_launch_read_report(int fd, pid_t *ret_job, struct gw_exit_report *ret_end, char *why, size_t whylen);

/* The exits journal, read incrementally by the daemon. */
struct gw_exits;
int gw_exits_open(const char *path, struct gw_exits **ret);
struct gw_exits *gw_exits_close(struct gw_exits *e);
/* Reads lines appended since the last call. */
void gw_exits_read(struct gw_exits *e);
/* Takes the recorded end of a job attempt (ret may be NULL: only taken out): 0, or -ENOENT
 * if none was written. */
int gw_exits_take(struct gw_exits *e, int64_t job_id, int attempt, struct gw_exit_report *ret);
bool gw_exits_has(struct gw_exits *e, int64_t job_id, int attempt);
/* Empties the journal; only when no shim can be writing (no job running). */
void gw_exits_reset(struct gw_exits *e);
