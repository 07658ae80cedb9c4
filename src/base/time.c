#include "base/time.h"

#include <stdio.h>
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

const char *gw_clock_text(gw_usec_t t, char *buf, size_t n) {
        time_t s = (time_t) (t / GW_USEC_PER_SEC);
        struct tm tm;
        if (!localtime_r(&s, &tm) || !strftime(buf, n, "%H:%M:%S", &tm))
                snprintf(buf, n, "?");
        return buf;
}
