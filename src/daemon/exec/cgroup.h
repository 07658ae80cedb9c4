/* A cgroup per job where the host allows: v2 (with cgroup.kill), else the v1 freezer
 * hierarchy, else none (the process tree under the job's subreaper is used instead). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/time.h"

enum gw_cgroup_mode { GW_CGROUP_NONE, GW_CGROUP_V1, GW_CGROUP_V2 };

struct gw_cgroups {
        enum gw_cgroup_mode mode;
        char base[512]; /* the gpuward directory jobs are created under */
        bool memory; /* v2 with the memory controller for job cgroups: each counts
                              * its OOM kills (memory.events oom_kill; one cgroup per attempt,
                              * so its whole count is the attempt's) */
};

/* Detects what the host allows given the config's wish (auto, v2, v1, none).  Never fails:
 * falls back to NONE and writes why into note. */
void gw_cgroup_detect(const char *want, const char *state_dir, struct gw_cgroups *ret, char *note, size_t notelen);
const char *gw_cgroup_mode_name(enum gw_cgroup_mode m);

/* Creates the job's cgroup; malloc'ed directory path in *ret_dir. */
int gw_cgroup_create(const struct gw_cgroups *cg, int64_t job_id, int attempt, char **ret_dir);

/* Emptied job cgroups kept for the next starts (v2 only).  Making a cgroup and removing it
 * were 16% of the daemon's CPU per job in a drain (the kernel populates and tears down each
 * one's interface files), and v2 refuses rename(2), so a reused one cannot carry the job's
 * name: pooled ones are named slot-N, and each start's event names the one its attempt got.
 * A cgroup comes back only when nothing can still be in it or join it: its attempt's end was
 * reported by the supervisor (which reaps the job's main process first), it holds no process
 * and no cgroup, and (memory controller) it counted no OOM kill, so that its count stays the
 * attempt's own. */
struct gw_cgroup_pool {
        struct gw_cgroup_slot {
                char *dir; /* malloc'ed path */
                int dir_fd, events_fd, memory_fd; /* kept open, -1 none (yet) */
                bool idle; /* empty and unused, else some attempt's */
                bool spoiled; /* never given back (gw_cgroup_pool_spoil) */
        } * v; /* those this daemon made, at most 64: more at once are used once */
        size_t n, cap;
        unsigned next; /* the slot number the next mkdir tries */
};
/* A cgroup for the next attempt: an idle one, else a new slot-N (N not used by a cgroup left
 * by an earlier daemon).  Malloc'ed path in *ret_dir. */
int gw_cgroup_pool_take(const struct gw_cgroups *cg, struct gw_cgroup_pool *p, char **ret_dir);
/* Keeps dir for a later start if it is one of the pool's and can be reused (above); false:
 * the caller removes it as before. */
bool gw_cgroup_pool_give_back(const struct gw_cgroups *cg, struct gw_cgroup_pool *p, const char *dir);
/* dir is not to be given back: its attempt's end is unknown, or it was killed through
 * cgroup.kill.  Linux (6.18 here) kills every child born later into a cgroup killed so, with
 * clone3's CLONE_INTO_CGROUP, at its birth: the next job started in it would die at once,
 * "killed by SIGKILL" with nobody stopping it. */
void gw_cgroup_pool_spoil(struct gw_cgroup_pool *p, const char *dir);
/* Removes the idle ones and frees the pool (those in use are left to their jobs). */
void gw_cgroup_pool_free(struct gw_cgroup_pool *p);
/* Signals every process in the cgroup (freezing it first under v1 so none can fork away) but
 * those in process group skip_group (0: none skipped), which the caller signalled already. */
int gw_cgroup_signal(enum gw_cgroup_mode mode, const char *dir, int sig, pid_t skip_group);
/* Whether dir is one of the job cgroups this configuration makes (a pooled slot-N or a
 * job-ID.ATTEMPT right under base): one the daemon may kill everything in. */
bool gw_cgroup_is_job(const struct gw_cgroups *cg, const char *dir);
/* Whether the cgroup still holds processes. */
int gw_cgroup_populated(const char *dir);
int gw_cgroup_remove(const char *dir);
/* Removes the job cgroups left empty by an earlier daemon (killed, or its jobs' leftovers
 * still dying when it removed them): every job-* and slot-* directory under base but those in keep; a
 * populated one stays (rmdir refuses it).  How many went. */
size_t gw_cgroup_sweep(const struct gw_cgroups *cg, char *const *keep, size_t n_keep);
/* The cgroups of ended jobs, removed after the next starts.  One whose last processes are still
 * dying (or that holds a cgroup someone made inside it) is tried again every second for a
 * minute, then left to the next start's sweep with a warning.  Each is held open (O_PATH), so
 * that a directory made since under its name (the start's sweep removed an earlier daemon's
 * slot-N, and the pool made a new slot-N for a job) is told from it by its inode, and stays. */
struct gw_cgroup_trash {
        struct gw_cgroup_doomed {
                char *dir;
                unsigned tries;
                int fd;
        } * v;
        size_t n, cap;
        gw_usec_t retry_at; /* monotonic; when the busy ones are tried again */
};
void gw_cgroup_trash_add(struct gw_cgroup_trash *t, const char *dir);
/* Removes the new ones, and the busy ones once retry_at has come; returns when to call again
 * (GW_USEC_INFINITY: nothing left). */
gw_usec_t gw_cgroup_trash_sweep(struct gw_cgroup_trash *t, gw_usec_t now);
void gw_cgroup_trash_free(struct gw_cgroup_trash *t);

/* Removes this daemon's directory if no job cgroup is left in it. */
void gw_cgroup_release(struct gw_cgroups *cg);
