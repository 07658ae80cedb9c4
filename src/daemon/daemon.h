/* The daemon's core types and its loop: jobs in memory, GPUs, the features' state tables, the
 * backend's answers.  Each module declares its own functions in its own header (life/jobs.h,
 * life/queue.h, observe/gpus.h, training/training.h, ...). */
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
        gw_usec_t limit_at; /* monotonic: time limit reached */
        gw_usec_t start_mono; /* monotonic: the attempt started (jobclock.c); 0 = not running */
        gw_usec_t backoff_due; /* monotonic: its retry backoff ends (jobs.c); 0 = not known yet */
        gw_usec_t kill_at; /* monotonic: SIGKILL due, 0 = none */
        bool terminating;
        enum gw_job_state end_state; /* CANCELLED or TIMEOUT once terminating */
        char *end_reason;
        bool dep_final; /* dependency resolved for good (cached) */
        bool account_unread_told; /* logged that its account could not be looked up */
        enum gw_dep_status dep;
        struct gw_exec_job *exec; /* the executor's state of the job (executor.h), or NULL */
        void (*exec_free)(struct gw_djob *dj); /* frees exec (its processes are left alone) */
        char sigkill_why[200]; /* gpuward sent SIGKILL to its main process outside a stop: why */
        bool dead; /* ended; freed by gw_jobs_bury */
        bool booking_closed; /* pending in a booking that is over: to be ended */
        bool limit_by_booking; /* its booking ends before its time limit */
        bool limit_warned; /* told its end is near (time_limit_warn, --signal) */
        struct gw_djob *next_dead;
        struct gw_gpu_event *events; /* Xid/ECC/lost on its GPUs during this attempt */
        size_t n_events, cap_events;
        struct gw_attempt_mark last_mark; /* how the previous attempt ended, for crash loops */
        int log_made_attempt; /* the attempt whose log file prelog.c made ahead, 0 none */
        /* What the job's GPU cards show of it (GET /api/v1/gpus's job_info): set at each sample
         * by the features that know it, so that observe reads them without calling up. */
        gw_usec_t card_stop_at; /* reclaim_watch.c: the idle watch's stop, wall clock; 0 none due */
        bool card_leak; /* training.c: a leak reported in this attempt */
        double card_leak_epochs, card_leak_seconds; /* its forecast; < 0 not known */
        char card_leak_evidence[GW_LEAK_EVIDENCE_MAX];
        struct gw_cache_job *cache; /* its --dataset's copy (cache.c), NULL none */
        struct gw_scratch_job *scratch; /* its --scratch folder (scratch.c), NULL none */
        int n_preempted; /* attempts it lost to preemption: they use none of its retries */
        bool end_unwritten; /* ended, but the store refused the end (lifecycle.c) */
        bool end_in_batch; /* ended inside this loop iteration's transaction */
        char end_kind[16]; /* the end's event kind, to write it again */
        struct gw_job_attempt *end_attempt; /* its last attempt's row, to write it again with the end */
        struct gw_djob *next_unwritten;
        struct gw_array *array; /* a job array: its tasks' indexes (jobarray.c), NULL until used */
};

/* A process seen on a GPU, with the job it belongs to (0: rogue). */
struct gw_dproc {
        unsigned pid;
        uint64_t mem; /* UINT64_MAX if NVML does not say */
        int sm_util; /* -1 without per-process samples */
        int64_t job_id;
        bool stray; /* its job's, on a GPU that job was not given */
        uint64_t cpu_ticks; /* utime + stime at cpu_at (hostwatch.c) */
        gw_usec_t cpu_at; /* monotonic; 0: never read */
        double cpu; /* percent of one CPU between the last two reads; -1: not known */
        uint32_t uid;
        char user[32];
        char cmd[160];
};

struct gw_dgpu {
        struct gw_gpu_static info;
        struct gw_gpu_sample sample;
        bool sampled;
        gw_usec_t sampled_at; /* wall clock */
        bool drained;
        char drain_reason[256];
        int64_t job_id;
        struct gw_dproc *procs;
        size_t n_procs;
        unsigned rogue; /* processes of no job */
        struct gw_ring ring; /* the last hour at full rate */
        struct gw_gpu_mig_layout *mig; /* its MIG devices at the last sample; NULL: whole */
};

/* A running job's telemetry on one of its GPUs. */
struct gw_jobtel {
        unsigned gpu;
        struct gw_usage usage;
        struct gw_ring ring;
        struct gw_agg agg; /* the minute being aggregated for the store */
        uint64_t mem_total; /* the GPU's memory, as its last sample said; a slice job's: its slices' */
        /* On MIG slices, which have no utilisation: its figure is GPM's SM activity, counted
         * in gpm over the samples where every slice of the job had one; shown null when none. */
        bool on_slices;
        struct gw_usage gpm;
};

struct gw_jobmap {
        struct gw_djob **slots; /* open addressing on id; NULL = empty, TOMBSTONE = deleted */
        size_t cap, n, used;
};

/* The host beside its GPUs (hostwatch.c), read at each GPU sample for the dashboard. */
struct gw_hostload {
        bool have_cpu, have_mem;
        uint64_t cpu_busy, cpu_total; /* /proc/stat's ticks at the last read */
        double cpu_percent; /* all CPUs, between the last two reads; < 0: not yet */
        unsigned ncpu;
        uint64_t mem_total, mem_available;
        struct gw_hostdisk {
                bool have;
                uint64_t total, avail; /* bytes; avail: what an unprivileged user may still write */
        } disk_state, disk_root;
        gw_usec_t read_at; /* wall clock; 0: never */
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
        uint64_t reclaims; /* jobs SIGTERMed as idle, for gpuward_reclaims_total */
        uint64_t state_counts[_GW_JOB_STATE_MAX]; /* jobs per state */
        uint64_t wait_counts[10]; /* queue-wait histogram of started jobs (cumulative) */
        uint64_t wait_n;
        double wait_sum;
};

/* The active jobs in memory: the queue, the running set and the ends in flight (lifecycle.c,
 * queue.c). */
struct gw_djobs {
        struct gw_jobmap map;
        struct gw_djob **queue; /* PENDING and HELD, in queue order */
        size_t n_queue, cap_queue;
        struct gw_djob **running;
        size_t n_running, cap_running;
        bool sched_dirty;
        bool recovering; /* loading jobs from the store at start */
        struct gw_djob *dead; /* ended jobs awaiting gw_jobs_bury */
        bool deps_changed; /* a job ended: dependency verdicts may change */
        size_t n_backoff; /* queued jobs waiting out a retry delay */
        bool in_batch; /* inside one loop iteration's store transaction */
        bool keep_exits; /* an end was not written: the executor keeps what it knows of it */
        struct gw_djob **to_launch; /* started inside the loop's transaction, launched after it */
        size_t n_to_launch, cap_to_launch;
        gw_usec_t start_retry_at; /* monotonic: schedule again after a start the store refused */
        struct gw_djob *unwritten; /* ended jobs whose end the store refused (lifecycle.c) */
        gw_usec_t unwritten_retry_at; /* monotonic: when to try writing them again */
        struct gw_fair *fair; /* fair share's usage, which orders the queue (fairshare.c); NULL with
                                      * backend slurm */
        uint64_t n_queued; /* jobs put in the queue so far (gw_queue_insert) */
        gw_usec_t whole_pass_at; /* monotonic: the last pass that planned the whole queue */
        bool tail_stale; /* a pass planned only the queue's head since (gw_schedule_tick) */
};

/* Each feature's state of each active job, by job id (base/keytab.h), beside the job rather
 * than in struct gw_djob: a value is the feature's own struct, declared in the feature's
 * private header (a *_state.h or *_int.h, which the layer check lets no other module
 * include), made when the feature first needs it and freed from its GW_HOOK_JOB_FREED. */
struct gw_featstate {
        struct gw_keytab train; /* struct gw_train (training_int.h) */
        struct gw_keytab train_pick; /* struct gw_train_pick (training_int.h) */
        struct gw_keytab rwatch; /* struct gw_rwatch (reclaim_watch.h), the idle watch */
        struct gw_keytab preempt; /* struct gw_preempt_job (preempt.c) */
        struct gw_keytab joblog; /* struct joblog_told (joblog.c) */
        struct gw_keytab sharing; /* struct sharing_job (sharing.c) */
        struct gw_keytab fair; /* struct fair_job (fairshare.c) */
        struct gw_keytab waiters; /* struct api_waiters (handlers.c) */
        struct gw_keytab tel; /* struct obs_tel (observe.c), a running job's telemetry */
};

/* The loop, its doors and what the daemon knows of itself (main.c). */
struct gw_dloop {
        int epfd, sigfd;
        int lock_fd; /* STATE_DIR/gpuwardd.lock, flock'ed while we run */
        bool socket_bound; /* the Unix socket is ours to remove at the end */
        struct gw_source sig_src, http_src[2];
        struct gw_http_server *http[2]; /* unix, tcp */
        int tcp_port;
        char tcp_addr[300]; /* HOST:PORT the TCP door is bound to, "" without one */
        bool quit;
        bool ready; /* database open and GPUs enumerated */
        bool big_reply; /* a large reply was built: give its memory back afterwards */
        gw_usec_t started_at; /* wall clock */
        char boot_id[40]; /* the kernel's, for monotonic instants kept in the store
                                      * (jobclock.c); "" until read, "-" when unreadable */
        uid_t euid; /* ours, read once (a job start asks twice) */
        char log_dir[4096], run_dir[4096];
        struct gw_dstats stats; /* for /metrics */
};

/* The daemon: the loop, the store, the jobs and the executor under the lifecycle, and one
 * pointer per feature that keeps state of its own. */
struct gw_daemon {
        struct gw_config *cfg;
        struct gw_userdb *users; /* main thread only */
        struct gw_store *store;
        /* The loop iteration's clocks, read together once (gw_daemon_clock_read): every
         * decision and label of the iteration uses these, so that a job's start, its limit
         * and its warning agree.  A fresh read is for an instant after a long blocking call
         * or outside the loop's thread, and says so where it is made. */
        gw_usec_t now; /* monotonic */
        gw_usec_t now_wall; /* wall clock, the same instant */
        struct gw_dloop loop;
        struct gw_dhost host;
        struct gw_djobs jobs;
        struct gw_hooks hooks; /* the features' subscriptions to the lifecycle (lifecycle.h) */
        struct gw_executor *exec; /* the backend: runs jobs' processes, answers for it (executor.h) */
        struct gw_sharing *sharing; /* bookings, quotas, tokens, rate limits (sharing.c) */
        struct gw_cache *cache; /* the dataset cache (cache.c); NULL without cache_dir */
        struct gw_events *events; /* the dashboard's event stream (events.c) */
        struct gw_notify *notify; /* webhooks (notify.c); NULL without webhook_url */
        struct gw_dbackups *backup; /* online backups: the copy under way, the next one due (backup.c) */
        struct gw_publisher *publish; /* models being published: the copy under way, the queue (publish.c) */
        struct gw_nodes *nodes; /* --backend slurm: the agents' snapshots (nodes.h), NULL none yet */
        struct gw_featstate state;
};

/* What the features ask of the backend (executor.h), never which one runs.  A daemon with no
 * backend yet (a unit test's, a benchmark's, before gw_backend_open) is answered as the local
 * one would answer. */
static inline enum gw_exec_placement gw_backend_placement(const struct gw_daemon *d) {
        return d->exec ? d->exec->placement : GW_EXEC_PLACE_HERE;
}
static inline bool gw_backend_preempts(const struct gw_daemon *d) { return !d->exec || d->exec->preempts; }
/* NULL: this host's calendar holds bookings. */
static inline const struct gw_exec_book_ops *gw_backend_book(const struct gw_daemon *d) {
        return d->exec ? d->exec->book : NULL;
}
/* The node job id's attempt runs on, as the backend names it, or NULL. */
static inline const char *gw_backend_node_of(struct gw_daemon *d, int64_t id) {
        return d->exec && d->exec->node_of ? d->exec->node_of(d, id) : NULL;
}

/* jobs.c */
struct gw_submit_error {
        int status; /* HTTP status */
        char field[64];
        char message[256];
};
