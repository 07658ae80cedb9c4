/* GPUs: NVML (or the fake one for --simulate-gpus), their static facts, drain state and
 * periodic samples, and their JSON (GET /api/v1/gpus and the event stream's "gpus"). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/codec.h"
#include "api/codec_gpu.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/life/migslots.h"
#include "daemon/life/queue.h"
#include "daemon/observe/gpus.h"
#include "daemon/observe/hostwatch.h"
#include "store/gpu_events.h"
#include "store/gpus_missing.h"

/* Where the fake NVML library is: next to an installed daemon, or in the build tree. */
static const char *find_fake_nvml(char *buf, size_t n) {
        char exe[PATH_MAX];
        ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (l > 0) {
                exe[l] = '\0';
                char *slash = strrchr(exe, '/');
                if (slash) {
                        *slash = '\0';
                        const char *rel[] = { "tests/fakes/libnvidia-ml.so.1", "../lib/gpuward/libnvidia-ml.so.1" };
                        for (size_t i = 0; i < ELEMENTSOF(rel); i++) {
                                snprintf(buf, n, "%s/%s", exe, rel[i]);
                                if (access(buf, R_OK) == 0)
                                        return buf;
                        }
                }
        }
        const char *fixed[] = { GW_FAKE_NVML_BUILD_PATH, GW_FAKE_NVML_INSTALL_PATH };
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                if (access(fixed[i], R_OK) == 0) {
                        snprintf(buf, n, "%s", fixed[i]);
                        return buf;
                }
        return NULL;
}

/* Creates STATE/sim-nvml with the GPU count, keeping anything else a test wrote there. */
static int prepare_simulation(struct gw_daemon *d) {
        snprintf(d->host.sim_dir, sizeof d->host.sim_dir, "%s/sim-nvml", d->cfg->state_dir);
        char path[4300];
        (void) mkdir(d->host.sim_dir, 0755);
        snprintf(path, sizeof path, "%s/procs", d->host.sim_dir);
        (void) mkdir(path, 01777); /* jobs run as their users and report here */
        (void) chmod(path, 01777);
        snprintf(path, sizeof path, "%s/config", d->host.sim_dir);
        char text[8192] = "";
        size_t len = 0;
        FILE *f = fopen(path, "re");
        if (f) {
                char line[512];
                while (fgets(line, sizeof line, f))
                        if (strncmp(line, "count=", 6) && len + strlen(line) < sizeof text)
                                len += (size_t) snprintf(text + len, sizeof text - len, "%s", line);
                fclose(f);
        }
        f = fopen(path, "we");
        if (!f)
                return -errno;
        fprintf(f, "count=%d\n%s", d->cfg->simulate_gpus, text);
        fclose(f);
        return setenv("GPUWARD_FAKE_NVML_DIR", d->host.sim_dir, 1) < 0 ? -errno : 0;
}

/* The GPUs recorded before this start, by index (uuid "" where none); GW_SCHED_MAX_GPUS of
 * them, caller frees. */
static struct gw_store_gpu *recorded_gpus(struct gw_daemon *d) {
        struct gw_store_gpu *old = gw_xcalloc(GW_SCHED_MAX_GPUS, sizeof *old);
        for (unsigned i = 0; i < GW_SCHED_MAX_GPUS; i++)
                if (gw_store_gpu_get(d->store, i, &old[i]) < 0)
                        memset(&old[i], 0, sizeof old[i]);
        return old;
}

static bool uuid_present(const struct gw_daemon *d, const char *uuid) {
        for (unsigned i = 0; i < d->host.n_gpus; i++)
                if (!strcmp(d->host.gpus[i].info.uuid, uuid))
                        return true;
        return false;
}

/* A GPU recorded at an earlier start that NVML no longer lists fell off the bus (or was
 * taken out).  The GPUs after it have moved down an index, so its drain waits for it by
 * UUID: a GPU that failed once takes no job when it returns, until an admin says so. */
static void note_missing(struct gw_daemon *d, const struct gw_store_gpu *old) {
        for (unsigned i = 0; i < GW_SCHED_MAX_GPUS; i++) {
                if (!old[i].uuid[0] || uuid_present(d, old[i].uuid))
                        continue;
                char when[16], why[256];
                time_t now = time(NULL);
                struct tm tm;
                strftime(when, sizeof when, "%H:%M:%S", localtime_r(&now, &tm));
                snprintf(why, sizeof why,
                         "%s (GPU %u before) went missing from NVML's devices (fell off the bus?) "
                         "by %s; drained until an admin undrains it",
                         old[i].uuid, i, when);
                log_warn("%s", why);
                (void) gw_store_gpu_missing_add(d->store, old[i].uuid, why);
                (void) gw_store_gpu_event(d->store, NULL, i, "health", -1, 0, why);
        }
}

/* Whether g was drained before this start (at whatever index it had), or went missing
 * since; the drain's reason goes to why. */
static bool drained_before(struct gw_daemon *d, const struct gw_dgpu *g, const struct gw_store_gpu *old, char *why,
                           size_t n) {
        const char *uuid = g->info.uuid;
        char missing[256];
        /* Taken in any case: once back, the GPU's drain (or its undrain) is its own row's. */
        bool was_missing = uuid[0] && gw_store_gpu_missing_take(d->store, uuid, missing, sizeof missing) == 0;
        for (unsigned i = 0; i < GW_SCHED_MAX_GPUS; i++) {
                /* A GPU drained while NVML could not open it (lost at start) has no UUID on
                 * record: that drain stays on its index rather than vanish unseen. */
                bool same = uuid[0] ? !strcmp(old[i].uuid, uuid) : false;
                bool unknown_here = i == g->info.index && !old[i].uuid[0];
                if (old[i].drained && (same || unknown_here)) {
                        snprintf(why, n, "%s", old[i].drain_reason);
                        return true;
                }
        }
        snprintf(why, n, "%s", was_missing ? missing : "");
        return was_missing;
}

int gw_gpus_open(struct gw_daemon *d) {
        char err[512] = "", buf[PATH_MAX];
        const char *lib = d->cfg->nvml_lib;
        if (d->cfg->simulate_gpus > 0) {
                d->host.simulated = true;
                if (prepare_simulation(d) < 0) {
                        log_err("cannot prepare the simulated GPUs under %s", d->host.sim_dir);
                        return -EIO;
                }
                if (!lib)
                        lib = find_fake_nvml(buf, sizeof buf);
                if (!lib) {
                        log_err("--simulate-gpus: the fake NVML library (libnvidia-ml.so.1 from tests/fakes) was not found; "
                                "build the project or pass --nvml-lib");
                        return -ENOENT;
                }
        }
        int r = gw_gpu_open(lib, &d->host.gpu, err, sizeof err);
        if (r < 0) {
                /* A Slurm controller places jobs on the nodes' GPUs: a head node without any is
                 * how clusters are built, and --simulate-gpus would be the wrong advice there. */
                if (gw_backend_placement(d) == GW_EXEC_PLACE_NODES)
                        log_info("%s; no local GPUs, as a Slurm controller needs none: jobs run on the nodes Slurm "
                                 "gives them",
                                 err);
                else
                        log_warn("%s; running with no GPUs (use --simulate-gpus N to try gpuward without a GPU)", err);
                d->host.n_gpus = 0;
                return 0;
        }
        unsigned n = gw_gpu_count(d->host.gpu);
        if (n > GW_SCHED_MAX_GPUS) {
                log_warn("%u GPUs found; gpuward manages the first %d", n, GW_SCHED_MAX_GPUS);
                n = GW_SCHED_MAX_GPUS;
        }
        d->host.n_gpus = n;
        for (unsigned i = 0; i < n; i++) {
                struct gw_dgpu *g = &d->host.gpus[i];
                if (gw_gpu_static_info(d->host.gpu, i, &g->info) < 0) {
                        snprintf(g->info.name, sizeof g->info.name, "unknown");
                        g->info.index = i;
                }
        }
        _cleanup_free_ struct gw_store_gpu *old = recorded_gpus(d);
        note_missing(d, old);
        for (unsigned i = 0; i < n; i++) {
                struct gw_dgpu *g = &d->host.gpus[i];
                g->drained = drained_before(d, g, old, g->drain_reason, sizeof g->drain_reason);
                struct gw_store_gpu sg;
                memset(&sg, 0, sizeof sg);
                sg.index = i;
                snprintf(sg.uuid, sizeof sg.uuid, "%s", g->info.uuid);
                snprintf(sg.name, sizeof sg.name, "%s", g->info.name);
                sg.mem_total = g->info.mem_total;
                sg.drained = g->drained;
                snprintf(sg.drain_reason, sizeof sg.drain_reason, "%s", g->drain_reason);
                (void) gw_store_gpu_upsert(d->store, &sg);
                if (g->info.mem_total > d->host.max_gpu_mem)
                        d->host.max_gpu_mem = g->info.mem_total;
        }
        log_info("%u GPU%s%s (driver %s)", n, n == 1 ? "" : "s", d->host.simulated ? ", simulated" : "",
                 gw_gpu_driver_version(d->host.gpu));
        return 0;
}

void gw_gpus_close(struct gw_daemon *d) { d->host.gpu = gw_gpu_close(d->host.gpu); }

static const char *gpu_health(const struct gw_dgpu *g) {
        if (g->sampled && g->sample.health != GW_GPU_OK)
                return "lost";
        return g->drained ? "drained" : "ok";
}

/* The API's view of g (api/codec_gpu.h), borrowing its strings; procs has room for its
 * processes. */
static void gpu_view(struct gw_daemon *d, const struct gw_dgpu *g, struct gw_codec_gpu *v,
                     struct gw_codec_proc *procs) {
        const struct gw_gpu_sample *s = &g->sample;
        struct gw_djob *dj = g->job_id ? gw_jobmap_get(&d->jobs.map, g->job_id) : NULL;
        *v = (struct gw_codec_gpu){
                .index = (int) g->info.index,
                .name = g->info.name,
                .uuid = g->info.uuid,
                .mem_total = g->info.mem_total,
                .has_mem = s->valid & GW_GPU_HAS_MEM,
                .has_util = s->valid & GW_GPU_HAS_UTIL,
                .has_temp = s->valid & GW_GPU_HAS_TEMP,
                .has_power = s->valid & GW_GPU_HAS_POWER,
                .mem_used = s->mem_used,
                .util = s->util_gpu,
                .mem_util = s->util_mem,
                .temp_c = s->temp_c,
                .power_mw = s->power_mw,
                .health = gpu_health(g),
                .drain_reason = g->drained ? g->drain_reason : NULL,
                .job_id = g->job_id,
                .job = dj ? dj->job : NULL,
                .procs = procs,
                .n_procs = g->n_procs,
                .sampled_at = g->sampled ? g->sampled_at : 0,
                .reclaim_at = dj ? dj->card_stop_at : 0,
        };
        if (dj && dj->card_leak) {
                v->leak_evidence = dj->card_leak_evidence;
                v->leak_epochs_to_oom = dj->card_leak_epochs;
                v->leak_seconds_to_oom = dj->card_leak_seconds;
        }
        for (size_t k = 0; k < g->n_procs; k++) {
                const struct gw_dproc *p = &g->procs[k];
                procs[k] = (struct gw_codec_proc){ .pid = (int) p->pid,
                                                   .user = p->user,
                                                   .cmd = p->cmd,
                                                   .mem = p->mem,
                                                   .sm_util = p->sm_util,
                                                   .cpu = p->cpu,
                                                   .job_id = p->job_id,
                                                   .stray = p->stray };
        }
}

/* The API's view of g's MIG devices, borrowing g's strings.  A slice's process is the one
 * its GPU's list attributes (user, job, command); only its memory is the slice's figure. */
struct mig_views {
        struct gw_codec_mig mig[GW_GPU_MIG_MAX];
        struct gw_codec_proc procs[GW_GPU_MIG_MAX][GW_GPU_MIG_PROCS_MAX];
};

static void mig_view(const struct gw_daemon *d, const struct gw_dgpu *g, const struct gw_codec_proc *gpu_procs,
                     struct gw_codec_gpu *v, struct mig_views *mv) {
        v->mig_mode = g->mig != NULL;
        if (!g->mig)
                return;
        v->gpm = g->mig->gpm;
        for (size_t k = 0; k < g->mig->n && k < GW_GPU_MIG_MAX; k++) {
                const struct gw_gpu_mig *m = &g->mig->dev[k];
                for (size_t p = 0; p < m->n_procs; p++) {
                        struct gw_codec_proc *cp = &mv->procs[k][p];
                        *cp = (struct gw_codec_proc){ .pid = (int) m->procs[p].pid, .sm_util = -1, .cpu = -1 };
                        for (size_t q = 0; q < g->n_procs; q++)
                                if (gpu_procs[q].pid == cp->pid)
                                        *cp = gpu_procs[q];
                        cp->mem = m->procs[p].mem_used;
                        cp->sm_util = -1; /* NVML gives none under MIG */
                }
                mv->mig[k] = (struct gw_codec_mig){
                        .uuid = m->uuid,
                        .profile = m->profile,
                        .gi_id = m->gi_id > INT_MAX ? -1 : (int) m->gi_id,
                        .ci_id = m->ci_id > INT_MAX ? -1 : (int) m->ci_id,
                        .slices = m->slices,
                        .max_slices = g->mig->max_slices,
                        .has_mem = m->has_mem,
                        .has_procs = m->has_procs,
                        .activity = m->activity,
                        .mem_total = m->mem_total,
                        .mem_used = m->mem_used,
                        .job_id = gw_mig_slice_job(d, m->uuid),
                        .procs = mv->procs[k],
                        .n_procs = m->n_procs,
                };
        }
        v->mig = mv->mig;
        v->n_mig = g->mig->n;
}

/* details: the command lines of the processes on it (a job's own among them), which guests
 * are not shown unless the config says so. */
json_t *gw_observe_gpu_json(struct gw_daemon *d, const struct gw_dgpu *g, bool details) {
        struct gw_codec_gpu v;
        _cleanup_free_ struct gw_codec_proc *procs = gw_xcalloc(g->n_procs + 1, sizeof *procs);
        _cleanup_free_ struct mig_views *mv = g->mig ? gw_xcalloc(1, sizeof *mv) : NULL;
        gpu_view(d, g, &v, procs);
        if (mv)
                mig_view(d, g, procs, &v, mv);
        return gw_codec_gpu(&v, details ? GW_VIEW_DETAILS : 0);
}

json_t *gw_observe_gpus_json(struct gw_daemon *d, bool details) {
        json_t *arr = json_array();
        for (unsigned i = 0; i < d->host.n_gpus; i++)
                json_array_append_new(arr, gw_observe_gpu_json(d, &d->host.gpus[i], details));
        return json_pack("{s:o,s:i,s:b,s:s,s:o}", "gpus", arr, "rogue_processes", (int) d->host.rogue_total,
                         "simulated", d->host.simulated, "driver",
                         d->host.gpu ? gw_gpu_driver_version(d->host.gpu) : "", "host", gw_hostwatch_json(d));
}
