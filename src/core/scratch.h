/* submit --scratch's decisions: which files of a job's node-local folder go back to its shared
 * folder (the job's cwd), when a copy of one is whole, and how a path in one folder reads in
 * the other.  Pure: the caller stats and reads, these judge.
 *
 * While the job runs only its checkpoints go back, each as soon as it is whole: a *.pt
 * (torch.save's zip, whose end records are written last: core/ckpt.h judges the bytes copied)
 * and results.csv.  A copy is kept only when the source looked the same (size and mtime)
 * before and after it was read, so that a file rewritten meanwhile (Ultralytics overwrites
 * last.pt in place) is taken at the next look instead.  At the attempt's end everything else
 * follows, incrementally: only files whose size or mtime differ from the destination's (a
 * copy keeps its source's mtime). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gw_scratch_kind {
        GW_SCRATCH_OTHER, /* copied back only when the attempt ends */
        GW_SCRATCH_PT, /* a torch.save checkpoint: copied once whole */
        GW_SCRATCH_CSV, /* results.csv: copied whenever it changed */
};

/* What a file's name makes it (the last component only). */
enum gw_scratch_kind gw_scratch_kind_of(const char *name);

/* A regular file as stat told it; exists false: there is none. */
struct gw_scratch_stamp {
        bool exists;
        uint64_t size;
        int64_t mtime_ns; /* wall clock, ns since the epoch */
};

/* The incremental decision: whether src must be copied over dst (none there, or its size or
 * mtime differ). */
bool gw_scratch_differs(const struct gw_scratch_stamp *src, const struct gw_scratch_stamp *dst);

/* Whether a copy read between the looks before and after is the file as it was: the same
 * size and mtime both times. */
bool gw_scratch_stable(const struct gw_scratch_stamp *before, const struct gw_scratch_stamp *after);

/* Whether the bytes of a copied checkpoint are a whole zip: head (its first head_len bytes)
 * and tail (its last tail_len) of a file of size bytes, as core/ckpt.h reads them.  why
 * (n bytes, may be NULL) says what was wrong. */
bool gw_scratch_pt_whole(const uint8_t *head, size_t head_len, const uint8_t *tail, size_t tail_len, uint64_t size,
                         char *why, size_t n);

/* path, when it is folder `from` or below it, rewritten below `to` into buf (n bytes): 1;
 * 0 when it is not below from (buf untouched); -ENAMETOOLONG when it does not fit; -EINVAL
 * for a NULL or empty argument.  "/s/7-1/runs/x" with from "/s/7-1", to "/home/u/job" is
 * "/home/u/job/runs/x"; "/s/7-10" is not below "/s/7-1". */
int gw_scratch_map(const char *path, const char *from, const char *to, char *buf, size_t n);

/* The random bytes of an attempt's folder name, written as twice as many hex digits. */
#define GW_SCRATCH_NAME_RANDOM 6

/* The name of an attempt's folder under scratch_dir into buf (n bytes): "JOB-ATTEMPT-RANDOM",
 * RANDOM the GW_SCRATCH_NAME_RANDOM bytes of rnd in lowercase hex ("17-3-0a1b2c3d4e5f"), or
 * "JOB-ATTEMPT" when rnd is NULL.  In a folder where users make their own entries (a
 * cluster's nodes', mode 1777) only the random part keeps a user from taking an attempt's
 * name before it: job ids come in order.  0, or -ENAMETOOLONG. */
int gw_scratch_name(int64_t job, int attempt, const uint8_t *rnd, char *buf, size_t n);

/* Whether name is one gw_scratch_name makes with random bytes for job's attempt (a name
 * read back from the store, checked before it becomes a path). */
bool gw_scratch_name_valid(const char *name, int64_t job, int attempt);

/* Whether name is an attempt's folder name as gw_scratch_name makes them, with or without
 * its random part ("17-3-0a1b2c3d4e5f", "17-3"): JOB and ATTEMPT positive decimal integers
 * without leading zeros, JOB at most INT64_MAX and ATTEMPT at most INT_MAX.  0 with *ret_job
 * and *ret_attempt (each may be NULL), or -EINVAL.  A node's sweep of dead steps' folders
 * reads the names of a folder users write in, so anything else is not its to remove. */
int gw_scratch_name_parse(const char *name, int64_t *ret_job, int *ret_attempt);

/* The folder of the shared folder cwd that a retry resuming from ckpt gets restored into its
 * new scratch folder, relative to cwd, into buf (n bytes): RUN of cwd/RUN/weights/X.pt, else
 * the checkpoint's own folder.  0; -EINVAL when ckpt is not in a folder below cwd or the
 * folder's path holds a ".." component; -ENAMETOOLONG when it does not fit.  "/h/u/runs/s/
 * weights/last.pt" in "/h/u" is "runs/s"; "/h/u/ck/e3.pt" is "ck"; "/h/u/e3.pt" is refused. */
int gw_scratch_restore_sub(const char *cwd, const char *ckpt, char *buf, size_t n);

/* Relaying a signal meant for the command's main process alone (a --signal warning,
 * preemption's checkpoint request) through a cluster node's step.  The controller can reach
 * only the step (scancel --batch: the batch script's process), which passes a plain signal
 * on to the command's whole process group; so it asks the step for a signal to the main
 * process with SIGRTMIN + k, k the signal's index in this table.  The step and the controller
 * are one program, so they agree on SIGRTMIN. */
#define GW_SCRATCH_RELAYS 6

/* The k-th signal that can be relayed (0 <= k < GW_SCRATCH_RELAYS: TERM, INT, HUP, QUIT,
 * USR1, USR2); -EINVAL for any other k. */
int gw_scratch_relay_signal(int k);

/* The relay signal that asks the step for sig: SIGRTMIN + its index; -EINVAL for a signal not
 * in the table. */
int gw_scratch_relay_of(int sig);

/* The signal relay asks the step for; -EINVAL for one that is not a relay signal. */
int gw_scratch_relayed(int relay);
