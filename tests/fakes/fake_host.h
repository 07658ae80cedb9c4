/* A random host as the booking calendar and the predicted starts see it (struct
 * gw_calendar_input): GPUs, running jobs, bookings and pending jobs, from a seed.  One
 * generator for the randomized replay test (tests/unit/test_predict_replay.c: many small
 * hosts with every odd input) and the schedule benchmark (bench/schedule.c: one busy host as
 * the daemon would hold it); a shape says which.  Not in any shipped library. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/calendar.h"

/* xorshift64*: the same hosts from the same seed on every machine.  The state must not be 0. */
struct fake_rng {
        uint64_t s;
};

uint64_t fake_rnd(struct fake_rng *r);
int64_t fake_rnd_in(struct fake_rng *r, int64_t lo, int64_t hi); /* lo..hi, both included */
bool fake_chance(struct fake_rng *r, int percent);

/* lo..hi, both included: a count, or a number of steps from now. */
struct fake_range {
        int64_t lo, hi;
};

struct fake_host_shape {
        gw_usec_t now, step; /* instants fall on now + k * step, k in the ranges below */
        int offgrid_pct, offgrid_limit_pct; /* instants and time limits a second off the grid */

        struct fake_range gpus;
        int scatter_pct; /* hosts with indices anywhere in 0..63 (63 often), not 0..n-1 */
        int usable_pct;
        int stray_pct; /* GPUs held by a process of no job in the input */

        struct fake_range running, running_gpus, running_end, running_eta;
        int eta_pct;
        bool running_apart; /* each on idle usable GPUs of its own (as the daemon
                                          * starts them); else any GPUs, shared or drained */

        struct fake_range bookings, booking_gpus, booking_start, booking_len;
        bool bookings_placed; /* placed with gw_calendar_place() as users would book;
                                          * else anything: shared or no GPUs, repeated ids, any
                                          * state, ends before starts */
        int unapproved_pct; /* placed bookings awaiting approval */

        struct fake_range pending, pending_gpus, limit;
        int booked_pct; /* in a booking (an id from -1 to n + 1: some are gone) */
        int held_pct;
        int backoff_pct; /* with a not_before ... */
        struct fake_range backoff; /* ... this many steps from now */
        int runtime_pct; /* an expected run time of 1..10 half steps */
        int after_pct; /* after a running, pending or ended job, or itself */
        int mem_pct; /* asking 1..40 GiB per GPU */
};

struct fake_host {
        struct gw_sched_gpu *gpus;
        struct gw_booking *bookings;
        struct gw_cal_job *running;
        struct gw_cal_pending *pending;
        struct gw_calendar_input in; /* points into the arrays above */
        uint64_t present; /* the GPUs' indices */
};

/* Fills *h with a host of this shape, drawing from rng.  Returns 0, -ENOMEM, or -ENOSPC when
 * a placed booking fits nowhere.  Free it with fake_host_free() either way. */
int fake_host_make(struct fake_host *h, const struct fake_host_shape *s, struct fake_rng *rng);
void fake_host_free(struct fake_host *h);
