/* The fake executor (fake_exec.h). */
#include "fake_exec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/life/queue.h"

/* Its state of a job: the index of the attempt on record. */
struct gw_exec_job {
        size_t idx;
};

static struct fake_exec *fake_of(const struct gw_daemon *d) { return d->exec->state; }

static void job_free(struct gw_djob *dj) {
        free(dj->exec);
        dj->exec = NULL;
}

static struct fake_attempt *attempt_new(struct fake_exec *f, struct gw_djob *dj, bool adopted) {
        if (f->n == FAKE_EXEC_MAX) {
                fprintf(stderr, "fake executor: more than %d attempts\n", FAKE_EXEC_MAX);
                abort();
        }
        struct fake_attempt *a = &f->v[f->n];
        *a = (struct fake_attempt){ .job_id = dj->job->id, .attempt = dj->job->attempt, .adopted = adopted };
        if (!dj->exec) {
                dj->exec = gw_xcalloc(1, sizeof *dj->exec);
                dj->exec_free = job_free;
        }
        dj->exec->idx = f->n++;
        return a;
}

static struct fake_attempt *attempt_of(struct gw_daemon *d, const struct gw_djob *dj) {
        return dj->exec ? &fake_of(d)->v[dj->exec->idx] : NULL;
}

static void prepare(struct gw_daemon *d, struct gw_djob *dj) {}

static int start(struct gw_daemon *d, struct gw_djob *dj, const struct gw_exec_start *how, char *err, size_t errlen) {
        struct fake_exec *f = fake_of(d);
        if (f->start_error) {
                int r = f->start_error;
                f->start_error = 0;
                snprintf(err, errlen, "fake executor: start refused: %s", strerror(-r));
                return r;
        }
        (void) attempt_new(f, dj, false);
        return 0;
}

static int signal_job(struct gw_daemon *d, struct gw_djob *dj, int sig, unsigned flags) {
        struct fake_attempt *a = attempt_of(d, dj);
        if (!a)
                return -ESRCH;
        if (a->ended) {
                a->late_signals++;
                return -ESRCH;
        }
        if (a->n_signals < FAKE_EXEC_SIGNALS)
                a->signals[a->n_signals++] = sig;
        return 0;
}

static int adopt_begin(struct gw_daemon *d) {
        fake_of(d)->adopt_begun++;
        return 0;
}

/* A job the test listed as running is adopted; any other ends lost, as a real executor's
 * would when nothing of its attempt is left. */
static int adopt(struct gw_daemon *d, struct gw_djob *dj) {
        struct fake_exec *f = fake_of(d);
        struct fake_attempt *a = attempt_new(f, dj, true);
        for (size_t i = 0; i < f->n_running; i++)
                if (f->running[i] == dj->job->id)
                        return 1;
        a->ended = true;
        f->ends_told++;
        d->exec->ended(d, dj, &(struct gw_exec_end){ .kind = GW_EXEC_LOST });
        return 0;
}

static void adopt_end(struct gw_daemon *d) { fake_of(d)->adopt_ended++; }

static void ready(struct gw_daemon *d, struct gw_source *src) {}

static bool reaped(struct gw_daemon *d, pid_t pid, int status) { return false; }

static gw_usec_t tick(struct gw_daemon *d) { return GW_USEC_INFINITY; }

static void release(struct gw_daemon *d, struct gw_djob *dj, bool started) {}

static void sync_ends(struct gw_daemon *d) {}

static void end_facts(struct gw_daemon *d, const struct gw_djob *dj, struct gw_failure_input *in) {}

static void close_exec(struct gw_daemon *d) { d->exec = NULL; }

struct fake_exec *fake_exec_new(void) {
        struct fake_exec *f = gw_xcalloc(1, sizeof *f);
        f->ops = (struct gw_executor){
                .name = "fake",
                .state = f,
                /* Answers as the local backend does: the lifecycle under test is the local one's. */
                .placement = GW_EXEC_PLACE_HERE,
                .preempts = true,
                .prepare = prepare,
                .start = start,
                .signal = signal_job,
                .adopt_begin = adopt_begin,
                .adopt = adopt,
                .adopt_end = adopt_end,
                .ready = ready,
                .reaped = reaped,
                .tick = tick,
                .release = release,
                .sync = sync_ends,
                .end_facts = end_facts,
                .close = close_exec,
        };
        return f;
}

struct fake_attempt *fake_exec_attempt(struct fake_exec *f, int64_t id) {
        for (size_t i = f->n; i-- > 0;)
                if (f->v[i].job_id == id)
                        return &f->v[i];
        return NULL;
}

static void tell_end(struct gw_daemon *d, struct fake_exec *f, int64_t id, const struct gw_exec_end *end) {
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, id);
        struct fake_attempt *a = dj ? attempt_of(d, dj) : NULL;
        if (!a || a->ended) {
                fprintf(stderr, "fake executor: job %lld has no running attempt to end\n", (long long) id);
                abort();
        }
        a->ended = true;
        f->ends_told++;
        d->exec->ended(d, dj, end);
}

void fake_exec_exit(struct gw_daemon *d, struct fake_exec *f, int64_t id, int status) {
        tell_end(d, f, id, &(struct gw_exec_end){ .kind = GW_EXEC_EXITED, .status = status });
}

void fake_exec_lose(struct gw_daemon *d, struct fake_exec *f, int64_t id) {
        tell_end(d, f, id, &(struct gw_exec_end){ .kind = GW_EXEC_LOST });
}
