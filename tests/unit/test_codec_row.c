/* layout=rows written field by field (gw_codec_job_row_write) must be byte for byte what
 * jansson writes for the row's array (gw_codec_job_row): a client sees no difference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "api/codec.h"
#include "base/cleanup.h"

#define SEC INT64_C(1000000)

static void check_same(const struct gw_job *j, const char *what) {
        uint64_t all = 0;
        assert_int_equal(gw_codec_job_fields("", &all, &(struct gw_codec_error){ 0 }), 0);
        static const unsigned views[] = { 0, GW_VIEW_DETAILS, GW_VIEW_ALL };
        for (size_t v = 0; v < sizeof views / sizeof *views; v++) {
                json_t *row = gw_codec_job_row(j, all, views[v]);
                char *want = json_dumps(row, JSON_COMPACT);
                char *got = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&got, &len);
                assert_non_null(f);
                gw_codec_job_row_write(j, all, views[v], f);
                fclose(f);
                if (strcmp(want, got))
                        fail_msg("%s, view %u:\njansson: %s\nwritten: %s", what, views[v], want, got);
                free(want);
                free(got);
                json_decref(row);
        }
}

static struct gw_job *job(void) {
        struct gw_job *j = calloc(1, sizeof *j);
        static char *const argv[] = { "python3", "train.py", NULL };
        j->id = 17;
        j->name = strdup("smoke");
        j->uid = 1000;
        j->user = strdup("alice");
        j->state = GW_JOB_PENDING;
        j->wait_reason = GW_REASON_RESOURCES;
        j->ngpus = 2;
        j->priority = -3;
        j->time_limit = 1800 * SEC;
        j->submit_time = INT64_C(1763769600123000);
        j->argv = gw_strv_copy(argv);
        j->cwd = strdup("/home/alice");
        j->attempt = 1;
        return j;
}

static void set_str(char **p, const char *s) {
        free(*p);
        *p = s ? strdup(s) : NULL;
}

static void rows_as_jansson_writes_them(void **state) {
        (void) state;
        struct gw_job *j = job();
        check_same(j, "pending");
        j->predicted_start = INT64_C(1763769660054104);
        j->latest_start = INT64_C(1763771400000000); /* whole seconds: jansson adds ".0" */
        j->predicted_attempt = 1;
        j->fairshare = 1.0 / 7;
        check_same(j, "pending with a prediction and a factor");
        j->fairshare = 1e-7; /* jansson's exponent form: left to jansson */
        check_same(j, "tiny factor");
        j->fairshare = 2.0;
        j->state = GW_JOB_HELD;
        check_same(j, "held");
        static const char *const names[] = { "",    "a\"b",          "back\\slash", "tab\there",
                                             "ü b", "bad \xff byte", "slash/ok",    "del\x7f" };
        for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
                set_str(&j->name, names[i]);
                set_str(&j->user, names[i]);
                check_same(j, names[i]);
        }
        set_str(&j->name, NULL);
        set_str(&j->user, NULL);
        check_same(j, "no name");
        j->state = GW_JOB_PENDING;
        j->wait_reason = GW_REASON_QUOTA;
        set_str(&j->wait_detail, "gpus: 4 of 4 \"used\"");
        check_same(j, "quota");
        j->state = GW_JOB_RUNNING;
        j->gpu_mask = 0x5;
        j->start_time = INT64_C(1763769700000001);
        j->eta = INT64_C(1763779700250000);
        j->eta_overdue = 90 * SEC + 1;
        j->pid = 4242;
        check_same(j, "running, overdue");
        j->eta_overdue = 0;
        j->eta = 0;
        check_same(j, "running, no eta");
        set_str(&j->array_spec, "0-99%4");
        j->array_job = 12;
        j->array_index = 7;
        struct gw_job_array_view av = { .total = 100, .waiting = "12_[8-99%4]", .best_index = -1 };
        av.counts[GW_JOB_PENDING] = 92;
        j->array_view = &av;
        j->state = GW_JOB_PENDING;
        check_same(j, "array");
        j->array_view = NULL;
        j->state = GW_JOB_COMPLETED;
        j->end_time = INT64_C(1763779800000000);
        j->has_exit = true;
        set_str(&j->end_reason, "exit 0");
        check_same(j, "ended");
        j->array_view = NULL;
        gw_job_free(j);
}

/* The writer keeps the text of the last few reals: rows that repeat a value, come back to
 * one it no longer holds (more distinct values than it keeps), or hold values a bit apart
 * are still written as jansson writes them. */
static void reals_seen_again(void **state) {
        (void) state;
        struct gw_job *j = job();
        j->predicted_attempt = 1;
        char what[64];
        for (int round = 0; round < 3; round++)
                for (int k = 1; k <= 20; k++) {
                        j->fairshare = round == 2 && k % 2 ? nextafter(1.0 / k, 1.0) : 1.0 / k;
                        j->predicted_start = INT64_C(1763769660054104) + (k % 3) * SEC;
                        j->latest_start = INT64_C(1763771400000000) + (k % 11) * 1000;
                        snprintf(what, sizeof what, "round %d, value %d", round, k);
                        check_same(j, what);
                }
        gw_job_free(j);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(rows_as_jansson_writes_them),
                cmocka_unit_test(reals_seen_again),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
