/* submit --scratch, the loop's side (scratch.h): the attempts' folders, the looks while a job
 * runs, the final sync, a retry's restore, and the events that tell them. */
#include "daemon/scratch/scratch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/userdb.h"
#include "core/jobrec.h"
#include "core/scratch.h"
#include "daemon/base/config.h"
#include "daemon/life/jobs.h"
#include "daemon/scratch/scratch_int.h"
#include "daemon/training/resume.h"
#include "store/store.h"

/* How long the loop waits for an end's sync or a retry's restore before it stops the helper:
 * a hung shared mount must not hold the daemon for good. */
#define SYNC_MAX (10 * 60 * GW_USEC_PER_SEC)
#define STOP_WAIT (5 * GW_USEC_PER_SEC)
/* A folder's name: INT64-INT-RANDOM (gw_scratch_name) and its NUL. */
#define NAME_SIZE 48

struct gw_scratch_job {
        struct gw_scratch_job *next;
        struct gw_djob *dj; /* NULL once the job is gone (its helper still to reap) */
        char name[NAME_SIZE]; /* under scratch_dir: JOB-ATTEMPT, on a cluster JOB-ATTEMPT-RANDOM (name_attempt) */
        char *dir; /* scratch_dir/name: the job's scratch_dir while it has one */
        pid_t pid; /* a look in flight, 0 none */
        int rfd; /* its report pipe, -1 none */
        struct gw_scratch_report report; /* its report, as it arrives */
        gw_usec_t next_look; /* monotonic */
        bool told_skip; /* a file the looks cannot copy was told once */
        bool told_fail; /* a look that could not start copying was told once */
        struct gw_scratch_told told; /* on a cluster: the step's lines read (scratch_told.c) */
};

/* The daemon's scratch_dir, opened once; one daemon per process, as training_restore.c keeps
 * its helpers. */
static struct {
        int fd; /* scratch_dir, -1 without one */
        /* backend = slurm: scratch_dir is each node's, where the job's step (scratch_step.c)
         * makes the folder, restores, copies and syncs; this daemon only names the folder. */
        bool on_nodes;
        struct gw_scratch_job *jobs;
} scratch = { .fd = -1 };

/* Whether jobs get scratch folders at all. */
static bool scratch_set(void) { return scratch.fd >= 0 || scratch.on_nodes; }

int gw_scratch_open(struct gw_daemon *d) {
        const char *dir = d->cfg->scratch_dir;
        if (!dir || !*dir)
                return 0;
        if (d->cfg->backend == GW_BACKEND_SLURM) { /* the nodes', not this host's */
                scratch.on_nodes = true;
                return 0;
        }
        if (mkdir(dir, 0711) < 0 && errno != EEXIST) {
                log_err("scratch_dir: %s: %s", dir, strerror(errno));
                return -errno;
        }
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                int e = errno;
                log_err("scratch_dir: %s: %s", dir, strerror(e));
                if (fd >= 0)
                        (void) close(fd);
                return -e;
        }
        /* Users make nothing directly under it: no name an attempt takes can be planted. */
        if (st.st_uid != geteuid() || fchmod(fd, 0711) < 0) {
                log_err("scratch_dir: %s: not the daemon's own folder", dir);
                (void) close(fd);
                return -EPERM;
        }
        scratch.fd = fd;
        return 0;
}

static struct gw_scratch_job *job_free(struct gw_scratch_job *sj) {
        if (!sj)
                return NULL;
        if (sj->rfd >= 0)
                (void) close(sj->rfd);
        free(sj->dir);
        free(sj);
        return NULL;
}

static void unlink_job(struct gw_scratch_job *sj) {
        for (struct gw_scratch_job **p = &scratch.jobs; *p; p = &(*p)->next)
                if (*p == sj) {
                        *p = sj->next;
                        return;
                }
}

/* Stops sj's look in flight and waits for it: an end's sync must not race it.  SIGTERM first:
 * the helper drops the copy under way with its temporary file; SIGKILL if it has not ended
 * within STOP_WAIT (a hung mount). */
static void stop_look(struct gw_scratch_job *sj) {
        if (sj->pid <= 0)
                return;
        (void) kill(sj->pid, SIGTERM);
        gw_usec_t deadline = gw_now_mono() + STOP_WAIT;
        while (waitpid(sj->pid, NULL, WNOHANG) == 0) {
                if (gw_now_mono() >= deadline) {
                        (void) kill(-sj->pid, SIGKILL);
                        (void) waitpid(sj->pid, NULL, 0);
                        break;
                }
                (void) poll(NULL, 0, 10);
        }
        sj->pid = 0;
        if (sj->rfd >= 0)
                (void) close(sj->rfd);
        sj->rfd = -1;
        sj->report.n = 0;
}

void gw_scratch_close(struct gw_daemon *d) {
        (void) d;
        while (scratch.jobs) {
                struct gw_scratch_job *sj = scratch.jobs;
                scratch.jobs = sj->next;
                stop_look(sj);
                if (sj->dj)
                        sj->dj->scratch = NULL;
                job_free(sj);
        }
        if (scratch.fd >= 0)
                (void) close(scratch.fd);
        scratch.fd = -1;
        scratch.on_nodes = false;
}

static int refuse(struct gw_submit_error *err, const char *msg) {
        err->status = 400;
        snprintf(err->field, sizeof err->field, "scratch");
        snprintf(err->message, sizeof err->message, "%s", msg);
        return -EINVAL;
}

int gw_scratch_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err) {
        (void) ahead;
        if (!j->scratch)
                return 0;
        if (d->cfg->backend == GW_BACKEND_SLURM)
                return scratch.on_nodes ? 0
                                        : refuse(err, "scratch: the nodes have no scratch folder (the admin must set "
                                                      "scratch_dir in gpuward.conf, a folder each node has)");
        if (gw_backend_placement(d) != GW_EXEC_PLACE_HERE)
                return refuse(err, "scratch: this daemon's jobs run on other hosts, where it copies nothing");
        if (scratch.fd < 0)
                return refuse(err, "scratch: this host has no scratch folder (the admin must set scratch_dir in "
                                   "gpuward.conf)");
        return 0;
}

/* The user's identity for a helper. */
static void as_user(struct gw_daemon *d, const struct gw_job *j, struct gw_scratch_copy *c, uint32_t *gid) {
        const struct gw_account *a = gw_userdb_uid(d->users, (uint32_t) j->uid, d->now);
        *gid = (uint32_t) j->gid;
        c->uid = (uid_t) j->uid;
        c->gid = (gid_t) j->gid;
        c->groups = a ? a->groups : gid;
        c->n_groups = a ? a->n_groups : 1;
}

static void event(struct gw_daemon *d, const struct gw_job *j, const char *msg) {
        if (gw_store_job_event(d->store, j->id, j->state, "scratch", msg) < 0)
                log_warn("job %lld: cannot record a scratch event: %s", (long long) j->id, gw_store_errmsg(d->store));
}

/* The first "S REL WHY" line of a report, or NULL; *ret_n: how many there are. */
static const char *first_skip(const char *report, size_t *ret_n, char *buf, size_t n) {
        const char *first = NULL;
        size_t count = 0;
        for (const char *p = report; *p;) {
                size_t l = strcspn(p, "\n");
                if (p[0] == 'S' && p[1] == ' ') {
                        if (!count++)
                                snprintf(buf, n, "%.*s", (int) (l - 2), p + 2), first = buf;
                }
                p += l + (p[l] == '\n');
        }
        *ret_n = count;
        return first;
}

/* Removes the attempt folder name: emptied by a helper as its user (it holds only their
 * files), then removed by us (it lies in our folder). */
static void remove_folder(struct gw_daemon *d, const struct gw_job *j, const char *dir, const char *name) {
        char report[256];
        uint32_t gid;
        struct gw_scratch_copy c = { .mode = GW_SCRATCH_SYNC, .src = dir };
        as_user(d, j, &c, &gid);
        (void) gw_scratch_copy_run(&c, SYNC_MAX, report, sizeof report);
        if (unlinkat(scratch.fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                log_warn("job %lld: cannot remove %s: %s", (long long) j->id, dir, strerror(errno));
}

/* Makes scratch_dir/name for j, its user's, 0700: 0, or -errno. */
static int make_folder(struct gw_daemon *d, const struct gw_job *j, const char *dir, const char *name) {
        if (mkdirat(scratch.fd, name, 0700) < 0) {
                if (errno != EEXIST)
                        return -errno;
                remove_folder(d, j, dir, name); /* a daemon that died left it */
                if (mkdirat(scratch.fd, name, 0700) < 0)
                        return -errno;
        }
        _cleanup_close_ int fd = openat(scratch.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st, again;
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        /* The folder we made, not one swapped in: the same inode under the name, ours. */
        if (fstatat(scratch.fd, name, &again, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != again.st_dev ||
            st.st_ino != again.st_ino || st.st_uid != geteuid())
                return -EPERM;
        if (geteuid() == 0 && fchown(fd, (uid_t) j->uid, (gid_t) j->gid) < 0)
                return -errno;
        return fchmod(fd, 0700) < 0 ? -errno : 0;
}

/* A retry resuming from a checkpoint in the shared folder: that checkpoint's run (RUN of
 * RUN/weights/X.pt, else the checkpoint's folder) copied to the same path in the new folder,
 * where jobs.c points the job at it. */
static void restore(struct gw_daemon *d, struct gw_scratch_job *sj) {
        struct gw_job *j = sj->dj->job;
        size_t l = strlen(j->cwd);
        if (!j->resume_from || strncmp(j->resume_from, j->cwd, l) || j->resume_from[l] != '/')
                return;
        char run[4400], msg[4800], report[GW_SCRATCH_REPORT_MAX];
        if (gw_scratch_restore_sub(j->cwd, j->resume_from, run, sizeof run) < 0) {
                snprintf(msg, sizeof msg, "not restored: %s is not in a folder below %s", j->resume_from, j->cwd);
                event(d, j, msg);
                return;
        }
        uint32_t gid;
        struct gw_scratch_copy c = { .mode = GW_SCRATCH_SYNC, .src = j->cwd, .dst = sj->dir, .sub = run };
        as_user(d, j, &c, &gid);
        int r = gw_scratch_copy_run(&c, SYNC_MAX, report, sizeof report);
        unsigned long long files = 0, bytes = 0;
        char size[32];
        int e;
        if (r < 0 || sscanf(strstr(report, "D ") ? strstr(report, "D ") : "", "D %llu %llu", &files, &bytes) != 2)
                snprintf(msg, sizeof msg, "could not restore %s/%s into %s: %s", j->cwd, run, sj->dir,
                         sscanf(report, "E %d", &e) == 1 ? strerror(e) : "the copy failed");
        else
                snprintf(msg, sizeof msg, "restored %s from %s into %s: %llu files, %s", run, j->cwd, sj->dir, files,
                         gw_format_size(bytes, size, sizeof size));
        event(d, j, msg);
}

/* The job's scratch record for its current attempt: scratch_dir/name (copied). */
static struct gw_scratch_job *job_new(struct gw_daemon *d, struct gw_djob *dj, const char *name) {
        struct gw_scratch_job *sj = gw_xcalloc(1, sizeof *sj);
        sj->dj = dj;
        sj->rfd = -1;
        snprintf(sj->name, sizeof sj->name, "%s", name);
        if (asprintf(&sj->dir, "%s/%s", d->cfg->scratch_dir, sj->name) < 0)
                abort();
        return sj;
}

/* The folder name of j's attempt starting now, into buf (n bytes): 0, or -errno with why
 * (wn bytes) said.
 *
 * On a cluster the nodes' scratch_dir is 1777 and job ids come in order: any user could make
 * JOB-ATTEMPT there ahead of another's job on every node, whose step would then find a folder
 * not its own in its place and fail each node in turn.  There the name gets a random part,
 * written in the loop's transaction that records the attempt's start (lifecycle.h), for a
 * restart to find.
 * One host's scratch_dir is the daemon's own (0711) and the folder made in it by the daemon,
 * so no user can take a name there; it keeps JOB-ATTEMPT, by which the next start of the
 * same attempt also finds a folder left by a daemon that died before its start was kept
 * (make_folder). */
static int name_attempt(struct gw_daemon *d, struct gw_job *j, char *buf, size_t n, char *why, size_t wn) {
        if (!scratch.on_nodes)
                return gw_scratch_name(j->id, j->attempt, NULL, buf, n);
        uint8_t rnd[GW_SCRATCH_NAME_RANDOM];
        ssize_t got = getrandom(rnd, sizeof rnd, 0);
        if (got != (ssize_t) sizeof rnd) {
                int e = got < 0 ? errno : EIO;
                snprintf(why, wn, "no randomness for its name: %s", strerror(e));
                return -e;
        }
        int r = gw_scratch_name(j->id, j->attempt, rnd, buf, n);
        if (r < 0) {
                snprintf(why, wn, "%s", strerror(-r));
                return r;
        }
        if ((r = gw_store_job_scratch_name(d->store, j->id, buf)) < 0) {
                snprintf(why, wn, "cannot record its name: %s", gw_store_errmsg(d->store));
                return r;
        }
        gw_job_text_set(&j->scratch_name, buf);
        return 0;
}

/* The folder name a restart finds for j's current attempt: the one recorded at its start,
 * else JOB-ATTEMPT (one host's, or a job recorded before names were). */
static void name_recorded(const struct gw_job *j, char *buf, size_t n) {
        if (j->scratch_name && gw_scratch_name_valid(j->scratch_name, j->id, j->attempt))
                snprintf(buf, n, "%s", j->scratch_name);
        else
                (void) gw_scratch_name(j->id, j->attempt, NULL, buf, n);
}

/* Watched from now on, its first look at next_look (monotonic). */
static void job_add(struct gw_scratch_job *sj, gw_usec_t next_look) {
        sj->next_look = next_look;
        sj->next = scratch.jobs;
        scratch.jobs = sj;
        sj->dj->scratch = sj;
        sj->dj->job->scratch_dir = sj->dir;
}

/* On a cluster the folder is named here and made on the node by the job's step, which also
 * restores the run (exec_slurm wraps the command in it). */
static void name_on_nodes(struct gw_daemon *d, struct gw_scratch_job *sj) {
        struct gw_job *j = sj->dj->job;
        char run[4400] = "", msg[4800];
        if (j->attempt > 1 && j->resume_from && gw_scratch_restore_sub(j->cwd, j->resume_from, run, sizeof run) < 0) {
                snprintf(msg, sizeof msg, "not restored: %s is not in a folder below %s", j->resume_from, j->cwd);
                event(d, j, msg);
                run[0] = '\0';
        }
        snprintf(msg, sizeof msg,
                 "attempt %d works in %s on the node Slurm picks, made there by the job's step%s%s%s%s", j->attempt,
                 sj->dir, run[0] ? ", which restores " : "", run, run[0] ? " from " : "", run[0] ? j->cwd : "");
        event(d, j, msg);
}

void gw_scratch_attempt_started(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        if (!j->scratch || !scratch_set())
                return;
        if (dj->scratch) { /* the attempt before's, kept for recovery's look (attempt_ended) */
                stop_look(dj->scratch);
                unlink_job(dj->scratch);
                dj->scratch = job_free(dj->scratch);
                j->scratch_dir = NULL;
        }
        char name[NAME_SIZE], why[400], msg[1400];
        if (name_attempt(d, j, name, sizeof name, why, sizeof why) < 0) {
                snprintf(msg, sizeof msg, "could not name its folder: %s; GPUWARD_SCRATCH is not set", why);
                event(d, j, msg);
                return;
        }
        struct gw_scratch_job *sj = job_new(d, dj, name);
        int r = scratch.on_nodes ? 0 : make_folder(d, j, sj->dir, sj->name);
        if (r < 0) {
                snprintf(msg, sizeof msg, "could not make its folder %s: %s; GPUWARD_SCRATCH is not set", sj->dir,
                         strerror(-r));
                event(d, j, msg);
                job_free(sj);
                return;
        }
        job_add(sj, d->now + d->cfg->scratch_interval);
        if (scratch.on_nodes)
                name_on_nodes(d, sj);
        else if (j->attempt > 1)
                restore(d, sj);
}

void gw_scratch_job_recovered(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        if (!j->scratch || !scratch_set() || dj->scratch)
                return;
        char name[NAME_SIZE];
        name_recorded(j, name, sizeof name);
        struct gw_scratch_job *sj = job_new(d, dj, name);
        /* Kept even when the folder is gone (the node's disk lost): its run's checkpoints are
         * then found in the shared folder by the same path (resume.c). */
        if (scratch.on_nodes)
                gw_scratch_told_skip(j, &sj->told);
        job_add(sj, d->now);
}

/* "copied runs/x/weights/last.pt (epoch 3) back to /shared/job" for one "C BYTES REL" line. */
static void tell_copied(struct gw_daemon *d, const struct gw_job *j, const char *line) {
        unsigned long long bytes;
        int off = 0;
        if (sscanf(line, "C %llu %n", &bytes, &off) != 1 || off <= 0)
                return;
        const char *rel = line + off;
        char path[4400], why[256], epoch[48] = "", msg[4800], size[32];
        snprintf(path, sizeof path, "%s/%s", j->cwd, rel);
        long done;
        if (gw_scratch_kind_of(rel) == GW_SCRATCH_PT && gw_resume_ckpt_epoch(j, path, &done, why, sizeof why) == 0)
                snprintf(epoch, sizeof epoch, " (epoch %ld)", done);
        else
                snprintf(epoch, sizeof epoch, " (%s)", gw_format_size(bytes, size, sizeof size));
        snprintf(msg, sizeof msg, "copied %s%s back to %s", rel, epoch, j->cwd);
        event(d, j, msg);
}

struct report_ctx {
        struct gw_daemon *d;
        struct gw_scratch_job *sj;
};

static void report_line(char *p, void *ctx) {
        struct gw_daemon *d = ((struct report_ctx *) ctx)->d;
        struct gw_scratch_job *sj = ((struct report_ctx *) ctx)->sj;
        if (sj->dj && p[0] == 'C')
                tell_copied(d, sj->dj->job, p);
        else if (sj->dj && p[0] == 'E' && !sj->told_fail) {
                int e = 0;
                char msg[256];
                sj->told_fail = true;
                (void) sscanf(p, "E %d", &e);
                snprintf(msg, sizeof msg, "cannot copy checkpoints back: %s (as the job's user)",
                         e > 0 ? strerror(e) : "the helper failed");
                event(d, sj->dj->job, msg);
        } else if (sj->dj && p[0] == 'S' && !sj->told_skip) {
                char msg[GW_SCRATCH_REPORT_MAX + 64];
                sj->told_skip = true;
                snprintf(msg, sizeof msg, "not copied back: %s", p + 2);
                event(d, sj->dj->job, msg);
        }
}

/* Takes the complete lines of sj's report that arrived. */
static void read_report(struct gw_daemon *d, struct gw_scratch_job *sj) {
        gw_scratch_report_read(&sj->report, sj->rfd, report_line, &(struct report_ctx){ d, sj });
}

static void start_look(struct gw_daemon *d, struct gw_scratch_job *sj) {
        const struct gw_job *j = sj->dj->job;
        uint32_t gid;
        struct gw_scratch_copy c = { .mode = GW_SCRATCH_LOOK, .src = sj->dir, .dst = j->cwd };
        as_user(d, j, &c, &gid);
        int fd;
        pid_t pid = gw_scratch_copy_start(&c, &fd);
        if (pid < 0)
                return;
        sj->pid = pid;
        sj->rfd = fd;
        sj->report.n = 0;
}

gw_usec_t gw_scratch_tick(struct gw_daemon *d) {
        gw_usec_t next = GW_USEC_INFINITY;
        for (struct gw_scratch_job *sj = scratch.jobs; sj; sj = sj->next) {
                if (sj->rfd >= 0)
                        read_report(d, sj);
                bool running = sj->dj && sj->dj->job->state == GW_JOB_RUNNING && sj->dj->job->scratch_dir;
                if (!running || sj->pid > 0)
                        continue;
                if (d->now >= sj->next_look) {
                        if (scratch.on_nodes) /* the job's step copies there, and says so */
                                gw_scratch_told_read(d, sj->dj->job, &sj->told);
                        else
                                start_look(d, sj);
                        sj->next_look = d->now + d->cfg->scratch_interval;
                }
                if (sj->next_look < next)
                        next = sj->next_look;
        }
        return next;
}

bool gw_scratch_reaped(struct gw_daemon *d, pid_t pid, int status) {
        (void) status;
        for (struct gw_scratch_job *sj = scratch.jobs; sj; sj = sj->next) {
                if (sj->pid != pid)
                        continue;
                sj->pid = 0;
                if (sj->rfd >= 0) {
                        read_report(d, sj); /* what it wrote before it ended */
                        (void) close(sj->rfd);
                        sj->rfd = -1;
                }
                sj->report.n = 0;
                if (!sj->dj) {
                        unlink_job(sj);
                        job_free(sj);
                }
                return true;
        }
        return false;
}

/* "synced back to /shared/job: 12 files, 3.4 MB; ..." for the final sync's report. */
static void tell_synced(struct gw_daemon *d, const struct gw_job *j, const char *dir, int r, const char *report) {
        char msg[GW_SCRATCH_REPORT_MAX + 512], size[32], skip[512] = "";
        unsigned long long files = 0, bytes = 0, left = 0;
        const char *done = strstr(report, "D ");
        int e;
        if (r < 0 && sscanf(report, "E %d", &e) == 1) {
                snprintf(msg, sizeof msg,
                         "nothing synced back from %s (%s): the newest checkpoints copied back to %s stay there", dir,
                         strerror(e), j->cwd);
                event(d, j, msg);
                return;
        }
        if (r < 0 || !done || sscanf(done, "D %llu %llu %llu", &files, &bytes, &left) != 3) {
                snprintf(msg, sizeof msg, "the sync back from %s to %s did not finish", dir, j->cwd);
                event(d, j, msg);
                return;
        }
        size_t n_skip;
        const char *first = first_skip(report, &n_skip, skip, sizeof skip);
        int w = snprintf(msg, sizeof msg, "synced back to %s: %llu files, %s", j->cwd, files,
                         gw_format_size(bytes, size, sizeof size));
        if (left && w > 0 && (size_t) w < sizeof msg)
                w += snprintf(msg + w, sizeof msg - (size_t) w, "; %llu entries past the limits not looked at", left);
        if (first && w > 0 && (size_t) w < sizeof msg)
                w += snprintf(msg + w, sizeof msg - (size_t) w, "; not copied: %s%s", first,
                              n_skip > 1 ? " (and others)" : "");
        if (w > 0 && (size_t) w < sizeof msg)
                snprintf(msg + w, sizeof msg - (size_t) w, "; %s removed", dir);
        event(d, j, msg);
}

void gw_scratch_attempt_ended(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_scratch_job *sj = dj->scratch;
        if (!sj)
                return;
        const struct gw_job *j = dj->job;
        if (scratch.on_nodes) { /* the job's step synced what the node still had: its last lines */
                for (int i = 0; i < 16; i++) {
                        uint64_t before = sj->told.off;
                        gw_scratch_told_read(d, j, &sj->told);
                        if (sj->told.off == before)
                                break;
                }
                return;
        }
        stop_look(sj);
        char report[GW_SCRATCH_REPORT_MAX];
        uint32_t gid;
        struct gw_scratch_copy c = { .mode = GW_SCRATCH_SYNC, .src = sj->dir, .dst = j->cwd, .empty_src = true };
        as_user(d, j, &c, &gid);
        int r = gw_scratch_copy_run(&c, SYNC_MAX, report, sizeof report);
        tell_synced(d, j, sj->dir, r, report);
        if (unlinkat(scratch.fd, sj->name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                log_warn("job %lld: cannot remove %s: %s", (long long) j->id, sj->dir, strerror(errno));
        /* j->scratch_dir stays until the retry's start or the job's end: recovery, which comes
         * next, finds the run where the attempt wrote it and resumes from its shared copy. */
}

void gw_scratch_job_freed(struct gw_daemon *d, struct gw_djob *dj) {
        (void) d;
        struct gw_scratch_job *sj = dj->scratch;
        if (!sj)
                return;
        dj->job->scratch_dir = NULL;
        dj->scratch = NULL;
        sj->dj = NULL;
        if (sj->pid > 0)
                return; /* freed once reaped */
        unlink_job(sj);
        job_free(sj);
}
