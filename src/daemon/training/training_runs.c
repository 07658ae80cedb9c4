/* Which run (Ultralytics' results.csv, its folder) is a job's, by the one rule every part of
 * the daemon uses (find_results below): the training watch, the idle watch (reclaim_gather.c)
 * and a retry's resume (resume.c) ask here, and each credits a run on the job's own evidence
 * only.
 *
 * The daemon runs as root and reads what the job's user controls: no symlink as the last
 * component, regular files only, and files in the user's domain must belong to the job's
 * user (another user's run directory is not this job's). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "core/progress.h"
#include "core/yolo_run.h"
#include "daemon/training/training_int.h"
#include "daemon/base/userfile.h"
#include "daemon/life/queue.h"

#define SCAN_MAX 512 /* directory entries looked at per directory */
#define LOG_END (128u << 10) /* read at each end of a log for where Ultralytics saves */

/* The job's log of this attempt, its head and (when longer) its tail: Ultralytics says where
 * it saves when training starts, near the head unless much came first (a download, a
 * dataset scan), and a job that trains twice says it again later.  NULL when there is none. */
static char *log_ends(const struct gw_job *j, size_t *ret_len) {
        struct stat st;
        if (!j->log_path)
                return NULL;
        _cleanup_close_ int fd = gw_user_file_open(j, j->log_path, j->output != NULL, O_RDONLY, &st);
        if (fd < 0)
                return NULL;
        uint64_t size = (uint64_t) st.st_size;
        size_t head = size < LOG_END ? (size_t) size : LOG_END;
        size_t tail = size <= 2 * (uint64_t) LOG_END ? (size_t) (size - head) : LOG_END;
        char *buf = gw_xmalloc(head + 1 + tail + 1);
        ssize_t n = head ? pread(fd, buf, head, 0) : 0;
        size_t len = n > 0 ? (size_t) n : 0;
        if (tail) {
                buf[len++] = '\n'; /* a line cut at the head's end is not joined to the tail's */
                n = pread(fd, buf + len, tail, (off_t) (size - tail));
                len += n > 0 ? (size_t) n : 0;
        }
        *ret_len = len;
        return buf;
}

int gw_train_resolve_run(const struct gw_job *j, bool with_log, struct gw_yolo_run *ret) {
        size_t len = 0;
        _cleanup_free_ char *log = with_log ? log_ends(j, &len) : NULL;
        struct gw_yolo_input in = { .argv = (const char *const *) j->argv,
                                    .argc = gw_strv_length(j->argv),
                                    .cwd = j->cwd,
                                    .log = log,
                                    .log_len = log ? len : 0,
                                    .yolo = j->yolo,
                                    .resume_from = j->resume_from };
        return gw_yolo_resolve(&in, ret);
}

/* The job's own results.csv as one of its watches already chose it for this attempt (the
 * training watch or the idle watch, whichever looked first): both then read the same run. */
static const char *chosen_results(const struct gw_daemon *d, const struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        const struct gw_train *t = gw_train_of(d, dj);
        const struct gw_train_pick *w = gw_keytab_get(&d->state.train_pick, (uint64_t) j->id);
        if (t && t->results_path && t->attempt == j->attempt && t->start_time == j->start_time)
                return t->results_path;
        if (w && w->path && w->attempt == j->attempt && w->start_time == j->start_time)
                return w->path;
        return NULL;
}

/* Whether this loop iteration already found that the attempt, ended, has no run. */
static bool none_now(const struct gw_daemon *d, const struct gw_job *j) {
        const struct gw_train_pick *w = gw_keytab_get(&d->state.train_pick, (uint64_t) j->id);
        return w && !w->path && w->attempt == j->attempt && w->start_time == j->start_time && w->none_at == d->now;
}

/* Replaces the job's pick with the attempt's answer: path (copied), or none found now. */
static void pick_put(struct gw_daemon *d, const struct gw_job *j, const char *path) {
        gw_train_pick_free(gw_keytab_take(&d->state.train_pick, (uint64_t) j->id));
        struct gw_train_pick *w = gw_xcalloc(1, sizeof *w);
        *w = (struct gw_train_pick){ .attempt = j->attempt,
                                     .start_time = j->start_time,
                                     .path = path ? gw_xstrdup(path) : NULL,
                                     .none_at = path ? 0 : d->now };
        gw_keytab_put(&d->state.train_pick, (uint64_t) j->id, w);
}

void gw_training_results_none(struct gw_daemon *d, const struct gw_djob *dj) { pick_put(d, dj->job, NULL); }

void gw_training_results_chosen(struct gw_daemon *d, const struct gw_djob *dj, const char *path) {
        const struct gw_job *j = dj->job;
        const struct gw_train_pick *w = gw_keytab_get(&d->state.train_pick, (uint64_t) j->id);
        if (w && w->path && w->attempt == j->attempt && w->start_time == j->start_time && !strcmp(w->path, path))
                return;
        pick_put(d, j, path);
}

void gw_train_pick_free(struct gw_train_pick *w) {
        if (w)
                free(w->path);
        free(w);
}

struct pick {
        const struct gw_daemon *d; /* NULL: other jobs' choices are not known */
        char path[4400];
        gw_usec_t mtime;
        gw_usec_t since; /* the attempt's start */
        bool reused; /* a file from before the attempt may still be its own */
};

static char *find_results(const struct gw_daemon *d, const struct gw_job *j);

/* Whether another live job of this daemon already has path as its run's: two jobs in one
 * directory never share a run (the first to find it keeps it).  ask: also the jobs whose
 * watches have not looked yet, found now (not from find_results itself, which they would
 * ask back). */
static bool claimed(const struct gw_daemon *d, const struct gw_job *j, const char *path, bool ask) {
        for (size_t i = 0; d && i < d->jobs.n_running; i++) {
                const struct gw_djob *o = d->jobs.running[i];
                if (o->job->id == j->id)
                        continue;
                const char *chosen = chosen_results(d, o);
                _cleanup_free_ char *found = chosen || !ask ? NULL : find_results(d, o->job);
                if ((chosen || found) && !strcmp(chosen ? chosen : found, path))
                        return true;
        }
        return false;
}

/* Whether path is the attempt's that began at since: a regular file of the job's user's,
 * written since then and, unless its run is reused (a resumed or exist_ok run's file is
 * older: only its new rows count), created since then too; and no other live job's choice.
 * *ret_mtime: its mtime, when it is. */
static bool results_ours(const struct gw_daemon *d, const struct gw_job *j, const char *path, gw_usec_t since,
                         bool reused, gw_usec_t *ret_mtime) {
        struct stat st;
        if (!gw_user_file_stat(j, path, &st))
                return false;
        gw_usec_t t = gw_file_mtime_us(&st);
        if (!gw_run_results_fresh(since, t, reused ? 0 : gw_file_birth_us(path), reused) || claimed(d, j, path, false))
                return false;
        *ret_mtime = t;
        return true;
}

/* Whether o, another job that runs or waits for its retry, could have made the run folder dir
 * by what its command says (core/yolo_run.h).  Its paths are joined to its own cwd: a job in
 * another folder whose project= points here counts too. */
static bool could_own(const struct gw_job *j, const struct gw_job *o, const char *dir) {
        struct gw_yolo_run r;
        if (o->id == j->id)
                return false;
        if (gw_train_resolve_run(o, false, &r) < 0)
                return true; /* not known: not ruled out */
        return r.training && gw_yolo_could_own(&r, dir);
}

bool gw_train_others_could_own(const struct gw_daemon *d, const struct gw_job *j, const char *dir) {
        for (size_t i = 0; d && i < d->jobs.n_running; i++)
                if (could_own(j, d->jobs.running[i]->job, dir))
                        return true;
        for (size_t i = 0; d && i < d->jobs.n_queue; i++)
                if (d->jobs.queue[i]->job->attempt > 1 && could_own(j, d->jobs.queue[i]->job, dir))
                        return true;
        return false;
}

static bool others_could_own(const struct gw_daemon *d, const struct gw_job *j, const char *results) {
        char dir[4400];
        snprintf(dir, sizeof dir, "%s", results);
        char *slash = strrchr(dir, '/');
        if (slash)
                *slash = '\0';
        return gw_train_others_could_own(d, j, dir);
}

/* path, when it is the attempt's, newer than the pick so far, and no other job could have
 * made its run. */
static void consider(const struct gw_job *j, const char *path, struct pick *pk) {
        gw_usec_t t;
        if (!results_ours(pk->d, j, path, pk->since, pk->reused, &t) || t <= pk->mtime ||
            others_could_own(pk->d, j, path))
                return;
        pk->mtime = t;
        snprintf(pk->path, sizeof pk->path, "%s", path);
}

/* DIR/E/results.csv for each entry E that the run could be (NAME, NAME2 ... when named). */
static void scan_runs(const struct gw_job *j, const char *dir, const char *name, struct pick *pk) {
        DIR *dd = opendir(dir);
        struct dirent *de;
        for (size_t k = 0; dd && k < SCAN_MAX && (de = readdir(dd)); k++) {
                char path[4400];
                if (de->d_name[0] == '.' || !gw_yolo_name_matches(de->d_name, name))
                        continue;
                snprintf(path, sizeof path, "%s/%s/results.csv", dir, de->d_name);
                consider(j, path, pk);
        }
        if (dd)
                closedir(dd);
}

/* The run folders the command could make: base/NAME*, or with the task not known each
 * base/TASK/NAME* (Ultralytics: runs/detect, runs/segment ...; YOLOv5: runs/train). */
static void scan_base(const struct gw_job *j, const struct gw_yolo_run *r, struct pick *pk) {
        if (!r->any_task) {
                scan_runs(j, r->base, r->name, pk);
                return;
        }
        DIR *dd = opendir(r->base);
        struct dirent *de;
        for (size_t k = 0; dd && k < SCAN_MAX && (de = readdir(dd)); k++) {
                char task[4400];
                if (de->d_name[0] == '.')
                        continue;
                snprintf(task, sizeof task, "%s/%s", r->base, de->d_name);
                scan_runs(j, task, r->name, pk);
        }
        if (dd)
                closedir(dd);
}

/* The run's results.csv, by the one rule every part of the daemon uses: a run is credited to
 * a job only on its own evidence (core/yolo_run.h):
 *   - the one folder it names (gw_yolo_own_dir): where its own log says it saves
 *     ("Logging results to", printed before the first epoch whatever runs the training: a
 *     yolo command, `sh -c`, a script calling model.train()), else the checkpoint its command
 *     resumes, else PROJECT/NAME with exist_ok;
 *   - else, when its command names its run (PROJECT/NAME, NAME2 ...), the one created during
 *     this attempt that no other live job could have made by its own command;
 *   - a command that names no run is credited none: never the newest run next to it;
 *   - a file only once written during this attempt, and never one another live job of d has
 *     chosen; with d, what one of the job's watches already chose.
 * NULL until such a file exists.  Malloc'ed. */
static char *find_results(const struct gw_daemon *d, const struct gw_job *j) {
        struct gw_yolo_run r;
        char dir[GW_YOLO_PATH_MAX];
        if (j->start_time <= 0)
                return NULL;
        const struct gw_djob *self = d ? gw_jobmap_get(&d->jobs.map, j->id) : NULL;
        if (self && self->job->attempt == j->attempt && chosen_results(d, self))
                return gw_xstrdup(chosen_results(d, self));
        if (d && none_now(d, j))
                return NULL;
        if (gw_train_resolve_run(j, true, &r) < 0 || !r.training)
                return NULL;
        if (gw_yolo_own_dir(&r, dir, sizeof dir) == 0) {
                char path[GW_YOLO_PATH_MAX + 16];
                snprintf(path, sizeof path, "%s/results.csv", dir);
                gw_usec_t mtime;
                return results_ours(d, j, path, j->start_time, true, &mtime) ? gw_xstrdup(path) : NULL;
        }
        if (r.evidence != GW_YOLO_NAMED)
                return NULL;
        struct pick pk = { .d = d, .since = j->start_time, .reused = r.exist_ok };
        scan_base(j, &r, &pk);
        return pk.path[0] ? gw_xstrdup(pk.path) : NULL;
}

char *gw_train_find_results(const struct gw_daemon *d, const struct gw_job *j) { return find_results(d, j); }

/* A job failing a moment after another started: a failure is rare enough to ask now. */
bool gw_train_results_taken(const struct gw_daemon *d, const struct gw_job *j, const char *results) {
        return claimed(d, j, results, true);
}
