/* The node agent's dataset cache (gpuwardd --agent --cache-dir DIR): a Slurm job's step on this
 * node (gpuwardd --stage-run) asks on a local Unix socket for its --dataset, and the stager, a
 * child of the agent, copies it into the node's cache with the daemon's own entry store and
 * copying helper (cache_store.c, cache_copy.c): the source read as the asker, whose uid and
 * gid come from the socket (SO_PEERCRED), never from what it says.  It answers
 *   "P DONE TOTAL"   bytes copied (or linked) of the source's
 *   "Y PATH"         a data YAML's rewritten copy, the asker's
 *   "OK DIR"         the copy is ready: DIR is GPUWARD_DATASET_DIR
 *   "ERR data WHY"   the request or the dataset is at fault: refused or unreadable as the asker
 *   "ERR node WHY"   this node is: out of cache space, an I/O error, a helper that failed
 *                    (either closes the connection)
 * and keeps the version it handed out pinned until the asker's connection closes (the step
 * keeps it open while the command runs); a restarted agent, which lost the connections, keeps
 * the pins the use file recorded while the asking process (pid and start time) lives.  Each
 * request's time, from the asking to the answer, goes to the agent as a staging record (struct
 * gw_cache_staged) for the controller. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/time.h"

#define GW_CACHE_NODE_REQ_MAX 4200 /* "STAGE PATH\n": the longest request line */
#define GW_CACHE_NODE_CLIENTS 128 /* connections at once; more are refused */

struct gw_cache_node_cfg {
        const char *dir; /* the node's cache_dir */
        uint64_t size; /* cache_size */
        const char *sources; /* cache_sources */
        unsigned copies; /* cache_copies: copies made at once (1-64) */
        const char *socket; /* the socket's path (its folder is made root's 0755) */
};

/* One request's outcome, for the controller: the Slurm job of the asker (from its cgroup, 0:
 * none), how long it waited for its answer, and whether the cache had it already. */
struct gw_cache_staged {
        uint32_t slurm_job;
        gw_usec_t waited;
        bool ok, hit;
        uint64_t bytes; /* copied (0 on a hit) */
};

/* Opens the store and the socket, then forks the stager; its pid, with the read end of the
 * pipe on which it writes one line per request ("S JOB USEC OK HIT BYTES"), or -errno with why.
 * The stager ends with its parent (PR_SET_PDEATHSIG) or SIGTERM. */
pid_t gw_cache_node_spawn(const struct gw_cache_node_cfg *cfg, int *ret_fd, char *why, size_t n);
/* Parses one such line (without its '\n'): 0, or -EINVAL. */
int gw_cache_staged_parse(const char *line, struct gw_cache_staged *ret);
