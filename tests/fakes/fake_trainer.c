/* gw-fake-trainer: a stand-in for `yolo train` (Ultralytics YOLOv8 8.1; --ultralytics and task=
 * select other releases' results.csv and resume, and other tasks) for end-to-end tests.
 *
 * It writes what the daemon watches, in the order a real run does
 * (docs/ULTRALYTICS-FORMATS.md): a log with
 * tqdm '\r' redraws and ANSI colours on stdout, PROJECT/NAME/args.yaml, one results.csv row per
 * epoch (after validation), then weights/last.pt overwritten in place (a stored ZIP, as a real
 * .pt is a zip), then best.pt.  It reports its simulated GPU memory and utilisation to the fake
 * NVML state directory ($GPUWARD_FAKE_NVML_DIR/procs/PID), and can be told to misbehave (hang,
 * crash, OOM, Xid, leak, slow I/O, long validation, children in their own sessions).
 *
 * A test tool: it links only libc and libm, never the project's libraries. */
#include "fake_trainer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VAL_BATCHES 4
#define MAX_GPUS 64
#define BANNER "Ultralytics YOLOv8.1.0 \xf0\x9f\x9a\x80 Python-3.10.12 torch-2.1.2+cu121 "
#define BLUE_BOLD(s) "\x1b[34m\x1b[1m" s "\x1b[0m"

struct gpus {
        int n;
        int index[MAX_GPUS];
        int mig[MAX_GPUS]; /* the MIG device's index on its GPU; -1: the whole GPU */
        long mem[MAX_GPUS];
        long util;
};

/* Written once before the SIGTERM handler is installed; the handler only reads them. */
static char procs_path[PATH_MAX + 32], procs_tmp[PATH_MAX + 32];
static bool procs_enabled;

static bool line_open; /* the last tqdm redraw has no newline yet */

static pid_t children[MAX_CHILDREN];
static int n_children;

/* ---------------------------------------------------------------- small helpers */

static double now_s(void) {
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static __attribute__((noreturn)) void sleep_forever(void) {
        for (;;)
                (void) pause();
}

/* ---------------------------------------------------------------- GPU reporting */

/* A fake MIG device's UUID, MIG-fa4e0000-0000-4000-8001-00000000NNKK: GPU NN's device KK
 * (fake_nvml's naming).  Returns false for anything else. */
static bool parse_mig_uuid(const char *t, int *ret_gpu, int *ret_mig) {
        const char *tail = strrchr(t, '-');
        long gpu, mig;
        char nn[3], kk[3];
        if (strncmp(t, "MIG-", 4) != 0 || !tail || strlen(tail + 1) != 12)
                return false;
        memcpy(nn, tail + 9, 2);
        memcpy(kk, tail + 11, 2);
        nn[2] = kk[2] = '\0';
        if (!ft_parse_long(nn, 0, 99, &gpu) || !ft_parse_long(kk, 0, 99, &mig))
                return false;
        *ret_gpu = (int) gpu;
        *ret_mig = (int) mig;
        return true;
}

/* CUDA_VISIBLE_DEVICES: integers or the fake's UUIDs (GPU- or MIG-); like CUDA, stops at the
 * first entry it cannot parse ("-1" hides every GPU). */
static int parse_visible_devices(const char *v, int *idx, int *mig) {
        int n = 0;
        for (const char *p = v; p && *p && n < MAX_GPUS;) {
                size_t len = strcspn(p, ",");
                char tok[128];
                long x;
                if (len >= sizeof tok)
                        break;
                memcpy(tok, p, len);
                tok[len] = '\0';
                const char *t = tok;
                while (*t == ' ')
                        t++;
                mig[n] = -1;
                if (parse_mig_uuid(t, &idx[n], &mig[n])) {
                        n++;
                } else {
                        if (strncmp(t, "GPU-", 4) == 0 && strrchr(t, '-'))
                                t = strrchr(t, '-') + 1;
                        if (!ft_parse_long(t, 0, 9999, &x))
                                break;
                        idx[n++] = (int) x;
                }
                p += len;
                if (*p == ',')
                        p++;
        }
        return n;
}

static void procs_write(const char *path, const char *tmp, const struct gpus *g) {
        char text[MAX_GPUS * 64];
        size_t len = 0;
        for (int i = 0; i < g->n && len < sizeof text; i++) {
                int r = g->mig[i] >= 0 ? snprintf(text + len, sizeof text - len, "%d/%d %ld %ld\n", g->index[i],
                                                  g->mig[i], g->mem[i], g->util)
                                       : snprintf(text + len, sizeof text - len, "%d %ld %ld\n", g->index[i], g->mem[i],
                                                  g->util);
                if (r > 0)
                        len += (size_t) r;
        }
        if (len > sizeof text)
                len = sizeof text;
        if (ft_write_file(tmp, text, len, O_TRUNC, 0) == 0 && rename(tmp, path) < 0)
                (void) unlink(tmp);
}

static void report(struct gpus *g, long util) {
        g->util = util;
        if (procs_enabled)
                procs_write(procs_path, procs_tmp, g);
}

static void set_mem(struct gpus *g, const struct ft_opts *o, long leaked_epochs) {
        for (int i = 0; i < g->n; i++)
                g->mem[i] = o->mem_mib + (i == 0 || !o->leak_first_only ? o->leak_mib * leaked_epochs : 0);
}

static void procs_remove(void) {
        if (procs_enabled) {
                (void) unlink(procs_tmp);
                (void) unlink(procs_path);
        }
}

/* yolo has no SIGTERM handler: it dies of the signal at once and logs nothing.  We only take
 * our procs file along (SA_RESETHAND: the re-raised signal then kills us). */
static void on_sigterm(int sig) {
        procs_remove();
        (void) raise(sig);
}

/* ---------------------------------------------------------------- faults */

/* Whether a fault mode may fire now: --fault-attempt limits faults to one GPUWARD_ATTEMPT,
 * --fault-once PATH to the first run that finds PATH absent (it creates it). */
static bool fault_fire(const struct ft_opts *o) {
        if (o->fault_attempt >= 0) {
                const char *a = getenv("GPUWARD_ATTEMPT");
                long v;
                if (!a || !ft_parse_long(a, 0, LONG_MAX, &v) || v != o->fault_attempt)
                        return false;
        }
        if (o->fault_once[0]) {
                int fd = open(o->fault_once, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                if (fd < 0)
                        return false;
                (void) close(fd);
        }
        return true;
}

static int traceback(const struct ft_opts *o, const char *inner, const char *msg, int code) {
        FILE *f = o->traceback_stderr ? stderr : stdout;
        const char *site = "/usr/local/lib/python3.10/site-packages";
        if (line_open) /* end the tqdm line the exception interrupted */
                ft_out("\n");
        (void) fprintf(f,
                       "Traceback (most recent call last):\n"
                       "  File \"/usr/local/bin/yolo\", line 8, in <module>\n"
                       "    sys.exit(entrypoint())\n"
                       "  File \"%s/ultralytics/cfg/__init__.py\", line 582, in entrypoint\n"
                       "    getattr(model, mode)(**overrides)  # default args from model\n"
                       "  File \"%s/ultralytics/engine/model.py\", line 650, in train\n"
                       "    self.trainer.train()\n"
                       "  File \"%s/ultralytics/engine/trainer.py\", line 208, in train\n"
                       "    self._do_train(world_size)\n"
                       "%s%s\n",
                       site, site, site, inner, msg);
        (void) fflush(f);
        return code;
}

static const char *BACKWARD =
        "  File \"/usr/local/lib/python3.10/site-packages/ultralytics/engine/trainer.py\", line 381, in _do_train\n"
        "    self.scaler.scale(self.loss).backward()\n"
        "  File \"/usr/local/lib/python3.10/site-packages/torch/autograd/__init__.py\", line 251, in backward\n"
        "    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass\n";

/* Runs the fault planned for 1-based epoch E, if any: returns the exit code, or -1. */
static int epoch_fault(const struct ft_opts *o, const struct gpus *g, long E) {
        if (o->crash_at == E && fault_fire(o))
                return traceback(o, BACKWARD, o->crash_msg, (int) o->exit_code);
        if (o->oom_at == E && fault_fire(o))
                return traceback(
                        o, BACKWARD,
                        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                        "total capacity of 79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, "
                        "this process has 78.07 GiB memory in use. Of the allocated memory 75.12 GiB is "
                        "allocated by PyTorch, and 1.45 GiB is reserved by PyTorch but unallocated. If reserved "
                        "but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
                        "to avoid fragmentation.  See documentation for Memory Management  "
                        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
                        1);
        if (o->xid_at == E && fault_fire(o)) {
                const char *dir = getenv("GPUWARD_FAKE_NVML_DIR");
                if (dir && *dir && g->n > 0) {
                        char path[PATH_MAX + 16], line[64];
                        int n = snprintf(line, sizeof line, "gpu=%d xid=%ld\n", g->index[0], o->xid);
                        (void) snprintf(path, sizeof path, "%s/events", dir);
                        if (ft_write_file(path, line, (size_t) n, O_APPEND, 0) < 0)
                                (void) fprintf(stderr, "gw-fake-trainer: cannot append to %s\n", path);
                }
                return traceback(o, BACKWARD,
                                 "RuntimeError: CUDA error: unspecified launch failure\n"
                                 "CUDA kernel errors might be asynchronously reported at some other API call, so the "
                                 "stacktrace below might be incorrect.\n"
                                 "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"
                                 "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
                                 1);
        }
        return -1;
}

static __attribute__((noreturn)) void hang(struct gpus *g) {
        report(g, 0); /* memory held, nothing computed, nothing written */
        sleep_forever();
}

/* ---------------------------------------------------------------- metrics and log lines */

static void fmt_clock(double s, char *b, size_t n) {
        long t = (long) s;
        if (t >= 3600)
                (void) snprintf(b, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
        else
                (void) snprintf(b, n, "%02ld:%02ld", t / 60, t % 60);
}

/* tqdm's "{desc}: {percentage:3.0f}%|{bar:10}| {n}/{total} [{elapsed}<{remaining}, {rate}]" */
static void bar(const char *desc, int i, int total, double elapsed, bool last) {
        static const char *eighths[] = { "",
                                         "\xe2\x96\x8f",
                                         "\xe2\x96\x8e",
                                         "\xe2\x96\x8d",
                                         "\xe2\x96\x8c",
                                         "\xe2\x96\x8b",
                                         "\xe2\x96\x8a",
                                         "\xe2\x96\x89" };
        char b[128] = "", el[32], rem[32] = "?", rate[32] = "?it/s";
        double frac = (double) i / total * 10;
        int full = (int) frac, len = 0, part = (int) ((frac - full) * 8);
        for (int k = 0; k < full; k++)
                len += snprintf(b + len, sizeof b - (size_t) len, "\xe2\x96\x88");
        if (full < 10)
                len += snprintf(b + len, sizeof b - (size_t) len, "%s%*s", eighths[part], 10 - full - (part > 0), "");
        fmt_clock(elapsed, el, sizeof el);
        if (i > 0 && elapsed > 0) {
                double r = i / elapsed;
                fmt_clock(elapsed / i * (total - i), rem, sizeof rem);
                if (r >= 1)
                        (void) snprintf(rate, sizeof rate, "%5.2fit/s", r);
                else
                        (void) snprintf(rate, sizeof rate, "%5.2fs/it", 1 / r);
        }
        line_open = !last;
        ft_out("\r%s: %3.0f%%|%s| %d/%d [%s<%s, %s]%s", desc, 100.0 * i / total, b, i, total, el, rem, rate,
               last ? "\n" : "");
}

/* One validation pass: tqdm bar then the "all" row (and a few classes at the final one). */
static void validate(const struct ft_opts *o, const struct ft_metrics *m, double seconds, double extra_seconds,
                     bool final) {
        double t0 = now_s();
        const char *desc = ft_val_desc(o);
        bar(desc, 0, VAL_BATCHES, 0, false);
        ft_sleep(extra_seconds); /* --long-validation: the log stands still on this line */
        for (int i = 1; i <= VAL_BATCHES; i++) {
                ft_sleep(seconds / VAL_BATCHES);
                bar(desc, i, VAL_BATCHES, now_s() - t0, i == VAL_BATCHES);
        }
        ft_val_results(o, m, final);
}

static long ckpt_zero_mib; /* --ckpt-zero-mib */

static int ckpt_save(const char *run, const char *file, const char *prefix, const struct ft_ckpt *c, double seconds) {
        char path[PATH_MAX + 32];
        unsigned char *zip;
        size_t len;
        (void) snprintf(path, sizeof path, "%s/weights/%s", run, file);
        int r = ft_ckpt_encode(c, prefix, (size_t) ckpt_zero_mib << 20, &zip, &len);
        if (r == 0) {
                r = ft_write_file(path, zip, len, O_TRUNC, seconds);
                free(zip);
        }
        if (r == 0 && ckpt_zero_mib)
                r = ft_dig_holes(path);
        if (r < 0)
                (void) fprintf(stderr, "gw-fake-trainer: cannot write %s: %s\n", path, strerror(-r));
        return r;
}

/* ---------------------------------------------------------------- training */

struct run {
        char dir[PATH_MAX];
        struct ft_ckpt c; /* current state; epoch = last finished, -1 before the first */
        long start; /* first 0-based epoch this process trains */
        double t0; /* when this process began training (results.csv's "time", 8.3.9 and later) */
};

static void yaml_str(FILE *f, const char *key, const char *v) {
        bool plain = *v != '\0' && strcmp(v, "null") != 0;
        for (const char *p = v; *p && plain; p++)
                plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                        strchr("._/-", *p);
        if (plain && strspn(v, "0123456789.-") == strlen(v))
                plain = false;
        if (plain) {
                (void) fprintf(f, "%s: %s\n", key, v);
                return;
        }
        (void) fprintf(f, "%s: '", key);
        for (const char *p = v; *p; p++)
                (void) fputs(*p == '\'' ? "''" : (char[]){ *p, '\0' }, f);
        (void) fprintf(f, "'\n");
}

static int write_args_yaml(const struct run *r, const struct ft_opts *o) {
        char path[PATH_MAX + 16];
        (void) snprintf(path, sizeof path, "%s/args.yaml", r->dir);
        FILE *f = fopen(path, "we");
        if (!f)
                return -errno;
        (void) fprintf(f, "task: %s\nmode: train\n", o->task);
        yaml_str(f, "model", o->resume ? o->model : r->c.model);
        yaml_str(f, "data", r->c.data);
        (void) fprintf(f,
                       "epochs: %ld\ntime: null\npatience: 100\nbatch: %ld\nimgsz: %ld\nsave: true\n"
                       "save_period: -1\ncache: false\ndevice: null\nworkers: 8\n",
                       r->c.epochs, r->c.batch, r->c.imgsz);
        yaml_str(f, "project", r->c.project);
        yaml_str(f, "name", r->c.name);
        (void) fprintf(f,
                       "exist_ok: %s\npretrained: true\noptimizer: auto\nverbose: true\nseed: 0\n"
                       "deterministic: true\n",
                       o->exist_ok ? "true" : "false");
        if (o->resume)
                yaml_str(f, "resume", o->model);
        else
                (void) fprintf(f, "resume: false\n");
        (void) fprintf(f, "amp: true\nlr0: 0.01\nlrf: 0.01\nmomentum: 0.937\nweight_decay: 0.0005\n"
                          "warmup_epochs: 3.0\nbox: 7.5\ncls: 0.5\ndfl: 1.5\n");
        yaml_str(f, "save_dir", r->dir);
        return fclose(f) == 0 ? 0 : -EIO;
}

/* Ultralytics' get_latest_run(): the newest PROJECT/x/weights/last.pt. */
static bool latest_run(const char *project, char *ret, size_t n) {
        DIR *d = opendir(project);
        if (!d)
                return false;
        struct dirent *de;
        double newest = -1;
        while ((de = readdir(d))) {
                char p[PATH_MAX + 300];
                struct stat st;
                if (de->d_name[0] == '.')
                        continue;
                (void) snprintf(p, sizeof p, "%s/%s/weights/last.pt", project, de->d_name);
                if (stat(p, &st) < 0)
                        continue;
                double t = (double) st.st_mtim.tv_sec + (double) st.st_mtim.tv_nsec / 1e9;
                if (t > newest && ft_copy_str(ret, n, p))
                        newest = t;
        }
        (void) closedir(d);
        return newest >= 0;
}

/* 0, a traceback's exit code, or 1000: start a new run instead (see below). */
static int setup_resume(struct ft_opts *o, struct run *r) {
        if (!o->model[0] || strcmp(o->model, "yolov8n.pt") == 0) {
                if (!latest_run(o->project, o->model, sizeof o->model))
                        return traceback(
                                o, "",
                                "FileNotFoundError: Resume checkpoint not found. Please pass a valid checkpoint "
                                "to resume from, i.e. 'yolo train resume model=path/to/last.pt'",
                                1);
        }
        r->c.best_epoch = -1;
        r->c.best_fitness = 0;
        r->c.epochs = o->epochs;
        int e = ft_ckpt_read(o->model, &r->c);
        if (e == -ENOENT)
                return traceback(o, "",
                                 "FileNotFoundError: Resume checkpoint not found. Please pass a valid checkpoint to "
                                 "resume from, i.e. 'yolo train resume model=path/to/last.pt'",
                                 1);
        if (e < 0) /* what torch.load says about a torn or foreign file */
                return traceback(
                        o,
                        "  File \"/usr/local/lib/python3.10/site-packages/torch/serialization.py\", line 1004, in load\n"
                        "    with _open_zipfile_reader(opened_file) as opened_zipfile:\n",
                        e == -ENODATA ? "KeyError: 'train_args'"
                                      : "RuntimeError: PytorchStreamReader failed reading zip archive: failed "
                                        "finding central directory",
                        1);
        (void) ft_copy_str(r->dir, sizeof r->dir, o->model);
        ft_parent_dir(r->dir);
        ft_parent_dir(r->dir);
        if (o->batch != LONG_MIN) /* the overrides yolo honours on resume */
                r->c.batch = o->batch;
        if (o->imgsz > 0)
                r->c.imgsz = o->imgsz;
        if (r->c.imgsz <= 0)
                r->c.imgsz = 640;
        if (r->c.batch == 0)
                r->c.batch = 16;
        r->start = r->c.epoch + 1;
        if (o->ul >= 84 && !o->resume_path && (r->c.stripped || r->c.epoch < 0)) {
                /* 8.4.29 and later, Model.train(): resume=True with a checkpoint that holds no
		 * training state is a new training from its weights, in a new run directory. */
                ft_out("WARNING \xe2\x9a\xa0\xef\xb8\x8f model '%s' is not a resumable training checkpoint (missing "
                       "epoch/optimizer state). Use 'resume' only to continue incomplete training. Starting new "
                       "training instead.\n",
                       o->model);
                o->resume = false;
                return 1000; /* the caller starts a new run */
        }
        if (r->c.stripped || r->start >= r->c.epochs) {
                char msg[PATH_MAX * 2 + 256];
                (void) snprintf(msg, sizeof msg,
                                "AssertionError: %s training to %ld epochs is finished, nothing to resume.\n"
                                "Start a new training without resuming, i.e. 'yolo train model=%s'",
                                o->model, r->c.epochs, o->model);
                return traceback(o,
                                 "  File \"/usr/local/lib/python3.10/site-packages/ultralytics/engine/trainer.py\", "
                                 "line 676, in resume_training\n"
                                 "    assert start_epoch > 0, (\n",
                                 msg, 1);
        }
        return 0;
}

static int setup_new(const struct ft_opts *o, struct run *r) {
        r->c = (struct ft_ckpt){ .epoch = -1,
                                 .epochs = o->epochs,
                                 .batch = o->batch == LONG_MIN ? 16 : o->batch,
                                 .imgsz = o->imgsz > 0 ? o->imgsz : 640,
                                 .best_epoch = -1,
                                 .best_fitness = 0 };
        (void) ft_copy_str(r->c.project, sizeof r->c.project, o->project);
        (void) ft_copy_str(r->c.model, sizeof r->c.model, o->model[0] ? o->model : "yolov8n.pt");
        (void) ft_copy_str(r->c.data, sizeof r->c.data, o->data);
        char name[sizeof r->c.name];
        (void) ft_copy_str(name, sizeof name, o->name);
        struct stat st;
        for (int k = 2;; k++) { /* increment_path(): train, train2, train3 ... */
                if (snprintf(r->dir, sizeof r->dir, "%s/%s", o->project, name) >= (int) sizeof r->dir)
                        return -ENAMETOOLONG;
                if (o->exist_ok || stat(r->dir, &st) < 0 || k > 9999)
                        break;
                if (snprintf(name, sizeof name, "%s%d", o->name, k) >= (int) sizeof name)
                        return -ENAMETOOLONG;
        }
        (void) ft_copy_str(r->c.name, sizeof r->c.name, name);
        char w[PATH_MAX + 16];
        (void) snprintf(w, sizeof w, "%s/weights", r->dir);
        return ft_mkdir_p(w);
}

static void print_setup(const struct ft_opts *o, const struct run *r, const struct gpus *g) {
        ft_out("%s%s\n", BANNER, g->n > 0 ? "CUDA:0 (NVIDIA A100-SXM4-80GB, 81038MiB)" : "CPU (Intel Xeon Gold 6338)");
        for (int i = 1; i < g->n; i++)
                ft_out("%*sCUDA:%d (NVIDIA A100-SXM4-80GB, 81038MiB)\n", 72, "", i);
        ft_out(BLUE_BOLD(
                       "engine/trainer: ") "task=%s, mode=train, model=%s, data=%s, epochs=%ld, batch=%ld, "
                                           "imgsz=%ld, project=%s, name=%s, exist_ok=%s, resume=%s, amp=True, lr0=0.01\n",
               o->task, o->resume ? o->model : r->c.model, r->c.data, r->c.epochs, r->c.batch, r->c.imgsz, r->c.project,
               r->c.name, o->exist_ok ? "True" : "False", o->resume ? o->model : "False");
        ft_out(BLUE_BOLD("AMP: ") "checks passed \xe2\x9c\x85\n");
        ft_out(BLUE_BOLD(
                "train: ") "Scanning /datasets/coco128/labels/train2017.cache... 126 images, 2 backgrounds, "
                           "0 corrupt: 100%%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88"
                           "\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88| 128/128 [00:00<?, ?it/s]\n");
        ft_out(BLUE_BOLD(
                "val: ") "Scanning /datasets/coco128/labels/train2017.cache... 126 images, 2 backgrounds, "
                         "0 corrupt: 100%%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88"
                         "\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88| 128/128 [00:00<?, ?it/s]\n");
        ft_out("Plotting labels to %s/labels.jpg... \n", r->dir);
        ft_out(BLUE_BOLD("optimizer:") " SGD(lr=0.01, momentum=0.9) with parameter groups 57 weight(decay=0.0), "
                                       "64 weight(decay=0.0005), 63 bias(decay=0.0)\n");
        if (o->resume)
                ft_out("Resuming training %s from epoch %ld to %ld total epochs\n", o->model, r->start + 1,
                       r->c.epochs);
        ft_out("Image sizes %ld train, %ld val\nUsing 8 dataloader workers\n", r->c.imgsz, r->c.imgsz);
        ft_out("Logging results to \x1b[1m%s\x1b[0m\nStarting training for %ld epochs...\n", r->dir, r->c.epochs);
}

/* One epoch, in Ultralytics' order: train, validate, results.csv row, last.pt, best.pt.
 * Returns -1 to go on, or the exit code of a fault (which may be 0: --exit-code 0). */
static int run_epoch(const struct ft_opts *o, struct gpus *g, struct run *r, long e) {
        long E = e + 1, k = e - r->start, train_util = o->slow_io ? 1 : o->util;
        double train_s = o->epoch_seconds * 0.8, val_s = o->epoch_seconds * 0.2, t0 = now_s();
        set_mem(g, o, k);
        report(g, train_util);
        int nl = ft_n_losses(o), len;
        struct ft_metrics m = ft_metrics_at(o, (double) e, r->c.epochs);
        char desc[512], epoch_str[48], mem_str[32];
        len = snprintf(desc, sizeof desc, "\n%11s%11s", "Epoch", "GPU_mem"); /* progress_string() */
        for (int i = 0; i < nl; i++) /* the losses' names, as label_loss_items() without the prefix */
                len += snprintf(desc + len, sizeof desc - (size_t) len, "%11.9s", ft_loss_name(o, i));
        ft_out("%s%11s%11s\n", desc, "Instances", "Size");
        (void) snprintf(epoch_str, sizeof epoch_str, "%ld/%ld", E, r->c.epochs);
        (void) snprintf(mem_str, sizeof mem_str, "%.3gG", (double) g->mem[0] / 1024.0);
        for (int i = 0; i <= TRAIN_BATCHES; i++) {
                if (i > 0)
                        ft_sleep(train_s / TRAIN_BATCHES);
                if (i == TRAIN_BATCHES / 2) {
                        int code = epoch_fault(o, g, E);
                        if (code >= 0)
                                return code;
                }
                m = ft_metrics_at(o, (double) e + (double) i / TRAIN_BATCHES, r->c.epochs);
                len = snprintf(desc, sizeof desc, "%11s%11s", epoch_str, g->n > 0 ? mem_str : "0G");
                for (int k2 = 0; k2 < nl; k2++)
                        len += snprintf(desc + len, sizeof desc - (size_t) len, "%11.4g", m.v[k2]);
                (void) snprintf(desc + len, sizeof desc - (size_t) len, "%11.4g%11.4g",
                                (double) (10 + (E * 7 + i * 13) % 40), (double) r->c.imgsz);
                bar(desc, i, TRAIN_BATCHES, now_s() - t0, i == TRAIN_BATCHES);
        }
        m = ft_metrics_at(o, (double) E, r->c.epochs);
        report(g, o->long_validation > 0 ? 2 : o->slow_io ? 1 : (o->util * 3 + 3) / 4);
        validate(o, &m, val_s, o->long_validation, false);
        if (E == o->hang_after_val && fault_fire(o))
                hang(g); /* the results line is the last word, as when a save or callback hangs */
        set_mem(g, o, k + 1); /* a leak shows in the baseline after validation */
        report(g, o->save_delay > 0 || o->save_seconds > 0 ? 3 : train_util);

        int rc = ft_csv_append(o, r->dir, E, now_s() - r->t0, &m);
        if (rc < 0)
                (void) fprintf(stderr, "gw-fake-trainer: cannot append results.csv: %s\n", strerror(-rc));
        if (o->crash_after_row == E && fault_fire(o)) /* the row is there; last.pt still holds E - 1 */
                return traceback(o, "", o->crash_msg, (int) o->exit_code);
        ft_sleep(o->save_delay);
        r->c.epoch = e;
        bool best = ft_fitness(o, &m) > r->c.best_fitness;
        if (best) {
                r->c.best_fitness = ft_fitness(o, &m);
                r->c.best_epoch = e;
        }
        (void) ckpt_save(r->dir, "last.pt", "last", &r->c, o->save_seconds);
        if (best) /* 8.1 serialises once and writes the same bytes to both files */
                (void) ckpt_save(r->dir, "best.pt", "last", &r->c, 0);
        return -1;
}

static int train(struct ft_opts *o, struct gpus *g) {
        struct run r = { .start = 0 };
        int rc = o->resume ? setup_resume(o, &r) : setup_new(o, &r);
        if (rc == 1000) { /* 8.4: not a resumable checkpoint: a new training from its weights */
                r.start = 0;
                rc = setup_new(o, &r);
        }
        if (rc > 0)
                return rc;
        if (rc < 0) {
                (void) fprintf(stderr, "gw-fake-trainer: cannot create the run directory: %s\n", strerror(-rc));
                return 1;
        }
        if (write_args_yaml(&r, o) < 0)
                (void) fprintf(stderr, "gw-fake-trainer: cannot write %s/args.yaml\n", r.dir);
        print_setup(o, &r, g);
        if (o->hang_after == 0 && fault_fire(o))
                hang(g);
        double t0 = r.t0 = now_s();
        for (long e = r.start; e < r.c.epochs; e++) {
                rc = run_epoch(o, g, &r, e);
                if (rc >= 0)
                        return rc;
                if (e + 1 == o->hang_after && fault_fire(o))
                        hang(g);
        }
        ft_out("\n%ld epochs completed in %.3f hours.\n", r.c.epochs - r.start, (now_s() - t0) / 3600);
        struct ft_ckpt best = r.c;
        r.c.stripped = best.stripped = true; /* strip_optimizer() rewrites both files */
        best.epoch = r.c.best_epoch;
        (void) ckpt_save(r.dir, "last.pt", "last", &r.c, 0);
        ft_out("Optimizer stripped from %s/weights/last.pt, 6.2MB\n", r.dir);
        if (r.c.best_epoch >= 0) {
                (void) ckpt_save(r.dir, "best.pt", "best", &best, 0);
                ft_out("Optimizer stripped from %s/weights/best.pt, 6.2MB\n", r.dir);
        }
        ft_out("\nValidating %s/weights/best.pt...\n%s%s\n", r.dir, BANNER,
               g->n > 0 ? "CUDA:0 (NVIDIA A100-SXM4-80GB, 81038MiB)" : "CPU");
        ft_out("Model summary (fused): 168 layers, 3151904 parameters, 0 gradients, 8.7 GFLOPs\n");
        report(g, o->slow_io ? 1 : (o->util * 3 + 3) / 4);
        if (o->crash_final && fault_fire(o)) /* last.pt and best.pt are stripped by now: nothing to resume */
                return traceback(o,
                                 "  File \"/usr/local/lib/python3.10/site-packages/ultralytics/engine/trainer.py\", "
                                 "line 598, in final_eval\n"
                                 "    self.metrics = self.validator(model=f)\n",
                                 o->crash_msg, (int) o->exit_code);
        struct ft_metrics m = ft_metrics_at(o, (double) (r.c.best_epoch + 1), r.c.epochs);
        validate(o, &m, o->epoch_seconds * 0.2, 0, true);
        ft_out("Speed: 0.1ms preprocess, 0.9ms inference, 0.0ms loss, 1.2ms postprocess per image\n");
        ft_out("Results saved to %s\n", r.dir);
        return 0;
}

/* ---------------------------------------------------------------- main */

static void spawn_children(const struct ft_opts *o, const struct gpus *g) {
        sigset_t term, old;
        (void) sigemptyset(&term);
        (void) sigaddset(&term, SIGTERM);
        (void) sigprocmask(SIG_BLOCK, &term, &old); /* no handler may run in a child */
        (void) fflush(stdout);
        for (long i = 0; i < o->fork_children; i++) {
                pid_t pid = fork();
                if (pid == 0) {
                        (void) signal(SIGTERM, SIG_IGN);
                        (void) signal(SIGINT, SIG_IGN);
                        (void) signal(SIGHUP, SIG_IGN);
                        (void) sigprocmask(SIG_SETMASK, &old, NULL);
                        (void) setsid();
                        char path[sizeof procs_path], tmp[sizeof procs_path + 32];
                        bool report_mem = procs_enabled && o->child_mem_mib > 0;
                        if (report_mem) {
                                struct gpus cg = *g;
                                for (int k = 0; k < cg.n; k++)
                                        cg.mem[k] = o->child_mem_mib;
                                cg.util = 0;
                                (void) snprintf(path, sizeof path, "%s", procs_path);
                                ft_parent_dir(path);
                                (void) snprintf(tmp, sizeof tmp, "%s/.%d.tmp", path, (int) getpid());
                                (void) snprintf(path + strlen(path), sizeof path - strlen(path), "/%d", (int) getpid());
                                procs_write(path, tmp, &cg);
                        }
                        ft_sleep(o->child_max_seconds); /* a safety net for tests that fail to clean up */
                        if (report_mem)
                                (void) unlink(path);
                        _exit(0);
                }
                if (pid > 0) {
                        children[n_children++] = pid;
                        ft_out("gw-fake-trainer: child pid=%d (own session)\n", (int) pid);
                } else {
                        (void) fprintf(stderr, "gw-fake-trainer: fork: %s\n", strerror(errno));
                }
        }
        (void) sigprocmask(SIG_SETMASK, &old, NULL);
}

static void setup_gpus(struct gpus *g) {
        const char *cvd = getenv("CUDA_VISIBLE_DEVICES"), *dir = getenv("GPUWARD_FAKE_NVML_DIR");
        *g = (struct gpus){ .n = 0 };
        g->n = parse_visible_devices(cvd, g->index, g->mig);
        if (!dir || !*dir || g->n == 0)
                return;
        char procs_dir[PATH_MAX + 8];
        if (snprintf(procs_dir, sizeof procs_dir, "%s/procs", dir) >= (int) sizeof procs_dir ||
            (mkdir(procs_dir, 0755) < 0 && errno != EEXIST)) {
                (void) fprintf(stderr, "gw-fake-trainer: cannot use %s/procs: %s\n", dir, strerror(errno));
                return;
        }
        (void) snprintf(procs_path, sizeof procs_path, "%s/%d", procs_dir, (int) getpid());
        (void) snprintf(procs_tmp, sizeof procs_tmp, "%s/.%d.tmp", procs_dir, (int) getpid());
        procs_enabled = true;
}

int main(int argc, char **argv) {
        struct ft_opts o = { .epochs = 3,
                             .batch = LONG_MIN,
                             .imgsz = 0,
                             .epoch_seconds = 0.2,
                             .mem_mib = 2000,
                             .util = -1,
                             .hang_after = -1,
                             .crash_at = -1,
                             .crash_after_row = -1,
                             .oom_at = -1,
                             .xid_at = -1,
                             .xid = 79,
                             .exit_code = 1,
                             .fault_attempt = -1,
                             .child_max_seconds = 900,
                             .hang_after_val = -1,
                             .ul = 81 };
        (void) ft_copy_str(o.name, sizeof o.name, "train");
        (void) ft_copy_str(o.task, sizeof o.task, "detect");
        (void) ft_copy_str(o.data, sizeof o.data, "coco128.yaml");
        (void) ft_copy_str(o.crash_msg, sizeof o.crash_msg,
                           "RuntimeError: CUDA error: an illegal memory access was encountered");
        int rc = ft_parse_args(argc, argv, &o);
        if (rc != 0)
                return rc;
        ckpt_zero_mib = o.ckpt_zero_mib;
        if (!o.project[0]) /* get_save_dir(): RUNS_DIR / task */
                (void) snprintf(o.project, sizeof o.project, "runs/%s", o.task);
        if (o.help) {
                ft_help();
                return 0;
        }
        bool util_given = o.util >= 0;
        if (!util_given)
                o.util = 90;
        (void) signal(SIGPIPE, SIG_IGN); /* as Python: a closed log pipe is an error, not death */

        const char *cvd = getenv("CUDA_VISIBLE_DEVICES"), *job = getenv("GPUWARD_JOB_ID");
        const char *att = getenv("GPUWARD_ATTEMPT"), *gg = getenv("GPUWARD_GPUS");
        const char *rf = getenv("GPUWARD_RESUME_FROM"), *order = getenv("CUDA_DEVICE_ORDER");
        char cwd[PATH_MAX];
        ft_out("gw-fake-trainer: pid=%d CUDA_VISIBLE_DEVICES=%s GPUWARD_JOB_ID=%s GPUWARD_ATTEMPT=%s\n", (int) getpid(),
               cvd ? cvd : "unset", job ? job : "unset", att ? att : "unset");
        ft_out("gw-fake-trainer: pgid=%d sid=%d uid=%d GPUWARD_GPUS=%s GPUWARD_RESUME_FROM=%s CUDA_DEVICE_ORDER=%s "
               "cwd=%s\n",
               (int) getpgrp(), (int) getsid(0), (int) getuid(), gg ? gg : "unset", rf ? rf : "unset",
               order ? order : "unset", getcwd(cwd, sizeof cwd) ? cwd : "?");

        for (int i = 0; i < o.n_unknown; i++) /* Ultralytics would refuse them; we only warn */
                ft_out("WARNING \xe2\x9a\xa0\xef\xb8\x8f '%s' is not a valid YOLO argument, ignoring it.\n",
                       o.unknown[i]);

        struct gpus g;
        setup_gpus(&g);
        if (o.ignore_sigterm) {
                (void) signal(SIGTERM, SIG_IGN);
        } else {
                struct sigaction sa = { .sa_handler = on_sigterm, .sa_flags = SA_RESETHAND };
                (void) sigemptyset(&sa.sa_mask);
                (void) sigaction(SIGTERM, &sa, NULL);
        }
        set_mem(&g, &o, 0);
        report(&g, 0);
        spawn_children(&o, &g);
        if (o.sleep_forever) {
                report(&g, util_given ? o.util : 0);
                sleep_forever();
        }
        rc = train(&o, &g);
        for (int i = 0; i < n_children; i++) { /* dataloader workers end with their parent */
                (void) kill(children[i], SIGKILL);
                (void) waitpid(children[i], NULL, 0);
                char path[sizeof procs_path + 32];
                (void) snprintf(path, sizeof path, "%s", procs_path);
                ft_parent_dir(path);
                (void) snprintf(path + strlen(path), sizeof path - strlen(path), "/%d", (int) children[i]);
                if (procs_enabled && o.child_mem_mib > 0)
                        (void) unlink(path);
        }
        procs_remove();
        return rc;
}
