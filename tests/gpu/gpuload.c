/* gpuload: a CUDA load for checking gpuward on a real GPU (scripts/gpucheck.py runs it).
 *
 * No CUDA toolkit at build time: libcuda.so.1 (the driver's library) is loaded with dlopen,
 * the few driver API calls used are declared here, and the kernel is PTX text the driver
 * compiles (cuModuleLoadData).  The driver honours CUDA_VISIBLE_DEVICES, so gpuload uses the
 * first GPU it is given.  Without a driver it exits 2 saying so.  Memory is freed by the
 * driver when the process ends, however it ends. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlopen, RTLD_*; the build defines it too */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuload_args.h"

typedef int cu_result; /* CUresult; 0 = CUDA_SUCCESS */
typedef int cu_device; /* CUdevice */
typedef unsigned long long cu_ptr; /* CUdeviceptr (64-bit) */
typedef void *cu_handle; /* CUcontext, CUmodule, CUfunction, CUstream */

#define CU_DEVICE_ATTRIBUTE_CLOCK_RATE 13 /* kHz */
#define CU_ERROR_NO_DEVICE 100
#define MAX_CHUNKS 4096

struct cuda {
        void *lib;
        cu_result (*init)(unsigned flags);
        cu_result (*device_get)(cu_device *dev, int ordinal);
        cu_result (*device_get_name)(char *name, int len, cu_device dev);
        cu_result (*device_get_attribute)(int *value, int attrib, cu_device dev);
        cu_result (*ctx_create)(cu_handle *ctx, unsigned flags, cu_device dev);
        cu_result (*mem_alloc)(cu_ptr *ptr, size_t bytes);
        cu_result (*memset_d8)(cu_ptr ptr, unsigned char v, size_t n);
        cu_result (*mem_free)(cu_ptr ptr);
        cu_result (*module_load_data)(cu_handle *mod, const void *image);
        cu_result (*module_get_function)(cu_handle *fn, cu_handle mod, const char *name);
        cu_result (*launch_kernel)(cu_handle fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shared, cu_handle stream, void **params, void **extra);
        cu_result (*ctx_synchronize)(void);
        cu_result (*get_error_string)(cu_result r, const char **s);
        cu_handle fn;
        double clock_khz;
        cu_ptr chunks[MAX_CHUNKS];
        size_t n_chunks;
        unsigned long held_mib;
};

/* Spins each thread until `cycles` SM clocks have passed: the GPU is busy (NVML's
 * utilisation counts the time a kernel runs) without touching memory.  PTX ISA 7.0 (CUDA 11)
 * for sm_50 and later; the driver compiles it for the GPU at hand. */
static const char spin_ptx[] = ".version 7.0\n"
                               ".target sm_50\n"
                               ".address_size 64\n"
                               "\n"
                               ".visible .entry spin(\n"
                               "        .param .u64 spin_cycles\n"
                               ")\n"
                               "{\n"
                               "        .reg .pred %p<2>;\n"
                               "        .reg .b64 %rd<5>;\n"
                               "        ld.param.u64 %rd1, [spin_cycles];\n"
                               "        mov.u64 %rd2, %clock64;\n"
                               "        add.u64 %rd3, %rd2, %rd1;\n"
                               "LOOP:\n"
                               "        mov.u64 %rd4, %clock64;\n"
                               "        setp.lt.u64 %p1, %rd4, %rd3;\n"
                               "        @%p1 bra LOOP;\n"
                               "        ret;\n"
                               "}\n";

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void sleep_until(double t) {
        double d = t - now_s();
        if (d <= 0)
                return;
        struct timespec ts = { (time_t) d, (long) ((d - floor(d)) * 1e9) };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static const char *cu_err(const struct cuda *c, cu_result r) {
        const char *s = NULL;
        if (c->get_error_string && c->get_error_string(r, &s) == 0 && s)
                return s;
        return "unknown error";
}

/* Resolves every call; -ENOENT with a message when the library or a symbol is missing. */
static int cuda_load(struct cuda *c) {
        const char *path = getenv("GPULOAD_LIBCUDA"); /* a test points it elsewhere */
        if (!path || !*path)
                path = "libcuda.so.1";
        c->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!c->lib) {
                (void) fprintf(stderr, "gpuload: no CUDA driver: cannot load %s (%s); install the NVIDIA driver\n",
                               path, dlerror());
                return -ENOENT;
        }
        static const struct {
                const char *name;
                size_t off;
        } syms[] = {
#define SYM(n, f) { n, offsetof(struct cuda, f) }
                SYM("cuInit", init),
                SYM("cuDeviceGet", device_get),
                SYM("cuDeviceGetName", device_get_name),
                SYM("cuDeviceGetAttribute", device_get_attribute),
                SYM("cuCtxCreate_v2", ctx_create),
                SYM("cuMemAlloc_v2", mem_alloc),
                SYM("cuMemsetD8_v2", memset_d8),
                SYM("cuMemFree_v2", mem_free),
                SYM("cuModuleLoadData", module_load_data),
                SYM("cuModuleGetFunction", module_get_function),
                SYM("cuLaunchKernel", launch_kernel),
                SYM("cuCtxSynchronize", ctx_synchronize),
                SYM("cuGetErrorString", get_error_string),
#undef SYM
        };
        for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
                void *p = dlsym(c->lib, syms[i].name);
                if (!p) {
                        (void) fprintf(stderr, "gpuload: no CUDA driver: %s lacks %s\n", path, syms[i].name);
                        return -ENOENT;
                }
                memcpy((char *) c + syms[i].off, &p, sizeof p);
        }
        return 0;
}

#define CHECK(c, call, what)                                                                                \
        do {                                                                                                \
                cu_result r_ = (call);                                                                      \
                if (r_ != 0) {                                                                              \
                        (void) fprintf(stderr, "gpuload: %s: %s (CUresult %d)\n", what, cu_err(c, r_), r_); \
                        return -EIO;                                                                        \
                }                                                                                           \
        } while (0)

/* Initialises the driver on the first visible GPU; -ENODEV when there is none (exit 2). */
static int cuda_open(struct cuda *c, char *name, int name_len) {
        cu_result r = c->init(0);
        if (r != 0) {
                (void) fprintf(stderr, "gpuload: no CUDA driver: cuInit: %s (CUresult %d)%s\n", cu_err(c, r), r,
                               r == CU_ERROR_NO_DEVICE ? "; check CUDA_VISIBLE_DEVICES" : "");
                return -ENODEV;
        }
        cu_device dev;
        cu_handle ctx, mod;
        int khz = 0;
        CHECK(c, c->device_get(&dev, 0), "cuDeviceGet 0");
        CHECK(c, c->device_get_name(name, name_len, dev), "cuDeviceGetName");
        CHECK(c, c->device_get_attribute(&khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev), "cuDeviceGetAttribute");
        CHECK(c, c->ctx_create(&ctx, 0, dev), "cuCtxCreate_v2");
        CHECK(c, c->module_load_data(&mod, spin_ptx), "cuModuleLoadData (the spin kernel's PTX)");
        CHECK(c, c->module_get_function(&c->fn, mod, "spin"), "cuModuleGetFunction spin");
        c->clock_khz = khz > 0 ? khz : 1000000; /* 1 GHz if the driver does not say */
        return 0;
}

/* Allocates and touches mib more MiB, kept until the end. */
static int cuda_grow(struct cuda *c, unsigned long mib) {
        if (c->n_chunks == MAX_CHUNKS) {
                (void) fprintf(stderr, "gpuload: more than %d allocations\n", MAX_CHUNKS);
                return -ENOMEM;
        }
        size_t bytes = (size_t) mib << 20;
        cu_ptr p;
        CHECK(c, c->mem_alloc(&p, bytes), "cuMemAlloc_v2");
        c->chunks[c->n_chunks++] = p;
        CHECK(c, c->memset_d8(p, 0x5a, bytes), "cuMemsetD8_v2");
        CHECK(c, c->ctx_synchronize(), "cuCtxSynchronize");
        c->held_mib += mib;
        return 0;
}

/* One kernel of about ms milliseconds on 1024 blocks of 128 threads (every SM). */
static int cuda_spin(struct cuda *c, double ms) {
        unsigned long long cycles = (unsigned long long) (c->clock_khz * ms);
        void *params[] = { &cycles };
        CHECK(c, c->launch_kernel(c->fn, 1024, 1, 1, 128, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
        CHECK(c, c->ctx_synchronize(), "cuCtxSynchronize");
        return 0;
}

/* One second from t0 with kernels for duty percent of it; *ret_busy: the busy seconds. */
static int busy_second(struct cuda *c, double t0, unsigned duty, double *ret_busy) {
        double until = t0 + duty / 100.0, busy = 0;
        for (double t = now_s(); t < until; t = now_s()) {
                double left_ms = (until - t) * 1000;
                int r = cuda_spin(c, left_ms < 20 ? left_ms : 20);
                if (r < 0)
                        return r;
                busy += now_s() - t;
        }
        sleep_until(t0 + 1);
        *ret_busy = busy;
        return 0;
}

static int mkdir_p(const char *path) {
        char buf[4096];
        if (snprintf(buf, sizeof buf, "%s", path) >= (int) sizeof buf)
                return -ENAMETOOLONG;
        for (char *p = buf + 1;; p++) {
                if (*p == '/' || !*p) {
                        char was = *p;
                        *p = '\0';
                        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *p = was;
                        if (!was)
                                return 0;
                }
        }
}

/* args.yaml (the planned epochs) and results.csv's header, as Ultralytics 8.3.9 and later
 * write them: gpuward reads both to follow the run, and the leak detector counts epochs by
 * results.csv rows. */
static int run_dir_start(const struct gpuload_args *a, long epochs) {
        char path[4200];
        int r = mkdir_p(a->run_dir);
        if (r < 0)
                return r;
        (void) snprintf(path, sizeof path, "%s/args.yaml", a->run_dir);
        FILE *f = fopen(path, "we");
        if (!f)
                return -errno;
        (void) fprintf(f, "task: detect\nmode: train\nmodel: gpuload\nepochs: %ld\ntime: null\n", epochs);
        (void) fclose(f);
        (void) snprintf(path, sizeof path, "%s/results.csv", a->run_dir);
        f = fopen(path, "we");
        if (!f)
                return -errno;
        (void) fprintf(f, "epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),"
                          "metrics/recall(B),metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,"
                          "val/dfl_loss,lr/pg0,lr/pg1,lr/pg2\n");
        return fclose(f) == 0 ? 0 : -errno;
}

static void run_dir_row(const struct gpuload_args *a, long epoch, double elapsed) {
        char path[4200];
        (void) snprintf(path, sizeof path, "%s/results.csv", a->run_dir);
        FILE *f = fopen(path, "ae");
        if (!f)
                return;
        double loss = 1.5 / (double) epoch;
        (void) fprintf(f, "%ld,%.6g,%.6g,%.6g,%.6g,0.5,0.5,0.5,0.3,%.6g,%.6g,%.6g,0.01,0.01,0.01\n", epoch, elapsed,
                       loss, loss, loss, loss, loss, loss);
        (void) fclose(f);
}

static int run_busy(struct cuda *c, const struct gpuload_args *a, const char *what, double seconds) {
        double t0 = now_s();
        for (long s = 1; now_s() - t0 < seconds; s++) {
                double busy;
                int r = busy_second(c, now_s(), a->duty, &busy);
                if (r < 0)
                        return r;
                printf("gpuload: %s %ld/%.0f s: %lu MiB held, kernels %.0f%% of the last second\n", what, s, seconds,
                       c->held_mib, busy * 100);
        }
        return 0;
}

static int run_leak(struct cuda *c, const struct gpuload_args *a) {
        long epochs = (long) ceil(a->seconds / a->epoch_seconds);
        int r = run_dir_start(a, epochs);
        if (r < 0) {
                (void) fprintf(stderr, "gpuload: cannot write %s: %s\n", a->run_dir, strerror(-r));
                return r;
        }
        printf("Logging results to \x1b[1m%s\x1b[0m\nStarting training for %ld epochs...\n", a->run_dir, epochs);
        double t0 = now_s();
        for (long e = 1; e <= epochs; e++) {
                printf("\n%11s%11s%11s%11s%11s%11s%11s\n", "Epoch", "GPU_mem", "box_loss", "cls_loss", "dfl_loss",
                       "Instances", "Size");
                double end = t0 + a->epoch_seconds * (double) e;
                while (now_s() < end) {
                        double busy;
                        if ((r = busy_second(c, now_s(), a->duty, &busy)) < 0)
                                return r;
                        printf("gpuload: leak epoch %ld/%ld: %lu MiB held, kernels %.0f%%\n", e, epochs, c->held_mib,
                               busy * 100);
                }
                double loss = 1.5 / (double) e;
                char ep[32], mem[32];
                (void) snprintf(ep, sizeof ep, "%ld/%ld", e, epochs);
                (void) snprintf(mem, sizeof mem, "%.3gG", (double) c->held_mib / 1024.0);
                printf("%11s%11s%11.4g%11.4g%11.4g%11d%11d: 100%%|##########| 10/10\n", ep, mem, loss, loss, loss, 16,
                       640);
                run_dir_row(a, e, now_s() - t0);
                if (e < epochs && (r = cuda_grow(c, a->leak_mib)) < 0)
                        return r;
        }
        return 0;
}

int main(int argc, char **argv) {
        struct gpuload_args a;
        char err[256];
        int r = gpuload_args_parse(argc, argv, &a, err, sizeof err);
        if (r == 1) {
                fputs(gpuload_usage, stdout);
                return 0;
        }
        if (r < 0) {
                (void) fprintf(stderr, "gpuload: %s\n%s", err, gpuload_usage);
                return 2;
        }
        setvbuf(stdout, NULL, _IOLBF, 0); /* a job's log is a file: one line at a time */
        static struct cuda c;
        char name[256] = "";
        if (cuda_load(&c) < 0)
                return 2;
        if ((r = cuda_open(&c, name, sizeof name)) < 0)
                return r == -ENODEV ? 2 : 1;
        if (cuda_grow(&c, a.mib) < 0)
                return 1;
        printf("gpuload: pid %d, %s on %s (CUDA_VISIBLE_DEVICES=%s), %lu MiB held, for %.0f s\n", (int) getpid(),
               gpuload_mode_to_string(a.mode), name, getenv("CUDA_VISIBLE_DEVICES") ?: "unset", c.held_mib, a.seconds);
        switch (a.mode) {
        case GPULOAD_BUSY:
                r = run_busy(&c, &a, "busy", a.seconds);
                break;
        case GPULOAD_IDLE:
                sleep_until(now_s() + a.seconds); /* silent, as a hung trainer is */
                break;
        case GPULOAD_LEAK:
                r = run_leak(&c, &a);
                break;
        case GPULOAD_BURST:
                r = run_busy(&c, &a, "burst (busy part)", a.busy_seconds);
                if (r >= 0) {
                        printf("gpuload: burst: now idle and silent for %.0f s\n", a.seconds - a.busy_seconds);
                        sleep_until(now_s() + a.seconds - a.busy_seconds);
                }
                break;
        default:
                r = -EINVAL;
        }
        if (r < 0)
                return 1;
        printf("gpuload: done, %lu MiB freed at exit\n", c.held_mib);
        return 0;
}
