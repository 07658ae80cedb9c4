/* The NVML backend against the fake libnvidia-ml.so.1 (tests/fakes/README.md).
 * The fake stays loaded and keeps its state for the whole process, so every test writes
 * its own config (with an explicitly bumped mtime), clears procs/ and events, and closes
 * the library it opened; the fake starts over from the state directory at each first
 * nvmlInit. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dlfcn.h>
#include <cmocka.h>

#include "base/time.h"
#include "gpu/gpu.h"

#define MIB (1024ULL * 1024ULL)

static char state_dir[64];
static time_t config_mtime = 1000000000; /* strictly increasing, whatever the clock says */

static void write_file(const char *name, const char *text) {
        char path[256], tmp[300];
        snprintf(path, sizeof path, "%s/%s", state_dir, name);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "we");
        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, path), 0);
}

/* Same-second rewrites would be invisible to an mtime check, so every config gets a new one. */
static void write_config(const char *text) {
        char path[256];
        write_file("config", text);
        snprintf(path, sizeof path, "%s/config", state_dir);
        config_mtime++;
        struct timespec t[2] = { { config_mtime, 0 }, { config_mtime, 0 } };
        assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static void write_proc(pid_t pid, const char *lines) {
        char name[64];
        snprintf(name, sizeof name, "procs/%d", (int) pid);
        write_file(name, lines);
}

static void append_event(const char *line) {
        char path[256];
        snprintf(path, sizeof path, "%s/events", state_dir);
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, line, strlen(line)), (ssize_t) strlen(line));
        assert_int_equal(close(fd), 0);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) { return remove(path); }

static void clear_procs(void) {
        char path[256];
        snprintf(path, sizeof path, "%s/procs", state_dir);
        (void) nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        assert_int_equal(mkdir(path, 0755), 0);
}

static struct gw_gpu_lib *open_fake(void) {
        struct gw_gpu_lib *lib = NULL;
        char err[256] = "";
        int r = gw_gpu_open(GW_TEST_FAKE_NVML, &lib, err, sizeof err);
        if (r < 0)
                fail_msg("gw_gpu_open: %d %s", r, err);
        assert_non_null(lib);
        return lib;
}

static int group_setup(void **state) {
        snprintf(state_dir, sizeof state_dir, "/tmp/gw-test-nvml-XXXXXX");
        if (!mkdtemp(state_dir))
                return -1;
        return setenv("GPUWARD_FAKE_NVML_DIR", state_dir, 1);
}

static int group_teardown(void **state) {
        (void) nftw(state_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

static int test_setup(void **state) {
        char path[256];
        clear_procs();
        snprintf(path, sizeof path, "%s/events", state_dir);
        (void) unlink(path);
        write_config("count=4\n");
        return 0;
}

/* ---- loading ------------------------------------------------------------------------- */

static void test_missing_library(void **state) {
        struct gw_gpu_lib *lib = NULL;
        char err[256] = "";
        int r = gw_gpu_open("/nonexistent/gpuward/libnvidia-ml.so.1", &lib, err, sizeof err);
        assert_int_equal(r, -ENOENT);
        assert_null(lib);
        assert_non_null(strstr(err, "no NVIDIA driver?"));
        assert_null(strchr(err, '\n'));
}

static void test_init_error(void **state) {
        struct gw_gpu_lib *lib = NULL;
        char err[256] = "";
        write_config("init_error=9\n");
        int r = gw_gpu_open(GW_TEST_FAKE_NVML, &lib, err, sizeof err);
        assert_true(r < 0);
        assert_null(lib);
        assert_string_equal(err, "NVML: nvmlInit failed: Driver Not Loaded");

        write_config("count=1\n");
        lib = open_fake();
        assert_int_equal(gw_gpu_count(lib), 1);
        lib = gw_gpu_close(lib);
        assert_null(lib);
}

/* ---- the fake's own contract, called directly ---------------------------------------- */

typedef int (*fn_void)(void);
typedef int (*fn_count)(unsigned *);
typedef int (*fn_handle)(unsigned, void **);
typedef int (*fn_list)(void *, unsigned *, void *);
typedef int (*fn_putil)(void *, void *, unsigned *, unsigned long long);
typedef int (*fn_mem2)(void *, void *);

struct putil_sample {
        unsigned pid;
        unsigned long long ts;
        unsigned sm, mem, enc, dec;
};

static void test_fake_contract(void **state) {
        void *dl = dlopen(GW_TEST_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
        assert_non_null(dl);
        fn_void init = (fn_void) dlsym(dl, "nvmlInit_v2"), shutdown = (fn_void) dlsym(dl, "nvmlShutdown");
        fn_count count = (fn_count) dlsym(dl, "nvmlDeviceGetCount_v2");
        fn_handle handle = (fn_handle) dlsym(dl, "nvmlDeviceGetHandleByIndex_v2");
        fn_list v3 = (fn_list) dlsym(dl, "nvmlDeviceGetComputeRunningProcesses_v3");
        fn_putil putil = (fn_putil) dlsym(dl, "nvmlDeviceGetProcessUtilization");
        fn_mem2 mem2 = (fn_mem2) dlsym(dl, "nvmlDeviceGetMemoryInfo_v2");
        assert_true(init && shutdown && count && handle && v3 && putil && mem2);

        unsigned n = 0;
        void *dev = NULL;
        assert_int_equal(count(&n), 1); /* UNINITIALIZED */
        assert_int_equal(init(), 0);
        assert_int_equal(init(), 0);
        assert_int_equal(count(&n), 0);
        assert_int_equal(n, 4);
        assert_int_equal(handle(0, &dev), 0);
        assert_int_equal(handle(4, &dev), 2);

        n = 0; /* sizing protocol: SUCCESS and 0 when nothing runs */
        assert_int_equal(v3(dev, &n, NULL), 0);
        assert_int_equal(n, 0);
        write_proc(getpid(), "0 10 50\n");
        assert_int_equal(v3(dev, &n, NULL), 7); /* INSUFFICIENT_SIZE */
        assert_int_equal(n, 1);

        struct putil_sample s[4];
        unsigned long long before = (unsigned long long) gw_clock_wall();
        n = 0;
        assert_int_equal(putil(dev, NULL, &n, 0), 7);
        assert_int_equal(n, 1);
        n = 4;
        assert_int_equal(putil(dev, s, &n, 0), 0);
        assert_int_equal(n, 1);
        assert_int_equal(s[0].pid, getpid());
        assert_int_equal(s[0].sm, 50);
        assert_true(s[0].ts >= before && s[0].ts < before + 60ULL * 1000000ULL); /* µs */
        n = 4;
        assert_int_equal(putil(dev, s, &n, s[0].ts + 3600ULL * 1000000ULL), 6); /* NOT_FOUND */

        struct {
                unsigned version;
                unsigned long long total, reserved, free, used;
        } m = { .version = 2 };
        assert_int_equal(mem2(dev, &m), 25); /* the bare version number is refused */
        m.version = 0x02000028;
        assert_int_equal(mem2(dev, &m), 0);
        assert_int_equal(m.total, 81920 * MIB);
        assert_int_equal(m.used, 10 * MIB);

        assert_int_equal(shutdown(), 0);
        assert_int_equal(count(&n), 0); /* refcounted: still initialised */
        assert_int_equal(shutdown(), 0);
        assert_int_equal(count(&n), 1);
        assert_int_equal(shutdown(), 1);
        assert_int_equal(dlclose(dl), 0);
}

/* ---- static facts and samples -------------------------------------------------------- */

static void test_static_and_sample(void **state) {
        write_config("count=2\n"
                     "# comment\n"
                     "gpu1.name = NVIDIA H100 80GB HBM3\n"
                     "name=NVIDIA A10\n"
                     "memory_mib=24576\n"
                     "gpu1.memory_mib=81559\n"
                     "gpu0.base_used_mib=1000\n"
                     "gpu1.temp=71\n"
                     "gpu1.power_w=350\n");
        struct gw_gpu_lib *lib = open_fake();
        struct gw_gpu_static st;
        struct gw_gpu_sample s;

        assert_int_equal(gw_gpu_count(lib), 2);
        assert_string_equal(gw_gpu_driver_version(lib), "fake-550.00");
        assert_int_equal(gw_gpu_static_info(lib, 0, &st), 0);
        assert_int_equal(st.index, 0);
        assert_string_equal(st.name, "NVIDIA A10");
        assert_string_equal(st.uuid, "GPU-fa4e0000-0000-4000-8000-000000000000");
        assert_string_equal(st.pci_bus_id, "00000000:10:00.0");
        assert_int_equal(st.mem_total, 24576 * MIB);
        assert_int_equal(gw_gpu_static_info(lib, 1, &st), 0);
        assert_int_equal(st.index, 1);
        assert_string_equal(st.name, "NVIDIA H100 80GB HBM3");
        assert_string_equal(st.uuid, "GPU-fa4e0000-0000-4000-8000-000000000001");
        assert_string_equal(st.pci_bus_id, "00000000:11:00.0");
        assert_int_equal(st.mem_total, 81559 * MIB);
        assert_int_equal(gw_gpu_static_info(lib, 2, &st), -EINVAL);

        assert_int_equal(gw_gpu_sample(lib, 0, &s), 0);
        assert_int_equal(s.index, 0);
        assert_int_equal(s.health, GW_GPU_OK);
        assert_int_equal(s.valid, GW_GPU_HAS_UTIL | GW_GPU_HAS_MEM | GW_GPU_HAS_TEMP | GW_GPU_HAS_POWER);
        assert_int_equal(s.util_gpu, 0);
        assert_int_equal(s.mem_used, 1000 * MIB);
        assert_int_equal(s.mem_total, 24576 * MIB);
        assert_int_equal(s.temp_c, 35);
        assert_int_equal(s.power_mw, 60000);
        assert_int_equal(gw_gpu_sample(lib, 1, &s), 0);
        assert_int_equal(s.temp_c, 71);
        assert_int_equal(s.power_mw, 350000);
        assert_int_equal(s.mem_used, 0);
        assert_int_equal(gw_gpu_sample(lib, 2, &s), -EINVAL);
        gw_gpu_close(lib);
}

/* Drivers without nvmlDeviceGetPciInfo_v3 (before NVML 9) have only _v2 and the unsuffixed
 * call, which write the 52-byte legacy nvmlPciInfo_v2_t: a 16-byte busId at offset 0 and four
 * reserved words where nvmlPciInfo_t has its 32-byte busId (docs/NVML-ABI.md). */
typedef int (*fn_pci)(void *, void *);

static void test_pci_legacy_abi(void **state) {
        write_config("count=2\npci_abi=v2\n");
        void *dl = dlopen(GW_TEST_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
        assert_non_null(dl);
        fn_void init = (fn_void) dlsym(dl, "nvmlInit_v2"), shutdown = (fn_void) dlsym(dl, "nvmlShutdown");
        fn_handle handle = (fn_handle) dlsym(dl, "nvmlDeviceGetHandleByIndex_v2");
        fn_pci v3 = (fn_pci) dlsym(dl, "nvmlDeviceGetPciInfo_v3"), v2 = (fn_pci) dlsym(dl, "nvmlDeviceGetPciInfo_v2");
        fn_pci v1 = (fn_pci) dlsym(dl, "nvmlDeviceGetPciInfo");
        assert_true(init && shutdown && handle && v3 && v2 && v1);
        assert_int_equal(init(), 0);
        void *dev = NULL;
        assert_int_equal(handle(1, &dev), 0);
        unsigned char buf[68];
        assert_int_equal(v3(dev, buf), 13); /* FUNCTION_NOT_FOUND */
        fn_pci legacy[] = { v2, v1 };
        for (size_t i = 0; i < 2; i++) {
                memset(buf, 0xAA, sizeof buf);
                assert_int_equal(legacy[i](dev, buf), 0);
                assert_string_equal((const char *) buf, "0000:11:00.0");
                unsigned bus;
                memcpy(&bus, buf + 20, sizeof bus);
                assert_int_equal(bus, 0x11);
                for (size_t b = 52; b < sizeof buf; b++)
                        assert_int_equal(buf[b], 0xAA); /* nothing past the legacy struct */
        }
        assert_int_equal(shutdown(), 0);
        assert_int_equal(dlclose(dl), 0);

        struct gw_gpu_lib *lib = open_fake();
        struct gw_gpu_static st;
        for (unsigned i = 0; i < 2; i++) {
                char want[32];
                snprintf(want, sizeof want, "00000000:%02X:00.0", 0x10 + i);
                assert_int_equal(gw_gpu_static_info(lib, i, &st), 0);
                assert_string_equal(st.pci_bus_id, want); /* the _v3 spelling on any driver */
        }
        gw_gpu_close(lib);
}

/* nvmlEventSetWait before NVML 11 wrote a 24-byte nvmlEventData_t (no instance ids). */
typedef int (*fn_create)(void **);
typedef int (*fn_register)(void *, unsigned long long, void *);
typedef int (*fn_wait)(void *, void *, unsigned);
typedef int (*fn_free)(void *);

static void test_event_wait_v1_abi(void **state) {
        void *dl = dlopen(GW_TEST_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
        assert_non_null(dl);
        fn_void init = (fn_void) dlsym(dl, "nvmlInit_v2"), shutdown = (fn_void) dlsym(dl, "nvmlShutdown");
        fn_handle handle = (fn_handle) dlsym(dl, "nvmlDeviceGetHandleByIndex_v2");
        fn_create create = (fn_create) dlsym(dl, "nvmlEventSetCreate");
        fn_register reg = (fn_register) dlsym(dl, "nvmlDeviceRegisterEvents");
        fn_wait wait1 = (fn_wait) dlsym(dl, "nvmlEventSetWait"), wait2 = (fn_wait) dlsym(dl, "nvmlEventSetWait_v2");
        fn_free free_set = (fn_free) dlsym(dl, "nvmlEventSetFree");
        assert_true(init && shutdown && handle && create && reg && wait1 && wait2 && free_set);
        assert_int_equal(init(), 0);
        void *dev = NULL, *set = NULL;
        assert_int_equal(handle(2, &dev), 0);
        assert_int_equal(create(&set), 0);
        assert_int_equal(reg(dev, 0x8, set), 0);

        struct {
                void *device;
                unsigned long long type, data;
                unsigned gi, ci;
        } d;
        _Static_assert(sizeof d == 32, "nvmlEventData_t");
        append_event("gpu=2 xid=79\ngpu=2 xid=48\n");
        memset(&d, 0xAA, sizeof d);
        assert_int_equal(wait1(set, &d, 2000), 0);
        assert_ptr_equal(d.device, dev);
        assert_int_equal(d.type, 0x8);
        assert_int_equal(d.data, 79);
        assert_int_equal(d.gi, 0xAAAAAAAAu); /* untouched */
        assert_int_equal(d.ci, 0xAAAAAAAAu);
        memset(&d, 0xAA, sizeof d);
        assert_int_equal(wait2(set, &d, 2000), 0);
        assert_int_equal(d.data, 48);
        assert_int_equal(d.gi, 0xFFFFFFFFu); /* not MIG */
        assert_int_equal(d.ci, 0xFFFFFFFFu);
        assert_int_equal(free_set(set), 0);
        assert_int_equal(shutdown(), 0);
        assert_int_equal(dlclose(dl), 0);
}

static void test_memory_v2_fallback(void **state) {
        static const char *const configs[] = {
                "memory_v2=0\nversion_mismatch_code=25\ngpu0.base_used_mib=512\n",
                "memory_v2=0\nversion_mismatch_code=13\ngpu0.base_used_mib=512\n",
                "memory_v2=1\ngpu0.base_used_mib=512\n",
        };
        for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
                write_config(configs[i]);
                struct gw_gpu_lib *lib = open_fake();
                struct gw_gpu_static st;
                struct gw_gpu_sample s;
                assert_int_equal(gw_gpu_static_info(lib, 0, &st), 0);
                assert_int_equal(st.mem_total, 81920 * MIB);
                for (int k = 0; k < 2; k++) { /* the second sample uses the learned fallback */
                        assert_int_equal(gw_gpu_sample(lib, 0, &s), 0);
                        assert_true(s.valid & GW_GPU_HAS_MEM);
                        assert_int_equal(s.mem_total, 81920 * MIB);
                        assert_int_equal(s.mem_used, 512 * MIB);
                }
                gw_gpu_close(lib);
        }
}

static void test_not_supported(void **state) {
        write_config("gpu0.not_supported=temp,power\n"
                     "gpu1.not_supported=util,memory,temp,power\n"
                     "gpu2.not_supported=process_util\n");
        write_proc(getpid(), "2 64 30\n");
        struct gw_gpu_lib *lib = open_fake();
        struct gw_gpu_sample s;
        struct gw_gpu_static st;
        struct gw_gpu_proc p[4];
        size_t n = 0;

        assert_int_equal(gw_gpu_sample(lib, 0, &s), 0);
        assert_int_equal(s.health, GW_GPU_OK);
        assert_int_equal(s.valid, GW_GPU_HAS_UTIL | GW_GPU_HAS_MEM);
        assert_int_equal(s.temp_c, 0);
        assert_int_equal(s.power_mw, 0);
        assert_int_equal(gw_gpu_sample(lib, 1, &s), 0);
        assert_int_equal(s.valid, 0);
        assert_int_equal(s.health, GW_GPU_OK); /* unsupported is not unhealthy */
        assert_int_equal(gw_gpu_static_info(lib, 1, &st), 0);
        assert_int_equal(st.mem_total, 0);

        assert_int_equal(gw_gpu_processes(lib, 2, p, 4, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(p[0].mem_used, 64 * MIB);
        assert_int_equal(p[0].sm_util, -1);
        gw_gpu_close(lib);
}

/* ---- processes ----------------------------------------------------------------------- */

/* Our pid uses 1234 MiB at want_util0 on GPU 0 (skipped for -2) and 100 MiB idle on GPU 1. */
static void check_own_processes(struct gw_gpu_lib *lib, int want_util0, int want_util1) {
        struct gw_gpu_proc p[8];
        size_t n = 99;
        if (want_util0 != -2) {
                assert_int_equal(gw_gpu_processes(lib, 0, p, 8, &n), 0);
                assert_int_equal(n, 1);
                assert_int_equal(p[0].pid, getpid());
                assert_int_equal(p[0].mem_used, 1234 * MIB);
                assert_int_equal(p[0].sm_util, want_util0);
        }
        assert_int_equal(gw_gpu_processes(lib, 1, p, 8, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(p[0].pid, getpid());
        assert_int_equal(p[0].mem_used, 100 * MIB);
        assert_int_equal(p[0].sm_util, want_util1); /* listed without a sample: idle, 0 */
        assert_int_equal(gw_gpu_processes(lib, 2, p, 8, &n), 0);
        assert_int_equal(n, 0);
}

static void test_processes_own_pid(void **state) {
        write_config("gpu0.util=10\n");
        write_proc(getpid(), "0 1234 42\n1 100 0\n");

        pid_t dead = fork(); /* a finished trainer must vanish from the list */
        assert_true(dead >= 0);
        if (dead == 0)
                _exit(0);
        assert_int_equal(waitpid(dead, NULL, 0), dead);
        write_proc(dead, "0 999 99\n");

        struct gw_gpu_lib *lib = open_fake();
        check_own_processes(lib, 42, 0);
        check_own_processes(lib, 42, 0); /* fresh samples again on the next call */

        struct gw_gpu_sample s;
        assert_int_equal(gw_gpu_sample(lib, 0, &s), 0);
        assert_int_equal(s.util_gpu, 52);
        assert_int_equal(s.mem_used, 1234 * MIB);
        assert_int_equal(gw_gpu_sample(lib, 1, &s), 0);
        assert_int_equal(s.util_gpu, 0);
        assert_int_equal(s.mem_used, 100 * MIB);

        struct gw_gpu_proc none[1];
        size_t n = 5;
        assert_int_equal(gw_gpu_processes(lib, 0, none, 0, &n), 0); /* cap 0: nothing written */
        assert_int_equal(n, 0);
        assert_int_equal(gw_gpu_processes(lib, 4, none, 1, &n), -EINVAL);
        gw_gpu_close(lib);
}

/* ---- MIG ----------------------------------------------------------------------------- */

static void test_mig_layout(void **state) {
        write_config("count=3\n"
                     "gpu0.mig=1g.10gb*7\n"
                     "gpu1.mig=3g.40gb, 2g.20gb,1g.10gb\n");
        write_proc(getpid(), "1/1 3000 40\n");
        struct gw_gpu_lib *lib = open_fake();
        struct gw_gpu_mig_layout l;

        assert_int_equal(gw_gpu_mig(lib, 0, &l), 0);
        assert_true(l.enabled);
        assert_int_equal(l.max_slices, 7);
        assert_int_equal(l.n, 7);
        assert_string_equal(l.dev[0].profile, "1g.10gb");
        assert_string_equal(l.dev[6].uuid, "MIG-fa4e0000-0000-4000-8001-000000000006");
        assert_int_equal(l.dev[6].slices, 1);
        assert_int_equal(l.dev[6].gi_id, 7);
        assert_int_equal(l.dev[6].ci_id, 0);
        assert_true(l.dev[6].has_mem);
        assert_int_equal(l.dev[6].mem_total, 10240 * MIB);

        assert_int_equal(gw_gpu_mig(lib, 1, &l), 0);
        assert_true(l.enabled);
        assert_int_equal(l.n, 3);
        assert_string_equal(l.dev[0].profile, "3g.40gb");
        assert_int_equal(l.dev[0].slices, 3);
        assert_int_equal(l.dev[0].mem_total, 40960 * MIB);
        assert_int_equal(l.dev[0].n_procs, 0);
        assert_string_equal(l.dev[1].profile, "2g.20gb");
        assert_int_equal(l.dev[1].slices, 2);
        assert_true(l.dev[1].has_procs);
        assert_int_equal(l.dev[1].n_procs, 1);
        assert_int_equal(l.dev[1].procs[0].pid, getpid());
        assert_int_equal(l.dev[1].procs[0].mem_used, 3000 * MIB);
        assert_int_equal(l.dev[1].procs[0].sm_util, -1); /* NVML has no per-process figure under MIG */
        assert_int_equal(l.dev[1].mem_used, 3000 * MIB);

        /* A GPU in MIG mode has no utilisation: NVML does not give one, and none is made up. */
        struct gw_gpu_sample s;
        assert_int_equal(gw_gpu_sample(lib, 1, &s), 0);
        assert_false(s.valid & GW_GPU_HAS_UTIL);
        assert_true(s.valid & GW_GPU_HAS_MEM);

        assert_int_equal(gw_gpu_mig(lib, 2, &l), 0);
        assert_false(l.enabled);
        assert_int_equal(l.n, 0);
        assert_int_equal(gw_gpu_mig(lib, 3, &l), -EINVAL);

        /* Re-partitioned while open: the next read shows the new layout. */
        write_config("count=3\ngpu0.mig=7g.80gb\ngpu2.mig=4g.40gb,3g.40gb\n");
        assert_int_equal(gw_gpu_mig(lib, 0, &l), 0);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.dev[0].slices, 7);
        assert_int_equal(gw_gpu_mig(lib, 1, &l), 0);
        assert_false(l.enabled);
        assert_int_equal(gw_gpu_mig(lib, 2, &l), 0);
        assert_int_equal(l.n, 2);
        assert_string_equal(l.dev[1].profile, "3g.40gb");
        gw_gpu_close(lib);
}

/* A driver without the MIG calls, or a GPU without MIG (NOT_SUPPORTED): the GPU is whole. */
static void test_mig_absent(void **state) {
        write_config("count=2\nmig_calls=0\ngpu0.mig=1g.10gb*7\n");
        struct gw_gpu_lib *lib = open_fake();
        struct gw_gpu_mig_layout l = { .enabled = true, .n = 5 };
        assert_int_equal(gw_gpu_mig(lib, 0, &l), 0);
        assert_false(l.enabled);
        assert_int_equal(l.n, 0);
        write_config("count=2\ngpu1.mig=-\n");
        assert_int_equal(gw_gpu_mig(lib, 1, &l), 0);
        assert_false(l.enabled);
        gw_gpu_close(lib);

        write_config("count=1\ngpu0.lost=1\n");
        lib = open_fake();
        assert_int_equal(gw_gpu_mig(lib, 0, &l), -EIO);
        gw_gpu_close(lib);
}

static const char *const abis[] = { "detail", "v3", "v3_32", "v2", "v1" };

/* Two processes on GPU 0: with one entry every stride parses alike. */
static void test_process_abis(void **state) {
        int gate[2];
        assert_int_equal(pipe2(gate, O_CLOEXEC), 0);
        pid_t kid = fork();
        assert_true(kid >= 0);
        if (kid == 0) {
                char c;
                close(gate[1]);
                (void) read(gate[0], &c, 1);
                _exit(0);
        }
        close(gate[0]);
        write_proc(kid, "0 2048 7\n");

        for (size_t i = 0; i < sizeof abis / sizeof abis[0]; i++) {
                for (int util = 1; util >= 0; util--) {
                        char cfg[128];
                        snprintf(cfg, sizeof cfg, "process_abi=%s\nprocess_util=%d\n", abis[i], util);
                        write_config(cfg);
                        struct gw_gpu_lib *lib = open_fake();
                        struct gw_gpu_proc p[8];
                        size_t n = 0;

                        write_proc(getpid(), "1 100 0\n");
                        check_own_processes(lib, -2, util ? 0 : -1); /* only the child on GPU 0 */
                        write_proc(getpid(), "0 1234 42\n1 100 0\n");
                        assert_int_equal(gw_gpu_processes(lib, 0, p, 8, &n), 0);
                        assert_int_equal(n, 2);
                        size_t me = p[0].pid == (unsigned) getpid() ? 0 : 1;
                        assert_int_equal(p[me].pid, getpid());
                        assert_int_equal(p[me].mem_used, 1234 * MIB);
                        assert_int_equal(p[me].sm_util, util ? 42 : -1);
                        assert_int_equal(p[1 - me].pid, kid);
                        assert_int_equal(p[1 - me].mem_used, 2048 * MIB);
                        assert_int_equal(p[1 - me].sm_util, util ? 7 : -1);
                        gw_gpu_close(lib);
                }
        }
        close(gate[1]);
        assert_int_equal(waitpid(kid, NULL, 0), kid);
}

/* A config change under an open library: the fake re-reads it, the backend copes. */
static void test_abi_change_while_open(void **state) {
        write_proc(getpid(), "0 1234 42\n1 100 0\n");
        write_config("process_abi=detail\n");
        struct gw_gpu_lib *lib = open_fake();
        check_own_processes(lib, 42, 0);
        write_config("process_abi=v1\n");
        check_own_processes(lib, 42, 0);
        gw_gpu_close(lib);
}

#define MANY 1000

static void test_many_processes(void **state) {
        static pid_t kids[MANY];
        int gate[2];
        assert_int_equal(pipe2(gate, O_CLOEXEC), 0);
        for (int i = 0; i < MANY; i++) {
                kids[i] = fork();
                assert_true(kids[i] >= 0);
                if (kids[i] == 0) {
                        char c;
                        close(gate[1]);
                        (void) read(gate[0], &c, 1); /* until the parent closes the gate */
                        _exit(0);
                }
                char line[64];
                snprintf(line, sizeof line, "0 %d 1\n", 1 + i % 7);
                write_proc(kids[i], line);
        }
        close(gate[0]);

        static struct gw_gpu_proc p[2 * MANY];
        for (size_t a = 0; a < sizeof abis / sizeof abis[0]; a++) {
                char cfg[64];
                snprintf(cfg, sizeof cfg, "process_abi=%s\n", abis[a]);
                write_config(cfg);
                struct gw_gpu_lib *lib = open_fake();
                size_t n = 0;
                assert_int_equal(gw_gpu_processes(lib, 0, p, 2 * MANY, &n), 0);
                assert_int_equal(n, MANY);
                for (int i = 0; i < MANY; i++) {
                        size_t k = 0;
                        while (k < n && p[k].pid != (unsigned) kids[i])
                                k++;
                        assert_true(k < n);
                        assert_int_equal(p[k].mem_used, (uint64_t) (1 + i % 7) * MIB);
                        assert_int_equal(p[k].sm_util, 1);
                }
                assert_int_equal(gw_gpu_processes(lib, 0, p, 10, &n), 0);
                assert_int_equal(n, 10);
                struct gw_gpu_sample s;
                assert_int_equal(gw_gpu_sample(lib, 0, &s), 0);
                assert_int_equal(s.util_gpu, 100);
                gw_gpu_close(lib);
        }

        close(gate[1]);
        for (int i = 0; i < MANY; i++)
                assert_int_equal(waitpid(kids[i], NULL, 0), kids[i]);
}

/* ---- health -------------------------------------------------------------------------- */

static void test_lost_gpu(void **state) {
        write_config("gpu1.lost=1\n");
        write_proc(getpid(), "1 10 10\n2 20 20\n");
        struct gw_gpu_lib *lib = open_fake();
        struct gw_gpu_static st;
        struct gw_gpu_sample s;
        struct gw_gpu_proc p[4];
        size_t n;

        assert_int_equal(gw_gpu_count(lib), 4); /* the slot stays: indexes are NVML's */
        assert_int_equal(gw_gpu_static_info(lib, 1, &st), -EIO);
        assert_int_equal(gw_gpu_sample(lib, 1, &s), 0);
        assert_int_equal(s.index, 1);
        assert_int_equal(s.health, GW_GPU_LOST);
        assert_int_equal(s.valid, 0);
        assert_int_equal(gw_gpu_processes(lib, 1, p, 4, &n), -EIO);

        /* Falls off the bus while open. */
        assert_int_equal(gw_gpu_processes(lib, 2, p, 4, &n), 0);
        assert_int_equal(n, 1);
        write_config("gpu1.lost=1\ngpu2.lost=1\n");
        assert_int_equal(gw_gpu_sample(lib, 2, &s), 0);
        assert_int_equal(s.health, GW_GPU_LOST);
        assert_int_equal(s.valid, 0);
        assert_int_equal(gw_gpu_processes(lib, 2, p, 4, &n), -EIO);
        assert_int_equal(gw_gpu_static_info(lib, 2, &st), 0); /* cached from open */
        assert_string_equal(st.uuid, "GPU-fa4e0000-0000-4000-8000-000000000002");
        assert_int_equal(gw_gpu_sample(lib, 0, &s), 0);
        assert_int_equal(s.health, GW_GPU_OK);

        write_config("count=4\n"); /* and comes back */
        assert_int_equal(gw_gpu_sample(lib, 2, &s), 0);
        assert_int_equal(s.health, GW_GPU_OK);
        gw_gpu_close(lib);
}

/* ---- events -------------------------------------------------------------------------- */

static void test_events(void **state) {
        struct gw_nvml_event ev;
        append_event("gpu=3 xid=13\n"); /* before open: history, not news */
        struct gw_gpu_lib *lib = open_fake();
        assert_int_equal(gw_gpu_wait_event(lib, 0, &ev), -ETIMEDOUT);

        append_event("gpu=2 xid=79\n");
        memset(&ev, 0, sizeof ev);
        assert_int_equal(gw_gpu_wait_event(lib, 2000, &ev), 0);
        assert_int_equal(ev.index, 2);
        assert_int_equal(ev.type, 0x8);
        assert_int_equal(ev.xid, 79);

        append_event("gpu=1 ecc=dbe\nnonsense\ngpu=9 xid=1\ngpu=0 xid=48\n");
        assert_int_equal(gw_gpu_wait_event(lib, 2000, &ev), 0);
        assert_int_equal(ev.index, 1);
        assert_int_equal(ev.type, 0x2);
        assert_int_equal(gw_gpu_wait_event(lib, 2000, &ev), 0);
        assert_int_equal(ev.index, 0);
        assert_int_equal(ev.type, 0x8);
        assert_int_equal(ev.xid, 48);

        gw_usec_t t0 = gw_clock_mono();
        assert_int_equal(gw_gpu_wait_event(lib, 100, &ev), -ETIMEDOUT);
        gw_usec_t waited = gw_clock_mono() - t0;
        assert_true(waited >= 90 * GW_USEC_PER_MSEC);
        assert_true(waited < 2 * GW_USEC_PER_SEC);

        append_event("gpu=3 xid="); /* half a line is not an event yet */
        assert_int_equal(gw_gpu_wait_event(lib, 30, &ev), -ETIMEDOUT);
        append_event("63\n");
        assert_int_equal(gw_gpu_wait_event(lib, 2000, &ev), 0);
        assert_int_equal(ev.index, 3);
        assert_int_equal(ev.xid, 63);

        /* A new file renamed into place, longer than what was read of the old: read from its start. */
        char tmp[256], path[256];
        snprintf(tmp, sizeof tmp, "%s/events.new", state_dir);
        snprintf(path, sizeof path, "%s/events", state_dir);
        FILE *f = fopen(tmp, "w");
        assert_non_null(f);
        fputs("gpu=2 xid=94\ngpu=1 xid=95\ngpu=0 xid=96\ngpu=3 xid=97\ngpu=2 xid=98\ngpu=1 xid=99\n", f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, path), 0);
        assert_int_equal(gw_gpu_wait_event(lib, 2000, &ev), 0);
        assert_int_equal(ev.index, 2);
        assert_int_equal(ev.xid, 94);
        gw_gpu_close(lib);
}

struct sampler {
        struct gw_gpu_lib *lib;
        atomic_int stop;
        int samples, bad;
};

static void *sampler_main(void *arg) {
        struct sampler *s = arg;
        while (!atomic_load(&s->stop)) {
                struct gw_gpu_sample smp;
                struct gw_gpu_proc p[4];
                size_t n;
                if (gw_gpu_sample(s->lib, 1, &smp) < 0 || smp.util_gpu != 5 ||
                    gw_gpu_processes(s->lib, 1, p, 4, &n) < 0 || n != 1)
                        s->bad++;
                s->samples++;
        }
        return NULL;
}

static void *writer_main(void *arg) {
        struct timespec nap = { 0, 150 * 1000 * 1000 };
        nanosleep(&nap, NULL);
        append_event("gpu=1 xid=31\n");
        return NULL;
}

/* The daemon waits for events on one thread while it samples on another. */
static void test_event_while_sampling(void **state) {
        write_proc(getpid(), "1 8 5\n");
        struct gw_gpu_lib *lib = open_fake();
        struct sampler smp = { .lib = lib };
        pthread_t ts, tw;
        struct gw_nvml_event ev;

        assert_int_equal(pthread_create(&ts, NULL, sampler_main, &smp), 0);
        assert_int_equal(pthread_create(&tw, NULL, writer_main, NULL), 0);
        int r = gw_gpu_wait_event(lib, 5000, &ev);
        atomic_store(&smp.stop, 1);
        assert_int_equal(pthread_join(tw, NULL), 0);
        assert_int_equal(pthread_join(ts, NULL), 0);
        assert_int_equal(r, 0);
        assert_int_equal(ev.index, 1);
        assert_int_equal(ev.xid, 31);
        assert_true(smp.samples > 0);
        assert_int_equal(smp.bad, 0);
        gw_gpu_close(lib);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_missing_library, test_setup),
                cmocka_unit_test_setup(test_init_error, test_setup),
                cmocka_unit_test_setup(test_fake_contract, test_setup),
                cmocka_unit_test_setup(test_static_and_sample, test_setup),
                cmocka_unit_test_setup(test_pci_legacy_abi, test_setup),
                cmocka_unit_test_setup(test_event_wait_v1_abi, test_setup),
                cmocka_unit_test_setup(test_memory_v2_fallback, test_setup),
                cmocka_unit_test_setup(test_not_supported, test_setup),
                cmocka_unit_test_setup(test_processes_own_pid, test_setup),
                cmocka_unit_test_setup(test_process_abis, test_setup),
                cmocka_unit_test_setup(test_abi_change_while_open, test_setup),
                cmocka_unit_test_setup(test_many_processes, test_setup),
                cmocka_unit_test_setup(test_lost_gpu, test_setup),
                cmocka_unit_test_setup(test_mig_layout, test_setup),
                cmocka_unit_test_setup(test_mig_absent, test_setup),
                cmocka_unit_test_setup(test_events, test_setup),
                cmocka_unit_test_setup(test_event_while_sampling, test_setup),
        };
        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
