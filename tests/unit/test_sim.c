/* The simulator's engine on hand-computed traces, and its invariants over generated ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "sim/sim.h"

#define SEC GW_SIM_SEC
#define MIN GW_SIM_MIN
#define HOUR GW_SIM_HOUR

static struct gw_sim_job job(gw_usec_t submit, int gpus, gw_usec_t runtime, gw_usec_t limit) {
        return (struct gw_sim_job){ .submit = submit,
                                    .ngpus = gpus,
                                    .runtime = runtime,
                                    .time_limit = limit,
                                    .stall_at = GW_SIM_NONE,
                                    .cancel_at = GW_SIM_NONE,
                                    .fail_at = GW_SIM_NONE,
                                    .val_at = GW_SIM_NONE,
                                    .fail_class = GW_FAILURE_OK };
}

static struct gw_sim_config config(const char *name, int gpus) {
        struct gw_sim_config c;
        char msg[256];

        assert_int_equal(gw_sim_config_named(name, &c, msg, sizeof(msg)), 0);
        c.n_gpus = gpus;
        c.seed = 1;
        return c;
}

static struct gw_sim_result run(struct gw_sim_job *jobs, size_t n, const char *name, int gpus) {
        struct gw_sim_workload w = { .jobs = jobs, .n = n };
        struct gw_sim_config c = config(name, gpus);
        struct gw_sim_result r;

        assert_int_equal(gw_sim_run(&w, &c, &r), 0);
        assert_int_equal(r.misclassified, 0);
        return r;
}

#define assert_hours(got, want) assert_true(fabs((got) - (want)) < 1e-9)

/* 2 GPUs, 3 jobs: A hangs 10 min in (time limit 4 h), B runs 2 h, C (1 h) arrives at 1 min. */
static void three_jobs(struct gw_sim_job v[3]) {
        v[0] = job(0, 1, HOUR, 4 * HOUR);
        v[0].stall_at = 10 * MIN;
        v[1] = job(0, 1, 2 * HOUR, 3 * HOUR);
        v[2] = job(MIN, 1, HOUR, 2 * HOUR);
}

/* Baseline: A holds its GPU at 0% until its limit; C waits for B's GPU. */
static void baseline_holds_stalled_gpu(void **state) {
        struct gw_sim_job v[3];
        three_jobs(v);
        struct gw_sim_result r = run(v, 3, "baseline", 2);

        assert_int_equal(r.measured, 4 * HOUR);
        assert_hours(r.capacity_gpu_h, 8.0);
        assert_hours(r.held_gpu_h, 4.0 + 2.0 + 1.0);
        assert_hours(r.stalled_gpu_h, 4.0 - 10.0 / 60);
        assert_hours(r.busy_gpu_h, 10.0 / 60 + 2.0 + 1.0);
        assert_true(fabs(r.wait_p99_s - (2 * 3600 - 60)) < 1e-6);
        assert_true(r.wait_p50_s == 0);
        assert_int_equal(r.completed, 2);
        assert_int_equal(r.timed_out, 1);
        assert_int_equal(r.reclaimed, 0);
        assert_int_equal(r.wrongful, 0);
        gw_sim_result_free(&r);
}

/* Reclaim (default: idle 300 s, warn 60 s, sampled every 30 s): A is idle from 600 s, warned
 * at 900 s, reclaimed at 960 s; C starts on its GPU at once. */
static void reclaim_frees_stalled_gpu(void **state) {
        struct gw_sim_job v[3];
        three_jobs(v);
        struct gw_sim_result r = run(v, 3, "reclaim", 2);

        assert_int_equal(r.measured, 2 * HOUR);
        assert_hours(r.held_gpu_h, (960.0 + 7200 + 3600) / 3600);
        assert_hours(r.stalled_gpu_h, 360.0 / 3600);
        assert_hours(r.busy_gpu_h, (600.0 + 7200 + 3600) / 3600);
        assert_true(fabs(r.wait_p99_s - 900) < 1e-6);
        assert_int_equal(r.warnings, 1);
        assert_int_equal(r.reclaimed, 1);
        assert_int_equal(r.wrongful, 0);
        assert_int_equal(r.completed, 2);
        assert_int_equal(r.timed_out, 0);
        gw_sim_result_free(&r);
}

/* A hardware fault at 25 min of work with a checkpoint every 10 min: 5 min of work lost;
 * the retry resumes from the 20-min checkpoint after the 10 s backoff. */
static void retry_resumes_from_checkpoint(void **state) {
        struct gw_sim_job v[1] = { job(0, 1, HOUR, 4 * HOUR) };
        v[0].ckpt_interval = 10 * MIN;
        v[0].fail_at = 25 * MIN;
        v[0].fail_class = GW_FAILURE_GPU_FAULT;

        /* Two GPUs: the fault drains the first one (recovery), the retry runs on the other. */
        struct gw_sim_result r = run(v, 1, "retry", 2);
        assert_int_equal(r.retries, 1);
        assert_int_equal(r.gpu_faults, 1);
        assert_hours(r.drained_gpu_h, 4.0);
        assert_int_equal(r.completed, 1);
        assert_hours(r.lost_gpu_h, 5.0 / 60);
        /* 25 min, 10 s backoff, then the 40 min from the checkpoint. */
        assert_int_equal(r.measured, 25 * MIN + 10 * SEC + 40 * MIN);
        gw_sim_result_free(&r);

        r = run(v, 1, "baseline", 1);
        assert_int_equal(r.retries, 0);
        assert_int_equal(r.completed, 0);
        assert_int_equal(r.failed, 1);
        assert_hours(r.lost_gpu_h, 5.0 / 60);
        gw_sim_result_free(&r);
}

/* A bug that crashes at the same point: user_error is never retried; a cuda_error that
 * repeats is retried once, then the crash-loop rule stops it. */
static void repeating_failures_stop(void **state) {
        struct gw_sim_job v[1] = { job(0, 1, HOUR, 4 * HOUR) };
        v[0].ckpt_interval = 10 * MIN;
        v[0].fail_at = 25 * MIN;
        v[0].fail_repeat = true;
        v[0].fail_class = GW_FAILURE_USER_ERROR;

        struct gw_sim_result r = run(v, 1, "retry", 1);
        assert_int_equal(r.retries, 0);
        assert_int_equal(r.failed, 1);
        gw_sim_result_free(&r);

        v[0].fail_class = GW_FAILURE_CUDA_ERROR;
        r = run(v, 1, "retry", 1);
        assert_int_equal(r.retries, 1);
        assert_int_equal(r.crash_loops, 1);
        assert_int_equal(r.failed, 1);
        assert_hours(r.lost_gpu_h, 10.0 / 60);
        gw_sim_result_free(&r);
}

/* A 2 h validation at 0% GPU whose progress bar moves: gpuward keeps it; the utilisation-only
 * rule cancels it at 120 min, which is counted as wrongful.  A silent one (no log growth) is
 * protected by its phase for protect_max (1 h) only: gpuward then reclaims it, and that is
 * counted as wrongful too. */
static void slow_but_progressing(void **state) {
        struct gw_sim_job v[1] = { job(0, 1, 6 * HOUR, 12 * HOUR) };
        v[0].val_at = HOUR;
        v[0].val_len = 2 * HOUR + 30 * MIN;

        const char *keep[] = { "reclaim", "reclaim:hpo", "all", "hpo" };
        for (size_t i = 0; i < 4; i++) {
                struct gw_sim_result r = run(v, 1, keep[i], 1);
                assert_int_equal(r.reclaimed, 0);
                assert_int_equal(r.wrongful, 0);
                assert_int_equal(r.completed, 1);
                gw_sim_result_free(&r);
        }
        struct gw_sim_result r = run(v, 1, "princeton", 1);
        assert_int_equal(r.reclaimed, 1);
        assert_int_equal(r.wrongful, 1);
        gw_sim_result_free(&r);

        v[0].val_silent = true;
        r = run(v, 1, "reclaim", 1);
        assert_int_equal(r.reclaimed, 1);
        assert_int_equal(r.wrongful, 1);
        gw_sim_result_free(&r);
}

/* The finetune profile never reclaims; a job that names it keeps its GPUs under "reclaim". */
static void profile_per_job(void **state) {
        struct gw_sim_job v[1] = { job(0, 1, HOUR, 2 * HOUR) };
        v[0].stall_at = 10 * MIN;
        snprintf(v[0].profile, sizeof(v[0].profile), "finetune");

        struct gw_sim_result r = run(v, 1, "reclaim", 1);
        assert_int_equal(r.reclaimed, 0);
        assert_int_equal(r.timed_out, 1);
        gw_sim_result_free(&r);
}

/* Over many generated workloads: gpuward's policies never reclaim a progressing job, every
 * injected failure is classified as its class, and the same seed gives the same table. */
static void invariants_over_seeds(void **state) {
        const char *names[] = { "reclaim", "all", "hpo", "bookings", "retry" };

        for (uint64_t seed = 1; seed <= 12; seed++) {
                struct gw_sim_gen g;
                struct gw_sim_workload w;

                gw_sim_gen_default(&g);
                g.n_gpus = 8;
                g.span = 3 * GW_SIM_DAY;
                g.seed = seed;
                assert_int_equal(gw_sim_generate_lab(&g, &w), 0);
                assert_true(w.n > 50);
                for (size_t i = 0; i < 5; i++) {
                        struct gw_sim_config c = config(names[i], 8);
                        struct gw_sim_result a, b;
                        c.horizon = g.span;
                        c.seed = seed;
                        assert_int_equal(gw_sim_run(&w, &c, &a), 0);
                        assert_int_equal(gw_sim_run(&w, &c, &b), 0);
                        assert_int_equal(a.wrongful, 0);
                        assert_int_equal(a.misclassified, 0);
                        assert_true(a.busy_gpu_h <= a.held_gpu_h + 1e-9);
                        assert_true(a.held_gpu_h <= a.capacity_gpu_h + 1e-9);
                        assert_int_equal(a.completed, b.completed);
                        assert_int_equal(a.reclaimed, b.reclaimed);
                        assert_int_equal(a.events, b.events);
                        assert_true(a.busy_gpu_h == b.busy_gpu_h);
                        assert_true(a.wait_p90_s == b.wait_p90_s);
                        gw_sim_result_free(&a);
                        gw_sim_result_free(&b);
                }
                gw_sim_workload_free(&w);
        }
}

/* Nodes: 16 GPUs as two nodes of 8; an 8-GPU job needs a whole node. */
static void nodes_place_whole_jobs(void **state) {
        struct gw_sim_job v[3] = { job(0, 4, HOUR, 2 * HOUR), job(0, 8, HOUR, 2 * HOUR), job(0, 8, HOUR, 2 * HOUR) };
        struct gw_sim_workload w = { .jobs = v, .n = 3 };
        struct gw_sim_config c = config("baseline", 16);
        struct gw_sim_result r;

        c.node_gpus = 8;
        assert_int_equal(gw_sim_run(&w, &c, &r), 0);
        /* The 4-GPU job takes half of node 0, the first 8-GPU job node 1; the second waits for
         * node 0 to drain at 1 h. */
        assert_true(fabs(r.wait_p99_s - 3600) < 1e-6);
        assert_int_equal(r.measured, 2 * HOUR);
        assert_int_equal(r.completed, 3);
        gw_sim_result_free(&r);

        /* A job larger than a node never starts (the scheduler's verdict); the run ends. */
        v[0].ngpus = 12;
        assert_int_equal(gw_sim_run(&w, &c, &r), 0);
        assert_int_equal(r.completed, 2);
        assert_int_equal(r.started, 2);
        gw_sim_result_free(&r);
}

/* The quota holds a user's second job while the first runs. */
static void quota_holds_jobs(void **state) {
        struct gw_sim_job v[2] = { job(0, 2, HOUR, 2 * HOUR), job(0, 2, HOUR, 2 * HOUR) };
        struct gw_sim_workload w = { .jobs = v, .n = 2 };
        struct gw_sim_config c = config("baseline", 4);
        struct gw_sim_result r;

        c.quota_gpus = 2;
        assert_int_equal(gw_sim_run(&w, &c, &r), 0);
        assert_true(fabs(r.wait_p99_s - 3600) < 1e-6);
        gw_sim_result_free(&r);
        v[1].user = 1;
        assert_int_equal(gw_sim_run(&w, &c, &r), 0);
        assert_true(r.wait_p99_s == 0);
        gw_sim_result_free(&r);
}

static void observe_shows_phases(void **state) {
        struct gw_sim_job j = job(0, 2, 3 * HOUR, 4 * HOUR);
        struct gw_sim_attempt a = { .start = GW_SIM_EPOCH, .stall_wall = GW_USEC_INFINITY, .job_id = 1, .attempt = 1 };
        struct gw_reclaim_gpu gpus[2];
        struct gw_job_obs o;

        j.val_at = HOUR;
        j.val_len = 30 * MIN;
        j.ckpt_interval = 20 * MIN;
        gw_sim_observe(&j, &a, GW_SIM_EPOCH + HOUR + 10 * MIN, 1, false, gpus, &o);
        assert_int_equal(o.phase, GW_PHASE_VALIDATING);
        assert_int_equal(o.n_gpus, 2);
        assert_int_equal(gpus[0].util, 0);
        assert_int_equal(o.log_changed, GW_SIM_EPOCH + HOUR + 10 * MIN);
        assert_int_equal(o.results_rows, 3);
        assert_int_equal(o.ckpt_mtime, GW_SIM_EPOCH + HOUR);
        gw_sim_observe(&j, &a, GW_SIM_EPOCH + HOUR + 10 * MIN, 1, true, gpus, &o);
        assert_int_equal(o.phase, GW_PHASE_UNKNOWN);
        assert_int_equal(o.log_changed, 0);
        assert_int_equal(o.ckpt_mtime, 0);

        a.stall_wall = GW_SIM_EPOCH + 2 * HOUR;
        assert_int_equal(gw_sim_work_at(&j, &a, GW_SIM_EPOCH + 3 * HOUR), 2 * HOUR);
        assert_false(gw_sim_progressing(&a, GW_SIM_EPOCH + 2 * HOUR));
        assert_int_equal(gw_sim_util_at(&j, &a, GW_SIM_EPOCH + 2 * HOUR + MIN, 1), 0);
        assert_int_equal(gw_sim_ckpt_at(&j, 0, 50 * MIN), 40 * MIN);
        assert_int_equal(gw_sim_ckpt_at(&j, 45 * MIN, 50 * MIN), 45 * MIN);
}

static void config_names(void **state) {
        struct gw_sim_config c;
        char msg[256];

        assert_int_equal(gw_sim_config_named("hpo", &c, msg, sizeof(msg)), 0);
        assert_true(c.retry);
        assert_int_equal(c.reclaim, GW_SIM_RECLAIM_GPUWARD);
        assert_string_equal(c.policy.name, "hpo");
        assert_int_equal(gw_sim_config_named("princeton", &c, msg, sizeof(msg)), 0);
        assert_int_equal(c.reclaim, GW_SIM_RECLAIM_UTIL_ONLY);
        assert_int_equal(c.policy.idle_timeout, 120 * MIN);
        assert_int_equal(gw_sim_config_named("reclaim:nope", &c, msg, sizeof(msg)), -EINVAL);
        assert_int_equal(gw_sim_config_named("retry:hpo", &c, msg, sizeof(msg)), -EINVAL);
        assert_int_equal(gw_sim_config_named("fifo", &c, msg, sizeof(msg)), -EINVAL);
        assert_non_null(strstr(msg, "unknown configuration 'fifo'"));
}

/* Bookings, 2 GPUs: A (1 GPU, 50 min, limit 1 h) and C (1 GPU, 3 h, limit 3 h) at 0; B (2 GPUs,
 * 30 min, limit 1 h) at 1 h, booked at 0 for [1 h, 2 h).  With the booking C may not start at
 * 0 (it would end after 1 h on GPU 1), B starts at 1 h on time, ends at 1 h 30, and the booking
 * is released 15 min later (gw_calendar_tick), when C starts.  Without it C starts at 0 and B
 * waits for C until 3 h. */
static void booking_holds_gpus_and_others_backfill(void **state) {
        struct gw_sim_job v[3] = { job(0, 1, 50 * MIN, HOUR), job(0, 1, 3 * HOUR, 3 * HOUR),
                                   job(HOUR, 2, 30 * MIN, HOUR) };
        v[2].book_lead = HOUR;

        struct gw_sim_result r = run(v, 3, "bookings", 2);
        assert_int_equal(r.bookings, 1);
        assert_int_equal(r.bookings_later, 0);
        assert_int_equal(r.booked_started, 1);
        assert_int_equal(r.booking_no_shows, 0);
        assert_int_equal(r.completed, 3);
        assert_int_equal(r.measured, HOUR + 45 * MIN + 3 * HOUR);
        assert_true(r.wait_p50_s == 0);
        assert_true(r.wait_p90_s == 105 * 60); /* C */
        assert_hours(r.held_gpu_h, (50.0 + 60 + 180) / 60);
        assert_hours(r.busy_gpu_h, (50.0 + 60 + 180) / 60);
        gw_sim_result_free(&r);

        r = run(v, 3, "baseline", 2);
        assert_int_equal(r.bookings, 0);
        assert_int_equal(r.completed, 3);
        assert_int_equal(r.measured, 3 * HOUR + 30 * MIN);
        assert_true(r.wait_p90_s == 2 * 3600); /* B */
        gw_sim_result_free(&r);
}

/* A booked job that never comes: the booking (of `booked` GPUs on a node of `gpus`) is
 * released 15 min into its window (no-show), and a job outside it that waited starts then.
 * The 2-hour job cannot end before the booking at 1 h: it waits, the booked job starts at 1 h
 * and is cancelled at once, and 15 min later the booking is released. */
static void no_show(int booked, int gpus) {
        struct gw_sim_job v[2] = { job(HOUR, booked, 30 * MIN, HOUR), job(30 * MIN, 1, 2 * HOUR, 2 * HOUR) };
        v[0].book_lead = HOUR;
        v[0].cancel_at = 0; /* its user cancels it as it would start: never runs in the booking */
        struct gw_sim_result r = run(v, 2, "bookings", gpus);
        assert_int_equal(r.bookings, 1);
        assert_int_equal(r.cancelled, 1);
        assert_int_equal(r.completed, 1);
        assert_true(r.wait_p90_s == (double) (HOUR + 15 * MIN - 30 * MIN) / SEC);
        gw_sim_result_free(&r);
}

static void booking_no_show_releases(void **state) {
        (void) state;
        no_show(1, 1);
}

/* The same on a 64-GPU node, the booking taking all 64: the 2-hour job may use no GPU before
 * the booking, GPU 63 included (no mask bit is spare to mean "no GPU" in the filter). */
static void booking_no_show_releases_64(void **state) {
        (void) state;
        no_show(64, 64);
}

/* A leak of 8 GiB per hour of work: the process runs out of memory (30 GiB low + 10 GiB peak
 * on 80 GiB) after 5 h.  Checkpoints every 40 min; gw_leak_detect flags it at the end of
 * the process's 4th epoch (epochs 2-4 rising; the first is never used), 160 min in. */
static void leak_oom_and_restart(void **state) {
        struct gw_sim_job v[1] = { job(0, 1, 10 * HOUR, 24 * HOUR) };
        v[0].ckpt_interval = 40 * MIN;
        v[0].leak_mb_h = 8192;

        /* Without gpuward: out of memory at 5 h, 20 min since the 280-min checkpoint lost. */
        struct gw_sim_result r = run(v, 1, "baseline", 1);
        assert_int_equal(r.oom_crashes, 1);
        assert_int_equal(r.failed, 1);
        assert_int_equal(r.leaks_detected, 0);
        assert_int_equal(r.measured, 5 * HOUR);
        assert_hours(r.lost_gpu_h, 20.0 / 60);
        assert_hours(r.lost_leak_gpu_h, 20.0 / 60);
        gw_sim_result_free(&r);

        /* leak_policy warn with retries: the oom is explained by the leak and retried from the
         * 280-min checkpoint (10 s backoff); the new process runs out again 5 h later at work
         * 580 min (checkpoint 560), and the second retry (20 s) finishes the last 40 min. */
        r = run(v, 1, "retry", 1);
        assert_int_equal(r.oom_crashes, 2);
        assert_int_equal(r.leaks_detected, 2);
        assert_int_equal(r.retries, 2);
        assert_int_equal(r.completed, 1);
        assert_hours(r.lost_gpu_h, 40.0 / 60);
        assert_int_equal(r.measured, 640 * MIN + 30 * SEC);
        gw_sim_result_free(&r);

        /* leak_policy restart: flagged at the 30-s sample at or after each detection, stopped
         * one sample later (the checkpoint seen settled), resumed from it.  Attempt 1: flagged
         * at 160 min, stopped at 160m30s (30 s lost), backoff 10 s; attempt 2 starts 160m40s at
         * work 160, flagged at work 320 = 320m40s -> sample 321m, stopped 321m30s (50 s lost),
         * backoff 20 s; attempt 3 starts 321m50s at work 320, flagged at work 480 = 481m50s ->
         * 482m, stopped 482m30s (40 s lost), backoff 40 s; attempt 4 (no retry left after it,
         * but it needs none) starts 483m10s at work 480 and finishes 120 min later. */
        r = run(v, 1, "all", 1);
        assert_int_equal(r.oom_crashes, 0);
        assert_int_equal(r.leaks_detected, 3);
        assert_int_equal(r.leak_restarts, 3);
        assert_int_equal(r.retries, 3);
        assert_int_equal(r.completed, 1);
        assert_int_equal(r.wrongful, 0);
        assert_hours(r.lost_gpu_h, 120.0 / 3600);
        assert_int_equal(r.measured, 603 * MIN + 10 * SEC);
        gw_sim_result_free(&r);
}

/* A broken GPU (a gpu_fault that stays until its 4-h repair): without draining, the next job
 * placed on it crashes 5 min in; with recovery it is drained and the next job waits or runs
 * elsewhere. */
/* 1 GPU: a 2 h job checkpointing every 10 min, and a high-class 30 min job at 25 min.  With
 * preemption the first stops a second after its checkpoint at 30 min (its run folder is
 * watched while the stop waits), the high job runs, then the first resumes from that
 * checkpoint; without, the high job waits 95 min. */
static void preempt_after_checkpoint(void **state) {
        struct gw_sim_job v[2] = { job(0, 1, 2 * HOUR, 4 * HOUR), job(25 * MIN, 1, 30 * MIN, HOUR) };
        v[0].ckpt_interval = 10 * MIN;
        v[1].priority = 1;

        (void) state;
        struct gw_sim_result r = run(v, 2, "retry+preempt", 1);
        assert_int_equal(r.preemptions, 1);
        assert_int_equal(r.completed, 2);
        assert_int_equal(r.high_jobs, 1);
        assert_true(fabs(r.high_wait_p50_s - (5 * 60 + 1)) < 1e-6);
        assert_hours(r.lost_preempt_gpu_h, 1.0 / 3600);
        assert_int_equal(r.retries, 0); /* a preemption is none */
        /* 30 min 1 s, the high job's 30 min, then the 90 min left from the checkpoint. */
        assert_int_equal(r.measured, 30 * MIN + 1 * SEC + 30 * MIN + 90 * MIN);
        gw_sim_result_free(&r);

        r = run(v, 2, "retry", 1);
        assert_int_equal(r.preemptions, 0);
        assert_true(fabs(r.high_wait_p50_s - 95 * 60) < 1e-6);
        gw_sim_result_free(&r);

        /* A job that does not checkpoint is never preempted. */
        v[0].ckpt_interval = 0;
        r = run(v, 2, "retry+preempt", 1);
        assert_int_equal(r.preemptions, 0);
        gw_sim_result_free(&r);
}

static void broken_gpu_drained(void **state) {
        struct gw_sim_job v[2] = { job(0, 1, HOUR, 2 * HOUR), job(20 * MIN, 1, 30 * MIN, HOUR) };
        v[0].fail_at = 10 * MIN;
        v[0].fail_class = GW_FAILURE_GPU_FAULT;
        v[0].gpu_broken = true;

        struct gw_sim_result r = run(v, 2, "baseline", 1);
        assert_int_equal(r.gpu_faults, 2);
        assert_int_equal(r.faults_on_broken, 1);
        assert_int_equal(r.failed, 2);
        assert_int_equal(r.measured, 25 * MIN);
        gw_sim_result_free(&r);

        /* The retry of the first job waits 4 h for the GPU, the second job too (queue order). */
        r = run(v, 2, "retry", 1);
        assert_int_equal(r.gpu_faults, 1);
        assert_int_equal(r.faults_on_broken, 0);
        assert_int_equal(r.completed, 2);
        assert_int_equal(r.measured, 10 * MIN + 4 * HOUR + HOUR + 30 * MIN);
        gw_sim_result_free(&r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(baseline_holds_stalled_gpu),
                cmocka_unit_test(preempt_after_checkpoint),
                cmocka_unit_test(reclaim_frees_stalled_gpu),
                cmocka_unit_test(retry_resumes_from_checkpoint),
                cmocka_unit_test(repeating_failures_stop),
                cmocka_unit_test(slow_but_progressing),
                cmocka_unit_test(profile_per_job),
                cmocka_unit_test(invariants_over_seeds),
                cmocka_unit_test(nodes_place_whole_jobs),
                cmocka_unit_test(quota_holds_jobs),
                cmocka_unit_test(observe_shows_phases),
                cmocka_unit_test(config_names),
                cmocka_unit_test(booking_holds_gpus_and_others_backfill),
                cmocka_unit_test(booking_no_show_releases),
                cmocka_unit_test(booking_no_show_releases_64),
                cmocka_unit_test(leak_oom_and_restart),
                cmocka_unit_test(broken_gpu_drained),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
