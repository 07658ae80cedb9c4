/* Predicted starts of pending jobs in the daemon (issue 7): the inputs core/predict.h needs
 * that only the daemon knows, and the predictions kept in each queued job.
 *
 *   - running jobs end at min(ETA, time limit): j->eta from training.c;
 *   - a queued job runs for the median run time of its user's similar completed jobs
 *     (gw_predict_job_key: same command words and epochs=/imgsz=/batch=), the newest
 *     RUNTIME_BASIS_MAX of the last HISTORY_SCAN completed jobs of that user; else its limit;
 *   - every PREDICT_EVERY, after a GPU sample, gw_predict_starts over the calendar view
 *     (the same view the schedule draws) writes j->predicted_start of every queued job.
 * The run times are cached per (user, key) for RUNTIME_TTL, or until a job completes: a
 * history query per queued job and per pass would cost more than the prediction.  The cache is this file's static state:
 * one daemon per process. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/predict.h"
#include "daemon/sharing.h"
#include "daemon/training_int.h"
#include "daemon/web.h"

#define RUNTIME_TTL     (60 * GW_USEC_PER_SEC)
#define HISTORY_SCAN    500
#define CACHE_SLOTS     256
#define PREDICT_EVERY   (2 * GW_USEC_PER_SEC)
#define PREDICT_HORIZON ((gw_usec_t) 14 * 24 * 3600 * GW_USEC_PER_SEC)
#define PUSH_MOVE       (60 * GW_USEC_PER_SEC) /* a start moved this much: tell the dashboards */

struct runtime_entry {
        bool used;
        uint32_t uid;
        uint64_t hash;
        char key[GW_PREDICT_KEY_MAX];
        gw_usec_t at;                    /* monotonic: when it was looked up */
        uint64_t completed;              /* jobs completed by then: one more may be similar */
        struct gw_train_runtime r;
};

static struct runtime_entry cache[CACHE_SLOTS];
static gw_usec_t next_predict;           /* monotonic */

static uint64_t hash_of(uint32_t uid, const char *key) {
        uint64_t h = UINT64_C(1469598103934665603) ^ uid;
        for (const unsigned char *p = (const unsigned char *) key; *p; p++)
                h = (h ^ *p) * UINT64_C(1099511628211);
        return h;
}

struct scan {
        const char *key;
        struct gw_train_runtime *r;
};

static int similar_job(struct gw_job *j, void *userdata) {
        struct scan *s = userdata;
        char key[GW_PREDICT_KEY_MAX];
        if (s->r->n < GW_TRAIN_RUNTIME_BASIS && j->start_time > 0 && j->end_time > j->start_time &&
            gw_predict_job_key((const char *const *) j->argv, key, sizeof key) == 0 && !strcmp(key, s->key)) {
                s->r->ids[s->r->n] = j->id;
                s->r->runs[s->r->n++] = j->end_time - j->start_time;
        }
        gw_job_free(j);
        return 0;
}

static void look_up(struct gw_daemon *d, uint32_t uid, const char *key, struct gw_train_runtime *r) {
        memset(r, 0, sizeof *r);
        struct scan s = { key, r };
        struct gw_store_filter f = { .state_mask = 1u << GW_JOB_COMPLETED, .by_uid = true, .uid = uid,
                                     .limit = HISTORY_SCAN };
        if (gw_store_jobs_list(d->store, &f, similar_job, &s) < 0) {
                log_debug("run-time history of uid %u: %s", (unsigned) uid, gw_store_errmsg(d->store));
                r->n = 0;
        }
        gw_usec_t sorted[GW_TRAIN_RUNTIME_BASIS];
        memcpy(sorted, r->runs, r->n * sizeof *sorted);
        r->median = gw_predict_median(sorted, r->n);
}

int gw_training_runtime(struct gw_daemon *d, const struct gw_job *j, struct gw_train_runtime *ret) {
        char key[GW_PREDICT_KEY_MAX];
        if (!j->argv || gw_predict_job_key((const char *const *) j->argv, key, sizeof key) < 0)
                return -EINVAL;
        uint64_t h = hash_of(j->uid, key);
        struct runtime_entry *e = &cache[h % CACHE_SLOTS];
        if (!e->used || e->hash != h || e->uid != j->uid || strcmp(e->key, key) || d->now - e->at > RUNTIME_TTL ||
            e->completed != d->state_counts[GW_JOB_COMPLETED]) {
                *e = (struct runtime_entry) { .used = true, .uid = j->uid, .hash = h, .at = d->now,
                                              .completed = d->state_counts[GW_JOB_COMPLETED] };
                snprintf(e->key, sizeof e->key, "%s", key);
                look_up(d, j->uid, key, &e->r);
        }
        *ret = e->r;
        return 0;
}

void gw_training_fill_view(struct gw_daemon *d, struct calendar_view *v) {
        for (size_t i = 0; i < v->in.n_running && i < d->n_running; i++)
                v->running[i].eta = d->running[i]->job->eta;
        for (size_t i = 0; i < v->in.n_pending && i < d->n_queue; i++) {
                const struct gw_job *j = d->queue[i]->job;
                struct gw_train_runtime r;
                v->pending[i].runtime = gw_training_runtime(d, j, &r) == 0 ? r.median : 0;
                v->pending[i].after_job = j->after_job;
                v->pending[i].gpu_mem = j->gpu_mem;
        }
}

void gw_training_predict(struct gw_daemon *d, bool force) {
        if (d->n_queue == 0 || (!force && d->now < next_predict))
                return;
        next_predict = d->now + PREDICT_EVERY;
        struct calendar_view v;
        gw_calendar_view(d, &v);
        _cleanup_free_ struct gw_prediction *out = gw_xcalloc(v.in.n_pending + 1, sizeof *out);
        int r = gw_predict_starts(&v.in, gw_now_wall(), PREDICT_HORIZON, out);
        if (r < 0)
                log_debug("predicted starts: %s", strerror(-r));
        bool moved = false;
        for (size_t i = 0; i < v.in.n_pending && i < d->n_queue; i++) {
                struct gw_job *j = d->queue[i]->job;
                bool ok = r == 0 && out[i].id == j->id && out[i].start != GW_USEC_INFINITY;
                gw_usec_t start = ok ? out[i].start : 0;
                gw_usec_t diff = start > j->predicted_start ? start - j->predicted_start : j->predicted_start - start;
                moved = moved || (!start != !j->predicted_start) || diff >= PUSH_MOVE;
                j->predicted_start = start;
                j->predicted_end = ok ? out[i].end : 0;
        }
        gw_calendar_view_free(&v);
        if (moved)
                gw_events_predictions(d);
}

json_t *gw_training_prediction_json(struct gw_daemon *d, const struct gw_job *j) {
        if (j->state != GW_JOB_PENDING && j->state != GW_JOB_HELD)
                return json_null();
        struct gw_train_runtime r = { 0 };
        bool hist = gw_training_runtime(d, j, &r) == 0 && r.n > 0;
        gw_usec_t len = hist && r.median < j->time_limit ? r.median : j->time_limit;
        json_t *ids = json_array(), *runs = json_array();
        for (size_t i = 0; i < r.n; i++) {
                json_array_append_new(ids, json_integer(r.ids[i]));
                json_array_append_new(runs, json_real((double) r.runs[i] / 1e6));
        }
        const char *why = j->state == GW_JOB_HELD ? "the job is held"
                          : !j->predicted_start ? "no start within 14 days (or never: its booking awaits approval, or is gone)"
                                                : NULL;
        json_t *o = json_object();
        json_object_set_new(o, "predicted_start", j->predicted_start ? json_real((double) j->predicted_start / 1e6)
                                                                     : json_null());
        json_object_set_new(o, "predicted_end", j->predicted_end ? json_real((double) j->predicted_end / 1e6)
                                                                 : json_null());
        json_object_set_new(o, "why_none", why ? json_string(why) : json_null());
        json_object_set_new(o, "runtime_seconds", json_real((double) len / 1e6));
        json_object_set_new(o, "runtime_from", json_string(!hist ? "time_limit"
                                                           : r.median < j->time_limit ? "history"
                                                                                      : "time_limit (history is longer)"));
        json_object_set_new(o, "similar_jobs", ids);
        json_object_set_new(o, "similar_runtimes", runs);
        return o;
}
