/* Jobs on MIG slices: the slices as placement sees them, and the part of a scheduling pass
 * that gives them out (migslots.h). */
#include "daemon/life/migslots.h"
#include "daemon/life/jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

/* Whether the comma-separated list names uuid. */
static bool list_has(const char *list, const char *uuid) {
        size_t len = strlen(uuid);
        for (const char *p = list; p && *p;) {
                size_t l = strcspn(p, ",");
                if (l == len && !strncmp(p, uuid, l))
                        return true;
                p += l + (p[l] == ',');
        }
        return false;
}

int64_t gw_mig_slice_job(const struct gw_daemon *d, const char *uuid) {
        if (!uuid || !*uuid)
                return 0;
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                const struct gw_job *j = d->jobs.running[i]->job;
                if (j->mig_slices && list_has(j->mig_slices, uuid))
                        return j->id;
        }
        return 0;
}

void gw_mig_job_use(const struct gw_daemon *d, const struct gw_job *j, unsigned gi, struct gw_mig_use *ret) {
        *ret = (struct gw_mig_use){ .has_mem = true, .has_activity = true };
        unsigned weight = 0, weighted = 0;
        const struct gw_dgpu *g = gi < d->host.n_gpus ? &d->host.gpus[gi] : NULL;
        if (!g || !g->mig || !j->mig_slices)
                return;
        for (size_t k = 0; k < g->mig->n && k < GW_GPU_MIG_MAX; k++) {
                const struct gw_gpu_mig *m = &g->mig->dev[k];
                if (!list_has(j->mig_slices, m->uuid))
                        continue;
                if (ret->n++ == 0) {
                        ret->uuid = m->uuid;
                        ret->profile = m->profile;
                }
                ret->has_mem &= m->has_mem;
                ret->mem_used += m->has_mem ? m->mem_used : 0;
                ret->mem_total += m->has_mem ? m->mem_total : 0;
                /* A bigger slice's activity is more of the job's work; a size not known
                 * counts as one slice. */
                unsigned w = m->slices ? m->slices : 1;
                ret->has_activity &= m->activity >= 0 && m->activity <= 100;
                weight += w;
                weighted += m->activity > 0 ? w * (unsigned) m->activity : 0;
        }
        ret->has_mem &= ret->n > 0;
        ret->has_activity &= ret->n > 0;
        if (ret->has_activity)
                ret->activity = (weighted + weight / 2) / weight;
}

static bool in_service(const struct gw_dgpu *g) {
        return !g->drained && (!g->sampled || g->sample.health == GW_GPU_OK);
}

/* Every slice of the GPUs in MIG mode now, into a malloc'ed array (NULL when none); strings
 * borrowed from d's layouts, valid until the next sample. */
static size_t slots_of(const struct gw_daemon *d, struct gw_mig_slot **ret) {
        size_t n = 0;
        for (unsigned i = 0; i < d->host.n_gpus; i++)
                n += d->host.gpus[i].mig ? d->host.gpus[i].mig->n : 0;
        *ret = n ? gw_xcalloc(n, sizeof **ret) : NULL;
        size_t k = 0;
        for (unsigned i = 0; i < d->host.n_gpus && i < GW_SCHED_MAX_GPUS; i++) {
                const struct gw_dgpu *g = &d->host.gpus[i];
                for (size_t m = 0; g->mig && m < g->mig->n && m < GW_GPU_MIG_MAX; m++) {
                        const struct gw_gpu_mig *s = &g->mig->dev[m];
                        (*ret)[k++] = (struct gw_mig_slot){
                                .gpu = (int) i,
                                .uuid = s->uuid,
                                .profile = s->profile,
                                .slices = s->slices,
                                .max_slices = g->mig->max_slices,
                                .job_id = gw_mig_slice_job(d, s->uuid),
                                .usable = in_service(g),
                        };
                }
        }
        return k;
}

size_t gw_mig_slots(const struct gw_daemon *d, struct gw_mig_slot **ret) { return slots_of(d, ret); }

bool gw_mig_any_free(const struct gw_daemon *d) {
        _cleanup_free_ struct gw_mig_slot *slots = NULL;
        size_t n = slots_of(d, &slots);
        for (size_t i = 0; i < n; i++)
                if (slots[i].usable && slots[i].job_id == 0)
                        return true;
        return false;
}

void gw_mig_set_aside(struct gw_daemon *d, struct gw_sched_job *pending, size_t n, bool *on_slices) {
        for (size_t i = 0; i < n; i++) {
                struct gw_job *j = d->jobs.queue[i]->job;
                const struct gw_sched_job *p = &pending[i];
                on_slices[i] = false;
                if (!j->mig_profile)
                        continue;
                gw_job_text_set(&j->mig_wait, NULL);
                /* A booking's window (none_allowed, allowed) holds whole GPUs: not a slice's. */
                if (p->held || p->backoff || p->blocked != GW_REASON_NONE || p->dep != GW_DEP_SATISFIED)
                        continue;
                pending[i].blocked = GW_REASON_RESOURCES;
                on_slices[i] = true;
        }
}

/* The UUIDs of the picked slices, comma-separated (malloc'ed), and the GPUs they are on. */
static char *uuids_of(const struct gw_mig_slot *slots, const size_t *pick, int n, uint64_t *ret_mask) {
        size_t len = 1;
        for (int i = 0; i < n; i++)
                len += strlen(slots[pick[i]].uuid) + 1;
        char *s = gw_xmalloc(len), *p = s;
        uint64_t mask = 0;
        for (int i = 0; i < n; i++) {
                p += snprintf(p, len - (size_t) (p - s), "%s%s", i ? "," : "", slots[pick[i]].uuid);
                mask |= UINT64_C(1) << slots[pick[i]].gpu;
        }
        *ret_mask = mask;
        return s;
}

size_t gw_mig_plan(struct gw_daemon *d, const bool *on_slices, const size_t *order, size_t n,
                   enum gw_job_reason *reasons, struct gw_mig_start *out) {
        _cleanup_free_ struct gw_mig_slot *slots = NULL;
        size_t n_slots = slots_of(d, &slots), n_out = 0;
        for (size_t k = 0; k < n; k++) {
                size_t i = order ? order[k] : k;
                if (!on_slices[i])
                        continue;
                struct gw_job *j = d->jobs.queue[i]->job;
                struct gw_mig_ask ask = { .count = j->mig_count };
                snprintf(ask.profile, sizeof ask.profile, "%s", j->mig_profile);
                size_t pick[GW_MIG_COUNT_MAX];
                int r = gw_mig_place(slots, n_slots, &ask, pick);
                if (r < 0) {
                        char words[128];
                        gw_job_text_set(&j->mig_wait, gw_mig_wait_words(r, &ask, words, sizeof words));
                        reasons[i] = GW_REASON_RESOURCES;
                        continue;
                }
                out[n_out] = (struct gw_mig_start){ .job_id = j->id,
                                                    .share = gw_mig_share(slots, pick, (size_t) ask.count) };
                out[n_out].uuids = uuids_of(slots, pick, ask.count, &out[n_out].gpu_mask);
                n_out++;
                for (int s = 0; s < ask.count; s++)
                        slots[pick[s]].job_id = j->id; /* taken for the jobs after it in this pass */
                reasons[i] = GW_REASON_NONE;
        }
        return n_out;
}

int gw_mig_start(struct gw_daemon *d, struct gw_djob *dj, struct gw_mig_start *s) {
        struct gw_job *j = dj->job;
        free(j->mig_slices);
        j->mig_slices = TAKE_PTR(s->uuids);
        j->mig_share = s->share;
        int r = gw_job_start(d, dj, s->gpu_mask);
        if (r < 0)
                gw_mig_forget_slices(j);
        return r;
}

void gw_mig_forget_slices(struct gw_job *j) {
        free(j->mig_slices);
        j->mig_slices = NULL;
        j->mig_share = 0;
}
