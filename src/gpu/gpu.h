/* GPUs as the daemon sees them.  One backend today: NVML loaded at run time (nvml.c).
 * Every metric carries a validity bit: "not supported" is never read as 0. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_GPU_NAME_MAX 96
#define GW_GPU_UUID_MAX 96

enum gw_gpu_health {
        GW_GPU_OK,
        GW_GPU_LOST, /* NVML_ERROR_GPU_IS_LOST */
        GW_GPU_UNAVAILABLE, /* no permission, other persistent error */
};

struct gw_gpu_static {
        unsigned index;
        char name[GW_GPU_NAME_MAX];
        char uuid[GW_GPU_UUID_MAX];
        char pci_bus_id[32];
        uint64_t mem_total; /* bytes, 0 if unknown */
};

enum {
        GW_GPU_HAS_UTIL = 1u << 0,
        GW_GPU_HAS_MEM = 1u << 1,
        GW_GPU_HAS_TEMP = 1u << 2,
        GW_GPU_HAS_POWER = 1u << 3,
};

struct gw_gpu_sample {
        unsigned index;
        unsigned valid; /* GW_GPU_HAS_* */
        enum gw_gpu_health health;
        unsigned util_gpu; /* percent */
        unsigned util_mem; /* percent */
        uint64_t mem_used; /* bytes */
        uint64_t mem_total; /* bytes */
        unsigned temp_c;
        unsigned power_mw;
};

struct gw_gpu_proc {
        unsigned pid;
        uint64_t mem_used; /* bytes; UINT64_MAX if NVML does not say */
        int sm_util; /* percent, -1 if no per-process sample */
};

/* MIG: a GPU in MIG mode is cut into MIG devices (slices), each with its own UUID
 * ("MIG-..."), memory and processes.  NVML gives no utilisation for a slice, nor for a GPU
 * in MIG mode; where the GPU offers GPM (Hopper and later), a slice's SM activity between two
 * inventory rounds is read from it (activity), and only then. */
#define GW_GPU_MIG_MAX 8 /* slices per GPU: 7 on A100/H100 */
#define GW_GPU_MIG_PROFILE_MAX 32
#define GW_GPU_MIG_PROCS_MAX 16 /* processes kept per slice */

struct gw_gpu_mig {
        unsigned gi_id, ci_id; /* GPU and compute instance ids; UINT_MAX: not known */
        char uuid[GW_GPU_UUID_MAX]; /* "MIG-..." as CUDA_VISIBLE_DEVICES takes it */
        char profile[GW_GPU_MIG_PROFILE_MAX]; /* "1g.10gb"; "" when the driver did not say */
        unsigned slices; /* GPU-instance slices it holds; 0: not known */
        bool has_mem, has_procs;
        uint64_t mem_total, mem_used; /* bytes */
        size_t n_procs;
        struct gw_gpu_proc procs[GW_GPU_MIG_PROCS_MAX]; /* sm_util -1: not given under MIG */
        int activity; /* GPM SM activity since the last round, percent; -1: none measured */
};

struct gw_gpu_mig_layout {
        bool enabled; /* MIG mode is on now; false: the GPU is whole */
        unsigned max_slices; /* the GPU's slices (nvmlDeviceGetMaxMigDeviceCount) */
        bool gpm; /* the GPU offers GPM: its slices may have an activity figure */
        size_t n;
        struct gw_gpu_mig dev[GW_GPU_MIG_MAX];
};

struct gw_nvml_event {
        unsigned index; /* GPU the event is on */
        unsigned long long type; /* NVML event type bits, 0x8 = Xid critical */
        unsigned long long xid; /* eventData */
};

struct gw_gpu_lib;

/* Loads the NVML library at path (NULL: "libnvidia-ml.so.1" from the usual search path)
 * and initialises it once.  On failure returns -errno and writes a one-line human reason
 * to err (e.g. "NVML: libnvidia-ml.so.1 not found (no NVIDIA driver?)",
 * "NVML: nvmlInit failed: Driver Not Loaded"). */
int gw_gpu_open(const char *path, struct gw_gpu_lib **ret, char *err, size_t errlen);
/* Shuts NVML down and unloads it.  Accepts NULL; returns NULL. */
struct gw_gpu_lib *gw_gpu_close(struct gw_gpu_lib *lib);

unsigned gw_gpu_count(const struct gw_gpu_lib *lib);
const char *gw_gpu_driver_version(const struct gw_gpu_lib *lib); /* "" if unknown */

/* Static facts of GPU idx (name, UUID, PCI bus id, total memory); cached from open. */
int gw_gpu_static_info(const struct gw_gpu_lib *lib, unsigned idx, struct gw_gpu_static *ret);

/* Samples GPU idx now.  A lost GPU returns 0 with ret->health = GW_GPU_LOST and valid = 0. */
int gw_gpu_sample(struct gw_gpu_lib *lib, unsigned idx, struct gw_gpu_sample *ret);

/* Compute processes on GPU idx, at most cap written to buf, *ret_n set to the number
 * written; per-process utilisation filled where the driver supports it.  Handles the
 * ProcessInfo v1/v2/v3 ABIs and the INSUFFICIENT_SIZE retry.  -EIO for a lost GPU. */
int gw_gpu_processes(struct gw_gpu_lib *lib, unsigned idx, struct gw_gpu_proc *buf, size_t cap, size_t *ret_n);

/* The MIG layout of GPU idx as NVML gives it now (it can change while we run).  A driver
 * without the MIG calls, or one answering NOT_SUPPORTED, or MIG mode off: 0 with
 * ret->enabled false.  -EIO for a lost GPU. */
int gw_gpu_mig(struct gw_gpu_lib *lib, unsigned idx, struct gw_gpu_mig_layout *ret);

/* Whether a GPU offers per-slice activity (GPM), as asked at open and when it last entered
 * MIG mode (its layout's gpm says it to the daemon). */
enum gw_gpu_gpm {
        GW_GPU_GPM_UNKNOWN, /* no handle */
        GW_GPU_GPM_NO_CALLS, /* the library lacks a GPM call (before NVML 12.0) */
        GW_GPU_GPM_NOT_SUPPORTED, /* the GPU says no (before Hopper), or the query failed */
        GW_GPU_GPM_OFFERED,
};

/* Waits up to timeout_ms for an Xid / ECC event on any GPU.  0 with *ret filled,
 * -ETIMEDOUT when none came, -ENOTSUP when events are not supported, -EIO otherwise.
 * Safe to call from one thread while another samples (NVML is thread safe). */
int gw_gpu_wait_event(struct gw_gpu_lib *lib, unsigned timeout_ms, struct gw_nvml_event *ret);
