/* Shared by the files that read gpuwardd's settings: config.c (flags, keys, defaults),
 * config_policy.c (the [policy.NAME] and [reclaim] sections), config_usage.c (--help). */
#pragma once
#include <stdbool.h>

#include "base/time.h"
#include "daemon/base/config.h"

#define GW_CONFIG_DEFAULT_FILE "/etc/gpuward/gpuward.conf"

/* A setting's error: printed at once for a flag; for a line of the config file, kept until
 * ini_parse says which line it was (every bad line at once under --check-config). */
void gw_config_fail(struct gw_config *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool gw_config_parse_bool(const char *v, bool *ret);
void gw_config_set_str(char **dst, const char *v);
/* A whole number in [min_sec, max_sec] is seconds; any other value a duration with its unit. */
int gw_config_parse_seconds_or_duration(const char *v, long long min_sec, long long max_sec, gw_usec_t *ret);
/* The setting name's value v as a period: a duration of a second or more, or 0 for none,
 * zero_means saying what 0 does in the message that refuses any other value.  0 with *ret
 * set, or -EINVAL with the message given to gw_config_fail. */
int gw_config_parse_period(struct gw_config *c, const char *name, const char *v, const char *zero_means,
                           gw_usec_t *ret);

/* config_defaults.c: every setting's default (the profiles' included), then the paths the
 * flags and the file left unset, from the environment. */
void gw_config_set_defaults(struct gw_config *c);
void gw_config_fill_paths(struct gw_config *c);

/* config_policy.c: one key of a [policy.NAME] or [reclaim] section; every profile checked
 * as a whole once the file is read. */
int gw_config_policy_line(struct gw_config *c, const char *pname, const char *name, const char *v);
int gw_config_reclaim_line(struct gw_config *c, const char *name, const char *v);
int gw_config_policies_check(const struct gw_config *c);

/* config_defaults.c: every setting's default (the profiles' included), then the paths the
 * flags and the file left unset, from the environment. */
void gw_config_set_defaults(struct gw_config *c);
void gw_config_fill_paths(struct gw_config *c);

/* config_policy.c: fairshare_half_life (weights false) or fairshare_weights.  0 or -EINVAL. */
int gw_config_fairshare_line(struct gw_config *c, bool weights, const char *name, const char *v);
