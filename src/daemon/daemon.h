/* The daemon's state and the shell around the pure core: jobs in memory, GPUs, the loop. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "api/http.h"
#include "base/keytab.h"
#include "base/userdb.h"
#include "core/jobrec.h"
#include "core/leak.h"
#include "core/sched.h"
#include "core/failure.h"
#include "core/retry.h"
#include "core/telemetry.h"
#include "daemon/base/config.h"
#include "daemon/exec/executor.h"
#include "daemon/life/lifecycle.h"
#include "daemon/observe/sampler.h"
#include "gpu/gpu.h"
#include "store/store.h"

struct gw_events;

/* What an epoll event points at. */
/* GW_SRC_EXEC: one of the executor's fds (executor.h), handed to its ready.  GW_SRC_PREEMPT:
 * the inotify descriptor of the checkpoints preemption waits for (preempt_watch.h). */
enum gw_source_kind { GW_SRC_SIGNAL, GW_SRC_HTTP, GW_SRC_SAMPLER, GW_SRC_EXEC, GW_SRC_PREEMPT };
struct gw_source {
        enum gw_source_kind kind;
        void *ptr;
};

/* An active job (PENDING, HELD, RUNNING) as the daemon holds it. */
struct gw_djob {
        struct gw_job *job;
        gw_usec_t limit_at;          /* monotonic: time limit reached */
        gw_usec_t start_mono;        /* monotonic: the attempt started (jobclock.c); 0 = not running */
        gw_usec_t backoff_due;       /* monotonic: its retry backoff ends (jobs.c); 0 = not known yet */
        gw_usec_t kill_at;           /* monotonic: SIGKILL due, 0 = none */
        bool terminating;
        enum gw_job_state end_state; /* CANCELLED or TIMEOUT once terminating */
        char *end_reason;
        bool dep_final;              /* dependency resolved for good (cached) */
        bool account_unread_told;    /* logged that its account could not be looked up */
        enum gw_dep_status dep;
        struct gw_exec_job *exec;    /* the executor's state of the job (executor.h), or NULL */
        void (*exec_free)(struct gw_djob *dj); /* frees exec (its processes are left alone) */
        char sigkill_why[200];       /* gpuward sent SIGKILL to its main process outside a stop: why */
        bool dead;                   /* ended; freed by gw_jobs_bury */
        bool booking_closed;         /* pending in a booking that is over: to be ended */
        bool limit_by_booking;       /* its booking ends before its time limit */
        bool limit_warned;           /* told its end is near (time_limit_warn, --signal) */
        struct gw_djob *next_dead;
        struct gw_gpu_event *events; /* Xid/ECC/lost on its GPUs during this attempt */
        size_t n_events, cap_events;
        struct gw_attempt_mark last_mark; /* how the previous attempt ended, for crash loops */
        int log_made_attempt;        /* the attempt whose log file prelog.c made ahead, 0 none */
        /* What the job's GPU cards show of it (GET /api/v1/gpus's job_info): set at each sample
         * by the features that know it, so that observe reads them without calling up. */
        gw_usec_t card_stop_at;      /* reclaim_watch.c: the idle watch's stop, wall clock; 0 none due */
        bool card_leak;              /* training.c: a leak reported in this attempt */
        double card_leak_epochs, card_leak_seconds; /* its forecast; < 0 not known */
        char card_leak_evidence[GW_LEAK_EVIDENCE_MAX];
        struct gw_cache_job *cache;  /* its --dataset's copy (cache.c), NULL none */
        int n_preempted;             /* attempts it lost to preemption: they use none of its retries */
        bool end_unwritten;          /* ended, but the store refused the end (lifecycle.c) */
        bool end_in_batch;           /* ended inside this loop iteration's transaction */
        char end_kind[16];           /* the end's event kind, to write it again */
        struct gw_job_attempt *end_attempt; /* its last attempt's row, to write it again with the end */
        struct gw_djob *next_unwritten;
        struct gw_array *array;      /* a job array: its tasks' indexes (jobarray.c), NULL until used */
};

/* A process seen on a GPU, with the job it belongs to (0: rogue). */
struct gw_dproc {
        unsigned pid;
        uint64_t mem;                /* UINT64_MAX if NVML does not say */
        int sm_util;                 /* -1 without per-process samples */
        int64_t job_id;
        bool stray;                  /* its job's, on a GPU that job was not given */
        uint64_t cpu_ticks;          /* utime + stime at cpu_at (hostwatch.c) */
        gw_usec_t cpu_at;            /* monotonic; 0: never read */
        double cpu;                  /* percent of one CPU between the last two reads; -1: not known */
        uint32_t uid;
        char user[32];
        char cmd[160];
};

struct gw_dgpu {
        struct gw_gpu_static info;
        struct gw_gpu_sample sample;
        bool sampled;
        gw_usec_t sampled_at;        /* wall clock */
        bool drained;
        char drain_reason[256];
        int64_t job_id;
        struct gw_dproc *procs;
        size_t n_procs;
        unsigned rogue;              /* processes of no job */
        struct gw_ring ring;         /* the last hour at full rate */
        struct gw_gpu_mig_layout *mig; /* its MIG devices at the last sample; NULL: whole */
};

/* A running job's telemetry on one of its GPUs. */
struct gw_jobtel {
        unsigned gpu;
        struct gw_usage usage;
        struct gw_ring ring;
        struct gw_agg agg;           /* the minute being aggregated for the store */
        uint64_t mem_total;          /* the GPU's memory, as its last sample said */
};

struct gw_jobmap {
        struct gw_djob **slots;      /* open addressing on id; NULL = empty, TOMBSTONE = deleted */
        size_t cap, n, used;
};

/* The host beside its GPUs (hostwatch.c), read at each GPU sample for the dashboard. */
struct gw_hostload {
        bool have_cpu, have_mem;
        uint64_t cpu_busy, cpu_total;    /* /proc/stat's ticks at the last read */
        double cpu_percent;              /* all CPUs, between the last two reads; < 0: not yet */
        unsigned ncpu;
        uint64_t mem_total, mem_available;
        struct gw_hostdisk {
                bool have;
                uint64_t total, avail;   /* bytes; avail: what an unprivileged user may still write */
        } disk_state, disk_root;
        gw_usec_t read_at;               /* wall clock; 0: never */
};

/* The GPUs as the daemon sees them, and the threads that sample them (gpus.c, observe.c). */
struct gw_dhost {
        struct gw_gpu_lib *gpu;
        bool simulated;
        char sim_dir[4096];
        unsigned n_gpus;
        struct gw_dgpu gpus[GW_SCHED_MAX_GPUS];
        uint64_t max_gpu_mem;
        struct gw_sampler *sampler;
        int sampler_fd;
        struct gw_source sampler_src;
        unsigned rogue_total;
        uint64_t xid_events;
        /* What sampling costs, from the snapshots taken (sampler.h), for /metrics. */
        uint64_t sampler_snapshots;
        gw_usec_t sampler_nvml_sum, sampler_nvml_max, sampler_cpu;
        struct gw_hostload load;
};

/* Counters only /metrics reads. */
struct gw_dstats {
        uint64_t reclaims;           /* jobs SIGTERMed as idle, for gpuward_reclaims_total */
        uint64_t state_counts[_GW_JOB_STATE_MAX]; /* jobs per state */
        uint64_t wait_counts[10];    /* queue-wait histogram of started jobs (cumulative) */
        uint64_t wait_n;
        double wait_sum;
};

/* The active jobs in memory: the queue, the running set and the ends in flight (lifecycle.c,
 * queue.c). */
struct gw_djobs {
        struct gw_jobmap map;
        struct gw_djob **queue;      /* PENDING and HELD, in queue order */
        size_t n_queue, cap_queue;
        struct gw_djob **running;
        size_t n_running, cap_running;
        bool sched_dirty;
        bool recovering;             /* loading jobs from the store at start */
        struct gw_djob *dead;        /* ended jobs awaiting gw_jobs_bury */
        bool deps_changed;           /* a job ended: dependency verdicts may change */
        size_t n_backoff;            /* queued jobs waiting out a retry delay */
        bool in_batch;               /* inside one loop iteration's store transaction */
        bool keep_exits;             /* an end was not written: the executor keeps what it knows of it */
        struct gw_djob **to_launch;  /* started inside the loop's transaction, launched after it */
        size_t n_to_launch, cap_to_launch;
        gw_usec_t start_retry_at;    /* monotonic: schedule again after a start the store refused */
        struct gw_djob *unwritten;   /* ended jobs whose end the store refused (lifecycle.c) */
        gw_usec_t unwritten_retry_at; /* monotonic: when to try writing them again */
        struct gw_fair *fair;        /* fair share's usage, which orders the queue (fairshare.c); NULL with
                                      * backend slurm */
        uint64_t n_queued;           /* jobs put in the queue so far (gw_queue_insert) */
};

/* Each feature's state of each active job, by job id (base/keytab.h), beside the job rather
 * than in struct gw_djob: a value is the feature's own struct, declared in the feature's
 * private header (a *_state.h or *_int.h, which the layer check lets no other module
 * include), made when the feature first needs it and freed from its GW_HOOK_JOB_FREED. */
struct gw_featstate {
        struct gw_keytab train;      /* struct gw_train (training_int.h) */
        struct gw_keytab train_pick; /* struct gw_train_pick (training_int.h) */
        struct gw_keytab rwatch;     /* struct gw_rwatch (reclaim_watch.h), the idle watch */
        struct gw_keytab preempt;    /* struct gw_preempt_job (preempt.c) */
        struct gw_keytab joblog;     /* struct joblog_told (joblog.c) */
        struct gw_keytab sharing;    /* struct sharing_job (sharing.c) */
        struct gw_keytab fair;       /* struct fair_job (fairshare.c) */
        struct gw_keytab waiters;    /* struct api_waiters (handlers.c) */
        struct gw_keytab tel;        /* struct obs_tel (observe.c), a running job's telemetry */
};

/* The loop, its doors and what the daemon knows of itself (main.c). */
struct gw_dloop {
        int epfd, sigfd;
        int lock_fd;                 /* STATE_DIR/gpuwardd.lock, flock'ed while we run */
        bool socket_bound;           /* the Unix socket is ours to remove at the end */
        struct gw_source sig_src, http_src[2];
        struct gw_http_server *http[2]; /* unix, tcp */
        int tcp_port;
        char tcp_addr[300];          /* HOST:PORT the TCP door is bound to, "" without one */
        bool quit;
        bool ready;                  /* database open and GPUs enumerated */
        bool big_reply;              /* a large reply was built: give its memory back afterwards */
        gw_usec_t started_at;        /* wall clock */
        char boot_id[40];            /* the kernel's, for monotonic instants kept in the store
                                      * (jobclock.c); "" until read, "-" when unreadable */
        uid_t euid;                  /* ours, read once (a job start asks twice) */
        char log_dir[4096], run_dir[4096];
        struct gw_dstats stats;      /* for /metrics */
};

/* The daemon: the loop, the store, the jobs and the executor under the lifecycle, and one
 * pointer per feature that keeps state of its own. */
struct gw_daemon {
        struct gw_config *cfg;
        struct gw_userdb *users;     /* main thread only */
        struct gw_store *store;
        /* The loop iteration's clocks, read together once (gw_daemon_clock_read): every
         * decision and label of the iteration uses these, so that a job's start, its limit
         * and its warning agree.  A fresh read is for an instant after a long blocking call
         * or outside the loop's thread, and says so where it is made. */
        gw_usec_t now;               /* monotonic */
        gw_usec_t now_wall;          /* wall clock, the same instant */
        struct gw_dloop loop;
        struct gw_dhost host;
        struct gw_djobs jobs;
        struct gw_hooks hooks;       /* the features' subscriptions to the lifecycle (lifecycle.h) */
        struct gw_executor *exec;    /* the backend: runs jobs' processes, answers for it (executor.h) */
        struct gw_sharing *sharing;  /* bookings, quotas, tokens, rate limits (sharing.c) */
        struct gw_cache *cache;      /* the dataset cache (cache.c); NULL without cache_dir */
        struct gw_events *events;    /* the dashboard's event stream (events.c) */
        struct gw_notify *notify;    /* webhooks (notify.c); NULL without webhook_url */
        struct gw_dbackups *backup;  /* online backups: the copy under way, the next one due (backup.c) */
        struct gw_publisher *publish; /* models being published: the copy under way, the queue (publish.c) */
        struct gw_nodes *nodes;      /* --backend slurm: the agents' snapshots (nodes.h), NULL none yet */
        struct gw_featstate state;
};

/* What the features ask of the backend (executor.h), never which one runs.  A daemon with no
 * backend yet (a unit test's, a benchmark's, before gw_backend_open) is answered as the local
 * one would answer. */
static inline enum gw_exec_placement gw_backend_placement(const struct gw_daemon *d) {
        return d->exec ? d->exec->placement : GW_EXEC_PLACE_HERE;
}
static inline bool gw_backend_preempts(const struct gw_daemon *d) {
        return !d->exec || d->exec->preempts;
}
/* NULL: this host's calendar holds bookings. */
static inline const struct gw_exec_book_ops *gw_backend_book(const struct gw_daemon *d) {
        return d->exec ? d->exec->book : NULL;
}
/* The node job id's attempt runs on, as the backend names it, or NULL. */
static inline const char *gw_backend_node_of(struct gw_daemon *d, int64_t id) {
        return d->exec && d->exec->node_of ? d->exec->node_of(d, id) : NULL;
}

/* queue.c: the running and queued jobs by id */
struct gw_djob *gw_jobmap_get(const struct gw_jobmap *m, int64_t id);
void gw_jobmap_put(struct gw_jobmap *m, struct gw_djob *dj);
void gw_jobmap_del(struct gw_jobmap *m, int64_t id);
void gw_jobmap_free(struct gw_jobmap *m);
void gw_queue_insert(struct gw_daemon *d, struct gw_djob *dj);
void gw_queue_remove(struct gw_daemon *d, struct gw_djob *dj);
void gw_running_add(struct gw_daemon *d, struct gw_djob *dj);
void gw_running_remove(struct gw_daemon *d, struct gw_djob *dj);
/* Runs the scheduler over the queue and starts what it says. */
void gw_schedule(struct gw_daemon *d);
/* The GPUs out of service that job j waits for, in words (gw_why_drained) into buf; NULL
 * when it waits for none. */
const char *gw_queue_drained_words(const struct gw_daemon *d, const struct gw_job *j, char *buf, size_t n);
/* The same for a reply's copy of j (its drain_view): only for a queued job whose reasons
 * include Drained. */
const char *gw_job_drained_view(const struct gw_daemon *d, const struct gw_job *j, char *buf, size_t n);

/* jobs.c */
struct gw_submit_error {
        int status;                  /* HTTP status */
        char field[64];
        char message[256];
};
/* jobs.c: a job by id: the live one if active, else the stored record, which *tmp then owns
 * (NULL: none). */
const struct gw_job *gw_job_lookup(struct gw_daemon *d, int64_t id, struct gw_job **tmp);
/* Validates j against the host and queues it (takes j).  0 with *ret_id, or -errno with err. */
int gw_job_submit(struct gw_daemon *d, struct gw_job *j, bool hold, struct gw_submit_error *err, int64_t *ret_id);
/* The three steps of a submission, for batches: check (no side effect), write to the store,
 * put in the queue (takes j).  ahead: the jobs of the same batch checked before j, an array's
 * tasks one each (not queued yet, but they count against the user's max_pending_jobs). */
int gw_job_validate(struct gw_daemon *d, struct gw_job *j, bool hold, size_t ahead, struct gw_submit_error *err);
/* A submission check (gw_submit_check_fn): the job it starts after exists and has not ended in
 * a way that can never satisfy it. */
int gw_job_check_dependency(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err);
int gw_job_record(struct gw_daemon *d, struct gw_job *j, struct gw_submit_error *err);
void gw_job_enqueue(struct gw_daemon *d, struct gw_job *j);
/* Records the start of a queued job on mask and launches it; inside the loop's transaction
 * (gw_jobs_batch_begin) the launch waits for its commit (undone if it fails). */
int gw_job_start(struct gw_daemon *d, struct gw_djob *dj, uint64_t mask);
/* Starts a recorded start through the executor; a start it refuses ends the job FAILED. */
int gw_job_launch(struct gw_daemon *d, struct gw_djob *dj);
void gw_job_start_undo(struct gw_daemon *d, struct gw_djob *dj);
/* The environment a job runs with (a new strv): the submitter's, minus what the config strips
 * and gpuward's own names, plus --env, plus gpuward's variables.  a: its account, or NULL. */
char **gw_job_environment(const struct gw_daemon *d, const struct gw_job *j, const struct gw_account *a);
/* jobs.c: the command this attempt runs, handed to the executor with the environment: the
 * original one, the Ultralytics resume form (`... resume=RUN/weights/last.pt
 * model=RUN/weights/last.pt`), or `sh -c RESUME_CMD`.  Malloc'ed strv. */
char **gw_resume_argv(const struct gw_job *j);
/* Ends a job that is not running (PENDING/HELD) or finalizes a running one.  The job ends
 * in memory whatever the store says; an end the store refuses (-errno) is logged, kept and
 * written again later (lifecycle.c), and the exits journal is kept for the next daemon. */
int gw_job_end(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
               const char *kind);
/* gw_job_end with the instant it ended (wall clock), where that is not now: an attempt whose
 * supervisor said when its job ended. */
int gw_job_end_at(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
                  const char *kind, gw_usec_t end_time);
/* A cancel: a queued job ends CANCELLED; a running one has the stop recorded, then gets
 * SIGTERM, SIGKILL after the grace period.  The write comes first: when the store refuses
 * it nothing is done and -errno is returned (gw_store_error_kind says why). */
int gw_job_cancel(struct gw_daemon *d, struct gw_djob *dj, const char *reason);
/* A cancel of what waits only: a queued job as gw_job_cancel; an array stops handing out
 * tasks and its queued ones end, while its running tasks run on.  -EBUSY for a running job
 * (nothing done): a selection of waiting jobs must not stop one that started meanwhile. */
int gw_job_cancel_waiting(struct gw_daemon *d, struct gw_djob *dj, const char *reason);
/* Whether the job's user is still the account that submitted it (name and uid: a deleted
 * user's uid goes to the next account made).  0; or -ENOENT, -ESTALE (the job must not run
 * as anyone) or -EIO (the account database cannot be read now) with why one line ("user
 * gone: account 'alice' (uid 1001) no longer exists"). */
int gw_job_account_check(struct gw_daemon *d, const struct gw_job *j, char *why, size_t n);
/* gw_job_end for a queued job that ends only if the store takes it (-errno: unchanged). */
int gw_job_end_recorded(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
                        const char *kind);
/* Appends "gpuward: MSG" to the job's log (gpuward's own log files only), for the user. */
void gw_job_log_note(struct gw_daemon *d, struct gw_djob *dj, const char *msg);
/* Sends sig to every process of a running job, through the executor. */
void gw_job_signal(struct gw_daemon *d, struct gw_djob *dj, int sig);
/* SIGTERM now, SIGKILL after the grace period; the job ends as state when it exits.  The
 * stop is recorded first; if the store refuses it the job is stopped anyway (logged). */
void gw_job_terminate(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason);
/* The same with its own grace (a reclaim profile's, which may give a job longer to save). */
void gw_job_terminate_within(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
                             gw_usec_t grace);
/* Holds a PENDING job or releases a HELD one (-EBUSY otherwise).  Recorded first: when the
 * store refuses it the job is left as it was (-errno; gw_store_error_kind says why). */
int gw_job_hold(struct gw_daemon *d, struct gw_djob *dj, bool hold, const char *who);
/* lifecycle_stop.c: a failed attempt retried from ckpt (taken) after backoff (monotonic;
 * not_before: its wall-clock label); msg says why, for the job's events. */
void gw_job_requeue(struct gw_daemon *d, struct gw_djob *dj, char *ckpt, gw_usec_t not_before, gw_usec_t backoff,
                    const char *msg);
/* Frees the jobs that ended during this loop iteration. */
void gw_jobs_bury(struct gw_daemon *d);
/* jobs.c: an ended job leaves the daemon's map; its executor state is let go, and it is
 * freed with the loop iteration (or kept while its end is unwritten). */
void gw_job_forget(struct gw_daemon *d, struct gw_djob *dj);
/* Backoffs, unwritten ends, time limits and SIGKILL deadlines; returns the next deadline
 * (monotonic) or INFINITY.  The loop calls each feature's own tick besides (main.c). */
gw_usec_t gw_jobs_tick(struct gw_daemon *d);
/* jobs_recover.c: loads active jobs from the store at start; running ones go to the
 * executor's adopt (re-adopted, or their end told). */
int gw_jobs_recover(struct gw_daemon *d);
char *gw_job_log_path(const struct gw_daemon *d, const struct gw_job *j);
/* The job's retry policy: its own --retries and --retry-on, else the configured defaults;
 * used for a failed attempt (recovery.c) and a failed copy of its dataset (cache.c). */
struct gw_retry_policy;
void gw_job_retry_policy(const struct gw_daemon *d, const struct gw_job *j, struct gw_retry_policy *p);
/* Groups the store writes of the events of one loop iteration (job ends) into one
 * transaction; nothing is spawned inside it.  gw_jobs_batch_end commits it. */
void gw_jobs_batch_begin(struct gw_daemon *d);
void gw_jobs_batch_end(struct gw_daemon *d);
/* prelog.c: whether a log file of the next queued jobs is still to be made ahead, and
 * making one (when the loop has nothing else to do); making those of the jobs that start
 * at the next ends (after each scheduling pass). */
bool gw_prelog_pending(struct gw_daemon *d);
void gw_prelog_one(struct gw_daemon *d);
void gw_prelog_head(struct gw_daemon *d);
struct gw_djob *gw_djob_new(struct gw_job *j);

/* jobclock.c: a running job's elapsed time, on the monotonic clock.  _start at its start
 * (kept in the store), _adopt for one found running at a restart (the kept start when this
 * boot's, else from its wall start, once).  gw_job_ran: how
 * long it has run at the monotonic instant mono (>= 0).  gw_job_clock_label: the wall-clock
 * label of mono for this job, its start + elapsed (its end time, its "now" for the idle
 * window); the loop's wall clock while it has no monotonic start. */
/* Reads the loop iteration's clocks into d->now and d->now_wall (main.c). */
void gw_daemon_clock_read(struct gw_daemon *d);
void gw_job_clock_start(struct gw_daemon *d, struct gw_djob *dj);
void gw_job_clock_adopt(struct gw_daemon *d, struct gw_djob *dj);
gw_usec_t gw_job_ran(const struct gw_djob *dj, gw_usec_t mono);
gw_usec_t gw_job_clock_label(const struct gw_daemon *d, const struct gw_djob *dj, gw_usec_t mono);
/* Frees dj: its executor state, then each feature's (GW_HOOK_JOB_FREED), then its own. */
struct gw_djob *gw_djob_free(struct gw_daemon *d, struct gw_djob *dj);
/* Marks the GPUs in mask as held by job id (0: free). */
void gw_gpus_assign(struct gw_daemon *d, uint64_t mask, int64_t id);

/* jobs_stop.c: a stop recorded before the daemon went down (recover_one): the attempt ends
 * as it says; stop_again also signals the processes that outlived the daemon. */
void gw_job_stop_restore(struct gw_djob *dj);
/* The warning ahead of a running job's end (limit_at): a "warn" event and a line in its log
 * time_limit_warn before its time limit, and its --signal to its main process.  Returns when
 * it is due next (GW_USEC_INFINITY: not any more). */
gw_usec_t gw_job_limit_warn_tick(struct gw_daemon *d, struct gw_djob *dj);
/* Whether the current attempt was warned already, from its events (a restarted daemon warns
 * it once, not twice). */
void gw_job_limit_warned_restore(struct gw_djob *dj, const struct gw_job_event *ev, size_t n);
void gw_job_stop_again(struct gw_daemon *d, struct gw_djob *dj);
/* lifecycle.c: ended jobs whose end the store refused, kept in memory (for the API) and
 * written again every few seconds until the store takes them. */
void gw_jobs_unwritten_keep(struct gw_daemon *d, struct gw_djob *dj);
const struct gw_djob *gw_jobs_unwritten_find(const struct gw_daemon *d, int64_t id);
/* The batch's commit failed: its ends are not on disk either. */
void gw_jobs_unwritten_batch_failed(struct gw_daemon *d);
/* Writes them again when due; returns the next try (monotonic) or INFINITY. */
gw_usec_t gw_jobs_unwritten_tick(struct gw_daemon *d);
/* At shutdown: a last try, a log line for each still unwritten, then frees them. */
void gw_jobs_unwritten_close(struct gw_daemon *d);

/* gpus.c */
int gw_gpus_open(struct gw_daemon *d);
void gw_gpus_close(struct gw_daemon *d);
/* GET /api/v1/gpus's object (new reference), for the event stream too; one GPU's.  details:
 * the command lines of the processes on them, which guests are not shown unless the config
 * says so. */
json_t *gw_observe_gpus_json(struct gw_daemon *d, bool details);
/* Whether g may be given whole to a job or a booking: not drained, not lost, and not in MIG
 * mode (a GPU cut into slices has no whole left to give: its slices are NVML's devices). */
static inline bool gw_gpu_whole_usable(const struct gw_dgpu *g) {
        return !g->drained && (!g->sampled || g->sample.health == GW_GPU_OK) && !g->mig;
}
json_t *gw_observe_gpu_json(struct gw_daemon *d, const struct gw_dgpu *g, bool details);

/* hostwatch.c, at each GPU sample: the host's CPU, memory and disks (the state dir's, /) into
 * d->host.load; a GPU process's CPU use since its last read into p->cpu (-1 the first time, or
 * when /proc no longer has it); the "host" object of GET /api/v1/gpus (new reference). */
void gw_hostwatch_sample(struct gw_daemon *d);
void gw_hostwatch_proc_cpu(struct gw_daemon *d, struct gw_dproc *p);
json_t *gw_hostwatch_json(const struct gw_daemon *d);

/* recovery.c, subscribed to GW_HOOK_ATTEMPT_ENDED, last */
/* An attempt ended (status: wait status; lost: no status known) at end_time (wall clock; the
 * caller's: when the supervisor saw the job end, else when the daemon learnt of it):
 * classify, record, retry or end. */
void gw_recovery_attempt_ended(struct gw_daemon *d, struct gw_djob *dj, bool lost, int status, gw_usec_t end_time,
                               const char *lost_why);
/* jobs.c: the log of j's attempt (its --output, else LOG_DIR/ID.log, ID.N.log for N > 1). */
char *gw_attempt_log_path(const struct gw_daemon *d, const struct gw_job *j, int attempt);
/* Frees a running job's GPUs and what its executor held for the attempt (its end, its retry). */
void gw_job_release_gpus(struct gw_daemon *d, struct gw_djob *dj);

/* observe.c: snapshots and events from the sampler */
extern const double gw_wait_bounds[10];
int gw_observe_start(struct gw_daemon *d);
void gw_observe_stop(struct gw_daemon *d);
/* The sampler's fd fired: apply the newest snapshot and the GPU events. */
void gw_observe_ready(struct gw_daemon *d);
/* Drains (or undrains) GPU idx, recorded in the store first: refused, nothing changes and
 * the store's error is returned, unless even_unrecorded (a GPU fault: it must take no job
 * either way). */
int gw_gpu_drain(struct gw_daemon *d, unsigned idx, bool drain, const char *reason, bool even_unrecorded);
/* The telemetry summary of a job: live for running jobs, stored for finished ones; NULL if none. */
json_t *gw_observe_job_json(struct gw_daemon *d, const struct gw_job *j);
/* Called when a running job ends: persists its last minute and its summary (into j->telemetry). */
void gw_observe_job_end(struct gw_daemon *d, struct gw_djob *dj);
void gw_observe_job_started(struct gw_daemon *d, const struct gw_job *j);
/* Frees dj's telemetry (a retry's new attempt, the job let go). */
void gw_jobtel_free(struct gw_daemon *d, struct gw_djob *dj);
/* dj's telemetry, a series per GPU (*ret_n of them, 0 before its first sample): borrowed,
 * valid until the next sample. */
const struct gw_jobtel *gw_observe_jobtel(const struct gw_daemon *d, const struct gw_djob *dj, size_t *ret_n);

/* sharing.c: bookings, quotas, rate limits, tokens */
struct gw_sharing;
int gw_sharing_open(struct gw_daemon *d);
void gw_sharing_close(struct gw_daemon *d);
/* Each loop iteration: booking starts, ends, warnings, no-shows; returns the next deadline
 * (monotonic) or GW_USEC_INFINITY. */
gw_usec_t gw_sharing_tick(struct gw_daemon *d);
/* Fills allowed/blocked of each pending job for the scheduler (bookings, quotas). */
void gw_sharing_sched(struct gw_daemon *d, struct gw_sched_job *pending, size_t n);
/* At submit: the priority's grant (403, field "priority"), quota hard limits (403, field
 * "quota") and the booking's ownership; 0 or -errno with err.  ahead: the user's jobs of the
 * same batch (an array's tasks one each), checked but not queued yet. */
int gw_sharing_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err);
/* A job ended: its booking was used until now. */
void gw_sharing_job_ended(struct gw_daemon *d, const struct gw_job *j);

/* handlers.c */
void gw_api_handle(void *userdata, const struct gw_http_request *req, struct gw_http_reply *rep);
void gw_api_conn_gone(void *userdata, struct gw_http_conn *conn);
/* Answers the cancel requests waiting on dj (GW_HOOK_JOB_ENDED); _forget lets go of them
 * unanswered (GW_HOOK_JOB_FREED: a job the daemon lets go at shutdown). */
void gw_api_resume_waiters(struct gw_daemon *d, struct gw_djob *dj);
void gw_api_forget_waiters(struct gw_daemon *d, struct gw_djob *dj);

/* ---- idle-GPU reclamation: reclaim_watch.c, reclaim_policy.c (+ reclaim_watch.h) ---- */
struct gw_rwatch;
struct gw_caller;
struct gw_route_ctx;
/* After every GPU sample: gathers each running job's signals, runs gw_reclaim_decide and
 * carries out what it says (warn, SIGTERM, SIGKILL).  Reads the wall clock itself. */
void gw_reclaim_watch(struct gw_daemon *d);
/* Frees dj's watch (closes a health probe in flight; GW_HOOK_JOB_FREED). */
void gw_reclaim_forget(struct gw_daemon *d, struct gw_djob *dj);
/* A line of gpuward's for dj's log (GW_HOOK_LOG_LINE): appended, its bytes counted as
 * gpuward's, not as the job's progress; nothing for a job the watch has not seen. */
void gw_reclaim_log_line(struct gw_daemon *d, struct gw_djob *dj, const char *line);
/* The results.csv the watch chose for dj's current attempt, NULL none (owned by the watch:
 * valid until its next sample). */
const char *gw_reclaim_results_path(const struct gw_daemon *d, const struct gw_djob *dj);
/* For the job page (handlers_dash.c), a job the watch has not chosen for: the run's results.csv as gw_rwatch_gather finds it (malloc'ed; NULL until one was
 * written during this attempt).  The files themselves are read through daemon/userfile.h. */
char *gw_rwatch_find_results(const struct gw_job *j);
/* At re-adoption: the idle window the previous daemon recorded for the attempt (its newest
 * "idle" event) and its warning, so that the idle timeout does not start again with the
 * daemon, nor the warning come twice. */
void gw_reclaim_idle_restore(struct gw_daemon *d, struct gw_djob *dj, const struct gw_job_event *ev, size_t n);
/* The profile a job runs under: its own, else "default"; a profile the config no longer has
 * falls back to "default" too.  Never NULL. */
const struct gw_reclaim_policy *gw_reclaim_policy_of(const struct gw_daemon *d, const struct gw_job *j);
/* At submit: 0, or -EINVAL (unknown profile) / -EPERM (the user may not choose it) with err
 * filled for field idle_policy. */
int gw_reclaim_check_submit(struct gw_daemon *d, const struct gw_job *j, struct gw_submit_error *err);
/* reclaim_policy.c, for POST /api/v1/jobs/{id}/policy (admins): changes an active job's
 * profile to name, by whom, with event "policy".  0, or the HTTP status of the refusal with
 * why: 400 no such profile (field idle_policy), 503 the store refused it (nothing changed). */
int gw_reclaim_policy_set(struct gw_daemon *d, struct gw_djob *dj, const char *name, const char *by, char *why,
                          size_t n);
/* ---- end of idle-GPU reclamation ---- */

/* joblog.c: a job log past log_max (its supervisor cut the middle, shim/logcap.h).  watch,
 * after each sample: a "log_capped" event the first time the cut is seen in a running
 * attempt; attempt_ended: one with the final count.  gw_state_disk_low: whether the state
 * dir's disk has less free than state_reserve (job logs stop growing then); its free bytes
 * into *ret_free (may be NULL). */
void gw_joblog_watch(struct gw_daemon *d);
void gw_joblog_attempt_ended(struct gw_daemon *d, struct gw_djob *dj);
/* Frees what it told of dj (GW_HOOK_JOB_FREED). */
void gw_joblog_forget(struct gw_daemon *d, struct gw_djob *dj);
bool gw_state_disk_low(const struct gw_daemon *d, uint64_t *ret_free);

/* ---- training awareness: training.c, training_snap.c, training_api.c (+ training_int.h) ---- */
struct gw_train;
/* After every GPU sample: epochs from results.csv, the ETA (into j->eta), the leak check and
 * its policy, checkpoint snapshots.  Reads the wall clock itself. */
void gw_training_watch(struct gw_daemon *d);
/* Frees dj's training state (GW_HOOK_JOB_FREED). */
void gw_training_forget(struct gw_daemon *d, struct gw_djob *dj);
/* For recovery.c: true (once) when this attempt was stopped by leak_policy restart, with the
 * evidence in why; it is then retried like an oom that a leak explains. */
bool gw_training_take_restart(struct gw_daemon *d, struct gw_djob *dj, char *why, size_t n);
/* For recovery.c, when an attempt ends: a last look at results.csv, so that the rows written
 * since the last sample get their end times too. */
void gw_training_attempt_ended(struct gw_daemon *d, struct gw_djob *dj);
/* For recovery.c: the epochs the current attempt's run had finished, as the watch last read
 * its results.csv (after gw_training_attempt_ended's last look); -1 when it read none. */
long gw_training_epochs_done(const struct gw_daemon *d, const struct gw_djob *dj);
/* Whether a leak was detected during the current attempt (an oom is then retried). */
bool gw_training_leak_flagged(const struct gw_daemon *d, const struct gw_djob *dj);
/* Seconds until the job's estimated end; NAN without an estimate. */
double gw_training_eta_seconds(const struct gw_djob *dj, gw_usec_t now);
/* The "training" object of GET /api/v1/jobs/{id}: epoch, ETA, leak, newest snapshots; JSON null
 * when there is nothing to say.  New reference. */
json_t *gw_training_job_json(struct gw_daemon *d, const struct gw_job *j);
/* training_predict.c: predicted starts of queued jobs (core/predict.h).  fill_view adds ETAs,
 * expected run times, dependencies and memory needs to a calendar view (sharing.c's, for the
 * schedule's layout and the predictions);
 * predict writes j->predicted_start/end of every queued job, at most every 2 s unless force;
 * prediction_json is the basis, for GET /api/v1/jobs/{id}/eta and the job's "training". */
struct calendar_view;
void gw_training_fill_view(struct gw_daemon *d, struct calendar_view *v);
void gw_training_predict(struct gw_daemon *d, bool force);
json_t *gw_training_prediction_json(struct gw_daemon *d, const struct gw_job *j);
/* Whether j's predicted start may be shown: false when it waits for a held job, for a GPU
 * back in service (Drained), or when the start has passed (it waits on what the replay
 * cannot time), and then *ret_words says what it waits for (core/predict.h
 * gw_predict_wait_words), written into buf (GW_WAIT_WORDS_SIZE bytes do), or NULL.  True
 * with *ret_words set when a queued job has no start but waits for a job still queued or
 * running. */
#define GW_WAIT_WORDS_SIZE 384
bool gw_training_start_shown(struct gw_daemon *d, const struct gw_job *j, char *buf, size_t n,
                             const char **ret_words);
/* Applies that answer to copy, a reply's copy of the job: no predicted start, end or promise
 * unless shown; words (borrowed) as its wait_view. */
void gw_training_start_view(struct gw_job *copy, bool shown, const char *words);
/* When each results.csv row of the current attempt appeared, in seconds since its start
 * (the job page's epoch lines); JSON null when not watched.  New reference. */
json_t *gw_training_epoch_offsets_json(struct gw_daemon *d, const struct gw_job *j);
/* The object GET /api/v1/jobs/{id}/eta replies for j (new reference); details: whether the
 * reader sees the job's paths (else results_csv is null). */
json_t *gw_training_eta_reply(struct gw_daemon *d, const struct gw_job *j, bool details);
/* training_snap.c: the job's snapshots as JSON objects (pruned ones left out unless all);
 * NULL when the store cannot be read. */
json_t *gw_train_snapshots_json(struct gw_daemon *d, int64_t job_id, bool all);
/* training_restore.c: a restore is a forked helper the loop never waits on.  start forks it
 * for the suspended request conn (0, or -errno with the user's message in why); reaped takes
 * a child's exit (false: not a restore helper), records the outcome as a "restore" event and
 * resumes conn; take gives the resumed request its outcome (the HTTP status, -ENOENT when
 * none is there); tick kills helpers past their time and says when the next one is due. */
int gw_train_restore_start(struct gw_daemon *d, const struct gw_job *j, int seq, const char *path, bool force,
                           struct gw_http_conn *conn, char *why, size_t n);
bool gw_train_restore_reaped(struct gw_daemon *d, pid_t pid, int status);
int gw_train_restore_take(struct gw_daemon *d, struct gw_http_conn *conn, int *ret_seq, char *to, size_t to_n, char *why,
                          size_t n);
void gw_train_restore_conn_gone(struct gw_daemon *d, struct gw_http_conn *conn);
gw_usec_t gw_train_restore_tick(struct gw_daemon *d);
/* backup.c: online backups.  The tick ends a finished copy (answering its request) and starts
 * a scheduled one when due; it returns when it wants to run again.  conn_gone forgets a
 * request that went away; close waits for a copy under way (at shutdown). */
gw_usec_t gw_backup_tick(struct gw_daemon *d);
void gw_backup_conn_gone(struct gw_daemon *d, struct gw_http_conn *conn);
void gw_backup_close(struct gw_daemon *d);
/* An admin's backup to path (checked already), its request suspended on conn: 0 started, or
 * the HTTP status of the refusal with why (409 one is under way, 500 it cannot start).
 * answer, when conn's request is resumed: 200 with the copy's path and size, or the status
 * with why (400 the path was made meanwhile, 507 the disk is full, 500 it failed, 503 the
 * copy is not this request's or not ended: the daemon is stopping). */
int gw_backup_request(struct gw_daemon *d, const char *path, struct gw_http_conn *conn, char *why, size_t n);
int gw_backup_answer(struct gw_daemon *d, struct gw_http_conn *conn, char *path, size_t path_n, uint64_t *bytes,
                     char *why, size_t n);
void gw_train_restore_free_all(struct gw_daemon *d);
/* ---- end of training awareness ---- */
