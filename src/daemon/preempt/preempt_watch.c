/* The checkpoint watch of a preempted training run (preempt_watch.h).
 *
 * One inotify descriptor serves every watch, made with the first and closed with the last:
 * its gw_source is this file's and outlives any watch, so that an event already taken from
 * epoll for a watch freed meanwhile (its job ended in the same loop iteration) reads nothing
 * freed.  Which watch an event is for does not matter: any change of a watched file has every
 * waiting victim looked at (a few stats each; there are few).  The directories are opened
 * first (O_PATH, no symlink, the job's user's) and watched through /proc/self/fd, so that the
 * watch is on the directory that was checked, not on whatever the path names a moment later. */
#include "daemon/preempt/preempt_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/progress.h"
#include "daemon/daemon.h"
#include "daemon/training/resume.h"
#include "daemon/base/userfile.h"

#define RESULTS_MAX (16u << 20) /* as the training watch: a larger results.csv is not read */
/* No IN_DONT_FOLLOW: the watch is added through /proc/self/fd/N, a link to the directory
 * opened with O_NOFOLLOW, which must be followed. */
#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_ONLYDIR)

struct gw_preempt_watch {
        char *run_dir;
        int wd_run, wd_weights; /* -1 none */
        bool counted; /* one of n_watches: holds the inotify descriptor open */
        /* results.csv as last read: only a changed file is parsed again */
        bool results_read;
        int64_t results_size;
        gw_usec_t results_mtime;
        long row_epoch;
        enum gw_preempt_best best;
};

static int ino_fd = -1;
static struct gw_source ino_src = { GW_SRC_PREEMPT, NULL };
static unsigned n_watches;

static int ino_open(struct gw_daemon *d) {
        if (ino_fd >= 0)
                return 0;
        ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (ino_fd < 0)
                return -errno;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &ino_src };
        if (epoll_ctl(d->loop.epfd, EPOLL_CTL_ADD, ino_fd, &ev) < 0) {
                int r = -errno;
                (void) close(ino_fd);
                ino_fd = -1;
                return r;
        }
        return 0;
}

/* An inotify watch on dir, a directory of j's user's reached without a symlink at its end,
 * or -errno. */
static int add_dir(const struct gw_job *j, const char *dir) {
        _cleanup_close_ int fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode) || !gw_user_owns(j, &st))
                return -EPERM;
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        int wd = inotify_add_watch(ino_fd, self, WATCH_MASK);
        return wd < 0 ? -errno : wd;
}

static void arm_weights(struct gw_preempt_watch *w, const struct gw_job *j) {
        if (w->wd_weights >= 0 || w->wd_run < 0)
                return;
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/weights", w->run_dir);
        int wd = add_dir(j, dir);
        if (wd >= 0)
                w->wd_weights = wd;
}

struct gw_preempt_watch *gw_preempt_watch_new(struct gw_daemon *d, const struct gw_job *j, const char *run_dir) {
        struct gw_preempt_watch *w = gw_xcalloc(1, sizeof *w);
        w->run_dir = gw_xstrdup(run_dir);
        w->wd_run = w->wd_weights = -1;
        w->row_epoch = -1;
        w->best = GW_PREEMPT_BEST_MAYBE;
        int r = ino_open(d);
        if (r == 0) {
                n_watches++;
                w->counted = true;
                r = add_dir(j, run_dir);
                w->wd_run = r >= 0 ? r : -1;
        }
        if (r < 0)
                log_info("job %lld: no inotify watch on %s (%s): its checkpoint is looked for once a second",
                         (long long) j->id, run_dir, strerror(-r));
        arm_weights(w, j);
        return w;
}

struct gw_preempt_watch *gw_preempt_watch_free(struct gw_preempt_watch *w) {
        if (!w)
                return NULL;
        if (w->counted) {
                /* A watch another victim shares (the same folder) goes with it: that one is
                 * still looked at once a second. */
                if (w->wd_weights >= 0)
                        (void) inotify_rm_watch(ino_fd, w->wd_weights);
                if (w->wd_run >= 0)
                        (void) inotify_rm_watch(ino_fd, w->wd_run);
                if (--n_watches == 0) {
                        (void) close(ino_fd); /* close takes it out of the epoll set */
                        ino_fd = -1;
                }
        }
        free(w->run_dir);
        free(w);
        return NULL;
}

bool gw_preempt_watch_is(const struct gw_preempt_watch *w, const char *run_dir) {
        return w && run_dir && !strcmp(w->run_dir, run_dir);
}

/* The newest row's epoch and whether best.pt follows it, from results.csv when it changed. */
static void read_results(struct gw_preempt_watch *w, const struct gw_job *j, struct gw_preempt_ckpt_look *l) {
        char path[4200];
        snprintf(path, sizeof path, "%s/results.csv", w->run_dir);
        struct stat st;
        if (!gw_user_file_stat(j, path, &st))
                return;
        gw_usec_t mtime = gw_file_mtime_us(&st);
        if (!w->results_read || st.st_size != w->results_size || mtime != w->results_mtime) {
                size_t len;
                _cleanup_free_ char *text = gw_user_file_tail(j, path, true, RESULTS_MAX, &st, &len);
                struct gw_results r;
                if (!text || (uint64_t) st.st_size > RESULTS_MAX || gw_results_parse(text, len, &r) < 0 || !r.n_rows)
                        return;
                double before = NAN;
                for (size_t i = 0; i + 1 < r.n_rows; i++) {
                        double f = gw_results_fitness(&r, i);
                        if (!isnan(f) && (isnan(before) || f > before))
                                before = f;
                }
                w->row_epoch = gw_results_epoch1(&r, r.n_rows - 1);
                w->best = gw_preempt_best_expected(gw_results_fitness(&r, r.n_rows - 1), before);
                gw_results_free(&r);
                w->results_read = true;
                w->results_size = st.st_size;
                w->results_mtime = mtime = gw_file_mtime_us(&st);
        }
        l->row_mtime = mtime;
        l->row_epoch = w->row_epoch;
        l->best = w->best;
}

static void look_file(const struct gw_preempt_watch *w, const struct gw_job *j, const char *name,
                      struct gw_preempt_ckpt_file *f) {
        char path[4200], why[512];
        snprintf(path, sizeof path, "%s/weights/%s", w->run_dir, name);
        struct stat st;
        int r = gw_resume_ckpt_whole(j, path, &st, why, sizeof why);
        if (r < 0 && r != -EBADMSG)
                return; /* none (or not the user's): not seen */
        *f = (struct gw_preempt_ckpt_file){ .seen = true, .complete = r == 0, .mtime = gw_file_mtime_us(&st) };
}

void gw_preempt_watch_look(struct gw_daemon *d, struct gw_preempt_watch *w, const struct gw_job *j, long total,
                           struct gw_preempt_ckpt_look *ret) {
        (void) d;
        *ret = (struct gw_preempt_ckpt_look){ .row_epoch = -1, .total = total, .best = GW_PREEMPT_BEST_MAYBE };
        arm_weights(w, j);
        /* results.csv first: a row appended between the looks makes last.pt older than it,
         * never the other way round. */
        read_results(w, j, ret);
        look_file(w, j, "last.pt", &ret->last);
        look_file(w, j, "best.pt", &ret->best_pt);
}

static bool relevant(const struct inotify_event *ev) {
        static const char *const names[] = { "last.pt", "best.pt", "results.csv", "weights" };
        if (ev->mask & (IN_Q_OVERFLOW | IN_IGNORED))
                return true; /* lost events, or a folder gone: look again */
        for (size_t i = 0; ev->len && i < ELEMENTSOF(names); i++)
                if (!strcmp(ev->name, names[i]))
                        return true;
        return false;
}

bool gw_preempt_watch_drain(void) {
        bool any = false;
        _Alignas(struct inotify_event) char buf[4096];
        for (int round = 0; ino_fd >= 0 && round < 64; round++) {
                ssize_t n = read(ino_fd, buf, sizeof buf);
                if (n <= 0)
                        break;
                for (ssize_t off = 0; off + (ssize_t) sizeof(struct inotify_event) <= n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) (buf + off);
                        any = any || relevant(ev);
                        off += (ssize_t) (sizeof *ev + ev->len);
                }
        }
        return any;
}
