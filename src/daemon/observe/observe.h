/* GPU faults as observe.c records them in a job's events, read back: a restarted daemon has
 * only the store to tell the classifier what the attempt it re-adopts went through. */
#pragma once
#include <stddef.h>

#include "core/failure.h"
#include "core/jobrec.h"
#include "daemon/daemon.h"

/* The GPU fault one stored job event records: kind "xid" with an Xid or a double-bit ECC
 * error, kind "gpu" with the GPU lost.  0 and *ret, or -ENOENT for any other event (a
 * single-bit ECC error, a drain, ...).  Pure. */
int gw_observe_fault_of_event(const char *kind, const char *message, struct gw_gpu_event *ret);

/* Adds the faults among ev (the attempt's events, oldest first) to dj's evidence, as
 * observe.c would have while it watched; copies what it keeps. */
void gw_observe_faults_restore(struct gw_djob *dj, const struct gw_job_event *ev, size_t n);

/* Before an attempt's end is classified: a fresh reading of the health of dj's GPUs, applied
 * as a sample would be (a lost GPU is recorded in dj's evidence and drained), so that a
 * trainer that died of its GPU a moment before the sampler looked is not read as a CUDA
 * error.  Blocks the loop for GW_SETTLE_BOUND at most; without an answer the last sample
 * stands. */
#define GW_SETTLE_BOUND (2 * GW_USEC_PER_SEC)
void gw_observe_settle(struct gw_daemon *d, struct gw_djob *dj);

/* A job just given its GPUs: an event on it for each process of no job (or another job's
 * stray) seen on them, as the scheduler puts a job there only when no clean GPU was free. */
void gw_observe_job_placed(struct gw_daemon *d, const struct gw_djob *dj);

/* observe.c and observe_procs.c between them.  A job event on job_id, when it is active
 * (the GPU's holder, a stray's job). */
void gw_observe_job_event(struct gw_daemon *d, int64_t job_id, const char *kind, const char *msg);
/* observe_procs.c: each running job's anchors for attribution (its supervisor, its cgroup);
 * the caller frees the array. */
struct gw_job_anchor *gw_observe_job_anchors(const struct gw_daemon *d);
/* observe_procs.c: g's processes from a fresh snapshot: whose each is (kept from the previous
 * sample where known), the rogue and stray ones told and, under rogue_policy = kill, killed. */
void gw_observe_apply_procs(struct gw_daemon *d, struct gw_dgpu *g, const struct gw_gpu_snapshot *s,
                            const struct gw_job_anchor *anchors, size_t n_anchors);

/* One sample of a running job on its GPU gpu (the host's index, or the index on its node for
 * a job on a cluster's node: nodes_telem.c), into the job's series, its usage summary and the
 * store's per-minute rows, as the host's sampler records it.  A point not newer than the
 * GPU's last one is not counted again (false): each snapshot counts once. */
bool gw_observe_job_point(struct gw_daemon *d, struct gw_djob *dj, unsigned gpu, uint64_t mem_total,
                          const struct gw_point *pt);

/* observe.c: snapshots and events from the sampler */
extern const double gw_wait_bounds[10];
int gw_observe_start(struct gw_daemon *d);
void gw_observe_stop(struct gw_daemon *d);
/* The sampler's fd fired: apply the newest snapshot and the GPU events. */
void gw_observe_ready(struct gw_daemon *d);
/* Drains (or undrains) GPU idx, recorded in the store first: refused, nothing changes and
 * the store's error is returned, unless even_unrecorded (a GPU fault: it must take no job
 * either way). */
int gw_gpu_drain(struct gw_daemon *d, unsigned idx, bool drain, const char *reason, bool even_unrecorded);
/* The telemetry summary of a job: live for running jobs, stored for finished ones; NULL if none. */
json_t *gw_observe_job_json(struct gw_daemon *d, const struct gw_job *j);
/* Called when a running job ends: persists its last minute and its summary (into j->telemetry). */
void gw_observe_job_end(struct gw_daemon *d, struct gw_djob *dj);
void gw_observe_job_started(struct gw_daemon *d, const struct gw_job *j);
/* Frees dj's telemetry (a retry's new attempt, the job let go). */
void gw_jobtel_free(struct gw_daemon *d, struct gw_djob *dj);
/* dj's telemetry, a series per GPU (*ret_n of them, 0 before its first sample): borrowed,
 * valid until the next sample. */
const struct gw_jobtel *gw_observe_jobtel(const struct gw_daemon *d, const struct gw_djob *dj, size_t *ret_n);
