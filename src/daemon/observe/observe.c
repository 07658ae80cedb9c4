/* Applying what the sampler saw: GPU state, per-job series and usage, Xid events and
 * draining (the job each GPU process belongs to, and rogue processes: observe_procs.c).
 * After each sample the lifecycle's GW_HOOK_SAMPLED tells the features that watch jobs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "api/jsonout.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "base/text.h"
#include "daemon/daemon.h"
#include "daemon/life/lifecycle.h"
#include "daemon/life/migslots.h"
#include "daemon/observe/observe.h"
#include "daemon/http/web.h"
#include "daemon/base/jobclock.h"
#include "daemon/life/queue.h"
#include "daemon/observe/gpus.h"
#include "daemon/observe/hostwatch.h"
#include "store/gpu_events.h"

#define RING_SECONDS 3600

const double gw_wait_bounds[10] = { 0.01, 0.1, 1, 10, 60, 300, 900, 3600, 14400, 86400 };

static void apply_snapshot(struct gw_daemon *d, const struct gw_snapshot *s);

static size_t ring_points(const struct gw_daemon *d) {
        gw_usec_t iv = d->cfg->sample_interval > 0 ? d->cfg->sample_interval : GW_USEC_PER_SEC;
        size_t n = (size_t) (RING_SECONDS * GW_USEC_PER_SEC / iv);
        return n < 16 ? 16 : n;
}

int gw_observe_start(struct gw_daemon *d) {
        d->loop.started_at = d->now_wall;
        (void) gw_store_state_counts(d->store, d->loop.stats.state_counts);
        for (unsigned i = 0; i < d->host.n_gpus; i++)
                gw_ring_init(&d->host.gpus[i].ring, ring_points(d));
        if (!d->host.gpu || d->host.n_gpus == 0) {
                d->loop.ready = true;
                return 0;
        }
        /* One sample now, so that the first scheduling pass knows the free memory. */
        struct gw_snapshot *first = gw_snapshot_take(d->host.gpu, d->host.n_gpus);
        int r = gw_sampler_start(d->host.gpu, d->host.n_gpus, d->cfg->sample_interval, &d->host.sampler,
                                 &d->host.sampler_fd);
        if (r < 0) {
                gw_snapshot_free(first);
                log_err("cannot start the GPU sampler: %s", strerror(-r));
                return r;
        }
        d->host.sampler_src = (struct gw_source){ GW_SRC_SAMPLER, NULL };
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &d->host.sampler_src };
        if (epoll_ctl(d->loop.epfd, EPOLL_CTL_ADD, d->host.sampler_fd, &ev) < 0)
                return -errno;
        d->loop.ready = true;
        apply_snapshot(d, first);
        gw_snapshot_free(first);
        return 0;
}

void gw_observe_stop(struct gw_daemon *d) {
        d->host.sampler = gw_sampler_stop(d->host.sampler);
        for (unsigned i = 0; i < d->host.n_gpus; i++) {
                gw_ring_free(&d->host.gpus[i].ring);
                free(d->host.gpus[i].procs);
                free(d->host.gpus[i].mig);
        }
}

/* --- applying a snapshot ------------------------------------------------------------ */

/* The job events that record a GPU fault (apply_event, apply_health) and
 * gw_observe_fault_of_event, which reads them back after a restart, share these words. */
#define XID_MSG "Xid %llu on GPU %u at"
#define DBE_MSG "double-bit ECC error on GPU %u at"
#define LOST_MSG "GPU %u health: lost (fell off the bus?)"

static void fault_keep(struct gw_djob *dj, struct gw_gpu_event e) {
        if (dj->n_events >= 256)
                return;
        if (dj->n_events == dj->cap_events) {
                dj->cap_events = dj->cap_events ? dj->cap_events * 2 : 4;
                dj->events = gw_xrealloc(dj->events, dj->cap_events * sizeof *dj->events);
        }
        dj->events[dj->n_events++] = e;
}

/* Remembers a GPU fault on a running job's GPU for the classifier at the attempt's end. */
static void job_gpu_fault(struct gw_daemon *d, int64_t job_id, enum gw_gpu_event_kind kind, unsigned gpu,
                          unsigned xid) {
        struct gw_djob *dj = job_id ? gw_jobmap_get(&d->jobs.map, job_id) : NULL;
        if (dj)
                fault_keep(dj, (struct gw_gpu_event){ .kind = kind, .gpu = (int) gpu, .xid = xid });
}

int gw_observe_fault_of_event(const char *kind, const char *message, struct gw_gpu_event *ret) {
        unsigned long long xid = 0;
        unsigned gpu = 0;
        int end = 0;
        bool is_xid = !strcmp(kind, "xid");
        if (is_xid && sscanf(message, XID_MSG "%n", &xid, &gpu, &end) == 2 && end > 0)
                *ret = (struct gw_gpu_event){ .kind = GW_GPU_EVENT_XID, .gpu = (int) gpu, .xid = (unsigned) xid };
        else if (is_xid && sscanf(message, DBE_MSG "%n", &gpu, &end) == 1 && end > 0)
                *ret = (struct gw_gpu_event){ .kind = GW_GPU_EVENT_ECC_DBE, .gpu = (int) gpu };
        else if (!strcmp(kind, "gpu") && sscanf(message, LOST_MSG "%n", &gpu, &end) == 1 && end > 0)
                *ret = (struct gw_gpu_event){ .kind = GW_GPU_EVENT_LOST, .gpu = (int) gpu };
        else
                return -ENOENT;
        return 0;
}

void gw_observe_faults_restore(struct gw_djob *dj, const struct gw_job_event *ev, size_t n) {
        for (size_t i = 0; i < n; i++) {
                struct gw_gpu_event e;
                if (gw_observe_fault_of_event(ev[i].kind, ev[i].message, &e) == 0)
                        fault_keep(dj, e);
        }
}

void gw_observe_job_event(struct gw_daemon *d, int64_t job_id, const char *kind, const char *msg) {
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, job_id);
        if (dj)
                (void) gw_store_job_event(d->store, job_id, dj->job->state, kind, msg);
}

static void clock_text(char *buf, size_t n) {
        time_t now = time(NULL);
        struct tm tm;
        strftime(buf, n, "%H:%M:%S", localtime_r(&now, &tm));
}

/* A GPU that fell off the bus is an Xid 79 whether or not the event came: NVML answers
 * GPU_IS_LOST until the node is rebooted, and a GPU that answers again after that has still
 * failed once, so the drain stays until an admin lifts it. */
static void drain_lost(struct gw_daemon *d, struct gw_dgpu *g) {
        if (g->drained)
                return;
        char when[16], why[200];
        clock_text(when, sizeof when);
        snprintf(why, sizeof why,
                 "GPU %u fell off the bus (NVML: GPU is lost) at %s; drained until an admin undrains it", g->info.index,
                 when);
        (void) gw_gpu_drain(d, g->info.index, true, why, true); /* a lost GPU takes no job, recorded or not */
}

static void apply_health(struct gw_daemon *d, struct gw_dgpu *g, const struct gw_gpu_sample *now) {
        if (g->sampled && g->sample.health == now->health)
                return;
        if (!g->sampled && now->health == GW_GPU_OK)
                return;
        char msg[128];
        if (now->health == GW_GPU_LOST)
                snprintf(msg, sizeof msg, LOST_MSG, g->info.index);
        else
                snprintf(msg, sizeof msg, "GPU %u health: %s", g->info.index,
                         now->health == GW_GPU_OK ? "ok" : "unavailable");
        log_warn("%s", msg);
        (void) gw_store_gpu_event(d->store, NULL, g->info.index, "health", -1, g->job_id, msg);
        if (g->job_id)
                gw_observe_job_event(d, g->job_id, "gpu", msg);
        if (now->health == GW_GPU_LOST) {
                job_gpu_fault(d, g->job_id, GW_GPU_EVENT_LOST, g->info.index, 0);
                drain_lost(d, g);
        }
}

/* The job's series on gpu, made at its first sample: from the job's GPUs on this host, or,
 * for a job on a cluster's node (no GPU of this host, gpu_mask 0), one more at each GPU the
 * node's snapshots first show it on. */
/* A running job's telemetry, kept by job id in d->state.tel from its first sample: a series
 * per GPU of the job. */
struct obs_tel {
        struct gw_jobtel *tel;
        size_t n;
};

static const struct obs_tel *obs_tel_of(const struct gw_daemon *d, const struct gw_djob *dj) {
        static const struct obs_tel none = { NULL, 0 };
        const struct obs_tel *ot = gw_keytab_get(&d->state.tel, (uint64_t) dj->job->id);
        return ot ? ot : &none;
}

const struct gw_jobtel *gw_observe_jobtel(const struct gw_daemon *d, const struct gw_djob *dj, size_t *ret_n) {
        const struct obs_tel *ot = obs_tel_of(d, dj);
        *ret_n = ot->n;
        return ot->tel;
}

static struct gw_jobtel *jobtel_for(struct gw_daemon *d, struct gw_djob *dj, unsigned gpu) {
        struct obs_tel *ot = gw_keytab_get(&d->state.tel, (uint64_t) dj->job->id);
        if (!ot) {
                ot = gw_xcalloc(1, sizeof *ot);
                gw_keytab_put(&d->state.tel, (uint64_t) dj->job->id, ot);
        }
        if (!ot->tel && dj->job->gpu_mask) {
                size_t n = (size_t) __builtin_popcountll(dj->job->gpu_mask);
                ot->tel = gw_xcalloc(n, sizeof *ot->tel);
                for (unsigned i = 0; i < 64; i++)
                        if (dj->job->gpu_mask & (UINT64_C(1) << i)) {
                                ot->tel[ot->n].gpu = i;
                                gw_ring_init(&ot->tel[ot->n].ring, ring_points(d));
                                ot->n++;
                        }
        }
        for (size_t i = 0; i < ot->n; i++)
                if (ot->tel[i].gpu == gpu)
                        return &ot->tel[i];
        if (dj->job->gpu_mask || ot->n >= 64)
                return NULL;
        ot->tel = gw_xrealloc(ot->tel, (ot->n + 1) * sizeof *ot->tel);
        struct gw_jobtel *jt = &ot->tel[ot->n++];
        *jt = (struct gw_jobtel){ .gpu = gpu };
        gw_ring_init(&jt->ring, ring_points(d));
        return jt;
}

void gw_jobtel_free(struct gw_daemon *d, struct gw_djob *dj) {
        struct obs_tel *ot = gw_keytab_take(&d->state.tel, (uint64_t) dj->job->id);
        for (size_t i = 0; ot && i < ot->n; i++)
                gw_ring_free(&ot->tel[i].ring);
        if (ot)
                free(ot->tel);
        free(ot);
}

static void persist_minute(struct gw_daemon *d, int64_t job_id, unsigned gpu, const struct gw_agg *a) {
        if (!a->n)
                return;
        struct gw_store_series_row row = {
                .t = a->bucket,
                .util_min = a->util_min,
                .util_max = a->util_max,
                .util_mean = gw_agg_util_mean(a),
                .mem_min = a->mem_min,
                .mem_max = a->mem_max,
                .mem_mean = gw_agg_mem_mean(a),
        };
        if (gw_store_series_add(d->store, job_id, gpu, &row) < 0)
                log_warn("job %lld: cannot store its GPU series: %s", (long long) job_id, gw_store_errmsg(d->store));
}

/* A job's share of a GPU: its processes' per-process utilisation and memory when NVML gives
 * them, else the whole device's (the GPU is the job's alone). */
static void job_point(const struct gw_dgpu *g, int64_t job_id, gw_usec_t t, struct gw_point *pt) {
        unsigned util = 0;
        uint64_t mem = 0;
        bool per_proc_util = false, per_proc_mem = false;
        for (size_t k = 0; k < g->n_procs; k++) {
                const struct gw_dproc *p = &g->procs[k];
                if (p->job_id != job_id)
                        continue;
                if (p->sm_util >= 0) {
                        util += (unsigned) p->sm_util;
                        per_proc_util = true;
                }
                if (p->mem != UINT64_MAX) {
                        mem += p->mem;
                        per_proc_mem = true;
                }
        }
        if (!per_proc_util)
                util = g->sample.valid & GW_GPU_HAS_UTIL ? g->sample.util_gpu : 0;
        if (!per_proc_mem)
                mem = g->sample.valid & GW_GPU_HAS_MEM ? g->sample.mem_used : 0;
        *pt = (struct gw_point){ .t = t,
                                 .util = (uint8_t) (util > 100 ? 100 : util),
                                 .mem = mem,
                                 .mem_util = (uint8_t) (g->sample.util_mem > 100 ? 100 : g->sample.util_mem) };
}

bool gw_observe_job_point(struct gw_daemon *d, struct gw_djob *dj, unsigned gpu, uint64_t mem_total,
                          const struct gw_point *pt) {
        struct gw_jobtel *jt = jobtel_for(d, dj, gpu);
        if (!jt)
                return false;
        /* A node's snapshot is looked at each round until the next comes: it counts once.  The
         * host's own samples come once each (and a wall clock stepped back must not stop them). */
        const struct gw_point *last = gw_ring_last(&jt->ring);
        if (!dj->job->gpu_mask && last && last->t >= pt->t)
                return false;
        struct gw_agg done;
        jt->mem_total = mem_total;
        gw_ring_push(&jt->ring, pt);
        gw_usage_add(&jt->usage, pt->util, pt->mem);
        if (gw_agg_add(&jt->agg, 60 * GW_USEC_PER_SEC, pt, &done))
                persist_minute(d, dj->job->id, gpu, &done);
        return true;
}

/* A slice job's share of GPU gi: its slices' memory, as NVML gives it per slice (its own
 * processes' where it gives none), against the slices' size, not the GPU's; as utilisation,
 * which NVML has none of for a slice, GPM's SM activity where every slice has a figure
 * (*ret_measured), else 0.  Returns the memory total, 0 where not known. */
static uint64_t slice_point(const struct gw_daemon *d, const struct gw_job *j, unsigned gi, gw_usec_t t,
                            struct gw_point *pt, bool *ret_measured) {
        struct gw_mig_use use;
        gw_mig_job_use(d, j, gi, &use);
        job_point(&d->host.gpus[gi], j->id, t, pt);
        pt->util = use.has_activity ? (uint8_t) use.activity : 0;
        pt->mem_util = 0;
        if (use.has_mem)
                pt->mem = use.mem_used;
        *ret_measured = use.has_activity;
        return use.has_mem ? use.mem_total : 0;
}

/* Slice job dj's point on GPU gi: kept as any job's, and where GPM measured it, counted
 * among the figures its telemetry shows. */
static void apply_slice_point(struct gw_daemon *d, struct gw_djob *dj, unsigned gi, gw_usec_t t) {
        struct gw_point pt;
        bool measured;
        uint64_t total = slice_point(d, dj->job, gi, t, &pt, &measured);
        struct gw_jobtel *jt = jobtel_for(d, dj, gi);
        if (!jt)
                return;
        jt->on_slices = true;
        if (gw_observe_job_point(d, dj, gi, total, &pt) && measured)
                gw_usage_add(&jt->gpm, pt.util, pt.mem);
}

static void apply_jobs(struct gw_daemon *d, gw_usec_t t) {
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                struct gw_djob *dj = d->jobs.running[i];
                for (unsigned gi = 0; gi < d->host.n_gpus; gi++) {
                        if (!(dj->job->gpu_mask & (UINT64_C(1) << gi)))
                                continue;
                        if (dj->job->mig_profile) {
                                apply_slice_point(d, dj, gi, t);
                                continue;
                        }
                        struct gw_point pt;
                        job_point(&d->host.gpus[gi], dj->job->id, t, &pt);
                        (void) gw_observe_job_point(d, dj, gi, d->host.gpus[gi].info.mem_total, &pt);
                }
        }
}

/* Keeps GPU g's MIG layout as the snapshot gives it; a changed layout may free or take
 * slices the scheduler counts on. */
static void apply_mig(struct gw_daemon *d, struct gw_dgpu *g, const struct gw_gpu_mig_layout *now) {
        if (!now) {
                d->jobs.sched_dirty |= g->mig != NULL;
                free(g->mig);
                g->mig = NULL;
                return;
        }
        /* Said once as the GPU enters MIG mode (when the GPM answer is asked again): an admin
         * reading why a slice job was kept or reclaimed needs to know what it was judged by. */
        if (!g->mig || g->mig->gpm != now->gpm)
                log_info("GPU %u: %s", (unsigned) (g - d->host.gpus),
                         now->gpm ? "MIG mode, per-slice activity from GPM"
                                  : "MIG mode, no per-slice activity (GPM not offered): slices judged by their "
                                    "processes and progress");
        if (!g->mig) {
                g->mig = gw_xmalloc(sizeof *g->mig);
                d->jobs.sched_dirty = true;
        }
        *g->mig = *now;
}

static void apply_snapshot(struct gw_daemon *d, const struct gw_snapshot *s) {
        _cleanup_free_ struct gw_job_anchor *anchors = gw_observe_job_anchors(d);
        d->host.rogue_total = 0;
        for (unsigned i = 0; i < d->host.n_gpus && i < s->n_gpus; i++) {
                struct gw_dgpu *g = &d->host.gpus[i];
                apply_health(d, g, &s->gpu[i].sample);
                g->sample = s->gpu[i].sample;
                g->sampled = true;
                g->sampled_at = s->taken;
                if (s->gpu[i].procs_error >= 0)
                        gw_observe_apply_procs(d, g, &s->gpu[i], anchors, d->jobs.n_running);
                apply_mig(d, g, s->gpu[i].mig);
                d->host.rogue_total += g->rogue;
                struct gw_point pt = { .t = s->taken,
                                       .util = (uint8_t) (g->sample.util_gpu > 100 ? 100 : g->sample.util_gpu),
                                       .mem_util = (uint8_t) (g->sample.util_mem > 100 ? 100 : g->sample.util_mem),
                                       .mem = g->sample.mem_used };
                gw_ring_push(&g->ring, &pt);
        }
        apply_jobs(d, s->taken);
        gw_hostwatch_sample(d);
        /* Free memory changed: a job waiting for --gpu-mem may fit now. */
        d->jobs.sched_dirty |= d->jobs.n_queue > 0;
        gw_lifecycle_publish(d, GW_HOOK_SAMPLED, NULL, false); /* reclaim, training, joblog */
}

/* --- events and draining ------------------------------------------------------------- */

int gw_gpu_drain(struct gw_daemon *d, unsigned idx, bool drain, const char *reason, bool even_unrecorded) {
        if (idx >= d->host.n_gpus)
                return -ENOENT;
        struct gw_dgpu *g = &d->host.gpus[idx];
        struct gw_store_gpu sg = { .index = idx, .mem_total = g->info.mem_total, .drained = drain };
        snprintf(sg.uuid, sizeof sg.uuid, "%s", g->info.uuid);
        snprintf(sg.name, sizeof sg.name, "%s", g->info.name);
        snprintf(sg.drain_reason, sizeof sg.drain_reason, "%s", drain ? reason : "");
        int r = gw_store_gpu_upsert(d->store, &sg);
        if (r < 0 && !even_unrecorded)
                return r; /* refused: nothing changes, as for every other write */
        if (r < 0)
                log_warn("GPU %u: drained, but the drain could not be recorded (%s): it holds until a restart", idx,
                         gw_store_errmsg(d->store));
        g->drained = drain;
        snprintf(g->drain_reason, sizeof g->drain_reason, "%s", sg.drain_reason);
        char msg[400];
        snprintf(msg, sizeof msg, "GPU %u %s%s%s", idx, drain ? "drained: " : "undrained", drain ? reason : "",
                 drain && g->job_id ? " (its job keeps running)" : "");
        (void) gw_store_gpu_event(d->store, NULL, idx, drain ? "drain" : "undrain", -1, g->job_id, msg);
        if (g->job_id)
                gw_observe_job_event(d, g->job_id, "gpu", msg);
        log_info("%s", msg);
        d->jobs.sched_dirty = true;
        return r;
}

/* What an Xid means for the GPU: drain it, or not (the Xids NVIDIA's catalog answers with a
 * GPU reset or a reboot, as core/failure.c's default_drain_xids). */
static bool xid_drains(unsigned long long xid) {
        static const unsigned long long drain[] = { 48, 64, 74, 79, 95 };
        for (size_t i = 0; i < ELEMENTSOF(drain); i++)
                if (xid == drain[i])
                        return true;
        return false;
}

static void apply_event(struct gw_daemon *d, const struct gw_nvml_event *ev) {
        if (ev->index >= d->host.n_gpus)
                return;
        struct gw_dgpu *g = &d->host.gpus[ev->index];
        bool dbe = ev->type & 0x2, xid = ev->type & 0x8;
        char when[16], msg[256];
        clock_text(when, sizeof when);
        if (xid)
                snprintf(msg, sizeof msg, XID_MSG " %s", ev->xid, ev->index, when);
        else if (dbe)
                snprintf(msg, sizeof msg, DBE_MSG " %s", ev->index, when);
        else
                snprintf(msg, sizeof msg, "single-bit ECC error on GPU %u at %s", ev->index, when);
        d->host.xid_events += xid;
        log_warn("%s%s", msg, g->job_id ? "" : " (no job on it)");
        (void) gw_store_gpu_event(d->store, NULL, ev->index, xid ? "xid" : "ecc", xid ? (long long) ev->xid : -1,
                                  g->job_id, msg);
        if (g->job_id)
                gw_observe_job_event(d, g->job_id, "xid", msg);
        if (xid || dbe)
                job_gpu_fault(d, g->job_id, xid ? GW_GPU_EVENT_XID : GW_GPU_EVENT_ECC_DBE, ev->index,
                              (unsigned) ev->xid);
        if ((xid && xid_drains(ev->xid)) || dbe)
                (void) gw_gpu_drain(d, ev->index, true, msg, true); /* a faulted GPU takes no job, recorded or not */
}

static void apply_events(struct gw_daemon *d) {
        struct gw_nvml_event evs[64];
        size_t n;
        while ((n = gw_sampler_events(d->host.sampler, evs, ELEMENTSOF(evs))) > 0)
                for (size_t i = 0; i < n; i++)
                        apply_event(d, &evs[i]);
}

void gw_observe_ready(struct gw_daemon *d) {
        gw_sampler_ack(d->host.sampler);
        struct gw_snapshot *s = gw_sampler_take(d->host.sampler);
        if (s) {
                d->host.sampler_snapshots++;
                d->host.sampler_nvml_sum += s->nvml_usec;
                if (s->nvml_usec > d->host.sampler_nvml_max)
                        d->host.sampler_nvml_max = s->nvml_usec;
                d->host.sampler_cpu = s->sampler_cpu_usec;
                apply_snapshot(d, s);
                gw_snapshot_free(s);
                if (gw_events_listened(d))
                        gw_events_gpus(d, gw_observe_gpus_json(d, d->cfg->guest_job_details));
        }
        apply_events(d);
}

void gw_observe_settle(struct gw_daemon *d, struct gw_djob *dj) {
        uint64_t mask = dj->job->gpu_mask;
        if (!d->host.sampler || !mask)
                return;
        struct gw_gpu_sample now[GW_SAMPLER_MAX_GPUS];
        int r = gw_sampler_probe(d->host.sampler, mask, GW_SETTLE_BOUND, now);
        apply_events(d); /* Xid events the event thread already holds name the fault too */
        if (r < 0) {
                log_warn("job %lld: no fresh reading of its GPUs came within %llds (%s): "
                         "its end is classified on the last sample",
                         (long long) dj->job->id, (long long) (GW_SETTLE_BOUND / GW_USEC_PER_SEC), strerror(-r));
                return;
        }
        for (unsigned i = 0; i < d->host.n_gpus && i < GW_SAMPLER_MAX_GPUS; i++) {
                if (!(mask & (UINT64_C(1) << i)))
                        continue;
                struct gw_dgpu *g = &d->host.gpus[i];
                apply_health(d, g, &now[i]);
                g->sample = now[i];
                g->sampled = true;
                g->sampled_at = d->now_wall;
        }
}

/* --- per-job summaries ------------------------------------------------------------- */

static json_t *jobtel_json(const struct obs_tel *ot, const struct gw_djob *dj, gw_usec_t now) {
        json_t *gpus = json_array();
        uint64_t samples = 0;
        for (size_t i = 0; i < ot->n; i++) {
                const struct gw_jobtel *t = &ot->tel[i];
                samples += t->usage.n;
                /* On slices: GPM's figures alone, never the 0s of samples it did not measure. */
                const struct gw_usage *u = t->on_slices ? &t->gpm : &t->usage;
                bool none = t->on_slices && !t->gpm.n;
                json_t *mean = none ? json_null() : json_real(gw_usage_mean(u));
                json_t *p95 = none ? json_null() : json_integer(gw_usage_percentile(u, 95));
                json_array_append_new(gpus, json_pack("{s:i,s:o,s:o,s:I}", "index", (int) t->gpu, "util_mean", mean,
                                                      "util_p95", p95, "mem_peak", (json_int_t) t->usage.mem_peak));
        }
        const struct gw_job *j = dj->job;
        gw_usec_t end = j->end_time ? j->end_time : now;
        /* A slice job holds the share of a GPU its slices make up, as accounting counts it. */
        double held = j->mig_profile && j->mig_share > 0 ? j->mig_share : j->ngpus;
        double hours = j->start_time ? (double) (end - j->start_time) / 3.6e9 * held : 0;
        return json_pack("{s:o,s:f,s:I}", "gpus", gpus, "gpu_hours", hours < 0 ? 0 : hours, "samples",
                         (json_int_t) samples);
}

json_t *gw_observe_job_json(struct gw_daemon *d, const struct gw_job *j) {
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, j->id);
        const struct obs_tel *ot = dj ? obs_tel_of(d, dj) : NULL;
        if (ot && ot->n)
                return jobtel_json(ot, dj, gw_job_clock_label(d, dj, d->now)); /* monotonic elapsed */
        if (j->telemetry)
                return json_loads(j->telemetry, 0, NULL);
        return NULL;
}

void gw_observe_job_end(struct gw_daemon *d, struct gw_djob *dj) {
        const struct obs_tel *ot = obs_tel_of(d, dj);
        if (!ot->n)
                return;
        for (size_t i = 0; i < ot->n; i++)
                persist_minute(d, dj->job->id, ot->tel[i].gpu, &ot->tel[i].agg);
        json_t *o = jobtel_json(ot, dj, dj->job->end_time);
        free(dj->job->telemetry);
        dj->job->telemetry = gw_json_compact(o, 0, NULL);
        json_decref(o);
}

void gw_observe_job_started(struct gw_daemon *d, const struct gw_job *j) {
        double wait = (double) (j->start_time - j->submit_time) / 1e6;
        if (wait < 0)
                wait = 0;
        for (size_t i = 0; i < ELEMENTSOF(gw_wait_bounds); i++)
                if (wait <= gw_wait_bounds[i])
                        d->loop.stats.wait_counts[i]++;
        d->loop.stats.wait_n++;
        d->loop.stats.wait_sum += wait;
}
