#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/sched.h"
#include "sched_test.h"

/* ---- Randomized properties ------------------------------------------------------------ */

#define R_JOBS 12
#define R_RUN 8

struct rng {
        uint64_t s;
};

static uint64_t rng_next(struct rng *r) {
        r->s ^= r->s << 13;
        r->s ^= r->s >> 7;
        r->s ^= r->s << 17;
        return r->s;
}

static int rng_int(struct rng *r, int lo, int hi) { return lo + (int) (rng_next(r) % (uint64_t) (hi - lo + 1)); }

static bool chance(struct rng *r, int percent) { return rng_int(r, 0, 99) < percent; }

struct rscen {
        struct gw_sched_gpu gpus[GW_SCHED_MAX_GPUS];
        struct gw_sched_job jobs[R_JOBS];
        struct gw_sched_running run[R_RUN];
        struct gw_sched_input in;
        gw_usec_t now;
};

static void random_gpus(struct rng *r, struct rscen *s) {
        static const int mem_gib[] = { 0, 16, 40, 80, 80 };
        int span = chance(r, 80) ? 16 : GW_SCHED_MAX_GPUS;
        int n = rng_int(r, 1, chance(r, 80) ? 8 : 16);
        uint64_t used = 0;

        for (int i = 0; i < n; i++) {
                int idx;
                do
                        idx = rng_int(r, 0, span - 1);
                while (used & M(idx));
                used |= M(idx);
                uint64_t total = (uint64_t) mem_gib[rng_int(r, 0, 4)] * GIB;
                s->gpus[i] = (struct gw_sched_gpu){
                        .index = idx,
                        .usable = chance(r, 85),
                        .mem_total = total,
                        /* Sometimes another user's process holds memory on an idle GPU. */
                        .mem_free = chance(r, 15) ? total / (uint64_t) rng_int(r, 2, 8) : total,
                };
        }
        s->in.n_gpus = (size_t) n;
}

static void random_running(struct rng *r, struct rscen *s) {
        int n_run = rng_int(r, 0, R_RUN);

        for (int k = 0; k < n_run; k++)
                s->run[k] = (struct gw_sched_running){
                        .id = 1000 + k,
                        .end = s->now + rng_int(r, -10, 300) * MIN,
                };
        for (size_t i = 0; i < s->in.n_gpus; i++) {
                struct gw_sched_gpu *g = &s->gpus[i];
                if (n_run > 0 && chance(r, 50)) {
                        int k = rng_int(r, 0, n_run - 1);
                        s->run[k].gpu_mask |= M(g->index);
                        /* NVML lags a start now and then: the mask alone must keep it busy. */
                        g->job_id = chance(r, 95) ? s->run[k].id : 0;
                        g->mem_free = g->mem_total / 8;
                        /* Malformed but possible: two records claim one GPU. */
                        if (chance(r, 3))
                                s->run[rng_int(r, 0, n_run - 1)].gpu_mask |= M(g->index);
                } else if (chance(r, 4)) {
                        g->job_id = 999; /* a job we have no end for */
                }
        }
        s->in.n_running = (size_t) n_run;
}

static void random_jobs(struct rng *r, struct rscen *s) {
        static const int mem_gib[] = { 0, 0, 0, 8, 20, 40, 90 };
        int n = rng_int(r, 0, R_JOBS);

        for (int i = 0; i < n; i++) {
                int dep = rng_int(r, 0, 9);
                int max_gpus = chance(r, 80) ? 4 : (int) s->in.n_gpus + 2;
                s->jobs[i] = (struct gw_sched_job){
                        .id = i + 1,
                        .priority = 0,
                        .ngpus = rng_int(r, 1, max_gpus),
                        .gpu_mem = (uint64_t) mem_gib[rng_int(r, 0, 6)] * GIB,
                        .time_limit = rng_int(r, 1, 400) * MIN,
                        .held = chance(r, 10),
                        .dep = dep == 0   ? GW_DEP_WAITING
                               : dep == 1 ? GW_DEP_NEVER
                                          : GW_DEP_SATISFIED,
                };
        }
        s->in.n_pending = (size_t) n;
}

static void random_scenario(struct rng *r, struct rscen *s) {
        memset(s, 0, sizeof(*s));
        s->now = NOW + rng_int(r, 0, 1000) * MIN;
        random_gpus(r, s);
        random_running(r, s);
        random_jobs(r, s);
        s->in.gpus = s->gpus;
        s->in.running = s->run;
        s->in.pending = s->jobs;
}

/* The test's own view of the GPUs before planning, written independently of sched.c. */
struct facts {
        uint64_t present, usable, busy, unknown_end;
        gw_usec_t run_end[GW_SCHED_MAX_GPUS]; /* latest end of the running jobs on it */
        const struct gw_sched_gpu *gpu[GW_SCHED_MAX_GPUS];
};

static void facts_of(const struct rscen *s, struct facts *f) {
        uint64_t in_run = 0, claimed = 0;

        memset(f, 0, sizeof(*f));
        for (size_t i = 0; i < s->in.n_gpus; i++) {
                const struct gw_sched_gpu *g = &s->gpus[i];
                f->present |= M(g->index);
                f->usable |= g->usable ? M(g->index) : 0;
                claimed |= g->job_id ? M(g->index) : 0;
                f->gpu[g->index] = g;
                f->run_end[g->index] = INT64_MIN;
        }
        for (size_t k = 0; k < s->in.n_running; k++)
                for (int i = 0; i < GW_SCHED_MAX_GPUS; i++)
                        if ((s->run[k].gpu_mask & f->present & M(i))) {
                                in_run |= M(i);
                                if (s->run[k].end > f->run_end[i])
                                        f->run_end[i] = s->run[k].end;
                        }
        f->busy = claimed | in_run;
        f->unknown_end = claimed & ~in_run;
}

static bool mem_ok(uint64_t have, uint64_t need) { return need == 0 || have >= need; }

static uint64_t fits_now_mask(const struct facts *f, uint64_t avail, const struct gw_sched_job *j) {
        uint64_t ok = 0;
        for (int i = 0; i < GW_SCHED_MAX_GPUS; i++)
                if ((avail & M(i)) && mem_ok(f->gpu[i]->mem_free, j->gpu_mem))
                        ok |= M(i);
        return ok;
}

static bool fits_among(const struct facts *f, uint64_t gpus, const struct gw_sched_job *j) {
        int n = 0;
        for (int i = 0; i < GW_SCHED_MAX_GPUS; i++)
                if ((gpus & M(i)) &&
                    (mem_ok(f->gpu[i]->mem_total, j->gpu_mem) || mem_ok(f->gpu[i]->mem_free, j->gpu_mem)))
                        n++;
        return n >= j->ngpus;
}

static bool ever_fits(const struct facts *f, const struct gw_sched_job *j) { return fits_among(f, f->usable, j); }

/* How many GPUs job j could have at time t, if the first n_starts starts of the plan
 * run to their limits. */
static int count_free_at(const struct rscen *s, const struct facts *f, const struct gw_sched_job *j, gw_usec_t t,
                         const struct gw_sched_start *starts, size_t n_starts) {
        int n = 0;
        for (int i = 0; i < GW_SCHED_MAX_GPUS; i++) {
                if (!(f->usable & M(i)) || (f->unknown_end & M(i)))
                        continue;
                if (f->busy & M(i)) {
                        if (f->run_end[i] > t || !mem_ok(f->gpu[i]->mem_total, j->gpu_mem))
                                continue;
                } else if (!mem_ok(f->gpu[i]->mem_free, j->gpu_mem)) {
                        continue;
                }
                bool taken = false;
                for (size_t k = 0; k < n_starts; k++)
                        if ((starts[k].gpu_mask & M(i)) && s->now + s->jobs[starts[k].job_id - 1].time_limit > t)
                                taken = true;
                n += !taken;
        }
        return n;
}

/* The earliest of now, the running ends and the given starts' ends at which j fits. */
static gw_usec_t earliest_start(const struct rscen *s, const struct facts *f, const struct gw_sched_job *j,
                                const struct gw_sched_start *starts, size_t n_starts) {
        gw_usec_t best = INF;
        gw_usec_t cand[1 + R_RUN + R_JOBS];
        size_t n = 0;

        cand[n++] = s->now;
        for (size_t k = 0; k < s->in.n_running; k++)
                cand[n++] = s->run[k].end < s->now ? s->now : s->run[k].end;
        for (size_t k = 0; k < n_starts; k++)
                cand[n++] = s->now + s->jobs[starts[k].job_id - 1].time_limit;
        for (size_t k = 0; k < n; k++)
                if (cand[k] < best && count_free_at(s, f, j, cand[k], starts, n_starts) >= j->ngpus)
                        best = cand[k];
        return best;
}

struct rstats {
        int starts, backfills, heads, finite_heads, priority;
};

/* Every start is legal: usable, idle, enough memory, exactly ngpus, no GPU twice, in
 * queue order.  Returns how many starts precede the head in the queue. */
static size_t check_starts(const struct rscen *s, const struct facts *f, const struct gw_sched_plan *p,
                           const enum gw_job_reason *reasons, int64_t head_id) {
        uint64_t given = 0;
        int64_t last_id = 0;
        size_t before_head = 0;

        for (size_t k = 0; k < p->n_starts; k++) {
                const struct gw_sched_start *st = &p->starts[k];
                assert_true(st->job_id > last_id && st->job_id <= (int64_t) s->in.n_pending);
                last_id = st->job_id;
                const struct gw_sched_job *j = &s->jobs[st->job_id - 1];
                assert_int_equal(reasons[st->job_id - 1], GW_REASON_NONE);
                assert_int_equal(__builtin_popcountll(st->gpu_mask), j->ngpus);
                assert_true((st->gpu_mask & given) == 0);
                assert_true((st->gpu_mask & f->busy) == 0);
                assert_true((st->gpu_mask & ~f->usable) == 0);
                assert_true(fits_now_mask(f, st->gpu_mask, j) == st->gpu_mask);
                given |= st->gpu_mask;
                if (head_id == 0 || st->job_id < head_id)
                        before_head++;
        }
        return before_head;
}

/* Walks the queue as the policy says and checks each job's reason against it. */
static void check_reasons(const struct rscen *s, const struct facts *f, const struct gw_sched_plan *p,
                          const enum gw_job_reason *reasons, struct rstats *st) {
        uint64_t avail = f->usable & ~f->busy, start_of[R_JOBS] = { 0 };
        int64_t head = 0;

        for (size_t k = 0; k < p->n_starts; k++)
                start_of[p->starts[k].job_id - 1] = p->starts[k].gpu_mask;
        for (size_t i = 0; i < s->in.n_pending; i++) {
                const struct gw_sched_job *j = &s->jobs[i];
                assert_true((reasons[i] == GW_REASON_NONE) == (start_of[i] != 0));
                if (j->held) {
                        assert_int_equal(reasons[i], GW_REASON_HELD);
                        continue;
                }
                if (j->dep != GW_DEP_SATISFIED) {
                        assert_int_equal(reasons[i], GW_REASON_DEPENDENCY);
                        continue;
                }
                bool fits = gw_sched_pick(fits_now_mask(f, avail, j), j->ngpus) != 0;
                if (start_of[i]) {
                        avail &= ~start_of[i];
                        st->backfills += head != 0;
                        continue;
                }
                if (head == 0 && ever_fits(f, j)) {
                        /* The head is the first job that could run some day but not now. */
                        assert_false(fits);
                        head = j->id;
                }
                if (reasons[i] == GW_REASON_PRIORITY) {
                        /* Yielding is only right for a job that fits now but would run past
                         * the head's start: one that ends before it must have started. */
                        assert_true(head != 0 && head != j->id && fits);
                        assert_true(s->now + j->time_limit > p->head_start);
                        st->priority++;
                } else if (!ever_fits(f, j) && fits_among(f, f->present, j)) {
                        /* Only a GPU out of service keeps it from ever fitting: it is named. */
                        assert_int_equal(reasons[i], GW_REASON_DRAINED);
                } else {
                        assert_int_equal(reasons[i], GW_REASON_RESOURCES);
                        assert_false(fits && head != j->id && ever_fits(f, j));
                }
        }
        assert_int_equal(p->head_job_id, head);
}

static void check_random_plan(const struct rscen *s, const struct gw_sched_plan *p, const enum gw_job_reason *reasons,
                              struct rstats *st) {
        struct facts f;

        facts_of(s, &f);
        size_t before_head = check_starts(s, &f, p, reasons, p->head_job_id);
        check_reasons(s, &f, p, reasons, st);
        st->starts += (int) p->n_starts;
        if (p->head_job_id == 0) {
                assert_true(p->head_start == INF);
                return;
        }
        st->heads++;
        const struct gw_sched_job *h = &s->jobs[p->head_job_id - 1];

        /* The reserved start is the earliest the head fits after the jobs ahead of it. */
        gw_usec_t want = earliest_start(s, &f, h, p->starts, before_head);
        if (p->head_start != want)
                fail_msg("head %lld: head_start %lld, oracle %lld", (long long) h->id, (long long) p->head_start,
                         (long long) want);
        if (p->head_start == INF)
                return;
        st->finite_heads++;
        /* Backfill never shrinks it: with every start of the plan, the head still fits then. */
        assert_true(count_free_at(s, &f, h, p->head_start, p->starts, p->n_starts) >= h->ngpus);
}

static void random_properties(void **state) {
        struct rng r = { .s = 0x9E3779B97F4A7C15ULL };
        struct rstats st = { 0 };

        for (int iter = 0; iter < 2000; iter++) {
                struct rscen s;
                struct gw_sched_start starts[R_JOBS];
                enum gw_job_reason reasons[R_JOBS];
                struct gw_sched_plan plan = { .starts = starts, .reasons = reasons };

                random_scenario(&r, &s);
                assert_int_equal(gw_sched_plan(&s.in, s.now, &plan), 0);
                check_random_plan(&s, &plan, reasons, &st);
        }
        /* The generator must exercise the interesting paths, or the checks above prove little. */
        print_message("starts %d, backfills %d, heads %d (finite %d), priority waits %d\n", st.starts, st.backfills,
                      st.heads, st.finite_heads, st.priority);
        assert_true(st.backfills > 100);
        assert_true(st.finite_heads > 300);
        assert_true(st.priority > 100);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(random_properties),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
