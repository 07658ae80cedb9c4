/* The engine's state, shared by its files: sim_engine.c (the loop, attempts, the scheduler
 * pass, samples), sim_book.c (bookings: the core calendar) and sim_leak.c (leaks: the core
 * detector and leak_policy response).  Internal to src/sim. */
#pragma once
#include "core/calendar.h"
#include "core/fairshare.h"
#include "core/quota.h"
#include "core/sched.h"
#include "sim/sim.h"
#include "sim/sim_queue.h"

enum jst { J_FUTURE, J_PENDING, J_RUNNING, J_DONE };

#define GW_SIM_DRAINED ((int64_t) -1) /* node.gpu_job of a drained GPU */

struct jrun {
        uint8_t st;
        bool backoff;
        bool failed_once;
        bool started;
        uint8_t end_cause; /* enum gw_sim_end of the scheduled end */
        uint8_t crash_class; /* enum gw_failure_class of a CRASH end */
        bool leak_oom; /* the CRASH end is its leak's oom */
        bool preempting; /* its scheduled end is a preemption's stop */
        unsigned attempts;
        int node;
        uint64_t mask; /* within the node */
        size_t running_pos; /* index in eng.running */
        int64_t booking; /* index + 1 into eng.bk, 0 = none */
        gw_usec_t first_start;
        gw_usec_t end_at;
        gw_usec_t limit_at; /* the time limit's end (clipped to its booking's end) */
        gw_usec_t leak_flag_wall; /* when this attempt's leak is detected; GW_USEC_INFINITY */
        struct gw_sim_attempt a;
        struct gw_reclaim_state rs;
        const struct gw_reclaim_policy *policy;
        bool prev_valid;
        int64_t prev_epoch, prev_ckpt;
        uint32_t n_samples, n_zero;
};

struct node {
        int n_gpus, n_free, base;
        int64_t gpu_job[GW_SIM_MAX_NODE_GPUS]; /* job index + 1, 0 = free, GW_SIM_DRAINED */
        gw_usec_t broken_until[GW_SIM_MAX_NODE_GPUS]; /* a faulty GPU until its repair; 0 */
        size_t n_live_bk; /* its bookings not final */
};

struct eng {
        const struct gw_sim_workload *w;
        const struct gw_sim_config *cfg;
        struct gw_sim_result *res;
        struct jrun *jr;
        struct node *nodes;
        int n_nodes, n_free;
        struct gw_sim_heap heap;
        struct gw_sim_pq pq;
        int *prio;
        int64_t *running; /* job indexes */
        size_t n_running;
        size_t n_done, n_submitted;
        double *waits;
        int64_t *user_gpus;
        int n_users;
        struct gw_quota limits;
        struct gw_usage held_usage;
        uint64_t zero_samples, passed_samples;
        gw_usec_t now; /* absolute */
        gw_usec_t horizon_abs; /* GW_USEC_INFINITY when none */
        gw_usec_t last_event;
        bool dirty;
        /* bookings (sim_book.c) */
        struct gw_booking *bk;
        int *bk_node;
        int64_t *bk_job; /* the job index each booking was made for */
        size_t n_bk, cap_bk;
        int64_t *closed; /* booked jobs whose booking closed before they started */
        size_t n_closed;
        /* scratch for a pass */
        size_t wcap;
        int64_t *win_job;
        size_t *win_pos;
        bool *win_taken;
        struct gw_sched_job *sj;
        size_t *sj_win;
        struct gw_sched_start *starts;
        enum gw_job_reason *reasons;
        size_t *order;
        /* fair share (sim_fair.c) */
        struct gw_fs_user *fs; /* per user; NULL when off */
        double *fs_factor;
        gw_usec_t fs_at; /* usage charged up to this instant */
        size_t n_preempting; /* victims whose stop is scheduled (sim_preempt.c) */
        int64_t preempt_for; /* the preemptor's job index + 1 while the GPUs its victims
                                   * free are kept for it; 0 none */
        int preempt_node;
        uint64_t preempt_mask;
        gw_usec_t preempt_until;
};

/* sim_engine.c */
int gw_sim_end_attempt(struct eng *e, int64_t ji, enum gw_sim_end cause);
/* The job's GPUs are free again (its attempt ended). */
void gw_sim_release(struct eng *e, int64_t ji);
double gw_sim_gpu_h(double gpus, gw_usec_t d);

/* sim_preempt.c */
/* After the scheduler's passes: when no preemption is in flight, the first of the queue's
 * GW_PREEMPT_PREEMPTORS highest jobs (not in a backoff or a booking) that gets victims from
 * gw_preempt_decide on some node gets those of the node whose plan loses least; each
 * victim's end is moved to just after its next checkpoint, or its grace.  0 or -errno. */
int gw_sim_preempt_pass(struct eng *e);
/* A victim's attempt ended at work w, its checkpoint ck.  Preempted (cause PREEMPT): its work
 * since the checkpoint is lost, the job waits again (no retry counted) to resume from the
 * checkpoint, and true.  Another end came first (a reclaim): the preemption is over, false. */
bool gw_sim_preempt_ended(struct eng *e, int64_t ji, enum gw_sim_end cause, gw_usec_t w, gw_usec_t ck);
/* For one plan on a node: while a preemption is in flight there, the GPUs its victims free are
 * kept for its preemptor (the other window jobs sj[0..n-1] may not use them). */
void gw_sim_preempt_filter(struct eng *e, int node, size_t n);
/* The high class's waits into the result, at the end of the measured period. */
void gw_sim_preempt_finish(struct eng *e, gw_usec_t end);

/* sim_book.c */
/* EV_BOOK: places the job's booking with gw_calendar_place on the first node where it fits
 * (else the nearest later window), and submits the job at the booking's start. */
int gw_sim_book(struct eng *e, int64_t ji);
/* EV_CAL: gw_calendar_tick on the node, its actions applied. */
int gw_sim_cal_tick(struct eng *e, int node);
/* For one plan on a node with bookings: the gate of each booked job, the free_for filter of
 * the others (sj[0..n-1] for window jobs win_job[sj_win[i]]). */
int gw_sim_book_gate(struct eng *e, int node, size_t n);
/* A booked job's attempt ended: the no-show clock restarts. */
void gw_sim_book_job_ended(struct eng *e, int64_t ji);
/* The GPUs of the node a job outside bookings may take now (gw_calendar_limit_job): 0 any,
 * GW_SIM_NONE_ALLOWED none.  0 or -errno. */
#define GW_SIM_NONE_ALLOWED (~UINT64_C(0))
int gw_sim_book_allowed(struct eng *e, int node, int64_t ji, uint64_t *ret);
/* Cancels the jobs gw_sim_book_gate found closed (after the pass, as gpuwardd does). */
void gw_sim_book_cancel_closed(struct eng *e);
void gw_sim_book_free(struct eng *e);

/* sim_fair.c */
/* Per-user result arrays (always) and fair share's state (when the config asks). */
void gw_sim_fair_setup(struct eng *e);
/* Charges each user's running GPUs from the last charge to t (an instant about to be handled). */
void gw_sim_fair_advance(struct eng *e, gw_usec_t t);
/* The fair input for a plan now: NULL when off, else the factors of every user. */
const struct gw_sched_fair *gw_sim_fair_input(struct eng *e, struct gw_sched_fair *buf);
/* Per-user waits into the result, at the end of the measured period. */
void gw_sim_fair_finish(struct eng *e, gw_usec_t end);
void gw_sim_fair_free(struct eng *e);

/* sim_leak.c */
/* Where the attempt that starts now would end because of its leak, if that comes before work
 * point w_stop (where it stops progressing): an oom crash (its peak memory reaches the GPU's;
 * sets crash_class), or leak_policy restart's stop after the checkpoint of the epoch at which
 * the leak is detected.  Runs gw_leak_detect on the attempt's epochs and gw_leak_respond as
 * the daemon would at each epoch end; sets leak_flag_wall.  Updates *end and *cause. */
int gw_sim_leak_fate(struct eng *e, int64_t ji, gw_usec_t w_stop, gw_usec_t *end, enum gw_sim_end *cause);
