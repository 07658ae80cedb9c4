/* Job lifecycle in the daemon: start, end (submission: jobs_submit.c, stopping: jobs_stop.c,
 * recovery after a restart: jobs_recover.c).  The processes are the executor's (executor.h):
 * a start goes to it, an attempt's end comes back from it (gw_exec_attempt_end).
 * Every state change is written to the store with its reason before it is acted on. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/text.h"
#include "base/log.h"
#include "base/parse.h"
#include "daemon/daemon.h"
#include "daemon/sharing.h"

struct gw_djob *gw_djob_free(struct gw_djob *dj) {
        if (!dj)
                return NULL;
        if (dj->exec_free)
                dj->exec_free(dj);
        gw_jobtel_free(dj);
        gw_rwatch_free(dj->rwatch);
        gw_train_free(dj->train);
        free(dj->events);
        gw_job_free(dj->job);
        free(dj->end_reason);
        free(dj->waiters);
        if (dj->end_attempt)
                gw_job_attempts_free(dj->end_attempt, 1);
        free(dj);
        return NULL;
}

struct gw_djob *gw_djob_new(struct gw_job *j) {
        struct gw_djob *dj = gw_xcalloc(1, sizeof *dj);
        dj->job = j;
        return dj;
}

char *gw_job_log_path(const struct gw_daemon *d, const struct gw_job *j) {
        return gw_attempt_log_path(d, j, j->attempt);
}

/* gpuward's variables always win. */
char **gw_job_environment(const struct gw_daemon *d, const struct gw_job *j, const struct gw_account *a) {
        static const char *const ours[] = { "CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_ORDER=", "GPUWARD_" };
        size_t n_env = gw_strv_length(j->env), n_extra = gw_strv_length(j->env_extra);
        char **env = gw_xcalloc(n_env + n_extra + 16, sizeof(char *));
        size_t n = 0;
        char *const *src[2] = { j->env, j->env_extra };
        for (int s = 0; s < 2; s++)
                for (size_t i = 0; src[s] && src[s][i]; i++) {
                        const char *e = src[s][i];
                        size_t klen = strcspn(e, "=");
                        bool drop = false;
                        for (size_t k = 0; k < ELEMENTSOF(ours); k++)
                                drop |= !strncmp(e, ours[k], strlen(ours[k]));
                        for (const char *p = d->cfg->strip_env; p && *p && !drop;) {
                                size_t l = strcspn(p, ",");
                                drop = l == klen && !strncmp(p, e, l);
                                p += l + (p[l] == ',');
                        }
                        /* --env overrides a variable of the same name from the shell. */
                        for (size_t k = 0; k < n && !drop; k++)
                                if (!strncmp(env[k], e, klen + 1)) {
                                        free(env[k]);
                                        env[k] = gw_xstrdup(e);
                                        drop = true;
                                }
                        if (!drop)
                                env[n++] = gw_xstrdup(e);
                }
        if (!j->env) {
                char line[4200];
                env[n++] = gw_xstrdup("PATH=/usr/local/bin:/usr/bin:/bin");
                if (a) {
                        snprintf(line, sizeof line, "HOME=%s", a->home);
                        env[n++] = gw_xstrdup(line);
                        snprintf(line, sizeof line, "SHELL=%s", a->shell);
                        env[n++] = gw_xstrdup(line);
                }
                snprintf(line, sizeof line, "USER=%s", j->user);
                env[n++] = gw_xstrdup(line);
        }
        char gpus[256], line[4300];
        gw_gpu_mask_format(j->gpu_mask, gpus, sizeof gpus);
        snprintf(line, sizeof line, "CUDA_VISIBLE_DEVICES=%s", gpus);
        env[n++] = gw_xstrdup(line);
        env[n++] = gw_xstrdup("CUDA_DEVICE_ORDER=PCI_BUS_ID");
        snprintf(line, sizeof line, "GPUWARD_JOB_ID=%lld", (long long) j->id);
        env[n++] = gw_xstrdup(line);
        snprintf(line, sizeof line, "GPUWARD_GPUS=%s", gpus);
        env[n++] = gw_xstrdup(line);
        snprintf(line, sizeof line, "GPUWARD_ATTEMPT=%d", j->attempt);
        env[n++] = gw_xstrdup(line);
        snprintf(line, sizeof line, "GPUWARD_JOB_NAME=%s", j->name);
        env[n++] = gw_xstrdup(line);
        if (d->simulated) {
                snprintf(line, sizeof line, "GPUWARD_FAKE_NVML_DIR=%s", d->sim_dir);
                env[n++] = gw_xstrdup(line);
        }
        if (j->resume_from) {
                snprintf(line, sizeof line, "GPUWARD_RESUME_FROM=%s", j->resume_from);
                env[n++] = gw_xstrdup(line);
        }
        env[n] = NULL;
        return env;
}

void gw_gpus_assign(struct gw_daemon *d, uint64_t mask, int64_t id) {
        for (unsigned i = 0; i < d->n_gpus; i++)
                if (mask & (UINT64_C(1) << i))
                        d->gpus[i].job_id = id;
}

/* A start the store refused (disk full, read-only) is tried again on its own: nothing else
 * may come along to make the scheduler look at the queue. */
#define START_RETRY_USEC (5 * GW_USEC_PER_SEC)

static void start_refused(struct gw_daemon *d) {
        if (!d->start_retry_at)
                d->start_retry_at = d->now + START_RETRY_USEC;
}

/* Records the start before launching: a daemon killed in between then finds the attempt at
 * restart (the executor's adopt) instead of starting the job a second time. */
static int record_start(struct gw_daemon *d, struct gw_djob *dj, uint64_t mask) {
        struct gw_job *j = dj->job;
        j->gpu_mask = mask;
        j->state = GW_JOB_RUNNING;
        j->wait_reason = GW_REASON_NONE;
        /* The loop's instant, as its monotonic start (gw_job_clock_start) and its limit
         * (gw_sharing_job_limit) are: labels and limits then agree to the microsecond. */
        j->start_time = d->now_wall;
        gw_job_clock_start(d, dj);
        j->shim_pid = j->pid = 0;
        j->shim_start = j->pid_start = 0;
        free(j->cgroup);
        j->cgroup = NULL;
        d->exec->prepare(d, dj);
        char gpus[256], msg[512];
        gw_gpu_mask_format(mask, gpus, sizeof gpus);
        /* No GPU of this host (backend slurm): Slurm places it, and its events tell where. */
        snprintf(msg, sizeof msg, "started %s%s, attempt %d%s%s", mask ? "on GPU " : "through ",
                 mask ? gpus : d->exec->name, j->attempt, j->cgroup ? ", cgroup " : "", j->cgroup ? j->cgroup : "");
        int r = gw_store_job_update(d->store, j, "start", msg);
        if (r < 0) {
                log_err("job %lld: cannot record its start, not starting it: %s", (long long) j->id,
                        gw_store_errmsg(d->store));
                j->state = GW_JOB_PENDING;
                j->gpu_mask = 0;
                start_refused(d);
                return r;
        }
        gw_sharing_job_limit(d, dj);
        dj->booking_warned = false;
        dj->limit_warned = false;
        gw_queue_remove(d, dj);
        gw_running_add(d, dj);
        gw_gpus_assign(d, mask, j->id);
        return 0;
}

void gw_job_start_undo(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        log_err("job %lld: its start was not recorded; not starting it", (long long) j->id);
        gw_gpus_assign(d, j->gpu_mask, 0);
        gw_running_remove(d, dj);
        j->state = GW_JOB_PENDING;
        j->gpu_mask = 0;
        j->start_time = 0;
        dj->start_mono = 0;
        d->exec->release(d, dj, false);
        free(j->cgroup);
        j->cgroup = NULL;
        gw_queue_insert(d, dj);
        start_refused(d);
}

int gw_job_account_check(struct gw_daemon *d, const struct gw_job *j, char *why, size_t n) {
        const struct gw_account *now = NULL;
        int r = gw_userdb_same_account(d->users, j->uid, j->user, d->now, &now);
        if (r == -ESTALE)
                snprintf(why, n, "user gone: account '%s' (uid %u) no longer exists; uid %u is now the account '%s'",
                         j->user, (unsigned) j->uid, (unsigned) j->uid, now->name);
        else if (r == -ENOENT)
                snprintf(why, n, "user gone: account '%s' (uid %u) no longer exists", j->user, (unsigned) j->uid);
        else if (r == -EIO)
                snprintf(why, n, "the account '%s' (uid %u) cannot be looked up now", j->user, (unsigned) j->uid);
        return r;
}

int gw_job_start(struct gw_daemon *d, struct gw_djob *dj, uint64_t mask) {
        int r = record_start(d, dj, mask);
        if (r < 0)
                return r;
        if (d->in_batch) {
                /* Launched once the loop's transaction, which records this start with the
                 * ends that freed its GPUs, is committed (gw_jobs_batch_end). */
                if (d->n_to_launch == d->cap_to_launch) {
                        d->cap_to_launch = d->cap_to_launch ? 2 * d->cap_to_launch : 16;
                        d->to_launch = gw_xrealloc(d->to_launch, d->cap_to_launch * sizeof *d->to_launch);
                }
                d->to_launch[d->n_to_launch++] = dj;
                return 0;
        }
        return gw_job_launch(d, dj);
}

int gw_job_launch(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        gw_observe_job_started(d, j);
        dj->sigkill_why[0] = '\0';
        char err[256] = "";
        int r = d->exec->start(d, dj, err, sizeof err);
        if (r < 0) {
                log_err("job %lld: cannot launch: %s", (long long) j->id, err);
                gw_job_end(d, dj, GW_JOB_FAILED, err, "launch");
        }
        return r;
}



static void job_forget(struct gw_daemon *d, struct gw_djob *dj) {
        gw_api_resume_waiters(dj);
        gw_jobmap_del(&d->map, dj->job->id);
        /* Freed at the end of the loop iteration: later events of this batch may point at it. */
        dj->dead = true;
        if (dj->end_unwritten) {
                gw_jobs_unwritten_keep(d, dj);
                return;
        }
        dj->next_dead = d->dead;
        d->dead = dj;
}

void gw_jobs_bury(struct gw_daemon *d) {
        while (d->dead) {
                struct gw_djob *dj = d->dead;
                d->dead = dj->next_dead;
                gw_djob_free(dj);
        }
}

void gw_job_release_gpus(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        gw_gpus_assign(d, j->gpu_mask, 0);
        gw_running_remove(d, dj);
        d->exec->release(d, dj, true);
}

void gw_jobs_batch_begin(struct gw_daemon *d) {
        d->in_batch = gw_store_begin(d->store) == 0;
}

void gw_jobs_batch_end(struct gw_daemon *d) {
        if (!d->in_batch)
                return;
        bool committed = gw_store_commit(d->store) == 0;
        if (!committed) {
                log_err("cannot record this round's job events: %s", gw_store_errmsg(d->store));
                d->keep_exits = true;
                gw_jobs_unwritten_batch_failed(d);
        }
        for (struct gw_djob *dj = d->dead; dj; dj = dj->next_dead)
                dj->end_in_batch = false;
        d->in_batch = false;
        /* Starts recorded in the transaction: only a committed one may run (a crash must not
         * find a running job that the store says is still queued). */
        for (size_t i = 0; i < d->n_to_launch; i++)
                if (committed)
                        (void) gw_job_launch(d, d->to_launch[i]);
                else
                        gw_job_start_undo(d, d->to_launch[i]);
        d->n_to_launch = 0;
        d->exec->sync(d);
}

/* must_record (queued jobs only): the end happens only if the store takes it; otherwise the
 * job is left as it was and -errno returned. */
static int end_job(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
                   const char *kind, bool must_record, gw_usec_t end_time) {
        struct gw_job *j = dj->job;
        bool was_running = j->state == GW_JOB_RUNNING;
        assert(!must_record || !was_running);
        _cleanup_free_ char *said = gw_text_private_render(reason, true, NULL); /* for the daemon's log */
        struct gw_job before = { .state = j->state, .wait_reason = j->wait_reason, .end_reason = j->end_reason,
                                 .end_time = j->end_time };
        j->state = state;
        j->wait_reason = GW_REASON_NONE;
        j->end_reason = gw_xstrdup(reason);
        j->end_time = end_time;
        if (was_running)
                gw_observe_job_end(d, dj);
        int r = gw_store_job_update(d->store, j, kind, reason);
        if (r < 0 && must_record) {
                free(j->end_reason);
                j->state = before.state;
                j->wait_reason = before.wait_reason;
                j->end_reason = before.end_reason;
                j->end_time = before.end_time;
                return r;
        }
        free(before.end_reason);
        d->state_counts[state]++;
        snprintf(dj->end_kind, sizeof dj->end_kind, "%s", kind);
        dj->end_in_batch = d->in_batch;
        if (r < 0) {
                /* Not lost: the next daemon reads a running job's end from the kept exits
                 * journal (and its recorded stop), and this one writes it again (jobs_stop.c). */
                log_err("job %lld: cannot record its end (%s: %s): %s; kept until it can be written", (long long) j->id,
                        gw_job_state_name(state), said, gw_store_errmsg(d->store));
                d->keep_exits = true;
                dj->end_unwritten = true;
        }
        log_info("job %lld: %s: %s", (long long) j->id, gw_job_state_name(state), said);
        if (was_running) {
                gw_job_release_gpus(d, dj);
                gw_sharing_job_ended(d, j);
        } else
                gw_queue_remove(d, dj);
        d->sched_dirty = true;
        d->deps_changed = true;
        job_forget(d, dj);
        return r;
}

/* A running job's end is labelled its start + the monotonic time it ran, so that end - start
 * is its runtime whatever the wall clock did meanwhile (jobclock.c). */
static gw_usec_t end_label_now(const struct gw_daemon *d, const struct gw_djob *dj) {
        return dj->job->state == GW_JOB_RUNNING ? gw_job_clock_label(d, dj, d->now) : d->now_wall;
}

int gw_job_end(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
               const char *kind) {
        return end_job(d, dj, state, reason, kind, false, end_label_now(d, dj));
}

int gw_job_end_at(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
                  const char *kind, gw_usec_t end_time) {
        return end_job(d, dj, state, reason, kind, false, end_time);
}

int gw_job_end_recorded(struct gw_daemon *d, struct gw_djob *dj, enum gw_job_state state, const char *reason,
                        const char *kind) {
        return end_job(d, dj, state, reason, kind, true, end_label_now(d, dj));
}

/* The executor's word on an attempt's end (executor.h): its exit on the job's record, then
 * what it means (recovery.c).  Told once per attempt; a second word is a bug, and ignored. */
void gw_exec_attempt_end(struct gw_daemon *d, struct gw_djob *dj, const struct gw_exec_end *end) {
        struct gw_job *j = dj->job;
        if (dj->dead || j->state != GW_JOB_RUNNING) {
                log_warn("job %lld: an end told for attempt %d, which is not running; ignored", (long long) j->id,
                         j->attempt);
                return;
        }
        if (end->kind == GW_EXEC_NOT_STARTED) {
                log_err("job %lld: cannot launch: %s", (long long) j->id, end->why);
                gw_job_end(d, dj, GW_JOB_FAILED, end->why, "launch");
                return;
        }
        gw_usec_t at = end->at ? end->at : end_label_now(d, dj);
        if (end->kind == GW_EXEC_LOST) {
                gw_recovery_attempt_ended(d, dj, true, 0, at);
                return;
        }
        int status = end->status;
        j->has_exit = true;
        j->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        j->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + j->signal;
        gw_recovery_attempt_ended(d, dj, false, status, at);
}

void gw_job_log_note(struct gw_daemon *d, struct gw_djob *dj, const char *msg) {
        /* Only gpuward's own log files: a user-chosen output file is not ours to write. */
        if (dj->job->output)
                return;
        _cleanup_close_ int fd = open(dj->job->log_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return;
        char line[600];
        int n = snprintf(line, sizeof line, "gpuward: %s\n", msg);
        (void) !write(fd, line, (size_t) (n < (int) sizeof line ? n : (int) sizeof line - 1));
}

int gw_job_hold(struct gw_daemon *d, struct gw_djob *dj, bool hold, const char *who) {
        struct gw_job *j = dj->job;
        if (j->state != (hold ? GW_JOB_PENDING : GW_JOB_HELD))
                return -EBUSY;
        j->state = hold ? GW_JOB_HELD : GW_JOB_PENDING;
        j->wait_reason = hold ? GW_REASON_HELD : GW_REASON_RESOURCES;
        char msg[160];
        snprintf(msg, sizeof msg, "%s by %s", hold ? "held" : "released", who);
        int r = gw_store_job_update(d->store, j, hold ? "hold" : "release", msg);
        d->sched_dirty = true;
        return r;
}


void gw_jobs_reap(struct gw_daemon *d) {
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
                if (!d->exec->reaped(d, pid, status))
                        (void) gw_train_restore_reaped(d, pid, status);
}

/* Retries waiting out their backoff: due ones become eligible; returns the next due time.  The
 * stored not_before is a wall-clock label; the wait itself is on the monotonic clock, set at
 * the requeue (recovery.c), or from the label once after a restart, so a step of the wall
 * clock neither skips a backoff nor stretches it by the step. */
static gw_usec_t backoff_tick(struct gw_daemon *d) {
        if (!d->n_backoff)
                return GW_USEC_INFINITY;
        gw_usec_t wall = d->now_wall, next = GW_USEC_INFINITY;
        size_t waiting = 0;
        for (size_t i = 0; i < d->n_queue; i++) {
                struct gw_djob *dj = d->queue[i];
                struct gw_job *j = dj->job;
                if (!j->not_before) {
                        dj->backoff_due = 0;
                        continue;
                }
                if (!dj->backoff_due)
                        dj->backoff_due = d->now + (j->not_before > wall ? j->not_before - wall : 0);
                if (dj->backoff_due <= d->now) {
                        j->not_before = 0;
                        dj->backoff_due = 0;
                        if (j->wait_reason == GW_REASON_BACKOFF)
                                j->wait_reason = GW_REASON_RESOURCES;
                        d->sched_dirty = true;
                        continue;
                }
                waiting++;
                if (dj->backoff_due < next)
                        next = dj->backoff_due;
        }
        d->n_backoff = waiting;
        return next;
}

gw_usec_t gw_jobs_tick(struct gw_daemon *d) {
        gw_usec_t next = backoff_tick(d), cal = gw_sharing_tick(d), unwritten = gw_jobs_unwritten_tick(d);
        gw_usec_t restore = gw_train_restore_tick(d);
        if (restore < next)
                next = restore;
        if (d->start_retry_at && d->now >= d->start_retry_at) {
                d->start_retry_at = 0;
                d->sched_dirty = true;
        }
        if (d->start_retry_at && d->start_retry_at < next)
                next = d->start_retry_at;
        if (cal < next)
                next = cal;
        if (unwritten < next)
                next = unwritten;
        for (size_t i = 0; i < d->n_running; i++) {
                struct gw_djob *dj = d->running[i];
                if (!dj->terminating && d->now >= dj->limit_at) {
                        char a[32], why[96];
                        if (dj->limit_by_booking)
                                snprintf(why, sizeof why, "its booking ended");
                        else
                                snprintf(why, sizeof why, "time limit %s reached",
                                         gw_format_duration(dj->job->time_limit, a, sizeof a));
                        gw_job_terminate(d, dj, GW_JOB_TIMEOUT, why);
                }
                if (dj->terminating && dj->kill_at && d->now >= dj->kill_at) {
                        log_info("job %lld: grace period over, SIGKILL", (long long) dj->job->id);
                        (void) gw_store_job_event(d->store, dj->job->id, dj->job->state, "kill",
                                                  "grace period over: SIGKILL to every process of the job");
                        gw_job_signal(d, dj, SIGKILL);
                        dj->kill_at = 0;
                }
                gw_usec_t t = dj->terminating ? (dj->kill_at ? dj->kill_at : GW_USEC_INFINITY) : dj->limit_at;
                gw_usec_t warn = gw_job_limit_warn_tick(d, dj);
                if (warn < t)
                        t = warn;
                if (t < next)
                        next = t;
        }
        return next;
}

