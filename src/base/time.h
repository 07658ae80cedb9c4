/* One type for instants and durations: microseconds. */
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef int64_t gw_usec_t;

#define GW_USEC_PER_MSEC ((gw_usec_t) 1000)
#define GW_USEC_PER_SEC ((gw_usec_t) 1000000)
#define GW_USEC_INFINITY INT64_MAX

/* Wall clock (CLOCK_REALTIME) and monotonic clock, in microseconds.  The daemon reads
 * them through these pointers once per loop iteration so tests can swap them. */
extern gw_usec_t (*gw_now_wall)(void);
extern gw_usec_t (*gw_now_mono)(void);

gw_usec_t gw_clock_wall(void);
gw_usec_t gw_clock_mono(void);

/* Wall-clock instant t as local "HH:MM:SS" in buf (of n bytes), "?" when it has no local
 * time: for log lines that say when something happened or will. */
const char *gw_clock_text(gw_usec_t t, char *buf, size_t n);
