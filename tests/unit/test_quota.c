#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "core/quota.h"

#define SEC GW_USEC_PER_SEC
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)
#define NOW ((gw_usec_t) 1700000000 * SEC)

static void set(struct gw_quota *q, const char *s) {
        char msg[GW_QUOTA_MSG_SIZE];
        if (gw_quota_parse_setting(q, s, msg, sizeof(msg)) != 0)
                fail_msg("'%s' refused: %s", s, msg);
}

static void parse_good(void **state) {
        static const struct {
                const char *setting;
                enum gw_quota_key key;
                int64_t value;
        } cases[] = {
                { "max_gpus=4", GW_QUOTA_MAX_GPUS, 4 },
                { "max_gpus=0", GW_QUOTA_MAX_GPUS, 0 },
                { "max_pending_jobs=100", GW_QUOTA_MAX_PENDING_JOBS, 100 },
                { "max_time_limit=2d", GW_QUOTA_MAX_TIME_LIMIT, 2 * DAY },
                { "max_time_limit=90", GW_QUOTA_MAX_TIME_LIMIT, 90 * MIN }, /* bare = minutes, as --time */
                { "max_time_limit=1-12:00:00", GW_QUOTA_MAX_TIME_LIMIT, 36 * HOUR },
                { "max_gpu_hours_7d=100", GW_QUOTA_MAX_GPU_HOURS_7D, 100 * HOUR },
                { "max_booking_hours=4", GW_QUOTA_MAX_BOOKING_HOURS, 4 * HOUR }, /* bare = hours */
                { "max_booking_hours=90m", GW_QUOTA_MAX_BOOKING_HOURS, 90 * MIN },
                { "max_booking_gpus=2", GW_QUOTA_MAX_BOOKING_GPUS, 2 },
                { "booking_horizon_hours=336", GW_QUOTA_BOOKING_HORIZON_HOURS, 14 * DAY },
                { "booking_horizon_hours=14d", GW_QUOTA_BOOKING_HORIZON_HOURS, 14 * DAY },
                { "max_priority=5", GW_QUOTA_MAX_PRIORITY, 5 },
                { "max_priority=1000", GW_QUOTA_MAX_PRIORITY, 1000 },
                { "max_priority=unlimited", GW_QUOTA_MAX_PRIORITY, GW_QUOTA_UNLIMITED },
                { "max_gpus=unlimited", GW_QUOTA_MAX_GPUS, GW_QUOTA_UNLIMITED },
                { "max_time_limit=none", GW_QUOTA_MAX_TIME_LIMIT, GW_QUOTA_UNLIMITED },
                { "max_gpus=unset", GW_QUOTA_MAX_GPUS, GW_QUOTA_UNSET },
        };
        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct gw_quota q;
                gw_quota_init(&q);
                q.v[cases[i].key] = 12345;
                set(&q, cases[i].setting);
                if (q.v[cases[i].key] != cases[i].value)
                        fail_msg("%s: got %lld", cases[i].setting, (long long) q.v[cases[i].key]);
        }
}

static void parse_bad(void **state) {
        static const struct {
                const char *setting, *msg;
        } cases[] = {
                { "max_gpu=4", "unknown quota key 'max_gpu' (known: max_gpus, max_pending_jobs, "
                               "max_time_limit, max_gpu_hours_7d, max_booking_hours, max_booking_gpus, "
                               "booking_horizon_hours, max_priority)" },
                { "max_gpus", "'max_gpus': expected KEY=VALUE, e.g. max_gpus=4" },
                { "=4", "'=4': expected KEY=VALUE, e.g. max_gpus=4" },
                { "max_gpus=", "max_gpus: missing value (use unset to clear it)" },
                { "max_gpus=4x", "max_gpus: '4x' is not a whole number >= 0 (or unlimited, unset)" },
                { "max_gpus=-1", "max_gpus: '-1' is not a whole number >= 0 (or unlimited, unset)" },
                { "max_time_limit=2 days",
                  "max_time_limit: '2 days' is not a duration such as 90m, 12h, 2d or 1-12:00:00 (or unlimited, unset)" },
                { "max_time_limit=0",
                  "max_time_limit: '0' is not a duration such as 90m, 12h, 2d or 1-12:00:00 (or unlimited, unset)" },
                { "max_gpu_hours_7d=1.5",
                  "max_gpu_hours_7d: '1.5' is not a whole number of GPU-hours (or unlimited, unset)" },
                { "max_booking_hours=4H",
                  "max_booking_hours: '4H' is not a number of hours or a duration such as 90m or 2d (or unlimited, unset)" },
                { "max_priority=1001", "max_priority: '1001' is not a priority from 0 to 1000 (or unlimited, unset)" },
                { "max_priority=-5", "max_priority: '-5' is not a priority from 0 to 1000 (or unlimited, unset)" },
                { "MAX_GPUS=4", NULL },
        };
        (void) state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct gw_quota q, before;
                char msg[GW_QUOTA_MSG_SIZE] = "";
                gw_quota_init(&q);
                q.v[GW_QUOTA_MAX_GPUS] = 3;
                before = q;
                assert_int_equal(gw_quota_parse_setting(&q, cases[i].setting, msg, sizeof(msg)), -EINVAL);
                assert_memory_equal(&q, &before, sizeof(q));
                if (cases[i].msg)
                        assert_string_equal(msg, cases[i].msg);
                else
                        assert_true(msg[0] != '\0');
        }
}

static void format_values(void **state) {
        char b[32];
        (void) state;
        assert_string_equal(gw_quota_format_value(GW_QUOTA_MAX_GPUS, 4, b, sizeof(b)), "4");
        assert_string_equal(gw_quota_format_value(GW_QUOTA_MAX_PRIORITY, 5, b, sizeof(b)), "5");
        assert_string_equal(gw_quota_format_value(GW_QUOTA_MAX_TIME_LIMIT, 2 * DAY, b, sizeof(b)), "2d");
        assert_string_equal(gw_quota_format_value(GW_QUOTA_MAX_BOOKING_HOURS, 4 * HOUR, b, sizeof(b)), "4h");
        assert_string_equal(gw_quota_format_value(GW_QUOTA_MAX_GPU_HOURS_7D, 100 * HOUR, b, sizeof(b)), "100 GPU-h");
        assert_string_equal(gw_quota_format_value(GW_QUOTA_MAX_GPU_HOURS_7D, 90 * MIN, b, sizeof(b)), "1.5 GPU-h");
        assert_string_equal(gw_quota_format_value(GW_QUOTA_MAX_GPUS, GW_QUOTA_UNLIMITED, b, sizeof(b)), "unlimited");
        assert_string_equal(gw_quota_format_value(GW_QUOTA_MAX_GPUS, GW_QUOTA_UNSET, b, sizeof(b)), "unset");
        assert_string_equal(gw_quota_key_name(GW_QUOTA_BOOKING_HORIZON_HOURS), "booking_horizon_hours");
        assert_null(gw_quota_key_name(_GW_QUOTA_KEY_MAX));
        assert_int_equal(gw_quota_key_from_name("max_pending_jobs"), GW_QUOTA_MAX_PENDING_JOBS);
        assert_int_equal(gw_quota_key_from_name("nope"), _GW_QUOTA_KEY_INVALID);
}

/* User entry first; then the most permissive group; then the default; then unlimited. */
static void resolution_order(void **state) {
        struct gw_quota user, students, lab, deflt, r;
        const struct gw_quota *groups[] = { &students, NULL, &lab };
        enum gw_quota_source src[_GW_QUOTA_KEY_MAX];

        (void) state;
        gw_quota_init(&user);
        gw_quota_init(&students);
        gw_quota_init(&lab);
        gw_quota_init(&deflt);
        set(&deflt, "max_gpus=1");
        set(&deflt, "max_time_limit=1d");
        set(&deflt, "max_pending_jobs=10");
        set(&students, "max_gpus=2");
        set(&students, "max_time_limit=12h");
        set(&lab, "max_gpus=4");
        set(&lab, "max_booking_gpus=unlimited");
        set(&students, "max_booking_gpus=2");
        set(&user, "max_gpus=1");

        gw_quota_resolve(&user, groups, 3, &deflt, &r, src);
        assert_int_equal(r.v[GW_QUOTA_MAX_GPUS], 1); /* the user's own entry wins, even if stricter */
        assert_int_equal(src[GW_QUOTA_MAX_GPUS], GW_QUOTA_FROM_USER);
        assert_int_equal(r.v[GW_QUOTA_MAX_TIME_LIMIT], 12 * HOUR); /* a group beats the default */
        assert_int_equal(src[GW_QUOTA_MAX_TIME_LIMIT], GW_QUOTA_FROM_GROUP);
        assert_true(r.v[GW_QUOTA_MAX_BOOKING_GPUS] == GW_QUOTA_UNLIMITED); /* most permissive group */
        assert_int_equal(r.v[GW_QUOTA_MAX_PENDING_JOBS], 10);
        assert_int_equal(src[GW_QUOTA_MAX_PENDING_JOBS], GW_QUOTA_FROM_DEFAULT);
        assert_true(r.v[GW_QUOTA_MAX_GPU_HOURS_7D] == GW_QUOTA_UNLIMITED);
        assert_int_equal(src[GW_QUOTA_MAX_GPU_HOURS_7D], GW_QUOTA_FROM_NONE);
        /* Set nowhere: how far ahead one may book is bounded all the same (30 days). */
        assert_int_equal(r.v[GW_QUOTA_BOOKING_HORIZON_HOURS], 30 * 24 * HOUR);
        assert_int_equal(src[GW_QUOTA_BOOKING_HORIZON_HOURS], GW_QUOTA_FROM_BUILTIN);
        set(&deflt, "booking_horizon_hours=unlimited");
        gw_quota_resolve(&user, groups, 3, &deflt, &r, src);
        assert_true(r.v[GW_QUOTA_BOOKING_HORIZON_HOURS] == GW_QUOTA_UNLIMITED);
        assert_int_equal(src[GW_QUOTA_BOOKING_HORIZON_HOURS], GW_QUOTA_FROM_DEFAULT);

        /* Without the user entry: max over groups (4), whatever their order. */
        const struct gw_quota *rev[] = { &lab, &students };
        gw_quota_resolve(NULL, rev, 2, &deflt, &r, NULL);
        assert_int_equal(r.v[GW_QUOTA_MAX_GPUS], 4);
        gw_quota_resolve(NULL, NULL, 0, &deflt, &r, NULL);
        assert_int_equal(r.v[GW_QUOTA_MAX_GPUS], 1);
        gw_quota_resolve(NULL, NULL, 0, NULL, &r, NULL);
        assert_true(r.v[GW_QUOTA_MAX_GPUS] == GW_QUOTA_UNLIMITED);
}

static void rolling_gpu_time(void **state) {
        const struct gw_quota_interval iv[] = {
                { NOW - 8 * DAY, NOW - 7 * DAY - HOUR, 4 }, /* entirely before the window */
                { NOW - 7 * DAY - 2 * HOUR, NOW - 7 * DAY + 3 * HOUR, 2 }, /* 3 h inside: 6 GPU-h */
                { NOW - 2 * DAY, NOW - 2 * DAY + 10 * HOUR, 1 }, /* 10 GPU-h */
                { NOW - 30 * MIN, 0, 4 }, /* running: 2 GPU-h so far */
        };
        (void) state;
        assert_int_equal(gw_quota_gpu_time(iv, 4, NOW, GW_QUOTA_WINDOW_7D), 18 * HOUR);
        /* A day later the 6 GPU-h job has left the window; the running one has grown. */
        assert_int_equal(gw_quota_gpu_time(iv, 4, NOW + DAY, GW_QUOTA_WINDOW_7D), 10 * HOUR + 4 * (DAY + 30 * MIN));
        assert_int_equal(gw_quota_gpu_time(iv, 0, NOW, GW_QUOTA_WINDOW_7D), 0);
}

struct submit_case {
        const char *name;
        const char *limits[4];
        struct gw_quota_usage use;
        int64_t ngpus;
        gw_usec_t limit;
        int verdict;
        const char *msg;
};

static const struct submit_case submit_cases[] = {
        { "within everything",
          { "max_gpus=4", "max_pending_jobs=10", "max_time_limit=2d", "max_gpu_hours_7d=100" },
          { 2, 3, 50 * HOUR, 0 },
          2,
          DAY,
          GW_QUOTA_OK,
          "" },
        { "nothing set", { NULL }, { 60, 900, 9000 * HOUR, 0 }, 8, 30 * DAY, GW_QUOTA_OK, "" },
        { "too long: hard",
          { "max_time_limit=2d" },
          { 0, 0, 0, 0 },
          1,
          3 * DAY,
          GW_QUOTA_REFUSE,
          "max_time_limit is 2d; the job asks 3d" },
        { "time limit equal to the max is fine", { "max_time_limit=2d" }, { 0, 0, 0, 0 }, 1, 2 * DAY, GW_QUOTA_OK, "" },
        { "too many pending: hard",
          { "max_pending_jobs=10" },
          { 0, 10, 0, 0 },
          1,
          HOUR,
          GW_QUOTA_REFUSE,
          "max_pending_jobs is 10; 10 jobs already pending" },
        { "one more pending is fine", { "max_pending_jobs=10" }, { 0, 9, 0, 0 }, 1, HOUR, GW_QUOTA_OK, "" },
        { "an array that fits exactly", { "max_pending_jobs=10" }, { 0, 4, 0, 6 }, 1, HOUR, GW_QUOTA_OK, "" },
        { "an array one task too many: refused whole",
          { "max_pending_jobs=10" },
          { 0, 4, 0, 7 },
          1,
          HOUR,
          GW_QUOTA_REFUSE,
          "max_pending_jobs is 10; 4 jobs already pending and the submission adds 7 (an array's tasks count one "
          "each)" },
        { "an array alone above the limit",
          { "max_pending_jobs=1000" },
          { 0, 0, 0, 2000 },
          1,
          HOUR,
          GW_QUOTA_REFUSE,
          "max_pending_jobs is 1000; 0 jobs already pending and the submission adds 2000 (an array's tasks count "
          "one each)" },
        { "max_pending_jobs=0 refuses even one",
          { "max_pending_jobs=0" },
          { 0, 0, 0, 1 },
          1,
          HOUR,
          GW_QUOTA_REFUSE,
          "max_pending_jobs is 0; 0 jobs already pending" },
        { "job alone above max_gpus: hard",
          { "max_gpus=4" },
          { 0, 0, 0, 0 },
          8,
          HOUR,
          GW_QUOTA_REFUSE,
          "max_gpus is 4; the job asks 8 GPUs and could never start" },
        { "GPUs in use: wait",
          { "max_gpus=4" },
          { 3, 0, 0, 0 },
          2,
          HOUR,
          GW_QUOTA_WAIT,
          "Quota: max_gpus is 4; 3 GPUs in use and the job asks 2" },
        { "exactly max_gpus: ok", { "max_gpus=4" }, { 2, 0, 0, 0 }, 2, HOUR, GW_QUOTA_OK, "" },
        { "GPU-hours used up: wait",
          { "max_gpu_hours_7d=100" },
          { 0, 0, 100 * HOUR + 30 * MIN, 0 },
          1,
          HOUR,
          GW_QUOTA_WAIT,
          "Quota: max_gpu_hours_7d is 100 GPU-h; 100.5 GPU-h used in the last 7 days" },
        { "max_gpus=0 refuses all",
          { "max_gpus=0" },
          { 0, 0, 0, 0 },
          1,
          HOUR,
          GW_QUOTA_REFUSE,
          "max_gpus is 0; the job asks 1 GPU and could never start" },
        { "hard before wait",
          { "max_gpus=4", "max_time_limit=1h" },
          { 4, 0, 0, 0 },
          1,
          2 * HOUR,
          GW_QUOTA_REFUSE,
          "max_time_limit is 1h; the job asks 2h" },
};

static void submit_table(void **state) {
        (void) state;
        for (size_t i = 0; i < sizeof(submit_cases) / sizeof(submit_cases[0]); i++) {
                const struct submit_case *c = &submit_cases[i];
                struct gw_quota e, r;
                char msg[GW_QUOTA_MSG_SIZE] = "junk";

                gw_quota_init(&e);
                for (int k = 0; k < 4 && c->limits[k]; k++)
                        set(&e, c->limits[k]);
                gw_quota_resolve(&e, NULL, 0, NULL, &r, NULL);
                int v = gw_quota_check_submit(&r, &c->use, c->ngpus, c->limit, msg, sizeof(msg));
                if (v != c->verdict || strcmp(msg, c->msg) != 0)
                        fail_msg("%s: verdict %d '%s', want %d '%s'", c->name, v, msg, c->verdict, c->msg);
        }
}

static void start_check(void **state) {
        struct gw_quota e, r;
        struct gw_quota_usage u = { .gpus_running = 3, .pending_jobs = 50, .gpu_time_7d = 0 };
        char msg[GW_QUOTA_MSG_SIZE];

        (void) state;
        gw_quota_init(&e);
        set(&e, "max_gpus=4");
        set(&e, "max_pending_jobs=1");
        gw_quota_resolve(&e, NULL, 0, NULL, &r, NULL);
        /* Only the wait-type limits apply to a job already queued. */
        assert_int_equal(gw_quota_check_start(&r, &u, 1, msg, sizeof(msg)), GW_QUOTA_OK);
        assert_int_equal(gw_quota_check_start(&r, &u, 2, msg, sizeof(msg)), GW_QUOTA_WAIT);
        assert_string_equal(msg, "Quota: max_gpus is 4; 3 GPUs in use and the job asks 2");
        assert_int_equal(gw_quota_check_start(&r, &u, 0, msg, sizeof(msg)), -EINVAL);
        assert_int_equal(gw_quota_check_submit(&r, &u, 1, 0, msg, sizeof(msg)), -EINVAL);
}

/* The reason a waiting job shows: the limit as people set it, the usage and the jobs holding it. */
static void wait_reason(void **state) {
        struct gw_quota e, r;
        struct gw_quota_usage u = { .gpus_running = 1 };
        const int64_t one[] = { 24 }, many[] = { 24, 25, 26, 27, 28 };
        char msg[GW_QUOTA_MSG_SIZE];

        (void) state;
        gw_quota_init(&e);
        set(&e, "max_gpus=1");
        gw_quota_resolve(&e, NULL, 0, NULL, &r, NULL);
        assert_int_equal(gw_quota_wait_reason(&r, &u, 1, one, 1, msg, sizeof(msg)), GW_QUOTA_WAIT);
        assert_string_equal(msg, "Quota: max_gpus=1, 1 in use by job 24");
        u.gpus_running = 5;
        assert_int_equal(gw_quota_wait_reason(&r, &u, 2, many, 5, msg, sizeof(msg)), GW_QUOTA_WAIT);
        assert_string_equal(msg, "Quota: max_gpus=1, 5 in use by jobs 24, 25, 26, 27, ...; the job asks 2");
        assert_int_equal(gw_quota_wait_reason(&r, &u, 1, NULL, 0, msg, sizeof(msg)), GW_QUOTA_WAIT);
        assert_string_equal(msg, "Quota: max_gpus=1, 5 in use");
        u.gpus_running = 0;
        assert_int_equal(gw_quota_wait_reason(&r, &u, 1, NULL, 0, msg, sizeof(msg)), GW_QUOTA_OK);
        assert_string_equal(msg, "");
        gw_quota_init(&e);
        set(&e, "max_gpu_hours_7d=100");
        gw_quota_resolve(&e, NULL, 0, NULL, &r, NULL);
        u.gpu_time_7d = (gw_usec_t) 101 * 3600 * GW_USEC_PER_SEC;
        assert_int_equal(gw_quota_wait_reason(&r, &u, 1, NULL, 0, msg, sizeof(msg)), GW_QUOTA_WAIT);
        assert_string_equal(msg, "Quota: max_gpu_hours_7d is 100 GPU-h; 101.0 GPU-h used in the last 7 days");
        assert_int_equal(gw_quota_wait_reason(&r, &u, 1, NULL, 1, msg, sizeof(msg)), -EINVAL);
}

static void booking_check(void **state) {
        struct gw_quota e, r;
        char msg[GW_QUOTA_MSG_SIZE];
        gw_usec_t start = NOW + DAY;

        (void) state;
        gw_quota_init(&e);
        set(&e, "max_booking_hours=4");
        set(&e, "max_booking_gpus=2");
        set(&e, "booking_horizon_hours=7d");
        gw_quota_resolve(&e, NULL, 0, NULL, &r, NULL);

        assert_int_equal(gw_quota_check_booking(&r, 0, 2, start, start + 4 * HOUR, NOW, msg, sizeof(msg)),
                         GW_QUOTA_BOOKING_APPROVE);
        assert_string_equal(msg, "");
        assert_int_equal(gw_quota_check_booking(&r, 0, 2, start, start + 5 * HOUR, NOW, msg, sizeof(msg)),
                         GW_QUOTA_BOOKING_NEEDS_APPROVAL);
        assert_string_equal(msg, "needs an admin's approval: max_booking_hours is 4h; the booking lasts 5h");
        assert_int_equal(gw_quota_check_booking(&r, 0, 3, start, start + HOUR, NOW, msg, sizeof(msg)),
                         GW_QUOTA_BOOKING_NEEDS_APPROVAL);
        assert_string_equal(msg, "needs an admin's approval: max_booking_gpus is 2; the booking asks 3");
        /* Overlapping the user's own booking beyond the limit. */
        assert_int_equal(gw_quota_check_booking(&r, 1, 2, start, start + HOUR, NOW, msg, sizeof(msg)),
                         GW_QUOTA_BOOKING_NEEDS_APPROVAL);
        assert_string_equal(msg, "needs an admin's approval: max_booking_gpus is 2; 1 GPU already booked "
                                 "at the same time and the booking asks 2");
        assert_int_equal(gw_quota_check_booking(&r, 0, 1, NOW + 8 * DAY, NOW + 8 * DAY + HOUR, NOW, msg, sizeof(msg)),
                         GW_QUOTA_BOOKING_REFUSE);
        assert_string_equal(msg, "booking_horizon_hours is 7d; the booking starts in 8d");
        /* "now+8d4h" as it arrives, a few milliseconds short: not "8d3h". */
        assert_int_equal(
                gw_quota_check_booking(&r, 0, 1, NOW + 8 * DAY + 4 * HOUR - 5000, NOW + 9 * DAY, NOW, msg, sizeof(msg)),
                GW_QUOTA_BOOKING_REFUSE);
        assert_string_equal(msg, "booking_horizon_hours is 7d; the booking starts in 8d4h");
        /* Horizon before approval: a refusal is final. */
        assert_int_equal(gw_quota_check_booking(&r, 0, 8, NOW + 8 * DAY, NOW + 9 * DAY, NOW, msg, sizeof(msg)),
                         GW_QUOTA_BOOKING_REFUSE);
        assert_int_equal(gw_quota_check_booking(&r, 0, 0, start, start + HOUR, NOW, msg, sizeof(msg)), -EINVAL);
        assert_int_equal(gw_quota_check_booking(&r, 0, 1, start, start, NOW, msg, sizeof(msg)), -EINVAL);
}

/* Keys no entry sets take the role's value, and say so; what an entry sets stays. */
static void role_fill(void **state) {
        (void) state;
        struct gw_quota user, role, r;
        enum gw_quota_source src[_GW_QUOTA_KEY_MAX];

        gw_quota_init(&user);
        set(&user, "max_gpus=2");
        gw_quota_init(&role);
        role.v[GW_QUOTA_MAX_PRIORITY] = 0;
        role.v[GW_QUOTA_MAX_PENDING_JOBS] = 1000;
        role.v[GW_QUOTA_MAX_GPUS] = 8; /* set by the user's entry: not the role's to change */
        gw_quota_resolve(&user, NULL, 0, NULL, &r, src);
        gw_quota_role_fill(&r, src, &role);
        assert_int_equal(r.v[GW_QUOTA_MAX_PRIORITY], 0);
        assert_int_equal(src[GW_QUOTA_MAX_PRIORITY], GW_QUOTA_FROM_ROLE);
        assert_int_equal(r.v[GW_QUOTA_MAX_PENDING_JOBS], 1000);
        assert_int_equal(src[GW_QUOTA_MAX_PENDING_JOBS], GW_QUOTA_FROM_ROLE);
        assert_int_equal(r.v[GW_QUOTA_MAX_GPUS], 2);
        assert_int_equal(src[GW_QUOTA_MAX_GPUS], GW_QUOTA_FROM_USER);
        assert_int_equal(r.v[GW_QUOTA_MAX_TIME_LIMIT], GW_QUOTA_UNLIMITED); /* no role value: unlimited */
        assert_int_equal(src[GW_QUOTA_MAX_TIME_LIMIT], GW_QUOTA_FROM_NONE);

        /* A group's grant beats the role's default; the default entry too. */
        struct gw_quota grp, deflt;
        const struct gw_quota *groups[] = { &grp };
        gw_quota_init(&grp);
        set(&grp, "max_priority=7");
        gw_quota_resolve(NULL, groups, 1, NULL, &r, src);
        gw_quota_role_fill(&r, src, &role);
        assert_int_equal(r.v[GW_QUOTA_MAX_PRIORITY], 7);
        assert_int_equal(src[GW_QUOTA_MAX_PRIORITY], GW_QUOTA_FROM_GROUP);
        gw_quota_init(&deflt);
        set(&deflt, "max_priority=3");
        gw_quota_resolve(NULL, NULL, 0, &deflt, &r, src);
        gw_quota_role_fill(&r, src, &role);
        assert_int_equal(r.v[GW_QUOTA_MAX_PRIORITY], 3);
        assert_int_equal(src[GW_QUOTA_MAX_PRIORITY], GW_QUOTA_FROM_DEFAULT);
}

struct prio_case {
        const char *name;
        struct gw_prio_grant g;
        int64_t priority;
        int verdict;
        const char *msg;
};

static const struct prio_case prio_cases[] = {
        { "users' default refuses 1000",
          { false, 0, GW_QUOTA_FROM_ROLE, -1, NULL, "alice" },
          1000,
          GW_QUOTA_REFUSE,
          "priority 1000 is above your maximum 0 (users' default; an admin grants more: gpuward admin quota set "
          "alice max_priority=N)" },
        { "0 is everyone's", { false, 0, GW_QUOTA_FROM_ROLE, -1, NULL, "alice" }, 0, GW_QUOTA_OK, "" },
        { "lowering one's own is always allowed",
          { false, 0, GW_QUOTA_FROM_USER, -1, NULL, "alice" },
          -1000,
          GW_QUOTA_OK,
          "" },
        { "a granted 5", { false, 5, GW_QUOTA_FROM_USER, -1, NULL, "alice" }, 5, GW_QUOTA_OK, "" },
        { "one above the grant",
          { false, 5, GW_QUOTA_FROM_USER, -1, NULL, "alice" },
          6,
          GW_QUOTA_REFUSE,
          "priority 6 is above your maximum 5 (your quota; an admin grants more: gpuward admin quota set alice "
          "max_priority=N)" },
        { "a group's grant",
          { false, 2, GW_QUOTA_FROM_GROUP, -1, NULL, "bob" },
          3,
          GW_QUOTA_REFUSE,
          "priority 3 is above your maximum 2 (your group's quota; an admin grants more: gpuward admin quota set "
          "bob max_priority=N)" },
        { "the profile grants more than the quota",
          { false, 0, GW_QUOTA_FROM_ROLE, 20, "urgent", "alice" },
          20,
          GW_QUOTA_OK,
          "" },
        { "above the profile's",
          { false, 0, GW_QUOTA_FROM_ROLE, 20, "urgent", "alice" },
          21,
          GW_QUOTA_REFUSE,
          "priority 21 is above your maximum 20 (profile 'urgent'; an admin grants more: gpuward admin quota set "
          "alice max_priority=N)" },
        { "the largest grant wins: the quota's",
          { false, 30, GW_QUOTA_FROM_USER, 20, "urgent", "alice" },
          30,
          GW_QUOTA_OK,
          "" },
        { "unlimited is the most there is",
          { false, GW_QUOTA_UNLIMITED, GW_QUOTA_FROM_USER, -1, NULL, "alice" },
          1000,
          GW_QUOTA_OK,
          "" },
        { "an admin: anything", { true, 0, GW_QUOTA_FROM_USER, -1, NULL, "root" }, 1000, GW_QUOTA_OK, "" },
};

static void priority_check(void **state) {
        (void) state;
        for (size_t i = 0; i < sizeof(prio_cases) / sizeof(prio_cases[0]); i++) {
                const struct prio_case *c = &prio_cases[i];
                char msg[GW_QUOTA_MSG_SIZE] = "junk";
                int v = gw_quota_check_priority(&c->g, c->priority, msg, sizeof(msg));
                if (v != c->verdict || strcmp(msg, c->msg) != 0)
                        fail_msg("%s: verdict %d '%s', want %d '%s'", c->name, v, msg, c->verdict, c->msg);
        }
        enum gw_prio_source from;
        struct gw_prio_grant g = { false, 5, GW_QUOTA_FROM_USER, 20, "urgent", "alice" };
        assert_int_equal(gw_quota_max_priority(&g, &from), 20);
        assert_int_equal(from, GW_PRIO_FROM_PROFILE);
        g.admin = true;
        assert_int_equal(gw_quota_max_priority(&g, &from), GW_PRIORITY_MAX);
        assert_int_equal(from, GW_PRIO_FROM_ADMIN);
        g = (struct gw_prio_grant){ false, 5, (enum gw_quota_source) 99, -1, NULL, "alice" };
        assert_int_equal(gw_quota_check_priority(&g, 1, NULL, 0), -EINVAL);
        assert_int_equal(gw_quota_check_priority(NULL, 1, NULL, 0), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(parse_good),       cmocka_unit_test(parse_bad),        cmocka_unit_test(format_values),
                cmocka_unit_test(resolution_order), cmocka_unit_test(rolling_gpu_time), cmocka_unit_test(submit_table),
                cmocka_unit_test(start_check),      cmocka_unit_test(booking_check),    cmocka_unit_test(wait_reason),
                cmocka_unit_test(role_fill),        cmocka_unit_test(priority_check),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
