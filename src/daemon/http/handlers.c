/* The API's route table and handlers.  Rights come from the route flags and the caller's
 * kernel-verified identity, in one place (api_handle), for both doors. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/codec.h"
#include "api/route.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "core/waitwhy.h"
#include "daemon/agent/agent.h"
#include "daemon/daemon.h"
#include "daemon/http/handlers.h"
#include "daemon/life/jobarray.h"
#include "daemon/base/userfile.h"
#include "daemon/http/web.h"
#include "daemon/backup/backup.h"
#include "daemon/base/jobclock.h"
#include "daemon/http/api.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"
#include "daemon/observe/observe.h"
#include "daemon/training/training.h"

#define LOG_CHUNK_MAX (1u << 20)

struct gw_daemon *gw_the_daemon(void *userdata) {
        return userdata;
}

void gw_reply_json(struct gw_http_reply *rep, int status, json_t *o) {
        size_t len;
        char *body = gw_codec_dump(o, &len);
        gw_http_reply_text(rep, status, "application/json", body, len);
}

void gw_reply_error(struct gw_http_reply *rep, int status, const char *field, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        size_t len;
        char *body = gw_codec_error_body(field, msg, &len);
        gw_http_reply_text(rep, status, "application/json", body, len);
}

/* 0 if a byte can be written to a new file in dir, else the errno that refused it. */
static int state_dir_write_errno(const char *dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/.write-probe", dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return errno;
        int e = write(fd, "x", 1) == 1 ? 0 : errno;
        if (e == 0 && fsync(fd) < 0)
                e = errno;
        (void) close(fd);
        (void) unlink(path);
        return e;
}

void gw_reply_store_error(struct gw_daemon *d, struct gw_http_reply *rep, const char *what) {
        int kind = gw_store_error_kind(d->store);
        /* SQLite reports a write refused by a read-only or full file system as a plain I/O
         * error when it lost the errno on the way: a probe write in the state dir says which
         * (ext4's emergency read-only state does not even show in statvfs). */
        if (kind == -EIO) {
                int e = state_dir_write_errno(d->cfg->state_dir);
                if (e == EROFS || e == ENOSPC)
                        kind = -e;
        }
        const char *why = kind == -ENOSPC  ? "the disk is full"
                          : kind == -EROFS ? "the file system is read-only"
                          : kind == -EIO   ? "an I/O error"
                          : kind == -EBUSY ? "the database is locked"
                                           : "a database error";
        /* 507 Insufficient Storage when space is what is missing; 503 for the rest, which an
         * operator fixes (a read-only remount, a failing disk) and the client retries. */
        gw_reply_error(rep, kind == -ENOSPC ? 507 : 503, NULL,
                       "%s: the state in %s cannot be written (%s): %s; reads still work", what, d->cfg->state_dir, why,
                       gw_store_errmsg(d->store));
}

/* Whether a role list of the config ("alice, @gpuadmin") names the caller or a group of
 * theirs. */
static bool role_list_has(struct gw_daemon *d, const char *list, const struct gw_caller *c) {
        return gw_userdb_list_has(d->users, list, c->user, c->uid, c->gid, d->now);
}

const char *gw_caller_role(const struct gw_caller *c) {
        return c->admin ? "admin" : c->known && !c->guest ? "user" : "guest";
}

static void set_role(struct gw_daemon *d, struct gw_caller *c, bool owner) {
        c->admin = c->uid == 0 || owner || role_list_has(d, d->cfg->admins, c);
        c->guest = !c->admin && role_list_has(d, d->cfg->guests, c);
}

bool gw_account_is_admin(struct gw_daemon *d, uid_t uid, gid_t gid, const char *user) {
        /* as identify() judges them on the Unix socket */
        return gw_userdb_is_admin(d->users, d->cfg->admins, geteuid(), uid, gid, user, d->now);
}

static void identify(struct gw_daemon *d, const struct gw_http_request *req, struct gw_caller *c) {
        memset(c, 0, sizeof *c);
        const char *auth = req->unix_door ? NULL : gw_http_header(req, "Authorization");
        char cookie_auth[128]; /* the web page's sign-in (web_session.c) */
        bool from_cookie = !auth && gw_web_session_auth(req, cookie_auth, sizeof cookie_auth) == 0;
        if (from_cookie)
                auth = cookie_auth;
        if (auth) {
                struct gw_token_caller t;
                if (gw_api_token_check(d, auth, &t, c->why, sizeof c->why) < 0) {
                        c->bad_token = !from_cookie; /* a stale cookie makes a guest, not an error */
                        return;
                }
                const struct gw_account *a = gw_userdb_uid(d->users, t.uid, d->now);
                c->known = true;
                c->uid = t.uid;
                c->gid = a ? a->gid : (gid_t) t.uid;
                c->token_id = t.id;
                snprintf(c->user, sizeof c->user, "%s", t.user);
                /* An agent's token carries none of its maker's rights: only the routes marked
                 * for agents take it (gw_api_handle). */
                c->agent = t.agent;
                snprintf(c->node, sizeof c->node, "%s", t.node);
                if (!c->agent)
                        set_role(d, c, false);
                /* A CI runner's token is kept in a CI system's secrets: it acts on its own
                 * jobs, never with its maker's admin rights. */
                c->ci = t.ci;
                c->models = t.models;
                if (c->ci || c->models)
                        c->admin = false;
                return;
        }
        if (!req->unix_door || !req->has_cred)
                return;
        c->known = true;
        c->uid = req->uid;
        c->gid = req->gid;
        const struct gw_account *a = gw_userdb_uid(d->users, req->uid, d->now);
        if (a)
                snprintf(c->user, sizeof c->user, "%s", a->name);
        else
                snprintf(c->user, sizeof c->user, "%u", (unsigned) req->uid);
        /* The daemon's own user runs it, so it may do what an admin may. */
        set_role(d, c, req->uid == geteuid());
}

bool gw_may_touch(const struct gw_caller *c, const struct gw_job *j) {
        /* The name too: a deleted user's uid may be another account's now. */
        return c->admin || (c->known && c->uid == j->uid && !strcmp(c->user, j->user ? j->user : ""));
}

bool gw_sees_details(const struct gw_daemon *d, const struct gw_caller *c) {
        /* Arguments often carry secrets: a reader nobody vouches for is not shown them. */
        bool guest = !c->known || c->guest;
        return !guest || d->cfg->guest_job_details;
}

unsigned gw_job_view(const struct gw_daemon *d, const struct gw_caller *c, const struct gw_job *j) {
        if (gw_may_touch(c, j))
                return GW_VIEW_ALL;
        return gw_sees_details(d, c) ? GW_VIEW_DETAILS : 0;
}

const struct gw_job *gw_job_or_reply(struct gw_daemon *d, int64_t id, const struct gw_caller *c, const char *action,
                                     struct gw_http_reply *rep, struct gw_job **tmp) {
        const struct gw_job *j = gw_job_lookup(d, id, tmp);
        if (!j) {
                gw_reply_error(rep, 404, "id", "no job %lld", (long long) id);
                return NULL;
        }
        if (action && !gw_may_touch(c, j)) {
                gw_reply_error(rep, 403, "id", "job %lld belongs to %s; only they or an admin may %s",
                               (long long) j->id, j->user, action);
                return NULL;
        }
        return j;
}

static json_t *attempts_json(struct gw_daemon *d, const struct gw_job *j, unsigned view) {
        struct gw_job_attempt *a = NULL;
        size_t n = 0;
        if (gw_store_attempts(d->store, j->id, &a, &n) < 0)
                return json_array();
        json_t *arr = gw_codec_attempts(a, n, view);
        gw_job_attempts_free(a, n);
        return arr;
}

/* Seconds the attempt has run: on the monotonic clock while it runs (the caller's wall clock
 * may have stepped since its start), end - start once it ended; null before it starts. */
static json_t *runtime_json(struct gw_daemon *d, const struct gw_job *j) {
        const struct gw_djob *dj = j->state == GW_JOB_RUNNING ? gw_jobmap_get(&d->jobs.map, j->id) : NULL;
        if (dj && dj->start_mono)
                return json_real((double) gw_job_ran(dj, d->now) / 1e6);
        if (gw_job_state_is_final(j->state) && j->start_time > 0 && j->end_time >= j->start_time)
                return json_real((double) (j->end_time - j->start_time) / 1e6);
        return json_null();
}

static json_t *job_with_events(struct gw_daemon *d, const struct gw_job *j, unsigned view) {
        struct gw_array_summary sum;
        struct gw_job with_tasks;
        bool summed = j->array_spec && gw_array_summarize(d, j, &sum) == 0;
        const char *node = j->state == GW_JOB_RUNNING ? gw_backend_node_of(d, j->id) : NULL;
        char words_buf[GW_WAIT_WORDS_SIZE], drained_buf[GW_WHY_TEXT];
        const char *words;
        bool shown = gw_training_start_shown(d, j, words_buf, sizeof words_buf, &words);
        const char *drained = gw_job_drained_view(d, j, drained_buf, sizeof drained_buf);
        bool copy = summed || node || !shown || words || drained;
        if (copy) { /* an array: its tasks counted, its waiting ones folded */
                with_tasks = *j;
                with_tasks.array_view = summed ? &sum.view : NULL;
                with_tasks.node_view = node;
                with_tasks.drain_view = drained;
                gw_training_start_view(&with_tasks, shown, words);
        }
        json_t *o = gw_codec_job(copy ? &with_tasks : j, view);
        if (summed)
                gw_array_summary_done(&sum);
        json_object_set_new(o, "runtime", runtime_json(d, j));
        json_object_set_new(o, "attempts", attempts_json(d, j, view));
        json_t *tel = gw_observe_job_json(d, j);
        json_object_set_new(o, "telemetry", tel ? tel : json_null());
        json_t *training = gw_training_job_json(d, j); /* ETA, leak, snapshots */
        if (!(view & GW_VIEW_DETAILS))
                gw_hide_paths(training);
        json_object_set_new(o, "training", training);
        struct gw_job_event *ev = NULL;
        size_t n = 0;
        if (gw_store_job_events(d->store, j->id, &ev, &n) == 0) {
                gw_slurm_attempts_annotate(json_object_get(o, "attempts"), ev, n);
                json_object_set_new(o, "events", gw_codec_events(ev, n, view));
                gw_job_events_free(ev, n);
        }
        return o;
}

json_t *gw_parse_body(const struct gw_http_request *req, struct gw_http_reply *rep) {
        json_error_t e;
        if (req->body_len == 0) {
                gw_reply_error(rep, 400, NULL, "the request has no body: send a JSON object");
                return NULL;
        }
        /* Any value parses, so that `null` or `[]` is told what it is not, not "malformed". */
        json_t *o = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
        if (!o)
                gw_reply_error(rep, 400, NULL, "malformed JSON at line %d column %d: %s", e.line, e.column, e.text);
        else if (!json_is_object(o)) {
                gw_reply_error(rep, 400, NULL, "the request body must be a JSON object");
                json_decref(o);
                o = NULL;
        }
        return o;
}

int gw_body_check(const json_t *o, const char *const *fields, size_t n, const char *what, const char *key,
                  const char **ret, struct gw_http_reply *rep) {
        struct gw_codec_error err;
        *ret = NULL;
        if (gw_codec_check_fields(o, fields, n, what, &err) < 0 ||
            (key && gw_codec_get_string(o, key, ret, &err) < 0)) {
                gw_reply_error(rep, 400, err.field, "%s", err.message);
                return -EINVAL;
        }
        return 0;
}

static void on_get(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                   struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *j = gw_job_or_reply(d, ctx->id, c, NULL, rep, &tmp);
        if (j)
                gw_reply_json(rep, 200, job_with_events(d, j, gw_job_view(d, c, j)));
}

/* The cancel ?wait=1 requests waiting on a job's end, kept by job id in d->state.waiters
 * from the first one until the job ends (gw_api_resume_waiters). */
struct api_waiters {
        struct gw_http_conn **conns;
        size_t n;
};

static void waiter_add(struct gw_daemon *d, const struct gw_djob *dj, struct gw_http_conn *conn) {
        struct api_waiters *w = gw_keytab_get(&d->state.waiters, (uint64_t) dj->job->id);
        if (!w) {
                w = gw_xcalloc(1, sizeof *w);
                gw_keytab_put(&d->state.waiters, (uint64_t) dj->job->id, w);
        }
        w->conns = gw_xrealloc(w->conns, (w->n + 1) * sizeof *w->conns);
        w->conns[w->n++] = conn;
}

static void on_cancel(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                      struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *j = gw_job_or_reply(d, ctx->id, c, "cancel it", rep, &tmp);
        if (!j)
                return;
        const char *wait = gw_http_query(req, "wait"), *waiting = gw_http_query(req, "waiting");
        bool want_wait = wait && strcmp(wait, "0"), waiting_only = waiting && strcmp(waiting, "0");
        if (req->resumed || gw_job_state_is_final(j->state)) {
                if (req->resumed)
                        return gw_reply_json(rep, 200, job_with_events(d, j, gw_job_view(d, c, j)));
                return gw_reply_error(rep, 409, "id", "job %lld already ended (%s)", (long long) j->id,
                                      gw_job_state_name(j->state));
        }
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, ctx->id);
        if (!dj) /* active on disk, unknown in memory: nothing here could stop it */
                return gw_reply_error(rep, 500, NULL, "job %lld is %s on disk but not known to the daemon",
                                      (long long) j->id, gw_job_state_name(j->state));
        char why[128];
        snprintf(why, sizeof why, "cancelled by %s", c->user);
        bool running = j->state == GW_JOB_RUNNING;
        if (waiting_only && running && !dj->job->array_spec)
                return gw_reply_error(rep, 409, "waiting",
                                      "job %lld is RUNNING now: not cancelled (only waiting jobs were "
                                      "asked for)",
                                      (long long) j->id);
        /* Recorded before anything is done: refused, the job goes on untouched. */
        if ((waiting_only ? gw_job_cancel_waiting(d, dj, why) : gw_job_cancel(d, dj, why)) < 0)
                return gw_reply_store_error(d, rep, "cannot cancel the job");
        /* An array ends once its running tasks did: a waiting cancel waits for that; one of
         * its waiting tasks only is done at once, its running tasks going on. */
        if (dj->job->array_spec)
                running = !waiting_only && !gw_job_state_is_final(dj->job->state);
        if (!running) {
                _cleanup_(gw_job_freep) struct gw_job *now = NULL;
                const struct gw_job *fin = gw_job_lookup(d, ctx->id, &now);
                /* done at once */
                return gw_reply_json(rep, 200, fin ? job_with_events(d, fin, gw_job_view(d, c, fin)) : json_object());
        }
        if (!want_wait)
                return gw_reply_json(
                        rep, 202,
                        json_pack("{s:I,s:s}", "id", (json_int_t) j->id, "state", gw_job_state_name(dj->job->state)));
        waiter_add(d, dj, req->conn);
        rep->suspend = true;
}

static void on_hold(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                    struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        bool hold = strstr(req->path, "/hold") != NULL;
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *j = gw_job_or_reply(d, ctx->id, c, hold ? "hold it" : "release it", rep, &tmp);
        if (!j)
                return;
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, ctx->id);
        int r = dj ? gw_job_hold(d, dj, hold, c->user) : -EBUSY;
        if (r == -EBUSY)
                return gw_reply_error(rep, 409, "id", "job %lld is %s: only %s jobs can be %s", (long long) j->id,
                                      gw_job_state_name(j->state), hold ? "PENDING" : "HELD",
                                      hold ? "held" : "released");
        if (r < 0) /* not recorded: gw_job_hold left the job as it was */
                return gw_reply_store_error(d, rep, hold ? "cannot hold the job" : "cannot release the job");
        gw_reply_json(rep, 200, gw_codec_job(dj->job, gw_job_view(d, c, dj->job)));
}

static void on_log(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                   struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *j = gw_job_or_reply(d, ctx->id, c, "read its log", rep, &tmp);
        if (!j)
                return;
        long long offset = 0, limit = LOG_CHUNK_MAX, attempt = j->attempt;
        const char *qo = gw_http_query(req, "offset"), *ql = gw_http_query(req, "limit");
        const char *qa = gw_http_query(req, "attempt");
        if (qa && gw_parse_int(qa, 1, j->attempt, &attempt) < 0)
                return gw_reply_error(rep, 400, "attempt", "attempt: job %lld has attempts 1 to %d", (long long) j->id,
                                      j->attempt);
        _cleanup_free_ char *path = gw_attempt_log_path(d, j, (int) attempt);
        if (qo && gw_parse_int(qo, 0, INT64_MAX, &offset) < 0)
                return gw_reply_error(rep, 400, "offset", "offset: must be a byte offset >= 0");
        if (ql && gw_parse_int(ql, 1, LOG_CHUNK_MAX, &limit) < 0)
                return gw_reply_error(rep, 400, "limit", "limit: must be 1-%u", LOG_CHUNK_MAX);
        char *buf = gw_xmalloc((size_t) limit);
        ssize_t n = 0;
        /* A user-chosen output file is served only if the job's user owns it: the daemon reads
         * as root, and must not become a way to read files the user could not. */
        struct stat st;
        _cleanup_close_ int fd = gw_user_file_open(j, path, j->output != NULL, O_RDONLY, &st);
        if (fd == -EPERM || fd == -EINVAL) {
                free(buf);
                return gw_reply_error(rep, 403, "id", "the job's output file is not a file its user owns; not served");
        }
        /* Past the end: a capped log shrank when its middle was cut (shim/logcap.h); a follower
         * goes on from the end rather than waiting for the file to grow back to its offset. */
        if (fd >= 0 && offset > st.st_size)
                offset = st.st_size;
        if (fd >= 0)
                n = pread(fd, buf, (size_t) limit, offset);
        if (n < 0)
                n = 0;
        char off[32];
        snprintf(off, sizeof off, "%lld", offset + (long long) n);
        gw_http_reply_text(rep, 200, "text/plain; charset=utf-8", buf, (size_t) n);
        gw_http_reply_header(rep, "X-Log-Offset", off);
        gw_http_reply_header(rep, "X-Job-State", gw_job_state_name(j->state));
        char att[16];
        snprintf(att, sizeof att, "%d", j->attempt);
        gw_http_reply_header(rep, "X-Job-Attempt", att);
}

/* The route table; each row's handler sits beside it. */
static const struct {
        struct gw_route route;
        gw_handler_fn fn;
} routes[] = {
        { { "GET", "/healthz", GW_ROUTE_CI | GW_ROUTE_MODELS }, gw_on_health },
        { { "GET", "/api/v1/whoami", GW_ROUTE_CI | GW_ROUTE_MODELS }, gw_on_whoami },
        { { "POST", "/api/v1/jobs", GW_ROUTE_MUTATES | GW_ROUTE_CI }, gw_on_submit },
        { { "POST", "/api/v1/jobs/batch", GW_ROUTE_MUTATES }, gw_on_submit_batch },
        { { "GET", "/api/v1/jobs", GW_ROUTE_CI }, gw_on_list },
        { { "GET", "/api/v1/jobs/{id}", GW_ROUTE_CI }, on_get },
        { { "DELETE", "/api/v1/jobs/{id}", GW_ROUTE_MUTATES }, on_cancel },
        { { "POST", "/api/v1/jobs/{id}/hold", GW_ROUTE_MUTATES }, on_hold },
        { { "POST", "/api/v1/jobs/{id}/release", GW_ROUTE_MUTATES }, on_hold },
        { { "POST", "/api/v1/jobs/{id}/policy", GW_ROUTE_MUTATES | GW_ROUTE_ADMIN }, gw_on_job_policy },
        { { "GET", "/api/v1/jobs/{id}/log", GW_ROUTE_CI }, on_log },
        /* training awareness (training_api.c) */
        { { "GET", "/api/v1/jobs/{id}/eta", 0 }, gw_on_job_eta },
        { { "GET", "/api/v1/jobs/{id}/snapshots", 0 }, gw_on_job_snapshots },
        { { "POST", "/api/v1/jobs/{id}/restore", GW_ROUTE_MUTATES }, gw_on_job_restore },
        { { "GET", "/api/v1/gpus", 0 }, gw_on_gpus },
        { { "POST", "/api/v1/gpus/{index}/drain", GW_ROUTE_MUTATES | GW_ROUTE_ADMIN }, gw_on_gpu_drain },
        { { "POST", "/api/v1/gpus/{index}/undrain", GW_ROUTE_MUTATES | GW_ROUTE_ADMIN }, gw_on_gpu_drain },
        { { "GET", "/api/v1/gpus/{index}/events", 0 }, gw_on_gpu_events },
        { { "GET", "/api/v1/gpus/events", 0 }, gw_on_gpu_events },
        { { "GET", "/api/v1/jobs/{id}/series", 0 }, gw_on_series },
        { { "GET", "/metrics", 0 }, gw_on_metrics },
        { { "GET", "/readyz", GW_ROUTE_CI | GW_ROUTE_MODELS }, gw_on_ready },
        { { "POST", "/api/v1/bookings", GW_ROUTE_MUTATES }, gw_on_booking_create },
        { { "GET", "/api/v1/bookings", 0 }, gw_on_booking_list },
        { { "DELETE", "/api/v1/bookings/{id}", GW_ROUTE_MUTATES }, gw_on_booking_change },
        { { "POST", "/api/v1/bookings/{id}/approve", GW_ROUTE_MUTATES | GW_ROUTE_ADMIN }, gw_on_booking_change },
        { { "POST", "/api/v1/bookings/{id}/deny", GW_ROUTE_MUTATES | GW_ROUTE_ADMIN }, gw_on_booking_change },
        { { "GET", "/api/v1/schedule", 0 }, gw_on_schedule },
        { { "GET", "/api/v1/usage", 0 }, gw_on_usage },
        { { "GET", "/api/v1/cache", 0 }, gw_on_cache },
        { { "GET", "/api/v1/quota", 0 }, gw_on_quota },
        { { "POST", "/api/v1/quota", GW_ROUTE_MUTATES | GW_ROUTE_ADMIN }, gw_on_quota_set },
        { { "POST", "/api/v1/admin/backup", GW_ROUTE_MUTATES | GW_ROUTE_ADMIN }, gw_on_backup },
        { { "POST", "/api/v1/tokens", GW_ROUTE_MUTATES }, gw_on_token_create },
        { { "GET", "/api/v1/tokens", GW_ROUTE_MUTATES }, gw_on_token_list },
        { { "DELETE", "/api/v1/tokens/{id}", GW_ROUTE_MUTATES }, gw_on_token_revoke },
        /* The web dashboard (web.h). */
        { { "GET", "/api/v1/events", 0 }, gw_on_events },
        { { "GET", "/api/v1/session", 0 }, gw_on_session },
        { { "POST", "/api/v1/session", 0 }, gw_on_session },
        { { "DELETE", "/api/v1/session", 0 }, gw_on_session },
        { { "GET", "/api/v1/gpus/history", 0 }, gw_on_gpu_history },
        { { "GET", "/api/v1/jobs/{id}/results", GW_ROUTE_CI }, gw_on_job_results },
        /* Published models (publish/publish_api.c): a CI pipeline reads back what it published. */
        { { "GET", "/api/v1/models", GW_ROUTE_CI | GW_ROUTE_MODELS }, gw_on_models },
        { { "GET", "/api/v1/models/{name}", GW_ROUTE_CI | GW_ROUTE_MODELS }, gw_on_model },
        { { "GET", "/api/v1/models/{name}/{name}", GW_ROUTE_CI | GW_ROUTE_MODELS }, gw_on_model_version },
        { { "GET", "/api/v1/models/{name}/{name}/{name}", GW_ROUTE_CI | GW_ROUTE_MODELS }, gw_on_model_file },
        { { "POST", "/api/v1/agent/snapshot", GW_ROUTE_MUTATES | GW_ROUTE_ADMIN | GW_ROUTE_AGENT },
          gw_on_agent_snapshot },
};

/* Calls that mutate but that a guest may make: they change only the caller's own tokens. */
static bool guest_may(gw_handler_fn fn) {
        return fn == gw_on_token_create || fn == gw_on_token_list || fn == gw_on_token_revoke;
}

/* The bytes of body a route reads where the server's own bound (GW_HTTP_MAX_BODY) is too much:
 * every node's agent posts a snapshot each interval, and the controller keeps each one. */
static size_t route_max_body(gw_handler_fn fn) { return fn == gw_on_agent_snapshot ? GW_AGENT_MAX_BODY : 0; }

/* What a TCP caller without a token may still reach when they are refused: probes, and
 * the web page's sign-in (which takes a token in its body). */
/* A task that has not started, as GET /api/v1/jobs/17_5 shows it: the array's fields, with
 * no id (it has none yet), PENDING (or HELD with the array) for the array's reason. */
static void reply_waiting_task(struct gw_daemon *d, const struct gw_job *array, int64_t index,
                               const struct gw_caller *c, struct gw_http_reply *rep) {
        struct gw_job t = *array;
        t.array_spec = NULL;
        t.array_view = NULL;
        t.array_job = array->id;
        t.array_index = index;
        t.log_path = NULL;
        json_t *o = gw_codec_job(&t, gw_job_view(d, c, array));
        json_object_set_new(o, "id", json_null());
        gw_reply_json(rep, 200, o);
}

/* A path that names task index of array array_id ("17_3"): the task's own job id, which
 * the route's handler then serves as any job's.  A task that has not started has no job
 * yet: GET of the job shows it waiting, a DELETE cancels it where it waits (it will never
 * run), anything else is told so.  0 once rep holds the answer. */
static int64_t task_or_reply(struct gw_daemon *d, const struct gw_http_request *req, bool job_itself, int64_t array_id,
                             int64_t index, const struct gw_caller *c, struct gw_http_reply *rep) {
        int64_t id;
        int r = gw_array_task_id(d, array_id, index, &id);
        if (r == 0)
                return id;
        if (r != -ENOENT) {
                gw_reply_store_error(d, rep, "cannot read the array's tasks");
                return 0;
        }
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        bool del = !strcmp(req->method, "DELETE");
        const struct gw_job *j = gw_job_or_reply(d, array_id, c, del ? "cancel its tasks" : NULL, rep, &tmp);
        if (!j)
                return 0;
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, array_id);
        if (!j->array_spec || !dj) {
                gw_reply_error(rep, 404, "id",
                               j->array_spec ? "no task %lld_%lld: array %lld ended (%s)"
                                             : "no task %lld_%lld: job %lld is not an array",
                               (long long) array_id, (long long) index, (long long) array_id,
                               gw_job_state_name(j->state));
                return 0;
        }
        if (!gw_array_has_task(dj, index)) {
                gw_reply_error(rep, 404, "id", "no task %lld_%lld: array %lld is %s", (long long) array_id,
                               (long long) index, (long long) array_id, j->array_spec);
                return 0;
        }
        if (!del) {
                if (job_itself && !strcmp(req->method, "GET"))
                        reply_waiting_task(d, j, index, c, rep);
                else
                        gw_reply_error(rep, 404, "id",
                                       "task %lld_%lld has not started: it is a job of its own once it "
                                       "starts",
                                       (long long) array_id, (long long) index);
                return 0;
        }
        char why[128];
        snprintf(why, sizeof why, "cancelled by %s before it started", c->user);
        r = gw_array_cancel_waiting(d, dj, index, why, &id);
        if (r == -ENOENT)
                gw_reply_error(rep, 404, "id", "no task %lld_%lld: array %lld is %s", (long long) array_id,
                               (long long) index, (long long) array_id, j->array_spec);
        else if (r < 0)
                gw_reply_store_error(d, rep, "cannot cancel the task");
        else {
                _cleanup_(gw_job_freep) struct gw_job *row = NULL;
                const struct gw_job *t = gw_job_lookup(d, id, &row);
                gw_reply_json(rep, 200, t ? job_with_events(d, t, gw_job_view(d, c, t)) : json_object());
        }
        return 0;
}

/* A CI runner's token reads its own jobs only: what other users run (their commands, logs,
 * results) is not for a secret that lives in a CI system.  false once rep holds the 403. */
static bool ci_may_read(struct gw_daemon *d, int64_t id, const struct gw_caller *c, struct gw_http_reply *rep) {
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *j = gw_job_lookup(d, id, &tmp);
        if (!j || gw_may_touch(c, j))
                return true; /* the handler says there is no such job */
        char why[160];
        gw_api_token_ci_refusal(c->token_id, why, sizeof why);
        gw_reply_error(rep, 403, "id", "job %lld belongs to %s; %s", (long long) j->id, j->user, why);
        return false;
}

static bool open_to_anonymous(const char *path) {
        return !strcmp(path, "/healthz") || !strcmp(path, "/readyz") || !strcmp(path, "/api/v1/session");
}

void gw_api_handle(void *userdata, const struct gw_http_request *req, struct gw_http_reply *rep) {
        struct gw_daemon *d = gw_the_daemon(userdata);
        struct gw_route table[ELEMENTSOF(routes)];
        for (size_t i = 0; i < ELEMENTSOF(routes); i++)
                table[i] = routes[i].route;
        const struct gw_route *r;
        int64_t id, task = -1;
        char task_path[512];
        bool is_task = gw_route_array_task(req->path, task_path, sizeof task_path, &task) == 0;
        int m = gw_route_match(table, ELEMENTSOF(routes), req->method, is_task ? task_path : req->path, &r, &id);
        if (m == -ENOENT)
                return gw_reply_error(rep, 404, NULL, "no such API path: %.200s", req->path);
        if (m < 0)
                return gw_reply_error(rep, 405, NULL, "%s is not allowed on %.200s", req->method, req->path);
        struct gw_caller c;
        identify(d, req, &c);
        if (c.bad_token)
                return gw_reply_error(rep, 401, NULL, "%s", c.why[0] ? c.why : "the bearer token is not valid");
        if (!c.known && !req->unix_door && d->cfg->tcp_refuse_anonymous && !open_to_anonymous(req->path))
                return gw_reply_error(rep, 401, NULL,
                                      "this server answers TCP callers with a token only: "
                                      "'Authorization: Bearer gw_...' (gpuward token create)");
        if ((r->flags & GW_ROUTE_MUTATES) && !c.known)
                return gw_reply_error(rep, 401, NULL,
                                      "this call changes state and needs an identified caller: use the Unix socket "
                                      "or a token");
        if ((r->flags & GW_ROUTE_MUTATES) && c.guest && !guest_may(routes[r - table].fn))
                return gw_reply_error(rep, 403, NULL, "%s has the role guest, which may only read", c.user);
        if (c.agent && !(r->flags & GW_ROUTE_AGENT)) {
                char why[160];
                gw_api_token_agent_refusal(c.token_id, why, sizeof why);
                return gw_reply_error(rep, 403, NULL, "%s", why);
        }
        if (c.ci && !(r->flags & GW_ROUTE_CI)) {
                char why[160];
                gw_api_token_ci_refusal(c.token_id, why, sizeof why);
                return gw_reply_error(rep, 403, NULL, "%s", why);
        }
        if (c.models && !(r->flags & GW_ROUTE_MODELS)) {
                char why[160];
                gw_api_token_models_refusal(c.token_id, why, sizeof why);
                return gw_reply_error(rep, 403, NULL, "%s", why);
        }
        if ((r->flags & GW_ROUTE_ADMIN) && !c.admin && !c.agent)
                return gw_reply_error(rep, 403, NULL, "only admins may do this");
        size_t max_body = route_max_body(routes[r - table].fn);
        if (max_body && req->body_len > max_body)
                return gw_reply_error(rep, 413, NULL,
                                      "request body of %zu bytes is larger than the %zu KiB %s %s takes", req->body_len,
                                      max_body >> 10, r->method, r->pattern);
        if (is_task && (id = task_or_reply(d, req, !strcmp(r->pattern, "/api/v1/jobs/{id}"), id, task, &c, rep)) <= 0)
                return;
        if (c.ci && id > 0 && !ci_may_read(d, id, &c, rep))
                return;
        struct gw_route_ctx ctx = { .id = id, .route = r };
        routes[r - table].fn(d, req, &ctx, rep, &c);
}

static struct api_waiters *api_waiters_free(struct api_waiters *w) {
        if (w)
                free(w->conns);
        free(w);
        return NULL;
}

void gw_api_resume_waiters(struct gw_daemon *d, struct gw_djob *dj) {
        struct api_waiters *w = gw_keytab_take(&d->state.waiters, (uint64_t) dj->job->id);
        for (size_t i = 0; w && i < w->n; i++)
                gw_http_conn_resume(w->conns[i]);
        api_waiters_free(w);
}

void gw_api_forget_waiters(struct gw_daemon *d, struct gw_djob *dj) {
        api_waiters_free(gw_keytab_take(&d->state.waiters, (uint64_t) dj->job->id));
}

void gw_api_conn_gone(void *userdata, struct gw_http_conn *conn) {
        struct gw_daemon *d = gw_the_daemon(userdata);
        gw_train_restore_conn_gone(d, conn);
        gw_backup_conn_gone(d, conn);
        /* Running jobs, and arrays (queued) waiting for their tasks to stop: only those with
         * waiters are in the table. */
        const struct gw_keytab *t = &d->state.waiters;
        for (size_t i = 0; i < t->cap; i++) {
                struct api_waiters *w = t->slots[i].value;
                for (size_t k = 0; w && k < w->n; k++)
                        if (w->conns[k] == conn) {
                                w->conns[k] = w->conns[--w->n];
                                return;
                        }
        }
}
