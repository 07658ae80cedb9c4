/* The fake NVML's own declarations, shared by fake_nvml.c (the exported API) and
 * fake_nvml_state.c (the state directory).  It declares the NVML types itself on purpose:
 * sharing a header with src/gpu/ would let a layout mistake hide on both sides. */
#pragma once
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define EXPORT __attribute__((visibility("default")))

typedef enum {
        NVML_SUCCESS = 0,
        NVML_ERROR_UNINITIALIZED = 1,
        NVML_ERROR_INVALID_ARGUMENT = 2,
        NVML_ERROR_NOT_SUPPORTED = 3,
        NVML_ERROR_NOT_FOUND = 6,
        NVML_ERROR_INSUFFICIENT_SIZE = 7,
        NVML_ERROR_TIMEOUT = 10,
        NVML_ERROR_FUNCTION_NOT_FOUND = 13,
        NVML_ERROR_GPU_IS_LOST = 15,
        NVML_ERROR_MEMORY = 20,
        NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
        NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

/* mig 0: the GPU itself; k > 0: its MIG device k - 1. */
struct nvmlDevice_st {
        unsigned index, mig;
};
typedef struct nvmlDevice_st *nvmlDevice_t;
struct nvmlEventSet_st;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

typedef struct {
        char busIdLegacy[16];
        unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
        char busId[32];
} nvmlPciInfo_t;
/* What nvmlDeviceGetPciInfo_v2 and nvmlDeviceGetPciInfo write on a real driver: the layout
 * from before NVML 9 (pynvml's nvmlPciInfo_v2_t), not nvmlPciInfo_t. */
typedef struct {
        char busId[16];
        unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
        unsigned int reserved[4];
} nvmlPciInfo_v2_t;
typedef struct {
        unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
        unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
        unsigned int version;
        unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct {
        unsigned int pid;
        unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
typedef struct {
        unsigned int pid;
        unsigned long long usedGpuMemory;
        unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_v2_t;
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
        unsigned long long timeStamp;
        unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct {
        unsigned int version;
        int sensorType;
        int temperature;
} nvmlTemperature_v1_t;
typedef struct {
        unsigned int multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount;
        unsigned int sharedJpegCount, sharedOfaCount, gpuInstanceSliceCount, computeInstanceSliceCount;
        unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;
typedef struct {
        unsigned long long protectedMemSizeKib, unprotectedMemSizeKib;
} nvmlConfComputeMemSizeInfo_t;
typedef struct {
        nvmlDevice_t device;
        unsigned long long eventType, eventData;
        unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");
_Static_assert(sizeof(nvmlPciInfo_v2_t) == 52, "nvmlPciInfo_v2_t");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t");
_Static_assert(sizeof(nvmlProcessDetail_v1_t) == 32, "nvmlProcessDetail_v1_t");
_Static_assert(sizeof(nvmlProcessDetailList_v1_t) == 24, "nvmlProcessDetailList_v1_t");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t");
_Static_assert(sizeof(nvmlDeviceAttributes_t) == 40, "nvmlDeviceAttributes_t");
#define EVENT_DATA_V1_SIZE 24 /* nvmlEventSetWait (before NVML 11): no instance ids */

#define MEMORY_V2_VERSION 0x02000028u
#define DETAIL_LIST_V1_VERSION 0x01000018u
#define TEMPERATURE_V1_VERSION 0x0100000Cu
#define EV_SBE 0x1ULL
#define EV_DBE 0x2ULL
#define EV_PSTATE 0x4ULL
#define EV_XID 0x8ULL
#define EV_SUPPORTED (EV_SBE | EV_DBE | EV_PSTATE | EV_XID)
#define NO_MIG 0xFFFFFFFFu
#define MIB (1024ULL * 1024ULL)

#define FAKE_MAX_GPUS 64
#define FAKE_MAX_MIG 8 /* MIG devices per GPU */
#define FAKE_MAX_PROCS 65536 /* a bound on what one scan of procs/ keeps */

enum { NS_TEMP = 1, NS_POWER = 2, NS_UTIL = 4, NS_MEMORY = 8, NS_PROCESS_UTIL = 16 };
/* The ranks order the process-list calls: a driver has the call of its rank and all older ones. */
enum { ABI_V1 = 1, ABI_V2 = 2, ABI_V3 = 3, ABI_V3_32 = 4, ABI_DETAIL = 5 };

/* One MIG device, from a profile name such as "1g.10gb" in gpuN.mig. */
struct fake_mig {
        char profile[32];
        unsigned slices;
        unsigned long long memory_mib;
};

enum { MIG_OFF, MIG_ON, MIG_UNSUPPORTED };

struct fake_gpu {
        char name[96];
        unsigned long long memory_mib, base_used_mib;
        unsigned util, temp, power_w, not_supported;
        bool lost;
        int mig_mode; /* MIG_*: gpuN.mig set, "-" or unset */
        unsigned mig_max, n_mig; /* nvmlDeviceGetMaxMigDeviceCount; the MIG devices made */
        struct fake_mig mig[FAKE_MAX_MIG];
        bool gpm; /* gpuN.gpm=1: offers GPM (Hopper); else its GPM calls answer NOT_SUPPORTED */
        unsigned mig_activity[FAKE_MAX_MIG]; /* gpuN.mig.K.activity: SM activity of MIG device K */
};

struct fake_cfg {
        unsigned count;
        int init_error;
        int process_abi;
        bool pci_v3; /* false: nvmlDeviceGetPciInfo_v3 is "missing" (pre-NVML-9 driver) */
        bool memory_v2, process_util;
        bool mig_calls; /* false: the MIG calls answer FUNCTION_NOT_FOUND (a pre-MIG driver) */
        int version_mismatch_code;
        struct fake_gpu gpu[FAKE_MAX_GPUS];
};

struct fake_proc {
        unsigned pid;
        int mig; /* the MIG device it runs on, -1: the whole GPU */
        unsigned long long mem_mib;
        unsigned sm_util;
};

struct nvmlEventSet_st {
        unsigned long long registered[FAKE_MAX_GPUS];
        off_t offset; /* bytes of DIR/events already turned into events */
        dev_t dev; /* and which file that was: one renamed into place starts again at 0 */
        ino_t ino;
        int notify_fd; /* inotify on DIR, so a wait sleeps until a file there changes; -1: poll */
};

/* State shared by the two files; hidden so that the library exports only NVML names. */
#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN extern pthread_mutex_t fake_lock;
HIDDEN extern unsigned fake_init_refs;
HIDDEN extern char fake_state_dir[PATH_MAX]; /* "" without GPUWARD_FAKE_NVML_DIR */
HIDDEN extern struct fake_cfg fake_config;
HIDDEN extern struct nvmlDevice_st fake_devices[FAKE_MAX_GPUS];
HIDDEN extern struct nvmlDevice_st fake_mig_devices[FAKE_MAX_GPUS][FAKE_MAX_MIG];

/* The functions below expect fake_lock held. */

/* Starts over from GPUWARD_FAKE_NVML_DIR, as the first nvmlInit does. */
HIDDEN void fake_cfg_reset(void);
/* Re-reads DIR/config when it changed since the last parse. */
HIDDEN void fake_cfg_refresh(void);
HIDDEN void fake_path_in_dir(char *buf, size_t n, const char *name);
/* The live processes on GPU idx, sorted by pid; a malloc'ed array, NULL when none. */
HIDDEN struct fake_proc *fake_procs_scan(unsigned idx, size_t *ret_n);
HIDDEN void fake_procs_cache_clear(void);
/* Consumes complete lines of DIR/events after set->offset until one is an event for set. */
HIDDEN bool fake_event_next(struct nvmlEventSet_st *set, nvmlEventData_t *data);
