/* The fake NVML's state directory: DIR/config, DIR/procs/PID, DIR/events (README.md). */
#include "fake_nvml.h"

#include <ctype.h>
#include <dirent.h>
#include <time.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
unsigned fake_init_refs;
char fake_state_dir[PATH_MAX];
struct fake_cfg fake_config;
struct nvmlDevice_st fake_devices[FAKE_MAX_GPUS];
struct nvmlDevice_st fake_mig_devices[FAKE_MAX_GPUS][FAKE_MAX_MIG];
static struct stat cfg_stat; /* of the config we parsed; st_ino 0 when there was none */

/* ---- configuration ------------------------------------------------------------------- */

static void cfg_defaults(struct fake_cfg *c) {
        memset(c, 0, sizeof *c);
        c->count = 4;
        c->process_abi = ABI_V3;
        c->pci_v3 = true;
        c->memory_v2 = true;
        c->process_util = true;
        c->mig_calls = true;
        c->version_mismatch_code = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        for (unsigned i = 0; i < FAKE_MAX_GPUS; i++) {
                snprintf(c->gpu[i].name, sizeof c->gpu[i].name, "NVIDIA A100-SXM4-80GB");
                c->gpu[i].memory_mib = 81920;
                c->gpu[i].temp = 35;
                c->gpu[i].power_w = 60;
                c->gpu[i].mig_max = 7;
        }
}

static char *trim(char *s) {
        while (isspace((unsigned char) *s))
                s++;
        size_t n = strlen(s);
        while (n > 0 && isspace((unsigned char) s[n - 1]))
                s[--n] = '\0';
        return s;
}

static bool parse_ull(const char *v, unsigned long long *ret) {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || end == v || *end || v[0] == '-')
                return false;
        *ret = x;
        return true;
}

static unsigned parse_not_supported(const char *v) {
        static const struct {
                const char *name;
                unsigned bit;
        } names[] = {
                { "temp", NS_TEMP },
                { "power", NS_POWER },
                { "util", NS_UTIL },
                { "memory", NS_MEMORY },
                { "process_util", NS_PROCESS_UTIL },
        };
        unsigned bits = 0;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", v);
        for (char *t = buf; t;) {
                char *comma = strchr(t, ',');
                if (comma)
                        *comma = '\0';
                char *w = trim(t);
                for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
                        if (strcmp(w, names[i].name) == 0)
                                bits |= names[i].bit;
                t = comma ? comma + 1 : NULL;
        }
        return bits;
}

/* "3g.40gb" -> 3 slices of 40 GiB; false for anything else. */
static bool parse_profile(const char *w, struct fake_mig *m) {
        unsigned g, gb;
        char tail[8];
        if (strlen(w) >= sizeof m->profile || sscanf(w, "%ug.%ugb%7s", &g, &gb, tail) != 2 || g == 0 || g > 8)
                return false;
        snprintf(m->profile, sizeof m->profile, "%s", w);
        m->slices = g;
        m->memory_mib = (unsigned long long) gb * 1024;
        return true;
}

/* gpuN.mig: "-" (no MIG on this GPU: NOT_SUPPORTED), "" (MIG off), or MIG mode on with the
 * MIG devices listed: "3g.40gb,2g.20gb,1g.10gb" or "1g.10gb*7". */
static void parse_mig(struct fake_gpu *g, const char *v) {
        char buf[256];
        g->n_mig = 0;
        g->mig_mode = strcmp(v, "-") == 0 ? MIG_UNSUPPORTED : *v ? MIG_ON : MIG_OFF;
        if (g->mig_mode != MIG_ON)
                return;
        snprintf(buf, sizeof buf, "%s", v);
        for (char *t = buf; t;) {
                char *comma = strchr(t, ',');
                if (comma)
                        *comma = '\0';
                char *w = trim(t), *star = strchr(w, '*');
                unsigned long long times = 1;
                if (star) {
                        *star = '\0';
                        if (!parse_ull(trim(star + 1), &times))
                                times = 0;
                }
                struct fake_mig m;
                while (parse_profile(trim(w), &m) && times-- > 0 && g->n_mig < FAKE_MAX_MIG)
                        g->mig[g->n_mig++] = m;
                t = comma ? comma + 1 : NULL;
        }
}

/* gpuN.mig.K.activity=PERCENT: what GPM reports for MIG device K (0-based, GPU instance
 * K + 1). */
static void parse_mig_key(struct fake_gpu *g, const char *key, unsigned long long x) {
        char *end;
        unsigned long k = strtoul(key, &end, 10);
        if (end != key && k < FAKE_MAX_MIG && strcmp(end, ".activity") == 0)
                g->mig_activity[k] = (unsigned) (x > 100 ? 100 : x);
}

/* Applies one key to GPU g; the same keys serve as global defaults and as gpuN.KEY. */
static void cfg_apply_gpu(struct fake_gpu *g, const char *key, const char *v) {
        unsigned long long x;
        if (strcmp(key, "name") == 0)
                snprintf(g->name, sizeof g->name, "%s", v);
        else if (strcmp(key, "not_supported") == 0)
                g->not_supported = parse_not_supported(v);
        else if (strcmp(key, "mig") == 0)
                parse_mig(g, v);
        else if (!parse_ull(v, &x))
                return;
        else if (strncmp(key, "mig.", 4) == 0)
                parse_mig_key(g, key + 4, x);
        else if (strcmp(key, "memory_mib") == 0)
                g->memory_mib = x;
        else if (strcmp(key, "base_used_mib") == 0)
                g->base_used_mib = x;
        else if (strcmp(key, "util") == 0)
                g->util = (unsigned) (x > 100 ? 100 : x);
        else if (strcmp(key, "temp") == 0)
                g->temp = (unsigned) (x > 200 ? 200 : x);
        else if (strcmp(key, "power_w") == 0)
                g->power_w = (unsigned) (x > 4000000 ? 4000000 : x);
        else if (strcmp(key, "lost") == 0)
                g->lost = x != 0;
        else if (strcmp(key, "gpm") == 0)
                g->gpm = x != 0;
        else if (strcmp(key, "mig_max") == 0)
                g->mig_max = (unsigned) (x > FAKE_MAX_MIG ? FAKE_MAX_MIG : x);
}

static void cfg_apply_global(struct fake_cfg *c, const char *key, const char *v) {
        static const struct {
                const char *name;
                int rank;
        } abis[] = {
                { "v1", ABI_V1 }, { "v2", ABI_V2 }, { "v3", ABI_V3 }, { "v3_32", ABI_V3_32 }, { "detail", ABI_DETAIL },
        };
        unsigned long long x = 0;
        bool num = parse_ull(v, &x);
        if (strcmp(key, "count") == 0 && num)
                c->count = (unsigned) (x > FAKE_MAX_GPUS ? FAKE_MAX_GPUS : x);
        else if (strcmp(key, "init_error") == 0 && num)
                c->init_error = (int) (x > 100000 ? NVML_ERROR_UNKNOWN : x);
        else if (strcmp(key, "memory_v2") == 0 && num)
                c->memory_v2 = x != 0;
        else if (strcmp(key, "process_util") == 0 && num)
                c->process_util = x != 0;
        else if (strcmp(key, "mig_calls") == 0 && num)
                c->mig_calls = x != 0;
        else if (strcmp(key, "version_mismatch_code") == 0 && num)
                c->version_mismatch_code = (int) (x > 100000 ? NVML_ERROR_UNKNOWN : x);
        else if (strcmp(key, "pci_abi") == 0 && (strcmp(v, "v2") == 0 || strcmp(v, "v3") == 0))
                c->pci_v3 = strcmp(v, "v3") == 0;
        else if (strcmp(key, "process_abi") == 0) {
                for (size_t i = 0; i < sizeof abis / sizeof abis[0]; i++)
                        if (strcmp(v, abis[i].name) == 0)
                                c->process_abi = abis[i].rank;
        } else
                for (unsigned i = 0; i < FAKE_MAX_GPUS; i++)
                        cfg_apply_gpu(&c->gpu[i], key, v);
}

/* Two passes so that "gpu1.name" wins over "name" whatever the line order. */
static void cfg_parse(struct fake_cfg *c, const char *text) {
        for (int pass = 0; pass < 2; pass++) {
                const char *p = text;
                while (*p) {
                        const char *nl = strchr(p, '\n');
                        size_t len = nl ? (size_t) (nl - p) : strlen(p);
                        char line[512];
                        snprintf(line, sizeof line, "%.*s", (int) (len < sizeof line ? len : sizeof line - 1), p);
                        p += len + (nl ? 1 : 0);
                        char *hash = strchr(line, '#');
                        if (hash)
                                *hash = '\0';
                        char *eq = strchr(line, '=');
                        if (!eq)
                                continue;
                        *eq = '\0';
                        char *key = trim(line), *v = trim(eq + 1);
                        char *end;
                        if (strncmp(key, "gpu", 3) == 0 && isdigit((unsigned char) key[3])) {
                                long idx = strtol(key + 3, &end, 10);
                                if (pass == 1 && *end == '.' && idx >= 0 && idx < FAKE_MAX_GPUS)
                                        cfg_apply_gpu(&c->gpu[idx], end + 1, v);
                        } else if (pass == 0)
                                cfg_apply_global(c, key, v);
                }
        }
}

void fake_path_in_dir(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", fake_state_dir, name); }

void fake_cfg_refresh(void) {
        char path[PATH_MAX + 16];
        struct stat st;
        if (!fake_state_dir[0])
                return;
        fake_path_in_dir(path, sizeof path, "config");
        if (stat(path, &st) < 0) {
                if (cfg_stat.st_ino != 0)
                        cfg_defaults(&fake_config);
                memset(&cfg_stat, 0, sizeof cfg_stat);
                return;
        }
        if (st.st_ino == cfg_stat.st_ino && st.st_size == cfg_stat.st_size &&
            st.st_mtim.tv_sec == cfg_stat.st_mtim.tv_sec && st.st_mtim.tv_nsec == cfg_stat.st_mtim.tv_nsec)
                return;
        FILE *f = fopen(path, "re");
        if (!f)
                return;
        char text[65536];
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
        cfg_defaults(&fake_config);
        cfg_parse(&fake_config, text);
        cfg_stat = st;
}

/* ---- processes ----------------------------------------------------------------------- */

static int proc_cmp(const void *a, const void *b) {
        unsigned x = ((const struct fake_proc *) a)->pid, y = ((const struct fake_proc *) b)->pid;
        return (x > y) - (x < y);
}

/* After a line's GPU index: "/S" names its MIG device S (-1 without). */
static char *proc_mig(char *p, int *mig) {
        *mig = -1;
        if (*p != '/')
                return p;
        char *e;
        unsigned long s = strtoul(p + 1, &e, 10);
        if (e > p + 1 && s < FAKE_MAX_MIG)
                *mig = (int) s;
        return e;
}

static struct fake_proc *procs_scan_dir(unsigned idx, size_t *ret_n) {
        char path[PATH_MAX + 16];
        struct fake_proc *v = NULL;
        size_t n = 0, cap = 0;
        *ret_n = 0;
        if (!fake_state_dir[0])
                return NULL;
        fake_path_in_dir(path, sizeof path, "procs");
        DIR *d = opendir(path);
        if (!d)
                return NULL;
        struct dirent *de;
        while ((de = readdir(d)) && n < FAKE_MAX_PROCS) {
                char *end;
                errno = 0;
                long pid = strtol(de->d_name, &end, 10);
                if (errno || end == de->d_name || *end || pid <= 0 || pid > INT_MAX)
                        continue; /* "." and the trainer's temporary files */
                if (kill((pid_t) pid, 0) < 0 && errno != EPERM)
                        continue;
                char file[PATH_MAX + 300];
                snprintf(file, sizeof file, "%s/%s", path, de->d_name);
                FILE *f = fopen(file, "re");
                if (!f)
                        continue;
                char line[256];
                while (fgets(line, sizeof line, f)) {
                        unsigned long long gpu, mem, sm = 0;
                        int mig;
                        char *p = line, *e;
                        gpu = strtoull(p, &e, 10);
                        if (e == p || gpu != idx)
                                continue;
                        p = proc_mig(e, &mig);
                        mem = strtoull(p, &e, 10);
                        if (e == p)
                                continue;
                        p = e;
                        sm = strtoull(p, &e, 10);
                        if (n == cap) {
                                cap = cap ? cap * 2 : 16;
                                struct fake_proc *nv = realloc(v, cap * sizeof *v);
                                if (!nv)
                                        break;
                                v = nv;
                        }
                        v[n++] = (struct fake_proc){ (unsigned) pid, mig, mem, (unsigned) (sm > 100 ? 100 : sm) };
                        break; /* one line per GPU */
                }
                fclose(f);
        }
        closedir(d);
        if (n)
                qsort(v, n, sizeof *v, proc_cmp);
        *ret_n = n;
        return v;
}

/* A real driver answers from memory; the fake reads files.  Every GPU asks for the same
 * directory several times per sample, so keep one scan (all GPUs) for a few milliseconds,
 * and rescan at once when the directory changes (a process file written or removed). */
#define FAKE_MAX_GPUS_CACHED 16
#define PROCS_TTL_NS (20L * 1000 * 1000)

struct proc_cache {
        pthread_mutex_t lock;
        struct timespec scanned, dir_mtime;
        struct fake_proc *all[FAKE_MAX_GPUS_CACHED];
        size_t n[FAKE_MAX_GPUS_CACHED];
        bool valid;
};
static struct proc_cache procs_cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool cache_fresh(const struct timespec *now, const struct timespec *mtime) {
        if (!procs_cache.valid || mtime->tv_sec != procs_cache.dir_mtime.tv_sec ||
            mtime->tv_nsec != procs_cache.dir_mtime.tv_nsec)
                return false;
        long age =
                (now->tv_sec - procs_cache.scanned.tv_sec) * 1000000000L + (now->tv_nsec - procs_cache.scanned.tv_nsec);
        return age >= 0 && age < PROCS_TTL_NS;
}

/* One pass over the directory for every GPU below FAKE_MAX_GPUS_CACHED. */
static void procs_scan_all(struct fake_proc **all, size_t *counts) {
        size_t caps[FAKE_MAX_GPUS_CACHED] = { 0 };
        char path[PATH_MAX + 16];
        fake_path_in_dir(path, sizeof path, "procs");
        DIR *d = opendir(path);
        if (!d)
                return;
        struct dirent *de;
        size_t total = 0;
        while ((de = readdir(d)) && total < FAKE_MAX_PROCS) {
                char *end;
                errno = 0;
                long pid = strtol(de->d_name, &end, 10);
                if (errno || end == de->d_name || *end || pid <= 0 || pid > INT_MAX)
                        continue;
                if (kill((pid_t) pid, 0) < 0 && errno != EPERM)
                        continue;
                char file[PATH_MAX + 300], line[256];
                snprintf(file, sizeof file, "%s/%s", path, de->d_name);
                FILE *f = fopen(file, "re");
                bool seen[FAKE_MAX_GPUS_CACHED] = { false };
                while (f && fgets(line, sizeof line, f)) {
                        char *p = line, *e;
                        unsigned long long gpu = strtoull(p, &e, 10), mem, sm;
                        int mig;
                        if (e == p || gpu >= FAKE_MAX_GPUS_CACHED || seen[gpu])
                                continue;
                        p = proc_mig(e, &mig);
                        mem = strtoull(p, &e, 10);
                        if (e == p)
                                continue;
                        sm = strtoull(e, NULL, 10);
                        if (counts[gpu] == caps[gpu]) {
                                caps[gpu] = caps[gpu] ? caps[gpu] * 2 : 16;
                                struct fake_proc *nv = realloc(all[gpu], caps[gpu] * sizeof *nv);
                                if (!nv)
                                        break;
                                all[gpu] = nv;
                        }
                        seen[gpu] = true;
                        all[gpu][counts[gpu]++] =
                                (struct fake_proc){ (unsigned) pid, mig, mem, (unsigned) (sm > 100 ? 100 : sm) };
                        total++;
                }
                if (f)
                        fclose(f);
        }
        closedir(d);
        for (unsigned i = 0; i < FAKE_MAX_GPUS_CACHED; i++)
                if (counts[i])
                        qsort(all[i], counts[i], sizeof *all[i], proc_cmp);
}

void fake_procs_cache_clear(void) {
        pthread_mutex_lock(&procs_cache.lock);
        for (unsigned i = 0; i < FAKE_MAX_GPUS_CACHED; i++) {
                free(procs_cache.all[i]);
                procs_cache.all[i] = NULL;
                procs_cache.n[i] = 0;
        }
        procs_cache.valid = false;
        pthread_mutex_unlock(&procs_cache.lock);
}

struct fake_proc *fake_procs_scan(unsigned idx, size_t *ret_n) {
        *ret_n = 0;
        if (idx >= FAKE_MAX_GPUS_CACHED)
                return procs_scan_dir(idx, ret_n);
        char path[PATH_MAX + 16];
        struct stat st;
        struct timespec now;
        fake_path_in_dir(path, sizeof path, "procs");
        if (!fake_state_dir[0] || stat(path, &st) < 0)
                return NULL;
        clock_gettime(CLOCK_MONOTONIC, &now);
        pthread_mutex_lock(&procs_cache.lock);
        if (!cache_fresh(&now, &st.st_mtim)) {
                for (unsigned i = 0; i < FAKE_MAX_GPUS_CACHED; i++) {
                        free(procs_cache.all[i]);
                        procs_cache.all[i] = NULL;
                        procs_cache.n[i] = 0;
                }
                procs_scan_all(procs_cache.all, procs_cache.n);
                clock_gettime(CLOCK_MONOTONIC, &now); /* the scan itself may take a while */
                procs_cache.scanned = now;
                procs_cache.dir_mtime = st.st_mtim;
                procs_cache.valid = true;
        }
        struct fake_proc *copy = NULL;
        size_t n = procs_cache.n[idx];
        if (n && (copy = malloc(n * sizeof *copy))) {
                memcpy(copy, procs_cache.all[idx], n * sizeof *copy);
                *ret_n = n;
        }
        pthread_mutex_unlock(&procs_cache.lock);
        return copy;
}

/* Turns one line of DIR/events into an event; false for lines that are not for this set. */
static bool event_parse(const struct nvmlEventSet_st *set, const char *line, nvmlEventData_t *data) {
        unsigned gpu;
        unsigned long long xid;
        char what[16];
        if (sscanf(line, " gpu=%u xid=%llu", &gpu, &xid) == 2)
                *data = (nvmlEventData_t){ .eventType = EV_XID, .eventData = xid };
        else if (sscanf(line, " gpu=%u ecc=%15s", &gpu, what) == 2 && strcmp(what, "dbe") == 0)
                *data = (nvmlEventData_t){ .eventType = EV_DBE };
        else if (sscanf(line, " gpu=%u ecc=%15s", &gpu, what) == 2 && strcmp(what, "sbe") == 0)
                *data = (nvmlEventData_t){ .eventType = EV_SBE };
        else
                return false;
        if (gpu >= fake_config.count || !(set->registered[gpu] & data->eventType))
                return false;
        data->device = &fake_devices[gpu];
        data->gpuInstanceId = data->computeInstanceId = NO_MIG;
        return true;
}

bool fake_event_next(struct nvmlEventSet_st *set, nvmlEventData_t *data) {
        char path[PATH_MAX + 16];
        if (!fake_state_dir[0])
                return false;
        fake_path_in_dir(path, sizeof path, "events");
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        struct stat st;
        bool found = false;
        if (fstat(fd, &st) == 0 && (st.st_size < set->offset || st.st_ino != set->ino || st.st_dev != set->dev)) {
                set->offset = 0; /* truncated or replaced: a new file */
                set->ino = st.st_ino;
                set->dev = st.st_dev;
        }
        char buf[4096];
        for (;;) {
                ssize_t n = pread(fd, buf, sizeof buf - 1, set->offset);
                if (n <= 0)
                        break;
                buf[n] = '\0';
                char *nl = memchr(buf, '\n', (size_t) n);
                if (!nl) {
                        if ((size_t) n == sizeof buf - 1)
                                set->offset += n; /* an absurd line: drop it */
                        break;
                }
                *nl = '\0';
                set->offset += nl - buf + 1;
                if (event_parse(set, buf, data)) {
                        found = true;
                        break;
                }
        }
        close(fd);
        return found;
}

void fake_cfg_reset(void) {
        const char *dir = getenv("GPUWARD_FAKE_NVML_DIR");
        snprintf(fake_state_dir, sizeof fake_state_dir, "%s", dir ? dir : "");
        cfg_defaults(&fake_config);
        memset(&cfg_stat, 0, sizeof cfg_stat);
        fake_cfg_refresh();
        for (unsigned i = 0; i < FAKE_MAX_GPUS; i++) {
                fake_devices[i] = (struct nvmlDevice_st){ .index = i };
                for (unsigned k = 0; k < FAKE_MAX_MIG; k++)
                        fake_mig_devices[i][k] = (struct nvmlDevice_st){ .index = i, .mig = k + 1 };
        }
}
