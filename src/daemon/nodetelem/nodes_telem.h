/* Per-job GPU telemetry on a cluster (--backend slurm): each fresh snapshot of a node's agent
 * (nodes.h) gives a point on each GPU where a process of the job's Slurm job runs, recorded
 * as the host's sampler records its own jobs' (observe.h): the job's series, its usage and
 * GPU-hours, the per-minute rows, and so the leak detector's memory per epoch (training.c). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/time.h"
#include "core/telemetry.h"

struct gw_daemon;
struct gw_djob;
struct gw_nodes;

/* A job's point on one GPU of a node's snapshot. */
struct gw_nodes_telem_point {
        unsigned gpu; /* the GPU's index on its node */
        uint64_t mem_total; /* 0: not known */
        struct gw_point pt;
};

/* The point of Slurm job slurm_id on snapshot GPU g (as gw_node_snapshot_check rebuilt it),
 * at time t: the memory of the job's processes there (the device's in use when none of
 * theirs is known) and the device's utilisation (0 unless its health is "ok").  false when
 * no process of the job runs there.  Pure. */
bool gw_nodes_telem_point(const json_t *g, uint32_t slurm_id, gw_usec_t t, struct gw_nodes_telem_point *ret);

/* One round for dj, gpuward's job run by Slurm as slurm_id: a point from each node snapshot
 * that lists it, is at most fresh_rounds of its agent's intervals old at d->now and was not
 * counted yet.  A stale snapshot never counts: what the GPU did meanwhile is unknown, and the
 * series shows the gap.  Returns how many points were recorded. */
unsigned gw_nodes_telem_job(struct gw_daemon *d, struct gw_djob *dj, const struct gw_nodes *t, uint32_t slurm_id,
                            int fresh_rounds);

/* After each round of the nodes' watch (once a second): the features that watch jobs after
 * each sample (the lifecycle's GW_HOOK_SAMPLED: epochs, ETA, leaks, snapshots of weights, the
 * log cap) are told, unless the host's own sampler already tells them at its pace (a
 * controller with GPUs of its own). */
void gw_nodes_telem_sampled(struct gw_daemon *d);
