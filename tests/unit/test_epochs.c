/* src/store/epochs.c: each epoch's memory per GPU, on a real database in a temporary directory. */
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

#include "store/epochs.h"

struct fixture {
        char dir[64];
        struct gw_store *s;
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        snprintf(f->dir, sizeof f->dir, "/tmp/gw-test-epochs-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        char err[256] = "";
        if (gw_store_open(f->dir, &f->s, err, sizeof err) < 0)
                fail_msg("gw_store_open(%s): %s", f->dir, err);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
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

#define ROWS_MAX 16

struct rows {
        struct gw_store_epoch_mem m[ROWS_MAX];
        size_t n;
};

static void row_keep(const struct gw_store_epoch_mem *m, void *userdata) {
        struct rows *r = userdata;
        assert_true(r->n < ROWS_MAX);
        r->m[r->n++] = *m;
}

static void put(struct gw_store *s, int64_t job, int attempt, unsigned gpu, long epoch, double low) {
        struct gw_store_epoch_mem m = { .gpu = gpu, .epoch = epoch, .low = low, .peak = low + 100 };
        assert_int_equal(gw_store_epoch_mem_put(s, job, attempt, &m), 0);
}

/* What a restarted daemon's leak detector is given back: the attempt's newest epochs of each
 * GPU, oldest first, an epoch measured again replacing the first measure. */
static void newest_per_gpu_of_the_attempt(void **state) {
        struct fixture *f = *state;
        for (long e = 5; e >= 1; e--) /* written in any order */
                put(f->s, 7, 2, 0, e, 1000.0 * (double) e);
        put(f->s, 7, 2, 3, 2, 20);
        put(f->s, 7, 2, 3, 1, 10);
        put(f->s, 7, 2, 3, 2, 25); /* replaces */
        put(f->s, 7, 1, 0, 9, 1); /* another attempt */
        put(f->s, 8, 2, 0, 9, 1); /* another job */
        struct rows r = { .n = 0 };
        assert_int_equal(gw_store_epoch_mems(f->s, 7, 2, 3, row_keep, &r), 0);
        assert_int_equal(r.n, 5);
        static const struct {
                unsigned gpu;
                long epoch;
                double low;
        } want[] = {
                { 0, 3, 3000 }, { 0, 4, 4000 }, { 0, 5, 5000 }, { 3, 1, 10 }, { 3, 2, 25 },
        };
        for (size_t i = 0; i < r.n; i++) {
                assert_int_equal(r.m[i].gpu, want[i].gpu);
                assert_int_equal(r.m[i].epoch, want[i].epoch);
                assert_true(r.m[i].low == want[i].low);
                assert_true(r.m[i].peak == want[i].low + 100);
        }
        r.n = 0;
        assert_int_equal(gw_store_epoch_mems(f->s, 9, 1, 3, row_keep, &r), 0);
        assert_int_equal(r.n, 0);
}

/* A rewritten results.csv is a new run: its attempt's memory series goes with its epoch times,
 * and nothing of another attempt. */
static void drop_forgets_the_memory_too(void **state) {
        struct fixture *f = *state;
        put(f->s, 7, 2, 0, 1, 10);
        put(f->s, 7, 1, 0, 1, 10);
        assert_int_equal(gw_store_epochs_drop(f->s, 7, 2), 0);
        struct rows r = { .n = 0 };
        assert_int_equal(gw_store_epoch_mems(f->s, 7, 2, 3, row_keep, &r), 0);
        assert_int_equal(r.n, 0);
        assert_int_equal(gw_store_epoch_mems(f->s, 7, 1, 3, row_keep, &r), 0);
        assert_int_equal(r.n, 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(newest_per_gpu_of_the_attempt, setup, teardown),
                cmocka_unit_test_setup_teardown(drop_forgets_the_memory_too, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
