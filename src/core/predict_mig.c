/* Predicted starts of slice jobs: the placement replayed forward (see predict_mig.h). */
#include "core/predict_mig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The replay's state: the slots with their holders now, and when each holder ends. */
struct mig_replay {
        struct gw_mig_slot *slots;
        gw_usec_t *ends; /* per slot: when its holder frees it; INFINITY: never (or free) */
        bool *placed; /* per pending job: started, or never will */
};

static gw_usec_t run_end(const struct gw_mig_predict_input *in, int64_t id, gw_usec_t now) {
        for (size_t i = 0; i < in->n_running; i++)
                if (in->running[i].id == id)
                        return in->running[i].end > now ? in->running[i].end : now;
        return GW_USEC_INFINITY; /* held by something the caller did not time */
}

static bool input_ok(const struct gw_mig_predict_input *in, gw_usec_t horizon, const struct gw_prediction *out) {
        if (!in || !out || horizon <= 0 || (in->n_slots && !in->slots) || (in->n_running && !in->running) ||
            (in->n_pending && !in->pending))
                return false;
        for (size_t i = 0; i < in->n_pending; i++) {
                const struct gw_mig_pending *p = &in->pending[i];
                if (p->time_limit <= 0 || p->runtime < 0 || p->after_end < 0 || p->ask.count < 1 ||
                    p->ask.count > GW_MIG_COUNT_MAX || !gw_mig_profile_valid(p->ask.profile))
                        return false;
        }
        return true;
}

/* Frees the slots whose holder ends at or before t. */
static void free_ended(struct mig_replay *r, size_t n_slots, gw_usec_t t) {
        for (size_t k = 0; k < n_slots; k++)
                if (r->slots[k].job_id != 0 && r->ends[k] <= t) {
                        r->slots[k].job_id = 0;
                        r->ends[k] = GW_USEC_INFINITY;
                }
}

/* The earliest start known of p: its backoff's end or the end of the job it follows. */
static gw_usec_t earliest(const struct gw_mig_pending *p) {
        return p->after_end > p->not_before ? p->after_end : p->not_before;
}

/* The run time the replay gives a started job. */
static gw_usec_t run_for(const struct gw_mig_pending *p, bool limits_only) {
        if (limits_only || p->runtime <= 0 || p->runtime > p->time_limit)
                return p->time_limit;
        return p->runtime;
}

/* Starts, at t, each waiting job in queue order that fits now. */
static void place_at(const struct gw_mig_predict_input *in, struct mig_replay *r, gw_usec_t t, bool limits_only,
                     struct gw_prediction *out) {
        size_t pick[GW_MIG_COUNT_MAX];
        for (size_t i = 0; i < in->n_pending; i++) {
                const struct gw_mig_pending *p = &in->pending[i];
                if (r->placed[i] || earliest(p) > t)
                        continue;
                int rc = gw_mig_place(r->slots, in->n_slots, &p->ask, pick);
                if (rc == -ENOENT) { /* no GPU in service has the profile: nothing frees one */
                        r->placed[i] = true;
                        continue;
                }
                if (rc < 0)
                        continue;
                gw_usec_t end = t + run_for(p, limits_only);
                uint64_t mask = 0;
                for (int k = 0; k < p->ask.count; k++) {
                        r->slots[pick[k]].job_id = p->id;
                        r->ends[pick[k]] = end;
                        if (r->slots[pick[k]].gpu < 64)
                                mask |= UINT64_C(1) << r->slots[pick[k]].gpu;
                }
                r->placed[i] = true;
                out[i] = (struct gw_prediction){ .id = p->id, .start = t, .end = end, .gpu_mask = mask };
        }
}

/* The next instant after t at which something can change: a holder's end or a waiting job's
 * earliest start; INFINITY: none. */
static gw_usec_t next_instant(const struct gw_mig_predict_input *in, const struct mig_replay *r, gw_usec_t t) {
        gw_usec_t next = GW_USEC_INFINITY;
        for (size_t k = 0; k < in->n_slots; k++)
                if (r->slots[k].job_id != 0 && r->ends[k] > t && r->ends[k] < next)
                        next = r->ends[k];
        for (size_t i = 0; i < in->n_pending; i++)
                if (!r->placed[i] && earliest(&in->pending[i]) > t && earliest(&in->pending[i]) < next)
                        next = earliest(&in->pending[i]);
        return next;
}

static bool all_placed(const struct mig_replay *r, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!r->placed[i])
                        return false;
        return true;
}

int gw_predict_mig_starts(const struct gw_mig_predict_input *in, gw_usec_t now, gw_usec_t horizon, bool limits_only,
                          struct gw_prediction *out) {
        if (!input_ok(in, horizon, out))
                return -EINVAL;
        struct mig_replay r = { .slots = calloc(in->n_slots + 1, sizeof *r.slots),
                                .ends = calloc(in->n_slots + 1, sizeof *r.ends),
                                .placed = calloc(in->n_pending + 1, sizeof *r.placed) };
        int rc = r.slots && r.ends && r.placed ? 0 : -ENOMEM;
        gw_usec_t stop = now + horizon < now ? GW_USEC_INFINITY : now + horizon;

        for (size_t k = 0; rc == 0 && k < in->n_slots; k++) {
                r.slots[k] = in->slots[k];
                r.ends[k] = r.slots[k].job_id ? run_end(in, r.slots[k].job_id, now) : GW_USEC_INFINITY;
        }
        for (size_t i = 0; rc == 0 && i < in->n_pending; i++) {
                out[i] = (struct gw_prediction){ .id = in->pending[i].id,
                                                 .start = GW_USEC_INFINITY,
                                                 .end = GW_USEC_INFINITY };
                r.placed[i] = in->pending[i].held;
        }
        /* Each instant starts a job, frees a slot for good or ends a job's wait, so the loop
         * is bounded by the jobs and slots; the horizon ends it sooner. */
        for (gw_usec_t t = now; rc == 0 && t < stop && !all_placed(&r, in->n_pending); t = next_instant(in, &r, t)) {
                free_ended(&r, in->n_slots, t);
                place_at(in, &r, t, limits_only, out);
        }
        free(r.slots);
        free(r.ends);
        free(r.placed);
        return rc;
}
