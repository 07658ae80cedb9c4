/* The sbatch command line for a gpuward job.  Pure: builds strings, runs nothing.
 *
 * Facts relied on (Slurm 22.05, checked on the test cluster of tests/cluster):
 *   - --time takes "days-hours:minutes:seconds" and rounds seconds up to the next minute;
 *     this code rounds up itself so that what gpuward shows is what Slurm enforces.
 *   - --gres=gpu:N is per node: --nodes=2 --gres=gpu:4 is 8 GPUs.  A job asking more GPUs
 *     than any node has is refused at submit ("Requested node configuration is not
 *     available"), so a job is split over nodes here or refused with a reason a user reads.
 *   - In --output, '%' starts a pattern (%j, %u, ...) and "%%" is a literal '%': every '%'
 *     of the path gpuward already expanded is doubled, so sbatch expands nothing.
 *   - --begin=now+S starts the job S seconds after submission (reason BeginTime until
 *     then): relative, so no time zone is involved.
 *   - --wrap runs its text with /bin/sh.
 *   - --gres=gpu:TYPE:N asks for N GPUs of that gres type on one node; a type no node has
 *     is refused at submit ("Requested node configuration is not available"). */
#include "core/slurm.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/directive.h"
#include "core/jobrec.h"
#include "core/migplace.h"

struct argv_buf {
        char **v;
        size_t n, cap;
};

static void argv_push(struct argv_buf *a, char *s) {
        if (a->n + 2 > a->cap) {
                a->cap = a->cap ? 2 * a->cap : 16;
                a->v = gw_xrealloc(a->v, a->cap * sizeof(char *));
        }
        a->v[a->n++] = s;
        a->v[a->n] = NULL;
}

__attribute__((format(printf, 2, 3))) static void argv_addf(struct argv_buf *a, const char *fmt, ...) {
        va_list ap, ap2;
        va_start(ap, fmt);
        va_copy(ap2, ap);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        char *s = gw_xmalloc((size_t) n + 1);
        (void) vsnprintf(s, (size_t) n + 1, fmt, ap2);
        va_end(ap2);
        argv_push(a, s);
}

char *gw_slurm_time_format(gw_usec_t limit, char *buf, size_t n) {
        const gw_usec_t minute = 60 * GW_USEC_PER_SEC;
        if (limit <= 0)
                return NULL;
        int64_t mins = limit / minute + (limit % minute != 0);
        if (mins > GW_SLURM_TIME_MAX_MIN)
                return NULL;
        int r = snprintf(buf, n, "%lld-%02lld:%02lld:00", (long long) (mins / (24 * 60)), (long long) (mins / 60 % 24),
                         (long long) (mins % 60));
        return r > 0 && (size_t) r < n ? buf : NULL;
}

/* s with every '%' doubled: sbatch expands %j and the like in file names. */
static char *escape_percent(const char *s) {
        size_t n = strlen(s), extra = 0;
        for (size_t i = 0; i < n; i++)
                extra += s[i] == '%';
        char *out = gw_xmalloc(n + extra + 1), *p = out;
        for (size_t i = 0; i < n; i++) {
                *p++ = s[i];
                if (s[i] == '%')
                        *p++ = '%';
        }
        *p = '\0';
        return out;
}

/* "exec 'a' 'b c' 'it'\''s'": argv for /bin/sh, each word in single quotes. */
static char *shell_command(char *const *argv) {
        size_t n = strlen("exec") + 1;
        for (size_t i = 0; argv[i]; i++)
                for (const char *c = argv[i];; c++) {
                        n += *c == '\'' ? 4 : 1;
                        if (!*c)
                                break;
                }
        n += 3 * gw_strv_length(argv);
        char *out = gw_xmalloc(n), *p = out;
        p += snprintf(p, n, "exec");
        for (size_t i = 0; argv[i]; i++) {
                *p++ = ' ';
                *p++ = '\'';
                for (const char *c = argv[i]; *c; c++) {
                        if (*c == '\'') {
                                memcpy(p, "'\\''", 4);
                                p += 4;
                        } else
                                *p++ = *c;
                }
                *p++ = '\'';
        }
        *p = '\0';
        return out;
}

static bool has_control(const char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        return true;
        return false;
}

/* A node or partition name that can go in a comma list. */
static bool plain_name(const char *s) {
        if (!s || !*s)
                return false;
        for (; *s; s++)
                if (*s == ',' || *s == ' ' || (unsigned char) *s < 0x20 || *s == 0x7f)
                        return false;
        return true;
}

/* Where the job's output goes: its log path, which for a job with its own --output is that
 * file with gpuward's patterns filled in (%j is gpuward's id, as on one host: the daemon's
 * gw_attempt_log_path), so that sbatch, which would fill in its own ids, never sees them; the
 * --output itself only without a log path; "" counts as none. */
static const char *output_path(const struct gw_job *j) {
        if (j->log_path && *j->log_path)
                return j->log_path;
        return j->output && *j->output ? j->output : NULL;
}

#define WHY(...) (snprintf(why, why_len, __VA_ARGS__), -EINVAL)

static int check_job(const struct gw_job *j, const struct gw_sbatch_opts *o, char *why, size_t why_len) {
        if (!j->argv || !j->argv[0])
                return WHY("argv: the job has no command");
        if (j->name && has_control(j->name))
                return WHY("name: has a control character, which Slurm's job name cannot carry");
        const char *out = output_path(j);
        if (out && (has_control(out) || strchr(out, '\\')))
                return WHY("output: %s has a control character or a backslash, which sbatch "
                           "reads as a file name pattern",
                           j->output && *j->output ? "the output path" : "the log path");
        if (j->cwd && has_control(j->cwd))
                return WHY("cwd: has a control character");
        if (j->ngpus < 0)
                return WHY("gpus: %d is negative", j->ngpus);
        /* GW_USEC_INFINITY is no limit, like 0; anything else must fit Slurm's minutes. */
        if (j->time_limit > 0 && j->time_limit != GW_USEC_INFINITY &&
            (j->time_limit - 1) / (60 * GW_USEC_PER_SEC) + 1 > GW_SLURM_TIME_MAX_MIN)
                return WHY("time_limit: longer than Slurm can hold (%d minutes)", GW_SLURM_TIME_MAX_MIN);
        if (o->partition && !plain_name(o->partition))
                return WHY("partition: \"%s\" is not a partition name", o->partition);
        for (size_t i = 0; i < o->n_exclude; i++)
                if (!plain_name(o->exclude[i]))
                        return WHY("exclude: node %zu is not a node name", i + 1);
        return 0;
}

/* How many nodes and GPUs per node j takes, or -EINVAL with why. */
static int gpu_shape(const struct gw_job *j, const struct gw_sbatch_opts *o, int *nodes, int *per_node, char *why,
                     size_t why_len) {
        int g = j->ngpus, per = o->gpus_per_node;
        *nodes = 1;
        *per_node = g;
        if (j->mig_profile) { /* the slices of one job come from one node, as on one host */
                if (!o->gpu_type || !*o->gpu_type || !plain_name(o->gpu_type) || strchr(o->gpu_type, ':'))
                        return WHY("mig: no Slurm GPU type given for %s slices", j->mig_profile);
                if (j->mig_count < 1 || j->mig_count > GW_MIG_COUNT_MAX)
                        return WHY("mig: %d slices; a job asks for 1 to %d", j->mig_count, GW_MIG_COUNT_MAX);
                *per_node = j->mig_count;
                return 0;
        }
        if (per <= 0 || g <= per)
                return 0;
        if (g % per != 0)
                return WHY("gpus: %d GPUs cannot be spread evenly over nodes of %d GPUs; ask for "
                           "at most %d, or a multiple of %d",
                           g, per, per, per);
        if (o->max_nodes > 0 && g / per > o->max_nodes)
                return WHY("gpus: %d GPUs would take %d nodes of %d GPUs; a job may span at most "
                           "%d node%s (%d GPUs)",
                           g, g / per, per, o->max_nodes, o->max_nodes == 1 ? "" : "s", o->max_nodes * per);
        *nodes = g / per;
        *per_node = per;
        return 0;
}

int gw_slurm_sbatch_argv(const struct gw_job *j, const struct gw_sbatch_opts *o, char ***ret_argv, char *why,
                         size_t why_len) {
        struct argv_buf a = { 0 };
        int nodes, per_node, r;
        char tbuf[32];

        if (!j || !o || !ret_argv)
                return -EINVAL;
        r = check_job(j, o, why, why_len);
        if (r < 0)
                return r;
        r = gpu_shape(j, o, &nodes, &per_node, why, why_len);
        if (r < 0)
                return r;

        argv_addf(&a, "sbatch");
        argv_addf(&a, "--parsable");
        /* A node failure or preemption ends the attempt in Slurm; gpuward classifies it and
         * decides about a retry (from a checkpoint, elsewhere) as for a local job. */
        argv_addf(&a, "--no-requeue");
        if (j->name && *j->name)
                argv_addf(&a, "--job-name=%.*s", GW_SBATCH_NAME_MAX, j->name);
        else
                argv_addf(&a, "--job-name=gpuward-%lld", (long long) j->id);
        argv_addf(&a, "--nodes=%d", nodes);
        if (j->mig_profile)
                argv_addf(&a, "--gres=gpu:%s:%d", o->gpu_type, per_node);
        else if (per_node > 0)
                argv_addf(&a, "--gres=gpu:%d", per_node);
        if (gw_slurm_time_format(j->time_limit, tbuf, sizeof tbuf))
                argv_addf(&a, "--time=%s", tbuf);
        const char *out = output_path(j);
        if (out) {
                _cleanup_free_ char *esc = escape_percent(out);
                argv_addf(&a, "--output=%s", esc);
        }
        if (j->cwd && *j->cwd)
                argv_addf(&a, "--chdir=%s", j->cwd);
        if (j->not_before > o->now) {
                gw_usec_t d = j->not_before - o->now;
                argv_addf(&a, "--begin=now+%lld", (long long) (d / GW_USEC_PER_SEC + (d % GW_USEC_PER_SEC != 0)));
        }
        if (o->partition)
                argv_addf(&a, "--partition=%s", o->partition);
        if (o->comment)
                argv_addf(&a, "--comment=%s", o->comment);
        if (o->reservation)
                argv_addf(&a, "--reservation=%s", o->reservation);
        if (o->n_exclude > 0) {
                size_t n = 1;
                for (size_t i = 0; i < o->n_exclude; i++)
                        n += strlen(o->exclude[i]) + 1;
                char *list = gw_xmalloc(n), *p = list;
                for (size_t i = 0; i < o->n_exclude; i++)
                        p += snprintf(p, n - (size_t) (p - list), "%s%s", i ? "," : "", o->exclude[i]);
                argv_addf(&a, "--exclude=%s", list);
                free(list);
        }
        if (o->script) {
                argv_addf(&a, "%s", o->script);
                for (size_t i = 0; j->argv[i]; i++)
                        argv_addf(&a, "%s", j->argv[i]);
        } else {
                _cleanup_free_ char *cmd = shell_command(j->argv);
                argv_addf(&a, "--wrap=%s", cmd);
        }
        *ret_argv = a.v;
        return 0;
}
