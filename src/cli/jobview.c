/* How the CLI shows pieces of a job object (see jobview.h). */
#include "cli/jobview.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "cli/format.h"
#include "core/job.h"

/* The items of arr, each written by put, with sep between them: malloc'ed, "" for no array,
 * NULL when out of memory. */
static char *join_items(const json_t *arr, const char *sep, void (*put)(FILE *f, const json_t *item)) {
        struct cli_text t;
        if (cli_text_open(&t) < 0)
                return NULL;
        size_t i;
        const json_t *v;
        json_array_foreach (arr, i, v) {
                if (i)
                        fputs(sep, t.f);
                put(t.f, v);
        }
        return cli_text_take(&t, true);
}

static void put_gpu(FILE *f, const json_t *g) {
        if (json_is_integer(g))
                fprintf(f, "%lld", (long long) json_integer_value(g));
        else
                fputc('?', f);
}

char *cli_job_gpu_list(const json_t *job) {
        const json_t *gpus = json_object_get(job, "gpus");
        if (!json_is_array(gpus) || json_array_size(gpus) == 0)
                return strdup("-");
        return join_items(gpus, ",", put_gpu);
}

bool cli_job_waiting(const json_t *job) {
        const char *state = cli_jstr(job, "state");
        enum gw_job_state s = gw_job_state_from_name(state ? state : "");
        return s == GW_JOB_PENDING || s == GW_JOB_HELD;
}

char *cli_job_elapsed(const json_t *job, time_t now, char *buf, size_t n) {
        /* A job waiting for a retry still carries the times of its last attempt. */
        if (cli_job_waiting(job))
                return cli_format_secs(NAN, buf, n);
        double start = cli_jnum(job, "start_time");
        double end = cli_jnum(job, "end_time");
        if (!isfinite(start) || start <= 0)
                return cli_format_secs(NAN, buf, n);
        /* gpuwardd's count (GET /api/v1/jobs/ID): monotonic, whatever the wall clock did. */
        double runtime = cli_jnum(job, "runtime");
        if (isfinite(runtime) && runtime >= 0)
                return cli_format_secs(runtime, buf, n);
        if (!isfinite(end) || end <= 0)
                end = (double) now;
        return cli_format_secs(end >= start ? end - start : 0, buf, n);
}

char *cli_job_exit(const json_t *job, char *buf, size_t n) {
        long long v;
        if (cli_jint(job, "signal", &v) && v > 0)
                snprintf(buf, n, "sig %lld", v);
        else if (cli_jint(job, "exit_code", &v))
                snprintf(buf, n, "%lld", v);
        else
                snprintf(buf, n, "-");
        return buf;
}

static bool shell_safe(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-", *s))
                        return false;
        return true;
}

static void put_quoted(FILE *f, const char *s) {
        if (shell_safe(s)) {
                fputs(s, f);
                return;
        }
        fputc('\'', f);
        for (; *s; s++) {
                if (*s == '\'')
                        fputs("'\\''", f);
                else
                        fputc(*s, f);
        }
        fputc('\'', f);
}

static void put_word(FILE *f, const json_t *w) { put_quoted(f, json_is_string(w) ? json_string_value(w) : "?"); }

char *cli_job_command_line(const json_t *job) { return join_items(json_object_get(job, "command"), " ", put_word); }

const char *cli_job_user(const json_t *job, char *buf, size_t n) {
        const char *u = cli_jstr(job, "user");
        long long uid;
        if (u && *u)
                return u;
        if (cli_jint(job, "uid", &uid)) {
                snprintf(buf, n, "uid %lld", uid);
                return buf;
        }
        return "-";
}

char *cli_self_uid(void) {
        char *out = NULL;
        if (asprintf(&out, "%u", (unsigned) getuid()) < 0)
                return NULL;
        return out;
}

char *cli_normalize_states(const char *list, char **ret_bad) {
        struct cli_text t;
        if (cli_text_open(&t) < 0)
                return NULL;
        const char *p = list;
        bool first = true;
        for (;;) {
                size_t n = strcspn(p, ",");
                _cleanup_free_ char *word = strndup(p, n);
                enum gw_job_state s = word ? gw_job_state_from_name(word) : _GW_JOB_STATE_INVALID;
                if (!word || s < 0 || !gw_job_state_name(s)) {
                        *ret_bad = TAKE_PTR(word);
                        return cli_text_take(&t, false);
                }
                fprintf(t.f, "%s%s", first ? "" : ",", gw_job_state_name(s));
                first = false;
                if (!p[n])
                        break;
                p += n + 1;
        }
        return cli_text_take(&t, true);
}
