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
