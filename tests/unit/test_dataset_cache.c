/* The dataset cache's pure parts: the data YAML reader and rewrite, manifest lines, the
 * eviction pick, the progress text, the allowed sources. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/datayaml.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static void yaml_root(void **state) {
        (void) state;
        char root[256], why[256];
        const char *y = "# COCO8\npath: /data/coco8/  # root\ntrain: images/train\nval: images/val\n";
        assert_int_equal(gw_datayaml_root(y, strlen(y), root, sizeof root, why, sizeof why), 0);
        assert_string_equal(root, "/data/coco8");
        const char *q = "names:\n  0: person\npath: '/data/my set'\n";
        assert_int_equal(gw_datayaml_root(q, strlen(q), root, sizeof root, why, sizeof why), 0);
        assert_string_equal(root, "/data/my set");
        /* An indented path: is not the top-level key. */
        const char *nested = "x:\n  path: /a\n";
        assert_int_equal(gw_datayaml_root(nested, strlen(nested), root, sizeof root, why, sizeof why), -EINVAL);
        assert_non_null(strstr(why, "no top-level path"));
        const char *rel = "path: ../datasets/coco8\n";
        assert_int_equal(gw_datayaml_root(rel, strlen(rel), root, sizeof root, why, sizeof why), -EINVAL);
        assert_non_null(strstr(why, "not an absolute"));
        const char nul[] = "path: /a\0b\n";
        assert_int_equal(gw_datayaml_root(nul, sizeof nul - 1, root, sizeof root, why, sizeof why), -EINVAL);
        char *big = malloc(GW_DATAYAML_MAX_SIZE + 2);
        memset(big, '#', GW_DATAYAML_MAX_SIZE + 1);
        assert_int_equal(gw_datayaml_root(big, GW_DATAYAML_MAX_SIZE + 1, root, sizeof root, why, sizeof why), -EINVAL);
        free(big);
}

static void yaml_rewrite(void **state) {
        (void) state;
        char why[256], *out = NULL;
        const char *y = "path: /data/coco8 # root\n"
                        "train: images/train\n"
                        "val:\n"
                        "  - /data/coco8/images/val\n"
                        "  - images/extra\n"
                        "test: \"/data/coco8/t\"\n"
                        "names:\n  0: person\n";
        assert_int_equal(gw_datayaml_rewrite(y, strlen(y), "/cache/e/k/v1/data", &out, why, sizeof why), 0);
        assert_string_equal(out, "path: \"/cache/e/k/v1/data\" # root\n"
                                 "train: images/train\n"
                                 "val:\n"
                                 "  - \"/cache/e/k/v1/data/images/val\"\n"
                                 "  - images/extra\n"
                                 "test: \"/cache/e/k/v1/data/t\"\n"
                                 "names:\n  0: person\n");
        free(out);
        /* An absolute entry outside the root would be read from the source: refused. */
        const char *out_of_root = "path: /data/coco8\ntrain: /data/coco8x/images\n";
        out = NULL;
        assert_int_equal(gw_datayaml_rewrite(out_of_root, strlen(out_of_root), "/c", &out, why, sizeof why), -EINVAL);
        assert_null(out);
        assert_non_null(strstr(why, "outside"));
}

static void manifest_round_trip(void **state) {
        (void) state;
        struct gw_cache_file f = { .size = 1234,
                                   .mtime_ns = 1700000000123456789LL,
                                   .mode = 0644,
                                   .uid = 1000,
                                   .gid = 100 };
        strcpy(f.rel, "images/a b%c\n.jpg");
        char line[GW_CACHE_LINE_MAX];
        size_t n = gw_cache_manifest_line(&f, line, sizeof line);
        assert_string_equal(line, "f 1234 1700000000123456789 644 1000 100 /images/a%20b%25c%0A.jpg\n");
        struct gw_cache_file g;
        assert_int_equal(gw_cache_manifest_parse(line, n - 1, &g), 0);
        assert_true(gw_cache_file_same(&f, &g));
        assert_string_equal(g.rel, f.rel);
        struct gw_cache_file d = { .dir = true, .mode = 0755 };
        n = gw_cache_manifest_line(&d, line, sizeof line);
        assert_string_equal(line, "d 755 0 0 /\n");
        assert_int_equal(gw_cache_manifest_parse(line, n - 1, &g), 0);
        assert_true(g.dir);
        assert_string_equal(g.rel, "");
        g.mtime_ns = 1;
        assert_false(gw_cache_file_same(&d, &g));
        static const char *const bad[] = {
                "f 1 2 644 0 0 /../etc/passwd",
                "f 1 2 644 0 0 /a/../../b",
                "f 1 2 644 0 0 //abs",
                "f 1 2 644 0 0 /a%2",
                "f 1 2 644 0 0 /a%00b",
                "f 1 2 644 0 0 /a b",
                "x 1 2 644 0 0 /a",
                "f 1 2 99999 0 0 /a",
                "f 1 2 644 0 /a",
                "d 755 0 0",
                "f 1 2 644 0 0 /a/",
                "f 1 2 644 0 0 /./a",
        };
        for (size_t i = 0; i < N_ELEMS(bad); i++)
                assert_int_equal(gw_cache_manifest_parse(bad[i], strlen(bad[i]), &g), -EINVAL);
}

static void evict_lru_never_in_use(void **state) {
        (void) state;
        struct gw_cache_slot s[] = {
                { .size = 40, .last_use = 300 },
                { .size = 30, .last_use = 100, .in_use = true },
                { .size = 20, .last_use = 200 },
                { .size = 10, .last_use = 400 },
        };
        size_t v[4];
        /* 100 used of 100; 25 more: the oldest not in use (2, at 200) then the next (0, at 300). */
        assert_int_equal(gw_cache_evict_pick(s, 4, 100, 100, 25, v), 2);
        assert_int_equal(v[0], 2);
        assert_int_equal(v[1], 0);
        /* It fits already. */
        assert_int_equal(gw_cache_evict_pick(s, 4, 50, 100, 50, v), 0);
        /* Everything but the entry in use freed is 70: 75 cannot be made. */
        assert_int_equal(gw_cache_evict_pick(s, 4, 100, 100, 75, v), -ENOSPC);
        assert_int_equal(gw_cache_evict_pick(s, 4, 0, 100, 101, v), -ENOSPC);
}

static void progress_and_sources(void **state) {
        (void) state;
        char b[64];
        gw_cache_progress_text(1200000000, 3400000000, b, sizeof b);
        assert_string_equal(b, "dataset 1.2 of 3.4 GB, 35%");
        gw_cache_progress_text(0, 2500000, b, sizeof b);
        assert_string_equal(b, "dataset 0.0 of 2.5 MB, 0%");
        gw_cache_progress_text(10, 10, b, sizeof b);
        assert_string_equal(b, "dataset 10 of 10 bytes, 100%");
        assert_true(gw_cache_source_allowed("/nfs/data,/scratch/", "/scratch/x/y"));
        assert_true(gw_cache_source_allowed("/nfs/data", "/nfs/data"));
        assert_false(gw_cache_source_allowed("/nfs/data", "/nfs/database"));
        assert_false(gw_cache_source_allowed("", "/nfs/data"));
        assert_false(gw_cache_source_allowed("data", "data/x"));
        assert_true(gw_cache_source_allowed("/", "/x"));
}

/* The entry's use file: each kind round-trips; what no daemon writes is refused, not guessed. */
static void use_file_lines(void **state) {
        (void) state;
        const struct gw_cache_use_line lines[] = {
                { .kind = GW_CACHE_USE_LAST, .last_use = 1764000000123456 },
                { .kind = GW_CACHE_USE_USER, .user = "alice" },
                { .kind = GW_CACHE_USE_PIN, .job = 17, .version = 3 },
                { .kind = GW_CACHE_USE_PROC, .pid = 4242, .start = 987654321012, .version = 2 },
                { .kind = GW_CACHE_USE_PROC, .pid = GW_CACHE_PID_MAX, .start = 0, .version = 1000000000 },
        };
        char buf[GW_CACHE_USE_LINE_MAX];
        for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
                size_t n = gw_cache_use_format(&lines[i], buf, sizeof buf);
                assert_true(n > 0 && buf[n - 1] == '\n');
                struct gw_cache_use_line back;
                assert_int_equal(gw_cache_use_parse(buf, n - 1, &back), 0);
                assert_int_equal(back.kind, lines[i].kind);
                assert_int_equal(back.last_use, lines[i].last_use);
                assert_string_equal(back.user, lines[i].user);
                assert_int_equal(back.job, lines[i].job);
                assert_int_equal(back.version, lines[i].version);
                assert_int_equal(back.pid, lines[i].pid);
                assert_int_equal(back.start, lines[i].start);
        }
        struct gw_cache_use_line bad_user = { .kind = GW_CACHE_USE_USER, .user = "a b" };
        assert_int_equal(gw_cache_use_format(&bad_user, buf, sizeof buf), 0);
        static const char *const refused[] = { "",
                                               "last_use",
                                               "last_use -5",
                                               "last_use 5x",
                                               "pin 0 1",
                                               "pin 3 0",
                                               "pin 3",
                                               "user ",
                                               "user a b",
                                               "nonsense 1",
                                               "user aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                               "proc 0 5 1",
                                               "proc 4194305 5 1",
                                               "proc 12 5 0",
                                               "proc 12 5",
                                               "proc -12 5 1",
                                               "proc 12 -5 1",
                                               "proc 12 +5 1",
                                               "proc  12 5 1",
                                               "proc 12  5 1",
                                               "proc 12 5 1 ",
                                               "proc 12 9223372036854775808 1",
                                               "proc 12 99999999999999999999 1" };
        for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
                struct gw_cache_use_line l = { .kind = GW_CACHE_USE_PIN, .job = 99 };
                assert_int_equal(gw_cache_use_parse(refused[i], strlen(refused[i]), &l), -EINVAL);
                assert_int_equal(l.job, 99);
        }
}

/* A copy that failed: the user's to fix is never retried; the node's storage failing is. */
static void failure_classes(void **state) {
        (void) state;
        assert_int_equal(gw_cache_failure_class(EACCES), GW_FAILURE_USER_ERROR);
        assert_int_equal(gw_cache_failure_class(EPERM), GW_FAILURE_USER_ERROR);
        assert_int_equal(gw_cache_failure_class(EINVAL), GW_FAILURE_USER_ERROR);
        assert_int_equal(gw_cache_failure_class(ENOENT), GW_FAILURE_LOST);
        assert_int_equal(gw_cache_failure_class(ENOSPC), GW_FAILURE_LOST);
        assert_int_equal(gw_cache_failure_class(EIO), GW_FAILURE_LOST);
        assert_int_equal(gw_cache_failure_class(ESTALE), GW_FAILURE_LOST);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(yaml_root),
                cmocka_unit_test(yaml_rewrite),
                cmocka_unit_test(manifest_round_trip),
                cmocka_unit_test(evict_lru_never_in_use),
                cmocka_unit_test(progress_and_sources),
                cmocka_unit_test(use_file_lines),
                cmocka_unit_test(failure_classes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
