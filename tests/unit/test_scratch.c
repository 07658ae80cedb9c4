/* submit --scratch's decisions (core/scratch.h): which files go back and when, when a copied
 * checkpoint is whole, and how a path in the node-local folder reads in the shared one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "core/scratch.h"

static void kinds(void **state) {
        (void) state;
        assert_int_equal(gw_scratch_kind_of("runs/detect/train/weights/last.pt"), GW_SCRATCH_PT);
        assert_int_equal(gw_scratch_kind_of("best.pt"), GW_SCRATCH_PT);
        assert_int_equal(gw_scratch_kind_of("runs/x/results.csv"), GW_SCRATCH_CSV);
        assert_int_equal(gw_scratch_kind_of(".pt"), GW_SCRATCH_OTHER);
        assert_int_equal(gw_scratch_kind_of("last.pth"), GW_SCRATCH_OTHER);
        assert_int_equal(gw_scratch_kind_of("old_results.csv"), GW_SCRATCH_OTHER);
        assert_int_equal(gw_scratch_kind_of("x.pt/args.yaml"), GW_SCRATCH_OTHER);
}

static void incremental(void **state) {
        (void) state;
        static const struct {
                struct gw_scratch_stamp src, dst;
                bool copy;
        } cases[] = {
                { { true, 10, 100 }, { false, 0, 0 }, true }, /* not there yet */
                { { true, 10, 100 }, { true, 10, 100 }, false }, /* copied before, mtime kept */
                { { true, 10, 101 }, { true, 10, 100 }, true }, /* rewritten, same size */
                { { true, 11, 100 }, { true, 10, 100 }, true }, /* grown */
                { { true, 10, 99 }, { true, 10, 100 }, true }, /* the destination is newer: still ours */
                { { false, 0, 0 }, { true, 10, 100 }, false }, /* gone from the scratch folder */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                assert_int_equal(gw_scratch_differs(&cases[i].src, &cases[i].dst), cases[i].copy);
}

static void stable(void **state) {
        (void) state;
        struct gw_scratch_stamp a = { true, 10, 100 }, b = a, grown = { true, 20, 100 }, touched = { true, 10, 200 },
                                none = { false, 0, 0 };
        assert_true(gw_scratch_stable(&a, &b));
        assert_false(gw_scratch_stable(&a, &grown));
        assert_false(gw_scratch_stable(&a, &touched));
        assert_false(gw_scratch_stable(&none, &none));
}

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t) v, p[1] = (uint8_t) (v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v & 0xffff), put16(p + 2, v >> 16); }

/* A stored zip of one entry, as torch.save's miniz writes its records: its length. */
static size_t make_zip(uint8_t *z) {
        static const char name[] = "archive/data.pkl", data[] = "\x80\x02}q\x00.";
        size_t nl = sizeof name - 1, dl = sizeof data - 1, n = 0;
        memset(z, 0, 512);
        put32(z, 0x04034b50), put16(z + 8, 0), put32(z + 18, (uint32_t) dl), put32(z + 22, (uint32_t) dl);
        put16(z + 26, (unsigned) nl);
        memcpy(z + 30, name, nl);
        memcpy(z + 30 + nl, data, dl);
        n = 30 + nl + dl;
        size_t cd = n;
        put32(z + n, 0x02014b50), put32(z + n + 20, (uint32_t) dl), put32(z + n + 24, (uint32_t) dl);
        put16(z + n + 28, (unsigned) nl), put32(z + n + 42, 0);
        memcpy(z + n + 46, name, nl);
        n += 46 + nl;
        put32(z + n, 0x06054b50), put16(z + n + 8, 1), put16(z + n + 10, 1), put32(z + n + 12, (uint32_t) (n - cd));
        put32(z + n + 16, (uint32_t) cd);
        return n + 22;
}

static void whole_zip(void **state) {
        (void) state;
        uint8_t z[512];
        size_t n = make_zip(z);
        char why[160];
        assert_true(gw_scratch_pt_whole(z, n, z, n, n, why, sizeof why));
        /* Written front to back: every prefix lacks the end records, which come last. */
        for (size_t cut = 1; cut < n; cut++)
                assert_false(gw_scratch_pt_whole(z, cut, z, cut, cut, why, sizeof why));
        assert_non_null(strstr(why, "truncated"));
        assert_false(gw_scratch_pt_whole(NULL, 0, (const uint8_t *) "epoch,loss\n", 11, 11, NULL, 0));
}

static void map(void **state) {
        (void) state;
        char buf[64];
        assert_int_equal(gw_scratch_map("/s/7-1/runs/x/weights/last.pt", "/s/7-1", "/home/u/job", buf, sizeof buf), 1);
        assert_string_equal(buf, "/home/u/job/runs/x/weights/last.pt");
        assert_int_equal(gw_scratch_map("/s/7-1", "/s/7-1/", "/home/u/job", buf, sizeof buf), 1);
        assert_string_equal(buf, "/home/u/job");
        strcpy(buf, "untouched");
        assert_int_equal(gw_scratch_map("/s/7-10/runs", "/s/7-1", "/home/u/job", buf, sizeof buf), 0);
        assert_int_equal(gw_scratch_map("/other/7-1/runs", "/s/7-1", "/home/u/job", buf, sizeof buf), 0);
        assert_string_equal(buf, "untouched");
        assert_int_equal(gw_scratch_map("/s/7-1/a", "/s/7-1", "/a-long-shared-folder", buf, 8), -ENAMETOOLONG);
        assert_int_equal(gw_scratch_map(NULL, "/s", "/t", buf, sizeof buf), -EINVAL);
        assert_int_equal(gw_scratch_map("/s/x", "", "/t", buf, sizeof buf), -EINVAL);
}

static void names(void **state) {
        (void) state;
        char buf[32];
        assert_int_equal(gw_scratch_name(17, 3, NULL, buf, sizeof buf), 0);
        assert_string_equal(buf, "17-3"); /* a job recorded before names had a random part */
        assert_int_equal(gw_scratch_name(1234567, 10, NULL, buf, 5), -ENAMETOOLONG);

        /* Each attempt's own random bytes: the names differ, JOB-ATTEMPT-12 hex digits. */
        static const uint8_t a[GW_SCRATCH_NAME_RANDOM] = { 0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f };
        static const uint8_t b[GW_SCRATCH_NAME_RANDOM] = { 0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x60 };
        char other[32];
        assert_int_equal(gw_scratch_name(17, 3, a, buf, sizeof buf), 0);
        assert_string_equal(buf, "17-3-0a1b2c3d4e5f");
        assert_int_equal(gw_scratch_name(17, 3, b, other, sizeof other), 0);
        assert_string_equal(other, "17-3-0a1b2c3d4e60");
        assert_string_not_equal(buf, other);
        assert_int_equal(gw_scratch_name(17, 3, a, buf, 17), -ENAMETOOLONG); /* no room for its NUL */
        assert_int_equal(gw_scratch_name(17, 3, a, buf, 18), 0);
}

static void names_read_back(void **state) {
        (void) state;
        assert_true(gw_scratch_name_valid("17-3-0a1b2c3d4e5f", 17, 3));
        static const char *const bad[] = {
                "17-3", /* no random part: the caller's own fallback */
                "17-4-0a1b2c3d4e5f", /* another attempt's */
                "7-3-0a1b2c3d4e5f", /* another job's */
                "17-3-0a1b2c3d4e5",
                "17-3-0a1b2c3d4e5f0", /* too short, too long */
                "17-3-0A1B2C3D4E5F", /* not as written */
                "17-3-0a1b2c3d/e5f",
                "17-3-../../etc/x",
                "", /* no path */
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
                assert_false(gw_scratch_name_valid(bad[i], 17, 3));
        assert_false(gw_scratch_name_valid(NULL, 17, 3));
}

static void restore_sub(void **state) {
        (void) state;
        char buf[64];
        assert_int_equal(gw_scratch_restore_sub("/h/u", "/h/u/runs/s/weights/last.pt", buf, sizeof buf), 0);
        assert_string_equal(buf, "runs/s");
        assert_int_equal(gw_scratch_restore_sub("/h/u/", "/h/u/ck/e3.pt", buf, sizeof buf), 0);
        assert_string_equal(buf, "ck");
        assert_int_equal(gw_scratch_restore_sub("/h/u", "/h/u/e3.pt", buf, sizeof buf), -EINVAL);
        assert_int_equal(gw_scratch_restore_sub("/h/u", "/h/uv/runs/s/weights/last.pt", buf, sizeof buf), -EINVAL);
        assert_int_equal(gw_scratch_restore_sub("/h/u", "/h/u/../x/weights/last.pt", buf, sizeof buf), -EINVAL);
        assert_int_equal(gw_scratch_restore_sub("/h/u", "/h/u/a/../../x/e.pt", buf, sizeof buf), -EINVAL);
        assert_int_equal(gw_scratch_restore_sub("/h/u", "/h/u/a-long-run/weights/last.pt", buf, 4), -ENAMETOOLONG);
        assert_int_equal(gw_scratch_restore_sub(NULL, "/h/u/r/e.pt", buf, sizeof buf), -EINVAL);
}

/* The controller and the step read one table: each signal there round-trips, nothing else
 * is taken for a relay or relayed. */
static void relays(void **state) {
        (void) state;
        static const int table[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
        assert_int_equal(sizeof table / sizeof *table, GW_SCRATCH_RELAYS);
        for (int k = 0; k < GW_SCRATCH_RELAYS; k++) {
                assert_int_equal(gw_scratch_relay_signal(k), table[k]);
                int r = gw_scratch_relay_of(table[k]);
                assert_int_equal(r, SIGRTMIN + k);
                assert_int_equal(gw_scratch_relayed(r), table[k]);
        }
        assert_int_equal(gw_scratch_relay_signal(-1), -EINVAL);
        assert_int_equal(gw_scratch_relay_signal(GW_SCRATCH_RELAYS), -EINVAL);
        const int not_relayed[] = { 0, SIGKILL, SIGSTOP, SIGCONT, SIGCHLD, SIGRTMIN, -1 };
        for (size_t i = 0; i < sizeof not_relayed / sizeof *not_relayed; i++)
                assert_int_equal(gw_scratch_relay_of(not_relayed[i]), -EINVAL);
        /* A plain signal, or a real-time one past the table, asks for nothing. */
        const int not_relays[] = { 0,        SIGTERM,      SIGUSR1, SIGRTMIN - 1, SIGRTMIN + GW_SCRATCH_RELAYS,
                                   SIGRTMAX, SIGRTMAX + 1, -1 };
        for (size_t i = 0; i < sizeof not_relays / sizeof *not_relays; i++)
                assert_int_equal(gw_scratch_relayed(not_relays[i]), -EINVAL);
}

/* The sweep of a node's dead steps' folders takes only the names an attempt's folder has:
 * each made name parses back to its job and attempt; a user's own folder's does not. */
static void names_parsed(void **state) {
        (void) state;
        static const uint8_t rnd[GW_SCRATCH_NAME_RANDOM] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab };
        char buf[64];
        int64_t job = 0;
        int attempt = 0;
        for (int with = 0; with < 2; with++) {
                assert_int_equal(gw_scratch_name(9007199254740993LL, 2147483647, with ? rnd : NULL, buf, sizeof buf),
                                 0);
                assert_int_equal(gw_scratch_name_parse(buf, &job, &attempt), 0);
                assert_true(job == 9007199254740993LL);
                assert_int_equal(attempt, 2147483647);
        }
        assert_int_equal(gw_scratch_name_parse("5-1", NULL, NULL), 0);
        assert_int_equal(gw_scratch_name_parse("5-1-0123456789ab", &job, &attempt), 0);
        assert_true(job == 5);
        assert_int_equal(attempt, 1);
        assert_int_equal(gw_scratch_name_parse("9223372036854775807-1", &job, NULL), 0);
        assert_true(job == INT64_MAX);
        static const char *const bad[] = {
                "",
                "notes",
                "5",
                "5-",
                "-1",
                "5--1",
                "0-1",
                "5-0",
                "05-1",
                "5-01",
                "+5-1",
                "5-1-",
                "5-1-0123456789a",
                "5-1-0123456789abc",
                "5-1-0123456789AB",
                "5-1-0123456789ag",
                "5-1-0123456789ab/",
                "5-1x",
                " 5-1",
                "5-1 ",
                "9223372036854775808-1",
                "5-2147483648",
                "5-1-0123456789ab-",
                ".",
                "..",
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
                assert_int_equal(gw_scratch_name_parse(bad[i], &job, &attempt), -EINVAL);
        assert_int_equal(gw_scratch_name_parse(NULL, &job, &attempt), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(kinds),           cmocka_unit_test(incremental), cmocka_unit_test(stable),
                cmocka_unit_test(whole_zip),       cmocka_unit_test(map),         cmocka_unit_test(names),
                cmocka_unit_test(names_read_back), cmocka_unit_test(restore_sub), cmocka_unit_test(relays),
                cmocka_unit_test(names_parsed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
