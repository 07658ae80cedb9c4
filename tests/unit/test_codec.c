/* src/api/codec: submission decoding, job encoding, error bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "api/codec.h"
#include "base/cleanup.h"
#include "core/directive.h"
#include "core/waitwhy.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define SEC GW_USEC_PER_SEC
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define DEFAULT_LIMIT (7 * 60 * SEC)

static json_t *load(const char *text) {
        json_error_t e;
        json_t *o = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
        if (!o)
                fail_msg("bad JSON in the test itself: %s: %s", text, e.text);
        return o;
}

/* Decodes text; returns the job (caller frees), with *ret_r the result. */
static struct gw_job *decode(const char *text, int *ret_r, int *ret_hold, struct gw_codec_error *err) {
        json_t *o = load(text);
        struct gw_job *j = gw_xcalloc(1, sizeof *j);
        memset(err, 0, sizeof *err);
        *ret_hold = -1;
        *ret_r = gw_codec_job_spec(o, DEFAULT_LIMIT, j, ret_hold, err);
        json_decref(o);
        return j;
}

static void spec_full(void **state) {
        struct gw_codec_error err;
        int r, hold;
        struct gw_job *j = decode(
                "{\"command\": [\"python3\", \"train.py\", \"epochs=3\", \"\", \"ünï code\"], \"ngpus\": 2,"
                " \"gpu_mem\": \"16G\", \"time_limit\": \"30m\", \"name\": \"smoke\","
                " \"cwd\": \"/home/alice/yolo\", \"priority\": -1000, \"after\": \"12:any\","
                " \"output\": \"/home/alice/out.log\", \"env\": [\"PATH=/bin\", \"EMPTY=\", \"A=b=c\"],"
                " \"env_extra\": [\"K=V w\"], \"hold\": true, \"warn_signal\": \"sigusr1\", \"warn_before\": 120}",
                &r, &hold, &err);
        if (r != 0)
                fail_msg("rejected: %s: %s", err.field, err.message);
        assert_int_equal(hold, 1);
        static const char *const argv[] = { "python3", "train.py", "epochs=3", "", "ünï code" };
        assert_int_equal(gw_strv_length(j->argv), N_ELEMS(argv));
        for (size_t i = 0; i < N_ELEMS(argv); i++)
                assert_string_equal(j->argv[i], argv[i]);
        assert_int_equal(j->ngpus, 2);
        assert_int_equal(j->gpu_mem, 16 * GIB);
        assert_int_equal(j->time_limit, 30 * 60 * SEC);
        assert_string_equal(j->name, "smoke");
        assert_string_equal(j->cwd, "/home/alice/yolo");
        assert_int_equal(j->priority, -1000);
        assert_int_equal(j->after_job, 12);
        assert_int_equal(j->after_kind, GW_DEP_KIND_ANY);
        assert_string_equal(j->output, "/home/alice/out.log");
        assert_int_equal(gw_strv_length(j->env), 3);
        assert_string_equal(j->env[0], "PATH=/bin");
        assert_string_equal(j->env[1], "EMPTY=");
        assert_string_equal(j->env[2], "A=b=c");
        assert_int_equal(gw_strv_length(j->env_extra), 1);
        assert_string_equal(j->env_extra[0], "K=V w");
        assert_int_equal(j->warn_signal, SIGUSR1);
        assert_int_equal(j->warn_before, 120 * SEC);
        gw_job_free(j);
}

static void spec_minimal_defaults(void **state) {
        struct gw_codec_error err;
        int r, hold;
        struct gw_job *j = decode("{\"command\": [\"true\"]}", &r, &hold, &err);
        assert_int_equal(r, 0);
        assert_int_equal(hold, 0);
        assert_int_equal(j->ngpus, 1);
        assert_int_equal(j->time_limit, DEFAULT_LIMIT);
        assert_int_equal(j->gpu_mem, 0);
        assert_int_equal(j->priority, 0);
        assert_int_equal(j->after_job, 0);
        assert_int_equal(j->after_kind, GW_DEP_KIND_NONE);
        assert_null(j->name);
        assert_null(j->cwd);
        assert_null(j->output);
        assert_null(j->env); /* absent env = minimal, not empty */
        assert_null(j->env_extra);
        gw_job_free(j);

        /* null is the same as absent. */
        j = decode("{\"command\": [\"true\"], \"time_limit\": null, \"gpu_mem\": null, \"env\": null,"
                   " \"after\": null, \"hold\": null, \"name\": null}",
                   &r, &hold, &err);
        assert_int_equal(r, 0);
        assert_int_equal(hold, 0);
        assert_int_equal(j->time_limit, DEFAULT_LIMIT);
        assert_null(j->env);
        assert_int_equal(j->after_job, 0);
        gw_job_free(j);

        /* An empty env array is kept as such. */
        j = decode("{\"command\": [\"true\"], \"env\": [], \"hold\": false}", &r, &hold, &err);
        assert_int_equal(r, 0);
        assert_int_equal(hold, 0);
        assert_non_null(j->env);
        assert_null(j->env[0]);
        gw_job_free(j);
}

/* The forms API.md allows for each value. */
static void spec_value_forms(void **state) {
        static const struct {
                const char *key, *value;
                gw_usec_t time_limit;
                uint64_t gpu_mem;
                int64_t after_job;
                enum gw_dep_kind after_kind;
        } cases[] = {
                { "time_limit", "\"30m\"", 1800 * SEC, 0, 0, GW_DEP_KIND_NONE },
                { "time_limit", "1800", 1800 * SEC, 0, 0, GW_DEP_KIND_NONE },
                { "time_limit", "1", SEC, 0, 0, GW_DEP_KIND_NONE },
                { "time_limit", "\"2h\"", 7200 * SEC, 0, 0, GW_DEP_KIND_NONE },
                { "time_limit", "\"01:30:00\"", 5400 * SEC, 0, 0, GW_DEP_KIND_NONE },
                { "time_limit", "\"1-00:00:00\"", 86400 * SEC, 0, 0, GW_DEP_KIND_NONE },
                { "gpu_mem", "\"16G\"", DEFAULT_LIMIT, 16 * GIB, 0, GW_DEP_KIND_NONE },
                { "gpu_mem", "17179869184", DEFAULT_LIMIT, 16 * GIB, 0, GW_DEP_KIND_NONE },
                { "gpu_mem", "\"80GiB\"", DEFAULT_LIMIT, 80 * GIB, 0, GW_DEP_KIND_NONE },
                { "gpu_mem", "\"512M\"", DEFAULT_LIMIT, 512 * MIB, 0, GW_DEP_KIND_NONE },
                { "gpu_mem", "\"512\"", DEFAULT_LIMIT, 512 * MIB, 0, GW_DEP_KIND_NONE },
                { "gpu_mem", "0", DEFAULT_LIMIT, 0, 0, GW_DEP_KIND_NONE },
                { "after", "\"12\"", DEFAULT_LIMIT, 0, 12, GW_DEP_KIND_OK },
                { "after", "\"12:ok\"", DEFAULT_LIMIT, 0, 12, GW_DEP_KIND_OK },
                { "after", "\"12:any\"", DEFAULT_LIMIT, 0, 12, GW_DEP_KIND_ANY },
                { "after", "12", DEFAULT_LIMIT, 0, 12, GW_DEP_KIND_OK },
                { "after", "\"123456789012\"", DEFAULT_LIMIT, 0, INT64_C(123456789012), GW_DEP_KIND_OK },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                char text[256];
                snprintf(text, sizeof text, "{\"command\": [\"x\"], \"%s\": %s}", cases[i].key, cases[i].value);
                struct gw_codec_error err;
                int r, hold;
                struct gw_job *j = decode(text, &r, &hold, &err);
                if (r != 0)
                        fail_msg("%s: rejected (%s: %s)", text, err.field, err.message);
                if (j->time_limit != cases[i].time_limit || j->gpu_mem != cases[i].gpu_mem ||
                    j->after_job != cases[i].after_job || j->after_kind != cases[i].after_kind)
                        fail_msg("%s: time_limit %lld gpu_mem %llu after %lld/%d", text, (long long) j->time_limit,
                                 (unsigned long long) j->gpu_mem, (long long) j->after_job, (int) j->after_kind);
                gw_job_free(j);
        }
}

#define DELETE NULL /* as a value: remove the key */

static void spec_rejects(void **state) {
        static const char base[] =
                "{\"command\": [\"python3\", \"t.py\"], \"ngpus\": 1, \"gpu_mem\": \"1G\", \"time_limit\": 60,"
                " \"name\": \"n\", \"cwd\": \"/tmp\", \"priority\": 0, \"after\": \"1\", \"output\": \"/tmp/o\","
                " \"env\": [\"A=1\"], \"env_extra\": [\"B=2\"], \"hold\": false}";
        static const char long_name[] =
                "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\""; /* 129 */
        static const struct {
                const char *key, *value; /* value: JSON text, or DELETE */
        } cases[] = {
                { "command", DELETE },
                { "command", "null" },
                { "command", "[]" },
                { "command", "[\"\"]" },
                { "command", "\"python3 t.py\"" },
                { "command", "{}" },
                { "command", "[\"python3\", 1]" },
                { "command", "[\"python3\", null]" },
                { "command", "[[\"python3\"]]" },
                { "command", "[\"a\\u0000b\"]" },
                { "ngpus", "\"2\"" },
                { "ngpus", "0" },
                { "ngpus", "-1" },
                { "ngpus", "2.5" },
                { "ngpus", "true" },
                { "ngpus", "1048577" },
                { "priority", "1001" },
                { "priority", "-1001" },
                { "priority", "\"5\"" },
                { "priority", "9223372036854775807" },
                { "time_limit", "\"-5m\"" },
                { "time_limit", "\"3fortnights\"" },
                { "time_limit", "0" },
                { "time_limit", "-5" },
                { "time_limit", "\"\"" },
                { "time_limit", "\"0m\"" },
                { "time_limit", "\"30M\"" },
                { "time_limit", "1.5" },
                { "time_limit", "true" },
                { "time_limit", "[60]" },
                { "time_limit", "315360001" },
                { "gpu_mem", "\"9Q\"" },
                { "gpu_mem", "-1" },
                { "gpu_mem", "\"\"" },
                { "gpu_mem", "\"-1G\"" },
                { "gpu_mem", "1.5" },
                { "gpu_mem", "false" },
                { "gpu_mem", "\"99999999999999999999G\"" },
                { "cwd", "\"relative/dir\"" },
                { "cwd", "\"\"" },
                { "cwd", "\"./x\"" },
                { "cwd", "5" },
                { "output", "\"out.log\"" },
                { "output", "\"~/out.log\"" },
                { "output", "[\"/tmp/o\"]" },
                { "after", "\"x\"" },
                { "after", "\"12:maybe\"" },
                { "after", "0" },
                { "after", "-1" },
                { "after", "\"0\"" },
                { "after", "\"-3\"" },
                { "after", "\"12:\"" },
                { "after", "\"12:none\"" },
                { "after", "\":ok\"" },
                { "after", "\"12x\"" },
                { "after", "\"\"" },
                { "after", "\"99999999999999999999\"" },
                { "after", "true" },
                { "after", "12.5" },
                { "env", "[\"NOEQUALS\"]" },
                { "env", "[\"A=1\", \"=x\"]" },
                { "env", "\"A=1\"" },
                { "env", "[1]" },
                { "env", "[\"\"]" },
                { "env_extra", "[\"NOEQUALS\"]" },
                { "env_extra", "{\"A\": \"1\"}" },
                { "hold", "\"yes\"" },
                { "hold", "1" },
                { "hold", "\"true\"" },
                { "name", "\"a\\nb\"" },
                { "name", "\"tab\\there\"" },
                { "name", long_name },
                { "name", "5" },
                { "warn_signal", "\"KILL\"" },
                { "warn_signal", "10" },
                { "warn_before", "60" }, /* without warn_signal */
                { "warn_before", "\"1m\"" },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                json_t *o = load(base);
                if (cases[i].value)
                        assert_int_equal(json_object_set_new(o, cases[i].key, load(cases[i].value)), 0);
                else
                        assert_int_equal(json_object_del(o, cases[i].key), 0);
                struct gw_job *j = gw_xcalloc(1, sizeof *j);
                struct gw_codec_error err;
                memset(&err, 0, sizeof err);
                int hold = -7;
                int r = gw_codec_job_spec(o, DEFAULT_LIMIT, j, &hold, &err);
                if (r != -EINVAL)
                        fail_msg("%s = %s: got %d, want -EINVAL", cases[i].key,
                                 cases[i].value ? cases[i].value : "(absent)", r);
                if (strcmp(err.field, cases[i].key) != 0)
                        fail_msg("%s = %s: err.field is '%s' (%s)", cases[i].key,
                                 cases[i].value ? cases[i].value : "(absent)", err.field, err.message);
                if (err.message[0] == '\0')
                        fail_msg("%s = %s: no message", cases[i].key, cases[i].value ? cases[i].value : "(absent)");
                assert_int_equal(hold, -7); /* not written on failure */
                gw_job_free(j); /* whatever it filled before failing is the caller's */
                json_decref(o);
        }

        /* The unchanged base is accepted, so each rejection above is down to its one field. */
        struct gw_codec_error err;
        int r, hold;
        struct gw_job *j = decode(base, &r, &hold, &err);
        if (r != 0)
                fail_msg("base rejected: %s: %s", err.field, err.message);
        gw_job_free(j);
}

static void spec_not_an_object(void **state) {
        static const char *const bodies[] = { "[]", "[{\"command\": [\"x\"]}]", "\"{}\"", "42", "null", "true" };
        for (size_t i = 0; i < N_ELEMS(bodies); i++) {
                struct gw_codec_error err;
                int r, hold;
                struct gw_job *j = decode(bodies[i], &r, &hold, &err);
                assert_int_equal(r, -EINVAL);
                assert_string_equal(err.field, ""); /* no one field is to blame */
                assert_true(err.message[0] != '\0');
                assert_null(j->argv);
                gw_job_free(j);
        }
        struct gw_codec_error err = { 0 };
        struct gw_job *j = gw_xcalloc(1, sizeof *j);
        int hold = 0;
        assert_int_equal(gw_codec_job_spec(NULL, DEFAULT_LIMIT, j, &hold, &err), -EINVAL);
        gw_job_free(j);
}

/* Every key API.md lists for a job, with its JSON type when set and whether it may be null. */
static const struct {
        const char *key;
        json_type type;
        bool nullable;
} job_keys[] = {
        { "id", JSON_INTEGER, false },
        { "name", JSON_STRING, false },
        { "user", JSON_STRING, false },
        { "uid", JSON_INTEGER, false },
        { "state", JSON_STRING, false },
        { "reason", JSON_STRING, false },
        { "ngpus", JSON_INTEGER, false },
        { "gpus", JSON_ARRAY, false },
        { "gpu_mem", JSON_INTEGER, false },
        { "priority", JSON_INTEGER, false },
        { "time_limit", JSON_INTEGER, false },
        { "submit_time", JSON_REAL, true },
        { "start_time", JSON_REAL, true },
        { "end_time", JSON_REAL, true },
        { "exit_code", JSON_INTEGER, true },
        { "signal", JSON_INTEGER, true },
        { "command", JSON_ARRAY, false },
        { "cwd", JSON_STRING, false },
        { "log_path", JSON_STRING, true },
        { "after", JSON_OBJECT, true },
        { "attempt", JSON_INTEGER, false },
        { "pid", JSON_INTEGER, true },
        { "retries", JSON_INTEGER, false },
        { "retry_on", JSON_STRING, true },
        { "yolo", JSON_FALSE, false },
        { "not_before", JSON_REAL, true },
        { "resume_from", JSON_STRING, true },
        { "resume_epoch", JSON_INTEGER, true },
        { "idle_policy", JSON_STRING, true },
        { "reservation", JSON_INTEGER, true },
        { "leak_policy", JSON_STRING, false },
        { "eta", JSON_REAL, true }, /* training awareness */
        { "predicted_start", JSON_REAL, true },
        { "warn_signal", JSON_STRING, true },
        { "warn_before", JSON_INTEGER, true },
        { "eta_overdue", JSON_REAL, true },
        { "interactive", JSON_FALSE, false },
        { "tty_socket", JSON_STRING, true },
        { "latest_start", JSON_REAL, true }, /* the promise beside predicted_start, the estimate */
        { "fairshare", JSON_REAL, true },
        { "priority_why", JSON_STRING, true },
        /* job arrays: the array's spec, tasks and best; a task's array and index */
        { "array", JSON_STRING, true },
        { "array_tasks", JSON_OBJECT, true },
        { "array_waiting", JSON_STRING, true },
        { "array_best", JSON_OBJECT, true },
        { "array_job_id", JSON_INTEGER, true },
        { "array_index", JSON_INTEGER, true },
        { "node", JSON_STRING, true },
        { "preemptible", JSON_FALSE, false },
        { "display_id", JSON_STRING, false }, /* "8_2" for a task of array 8 */
        { "predicted_wait", JSON_STRING, true }, /* the words where no future start can be given */
        { "reasons", JSON_ARRAY, false }, /* every reason a queued job waits; [] for the others */
        { "publish", JSON_STRING, true }, /* submit --publish NAME */
        { "publish_if_better", JSON_STRING, true },
        { "mig", JSON_OBJECT, true }, /* MIG slices asked for: {"profile", "count"}; null: whole GPUs */
        { "slices", JSON_ARRAY, true }, /* the UUIDs of the slices it got; null: none */
        { "dataset", JSON_OBJECT, true }, /* --dataset: path, dir, state */
        { "scratch", JSON_OBJECT, true }, /* --scratch: {"dir"}; null: without */
};

static void check_shape(const json_t *o) {
        assert_true(json_is_object(o));
        for (size_t i = 0; i < N_ELEMS(job_keys); i++) {
                const json_t *v = json_object_get(o, job_keys[i].key);
                if (!v)
                        fail_msg("key %s missing", job_keys[i].key);
                if (json_is_null(v) ? !job_keys[i].nullable : json_typeof(v) != job_keys[i].type)
                        fail_msg("key %s has JSON type %d", job_keys[i].key, (int) json_typeof(v));
        }
        /* Nothing undocumented either ("events" is added by GET /jobs/{id} only). */
        assert_int_equal(json_object_size(o), N_ELEMS(job_keys));
}

static struct gw_job *sample_job(void) {
        struct gw_job *j = gw_xcalloc(1, sizeof *j);
        static const char *const argv[] = { "python3", "train.py", "", "ü b", NULL };
        j->id = 17;
        j->name = gw_xstrdup("smoke");
        j->uid = 1000;
        j->user = gw_xstrdup("alice");
        j->state = GW_JOB_PENDING;
        j->wait_reason = GW_REASON_RESOURCES;
        j->ngpus = 2;
        j->gpu_mem = 16 * GIB;
        j->priority = -3;
        j->time_limit = 1800 * SEC;
        j->submit_time = INT64_C(1763769600123000);
        j->argv = gw_strv_copy((char *const *) argv);
        j->cwd = gw_xstrdup("/home/alice/yolo");
        j->attempt = 1;
        return j;
}

/* A queued job's estimate and promise are shown for the attempt they were predicted for
 * only: a retry back in the queue waits anew (its backoff), not as its first attempt did. */
static void job_prediction_attempt(void **state) {
        struct gw_job *j = sample_job();
        (void) state;
        j->predicted_start = INT64_C(1763769660000000);
        j->latest_start = INT64_C(1763771400000000);
        j->predicted_attempt = 1;
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        check_shape(o);
        assert_true(fabs(json_real_value(json_object_get(o, "predicted_start")) - 1763769660.0) < 1e-4);
        assert_true(fabs(json_real_value(json_object_get(o, "latest_start")) - 1763771400.0) < 1e-4);
        json_decref(o);
        j->attempt = 2; /* retried: back in the queue before the next prediction */
        o = gw_codec_job(j, GW_VIEW_ALL);
        assert_true(json_is_null(json_object_get(o, "predicted_start")));
        assert_true(json_is_null(json_object_get(o, "latest_start")));
        json_decref(o);
        gw_job_free(j);
}

static void job_pending(void **state) {
        struct gw_job *j = sample_job();
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        check_shape(o);
        assert_int_equal(json_integer_value(json_object_get(o, "id")), 17);
        assert_string_equal(json_string_value(json_object_get(o, "name")), "smoke");
        assert_string_equal(json_string_value(json_object_get(o, "user")), "alice");
        assert_int_equal(json_integer_value(json_object_get(o, "uid")), 1000);
        assert_string_equal(json_string_value(json_object_get(o, "state")), "PENDING");
        assert_string_equal(json_string_value(json_object_get(o, "reason")), "Resources");
        assert_int_equal(json_integer_value(json_object_get(o, "ngpus")), 2);
        assert_int_equal(json_array_size(json_object_get(o, "gpus")), 0);
        assert_int_equal(json_integer_value(json_object_get(o, "gpu_mem")), 16 * GIB);
        assert_int_equal(json_integer_value(json_object_get(o, "priority")), -3);
        assert_int_equal(json_integer_value(json_object_get(o, "time_limit")), 1800);
        assert_true(fabs(json_real_value(json_object_get(o, "submit_time")) - 1763769600.123) < 1e-4);
        static const char *const nulls[] = {
                "start_time", "end_time", "exit_code", "signal", "log_path", "after", "pid"
        };
        for (size_t i = 0; i < N_ELEMS(nulls); i++)
                if (!json_is_null(json_object_get(o, nulls[i])))
                        fail_msg("%s should be null for a pending job", nulls[i]);
        const json_t *cmd = json_object_get(o, "command");
        assert_int_equal(json_array_size(cmd), 4);
        assert_string_equal(json_string_value(json_array_get(cmd, 0)), "python3");
        assert_string_equal(json_string_value(json_array_get(cmd, 2)), "");
        assert_string_equal(json_string_value(json_array_get(cmd, 3)), "ü b");
        assert_string_equal(json_string_value(json_object_get(o, "cwd")), "/home/alice/yolo");
        assert_int_equal(json_integer_value(json_object_get(o, "attempt")), 1);
        json_decref(o);

        j->state = GW_JOB_HELD;
        j->wait_reason = GW_REASON_HELD;
        o = gw_codec_job(j, GW_VIEW_ALL);
        check_shape(o);
        assert_string_equal(json_string_value(json_object_get(o, "state")), "HELD");
        assert_string_equal(json_string_value(json_object_get(o, "reason")), "Held");
        json_decref(o);
        gw_job_free(j);
}

/* "dataset": the path asked, the copy's folder once staged and where the copy is; for the
 * job's owner and admins (a path of theirs, as cwd), null for others and without one. */
static void job_dataset(void **state) {
        (void) state;
        struct gw_job *j = sample_job();
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        assert_true(json_is_null(json_object_get(o, "dataset")));
        json_decref(o);
        j->dataset = gw_xstrdup("/nfs/coco");
        j->dataset_state = "copying";
        o = gw_codec_job(j, GW_VIEW_ALL);
        check_shape(o);
        json_t *want = json_pack("{s:s,s:n,s:s}", "path", "/nfs/coco", "dir", "state", "copying");
        assert_true(json_equal(json_object_get(o, "dataset"), want));
        json_decref(want);
        json_decref(o);
        j->dataset_dir = "/ssd/c/entries/0123456789abcdef/v2/data";
        j->dataset_state = "ready";
        o = gw_codec_job(j, GW_VIEW_ALL);
        want = json_pack("{s:s,s:s,s:s}", "path", "/nfs/coco", "dir", j->dataset_dir, "state", "ready");
        assert_true(json_equal(json_object_get(o, "dataset"), want));
        json_decref(want);
        json_decref(o);
        o = gw_codec_job(j, 0);
        assert_true(json_is_null(json_object_get(o, "dataset")));
        json_decref(o);
        gw_job_free(j);
}

/* "scratch": decoded as a boolean (refused for an interactive session, naming the field);
 * the attempt's folder shown to the job's owner and admins only, null while it has none. */
static void job_scratch(void **state) {
        (void) state;
        struct gw_codec_error err;
        int r, hold;
        struct gw_job *j = decode("{\"command\": [\"t\"], \"scratch\": true}", &r, &hold, &err);
        assert_int_equal(r, 0);
        assert_true(j->scratch);
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        check_shape(o);
        json_t *want = load("{\"dir\": null}");
        assert_true(json_equal(json_object_get(o, "scratch"), want));
        json_decref(want);
        json_decref(o);
        j->scratch_dir = "/ssd/scratch/17-2";
        o = gw_codec_job(j, GW_VIEW_ALL);
        want = load("{\"dir\": \"/ssd/scratch/17-2\"}");
        assert_true(json_equal(json_object_get(o, "scratch"), want));
        json_decref(want);
        json_decref(o);
        o = gw_codec_job(j, 0);
        want = load("{\"dir\": null}");
        assert_true(json_equal(json_object_get(o, "scratch"), want));
        json_decref(want);
        json_decref(o);
        gw_job_free(j);
        j = decode("{\"command\": [\"t\"]}", &r, &hold, &err);
        assert_false(j->scratch);
        o = gw_codec_job(j, GW_VIEW_ALL);
        assert_true(json_is_null(json_object_get(o, "scratch")));
        json_decref(o);
        gw_job_free(j);
        static const char *const bad[] = {
                "{\"command\": [\"t\"], \"scratch\": 1}",
                "{\"command\": [\"t\"], \"scratch\": true, \"interactive\": true}",
        };
        for (size_t i = 0; i < N_ELEMS(bad); i++) {
                j = decode(bad[i], &r, &hold, &err);
                assert_int_equal(r, -EINVAL);
                assert_string_equal(err.field, "scratch");
                gw_job_free(j);
        }
}

/* "reasons": the main one first as "reason" says it, then the others the last pass found;
 * the Preempted shown stands in for the Resources it replaces, not beside it. */
static void job_reasons(void **state) {
        (void) state;
        struct gw_job *j = sample_job();
        j->wait_reason = GW_REASON_QUOTA;
        j->wait_detail = gw_xstrdup("Quota: max_gpus=2, 2 in use by job 5");
        j->wait_why = GW_WHY_BIT(GW_REASON_QUOTA) | GW_WHY_BIT(GW_REASON_DEPENDENCY) | GW_WHY_BIT(GW_REASON_DRAINED);
        j->after_job = 9;
        j->after_kind = GW_DEP_KIND_ANY;
        j->drain_view = "needs 2 GPUs, 1 is in service: GPU 0 drained (fan)";
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        json_t *want = json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:s}]", "code", "Quota", "text",
                                 "max_gpus=2, 2 in use by job 5", "code", "Dependency", "text", "after job 9 ends",
                                 "code", "Drained", "text", "needs 2 GPUs, 1 is in service: GPU 0 drained (fan)");
        assert_true(json_equal(json_object_get(o, "reasons"), want));
        json_decref(want);
        json_decref(o);

        j->wait_reason = GW_REASON_RESOURCES;
        j->wait_why = GW_WHY_BIT(GW_REASON_RESOURCES);
        j->queue_first = true;
        o = gw_codec_job(j, GW_VIEW_ALL);
        const json_t *r = json_object_get(o, "reasons");
        assert_int_equal(json_array_size(r), 1);
        assert_string_equal(json_string_value(json_object_get(json_array_get(r, 0), "code")), "Preempted");
        json_decref(o);

        j->state = GW_JOB_RUNNING;
        o = gw_codec_job(j, GW_VIEW_ALL);
        assert_int_equal(json_array_size(json_object_get(o, "reasons")), 0);
        json_decref(o);
        gw_job_free(j);
}

static void job_running_and_ended(void **state) {
        struct gw_job *j = sample_job();
        j->state = GW_JOB_RUNNING;
        j->wait_reason = GW_REASON_NONE;
        j->gpu_mask = (UINT64_C(1) << 1) | (UINT64_C(1) << 3) | (UINT64_C(1) << 63);
        j->start_time = INT64_C(1763769700500000);
        j->pid = 4242;
        j->log_path = gw_xstrdup("/var/lib/gpuward/logs/17.log");
        j->after_job = 16;
        j->after_kind = GW_DEP_KIND_ANY;
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        check_shape(o);
        assert_string_equal(json_string_value(json_object_get(o, "state")), "RUNNING");
        assert_string_equal(json_string_value(json_object_get(o, "reason")), "");
        const json_t *gpus = json_object_get(o, "gpus");
        assert_int_equal(json_array_size(gpus), 3);
        assert_int_equal(json_integer_value(json_array_get(gpus, 0)), 1);
        assert_int_equal(json_integer_value(json_array_get(gpus, 1)), 3);
        assert_int_equal(json_integer_value(json_array_get(gpus, 2)), 63);
        assert_true(fabs(json_real_value(json_object_get(o, "start_time")) - 1763769700.5) < 1e-4);
        assert_int_equal(json_integer_value(json_object_get(o, "pid")), 4242);
        assert_string_equal(json_string_value(json_object_get(o, "log_path")), "/var/lib/gpuward/logs/17.log");
        const json_t *after = json_object_get(o, "after");
        assert_int_equal(json_object_size(after), 2);
        assert_int_equal(json_integer_value(json_object_get(after, "job")), 16);
        assert_string_equal(json_string_value(json_object_get(after, "kind")), "any");
        assert_true(json_is_null(json_object_get(o, "exit_code")));
        json_decref(o);

        static const struct {
                enum gw_job_state st;
                bool has_exit;
                int exit_code, sig;
                const char *end_reason, *want_state;
                json_int_t want_exit, want_signal; /* -1 = null */
        } ends[] = {
                { GW_JOB_COMPLETED, true, 0, 0, "exit 0", "COMPLETED", 0, -1 },
                { GW_JOB_FAILED, true, 3, 0, "exit 3", "FAILED", 3, -1 },
                { GW_JOB_FAILED, true, 0, 9, "signal 9", "FAILED", -1, 9 },
                { GW_JOB_TIMEOUT, false, 0, 15, "time limit", "TIMEOUT", -1, 15 },
                { GW_JOB_CANCELLED, false, 0, 0, "cancelled by alice", "CANCELLED", -1, -1 },
                { GW_JOB_RECLAIMED, false, 0, 0, "lost", "RECLAIMED", -1, -1 },
        };
        for (size_t i = 0; i < N_ELEMS(ends); i++) {
                j->state = ends[i].st;
                j->has_exit = ends[i].has_exit;
                j->exit_code = ends[i].exit_code;
                j->signal = ends[i].sig;
                free(j->end_reason);
                j->end_reason = gw_xstrdup(ends[i].end_reason);
                j->end_time = INT64_C(1763769800000000);
                o = gw_codec_job(j, GW_VIEW_ALL);
                check_shape(o);
                assert_string_equal(json_string_value(json_object_get(o, "state")), ends[i].want_state);
                assert_string_equal(json_string_value(json_object_get(o, "reason")), ends[i].end_reason);
                assert_true(fabs(json_real_value(json_object_get(o, "end_time")) - 1763769800.0) < 1e-4);
                const json_t *ec = json_object_get(o, "exit_code"), *sg = json_object_get(o, "signal");
                if (ends[i].want_exit < 0)
                        assert_true(json_is_null(ec));
                else
                        assert_int_equal(json_integer_value(ec), ends[i].want_exit);
                if (ends[i].want_signal < 0)
                        assert_true(json_is_null(sg));
                else
                        assert_int_equal(json_integer_value(sg), ends[i].want_signal);
                json_decref(o);
        }
        gw_job_free(j);
}

/* ?fields= selection for long lists: a subset of the same keys, same values. */
/* layout=rows: the values of the masked object, in the order of the names list. */
static void job_rows(void **state) {
        (void) state;
        struct gw_job *j = sample_job();
        static const char *const lists[] = { "id", "state,id,gpus", "command,cwd,log_path,attempt", "" };
        for (size_t i = 0; i < N_ELEMS(lists); i++) {
                uint64_t mask = 0;
                assert_int_equal(gw_codec_job_fields(lists[i], &mask, &(struct gw_codec_error){ 0 }), 0);
                json_t *o = gw_codec_job_masked(j, mask, GW_VIEW_ALL), *row = gw_codec_job_row(j, mask, GW_VIEW_ALL);
                json_t *names = gw_codec_job_field_names(mask);
                assert_int_equal(json_array_size(row), json_object_size(o));
                assert_int_equal(json_array_size(names), json_object_size(o));
                for (size_t k = 0; k < json_array_size(names); k++) {
                        const char *name = json_string_value(json_array_get(names, k));
                        assert_non_null(name);
                        if (!json_equal(json_array_get(row, k), json_object_get(o, name)))
                                fail_msg("'%s': column %zu (%s) differs from the object", lists[i], k, name);
                }
                json_decref(o);
                json_decref(row);
                json_decref(names);
        }
        gw_job_free(j);
}

static void job_fields_mask(void **state) {
        struct gw_job *j = sample_job();
        json_t *full = gw_codec_job(j, GW_VIEW_ALL);
        static const struct {
                const char *list;
                const char *want[5]; /* NULL-terminated; all keys when want[0] is NULL */
        } cases[] = {
                { "id", { "id", NULL } },
                { "id,state,gpus", { "id", "state", "gpus", NULL } },
                { "pid,after", { "pid", "after", NULL } },
                { "state", { "state", NULL } },
                { "command,cwd,log_path,attempt", { "command", "cwd", "log_path", "attempt" } },
                { "id,id", { "id", NULL } },
                { "", { NULL } },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                uint64_t mask = 0;
                struct gw_codec_error err;
                memset(&err, 0, sizeof err);
                if (gw_codec_job_fields(cases[i].list, &mask, &err) != 0)
                        fail_msg("'%s' rejected: %s", cases[i].list, err.message);
                json_t *o = gw_codec_job_masked(j, mask, GW_VIEW_ALL);
                size_t n = 0;
                while (cases[i].want[n])
                        n++;
                if (n == 0) {
                        assert_true(json_equal(o, full));
                } else {
                        assert_int_equal(json_object_size(o), n);
                        for (size_t k = 0; k < n; k++) {
                                const char *key = cases[i].want[k];
                                if (!json_equal(json_object_get(o, key), json_object_get(full, key)))
                                        fail_msg("'%s': key %s differs from the full object", cases[i].list, key);
                        }
                }
                json_decref(o);
        }
        uint64_t mask = 0;
        assert_int_equal(gw_codec_job_fields(NULL, &mask, &(struct gw_codec_error){ 0 }), 0);
        assert_int_equal(mask, GW_CODEC_ALL_FIELDS);

        static const char *const bad[] = { "bogus", "id,bogus", "ID", " id", "events", "i", "idx" };
        for (size_t i = 0; i < N_ELEMS(bad); i++) {
                struct gw_codec_error err;
                memset(&err, 0, sizeof err);
                mask = 12345;
                if (gw_codec_job_fields(bad[i], &mask, &err) != -EINVAL)
                        fail_msg("'%s' accepted", bad[i]);
                assert_string_equal(err.field, "fields");
                assert_int_equal(mask, 12345); /* not written on failure */
        }
        json_decref(full);
        gw_job_free(j);
}

/* What a decoded spec shows through the encoder: the same command, limits and dependency. */
static void spec_to_job_round_trip(void **state) {
        struct gw_codec_error err;
        int r, hold;
        struct gw_job *j = decode("{\"command\": [\"a b\", \"\", \"c=d\"], \"time_limit\": \"1h\", \"gpu_mem\": 1024,"
                                  " \"after\": \"5:ok\", \"ngpus\": 3}",
                                  &r, &hold, &err);
        assert_int_equal(r, 0);
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        check_shape(o);
        json_t *want = load("[\"a b\", \"\", \"c=d\"]");
        assert_true(json_equal(json_object_get(o, "command"), want));
        json_decref(want);
        assert_int_equal(json_integer_value(json_object_get(o, "time_limit")), 3600);
        assert_int_equal(json_integer_value(json_object_get(o, "gpu_mem")), 1024);
        assert_int_equal(json_integer_value(json_object_get(o, "ngpus")), 3);
        want = load("{\"job\": 5, \"kind\": \"ok\"}");
        assert_true(json_equal(json_object_get(o, "after"), want));
        json_decref(want);
        json_decref(o);
        gw_job_free(j);
}

static void error_body(void **state) {
        static const struct {
                const char *field, *message;
                bool field_null;
        } cases[] = {
                { "command", "command: must be a non-empty array of strings", false },
                { "ngpus", "quote \" backslash \\ newline \n ünïcode", false },
                { "", "the request body must be a JSON object", true },
                { NULL, "cannot record the jobs", true },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                size_t len = 0;
                char *body = gw_codec_error_body(cases[i].field, cases[i].message, &len);
                assert_non_null(body);
                assert_int_equal(len, strlen(body));
                json_error_t e;
                json_t *o = json_loadb(body, len, 0, &e);
                if (!o)
                        fail_msg("not JSON: %s", body);
                assert_int_equal(json_object_size(o), 2);
                assert_string_equal(json_string_value(json_object_get(o, "error")), cases[i].message);
                const json_t *fv = json_object_get(o, "field");
                assert_non_null(fv);
                if (cases[i].field_null)
                        assert_true(json_is_null(fv));
                else
                        assert_string_equal(json_string_value(fv), cases[i].field);
                json_decref(o);
                free(body);
        }
}

/* What others read of a job: no log quote (its class and exit instead), and for guests no
 * command line, working directory or log path. */
static void job_views(void **state) {
        struct gw_job *j = sample_job();
        j->state = GW_JOB_FAILED;
        j->has_exit = true;
        j->exit_code = 1;
        j->log_path = gw_xstrdup("/var/lib/gpuward/logs/17.log");
        j->end_reason = gw_xstrdup("user_error: \x1eValueError: api_key sk-123\x1f");
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        assert_string_equal(json_string_value(json_object_get(o, "reason")), "user_error: ValueError: api_key sk-123");
        json_decref(o);
        o = gw_codec_job(j, GW_VIEW_DETAILS);
        assert_string_equal(json_string_value(json_object_get(o, "reason")),
                            "user_error: exit 1 " GW_CODEC_EVIDENCE_HIDDEN);
        assert_true(json_is_array(json_object_get(o, "command")));
        assert_string_equal(json_string_value(json_object_get(o, "cwd")), j->cwd);
        json_decref(o);
        o = gw_codec_job(j, 0);
        assert_null(strstr(json_string_value(json_object_get(o, "reason")), "sk-123"));
        assert_true(json_is_null(json_object_get(o, "command")));
        assert_true(json_is_null(json_object_get(o, "cwd")));
        assert_true(json_is_null(json_object_get(o, "log_path")));
        assert_string_equal(json_string_value(json_object_get(o, "name")), j->name);
        json_decref(o);
        struct gw_job_event ev = { 0, GW_JOB_PENDING, (char *) "retry",
                                   (char *) "user_error: \x1esk-123\x1f; retry 1/3" };
        o = gw_codec_events(&ev, 1, GW_VIEW_DETAILS);
        assert_string_equal(json_string_value(json_object_get(json_array_get(o, 0), "message")),
                            "user_error: " GW_CODEC_EVIDENCE_HIDDEN "; retry 1/3");
        json_decref(o);
        gw_job_free(j);
}

/* An interactive session: never retried (retries 0 when not given, refused above 0), no
 * output file; its socket shown to its owner while it runs, to nobody else. */
/* A job array's spec: kept as given once the core's parser takes it; refused naming the
 * field otherwise; encoded back with the array's tasks when the daemon adds them. */
static void spec_array(void **state) {
        (void) state;
        struct gw_codec_error err;
        int r, hold;
        struct gw_job *j = decode("{\"command\": [\"t\"], \"array\": \"0-49%4\"}", &r, &hold, &err);
        assert_int_equal(r, 0);
        assert_string_equal(j->array_spec, "0-49%4");
        struct gw_job_array_view v = { .total = 50,
                                       .waiting = "17_[5-49%4]",
                                       .best_index = 3,
                                       .best_map50_95 = 0.5,
                                       .best_epoch = 7 };
        v.counts[GW_JOB_PENDING] = 45;
        v.counts[GW_JOB_RUNNING] = 4;
        v.counts[GW_JOB_COMPLETED] = 1;
        j->id = 17;
        j->array_view = &v;
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        assert_string_equal(json_string_value(json_object_get(o, "array")), "0-49%4");
        assert_string_equal(json_string_value(json_object_get(o, "array_waiting")), "17_[5-49%4]");
        json_t *tasks = json_object_get(o, "array_tasks");
        assert_int_equal(json_integer_value(json_object_get(tasks, "total")), 50);
        assert_int_equal(json_integer_value(json_object_get(tasks, "PENDING")), 45);
        assert_null(json_object_get(tasks, "FAILED"));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "array_best"), "index")), 3);
        assert_true(json_is_null(json_object_get(o, "array_job_id")));
        json_decref(o);
        gw_job_free(j);
        static const char *const bad[] = {
                "{\"command\": [\"t\"], \"array\": \"9-3\"}",
                "{\"command\": [\"t\"], \"array\": 5}",
                "{\"command\": [\"t\"], \"array\": \"\"}",
                "{\"command\": [\"t\"], \"array\": \"0-3%0\"}",
                "{\"command\": [\"bash\"], \"interactive\": true, \"array\": \"0-3\"}",
        };
        for (size_t i = 0; i < N_ELEMS(bad); i++) {
                j = decode(bad[i], &r, &hold, &err);
                assert_int_equal(r, -EINVAL);
                assert_string_equal(err.field, "array");
                gw_job_free(j);
        }
}

/* MIG slices: {"profile", "count"} (count 1 when left out), stored as asked; the slices a
 * job got come back as their UUIDs, in order. */
static void spec_mig(void **state) {
        (void) state;
        struct gw_codec_error err;
        int r, hold;
        struct gw_job *j =
                decode("{\"command\": [\"t\"], \"ngpus\": 1, \"mig\": {\"profile\": \"1g.10gb\", \"count\": 2}}", &r,
                       &hold, &err);
        assert_int_equal(r, 0);
        assert_string_equal(j->mig_profile, "1g.10gb");
        assert_int_equal(j->mig_count, 2);
        j->mig_slices = gw_xstrdup("MIG-a,MIG-b");
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        json_t *want = load("{\"profile\": \"1g.10gb\", \"count\": 2}");
        assert_true(json_equal(json_object_get(o, "mig"), want));
        json_decref(want);
        want = load("[\"MIG-a\", \"MIG-b\"]");
        assert_true(json_equal(json_object_get(o, "slices"), want));
        json_decref(want);
        json_decref(o);
        gw_job_free(j);
        j = decode("{\"command\": [\"t\"], \"mig\": {\"profile\": \"3g.40gb\"}}", &r, &hold, &err);
        assert_int_equal(r, 0);
        assert_int_equal(j->mig_count, 1);
        gw_job_free(j);
        j = decode("{\"command\": [\"t\"]}", &r, &hold, &err);
        o = gw_codec_job(j, GW_VIEW_ALL);
        assert_true(json_is_null(json_object_get(o, "mig")));
        assert_true(json_is_null(json_object_get(o, "slices")));
        json_decref(o);
        gw_job_free(j);

        static const struct {
                const char *body, *field;
        } bad[] = {
                { "{\"command\": [\"t\"], \"mig\": \"1g.10gb\"}", "mig" },
                { "{\"command\": [\"t\"], \"mig\": {}}", "mig" },
                { "{\"command\": [\"t\"], \"mig\": {\"profile\": \"whole\"}}", "mig" },
                { "{\"command\": [\"t\"], \"mig\": {\"profile\": \"1g.10gb\", \"count\": 0}}", "mig" },
                { "{\"command\": [\"t\"], \"mig\": {\"profile\": \"1g.10gb\", \"count\": 65}}", "mig" },
                { "{\"command\": [\"t\"], \"mig\": {\"profile\": \"1g.10gb\", \"count\": \"2\"}}", "mig" },
                { "{\"command\": [\"t\"], \"mig\": {\"profile\": \"1g.10gb\", \"cont\": 2}}", "mig" },
                { "{\"command\": [\"t\"], \"ngpus\": 2, \"mig\": {\"profile\": \"1g.10gb\"}}", "ngpus" },
                { "{\"command\": [\"t\"], \"gpu_mem\": \"1G\", \"mig\": {\"profile\": \"1g.10gb\"}}", "gpu_mem" },
                { "{\"command\": [\"t\"], \"reservation\": 3, \"mig\": {\"profile\": \"1g.10gb\"}}", "reservation" },
                { "{\"command\": [\"t\"], \"array\": \"0-3\", \"mig\": {\"profile\": \"1g.10gb\"}}", "array" },
        };
        for (size_t i = 0; i < N_ELEMS(bad); i++) {
                j = decode(bad[i].body, &r, &hold, &err);
                assert_int_equal(r, -EINVAL);
                assert_string_equal(err.field, bad[i].field);
                assert_null(j->mig_profile); /* nothing taken */
                gw_job_free(j);
        }
}

static void spec_interactive(void **state) {
        (void) state;
        struct gw_codec_error err;
        int r, hold;
        struct gw_job *j = decode("{\"command\": [\"bash\"], \"interactive\": true}", &r, &hold, &err);
        assert_int_equal(r, 0);
        assert_true(j->interactive);
        assert_int_equal(j->retries, 0);
        j->state = GW_JOB_RUNNING;
        j->tty_socket = gw_xstrdup("/var/lib/gpuward/run/tty/17.sock");
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        assert_true(json_is_true(json_object_get(o, "interactive")));
        assert_string_equal(json_string_value(json_object_get(o, "tty_socket")), j->tty_socket);
        json_decref(o);
        o = gw_codec_job(j, GW_VIEW_DETAILS);
        assert_true(json_is_null(json_object_get(o, "tty_socket")));
        json_decref(o);
        j->state = GW_JOB_FAILED;
        o = gw_codec_job(j, GW_VIEW_ALL);
        assert_true(json_is_null(json_object_get(o, "tty_socket")));
        json_decref(o);
        gw_job_free(j);
        static const struct {
                const char *body, *field;
        } bad[] = {
                { "{\"command\": [\"bash\"], \"interactive\": true, \"retries\": 1}", "retries" },
                { "{\"command\": [\"bash\"], \"interactive\": true, \"output\": \"/tmp/o\"}", "output" },
                { "{\"command\": [\"bash\"], \"interactive\": \"yes\"}", "interactive" },
                { "{\"command\": [\"bash\"], \"preemptible\": \"yes\"}", "preemptible" },
        };
        for (size_t i = 0; i < N_ELEMS(bad); i++) {
                j = decode(bad[i].body, &r, &hold, &err);
                assert_int_equal(r, -EINVAL);
                assert_string_equal(err.field, bad[i].field);
                gw_job_free(j);
        }
        j = decode("{\"command\": [\"true\"], \"retries\": 2}", &r, &hold, &err);
        assert_int_equal(r, 0);
        assert_false(j->interactive);
        assert_int_equal(j->retries, 2);
        gw_job_free(j);
}

/* submit --publish NAME [--publish-if-better METRIC]: bounded, named in the refusal. */
static void publish(void **state) {
        (void) state;
        int r, hold;
        struct gw_codec_error err;
        struct gw_job *j = decode("{\"command\": [\"true\"], \"publish\": \"det-v8.n\", "
                                  "\"publish_if_better\": \"metrics/mAP50-95(B)\"}",
                                  &r, &hold, &err);
        assert_int_equal(r, 0);
        assert_string_equal(j->publish, "det-v8.n");
        assert_string_equal(j->publish_metric, "metrics/mAP50-95(B)");
        json_t *o = gw_codec_job(j, GW_VIEW_ALL);
        assert_string_equal(json_string_value(json_object_get(o, "publish")), "det-v8.n");
        assert_string_equal(json_string_value(json_object_get(o, "publish_if_better")), "metrics/mAP50-95(B)");
        json_decref(o);
        gw_job_free(j);
        static const struct {
                const char *body, *field;
        } bad[] = {
                { "{\"command\": [\"true\"], \"publish\": \"../etc\"}", "publish" },
                { "{\"command\": [\"true\"], \"publish\": \".hidden\"}", "publish" },
                { "{\"command\": [\"true\"], \"publish\": \"\"}", "publish" },
                { "{\"command\": [\"true\"], \"publish\": 3}", "publish" },
                { "{\"command\": [\"true\"], \"publish\": \"a\", \"publish_if_better\": \"a b\"}",
                  "publish_if_better" },
                { "{\"command\": [\"true\"], \"publish_if_better\": \"metrics/mAP50(B)\"}", "publish_if_better" },
                { "{\"command\": [\"bash\"], \"interactive\": true, \"publish\": \"a\"}", "publish" },
        };
        for (size_t i = 0; i < N_ELEMS(bad); i++) {
                j = decode(bad[i].body, &r, &hold, &err);
                assert_int_equal(r, -EINVAL);
                assert_string_equal(err.field, bad[i].field);
                gw_job_free(j);
        }
}

static void events(void **state) {
        struct gw_job_event ev[] = {
                { INT64_C(1763769600000000), GW_JOB_PENDING, (char *) "submit", (char *) "submitted by alice" },
                { 0, GW_JOB_RUNNING, (char *) "start", NULL },
        };
        json_t *a = gw_codec_events(ev, N_ELEMS(ev), GW_VIEW_ALL);
        assert_int_equal(json_array_size(a), 2);
        json_t *e0 = json_array_get(a, 0), *e1 = json_array_get(a, 1);
        assert_true(fabs(json_real_value(json_object_get(e0, "time")) - 1763769600.0) < 1e-4);
        assert_string_equal(json_string_value(json_object_get(e0, "state")), "PENDING");
        assert_string_equal(json_string_value(json_object_get(e0, "kind")), "submit");
        assert_string_equal(json_string_value(json_object_get(e0, "message")), "submitted by alice");
        assert_true(json_is_null(json_object_get(e1, "time")));
        assert_string_equal(json_string_value(json_object_get(e1, "message")), "");
        json_decref(a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(spec_full),
                cmocka_unit_test(spec_minimal_defaults),
                cmocka_unit_test(spec_value_forms),
                cmocka_unit_test(spec_rejects),
                cmocka_unit_test(spec_not_an_object),
                cmocka_unit_test(job_pending),
                cmocka_unit_test(job_reasons),
                cmocka_unit_test(job_dataset),
                cmocka_unit_test(job_scratch),
                cmocka_unit_test(job_prediction_attempt),
                cmocka_unit_test(job_running_and_ended),
                cmocka_unit_test(job_fields_mask),
                cmocka_unit_test(job_rows),
                cmocka_unit_test(spec_to_job_round_trip),
                cmocka_unit_test(error_body),
                cmocka_unit_test(events),
                cmocka_unit_test(spec_interactive),
                cmocka_unit_test(spec_array),
                cmocka_unit_test(publish),
                cmocka_unit_test(spec_mig),
                cmocka_unit_test(job_views),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
