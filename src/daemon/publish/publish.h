/* Publishing a completed job's run as a model (submit --publish NAME): the daemon copies the
 * run's weights/best.pt, results.csv and args.yaml into the admin's model store (model_store)
 * as NAME/vN/ with a manifest.json, off the loop, and records how it went as an event of the
 * job ("published", which webhooks send as model.published, or "not_published" with why).
 * publish.c is the loop's side (the hook, the queue, the events), publish_copy.c the copy a
 * thread makes, publish_api.c what the API reads back (the listings, a manifest, a file). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "daemon/daemon.h"

/* A submission check: --publish needs a model store. */
int gw_publish_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err);
/* GW_HOOK_JOB_ENDED: a job that completed with --publish is queued for its copy. */
void gw_publish_job_ended(struct gw_daemon *d, struct gw_djob *dj);
/* Ends a finished copy (its event written) and starts the next; the next deadline (monotonic). */
gw_usec_t gw_publish_tick(struct gw_daemon *d);
/* At shutdown: waits for the copy under way; the queued ones are not made (logged). */
void gw_publish_close(struct gw_daemon *d);

/* ---- publish_api.c: the store as the API shows it.  Each returns an HTTP status: 200 with
 * *ret (a new reference), or an error status with why (field in *ret_field, NULL none). */
int gw_publish_models_json(struct gw_daemon *d, json_t **ret, char *why, size_t n);
int gw_publish_model_json(struct gw_daemon *d, const char *name, json_t **ret, const char **ret_field, char *why,
                          size_t n);
/* version: "latest" or "vN". */
int gw_publish_manifest_json(struct gw_daemon *d, const char *name, const char *version, json_t **ret,
                             const char **ret_field, char *why, size_t n);
/* A file the version's manifest lists, opened read-only: *ret_fd (the caller's) and its size. */
int gw_publish_file_open(struct gw_daemon *d, const char *name, const char *version, const char *file, int *ret_fd,
                         uint64_t *ret_size, const char **ret_field, char *why, size_t n);

/* ---- publish_copy.c: one publication, made by a thread; nothing of the daemon is touched. */
enum gw_pub_outcome { GW_PUB_PUBLISHED, GW_PUB_NOT_PUBLISHED };

struct gw_pub_task {
        /* what the loop hands over (owned by the task) */
        int64_t job_id;
        uid_t uid; /* the run's files must be this user's */
        char *user, *name, *metric; /* metric: --publish-if-better's, NULL none */
        char *run_dir, *store, *commit; /* commit: CI_COMMIT_SHA or GITHUB_SHA, NULL none */
        int64_t time; /* wall clock, Unix µs: the manifest's time */
        /* what the thread says */
        enum gw_pub_outcome outcome;
        long version; /* published as vN */
        char msg[1024]; /* the event's message */
};

/* Makes the publication t asks for and fills its outcome, version and message.  Blocking file
 * work: call it off the loop. */
void gw_publish_run(struct gw_pub_task *t);
/* The model store's folder of name, opened (O_DIRECTORY) from the store; made when create.
 * The store itself must be a folder of gpuwardd's user that no one else may write to.  A
 * descriptor, or -errno with why. */
int gw_publish_open_model(const char *store, const char *name, bool create, char *why, size_t n);
/* The highest N of name's folder vN in dirfd (0: none). */
long gw_publish_latest(int dirfd);
/* The manifest.json of version v in dirfd, parsed; NULL when unreadable. */
json_t *gw_publish_read_manifest(int dirfd, long v);
