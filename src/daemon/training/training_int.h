/* Internals of training awareness, shared by training.c (per sample: epochs, ETA,
 * leak, the restart policy), training_snap.c (checkpoint snapshots and restore) and
 * training_api.c (the endpoints and the JSON).  The daemon-wide entry points are in
 * daemon.h's "training awareness" section. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/sha256.h"
#include "core/eta.h"
#include "core/leak.h"
#include "core/yolo_run.h"
#include "daemon/daemon.h"

#define TRAIN_EPOCHS_KEEP 256 /* epoch records kept (the ETA needs the recent ones) */

/* One finished epoch of the run as this attempt saw it. */
struct train_epoch {
        long epoch; /* epochs done when it ended (1-based count) */
        gw_usec_t start, end; /* wall clock: the previous row (or the start), its row */
        bool startup; /* the first epoch of this process: includes its start */
        bool exact; /* its own row was seen: start and end are its bounds */
};

/* One GPU's per-epoch memory (bytes) for the leak detector: the newest GW_LEAK_MAX_EPOCHS. */
struct train_gpu {
        unsigned gpu;
        uint64_t mem_total; /* a slice job's: its slices' on this GPU */
        char name[96]; /* a slice job's: "MIG-... (1g.10gb on GPU 0)", for the leak evidence; "" whole */
        long epoch[GW_LEAK_MAX_EPOCHS];
        double low[GW_LEAK_MAX_EPOCHS], peak[GW_LEAK_MAX_EPOCHS];
        size_t n;
};

enum { TRAIN_LAST, TRAIN_BEST, _TRAIN_FILES };

/* weights/last.pt or best.pt: what it was at the last samples, and what was copied last. */
struct train_file {
        bool seen;
        bool refused_told; /* a copy refused by a cap was told (an event), once a run */
        int64_t size;
        gw_usec_t mtime;
        unsigned stable; /* samples it stayed the same */
        int64_t done_size; /* the version snapshotted (or refused), -1 none */
        gw_usec_t done_mtime;
};

/* A snapshot being copied a chunk per sample, so that a big checkpoint never stalls the loop. */
struct train_copy {
        int kind; /* TRAIN_LAST / TRAIN_BEST */
        int src, dst;
        char src_path[4200], tmp_path[4200];
        int64_t size;
        gw_usec_t mtime;
        uint64_t copied;
        struct gw_sha256 sha;
        long epoch;
        double metric;
};

struct gw_train {
        int attempt; /* the attempt this state belongs to */
        gw_usec_t start_time;

        /* results.csv and what it said */
        char *results_path, *run_dir;
        gw_usec_t next_find; /* no new search for results.csv before (wall clock) */
        bool results_seen;
        int64_t results_size;
        gw_usec_t results_mtime;
        long done; /* epochs finished (the run's count); -1 none seen */
        long total; /* planned epochs; -1 unknown */
        const char *total_from; /* "args.yaml", "command" */
        long row_epoch, prev_row_epoch; /* the newest row's epoch as written, and the one before */
        double row_map, prev_row_map; /* their mAP50-95 */
        long best_epoch, best_epoch_before; /* best fitness over all rows / all but the newest */
        double best_map, best_map_before;

        struct train_epoch epochs[TRAIN_EPOCHS_KEEP];
        size_t n_epochs;
        struct train_gpu *gpus;
        size_t n_gpus;

        bool has_eta;
        struct gw_eta eta;

        struct gw_leak_verdict leak;
        bool leak_flagged; /* the newest verdict says leak */
        bool leak_reported; /* its "leak" event was written (once per attempt) */
        bool resume_told; /* a retry's "resume" verdict was written (once per attempt) */
        bool restart_pending; /* policy restart: stop after the next checkpoint */
        bool restart_sent; /* stopped for a leak restart: recovery retries it */
        char leak_evidence[GW_LEAK_EVIDENCE_MAX];

        struct train_file files[_TRAIN_FILES];
        struct train_copy *copy;
};

/* The training state of dj (NULL: none yet), kept by job id in d->state.train; _at: only
 * that of the given attempt (dj may be NULL); _current: only that of its current attempt. */
struct gw_train *gw_train_of(const struct gw_daemon *d, const struct gw_djob *dj);
struct gw_train *gw_train_at(const struct gw_daemon *d, const struct gw_djob *dj, int attempt);
struct gw_train *gw_train_current(const struct gw_daemon *d, const struct gw_djob *dj);
struct gw_train *gw_train_free(struct gw_train *t); /* accepts NULL, returns NULL */
/* The run the idle watch chose for a job's attempt (gw_training_results_chosen), kept by job
 * id in d->state.train_pick: the training watch then reads the same run. */
struct gw_train_pick {
        int attempt;
        gw_usec_t start_time;
        char *path; /* NULL: none found, at none_at */
        gw_usec_t none_at; /* the loop iteration (d->now) whose look at the attempt's end found no run */
};
void gw_train_pick_free(struct gw_train_pick *w); /* accepts NULL */
/* The attempt's end found no run of its (gw_training_attempt_ended): the later hooks of the
 * same end (a retry's resume) take that answer instead of reading its log again. */
void gw_training_results_none(struct gw_daemon *d, const struct gw_djob *dj);

/* Whether results (RUN/results.csv) is the run of another live job of d than j. */
bool gw_train_results_taken(const struct gw_daemon *d, const struct gw_job *j, const char *results);
/* j's run as core/yolo_run.h reads it from its command, cwd and retry checkpoint, and with_log
 * from the head of its own log of this attempt too.  0 or -errno. */
int gw_train_resolve_run(const struct gw_job *j, bool with_log, struct gw_yolo_run *ret);
/* Whether another live job of d, running or waiting to be retried, could have made the run
 * folder dir by what its own command says: then a run its command names among others
 * (NAME, NAME2 ...) is not credited to j. */
bool gw_train_others_could_own(const struct gw_daemon *d, const struct gw_job *j, const char *dir);

/* training_snap.c */
/* Watches weights/last.pt and best.pt of the run; starts, advances and finishes copies. */
void gw_train_snap_step(struct gw_daemon *d, struct gw_djob *dj, struct gw_train *t, gw_usec_t now);
void gw_train_copy_abort(struct gw_train *t);
/* The caps (snapshot_cap over all, snapshot_cap_user over each user's): the oldest copies go
 * first, each job's newest best.pt last; for uid's copies (every user's when uid < 0), with
 * room made for incoming more bytes of uid's. */
void gw_train_snap_enforce_caps(struct gw_daemon *d, int64_t uid, uint64_t incoming);
/* Once a minute from the sample loop: the cap, also when no job copies anything. */
void gw_train_snap_housekeeping(struct gw_daemon *d, gw_usec_t mono_now);
/* Whether last.pt (and best.pt when there is one) stayed the same for a sample and last.pt
 * is newer than the newest results.csv row: the run just saved its checkpoint. */
bool gw_train_ckpt_settled(const struct gw_train *t);
/* The newest kept snapshot of each kind, for `gpuward show`: {"best": {...}|null, "last": ...}. */
json_t *gw_train_snapshots_summary(struct gw_daemon *d, int64_t job_id);

/* training_predict.c: the run time a queued job is expected to take. */
#define GW_TRAIN_RUNTIME_BASIS 20
struct gw_train_runtime {
        gw_usec_t median; /* 0 without similar jobs */
        size_t n; /* similar completed jobs, newest first */
        int64_t ids[GW_TRAIN_RUNTIME_BASIS];
        gw_usec_t runs[GW_TRAIN_RUNTIME_BASIS];
};
/* 0 with *ret (n may be 0), or -EINVAL when the command gives no key. */
int gw_training_runtime(struct gw_daemon *d, const struct gw_job *j, struct gw_train_runtime *ret);
/* Predicts the queued jobs now when j is pending and no prediction covered it yet (just
 * submitted, or back from a failure into its backoff) and that is cheap: none ran within
 * 250 ms and no job started within 100 ms.  For GET /api/v1/jobs/{id}/eta, so that asking
 * right after a submission gets a start, not "not predicted yet". */
void gw_training_predict_unseen(struct gw_daemon *d, const struct gw_job *j);

/* training_api.c */
json_t *gw_train_eta_json(const struct gw_train *t, gw_usec_t now);
json_t *gw_train_leak_json(const struct gw_job *j, const struct gw_train *t);
/* When the epochs of j's current attempt ended (Unix seconds, oldest first): the watch's
 * while it runs, else the store's.  A new array, or NULL when none are known. */
json_t *gw_train_epoch_ends_json(struct gw_daemon *d, const struct gw_job *j);
