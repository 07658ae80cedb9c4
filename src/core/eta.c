#include "core/eta.h"

#include <math.h>

/* Beyond this age an epoch's weight (0.8^64 ~ 6e-7) no longer changes the mean. */
#define MEAN_EPOCHS 64

static double secs(gw_usec_t d) { return (double) d / (double) GW_USEC_PER_SEC; }

/* The recency-weighted mean, a start weighing GW_ETA_STARTUP_WEIGHT of a normal epoch. */
static double weighted_mean(const struct gw_eta_epoch *e, size_t n) {
        size_t from = n > MEAN_EPOCHS ? n - MEAN_EPOCHS : 0;
        double sw = 0, s = 0, w = 1;
        for (size_t i = n; i-- > from; w *= GW_ETA_DECAY) {
                double wi = w * (e[i].startup ? GW_ETA_STARTUP_WEIGHT : 1.0);
                sw += wi;
                s += wi * secs(e[i].duration);
        }
        return sw > 0 ? s / sw : 0;
}

/* Sample standard deviation of the last GW_ETA_SIGMA_EPOCHS epochs without a start; their
 * number in *ret_m. */
static double sigma_of(const struct gw_eta_epoch *e, size_t n, size_t *ret_m) {
        double v[GW_ETA_SIGMA_EPOCHS];
        size_t m = 0;
        for (size_t i = n; i-- > 0 && m < GW_ETA_SIGMA_EPOCHS;)
                if (!e[i].startup)
                        v[m++] = secs(e[i].duration);
        *ret_m = m;
        if (m < 2)
                return 0;
        double mean = 0, ss = 0;
        for (size_t i = 0; i < m; i++)
                mean += v[i];
        mean /= (double) m;
        for (size_t i = 0; i < m; i++)
                ss += (v[i] - mean) * (v[i] - mean);
        return sqrt(ss / (double) (m - 1));
}

int gw_eta_estimate(const struct gw_eta_input *in, struct gw_eta *out) {
        if (!in || !out || (in->n_epochs && !in->epochs) || in->done < 0)
                return -EINVAL;
        for (size_t i = 0; i < in->n_epochs; i++)
                if (in->epochs[i].duration < 0)
                        return -EINVAL;
        if (in->n_epochs == 0)
                return -ENODATA;
        struct gw_eta e = { .done = in->done, .total = in->total > 0 ? in->total : 0, .n_timed = in->n_epochs };
        for (size_t i = 0; i < in->n_epochs; i++)
                e.n_startup += in->epochs[i].startup;
        e.sec_per_epoch = weighted_mean(in->epochs, in->n_epochs);
        size_t m;
        e.sigma_s = sigma_of(in->epochs, in->n_epochs, &m);
        if (e.total > 0) {
                e.has_end = true;
                e.remaining_epochs = e.total > e.done ? e.total - e.done : 0;
                double since = in->now > in->last_end ? secs(in->now - in->last_end) : 0;
                if (e.remaining_epochs > 0) {
                        double current = e.sec_per_epoch - since;
                        e.remaining_s =
                                (current > 0 ? current : 0) + e.sec_per_epoch * (double) (e.remaining_epochs - 1);
                }
                e.end = in->now + (gw_usec_t) llround(e.remaining_s * (double) GW_USEC_PER_SEC);
                double slack = 3 * e.sigma_s > GW_ETA_OVERDUE_SLACK * e.sec_per_epoch
                                       ? 3 * e.sigma_s
                                       : GW_ETA_OVERDUE_SLACK * e.sec_per_epoch;
                if (e.remaining_epochs > 0 && since > e.sec_per_epoch + slack) {
                        e.overdue_s = since - e.sec_per_epoch;
                        e.end = in->last_end + (gw_usec_t) llround(e.sec_per_epoch * (double) e.remaining_epochs *
                                                                   (double) GW_USEC_PER_SEC);
                }
                if (in->n_epochs >= 3 && m >= 2) {
                        double r = (double) e.remaining_epochs;
                        e.has_error = true;
                        e.error_s = sqrt(r) * e.sigma_s + r * e.sigma_s / sqrt((double) m);
                        if (e.error_s < GW_ETA_MIN_REL_ERROR * e.remaining_s)
                                e.error_s = GW_ETA_MIN_REL_ERROR * e.remaining_s;
                }
        }
        *out = e;
        return 0;
}
