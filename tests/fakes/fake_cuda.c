/* Fake libcuda.so.1: the driver API calls gpuload (tests/gpu/gpuload.c) makes, for running the
 * real-GPU check (scripts/gpucheck.py --simulate --libcuda) on the fake NVML.  gpuload finds
 * it through GPULOAD_LIBCUDA.
 *
 * The process reports itself to the fake NVML as the fake trainer does: DIR/procs/PID (DIR =
 * $GPUWARD_FAKE_NVML_DIR) holds "GPU MEM_MIB SM_UTIL", rewritten (write + rename) when its
 * memory or utilisation changes.  The GPU is the first of CUDA_VISIBLE_DEVICES (an index, or
 * a fake UUID ending in the index); memory is what was allocated plus a 256 MiB context, as a
 * real one costs; utilisation is 100 from the first kernel on and 0 before (a process that
 * stops launching makes no call that could say so).  A kernel "runs" by sleeping for its
 * cycles at 1 GHz. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CONTEXT_MIB 256
#define MAX_ALLOCS 4096
#define CLOCK_KHZ 1000000

static unsigned long long allocated; /* bytes */
static unsigned long long sizes[MAX_ALLOCS];
static int util, gpu = -1;

static int visible_gpu(void) {
        const char *v = getenv("CUDA_VISIBLE_DEVICES");
        if (!v || !*v)
                return 0;
        char first[128];
        (void) snprintf(first, sizeof first, "%.*s", (int) strcspn(v, ","), v);
        size_t n = strlen(first);
        if (n >= 2 && !strncmp(first, "GPU-", 4))
                return (first[n - 2] - '0') * 10 + (first[n - 1] - '0');
        return (int) strtol(first, NULL, 10);
}

static void report(void) {
        const char *dir = getenv("GPUWARD_FAKE_NVML_DIR");
        if (!dir)
                return;
        char path[4096], tmp[4096], line[128];
        (void) snprintf(path, sizeof path, "%s/procs/%d", dir, (int) getpid());
        (void) snprintf(tmp, sizeof tmp, "%s/procs/.%d.tmp", dir, (int) getpid());
        int n = snprintf(line, sizeof line, "%d %llu %d\n", gpu, allocated / (1024 * 1024) + CONTEXT_MIB, util);
        FILE *f = fopen(tmp, "we");
        if (!f)
                return;
        (void) fwrite(line, 1, (size_t) n, f);
        if (fclose(f) == 0)
                (void) rename(tmp, path);
}

int cuInit(unsigned flags) {
        gpu = visible_gpu();
        report();
        return 0;
}

int cuDeviceGet(int *dev, int ordinal) {
        *dev = ordinal;
        return ordinal == 0 ? 0 : 101; /* CUDA_ERROR_INVALID_DEVICE */
}

int cuDeviceGetName(char *name, int len, int dev) {
        (void) snprintf(name, (size_t) len, "fake CUDA device (GPU %d)", gpu);
        return 0;
}

int cuDeviceGetAttribute(int *value, int attrib, int dev) {
        *value = attrib == 13 ? CLOCK_KHZ : 0;
        return 0;
}

int cuCtxCreate_v2(void **ctx, unsigned flags, int dev) {
        static int the_ctx;
        *ctx = &the_ctx;
        return 0;
}

int cuMemAlloc_v2(unsigned long long *ptr, size_t bytes) {
        for (int i = 1; i < MAX_ALLOCS; i++)
                if (!sizes[i]) {
                        sizes[i] = bytes;
                        *ptr = (unsigned long long) i << 40;
                        allocated += bytes;
                        report();
                        return 0;
                }
        return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
}

int cuMemsetD8_v2(unsigned long long ptr, unsigned char v, size_t n) { return 0; }

int cuMemFree_v2(unsigned long long ptr) {
        unsigned long long i = ptr >> 40;
        if (i == 0 || i >= MAX_ALLOCS || !sizes[i])
                return 1; /* CUDA_ERROR_INVALID_VALUE */
        allocated -= sizes[i];
        sizes[i] = 0;
        report();
        return 0;
}

int cuModuleLoadData(void **mod, const void *image) {
        static int the_mod;
        *mod = &the_mod;
        return strstr(image, ".entry spin") ? 0 : 218; /* CUDA_ERROR_INVALID_PTX */
}

int cuModuleGetFunction(void **fn, void *mod, const char *name) {
        static int the_fn;
        *fn = &the_fn;
        return strcmp(name, "spin") ? 500 : 0; /* CUDA_ERROR_NOT_FOUND */
}

int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *stream, void **params, void **extra) {
        unsigned long long cycles = *(unsigned long long *) params[0];
        if (util != 100) {
                util = 100;
                report();
        }
        unsigned long long ns = cycles * 1000000ULL / CLOCK_KHZ; /* cycles / (kHz * 1000) s */
        struct timespec ts = { (time_t) (ns / 1000000000ULL), (long) (ns % 1000000000ULL) };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        return 0;
}

int cuCtxSynchronize(void) { return 0; }

int cuGetErrorString(int r, const char **s) {
        *s = "fake CUDA error";
        return 0;
}
