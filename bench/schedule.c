/* Benchmark of the booking calendar on a busy host: 64 GPUs, 500 bookings over the next 72
 * hours, 2,000 pending jobs and a running job on most GPUs.  Times what the daemon does per
 * request, with the real core functions on plain data (no daemon, no I/O):
 *   booking check  POST /api/v1/bookings: check the request, the user's booked GPUs, the
 *                  quota, then place it (nearest-window search included);
 *   schedule       GET /api/v1/schedule?hours=72: the layout with predicted starts, then
 *                  the text chart;
 *   prediction     the daemon's own (daemon/training_predict.c): gw_predict_starts 14 days
 *                  ahead, as it runs on the daemon's thread (the daemon hands it at most
 *                  its first PREDICT_MAX_JOBS queued jobs: try --pending 500).
 * Prints the median and the slowest of N runs of each.  Inputs come from a fixed seed, so
 * runs compare.
 *
 *   gw-bench-schedule [--runs N] [--bookings N] [--pending N] [--gpus N] [--seed S]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/parse.h"
#include "core/calendar.h"
#include "core/predict.h"
#include "core/quota.h"

#define HOUR ((gw_usec_t) 3600 * GW_USEC_PER_SEC)
#define PREDICT_HORIZON (14 * 24 * HOUR) /* as daemon/training_predict.c */
#define CHART_SIZE (256 * 1024)

struct params {
        long long runs, bookings, pending, gpus, seed;
};

/* xorshift64*: the same inputs from the same seed on every machine. */
static uint64_t rng_state;
static uint64_t rnd(void) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * UINT64_C(2685821657736338717);
}
static long long rnd_in(long long lo, long long hi) { return lo + (long long) (rnd() % (uint64_t) (hi - lo + 1)); }

static double now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

struct host {
        struct gw_sched_gpu *gpus;
        struct gw_booking *bookings;
        struct gw_cal_job *running;
        struct gw_cal_pending *pending;
        struct gw_calendar_input in;
};

/* Books as users would: a random window; where it does not fit, the nearest one offered. */
static int fill_bookings(struct host *h, const struct params *p, gw_usec_t now) {
        for (long long i = 0; i < p->bookings; i++) {
                struct gw_calendar_request req = {
                        .ngpus = (int) rnd_in(1, 4),
                        .start = now + rnd_in(0, 68) * HOUR + rnd_in(0, 5) * HOUR / 6,
                        .duration = rnd_in(1, 4) * HOUR,
                };
                struct gw_calendar_placement pl;
                if (gw_calendar_place(&h->in, &req, NULL, NULL, &pl) < 0 || pl.verdict == GW_PLACE_NEVER) {
                        fprintf(stderr, "gw-bench-schedule: cannot place booking %lld\n", i);
                        return -ENOSPC;
                }
                h->bookings[i] = (struct gw_booking) {
                        .id = i + 1, .uid = (uint32_t) (1000 + i % 40), .ngpus = req.ngpus, .start = pl.start,
                        .end = pl.end, .gpu_mask = pl.gpu_mask,
                        .state = i % 10 == 0 ? GW_BOOKING_PENDING_APPROVAL : GW_BOOKING_APPROVED, .label = "bench",
                };
                h->in.n_bookings++;
        }
        return 0;
}

static int make_host(struct host *h, const struct params *p, gw_usec_t now) {
        size_t ng = (size_t) p->gpus;
        h->gpus = calloc(ng, sizeof *h->gpus);
        h->bookings = calloc((size_t) p->bookings + 1, sizeof *h->bookings);
        h->running = calloc(ng, sizeof *h->running);
        h->pending = calloc((size_t) p->pending + 1, sizeof *h->pending);
        if (!h->gpus || !h->bookings || !h->running || !h->pending)
                return -ENOMEM;
        size_t nrun = 0;
        for (size_t g = 0; g < ng; g++) {
                h->gpus[g] = (struct gw_sched_gpu) { .index = (int) g, .usable = g != 13 };
                /* Most GPUs run a job that ends within a day (before the bookings on them). */
                if (g % 8 != 7 && g != 13) {
                        h->running[nrun] = (struct gw_cal_job) {
                                .id = (int64_t) (100000 + g), .gpu_mask = UINT64_C(1) << g,
                                .start = now - rnd_in(1, 10) * HOUR, .end = now + rnd_in(1, 60) * HOUR / 60,
                                .label = "train",
                        };
                        h->gpus[g].job_id = h->running[nrun++].id;
                }
        }
        h->in = (struct gw_calendar_input) {
                .gpus = h->gpus, .n_gpus = ng, .bookings = h->bookings, .running = h->running, .n_running = nrun,
                .pending = h->pending,
        };
        int r = fill_bookings(h, p, now);
        if (r < 0)
                return r;
        for (long long i = 0; i < p->pending; i++)
                h->pending[i] = (struct gw_cal_pending) {
                        .id = 200000 + i, .ngpus = (int) rnd_in(1, 8), .time_limit = rnd_in(1, 48) * HOUR / 6,
                        .booking_id = i % 50 == 0 && p->bookings ? rnd_in(1, p->bookings) : 0, .held = i % 20 == 0,
                        .label = "job",
                };
        h->in.n_pending = (size_t) p->pending;
        return 0;
}

/* One booking request as the daemon checks it (handlers_share.c book()). */
static int booking_check(const struct host *h, const struct gw_quota *lim, gw_usec_t now, long long k) {
        struct gw_calendar_request req = {
                .ngpus = 8, .start = now + (k % 48) * HOUR, .duration = 4 * HOUR,
        };
        char msg[GW_CALENDAR_MSG_SIZE], qmsg[GW_QUOTA_MSG_SIZE];
        if (gw_calendar_check_request(&req, now, msg, sizeof msg) < 0)
                return -EINVAL;
        int64_t mine = gw_calendar_user_booked_gpus(h->bookings, h->in.n_bookings, 1007, req.start,
                                                    req.start + req.duration, 0);
        if (gw_quota_check_booking(lim, mine, req.ngpus, req.start, req.start + req.duration, now, qmsg,
                                   sizeof qmsg) < 0)
                return -EINVAL;
        struct gw_calendar_placement pl;
        return gw_calendar_place(&h->in, &req, NULL, NULL, &pl);
}

/* GET /api/v1/schedule?hours=72 (handlers_share.c on_schedule()), without the JSON. */
static int schedule(const struct host *h, gw_usec_t now, struct gw_schedule_segment *segs, size_t cap, char *chart,
                    size_t *ret_n) {
        int r = gw_schedule_layout(&h->in, now, 72 * HOUR, segs, cap, ret_n);
        if (r < 0)
                return r;
        uint64_t rows = h->in.n_gpus >= 64 ? UINT64_MAX : (UINT64_C(1) << h->in.n_gpus) - 1;
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
        };
        for (int i = 1; i < argc; i += 2) {
                size_t f = 0;
                while (f < sizeof flags / sizeof flags[0] && strcmp(argv[i], flags[f].flag))
                        f++;
                if (f == sizeof flags / sizeof flags[0] || i + 1 >= argc ||
                    gw_parse_int(argv[i + 1], flags[f].lo, flags[f].hi, (long long *) ((char *) p + flags[f].off)) < 0) {
                        fprintf(stderr, "usage: gw-bench-schedule [--runs N] [--bookings N] [--pending N] [--gpus N] "
                                        "[--seed S]\n");
                        return -EINVAL;
                }
        }
        return 0;
}

int main(int argc, char **argv) {
        struct params p = { .runs = 21, .bookings = 500, .pending = 2000, .gpus = 64, .seed = 42 };
        if (parse_args(argc, argv, &p) < 0)
                return 2;
        rng_state = (uint64_t) p.seed;
        gw_usec_t now = (gw_usec_t) 1767222000 * GW_USEC_PER_SEC; /* a fixed Thursday 23:00 UTC */
        struct host h = { 0 };
        if (make_host(&h, &p, now) < 0)
                return 1;
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
        printf("gpus %lld, bookings %zu, pending %lld, running %zu, runs %lld; %zu schedule segments\n", p.gpus,
               h.in.n_bookings, p.pending, h.in.n_running, p.runs, nseg);
        printf("booking check  median %.3f ms  max %.3f ms\n", t_book[p.runs / 2], t_book[p.runs - 1]);
        printf("schedule 72 h  median %.3f ms  max %.3f ms\n", t_sched[p.runs / 2], t_sched[p.runs - 1]);
        printf("prediction 14 d  median %.3f ms  max %.3f ms  (%zu of %zu pending jobs get a start)\n",
               t_pred[p.runs / 2], t_pred[p.runs - 1], n_pred, h.in.n_pending);
        free(t_book);
        free(t_sched);
        free(t_pred);
        free(pred);
        free(chart);
        free(segs);
        free(h.gpus);
        free(h.bookings);
        free(h.running);
        free(h.pending);
        return 0;
}
