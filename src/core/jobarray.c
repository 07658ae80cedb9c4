#include "core/jobarray.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

/* Indexes gathered before repeats are folded: twice the limit, so that a list with repeats
 * is judged by its distinct tasks, yet a huge range stops after a bounded amount of work. */
#define GATHER_CAP (2 * GW_ARRAY_MAX_TASKS)
#define ITEM_SHOWN 40 /* characters of the item at fault quoted in a message */

struct gather {
        uint32_t *v;
        size_t n;
};

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return (x > y) - (x < y);
}

static void fold_repeats(struct gather *g) {
        size_t k = 0;

        qsort(g->v, g->n, sizeof(*g->v), cmp_u32);
        for (size_t i = 0; i < g->n; i++)
                if (k == 0 || g->v[k - 1] != g->v[i])
                        g->v[k++] = g->v[i];
        g->n = k;
}

/* -E2BIG once the distinct tasks are more than the limit. */
static int gather_push(struct gather *g, uint32_t id) {
        if (g->n == GATHER_CAP) {
                fold_repeats(g);
                if (g->n > GW_ARRAY_MAX_TASKS)
                        return -E2BIG;
        }
        g->v[g->n++] = id;
        return 0;
}

/* Digits from *p up to a character not a digit; *p moves past them.  -EINVAL for none,
 * -ERANGE above max (without overflowing: at most 8 digits are read). */
static int read_number(const char **p, const char *end, uint32_t max, uint32_t *ret) {
        uint32_t v = 0;
        int digits = 0;

        for (; *p < end && **p >= '0' && **p <= '9'; (*p)++) {
                if (++digits > 8)
                        return -ERANGE;
                v = v * 10 + (uint32_t) (**p - '0');
        }
        if (digits == 0)
                return -EINVAL;
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

static int fail(char *msg, size_t size, const char *field, const char *item, size_t len, const char *why) {
        if (msg && size)
                snprintf(msg, size, "%s: '%.*s'%s: %s", field, (int) (len > ITEM_SHOWN ? ITEM_SHOWN : len), item,
                         len > ITEM_SHOWN ? "..." : "", why);
        return -EINVAL;
}

#define RANGE_WHY "is not a task index: indexes are whole numbers from 0 to 999999"

/* One ITEM, [p, end), into g. */
static int parse_item(const char *p, const char *end, const char *field, struct gather *g, char *msg, size_t size) {
        const char *item = p;
        size_t len = (size_t) (end - p);
        uint32_t lo, hi, step = 1;

        if (p == end)
                return fail(msg, size, field, item, len, "an empty item (two commas, or a comma at an end)");
        if (read_number(&p, end, GW_ARRAY_MAX_INDEX, &lo) < 0)
                return fail(msg, size, field, item, len, RANGE_WHY);
        hi = lo;
        if (p < end && *p == '-') {
                p++;
                if (read_number(&p, end, GW_ARRAY_MAX_INDEX, &hi) < 0)
                        return fail(msg, size, field, item, len, "the end of the range " RANGE_WHY);
                if (hi < lo)
                        return fail(msg, size, field, item, len, "the range ends before it starts");
                if (p < end && *p == ':') {
                        p++;
                        if (read_number(&p, end, GW_ARRAY_MAX_INDEX, &step) < 0 || step == 0)
                                return fail(msg, size, field, item, len,
                                            "the step after ':' must be a whole number from 1 to 999999");
                }
        }
        if (p != end)
                return fail(msg, size, field, item, len,
                            "is not INDEX, INDEX-INDEX or INDEX-INDEX:STEP (examples: 7, 0-49, 0-99:10)");
        for (uint64_t id = lo; id <= hi; id += step)
                if (gather_push(g, (uint32_t) id) < 0)
                        return -E2BIG;
        return 0;
}

static int parse_limit(const char *p, const char *field, uint32_t *ret, char *msg, size_t size) {
        const char *s = p;
        uint32_t v;

        if (read_number(&p, p + strlen(p), GW_ARRAY_MAX_TASKS, &v) < 0 || *p || v == 0)
                return fail(msg, size, field, s - 1, strlen(s) + 1,
                            "the limit of tasks running at once after '%' must be a whole number from 1 to 10000");
        *ret = v;
        return 0;
}

int gw_array_parse(const char *spec, const char *field, struct gw_array *ret, char *msg, size_t msg_size) {
        uint32_t limit = 0;
        int r = 0;

        if (!field)
                field = "array";
        if (!spec || !ret)
                return -EINVAL;
        const char *pct = strchr(spec, '%'), *list_end = pct ? pct : spec + strlen(spec);
        if (list_end == spec)
                return fail(msg, msg_size, field, spec, strlen(spec),
                            "no task indexes (examples: 0-49, 1,3,5-9, 0-99:10%8)");
        if (pct && (r = parse_limit(pct + 1, field, &limit, msg, msg_size)) < 0)
                return r;

        _cleanup_free_ uint32_t *v = gw_xmalloc(GATHER_CAP * sizeof(uint32_t));
        struct gather g = { v, 0 };
        for (const char *p = spec; p <= list_end;) {
                const char *comma = memchr(p, ',', (size_t) (list_end - p));
                const char *end = comma ? comma : list_end;
                r = parse_item(p, end, field, &g, msg, msg_size);
                if (r == -E2BIG)
                        break;
                if (r < 0)
                        return r;
                p = end + 1;
        }
        if (r != -E2BIG)
                fold_repeats(&g);
        if (r == -E2BIG || g.n > GW_ARRAY_MAX_TASKS) {
                if (msg && msg_size)
                        snprintf(msg, msg_size, "%s: '%.*s%s' makes more than %d tasks", field, ITEM_SHOWN, spec,
                                 strlen(spec) > ITEM_SHOWN ? "..." : "", GW_ARRAY_MAX_TASKS);
                return -EINVAL;
        }
        ret->ids = gw_xrealloc(TAKE_PTR(v), g.n * sizeof(uint32_t));
        ret->n = g.n;
        ret->max_running = limit;
        return 0;
}

void gw_array_done(struct gw_array *a) {
        if (!a)
                return;
        free(a->ids);
        *a = (struct gw_array){ 0 };
}

/* Appends to buf at *len; false (and nothing written) when it does not fit in size. */
static bool put(char *buf, size_t size, size_t *len, const char *piece) {
        size_t n = strlen(piece);
        if (*len + n + 1 > size)
                return false;
        memcpy(buf + *len, piece, n + 1);
        *len += n;
        return true;
}

/* Cuts the line at the last whole item that leaves room for "...]". */
static int cut(char *buf, size_t size, size_t len) {
        if (size < 8) {
                if (size)
                        buf[0] = '\0';
                return -ENOBUFS;
        }
        size_t end = len;
        while (len > 0 && len + 4 >= size)
                len--;
        /* Back to the end of an item: before a comma, after the bracket, or all there was. */
        while (len > 0 && len != end && buf[len] != ',' && buf[len - 1] != '[')
                len--;
        memcpy(buf + len, "...]", 5);
        return -ENOBUFS;
}

int gw_array_fold(int64_t job_id, const uint32_t *ids, size_t n, uint32_t max_running, char *buf, size_t size) {
        char piece[48];
        size_t len = 0;

        if (!ids || n == 0 || !buf)
                return -EINVAL;
        for (size_t i = 1; i < n; i++)
                if (ids[i] <= ids[i - 1])
                        return -EINVAL;
        if (size)
                buf[0] = '\0';
        if (n == 1 && max_running == 0) {
                snprintf(piece, sizeof(piece), "%" PRId64 "_%" PRIu32, job_id, ids[0]);
                return put(buf, size, &len, piece) ? (int) len : -ENOBUFS;
        }
        snprintf(piece, sizeof(piece), "%" PRId64 "_[", job_id);
        if (!put(buf, size, &len, piece))
                return cut(buf, size, 0);
        for (size_t i = 0; i < n;) {
                size_t j = i;
                while (j + 1 < n && ids[j + 1] == ids[j] + 1)
                        j++;
                if (j == i)
                        snprintf(piece, sizeof(piece), "%s%" PRIu32, i ? "," : "", ids[i]);
                else
                        snprintf(piece, sizeof(piece), "%s%" PRIu32 "-%" PRIu32, i ? "," : "", ids[i], ids[j]);
                if (!put(buf, size, &len, piece))
                        return cut(buf, size, len);
                i = j + 1;
        }
        if (max_running)
                snprintf(piece, sizeof(piece), "%%%" PRIu32 "]", max_running);
        else
                snprintf(piece, sizeof(piece), "]");
        if (!put(buf, size, &len, piece))
                return cut(buf, size, len);
        return (int) len;
}
