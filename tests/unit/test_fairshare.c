/* Fair share (core/fairshare.c) and the scheduler's fair order (gw_sched_plan_fair): the
 * decayed usage, the factor and its explanation, the order and backfill behind a fair head,
 * and properties on a small virtual box driven by the pure functions alone: users who
 * submit at different moments converge to equal GPU-hours, a user alone gets every GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/fairshare.h"
#include "core/sched.h"
#include "sched_test.h"

#define HOUR (60 * MIN)
#define H7D GW_FS_HALF_LIFE_DEFAULT

static void decay_halves_after_one_half_life(void **state) {
        (void) state;
        struct gw_fs_user u = { .share = 0 };
        /* 10 GPU-h charged as one instant's worth at NOW (an interval of zero length would
         * be nothing: 10 GPUs for one hour, with no decay, is exact). */
        assert_int_equal(gw_fs_charge(&u, 10, NOW - HOUR, NOW, 0), 0);
        assert_true(fabs(u.used_gpu_h - 10.0) < 1e-9);
        assert_true(fabs(gw_fs_usage_at(&u, NOW + H7D, H7D) - 5.0) < 1e-9);
        assert_true(fabs(gw_fs_usage_at(&u, NOW + 2 * H7D, H7D) - 2.5) < 1e-9);
        /* Other half-lives too; and no decay without one. */
        assert_true(fabs(gw_fs_usage_at(&u, NOW + 3 * HOUR, 3 * HOUR) - 5.0) < 1e-9);
        assert_true(fabs(gw_fs_usage_at(&u, NOW + 1000 * HOUR, 0) - 10.0) < 1e-9);
        /* Never grows back for an instant before the record. */
        assert_true(fabs(gw_fs_usage_at(&u, NOW - H7D, H7D) - 10.0) < 1e-9);
}

/* Charging a run in one piece or in many gives the same usage: the daemon may charge running
 * jobs at any period. */
static void charge_does_not_depend_on_the_period(void **state) {
        (void) state;
        struct gw_fs_user once = { .share = 0 }, often = { .share = 0 };
        gw_usec_t from = NOW, to = NOW + 48 * HOUR;

        assert_int_equal(gw_fs_charge(&once, 4, from, to, H7D), 0);
        for (gw_usec_t t = from; t < to; t += 7 * MIN)
                assert_int_equal(gw_fs_charge(&often, 4, t, t + 7 * MIN < to ? t + 7 * MIN : to, H7D), 0);
        assert_true(fabs(once.used_gpu_h - often.used_gpu_h) < 1e-6);
        /* 192 GPU-h, decayed over two days of a 7-day half-life: 4 * 168 / ln 2 * (1 - 2^(-48/168)). */
        assert_true(fabs(once.used_gpu_h - 4 * 168 / M_LN2 * (1 - exp2(-48.0 / 168))) < 1e-9);
        assert_true(once.used_gpu_h < 192.0 && once.used_gpu_h > 170.0);
        assert_int_equal(once.used_at, to);
        /* A late report of an earlier interval is decayed to the record, which stays put. */
        struct gw_fs_user late = once;
        assert_int_equal(gw_fs_charge(&late, 1, from, from + HOUR, H7D), 0);
        assert_int_equal(late.used_at, to);
        assert_true(late.used_gpu_h > once.used_gpu_h && late.used_gpu_h < once.used_gpu_h + 1.0);
        /* Bad input leaves it alone. */
        assert_int_equal(gw_fs_charge(&late, -1, from, to, H7D), -EINVAL);
        assert_int_equal(gw_fs_charge(&late, 1, to, from, H7D), -EINVAL);
        assert_int_equal(gw_fs_charge(&late, NAN, from, to, H7D), -EINVAL);
        assert_int_equal(gw_fs_charge(&late, 1, from, to, -1), -EINVAL);
}

static void factor_is_two_to_minus_usage_over_share(void **state) {
        (void) state;
        struct gw_fs_user u[3] = { { .used_gpu_h = 0, .used_at = NOW },
                                   { .used_gpu_h = 10, .used_at = NOW },
                                   { .used_gpu_h = 30, .used_at = NOW } };
        double f[3];

        assert_int_equal(gw_fs_factors(u, 3, NOW, H7D, f), 0);
        assert_true(fabs(f[0] - 1.0) < 1e-12); /* used nothing */
        assert_true(fabs(f[1] - exp2(-0.25 * 3)) < 1e-12); /* a quarter of all, share 1/3 */
        assert_true(fabs(f[2] - exp2(-0.75 * 3)) < 1e-12);
        /* Exactly the share: 0.5.  Weights: a user with twice the share may use twice. */
        struct gw_fs_user w[2] = { { .share = 2, .used_gpu_h = 20, .used_at = NOW },
                                   { .share = 1, .used_gpu_h = 10, .used_at = NOW } };
        assert_int_equal(gw_fs_factors(w, 2, NOW, H7D, f), 0);
        assert_true(fabs(f[0] - 0.5) < 1e-12 && fabs(f[1] - 0.5) < 1e-12);
        /* Nobody used anything: all equal, all 1. */
        struct gw_fs_user z[2] = { { .share = 0 }, { .share = 0 } };
        assert_int_equal(gw_fs_factors(z, 2, NOW, H7D, f), 0);
        assert_true(f[0] == 1.0 && f[1] == 1.0);
        /* Bad input. */
        struct gw_fs_user bad = { .share = -1 };
        assert_int_equal(gw_fs_factors(&bad, 1, NOW, H7D, f), -EINVAL);
        bad = (struct gw_fs_user){ .used_gpu_h = NAN };
        assert_int_equal(gw_fs_factors(&bad, 1, NOW, H7D, f), -EINVAL);
        assert_int_equal(gw_fs_factors(NULL, 1, NOW, H7D, f), -EINVAL);
}

static void explain_names_the_factors(void **state) {
        (void) state;
        struct gw_fs_user u[3] = { { .used_gpu_h = 12.5, .used_at = NOW },
                                   { .used_gpu_h = 20, .used_at = NOW },
                                   { .used_gpu_h = 0, .used_at = NOW } };
        char buf[GW_FS_EXPLAIN_SIZE], tiny[16];

        int n = gw_fs_explain(u, 3, 0, "alice", NOW, H7D, buf, sizeof(buf));
        assert_int_equal(n, (int) strlen(buf));
        assert_string_equal(buf,
                            "fairshare 0.45: alice used 12.5 GPU-h (decayed), 38% of all use, against a 1/3 share");
        struct gw_fs_user w[2] = { { .share = 3, .used_gpu_h = 1, .used_at = NOW },
                                   { .share = 1, .used_gpu_h = 1, .used_at = NOW } };
        assert_true(gw_fs_explain(w, 2, 1, "bob", NOW, H7D, buf, sizeof(buf)) > 0);
        assert_string_equal(buf, "fairshare 0.25: bob used 1.0 GPU-h (decayed), 50% of all use, against a 1/4 share");
        assert_true(gw_fs_explain(w, 2, 0, "carol", NOW, H7D, buf, sizeof(buf)) > 0);
        assert_string_equal(buf,
                            "fairshare 0.63: carol used 1.0 GPU-h (decayed), 50% of all use, against a 75.0% share");
        assert_int_equal(gw_fs_explain(u, 3, 0, "alice", NOW, H7D, tiny, sizeof(tiny)), -ENOBUFS);
        assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
        assert_int_equal(gw_fs_explain(u, 3, 3, "alice", NOW, H7D, buf, sizeof(buf)), -EINVAL);
}

/* 4 GPUs; GPUs 0-1 busy for 60 min more.  Job 1 (user 0, factor 0.2) and job 2 (user 1,
 * factor 0.9) both want all 4; jobs 3 and 4 (user 0) one GPU, for 30 and 120 min. */
static void fair_head_keeps_backfill(void **state) {
        (void) state;
        struct gw_sched_gpu gpus[4];
        for (int i = 0; i < 4; i++)
                gpus[i] = (struct gw_sched_gpu){ .index = i,
                                                 .usable = true,
                                                 .mem_total = 80 * GIB,
                                                 .mem_free = i < 2 ? 0 : 80 * GIB,
                                                 .job_id = i < 2 ? 9 : 0 };
        struct gw_sched_running run = { .id = 9, .gpu_mask = M(0) | M(1), .end = NOW + 60 * MIN };
        struct gw_sched_job jobs[4] = {
                { .id = 1, .ngpus = 4, .time_limit = 60 * MIN, .dep = GW_DEP_SATISFIED, .fs_user = 0 },
                { .id = 2, .ngpus = 4, .time_limit = 60 * MIN, .dep = GW_DEP_SATISFIED, .fs_user = 1 },
                { .id = 3, .ngpus = 1, .time_limit = 30 * MIN, .dep = GW_DEP_SATISFIED, .fs_user = 0 },
                { .id = 4, .ngpus = 1, .time_limit = 120 * MIN, .dep = GW_DEP_SATISFIED, .fs_user = 0 },
        };
        const double factor[2] = { 0.2, 0.9 };
        struct gw_sched_fair fair = { factor, 2 };
        struct gw_sched_input in = { gpus, 4, jobs, 4, &run, 1 };
        struct gw_sched_start starts[4];
        enum gw_job_reason reasons[4];
        size_t order[2 * 4];
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons, .order = order };

        assert_int_equal(gw_sched_plan_fair(&in, &fair, NOW, &plan), 0);
        assert_int_equal(order[0], 1); /* job 2 first: its user used less */
        assert_int_equal(order[1], 0);
        assert_int_equal(plan.head_job_id, 2);
        assert_int_equal(plan.head_start, NOW + 60 * MIN);
        assert_int_equal(plan.n_starts, 1); /* job 3 ends before the head's start: backfilled */
        assert_int_equal(starts[0].job_id, 3);
        assert_int_equal(reasons[0], GW_REASON_RESOURCES);
        assert_int_equal(reasons[1], GW_REASON_RESOURCES);
        assert_int_equal(reasons[2], GW_REASON_NONE);
        assert_int_equal(reasons[3], GW_REASON_PRIORITY); /* would delay the head */

        /* The job's own priority comes before the factor. */
        jobs[0].priority = 1;
        assert_int_equal(gw_sched_plan_fair(&in, &fair, NOW, &plan), 0);
        assert_int_equal(plan.head_job_id, 1);
        assert_int_equal(gw_sched_order(&in, &fair, order), 0);
        assert_int_equal(order[0], 0);
        assert_int_equal(order[1], 1);
        assert_int_equal(order[2], 2); /* equal factor: the order given */
        assert_int_equal(order[3], 3);

        /* Without fair share: the order given. */
        jobs[0].priority = 0;
        assert_int_equal(gw_sched_plan_fair(&in, NULL, NOW, &plan), 0);
        assert_int_equal(plan.head_job_id, 1);

        /* Malformed. */
        jobs[3].fs_user = 2;
        assert_int_equal(gw_sched_plan_fair(&in, &fair, NOW, &plan), -EINVAL);
        jobs[3].fs_user = 0;
        const double nan_factor[2] = { 0.2, NAN };
        struct gw_sched_fair bad = { nan_factor, 2 };
        assert_int_equal(gw_sched_plan_fair(&in, &bad, NOW, &plan), -EINVAL);
        plan.order = NULL;
        assert_int_equal(gw_sched_plan_fair(&in, &fair, NOW, &plan), -EINVAL);
}

/* gw_sched_order against an insertion sort by (priority desc, factor desc, position asc), on
 * random queues of every length up to 300 with many ties. */
static void order_matches_a_reference(void **state) {
        (void) state;
        static struct gw_sched_job jobs[300];
        static size_t order[600], ref[300];
        double factor[7];
        uint64_t x = 88172645463325252ULL;

        for (size_t n = 0; n <= 300; n += (n < 20 ? 1 : 37)) {
                for (size_t u = 0; u < 7; u++) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        factor[u] = (double) (x % 4) / 4.0; /* few values: ties between users */
                }
                for (size_t i = 0; i < n; i++) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        jobs[i] = (struct gw_sched_job){ .id = (int64_t) i + 1,
                                                         .ngpus = 1,
                                                         .time_limit = MIN,
                                                         .priority = (int) (x % 3),
                                                         .fs_user = (uint32_t) (x >> 8) % 7 };
                }
                for (size_t i = 0; i < n; i++) {
                        size_t k = i;
                        for (; k > 0; k--) {
                                const struct gw_sched_job *a = &jobs[ref[k - 1]], *b = &jobs[i];
                                bool b_first = b->priority != a->priority ? b->priority > a->priority
                                                                          : factor[b->fs_user] > factor[a->fs_user];
                                if (!b_first)
                                        break;
                                ref[k] = ref[k - 1];
                        }
                        ref[k] = i;
                }
                struct gw_sched_input in = { .pending = jobs, .n_pending = n };
                struct gw_sched_fair fair = { factor, 7 };
                assert_int_equal(gw_sched_order(&in, &fair, order), 0);
                for (size_t i = 0; i < n; i++)
                        assert_int_equal(order[i], ref[i]);
        }
}

/* ---- a small box on a virtual clock, driven by the pure functions ---- */

#define BOX_GPUS 4
#define BOX_USERS 3
#define BOX_JOBS (100 * BOX_USERS)
#define STEP (30 * MIN)
#define JOB_LEN (2 * HOUR)

struct vjob {
        int user;
        gw_usec_t submit, start;
        bool started;
};

struct box {
        bool fair;
        int n_users;
        struct vjob jobs[BOX_JOBS];
        size_t n;
        int64_t gpu_job[BOX_GPUS]; /* job index + 1, 0 = free */
        struct gw_fs_user users[BOX_USERS];
        double gpu_h[BOX_USERS]; /* undecayed, for the report of a failure */
};

static void box_add(struct box *b, int user, gw_usec_t submit, int n) {
        for (int i = 0; i < n; i++)
                b->jobs[b->n++] = (struct vjob){ .user = user, .submit = submit };
}

/* Charges the step [t - STEP, t] and frees the GPUs of jobs that end at t. */
static void box_account(struct box *b, gw_usec_t t) {
        for (int g = 0; g < BOX_GPUS; g++) {
                if (!b->gpu_job[g])
                        continue;
                struct vjob *j = &b->jobs[b->gpu_job[g] - 1];
                assert_int_equal(gw_fs_charge(&b->users[j->user], 1, t - STEP, t, H7D), 0);
                b->gpu_h[j->user] += (double) STEP / (double) HOUR;
                if (j->start + JOB_LEN <= t)
                        b->gpu_job[g] = 0;
        }
}

/* One scheduling pass at t; returns the number of pending jobs it saw. */
static size_t box_pass(struct box *b, gw_usec_t t, size_t *ret_busy) {
        struct gw_sched_gpu gpus[BOX_GPUS];
        struct gw_sched_running run[BOX_GPUS];
        struct gw_sched_job pend[BOX_JOBS];
        size_t idx[BOX_JOBS], order[2 * BOX_JOBS], n_run = 0, n = 0;
        struct gw_sched_start starts[BOX_JOBS];
        enum gw_job_reason reasons[BOX_JOBS];
        double factor[BOX_USERS];

        for (int g = 0; g < BOX_GPUS; g++) {
                int64_t h = b->gpu_job[g];
                gpus[g] = (struct gw_sched_gpu){ .index = g,
                                                 .usable = true,
                                                 .mem_total = 80 * GIB,
                                                 .mem_free = h ? 0 : 80 * GIB,
                                                 .job_id = h };
                if (h)
                        run[n_run++] = (struct gw_sched_running){ h, M(g), b->jobs[h - 1].start + JOB_LEN };
        }
        for (size_t i = 0; i < b->n; i++)
                if (!b->jobs[i].started && b->jobs[i].submit <= t) {
                        pend[n] = (struct gw_sched_job){ .id = (int64_t) i + 1,
                                                         .ngpus = 1,
                                                         .time_limit = JOB_LEN,
                                                         .dep = GW_DEP_SATISFIED,
                                                         .fs_user = (uint32_t) b->jobs[i].user };
                        idx[n++] = i;
                }
        assert_int_equal(gw_fs_factors(b->users, (size_t) b->n_users, t, H7D, factor), 0);
        struct gw_sched_fair fair = { factor, (size_t) b->n_users };
        struct gw_sched_input in = { gpus, BOX_GPUS, pend, n, run, n_run };
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons, .order = order };
        assert_int_equal(gw_sched_plan_fair(&in, b->fair ? &fair : NULL, t, &plan), 0);
        for (size_t s = 0; s < plan.n_starts; s++) {
                struct vjob *j = &b->jobs[starts[s].job_id - 1];
                j->started = true;
                j->start = t;
                b->gpu_job[__builtin_ctzll(starts[s].gpu_mask)] = starts[s].job_id;
        }
        (void) idx;
        *ret_busy = 0;
        for (int g = 0; g < BOX_GPUS; g++)
                *ret_busy += b->gpu_job[g] != 0;
        return n;
}

/* Runs the box until the first user with jobs submitted has none left waiting, while others
 * still wait (the end of the contention), or until all have started.  Returns that instant. */
static gw_usec_t box_run_contended(struct box *b) {
        gw_usec_t t = NOW;
        for (int step = 0; step < 10000; step++, t += STEP) {
                if (step)
                        box_account(b, t);
                size_t busy, n = box_pass(b, t, &busy);
                int waiting[BOX_USERS] = { 0 }, arrived[BOX_USERS] = { 0 };
                for (size_t i = 0; i < b->n; i++) {
                        arrived[b->jobs[i].user] |= b->jobs[i].submit <= t;
                        waiting[b->jobs[i].user] += !b->jobs[i].started;
                }
                bool all_arrived = true, one_done = false;
                for (int u = 0; u < b->n_users; u++) {
                        all_arrived &= arrived[u] != 0;
                        one_done |= waiting[u] == 0;
                }
                if ((all_arrived && one_done) || n == 0)
                        return t;
        }
        fail_msg("the box did not finish in 10000 steps");
        return t;
}

static void assert_equal_usage(const struct box *b, gw_usec_t t, double tolerance) {
        double used[BOX_USERS], total = 0;
        for (int u = 0; u < b->n_users; u++)
                total += used[u] = gw_fs_usage_at(&b->users[u], t, H7D);
        for (int u = 0; u < b->n_users; u++) {
                double fair_part = total / b->n_users;
                if (fabs(used[u] - fair_part) > tolerance * total)
                        fail_msg("user %d used %.1f GPU-h (decayed) of %.1f, %.1f GPU-h undecayed; a fair part is %.1f",
                                 u, used[u], total, b->gpu_h[u], fair_part);
        }
}

/* Two users, 100 two-hour jobs each, the second arriving 10 h after the first took the box:
 * when the contention ends, their decayed usage is equal (within 2% of all). */
static void two_users_converge(void **state) {
        (void) state;
        static struct box b;
        b = (struct box){ .fair = true, .n_users = 2 };
        box_add(&b, 0, NOW, 100);
        box_add(&b, 1, NOW + 10 * HOUR, 100);
        gw_usec_t t = box_run_contended(&b);
        assert_equal_usage(&b, t, 0.02);
}

static void three_users_converge(void **state) {
        (void) state;
        static struct box b;
        b = (struct box){ .fair = true, .n_users = 3 };
        box_add(&b, 0, NOW, 100);
        box_add(&b, 1, NOW + 6 * HOUR, 100);
        box_add(&b, 2, NOW + 15 * HOUR, 100);
        gw_usec_t t = box_run_contended(&b);
        assert_equal_usage(&b, t, 0.02);
}

/* Without fair share the same box is first come, first served: the user who came first
 * keeps the box (the contrast that shows the property is fair share's doing). */
static void without_fair_share_first_come_keeps_the_box(void **state) {
        (void) state;
        static struct box b;
        b = (struct box){ .fair = false, .n_users = 2 };
        box_add(&b, 0, NOW, 100);
        box_add(&b, 1, NOW + 10 * HOUR, 100);
        gw_usec_t t = box_run_contended(&b);
        assert_true(gw_fs_usage_at(&b.users[1], t, H7D) < 0.05 * gw_fs_usage_at(&b.users[0], t, H7D));
}

/* A user alone gets the whole box at every pass while jobs wait, however much they used. */
static void user_alone_gets_the_whole_box(void **state) {
        (void) state;
        static struct box b;
        b = (struct box){ .fair = true, .n_users = 2 };
        b.users[1] = (struct gw_fs_user){ .used_gpu_h = 1e6, .used_at = NOW }; /* a heavy past */
        box_add(&b, 1, NOW, 100);
        gw_usec_t t = NOW;
        for (int step = 0; step < 1000; step++, t += STEP) {
                if (step)
                        box_account(&b, t);
                size_t busy, n = box_pass(&b, t, &busy);
                if (n == 0)
                        break;
                assert_int_equal(busy, BOX_GPUS);
        }
        for (size_t i = 0; i < b.n; i++)
                assert_true(b.jobs[i].started);
}

/* gw_fs_reorder: a sorted queue, then what a pass sees change (some users' factors, jobs
 * started from anywhere in it, new jobs placed anywhere), then the incremental update: it
 * must give the order a full sort gives, over many random queues. */
struct ritem {
        int priority;
        unsigned user;
        int64_t id;
};
static const double *reorder_factor;

static int ritem_cmp(const void *pa, const void *pb) {
        const struct ritem *a = *(struct ritem *const *) pa, *b = *(struct ritem *const *) pb;
        if (a->priority != b->priority)
                return a->priority > b->priority ? -1 : 1;
        double fa = reorder_factor[a->user], fb = reorder_factor[b->user];
        if (fa != fb)
                return fa > fb ? -1 : 1;
        return a->id < b->id ? -1 : a->id > b->id;
}

static void reorder_equals_a_full_sort(void **state) {
        (void) state;
        enum { MAX = 80, USERS = 5 };
        static struct ritem pool[2 * MAX];
        srand(4242);
        for (int trial = 0; trial < 2000; trial++) {
                double factor[USERS];
                reorder_factor = factor;
                for (unsigned u = 0; u < USERS; u++)
                        factor[u] = (rand() % 4) / 4.0 + 0.1; /* ties between users too */
                size_t n = (size_t) rand() % MAX, n_pool = 0;
                void *items[2 * MAX], *tmp[2 * MAX], *want[2 * MAX];
                bool dirty[2 * MAX];
                for (size_t i = 0; i < n; i++) {
                        pool[n_pool] = (struct ritem){ rand() % 3, (unsigned) rand() % USERS, (int64_t) n_pool };
                        items[i] = &pool[n_pool++];
                }
                qsort(items, n, sizeof *items, ritem_cmp);
                size_t k = 0; /* some start: taken out from anywhere */
                for (size_t i = 0; i < n; i++)
                        if (rand() % 4)
                                items[k++] = items[i];
                n = k;
                memset(dirty, 0, sizeof dirty);
                for (unsigned u = 0; u < USERS; u++) /* some users' factors change */
                        if (rand() % 3 == 0) {
                                factor[u] = (rand() % 4) / 4.0 + 0.1;
                                for (size_t i = 0; i < n; i++)
                                        dirty[i] |= ((struct ritem *) items[i])->user == u;
                        }
                for (int add = rand() % 10; add > 0 && n < 2 * MAX - 1; add--) { /* new ones, anywhere */
                        size_t at = n ? (size_t) rand() % (n + 1) : 0;
                        memmove(items + at + 1, items + at, (n - at) * sizeof *items);
                        memmove(dirty + at + 1, dirty + at, (n - at) * sizeof *dirty);
                        pool[n_pool] = (struct ritem){ rand() % 3, (unsigned) rand() % USERS, (int64_t) n_pool };
                        items[at] = &pool[n_pool++];
                        dirty[at] = true;
                        n++;
                }
                memcpy(want, items, n * sizeof *items);
                qsort(want, n, sizeof *want, ritem_cmp);
                gw_fs_reorder(items, n, dirty, ritem_cmp, tmp);
                for (size_t i = 0; i < n; i++)
                        if (items[i] != want[i])
                                fail_msg("trial %d: position %zu of %zu differs from the full sort", trial, i, n);
        }
}

/* The scheduler's own order, given a queue already in it, keeps it as given. */
static void sched_order_keeps_a_sorted_queue(void **state) {
        (void) state;
        double factor[2] = { 0.25, 1.0 };
        struct gw_sched_job p[4] = {
                { .id = 1, .priority = 1, .fs_user = 0, .ngpus = 1, .time_limit = HOUR },
                { .id = 3, .priority = 0, .fs_user = 1, .ngpus = 1, .time_limit = HOUR },
                { .id = 2, .priority = 0, .fs_user = 0, .ngpus = 1, .time_limit = HOUR },
                { .id = 4, .priority = 0, .fs_user = 0, .ngpus = 1, .time_limit = HOUR },
        };
        struct gw_sched_input in = { .pending = p, .n_pending = 4 };
        struct gw_sched_fair fair = { factor, 2 };
        size_t order[8];
        assert_int_equal(gw_sched_order(&in, &fair, order), 0);
        for (size_t i = 0; i < 4; i++)
                assert_int_equal(order[i], i);
        p[1].fs_user = 0, p[2].fs_user = 1; /* now out of order: the sort runs */
        assert_int_equal(gw_sched_order(&in, &fair, order), 0);
        assert_int_equal(order[1], 2);
        assert_int_equal(order[2], 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(decay_halves_after_one_half_life),
                cmocka_unit_test(charge_does_not_depend_on_the_period),
                cmocka_unit_test(factor_is_two_to_minus_usage_over_share),
                cmocka_unit_test(explain_names_the_factors),
                cmocka_unit_test(fair_head_keeps_backfill),
                cmocka_unit_test(order_matches_a_reference),
                cmocka_unit_test(two_users_converge),
                cmocka_unit_test(three_users_converge),
                cmocka_unit_test(without_fair_share_first_come_keeps_the_box),
                cmocka_unit_test(user_alone_gets_the_whole_box),
                cmocka_unit_test(reorder_equals_a_full_sort),
                cmocka_unit_test(sched_order_keeps_a_sorted_queue),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
