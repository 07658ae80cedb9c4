/* Leaks in the engine: what the daemon's training watch would see of a leaking job's memory,
 * judged by the core (gw_leak_detect, gw_leak_respond).
 *
 * The memory model (this file's assumption, docs/SIMULATOR.md): every GPU has 80 GiB; a
 * process starts with a low (what it really holds between steps) of 30 GiB and its peak is
 * 10 GiB above the low; a leak raises the low by leak_mb_h MiB per hour of work; a retry is
 * a fresh process and starts from 30 GiB again.  The process runs out of memory when its peak
 * reaches 80 GiB.  One epoch per checkpoint interval (a results.csv row and last.pt, as
 * Ultralytics writes them); the daemon reads them at its samples, so a leak is detected at
 * the first sample after the row that tips the detector, and leak_policy restart stops the
 * job when its checkpoint has been seen stable, one sample later. */
#include <errno.h>

#include "core/leak.h"
#include "core/leak_respond.h"
#include "sim/sim_engine.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)
#define MEM_TOTAL (80.0 * GIB)
#define LOW_START (30.0 * GIB)
#define PEAK_ABOVE (10.0 * GIB)

/* The low of the process after p of its own work. */
static double low_after(double mib_h, gw_usec_t p) {
        return LOW_START + mib_h * MIB * (double) p / (double) GW_SIM_HOUR;
}

/* The first sample instant at or after t (samples are every `sample` from the epoch). */
static gw_usec_t next_sample(gw_usec_t t, gw_usec_t sample) {
        gw_usec_t rel = t - GW_SIM_EPOCH;
        return GW_SIM_EPOCH + (rel + sample - 1) / sample * sample;
}

/* Runs the detector at each epoch end of the attempt until it flags the leak or w_end is
 * reached.  Returns the work point of the epoch end that tips it, or GW_SIM_NONE. */
static int detect(const struct gw_sim_job *j, gw_usec_t w0, gw_usec_t w_end, gw_usec_t *ret) {
        long epoch[GW_LEAK_MAX_EPOCHS];
        double low[GW_LEAK_MAX_EPOCHS], peak[GW_LEAK_MAX_EPOCHS];
        size_t n = 0;
        struct gw_leak_params p;
        struct gw_leak_verdict v;
        gw_usec_t ci = j->ckpt_interval, prev = w0;

        gw_leak_params_default(&p);
        *ret = GW_SIM_NONE;
        /* Epoch k of the process ends at the k-th checkpoint after w0; the first is skipped. */
        for (long k = 1; prev < w_end; k++) {
                gw_usec_t b = (w0 / ci + k) * ci;
                if (b > w_end)
                        break;
                if (k >= 2) {
                        if (n == GW_LEAK_MAX_EPOCHS) {
                                for (size_t i = 1; i < n; i++) {
                                        epoch[i - 1] = epoch[i];
                                        low[i - 1] = low[i];
                                        peak[i - 1] = peak[i];
                                }
                                n--;
                        }
                        epoch[n] = k;
                        low[n] = low_after(j->leak_mb_h, prev - w0);
                        peak[n] = low_after(j->leak_mb_h, b - w0) + PEAK_ABOVE;
                        n++;
                        struct gw_leak_gpu g = { .gpu = 0,
                                                 .mem_total = (uint64_t) MEM_TOTAL,
                                                 .epoch = epoch,
                                                 .low = low,
                                                 .peak = peak,
                                                 .n = n };
                        struct gw_leak_input in = { .gpus = &g,
                                                    .n_gpus = 1,
                                                    .sec_per_epoch = (double) ci / (double) GW_SIM_SEC };
                        int r = gw_leak_detect(&p, &in, &v);
                        if (r < 0)
                                return r;
                        if (v.leak) {
                                *ret = b;
                                return 0;
                        }
                }
                prev = b;
        }
        return 0;
}

/* leak_policy's response to the detection, asked as the daemon asks it: at the look that
 * flags it (REPORT), then at the look where the checkpoint is settled.  Whether it stops. */
static int restart_stops(const struct eng *e, const struct jrun *r, bool resumable, bool *ret) {
        struct gw_leak_respond_input in = {
                .policy = (enum gw_leak_policy) e->cfg->leak_policy,
                .flagged = true,
                .resumable = resumable,
                .attempt = r->attempts,
                .max_retries = e->cfg->retry ? e->cfg->retry_policy.max_retries : 0,
        };
        struct gw_leak_response resp;
        int k = gw_leak_respond(&in, &resp);
        if (k < 0)
                return k;
        in.reported = true;
        in.restart_pending = resp.restart_pending;
        in.ckpt_settled = true;
        k = gw_leak_respond(&in, &resp);
        if (k < 0)
                return k;
        *ret = resp.act == GW_LEAK_ACT_STOP;
        return 0;
}

int gw_sim_leak_fate(struct eng *e, int64_t ji, gw_usec_t w_stop, gw_usec_t *end, enum gw_sim_end *cause) {
        const struct gw_sim_job *j = &e->w->jobs[ji];
        struct jrun *r = &e->jr[ji];
        const struct gw_sim_attempt *a = &r->a;
        gw_usec_t w0 = a->work_start;

        if (j->leak_mb_h <= 0)
                return 0;
        double p_oom = (MEM_TOTAL - LOW_START - PEAK_ABOVE) / (j->leak_mb_h * MIB) * (double) GW_SIM_HOUR;
        gw_usec_t w_oom = p_oom < (double) (w_stop - w0) ? w0 + (gw_usec_t) p_oom : GW_SIM_NONE;
        gw_usec_t w_end = w_oom != GW_SIM_NONE ? w_oom : w_stop;
        gw_usec_t t_stop = GW_USEC_INFINITY;

        if (e->cfg->leak_detect && e->cfg->sample > 0 && j->ckpt_interval > 0 && w_end != GW_USEC_INFINITY) {
                gw_usec_t w_flag;
                bool stops;
                int k = detect(j, w0, w_end, &w_flag);
                if (k < 0)
                        return k;
                if (w_flag != GW_SIM_NONE) {
                        r->leak_flag_wall = next_sample(a->start + (w_flag - w0), e->cfg->sample);
                        k = restart_stops(e, r, true, &stops);
                        if (k < 0)
                                return k;
                        if (stops)
                                t_stop = r->leak_flag_wall + e->cfg->sample;
                }
        }
        gw_usec_t t_oom = w_oom != GW_SIM_NONE ? a->start + (w_oom - w0) : GW_USEC_INFINITY;
        if (t_stop < t_oom && t_stop < *end && t_stop - a->start < w_stop - w0) {
                *end = t_stop;
                *cause = GW_SIM_END_LEAK_STOP;
        } else if (t_oom < *end) {
                *end = t_oom;
                *cause = GW_SIM_END_CRASH;
                r->crash_class = GW_FAILURE_OOM;
                r->leak_oom = true;
        }
        return 0;
}
