/* The features' own endpoints: each handler decodes the request, calls the feature's plain
 * function and encodes what came back, so that the features hold no HTTP code.  An idle
 * job's profile (reclaim_policy.c), a training's ETA, snapshots and their restore
 * (training_*.c), an admin's backup (backup.c) and the dashboard's event stream (events.c). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "api/codec.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/cache/cache.h"
#include "daemon/http/handlers.h"
#include "daemon/http/web.h"
#include "daemon/backup/backup.h"
#include "daemon/life/queue.h"
#include "daemon/reclaim/reclaim_watch.h"
#include "daemon/training/training.h"
#include "store/backup.h"

void gw_on_job_policy(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                      struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        json_t *o = gw_parse_body(req, rep);
        if (!o)
                return;
        static const char *const fields[] = { "idle_policy" };
        const char *v;
        if (gw_body_check(o, fields, ELEMENTSOF(fields), "a policy change", "idle_policy", &v, rep) < 0) {
                json_decref(o);
                return;
        }
        char name[GW_RECLAIM_NAME_MAX + 1];
        snprintf(name, sizeof name, "%s", v ? v : "");
        bool ok = v && strlen(v) < sizeof name;
        json_decref(o);
        if (!ok)
                return gw_reply_error(rep, 400, "idle_policy", "idle_policy: a profile name is required");
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *found = gw_job_or_reply(d, ctx->id, c, "change its idle policy", rep, &tmp);
        if (!found)
                return;
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, ctx->id);
        if (!dj)
                return gw_reply_error(rep, 409, "id", "job %lld already ended (%s)", (long long) found->id,
                                      gw_job_state_name(found->state));
        char why[1024];
        int status = gw_reclaim_policy_set(d, dj, name, c->user, why, sizeof why);
        if (status)
                return gw_reply_error(rep, status, status == 400 ? "idle_policy" : NULL, "%s", why);
        gw_reply_json(rep, 200, gw_codec_job(dj->job, gw_job_view(d, c, dj->job)));
}

void gw_on_job_eta(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                   struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *j = gw_job_or_reply(d, ctx->id, c, NULL, rep, &tmp);
        if (!j)
                return;
        gw_reply_json(rep, 200, gw_training_eta_reply(d, j, gw_job_view(d, c, j) & GW_VIEW_DETAILS));
}

void gw_on_job_snapshots(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                         struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *j = gw_job_or_reply(d, ctx->id, c, NULL, rep, &tmp);
        if (!j)
                return;
        const char *all = gw_http_query(req, "all");
        json_t *arr = gw_train_snapshots_json(d, j->id, all && strcmp(all, "0"));
        if (!arr)
                return gw_reply_error(rep, 503, NULL, "cannot read the snapshots: %s", gw_store_errmsg(d->store));
        if (!(gw_job_view(d, c, j) & GW_VIEW_DETAILS))
                gw_hide_paths(arr);
        gw_reply_json(rep, 200, json_pack("{s:I,s:o}", "id", (json_int_t) j->id, "snapshots", arr));
}

void gw_on_job_restore(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                       struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        char why[4400];
        /* Answered after the helper's end (the caller was checked when the request came). */
        if (req->resumed) {
                int seq = 0;
                char to[4200];
                int status = gw_train_restore_take(d, req->conn, &seq, to, sizeof to, why, sizeof why);
                if (status == 200)
                        gw_reply_json(rep, 200,
                                      json_pack("{s:I,s:i,s:o,s:o}", "id", (json_int_t) ctx->id, "snapshot", seq, "to",
                                                gw_json_text(to), "message", gw_json_text(why)));
                else if (status > 0)
                        gw_reply_error(rep, status, "to", "%s", why);
                else
                        gw_reply_error(rep, 500, NULL, "the restore's outcome was lost: see gpuward show %lld",
                                       (long long) ctx->id);
                return;
        }
        const struct gw_job *j = gw_job_or_reply(d, ctx->id, c, "restore its snapshots", rep, &tmp);
        if (!j)
                return;
        json_t *o = gw_parse_body(req, rep);
        if (!o)
                return;
        const json_t *snap = json_object_get(o, "snapshot"), *to = json_object_get(o, "to"),
                     *force = json_object_get(o, "force");
        const char *path = json_string_value(to);
        if (!json_is_integer(snap) || json_integer_value(snap) < 1 || json_integer_value(snap) > 1000000000) {
                json_decref(o);
                return gw_reply_error(rep, 400, "snapshot",
                                      "snapshot: must be a snapshot number (gpuward snapshots %lld)",
                                      (long long) j->id);
        }
        if (!path || path[0] != '/' || json_string_length(to) != strlen(path) || strlen(path) >= 4096) {
                json_decref(o);
                return gw_reply_error(rep, 400, "to", "to: must be an absolute path");
        }
        if (force && !json_is_boolean(force) && !json_is_null(force)) {
                json_decref(o);
                return gw_reply_error(rep, 400, "force", "force: must be true or false");
        }
        int seq = (int) json_integer_value(snap);
        /* Answered when the helper is done (gw_train_restore_reaped resumes the request). */
        int r = gw_train_restore_start(d, j, seq, path, json_is_true(force), req->conn, why, sizeof why);
        if (r == 0)
                rep->suspend = true;
        else
                gw_reply_error(rep, r == -ENOENT ? 404 : 500, r == -ENOENT ? "snapshot" : NULL, "%s", why);
        json_decref(o);
}

/* The path an admin named: absolute, not there yet, in a folder that is.  0, or -EINVAL
 * after a 400 naming the field. */
static int path_check(const char *path, struct gw_http_reply *rep) {
        struct stat st;
        if (!path || !*path)
                return gw_reply_error(rep, 400, "path", "path: required, the file to write the copy to"), -EINVAL;
        if (path[0] != '/' || strlen(path) > 4000)
                return gw_reply_error(rep, 400, "path", "path: '%.200s' is not an absolute path (under 4000 bytes)",
                                      path),
                       -EINVAL;
        if (lstat(path, &st) == 0)
                return gw_reply_error(rep, 400, "path", "path: %.200s exists; a backup never replaces a file", path),
                       -EINVAL;
        char copy[4096];
        snprintf(copy, sizeof copy, "%s", path);
        const char *dir = dirname(copy);
        if (stat(dir, &st) < 0)
                return gw_reply_error(rep, 400, "path", "path: the folder %.200s does not exist (%s)", dir,
                                      strerror(errno)),
                       -EINVAL;
        if (!S_ISDIR(st.st_mode))
                return gw_reply_error(rep, 400, "path", "path: %.200s is not a folder", dir), -EINVAL;
        return 0;
}

/* With a model store, the copy of it goes to path.models: not there yet either. */
static int models_path_check(struct gw_daemon *d, const char *path, struct gw_http_reply *rep) {
        struct stat st;
        char models[4200];
        if (!d->cfg->model_store || !*d->cfg->model_store)
                return 0;
        snprintf(models, sizeof models, "%s" GW_BACKUP_MODELS_SUFFIX, path);
        if (lstat(models, &st) == 0)
                return gw_reply_error(rep, 400, "path",
                                      "path: %.200s exists; the model store is copied there and a backup never "
                                      "replaces a file",
                                      models),
                       -EINVAL;
        return 0;
}

void gw_on_backup(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                  struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        (void) ctx;
        char why[1024];
        if (req->resumed) {
                struct gw_backup_result res = { 0 };
                int status = gw_backup_answer(d, req->conn, &res, why, sizeof why);
                if (status != 200) {
                        gw_reply_error(rep, status, status == 400 ? "path" : NULL, "%s", why);
                        return;
                }
                json_t *models = res.models[0] ? json_pack("{s:s, s:I, s:I}", "path", res.models, "versions",
                                                           (json_int_t) res.model_versions, "bytes",
                                                           (json_int_t) res.model_bytes)
                                               : json_null();
                gw_reply_json(rep, 200,
                              json_pack("{s:s, s:I, s:i, s:o}", "path", res.path, "bytes", (json_int_t) res.bytes,
                                        "schema", gw_store_schema_version(), "models", models));
                return;
        }
        json_t *o = gw_parse_body(req, rep);
        if (!o)
                return;
        static const char *const fields[] = { "path" };
        const char *path = NULL;
        if (gw_body_check(o, fields, ELEMENTSOF(fields), "a backup", "path", &path, rep) < 0 ||
            path_check(path, rep) < 0 || models_path_check(d, path, rep) < 0)
                return json_decref(o);
        int status = gw_backup_request(d, path, req->conn, why, sizeof why);
        if (status) {
                gw_reply_error(rep, status, status == 400 ? "path" : NULL, "%s", why);
                return json_decref(o);
        }
        log_info("backup to %s asked by %s", path, c->user);
        json_decref(o);
        rep->suspend = true;
}

void gw_on_events(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                  struct gw_http_reply *rep, const struct gw_caller *caller) {
        struct gw_daemon *d = gw_the_daemon(ud);
        const char *last = gw_http_header(req, "Last-Event-ID");
        if (!last)
                last = gw_http_query(req, "last_event_id");
        const struct gw_events_reader who = { .admin = caller->admin,
                                              .known = caller->known,
                                              .uid = caller->uid,
                                              .user = caller->user };
        char why[256];
        int status = gw_events_attach(d, &who, last, req->conn, rep, why, sizeof why);
        if (status == 429)
                gw_http_reply_header(rep, "Retry-After", "5");
        if (status)
                gw_reply_error(rep, status, NULL, "%s", why);
}

/* GET /api/v1/cache: the dataset cache's entries, an admin's all, a user's those their jobs
 * used. */
void gw_on_cache(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx, struct gw_http_reply *rep,
                 const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        (void) req, (void) ctx;
        _cleanup_free_ struct gw_cache_row *rows = NULL;
        size_t n = gw_cache_rows(d, c->known ? c->user : "", c->admin, &rows);
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
                json_t *users = json_array();
                for (size_t u = 0; u < rows[i].n_users; u++)
                        json_array_append_new(users, json_string(rows[i].users[u]));
                json_array_append_new(
                        a, json_pack("{s:s, s:I, s:I, s:i, s:o, s:o, s:b, s:b}", "source", rows[i].source, "size",
                                     (json_int_t) rows[i].size, "files", (json_int_t) rows[i].files, "version",
                                     rows[i].version, "last_use",
                                     rows[i].last_use ? json_real((double) rows[i].last_use / 1e6) : json_null(),
                                     "users", users, "in_use", rows[i].in_use, "staging", rows[i].staging));
        }
        gw_reply_json(rep, 200,
                      json_pack("{s:o, s:I, s:o}", "cache_dir",
                                d->cfg->cache_dir && *d->cfg->cache_dir && c->admin ? json_string(d->cfg->cache_dir)
                                                                                    : json_null(),
                                "cache_size", (json_int_t) d->cfg->cache_size, "entries", a));
}
