/* GPU memory-leak detection for training runs.  Pure: the shell passes a
 * job's per-GPU memory and its epoch boundaries (the instants results.csv rows appeared);
 * no I/O, no clock, no allocation.
 *
 * Per GPU and epoch, the baseline is the lowest memory seen during the epoch: PyTorch's
 * caching allocator grows during training and validation and comes back to what the job
 * really holds between validation and the next training steps, so the low of an epoch is
 * the level a leak raises (sawtooth memory that returns there is not a leak), and the peak
 * is what reaches the GPU's capacity first.  The first epoch of a process is never used: it
 * includes the start (no memory yet) and the allocator's one-off growth.
 *
 * A GPU leaks when the baselines of the last `epochs` (leak_epochs, default 3) epochs in a
 * row each rose by more than half of mib_per_epoch, and their robust slope (Theil-Sen: the
 * median of the pairwise slopes, over at most `window` baselines) exceeds mib_per_epoch
 * (default 256 MiB per epoch).  In a job of several GPUs one GPU also leaks, with half that
 * rate, when its siblings stay flat over the same epochs (|slope| below an eighth of it):
 * GPU 0 holding EMA weights and checkpoints is the typical case.
 *
 * Out of memory is predicted from the GPU's capacity, the peak of its last epoch and the
 * slope: epochs = (mem_total - peak) / slope; seconds = epochs * sec_per_epoch. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/telemetry.h"

#define GW_LEAK_DEFAULT_MIB_PER_EPOCH 256.0
#define GW_LEAK_DEFAULT_EPOCHS 3
#define GW_LEAK_DEFAULT_WINDOW 8
#define GW_LEAK_MAX_GPUS 64
#define GW_LEAK_MAX_EPOCHS 64 /* baselines looked at per GPU (the newest) */
#define GW_LEAK_EVIDENCE_MAX 256

struct gw_leak_params {
        double mib_per_epoch; /* threshold, MiB per epoch; > 0 */
        unsigned epochs; /* rising epochs in a row; >= 2 */
        unsigned window; /* baselines in the slope; >= epochs */
};
void gw_leak_params_default(struct gw_leak_params *p);

/* One GPU's epochs, oldest first.  Epoch numbers ascend and may have gaps (an epoch that
 * could not be measured is left out).  Memory in bytes. */
struct gw_leak_gpu {
        unsigned gpu;
        uint64_t mem_total; /* 0: unknown (then no OOM prediction) */
        const long *epoch;
        const double *low; /* the epoch's baseline */
        const double *peak; /* the epoch's highest; NULL: the lows */
        size_t n;
        /* NULL: the memory is of GPU gpu, named "GPU 0".  Else what it is of instead, named so
         * in the evidence: a job on MIG slices, "MIG-... (1g.10gb on GPU 0)", its memory and
         * mem_total the slices' (borrowed). */
        const char *name;
};

struct gw_leak_input {
        const struct gw_leak_gpu *gpus;
        size_t n_gpus; /* at most GW_LEAK_MAX_GPUS */
        double sec_per_epoch; /* for the minutes to OOM; <= 0 unknown */
};

struct gw_leak_gpu_verdict {
        unsigned gpu;
        size_t n; /* baselines known */
        double slope_mib; /* Theil-Sen over the last `window` baselines, MiB/epoch; 0 below 2 */
        unsigned rising; /* baselines in the current rising run (1 = not rising) */
        double run_slope_mib; /* Theil-Sen over that run, MiB/epoch */
        bool flat; /* |slope| below mib_per_epoch / 8 */
        bool flagged;
        double epochs_to_oom; /* NAN: unknown or not flagged */
};

struct gw_leak_verdict {
        bool leak;
        bool asymmetric; /* the worst GPU was flagged by the one-GPU rule */
        unsigned gpu; /* the worst flagged GPU (soonest out of memory, else fastest) */
        double slope_mib; /* its rate, MiB per epoch */
        unsigned epochs; /* its rising run, in epochs */
        double epochs_to_oom; /* NAN: unknown */
        double seconds_to_oom; /* NAN: unknown */
        /* "GPU 0: baseline +412 MiB/epoch for 5 epochs (GPUs 1-3 flat); OOM in ~6 epochs / ~13m",
         * or why there is no leak ("GPU 0: baseline +3 MiB/epoch over 6 epochs"). */
        char evidence[GW_LEAK_EVIDENCE_MAX];
        struct gw_leak_gpu_verdict per_gpu[GW_LEAK_MAX_GPUS];
        size_t n_gpus;
};

/* Judges in.  0 and *out fully written; -EINVAL for invalid params, NULL arrays, more than
 * GW_LEAK_MAX_GPUS GPUs or epochs not ascending. */
int gw_leak_detect(const struct gw_leak_params *p, const struct gw_leak_input *in, struct gw_leak_verdict *out);

/* The low and the peak of the points with from <= t < to.  0, or -ENODATA when none. */
int gw_leak_epoch_stats(const struct gw_point *pts, size_t n, gw_usec_t from, gw_usec_t to, double *ret_low,
                        double *ret_peak);

/* Theil-Sen slope of y over x (the median of (y[j]-y[i])/(x[j]-x[i]) for i < j with x
 * different); 0 when fewer than 2 points.  n at most GW_LEAK_MAX_EPOCHS. */
double gw_leak_theil_sen(const double *x, const double *y, size_t n);

/* One GPU's raw series for gw_leak_detect_series. */
struct gw_leak_series {
        unsigned gpu;
        uint64_t mem_total;
        const struct gw_point *pts;
        size_t n;
};

/* The whole pipeline over raw series: epoch k (1-based) spans bounds[k-1] <= t < bounds[k]
 * (bounds[0] = the process's start, n_bounds - 1 epochs); epoch 1 is skipped; then
 * gw_leak_detect.  Same returns. */
int gw_leak_detect_series(const struct gw_leak_params *p, const struct gw_leak_series *gpus, size_t n_gpus,
                          const gw_usec_t *bounds, size_t n_bounds, double sec_per_epoch, struct gw_leak_verdict *out);
