/* Which bookings wait for an admin: the host's booking policy.  A user's booking that is
 * longer than max_duration, asks more GPUs than max_gpus, or would delay jobs already
 * waiting (unless may_delay_waiting) is stored PENDING_APPROVAL with the reason, for an admin
 * to approve or deny; admins are not limited.  This sits beside the per-user quotas
 * (core/quota.h: max_booking_hours, max_booking_gpus), which may be stricter.  Pure. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/calendar.h"

#define GW_BOOKPOLICY_MSG_SIZE 256

struct gw_bookpolicy {
        gw_usec_t max_duration; /* longer needs an admin; 0 = no limit */
        int64_t max_gpus; /* more needs an admin; -1 = no limit */
        bool max_gpus_percent; /* max_gpus is a percentage of the host's GPUs */
        bool may_delay_waiting; /* false: delaying a waiting job needs an admin */
};

/* The defaults: a day, half the GPUs, no delaying. */
#define GW_BOOKPOLICY_DEFAULT                                             \
        ((struct gw_bookpolicy){ .max_duration = 86400 * GW_USEC_PER_SEC, \
                                 .max_gpus = 50,                          \
                                 .max_gpus_percent = true,                \
                                 .may_delay_waiting = false })

struct gw_bookpolicy_ask {
        bool admin;
        int ngpus;
        unsigned host_gpus; /* the GPUs a percentage is of: this host's, or a cluster's */
        bool cluster; /* host_gpus are a cluster's nodes' (0: none reported yet) */
        gw_usec_t duration;
        size_t delayed; /* waiting jobs it would delay (gw_bookpolicy_delays) */
        int64_t delayed_first; /* the first of them in queue order; 0 with delayed > 0:
                                    * not known whether it delays any (counts as delaying) */
};

enum gw_bookpolicy_rule {
        GW_BOOKPOLICY_OK, /* stored APPROVED */
        GW_BOOKPOLICY_DURATION, /* the others: stored PENDING_APPROVAL, msg says why */
        GW_BOOKPOLICY_GPUS,
        GW_BOOKPOLICY_DELAY,
        _GW_BOOKPOLICY_RULE_MAX,
        _GW_BOOKPOLICY_RULE_INVALID = -EINVAL,
};

/* The first rule the booking breaks, in the order above, with a sentence for the user in
 * msg ("" for OK); -EINVAL for NULL arguments, ngpus < 1 or duration <= 0. */
int gw_bookpolicy_check(const struct gw_bookpolicy *p, const struct gw_bookpolicy_ask *a, char *msg, size_t n);

/* How many of in's waiting jobs (not held, outside bookings) booking b would delay: their
 * predicted start (core/predict.h) with b added as APPROVED is later than without it, or
 * gone.  Predictions look up to b's end + a week past now.  0 or -errno (-ENOMEM,
 * -EINVAL as gw_predict_starts); *ret_first the first such job's id, 0 for none. */
int gw_bookpolicy_delays(const struct gw_calendar_input *in, const struct gw_booking *b, gw_usec_t now, size_t *ret_n,
                         int64_t *ret_first);

/* "50%" or "3" (GPUs) or "unlimited": into p->max_gpus; 0 or -EINVAL (a percentage over 100). */
int gw_bookpolicy_parse_gpus(const char *v, struct gw_bookpolicy *p);
