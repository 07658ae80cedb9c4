/* Reads the dashboard needs beyond the CLI's: recent GPU history for the sparklines, and the
 * training curves of a job's results.csv. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/codec.h"
#include "api/jsonout.h"
#include "base/cleanup.h"
#include "base/parse.h"
#include "core/progress.h"
#include "daemon/base/userfile.h"
#include "daemon/http/web.h"
#include "daemon/life/queue.h"
#include "daemon/reclaim/reclaim_watch.h"
#include "daemon/training/training.h"

#define HISTORY_POINTS 300 /* per GPU: a sparkline needs no more */
#define RESULTS_READ_MAX (4u << 20)

/* Averages the points of src into at most max buckets of consecutive points. */
static json_t *history_points(const struct gw_point *pts, size_t n, size_t max) {
        json_t *arr = json_array();
        size_t step = (n + max - 1) / (max ? max : 1);
        if (step < 1)
                step = 1;
        for (size_t i = 0; i < n; i += step) {
                size_t k = i + step < n ? step : n - i;
                double util = 0, mem = 0;
                for (size_t m = i; m < i + k; m++) {
                        util += pts[m].util;
                        mem += (double) pts[m].mem;
                }
                json_array_append_new(arr, json_pack("[I,i,I]", (json_int_t) (pts[i + k - 1].t / GW_USEC_PER_SEC),
                                                     (int) lround(util / (double) k),
                                                     (json_int_t) llround(mem / (double) k)));
        }
        return arr;
}

void gw_on_gpu_history(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                       struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        long long minutes = 15;
        const char *qm = gw_http_query(req, "minutes");
        if (qm && gw_parse_int(qm, 1, 60, &minutes) < 0)
                return gw_reply_error(rep, 400, "minutes", "minutes: must be 1-60");
        gw_usec_t since = d->now_wall - minutes * 60 * GW_USEC_PER_SEC;
        json_t *gpus = json_array();
        for (unsigned i = 0; i < d->host.n_gpus; i++) {
                const struct gw_ring *r = &d->host.gpus[i].ring;
                struct gw_point *pts = gw_xmalloc((r->n ? r->n : 1) * sizeof *pts);
                size_t n = gw_ring_since(r, since, pts, r->n);
                json_array_append_new(gpus, json_pack("{s:i,s:I,s:o}", "index", (int) i, "mem_total",
                                                      (json_int_t) d->host.gpus[i].info.mem_total, "points",
                                                      history_points(pts, n, HISTORY_POINTS)));
                free(pts);
        }
        gw_reply_json(rep, 200,
                      json_pack("{s:I,s:f,s:o}", "minutes", (json_int_t) minutes, "interval",
                                (double) d->cfg->sample_interval / 1e6, "gpus", gpus));
}

/* The job's results.csv path: the one its idle watch found while it runs, else looked up
 * the same way.  Malloc'ed, or NULL. */
static char *results_path(struct gw_daemon *d, const struct gw_job *j) {
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, j->id);
        const char *chosen = dj ? gw_reclaim_results_path(d, dj) : NULL;
        if (chosen)
                return gw_xstrdup(chosen);
        if (!j->start_time || !j->cwd || !j->argv)
                return NULL;
        return gw_rwatch_find_results(j);
}

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *results_json(const struct gw_results *r) {
        json_t *epochs = json_array(), *series = json_object(), *loss = json_array();
        for (size_t row = 0; row < r->n_rows; row++)
                json_array_append_new(epochs, json_integer(r->epochs[row]));
        for (size_t col = 0; col < r->n_cols; col++) {
                if (col == r->epoch_col)
                        continue;
                json_t *v = json_array();
                for (size_t row = 0; row < r->n_rows; row++)
                        json_array_append_new(v, num_or_null(gw_results_value(r, row, col)));
                json_object_set_new(series, r->cols[col].name, v);
        }
        for (size_t k = 0; k < r->n_loss_cols; k++)
                json_array_append_new(loss, gw_json_text(r->cols[r->loss_cols[k]].name));
        return json_pack("{s:o,s:o,s:o,s:o,s:o}", "epochs", epochs, "series", series, "loss", loss, "map50",
                         r->map50_col >= 0 ? gw_json_text(r->cols[r->map50_col].name) : json_null(), "map50_95",
                         r->map50_95_col >= 0 ? gw_json_text(r->cols[r->map50_95_col].name) : json_null());
}

void gw_on_job_results(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                       struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        _cleanup_(gw_job_freep) struct gw_job *tmp = NULL;
        const struct gw_job *j = gw_job_or_reply(d, ctx->id, c, NULL, rep, &tmp);
        if (!j)
                return;
        _cleanup_free_ char *path = results_path(d, j);
        if (!path)
                return gw_reply_error(rep, 404, "id",
                                      "job %lld has no results.csv (only Ultralytics-style runs write one, "
                                      "after their first epoch)",
                                      (long long) j->id);
        /* Read as the daemon (root): only a regular file the job's user owns, never a link. */
        struct stat st;
        _cleanup_close_ int fd = gw_user_file_open(j, path, true, O_RDONLY, &st);
        if (fd < 0)
                return gw_reply_error(rep, 404, "id", "job %lld's results.csv cannot be read", (long long) j->id);
        if ((uint64_t) st.st_size > RESULTS_READ_MAX)
                return gw_reply_error(rep, 413, "id", "job %lld's results.csv is larger than %u MiB", (long long) j->id,
                                      RESULTS_READ_MAX >> 20);
        _cleanup_free_ char *text = gw_xmalloc((size_t) st.st_size + 1);
        ssize_t n = pread(fd, text, (size_t) st.st_size, 0);
        struct gw_results r;
        if (n < 0 || gw_results_parse(text, (size_t) n, &r) < 0)
                return gw_reply_error(rep, 404, "id", "job %lld's results.csv has no complete header yet",
                                      (long long) j->id);
        json_t *o = results_json(&r);
        gw_results_free(&r);
        json_object_set_new(o, "id", json_integer(j->id));
        json_object_set_new(o, "epoch_end_offsets", gw_training_epoch_offsets_json(d, j)); /* chart marks */
        /* Seven digits are what results.csv holds; %.17g would print 1.1798999999999999. */
        size_t len = 0;
        char *body = gw_json_compact(o, 7, &len);
        json_decref(o);
        if (!body)
                return gw_reply_error(rep, 500, NULL, "cannot encode the results");
        gw_http_reply_text(rep, 200, "application/json", body, len);
}
