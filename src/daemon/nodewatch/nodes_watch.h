/* Idle-GPU reclamation on a cluster (--backend slurm): the jobs' GPUs as the nodes' agents
 * report them (nodes.h), fed into the very decision one host makes (reclaim_watch.h), and
 * the Slurm jobs gpuward did not submit watched by the config's slurm_foreign_jobs. */
#pragma once
#include "base/time.h"

struct gw_daemon;

/* A snapshot older than this many of its agent's intervals never feeds a decision. */
#define GW_NODES_WATCH_FRESH_ROUNDS 2

/* Once a second while the controller has heard from a node: every running job gpuward handed
 * to Slurm, then every other Slurm job on the nodes' GPUs.  The next round (monotonic), or
 * GW_USEC_INFINITY when there is nothing to watch. */
gw_usec_t gw_nodes_watch_tick(struct gw_daemon *d);
