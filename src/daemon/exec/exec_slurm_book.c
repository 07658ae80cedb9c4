/* Bookings on the cluster: each approved booking holds whole nodes in a Slurm reservation
 * (gpuward_book_ID, for its user, over its window), made when the booking is accepted and
 * deleted when it is cancelled; its user's jobs started in the window are submitted into it
 * (--reservation); deleted when it is over, once its jobs have left it (exec_slurm_book's
 * gw_slurm_book_tick, tried again while Slurm refuses).  Slurm's own scheduler then keeps every other job, a plain sbatch user's
 * too, whose time limit would overlap the window off those nodes.  A GPU count cannot be
 * reserved without slurmdbd (AccountingStorageTRES=gres/gpu), so the count is rounded up to
 * whole nodes of the smallest GPU count sinfo shows (docs/CLUSTER.md). */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/exec/exec_slurm.h"
#include "store/store.h"

/* Deleting a reservation Slurm refused to delete (a job of it still ending): the first try
 * again a second later, doubling to a try every 5 minutes. */
#define SLURM_RESV_RETRY_FIRST (1 * GW_USEC_PER_SEC)
#define SLURM_RESV_RETRY_MAX (300 * GW_USEC_PER_SEC)

/* Only the Slurm backend's table reaches these (gw_slurm_book_ops); NULL once it is closed. */
static struct gw_exec_slurm *slurm_if(struct gw_daemon *d) { return d->exec ? slurm_of(d) : NULL; }

/* Runs a Slurm command as the daemon and waits for it (10 s at most): 0 with its output
 * (the first line, trimmed), or < 0 with its words in out. */
static int run(char *const *argv, char *out, size_t n) {
        char conf[4200], *env[2];
        gw_slurm_client_env(conf, sizeof conf, env);
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return snprintf(out, n, "pipe: %s", strerror(errno)), -errno;
        pid_t pid = gw_slurm_spawn(argv, env, false, 0, 0, NULL, 0, NULL, p[1]);
        (void) close(p[1]);
        _cleanup_close_ int fd = p[0];
        if (pid < 0)
                return snprintf(out, n, "cannot run %s: %s", argv[0], strerror((int) -pid)), (int) pid;
        int status = 0;
        int r = gw_slurm_wait_child(pid, fd, out, n, &status);
        if (r < 0)
                return snprintf(out, n, "%s did not answer in time", argv[0]), r;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* The smallest GPU count of a node, from sinfo's %G lines ("gpu:4", "gpu:a100:8(S:0-1)",
 * "(null)"); 0 when no node has GPUs. */
static int gpus_per_node(const char *text) {
        int min = 0;
        for (const char *line = text; line && *line;) {
                const char *g = strstr(line, "gpu:"), *nl = strchr(line, '\n');
                if (g && (!nl || g < nl)) {
                        const char *p = g + 4;
                        const char *colon = strchr(p, ':');
                        if (colon && (!nl || colon < nl) && (colon < p + strcspn(p, ",(\n")))
                                p = colon + 1;
                        long k = strtol(p, NULL, 10);
                        if (k > 0 && k <= INT_MAX && (min == 0 || k < min))
                                min = (int) k;
                }
                line = nl ? nl + 1 : NULL;
        }
        return min;
}

static void resv_name(int64_t booking, char *buf, size_t n) { snprintf(buf, n, "gpuward_book_%" PRId64, booking); }

/* Slurm reads its times in slurmctld's local time zone: this host's, on the head node. */
static void slurm_time(gw_usec_t t, char *buf, size_t n) {
        time_t s = (time_t) (t / GW_USEC_PER_SEC);
        struct tm tm;
        localtime_r(&s, &tm);
        strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
}

static void remember(struct gw_exec_slurm *s, const struct gw_store_booking *b) {
        for (size_t i = 0; i < s->n_resv; i++)
                if (s->resv[i].booking == b->id)
                        return;
        s->resv = gw_xrealloc(s->resv, (s->n_resv + 1) * sizeof *s->resv);
        s->resv[s->n_resv++] =
                (struct gw_slurm_resv){ .booking = b->id, .uid = b->uid, .start = b->start, .end = b->end };
}

int gw_slurm_book_hold(struct gw_daemon *d, const struct gw_store_booking *b, char *err, size_t n) {
        struct gw_exec_slurm *s = slurm_if(d);
        if (!s)
                return 0;
        char out[4096];
        char *sinfo[] = { s->sinfo, "--noheader", "--format=%G", NULL };
        if (run(sinfo, out, sizeof out) < 0)
                return snprintf(err, n, "cannot read the nodes' GPUs with sinfo: %.200s", out), -EIO;
        int per = gpus_per_node(out);
        if (per <= 0)
                return snprintf(err, n, "ngpus: no node of the cluster has GPUs (sinfo: %.100s)", out), -EINVAL;
        int nodes = (b->ngpus + per - 1) / per;
        char name[64], nodecnt[32], users[96], start[48], end[48];
        resv_name(b->id, name, sizeof name);
        char a_name[80], a_start[64], a_end[64];
        snprintf(a_name, sizeof a_name, "ReservationName=%s", name);
        slurm_time(b->start, start, sizeof start);
        slurm_time(b->end, end, sizeof end);
        snprintf(a_start, sizeof a_start, "StartTime=%s", start);
        snprintf(a_end, sizeof a_end, "EndTime=%s", end);
        snprintf(nodecnt, sizeof nodecnt, "NodeCnt=%d", nodes);
        snprintf(users, sizeof users, "Users=%s", b->user);
        char *create[] = { s->scontrol, "create", "reservation", a_name, a_start, a_end, nodecnt, users, NULL };
        if (run(create, out, sizeof out) < 0) {
                out[strcspn(out, "\n")] = '\0';
                return snprintf(err, n, "start: Slurm cannot reserve %d node%s of %d GPUs for it: %.300s", nodes,
                                nodes == 1 ? "" : "s", per, out[0] ? out : "(no words)"),
                       -EBUSY;
        }
        remember(s, b);
        log_info("booking %" PRId64 " (%s, %d GPUs): Slurm reservation %s, %d whole node%s of %d GPUs, %s to %s", b->id,
                 b->user, b->ngpus, name, nodes, nodes == 1 ? "" : "s", per, start, end);
        return 0;
}

void gw_slurm_book_known(struct gw_daemon *d, const struct gw_store_booking *b) {
        struct gw_exec_slurm *s = slurm_if(d);
        if (s)
                remember(s, b);
}

static struct gw_slurm_resv *resv_find(struct gw_exec_slurm *s, int64_t booking) {
        for (size_t i = 0; i < s->n_resv; i++)
                if (s->resv[i].booking == booking)
                        return &s->resv[i];
        return NULL;
}

static void resv_forget(struct gw_exec_slurm *s, struct gw_slurm_resv *r) { *r = s->resv[--s->n_resv]; }

bool gw_slurm_book_held(struct gw_daemon *d, int64_t booking) {
        struct gw_exec_slurm *s = slurm_if(d);
        struct gw_slurm_resv *r = s ? resv_find(s, booking) : NULL;
        return r && !r->dropping;
}

/* scontrol delete: 0 when the reservation is gone (deleted now, or already: Slurm calls a
 * name it does not know invalid), else -EIO with Slurm's words in out. */
static int resv_delete(struct gw_exec_slurm *s, int64_t booking, char *out, size_t n) {
        char name[64], arg[80];
        resv_name(booking, name, sizeof name);
        snprintf(arg, sizeof arg, "ReservationName=%s", name);
        char *del[] = { s->scontrol, "delete", arg, NULL };
        out[0] = '\0';
        int r = run(del, out, n);
        out[strcspn(out, "\n")] = '\0';
        return r == 0 || strstr(out, "Requested reservation is invalid") ? 0 : -EIO;
}

void gw_slurm_book_undo(struct gw_daemon *d, int64_t booking) {
        struct gw_exec_slurm *s = slurm_if(d);
        struct gw_slurm_resv *r = s ? resv_find(s, booking) : NULL;
        if (!r)
                return;
        resv_forget(s, r);
        char out[1024];
        if (resv_delete(s, booking, out, sizeof out) < 0)
                log_warn("booking %" PRId64 ": cannot delete its Slurm reservation (Slurm ends it at its end time "
                         "itself): %.200s",
                         booking, out);
}

/* Marks b's reservation to be deleted; false when it has none. */
static bool mark_dropping(struct gw_exec_slurm *s, const struct gw_store_booking *b) {
        struct gw_slurm_resv *r = resv_find(s, b->id);
        if (!r && !b->resv_drop)
                return false; /* never held (awaiting approval): nothing in Slurm */
        if (!r) { /* recorded before a restart */
                remember(s, b);
                r = &s->resv[s->n_resv - 1];
        }
        if (!r->dropping)
                *r = (struct gw_slurm_resv){ .booking = r->booking,
                                             .uid = r->uid,
                                             .start = r->start,
                                             .end = r->end,
                                             .dropping = true,
                                             .backoff = SLURM_RESV_RETRY_FIRST };
        return true;
}

void gw_slurm_book_drop(struct gw_daemon *d, const struct gw_store_booking *b) {
        struct gw_exec_slurm *s = slurm_if(d);
        /* At once when no job of it runs: who released it may look for it in Slurm next. */
        if (s && mark_dropping(s, b))
                (void) gw_slurm_book_tick(d);
}

void gw_slurm_book_drop_later(struct gw_daemon *d, const struct gw_store_booking *b) {
        struct gw_exec_slurm *s = slurm_if(d);
        if (s)
                (void) mark_dropping(s, b);
}

/* Whether a job in r's reservation still runs: Slurm refuses to delete a reservation in use.
 * Those are the booking's jobs, which the calendar stops as the booking is over, and its
 * user's others started in its window (gw_slurm_book_reservation sent them into it), which
 * are not stopped: the reservation goes when they end, or at its own end. */
static bool resv_busy(struct gw_daemon *d, const struct gw_slurm_resv *r) {
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                const struct gw_job *j = d->jobs.running[i]->job;
                if (j->booking_id == r->booking ||
                    (!j->booking_id && j->uid == r->uid && j->start_time >= r->start && j->start_time < r->end))
                        return true;
        }
        return false;
}

/* One try at deleting r's reservation; false when r stays (Slurm refused: tried again later). */
static bool resv_drop_try(struct gw_daemon *d, struct gw_exec_slurm *s, struct gw_slurm_resv *r) {
        char name[64], out[1024];
        resv_name(r->booking, name, sizeof name);
        if (d->now_wall >= r->end) {
                log_info("booking %" PRId64 ": Slurm reservation %s has reached its end time: Slurm ended it",
                         r->booking, name);
        } else if (resv_delete(s, r->booking, out, sizeof out) == 0) {
                log_info("booking %" PRId64 ": Slurm reservation %s deleted%s", r->booking, name,
                         r->tries ? " (Slurm refused before: its jobs had not left it yet)" : "");
        } else {
                /* Said once, not at every try: a job's cleanup may take Slurm a while. */
                if (r->tries++ == 0)
                        log_warn("booking %" PRId64 ": Slurm refuses to delete reservation %s yet (%.200s): tried "
                                 "again until it agrees, at most every %d s, up to the reservation's end",
                                 r->booking, name, out[0] ? out : "no words",
                                 (int) (SLURM_RESV_RETRY_MAX / GW_USEC_PER_SEC));
                r->next_try = d->now + r->backoff;
                r->backoff = r->backoff * 2 < SLURM_RESV_RETRY_MAX ? r->backoff * 2 : SLURM_RESV_RETRY_MAX;
                return false;
        }
        if (gw_store_booking_resv_dropped(d->store, r->booking) < 0)
                log_warn("booking %" PRId64 ": cannot record that its reservation is gone: %s", r->booking,
                         gw_store_errmsg(d->store));
        return true;
}

gw_usec_t gw_slurm_book_tick(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_if(d);
        gw_usec_t next = GW_USEC_INFINITY;
        for (size_t i = 0; s && i < s->n_resv;) {
                struct gw_slurm_resv *r = &s->resv[i];
                /* Its jobs first: they are being stopped, and leave it when Slurm says they ended. */
                if (!r->dropping || resv_busy(d, r)) {
                        i++;
                        continue;
                }
                if (r->next_try <= d->now && resv_drop_try(d, s, r)) {
                        resv_forget(s, r); /* another entry moved into i: look at it next */
                        continue;
                }
                if (r->next_try < next)
                        next = r->next_try;
                i++;
        }
        return next;
}

const char *gw_slurm_book_reservation(struct gw_daemon *d, const struct gw_job *j) {
        static char name[64];
        struct gw_exec_slurm *s = slurm_of(d);
        /* The booking the job names (--reservation ID: Slurm holds it until the window), else
         * its user's booking whose window is now. */
        for (size_t i = 0; i < s->n_resv && j->booking_id > 0; i++)
                if (s->resv[i].booking == j->booking_id && !s->resv[i].dropping) {
                        resv_name(s->resv[i].booking, name, sizeof name);
                        return name;
                }
        for (size_t i = 0; i < s->n_resv; i++)
                if (s->resv[i].uid == j->uid && !s->resv[i].dropping && s->resv[i].start <= d->now_wall &&
                    d->now_wall < s->resv[i].end) {
                        resv_name(s->resv[i].booking, name, sizeof name);
                        return name;
                }
        return NULL;
}

const struct gw_exec_book_ops gw_slurm_book_ops = {
        .hold = gw_slurm_book_hold,
        .undo = gw_slurm_book_undo,
        .held = gw_slurm_book_held,
        .known = gw_slurm_book_known,
        .drop = gw_slurm_book_drop,
        .drop_later = gw_slurm_book_drop_later,
};
