/* The CSV trace: one job per line, times in seconds (docs/SIMULATOR.md documents every
 * column).  Plain comma-separated fields, no quoting; '#' starts a comment line. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "sim/sim.h"

enum col {
        C_SUBMIT,
        C_USER,
        C_GPUS,
        C_RUNTIME,
        C_LIMIT,
        C_CKPT,
        C_STALL,
        C_CANCEL,
        C_FAIL,
        C_CLASS,
        C_REPEAT,
        C_VAL_AT,
        C_VAL_LEN,
        C_VAL_SILENT,
        C_ZERO,
        C_PRIO,
        C_PROFILE,
        C_INTERACTIVE,
        C_LEAK,
        C_BOOK,
        C_BROKEN,
        C_MAX,
};

static const char *const col_names[C_MAX] = {
        "submit_s",    "user",      "gpus",       "runtime_s",   "time_limit_s", "ckpt_interval_s", "stall_at_s",
        "cancel_at_s", "fail_at_s", "fail_class", "fail_repeat", "val_at_s",     "val_len_s",       "val_silent",
        "zero_frac",   "priority",  "profile",    "interactive", "leak_mb_h",    "book_lead_s",     "gpu_broken",
};

const char gw_sim_trace_header[] =
        "submit_s,user,gpus,runtime_s,time_limit_s,ckpt_interval_s,stall_at_s,cancel_at_s,fail_at_s,"
        "fail_class,fail_repeat,val_at_s,val_len_s,val_silent,zero_frac,priority,profile,interactive,"
        "leak_mb_h,book_lead_s,gpu_broken";

#define MAX_FIELDS 64
#define DEFAULT_LIMIT (24 * GW_SIM_HOUR) /* gpuwardd's --default-time-limit */

static void put_secs(FILE *f, gw_usec_t t) {
        if (t == GW_SIM_NONE)
                fputs("-1", f);
        else if (t == GW_USEC_INFINITY)
                fputs("inf", f);
        else if (t % GW_SIM_SEC == 0)
                fprintf(f, "%lld", (long long) (t / GW_SIM_SEC));
        else
                fprintf(f, "%lld.%06lld", (long long) (t / GW_SIM_SEC), (long long) (t % GW_SIM_SEC));
}

int gw_sim_trace_write(FILE *f, const struct gw_sim_workload *w) {
        fprintf(f, "%s\n", gw_sim_trace_header);
        for (size_t i = 0; i < w->n; i++) {
                const struct gw_sim_job *j = &w->jobs[i];
                bool fails = j->fail_at != GW_SIM_NONE;

                put_secs(f, j->submit);
                fprintf(f, ",%d,%d,", j->user, j->ngpus);
                put_secs(f, j->runtime);
                fputc(',', f);
                put_secs(f, j->time_limit);
                fputc(',', f);
                put_secs(f, j->ckpt_interval);
                fputc(',', f);
                put_secs(f, j->stall_at);
                fputc(',', f);
                put_secs(f, j->cancel_at);
                fputc(',', f);
                put_secs(f, j->fail_at);
                fprintf(f, ",%s,%d,", fails ? gw_failure_class_name(j->fail_class) : "", fails && j->fail_repeat);
                put_secs(f, j->val_len > 0 ? j->val_at : GW_SIM_NONE);
                fputc(',', f);
                put_secs(f, j->val_len);
                fprintf(f, ",%d,%.4f,%d,%s,%d,%g,", j->val_silent, j->zero_frac, j->priority, j->profile,
                        j->interactive, j->leak_mb_h);
                put_secs(f, j->book_lead > 0 ? j->book_lead : GW_SIM_NONE);
                fprintf(f, ",%d\n", j->gpu_broken);
        }
        return ferror(f) ? -EIO : 0;
}

/* Seconds (decimal) to µs; "-1" or "" = none; "inf" only where inf_ok. */
static int get_secs(const char *s, bool inf_ok, gw_usec_t *ret) {
        char *end;

        if (!*s || strcmp(s, "-1") == 0) {
                *ret = GW_SIM_NONE;
                return 0;
        }
        if (inf_ok && strcmp(s, "inf") == 0) {
                *ret = GW_USEC_INFINITY;
                return 0;
        }
        errno = 0;
        double v = strtod(s, &end);
        if (errno || *end || !isfinite(v) || v < 0 || v > 9.2e12)
                return -EINVAL;
        *ret = (gw_usec_t) llround(v * (double) GW_SIM_SEC);
        return 0;
}

static int get_double(const char *s, double lo, double hi, double *ret) {
        char *end;

        errno = 0;
        double v = strtod(s, &end);
        if (!*s || errno || *end || !isfinite(v) || v < lo || v > hi)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int get_int(const char *s, long long lo, long long hi, int *ret) {
        long long v;
        int k = gw_parse_int(s, lo, hi, &v);
        if (k < 0)
                return k;
        *ret = (int) v;
        return 0;
}

/* A column of 0 or 1. */
static int get_flag(const char *s, bool *ret) {
        int b;
        if (get_int(s, 0, 1, &b) < 0)
                return -EINVAL;
        *ret = b != 0;
        return 0;
}

/* A length whose absence (empty, -1) means none: 0. */
static int get_secs_or_zero(const char *s, gw_usec_t *ret) {
        if (get_secs(s, false, ret) < 0)
                return -EINVAL;
        if (*ret == GW_SIM_NONE)
                *ret = 0;
        return 0;
}

static size_t split(char *line, char **f) {
        size_t n = 0;
        char *p = line;

        for (;;) {
                char *c = strchr(p, ',');
                if (n == MAX_FIELDS)
                        return n + 1;
                f[n++] = p;
                if (!c)
                        return n;
                *c = '\0';
                p = c + 1;
        }
}

static int header(char **f, size_t n, int *map, char *msg, size_t msg_size) {
        bool seen[C_MAX] = { false };

        for (size_t i = 0; i < n; i++) {
                int c = 0;
                while (c < C_MAX && strcmp(f[i], col_names[c]) != 0)
                        c++;
                if (c == C_MAX) {
                        snprintf(msg, msg_size, "header: unknown column '%s'", f[i]);
                        return -EINVAL;
                }
                if (seen[c]) {
                        snprintf(msg, msg_size, "header: column '%s' twice", f[i]);
                        return -EINVAL;
                }
                seen[c] = true;
                map[i] = c;
        }
        if (!seen[C_SUBMIT] || !seen[C_GPUS] || !seen[C_RUNTIME]) {
                snprintf(msg, msg_size, "header: submit_s, gpus and runtime_s are required");
                return -EINVAL;
        }
        return 0;
}

/* Sets one field; returns 0 or -EINVAL. */
static int field(struct gw_sim_job *j, int c, const char *s, bool *class_set, bool *repeat_set) {
        switch (c) {
        case C_SUBMIT:
                return get_secs(s, false, &j->submit) < 0 || j->submit == GW_SIM_NONE ? -EINVAL : 0;
        case C_USER:
                return get_int(s, 0, 1000000, &j->user);
        case C_GPUS:
                return get_int(s, 1, GW_SIM_MAX_NODE_GPUS, &j->ngpus);
        case C_RUNTIME:
                return get_secs(s, true, &j->runtime) < 0 || j->runtime <= 0 ? -EINVAL : 0;
        case C_LIMIT:
                return get_secs(s, false, &j->time_limit) < 0 || j->time_limit <= 0 ? -EINVAL : 0;
        case C_CKPT:
                return get_secs_or_zero(s, &j->ckpt_interval);
        case C_STALL:
                return get_secs(s, false, &j->stall_at);
        case C_CANCEL:
                return get_secs(s, false, &j->cancel_at);
        case C_FAIL:
                return get_secs(s, false, &j->fail_at);
        case C_CLASS:
                if (!*s)
                        return 0;
                j->fail_class = gw_failure_class_from_name(s);
                *class_set = true;
                switch (j->fail_class) {
                case GW_FAILURE_GPU_FAULT:
                case GW_FAILURE_CUDA_ERROR:
                case GW_FAILURE_NCCL_ERROR:
                case GW_FAILURE_OOM:
                case GW_FAILURE_HOST_OOM:
                case GW_FAILURE_LOST:
                case GW_FAILURE_USER_ERROR:
                        return 0;
                default:
                        return -EINVAL;
                }
        case C_REPEAT:
                if (!*s)
                        return 0;
                *repeat_set = true;
                return get_flag(s, &j->fail_repeat);
        case C_VAL_AT:
                return get_secs(s, false, &j->val_at);
        case C_VAL_LEN:
                return get_secs_or_zero(s, &j->val_len);
        case C_VAL_SILENT:
                return get_flag(s, &j->val_silent);
        case C_ZERO:
                return get_double(s, 0, 1, &j->zero_frac);
        case C_PRIO:
                return get_int(s, -1000000, 1000000, &j->priority);
        case C_PROFILE:
                if (strlen(s) >= sizeof(j->profile) || (*s && !gw_reclaim_policy_find(NULL, 0, s)))
                        return -EINVAL;
                snprintf(j->profile, sizeof(j->profile), "%s", s);
                return 0;
        case C_INTERACTIVE:
                return get_flag(s, &j->interactive);
        case C_LEAK:
                return !*s ? 0 : get_double(s, 0, 1e9, &j->leak_mb_h);
        case C_BOOK:
                return get_secs_or_zero(s, &j->book_lead);
        case C_BROKEN:
                return !*s ? 0 : get_flag(s, &j->gpu_broken);
        default:
                return -EINVAL;
        }
}

static int parse_line(char **f, size_t n, const int *map, size_t n_cols, struct gw_sim_job *j, char *msg,
                      size_t msg_size, unsigned line) {
        bool class_set = false, repeat_set = false;

        *j = (struct gw_sim_job){ .time_limit = DEFAULT_LIMIT,
                                  .stall_at = GW_SIM_NONE,
                                  .cancel_at = GW_SIM_NONE,
                                  .fail_at = GW_SIM_NONE,
                                  .val_at = GW_SIM_NONE,
                                  .fail_class = GW_FAILURE_OK };
        if (n != n_cols) {
                snprintf(msg, msg_size, "line %u: %zu fields, the header has %zu", line, n, n_cols);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++)
                if (field(j, map[i], f[i], &class_set, &repeat_set) < 0) {
                        snprintf(msg, msg_size, "line %u: %s: '%.40s' is not valid", line, col_names[map[i]], f[i]);
                        return -EINVAL;
                }
        if (j->fail_at != GW_SIM_NONE && !class_set)
                j->fail_class = GW_FAILURE_USER_ERROR;
        if (j->fail_at == GW_SIM_NONE)
                j->fail_class = GW_FAILURE_OK;
        /* By default bugs repeat and the rest do not. */
        if (!repeat_set)
                j->fail_repeat = j->fail_class == GW_FAILURE_USER_ERROR || j->fail_class == GW_FAILURE_OOM;
        if (j->val_len > 0 && j->val_at == GW_SIM_NONE) {
                snprintf(msg, msg_size, "line %u: val_len_s without val_at_s", line);
                return -EINVAL;
        }
        return 0;
}

/* Stable merge sort by submit time: rows submitted at the same instant keep the file's order
 * (the queue order of equal-priority jobs). */
static void sort_submit(struct gw_sim_job *v, struct gw_sim_job *tmp, size_t n) {
        if (n < 2)
                return;
        size_t h = n / 2, i = 0, k = h, o = 0;
        sort_submit(v, tmp, h);
        sort_submit(v + h, tmp, n - h);
        while (i < h && k < n)
                tmp[o++] = v[k].submit < v[i].submit ? v[k++] : v[i++];
        while (i < h)
                tmp[o++] = v[i++];
        while (k < n)
                tmp[o++] = v[k++];
        memcpy(v, tmp, n * sizeof(*v));
}

static bool sorted(const struct gw_sim_job *v, size_t n) {
        for (size_t i = 1; i < n; i++)
                if (v[i].submit < v[i - 1].submit)
                        return false;
        return true;
}

int gw_sim_trace_read(FILE *f, struct gw_sim_workload *ret, char *msg, size_t msg_size) {
        _cleanup_free_ char *line = NULL;
        _cleanup_free_ struct gw_sim_job *jobs = NULL;
        size_t len = 0, n = 0, cap = 0, n_cols = 0;
        int map[MAX_FIELDS];
        char *fields[MAX_FIELDS + 1];
        unsigned lineno = 0;
        ssize_t got;

        while ((got = getline(&line, &len, f)) >= 0) {
                lineno++;
                while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
                        line[--got] = '\0';
                if (got == 0 || line[0] == '#')
                        continue;
                size_t nf = split(line, fields);
                if (nf > MAX_FIELDS) {
                        snprintf(msg, msg_size, "line %u: more than %d fields", lineno, MAX_FIELDS);
                        return -EINVAL;
                }
                if (!n_cols) {
                        int k = header(fields, nf, map, msg, msg_size);
                        if (k < 0)
                                return k;
                        n_cols = nf;
                        continue;
                }
                if (n == cap) {
                        cap = cap ? cap * 2 : 256;
                        jobs = gw_xrealloc(jobs, cap * sizeof(*jobs));
                }
                int k = parse_line(fields, nf, map, n_cols, &jobs[n], msg, msg_size, lineno);
                if (k < 0)
                        return k;
                n++;
        }
        if (!n_cols) {
                snprintf(msg, msg_size, "no header line");
                return -EINVAL;
        }
        /* Traces are usually in submission order already; sort only when they are not. */
        if (!sorted(jobs, n)) {
                _cleanup_free_ struct gw_sim_job *tmp = gw_xmalloc(n * sizeof(*tmp));
                sort_submit(jobs, tmp, n);
        }
        gw_usec_t span = n ? jobs[n - 1].submit : 0;
        *ret = (struct gw_sim_workload){ .jobs = TAKE_PTR(jobs), .n = n, .span = span };
        return 0;
}
