#include "core/waitwhy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define BIT(i) (UINT64_C(1) << (i))

/* The GPUs of in by what the reasons need: present, usable, and free once the plan's
 * starts took theirs; with each one's memory, by index. */
struct why_gpus {
        uint64_t present, usable, free_after;
        uint64_t mem_total[GW_SCHED_MAX_GPUS];
        uint64_t mem_free[GW_SCHED_MAX_GPUS];
};

static int gpus_of(const struct gw_sched_input *in, const struct gw_sched_plan *plan, struct why_gpus *g) {
        uint64_t busy = 0;

        memset(g, 0, sizeof(*g));
        if (gw_sched_gpus_masks(in->gpus, in->n_gpus, &g->present, &g->usable) < 0)
                return -EINVAL;
        for (size_t i = 0; i < in->n_gpus; i++) {
                const struct gw_sched_gpu *x = &in->gpus[i];
                g->mem_total[x->index] = x->mem_total;
                g->mem_free[x->index] = x->mem_free;
                if (x->job_id)
                        busy |= BIT(x->index);
        }
        /* Held as the plan holds them: a running job's mask counts even where NVML lags. */
        for (size_t r = 0; r < in->n_running; r++)
                busy |= in->running[r].gpu_mask;
        for (size_t s = 0; s < plan->n_starts; s++)
                busy |= plan->starts[s].gpu_mask;
        g->free_after = g->usable & ~busy;
        return 0;
}

static int count_fit(const uint64_t mem[], uint64_t mask, uint64_t need) {
        int n = 0;
        for (uint64_t m = mask; m; m &= m - 1)
                n += need == 0 || mem[__builtin_ctzll(m)] >= need;
        return n;
}

/* Whether j fits on the GPUs of mask once nothing else runs, as the scheduler's
 * can_ever_fit: by their whole memory, or by what is free now (memory unknown). */
static bool fits_on(const struct why_gpus *g, uint64_t mask, const struct gw_sched_job *j) {
        int n = 0;
        for (uint64_t m = mask; m; m &= m - 1) {
                int i = __builtin_ctzll(m);
                n += j->gpu_mem == 0 || g->mem_total[i] >= j->gpu_mem || g->mem_free[i] >= j->gpu_mem;
        }
        return n >= j->ngpus;
}

static uint32_t why_one(const struct why_gpus *g, const struct gw_sched_job *j, enum gw_job_reason planned) {
        uint32_t bits = GW_WHY_BIT(planned);

        if (planned == GW_REASON_NONE)
                return 0;
        if (j->held)
                bits |= GW_WHY_BIT(GW_REASON_HELD);
        if (j->backoff)
                bits |= GW_WHY_BIT(GW_REASON_BACKOFF);
        if (j->blocked > GW_REASON_NONE && j->blocked < _GW_REASON_MAX)
                bits |= GW_WHY_BIT(j->blocked);
        if (j->dep != GW_DEP_SATISFIED)
                bits |= GW_WHY_BIT(GW_REASON_DEPENDENCY);
        if (j->none_allowed)
                bits |= GW_WHY_BIT(GW_REASON_RESERVATION);
        if (!fits_on(g, g->usable, j) && fits_on(g, g->present, j))
                bits |= GW_WHY_BIT(GW_REASON_DRAINED);
        /* GPUs are a reason of their own only where the plan did not look at them (it
         * stopped at an earlier reason) and they would hold the job back too: a job in a
         * booking has its booking's GPUs, which the Reservation reason covers. */
        uint32_t gpu_said = GW_WHY_BIT(GW_REASON_RESOURCES) | GW_WHY_BIT(GW_REASON_PRIORITY) |
                            GW_WHY_BIT(GW_REASON_DRAINED) | GW_WHY_BIT(GW_REASON_RESERVATION);
        uint64_t may = j->allowed ? g->free_after & j->allowed : g->free_after;
        if (!(bits & gpu_said) && count_fit(g->mem_free, may, j->gpu_mem) < j->ngpus)
                bits |= GW_WHY_BIT(GW_REASON_RESOURCES);
        return bits;
}

int gw_sched_why(const struct gw_sched_input *in, const struct gw_sched_plan *plan, uint32_t *ret_bits) {
        struct why_gpus g;

        if (!in || !plan || (in->n_pending && (!in->pending || !plan->reasons || !ret_bits)) ||
            in->n_gpus > GW_SCHED_MAX_GPUS || (in->n_gpus && !in->gpus) || (in->n_running && !in->running) ||
            (plan->n_starts && !plan->starts))
                return -EINVAL;
        if (gpus_of(in, plan, &g) < 0)
                return -EINVAL;
        for (size_t i = 0; i < in->n_pending; i++) {
                enum gw_job_reason r = plan->reasons[i];
                if (r < 0 || r >= _GW_REASON_MAX)
                        return -EINVAL;
                ret_bits[i] = why_one(&g, &in->pending[i], r);
        }
        return 0;
}

/* "GPU 2 drained (fan noise (by ann))", "GPU 3 unhealthy" into buf at *len. */
static void say_gpu(char *buf, size_t size, size_t *len, const struct gw_why_gpu *x, const char *sep) {
        if (*len >= size)
                return;
        bool why = x->drained && x->why && *x->why;
        int k = snprintf(buf + *len, size - *len, "%sGPU %d %s%s%s%s", sep, x->index,
                         x->drained ? "drained" : "unhealthy", why ? " (" : "", why ? x->why : "", why ? ")" : "");
        *len += k > 0 ? (size_t) k : 0;
}

const char *gw_why_drained(int ngpus, uint64_t gpu_mem, const struct gw_why_gpu *gpus, size_t n, char *buf,
                           size_t size) {
        int in_service = 0, out = 0;

        if (!buf || size == 0 || ngpus < 1 || (n && !gpus))
                return NULL;
        for (size_t i = 0; i < n; i++) {
                bool fits = gpu_mem == 0 || gpus[i].mem_total == 0 || gpus[i].mem_total >= gpu_mem;
                in_service += fits && gpus[i].usable;
                out += fits && !gpus[i].usable;
        }
        if (out == 0 || in_service >= ngpus || in_service + out < ngpus)
                return NULL;
        int k = snprintf(buf, size, "needs %d GPU%s%s, %d %s in service: ", ngpus, ngpus == 1 ? "" : "s",
                         gpu_mem ? " with the memory it asks" : "", in_service, in_service == 1 ? "is" : "are");
        size_t len = k > 0 ? (size_t) k : 0;
        int named = 0;
        for (size_t i = 0; i < n && named < 3; i++) {
                bool fits = gpu_mem == 0 || gpus[i].mem_total == 0 || gpus[i].mem_total >= gpu_mem;
                if (fits && !gpus[i].usable)
                        say_gpu(buf, size, &len, &gpus[i], named++ ? "; " : "");
        }
        if (out > named && len < size)
                (void) snprintf(buf + len, size - len, "; and %d more", out - named);
        return buf;
}

/* A quota's words without the "Quota: " the reason's code says already. */
static const char *quota_words(const char *q) {
        static const char prefix[] = "Quota: ";
        if (!q || !*q)
                return "its user is at a quota limit";
        return strncmp(q, prefix, sizeof(prefix) - 1) ? q : q + sizeof(prefix) - 1;
}

static void say(struct gw_why *w, enum gw_job_reason r, const struct gw_why_facts *f) {
        char *t = w->text;
        size_t n = sizeof(w->text);

        w->code = r;
        switch (r) {
        case GW_REASON_RESOURCES:
                if (f->slices)
                        snprintf(t, n, "%s", f->slices);
                else
                        snprintf(t, n, "waits for %d free GPU%s", f->ngpus, f->ngpus == 1 ? "" : "s");
                break;
        case GW_REASON_DEPENDENCY:
                if (f->after_job <= 0)
                        snprintf(t, n, "waits for the job it depends on");
                else if (f->after_never)
                        snprintf(t, n, "job %lld did not %s: it never starts", (long long) f->after_job,
                                 f->after_ok ? "complete" : "end");
                else
                        snprintf(t, n, "after job %lld %s", (long long) f->after_job,
                                 f->after_ok ? "completes" : "ends");
                break;
        case GW_REASON_HELD:
                snprintf(t, n, "held: it starts only once released");
                break;
        case GW_REASON_PRIORITY:
                snprintf(t, n, "free GPUs are kept for a job ahead of it in the queue");
                break;
        case GW_REASON_BACKOFF:
                snprintf(t, n, "waits out its retry's backoff");
                break;
        case GW_REASON_RESERVATION:
                if (f->booking_id > 0)
                        snprintf(t, n, "its booking %lld does not let it start now", (long long) f->booking_id);
                else
                        snprintf(t, n, "the free GPUs are booked before it would end");
                break;
        case GW_REASON_QUOTA:
                snprintf(t, n, "%s", quota_words(f->quota));
                break;
        case GW_REASON_ARRAY_LIMIT:
                snprintf(t, n, "as many of its tasks run as its %%N allows");
                break;
        case GW_REASON_PREEMPTED:
                snprintf(t, n, "%s%s%swaits first of priority %d for free GPUs", f->preempted_by ? "by " : "",
                         f->preempted_by ? f->preempted_by : "", f->preempted_by ? "; " : "", f->priority);
                break;
        case GW_REASON_DRAINED:
                if (f->drained)
                        snprintf(t, n, "%s", f->drained);
                else
                        snprintf(t, n, "needs %d GPUs, more than are in service", f->ngpus);
                break;
        default:
                snprintf(t, n, "%s", gw_job_reason_name(r) ? gw_job_reason_name(r) : "");
                break;
        }
}

size_t gw_why_list(enum gw_job_reason main, uint32_t bits, const struct gw_why_facts *f, struct gw_why *out,
                   size_t max) {
        size_t n = 0;

        if (!f || !out)
                return 0;
        if (main > GW_REASON_NONE && main < _GW_REASON_MAX && n < max)
                say(&out[n++], main, f);
        for (int r = GW_REASON_NONE + 1; r < _GW_REASON_MAX && n < max; r++)
                if ((bits & GW_WHY_BIT(r)) && r != (int) main)
                        say(&out[n++], (enum gw_job_reason) r, f);
        return n;
}
