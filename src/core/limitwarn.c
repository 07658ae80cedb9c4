/* The time-limit warning's arithmetic: the rules are in limitwarn.h. */
#include "core/limitwarn.h"

gw_usec_t gw_limit_warn_before(const struct gw_limit_warn *w) {
        gw_usec_t span = w->end - w->start;
        if (span <= 0)
                return 0;
        if (w->signal) {
                gw_usec_t before = w->before ? w->before : w->notice > 0 ? w->notice : GW_LIMIT_SIGNAL_BEFORE_DEFAULT;
                /* Halfway, not at the start: a span of 1 µs has no halfway and gets none. */
                return before < span ? before : span / 2;
        }
        return w->notice > 0 && w->notice < span && !w->by_booking ? w->notice : 0;
}

gw_usec_t gw_limit_warn_at(const struct gw_limit_warn *w) {
        gw_usec_t before = gw_limit_warn_before(w);
        return before > 0 ? w->end - before : GW_USEC_INFINITY;
}
