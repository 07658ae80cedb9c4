/* Online backups: a consistent copy of the database while the daemon writes to it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct gw_backup;

/* Starts copying s's database to path on a thread of its own, through a connection of its
 * own, with SQLite's online backup API in one read transaction: the copy is the database as
 * it was at one instant, and the daemon's writer is never blocked (WAL).  The copy is
 * written beside the database, then into a fresh private folder made in path's folder,
 * through the descriptor that created it, synced and renamed to path; a path that exists by
 * then is not replaced (the backup fails with EEXIST).  Copies path.
 * 0 and *ret, or -errno with the reason in err: -EPERM when others may write in path's
 * folder and it is not sticky (err starts "path: "), -ENOENT or -ENOTDIR when the folder is
 * missing, another -errno when the copy cannot be started. */
int gw_backup_start(struct gw_store *s, const char *path, struct gw_backup **ret, char *err, size_t errlen);
/* Whether the copy has ended; once it has, *ret_r is 0 or -errno, *ret_bytes the copy's
 * size, and why (when *ret_r < 0) says what failed. */
bool gw_backup_done(struct gw_backup *b, int *ret_r, uint64_t *ret_bytes, char *why, size_t whylen);
const char *gw_backup_path(const struct gw_backup *b);
/* The folder of the copy, as opened and checked when the backup started (b keeps it): what
 * goes beside the copy is made through it, never by name. */
int gw_backup_dir_fd(const struct gw_backup *b);
/* The copy's last name in that folder (b keeps it). */
const char *gw_backup_base(const struct gw_backup *b);
/* Waits for the thread and frees b; NULL. */
struct gw_backup *gw_backup_free(struct gw_backup *b);
