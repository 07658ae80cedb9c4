/* Job arrays (sweeps) in the daemon: see jobarray.h and docs/DESIGN.md, "Job arrays". */
#include "daemon/life/jobarray.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/jobarray.h"
#include "store/jobarray.h"

struct gw_array *gw_array_free(struct gw_array *a) {
        if (a) {
                gw_array_done(a);
                free(a);
        }
        return NULL;
}

/* The array's indexes, parsed once while it is in memory: 4 bytes a task. */
static const struct gw_array *array_of(struct gw_djob *dj) {
        if (!dj->array && dj->job->array_spec) {
                struct gw_array a;
                char msg[GW_ARRAY_MSG_SIZE];
                if (gw_array_parse(dj->job->array_spec, "array", &a, msg, sizeof msg) < 0) {
                        log_err("job %lld: its array spec no longer parses: %s", (long long) dj->job->id, msg);
                        return NULL;
                }
                dj->array = gw_xmalloc(sizeof *dj->array);
                *dj->array = a;
        }
        return dj->array;
}

/* Its tasks in memory: running, and queued (retries waiting their turn). */
static void live_tasks(const struct gw_daemon *d, int64_t array_id, size_t *ret_running, size_t *ret_queued) {
        size_t running = 0, queued = 0;
        for (size_t i = 0; i < d->jobs.n_running; i++)
                running += d->jobs.running[i]->job->array_job == array_id;
        for (size_t i = 0; i < d->jobs.n_queue; i++)
                queued += d->jobs.queue[i]->job->array_job == array_id;
        *ret_running = running;
        *ret_queued = queued;
}

/* Whether the array hands out no more tasks: all handed out, or it was cancelled. */
static bool array_exhausted(struct gw_djob *dj) {
        const struct gw_array *a = array_of(dj);
        return !a || dj->job->array_next >= a->n || dj->job->stop_state == GW_JOB_CANCELLED;
}

bool gw_array_may_start(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *j = dj->job;
        struct gw_djob *array = j->array_job > 0 ? gw_jobmap_get(&d->jobs.map, j->array_job) : dj;
        if (!array || !array->job->array_spec)
                return true; /* a task whose array ended (cancelled): a job as any other */
        const struct gw_array *a = array_of(array);
        size_t running, queued;
        live_tasks(d, array->job->id, &running, &queued);
        bool ok = a && (array != dj || !array_exhausted(dj)) && (!a->max_running || running < a->max_running);
        if (!ok && j->state == GW_JOB_PENDING)
                j->wait_reason = GW_REASON_ARRAY_LIMIT;
        return ok;
}

/* A task's --output: the array's, with sbatch's %A (the array's id) and %a (the task's
 * index) filled in, so that tasks need not share one file. */
static struct gw_job *task_new(const struct gw_job *p, uint32_t index, uint32_t count) {
        struct gw_job *t = gw_xcalloc(1, sizeof *t);
        t->name = gw_xstrdup(p->name);
        t->uid = p->uid;
        t->gid = p->gid;
        t->user = gw_xstrdup(p->user);
        t->state = GW_JOB_PENDING;
        t->wait_reason = GW_REASON_RESOURCES;
        t->priority = p->priority;
        t->ngpus = p->ngpus;
        t->gpu_mem = p->gpu_mem;
        t->time_limit = p->time_limit;
        t->argv = gw_strv_copy(p->argv);
        t->env = gw_strv_copy(p->env);
        t->env_extra = gw_strv_copy(p->env_extra);
        t->cwd = gw_xstrdup(p->cwd);
        t->output = p->output ? gw_xstrdup(p->output) : NULL; /* %A, %a: at its start (jobs.c) */
        t->submit_time = p->submit_time;
        t->attempt = 1;
        t->retries = p->retries;
        t->retry_on = p->retry_on ? gw_xstrdup(p->retry_on) : NULL;
        t->yolo = p->yolo;
        t->checkpoint = p->checkpoint ? gw_xstrdup(p->checkpoint) : NULL;
        t->resume_cmd = p->resume_cmd ? gw_xstrdup(p->resume_cmd) : NULL;
        t->idle_policy = p->idle_policy ? gw_xstrdup(p->idle_policy) : NULL;
        t->progress_file = p->progress_file ? gw_xstrdup(p->progress_file) : NULL;
        t->health_url = p->health_url ? gw_xstrdup(p->health_url) : NULL;
        /* Each task of a sweep publishes its own run (--publish-if-better: the better ones). */
        t->publish = p->publish ? gw_xstrdup(p->publish) : NULL;
        t->publish_metric = p->publish_metric ? gw_xstrdup(p->publish_metric) : NULL;
        t->booking_id = p->booking_id;
        t->leak_policy = p->leak_policy ? gw_xstrdup(p->leak_policy) : NULL;
        t->warn_signal = p->warn_signal;
        t->warn_before = p->warn_before;
        t->array_job = p->id;
        t->array_index = index;
        t->array_next = count; /* a task keeps its array's size here: GPUWARD_ARRAY_TASK_COUNT */
        return t;
}

/* Skips the tasks that have a row already (cancelled before they started, or recorded by a
 * daemon that died before it recorded the array's progress). */
static int skip_recorded(struct gw_daemon *d, struct gw_djob *dj, const struct gw_array *a) {
        struct gw_job *p = dj->job;
        uint32_t was = p->array_next;
        while (p->array_next < a->n) {
                int64_t id;
                int r = gw_store_array_task(d->store, p->id, a->ids[p->array_next], &id);
                if (r == -ENOENT)
                        break;
                if (r < 0) {
                        p->array_next = was;
                        return r;
                }
                p->array_next++;
        }
        if (p->array_next != was) {
                int r = gw_store_array_next_set(d->store, p->id, p->array_next);
                if (r < 0) {
                        p->array_next = was;
                        return r;
                }
        }
        return 0;
}

static void maybe_finish(struct gw_daemon *d, struct gw_djob *dj);

int gw_array_start_task(struct gw_daemon *d, struct gw_djob *dj, uint64_t mask) {
        struct gw_job *p = dj->job;
        const struct gw_array *a = array_of(dj);
        if (!a)
                return -EINVAL;
        /* Not inside the loop's batch: a batch whose commit fails undoes its starts in memory
         * only, and a task whose row went with the rollback would run with no row.  The pass
         * at the top of the next iteration, outside any batch, hands the task out. */
        if (d->jobs.in_batch) {
                d->jobs.sched_dirty = true;
                return 0;
        }
        int r = skip_recorded(d, dj, a);
        if (r < 0)
                return r;
        if (array_exhausted(dj)) {
                maybe_finish(d, dj);
                return 0;
        }
        uint32_t index = a->ids[p->array_next];
        struct gw_job *t = task_new(p, index, (uint32_t) a->n);
        char msg[200];
        snprintf(msg, sizeof msg, "task %lld_%u (%u of %zu) of array %lld, submitted by %s", (long long) p->id, index,
                 p->array_next + 1, a->n, (long long) p->id, p->user);
        /* The task's row and the array's progress together: a restart finds both or neither. */
        bool begun = (r = gw_store_begin(d->store)) == 0;
        if (!begun || (r = gw_store_job_insert(d->store, t, msg)) < 0 ||
            (r = gw_store_array_next_set(d->store, p->id, p->array_next + 1)) < 0 ||
            (r = gw_store_commit(d->store)) < 0) {
                log_err("array %lld: cannot record task %u, not starting it: %s", (long long) p->id, index,
                        gw_store_errmsg(d->store));
                if (begun)
                        (void) gw_store_rollback(d->store);
                gw_job_free(t);
                return r;
        }
        p->array_next++;
        log_info("job %lld: task %lld_%u of array %lld", (long long) t->id, (long long) p->id, index,
                 (long long) p->id);
        gw_job_enqueue(d, t);
        struct gw_djob *tdj = gw_jobmap_get(&d->jobs.map, t->id);
        return tdj ? gw_job_start(d, tdj, mask) : 0; /* refused: it stays queued, a job as any other */
}

struct tally {
        uint32_t rows, counts[_GW_JOB_STATE_MAX];
};

static void tally_cb(const struct gw_store_array_task *t, void *userdata) {
        struct tally *c = userdata;
        c->rows++;
        if ((unsigned) t->state < _GW_JOB_STATE_MAX)
                c->counts[t->state]++;
}

/* Ends the array once it hands out no more tasks and none of them is live: COMPLETED when
 * every task completed; CANCELLED when it was cancelled, or when the tasks that did not
 * complete were all cancelled; FAILED when one failed (or timed out, or was reclaimed). */
static void maybe_finish(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job *p = dj->job;
        const struct gw_array *a = array_of(dj);
        size_t running, queued;
        live_tasks(d, p->id, &running, &queued);
        if (!array_exhausted(dj) || running || queued || gw_job_state_is_final(p->state))
                return;
        struct tally c = { 0 };
        if (gw_store_array_tasks(d->store, p->id, tally_cb, &c) < 0) {
                log_warn("array %lld: cannot read its tasks to end it: %s", (long long) p->id,
                         gw_store_errmsg(d->store));
                return;
        }
        size_t n = a ? a->n : c.rows;
        uint32_t never = c.rows < n ? (uint32_t) (n - c.rows) : 0;
        char why[300];
        int k = snprintf(why, sizeof why, "%s%s%u of %zu tasks completed", p->stop_reason ? p->stop_reason : "",
                         p->stop_reason ? ": " : "", c.counts[GW_JOB_COMPLETED], n);
        for (int s = GW_JOB_FAILED; s < _GW_JOB_STATE_MAX && k > 0 && (size_t) k < sizeof why; s++)
                if (c.counts[s])
                        k += snprintf(why + k, sizeof why - k, ", %u %s", c.counts[s], gw_job_state_name(s));
        if (never && k > 0 && (size_t) k < sizeof why)
                snprintf(why + k, sizeof why - k, ", %u never ran", never);
        uint32_t failed = c.counts[GW_JOB_FAILED] + c.counts[GW_JOB_TIMEOUT] + c.counts[GW_JOB_RECLAIMED];
        enum gw_job_state st = c.counts[GW_JOB_COMPLETED] == n                ? GW_JOB_COMPLETED
                               : p->stop_state == GW_JOB_CANCELLED || !failed ? GW_JOB_CANCELLED
                                                                              : GW_JOB_FAILED;
        (void) gw_job_end(d, dj, st, why, "array");
}

void gw_array_end_if_done(struct gw_daemon *d, struct gw_djob *dj) {
        if (dj->job->array_spec && !dj->dead)
                maybe_finish(d, dj);
}

void gw_array_job_ended(struct gw_daemon *d, const struct gw_job *j) {
        struct gw_djob *array = j->array_job > 0 ? gw_jobmap_get(&d->jobs.map, j->array_job) : NULL;
        if (array && array->job->array_spec)
                maybe_finish(d, array);
}

int gw_array_cancel(struct gw_daemon *d, struct gw_djob *dj, const char *reason, bool waiting_only) {
        struct gw_job *p = dj->job;
        enum gw_job_state was = p->stop_state;
        char *was_reason = p->stop_reason;
        p->stop_state = GW_JOB_CANCELLED;
        p->stop_reason = gw_xstrdup(reason);
        int r = gw_store_job_update(d->store, p, "cancel", reason);
        if (r < 0) {
                free(p->stop_reason);
                p->stop_state = was;
                p->stop_reason = was_reason;
                return r;
        }
        free(was_reason);
        log_info("job %lld: array cancelled%s: %s", (long long) p->id, waiting_only ? " (its waiting tasks)" : "",
                 reason);
        /* Copied first: a cancel reshapes the running set and the queue. */
        size_t n = d->jobs.n_running + d->jobs.n_queue, k = 0;
        _cleanup_free_ int64_t *ids = gw_xmalloc((n + 1) * sizeof *ids);
        for (size_t i = 0; i < d->jobs.n_running && !waiting_only; i++)
                if (d->jobs.running[i]->job->array_job == p->id)
                        ids[k++] = d->jobs.running[i]->job->id;
        for (size_t i = 0; i < d->jobs.n_queue; i++)
                if (d->jobs.queue[i]->job->array_job == p->id)
                        ids[k++] = d->jobs.queue[i]->job->id;
        for (size_t i = 0; i < k; i++) {
                struct gw_djob *t = gw_jobmap_get(&d->jobs.map, ids[i]);
                if (t && !t->terminating)
                        (void) gw_job_cancel(d, t, reason);
        }
        maybe_finish(d, dj);
        d->jobs.sched_dirty = true;
        return 0;
}

bool gw_array_has_task(struct gw_djob *dj, int64_t index) {
        const struct gw_array *a = array_of(dj);
        size_t lo = 0, hi = a ? a->n : 0;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (a->ids[mid] < index)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return a && lo < a->n && a->ids[lo] == index;
}

int gw_array_cancel_waiting(struct gw_daemon *d, struct gw_djob *dj, int64_t index, const char *reason,
                            int64_t *ret_id) {
        struct gw_job *p = dj->job;
        const struct gw_array *a = array_of(dj);
        if (!a || !gw_array_has_task(dj, index))
                return -ENOENT;
        int64_t id;
        int r = gw_store_array_task(d->store, p->id, index, &id);
        if (r == 0)
                return -EALREADY;
        if (r != -ENOENT)
                return r;
        struct gw_job *t = task_new(p, (uint32_t) index, (uint32_t) a->n);
        t->state = GW_JOB_CANCELLED;
        t->wait_reason = GW_REASON_NONE;
        t->end_reason = gw_xstrdup(reason);
        t->end_time = d->now_wall;
        char msg[200];
        snprintf(msg, sizeof msg, "task %lld_%lld of array %lld, %s", (long long) p->id, (long long) index,
                 (long long) p->id, reason);
        r = gw_store_job_insert(d->store, t, msg);
        if (r == 0)
                r = gw_store_job_update(d->store, t, "cancel", reason); /* its end_reason and end_time */
        if (r == 0) {
                *ret_id = t->id;
                log_info("job %lld: task %lld_%lld of array %lld: CANCELLED: %s", (long long) t->id, (long long) p->id,
                         (long long) index, (long long) p->id, reason);
        }
        gw_job_free(t);
        if (r == 0 && (r = skip_recorded(d, dj, a)) == 0)
                maybe_finish(d, dj);
        return r;
}

int gw_array_task_id(struct gw_daemon *d, int64_t array_id, int64_t index, int64_t *ret_id) {
        return gw_store_array_task(d->store, array_id, index, ret_id);
}

struct summary_rows {
        struct gw_array_summary *s;
        int64_t *idx; /* the rows' indexes, ascending as the store gives them */
        size_t n, cap;
};

static void summary_cb(const struct gw_store_array_task *t, void *userdata) {
        struct summary_rows *rows = userdata;
        if ((unsigned) t->state < _GW_JOB_STATE_MAX)
                rows->s->view.counts[t->state]++;
        if (rows->n == rows->cap) {
                rows->cap = rows->cap ? 2 * rows->cap : 64;
                rows->idx = gw_xrealloc(rows->idx, rows->cap * sizeof *rows->idx);
        }
        rows->idx[rows->n++] = t->index;
}

/* The spec's indexes without a row wait: both lists ascend, one merge. */
static void keep_waiting(struct gw_array_summary *s, const struct summary_rows *rows) {
        size_t w = 0, k = 0;
        for (size_t i = 0; i < s->n_waiting; i++) {
                while (k < rows->n && rows->idx[k] < s->waiting_ids[i])
                        k++;
                if (k == rows->n || rows->idx[k] != s->waiting_ids[i])
                        s->waiting_ids[w++] = s->waiting_ids[i];
        }
        s->n_waiting = w;
}

int gw_array_summarize(struct gw_daemon *d, const struct gw_job *j, struct gw_array_summary *ret) {
        struct gw_array a;
        char msg[GW_ARRAY_MSG_SIZE];
        if (!j->array_spec || gw_array_parse(j->array_spec, "array", &a, msg, sizeof msg) < 0)
                return -EINVAL;
        struct gw_array_summary s = { .view.total = (uint32_t) a.n, .waiting_ids = a.ids, .n_waiting = a.n };
        struct summary_rows rows = { .s = &s };
        int r = gw_store_array_tasks(d->store, j->id, summary_cb, &rows);
        if (r < 0) {
                free(rows.idx);
                free(s.waiting_ids);
                return r;
        }
        keep_waiting(&s, &rows);
        free(rows.idx);
        bool waits = !gw_job_state_is_final(j->state) && j->stop_state != GW_JOB_CANCELLED;
        s.view.counts[waits ? GW_JOB_PENDING : GW_JOB_CANCELLED] += (uint32_t) s.n_waiting;
        if (!waits)
                s.n_waiting = 0;
        if (s.n_waiting) {
                size_t size = s.n_waiting * 8 + 64;
                s.waiting = gw_xmalloc(size);
                if (gw_array_fold(j->id, s.waiting_ids, s.n_waiting, a.max_running, s.waiting, size) < 0) {
                        free(s.waiting);
                        s.waiting = NULL;
                }
        }
        s.view.waiting = s.waiting;
        struct gw_store_array_best best = { .index = -1 };
        s.view.best_index = gw_store_array_best(d->store, j->id, &best) == 0 ? best.index : -1;
        s.view.best_map50_95 = best.map50_95;
        s.view.best_epoch = best.epoch;
        *ret = s;
        return 0;
}

void gw_array_summary_done(struct gw_array_summary *s) {
        free(s->waiting);
        free(s->waiting_ids);
        *s = (struct gw_array_summary){ 0 };
}

size_t gw_array_task_environment(const struct gw_job *j, char **env) {
        static const char *const names[][2] = {
                { "GPUWARD_ARRAY_JOB_ID", "SLURM_ARRAY_JOB_ID" },
                { "GPUWARD_ARRAY_INDEX", "SLURM_ARRAY_TASK_ID" },
                { "GPUWARD_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_COUNT" },
        };
        long long values[] = { (long long) j->array_job, (long long) j->array_index, (long long) j->array_next };
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                for (size_t k = 0; k < 2; k++) {
                        char line[64];
                        snprintf(line, sizeof line, "%s=%lld", names[i][k], values[i]);
                        env[n++] = gw_xstrdup(line);
                }
        return n;
}

uint32_t gw_array_jobs_waiting(struct gw_daemon *d, const struct gw_job *j) {
        if (!j->array_spec)
                return 1;
        struct gw_djob *dj = j->id > 0 ? gw_jobmap_get(&d->jobs.map, j->id) : NULL;
        if (dj && dj->job == j) {
                const struct gw_array *a = array_of(dj);
                return a && !array_exhausted(dj) ? (uint32_t) (a->n - j->array_next) : 0;
        }
        struct gw_array a;
        char msg[GW_ARRAY_MSG_SIZE];
        if (gw_array_parse(j->array_spec, "array", &a, msg, sizeof msg) < 0)
                return 1;
        uint32_t n = (uint32_t) a.n;
        gw_array_done(&a);
        return n;
}
