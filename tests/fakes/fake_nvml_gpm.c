/* The fake's GPM calls (nvml.h's GPM group, Hopper and later).  A GPU offers them with
 * gpuN.gpm=1 in DIR/config; otherwise they answer NOT_SUPPORTED, as on a GPU before Hopper.
 * A sample records the activity configured for its GPU instance when it was taken, and the
 * SM activity metric between two samples is the second one's: what the tests set is what the
 * daemon must report, one round later. */
#include "fake_nvml.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_MAGIC 0x47504d53u
#define GPM_METRICS_GET_VERSION 1u
#define GPM_SUPPORT_VERSION 1u
#define GPM_METRIC_SM_UTIL 2u
#define GPM_METRIC_MAX 333u /* NVML 13.3; 98 before 12.9 */

struct nvmlGpmSample_st {
        unsigned magic;
        bool filled;
        unsigned gpu, gi;
        unsigned activity;
};
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

typedef struct {
        unsigned int version, isSupportedDevice;
} nvmlGpmSupport_t;

typedef struct {
        unsigned int metricId;
        nvmlReturn_t nvmlReturn;
        double value;
        struct {
                char *shortName, *longName, *unit;
        } metricInfo;
} nvmlGpmMetric_t;

typedef struct {
        unsigned int version, numMetrics;
        nvmlGpmSample_t sample1, sample2;
        nvmlGpmMetric_t metrics[GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t layout");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24, "nvmlGpmMetricsGet_t layout");

/* Takes the lock; *g is GPU dev's config when the answer is SUCCESS. */
static nvmlReturn_t lock_gpu(nvmlDevice_t dev, const struct fake_gpu **g) {
        pthread_mutex_lock(&fake_lock);
        if (!fake_init_refs)
                return NVML_ERROR_UNINITIALIZED;
        fake_cfg_refresh();
        uintptr_t p = (uintptr_t) dev, first = (uintptr_t) fake_devices;
        if (p < first || p >= first + sizeof fake_devices || (p - first) % sizeof fake_devices[0] ||
            dev->index >= fake_config.count)
                return NVML_ERROR_INVALID_ARGUMENT;
        *g = &fake_config.gpu[dev->index];
        if ((*g)->lost)
                return NVML_ERROR_GPU_IS_LOST;
        return (*g)->gpm ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

static nvmlReturn_t unlock(nvmlReturn_t r) {
        pthread_mutex_unlock(&fake_lock);
        return r;
}

static bool valid_sample(const struct nvmlGpmSample_st *s) { return s && s->magic == SAMPLE_MAGIC; }

EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t dev, nvmlGpmSupport_t *support) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_gpu(dev, &g);
        if (r == NVML_SUCCESS && !support)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && support->version != GPM_SUPPORT_VERSION)
                r = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        if (r == NVML_SUCCESS)
                support->isSupportedDevice = 1;
        return unlock(r);
}

EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *sample) {
        if (!sample)
                return NVML_ERROR_INVALID_ARGUMENT;
        struct nvmlGpmSample_st *s = calloc(1, sizeof *s);
        if (!s)
                return NVML_ERROR_MEMORY;
        s->magic = SAMPLE_MAGIC;
        *sample = s;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
        if (!valid_sample(sample))
                return NVML_ERROR_INVALID_ARGUMENT;
        sample->magic = 0;
        free(sample);
        return NVML_SUCCESS;
}

/* GPU instance ids are K + 1 for MIG device K (fake_nvml.c's instance_id). */
EXPORT nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t dev, unsigned int gi, nvmlGpmSample_t sample) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_gpu(dev, &g);
        if (r == NVML_SUCCESS && !valid_sample(sample))
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && (g->mig_mode != MIG_ON || gi == 0 || gi > g->n_mig))
                r = NVML_ERROR_NOT_FOUND;
        if (r == NVML_SUCCESS)
                *sample = (struct nvmlGpmSample_st){ .magic = SAMPLE_MAGIC,
                                                     .filled = true,
                                                     .gpu = dev->index,
                                                     .gi = gi,
                                                     .activity = g->mig_activity[gi - 1] };
        return unlock(r);
}

EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *m) {
        if (!m)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (m->version != GPM_METRICS_GET_VERSION)
                return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        const struct nvmlGpmSample_st *a = m->sample1, *b = m->sample2;
        if (m->numMetrics == 0 || m->numMetrics > GPM_METRIC_MAX || !valid_sample(a) || !valid_sample(b) ||
            !a->filled || !b->filled || a->gpu != b->gpu || a->gi != b->gi)
                return NVML_ERROR_INVALID_ARGUMENT;
        for (unsigned i = 0; i < m->numMetrics; i++) {
                nvmlGpmMetric_t *x = &m->metrics[i];
                x->nvmlReturn = x->metricId == GPM_METRIC_SM_UTIL ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
                x->value = x->metricId == GPM_METRIC_SM_UTIL ? (double) b->activity : 0.0;
        }
        return NVML_SUCCESS;
}
