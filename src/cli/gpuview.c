/* How the CLI shows the GPU list (see gpuview.h). */
#include "cli/gpuview.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static char *format_memory(const json_t *g, char *buf, size_t n) {
        char used[32], total[32];
        double u = cli_jnum(g, "mem_used"), t = cli_jnum(g, "mem_total");
        if (!isfinite(u) && !isfinite(t))
                snprintf(buf, n, "-");
        else
                snprintf(buf, n, "%s / %s", cli_format_bytes(u, used, sizeof(used)),
                         cli_format_bytes(t, total, sizeof(total)));
        return buf;
}

static int add_gpu_row(struct cli_table *t, const json_t *g, time_t now) {
        char idx[32], util[32], mem[80], temp[32], power[32], job[32], run[32], eta[32];
        long long v;
        snprintf(idx, sizeof(idx), "%lld", cli_jint(g, "index", &v) ? v : -1);
        /* job_info carries the rest; a daemon without it still names the job. */
        const json_t *info = json_object_get(g, "job_info");
        if (!cli_jint(info, "id", &v) && !cli_jint(g, "job", &v))
                v = -1;
        if (v >= 0)
                snprintf(job, sizeof(job), "%lld", v);
        else
                snprintf(job, sizeof(job), "-");
        double start = cli_jnum(info, "start_time");
        cli_format_secs(isfinite(start) && start > 0 ? (double) now - start : NAN, run, sizeof(run));
        if (isfinite(start) && start > 0 && (double) now < start)
                snprintf(run, sizeof(run), "0s"); /* clocks a second apart */
        const char *cells[] = {
                idx,
                cli_jstr(g, "name"),
                format_percent(cli_jnum(g, "util"), util, sizeof(util)),
                format_memory(g, mem, sizeof(mem)),
                format_unit(cli_jnum(g, "temp"), "C", temp, sizeof(temp)),
                format_unit(cli_jnum(g, "power_w"), "W", power, sizeof(power)),
                cli_jstr(g, "health"),
                job,
                cli_jstr(info, "user"),
                cli_jstr(info, "name"),
                run,
                cli_format_eta(cli_jnum(info, "eta"), now, eta, sizeof(eta)), /* estimated end */
        };
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

static int add_gpu(struct cli_table *t, const json_t *g, time_t now, long long *n_rogue) {
        int r = add_gpu_row(t, g, now);
        /* Under the row rather than in HEALTH: a reason is a sentence ("Xid 79 at
         * 14:02:11", an admin's note) and would widen every row past the terminal. */
        const char *why = cli_jstr(g, "drain_reason");
        if (r >= 0 && why && *why) {
                _cleanup_free_ char *line = NULL;
                if (asprintf(&line, "  drained: %s", why) < 0)
                        return -ENOMEM;
                r = cli_table_add_line(t, line);
        }
        size_t i;
        const json_t *p;
        json_array_foreach(json_object_get(g, "processes"), i, p) {
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
        json_array_foreach(json_object_get(reply, "gpus"), i, g)
                json_array_foreach(json_object_get(g, "processes"), k, p)
                        n += is_rogue(p);
        return n;
}

int cli_gpus_print(const json_t *reply, time_t now, FILE *f) {
        const json_t *gpus = json_object_get(reply, "gpus");
        if (!json_is_array(gpus))
                return -EBADMSG;
        static const char *const cols[] = { "INDEX", "NAME", "UTIL", "MEMORY(USED/TOTAL)", "TEMP", "POWER",
                                            "HEALTH", "JOB", "USER", "JOB_NAME", "TIME", "ETA" };
        struct cli_table *t = cli_table_new(cols, ELEMENTSOF(cols));
        if (!t)
                return -ENOMEM;
        cli_table_set_max_width(t, 1, GPU_NAME_MAX_COLS);
        cli_table_set_max_width(t, 9, JOB_NAME_MAX_COLS);
        size_t i;
        const json_t *g;
        long long listed = 0;
        int r = 0;
        json_array_foreach(gpus, i, g) {
                r = add_gpu(t, g, now, &listed);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                cli_table_print(t, f);
        cli_table_free(t);
        if (r < 0)
                return r;
        long long n = cli_gpus_rogue_count(reply);
        if (n > 0)
                fprintf(f, "%lld rogue process%s: on a GPU but in no gpuward job%s\n", n, n == 1 ? "" : "es",
                        listed > 0 ? " (marked '!' above)" : "");
        if (json_is_true(json_object_get(reply, "simulated")))
                fprintf(f, "(simulated GPUs)\n");
        return 0;
}
