/* gpuward submit's options as parsed (verbs_submit.c) and the request made of them
 * (submit_body.c).  Internal to the submit verb. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/migplace.h"

/* Options whose value is text sent as it is (after a cheap check here), one slot each. */
enum text_slot {
        T_NAME,
        T_CWD,
        T_AFTER,
        T_OUTPUT,
        T_RETRY_ON,
        T_CHECKPOINT,
        T_RESUME_CMD,
        T_IDLE_POLICY,
        T_PROGRESS,
        T_HEALTH_URL,
        T_LEAK_POLICY,
        T_ARRAY,
        T_DATASET,
        T_PUBLISH,
        T_PUBLISH_IF_BETTER,
        _T_MAX,
};

struct submit_opts {
        long long ngpus;
        struct gw_mig_ask mig; /* --gpus PROFILE[:COUNT]; count 0: whole GPUs */
        bool gpu_mem_set, time_set, priority_set, retries_set;
        uint64_t gpu_mem;
        gw_usec_t time_limit;
        long long priority, retries;
        long long reservation; /* a booking id; 0: none */
        const char *text[_T_MAX]; /* borrowed from an argv that outlives us */
        const char **env_extra; /* malloc'ed array, borrowed strings */
        size_t n_env_extra;
        bool clean_env, hold, yolo, json, quiet, help, wait, follow, preemptible, scratch;
        const char *socket; /* --socket after the verb; borrowed from argv */
        int warn_signal; /* --signal SIG@T; 0: none */
        gw_usec_t warn_before; /* its T; 0: the daemon's warning time */
        char after_buf[48]; /* -d afterok:ID as --after reads it (text[T_AFTER] points here) */
};

struct submit_text_option {
        const char *opt; /* as the user types it */
        const char *key; /* the API's field */
        /* NULL: any non-empty text will do.  Else 0, or -EINVAL with the reason in why. */
        int (*check)(const char *arg, char *why, size_t n);
};
extern const struct submit_text_option submit_text_options[_T_MAX];

/* The request body for o, with cmd, the absolute cwd and output: sizes and durations in their
 * normalised numeric form, so that the daemon never has to guess what the CLI meant.  0, or
 * the exit code after telling why. */
int submit_build_body(const struct submit_opts *o, const char *const *cmd, size_t ncmd, const char *cwd,
                      const char *output, json_t **ret);
