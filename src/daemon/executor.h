/* The executor seam: how the processes of a job attempt are started, signalled, found again
 * after a daemon restart and watched until they end.  The job code (jobs.c's transitions,
 * recovery.c, the handlers, observe, training, reclaim) knows only this table; the local
 * supervisors (exec_shim*.c: gpuward-shim, the resident launcher, idle supervisors, cgroups,
 * the exits journal) are its first implementation, a cluster scheduler would be another, and
 * the unit tests drive a fake one (tests/fakes/fake_exec.c).
 *
 * What every executor promises:
 * - start: 0 means the attempt is under way and its end will be told; -errno means nothing
 *   runs and nothing will be told (the caller ends the job FAILED with err).
 * - The end of every started or adopted attempt is told exactly once, through the
 *   table's ended (gw_exec_attempt_end, jobs.c), and nothing is told after it for that
 *   attempt.  The end
 *   may be told from start itself (a start that fails after being accepted), from ready, tick,
 *   reaped or adopt.
 * - signal after the end (or before any start) is a no-op; a signal asked for while the
 *   attempt's processes are not known yet reaches them once they are.
 * - adopt is asked for each job the store has as RUNNING at a restart, between adopt_begin
 *   and adopt_end, with the job already in the running set: 1 adopted (still running, its end
 *   told later), 0 its end was told (from what its supervisor left, or lost).
 * - Its state of a job hangs on dj->exec, with dj->exec_free to free it (gw_djob_free calls it,
 *   a loop iteration after the end at the earliest); freeing it leaves the processes alone.
 * - All calls come from the loop's thread; none blocks on the job. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/time.h"

struct gw_account;
struct gw_daemon;
struct gw_djob;
struct gw_source;
struct gw_failure_input;

/* How an attempt ended, as its executor tells it. */
enum gw_exec_end_kind {
        GW_EXEC_EXITED,      /* status is its main process's wait status */
        GW_EXEC_LOST,        /* it ended, and how is not known */
        GW_EXEC_NOT_STARTED, /* accepted, then could not be started: why says why */
};
struct gw_exec_end {
        enum gw_exec_end_kind kind;
        int status;
        gw_usec_t at;        /* wall-clock label of its end (the job's clock, jobclock.c); 0: now */
        const char *why;
};

/* What the job side makes for a start (jobs.c, gw_job_launch): the command this attempt runs
 * (the original one, or its resume form: gw_resume_argv), its environment, and its user's
 * account (HOME, groups; NULL when it cannot be looked up).  Borrowed for the call. */
struct gw_exec_start {
        char *const *argv;
        char *const *envp;
        const struct gw_account *account;
};

/* How an executor tells an attempt's end (see above). */
typedef void gw_exec_end_fn(struct gw_daemon *d, struct gw_djob *dj, const struct gw_exec_end *end);

/* Flags of signal. */
#define GW_EXEC_SIGNAL_MAIN 1u /* its main process only (a --signal warning), not all */

struct gw_executor {
        const char *name;
        void *state;         /* the executor's own, opaque to the daemon */
        /* Before a start is recorded: what the record carries (the shim: j->cgroup). */
        void (*prepare)(struct gw_daemon *d, struct gw_djob *dj);
        /* Starts the attempt of dj->job on j->gpu_mask as j->uid, running how (see above). */
        int (*start)(struct gw_daemon *d, struct gw_djob *dj, const struct gw_exec_start *how, char *err,
                     size_t errlen);
        /* 0 sent; -ESRCH nothing of the attempt runs (or not yet known); else -errno. */
        int (*signal)(struct gw_daemon *d, struct gw_djob *dj, int sig, unsigned flags);
        /* A restart: adopt_begin may refuse to go on (-errno, with the store's error set:
         * gw_store_set_error), then adopt for each running job, then adopt_end. */
        int (*adopt_begin)(struct gw_daemon *d);
        int (*adopt)(struct gw_daemon *d, struct gw_djob *dj);
        void (*adopt_end)(struct gw_daemon *d);
        /* One of its fds (registered in d->loop.epfd with a GW_SRC_EXEC source) is readable. */
        void (*ready)(struct gw_daemon *d, struct gw_source *src);
        /* SIGCHLD: whether pid was its (and is now dealt with). */
        bool (*reaped)(struct gw_daemon *d, pid_t pid, int status);
        /* Each loop iteration: its own deadlines; the next one (monotonic) or INFINITY. */
        gw_usec_t (*tick)(struct gw_daemon *d);
        /* The attempt's GPUs were given back (its end, a retry, or started=false: a start
         * undone before launch): what it held for the attempt may go. */
        void (*release)(struct gw_daemon *d, struct gw_djob *dj, bool started);
        /* The ends recorded so far are committed (d->jobs.keep_exits says if one was refused). */
        void (*sync)(struct gw_daemon *d);
        /* Evidence of the kernel's OOM killer during the attempt, for the classifier. */
        void (*oom_facts)(struct gw_daemon *d, const struct gw_djob *dj, struct gw_failure_input *in);
        /* Shutdown: running attempts keep running, to be adopted by the next daemon. */
        void (*close)(struct gw_daemon *d);
        /* Set by the daemon once the executor is open, before any other call (main.c): where
         * the executor tells each end, gw_exec_attempt_end.  An executor calls no job code by
         * name; what it needs of a job comes with the call (dj, how). */
        gw_exec_end_fn *ended;
};

/* jobs.c: the one way an executor tells an attempt's end (see above), set as ended. */
void gw_exec_attempt_end(struct gw_daemon *d, struct gw_djob *dj, const struct gw_exec_end *end);
