/* A random host from a seed (fake_host.h).  The draws follow a fixed order, so that a seed
 * names one host for good: the replay test's failures name the seed that shows them. */
#include "fake_host.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define GIB (UINT64_C(1) << 30)
#define NO_HOLDER 999999 /* a process of no job in the input */

uint64_t fake_rnd(struct fake_rng *r) {
        r->s ^= r->s >> 12;
        r->s ^= r->s << 25;
        r->s ^= r->s >> 27;
        return r->s * UINT64_C(2685821657736338717);
}

int64_t fake_rnd_in(struct fake_rng *r, int64_t lo, int64_t hi) {
        return lo + (int64_t) (fake_rnd(r) % (uint64_t) (hi - lo + 1));
}

bool fake_chance(struct fake_rng *r, int percent) { return fake_rnd_in(r, 1, 100) <= percent; }

static int64_t in_range(struct fake_rng *r, struct fake_range v) { return fake_rnd_in(r, v.lo, v.hi); }

/* An instant on the grid, or off it by a second. */
static gw_usec_t rnd_time(const struct fake_host_shape *s, struct fake_rng *r, struct fake_range steps) {
        gw_usec_t t = s->now + in_range(r, steps) * s->step;
        return t + (fake_chance(r, s->offgrid_pct) ? GW_USEC_PER_SEC : 0);
}

/* Up to max_bits GPUs of mask, at random. */
static uint64_t rnd_subset(struct fake_rng *r, uint64_t mask, int max_bits) {
        uint64_t m = 0;
        for (int i = 0; i < max_bits; i++) {
                uint64_t pick = mask & ~m;
                int n = __builtin_popcountll(pick);
                if (n == 0)
                        break;
                int k = (int) fake_rnd_in(r, 0, n - 1);
                while (k-- > 0)
                        pick &= pick - 1;
                m |= pick & (~pick + 1);
        }
        return m;
}

static void make_gpus(struct fake_host *h, const struct fake_host_shape *s, struct fake_rng *r, int n) {
        static const uint64_t mem[] = { 0, 16 * GIB, 24 * GIB, 80 * GIB };
        bool scatter = fake_chance(r, s->scatter_pct);

        for (int i = 0; i < n; i++) {
                int idx = i;
                if (scatter)
                        do
                                idx = fake_chance(r, 15) ? 63 : (int) fake_rnd_in(r, 0, 63);
                        while (h->present & (UINT64_C(1) << idx));
                h->present |= UINT64_C(1) << idx;
                uint64_t total = mem[fake_rnd_in(r, 0, 3)];
                struct gw_sched_gpu *g = &h->gpus[i];
                *g = (struct gw_sched_gpu){ .index = idx, .mem_total = total };
                g->usable = fake_chance(r, s->usable_pct);
                g->mem_free = total ? (uint64_t) fake_rnd_in(r, 0, (int64_t) total) : 0;
                g->job_id = fake_chance(r, s->stray_pct) ? NO_HOLDER : 0;
        }
        h->in.n_gpus = (size_t) n;
}

/* GPUs idle and usable, for jobs started apart. */
static uint64_t idle_usable(const struct fake_host *h) {
        uint64_t m = 0;
        for (size_t g = 0; g < h->in.n_gpus; g++)
                if (h->gpus[g].usable && !h->gpus[g].job_id)
                        m |= UINT64_C(1) << h->gpus[g].index;
        return m;
}

static void make_running(struct fake_host *h, const struct fake_host_shape *s, struct fake_rng *r, int n) {
        for (int i = 0; i < n; i++) {
                gw_usec_t end = rnd_time(s, r, s->running_end);
                int k = (int) in_range(r, s->running_gpus);
                uint64_t mask = rnd_subset(r, s->running_apart ? idle_usable(h) : h->present, k);
                if (!mask)
                        break;
                struct gw_cal_job *j = &h->running[h->in.n_running++];
                *j = (struct gw_cal_job){ .id = 1 + i,
                                          .gpu_mask = mask,
                                          .start = s->now - s->step,
                                          .end = end,
                                          .label = "train" };
                j->eta = fake_chance(r, s->eta_pct) ? rnd_time(s, r, s->running_eta) : 0;
                /* Now and then a GPU's holder is not the job whose mask names it. */
                for (size_t g = 0; g < h->in.n_gpus; g++)
                        if (j->gpu_mask & (UINT64_C(1) << h->gpus[g].index) &&
                            (fake_chance(r, 90) || !h->gpus[g].job_id))
                                h->gpus[g].job_id = j->id;
        }
}

/* Anything the calendar must cope with. */
static void any_booking(struct fake_host *h, const struct fake_host_shape *s, struct fake_rng *r, int i) {
        gw_usec_t start = rnd_time(s, r, s->booking_start);
        struct gw_booking *b = &h->bookings[h->in.n_bookings++];

        *b = (struct gw_booking){ .uid = (uint32_t) (1000 + i % 40), .ngpus = 1, .start = start, .label = "booked" };
        b->id = fake_chance(r, 5) ? 1 : 1 + i;
        b->end = start + fake_rnd_in(r, fake_chance(r, 5) ? -1 : s->booking_len.lo, s->booking_len.hi) * s->step;
        b->gpu_mask = fake_chance(r, 10) ? 0 : rnd_subset(r, h->present, (int) in_range(r, s->booking_gpus));
        b->state = (enum gw_booking_state)(fake_chance(r, 60) ? GW_BOOKING_APPROVED : fake_rnd_in(r, 0, 5));
}

/* As a user books: a window of their choice or, where it does not fit, the nearest one. */
static int placed_booking(struct fake_host *h, const struct fake_host_shape *s, struct fake_rng *r, int i) {
        struct gw_calendar_request req = { .ngpus = (int) in_range(r, s->booking_gpus) };
        struct gw_calendar_placement pl;

        req.start = s->now + in_range(r, s->booking_start) * s->step;
        req.duration = in_range(r, s->booking_len) * s->step;
        if (gw_calendar_place(&h->in, &req, NULL, NULL, &pl) < 0 || pl.verdict == GW_PLACE_NEVER)
                return -ENOSPC;
        h->bookings[h->in.n_bookings++] = (struct gw_booking){
                .id = 1 + i,
                .uid = (uint32_t) (1000 + i % 40),
                .ngpus = req.ngpus,
                .start = pl.start,
                .end = pl.end,
                .gpu_mask = pl.gpu_mask,
                .label = "booked",
                .state = fake_chance(r, s->unapproved_pct) ? GW_BOOKING_PENDING_APPROVAL : GW_BOOKING_APPROVED,
        };
        return 0;
}

static int make_bookings(struct fake_host *h, const struct fake_host_shape *s, struct fake_rng *r, int n) {
        for (int i = 0; i < n; i++) {
                if (!s->bookings_placed)
                        any_booking(h, s, r, i);
                else if (placed_booking(h, s, r, i) < 0)
                        return -ENOSPC;
        }
        return 0;
}

/* A pending job, itself or none; a running job; one not in the input (it ended). */
static int64_t rnd_after(const struct fake_host *h, struct fake_rng *r, int n_pending) {
        switch (fake_rnd_in(r, 0, 3)) {
        case 0:
                return 100 + fake_rnd_in(r, 0, n_pending);
        case 1:
                return h->in.n_running ? 1 + fake_rnd_in(r, 0, (int64_t) h->in.n_running - 1) : 5;
        case 2:
                return 77777;
        default:
                return 100 + fake_rnd_in(r, 0, n_pending - 1);
        }
}

static void make_pending(struct fake_host *h, const struct fake_host_shape *s, struct fake_rng *r, int n) {
        for (int i = 0; i < n; i++) {
                gw_usec_t limit = in_range(r, s->limit) * s->step;
                limit += fake_chance(r, s->offgrid_limit_pct) ? GW_USEC_PER_SEC : 0;
                struct gw_cal_pending *p = &h->pending[h->in.n_pending++];
                *p = (struct gw_cal_pending){ .id = 100 + i, .time_limit = limit, .label = "job" };
                p->ngpus = (int) in_range(r, s->pending_gpus);
                p->booking_id = fake_chance(r, s->booked_pct) ? fake_rnd_in(r, -1, (int64_t) h->in.n_bookings + 1) : 0;
                p->held = fake_chance(r, s->held_pct);
                p->not_before = fake_chance(r, s->backoff_pct) ? rnd_time(s, r, s->backoff) : 0;
                p->runtime = fake_chance(r, s->runtime_pct) ? fake_rnd_in(r, 1, 10) * s->step / 2 : 0;
                p->after_job = fake_chance(r, s->after_pct) ? rnd_after(h, r, n) : 0;
                p->gpu_mem = fake_chance(r, s->mem_pct) ? (uint64_t) fake_rnd_in(r, 1, 40) * GIB : 0;
        }
}

int fake_host_make(struct fake_host *h, const struct fake_host_shape *s, struct fake_rng *rng) {
        memset(h, 0, sizeof(*h));
        h->gpus = calloc((size_t) s->gpus.hi + 1, sizeof(*h->gpus));
        h->running = calloc((size_t) s->running.hi + 1, sizeof(*h->running));
        h->bookings = calloc((size_t) s->bookings.hi + 1, sizeof(*h->bookings));
        h->pending = calloc((size_t) s->pending.hi + 1, sizeof(*h->pending));
        if (!h->gpus || !h->running || !h->bookings || !h->pending)
                return -ENOMEM;
        h->in = (struct gw_calendar_input){ .gpus = h->gpus,
                                            .bookings = h->bookings,
                                            .running = h->running,
                                            .pending = h->pending };
        make_gpus(h, s, rng, (int) in_range(rng, s->gpus));
        make_running(h, s, rng, (int) in_range(rng, s->running));
        int rc = make_bookings(h, s, rng, (int) in_range(rng, s->bookings));
        if (rc < 0)
                return rc;
        make_pending(h, s, rng, (int) in_range(rng, s->pending));
        return 0;
}

void fake_host_free(struct fake_host *h) {
        free(h->gpus);
        free(h->running);
        free(h->bookings);
        free(h->pending);
        memset(h, 0, sizeof(*h));
}
