/* Idle-GPU reclamation: the decision, as a pure function of what the daemon observed about one
 * running job, its policy and the time.  The function keeps no state: what must survive from
 * one sample to the next is a small struct gw_reclaim_state that the caller stores per job,
 * passes in, and replaces with the one the decision returns.
 *
 * A job is idle at an instant only when ALL of these hold (never GPU utilisation alone):
 *  - every one of its GPUs is below util_threshold, counting a GPU that another job's or a
 *    rogue process keeps busy as busy, and an unknown utilisation as busy;
 *  - it is not in a protected phase: validating or saving per its log tail, or a checkpoint
 *    written within grace_seconds.  A validation stops protecting once its results line is
 *    the last word (GW_PHASE_VALIDATED: the pass is over), once it has lasted more than
 *    GW_RECLAIM_VAL_OVERRUN times the longest earlier validation of the same job and more
 *    than idle_timeout (a pass hung halfway), and, like a saving line, once nothing has
 *    progressed for protect_max.  From the sample where a protection ends, the idle window
 *    runs as usual: a job hung mid-validation is warned max(3 x longest, idle_timeout) +
 *    idle_timeout after that validation began;
 * A MIG slice has no utilisation unless its GPU offers GPM (Hopper): then the slice's SM
 * activity is its utilisation, against the same threshold, and the rule for whole GPUs applies
 * (with an unknown process list still counted as busy).  Without it, nothing is read as 0% or
 * made up.  It is
 * busy while its process list is unknown, while another's process uses it, or while the job's
 * processes are on it and the job has not progressed yet (still loading: nothing to judge
 * by).  Otherwise it counts as idle, so the job is judged by what exists per slice: no process
 * of the job on any of its slices, or processes there but training progress (log, results.csv,
 * progress file) stopped after it had progressed.  Either way the rule below on progress still
 * applies: a job whose log or results still move is kept, as on a whole GPU;
 * and it has been idle for idle_timeout when, in addition, nothing progressed for that long:
 * no log growth, no results.csv change, no declared progress-file change, no loss change.
 * A busy or protected sample resets the window (state.last_active = now); a progress instant
 * resets it by being newer.  A job younger than idle_timeout is never reclaimed.
 *
 * The health probe is evidence only.  A failing probe "counts as no progress": it adds nothing
 * that would keep the job, and it does not override real progress either (a log that advances
 * keeps the job, whatever the probe says).  A passing probe does not keep a job by itself, so
 * it does not reset the window.  Hence the probe never changes the action; it is shown.
 *
 * Then: idle for idle_timeout -> WARN (state.warned_at = now); activity before the deadline ->
 * KEEP and the warning is cleared; idle for idle_timeout + warn_seconds and warned at least
 * warn_seconds ago -> TERMINATE (SIGTERM the whole job, state.term_at = now); still running
 * grace_seconds after SIGTERM -> KILL (SIGKILL; repeated every sample until it is gone).
 * Once SIGTERM is sent, activity no longer cancels: the job may be saving its state, and that
 * is what the grace is for.
 *
 * Clock: every instant here (now, the "changed" instants, the state) is on one clock with
 * wall-clock labels.  The daemon passes the job's clock (its wall start + the monotonic time
 * it has run, daemon/base/jobclock.c), so a step of the wall clock moves none of them, and shifts
 * file mtimes onto it (daemon/reclaim/reclaim_watch.h).  Instants in the future (NFS, an mtime
 * written before a step back) are taken as now, and negative durations as 0, so a clock
 * step can delay a reclaim but never cause one. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/phase.h"
#include "core/progress.h"

#define GW_RECLAIM_NAME_MAX 32
#define GW_RECLAIM_EVIDENCE_MAX 640

struct gw_reclaim_policy {
        char name[GW_RECLAIM_NAME_MAX]; /* "default", "hpo", "finetune" */
        bool enabled; /* false: never reclaimed (finetune) */
        unsigned util_threshold; /* percent, 0-100; a GPU at or above it is busy */
        gw_usec_t idle_timeout; /* > 0 when enabled */
        gw_usec_t warn; /* >= 0: notice between WARN and TERMINATE */
        gw_usec_t grace; /* >= 0: SIGTERM to SIGKILL; also how recent a
                                          * checkpoint write protects the job */
        /* How long a validating/saving log line protects a job whose log and results no longer
         * move; 0 = for ever.  Without a bound a loader hung right after "val: Scanning ..."
         * would hold its GPUs for good; real validation redraws its tqdm bar, which is progress
         * anyway.  Built-in profiles: 1 h. */
        gw_usec_t protect_max;
};

/* The built-in profiles: default (5%, 300 s, warn 60 s, grace 30 s), hpo (idle
 * 180 s), finetune (disabled).  The daemon starts from these and applies its config. */
extern const struct gw_reclaim_policy gw_reclaim_profiles[];
extern const size_t gw_reclaim_profiles_n;

/* The profile named name in table (exact match), or NULL.  table NULL = the built-ins. */
const struct gw_reclaim_policy *gw_reclaim_policy_find(const struct gw_reclaim_policy *table, size_t n,
                                                       const char *name);
/* 0 when p is usable, -EINVAL otherwise (threshold > 100, negative durations, an enabled
 * policy without idle_timeout, an empty name). */
int gw_reclaim_policy_check(const struct gw_reclaim_policy *p);

/* One of the job's GPUs in this sample. */
struct gw_reclaim_gpu {
        int index; /* for the evidence: "GPU 0,1" */
        bool util_valid; /* false: no reading -> counted as busy */
        unsigned util; /* percent used by the job's own processes (device
                                          * utilisation where per-process is not supported) */
        bool other_busy; /* a process that is not this job's (another job or a
                                          * rogue) uses it: counted as busy, never reclaimed */
        /* A MIG slice: util_valid only where GPM measured its SM activity (see the rule
         * above); util is that figure then. */
        bool mig;
        const char *uuid; /* "MIG-..." for the evidence; may be NULL */
        bool procs_valid; /* its process list was read; false -> busy */
        unsigned n_procs; /* the job's processes on it now */
        /* The slice's memory as NVML gives it, for the evidence only: memory held is no sign
         * of work (a hung process keeps its allocations). */
        bool mem_valid;
        uint64_t mem_used, mem_total; /* bytes */
};

enum gw_probe_result {
        GW_PROBE_NONE, /* no --health-url */
        GW_PROBE_PASS,
        GW_PROBE_FAIL,
        _GW_PROBE_MAX,
        _GW_PROBE_INVALID = -EINVAL,
};

/* What survives between samples.  The caller keeps one per job, zeroed at job start, passes it
 * in obs->state, and after carrying out the decision's action stores decision.next in its
 * place.  Nothing else needs remembering. */
struct gw_reclaim_state {
        gw_usec_t last_active; /* last sample with a busy GPU or a protected phase;
                                          * 0 = none yet (the start time stands in) */
        gw_usec_t warned_at; /* WARN sent at; 0 = no warning outstanding */
        gw_usec_t term_at; /* SIGTERM sent at; 0 = not yet */
        gw_usec_t last_proc; /* last sample with a process of the job on one of its
                                          * MIG slices; 0 = none seen (evidence only) */
};

/* What the daemon gathers about one running job at each sample.  "changed" instants are when
 * the daemon saw the thing change (or the file's mtime); 0 = never / not there. */
struct gw_job_obs {
        gw_usec_t started_at; /* when the job started running */
        const struct gw_reclaim_gpu *gpus;
        size_t n_gpus;

        uint64_t log_size; /* bytes; evidence only */
        /* When the log last grew.  gpuward appends its own warning line to the job's log: that
         * write must not count, or a warning would cancel itself.  The daemon remembers the
         * size after its own append and moves log_changed only on growth beyond it. */
        gw_usec_t log_changed;
        long results_rows; /* distinct epochs in results.csv; -1 = no results.csv
                                          * (set it: a zeroed struct says "0 rows") */
        gw_usec_t results_changed; /* when its complete lines (gw_results.n_lines) or its
                                          * last row last changed */
        gw_usec_t progress_changed; /* the declared --progress file; 0 = none */
        double loss; /* first loss of the last row; NAN = unknown; evidence */
        gw_usec_t loss_changed; /* when the last loss values changed; 0 = never */
        gw_usec_t ckpt_mtime; /* newest weights/ *.pt mtime; 0 = none */

        enum gw_phase phase; /* gw_phase_from_log on the log's tail */
        /* The job's validation timing, from a struct gw_val_track the caller keeps: when the
         * validation the log shows now began (first seen) and the longest earlier validation
         * of this attempt; 0 = unknown / none seen (then only protect_max bounds it). */
        gw_usec_t val_since;
        gw_usec_t val_longest;
        const char *phase_line; /* its line (UTF-8, as gw_phase_from_log makes it:
                                          * quoted in the evidence); may be NULL */

        enum gw_probe_result probe;
        const char *probe_detail; /* "HTTP 503", "timeout"; may be NULL */

        /* Seconds east of UTC for the clock times in the evidence (the daemon passes
         * tm_gmtoff; tests pass 0, so their text is deterministic). */
        long utc_offset;

        struct gw_reclaim_state state;
};

enum gw_reclaim_action {
        GW_RECLAIM_KEEP, /* do nothing now (the job may still be on its way) */
        GW_RECLAIM_WARN, /* notify the owner, record an event, line in the log */
        GW_RECLAIM_TERMINATE, /* SIGTERM the whole job */
        GW_RECLAIM_KILL, /* SIGKILL the whole job; then it is RECLAIMED */
        _GW_RECLAIM_ACTION_MAX,
        _GW_RECLAIM_ACTION_INVALID = -EINVAL,
};
const char *gw_reclaim_action_name(enum gw_reclaim_action a); /* "warn"; NULL out of range */

/* Why a KEEP: for counters and tests; the evidence says it in words. */
enum gw_reclaim_why {
        GW_RECLAIM_WHY_NONE, /* an action other than KEEP */
        GW_RECLAIM_WHY_DISABLED,
        GW_RECLAIM_WHY_YOUNG,
        GW_RECLAIM_WHY_BUSY, /* a GPU at/above threshold, unknown, or another's */
        GW_RECLAIM_WHY_PROTECTED, /* validating/saving line or recent checkpoint */
        GW_RECLAIM_WHY_RECENT, /* idle, or no progress, for less than idle_timeout */
        GW_RECLAIM_WHY_WARNED, /* idle, warned, waiting out warn_seconds */
        GW_RECLAIM_WHY_TERMINATING, /* SIGTERM sent, waiting out grace_seconds */
        _GW_RECLAIM_WHY_MAX,
        _GW_RECLAIM_WHY_INVALID = -EINVAL,
};

struct gw_reclaim_decision {
        enum gw_reclaim_action action;
        enum gw_reclaim_why why;
        bool warning_cleared; /* a warning was outstanding and activity resumed:
                                          * record "warning withdrawn" */
        gw_usec_t idle_since; /* start of the idle window; 0 when active now */
        gw_usec_t idle_for; /* now - idle_since, 0 when active */
        struct gw_reclaim_state next; /* the caller stores this after acting */
        /* "idle for 5m12s: GPU 0,1 util 0%/0% (threshold 5%), no progress for
         * 5m12s (log unchanged since 14:02:11, results.csv 37 rows since 13:58:40), not
         * validating, not saving": every reason the decision rests on, for the user. */
        char evidence[GW_RECLAIM_EVIDENCE_MAX];
};

/* A validation lasting more than this many times the job's longest earlier one (and more than
 * idle_timeout) no longer protects it: real passes of one job take about the same time. */
#define GW_RECLAIM_VAL_OVERRUN 3

/* The durations of a job's validation passes, as the phase from its log changes from sample
 * to sample.  Zeroed at the start of an attempt; gw_val_track_step once per sample with the
 * phase the log shows then; its fields go to gw_job_obs.val_since / val_longest.  A pass is
 * timed from the first sample that shows it to the first that does not: durations are good to
 * a sample interval, and a pass shorter than one may go unseen (then it counts for nothing). */
struct gw_val_track {
        gw_usec_t since; /* the current pass was first seen at; 0 = none now */
        gw_usec_t longest; /* the longest finished pass; 0 = none seen */
};
void gw_val_track_step(struct gw_val_track *t, enum gw_phase phase, gw_usec_t now);

/* Decides for one job.  Reads only its arguments; writes *out only on success.  Returns 0, or
 * -EINVAL for NULL arguments, a policy gw_reclaim_policy_check refuses, gpus NULL with
 * n_gpus > 0, or started_at <= 0.  Copies nothing it keeps: out holds no pointers into obs. */
int gw_reclaim_decide(const struct gw_job_obs *obs, const struct gw_reclaim_policy *p, gw_usec_t now,
                      struct gw_reclaim_decision *out);
