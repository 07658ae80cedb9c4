/* How the CLI shows training awareness: the ETA of a running job, and the
 * epoch / ETA / LEAK / snapshots lines of `gpuward show`. */
#pragma once
#include <jansson.h>
#include <stddef.h>
#include <time.h>

/* Time left until eta (Unix seconds from the API): "2h14m", "0s" when due, "-" when null. */
char *cli_format_eta(double eta, time_t now, char *buf, size_t n);

/* "~16:52" today, "~11-23 09:10" another day; "-" when null. */
char *cli_format_end(double eta, time_t now, char *buf, size_t n);

/* Prints "2h14m ± 6m (ends ~16:52)" for a finite eta on stdout: the error bar only once it is
 * a second or more, no newline.  `gpuward show` and `gpuward eta` say it alike. */
void cli_print_eta_ends(double eta, double err, time_t now);

/* The queue's START cell: "~14:20" for a pending job's predicted start (core/predict.h),
 * "~14:20, latest 14:45" with its promise (latest_start), "by 14:45" when both are that minute,
 * "14:02" for a running job's start, "-" otherwise. */
char *cli_format_start_cell(const json_t *job, time_t now, char *buf, size_t n);

/* `gpuward show`'s "Training:" section from the job's "training" object: nothing without one.
 *   epoch 37/100   ETA 2h14m ± 6m (ends ~16:52)   2m08s/epoch
 *   LEAK  GPU 0: baseline +412 MiB/epoch for 5 epochs (GPUs 1-3 flat); OOM in ~6 epochs / ~13m
 *   snapshots: best.pt epoch 31 mAP50-95 0.412 (a1f3c2…), last.pt epoch 37 */
void cli_show_training(const json_t *job, time_t now);

/* The prediction of a queued job (its "prediction" object), one line with its basis. */
void cli_show_prediction(const json_t *pr, time_t now);
