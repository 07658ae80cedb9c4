/* src/api/route: the route table lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>

#include "api/route.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* The daemon's table, as docs/API.md describes it. */
enum {
        R_HEALTH,
        R_WHOAMI,
        R_SUBMIT,
        R_BATCH,
        R_LIST,
        R_GET,
        R_CANCEL,
        R_HOLD,
        R_RELEASE,
        R_LOG,
        R_GPUS,
};
static const struct gw_route table[] = {
        [R_HEALTH] = { "GET", "/healthz", 0 },
        [R_WHOAMI] = { "GET", "/api/v1/whoami", 0 },
        [R_SUBMIT] = { "POST", "/api/v1/jobs", GW_ROUTE_MUTATES },
        [R_BATCH] = { "POST", "/api/v1/jobs/batch", GW_ROUTE_MUTATES },
        [R_LIST] = { "GET", "/api/v1/jobs", 0 },
        [R_GET] = { "GET", "/api/v1/jobs/{id}", 0 },
        [R_CANCEL] = { "DELETE", "/api/v1/jobs/{id}", GW_ROUTE_MUTATES },
        [R_HOLD] = { "POST", "/api/v1/jobs/{id}/hold", GW_ROUTE_MUTATES },
        [R_RELEASE] = { "POST", "/api/v1/jobs/{id}/release", GW_ROUTE_MUTATES },
        [R_LOG] = { "GET", "/api/v1/jobs/{id}/log", 0 },
        [R_GPUS] = { "GET", "/api/v1/gpus", GW_ROUTE_ADMIN },
};

static void matches(void **state) {
        static const struct {
                const char *method, *path;
                int row;
                int64_t id;
        } cases[] = {
                { "GET", "/healthz", R_HEALTH, 0 },
                { "GET", "/healthz/", R_HEALTH, 0 },
                { "GET", "/api/v1/whoami", R_WHOAMI, 0 },
                { "POST", "/api/v1/jobs", R_SUBMIT, 0 },
                { "POST", "/api/v1/jobs/", R_SUBMIT, 0 },
                { "GET", "/api/v1/jobs", R_LIST, 0 },
                { "GET", "/api/v1/jobs/", R_LIST, 0 },
                { "POST", "/api/v1/jobs/batch", R_BATCH, 0 },
                { "POST", "/api/v1/jobs/batch/", R_BATCH, 0 },
                { "GET", "/api/v1/jobs/1", R_GET, 1 },
                { "GET", "/api/v1/jobs/17", R_GET, 17 },
                { "GET", "/api/v1/jobs/17/", R_GET, 17 },
                { "GET", "/api/v1/jobs/10", R_GET, 10 },
                { "GET", "/api/v1/jobs/100000000000000000", R_GET, INT64_C(100000000000000000) },
                { "GET", "/api/v1/jobs/999999999999999999", R_GET, INT64_C(999999999999999999) },
                { "DELETE", "/api/v1/jobs/42", R_CANCEL, 42 },
                { "DELETE", "/api/v1/jobs/42/", R_CANCEL, 42 },
                { "POST", "/api/v1/jobs/9/hold", R_HOLD, 9 },
                { "POST", "/api/v1/jobs/9/release", R_RELEASE, 9 },
                { "POST", "/api/v1/jobs/9/release/", R_RELEASE, 9 },
                { "GET", "/api/v1/jobs/123/log", R_LOG, 123 },
                { "GET", "/api/v1/jobs/123/log/", R_LOG, 123 },
                { "GET", "/api/v1/gpus", R_GPUS, 0 },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                const struct gw_route *r = NULL;
                int64_t id = -1;
                int k = gw_route_match(table, N_ELEMS(table), cases[i].method, cases[i].path, &r, &id);
                if (k != 0)
                        fail_msg("%s %s: %d", cases[i].method, cases[i].path, k);
                if (r != &table[cases[i].row])
                        fail_msg("%s %s: matched row %td, want %d", cases[i].method, cases[i].path, r - table,
                                 cases[i].row);
                if (id != cases[i].id)
                        fail_msg("%s %s: id %lld, want %lld", cases[i].method, cases[i].path, (long long) id,
                                 (long long) cases[i].id);
        }
        /* The flags come with the row. */
        const struct gw_route *r = NULL;
        int64_t id;
        assert_int_equal(gw_route_match(table, N_ELEMS(table), "POST", "/api/v1/jobs/3/hold", &r, &id), 0);
        assert_true(r->flags & GW_ROUTE_MUTATES);
        assert_int_equal(gw_route_match(table, N_ELEMS(table), "GET", "/api/v1/gpus", &r, &id), 0);
        assert_int_equal(r->flags, GW_ROUTE_ADMIN);
}

/* {index} takes 0 as well, and at most four digits; neither placeholder takes a leading zero. */
static void gpu_index(void **state) {
        (void) state;
        static const struct gw_route drain[] = { { "POST", "/api/v1/gpus/{index}/drain", GW_ROUTE_ADMIN } };
        static const struct {
                const char *path;
                int64_t want; /* -1: no match */
        } cases[] = {
                { "/api/v1/gpus/0/drain", 0 },       { "/api/v1/gpus/7/drain", 7 },
                { "/api/v1/gpus/1234/drain", 1234 }, { "/api/v1/gpus/12345/drain", -1 },
                { "/api/v1/gpus/01/drain", -1 },     { "/api/v1/gpus/00/drain", -1 },
                { "/api/v1/gpus//drain", -1 },       { "/api/v1/gpus/x/drain", -1 },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                const struct gw_route *r = NULL;
                int64_t id = -1;
                int k = gw_route_match(drain, N_ELEMS(drain), "POST", cases[i].path, &r, &id);
                if (cases[i].want < 0 && k == 0)
                        fail_msg("%s: matched, want no match", cases[i].path);
                if (cases[i].want >= 0 && (k != 0 || id != cases[i].want))
                        fail_msg("%s: %d, id %lld, want %lld", cases[i].path, k, (long long) id,
                                 (long long) cases[i].want);
        }
}

/* {name}: one segment of 1-64 name characters (a published model, a version, a file). */
static void name_segments(void **state) {
        (void) state;
        static const struct gw_route models[] = {
                { "GET", "/api/v1/models/{name}", 0 },
                { "GET", "/api/v1/models/{name}/{name}/{name}", 0 },
        };
        static const struct {
                const char *path;
                int want; /* the row, -1: no match */
        } cases[] = {
                { "/api/v1/models/det", 0 },
                { "/api/v1/models/a.b_c-1", 0 },
                { "/api/v1/models/det/", 0 },
                { "/api/v1/models/det/v3/best.pt", 1 },
                { "/api/v1/models/", -1 },
                { "/api/v1/models/det/v3", -1 },
                { "/api/v1/models/a%2Fb", -1 },
                { "/api/v1/models/a b", -1 },
                { "/api/v1/models/det/v3/best.pt/x", -1 },
                { "/api/v1/models/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", -1 }, /* 65 */
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                const struct gw_route *r = NULL;
                int64_t id = -1;
                int k = gw_route_match(models, N_ELEMS(models), "GET", cases[i].path, &r, &id);
                if (cases[i].want < 0 && k == 0)
                        fail_msg("%s: matched, want no match", cases[i].path);
                if (cases[i].want >= 0 && (k != 0 || r != &models[cases[i].want] || id != 0))
                        fail_msg("%s: %d, want row %d", cases[i].path, k, cases[i].want);
        }
}

static void not_found(void **state) {
        static const struct {
                const char *method, *path;
        } cases[] = {
                { "GET", "" },
                { "GET", "/" },
                { "GET", "/api" },
                { "GET", "/api/v1" },
                { "GET", "/api/v1/" },
                { "GET", "/api/v2/jobs" },
                { "GET", "/API/v1/jobs" },
                { "GET", "/healthzz" },
                { "GET", "/healthz//" },
                { "GET", "//healthz" },
                { "GET", "/healthz?x=1/" },
                { "GET", "/api/v1/jobs/0" },
                { "GET", "/api/v1/jobs/00" },
                { "GET", "/api/v1/jobs/01" },
                { "GET", "/api/v1/jobs/007" },
                { "GET", "/api/v1/jobs/abc" },
                { "GET", "/api/v1/jobs/1abc" },
                { "GET", "/api/v1/jobs/-1" },
                { "GET", "/api/v1/jobs/+1" },
                { "GET", "/api/v1/jobs/ 1" },
                { "GET", "/api/v1/jobs/1 " },
                { "GET", "/api/v1/jobs/1.0" },
                { "GET", "/api/v1/jobs/0x10" },
                { "GET", "/api/v1/jobs/1234567890123456789" }, /* 19 digits */
                { "GET", "/api/v1/jobs/9999999999999999999" }, /* 19 digits, past INT64_MAX too */
                { "GET", "/api/v1/jobs/9223372036854775807" }, /* INT64_MAX: 19 digits */
                { "GET", "/api/v1/jobs/99999999999999999999999999999999" },
                { "GET", "/api/v1/jobs/1/../2" },
                { "GET", "/api/v1/jobs/1/.." },
                { "GET", "/api/v1/jobs/../jobs/1" },
                { "GET", "/api/v1/jobs//1" },
                { "GET", "/api/v1/jobs/1//" },
                { "GET", "/api/v1/jobs/1/log/extra" },
                { "GET", "/api/v1/jobs/1/logs" },
                { "GET", "/api/v1/jobs/1/lo" },
                { "GET", "/api/v1/jobs/{id}" },
                { "POST", "/api/v1/jobs/batch/1" },
                { "POST", "/api/v1/jobs/batchx" },
                { "DELETE", "/api/v1/jobs/0" },
                { "POST", "/api/v1/jobs/0/hold" },
                { "POST", "/api/v1/jobs/01/hold" },
                { "POST", "/api/v1/jobs//hold" },
                { "POST", "/api/v1/jobs/hold" },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                const struct gw_route *r = (const struct gw_route *) 0x1;
                int64_t id = -7;
                int k = gw_route_match(table, N_ELEMS(table), cases[i].method, cases[i].path, &r, &id);
                if (k != -ENOENT)
                        fail_msg("%s %s: %d, want -ENOENT", cases[i].method, cases[i].path, k);
                /* Outputs are written only on success. */
                assert_ptr_equal(r, (const struct gw_route *) 0x1);
                assert_int_equal(id, -7);
        }
        const struct gw_route *r = NULL;
        int64_t id = 0;
        assert_int_equal(gw_route_match(table, 0, "GET", "/healthz", &r, &id), -ENOENT);
}

static void wrong_method(void **state) {
        static const struct {
                const char *method, *path;
        } cases[] = {
                { "POST", "/healthz" },
                { "get", "/healthz" }, /* methods are case-sensitive */
                { "", "/healthz" },
                { "PUT", "/api/v1/jobs" },
                { "DELETE", "/api/v1/jobs" },
                { "DELETE", "/api/v1/jobs/" },
                { "GET", "/api/v1/jobs/batch" },
                { "POST", "/api/v1/jobs/1" },
                { "PATCH", "/api/v1/jobs/17/" },
                { "GET", "/api/v1/jobs/1/hold" },
                { "DELETE", "/api/v1/jobs/1/release" },
                { "POST", "/api/v1/jobs/1/log" },
                { "POST", "/api/v1/gpus" },
                { "HEAD", "/api/v1/whoami" },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                const struct gw_route *r = (const struct gw_route *) 0x1;
                int64_t id = -7;
                int k = gw_route_match(table, N_ELEMS(table), cases[i].method, cases[i].path, &r, &id);
                if (k != -EBADRQC)
                        fail_msg("'%s' %s: %d, want -EBADRQC", cases[i].method, cases[i].path, k);
                assert_ptr_equal(r, (const struct gw_route *) 0x1);
                assert_int_equal(id, -7);
        }
}

/* The first row whose path and method match wins, whatever other rows share the path. */
static void same_path_many_methods(void **state) {
        static const struct gw_route t[] = {
                { "GET", "/x/{id}", 0 },
                { "PUT", "/x/{id}", 1 },
                { "DELETE", "/x/{id}", 2 },
                { "GET", "/x/{id}", 3 }, /* shadowed */
        };
        static const char *const methods[] = { "GET", "PUT", "DELETE" };
        for (size_t i = 0; i < N_ELEMS(methods); i++) {
                const struct gw_route *r = NULL;
                int64_t id = 0;
                assert_int_equal(gw_route_match(t, N_ELEMS(t), methods[i], "/x/5", &r, &id), 0);
                assert_ptr_equal(r, &t[i]);
                assert_int_equal(id, 5);
        }
        const struct gw_route *r = NULL;
        int64_t id = 0;
        assert_int_equal(gw_route_match(t, N_ELEMS(t), "POST", "/x/5", &r, &id), -EBADRQC);
        assert_int_equal(gw_route_match(t, N_ELEMS(t), "GET", "/x/0", &r, &id), -ENOENT);
}

/* "17_3" (task 3 of array 17) in a job's path becomes the array's path and the index. */
static void array_task_paths(void **state) {
        (void) state;
        char buf[64];
        int64_t index = -1;
        assert_int_equal(gw_route_array_task("/api/v1/jobs/17_3", buf, sizeof buf, &index), 0);
        assert_string_equal(buf, "/api/v1/jobs/17");
        assert_int_equal(index, 3);
        assert_int_equal(gw_route_array_task("/api/v1/jobs/17_0/log", buf, sizeof buf, &index), 0);
        assert_string_equal(buf, "/api/v1/jobs/17/log");
        assert_int_equal(index, 0);
        static const char *const not_tasks[] = {
                "/api/v1/jobs/17",         "/api/v1/jobs/17_", "/api/v1/jobs/_3",    "/api/v1/jobs/17_3x",
                "/api/v1/jobs/17_1234567", "/api/v1/gpus/1_2", "/api/v1/jobs/17_-1",
        };
        for (size_t i = 0; i < N_ELEMS(not_tasks); i++)
                assert_int_equal(gw_route_array_task(not_tasks[i], buf, sizeof buf, &index), -ENOENT);
        char small[8];
        assert_int_equal(gw_route_array_task("/api/v1/jobs/17_3", small, sizeof small, &index), -ENAMETOOLONG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(array_task_paths),       cmocka_unit_test(matches),   cmocka_unit_test(gpu_index),
                cmocka_unit_test(name_segments),          cmocka_unit_test(not_found), cmocka_unit_test(wrong_method),
                cmocka_unit_test(same_path_many_methods),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
