#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/phase.h"
#include "core/progress.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- building results.csv the way Ultralytics writes it ---- */

/* Ultralytics 8.1 (BaseTrainer.save_metrics): header fields "%23s," and rows "%23.5g,", the
 * trailing comma stripped.  Writing the fixtures with the same formats keeps them honest. */
static void csv_header(char *buf, size_t n, const char *const *names, size_t k) {
        size_t len = strlen(buf);

        for (size_t i = 0; i < k; i++)
                len += (size_t) snprintf(buf + len, n - len, "%23s%s", names[i], i + 1 < k ? "," : "\n");
}

static void csv_row(char *buf, size_t n, const double *v, size_t k, bool newline) {
        size_t len = strlen(buf);

        for (size_t i = 0; i < k; i++)
                len += (size_t) snprintf(buf + len, n - len, "%23.5g%s", v[i], i + 1 < k ? "," : (newline ? "\n" : ""));
}

static const char *const v8_cols[] = {
        "epoch",
        "train/box_loss",
        "train/cls_loss",
        "train/dfl_loss",
        "metrics/precision(B)",
        "metrics/recall(B)",
        "metrics/mAP50(B)",
        "metrics/mAP50-95(B)",
        "val/box_loss",
        "val/cls_loss",
        "val/dfl_loss",
        "lr/pg0",
        "lr/pg1",
        "lr/pg2",
};

static void v8_row(char *buf, size_t n, double epoch, double loss, bool newline) {
        double v[14] = { epoch,      loss,       loss + 0.1,         loss + 0.2,
                         0.6,        0.5,        0.61 + epoch / 100, 0.45 + epoch / 100,
                         loss + 0.3, loss + 0.4, loss + 0.5,         0.0033,
                         0.0033,     0.07 };
        csv_row(buf, n, v, N_ELEMS(v), newline);
}

static void results_v8_dedup_and_partial(void **state) {
        static char csv[8192];
        struct gw_results r;
        double losses[8];

        csv[0] = '\0';
        csv_header(csv, sizeof(csv), v8_cols, N_ELEMS(v8_cols));
        /* The header really is padded: the first field is 18 blanks and "epoch". */
        assert_memory_equal(csv, "                  epoch,         train/box_loss,", 48);
        v8_row(csv, sizeof(csv), 1, 1.5, true);
        v8_row(csv, sizeof(csv), 2, 1.4, true);
        v8_row(csv, sizeof(csv), 3, 1.3, true);
        /* Stopped after row 3 but before last.pt held epoch 3: resumed, epoch 3 again. */
        v8_row(csv, sizeof(csv), 3, 1.25, true);
        v8_row(csv, sizeof(csv), 4, 1.2, true);
        v8_row(csv, sizeof(csv), 5, 1.1, false); /* being written */
        csv[strlen(csv) - 40] = '\0'; /* ... and torn mid-field */

        assert_int_equal(gw_results_parse(csv, strlen(csv), &r), 0);
        assert_int_equal(r.n_cols, 14);
        assert_string_equal(r.cols[0].name, "epoch");
        assert_string_equal(r.cols[13].name, "lr/pg2");
        assert_int_equal(r.epoch_col, 0);
        assert_int_equal(r.n_rows, 4);
        assert_int_equal(r.n_lines, 5);
        assert_int_equal(r.last_epoch, 4);
        assert_false(r.zero_based);
        for (size_t i = 0; i < 4; i++) {
                assert_int_equal(r.epochs[i], (long) i + 1);
                assert_int_equal(gw_results_epoch1(&r, i), (long) i + 1);
        }

        /* Six losses, train/ then val/, in header order. */
        assert_int_equal(r.n_loss_cols, 6);
        assert_string_equal(r.cols[r.loss_cols[0]].name, "train/box_loss");
        assert_string_equal(r.cols[r.loss_cols[3]].name, "val/box_loss");
        assert_int_equal(gw_results_losses(&r, 2, losses, N_ELEMS(losses)), 6);
        assert_float_equal(losses[0], 1.25, 1e-9); /* the resumed row won */
        assert_float_equal(losses[5], 1.75, 1e-9);
        assert_int_equal(gw_results_losses(&r, 2, losses, 2), 2);
        assert_int_equal(gw_results_losses(&r, 9, losses, 2), 0);

        assert_int_equal(r.map50_col, 6);
        assert_int_equal(r.map50_95_col, 7);
        assert_float_equal(gw_results_map50(&r, 3), 0.65, 1e-9);
        assert_float_equal(gw_results_map50_95(&r, 3), 0.49, 1e-9);
        assert_true(isnan(gw_results_value(&r, 4, 0)));
        assert_true(isnan(gw_results_value(&r, 0, 14)));
        assert_float_equal(gw_results_value(&r, 0, 12), 0.0033, 1e-12);
        gw_results_free(&r);
        assert_null(r.epochs);
        gw_results_free(&r); /* twice is harmless */
        gw_results_free(NULL);
}

static void results_v5_zero_based(void **state) {
        /* YOLOv5 writes "%20s" fields, counts epochs from 0, has obj_loss and no dfl_loss, and
         * calls its mAP columns mAP_0.5 and mAP_0.5:0.95. */
        static const char csv[] = "               epoch,      train/box_loss,      train/obj_loss,      train/cls_loss,"
                                  "   metrics/precision,      metrics/recall,     metrics/mAP_0.5,metrics/mAP_0.5:0.95,"
                                  "        val/box_loss,        val/obj_loss,        val/cls_loss,               x/lr0,"
                                  "               x/lr1,               x/lr2\n"
                                  "                   0,            0.041513,            0.057292,            0.018611,"
                                  "             0.69741,             0.60284,              0.6618,             0.43158,"
                                  "            0.034106,            0.047451,            0.010153,            0.070096,"
                                  "           0.0033005,           0.0033005\n"
                                  "                   1,            0.039838,            0.055963,            0.016766,"
                                  "             0.71212,             0.61877,             0.67829,             0.44577,"
                                  "            0.033367,             0.04624,           0.0094618,            0.040047,"
                                  "           0.0065883,           0.0065883\n";
        struct gw_results r;

        assert_int_equal(gw_results_parse(csv, strlen(csv), &r), 0);
        assert_int_equal(r.n_rows, 2);
        assert_true(r.zero_based);
        assert_int_equal(r.last_epoch, 1);
        /* Counted from 1 as the log counts (Ultralytics up to 8.0.159 wrote 0-based too). */
        assert_int_equal(gw_results_epoch1(&r, 0), 1);
        assert_int_equal(gw_results_epoch1(&r, 1), 2);
        assert_int_equal(gw_results_epoch1(&r, 2), -1);
        assert_int_equal(r.n_loss_cols, 6);
        assert_string_equal(r.cols[r.loss_cols[1]].name, "train/obj_loss");
        assert_int_equal(r.cols[13].kind, GW_RESULTS_COL_OTHER);
        assert_float_equal(gw_results_map50(&r, 1), 0.67829, 1e-9);
        assert_float_equal(gw_results_map50_95(&r, 1), 0.44577, 1e-9);
        gw_results_free(&r);
}

static void results_newer_with_time(void **state) {
        /* Ultralytics 8.3: no padding, a "time" column after epoch, CRLF if edited on Windows. */
        static const char csv[] = "epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),"
                                  "metrics/recall(B),metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,"
                                  "val/dfl_loss,lr/pg0,lr/pg1,lr/pg2\r\n"
                                  "1,12.4,1.2,1.9,1.3,0.55,0.45,0.5,0.35,1.1,1.7,1.2,0.0007,0.0007,0.0007\r\n"
                                  "\r\n"
                                  "2,23.9,1.1,1.7,1.25,0.58,0.47,0.53,0.37,1.05,1.6,1.18,0.0013,0.0013,0.0013\r\n"
                                  "2,24.1,1.0,,1.2,0.6,0.5,0.55,0.38,1.0,1.5,1.1,0.0013,0.0013,0.0013\r\n";
        struct gw_results r;
        double l[8];

        assert_int_equal(gw_results_parse(csv, strlen(csv), &r), 0);
        assert_int_equal(r.n_cols, 15);
        assert_string_equal(r.cols[1].name, "time");
        assert_int_equal(r.cols[1].kind, GW_RESULTS_COL_OTHER);
        assert_int_equal(r.n_rows, 2);
        assert_int_equal(r.n_lines, 3);
        assert_float_equal(gw_results_value(&r, 1, 1), 24.1, 1e-9);
        assert_int_equal(gw_results_losses(&r, 1, l, N_ELEMS(l)), 6);
        assert_float_equal(l[0], 1.0, 1e-9);
        assert_true(isnan(l[1])); /* empty field */
        assert_float_equal(gw_results_map50(&r, 1), 0.55, 1e-9);
        gw_results_free(&r);
}

/* The header of each task (models/yolo/TASK/train.py label_loss_items, utils/metrics.py keys),
 * 8.3.9 and later, and the fitness that picks best.pt (Metric.fitness, SegmentMetrics and
 * PoseMetrics summing their groups, ClassifyMetrics). */
static void results_tasks_and_fitness(void **state) {
        static const char classify[] =
                "epoch,time,train/loss,metrics/accuracy_top1,metrics/accuracy_top5,val/loss,lr/pg0,lr/pg1,lr/pg2\n"
                "1,30.1,2.1,0.40,0.80,1.9,0.0007,0.0007,0.0007\n"
                "2,60.3,1.9,0.52,0.86,1.8,0.0013,0.0013,0.0013\n"
                "3,90.2,1.8,0.50,0.85,1.7,0.0013,0.0013,0.0013\n";
        static const char segment[] =
                "epoch,time,train/box_loss,train/seg_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),"
                "metrics/recall(B),metrics/mAP50(B),metrics/mAP50-95(B),metrics/precision(M),metrics/recall(M),"
                "metrics/mAP50(M),metrics/mAP50-95(M),val/box_loss,val/seg_loss,val/cls_loss,val/dfl_loss,lr/pg0,"
                "lr/pg1,lr/pg2\n"
                /* The box mAP is best in epoch 1, box and mask together in epoch 2. */
                "1,9,1.2,2.5,1.9,1.3,0.6,0.5,0.50,0.40,0.5,0.4,0.30,0.10,1.1,2.4,1.7,1.2,0.01,0.01,0.01\n"
                "2,18,1.1,2.3,1.7,1.2,0.6,0.5,0.49,0.39,0.5,0.4,0.40,0.20,1.0,2.2,1.6,1.1,0.01,0.01,0.01\n";
        static const char pose[] =
                "epoch,time,train/box_loss,train/pose_loss,train/kobj_loss,train/cls_loss,train/dfl_loss,"
                "metrics/precision(B),metrics/recall(B),metrics/mAP50(B),metrics/mAP50-95(B),metrics/precision(P),"
                "metrics/recall(P),metrics/mAP50(P),metrics/mAP50-95(P),val/box_loss,val/pose_loss,val/kobj_loss,"
                "val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2\n"
                "1,9,1,5,0.6,2,1.3,0.6,0.5,0.5,0.4,0.6,0.5,0.6,0.3,1,5,0.6,2,1.3,0.01,0.01,0.01\n"
                "2,18,1,5,0.6,2,1.3,0.6,0.5,0.5,0.4,0.6,0.5,0.6,,1,5,0.6,2,1.3,0.01,0.01,0.01\n";
        struct gw_results r;

        assert_int_equal(gw_results_parse(classify, strlen(classify), &r), 0);
        assert_int_equal(r.cols[3].kind, GW_RESULTS_COL_TOP1);
        assert_int_equal(r.cols[4].kind, GW_RESULTS_COL_TOP5);
        assert_int_equal(r.n_loss_cols, 2);
        assert_int_equal(r.map50_95_col, -1); /* no mAP in a classify run */
        assert_false(isnan(gw_results_fitness(&r, 0))); /* assert_float_equal lets NAN through */
        assert_float_equal(gw_results_fitness(&r, 0), 0.60, 1e-9);
        assert_float_equal(gw_results_fitness(&r, 1), 0.69, 1e-9); /* the best: best.pt */
        assert_float_equal(gw_results_fitness(&r, 2), 0.675, 1e-9);
        assert_true(isnan(gw_results_fitness(&r, 3)));
        gw_results_free(&r);

        assert_int_equal(gw_results_parse(segment, strlen(segment), &r), 0);
        assert_int_equal(r.n_cols, 21);
        assert_int_equal(r.n_loss_cols, 8);
        assert_string_equal(r.cols[r.map50_95_col].name, "metrics/mAP50-95(B)"); /* box before mask */
        assert_float_equal(gw_results_fitness(&r, 0), 0.1 * 0.50 + 0.9 * 0.40 + 0.1 * 0.30 + 0.9 * 0.10, 1e-9);
        assert_float_equal(gw_results_fitness(&r, 1), 0.1 * 0.49 + 0.9 * 0.39 + 0.1 * 0.40 + 0.9 * 0.20, 1e-9);
        assert_true(gw_results_fitness(&r, 1) > gw_results_fitness(&r, 0));
        gw_results_free(&r);

        assert_int_equal(gw_results_parse(pose, strlen(pose), &r), 0);
        assert_false(isnan(gw_results_fitness(&r, 0)));
        assert_float_equal(gw_results_fitness(&r, 0), 0.1 * 0.5 + 0.9 * 0.4 + 0.1 * 0.6 + 0.9 * 0.3, 1e-9);
        assert_true(isnan(gw_results_fitness(&r, 1))); /* mAP50-95(P) empty */
        gw_results_free(&r);

        /* Detect (8.1, padded) and YOLOv5: one group. */
        static char csv[4096];
        csv[0] = '\0';
        csv_header(csv, sizeof(csv), v8_cols, N_ELEMS(v8_cols));
        v8_row(csv, sizeof(csv), 1, 1.5, true);
        assert_int_equal(gw_results_parse(csv, strlen(csv), &r), 0);
        assert_false(isnan(gw_results_fitness(&r, 0)));
        assert_float_equal(gw_results_fitness(&r, 0), 0.1 * 0.62 + 0.9 * 0.46, 1e-9);
        gw_results_free(&r);
        static const char v5[] = "epoch,metrics/mAP_0.5,metrics/mAP_0.5:0.95\n0,0.6,0.4\n";
        assert_int_equal(gw_results_parse(v5, strlen(v5), &r), 0);
        assert_int_equal(r.n_rows, 1);
        assert_false(isnan(gw_results_fitness(&r, 0)));
        assert_float_equal(gw_results_fitness(&r, 0), 0.1 * 0.6 + 0.9 * 0.4, 1e-9);
        gw_results_free(&r);
        assert_int_equal(gw_results_parse("epoch,train/loss\n1,0.5\n", 23, &r), 0);
        assert_int_equal(r.n_rows, 1);
        assert_true(isnan(gw_results_fitness(&r, 0)));
        gw_results_free(&r);
        assert_true(isnan(gw_results_fitness(NULL, 0)));
}

static void results_restart_and_junk(void **state) {
        static const char csv[] = "epoch,train/loss\n"
                                  "1,0.9\n2,0.8\n3,0.7\n4,0.6\n"
                                  "epoch,train/loss\n" /* a header written again */
                                  "garbage line\n"
                                  "2,0.79\n3.0,0.69\n" /* resumed from epoch 2; "3.0" */
                                  "-1,5\n2.5,1\n"; /* not epochs */
        struct gw_results r;

        assert_int_equal(gw_results_parse(csv, sizeof(csv) - 1, &r), 0);
        assert_int_equal(r.n_rows, 3);
        assert_int_equal(r.last_epoch, 3);
        assert_int_equal(r.n_lines, 6);
        assert_int_equal(r.n_skipped, 4);
        assert_float_equal(gw_results_value(&r, 1, 1), 0.79, 1e-9);
        assert_float_equal(gw_results_value(&r, 2, 1), 0.69, 1e-9);
        assert_int_equal(r.map50_col, -1);
        assert_true(isnan(gw_results_map50(&r, 0)));
        gw_results_free(&r);
}

static void results_errors(void **state) {
        static const struct {
                const char *text;
                int ret;
        } t[] = {
                { "", -ENODATA },
                { "\n\n", -ENODATA },
                { "                  epoch,   train/box", -ENODATA }, /* header still being written */
                { "a,b,c\n1,2,3\n", -EBADMSG },
                { "epoch\n", 0 },
                { "epoch, train/x\n1,2", 0 }, /* header, no complete row */
        };
        struct gw_results r;

        for (size_t i = 0; i < N_ELEMS(t); i++) {
                int ret = gw_results_parse(t[i].text, strlen(t[i].text), &r);
                if (ret != t[i].ret)
                        fail_msg("case %zu: %d, want %d", i, ret, t[i].ret);
                if (ret == 0) {
                        assert_int_equal(r.n_rows, 0);
                        assert_int_equal(r.last_epoch, -1);
                        gw_results_free(&r);
                }
        }
        assert_int_equal(gw_results_parse(NULL, 3, &r), -EINVAL);
        assert_int_equal(gw_results_parse("epoch\n", 6, NULL), -EINVAL);
}

static void results_many_rows(void **state) {
        char *csv = test_malloc(1 << 20);
        size_t len;
        struct gw_results r;

        len = (size_t) snprintf(csv, 1 << 20, "epoch,train/loss\n");
        for (int e = 1; e <= 3000; e++)
                len += (size_t) snprintf(csv + len, (1 << 20) - len, "%d,%g\n", e, 1.0 / e);
        assert_int_equal(gw_results_parse(csv, len, &r), 0);
        assert_int_equal(r.n_rows, 3000);
        assert_float_equal(gw_results_value(&r, 2999, 1), 1.0 / 3000, 1e-9);
        gw_results_free(&r);
        test_free(csv);
}

/* ---- args.yaml, argv, progress file ---- */

static void yaml_epochs(void **state) {
        static const char args[] = "task: detect\nmode: train\nmodel: yolov8n.pt\n"
                                   "data: coco128.yaml\nepochs: 100\ntime: null\npatience: 100\n"
                                   "batch: 16\nimgsz: 640\nsave: true\nsave_period: -1\n";
        static const struct {
                const char *text;
                int ret;
                long v;
        } t[] = {
                { "epochs: 3\n", 0, 3 },
                { "epochs:3\n", 0, 3 },
                { "epochs : 7 # planned\n", 0, 7 },
                { "epochs: '12'\n", 0, 12 },
                { "epochs: \"12\"\n", 0, 12 },
                { "epochs: 3\nepochs: 4\n", 0, 4 },
                { "sub:\n  epochs: 9\n", -ENOENT, 0 },
                { "epochs_extra: 9\n", -ENOENT, 0 },
                { "epochs: null\n", -EINVAL, 0 },
                { "epochs: 3#x\n", -EINVAL, 0 },
                { "epochs: 99999999999999999999\n", -ERANGE, 0 },
                { "epochs: 30", -ENOENT, 0 }, /* being written: could be 300 */
                { "", -ENOENT, 0 },
                /* time=H: Ultralytics recomputes the epochs after each one; args.yaml keeps 100. */
                { "epochs: 100\ntime: 2.5\n", -ENODATA, 0 },
                { "epochs: 100\ntime: 1\n", -ENODATA, 0 },
                { "epochs: 100\ntime: 0\n", 0, 100 },
                { "epochs: 100\ntime: null\n", 0, 100 },
                { "time: 0.5 # hours\nepochs: 100\n", -ENODATA, 0 },
        };
        struct gw_results r;
        long v = -1;

        assert_int_equal(gw_args_yaml_epochs(args, strlen(args), &v), 0);
        assert_int_equal(v, 100);
        assert_int_equal(gw_yaml_int(args, strlen(args), "save_period", &v), 0);
        assert_int_equal(v, -1);
        for (size_t i = 0; i < N_ELEMS(t); i++) {
                v = -42;
                int ret = gw_args_yaml_epochs(t[i].text, strlen(t[i].text), &v);
                if (ret != t[i].ret)
                        fail_msg("case %zu: %d, want %d", i, ret, t[i].ret);
                assert_int_equal(v, ret == 0 ? t[i].v : -42); /* written only on success */
        }
        assert_int_equal(gw_yaml_int(args, strlen(args), NULL, &v), -EINVAL);
        /* The daemon passes bytes: a NUL inside a value does not end it early. */
        assert_int_equal(gw_args_yaml_epochs("epochs: 3\0 junk\n", 16, &v), -EINVAL);
        assert_int_equal(gw_results_parse("epoch,x\n4\0 junk,1\n", 18, &r), 0);
        assert_int_equal(r.n_rows, 0);
        gw_results_free(&r);
}

static void argv_epochs(void **state) {
        const char *yolo[] = { "yolo",     "train",     "model=yolov8n.pt", "data=coco128.yaml",
                               "epochs=3", "imgsz=640", "epochs=5" };
        const char *v5[] = { "python", "train.py", "--img", "640", "--epochs", "50" };
        const char *v5eq[] = { "python", "train.py", "--epochs=60" };
        const char *none[] = { "epochs=1", "python", "x.py" }; /* argv[0] is not an argument */
        const char *bad[] = { "yolo", "epochs=ten" };
        const char *dangling[] = { "python", "train.py", "--epochs" };
        const char *timed[] = { "yolo", "train", "epochs=300", "time=1.5" };
        const char *untimed[] = { "yolo", "train", "epochs=30", "time=0" };
        long v = 0;

        assert_int_equal(gw_argv_epochs(yolo, N_ELEMS(yolo), &v), 0);
        assert_int_equal(v, 5);
        assert_int_equal(gw_argv_epochs(v5, N_ELEMS(v5), &v), 0);
        assert_int_equal(v, 50);
        assert_int_equal(gw_argv_epochs(v5eq, N_ELEMS(v5eq), &v), 0);
        assert_int_equal(v, 60);
        assert_int_equal(gw_argv_epochs(none, N_ELEMS(none), &v), -ENOENT);
        assert_int_equal(gw_argv_epochs(bad, N_ELEMS(bad), &v), -EINVAL);
        assert_int_equal(gw_argv_epochs(dangling, N_ELEMS(dangling), &v), -ENOENT);
        assert_int_equal(gw_argv_epochs(NULL, 2, &v), -EINVAL);
        assert_int_equal(v, 60);
        /* A timed run: its epochs are recomputed, epochs= is not the plan. */
        assert_int_equal(gw_argv_epochs(timed, N_ELEMS(timed), &v), -ENODATA);
        assert_int_equal(v, 60);
        assert_int_equal(gw_argv_epochs(untimed, N_ELEMS(untimed), &v), 0);
        assert_int_equal(v, 30);
}

static void progress_file(void **state) {
        static const struct {
                const char *text;
                int ret;
                long epoch, total;
        } t[] = {
                { "epoch=1 total=10\nepoch=2 total=10\nepoch=3 tot", 0, 2, 10 },
                { "epoch=5\n", 0, 5, -1 },
                { "total=8,epoch=6\n", 0, 6, 8 },
                { "step 100\nepoch=2 total=4\nloss 0.3\n", 0, 2, 4 },
                { "epoch,loss\n1,0.5\n2,0.4\n3,0.3", 0, 2, -1 },
                { "epoch,loss\n", -ENODATA, 0, 0 },
                { "hello\n", -ENODATA, 0, 0 },
                { "epoch=x\n", -ENODATA, 0, 0 },
                { "", -ENODATA, 0, 0 },
        };
        struct gw_progress p;

        for (size_t i = 0; i < N_ELEMS(t); i++) {
                int ret = gw_progress_parse(t[i].text, strlen(t[i].text), &p);
                if (ret != t[i].ret)
                        fail_msg("case %zu: %d, want %d", i, ret, t[i].ret);
                if (ret == 0 && (p.epoch != t[i].epoch || p.total != t[i].total))
                        fail_msg("case %zu: %ld/%ld", i, p.epoch, p.total);
        }
        assert_int_equal(gw_progress_parse("x", 1, NULL), -EINVAL);
}

/* ---- the phase from a log tail ---- */

#define ESC "\x1b"
#define BLUE_BOLD ESC "[34m" ESC "[1m"
#define RESET ESC "[0m"
#define EPOCH_HDR "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
#define VAL_HDR "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95)"
#define BAR(pct, done) ": " pct "|" done "| "

static const char log_start[] =
        "Ultralytics YOLOv8.1.0 \xf0\x9f\x9a\x80 Python-3.11.4 torch-2.1.0 CUDA:0 (NVIDIA H100, 81090MiB)\n" BLUE_BOLD
        "train: " RESET "Scanning /data/coco128/labels/train2017.cache... 126 images, 2 "
        "backgrounds, 0 corrupt: 100%|\xe2\x96\x88\xe2\x96\x88| 128/128 [00:00<?, ?it/s]\n" BLUE_BOLD "val: " RESET
        "Scanning /data/coco128/labels/train2017.cache... 126 images, 2 "
        "backgrounds, 0 corrupt: 100%|\xe2\x96\x88\xe2\x96\x88| 128/128 [00:00<?, ?it/s]\n"
        "Plotting labels to runs/detect/train/labels.jpg... \n" BLUE_BOLD "optimizer:" RESET
        " AdamW(lr=0.000119, momentum=0.9)\n"
        "Image sizes 640 train, 640 val\nUsing 8 dataloader workers\n"
        "Logging results to " BLUE_BOLD "runs/detect/train" RESET "\n"
        "Starting training for 3 epochs...\n";

#define EPOCH1_BARS                                                                            \
        "\n" EPOCH_HDR "\r  0%|          | 0/8 [00:00<?, ?it/s]"                               \
        "\r      1/3      2.61G      1.173      1.435      1.223        217        640:  12%|" \
        "\xe2\x96\x88         | 1/8 [00:01<00:09,  1.38s/it]"                                  \
        "\r      1/3      2.61G      1.187      1.361      1.238        217        640: 100%|" \
        "\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88| 8/8 [00:03<00:00,  2.36it/s]\n"
#define VAL_BARS                                                                                          \
        VAL_HDR ":   0%|          | 0/4 [00:00<?, ?it/s]"                                                 \
                "\r" VAL_HDR ":  50%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88     | " \
                "2/4 [00:00<00:00,  3.01it/s]"
#define ALL_LINE "                   all        128        929      0.646      0.539      0.617      0.455\n"
#define CLS_EPOCH_BAR                                                 \
        "\n      Epoch    GPU_mem       loss  Instances       Size\n" \
        "\r      1/3     0.605G      2.304         16        224: 100%|\xe2\x96\x88| 8/8 [00:01]\n"
#define CLS_VAL "               classes   top1_acc   top5_acc"

static const struct {
        const char *name;
        const char *tail;
        unsigned last_lines;
        enum gw_phase phase;
        const char *line_prefix;
} phase_cases[] = {
        { "empty", "", 0, GW_PHASE_UNKNOWN, "" },
        { "blank redraws", "\r\r\n  \n\r", 0, GW_PHASE_UNKNOWN, "" },
        { "epoch bar redraws", EPOCH1_BARS, 0, GW_PHASE_TRAINING, "1/3      2.61G      1.187" },
        { "bar without newline", EPOCH1_BARS "\r      2/3      2.6G      1.1", 0, GW_PHASE_TRAINING, "2/3      2.6G" },
        /* The last redraw is a validation bar: validating, even after the epoch's bar. */
        { "validation is the last redraw", EPOCH1_BARS VAL_BARS, 0, GW_PHASE_VALIDATING,
          "Class     Images  Instances      Box(P" },
        /* The results line ends the pass: validated, nothing to protect; a
         * job hung right after it is hung, not validating. */
        { "summary under its header", EPOCH1_BARS VAL_BARS "\r" VAL_HDR ": 100%| 4/4\n" ALL_LINE, 0, GW_PHASE_VALIDATED,
          "all        128        929" },
        { "summary with an open line after it", EPOCH1_BARS VAL_BARS "\r" VAL_HDR ": 100%| 4/4\n" ALL_LINE "\n  \r", 0,
          GW_PHASE_VALIDATED, "all        128        929" },
        /* The next epoch's validation, with the previous summary further up: still running. */
        { "validating again after a summary", EPOCH1_BARS VAL_BARS "\n" ALL_LINE EPOCH1_BARS VAL_BARS, 0,
          GW_PHASE_VALIDATING, "Class     Images  Instances      Box(P" },
        /* The final validation prints classes after "all", then timings: still over. */
        { "final validation done",
          VAL_HDR ": 100%| 4/4 [00:01<00:00]\n" ALL_LINE
                  "                person        128        254      0.696      0.639      0.691      0.493\n"
                  "                   car        128         46      0.546      0.217      0.301      0.184\n"
                  "Speed: 0.1ms preprocess, 0.9ms inference, 0.0ms loss, 1.2ms postprocess per image\n"
                  "Results saved to " BLUE_BOLD "runs/detect/train" RESET "\n",
          0, GW_PHASE_VALIDATED, "all        128        929" },
        /* A loader hung at the start of epoch 2: the summary is still in the window, but the
         * header and bar of the new epoch say training. */
        { "next epoch after the summary",
          EPOCH1_BARS VAL_BARS "\n" ALL_LINE "\n" EPOCH_HDR "\r  0%|          | 0/8 [00:00<?, ?it/s]", 0,
          GW_PHASE_TRAINING, "Epoch    GPU_mem" },
        { "summary without a header", "step 1\nstep 2\n" ALL_LINE, 0, GW_PHASE_UNKNOWN, "all " },
        { "header beyond the window", VAL_HDR "\nx\ny\nz\n" ALL_LINE, 3, GW_PHASE_UNKNOWN, "all " },
        { "start of training (val: scan)", log_start, 0, GW_PHASE_VALIDATING, "val: Scanning /data/coco128" },
        { "val: scan beyond the window", log_start, 3, GW_PHASE_UNKNOWN, "Starting training" },
        { "final validation",
          "Optimizer stripped from runs/detect/train/weights/last.pt, 6.2MB\n"
          "Optimizer stripped from runs/detect/train/weights/best.pt, 6.2MB\n\n"
          "Validating runs/detect/train/weights/best.pt...\n"
          "Ultralytics YOLOv8.1.0 \xf0\x9f\x9a\x80 Python-3.11.4 torch-2.1.0 CUDA:0\n"
          "Model summary (fused): 168 layers, 3151904 parameters, 0 gradients, 8.7 GFLOPs\n",
          0, GW_PHASE_VALIDATING, "Validating runs/detect/train/weights/best.pt..." },
        { "optimizer stripped", "      3/3 ...\nOptimizer stripped from runs/detect/train/weights/last.pt, 6.2MB\n", 0,
          GW_PHASE_SAVING, "Optimizer stripped from" },
        { "OSC title and saving",
          ESC "]0;job 17"
              "\x07"
              "Saving model checkpoint to out/checkpoint-500" ESC "[K\n",
          0, GW_PHASE_SAVING, "Saving model checkpoint to out/checkpoint-500" },
        { "OSC with ST",
          ESC "]2;t" ESC "\\"
              "loss=0.3\n",
          0, GW_PHASE_UNKNOWN, "loss=0.3" },
        { "torn escape at the end", "step 7 " ESC "[3", 0, GW_PHASE_UNKNOWN, "step 7" },
        { "case-sensitive", "saving nothing\nvalidating\n", 0, GW_PHASE_UNKNOWN, "validating" },
        /* task=classify (ClassificationValidator): its own header and results line. */
        { "classify validating", CLS_EPOCH_BAR CLS_VAL ":  50%| 2/4 [00:00<00:00,  3.01it/s]", 0, GW_PHASE_VALIDATING,
          "classes   top1_acc   top5_acc:  50%" },
        { "classify validated",
          CLS_EPOCH_BAR CLS_VAL ": 100%| 4/4 [00:01<00:00]\n"
                                "                   all      0.523      0.861\n",
          0, GW_PHASE_VALIDATED, "all      0.523" },
};

static void phase_table(void **state) {
        for (size_t i = 0; i < N_ELEMS(phase_cases); i++) {
                struct gw_phase_rules rules = { gw_phase_patterns_default, gw_phase_patterns_default_n,
                                                phase_cases[i].last_lines };
                struct gw_phase_result res;
                const char *want = phase_cases[i].line_prefix;
                int r = gw_phase_from_log(phase_cases[i].tail, strlen(phase_cases[i].tail),
                                          phase_cases[i].last_lines ? &rules : NULL, &res);

                if (r != 0 || res.phase != phase_cases[i].phase)
                        fail_msg("%s: ret %d phase %s, want %s (line \"%s\")", phase_cases[i].name, r,
                                 gw_phase_name(res.phase), gw_phase_name(phase_cases[i].phase), res.line);
                if (strncmp(res.line, want, strlen(want)) != 0 || (!*want && *res.line))
                        fail_msg("%s: line \"%s\", want \"%s...\"", phase_cases[i].name, res.line, want);
                assert_null(strchr(res.line, '\x1b'));
                assert_null(strchr(res.line, '\r'));
        }
}

/* Strict UTF-8 check (no overlong forms, no surrogates), as jansson applies. */
static bool utf8_valid(const char *s) {
        const unsigned char *p = (const unsigned char *) s;

        while (*p) {
                size_t len = *p < 0x80                  ? 1
                             : *p >= 0xc2 && *p <= 0xdf ? 2
                             : *p >= 0xe0 && *p <= 0xef ? 3
                             : *p >= 0xf0 && *p <= 0xf4 ? 4
                                                        : 0;
                if (len == 0)
                        return false;
                if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) || (p[0] == 0xf0 && p[1] < 0x90) ||
                    (p[0] == 0xf4 && p[1] > 0x8f))
                        return false;
                for (size_t i = 1; i < len; i++)
                        if ((p[i] & 0xc0) != 0x80)
                                return false;
                p += len;
        }
        return true;
}

static void phase_custom_rules(void **state) {
        static const struct gw_phase_pattern pats[] = {
                { GW_PHASE_VALIDATING, GW_MATCH_SUBSTR, "Evaluating", false },
                { GW_PHASE_SAVING, GW_MATCH_PREFIX, "ckpt", false },
                { GW_PHASE_SAVING, GW_MATCH_SUBSTR, "", false }, /* ignored: matches all */
                { GW_PHASE_TRAINING, GW_MATCH_SUBSTR, "it/s]", false },
        };
        struct gw_phase_rules rules = { pats, N_ELEMS(pats), 4 };
        static const char hf[] = "{'loss': 0.41, 'epoch': 1.0}\n"
                                 " 12%|#2        | 60/500 [00:30<03:40,  2.0it/s]\n"
                                 "***** Running Evaluation *****\n"
                                 "\rEvaluating:  30%|###       | 3/10";
        struct gw_phase_result res;
        char big[3000];

        assert_int_equal(gw_phase_from_log(hf, strlen(hf), &rules, &res), 0);
        assert_int_equal(res.phase, GW_PHASE_VALIDATING);
        assert_string_equal(res.line, "Evaluating:  30%|###       | 3/10");

        assert_int_equal(gw_phase_from_log("  ckpt 3 written\n", 17, &rules, &res), 0);
        assert_int_equal(res.phase, GW_PHASE_SAVING);
        assert_int_equal(gw_phase_from_log("a ckpt\n", 7, &rules, &res), 0);
        assert_int_equal(res.phase, GW_PHASE_UNKNOWN); /* prefix, not substring */

        /* A very long line is cut in the evidence, not rejected. */
        memset(big, 'x', sizeof(big));
        memcpy(big, "Evaluating ", 11);
        assert_int_equal(gw_phase_from_log(big, sizeof(big), &rules, &res), 0);
        assert_int_equal(res.phase, GW_PHASE_VALIDATING);
        assert_int_equal(strlen(res.line), GW_PHASE_LINE_MAX - 1);

        /* Not UTF-8 in, UTF-8 out (the evidence goes out as JSON): junk as '?', and a
         * character is never cut in two by the length limit. */
        memset(big, 'x', sizeof(big));
        memcpy(big, "Evaluating \xff\xc0\xaf\xed\xa0\x80 ok", 20);
        for (size_t i = 151; i + 3 <= 200; i += 3)
                memcpy(big + i, "\xe2\x96\x88", 3);
        assert_int_equal(gw_phase_from_log(big, 200, &rules, &res), 0);
        assert_int_equal(res.phase, GW_PHASE_VALIDATING);
        assert_memory_equal(res.line, "Evaluating ?????? ok", 20);
        assert_true(utf8_valid(res.line));
        assert_int_equal(strlen(res.line), GW_PHASE_LINE_MAX - 3); /* 157: the 159th is split */

        rules.patterns = NULL;
        assert_int_equal(gw_phase_from_log("x", 1, &rules, &res), -EINVAL);
        assert_int_equal(gw_phase_from_log(NULL, 1, NULL, &res), -EINVAL);
        assert_int_equal(gw_phase_from_log("x", 1, NULL, NULL), -EINVAL);
        assert_string_equal(gw_phase_name(GW_PHASE_SAVING), "saving");
        assert_string_equal(gw_phase_name(GW_PHASE_VALIDATED), "validated");
        assert_null(gw_phase_name(_GW_PHASE_MAX));
        assert_null(gw_phase_name(_GW_PHASE_INVALID));
}

/* ---- which results.csv is a job's own ---- */

static bool training(bool yolo, const char *const *argv) {
        size_t argc = 0;

        while (argv[argc])
                argc++;
        return gw_run_is_training(argv, argc, yolo);
}

static void run_is_training(void **state) {
        (void) state;
        /* A job that trains by its own words, or one submitted as an Ultralytics run. */
        assert_true(training(false, (const char *const[]){ "gw-fake-trainer", "epochs=10", NULL }));
        assert_true(training(false, (const char *const[]){ "yolo", "train", "name=exp", NULL }));
        assert_true(training(false, (const char *const[]){ "python", "train.py", "--project", "runs/x", NULL }));
        assert_true(training(false, (const char *const[]){ "python", "train.py", "--epochs=3", NULL }));
        assert_true(training(false, (const char *const[]){ "trainer", "resume", "model=a/weights/last.pt", NULL }));
        assert_true(training(false, (const char *const[]){ "python3", "run.py", "resume=a/weights/last.pt", NULL }));
        assert_true(training(true, (const char *const[]){ "./run.sh", NULL }));
        /* Ultralytics' Python API, called from a script that says it trains. */
        assert_true(training(false, (const char *const[]){ "python3", "train.py", NULL }));
        assert_true(training(false, (const char *const[]){ "torchrun", "--nproc=2", "tools/Train_Net.py", NULL }));
        assert_true(training(false, (const char *const[]){ "/opt/bin/yolo-trainer", NULL }));
        /* A sleep, a build, a word that only looks like one: no run of its own. */
        assert_false(training(false, (const char *const[]){ "sleep", "20", NULL }));
        assert_false(training(false, (const char *const[]){ "python3", "eval.py", "/data/trainset", NULL }));
        assert_false(training(false, (const char *const[]){ "make", "-j8", "names=x", "--epochsish", NULL }));
        assert_false(training(false, (const char *const[]){ "epochs=3", NULL })); /* the program itself */
        assert_false(gw_run_is_training(NULL, 0, false));
        assert_true(gw_run_is_training(NULL, 0, true));
}

static void run_reuses_dir(void **state) {
        (void) state;
        assert_true(gw_run_reuses_dir((const char *const[]){ "yolo", "train", "exist_ok=True" }, 3));
        assert_true(gw_run_reuses_dir((const char *const[]){ "python", "train.py", "--exist-ok" }, 3));
        assert_true(gw_run_reuses_dir((const char *const[]){ "python", "train.py", "--exist_ok" }, 3));
        assert_false(gw_run_reuses_dir((const char *const[]){ "yolo", "train", "exist_ok=False" }, 3));
        assert_false(gw_run_reuses_dir((const char *const[]){ "yolo", "train", "exist_ok=True", "exist_ok=False" }, 4));
        assert_false(gw_run_reuses_dir((const char *const[]){ "yolo", "train" }, 2));
        assert_false(gw_run_reuses_dir(NULL, 0));
}

static void run_results_fresh(void **state) {
        const gw_usec_t s = GW_USEC_PER_SEC, start = 1000 * s;

        (void) state;
        /* Created and written during the attempt: its own. */
        assert_true(gw_run_results_fresh(start, start + 30 * s, start + 20 * s, false));
        /* Written before the attempt: an older run. */
        assert_false(gw_run_results_fresh(start, start - 5 * s, start - 60 * s, false));
        assert_false(gw_run_results_fresh(start, start - 5 * s, 0, true));
        /* Still being written, but begun by another process before the attempt. */
        assert_false(gw_run_results_fresh(start, start + 30 * s, start - 60 * s, false));
        /* ... unless the command reuses its run directory, or the filesystem keeps no birth time. */
        assert_true(gw_run_results_fresh(start, start + 30 * s, start - 60 * s, true));
        assert_true(gw_run_results_fresh(start, start + 30 * s, 0, false));
        /* Coarse file times: a second of slack either way. */
        assert_true(gw_run_results_fresh(start, start - s / 2, start - s / 2, false));
        assert_false(gw_run_results_fresh(start, start + s, start - 2 * s, false));
}

/* The rows past a checkpoint's epoch go aside: a kill between epoch 2's row and last.pt left
 * a checkpoint of epoch 1, and the resumed run writes epoch 2 again. */
static void results_split_at_checkpoint(void **state) {
        static const char csv[] = "                  epoch,      train/box_loss\n"
                                  "                      1,             1.0\n"
                                  "junk\n"
                                  "                      2,             0.9\r\n"
                                  "\n"
                                  "                      3,             0.8\n"
                                  "                      4,  0.7";
        struct gw_results_split sp;

        assert_int_equal(gw_results_split(csv, sizeof(csv) - 1, 1, &sp), 0);
        assert_int_equal(sp.n_aside, 3);
        assert_int_equal(sp.kept_len, strlen("                  epoch,      train/box_loss\n"
                                             "                      1,             1.0\njunk\n\n"));
        assert_memory_equal(sp.kept,
                            "                  epoch,      train/box_loss\n"
                            "                      1,             1.0\njunk\n\n",
                            sp.kept_len);
        static const char aside[] = "                  epoch,      train/box_loss\n"
                                    "                      2,             0.9\r\n"
                                    "                      3,             0.8\n"
                                    "                      4,  0.7\n"; /* torn: ended */
        assert_int_equal(sp.aside_len, sizeof(aside) - 1);
        assert_memory_equal(sp.aside, aside, sp.aside_len);
        gw_results_split_free(&sp);
        gw_results_split_free(&sp); /* leaves it empty */

        /* Every row held: nothing aside, the file as it was. */
        static const char held[] = "epoch,loss\n1,1\n2,0.9\n";
        assert_int_equal(gw_results_split(held, sizeof(held) - 1, 2, &sp), 0);
        assert_int_equal(sp.n_aside, 0);
        assert_int_equal(sp.kept_len, sizeof(held) - 1);
        assert_memory_equal(sp.kept, held, sp.kept_len);
        gw_results_split_free(&sp);

        /* Counted from 0 (YOLOv5, Ultralytics 8.0): row "1" is the second epoch. */
        static const char zero[] = "epoch,loss\n0,1\n1,0.9\n2,0.8\n";
        assert_int_equal(gw_results_split(zero, sizeof(zero) - 1, 2, &sp), 0);
        assert_int_equal(sp.n_aside, 1);
        assert_memory_equal(sp.kept, "epoch,loss\n0,1\n1,0.9\n", sp.kept_len);
        assert_memory_equal(sp.aside, "epoch,loss\n2,0.8\n", sp.aside_len);
        gw_results_split_free(&sp);

        /* Rows written twice (an earlier resume): every copy past the epoch goes. */
        static const char twice[] = "epoch,loss\n1,1\n2,0.9\n2,0.8\n3,0.7\n";
        assert_int_equal(gw_results_split(twice, sizeof(twice) - 1, 1, &sp), 0);
        assert_int_equal(sp.n_aside, 3);
        gw_results_split_free(&sp);

        assert_int_equal(gw_results_split("epoch", 5, 1, &sp), -ENODATA);
        assert_int_equal(gw_results_split("a,b\n1,2\n", 8, 1, &sp), -EBADMSG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(run_is_training),
                cmocka_unit_test(run_reuses_dir),
                cmocka_unit_test(run_results_fresh),
                cmocka_unit_test(results_split_at_checkpoint),
                cmocka_unit_test(results_v8_dedup_and_partial),
                cmocka_unit_test(results_v5_zero_based),
                cmocka_unit_test(results_newer_with_time),
                cmocka_unit_test(results_tasks_and_fitness),
                cmocka_unit_test(results_restart_and_junk),
                cmocka_unit_test(results_errors),
                cmocka_unit_test(results_many_rows),
                cmocka_unit_test(yaml_epochs),
                cmocka_unit_test(argv_epochs),
                cmocka_unit_test(progress_file),
                cmocka_unit_test(phase_table),
                cmocka_unit_test(phase_custom_rules),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
