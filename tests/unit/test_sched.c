#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/sched.h"
#include "sched_test.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_JOBS 8
#define MAX_RUN 4

/* One scenario in minutes relative to NOW.  GPUs are 0..n_gpus-1 with 80 GiB each, all
 * free unless a running job holds them or mem_free_gib says otherwise. */
struct sched_case {
        const char *name;
        int n_gpus;
        uint64_t drained;
        uint64_t rogue; /* GPUs a process gpuward did not start uses */
        int mem_free_gib[8]; /* 0 = all 80 GiB free */
        struct {
                int64_t id;
                uint64_t mask;
                int end_min;
        } run[MAX_RUN];
        struct {
                int64_t id;
                int ngpus;
                int limit_min;
                int mem_gib;
                bool held;
                enum gw_dep_status dep;
        } job[MAX_JOBS];
        /* expected */
        uint64_t start_mask[MAX_JOBS]; /* per job, 0 = not started */
        enum gw_job_reason reason[MAX_JOBS];
        int64_t head;
        int head_start_min; /* -1 = INFINITY */
};

struct built {
        struct gw_sched_gpu gpus[GW_SCHED_MAX_GPUS];
        struct gw_sched_job jobs[MAX_JOBS];
        struct gw_sched_running run[MAX_RUN];
        struct gw_sched_input in;
};

static void build(const struct sched_case *c, struct built *b) {
        memset(b, 0, sizeof(*b));
        for (int i = 0; i < c->n_gpus; i++) {
                b->gpus[i] = (struct gw_sched_gpu){
                        .index = i,
                        .usable = !(c->drained & M(i)),
                        .has_rogue = (c->rogue & M(i)) != 0,
                        .mem_total = 80 * GIB,
                        .mem_free = (uint64_t) (c->mem_free_gib[i] ? c->mem_free_gib[i] : 80) * GIB,
                };
        }
        size_t nr = 0;
        for (; nr < MAX_RUN && c->run[nr].id; nr++) {
                b->run[nr] = (struct gw_sched_running){
                        .id = c->run[nr].id,
                        .gpu_mask = c->run[nr].mask,
                        .end = NOW + c->run[nr].end_min * MIN,
                };
                for (int i = 0; i < c->n_gpus; i++)
                        if (c->run[nr].mask & M(i)) {
                                b->gpus[i].job_id = c->run[nr].id;
                                b->gpus[i].mem_free = 2 * GIB;
                        }
        }
        size_t nj = 0;
        for (; nj < MAX_JOBS && c->job[nj].id; nj++)
                b->jobs[nj] = (struct gw_sched_job){
                        .id = c->job[nj].id,
                        .ngpus = c->job[nj].ngpus,
                        .gpu_mem = (uint64_t) c->job[nj].mem_gib * GIB,
                        .time_limit = c->job[nj].limit_min * MIN,
                        .held = c->job[nj].held,
                        .dep = c->job[nj].dep,
                };
        b->in = (struct gw_sched_input){
                .gpus = b->gpus,
                .n_gpus = (size_t) c->n_gpus,
                .pending = b->jobs,
                .n_pending = nj,
                .running = b->run,
                .n_running = nr,
        };
}

static void run_case(const struct sched_case *c) {
        struct built b;
        struct gw_sched_start starts[MAX_JOBS];
        enum gw_job_reason reasons[MAX_JOBS];
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons };

        build(c, &b);
        if (gw_sched_plan(&b.in, NOW, &plan) != 0)
                fail_msg("%s: plan failed", c->name);

        size_t s = 0;
        for (size_t i = 0; i < b.in.n_pending; i++) {
                if (reasons[i] != c->reason[i])
                        fail_msg("%s: job %lld reason %s, want %s", c->name, (long long) b.jobs[i].id,
                                 gw_job_reason_name(reasons[i]), gw_job_reason_name(c->reason[i]));
                if (!c->start_mask[i])
                        continue;
                if (s >= plan.n_starts || starts[s].job_id != b.jobs[i].id || starts[s].gpu_mask != c->start_mask[i])
                        fail_msg("%s: start %zu of job %lld wrong (mask %#llx)", c->name, s, (long long) b.jobs[i].id,
                                 s < plan.n_starts ? (unsigned long long) starts[s].gpu_mask : 0ULL);
                s++;
        }
        if (s != plan.n_starts)
                fail_msg("%s: %zu starts, want %zu", c->name, plan.n_starts, s);
        if (plan.head_job_id != c->head)
                fail_msg("%s: head %lld, want %lld", c->name, (long long) plan.head_job_id, (long long) c->head);
        gw_usec_t want_start = c->head_start_min < 0 ? INF : NOW + c->head_start_min * MIN;
        if (plan.head_start != want_start)
                fail_msg("%s: head_start %lld min, want %d", c->name,
                         plan.head_start == INF ? -1LL : (long long) ((plan.head_start - NOW) / MIN),
                         c->head_start_min);
}

#define R_NONE GW_REASON_NONE
#define R_RES GW_REASON_RESOURCES
#define R_DEP GW_REASON_DEPENDENCY
#define R_HELD GW_REASON_HELD
#define R_PRIO GW_REASON_PRIORITY
#define R_DRAIN GW_REASON_DRAINED

static const struct sched_case cases[] = {
        {
                .name = "rogue: clean GPUs first, whatever their index",
                .n_gpus = 4,
                .rogue = M(0) | M(2),
                .job = { { 1, 1, 60 }, { 2, 1, 60 } },
                .start_mask = { M(1), M(3) },
                .head = 0,
                .head_start_min = -1,
        },
        {
                .name = "rogue: too few clean GPUs, the clean ones and then the lowest with a rogue",
                .n_gpus = 4,
                .rogue = M(0) | M(1) | M(2),
                .job = { { 1, 2, 60 } },
                .start_mask = { M(3) | M(0) },
                .head = 0,
                .head_start_min = -1,
        },
        {
                .name = "rogue: only GPUs with a rogue left, the job is placed there",
                .n_gpus = 2,
                .rogue = M(1),
                .run = { { 100, M(0), 60 } },
                .job = { { 1, 1, 60 } },
                .start_mask = { M(1) },
                .head = 0,
                .head_start_min = -1,
        },
        {
                .name = "rogue: a rogue too big for --gpu-mem still keeps the job off",
                .n_gpus = 2,
                .rogue = M(1),
                .mem_free_gib = { 0, 10 },
                .run = { { 100, M(0), 60 } },
                .job = { { 1, 1, 60, 20 } },
                .reason = { R_RES },
                .head = 1,
                .head_start_min = 60,
        },
        {
                .name = "rogue: a backfilled job also prefers clean GPUs",
                .n_gpus = 4,
                .rogue = M(2),
                .run = { { 100, M(0), 60 } },
                .job = { { 1, 4, 60 }, { 2, 1, 30 } },
                .start_mask = { 0, M(1) },
                .reason = { R_RES, R_NONE },
                .head = 1,
                .head_start_min = 60,
        },
        {
                .name = "rogue: drained GPUs are not made usable by being clean",
                .n_gpus = 3,
                .drained = M(0),
                .rogue = M(1),
                .job = { { 1, 1, 60 }, { 2, 1, 60 } },
                .start_mask = { M(2), M(1) },
                .head = 0,
                .head_start_min = -1,
        },
        {
                .name = "everything fits, lowest GPUs first, no head",
                .n_gpus = 4,
                .job = { { 1, 1, 60 }, { 2, 2, 60 } },
                .start_mask = { M(0), M(1) | M(2) },
                .head = 0,
                .head_start_min = -1,
        },
        {
                /* The queue arrives sorted (priority, then submission); the plan keeps it. */
                .name = "priority order: the first in the queue gets the GPUs",
                .n_gpus = 2,
                .job = { { 7, 2, 60 }, { 3, 1, 60 } },
                .start_mask = { M(0) | M(1), 0 },
                .reason = { R_NONE, R_RES },
                .head = 3,
                .head_start_min = 60,
        },
        {
                .name = "FIFO within a priority: queue order, not id order",
                .n_gpus = 1,
                .job = { { 9, 1, 30 }, { 4, 1, 30 } },
                .start_mask = { M(0), 0 },
                .reason = { R_NONE, R_RES },
                .head = 4,
                .head_start_min = 30,
        },
        {
                .name = "head's start counts jobs started earlier in the same plan",
                .n_gpus = 4,
                .job = { { 1, 2, 60 }, { 2, 2, 30 }, { 3, 1, 600 } },
                .start_mask = { M(0) | M(1), M(2) | M(3), 0 },
                .reason = { R_NONE, R_NONE, R_RES },
                .head = 3,
                .head_start_min = 30,
        },
        {
                .name = "short job backfills: ends before the head's reserved start",
                .n_gpus = 4,
                .run = { { 100, M(0) | M(1) | M(2), 60 } },
                .job = { { 1, 4, 60 }, { 2, 1, 30 } },
                .start_mask = { 0, M(3) },
                .reason = { R_RES, R_NONE },
                .head = 1,
                .head_start_min = 60,
        },
        {
                .name = "ending exactly at the head's start is allowed",
                .n_gpus = 4,
                .run = { { 100, M(0) | M(1) | M(2), 60 } },
                .job = { { 1, 4, 60 }, { 2, 1, 60 } },
                .start_mask = { 0, M(3) },
                .reason = { R_RES, R_NONE },
                .head = 1,
                .head_start_min = 60,
        },
        {
                .name = "long job that would delay the head is not started",
                .n_gpus = 4,
                .run = { { 100, M(0) | M(1) | M(2), 60 } },
                .job = { { 1, 4, 60 }, { 2, 1, 61 }, { 3, 2, 10 } },
                .start_mask = { 0, 0, 0 },
                .reason = { R_RES, R_PRIO, R_RES },
                .head = 1,
                .head_start_min = 60,
        },
        {
                .name = "long job on GPUs outside the head's reservation starts",
                .n_gpus = 4,
                .run = { { 100, M(0) | M(1), 60 }, { 101, M(2), 120 } },
                .job = { { 1, 2, 60 }, { 2, 1, 600 } },
                .start_mask = { 0, M(3) },
                .reason = { R_RES, R_NONE },
                .head = 1,
                .head_start_min = 60,
        },
        {
                .name = "reservation takes the lowest ready GPUs, a free one included",
                .n_gpus = 4,
                .run = { { 100, M(1) | M(2), 60 }, { 101, M(3), 120 } },
                .job = { { 1, 2, 60 }, { 2, 1, 600 }, { 3, 1, 30 } },
                .start_mask = { 0, 0, M(0) },
                .reason = { R_RES, R_PRIO, R_NONE },
                .head = 1,
                .head_start_min = 60,
        },
        {
                .name = "head waits for the later of two jobs",
                .n_gpus = 4,
                .run = { { 100, M(0) | M(1), 30 }, { 101, M(2) | M(3), 90 } },
                .job = { { 1, 3, 60 }, { 2, 1, 60 } },
                .start_mask = { 0, 0 },
                .reason = { R_RES, R_RES },
                .head = 1,
                .head_start_min = 90,
        },
        {
                .name = "gpu_mem: skips a GPU with too little free memory, uses it when enough",
                .n_gpus = 3,
                .mem_free_gib = { 10, 70, 70 },
                .job = { { 1, 1, 60, 40 }, { 2, 1, 60, 5 }, { 3, 1, 60, 40 } },
                .start_mask = { M(1), M(0), M(2) },
                .head = 0,
                .head_start_min = -1,
        },
        {
                .name = "gpu_mem: head reserves only GPUs big enough once free",
                .n_gpus = 3,
                .mem_free_gib = { 10 },
                .run = { { 100, M(1), 30 }, { 101, M(2), 90 } },
                .job = { { 1, 1, 60, 40 }, { 2, 1, 600, 5 } },
                .start_mask = { 0, M(0) },
                .reason = { R_RES, R_NONE },
                .head = 1,
                .head_start_min = 30,
        },
        {
                .name = "gpu_mem above every GPU's total never fits and is not the head",
                .n_gpus = 2,
                .run = { { 100, M(0) | M(1), 30 } },
                .job = { { 1, 1, 60, 90 }, { 2, 1, 60 } },
                .start_mask = { 0, 0 },
                .reason = { R_RES, R_RES },
                .head = 2,
                .head_start_min = 30,
        },
        {
                .name = "drained GPUs are never used",
                .n_gpus = 4,
                .drained = M(0) | M(2),
                .job = { { 1, 1, 60 }, { 2, 1, 60 }, { 3, 1, 5 } },
                .start_mask = { M(1), M(3), 0 },
                .reason = { R_NONE, R_NONE, R_RES },
                .head = 3,
                .head_start_min = 60,
        },
        {
                .name = "more GPUs than usable: Drained, and the next job gets the reservation",
                .n_gpus = 4,
                .drained = M(3),
                .run = { { 100, M(0), 60 } },
                .job = { { 1, 4, 60 }, { 2, 3, 60 }, { 3, 1, 600 }, { 4, 1, 30 } },
                .start_mask = { 0, 0, 0, M(1) },
                .reason = { R_DRAIN, R_RES, R_PRIO, R_NONE },
                .head = 2,
                .head_start_min = 60,
        },
        {
                .name = "Drained also behind a head with no GPU left; more than the host has is Resources",
                .n_gpus = 4,
                .drained = M(2),
                .run = { { 100, M(0) | M(1), 60 } },
                .job = { { 1, 3, 60 }, { 2, 1, 30 }, { 3, 4, 60 }, { 4, 5, 60 }, { 5, 2, 60 } },
                .start_mask = { 0, M(3), 0, 0, 0 },
                .reason = { R_RES, R_NONE, R_DRAIN, R_RES, R_RES },
                .head = 1,
                .head_start_min = 60,
        },
        {
                .name = "more memory than any GPU has is Resources, a drained GPU or not",
                .n_gpus = 2,
                .drained = M(1),
                .job = { { 1, 1, 60, 90 }, { 2, 2, 60 }, { 3, 1, 60 } },
                .start_mask = { 0, 0, M(0) },
                .reason = { R_RES, R_DRAIN, R_NONE },
                .head = 0,
                .head_start_min = -1,
        },
        {
                .name = "held and dependency reasons; such jobs neither start nor block",
                .n_gpus = 2,
                .job = { { 1, 1, 60, 0, true },
                         { 2, 1, 60, 0, false, GW_DEP_WAITING },
                         { 3, 1, 60, 0, false, GW_DEP_NEVER },
                         { 4, 1, 60, 0, true, GW_DEP_WAITING },
                         { 5, 2, 60 } },
                .start_mask = { 0, 0, 0, 0, M(0) | M(1) },
                .reason = { R_HELD, R_DEP, R_DEP, R_HELD, R_NONE },
                .head = 0,
                .head_start_min = -1,
        },
        {
                .name = "no free GPU: reasons only",
                .n_gpus = 2,
                .run = { { 100, M(0) | M(1), 45 } },
                .job = { { 1, 1, 60 }, { 2, 1, 10 }, { 3, 1, 10, 0, true } },
                .start_mask = { 0, 0, 0 },
                .reason = { R_RES, R_RES, R_HELD },
                .head = 1,
                .head_start_min = 45,
        },
        {
                .name = "overdue running job: head starts now, not in the past",
                .n_gpus = 2,
                .run = { { 100, M(0), -5 } },
                .job = { { 1, 2, 60 }, { 2, 1, 1 } },
                .start_mask = { 0, 0 },
                .reason = { R_RES, R_PRIO },
                .head = 1,
                .head_start_min = 0,
        },
};

static void table(void **state) {
        for (size_t i = 0; i < N_ELEMS(cases); i++)
                run_case(&cases[i]);
}

/* A GPU NVML shows busy with no running record: its end is unknown, so the head gets no
 * reservation and blocks nothing. */
static void unknown_end_blocks_nothing(void **state) {
        struct gw_sched_gpu gpus[2] = {
                { .index = 0, .usable = true, .mem_total = GIB, .mem_free = GIB, .job_id = 55 },
                { .index = 1, .usable = true, .mem_total = GIB, .mem_free = GIB },
        };
        struct gw_sched_job jobs[2] = {
                { .id = 1, .ngpus = 2, .time_limit = MIN, .dep = GW_DEP_SATISFIED },
                { .id = 2, .ngpus = 1, .time_limit = 1000 * MIN, .dep = GW_DEP_SATISFIED },
        };
        struct gw_sched_input in = { .gpus = gpus, .n_gpus = 2, .pending = jobs, .n_pending = 2 };
        struct gw_sched_start starts[2];
        enum gw_job_reason reasons[2];
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons };

        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_int_equal(plan.head_job_id, 1);
        assert_true(plan.head_start == INF);
        assert_int_equal(plan.n_starts, 1);
        assert_int_equal(starts[0].job_id, 2);
        assert_int_equal(starts[0].gpu_mask, M(1));

        /* A running job's mask keeps a GPU busy even when NVML has not caught up. */
        gpus[0].job_id = 0;
        struct gw_sched_running run = { .id = 55, .gpu_mask = M(0), .end = NOW + 10 * MIN };
        in.running = &run;
        in.n_running = 1;
        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_true(plan.head_start == NOW + 10 * MIN);
        assert_int_equal(plan.n_starts, 0);
        assert_int_equal(reasons[1], GW_REASON_PRIORITY);
}

static void sparse_indices(void **state) {
        struct gw_sched_gpu gpus[3] = {
                { .index = 63, .usable = true },
                { .index = 5, .usable = true },
                { .index = 40, .usable = true },
        };
        struct gw_sched_job job = { .id = 1, .ngpus = 2, .time_limit = MIN, .dep = GW_DEP_SATISFIED };
        struct gw_sched_input in = { .gpus = gpus, .n_gpus = 3, .pending = &job, .n_pending = 1 };
        struct gw_sched_start start;
        enum gw_job_reason reason;
        struct gw_sched_plan plan = { .starts = &start, .reasons = &reason };

        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_int_equal(plan.n_starts, 1);
        assert_int_equal(start.gpu_mask, M(5) | M(40));
}

/* Bookings restrict jobs to some GPUs (allowed) or hold them back (blocked); such jobs never
 * become the head, so they cannot stall the rest of the queue. */
static void allowed_and_blocked(void **state) {
        struct gw_sched_gpu gpus[4];
        for (int i = 0; i < 4; i++)
                gpus[i] = (struct gw_sched_gpu){ .index = i, .usable = true };
        struct gw_sched_job jobs[4] = {
                { .id = 1, .ngpus = 2, .time_limit = MIN, .dep = GW_DEP_SATISFIED, .allowed = M(2) | M(3) },
                { .id = 2, .ngpus = 2, .time_limit = MIN, .dep = GW_DEP_SATISFIED, .allowed = M(2) | M(3) },
                { .id = 3, .ngpus = 1, .time_limit = MIN, .dep = GW_DEP_SATISFIED, .blocked = GW_REASON_QUOTA },
                { .id = 4, .ngpus = 2, .time_limit = MIN, .dep = GW_DEP_SATISFIED },
        };
        struct gw_sched_input in = { .gpus = gpus, .n_gpus = 4, .pending = jobs, .n_pending = 4 };
        struct gw_sched_start starts[4];
        enum gw_job_reason reasons[4];
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons };

        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_int_equal(plan.n_starts, 2);
        assert_int_equal(starts[0].job_id, 1);
        assert_int_equal(starts[0].gpu_mask, M(2) | M(3));
        assert_int_equal(reasons[1], GW_REASON_RESOURCES); /* its GPUs are taken; it blocks nobody */
        assert_int_equal(reasons[2], GW_REASON_QUOTA);
        assert_int_equal(starts[1].job_id, 4);
        assert_int_equal(starts[1].gpu_mask, M(0) | M(1));
}

/* GPUs 0-1 are free but booked by others before a 2-GPU job would end; GPUs 2-3 are busy:
 * it waits for the bookings (Reservation).  With the free GPUs busy too, or narrowed to its
 * own booking's GPUs, it waits for Resources. */
static void booked_out_is_reservation(void **state) {
        struct gw_sched_gpu gpus[4];
        for (int i = 0; i < 4; i++)
                gpus[i] = (struct gw_sched_gpu){ .index = i, .usable = true };
        struct gw_sched_running run[2] = { { .id = 8, .gpu_mask = M(2) | M(3), .end = NOW + 60 * MIN } };
        struct gw_sched_job jobs[2] = {
                { .id = 1,
                  .ngpus = 2,
                  .time_limit = 90 * MIN,
                  .dep = GW_DEP_SATISFIED,
                  .allowed = M(2) | M(3),
                  .booked_out = true },
                { .id = 2, .ngpus = 2, .time_limit = 90 * MIN, .dep = GW_DEP_SATISFIED, .allowed = M(2) | M(3) },
        };
        struct gw_sched_input in = { .gpus = gpus,
                                     .n_gpus = 4,
                                     .pending = jobs,
                                     .n_pending = 2,
                                     .running = run,
                                     .n_running = 1 };
        struct gw_sched_start starts[2];
        enum gw_job_reason reasons[2];
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons };

        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_int_equal(plan.n_starts, 0);
        assert_int_equal(reasons[0], GW_REASON_RESERVATION);
        assert_int_equal(reasons[1], GW_REASON_RESOURCES); /* its own booking's GPUs are busy */

        run[1] = (struct gw_sched_running){ .id = 9, .gpu_mask = M(0) | M(1), .end = NOW + 60 * MIN };
        in.n_running = 2;
        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_int_equal(reasons[0], GW_REASON_RESOURCES); /* nothing free at all */
}

static void invalid_input(void **state) {
        struct gw_sched_gpu gpus[2] = { { .index = 0, .usable = true }, { .index = 1, .usable = true } };
        struct gw_sched_job job = { .id = 1, .ngpus = 1, .time_limit = MIN, .dep = GW_DEP_SATISFIED };
        struct gw_sched_input in = { .gpus = gpus, .n_gpus = 2, .pending = &job, .n_pending = 1 };
        struct gw_sched_start start;
        enum gw_job_reason reason = GW_REASON_HELD;
        struct gw_sched_plan plan = { .starts = &start, .reasons = &reason, .n_starts = 77 };

        gpus[1].index = 64;
        assert_int_equal(gw_sched_plan(&in, NOW, &plan), -EINVAL);
        gpus[1].index = -1;
        assert_int_equal(gw_sched_plan(&in, NOW, &plan), -EINVAL);
        gpus[1].index = 0; /* twice the same GPU */
        assert_int_equal(gw_sched_plan(&in, NOW, &plan), -EINVAL);
        gpus[1].index = 1;

        static const int bad_ngpus[] = { 0, -1, 65 };
        for (size_t i = 0; i < N_ELEMS(bad_ngpus); i++) {
                job.ngpus = bad_ngpus[i];
                assert_int_equal(gw_sched_plan(&in, NOW, &plan), -EINVAL);
        }
        job.ngpus = 1;
        job.time_limit = 0;
        assert_int_equal(gw_sched_plan(&in, NOW, &plan), -EINVAL);
        job.time_limit = MIN;

        in.n_gpus = 65;
        assert_int_equal(gw_sched_plan(&in, NOW, &plan), -EINVAL);
        in.n_gpus = 2;
        assert_int_equal(gw_sched_plan(NULL, NOW, &plan), -EINVAL);
        assert_int_equal(gw_sched_plan(&in, NOW, NULL), -EINVAL);

        /* Nothing was written on any error. */
        assert_int_equal(plan.n_starts, 77);
        assert_int_equal(reason, GW_REASON_HELD);

        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_int_equal(plan.n_starts, 1);
}

static void empty_input(void **state) {
        struct gw_sched_input in = { 0 };
        struct gw_sched_plan plan = { .n_starts = 5, .head_job_id = 9 };
        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_int_equal(plan.n_starts, 0);
        assert_int_equal(plan.head_job_id, 0);
        assert_true(plan.head_start == INF);
}

static void huge_limit_saturates(void **state) {
        struct gw_sched_gpu gpus[2] = { { .index = 0, .usable = true }, { .index = 1, .usable = true } };
        struct gw_sched_job jobs[2] = {
                { .id = 1, .ngpus = 1, .time_limit = INF - 1, .dep = GW_DEP_SATISFIED },
                { .id = 2, .ngpus = 2, .time_limit = MIN, .dep = GW_DEP_SATISFIED },
        };
        struct gw_sched_input in = { .gpus = gpus, .n_gpus = 2, .pending = jobs, .n_pending = 2 };
        struct gw_sched_start starts[2];
        enum gw_job_reason reasons[2];
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons };

        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_int_equal(plan.n_starts, 1);
        assert_int_equal(plan.head_job_id, 2);
        assert_true(plan.head_start == INF);
}

static void pick(void **state) {
        assert_int_equal(gw_sched_pick(0, 1), 0);
        assert_int_equal(gw_sched_pick(0xF0, 2), 0x30);
        assert_int_equal(gw_sched_pick(0xF0, 4), 0xF0);
        assert_int_equal(gw_sched_pick(0xF0, 5), 0);
        assert_int_equal(gw_sched_pick(0xF0, 0), 0);
        assert_int_equal(gw_sched_pick(0xF0, -1), 0);
        assert_true(gw_sched_pick(UINT64_MAX, 64) == UINT64_MAX);
        assert_true(gw_sched_pick(UINT64_MAX, 65) == 0);
        assert_true(gw_sched_pick(M(63) | M(0), 2) == (M(63) | M(0)));
        assert_true(gw_sched_pick(M(63) | M(7), 1) == M(7));
}

/* Many jobs and no free GPU: the fast path must not change the answer. */
static void long_queue_no_free_gpu(void **state) {
        enum { N = 20000 };
        struct gw_sched_gpu gpus[8];
        struct gw_sched_running run = { .id = 100, .gpu_mask = 0xFF, .end = NOW + 30 * MIN };
        struct gw_sched_job *jobs = calloc(N, sizeof(*jobs));
        struct gw_sched_start *starts = calloc(N, sizeof(*starts));
        enum gw_job_reason *reasons = calloc(N, sizeof(*reasons));

        assert_true(jobs && starts && reasons);
        for (int i = 0; i < 8; i++)
                gpus[i] = (struct gw_sched_gpu){ .index = i, .usable = true, .job_id = 100 };
        for (int i = 0; i < N; i++)
                jobs[i] = (struct gw_sched_job){ .id = i + 1,
                                                 .ngpus = 1 + i % 8,
                                                 .time_limit = MIN,
                                                 .held = i % 7 == 3,
                                                 .dep = GW_DEP_SATISFIED };
        struct gw_sched_input in = { .gpus = gpus,
                                     .n_gpus = 8,
                                     .pending = jobs,
                                     .n_pending = N,
                                     .running = &run,
                                     .n_running = 1 };
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons };

        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_int_equal(plan.n_starts, 0);
        assert_int_equal(plan.head_job_id, 1);
        for (int i = 0; i < N; i++)
                assert_int_equal(reasons[i], i % 7 == 3 ? GW_REASON_HELD : GW_REASON_RESOURCES);
        free(jobs);
        free(starts);
        free(reasons);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(table),
                cmocka_unit_test(unknown_end_blocks_nothing),
                cmocka_unit_test(sparse_indices),
                cmocka_unit_test(invalid_input),
                cmocka_unit_test(empty_input),
                cmocka_unit_test(huge_limit_saturates),
                cmocka_unit_test(pick),
                cmocka_unit_test(allowed_and_blocked),
                cmocka_unit_test(booked_out_is_reservation),
                cmocka_unit_test(long_queue_no_free_gpu),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
