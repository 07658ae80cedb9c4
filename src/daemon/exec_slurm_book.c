/* Bookings on the cluster: each approved booking holds whole nodes in a Slurm reservation
 * (gpuward_book_ID, for its user, over its window), made when the booking is accepted and
 * deleted when it is cancelled; its user's jobs started in the window are submitted into it
 * (--reservation).  Slurm's own scheduler then keeps every other job, a plain sbatch user's
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
#include "daemon/exec_slurm.h"

static struct gw_exec_slurm *slurm_if(struct gw_daemon *d) {
        return d->cfg->backend_slurm && d->exec ? slurm_of(d) : NULL;
}

/* Runs a Slurm command as the daemon and waits for it (10 s at most): 0 with its output
 * (the first line, trimmed), or < 0 with its words in out. */
static int run(char *const *argv, char *out, size_t n) {
        char conf[4200], *env[2];
        slurm_client_env(conf, sizeof conf, env);
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return snprintf(out, n, "pipe: %s", strerror(errno)), -errno;
        pid_t pid = slurm_spawn(argv, env, false, 0, 0, NULL, 0, NULL, p[1]);
        (void) close(p[1]);
        _cleanup_close_ int fd = p[0];
        if (pid < 0)
                return snprintf(out, n, "cannot run %s: %s", argv[0], strerror((int) -pid)), (int) pid;
        int status = 0;
        int r = slurm_wait_child(pid, fd, out, n, &status);
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

static void resv_name(int64_t booking, char *buf, size_t n) {
        snprintf(buf, n, "gpuward_book_%" PRId64, booking);
}

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
        s->resv[s->n_resv++] = (struct gw_slurm_resv) { .booking = b->id, .uid = b->uid, .start = b->start,
                                                        .end = b->end };
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
                                nodes == 1 ? "" : "s", per, out[0] ? out : "(no words)"), -EBUSY;
        }
        remember(s, b);
        log_info("booking %" PRId64 " (%s, %d GPUs): Slurm reservation %s, %d whole node%s of %d GPUs, %s to %s",
                 b->id, b->user, b->ngpus, name, nodes, nodes == 1 ? "" : "s", per, start, end);
        return 0;
}

void gw_slurm_book_known(struct gw_daemon *d, const struct gw_store_booking *b) {
        struct gw_exec_slurm *s = slurm_if(d);
        if (s)
                remember(s, b);
}

void gw_slurm_book_drop(struct gw_daemon *d, int64_t booking) {
        struct gw_exec_slurm *s = slurm_if(d);
        if (!s)
                return;
        bool known = false;
        for (size_t i = 0; i < s->n_resv; i++)
                if (s->resv[i].booking == booking) {
                        s->resv[i] = s->resv[--s->n_resv];
                        known = true;
                        break;
                }
        if (!known)
                return; /* never held (awaiting approval): nothing in Slurm */
        char name[64], arg[80], out[1024];
        resv_name(booking, name, sizeof name);
        snprintf(arg, sizeof arg, "ReservationName=%s", name);
        char *del[] = { s->scontrol, "delete", arg, NULL };
        if (run(del, out, sizeof out) < 0)
                log_warn("booking %" PRId64 ": cannot delete Slurm reservation %s (Slurm ends it at its end time "
                         "itself): %.200s", booking, name, out);
        else
                log_info("booking %" PRId64 ": Slurm reservation %s deleted", booking, name);
}

const char *slurm_book_reservation(struct gw_daemon *d, const struct gw_job *j) {
        static char name[64];
        struct gw_exec_slurm *s = slurm_of(d);
        /* The booking the job names (--reservation ID: Slurm holds it until the window), else
         * its user's booking whose window is now. */
        for (size_t i = 0; i < s->n_resv && j->booking_id > 0; i++)
                if (s->resv[i].booking == j->booking_id) {
                        resv_name(s->resv[i].booking, name, sizeof name);
                        return name;
                }
        for (size_t i = 0; i < s->n_resv; i++)
                if (s->resv[i].uid == j->uid && s->resv[i].start <= d->now_wall && d->now_wall < s->resv[i].end) {
                        resv_name(s->resv[i].booking, name, sizeof name);
                        return name;
                }
        return NULL;
}
