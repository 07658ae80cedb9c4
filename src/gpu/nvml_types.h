/* The part of the NVML C API that nvml.c uses, declared here because we never build
 * against nvml.h: the library is dlopen()ed so that gpuwardd runs on hosts without a driver.
 * Layouts and values are from nvml.h 13.3; docs/NVML-ABI.md
 * lists each one against the header it was checked with.  The sizes and offsets are checked
 * below because a wrong layout silently scrambles what the driver writes. */
#pragma once
#include <stddef.h>

typedef enum {
        NVML_SUCCESS = 0,
        NVML_ERROR_UNINITIALIZED = 1,
        NVML_ERROR_INVALID_ARGUMENT = 2,
        NVML_ERROR_NOT_SUPPORTED = 3,
        NVML_ERROR_NO_PERMISSION = 4,
        NVML_ERROR_NOT_FOUND = 6,
        NVML_ERROR_INSUFFICIENT_SIZE = 7,
        NVML_ERROR_DRIVER_NOT_LOADED = 9,
        NVML_ERROR_TIMEOUT = 10,
        NVML_ERROR_LIBRARY_NOT_FOUND = 12,
        NVML_ERROR_FUNCTION_NOT_FOUND = 13,
        NVML_ERROR_GPU_IS_LOST = 15,
        NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
        NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
        NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_TEMPERATURE_GPU 0
#define NVML_PROCESS_MODE_COMPUTE 0
/* NVML_STRUCT_VERSION(data, ver) = sizeof | ver << 24: the bare number 2 is refused. */
#define GW_NVML_MEMORY_V2 0x02000028u
#define GW_NVML_PROCESS_DETAIL_LIST_V1 0x01000018u
#define GW_NVML_TEMPERATURE_V1 0x0100000Cu
#define GW_NVML_VALUE_NOT_AVAILABLE (~0ULL)

#define NVML_DEVICE_MIG_ENABLE 1
#define NVML_DEVICE_MIG_MAX 8 /* MIG devices per GPU: 7 on A100/H100, 4 on A30 */

#define nvmlEventTypeSingleBitEccError 0x1ULL
#define nvmlEventTypeDoubleBitEccError 0x2ULL
#define nvmlEventTypeXidCriticalError 0x8ULL

/* What nvmlDeviceGetPciInfo_v3 writes. */
typedef struct {
        char busIdLegacy[16];
        unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
        char busId[32];
} nvmlPciInfo_t;

/* What nvmlDeviceGetPciInfo_v2 and the unsuffixed call write: the pre-NVML-9 layout, whose
 * 16-byte busId sits where nvmlPciInfo_t has busIdLegacy and whose tail is four reserved
 * words, not a bus id (pynvml calls it nvmlPciInfo_v2_t, "legacy pciInfo used for _v1 and
 * _v2").  nvml.h still declares those two with nvmlPciInfo_t, but a driver cannot write the
 * newer layout there without overrunning callers built against the old one. */
typedef struct {
        char busId[16];
        unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
        unsigned int reserved[4];
} nvmlPciInfo_v2_t;

typedef struct {
        unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
        unsigned long long total, free, used; /* used = reserved + allocated */
} nvmlMemory_t;

typedef struct {
        unsigned int version;
        unsigned long long total, reserved, free, used; /* used = allocated only */
} nvmlMemory_v2_t;

/* Every process-info layout starts with pid at 0 and usedGpuMemory at 8; entries differ
 * only in stride (16, 24 or 32 bytes), which is all the parser needs to know. */
typedef struct {
        unsigned int pid;
        unsigned long long usedGpuMemory;
        unsigned int gpuInstanceId, computeInstanceId;
        unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessDetail_v1_t;

typedef struct {
        unsigned int version, mode, numProcArrayEntries;
        nvmlProcessDetail_v1_t *procArray;
} nvmlProcessDetailList_v1_t;

typedef struct {
        unsigned int pid;
        unsigned long long timeStamp; /* CPU microseconds */
        unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct {
        unsigned int version;
        int sensorType;
        int temperature;
} nvmlTemperature_v1_t;

typedef struct {
        unsigned long long protectedMemSizeKib, unprotectedMemSizeKib;
} nvmlConfComputeMemSizeInfo_t;

/* nvmlEventSetWait_v2 writes all of it; the pre-NVML-11 nvmlEventSetWait only the first 24
 * bytes (no instance ids), which a zeroed struct of this size takes as well. */
typedef struct {
        nvmlDevice_t device;
        unsigned long long eventType;
        unsigned long long eventData; /* the Xid for Xid events; 999 for an unknown Xid */
        unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

/* What nvmlDeviceGetAttributes_v2 writes (the unsuffixed call wrote only the first six
 * fields).  On a MIG device the slice counts say how much of its GPU it holds. */
typedef struct {
        unsigned int multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount;
        unsigned int sharedJpegCount, sharedOfaCount;
        unsigned int gpuInstanceSliceCount, computeInstanceSliceCount;
        unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

/* GPM (NVML 11.8+, Hopper and later): counters sampled twice and turned into metrics.  A
 * sample is an opaque handle the library allocates.  NVML_GPM_METRIC_MAX grew from 98 (11.8
 * to 12.8) to 210 (12.9) and 333 (13.2) while NVML_GPM_METRICS_GET_VERSION stayed 1, so
 * the struct's size is not versioned: ours is allocated with GW_NVML_GPM_METRICS_CAP
 * entries, more than any header we read, and asks for one metric (docs/NVML-ABI.md). */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;
#define GW_NVML_GPM_SUPPORT_VERSION 1u /* bare, not NVML_STRUCT_VERSION */
#define GW_NVML_GPM_METRICS_GET_VERSION 1u
#define GW_NVML_GPM_METRIC_SM_UTIL 2u /* "Percentage of SMs that were busy. 0.0 - 100.0" */
#define GW_NVML_GPM_METRICS_CAP 1024u

typedef struct {
        unsigned int version;
        unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

typedef struct {
        unsigned int metricId; /* in */
        nvmlReturn_t nvmlReturn; /* out: value is valid only when NVML_SUCCESS */
        double value;
        struct {
                char *shortName, *longName, *unit;
        } metricInfo;
} nvmlGpmMetric_t;

typedef struct {
        unsigned int version;
        unsigned int numMetrics;
        nvmlGpmSample_t sample1, sample2;
        nvmlGpmMetric_t metrics[GW_NVML_GPM_METRICS_CAP];
} nvmlGpmMetricsGet_t;

/* Sizes (LP64) and the offsets we read, as nvml.h lays them out (docs/NVML-ABI.md). */
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId");
_Static_assert(sizeof(nvmlPciInfo_v2_t) == 52, "nvmlPciInfo_v2_t (legacy) layout");
_Static_assert(offsetof(nvmlPciInfo_v2_t, busId) == 0 && offsetof(nvmlPciInfo_v2_t, device) == 24,
               "nvmlPciInfo_v2_t fields");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t layout");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t layout");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t layout");
_Static_assert(offsetof(nvmlMemory_v2_t, total) == 8 && offsetof(nvmlMemory_v2_t, used) == 32,
               "nvmlMemory_v2_t fields");
_Static_assert(GW_NVML_MEMORY_V2 == (sizeof(nvmlMemory_v2_t) | 2u << 24),
               "nvmlMemory_v2 = NVML_STRUCT_VERSION(Memory, 2)");
_Static_assert(sizeof(nvmlProcessDetail_v1_t) == 32, "nvmlProcessDetail_v1_t layout");
_Static_assert(offsetof(nvmlProcessDetail_v1_t, usedGpuMemory) == 8, "usedGpuMemory is at 8 in every process layout");
_Static_assert(sizeof(nvmlProcessDetailList_v1_t) == 24, "nvmlProcessDetailList_v1_t layout");
_Static_assert(offsetof(nvmlProcessDetailList_v1_t, procArray) == 16, "nvmlProcessDetailList_v1_t.procArray");
_Static_assert(GW_NVML_PROCESS_DETAIL_LIST_V1 == (sizeof(nvmlProcessDetailList_v1_t) | 1u << 24),
               "nvmlProcessDetailList_v1 = NVML_STRUCT_VERSION(ProcessDetailList, 1)");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t layout");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8 &&
                       offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16,
               "nvmlProcessUtilizationSample_t fields");
_Static_assert(sizeof(nvmlTemperature_v1_t) == 12, "nvmlTemperature_v1_t layout");
_Static_assert(GW_NVML_TEMPERATURE_V1 == (sizeof(nvmlTemperature_v1_t) | 1u << 24),
               "nvmlTemperature_v1 = NVML_STRUCT_VERSION(Temperature, 1)");
_Static_assert(sizeof(nvmlConfComputeMemSizeInfo_t) == 16, "nvmlConfComputeMemSizeInfo_t layout");
_Static_assert(sizeof(nvmlDeviceAttributes_t) == 40 && offsetof(nvmlDeviceAttributes_t, gpuInstanceSliceCount) == 24,
               "nvmlDeviceAttributes_t layout");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t layout");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40 && offsetof(nvmlGpmMetric_t, value) == 8, "nvmlGpmMetric_t layout");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8 && offsetof(nvmlGpmMetricsGet_t, sample2) == 16 &&
                       offsetof(nvmlGpmMetricsGet_t, metrics) == 24,
               "nvmlGpmMetricsGet_t fields");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t layout");
_Static_assert(offsetof(nvmlEventData_t, eventType) == 8 && offsetof(nvmlEventData_t, eventData) == 16 &&
                       offsetof(nvmlEventData_t, gpuInstanceId) == 24,
               "nvmlEventData_t fields");

/* The entry points nvml.c resolves; NULL where the library lacks them.  The three
 * running-process calls share one type because only their entry stride differs. */
typedef nvmlReturn_t (*gw_nvml_proc_list_fn)(nvmlDevice_t, unsigned int *, void *);

struct gw_nvml_fns {
        nvmlReturn_t (*init)(void);
        nvmlReturn_t (*shutdown)(void);
        const char *(*error_string)(nvmlReturn_t);
        nvmlReturn_t (*driver_version)(char *, unsigned int);
        nvmlReturn_t (*count)(unsigned int *);
        nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t *);
        nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
        nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
        nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t *); /* _v3 */
        nvmlReturn_t (*pci_info_legacy)(nvmlDevice_t, nvmlPciInfo_v2_t *); /* _v2, else unsuffixed */
        nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
        nvmlReturn_t (*memory_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
        nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
        nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int *);
        nvmlReturn_t (*temperature_v)(nvmlDevice_t, nvmlTemperature_v1_t *);
        nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
        nvmlReturn_t (*process_detail_list)(nvmlDevice_t, nvmlProcessDetailList_v1_t *);
        gw_nvml_proc_list_fn procs_v3, procs_v2, procs_v1;
        nvmlReturn_t (*conf_compute_mem)(nvmlDevice_t, nvmlConfComputeMemSizeInfo_t *);
        nvmlReturn_t (*process_utilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
                                            unsigned long long);
        nvmlReturn_t (*event_set_create)(nvmlEventSet_t *);
        nvmlReturn_t (*supported_event_types)(nvmlDevice_t, unsigned long long *);
        nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
        nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
        nvmlReturn_t (*event_set_free)(nvmlEventSet_t);
        /* MIG (NVML 11+); any of them missing: every GPU is whole. */
        nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned int *, unsigned int *);
        nvmlReturn_t (*max_mig_count)(nvmlDevice_t, unsigned int *);
        nvmlReturn_t (*mig_handle_by_index)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
        nvmlReturn_t (*gpu_instance_id)(nvmlDevice_t, unsigned int *);
        nvmlReturn_t (*compute_instance_id)(nvmlDevice_t, unsigned int *);
        nvmlReturn_t (*attributes)(nvmlDevice_t, nvmlDeviceAttributes_t *); /* _v2 only */
        /* GPM (11.8+; nvmlGpmMigSampleGet 12.0+): all five or no per-slice activity. */
        nvmlReturn_t (*gpm_query_support)(nvmlDevice_t, nvmlGpmSupport_t *);
        nvmlReturn_t (*gpm_sample_alloc)(nvmlGpmSample_t *);
        nvmlReturn_t (*gpm_sample_free)(nvmlGpmSample_t);
        nvmlReturn_t (*gpm_mig_sample_get)(nvmlDevice_t, unsigned int, nvmlGpmSample_t);
        nvmlReturn_t (*gpm_metrics_get)(nvmlGpmMetricsGet_t *);
};
