/* gpuwardd --agent: the node agent of a Slurm cluster.  It samples the node's GPUs with the
 * daemon's own sampler code (gw_snapshot_take), tells each GPU process's Slurm job from its
 * /proc/PID/cgroup (core/slurm.h) and posts one JSON snapshot per sample interval to the
 * controller (a gpuwardd --backend slurm) with a bearer token.  Nothing else runs: no queue,
 * no store, no HTTP door of its own. */
#pragma once

/* The agent's limits, which the controller enforces on what it receives (nodes.c). */
#define GW_AGENT_MAX_GPUS 64 /* GW_SAMPLER_MAX_GPUS */
#define GW_AGENT_MAX_PROCS 256 /* processes reported per GPU; more are counted only */
#define GW_AGENT_MAX_PROCS_TOTAL 512 /* processes reported per snapshot, all GPUs together */
/* The largest snapshot body the controller reads: GW_AGENT_MAX_GPUS GPUs and
 * GW_AGENT_MAX_PROCS_TOTAL processes with every field at its longest come to about 116 KiB. */
#define GW_AGENT_MAX_BODY ((size_t) 192 << 10)
#define GW_AGENT_MAX_XIDS 64 /* Xids in one snapshot; more before a delivery are dropped */
#define GW_AGENT_PATH "/api/v1/agent/snapshot"

/* gpuwardd's main() calls this first: -1 when argv does not ask for --agent, else the
 * process's exit status once the agent stops (SIGTERM/SIGINT: 0; bad options: 2). */
int gw_agent_main(int argc, char **argv);
