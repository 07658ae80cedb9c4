#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "core/bookpolicy.h"

#define SEC GW_USEC_PER_SEC
#define HOUR (3600 * SEC)
#define DAY (24 * HOUR)
#define NOW ((gw_usec_t) 1700000000 * SEC)
#define M(i) (UINT64_C(1) << (i))
#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* The rules, one row each, on the default policy unless a row says otherwise. */
static void check_table(void **state) {
        static const struct row {
                const char *what;
                struct gw_bookpolicy p;
                struct gw_bookpolicy_ask a;
                int want;
                const char *says;
        } rows[] = {
                { "a day of half the GPUs",
                  GW_BOOKPOLICY_DEFAULT,
                  { .ngpus = 2, .host_gpus = 4, .duration = DAY },
                  GW_BOOKPOLICY_OK,
                  "" },
                { "a second longer than a day",
                  GW_BOOKPOLICY_DEFAULT,
                  { .ngpus = 1, .host_gpus = 4, .duration = DAY + SEC },
                  GW_BOOKPOLICY_DURATION,
                  "longer than booking_max_duration (1d)" },
                { "ten years of every GPU: the duration is said first",
                  GW_BOOKPOLICY_DEFAULT,
                  { .ngpus = 4, .host_gpus = 4, .duration = 3650 * DAY },
                  GW_BOOKPOLICY_DURATION,
                  "3650d" },
                { "3 of 4 GPUs",
                  GW_BOOKPOLICY_DEFAULT,
                  { .ngpus = 3, .host_gpus = 4, .duration = HOUR },
                  GW_BOOKPOLICY_GPUS,
                  "3 of the 4 GPUs is more than booking_max_gpus (50%)" },
                { "1 of 1 GPU is more than half",
                  GW_BOOKPOLICY_DEFAULT,
                  { .ngpus = 1, .host_gpus = 1, .duration = HOUR },
                  GW_BOOKPOLICY_GPUS,
                  "booking_max_gpus" },
                { "a count: 3 is fine at 3",
                  { .max_gpus = 3, .max_duration = DAY },
                  { .ngpus = 3, .host_gpus = 8, .duration = HOUR },
                  GW_BOOKPOLICY_OK,
                  "" },
                { "a count: 4 is more than 3",
                  { .max_gpus = 3, .max_duration = DAY },
                  { .ngpus = 4, .host_gpus = 8, .duration = HOUR },
                  GW_BOOKPOLICY_GPUS,
                  "4 GPUs is more than booking_max_gpus (3)" },
                { "a cluster: 8 of its 16 GPUs",
                  GW_BOOKPOLICY_DEFAULT,
                  { .ngpus = 8, .host_gpus = 16, .cluster = true, .duration = HOUR },
                  GW_BOOKPOLICY_OK,
                  "" },
                { "a cluster: 9 of its 16 GPUs",
                  GW_BOOKPOLICY_DEFAULT,
                  { .ngpus = 9, .host_gpus = 16, .cluster = true, .duration = HOUR },
                  GW_BOOKPOLICY_GPUS,
                  "9 of the cluster's 16 GPUs (as its nodes' agents report them) is more than booking_max_gpus (50%)" },
                { "a cluster whose GPUs no agent has reported",
                  GW_BOOKPOLICY_DEFAULT,
                  { .ngpus = 1, .host_gpus = 0, .cluster = true, .duration = HOUR },
                  GW_BOOKPOLICY_GPUS,
                  "no node's agent has reported them yet" },
                { "a cluster, a count: needs no total",
                  { .max_gpus = 3, .max_duration = DAY },
                  { .ngpus = 3, .host_gpus = 0, .cluster = true, .duration = HOUR },
                  GW_BOOKPOLICY_OK,
                  "" },
                { "delays two waiting jobs",
                  GW_BOOKPOLICY_DEFAULT,
                  { .ngpus = 1, .host_gpus = 4, .duration = HOUR, .delayed = 2, .delayed_first = 7 },
                  GW_BOOKPOLICY_DELAY,
                  "would delay 2 waiting jobs (job 7 first)" },
                { "not known whether it delays any",
                  GW_BOOKPOLICY_DEFAULT,
                  { .ngpus = 1, .host_gpus = 4, .duration = HOUR, .delayed = 1 },
                  GW_BOOKPOLICY_DELAY,
                  "could not be worked out" },
                { "may delay",
                  { .max_gpus = -1, .may_delay_waiting = true },
                  { .ngpus = 1, .host_gpus = 4, .duration = HOUR, .delayed = 2, .delayed_first = 7 },
                  GW_BOOKPOLICY_OK,
                  "" },
                { "no limits at all",
                  { .max_gpus = -1, .may_delay_waiting = true },
                  { .ngpus = 4, .host_gpus = 4, .duration = 3650 * DAY },
                  GW_BOOKPOLICY_OK,
                  "" },
                { "admins are not limited",
                  GW_BOOKPOLICY_DEFAULT,
                  { .admin = true, .ngpus = 4, .host_gpus = 4, .duration = 3650 * DAY, .delayed = 3 },
                  GW_BOOKPOLICY_OK,
                  "" },
        };
        (void) state;
        for (size_t i = 0; i < N_ELEMS(rows); i++) {
                char msg[GW_BOOKPOLICY_MSG_SIZE];
                int r = gw_bookpolicy_check(&rows[i].p, &rows[i].a, msg, sizeof msg);
                if (r != rows[i].want || !strstr(msg, rows[i].says))
                        fail_msg("%s: got %d \"%s\", want %d \"%s\"", rows[i].what, r, msg, rows[i].want, rows[i].says);
                if (r != GW_BOOKPOLICY_OK && strncmp(msg, "needs an admin's approval: ", 27))
                        fail_msg("%s: \"%s\" does not say it needs an admin", rows[i].what, msg);
        }
}

static void check_refuses_nonsense(void **state) {
        struct gw_bookpolicy p = GW_BOOKPOLICY_DEFAULT;
        struct gw_bookpolicy_ask a = { .ngpus = 0, .host_gpus = 4, .duration = HOUR };
        char msg[GW_BOOKPOLICY_MSG_SIZE];
        (void) state;
        assert_int_equal(gw_bookpolicy_check(&p, &a, msg, sizeof msg), -EINVAL);
        a = (struct gw_bookpolicy_ask){ .ngpus = 1, .host_gpus = 4, .duration = 0 };
        assert_int_equal(gw_bookpolicy_check(&p, &a, msg, sizeof msg), -EINVAL);
        assert_int_equal(gw_bookpolicy_check(NULL, &a, msg, sizeof msg), -EINVAL);
}

static void parse_gpus(void **state) {
        struct gw_bookpolicy p = GW_BOOKPOLICY_DEFAULT;
        (void) state;
        assert_int_equal(gw_bookpolicy_parse_gpus("75%", &p), 0);
        assert_true(p.max_gpus == 75 && p.max_gpus_percent);
        assert_int_equal(gw_bookpolicy_parse_gpus("2", &p), 0);
        assert_true(p.max_gpus == 2 && !p.max_gpus_percent);
        assert_int_equal(gw_bookpolicy_parse_gpus("unlimited", &p), 0);
        assert_true(p.max_gpus == -1);
        const char *bad[] = { "", "101%", "-1", "%", "half", "65", "2 %", "50%%" };
        for (size_t i = 0; i < N_ELEMS(bad); i++) {
                p = GW_BOOKPOLICY_DEFAULT;
                assert_int_equal(gw_bookpolicy_parse_gpus(bad[i], &p), -EINVAL);
                assert_true(p.max_gpus == 50 && p.max_gpus_percent); /* unchanged */
        }
}

struct host {
        struct gw_sched_gpu gpus[4];
        struct gw_cal_job run[4];
        struct gw_cal_pending pend[4];
        struct gw_calendar_input in;
};

/* Two GPUs, one running job until NOW + 2h on GPU 0; pending: job 11 (1 GPU, 1h) and job 12
 * (2 GPUs, 10h). */
static void host_init(struct host *h) {
        memset(h, 0, sizeof *h);
        for (int i = 0; i < 2; i++)
                h->gpus[i] = (struct gw_sched_gpu){ .index = i, .usable = true };
        h->run[0] = (struct gw_cal_job){ .id = 10, .gpu_mask = M(0), .start = NOW - HOUR, .end = NOW + 2 * HOUR };
        h->pend[0] = (struct gw_cal_pending){ .id = 11, .ngpus = 1, .time_limit = HOUR };
        h->pend[1] = (struct gw_cal_pending){ .id = 12, .ngpus = 2, .time_limit = 10 * HOUR };
        h->in = (struct gw_calendar_input){ .gpus = h->gpus,
                                            .n_gpus = 2,
                                            .running = h->run,
                                            .n_running = 1,
                                            .pending = h->pend,
                                            .n_pending = 2 };
}

static void delays(void **state) {
        struct host h;
        size_t n;
        int64_t first;
        (void) state;
        host_init(&h);
        /* GPU 1 from NOW + 30 min for an hour: job 11 (1 h on GPU 1 now) no longer fits
         * before it and runs after it, until NOW + 2.5h, which pushes job 12 (both GPUs) too. */
        struct gw_booking b = { .uid = 1000,
                                .ngpus = 1,
                                .start = NOW + HOUR / 2,
                                .end = NOW + HOUR + HOUR / 2,
                                .gpu_mask = M(1),
                                .state = GW_BOOKING_APPROVED };
        assert_int_equal(gw_bookpolicy_delays(&h.in, &b, NOW, &n, &first), 0);
        assert_int_equal(n, 2);
        assert_int_equal(first, 11);
        /* Both GPUs from NOW + 2h for a day: job 12 waits for its end. */
        b = (struct gw_booking){ .uid = 1000,
                                 .ngpus = 2,
                                 .start = NOW + 2 * HOUR,
                                 .end = NOW + 26 * HOUR,
                                 .gpu_mask = M(0) | M(1),
                                 .state = GW_BOOKING_APPROVED };
        assert_int_equal(gw_bookpolicy_delays(&h.in, &b, NOW, &n, &first), 0);
        assert_int_equal(n, 1);
        assert_int_equal(first, 12);
        /* After everything waiting is done (job 12: NOW + 2h to NOW + 12h): delays nobody. */
        b.start = NOW + 13 * HOUR;
        b.end = NOW + 14 * HOUR;
        assert_int_equal(gw_bookpolicy_delays(&h.in, &b, NOW, &n, &first), 0);
        assert_int_equal(n, 0);
        assert_int_equal(first, 0);
        /* Held jobs and jobs in bookings are not "waiting" for this. */
        h.pend[0].held = true;
        h.pend[1].booking_id = 5;
        b.start = NOW + HOUR / 2;
        assert_int_equal(gw_bookpolicy_delays(&h.in, &b, NOW, &n, &first), 0);
        assert_int_equal(n, 0);
        /* Nothing waiting. */
        h.in.n_pending = 0;
        assert_int_equal(gw_bookpolicy_delays(&h.in, &b, NOW, &n, &first), 0);
        assert_int_equal(n, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(check_table),
                cmocka_unit_test(check_refuses_nonsense),
                cmocka_unit_test(parse_gpus),
                cmocka_unit_test(delays),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
