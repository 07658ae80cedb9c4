/* Where an Ultralytics run writes, read from what the job told: its command, its cwd and the
 * lines its own log printed (docs/ULTRALYTICS-FORMATS.md rows 18 to 20, 28).  The one reading
 * of a command's Ultralytics settings: the idle watch, training awareness and the retry's
 * resume all ask here, so they agree on a job's run.
 *
 * Ultralytics' rules (cfg/__init__.py get_save_dir, engine/trainer.py): the run folder is
 * PROJECT/NAME, PROJECT defaulting to RUNS_DIR/TASK ("runs" under the cwd) and NAME to the
 * mode ("train"); a new run takes NAME, NAME2, NAME3 ... unless exist_ok; a resumed run is
 * the checkpoint's own folder (RUN/weights/last.pt).  When training starts it prints
 * "Logging results to RUN" (RUN in bold: ESC[1m ... ESC[0m).
 *
 * Pure: no I/O, no clock; text need not be NUL-terminated. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define GW_YOLO_PATH_MAX 4096
#define GW_YOLO_NAME_MAX 256
#define GW_YOLO_TASK_MAX 16

/* The value of "key=V", "--key=V" or "--key V" (YOLOv5's form) in argv[1..]; the last one wins,
 * as in both CLIs.  *ret_bare (may be NULL) tells the "--key" form, whose value may be a flag's
 * next word ("" when it is the last word).  NULL when absent.  Points into argv. */
const char *gw_yolo_arg(const char *const *argv, size_t argc, const char *key, bool *ret_bare);

/* Whether argv[1..] holds word exactly ("resume", "--exist-ok"). */
bool gw_yolo_has_word(const char *const *argv, size_t argc, const char *word);

/* The last "Logging results to RUN" line of a log, escapes removed, in buf (n bytes): 0,
 * -ENOENT when there is none, -ENAMETOOLONG. */
int gw_yolo_log_save_dir(const char *log, size_t len, char *buf, size_t n);

struct gw_yolo_input {
        const char *const *argv; /* the command; argc words (NULLs are skipped) */
        size_t argc;
        const char *cwd; /* the job's; relative paths are joined to it; NULL: kept */
        const char *log; /* the job's own log of this attempt, its head; may be NULL */
        size_t log_len;
        bool yolo; /* submitted as an Ultralytics job (--yolo) */
        const char *resume_from; /* the checkpoint the daemon's retry resumes, or NULL: it
                                       * wins over the command's own */
};

enum gw_yolo_evidence {
        GW_YOLO_NONE, /* nothing says which run: none is credited to the job */
        GW_YOLO_NAMED, /* the command names PROJECT and/or NAME: base/NAME*, one
                                       * of which is its run (exist_ok: base/NAME; else the one
                                       * no other job could have made) */
        GW_YOLO_CHECKPOINT, /* the command resumes a checkpoint: run_dir */
        GW_YOLO_LOG, /* its own log said where it saves: run_dir */
};

struct gw_yolo_run {
        bool training; /* gw_run_is_training (core/progress.h), or its log names its run */
        bool resumed; /* a bare "resume", resume=True or resume=PATH */
        bool exist_ok; /* the run folder is reused: an older results.csv may be its */
        enum gw_yolo_evidence evidence;
        bool named; /* the command gives PROJECT or NAME (whatever else it says) */
        char task[GW_YOLO_TASK_MAX]; /* detect, segment, ...; "" when the command does not say */
        char name[GW_YOLO_NAME_MAX]; /* the name= given, "" when none (then any NAME matches) */
        char ckpt[GW_YOLO_PATH_MAX]; /* the resumed checkpoint, "" when none */
        char run_dir[GW_YOLO_PATH_MAX]; /* the exact run folder (LOG or CHECKPOINT), else "" */
        /* Where new runs of this command are made: PROJECT, else RUNS/TASK, else (task not
         * known) RUNS with each entry a task folder (any_task). */
        char base[GW_YOLO_PATH_MAX];
        bool any_task;
};

/* Resolves in into *ret.  0; -EINVAL for a NULL argument; -ENAMETOOLONG when a path does not
 * fit.  Copies what it keeps. */
int gw_yolo_resolve(const struct gw_yolo_input *in, struct gw_yolo_run *ret);

/* Whether dir (a run folder: parent/ENTRY, as gw_yolo_resolve joins paths) is one this job's
 * command could have written: its exact run_dir when it has one, else an entry of base (of a
 * task folder of base with any_task) whose name is NAME or NAMEk (NAME "" matches any). */
bool gw_yolo_could_own(const struct gw_yolo_run *r, const char *dir);

/* Whether entry is NAME or NAME followed by digits (increment_path: NAME2, NAME3, ...). */
bool gw_yolo_name_matches(const char *entry, const char *name);

/* The one run folder the job's own evidence names, in buf: the folder its log says it saves
 * to, else the checkpoint it resumes, else PROJECT/NAME (or runs/TASK/NAME) when the command
 * also says exist_ok (Ultralytics then makes no NAME2).  0; -ENOENT when it names no single
 * folder: only a command that names its run (GW_YOLO_NAMED) may then be credited one of
 * NAME, NAME2 ..., and a command that names none (GW_YOLO_NONE) none at all, never the
 * newest run next to it; -ENAMETOOLONG. */
int gw_yolo_own_dir(const struct gw_yolo_run *r, char *buf, size_t n);
