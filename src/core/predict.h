/* Predicted starts of pending jobs: the real scheduler (core/sched.h) replayed
 * forward on a virtual clock.  Pure: plain structs in, predictions out, now passed in.
 *
 * The replay starts from the GPUs, running jobs and queue at now and repeats what the
 * daemon does: at each instant, the scheduler's pass (queue order, the head's reservation,
 * backfill by time limits) over the jobs still waiting, with bookings applied the way the
 * daemon applies them (a job in a booking waits for its start and may run only on its
 * GPUs until its end; other jobs may take a GPU only if their time limit ends before the
 * GPU's next booking).  Between two instants nothing can start, so the clock jumps to the
 * next one: a job's predicted end, a booking's start or end, a retry's backoff ending.
 *
 *   - a running job ends at min(its ETA, its time limit) (gw_cal_job.eta, .end);
 *   - a started job runs for its expected run time (gw_cal_pending.runtime: the median of
 *     the user's similar past jobs, else 0 for its time limit), clipped to its limit and
 *     to its booking's end; the scheduler still sees its time limit, as it does live;
 *   - a job whose user has max_gpus (gw_cal_pending.max_gpus) starts only when the GPUs of
 *     the user's running jobs (real or replayed, gw_cal_job.uid) and of those the same pass
 *     takes before it leave room for it, as the daemon's quota check does; other quotas
 *     (GPU-hours) are not replayed;
 *   - held jobs and jobs whose booking awaits approval or is gone get no prediction;
 *     a job after another one (after_job) waits until that one's predicted end, or until
 *     gw_cal_pending.after_end where the caller times that one (a job on MIG slices: the
 *     slice replay's end, core/predict_mig.h; one it cannot time makes the job held).
 * Every instant is wall-clock time, like bookings. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/calendar.h"

#define GW_PREDICT_KEY_MAX 512 /* a key longer than this is no key: the job gets its limit */

struct gw_prediction {
        int64_t id;
        gw_usec_t start; /* GW_USEC_INFINITY: none before the horizon, or never */
        gw_usec_t end; /* start + expected run time, clipped; INFINITY with start */
        uint64_t gpu_mask; /* the GPUs the replay gave it; 0 without a start */
};

/* Writes one prediction per pending job of in (same order) to out, which has room for
 * in->n_pending.  Jobs predicted to start at or after now + horizon get none.  Returns 0,
 * -EINVAL (horizon <= 0, malformed input, as gw_sched_plan and the calendar refuse it)
 * or -ENOMEM.  Allocates scratch memory and frees it. */
int gw_predict_starts(const struct gw_calendar_input *in, gw_usec_t now, gw_usec_t horizon, struct gw_prediction *out);

/* The promise beside the estimate: gw_predict_starts with every running job ending at its
 * time limit (gw_cal_job.eta ignored) and every queued job running its whole limit
 * (gw_cal_pending.runtime ignored), which is what the scheduler reserves and backfills on.
 * For the job at the head of the queue it is the latest start as long as every job keeps
 * its limit: a job that backfills ends before it or runs on GPUs it does not need, so it
 * never moves this start (only the estimate, which rests on ETAs, may move).  For a job
 * further back it holds for the jobs queued now.  Writes one prediction per pending job
 * (same order) to out; returns as gw_predict_starts.  Allocates scratch memory and frees it. */
int gw_predict_latest_starts(const struct gw_calendar_input *in, gw_usec_t now, gw_usec_t horizon,
                             struct gw_prediction *out);
/* Whether in holds no estimate (no running job's eta, no queued job's runtime): the two
 * replays above are then the same one, and gw_predict_starts' result is the promise too. */
bool gw_predict_limits_only(const struct gw_calendar_input *in);

/* Similar jobs (for the median run time): the same user, the same command words (the
 * program's base name and the words that are not key=value or options, "python3 train.py"
 * or "yolo detect train") and the same epochs=, imgsz= and batch= (also as --epochs N or
 * --epochs=N).  Writes a key that is equal for similar jobs' argv into buf: 0, or -ENOBUFS
 * (buf holds a truncated key: do not use it) / -EINVAL (no argv). */
int gw_predict_job_key(const char *const *argv, char *buf, size_t size);

/* The median of n run times (the mean of the two middle ones for even n); 0 when n is 0.
 * Sorts v. */
gw_usec_t gw_predict_median(gw_usec_t *v, size_t n);

/* What is known of a queued job without a predicted start, to tell people why. */
struct gw_predict_none {
        bool held;
        size_t position; /* in queue order (0 = first); SIZE_MAX: not queued */
        size_t max_jobs; /* only the first max_jobs queued jobs are predicted */
        bool seen; /* the last prediction included the job */
        gw_usec_t due_in; /* until the next prediction is due, at most */
        gw_usec_t horizon; /* how far ahead a prediction looks */
        bool slurm; /* Slurm places the jobs (--backend slurm), not this host */
};

/* Why such a job has no predicted start, into buf (the API's why_none): Slurm places it; held; beyond the
 * first max_jobs; not predicted yet (queued since the last prediction: just submitted, or
 * back from a failure to wait out its backoff, which is not "never"); or no start within the
 * horizon.  Returns buf. */
const char *gw_predict_why_none(const struct gw_predict_none *in, char *buf, size_t n);

/* What a queued job's start waits for, where no future instant can be given: the replay
 * has none (it waits for a held job), or the one it gave has passed (the job waits on
 * something the replay cannot time: a job running past its ETA, a quota, a booking). */
struct gw_predict_wait {
        int64_t after_job; /* its dependency, 0 = none */
        bool after_ok; /* that job must complete (afterok), not just end */
        bool after_held; /* that job is held */
        bool after_queued; /* that job is still pending or running */
        enum gw_job_reason reason; /* why it waits (the scheduler's reason) */
        const char *drained; /* DRAINED: the GPUs out of service it needs, in words
                                     * (core/waitwhy.h's gw_why_drained); NULL = not known */
};

/* The words ("after job 12 is released", "after job 7 ends", "when GPUs free up", "when a
 * GPU is back in service: needs 4 GPUs, 3 are in service: GPU 2 drained (...)") into buf,
 * or NULL when there is nothing to say (a job that does not wait). */
const char *gw_predict_wait_words(const struct gw_predict_wait *w, char *buf, size_t n);
