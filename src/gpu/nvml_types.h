/* The part of the NVML C API that nvml.c uses, declared here because we never build
 * against nvml.h: the library is dlopen()ed so that gpuwardd runs on hosts without a driver.
 * Layouts and values are from nvml.h 13.3 (see shared/docs/nvml.md §2-§4); the sizes are
 * checked below because a wrong layout silently scrambles what the driver writes. */
#pragma once

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
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE        96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE        96
#define NVML_TEMPERATURE_GPU                   0
#define NVML_PROCESS_MODE_COMPUTE              0
/* NVML_STRUCT_VERSION(data, ver) = sizeof | ver << 24: the bare number 2 is refused. */
#define GW_NVML_MEMORY_V2              0x02000028u
#define GW_NVML_PROCESS_DETAIL_LIST_V1 0x01000018u
#define GW_NVML_TEMPERATURE_V1         0x0100000Cu
#define GW_NVML_VALUE_NOT_AVAILABLE    (~0ULL)

#define nvmlEventTypeSingleBitEccError 0x1ULL
#define nvmlEventTypeDoubleBitEccError 0x2ULL
#define nvmlEventTypeXidCriticalError  0x8ULL

typedef struct {
        char busIdLegacy[16];
        unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
        char busId[32];
} nvmlPciInfo_t;

typedef struct {
        unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
        unsigned long long total, free, used;  /* used = reserved + allocated */
} nvmlMemory_t;

typedef struct {
        unsigned int version;
        unsigned long long total, reserved, free, used;  /* used = allocated only */
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
        unsigned long long timeStamp;  /* CPU microseconds */
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

typedef struct {
        nvmlDevice_t device;
        unsigned long long eventType;
        unsigned long long eventData;  /* the Xid for Xid events */
        unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t layout");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t layout");
_Static_assert(sizeof(nvmlProcessDetail_v1_t) == 32, "nvmlProcessDetail_v1_t layout");
_Static_assert(sizeof(nvmlProcessDetailList_v1_t) == 24, "nvmlProcessDetailList_v1_t layout");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t layout");
_Static_assert(sizeof(nvmlTemperature_v1_t) == 12, "nvmlTemperature_v1_t layout");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t layout");

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
        nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t *);
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
};
