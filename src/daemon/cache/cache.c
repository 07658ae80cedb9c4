/* The dataset cache, the loop's side (cache.h): which queued and running jobs use which
 * entries, their copies' progress, failures and retries.  The entries, their versions and the
 * copies' start and end are the store's (cache_store.c, the layout under cache_dir there). */
#include "daemon/cache/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/sha256.h"
#include "base/userdb.h"
#include "core/cache.h"
#include "core/jobrec.h"
#include "core/retry.h"
#include "core/sched.h"
#include "daemon/cache/cache_int.h"
#include "daemon/base/config.h"
#include "daemon/exec/executor.h"
#include "daemon/life/jobs.h"

#define TICK (200 * GW_USEC_PER_MSEC)

static void stage_waiting(struct gw_daemon *d);

int gw_cache_open(struct gw_daemon *d) {
        if (!d->cfg->cache_dir || !*d->cfg->cache_dir)
                return 0;
        struct gw_cache *c = gw_xcalloc(1, sizeof *c);
        c->scan = true;
        d->cache = c;
        return gw_cache_store_open(c, d->cfg->cache_dir);
}

static struct gw_cache_job *cjob_free(struct gw_cache_job *cj) {
        if (!cj)
                return NULL;
        if (cj->rfd >= 0)
                (void) close(cj->rfd);
        if (cj->gofd >= 0)
                (void) close(cj->gofd);
        free(cj->data_dir);
        free(cj->yaml);
        free(cj);
        return NULL;
}

void gw_cache_close(struct gw_daemon *d) {
        struct gw_cache *c = d->cache;
        if (!c)
                return;
        for (struct gw_cache_job *f = c->flight, *nx; f; f = nx) {
                nx = f->next;
                (void) kill(-f->pid, SIGKILL);
                if (f->dj)
                        f->dj->cache = NULL;
                cjob_free(f);
        }
        gw_cache_store_done(c);
        free(c);
        d->cache = NULL;
}

static int refuse(struct gw_submit_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(struct gw_submit_error *err, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        err->status = 400;
        snprintf(err->field, sizeof err->field, "dataset");
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

int gw_cache_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err) {
        (void) ahead;
        if (!j->dataset)
                return 0;
        /* On a cluster the node Slurm picks stages it, by its agent (exec_slurm_stage.c): this
         * host's cache plays no part; its cache_sources still says what may be asked for. */
        bool here = gw_backend_placement(d) == GW_EXEC_PLACE_HERE;
        if (!d->cache && here)
                return refuse(err, "dataset: this host has no dataset cache (cache_dir is none in gpuward.conf)");
        if (!here && strchr(j->dataset, '\n'))
                return refuse(err, "dataset: a path with a newline cannot be asked of a node's agent");
        if (!gw_cache_source_allowed(d->cfg->cache_sources, j->dataset))
                return refuse(err, "dataset: %.120s is not under cache_sources (%.80s)", j->dataset,
                              *d->cfg->cache_sources ? d->cfg->cache_sources : "empty: none allowed");
        return 0;
}

static void set_waiting(struct gw_daemon *d, struct gw_djob *dj, const char *detail) {
        struct gw_job *j = dj->job;
        if (j->state == GW_JOB_PENDING && (j->wait_reason == GW_REASON_NONE || j->wait_reason == GW_REASON_RESOURCES ||
                                           j->wait_reason == GW_REASON_PRIORITY || j->wait_reason == GW_REASON_STAGING))
                j->wait_reason = GW_REASON_STAGING;
        gw_job_text_set(&j->wait_detail, detail);
        (void) d;
}

/* Starts the helper for dj's copy, unless another job's copy of the same dataset is under
 * way: then it waits for that one and walks the source after it (which links everything). */
static void stage(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_cache *c = d->cache;
        struct gw_cache_job *cj = dj->cache;
        if (cj->pid > 0 || cj->ready || cj->retry_at)
                return;
        /* One copy of an entry at a time: the next one links what this one copies. */
        if (cj->e->staging) {
                set_waiting(d, dj, "waiting for another job's copy of the same dataset");
                return;
        }
        /* Copies share the source's server and the node's disk: more at once are no faster. */
        if (c->n_flight >= (size_t) d->cfg->cache_copies) {
                set_waiting(d, dj, "waiting for a copy slot");
                return;
        }
        const struct gw_job *j = dj->job;
        const struct gw_account *a = gw_userdb_uid(d->users, (uint32_t) j->uid, d->now);
        free(cj->yaml);
        cj->yaml = NULL;
        struct stat st;
        if (stat(j->dataset, &st) < 0 || !S_ISDIR(st.st_mode)) { /* a data YAML, or to be told */
                if (asprintf(&cj->yaml, "%s/yaml/%lld.yaml", c->dir, (long long) j->id) < 0)
                        abort();
        }
        uint32_t gid = (uint32_t) j->gid;
        struct gw_cache_copy args = {
                .source = j->dataset,
                .sources = d->cfg->cache_sources,
                .uid = (uid_t) j->uid,
                .gid = (gid_t) j->gid,
                .groups = a ? a->groups : &gid,
                .n_groups = a ? a->n_groups : 1,
                .yaml_out = cj->yaml,
        };
        int r = gw_cache_helper_start(c, cj, &args);
        if (r < 0) {
                log_warn("job %lld: cannot fork the dataset copy: %s", (long long) j->id, strerror(-r));
                return;
        }
        dj->job->dataset_state = "copying";
        set_waiting(d, dj, "listing the source as its user");
        log_info("job %lld: staging %s into the cache as %s (helper pid %d)", (long long) j->id, j->dataset, j->user,
                 (int) cj->pid);
}

void gw_cache_job_queued(struct gw_daemon *d, struct gw_djob *dj) {
        if (!d->cache || gw_backend_placement(d) != GW_EXEC_PLACE_HERE || !dj->job->dataset || dj->cache ||
            dj->job->state == GW_JOB_RUNNING || gw_job_state_is_final(dj->job->state))
                return;
        struct gw_cache_job *cj = gw_xcalloc(1, sizeof *cj);
        *cj = (struct gw_cache_job){ .e = gw_cache_entry_get(d->cache, dj->job->dataset),
                                     .dj = dj,
                                     .rfd = -1,
                                     .gofd = -1 };
        dj->cache = cj;
        dj->job->dataset_state = "waiting";
        stage(d, dj);
        d->jobs.deps_changed = true; /* a pass even when every GPU is busy: its reason */
        d->jobs.sched_dirty = true;
}

static void take_line(struct gw_daemon *d, struct gw_cache_job *cj, char *line) {
        char whom[48];
        snprintf(whom, sizeof whom, "job %lld", cj->dj ? (long long) cj->dj->job->id : 0LL);
        if (!gw_cache_helper_ask(d->cache, cj, line, d->cfg->cache_size, whom, !cj->dj))
                gw_cache_helper_line(cj, line);
        if (cj->dj && !cj->ready && cj->told_total) {
                char detail[128];
                gw_cache_progress_text(cj->done, cj->total, detail, sizeof detail);
                set_waiting(d, cj->dj, detail);
        }
}

static void take(void *ctx, struct gw_cache_job *cj, char *line) { take_line(ctx, cj, line); }

static void drain(struct gw_daemon *d, struct gw_cache_job *cj) { gw_cache_helper_drain(cj, take, d); }

/* The copies whose backoff is over start again; the next backoff's end, or next. */
static gw_usec_t retries_due(struct gw_daemon *d, gw_usec_t next) {
        bool due = false;
        for (size_t i = 0; i < d->jobs.n_queue; i++) {
                struct gw_cache_job *cj = d->jobs.queue[i]->cache;
                if (!cj || !cj->retry_at)
                        continue;
                if (cj->retry_at > d->now) {
                        next = cj->retry_at < next ? cj->retry_at : next;
                        continue;
                }
                cj->retry_at = 0;
                d->cache->n_retrying--;
                d->jobs.queue[i]->job->dataset_state = "waiting";
                due = true;
        }
        if (due)
                stage_waiting(d); /* in queue order, as far as the slots go */
        return next;
}

gw_usec_t gw_cache_tick(struct gw_daemon *d) {
        struct gw_cache *c = d->cache;
        if (!c)
                return GW_USEC_INFINITY;
        if (c->scan) { /* the restart's recovery is over: queued jobs from before it get their copies */
                c->scan = false;
                gw_cache_recovery_done(c);
                for (size_t i = 0; i < d->jobs.n_queue; i++)
                        gw_cache_job_queued(d, d->jobs.queue[i]);
        }
        for (struct gw_cache_job *f = c->flight; f; f = f->next)
                if (f->rfd >= 0)
                        drain(d, f);
        gw_usec_t next = c->flight ? d->now + TICK : GW_USEC_INFINITY;
        if (c->n_retrying)
                next = retries_due(d, next);
        return next;
}

/* The copy is verified (OK: a new version; SAME: the one before serves): the job may start. */
static void ready(struct gw_daemon *d, struct gw_cache_job *cj, bool same) {
        struct gw_cache *c = d->cache;
        struct gw_cache_entry *e = cj->e;
        struct gw_djob *dj = cj->dj;
        gw_cache_helper_keep(c, cj, same, d->now_wall);
        unsigned long long copied = 0;
        (void) sscanf(cj->result, "OK %llu", &copied);
        gw_cache_add_user(e, dj->job->user);
        free(cj->data_dir);
        cj->data_dir = gw_cache_path(c, e, cj->pin->v, "data");
        dj->job->dataset_dir = cj->data_dir;
        dj->job->data_yaml = cj->yaml;
        dj->job->dataset_state = "ready";
        gw_cache_use_save(d, e); /* its last use, its users and this job's pin outlive a restart */
        if (dj->job->wait_reason == GW_REASON_STAGING)
                dj->job->wait_reason = GW_REASON_RESOURCES;
        gw_job_text_set(&dj->job->wait_detail, NULL);
        log_info("job %lld: dataset %s ready in the cache (%s, %llu bytes copied)", (long long) dj->job->id,
                 dj->job->dataset, same ? "unchanged: the cached copy serves" : "new version", copied);
}

/* The queue's jobs whose copy waits (for a slot, or for another job's copy of the same
 * dataset) start theirs, first come first, as far as the slots go. */
static void stage_waiting(struct gw_daemon *d) {
        for (size_t i = 0; i < d->jobs.n_queue; i++) {
                struct gw_djob *q = d->jobs.queue[i];
                if (q->cache && !q->cache->ready && q->cache->pid <= 0 && !q->cache->retry_at)
                        stage(d, q);
        }
}

/* The helper's "ERR CLASS WHY" as a verdict; a helper that died says nothing: lost. */
static void failure_verdict(const struct gw_cache_job *cj, struct gw_failure_verdict *v, const char **why) {
        *v = (struct gw_failure_verdict){ .cls = GW_FAILURE_LOST };
        *why = "the copying helper died";
        if (strncmp(cj->result, "ERR ", 4))
                return;
        char cls[32];
        int at = 0;
        *why = cj->result + 4;
        if (sscanf(cj->result + 4, "%31s %n", cls, &at) == 1 && at > 0 && gw_failure_class_from_name(cls) >= 0) {
                v->cls = gw_failure_class_from_name(cls);
                *why += at;
        }
}

/* A copy failed: the job's retry policy decides, as for a failed attempt (core/retry.h), with
 * the copies made so far as its attempts.  Retried: the job waits out the backoff, still
 * queued, holding no GPU; else it fails with the copy's reason. */
static void copy_failed(struct gw_daemon *d, struct gw_cache_job *cj) {
        struct gw_djob *dj = cj->dj;
        struct gw_job *j = dj->job;
        struct gw_failure_verdict v;
        const char *why;
        failure_verdict(cj, &v, &why);
        snprintf(v.evidence, sizeof v.evidence, "%s", why);
        struct gw_retry_policy p;
        gw_job_retry_policy(d, j, &p);
        struct gw_retry_state st = { .attempts = ++cj->failures };
        struct gw_retry_decision dec;
        char reason[700];
        snprintf(reason, sizeof reason, "dataset %s: %s", j->dataset, why);
        if (gw_retry_decide(&p, &st, &v, d->now_wall, &dec) == 0 && dec.retry) {
                char wait[32], detail[900];
                gw_format_duration(dec.backoff, wait, sizeof wait);
                snprintf(detail, sizeof detail, "copy failed (%s); retry %u/%u in %s", why, dec.retry_no, p.max_retries,
                         wait);
                cj->retry_at = d->now + dec.backoff;
                d->cache->n_retrying++;
                j->dataset_state = "retrying";
                set_waiting(d, dj, detail);
                log_info("job %lld: %s; %s", (long long) j->id, reason, dec.reason);
                size_t l = strlen(reason);
                snprintf(reason + l, sizeof reason - l, "; copy retry %u/%u in %s", dec.retry_no, p.max_retries, wait);
                (void) gw_store_job_event(d->store, j->id, j->state, "dataset", reason);
                return;
        }
        if (dec.why == GW_RETRY_WHY_EXHAUSTED) {
                size_t l = strlen(reason);
                snprintf(reason + l, sizeof reason - l, "; %s", dec.reason);
        }
        log_info("job %lld: %s", (long long) j->id, reason);
        dj->cache = cjob_free(cj);
        j->dataset_state = NULL;
        (void) gw_job_end(d, dj, GW_JOB_FAILED, reason, "dataset");
}

bool gw_cache_reaped(struct gw_daemon *d, pid_t pid, int status) {
        struct gw_cache *c = d->cache;
        struct gw_cache_job *cj = c ? c->flight : NULL;
        while (cj && cj->pid != pid)
                cj = cj->next;
        if (!cj)
                return false;
        drain(d, cj);
        int got = gw_cache_helper_reaped(c, cj, status);
        if (!cj->dj) { /* its job went while it copied: what it made goes too */
                gw_cache_helper_drop(c, cj);
                cjob_free(cj);
        } else if (got)
                ready(d, cj, got == 2);
        else {
                gw_cache_helper_drop(c, cj);
                copy_failed(d, cj);
        }
        stage_waiting(d);
        d->jobs.deps_changed = true;
        d->jobs.sched_dirty = true;
        return true;
}

void gw_cache_sched(struct gw_daemon *d, struct gw_sched_job *pending, size_t n) {
        if (!d->cache || gw_backend_placement(d) != GW_EXEC_PLACE_HERE)
                return;
        for (size_t i = 0; i < n; i++) {
                struct gw_djob *dj = d->jobs.queue[i];
                if (!dj->job->dataset || (dj->cache && dj->cache->ready))
                        continue;
                if (!pending[i].blocked)
                        pending[i].blocked = GW_REASON_STAGING;
        }
}

void gw_cache_job_freed(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_cache_job *cj = dj->cache;
        if (!cj)
                return;
        dj->cache = NULL;
        dj->job->dataset_dir = dj->job->data_yaml = NULL;
        dj->job->dataset_state = NULL;
        if (cj->retry_at)
                d->cache->n_retrying--;
        if (cj->yaml)
                (void) unlink(cj->yaml);
        if (cj->pid > 0) { /* reaped later (gw_cache_reaped) */
                (void) kill(-cj->pid, SIGKILL);
                cj->dj = NULL;
                return;
        }
        /* Let go at the daemon's stop, a running job keeps reading its copy: its pin stays
         * in the use file and its version on disk for the next daemon (cache_use.c). */
        struct gw_cache *c = d->cache;
        bool ended = gw_job_state_is_final(dj->job->state);
        if (c)
                gw_cache_unpin(c, cj, ended);
        if (c && cj->ready && ended)
                gw_cache_use_save(d, cj->e);
        cjob_free(cj);
}

size_t gw_cache_rows(struct gw_daemon *d, const char *user, bool admin, struct gw_cache_row **ret) {
        struct gw_cache *c = d->cache;
        size_t n = 0, k = 0;
        for (struct gw_cache_entry *e = c ? c->entries : NULL; e; e = e->next)
                n++;
        struct gw_cache_row *rows = gw_xcalloc(n + 1, sizeof *rows);
        for (struct gw_cache_entry *e = c ? c->entries : NULL; e; e = e->next) {
                if (!e->vers && !e->staging) /* a first copy that failed: nothing cached */
                        continue;
                bool mine = admin;
                for (size_t i = 0; i < e->n_users && !mine; i++)
                        mine = !strcmp(e->users[i], user);
                if (!mine)
                        continue;
                rows[k++] = (struct gw_cache_row){
                        .source = e->source,
                        .size = gw_cache_entry_size(e),
                        .files = e->vers ? e->vers->files : 0,
                        .version = e->vers ? e->vers->v : 0,
                        .last_use = e->last_use,
                        .users = (const char *const *) e->users,
                        .n_users = e->n_users,
                        .in_use = gw_cache_entry_in_use(e),
                        .staging = e->staging != NULL,
                };
        }
        *ret = rows;
        return k;
}

void gw_cache_counts(const struct gw_daemon *d, struct gw_cache_counts *ret) {
        *ret = d->cache ? d->cache->counts : (struct gw_cache_counts){ 0 };
}
