#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/userdb.h"

#define SEC GW_USEC_PER_SEC

/* A fake database: uids 1000..1099 exist as "u<uid>" in groups 100 and uid; gid 100 is "lab". */
static int lookups;
static int group_of_1000 = 100;

static bool failing; /* the database cannot be read */

static int fake_by_uid(uint32_t uid, struct gw_account *ret) {
        lookups++;
        if (failing)
                return -EIO;
        if (uid < 1000 || uid >= 1100)
                return -ENOENT;
        memset(ret, 0, sizeof *ret);
        ret->uid = uid;
        ret->gid = uid;
        snprintf(ret->name, sizeof ret->name, "u%u", (unsigned) uid);
        ret->groups[0] = uid;
        ret->groups[1] = uid == 1000 ? (uint32_t) group_of_1000 : 100;
        ret->n_groups = 2;
        return 0;
}

static int fake_by_name(const char *name, struct gw_account *ret) {
        unsigned uid;
        if (sscanf(name, "u%u", &uid) != 1)
                return (lookups++, -ENOENT);
        return fake_by_uid(uid, ret);
}

static int fake_group_by_gid(uint32_t gid, struct gw_group *ret) {
        lookups++;
        if (gid != 100)
                return -ENOENT;
        ret->gid = 100;
        snprintf(ret->name, sizeof ret->name, "lab");
        return 0;
}

static int fake_group_by_name(const char *name, struct gw_group *ret) {
        if (strcmp(name, "lab"))
                return (lookups++, -ENOENT);
        return fake_group_by_gid(100, ret);
}

static const struct gw_userdb_source fake = { fake_by_uid, fake_by_name, fake_group_by_gid, fake_group_by_name };

static int setup(void **state) {
        lookups = 0;
        group_of_1000 = 100;
        failing = false;
        *state = gw_userdb_new(&fake);
        return *state ? 0 : -1;
}

static int teardown(void **state) {
        gw_userdb_free(*state);
        return 0;
}

static void same_account_by_name_and_uid(void **state) {
        struct gw_userdb *db = *state;
        const struct gw_account *now = NULL;
        assert_int_equal(gw_userdb_same_account(db, 1001, "u1001", 0, &now), 0);
        assert_int_equal(gw_userdb_same_account(db, 1001, "alice", 0, &now), -ESTALE);
        assert_string_equal(now->name, "u1001");
        assert_int_equal(gw_userdb_same_account(db, 2000, "alice", 0, NULL), -ENOENT);
        assert_int_equal(gw_userdb_same_account(db, 2000, "2000", 0, NULL), 0);
        assert_int_equal(gw_userdb_same_account(db, 1001, "1001", 0, NULL), -ESTALE);
        failing = true;
        assert_int_equal(gw_userdb_same_account(db, 2001, "bob", 0, NULL), -EIO);
        assert_int_equal(gw_userdb_same_account(db, 2001, "2001", 0, NULL), -EIO);
        failing = false;
        assert_int_equal(gw_userdb_same_account(db, 2001, "bob", 0, NULL), -EIO); /* kept for the ttl */
        assert_int_equal(gw_userdb_same_account(db, 2001, "bob", GW_USERDB_TTL, NULL), -ENOENT);
}

static void looked_up_once_within_the_ttl(void **state) {
        struct gw_userdb *db = *state;
        const struct gw_account *a = gw_userdb_uid(db, 1000, 0);
        assert_non_null(a);
        assert_string_equal(a->name, "u1000");
        for (int i = 1; i < 100; i++)
                assert_non_null(gw_userdb_uid(db, 1000, i * (GW_USERDB_TTL / 100)));
        assert_int_equal(lookups, 1);
        assert_true(gw_account_in_group(gw_userdb_uid(db, 1000, 1), 100));
        assert_false(gw_account_in_group(gw_userdb_uid(db, 1000, 1), 200));
}

static void a_change_counts_after_the_ttl(void **state) {
        struct gw_userdb *db = *state;
        assert_true(gw_account_in_group(gw_userdb_uid(db, 1000, 0), 100));
        group_of_1000 = 200; /* an admin moves u1000 to another group */
        assert_false(gw_account_in_group(gw_userdb_uid(db, 1000, GW_USERDB_TTL - 1), 200));
        assert_true(gw_account_in_group(gw_userdb_uid(db, 1000, GW_USERDB_TTL), 200));
        assert_int_equal(lookups, 2);
        /* A clock that goes back never keeps an entry forever. */
        assert_non_null(gw_userdb_uid(db, 1000, GW_USERDB_TTL - 5 * SEC));
        assert_int_equal(lookups, 3);
}

static void unknown_ids_are_kept_as_unknown(void **state) {
        struct gw_userdb *db = *state;
        assert_null(gw_userdb_uid(db, 5, 0));
        assert_null(gw_userdb_uid(db, 5, 1));
        assert_int_equal(lookups, 1);
        /* ...and never answer for another id. */
        assert_non_null(gw_userdb_uid(db, 1001, 2));
        assert_null(gw_userdb_user(db, "nobody-here", 3));
        assert_null(gw_userdb_user(db, "nobody-here", 4));
        assert_int_equal(lookups, 3);
        char longname[200];
        memset(longname, 'x', sizeof longname - 1);
        longname[sizeof longname - 1] = '\0';
        assert_null(gw_userdb_user(db, longname, 5));
}

static void by_name_and_by_id_agree(void **state) {
        struct gw_userdb *db = *state;
        assert_int_equal(gw_userdb_user(db, "u1042", 0)->uid, 1042);
        assert_string_equal(gw_userdb_uid(db, 1042, 0)->name, "u1042");
        assert_string_equal(gw_userdb_gid(db, 100, 0)->name, "lab");
        assert_int_equal(gw_userdb_group(db, "lab", 0)->gid, 100);
        assert_null(gw_userdb_gid(db, 7, 0));
        assert_null(gw_userdb_group(db, "wheel", 0));
}

static void many_users_evict_the_oldest(void **state) {
        struct gw_userdb *db = *state;
        for (uint32_t u = 1000; u < 1100; u++)
                assert_int_equal(gw_userdb_uid(db, u, u)->uid, u);
        assert_int_equal(lookups, 100);
        /* The most recent ones are still there; the first ones were evicted. */
        assert_int_equal(gw_userdb_uid(db, 1099, 1200)->uid, 1099);
        assert_int_equal(lookups, 100);
        assert_int_equal(gw_userdb_uid(db, 1000, 1200)->uid, 1000);
        assert_int_equal(lookups, 101);
}

/* A role list names a user by name or by a group of theirs (@lab: u1001 is in it as a
 * supplementary group; a caller acting with gid 100 is too); the admin rule adds root and the
 * daemon's own user. */
static void role_lists_name_users_and_groups(void **state) {
        struct gw_userdb *db = *state;
        const char *list = "alice,\t@lab";
        assert_true(gw_userdb_list_has(db, list, "alice", 1500, 1500, 0));
        assert_true(gw_userdb_list_has(db, list, "u1001", 1001, 1001, 0));
        assert_true(gw_userdb_list_has(db, list, "nobody", 5, 100, 0));
        group_of_1000 = 200;
        assert_false(gw_userdb_list_has(db, list, "u1000", 1000, 1000, 0));
        assert_false(gw_userdb_list_has(db, "@nogroup, bob", "u1001", 1001, 1001, 0));
        assert_false(gw_userdb_list_has(db, "ali", "alice", 1500, 1500, 0));
        assert_false(gw_userdb_list_has(db, NULL, "alice", 1500, 1500, 0));

        assert_true(gw_userdb_is_admin(db, NULL, 4242, 0, 0, "root", 0));
        assert_true(gw_userdb_is_admin(db, NULL, 4242, 4242, 4242, "gpuward", 0));
        assert_true(gw_userdb_is_admin(db, "@lab", 4242, 1001, 1001, "u1001", 0));
        assert_false(gw_userdb_is_admin(db, "@lab", 4242, 1000, 1000, "u1000", 0));
}

/* The real lookups, on what every Linux host has: root, uid 0, group 0. */
static void nss_finds_root(void **state) {
        (void) state;
        struct gw_userdb *db = gw_userdb_new(NULL);
        assert_non_null(db);
        const struct gw_account *a = gw_userdb_uid(db, 0, 0);
        assert_non_null(a);
        assert_string_equal(a->name, "root");
        assert_int_equal(a->gid, 0);
        assert_true(gw_account_in_group(a, 0));
        assert_int_equal(gw_userdb_user(db, "root", 0)->uid, 0);
        assert_string_equal(gw_userdb_gid(db, 0, 0)->name, "root");
        assert_int_equal(gw_userdb_group(db, "root", 0)->gid, 0);
        assert_null(gw_userdb_user(db, "no-such-user-gpuward", 0));
        assert_null(gw_userdb_group(db, "no-such-group-gpuward", 0));
        gw_userdb_free(db);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(looked_up_once_within_the_ttl, setup, teardown),
                cmocka_unit_test_setup_teardown(a_change_counts_after_the_ttl, setup, teardown),
                cmocka_unit_test_setup_teardown(unknown_ids_are_kept_as_unknown, setup, teardown),
                cmocka_unit_test_setup_teardown(by_name_and_by_id_agree, setup, teardown),
                cmocka_unit_test_setup_teardown(many_users_evict_the_oldest, setup, teardown),
                cmocka_unit_test(nss_finds_root),
                cmocka_unit_test_setup_teardown(same_account_by_name_and_uid, setup, teardown),
                cmocka_unit_test_setup_teardown(role_lists_name_users_and_groups, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
