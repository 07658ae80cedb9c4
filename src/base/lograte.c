#include "base/lograte.h"

bool gw_lograte_event(struct gw_lograte *r, gw_usec_t period, gw_usec_t now, uint64_t *ret_quiet) {
        /* A clock read before since (it cannot step back, but a caller may hold an old now)
         * counts as within the period. */
        if (r->started && now - r->since < period) {
                r->quiet++;
                return false;
        }
        *ret_quiet = r->quiet;
        *r = (struct gw_lograte){ .since = now, .started = true };
        return true;
}

bool gw_lograte_take(struct gw_lograte *r, gw_usec_t now, uint64_t *ret_quiet, gw_usec_t *ret_span) {
        if (!r->started || !r->quiet)
                return false;
        *ret_quiet = r->quiet;
        *ret_span = now > r->since ? now - r->since : 0;
        r->since = now;
        r->quiet = 0;
        return true;
}

bool gw_lograte_flush(struct gw_lograte *r, gw_usec_t period, gw_usec_t now, uint64_t *ret_quiet, gw_usec_t *ret_span) {
        if (now < gw_lograte_due(r, period))
                return false;
        return gw_lograte_take(r, now, ret_quiet, ret_span);
}

gw_usec_t gw_lograte_due(const struct gw_lograte *r, gw_usec_t period) {
        if (!r->started || !r->quiet)
                return GW_USEC_INFINITY;
        return r->since > GW_USEC_INFINITY - period ? GW_USEC_INFINITY : r->since + period;
}
