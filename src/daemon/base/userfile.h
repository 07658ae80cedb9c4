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
/* lstat of path into st: whether it is a regular file gw_user_owns allows (not opened). */
bool gw_user_file_stat(const struct gw_job *j, const char *path, struct stat *st);
/* st's modification time in µs. */
gw_usec_t gw_file_mtime_us(const struct stat *st);
/* When path was created (its birth time) in µs; 0 where the file system does not keep it. */
gw_usec_t gw_file_birth_us(const char *path);
/* The last max bytes of fd, whose fstat is st: malloc'ed, NUL-terminated, length in *ret_len. */
char *gw_user_file_read_end(int fd, const struct stat *st, size_t max, size_t *ret_len);
/* gw_user_file_open and gw_user_file_read_end together: NULL when path is not such a file;
 * its fstat in *ret_st when not NULL. */
char *gw_user_file_tail(const struct gw_job *j, const char *path, bool user_chosen, size_t max, struct stat *ret_st,
                        size_t *ret_len);
