/* Checkpoint snapshots of training jobs: one row per copy kept under the state
 * directory.  Rows of copies removed by the retention stay, marked pruned, for history. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/time.h"
#include "store/store.h"

struct gw_store_snapshot {
        int64_t id;
        int64_t job_id;
        int seq; /* per job, from 1: what `gpuward restore --snapshot N` names */
        char kind[8]; /* "best" or "last" */
        long epoch; /* as results.csv numbers it; -1 unknown */
        double metric; /* mAP50-95 of that epoch; NAN unknown */
        char sha256[65];
        uint64_t size;
        gw_usec_t time; /* when the copy was made (wall clock) */
        gw_usec_t src_mtime; /* the source file's mtime then */
        char path[4096]; /* the copy */
        char source[4096]; /* the file it copies */
        bool pruned;
        int64_t uid; /* the job's owner (read only; -1 unknown) */
};

/* Inserts snap with the job's next seq; writes snap->id and snap->seq.  0 or -errno. */
int gw_store_snapshot_add(struct gw_store *s, struct gw_store_snapshot *snap);
typedef void (*gw_store_snapshot_cb)(const struct gw_store_snapshot *snap, void *userdata);
/* The job's snapshots by seq, pruned ones too. */
int gw_store_snapshots(struct gw_store *s, int64_t job_id, gw_store_snapshot_cb cb, void *userdata);
/* Every job's kept (not pruned) snapshots, oldest first: for the global size cap. */
int gw_store_snapshots_kept(struct gw_store *s, gw_store_snapshot_cb cb, void *userdata);
/* One snapshot; -ENOENT when there is none with that seq. */
int gw_store_snapshot_get(struct gw_store *s, int64_t job_id, int seq, struct gw_store_snapshot *ret);
int gw_store_snapshot_set_pruned(struct gw_store *s, int64_t id);
