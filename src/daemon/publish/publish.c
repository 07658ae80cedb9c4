/* The loop's side of publishing (publish.h): a job that completed with --publish is queued
 * once its end is written; one copy at a time runs on a thread of its own (publish_copy.c),
 * so that a checkpoint of gigabytes never stalls the loop and two copies never race for the
 * same vN; the loop looks each iteration, while one runs, whether it has ended, and records
 * its outcome as an event of the job.
 *
 * A copy under way when the daemon stops is finished first (gw_publish_close waits); the
 * queued ones are not made, and say so in the log. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/thread.h"
#include "daemon/publish/publish.h"
#include "daemon/training/training.h"
#include "daemon/life/jobs.h"

#define POLL_USEC (20 * 1000)
#define QUEUE_MAX 1024 /* publications waiting; more are refused with an event */
#define COMMIT_MAX 64

struct pub_job {
        struct gw_pub_task t;
        pthread_t thread;
        atomic_bool done;
};

struct gw_publisher {
        struct pub_job *cur; /* the copy under way, NULL none */
        struct pub_job **queue; /* waiting, oldest first */
        size_t n, cap;
};

static struct pub_job *pub_job_free(struct pub_job *p) {
        if (p) {
                free(p->t.user);
                free(p->t.name);
                free(p->t.metric);
                free(p->t.run_dir);
                free(p->t.store);
                free(p->t.commit);
                free(p);
        }
        return NULL;
}

int gw_publish_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err) {
        (void) ahead;
        if (!j->publish || (d->cfg->model_store && d->cfg->model_store[0]))
                return 0;
        err->status = 400;
        snprintf(err->field, sizeof err->field, "publish");
        snprintf(err->message, sizeof err->message,
                 "publish: this gpuwardd has no model store (model_store = none in its settings); ask an admin to "
                 "set one, or submit without --publish");
        return -EINVAL;
}

/* The commit a CI job was built from, as its environment names it: hex digits only. */
static char *commit_of(const struct gw_job *j) {
        static const char *const keys[] = { "CI_COMMIT_SHA=", "GITHUB_SHA=" };
        char *const *lists[] = { j->env_extra, j->env };
        for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                for (size_t l = 0; l < ELEMENTSOF(lists); l++)
                        for (char *const *e = lists[l]; e && *e; e++) {
                                if (strncmp(*e, keys[k], strlen(keys[k])))
                                        continue;
                                const char *v = *e + strlen(keys[k]);
                                size_t len = strlen(v);
                                if (len >= 7 && len <= COMMIT_MAX && strspn(v, "0123456789abcdefABCDEF") == len)
                                        return gw_xstrdup(v);
                        }
        return NULL;
}

static void record(struct gw_daemon *d, int64_t job_id, const char *kind, const char *msg) {
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *j = gw_job_lookup(d, job_id, &tmp);
        log_info("job %lld: %s", (long long) job_id, msg);
        if (gw_store_job_event(d->store, job_id, j ? j->state : GW_JOB_COMPLETED, kind, msg) < 0)
                log_warn("job %lld: cannot record %s: %s", (long long) job_id, kind, gw_store_errmsg(d->store));
}

static struct gw_publisher *state(struct gw_daemon *d) {
        if (!d->publish)
                d->publish = gw_xcalloc(1, sizeof *d->publish);
        return d->publish;
}

static void *run_thread(void *arg) {
        struct pub_job *p = arg;
        gw_publish_run(&p->t);
        atomic_store(&p->done, true);
        return NULL;
}

/* Starts the oldest waiting copy, if none runs. */
static void start_next(struct gw_daemon *d) {
        struct gw_publisher *s = d->publish;
        while (s && !s->cur && s->n) {
                struct pub_job *p = s->queue[0];
                memmove(s->queue, s->queue + 1, --s->n * sizeof *s->queue);
                int r = gw_thread_start(&p->thread, run_thread, p, "gw-publish");
                if (r == 0) {
                        s->cur = p;
                        return;
                }
                char msg[300];
                snprintf(msg, sizeof msg, "not published as %s: cannot start the copy: %s", p->t.name, strerror(r));
                record(d, p->t.job_id, "not_published", msg);
                pub_job_free(p);
        }
}

void gw_publish_job_ended(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        if (!j->publish || j->state != GW_JOB_COMPLETED)
                return;
        char msg[512];
        const char *run = gw_training_run_dir(d, dj);
        if (!d->cfg->model_store || !d->cfg->model_store[0])
                snprintf(msg, sizeof msg,
                         "not published as %s: this gpuwardd has no model store now "
                         "(model_store = none)",
                         j->publish);
        else if (!run)
                snprintf(msg, sizeof msg,
                         "not published as %s: no training run found for the job (no results.csv "
                         "written by it)",
                         j->publish);
        else if (state(d)->n >= QUEUE_MAX)
                snprintf(msg, sizeof msg, "not published as %s: %d publications are waiting already", j->publish,
                         QUEUE_MAX);
        else {
                struct pub_job *p = gw_xcalloc(1, sizeof *p);
                p->t = (struct gw_pub_task){ .job_id = j->id,
                                             .uid = (uid_t) j->uid,
                                             .user = gw_xstrdup(j->user),
                                             .name = gw_xstrdup(j->publish),
                                             .metric = j->publish_metric ? gw_xstrdup(j->publish_metric) : NULL,
                                             .run_dir = gw_xstrdup(run),
                                             .store = gw_xstrdup(d->cfg->model_store),
                                             .commit = commit_of(j),
                                             .time = d->now_wall };
                struct gw_publisher *s = d->publish;
                if (s->n == s->cap)
                        s->queue = gw_xrealloc(s->queue, (s->cap = s->cap ? 2 * s->cap : 8) * sizeof *s->queue);
                s->queue[s->n++] = p;
                start_next(d);
                return;
        }
        record(d, j->id, "not_published", msg);
}

gw_usec_t gw_publish_tick(struct gw_daemon *d) {
        struct gw_publisher *s = d->publish;
        if (!s || !s->cur)
                return GW_USEC_INFINITY;
        if (!atomic_load(&s->cur->done))
                return d->now + POLL_USEC;
        struct pub_job *p = s->cur;
        (void) pthread_join(p->thread, NULL);
        s->cur = NULL;
        record(d, p->t.job_id, p->t.outcome == GW_PUB_PUBLISHED ? "published" : "not_published", p->t.msg);
        pub_job_free(p);
        start_next(d);
        return s->cur ? d->now + POLL_USEC : GW_USEC_INFINITY;
}

void gw_publish_close(struct gw_daemon *d) {
        struct gw_publisher *s = d->publish;
        if (!s)
                return;
        if (s->cur) {
                (void) pthread_join(s->cur->thread, NULL);
                record(d, s->cur->t.job_id, s->cur->t.outcome == GW_PUB_PUBLISHED ? "published" : "not_published",
                       s->cur->t.msg);
                pub_job_free(s->cur);
        }
        for (size_t i = 0; i < s->n; i++) {
                char msg[200];
                snprintf(msg, sizeof msg, "not published as %s: gpuwardd stopped before its copy", s->queue[i]->t.name);
                record(d, s->queue[i]->t.job_id, "not_published", msg);
                pub_job_free(s->queue[i]);
        }
        free(s->queue);
        free(s);
        d->publish = NULL;
}
