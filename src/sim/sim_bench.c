/* The scheduler's cost curve on synthetic inputs: how long one gw_sched_plan takes as the
 * queue grows and as a plan covers more GPUs.  The state is a busy node (every GPU but one
 * held, ends spread over a day) and a queue of jobs that mostly cannot start, which is the
 * expensive case: each of them is planned (head reservation, backfill checks) every pass. */
#include <errno.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/sched.h"
#include "sim/sim.h"

struct bench_case {
        int gpus;
        size_t pending;
};

static double time_plan(const struct bench_case *bc, gw_usec_t (*clock_ns)(void), uint64_t seed, size_t *ret_reps) {
        struct gw_sched_gpu gpus[GW_SCHED_MAX_GPUS];
        struct gw_sched_running run[GW_SCHED_MAX_GPUS];
        struct gw_sim_rng r;
        size_t n = bc->pending, n_run = 0;
        gw_usec_t now = GW_SIM_EPOCH + GW_SIM_DAY;
        _cleanup_free_ struct gw_sched_job *jobs = gw_xmalloc((n ? n : 1) * sizeof(*jobs));
        _cleanup_free_ struct gw_sched_start *starts = gw_xmalloc((n ? n : 1) * sizeof(*starts));
        _cleanup_free_ enum gw_job_reason *reasons = gw_xmalloc((n ? n : 1) * sizeof(*reasons));

        gw_sim_rng_seed(&r, seed);
        for (int i = 0; i < bc->gpus; i++) {
                bool held = i + 1 < bc->gpus; /* one GPU free, so the pass is not skipped */
                gpus[i] = (struct gw_sched_gpu){ .index = i, .usable = true, .job_id = held ? 1000000 + i : 0 };
                if (held)
                        run[n_run++] = (struct gw_sched_running){
                                .id = 1000000 + i,
                                .gpu_mask = UINT64_C(1) << i,
                                .end = now + (gw_usec_t) (gw_sim_rng_unit(&r) * (double) GW_SIM_DAY) + 1
                        };
        }
        for (size_t i = 0; i < n; i++) {
                int g = 1 + (int) (gw_sim_rng_next(&r) % (uint64_t) (bc->gpus > 1 ? bc->gpus : 1));
                jobs[i] =
                        (struct gw_sched_job){ .id = (int64_t) i + 1,
                                               .ngpus = g,
                                               .time_limit = (gw_usec_t) (1 + gw_sim_rng_next(&r) % 48) * GW_SIM_HOUR };
        }
        /* The first job asks for every GPU: it becomes the head with a reservation, and every
         * later job is checked for backfill against it. */
        if (n)
                jobs[0].ngpus = bc->gpus;
        struct gw_sched_input in = { gpus, (size_t) bc->gpus, jobs, n, run, n_run };
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons };
        size_t reps = 0;
        gw_usec_t t0 = clock_ns(), t;
        /* At least 3 repetitions and 0.2 s. */
        do {
                if (gw_sched_plan(&in, now, &plan) < 0)
                        return -1;
                reps++;
                t = clock_ns();
        } while (reps < 3 || t - t0 < 200 * 1000 * 1000);
        *ret_reps = reps;
        return (double) (t - t0) / (double) reps;
}

static void row(FILE *f, bool json, bool *first, const char *series, const struct bench_case *bc, double ns,
                size_t reps) {
        if (json) {
                fprintf(f,
                        "%s{\"series\":\"%s\",\"gpus\":%d,\"pending\":%zu,\"reps\":%zu,\"us_per_plan\":%.3f,"
                        "\"ns_per_pending_job\":%.2f}",
                        *first ? "" : ",", series, bc->gpus, bc->pending, reps, ns / 1000.0,
                        bc->pending ? ns / (double) bc->pending : 0);
        } else {
                fprintf(f, "%-14s %6d %9zu %8zu %12.2f %10.2f\n", series, bc->gpus, bc->pending, reps, ns / 1000.0,
                        bc->pending ? ns / (double) bc->pending : 0);
        }
        *first = false;
}

int gw_sim_bench_plan(FILE *f, gw_usec_t (*clock_ns)(void), size_t max_pending, bool json) {
        static const int per_gpus[] = { 1, 2, 4, 8, 16, 32, 64 };
        bool first = true;

        if (!clock_ns)
                return -EINVAL;
        if (json)
                fputs("{\"plan_cost\":[", f);
        else
                fprintf(f, "%-14s %6s %9s %8s %12s %10s\n", "series", "gpus", "pending", "reps", "us/plan", "ns/job");
        for (int g = 8; g <= 64; g *= 8)
                for (size_t n = 1; n <= max_pending; n *= 4) {
                        struct bench_case bc = { g, n };
                        size_t reps;
                        double ns = time_plan(&bc, clock_ns, 1, &reps);
                        if (ns < 0)
                                return -EINVAL;
                        row(f, json, &first, "vs-queue", &bc, ns, reps);
                }
        for (size_t i = 0; i < sizeof(per_gpus) / sizeof(per_gpus[0]); i++) {
                struct bench_case bc = { per_gpus[i], 1024 };
                size_t reps;
                double ns = time_plan(&bc, clock_ns, 2, &reps);
                if (ns < 0)
                        return -EINVAL;
                row(f, json, &first, "vs-gpus", &bc, ns, reps);
        }
        if (json)
                fputs("]}\n", f);
        return 0;
}
