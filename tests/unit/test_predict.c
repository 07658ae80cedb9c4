/* Predicted starts (core/predict.h): hand-computed replays of the scheduler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/predict.h"

#define SEC GW_USEC_PER_SEC
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)
#define INF GW_USEC_INFINITY
#define M(i) (UINT64_C(1) << (i))
#define NOW ((gw_usec_t) 19720 * DAY + 15 * HOUR)
#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

struct world {
        struct gw_sched_gpu gpus[8];
        struct gw_booking b[4];
        struct gw_cal_job run[4];
        struct gw_cal_pending pend[8];
        struct gw_calendar_input in;
        struct gw_prediction out[8];
};

static void world_init(struct world *w, int n_gpus) {
        memset(w, 0, sizeof(*w));
        for (int i = 0; i < n_gpus; i++)
                w->gpus[i] = (struct gw_sched_gpu){ .index = i, .usable = true };
        w->in = (struct gw_calendar_input){ .gpus = w->gpus,
                                            .n_gpus = (size_t) n_gpus,
                                            .bookings = w->b,
                                            .running = w->run,
                                            .pending = w->pend };
}

static struct gw_cal_job *running(struct world *w, int64_t id, uint64_t mask, gw_usec_t limit_end, gw_usec_t eta) {
        struct gw_cal_job *j = &w->run[w->in.n_running++];
        *j = (struct gw_cal_job){ .id = id, .gpu_mask = mask, .start = NOW - HOUR, .end = limit_end, .eta = eta };
        for (int g = 0; g < 8; g++)
                if (mask & M(g))
                        w->gpus[g].job_id = id;
        return j;
}

static struct gw_cal_pending *pending(struct world *w, int64_t id, int ngpus, gw_usec_t limit, gw_usec_t runtime) {
        struct gw_cal_pending *p = &w->pend[w->in.n_pending++];
        *p = (struct gw_cal_pending){ .id = id, .ngpus = ngpus, .time_limit = limit, .runtime = runtime };
        return p;
}

static void predict(struct world *w, gw_usec_t horizon) {
        assert_int_equal(gw_predict_starts(&w->in, NOW, horizon, w->out), 0);
}

static void expect(const struct world *w, size_t i, gw_usec_t start, gw_usec_t end, uint64_t mask) {
        const struct gw_prediction *p = &w->out[i];
        if (p->id != w->pend[i].id || p->start != start || p->end != end || p->gpu_mask != mask)
                fail_msg("job %lld: got %+lldm..%+lldm on %#llx, want %+lldm..%+lldm on %#llx", (long long) p->id,
                         p->start == INF ? 99999LL : (long long) ((p->start - NOW) / MIN),
                         p->end == INF ? 99999LL : (long long) ((p->end - NOW) / MIN), (unsigned long long) p->gpu_mask,
                         start == INF ? 99999LL : (long long) ((start - NOW) / MIN),
                         end == INF ? 99999LL : (long long) ((end - NOW) / MIN), (unsigned long long) mask);
}

/* Job 1 holds both GPUs with a 4 h limit but its ETA is +1h.  Job 10 (2 GPUs, median of
 * past runs 30 min) starts at the ETA; job 11 (1 GPU, no history: its 1 h limit) and job 12
 * (1 GPU, 3 h) start when job 10's expected run ends, not its limit. */
static void eta_and_runtimes(void **state) {
        struct world w;
        (void) state;
        world_init(&w, 2);
        running(&w, 1, M(0) | M(1), NOW + 4 * HOUR, NOW + HOUR);
        pending(&w, 10, 2, 2 * HOUR, 30 * MIN);
        pending(&w, 11, 1, HOUR, 0);
        pending(&w, 12, 1, 3 * HOUR, 0);
        predict(&w, 72 * HOUR);
        expect(&w, 0, NOW + HOUR, NOW + 90 * MIN, M(0) | M(1));
        expect(&w, 1, NOW + 90 * MIN, NOW + 150 * MIN, M(0));
        expect(&w, 2, NOW + 90 * MIN, NOW + 270 * MIN, M(1));

        /* Without an ETA the time limit stands; an ETA after the limit does not extend it. */
        w.run[0].eta = 0;
        predict(&w, 72 * HOUR);
        expect(&w, 0, NOW + 4 * HOUR, NOW + 270 * MIN, M(0) | M(1));
        w.run[0].eta = NOW + 9 * HOUR;
        predict(&w, 72 * HOUR);
        expect(&w, 0, NOW + 4 * HOUR, NOW + 270 * MIN, M(0) | M(1));
        /* A run time above the limit is cut to the limit. */
        w.run[0].eta = NOW + HOUR;
        w.pend[0].runtime = 5 * HOUR;
        predict(&w, 72 * HOUR);
        expect(&w, 0, NOW + HOUR, NOW + 3 * HOUR, M(0) | M(1));
}

/* The scheduler's rules, not a simpler list schedule: job 20 (2 GPUs) is the head, reserved
 * at +2h when job 1 ends.  Job 21 would finish before then by its history (1 h) but its 3 h
 * limit runs past the reservation, so it waits as it would live; job 22 (1 h limit)
 * backfills on GPU 1 now. */
static void head_and_backfill(void **state) {
        struct world w;
        (void) state;
        world_init(&w, 2);
        running(&w, 1, M(0), NOW + 2 * HOUR, 0);
        pending(&w, 20, 2, HOUR, 0);
        pending(&w, 21, 1, 3 * HOUR, HOUR);
        pending(&w, 22, 1, HOUR, 0);
        predict(&w, 72 * HOUR);
        expect(&w, 0, NOW + 2 * HOUR, NOW + 3 * HOUR, M(0) | M(1));
        expect(&w, 1, NOW + 3 * HOUR, NOW + 4 * HOUR, M(0));
        expect(&w, 2, NOW, NOW + HOUR, M(1));
}

/* The head's estimate (ETAs, run times) and its promise (time limits) for a world. */
static void head_starts(struct world *w, gw_usec_t *ret_estimate, gw_usec_t *ret_promise) {
        struct gw_prediction latest[8];
        predict(w, 72 * HOUR);
        assert_int_equal(gw_predict_latest_starts(&w->in, NOW, 72 * HOUR, latest), 0);
        assert_int_equal(latest[0].id, w->pend[0].id);
        *ret_estimate = w->out[0].start;
        *ret_promise = latest[0].start;
}

/* Without an ETA or a run time the estimate is the promise: one replay serves both. */
static void limits_only_is_one_replay(void **state) {
        struct world w;
        struct gw_prediction latest[8];
        (void) state;
        world_init(&w, 2);
        running(&w, 1, M(0), NOW + 2 * HOUR, 0);
        pending(&w, 20, 2, HOUR, 0);
        pending(&w, 21, 1, 3 * HOUR, 0);
        pending(&w, 22, 1, HOUR, 0);
        assert_true(gw_predict_limits_only(&w.in));
        predict(&w, 72 * HOUR);
        assert_int_equal(gw_predict_latest_starts(&w.in, NOW, 72 * HOUR, latest), 0);
        assert_memory_equal(latest, w.out, 3 * sizeof *latest);
        w.pend[1].runtime = HOUR;
        assert_false(gw_predict_limits_only(&w.in));
        w.pend[1].runtime = 0;
        w.run[0].eta = NOW + HOUR;
        assert_false(gw_predict_limits_only(&w.in));
}

/* Job 1 runs on GPU 0 with a 30 min limit and an ETA at +10m; job 50 (2 GPUs) waits for
 * it: estimate +10m, promise +30m.  Job 51 (1 GPU, 20 min limit) backfills on GPU 1: queued
 * or once started, it moves the head's estimate to its end (+20m), never the promise. */
static void promise_and_backfill(void **state) {
        struct world w;
        gw_usec_t est, promise;
        (void) state;
        world_init(&w, 2);
        running(&w, 1, M(0), NOW + 30 * MIN, NOW + 10 * MIN);
        pending(&w, 50, 2, 10 * MIN, 0);
        head_starts(&w, &est, &promise);
        assert_int_equal(est, NOW + 10 * MIN);
        assert_int_equal(promise, NOW + 30 * MIN);

        pending(&w, 51, 1, 20 * MIN, 0); /* queued behind the head: the replay backfills it */
        head_starts(&w, &est, &promise);
        expect(&w, 1, NOW, NOW + 20 * MIN, M(1));
        assert_int_equal(est, NOW + 20 * MIN);
        assert_int_equal(promise, NOW + 30 * MIN);

        w.in.n_pending = 1; /* started: running on GPU 1 until its limit, no ETA yet */
        running(&w, 51, M(1), NOW + 20 * MIN, 0);
        head_starts(&w, &est, &promise);
        assert_int_equal(est, NOW + 20 * MIN);
        assert_int_equal(promise, NOW + 30 * MIN);

        /* The promise rests on limits alone: a history shorter than the limit moves only the
         * estimate; bad input is refused as gw_predict_starts refuses it. */
        w.in.n_running = 1;
        w.gpus[1].job_id = 0;
        pending(&w, 51, 1, 20 * MIN, 5 * MIN);
        head_starts(&w, &est, &promise);
        assert_int_equal(est, NOW + 10 * MIN);
        assert_int_equal(promise, NOW + 30 * MIN);
        assert_int_equal(gw_predict_latest_starts(NULL, NOW, HOUR, w.out), -EINVAL);
        assert_int_equal(gw_predict_latest_starts(&w.in, NOW, 0, w.out), -EINVAL);
}

/* Job 1 runs on GPU 0 with a 30 min limit; job 60, a retry waiting out a backoff until +8s,
 * starts then on GPU 1: the later of its backoff's end and a free GPU, not job 1's limit. */
static void backoff_on_a_free_gpu(void **state) {
        struct world w;
        gw_usec_t est, promise;
        (void) state;
        world_init(&w, 2);
        running(&w, 1, M(0), NOW + 30 * MIN, 0);
        pending(&w, 60, 1, 10 * MIN, 0)->not_before = NOW + 8 * SEC;
        head_starts(&w, &est, &promise);
        expect(&w, 0, NOW + 8 * SEC, NOW + 8 * SEC + 10 * MIN, M(1));
        assert_int_equal(promise, NOW + 8 * SEC);
        /* Both GPUs busy until +30m: it waits for them, past its backoff. */
        running(&w, 2, M(1), NOW + 30 * MIN, 0);
        head_starts(&w, &est, &promise);
        assert_int_equal(est, NOW + 30 * MIN);
        assert_int_equal(promise, NOW + 30 * MIN);
}

/* Booking 5 holds GPU 1 from +1h to +3h.  Job 30 (1 GPU, 2 h) may only take GPU 0; job 31
 * runs in the booking from its start; job 33 (2 GPUs, 1 h) fits only after the booking;
 * job 34's booking awaits approval: no prediction. */
static void bookings(void **state) {
        struct world w;
        (void) state;
        world_init(&w, 2);
        w.b[0] = (struct gw_booking){ .id = 5,
                                      .ngpus = 1,
                                      .start = NOW + HOUR,
                                      .end = NOW + 3 * HOUR,
                                      .gpu_mask = M(1),
                                      .state = GW_BOOKING_APPROVED };
        w.b[1] = (struct gw_booking){ .id = 6,
                                      .ngpus = 1,
                                      .start = NOW + 10 * HOUR,
                                      .end = NOW + 11 * HOUR,
                                      .gpu_mask = M(0),
                                      .state = GW_BOOKING_PENDING_APPROVAL };
        w.in.n_bookings = 2;
        pending(&w, 30, 1, 2 * HOUR, 0);
        pending(&w, 31, 1, 5 * HOUR, 0)->booking_id = 5;
        pending(&w, 33, 2, HOUR, 0);
        pending(&w, 34, 1, HOUR, 0)->booking_id = 6;
        predict(&w, 72 * HOUR);
        expect(&w, 0, NOW, NOW + 2 * HOUR, M(0));
        expect(&w, 1, NOW + HOUR, NOW + 3 * HOUR, M(1)); /* clipped to the booking's end */
        expect(&w, 2, NOW + 3 * HOUR, NOW + 4 * HOUR, M(0) | M(1));
        expect(&w, 3, INF, INF, 0);
}

/* Booking 7 holds GPU 1, which broke: its job 40 waits for it (no start on GPU 0, which is
 * free), while job 41 outside any booking takes GPU 0. */
static void booking_on_broken_gpu(void **state) {
        struct world w;
        (void) state;
        world_init(&w, 2);
        w.gpus[1].usable = false;
        w.b[0] = (struct gw_booking){ .id = 7,
                                      .ngpus = 1,
                                      .start = NOW - HOUR,
                                      .end = NOW + 3 * HOUR,
                                      .gpu_mask = M(1),
                                      .state = GW_BOOKING_APPROVED };
        w.in.n_bookings = 1;
        pending(&w, 40, 1, HOUR, 0)->booking_id = 7;
        pending(&w, 41, 1, HOUR, 0);
        predict(&w, 72 * HOUR);
        expect(&w, 0, INF, INF, 0);
        expect(&w, 1, NOW, NOW + HOUR, M(0));
}

/* Held jobs get nothing and hold nothing back; a dependency waits for the predicted end of
 * the job it follows; a retry's backoff delays it. */
static void held_dependency_backoff(void **state) {
        struct world w;
        (void) state;
        world_init(&w, 1);
        pending(&w, 40, 1, HOUR, 0)->held = true;
        pending(&w, 41, 1, 2 * HOUR, HOUR);
        pending(&w, 42, 1, HOUR, 0)->after_job = 41;
        pending(&w, 43, 1, HOUR, 0)->not_before = NOW + 30 * MIN;
        predict(&w, 72 * HOUR);
        expect(&w, 0, INF, INF, 0);
        expect(&w, 1, NOW, NOW + HOUR, M(0));
        expect(&w, 2, NOW + HOUR, NOW + 2 * HOUR, M(0));
        expect(&w, 3, NOW + 2 * HOUR, NOW + 3 * HOUR, M(0));

        /* A job after a held one never starts, nor does one after it: the daemon keeps
         * them waiting until it is released (not the replay's "done"). */
        w.pend[1].held = true;
        pending(&w, 44, 1, HOUR, 0)->after_job = 42;
        predict(&w, 72 * HOUR);
        expect(&w, 2, INF, INF, 0);
        expect(&w, 4, INF, INF, 0);
        expect(&w, 3, NOW + 30 * MIN, NOW + 90 * MIN, M(0));
        w.pend[1].held = false;
        w.in.n_pending--;

        /* A dependency on a job that is not in the input (it ended) is met. */
        w.pend[2].after_job = 999;
        w.pend[1].held = true;
        predict(&w, 72 * HOUR);
        expect(&w, 2, NOW, NOW + HOUR, M(0));
}

/* A job after one the replay does not time (a slice job: held here, timed by the slice
 * replay) waits for the end the caller gives, not forever; the GPU it would have had goes to
 * the job behind it meanwhile.  The later of that end and a backoff counts; an end already
 * past is no wait; a negative one is refused. */
static void dependency_end_given_by_the_caller(void **state) {
        struct world w;
        (void) state;
        world_init(&w, 1);
        pending(&w, 60, 1, HOUR, 0)->held = true; /* the slice job */
        struct gw_cal_pending *after = pending(&w, 61, 1, HOUR, 0);
        after->after_job = 60;
        after->after_end = NOW + 90 * MIN;
        pending(&w, 62, 1, HOUR, 0);
        predict(&w, 72 * HOUR);
        expect(&w, 0, INF, INF, 0);
        expect(&w, 1, NOW + 90 * MIN, NOW + 150 * MIN, M(0)); /* job 62 ran meanwhile */
        expect(&w, 2, NOW, NOW + HOUR, M(0));
        /* Without it, the held job keeps it waiting: that is what the caller avoids. */
        w.pend[1].after_end = 0;
        predict(&w, 72 * HOUR);
        expect(&w, 1, INF, INF, 0);

        w.pend[1].after_end = NOW + 90 * MIN;
        w.pend[1].not_before = NOW + 2 * HOUR;
        predict(&w, 72 * HOUR);
        expect(&w, 1, NOW + 2 * HOUR, NOW + 3 * HOUR, M(0));
        w.pend[1].not_before = 0;
        w.pend[1].after_end = NOW - MIN;
        predict(&w, 72 * HOUR);
        expect(&w, 1, NOW, NOW + HOUR, M(0));
        expect(&w, 2, NOW + HOUR, NOW + 2 * HOUR, M(0));
        w.pend[1].after_end = -1;
        assert_int_equal(gw_predict_starts(&w.in, NOW, HOUR, w.out), -EINVAL);
}

/* Only starts before the horizon; a drained GPU is never given; bad input is refused. */
static void horizon_and_input(void **state) {
        struct world w;
        (void) state;
        world_init(&w, 2);
        w.gpus[1].usable = false;
        running(&w, 1, M(0), NOW + 5 * HOUR, 0);
        pending(&w, 50, 1, HOUR, 0);
        pending(&w, 51, 2, HOUR, 0);
        predict(&w, 4 * HOUR);
        expect(&w, 0, INF, INF, 0);
        expect(&w, 1, INF, INF, 0);
        predict(&w, 6 * HOUR);
        expect(&w, 0, NOW + 5 * HOUR, NOW + 6 * HOUR, M(0));
        expect(&w, 1, INF, INF, 0);

        assert_int_equal(gw_predict_starts(&w.in, NOW, 0, w.out), -EINVAL);
        w.pend[0].ngpus = 0;
        assert_int_equal(gw_predict_starts(&w.in, NOW, HOUR, w.out), -EINVAL);
        w.pend[0].ngpus = 1;
        w.pend[0].runtime = -1;
        assert_int_equal(gw_predict_starts(&w.in, NOW, HOUR, w.out), -EINVAL);
        assert_int_equal(gw_predict_starts(NULL, NOW, HOUR, w.out), -EINVAL);
}

/* 500 queued jobs on 8 GPUs: every one gets a start, in an order that never goes back in
 * time for jobs of one GPU width, and the replay ends. */
static void long_queue(void **state) {
        static struct gw_cal_pending pend[500];
        static struct gw_prediction out[500];
        struct gw_sched_gpu gpus[8];
        (void) state;
        for (int i = 0; i < 8; i++)
                gpus[i] = (struct gw_sched_gpu){ .index = i, .usable = true };
        for (int i = 0; i < 500; i++)
                pend[i] = (struct gw_cal_pending){ .id = 100 + i,
                                                   .ngpus = 1 + i % 4,
                                                   .time_limit = 4 * HOUR,
                                                   .runtime = (1 + i % 3) * HOUR };
        struct gw_calendar_input in = { .gpus = gpus, .n_gpus = 8, .pending = pend, .n_pending = 500 };
        assert_int_equal(gw_predict_starts(&in, NOW, 365 * DAY, out), 0);
        for (int i = 0; i < 500; i++) {
                assert_true(out[i].start != INF);
                assert_int_equal(__builtin_popcountll(out[i].gpu_mask), pend[i].ngpus);
        }
        assert_true(out[0].start == NOW && out[499].start > NOW + 50 * HOUR);
}

static void job_key(void **state) {
        char a[256], b[256];
        const char *yolo1[] = { "/usr/bin/yolo", "detect",    "train", "model=yolov8n.pt", "epochs=100", "imgsz=640",
                                "batch=16",      "name=run3", NULL };
        const char *yolo2[] = { "yolo", "detect", "train", "epochs=100", "name=run4", "batch=16", "imgsz=640", NULL };
        const char *yolo3[] = { "yolo", "detect", "train", "epochs=50", "imgsz=640", "batch=16", NULL };
        const char *py[] = { "python3", "train.py", "--epochs", "10", "--batch=32", "--amp", NULL };
        (void) state;
        assert_int_equal(gw_predict_job_key(yolo1, a, sizeof(a)), 0);
        assert_string_equal(a, "yolo detect train|epochs=100|imgsz=640|batch=16");
        assert_int_equal(gw_predict_job_key(yolo2, b, sizeof(b)), 0);
        assert_string_equal(a, b);
        assert_int_equal(gw_predict_job_key(yolo3, b, sizeof(b)), 0);
        assert_string_not_equal(a, b);
        assert_int_equal(gw_predict_job_key(py, a, sizeof(a)), 0);
        assert_string_equal(a, "python3 train.py|epochs=10|imgsz=|batch=32");
        assert_int_equal(gw_predict_job_key(py, a, 12), -ENOBUFS);
        assert_int_equal(gw_predict_job_key(NULL, a, sizeof(a)), -EINVAL);
}

static void median(void **state) {
        gw_usec_t odd[] = { 3 * HOUR, HOUR, 2 * HOUR };
        gw_usec_t even[] = { 4 * HOUR, HOUR, 3 * HOUR, 2 * HOUR };
        (void) state;
        assert_int_equal(gw_predict_median(odd, 3), 2 * HOUR);
        assert_int_equal(gw_predict_median(even, 4), 150 * MIN);
        assert_int_equal(gw_predict_median(odd, 0), 0);
}

/* max_gpus=1 for uid 1000: its job 1 holds GPU 0 until +1h (its ETA) with GPUs 1-3 free.
 * Job 10 of the same user (1 GPU) cannot start before job 1 ends, though GPUs are free; job 11
 * of another user starts now; job 12, the first user's again, waits for job 10's end (its
 * expected run, 30 min) as job 10 holds the one GPU the quota leaves the user. */
static void quota_max_gpus(void **state) {
        struct world w;
        (void) state;
        world_init(&w, 4);
        running(&w, 1, M(0), NOW + 4 * HOUR, NOW + HOUR)->uid = 1000;
        struct gw_cal_pending *p = pending(&w, 10, 1, 2 * HOUR, 30 * MIN);
        p->uid = 1000;
        p->max_gpus = 1;
        pending(&w, 11, 1, HOUR, 0)->uid = 1001;
        p = pending(&w, 12, 1, HOUR, 0);
        p->uid = 1000;
        p->max_gpus = 1;
        predict(&w, 72 * HOUR);
        expect(&w, 0, NOW + HOUR, NOW + HOUR + 30 * MIN, M(0));
        expect(&w, 1, NOW, NOW + HOUR, M(1));
        expect(&w, 2, NOW + HOUR + 30 * MIN, NOW + 2 * HOUR + 30 * MIN, M(0));
        /* Without the quota, both start now. */
        w.pend[0].max_gpus = w.pend[2].max_gpus = 0;
        predict(&w, 72 * HOUR);
        expect(&w, 0, NOW, NOW + 30 * MIN, M(1));
        expect(&w, 2, NOW, NOW + HOUR, M(3));
}

static void why_none(void **state) {
        char buf[200];
        struct gw_predict_none in = { .position = 3,
                                      .max_jobs = 500,
                                      .seen = true,
                                      .due_in = 2500 * GW_USEC_PER_MSEC,
                                      .horizon = 14 * 24 * HOUR };
        (void) state;
        assert_string_equal(gw_predict_why_none(&in, buf, sizeof buf),
                            "no start within 14 days (or never: its booking awaits approval, or is gone, or it waits "
                            "for a job further back in the queue)");
        /* Queued since the last prediction (just submitted, back into its backoff): no verdict
         * yet, which is not "never". */
        in.seen = false;
        assert_string_equal(gw_predict_why_none(&in, buf, sizeof buf),
                            "not predicted yet: the next prediction is due within 3 s");
        in.due_in = 0;
        assert_string_equal(gw_predict_why_none(&in, buf, sizeof buf),
                            "not predicted yet: the next prediction is due within 1 s");
        in.position = 500;
        assert_string_equal(gw_predict_why_none(&in, buf, sizeof buf),
                            "not predicted: only the first 500 queued jobs are");
        in.held = true;
        assert_string_equal(gw_predict_why_none(&in, buf, sizeof buf), "the job is held");
        in.slurm = true;
        assert_string_equal(gw_predict_why_none(&in, buf, sizeof buf),
                            "not predicted: Slurm places the job, on GPUs this host does not see (once submitted, "
                            "`squeue --start` gives Slurm's own estimate)");
}

/* What a start waits for where no future time can be given. */
static void wait_words(void **state) {
        char buf[96];
        struct gw_predict_wait w = { .after_job = 12, .after_held = true, .reason = GW_REASON_DEPENDENCY };
        (void) state;
        assert_string_equal(gw_predict_wait_words(&w, buf, sizeof buf), "after job 12 is released");
        w.after_held = false;
        w.after_queued = true;
        assert_string_equal(gw_predict_wait_words(&w, buf, sizeof buf), "after job 12 ends");
        w.after_ok = true;
        assert_string_equal(gw_predict_wait_words(&w, buf, sizeof buf), "after job 12 completes");
        w = (struct gw_predict_wait){ .reason = GW_REASON_RESOURCES };
        assert_string_equal(gw_predict_wait_words(&w, buf, sizeof buf), "when GPUs free up");
        w.reason = GW_REASON_QUOTA;
        assert_string_equal(gw_predict_wait_words(&w, buf, sizeof buf), "when its user's quota allows");
        w.reason = GW_REASON_DEPENDENCY; /* no job named: nothing to say */
        assert_null(gw_predict_wait_words(&w, buf, sizeof buf));
        w.reason = GW_REASON_NONE;
        assert_null(gw_predict_wait_words(&w, buf, sizeof buf));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(why_none),
                cmocka_unit_test(quota_max_gpus),
                cmocka_unit_test(wait_words),
                cmocka_unit_test(eta_and_runtimes),
                cmocka_unit_test(head_and_backfill),
                cmocka_unit_test(promise_and_backfill),
                cmocka_unit_test(backoff_on_a_free_gpu),
                cmocka_unit_test(bookings),
                cmocka_unit_test(booking_on_broken_gpu),
                cmocka_unit_test(held_dependency_backoff),
                cmocka_unit_test(dependency_end_given_by_the_caller),
                cmocka_unit_test(horizon_and_input),
                cmocka_unit_test(long_queue),
                cmocka_unit_test(job_key),
                cmocka_unit_test(limits_only_is_one_replay),
                cmocka_unit_test(median),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
