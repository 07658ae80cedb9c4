/* What the simulated daemon observes: pure functions of the workload model, an attempt and
 * the time.  They stand where the real daemon reads NVML, the job's log, its results.csv, its
 * checkpoint's mtime and its exit status; the decisions stay in core/. */
#include <math.h>
#include <string.h>

#include "sim/sim.h"

static gw_usec_t min_t(gw_usec_t a, gw_usec_t b) { return a < b ? a : b; }

static gw_usec_t max_t(gw_usec_t a, gw_usec_t b) { return a > b ? a : b; }

gw_usec_t gw_sim_work_at(const struct gw_sim_job *j, const struct gw_sim_attempt *a, gw_usec_t now) {
        gw_usec_t until = min_t(now, a->stall_wall);
        gw_usec_t w = a->work_start + max_t(until - a->start, 0);

        return j->runtime != GW_USEC_INFINITY ? min_t(w, j->runtime) : w;
}

gw_usec_t gw_sim_ckpt_at(const struct gw_sim_job *j, gw_usec_t work_start, gw_usec_t w) {
        if (j->ckpt_interval <= 0)
                return 0;
        return max_t(work_start, w / j->ckpt_interval * j->ckpt_interval);
}

bool gw_sim_progressing(const struct gw_sim_attempt *a, gw_usec_t now) { return now < a->stall_wall; }

static bool validating(const struct gw_sim_job *j, gw_usec_t w) {
        return j->val_at != GW_SIM_NONE && j->val_len > 0 && w >= j->val_at && w < j->val_at + j->val_len;
}

/* Wall time at which the attempt reached work w (w >= work_start). */
static gw_usec_t wall_of(const struct gw_sim_attempt *a, gw_usec_t w) { return a->start + (w - a->work_start); }

unsigned gw_sim_util_at(const struct gw_sim_job *j, const struct gw_sim_attempt *a, gw_usec_t now, uint64_t seed) {
        if (!gw_sim_progressing(a, now) || validating(j, gw_sim_work_at(j, a, now)))
                return 0;
        uint64_t h = gw_sim_hash(seed, (uint64_t) a->job_id, a->attempt, (uint64_t) now);
        if ((double) (h >> 11) * 0x1.0p-53 < j->zero_frac)
                return 0;
        return 40 + (unsigned) (h % 60);
}

/* When the newest checkpoint (and results.csv row: one per epoch) was written, 0 if none. */
static gw_usec_t ckpt_wall(const struct gw_sim_job *j, const struct gw_sim_attempt *a, gw_usec_t w) {
        gw_usec_t c = gw_sim_ckpt_at(j, a->work_start, w);

        if (j->ckpt_interval <= 0)
                return 0;
        if (c > a->work_start)
                return wall_of(a, c);
        return a->prev_ckpt_wall;
}

void gw_sim_observe(const struct gw_sim_job *j, const struct gw_sim_attempt *a, gw_usec_t now, uint64_t seed,
                    bool util_only, struct gw_reclaim_gpu *gpus, struct gw_job_obs *obs) {
        static const char train_line[] =
                "37/100      3.12G      1.234      0.876      1.101         42        640: 61%";
        static const char val_line[] = "Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 37%";
        gw_usec_t w = gw_sim_work_at(j, a, now);
        unsigned util = gw_sim_util_at(j, a, now, seed);
        int n = j->ngpus > 64 ? 64 : j->ngpus;
        bool in_val = validating(j, w);

        for (int i = 0; i < n; i++)
                gpus[i] = (struct gw_reclaim_gpu){ .index = a->first_gpu + i, .util_valid = true, .util = util };
        memset(obs, 0, sizeof(*obs));
        obs->started_at = a->start;
        obs->gpus = gpus;
        obs->n_gpus = (size_t) n;
        obs->loss = NAN;
        obs->results_rows = -1;
        obs->probe = GW_PROBE_NONE;
        if (util_only)
                return;

        obs->log_size = (uint64_t) (w / GW_SIM_SEC) * 80 + 4096;
        if (in_val && j->val_silent)
                obs->log_changed = wall_of(a, max_t(j->val_at, a->work_start));
        else if (!gw_sim_progressing(a, now))
                obs->log_changed = a->stall_wall;
        else if (util == 0 && !in_val)
                /* A data-loading pause: the bar may not have moved for up to a minute. */
                obs->log_changed = max_t(a->start, now - (gw_usec_t) (gw_sim_hash(seed, (uint64_t) a->job_id, now, 7) %
                                                                      (uint64_t) GW_SIM_MIN));
        else
                obs->log_changed = now;
        if (j->ckpt_interval > 0) {
                obs->results_rows = (long) (gw_sim_ckpt_at(j, a->work_start, w) / j->ckpt_interval);
                obs->results_changed = ckpt_wall(j, a, w);
                obs->loss_changed = obs->results_changed;
                obs->ckpt_mtime = obs->results_changed;
        }
        obs->phase = in_val ? GW_PHASE_VALIDATING : GW_PHASE_TRAINING;
        obs->phase_line = in_val ? val_line : train_line;
}

/* Log tails that the built-in failure patterns recognise, one per class a crash can have. */
static const char tail_ok[] = "    100/100      3.12G     0.9012     0.5011     0.9981         40        640: 100%\n"
                              "100 epochs completed in 1.234 hours.\n";
static const char tail_train[] = "     37/100      3.12G      1.234      0.876      1.101         42        640: 61%\n";
static const char tail_cuda_fault[] = "Traceback (most recent call last):\n"
                                      "  File \"train.py\", line 212, in <module>\n"
                                      "RuntimeError: CUDA error: unspecified launch failure\n";
static const char tail_cuda[] = "Traceback (most recent call last):\n"
                                "  File \"train.py\", line 212, in <module>\n"
                                "RuntimeError: CUDA error: an illegal memory access was encountered\n";
static const char tail_nccl[] = "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation "
                                "timeout: WorkNCCL(SeqNum=51234, OpType=ALLREDUCE) ran for 1800000 "
                                "milliseconds before timing out.\n";
static const char tail_oom[] = "Traceback (most recent call last):\n"
                               "  File \"train.py\", line 140, in <module>\n"
                               "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n";
static const char tail_user[] = "Traceback (most recent call last):\n"
                                "  File \"train.py\", line 88, in <module>\n"
                                "    loss = criterion(out, y) / n\n"
                                "ZeroDivisionError: division by zero\n";

static void set_tail(struct gw_failure_input *in, const char *t, size_t len) {
        in->tail = t;
        in->tail_len = len;
}
#define SET_TAIL(in, t) set_tail(in, t, sizeof(t) - 1)

void gw_sim_failure_input(enum gw_failure_class cls, enum gw_sim_end end, int gpu, struct gw_gpu_event *ev,
                          struct gw_failure_input *in) {
        memset(in, 0, sizeof(*in));
        in->end = GW_END_EXITED;
        SET_TAIL(in, tail_train);
        switch (end) {
        case GW_SIM_END_FINISH:
                SET_TAIL(in, tail_ok);
                return;
        case GW_SIM_END_TIMEOUT:
                in->end = GW_END_TIMEOUT;
                return;
        case GW_SIM_END_CANCEL:
                in->end = GW_END_CANCELLED;
                return;
        case GW_SIM_END_RECLAIM:
        case GW_SIM_END_LEAK_STOP: /* gpuwardd stops it as a FAILED terminate: attempt_end() */
                in->end = GW_END_RECLAIMED;
                return;
        case GW_SIM_END_CRASH:
        default:
                break;
        }
        in->status = 1;
        switch (cls) {
        case GW_FAILURE_GPU_FAULT:
                SET_TAIL(in, tail_cuda_fault);
                *ev = (struct gw_gpu_event){ .kind = GW_GPU_EVENT_XID, .gpu = gpu, .xid = 79 };
                in->events = ev;
                in->n_events = 1;
                break;
        case GW_FAILURE_CUDA_ERROR:
                SET_TAIL(in, tail_cuda);
                break;
        case GW_FAILURE_NCCL_ERROR:
                in->end = GW_END_SIGNALED;
                in->status = 6;
                SET_TAIL(in, tail_nccl);
                break;
        case GW_FAILURE_OOM:
                SET_TAIL(in, tail_oom);
                break;
        case GW_FAILURE_HOST_OOM:
                in->end = GW_END_SIGNALED;
                in->status = 9;
                in->oom_killed = true;
                in->oom_kills = 1;
                break;
        case GW_FAILURE_LOST:
                in->lost = true;
                break;
        default:
                SET_TAIL(in, tail_user);
                break;
        }
}
