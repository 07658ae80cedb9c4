/* The "lab" workload generator and the measured shape of a workload.  The numbers below are
 * the starting values the simulator issue lists; docs/SIMULATOR.md says where each comes from
 * and which are this file's own assumptions. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/cleanup.h"
#include "sim/sim.h"

#define SEC GW_SIM_SEC
#define MIN GW_SIM_MIN
#define HOUR GW_SIM_HOUR
#define DAY GW_SIM_DAY

/* Runtimes: log-normal with median 20 min and p90 3.6 h (Philly, Jeon et al. ATC'19):
 * sigma = ln(3.6 h / 20 min) / z(0.9) = ln(10.8) / 1.2816. */
#define RT_MEDIAN_S 1200.0
#define RT_SIGMA 1.8568
#define RT_MAX (7 * DAY)

void gw_sim_workload_free(struct gw_sim_workload *w) {
        if (!w)
                return;
        free(w->jobs);
        *w = (struct gw_sim_workload){ 0 };
}

void gw_sim_gen_default(struct gw_sim_gen *g) {
        *g = (struct gw_sim_gen){ .n_gpus = 40, .max_job_gpus = 8, .span = 7 * DAY, .load = 1.0, .seed = 1 };
}

static gw_usec_t secs(double s) { return (gw_usec_t) llround(s * (double) SEC); }

/* Shares are kept to 4 decimals so that a trace written and read back is the same workload. */
static double round4(double x) { return round(x * 10000.0) / 10000.0; }

static gw_usec_t round_up(gw_usec_t t, gw_usec_t unit) { return (t + unit - 1) / unit * unit; }

static int draw_gpus(struct gw_sim_rng *r, int max) {
        double u = gw_sim_rng_unit(r);
        int g = u < 0.80 ? 1 : u < 0.88 ? 2 : u < 0.95 ? 4 : 8;
        while (g > max && g > 1)
                g /= 2;
        return g;
}

/* Multi-GPU jobs run longer (so that they hold most of the GPU time, as in Philly). */
static gw_usec_t draw_runtime(struct gw_sim_rng *r, int gpus) {
        double f = gpus >= 8 ? 3.0 : gpus >= 4 ? 2.0 : gpus >= 2 ? 1.5 : 1.0;
        double s = RT_MEDIAN_S * exp(RT_SIGMA * gw_sim_rng_normal(r)) * f;
        gw_usec_t t = secs(s < 60 ? 60 : s);
        return t > RT_MAX ? RT_MAX : t;
}

static void draw_interactive(struct gw_sim_rng *r, struct gw_sim_job *j) {
        static const gw_usec_t limits[] = { 4 * HOUR, 8 * HOUR, 12 * HOUR, 24 * HOUR };

        j->interactive = true;
        j->ngpus = gw_sim_rng_unit(r) < 0.8 ? 1 : j->ngpus > 1 ? 2 : 1;
        j->runtime = GW_USEC_INFINITY;
        j->stall_at = secs(gw_sim_rng_uniform(r, 10 * 60, 60 * 60));
        j->time_limit = limits[gw_sim_rng_next(r) % 4];
        /* 40% come back and close it; the rest forget it until the time limit. */
        if (gw_sim_rng_unit(r) < 0.4)
                j->cancel_at = j->stall_at + secs(gw_sim_rng_exp(r, 3 * 3600.0));
        j->zero_frac = round4(gw_sim_rng_uniform(r, 0.4, 0.7));
}

static void draw_outcome(struct gw_sim_rng *r, struct gw_sim_job *j) {
        double v = gw_sim_rng_unit(r);
        double rt = (double) j->runtime;

        if (v < 0.04) { /* hangs (deadlock, stuck data loader): holds its GPUs at 0% */
                j->stall_at = (gw_usec_t) (rt * gw_sim_rng_uniform(r, 0.05, 0.95));
                if (gw_sim_rng_unit(r) < 0.5)
                        j->cancel_at = j->stall_at + secs(gw_sim_rng_exp(r, 4 * 3600.0));
        } else if (v < 0.14) { /* killed by its user: diverged, wrong config */
                j->cancel_at = (gw_usec_t) (rt * gw_sim_rng_uniform(r, 0.1, 0.9));
        } else if (v < 0.20) { /* a bug: crashes at the same point every time */
                double at = gw_sim_rng_exp(r, 600.0) * (double) SEC;
                j->fail_at = (gw_usec_t) fmin(at, rt * 0.9);
                j->fail_class = GW_FAILURE_USER_ERROR;
                j->fail_repeat = true;
        } else if (v < 0.22) { /* does not fit in GPU memory */
                double at = gw_sim_rng_exp(r, 300.0) * (double) SEC;
                j->fail_at = (gw_usec_t) fmin(at, rt * 0.9);
                j->fail_class = GW_FAILURE_OOM;
                j->fail_repeat = true;
        } else if (v < 0.26) { /* infrastructure: Xid, NCCL timeout, daemon restart */
                double c = gw_sim_rng_unit(r);
                j->fail_at = (gw_usec_t) (rt * gw_sim_rng_uniform(r, 0.05, 0.95));
                if (j->ngpus > 1 && c < 0.4)
                        j->fail_class = GW_FAILURE_NCCL_ERROR;
                else if (c < 0.7)
                        j->fail_class = GW_FAILURE_GPU_FAULT;
                else if (c < 0.9)
                        j->fail_class = GW_FAILURE_CUDA_ERROR;
                else
                        j->fail_class = GW_FAILURE_LOST;
                /* Half the "illegal memory access" crashes are bugs that look like hardware. */
                j->fail_repeat = j->fail_class == GW_FAILURE_CUDA_ERROR && gw_sim_rng_unit(r) < 0.5;
        }
}

static void draw_job(struct gw_sim_rng *r, const struct gw_sim_gen *g, int n_users, struct gw_sim_job *j) {
        double u = gw_sim_rng_unit(r);

        *j = (struct gw_sim_job){ .stall_at = GW_SIM_NONE,
                                  .cancel_at = GW_SIM_NONE,
                                  .fail_at = GW_SIM_NONE,
                                  .val_at = GW_SIM_NONE,
                                  .fail_class = GW_FAILURE_OK };
        j->user = (int) ((double) n_users * u * u); /* a few heavy users */
        j->ngpus = draw_gpus(r, g->max_job_gpus < g->n_gpus ? g->max_job_gpus : g->n_gpus);
        j->runtime = draw_runtime(r, j->ngpus);
        j->zero_frac = round4(gw_sim_rng_uniform(r, 0.20, 0.28));
        /* Users overestimate: 1.5-3x rounded up to the hour; 3% underestimate and time out. */
        double f = gw_sim_rng_unit(r) < 0.03 ? gw_sim_rng_uniform(r, 0.5, 0.95) : gw_sim_rng_uniform(r, 1.5, 3.0);
        j->time_limit = round_up((gw_usec_t) ((double) j->runtime * f), HOUR);
        if (j->time_limit > 7 * DAY)
                j->time_limit = 7 * DAY;
        if (gw_sim_rng_unit(r) < 0.7) {
                gw_usec_t ci = (gw_usec_t) ((double) j->runtime / gw_sim_rng_uniform(r, 5, 50));
                j->ckpt_interval = round_up(ci < MIN ? MIN : ci > 2 * HOUR ? 2 * HOUR : ci, SEC);
        }
        if (gw_sim_rng_unit(r) < 0.06) {
                j->ckpt_interval = 0;
                draw_interactive(r, j);
                return;
        }
        draw_outcome(r, j);
        /* Long validation/evaluation phases (this file's assumption): 10% of jobs over an hour
         * have a 10-60 min one, 2% of jobs over 6 h a 2-4 h one (CPU-side evaluation). */
        double p = gw_sim_rng_unit(r);
        if (j->runtime > 6 * HOUR && p < 0.02)
                j->val_len = secs(gw_sim_rng_uniform(r, 2 * 3600, 4 * 3600));
        else if (j->runtime > HOUR && p < 0.12)
                j->val_len = secs(gw_sim_rng_uniform(r, 10 * 60, 60 * 60));
        if (j->val_len > 0 && j->val_len < j->runtime)
                j->val_at = (gw_usec_t) ((double) (j->runtime - j->val_len) * gw_sim_rng_uniform(r, 0.1, 0.9));
        else
                j->val_len = 0;
}

/* Bookings, leaks and broken GPUs (this file's assumptions, docs/SIMULATOR.md), from a stream
 * of their own per job so that the rest of the workload does not depend on them. */
static void draw_extras(uint64_t seed, size_t i, struct gw_sim_job *j) {
        struct gw_sim_rng r;

        gw_sim_rng_seed(&r, gw_sim_hash(seed, i, UINT64_C(0xb00c1ea4), 0));
        if (j->interactive || j->runtime == GW_USEC_INFINITY)
                return;
        /* 15% of jobs of an hour or more are booked 1-24 h ahead. */
        if (j->runtime >= HOUR && gw_sim_rng_unit(&r) < 0.15)
                j->book_lead = secs(round(gw_sim_rng_uniform(&r, 1, 24)) * 3600);
        /* 10% of jobs of 2 h or more leak: out of memory at 30-90% of their runtime. */
        if (j->runtime >= 2 * HOUR && gw_sim_rng_unit(&r) < 0.10) {
                double at_h = gw_sim_rng_uniform(&r, 0.3, 0.9) * (double) j->runtime / (double) HOUR;
                j->leak_mb_h = round(40960.0 / at_h);
        }
        /* One Xid-79 fault in ten is a GPU that stays broken until repaired. */
        if (j->fail_class == GW_FAILURE_GPU_FAULT)
                j->gpu_broken = gw_sim_rng_unit(&r) < 0.10;
}

/* GPU-time a job holds without queueing, retries or reclamation: what "load" counts. */
static double hold_gpu_s(const struct gw_sim_job *j) {
        gw_usec_t end = j->runtime;
        if (j->fail_at != GW_SIM_NONE && j->fail_at < end)
                end = j->fail_at;
        if (j->stall_at != GW_SIM_NONE && j->stall_at < end)
                end = GW_USEC_INFINITY;
        if (end > j->time_limit)
                end = j->time_limit;
        if (j->cancel_at != GW_SIM_NONE && j->cancel_at < end)
                end = j->cancel_at;
        return (double) j->ngpus * (double) end / (double) SEC;
}

/* Submissions per hour of day relative to the mean: trough at 04:00, peak at 16:00. */
static double daily(gw_usec_t t) {
        double h = (double) (t % DAY) / (double) HOUR;
        return 1.0 + 0.6 * cos(2.0 * M_PI * (h - 16.0) / 24.0);
}

int gw_sim_generate_lab(const struct gw_sim_gen *g, struct gw_sim_workload *ret) {
        struct gw_sim_rng r, probe;
        struct gw_sim_job j;
        int n_users;
        double mean_hold = 0;
        size_t n = 0, cap = 1024;

        if (!g || !ret || g->n_gpus < 1 || g->max_job_gpus < 1 || g->load <= 0 || (g->span <= 0 && !g->n_jobs))
                return -EINVAL;
        n_users = g->n_gpus / 2 > 4 ? g->n_gpus / 2 : 4;
        /* The rate that offers `load` times the capacity, from a separate stream. */
        gw_sim_rng_seed(&probe, g->seed ^ UINT64_C(0x5eed5eed5eed5eed));
        for (int i = 0; i < 20000; i++) {
                draw_job(&probe, g, n_users, &j);
                mean_hold += hold_gpu_s(&j) / 20000.0;
        }
        double per_s = g->load * g->n_gpus / mean_hold, peak = per_s * 1.6;

        struct gw_sim_job *jobs = gw_xmalloc(cap * sizeof(*jobs));
        gw_sim_rng_seed(&r, g->seed);
        double t = 0;
        for (;;) {
                t += gw_sim_rng_exp(&r, 1.0 / peak);
                gw_usec_t at = secs(t);
                if (g->n_jobs ? n >= g->n_jobs : at >= g->span)
                        break;
                /* Thinning: accept with the daily curve's share of the peak rate. */
                if (gw_sim_rng_unit(&r) * 1.6 >= daily(at))
                        continue;
                draw_job(&r, g, n_users, &j);
                draw_extras(g->seed, n, &j);
                j.submit = at;
                if (n == cap) {
                        cap *= 2;
                        jobs = gw_xrealloc(jobs, cap * sizeof(*jobs));
                }
                jobs[n++] = j;
        }
        *ret = (struct gw_sim_workload){ .jobs = jobs, .n = n, .span = g->n_jobs ? secs(t) : g->span };
        return 0;
}

void gw_sim_workload_shape(const struct gw_sim_workload *w, struct gw_sim_shape *ret) {
        _cleanup_free_ double *rt = gw_xmalloc((w->n ? w->n : 1) * sizeof(double));
        double one = 0, gpu_time = 0, multi_time = 0;
        size_t n_rt = 0, bad = 0, inter = 0, hw = 0, bug = 0, stall = 0, cancel = 0, leak = 0, booked = 0;

        *ret = (struct gw_sim_shape){ .n = w->n };
        for (size_t i = 0; i < w->n; i++) {
                const struct gw_sim_job *j = &w->jobs[i];
                double hold = hold_gpu_s(j);
                if (j->runtime != GW_USEC_INFINITY && !j->interactive)
                        rt[n_rt++] = (double) j->runtime / (double) SEC;
                one += j->ngpus == 1;
                gpu_time += hold;
                if (j->ngpus > 1)
                        multi_time += hold;
                inter += j->interactive;
                leak += j->leak_mb_h > 0;
                booked += j->book_lead > 0;
                bool crash = j->fail_at != GW_SIM_NONE && j->fail_at < j->runtime;
                bool is_bug = crash && j->fail_repeat;
                hw += crash && !is_bug;
                bug += is_bug;
                stall += j->stall_at != GW_SIM_NONE && !j->interactive;
                cancel += j->cancel_at != GW_SIM_NONE && j->stall_at == GW_SIM_NONE && !crash;
                bad += crash || j->stall_at != GW_SIM_NONE || j->cancel_at != GW_SIM_NONE || j->interactive;
        }
        if (!w->n)
                return;
        double n = (double) w->n;
        ret->runtime_p50_s = gw_sim_percentile(rt, n_rt, 50);
        ret->runtime_p90_s = gw_sim_percentile(rt, n_rt, 90);
        ret->runtime_p99_s = gw_sim_percentile(rt, n_rt, 99);
        ret->one_gpu_frac = one / n;
        ret->multi_gpu_time_frac = gpu_time > 0 ? multi_time / gpu_time : 0;
        ret->killed_failed_frac = (double) bad / n;
        ret->interactive_frac = (double) inter / n;
        ret->hw_fail_frac = (double) hw / n;
        ret->bug_fail_frac = (double) bug / n;
        ret->stall_frac = (double) stall / n;
        ret->cancel_frac = (double) cancel / n;
        ret->leak_frac = (double) leak / n;
        ret->booked_frac = (double) booked / n;
}
