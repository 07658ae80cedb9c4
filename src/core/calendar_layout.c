/* The schedule: a per-GPU layout of running jobs, bookings and predicted starts, and a
 * text chart of it.  Declared in calendar.h. */
#include "core/calendar.h"
#include "core/predict.h"
#include "base/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/nametable.h"

#define BIT(i) (UINT64_C(1) << (i))
#define NGPU GW_SCHED_MAX_GPUS

static const char *const kind_names[_GW_SEGMENT_KIND_MAX] = {
        [GW_SEG_RUNNING] = "running", [GW_SEG_PREDICTED] = "predicted",
        [GW_SEG_BOOKING] = "booking", [GW_SEG_BOOKING_PENDING] = "booking-pending",
        [GW_SEG_DRAINED] = "drained",
};

const char *gw_segment_kind_name(enum gw_segment_kind k) { return GW_NAMETABLE_NAME(kind_names, k); }

static gw_usec_t add_sat(gw_usec_t a, gw_usec_t b) {
        gw_usec_t r;
        return __builtin_add_overflow(a, b, &r) ? GW_USEC_INFINITY : r;
}

static gw_usec_t max_t(gw_usec_t a, gw_usec_t b) { return a > b ? a : b; }
static gw_usec_t min_t(gw_usec_t a, gw_usec_t b) { return a < b ? a : b; }

/* Shown: bookings that hold GPUs, and those awaiting approval on the GPUs they asked for. */
static bool shown(const struct gw_booking *b) {
        return b->gpu_mask && gw_booking_state_is_open(b->state) && b->end > b->start;
}

size_t gw_schedule_layout_max(const struct gw_calendar_input *in) {
        size_t n;

        if (!in)
                return 0;
        n = in->n_gpus;
        for (size_t i = 0; i < in->n_running; i++)
                n += (size_t) __builtin_popcountll(in->running[i].gpu_mask);
        for (size_t i = 0; i < in->n_bookings; i++)
                if (shown(&in->bookings[i]))
                        n += (size_t) __builtin_popcountll(in->bookings[i].gpu_mask);
        for (size_t i = 0; i < in->n_pending; i++)
                if (in->pending[i].ngpus > 0)
                        n += (size_t) in->pending[i].ngpus;
        return n;
}

/* ---- Output ---- */

struct segs {
        struct gw_schedule_segment *a;
        size_t n, cap;
        bool overflow;
};

static void emit(struct segs *o, int gpu, gw_usec_t s, gw_usec_t e, enum gw_segment_kind k, int64_t id,
                 int64_t booking_id, const char *label) {
        struct gw_schedule_segment *g;

        if (o->n == o->cap) {
                o->overflow = true;
                return;
        }
        g = &o->a[o->n++];
        *g = (struct gw_schedule_segment){ .gpu = gpu,
                                           .start = s,
                                           .end = e,
                                           .kind = k,
                                           .id = id,
                                           .booking_id = booking_id };
        (void) snprintf(g->label, sizeof(g->label), "%s", label ? label : "");
}

static int cmp_seg(const void *a, const void *b) {
        const struct gw_schedule_segment *x = a, *y = b;

        if (x->gpu != y->gpu)
                return x->gpu < y->gpu ? -1 : 1;
        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        if (x->kind != y->kind)
                return x->kind < y->kind ? -1 : 1;
        return (x->id > y->id) - (x->id < y->id);
}

/* ---- Predicted runs ---- */

static int predict(const struct gw_calendar_input *in, gw_usec_t now, gw_usec_t horizon, struct segs *o) {
        struct gw_prediction *pr = calloc(in->n_pending + 1, sizeof(*pr));
        int r;

        if (!pr)
                return -ENOMEM;
        r = gw_predict_starts(in, now, horizon, pr);
        for (size_t i = 0; r >= 0 && i < in->n_pending; i++) {
                if (pr[i].start == GW_USEC_INFINITY)
                        continue;
                for (uint64_t m = pr[i].gpu_mask; m; m &= m - 1)
                        emit(o, __builtin_ctzll(m), pr[i].start, pr[i].end, GW_SEG_PREDICTED, in->pending[i].id,
                             in->pending[i].booking_id, in->pending[i].label);
        }
        free(pr);
        return r;
}

int gw_schedule_layout(const struct gw_calendar_input *in, gw_usec_t now, gw_usec_t horizon,
                       struct gw_schedule_segment *out, size_t cap, size_t *ret_n) {
        struct segs o = { .a = out, .n = 0, .cap = cap };
        uint64_t present = 0, usable = 0;
        gw_usec_t hend;
        int r;

        if (!in || horizon <= 0 || !ret_n || (cap && !out) || in->n_gpus > NGPU || (in->n_gpus && !in->gpus) ||
            (in->n_bookings && !in->bookings) || (in->n_running && !in->running) || (in->n_pending && !in->pending))
                return -EINVAL;
        if (gw_sched_gpus_masks(in->gpus, in->n_gpus, &present, &usable) < 0)
                return -EINVAL;
        for (size_t i = 0; i < in->n_pending; i++)
                if (in->pending[i].ngpus < 1 || in->pending[i].ngpus > NGPU || in->pending[i].time_limit <= 0)
                        return -EINVAL;
        hend = add_sat(now, horizon);

        for (uint64_t m = present & ~usable; m; m &= m - 1)
                emit(&o, __builtin_ctzll(m), now, hend, GW_SEG_DRAINED, 0, 0, "drained");
        for (size_t i = 0; i < in->n_running; i++) {
                const struct gw_cal_job *j = &in->running[i];
                gw_usec_t s = j->start > 0 && j->start < now ? j->start : now;
                gw_usec_t end = j->eta > 0 && j->eta < j->end ? j->eta : j->end;
                gw_usec_t e = end > now ? end : now + 1; /* overdue: still there */
                for (uint64_t m = j->gpu_mask & present; m; m &= m - 1)
                        emit(&o, __builtin_ctzll(m), s, e, GW_SEG_RUNNING, j->id, j->booking_id, j->label);
        }
        for (size_t i = 0; i < in->n_bookings; i++) {
                const struct gw_booking *b = &in->bookings[i];
                enum gw_segment_kind k =
                        b->state == GW_BOOKING_PENDING_APPROVAL ? GW_SEG_BOOKING_PENDING : GW_SEG_BOOKING;
                if (!shown(b) || b->end <= now || b->start >= hend)
                        continue;
                for (uint64_t m = b->gpu_mask & present; m; m &= m - 1)
                        emit(&o, __builtin_ctzll(m), b->start, b->end, k, b->id, 0, b->label);
        }

        r = predict(in, now, horizon, &o);
        if (r < 0)
                return r;
        if (o.overflow)
                return -ENOBUFS;
        if (o.n > 1)
                qsort(out, o.n, sizeof(*out), cmp_seg);
        *ret_n = o.n;
        return 0;
}

/* ---- The text chart ---- */

struct sb {
        char *buf;
        size_t size, len;
        bool trunc;
};

static void put(struct sb *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct sb *o, const char *fmt, ...) {
        size_t room = o->size - o->len;
        va_list ap;
        int w;

        if (o->trunc)
                return;
        va_start(ap, fmt);
        w = vsnprintf(o->buf + o->len, room, fmt, ap);
        va_end(ap);
        if (w < 0 || (size_t) w >= room) {
                o->trunc = true;
                o->len = o->size - 1;
        } else
                o->len += (size_t) w;
}

/* Letters for items; no 'x' (drained). */
static const char symbols[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwyz0123456789";
#define N_SYMBOLS ((int) sizeof(symbols) - 1)

struct items {
        size_t seg[N_SYMBOLS]; /* first segment of each lettered item */
        int n;
        bool fallback[_GW_SEGMENT_KIND_MAX];
        bool extra_lines; /* a row needed a line under it */
        bool undrawn[N_SYMBOLS]; /* more items in one column than the lines under a row hold */
};

static bool same_item(const struct gw_schedule_segment *a, const struct gw_schedule_segment *b) {
        bool ja = a->kind == GW_SEG_RUNNING || a->kind == GW_SEG_PREDICTED;
        bool jb = b->kind == GW_SEG_RUNNING || b->kind == GW_SEG_PREDICTED;
        return ja == jb && a->id == b->id;
}

static char fallback_symbol(enum gw_segment_kind k) {
        static const char c[_GW_SEGMENT_KIND_MAX] = {
                [GW_SEG_RUNNING] = '#',         [GW_SEG_PREDICTED] = '+', [GW_SEG_BOOKING] = '=',
                [GW_SEG_BOOKING_PENDING] = '?', [GW_SEG_DRAINED] = 'x',
        };
        return c[k];
}

/* The symbol of segment i, giving its item the next letter when it is new. */
static char symbol_of(const struct gw_schedule_segment *segs, size_t i, struct items *it, bool assign) {
        if (segs[i].kind == GW_SEG_DRAINED)
                return 'x';
        for (int k = 0; k < it->n; k++)
                if (same_item(&segs[it->seg[k]], &segs[i]))
                        return symbols[k];
        if (assign && it->n < N_SYMBOLS) {
                it->seg[it->n] = i;
                return symbols[it->n++];
        }
        if (assign)
                it->fallback[segs[i].kind] = true;
        return fallback_symbol(segs[i].kind);
}

static int kind_rank(enum gw_segment_kind k) {
        switch (k) {
        case GW_SEG_RUNNING:
                return 4;
        case GW_SEG_PREDICTED:
                return 3;
        case GW_SEG_DRAINED:
                return 2;
        case GW_SEG_BOOKING:
                return 1;
        default:
                return 0;
        }
}

static bool visible(const struct gw_schedule_segment *s, uint64_t rows, gw_usec_t from, gw_usec_t to) {
        return s->gpu >= 0 && s->gpu < NGPU && (rows & BIT(s->gpu)) && s->end > from && s->start < to && s->kind >= 0 &&
               s->kind < _GW_SEGMENT_KIND_MAX;
}

/* The columns of s in [from, to): [*c0, *c1]. */
static void seg_columns(const struct gw_schedule_segment *s, gw_usec_t from, gw_usec_t to, gw_usec_t column, int cols,
                        int *c0, int *c1) {
        *c0 = (int) ((max_t(s->start, from) - from) / column);
        *c1 = (int) ((min_t(s->end, to) - from - 1) / column);
        if (*c1 >= cols)
                *c1 = cols - 1;
}

static gw_usec_t overlap(const struct gw_schedule_segment *s, gw_usec_t from, gw_usec_t column, int c) {
        gw_usec_t cs = from + (gw_usec_t) c * column;
        return min_t(s->end, add_sat(cs, column)) - max_t(s->start, cs);
}

/* At most this many lines under a GPU's row for what its row has no room for: what is still
 * left is marked in the legend. */
#define EXTRA_LINES 16

struct row {
        char line[GW_SCHEDULE_MAX_COLUMNS + 1];
        bool taken[GW_SCHEDULE_MAX_COLUMNS]; /* given to an item the majority rule hid */
        char extra[EXTRA_LINES][GW_SCHEDULE_MAX_COLUMNS + 1];
        int n_extra;
};

/* Makes s, which the majority rule left out of the row, visible: it takes the cell where it
 * covers most among those whose item keeps another cell; else it goes on a line under the
 * row.  Without this a job of ten minutes beside a booking was in the legend and nowhere in
 * the drawing. */
static bool show_hidden(const struct gw_schedule_segment *s, char sym, gw_usec_t from, gw_usec_t to, gw_usec_t column,
                        int cols, struct row *r) {
        int c0, c1, best = -1, count[256] = { 0 };
        gw_usec_t best_ov = 0;

        for (int c = 0; c < cols; c++)
                count[(unsigned char) r->line[c]]++;
        seg_columns(s, from, to, column, cols, &c0, &c1);
        for (int c = c0; c <= c1; c++) {
                gw_usec_t ov = overlap(s, from, column, c);
                bool spare = r->line[c] == '.' || (!r->taken[c] && count[(unsigned char) r->line[c]] > 1);
                if (spare && (best < 0 || ov > best_ov))
                        best = c, best_ov = ov;
        }
        if (best >= 0) {
                r->line[best] = sym;
                r->taken[best] = true;
                return true;
        }
        for (int k = 0; k < EXTRA_LINES; k++) {
                if (k == r->n_extra) {
                        memset(r->extra[k], ' ', (size_t) cols);
                        r->extra[k][cols] = '\0';
                        r->n_extra++;
                }
                for (int c = c0; c <= c1; c++)
                        if (r->extra[k][c] == ' ') {
                                r->extra[k][c] = sym;
                                return true;
                        }
        }
        return false;
}

static void render_row(const struct gw_schedule_segment *segs, size_t n, int gpu, gw_usec_t from, gw_usec_t to,
                       gw_usec_t column, int cols, struct items *it, struct sb *o) {
        struct row r;
        gw_usec_t best[GW_SCHEDULE_MAX_COLUMNS];
        int rank[GW_SCHEDULE_MAX_COLUMNS];

        memset(r.line, '.', (size_t) cols);
        r.line[cols] = '\0';
        r.n_extra = 0;
        for (int c = 0; c < cols; c++)
                best[c] = 0, rank[c] = -1, r.taken[c] = false;
        for (size_t i = 0; i < n; i++) {
                const struct gw_schedule_segment *s = &segs[i];
                if (s->gpu != gpu || !visible(s, BIT(gpu), from, to))
                        continue;
                int c0, c1;
                seg_columns(s, from, to, column, cols, &c0, &c1);
                char sym = symbol_of(segs, i, it, false);
                for (int c = c0; c <= c1; c++) {
                        gw_usec_t ov = overlap(s, from, column, c);
                        int rk = kind_rank(s->kind);
                        if (ov > best[c] || (ov == best[c] && rk > rank[c])) {
                                best[c] = ov, rank[c] = rk;
                                r.line[c] = sym;
                        }
                }
        }
        /* Every item of the legend is somewhere in the drawing: a cell shows one item, and one
         * that covers less of it than another is drawn all the same. */
        for (size_t i = 0; i < n; i++) {
                const struct gw_schedule_segment *s = &segs[i];
                if (s->gpu != gpu || !visible(s, BIT(gpu), from, to))
                        continue;
                char sym = symbol_of(segs, i, it, false);
                bool shown = memchr(r.line, sym, (size_t) cols) != NULL;
                for (int k = 0; k < r.n_extra && !shown; k++)
                        shown = memchr(r.extra[k], sym, (size_t) cols) != NULL;
                const char *letter = strchr(symbols, sym);
                if (!shown && !show_hidden(s, sym, from, to, column, cols, &r) && letter)
                        it->undrawn[letter - symbols] = true;
        }
        put(o, "GPU %-3d %s\n", gpu, r.line);
        for (int k = 0; k < r.n_extra; k++) {
                for (int c = cols - 1; c >= 0 && r.extra[k][c] == ' '; c--)
                        r.extra[k][c] = '\0';
                put(o, "        %s\n", r.extra[k]);
        }
        it->extra_lines = it->extra_lines || r.n_extra > 0;
}

static void render_header(gw_usec_t from, gw_usec_t column, int cols, gw_time_format_fn fmt, void *userdata,
                          struct sb *o) {
        char labels[GW_SCHEDULE_MAX_COLUMNS + 1], ticks[GW_SCHEDULE_MAX_COLUMNS + 1];
        int cursor = 0;

        memset(labels, ' ', (size_t) cols);
        memset(ticks, ' ', (size_t) cols);
        for (int c = 0; c < cols; c += 6) {
                char lab[64] = "";
                if (c < cursor)
                        continue;
                fmt(from + (gw_usec_t) c * column, GW_USEC_INFINITY, lab, sizeof(lab), userdata);
                int len = (int) strnlen(lab, sizeof(lab));
                if (len == 0 || c + len > cols)
                        continue;
                memcpy(labels + c, lab, (size_t) len);
                ticks[c] = '|';
                cursor = c + len + 1;
        }
        labels[cols] = ticks[cols] = '\0';
        /* Trailing blanks are noise in a terminal and in test expectations. */
        for (int c = cols - 1; c >= 0 && labels[c] == ' '; c--)
                labels[c] = '\0';
        for (int c = cols - 1; c >= 0 && ticks[c] == ' '; c--)
                ticks[c] = '\0';
        put(o, "        %s\n        %s\n", labels, ticks);
}

static void render_legend(const struct gw_schedule_segment *segs, const struct items *it, gw_time_format_fn fmt,
                          void *userdata, struct sb *o) {
        static const char *const other[_GW_SEGMENT_KIND_MAX] = {
                [GW_SEG_RUNNING] = "other running jobs",
                [GW_SEG_PREDICTED] = "other predicted jobs",
                [GW_SEG_BOOKING] = "other bookings",
                [GW_SEG_BOOKING_PENDING] = "other bookings awaiting approval",
        };

        put(o, "Legend: . free  x drained\n");
        for (int k = 0; k < it->n; k++) {
                const struct gw_schedule_segment *s = &segs[it->seg[k]];
                char a[64] = "", b[64] = "", label[sizeof(s->label)];
                const char *sep = s->label[0] ? "  " : "";
                const char *mark = it->undrawn[k] ? "  (not drawn: too many in one column)" : "";

                /* A name may carry ESC sequences or U+202E: the chart is read on terminals. */
                memcpy(label, s->label, sizeof(label));
                (void) gw_text_neutralize(label);

                fmt(s->start, GW_USEC_INFINITY, a, sizeof(a), userdata);
                fmt(s->end, s->kind == GW_SEG_RUNNING ? GW_USEC_INFINITY : s->start, b, sizeof(b), userdata);
                switch (s->kind) {
                case GW_SEG_RUNNING:
                        put(o, "  %c  job %lld  running until %s%s%s%s\n", symbols[k], (long long) s->id, b, sep, label,
                            mark);
                        break;
                case GW_SEG_PREDICTED:
                        put(o, "  %c  job %lld  predicted %s-%s%s%s%s\n", symbols[k], (long long) s->id, a, b, sep,
                            label, mark);
                        break;
                default:
                        put(o, "  %c  booking %lld  %s-%s%s%s%s%s\n", symbols[k], (long long) s->id, a, b,
                            s->kind == GW_SEG_BOOKING_PENDING ? " (awaiting approval)" : "", sep, label, mark);
                        break;
                }
        }
        for (int k = 0; k < _GW_SEGMENT_KIND_MAX; k++)
                if (it->fallback[k] && other[k])
                        put(o, "  %c  %s\n", fallback_symbol((enum gw_segment_kind) k), other[k]);
        if (it->extra_lines)
                put(o, "  A line under a GPU's row shows what shares a column with a longer item on that GPU.\n");
}

int gw_schedule_render_text(const struct gw_schedule_segment *segs, size_t n, uint64_t rows, gw_usec_t from,
                            gw_usec_t to, gw_usec_t column, gw_time_format_fn fmt, void *userdata, char *buf,
                            size_t size) {
        struct sb o = { .buf = buf, .size = size };
        struct items it = { .n = 0 };
        gw_usec_t cols;

        if ((n && !segs) || !buf || size == 0 || column <= 0 || to <= from)
                return -EINVAL;
        cols = (to - from + column - 1) / column;
        if (cols > GW_SCHEDULE_MAX_COLUMNS)
                return -EINVAL;
        if (!fmt)
                fmt = gw_calendar_format_utc;
        buf[0] = '\0';

        /* Letters go to items in the order the chart meets them: by GPU, then time. */
        for (size_t i = 0; i < n; i++)
                if (visible(&segs[i], rows, from, to))
                        (void) symbol_of(segs, i, &it, true);

        render_header(from, column, (int) cols, fmt, userdata, &o);
        for (uint64_t m = rows; m; m &= m - 1)
                render_row(segs, n, __builtin_ctzll(m), from, to, column, (int) cols, &it, &o);
        render_legend(segs, &it, fmt, userdata, &o);
        return o.trunc ? -ENOBUFS : (int) o.len;
}
