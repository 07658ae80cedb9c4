/* How the CLI shows the GPU list (see gpuview.h). */
#include "cli/gpuview.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "cli/format.h"
#include "cli/trainview.h"

#define GPU_NAME_MAX_COLS 24
#define JOB_NAME_MAX_COLS 20
/* A command line can be kilobytes long; the pid is what one acts on. */
#define ROGUE_CMD_MAX_COLS 100

/* "87%" for a percentage, "-" when the daemon sent null. */
static char *format_percent(double v, char *buf, size_t n) {
        if (isfinite(v))
                snprintf(buf, n, "%.0f%%", v);
        else
                snprintf(buf, n, "-");
        return buf;
}

/* v followed by unit ("35C", "61W"), "-" when null. */
static char *format_unit(double v, const char *unit, char *buf, size_t n) {
        if (isfinite(v))
                snprintf(buf, n, "%.0f%s", v, unit);
        else
                snprintf(buf, n, "-");
        return buf;
}

static char *format_memory(const json_t *g, bool compact, char *buf, size_t n) {
        char used[32], total[32];
        double u = cli_jnum(g, "mem_used"), t = cli_jnum(g, "mem_total");
        if (!isfinite(u) && !isfinite(t)) {
                snprintf(buf, n, "-");
                return buf;
        }
        cli_format_bytes(u, used, sizeof(used));
        cli_format_bytes(t, total, sizeof(total));
        if (!compact) {
                snprintf(buf, n, "%s / %s", used, total);
                return buf;
        }
        /* "1.0G/80.0G": the unit's letter only, as top and free -h write it. */
        char *sp = strchr(used, ' '), *st = strchr(total, ' ');
        snprintf(buf, n, "%.*s%.1s/%.*s%.1s", sp ? (int) (sp - used) : (int) strlen(used), used, sp ? sp + 1 : "",
                 st ? (int) (st - total) : (int) strlen(total), total, st ? st + 1 : "");
        return buf;
}

/* What the GPU table gives up to fit a terminal, in this order: the vendor and form-factor
 * words of the GPU name, then wide headers and memory units, then temperature and power,
 * then HEALTH while every GPU is ok; what is left is cut with an ellipsis (the job's name
 * first).  The job, its user, name, running time and ETA stay: they are why one looks. */
enum fit_level { FIT_FULL, FIT_SHORT_NAME, FIT_COMPACT, FIT_NO_TEMP_POWER, FIT_NO_HEALTH, _FIT_MAX };

enum { C_INDEX, C_NAME, C_UTIL, C_MEM, C_TEMP, C_POWER, C_HEALTH, C_JOB, C_USER, C_JOB_NAME, C_TIME, C_ETA, N_COLS };

struct gpu_layout {
        enum fit_level level;
        bool all_ok; /* every GPU's health is "ok": HEALTH may go */
        size_t max_width[N_COLS]; /* 0: no limit */
};

static bool col_shown(const struct gpu_layout *l, int c) {
        if (c == C_TEMP || c == C_POWER)
                return l->level < FIT_NO_TEMP_POWER;
        if (c == C_HEALTH)
                return l->level < FIT_NO_HEALTH || !l->all_ok;
        return true;
}

/* The table's column of each logical column, -1 when not shown; returns the count shown. */
static size_t layout_columns(const struct gpu_layout *l, int map[N_COLS]) {
        size_t n = 0;
        for (int c = 0; c < N_COLS; c++)
                map[c] = col_shown(l, c) ? (int) n++ : -1;
        return n;
}

static bool word_is_form_factor(const char *w, size_t len) {
        static const char *const drop[] = { "HBM", "SXM", "PCIE", "NVL" };
        for (size_t i = 0; i < ELEMENTSOF(drop); i++)
                if (len >= strlen(drop[i]) && strncasecmp(w, drop[i], strlen(drop[i])) == 0)
                        return true;
        return false;
}

/* "H100 80GB" for "NVIDIA H100 80GB HBM3", "A100 80GB" for "NVIDIA A100-SXM4-80GB": the
 * vendor and the memory or form-factor words go, the model and its memory size stay.  The
 * name itself when nothing would be left. */
static char *short_gpu_name(const char *name, char *buf, size_t n) {
        if (!name) {
                snprintf(buf, n, "-");
                return buf;
        }
        static const char *const vendor[] = { "NVIDIA ", "Tesla ", "GeForce " };
        const char *p = name;
        for (size_t i = 0; i < ELEMENTSOF(vendor); i++)
                if (strncmp(p, vendor[i], strlen(vendor[i])) == 0)
                        p += strlen(vendor[i]);
        size_t len = 0;
        buf[0] = '\0';
        while (*p) {
                size_t w = strcspn(p, " -");
                if (w > 0 && !word_is_form_factor(p, w) && len + w + 2 < n) {
                        if (len)
                                buf[len++] = ' ';
                        memcpy(buf + len, p, w);
                        len += w;
                        buf[len] = '\0';
                }
                p += w;
                p += strspn(p, " -");
        }
        if (!len)
                snprintf(buf, n, "%s", name);
        return buf;
}

static int add_gpu_row(struct cli_table *t, const json_t *g, time_t now, const struct gpu_layout *l) {
        char idx[32], name[64], util[32], mem[80], temp[32], power[32], job[48], run[32], eta[32];
        long long v;
        snprintf(idx, sizeof(idx), "%lld", cli_jint(g, "index", &v) ? v : -1);
        /* job_info carries the rest; a daemon without it still names the job. */
        const json_t *info = json_object_get(g, "job_info");
        const char *shown = cli_jstr(info, "display_id"); /* "8_2" for a task of array 8 */
        if (!cli_jint(info, "id", &v) && !cli_jint(g, "job", &v))
                v = -1;
        if (shown && *shown)
                snprintf(job, sizeof(job), "%s", shown);
        else if (v >= 0)
                snprintf(job, sizeof(job), "%lld", v);
        else
                snprintf(job, sizeof(job), "-");
        double start = cli_jnum(info, "start_time");
        cli_format_secs(isfinite(start) && start > 0 ? (double) now - start : NAN, run, sizeof(run));
        if (isfinite(start) && start > 0 && (double) now < start)
                snprintf(run, sizeof(run), "0s"); /* clocks a second apart */
        const char *all[N_COLS] = {
                [C_INDEX] = idx,
                [C_NAME] = l->level >= FIT_SHORT_NAME ? short_gpu_name(cli_jstr(g, "name"), name, sizeof(name))
                                                      : cli_jstr(g, "name"),
                [C_UTIL] = format_percent(cli_jnum(g, "util"), util, sizeof(util)),
                [C_MEM] = format_memory(g, l->level >= FIT_COMPACT, mem, sizeof(mem)),
                [C_TEMP] = format_unit(cli_jnum(g, "temp"), "C", temp, sizeof(temp)),
                [C_POWER] = format_unit(cli_jnum(g, "power_w"), "W", power, sizeof(power)),
                [C_HEALTH] = cli_jstr(g, "health"),
                [C_JOB] = job,
                [C_USER] = cli_jstr(info, "user"),
                [C_JOB_NAME] = cli_jstr(info, "name"),
                [C_TIME] = run,
                [C_ETA] = cli_format_eta(cli_jnum(info, "eta"), now, eta, sizeof(eta)), /* estimated end */
        };
        const char *cells[N_COLS];
        size_t n = 0;
        for (int c = 0; c < N_COLS; c++)
                if (col_shown(l, c))
                        cells[n++] = all[c];
        return cli_table_add(t, cells);
}

static bool is_rogue(const json_t *proc) {
        /* "job": null marks a rogue process, "stray" a job's process on a GPU it was not
         * given; an absent field says nothing. */
        return json_is_null(json_object_get(proc, "job")) || json_is_true(json_object_get(proc, "stray"));
}

/* "  ! rogue pid 4242 (user bob, 2.0 GiB, 87% SM): python3 evil.py", or for a stray
 * "  ! pid 4242 of job 17, not on its GPUs (user bob, ...): python3 train.py" */
static int add_rogue_line(struct cli_table *t, const json_t *proc) {
        char pid[32], mem[32], sm[32];
        long long v;
        if (cli_jint(proc, "pid", &v))
                snprintf(pid, sizeof(pid), "%lld", v);
        else
                snprintf(pid, sizeof(pid), "?");
        double sm_util = cli_jnum(proc, "sm_util");
        if (isfinite(sm_util))
                snprintf(sm, sizeof(sm), ", %.0f%% SM", sm_util);
        else
                sm[0] = '\0';
        const char *user = cli_jstr(proc, "user");
        const char *cmd = cli_jstr(proc, "command");
        cmd = cmd && *cmd ? cmd : "?";
        size_t keep = cli_fit_bytes(cmd, strlen(cmd), ROGUE_CMD_MAX_COLS);
        char what[96];
        if (cli_jint(proc, "job", &v))
                snprintf(what, sizeof what, "pid %s of job %lld, not on its GPUs", pid, v);
        else
                snprintf(what, sizeof what, "rogue pid %s", pid);
        _cleanup_free_ char *line = NULL;
        if (asprintf(&line, "  ! %s (user %s, %s%s): %.*s%s", what, user && *user ? user : "?",
                     cli_format_bytes(cli_jnum(proc, "mem_used"), mem, sizeof(mem)), sm, (int) keep, cmd,
                     cmd[keep] ? "\xe2\x80\xa6" : "") < 0)
                return -ENOMEM;
        return cli_table_add_line(t, line);
}

/* "  MIG 1g.10gb  1/7  1.0 GiB / 10.0 GiB  job 17  MIG-..." under its GPU's row: a slice has
 * memory and processes, never a utilisation (NVML gives none for it); where the GPU offers
 * GPM, its SM activity ("GPM 80%", "GPM -" before a reading) before the UUID.  "1/7" is its
 * share of the GPU, as accounting counts it. */
static int add_mig_line(struct cli_table *t, const json_t *m, bool gpm) {
        char share[32], mem[80], job[48], act[24] = "";
        long long slices, v;
        const char *profile = cli_jstr(m, "profile"), *uuid = cli_jstr(m, "uuid");
        double part = cli_jnum(m, "share");
        if (cli_jint(m, "slices", &slices) && slices > 0 && isfinite(part) && part > 0)
                snprintf(share, sizeof share, "%lld/%lld", slices, llround((double) slices / part));
        else
                snprintf(share, sizeof share, "?");
        if (cli_jint(m, "job", &v))
                snprintf(job, sizeof job, "job %lld", v);
        else
                snprintf(job, sizeof job, "free");
        if (gpm && cli_jint(m, "activity", &v))
                snprintf(act, sizeof act, "  GPM %lld%%", v);
        else if (gpm)
                snprintf(act, sizeof act, "  GPM -");
        _cleanup_free_ char *line = NULL;
        if (asprintf(&line, "  MIG %s  %s  %s  %s%s  %s", profile && *profile ? profile : "?", share,
                     format_memory(m, false, mem, sizeof mem), job, act, uuid && *uuid ? uuid : "?") < 0)
                return -ENOMEM;
        return cli_table_add_line(t, line);
}

/* A GPU in MIG mode: what its slices' idleness is judged by, then a line per slice. */
static int add_mig_lines(struct cli_table *t, const json_t *g) {
        if (!json_is_true(json_object_get(g, "mig_mode")))
                return 0;
        bool gpm = json_is_true(json_object_get(g, "gpm"));
        int r = cli_table_add_line(t, gpm ? "  MIG mode: per-slice SM activity from GPM"
                                          : "  MIG mode: no per-slice activity (no GPM): slices judged by their "
                                            "processes and progress");
        const json_t *m;
        size_t i;
        json_array_foreach (json_object_get(g, "mig"), i, m)
                if (r >= 0)
                        r = add_mig_line(t, m, gpm);
        return r;
}

static int add_gpu(struct cli_table *t, const json_t *g, time_t now, const struct gpu_layout *l, long long *n_rogue) {
        int r = add_gpu_row(t, g, now, l);
        /* Under the row rather than in HEALTH: a reason is a sentence ("Xid 79 at
         * 14:02:11", an admin's note) and would widen every row past the terminal. */
        const char *why = cli_jstr(g, "drain_reason");
        if (r >= 0 && why && *why) {
                _cleanup_free_ char *line = NULL;
                if (asprintf(&line, "  drained: %s", why) < 0)
                        return -ENOMEM;
                r = cli_table_add_line(t, line);
        }
        if (r >= 0)
                r = add_mig_lines(t, g);
        size_t i;
        const json_t *p;
        json_array_foreach (json_object_get(g, "processes"), i, p) {
                if (r < 0)
                        break;
                if (!is_rogue(p))
                        continue;
                (*n_rogue)++;
                r = add_rogue_line(t, p);
        }
        return r;
}

long long cli_gpus_rogue_count(const json_t *reply) {
        long long n = 0;
        if (cli_jint(reply, "rogue_processes", &n))
                return n;
        size_t i, k;
        const json_t *g, *p;
        json_array_foreach (json_object_get(reply, "gpus"), i, g)
                json_array_foreach (json_object_get(g, "processes"), k, p)
                        n += is_rogue(p);
        return n;
}

/* The table for layout l; *ret_listed counts the rogue lines under the rows.  NULL when
 * out of memory. */
static struct cli_table *gpu_table(const json_t *gpus, time_t now, const struct gpu_layout *l, long long *ret_listed) {
        static const char *const full[N_COLS] = { "INDEX",  "NAME", "UTIL", "MEMORY(USED/TOTAL)", "TEMP", "POWER",
                                                  "HEALTH", "JOB",  "USER", "JOB_NAME",           "TIME", "ETA" };
        const char *cols[N_COLS];
        int map[N_COLS];
        size_t n = layout_columns(l, map);
        for (int c = 0; c < N_COLS; c++)
                if (map[c] >= 0)
                        cols[map[c]] = l->level >= FIT_COMPACT && c == C_INDEX ? "GPU"
                                       : l->level >= FIT_COMPACT && c == C_MEM ? "MEMORY"
                                                                               : full[c];
        struct cli_table *t = cli_table_new(cols, n);
        if (!t)
                return NULL;
        for (int c = 0; c < N_COLS; c++)
                if (map[c] >= 0)
                        cli_table_set_max_width(t, (size_t) map[c], l->max_width[c]);
        size_t i;
        const json_t *g;
        *ret_listed = 0;
        json_array_foreach (gpus, i, g)
                if (add_gpu(t, g, now, l, ret_listed) < 0)
                        return cli_table_free(t);
        return t;
}

/* The widest layout that fits width columns (0: any): levels first, then cuts. */
static struct cli_table *fitted_table(const json_t *gpus, time_t now, size_t width, long long *ret_listed) {
        struct gpu_layout l = { .level = FIT_FULL, .all_ok = true };
        l.max_width[C_NAME] = GPU_NAME_MAX_COLS;
        l.max_width[C_JOB_NAME] = JOB_NAME_MAX_COLS;
        size_t i;
        const json_t *g;
        json_array_foreach (gpus, i, g) {
                const char *health = cli_jstr(g, "health");
                l.all_ok = l.all_ok && health && strcmp(health, "ok") == 0;
        }
        struct cli_table *t = gpu_table(gpus, now, &l, ret_listed);
        while (t && width && cli_table_width(t) > width && l.level + 1 < _FIT_MAX) {
                l.level++;
                cli_table_free(t);
                t = gpu_table(gpus, now, &l, ret_listed);
        }
        /* Cut, each no narrower than its header: the job's name, the GPU's, the user's. */
        static const int cut[] = { C_JOB_NAME, C_NAME, C_USER };
        for (size_t k = 0; k < ELEMENTSOF(cut) && t && width && cli_table_width(t) > width; k++) {
                int map[N_COLS];
                layout_columns(&l, map);
                size_t have = cli_table_col_width(t, (size_t) map[cut[k]]), excess = cli_table_width(t) - width;
                size_t least = cut[k] == C_JOB_NAME ? 8 : 4;
                if (have <= least)
                        continue;
                l.max_width[cut[k]] = have - least > excess ? have - excess : least;
                cli_table_free(t);
                t = gpu_table(gpus, now, &l, ret_listed);
        }
        return t;
}

int cli_gpus_print(const json_t *reply, time_t now, size_t width, FILE *f) {
        const json_t *gpus = json_object_get(reply, "gpus");
        if (!json_is_array(gpus))
                return -EBADMSG;
        long long listed = 0;
        struct cli_table *t = fitted_table(gpus, now, width, &listed);
        if (!t)
                return -ENOMEM;
        cli_table_print(t, f);
        cli_table_free(t);
        long long n = cli_gpus_rogue_count(reply);
        if (n > 0)
                fprintf(f, "%lld rogue process%s: on a GPU but in no gpuward job%s\n", n, n == 1 ? "" : "es",
                        listed > 0 ? " (marked '!' above)" : "");
        if (json_is_true(json_object_get(reply, "simulated")))
                fprintf(f, "(simulated GPUs)\n");
        return 0;
}
