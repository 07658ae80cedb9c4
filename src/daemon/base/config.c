#include "daemon/base/config.h"
#include "daemon/base/config_int.h"
#include "daemon/base/config_keys.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/http.h"
#include "base/cleanup.h"
#include "base/parse.h"
#include "core/fairshare.h"
#include "core/quota.h"
#include "core/retry.h"
#include "core/webhook.h"
#include "daemon/nodes/nodes.h"

/* One line with the file, line and why, for a bad line of the config file. */
void gw_config_fail(struct gw_config *c, const char *fmt, ...) {
        char why[sizeof c->file_error];
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        if (!c->in_file)
                fprintf(stderr, "gpuwardd: error: %s\n", why);
        else if (c->check_all) { /* --check-config: every bad line, as it comes */
                fprintf(stderr, "gpuwardd: error: %s line %d: %s\n", c->config_file, c->file_line, why);
                if (!c->file_error_line)
                        c->file_error_line = c->file_line;
        } else if (!c->file_error[0]) {
                memcpy(c->file_error, why, sizeof why);
                c->file_error_line = c->file_line;
        }
}

/* The settings where a bare number is seconds: a whole number in [min_sec, max_sec] is, any
 * other value is a duration with its unit.  "1.5" is refused: the shared parser reads a bare
 * number as minutes, and here a bare number means seconds. */
int gw_config_parse_seconds_or_duration(const char *v, long long min_sec, long long max_sec, gw_usec_t *ret) {
        long long n;
        gw_usec_t d;
        if (gw_parse_int(v, min_sec, max_sec, &n) == 0)
                d = n * GW_USEC_PER_SEC;
        else if (!v[strspn(v, "0123456789.")] || gw_parse_duration(v, &d) < 0)
                return -EINVAL;
        *ret = d;
        return 0;
}

int gw_config_parse_period(struct gw_config *c, const char *name, const char *v, const char *zero_means,
                           gw_usec_t *ret) {
        gw_usec_t d = 0;
        if (strcmp(v, "0") && (gw_parse_duration(v, &d) < 0 || d < GW_USEC_PER_SEC)) {
                gw_config_fail(c, "%s: '%s' is not a duration of a second or more: " GW_DURATION_FORMS ", or 0 %s",
                               name, v, zero_means);
                return -EINVAL;
        }
        *ret = d;
        return 0;
}

void gw_config_set_str(char **dst, const char *v) {
        free(*dst);
        *dst = gw_xstrdup(v);
}

bool gw_config_parse_bool(const char *v, bool *ret) {
        if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"))
                *ret = true;
        else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off"))
                *ret = false;
        else
                return false;
        return true;
}

static int config_ini_line(void *user, const char *section, const char *name, const char *value) {
        struct gw_config *c = user;
        if (!strncmp(section, "policy.", 7))
                return gw_config_policy_line(c, section + 7, name, value) == 0;
        if (!strcmp(section, "reclaim"))
                return gw_config_reclaim_line(c, name, value) == 0;
        const struct gw_config_key *k = gw_config_key_find(name);
        if (!k || k->flag_only) {
                gw_config_fail(c, "unknown key '%s'%s%s%s (the keys are the long flags' names: gpuwardd --help)", name,
                               section[0] ? " in [" : "", section, section[0] ? "]" : "");
                return 0;
        }
        return gw_config_key_apply(c, k, name, value) == 0;
}

/* getopt's values: a key's is OPT_KEY + its row in gw_config_keys. */
enum { OPT_VERSION = 256, OPT_LIST_KEYS, OPT_KEY };

/* getopt_long's table, from the settings' (those with a flag), then the actions'. */
static void options_fill(struct option *o) {
        size_t n = 0;
        for (size_t i = 0; i < gw_config_keys_n; i++)
                if (!gw_config_keys[i].file_only)
                        o[n++] = (struct option){ gw_config_keys[i].name,
                                                  gw_config_keys[i].arg ? required_argument : no_argument, NULL,
                                                  OPT_KEY + (int) i };
        o[n++] = (struct option){ "help", no_argument, NULL, 'h' };
        o[n++] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
        o[n++] = (struct option){ "list-keys", no_argument, NULL, OPT_LIST_KEYS };
        o[n] = (struct option){ 0 };
}

static void option_refused(char **argv, int opt) {
        const char *arg = argv[optind - 1];
        bool is_long = arg[0] == '-' && arg[1] == '-';
        if (opt == ':')
                fprintf(stderr, "gpuwardd: error: %s needs a value\n", arg);
        else if (is_long && strchr(arg, '='))
                fprintf(stderr, "gpuwardd: error: '%s': unknown option, or one that takes no value\n", arg);
        else if (!is_long && optopt > 0 && optopt < 256)
                fprintf(stderr, "gpuwardd: error: unknown option '-%c'\n", optopt);
        else
                fprintf(stderr, "gpuwardd: error: unknown option '%s'\n", arg);
        fputs("Try 'gpuwardd --help'.\n", stderr);
}

struct config_reader {
        FILE *f;
        struct gw_config *c;
        bool after_key; /* an indented line continues the last key's value, as inih reads it */
};

/* fgets for inih, counting the lines read so that a setting's error knows its line. */
static char *config_read_line(char *str, int num, void *stream) {
        struct config_reader *r = stream;
        char *s = fgets(str, num, r->f);
        if (s && strchr(s, '\n'))
                r->c->file_line++;
        /* --check-config names every bad line; inih returns only the first one's number. */
        if (s && r->c->check_all && gw_config_line_check(r->c->config_file, r->c->file_line, s, &r->after_key) < 0 &&
            !r->c->file_error_line)
                r->c->file_error_line = r->c->file_line;
        return s;
}

/* 0, the first bad line's number, or -errno when the file cannot be read. */
static int config_file_parse(struct gw_config *c) {
        FILE *f = fopen(c->config_file, "re");
        if (!f)
                return -errno;
        struct config_reader rd = { f, c, false };
        c->in_file = true;
        c->file_line = 0;
        int r = ini_parse_stream(config_read_line, &rd, config_ini_line, c);
        c->in_file = false;
        fclose(f);
        return r < 0 ? -ENOMEM : r;
}

/* Reads c->config_file, printing what is wrong with it.  0, or -EINVAL (a missing file is
 * an error only when named). */
static int config_read_file(struct gw_config *c, bool explicit_file) {
        int r = config_file_parse(c);
        if (r < 0 && (explicit_file || r != -ENOENT)) {
                fprintf(stderr, "gpuwardd: error: cannot read config %s: %s\n", c->config_file, strerror(-r));
                return -EINVAL;
        }
        /* inih reports the first bad line; ours may be a later one, or already printed. */
        if (r > 0 && !(c->check_all && c->file_error_line == r))
                fprintf(stderr, "gpuwardd: error: %s line %d: %s\n", c->config_file, r,
                        c->file_error[0] && c->file_error_line == r ? c->file_error
                                                                    : "not a 'key = value' line or a [section]");
        if (r > 0 || (r == 0 && c->check_all && c->file_error_line))
                return -EINVAL;
        return gw_config_policies_check(c);
}

/* Settings that are fine alone and wrong together. */
static int limits_check(const struct gw_config *c) {
        /* Each job without --time gets the default: above the maximum, every one is refused. */
        if (c->default_time_limit > c->max_time_limit) {
                char a[32], b[32];
                fprintf(stderr, "gpuwardd: error: default-time-limit %s is longer than max-time-limit %s\n",
                        gw_format_duration(c->default_time_limit, a, sizeof a),
                        gw_format_duration(c->max_time_limit, b, sizeof b));
                return -EINVAL;
        }
        return 0;
}

int gw_config_check(const char *file) {
        struct gw_config c;
        gw_config_set_defaults(&c);
        c.config_file = gw_xstrdup(file ? file : GW_CONFIG_DEFAULT_FILE);
        c.check_all = true;
        int r = config_read_file(&c, true);
        if (r == 0)
                r = limits_check(&c);
        if (r == 0)
                printf("%s: ok\n", c.config_file);
        gw_config_done(&c);
        return r == 0 ? 0 : 1;
}

int gw_config_load(struct gw_config *c, int argc, char **argv) {
        gw_config_set_defaults(c);
        /* First pass: only --config, so the file is read before the flags that override it. */
        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--config") && i + 1 < argc)
                        gw_config_set_str(&c->config_file, argv[i + 1]);
                else if (!strncmp(argv[i], "--config=", 9))
                        gw_config_set_str(&c->config_file, argv[i] + 9);
        }
        bool explicit_file = c->config_file != NULL;
        if (!c->config_file && access(GW_CONFIG_DEFAULT_FILE, F_OK) == 0)
                c->config_file = gw_xstrdup(GW_CONFIG_DEFAULT_FILE);
        if (c->config_file ? config_read_file(c, explicit_file) < 0 : gw_config_policies_check(c) < 0)
                return -EINVAL;
        struct option options[gw_config_keys_n + 4];
        options_fill(options);
        int opt;
        optind = 1;
        opterr = 0; /* our own message, in our own words, below */
        while ((opt = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (opt == 'h' || opt == OPT_LIST_KEYS) {
                        if (opt == 'h')
                                gw_config_keys_usage(stdout);
                        else
                                gw_config_keys_list(stdout);
                        return 1;
                }
                if (opt == OPT_VERSION) {
                        puts("gpuwardd 0.1.0");
                        return 1;
                }
                if (opt == '?' || opt == ':') {
                        option_refused(argv, opt);
                        return -EINVAL;
                }
                const struct gw_config_key *k = &gw_config_keys[opt - OPT_KEY];
                if (gw_config_key_apply(c, k, k->name, optarg ? optarg : "1") < 0)
                        return -EINVAL;
        }
        if (optind < argc) {
                fprintf(stderr, "gpuwardd: error: unexpected argument '%s'\nTry 'gpuwardd --help'.\n", argv[optind]);
                return -EINVAL;
        }
        if (limits_check(c) < 0)
                return -EINVAL;
        gw_config_fill_paths(c);
        return 0;
}

void gw_config_done(struct gw_config *c) {
        free(c->config_file);
        free(c->state_dir);
        free(c->socket);
        free(c->listen);
        free(c->nvml_lib);
        free(c->admins);
        free(c->webhook_url);
        free(c->webhook_events);
        free(c->guests);
        free(c->fairshare_weights);
        free(c->model_store);
        free(c->admin_group);
        free(c->strip_env);
        free(c->cgroup);
        free(c->rogue_policy);
        free(c->default_retry_on);
        for (size_t i = 0; i < c->n_policies; i++)
                free(c->policies[i].allowed);
        free(c->policies);
        free(c->validating_patterns);
        free(c->saving_patterns);
        free(c->web_dir);
        free(c->cache_dir);
        free(c->scratch_dir);
        free(c->cache_sources);
        free(c->stage_socket);
}
