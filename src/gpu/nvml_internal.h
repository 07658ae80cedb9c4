/* What nvml.c and nvml_procs.c share: the loaded library and its devices. */
#pragma once
#include <stdbool.h>

#include "gpu/gpu.h"
#include "gpu/nvml_types.h"

/* A MIG GPU instance's two GPM samples: the last round's and the one being taken. */
struct gw_gpm_slot {
        bool used, seen, has_prev;
        unsigned gi_id;
        nvmlGpmSample_t prev, cur;
};

struct gw_gpu_dev {
        nvmlDevice_t handle; /* NULL when nvmlDeviceGetHandleByIndex refused it */
        enum gw_gpu_health open_health; /* why handle is NULL */
        struct gw_gpu_static st; /* read once at open */
        unsigned long long last_seen; /* newest per-process utilisation sample taken, µs */
        enum gw_gpu_gpm gpm; /* asked at open and when the GPU enters MIG mode */
        bool gpm_in_mig; /* the last layout read was in MIG mode */
        struct gw_gpm_slot gpm_slot[GW_GPU_MIG_MAX]; /* by GPU instance, nvml_gpm.c */
};

/* Only the thread that samples writes the learned fallbacks below; gw_gpu_wait_event
 * reads nothing but the handles and the event set, which are fixed at open. */
struct gw_gpu_lib {
        void *dl;
        struct gw_nvml_fns fn;
        char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
        unsigned count;
        struct gw_gpu_dev *devs;
        nvmlEventSet_t events; /* NULL: no device could register */

        bool memory_v1_only; /* _v2 refused our struct version */
        bool temperature_v1_only; /* nvmlDeviceGetTemperatureV missing or refused */
        bool detail_missing; /* nvmlDeviceGetRunningProcessDetailList unusable */
        bool v3_missing, v2_missing; /* ..._v3 / ..._v2 returned FUNCTION_NOT_FOUND */
        unsigned v3_stride_guess; /* nvitop's heuristic, 0 until first needed */
        nvmlGpmMetricsGet_t *gpm_get; /* 40 KiB, allocated on the first GPM round */
};

/* The compute processes on handle h (a GPU or a MIG device), sorted by pid, at most cap
 * into buf.  dev: the GPU whose per-process utilisation to add; NULL for a MIG device,
 * for which NVML has none. */
int gw_nvml_procs(struct gw_gpu_lib *lib, nvmlDevice_t h, struct gw_gpu_dev *dev, struct gw_gpu_proc *buf, size_t cap,
                  size_t *ret_n);
/* Total and used memory of h, _v2 first (nvml.c). */
nvmlReturn_t gw_nvml_read_memory(struct gw_gpu_lib *lib, nvmlDevice_t h, uint64_t *total, uint64_t *used);
/* Copies a driver string that need not be terminated, cut at n - 1. */
void gw_nvml_copy_string(char *dst, size_t n, const char *src, size_t srclen);

/* An errno value for an NVML failure (EIO for a lost GPU). */
int gw_nvml_errno(nvmlReturn_t r);

/* Whether a versioned call's answer r says that this driver lacks the call or our struct
 * version, so that the older call must serve from now on: then *older_only is set.
 * 510-era drivers answer FUNCTION_NOT_FOUND for a struct version they lack. */
static inline bool gw_nvml_lacks_version(nvmlReturn_t r, bool *older_only) {
        if (r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH && r != NVML_ERROR_FUNCTION_NOT_FOUND)
                return false;
        *older_only = true;
        return true;
}

/* GPM (nvml_gpm.c).  probe: asks whether dev offers it.  round: sets activity of each
 * slice of l (-1 where none was measured).  free: the samples, at close. */
void gw_nvml_gpm_probe(struct gw_gpu_lib *lib, struct gw_gpu_dev *dev);
void gw_nvml_gpm_round(struct gw_gpu_lib *lib, struct gw_gpu_dev *dev, struct gw_gpu_mig_layout *l);
void gw_nvml_gpm_free(struct gw_gpu_lib *lib);
