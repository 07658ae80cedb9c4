/* The cluster's nodes as their agents report them (gpuwardd --agent, agent.h): the newest
 * snapshot of each node, in memory only, with the time it came.  The controller
 * (--backend slurm) keeps them; GET /api/v1/gpus shows them by node. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/reclaim.h"

struct gw_daemon;
struct gw_http_request;
struct gw_http_reply;

#define GW_NODES_MAX 4096 /* the most max_nodes may be (the config's bound) */
#define GW_NODES_DEFAULT_MAX 1024 /* max_nodes unless the config says */
#define GW_NODES_PAGE 64 /* nodes in one GET /api/v1/gpus unless ?limit= says */
#define GW_NODES_PAGE_MAX 256 /* the most ?limit= may ask for */
#define GW_NODES_TELL_EVERY (60 * GW_USEC_PER_SEC) /* a kind of refusal is logged at most this often */
#define GW_NODE_STALE_ROUNDS 3 /* a node is stale after this many of its intervals unheard */

struct gw_node {
        char name[65];
        gw_usec_t received; /* monotonic */
        gw_usec_t received_wall;
        gw_usec_t interval; /* the agent's sample interval */
        json_t *snapshot; /* {"driver", "gpus": [...]}, as checked and rebuilt here */
};

/* A Slurm job the idle watch has seen on the nodes' GPUs (nodes_watch.c), gpuward's or not.
 * What a foreign one (plain sbatch) gets from the watch is kept here too, for the listing. */
struct gw_slurm_seen {
        uint32_t slurm_id;
        int64_t job; /* gpuward's job, 0: a job gpuward did not submit */
        char user[65];
        gw_usec_t first_seen, last_seen; /* monotonic */
        struct gw_reclaim_state state; /* foreign: gw_reclaim_decide's, on the wall clock */
        gw_usec_t idle_for; /* foreign: the last decision's; 0 when active */
        gw_usec_t kill_rearm_at; /* foreign: no second plain scancel before (monotonic) */
        const char *action; /* foreign: NULL, "warned", "reported", "cancelled" */
        bool stale_told; /* foreign: a stale snapshot blocked a decision (logged) */
};

/* Refusals of one kind, logged at most once per GW_NODES_TELL_EVERY with their count: an agent
 * refused every interval, or a flood of them, must not fill the log at its own rate. */
struct gw_nodes_told {
        gw_usec_t next; /* monotonic: the next refusal is logged from then */
        unsigned n; /* refusals since the last logged */
};

struct gw_nodes {
        struct gw_node *v;
        size_t n;
        struct gw_slurm_seen *seen; /* nodes_watch.c */
        size_t n_seen;
        gw_usec_t watch_next; /* monotonic: the idle watch's next round */
        struct gw_nodes_told told_full, told_unbound, told_other_node;
};

/* Counts one refusal at now; true when it is to be logged, with *ret_n the refusals it stands
 * for (those not logged since the last, and this one).  Pure. */
bool gw_nodes_told_due(struct gw_nodes_told *t, gw_usec_t now, unsigned *ret_n);

/* Whether a node agent's token bound to node bound ("" for none: made before tokens were
 * bound to nodes) may post node's snapshot.  0; -EPERM (bound to no node) or -EACCES (another
 * node's) with why, naming the token (id) and the node it is bound to.  Pure. */
int gw_node_token_check(int64_t id, const char *bound, const char *node, char *why, size_t why_len);

/* The snapshot in body checked field by field and rebuilt from what is known (no other key
 * passes), into a new {"node", "interval", "driver", "gpus"[, "xids"][, "staged"]}.  0 and *ret; -EINVAL with the
 * field ("gpus[1].procs[0].pid") and why.  Pure: the unit tests call it. */
int gw_node_snapshot_check(const json_t *body, json_t **ret, char *field, size_t field_len, char *why, size_t why_len);

/* The GPUs of every node whose agent has reported (stale ones too: a node unheard for a while
 * still has its cards), for the booking policy's share of the cluster. */
unsigned gw_nodes_gpu_count(const struct gw_nodes *t);

/* The newest snapshot of node name, NULL when none came. */
const json_t *gw_nodes_snapshot(const struct gw_nodes *t, const char *name);

/* Adds to jobs[0..n) the Slurm jobs snap lists on its GPU gpu, each once, max in all; returns
 * the new count.  Pure. */
size_t gw_node_gpu_jobs(const json_t *snap, unsigned gpu, uint32_t *jobs, size_t n, size_t max);

/* Whether node is kept already, or one more node would be at most max.  t may be NULL. */
bool gw_nodes_has_room(const struct gw_nodes *t, const char *node, size_t max);

/* Keeps snap (taken) as node's newest, received at now / now_wall.  -ENOSPC (snap freed)
 * when node is not kept and max are. */
int gw_nodes_put(struct gw_nodes *t, json_t *snap, gw_usec_t now, gw_usec_t now_wall, size_t max);

/* Which nodes one GET /api/v1/gpus shows: at most limit (>= 1) of them, by name, from the
 * first after after (NULL: from the first). */
struct gw_nodes_page {
        const char *after;
        size_t limit;
};

/* The nodes of page, sorted by name, as GET /api/v1/gpus shows them: each with "stale", "age"
 * and its GPUs, each process's "rogue" (no Slurm job) told; without details (guests) no
 * process's user or uid.  *ret_next: the last node shown when more follow (points into t),
 * else NULL.  t may be NULL (no node heard yet). */
json_t *gw_nodes_json(const struct gw_nodes *t, gw_usec_t now, bool details, const struct gw_nodes_page *page,
                      const char **ret_next);

/* The Slurm job slurm_id as the idle watch last saw it, or NULL. */
const struct gw_slurm_seen *gw_nodes_seen_find(const struct gw_nodes *t, uint32_t slurm_id);

/* Where one Slurm job is on the nodes' GPUs: each GPU of a fresh snapshot (at most
 * fresh_rounds of its agent's intervals old at now) with a process of the job, its device
 * utilisation (unknown unless the GPU is "ok") and whether another process there holds memory
 * (another job's, a rogue; unknown memory counts as held); and a node whose snapshot also
 * lists the job but is too old to use.  Pure: reads t only; t may be NULL. */
struct gw_nodes_job_gpus {
        struct gw_reclaim_gpu gpus[64];
        size_t n;
        char nodes[200]; /* "gpu1,gpu2": the fresh nodes it is on */
        char user[65]; /* its first process's user */
        const struct gw_node *stale; /* a node it is on whose snapshot is too old; NULL none */
        gw_usec_t stale_age;
};
void gw_nodes_job_gpus(const struct gw_nodes *t, uint32_t slurm_id, gw_usec_t now, int fresh_rounds,
                       struct gw_nodes_job_gpus *out);

/* Frees t (from calloc) and what it keeps; accepts NULL; returns NULL. */
struct gw_nodes *gw_nodes_free(struct gw_nodes *t);
