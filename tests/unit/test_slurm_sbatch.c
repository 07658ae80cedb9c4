#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/directive.h"
#include "core/jobrec.h"
#include "core/slurm.h"

#define SEC GW_USEC_PER_SEC
#define NOW ((gw_usec_t) 1780000000 * SEC)

/* The vector joined with '|' for one comparison per case. */
static char *joined(char **v) {
        static char buf[4096];
        size_t off = 0;
        buf[0] = '\0';
        for (size_t i = 0; v[i]; i++)
                off += (size_t) snprintf(buf + off, sizeof buf - off, "%s%s", i ? "|" : "", v[i]);
        return buf;
}

static char *build(const struct gw_job *j, const struct gw_sbatch_opts *o) {
        char **v = NULL, why[256] = "";
        int r = gw_slurm_sbatch_argv(j, o, &v, why, sizeof why);
        if (r != 0)
                fail_msg("refused: %d %s", r, why);
        char *s = joined(v);
        gw_strv_free(v);
        return s;
}

static const char *refusal(const struct gw_job *j, const struct gw_sbatch_opts *o) {
        static char why[256];
        char **v = (char **) 0x1;
        why[0] = '\0';
        assert_int_equal(gw_slurm_sbatch_argv(j, o, &v, why, sizeof why), -EINVAL);
        assert_ptr_equal(v, (char **) 0x1);
        return why;
}

static char *argv_train[] = { "python", "train.py", "--epochs", "10", NULL };

static void plain_job(void **state) {
        struct gw_job j = { .id = 17,
                            .name = "yolo-s",
                            .ngpus = 2,
                            .time_limit = 2 * 3600 * SEC,
                            .argv = argv_train,
                            .cwd = "/home/ana/exp",
                            .log_path = "/var/lib/gw/17.log" };
        struct gw_sbatch_opts o = { .now = NOW, .gpus_per_node = 4, .script = "/usr/lib/gpuward/job.sh" };
        assert_string_equal(build(&j, &o), "sbatch|--parsable|--no-requeue|--job-name=yolo-s|--nodes=1|--gres=gpu:2|"
                                           "--time=0-02:00:00|--output=/var/lib/gw/17.log|--chdir=/home/ana/exp|"
                                           "/usr/lib/gpuward/job.sh|python|train.py|--epochs|10");
}

/* --wrap: each word single-quoted for /bin/sh, a quote in a word closed and escaped. */
static void wrap_quotes(void **state) {
        char *argv[] = { "sh", "-c", "echo it's $HOME; rm -rf /", NULL };
        struct gw_job j = { .id = 3, .ngpus = 1, .argv = argv };
        struct gw_sbatch_opts o = { .now = NOW };
        assert_string_equal(build(&j, &o), "sbatch|--parsable|--no-requeue|--job-name=gpuward-3|--nodes=1|--gres=gpu:1|"
                                           "--wrap=exec 'sh' '-c' 'echo it'\\''s $HOME; rm -rf /'");
}

/* Slurm rounds a time limit up to whole minutes; so does gpuward, in D-HH:MM:SS. */
static void time_limits(void **state) {
        static const struct {
                gw_usec_t limit;
                const char *text;
        } t[] = {
                { 1, "0-00:01:00" },
                { 59 * SEC, "0-00:01:00" },
                { 60 * SEC, "0-00:01:00" },
                { 61 * SEC, "0-00:02:00" },
                { 90 * SEC, "0-00:02:00" },
                { 3600 * SEC, "0-01:00:00" },
                { (24 * 3600 + 2 * 3600 + 3 * 60 + 4) * SEC, "1-02:04:00" },
                { (gw_usec_t) 400 * 24 * 3600 * SEC, "400-00:00:00" },
        };
        char buf[32];
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
                assert_string_equal(gw_slurm_time_format(t[i].limit, buf, sizeof buf), t[i].text);
        assert_null(gw_slurm_time_format(0, buf, sizeof buf));
        assert_null(gw_slurm_time_format(-5, buf, sizeof buf));
        assert_null(gw_slurm_time_format(60 * SEC, buf, 5));
        assert_null(gw_slurm_time_format(GW_USEC_INFINITY, buf, sizeof buf));
        assert_string_equal(gw_slurm_time_format((gw_usec_t) GW_SLURM_TIME_MAX_MIN * 60 * SEC, buf, sizeof buf),
                            "1491308-02:07:00");

        /* No limit: no --time, the partition's default applies. */
        struct gw_job j = { .id = 4, .argv = argv_train };
        struct gw_sbatch_opts o = { .now = NOW };
        assert_null(strstr(build(&j, &o), "--time"));
        j.time_limit = GW_USEC_INFINITY;
        assert_null(strstr(build(&j, &o), "--time"));
        j.time_limit = ((gw_usec_t) GW_SLURM_TIME_MAX_MIN + 1) * 60 * SEC;
        assert_string_equal(refusal(&j, &o), "time_limit: longer than Slurm can hold (2147483647 minutes)");
}

/* A retry's backoff is --begin, relative and rounded up to a second; past or equal: none. */
static void begin_for_backoff(void **state) {
        struct gw_job j = { .id = 5, .ngpus = 1, .argv = argv_train, .not_before = NOW + 30 * SEC + 1 };
        struct gw_sbatch_opts o = { .now = NOW };
        assert_non_null(strstr(build(&j, &o), "|--begin=now+31|"));
        j.not_before = NOW;
        assert_null(strstr(build(&j, &o), "--begin"));
        j.not_before = NOW - 10 * SEC;
        assert_null(strstr(build(&j, &o), "--begin"));
}

static void output_percent_and_exclude(void **state) {
        const char *avoid[] = { "gpu3", "gpu7" };
        /* The daemon's log path is the --output with gpuward's patterns filled in: sbatch
         * gets it with each '%' left doubled, so it fills in none of its own (%j is ours). */
        struct gw_job j = { .id = 6,
                            .ngpus = 1,
                            .argv = argv_train,
                            .output = "/data/run%%1/out-%j.log",
                            .log_path = "/data/run%1/out-6.log" };
        struct gw_sbatch_opts o = { .now = NOW, .partition = "a100", .exclude = avoid, .n_exclude = 2 };
        const char *s = build(&j, &o);
        assert_non_null(strstr(s, "|--output=/data/run%%1/out-6.log|"));
        j.log_path = NULL; /* no log path: the --output as written, every '%' doubled */
        assert_non_null(strstr(build(&j, &o), "|--output=/data/run%%%%1/out-%%j.log|"));
        j.log_path = "/data/run%1/out-6.log";
        s = build(&j, &o);
        assert_non_null(strstr(s, "|--partition=a100|--exclude=gpu3,gpu7|"));
        assert_null(strstr(s, "--comment"));
        assert_null(strstr(s, "--reservation"));
        /* The attempt's tag and its booking's reservation, when given. */
        o.comment = "gpuward:6:2";
        o.reservation = "gpuward_book_3";
        s = build(&j, &o);
        assert_non_null(strstr(s, "|--comment=gpuward:6:2|--reservation=gpuward_book_3|--exclude="));
        o.comment = o.reservation = NULL;
        /* Empty strings are no value: the log path, then nothing. */
        j.output = "";
        j.log_path = "/var/lib/gw/6.log";
        j.cwd = "";
        s = build(&j, &o);
        assert_non_null(strstr(s, "|--output=/var/lib/gw/6.log|"));
        assert_null(strstr(s, "--chdir"));
        j.log_path = "";
        assert_null(strstr(build(&j, &o), "--output"));
}

/* More GPUs than a node has: whole nodes, or a refusal that says what would work. */
static void gpus_over_nodes(void **state) {
        struct gw_job j = { .id = 8, .ngpus = 8, .argv = argv_train };
        struct gw_sbatch_opts o = { .now = NOW, .gpus_per_node = 4, .max_nodes = 2 };
        assert_non_null(strstr(build(&j, &o), "|--nodes=2|--gres=gpu:4|"));
        j.ngpus = 4;
        assert_non_null(strstr(build(&j, &o), "|--nodes=1|--gres=gpu:4|"));
        j.ngpus = 6;
        assert_string_equal(refusal(&j, &o), "gpus: 6 GPUs cannot be spread evenly over nodes of 4 GPUs; "
                                             "ask for at most 4, or a multiple of 4");
        j.ngpus = 12;
        assert_string_equal(refusal(&j, &o), "gpus: 12 GPUs would take 3 nodes of 4 GPUs; a job may span "
                                             "at most 2 nodes (8 GPUs)");
        o.max_nodes = 0; /* any number of nodes */
        assert_non_null(strstr(build(&j, &o), "|--nodes=3|--gres=gpu:4|"));
        o.gpus_per_node = 0; /* unknown: Slurm decides */
        assert_non_null(strstr(build(&j, &o), "|--nodes=1|--gres=gpu:12|"));
        j.ngpus = 0; /* a CPU-only job */
        assert_null(strstr(build(&j, &o), "--gres"));
}

static void refusals(void **state) {
        char *none[] = { NULL };
        const char *bad_node[] = { "gpu1", "gpu2,gpu3" };
        struct gw_job j = { .id = 9, .ngpus = 1, .argv = none };
        struct gw_sbatch_opts o = { .now = NOW };
        assert_string_equal(refusal(&j, &o), "argv: the job has no command");
        j.argv = NULL;
        assert_string_equal(refusal(&j, &o), "argv: the job has no command");
        j.argv = argv_train;
        j.name = "a\nb";
        assert_non_null(strstr(refusal(&j, &o), "name: "));
        j.name = NULL;
        j.output = "/data/a\\b.log";
        j.log_path = "/data/a\\b.log";
        assert_non_null(strstr(refusal(&j, &o), "output: "));
        j.output = j.log_path = NULL;
        j.ngpus = -1;
        assert_string_equal(refusal(&j, &o), "gpus: -1 is negative");
        j.ngpus = 1;
        o.exclude = bad_node;
        o.n_exclude = 2;
        assert_string_equal(refusal(&j, &o), "exclude: node 2 is not a node name");
        o.n_exclude = 0;
        o.partition = "";
        assert_non_null(strstr(refusal(&j, &o), "partition: "));
}

/* A slice job asks for its slices by Slurm's type, on one node whatever a node holds. */
static void mig_slices_by_type(void **state) {
        (void) state;
        struct gw_job j = { .id = 5,
                            .ngpus = 1,
                            .mig_profile = "1g.10gb",
                            .mig_count = 2,
                            .argv = argv_train,
                            .cwd = "/w" };
        struct gw_sbatch_opts o = { .now = NOW, .gpus_per_node = 1, .gpu_type = "a100_1g.10gb" };
        assert_non_null(strstr(build(&j, &o), "|--nodes=1|--gres=gpu:a100_1g.10gb:2|"));
        o.gpu_type = NULL;
        assert_string_equal(refusal(&j, &o), "mig: no Slurm GPU type given for 1g.10gb slices");
        o.gpu_type = "a:b";
        assert_string_equal(refusal(&j, &o), "mig: no Slurm GPU type given for 1g.10gb slices");
        /* A whole-GPU job takes no type. */
        j.mig_profile = NULL;
        o.gpu_type = "a100_1g.10gb";
        assert_non_null(strstr(build(&j, &o), "|--nodes=1|--gres=gpu:1|"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(plain_job),
                cmocka_unit_test(wrap_quotes),
                cmocka_unit_test(time_limits),
                cmocka_unit_test(begin_for_backoff),
                cmocka_unit_test(output_percent_and_exclude),
                cmocka_unit_test(gpus_over_nodes),
                cmocka_unit_test(refusals),
                cmocka_unit_test(mig_slices_by_type),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
