/* The scratch feature's copying helper (scratch_copy.c), as the loop's side (scratch.c) calls
 * it.  Internal to daemon/scratch. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/time.h"

#define GW_SCRATCH_MAX_GROUPS 256
/* A look while the job runs copies at most this many checkpoints; the rest wait for the next. */
#define GW_SCRATCH_COPIES_PER_LOOK 32
/* Entries one pass visits at most, and how deep it goes: a folder of millions of files (an
 * unpacked dataset) must not hold a helper for hours; the final sync says what it left. */
#define GW_SCRATCH_VISIT_MAX 200000
#define GW_SCRATCH_DEPTH_MAX 32

enum gw_scratch_mode {
        GW_SCRATCH_LOOK, /* while the job runs: its whole checkpoints, each reported */
        GW_SCRATCH_SYNC, /* at its end: every file that differs, counted */
};

/* What the helper is told.  It becomes the job's user before it opens anything, so that the
 * kernel decides what may be read and written, and it never follows a symbolic link below src
 * or dst (each folder and file opened O_NOFOLLOW relative to its parent's descriptor).  It
 * writes each copy to a temporary name beside the destination, keeps the source's mtime, and
 * renames it into place only when whole.  It answers on report_fd, a line each:
 *   "C BYTES REL"     LOOK: REL (relative to src) copied back, BYTES long
 *   "S REL WHY"       REL not copied, why (a link not followed, not a file at the destination)
 *   "D FILES BYTES LEFT"  done: files and bytes copied, entries left unvisited (bounds)
 *   "E ERRNO WHY"     failed before copying anything (src or dst not opened) */
struct gw_scratch_copy {
        enum gw_scratch_mode mode;
        const char *src, *dst; /* absolute folders; dst NULL: src is only emptied */
        const char *sub; /* a folder below both (relative, no ".."), the only one copied; NULL: all */
        bool empty_src; /* SYNC: then remove everything below src (the scratch folder) */
        uid_t uid;
        gid_t gid;
        const uint32_t *groups; /* the user's groups, gid included */
        int n_groups;
        int report_fd;
};

/* The helper's report as it arrives: the bytes of a line not yet whole. */
#define GW_SCRATCH_REPORT_MAX 8192
struct gw_scratch_report {
        char buf[GW_SCRATCH_REPORT_MAX];
        size_t n;
};
/* Reads what fd has (non-blocking) and calls each(line, ctx) for every whole line, its
 * newline cut; a line longer than any the helper writes is dropped. */
void gw_scratch_report_read(struct gw_scratch_report *r, int fd, void (*each)(char *line, void *ctx), void *ctx);

/* Forks the helper: its pid, or -errno.  report_fd stays the caller's to close. */
pid_t gw_scratch_copy_spawn(const struct gw_scratch_copy *c);
/* Starts the helper with its report on a pipe made here (c's report_fd is set): its pid and
 * *ret_fd, the pipe's non-blocking read end (the caller's to close); or -errno. */
pid_t gw_scratch_copy_start(struct gw_scratch_copy *c, int *ret_fd);
/* Runs the helper (c's report_fd is set here) and waits for it, killing it after max
 * (monotonic): its report in out (n bytes, cut); 0 when it finished, else -errno. */
int gw_scratch_copy_run(struct gw_scratch_copy *c, gw_usec_t max, char *out, size_t n);

/* ---- scratch_told.c: on a Slurm cluster, the step's lines in the job's output ---- */

struct gw_daemon;
struct gw_job;

/* How far the controller has read an attempt's output. */
struct gw_scratch_told {
        uint64_t off; /* bytes of the log read */
        char last[160]; /* the last copy told, its REL and epoch: a line read twice is told once */
        unsigned n_told; /* events this attempt, at most GW_SCRATCH_TOLD_MAX */
};
#define GW_SCRATCH_TOLD_MAX 2000

/* Reads what the job's step (scratch_step.c) wrote to j's output since t->off, at most
 * 64 KiB a call, whole lines only, and records each as an event of kind "scratch": a copy
 * ("gpuward: scratch: copied REL ...") only once this daemon finds REL in the shared folder,
 * a regular file of the job's user's, and then worded from what it reads there itself (a
 * checkpoint's epochs), never from the line; the step's restore and final sync as the step's
 * word ("its step on the node: synced back to ..."). */
void gw_scratch_told_read(struct gw_daemon *d, const struct gw_job *j, struct gw_scratch_told *t);
/* A restarted daemon's: what the output holds now was told before, t starts at its end. */
void gw_scratch_told_skip(const struct gw_job *j, struct gw_scratch_told *t);
