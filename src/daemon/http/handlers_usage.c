/* GET /api/v1/usage: GPU-hours, utilisation and outcomes per user over the last days
 * (core/accounting.h does the sums). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/codec_share.h"
#include "base/parse.h"
#include "core/accounting.h"
#include "daemon/http/handlers.h"
#include "daemon/base/jobclock.h"
#include "daemon/observe/observe.h"
#include "store/usage.h"

#define USAGE_DAYS_MAX 90

struct usage_ctx {
        struct gw_daemon *d;
        struct gw_acct acct;
};

/* The mean of the GPUs' util_mean in a telemetry summary ({"gpus": [{"util_mean": ...}],
 * "samples": N}); < 0 when nothing was sampled. */
static double telemetry_util(const json_t *tel) {
        double sum = 0;
        size_t n = 0, i;
        const json_t *g;
        json_array_foreach (json_object_get(tel, "gpus"), i, g) {
                const json_t *u = json_object_get(g, "util_mean");
                if (json_is_number(u)) {
                        sum += json_number_value(u);
                        n++;
                }
        }
        const json_t *samples = json_object_get(tel, "samples");
        return n > 0 && (!json_is_integer(samples) || json_integer_value(samples) > 0) ? sum / (double) n : -1;
}

/* A running job is charged for the time it has run on the monotonic clock (jobclock.c), placed
 * just before until: a step of the wall clock since its start charges nothing. */
static void add_running(struct usage_ctx *u, const struct gw_djob *dj, gw_usec_t mono) {
        const struct gw_job *j = dj->job;
        json_t *tel = gw_observe_job_json(u->d, j);
        gw_usec_t start = u->acct.until - gw_job_ran(dj, mono);
        struct gw_acct_job a = { .uid = j->uid,
                                 .user = j->user,
                                 .state = j->state,
                                 .ngpus = (unsigned) j->ngpus,
                                 .start = start > 0 ? start : 1,
                                 .end = 0,
                                 .util_mean = telemetry_util(tel),
                                 .share = j->mig_profile ? j->mig_share : 0 };
        json_decref(tel);
        gw_acct_add(&u->acct, &a);
}

static void add_ended(const struct gw_store_usage_row *r, void *userdata) {
        struct usage_ctx *u = userdata;
        json_t *tel = r->telemetry ? json_loads(r->telemetry, 0, NULL) : NULL;
        struct gw_acct_job a = { .uid = r->uid,
                                 .user = r->user,
                                 .state = (enum gw_job_state) r->state,
                                 .ngpus = r->ngpus > 0 ? (unsigned) r->ngpus : 0,
                                 .start = r->start,
                                 .end = r->end,
                                 .util_mean = telemetry_util(tel),
                                 .share = r->mig_share };
        json_decref(tel);
        gw_acct_add(&u->acct, &a);
}

void gw_on_usage(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx, struct gw_http_reply *rep,
                 const struct gw_caller *c) {
        (void) ctx;
        (void) c;
        struct gw_daemon *d = gw_the_daemon(ud);
        long long days = 7;
        const char *q = gw_http_query(req, "days");
        if (q && gw_parse_int(q, 1, USAGE_DAYS_MAX, &days) < 0)
                return gw_reply_error(rep, 400, "days", "days must be a whole number from 1 to %d", USAGE_DAYS_MAX);
        gw_usec_t now = d->now_wall;
        struct usage_ctx u = { .d = d, .acct = { .since = now - days * 24 * 3600 * GW_USEC_PER_SEC, .until = now } };
        gw_usec_t mono = d->now;
        for (size_t i = 0; i < d->jobs.n_running; i++)
                add_running(&u, d->jobs.running[i], mono);
        if (gw_store_usage_rows(d->store, u.acct.since, add_ended, &u) < 0) {
                gw_acct_free(&u.acct);
                return gw_reply_error(rep, 503, NULL, "cannot read the job history: %s", gw_store_errmsg(d->store));
        }
        gw_acct_sort(&u.acct);
        json_t *users = json_array();
        for (size_t i = 0; i < u.acct.n; i++)
                json_array_append_new(users, gw_codec_usage_user(&u.acct.users[i]));
        gw_acct_free(&u.acct);
        gw_reply_json(rep, 200,
                      json_pack("{s:i,s:f,s:f,s:o}", "days", (int) days, "since", (double) u.acct.since / 1e6, "until",
                                (double) now / 1e6, "users", users));
}
