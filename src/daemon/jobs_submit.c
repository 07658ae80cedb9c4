/* A submission: checked against the host, the user's rights and quotas (nothing changed on
 * a refusal), recorded in the store, then queued. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "daemon/daemon.h"
#include "daemon/userfile.h"

static int submit_fail(struct gw_submit_error *err, int status, const char *field, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int submit_fail(struct gw_submit_error *err, int status, const char *field, const char *fmt, ...) {
        va_list ap;
        err->status = status;
        snprintf(err->field, sizeof err->field, "%s", field);
        va_start(ap, fmt);
        (void) vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* Whether uid (with gid and its groups) has the access in `need` (S_IXUSR, S_IWUSR, in owner
 * bits) to the directory st. */
static bool dir_allows(struct gw_daemon *d, const struct stat *st, uid_t uid, gid_t gid, mode_t need) {
        if (!S_ISDIR(st->st_mode))
                return false;
        if (uid == 0)
                return true;
        if (st->st_uid == uid)
                return (st->st_mode & need) == need;
        bool in_group = st->st_gid == gid;
        const struct gw_account *a = in_group ? NULL : gw_userdb_uid(d->users, uid, d->now);
        in_group |= a && gw_account_in_group(a, st->st_gid);
        return in_group ? (st->st_mode & (need >> 3)) == need >> 3 : (st->st_mode & (need >> 6)) == need >> 6;
}

/* Walks path's directories for uid; *ret_link tells whether a symlink was on the way. */
static bool may_walk(struct gw_daemon *d, char *path, uid_t uid, gid_t gid, mode_t need, bool *ret_link) {
        struct stat st;
        for (char *p = path + 1;; p++) {
                if (*p != '/' && *p)
                        continue;
                char c = *p;
                *p = '\0';
                bool ok = lstat(path, &st) == 0;
                if (ok && S_ISLNK(st.st_mode)) {
                        *ret_link = true;
                        ok = stat(path, &st) == 0;
                }
                ok = ok && dir_allows(d, &st, uid, gid, c ? S_IXUSR : need);
                *p = c;
                if (!ok)
                        return false;
                if (!c)
                        return true;
        }
}

/* Whether uid can reach directory dir (search rights on it and on every directory above it)
 * with `need` on dir itself: the job will chdir there, or create its output file there, as
 * uid; and the daemon, which looks as root, must not tell what lies where uid cannot look. */
static bool may_use_dir(struct gw_daemon *d, const char *dir, uid_t uid, gid_t gid, mode_t need) {
        struct stat st;
        if (uid == 0) /* root's job may go anywhere: the directory must only be one */
                return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
        char path[PATH_MAX];
        bool link = false;
        if (snprintf(path, sizeof path, "%s", dir) >= (int) sizeof path || !may_walk(d, path, uid, gid, need, &link))
                return false;
        if (!link)
                return true;
        /* A symlink on the way is judged by its target's mode alone: the directories above the
         * target count too, so the path it really takes is walked as well. */
        _cleanup_free_ char *real = realpath(dir, NULL);
        return real && may_walk(d, real, uid, gid, need, &link);
}

/* The output file is opened by the job's user at each start (O_APPEND, created if missing):
 * a directory that is not there, or not theirs to write, would fail every start with no log. */
static int check_output(struct gw_daemon *d, const struct gw_job *j, struct gw_submit_error *err) {
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof dir, "%s", j->output) >= (int) sizeof dir)
                return submit_fail(err, 400, "output", "output: longer than %d bytes", PATH_MAX - 1);
        char *slash = strrchr(dir, '/');
        if (!slash || !slash[1])
                return submit_fail(err, 400, "output", "output: '%s' names a directory, not a file", j->output);
        if (slash == dir)
                slash[1] = '\0';
        else
                *slash = '\0';
        struct stat st;
        bool reach = may_use_dir(d, dir, j->uid, j->gid, S_IXUSR);
        if (reach && lstat(j->output, &st) == 0) {
                if (S_ISDIR(st.st_mode))
                        return submit_fail(err, 400, "output", "output: '%s' is a directory", j->output);
                /* The daemon reads the output back (logs, the failure's evidence) as root. */
                if (!S_ISREG(st.st_mode) || !gw_user_owns(j, &st))
                        return submit_fail(err, 400, "output", "output: '%s' exists and is not a file of %s's",
                                           j->output, j->user);
                return 0;
        }
        if (reach && may_use_dir(d, dir, j->uid, j->gid, S_IXUSR | S_IWUSR))
                return 0;
        return submit_fail(err, 400, "output", "output: directory '%s' does not exist or %s cannot write there", dir,
                           j->user);
}

static int validate(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err) {
        if (j->uid == 0 && !d->cfg->allow_root_jobs)
                return submit_fail(err, 403, "", "jobs may not run as root (set allow-root-jobs in the config)");
        if ((unsigned) j->ngpus > d->n_gpus)
                return submit_fail(err, 400, "ngpus", "ngpus: asked for %d GPUs, only %u GPU%s on this host", j->ngpus,
                                   d->n_gpus, d->n_gpus == 1 ? "" : "s");
        if (j->gpu_mem > d->max_gpu_mem) {
                char a[32], b[32];
                return submit_fail(err, 400, "gpu_mem", "gpu_mem: %s per GPU asked, the largest GPU here has %s",
                                   gw_format_size(j->gpu_mem, a, sizeof a), gw_format_size(d->max_gpu_mem, b, sizeof b));
        }
        if (j->time_limit > d->cfg->max_time_limit) {
                char a[32], b[32];
                return submit_fail(err, 400, "time_limit", "time_limit: %s is longer than the maximum %s",
                                   gw_format_duration(j->time_limit, a, sizeof a),
                                   gw_format_duration(d->cfg->max_time_limit, b, sizeof b));
        }
        if (!j->cwd)
                return submit_fail(err, 400, "cwd", "cwd: required (the directory the job runs in)");
        if (!may_use_dir(d, j->cwd, j->uid, j->gid, S_IXUSR))
                return submit_fail(err, 400, "cwd", "cwd: '%s' does not exist or %s cannot enter it", j->cwd, j->user);
        if (j->output && check_output(d, j, err) < 0)
                return -EINVAL;
        uint32_t classes;
        char why[160];
        if (j->retry_on && gw_retry_parse_classes(j->retry_on, &classes, why, sizeof why) < 0)
                return submit_fail(err, 400, "retry_on", "retry_on: %s", why);
        if (j->retries < 0)
                j->retries = d->cfg->default_retries;
        /* `yolo ... train ...` is an Ultralytics run even without --yolo. */
        const char *prog = strrchr(j->argv[0], '/');
        if (!strcmp(prog ? prog + 1 : j->argv[0], "yolo"))
                for (size_t i = 1; j->argv[i]; i++)
                        j->yolo |= !strcmp(j->argv[i], "train");
        if (gw_sharing_check_submit(d, j, ahead, err) < 0)
                return -EINVAL;
        if (j->after_job > 0 && !gw_jobmap_get(&d->map, j->after_job)) {
                enum gw_job_state st;
                if (gw_store_job_state(d->store, j->after_job, &st) < 0)
                        return submit_fail(err, 400, "after", "after: no job %lld", (long long) j->after_job);
        }
        if (gw_reclaim_check_submit(d, j, err) < 0)
                return -EINVAL;
        return 0;
}

int gw_job_validate(struct gw_daemon *d, struct gw_job *j, bool hold, size_t ahead, struct gw_submit_error *err) {
        int r = validate(d, j, ahead, err);
        if (r < 0)
                return r;
        j->state = hold ? GW_JOB_HELD : GW_JOB_PENDING;
        j->wait_reason = hold ? GW_REASON_HELD : j->after_job > 0 ? GW_REASON_DEPENDENCY : GW_REASON_RESOURCES;
        j->submit_time = gw_now_wall();
        j->attempt = 1;
        if (!j->name || !j->name[0]) {
                free(j->name);
                const char *slash = strrchr(j->argv[0], '/');
                j->name = gw_xstrdup(slash ? slash + 1 : j->argv[0]);
        }
        return 0;
}

int gw_job_record(struct gw_daemon *d, struct gw_job *j, struct gw_submit_error *err) {
        char msg[160];
        snprintf(msg, sizeof msg, "submitted by %s%s", j->user, j->state == GW_JOB_HELD ? ", held" : "");
        int r = gw_store_job_insert(d->store, j, msg);
        if (r < 0)
                return submit_fail(err, 503, "", "cannot record the job: %s", gw_store_errmsg(d->store));
        return 0;
}

void gw_job_enqueue(struct gw_daemon *d, struct gw_job *j) {
        j->log_path = gw_job_log_path(d, j);
        struct gw_djob *dj = gw_djob_new(j);
        gw_jobmap_put(&d->map, dj);
        gw_queue_insert(d, dj);
}

int gw_job_submit(struct gw_daemon *d, struct gw_job *j, bool hold, struct gw_submit_error *err, int64_t *ret_id) {
        int r = gw_job_validate(d, j, hold, 0, err);
        if (r >= 0)
                r = gw_job_record(d, j, err);
        if (r < 0) {
                gw_job_free(j);
                return r;
        }
        *ret_id = j->id;
        gw_job_enqueue(d, j);
        return 0;
}

