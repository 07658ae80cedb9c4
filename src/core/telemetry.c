#include "core/telemetry.h"

#include <string.h>

#include "base/cleanup.h"

/* ---- ring ---- */

void gw_ring_init(struct gw_ring *r, size_t cap) {
        *r = (struct gw_ring){ 0 };
        /* A zero-capacity ring is legal (telemetry switched off) and simply keeps nothing. */
        if (cap)
                r->v = gw_xcalloc(cap, sizeof(*r->v));
        r->cap = cap;
}

void gw_ring_free(struct gw_ring *r) {
        if (!r)
                return;
        free(r->v);
        *r = (struct gw_ring){ 0 };
}

void gw_ring_push(struct gw_ring *r, const struct gw_point *p) {
        if (!r->cap)
                return;
        if (r->n < r->cap) {
                r->v[(r->start + r->n) % r->cap] = *p;
                r->n++;
        } else {
                r->v[r->start] = *p;
                r->start = (r->start + 1) % r->cap;
        }
}

size_t gw_ring_since(const struct gw_ring *r, gw_usec_t since, struct gw_point *out, size_t max) {
        size_t k = 0;

        /* A full scan rather than a binary search: wall-clock points are not guaranteed to be
         * sorted (the clock can be stepped back), and a ring holds at most a few thousand. */
        for (size_t i = 0; i < r->n && k < max; i++) {
                const struct gw_point *p = &r->v[(r->start + i) % r->cap];
                if (p->t >= since)
                        out[k++] = *p;
        }
        return k;
}

const struct gw_point *gw_ring_last(const struct gw_ring *r) {
        if (!r->n)
                return NULL;
        return &r->v[(r->start + r->n - 1) % r->cap];
}

/* ---- aggregator ---- */

static gw_usec_t bucket_of(gw_usec_t t, gw_usec_t width) {
        gw_usec_t m;

        if (width <= 0)
                return t;
        /* C's % truncates toward zero; floor it so a pre-epoch point does not land in the
         * bucket after its own. */
        m = t % width;
        if (m < 0)
                m += width;
        return t - m;
}

static void agg_start(struct gw_agg *a, gw_usec_t bucket, const struct gw_point *p) {
        *a = (struct gw_agg){
                .bucket = bucket,
                .n = 1,
                .util_min = p->util,
                .util_max = p->util,
                .util_sum = p->util,
                .mem_min = p->mem,
                .mem_max = p->mem,
                .mem_sum = (double) p->mem,
        };
}

bool gw_agg_add(struct gw_agg *a, gw_usec_t width, const struct gw_point *p, struct gw_agg *done) {
        gw_usec_t b = bucket_of(p->t, width);

        /* Emptiness is n == 0, not bucket == 0: the bucket starting at the epoch is real. */
        if (!a->n) {
                agg_start(a, b, p);
                return false;
        }
        if (b < a->bucket)
                return false;
        if (b > a->bucket) {
                if (done)
                        *done = *a;
                agg_start(a, b, p);
                return true;
        }
        a->n++;
        if (p->util < a->util_min)
                a->util_min = p->util;
        if (p->util > a->util_max)
                a->util_max = p->util;
        a->util_sum += p->util;
        if (p->mem < a->mem_min)
                a->mem_min = p->mem;
        if (p->mem > a->mem_max)
                a->mem_max = p->mem;
        a->mem_sum += (double) p->mem;
        return false;
}

double gw_agg_util_mean(const struct gw_agg *a) { return a->n ? a->util_sum / a->n : 0.0; }

uint64_t gw_agg_mem_mean(const struct gw_agg *a) { return a->n ? (uint64_t) (a->mem_sum / a->n + 0.5) : 0; }

/* ---- usage statistics ---- */

void gw_usage_add(struct gw_usage *u, unsigned util, uint64_t mem) {
        if (util > 100)
                util = 100;
        u->hist[util]++;
        u->n++;
        u->util_sum += util;
        if (mem > u->mem_peak)
                u->mem_peak = mem;
}

double gw_usage_mean(const struct gw_usage *u) { return u->n ? u->util_sum / (double) u->n : 0.0; }

unsigned gw_usage_percentile(const struct gw_usage *u, unsigned pct) {
        uint64_t rank, q, r, cum = 0;

        if (!u->n)
                return 0;
        if (pct > 100)
                pct = 100;
        /* rank = ceil(pct * n / 100), split so that pct * n cannot overflow.  pct 0 gives
         * rank 0, raised to 1 so that it means "the smallest observed value". */
        q = u->n / 100;
        r = u->n % 100;
        rank = pct * q + (pct * r + 99) / 100;
        if (rank < 1)
                rank = 1;
        for (unsigned v = 0; v <= 100; v++) {
                cum += u->hist[v];
                if (cum >= rank)
                        return v;
        }
        return 100; /* only if hist and n disagree */
}

/* ---- attribution ---- */

static bool span_eq(const char *s, size_t len, const char *name) {
        return strlen(name) == len && memcmp(s, name, len) == 0;
}

/* Whether one /proc/PID/cgroup line (or a bare path) has a path component equal to name. */
static bool line_has_component(const char *line, size_t len, const char *name) {
        const char *end = line + len, *path = line, *c;

        /* "ID:controllers:path": skip the two fields so "0::" is never taken for a component.
         * Without two colons the caller gave a bare path. */
        c = memchr(line, ':', len);
        if (c) {
                c = memchr(c + 1, ':', (size_t) (end - c - 1));
                if (c)
                        path = c + 1;
        }
        while (path < end) {
                const char *slash = memchr(path, '/', (size_t) (end - path));
                const char *stop = slash ? slash : end;
                if (span_eq(path, (size_t) (stop - path), name))
                        return true;
                path = stop + 1;
        }
        return false;
}

static bool cgroup_matches(const char *text, const char *name) {
        const char *line = text;

        if (!name || !*name)
                return false;
        while (*line) {
                size_t len = strcspn(line, "\r\n");
                if (line_has_component(line, len, name))
                        return true;
                line += len;
                if (*line)
                        line++;
        }
        return false;
}

int64_t gw_attribute(const struct gw_proc_facts *p, const struct gw_job_anchor *jobs, size_t n_jobs) {
        if (!p || !p->pid || !jobs || !n_jobs)
                return 0;

        /* The cgroup is authoritative: a job's processes cannot leave it, whereas the ppid
         * chain breaks when something double-forks and is reparented to init. */
        if (p->cgroup)
                for (size_t j = 0; j < n_jobs; j++)
                        if (cgroup_matches(p->cgroup, jobs[j].cgroup_name))
                                return jobs[j].job_id;

        /* Nearest first, so the innermost shim claims the process. */
        for (size_t i = 0; i <= p->n_ancestors; i++) {
                unsigned pid = i == 0 ? p->pid : (p->ancestors ? p->ancestors[i - 1] : 0);
                if (pid <= 1)
                        continue; /* init is everybody's ancestor and no job's shim */
                for (size_t j = 0; j < n_jobs; j++)
                        if (jobs[j].shim_pid == pid)
                                return jobs[j].job_id;
        }
        return 0;
}
