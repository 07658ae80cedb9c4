/* Slurm, in gpuward's words: the pure translations the node agent and the cluster executor
 * share.  No I/O: the caller reads /proc/PID/cgroup and runs squeue, sacct and sbatch; these
 * functions turn what it read into gpuward's job model and back.  The Slurm facts relied on
 * were checked on Slurm 22.05 in the cluster test (tests/cluster), except the cgroup v2
 * layout, which the test host (cgroup v1) cannot show: that one is from Slurm's cgroup v2
 * documentation and texts read on Slurm 23-24 nodes (docs/CLUSTER.md). */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/failure.h"
#include "core/job.h"

struct gw_job;

/* ---- Which Slurm job a process belongs to, from the text of /proc/PID/cgroup ----
 *
 * slurmd puts every process of a job step in a cgroup whose path names the job:
 *   cgroup v1: "6:freezer:/slurm/uid_1000/job_42/step_0"            (one slurmd per host)
 *              "6:freezer:/slurm_gpu1/uid_1000/job_42/step_batch"   (several slurmd: _NODE)
 *              "10:devices:/slurm/uid_1000/job_42/step_0/task_0"    (task/cgroup adds task_N)
 *   cgroup v2: "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0"
 *              "0::/system.slice/gpu1_slurmstepd.scope/job_42/step_batch/user/task_0"
 * whatever lies above the "slurm" / "slurmstepd.scope" directory.  Steps are a number (srun)
 * or batch, extern (pam_slurm_adopt, the job's ssh sessions) or interactive (salloc). */

#define GW_SLURM_NODE_MAX 65 /* a node name (HOST_NAME_MAX) and its NUL */

enum gw_slurm_step_kind {
        GW_SLURM_STEP_NONE, /* in the job's cgroup, outside any step */
        GW_SLURM_STEP_NUMBERED, /* step_N: step holds N */
        GW_SLURM_STEP_BATCH,
        GW_SLURM_STEP_EXTERN,
        GW_SLURM_STEP_INTERACTIVE,
        GW_SLURM_STEP_OTHER, /* a step name this code does not know */
        _GW_SLURM_STEP_KIND_MAX,
        _GW_SLURM_STEP_KIND_INVALID = -EINVAL,
};

struct gw_slurm_proc {
        uint32_t job_id;
        enum gw_slurm_step_kind step_kind;
        uint32_t step; /* NUMBERED only, else 0 */
        bool v2; /* found on the cgroup v2 (unified) line */
        bool has_uid; /* cgroup v1 paths name the job's user: uid_U */
        uint32_t uid;
        char node[GW_SLURM_NODE_MAX]; /* slurm_NODE or NODE_slurmstepd.scope, else "" */
};

/* Reads the text of /proc/PID/cgroup (len bytes, need not be NUL-terminated).  Lines that
 * name no Slurm job are skipped; of those that do, the first with a step wins (a v1 host
 * may show the step in one hierarchy and only the job in another).  Returns 0 and fills
 * *ret; -ENOENT when no line names a Slurm job (not a job's process, or slurmstepd's own
 * "slurmstepd.scope/system"); -EINVAL for a Slurm path that does not parse (job_x, a job
 * id of 0 or past 2^32-1, a node name too long) or lines that name different jobs. */
int gw_slurm_proc_from_cgroup(const char *text, size_t len, struct gw_slurm_proc *ret);

const char *gw_slurm_step_kind_name(enum gw_slurm_step_kind k); /* "batch"; NULL out of range */

/* ---- Slurm's job states and pending reasons, in gpuward's terms ---- */

struct gw_slurm_state {
        enum gw_job_state state;
        enum gw_failure_class cls; /* final states: why it ended; GW_FAILURE_OK otherwise */
        const char *what; /* what a user reads, static storage */
};

/* A job state as squeue %T or sacct State print it ("RUNNING", "CANCELLED by 1000",
 * "CANCELLED+"), or its short form (squeue %t: "PD", "R", "CG", "OOM", ...); case does not
 * matter.  0 and *ret; -EINVAL for a state this code does not know. */
int gw_slurm_state_parse(const char *text, struct gw_slurm_state *ret);

struct gw_slurm_reason {
        enum gw_job_reason reason; /* GW_REASON_NONE for Slurm's "None" */
        bool blocked; /* it will not start until someone changes the job,
                                         * its account or the cluster */
        const char *what; /* what a user reads, static storage */
};

/* A pending job's reason as squeue %r or scontrol's Reason= print it ("Resources",
 * "ReqNodeNotAvail, UnavailableNodes:gpu2", "launch failed requeued held").  A reason this
 * code does not know reads as waiting for resources, what = "Slurm's reason: see squeue",
 * and returns 1 so that the caller can log the text; known reasons return 0.  -EINVAL for
 * NULL or an empty text. */
int gw_slurm_reason_parse(const char *text, struct gw_slurm_reason *ret);

/* ---- The sbatch command line for a gpuward job ---- */

struct gw_sbatch_opts {
        gw_usec_t now; /* wall clock, for --begin */
        const char *gpu_type; /* --gres=gpu:TYPE:N: Slurm's type of j's MIG slices
                                         * (gw_slurm_mig_type); NULL: none */
        int gpus_per_node; /* GPUs each node has; 0: unknown, no --nodes */
        int max_nodes; /* nodes a job may span; 0: any */
        const char *script; /* the batch script to run with the job's argv as its
                                         * arguments; NULL: --wrap with the argv quoted */
        const char *partition; /* NULL: the cluster's default */
        const char *const *exclude; /* nodes to avoid (drained GPUs, a failed node) */
        size_t n_exclude;
        const char *comment; /* --comment: gpuward's tag of the attempt
                                         * (gw_slurm_tag_format); NULL: none */
        const char *reservation; /* --reservation: a booking's; NULL: none */
};

#define GW_SBATCH_NAME_MAX \
        200 /* longer job names are cut (Slurm keeps them whole,
                                         * but squeue shows 8 characters by default) */

/* The argument vector for sbatch (argv[0] = "sbatch", NULL-terminated; the caller frees it
 * with gw_strv_free) that submits job j, reading j and o only:
 *   --parsable (prints "JOBID[;CLUSTER]"), --no-requeue (gpuward decides retries),
 *   --job-name (j->name, else "gpuward-ID"), --gres=gpu:N (a slice job, j->mig_profile:
 *   --gres=gpu:TYPE:COUNT with o->gpu_type and j->mig_count, on one node), --nodes=K with --gres=gpu:N/K
 *   when j asks for more GPUs than a node has (a multiple of gpus_per_node, at most
 *   max_nodes nodes), --time rounded up to whole minutes ("D-HH:MM:00"; none when
 *   time_limit is 0 or GW_USEC_INFINITY), --output (j->output, else j->log_path; '%' doubled, which sbatch
 *   would otherwise expand), --chdir (j->cwd), --begin=now+S when j->not_before is later
 *   than o->now, --partition, --comment and --reservation (o's, when set), --exclude, then
 *   the script and argv, or --wrap.  An empty
 *   output, log path or cwd counts as none.
 * Returns 0 and *ret_argv; -EINVAL with a message in why that names the field (the job
 * cannot be placed or a field cannot be passed); *ret_argv untouched then. */
int gw_slurm_sbatch_argv(const struct gw_job *j, const struct gw_sbatch_opts *o, char ***ret_argv, char *why,
                         size_t why_len);

/* Slurm keeps a time limit in minutes in 32 bits, the top values meaning "not set" and
 * "infinite"; gpuward passes no more than this (about 4,000 years). */
#define GW_SLURM_TIME_MAX_MIN 2147483647

/* Slurm's --time text for a limit, rounded up to whole minutes: "0-00:02:00" for 61 s.
 * Returns buf, or NULL when limit <= 0, past GW_SLURM_TIME_MAX_MIN minutes (so
 * GW_USEC_INFINITY too), or when buf is too small (32 bytes is enough). */
char *gw_slurm_time_format(gw_usec_t limit, char *buf, size_t n);

/* ---- squeue, as the cluster executor reads it ---- */

/* The format it asks for: Slurm's own words only (nothing a user chose, such as a job name or
 * a directory, could fake a separator), one job a line, fields ending in '|' (squeue pads a
 * field without a size to 20 characters, or not at all: both read the same). */
#define GW_SLURM_SQUEUE_FORMAT "--Format=JobID:|,State:|,exit_code:|,NodeList:|,Reason:"

struct gw_slurm_squeue_row {
        uint32_t job_id;
        char state[32]; /* "RUNNING", as gw_slurm_state_parse reads it */
        char exit_status[16]; /* the batch script's wait status: "768" is exit 3 */
        char nodes[128]; /* "" while pending; cut to fit */
        char reason[128]; /* "Resources", "None"; cut to fit */
};

/* One line of that output (len bytes, no newline needed; fields trimmed of blanks).  0 and
 * *ret; -EINVAL for a line that is not five fields, a job id that is not a plain number
 * (an array task's "12_3", a heterogeneous job's "5+1": never gpuward's) or past 2^32-1, a
 * state or status too long to be Slurm's, or a NUL anywhere. */
int gw_slurm_squeue_parse(const char *line, size_t len, struct gw_slurm_squeue_row *ret);

/* ---- The tag of an attempt, to find its Slurm job when its id was not recorded ----
 *
 * Every sbatch carries --comment=gpuward:JOB:ATTEMPT.  A daemon killed after sbatch answered
 * and before the store recorded the Slurm id finds the attempt again in squeue by its tag
 * (and its owner: a user's own sbatch could carry any comment) instead of submitting it a
 * second time. */

#define GW_SLURM_TAG_SIZE 48
/* squeue's format for it: the comment last, so that no text in it can fake a separator. */
#define GW_SLURM_TAG_FORMAT "--format=%i|%U|%k"

struct gw_slurm_tagged {
        uint32_t slurm_id;
        uint32_t uid; /* the Slurm job's owner */
        int64_t job; /* gpuward's job */
        int attempt;
};

/* "gpuward:17:2" in buf; -EINVAL for a job <= 0, an attempt < 1 or a buffer too small. */
int gw_slurm_tag_format(int64_t job, int attempt, char *buf, size_t n);
/* One line of squeue GW_SLURM_TAG_FORMAT ("42|1000|gpuward:17:2", len bytes, no newline
 * needed).  0 and *ret; -ENOENT for a job whose comment is not gpuward's tag (a plain sbatch
 * user's, an array task's "12_3"); -EINVAL for a line that is not three fields or a number
 * out of range. */
int gw_slurm_tag_parse(const char *line, size_t len, struct gw_slurm_tagged *ret);

/* The wait status an attempt ends with, for a job squeue shows in a final state st with
 * exit_status: COMPLETED 0; FAILED its wait status (exit 1 when that says nothing);
 * CANCELLED SIGTERM; TIMEOUT and the other failures (OOM, PREEMPTED) SIGKILL, as a job
 * stopped from outside shows to the local executor.  Node failures are lost, not a status:
 * the caller checks st->cls == GW_FAILURE_LOST first. */
int gw_slurm_end_status(const struct gw_slurm_state *st, const char *exit_status);

/* ---- The cluster's GPU types, and the type of a MIG slice ----
 *
 * A slice job asks Slurm for its slices by gres type: --gres=gpu:TYPE:N.  Slurm's
 * AutoDetect=nvml (gpu_nvml.c) names a slice's type after its GPU: the GPU's NVML name
 * lower-cased, blanks made '_', cut at its first '-', then "_" and the GPU instance's
 * slices and memory ("%ug.%lugb", the memory in GiB rounded): "NVIDIA A100-SXM4-80GB" ->
 * "nvidia_a100_1g.10gb", "A100-SXM4-40GB" -> "a100_1g.5gb".  Admins who write gres.conf by
 * hand often use the profile alone ("Type=1g.10gb").  So the type of NVML profile P is a
 * type that is P or ends in "_P"; which of those exist is read from the cluster itself
 * (scontrol show node --oneliner: "... Gres=gpu:a100_1g.10gb:7(S:0),gpu:a100:1 ..."). */

#define GW_SLURM_TYPE_MAX 64 /* a GPU type's name and its NUL; longer ones are not kept */
#define GW_SLURM_GPU_TYPES_MAX 64 /* distinct types kept; more are counted in n_dropped */
#define GW_SLURM_SLICE_NODES_MAX 4096 /* slice-only nodes kept (as many as max_nodes allows) */

struct gw_slurm_gpu_type {
        char name[GW_SLURM_TYPE_MAX]; /* "a100_1g.10gb", as Slurm prints it */
        unsigned count; /* GPUs (slices) of it, all nodes together */
        unsigned nodes; /* nodes that have some */
};

struct gw_slurm_gpus {
        struct gw_slurm_gpu_type types[GW_SLURM_GPU_TYPES_MAX]; /* in the order first seen */
        size_t n_types;
        size_t n_dropped; /* types past GW_SLURM_GPU_TYPES_MAX or too long to keep */
        unsigned untyped; /* GPUs of no type ("gpu:4"), all nodes together */
        /* Nodes whose GPUs are all MIG slices (every type names a profile), malloc'ed: a
         * job for whole GPUs is kept off them, since Slurm gives a plain --gres=gpu:N any
         * type, slices included. */
        char **slice_only;
        size_t n_slice_only;
};

/* Reads the output of scontrol show node --oneliner (len bytes, one node a line; lines
 * without NodeName= or Gres= are skipped, "Gres=(null)" is a node without GPUs) into *ret,
 * which the caller clears with gw_slurm_gpus_clear, on error too.  0; -EINVAL for a NUL in
 * the text.  Gres items other than gpu, and counts that are not a plain number, are skipped. */
int gw_slurm_gpus_parse(const char *text, size_t len, struct gw_slurm_gpus *ret);
void gw_slurm_gpus_clear(struct gw_slurm_gpus *g);

/* The MIG profile a Slurm GPU type names: its "Ng.Mgb" tail after the last '_', or the
 * whole name when it is one ("a100_1g.10gb" -> "1g.10gb", "1g.5gb" -> itself); NULL when
 * it names none ("a100", "tesla_v100-sxm2-16gb").  Points into type. */
const char *gw_slurm_type_profile(const char *type);

/* The type to ask Slurm for, for slices of NVML profile `profile` ("1g.10gb"): a type of g
 * naming that profile (gw_slurm_type_profile, case aside); of several (an A100's and an
 * H100's 1g.10gb), the one with the most slices in the cluster, the first in name order on
 * a tie.  0 and *ret (borrowed from g); -ENOENT none names it; -EINVAL a profile that is
 * not gw_mig_profile_valid. */
int gw_slurm_mig_type(const struct gw_slurm_gpus *g, const char *profile, const char **ret);

/* What the cluster has, for a refusal that names it: "a100_1g.10gb (7 on 1 node), 4 GPUs
 * of no type", or "no GPUs".  Cut to fit n (with "..."); returns buf. */
const char *gw_slurm_gpus_words(const struct gw_slurm_gpus *g, char *buf, size_t n);
