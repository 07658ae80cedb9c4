/* Restore: a snapshot copied back to a path the job's user names, as that user.
 *
 * The copy is the user's business, not the loop's: the target may be a FIFO nobody reads, a
 * file on a hung network mount, or simply tens of gigabytes.  So a forked helper does all of
 * it (it drops to the user's uid/gid before it opens anything, so the kernel decides what the
 * user may write) and the loop never waits on it: the request is suspended, the helper's exit
 * (reaped with every other child) resumes it, and the outcome is an event on the job either
 * way, so it is known even when the caller went away.  The helper refuses a target that is
 * not a regular file (opened O_NONBLOCK, so a FIFO without a reader cannot hold it in open),
 * and one that takes longer than RESTORE_MAX is killed. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "api/http.h"
#include "base/log.h"
#include "base/text.h"
#include "daemon/http/handlers.h"
#include "daemon/training/training_int.h"
#include "daemon/life/jobs.h"
#include "daemon/training/training.h"
#include "store/snapshots.h"

#define BUF_SIZE (1u << 20)
/* Snapshots are at most 64 GiB: at 100 MB/s that is 11 minutes. */
#define RESTORE_MAX (30 * 60 * GW_USEC_PER_SEC)

struct gw_restore {
        struct gw_restore *next;
        pid_t pid;
        int fd; /* the helper's report pipe (read end, non-blocking) */
        int64_t job_id;
        struct gw_store_snapshot snap;
        char *path, *user;
        gw_usec_t deadline; /* monotonic */
        bool killed; /* past the deadline */
        bool done;
        struct gw_http_conn *conn; /* the suspended request; NULL once it went away */
        int status; /* the HTTP status of the outcome, once done */
        char why[4400];
};

/* The restores in progress.  Training keeps its daemon-wide state in its own files, as the
 * prediction's caches do (training_predict.c): one daemon per process, and the helpers' list
 * is this file's alone. */
static struct gw_restore *restores;

/* In the forked helper: become the job's user, then write the copy.  Returns 0 or an errno;
 * EBADMSG when the bytes written do not hash to sha, EINVAL for a target not a regular file. */
static int helper_copy(const struct gw_job *j, int src, const char *path, bool force, const char *sha) {
        if (geteuid() == 0 && j->uid != 0) {
                gid_t gid = (gid_t) j->gid;
                if (setgroups(1, &gid) < 0 || setgid(gid) < 0 || setuid((uid_t) j->uid) < 0)
                        return errno;
        }
        umask(022);
        struct stat st;
        /* Not even opened when it is something else: opening a device may do things. */
        if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
                return S_ISLNK(st.st_mode) ? ELOOP : S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        /* O_NONBLOCK: a FIFO swapped in since is ENXIO without a reader, never a wait. */
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | (force ? 0 : O_EXCL),
                      0644);
        if (fd < 0)
                return errno == ENXIO ? EINVAL : errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fcntl(fd, F_SETFL, 0) < 0 || ftruncate(fd, 0) < 0) {
                (void) close(fd);
                return EINVAL;
        }
        static char buf[BUF_SIZE];
        struct gw_sha256 c;
        gw_sha256_init(&c);
        ssize_t n;
        int err = 0;
        while ((n = read(src, buf, sizeof buf)) > 0) {
                gw_sha256_update(&c, buf, (size_t) n);
                if (write(fd, buf, (size_t) n) != n) {
                        err = errno ? errno : EIO;
                        break;
                }
        }
        if (n < 0)
                err = errno;
        uint8_t digest[GW_SHA256_DIGEST_SIZE];
        char hex[GW_SHA256_HEX_SIZE];
        gw_sha256_final(&c, digest);
        gw_hex_encode(digest, sizeof digest, hex);
        if (!err && strcmp(hex, sha))
                err = EBADMSG;
        if (!err && fsync(fd) < 0)
                err = errno;
        if (close(fd) < 0 && !err)
                err = errno;
        if (err)
                (void) unlink(path);
        return err;
}

/* The helper keeps only the two descriptors it copies with: not the daemon's sockets, nor the
 * channels of idle supervisors, which would otherwise outlive a daemon that died mid-copy. */
static void keep_only(int a, int b) {
        int lo = a < b ? a : b, hi = a < b ? b : a;
        if (lo > 3)
                (void) close_range(3, (unsigned) lo - 1, 0);
        if (hi > lo + 1)
                (void) close_range((unsigned) lo + 1, (unsigned) hi - 1, 0);
        (void) close_range((unsigned) hi + 1, ~0U, 0);
}

static struct gw_restore *restore_free(struct gw_restore *r) {
        if (!r)
                return NULL;
        if (r->fd >= 0)
                (void) close(r->fd);
        free(r->path);
        free(r->user);
        free(r);
        return NULL;
}

static void unlink_restore(struct gw_restore *r) {
        for (struct gw_restore **p = &restores; *p; p = &(*p)->next)
                if (*p == r) {
                        *p = r->next;
                        return;
                }
}

int gw_train_restore_start(struct gw_daemon *d, const struct gw_job *j, int seq, const char *path, bool force,
                           struct gw_http_conn *conn, char *why, size_t n) {
        struct gw_store_snapshot s;
        int r = gw_store_snapshot_get(d->store, j->id, seq, &s);
        if (r < 0 || s.pruned) {
                snprintf(why, n, "job %lld has no snapshot %d%s (gpuward snapshots %lld)", (long long) j->id, seq,
                         r == 0 ? " any more: the retention removed it" : "", (long long) j->id);
                return -ENOENT;
        }
        _cleanup_close_ int src = open(s.path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        int pfd[2];
        if (src < 0 || pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0) {
                snprintf(why, n, "cannot open snapshot %d: %m", seq);
                return -EIO;
        }
        pid_t pid = fork();
        if (pid < 0) {
                (void) close(pfd[0]);
                (void) close(pfd[1]);
                snprintf(why, n, "cannot fork the copying helper: %m");
                return -EIO;
        }
        if (pid == 0) {
                (void) close(pfd[0]);
                keep_only(src, pfd[1]);
                int err = helper_copy(j, src, path, force, s.sha256);
                (void) !write(pfd[1], &err, sizeof err);
                _exit(err ? 1 : 0);
        }
        (void) close(pfd[1]);
        struct gw_restore *rs = gw_xcalloc(1, sizeof *rs);
        *rs = (struct gw_restore){ .next = restores,
                                   .pid = pid,
                                   .fd = pfd[0],
                                   .job_id = j->id,
                                   .snap = s,
                                   .path = gw_xstrdup(path),
                                   .user = gw_xstrdup(j->user),
                                   .deadline = d->now + RESTORE_MAX,
                                   .conn = conn };
        restores = rs;
        log_info("job %lld: restoring snapshot %d to %s as %s (helper pid %d)", (long long) j->id, seq, path, j->user,
                 (int) pid);
        return 0;
}

/* The outcome of the helper's errno, naming the target as p: into why, and r->status. */
static void outcome(struct gw_restore *r, int err, const char *p, char *why, size_t n) {
        const struct gw_store_snapshot *s = &r->snap;
        r->status = 400;
        switch (err) {
        case 0:
                r->status = 200;
                snprintf(why, n, "snapshot %d (%s, epoch %ld, sha256 %.12s) written to %s as %s", s->seq, s->kind,
                         s->epoch, s->sha256, p, r->user);
                break;
        case EEXIST:
                r->status = 409;
                snprintf(why, n, "%s exists; --force overwrites it", p);
                break;
        case EACCES:
        case EPERM:
        case EROFS:
                r->status = 403;
                snprintf(why, n, "%s may not write %s", r->user, p);
                break;
        case ENOENT:
        case ENOTDIR:
                snprintf(why, n, "%s: no such directory", p);
                break;
        case ELOOP:
                r->status = 403;
                snprintf(why, n, "%s is a symbolic link: not followed", p);
                break;
        case EISDIR:
        case EINVAL:
                snprintf(why, n, "%s is not a regular file (a FIFO, device, socket or directory): not written", p);
                break;
        case EBADMSG:
                r->status = 500;
                snprintf(why, n, "the copy of snapshot %d does not match its sha256 %.12s: not written", s->seq,
                         s->sha256);
                break;
        case ETIMEDOUT:
                r->status = 500;
                snprintf(why, n, "writing %s took longer than %d minutes: stopped, the file may be incomplete", p,
                         (int) (RESTORE_MAX / GW_USEC_PER_SEC / 60));
                break;
        default:
                r->status = 500;
                snprintf(why, n, "writing %s failed: %s", p, strerror(err));
        }
}

bool gw_train_restore_reaped(struct gw_daemon *d, pid_t pid, int status) {
        struct gw_restore *r = restores;
        while (r && r->pid != pid)
                r = r->next;
        if (!r)
                return false;
        int err = EIO;
        if (read(r->fd, &err, sizeof err) != (ssize_t) sizeof err)
                err = r->killed ? ETIMEDOUT : EIO;
        outcome(r, err, r->path, r->why, sizeof r->why);
        r->done = true;
        r->pid = 0;
        if (err)
                log_info("job %lld: restore of snapshot %d failed (helper %s %d): %s", (long long) r->job_id,
                         r->snap.seq, WIFSIGNALED(status) ? "signal" : "exit",
                         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), r->why);
        else
                log_info("job %lld: restore: %s", (long long) r->job_id, r->why);
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *j = gw_job_lookup(d, r->job_id, &tmp);
        /* The target is a path of the user's: on the job's events, for its owner and admins only
         * (base/text.h), as guests see none of the job's paths. */
        char path[4200], why[4400], msg[4500];
        outcome(r, err, gw_text_private_wrap(path, sizeof path, r->path), why, sizeof why);
        snprintf(msg, sizeof msg, "%s%s", err ? "restore failed: " : "", why);
        if (j && gw_store_job_event(d->store, r->job_id, j->state, "restore", msg) < 0)
                log_warn("job %lld: cannot record the restore's outcome: %s", (long long) r->job_id,
                         gw_store_errmsg(d->store));
        if (r->conn)
                gw_http_conn_resume(r->conn);
        else {
                unlink_restore(r);
                restore_free(r);
        }
        return true;
}

gw_usec_t gw_train_restore_tick(struct gw_daemon *d) {
        gw_usec_t next = GW_USEC_INFINITY;
        for (struct gw_restore *r = restores; r; r = r->next) {
                if (r->done || r->killed)
                        continue;
                if (d->now >= r->deadline) {
                        log_warn("job %lld: restore of snapshot %d to %s still running after %d minutes: killing "
                                 "helper pid %d",
                                 (long long) r->job_id, r->snap.seq, r->path,
                                 (int) (RESTORE_MAX / GW_USEC_PER_SEC / 60), (int) r->pid);
                        (void) kill(r->pid, SIGKILL);
                        r->killed = true;
                } else if (r->deadline < next)
                        next = r->deadline;
        }
        return next;
}

void gw_train_restore_conn_gone(struct gw_daemon *d, struct gw_http_conn *conn) {
        for (struct gw_restore *r = restores; r; r = r->next)
                if (r->conn == conn) {
                        r->conn = NULL;
                        if (r->done) {
                                unlink_restore(r);
                                restore_free(r);
                        }
                        return;
                }
}

int gw_train_restore_take(struct gw_daemon *d, struct gw_http_conn *conn, int *ret_seq, char *to, size_t to_n,
                          char *why, size_t n) {
        for (struct gw_restore *r = restores; r; r = r->next)
                if (r->conn == conn && r->done) {
                        int status = r->status;
                        *ret_seq = r->snap.seq;
                        snprintf(to, to_n, "%s", r->path);
                        snprintf(why, n, "%s", r->why);
                        unlink_restore(r);
                        restore_free(r);
                        return status;
                }
        return -ENOENT;
}

void gw_train_restore_free_all(struct gw_daemon *d) {
        while (restores) {
                struct gw_restore *r = restores;
                restores = r->next;
                restore_free(r);
        }
}
