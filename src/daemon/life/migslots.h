/* Jobs on MIG slices in the daemon (submit --gpus PROFILE[:COUNT]).  A slice is a job's while
 * that job runs with the slice's UUID in its mig_slices; nothing else records it, so a slice
 * cannot stay taken by a job that is gone.  The job's gpu_mask names the GPUs its slices are
 * on (for its processes, its telemetry and `gpus`), but such a GPU is never marked held
 * (gw_dgpu.job_id): its other slices stay free for other jobs. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/migplace.h"
#include "core/sched.h"
#include "daemon/daemon.h"

/* The job running on the slice with this UUID; 0 none. */
int64_t gw_mig_slice_job(const struct gw_daemon *d, const char *uuid);

/* What a slice job holds of GPU gi at the last sample: its slices there, their memory
 * summed, and the first one's UUID and profile to name them by (borrowed from d's layout,
 * valid until the next sample). */
struct gw_mig_use {
        size_t n; /* its slices on the GPU; 0: none (or not a slice job) */
        bool has_mem; /* every one of them gave its memory */
        uint64_t mem_used, mem_total; /* bytes, summed over them */
        bool has_activity; /* every one of them has a GPM SM activity figure */
        unsigned activity; /* percent, their mean weighted by their sizes in slices */
        const char *uuid, *profile;
};
void gw_mig_job_use(const struct gw_daemon *d, const struct gw_job *j, unsigned gi, struct gw_mig_use *ret);

/* Every slice of the GPUs in MIG mode now, with its holder, into *ret (malloc'ed, NULL when
 * none; strings borrowed from d's layouts, valid until the next sample).  Returns how many. */
size_t gw_mig_slots(const struct gw_daemon *d, struct gw_mig_slot **ret);

/* Whether a slice of a GPU in service is free: a scheduling pass may start a slice job. */
bool gw_mig_any_free(const struct gw_daemon *d);

/* Before the whole-GPU plan: each queued slice job that may start now (not held, not in its
 * backoff, its dependency met, nothing else blocking it) is kept out of that plan (blocked,
 * as Resources) and marked in on_slices[0..n-1]: it takes slices, never a whole GPU, so
 * neither kind of job holds the other back.  pending[i] is d->jobs.queue[i]'s. */
void gw_mig_set_aside(struct gw_daemon *d, struct gw_sched_job *pending, size_t n, bool *on_slices);

/* A slice job's start as the plan decided it. */
struct gw_mig_start {
        int64_t job_id;
        uint64_t gpu_mask; /* the GPUs its slices are on */
        double share; /* the GPUs they make up (gw_mig_share) */
        char *uuids; /* malloc'ed: "MIG-...,MIG-..." in CUDA_VISIBLE_DEVICES's order */
};

/* After the plan: places the jobs marked in on_slices in queue order (order, NULL: the
 * queue's own) on free slices (core/migplace.h), without a reservation: a slice job that
 * does not fit does not keep the next one, smaller, from starting.  Each placed job gets
 * reasons[i] NONE and a row in out (room for n); each other its words in mig_wait.
 * Returns the rows written; the caller starts them (gw_mig_start) and frees their uuids. */
size_t gw_mig_plan(struct gw_daemon *d, const bool *on_slices, const size_t *order, size_t n,
                   enum gw_job_reason *reasons, struct gw_mig_start *out);

/* Starts dj on the slices s names (gw_job_start with their GPUs); takes s->uuids. */
int gw_mig_start(struct gw_daemon *d, struct gw_djob *dj, struct gw_mig_start *s);

/* A job leaving the queue for the store (a start refused, a retry): its slices are no
 * longer its own. */
void gw_mig_forget_slices(struct gw_job *j);
