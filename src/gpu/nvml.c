/* The NVML backend: loads libnvidia-ml at run time, initialises it once, and turns its
 * answers into gpu.h's structs.  NVML output is input like any other: it is checked, never
 * asserted on.  Process lists live in nvml_procs.c. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/text.h"
#include "base/time.h"
#include "gpu/nvml_internal.h"

#define GW_NVML_DEFAULT_PATH "libnvidia-ml.so.1"
#define GW_NVML_MAX_DEVICES 1024 /* more than any host has; bounds what we allocate */
#define GW_NVML_WANTED_EVENTS (nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError)

int gw_nvml_errno(nvmlReturn_t r) {
        switch (r) {
        case NVML_SUCCESS:
                return 0;
        case NVML_ERROR_INVALID_ARGUMENT:
                return EINVAL;
        case NVML_ERROR_NOT_SUPPORTED:
        case NVML_ERROR_FUNCTION_NOT_FOUND:
                return EOPNOTSUPP;
        case NVML_ERROR_NO_PERMISSION:
                return EACCES;
        case NVML_ERROR_DRIVER_NOT_LOADED:
                return ENODEV;
        case NVML_ERROR_TIMEOUT:
                return ETIMEDOUT;
        case NVML_ERROR_INSUFFICIENT_SIZE:
                return EAGAIN;
        case NVML_ERROR_LIBRARY_NOT_FOUND:
                return ENOENT;
        case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
                return ELIBBAD;
        default:
                return EIO;
        }
}

/* The first of names the library exports (newest version first; docs/NVML-ABI.md lists
 * each call's order), or NULL. */
static void *sym_first(void *dl, const char *const *names) {
        for (; *names; names++) {
                void *p = dlsym(dl, *names);
                if (p)
                        return p;
        }
        return NULL;
}

#define LOAD(lib, field, ...) \
        ((lib)->fn.field =    \
                 (__typeof__((lib)->fn.field)) sym_first((lib)->dl, (const char *const[]){ __VA_ARGS__, NULL }))

static void load_symbols(struct gw_gpu_lib *lib) {
        LOAD(lib, init, "nvmlInit_v2", "nvmlInit");
        LOAD(lib, shutdown, "nvmlShutdown");
        LOAD(lib, error_string, "nvmlErrorString");
        LOAD(lib, driver_version, "nvmlSystemGetDriverVersion");
        /* A pair: GetCount_v2 also counts devices the _v1 GetHandleByIndex does not, so the two
         * versions number devices differently (nvml.h) and must not be mixed. */
        LOAD(lib, count, "nvmlDeviceGetCount_v2");
        LOAD(lib, handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
        if (!lib->fn.count || !lib->fn.handle_by_index) {
                LOAD(lib, count, "nvmlDeviceGetCount");
                LOAD(lib, handle_by_index, "nvmlDeviceGetHandleByIndex");
        }
        LOAD(lib, name, "nvmlDeviceGetName");
        LOAD(lib, uuid, "nvmlDeviceGetUUID");
        /* _v2 and the unsuffixed call write the older 52-byte layout (nvml_types.h). */
        LOAD(lib, pci_info, "nvmlDeviceGetPciInfo_v3");
        LOAD(lib, pci_info_legacy, "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo");
        LOAD(lib, memory, "nvmlDeviceGetMemoryInfo");
        LOAD(lib, memory_v2, "nvmlDeviceGetMemoryInfo_v2");
        LOAD(lib, utilization, "nvmlDeviceGetUtilizationRates");
        LOAD(lib, temperature, "nvmlDeviceGetTemperature");
        LOAD(lib, temperature_v, "nvmlDeviceGetTemperatureV");
        LOAD(lib, power, "nvmlDeviceGetPowerUsage");
        LOAD(lib, process_detail_list, "nvmlDeviceGetRunningProcessDetailList");
        LOAD(lib, procs_v3, "nvmlDeviceGetComputeRunningProcesses_v3");
        LOAD(lib, procs_v2, "nvmlDeviceGetComputeRunningProcesses_v2");
        LOAD(lib, procs_v1, "nvmlDeviceGetComputeRunningProcesses");
        LOAD(lib, conf_compute_mem, "nvmlDeviceGetConfComputeMemSizeInfo");
        LOAD(lib, process_utilization, "nvmlDeviceGetProcessUtilization");
        LOAD(lib, event_set_create, "nvmlEventSetCreate");
        LOAD(lib, supported_event_types, "nvmlDeviceGetSupportedEventTypes");
        LOAD(lib, register_events, "nvmlDeviceRegisterEvents");
        LOAD(lib, event_set_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
        LOAD(lib, event_set_free, "nvmlEventSetFree");
        LOAD(lib, mig_mode, "nvmlDeviceGetMigMode");
        LOAD(lib, max_mig_count, "nvmlDeviceGetMaxMigDeviceCount");
        LOAD(lib, mig_handle_by_index, "nvmlDeviceGetMigDeviceHandleByIndex");
        LOAD(lib, gpu_instance_id, "nvmlDeviceGetGpuInstanceId");
        LOAD(lib, compute_instance_id, "nvmlDeviceGetComputeInstanceId");
        /* The unsuffixed call writes a shorter struct without the slice counts. */
        LOAD(lib, attributes, "nvmlDeviceGetAttributes_v2");
        LOAD(lib, gpm_query_support, "nvmlGpmQueryDeviceSupport");
        LOAD(lib, gpm_sample_alloc, "nvmlGpmSampleAlloc");
        LOAD(lib, gpm_sample_free, "nvmlGpmSampleFree");
        LOAD(lib, gpm_mig_sample_get, "nvmlGpmMigSampleGet");
        LOAD(lib, gpm_metrics_get, "nvmlGpmMetricsGet");
}

/* nvmlErrorString's text, or the number when the library has none to give. */
static const char *nvml_strerror(const struct gw_gpu_lib *lib, nvmlReturn_t r, char *buf, size_t n) {
        const char *s = lib->fn.error_string ? lib->fn.error_string(r) : NULL;
        if (s && *s)
                return s;
        snprintf(buf, n, "NVML error %d", (int) r);
        return buf;
}

/* Driver strings are copied into our own buffers and cut at the first NUL or at n - 1,
 * because a buggy driver need not terminate them. */
void gw_nvml_copy_string(char *dst, size_t n, const char *src, size_t srclen) {
        size_t len = strnlen(src, srclen);
        if (len >= n)
                len = n - 1;
        memcpy(dst, src, len);
        dst[len] = '\0';
}

/* Total and used memory, preferring _v2 whose "used" excludes the driver's reservation. */
nvmlReturn_t gw_nvml_read_memory(struct gw_gpu_lib *lib, nvmlDevice_t h, uint64_t *total, uint64_t *used) {
        if (lib->fn.memory_v2 && !lib->memory_v1_only) {
                nvmlMemory_v2_t m = { .version = GW_NVML_MEMORY_V2 };
                nvmlReturn_t r = lib->fn.memory_v2(h, &m);
                if (r == NVML_SUCCESS) {
                        *total = m.total;
                        *used = m.used;
                }
                if (!gw_nvml_lacks_version(r, &lib->memory_v1_only))
                        return r;
        }
        if (!lib->fn.memory)
                return NVML_ERROR_FUNCTION_NOT_FOUND;
        nvmlMemory_t m = { 0 };
        nvmlReturn_t r = lib->fn.memory(h, &m);
        if (r == NVML_SUCCESS) {
                *total = m.total;
                *used = m.used;
        }
        return r;
}

/* nvitop's order: TemperatureV (12.8+ headers) first, the deprecated call after. */
static nvmlReturn_t read_temperature(struct gw_gpu_lib *lib, nvmlDevice_t h, unsigned *ret) {
        if (lib->fn.temperature_v && !lib->temperature_v1_only) {
                nvmlTemperature_v1_t t = { .version = GW_NVML_TEMPERATURE_V1, .sensorType = NVML_TEMPERATURE_GPU };
                nvmlReturn_t r = lib->fn.temperature_v(h, &t);
                if (r == NVML_SUCCESS)
                        *ret = t.temperature > 0 ? (unsigned) t.temperature : 0;
                if (!gw_nvml_lacks_version(r, &lib->temperature_v1_only))
                        return r;
        }
        if (!lib->fn.temperature)
                return NVML_ERROR_FUNCTION_NOT_FOUND;
        return lib->fn.temperature(h, NVML_TEMPERATURE_GPU, ret);
}

/* The PCI bus id as nvmlDeviceGetPciInfo_v3 spells it ("00000000:3B:00.0"), whichever call
 * the driver has.  The legacy calls' 16-byte busId uses a 4-digit domain, so their id is
 * rebuilt from the numeric fields in the current format (NVML_DEVICE_PCI_BUS_ID_FMT). */
static void read_pci_bus_id(const struct gw_gpu_lib *lib, nvmlDevice_t h, char *dst, size_t n) {
        nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (lib->fn.pci_info) {
                nvmlPciInfo_t pci;
                memset(&pci, 0, sizeof pci);
                r = lib->fn.pci_info(h, &pci);
                if (r == NVML_SUCCESS) {
                        gw_nvml_copy_string(dst, n, pci.busId, sizeof pci.busId);
                        return;
                }
        }
        if (r != NVML_ERROR_FUNCTION_NOT_FOUND || !lib->fn.pci_info_legacy)
                return;
        nvmlPciInfo_v2_t old;
        memset(&old, 0, sizeof old);
        if (lib->fn.pci_info_legacy(h, &old) == NVML_SUCCESS)
                snprintf(dst, n, "%08X:%02X:%02X.0", old.domain, old.bus, old.device);
}

_Static_assert(NVML_DEVICE_UUID_V2_BUFFER_SIZE <= NVML_DEVICE_NAME_V2_BUFFER_SIZE, "one buffer serves both");

static void read_static(struct gw_gpu_lib *lib, struct gw_gpu_dev *dev) {
        char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        uint64_t used;

        if (lib->fn.name && lib->fn.name(dev->handle, buf, sizeof buf) == NVML_SUCCESS)
                gw_nvml_copy_string(dev->st.name, sizeof dev->st.name, buf, sizeof buf);
        if (lib->fn.uuid && lib->fn.uuid(dev->handle, buf, sizeof buf) == NVML_SUCCESS)
                gw_nvml_copy_string(dev->st.uuid, sizeof dev->st.uuid, buf, sizeof buf);
        read_pci_bus_id(lib, dev->handle, dev->st.pci_bus_id, sizeof dev->st.pci_bus_id);
        if (gw_nvml_read_memory(lib, dev->handle, &dev->st.mem_total, &used) != NVML_SUCCESS)
                dev->st.mem_total = 0;
}

/* Registers Xid and double-bit ECC events on every device that supports them.  Events
 * are optional: any failure leaves lib->events NULL and gw_gpu_wait_event says -ENOTSUP. */
static void open_events(struct gw_gpu_lib *lib) {
        const struct gw_nvml_fns *fn = &lib->fn;
        nvmlEventSet_t set = NULL;
        unsigned registered = 0;

        if (!fn->event_set_create || !fn->register_events || !fn->event_set_wait || !fn->event_set_free)
                return;
        if (fn->event_set_create(&set) != NVML_SUCCESS || !set)
                return;
        for (unsigned i = 0; i < lib->count; i++) {
                nvmlDevice_t h = lib->devs[i].handle;
                unsigned long long supported = GW_NVML_WANTED_EVENTS;
                if (!h)
                        continue;
                if (fn->supported_event_types && fn->supported_event_types(h, &supported) != NVML_SUCCESS)
                        continue;
                unsigned long long want = supported & GW_NVML_WANTED_EVENTS;
                if (!want)
                        continue;
                nvmlReturn_t r = fn->register_events(h, want, set);
                if (r == NVML_SUCCESS)
                        registered++;
                else if (r == NVML_ERROR_UNKNOWN) {
                        /* nvml.h: after UNKNOWN the set is unusable and must be freed. */
                        registered = 0;
                        break;
                }
        }
        if (registered == 0) {
                (void) fn->event_set_free(set);
                return;
        }
        lib->events = set;
}

/* Fills err for a library that dlopen() refused. */
static int open_failed(const char *path, char *err, size_t errlen) {
        const char *why = dlerror();
        bool missing = !why || strstr(why, "No such file") || (strchr(path, '/') && access(path, F_OK) < 0);
        if (missing) {
                snprintf(err, errlen, "NVML: %s not found (no NVIDIA driver?)", path);
                return -ENOENT;
        }
        snprintf(err, errlen, "NVML: cannot load %s: %s", path, why);
        return -ELIBBAD;
}

int gw_gpu_open(const char *path, struct gw_gpu_lib **ret, char *err, size_t errlen) {
        char ebuf[32], scratch[1];
        nvmlReturn_t r;
        unsigned n = 0;

        if (!ret)
                return -EINVAL;
        if (!err || !errlen) {
                err = scratch;
                errlen = sizeof scratch;
        }
        err[0] = '\0';
        if (!path)
                path = GW_NVML_DEFAULT_PATH;

        struct gw_gpu_lib *lib = gw_xcalloc(1, sizeof *lib);
        lib->dl = dlopen(path, RTLD_LAZY | RTLD_GLOBAL);
        if (!lib->dl) {
                free(lib);
                return open_failed(path, err, errlen);
        }
        load_symbols(lib);
        if (!lib->fn.init || !lib->fn.shutdown || !lib->fn.count || !lib->fn.handle_by_index) {
                gw_say(err, errlen, "NVML: %s lacks %s", path,
                       !lib->fn.init       ? "nvmlInit"
                       : !lib->fn.count    ? "nvmlDeviceGetCount"
                       : !lib->fn.shutdown ? "nvmlShutdown"
                                           : "nvmlDeviceGetHandleByIndex");
                (void) dlclose(lib->dl);
                free(lib);
                return -ELIBBAD;
        }

        r = lib->fn.init();
        if (r != NVML_SUCCESS) {
                gw_say(err, errlen, "NVML: nvmlInit failed: %s", nvml_strerror(lib, r, ebuf, sizeof ebuf));
                (void) dlclose(lib->dl);
                free(lib);
                return -gw_nvml_errno(r);
        }

        if (lib->fn.driver_version) {
                char v[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
                if (lib->fn.driver_version(v, sizeof v) == NVML_SUCCESS)
                        gw_nvml_copy_string(lib->driver_version, sizeof lib->driver_version, v, sizeof v);
        }

        r = lib->fn.count(&n);
        if (r != NVML_SUCCESS) {
                gw_say(err, errlen, "NVML: nvmlDeviceGetCount failed: %s", nvml_strerror(lib, r, ebuf, sizeof ebuf));
                int e = -gw_nvml_errno(r);
                (void) gw_gpu_close(lib);
                return e;
        }
        lib->count = n > GW_NVML_MAX_DEVICES ? GW_NVML_MAX_DEVICES : n;
        lib->devs = gw_xcalloc(lib->count ? lib->count : 1, sizeof *lib->devs);
        for (unsigned i = 0; i < lib->count; i++) {
                struct gw_gpu_dev *dev = &lib->devs[i];
                dev->st.index = i;
                r = lib->fn.handle_by_index(i, &dev->handle);
                if (r != NVML_SUCCESS || !dev->handle) {
                        /* GetCount also counts devices we may not open (nvml.h); keep the slot so
                         * indexes stay NVML's. */
                        dev->handle = NULL;
                        dev->open_health = r == NVML_ERROR_GPU_IS_LOST ? GW_GPU_LOST : GW_GPU_UNAVAILABLE;
                        continue;
                }
                read_static(lib, dev);
                gw_nvml_gpm_probe(lib, dev);
        }
        open_events(lib);
        *ret = lib;
        return 0;
}

struct gw_gpu_lib *gw_gpu_close(struct gw_gpu_lib *lib) {
        if (!lib)
                return NULL;
        if (lib->events)
                (void) lib->fn.event_set_free(lib->events);
        gw_nvml_gpm_free(lib); /* before shutdown: the samples are the library's */
        (void) lib->fn.shutdown();
        (void) dlclose(lib->dl);
        free(lib->devs);
        free(lib);
        return NULL;
}

unsigned gw_gpu_count(const struct gw_gpu_lib *lib) { return lib ? lib->count : 0; }

const char *gw_gpu_driver_version(const struct gw_gpu_lib *lib) { return lib ? lib->driver_version : ""; }

int gw_gpu_static_info(const struct gw_gpu_lib *lib, unsigned idx, struct gw_gpu_static *ret) {
        if (!lib || !ret || idx >= lib->count)
                return -EINVAL;
        if (!lib->devs[idx].handle)
                return -EIO;
        *ret = lib->devs[idx].st;
        return 0;
}

/* A failure that says nothing about the GPU's health, only about one metric. */
static bool metric_unsupported(nvmlReturn_t r) {
        return r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND;
}

int gw_gpu_sample(struct gw_gpu_lib *lib, unsigned idx, struct gw_gpu_sample *ret) {
        if (!lib || !ret || idx >= lib->count)
                return -EINVAL;
        const struct gw_gpu_dev *dev = &lib->devs[idx];
        struct gw_gpu_sample s = { .index = idx, .health = GW_GPU_OK };
        if (!dev->handle) {
                s.health = dev->open_health;
                *ret = s;
                return 0;
        }

        nvmlReturn_t r[4];
        nvmlUtilization_t u = { 0 };
        r[0] = lib->fn.utilization ? lib->fn.utilization(dev->handle, &u) : NVML_ERROR_FUNCTION_NOT_FOUND;
        if (r[0] == NVML_SUCCESS) {
                s.valid |= GW_GPU_HAS_UTIL;
                s.util_gpu = u.gpu > 100 ? 100 : u.gpu;
                s.util_mem = u.memory > 100 ? 100 : u.memory;
        }
        r[1] = r[0] == NVML_ERROR_GPU_IS_LOST ? r[0] : gw_nvml_read_memory(lib, dev->handle, &s.mem_total, &s.mem_used);
        if (r[1] == NVML_SUCCESS)
                s.valid |= GW_GPU_HAS_MEM;
        r[2] = r[1] == NVML_ERROR_GPU_IS_LOST ? r[1] : read_temperature(lib, dev->handle, &s.temp_c);
        if (r[2] == NVML_SUCCESS)
                s.valid |= GW_GPU_HAS_TEMP;
        r[3] = r[2] == NVML_ERROR_GPU_IS_LOST ? r[2]
               : lib->fn.power                ? lib->fn.power(dev->handle, &s.power_mw)
                                              : NVML_ERROR_FUNCTION_NOT_FOUND;
        if (r[3] == NVML_SUCCESS)
                s.valid |= GW_GPU_HAS_POWER;

        if (r[3] == NVML_ERROR_GPU_IS_LOST) {
                s = (struct gw_gpu_sample){ .index = idx, .health = GW_GPU_LOST };
        } else if (s.valid == 0) {
                /* Nothing readable and not merely unsupported: no permission, or worse. */
                for (size_t i = 0; i < ELEMENTSOF(r); i++)
                        if (!metric_unsupported(r[i]))
                                s.health = GW_GPU_UNAVAILABLE;
        }
        if (!(s.valid & GW_GPU_HAS_MEM))
                s.mem_total = s.mem_used = 0;
        if (!(s.valid & GW_GPU_HAS_TEMP))
                s.temp_c = 0;
        if (!(s.valid & GW_GPU_HAS_POWER))
                s.power_mw = 0;
        *ret = s;
        return 0;
}

int gw_gpu_wait_event(struct gw_gpu_lib *lib, unsigned timeout_ms, struct gw_nvml_event *ret) {
        if (!lib || !ret)
                return -EINVAL;
        if (!lib->events)
                return -ENOTSUP;
        gw_usec_t deadline = gw_clock_mono() + (gw_usec_t) timeout_ms * GW_USEC_PER_MSEC;
        for (;;) {
                gw_usec_t left = deadline - gw_clock_mono();
                unsigned left_ms = left > 0 ? (unsigned) ((left + GW_USEC_PER_MSEC - 1) / GW_USEC_PER_MSEC) : 0;
                nvmlEventData_t d;
                memset(&d, 0, sizeof d);
                nvmlReturn_t r = lib->fn.event_set_wait(lib->events, &d, left_ms);
                if (r == NVML_ERROR_TIMEOUT)
                        return -ETIMEDOUT;
                if (r != NVML_SUCCESS)
                        return -EIO;
                for (unsigned i = 0; i < lib->count; i++)
                        if (lib->devs[i].handle && lib->devs[i].handle == d.device) {
                                *ret = (struct gw_nvml_event){ .index = i, .type = d.eventType, .xid = d.eventData };
                                return 0;
                        }
                /* An event for a handle we do not hold cannot be attributed: wait on. */
                if (left_ms == 0)
                        return -ETIMEDOUT;
        }
}
