/* What a finished attempt means: classify how it ended, record the attempt, then end the job
 * or queue it again (same id, same queue position; gw_job_requeue) to resume from its newest
 * checkpoint. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/text.h"
#include "base/log.h"
#include "base/parse.h"
#include "core/ckpt.h"
#include "core/failure.h"
#include "core/progress.h"
#include "core/retry.h"
#include "daemon/daemon.h"
#include "daemon/life/lifecycle.h"
#include "daemon/observe/observe.h"
#include "daemon/preempt/preempt.h"
#include "daemon/training/resume.h"
#include "daemon/base/userfile.h"
#include "daemon/life/jobs.h"
#include "daemon/recovery/recovery.h"
#include "daemon/training/training.h"

#define TAIL_BYTES (64 * 1024)

/* Epochs finished so far, from the run's results.csv (Ultralytics) or the declared
 * progress file; -1 when unknown. */
static long epoch_reached(const struct gw_job *j, const char *ckpt) {
        char path[4400];
        /* Ultralytics writes last.pt after every epoch: no checkpoint yet means none finished. */
        if (j->yolo && !ckpt)
                return 0;
        if (j->yolo && ckpt) {
                _cleanup_free_ char *run = gw_resume_run_dir(ckpt);
                snprintf(path, sizeof path, "%s/results.csv", run);
                size_t len;
                _cleanup_free_ char *text = gw_user_file_tail(j, path, true, 8 << 20, NULL, &len);
                struct gw_results r;
                if (!text || gw_results_parse(text, len, &r) < 0)
                        return -1;
                long e = r.n_rows ? (r.zero_based ? r.last_epoch + 1 : r.last_epoch) : 0;
                gw_results_free(&r);
                return e;
        }
        if (j->progress_file) {
                if (j->progress_file[0] == '/')
                        snprintf(path, sizeof path, "%s", j->progress_file);
                else
                        snprintf(path, sizeof path, "%s/%s", j->cwd, j->progress_file);
                size_t len;
                _cleanup_free_ char *text = gw_user_file_tail(j, path, true, 1 << 20, NULL, &len);
                struct gw_progress p;
                if (text && gw_progress_parse(text, len, &p) == 0)
                        return p.epoch;
        }
        return -1;
}

/* Whether the attempt started over: given no checkpoint, or its newest one is in a run other
 * than the one it was told to resume (it made a run of its own). */
static bool started_over(const struct gw_job *j, const char *ckpt) {
        if (!j->resume_from)
                return true;
        if (!ckpt)
                return false;
        _cleanup_free_ char *given = gw_resume_run_dir(j->resume_from), *found = gw_resume_run_dir(ckpt);
        return given && found && strcmp(given, found) != 0;
}

static void ckpt_identity(const char *path, char *buf, size_t n) {
        struct stat st;
        if (!path || lstat(path, &st) < 0) {
                buf[0] = '\0';
                return;
        }
        gw_ckpt_id(buf, n, gw_file_mtime_us(&st), (uint64_t) st.st_size);
}

static enum gw_attempt_end attempt_end(const struct gw_djob *dj, int status) {
        if (dj->terminating)
                return dj->end_state == GW_JOB_CANCELLED ? GW_END_CANCELLED
                       : dj->end_state == GW_JOB_TIMEOUT ? GW_END_TIMEOUT
                                                         : GW_END_RECLAIMED;
        return WIFSIGNALED(status) ? GW_END_SIGNALED : GW_END_EXITED;
}

/* Whether processes of no job held memory on the job's GPUs: an OOM then is not its fault. */
static bool memory_taken_by_others(const struct gw_daemon *d, const struct gw_job *j) {
        for (unsigned i = 0; i < d->host.n_gpus; i++)
                if ((j->gpu_mask & (UINT64_C(1) << i)) && d->host.gpus[i].rogue)
                        return true;
        return false;
}

/* Whether the evidence starts with its class's name as a word ("killed by SIGKILL from
 * outside gpuward ...", "lost: ..."): the reason then need not say it twice ("killed: killed
 * by ...", "lost: lost: ..."). */
static bool evidence_names_class(const struct gw_failure_verdict *v) {
        const char *name = gw_failure_class_name(v->cls);
        size_t l = strlen(name);
        return !strncmp(v->evidence, name, l) && (v->evidence[l] == ' ' || v->evidence[l] == ':');
}

/* The epoch the checkpoint itself holds (the job's resume_epoch, kept with it and with the
 * attempt that resumes, for gpuward show), and results.csv made to agree with it before the
 * resume (resume.h): note gets " (epoch N)" and what was set aside, for the event. */
static void ckpt_epoch_note(struct gw_daemon *d, struct gw_djob *dj, const char *ckpt, char *note, size_t n) {
        char why[256], said[320];
        long done;
        note[0] = '\0';
        dj->job->resume_epoch = 0;
        if (!ckpt)
                return;
        if (gw_resume_ckpt_epoch(dj->job, ckpt, &done, why, sizeof why) < 0) {
                log_info("job %lld: its checkpoint's epoch is not known: %s", (long long) dj->job->id, why);
                return;
        }
        dj->job->resume_epoch = done;
        int r = gw_resume_results_agree(d, dj->job, ckpt, done, said, sizeof said);
        if (r < 0)
                log_warn("job %lld: results.csv left as it was before its resume: %s", (long long) dj->job->id, said);
        snprintf(note, n, " (epoch %ld)%s%s", done, r > 0 ? "; " : "", r > 0 ? said : "");
}

static void requeue(struct gw_daemon *d, struct gw_djob *dj, const struct gw_retry_decision *dec,
                    const struct gw_failure_verdict *v, const char *evidence, char *ckpt, const char *ckpt_why) {
        struct gw_job *j = dj->job;
        char msg[1024], wait[32];
        gw_format_duration(dec->backoff, wait, sizeof wait);
        char cls[32] = "";
        if (!evidence_names_class(v))
                snprintf(cls, sizeof cls, "%s: ", gw_failure_class_name(v->cls));
        /* The checkpoint's path, and why none was found (the paths looked in), are in the job's
         * directory: for its owner and admins only (base/text.h), as resume_from is. */
        char where[640], note[400];
        ckpt_epoch_note(d, dj, ckpt, note, sizeof note);
        if (ckpt)
                snprintf(msg, sizeof msg, "%s%s; retry %u/%d in %s, resuming from %s%s", cls, evidence, dec->retry_no,
                         j->retries >= 0 ? j->retries : d->cfg->default_retries, wait,
                         gw_text_private_wrap(where, sizeof where, ckpt), note);
        else
                snprintf(msg, sizeof msg, "%s%s; retry %u/%d in %s from scratch (%s)", cls, evidence, dec->retry_no,
                         j->retries >= 0 ? j->retries : d->cfg->default_retries, wait,
                         ckpt_why[0] ? gw_text_private_wrap(where, sizeof where, ckpt_why) : "no checkpoint");
        gw_job_requeue(d, dj, ckpt, dec->not_before, dec->backoff, msg);
}

/* Preempted: back in the queue at once, first of its priority (it had its turn), to resume
 * from ckpt (taken) as a retry would; the attempt counts as none of its retries. */
static void requeue_preempted(struct gw_daemon *d, struct gw_djob *dj, const char *evidence, char *ckpt) {
        struct gw_job *j = dj->job;
        char msg[1024], where[640], note[400];
        ckpt_epoch_note(d, dj, ckpt, note, sizeof note);
        if (ckpt)
                snprintf(msg, sizeof msg, "%s; queued again first of priority %d, resuming from %s%s", evidence,
                         j->priority, gw_text_private_wrap(where, sizeof where, ckpt), note);
        else if (j->resume_cmd)
                snprintf(msg, sizeof msg, "%s; queued again first of priority %d, to run its resume command", evidence,
                         j->priority);
        else
                snprintf(msg, sizeof msg, "%s; queued again first of priority %d, from scratch (no checkpoint)",
                         evidence, j->priority);
        dj->n_preempted++;
        j->queue_first = true;
        gw_job_requeue(d, dj, ckpt, 0, 0, msg);
}

/* A copy of the ending attempt's row, kept with the job: written again with its end when the
 * store refuses that (lifecycle.c), else freed with the job. */
static void keep_attempt(struct gw_djob *dj, const struct gw_job_attempt *a) {
        if (dj->end_attempt)
                gw_job_attempts_free(dj->end_attempt, 1);
        struct gw_job_attempt *c = gw_xcalloc(1, sizeof *c);
        *c = *a;
        c->class_name = gw_xstrdup(a->class_name);
        c->evidence = gw_xstrdup(a->evidence);
        c->resumed_from = a->resumed_from ? gw_xstrdup(a->resumed_from) : NULL;
        c->log_path = a->log_path ? gw_xstrdup(a->log_path) : NULL;
        c->ckpt_id = a->ckpt_id ? gw_xstrdup(a->ckpt_id) : NULL;
        dj->end_attempt = c;
}

void gw_recovery_attempt_ended(struct gw_daemon *d, struct gw_djob *dj, bool lost, int status, gw_usec_t end_time,
                               const char *lost_why) {
        struct gw_job *j = dj->job;
        /* Training's last look at results.csv (its rows' times) and the log's last lines came
         * before, from the same hook (lifecycle_features.c): the retry decision reads them. */
        enum gw_attempt_end end = attempt_end(dj, status);
        /* A clean exit is classified without its log (gw_failure_classify, rule 2), except a
         * resumed YOLO run's, which may say there was nothing to resume. */
        bool clean = !lost && end == GW_END_EXITED && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!clean && !dj->terminating) /* our own stop is classified as such whatever the GPU did */
                gw_observe_settle(d, dj); /* the GPU may have been lost a moment before the sampler looked */
        size_t tail_len = 0;
        _cleanup_free_ char *tail =
                clean && !(j->attempt > 1 && j->yolo)
                        ? NULL
                        : gw_user_file_tail(j, j->log_path, j->output != NULL, TAIL_BYTES, NULL, &tail_len);
        struct gw_failure_input in = {
                .end = end,
                .status = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
                .lost = lost,
                .tail = tail,
                .tail_len = tail_len,
                .events = dj->events,
                .n_events = dj->n_events,
                .sigkill_why = dj->sigkill_why[0] ? dj->sigkill_why : NULL,
                /* Seen by this daemon, not found at its start: the supervisor itself is gone
                 * (killed, or crashed) and told nothing, on the pipe or in the journal. */
                .lost_why = !lost                 ? NULL
                            : lost_why            ? lost_why /* the executor's own word (Slurm's NODE_FAIL) */
                            : !d->jobs.recovering ? "its supervisor ended without telling how the job ended"
                                                  : NULL,
        };
        if (!clean && !lost)
                d->exec->end_facts(d, dj, &in);
        struct gw_failure_verdict v;
        if (gw_failure_classify(&in, &v) < 0) {
                v.cls = lost ? GW_FAILURE_LOST : GW_FAILURE_USER_ERROR;
                snprintf(v.evidence, sizeof v.evidence, "%s", lost ? "lost" : "unclassified");
        }
        /* The node could not do its part (rule 3b): the retry goes elsewhere. */
        if (!lost && in.node_step && v.cls == GW_FAILURE_LOST && d->exec->node_failed)
                d->exec->node_failed(d, dj);
        /* Stopped by leak_policy restart after a checkpoint: an oom the leak explains. */
        bool leak_restart = gw_training_take_restart(d, dj, v.evidence, sizeof v.evidence);
        if (leak_restart)
                v.cls = GW_FAILURE_OOM;
        /* Preempted: it gave way, it did not fail; its evidence says for whom. */
        bool preempted = !leak_restart && gw_preempt_take(d, dj, clean, v.evidence, sizeof v.evidence);
        /* A log line is as private as the log: marked, so that the API shows it to the job's
         * owner and admins only. */
        char quoted[GW_FAILURE_EVIDENCE_MAX + 2];
        const char *evidence = v.line > 0 && !leak_restart && !preempted
                                       ? gw_text_private_wrap(quoted, sizeof quoted, v.evidence)
                                       : v.evidence;
        char ckpt_why[512] = "";
        char *ckpt = gw_resume_find(d, j, j->submit_time, ckpt_why, sizeof ckpt_why);
        /* The epochs the training watch saw come first: it follows runs that no command names
         * (a script calling model.train()), and counts finished epochs whether or not a
         * checkpoint survived to be resumed from. */
        long seen = gw_training_epochs_done(d, dj);
        struct gw_attempt_mark last = { .valid = true,
                                        .epoch = seen >= 0 ? seen : epoch_reached(j, ckpt),
                                        .fresh = started_over(j, ckpt) };
        ckpt_identity(ckpt, last.ckpt, sizeof last.ckpt);

        _cleanup_free_ char *attempt_log = gw_xstrdup(j->log_path);
        struct gw_job_attempt a = {
                .attempt = j->attempt,
                .gpu_mask = j->gpu_mask,
                .start_time = j->start_time,
                .end_time = end_time,
                .has_exit = !lost,
                .exit_code = !lost && WIFEXITED(status) ? WEXITSTATUS(status) : 0,
                .signal = !lost && WIFSIGNALED(status) ? WTERMSIG(status) : 0,
                .class_name = (char *) (preempted ? "preempted" : gw_failure_class_name(v.cls)),
                .evidence = (char *) evidence,
                .resumed_from = j->resume_from,
                .ckpt_epoch = j->resume_from ? j->resume_epoch : 0,
                .epoch = (int) last.epoch,
                .log_path = attempt_log,
                .ckpt_id = last.ckpt,
        };
        if (gw_store_attempt_add(d->store, j->id, &a) < 0)
                log_err("job %lld: cannot record attempt %d: %s", (long long) j->id, j->attempt,
                        gw_store_errmsg(d->store));

        /* Ultralytics refuses to resume a run that had finished: the work is done. */
        if (j->attempt > 1 && j->yolo && tail && strstr(tail, "is finished, nothing to resume")) {
                free(ckpt);
                keep_attempt(dj, &a);
                (void) gw_job_end_at(d, dj, GW_JOB_COMPLETED, "training had already finished (nothing to resume)",
                                     "end", end_time);
                return;
        }
        if (preempted) {
                requeue_preempted(d, dj, evidence, ckpt);
                return;
        }
        struct gw_retry_policy p;
        gw_job_retry_policy(d, j, &p);
        /* The attempts it lost to preemption use none of its retries. */
        struct gw_retry_state s = { .attempts = (unsigned) (j->attempt - dj->n_preempted),
                                    .prev = dj->last_mark,
                                    .last = last,
                                    .oom_explained = leak_restart || gw_training_leak_flagged(d, dj) ||
                                                     memory_taken_by_others(d, j) };
        struct gw_retry_decision dec;
        if (gw_retry_decide(&p, &s, &v, d->now_wall, &dec) == 0 && dec.retry) {
                dj->last_mark = last;
                requeue(d, dj, &dec, &v, evidence, ckpt, ckpt_why);
                return;
        }
        free(ckpt);
        enum gw_job_state state = v.cls == GW_FAILURE_OK ? GW_JOB_COMPLETED
                                  : dj->terminating      ? dj->end_state
                                                         : GW_JOB_FAILED;
        char reason[1024];
        bool our_stop = v.cls == GW_FAILURE_CANCELLED || v.cls == GW_FAILURE_TIMEOUT || v.cls == GW_FAILURE_RECLAIMED;
        if (dj->terminating && our_stop)
                snprintf(reason, sizeof reason, "%s", dj->end_reason); /* the evidence would say it again */
        else if (dj->terminating)
                snprintf(reason, sizeof reason, "%s (%s)", dj->end_reason, evidence);
        else if (v.cls == GW_FAILURE_OK || !strcmp(v.evidence, gw_failure_class_name(v.cls)))
                snprintf(reason, sizeof reason, "%s", evidence); /* "exit 0"; "lost", not "lost: lost" */
        else
                snprintf(reason, sizeof reason, "%s%s%s%s%s",
                         evidence_names_class(&v) ? "" : gw_failure_class_name(v.cls),
                         evidence_names_class(&v) ? "" : ": ", evidence,
                         dec.why == GW_RETRY_WHY_EXHAUSTED || dec.why == GW_RETRY_WHY_CRASH_LOOP ? "; " : "",
                         dec.why == GW_RETRY_WHY_EXHAUSTED || dec.why == GW_RETRY_WHY_CRASH_LOOP ? dec.reason : "");
        keep_attempt(dj, &a);
        (void) gw_job_end_at(d, dj, state, reason, lost && !dj->terminating ? "lost" : "end", end_time);
}
