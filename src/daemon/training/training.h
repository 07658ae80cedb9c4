/* A leak as training.c records it in a job's events and in its stop, read back: a restarted
 * daemon has only the store to tell recovery.c that an oom of the attempt it re-adopts is one
 * the leak explains, or that its stop was leak_policy restart's (as observe.h for GPU faults).
 * The other entry points of training awareness are in daemon.h. */
#pragma once
#include <stddef.h>

#include "core/jobrec.h"
#include "daemon/daemon.h"

/* The evidence of the leak one stored job event reports (kind "leak", "EVIDENCE; leak_policy
 * P: OUTCOME"), into evidence (n bytes, cut to fit): 0, or -ENOENT for any other event.  Pure. */
int gw_training_leak_of_event(const char *kind, const char *message, char *evidence, size_t n);

/* Rebuilds what the watch knew of dj's current attempt's leak when it was flagged before the
 * restart, from ev (the attempt's events, oldest first) and the job's recorded stop: flagged
 * (and told: not told again), a stop after the next checkpoint still due under leak_policy
 * restart, or that stop already sent.  Nothing when neither says leak.  Copies what it keeps. */
void gw_training_leak_restore(struct gw_daemon *d, struct gw_djob *dj, const struct gw_job_event *ev, size_t n);

/* The run's newest weights/last.pt that the watch saw in dj's current attempt: its mtime (wall
 * clock), 0 none; *ret_settled: it is complete and after the newest epoch's row (a stop now
 * loses nothing of the epochs done).  Preemption waits for one newer than when it asked. */
gw_usec_t gw_training_ckpt_time(const struct gw_daemon *d, const struct gw_djob *dj, bool *ret_settled);
/* The usual time between this attempt's checkpoints (an Ultralytics run writes last.pt once an
 * epoch): the mean of its epochs whose own rows were seen, past its first; 0 with fewer than
 * two of them. */
gw_usec_t gw_training_ckpt_every(const struct gw_daemon *d, const struct gw_djob *dj);

/* The run folder (RUN of RUN/results.csv) the watch found for dj's current attempt, NULL none
 * yet; and the run's planned epochs (args.yaml or the command's epochs=), -1 unknown.  Owned
 * by the watch: valid until its next sample. */
const char *gw_training_run_dir(const struct gw_daemon *d, const struct gw_djob *dj);
long gw_training_epochs_planned(const struct gw_daemon *d, const struct gw_djob *dj);

/* For the idle watch (reclaim_gather.c): the run's results.csv for j's current
 * attempt by the one rule both watches use (training runs only, written during the attempt,
 * never a file another live job of d has), or what one of j's watches already chose.
 * Malloc'ed, NULL until there is one. */
char *gw_train_find_results(const struct gw_daemon *d, const struct gw_job *j);
/* The idle watch chose path as the results.csv of dj's current attempt: the training watch
 * reads the same run (two watches of one job never read two runs).  Copies path. */
void gw_training_results_chosen(struct gw_daemon *d, const struct gw_djob *dj, const char *path);

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
bool gw_training_start_shown(struct gw_daemon *d, const struct gw_job *j, char *buf, size_t n, const char **ret_words);
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
int gw_train_restore_take(struct gw_daemon *d, struct gw_http_conn *conn, int *ret_seq, char *to, size_t to_n,
                          char *why, size_t n);
void gw_train_restore_conn_gone(struct gw_daemon *d, struct gw_http_conn *conn);
gw_usec_t gw_train_restore_tick(struct gw_daemon *d);

void gw_train_restore_free_all(struct gw_daemon *d);
/* ---- end of training awareness ---- */
