/* gpuward submit: options, #GPUWARD directives, local checks, POST /api/v1/jobs. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/verbs.h"
#include "cli/submit.h"
#include "cli/wait.h"
#include "core/directive.h"
#include "core/jobarray.h"
#include "core/model.h"
#include "core/retry.h"
#include "core/sbatch_words.h"

extern char **environ;

/* Directives live at the top of a script; no need to read a whole dataset by mistake. */
#define SCRIPT_HEAD_MAX (1024 * 1024)

static const char submit_help[] =
        "Usage: gpuward submit [OPTIONS] -- COMMAND [ARGS...]\n"
        "       gpuward submit [OPTIONS] SCRIPT [ARGS...]\n"
        "\n"
        "Queue a job.  It starts when enough GPUs are free, in the directory and with the\n"
        "environment of this shell, with CUDA_VISIBLE_DEVICES set to the GPUs it was given.\n"
        "A SCRIPT may carry options in '#GPUWARD' lines at its top, as sbatch reads '#SBATCH';\n"
        "its '#SBATCH' lines are read too, in sbatch's words (--gres=gpu:N, -G, -t, -J, -o,\n"
        "-a, -d afterok:ID, -D, --signal, -H; --gres=gpu:1g.10gb:2, or with Slurm's type name\n"
        "gpu:a100_1g.10gb:2, is --gpus 1g.10gb:2: MIG slices), with a note for each gpuward\n"
        "does not take (-e: stderr goes with stdout); '#GPUWARD' lines win over them, options\n"
        "on the command line over both.  A SCRIPT that is not executable runs with the interpreter\n"
        "of its '#!' line, as sbatch runs it; one with Windows (CRLF) line endings is\n"
        "refused (dos2unix FILE).  For python, python3, bash, sh or perl as the command,\n"
        "the script it would run must exist and be readable.  Without '--', a first word that is\n"
        "not a file is taken as a command looked up in PATH.  gpuwardd checks the command\n"
        "as the job will run it (in its directory, with its PATH, as you) and refuses one\n"
        "that is not there or not executable, unless the job waits on another (--after).\n"
        "\n"
        "Options:\n"
        "  -G, --gpus N      GPUs the job needs (default 1; -g as for 'gpuward run')\n"
        "  -G, --gpus PROFILE[:COUNT]  COUNT MIG slices of PROFILE instead of whole GPUs\n"
        "                    (1g.10gb:2; COUNT 1 when left out), from one GPU in MIG mode\n"
        "                    unless no GPU holds that many; CUDA_VISIBLE_DEVICES then names\n"
        "                    the slices (MIG-<uuid>,...); not with --gpu-mem, --reservation\n"
        "                    or --array\n"
        "  --gpu-mem SIZE    free memory each GPU must have: 512M, 16G, 80GB (bare number: MiB)\n"
        "  -t, --time DURATION  time limit: 30m or 30min, 1.5h, 1h30m, 90s, 2d, 1:30:00\n"
        "                    (H:MM:SS), 1-12:00:00 (D-HH:MM:SS); a bare number is minutes,\n"
        "                    as sbatch reads it (90 = 1h30m); refused: 30mins, 1hr, 5M, 1.5s,\n"
        "                    1.5h30m (one spelling per unit, a fraction on a lone number);\n"
        "                    default: the daemon's default_time_limit (1d unless the admin\n"
        "                    changed it); at the limit the job gets SIGTERM, then SIGKILL\n"
        "  -J, --name NAME   a name shown by 'gpuward queue'\n"
        "  --cwd DIR         run in DIR (default: the current directory)\n"
        "  --priority N      higher starts first among waiting jobs: -1000 up to your\n"
        "                    maximum, 0 unless an admin grants more (gpuward quota\n"
        "                    shows max_priority; a profile may grant more too)\n"
        "  --after JOB[:ok|:any]  start after JOB completed (ok, the default) or ended (any)\n"
        "  -d DEP            the same in sbatch's words, afterok:JOB or afterany:JOB\n"
        "  -o, --output FILE  write the job's output (stdout and stderr) to FILE, relative\n"
        "                    to --cwd; as in sbatch, %j is the job id, %x its name, %u the\n"
        "                    user, %A the array's id, %a the task's index, %N this host's\n"
        "                    name, %% a '%'\n"
        "  --env K=V         set a variable in the job's environment (repeatable)\n"
        "  --clean-env       start from a minimal environment instead of this shell's\n"
        "  --hold            queue the job held; 'gpuward release JOB' lets it start\n"
        "  --reservation ID  run inside your booking ID ('gpuward reserve'): the job waits\n"
        "                    for its start, runs on its GPUs and gets SIGTERM at its end\n"
        "  --signal SIG[@T]  send SIG (USR1, USR2, HUP, INT, TERM, ...) to the job's main\n"
        "                    process T before its time limit (default: when gpuwardd warns,\n"
        "                    5m; halfway if the limit is shorter), e.g. to save a checkpoint;\n"
        "                    as sbatch --signal B:SIG@T\n"
        "  --dataset PATH    a dataset folder, or an Ultralytics data YAML (its path: and\n"
        "                    train/val/test under it), copied as you into this host's cache\n"
        "                    while the job waits (it holds no GPU meanwhile; the queue says\n"
        "                    'Staging: dataset 1.2 of 3.4 GB, 41%'); the job gets the copy in\n"
        "                    $GPUWARD_DATASET_DIR and, for a YAML, $GPUWARD_DATA_YAML\n"
        "                    (yolo train data=$GPUWARD_DATA_YAML ...); a failed copy is\n"
        "                    retried as --retries/--retry-on say (the source gone: lost; a\n"
        "                    file you may not read: user_error, never retried); on a Slurm\n"
        "                    cluster the node it runs on copies it, inside its allocation,\n"
        "                    and the job's output shows the progress (docs/CLUSTER.md)\n"
        "  --scratch         work in a node-local folder of this host's scratch_dir, made\n"
        "                    for each attempt and given in $GPUWARD_SCRATCH (yolo train\n"
        "                    project=$GPUWARD_SCRATCH/runs ...): each whole checkpoint\n"
        "                    written there (*.pt, results.csv) is copied to the same path\n"
        "                    under --cwd as it appears, the rest when the attempt ends\n"
        "                    (files whose size or time differ); the folder is then removed.\n"
        "                    A retry gets a new one holding the run it resumes from.  On a\n"
        "                    Slurm cluster the job's step does it on its node, and the\n"
        "                    job's output tells each copy (docs/CLUSTER.md)\n"
        "  --wait            wait until the job has ended, say how it ended, and exit 0 only\n"
        "                    when it COMPLETED, else 1 (as sbatch --wait; see 'gpuward wait')\n"
        "  --follow          with --wait: print the job's output as it comes (as 'gpuward\n"
        "                    logs -f'; how it ended goes to stderr), and exit with a code\n"
        "                    that says how it ended, for CI: 0 COMPLETED; FAILED: the\n"
        "                    job's exit code (1 when it had none, was killed by a signal,\n"
        "                    or its code is 0 or one of 123-125); 123 RECLAIMED (stopped\n"
        "                    for holding GPUs idle); 124 TIMEOUT (its time limit); 125\n"
        "                    CANCELLED; 1 when gpuward itself failed (the daemon went\n"
        "                    away), 2 a usage error.  Not with --array\n"
        "  --json            print {\"id\": N} (with --wait: the ended job's JSON)\n"
        "  -q, --quiet       print only the job id\n"
        "  -h, --help        this help\n"
        "\n"
        "When an attempt fails ('gpuward show JOB' lists the attempts, 'gpuward logs\n"
        "--attempt K JOB' prints one):\n"
        "  --retries N       retry up to N times, 0-100 (default: gpuwardd's, usually 3)\n"
        "  --retry-on LIST   failure classes worth a retry, comma-separated, or 'none'\n"
        "                    (default gpu_fault,cuda_error,nccl_error,lost; also oom,\n"
        "                    host_oom, killed, reclaimed; user_error and timeout never are)\n"
        "  --yolo            an Ultralytics run ('yolo train ...' or a script calling\n"
        "                    model.train()): a retry resumes from the run's weights/last.pt\n"
        "  --checkpoint GLOB the job's checkpoint files (relative to --cwd); a retry gets\n"
        "                    the newest in $GPUWARD_RESUME_FROM.  Without it, a script calling\n"
        "                    Ultralytics' model.train() gets its run's weights/last.pt there\n"
        "                    (README.md: the two lines that resume from it, in the same run)\n"
        "  --resume-cmd CMD  the shell command retries run instead of the job's command\n"
        "\n"
        "When the job holds GPUs but makes no progress (gpuwardd warns, then stops it):\n"
        "  --idle-policy NAME  the reclamation profile from gpuwardd's config: default,\n"
        "                    hpo (quicker), finetune (never reclaimed), where allowed\n"
        "  --progress FILE   a file the job updates as it progresses ('epoch=N total=M'\n"
        "                    lines or a CSV with an epoch column), relative to --cwd\n"
        "  --health-url URL  an HTTP endpoint of the job on this host, probed while it\n"
        "                    runs: http://127.0.0.1:PORT/..., http://localhost:PORT/...\n"
        "                    or http://[::1]:PORT/...; failing probes count as no progress\n"
        "\n"
        "When its GPU memory leaks (the baseline after each epoch keeps rising):\n"
        "  --leak-policy P   warn (default): an event and a line in the log; restart: also\n"
        "                    stop it right after its next checkpoint and resume from it\n"
        "\n"
        "When gpuwardd preempts (its 'preemption' setting):\n"
        "  --preemptible     the job may be stopped for a higher-priority job or a booking:\n"
        "                    after its next checkpoint (--yolo), else after its --signal,\n"
        "                    then SIGTERM; it is queued again first of its priority and\n"
        "                    resumes (--yolo, --checkpoint or --resume-cmd; one that cannot\n"
        "                    resume is not preempted unless the admin allows it)\n"
        "\n"
        "When it completes, as a model (the admin's model_store; gpuward models):\n"
        "  --publish NAME    copy its run's weights/best.pt, results.csv and args.yaml\n"
        "                    into the model store as NAME/vN (letters, digits, '.', '_',\n"
        "                    '-'; at most 64, not starting with '.'), with a manifest:\n"
        "                    job, user, commit (CI_COMMIT_SHA or GITHUB_SHA), the best\n"
        "                    epoch's metrics, each file's size and sha256\n"
        "  --publish-if-better METRIC\n"
        "                    only when its best epoch's METRIC (a results.csv column, e.g.\n"
        "                    metrics/mAP50-95(B)) beats the latest version's (lower is\n"
        "                    better for a loss); an event says which way, with the numbers\n"
        "\n"
        "A sweep (job array, as sbatch --array): one job whose tasks run the command, each\n"
        "with GPUWARD_ARRAY_INDEX (and SLURM_ARRAY_TASK_ID) set to its index:\n"
        "  -a, --array SPEC  task indexes 0-49, 1,3,5-9 or 0-99:10 (a step), and %N for at\n"
        "                    most N tasks running at once: 0-49%4; up to 10000 tasks.\n"
        "                    Task 3 of job 17 is 17_3 (gpuward show/cancel/logs 17_3);\n"
        "                    cancel, wait and show 17 take the whole array\n"
        "\n"
        "Examples:\n"
        "  gpuward submit --gpus 2 --time 30m --name smoke -- python3 train.py epochs=3\n"
        "  gpuward submit --reservation 12 --gpus 2 -- yolo train model=yolov8l.pt\n"
        "  gpuward submit --gpu-mem 40G --after 17 -- yolo train model=yolov8n.pt\n"
        "  gpuward submit --retries 5 --yolo -- python3 train_yolo.py epochs=100\n"
        "  gpuward submit --checkpoint 'ckpt/*.pt' --idle-policy hpo \\\n"
        "      --resume-cmd 'python3 train.py --resume \"$GPUWARD_RESUME_FROM\"' \\\n"
        "      -- python3 train.py\n"
        "  JOB=$(gpuward submit -q -- python3 eval.py) && gpuward logs -f \"$JOB\"\n"
        "  gpuward submit -G 2 -t 30 -J smoke -o 'out-%j.log' train.sh\n"
        "  gpuward submit train.sh --lr 0.01     # train.sh starts with:\n"
        "      #!/bin/sh\n"
        "      #GPUWARD --gpus 2 --time 4h\n"
        "      #GPUWARD --name yolo-l --env WANDB_MODE=offline\n"
        "      #GPUWARD --yolo --retries 5 --idle-policy hpo\n";

enum {
        OPT_GPUS = 0x100,
        OPT_GPU_MEM,
        OPT_TIME,
        OPT_PRIORITY,
        OPT_ENV,
        OPT_CLEAN_ENV,
        OPT_HOLD,
        OPT_JSON,
        OPT_RETRIES,
        OPT_YOLO,
        OPT_RESERVATION,
        OPT_WAIT,
        OPT_FOLLOW,
        OPT_SIGNAL,
        OPT_PREEMPTIBLE,
        OPT_SCRATCH,
        OPT_TEXT = 0x200, /* + enum text_slot */
};

/* The words a script's directive lines gave (submit_opts borrows them). */
struct script_words {
        char **sbatch, **gpuward;
        int nsbatch, ngpuward;
        struct gw_sbatch_words slurm;
};

static int check_after(const char *arg, char *why, size_t n);
static int check_retry_on(const char *arg, char *why, size_t n);
static int check_policy(const char *arg, char *why, size_t n);
static int check_health_url(const char *arg, char *why, size_t n);
static int check_leak_policy(const char *arg, char *why, size_t n);
static int check_array(const char *arg, char *why, size_t n);
static int check_publish(const char *arg, char *why, size_t n);
static int check_publish_metric(const char *arg, char *why, size_t n);

const struct submit_text_option submit_text_options[_T_MAX] = {
        [T_NAME] = { "--name", "name", NULL },
        [T_CWD] = { "--cwd", "cwd", NULL },
        [T_AFTER] = { "--after", "after", check_after },
        [T_OUTPUT] = { "--output", "output", NULL },
        [T_RETRY_ON] = { "--retry-on", "retry_on", check_retry_on },
        [T_CHECKPOINT] = { "--checkpoint", "checkpoint", NULL },
        [T_RESUME_CMD] = { "--resume-cmd", "resume_cmd", NULL },
        [T_IDLE_POLICY] = { "--idle-policy", "idle_policy", check_policy },
        [T_PROGRESS] = { "--progress", "progress", NULL },
        [T_HEALTH_URL] = { "--health-url", "health_url", check_health_url },
        [T_LEAK_POLICY] = { "--leak-policy", "leak_policy", check_leak_policy },
        [T_ARRAY] = { "--array", "array", check_array },
        [T_DATASET] = { "--dataset", "dataset", NULL },
        [T_PUBLISH] = { "--publish", "publish", check_publish },
        [T_PUBLISH_IF_BETTER] = { "--publish-if-better", "publish_if_better", check_publish_metric },
};

static const struct option submit_options[] = {
        { "gpus", required_argument, NULL, OPT_GPUS },
        { "gpu-mem", required_argument, NULL, OPT_GPU_MEM },
        { "time", required_argument, NULL, OPT_TIME },
        { "name", required_argument, NULL, OPT_TEXT + T_NAME },
        { "cwd", required_argument, NULL, OPT_TEXT + T_CWD },
        { "priority", required_argument, NULL, OPT_PRIORITY },
        { "after", required_argument, NULL, OPT_TEXT + T_AFTER },
        { "output", required_argument, NULL, OPT_TEXT + T_OUTPUT },
        { "env", required_argument, NULL, OPT_ENV },
        { "clean-env", no_argument, NULL, OPT_CLEAN_ENV },
        { "hold", no_argument, NULL, OPT_HOLD },
        { "reservation", required_argument, NULL, OPT_RESERVATION },
        { "retries", required_argument, NULL, OPT_RETRIES },
        { "retry-on", required_argument, NULL, OPT_TEXT + T_RETRY_ON },
        { "yolo", no_argument, NULL, OPT_YOLO },
        { "checkpoint", required_argument, NULL, OPT_TEXT + T_CHECKPOINT },
        { "resume-cmd", required_argument, NULL, OPT_TEXT + T_RESUME_CMD },
        { "idle-policy", required_argument, NULL, OPT_TEXT + T_IDLE_POLICY },
        { "progress", required_argument, NULL, OPT_TEXT + T_PROGRESS },
        { "dataset", required_argument, NULL, OPT_TEXT + T_DATASET },
        { "health-url", required_argument, NULL, OPT_TEXT + T_HEALTH_URL },
        { "leak-policy", required_argument, NULL, OPT_TEXT + T_LEAK_POLICY },
        { "array", required_argument, NULL, OPT_TEXT + T_ARRAY },
        { "publish", required_argument, NULL, OPT_TEXT + T_PUBLISH },
        { "publish-if-better", required_argument, NULL, OPT_TEXT + T_PUBLISH_IF_BETTER },
        { "json", no_argument, NULL, OPT_JSON },
        { "wait", no_argument, NULL, OPT_WAIT },
        { "follow", no_argument, NULL, OPT_FOLLOW },
        { "signal", required_argument, NULL, OPT_SIGNAL },
        { "preemptible", no_argument, NULL, OPT_PREEMPTIBLE },
        { "scratch", no_argument, NULL, OPT_SCRATCH },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        CLI_SOCKET_OPTION,
        { 0 },
};

/* What the daemon calls a field, and the option the user typed for it; the text options
 * add theirs (see submit_aliases). */
static const struct cli_field_alias other_aliases[] = {
        { "ngpus", "--gpus" },         { "gpu_mem", "--gpu-mem" },    { "time_limit", "--time" },
        { "priority", "--priority" },  { "env_extra", "--env" },      { "hold", "--hold" },
        { "retries", "--retries" },    { "yolo", "--yolo" },          { "reservation", "--reservation" },
        { "warn_signal", "--signal" }, { "warn_before", "--signal" }, { "preemptible", "--preemptible" },
        { "scratch", "--scratch" },
};

/* other_aliases and the text options' fields, NULL-terminated. */
static const struct cli_field_alias *submit_aliases(void) {
        static struct cli_field_alias all[ELEMENTSOF(other_aliases) + _T_MAX + 1];
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(other_aliases); i++)
                all[n++] = other_aliases[i];
        for (size_t i = 0; i < _T_MAX; i++)
                all[n++] = (struct cli_field_alias){ submit_text_options[i].key, submit_text_options[i].opt };
        all[n] = (struct cli_field_alias){ NULL, NULL };
        return all;
}

static void submit_opts_done(struct submit_opts *o) {
        free(o->env_extra);
        o->env_extra = NULL;
        o->n_env_extra = 0;
}

/* Errors name where the value came from: "--time" or "train.sh: #GPUWARD --time". */
static int bad_value(const char *where, const char *opt, const char *fmt_tail, const char *arg) {
        cli_error("%s%s: '%s' %s", where ? where : "", opt, arg, fmt_tail);
        fprintf(stderr, "Try 'gpuward submit --help'.\n");
        return CLI_EXIT_USAGE;
}

static int check_after(const char *arg, char *why, size_t n) {
        const char *colon = strchr(arg, ':');
        _cleanup_free_ char *id = colon ? strndup(arg, (size_t) (colon - arg)) : strdup(arg);
        long long v;
        if (id && gw_parse_int(id, 1, LLONG_MAX, &v) == 0 &&
            (!colon || strcasecmp(colon + 1, "ok") == 0 || strcasecmp(colon + 1, "any") == 0))
                return 0;
        snprintf(why, n, "'%s' is not JOB, JOB:ok or JOB:any (e.g. 17:ok)", arg);
        return -EINVAL;
}

/* The daemon's own parser: the same names, the same messages, without a round trip. */
static int check_retry_on(const char *arg, char *why, size_t n) {
        uint32_t mask;
        return gw_retry_parse_classes(arg, &mask, why, n);
}

static int check_policy(const char *arg, char *why, size_t n) {
        if (cli_is_policy_name(arg))
                return 0;
        snprintf(why, n, "'%s' is not a policy name (such as default, hpo, finetune)", arg);
        return -EINVAL;
}

/* core/model.h's checks, as the daemon makes them; their message names the API's field, which
 * apply_text_option() replaces with the option. */
static int check_publish(const char *arg, char *why, size_t n) {
        char msg[200];
        if (gw_model_name_check(arg, msg, sizeof msg) == 0)
                return 0;
        snprintf(why, n, "%s", msg + strlen("publish: "));
        return -EINVAL;
}

static int check_publish_metric(const char *arg, char *why, size_t n) {
        char msg[200];
        if (gw_model_metric_check(arg, msg, sizeof msg) == 0)
                return 0;
        snprintf(why, n, "%s", msg + strlen("publish_if_better: "));
        return -EINVAL;
}

static int check_leak_policy(const char *arg, char *why, size_t n) {
        if (!strcmp(arg, "warn") || !strcmp(arg, "restart"))
                return 0;
        snprintf(why, n, "'%s' is not warn or restart", arg);
        return -EINVAL;
}

/* The core's parser, as the daemon will use it; the spec is sent as typed.  Its message
 * starts with the field, which apply_text_option() writes itself. */
static int check_array(const char *arg, char *why, size_t n) {
        static const char field[] = "--array";
        char msg[GW_ARRAY_MSG_SIZE];
        struct gw_array a;
        if (gw_array_parse(arg, field, &a, msg, sizeof(msg)) == 0) {
                gw_array_done(&a);
                return 0;
        }
        snprintf(why, n, "%s", strncmp(msg, field, strlen(field)) == 0 ? msg + strlen(field) + 2 : msg);
        return -EINVAL;
}

/* As the daemon insists: probes stay on this host, on a numbered port. */
static int check_health_url(const char *arg, char *why, size_t n) {
        static const char *const hosts[] = { "http://127.0.0.1:", "http://localhost:", "http://[::1]:" };
        for (size_t i = 0; i < ELEMENTSOF(hosts); i++) {
                size_t k = strlen(hosts[i]);
                if (strncmp(arg, hosts[i], k) != 0)
                        continue;
                size_t digits = strspn(arg + k, "0123456789");
                _cleanup_free_ char *port = strndup(arg + k, digits);
                long long v;
                if (port && gw_parse_int(port, 1, 65535, &v) == 0 && strchr("/?", arg[k + digits]))
                        return 0;
                snprintf(why, n, "'%s' has no port number (1-65535) after the host", arg);
                return -EINVAL;
        }
        snprintf(why, n,
                 "'%s': only http://127.0.0.1:PORT/..., http://localhost:PORT/... or "
                 "http://[::1]:PORT/... may be probed",
                 arg);
        return -EINVAL;
}

static int push_env(struct submit_opts *o, const char *kv) {
        const char **p = realloc(o->env_extra, (o->n_env_extra + 1) * sizeof(*p));
        if (!p)
                return -ENOMEM;
        o->env_extra = p;
        p[o->n_env_extra++] = kv;
        return 0;
}

/* A text option: empty values and failed checks are usage errors naming the option. */
static int apply_text_option(struct submit_opts *o, enum text_slot slot, const char *arg, const char *where) {
        const struct submit_text_option *t = &submit_text_options[slot];
        char why[512];
        if (!*arg) {
                snprintf(why, sizeof(why), "the value is empty");
        } else if (!t->check || t->check(arg, why, sizeof(why)) == 0) {
                o->text[slot] = arg;
                return 0;
        }
        _cleanup_free_ char *safe = cli_sanitize(why);
        cli_error("%s%s: %s", where ? where : "", t->opt, safe ? safe : why);
        fprintf(stderr, "Try 'gpuward submit --help'.\n");
        return CLI_EXIT_USAGE;
}

/* "USR1" or "USR1@10m" (sbatch's "B:" prefix is taken too: only the main process gets it). */
static int parse_signal_option(struct submit_opts *o, const char *arg, const char *where) {
        const char *at = strchr(arg, '@'), *name = strncmp(arg, "B:", 2) ? arg : arg + 2;
        char sig[16];
        snprintf(sig, sizeof sig, "%.*s", (int) (at ? at - name : (ptrdiff_t) strlen(name)), name);
        if ((at && at < name) || (o->warn_signal = gw_signal_parse(sig)) < 0)
                return bad_value(where, "--signal",
                                 "is not SIG or SIG@TIME with SIG one of USR1, USR2, HUP, INT, QUIT, TERM, ALRM, URG, "
                                 "WINCH (e.g. USR1@10m)",
                                 arg);
        o->warn_before = 0;
        if (at && gw_parse_duration(at + 1, &o->warn_before) < 0)
                return bad_value(where, "--signal", "has a TIME after '@' that is not a duration: " GW_DURATION_FORMS,
                                 arg);
        return 0;
}

/* --gpus N (whole GPUs) or --gpus PROFILE[:COUNT] (MIG slices); the last one given wins,
 * so that the command line overrides a script's '#GPUWARD --gpus'. */
static int apply_gpus(struct submit_opts *o, const char *arg, const char *where) {
        long long v;
        if (arg[0] == '-' || !arg[strspn(arg, "0123456789")]) {
                if (gw_parse_int(arg, LLONG_MIN, LLONG_MAX, &v) < 0)
                        return bad_value(where, "--gpus", "is not a number of GPUs", arg);
                if (v < 1 || v > INT_MAX)
                        return bad_value(where, "--gpus", "is out of range: a job needs 1 GPU or more", arg);
                o->ngpus = v;
                o->mig.count = 0;
                return 0;
        }
        char why[128];
        if (gw_mig_ask_parse(arg, &o->mig, why, sizeof why) < 0) {
                char tail[200];
                snprintf(tail, sizeof tail, "is not a number of GPUs, nor MIG slices as PROFILE[:COUNT]: it %s", why);
                return bad_value(where, "--gpus", tail, arg);
        }
        o->ngpus = 1;
        return 0;
}

static int apply_value_option(struct submit_opts *o, int c, const char *arg, const char *where) {
        long long v;
        switch (c) {
        case OPT_GPUS:
                return apply_gpus(o, arg, where);
        case OPT_GPU_MEM:
                if (gw_parse_size(arg, &o->gpu_mem) < 0)
                        return bad_value(where, "--gpu-mem", "is not a size (examples: 512M, 16G, 80GB)", arg);
                o->gpu_mem_set = true;
                return 0;
        case OPT_TIME:
                /* "-5m" and "0" (or "0h", "00:00:00") read as durations but cannot be limits. */
                if (arg[0] == '-' || (strchr(arg, '0') && !arg[strspn(arg, "0.:smhdinecSMHD")]))
                        return bad_value(where, "--time", "is not a positive duration", arg);
                if (gw_parse_duration(arg, &o->time_limit) < 0)
                        return bad_value(where, "--time", "is not a duration: " GW_DURATION_FORMS, arg);
                o->time_set = true;
                return 0;
        case OPT_PRIORITY:
                if (gw_parse_int(arg, INT_MIN, INT_MAX, &o->priority) < 0)
                        return bad_value(where, "--priority", "is not a whole number", arg);
                o->priority_set = true;
                return 0;
        case OPT_RETRIES:
                if (gw_parse_int(arg, LLONG_MIN, LLONG_MAX, &v) < 0)
                        return bad_value(where, "--retries", "is not a number of retries", arg);
                if (v < 0 || v > GW_RETRY_MAX_RETRIES) {
                        char tail[64];
                        snprintf(tail, sizeof(tail), "is out of range: 0 to %d retries", GW_RETRY_MAX_RETRIES);
                        return bad_value(where, "--retries", tail, arg);
                }
                o->retries = v;
                o->retries_set = true;
                return 0;
        case OPT_RESERVATION:
                if (gw_parse_int(arg, 1, LLONG_MAX, &o->reservation) < 0)
                        return bad_value(
                                where, "--reservation",
                                "is not a booking id (a positive number, as 'gpuward reservations' lists them)", arg);
                return 0;
        case OPT_SIGNAL:
                return parse_signal_option(o, arg, where);
        case OPT_ENV:
                if (arg[0] == '=' || !strchr(arg, '='))
                        return bad_value(where, "--env", "is not NAME=VALUE", arg);
                return push_env(o, arg) < 0 ? CLI_EXIT_FAIL : 0;
        }
        if (c >= OPT_TEXT && c < OPT_TEXT + _T_MAX)
                return apply_text_option(o, (enum text_slot)(c - OPT_TEXT), arg, where);
        return -ENOENT;
}

/* sbatch's short options, and run's -g, as the long options they stand for. */
static int long_of_short(int c) {
        switch (c) {
        case 'g':
        case 'G':
                return OPT_GPUS;
        case 't':
                return OPT_TIME;
        case 'J':
                return OPT_TEXT + T_NAME;
        case 'o':
                return OPT_TEXT + T_OUTPUT;
        case 'a':
                return OPT_TEXT + T_ARRAY;
        }
        return c;
}

/* -d: sbatch's afterok:ID / afterany:ID, or --after's own JOB[:ok|:any]. */
static int apply_dependency(struct submit_opts *o, const char *arg, const char *where) {
        if (strncmp(arg, "after", 5) != 0)
                return apply_text_option(o, T_AFTER, arg, where);
        if (gw_sbatch_dependency(arg, o->after_buf, sizeof o->after_buf) < 0)
                return bad_value(where, "-d", "is not afterok:ID or afterany:ID (gpuward waits on one job)", arg);
        o->text[T_AFTER] = o->after_buf;
        return 0;
}

static int apply_option(struct submit_opts *o, int c, const char *arg, const char *where) {
        if (c == 'd')
                return apply_dependency(o, arg, where);
        c = long_of_short(c);
        int r = apply_value_option(o, c, arg, where);
        if (r != -ENOENT)
                return r;
        switch (c) {
        case OPT_CLEAN_ENV:
                o->clean_env = true;
                return 0;
        case OPT_HOLD:
                o->hold = true;
                return 0;
        case OPT_YOLO:
                o->yolo = true;
                return 0;
        case OPT_PREEMPTIBLE:
                o->preemptible = true;
                return 0;
        case OPT_SCRATCH:
                o->scratch = true;
                return 0;
        case OPT_JSON:
                o->json = true;
                return 0;
        case 'q':
                o->quiet = true;
                return 0;
        case OPT_WAIT:
                o->wait = true;
                return 0;
        case OPT_FOLLOW:
                o->follow = true;
                return 0;
        case 'h':
                o->help = true;
                return 0;
        case CLI_OPT_SOCKET:
                /* Where to send the job is not a property of the job. */
                if (where) {
                        cli_error("%s--socket is not a job option: give it on the command line", where);
                        return CLI_EXIT_USAGE;
                }
                o->socket = arg;
                return 0;
        }
        return CLI_EXIT_USAGE;
}

/* Parses options from argv[1..] into o, stopping at the first word that is not one.
 * *ret_pos: index of that word; *ret_dashdash: whether "--" ended the options. */
static int parse_args(int argc, char **argv, const char *where, struct submit_opts *o, int *ret_pos,
                      bool *ret_dashdash) {
        const char *last_arg = NULL;
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:qhg:G:t:J:o:a:d:", submit_options, NULL)) != -1) {
                if (c == '?' || c == ':') {
                        if (!where)
                                return cli_bad_option_in("submit", argv, optind, c, optopt, submit_options);
                        cli_error("%s%s '%s'", where, c == ':' ? "missing value for" : "unknown option",
                                  argv[optind - 1]);
                        return CLI_EXIT_USAGE;
                }
                int r = apply_option(o, c, optarg, where);
                if (r != 0)
                        return r;
                last_arg = optarg;
        }
        /* "--" consumed as the value of an option ("--name --") is not the separator. */
        *ret_dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0 && argv[optind - 1] != last_arg;
        *ret_pos = optind;
        return 0;
}

static int read_head(const char *path, char **ret) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        _cleanup_free_ char *buf = malloc(SCRIPT_HEAD_MAX + 1);
        if (!buf)
                return -ENOMEM;
        size_t len = 0;
        while (len < SCRIPT_HEAD_MAX) {
                ssize_t k = read(fd, buf + len, SCRIPT_HEAD_MAX - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                len += (size_t) k;
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}

/* Options from one kind of directive line: parsed into o as the command line is, errors
 * naming the script and the line's prefix.  words stay borrowed by o. */
static int apply_words(const char *script, const char *prefix, char **words, int nwords, struct submit_opts *o) {
        if (nwords <= 0)
                return 0;
        /* getopt skips argv[0]. */
        _cleanup_free_ char **gargv = calloc((size_t) nwords + 2, sizeof(char *));
        if (!gargv)
                return CLI_EXIT_FAIL;
        gargv[0] = (char *) prefix;
        memcpy(gargv + 1, words, (size_t) nwords * sizeof(char *));
        _cleanup_free_ char *where = NULL;
        if (asprintf(&where, "%s: %s ", script, prefix) < 0)
                return CLI_EXIT_FAIL;
        int pos;
        bool dashdash;
        int r = parse_args(nwords + 1, gargv, where, o, &pos, &dashdash);
        if (r != 0)
                return r;
        if (pos <= nwords) {
                cli_error("%sunexpected '%s' (only options belong on %s lines)", where, gargv[pos], prefix);
                return CLI_EXIT_USAGE;
        }
        if (o->help) {
                cli_error("%s--help does not belong on %s lines", where, prefix);
                return CLI_EXIT_USAGE;
        }
        return 0;
}

/* The words of the script's lines of one prefix, into *ret (the caller frees it). */
static int read_words(const char *script, const char *text, const char *prefix, char ***ret, int *ret_n) {
        int line = 0;
        int r = gw_directives_parse_prefix(text, prefix, ret, ret_n, &line);
        if (r == -EINVAL) {
                cli_error("%s:%d: %s line has an unterminated quote", script, line, prefix);
                return CLI_EXIT_USAGE;
        }
        if (r < 0) {
                cli_error("%s: cannot read %s lines: %s", script, prefix,
                          r == -E2BIG ? "too many words" : strerror(-r));
                return r == -E2BIG ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
        }
        return 0;
}

/* Applies the script's #SBATCH lines, then its #GPUWARD lines (which win), to o, saying which
 * #SBATCH options gpuward does not take.  o borrows from *w; the caller frees both. */
static int apply_directives(const char *script, const char *text, struct submit_opts *o, struct script_words *w) {
        int r = read_words(script, text, "#SBATCH", &w->sbatch, &w->nsbatch);
        if (r)
                return r;
        char why[300];
        if (w->nsbatch > 0 && gw_sbatch_translate(w->sbatch, w->nsbatch, &w->slurm, why, sizeof why) < 0) {
                _cleanup_free_ char *safe = cli_sanitize(why);
                cli_error("%s: %s", script, safe ? safe : why);
                return CLI_EXIT_USAGE;
        }
        for (int i = 0; i < w->slurm.nnotes; i++) {
                _cleanup_free_ char *safe = cli_sanitize(w->slurm.notes[i]);
                fprintf(stderr, "gpuward: %s: %s\n", script, safe ? safe : "?");
        }
        if ((r = apply_words(script, "#SBATCH", w->slurm.argv, w->slurm.argc, o)))
                return r;
        if ((r = read_words(script, text, "#GPUWARD", &w->gpuward, &w->ngpuward)))
                return r;
        return apply_words(script, "#GPUWARD", w->gpuward, w->ngpuward, o);
}

static void script_words_done(struct script_words *w) {
        gw_strv_free(w->sbatch);
        gw_strv_free(w->gpuward);
        gw_sbatch_words_done(&w->slurm);
}

/* Windows line endings make "#!/bin/bash\r" and "python3\r": refused now, with the fix. */
static int check_line_endings(const char *script, const char *text) {
        if (!strstr(text, "\r\n"))
                return 0;
        _cleanup_free_ char *safe = cli_sanitize(script);
        return cli_usage("submit",
                         "'%s' has Windows (CRLF) line endings, which the shell reads as part of each "
                         "command; convert it first: dos2unix %s",
                         safe ? safe : "?", safe ? safe : "?");
}

/* The job's directory: --cwd made absolute, or ours.  Checked here so that a typo is a
 * usage error naming the option; the daemon checks again as the authority. */
static int resolve_cwd(const char *opt, char **ret) {
        _cleanup_free_ char *dir = opt ? cli_absolute_path(opt, NULL) : cli_current_dir();
        if (!dir) {
                cli_error("cannot determine the current directory: %s", strerror(errno));
                return CLI_EXIT_FAIL;
        }
        struct stat st;
        const char *why = NULL;
        if (stat(dir, &st) < 0)
                why = strerror(errno);
        else if (!S_ISDIR(st.st_mode))
                why = "not a directory";
        else if (access(dir, X_OK) < 0)
                why = "you cannot enter it";
        if (why) {
                _cleanup_free_ char *safe = cli_sanitize(dir);
                cli_error("--cwd: '%s': %s", safe ? safe : "?", why);
                return CLI_EXIT_USAGE;
        }
        /* "a/../b" would run fine but show up in `show` and the log path as written; the
         * directory it names is what counts (a path without dot segments keeps its symlinks). */
        size_t n = strlen(dir);
        if (strstr(dir, "/./") || strstr(dir, "/../") || (n >= 2 && !strcmp(dir + n - 2, "/.")) ||
            (n >= 3 && !strcmp(dir + n - 3, "/.."))) {
                char *real = realpath(dir, NULL);
                if (real) {
                        free(dir);
                        dir = real;
                }
        }
        *ret = TAKE_PTR(dir);
        return 0;
}

/* A script that is not executable runs with the interpreter of its "#!" line, as sbatch
 * runs it (/bin/sh without one): [interpreter, its argument, script, args...].  Points into
 * text, which must outlive the command; the line is cut there. */
static void shebang(char *text, const char **ret_interp, const char **ret_arg) {
        *ret_interp = "/bin/sh";
        *ret_arg = NULL;
        if (strncmp(text, "#!", 2) != 0)
                return;
        char *p = text + 2;
        p[strcspn(p, "\n")] = '\0';
        p += strspn(p, " \t");
        char *end = p + strcspn(p, " \t");
        if (end == p)
                return;
        *ret_interp = p;
        if (*end) {
                *end++ = '\0';
                end += strspn(end, " \t");
                /* Linux passes the rest of the line as one argument, trailing blanks included. */
                if (*end)
                        *ret_arg = end;
        }
}

/* [script, args...] when it is executable, else its interpreter first (see shebang). */
static int script_command(const char *script, char *text, char **args, size_t nargs, const char ***ret, size_t *ret_n,
                          char **ret_abs) {
        char *abs = cli_absolute_path(script, NULL);
        const char **cmd = calloc(nargs + 4, sizeof(char *));
        if (!abs || !cmd) {
                free(abs);
                free(cmd);
                return CLI_EXIT_FAIL;
        }
        size_t n = 0;
        if (access(abs, X_OK) < 0) {
                const char *interp, *arg;
                shebang(text, &interp, &arg);
                cmd[n++] = interp;
                if (arg)
                        cmd[n++] = arg;
                fprintf(stderr, "gpuward: %s is not executable: it runs as %s%s%s %s\n", script, interp, arg ? " " : "",
                        arg ? arg : "", script);
        }
        cmd[n++] = abs;
        for (size_t i = 0; i < nargs; i++)
                cmd[n++] = args[i];
        *ret = cmd;
        *ret_n = n;
        *ret_abs = abs;
        return 0;
}

/* Whether an executable file of that name is in one of PATH's directories (as execvp looks). */
static bool in_path(const char *word) {
        const char *path = getenv("PATH");
        if (!path)
                path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *p = path;; p++) {
                size_t n = strcspn(p, ":");
                char file[4096];
                int k = snprintf(file, sizeof file, "%.*s/%s", (int) (n ? n : 1), n ? p : ".", word);
                struct stat st;
                if (k > 0 && (size_t) k < sizeof file && stat(file, &st) == 0 && S_ISREG(st.st_mode) &&
                    access(file, X_OK) == 0)
                        return true;
                p += n;
                if (!*p)
                        return false;
        }
}

/* Tells the script mode apart from the command mode, catching typos in script paths. */
static int classify_target(const char *word, bool dashdash, bool *ret_script) {
        struct stat st;
        *ret_script = false;
        if (!*word)
                return cli_usage("submit", "the command is empty");
        if (dashdash)
                return 0;
        if (stat(word, &st) == 0) {
                if (S_ISDIR(st.st_mode))
                        return cli_usage("submit", "'%s' is a directory, not a script", word);
                *ret_script = S_ISREG(st.st_mode);
                return 0;
        }
        /* A bare word is a command looked up in PATH; a path that is not there is a typo. */
        if (strchr(word, '/'))
                return cli_usage("submit", "'%s': no such script", word);
        if (!in_path(word))
                return cli_usage("submit",
                                 "'%s': no such script here, and no command of that name in PATH "
                                 "(one that an earlier job makes: --after JOB -- COMMAND)",
                                 word);
        return 0;
}

/* The script an interpreter would run: its first word that is no option, or NULL where
 * there is none to check ("python3 -c CODE", "python3 -m MODULE", "bash -c CMD"). */
static const char *interpreter_script(char *const *cmd, size_t n) {
        static const char *const known[] = { "python", "python2", "python3", "bash", "sh", "perl" };
        const char *base = strrchr(cmd[0], '/');
        base = base ? base + 1 : cmd[0];
        bool found = false;
        for (size_t i = 0; i < ELEMENTSOF(known) && !found; i++)
                found = !strcmp(base, known[i]) || (!strncmp(known[i], "python3", 7) && !strncmp(base, "python3.", 8) &&
                                                    base[8 + strspn(base + 8, "0123456789")] == '\0' && base[8]);
        if (!found)
                return NULL;
        for (size_t i = 1; i < n; i++) {
                if (!strcmp(cmd[i], "-c") || !strcmp(cmd[i], "-m") || !strcmp(cmd[i], "-e") || !strcmp(cmd[i], "-"))
                        return NULL;
                if (!strcmp(cmd[i], "--"))
                        return i + 1 < n ? cmd[i + 1] : NULL;
                if (cmd[i][0] != '-')
                        return cmd[i];
                /* Python's "-W arg", "-X opt" take the next word; bash's "-o opt" too. */
                if ((!strcmp(cmd[i], "-W") || !strcmp(cmd[i], "-X") || !strcmp(cmd[i], "-o")) && i + 1 < n)
                        i++;
        }
        return NULL;
}

/* "python3 trian.py" fails minutes later, when the job starts; here, now, as the user who
 * submits it.  Not for a job that waits on another (it may make the file). */
static int check_interpreter_script(const struct submit_opts *o, char *const *cmd, size_t n) {
        const char *file = interpreter_script(cmd, n);
        if (!file || o->text[T_AFTER])
                return 0;
        _cleanup_free_ char *cwd = NULL;
        int r = resolve_cwd(o->text[T_CWD], &cwd);
        if (r)
                return r;
        _cleanup_free_ char *path = cli_absolute_path(file, cwd);
        if (!path)
                return CLI_EXIT_FAIL;
        struct stat st;
        const char *why = NULL;
        if (stat(path, &st) < 0)
                why = errno == ENOENT ? "no such file" : strerror(errno);
        else if (S_ISDIR(st.st_mode))
                why = "a directory";
        else if (access(path, R_OK) < 0)
                why = "you cannot read it";
        if (!why)
                return 0;
        _cleanup_free_ char *safe = cli_sanitize(file), *where = cli_sanitize(cwd);
        return cli_usage("submit", "'%s' (the script %s would run): %s in %s", safe ? safe : "?", cmd[0], why,
                         where ? where : "?");
}

static int print_submitted(const struct cli_ctx *ctx, const struct submit_opts *o, json_t *reply, long long *ret_id) {
        long long id;
        if (!cli_jint(reply, "id", &id)) {
                cli_error("gpuwardd accepted the job but sent no id");
                return CLI_EXIT_FAIL;
        }
        *ret_id = id;
        bool json = ctx->json || o->json;
        if (json && !o->wait) /* with --wait, the ended job's JSON says it */
                printf("{\"id\": %lld}\n", id);
        else if (o->quiet && !json) /* --json wins: stdout stays one JSON document */
                printf("%lld\n", id);
        else if (!json)
                printf("Submitted job %lld\n", id);
        long long limit;
        json_t *dflt = json_object_get(reply, "time_limit_default");
        /* The limit as understood ("1:30" is 1m30s, as sbatch reads it), said once, here.  On
         * stderr: stdout stays "Submitted job N" for the scripts that read it. */
        if (!json && !o->quiet && cli_jint(reply, "time_limit", &limit)) {
                char b[32];
                fprintf(stderr, "gpuward: time limit %s%s\n",
                        gw_format_duration((gw_usec_t) limit * GW_USEC_PER_SEC, b, sizeof b),
                        json_is_true(dflt) ? " (the default; --time to set)" : "");
        }
        return CLI_EXIT_OK;
}

/* --wait --follow: the log until the job ends, then the exit code that says how it ended. */
static int follow_job(struct cli_ctx *ctx, long long id) {
        fflush(stdout); /* the id first, for whoever reads a pipe */
        (void) cli_follow_log(ctx, id);
        /* The log's reader may have gone away (a closed pipe) before the end: wait quietly. */
        int r = cli_wait_jobs(ctx, &id, 1, 0, false, true);
        json_t *job = r == CLI_EXIT_OK || r == CLI_EXIT_FAIL ? cli_job_get(ctx, id) : NULL;
        if (!job)
                return CLI_EXIT_FAIL;
        int code = cli_job_exit_status(job);
        json_decref(job);
        return code;
}

static int post_job(struct cli_ctx *ctx, const struct submit_opts *o, const char *const *cmd, size_t ncmd) {
        _cleanup_free_ char *cwd = NULL, *output = NULL;
        int r = resolve_cwd(o->text[T_CWD], &cwd);
        if (r)
                return r;
        if (o->text[T_OUTPUT] && !(output = cli_absolute_path(o->text[T_OUTPUT], cwd)))
                return CLI_EXIT_FAIL;
        json_t *body = NULL;
        r = submit_build_body(o, cmd, ncmd, cwd, output, &body);
        if (r)
                return r;
        struct cli_call call = {
                .method = "POST",
                .target = "/api/v1/jobs",
                .body = body,
                .aliases = submit_aliases(),
        };
        json_t *reply = NULL;
        r = cli_api_json(ctx, &call, &reply);
        json_decref(body);
        long long id = 0;
        if (r == CLI_EXIT_OK)
                r = print_submitted(ctx, o, reply, &id);
        json_decref(reply);
        if (r == CLI_EXIT_OK && o->wait && o->follow)
                return follow_job(ctx, id);
        if (r == CLI_EXIT_OK && o->wait) {
                fflush(stdout); /* the id first, for whoever reads a pipe */
                r = cli_wait_jobs(ctx, &id, 1, 0, ctx->json || o->json, o->quiet);
        }
        return r;
}

int cli_verb_submit(struct cli_ctx *ctx, int argc, char **argv) {
        struct submit_opts first = { .ngpus = 1 }, o = { .ngpus = 1 };
        struct script_words words = { 0 };
        _cleanup_free_ char *text = NULL;
        int pos, r;
        bool dashdash, script = false;

        /* First pass: find the script, report command-line errors, honour --help. */
        r = parse_args(argc, argv, NULL, &first, &pos, &dashdash);
        if (r || first.help) {
                if (!r)
                        fputs(submit_help, stdout);
                goto out;
        }
        if (pos >= argc) {
                r = cli_usage("submit", "no command given: gpuward submit [OPTIONS] -- COMMAND [ARGS...]");
                goto out;
        }
        r = classify_target(argv[pos], dashdash, &script);
        if (r)
                goto out;
        if (script && (r = read_head(argv[pos], &text)) < 0) {
                cli_error("%s: %s", argv[pos], strerror(-r));
                r = CLI_EXIT_FAIL;
                goto out;
        }
        /* Directives first, then the command line again, so that its flags win. */
        if (script &&
            ((r = check_line_endings(argv[pos], text)) || (r = apply_directives(argv[pos], text, &o, &words))))
                goto out;
        r = parse_args(argc, argv, NULL, &o, &pos, &dashdash);
        if (r || (o.socket && (r = cli_take_socket(ctx, "submit", o.socket))))
                goto out;
        if (o.follow && (!o.wait || o.text[T_ARRAY] || o.json || ctx->json)) {
                r = cli_usage("submit", "--follow %s",
                              !o.wait           ? "goes with --wait (submit --wait --follow)"
                              : o.text[T_ARRAY] ? "is for one job, not an array: follow a task "
                                                  "with 'gpuward logs -f 17_3'"
                                                : "and --json exclude each other");
                goto out;
        }

        if (script) {
                const char **cmd = NULL;
                char *abs = NULL;
                size_t n;
                r = script_command(argv[pos], text, argv + pos + 1, (size_t) (argc - pos - 1), &cmd, &n, &abs);
                if (!r)
                        r = post_job(ctx, &o, cmd, n);
                free(cmd);
                free(abs);
        } else if (!(r = check_interpreter_script(&o, argv + pos, (size_t) (argc - pos)))) {
                r = post_job(ctx, &o, (const char *const *) argv + pos, (size_t) (argc - pos));
        }
out:
        script_words_done(&words);
        submit_opts_done(&first);
        submit_opts_done(&o);
        return r;
}
