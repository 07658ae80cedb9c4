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

/* The number of epochs the checkpoint at ckpt (an Ultralytics one: a torch.save zip whose
 * data.pkl holds {'epoch': E, ...}, E counted from 0) has finished: E + 1, read from the file
 * itself (core/ckpt.h), never from results.csv, whose row for an epoch is written before its
 * checkpoint.  Read as gw_user_file_open allows, every read bounded.  0 and *ret_done, or
 * -errno with why (a finished run's stripped checkpoint, E = -1: -ENOENT). */
int gw_resume_ckpt_epoch(const struct gw_job *j, const char *ckpt, long *ret_done, char *why, size_t n);

/* Before a resume from ckpt (RUN/weights/X.pt) that has finished `done` epochs: the rows of
 * RUN/results.csv past epoch `done` are moved to RUN/results.csv.after-epoch-DONE.gpuward
 * (DONE.2 ... when taken), and results.csv rewritten without them, both as the job's user
 * (the resumed run writes those epochs again: each is then in results.csv once).  1 when rows
 * were moved (said: which and where), 0 when none needed to be (or there is no results.csv),
 * -errno with said telling why, results.csv then as it was. */
int gw_resume_results_agree(const struct gw_daemon *d, const struct gw_job *j, const char *ckpt, long done, char *said,
                            size_t n);
