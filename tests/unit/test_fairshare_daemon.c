/* Fair share in the daemon (daemon/base/fairshare.c): the weights' syntax, the usage rebuilt from
 * the store's finished attempts, running attempts charged once whatever the passes' rhythm,
 * and the factors and words a pass gives the queued jobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fairshare.h"
#include "daemon/base/config.h"
#include "daemon/daemon.h"
#include "daemon/base/fairshare.h"

#define HOUR ((gw_usec_t) 3600 * GW_USEC_PER_SEC)
#define NOW ((gw_usec_t) 1800000000 * GW_USEC_PER_SEC)

static void weights_syntax(void **state) {
        (void) state;
        static const struct {
                const char *list;
                int r;
                double alice; /* her share, 0: unlisted */
        } cases[] = {
                { "", 0, 0 },
                { "alice=2,bob=1", 0, 2 },
                { " alice = 2 , bob=0.5", 0, 2 },
                { "bob=3", 0, 0 },
                { "alice", -EINVAL, 0 },
                { "alice=", -EINVAL, 0 },
                { "=2", -EINVAL, 0 },
                { "alice=0", -EINVAL, 0 },
                { "alice=-1", -EINVAL, 0 },
                { "alice=nan", -EINVAL, 0 },
                { "alice=2x", -EINVAL, 0 },
                { "alice=2000000", -EINVAL, 0 },
                { "abcdefghijklmnopqrstuvwxyz0123456789=1", -EINVAL, 0 },
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char why[160] = "";
                double share = 0;
                int r = gw_fair_weights_parse(cases[i].list, "alice", &share, why, sizeof why);
                if (r != cases[i].r || (r == 0 && share != cases[i].alice))
                        fail_msg("'%s': %d, share %g (%s)", cases[i].list, r, share, why);
                if (r < 0 && !why[0])
                        fail_msg("'%s': refused without a why", cases[i].list);
        }
}

static struct gw_job job(int64_t id, uint32_t uid, const char *user, enum gw_job_state st) {
        return (struct gw_job){ .id = id, .uid = uid, .user = (char *) user, .state = st, .ngpus = 1 };
}

/* A finished job of user with one attempt of gpus GPUs over [start, end]. */
static void finished(struct gw_store *s, uint32_t uid, const char *user, uint64_t mask, gw_usec_t start,
                     gw_usec_t end) {
        static const char *const argv[] = { "true", NULL };
        struct gw_job j = job(0, uid, user, GW_JOB_COMPLETED);
        j.argv = (char **) argv;
        j.cwd = (char *) "/";
        j.name = (char *) "t";
        j.attempt = 1;
        j.gpu_mask = mask;
        j.start_time = start;
        j.end_time = end;
        assert_int_equal(gw_store_job_insert(s, &j, "test"), 0);
        struct gw_job_attempt a = { .attempt = 1,
                                    .gpu_mask = mask,
                                    .start_time = start,
                                    .end_time = end,
                                    .class_name = (char *) "ok",
                                    .evidence = (char *) "",
                                    .epoch = -1 };
        assert_int_equal(gw_store_attempt_add(s, j.id, &a), 0);
}

static void remove_dir(const char *dir) {
        DIR *dd = opendir(dir);
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

static void usage_read_charged_and_explained(void **state) {
        (void) state;
        char dir[64] = "/tmp/gw-test-fair-XXXXXX", err[256] = "";
        assert_non_null(mkdtemp(dir));
        struct gw_config cfg = { .fairshare = true,
                                 .fairshare_half_life = 7 * 24 * HOUR,
                                 .fairshare_weights = (char *) "" };
        struct gw_daemon d = { .cfg = &cfg, .now_wall = NOW };
        if (gw_store_open(dir, &d.store, err, sizeof err) < 0)
                fail_msg("gw_store_open(%s): %s", dir, err);
        finished(d.store, 1001, "alice", 0x3, NOW - 2 * HOUR, NOW - HOUR); /* 2 GPU-h */
        /* Ended 9 half-lives ago: not read back (it would weigh under 1/512 of its hours). */
        finished(d.store, 1002, "bob", 0xF, NOW - 9 * 7 * 24 * HOUR - HOUR, NOW - 9 * 7 * 24 * HOUR);
        assert_int_equal(gw_fair_open(&d), 0);
        assert_non_null(d.jobs.fair);

        struct gw_job ja = job(10, 1001, "alice", GW_JOB_PENDING), jb = job(11, 1002, "bob", GW_JOB_PENDING);
        struct gw_djob qa = { .job = &ja }, qb = { .job = &jb };
        struct gw_djob *queue[] = { &qa, &qb };
        d.jobs.queue = queue;
        d.jobs.n_queue = 2;
        struct gw_sched_fair fair;
        gw_fair_pass(&d, false, &fair);
        assert_int_equal(fair.n, 2);
        assert_true(fabs(ja.fairshare - 0.25) < 1e-3); /* all the use, half the shares: 2^-2 */
        assert_true(jb.fairshare == 1.0);
        char why[GW_FS_WHY_SIZE];
        gw_fs_priority_why(ja.priority, ja.fair_line, why, sizeof why);
        if (!strstr(why, "priority 0, then fairshare 0.25: alice used 2.0 GPU-h (decayed)") ||
            !strstr(why, "then submission order"))
                fail_msg("alice's why: %s", why);
        /* The pass keeps the queue in the order the factors give: B's job first. */
        assert_ptr_equal(queue[0], &qb);
        assert_ptr_equal(queue[1], &qa);
        struct gw_sched_job pending[2] = { 0 };
        gw_fair_users(&d, pending, 2);
        assert_true(fair.factor[pending[0].fs_user] == jb.fairshare);
        assert_true(fair.factor[pending[1].fs_user] == ja.fairshare);

        /* Bob runs 4 GPUs for 3 hours: charged at passes, the same instant twice charges once,
         * and the end charges the rest. */
        struct gw_job jr = job(12, 1002, "bob", GW_JOB_RUNNING);
        jr.gpu_mask = 0xF;
        jr.start_time = NOW;
        struct gw_djob qr = { .job = &jr };
        struct gw_djob *running[] = { &qr };
        d.jobs.running = running;
        d.jobs.n_running = 1;
        /* The factors are kept for a second (GW_FAIR_FACTORS_EVERY): usage that decays over
         * days moves them too little in one to matter. */
        d.now_wall = NOW + HOUR;
        gw_fair_pass(&d, false, &fair);
        assert_true(fabs(ja.fairshare - 0.25) < 1e-3);
        d.now += GW_FAIR_FACTORS_EVERY;
        gw_fair_pass(&d, false, &fair);
        double a1 = ja.fairshare, b1 = jb.fairshare;
        assert_true(b1 < a1); /* 4 GPU-h against 2 */
        assert_ptr_equal(queue[0], &qa); /* and A's job goes first now */
        d.now += GW_FAIR_FACTORS_EVERY;
        gw_fair_pass(&d, false, &fair);
        assert_true(ja.fairshare == a1 && jb.fairshare == b1);
        d.now_wall = NOW + 3 * HOUR;
        gw_fair_attempt_ended(&d, &qr);
        d.jobs.n_running = 0;
        d.now += GW_FAIR_FACTORS_EVERY;
        gw_fair_pass(&d, false, &fair);
        double b3 = jb.fairshare;
        assert_true(b3 < b1);
        gw_fair_pass(&d, false, &fair);
        assert_true(jb.fairshare == b3);
        /* 12 GPU-h against 2 (decay over hours is tiny): U = 12/14, S = 1/2. */
        assert_true(fabs(b3 - pow(2, -(12.0 / 14) * 2)) < 1e-2);

        /* Into a full box, a pass only for the jobs' words: at most one a second. */
        d.now = 10 * GW_USEC_PER_SEC;
        gw_fair_pass(&d, false, &fair);
        assert_non_null(fair.factor);
        gw_fair_pass(&d, true, &fair);
        assert_null(fair.factor);
        d.now += GW_FAIR_FULL_EVERY;
        gw_fair_pass(&d, true, &fair);
        assert_non_null(fair.factor);

        /* The jobs let go, as GW_HOOK_JOB_FREED does: fair share keeps nothing of them. */
        gw_fair_forget(&d, &qa);
        gw_fair_forget(&d, &qb);
        gw_fair_forget(&d, &qr);
        assert_int_equal(d.state.fair.n, 0);
        gw_fair_close(&d);
        assert_null(d.jobs.fair);
        d.store = gw_store_close(d.store);
        remove_dir(dir);
}

static void off_says_so(void **state) {
        (void) state;
        struct gw_config cfg = { .fairshare = false };
        struct gw_daemon d = { .cfg = &cfg, .now_wall = NOW };
        assert_int_equal(gw_fair_open(&d), 0); /* reads nothing: no store given */
        assert_non_null(d.jobs.fair);
        struct gw_job ja = job(10, 1001, "alice", GW_JOB_PENDING);
        ja.priority = 3;
        struct gw_djob qa = { .job = &ja };
        struct gw_djob *queue[] = { &qa };
        d.jobs.queue = queue;
        d.jobs.n_queue = 1;
        struct gw_sched_fair fair;
        gw_fair_pass(&d, false, &fair);
        assert_null(fair.factor);
        assert_true(ja.fairshare == 0);
        assert_string_equal(ja.fair_line, ""); /* off */
        char why[GW_FS_WHY_SIZE];
        gw_fs_priority_why(ja.priority, NULL, why, sizeof why);
        assert_string_equal(why, "priority 3, then submission order (fair share is off)");
        gw_fair_forget(&d, &qa);
        gw_fair_close(&d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(weights_syntax),
                cmocka_unit_test(usage_read_charged_and_explained),
                cmocka_unit_test(off_says_so),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
