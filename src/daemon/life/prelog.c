/* Log files made ahead of the start.  Creating a file can cost far more than the rest of a
 * start together (on ext4 that has seen heavy file churn, half a millisecond of kernel time
 * for the inode alone), and a job's log is all its supervisor would otherwise create on the
 * way from one job's end to the next one's exec.  So the daemon creates the log files of the
 * next few queued jobs while it has nothing else to do, and the supervisor only opens them.
 * Only gpuward's own log files: a user-chosen --output file is opened as the user, at start. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/life/jobs.h"

/* Queued jobs, in queue order, whose log is made ahead while idle: the ones that can start next. */
#define AHEAD_PER_GPU 2

static struct gw_djob *next_without_log(struct gw_daemon *d, size_t ahead) {
        for (size_t i = 0; i < d->jobs.n_queue && i < ahead; i++) {
                struct gw_djob *dj = d->jobs.queue[i];
                const struct gw_job *j = dj->job;
                if (dj->log_made_attempt != j->attempt && !j->output && j->log_path && j->state == GW_JOB_PENDING)
                        return dj;
        }
        return NULL;
}

bool gw_prelog_pending(struct gw_daemon *d) {
        return next_without_log(d, (size_t) d->host.n_gpus * AHEAD_PER_GPU) != NULL;
}

static void log_make(const struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        dj->log_made_attempt = j->attempt; /* tried once: a failure is left to the supervisor */
        int fd = open(j->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0) {
                log_debug("job %lld: log %s not made ahead: %s", (long long) j->id, j->log_path, strerror(errno));
                return;
        }
        /* The supervisor hands a private log to the job's user the same way. */
        if (d->loop.euid == 0 && (j->uid || j->gid) && fchown(fd, j->uid, j->gid) < 0)
                log_debug("job %lld: chown of %s: %s", (long long) j->id, j->log_path, strerror(errno));
        (void) close(fd);
}

void gw_prelog_one(struct gw_daemon *d) {
        struct gw_djob *dj = next_without_log(d, (size_t) d->host.n_gpus * AHEAD_PER_GPU);
        if (dj)
                log_make(d, dj);
}

/* A daemon draining a queue of short jobs is never idle, so the jobs that start at the next
 * ends (one per GPU at most) get theirs right after a scheduling pass, while the jobs just
 * started run: off the path from an end to the next start either way. */
void gw_prelog_head(struct gw_daemon *d) {
        struct gw_djob *dj;
        for (unsigned i = 0; i < d->host.n_gpus && (dj = next_without_log(d, d->host.n_gpus)); i++)
                log_make(d, dj);
}
