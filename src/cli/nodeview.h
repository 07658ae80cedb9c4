/* How `gpuward gpus` shows a Slurm cluster's GPUs (GET /api/v1/gpus's "nodes", the node
 * agents' snapshots, docs/CLUSTER.md). */
#pragma once
#include <jansson.h>
#include <stdio.h>

/* One row per GPU of each node in nodes: NODE, GPU index, name, utilisation, memory
 * used/total, the Slurm jobs on it with their users; a node whose agent is silent is marked
 * "stale" with the age of its last snapshot; indented lines under a GPU list its rogue
 * processes (of no Slurm job).  Nodes without GPUs get a row saying so.  0 or -ENOMEM. */
int cli_nodes_print(const json_t *nodes, FILE *f);
