/* A job's processes in the daemon, at the executor seam (executor.h): its environment, its
 * launch, and the end of an attempt as the executor tells it (gw_exec_attempt_end).  Its
 * state transitions and their records: lifecycle.c; submission checks: jobs_submit.c;
 * recovery after a restart: jobs_recover.c. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
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
#include "core/scratch.h"
#include "core/outpath.h"
#include "core/retry.h"
#include "daemon/daemon.h"
#include "daemon/life/jobarray.h"
#include "daemon/sharing/sharing.h"
#include "daemon/base/jobclock.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"

struct gw_djob *gw_djob_free(struct gw_daemon *d, struct gw_djob *dj) {
        if (!dj)
                return NULL;
        if (dj->exec_free)
                dj->exec_free(dj);
        gw_lifecycle_publish(d, GW_HOOK_JOB_FREED, dj, false); /* the features' state of it */
        free(dj->events);
        gw_job_free(dj->job);
        free(dj->end_reason);
        gw_array_free(dj->array);
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

/* The output file of j: its --output with sbatch's patterns filled in (the job's id known
 * now).  One that would not fit a path keeps its pattern: submission refused those. */
static char *output_path(const struct gw_job *j) {
        char host[256] = "", buf[PATH_MAX];
        if (strchr(j->output, '%') && gethostname(host, sizeof host - 1) < 0)
                host[0] = '\0';
        const struct gw_outpath_vars v = {
                .id = j->id,
                .array_id = j->array_job > 0 ? j->array_job : j->id,
                .array_index = j->array_job > 0 ? (int64_t) j->array_index : -1,
                .name = j->name,
                .user = j->user,
                .host = host,
        };
        if (!strchr(j->output, '%') || gw_outpath_expand(j->output, &v, buf, sizeof buf) < 0)
                return gw_xstrdup(j->output);
        return gw_xstrdup(buf);
}

char *gw_attempt_log_path(const struct gw_daemon *d, const struct gw_job *j, int attempt) {
        if (j->output)
                return output_path(j);
        char buf[4300];
        if (attempt <= 1)
                snprintf(buf, sizeof buf, "%s/%lld.log", d->loop.log_dir, (long long) j->id);
        else
                snprintf(buf, sizeof buf, "%s/%lld.%d.log", d->loop.log_dir, (long long) j->id, attempt);
        return gw_xstrdup(buf);
}

char *gw_job_log_path(const struct gw_daemon *d, const struct gw_job *j) {
        return gw_attempt_log_path(d, j, j->attempt);
}

/* gpuward's variables always win. */
/* A job by id: the live one if active, else the stored record.  Caller frees *tmp. */
const struct gw_job *gw_job_lookup(struct gw_daemon *d, int64_t id, struct gw_job **tmp) {
        *tmp = NULL;
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, id);
        if (dj)
                return dj->job;
        /* Ended, but not on disk yet (a full disk): what the daemon knows, not the stale row. */
        const struct gw_djob *unwritten = gw_jobs_unwritten_find(d, id);
        if (unwritten)
                return unwritten->job;
        if (gw_store_job_get(d->store, id, tmp) < 0)
                return NULL;
        if (!(*tmp)->log_path)
                (*tmp)->log_path = gw_job_log_path(d, *tmp);
        return *tmp;
}

/* The checkpoint a retry resumes from as the job reaches it: a --scratch job's, in the shared
 * folder, was restored to the same place in its new node-local folder, where its run goes on
 * (daemon/scratch). */
static const char *resume_path(const struct gw_job *j, char *buf, size_t n) {
        if (j->scratch_dir && gw_scratch_map(j->resume_from, j->cwd, j->scratch_dir, buf, n) > 0)
                return buf;
        return j->resume_from;
}

char **gw_resume_argv(const struct gw_job *j) {
        if (j->attempt > 1 && j->resume_cmd) {
                char *v[] = { (char *) "/bin/sh", (char *) "-c", j->resume_cmd, NULL };
                return gw_strv_copy(v);
        }
        if (!(j->attempt > 1 && j->yolo && j->resume_from))
                return gw_strv_copy(j->argv);
        /* Ultralytics takes everything else from the checkpoint: keep the program and its
         * arguments, replace any resume/model setting.  "resume=CKPT", not a bare "resume"
         * (resume=True): since 8.4.29 Model.train() turns resume=True with a checkpoint that
         * holds no training state (a finished run's, its optimizer stripped) into a new
         * training from those weights, in a new run directory, where a path still reaches the
         * trainer's "training to N epochs is finished, nothing to resume" (recovery.c).  Older
         * releases replace either form with the model's path, hence model= as well. */
        size_t n = gw_strv_length(j->argv), k = 0;
        char **v = gw_xcalloc(n + 3, sizeof(char *));
        for (size_t i = 0; i < n; i++) {
                const char *a = j->argv[i];
                if (i > 0 && (!strcmp(a, "resume") || !strncmp(a, "resume=", 7) || !strncmp(a, "model=", 6)))
                        continue;
                v[k++] = gw_xstrdup(a);
        }
        char arg[4200], where[4200];
        const char *from = resume_path(j, where, sizeof where);
        snprintf(arg, sizeof arg, "resume=%s", from);
        v[k++] = gw_xstrdup(arg);
        snprintf(arg, sizeof arg, "model=%s", from);
        v[k++] = gw_xstrdup(arg);
        return v;
}

char **gw_job_environment(const struct gw_daemon *d, const struct gw_job *j, const struct gw_account *a) {
        static const char *const ours[] = { "CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_ORDER=", "GPUWARD_", "SLURM_ARRAY_" };
        size_t n_env = gw_strv_length(j->env), n_extra = gw_strv_length(j->env_extra);
        char **env = gw_xcalloc(n_env + n_extra + 26, sizeof(char *));
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
        /* A job on MIG slices sees them, and only them, by UUID: a GPU's index would be
         * the whole GPU, which CUDA cannot use in MIG mode. */
        if (j->mig_profile && j->mig_slices) {
                size_t len = sizeof "CUDA_VISIBLE_DEVICES=" + strlen(j->mig_slices);
                env[n] = gw_xmalloc(len);
                snprintf(env[n++], len, "CUDA_VISIBLE_DEVICES=%s", j->mig_slices);
        } else {
                snprintf(line, sizeof line, "CUDA_VISIBLE_DEVICES=%s", gpus);
                env[n++] = gw_xstrdup(line);
        }
        env[n++] = gw_xstrdup("CUDA_DEVICE_ORDER=PCI_BUS_ID");
        snprintf(line, sizeof line, "GPUWARD_JOB_ID=%lld", (long long) j->id);
        env[n++] = gw_xstrdup(line);
        snprintf(line, sizeof line, "GPUWARD_GPUS=%s", gpus);
        env[n++] = gw_xstrdup(line);
        snprintf(line, sizeof line, "GPUWARD_ATTEMPT=%d", j->attempt);
        env[n++] = gw_xstrdup(line);
        snprintf(line, sizeof line, "GPUWARD_JOB_NAME=%s", j->name);
        env[n++] = gw_xstrdup(line);
        if (d->host.simulated) {
                snprintf(line, sizeof line, "GPUWARD_FAKE_NVML_DIR=%s", d->host.sim_dir);
                env[n++] = gw_xstrdup(line);
        }
        if (j->resume_from) {
                char where[4200];
                snprintf(line, sizeof line, "GPUWARD_RESUME_FROM=%s", resume_path(j, where, sizeof where));
                env[n++] = gw_xstrdup(line);
        }
        if (j->scratch_dir) { /* the attempt's node-local folder (daemon/scratch) */
                snprintf(line, sizeof line, "GPUWARD_SCRATCH=%s", j->scratch_dir);
                env[n++] = gw_xstrdup(line);
        }
        if (j->dataset_dir) { /* set by the cache once its copy is verified (cache.c) */
                snprintf(line, sizeof line, "GPUWARD_DATASET_DIR=%s", j->dataset_dir);
                env[n++] = gw_xstrdup(line);
        }
        if (j->data_yaml) {
                snprintf(line, sizeof line, "GPUWARD_DATA_YAML=%s", j->data_yaml);
                env[n++] = gw_xstrdup(line);
        }
        if (j->array_job > 0)
                n += gw_array_task_environment(j, env + n);
        env[n] = NULL;
        return env;
}

void gw_gpus_assign(struct gw_daemon *d, uint64_t mask, int64_t id) {
        for (unsigned i = 0; i < d->host.n_gpus; i++)
                if (mask & (UINT64_C(1) << i))
                        d->host.gpus[i].job_id = id;
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

int gw_job_launch(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        gw_lifecycle_publish(d, GW_HOOK_ATTEMPT_LAUNCHING, dj, false);
        dj->sigkill_why[0] = '\0';
        char err[256] = "";
        /* The job's user: HOME and SHELL for its environment, its groups for the executor. */
        const struct gw_account *account = gw_userdb_uid(d->users, j->uid, d->now);
        _cleanup_(gw_strv_freep) char **env = gw_job_environment(d, j, account);
        _cleanup_(gw_strv_freep) char **argv = gw_resume_argv(j);
        const struct gw_exec_start how = { .argv = argv, .envp = env, .account = account };
        int r = d->exec->start(d, dj, &how, err, sizeof err);
        if (r < 0) {
                log_err("job %lld: cannot launch: %s", (long long) j->id, err);
                gw_job_end(d, dj, GW_JOB_FAILED, err, "launch");
        }
        return r;
}

void gw_job_forget(struct gw_daemon *d, struct gw_djob *dj) {
        gw_jobmap_del(&d->jobs.map, dj->job->id);
        /* Freed at the end of the loop iteration: later events of this batch may point at it. */
        dj->dead = true;
        if (dj->end_unwritten) {
                gw_jobs_unwritten_keep(d, dj);
                return;
        }
        dj->next_dead = d->jobs.dead;
        d->jobs.dead = dj;
}

void gw_job_release_gpus(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        gw_gpus_assign(d, j->mig_profile ? 0 : j->gpu_mask, 0); /* a slice job held no GPU whole */
        gw_running_remove(d, dj);
        d->exec->release(d, dj, true);
}

/* A running job's end is labelled its start + the monotonic time it ran, so that end - start
 * is its runtime whatever the wall clock did meanwhile (jobclock.c). */
static gw_usec_t end_label_now(const struct gw_daemon *d, const struct gw_djob *dj) {
        return dj->job->state == GW_JOB_RUNNING ? gw_job_clock_label(d, dj, d->now) : d->now_wall;
}

/* The executor's word on an attempt's end (executor.h): its exit on the job's record, then
 * GW_HOOK_ATTEMPT_ENDED, whose last subscriber says what it means (recovery.c).  Told once
 * per attempt; a second word is a bug, and ignored. */
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
                gw_lifecycle_publish_end(d, dj, &(struct gw_hook_end){ .lost = true, .end_time = at, .why = end->why });
                return;
        }
        int status = end->status;
        j->has_exit = true;
        j->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        j->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + j->signal;
        gw_lifecycle_publish_end(d, dj, &(struct gw_hook_end){ .status = status, .end_time = at });
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

void gw_job_retry_policy(const struct gw_daemon *d, const struct gw_job *j, struct gw_retry_policy *p) {
        gw_retry_policy_default(p);
        p->backoff_base = d->cfg->retry_backoff;
        p->max_retries = (unsigned) (j->retries >= 0 ? j->retries : d->cfg->default_retries);
        char why[128];
        if (gw_retry_parse_classes(j->retry_on ? j->retry_on : d->cfg->default_retry_on, &p->retry_on, why,
                                   sizeof why) < 0)
                (void) gw_retry_parse_classes(GW_RETRY_DEFAULT_CLASSES, &p->retry_on, why, sizeof why);
}
