/* API handlers for GPUs, telemetry series, /metrics and /readyz. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api/codec.h"
#include "api/codec_gpu.h"
#include "api/metrics.h"
#include "base/cleanup.h"
#include "base/parse.h"
#include "core/token.h"
#include "daemon/cache/cache.h"
#include "daemon/http/handlers.h"
#include "daemon/nodes/nodes.h"
#include "daemon/notify/notify.h"
#include "daemon/life/queue.h"
#include "daemon/observe/gpus.h"
#include "daemon/observe/observe.h"
#include "daemon/training/training.h"
#include "store/gpu_events.h"

/* ?limit= (1-GW_NODES_PAGE_MAX nodes, default GW_NODES_PAGE) and ?after=NODE: one page of a
 * cluster's nodes, so that no reply, to a guest least of all, grows with the cluster.  0, or
 * -EINVAL after a 400 naming the field. */
static int nodes_page(const struct gw_http_request *req, struct gw_nodes_page *page, struct gw_http_reply *rep) {
        const char *ql = gw_http_query(req, "limit");
        long long limit = GW_NODES_PAGE;
        if (ql && gw_parse_int(ql, 1, GW_NODES_PAGE_MAX, &limit) < 0) {
                gw_reply_error(rep, 400, "limit", "limit: nodes in the reply, a whole number from 1 to %d",
                               GW_NODES_PAGE_MAX);
                return -EINVAL;
        }
        page->limit = (size_t) limit;
        page->after = gw_http_query(req, "after");
        if (page->after && !gw_token_node_name_valid(page->after)) {
                gw_reply_error(rep, 400, "after",
                               "after: a node's name (the reply's nodes_next), 1-64 letters, "
                               "digits, '.', '-' or '_'");
                return -EINVAL;
        }
        return 0;
}

void gw_on_gpus(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx, struct gw_http_reply *rep,
                const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        struct gw_nodes_page page = { .after = NULL };
        bool cluster = gw_backend_placement(d) == GW_EXEC_PLACE_NODES;
        if (cluster && nodes_page(req, &page, rep) < 0)
                return;
        json_t *o = gw_observe_gpus_json(d, gw_sees_details(d, c));
        if (cluster) { /* the cluster's GPUs, as the nodes' agents report them */
                const char *next;
                json_object_set_new(o, "nodes", gw_nodes_json(d->nodes, d->now, gw_sees_details(d, c), &page, &next));
                json_object_set_new(o, "nodes_next", next ? json_string(next) : json_null());
                json_object_set_new(o, "nodes_total", json_integer(d->nodes ? (json_int_t) d->nodes->n : 0));
        }
        gw_reply_json(rep, 200, o);
}

/* The drain's reason, "TEXT (by USER)", from {"reason": TEXT}; 0, or -EINVAL after a 400. */
static int decode_drain(const json_t *o, const struct gw_caller *c, char *reason, size_t n, struct gw_http_reply *rep) {
        static const char *const fields[] = { "reason" };
        const char *r;
        if (gw_body_check(o, fields, ELEMENTSOF(fields), "a drain", "reason", &r, rep) < 0)
                return -EINVAL;
        size_t len = 0; /* characters, not bytes: UTF-8 continuation bytes do not count */
        for (const char *p = r; p && *p; p++)
                len += ((unsigned char) *p & 0xC0) != 0x80;
        if (!r || len == 0 || len > 200 || strpbrk(r, "\n\r")) {
                gw_reply_error(rep, 400, "reason", "reason: required, 1-200 characters on one line");
                return -EINVAL;
        }
        snprintf(reason, n, "%s (by %s)", r, c->user);
        return 0;
}

/* undrain takes no body; one sent anyway must not hide a field the caller meant. */
static int decode_undrain(const json_t *o, struct gw_http_reply *rep) {
        const char *none;
        return gw_body_check(o, NULL, 0, "an undrain", NULL, &none, rep);
}

void gw_on_gpu_drain(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                     struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        bool drain = strstr(req->path, "/undrain") == NULL;
        if (ctx->id < 0 || (uint64_t) ctx->id >= d->host.n_gpus)
                return gw_reply_error(rep, 404, "index", "no GPU %lld (this host has %u)", (long long) ctx->id,
                                      d->host.n_gpus);
        char reason[256] = "";
        if (drain || req->body_len) {
                json_t *o = gw_parse_body(req, rep);
                if (!o)
                        return;
                int r = drain ? decode_drain(o, c, reason, sizeof reason, rep) : decode_undrain(o, rep);
                json_decref(o);
                if (r < 0)
                        return;
        }
        /* As releasing a job that is not held: a no-op is refused, so that the caller learns
         * that the GPU was usable all along (and no "undrained" event is recorded). */
        if (!drain && !d->host.gpus[ctx->id].drained)
                return gw_reply_error(rep, 409, "index", "GPU %lld is not drained", (long long) ctx->id);
        if (gw_gpu_drain(d, (unsigned) ctx->id, drain, reason, false) < 0)
                return gw_reply_store_error(d, rep, "cannot record the drain");
        gw_reply_json(rep, 200, gw_observe_gpu_json(d, &d->host.gpus[ctx->id], true)); /* admins only */
}

/* limit (1-1000, default 100) and since (Unix seconds, default all) of an events query; 0, or
 * -EINVAL after a 400 naming the field. */
static int events_query(const struct gw_http_request *req, long long *limit, gw_usec_t *since,
                        struct gw_http_reply *rep) {
        const char *ql = gw_http_query(req, "limit"), *qs = gw_http_query(req, "since");
        if (ql && gw_parse_int(ql, 1, 1000, limit) < 0) {
                gw_reply_error(rep, 400, "limit", "limit: must be a whole number from 1 to 1000");
                return -EINVAL;
        }
        if (qs) {
                char *end;
                double s = strtod(qs, &end);
                /* isfinite and the bound keep the conversion to microseconds defined. */
                if (end == qs || *end || !isfinite(s) || s < 0 || s > 1e11) {
                        gw_reply_error(rep, 400, "since", "since: must be a time in Unix seconds (e.g. 1790000000.5)");
                        return -EINVAL;
                }
                *since = (gw_usec_t) (s * 1e6);
        }
        return 0;
}

struct gpu_events_ctx {
        json_t *events;
        bool with_message;
};

static void gpu_event_row(const struct gw_gpu_event_rec *e, void *userdata) {
        struct gpu_events_ctx *ec = userdata;
        json_array_append_new(ec->events, gw_codec_gpu_event(e, ec->with_message));
}

void gw_on_gpu_events(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                      struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        bool one = strstr(ctx->route->pattern, "{index}") != NULL;
        long long limit = 100;
        gw_usec_t since = 0;
        if (events_query(req, &limit, &since, rep) < 0)
                return;
        /* A rogue process's event names another user's pid and command line: a guest (no
         * token on TCP, or a user listed as a guest) sees what happened, not the message. */
        struct gpu_events_ctx ec = { .events = json_array(), .with_message = c->known && !c->guest };
        int n = gw_store_gpu_events(d->store, one ? (int) ctx->id : GW_GPU_EVENTS_ALL, since, (size_t) limit,
                                    gpu_event_row, &ec);
        if (n < 0) {
                json_decref(ec.events);
                return gw_reply_error(rep, 503, NULL, "cannot read the GPU events: %s", gw_store_errmsg(d->store));
        }
        /* A GPU gone from the host keeps its events under its old index; an index that has
         * neither a GPU nor an event is a mistake worth saying. */
        if (one && n == 0 && (uint64_t) ctx->id >= d->host.n_gpus) {
                json_decref(ec.events);
                return gw_reply_error(rep, 404, "index",
                                      "no GPU %lld (this host has %u) and no events recorded for one",
                                      (long long) ctx->id, d->host.n_gpus);
        }
        gw_reply_json(rep, 200, json_pack("{s:o}", "events", ec.events));
}

struct series_ctx {
        bool mem;
        json_t *gpus;
};

static void series_add(json_t *gpus, unsigned gpu, double t, json_t *v) {
        char key[16];
        snprintf(key, sizeof key, "%u", gpu);
        json_t *arr = json_object_get(gpus, key);
        if (!arr) {
                arr = json_array();
                json_object_set_new(gpus, key, arr);
        }
        json_array_append_new(arr, json_pack("[f,o]", t, v));
}

static void series_row(unsigned gpu, const struct gw_store_series_row *row, void *userdata) {
        struct series_ctx *sc = userdata;
        series_add(sc->gpus, gpu, (double) row->t / 1e6,
                   sc->mem ? json_integer((json_int_t) row->mem_mean) : json_real(row->util_mean));
}

void gw_on_series(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                  struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        const char *metric = gw_http_query(req, "metric"), *qs = gw_http_query(req, "since");
        if (!metric)
                metric = "util";
        if (strcmp(metric, "util") && strcmp(metric, "mem"))
                return gw_reply_error(rep, 400, "metric", "metric: must be util or mem");
        double since_s = 0;
        if (qs) {
                char *end;
                since_s = strtod(qs, &end);
                if (end == qs || *end || since_s < 0)
                        return gw_reply_error(rep, 400, "since", "since: must be Unix seconds");
        }
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *j = gw_job_or_reply(d, ctx->id, c, NULL, rep, &tmp);
        if (!j)
                return;
        struct series_ctx sc = { .mem = !strcmp(metric, "mem"), .gpus = json_object() };
        gw_usec_t since = (gw_usec_t) (since_s * 1e6);
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, j->id);
        int resolution = 60;
        size_t n_tel = 0;
        const struct gw_jobtel *tel = dj ? gw_observe_jobtel(d, dj, &n_tel) : NULL;
        if (n_tel) {
                /* Full rate from the in-memory rings while the job runs. */
                resolution = (int) (d->cfg->sample_interval / GW_USEC_PER_SEC);
                for (size_t i = 0; i < n_tel; i++) {
                        const struct gw_ring *r = &tel[i].ring;
                        struct gw_point *pts = gw_xmalloc((r->n ? r->n : 1) * sizeof *pts);
                        size_t n = gw_ring_since(r, since, pts, r->n);
                        for (size_t k = 0; k < n; k++)
                                series_add(sc.gpus, tel[i].gpu, (double) pts[k].t / 1e6,
                                           sc.mem ? json_integer((json_int_t) pts[k].mem) : json_integer(pts[k].util));
                        free(pts);
                }
        } else if (gw_store_series_get(d->store, j->id, since, series_row, &sc) < 0) {
                json_decref(sc.gpus);
                return gw_reply_error(rep, 503, NULL, "cannot read the series: %s", gw_store_errmsg(d->store));
        }
        gw_reply_json(rep, 200,
                      json_pack("{s:s,s:i,s:o}", "metric", metric, "resolution", resolution < 1 ? 1 : resolution,
                                "gpus", sc.gpus));
}

/* The daemon's own process_* figures, from /proc/self. */
static void process_stats(struct gw_metrics_snapshot *m) {
        char buf[1024];
        FILE *f = fopen("/proc/self/stat", "re");
        if (f) {
                size_t n = fread(buf, 1, sizeof buf - 1, f);
                buf[n] = '\0';
                fclose(f);
                char *p = strrchr(buf, ')');
                unsigned long long ut = 0, st = 0, vsize = 0, rss = 0;
                if (p && sscanf(p + 2,
                                "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
                                "%*u %llu %llu",
                                &ut, &st, &vsize, &rss) == 4) {
                        long hz = sysconf(_SC_CLK_TCK);
                        m->cpu_seconds = (double) (ut + st) / (double) (hz > 0 ? hz : 100);
                        m->virtual_bytes = vsize;
                        m->resident_bytes = rss * (uint64_t) sysconf(_SC_PAGESIZE);
                }
        }
        DIR *dir = opendir("/proc/self/fd");
        for (struct dirent *de; dir && (de = readdir(dir));)
                m->open_fds += de->d_name[0] != '.';
        if (dir)
                closedir(dir);
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                m->max_fds = rl.rlim_cur;
}

void gw_on_metrics(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                   struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        struct gw_metrics_gpu gpus[GW_SCHED_MAX_GPUS];
        size_t n_series = 0;
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                size_t n_tel;
                (void) gw_observe_jobtel(d, d->jobs.running[i], &n_tel);
                n_series += n_tel;
        }
        _cleanup_free_ struct gw_metrics_job *jobs = gw_xcalloc(n_series + 1, sizeof *jobs);
        struct gw_metrics_snapshot m = { .gpus = gpus,
                                         .n_gpus = d->host.n_gpus,
                                         .jobs = jobs,
                                         .wait_bounds = gw_wait_bounds };
        for (unsigned i = 0; i < d->host.n_gpus; i++) {
                const struct gw_dgpu *g = &d->host.gpus[i];
                const struct gw_gpu_sample *s = &g->sample;
                struct gw_djob *dj = g->job_id ? gw_jobmap_get(&d->jobs.map, g->job_id) : NULL;
                gpus[i] = (struct gw_metrics_gpu){
                        .index = i,
                        .uuid = g->info.uuid,
                        .name = g->info.name,
                        .has_util = !!(s->valid & GW_GPU_HAS_UTIL),
                        .has_mem = !!(s->valid & GW_GPU_HAS_MEM),
                        .has_temp = !!(s->valid & GW_GPU_HAS_TEMP),
                        .has_power = !!(s->valid & GW_GPU_HAS_POWER),
                        .util_ratio = s->util_gpu / 100.0,
                        .mem_used = s->mem_used,
                        .mem_total = g->info.mem_total,
                        .temp_c = s->temp_c,
                        .power_w = s->power_mw / 1000.0,
                        .job_id = g->job_id,
                        .array_job = dj ? dj->job->array_job : 0,
                        .array_index = dj ? dj->job->array_index : 0,
                        .user = dj ? dj->job->user : "",
                        .health = g->sampled && s->health != GW_GPU_OK ? "lost"
                                  : g->drained                         ? "drained"
                                                                       : "ok",
                };
        }
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                const struct gw_djob *dj = d->jobs.running[i];
                size_t n_tel;
                const struct gw_jobtel *tel = gw_observe_jobtel(d, dj, &n_tel);
                for (size_t k = 0; k < n_tel; k++) {
                        const struct gw_point *pt = gw_ring_last(&tel[k].ring);
                        jobs[m.n_jobs++] = (struct gw_metrics_job){
                                .id = dj->job->id,
                                .array_job = dj->job->array_job,
                                .array_index = dj->job->array_index,
                                .user = dj->job->user,
                                .name = dj->job->name,
                                .gpu = tel[k].gpu,
                                .util_ratio = pt ? pt->util / 100.0 : 0,
                                .mem_used = pt ? pt->mem : 0,
                        };
                        jobs[m.n_jobs - 1].eta_seconds = gw_training_eta_seconds(dj, d->now_wall);
                        jobs[m.n_jobs - 1].has_eta = isfinite(jobs[m.n_jobs - 1].eta_seconds);
                }
        }
        for (int s = 0; s < _GW_JOB_STATE_MAX && s < 8; s++)
                m.jobs_by_state[s] = gw_job_state_is_final(s) ? d->loop.stats.state_counts[s] : 0;
        for (size_t i = 0; i < d->jobs.n_running; i++)
                m.jobs_by_state[GW_JOB_RUNNING]++;
        for (size_t i = 0; i < d->jobs.n_queue; i++)
                m.jobs_by_state[d->jobs.queue[i]->job->state]++;
        memcpy(m.wait_counts, d->loop.stats.wait_counts, sizeof m.wait_counts);
        m.wait_count = d->loop.stats.wait_n;
        m.wait_sum = d->loop.stats.wait_sum;
        m.rogue_processes = d->host.rogue_total;
        m.xid_events = d->host.xid_events;
        m.sampler_snapshots = d->host.sampler_snapshots;
        m.sampler_nvml_seconds_sum = (double) d->host.sampler_nvml_sum / 1e6;
        m.sampler_nvml_seconds_max = (double) d->host.sampler_nvml_max / 1e6;
        m.sampler_cpu_seconds = (double) d->host.sampler_cpu / 1e6;
        m.reclaims = d->loop.stats.reclaims;
        struct gw_notify_counts hooks;
        gw_notify_counts(d->notify, &hooks);
        m.webhooks_sent = hooks.sent;
        m.webhooks_failed = hooks.failed;
        m.webhooks_dropped = hooks.dropped;
        struct gw_cache_counts cc;
        gw_cache_counts(d, &cc);
        m.cache_hits = cc.hits;
        m.cache_misses = cc.misses;
        m.cache_bytes_copied = cc.bytes_copied;
        m.cache_evictions = cc.evictions;
        m.start_time = (double) d->loop.started_at / 1e6;
        process_stats(&m);
        size_t len;
        char *text = gw_metrics_render(&m, &len);
        gw_http_reply_text(rep, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
}

void gw_on_ready(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx, struct gw_http_reply *rep,
                 const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        if (!d->loop.ready)
                return gw_reply_error(rep, 503, NULL, "not ready: GPUs not enumerated yet");
        gw_reply_json(rep, 200, json_pack("{s:s,s:i}", "status", "ready", "gpus", (int) d->host.n_gpus));
}
