/* Before a retry resumes from a checkpoint: the epoch the checkpoint itself holds (read from
 * its data.pkl, core/ckpt.h), and results.csv made to agree with it.  Ultralytics writes an
 * epoch's results.csv row before last.pt, so a kill between the two leaves a row the
 * checkpoint does not hold; the resumed run starts after the checkpoint's epoch and appends
 * that epoch's row again.  The rows past the checkpoint's epoch are moved to a file beside
 * results.csv (never dropped), so that the finished file holds each epoch once.
 *
 * Both files are the job's user's: they are written with that user's file-system identity
 * (daemon/base/asuser.h), created O_EXCL|O_NOFOLLOW in the run folder opened once, written
 * through the descriptor created, and results.csv is replaced by rename only while it is
 * still the file that was read (device and inode). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/userdb.h"
#include "core/ckpt.h"
#include "core/progress.h"
#include "daemon/base/asuser.h"
#include "daemon/daemon.h"
#include "daemon/training/resume.h"
#include "daemon/base/userfile.h"

#define RESULTS_MAX (16u << 20) /* as training.c reads it */
#define CKPT_DIR_MAX (64u << 20) /* a checkpoint's zip directory read at most */
#define ASIDE_TRIES 100

static int fail(char *why, size_t n, int err, const char *msg) {
        snprintf(why, n, "%s", msg);
        return err;
}

/* count bytes at off into a new buffer; NULL when they cannot all be read. */
static uint8_t *read_at(int fd, uint64_t off, size_t count) {
        uint8_t *buf = gw_xmalloc(count ? count : 1);
        size_t got = 0;
        while (got < count) {
                ssize_t r = pread(fd, buf + got, count - got, (off_t) (off + got));
                if (r <= 0) {
                        free(buf);
                        return NULL;
                }
                got += (size_t) r;
        }
        return buf;
}

/* The central directory's entry for data.pkl, from the file's end. */
static int find_pickle(int fd, uint64_t size, struct gw_ckpt_entry *e, char *why, size_t n) {
        size_t len = (size_t) (size < GW_CKPT_TAIL_LEN ? size : GW_CKPT_TAIL_LEN);
        _cleanup_free_ uint8_t *tail = read_at(fd, size - len, len);
        uint64_t want;
        if (!tail)
                return fail(why, n, -EIO, "cannot read it");
        if (gw_ckpt_tail_wanted(tail, len, size, &want) == 0 && want > len) {
                if (want > CKPT_DIR_MAX)
                        return fail(why, n, -E2BIG, "its zip directory is larger than 64 MiB");
                free(tail);
                len = (size_t) want;
                tail = read_at(fd, size - len, len);
                if (!tail)
                        return fail(why, n, -EIO, "cannot read it");
        }
        return gw_ckpt_find_pickle(tail, len, size, e, why, n);
}

int gw_resume_ckpt_epoch(const struct gw_job *j, const char *ckpt, long *ret_done, char *why, size_t n) {
        struct stat st;
        _cleanup_close_ int fd = gw_user_file_open(j, ckpt, true, O_RDONLY, &st);
        if (fd < 0)
                return fail(why, n, fd, "not a regular file of the job's user's");
        struct gw_ckpt_entry e;
        int r = find_pickle(fd, (uint64_t) st.st_size, &e, why, n);
        if (r < 0)
                return r;
        uint64_t lfh_len = (uint64_t) st.st_size - e.local_off, off;
        _cleanup_free_ uint8_t *lfh =
                read_at(fd, e.local_off, (size_t) (lfh_len < GW_CKPT_LOCAL_MAX ? lfh_len : GW_CKPT_LOCAL_MAX));
        if (!lfh)
                return fail(why, n, -EIO, "cannot read it");
        r = gw_ckpt_pickle_offset(lfh, (size_t) (lfh_len < GW_CKPT_LOCAL_MAX ? lfh_len : GW_CKPT_LOCAL_MAX), &e, &off,
                                  why, n);
        if (r < 0)
                return r;
        size_t len = (size_t) (e.size < GW_CKPT_PICKLE_READ ? e.size : GW_CKPT_PICKLE_READ);
        _cleanup_free_ uint8_t *pkl = read_at(fd, off, len);
        if (!pkl)
                return fail(why, n, -EIO, "cannot read it");
        long epoch;
        r = gw_ckpt_pickle_epoch(pkl, len, &epoch, why, n);
        if (r < 0)
                return r;
        if (epoch < 0) /* stripped at the end of training: it resumes nothing */
                return fail(why, n, -ENOENT, "a finished run's checkpoint (epoch -1)");
        *ret_done = epoch + 1;
        return 0;
}

/* Writes len bytes of text to a new file name in dir, as the process's file identity.  0, or
 * -EEXIST (the name is taken), -errno. */
static int write_new(int dir, const char *name, const char *text, size_t len, mode_t mode) {
        int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
        if (fd < 0)
                return -errno;
        int r = gw_write_all(fd, text, len) < 0 || fsync(fd) < 0 ? -errno : 0;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(dir, name, 0);
        return r;
}

/* results.csv.after-epoch-K.gpuward, or .2, .3 ... when an earlier retry took that name. */
static int write_aside(int dir, long done, const struct gw_results_split *sp, mode_t mode, char *name, size_t n) {
        for (int k = 1; k <= ASIDE_TRIES; k++) {
                if (k == 1)
                        snprintf(name, n, "results.csv.after-epoch-%ld.gpuward", done);
                else
                        snprintf(name, n, "results.csv.after-epoch-%ld.%d.gpuward", done, k);
                int r = write_new(dir, name, sp->aside, sp->aside_len, mode);
                if (r != -EEXIST)
                        return r;
        }
        return -EEXIST;
}

/* In the run folder dir, as the job's user: results.csv split at done, the rows past it
 * written aside, then the rest renamed over it.  0 and *ret_rows (0: nothing to move). */
static int split_results(int dir, long done, size_t *ret_rows, char *aside, size_t an, char *why, size_t n) {
        struct stat st, now;
        _cleanup_close_ int fd = openat(dir, "results.csv", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_size > RESULTS_MAX)
                return fail(why, n, -EINVAL, "results.csv: not a regular file under 16 MiB");
        _cleanup_free_ char *text = (char *) read_at(fd, 0, (size_t) st.st_size);
        struct gw_results_split sp = { 0 };
        if (!text || gw_results_split(text, (size_t) st.st_size, done, &sp) < 0)
                return fail(why, n, -EBADMSG, "results.csv: cannot read it as a results file");
        int r = 0;
        *ret_rows = sp.n_aside;
        if (sp.n_aside == 0)
                goto out;
        r = write_aside(dir, done, &sp, st.st_mode & 0777, aside, an);
        if (r < 0) {
                snprintf(why, n, "cannot write results.csv's rows past it beside it: %s", strerror(-r));
                goto out;
        }
        char tmp[64];
        snprintf(tmp, sizeof tmp, ".results.csv.gpuward-%d.tmp", (int) getpid());
        (void) unlinkat(dir, tmp, 0); /* a dead daemon's: ours by name */
        r = write_new(dir, tmp, sp.kept, sp.kept_len, st.st_mode & 0777);
        /* Replaced only while it is still the file read: the rows aside are then its own. */
        if (r == 0 && (fstatat(dir, "results.csv", &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != st.st_dev ||
                       now.st_ino != st.st_ino || now.st_size != st.st_size))
                r = -ESTALE;
        if (r == 0 && renameat(dir, tmp, dir, "results.csv") < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(dir, tmp, 0);
                (void) unlinkat(dir, aside, 0); /* a copy: the rows are still in results.csv */
                snprintf(why, n, "cannot rewrite results.csv: %s", strerror(-r));
        }
out:
        gw_results_split_free(&sp);
        return r;
}

int gw_resume_results_agree(const struct gw_daemon *d, const struct gw_job *j, const char *ckpt, long done, char *said,
                            size_t n) {
        said[0] = '\0';
        if (!strstr(ckpt, "/weights/"))
                return 0; /* not an Ultralytics run's: no results.csv of its own */
        _cleanup_free_ char *run = gw_resume_run_dir(ckpt);
        const struct gw_account *a = j->uid && d->loop.euid == 0 ? gw_userdb_uid(d->users, j->uid, d->now) : NULL;
        int r = gw_as_user_begin(j->uid, j->gid, a ? a->groups : NULL, a ? a->n_groups : 0);
        if (r < 0)
                return fail(said, n, r, "cannot act as its user");
        char aside[96] = "";
        size_t rows = 0;
        int dir = open(run, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct stat st;
        /* Only the user's own folder: their results.csv, not one they were given to write in. */
        if (dir < 0 || fstat(dir, &st) < 0 || !gw_user_owns(j, &st))
                r = fail(said, n, -EPERM, "its run folder is not its user's");
        else if (fstatat(dir, "results.csv", &st, AT_SYMLINK_NOFOLLOW) < 0)
                r = 0; /* no results.csv: nothing to agree */
        else
                r = split_results(dir, done, &rows, aside, sizeof aside, said, n);
        if (dir >= 0)
                (void) close(dir);
        gw_as_user_end();
        if (r == 0 && rows > 0)
                snprintf(said, n, "results.csv's %zu row%s past it set aside in %s", rows, rows == 1 ? "" : "s", aside);
        return r < 0 ? r : (int) (rows > 0);
}
