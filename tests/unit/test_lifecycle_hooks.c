/* src/daemon/life/lifecycle_hooks.c: subscribers run in the order they subscribed, each hook
 * reaches only its own, and the store's writes are published (GW_HOOK_RECORDED) until the
 * lifecycle is closed; on a real store in a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "daemon/daemon.h"
#include "daemon/life/lifecycle.h"

/* What the subscribers saw, in order: "name:hook" entries. */
static char seen[16][48];
static size_t n_seen;
static struct gw_hook_record last_rec;
static char last_kind[32], last_message[64];

static void note(const char *name, const struct gw_hook_info *info) {
        assert_true(n_seen < 16);
        snprintf(seen[n_seen++], sizeof seen[0], "%s:%s%s", name, gw_hook_name(info->hook),
                 info->was_running ? "+running" : "");
}

static void first(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) { note("first", info); }

static void second(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) { note("second", info); }

static void recorded(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        assert_null(dj);
        assert_non_null(info->rec);
        last_rec = *info->rec;
        snprintf(last_kind, sizeof last_kind, "%s", info->rec->kind);
        snprintf(last_message, sizeof last_message, "%s", info->rec->message);
        note("recorded", info);
}

static int setup(void **state) {
        n_seen = 0;
        memset(seen, 0, sizeof seen);
        return 0;
}

static void order_is_subscription_order(void **state) {
        struct gw_daemon d = { 0 };
        gw_lifecycle_subscribe(&d.hooks, GW_HOOK_JOB_ENDED, "second", second);
        gw_lifecycle_subscribe(&d.hooks, GW_HOOK_JOB_ENDED, "first", first);
        gw_lifecycle_subscribe(&d.hooks, GW_HOOK_SAMPLED, "first", first);
        gw_lifecycle_publish(&d, GW_HOOK_JOB_ENDED, NULL, true);
        gw_lifecycle_publish(&d, GW_HOOK_ATTEMPT_STARTED, NULL, false); /* no subscriber */
        gw_lifecycle_publish(&d, GW_HOOK_SAMPLED, NULL, false);
        assert_int_equal(n_seen, 3);
        assert_string_equal(seen[0], "second:job ended+running");
        assert_string_equal(seen[1], "first:job ended+running");
        assert_string_equal(seen[2], "first:sampled");
}

static void every_hook_has_a_name(void **state) {
        for (int h = 0; h < _GW_HOOK_MAX; h++)
                assert_non_null(gw_hook_name((enum gw_hook) h));
        assert_null(gw_hook_name(_GW_HOOK_MAX));
}

static struct gw_job *job_new(void) {
        static const char *const argv[] = { "true", NULL };
        struct gw_job *j = gw_xcalloc(1, sizeof *j);
        j->name = gw_xstrdup("hooks");
        j->user = gw_xstrdup("alice");
        j->uid = 1000;
        j->gid = 1000;
        j->argv = gw_strv_copy((char *const *) argv);
        j->cwd = gw_xstrdup("/");
        j->state = GW_JOB_PENDING;
        j->wait_reason = GW_REASON_RESOURCES;
        j->ngpus = 1;
        j->attempt = 1;
        return j;
}

static void store_writes_are_published_until_closed(void **state) {
        char dir[64] = "/tmp/gw-test-hooks-XXXXXX", err[256] = "";
        assert_non_null(mkdtemp(dir));
        struct gw_daemon d = { 0 };
        if (gw_store_open(dir, &d.store, err, sizeof err) < 0)
                fail_msg("gw_store_open(%s): %s", dir, err);
        gw_lifecycle_subscribe(&d.hooks, GW_HOOK_RECORDED, "recorded", recorded);
        gw_lifecycle_open(&d);

        struct gw_job *j = job_new();
        assert_int_equal(gw_store_job_insert(d.store, j, "submitted by alice"), 0);
        assert_int_equal(n_seen, 1);
        assert_string_equal(seen[0], "recorded:recorded");
        assert_int_equal(last_rec.id, j->id);
        assert_ptr_equal(last_rec.job, j);
        assert_string_equal(last_message, "submitted by alice");

        assert_int_equal(gw_store_job_event(d.store, j->id, GW_JOB_PENDING, "warn", "a warning"), 0);
        assert_int_equal(n_seen, 2);
        assert_null(last_rec.job); /* an event alone: no row with it */
        assert_int_equal(last_rec.state, GW_JOB_PENDING);
        assert_string_equal(last_kind, "warn");

        gw_lifecycle_close(&d);
        assert_int_equal(gw_store_job_event(d.store, j->id, GW_JOB_PENDING, "warn", "after the close"), 0);
        assert_int_equal(n_seen, 2);

        gw_job_free(j);
        d.store = gw_store_close(d.store);
        DIR *dd = opendir(dir); /* the store's files only: it makes no folders */
        for (struct dirent *de; dd && (de = readdir(dd));) {
                char p[384];
                snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
                if (de->d_name[0] != '.')
                        (void) unlink(p);
        }
        if (dd)
                closedir(dd);
        (void) rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(order_is_subscription_order, setup),
                cmocka_unit_test_setup(every_hook_has_a_name, setup),
                cmocka_unit_test_setup(store_writes_are_published_until_closed, setup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
