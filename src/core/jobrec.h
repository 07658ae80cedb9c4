/* A job record: the plain data the store, the API codecs and the daemon share. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/time.h"
#include "core/directive.h"
#include "core/job.h"

/* An array's tasks as the API shows them (daemon/life/jobarray.c fills it in for a reply). */
struct gw_job_array_view {
        uint32_t total;
        uint32_t counts[_GW_JOB_STATE_MAX]; /* waiting tasks count as PENDING */
        const char *waiting; /* folded, "17_[5-49%4]"; NULL = none */
        int64_t best_index; /* the task with the best mAP50-95; -1 = none */
        double best_map50_95;
        long best_epoch;
};

struct gw_job {
        int64_t id;
        char *name;
        uint32_t uid, gid;
        char *user;

        enum gw_job_state state;
        enum gw_job_reason wait_reason; /* why PENDING/HELD */
        uint32_t wait_why; /* not stored: every reason it waits for, bits (1u <<
                                            * reason), as the last scheduling pass found them
                                            * (core/waitwhy.h); 0 = only wait_reason is known */
        char *end_reason; /* why it ended ("exit 0", "time limit", "lost") */

        int priority;
        int ngpus;
        uint64_t gpu_mem; /* bytes per GPU, 0 = any */
        gw_usec_t time_limit;
        int64_t after_job; /* 0 = none */
        enum gw_dep_kind after_kind;
        bool has_exit;

        char **argv; /* NULL-terminated */
        char **env; /* submitter's environment; NULL = minimal */
        char **env_extra; /* --env K=V, wins over env */
        char *cwd;
        char *output; /* user-chosen log file, or NULL */
        char *log_path; /* where stdout+stderr go */

        uint64_t gpu_mask;
        gw_usec_t submit_time, start_time, end_time; /* wall clock, 0 = not yet */
        int exit_code; /* valid when has_exit and signal == 0 */
        int signal; /* terminating signal, 0 = none */
        int attempt;

        pid_t pid, shim_pid;
        uint64_t pid_start, shim_start; /* /proc start times, to tell reused pids apart */
        char *cgroup; /* per-job cgroup dir, or NULL */
        char *telemetry; /* JSON summary written when the job ends, or NULL */

        /* Recovery (submit --retries, --retry-on, --yolo, --checkpoint, --resume-cmd). */
        int retries; /* retries allowed after the first attempt */
        bool yolo; /* an Ultralytics run: resume with resume=True */
        char *retry_on; /* comma list of failure classes, NULL = default */
        char *checkpoint; /* glob of checkpoints for other jobs, or NULL */
        char *resume_cmd; /* command (sh -c) that replaces the command on retries */
        gw_usec_t not_before; /* wall clock: waiting out a backoff until then */
        char *resume_from; /* the checkpoint this attempt resumes from, or NULL */
        long resume_epoch; /* epochs resume_from holds, read from it when the job
                                            * was queued again (daemon/training/resume.h); 0 not read */

        /* Idle reclamation (submit --idle-policy, --progress, --health-url). */
        char *idle_policy; /* profile name, NULL = default */
        char *progress_file;
        char *health_url;

        int64_t booking_id; /* submit --reservation: runs inside that booking */

        /* submit --signal SIG@BEFORE: SIG to the job's main process BEFORE ahead of its end. */
        gw_usec_t warn_before; /* 0: the daemon's time_limit_warn */
        int warn_signal; /* 0: none */

        /* A stop recorded before the job's processes were signalled (cancel, time limit,
         * reclaim): the state the attempt ends in once they are gone, so that a restarted
         * daemon ends it so too.  GW_JOB_PENDING (0) = none; a retry clears it. */
        enum gw_job_state stop_state;
        char *stop_reason; /* "cancelled by alice"; NULL without a stop */

        /* Training awareness (daemon/training/training.c). */
        char *leak_policy; /* "warn" or "restart"; NULL = warn */
        gw_usec_t eta; /* not stored: the live estimated end (wall clock), 0 = none */
        gw_usec_t eta_overdue; /* not stored: > 0, the run is this late (core/eta.h); eta
                                            * is then the end that was due, in the past */
        /* not stored: a job waiting on its user's quota, in words, for its reason
         * ("Quota: max_gpus=1, 1 in use by job 24"; daemon/sharing/sharing.c); NULL = none.
         * On the heap, not room for the longest words in every job: few jobs wait on a quota. */
        char *wait_detail;
        gw_usec_t predicted_start; /* not stored: a queued job's predicted start and end */
        gw_usec_t predicted_end; /* (core/predict.h, wall clock), 0 = none */
        gw_usec_t latest_start; /* not stored: its start if every job keeps its time
                                            * limit (gw_predict_latest_starts), 0 = none */
        /* Job arrays (submit --array).  The array itself is one job that never runs: it
         * holds the spec and how far its tasks were handed out; each task becomes a job of
         * its own when it starts (daemon/life/jobarray.c). */
        char *array_spec; /* the array: "0-49%4"; NULL for any other job */
        uint32_t array_next; /* the array: tasks handed out, in the spec's order */
        int predicted_attempt; /* not stored: the attempt the three above are for: a
                                            * retry back in the queue is not the wait they predicted */
        int64_t array_job; /* a task: its array's id; 0 = not a task */
        int64_t array_index; /* a task: its index in the array (when array_job > 0) */
        const struct gw_job_array_view *array_view; /* not stored: an array's tasks, for a reply;
                                            * borrowed, NULL = none */
        const char *node_view; /* not stored: the node Slurm runs its attempt on, for a
                                            * reply (--backend slurm); borrowed, NULL = none */
        const char *drain_view; /* not stored: the GPUs out of service a job waits for,
                                            * in words (gw_why_drained), for a reply; borrowed,
                                            * NULL = none */
        const char *wait_view; /* not stored: what a queued job's start waits for, in
                                            * words, where no future start can be given (the API's
                                            * predicted_wait); borrowed, NULL = none */
        bool interactive; /* gpuward run: a terminal session (never retried) */
        char *dataset; /* submit --dataset: a directory or a data YAML to stage
                                            * into the node's cache before it starts; NULL none */
        const char *dataset_dir; /* not stored: its staged copy, once ready (the cache's,
                                            * borrowed): GPUWARD_DATASET_DIR */
        const char *data_yaml; /* not stored: the rewritten data YAML, once ready:
                                            * GPUWARD_DATA_YAML */
        const char *dataset_state; /* not stored: where its copy is, for a reply ("waiting",
                                            * "copying", "retrying", "ready"; the cache's, a static
                                            * string); NULL = none in hand (no dataset, or ended) */
        struct gw_job_staged {
                bool set, ok, hit;
                int gpus;
                gw_usec_t took;
                char node[65];
        } staged; /* not stored: --backend slurm, how long the node's agent took to stage its
                                            * dataset while its allocation held gpus (the event
                                            * it made is stored) */
        bool scratch; /* submit --scratch: works in a node-local folder whose
                                            * checkpoints go back to its cwd (daemon/scratch) */
        const char *scratch_dir; /* not stored: the current attempt's node-local folder
                                            * (the scratch feature's, borrowed): GPUWARD_SCRATCH;
                                            * NULL = none in hand */
        char *scratch_name; /* on a cluster, its attempt's folder under scratch_dir, named
                                            * with a random part when it started (gw_scratch_name);
                                            * NULL = JOB-ATTEMPT (one host, or recorded before) */
        bool preemptible; /* submit --preemptible: may be stopped, and queued again to
                                            * resume, for a higher-priority job or a booking */
        char *publish; /* submit --publish NAME: its run's best.pt goes into the
                                            * model store as NAME when it completes; NULL = none */
        char *publish_metric; /* --publish-if-better METRIC: only when it beats the latest
                                            * version's; NULL = always */
        bool by_admin; /* not stored: submitted by an admin (the API's role),
                                            * whose grant is any priority: the submission's
                                            * checks read it, nothing after */
        bool queue_first; /* not stored: preempted, it waits first of its priority
                                            * (daemon/preempt/preempt.c); cleared when it starts again */
        char *preempted_by; /* not stored: while queue_first, who preempted it, as
                                            * its attempt's evidence names it ("job 12 (alice,
                                            * priority 5)"); NULL = not known */
        char *tty_socket; /* not stored: a running interactive attempt's socket,
                                            * set by the executor; NULL = none */
        double fairshare; /* not stored: a queued job's user's fair-share factor
                                            * at the last scheduling pass, 0 = none (off) */
        /* not stored: why a queued job stands where it does in the queue is its priority and
         * then this, its user's fair-share line (gw_fs_priority_why); "" = fair share is off,
         * NULL = not known.  Borrowed from daemon/base/fairshare.c, which keeps each user's line in
         * place for as long as the daemon runs, so that 10,000 queued jobs of one user hold
         * one line, not 10,000 copies. */
        const char *fair_line;
        /* MIG slices instead of whole GPUs (submit --gpus PROFILE[:COUNT], core/migplace.h). */
        char *mig_profile; /* the slices' profile ("1g.10gb"); NULL = whole GPUs */
        int mig_count; /* slices asked for, with mig_profile */
        char *mig_slices; /* the UUIDs of the slices its last attempt got, comma-
                                            * separated as CUDA_VISIBLE_DEVICES takes them ("MIG-..,
                                            * MIG-.."); kept after its end for show; NULL = none yet */
        double mig_share; /* the GPUs those slices make up (gw_mig_share): what
                                            * accounting counts its GPU-hours by; 0 = none */
        char *mig_wait; /* not stored: why a queued slice job waits, in words
                                            * ("no free 1g.10gb slice"); NULL = none */
};

struct gw_job_attempt {
        int attempt;
        uint64_t gpu_mask;
        gw_usec_t start_time, end_time;
        bool has_exit;
        int exit_code, signal;
        char *class_name; /* failure class, "ok", ... */
        char *evidence;
        char *resumed_from;
        long ckpt_epoch; /* epochs resumed_from holds (the job's resume_epoch
                                            * then), 0 not read */
        int epoch; /* epoch reached, -1 unknown */
        char *log_path;
        char *ckpt_id; /* its newest checkpoint at its end (gw_ckpt_id), ""
                                            * none; NULL not recorded */
};
void gw_job_attempts_free(struct gw_job_attempt *a, size_t n);

struct gw_job_event {
        gw_usec_t time;
        enum gw_job_state state;
        char *kind;
        char *message;
};

/* A GPU's event as recorded (Xid, health, drain, rogue process): strings borrowed from
 * whoever fills it in. */
struct gw_gpu_event_rec {
        gw_usec_t time;
        const char *node; /* a cluster node's GPU (its agent's report); NULL: this host's */
        unsigned gpu;
        const char *kind;
        long long xid; /* -1: none */
        int64_t job_id; /* 0: none */
        const char *message;
};

struct gw_job *gw_job_free(struct gw_job *j);
/* The reason a waiting job shows: GW_REASON_PREEMPTED for a job queued again after a
 * preemption (queue_first) that waits for GPUs (the scheduler says Resources, Priority, or
 * Reservation: free GPUs kept for its preemptor or booked), which would otherwise read as
 * "others are bigger", or as a booking of its own it does not have; its wait_reason else. */
enum gw_job_reason gw_job_reason_shown(const struct gw_job *j);
/* *field becomes a copy of text (NULL or "": none), kept as it is when it already says so. */
void gw_job_text_set(char **field, const char *text);
static inline void gw_job_freep(struct gw_job **j) { gw_job_free(*j); }
void gw_job_events_free(struct gw_job_event *ev, size_t n);

/* NULL-terminated string vectors. */
size_t gw_strv_length(char *const *v);
char **gw_strv_copy(char *const *v);
/* Encodes v as its strings each followed by NUL (a SQLite blob); *ret_len is its size. */
char *gw_strv_pack(char *const *v, size_t *ret_len);
/* Decodes what gw_strv_pack made; NULL for a NULL blob. */
char **gw_strv_unpack(const void *blob, size_t len);

/* "0,1,3" for a GPU mask. */
char *gw_gpu_mask_format(uint64_t mask, char *buf, size_t n);
