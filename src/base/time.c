#include "base/time.h"

#include <time.h>

static gw_usec_t clock_usec(clockid_t id) {
        struct timespec ts;
        (void) clock_gettime(id, &ts);
        return (gw_usec_t) ts.tv_sec * GW_USEC_PER_SEC + ts.tv_nsec / 1000;
}

gw_usec_t gw_clock_wall(void) { return clock_usec(CLOCK_REALTIME); }
gw_usec_t gw_clock_mono(void) { return clock_usec(CLOCK_MONOTONIC); }

gw_usec_t (*gw_now_wall)(void) = gw_clock_wall;
gw_usec_t (*gw_now_mono)(void) = gw_clock_mono;
