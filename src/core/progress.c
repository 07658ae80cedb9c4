#include "core/progress.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "core/yolo_run.h"

/* ---- small text helpers (text is never NUL-terminated here) ---- */

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

static void trim(const char **s, size_t *n) {
        while (*n > 0 && is_blank(**s)) {
                (*s)++;
                (*n)--;
        }
        while (*n > 0 && is_blank((*s)[*n - 1]))
                (*n)--;
}

static bool starts_with(const char *s, size_t n, const char *lit) {
        size_t l = strlen(lit);
        return n >= l && memcmp(s, lit, l) == 0;
}

/* The next complete line at *pos (without its "\n" or "\r\n").  A last line without '\n' is
 * not returned: the writer (Ultralytics appends a row per epoch) may be in the middle of it,
 * and half a row would read as a wrong loss or a wrong epoch. */
static bool next_line(const char **pos, const char *end, const char **ret_s, size_t *ret_n) {
        const char *nl;

        if (*pos >= end)
                return false;
        nl = memchr(*pos, '\n', (size_t) (end - *pos));
        if (!nl)
                return false;
        *ret_s = *pos;
        *ret_n = (size_t) (nl - *pos);
        if (*ret_n > 0 && (*ret_s)[*ret_n - 1] == '\r')
                (*ret_n)--;
        *pos = nl + 1;
        return true;
}

/* The next field of a line split on any byte of seps; false at the end of the line. */
static bool next_field(const char **pos, const char *end, const char *seps, const char **ret_s, size_t *ret_n) {
        const char *p = *pos;

        if (!p)
                return false;
        /* strchr() finds the terminator too: a NUL byte in the text is not a separator. */
        while (p < end && (*p == '\0' || !strchr(seps, *p)))
                p++;
        *ret_s = *pos;
        *ret_n = (size_t) (p - *pos);
        *pos = p < end ? p + 1 : NULL; /* NULL: the field just returned was the last */
        trim(ret_s, ret_n);
        return true;
}

/* A number field: NAN when empty or not a number.  Copied because strtod wants a NUL. */
static double parse_double(const char *s, size_t n) {
        char buf[64];
        char *end;
        double v;

        trim(&s, &n);
        /* An embedded NUL would end the copy early and let "12\0junk" read as 12. */
        if (n == 0 || n >= sizeof(buf) || memchr(s, '\0', n))
                return NAN;
        memcpy(buf, s, n);
        buf[n] = '\0';
        v = strtod(buf, &end);
        return *end == '\0' ? v : NAN;
}

static int parse_long(const char *s, size_t n, long *ret) {
        char buf[32];
        long long v;
        int r;

        trim(&s, &n);
        if (n == 0 || n >= sizeof(buf) || memchr(s, '\0', n))
                return -EINVAL;
        memcpy(buf, s, n);
        buf[n] = '\0';
        r = gw_parse_int(buf, LONG_MIN, LONG_MAX, &v);
        if (r < 0)
                return r;
        *ret = (long) v;
        return 0;
}

/* ---- results.csv ---- */

static enum gw_results_col_kind col_kind(const char *name) {
        const char *base = strrchr(name, '/');

        if (strcmp(name, "epoch") == 0)
                return GW_RESULTS_COL_EPOCH;
        if (strncmp(name, "train/", 6) == 0 || strncmp(name, "val/", 4) == 0)
                return GW_RESULTS_COL_LOSS;
        base = base ? base + 1 : name;
        /* 50-95 first: "mAP50-95(B)" also starts with "mAP50". */
        if (strncmp(base, "mAP50-95", 8) == 0 || strcmp(base, "mAP_0.5:0.95") == 0)
                return GW_RESULTS_COL_MAP50_95;
        if (strcmp(base, "mAP50") == 0 || strncmp(base, "mAP50(", 6) == 0 || strcmp(base, "mAP_0.5") == 0)
                return GW_RESULTS_COL_MAP50;
        /* ClassifyMetrics.keys: a classify run has no mAP. */
        if (strcmp(base, "accuracy_top1") == 0)
                return GW_RESULTS_COL_TOP1;
        if (strcmp(base, "accuracy_top5") == 0)
                return GW_RESULTS_COL_TOP5;
        return GW_RESULTS_COL_OTHER;
}

static int parse_header(const char *s, size_t n, struct gw_results *r) {
        const char *pos = s, *f;
        size_t fn;
        bool have_epoch = false;

        r->map50_col = r->map50_95_col = -1;
        while (next_field(&pos, s + n, ",", &f, &fn)) {
                struct gw_results_col *c;

                if (r->n_cols == GW_RESULTS_MAX_COLS)
                        break;
                c = &r->cols[r->n_cols];
                if (fn >= sizeof(c->name))
                        fn = sizeof(c->name) - 1;
                memcpy(c->name, f, fn);
                c->name[fn] = '\0';
                c->kind = col_kind(c->name);
                if (c->kind == GW_RESULTS_COL_EPOCH && !have_epoch) {
                        r->epoch_col = r->n_cols;
                        have_epoch = true;
                } else if (c->kind == GW_RESULTS_COL_EPOCH) {
                        c->kind = GW_RESULTS_COL_OTHER; /* a second "epoch" is not the key */
                } else if (c->kind == GW_RESULTS_COL_LOSS) {
                        r->loss_cols[r->n_loss_cols++] = r->n_cols;
                } else if (c->kind == GW_RESULTS_COL_MAP50 && r->map50_col < 0) {
                        r->map50_col = (int) r->n_cols;
                } else if (c->kind == GW_RESULTS_COL_MAP50_95 && r->map50_95_col < 0) {
                        r->map50_95_col = (int) r->n_cols;
                }
                r->n_cols++;
        }
        return have_epoch ? 0 : -EBADMSG;
}

/* Appends a row, first dropping the rows it supersedes (see struct gw_results). */
static int add_row(struct gw_results *r, size_t *cap, long epoch, const double *vals) {
        while (r->n_rows > 0 && r->epochs[r->n_rows - 1] >= epoch)
                r->n_rows--;
        if (r->n_rows == GW_RESULTS_MAX_ROWS)
                return -E2BIG;
        if (r->n_rows == *cap) {
                size_t ncap = *cap ? *cap * 2 : 64;
                if (ncap > GW_RESULTS_MAX_ROWS)
                        ncap = GW_RESULTS_MAX_ROWS;
                r->epochs = gw_xrealloc(r->epochs, ncap * sizeof(*r->epochs));
                r->values = gw_xrealloc(r->values, ncap * r->n_cols * sizeof(*r->values));
                *cap = ncap;
        }
        r->epochs[r->n_rows] = epoch;
        memcpy(&r->values[r->n_rows * r->n_cols], vals, r->n_cols * sizeof(*vals));
        r->n_rows++;
        return 0;
}

static int parse_row(struct gw_results *r, size_t *cap, const char *s, size_t n) {
        double vals[GW_RESULTS_MAX_COLS];
        const char *pos = s, *f;
        size_t fn, i = 0;
        double e;

        for (size_t k = 0; k < r->n_cols; k++)
                vals[k] = NAN;
        while (i < r->n_cols && next_field(&pos, s + n, ",", &f, &fn))
                vals[i++] = parse_double(f, fn);
        e = vals[r->epoch_col];
        /* A repeated header, a torn line or junk: not a row.  Some writers (pandas) print the
         * epoch as "3.0", hence a double that must be integral. */
        if (!isfinite(e) || e < 0 || e > 1e9 || e != floor(e)) {
                r->n_skipped++;
                return 0;
        }
        r->n_lines++;
        return add_row(r, cap, (long) e, vals);
}

int gw_results_parse(const char *text, size_t len, struct gw_results *ret) {
        struct gw_results r = { 0 };
        const char *pos = text, *end, *s;
        size_t n, cap = 0;
        bool have_header = false;
        int err;

        if (!ret || (!text && len))
                return -EINVAL;
        end = text + len;
        while (next_line(&pos, end, &s, &n)) {
                trim(&s, &n);
                if (n == 0)
                        continue;
                if (!have_header) {
                        err = parse_header(s, n, &r);
                        if (err < 0)
                                return err;
                        have_header = true;
                        continue;
                }
                err = parse_row(&r, &cap, s, n);
                if (err < 0) {
                        gw_results_free(&r);
                        return err;
                }
        }
        if (!have_header)
                return -ENODATA;
        r.last_epoch = r.n_rows ? r.epochs[r.n_rows - 1] : -1;
        r.zero_based = r.n_rows && r.epochs[0] == 0;
        *ret = r;
        return 0;
}

void gw_results_free(struct gw_results *r) {
        if (!r)
                return;
        free(r->epochs);
        free(r->values);
        *r = (struct gw_results){ 0 };
        r->map50_col = r->map50_95_col = -1;
        r->last_epoch = -1;
}

long gw_results_epoch1(const struct gw_results *r, size_t row) {
        if (!r || row >= r->n_rows)
                return -1;
        return r->zero_based ? r->epochs[row] + 1 : r->epochs[row];
}

/* The 1-based epoch of the line s (n bytes, complete), or -1 when it has none. */
static long line_epoch1(const struct gw_results *r, const char *s, size_t n) {
        const char *pos = s, *f;
        size_t fn;

        for (size_t i = 0; next_field(&pos, s + n, ",", &f, &fn); i++) {
                if (i < r->epoch_col)
                        continue;
                double e = parse_double(f, fn);
                if (!isfinite(e) || e < 0 || e > 1e9 || e != floor(e))
                        return -1;
                return (long) e + (r->zero_based ? 1 : 0);
        }
        return -1;
}

static void put_bytes(char *buf, size_t *len, const char *s, size_t n) {
        memcpy(buf + *len, s, n);
        *len += n;
}

int gw_results_split(const char *text, size_t len, long keep, struct gw_results_split *ret) {
        struct gw_results r;
        int err = gw_results_parse(text, len, &r);

        if (err < 0)
                return err;
        struct gw_results_split out = { .kept = gw_xmalloc(len + 1), .aside = gw_xmalloc(len + 2) };
        const char *pos = text, *end = text + len;
        bool header = false;

        while (pos < end) {
                const char *nl = memchr(pos, '\n', (size_t) (end - pos));
                size_t whole = nl ? (size_t) (nl - pos) + 1 : (size_t) (end - pos);
                const char *s = pos;
                size_t n = nl ? whole - 1 : whole;
                trim(&s, &n);
                bool row = header && n > 0, aside = row && (!nl || line_epoch1(&r, s, n) > keep);
                if (!header && n > 0 && nl) {
                        header = true;
                        put_bytes(out.aside, &out.aside_len, pos, whole);
                }
                if (aside) {
                        put_bytes(out.aside, &out.aside_len, pos, whole);
                        if (!nl)
                                put_bytes(out.aside, &out.aside_len, "\n", 1);
                        out.n_aside++;
                } else {
                        put_bytes(out.kept, &out.kept_len, pos, whole);
                }
                pos += whole;
        }
        gw_results_free(&r);
        *ret = out;
        return 0;
}

void gw_results_split_free(struct gw_results_split *s) {
        if (!s)
                return;
        free(s->kept);
        free(s->aside);
        *s = (struct gw_results_split){ 0 };
}

double gw_results_value(const struct gw_results *r, size_t row, size_t col) {
        if (!r || row >= r->n_rows || col >= r->n_cols)
                return NAN;
        return r->values[row * r->n_cols + col];
}

size_t gw_results_losses(const struct gw_results *r, size_t row, double *out, size_t max) {
        size_t k = 0;

        if (!r || row >= r->n_rows)
                return 0;
        for (; k < r->n_loss_cols && k < max; k++)
                out[k] = gw_results_value(r, row, r->loss_cols[k]);
        return k;
}

double gw_results_map50(const struct gw_results *r, size_t row) {
        if (!r || r->map50_col < 0)
                return NAN;
        return gw_results_value(r, row, (size_t) r->map50_col);
}

double gw_results_map50_95(const struct gw_results *r, size_t row) {
        if (!r || r->map50_95_col < 0)
                return NAN;
        return gw_results_value(r, row, (size_t) r->map50_95_col);
}

/* The metric group of a mAP column: what follows "mAP50-95" or "mAP50" in its name ("(B)",
 * "(M)", "(P)"), "" for YOLOv5's mAP_0.5 and mAP_0.5:0.95. */
static const char *map_group(const struct gw_results_col *c) {
        const char *base = strrchr(c->name, '/');
        size_t l = c->kind == GW_RESULTS_COL_MAP50_95 ? 8 : 5;

        base = base ? base + 1 : c->name;
        return strncmp(base, c->kind == GW_RESULTS_COL_MAP50_95 ? "mAP50-95" : "mAP50", l) == 0 ? base + l : "";
}

/* The value of the first column of kind in row; *ret_have tells whether there is one. */
static double first_of_kind(const struct gw_results *r, size_t row, enum gw_results_col_kind kind, const char *group,
                            bool *ret_have) {
        for (size_t i = 0; i < r->n_cols; i++)
                if (r->cols[i].kind == kind && (!group || strcmp(map_group(&r->cols[i]), group) == 0)) {
                        *ret_have = true;
                        return gw_results_value(r, row, i);
                }
        *ret_have = false;
        return NAN;
}

double gw_results_fitness(const struct gw_results *r, size_t row) {
        double sum = 0, top1, top5;
        bool groups = false, have1, have5;

        if (!r || row >= r->n_rows)
                return NAN;
        for (size_t i = 0; i < r->n_cols; i++) {
                const char *g;
                double m, m50;
                bool have50;

                if (r->cols[i].kind != GW_RESULTS_COL_MAP50_95)
                        continue;
                g = map_group(&r->cols[i]);
                m = gw_results_value(r, row, i);
                m50 = first_of_kind(r, row, GW_RESULTS_COL_MAP50, g, &have50);
                if (isnan(m) || (have50 && isnan(m50)))
                        return NAN;
                sum += have50 ? 0.1 * m50 + 0.9 * m : m;
                groups = true;
        }
        if (groups)
                return sum;
        top1 = first_of_kind(r, row, GW_RESULTS_COL_TOP1, NULL, &have1);
        top5 = first_of_kind(r, row, GW_RESULTS_COL_TOP5, NULL, &have5);
        if (!have1)
                return NAN;
        return have5 ? (top1 + top5) / 2 : top1;
}

/* ---- planned number of epochs ---- */

/* The value of the last top-level "key: value" line (quotes and a comment removed) in
 * *ret_s, *ret_n; false when there is none. */
static bool yaml_value(const char *text, size_t len, const char *key, const char **ret_s, size_t *ret_n) {
        const char *pos = text, *s;
        size_t n, kl = strlen(key);
        bool found = false;

        while (next_line(&pos, text + len, &s, &n)) {
                const char *val;
                size_t vn;

                /* Top level only: an indented "epochs:" belongs to a nested mapping. */
                if (n <= kl || memcmp(s, key, kl) != 0)
                        continue;
                val = s + kl;
                vn = n - kl;
                trim(&val, &vn);
                if (vn == 0 || *val != ':')
                        continue;
                val++;
                vn--;
                for (size_t i = 0; i < vn; i++) {
                        /* A comment starts at a '#' that follows a blank (YAML's rule). */
                        if (val[i] == '#' && (i == 0 || is_blank(val[i - 1]))) {
                                vn = i;
                                break;
                        }
                }
                trim(&val, &vn);
                if (vn >= 2 && (val[0] == '\'' || val[0] == '"') && val[vn - 1] == val[0]) {
                        val++;
                        vn -= 2;
                }
                *ret_s = val;
                *ret_n = vn;
                found = true;
        }
        return found;
}

int gw_yaml_int(const char *text, size_t len, const char *key, long *ret) {
        const char *val;
        size_t vn;
        long v;
        int r;

        if (!key || !ret || (!text && len))
                return -EINVAL;
        if (!yaml_value(text, len, key, &val, &vn))
                return -ENOENT;
        r = parse_long(val, vn, &v);
        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

/* Ultralytics trains for `time` hours when it is a positive number ("if self.args.time:"). */
static bool timed(const char *s, size_t n) {
        double h = parse_double(s, n);

        return isfinite(h) && h > 0;
}

int gw_args_yaml_epochs(const char *text, size_t len, long *ret) {
        const char *val;
        size_t vn;

        if (!ret || (!text && len))
                return -EINVAL;
        if (yaml_value(text, len, "time", &val, &vn) && timed(val, vn))
                return -ENODATA;
        return gw_yaml_int(text, len, "epochs", ret);
}

int gw_argv_epochs(const char *const *argv, size_t argc, long *ret) {
        int found = -ENOENT;
        long v = 0;

        if (!ret || (!argv && argc))
                return -EINVAL;
        for (size_t i = 1; i < argc; i++) {
                const char *a = argv[i], *val = NULL;

                if (!a)
                        continue;
                if (strncmp(a, "time=", 5) == 0 && timed(a + 5, strlen(a + 5)))
                        return -ENODATA;
                if (strncmp(a, "epochs=", 7) == 0)
                        val = a + 7;
                else if (strncmp(a, "--epochs=", 9) == 0)
                        val = a + 9;
                else if (strcmp(a, "--epochs") == 0 && i + 1 < argc && argv[i + 1])
                        val = argv[++i];
                if (val)
                        found = parse_long(val, strlen(val), &v);
        }
        if (found < 0)
                return found;
        *ret = v;
        return 0;
}

/* ---- which results.csv is a job's own ---- */

bool gw_run_is_training(const char *const *argv, size_t argc, bool yolo) {
        static const char *const keys[] = { "epochs", "project", "name", "resume" };

        if (yolo)
                return true;
        if (!argv)
                return false;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
                if (gw_yolo_arg(argv, argc, keys[k], NULL))
                        return true;
        /* `yolo train ...`, `yolo detect train ...`: the CLI in its training mode. */
        const char *prog = argc && argv[0] ? strrchr(argv[0], '/') : NULL;
        if (argc && argv[0] && !strcmp(prog ? prog + 1 : argv[0], "yolo") && gw_yolo_has_word(argv, argc, "train"))
                return true;
        if (gw_yolo_has_word(argv, argc, "resume"))
                return true;
        /* `python3 train.py`, `torchrun scripts/train_net.py`: Ultralytics' Python API writes
         * the same run with no word of it on the command line. */
        for (size_t i = 0; i < argc; i++) {
                const char *w = argv[i], *slash = w ? strrchr(w, '/') : NULL, *dot = w ? strrchr(w, '.') : NULL;
                bool program = w && (i == 0 || (dot && (!strcmp(dot, ".py") || !strcmp(dot, ".sh"))));
                if (program && strcasestr(slash ? slash + 1 : w, "train"))
                        return true;
        }
        return false;
}

bool gw_run_reuses_dir(const char *const *argv, size_t argc) {
        bool bare;
        const char *v;

        if (!argv)
                return false;
        if (gw_yolo_has_word(argv, argc, "--exist-ok"))
                return true;
        v = gw_yolo_arg(argv, argc, "exist_ok", &bare);
        /* "--exist_ok" alone is a flag; a value is Ultralytics' boolean. */
        return v && (bare || !strcasecmp(v, "true") || !strcmp(v, "1"));
}

bool gw_run_results_fresh(gw_usec_t since, gw_usec_t mtime, gw_usec_t btime, bool reused) {
        const gw_usec_t slack = GW_USEC_PER_SEC;

        if (mtime + slack < since)
                return false;
        return reused || btime <= 0 || btime + slack >= since;
}

/* ---- a declared progress file ---- */

/* One "epoch=N total=M" line: true when it holds an epoch. */
static bool parse_kv_line(const char *s, size_t n, struct gw_progress *p) {
        const char *pos = s, *f;
        size_t fn;
        struct gw_progress q = { .epoch = -1, .total = -1 };
        long v;

        while (next_field(&pos, s + n, " \t,", &f, &fn)) {
                if (starts_with(f, fn, "epoch=") && parse_long(f + 6, fn - 6, &v) == 0 && v >= 0)
                        q.epoch = v;
                else if (starts_with(f, fn, "total=") && parse_long(f + 6, fn - 6, &v) == 0 && v >= 0)
                        q.total = v;
        }
        if (q.epoch < 0)
                return false;
        *p = q;
        return true;
}

int gw_progress_parse(const char *text, size_t len, struct gw_progress *ret) {
        struct gw_progress p = { .epoch = -1, .total = -1 };
        struct gw_results r;
        const char *pos = text, *s;
        size_t n;
        bool kv = false;
        int err;

        if (!ret || (!text && len))
                return -EINVAL;
        while (next_line(&pos, text + len, &s, &n))
                kv |= parse_kv_line(s, n, &p);
        if (kv) {
                *ret = p;
                return 0;
        }
        err = gw_results_parse(text, len, &r);
        if (err < 0)
                return -ENODATA;
        p.epoch = r.last_epoch;
        gw_results_free(&r);
        if (p.epoch < 0)
                return -ENODATA;
        *ret = p;
        return 0;
}
