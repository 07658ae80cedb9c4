/* Benchmark of the booking calendar on a busy host: 64 GPUs, 500 bookings over the next 72
 * hours, 2,000 pending jobs and a running job on most GPUs.  Times what the daemon does per
 * request, with the real core functions on plain data (no daemon, no I/O):
 *   booking check  POST /api/v1/bookings: check the request, the user's booked GPUs, the
 *                  quota, then place it (nearest-window search included);
 *   schedule       GET /api/v1/schedule?hours=72: the layout with predicted starts, then
 *                  the text chart;
 *   prediction     the daemon's own (daemon/training/training_predict.c): gw_predict_starts 14 days
 *                  ahead, as it runs on the daemon's thread (the daemon hands it at most
 *                  its first PREDICT_MAX_JOBS queued jobs: try --pending 500);
 *   plan           one scheduler pass (gw_sched_plan) over every pending job, and the same
 *                  with fair share (gw_fs_factors for --users users with random decayed
 *                  usage, then gw_sched_plan_fair): try --pending 10000.
 * Prints the median and the slowest of N runs of each.  Inputs come from a fixed seed, so
 * runs compare (tests/fakes/fake_host.c, shared with the replay test, builds the host).
 *
 *   gw-bench-schedule [--runs N] [--bookings N] [--pending N] [--gpus N] [--seed S] [--users N]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/parse.h"
#include "core/calendar.h"
#include "core/fairshare.h"
#include "core/predict.h"
#include "core/quota.h"
#include "fake_host.h"

#define HOUR ((gw_usec_t) 3600 * GW_USEC_PER_SEC)
#define PREDICT_HORIZON (14 * 24 * HOUR) /* as daemon/training/training_predict.c */
#define CHART_SIZE (256 * 1024)

struct params {
        long long runs, bookings, pending, gpus, seed, users;
};

static double now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

#define STEP ((gw_usec_t) 10 * 60 * GW_USEC_PER_SEC)

/* The host of docs/PERFORMANCE.md (tests/fakes/fake_host.c draws it): about one GPU in 50
 * drained; a job on 7 of 8 GPUs, each ending within the hour (before the bookings on them);
 * bookings of 1-4 GPUs for 1-4 h, placed over the next 72 h as users would, one in ten
 * awaiting approval; pending jobs of 1-8 GPUs and 10 min-8 h, one in 20 held, one in 50 in
 * a booking. */
static int make_host(struct fake_host *h, const struct params *p, gw_usec_t now) {
        int64_t ng = p->gpus, nrun = ng - ng / 8 - 1 > 0 ? ng - ng / 8 - 1 : 0;
        const struct fake_host_shape shape = {
                .now = now,
                .step = STEP,
                .gpus = { ng, ng },
                .usable_pct = 98,
                .running = { nrun, nrun },
                .running_gpus = { 1, 1 },
                .running_end = { 1, 6 },
                .running_apart = true,
                .bookings = { p->bookings, p->bookings },
                .booking_gpus = { 1, ng < 4 ? ng : 4 },
                .booking_start = { 0, 68 * 6 + 5 },
                .booking_len = { 6, 24 },
                .bookings_placed = true,
                .unapproved_pct = 10,
                .pending = { p->pending, p->pending },
                .pending_gpus = { 1, 8 },
                .limit = { 1, 48 },
                .booked_pct = 2,
                .held_pct = 5,
        };
        struct fake_rng rng = { (uint64_t) p->seed };
        int r = fake_host_make(h, &shape, &rng);
        if (r == -ENOSPC)
                fprintf(stderr, "gw-bench-schedule: cannot place booking %zu\n", h->in.n_bookings + 1);
        return r;
}

/* One booking request as the daemon checks it (handlers_share.c book()). */
static int booking_check(const struct fake_host *h, const struct gw_quota *lim, gw_usec_t now, long long k) {
        struct gw_calendar_request req = {
                .ngpus = 8,
                .start = now + (k % 48) * HOUR,
                .duration = 4 * HOUR,
        };
        char msg[GW_CALENDAR_MSG_SIZE], qmsg[GW_QUOTA_MSG_SIZE];
        if (gw_calendar_check_request(&req, now, msg, sizeof msg) < 0)
                return -EINVAL;
        int64_t mine = gw_calendar_user_booked_gpus(h->bookings, h->in.n_bookings, 1007, req.start,
                                                    req.start + req.duration, 0);
        if (gw_quota_check_booking(lim, mine, req.ngpus, req.start, req.start + req.duration, now, qmsg, sizeof qmsg) <
            0)
                return -EINVAL;
        struct gw_calendar_placement pl;
        return gw_calendar_place(&h->in, &req, NULL, NULL, &pl);
}

/* GET /api/v1/schedule?hours=72 (handlers_share.c gw_on_schedule()), without the JSON. */
static int schedule(const struct fake_host *h, gw_usec_t now, struct gw_schedule_segment *segs, size_t cap, char *chart,
                    size_t *ret_n) {
        int r = gw_schedule_layout(&h->in, now, 72 * HOUR, segs, cap, ret_n);
        if (r < 0)
                return r;
        uint64_t rows = gw_sched_mask_first(h->in.n_gpus);
        r = gw_schedule_render_text(segs, *ret_n, rows, now - now % HOUR, now + 72 * HOUR, HOUR, NULL, NULL, chart,
                                    CHART_SIZE);
        return r == -ENOBUFS ? 0 : r;
}

static int parse_args(int argc, char **argv, struct params *p) {
        static const struct {
                const char *flag;
                long long lo, hi;
                size_t off;
        } flags[] = {
                { "--runs", 1, 10000, offsetof(struct params, runs) },
                { "--bookings", 0, 100000, offsetof(struct params, bookings) },
                { "--pending", 0, 1000000, offsetof(struct params, pending) },
                { "--gpus", 1, 64, offsetof(struct params, gpus) },
                { "--seed", 1, INT64_MAX, offsetof(struct params, seed) },
                { "--users", 1, 100000, offsetof(struct params, users) },
        };
        for (int i = 1; i < argc; i += 2) {
                size_t f = 0;
                while (f < sizeof flags / sizeof flags[0] && strcmp(argv[i], flags[f].flag))
                        f++;
                if (f == sizeof flags / sizeof flags[0] || i + 1 >= argc ||
                    gw_parse_int(argv[i + 1], flags[f].lo, flags[f].hi, (long long *) ((char *) p + flags[f].off)) <
                            0) {
                        fprintf(stderr, "usage: gw-bench-schedule [--runs N] [--bookings N] [--pending N] [--gpus N] "
                                        "[--seed S] [--users N]\n");
                        return -EINVAL;
                }
        }
        return 0;
}

/* The scheduler's own input for the host: its pending jobs (a user each, round robin), GPUs and
 * running jobs, and users with decayed usage of 0-500 GPU-h from a seed. */
struct plan_bench {
        struct gw_sched_job *jobs;
        struct gw_sched_running *run;
        struct gw_sched_start *starts;
        enum gw_job_reason *reasons;
        size_t *order;
        struct gw_fs_user *users;
        double *factor;
        size_t n_users;
};

static int plan_bench_make(struct plan_bench *b, const struct fake_host *h, const struct params *p, gw_usec_t now) {
        size_t n = h->in.n_pending ? h->in.n_pending : 1;
        struct fake_rng rng = { (uint64_t) p->seed + 1 };

        b->n_users = (size_t) p->users;
        b->jobs = calloc(n, sizeof(*b->jobs));
        b->run = calloc(h->in.n_running + 1, sizeof(*b->run));
        b->starts = calloc(n, sizeof(*b->starts));
        b->reasons = calloc(n, sizeof(*b->reasons));
        b->order = calloc(2 * n, sizeof(*b->order));
        b->users = calloc(b->n_users, sizeof(*b->users));
        b->factor = calloc(b->n_users, sizeof(*b->factor));
        if (!b->jobs || !b->run || !b->starts || !b->reasons || !b->order || !b->users || !b->factor)
                return -ENOMEM;
        for (size_t i = 0; i < h->in.n_pending; i++) {
                const struct gw_cal_pending *q = &h->pending[i];
                b->jobs[i] = (struct gw_sched_job){ .id = q->id,
                                                    .ngpus = q->ngpus,
                                                    .gpu_mem = q->gpu_mem,
                                                    .time_limit = q->time_limit,
                                                    .held = q->held,
                                                    .dep = GW_DEP_SATISFIED,
                                                    .fs_user = (uint32_t) (i % b->n_users) };
        }
        for (size_t i = 0; i < h->in.n_running; i++)
                b->run[i] = (struct gw_sched_running){ h->running[i].id, h->running[i].gpu_mask, h->running[i].end };
        for (size_t u = 0; u < b->n_users; u++)
                b->users[u] = (struct gw_fs_user){ .used_gpu_h = (double) fake_rnd_in(&rng, 0, 500), .used_at = now };
        return 0;
}

static void plan_bench_free(struct plan_bench *b) {
        free(b->jobs);
        free(b->run);
        free(b->starts);
        free(b->reasons);
        free(b->order);
        free(b->users);
        free(b->factor);
}

/* One scheduler pass over every pending job; with fair share, the factors are part of it. */
static int plan_once(struct plan_bench *b, const struct fake_host *h, gw_usec_t now, bool fair) {
        struct gw_sched_input in = { h->in.gpus, h->in.n_gpus, b->jobs, h->in.n_pending, b->run, h->in.n_running };
        struct gw_sched_plan plan = { .starts = b->starts, .reasons = b->reasons, .order = b->order };
        struct gw_sched_fair f = { b->factor, b->n_users };

        if (!fair)
                return gw_sched_plan(&in, now, &plan);
        int r = gw_fs_factors(b->users, b->n_users, now, GW_FS_HALF_LIFE_DEFAULT, b->factor);
        return r < 0 ? r : gw_sched_plan_fair(&in, &f, now, &plan);
}

static int bench_plans(const struct fake_host *h, const struct params *p, gw_usec_t now) {
        struct plan_bench b = { 0 };
        double *t[2] = { calloc((size_t) p->runs, sizeof(double)), calloc((size_t) p->runs, sizeof(double)) };
        int r = t[0] && t[1] ? plan_bench_make(&b, h, p, now) : -ENOMEM;

        for (long long i = 0; r >= 0 && i < p->runs; i++)
                for (int fair = 0; fair < 2 && r >= 0; fair++) {
                        double t0 = now_ms();
                        r = plan_once(&b, h, now, fair);
                        t[fair][i] = now_ms() - t0;
                }
        if (r >= 0)
                for (int fair = 0; fair < 2; fair++) {
                        qsort(t[fair], (size_t) p->runs, sizeof(double), cmp_double);
                        printf("plan %-13s median %.3f ms  max %.3f ms  (%zu pending, %zu users)\n",
                               fair ? "fair share" : "queue order", t[fair][p->runs / 2], t[fair][p->runs - 1],
                               h->in.n_pending, fair ? b.n_users : (size_t) 0);
                }
        plan_bench_free(&b);
        free(t[0]);
        free(t[1]);
        return r;
}

int main(int argc, char **argv) {
        struct params p = { .runs = 21, .bookings = 500, .pending = 2000, .gpus = 64, .seed = 42, .users = 50 };
        if (parse_args(argc, argv, &p) < 0)
                return 2;
        gw_usec_t now = (gw_usec_t) 1767222000 * GW_USEC_PER_SEC; /* a fixed Thursday 23:00 UTC */
        struct fake_host h;
        if (make_host(&h, &p, now) < 0) {
                fake_host_free(&h);
                return 1;
        }
        struct gw_quota lim;
        char qmsg[GW_QUOTA_MSG_SIZE];
        gw_quota_init(&lim);
        (void) gw_quota_parse_setting(&lim, "max_booking_gpus=8", qmsg, sizeof qmsg);
        (void) gw_quota_parse_setting(&lim, "booking_horizon_hours=168", qmsg, sizeof qmsg);
        size_t cap = gw_schedule_layout_max(&h.in), nseg = 0;
        struct gw_schedule_segment *segs = calloc(cap + 1, sizeof *segs);
        char *chart = malloc(CHART_SIZE);
        double *t_book = calloc((size_t) p.runs, sizeof(double)), *t_sched = calloc((size_t) p.runs, sizeof(double));
        double *t_pred = calloc((size_t) p.runs, sizeof(double));
        struct gw_prediction *pred = calloc(h.in.n_pending + 1, sizeof *pred);
        if (!segs || !chart || !t_book || !t_sched || !t_pred || !pred)
                return 1;
        for (long long i = 0; i < p.runs; i++) {
                double t0 = now_ms();
                if (booking_check(&h, &lim, now, i) < 0)
                        return 1;
                double t1 = now_ms();
                if (schedule(&h, now, segs, cap, chart, &nseg) < 0)
                        return 1;
                double t2 = now_ms();
                if (gw_predict_starts(&h.in, now, PREDICT_HORIZON, pred) < 0)
                        return 1;
                t_book[i] = t1 - t0;
                t_sched[i] = t2 - t1;
                t_pred[i] = now_ms() - t2;
        }
        size_t n_pred = 0;
        for (size_t i = 0; i < h.in.n_pending; i++)
                n_pred += pred[i].start != GW_USEC_INFINITY;
        qsort(t_book, (size_t) p.runs, sizeof(double), cmp_double);
        qsort(t_sched, (size_t) p.runs, sizeof(double), cmp_double);
        qsort(t_pred, (size_t) p.runs, sizeof(double), cmp_double);
        size_t n_drained = 0;
        for (size_t g = 0; g < h.in.n_gpus; g++)
                n_drained += !h.gpus[g].usable;
        printf("gpus %lld (%zu drained), bookings %zu, pending %lld, running %zu, runs %lld; %zu schedule segments\n",
               p.gpus, n_drained, h.in.n_bookings, p.pending, h.in.n_running, p.runs, nseg);
        printf("booking check  median %.3f ms  max %.3f ms\n", t_book[p.runs / 2], t_book[p.runs - 1]);
        printf("schedule 72 h  median %.3f ms  max %.3f ms\n", t_sched[p.runs / 2], t_sched[p.runs - 1]);
        printf("prediction 14 d  median %.3f ms  max %.3f ms  (%zu of %zu pending jobs get a start)\n",
               t_pred[p.runs / 2], t_pred[p.runs - 1], n_pred, h.in.n_pending);
        if (bench_plans(&h, &p, now) < 0)
                return 1;
        free(t_book);
        free(t_sched);
        free(t_pred);
        free(pred);
        free(chart);
        free(segs);
        fake_host_free(&h);
        return 0;
}
