/* src/store/gpu_events.c and its encoding (gw_codec_gpu_event): the GPUs' events read back,
 * on a real database in a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "api/codec.h"
#include "store/gpu_events.h"

/* Every read of the wall clock is one second after the last: event times are known. */
#define CLOCK_BASE ((gw_usec_t) 1790000000 * GW_USEC_PER_SEC)
static gw_usec_t fake_wall_now;
static gw_usec_t fake_wall(void) { return fake_wall_now += GW_USEC_PER_SEC; }

struct fixture {
        char dir[64];
        struct gw_store *s;
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        snprintf(f->dir, sizeof f->dir, "/tmp/gw-test-gpuev-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        char err[256] = "";
        if (gw_store_open(f->dir, &f->s, err, sizeof err) < 0)
                fail_msg("gw_store_open(%s): %s", f->dir, err);
        fake_wall_now = CLOCK_BASE;
        gw_now_wall = fake_wall;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        gw_now_wall = gw_clock_wall;
        f->s = gw_store_close(f->s);
        DIR *d = opendir(f->dir);
        for (struct dirent *de; d && (de = readdir(d));) {
                char p[512];
                snprintf(p, sizeof p, "%s/%s", f->dir, de->d_name);
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        (void) unlink(p);
        }
        if (d)
                closedir(d);
        assert_int_equal(rmdir(f->dir), 0);
        free(f);
        return 0;
}

#define ROWS_MAX 8

/* The events read, each encoded as the API sends it to a signed-in caller. */
struct rows {
        json_t *e[ROWS_MAX];
        size_t n;
};

static void row_keep(const struct gw_gpu_event_rec *e, void *userdata) {
        struct rows *r = userdata;
        assert_true(r->n < ROWS_MAX);
        r->e[r->n++] = gw_codec_gpu_event(e, true);
}

static void rows_clear(struct rows *r) {
        for (size_t i = 0; i < r->n; i++)
                json_decref(r->e[i]);
        r->n = 0;
}

static const char *kind_of(const struct rows *r, size_t i) {
        return json_string_value(json_object_get(r->e[i], "kind"));
}

/* Recorded at CLOCK_BASE + 1 s, + 2 s, ...: xid on GPU 0 (job 7), drain on 1, rogue on 0. */
static void record_three(struct gw_store *s) {
        assert_int_equal(gw_store_gpu_event(s, NULL, 0, "xid", 79, 7, "Xid 79 on GPU 0"), 0);
        assert_int_equal(gw_store_gpu_event(s, NULL, 1, "drain", -1, 0, "GPU 1 drained: fell off the bus"), 0);
        assert_int_equal(gw_store_gpu_event(s, NULL, 0, "rogue", -1, 0, "pid 42 (bob, sleep 300) on GPU 0"), 0);
}

/* A cluster node's GPU 0 (an agent's Xid) is among every GPU's events, named by its node,
 * and not among this host's GPU 0's. */
static void a_nodes_gpu_is_not_this_hosts(void **state) {
        struct fixture *f = *state;
        record_three(f->s);
        assert_int_equal(gw_store_gpu_event(f->s, "node1", 0, "xid", 79, 0, "node node1: Xid 79 on GPU 0"), 0);
        struct rows r = { 0 };
        assert_int_equal(gw_store_gpu_events(f->s, GW_GPU_EVENTS_ALL, 0, 100, row_keep, &r), 4);
        assert_string_equal(json_string_value(json_object_get(r.e[0], "node")), "node1");
        assert_true(json_is_null(json_object_get(r.e[1], "node")));
        rows_clear(&r);
        assert_int_equal(gw_store_gpu_events(f->s, 0, 0, 100, row_keep, &r), 2);
        for (size_t i = 0; i < r.n; i++)
                assert_true(json_is_null(json_object_get(r.e[i], "node")));
        rows_clear(&r);
}

static void newest_first_per_gpu_and_all(void **state) {
        struct fixture *f = *state;
        record_three(f->s);
        struct rows r = { 0 };
        assert_int_equal(gw_store_gpu_events(f->s, GW_GPU_EVENTS_ALL, 0, 100, row_keep, &r), 3);
        assert_string_equal(kind_of(&r, 0), "rogue");
        assert_string_equal(kind_of(&r, 1), "drain");
        assert_string_equal(kind_of(&r, 2), "xid");
        rows_clear(&r);
        assert_int_equal(gw_store_gpu_events(f->s, 0, 0, 100, row_keep, &r), 2);
        assert_string_equal(kind_of(&r, 0), "rogue");
        assert_string_equal(kind_of(&r, 1), "xid");
        rows_clear(&r);
        assert_int_equal(gw_store_gpu_events(f->s, 5, 0, 100, row_keep, &r), 0);
}

static void limit_and_since(void **state) {
        struct fixture *f = *state;
        record_three(f->s);
        struct rows r = { 0 };
        assert_int_equal(gw_store_gpu_events(f->s, GW_GPU_EVENTS_ALL, 0, 1, row_keep, &r), 1);
        assert_string_equal(kind_of(&r, 0), "rogue");
        rows_clear(&r);
        /* since is inclusive: the drain (at + 2 s) and the rogue. */
        assert_int_equal(
                gw_store_gpu_events(f->s, GW_GPU_EVENTS_ALL, CLOCK_BASE + 2 * GW_USEC_PER_SEC, 100, row_keep, &r), 2);
        assert_string_equal(kind_of(&r, 1), "drain");
        rows_clear(&r);
        assert_int_equal(gw_store_gpu_events(f->s, 0, CLOCK_BASE + 4 * GW_USEC_PER_SEC, 100, row_keep, &r), 0);
}

static void encoded_with_and_without_message(void **state) {
        struct fixture *f = *state;
        record_three(f->s);
        struct rows r = { 0 };
        assert_int_equal(gw_store_gpu_events(f->s, 0, 0, 100, row_keep, &r), 2);
        char *xid = json_dumps(r.e[1], JSON_COMPACT | JSON_SORT_KEYS);
        assert_string_equal(xid, "{\"gpu\":0,\"job\":7,\"kind\":\"xid\",\"message\":\"Xid 79 on GPU 0\","
                                 "\"node\":null,\"time\":1790000001.0,\"xid\":79}");
        free(xid);
        char *rogue = json_dumps(r.e[0], JSON_COMPACT | JSON_SORT_KEYS);
        assert_non_null(strstr(rogue, "\"job\":null,\"kind\":\"rogue\""));
        assert_non_null(strstr(rogue, "\"xid\":null"));
        free(rogue);
        rows_clear(&r);

        /* As a guest sees it: everything but the message, which names another user's command. */
        struct gw_gpu_event_rec e = { .time = CLOCK_BASE,
                                      .gpu = 0,
                                      .kind = "rogue",
                                      .xid = -1,
                                      .message = "pid 42 (bob, sleep 300)" };
        json_t *g = gw_codec_gpu_event(&e, false);
        assert_true(json_is_null(json_object_get(g, "message")));
        assert_string_equal(json_string_value(json_object_get(g, "kind")), "rogue");
        json_decref(g);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(newest_first_per_gpu_and_all),
                T(limit_and_since),
                T(encoded_with_and_without_message),
                T(a_nodes_gpu_is_not_this_hosts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
