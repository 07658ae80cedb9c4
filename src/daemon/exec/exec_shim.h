/* The local executor (executor.h): each attempt runs under a gpuward-shim supervisor, forked
 * by the resident launcher, sent to an idle supervisor or spawned (launcher.h, warm.h,
 * launch_server.h); in its own cgroup where there are cgroups (cgroup.h); its end comes on
 * its report pipe, its supervisor's pidfd or SIGCHLD, and is kept in the exits journal, which
 * outlives the daemon so that a restarted one still learns how an adopted job ended.
 * Private to exec_shim*.c (and exec_backend.c, which opens it). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "daemon/exec/cgroup.h"
#include "daemon/daemon.h"
#include "daemon/exec/launcher.h"
#include "daemon/exec/proc.h"
#include "daemon/exec/warm.h"

/* An attempt's supervisor, as the daemon watches it. */
struct gw_exec_job {
        int pidfd; /* a supervisor not our child: its pidfd, else -1 */
        struct gw_source pidfd_src;
        int report_fd; /* the shim reports the job's pid here, then closes it */
        struct gw_source report_src;
        int shim_chan; /* the channel to the shim, to send it the next job (warm.h), or -1 */
        bool report_closed; /* the pipe closed before the launcher's answer came */
        bool launch_pending; /* asked of the launcher; its answer brings the supervisor */
        struct gw_djob *dj; /* whose: the launcher's answer names the job by id */
        struct gw_exec_job *pending_next, **pending_pprev; /* in the list of those launch_pending */
        struct gw_exit_report reported_end; /* the attempt's end, read from its report pipe */
        int signal_held; /* a signal that reached no process (sent before the job's
                                      * pid came): sent once the pid is reported, 0 none */
        bool cgroup_reusable; /* the supervisor reported the attempt's end: nothing of it can
                               * still join its cgroup (gw_cgroup_pool_give_back) */
        bool host_oom_known; /* host_oom_start was read at this attempt's launch */
        uint64_t host_oom_start; /* the host's oom_kill count then (jobs without a memory cgroup) */
};

struct gw_exec_shim {
        struct gw_executor ops; /* d->exec points here */
        struct gw_cgroups cg;
        struct gw_cgroup_trash cg_trash;
        struct gw_cgroup_pool cg_pool; /* v2: emptied job cgroups for the next starts */
        struct gw_shim_ref *shims; /* live shims found at start */
        size_t n_shims;
        gw_usec_t host_oom_at; /* when (d->now) host_oom was read, 0 never */
        int host_oom_r; /* its result: 0, or -errno */
        uint64_t host_oom; /* the host's oom_kill count (/proc/vmstat) then */
        int vmstat_fd; /* /proc/vmstat kept open (host_oom), -1: opened at each read */
        char exits_path[4200];
        struct gw_exits *exits;
        struct gw_launch_server *launcher; /* NULL: jobs are started by spawning their shim */
        struct gw_warm warm; /* idle supervisors, sent the next starts first */
        struct gw_source launcher_src;
        int launcher_watched; /* the launcher socket in epoll, -1 none */
        struct gw_exec_job *pending; /* the attempts that wait for the launcher's answer */
};

/* exec_shim.c: sets d->exec: the exits journal (in d->loop.run_dir) and cgroups (the config's).
 * 0, or -errno (logged).  Its serve starts the resident launcher, once the daemon is up. */
int gw_exec_shim_open(struct gw_daemon *d);
static inline struct gw_exec_shim *exec_shim_of(const struct gw_daemon *d) { return d->exec->state; }
/* dj's supervisor state, made on first use. */
struct gw_exec_job *gw_exec_shim_job(struct gw_djob *dj);
/* An interactive job's session socket (shim/tty.h), under the run dir, kept in j->tty_socket
 * for the API; NULL for other jobs. */
const char *gw_exec_shim_tty(const struct gw_daemon *d, struct gw_job *j);
/* Sets dj's launch_pending, and its place in the list the launcher's answers are matched
 * against (exec_shim_launch.c). */
void gw_exec_shim_set_pending(struct gw_daemon *d, struct gw_djob *dj, bool pending);
/* Empties the exits journal when no job runs (not inside a batch: its ends are not committed
 * yet; not when an end was not written: the next daemon reads it there). */
void gw_exec_shim_trim_exits(struct gw_daemon *d);

/* exec_shim_report.c: an attempt's supervisor and its reports. */
/* The supervisor of a started job is known (or, run->pending, asked of the launcher). */
void gw_exec_shim_launched(struct gw_daemon *d, struct gw_djob *dj, const struct gw_launched *run);
/* The shim's report fd is readable: learn the job's pid. */
void gw_exec_shim_reported(struct gw_daemon *d, struct gw_djob *dj);
/* Its supervisor closed its report pipe, exited or was reaped: take its end (from the pipe,
 * else the exits journal) and tell it.  Whether the end was known (false: told as lost). */
bool gw_exec_shim_exited(struct gw_daemon *d, struct gw_djob *dj);
/* The attempt's processes that outlived its supervisor (killed, or crashed) are stopped
 * rather than left untracked beside its retry, holding its GPUs; a job event says so. */
void gw_exec_shim_kill_orphans(struct gw_daemon *d, const struct gw_job *j);
/* Watches the pidfd of a supervisor that is not our child (the launcher forked it, or an
 * earlier daemon started it); it turns readable when that exits.  Takes fd. */
int gw_exec_shim_watch_pidfd(struct gw_daemon *d, struct gw_djob *dj, int fd);
/* Stops watching the attempt's supervisor (closes its fds). */
void gw_exec_shim_detach(struct gw_daemon *d, struct gw_djob *dj);

/* exec_shim_launch.c: hands the launcher's answers (and its requests lost with it) to their
 * jobs; keeps its socket in epoll. */
void gw_exec_shim_launch_answers(struct gw_daemon *d, bool readable);

/* exec_shim_adopt.c: adopt_begin, adopt, adopt_end of the table. */
int gw_exec_shim_adopt_begin(struct gw_daemon *d);
int gw_exec_shim_adopt(struct gw_daemon *d, struct gw_djob *dj);
void gw_exec_shim_adopt_end(struct gw_daemon *d);
