#include "daemon/training/resume.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "core/ckpt.h"
#include "core/scratch.h"
#include "daemon/training/training.h"
#include "daemon/training/training_int.h"
#include "daemon/base/userfile.h"

#define CKPT_TAIL (128 * 1024)
#define CKPT_MAX_READ (64u << 20)

/* Whether the file at path is a complete checkpoint (a .pt file is a zip archive: a kill
 * mid-write leaves it without its central directory).  The daemon reads as root: only a
 * regular file of the job's user's, never through a symlink. */
int gw_resume_ckpt_whole(const struct gw_job *j, const char *path, struct stat *ret_st, char *why, size_t n) {
        struct stat st;
        _cleanup_close_ int fd = gw_user_file_open(j, path, true, O_RDONLY, &st);
        if (fd < 0) {
                snprintf(why, n, "%s: not a regular file of %s's", path, j->user ? j->user : "the job's user");
                return fd;
        }
        if (ret_st)
                *ret_st = st;
        size_t len = (size_t) (st.st_size < CKPT_TAIL ? st.st_size : CKPT_TAIL);
        char reason[200];
        uint8_t head[4];
        size_t head_len = pread(fd, head, sizeof head, 0) == (ssize_t) sizeof head ? sizeof head : 0;
        /* Two rounds at most: the end records say how much of the file the central directory
         * needs; a huge one is taken as complete once its end records are consistent. */
        for (int round = 0; round < 2; round++) {
                _cleanup_free_ uint8_t *buf = gw_xmalloc(len ? len : 1);
                if (pread(fd, buf, len, st.st_size - (off_t) len) != (ssize_t) len) {
                        snprintf(why, n, "%s: cannot read it", path);
                        return -EIO;
                }
                int r = gw_ckpt_check_file(head, head_len, buf, len, (uint64_t) st.st_size, reason, sizeof reason);
                if (r < 0) {
                        snprintf(why, n, "%s: %s", path, reason);
                        return -EBADMSG;
                }
                uint64_t want;
                if (r == 0 || gw_ckpt_tail_wanted(buf, len, (uint64_t) st.st_size, &want) < 0 || want > CKPT_MAX_READ)
                        return 0;
                len = (size_t) want;
        }
        return 0;
}

static bool ckpt_complete(const struct gw_job *j, const char *path, char *why, size_t n) {
        return gw_resume_ckpt_whole(j, path, NULL, why, n) == 0;
}

static void join(char *buf, size_t n, const char *a, const char *b) {
        if (b[0] == '/')
                snprintf(buf, n, "%s", b);
        else
                snprintf(buf, n, "%s/%s", a, b);
}

/* RUN/weights/last.pt if it is whole, else RUN/weights/best.pt if that is (last.pt is
 * overwritten in place: a kill mid-write tears it; best.pt is older but whole). */
static char *whole_weights(const struct gw_job *j, const char *last, char *why, size_t n) {
        if (ckpt_complete(j, last, why, n))
                return gw_xstrdup(last);
        char alt[4400], why2[512];
        snprintf(alt, sizeof alt, "%.*s/best.pt", (int) (strrchr(last, '/') - last), last);
        if (ckpt_complete(j, alt, why2, sizeof why2)) {
                size_t used = strlen(why);
                snprintf(why + used, n - used, "; using %s instead", alt);
                return gw_xstrdup(alt);
        }
        return NULL;
}

/* The weights of the run whose results.csv is `results`. */
static char *own_run_weights(const struct gw_job *j, const char *results, char *why, size_t n) {
        char last[4400];
        snprintf(last, sizeof last, "%.*s/weights/last.pt", (int) (strrchr(results, '/') - results), results);
        struct stat st;
        if (gw_user_file_stat(j, last, &st))
                return whole_weights(j, last, why, n);
        snprintf(why, n, "no weights/last.pt in its run %.*s", (int) (strrchr(results, '/') - results), results);
        return NULL;
}

/* RUN/weights/last.pt if this attempt wrote it: written since the attempt began (since), in
 * a run begun since then where the file system says (a resumed run's folder is older: its
 * checkpoint names it), and not another live job's run.  Its stat in *st. */
static bool last_pt_ours(const struct gw_daemon *d, const struct gw_job *j, const char *run, gw_usec_t since,
                         bool resumed, char *path, size_t n, struct stat *st) {
        char results[4400];
        snprintf(path, n, "%s/weights/last.pt", run);
        if (!gw_user_file_stat(j, path, st))
                return false; /* nor does anyone else's file name get out */
        if (gw_file_mtime_us(st) + GW_USEC_PER_SEC < since)
                return false; /* an older run's, not this job's */
        gw_usec_t born = resumed ? 0 : gw_file_birth_us(run); /* 0: not kept here */
        if (born > 0 && born + GW_USEC_PER_SEC < since)
                return false; /* a run begun before this job: someone else's, still written */
        snprintf(results, sizeof results, "%s/results.csv", run);
        return !(d && gw_train_results_taken(d, j, results));
}

/* The newest RUN/weights/last.pt this attempt wrote among the runs its command names
 * (PROJECT/NAME, NAME2 ...; each task folder of runs/ when the task is not known), in a run
 * no other live job could have made by its own command. */
static void scan_named(const struct gw_daemon *d, const struct gw_job *j, const char *dir, const char *name,
                       gw_usec_t since, char *best, size_t n, struct timespec *best_mtime) {
        DIR *dd = opendir(dir);
        struct dirent *de;
        while (dd && (de = readdir(dd))) {
                char run[4400], path[4400];
                struct stat st;
                if (de->d_name[0] == '.' || !gw_yolo_name_matches(de->d_name, name))
                        continue;
                snprintf(run, sizeof run, "%s/%s", dir, de->d_name);
                if (!last_pt_ours(d, j, run, since, false, path, sizeof path, &st) ||
                    (d && gw_train_others_could_own(d, j, run)))
                        continue;
                if (st.st_mtim.tv_sec > best_mtime->tv_sec ||
                    (st.st_mtim.tv_sec == best_mtime->tv_sec && st.st_mtim.tv_nsec > best_mtime->tv_nsec)) {
                        *best_mtime = st.st_mtim;
                        snprintf(best, n, "%s", path);
                }
        }
        if (dd)
                closedir(dd);
}

static void scan_named_base(const struct gw_daemon *d, const struct gw_job *j, const struct gw_yolo_run *r,
                            gw_usec_t since, char *best, size_t n) {
        struct timespec mtime = { 0 };
        if (!r->any_task) {
                scan_named(d, j, r->base, r->name, since, best, n, &mtime);
                return;
        }
        DIR *dd = opendir(r->base);
        struct dirent *de;
        while (dd && (de = readdir(dd))) {
                char task[4400];
                if (de->d_name[0] == '.')
                        continue;
                snprintf(task, sizeof task, "%s/%s", r->base, de->d_name);
                scan_named(d, j, task, r->name, since, best, n, &mtime);
        }
        if (dd)
                closedir(dd);
}

/* The last.pt this attempt wrote in its own run: the one folder its own evidence names
 * (core/yolo_run.h gw_yolo_own_dir: the folder its log says it saves to, the checkpoint it
 * resumed, or PROJECT/NAME with exist_ok), else among the runs its command names the one no
 * other job could have made.  A command that names no run: none, never the newest run next
 * to it. */
static char *own_last_pt(const struct gw_daemon *d, const struct gw_job *j, gw_usec_t since, char *why, size_t n) {
        struct gw_yolo_run r;
        char dir[GW_YOLO_PATH_MAX], path[GW_YOLO_PATH_MAX + 32] = "";
        if (gw_train_resolve_run(j, true, &r) < 0) {
                snprintf(why, n, "its command's run folder is too long a path");
                return NULL;
        }
        if (gw_yolo_own_dir(&r, dir, sizeof dir) == 0) {
                char shared[GW_YOLO_PATH_MAX];
                if (j->scratch_dir && gw_scratch_map(dir, j->scratch_dir, j->cwd, shared, sizeof shared) > 0)
                        snprintf(dir, sizeof dir, "%s", shared);
                bool resumed = r.evidence == GW_YOLO_CHECKPOINT || r.resumed;
                struct stat st;
                if (!last_pt_ours(d, j, dir, since, resumed, path, sizeof path, &st))
                        path[0] = '\0';
        } else if (r.evidence == GW_YOLO_NAMED) {
                snprintf(dir, sizeof dir, "%s", r.base);
                scan_named_base(d, j, &r, since, path, sizeof path);
        } else {
                snprintf(why, n,
                         "no run folder is this job's: its log says no \"Logging results to\", and its "
                         "command resumes no checkpoint and names no run");
                return NULL;
        }
        if (!path[0]) {
                /* Worded alike whether or not a folder exists: that is not told either. */
                snprintf(why, n, "no weights/last.pt written by this job under %s", dir);
                return NULL;
        }
        return whole_weights(j, path, why, n);
}

static char *newest_glob(const struct gw_job *j, char *why, size_t n) {
        char pattern[4096];
        join(pattern, sizeof pattern, j->cwd, j->checkpoint);
        glob_t g;
        if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0) {
                snprintf(why, n, "no regular file of the job's user matches %s", pattern);
                return NULL;
        }
        const char *best = NULL;
        time_t best_t = 0;
        for (size_t i = 0; i < g.gl_pathc; i++) {
                struct stat st;
                /* glob reads directories as root: only the user's own files may come out of it. */
                if (gw_user_file_stat(j, g.gl_pathv[i], &st) && (!best || st.st_mtime >= best_t)) {
                        best = g.gl_pathv[i];
                        best_t = st.st_mtime;
                }
        }
        char *r = best ? gw_xstrdup(best) : NULL;
        if (!r)
                snprintf(why, n, "no regular file of the job's user matches %s", pattern);
        globfree(&g);
        return r;
}

/* A --scratch job's run is found where it writes, in its node-local folder, but resumes from
 * the copies in its shared folder (the cwd): that node's disk may be gone, and a retry gets a
 * new folder, into which the run is restored from the copies (daemon/scratch).  path (taken)
 * as it reads in the shared folder. */
static char *on_shared(const struct gw_job *j, char *path) {
        char buf[4400];
        if (!path || !j->scratch_dir || gw_scratch_map(path, j->scratch_dir, j->cwd, buf, sizeof buf) <= 0)
                return path;
        free(path);
        return gw_xstrdup(buf);
}

char *gw_resume_find(const struct gw_daemon *d, const struct gw_job *j, gw_usec_t since, char *why, size_t n) {
        why[0] = '\0';
        if (j->yolo) {
                _cleanup_free_ char *results = on_shared(j, d ? gw_train_find_results(d, j) : NULL);
                return results ? own_run_weights(j, results, why, n) : own_last_pt(d, j, since, why, n);
        }
        if (j->checkpoint)
                return newest_glob(j, why, n);
        /* A script calling Ultralytics' Python API (model.train()) rather than the yolo command:
         * its run is credited to it only on positive evidence (training awareness: its own log
         * said where it saves), and then RUN/weights/last.pt is its checkpoint, handed over in
         * GPUWARD_RESUME_FROM: its command cannot be rewritten as a yolo command's is, so the
         * script resumes by itself (README: two lines).  Nothing found: from scratch, as before. */
        _cleanup_free_ char *results = on_shared(j, d ? gw_train_find_results(d, j) : NULL);
        if (results)
                return own_run_weights(j, results, why, n);
        return NULL;
}

char *gw_resume_run_dir(const char *ckpt) {
        char *r = gw_xstrdup(ckpt);
        char *w = strstr(r, "/weights/");
        if (w)
                *w = '\0';
        return r;
}
