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
#define GW_AGENT_MAX_STAGED 32 /* staging records in one snapshot; more before a delivery: the oldest go */
#define GW_AGENT_MAX_STAGE_MS (7LL * 24 * 3600 * 1000) /* the longest staging a record may tell */
/* Where a node's agent listens for its job steps' datasets (gpuwardd --agent --stage-socket,
 * gpuward.conf's stage-socket on the controller); "%n" is the node's name. */
#define GW_AGENT_STAGE_SOCKET "/run/gpuward/stage.sock"

/* pattern with each "%n" replaced by node (and "%%" by '%') into buf; -ENAMETOOLONG when it
 * does not fit, -EINVAL for another '%' sequence. */
int gw_agent_stage_path(const char *pattern, const char *node, char *buf, size_t n);

/* gpuwardd --stage-run: a Slurm job step's start (stage_run.c): -1 when argv does not ask for
 * it, else the exit status when it could not exec the job's command. */
int gw_stage_run_main(int argc, char **argv);

/* gpuwardd's main() calls this first: -1 when argv does not ask for --agent, else the
 * process's exit status once the agent stops (SIGTERM/SIGINT: 0; bad options: 2). */
int gw_agent_main(int argc, char **argv);
