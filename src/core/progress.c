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

/* ---- small text helpers (text is never NUL-terminated here) ---- */

static bool is_blank(char c) {
        return c == ' ' || c == '\t' || c == '\r';
}

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
static bool next_field(const char **pos, const char *end, const char *seps, const char **ret_s,
                       size_t *ret_n) {
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
        if (strcmp(base, "mAP50") == 0 || strncmp(base, "mAP50(", 6) == 0 ||
            strcmp(base, "mAP_0.5") == 0)
                return GW_RESULTS_COL_MAP50;
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
        struct gw_results r = {0};
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
        *r = (struct gw_results){0};
        r->map50_col = r->map50_95_col = -1;
        r->last_epoch = -1;
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

/* ---- planned number of epochs ---- */

int gw_yaml_int(const char *text, size_t len, const char *key, long *ret) {
        const char *pos = text, *s;
        size_t n, kl;
        int found = -ENOENT;
        long v = 0;

        if (!key || !ret || (!text && len))
                return -EINVAL;
        kl = strlen(key);
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
                found = parse_long(val, vn, &v);
        }
        if (found < 0)
                return found;
        *ret = v;
        return 0;
}

int gw_args_yaml_epochs(const char *text, size_t len, long *ret) {
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

/* The value of "key=V", "--key=V" or "--key V" (YOLOv5's form) in argv[1..], the last one
 * winning; *ret_bare tells the "--key" form, whose value may be a flag's next word. */
static const char *setting(const char *const *argv, size_t argc, const char *key, bool *ret_bare) {
        size_t kl = strlen(key);
        const char *v = NULL;

        *ret_bare = false;
        for (size_t i = 1; i < argc; i++) {
                const char *a = argv[i];
                bool dashes = a && !strncmp(a, "--", 2);

                if (!a)
                        continue;
                if (dashes)
                        a += 2;
                if (strncmp(a, key, kl))
                        continue;
                if (a[kl] == '=') {
                        v = a + kl + 1;
                        *ret_bare = false;
                } else if (dashes && !a[kl]) {
                        v = i + 1 < argc && argv[i + 1] ? argv[i + 1] : "";
                        *ret_bare = true;
                }
        }
        return v;
}

static bool has_word(const char *const *argv, size_t argc, const char *word) {
        for (size_t i = 1; i < argc; i++)
                if (argv[i] && !strcmp(argv[i], word))
                        return true;
        return false;
}

bool gw_run_is_training(const char *const *argv, size_t argc, bool yolo) {
        static const char *const keys[] = { "epochs", "project", "name" };
        bool bare;

        if (yolo)
                return true;
        if (!argv)
                return false;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
                if (setting(argv, argc, keys[k], &bare))
                        return true;
        if (has_word(argv, argc, "resume"))
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
        if (has_word(argv, argc, "--exist-ok"))
                return true;
        v = setting(argv, argc, "exist_ok", &bare);
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
        struct gw_progress q = {.epoch = -1, .total = -1};
        long v;

        while (next_field(&pos, s + n, " \t,", &f, &fn)) {
                if (starts_with(f, fn, "epoch=") && parse_long(f + 6, fn - 6, &v) == 0 && v >= 0)
                        q.epoch = v;
                else if (starts_with(f, fn, "total=") && parse_long(f + 6, fn - 6, &v) == 0 &&
                         v >= 0)
                        q.total = v;
        }
        if (q.epoch < 0)
                return false;
        *p = q;
        return true;
}

int gw_progress_parse(const char *text, size_t len, struct gw_progress *ret) {
        struct gw_progress p = {.epoch = -1, .total = -1};
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

/* ---- the phase from the tail of a log ---- */

const struct gw_phase_pattern gw_phase_patterns_default[] = {
        {GW_PHASE_VALIDATING, GW_MATCH_PREFIX, "Class     Images  Instances", false},
        /* Ultralytics' validator prints its results line once the pass is done (while it runs,
         * the newest line is the header's tqdm bar): validation over, nothing to protect. */
        {GW_PHASE_VALIDATED, GW_MATCH_PREFIX, "all ", true},
        {GW_PHASE_VALIDATING, GW_MATCH_SUBSTR, "Validating ", false},
        {GW_PHASE_VALIDATING, GW_MATCH_SUBSTR, "val: ", false},
        {GW_PHASE_SAVING, GW_MATCH_SUBSTR, "Saving", false},
        {GW_PHASE_SAVING, GW_MATCH_SUBSTR, "Optimizer stripped from", false},
        /* Training lines end the scan: without them a loader hung at the start of an epoch
         * would still show the previous epoch's validation summary a few lines up and be
         * protected for ever. */
        {GW_PHASE_TRAINING, GW_MATCH_SUBSTR, "GPU_mem", false},
        {GW_PHASE_TRAINING, GW_MATCH_EPOCH_FRACTION, NULL, false},
};
const size_t gw_phase_patterns_default_n = ELEMENTSOF(gw_phase_patterns_default);

static const struct gw_phase_rules default_rules = {
        .patterns = gw_phase_patterns_default,
        .n_patterns = ELEMENTSOF(gw_phase_patterns_default),
        .last_lines = 0,
};

/* Length of the well-formed UTF-8 sequence at s (n bytes there), 0 when it is not one.  Log
 * lines end up in evidence that the API sends as JSON, and jansson refuses invalid UTF-8
 * (overlong forms and surrogates included): a junk byte must not cost the whole evidence. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
        size_t len;
        unsigned char lo = 0x80, hi = 0xbf;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                len = 2;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                len = 3;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                len = 4;
        else
                return 0;
        if (s[0] == 0xe0)
                lo = 0xa0;
        else if (s[0] == 0xed)
                hi = 0x9f;
        else if (s[0] == 0xf0)
                lo = 0x90;
        else if (s[0] == 0xf4)
                hi = 0x8f;
        if (n < len || s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 2; i < len; i++)
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
        return len;
}

#define PHASE_DEFAULT_LINES 8
#define PHASE_MAX_LINES 1000  /* bounds the work on a tail of blank-ish redraws */
#define PHASE_SCAN_MAX 512    /* a line is matched on its first 511 visible bytes */

const char *gw_phase_name(enum gw_phase p) {
        static const char *const names[_GW_PHASE_MAX] = {
                [GW_PHASE_UNKNOWN] = "unknown",
                [GW_PHASE_TRAINING] = "training",
                [GW_PHASE_VALIDATING] = "validating",
                [GW_PHASE_SAVING] = "saving",
                [GW_PHASE_VALIDATED] = "validated",
        };
        if ((int) p < 0 || p >= _GW_PHASE_MAX)
                return NULL;
        return names[p];
}

/* Copies the visible text of one segment: ANSI escapes dropped (CSI "ESC [ params final",
 * OSC "ESC ] ... BEL|ESC \", other two-byte escapes), other control bytes dropped, tabs as
 * blanks, bytes that are not UTF-8 as '?', then trimmed.  Returns the length written to out
 * (NUL-terminated). */
static size_t strip_visible(const char *s, size_t n, char *out, size_t cap) {
        size_t i = 0, k = 0, b = 0;

        while (i < n) {
                unsigned char c = (unsigned char) s[i];

                if (c == 0x1b && i + 1 < n && s[i + 1] == '[') {
                        i += 2;
                        /* Parameter (0x30-0x3f) and intermediate (0x20-0x2f) bytes, then
                         * one final byte.  A byte outside those ranges ends a malformed
                         * sequence without being eaten, so a torn escape cannot swallow the
                         * text after it. */
                        while (i < n && s[i] >= 0x20 && s[i] <= 0x3f)
                                i++;
                        if (i < n && s[i] >= 0x40 && s[i] <= 0x7e)
                                i++;
                        continue;
                }
                if (c == 0x1b && i + 1 < n && s[i + 1] == ']') {
                        for (i += 2; i < n; i++) {
                                if (s[i] == 0x07) {
                                        i++;
                                        break;
                                }
                                if (s[i] == 0x1b && i + 1 < n && s[i + 1] == '\\') {
                                        i += 2;
                                        break;
                                }
                        }
                        continue;
                }
                if (c == 0x1b) {
                        i += i + 1 < n ? 2 : 1;
                        continue;
                }
                if (c >= 0x80) {
                        size_t l = utf8_seq((const unsigned char *) s + i, n - i);
                        /* A whole character or nothing: a cut one would be invalid. */
                        if (l > 0 && k + l < cap) {
                                memcpy(out + k, s + i, l);
                                b = k += l;
                        } else if (l == 0 && k + 1 < cap) {
                                out[k++] = '?';
                                b = k;
                        }
                        i += l ? l : 1;
                        continue;
                }
                i++;
                if (c == '\t')
                        c = ' ';
                else if (c < 0x20 || c == 0x7f)
                        continue;
                if (c == ' ' && k == 0)
                        continue; /* leading blanks */
                if (k + 1 < cap) {
                        out[k++] = (char) c;
                        if (c != ' ')
                                b = k;
                }
        }
        out[b] = '\0'; /* trailing blanks */
        return b;
}

static bool epoch_fraction(const char *l) {
        const char *p = l;

        if (*p < '0' || *p > '9')
                return false;
        while (*p >= '0' && *p <= '9')
                p++;
        if (*p++ != '/' || *p < '0' || *p > '9')
                return false;
        while (*p >= '0' && *p <= '9')
                p++;
        return *p == ' ' || *p == '\0';
}

static const struct gw_phase_pattern *match_line(const struct gw_phase_rules *rules,
                                                 const char *l) {
        for (size_t i = 0; i < rules->n_patterns; i++) {
                const struct gw_phase_pattern *pt = &rules->patterns[i];

                if (pt->phase <= GW_PHASE_UNKNOWN || pt->phase >= _GW_PHASE_MAX)
                        continue;
                switch (pt->match) {
                case GW_MATCH_SUBSTR:
                        /* An empty pattern would match every line: ignored as a config slip. */
                        if (pt->text && *pt->text && strstr(l, pt->text))
                                return pt;
                        break;
                case GW_MATCH_PREFIX:
                        if (pt->text && *pt->text && strncmp(l, pt->text, strlen(pt->text)) == 0)
                                return pt;
                        break;
                case GW_MATCH_EPOCH_FRACTION:
                        if (epoch_fraction(l))
                                return pt;
                        break;
                default:
                        break;
                }
        }
        return NULL;
}

/* Copies a line for the evidence, cut at a character boundary (src is valid UTF-8) and
 * trimmed again, since the cut may land just after a blank. */
static void set_line(char *dst, const char *src) {
        size_t m = strlen(src);

        if (m >= GW_PHASE_LINE_MAX) {
                m = GW_PHASE_LINE_MAX - 1;
                while (m > 0 && ((unsigned char) src[m] & 0xc0) == 0x80)
                        m--;
                while (m > 0 && src[m - 1] == ' ')
                        m--;
        }
        memcpy(dst, src, m);
        dst[m] = '\0';
}

int gw_phase_from_log(const char *tail, size_t len, const struct gw_phase_rules *rules,
                      struct gw_phase_result *ret) {
        struct gw_phase_result res = {.phase = GW_PHASE_UNKNOWN};
        char l[PHASE_SCAN_MAX], pending[GW_PHASE_LINE_MAX] = "";
        bool have_newest = false, have_pending = false;
        enum gw_phase pending_phase = GW_PHASE_UNKNOWN;
        unsigned k, seen = 0;
        size_t end = len;

        if (!ret || (!tail && len))
                return -EINVAL;
        if (!rules)
                rules = &default_rules;
        if (rules->n_patterns && !rules->patterns)
                return -EINVAL;
        k = rules->last_lines ? rules->last_lines : PHASE_DEFAULT_LINES;
        if (k > PHASE_MAX_LINES)
                k = PHASE_MAX_LINES;

        /* Newest segment first: walk back from the end to the previous '\r' or '\n'. */
        while (end > 0 && seen < k) {
                const struct gw_phase_pattern *m;
                size_t start = end;

                while (start > 0 && tail[start - 1] != '\r' && tail[start - 1] != '\n')
                        start--;
                size_t vis = strip_visible(tail + start, end - start, l, sizeof(l));
                end = start > 0 ? start - 1 : 0;
                if (vis == 0)
                        continue;
                seen++;
                if (!have_newest) {
                        set_line(res.line, l);
                        have_newest = true;
                }
                m = match_line(rules, l);
                if (!m)
                        continue;
                if (m->phase == GW_PHASE_TRAINING) {
                        res.phase = GW_PHASE_TRAINING;
                        set_line(res.line, l);
                        break;
                }
                if (m->needs_header) {
                        if (!have_pending) {
                                set_line(pending, l);
                                pending_phase = m->phase;
                                have_pending = true;
                        }
                        continue;
                }
                /* A header-less line; it confirms a pending summary when it is a validation
                 * line, and then the summary (the newer line) decides and is the evidence. */
                if (have_pending && m->phase != GW_PHASE_VALIDATING)
                        have_pending = false; /* e.g. "Saving" above "all": not its header */
                res.phase = have_pending ? pending_phase : m->phase;
                set_line(res.line, have_pending ? pending : l);
                break;
        }
        *ret = res;
        return 0;
}
