/* The daemon's helpers (the dataset cache's copy and removal, --scratch's copies) run in a new
 * image of gpuwardd (`gpuwardd --helper KIND`), never in the forked copy of the daemon: the
 * daemon has threads, and a child of fork may only call what is async-signal-safe until it
 * execs (a lock another thread held at the fork stays held in the child: a helper that
 * hangs).  The arguments travel in the helper's environment, which only root may read (its
 * command line anybody may). */
#pragma once
#include <stdint.h>
#include <sys/types.h>

struct gw_helper_args {
        char **env; /* the daemon's environment, then the arguments; NULL-terminated */
        size_t n;
};

/* An argument GW_HELPER_<name>=value (printf-style value). */
void gw_helper_arg(struct gw_helper_args *a, const char *name, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* The user's identity as one argument: "UID:GID:G1,G2,...". */
void gw_helper_arg_user(struct gw_helper_args *a, uid_t uid, gid_t gid, const uint32_t *groups, int n_groups);

/* Forks and execs `gpuwardd --helper KIND` with a's environment (a is freed), keeping only the
 * descriptors keep[] (their numbers as they are, close-on-exec cleared), in a process group of
 * its own (stopped and killed as one), with no signal blocked.  Its pid, or -errno. */
pid_t gw_helper_spawn(const char *kind, struct gw_helper_args *a, const int *keep, size_t n_keep);

/* ---- in the helper ---- */

/* The KIND of `gpuwardd --helper KIND`, or NULL when argv is not a helper's. */
const char *gw_helper_kind(int argc, char **argv);
/* GW_HELPER_<name>, or NULL when unset or empty. */
const char *gw_helper_get(const char *name);
/* GW_HELPER_<name> as a descriptor number, or -1. */
int gw_helper_get_fd(const char *name);
/* GW_HELPER_<name> as written by gw_helper_arg_user: 0, or -EINVAL. */
int gw_helper_get_user(const char *name, uid_t *uid, gid_t *gid, uint32_t *groups, int max, int *n_groups);
