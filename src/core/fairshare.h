/* Fair share: who has had less than their share of the GPUs lately goes first.
 *
 * Usage.  A user's usage is GPU-hours over a decaying window: an hour used dt ago counts
 * 2^(-dt / half_life) hours (half_life 0: no decay, usage only grows).  struct gw_fs_user
 * holds it as a value at an instant (used_gpu_h as of used_at); gw_fs_charge() adds what a
 * job used over an interval, decayed exactly (the integral of the decay over the interval),
 * so the result does not depend on how often it is called: the daemon charges each running
 * job periodically and at its end, from the end of the last interval it charged.
 *
 * The factor (Slurm's classic fair-share formula, without its account tree):
 *     F = 2^(-U / S)
 * where U is the user's decayed usage over the decayed usage of all the users given, and S
 * the user's share over the sum of the shares given (default equal: S = 1/n).  A user who
 * used nothing has F = 1, one who used exactly their share F = 0.5, one who used
 * everything with a third of the shares 2^-3 = 0.125.  With no usage at all, F = 1 for all.
 * The users given are those the caller counts: the daemon passes every user with a pending
 * job or a decayed usage above zero.
 *
 * How a job's priority combines (docs/DESIGN.md, "Fair share and job arrays"): lexicographic,
 * not a weighted sum.  The pending queue is ordered by
 *     1. the job's own priority field, higher first (an admin's or a user's explicit word
 *        always wins over history);
 *     2. then the fair-share factor of its user, higher first;
 *     3. then submission order.
 * This is Slurm's multifactor priority with the priority weight so large that the fair-share
 * weight only breaks its ties, and age only breaks theirs: simpler to explain ("alice goes
 * first because she used less") and with no weights to tune.  The scheduler applies it
 * (gw_sched_plan_fair, core/sched.h) and backfills behind the head as before.
 *
 * Pure: no clock reads, no I/O; now is passed in. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"

#define GW_FS_HALF_LIFE_DEFAULT ((gw_usec_t) 7 * 24 * 3600 * GW_USEC_PER_SEC)
#define GW_FS_EXPLAIN_SIZE 160

struct gw_fs_user {
        double share; /* weight, > 0; 0 = the default weight 1 (equal shares) */
        double used_gpu_h; /* decayed GPU-hours as of used_at */
        gw_usec_t used_at; /* the instant used_gpu_h is decayed to; 0 with no usage yet */
};

/* Usage of u decayed to now (now before used_at: as of used_at, never grown back). */
double gw_fs_usage_at(const struct gw_fs_user *u, gw_usec_t now, gw_usec_t half_life);

/* Adds gpus GPUs held over [from, to] to u's usage, each instant decayed by its distance from
 * the later of to and u->used_at; u ends decayed to that instant.  Returns 0, or -EINVAL
 * (gpus < 0, to < from, half_life < 0); u is unchanged on error. */
int gw_fs_charge(struct gw_fs_user *u, double gpus, gw_usec_t from, gw_usec_t to, gw_usec_t half_life);

/* The factor F of each of the n users at now, into ret_factor[0..n-1] (each in (0, 1]).
 * Returns 0, or -EINVAL (NULL with n > 0, a negative or non-finite share or usage,
 * half_life < 0); ret_factor is written only on success. */
int gw_fs_factors(const struct gw_fs_user *users, size_t n, gw_usec_t now, gw_usec_t half_life, double *ret_factor);

/* One line for a person on why user i stands where it does, into buf:
 *   "fairshare 0.42: alice used 12.5 GPU-h (decayed), 38% of all use, against a 1/3 share"
 * name is the user's (borrowed, not kept).  Returns the length written, or -EINVAL (bad
 * input, as gw_fs_factors, or i >= n), or -ENOBUFS when buf is too small (buf then holds
 * a truncated, NUL-terminated line).  GW_FS_EXPLAIN_SIZE fits any name of up to 32 bytes. */
int gw_fs_explain(const struct gw_fs_user *users, size_t n, size_t i, const char *name, gw_usec_t now,
                  gw_usec_t half_life, char *buf, size_t size);

/* Why a queued job stands where it does in the queue, in words, into buf (at least
 * GW_FS_WHY_SIZE): "priority 2, then LINE, then submission order" with user_line its user's
 * gw_fs_explain() line, or "priority 2, then submission order (fair share is off)" with
 * user_line NULL. */
#define GW_FS_WHY_SIZE (GW_FS_EXPLAIN_SIZE + 64)
void gw_fs_priority_why(int priority, const char *user_line, char *buf, size_t size);

/* Puts items[0, n) back in cmp's order (qsort's comparison: it gets pointers to two items)
 * after some of them changed: those with dirty[i] false must still be in that order among
 * themselves (their keys did not change; items may have been taken out from between them).
 * The k dirty ones are sorted apart and merged in, O(n + k log k) where a full sort of a
 * queue that barely changed costs O(n log n) each time.  With cmp a total order (ties broken
 * by a unique key) the result is the full sort's.  tmp: room for n items. */
void gw_fs_reorder(void **items, size_t n, const bool *dirty, int (*cmp)(const void *, const void *), void **tmp);
