/* A submission: checked against the host, the user's rights and quotas (nothing changed on
 * a refusal), recorded in the store, then queued. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "core/outpath.h"
#include "daemon/base/asuser.h"
#include "daemon/daemon.h"
#include "daemon/base/userfile.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"

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

/* The job's user as the kernel knows them (with the groups the job gets), for the checks
 * below: the job will chdir into its cwd and create its output as that user; and the daemon,
 * which looks as root, must not tell what lies where that user cannot look. */
static int begin_as_job_user(struct gw_daemon *d, const struct gw_job *j) {
        /* Root's jobs and a non-root daemon's switch nothing (asuser.h): no account to look up. */
        const struct gw_account *a = j->uid && d->loop.euid == 0 ? gw_userdb_uid(d->users, j->uid, d->now) : NULL;
        int r = gw_as_user_begin(j->uid, j->gid, a ? a->groups : NULL, a ? a->n_groups : 0);
        if (r < 0)
                log_warn("submission of %s: cannot check its paths as that user: %s", j->user, strerror(-r));
        return r;
}

/* Whether dir is a directory the user (see begin_as_job_user) can reach, with `mode` (X_OK,
 * W_OK) on dir itself. */
static bool may_use_dir(const char *dir, int mode) {
        struct stat st;
        return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && faccessat(AT_FDCWD, dir, mode, AT_EACCESS) == 0;
}

/* Whether the directory part of an --output names the job's id (%j, %A or %a). */
static bool dir_has_id_pattern(const char *output) {
        const char *slash = strrchr(output, '/');
        for (const char *p = output; slash && p < slash; p++)
                if (p[0] == '%' && p[1] && strchr("jAa", p[1]))
                        return true;
                else if (p[0] == '%' && p[1] == '%')
                        p++;
        return false;
}

/* The output file is opened by the job's user at each start (O_APPEND, created if missing):
 * a directory that is not there, or not theirs to write, would fail every start with no log.
 * Called as the job's user. */
static int check_output(const struct gw_job *j, struct gw_submit_error *err) {
        char dir[PATH_MAX], path[PATH_MAX], host[256] = "";
        if (snprintf(dir, sizeof dir, "%s", j->output) >= (int) sizeof dir)
                return submit_fail(err, 400, "output", "output: longer than %d bytes", PATH_MAX - 1);
        /* sbatch's patterns, at their longest (the ids not known yet), must still fit. */
        if (gethostname(host, sizeof host - 1) < 0)
                host[0] = '\0';
        const char *base = strrchr(j->argv[0], '/');
        const char *name = j->name && *j->name ? j->name : base ? base + 1 : j->argv[0];
        const struct gw_outpath_vars v = {
                .id = INT64_MAX,
                .array_id = INT64_MAX,
                .array_index = UINT32_MAX,
                .name = name,
                .user = j->user,
                .host = host,
        };
        if (gw_outpath_expand(j->output, &v, path, sizeof path) < 0)
                return submit_fail(err, 400, "output",
                                   "output: longer than %d bytes once its %%j, %%x, %%u, %%A, %%a "
                                   "and %%N are filled in",
                                   PATH_MAX - 1);
        /* A directory named by the job's id is made by nobody: it must be there at the start. */
        if (dir_has_id_pattern(j->output))
                return 0;
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (!slash || !slash[1])
                return submit_fail(err, 400, "output", "output: '%s' names a directory, not a file", path);
        if (slash == dir)
                slash[1] = '\0';
        else
                *slash = '\0';
        struct stat st;
        bool reach = may_use_dir(dir, X_OK);
        if (reach && lstat(path, &st) == 0) {
                if (S_ISDIR(st.st_mode))
                        return submit_fail(err, 400, "output", "output: '%s' is a directory", path);
                /* The daemon reads the output back (logs, the failure's evidence) as root. */
                if (!S_ISREG(st.st_mode) || !gw_user_owns(j, &st))
                        return submit_fail(err, 400, "output", "output: '%s' exists and is not a file of %s's", path,
                                           j->user);
                return 0;
        }
        if (reach && may_use_dir(dir, X_OK | W_OK))
                return 0;
        return submit_fail(err, 400, "output", "output: directory '%s' does not exist or %s cannot write there", dir,
                           j->user);
}

/* The PATH the job's execvp will search: the last PATH of --env, else of the submitted
 * environment, else what the job gets without one (the minimal environment's, or glibc's
 * default when the submitted environment has no PATH). */
static const char *job_search_path(const struct gw_job *j) {
        char *const *src[2] = { j->env_extra, j->env };
        for (int s = 0; s < 2; s++) {
                const char *found = NULL;
                for (size_t i = 0; src[s] && src[s][i]; i++)
                        if (!strncmp(src[s][i], "PATH=", 5))
                                found = src[s][i] + 5;
                if (found)
                        return found;
        }
        return j->env ? "/bin:/usr/bin" : "/usr/local/bin:/usr/bin:/bin";
}

/* 0: a regular file the user may execute; -EACCES: there but not that; -ENOENT: not there.
 * A relative file is taken from the job's cwd, where the job will exec it. */
static int runnable(const struct gw_job *j, const char *dir, size_t dir_len, const char *name) {
        char file[PATH_MAX];
        int k = dir ? snprintf(file, sizeof file, "%.*s/%s", (int) dir_len, dir, name)
                    : snprintf(file, sizeof file, "%s", name);
        if (k < 0 || (size_t) k >= sizeof file)
                return -ENOENT;
        struct stat st;
        int dfd = open(j->cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -ENOENT;
        int r = fstatat(dfd, file, &st, 0) < 0                                       ? -ENOENT
                : !S_ISREG(st.st_mode) || faccessat(dfd, file, X_OK, AT_EACCESS) < 0 ? -EACCES
                                                                                     : 0;
        (void) close(dfd);
        return r;
}

/* The command as the job will exec it (execvp in its cwd, with its PATH, as its user): a
 * typo or a missing program is told now, not as "exit 127" when GPUs come free.  Not for a
 * job that waits on another (--after): that one may build what this one runs.  Called as the
 * job's user. */
static int check_command(const struct gw_job *j, struct gw_submit_error *err) {
        const char *cmd = j->argv[0];
        if (j->after_job > 0)
                return 0;
        if (strchr(cmd, '/')) {
                int r = runnable(j, NULL, 0, cmd);
                if (r == -ENOENT)
                        return submit_fail(err, 400, "command", "command: '%s' does not exist (as %s sees it from %s)",
                                           cmd, j->user, j->cwd);
                if (r < 0)
                        return submit_fail(err, 400, "command", "command: '%s' is not a file executable by %s", cmd,
                                           j->user);
                return 0;
        }
        const char *path = job_search_path(j);
        bool seen = false;
        for (const char *p = path;; p++) {
                size_t n = strcspn(p, ":");
                /* An empty entry is the cwd, as execvp reads it. */
                int r = runnable(j, n ? p : ".", n ? n : 1, cmd);
                if (r == 0)
                        return 0;
                seen |= r == -EACCES;
                p += n;
                if (!*p)
                        break;
        }
        const char *more = strlen(path) > 120 ? "..." : "";
        if (seen)
                return submit_fail(err, 400, "command", "command: '%s' is in PATH (%.120s%s) but not executable by %s",
                                   cmd, path, more, j->user);
        return submit_fail(err, 400, "command", "command: '%s' not found in PATH (%.120s%s) as user %s", cmd, path,
                           more, j->user);
}

static int check_paths(struct gw_daemon *d, const struct gw_job *j, struct gw_submit_error *err) {
        if (begin_as_job_user(d, j) < 0)
                return submit_fail(err, 500, "cwd", "cwd: cannot be checked as %s", j->user);
        int r = 0;
        if (!may_use_dir(j->cwd, X_OK))
                r = submit_fail(err, 400, "cwd", "cwd: '%s' does not exist or %s cannot enter it", j->cwd, j->user);
        else if (j->output)
                r = check_output(j, err);
        if (r == 0)
                r = check_command(j, err);
        gw_as_user_end();
        return r;
}

/* The job it starts after: known, and not ended in a way that can never satisfy it.  A
 * submission check (lifecycle_features.c says where among the features'). */
int gw_job_check_dependency(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err) {
        (void) ahead;
        if (j->after_job > 0 && !gw_jobmap_get(&d->jobs.map, j->after_job)) {
                enum gw_job_state st;
                if (gw_store_job_state(d->store, j->after_job, &st) < 0)
                        return submit_fail(err, 400, "after", "after: no job %lld", (long long) j->after_job);
                /* It would be cancelled at once as "dependency never satisfied": say so now. */
                if (j->after_kind == GW_DEP_KIND_OK && st != GW_JOB_COMPLETED)
                        return submit_fail(err, 400, "after",
                                           "after: job %lld ended %s, so it will never have COMPLETED "
                                           "(to start after it however it ended: %lld:any)",
                                           (long long) j->after_job, gw_job_state_name(st), (long long) j->after_job);
        }
        return 0;
}

static int validate(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err) {
        if (j->uid == 0 && !d->cfg->allow_root_jobs)
                return submit_fail(err, 403, "", "jobs may not run as root (set allow-root-jobs in the config)");
        /* Where the backend places jobs on its nodes this host's GPUs are not theirs: it judges. */
        bool here = gw_backend_placement(d) == GW_EXEC_PLACE_HERE;
        if (here && (unsigned) j->ngpus > d->host.n_gpus)
                return submit_fail(err, 400, "ngpus", "ngpus: asked for %d GPUs, only %u GPU%s on this host", j->ngpus,
                                   d->host.n_gpus, d->host.n_gpus == 1 ? "" : "s");
        if (here && j->gpu_mem > d->host.max_gpu_mem) {
                char a[32], b[32];
                return submit_fail(err, 400, "gpu_mem", "gpu_mem: %s per GPU asked, the largest GPU here has %s",
                                   gw_format_size(j->gpu_mem, a, sizeof a),
                                   gw_format_size(d->host.max_gpu_mem, b, sizeof b));
        }
        if (j->time_limit > d->cfg->max_time_limit) {
                char a[32], b[32];
                return submit_fail(err, 400, "time_limit", "time_limit: %s is longer than the maximum %s",
                                   gw_format_duration(j->time_limit, a, sizeof a),
                                   gw_format_duration(d->cfg->max_time_limit, b, sizeof b));
        }
        /* What the backend knows now of its nodes (Slurm: the MIG types they have); not
         * known yet, the job is taken and waits in the queue until it is. */
        char refused[600];
        const char *field = "";
        int r = d->exec->admit ? d->exec->admit(d, j, &field, refused, sizeof refused) : 0;
        if (r < 0 && r != -EAGAIN)
                return submit_fail(err, 400, field, "%s", refused);
        if (!j->cwd)
                return submit_fail(err, 400, "cwd", "cwd: required (the directory the job runs in)");
        if (check_paths(d, j, err) < 0)
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
        /* The features' checks (quotas, the booking, the idle profile) and the dependency's. */
        return gw_lifecycle_check_submit(d, j, ahead, err);
}

int gw_job_validate(struct gw_daemon *d, struct gw_job *j, bool hold, size_t ahead, struct gw_submit_error *err) {
        int r = validate(d, j, ahead, err);
        if (r < 0)
                return r;
        j->state = hold ? GW_JOB_HELD : GW_JOB_PENDING;
        j->wait_reason = hold ? GW_REASON_HELD : j->after_job > 0 ? GW_REASON_DEPENDENCY : GW_REASON_RESOURCES;
        j->submit_time = d->now_wall;
        j->attempt = 1;
        if (!j->name || !j->name[0]) {
                free(j->name);
                const char *slash = strrchr(j->argv[0], '/');
                j->name = gw_xstrdup(slash ? slash + 1 : j->argv[0]);
        }
        return 0;
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
