/* gw-fake-trainer's two halves: fake_trainer.c simulates the training run (log, results.csv,
 * GPU reports, faults); fake_trainer_io.c holds its formats (the command line, the checkpoint
 * ZIP with its pickle, file helpers).  A test tool: libc and libm only. */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define MAX_CHILDREN 64
#define TRAIN_BATCHES 10

/* The command line; see ft_help() for the flags. */
struct ft_opts {
        long epochs, batch, imgsz;
        bool exist_ok, resume;
        char name[256], project[PATH_MAX], model[PATH_MAX], data[256];
        double epoch_seconds, long_validation, child_max_seconds, save_delay, save_seconds;
        long mem_mib, util; /* util < 0: not given */
        long hang_after, crash_at, crash_after_row, oom_at, xid_at, xid, exit_code, fault_attempt;
        long ckpt_zero_mib; /* --ckpt-zero-mib: that many MiB of zeros in each checkpoint, as holes */
        long hang_after_val; /* --hang-after-validation: 1-based epoch, -1 none */
        long leak_mib, fork_children, child_mem_mib;
        bool ignore_sigterm, slow_io, sleep_forever, leak_first_only, traceback_stderr, help;
        bool resume_path; /* resume=PATH, not a bare resume or resume=True */
        bool crash_final; /* --crash-in-final-val */
        long ul; /* --ultralytics: 80, 81 (default), 83, 84 */
        char ul_version[16], task[16]; /* task: detect (default), segment, pose, obb, classify */
        char crash_msg[512], fault_once[PATH_MAX];
        const char *unknown[16]; /* ignored arguments (argv strings), warned about after the first line */
        int n_unknown;
};

/* What a checkpoint holds; best.pt and last.pt share the layout. */
struct ft_ckpt {
        long epoch, epochs, imgsz, batch, best_epoch; /* epochs 0-based */
        double best_fitness;
        bool stripped;
        char name[256], project[PATH_MAX], model[PATH_MAX], data[256];
};

/* fake_trainer_csv.c: metrics of the task, results.csv of the release. */
#define FT_MAX_COLS 32
struct ft_metrics {
        double v[FT_MAX_COLS]; /* results.csv's columns after epoch (and time), in header order */
        int n;
};
bool ft_task_known(const char *task);
int ft_n_losses(const struct ft_opts *o); /* the train losses are m.v[0 .. n) */
const char *ft_loss_name(const struct ft_opts *o, int i); /* "box_loss", i < ft_n_losses() */
const char *ft_val_desc(const struct ft_opts *o); /* the validator's tqdm description */
/* Smooth curves of a (possibly fractional) 1-based epoch t: losses fall, metrics rise. */
struct ft_metrics ft_metrics_at(const struct ft_opts *o, double t, long epochs);
double ft_fitness(const struct ft_opts *o, const struct ft_metrics *m); /* what picks best.pt */
void ft_val_results(const struct ft_opts *o, const struct ft_metrics *m, bool final);
/* Appends epoch E's row (1-based; t seconds since training began), the header first when the
 * file is new or empty.  0 or -errno. */
int ft_csv_append(const struct ft_opts *o, const char *run, long E, double t, const struct ft_metrics *m);

/* printf to stdout, then fflush: a log follower must see every tqdm redraw live. */
void ft_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ft_help(void);
/* Fills *o (whose defaults the caller set); o->unknown points into argv.  0, or 2 after printing the usage line to stderr. */
int ft_parse_args(int argc, char **argv, struct ft_opts *o);

/* snprintf "%s"; false when src did not fit. */
bool ft_copy_str(char *dst, size_t n, const char *src);
/* The whole string as a number in [lo, hi]; *ret written only on success. */
bool ft_parse_long(const char *s, long lo, long hi, long *ret);
bool ft_parse_double(const char *s, double lo, double hi, double *ret);
/* Sleeps s seconds on the monotonic clock, resuming after signals; s <= 0 returns at once. */
void ft_sleep(double s);
/* open(path, O_WRONLY|O_CREAT|flags) + write everything + close; spread over `seconds` in 8
 * chunks when > 0.  0 or -errno. */
int ft_write_file(const char *path, const void *p, size_t n, int flags, double seconds);
int ft_mkdir_p(const char *path);
/* Path.parent in place: "a/b" -> "a", "b" -> ".", "/b" -> "/". */
void ft_parent_dir(char *p);

/* Encodes *c as a stored ZIP with entries under prefix/ (data.pkl, gpuward_epoch,
 * gpuward_args, data/0, version).  0 and a malloc'd *ret the caller frees, or -ENOMEM. */
int ft_ckpt_encode(const struct ft_ckpt *c, const char *prefix, size_t zero_bytes, unsigned char **ret,
                   size_t *ret_len);
/* Turns every all-zero, 64 KiB-aligned block of the file into a hole (fallocate --dig-holes). */
int ft_dig_holes(const char *path);
/* Reads a checkpoint this program wrote into *c (fields it lacks are left alone).  0,
 * -ENOENT/-errno (cannot open), -EBADMSG (not a complete ZIP: a torn write), -ENODATA (no
 * gpuward entries: some other .pt). */
int ft_ckpt_read(const char *path, struct ft_ckpt *c);
