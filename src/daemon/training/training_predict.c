/* Predicted starts of pending jobs in the daemon: the inputs core/predict.h needs
 * that only the daemon knows, and the predictions kept in each queued job.
 *
 *   - running jobs end at min(ETA, time limit): j->eta from training.c;
 *   - a queued job runs for the median run time of its user's similar completed jobs
 *     (gw_predict_job_key: same command words and epochs=/imgsz=/batch=), the newest
 *     RUNTIME_BASIS_MAX of the last HISTORY_SCAN completed jobs of that user; else its limit;
 *   - after a GPU sample, gw_predict_starts over the calendar view (the same view the
 *     schedule draws) writes j->predicted_start of the first PREDICT_MAX_JOBS queued jobs,
 *     when the jobs or the bookings changed since the last one (or PREDICT_REFRESH passed),
 *     at most every PREDICT_EVERY, and never within PREDICT_QUIET of a job's start;
 *   - beside that estimate, j->latest_start: the same replay on time limits alone
 *     (gw_predict_latest_starts), the start the scheduler promises as long as every job
 *     keeps its limit.  Both are for the attempt queued then (j->predicted_attempt);
 *   - slice jobs by gw_predict_mig_starts beside it, and a job of either kind after a job of
 *     the other by the end the other replay gave that job (dep_links: rounds of both).
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
#include "core/predict_mig.h"
#include "core/waitwhy.h"
#include "daemon/sharing/sharing.h"
#include "daemon/training/training_int.h"
#include "daemon/http/web.h"
#include "daemon/life/migslots.h"
#include "daemon/life/queue.h"
#include "daemon/training/training.h"

#define RUNTIME_TTL (60 * GW_USEC_PER_SEC)
#define HISTORY_SCAN 500
#define CACHE_SLOTS 256
#define PREDICT_EVERY (2 * GW_USEC_PER_SEC) /* at most this often */
#define PREDICT_REFRESH (30 * GW_USEC_PER_SEC) /* even unchanged: overdue ends move with the clock */
/* The prediction runs on the daemon's only thread: while the queue drains (jobs started
 * this recently) it waits, so that a burst of starts is never held up by it. */
#define PREDICT_QUIET (100 * GW_USEC_PER_MSEC)
/* Its cost grows with the queued jobs it replays (about 3 ms for 500 against 12 ms for
 * 2,000 on a 64-GPU host with 500 bookings, gw-bench-schedule, per replay; a prediction
 * runs two, the estimate and the promise, and both again in each further round, up to
 * PREDICT_ROUNDS, only where jobs follow jobs of the other replay): the first 500 in queue
 * order (held ones included) get a prediction, the others none (null in the API).  What
 * people read is the head of the queue; leaving the rest out can only make a start
 * earlier where a job further back would have backfilled ahead of it. */
#define PREDICT_MAX_JOBS 500
#define PREDICT_HORIZON ((gw_usec_t) 14 * 24 * 3600 * GW_USEC_PER_SEC)
#define PUSH_MOVE (60 * GW_USEC_PER_SEC) /* a start moved this much: tell the dashboards */
/* A job asked about before any prediction covered it is predicted at once, unless one ran
 * this recently (an API caller polling a flood of submissions must not run it per request). */
#define PREDICT_ON_ASK (250 * GW_USEC_PER_MSEC)

struct runtime_entry {
        bool used;
        uint32_t uid;
        uint64_t hash;
        char key[GW_PREDICT_KEY_MAX];
        gw_usec_t at; /* monotonic: when it was looked up */
        uint64_t completed; /* jobs completed by then: one more may be similar */
        struct gw_train_runtime r;
};

static struct runtime_entry cache[CACHE_SLOTS];
static gw_usec_t last_predict; /* monotonic, 0 = never */
static uint64_t last_fingerprint; /* of what the last prediction read */
static size_t fill_max = SIZE_MAX; /* queued jobs gw_training_fill_view fills */
/* The jobs the last prediction covered, sorted by id, each as it was queued then (attempt
 * and backoff): one queued since (just submitted, or back in the queue after a failure) has
 * not been predicted, which is not the same as "no start within 14 days". */
struct seen {
        int64_t id;
        int attempt;
        gw_usec_t not_before;
};
static struct seen *seen;
static size_t n_seen;

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
        struct gw_store_filter f = { .state_mask = 1u << GW_JOB_COMPLETED,
                                     .by_uid = true,
                                     .uid = uid,
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
            e->completed != d->loop.stats.state_counts[GW_JOB_COMPLETED]) {
                *e = (struct runtime_entry){ .used = true,
                                             .uid = j->uid,
                                             .hash = h,
                                             .at = d->now,
                                             .completed = d->loop.stats.state_counts[GW_JOB_COMPLETED] };
                snprintf(e->key, sizeof e->key, "%s", key);
                look_up(d, j->uid, key, &e->r);
        }
        *ret = e->r;
        return 0;
}

void gw_training_fill_view(struct gw_daemon *d, struct calendar_view *v) {
        for (size_t i = 0; i < v->in.n_running && i < d->jobs.n_running; i++)
                /* An overdue run (hung, core/eta.h) tells nothing of its end: its limit stands. */
                v->running[i].eta = d->jobs.running[i]->job->eta_overdue ? 0 : d->jobs.running[i]->job->eta;
        for (size_t i = 0; i < v->in.n_pending && i < d->jobs.n_queue && i < fill_max; i++) {
                const struct gw_job *j = d->jobs.queue[i]->job;
                struct gw_train_runtime r;
                v->pending[i].runtime = gw_training_runtime(d, j, &r) == 0 ? r.median : 0;
                v->pending[i].after_job = j->after_job;
                v->pending[i].gpu_mem = j->gpu_mem;
        }
}

static uint64_t mix(uint64_t h, uint64_t v) {
        for (int i = 0; i < 8; i++, v >>= 8)
                h = (h ^ (v & 0xff)) * UINT64_C(1099511628211);
        return h;
}

/* What a prediction reads, hashed: the first PREDICT_MAX_JOBS queued jobs in order (so
 * submitted, started, held, released, reordered), the running jobs and their ETAs to the
 * minute, the ended jobs, the bookings and which GPUs may be used. */
static uint64_t fingerprint(const struct gw_daemon *d) {
        uint64_t h = UINT64_C(1469598103934665603);

        h = mix(h, d->jobs.n_queue);
        for (size_t i = 0; i < d->jobs.n_queue && i < PREDICT_MAX_JOBS; i++) {
                const struct gw_job *j = d->jobs.queue[i]->job;
                h = mix(mix(mix(h, (uint64_t) j->id), (uint64_t) j->state), (uint64_t) j->not_before);
                h = mix(mix(h, (uint64_t) j->booking_id), (uint64_t) j->after_job);
        }
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                const struct gw_job *j = d->jobs.running[i]->job;
                h = mix(mix(mix(h, (uint64_t) j->id), j->gpu_mask), (uint64_t) (j->eta / PUSH_MOVE));
        }
        for (int s = 0; s < _GW_JOB_STATE_MAX; s++)
                h = mix(h, d->loop.stats.state_counts[s]);
        for (size_t i = 0; i < d->sharing->n_bookings; i++) {
                const struct gw_store_booking *b = &d->sharing->bookings[i];
                h = mix(mix(mix(h, (uint64_t) b->id), (uint64_t) b->state), b->gpu_mask);
                h = mix(mix(h, (uint64_t) b->start), (uint64_t) b->end);
        }
        for (unsigned g = 0; g < d->host.n_gpus; g++)
                h = mix(h, (uint64_t) d->host.gpus[g].drained << 1 |
                                   (uint64_t) (!d->host.gpus[g].sampled || d->host.gpus[g].sample.health == GW_GPU_OK));
        return h;
}

static bool started_recently(const struct gw_daemon *d, gw_usec_t wall) {
        for (size_t i = 0; i < d->jobs.n_running; i++)
                if (d->jobs.running[i]->job->start_time <= wall &&
                    wall - d->jobs.running[i]->job->start_time < PREDICT_QUIET)
                        return true;
        return false;
}

static int cmp_id(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
        return (x > y) - (x < y);
}

/* A job of the first n that waits for a queued job further back gets no prediction: the
 * replay would take that job for ended. */
static void hold_deps_beyond(struct gw_daemon *d, struct gw_cal_pending *p, size_t n) {
        _cleanup_free_ int64_t *ids = gw_xcalloc(n + 1, sizeof *ids);
        for (size_t i = 0; i < n; i++)
                ids[i] = p[i].id;
        qsort(ids, n, sizeof *ids, cmp_id);
        for (size_t i = 0; i < n; i++) {
                if (!p[i].after_job || bsearch(&p[i].after_job, ids, n, sizeof *ids, cmp_id))
                        continue;
                const struct gw_djob *dep = gw_jobmap_get(&d->jobs.map, p[i].after_job);
                if (dep && (dep->job->state == GW_JOB_PENDING || dep->job->state == GW_JOB_HELD))
                        p[i].held = true;
        }
}

/* Whether to predict now: something it reads changed (or PREDICT_REFRESH passed), the
 * last one is PREDICT_EVERY old, and no job started within PREDICT_QUIET. */
static bool due(struct gw_daemon *d, gw_usec_t wall, uint64_t *ret_fp) {
        if (last_predict && d->now - last_predict < PREDICT_EVERY)
                return false;
        *ret_fp = fingerprint(d);
        if (last_predict && *ret_fp == last_fingerprint && d->now - last_predict < PREDICT_REFRESH)
                return false;
        return !started_recently(d, wall);
}

static int cmp_seen(const void *a, const void *b) {
        int64_t x = ((const struct seen *) a)->id, y = ((const struct seen *) b)->id;
        return (x > y) - (x < y);
}

static void remember_seen(const struct gw_daemon *d, size_t n) {
        free(seen);
        seen = gw_xcalloc(n + 1, sizeof *seen);
        for (n_seen = 0; n_seen < n && n_seen < d->jobs.n_queue; n_seen++) {
                const struct gw_job *j = d->jobs.queue[n_seen]->job;
                seen[n_seen] = (struct seen){ j->id, j->attempt, j->not_before };
        }
        qsort(seen, n_seen, sizeof *seen, cmp_seen);
}

static bool seen_by_last(const struct gw_job *j) {
        struct seen key = { .id = j->id };
        const struct seen *s = seen ? bsearch(&key, seen, n_seen, sizeof *seen, cmp_seen) : NULL;
        return s && s->attempt == j->attempt && s->not_before == j->not_before;
}

/* The running slice jobs' ends as the calendar view has them: min(ETA, time limit). */
static size_t slice_runs(const struct gw_daemon *d, const struct calendar_view *v, struct gw_mig_run *runs) {
        size_t k = 0;
        for (size_t i = 0; i < v->in.n_running && i < d->jobs.n_running; i++) {
                const struct gw_cal_job *c = &v->running[i];
                if (!d->jobs.running[i]->job->mig_profile)
                        continue;
                runs[k++] = (struct gw_mig_run){ .id = c->id, .end = c->eta > 0 && c->eta < c->end ? c->eta : c->end };
        }
        return k;
}

/* The first n queued jobs' slice asks, in queue order; *ret_at[k] is the queue index of the
 * k-th.  Their dependencies are set per replay (set_slice_deps). */
static size_t slice_asks(const struct gw_daemon *d, const struct calendar_view *v, size_t n,
                         struct gw_mig_pending *asks, size_t *at) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                const struct gw_job *j = d->jobs.queue[i]->job;
                if (!j->mig_profile)
                        continue;
                asks[k] = (struct gw_mig_pending){ .id = j->id,
                                                   .time_limit = v->pending[i].time_limit,
                                                   .runtime = v->pending[i].runtime,
                                                   .not_before = j->not_before };
                snprintf(asks[k].ask.profile, sizeof asks[k].ask.profile, "%s", j->mig_profile);
                asks[k].ask.count = j->mig_count > 0 ? j->mig_count : 1;
                at[k++] = i;
        }
        return k;
}

/* ---- Dependencies across the two replays ----
 * The whole-GPU replay times a job after a whole-GPU job, queued or running, and after a
 * running slice job (running jobs are in its input); the slice replay times none.  The
 * others get the end of the job they follow from outside: a running job's end, or the
 * predicted end a replay gave that job, which may come from the other replay.  Each replay
 * reads the ends the last round gave, so the two run in rounds until those ends no longer
 * change: one more round per step of a chain from one replay to the other.  Without such a
 * dependency that is one round, as before; after PREDICT_ROUNDS the last round stands, and
 * a job further down a longer chain has no end to wait for, so no prediction. */
#define PREDICT_ROUNDS 4

enum dep_from {
        DEP_NONE, /* none, or one the whole-GPU replay times itself */
        DEP_UNKNOWN, /* one no replay times (held, queued beyond the first n): no prediction */
        DEP_RUNNING, /* a running job: est/promise are its ends */
        DEP_QUEUED, /* a queued job among the first n: at is its queue index */
};

struct dep_link {
        enum dep_from from;
        size_t at;
        gw_usec_t est, promise;
};

struct id_at {
        int64_t id;
        size_t at;
};

static int cmp_id_at(const void *a, const void *b) {
        return cmp_id(&((const struct id_at *) a)->id, &((const struct id_at *) b)->id);
}

/* A running job's ends as the whole-GPU replay takes them: min(ETA, limit), and the limit. */
static void running_ends(const struct calendar_view *v, int64_t id, struct dep_link *l) {
        for (size_t i = 0; i < v->in.n_running; i++)
                if (v->running[i].id == id) {
                        const struct gw_cal_job *c = &v->running[i];
                        *l = (struct dep_link){ DEP_RUNNING, 0, c->eta > 0 && c->eta < c->end ? c->eta : c->end,
                                                c->end };
                        return;
                }
        l->from = DEP_UNKNOWN; /* running but not in the view: nothing to time it by */
}

static struct dep_link link_of(const struct gw_daemon *d, const struct calendar_view *v, const struct id_at *ids,
                               size_t n, size_t i) {
        const struct gw_job *j = d->jobs.queue[i]->job;
        const struct gw_djob *dep = j->after_job > 0 ? gw_jobmap_get(&d->jobs.map, j->after_job) : NULL;
        struct dep_link l = { DEP_NONE, 0, 0, 0 };
        if (!dep ||
            (dep->job->state != GW_JOB_PENDING && dep->job->state != GW_JOB_HELD && dep->job->state != GW_JOB_RUNNING))
                return l;
        bool whole = !j->mig_profile, dep_whole = !dep->job->mig_profile;
        if (dep->job->state == GW_JOB_RUNNING) {
                if (!whole)
                        running_ends(v, dep->job->id, &l);
                return l;
        }
        struct id_at key = { .id = dep->job->id };
        const struct id_at *at =
                dep->job->state == GW_JOB_PENDING ? bsearch(&key, ids, n, sizeof *ids, cmp_id_at) : NULL;
        /* A whole-GPU job after a held or far-back job is held by the replay (hold_deps_beyond). */
        if (whole && (dep_whole || !at))
                return l;
        l.from = at ? DEP_QUEUED : DEP_UNKNOWN;
        l.at = at ? at->at : 0;
        return l;
}

/* The first n queued jobs' links, or NULL where none needs one (no feeds, one round). */
static struct dep_link *dep_links(const struct gw_daemon *d, const struct calendar_view *v, size_t n) {
        _cleanup_free_ struct id_at *ids = gw_xcalloc(n + 1, sizeof *ids);
        for (size_t i = 0; i < n; i++)
                ids[i] = (struct id_at){ v->pending[i].id, i };
        qsort(ids, n, sizeof *ids, cmp_id_at);
        _cleanup_free_ struct dep_link *links = gw_xcalloc(n + 1, sizeof *links);
        bool any = false;
        for (size_t i = 0; i < n; i++) {
                links[i] = link_of(d, v, ids, n, i);
                any = any || links[i].from != DEP_NONE;
        }
        return any ? TAKE_PTR(links) : NULL;
}

/* The ends each job waits for by the results so far (res: the estimate or the promise), into
 * feed: 0 none, GW_USEC_INFINITY one not timed (no prediction).  Whether any changed. */
static bool feed_ends(const struct dep_link *links, size_t n, const struct gw_prediction *res, bool promise,
                      gw_usec_t *feed) {
        bool changed = false;
        for (size_t i = 0; links && i < n; i++) {
                const struct dep_link *l = &links[i];
                gw_usec_t e = l->from == DEP_UNKNOWN   ? GW_USEC_INFINITY
                              : l->from == DEP_RUNNING ? (promise ? l->promise : l->est)
                              : l->from == DEP_QUEUED
                                      ? (res[l->at].start == GW_USEC_INFINITY ? GW_USEC_INFINITY : res[l->at].end)
                                      : 0;
                changed = changed || e != feed[i];
                feed[i] = e;
        }
        return changed;
}

/* The whole-GPU replay's input with these ends: a job after one not timed is held, and so
 * is a slice job, which waits for slices, not whole GPUs (the scheduler leaves it out too). */
static void set_whole_deps(const struct gw_daemon *d, struct calendar_view *v, size_t n, const bool *held,
                           const gw_usec_t *feed) {
        for (size_t i = 0; i < n; i++) {
                v->pending[i].held = held[i] || d->jobs.queue[i]->job->mig_profile || feed[i] == GW_USEC_INFINITY;
                v->pending[i].after_end = feed[i] == GW_USEC_INFINITY ? 0 : feed[i];
        }
}

static void set_slice_deps(struct gw_mig_pending *asks, const size_t *at, size_t n_asks, const bool *held,
                           const gw_usec_t *feed) {
        for (size_t k = 0; k < n_asks; k++) {
                asks[k].held = held[at[k]] || feed[at[k]] == GW_USEC_INFINITY;
                asks[k].after_end = feed[at[k]] == GW_USEC_INFINITY ? 0 : feed[at[k]];
        }
}

/* What one round reads, per queued job: held whatever it follows, and the ends it waits for. */
struct round_in {
        const bool *held;
        const gw_usec_t *est_feed, *promise_feed;
};

/* Predicts the slice jobs among the first n queued ones (core/predict_mig.h) into out and
 * latest, at their queue indexes.  0 or -errno. */
static int predict_slices(struct gw_daemon *d, const struct calendar_view *v, size_t n, gw_usec_t wall,
                          const struct round_in *ri, struct gw_prediction *out, struct gw_prediction *latest) {
        _cleanup_free_ struct gw_mig_pending *asks = gw_xcalloc(n + 1, sizeof *asks);
        _cleanup_free_ size_t *at = gw_xcalloc(n + 1, sizeof *at);
        size_t n_asks = slice_asks(d, v, n, asks, at);
        if (n_asks == 0)
                return 0;
        _cleanup_free_ struct gw_mig_run *runs = gw_xcalloc(d->jobs.n_running + 1, sizeof *runs);
        _cleanup_free_ struct gw_mig_slot *slots = NULL;
        size_t n_slots = gw_mig_slots(d, &slots);
        struct gw_mig_predict_input in = { slots, n_slots, runs, slice_runs(d, v, runs), asks, n_asks };
        _cleanup_free_ struct gw_prediction *est = gw_xcalloc(n_asks, sizeof *est);
        _cleanup_free_ struct gw_prediction *promise = gw_xcalloc(n_asks, sizeof *promise);
        set_slice_deps(asks, at, n_asks, ri->held, ri->est_feed);
        int r = gw_predict_mig_starts(&in, wall, PREDICT_HORIZON, false, est);
        set_slice_deps(asks, at, n_asks, ri->held, ri->promise_feed);
        if (r == 0)
                r = gw_predict_mig_starts(&in, wall, PREDICT_HORIZON, true, promise);
        for (size_t k = 0; r == 0 && k < n_asks; k++) {
                out[at[k]] = est[k];
                latest[at[k]] = promise[k];
        }
        return r;
}

/* One round: both replays with the ends in ri, into out (the estimate) and latest (the promise). */
static int predict_round(struct gw_daemon *d, struct calendar_view *v, size_t n, gw_usec_t wall,
                         const struct round_in *ri, struct gw_prediction *out, struct gw_prediction *latest) {
        set_whole_deps(d, v, n, ri->held, ri->est_feed);
        int r = gw_predict_starts(&v->in, wall, PREDICT_HORIZON, out);
        bool same = !memcmp(ri->est_feed, ri->promise_feed, n * sizeof *ri->est_feed);
        if (r == 0 && same && gw_predict_limits_only(&v->in)) /* one replay is both: no ETA, no run time */
                memcpy(latest, out, n * sizeof *out);
        else if (r == 0) {
                set_whole_deps(d, v, n, ri->held, ri->promise_feed);
                r = gw_predict_latest_starts(&v->in, wall, PREDICT_HORIZON, latest);
        }
        if (r == 0)
                r = predict_slices(d, v, n, wall, ri, out, latest);
        return r;
}

/* The predictions of the first n queued jobs of v into out and latest: rounds of both
 * replays while the ends of the jobs others follow move (see dep_links).  0 or -errno. */
static int predict_rounds(struct gw_daemon *d, struct calendar_view *v, size_t n, gw_usec_t wall,
                          struct gw_prediction *out, struct gw_prediction *latest) {
        _cleanup_free_ bool *held = gw_xcalloc(n + 1, sizeof *held);
        for (size_t i = 0; i < n; i++) {
                held[i] = v->pending[i].held;
                /* None yet: a job after a queued one not timed by its own replay waits for a round. */
                out[i] = latest[i] = (struct gw_prediction){ .id = v->pending[i].id,
                                                             .start = GW_USEC_INFINITY,
                                                             .end = GW_USEC_INFINITY };
        }
        _cleanup_free_ struct dep_link *links = dep_links(d, v, n);
        _cleanup_free_ gw_usec_t *est_feed = gw_xcalloc(n + 1, sizeof *est_feed);
        _cleanup_free_ gw_usec_t *promise_feed = gw_xcalloc(n + 1, sizeof *promise_feed);
        struct round_in ri = { held, est_feed, promise_feed };
        int r = 0;
        for (int round = 0; r == 0 && round < PREDICT_ROUNDS; round++) {
                bool moved = feed_ends(links, n, out, false, est_feed);
                moved = feed_ends(links, n, latest, true, promise_feed) || moved;
                if (round > 0 && !moved)
                        break;
                r = predict_round(d, v, n, wall, &ri, out, latest);
        }
        return r;
}

void gw_training_predict(struct gw_daemon *d, bool force) {
        gw_usec_t wall = d->now_wall;
        uint64_t fp = 0;
        /* The replay is of this host's GPUs; with Slurm placing the jobs it would promise
         * starts on GPUs they never run on. */
        if (d->jobs.n_queue == 0 || gw_backend_placement(d) != GW_EXEC_PLACE_HERE || (!force && !due(d, wall, &fp)))
                return;
        last_predict = d->now;
        last_fingerprint = force ? fingerprint(d) : fp;
        /* Fresh reads: they time the prediction itself, which the loop's clock cannot. */
        gw_usec_t t0 = gw_now_mono();
        struct calendar_view v;
        fill_max = PREDICT_MAX_JOBS;
        gw_calendar_view(d, &v);
        gw_training_fill_view(d, &v);
        fill_max = SIZE_MAX;
        size_t n = v.in.n_pending < PREDICT_MAX_JOBS ? v.in.n_pending : PREDICT_MAX_JOBS;
        v.in.n_pending = n;
        hold_deps_beyond(d, v.pending, n);
        _cleanup_free_ struct gw_prediction *out = gw_xcalloc(n + 1, sizeof *out);
        _cleanup_free_ struct gw_prediction *latest = gw_xcalloc(n + 1, sizeof *latest);
        int r = predict_rounds(d, &v, n, wall, out, latest);
        if (r < 0)
                log_debug("predicted starts: %s", strerror(-r));
        remember_seen(d, n);
        bool moved = false;
        for (size_t i = 0; i < d->jobs.n_queue; i++) {
                struct gw_job *j = d->jobs.queue[i]->job;
                bool ok = i < n && r == 0 && out[i].id == j->id && out[i].start != GW_USEC_INFINITY;
                gw_usec_t start = ok ? out[i].start : 0;
                gw_usec_t diff = start > j->predicted_start ? start - j->predicted_start : j->predicted_start - start;
                moved = moved || (!start != !j->predicted_start) || diff >= PUSH_MOVE;
                j->predicted_start = start;
                j->predicted_end = ok ? out[i].end : 0;
                /* No promise without an estimate: a job that gets none (held, beyond the
                 * first PREDICT_MAX_JOBS) is promised nothing either. */
                j->latest_start =
                        ok && latest[i].id == j->id && latest[i].start != GW_USEC_INFINITY ? latest[i].start : 0;
                j->predicted_attempt = j->attempt;
        }
        gw_calendar_view_free(&v);
        if (moved)
                gw_events_predictions(d);
        log_debug("predicted starts of %zu of %zu queued jobs in %.1f ms", n, d->jobs.n_queue,
                  (double) (gw_now_mono() - t0) / 1e3);
}

/* The job's place in the queue, or SIZE_MAX. */
static size_t queue_position(const struct gw_daemon *d, const struct gw_job *j) {
        for (size_t i = 0; i < d->jobs.n_queue; i++)
                if (d->jobs.queue[i]->job->id == j->id)
                        return i;
        return SIZE_MAX;
}

/* How long until the next prediction at most: PREDICT_EVERY after the last one, at the
 * next GPU sample. */
static gw_usec_t next_due_in(const struct gw_daemon *d) {
        gw_usec_t left = last_predict ? last_predict + PREDICT_EVERY - d->now : 0;
        return (left > 0 ? left : 0) + d->cfg->sample_interval;
}

void gw_training_predict_unseen(struct gw_daemon *d, const struct gw_job *j) {
        if (j->state != GW_JOB_PENDING || seen_by_last(j) || queue_position(d, j) >= PREDICT_MAX_JOBS)
                return;
        if ((last_predict && d->now - last_predict < PREDICT_ON_ASK) || started_recently(d, d->now_wall))
                return;
        gw_training_predict(d, true);
}

/* A prediction made for the attempt queued now (a retry's earlier one is not). */
static bool has_prediction(const struct gw_job *j) {
        return j->state == GW_JOB_PENDING && j->predicted_attempt == j->attempt && j->predicted_start > 0;
}

bool gw_training_start_shown(struct gw_daemon *d, const struct gw_job *j, char *buf, size_t n, const char **ret_words) {
        *ret_words = NULL;
        /* With the backend placing the jobs nothing is predicted here (Slurm: squeue --start is the word). */
        if (j->state != GW_JOB_PENDING || gw_backend_placement(d) != GW_EXEC_PLACE_HERE)
                return true;
        const struct gw_djob *dep = j->after_job > 0 ? gw_jobmap_get(&d->jobs.map, j->after_job) : NULL;
        struct gw_predict_wait w = {
                .after_job = j->after_job,
                .after_ok = j->after_kind == GW_DEP_KIND_OK,
                .after_held = dep && dep->job->state == GW_JOB_HELD,
                .after_queued = dep && (dep->job->state == GW_JOB_PENDING || dep->job->state == GW_JOB_RUNNING),
                .reason = j->wait_reason,
        };
        /* Waiting for a GPU to come back, no time can be given: which GPU is the news. */
        bool drained = j->wait_reason == GW_REASON_DRAINED;
        char gpus[GW_WHY_TEXT];
        if (drained)
                w.drained = gw_queue_drained_words(d, j, gpus, sizeof gpus);
        bool has = has_prediction(j);
        /* The loop's wall clock: a start predicted in this iteration is now, not the past. */
        bool passed = has && j->predicted_start < d->now_wall;
        if (w.after_held || passed || drained || (!has && w.after_queued))
                *ret_words = gw_predict_wait_words(&w, buf, n);
        return !w.after_held && !passed && !drained;
}

void gw_training_start_view(struct gw_job *copy, bool shown, const char *words) {
        if (!shown)
                copy->predicted_start = copy->predicted_end = copy->latest_start = 0;
        copy->wait_view = words;
}

json_t *gw_training_prediction_json(struct gw_daemon *d, const struct gw_job *j) {
        if (j->state != GW_JOB_PENDING && j->state != GW_JOB_HELD)
                return json_null();
        size_t pos = queue_position(d, j);
        struct gw_train_runtime r = { 0 };
        bool hist = gw_training_runtime(d, j, &r) == 0 && r.n > 0;
        gw_usec_t len = hist && r.median < j->time_limit ? r.median : j->time_limit;
        json_t *ids = json_array(), *runs = json_array();
        for (size_t i = 0; i < r.n; i++) {
                json_array_append_new(ids, json_integer(r.ids[i]));
                json_array_append_new(runs, json_real((double) r.runs[i] / 1e6));
        }
        char buf[200];
        struct gw_predict_none none = { .held = j->state == GW_JOB_HELD,
                                        .position = pos,
                                        .max_jobs = PREDICT_MAX_JOBS,
                                        .seen = seen_by_last(j),
                                        .due_in = next_due_in(d),
                                        .horizon = PREDICT_HORIZON,
                                        .slurm = gw_backend_placement(d) == GW_EXEC_PLACE_NODES };
        char words_buf[GW_WAIT_WORDS_SIZE];
        const char *words;
        bool shown = gw_training_start_shown(d, j, words_buf, sizeof words_buf, &words);
        /* A start from before the job last left the queue is not a prediction of this wait. */
        bool has = j->state == GW_JOB_PENDING && j->predicted_start && none.seen && shown;
        /* The words once a prediction covered the job: before, "not predicted yet" is the news,
         * but for a GPU out of service, which no prediction will time. */
        bool covered = (none.seen && !none.held && !none.slurm && pos < PREDICT_MAX_JOBS) ||
                       j->wait_reason == GW_REASON_DRAINED;
        const char *why = has ? NULL : words && covered ? words : gw_predict_why_none(&none, buf, sizeof buf);
        json_t *o = json_object();
        json_object_set_new(o, "predicted_wait", words ? json_string(words) : json_null());
        json_object_set_new(o, "predicted_start", has ? json_real((double) j->predicted_start / 1e6) : json_null());
        json_object_set_new(o, "predicted_end",
                            has && j->predicted_end ? json_real((double) j->predicted_end / 1e6) : json_null());
        json_object_set_new(o, "latest_start",
                            has && j->latest_start ? json_real((double) j->latest_start / 1e6) : json_null());
        json_object_set_new(o, "why_none", why ? json_string(why) : json_null());
        json_object_set_new(o, "runtime_seconds", json_real((double) len / 1e6));
        json_object_set_new(o, "runtime_from",
                            json_string(!hist                      ? "time_limit"
                                        : r.median < j->time_limit ? "history"
                                                                   : "time_limit (history is longer)"));
        json_object_set_new(o, "similar_jobs", ids);
        json_object_set_new(o, "similar_runtimes", runs);
        return o;
}
