/* Where a failed job resumes from: the newest checkpoint of its run, checked before use. */
#pragma once
#include <stddef.h>
#include <sys/stat.h>

#include "core/jobrec.h"

struct gw_daemon;

/* The newest usable checkpoint of j written since `since` (wall clock): for Ultralytics jobs
 * weights/last.pt of its run (falling back to best.pt when last.pt is torn), for others the
 * newest file matching j->checkpoint (relative to the job's cwd), for other training jobs
 * (a Python script calling model.train()) weights/last.pt of the run training awareness
 * credits to them, if any.  Its run is the one its
 * results.csv names when d knows it (gw_train_find_results); else the one run its own
 * evidence names (core/yolo_run.h gw_yolo_own_dir: its log, the checkpoint it resumed,
 * PROJECT/NAME with exist_ok), else the newest of the runs its command names begun since
 * `since` (by its birth time, where kept) that no other live job of d has or could have made;
 * a command that names no run: none.  A retry must never resume, and write into, someone
 * else's run.  NULL when there is none; why says what was looked at.  Malloc'ed. */
char *gw_resume_find(const struct gw_daemon *d, const struct gw_job *j, gw_usec_t since, char *why, size_t n);

/* The run directory of a checkpoint path (RUN for RUN/weights/last.pt), malloc'ed. */
char *gw_resume_run_dir(const char *ckpt);

/* Whether path is a whole checkpoint (core/ckpt.h), read as j's user's file (userfile.h: a
 * regular file of theirs, not through a symlink): 0, with its fstat in *ret_st (may be NULL);
 * -EBADMSG torn or not an archive (its fstat given too), -EIO unreadable, or
 * gw_user_file_open's error.  why (n bytes) says what was wrong. */
int gw_resume_ckpt_whole(const struct gw_job *j, const char *path, struct stat *ret_st, char *why, size_t n);
