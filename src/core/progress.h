/* Parsers of training progress: Ultralytics results.csv, args.yaml and command lines (the
 * planned number of epochs) and a declared generic progress file (the training "phase" read
 * from the tail of a job's log is core/phase.h).  Pure: the caller reads the files and passes their bytes; no
 * I/O, no clock, no globals except constant tables.  Every parser accepts text that is not
 * NUL-terminated (a buffer and its length) and text that is being written while it was read.
 *
 * Used by the reclaim decision (core/reclaim.h) and by ETA estimates; facts about Ultralytics
 * are in docs/ULTRALYTICS-FORMATS.md. */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/time.h"

/* ---- results.csv ---- */

#define GW_RESULTS_MAX_COLS 64 /* further columns are ignored (pose/seg have ~22) */
#define GW_RESULTS_NAME_MAX 48 /* longer column names are truncated */
#define GW_RESULTS_MAX_ROWS 100000 /* distinct epochs; beyond that the file is not a log */

enum gw_results_col_kind {
        GW_RESULTS_COL_OTHER, /* lr/pg0, metrics/precision(B), time, ... */
        GW_RESULTS_COL_EPOCH,
        GW_RESULTS_COL_LOSS, /* name starts with "train/" or "val/" */
        GW_RESULTS_COL_MAP50, /* metrics/mAP50(B), metrics/mAP_0.5 (YOLOv5) */
        GW_RESULTS_COL_MAP50_95, /* metrics/mAP50-95(B), metrics/mAP_0.5:0.95 */
        GW_RESULTS_COL_TOP1, /* metrics/accuracy_top1 (task=classify) */
        GW_RESULTS_COL_TOP5, /* metrics/accuracy_top5 */
        _GW_RESULTS_COL_KIND_MAX,
        _GW_RESULTS_COL_KIND_INVALID = -EINVAL,
};

struct gw_results_col {
        char name[GW_RESULTS_NAME_MAX]; /* padding stripped: "train/box_loss" */
        enum gw_results_col_kind kind;
};

/* A parsed results.csv.  Rows are distinct epochs in ascending order: a row whose epoch is not
 * greater than the previous row's means training was resumed from an earlier checkpoint (the
 * CSV then holds that epoch twice), so it replaces the rows from that epoch on:
 * the last written row of an epoch wins.  Owns epochs[] and values[]: gw_results_free(). */
struct gw_results {
        struct gw_results_col cols[GW_RESULTS_MAX_COLS];
        size_t n_cols;
        size_t epoch_col;
        int map50_col; /* index into cols, -1 when absent */
        int map50_95_col; /* the first mAP column of each kind wins (box before mask) */
        size_t loss_cols[GW_RESULTS_MAX_COLS]; /* indexes of the LOSS columns, header order */
        size_t n_loss_cols;

        size_t n_rows; /* distinct epochs */
        long last_epoch; /* as written (1-based for YOLOv8, 0-based for YOLOv5); -1 */
        bool zero_based; /* the first row is epoch 0: epochs done = last_epoch + 1 */
        size_t n_lines; /* complete data lines read, duplicates included: grows with
                                       * every append, so it is the "file changed" signal */
        size_t n_skipped; /* lines without a numeric epoch (repeated header, junk) */
        long *epochs; /* n_rows */
        double *values; /* n_rows * n_cols, row-major; NAN for an empty field */
};

/* Parses results.csv text.  The header is the first non-empty complete line; columns are found
 * by name after stripping the padding (any YOLO version's set of columns).  A last line without
 * '\n' is ignored: it is being written.  Returns 0 and fills *ret (caller frees it with
 * gw_results_free), -ENODATA when no complete header line is there yet, -EBADMSG when the
 * header has no "epoch" column, -E2BIG beyond GW_RESULTS_MAX_ROWS, -EINVAL for NULL arguments.
 * Aborts on allocation failure (the daemon's policy).  Does not keep pointers into text. */
int gw_results_parse(const char *text, size_t len, struct gw_results *ret);
void gw_results_free(struct gw_results *r); /* accepts NULL; leaves *r empty */

/* The row's epoch counted from 1, as Ultralytics' log ("3/100") and the epochs done after the
 * row count it: epochs[row] + 1 in a file that counts from 0 (YOLOv5; Ultralytics up to
 * 8.0.159 wrote self.epoch), epochs[row] otherwise; -1 out of range. */
long gw_results_epoch1(const struct gw_results *r, size_t row);

/* results.csv split around a checkpoint's epoch, for a resume from it (docs/
 * ULTRALYTICS-FORMATS.md): Ultralytics appends to the file it finds, so the rows past the
 * epoch the checkpoint holds would be written a second time by the resumed run. */
struct gw_results_split {
        char *kept; /* the file without them, its other bytes as they were */
        size_t kept_len;
        char *aside; /* the header line, then those rows, each ending in '\n' */
        size_t aside_len;
        size_t n_aside; /* rows set aside; 0: nothing to change */
};

/* Splits text at epoch keep (counted from 1, as gw_results_epoch1 counts): rows of a later
 * epoch go aside, as does a last line without '\n' (torn by the kill: the next row would be
 * appended to it); a line without a numeric epoch stays.  0 and *ret (freed with
 * gw_results_split_free), or gw_results_parse()'s error.  Aborts on allocation failure. */
int gw_results_split(const char *text, size_t len, long keep, struct gw_results_split *ret);
void gw_results_split_free(struct gw_results_split *s);

/* Value of column col in row; NAN out of range or empty. */
double gw_results_value(const struct gw_results *r, size_t row, size_t col);
/* Copies row's loss values (LOSS columns, header order) to out, at most max; returns how many
 * it copied (0 when row is out of range). */
size_t gw_results_losses(const struct gw_results *r, size_t row, double *out, size_t max);
double gw_results_map50(const struct gw_results *r, size_t row); /* NAN when absent */
double gw_results_map50_95(const struct gw_results *r, size_t row); /* NAN when absent */

/* Ultralytics' fitness of a row, the number best.pt is chosen by (docs/ULTRALYTICS-FORMATS.md):
 *   - classify (metrics/accuracy_top1, _top5): (top1 + top5) / 2, ClassifyMetrics.fitness;
 *   - detect, obb, segment, pose: over each metric group, "(B)" for boxes and "(M)" masks or
 *     "(P)" keypoints, 0.1 * mAP50 + 0.9 * mAP50-95 of that group (Metric.fitness, 8.0 to 8.3),
 *     summed (SegmentMetrics and PoseMetrics add the box and the mask or pose fitness);
 *     YOLOv5's mAP_0.5 and mAP_0.5:0.95 are one group with the same weights.
 * NAN when the header has none of these columns or a field it needs is empty.  Newer releases
 * (seen in 8.4) weigh mAP50-95 alone (w = [0, 0, 0, 1]): the best row then differs only where
 * the two weightings disagree. */
double gw_results_fitness(const struct gw_results *r, size_t row);

/* ---- planned number of epochs ---- */

/* Integer value of a top-level "key: value" line of a simple YAML file such as Ultralytics'
 * args.yaml (a value may be quoted and followed by a "# comment").  The last line with the
 * key wins.  0 and *ret, -ENOENT when the key is absent, -EINVAL when its value is not an
 * integer ("null"), -ERANGE. */
int gw_yaml_int(const char *text, size_t len, const char *key, long *ret);

/* The planned number of epochs from args.yaml (key "epochs"), or -ENODATA for a timed run:
 * with "time: H" (hours; Ultralytics' time= argument) the trainer recomputes its epochs after
 * every epoch from the time they take (self.epochs = ceil(H * 3600 / mean epoch time)) and
 * args.yaml, written once at the start, keeps the number it was given (default 100). */
int gw_args_yaml_epochs(const char *text, size_t len, long *ret);

/* "epochs=N" (Ultralytics CLI), "--epochs=N" or "--epochs N" (YOLOv5 train.py) in argv[1..];
 * the last one wins, as both CLIs let a later argument override.  0, -ENOENT or -EINVAL;
 * -ENODATA when a "time=H" (H > 0) argument makes it a timed run (see above). */
int gw_argv_epochs(const char *const *argv, size_t argc, long *ret);

/* ---- which results.csv is a job's own ---- */

/* Whether a job is a training run whose results.csv gpuward should look for: an Ultralytics
 * run (yolo: submit --yolo, or `yolo ... train`), or a command that sets a run's length, place
 * or resumption as Ultralytics and YOLOv5 do ("epochs=", "project=", "name=", their "--key"
 * forms, a bare "resume"), or whose program or script (a .py or .sh word) names training
 * ("train.py", "train_net.py": Ultralytics' Python API writes its run with no word of it on
 * the command line).  Any other job (`sleep 20`, a build) has no run of its own: a
 * results.csv that appears next to it is someone else's, and would give it epochs, an ETA and
 * progress that shields it from idle reclamation. */
bool gw_run_is_training(const char *const *argv, size_t argc, bool yolo);

/* Whether the command keeps an existing run directory ("exist_ok=True", "--exist-ok"):
 * Ultralytics then appends to the results.csv already in it. */
bool gw_run_reuses_dir(const char *const *argv, size_t argc);

/* Whether a results.csv a search came upon is the attempt's that started at since (wall
 * clock): written since then and, unless the run directory is reused, created since then
 * (btime 0: the filesystem does not say).  A run another process began before this attempt
 * is not this attempt's even while it is still being written.  Allows 1 s for coarse file
 * times. */
bool gw_run_results_fresh(gw_usec_t since, gw_usec_t mtime, gw_usec_t btime, bool reused);

/* ---- a declared progress file (submit --progress FILE) ---- */

struct gw_progress {
        long epoch; /* -1 unknown */
        long total; /* -1 unknown */
};

/* Either lines "epoch=N total=M" (fields separated by blanks or commas, total optional; the
 * last complete line with an epoch wins) or a CSV with an "epoch" column (its last epoch; total
 * unknown).  A last line without '\n' is ignored.  0, -ENODATA when neither is found. */
int gw_progress_parse(const char *text, size_t len, struct gw_progress *ret);
