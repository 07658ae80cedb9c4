#include "core/calendar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/nametable.h"
#include "base/parse.h"

#define BIT(i) (UINT64_C(1) << (i))
#define USEC_PER_MIN ((gw_usec_t) 60 * GW_USEC_PER_SEC)
#define USEC_PER_DAY ((gw_usec_t) 86400 * GW_USEC_PER_SEC)

static const char *const state_names[_GW_BOOKING_STATE_MAX] = {
        [GW_BOOKING_PENDING_APPROVAL] = "PENDING_APPROVAL",
        [GW_BOOKING_APPROVED] = "APPROVED",
        [GW_BOOKING_ACTIVE] = "ACTIVE",
        [GW_BOOKING_ENDED] = "ENDED",
        [GW_BOOKING_RELEASED] = "RELEASED",
        [GW_BOOKING_DENIED] = "DENIED",
};

const char *gw_booking_state_name(enum gw_booking_state s) { return GW_NAMETABLE_NAME(state_names, s); }

enum gw_booking_state gw_booking_state_from_name(const char *name) {
        return (enum gw_booking_state) GW_NAMETABLE_INDEX(state_names, name);
}

bool gw_booking_state_holds_capacity(enum gw_booking_state s) {
        return s == GW_BOOKING_APPROVED || s == GW_BOOKING_ACTIVE;
}

bool gw_booking_state_is_open(enum gw_booking_state s) {
        return s == GW_BOOKING_PENDING_APPROVAL || gw_booking_state_holds_capacity(s);
}

bool gw_booking_state_is_final(enum gw_booking_state s) {
        return s == GW_BOOKING_ENDED || s == GW_BOOKING_RELEASED || s == GW_BOOKING_DENIED;
}

bool gw_booking_transition_ok(enum gw_booking_state from, enum gw_booking_state to) {
        switch (from) {
        case GW_BOOKING_PENDING_APPROVAL:
                return to == GW_BOOKING_APPROVED || to == GW_BOOKING_DENIED || to == GW_BOOKING_RELEASED;
        case GW_BOOKING_APPROVED:
                return to == GW_BOOKING_ACTIVE || to == GW_BOOKING_ENDED || to == GW_BOOKING_RELEASED;
        case GW_BOOKING_ACTIVE:
                return to == GW_BOOKING_ENDED || to == GW_BOOKING_RELEASED;
        default:
                return false;
        }
}

/* ---- Time formatting ---- */

/* Days since 1970-01-01 to a civil date (proleptic Gregorian), after H. Hinnant's
 * days_from_civil inverse. */
static void civil_from_days(int64_t z, int64_t *ret_y, unsigned *ret_m, unsigned *ret_d) {
        z += 719468;
        int64_t era = (z >= 0 ? z : z - 146096) / 146097;
        unsigned doe = (unsigned) (z - era * 146097);
        unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        unsigned mp = (5 * doy + 2) / 153;
        unsigned m = mp < 10 ? mp + 3 : mp - 9;

        *ret_d = doy - (153 * mp + 2) / 5 + 1;
        *ret_m = m;
        *ret_y = (int64_t) yoe + era * 400 + (m <= 2);
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

void gw_calendar_format_utc(gw_usec_t t, gw_usec_t ref, char *buf, size_t n, void *userdata) {
        int64_t day = floor_div(t, USEC_PER_DAY), y;
        int64_t min_of_day = (t - day * USEC_PER_DAY) / USEC_PER_MIN;
        unsigned m, d;

        (void) userdata;
        if (t == GW_USEC_INFINITY) {
                (void) snprintf(buf, n, "never");
                return;
        }
        if (ref != GW_USEC_INFINITY && floor_div(ref, USEC_PER_DAY) == day) {
                (void) snprintf(buf, n, "%02d:%02d", (int) (min_of_day / 60), (int) (min_of_day % 60));
                return;
        }
        civil_from_days(day, &y, &m, &d);
        (void) snprintf(buf, n, "%04lld-%02u-%02u %02d:%02d", (long long) y, m, d, (int) (min_of_day / 60),
                        (int) (min_of_day % 60));
}

struct fmt {
        gw_time_format_fn fn;
        void *userdata;
};

/* "Sat 10:00-12:00". */
static char *window_str(const struct fmt *f, gw_usec_t s, gw_usec_t e, char *buf, size_t n) {
        char a[64] = "", b[64] = "";

        f->fn(s, GW_USEC_INFINITY, a, sizeof(a), f->userdata);
        f->fn(e, s, b, sizeof(b), f->userdata);
        (void) snprintf(buf, n, "%s-%s", a, b);
        return buf;
}

/* "0-3,6". */
static char *mask_str(uint64_t mask, char *buf, size_t n) {
        size_t len = 0;

        buf[0] = '\0';
        for (int i = 0; i < GW_SCHED_MAX_GPUS && len < n; i++) {
                if (!(mask & BIT(i)))
                        continue;
                int j = i;
                while (j + 1 < GW_SCHED_MAX_GPUS && (mask & BIT(j + 1)))
                        j++;
                int w = j == i ? snprintf(buf + len, n - len, "%s%d", len ? "," : "", i)
                               : snprintf(buf + len, n - len, "%s%d-%d", len ? "," : "", i, j);
                if (w < 0)
                        break;
                len += (size_t) w;
                i = j;
        }
        return buf;
}

static const char *plural(long n) { return n == 1 ? "" : "s"; }

/* ---- Input ---- */

static gw_usec_t add_sat(gw_usec_t a, gw_usec_t b) {
        gw_usec_t r;
        return __builtin_add_overflow(a, b, &r) ? GW_USEC_INFINITY : r;
}

static int validate(const struct gw_calendar_input *in) {
        if (!in || in->n_gpus > GW_SCHED_MAX_GPUS || (in->n_gpus && !in->gpus) || (in->n_bookings && !in->bookings) ||
            (in->n_running && !in->running) || (in->n_pending && !in->pending))
                return -EINVAL;
        return gw_sched_gpus_masks(in->gpus, in->n_gpus, NULL, NULL);
}

static uint64_t usable_mask(const struct gw_calendar_input *in) {
        uint64_t m = 0;

        for (size_t i = 0; i < in->n_gpus; i++)
                if (in->gpus[i].usable)
                        m |= BIT(in->gpus[i].index);
        return m;
}

static bool holds(const struct gw_booking *b) {
        return b->gpu_mask && gw_booking_state_holds_capacity(b->state) && b->end > b->start;
}

/* The booking's GPUs, as re-chosen earlier in this tick if they were. */
static uint64_t mask_of(const struct gw_booking *b, const struct gw_cal_action *acts, size_t n_acts) {
        for (size_t i = 0; i < n_acts; i++)
                if (acts[i].kind == GW_CAL_REASSIGN && acts[i].booking_id == b->id)
                        return acts[i].gpu_mask;
        return b->gpu_mask;
}

/* GPUs taken over [s, e) by bookings other than ignore_id and by running jobs. */
static uint64_t busy_mask(const struct gw_calendar_input *in, gw_usec_t s, gw_usec_t e, int64_t ignore_id,
                          const struct gw_cal_action *acts, size_t n_acts) {
        uint64_t busy = 0;

        for (size_t i = 0; i < in->n_bookings; i++) {
                const struct gw_booking *b = &in->bookings[i];
                if (holds(b) && b->id != ignore_id && b->start < e && s < b->end)
                        busy |= mask_of(b, acts, n_acts);
        }
        for (size_t i = 0; i < in->n_running; i++)
                if (in->running[i].end > s)
                        busy |= in->running[i].gpu_mask;
        return busy;
}

/* The earliest instant after t at which a booking or a running job ends. */
static gw_usec_t next_end(const struct gw_calendar_input *in, gw_usec_t t, int64_t ignore_id) {
        gw_usec_t best = GW_USEC_INFINITY;

        for (size_t i = 0; i < in->n_bookings; i++) {
                const struct gw_booking *b = &in->bookings[i];
                if (holds(b) && b->id != ignore_id && b->end > t && b->end < best)
                        best = b->end;
        }
        for (size_t i = 0; i < in->n_running; i++)
                if (in->running[i].end > t && in->running[i].end < best)
                        best = in->running[i].end;
        return best;
}

/* ---- Placing ---- */

int gw_calendar_check_request(const struct gw_calendar_request *req, gw_usec_t now, char *msg, size_t msg_size) {
        const char *why = NULL;

        if (!req)
                why = "no request";
        else if (req->ngpus < 1)
                why = "a booking needs at least 1 GPU";
        else if (req->ngpus > GW_SCHED_MAX_GPUS)
                why = "a booking can hold at most 64 GPUs";
        else if (req->duration <= 0)
                why = "the duration must be positive";
        else if (add_sat(req->start, req->duration) == GW_USEC_INFINITY)
                why = "the window ends too far in the future";
        else if (req->start < now - GW_CALENDAR_PAST_SLACK)
                why = "the start is in the past";
        if (!why)
                return 0;
        if (msg && msg_size)
                (void) snprintf(msg, msg_size, "%s", why);
        return -EINVAL;
}

static void explain_busy(const struct fmt *f, const struct gw_calendar_request *req, struct gw_calendar_placement *r) {
        char want[96], alt[96], dur[32];
        gw_usec_t end = add_sat(req->start, req->duration);
        gw_usec_t search = req->search > 0 ? req->search : GW_CALENDAR_SEARCH_DEFAULT;
        int len;

        (void) window_str(f, req->start, end, want, sizeof(want));
        if (r->n_free == 0)
                len = snprintf(r->message, sizeof(r->message), "no GPUs free %s", want);
        else
                len = snprintf(r->message, sizeof(r->message), "only %d GPU%s free %s", r->n_free, plural(r->n_free),
                               want);
        if (len < 0 || (size_t) len >= sizeof(r->message))
                return;
        if (r->verdict == GW_PLACE_LATER)
                (void) snprintf(r->message + len, sizeof(r->message) - (size_t) len,
                                "; nearest window for %d GPU%s: %s", req->ngpus, plural(req->ngpus),
                                window_str(f, r->start, r->end, alt, sizeof(alt)));
        else
                (void) snprintf(r->message + len, sizeof(r->message) - (size_t) len,
                                "; no window for %d GPU%s within %s after the requested start", req->ngpus,
                                plural(req->ngpus), gw_format_duration(search, dur, sizeof(dur)));
}

int gw_calendar_place(const struct gw_calendar_input *in, const struct gw_calendar_request *req, gw_time_format_fn fmt,
                      void *userdata, struct gw_calendar_placement *ret) {
        struct fmt f = { .fn = fmt ? fmt : gw_calendar_format_utc, .userdata = userdata };
        struct gw_calendar_placement r;
        uint64_t usable, avail;
        gw_usec_t end, limit, t;
        char win[96], gpus[96];

        if (validate(in) < 0 || !req || !ret || req->ngpus < 1 || req->ngpus > GW_SCHED_MAX_GPUS || req->duration <= 0)
                return -EINVAL;
        memset(&r, 0, sizeof(r));
        usable = usable_mask(in);
        end = add_sat(req->start, req->duration);
        avail = usable & ~busy_mask(in, req->start, end, req->ignore_id, NULL, 0);
        r.n_free = __builtin_popcountll(avail);

        if (r.n_free >= req->ngpus) {
                r.verdict = GW_PLACE_FITS;
                r.gpu_mask = gw_sched_pick(avail, req->ngpus);
                r.start = req->start;
                r.end = end;
                (void) snprintf(r.message, sizeof(r.message), "%d GPU%s (%s) %s", req->ngpus, plural(req->ngpus),
                                mask_str(r.gpu_mask, gpus, sizeof(gpus)),
                                window_str(&f, r.start, r.end, win, sizeof(win)));
                *ret = r;
                return 0;
        }
        if (__builtin_popcountll(usable) < req->ngpus) {
                r.verdict = GW_PLACE_NEVER;
                if (in->n_gpus < (size_t) req->ngpus)
                        (void) snprintf(r.message, sizeof(r.message), "this server has %zu GPU%s; %d requested",
                                        in->n_gpus, plural((long) in->n_gpus), req->ngpus);
                else
                        (void) snprintf(r.message, sizeof(r.message),
                                        "only %d of %zu GPUs are usable (the others are drained); %d requested",
                                        __builtin_popcountll(usable), in->n_gpus, req->ngpus);
                *ret = r;
                return 0;
        }

        /* Sliding the window later frees GPUs only when it passes the end of something. */
        r.verdict = GW_PLACE_NEVER;
        limit = add_sat(req->start, req->search > 0 ? req->search : GW_CALENDAR_SEARCH_DEFAULT);
        for (t = next_end(in, req->start, req->ignore_id); t <= limit && t != GW_USEC_INFINITY;
             t = next_end(in, t, req->ignore_id)) {
                gw_usec_t e = add_sat(t, req->duration);
                uint64_t m = usable & ~busy_mask(in, t, e, req->ignore_id, NULL, 0);
                if (__builtin_popcountll(m) >= req->ngpus) {
                        r.verdict = GW_PLACE_LATER;
                        r.gpu_mask = gw_sched_pick(m, req->ngpus);
                        r.start = t;
                        r.end = e;
                        break;
                }
        }
        explain_busy(&f, req, &r);
        *ret = r;
        return 0;
}

int64_t gw_calendar_user_booked_gpus(const struct gw_booking *b, size_t n, uint32_t uid, gw_usec_t start, gw_usec_t end,
                                     int64_t ignore_id) {
        int64_t most = 0;

        if (!b)
                return 0;
        /* The total can only rise where a booking starts: check start and each such instant. */
        for (size_t i = 0; i <= n; i++) {
                gw_usec_t p = i == n ? start : b[i].start;
                int64_t sum = 0;

                if (i < n && (b[i].uid != uid || b[i].id == ignore_id || !holds(&b[i]) || p <= start || p >= end))
                        continue;
                for (size_t k = 0; k < n; k++)
                        if (b[k].uid == uid && b[k].id != ignore_id && holds(&b[k]) && b[k].start <= p && p < b[k].end)
                                sum += b[k].ngpus;
                if (sum > most)
                        most = sum;
        }
        return most;
}

/* ---- The scheduler's view at now ---- */

static bool covers_now(const struct gw_booking *b, gw_usec_t now) {
        return (b->state == GW_BOOKING_APPROVED || b->state == GW_BOOKING_ACTIVE) && b->start <= now && now < b->end;
}

/* Sorts the distinct free_until of unowned GPUs into g->level and sets free_through[k] to
 * the GPUs with free_until >= level[k]. */
static void index_levels(struct gw_calendar_gpus *g) {
        g->n_levels = 0;
        for (int i = 0; i < GW_SCHED_MAX_GPUS; i++) {
                gw_usec_t v = g->free_until[i];
                int k = 0;
                if (g->owned & BIT(i))
                        continue;
                while (k < g->n_levels && g->level[k] < v)
                        k++;
                if (k < g->n_levels && g->level[k] == v)
                        continue;
                memmove(&g->level[k + 1], &g->level[k], (size_t) (g->n_levels - k) * sizeof(g->level[0]));
                g->level[k] = v;
                g->n_levels++;
        }
        for (int k = 0; k < g->n_levels; k++)
                g->free_through[k] = 0;
        for (int i = 0; i < GW_SCHED_MAX_GPUS; i++) {
                if (g->owned & BIT(i))
                        continue;
                for (int k = 0; k < g->n_levels && g->level[k] <= g->free_until[i]; k++)
                        g->free_through[k] |= BIT(i);
        }
}

int gw_calendar_gpus_at(const struct gw_calendar_input *in, gw_usec_t now, struct gw_calendar_gpus *ret) {
        struct gw_calendar_gpus g;

        if (validate(in) < 0 || !ret)
                return -EINVAL;
        memset(&g, 0, sizeof(g));
        for (int i = 0; i < GW_SCHED_MAX_GPUS; i++)
                g.free_until[i] = GW_USEC_INFINITY;
        for (size_t k = 0; k < in->n_bookings; k++) {
                const struct gw_booking *b = &in->bookings[k];
                if (!holds(b) || !covers_now(b, now))
                        continue;
                for (uint64_t m = b->gpu_mask & ~g.owned; m; m &= m - 1) {
                        int i = __builtin_ctzll(m);
                        g.owner[i] = b->id;
                        g.free_until[i] = now;
                }
                g.owned |= b->gpu_mask;
        }
        for (size_t k = 0; k < in->n_bookings; k++) {
                const struct gw_booking *b = &in->bookings[k];
                /* Awaiting approval, a booking holds nothing (holds()): the queue must not
                 * wait on one the host's policy sent to an admin until the admin agrees. */
                if (!holds(b) || b->start <= now)
                        continue;
                for (uint64_t m = b->gpu_mask & ~g.owned; m; m &= m - 1) {
                        int i = __builtin_ctzll(m);
                        if (b->start < g.free_until[i]) {
                                g.free_until[i] = b->start;
                                g.next_id[i] = b->id;
                        }
                }
        }
        index_levels(&g);
        *ret = g;
        return 0;
}

uint64_t gw_calendar_free_for(const struct gw_calendar_gpus *g, uint64_t mask, gw_usec_t now, gw_usec_t time_limit) {
        gw_usec_t end = add_sat(now, time_limit > 0 ? time_limit : GW_USEC_INFINITY);
        int lo = 0, hi;

        if (!g)
                return 0;
        /* The first level at or after end: its GPUs are those free through end. */
        hi = g->n_levels;
        while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (g->level[mid] < end)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < g->n_levels ? mask & ~g->owned & g->free_through[lo] : 0;
}

void gw_calendar_limit_job(const struct gw_calendar_gpus *g, uint64_t all, gw_usec_t now, struct gw_sched_job *j) {
        uint64_t free_for = gw_calendar_free_for(g, all, now, j->time_limit);

        if (free_for == all)
                return;
        j->allowed = free_for;
        j->none_allowed = free_for == 0;
        j->booked_out = true;
}

static const struct gw_booking *find_booking(const struct gw_calendar_input *in, int64_t id) {
        for (size_t i = 0; i < in->n_bookings; i++)
                if (in->bookings[i].id == id)
                        return &in->bookings[i];
        return NULL;
}

int gw_calendar_gate(const struct gw_calendar_input *in, int64_t booking_id, gw_usec_t now,
                     struct gw_calendar_gate *ret) {
        struct gw_calendar_gate g = { .gate = GW_GATE_NONE, .booking_id = booking_id };
        const struct gw_booking *b;

        if (validate(in) < 0 || !ret)
                return -EINVAL;
        if (booking_id == 0) {
                *ret = g;
                return 0;
        }
        b = find_booking(in, booking_id);
        if (!b || gw_booking_state_is_final(b->state) || now >= b->end)
                g.gate = GW_GATE_CLOSED;
        else if (b->state == GW_BOOKING_PENDING_APPROVAL || now < b->start)
                g.gate = GW_GATE_WAIT;
        else {
                g.gate = GW_GATE_OPEN;
                g.gpu_mask = b->gpu_mask & usable_mask(in);
                g.until = b->end;
        }
        *ret = g;
        return 0;
}

/* ---- The tick ---- */

size_t gw_calendar_tick_max(const struct gw_calendar_input *in) { return in ? in->n_bookings + in->n_running : 0; }

struct acts {
        struct gw_cal_action *a;
        size_t n, cap;
        bool overflow;
};

static void emit(struct acts *o, struct gw_cal_action a) {
        if (o->n < o->cap)
                o->a[o->n++] = a;
        else
                o->overflow = true;
}

static void emit_state(struct acts *o, enum gw_cal_action_kind k, const struct gw_booking *b,
                       enum gw_booking_state to) {
        emit(o, (struct gw_cal_action){ .kind = k, .booking_id = b->id, .new_state = to });
}

/* A booking not started yet whose GPUs include one no longer usable: keep its usable GPUs
 * and add the lowest free ones, counting GPUs re-chosen earlier in this tick as taken. */
static void repair(const struct gw_calendar_input *in, uint64_t usable, const struct gw_booking *b, struct acts *o) {
        uint64_t keep = b->gpu_mask & usable, add = 0;
        int need = b->ngpus - __builtin_popcountll(keep);

        if (!b->gpu_mask || !(b->gpu_mask & ~usable))
                return;
        if (need > 0) {
                uint64_t avail = usable & ~keep & ~busy_mask(in, b->start, b->end, b->id, o->a, o->n);
                add = gw_sched_pick(avail, need);
                if (!add) {
                        emit(o, (struct gw_cal_action){ .kind = GW_CAL_CONFLICT, .booking_id = b->id });
                        return;
                }
        }
        emit(o, (struct gw_cal_action){ .kind = GW_CAL_REASSIGN,
                                        .booking_id = b->id,
                                        .gpu_mask = need > 0 ? keep | add : gw_sched_pick(keep, b->ngpus) });
}

static bool in_use(const struct gw_calendar_input *in, int64_t booking_id) {
        for (size_t i = 0; i < in->n_running; i++)
                if (in->running[i].booking_id == booking_id)
                        return true;
        for (size_t i = 0; i < in->n_pending; i++)
                if (in->pending[i].booking_id == booking_id)
                        return true;
        return false;
}

static void tick_booking(const struct gw_calendar_input *in, uint64_t usable, const struct gw_booking *b, gw_usec_t now,
                         const struct gw_calendar_params *p, struct acts *o) {
        gw_usec_t idle_since;

        switch (b->state) {
        case GW_BOOKING_PENDING_APPROVAL:
                /* Not repaired: it holds no GPUs; they are chosen again at its approval. */
                if (now >= b->end)
                        emit_state(o, GW_CAL_EXPIRE, b, GW_BOOKING_DENIED);
                else if (p->pending_ttl > 0 && b->created > 0 && now - b->created >= p->pending_ttl)
                        emit_state(o, GW_CAL_EXPIRE_UNANSWERED, b, GW_BOOKING_DENIED);
                break;
        case GW_BOOKING_APPROVED:
                if (now >= b->end)
                        emit_state(o, GW_CAL_END, b, GW_BOOKING_ENDED);
                else if (now >= b->start)
                        emit_state(o, GW_CAL_ACTIVATE, b, GW_BOOKING_ACTIVE);
                else
                        repair(in, usable, b, o);
                break;
        case GW_BOOKING_ACTIVE:
                if (now >= b->end) {
                        emit_state(o, GW_CAL_END, b, GW_BOOKING_ENDED);
                        break;
                }
                idle_since = b->last_used > b->start ? b->last_used : b->start;
                if (p->no_show > 0 && now - idle_since >= p->no_show && !in_use(in, b->id))
                        emit_state(o, GW_CAL_NO_SHOW, b, GW_BOOKING_RELEASED);
                break;
        default:
                break;
        }
}

int gw_calendar_tick(const struct gw_calendar_input *in, gw_usec_t now, const struct gw_calendar_params *p,
                     struct gw_cal_action *out, size_t cap, size_t *ret_n) {
        struct acts o = { .a = out, .n = 0, .cap = cap };
        uint64_t usable;

        if (validate(in) < 0 || !p || !ret_n || (cap && !out))
                return -EINVAL;
        usable = usable_mask(in);
        for (size_t i = 0; i < in->n_bookings; i++)
                tick_booking(in, usable, &in->bookings[i], now, p, &o);

        for (size_t i = 0; i < in->n_running; i++) {
                const struct gw_cal_job *j = &in->running[i];
                const struct gw_booking *b = j->booking_id ? find_booking(in, j->booking_id) : NULL;

                if (!b)
                        continue;
                if (gw_booking_state_is_final(b->state) || now >= b->end)
                        emit(&o,
                             (struct gw_cal_action){ .kind = GW_CAL_STOP_JOB, .booking_id = b->id, .job_id = j->id });
                else if (!j->warned && p->warn_before_end > 0 && now >= b->end - p->warn_before_end)
                        emit(&o,
                             (struct gw_cal_action){ .kind = GW_CAL_WARN_JOB, .booking_id = b->id, .job_id = j->id });
        }
        if (o.overflow)
                return -ENOBUFS;
        *ret_n = o.n;
        return 0;
}

/* ---- Windows ---- */

static int cmp_window(const void *a, const void *b) {
        const struct gw_cal_window *x = a, *y = b;

        if (x->gpu != y->gpu)
                return x->gpu < y->gpu ? -1 : 1;
        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        return (x->booking_id > y->booking_id) - (x->booking_id < y->booking_id);
}

int gw_calendar_windows(const struct gw_calendar_input *in, gw_usec_t from, gw_usec_t to, struct gw_cal_window *out,
                        size_t cap, size_t *ret_n) {
        size_t n = 0;

        if (validate(in) < 0 || !ret_n || (cap && !out))
                return -EINVAL;
        for (size_t k = 0; k < in->n_bookings; k++) {
                const struct gw_booking *b = &in->bookings[k];
                if (!holds(b) || b->end <= from || b->start >= to)
                        continue;
                for (uint64_t m = b->gpu_mask; m; m &= m - 1) {
                        if (n == cap)
                                return -ENOBUFS;
                        out[n++] = (struct gw_cal_window){ .gpu = __builtin_ctzll(m),
                                                           .start = b->start,
                                                           .end = b->end,
                                                           .booking_id = b->id };
                }
        }
        if (n > 1)
                qsort(out, n, sizeof(*out), cmp_window);
        *ret_n = n;
        return 0;
}
