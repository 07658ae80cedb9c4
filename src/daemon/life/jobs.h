/* A job's life in the daemon: submit, start, end, cancel, hold, retry, recover, and the ends
 * the store refused (jobs*.c, lifecycle*.c, prelog.c). */
#pragma once
#include "daemon/daemon.h"

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
int gw_job_end(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason, const char *kind);
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

/* jobs.c: the log of j's attempt (its --output, else LOG_DIR/ID.log, ID.N.log for N > 1). */
char *gw_attempt_log_path(const struct gw_daemon *d, const struct gw_job *j, int attempt);
/* Frees a running job's GPUs and what its executor held for the attempt (its end, its retry). */
void gw_job_release_gpus(struct gw_daemon *d, struct gw_djob *dj);
