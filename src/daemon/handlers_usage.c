/* GET /api/v1/usage: GPU-hours, utilisation and outcomes per user over the last days
 * (core/accounting.h does the sums). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "base/parse.h"
#include "core/accounting.h"
#include "daemon/handlers.h"

#define USAGE_DAYS_MAX 90
#define USAGE_JOBS_MAX 1000000u /* a bound, not a page: the report sums them all */

struct usage_ctx {
        struct gw_daemon *d;
        struct gw_acct acct;
};

/* The job's GPUs' mean utilisation from its telemetry (live or stored); < 0 unmeasured. */
static double job_util(struct gw_daemon *d, const struct gw_job *j) {
        json_t *tel = gw_observe_job_json(d, j);
        const json_t *gpus = json_object_get(tel, "gpus");
        double sum = 0;
        size_t n = 0, i;
        const json_t *g;
        json_array_foreach(gpus, i, g) {
                const json_t *u = json_object_get(g, "util_mean");
                if (json_is_number(u)) {
                        sum += json_number_value(u);
                        n++;
                }
        }
        json_t *samples = json_object_get(tel, "samples");
        bool measured = n > 0 && (!json_is_integer(samples) || json_integer_value(samples) > 0);
        json_decref(tel);
        return measured ? sum / (double) n : -1;
}

static void add_job(struct usage_ctx *u, const struct gw_job *j) {
        struct gw_acct_job a = { .uid = j->uid, .user = j->user, .state = j->state, .ngpus = (unsigned) j->ngpus,
                                 .start = j->start_time, .end = gw_job_state_is_final(j->state) ? j->end_time : 0,
                                 .util_mean = j->start_time ? job_util(u->d, j) : -1 };
        gw_acct_add(&u->acct, &a);
}

static int add_stored(struct gw_job *j, void *userdata) {
        add_job(userdata, j);
        gw_job_free(j);
        return 0;
}

static json_t *user_json(const struct gw_acct_user *u) {
        json_t *states = json_object();
        for (int s = 0; s < _GW_JOB_STATE_MAX; s++)
                if (u->by_state[s])
                        json_object_set_new(states, gw_job_state_name((enum gw_job_state) s), json_integer(u->by_state[s]));
        double util = gw_acct_util(u);
        return json_pack("{s:o,s:I,s:i,s:f,s:o,s:f,s:o}", "user", gw_json_text(u->user), "uid", (json_int_t) u->uid,
                         "jobs", (int) u->jobs, "gpu_hours", u->gpu_hours, "util_mean",
                         util >= 0 ? json_real(round(util * 10) / 10) : json_null(), "reclaimed_gpu_hours",
                         u->reclaimed_gpu_hours, "states", states);
}

void on_usage(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx, struct gw_http_reply *rep,
              const struct caller *c) {
        (void) ctx;
        (void) c;
        struct gw_daemon *d = the_daemon(ud);
        long long days = 7;
        const char *q = gw_http_query(req, "days");
        if (q && gw_parse_int(q, 1, USAGE_DAYS_MAX, &days) < 0)
                return reply_error(rep, 400, "days", "days must be a whole number from 1 to %d", USAGE_DAYS_MAX);
        gw_usec_t now = gw_now_wall();
        struct usage_ctx u = { .d = d, .acct = { .since = now - days * 24 * 3600 * GW_USEC_PER_SEC, .until = now } };
        for (size_t i = 0; i < d->n_running; i++)
                add_job(&u, d->running[i]->job);
        unsigned finals = 0;
        for (int s = 0; s < _GW_JOB_STATE_MAX; s++)
                finals |= gw_job_state_is_final((enum gw_job_state) s) ? 1u << s : 0;
        struct gw_store_filter f = { .state_mask = finals, .ended_since = u.acct.since, .limit = USAGE_JOBS_MAX };
        if (gw_store_jobs_list(d->store, &f, add_stored, &u) < 0) {
                gw_acct_free(&u.acct);
                return reply_error(rep, 503, NULL, "cannot read the job history: %s", gw_store_errmsg(d->store));
        }
        gw_acct_sort(&u.acct);
        json_t *users = json_array();
        for (size_t i = 0; i < u.acct.n; i++)
                json_array_append_new(users, user_json(&u.acct.users[i]));
        gw_acct_free(&u.acct);
        reply_json(rep, 200, json_pack("{s:i,s:f,s:f,s:o}", "days", (int) days, "since", (double) u.acct.since / 1e6,
                                       "until", (double) now / 1e6, "users", users));
}
