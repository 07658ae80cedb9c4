/* What the API handlers share; the route table is in handlers.c. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "api/http.h"
#include "api/route.h"
#include "daemon/daemon.h"

/* Who is calling: from SO_PEERCRED on the Unix socket, from a bearer token over TCP; a
 * caller with neither is unknown (an anonymous guest).  Roles come from the config: admin
 * (root, --admins), guest (--guests: read-only), else user. */
struct gw_caller {
        bool bad_token; /* a bearer token was given and is not valid: why says how */
        bool known;
        bool admin;
        bool guest; /* known, and listed in --guests (never also admin) */
        bool agent; /* by a node agent's token (never also admin): token_id says which */
        bool ci; /* by a CI runner's token (never also admin): its own jobs only */
        bool models; /* by a models reader's token (never also admin): published models only */
        int64_t token_id;
        char node[65]; /* agent: the node its token is bound to; "" none (a token from before) */
        uid_t uid;
        gid_t gid;
        char user[64];
        char why[192];
};

/* "admin", "user" or "guest" (unknown callers are guests too). */
const char *gw_caller_role(const struct gw_caller *c);
/* Whether an account would be an admin when it calls (root, the daemon's own user, or named
 * in admins, by name or @group): whose limits `gpuward quota --user` shows. */
bool gw_account_is_admin(struct gw_daemon *d, uid_t uid, gid_t gid, const char *user);

/* Every route's handler: the handlers below are declared by this type. */
typedef void gw_handler(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                        struct gw_http_reply *rep, const struct gw_caller *c);
typedef gw_handler *gw_handler_fn;

struct gw_daemon *gw_the_daemon(void *userdata);
void gw_reply_json(struct gw_http_reply *rep, int status, json_t *o); /* steals o */
void gw_reply_error(struct gw_http_reply *rep, int status, const char *field, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* 507 (disk full) or 503 (read-only, I/O error) with why the store refused the last write:
 * "WHAT: the state in DIR cannot be written (the disk is full): ...". */
void gw_reply_store_error(struct gw_daemon *d, struct gw_http_reply *rep, const char *what);
json_t *gw_parse_body(const struct gw_http_request *req, struct gw_http_reply *rep); /* NULL after a 400 */
/* A small body's check: no key but the n fields (what: "a drain", for the message), and the
 * string field key, if not NULL, read into *ret (NULL when absent; points into o).  0, or
 * -EINVAL after a 400 naming the field. */
int gw_body_check(const json_t *o, const char *const *fields, size_t n, const char *what, const char *key,
                  const char **ret, struct gw_http_reply *rep);
bool gw_may_touch(const struct gw_caller *c, const struct gw_job *j);
/* What the caller may see of j (GW_VIEW_*): all for its owner and admins; its details but
 * not what it quotes from its log for other users; neither for guests unless the config's
 * guest_job_details says so. */
unsigned gw_job_view(const struct gw_daemon *d, const struct gw_caller *c, const struct gw_job *j);
/* Whether the caller sees command lines (jobs', and of the processes on GPUs): not guests,
 * unless guest_job_details. */
bool gw_sees_details(const struct gw_daemon *d, const struct gw_caller *c);
/* training_api.c: sets the paths into a job's directory (a training's results_csv, a snapshot's source) in
 * o, at any depth, to null: for readers who do not see the job's directory. */
void gw_hide_paths(json_t *o);
/* The job, or NULL after replying 404 (no such job) or 403 (action given and the caller is
 * neither its owner nor an admin; action completes "only they or an admin may ..."). */
const struct gw_job *gw_job_or_reply(struct gw_daemon *d, int64_t id, const struct gw_caller *c, const char *action,
                                     struct gw_http_reply *rep, struct gw_job **tmp);

/* handlers_submit.c: POST /api/v1/jobs and /api/v1/jobs/batch. */
gw_handler gw_on_submit;
gw_handler gw_on_submit_batch;
/* handlers_list.c: GET /api/v1/jobs. */
gw_handler gw_on_list;
/* handlers_feature.c: the features' own endpoints, each a plain call into the feature.
 * POST /api/v1/admin/backup, answered when the copy is written (backup.c). */
gw_handler gw_on_backup;
/* POST /api/v1/jobs/{id}/policy {"idle_policy": NAME} (admins): an active job's idle profile
 * (reclaim_policy.c). */
gw_handler gw_on_job_policy;
/* GET /api/v1/jobs/{id}/eta, GET .../snapshots, POST .../restore {"snapshot": N, "to":
 * "/abs/path", "force": false} (the job's owner or an admin): training_*.c. */
gw_handler gw_on_job_eta;
gw_handler gw_on_job_snapshots;
gw_handler gw_on_job_restore;
/* GET /api/v1/events: the dashboard's stream (events.c). */
gw_handler gw_on_events;

/* handlers_gpu.c */
gw_handler gw_on_gpus;
gw_handler gw_on_gpu_drain;
/* GET /api/v1/gpus/{index}/events and /api/v1/gpus/events: the GPUs' own events. */
gw_handler gw_on_gpu_events;
gw_handler gw_on_series;
gw_handler gw_on_metrics;
gw_handler gw_on_ready;

/* handlers_nodes.c: POST /api/v1/agent/snapshot, a node agent's snapshot (--backend slurm). */
gw_handler gw_on_agent_snapshot;

/* handlers_models.c: GET /api/v1/models, /api/v1/models/NAME, /api/v1/models/NAME/latest
 * (or /vN: its manifest) and /api/v1/models/NAME/vN/FILE (publish_api.c). */
gw_handler gw_on_models;
gw_handler gw_on_model;
gw_handler gw_on_model_version;
gw_handler gw_on_model_file;

/* handlers_self.c: the daemon's health (and its state disk's free room), and who the caller
 * is, how it was told apart, and the time limits a submission gets. */
gw_handler gw_on_health;
gw_handler gw_on_whoami;

/* handlers_usage.c: GPU-hours, utilisation and outcomes per user over ?days=N (1-90, 7). */
gw_handler gw_on_usage;
gw_handler gw_on_cache;

/* handlers_share.c: bookings, the schedule, quotas; handlers_token.c: tokens. */
gw_handler gw_on_booking_create;
gw_handler gw_on_booking_list;
gw_handler gw_on_booking_change;
gw_handler gw_on_schedule;
gw_handler gw_on_quota;
gw_handler gw_on_quota_set;
gw_handler gw_on_token_create;
gw_handler gw_on_token_list;
gw_handler gw_on_token_revoke;
/* Whom a valid bearer token stands for. */
struct gw_token_caller {
        int64_t id;
        uint32_t uid;
        char user[64];
        bool agent; /* scope agent: it may only post node snapshots */
        bool ci; /* scope ci: it may only submit jobs and read its own */
        bool models; /* scope models: it may only read the published models */
        char node[65]; /* agent: the node whose snapshots it may post; "" none (made before) */
};
/* 0 with the token's owner in *ret; -EINVAL malformed, -EPERM unknown or revoked,
 * -EKEYEXPIRED expired, with the reason as one line in why ("token 3 expired at ..."). */
int gw_api_token_check(struct gw_daemon *d, const char *header, struct gw_token_caller *ret, char *why,
                       size_t why_size);
/* Why a CI runner's token (token id) is refused on a route not marked GW_ROUTE_CI. */
void gw_api_token_ci_refusal(int64_t id, char *why, size_t why_size);
/* Why a models reader's token (token id) is refused on a route not marked GW_ROUTE_MODELS. */
void gw_api_token_models_refusal(int64_t id, char *why, size_t why_size);
/* Why an agent's token (token id) is refused anywhere but the node snapshot route. */
void gw_api_token_agent_refusal(int64_t id, char *why, size_t why_size);
/* Replies 429 with Retry-After and returns true when the caller is over its rate. */
bool gw_api_rate_limited(struct gw_daemon *d, const struct gw_caller *c, struct gw_http_reply *rep);
/* The same for n submissions at once (a batch), all or none. */
bool gw_api_rate_limited_n(struct gw_daemon *d, const struct gw_caller *c, int64_t n, struct gw_http_reply *rep);
/* Gives back what gw_api_rate_limited_n took for a request refused after all. */
void gw_api_rate_undo(struct gw_daemon *d, const struct gw_caller *c, int64_t n);
/* handlers_slurm.c: adds "slurm_job" and "node" to each attempt (of gw_codec_attempts) that
 * was handed to Slurm, from the job's events ev (node null until Slurm told one). */
void gw_slurm_attempts_annotate(json_t *attempts, const struct gw_job_event *ev, size_t n);
