/* Internals of idle-GPU reclamation, shared by reclaim_watch.c (per sample: decide
 * and act), reclaim_gather.c (the file signals), reclaim_probe.c (the health probe) and
 * reclaim_policy.c (profiles, who may use them, an admin's change of one).  The daemon-wide entry
 * points are in daemon.h's "idle-GPU reclamation" section. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "core/progress.h"
#include "core/reclaim.h"
#include "daemon/daemon.h"

#define GW_RWATCH_LOSSES 8

/* One HTTP GET on loopback, driven by the samples (never by waiting): each step is a zero
 * timeout poll/send/recv, so the event loop is never blocked.  The price is latency: a reply
 * is read at the next sample, and the decision sees the last finished probe.  That is fine
 * because the probe is evidence only (core/reclaim.h): it never changes the action. */
struct gw_probe {
        int fd; /* -1: none in flight */
        bool sent; /* the request went out */
        gw_usec_t started; /* the job's clock */
        gw_usec_t next_at; /* no new probe before (the job's clock) */
        char buf[64]; /* the start of the reply: its status line */
        size_t len;
        enum gw_probe_result result; /* of the last finished probe; NONE before the first */
        char detail[64]; /* "HTTP 503", "timeout", "connection refused" */
};

/* What one running job's watch remembers between samples.  Reset when a new attempt starts. */
struct gw_rwatch {
        int attempt; /* the attempt this state belongs to */
        gw_usec_t start_time; /* its start (wall clock) */
        struct gw_reclaim_state state; /* gw_reclaim_decide's, stored as decision.next */
        gw_usec_t kill_rearm_at; /* no second SIGKILL request before (the job's clock) */
        /* Every instant here is on the job's clock (jobclock.c: its wall start + monotonic
         * elapsed), which a step of the wall clock does not move.  A file's mtime is a wall
         * instant: shift (the job's clock - the wall clock, at this sample) takes it over.  But
         * an mtime may be older than the step (written just before it), or on another clock (a
         * network file system): a change seen between two looks is never placed before the
         * first of them, last_sample for the log (looked at every sample), last_look for the
         * other files. */
        gw_usec_t shift;
        gw_usec_t last_sample, last_look;

        /* The job's log.  log_size counts gpuward's own appended lines too, so that they are
         * not taken for the job's progress (core/reclaim.h: log_changed). */
        bool log_seen;
        uint64_t log_size;
        gw_usec_t log_changed;
        enum gw_phase phase;
        char phase_line[GW_PHASE_LINE_MAX];
        struct gw_val_track val; /* this attempt's validation passes, timed */

        /* Ultralytics' results.csv, once found (the path is then kept). */
        char *results_path;
        bool results_seen;
        int64_t results_size;
        gw_usec_t results_mtime;
        long results_rows; /* -1: none found yet */
        size_t results_lines;
        uint64_t results_last; /* a hash of the last row's values */
        gw_usec_t results_changed;
        double losses[GW_RWATCH_LOSSES];
        size_t n_losses;
        gw_usec_t loss_changed;

        /* The declared --progress file. */
        bool progress_seen;
        int64_t progress_size;
        gw_usec_t progress_mtime, progress_changed;

        gw_usec_t ckpt_mtime; /* newest RUN/weights/ *.pt or --checkpoint match */
        struct gw_probe probe;

        /* An "idle" event holds state.last_active for this idle window (reclaim_watch.c), so
         * that a restarted daemon goes on with the window instead of starting a new one. */
        bool idle_told;
        bool restored; /* made by gw_reclaim_idle_restore at a re-adoption */

        /* On a cluster (nodes_watch.c): a node's snapshot listed one of the job's processes
         * during this attempt; a stale snapshot kept it from a decision (told once). */
        bool node_seen;
        bool node_stale_told;
};

/* reclaim_watch.c */
/* One sample of one running job: gpus are its GPUs as seen now (on this host from the
 * sampler; on a cluster from its node's agent, nodes_watch.c); gathers its file signals,
 * decides (core/reclaim.h) and carries it out.  Does nothing for a job not running. */
void gw_reclaim_watch_job(struct gw_daemon *d, struct gw_djob *dj, const struct gw_reclaim_gpu *gpus, size_t n);
/* The job's watch for its current attempt (made, or remade for a new attempt), NULL when the
 * job is not running: for a caller that must move its idle window without a decision. */
struct gw_rwatch *gw_reclaim_rwatch(struct gw_daemon *d, struct gw_djob *dj);

/* reclaim_gather.c */
/* Refreshes w's log signals for j (size, mtime, the phase from its tail): one fstat, and the
 * tail read only when the log grew.  Every sample, busy or not: validation passes are timed
 * while the job works, so that one that overruns is recognised when it does not. */
void gw_rwatch_gather_log(const struct gw_daemon *d, const struct gw_job *j, struct gw_rwatch *w);
/* Refreshes w's other file signals for j: stats results.csv, the progress file and the
 * checkpoints, and reads a file only when its size or mtime changed. */
void gw_rwatch_gather(const struct gw_daemon *d, const struct gw_job *j, struct gw_rwatch *w);
/* Appends line (ending in '\n') to j's log.  Its bytes are recorded in w->log_size, so the
 * next sample does not take gpuward's own words for the job's progress.  0 or -errno. */
int gw_rwatch_log_append(const struct gw_job *j, struct gw_rwatch *w, const char *line);
void gw_rwatch_files_free(struct gw_rwatch *w);
/* Frees a watch (closes a health probe in flight); accepts NULL, returns NULL. */
struct gw_rwatch *gw_rwatch_free(struct gw_rwatch *w);

/* reclaim_probe.c */
void gw_probe_init(struct gw_probe *p);
/* Advances a probe in flight; starts one when want (the job is otherwise idle) and none ran
 * in the last few seconds.  url NULL: no probe, result NONE. */
void gw_probe_step(struct gw_probe *p, const char *url, bool want, gw_usec_t now);
void gw_probe_close(struct gw_probe *p);

/* reclaim_policy.c */
/* The configured profile named name, or NULL. */
const struct gw_policy_conf *gw_reclaim_policy_conf(const struct gw_daemon *d, const char *name);

/* ---- idle-GPU reclamation: reclaim_watch.c, reclaim_policy.c (+ reclaim_watch.h) ---- */
struct gw_rwatch;
struct gw_caller;
struct gw_route_ctx;
/* After every GPU sample: gathers each running job's signals, runs gw_reclaim_decide and
 * carries out what it says (warn, SIGTERM, SIGKILL).  Reads the wall clock itself. */
void gw_reclaim_watch(struct gw_daemon *d);
/* Frees dj's watch (closes a health probe in flight; GW_HOOK_JOB_FREED). */
void gw_reclaim_forget(struct gw_daemon *d, struct gw_djob *dj);
/* A line of gpuward's for dj's log (GW_HOOK_LOG_LINE): appended, its bytes counted as
 * gpuward's, not as the job's progress; nothing for a job the watch has not seen. */
void gw_reclaim_log_line(struct gw_daemon *d, struct gw_djob *dj, const char *line);
/* The results.csv the watch chose for dj's current attempt, NULL none (owned by the watch:
 * valid until its next sample). */
const char *gw_reclaim_results_path(const struct gw_daemon *d, const struct gw_djob *dj);
/* For the job page (handlers_dash.c), a job the watch has not chosen for: the run's results.csv as gw_rwatch_gather finds it (malloc'ed; NULL until one was
 * written during this attempt).  The files themselves are read through daemon/userfile.h. */
char *gw_rwatch_find_results(const struct gw_job *j);
/* At re-adoption: the idle window the previous daemon recorded for the attempt (its newest
 * "idle" event) and its warning, so that the idle timeout does not start again with the
 * daemon, nor the warning come twice. */
void gw_reclaim_idle_restore(struct gw_daemon *d, struct gw_djob *dj, const struct gw_job_event *ev, size_t n);
/* The profile a job runs under: its own, else "default"; a profile the config no longer has
 * falls back to "default" too.  Never NULL. */
const struct gw_reclaim_policy *gw_reclaim_policy_of(const struct gw_daemon *d, const struct gw_job *j);
/* At submit: 0, or -EINVAL (unknown profile) / -EPERM (the user may not choose it) with err
 * filled for field idle_policy. */
int gw_reclaim_check_submit(struct gw_daemon *d, const struct gw_job *j, struct gw_submit_error *err);
/* reclaim_policy.c, for POST /api/v1/jobs/{id}/policy (admins): changes an active job's
 * profile to name, by whom, with event "policy".  0, or the HTTP status of the refusal with
 * why: 400 no such profile (field idle_policy), 503 the store refused it (nothing changed). */
int gw_reclaim_policy_set(struct gw_daemon *d, struct gw_djob *dj, const char *name, const char *by, char *why,
                          size_t n);
/* ---- end of idle-GPU reclamation ---- */
