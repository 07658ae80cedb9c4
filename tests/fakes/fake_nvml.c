/* A fake libnvidia-ml.so.1 driven by a state directory (see README.md next to this file).
 * One mutex guards all state because the daemon samples from one thread while another
 * blocks in nvmlEventSetWait_v2. */
#include "fake_nvml.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (unsigned long long) ts.tv_sec * 1000000ULL + (unsigned long long) ts.tv_nsec / 1000ULL;
}

/* ---- locking and argument checks ----------------------------------------------------- */

static nvmlReturn_t lock_lib(void) {
        pthread_mutex_lock(&fake_lock);
        if (!fake_init_refs)
                return NVML_ERROR_UNINITIALIZED;
        fake_cfg_refresh();
        return NVML_SUCCESS;
}

/* Always takes the lock; pair with unlock_ret().  *ret is the device's config. */
static nvmlReturn_t lock_dev(nvmlDevice_t dev, const struct fake_gpu **ret) {
        nvmlReturn_t r = lock_lib();
        if (r != NVML_SUCCESS)
                return r;
        uintptr_t p = (uintptr_t) dev, first = (uintptr_t) fake_devices;
        if (p < first || p >= first + sizeof fake_devices || (p - first) % sizeof fake_devices[0] ||
            dev->index >= fake_config.count)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (fake_config.gpu[dev->index].lost)
                return NVML_ERROR_GPU_IS_LOST;
        *ret = &fake_config.gpu[dev->index];
        return NVML_SUCCESS;
}

/* Like lock_dev, but dev may also be a MIG device handle of a GPU in MIG mode: *mig is its
 * index then, -1 for a GPU.  A handle of a MIG device that is gone (the layout changed)
 * is refused as NVML refuses a stale handle. */
static nvmlReturn_t lock_any(nvmlDevice_t dev, const struct fake_gpu **ret, int *mig) {
        uintptr_t p = (uintptr_t) dev, first = (uintptr_t) fake_mig_devices;
        *mig = -1;
        if (p < first || p >= first + sizeof fake_mig_devices)
                return lock_dev(dev, ret);
        nvmlReturn_t r = lock_lib();
        if (r != NVML_SUCCESS)
                return r;
        if ((p - first) % sizeof fake_mig_devices[0][0] || dev->index >= fake_config.count)
                return NVML_ERROR_INVALID_ARGUMENT;
        const struct fake_gpu *g = &fake_config.gpu[dev->index];
        if (g->lost)
                return NVML_ERROR_GPU_IS_LOST;
        if (g->mig_mode != MIG_ON || dev->mig == 0 || dev->mig > g->n_mig)
                return NVML_ERROR_INVALID_ARGUMENT;
        *ret = g;
        *mig = (int) dev->mig - 1;
        return NVML_SUCCESS;
}

static nvmlReturn_t unlock_ret(nvmlReturn_t r) {
        pthread_mutex_unlock(&fake_lock);
        return r;
}

static nvmlReturn_t copy_string(char *dst, unsigned len, const char *src) {
        if (!dst)
                return NVML_ERROR_INVALID_ARGUMENT;
        if (strlen(src) + 1 > len)
                return NVML_ERROR_INSUFFICIENT_SIZE;
        memcpy(dst, src, strlen(src) + 1);
        return NVML_SUCCESS;
}

/* ---- lifecycle ----------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlInit_v2(void) {
        pthread_mutex_lock(&fake_lock);
        if (fake_init_refs == 0) {
                fake_cfg_reset();
                /* A failed init leaves nothing behind: the next one starts over. */
                if (fake_config.init_error != 0)
                        return unlock_ret((nvmlReturn_t) fake_config.init_error);
        }
        fake_init_refs++;
        return unlock_ret(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }

EXPORT nvmlReturn_t nvmlShutdown(void) {
        pthread_mutex_lock(&fake_lock);
        if (!fake_init_refs)
                return unlock_ret(NVML_ERROR_UNINITIALIZED);
        fake_init_refs--;
        /* The library may be unloaded next: nothing it allocated may outlive the last user. */
        if (!fake_init_refs)
                fake_procs_cache_clear();
        return unlock_ret(NVML_SUCCESS);
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
        static const char *const s[] = {
                [0] = "Success",
                [1] = "Uninitialized",
                [2] = "Invalid Argument",
                [3] = "Not Supported",
                [4] = "Insufficient Permissions",
                [5] = "Already Initialized",
                [6] = "Not Found",
                [7] = "Insufficient Size",
                [8] = "Insufficient External Power",
                [9] = "Driver Not Loaded",
                [10] = "Timeout",
                [11] = "Interrupt Request Issue",
                [12] = "NVML Shared Library Not Found",
                [13] = "Function Not Found",
                [14] = "Corrupted infoROM",
                [15] = "GPU is lost",
                [16] = "GPU requires restart",
                [17] = "The operating system has blocked the request.",
                [18] = "RM has detected an NVML/RM version mismatch.",
                [19] = "In use by another client",
                [20] = "Insufficient Memory",
                [21] = "No data",
                [22] = "vGPU ECC not supported",
                [23] = "Insufficient resources",
                [24] = "Frequency not supported",
                [25] = "Argument version mismatch",
                [26] = "Deprecated",
                [27] = "Not Ready",
                [28] = "GPU not found",
                [29] = "Invalid state",
                [30] = "Reset type not supported",
        };
        if ((unsigned) r < sizeof s / sizeof s[0] && s[r])
                return s[r];
        return "Unknown Error";
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
        nvmlReturn_t r = lock_lib();
        if (r == NVML_SUCCESS)
                r = copy_string(version, length, "fake-550.00");
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
        nvmlReturn_t r = lock_lib();
        if (r == NVML_SUCCESS && !count)
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS)
                *count = fake_config.count;
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
        nvmlReturn_t r = lock_lib();
        if (r == NVML_SUCCESS && (!device || index >= fake_config.count))
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && fake_config.gpu[index].lost)
                r = NVML_ERROR_GPU_IS_LOST;
        if (r == NVML_SUCCESS)
                *device = &fake_devices[index];
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
        return nvmlDeviceGetHandleByIndex_v2(index, device);
}

/* ---- static facts -------------------------------------------------------------------- */

/* A MIG device is named as on a real driver: its GPU's name, " MIG ", its profile. */
EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length) {
        const struct fake_gpu *g;
        int mig;
        nvmlReturn_t r = lock_any(dev, &g, &mig);
        if (r == NVML_SUCCESS && mig < 0)
                r = copy_string(name, length, g->name);
        else if (r == NVML_SUCCESS) {
                char buf[160];
                snprintf(buf, sizeof buf, "%s MIG %s", g->name, g->mig[mig].profile);
                r = copy_string(name, length, buf);
        }
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int length) {
        const struct fake_gpu *g;
        int mig;
        nvmlReturn_t r = lock_any(dev, &g, &mig);
        if (r == NVML_SUCCESS) {
                char buf[64];
                if (mig < 0)
                        snprintf(buf, sizeof buf, "GPU-fa4e0000-0000-4000-8000-0000000000%02u", dev->index);
                else
                        snprintf(buf, sizeof buf, "MIG-fa4e0000-0000-4000-8001-00000000%02u%02d", dev->index, mig);
                r = copy_string(uuid, length, buf);
        }
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !pci)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && !fake_config.pci_v3)
                r = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (r == NVML_SUCCESS) {
                memset(pci, 0, sizeof *pci);
                pci->bus = 0x10 + dev->index;
                pci->pciDeviceId = 0x20B210DE;
                pci->pciSubSystemId = 0x147F10DE;
                snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", pci->bus);
                snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
        }
        return unlock_ret(r);
}

/* The legacy calls fill the 52-byte nvmlPciInfo_v2_t and not a byte more, as a driver must
 * for callers built against the old header. */
static nvmlReturn_t pci_info_legacy(nvmlDevice_t dev, nvmlPciInfo_v2_t *pci) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !pci)
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS) {
                memset(pci, 0, sizeof *pci);
                pci->bus = 0x10 + dev->index;
                pci->pciDeviceId = 0x20B210DE;
                pci->pciSubSystemId = 0x147F10DE;
                snprintf(pci->busId, sizeof pci->busId, "0000:%02X:00.0", pci->bus);
        }
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_v2_t *pci) {
        return pci_info_legacy(dev, pci);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, nvmlPciInfo_v2_t *pci) { return pci_info_legacy(dev, pci); }

/* ---- samples ------------------------------------------------------------------------- */

struct usage {
        unsigned long long total, used;
        unsigned util;
};

/* Caller holds the lock.  mig >= 0: of that MIG device only (its memory, its processes). */
static struct usage usage_of(unsigned idx, const struct fake_gpu *g, int mig) {
        size_t n;
        struct fake_proc *p = fake_procs_scan(idx, &n);
        struct usage u = { g->memory_mib * MIB, g->base_used_mib * MIB, g->util };
        if (mig >= 0)
                u = (struct usage){ g->mig[mig].memory_mib * MIB, 0, 0 };
        for (size_t i = 0; i < n; i++) {
                if (mig >= 0 && p[i].mig != mig)
                        continue;
                u.used += p[i].mem_mib * MIB;
                u.util += p[i].sm_util;
        }
        free(p);
        if (u.util > 100)
                u.util = 100;
        return u;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem) {
        const struct fake_gpu *g;
        int mig;
        nvmlReturn_t r = lock_any(dev, &g, &mig);
        if (r == NVML_SUCCESS && !mem)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && (g->not_supported & NS_MEMORY))
                r = NVML_ERROR_NOT_SUPPORTED;
        if (r == NVML_SUCCESS) {
                struct usage u = usage_of(dev->index, g, mig);
                mem->total = u.total;
                mem->used = u.used;
                mem->free = u.used < u.total ? u.total - u.used : 0;
        }
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *mem) {
        const struct fake_gpu *g;
        int mig;
        nvmlReturn_t r = lock_any(dev, &g, &mig);
        if (r == NVML_SUCCESS && !mem)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && (!fake_config.memory_v2 || mem->version != MEMORY_V2_VERSION))
                r = (nvmlReturn_t) fake_config.version_mismatch_code;
        else if (r == NVML_SUCCESS && (g->not_supported & NS_MEMORY))
                r = NVML_ERROR_NOT_SUPPORTED;
        if (r == NVML_SUCCESS) {
                struct usage u = usage_of(dev->index, g, mig);
                mem->total = u.total;
                mem->reserved = 0;
                mem->used = u.used;
                mem->free = u.used < u.total ? u.total - u.used : 0;
        }
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *util) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !util)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && ((g->not_supported & NS_UTIL) || g->mig_mode == MIG_ON))
                r = NVML_ERROR_NOT_SUPPORTED; /* nvml.h: not supported in MIG mode */
        if (r == NVML_SUCCESS) {
                struct usage u = usage_of(dev->index, g, -1);
                util->gpu = u.util;
                util->memory = u.util / 2;
        }
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned int *temp) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && (!temp || sensor != 0))
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && (g->not_supported & NS_TEMP))
                r = NVML_ERROR_NOT_SUPPORTED;
        if (r == NVML_SUCCESS)
                *temp = g->temp;
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t dev, nvmlTemperature_v1_t *t) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !t)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && t->version != TEMPERATURE_V1_VERSION)
                r = (nvmlReturn_t) fake_config.version_mismatch_code;
        else if (r == NVML_SUCCESS && t->sensorType != 0)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && (g->not_supported & NS_TEMP))
                r = NVML_ERROR_NOT_SUPPORTED;
        if (r == NVML_SUCCESS)
                t->temperature = (int) g->temp;
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *mw) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !mw)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && (g->not_supported & NS_POWER))
                r = NVML_ERROR_NOT_SUPPORTED;
        if (r == NVML_SUCCESS)
                *mw = g->power_w * 1000;
        return unlock_ret(r);
}

/* Energy since "boot" at the configured power: enough for a monotonic counter. */
EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !mj)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && (g->not_supported & NS_POWER))
                r = NVML_ERROR_NOT_SUPPORTED;
        if (r == NVML_SUCCESS) {
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                *mj = (unsigned long long) g->power_w *
                      ((unsigned long long) ts.tv_sec * 1000ULL + (unsigned long long) ts.tv_nsec / 1000000ULL);
        }
        return unlock_ret(r);
}

/* ---- ECC and page retirement: a healthy board ---------------------------------------- */

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t dev, int *current, int *pending) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && (!current || !pending))
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS)
                *current = *pending = 1;
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int type, int counter, unsigned long long *n) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !n)
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS)
                *n = 0;
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t dev, int cause, unsigned int *count,
                                              unsigned long long *addresses) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !count)
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS)
                *count = 0;
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t dev, int *pending) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !pending)
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS)
                *pending = 0;
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned int *corr, unsigned int *unc,
                                              unsigned int *pending, unsigned int *failed) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && (!corr || !unc || !pending || !failed))
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS)
                *corr = *unc = *pending = *failed = 0;
        return unlock_ret(r);
}

/* ---- running processes --------------------------------------------------------------- */

/* Writes the process list of dev with the given entry size, following the sizing
 * protocol: too small a count (NULL buffer included) gives INSUFFICIENT_SIZE and the count
 * needed, no processes gives SUCCESS and 0. */
static nvmlReturn_t list_procs(nvmlDevice_t dev, int rank, size_t stride, unsigned *count, void *buf) {
        const struct fake_gpu *g;
        int mig;
        nvmlReturn_t r = lock_any(dev, &g, &mig);
        if (r == NVML_SUCCESS && !count)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && fake_config.process_abi < rank)
                r = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (r != NVML_SUCCESS)
                return unlock_ret(r);
        size_t n, k = 0;
        struct fake_proc *p = fake_procs_scan(dev->index, &n);
        /* A MIG device lists its own processes; its GPU lists them all. */
        for (size_t i = 0; i < n; i++)
                if (mig < 0 || p[i].mig == mig)
                        p[k++] = p[i];
        n = k;
        if (n > *count || (n > 0 && !buf)) {
                *count = (unsigned) n;
                free(p);
                return unlock_ret(NVML_ERROR_INSUFFICIENT_SIZE);
        }
        for (size_t i = 0; i < n; i++) {
                nvmlProcessDetail_v1_t e;
                memset(&e, 0, sizeof e); /* padding too: callers may look for untouched bytes */
                e.pid = p[i].pid;
                e.usedGpuMemory = p[i].mem_mib * MIB;
                e.gpuInstanceId = e.computeInstanceId = NO_MIG;
                if (g->mig_mode == MIG_ON && p[i].mig >= 0 && (unsigned) p[i].mig < g->n_mig) {
                        e.gpuInstanceId = (unsigned) p[i].mig + 1;
                        e.computeInstanceId = 0;
                }
                /* Every layout starts like the 32-byte one; older ones are its prefix. */
                memcpy((char *) buf + i * stride, &e, stride);
        }
        *count = (unsigned) n;
        free(p);
        return unlock_ret(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count, void *infos) {
        pthread_mutex_lock(&fake_lock);
        bool wide = fake_config.process_abi == ABI_V3_32;
        pthread_mutex_unlock(&fake_lock);
        return list_procs(dev, ABI_V3, wide ? 32 : 24, count, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t dev, unsigned int *count, void *infos) {
        return list_procs(dev, ABI_V2, 24, count, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t dev, unsigned int *count, void *infos) {
        return list_procs(dev, ABI_V1, 16, count, infos);
}

EXPORT nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t dev, nvmlProcessDetailList_v1_t *l) {
        const struct fake_gpu *g;
        int mig;
        nvmlReturn_t r = lock_any(dev, &g, &mig);
        if (r == NVML_SUCCESS && !l)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && fake_config.process_abi != ABI_DETAIL)
                r = NVML_ERROR_FUNCTION_NOT_FOUND;
        else if (r == NVML_SUCCESS && l->version != DETAIL_LIST_V1_VERSION)
                r = (nvmlReturn_t) fake_config.version_mismatch_code;
        else if (r == NVML_SUCCESS && l->mode != 0)
                l->numProcArrayEntries = 0; /* graphics and MPS lists: nothing runs there */
        if (r != NVML_SUCCESS || l->mode != 0)
                return unlock_ret(r);
        unlock_ret(r);
        return list_procs(dev, ABI_DETAIL, sizeof(nvmlProcessDetail_v1_t), &l->numProcArrayEntries, l->procArray);
}

/* Only for nvitop's stride heuristic: it exists from 535.43 on, so it is "missing"
 * (FUNCTION_NOT_FOUND) unless the configured driver is that new. */
EXPORT nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t dev, nvmlConfComputeMemSizeInfo_t *info) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && fake_config.process_abi < ABI_V3_32)
                r = NVML_ERROR_FUNCTION_NOT_FOUND;
        else if (r == NVML_SUCCESS && !info)
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS)
                info->protectedMemSizeKib = info->unprotectedMemSizeKib = 0;
        return unlock_ret(r);
}

/* Samples are taken "now", so every call sees new ones; only processes with non-zero
 * SM_UTIL have samples, as on real drivers. */
EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *util,
                                                    unsigned int *count, unsigned long long last_seen) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !count)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS &&
                 (!fake_config.process_util || (g->not_supported & NS_PROCESS_UTIL) || g->mig_mode == MIG_ON))
                r = NVML_ERROR_NOT_SUPPORTED;
        if (r != NVML_SUCCESS)
                return unlock_ret(r);
        size_t n, k = 0;
        struct fake_proc *p = fake_procs_scan(dev->index, &n);
        unsigned long long ts = now_usec();
        for (size_t i = 0; i < n; i++)
                if (p[i].sm_util > 0 && ts > last_seen)
                        p[k++] = p[i];
        if (k == 0)
                r = NVML_ERROR_NOT_FOUND;
        else if (!util || *count < k) {
                *count = (unsigned) k;
                r = NVML_ERROR_INSUFFICIENT_SIZE;
        } else {
                for (size_t i = 0; i < k; i++)
                        util[i] = (nvmlProcessUtilizationSample_t){ .pid = p[i].pid,
                                                                    .timeStamp = ts,
                                                                    .smUtil = p[i].sm_util,
                                                                    .memUtil = p[i].sm_util / 2 };
                *count = (unsigned) k;
        }
        free(p);
        return unlock_ret(r);
}

/* ---- MIG (DIR/config gpuN.mig) ----------------------------------------------------- */

/* The MIG calls of a GPU handle: FUNCTION_NOT_FOUND for a driver configured without them,
 * NOT_SUPPORTED for a GPU without MIG. */
static nvmlReturn_t lock_mig_gpu(nvmlDevice_t dev, const struct fake_gpu **g) {
        nvmlReturn_t r = lock_dev(dev, g);
        if (r == NVML_SUCCESS && !fake_config.mig_calls)
                r = NVML_ERROR_FUNCTION_NOT_FOUND;
        else if (r == NVML_SUCCESS && (*g)->mig_mode == MIG_UNSUPPORTED)
                r = NVML_ERROR_NOT_SUPPORTED;
        return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned int *current, unsigned int *pending) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_mig_gpu(dev, &g);
        if (r == NVML_SUCCESS && (!current || !pending))
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS)
                *current = *pending = g->mig_mode == MIG_ON;
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned int *count) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_mig_gpu(dev, &g);
        if (r == NVML_SUCCESS && !count)
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS)
                *count = g->mig_max;
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned int index, nvmlDevice_t *mig) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_mig_gpu(dev, &g);
        if (r == NVML_SUCCESS && (!mig || index >= g->mig_max || index >= FAKE_MAX_MIG))
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && (g->mig_mode != MIG_ON || index >= g->n_mig))
                r = NVML_ERROR_NOT_FOUND;
        if (r == NVML_SUCCESS)
                *mig = &fake_mig_devices[dev->index][index];
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t dev, unsigned int *is_mig) {
        const struct fake_gpu *g;
        int mig;
        nvmlReturn_t r = lock_any(dev, &g, &mig);
        if (r == NVML_SUCCESS && !is_mig)
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS)
                *is_mig = mig >= 0;
        return unlock_ret(r);
}

/* Instance ids of a MIG device: GPU instance k + 1, compute instance 0 (one per GPU
 * instance, as the usual layouts have).  A GPU handle has none. */
static nvmlReturn_t instance_id(nvmlDevice_t dev, unsigned int *id, bool gpu_instance) {
        const struct fake_gpu *g;
        int mig;
        nvmlReturn_t r = lock_any(dev, &g, &mig);
        if (r == NVML_SUCCESS && !id)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && mig < 0)
                r = NVML_ERROR_NOT_SUPPORTED;
        if (r == NVML_SUCCESS)
                *id = gpu_instance ? (unsigned) mig + 1 : 0;
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t dev, unsigned int *id) {
        return instance_id(dev, id, true);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t dev, unsigned int *id) {
        return instance_id(dev, id, false);
}

EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t dev, nvmlDeviceAttributes_t *a) {
        const struct fake_gpu *g;
        int mig;
        nvmlReturn_t r = lock_any(dev, &g, &mig);
        if (r == NVML_SUCCESS && !a)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && mig < 0)
                r = NVML_ERROR_NOT_SUPPORTED;
        if (r == NVML_SUCCESS) {
                memset(a, 0, sizeof *a);
                a->multiprocessorCount = 14 * g->mig[mig].slices;
                a->gpuInstanceSliceCount = a->computeInstanceSliceCount = g->mig[mig].slices;
                a->memorySizeMB = g->mig[mig].memory_mib;
        }
        return unlock_ret(r);
}

/* ---- events -------------------------------------------------------------------------- */

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
        nvmlReturn_t r = lock_lib();
        if (r == NVML_SUCCESS && !set)
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r != NVML_SUCCESS)
                return unlock_ret(r);
        struct nvmlEventSet_st *s = calloc(1, sizeof *s);
        if (!s)
                return unlock_ret(NVML_ERROR_MEMORY);
        /* Lines written before the set existed are history, not news. */
        char path[PATH_MAX + 16];
        struct stat st;
        fake_path_in_dir(path, sizeof path, "events");
        if (fake_state_dir[0] && stat(path, &st) == 0) {
                s->offset = st.st_size;
                s->dev = st.st_dev;
                s->ino = st.st_ino;
        }
        /* The real library sleeps in the driver until an event comes; polling the file every
         * few milliseconds instead would make the fake cost the daemon more CPU than NVML does. */
        s->notify_fd = -1;
        if (fake_state_dir[0]) {
                s->notify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                if (s->notify_fd >= 0 && inotify_add_watch(s->notify_fd, fake_state_dir,
                                                           IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0) {
                        close(s->notify_fd);
                        s->notify_fd = -1;
                }
        }
        *set = s;
        return unlock_ret(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t dev, unsigned long long *types) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !types)
                r = NVML_ERROR_INVALID_ARGUMENT;
        if (r == NVML_SUCCESS)
                *types = EV_SUPPORTED;
        return unlock_ret(r);
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types, nvmlEventSet_t set) {
        const struct fake_gpu *g;
        nvmlReturn_t r = lock_dev(dev, &g);
        if (r == NVML_SUCCESS && !set)
                r = NVML_ERROR_INVALID_ARGUMENT;
        else if (r == NVML_SUCCESS && (types & ~EV_SUPPORTED))
                r = NVML_ERROR_NOT_SUPPORTED;
        if (r == NVML_SUCCESS)
                set->registered[dev->index] |= types;
        return unlock_ret(r);
}

/* Sleeps until DIR changes (inotify, armed when the set was made, so a line appended between
 * the look and the sleep still wakes it) or, without inotify, for 10 ms at most. */
static void event_nap(nvmlEventSet_t set, long long left_ms) {
        if (set->notify_fd >= 0) {
                struct pollfd p = { .fd = set->notify_fd, .events = POLLIN };
                if (poll(&p, 1, left_ms > 60000 ? 60000 : (int) left_ms) > 0) {
                        char buf[4096];
                        while (read(set->notify_fd, buf, sizeof buf) > 0)
                                ;
                }
                return;
        }
        struct timespec nap = { 0, (left_ms < 10 ? left_ms : 10) * 1000000L };
        nanosleep(&nap, NULL);
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                nvmlReturn_t r = lock_lib();
                if (r == NVML_SUCCESS && (!set || !data))
                        r = NVML_ERROR_INVALID_ARGUMENT;
                if (r == NVML_SUCCESS && !fake_event_next(set, data))
                        r = NVML_ERROR_TIMEOUT;
                unlock_ret(r);
                if (r != NVML_ERROR_TIMEOUT)
                        return r;
                clock_gettime(CLOCK_MONOTONIC, &now);
                long long ms = (long long) (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
                if (ms >= (long long) timeoutms)
                        return NVML_ERROR_TIMEOUT;
                event_nap(set, (long long) timeoutms - ms);
        }
}

/* The pre-NVML-11 call: its nvmlEventData_t ended after eventData, so only that much is written. */
EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
        nvmlEventData_t d;
        nvmlReturn_t r = nvmlEventSetWait_v2(set, data ? &d : NULL, timeoutms);
        if (r == NVML_SUCCESS)
                memcpy(data, &d, EVENT_DATA_V1_SIZE);
        return r;
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
        nvmlReturn_t r = lock_lib();
        if (r == NVML_SUCCESS && set) {
                if (set->notify_fd >= 0)
                        close(set->notify_fd);
                free(set);
        }
        return unlock_ret(r);
}
