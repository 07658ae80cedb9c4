/* The checkpoint watch of a training run preempt.c waits on: what its files say now
 * (core/preempt_ckpt.h judges it), and an inotify watch on RUN and RUN/weights, in the daemon's
 * loop, so that the stop is sent when the checkpoint is written rather than at the next
 * sample.  One per waiting victim, freed when its stop is sent or its job ends. */
#pragma once
#include <stdbool.h>

#include "core/jobrec.h"
#include "core/preempt_ckpt.h"

struct gw_daemon;
struct gw_preempt_watch;

/* A watch of run_dir (copied) for job j: its inotify watches are added now when they can be
 * (RUN/weights later, once it exists); without them the caller's periodic looks still see the
 * checkpoint, only later.  Never NULL. */
struct gw_preempt_watch *gw_preempt_watch_new(struct gw_daemon *d, const struct gw_job *j, const char *run_dir);
/* Removes its inotify watches (the daemon's inotify descriptor goes with the last one).
 * Accepts NULL; returns NULL. */
struct gw_preempt_watch *gw_preempt_watch_free(struct gw_preempt_watch *w);
/* Whether w watches run_dir. */
bool gw_preempt_watch_is(const struct gw_preempt_watch *w, const char *run_dir);

/* What the run's files say now: results.csv (re-read only when it changed), weights/last.pt
 * and best.pt (whole or not), all as j's user's files (userfile.h); total is the planned
 * epochs, -1 unknown.  Adds RUN/weights's inotify watch if it is missing. */
void gw_preempt_watch_look(struct gw_daemon *d, struct gw_preempt_watch *w, const struct gw_job *j, long total,
                           struct gw_preempt_ckpt_look *ret);

/* The loop's inotify descriptor is readable (GW_SRC_PREEMPT): drains it.  Whether one of the
 * watched files changed (or events were lost), so that the waiting victims should be looked
 * at now. */
bool gw_preempt_watch_drain(void);
