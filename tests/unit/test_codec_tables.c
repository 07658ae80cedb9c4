/* src/api's field tables (codec_table.h) and the resources encoded by them: bookings,
 * schedule segments, tokens, quotas, usage rows (codec_share.h), attempts and events
 * (codec_rec.c), GPUs and their processes (codec_gpu.h).  The expected texts are the bytes
 * the API replied before the tables: the CLI, the dashboard and scripts read them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>

#include "api/codec.h"
#include "api/codec_gpu.h"
#include "api/codec_share.h"
#include "api/codec_table.h"
#include "base/cleanup.h"

#define SEC GW_USEC_PER_SEC

/* Compares the compact text of o (stolen) with want. */
static void expect_json(json_t *o, const char *want) {
        assert_non_null(o);
        char *got = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        assert_non_null(got);
        if (strcmp(got, want))
                fail_msg("got  %s\nwant %s", got, want);
        free(got);
}

struct sample {
        int i;
        unsigned u;
        uint32_t u32;
        int64_t i64, id;
        uint64_t u64, mask;
        bool b;
        double r;
        char chars[8];
        const char *s, *maybe;
        gw_usec_t t, t_or_null;
};

static json_t *sample_fn(const void *obj, const struct gw_codec_ctx *ctx) {
        return json_integer(((const struct sample *) obj)->i + (json_int_t) ctx->now);
}

#define S struct sample
static const struct gw_codec_field sample_fields[] = {
        GW_CODEC_FIELD("i", GW_CT_INT, S, i),
        GW_CODEC_FIELD("u", GW_CT_UINT, S, u),
        GW_CODEC_FIELD("u32", GW_CT_U32, S, u32),
        GW_CODEC_FIELD("i64", GW_CT_I64, S, i64),
        GW_CODEC_FIELD("u64", GW_CT_U64, S, u64),
        GW_CODEC_FIELD("id", GW_CT_ID_OR_NULL, S, id),
        GW_CODEC_FIELD("b", GW_CT_BOOL, S, b),
        GW_CODEC_FIELD("r", GW_CT_REAL, S, r),
        GW_CODEC_FIELD("chars", GW_CT_CHARS, S, chars),
        GW_CODEC_FIELD("s", GW_CT_STR, S, s),
        GW_CODEC_FIELD("maybe", GW_CT_STR_OR_NULL, S, maybe),
        GW_CODEC_FIELD("t", GW_CT_SECONDS, S, t),
        GW_CODEC_FIELD("t_or_null", GW_CT_SECONDS_OR_NULL, S, t_or_null),
        GW_CODEC_FIELD("gpus", GW_CT_GPUS, S, mask),
        GW_CODEC_FIELD_FN("fn", sample_fn),
        GW_CODEC_FIELD_NEED("secret", GW_CT_STR, S, s, GW_VIEW_DETAILS),
};
#undef S

/* Every type of the table, in the table's order; a field the reader may not see is null. */
static void table_types(void **state) {
        (void) state;
        struct sample s = { .i = -3,
                            .u = 4000000000u,
                            .u32 = 7,
                            .i64 = -(INT64_C(1) << 40),
                            .id = 0,
                            .u64 = UINT64_C(85899345920),
                            .mask = 0x5,
                            .b = true,
                            .r = 0.5,
                            .chars = "ab\xff",
                            .s = NULL,
                            .maybe = NULL,
                            .t = 1500000,
                            .t_or_null = 0 };
        struct gw_codec_ctx ctx = { 0, 10 };
        expect_json(gw_codec_table_object(sample_fields, ELEMENTSOF(sample_fields), &s, &ctx),
                    "{\"i\":-3,\"u\":4000000000,\"u32\":7,\"i64\":-1099511627776,\"u64\":85899345920,\"id\":null,"
                    "\"b\":true,\"r\":0.5,\"chars\":\"ab?\",\"s\":\"\",\"maybe\":null,\"t\":1.5,\"t_or_null\":null,"
                    "\"gpus\":[0,2],\"fn\":7,\"secret\":null}");
        s.id = 12;
        s.s = "x";
        s.maybe = "y";
        s.t_or_null = 2 * SEC;
        ctx.view = GW_VIEW_DETAILS;
        json_t *o = gw_codec_table_object(sample_fields, ELEMENTSOF(sample_fields), &s, &ctx);
        assert_int_equal(json_integer_value(json_object_get(o, "id")), 12);
        assert_string_equal(json_string_value(json_object_get(o, "maybe")), "y");
        assert_true(json_real_value(json_object_get(o, "t_or_null")) == 2.0);
        assert_string_equal(json_string_value(json_object_get(o, "secret")), "x");
        json_decref(o);
        struct sample two[2] = { s, s };
        two[1].i = 9;
        o = gw_codec_table_array(sample_fields, 1, two, 2, sizeof two[0], &ctx);
        expect_json(o, "[{\"i\":-3},{\"i\":9}]");
        expect_json(gw_codec_gpu_mask(UINT64_C(1) << 63), "[63]");
}

static void booking(void **state) {
        (void) state;
        struct gw_store_booking b = { .id = 4,
                                      .uid = 1001,
                                      .user = "ann",
                                      .name = "paper",
                                      .ngpus = 2,
                                      .start = 1790000000 * SEC,
                                      .end = 1790003600 * SEC + SEC / 2,
                                      .gpu_mask = 0x6,
                                      .state = GW_BOOKING_PENDING_APPROVAL,
                                      .note = "more than 1 GPU" };
        expect_json(gw_codec_booking(&b),
                    "{\"id\":4,\"user\":\"ann\",\"uid\":1001,\"name\":\"paper\",\"ngpus\":2,\"gpus\":[1,2],"
                    "\"start\":1790000000.0,\"end\":1790003600.5,\"state\":\"PENDING_APPROVAL\","
                    "\"note\":\"more than 1 GPU\"}");
}

/* A booking that does not fit says the nearest window only when there is one. */
static void booking_refusal(void **state) {
        (void) state;
        expect_json(
                gw_codec_booking_refusal("only 2 GPUs free", 7200 * SEC, 10800 * SEC),
                "{\"error\":\"only 2 GPUs free\",\"field\":\"start\",\"nearest\":{\"start\":7200.0,\"end\":10800.0}}");
        expect_json(gw_codec_booking_refusal("never", 0, 0), "{\"error\":\"never\",\"field\":\"start\"}");
}

static void segment(void **state) {
        (void) state;
        struct gw_schedule_segment s = { .gpu = 3,
                                         .start = 10 * SEC,
                                         .end = 20 * SEC,
                                         .kind = GW_SEG_RUNNING,
                                         .id = 17,
                                         .booking_id = 4,
                                         .label = "train" };
        expect_json(gw_codec_segment(&s), "{\"gpu\":3,\"start\":10.0,\"end\":20.0,\"kind\":\"running\",\"id\":17,"
                                          "\"booking\":4,\"label\":\"train\"}");
}

/* A token's list row never carries its hash; expired is as of the now given. */
static void token(void **state) {
        (void) state;
        struct gw_store_token t = { .id = 2,
                                    .uid = 1001,
                                    .user = "ann",
                                    .name = "ci",
                                    .hash = "abc",
                                    .created = 100 * SEC,
                                    .last_used = 0,
                                    .expires = 200 * SEC };
        expect_json(gw_codec_token(&t, 150 * SEC),
                    "{\"id\":2,\"user\":\"ann\",\"name\":\"ci\",\"created\":100.0,\"last_used\":null,"
                    "\"expires\":200.0,\"expired\":false,\"scope\":null,\"node\":null}");
        json_t *o = gw_codec_token(&t, 200 * SEC);
        assert_true(json_is_true(json_object_get(o, "expired")));
        json_decref(o);
        t.expires = 0; /* never */
        o = gw_codec_token(&t, INT64_MAX);
        assert_true(json_is_false(json_object_get(o, "expired")));
        assert_true(json_is_null(json_object_get(o, "expires")));
        json_decref(o);
        strcpy(t.scope, "agent");
        o = gw_codec_token(&t, 0);
        assert_string_equal(json_string_value(json_object_get(o, "scope")), "agent");
        json_decref(o);
        struct gw_codec_token_made m = { .id = 3, .user = "ann", .name = NULL, .token = "gw_00", .expires = 0 };
        expect_json(gw_codec_token_made(&m),
                    "{\"id\":3,\"user\":\"ann\",\"name\":\"\",\"token\":\"gw_00\",\"expires\":null,"
                    "\"scope\":null,\"node\":null}");
}

static void quota(void **state) {
        (void) state;
        struct gw_quota lim;
        enum gw_quota_source from[_GW_QUOTA_KEY_MAX];
        for (int k = 0; k < _GW_QUOTA_KEY_MAX; k++) {
                lim.v[k] = GW_QUOTA_UNLIMITED;
                from[k] = GW_QUOTA_FROM_NONE;
        }
        lim.v[GW_QUOTA_MAX_GPUS] = 4;
        from[GW_QUOTA_MAX_GPUS] = GW_QUOTA_FROM_GROUP;
        struct gw_quota_usage u = { .gpus_running = 2, .pending_jobs = 5, .gpu_time_7d = (gw_usec_t) 9 * 3600 * SEC };
        struct gw_codec_quota q = { .user = "ann", .limits = &lim, .from = from, .usage = &u };
        json_t *o = gw_codec_quota(&q);
        const char *key;
        json_t *v;
        static const char *const order[] = { "user", "limits", "usage" }; /* as the CLI prints them */
        size_t i = 0;
        json_object_foreach (o, key, v)
                assert_string_equal(key, order[i++]);
        json_t *lims = json_object_get(o, "limits");
        assert_int_equal(json_object_size(lims), _GW_QUOTA_KEY_MAX);
        expect_json(json_incref(json_object_get(lims, "max_gpus")), "{\"value\":\"4\",\"from\":\"group\"}");
        expect_json(json_incref(json_object_get(lims, "max_pending_jobs")),
                    "{\"value\":\"unlimited\",\"from\":\"unlimited\"}");
        expect_json(json_incref(json_object_get(o, "usage")),
                    "{\"gpus_running\":2,\"pending_jobs\":5,\"gpu_hours_7d\":9.0}");
        json_decref(o);
}

static void usage_user(void **state) {
        (void) state;
        struct gw_acct_user u = { .uid = 1001,
                                  .user = "ann",
                                  .jobs = 3,
                                  .gpu_hours = 1.5,
                                  .reclaimed_gpu_hours = 0.25 };
        u.by_state[GW_JOB_COMPLETED] = 2;
        u.by_state[GW_JOB_FAILED] = 1;
        expect_json(gw_codec_usage_user(&u),
                    "{\"user\":\"ann\",\"uid\":1001,\"jobs\":3,\"gpu_hours\":1.5,\"util_mean\":null,"
                    "\"reclaimed_gpu_hours\":0.25,\"states\":{\"COMPLETED\":2,\"FAILED\":1}}");
        u.measured_gpu_hours = 3;
        u.util_weighted = 100; /* 33.33..., said to one decimal */
        json_t *o = gw_codec_usage_user(&u);
        assert_true(json_real_value(json_object_get(o, "util_mean")) == 33.3);
        json_decref(o);
}

/* Paths are details; what an attempt quotes from the log is for its owner (GW_VIEW_LOG).  The
 * checkpoint's epoch only with a checkpoint, and only when it was read (not 0). */
static void attempts(void **state) {
        (void) state;
        struct gw_job_attempt a[2] = {
                { .attempt = 1,
                  .gpu_mask = 0x1,
                  .start_time = 1 * SEC,
                  .end_time = 2 * SEC,
                  .has_exit = true,
                  .exit_code = 3,
                  .class_name = "cuda_error",
                  .evidence = "exit 3",
                  .resumed_from = NULL,
                  .epoch = -1,
                  .ckpt_epoch = 4,
                  .log_path = "/s/logs/1.log" },
                { .attempt = 2,
                  .gpu_mask = 0x2,
                  .start_time = 3 * SEC,
                  .end_time = 4 * SEC,
                  .signal = 9,
                  .class_name = NULL,
                  .evidence = NULL,
                  .resumed_from = "/ckpt/e3.pt",
                  .epoch = 3,
                  .ckpt_epoch = 2,
                  .log_path = "/s/logs/1.2.log" },
        };
        expect_json(gw_codec_attempts(a, 2, GW_VIEW_ALL),
                    "[{\"attempt\":1,\"gpus\":[0],\"start_time\":1.0,\"end_time\":2.0,\"class\":\"cuda_error\","
                    "\"evidence\":\"exit 3\",\"resumed_from\":null,\"epoch\":-1,\"ckpt_epoch\":null,"
                    "\"log_path\":\"/s/logs/1.log\","
                    "\"exit_code\":3,\"signal\":null},"
                    "{\"attempt\":2,\"gpus\":[1],\"start_time\":3.0,\"end_time\":4.0,\"class\":\"\",\"evidence\":\"\","
                    "\"resumed_from\":\"/ckpt/e3.pt\",\"epoch\":3,\"ckpt_epoch\":2,\"log_path\":\"/s/logs/1.2.log\","
                    "\"exit_code\":null,"
                    "\"signal\":9}]");
        json_t *o = gw_codec_attempts(a, 2, 0);
        json_t *second = json_array_get(o, 1);
        assert_true(json_is_null(json_object_get(second, "resumed_from")));
        assert_true(json_is_null(json_object_get(second, "log_path")));
        assert_int_equal(json_integer_value(json_object_get(second, "signal")), 9);
        assert_int_equal(json_integer_value(json_object_get(second, "ckpt_epoch")), 2);
        json_decref(o);
        a[1].ckpt_epoch = 0; /* not read */
        o = gw_codec_attempts(a, 2, GW_VIEW_ALL);
        assert_true(json_is_null(json_object_get(json_array_get(o, 1), "ckpt_epoch")));
        json_decref(o);
        expect_json(gw_codec_attempts(a, 0, GW_VIEW_ALL), "[]");
}

static void gpu_events(void **state) {
        (void) state;
        struct gw_gpu_event_rec e = { .time = 5 * SEC,
                                      .gpu = 1,
                                      .kind = "rogue",
                                      .xid = -1,
                                      .job_id = 0,
                                      .message = "pid 7 (bob, python x.py)" };
        expect_json(gw_codec_gpu_event(&e, true),
                    "{\"time\":5.0,\"gpu\":1,\"node\":null,\"kind\":\"rogue\",\"xid\":null,"
                    "\"job\":null,\"message\":\"pid 7 (bob, python x.py)\"}");
        e.xid = 79;
        e.job_id = 8;
        e.node = "node1";
        expect_json(gw_codec_gpu_event(&e, false),
                    "{\"time\":5.0,\"gpu\":1,\"node\":\"node1\",\"kind\":\"rogue\",\"xid\":79,"
                    "\"job\":8,\"message\":null}");
}

static void job_events(void **state) {
        (void) state;
        struct gw_job_event ev = { .time = 0, .state = GW_JOB_RUNNING, .kind = "start", .message = "on GPU 0" };
        expect_json(gw_codec_events(&ev, 1, 0),
                    "[{\"time\":null,\"state\":\"RUNNING\",\"kind\":\"start\",\"message\":\"on GPU 0\"}]");
}

/* A value the driver did not give is null, never 0; command lines are details. */
static void gpu(void **state) {
        (void) state;
        struct gw_codec_proc procs[2] = {
                { .pid = 41,
                  .user = "ann",
                  .cmd = "python train.py --key s3cret",
                  .mem = 1 << 20,
                  .sm_util = 50,
                  .cpu = 98.76,
                  .job_id = 7,
                  .stray = false },
                { .pid = 42,
                  .user = "bob",
                  .cmd = "sleep 9",
                  .mem = UINT64_MAX,
                  .sm_util = -1,
                  .cpu = -1,
                  .job_id = 0,
                  .stray = true },
        };
        struct gw_job j = { .id = 7, .user = "ann", .name = NULL, .start_time = 3 * SEC, .eta = 0 };
        struct gw_codec_gpu g = { .index = 1,
                                  .name = "A100",
                                  .uuid = "GPU-1",
                                  .mem_total = UINT64_C(1) << 34,
                                  .has_mem = true,
                                  .has_util = true,
                                  .has_temp = false,
                                  .has_power = true,
                                  .mem_used = 1 << 20,
                                  .util = 50,
                                  .mem_util = 7,
                                  .temp_c = 99,
                                  .power_mw = 61500,
                                  .health = "drained",
                                  .drain_reason = "fan (by root)",
                                  .job_id = 7,
                                  .job = &j,
                                  .procs = procs,
                                  .n_procs = 2,
                                  .sampled_at = 9 * SEC,
                                  .reclaim_at = 600 * SEC,
                                  .leak_evidence = "GPU 1: +400 MiB/epoch; OOM in ~6 epochs",
                                  .leak_epochs_to_oom = 6.25,
                                  .leak_seconds_to_oom = -1 };
        expect_json(
                gw_codec_gpu(&g, GW_VIEW_DETAILS),
                "{\"index\":1,\"name\":\"A100\",\"uuid\":\"GPU-1\",\"mem_total\":17179869184,\"mem_used\":1048576,"
                "\"util\":50,\"mem_util\":7,\"temp\":null,\"power_w\":61.5,\"health\":\"drained\","
                "\"drain_reason\":\"fan (by root)\",\"job\":7,"
                "\"job_info\":{\"id\":7,\"user\":\"ann\",\"name\":\"\",\"start_time\":3.0,\"eta\":null,\"display_id\":\"7\","
                "\"reclaim_at\":600.0,\"leak\":{\"evidence\":\"GPU 1: +400 MiB/epoch; OOM in ~6 epochs\","
                "\"epochs_to_oom\":6.25,\"seconds_to_oom\":null}},"
                "\"processes\":[{\"pid\":41,\"user\":\"ann\",\"command\":\"python train.py --key s3cret\","
                "\"mem_used\":1048576,\"sm_util\":50,\"cpu\":99,\"job\":7,\"stray\":false},"
                "{\"pid\":42,\"user\":\"bob\",\"command\":\"sleep 9\",\"mem_used\":null,\"sm_util\":null,"
                "\"cpu\":null,\"job\":null,\"stray\":true}],\"sampled_at\":9.0,\"mig_mode\":false,\"gpm\":null,\"mig\":[]}");
        g.has_mem = g.has_util = g.has_power = false;
        g.drain_reason = NULL;
        g.job_id = 0;
        g.job = NULL;
        g.sampled_at = 0;
        g.n_procs = 1;
        expect_json(
                gw_codec_gpu(&g, 0),
                "{\"index\":1,\"name\":\"A100\",\"uuid\":\"GPU-1\",\"mem_total\":17179869184,\"mem_used\":null,"
                "\"util\":null,\"mem_util\":null,\"temp\":null,\"power_w\":null,\"health\":\"drained\","
                "\"drain_reason\":null,\"job\":null,\"job_info\":null,"
                "\"processes\":[{\"pid\":41,\"user\":\"ann\",\"command\":null,\"mem_used\":1048576,"
                "\"sm_util\":50,\"cpu\":99,\"job\":7,\"stray\":false}],\"sampled_at\":null,\"mig_mode\":false,\"gpm\":null,\"mig\":[]}");

        /* In MIG mode: each slice with its share of the GPU; an activity figure only where GPM
         * measured one. */
        struct gw_codec_proc sp = { .pid = 43, .user = "cy", .mem = 5 << 20, .sm_util = -1, .cpu = -1, .job_id = 9 };
        struct gw_codec_mig m[2] = {
                { .uuid = "MIG-a",
                  .profile = "1g.10gb",
                  .gi_id = 7,
                  .ci_id = 0,
                  .slices = 1,
                  .max_slices = 7,
                  .has_mem = true,
                  .has_procs = true,
                  .mem_total = 10 << 20,
                  .mem_used = 5 << 20,
                  .job_id = 9,
                  .procs = &sp,
                  .n_procs = 1,
                  .activity = 37 },
                { .uuid = "MIG-b",
                  .profile = "",
                  .gi_id = -1,
                  .ci_id = -1,
                  .slices = 0,
                  .max_slices = 7,
                  .activity = -1 },
        };
        g.n_procs = 0;
        g.mig_mode = true;
        g.mig = m;
        g.n_mig = 2;
        json_t *o = gw_codec_gpu(&g, 0);
        expect_json(json_incref(json_object_get(o, "mig")),
                    "[{\"uuid\":\"MIG-a\",\"profile\":\"1g.10gb\",\"gpu_instance\":7,\"compute_instance\":0,"
                    "\"slices\":1,\"share\":0.1429,\"mem_total\":10485760,\"mem_used\":5242880,\"job\":9,"
                    "\"processes\":[{\"pid\":43,\"user\":\"cy\",\"command\":null,\"mem_used\":5242880,"
                    "\"sm_util\":null,\"cpu\":null,\"job\":9,\"stray\":false}],\"activity\":37},"
                    "{\"uuid\":\"MIG-b\",\"profile\":null,\"gpu_instance\":null,\"compute_instance\":null,"
                    "\"slices\":0,\"share\":null,\"mem_total\":null,\"mem_used\":null,\"job\":null,"
                    "\"processes\":null,\"activity\":null}]");
        assert_true(json_is_true(json_object_get(o, "mig_mode")));
        assert_true(json_is_false(json_object_get(o, "gpm")));
        json_decref(o);
        g.gpm = true; /* per-slice activity offered */
        o = gw_codec_gpu(&g, 0);
        assert_true(json_is_true(json_object_get(o, "gpm")));
        json_decref(o);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(table_types), cmocka_unit_test(booking),  cmocka_unit_test(booking_refusal),
                cmocka_unit_test(segment),     cmocka_unit_test(token),    cmocka_unit_test(quota),
                cmocka_unit_test(usage_user),  cmocka_unit_test(attempts), cmocka_unit_test(gpu_events),
                cmocka_unit_test(job_events),  cmocka_unit_test(gpu),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
