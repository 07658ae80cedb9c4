#include "api/codec.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec_table.h"
#include "api/jsonout.h"
#include "base/cleanup.h"
#include "base/parse.h"
#include "base/text.h"
#include "core/directive.h"
#include "core/fairshare.h"
#include "core/jobarray.h"
#include "core/model.h"
#include "core/migplace.h"
#include "core/waitwhy.h"

#define MAX_ARGS 4096
#define MAX_ENV 4096
#define MAX_STRING 65536

/* Text for JSON: jansson refuses invalid UTF-8 (and the value would then vanish from the
 * reply), so invalid bytes, such as a cut character or a log line in Latin-1, become '?'. */
json_t *gw_json_text(const char *s) {
        if (!s)
                s = "";
        json_t *v = json_string(s);
        if (v)
                return v;
        size_t n = strlen(s);
        char *copy = gw_xmalloc(n + 1);
        for (size_t i = 0; i < n;) {
                unsigned char c = (unsigned char) s[i];
                size_t len = c < 0x80             ? 1
                             : (c & 0xE0) == 0xC0 ? 2
                             : (c & 0xF0) == 0xE0 ? 3
                             : (c & 0xF8) == 0xF0 ? 4
                                                  : 0;
                bool ok = len > 0 && i + len <= n;
                for (size_t k = 1; ok && k < len; k++)
                        ok = ((unsigned char) s[i + k] & 0xC0) == 0x80;
                if (ok && len > 1) {
                        memcpy(copy + i, s + i, len);
                        /* Overlong forms and surrogates are refused by jansson too: check the whole. */
                        i += len;
                        continue;
                }
                copy[i++] = ok ? (char) c : '?';
        }
        copy[n] = '\0';
        v = json_string(copy);
        if (!v) { /* what is left is not UTF-8 jansson accepts: keep ASCII only */
                for (size_t i = 0; i < n; i++)
                        if ((unsigned char) copy[i] >= 0x80)
                                copy[i] = '?';
                v = json_string(copy);
        }
        free(copy);
        return v;
}

static int fail(struct gw_codec_error *err, const char *field, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int fail(struct gw_codec_error *err, const char *field, const char *fmt, ...) {
        va_list ap;
        snprintf(err->field, sizeof err->field, "%s", field);
        va_start(ap, fmt);
        (void) vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

static int get_string(const json_t *o, const char *key, const char **ret, struct gw_codec_error *err) {
        const json_t *v = json_object_get(o, key);
        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return fail(err, key, "%s: must be a string", key);
        if (json_string_length(v) > MAX_STRING || strlen(json_string_value(v)) != json_string_length(v))
                return fail(err, key, "%s: too long or contains a NUL byte", key);
        *ret = json_string_value(v);
        return 0;
}

static int get_strv(const json_t *o, const char *key, size_t max, bool need_eq, char ***ret,
                    struct gw_codec_error *err) {
        const json_t *v = json_object_get(o, key);
        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_array(v))
                return fail(err, key, "%s: must be an array of strings", key);
        size_t n = json_array_size(v);
        if (n > max)
                return fail(err, key, "%s: more than %zu entries", key, max);
        char **r = gw_xcalloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++) {
                const json_t *e = json_array_get(v, i);
                const char *s = json_string_value(e);
                if (!json_is_string(e) || strlen(s) != json_string_length(e) || json_string_length(e) > MAX_STRING ||
                    (need_eq && (!strchr(s, '=') || s[0] == '='))) {
                        gw_strv_free(r);
                        return fail(err, key,
                                    need_eq ? "%s[%zu]: must be a string KEY=VALUE"
                                            : "%s[%zu]: must be a string without NUL bytes",
                                    key, i);
                }
                r[i] = gw_xstrdup(s);
        }
        *ret = r;
        return 0;
}

/* A duration given as seconds (number) or text ("30m"). */
static int get_duration(const json_t *o, const char *key, gw_usec_t *ret, struct gw_codec_error *err) {
        const json_t *v = json_object_get(o, key);
        if (!v || json_is_null(v))
                return 1;
        if (json_is_integer(v)) {
                json_int_t s = json_integer_value(v);
                if (s <= 0 || s > (json_int_t) 365 * 24 * 3600 * 10)
                        return fail(err, key, "%s: %lld is not a positive number of seconds", key, (long long) s);
                *ret = (gw_usec_t) s * GW_USEC_PER_SEC;
                return 0;
        }
        if (json_is_string(v)) {
                const char *s = json_string_value(v);
                if (gw_parse_duration(s, ret) < 0)
                        return fail(err, key, "%s: '%.64s' is not a %sduration: " GW_DURATION_FORMS, key, s,
                                    s[0] == '-' ? "positive " : "");
                return 0;
        }
        return fail(err, key, "%s: must be a number of seconds or a duration string", key);
}

static int get_size(const json_t *o, const char *key, uint64_t *ret, struct gw_codec_error *err) {
        const json_t *v = json_object_get(o, key);
        if (!v || json_is_null(v))
                return 0;
        if (json_is_integer(v)) {
                if (json_integer_value(v) < 0)
                        return fail(err, key, "%s: must not be negative", key);
                *ret = (uint64_t) json_integer_value(v);
                return 0;
        }
        if (json_is_string(v)) {
                if (gw_parse_size(json_string_value(v), ret) < 0)
                        return fail(err, key, "%s: '%.64s' is not a size (examples: 512M, 16G, 80GB)", key,
                                    json_string_value(v));
                return 0;
        }
        return fail(err, key, "%s: must be a number of bytes or a size string", key);
}

static int get_int(const json_t *o, const char *key, long long min, long long max, long long *ret,
                   struct gw_codec_error *err) {
        const json_t *v = json_object_get(o, key);
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_integer(v))
                return fail(err, key, "%s: must be an integer", key);
        long long x = json_integer_value(v);
        if (x < min || x > max)
                return fail(err, key, "%s: %lld is out of range [%lld, %lld]", key, x, min, max);
        *ret = x;
        return 0;
}

static int parse_after(const char *s, struct gw_job *j, struct gw_codec_error *err) {
        char *end;
        if (*s < '1' || *s > '9')
                return fail(err, "after", "after: '%.64s' is not JOB[:ok|:any]", s);
        errno = 0;
        long long id = strtoll(s, &end, 10);
        if (errno || id <= 0 || end == s)
                return fail(err, "after", "after: '%.64s' is not JOB[:ok|:any]", s);
        enum gw_dep_kind k = GW_DEP_KIND_OK;
        if (*end == ':') {
                k = gw_dep_kind_from_name(end + 1);
                if (k != GW_DEP_KIND_OK && k != GW_DEP_KIND_ANY)
                        return fail(err, "after", "after: '%.64s' is not JOB[:ok|:any]", s);
        } else if (*end)
                return fail(err, "after", "after: '%.64s' is not JOB[:ok|:any]", s);
        j->after_job = id;
        j->after_kind = k;
        return 0;
}

static int decode_strings(const json_t *o, struct gw_job *j, struct gw_codec_error *err) {
        const char *s;
        if (get_string(o, "name", &s, err) < 0)
                return -EINVAL;
        if (s && (strlen(s) > 128 || strpbrk(s, "\n\r\t")))
                return fail(err, "name", "name: at most 128 characters, no tabs or newlines");
        j->name = s ? gw_xstrdup(s) : NULL;
        if (get_string(o, "cwd", &s, err) < 0)
                return -EINVAL;
        if (s && s[0] != '/')
                return fail(err, "cwd", "cwd: '%.64s' is not an absolute path", s);
        j->cwd = s ? gw_xstrdup(s) : NULL;
        if (get_string(o, "output", &s, err) < 0)
                return -EINVAL;
        if (s && s[0] != '/')
                return fail(err, "output", "output: '%.64s' is not an absolute path", s);
        j->output = s ? gw_xstrdup(s) : NULL;
        const json_t *after = json_object_get(o, "after");
        if (json_is_integer(after)) {
                if (json_integer_value(after) <= 0)
                        return fail(err, "after", "after: must be a job id");
                j->after_job = json_integer_value(after);
                j->after_kind = GW_DEP_KIND_OK;
        } else if (after && !json_is_null(after)) {
                if (get_string(o, "after", &s, err) < 0)
                        return -EINVAL;
                if (parse_after(s, j, err) < 0)
                        return -EINVAL;
        }
        return 0;
}

/* A word of [a-z0-9_,-]: class lists and profile names, checked for meaning by the daemon. */
static bool plain_word(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == ',' || *s == '-'))
                        return false;
        return true;
}

static int decode_recovery(const json_t *o, struct gw_job *j, struct gw_codec_error *err) {
        long long retries = -1;
        if (get_int(o, "retries", 0, 100, &retries, err) < 0)
                return -EINVAL;
        j->retries = (int) retries; /* -1: the daemon's default */
        long long booking = 0;
        if (get_int(o, "reservation", 1, INT64_MAX, &booking, err) < 0)
                return -EINVAL;
        j->booking_id = booking;
        const json_t *yolo = json_object_get(o, "yolo");
        if (yolo && !json_is_boolean(yolo) && !json_is_null(yolo))
                return fail(err, "yolo", "yolo: must be true or false");
        j->yolo = json_is_true(yolo);
        const json_t *pre = json_object_get(o, "preemptible");
        if (pre && !json_is_boolean(pre) && !json_is_null(pre))
                return fail(err, "preemptible", "preemptible: must be true or false");
        j->preemptible = json_is_true(pre);
        static const struct {
                const char *key;
                size_t off;
                bool word, url;
        } strs[] = {
                { "retry_on", offsetof(struct gw_job, retry_on), true, false },
                { "idle_policy", offsetof(struct gw_job, idle_policy), true, false },
                { "checkpoint", offsetof(struct gw_job, checkpoint), false, false },
                { "resume_cmd", offsetof(struct gw_job, resume_cmd), false, false },
                { "progress", offsetof(struct gw_job, progress_file), false, false },
                { "health_url", offsetof(struct gw_job, health_url), false, true },
                { "leak_policy", offsetof(struct gw_job, leak_policy), true, false },
        };
        for (size_t i = 0; i < ELEMENTSOF(strs); i++) {
                const char *v;
                if (get_string(o, strs[i].key, &v, err) < 0)
                        return -EINVAL;
                if (!v)
                        continue;
                if (!*v || strlen(v) > 4096)
                        return fail(err, strs[i].key, "%s: must be 1-4096 characters", strs[i].key);
                if (strs[i].word && !plain_word(v))
                        return fail(err, strs[i].key, "%s: '%.64s' is not a name or comma list", strs[i].key, v);
                /* Health probes stay on this host: the daemon must not become a way to reach
                 * other machines. */
                if (strs[i].url && strncmp(v, "http://127.0.0.1:", 17) && strncmp(v, "http://localhost:", 17) &&
                    strncmp(v, "http://[::1]:", 13))
                        return fail(err, strs[i].key,
                                    "%s: only http://127.0.0.1:PORT/..., http://localhost:PORT/... "
                                    "or http://[::1]:PORT/... may be probed",
                                    strs[i].key);
                *(char **) ((char *) j + strs[i].off) = gw_xstrdup(v);
        }
        if (j->leak_policy && strcmp(j->leak_policy, "warn") && strcmp(j->leak_policy, "restart"))
                return fail(err, "leak_policy", "leak_policy: must be warn or restart");
        return 0;
}

/* submit --signal SIG@BEFORE: the signal and how long ahead of the job's end. */
static int decode_warn(const json_t *o, struct gw_job *j, struct gw_codec_error *err) {
        const char *s;
        if (get_string(o, "warn_signal", &s, err) < 0)
                return -EINVAL;
        if (s && (j->warn_signal = gw_signal_parse(s)) < 0)
                return fail(err, "warn_signal",
                            "warn_signal: '%.32s' is not one of USR1, USR2, HUP, INT, QUIT, TERM, "
                            "ALRM, URG, WINCH",
                            s);
        j->warn_signal = s ? j->warn_signal : 0;
        long long before = 0;
        if (get_int(o, "warn_before", 1, 30LL * 24 * 3600, &before, err) < 0)
                return -EINVAL;
        if (before && !s)
                return fail(err, "warn_before", "warn_before: only with warn_signal");
        j->warn_before = before * GW_USEC_PER_SEC;
        return 0;
}

/* The first key of o that is not one of known, or NULL. */
static const char *unknown_key(const json_t *o, const char *const *known, size_t n) {
        const char *key;
        const json_t *v;
        json_object_foreach ((json_t *) o, key, v) {
                size_t i = 0;
                while (i < n && strcmp(key, known[i]))
                        i++;
                if (i == n)
                        return key;
        }
        return NULL;
}

int gw_codec_check_fields(const json_t *o, const char *const *known, size_t n, const char *what,
                          struct gw_codec_error *err) {
        const char *key = unknown_key(o, known, n);
        if (!key)
                return 0;
        char list[160] = "";
        size_t len = 0;
        for (size_t i = 0; i < n && len < sizeof list; i++)
                len += (size_t) snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", known[i]);
        if (n == 0)
                return fail(err, key, "%.40s: %s takes no fields", key, what);
        return fail(err, key, "%.40s: not a field of %s (it takes %s; docs/API.md)", key, what, list);
}

int gw_codec_get_string(const json_t *o, const char *key, const char **ret, struct gw_codec_error *err) {
        return get_string(o, key, ret, err);
}

int gw_codec_get_int(const json_t *o, const char *key, long long min, long long max, long long *ret,
                     struct gw_codec_error *err) {
        return get_int(o, key, min, max, ret, err);
}

/* gpuward run: a terminal session.  Its transcript is its log under the state dir (so no
 * output file), and it is never retried: a person's session does not start again by itself. */
static int decode_interactive(const json_t *o, struct gw_job *j, struct gw_codec_error *err) {
        const json_t *v = json_object_get(o, "interactive");
        if (v && !json_is_boolean(v) && !json_is_null(v))
                return fail(err, "interactive", "interactive: must be true or false");
        j->interactive = json_is_true(v);
        if (!j->interactive)
                return 0;
        if (j->output)
                return fail(err, "output", "output: an interactive session's output is its terminal and its log");
        if (j->retries > 0)
                return fail(err, "retries", "retries: an interactive session is never retried");
        j->retries = 0;
        return 0;
}

/* A job array (sweep): its spec in Slurm's syntax, checked here and kept as given (the
 * daemon expands it again when it hands out the tasks). */
static int decode_array(const json_t *o, struct gw_job *j, struct gw_codec_error *err) {
        const char *s;
        if (get_string(o, "array", &s, err) < 0)
                return -EINVAL;
        if (!s)
                return 0;
        char msg[GW_ARRAY_MSG_SIZE];
        struct gw_array a;
        if (gw_array_parse(s, "array", &a, msg, sizeof msg) < 0)
                return fail(err, "array", "%s", msg);
        gw_array_done(&a);
        if (j->interactive)
                return fail(err, "array", "array: an interactive session cannot be an array");
        j->array_spec = gw_xstrdup(s);
        return 0;
}

/* submit --dataset: an absolute path; whether the daemon caches and whether the path is one
 * of its cache_sources is the cache's check (daemon/cache/cache.c), as it depends on the config. */
static int decode_dataset(const json_t *o, struct gw_job *j, struct gw_codec_error *err) {
        const char *s;
        if (get_string(o, "dataset", &s, err) < 0)
                return -EINVAL;
        if (!s)
                return 0;
        if (s[0] != '/' || strlen(s) > 4095)
                return fail(err, "dataset", "dataset: must be an absolute path of at most 4095 bytes");
        if (strstr(s, "/../") || (strlen(s) >= 3 && !strcmp(s + strlen(s) - 3, "/..")))
                return fail(err, "dataset", "dataset: '..' is not taken; give the path without it");
        if (j->interactive || j->array_spec)
                return fail(err, "dataset", "dataset: not for an interactive session or a job array");
        j->dataset = gw_xstrdup(s);
        return 0;
}

/* submit --scratch: a node-local work folder per attempt; whether the daemon has one
 * (scratch_dir) and runs jobs on this host is the scratch feature's check (daemon/scratch). */
static int decode_scratch(const json_t *o, struct gw_job *j, struct gw_codec_error *err) {
        const json_t *v = json_object_get(o, "scratch");
        if (v && !json_is_boolean(v) && !json_is_null(v))
                return fail(err, "scratch", "scratch: must be true or false");
        j->scratch = json_is_true(v);
        if (j->scratch && j->interactive)
                return fail(err, "scratch", "scratch: not for an interactive session");
        return 0;
}

/* submit --publish NAME [--publish-if-better METRIC]: the model the run becomes when the job
 * completes, as core/model.h bounds its name and metric. */
static int decode_publish(const json_t *o, struct gw_job *j, struct gw_codec_error *err) {
        const char *name, *metric;
        char why[200];
        if (get_string(o, "publish", &name, err) < 0 || get_string(o, "publish_if_better", &metric, err) < 0)
                return -EINVAL;
        if (name && gw_model_name_check(name, why, sizeof why) < 0)
                return fail(err, "publish", "%s", why);
        if (metric && gw_model_metric_check(metric, why, sizeof why) < 0)
                return fail(err, "publish_if_better", "%s", why);
        if (metric && !name)
                return fail(err, "publish_if_better", "publish_if_better: only with publish (the model's name)");
        if (name && j->interactive)
                return fail(err, "publish", "publish: an interactive session has no training run to publish");
        j->publish = name ? gw_xstrdup(name) : NULL;
        j->publish_metric = metric ? gw_xstrdup(metric) : NULL;
        return 0;
}

/* submit --gpus PROFILE[:COUNT]: {"profile": "1g.10gb", "count": 2}, count 1 when left out.
 * A slice's size is its profile's: no ngpus beside it (but the 1 every client sends), no
 * gpu_mem; and no booking or array, whose GPUs are whole ones. */
static int decode_mig(const json_t *o, struct gw_job *j, struct gw_codec_error *err) {
        const json_t *m = json_object_get(o, "mig");
        if (!m || json_is_null(m))
                return 0;
        const json_t *p = json_object_get(m, "profile"), *c = json_object_get(m, "count");
        if (!json_is_object(m) || json_object_size(m) != (size_t) (p != NULL) + (c != NULL))
                return fail(err, "mig",
                            "mig: must be {\"profile\": \"1g.10gb\", \"count\": N} (count 1 when left out)");
        if (!json_is_string(p) || !gw_mig_profile_valid(json_string_value(p)))
                return fail(err, "mig", "mig.profile: must be a MIG profile such as 1g.10gb, 2g.20gb or 3g.40gb");
        json_int_t count = c ? (json_is_integer(c) ? json_integer_value(c) : 0) : 1;
        if (count < 1 || count > GW_MIG_COUNT_MAX)
                return fail(err, "mig", "mig.count: must be a number of slices from 1 to %d", GW_MIG_COUNT_MAX);
        const json_t *ngpus = json_object_get(o, "ngpus");
        if (ngpus && !json_is_null(ngpus) && !(json_is_integer(ngpus) && json_integer_value(ngpus) == 1))
                return fail(err, "ngpus", "ngpus: not with mig: a job on MIG slices asks for them in mig.count");
        if (j->gpu_mem)
                return fail(err, "gpu_mem", "gpu_mem: not with mig: a slice's memory is its profile's");
        if (j->booking_id)
                return fail(err, "reservation", "reservation: not with mig: a booking holds whole GPUs");
        if (j->array_spec)
                return fail(err, "array", "array: not with mig: an array's tasks run on whole GPUs");
        j->mig_profile = gw_xstrdup(json_string_value(p));
        j->mig_count = (int) count;
        return 0;
}

/* A misspelt field would otherwise be dropped without a word ({"gpus": 2} a 1-GPU job). */
static int check_job_fields(const json_t *o, struct gw_codec_error *err) {
        static const char *const known[] = {
                "command",     "ngpus",      "priority",    "gpu_mem",     "time_limit",  "name",
                "cwd",         "output",     "after",       "env",         "env_extra",   "retries",
                "reservation", "yolo",       "retry_on",    "idle_policy", "checkpoint",  "resume_cmd",
                "progress",    "health_url", "leak_policy", "hold",        "warn_signal", "warn_before",
                "interactive", "array",      "preemptible", "dataset",     "publish",     "publish_if_better",
                "mig",         "scratch",
        };
        const char *key = unknown_key(o, known, ELEMENTSOF(known));
        if (!key)
                return 0;
        if (!strcmp(key, "gpus"))
                return fail(err, "gpus", "gpus: unknown field; the number of GPUs is ngpus");
        return fail(err, key,
                    "%.40s: not a field of a job (command, ngpus, gpu_mem, time_limit, name, "
                    "cwd, priority, after, output, env, hold, ...: docs/API.md lists them all)",
                    key);
}

int gw_codec_job_spec(const json_t *o, gw_usec_t default_limit, struct gw_job *j, int *ret_hold,
                      struct gw_codec_error *err) {
        if (!json_is_object(o))
                return fail(err, "", "the request body must be a JSON object");
        if (check_job_fields(o, err) < 0)
                return -EINVAL;
        if (get_strv(o, "command", MAX_ARGS, false, &j->argv, err) < 0)
                return -EINVAL;
        if (!j->argv || !j->argv[0] || !j->argv[0][0])
                return fail(err, "command", "command: must be a non-empty array of strings");
        long long ngpus = 1, prio = 0;
        if (get_int(o, "ngpus", 1, 1 << 20, &ngpus, err) < 0) {
                const json_t *v = json_object_get(o, "ngpus");
                if (json_is_integer(v) && json_integer_value(v) < 1)
                        return fail(err, "ngpus", "ngpus: a job needs at least 1 GPU");
                return -EINVAL;
        }
        j->ngpus = (int) ngpus;
        if (get_int(o, "priority", -1000, 1000, &prio, err) < 0)
                return -EINVAL;
        j->priority = (int) prio;
        if (get_size(o, "gpu_mem", &j->gpu_mem, err) < 0)
                return -EINVAL;
        int r = get_duration(o, "time_limit", &j->time_limit, err);
        if (r < 0)
                return -EINVAL;
        if (r > 0)
                j->time_limit = default_limit;
        if (decode_strings(o, j, err) < 0)
                return -EINVAL;
        if (get_strv(o, "env", MAX_ENV, true, &j->env, err) < 0 ||
            get_strv(o, "env_extra", MAX_ENV, true, &j->env_extra, err) < 0)
                return -EINVAL;
        if (decode_recovery(o, j, err) < 0 || decode_warn(o, j, err) < 0 || decode_interactive(o, j, err) < 0)
                return -EINVAL;
        if (decode_array(o, j, err) < 0 || decode_dataset(o, j, err) < 0 || decode_publish(o, j, err) < 0 ||
            decode_mig(o, j, err) < 0 || decode_scratch(o, j, err) < 0)
                return -EINVAL;
        if (j->warn_before >= j->time_limit) {
                char a[32], b[32];
                return fail(err, "warn_before",
                            "warn_before: %s ahead of the end of a %s time limit is at or before "
                            "its start",
                            gw_format_duration(j->warn_before, a, sizeof a),
                            gw_format_duration(j->time_limit, b, sizeof b));
        }
        const json_t *hold = json_object_get(o, "hold");
        if (hold && !json_is_boolean(hold) && !json_is_null(hold))
                return fail(err, "hold", "hold: must be true or false");
        *ret_hold = json_is_true(hold);
        return 0;
}

static json_t *time_or_null(gw_usec_t t) { return t > 0 ? json_real((double) t / 1e6) : json_null(); }

static json_t *enc_command(const struct gw_job *j) {
        json_t *a = json_array();
        for (size_t i = 0; j->argv && j->argv[i]; i++)
                json_array_append_new(a, gw_json_text(j->argv[i]));
        return a;
}

/* Text that may quote the job's log (base/text.h): as it is for its owner, else with the
 * quote replaced by instead.  A new reference. */
static json_t *enc_private(const char *s, unsigned view, const char *instead) {
        if (!gw_text_has_private(s))
                return gw_json_text(s);
        _cleanup_free_ char *r = gw_text_private_render(s, view & GW_VIEW_LOG, instead);
        return gw_json_text(r);
}

json_t *gw_codec_evidence(const char *s, unsigned view, int signal, bool has_exit, int exit_code) {
        char instead[160];
        if (signal)
                snprintf(instead, sizeof instead, "signal %d %s", signal, GW_CODEC_EVIDENCE_HIDDEN);
        else if (has_exit)
                snprintf(instead, sizeof instead, "exit %d %s", exit_code, GW_CODEC_EVIDENCE_HIDDEN);
        else
                snprintf(instead, sizeof instead, "%s", GW_CODEC_EVIDENCE_HIDDEN);
        return enc_private(s, view, instead);
}

json_t *gw_codec_display_id(const struct gw_job *j) {
        char id[48];
        if (j->array_job > 0)
                snprintf(id, sizeof id, "%lld_%lld", (long long) j->array_job, (long long) j->array_index);
        else
                snprintf(id, sizeof id, "%lld", (long long) j->id);
        return json_string(id);
}

static json_t *enc_reason(const struct gw_job *j, unsigned view) {
        /* A stop asked for and not over yet (its processes are ending, or an array's tasks
         * are): said at once, not only once the job has ended. */
        if (j->stop_state != GW_JOB_PENDING && j->stop_reason && !gw_job_state_is_final(j->state)) {
                _cleanup_free_ char *s = NULL;
                if (asprintf(&s, "stopping: %s", j->stop_reason) >= 0)
                        return enc_private(s, view, "stopping: " GW_CODEC_EVIDENCE_HIDDEN);
        }
        if (j->state == GW_JOB_PENDING && j->wait_reason == GW_REASON_QUOTA && j->wait_detail)
                return gw_json_text(j->wait_detail); /* the limit, the usage, who holds it */
        if (j->state == GW_JOB_PENDING && j->wait_reason == GW_REASON_STAGING && j->wait_detail) {
                char s[256]; /* how far its copy is */
                snprintf(s, sizeof s, "%s: %s", gw_job_reason_name(GW_REASON_STAGING), j->wait_detail);
                return gw_json_text(s);
        }
        if (gw_job_reason_shown(j) == GW_REASON_PREEMPTED) {
                char s[512];
                snprintf(s, sizeof s, "%s: %s%s%swaits first of priority %d for free GPUs",
                         gw_job_reason_name(GW_REASON_PREEMPTED), j->preempted_by ? "by " : "",
                         j->preempted_by ? j->preempted_by : "", j->preempted_by ? "; " : "", j->priority);
                return gw_json_text(s);
        }
        if (j->state == GW_JOB_PENDING || j->state == GW_JOB_HELD)
                return gw_json_text(gw_job_reason_name(j->wait_reason));
        return gw_codec_evidence(j->end_reason, view, j->signal, j->has_exit, j->exit_code);
}

/* Every reason a queued job waits, main first ({"code": "Quota", "text": "max_gpus=1, ..."});
 * [] for any other job.  The shown reason (Preempted) stands in for the one it replaces. */
static json_t *enc_reasons(const struct gw_job *j) {
        json_t *a = json_array();
        if (j->state != GW_JOB_PENDING && j->state != GW_JOB_HELD)
                return a;
        enum gw_job_reason main = gw_job_reason_shown(j);
        struct gw_why_facts f = {
                .ngpus = j->ngpus,
                .priority = j->priority,
                .after_job = j->after_job,
                .after_ok = j->after_kind == GW_DEP_KIND_OK,
                .booking_id = j->booking_id,
                .quota = j->wait_detail,
                .preempted_by = j->preempted_by,
                .drained = j->drain_view,
                .slices = j->mig_wait,
        };
        struct gw_why w[GW_WHY_MAX];
        size_t n = gw_why_list(main, j->wait_why & ~gw_why_bit(j->wait_reason), &f, w, GW_WHY_MAX);
        for (size_t i = 0; i < n; i++)
                json_array_append_new(a, json_pack("{s:s,s:o}", "code", gw_job_reason_name(w[i].code), "text",
                                                   gw_json_text(w[i].text)));
        return a;
}

static json_t *enc_after(const struct gw_job *j) {
        if (j->after_job <= 0)
                return json_null();
        return json_pack("{s:I,s:s}", "job", (json_int_t) j->after_job, "kind", gw_dep_kind_name(j->after_kind));
}

static json_t *enc_str(const char *s) { return gw_json_text(s); }

/* An array's tasks: {"total": 50, "PENDING": 45, "RUNNING": 4, "COMPLETED": 1}. */
static json_t *enc_array_tasks(const struct gw_job *j) {
        if (!j->array_view)
                return json_null();
        json_t *o = json_pack("{s:I}", "total", (json_int_t) j->array_view->total);
        for (int s = 0; s < _GW_JOB_STATE_MAX; s++)
                if (j->array_view->counts[s])
                        json_object_set_new(o, gw_job_state_name(s), json_integer(j->array_view->counts[s]));
        return o;
}

/* The MIG slices its last attempt got, their UUIDs in CUDA_VISIBLE_DEVICES's order; null
 * for a job that got none. */
static json_t *enc_slices(const struct gw_job *j) {
        if (!j->mig_slices || !*j->mig_slices)
                return json_null();
        json_t *a = json_array();
        for (const char *p = j->mig_slices; *p;) {
                size_t l = strcspn(p, ",");
                json_array_append_new(a, json_stringn(p, l));
                p += l + (p[l] == ',');
        }
        return a;
}

static bool job_is_queued(const struct gw_job *j) { return j->state == GW_JOB_PENDING || j->state == GW_JOB_HELD; }

/* One encoder per field of the job object, in the order the API documents them. */
#define FIELD(name, expr)                                                    \
        static json_t *enc_f_##name(const struct gw_job *j, unsigned view) { \
                (void) view;                                                 \
                return (expr);                                               \
        }
FIELD(id, json_integer(j->id))
FIELD(name, enc_str(j->name))
FIELD(user, enc_str(j->user))
FIELD(uid, json_integer(j->uid))
FIELD(state, json_string(gw_job_state_name(j->state)))
FIELD(reason, enc_reason(j, view))
FIELD(ngpus, json_integer(j->ngpus))
FIELD(gpus, gw_codec_gpu_mask(j->gpu_mask))
FIELD(gpu_mem, json_integer((json_int_t) j->gpu_mem))
FIELD(priority, json_integer(j->priority))
FIELD(time_limit, json_integer(j->time_limit / GW_USEC_PER_SEC))
FIELD(submit_time, time_or_null(j->submit_time))
FIELD(start_time, time_or_null(j->start_time))
FIELD(end_time, time_or_null(j->end_time))
FIELD(exit_code, j->has_exit && !j->signal ? json_integer(j->exit_code) : json_null())
FIELD(signal, j->signal ? json_integer(j->signal) : json_null())
FIELD(command, view &GW_VIEW_DETAILS ? enc_command(j) : json_null())
FIELD(cwd, view &GW_VIEW_DETAILS ? enc_str(j->cwd) : json_null())
FIELD(log_path, view &GW_VIEW_DETAILS ? j->log_path ? gw_json_text(j->log_path) : json_null() : json_null())
FIELD(after, enc_after(j))
FIELD(attempt, json_integer(j->attempt))
FIELD(pid, j->pid > 0 ? json_integer(j->pid) : json_null())
FIELD(retries, json_integer(j->retries))
FIELD(retry_on, j->retry_on ? json_string(j->retry_on) : json_null())
FIELD(yolo, json_boolean(j->yolo))
FIELD(not_before, time_or_null(j->not_before))
FIELD(resume_from, view &GW_VIEW_DETAILS ? j->resume_from ? gw_json_text(j->resume_from) : json_null() : json_null())
FIELD(resume_epoch, j->resume_from && j->resume_epoch > 0 ? json_integer(j->resume_epoch) : json_null())
FIELD(idle_policy, j->idle_policy ? json_string(j->idle_policy) : json_null())
FIELD(reservation, j->booking_id > 0 ? json_integer(j->booking_id) : json_null())
FIELD(leak_policy, json_string(j->leak_policy ? j->leak_policy : "warn"))
FIELD(warn_signal, j->warn_signal ? json_string(gw_signal_name(j->warn_signal)) : json_null())
FIELD(warn_before, j->warn_signal && j->warn_before ? json_integer(j->warn_before / GW_USEC_PER_SEC) : json_null())
FIELD(eta, j->state == GW_JOB_RUNNING ? time_or_null(j->eta) : json_null())
/* A prediction made for an earlier attempt (before a retry went back to the queue) is not one. */
#define PREDICTED(t) (j->state == GW_JOB_PENDING && j->predicted_attempt == j->attempt ? time_or_null(t) : json_null())
FIELD(predicted_start, PREDICTED(j->predicted_start))
FIELD(eta_overdue, j->state == GW_JOB_RUNNING && j->eta && j->eta_overdue > 0 ? json_real((double) j->eta_overdue / 1e6)
                                                                              : json_null())
FIELD(interactive, json_boolean(j->interactive))
FIELD(preemptible, json_boolean(j->preemptible))
/* The session's socket: its owner's (and admins') to know; the socket checks who connects. */
FIELD(tty_socket,
      j->state == GW_JOB_RUNNING && j->tty_socket && (view & GW_VIEW_LOG) ? gw_json_text(j->tty_socket) : json_null())
FIELD(latest_start, PREDICTED(j->latest_start))
#undef PREDICTED
/* A queued job's place in the queue: its user's fair-share factor and why, in words. */
FIELD(fairshare, job_is_queued(j) && j->fairshare > 0 ? json_real(j->fairshare) : json_null())
static json_t *enc_priority_why(const struct gw_job *j) {
        if (!job_is_queued(j) || !j->fair_line)
                return json_null();
        char why[GW_FS_WHY_SIZE];
        gw_fs_priority_why(j->priority, *j->fair_line ? j->fair_line : NULL, why, sizeof why);
        return gw_json_text(why);
}
FIELD(priority_why, enc_priority_why(j))
/* A job array: its spec; a task: its array and index. */
FIELD(array, j->array_spec ? gw_json_text(j->array_spec) : json_null())
FIELD(array_tasks, enc_array_tasks(j))
FIELD(array_best,
      j->array_view && j->array_view->best_index >= 0
              ? json_pack("{s:s,s:f,s:I,s:I}", "metric", "mAP50-95", "value", j->array_view->best_map50_95, "index",
                          (json_int_t) j->array_view->best_index, "epoch", (json_int_t) j->array_view->best_epoch)
              : json_null())
FIELD(array_waiting, j->array_view && j->array_view->waiting ? json_string(j->array_view->waiting) : json_null())
FIELD(array_job_id, j->array_job > 0 ? json_integer(j->array_job) : json_null())
FIELD(array_index, j->array_job > 0 ? json_integer(j->array_index) : json_null())
FIELD(node, j->node_view && * j->node_view ? gw_json_text(j->node_view) : json_null())
FIELD(display_id, gw_codec_display_id(j))
FIELD(predicted_wait, j->state == GW_JOB_PENDING && j->wait_view ? gw_json_text(j->wait_view) : json_null())
FIELD(reasons, enc_reasons(j))
FIELD(publish, j->publish ? json_string(j->publish) : json_null())
FIELD(publish_if_better, j->publish_metric ? json_string(j->publish_metric) : json_null())
FIELD(mig, j->mig_profile ? json_pack("{s:o,s:i}", "profile", gw_json_text(j->mig_profile), "count", j->mig_count)
                          : json_null())
FIELD(slices, enc_slices(j))
/* submit --dataset: the path asked and, while the job is active, where its copy is and the
 * copy's folder once staged; paths of the job's, for its owner and admins as cwd is. */
static json_t *enc_dataset(const struct gw_job *j, unsigned view) {
        if (!j->dataset || !(view & GW_VIEW_DETAILS))
                return json_null();
        const struct gw_job_staged *st = &j->staged;
        double secs = (double) st->took / (double) GW_USEC_PER_SEC;
        json_t *staged =
                st->set ? json_pack("{s:o,s:b,s:b,s:f,s:i,s:f}", "node", gw_json_text(st->node), "ok", st->ok, "hit",
                                    st->hit, "seconds", secs, "gpus", st->gpus, "gpu_seconds", secs * st->gpus)
                        : NULL;
        /* "staged" only where a node's agent told it (--backend slurm). */
        return json_pack("{s:o,s:o,s:o,s:o*}", "path", gw_json_text(j->dataset), "dir",
                         j->dataset_dir ? gw_json_text(j->dataset_dir) : json_null(), "state",
                         j->dataset_state ? json_string(j->dataset_state) : json_null(), "staged", staged);
}
/* submit --scratch: null without; else the current attempt's node-local folder (null while
 * it has none), a path of the job's, for its owner and admins as cwd is. */
static json_t *enc_scratch(const struct gw_job *j, unsigned view) {
        if (!j->scratch)
                return json_null();
        return json_pack("{s:o}", "dir",
                         j->scratch_dir && (view & GW_VIEW_DETAILS) ? gw_json_text(j->scratch_dir) : json_null());
}
#undef FIELD

static const struct {
        const char *name;
        json_t *(*encode)(const struct gw_job *j, unsigned view);
} job_fields[] = {
        { "id", enc_f_id },
        { "name", enc_f_name },
        { "user", enc_f_user },
        { "uid", enc_f_uid },
        { "state", enc_f_state },
        { "reason", enc_f_reason },
        { "ngpus", enc_f_ngpus },
        { "gpus", enc_f_gpus },
        { "gpu_mem", enc_f_gpu_mem },
        { "priority", enc_f_priority },
        { "time_limit", enc_f_time_limit },
        { "submit_time", enc_f_submit_time },
        { "start_time", enc_f_start_time },
        { "end_time", enc_f_end_time },
        { "exit_code", enc_f_exit_code },
        { "signal", enc_f_signal },
        { "command", enc_f_command },
        { "cwd", enc_f_cwd },
        { "log_path", enc_f_log_path },
        { "after", enc_f_after },
        { "attempt", enc_f_attempt },
        { "pid", enc_f_pid },
        { "retries", enc_f_retries },
        { "retry_on", enc_f_retry_on },
        { "yolo", enc_f_yolo },
        { "not_before", enc_f_not_before },
        { "resume_from", enc_f_resume_from },
        { "resume_epoch", enc_f_resume_epoch },
        { "idle_policy", enc_f_idle_policy },
        { "reservation", enc_f_reservation },
        { "leak_policy", enc_f_leak_policy },
        { "warn_signal", enc_f_warn_signal },
        { "warn_before", enc_f_warn_before },
        { "eta", enc_f_eta },
        { "predicted_start", enc_f_predicted_start },
        { "eta_overdue", enc_f_eta_overdue },
        { "interactive", enc_f_interactive },
        { "preemptible", enc_f_preemptible },
        { "tty_socket", enc_f_tty_socket },
        { "latest_start", enc_f_latest_start },
        { "fairshare", enc_f_fairshare },
        { "priority_why", enc_f_priority_why },
        { "array", enc_f_array },
        { "array_tasks", enc_f_array_tasks },
        { "array_waiting", enc_f_array_waiting },
        { "array_best", enc_f_array_best },
        { "array_job_id", enc_f_array_job_id },
        { "array_index", enc_f_array_index },
        { "node", enc_f_node },
        { "display_id", enc_f_display_id },
        { "predicted_wait", enc_f_predicted_wait },
        { "reasons", enc_f_reasons },
        { "publish", enc_f_publish },
        { "publish_if_better", enc_f_publish_if_better },
        { "mig", enc_f_mig },
        { "slices", enc_f_slices },
        { "dataset", enc_dataset },
        { "scratch", enc_scratch },
};

int gw_codec_job_fields(const char *list, uint64_t *ret_mask, struct gw_codec_error *err) {
        uint64_t mask = 0;
        while (list && *list) {
                size_t l = strcspn(list, ",");
                size_t i = 0;
                while (i < ELEMENTSOF(job_fields) &&
                       (strlen(job_fields[i].name) != l || strncmp(job_fields[i].name, list, l)))
                        i++;
                if (i == ELEMENTSOF(job_fields))
                        return fail(err, "fields", "fields: unknown job field '%.*s'", (int) (l < 64 ? l : 64), list);
                mask |= UINT64_C(1) << i;
                list += l + (list[l] == ',');
        }
        *ret_mask = mask ? mask : GW_CODEC_ALL_FIELDS;
        return 0;
}

json_t *gw_codec_job_masked(const struct gw_job *j, uint64_t mask, unsigned view) {
        json_t *o = json_object();
        for (size_t i = 0; i < ELEMENTSOF(job_fields); i++)
                if (mask & (UINT64_C(1) << i))
                        json_object_set_new(o, job_fields[i].name, job_fields[i].encode(j, view));
        return o;
}

json_t *gw_codec_job_row(const struct gw_job *j, uint64_t mask, unsigned view) {
        json_t *a = json_array();
        for (size_t i = 0; i < ELEMENTSOF(job_fields); i++)
                if (mask & (UINT64_C(1) << i))
                        json_array_append_new(a, job_fields[i].encode(j, view));
        return a;
}

void gw_codec_job_row_write(const struct gw_job *j, uint64_t mask, unsigned view, FILE *out) {
        bool first = true;
        fputc('[', out);
        for (size_t i = 0; i < ELEMENTSOF(job_fields); i++) {
                if (!(mask & (UINT64_C(1) << i)))
                        continue;
                if (!first)
                        fputc(',', out);
                first = false;
                if (gw_codec_row_put(out, job_fields[i].name, j))
                        continue;
                json_t *v = job_fields[i].encode(j, view);
                size_t len = 0;
                char *text = gw_json_compact(v, 0, &len);
                if (text)
                        fwrite(text, 1, len, out);
                else
                        fputs("null", out);
                free(text);
                json_decref(v);
        }
        fputc(']', out);
}

json_t *gw_codec_job_field_names(uint64_t mask) {
        json_t *a = json_array();
        for (size_t i = 0; i < ELEMENTSOF(job_fields); i++)
                if (mask & (UINT64_C(1) << i))
                        json_array_append_new(a, json_string(job_fields[i].name));
        return a;
}

json_t *gw_codec_job(const struct gw_job *j, unsigned view) {
        return gw_codec_job_masked(j, GW_CODEC_ALL_FIELDS, view);
}

json_t *gw_codec_event_message(const char *message, unsigned view) {
        return enc_private(message, view, GW_CODEC_EVIDENCE_HIDDEN);
}

char *gw_codec_dump(json_t *o, size_t *ret_len) {
        char *s = gw_json_compact(o, 0, ret_len);
        json_decref(o);
        if (!s) {
                s = gw_xstrdup("{\"error\": \"cannot encode the reply\", \"field\": null}");
                *ret_len = strlen(s);
        }
        return s;
}

char *gw_codec_error_body(const char *field, const char *message, size_t *ret_len) {
        json_t *o = json_pack("{s:o,s:o}", "error", gw_json_text(message), "field",
                              field && field[0] ? gw_json_text(field) : json_null());
        return gw_codec_dump(o, ret_len);
}
