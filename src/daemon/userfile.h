/* Files the daemon reads as root on a job's behalf: its --output, --progress, checkpoints,
 * results.csv.  Only regular files the job's user owns count, so that the daemon never becomes
 * a way to read (or learn the names of) what that user could not. */
#pragma once
#include <stdbool.h>
#include <sys/stat.h>

#include "core/jobrec.h"

/* Whether st, a file named by the job, may be used on its behalf: owned by the job's user
 * (always, when the daemon is not root or the job is root's). */
bool gw_user_owns(const struct gw_job *j, const struct stat *st);
/* Opens path with flags (O_RDONLY or O_RDWR|O_APPEND; O_CLOEXEC added) if it is a regular
 * file, not a symlink, and, when user_chosen, one gw_user_owns allows; st filled.  The type
 * is checked before the file is opened for reading, so a device node is never opened.
 * A descriptor, or -errno (-EPERM: someone else's). */
int gw_user_file_open(const struct gw_job *j, const char *path, bool user_chosen, int flags, struct stat *st);
