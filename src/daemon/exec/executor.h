/* The backend table: how the processes of a job attempt are started, signalled, found again
 * after a daemon restart and watched until they end, and what the features must know of the
 * backend that runs them: who places a job, how a booking is held, whether a job may be
 * preempted, what its node is called.  The job code (jobs.c's transitions, recovery.c, the
 * handlers, observe, training, reclaim, sharing, preemption) knows only this table, never
 * which backend runs: the local supervisors (exec_shim*.c: gpuward-shim, the resident
 * launcher, idle supervisors, cgroups, the exits journal), Slurm (exec_slurm*.c) and the
 * tests' backend (exec_test.c) are its implementations, chosen in one place
 * (gw_backend_open, exec_backend.c), and the unit tests drive a fake one
 * (tests/fakes/fake_exec.c).  docs/DESIGN.md, "Adding a backend", gives each operation's
 * contract.
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
struct gw_job;
struct gw_store_booking;

/* Who chooses a job's GPUs.  The zero value is the local one. */
enum gw_exec_placement {
        /* gpuward's scheduler (core/sched.c) places each job on this host's GPUs, orders the
         * queue by fair share and predicts starts; the backend runs the job on j->gpu_mask. */
        GW_EXEC_PLACE_HERE,
        /* The backend takes each job as soon as it may start and places it on a node of its
         * choosing (Slurm); the GPUs are the nodes', as their agents report them (nodes.h). */
        GW_EXEC_PLACE_NODES,
};

/* A backend that holds approved bookings itself (Slurm: a reservation) instead of this host's
 * calendar placing them on its GPUs.  All calls from the loop's thread; hold and undo may
 * wait for the backend (10 s at most), the others do not. */
struct gw_exec_book_ops {
        /* Holds approved booking b (stored in the open transaction: its id is known) over
         * its window.  0, or < 0 with the backend's words in err: -EBUSY nothing free for the
         * window, else -errno.  A refusal leaves nothing held. */
        int (*hold)(struct gw_daemon *d, const struct gw_store_booking *b, char *err, size_t n);
        /* Undoes a hold whose booking was not stored after all. */
        void (*undo)(struct gw_daemon *d, int64_t booking);
        /* Whether booking is held now (and not over yet). */
        bool (*held)(struct gw_daemon *d, int64_t booking);
        /* A restart: open booking b was held before it; its user's jobs go into it again. */
        void (*known)(struct gw_daemon *d, const struct gw_store_booking *b);
        /* Booking b is over (stored with b->resv_drop where it was held): let it go once
         * none of its jobs runs, clearing resv_drop in the store when it is gone. */
        void (*drop)(struct gw_daemon *d, const struct gw_store_booking *b);
        /* The same at a restart, for a booking the store still marks resv_drop: from the
         * loop's first turn on, once the running jobs are adopted again. */
        void (*drop_later)(struct gw_daemon *d, const struct gw_store_booking *b);
};

/* How an attempt ended, as its executor tells it. */
enum gw_exec_end_kind {
        GW_EXEC_EXITED, /* status is its main process's wait status */
        GW_EXEC_LOST, /* it ended, and how is not known */
        GW_EXEC_NOT_STARTED, /* accepted, then could not be started: why says why */
};
struct gw_exec_end {
        enum gw_exec_end_kind kind;
        int status;
        gw_usec_t at; /* wall-clock label of its end (the job's clock, jobclock.c); 0: now */
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
        void *state; /* the executor's own, opaque to the daemon */
        /* What the features ask of the backend (fixed once it is open). */
        enum gw_exec_placement placement;
        /* Whether a running preemptible job may be stopped for a higher one (preempt.c),
         * which takes the daemon placing on this host's GPUs. */
        bool preempts;
        /* NULL: this host's calendar places bookings on its GPUs; else the backend holds them. */
        const struct gw_exec_book_ops *book;
        /* The name of the node job id's current attempt runs on, for a reply; NULL when not
         * known (not placed yet) or where the backend names none.  Borrowed until the next
         * loop iteration.  NULL: no backend node names. */
        const char *(*node_of)(struct gw_daemon *d, int64_t id);
        /* Once the daemon is up (its jobs recovered, the API served), or NULL. */
        void (*serve)(struct gw_daemon *d);
        /* Whether the backend can take job j as the cluster is now, or NULL (always): 0 yes;
         * -EAGAIN not known yet (a submission is taken, a queued job waits); another -errno
         * it cannot (a submission is refused, a queued job ends FAILED), with err, and the
         * request's field it is about in *ret_field. */
        int (*admit)(struct gw_daemon *d, const struct gw_job *j, const char **ret_field, char *err, size_t n);
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
        /* What the executor knows of an attempt that did not end cleanly, for the classifier:
         * the kernel OOM killer's evidence; where a node-side step wrapped the command (Slurm),
         * that it did and the node it ran on. */
        void (*end_facts)(struct gw_daemon *d, const struct gw_djob *dj, struct gw_failure_input *in);
        /* The classifier blamed the attempt's node (a node step's failure): the job's next
         * attempts avoid that node.  NULL for an executor of one host. */
        void (*node_failed)(struct gw_daemon *d, struct gw_djob *dj);
        /* Shutdown: running attempts keep running, to be adopted by the next daemon. */
        void (*close)(struct gw_daemon *d);
        /* Set by the daemon once the executor is open, before any other call (main.c): where
         * the executor tells each end, gw_exec_attempt_end.  An executor calls no job code by
         * name; what it needs of a job comes with the call (dj, how). */
        gw_exec_end_fn *ended;
};

/* exec_backend.c: opens the backend the config names as d->exec (the only place that reads
 * which one runs).  0, or -errno (logged). */
int gw_backend_open(struct gw_daemon *d);

/* jobs.c: the one way an executor tells an attempt's end (see above), set as ended. */
void gw_exec_attempt_end(struct gw_daemon *d, struct gw_djob *dj, const struct gw_exec_end *end);
