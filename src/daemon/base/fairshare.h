/* Fair share in the daemon: each user's decayed GPU-hours (core/fairshare.h), rebuilt at
 * start from the store's finished attempts and charged as jobs run, and the factors a
 * scheduling pass orders the queue by (queue.c).
 *
 * Usage is charged on the wall clock, as the attempts are recorded: a finished attempt's
 * [start, end] at start (those that ended within GW_FAIR_READ_HALF_LIVES half-lives: older
 * use weighs under 2^-8 of its hours), a running attempt's time up to now at each pass, and
 * the rest of it when it ends (GW_HOOK_ATTEMPT_ENDED).  Each running attempt remembers up to
 * when it was charged, so no hour is charged twice whatever the passes' rhythm. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "core/sched.h"

#define GW_FAIR_READ_HALF_LIVES 8
#define GW_FAIR_FULL_EVERY GW_USEC_PER_SEC
/* How old the factors may be before a pass computes them again (fairshare.c says why). */
#define GW_FAIR_FACTORS_EVERY GW_USEC_PER_SEC

struct gw_daemon;
struct gw_djob;
struct gw_fair;

/* Sets d->jobs.fair from d->cfg (NULL with the slurm backend, which orders nothing here) and,
 * with fairshare on, reads the usage of the finished attempts.  0, or -errno when the store
 * cannot be read (logged by the caller). */
int gw_fair_open(struct gw_daemon *d);
void gw_fair_close(struct gw_daemon *d);

/* The attempt of dj ended now: charges what was not charged of it yet. */
void gw_fair_attempt_ended(struct gw_daemon *d, struct gw_djob *dj);
/* dj was put in the queue (new, or again for a retry): its factor is written anew at the next
 * pass, which sorts it in.  _forget frees what fair share kept of it (GW_HOOK_JOB_FREED). */
void gw_fair_queued(struct gw_daemon *d, struct gw_djob *dj);
void gw_fair_forget(struct gw_daemon *d, struct gw_djob *dj);

/* A scheduling pass: charges the running jobs up to now and sets each queued job's fairshare
 * and fair_line (at most every GW_FAIR_FACTORS_EVERY, and for new jobs), keeps d->jobs.queue
 * in the order they give; fills *ret (pointing into d->jobs.fair, valid until the next pass)
 * with the factors.  Without fair share, only the jobs' fair_line ("": off), and ret->factor NULL.  box_full:
 * nothing can start, the pass is only for what the jobs show, and is skipped (ret->factor
 * NULL) within GW_FAIR_FULL_EVERY of the last one: one per submission into a full box of a
 * long queue would cost a walk of the whole queue each. */
void gw_fair_pass(struct gw_daemon *d, bool box_full, struct gw_sched_fair *ret);
/* After gw_fair_pass: pending[i].fs_user of the n queued jobs, d->jobs.queue's order. */
void gw_fair_users(struct gw_daemon *d, struct gw_sched_job *pending, size_t n);

/* "alice=2,bob=1": checks list (why says what is wrong) and, with user, sets *ret_share to
 * that user's weight when listed (untouched otherwise).  0 or -EINVAL. */
int gw_fair_weights_parse(const char *list, const char *user, double *ret_share, char *why, size_t n);
