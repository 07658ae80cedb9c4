/* Published models' words and choices (see model.h). */
#include "core/model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static bool name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == '-';
}

int gw_model_name_check(const char *s, char *why, size_t n) {
        size_t len = s ? strlen(s) : 0;
        if (!len || len > GW_MODEL_NAME_MAX) {
                snprintf(why, n, "publish: a model's name has 1-%d characters", GW_MODEL_NAME_MAX);
                return -EINVAL;
        }
        for (size_t i = 0; i < len; i++)
                if (!name_char(s[i])) {
                        snprintf(why, n, "publish: '%.64s' may hold only letters, digits, '.', '_' and '-'", s);
                        return -EINVAL;
                }
        /* The name is a folder of the store: no ".", "..", nor a hidden one (the temporary
         * folders of copies in progress start with '.'). */
        if (s[0] == '.') {
                snprintf(why, n, "publish: '%.64s' may not start with '.'", s);
                return -EINVAL;
        }
        return 0;
}

int gw_model_metric_check(const char *s, char *why, size_t n) {
        size_t len = s ? strlen(s) : 0;
        if (!len || len > GW_MODEL_METRIC_MAX) {
                snprintf(why, n,
                         "publish_if_better: a results.csv column of 1-%d characters, such as "
                         "metrics/mAP50-95(B)",
                         GW_MODEL_METRIC_MAX);
                return -EINVAL;
        }
        for (size_t i = 0; i < len; i++)
                if (s[i] <= ' ' || s[i] > '~' || s[i] == ',' || s[i] == '"' || s[i] == '\'') {
                        snprintf(why, n, "publish_if_better: '%.48s' is not a results.csv column name", s);
                        return -EINVAL;
                }
        return 0;
}

long gw_model_version_of(const char *name) {
        if (!name || name[0] != 'v' || name[1] < '1' || name[1] > '9')
                return -1;
        long v = 0;
        for (const char *p = name + 1; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -1;
                v = v * 10 + (*p - '0');
                if (v > GW_MODEL_VERSION_MAX)
                        return -1;
        }
        return v;
}

long gw_model_best_row(const struct gw_results *r) {
        if (!r || !r->n_rows)
                return -1;
        long best = -1;
        double best_fit = NAN;
        for (size_t i = 0; i < r->n_rows; i++) {
                double f = gw_results_fitness(r, i);
                if (!isnan(f) && (best < 0 || f > best_fit)) {
                        best = (long) i;
                        best_fit = f;
                }
        }
        return best >= 0 ? best : (long) r->n_rows - 1;
}

long gw_model_metric_col(const struct gw_results *r, const char *metric) {
        for (size_t i = 0; r && metric && i < r->n_cols; i++)
                if (!strcmp(r->cols[i].name, metric))
                        return (long) i;
        return -1;
}

bool gw_model_lower_is_better(const char *metric) { return metric && strstr(metric, "loss"); }

enum gw_model_verdict gw_model_compare(const char *metric, double value, bool latest_known, double latest) {
        if (isnan(value))
                return GW_MODEL_NO_VALUE;
        if (!latest_known || isnan(latest))
                return GW_MODEL_FIRST;
        bool better = gw_model_lower_is_better(metric) ? value < latest : value > latest;
        return better ? GW_MODEL_BETTER : GW_MODEL_NOT_BETTER;
}
