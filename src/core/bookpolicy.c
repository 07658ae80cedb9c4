/* The host's booking policy (see bookpolicy.h). */
#include "core/bookpolicy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "core/predict.h"

#define WEEK ((gw_usec_t) 7 * 86400 * GW_USEC_PER_SEC)

/* More than max_gpus of the host's: a percentage compares without rounding (2 of 4 is 50%). */
static bool too_many_gpus(const struct gw_bookpolicy *p, int ngpus, unsigned host) {
        if (p->max_gpus < 0)
                return false;
        return p->max_gpus_percent ? (int64_t) ngpus * 100 > p->max_gpus * (int64_t) host : ngpus > p->max_gpus;
}

int gw_bookpolicy_check(const struct gw_bookpolicy *p, const struct gw_bookpolicy_ask *a, char *msg, size_t n) {
        char x[32], y[32];
        if (!p || !a || !msg || a->ngpus < 1 || a->duration <= 0)
                return -EINVAL;
        msg[0] = '\0';
        if (a->admin)
                return GW_BOOKPOLICY_OK;
        if (p->max_duration > 0 && a->duration > p->max_duration) {
                snprintf(msg, n, "needs an admin's approval: it lasts %s, longer than booking_max_duration (%s)",
                         gw_format_duration(a->duration, x, sizeof x),
                         gw_format_duration(p->max_duration, y, sizeof y));
                return GW_BOOKPOLICY_DURATION;
        }
        if (too_many_gpus(p, a->ngpus, a->host_gpus)) {
                if (p->max_gpus_percent && a->cluster && !a->host_gpus)
                        snprintf(msg, n,
                                 "needs an admin's approval: booking_max_gpus (%lld%%) is a share of the "
                                 "cluster's GPUs, and no node's agent has reported them yet",
                                 (long long) p->max_gpus);
                else if (p->max_gpus_percent && a->cluster)
                        snprintf(msg, n,
                                 "needs an admin's approval: %d of the cluster's %u GPUs (as its nodes' "
                                 "agents report them) is more than booking_max_gpus (%lld%%)",
                                 a->ngpus, a->host_gpus, (long long) p->max_gpus);
                else if (p->max_gpus_percent)
                        snprintf(msg, n,
                                 "needs an admin's approval: %d of the %u GPUs is more than "
                                 "booking_max_gpus (%lld%%)",
                                 a->ngpus, a->host_gpus, (long long) p->max_gpus);
                else
                        snprintf(msg, n, "needs an admin's approval: %d GPUs is more than booking_max_gpus (%lld)",
                                 a->ngpus, (long long) p->max_gpus);
                return GW_BOOKPOLICY_GPUS;
        }
        if (!p->may_delay_waiting && a->delayed > 0 && a->delayed_first <= 0) {
                snprintf(msg, n,
                         "needs an admin's approval: whether it would delay waiting jobs could not be "
                         "worked out, and booking_may_delay_waiting is false");
                return GW_BOOKPOLICY_DELAY;
        }
        if (!p->may_delay_waiting && a->delayed > 0) {
                snprintf(msg, n,
                         "needs an admin's approval: it would delay %zu waiting job%s (job %lld first) "
                         "and booking_may_delay_waiting is false",
                         a->delayed, a->delayed == 1 ? "" : "s", (long long) a->delayed_first);
                return GW_BOOKPOLICY_DELAY;
        }
        return GW_BOOKPOLICY_OK;
}

int gw_bookpolicy_delays(const struct gw_calendar_input *in, const struct gw_booking *b, gw_usec_t now, size_t *ret_n,
                         int64_t *ret_first) {
        if (!in || !b || !ret_n || !ret_first || b->end <= b->start)
                return -EINVAL;
        *ret_n = 0;
        *ret_first = 0;
        if (in->n_pending == 0)
                return 0;
        gw_usec_t horizon = (b->end > now ? b->end - now : 0) + WEEK;
        _cleanup_free_ struct gw_prediction *before = calloc(in->n_pending, sizeof *before);
        _cleanup_free_ struct gw_prediction *after = calloc(in->n_pending, sizeof *after);
        _cleanup_free_ struct gw_booking *books = calloc(in->n_bookings + 1, sizeof *books);
        if (!before || !after || !books)
                return -ENOMEM;
        if (in->n_bookings)
                memcpy(books, in->bookings, in->n_bookings * sizeof *books);
        books[in->n_bookings] = *b;
        books[in->n_bookings].state = GW_BOOKING_APPROVED;
        struct gw_calendar_input with = *in;
        with.bookings = books;
        with.n_bookings = in->n_bookings + 1;
        int r = gw_predict_starts(in, now, horizon, before);
        if (r >= 0)
                r = gw_predict_starts(&with, now, horizon, after);
        if (r < 0)
                return r;
        for (size_t i = 0; i < in->n_pending; i++) {
                const struct gw_cal_pending *j = &in->pending[i];
                if (j->held || j->booking_id || before[i].start == GW_USEC_INFINITY)
                        continue;
                if (after[i].start > before[i].start) {
                        if (!*ret_n)
                                *ret_first = j->id;
                        (*ret_n)++;
                }
        }
        return 0;
}

int gw_bookpolicy_parse_gpus(const char *v, struct gw_bookpolicy *p) {
        long long n;
        char num[32];
        size_t len = v ? strlen(v) : 0;
        if (!p || len == 0 || len >= sizeof num)
                return -EINVAL;
        if (!strcmp(v, "unlimited")) {
                p->max_gpus = -1;
                p->max_gpus_percent = false;
                return 0;
        }
        bool percent = v[len - 1] == '%';
        snprintf(num, sizeof num, "%.*s", (int) (len - percent), v);
        if (gw_parse_int(num, 0, percent ? 100 : 64, &n) < 0)
                return -EINVAL;
        p->max_gpus = n;
        p->max_gpus_percent = percent;
        return 0;
}
