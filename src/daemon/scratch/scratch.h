/* submit --scratch: each attempt of the job works in a node-local folder of its user's under
 * scratch_dir (GPUWARD_SCRATCH), whose checkpoints reach the job's shared folder (its cwd, at
 * the same relative path) as they appear, so that a node's death still resumes from the newest
 * one copied (docs/API.md "Scratch").
 *
 *   ATTEMPT_STARTED  the folder scratch_dir/JOB-ATTEMPT is made (root's mkdirat under the
 *                    root-owned scratch_dir, then handed to the user, 0700); a retry that
 *                    resumes from a checkpoint in the shared folder gets that checkpoint's run
 *                    copied in first, at the same path (jobs.c hands the job that copy).
 *   the loop's tick  every scratch_interval a helper, as the user, copies each whole
 *                    checkpoint (*.pt, results.csv) that changed; each copy is a job event.
 *   ATTEMPT_ENDED    (any end, before recovery decides a retry) the rest is synced back, only
 *                    what differs, in one event, and the folder removed: a retry, on this node
 *                    or another, starts from the shared folder, the one place that survives.
 *
 * The copying is scratch_copy.c's helper's, never the loop's: it runs as the job's user and
 * follows no link.  The ends' syncs and a retry's restore are waited for (the retry's resume
 * must see them); the looks while the job runs are not.  All from the loop's thread.
 *
 * With backend = slurm, scratch_dir is each node's folder and the job runs on a node this
 * daemon cannot copy on: it only names the attempt's folder, JOB-ATTEMPT-RANDOM (users make
 * their own folders there: a predictable name could be taken first), recorded with the
 * attempt's start for a restart (j->scratch_dir, so that resume.c maps the run as above),
 * and the job's batch script runs its step (scratch_step.c, `gpuwardd --scratch-run`), which
 * makes the folder, restores, copies and syncs there with the same helper, telling each copy
 * in the job's output, which scratch_told.c reads back into events once it finds each copy in
 * the shared folder. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "daemon/daemon.h"

/* `gpuwardd --helper scratch-copy` (daemon/base/helper.h): the copying helper's exit status;
 * -1 for another kind. */
int gw_scratch_helper_main(const char *kind);

/* `gpuwardd --scratch-run DIR SECONDS RESTORE COMMAND...` (scratch_step.c): a --scratch
 * job's step on a Slurm node; -1 when argv does not ask for it, else its exit status. */
int gw_scratch_step_main(int argc, char **argv);

/* gpuwardd --agent --scratch-dir (scratch_sweep.c): removes the folders under dir that
 * dead steps left (an attempt's folder's name, a real directory, and no process's command
 * line has `--scratch-run` naming it), each emptied as its owner; a line logged for each,
 * removed or not.  Called from the agent's loop: it waits for the helpers, at most a few
 * minutes in all.  How many were removed, or -errno when dir or /proc cannot be read
 * (logged). */
int gw_scratch_sweep(const char *dir);

/* Makes scratch_dir (root's, 0711) when set; with backend = slurm it is the nodes' folder,
 * left to them.  0, or -errno (logged): the daemon does not start. */
int gw_scratch_open(struct gw_daemon *d);
/* Stops the helpers in flight (their half copies have temporary names, dropped next time). */
void gw_scratch_close(struct gw_daemon *d);
/* A submission's check: --scratch needs scratch_dir and jobs run on this host. */
int gw_scratch_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err);
/* GW_HOOK_ATTEMPT_STARTED: the attempt's folder, and a retry's run restored into it. */
void gw_scratch_attempt_started(struct gw_daemon *d, struct gw_djob *dj);
/* GW_HOOK_JOB_RECOVERED: a job running at a restart has its attempt's folder again. */
void gw_scratch_job_recovered(struct gw_daemon *d, struct gw_djob *dj);
/* GW_HOOK_ATTEMPT_ENDED: the final sync and the folder's removal. */
void gw_scratch_attempt_ended(struct gw_daemon *d, struct gw_djob *dj);
/* GW_HOOK_JOB_FREED: forgets the job (a helper in flight is reaped later). */
void gw_scratch_job_freed(struct gw_daemon *d, struct gw_djob *dj);
/* The looks due; the next deadline (monotonic) or GW_USEC_INFINITY. */
gw_usec_t gw_scratch_tick(struct gw_daemon *d);
/* SIGCHLD: whether pid was a look's helper (then dealt with). */
bool gw_scratch_reaped(struct gw_daemon *d, pid_t pid, int status);
