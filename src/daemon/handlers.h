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
struct caller {
        bool bad_token;  /* a bearer token was given and is not valid: why says how */
        bool known;
        bool admin;
        bool guest;      /* known, and listed in --guests (never also admin) */
        bool agent;      /* by a node agent's token (never also admin): token_id says which */
        bool ci;         /* by a CI runner's token (never also admin): its own jobs only */
        bool models;     /* by a models reader's token (never also admin): published models only */
        int64_t token_id;
        char node[65];   /* agent: the node its token is bound to; "" none (a token from before) */
        uid_t uid;
        gid_t gid;
        char user[64];
        char why[192];
};

/* "admin", "user" or "guest" (unknown callers are guests too). */
const char *caller_role(const struct caller *c);
/* Whether an account would be an admin when it calls (root, the daemon's own user, or named
 * in admins, by name or @group): whose limits `gpuward quota --user` shows. */
bool account_is_admin(struct gw_daemon *d, uid_t uid, gid_t gid, const char *user);

/* Every route's handler: the handlers below are declared by this type. */
typedef void handler(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                     struct gw_http_reply *rep, const struct caller *c);
typedef handler *handler_fn;

struct gw_daemon *the_daemon(void *userdata);
void reply_json(struct gw_http_reply *rep, int status, json_t *o);       /* steals o */
void reply_error(struct gw_http_reply *rep, int status, const char *field, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* 507 (disk full) or 503 (read-only, I/O error) with why the store refused the last write:
 * "WHAT: the state in DIR cannot be written (the disk is full): ...". */
void reply_store_error(struct gw_daemon *d, struct gw_http_reply *rep, const char *what);
json_t *parse_body(const struct gw_http_request *req, struct gw_http_reply *rep); /* NULL after a 400 */
/* A small body's check: no key but the n fields (what: "a drain", for the message), and the
 * string field key, if not NULL, read into *ret (NULL when absent; points into o).  0, or
 * -EINVAL after a 400 naming the field. */
int body_check(const json_t *o, const char *const *fields, size_t n, const char *what, const char *key,
               const char **ret, struct gw_http_reply *rep);
bool may_touch(const struct caller *c, const struct gw_job *j);
/* What the caller may see of j (GW_VIEW_*): all for its owner and admins; its details but
 * not what it quotes from its log for other users; neither for guests unless the config's
 * guest_job_details says so. */
unsigned job_view(const struct gw_daemon *d, const struct caller *c, const struct gw_job *j);
/* Whether the caller sees command lines (jobs', and of the processes on GPUs): not guests,
 * unless guest_job_details. */
bool sees_details(const struct gw_daemon *d, const struct caller *c);
/* training_api.c: sets the paths into a job's directory (a training's results_csv, a snapshot's source) in
 * o, at any depth, to null: for readers who do not see the job's directory. */
void hide_paths(json_t *o);
/* The job, or NULL after replying 404 (no such job) or 403 (action given and the caller is
 * neither its owner nor an admin; action completes "only they or an admin may ..."). */
const struct gw_job *job_or_reply(struct gw_daemon *d, int64_t id, const struct caller *c, const char *action,
                                  struct gw_http_reply *rep, struct gw_job **tmp);

/* handlers_submit.c: POST /api/v1/jobs and /api/v1/jobs/batch. */
handler on_submit;
handler on_submit_batch;
/* handlers_list.c: GET /api/v1/jobs. */
handler on_list;
/* handlers_feature.c: the features' own endpoints, each a plain call into the feature.
 * POST /api/v1/admin/backup, answered when the copy is written (backup.c). */
handler on_backup;
/* POST /api/v1/jobs/{id}/policy {"idle_policy": NAME} (admins): an active job's idle profile
 * (reclaim_policy.c). */
handler on_job_policy;
/* GET /api/v1/jobs/{id}/eta, GET .../snapshots, POST .../restore {"snapshot": N, "to":
 * "/abs/path", "force": false} (the job's owner or an admin): training_*.c. */
handler on_job_eta;
handler on_job_snapshots;
handler on_job_restore;
/* GET /api/v1/events: the dashboard's stream (events.c). */
handler on_events;

/* handlers_gpu.c */
handler on_gpus;
handler on_gpu_drain;
/* GET /api/v1/gpus/{index}/events and /api/v1/gpus/events: the GPUs' own events. */
handler on_gpu_events;
handler on_series;
handler on_metrics;
handler on_ready;

/* handlers_nodes.c: POST /api/v1/agent/snapshot, a node agent's snapshot (--backend slurm). */
handler on_agent_snapshot;

/* handlers_models.c: GET /api/v1/models, /api/v1/models/NAME, /api/v1/models/NAME/latest
 * (or /vN: its manifest) and /api/v1/models/NAME/vN/FILE (publish_api.c). */
handler on_models;
handler on_model;
handler on_model_version;
handler on_model_file;

/* handlers_self.c: the daemon's health (and its state disk's free room), and who the caller
 * is, how it was told apart, and the time limits a submission gets. */
handler on_health;
handler on_whoami;

/* handlers_usage.c: GPU-hours, utilisation and outcomes per user over ?days=N (1-90, 7). */
handler on_usage;

/* handlers_share.c: bookings, the schedule, quotas; handlers_token.c: tokens. */
handler on_booking_create;
handler on_booking_list;
handler on_booking_change;
handler on_schedule;
handler on_quota;
handler on_quota_set;
handler on_token_create;
handler on_token_list;
handler on_token_revoke;
/* Whom a valid bearer token stands for. */
struct gw_token_caller {
        int64_t id;
        uint32_t uid;
        char user[64];
        bool agent; /* scope agent: it may only post node snapshots */
        bool ci;    /* scope ci: it may only submit jobs and read its own */
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
bool gw_api_rate_limited(struct gw_daemon *d, const struct caller *c, struct gw_http_reply *rep);
/* The same for n submissions at once (a batch), all or none. */
bool gw_api_rate_limited_n(struct gw_daemon *d, const struct caller *c, int64_t n, struct gw_http_reply *rep);
/* Gives back what gw_api_rate_limited_n took for a request refused after all. */
void gw_api_rate_undo(struct gw_daemon *d, const struct caller *c, int64_t n);
/* handlers_slurm.c: adds "slurm_job" and "node" to each attempt (of gw_codec_attempts) that
 * was handed to Slurm, from the job's events ev (node null until Slurm told one). */
void slurm_attempts_annotate(json_t *attempts, const struct gw_job_event *ev, size_t n);
