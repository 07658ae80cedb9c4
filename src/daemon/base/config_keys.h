/* gpuwardd's settings as one table: each key once, with its type, bounds, default and help.
 * The flags, the config file's keys, --check-config, --help and --list-keys all read it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "daemon/base/config.h"

enum gw_config_kind {
        GW_KEY_STRING, /* any text; .check may refuse it */
        GW_KEY_WORDS, /* one of .words ("a|b|c"): the text itself, or its index (.index) */
        GW_KEY_BOOL, /* true/false, yes/no, on/off, 1/0 */
        GW_KEY_INT, /* a whole number in [min, max], times .scale; "unlimited" if .unlimited */
        GW_KEY_SIZE, /* 64M, 1G...; "0" = none; at least .min bytes otherwise */
        GW_KEY_SECONDS, /* a bare number is seconds in [min, max], else a duration up to max s */
        GW_KEY_DURATION, /* 30m, 1d...; "0" or "unlimited" = 0 where .unlimited */
        GW_KEY_PERIOD, /* a duration of a second or more, or 0 (.zero_means says what that does) */
        GW_KEY_CUSTOM, /* .parse does it all */
};

/* The field's size picks the width written: bool, int, unsigned, int64_t, uint64_t,
 * gw_usec_t, double (.real) or char * (strings). */
struct gw_config_key {
        const char *name; /* the flag without its dashes; the file's key with '_' for '-' */
        const char *arg; /* in --help after the flag; NULL: a flag that takes no value */
        enum gw_config_kind kind;
        size_t off, size; /* where in struct gw_config */
        long long min, max; /* GW_KEY_INT, GW_KEY_SECONDS; GW_KEY_SIZE's least (min) */
        long long scale; /* GW_KEY_INT: what one unit is worth (1 unless set) */
        bool real; /* GW_KEY_INT: the field is a double */
        bool unlimited; /* "unlimited" is accepted: INT's max of the type, DURATION's 0 */
        bool index; /* GW_KEY_WORDS: store the word's index, not its text */
        const char *words; /* GW_KEY_WORDS: "local|slurm" */
        const char *zero_means; /* GW_KEY_PERIOD: what 0 does, in the refusal */
        const char *none_word; /* GW_KEY_STRING: this word stores "" ("none" for listen) */
        /* GW_KEY_STRING: 0, or -EINVAL with why filled. */
        int (*check)(const char *v, char *why, size_t n);
        /* GW_KEY_CUSTOM: parses and stores v, saying why through gw_config_fail. */
        int (*parse)(struct gw_config *c, const char *name, const char *v);
        const char *dflt; /* the default, parsed as a user's value would be; NULL: none */
        const char *dflt_doc; /* --help's words for the default where they are not dflt */
        const char *note; /* after the default in --help: "0 = no cap" */
        const char *hint; /* a refusal's "(…)": the values it takes; NULL: from the kind */
        const char *doc; /* --help's text, wrapped there */
        bool file_only; /* a key of the file, no flag */
        bool flag_only; /* a flag, no key of the file (--config) */
};

extern const struct gw_config_key gw_config_keys[];
extern const size_t gw_config_keys_n;

/* The key named name ("state-dir" or "state_dir"), or NULL. */
const struct gw_config_key *gw_config_key_find(const char *name);
/* Parses v for key k and stores it in c.  0, or -EINVAL after gw_config_fail said why, with
 * name as the user wrote it. */
int gw_config_key_apply(struct gw_config *c, const struct gw_config_key *k, const char *name, const char *v);
/* The values k takes, in words: a refusal's "(…)" and --list-keys' fourth column. */
void gw_config_key_values(const struct gw_config_key *k, char *buf, size_t n);
/* Every key's default into c (already zeroed).  0, or -EINVAL: a default its own key refuses. */
int gw_config_keys_set_defaults(struct gw_config *c);
/* gpuwardd --help, its keys' part generated from the table. */
void gw_config_keys_usage(FILE *f);
/* gpuwardd --list-keys: a line a key, tab-separated: key, kind, default, values, doc. */
void gw_config_keys_list(FILE *f);
