/* POST /api/v1/jobs and /api/v1/jobs/batch: submissions decoded (api/codec.h), checked and
 * recorded by the job lifecycle (gw_job_submit, or gw_job_validate and gw_job_record for a
 * batch, all or none). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "base/cleanup.h"
#include "daemon/http/handlers.h"
#include "daemon/life/jobarray.h"
#include "daemon/life/jobs.h"

/* A refused job: of a batch (index >= 0), the error says which, in words and as "index". */
static void reply_job_error(struct gw_http_reply *rep, int status, const char *field, long index, const char *msg) {
        if (index < 0) {
                gw_reply_error(rep, status, field, "%s", msg);
                return;
        }
        char text[600];
        snprintf(text, sizeof text, "job %ld: %s", index, msg);
        gw_reply_json(rep, status,
                      json_pack("{s:o,s:o,s:I}", "error", gw_json_text(text), "field",
                                field && field[0] ? gw_json_text(field) : json_null(), "index", (json_int_t) index));
}

/* Decodes one submission into a new job owned by the caller; NULL after replying 400. */
static struct gw_job *decode_job(struct gw_daemon *d, const struct gw_caller *c, const json_t *spec, bool *ret_hold,
                                 struct gw_http_reply *rep, long index) {
        struct gw_job *j = gw_xcalloc(1, sizeof *j);
        struct gw_codec_error err = { "", "" };
        int hold = 0;
        if (gw_codec_job_spec(spec, d->cfg->default_time_limit, j, &hold, &err) < 0) {
                reply_job_error(rep, 400, err.field, index, err.message);
                return gw_job_free(j);
        }
        j->uid = c->uid;
        j->gid = c->gid;
        j->user = gw_xstrdup(c->user);
        j->by_admin = c->admin; /* the priority it may have (sharing.c) */
        *ret_hold = hold;
        return j;
}

void gw_on_submit(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                  struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        if (gw_api_rate_limited(d, c, rep))
                return;
        json_t *o = gw_parse_body(req, rep);
        if (!o)
                return;
        bool hold;
        struct gw_job *j = decode_job(d, c, o, &hold, rep, -1);
        const json_t *asked = json_object_get(o, "time_limit");
        bool default_limit = !asked || json_is_null(asked);
        json_decref(o);
        if (!j)
                return;
        gw_usec_t limit = j->time_limit;
        struct gw_submit_error err;
        int64_t id;
        if (gw_job_submit(d, j, hold, &err, &id) < 0) {
                if (err.status == 503) /* gw_job_record: the store refused the write */
                        return gw_reply_store_error(d, rep, "cannot record the job");
                gw_reply_error(rep, err.status, err.field, "%s", err.message);
                return;
        }
        /* A limit nobody asked for is said once, where the submitter looks. */
        gw_reply_json(rep, 201,
                      json_pack("{s:I,s:I,s:b}", "id", (json_int_t) id, "time_limit",
                                (json_int_t) (limit / GW_USEC_PER_SEC), "time_limit_default", default_limit));
}

void gw_on_submit_batch(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                        struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        json_t *o = gw_parse_body(req, rep);
        if (!o)
                return;
        json_t *arr = json_object_get(o, "jobs");
        size_t n = json_array_size(arr);
        if (!json_is_array(arr) || n == 0 || n > 10000) {
                json_decref(o);
                gw_reply_error(rep, 400, "jobs", "jobs: must be an array of 1 to 10000 job objects");
                return;
        }
        /* A batch is as many submissions as it has jobs, for the rate limit too. */
        if (gw_api_rate_limited_n(d, c, (int64_t) n, rep)) {
                json_decref(o);
                return;
        }
        struct gw_job **jobs = gw_xcalloc(n, sizeof *jobs);
        struct gw_submit_error err;
        size_t k = 0, ahead = 0; /* an array's tasks count one each, as queued */
        bool ok = true;
        for (; k < n && ok; k++) {
                bool hold;
                jobs[k] = decode_job(d, c, json_array_get(arr, k), &hold, rep, (long) k);
                ok = jobs[k] && gw_job_validate(d, jobs[k], hold, ahead, &err) == 0;
                if (jobs[k] && !ok)
                        reply_job_error(rep, err.status, err.field, (long) k, err.message);
                if (ok)
                        ahead += gw_array_jobs_waiting(d, jobs[k]);
        }
        json_decref(o);
        if (ok && gw_store_begin(d->store) == 0) {
                for (size_t i = 0; i < n && ok; i++)
                        ok = gw_job_record(d, jobs[i], &err) == 0;
                ok = ok && gw_store_commit(d->store) == 0;
                if (!ok) {
                        (void) gw_store_rollback(d->store);
                        gw_reply_store_error(d, rep, "cannot record the jobs");
                }
        } else if (ok) {
                ok = false;
                gw_reply_store_error(d, rep, "cannot record the jobs");
        }
        if (!ok)
                gw_api_rate_undo(d, c, (int64_t) n); /* a refused batch costs nothing */
        json_t *ids = json_array();
        for (size_t i = 0; i < n; i++) {
                if (ok) {
                        json_array_append_new(ids, json_integer(jobs[i]->id));
                        gw_job_enqueue(d, jobs[i]);
                } else
                        gw_job_free(jobs[i]);
        }
        free(jobs);
        if (ok)
                gw_reply_json(rep, 201, json_pack("{s:o}", "ids", ids));
        else
                json_decref(ids);
}
