/* Per-slice activity from GPM (Hopper and later): NVML's only utilisation figure for a MIG
 * slice.  GPM gives counters, not a percentage: a metric is computed from two samples of the
 * same GPU instance, so each slice keeps the previous round's sample and the figure covers the
 * time between two inventory rounds.  Every call is optional and every failure leaves that
 * slice without a figure for the round: a missing reading is never a 0. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "gpu/nvml_internal.h"

static bool gpm_calls_present(const struct gw_nvml_fns *fn) {
        return fn->gpm_query_support && fn->gpm_sample_alloc && fn->gpm_sample_free && fn->gpm_mig_sample_get &&
               fn->gpm_metrics_get;
}

void gw_nvml_gpm_probe(struct gw_gpu_lib *lib, struct gw_gpu_dev *dev) {
        if (!gpm_calls_present(&lib->fn)) {
                dev->gpm = GW_GPU_GPM_NO_CALLS;
                return;
        }
        nvmlGpmSupport_t s = { .version = GW_NVML_GPM_SUPPORT_VERSION };
        nvmlReturn_t r = lib->fn.gpm_query_support(dev->handle, &s);
        dev->gpm = r == NVML_SUCCESS && s.isSupportedDevice ? GW_GPU_GPM_OFFERED : GW_GPU_GPM_NOT_SUPPORTED;
}

static void slot_drop(struct gw_gpu_lib *lib, struct gw_gpm_slot *s) {
        if (s->prev)
                (void) lib->fn.gpm_sample_free(s->prev);
        if (s->cur)
                (void) lib->fn.gpm_sample_free(s->cur);
        *s = (struct gw_gpm_slot){ 0 };
}

void gw_nvml_gpm_free(struct gw_gpu_lib *lib) {
        for (unsigned i = 0; lib->devs && i < lib->count; i++)
                for (size_t k = 0; k < GW_GPU_MIG_MAX; k++)
                        if (lib->devs[i].gpm_slot[k].used)
                                slot_drop(lib, &lib->devs[i].gpm_slot[k]);
        free(lib->gpm_get);
        lib->gpm_get = NULL;
}

/* The slot of GPU instance gi_id, allocated on first sight; NULL when none is free or NVML
 * cannot allocate a sample. */
static struct gw_gpm_slot *slot_of(struct gw_gpu_lib *lib, struct gw_gpu_dev *dev, unsigned gi_id) {
        struct gw_gpm_slot *free_slot = NULL;
        for (size_t k = 0; k < GW_GPU_MIG_MAX; k++) {
                struct gw_gpm_slot *s = &dev->gpm_slot[k];
                if (s->used && s->gi_id == gi_id)
                        return s;
                if (!s->used && !free_slot)
                        free_slot = s;
        }
        if (!free_slot)
                return NULL;
        *free_slot = (struct gw_gpm_slot){ .used = true, .gi_id = gi_id };
        if (lib->fn.gpm_sample_alloc(&free_slot->prev) != NVML_SUCCESS ||
            lib->fn.gpm_sample_alloc(&free_slot->cur) != NVML_SUCCESS) {
                slot_drop(lib, free_slot);
                return NULL;
        }
        return free_slot;
}

/* SM activity between the slot's two samples, in percent; -1 when NVML gave none. */
static int metric_between(struct gw_gpu_lib *lib, const struct gw_gpm_slot *s) {
        nvmlGpmMetricsGet_t *g = lib->gpm_get;
        memset(g, 0, sizeof *g);
        g->version = GW_NVML_GPM_METRICS_GET_VERSION;
        g->numMetrics = 1;
        g->sample1 = s->prev;
        g->sample2 = s->cur;
        g->metrics[0].metricId = GW_NVML_GPM_METRIC_SM_UTIL;
        if (lib->fn.gpm_metrics_get(g) != NVML_SUCCESS || g->metrics[0].nvmlReturn != NVML_SUCCESS)
                return -1;
        double v = g->metrics[0].value;
        if (!isfinite(v) || v < 0.0 || v > 100.0) /* out of the documented 0-100: not a reading */
                return -1;
        return (int) lround(v);
}

/* One round for slice m of dev: its new sample, and the figure against the last one. */
static void slice_round(struct gw_gpu_lib *lib, struct gw_gpu_dev *dev, struct gw_gpu_mig *m) {
        if (m->gi_id == UINT_MAX)
                return;
        struct gw_gpm_slot *s = slot_of(lib, dev, m->gi_id);
        if (!s)
                return;
        s->seen = true;
        if (lib->fn.gpm_mig_sample_get(dev->handle, m->gi_id, s->cur) != NVML_SUCCESS) {
                s->has_prev = false; /* the next figure needs two good samples again */
                return;
        }
        if (s->has_prev)
                m->activity = metric_between(lib, s);
        nvmlGpmSample_t t = s->prev;
        s->prev = s->cur;
        s->cur = t;
        s->has_prev = true;
}

void gw_nvml_gpm_round(struct gw_gpu_lib *lib, struct gw_gpu_dev *dev, struct gw_gpu_mig_layout *l) {
        for (size_t k = 0; k < l->n; k++)
                l->dev[k].activity = -1;
        /* Asked again each time the GPU enters MIG mode: that is when the answer starts to
         * matter, and it costs one call per re-partitioning. */
        if (!dev->gpm_in_mig)
                gw_nvml_gpm_probe(lib, dev);
        dev->gpm_in_mig = true;
        l->gpm = dev->gpm == GW_GPU_GPM_OFFERED;
        if (!l->gpm)
                return;
        if (!lib->gpm_get)
                lib->gpm_get = gw_xcalloc(1, sizeof *lib->gpm_get);
        for (size_t k = 0; k < GW_GPU_MIG_MAX; k++)
                dev->gpm_slot[k].seen = false;
        for (size_t k = 0; k < l->n; k++)
                slice_round(lib, dev, &l->dev[k]);
        /* A GPU instance gone from the layout (re-partitioned): its samples say nothing about
         * one made later with the same id. */
        for (size_t k = 0; k < GW_GPU_MIG_MAX; k++)
                if (dev->gpm_slot[k].used && !dev->gpm_slot[k].seen)
                        slot_drop(lib, &dev->gpm_slot[k]);
}
