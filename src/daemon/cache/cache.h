/* The node's dataset cache: a job's --dataset copied to cache_dir while it waits, as its
 * user, and reused by later jobs (docs/API.md "Datasets").  The loop's side: which entries
 * there are, which jobs use them, the copying helpers in flight (cache_copy.c does the copy).
 * All from the loop's thread. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/daemon.h"

struct gw_sched_job;

/* `gpuwardd --helper KIND` (daemon/base/helper.h) of the cache's kinds, cache-copy and
 * cache-remove: the helper's exit status; -1 for another kind. */
int gw_cache_helper_main(const char *kind);

/* Makes cache_dir's folders (root's, 0711) and reads the entries there; nothing without
 * cache_dir.  0, or -errno (logged): the daemon does not start. */
int gw_cache_open(struct gw_daemon *d);
/* Stops the helpers in flight (their half-made versions are removed at the next start). */
void gw_cache_close(struct gw_daemon *d);

/* A submission's check: --dataset needs a cache and a path under cache_sources. */
int gw_cache_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err);
/* A scheduling pass's filter: a job whose copy is not ready waits (Staging). */
void gw_cache_sched(struct gw_daemon *d, struct gw_sched_job *pending, size_t n);
/* GW_HOOK_JOB_SUBMITTED: its copy begins at once. */
void gw_cache_job_queued(struct gw_daemon *d, struct gw_djob *dj);
/* GW_HOOK_JOB_RECOVERED: a job still running at a restart uses the version it was handed
 * (the entry's use file says which) again, before anything may evict or trash it. */
void gw_cache_job_recovered(struct gw_daemon *d, struct gw_djob *dj);
/* GW_HOOK_JOB_FREED: its entry is no longer in use by it. */
void gw_cache_job_freed(struct gw_daemon *d, struct gw_djob *dj);
/* The helpers' progress; the next deadline (monotonic) or GW_USEC_INFINITY. */
gw_usec_t gw_cache_tick(struct gw_daemon *d);
/* SIGCHLD: whether pid was a helper of the cache's (then dealt with). */
bool gw_cache_reaped(struct gw_daemon *d, pid_t pid, int status);

/* An entry as GET /api/v1/cache shows it (borrowed until the loop goes on). */
struct gw_cache_row {
        const char *source;
        uint64_t size, files;
        int version;
        gw_usec_t last_use; /* wall clock, 0 = never used */
        const char *const *users; /* who used it (kept across restarts, cache_use.c) */
        size_t n_users;
        bool in_use; /* a queued or running job uses it */
        bool staging; /* a copy into it is under way */
};
struct gw_cache_counts {
        uint64_t hits, misses, bytes_copied, evictions;
};
/* The entries a caller may see (all for an admin, else those user used) into *ret
 * (malloc'ed array, the strings borrowed); returns how many. */
size_t gw_cache_rows(struct gw_daemon *d, const char *user, bool admin, struct gw_cache_row **ret);
void gw_cache_counts(const struct gw_daemon *d, struct gw_cache_counts *ret);
