/* gpuward-sim: a discrete-event simulator that runs gpuward's real policies (core/) on a
 * virtual clock.  The engine is the imperative shell of a pretend daemon: it keeps the jobs,
 * the GPUs and the clock, synthesises what the daemon would observe (utilisation, log growth,
 * checkpoints, exit status and log tail) from a workload model, and asks the core for every
 * decision: gw_sched_plan() which jobs start where, gw_reclaim_decide() whether an idle job is
 * warned or reclaimed, gw_failure_classify() why an attempt ended, gw_retry_decide() whether it
 * runs again and when, gw_quota_check_start() whether a user is over a quota.  No policy logic
 * is copied here.  See docs/SIMULATOR.md for what is modelled and what is not.
 *
 * Times in a workload are relative to the trace start; the engine adds GW_SIM_EPOCH so that the
 * core sees wall-clock-like instants (the reclaim decision requires started_at > 0). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/time.h"
#include "core/failure.h"
#include "core/reclaim.h"
#include "core/retry.h"
#include "core/telemetry.h"

#define GW_SIM_SEC GW_USEC_PER_SEC
#define GW_SIM_MIN (60 * GW_USEC_PER_SEC)
#define GW_SIM_HOUR (3600 * GW_USEC_PER_SEC)
#define GW_SIM_DAY (24 * GW_SIM_HOUR)
/* Mon 2024-01-01 00:00 UTC: virtual time 0 of a trace (the daily cycle is in UTC). */
#define GW_SIM_EPOCH ((gw_usec_t) 1704067200 * GW_USEC_PER_SEC)
#define GW_SIM_NONE ((gw_usec_t) -1)
#define GW_SIM_PROFILE_MAX 16
#define GW_SIM_MAX_NODE_GPUS 64 /* one scheduler plan covers at most GW_SCHED_MAX_GPUS */

/* ---- the workload: one job and its behaviour over its life ---- */

/* "Work" is the job's own progress, in seconds of uninterrupted run time: an attempt that
 * starts at work w0 reaches work w0 + (t - start) at time t, unless it has stalled.  Work
 * points (stall_at, fail_at, val_at) are on that axis; cancel_at is wall time. */
struct gw_sim_job {
        gw_usec_t submit; /* since the trace start */
        int user; /* 0.. */
        int ngpus; /* >= 1 */
        int priority; /* higher first */
        gw_usec_t runtime; /* work to finish; GW_USEC_INFINITY: never ends by itself */
        gw_usec_t time_limit; /* > 0; per attempt, as the daemon applies it */
        gw_usec_t ckpt_interval; /* a checkpoint every this much work; 0 = none */
        gw_usec_t stall_at; /* work point where it hangs: 0% util, no progress, until
                                    * something kills it; GW_SIM_NONE */
        gw_usec_t cancel_at; /* the user cancels this long after the first start; NONE */
        gw_usec_t fail_at; /* work point where an attempt crashes; NONE */
        enum gw_failure_class fail_class; /* what the crash looks like (gpu_fault, cuda_error,
                                    * nccl_error, oom, host_oom, lost, user_error) */
        bool fail_repeat; /* crashes at fail_at on every attempt (a bug); false: once
                                    * (a hardware fault a retry gets past) */
        gw_usec_t val_at, val_len; /* one long validation/evaluation phase at work point val_at:
                                    * GPU util 0, the log says validating; NONE / 0 = none */
        bool val_silent; /* the phase writes nothing (no tqdm): no log growth */
        double zero_frac; /* share of its training samples at 0% GPU (data loading,
                                    * host-side steps): the job is progressing all the same */
        double leak_mb_h; /* GPU memory leak, MiB per hour of work: each process's
                                    * memory low grows by it from a fresh start (a retry gives
                                    * it back) until its peak reaches the GPU's memory: oom */
        gw_usec_t book_lead; /* > 0: booked this long before submit (a window from submit
                                    * for its time limit), under configurations with bookings;
                                    * 0 or GW_SIM_NONE: submitted without a booking */
        bool gpu_broken; /* a gpu_fault crash leaves its GPU faulty until repaired */
        bool interactive; /* a notebook/debug session (for the workload summary) */
        char profile[GW_SIM_PROFILE_MAX]; /* reclaim profile the job asks for; "" = config's */
};

struct gw_sim_workload {
        struct gw_sim_job *jobs; /* sorted by submit */
        size_t n;
        gw_usec_t span; /* the period the jobs were generated for (0: unknown) */
};

void gw_sim_workload_free(struct gw_sim_workload *w); /* accepts NULL; leaves it empty */

/* The lab generator's knobs (docs/SIMULATOR.md lists the shapes and their sources). */
struct gw_sim_gen {
        int n_gpus; /* cluster size: offered load is scaled to it */
        int max_job_gpus; /* largest job (the node size when > 64 GPUs) */
        gw_usec_t span; /* generate submissions over this long (used when n_jobs 0) */
        size_t n_jobs; /* > 0: generate exactly this many (span follows the rate) */
        double load; /* offered GPU-time held (without queueing) / capacity */
        uint64_t seed;
};

void gw_sim_gen_default(struct gw_sim_gen *g);
/* Generates the "lab" workload.  Deterministic in g (seed included).  Returns 0, or -EINVAL
 * (no GPUs, no span and no job count, load <= 0). */
int gw_sim_generate_lab(const struct gw_sim_gen *g, struct gw_sim_workload *ret);

/* Shapes of a workload, measured, for the report. */
struct gw_sim_shape {
        size_t n;
        double runtime_p50_s, runtime_p90_s, runtime_p99_s; /* finite runtimes */
        double one_gpu_frac; /* jobs asking 1 GPU */
        double multi_gpu_time_frac; /* share of requested GPU-time in jobs of >= 2 GPUs */
        double killed_failed_frac; /* jobs that will crash, be cancelled, stall or be forgotten */
        double interactive_frac;
        double hw_fail_frac, bug_fail_frac, stall_frac, cancel_frac;
        double leak_frac, booked_frac;
};
void gw_sim_workload_shape(const struct gw_sim_workload *w, struct gw_sim_shape *ret);

/* ---- the CSV trace (sim_trace.c) ---- */

/* The header line gw_sim_trace_write writes and gw_sim_trace_read expects (columns may come in
 * any order; unknown columns are an error; missing optional ones take defaults). */
extern const char gw_sim_trace_header[];
/* Reads a trace.  Returns 0, or -EINVAL with "line 7: gpus: '0' is not in 1..64" in msg. */
int gw_sim_trace_read(FILE *f, struct gw_sim_workload *ret, char *msg, size_t msg_size);
int gw_sim_trace_write(FILE *f, const struct gw_sim_workload *w);

/* Writes gpuwardd's job history (state_dir/gpuward.db, opened read-only) as a trace with the
 * columns submit_s,user,gpus,priority,time_limit_s,runtime_s,fail_at_s,fail_class,
 * fail_repeat,cancel_at_s,stall_at_s (sim_export.c says what each comes from).  Returns 0, or
 * a negative errno with a one-line message in msg. */
int gw_sim_export_state(const char *state_dir, FILE *out, char *msg, size_t msg_size);

/* ---- configurations ---- */

enum gw_sim_reclaim_mode {
        GW_SIM_RECLAIM_OFF,
        GW_SIM_RECLAIM_GPUWARD, /* gw_reclaim_decide on everything the daemon gathers */
        GW_SIM_RECLAIM_UTIL_ONLY, /* the Princeton-style peer rule: the same decision fed GPU
                                    * utilisation only (no log, results, checkpoint or phase) */
        _GW_SIM_RECLAIM_MODE_MAX,
};

#define GW_SIM_NAME_MAX 32

struct gw_sim_config {
        char name[GW_SIM_NAME_MAX];
        int n_gpus; /* 1.. ; above 64 only with node_gpus */
        int node_gpus; /* 0: one scheduler plan over all GPUs (n_gpus <= 64);
                                    * else nodes of this many GPUs, one plan per node */
        gw_usec_t horizon; /* measure and stop at this instant (since trace start);
                                    * 0 = run until every job has ended */
        gw_usec_t sample; /* observation interval (reclaim and telemetry); 0 = none */
        enum gw_sim_reclaim_mode reclaim;
        struct gw_reclaim_policy policy; /* for jobs that name no profile */
        bool retry;
        struct gw_retry_policy retry_policy;
        int64_t quota_gpus; /* per-user max_gpus via gw_quota_check_start; 0 = none */
        size_t window; /* pending jobs passed to one plan (queue depth); 0 = all */
        uint64_t seed; /* for per-sample noise (which samples are at 0%) */
        gw_usec_t bucket; /* time-series bucket for the plot; 0 = no series */
        bool bookings; /* honour book_lead: gw_calendar_place, _gpus_at, _gate, _tick */
        bool leak_detect; /* gw_leak_detect on leaking jobs' epochs (gpuward is there) */
        int leak_policy; /* enum gw_leak_policy for every job (core/leak_respond.h) */
        bool drain; /* a gpu_fault drains its GPU until repaired (recovery) */
        gw_usec_t repair; /* a faulty GPU is repaired this long after its fault */
        gw_usec_t (*clock_ns)(void); /* times each plan when set (benchmarks); results do not
                                    * depend on it */
        bool fairshare; /* order the queue by fair share (gw_sched_plan_fair): usage
                                    * charged as jobs hold GPUs, equal shares per user */
        gw_usec_t fs_half_life; /* its usage half-life; 0 = no decay */
        bool preempt; /* preemption (core/preempt.h): a job of a higher priority
                                    * that cannot start stops the low-priority (<= 0) jobs
                                    * that checkpoint, right after their next checkpoint */
        gw_usec_t preempt_grace; /* at most this long for that checkpoint (preempt_grace) */
};

/* Fills a config named name: "baseline", "reclaim[:PROFILE]", "retry", "all[:PROFILE]",
 * "princeton", or a profile name alone ("hpo" = "all:hpo"); any of them followed by "+fair"
 * orders the queue by fair share (half-life GW_FS_HALF_LIFE_DEFAULT, 7 days), and by
 * "+preempt" (after "+fair" when both) preempts (preempt_grace 10 minutes).  Leaves the cluster fields
 * (n_gpus, node_gpus, horizon, window, seed, bucket) zero for the caller.  Returns 0, or
 * -EINVAL with a message (unknown name or profile). */
int gw_sim_config_named(const char *name, struct gw_sim_config *ret, char *msg, size_t msg_size);

/* The Princeton-style rule as a reclaim policy: cancel after 120 min at 0% (threshold 1%),
 * no warning period, no grace. */
extern const struct gw_reclaim_policy gw_sim_princeton_policy;

/* ---- results ---- */

#define GW_SIM_COST_BUCKETS 24 /* plan cost by log2(pending jobs passed) */

struct gw_sim_cost {
        uint64_t n;
        double ns_sum, ns_max;
};

struct gw_sim_result {
        char name[GW_SIM_NAME_MAX];
        gw_usec_t measured; /* the measured period (horizon, or until the last end) */
        double capacity_gpu_h;
        double busy_gpu_h; /* GPU-time doing a job's work (util > 0) */
        double held_gpu_h; /* GPU-time allocated to jobs */
        double stalled_gpu_h; /* held by jobs that had stopped progressing */
        double lost_gpu_h; /* work since the last checkpoint, lost when an attempt
                                    * crashed (gpus x work) */
        double lost_reclaim_gpu_h; /* the same, for progressing jobs that were reclaimed */
        double wait_p50_s, wait_p90_s, wait_p99_s; /* submit to first start; jobs never started
                                    * count with their wait so far (a lower bound) */
        size_t submitted, started, completed, failed, cancelled, timed_out, reclaimed;
        size_t wrongful; /* reclaimed while progressing */
        size_t warnings, retries, crash_loops, misclassified;
        size_t queued_at_end, running_at_end;
        size_t oom_crashes; /* attempts that ended in an oom (leaks and jobs too big) */
        size_t leaks_detected, leak_restarts; /* attempts flagged; stopped to resume */
        double lost_leak_gpu_h; /* work lost to leak ooms (part of lost_gpu_h) */
        size_t gpu_faults, faults_on_broken; /* gpu_fault ends; of them on a broken GPU */
        double drained_gpu_h; /* GPU-time drained (not usable) */
        size_t bookings, bookings_later, booking_no_shows, booking_missed, booked_started;
        double passed_zero_frac; /* samples at 0% over all samples of completed jobs */
        unsigned held_util_p50; /* percentile util of held GPU samples (gw_usage) */
        uint64_t events, sched_passes, sched_plans, reclaim_decisions;
        struct gw_sim_cost cost[GW_SIM_COST_BUCKETS];
        double pass_ns_sum, pass_ns_max; /* whole scheduler passes (all nodes), when timed */
        /* Time series (when config.bucket > 0): mean GPUs allocated / busy, and jobs queued at
         * the bucket's samples.  Owned: gw_sim_result_free(). */
        size_t n_buckets;
        gw_usec_t bucket;
        double *alloc, *busy;
        /* Per user (the workload's user numbers, n_users of them), with or without fair share:
         * GPU-hours held in the measured period, and the mean wait from submit to first start
         * (jobs never started count with their wait so far).  Owned: gw_sim_result_free(). */
        size_t n_users;
        double *user_gpu_h, *user_wait_s;
        /* The high class (priority > 0): how many, and their waits from submit to first start
         * (as wait_p*); preemptions and the work they lost (part of lost_gpu_h). */
        size_t high_jobs, preemptions;
        double high_wait_p50_s, high_wait_p90_s, lost_preempt_gpu_h;
};

void gw_sim_result_free(struct gw_sim_result *r); /* accepts NULL */

/* Runs the workload under one configuration.  Reads w and cfg only; fills *ret (free it with
 * gw_sim_result_free).  A job larger than a node never starts (the scheduler's verdict) and
 * is counted as queued.  Returns 0, -EINVAL (a job of more than 64 GPUs or without a time
 * limit, a bad config), or an error from a core function (the engine built input it refused). */
int gw_sim_run(const struct gw_sim_workload *w, const struct gw_sim_config *cfg, struct gw_sim_result *ret);

/* ---- what the engine shows the core (sim_observe.c): pure functions of the model ---- */

/* The state of one attempt at one instant, as the engine tracks it. */
struct gw_sim_attempt {
        gw_usec_t start; /* absolute (GW_SIM_EPOCH-based) */
        gw_usec_t work_start; /* work at start (the checkpoint it resumed from) */
        gw_usec_t stall_wall; /* when it hangs; GW_USEC_INFINITY: it does not */
        gw_usec_t prev_ckpt_wall; /* when the checkpoint it resumed from was written; 0 */
        int64_t job_id;
        unsigned attempt; /* 1.. */
        int first_gpu; /* index, for the evidence */
};

/* Work reached at now (stops at the stall point and at the runtime). */
gw_usec_t gw_sim_work_at(const struct gw_sim_job *j, const struct gw_sim_attempt *a, gw_usec_t now);
/* The newest checkpoint at work w of an attempt that resumed at work_start: a multiple of
 * ckpt_interval, not before work_start; 0 when the job never checkpoints. */
gw_usec_t gw_sim_ckpt_at(const struct gw_sim_job *j, gw_usec_t work_start, gw_usec_t w);
/* Whether the attempt is progressing at now (started and not stalled). */
bool gw_sim_progressing(const struct gw_sim_attempt *a, gw_usec_t now);
/* One GPU's utilisation at a sample: 0 when stalled or validating, else 0 with probability
 * zero_frac (deterministic in seed, job, attempt and now), else 40-99. */
unsigned gw_sim_util_at(const struct gw_sim_job *j, const struct gw_sim_attempt *a, gw_usec_t now, uint64_t seed);

/* Fills obs (and gpus[0..ngpus-1], at most 64) with what the daemon would gather at now.
 * util_only: what a utilisation-only rule sees (no log, results, checkpoint or phase). */
void gw_sim_observe(const struct gw_sim_job *j, const struct gw_sim_attempt *a, gw_usec_t now, uint64_t seed,
                    bool util_only, struct gw_reclaim_gpu *gpus, struct gw_job_obs *obs);

/* How an attempt ended, as the engine saw it. */
enum gw_sim_end {
        GW_SIM_END_FINISH,
        GW_SIM_END_CRASH,
        GW_SIM_END_TIMEOUT,
        GW_SIM_END_CANCEL,
        GW_SIM_END_RECLAIM,
        GW_SIM_END_LEAK_STOP, /* leak_policy restart stopped it after its checkpoint */
        GW_SIM_END_PREEMPT, /* preempted: stopped after its checkpoint, queued again */
        _GW_SIM_END_MAX,
};

/* Fills the classifier's input for an attempt that ended: exit status, a log tail and GPU
 * events that look like cls (for CRASH), or gpuward's own action.  The tail and the
 * event are static storage or *ev. */
void gw_sim_failure_input(enum gw_failure_class cls, enum gw_sim_end end, int gpu, struct gw_gpu_event *ev,
                          struct gw_failure_input *in);

/* ---- output (sim_report.c) ---- */

void gw_sim_print_shape(FILE *f, const struct gw_sim_shape *s);
void gw_sim_print_table(FILE *f, const struct gw_sim_result *r, size_t n);
/* Per user, side by side for each result: GPU-hours held and mean wait (sim_fair.c). */
void gw_sim_print_users(FILE *f, const struct gw_sim_result *r, size_t n);
/* Side by side for each result: the high class's waits, preemptions and the work they lost. */
void gw_sim_print_preempt(FILE *f, const struct gw_sim_result *r, size_t n);
/* Gives a share frac of the jobs (chosen by seed, deterministically) priority 1: the high
 * class that preemption serves.  The others keep theirs. */
void gw_sim_workload_high(struct gw_sim_workload *w, double frac, uint64_t seed);
void gw_sim_print_json(FILE *f, const char *title, const struct gw_sim_shape *s, const struct gw_sim_result *r,
                       size_t n);
/* One panel per result: GPUs allocated and busy over time. */
int gw_sim_write_svg(FILE *f, const char *title, int n_gpus, const struct gw_sim_result *r, size_t n);

/* ---- the scale benchmark (sim_bench.c) ---- */

/* Times gw_sched_plan on synthetic inputs: per plan against queue length (one 8-GPU and one
 * 64-GPU node) and against GPUs per plan; writes a table (or JSON) to f.  clock_ns must be a
 * monotonic clock in nanoseconds.  max_pending bounds the longest queue tried. */
int gw_sim_bench_plan(FILE *f, gw_usec_t (*clock_ns)(void), size_t max_pending, bool json);

/* ---- small helpers shared by the files (sim_rng.c) ---- */

struct gw_sim_rng {
        uint64_t s[4];
};
void gw_sim_rng_seed(struct gw_sim_rng *r, uint64_t seed);
uint64_t gw_sim_rng_next(struct gw_sim_rng *r);
double gw_sim_rng_unit(struct gw_sim_rng *r); /* [0, 1) */
double gw_sim_rng_normal(struct gw_sim_rng *r);
double gw_sim_rng_exp(struct gw_sim_rng *r, double mean);
double gw_sim_rng_uniform(struct gw_sim_rng *r, double lo, double hi);
uint64_t gw_sim_hash(uint64_t a, uint64_t b, uint64_t c, uint64_t d); /* splitmix of four words */
/* Percentile (nearest rank) of v[0..n-1]; sorts v.  0 when n == 0. */
double gw_sim_percentile(double *v, size_t n, double pct);
