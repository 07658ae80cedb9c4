/* The Slurm executor (gpuwardd --backend slurm): each started attempt is a Slurm batch job,
 * submitted with sbatch as the job's user; Slurm queues, places and launches it, and the
 * daemon follows it with squeue and stops it with scancel (docs/CLUSTER.md).  Start, signal
 * and adoption: exec_slurm.c; sbatch's run and answer, off the loop: exec_slurm_submit.c;
 * following the jobs: exec_slurm_poll.c. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/slurm.h"
#include "daemon/daemon.h"

/* What the daemon knows of one attempt it handed to Slurm. */
struct gw_slurm_job {
        int64_t id; /* gpuward's job */
        struct gw_djob *dj; /* that job, while it runs (release forgets it before it is freed) */
        uint32_t slurm_id;
        gw_usec_t submitted; /* monotonic: a poll begun before this cannot show the job */
        bool pending_in_slurm; /* squeue's last word: not started (scancel --signal cannot reach it) */
        char seen[200]; /* state, reason and node last recorded, to record changes only */
        char node[128]; /* where squeue last said it runs ("" until it starts) */
};

/* What the executor keeps of a gpuward job across its attempts (on dj->exec): the nodes its
 * next attempts are submitted without (--exclude: a node that failed under it, a node whose
 * GPU faulted under it), and whether Slurm's last word on it was OUT_OF_MEMORY. */
#define GW_SLURM_AVOID_MAX 16
struct gw_slurm_jobx {
        char avoid[GW_SLURM_AVOID_MAX][65];
        size_t n_avoid;
        bool last_oom;
        char last_node[65]; /* where the last attempt ran, as squeue told; "": not known */
};

/* The Slurm jobs that ended lately, for an Xid reported after its job ended (the agent posts
 * once an interval; squeue may tell the end first). */
#define GW_SLURM_ENDED_KEEP 64
struct gw_slurm_ended {
        uint32_t slurm_id;
        int64_t id;
};

/* One attempt being handed to Slurm (exec_slurm_submit.c): its sbatch, out or to be tried
 * again; it becomes a struct gw_slurm_job when sbatch answers with the Slurm job's id. */
struct gw_slurm_submit {
        int64_t id; /* gpuward's job */
        int attempt;
        struct gw_djob *dj; /* NULL once released: an answer still to come is scancelled */
        char **argv, **env; /* sbatch's, owned */
        bool drop; /* run as uid/gid/groups */
        uid_t uid;
        gid_t gid;
        uint32_t *groups;
        int n_groups;
        char *how; /* the "slurm_job" event's bracket (its reservation), or NULL */
        pid_t pid; /* the sbatch out, or 0 */
        int fd; /* its pipe, in epoll with the executor's sub_src */
        bool probe; /* the child is squeue looking for the attempt's tag, not sbatch */
        bool probed; /* that squeue found no Slurm job of the attempt: sbatch next */
        char *out; /* the child's output, allocated as it comes */
        size_t len, cap;
        bool eof, reaped;
        int status;
        gw_usec_t started, next_try, backoff; /* monotonic */
        int cancel_sig; /* a signal asked for while no Slurm job was known (0: none) */
        unsigned cancel_flags;
};

/* A booking held as a Slurm reservation (exec_slurm_book.c). */
struct gw_slurm_resv {
        int64_t booking;
        uint32_t uid;
        gw_usec_t start, end; /* wall clock */
        /* The booking is over: the reservation is being deleted (gw_slurm_book_drop). */
        bool dropping;
        int tries; /* deletions Slurm refused */
        gw_usec_t next_try; /* monotonic; 0: as soon as the booking's jobs are gone */
        gw_usec_t backoff;
};

/* The cluster's GPUs as scontrol last showed them (exec_slurm_gres.c): read by a child whose
 * pipe the loop reads, as the squeue poll is, at the start and every minute after. */
struct gw_slurm_gres {
        struct gw_slurm_gpus gpus;
        bool known; /* a read succeeded: gpus is the cluster's */
        bool tried; /* a read has ended, well or not */
        pid_t pid;
        int fd;
        struct gw_source src;
        gw_usec_t started, next; /* monotonic */
        char *out;
        size_t len, cap;
        bool eof, reaped;
        int status;
        char *words; /* what was last logged of them, to log changes only */
};

struct gw_exec_slurm {
        struct gw_executor ops;
        struct gw_slurm_gres gres;
        char sbatch[256], squeue[256], scancel[256], scontrol[256], sinfo[256];
        char self[512]; /* this gpuwardd, absolute: a --dataset job's batch script runs its --stage-run */
        uint32_t staged_told[GW_SLURM_ENDED_KEEP]; /* the Slurm jobs whose staging was recorded lately */
        size_t n_staged_told;
        struct gw_slurm_resv *resv;
        size_t n_resv;
        struct gw_slurm_job *jobs;
        size_t n_jobs, cap_jobs;
        /* The poll: one squeue at a time, its output read as its pipe is readable. */
        pid_t poll_pid;
        int poll_fd;
        struct gw_source poll_src;
        gw_usec_t poll_started, poll_next;
        char *poll_out;
        size_t poll_len, poll_cap;
        bool poll_eof, poll_reaped;
        int poll_status;
        /* The tagged Slurm jobs squeue showed at the restart (exec_slurm_tag.c), each taken
         * by the running attempt it names, whose id was not recorded; gone after adoption. */
        struct gw_slurm_tagged *tags;
        size_t n_tags;
        /* The attempts whose sbatch is out or waits to be tried again. */
        struct gw_slurm_submit **subs;
        size_t n_subs, cap_subs;
        /* Their pipes' one epoll source: an event fetched with the SIGCHLD that ends a
         * submission must not point into it. */
        struct gw_source sub_src;
        /* scancel children, reaped by the loop and forgotten. */
        pid_t *kids;
        size_t n_kids, cap_kids;
        struct gw_slurm_ended ended[GW_SLURM_ENDED_KEEP];
        size_t n_ended; /* ever: ended[n_ended % KEEP] is the next to go */
};

static inline struct gw_exec_slurm *slurm_of(struct gw_daemon *d) { return d->exec->state; }

struct gw_slurm_job *gw_slurm_job_find(struct gw_exec_slurm *s, int64_t id);
void gw_slurm_job_forget(struct gw_exec_slurm *s, int64_t id);
/* The environment of the daemon's own Slurm commands (squeue, scancel): the cluster's
 * SLURM_CONF, if the daemon has one, and nothing else; buf holds it. */
void gw_slurm_client_env(char *buf, size_t n, char *env[2]);
/* A child the loop reaps and forgets (scancel, a squeue given up on). */
void gw_slurm_kid_add(struct gw_exec_slurm *s, pid_t pid);
/* Runs argv (absolute path) with env, as uid/gid/groups when drop is set, in cwd (NULL:
 * "/"), stdout and stderr to out_fd (-1: /dev/null).  The child's pid, or -errno. */
pid_t gw_slurm_spawn(char *const *argv, char *const *env, bool drop, uid_t uid, gid_t gid, const uint32_t *groups,
                     int n_groups, const char *cwd, int out_fd);

/* Runs a Slurm client command (argv[0] absolute) as the daemon with gw_slurm_client_env's
 * environment, its output read off the loop: its pipe (non-blocking) registered with the
 * loop's epoll under src.  0 with *fd and *pid; -1 when it could not start (logged, naming
 * what: "squeue"). */
int gw_slurm_read_start(struct gw_daemon *d, char *const *argv, const char *what, struct gw_source *src, int *fd,
                        pid_t *pid);

/* The job's state kept across its attempts, made on first use. */
struct gw_slurm_jobx *gw_slurm_jobx_of(struct gw_djob *dj);
/* Keeps node out of the job's next attempts (at most GW_SLURM_AVOID_MAX nodes, the oldest
 * forgotten), with a "slurm" event saying why; a node already avoided is not told twice. */
void gw_slurm_avoid_node(struct gw_daemon *d, struct gw_djob *dj, const char *node, const char *why);
/* Remembers that Slurm job slurm_id, gpuward's job id, has ended. */
void gw_slurm_ended_keep(struct gw_exec_slurm *s, uint32_t slurm_id, int64_t id);
/* Reads the child's output until it ends or the deadline (monotonic, 10 s on), the loop
 * waiting (scontrol, squeue at a restart: not sbatch, exec_slurm_submit.c); then its
 * status.  -ETIMEDOUT (the child killed) or 0 with *status. */
int gw_slurm_wait_child(pid_t pid, int fd, char *out, size_t n, int *status);
/* Follows Slurm job id as the attempt of dj, recorded as its "slurm_job" event (how: why, in
 * brackets, or NULL). */
int gw_slurm_follow(struct gw_daemon *d, struct gw_djob *dj, uint32_t id, const char *how);

/* exec_slurm_tag.c: at a restart, the Slurm jobs tagged with gpuward's job and attempt. */
void gw_slurm_tags_load(struct gw_daemon *d);
/* The Slurm job tagged with job's attempt and owned by uid, forgotten once taken; 0: none. */
uint32_t gw_slurm_tag_take(struct gw_exec_slurm *s, int64_t job, int attempt, uint32_t uid);

/* The Slurm backend's bookings (executor.h's gw_exec_book_ops, reached through its table,
 * gw_slurm_book_ops): holds approved booking b (stored: its id)
 * as Slurm reservation gpuward_book_ID of whole nodes, running scontrol and waiting for it;
 * 0, or < 0 with Slurm's words in err (no node free for the window: -EBUSY). */
int gw_slurm_book_hold(struct gw_daemon *d, const struct gw_store_booking *b, char *err, size_t n);
/* An open booking held before a restart: its user's jobs go into its reservation again. */
void gw_slurm_book_known(struct gw_daemon *d, const struct gw_store_booking *b);
/* Whether booking is held in a Slurm reservation (and not over yet). */
bool gw_slurm_book_held(struct gw_daemon *d, int64_t booking);
/* Booking b is over (released, denied, ended), recorded with b->resv_drop set where it was
 * held: its reservation is deleted once none of the booking's jobs runs any more (Slurm
 * refuses to delete a reservation a job runs in), tried again with a backoff (SLURM_RESV_RETRY_*)
 * until Slurm agrees or the reservation's own end passes; then resv_drop is cleared in the
 * store.  A restarted daemon calls it again for each booking the store still marks. */
void gw_slurm_book_drop(struct gw_daemon *d, const struct gw_store_booking *b);
/* The same at a restart, for a booking the store marks: tried from the loop's first turn on,
 * once the jobs running in Slurm are adopted again. */
void gw_slurm_book_drop_later(struct gw_daemon *d, const struct gw_store_booking *b);
/* Undoes gw_slurm_book_hold of a booking that was not stored after all: deleted now, once. */
void gw_slurm_book_undo(struct gw_daemon *d, int64_t booking);
/* The reservation deletions due (exec_slurm's tick): the next time one is, or
 * GW_USEC_INFINITY. */
gw_usec_t gw_slurm_book_tick(struct gw_daemon *d);

extern const struct gw_exec_book_ops gw_slurm_book_ops;

/* The booking's Slurm reservation that j should run in (its user's, its window now), or
 * NULL; static storage until the next call (exec_slurm_book.c). */
const char *gw_slurm_book_reservation(struct gw_daemon *d, const struct gw_job *j);

/* exec_slurm_submit.c: hands dj's attempt to Slurm with sbatch argv (absolute path) and env
 * (both taken), run as its user (a: groups, may be NULL) in its cwd, without waiting; how is
 * copied.  The attempt's end is told if sbatch refuses it; its answer makes it followed. */
int gw_slurm_submit_begin(struct gw_daemon *d, struct gw_djob *dj, char **argv, char **env, const struct gw_account *a,
                          const char *how);
/* A signal for an attempt whose Slurm job is not known yet: kept for it (-ESRCH: no such
 * attempt, or a warning for its main process, which does not run yet). */
int gw_slurm_submit_signal(struct gw_daemon *d, struct gw_djob *dj, int sig, unsigned flags);
/* Its job is released: whether it had an attempt being submitted (now forgotten). */
bool gw_slurm_submit_release(struct gw_daemon *d, struct gw_djob *dj);
bool gw_slurm_submit_ready(struct gw_daemon *d, struct gw_source *src);
bool gw_slurm_submit_reaped(struct gw_daemon *d, pid_t pid, int status);
gw_usec_t gw_slurm_submit_tick(struct gw_daemon *d);
void gw_slurm_submit_close(struct gw_daemon *d);

/* exec_slurm_gres.c: the cluster's GPU types, for slice jobs and to keep whole-GPU jobs off
 * nodes of slices only. */
gw_usec_t gw_slurm_gres_tick(struct gw_daemon *d);
bool gw_slurm_gres_ready(struct gw_daemon *d, struct gw_source *src);
bool gw_slurm_gres_reaped(struct gw_daemon *d, pid_t pid, int status);
void gw_slurm_gres_close(struct gw_daemon *d);
/* The executor's admit (executor.h): a slice job whose profile no node has is refused,
 * naming what the cluster has; a GPU job waits until the cluster's types were read once. */
int gw_slurm_gres_admit(struct gw_daemon *d, const struct gw_job *j, const char **ret_field, char *err, size_t n);
/* Slurm's type for j's slices into *ret (borrowed until the next read), NULL for a job of
 * whole GPUs; -ENOENT with err as admit's. */
int gw_slurm_gres_type(struct gw_daemon *d, const struct gw_job *j, const char **ret, char *err, size_t n);
/* The nodes a whole-GPU job is kept off (those with MIG slices only), borrowed as above. */
size_t gw_slurm_gres_slice_nodes(struct gw_daemon *d, const char *const **ret);

/* exec_slurm_poll.c */
gw_usec_t gw_slurm_poll_tick(struct gw_daemon *d);
void gw_slurm_poll_ready(struct gw_daemon *d);
bool gw_slurm_poll_reaped(struct gw_daemon *d, pid_t pid, int status);
void gw_slurm_poll_close(struct gw_daemon *d);

/* Opens the Slurm executor as d->exec: finds sbatch, squeue, scancel and scontrol on PATH. */
int gw_exec_slurm_open(struct gw_daemon *d);

/* exec_slurm_stage.c: a --dataset staged on the node Slurm picked, by its agent. */
/* This gpuwardd's own path (s->self), for the batch scripts; "" when unknown. */
void gw_slurm_self_find(struct gw_exec_slurm *s);
/* argv wrapped in the staging step: SELF --stage-run SOCKET DATASET ARGV... (malloc'ed, for
 * gw_strv_free); NULL with why when this gpuwardd's path is unknown. */
char **gw_slurm_stage_argv(struct gw_daemon *d, const char *dataset, char *const *argv, char *why, size_t n);
/* argv wrapped in a --scratch job's step (scratch_step.c): SELF --scratch-run DIR SECONDS
 * RESTORE ARGV..., DIR the attempt's folder on the node (j->scratch_dir), SECONDS
 * scratch_interval, RESTORE the run a retry restores from the shared folder ("-": none).
 * Malloc'ed, for gw_strv_free; NULL with why when this gpuwardd's path is unknown. */
char **gw_slurm_scratch_argv(struct gw_daemon *d, const struct gw_job *j, char *const *argv, char *why, size_t n);
/* A node's agent told how long Slurm job slurm_id waited for its dataset (its snapshot's
 * "staged", checked by nodes.c): recorded once as the gpuward job's event, in GPU-seconds
 * (the job's GPUs, all held by its allocation meanwhile).  Another's job: nothing. */
struct gw_slurm_staging {
        uint32_t slurm_id;
        gw_usec_t took;
        bool ok, hit;
};
void gw_slurm_staged(struct gw_daemon *d, const char *node, const struct gw_slurm_staging *st);

/* exec_slurm_xid.c: what an Xid on a node's GPU means to Slurm. */
/* Whether the Xid takes the GPU out of use (core/failure.h's drain-worthy Xids). */
bool gw_slurm_xid_drains(unsigned xid);
/* Drains node in Slurm (scontrol update ... State=DRAIN, the Xid as the reason), as the
 * daemon, not waited for. */
void gw_slurm_drain_node(struct gw_daemon *d, const char *node, unsigned gpu, unsigned xid);
/* gpuward's job that ran Slurm job sid: the current attempt of a job (*running), or one
 * ended lately; 0 when none is known. */
int64_t gw_slurm_job_of(struct gw_daemon *d, uint32_t sid, bool *running);

/* The node squeue last said job id's current attempt runs on, for a reply (the table's
 * node_of); NULL when Slurm has not placed it.  Borrowed until the next poll. */
const char *gw_slurm_node_of(struct gw_daemon *d, int64_t id);
