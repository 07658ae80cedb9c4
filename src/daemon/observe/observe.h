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
