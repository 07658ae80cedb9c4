/* Compute processes and their utilisation.  The process-info ABI changed size three times
 * without a version bump (docs/NVML-ABI.md), so the calls are tried newest first and each
 * answer is parsed with the stride that call actually used. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "gpu/nvml_internal.h"

#define GW_NVML_MAX_PROCS 65536 /* per GPU; bounds what a confused driver makes us allocate */
#define GW_NVML_RETRIES 5 /* the list may grow between the sizing call and the real one */
#define GW_NVML_SENTINEL 0xAA
#define GW_NVML_PID_OFFSET 0
#define GW_NVML_MEM_OFFSET 8 /* the same in all four layouts */

/* One running-process call in the common shape (device, count in/out, entries). */
typedef nvmlReturn_t (*list_call)(const struct gw_gpu_lib *lib, nvmlDevice_t h, unsigned *count, void *buf);

static nvmlReturn_t call_detail(const struct gw_gpu_lib *lib, nvmlDevice_t h, unsigned *count, void *buf) {
        nvmlProcessDetailList_v1_t l = {
                .version = GW_NVML_PROCESS_DETAIL_LIST_V1,
                .mode = NVML_PROCESS_MODE_COMPUTE,
                .numProcArrayEntries = *count,
                .procArray = buf,
        };
        nvmlReturn_t r = lib->fn.process_detail_list(h, &l);
        *count = l.numProcArrayEntries;
        return r;
}

static nvmlReturn_t call_v3(const struct gw_gpu_lib *lib, nvmlDevice_t h, unsigned *count, void *buf) {
        return lib->fn.procs_v3(h, count, buf);
}

static nvmlReturn_t call_v2(const struct gw_gpu_lib *lib, nvmlDevice_t h, unsigned *count, void *buf) {
        return lib->fn.procs_v2(h, count, buf);
}

static nvmlReturn_t call_v1(const struct gw_gpu_lib *lib, nvmlDevice_t h, unsigned *count, void *buf) {
        return lib->fn.procs_v1(h, count, buf);
}

struct raw_list {
        unsigned char *buf; /* cap entries of alloc_stride bytes, prefilled with the sentinel */
        unsigned n, cap;
        size_t stride; /* of the entries the driver wrote */
};

/* Runs NVML's sizing protocol: ask with 0 and NULL, then over-allocate and retry while
 * the answer is INSUFFICIENT_SIZE.  On SUCCESS l holds the entries (buf NULL when none). */
static nvmlReturn_t list_sized(const struct gw_gpu_lib *lib, nvmlDevice_t h, list_call call, size_t alloc_stride,
                               struct raw_list *l) {
        unsigned c = 0;
        *l = (struct raw_list){ 0 };
        nvmlReturn_t r = call(lib, h, &c, NULL);
        if (r == NVML_SUCCESS)
                return r; /* nothing running */
        for (int attempt = 0; r == NVML_ERROR_INSUFFICIENT_SIZE && attempt < GW_NVML_RETRIES; attempt++) {
                unsigned want = c > GW_NVML_MAX_PROCS ? GW_NVML_MAX_PROCS : c;
                unsigned cap = want + want / 4 + 16;
                if (cap > GW_NVML_MAX_PROCS)
                        cap = GW_NVML_MAX_PROCS;
                if (attempt > 0 && cap <= l->cap)
                        break; /* already at the bound and still too small */
                l->buf = gw_xrealloc(l->buf, (size_t) cap * alloc_stride);
                l->cap = cap;
                memset(l->buf, GW_NVML_SENTINEL, (size_t) cap * alloc_stride);
                c = cap;
                r = call(lib, h, &c, l->buf);
        }
        if (r != NVML_SUCCESS) {
                free(l->buf);
                *l = (struct raw_list){ 0 };
                return r;
        }
        l->n = c < l->cap ? c : l->cap;
        return r;
}

static bool touched(const unsigned char *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (p[i] != GW_NVML_SENTINEL)
                        return true;
        return false;
}

/* nvitop's heuristic for _v3: 535.43-535.86 wrote 32-byte entries; those drivers have
 * nvmlDeviceGetConfComputeMemSizeInfo but not nvmlDeviceGetRunningProcessDetailList. */
static unsigned v3_stride_guess(struct gw_gpu_lib *lib, nvmlDevice_t h) {
        if (lib->v3_stride_guess == 0) {
                bool conf = false;
                if (lib->fn.conf_compute_mem) {
                        nvmlConfComputeMemSizeInfo_t ci;
                        conf = lib->fn.conf_compute_mem(h, &ci) != NVML_ERROR_FUNCTION_NOT_FOUND;
                }
                bool no_detail = !lib->fn.process_detail_list || lib->detail_missing;
                lib->v3_stride_guess = conf && no_detail ? 32 : 24;
        }
        return lib->v3_stride_guess;
}

/* Checks the guess against what the driver wrote: n entries of 24 bytes leave bytes
 * [24n, 32n) untouched, 32-byte ones do not.  Only a driver that also scribbled past 32n
 * makes the check useless, and then the guess stands. */
static size_t v3_stride(const struct raw_list *l, unsigned guess) {
        if (l->n == 0)
                return guess;
        size_t end32 = (size_t) l->n * 32, total = (size_t) l->cap * 32;
        if (touched(l->buf + end32, total - end32))
                return guess;
        return touched(l->buf + (size_t) l->n * 24, (size_t) l->n * 8) ? 32 : 24;
}

/* Whether a failed call means "try the next older one". */
static bool try_older(nvmlReturn_t r) {
        return r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_NOT_SUPPORTED ||
               r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

static nvmlReturn_t list_raw(struct gw_gpu_lib *lib, nvmlDevice_t h, struct raw_list *l) {
        nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;

        if (lib->fn.process_detail_list && !lib->detail_missing) {
                r = list_sized(lib, h, call_detail, sizeof(nvmlProcessDetail_v1_t), l);
                l->stride = sizeof(nvmlProcessDetail_v1_t);
                (void) gw_nvml_lacks_version(r, &lib->detail_missing);
        }
        if (try_older(r) && lib->fn.procs_v3 && !lib->v3_missing) {
                unsigned guess = v3_stride_guess(lib, h);
                r = list_sized(lib, h, call_v3, 32, l); /* room for either stride */
                l->stride = r == NVML_SUCCESS ? v3_stride(l, guess) : guess;
                lib->v3_missing = r == NVML_ERROR_FUNCTION_NOT_FOUND;
        }
        if (try_older(r) && lib->fn.procs_v2 && !lib->v2_missing) {
                r = list_sized(lib, h, call_v2, 24, l);
                l->stride = 24;
                lib->v2_missing = r == NVML_ERROR_FUNCTION_NOT_FOUND;
        }
        if (try_older(r) && lib->fn.procs_v1) {
                r = list_sized(lib, h, call_v1, 16, l);
                l->stride = 16;
        }
        return r;
}

static int proc_cmp(const void *a, const void *b) {
        unsigned x = ((const struct gw_gpu_proc *) a)->pid, y = ((const struct gw_gpu_proc *) b)->pid;
        return (x > y) - (x < y);
}

/* Per-process SM utilisation from the samples newer than dev->last_seen.  A process
 * without one was idle over the period (0); -1 everywhere when the driver cannot say. */
static void fill_util(struct gw_gpu_lib *lib, struct gw_gpu_dev *dev, struct gw_gpu_proc *p, size_t n) {
        _cleanup_free_ nvmlProcessUtilizationSample_t *s = NULL;
        _cleanup_free_ unsigned long long *best = NULL;
        unsigned c = 0, cap = 0;
        nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;

        if (n == 0)
                return;
        if (lib->fn.process_utilization)
                r = lib->fn.process_utilization(dev->handle, NULL, &c, dev->last_seen);
        for (int attempt = 0; r == NVML_ERROR_INSUFFICIENT_SIZE && attempt < GW_NVML_RETRIES; attempt++) {
                unsigned want = c > GW_NVML_MAX_PROCS ? GW_NVML_MAX_PROCS : c;
                unsigned ncap = want + want / 4 + 16;
                if (ncap > GW_NVML_MAX_PROCS)
                        ncap = GW_NVML_MAX_PROCS;
                if (attempt > 0 && ncap <= cap)
                        break;
                cap = ncap;
                s = gw_xrealloc(s, (size_t) cap * sizeof *s);
                c = cap;
                r = lib->fn.process_utilization(dev->handle, s, &c, dev->last_seen);
        }

        bool known = r == NVML_SUCCESS || r == NVML_ERROR_NOT_FOUND;
        for (size_t i = 0; i < n; i++)
                p[i].sm_util = known ? 0 : -1;
        if (r != NVML_SUCCESS || !s)
                return;

        /* The newest sample per process wins; samples above 100% are bogus (nvtop #110). */
        best = gw_xcalloc(n, sizeof *best);
        unsigned long long newest = dev->last_seen;
        for (unsigned i = 0; i < c && i < cap; i++) {
                if (s[i].timeStamp <= dev->last_seen || s[i].smUtil > 100)
                        continue;
                if (s[i].timeStamp > newest)
                        newest = s[i].timeStamp;
                struct gw_gpu_proc key = { .pid = s[i].pid };
                struct gw_gpu_proc *hit = bsearch(&key, p, n, sizeof *p, proc_cmp);
                if (!hit || s[i].timeStamp < best[hit - p])
                        continue;
                best[hit - p] = s[i].timeStamp;
                hit->sm_util = (int) s[i].smUtil;
        }
        dev->last_seen = newest;
}

int gw_nvml_procs(struct gw_gpu_lib *lib, nvmlDevice_t h, struct gw_gpu_dev *dev, struct gw_gpu_proc *buf, size_t cap,
                  size_t *ret_n) {
        struct raw_list l;
        nvmlReturn_t r = list_raw(lib, h, &l);
        if (r != NVML_SUCCESS)
                return -gw_nvml_errno(r);

        _cleanup_free_ unsigned char *raw = l.buf;
        _cleanup_free_ struct gw_gpu_proc *p = gw_xcalloc(l.n ? l.n : 1, sizeof *p);
        size_t n = 0;
        for (unsigned i = 0; i < l.n; i++) {
                unsigned pid;
                unsigned long long mem;
                memcpy(&pid, raw + i * l.stride + GW_NVML_PID_OFFSET, sizeof pid);
                memcpy(&mem, raw + i * l.stride + GW_NVML_MEM_OFFSET, sizeof mem);
                if (pid == 0)
                        continue; /* no process has it: a mis-sized or unfilled entry */
                p[n++] = (struct gw_gpu_proc){
                        .pid = pid,
                        .mem_used = mem == GW_NVML_VALUE_NOT_AVAILABLE ? UINT64_MAX : mem,
                        .sm_util = -1,
                };
        }
        qsort(p, n, sizeof *p, proc_cmp);
        if (dev)
                fill_util(lib, dev, p, n);

        size_t out = n < cap ? n : cap;
        if (out)
                memcpy(buf, p, out * sizeof *p);
        *ret_n = out;
        return 0;
}

int gw_gpu_processes(struct gw_gpu_lib *lib, unsigned idx, struct gw_gpu_proc *buf, size_t cap, size_t *ret_n) {
        if (!lib || idx >= lib->count || !ret_n || (!buf && cap > 0))
                return -EINVAL;
        struct gw_gpu_dev *dev = &lib->devs[idx];
        if (!dev->handle)
                return -EIO;
        return gw_nvml_procs(lib, dev->handle, dev, buf, cap, ret_n);
}
