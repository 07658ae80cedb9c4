/* Where a failed job resumes from: the newest checkpoint of its run, checked before use. */
#pragma once
#include <stddef.h>

#include "core/jobrec.h"

/* The newest usable checkpoint of j written since `since` (wall clock): for Ultralytics jobs
 * weights/last.pt of the run directory (falling back to best.pt when last.pt is torn), for
 * others the newest file matching j->checkpoint (relative to the job's cwd).  NULL when there
 * is none; why says what was looked at and why each candidate was refused.  Malloc'ed. */
char *gw_resume_find(const struct gw_job *j, gw_usec_t since, char *why, size_t n);

/* The command this attempt runs: the original one, the Ultralytics resume form
 * (`... resume model=RUN/weights/last.pt`), or `sh -c RESUME_CMD`.  Malloc'ed strv. */
char **gw_resume_argv(const struct gw_job *j);

/* The run directory of a checkpoint path (RUN for RUN/weights/last.pt), malloc'ed. */
char *gw_resume_run_dir(const char *ckpt);
