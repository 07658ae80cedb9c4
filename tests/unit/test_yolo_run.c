#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/yolo_run.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define MAXW 12

/* One command as users write it, and where Ultralytics (docs/ULTRALYTICS-FORMATS.md rows
 * 18 to 20, 28) puts its run. */
struct run_case {
        const char *what;
        const char *argv[MAXW];
        bool yolo;
        const char *log; /* the job's own log, or NULL */
        const char *resume_from; /* the daemon's retry checkpoint */
        bool training, resumed, exist_ok, any_task;
        enum gw_yolo_evidence evidence;
        const char *task, *name, *base, *run_dir, *ckpt;
};

static const struct run_case cases[] = {
        { "yolo train, defaults: runs/detect/train*",
          { "yolo", "train", "data=coco8.yaml" },
          false,
          NULL,
          NULL,
          true,
          false,
          false,
          false,
          GW_YOLO_NONE,
          "detect",
          "",
          "/w/runs/detect",
          "",
          "" },
        { "yolo detect train name=exp",
          { "yolo", "detect", "train", "name=exp", "epochs=3" },
          false,
          NULL,
          NULL,
          true,
          false,
          false,
          false,
          GW_YOLO_NAMED,
          "detect",
          "exp",
          "/w/runs/detect",
          "",
          "" },
        { "yolo segment train project=out exist_ok",
          { "yolo", "segment", "train", "project=out", "exist_ok=True" },
          false,
          NULL,
          NULL,
          true,
          false,
          true,
          false,
          GW_YOLO_NAMED,
          "segment",
          "",
          "/w/out",
          "",
          "" },
        { "task from the model's name",
          { "yolo", "train", "model=yolo11n-pose.pt", "name=p" },
          false,
          NULL,
          NULL,
          true,
          false,
          false,
          false,
          GW_YOLO_NAMED,
          "pose",
          "p",
          "/w/runs/pose",
          "",
          "" },
        { "task= wins over the model",
          { "yolo", "train", "task=obb", "model=yolov8n.pt" },
          false,
          NULL,
          NULL,
          true,
          false,
          false,
          false,
          GW_YOLO_NONE,
          "obb",
          "",
          "/w/runs/obb",
          "",
          "" },
        { "a custom model: task not known",
          { "yolo", "train", "model=best.pt" },
          false,
          NULL,
          NULL,
          true,
          false,
          false,
          true,
          GW_YOLO_NONE,
          "",
          "",
          "/w/runs",
          "",
          "" },
        { "python train.py (model.train() in Python)",
          { "python3", "train.py" },
          false,
          NULL,
          NULL,
          true,
          false,
          false,
          true,
          GW_YOLO_NONE,
          "",
          "",
          "/w/runs",
          "",
          "" },
        { "python train.py whose log says where",
          { "python3", "train.py" },
          false,
          "Ultralytics 8.3.1\nLogging results to \x1b[1mruns/segment/train3\x1b[0m\nStarting training for 3 epochs...\n",
          NULL,
          true,
          false,
          false,
          true,
          GW_YOLO_LOG,
          "",
          "",
          "/w/runs",
          "/w/runs/segment/train3",
          "" },
        { "an absolute save folder in the log",
          { "python3", "train.py" },
          false,
          "Logging results to /data/exp/run2\n",
          NULL,
          true,
          false,
          false,
          true,
          GW_YOLO_LOG,
          "",
          "",
          "/w/runs",
          "/data/exp/run2",
          "" },
        { "a half-written log line does not count",
          { "python3", "train.py" },
          false,
          "Logging results to runs/detect/tr",
          NULL,
          true,
          false,
          false,
          true,
          GW_YOLO_NONE,
          "",
          "",
          "/w/runs",
          "",
          "" },
        { "resume=PATH",
          { "yolo", "train", "resume=runs/detect/exp/weights/last.pt" },
          false,
          NULL,
          NULL,
          true,
          true,
          false,
          false,
          GW_YOLO_CHECKPOINT,
          "detect",
          "",
          "/w/runs/detect",
          "/w/runs/detect/exp",
          "/w/runs/detect/exp/weights/last.pt" },
        { "bare resume with model= (its task is the checkpoint's)",
          { "yolo", "train", "resume", "model=/abs/r/weights/last.pt" },
          false,
          NULL,
          NULL,
          true,
          true,
          false,
          true,
          GW_YOLO_CHECKPOINT,
          "",
          "",
          "/w/runs",
          "/abs/r",
          "/abs/r/weights/last.pt" },
        { "resume=True alone: no path",
          { "yolo", "train", "resume=True" },
          false,
          NULL,
          NULL,
          true,
          true,
          false,
          false,
          GW_YOLO_NONE,
          "detect",
          "",
          "/w/runs/detect",
          "",
          "" },
        { "resume=False is a new run",
          { "yolo", "train", "resume=False", "name=n" },
          false,
          NULL,
          NULL,
          true,
          false,
          false,
          false,
          GW_YOLO_NAMED,
          "detect",
          "n",
          "/w/runs/detect",
          "",
          "" },
        { "the daemon's retry checkpoint wins",
          { "gw-fake-trainer", "epochs=8", "name=crashy" },
          true,
          NULL,
          "runs/detect/crashy/weights/last.pt",
          true,
          true,
          false,
          true,
          GW_YOLO_CHECKPOINT,
          "",
          "crashy",
          "/w/runs",
          "/w/runs/detect/crashy",
          "/w/runs/detect/crashy/weights/last.pt" },
        { "the last of two name= wins",
          { "yolo", "train", "name=a", "name=b" },
          false,
          NULL,
          NULL,
          true,
          false,
          false,
          false,
          GW_YOLO_NAMED,
          "detect",
          "b",
          "/w/runs/detect",
          "",
          "" },
        { "YOLOv5 --project --name --exist-ok",
          { "python", "train.py", "--project", "./v5/", "--name", "e", "--exist-ok" },
          false,
          NULL,
          NULL,
          true,
          false,
          true,
          false,
          GW_YOLO_NAMED,
          "",
          "e",
          "/w/v5",
          "",
          "" },
        { "not a training run",
          { "sleep", "30" },
          false,
          NULL,
          NULL,
          false,
          false,
          false,
          true,
          GW_YOLO_NONE,
          "",
          "",
          "/w/runs",
          "",
          "" },
};

static size_t argc_of(const char *const *argv) {
        size_t n = 0;
        while (n < MAXW && argv[n])
                n++;
        return n;
}

static void resolve_table(void **state) {
        (void) state;
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                const struct run_case *c = &cases[i];
                struct gw_yolo_input in = { .argv = c->argv,
                                            .argc = argc_of(c->argv),
                                            .cwd = "/w",
                                            .log = c->log,
                                            .log_len = c->log ? strlen(c->log) : 0,
                                            .yolo = c->yolo,
                                            .resume_from = c->resume_from };
                struct gw_yolo_run r;
                print_message("%s\n", c->what);
                assert_int_equal(gw_yolo_resolve(&in, &r), 0);
                assert_int_equal(r.training, c->training);
                assert_int_equal(r.resumed, c->resumed);
                assert_int_equal(r.exist_ok, c->exist_ok);
                assert_int_equal(r.any_task, c->any_task);
                assert_int_equal(r.evidence, c->evidence);
                assert_int_equal(r.named, c->evidence == GW_YOLO_NAMED || c->name[0]);
                assert_string_equal(r.task, c->task);
                assert_string_equal(r.name, c->name);
                assert_string_equal(r.base, c->base);
                assert_string_equal(r.run_dir, c->run_dir);
                assert_string_equal(r.ckpt, c->ckpt);
        }
}

static void could_own(void **state) {
        (void) state;
        struct gw_yolo_run r;
        const char *named[] = { "gw-fake-trainer", "name=crashy" }, *plain[] = { "python3", "train.py" };
        const char *detect[] = { "yolo", "detect", "train" };
        struct gw_yolo_input in = { .argv = named, .argc = 2, .cwd = "/w" };

        assert_int_equal(gw_yolo_resolve(&in, &r), 0);
        assert_true(gw_yolo_could_own(&r, "/w/runs/detect/crashy"));
        assert_true(gw_yolo_could_own(&r, "/w/runs/segment/crashy12"));
        assert_false(gw_yolo_could_own(&r, "/w/runs/detect/train"));
        assert_false(gw_yolo_could_own(&r, "/w/runs/detect/crashyx"));
        assert_false(gw_yolo_could_own(&r, "/w/runs/crashy"));
        assert_false(gw_yolo_could_own(&r, "/elsewhere/runs/detect/crashy"));
        in = (struct gw_yolo_input){ .argv = plain, .argc = 2, .cwd = "/w" };
        assert_int_equal(gw_yolo_resolve(&in, &r), 0);
        assert_true(gw_yolo_could_own(&r, "/w/runs/detect/crashy")); /* no name: any run */
        in.log = "Logging results to runs/detect/train2\n";
        in.log_len = strlen(in.log);
        assert_int_equal(gw_yolo_resolve(&in, &r), 0);
        assert_false(gw_yolo_could_own(&r, "/w/runs/detect/crashy")); /* it said where it saves */
        assert_true(gw_yolo_could_own(&r, "/w/runs/detect/train2"));
        in = (struct gw_yolo_input){ .argv = detect, .argc = 3, .cwd = "/w" };
        assert_int_equal(gw_yolo_resolve(&in, &r), 0);
        assert_true(gw_yolo_could_own(&r, "/w/runs/detect/train"));
        assert_false(gw_yolo_could_own(&r, "/w/runs/segment/train"));
}

/* A run is the job's only where its own evidence names one folder. */
static void own_dir(void **state) {
        (void) state;
        struct gw_yolo_run r;
        char dir[256];
        const char *named[] = { "gw-fake-trainer", "name=crashy" }, *plain[] = { "python3", "train.py" };
        const char *exist[] = { "yolo", "detect", "train", "name=crashy", "exist_ok=True" };
        const char *shell[] = { "sh", "-c", "yolo train data=coco8.yaml name=sweep$GPUWARD_ARRAY_INDEX" };
        struct gw_yolo_input in = { .argv = named, .argc = 2, .cwd = "/w" };

        assert_int_equal(gw_yolo_resolve(&in, &r), 0);
        assert_int_equal(gw_yolo_own_dir(&r, dir, sizeof dir), -ENOENT); /* crashy, crashy2 ...: which? */
        in = (struct gw_yolo_input){ .argv = plain, .argc = 2, .cwd = "/w" };
        assert_int_equal(gw_yolo_resolve(&in, &r), 0);
        assert_int_equal(gw_yolo_own_dir(&r, dir, sizeof dir), -ENOENT); /* never the newest run */
        in.log = "Logging results to \x1b[1mruns/detect/train2\x1b[0m\n";
        in.log_len = strlen(in.log);
        assert_int_equal(gw_yolo_resolve(&in, &r), 0);
        assert_int_equal(gw_yolo_own_dir(&r, dir, sizeof dir), 0);
        assert_string_equal(dir, "/w/runs/detect/train2");
        in = (struct gw_yolo_input){ .argv = exist, .argc = 5, .cwd = "/w" };
        assert_int_equal(gw_yolo_resolve(&in, &r), 0);
        assert_int_equal(gw_yolo_own_dir(&r, dir, sizeof dir), 0);
        assert_string_equal(dir, "/w/runs/detect/crashy");
        /* Under sh -c the command says nothing Ultralytics would read; its log does. */
        in = (struct gw_yolo_input){ .argv = shell, .argc = 3, .cwd = "/w" };
        assert_int_equal(gw_yolo_resolve(&in, &r), 0);
        assert_false(r.training);
        assert_int_equal(gw_yolo_own_dir(&r, dir, sizeof dir), -ENOENT);
        in.log = "Logging results to /w/runs/detect/sweep1\n";
        in.log_len = strlen(in.log);
        assert_int_equal(gw_yolo_resolve(&in, &r), 0);
        assert_true(r.training);
        assert_int_equal(gw_yolo_own_dir(&r, dir, sizeof dir), 0);
        assert_string_equal(dir, "/w/runs/detect/sweep1");
}

static void args_and_log(void **state) {
        (void) state;
        const char *argv[] = { "python", "train.py", "--epochs", "5", "--name=x", "--exist_ok" };
        char buf[64];
        bool bare;

        assert_string_equal(gw_yolo_arg(argv, 6, "epochs", &bare), "5");
        assert_true(bare);
        assert_string_equal(gw_yolo_arg(argv, 6, "name", &bare), "x");
        assert_false(bare);
        assert_string_equal(gw_yolo_arg(argv, 6, "exist_ok", &bare), "");
        assert_true(bare);
        assert_null(gw_yolo_arg(argv, 6, "project", NULL));
        assert_null(gw_yolo_arg(argv, 1, "epochs", NULL)); /* argv[0] is the program */
        assert_true(gw_yolo_name_matches("train12", "train"));
        assert_false(gw_yolo_name_matches("train_b", "train"));
        assert_true(gw_yolo_name_matches("anything", ""));
        assert_false(gw_yolo_name_matches(".hidden", ""));
        /* The last of two trainings in one log (a second model.train() in one script). */
        const char *log = "Logging results to \x1b[1mruns/detect/a\x1b[0m\r\nx\nLogging results to runs/detect/b\n";
        assert_int_equal(gw_yolo_log_save_dir(log, strlen(log), buf, sizeof buf), 0);
        assert_string_equal(buf, "runs/detect/b");
        assert_int_equal(gw_yolo_log_save_dir(log, 42, buf, sizeof buf), 0);
        assert_string_equal(buf, "runs/detect/a");
        assert_int_equal(gw_yolo_log_save_dir("nothing\n", 8, buf, sizeof buf), -ENOENT);
        assert_int_equal(gw_yolo_log_save_dir(log, strlen(log), buf, 4), -ENAMETOOLONG);
        assert_int_equal(gw_yolo_log_save_dir(NULL, 3, buf, sizeof buf), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(resolve_table),
                cmocka_unit_test(could_own),
                cmocka_unit_test(own_dir),
                cmocka_unit_test(args_and_log),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
