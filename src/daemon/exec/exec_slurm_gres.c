/* The cluster's GPU types (exec_slurm.h): a job on MIG slices asks Slurm for them by gres
 * type (--gres=gpu:a100_1g.10gb:2), whose names are the cluster's (AutoDetect=nvml's, or the
 * admin's gres.conf), so they are read from Slurm itself: scontrol show node --oneliner, as
 * the daemon, a child whose pipe the loop reads as the squeue poll is (the loop never waits
 * on slurmctld), at the start and every minute after; a failed read is tried again sooner.
 * What it read matches a slice job's profile to its type (core/slurm.h), refuses a profile
 * no node has at submission, and keeps whole-GPU jobs off nodes of slices only: Slurm gives
 * a plain --gres=gpu:N any type, slices included (seen on the test cluster). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/slurm.h"
#include "daemon/exec/exec_slurm.h"

#define GRES_EVERY_USEC (60 * GW_USEC_PER_SEC)
#define GRES_RETRY_USEC (10 * GW_USEC_PER_SEC)
#define GRES_TIMEOUT_USEC (30 * GW_USEC_PER_SEC)
/* About 1 KiB a node: 4096 nodes and room to spare. */
#define GRES_OUT_MAX (8u << 20)

static struct gw_slurm_gres *gres_of(struct gw_daemon *d) { return &slurm_of(d)->gres; }

static void pipe_stop(struct gw_daemon *d) {
        struct gw_slurm_gres *g = gres_of(d);
        if (g->fd >= 0) {
                (void) epoll_ctl(d->loop.epfd, EPOLL_CTL_DEL, g->fd, NULL);
                (void) close(g->fd);
                g->fd = -1;
        }
        g->len = 0;
        g->eof = g->reaped = false;
}

static void read_start(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        struct gw_slurm_gres *g = &s->gres;
        g->next = d->now + GRES_RETRY_USEC; /* unless it succeeds */
        char *argv[] = { s->scontrol, "show", "node", "--oneliner", NULL };
        g->src = (struct gw_source){ GW_SRC_EXEC, s };
        if (gw_slurm_read_start(d, argv, "scontrol", &g->src, &g->fd, &g->pid) == 0)
                g->started = d->now;
}

/* scontrol has exited and its output is read: the cluster's GPUs, kept until the next read. */
static void read_done(struct gw_daemon *d) {
        struct gw_slurm_gres *g = gres_of(d);
        bool first = !g->tried;
        g->tried = true;
        d->jobs.sched_dirty = true; /* jobs waiting for the types may go now */
        struct gw_slurm_gpus got = { 0 };
        if (!WIFEXITED(g->status) || WEXITSTATUS(g->status) != 0 ||
            gw_slurm_gpus_parse(g->out ? g->out : "", g->len, &got) < 0) {
                gw_slurm_gpus_clear(&got);
                if (first || g->known)
                        log_warn("backend slurm: scontrol show node failed (status %d): %.200s; the cluster's GPU "
                                 "types are read again in %d s",
                                 g->status, g->out ? g->out : "", (int) (GRES_RETRY_USEC / GW_USEC_PER_SEC));
                pipe_stop(d);
                return;
        }
        gw_slurm_gpus_clear(&g->gpus);
        g->gpus = got;
        g->known = true;
        g->next = d->now + GRES_EVERY_USEC;
        char words[1024];
        gw_slurm_gpus_words(&g->gpus, words, sizeof words);
        if (!g->words || strcmp(g->words, words) != 0) {
                log_info("backend slurm: the cluster's GPUs: %s%s", words,
                         g->gpus.n_slice_only ? " (whole-GPU jobs are kept off the nodes of slices only)" : "");
                free(g->words);
                g->words = gw_xstrdup(words);
        }
        pipe_stop(d);
}

static void read_more(struct gw_daemon *d) {
        struct gw_slurm_gres *g = gres_of(d);
        while (g->fd >= 0 && !g->eof) {
                if (g->cap - g->len < 4096 && g->cap < GRES_OUT_MAX) {
                        g->cap = g->cap ? 2 * g->cap : 16384;
                        g->out = gw_xrealloc(g->out, g->cap);
                }
                ssize_t k = read(g->fd, g->out + g->len, g->cap - g->len - 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return;
                if (k > 0)
                        g->len += (size_t) k;
                g->out[g->len] = '\0';
                if (k <= 0 || g->len == g->cap - 1) { /* the end, an error, or too much: what was read */
                        g->eof = true;
                        (void) epoll_ctl(d->loop.epfd, EPOLL_CTL_DEL, g->fd, NULL);
                        (void) close(g->fd);
                        g->fd = -1;
                }
        }
        if (g->eof && g->reaped)
                read_done(d);
}

bool gw_slurm_gres_ready(struct gw_daemon *d, struct gw_source *src) {
        if (src != &gres_of(d)->src)
                return false;
        read_more(d);
        return true;
}

bool gw_slurm_gres_reaped(struct gw_daemon *d, pid_t pid, int status) {
        struct gw_slurm_gres *g = gres_of(d);
        if (pid <= 0 || pid != g->pid)
                return false;
        g->pid = 0;
        g->status = status;
        g->reaped = true;
        read_more(d); /* done, if the pipe had ended (which clears reaped) */
        if (g->reaped && !g->eof) { /* a grandchild holds the pipe: what was read is the answer */
                g->eof = true;
                read_done(d);
        }
        return true;
}

gw_usec_t gw_slurm_gres_tick(struct gw_daemon *d) {
        struct gw_slurm_gres *g = gres_of(d);
        if (g->pid > 0) {
                if (d->now - g->started < GRES_TIMEOUT_USEC)
                        return g->started + GRES_TIMEOUT_USEC;
                log_warn("backend slurm: scontrol show node (pid %d) did not answer in %d s; killed", (int) g->pid,
                         (int) (GRES_TIMEOUT_USEC / GW_USEC_PER_SEC));
                (void) kill(g->pid, SIGKILL);
                gw_slurm_kid_add(slurm_of(d), g->pid);
                g->pid = 0;
                g->tried = true;
                d->jobs.sched_dirty = true;
                pipe_stop(d);
        }
        if (d->now < g->next)
                return g->next;
        read_start(d);
        return g->pid > 0 ? g->started + GRES_TIMEOUT_USEC : g->next;
}

void gw_slurm_gres_close(struct gw_daemon *d) {
        struct gw_slurm_gres *g = gres_of(d);
        if (g->pid > 0) {
                (void) kill(g->pid, SIGKILL);
                (void) waitpid(g->pid, NULL, 0);
                g->pid = 0;
        }
        pipe_stop(d);
        free(g->out);
        free(g->words);
        gw_slurm_gpus_clear(&g->gpus);
}

int gw_slurm_gres_type(struct gw_daemon *d, const struct gw_job *j, const char **ret, char *err, size_t n) {
        struct gw_slurm_gres *g = gres_of(d);
        *ret = NULL;
        if (!j->mig_profile)
                return 0;
        if (!g->known)
                return snprintf(err, n, "mig: the cluster's GPU types are not known yet (scontrol show node)"), -EAGAIN;
        int r = gw_slurm_mig_type(&g->gpus, j->mig_profile, ret);
        if (r < 0) {
                char words[600];
                snprintf(err, n,
                         "mig: no node of the Slurm cluster has %s slices (a gres type %s or ending in _%s); "
                         "it has %s",
                         j->mig_profile, j->mig_profile, j->mig_profile,
                         gw_slurm_gpus_words(&g->gpus, words, sizeof words));
                return -ENOENT;
        }
        return 0;
}

int gw_slurm_gres_admit(struct gw_daemon *d, const struct gw_job *j, const char **ret_field, char *err, size_t n) {
        struct gw_slurm_gres *g = gres_of(d);
        const char *type;
        *ret_field = "mig";
        if (j->mig_profile)
                return gw_slurm_gres_type(d, j, &type, err, n);
        /* A whole-GPU job is kept off the nodes of slices only, which the first read tells;
         * if it failed, the job goes without (sbatch judges it), not held up by scontrol. */
        if (j->ngpus > 0 && !g->tried)
                return snprintf(err, n, "the cluster's GPU types are not known yet"), -EAGAIN;
        return 0;
}

size_t gw_slurm_gres_slice_nodes(struct gw_daemon *d, const char *const **ret) {
        struct gw_slurm_gres *g = gres_of(d);
        *ret = (const char *const *) g->gpus.slice_only;
        return g->known ? g->gpus.n_slice_only : 0;
}
