/* gpuward submit: the request body made of the parsed options (submit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/format.h"
#include "cli/submit.h"
#include "core/retry.h"

extern char **environ;

/* Appends strings to a JSON array.  Environment entries that are not UTF-8 cannot travel
 * in JSON: skip_bad drops them with a warning instead of failing. */
static int add_strings(json_t *arr, const char *const *v, size_t n, bool skip_bad, const char *what) {
        for (size_t i = 0; i < n; i++) {
                /* The CI runner's credential: the job runs as its owner already and would
                 * only carry it into the daemon's records. */
                if (skip_bad && !strncmp(v[i], "GPUWARD_TOKEN=", strlen("GPUWARD_TOKEN=")))
                        continue;
                json_t *s = json_string(v[i]);
                if (!s && skip_bad) {
                        _cleanup_free_ char *name = strndup(v[i], strcspn(v[i], "="));
                        _cleanup_free_ char *safe = cli_sanitize(name);
                        cli_warn("not passing environment variable %s: its value is not UTF-8", safe ? safe : "?");
                        continue;
                }
                if (!s) {
                        /* Not echoed: the raw bytes would garble the terminal. */
                        cli_error("%s: word %zu is not valid UTF-8, which JSON cannot carry", what, i + 1);
                        return CLI_EXIT_USAGE;
                }
                if (json_array_append_new(arr, s) < 0)
                        return CLI_EXIT_FAIL;
        }
        return 0;
}

static int set_string_array(json_t *body, const char *key, const char *const *v, size_t n, bool skip_bad,
                            const char *what) {
        json_t *arr = json_array();
        if (!arr || json_object_set_new(body, key, arr) < 0)
                return CLI_EXIT_FAIL;
        return add_strings(arr, v, n, skip_bad, what);
}

static int set_opt_string(json_t *body, const struct submit_text_option *t, const char *v) {
        if (!v)
                return 0;
        json_t *s = json_string(v);
        if (!s) {
                cli_error("%s: the value is not valid UTF-8, which JSON cannot carry", t->opt);
                return CLI_EXIT_USAGE;
        }
        return json_object_set_new(body, t->key, s) < 0 ? CLI_EXIT_FAIL : 0;
}

static size_t strv_len(char *const *v) {
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

int submit_build_body(const struct submit_opts *o, const char *const *cmd, size_t ncmd, const char *cwd,
                      const char *output, json_t **ret) {
        json_t *body = json_object();
        if (!body)
                return CLI_EXIT_FAIL;
        int r = set_string_array(body, "command", cmd, ncmd, false, "the command");
        if (!r)
                r = json_object_set_new(body, "ngpus", json_integer(o->ngpus)) < 0;
        if (!r && o->mig.count > 0)
                r = json_object_set_new(body, "mig",
                                        json_pack("{s:s,s:i}", "profile", o->mig.profile, "count", o->mig.count)) < 0;
        if (!r && o->gpu_mem_set)
                r = json_object_set_new(body, "gpu_mem", json_integer((json_int_t) o->gpu_mem)) < 0;
        if (!r && o->time_set) {
                gw_usec_t secs = (o->time_limit + GW_USEC_PER_SEC - 1) / GW_USEC_PER_SEC;
                r = json_object_set_new(body, "time_limit", json_integer(secs)) < 0;
        }
        if (!r && o->priority_set)
                r = json_object_set_new(body, "priority", json_integer(o->priority)) < 0;
        if (!r && o->retries_set)
                r = json_object_set_new(body, "retries", json_integer(o->retries)) < 0;
        if (!r && o->yolo)
                r = json_object_set_new(body, "yolo", json_true()) < 0;
        if (!r && o->preemptible)
                r = json_object_set_new(body, "preemptible", json_true()) < 0;
        if (!r && o->scratch)
                r = json_object_set_new(body, "scratch", json_true()) < 0;
        if (!r && o->reservation)
                r = json_object_set_new(body, "reservation", json_integer(o->reservation)) < 0;
        /* The daemon wants class names as it writes them: "GPU_FAULT, lost" goes canonical. */
        const char *text[_T_MAX];
        char classes[256];
        uint32_t mask;
        memcpy(text, o->text, sizeof(text));
        text[T_CWD] = cwd;
        text[T_OUTPUT] = output;
        /* A relative --dataset is the submitter's, as the shell would read it. */
        char dataset[4200];
        if (text[T_DATASET] && text[T_DATASET][0] != '/' && cwd) {
                snprintf(dataset, sizeof dataset, "%s/%s", cwd, text[T_DATASET]);
                text[T_DATASET] = dataset;
        }
        if (text[T_RETRY_ON] && gw_retry_parse_classes(text[T_RETRY_ON], &mask, classes, sizeof(classes)) == 0)
                text[T_RETRY_ON] = gw_retry_format_classes(mask, classes, sizeof(classes));
        for (size_t i = 0; !r && i < _T_MAX; i++)
                r = set_opt_string(body, &submit_text_options[i], text[i]);
        if (!r && !o->clean_env)
                r = set_string_array(body, "env", (const char *const *) environ, strv_len(environ), true,
                                     "environment");
        if (!r && o->n_env_extra)
                r = set_string_array(body, "env_extra", o->env_extra, o->n_env_extra, false, "--env");
        if (!r && o->hold)
                r = json_object_set_new(body, "hold", json_true()) < 0;
        if (!r && o->warn_signal > 0)
                r = json_object_set_new(body, "warn_signal", json_string(gw_signal_name(o->warn_signal))) < 0;
        if (!r && o->warn_signal > 0 && o->warn_before > 0) {
                gw_usec_t secs = (o->warn_before + GW_USEC_PER_SEC - 1) / GW_USEC_PER_SEC;
                r = json_object_set_new(body, "warn_before", json_integer(secs)) < 0;
        }
        if (r) {
                json_decref(body);
                return r == 1 ? CLI_EXIT_FAIL : r;
        }
        *ret = body;
        return 0;
}
