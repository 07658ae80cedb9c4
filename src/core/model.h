/* Published models: the words a publication is asked for with (a model's name, the metric
 * --publish-if-better compares) and the choices made about one (the best epoch of a run, whether
 * it beats the latest version).  Pure; the daemon reads the run's files and writes the model
 * store (daemon/publish*.c), and the CLI checks the same words before it sends them. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "core/progress.h"

#define GW_MODEL_NAME_MAX 64 /* bytes of a model's name */
#define GW_MODEL_METRIC_MAX (GW_RESULTS_NAME_MAX - 1) /* results.csv keeps no longer column name */
#define GW_MODEL_VERSION_MAX 1000000 /* vN: N at most this */

/* A model's name, which is also its folder in the model store: 1-64 of [A-Za-z0-9._-], not
 * starting with '.' (no "..", no hidden folder).  0, or -EINVAL with why (naming the field
 * "publish"). */
int gw_model_name_check(const char *s, char *why, size_t n);
/* A results.csv column to compare versions by ("metrics/mAP50-95(B)"): 1-47 printable bytes
 * without spaces, commas or quotes.  0, or -EINVAL with why (naming "publish_if_better"). */
int gw_model_metric_check(const char *s, char *why, size_t n);

/* N of a version's folder "vN" (1..GW_MODEL_VERSION_MAX, no leading zero), or -1 for any
 * other name. */
long gw_model_version_of(const char *name);

/* The row best.pt holds: the first row of the highest fitness (Ultralytics saves best.pt when
 * fitness beats the best so far, so a tie keeps the earlier); the last row when no row has a
 * fitness (a task without mAP or accuracy columns); -1 without rows. */
long gw_model_best_row(const struct gw_results *r);

/* The column of r named metric, or -1. */
long gw_model_metric_col(const struct gw_results *r, const char *metric);

/* Whether a metric falls as the model gets better: a loss (a name with "loss" in it). */
bool gw_model_lower_is_better(const char *metric);

enum gw_model_verdict {
        GW_MODEL_FIRST, /* no version has the metric: published */
        GW_MODEL_BETTER, /* beats the latest version's value: published */
        GW_MODEL_NOT_BETTER, /* equal or worse: not published */
        GW_MODEL_NO_VALUE, /* the run has no value for it: not published */
        _GW_MODEL_VERDICT_MAX,
        _GW_MODEL_VERDICT_INVALID = -22,
};

/* --publish-if-better's decision: the run's value of metric (NAN: none) against the latest
 * version's (latest_known false: no version has one). */
enum gw_model_verdict gw_model_compare(const char *metric, double value, bool latest_known, double latest);
