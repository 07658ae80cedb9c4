#include "daemon/config.h"
#include "daemon/config_int.h"

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
#include "daemon/nodes.h"

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

static int duration_fail(struct gw_config *c, const char *name, const char *v) {
        gw_config_fail(c, "%s: '%s' is not a duration: " GW_DURATION_FORMS, name, v);
        return -EINVAL;
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

enum { OPT_CONFIG = 256, OPT_STATE_DIR, OPT_SOCKET, OPT_LISTEN, OPT_SIMULATE, OPT_NVML, OPT_GRACE,
       OPT_DEFAULT_LIMIT, OPT_MAX_LIMIT, OPT_ALLOW_ROOT, OPT_ADMINS, OPT_CGROUP, OPT_DEBUG, OPT_VERSION,
       OPT_SAMPLE, OPT_ROGUE, OPT_RETRIES, OPT_RETRY_ON, OPT_BACKOFF, OPT_NO_SHOW, OPT_BOOKING_WARN, OPT_LIMIT_WARN, OPT_RATE,
       OPT_BURST, OPT_WEB_DIR, OPT_GUESTS, OPT_TCP_ANON, OPT_LEAK_MIB, OPT_LEAK_EPOCHS, OPT_SNAP_KEEP,
       OPT_SNAP_CAP, OPT_SNAP_CAP_USER, OPT_MAX_CONNS, OPT_WEBHOOK_URL, OPT_WEBHOOK_EVENTS, OPT_LOG_MAX, OPT_STATE_RESERVE,
       OPT_BOOK_MAX_LEN, OPT_BOOK_MAX_GPUS, OPT_BOOK_DELAY, OPT_BOOK_PENDING_TTL, OPT_GUEST_DETAILS, OPT_BACKUP_INTERVAL,
       OPT_BACKUP_KEEP, OPT_BACKEND, OPT_FAIRSHARE, OPT_FS_HALF_LIFE, OPT_FS_WEIGHTS,
       OPT_SLURM_FOREIGN, OPT_PREEMPTION, OPT_PREEMPT_GRACE, OPT_PREEMPT_UNRESUMABLE, OPT_MAX_NODES,
       OPT_USER_MAX_PRIO, OPT_MAX_PENDING };

static const struct option options[] = {
        { "config", required_argument, NULL, OPT_CONFIG },
        { "state-dir", required_argument, NULL, OPT_STATE_DIR },
        { "socket", required_argument, NULL, OPT_SOCKET },
        { "listen", required_argument, NULL, OPT_LISTEN },
        { "web-dir", required_argument, NULL, OPT_WEB_DIR },
        { "simulate-gpus", required_argument, NULL, OPT_SIMULATE },
        { "nvml-lib", required_argument, NULL, OPT_NVML },
        { "grace-seconds", required_argument, NULL, OPT_GRACE },
        { "default-time-limit", required_argument, NULL, OPT_DEFAULT_LIMIT },
        { "max-time-limit", required_argument, NULL, OPT_MAX_LIMIT },
        { "sample-interval", required_argument, NULL, OPT_SAMPLE },
        { "allow-root-jobs", no_argument, NULL, OPT_ALLOW_ROOT },
        { "admins", required_argument, NULL, OPT_ADMINS },
        { "guests", required_argument, NULL, OPT_GUESTS },
        { "tcp-anonymous", required_argument, NULL, OPT_TCP_ANON },
        { "guest-job-details", required_argument, NULL, OPT_GUEST_DETAILS },
        { "cgroup", required_argument, NULL, OPT_CGROUP },
        { "rogue-policy", required_argument, NULL, OPT_ROGUE },
        { "default-retries", required_argument, NULL, OPT_RETRIES },
        { "default-retry-on", required_argument, NULL, OPT_RETRY_ON },
        { "retry-backoff", required_argument, NULL, OPT_BACKOFF },
        { "no-show", required_argument, NULL, OPT_NO_SHOW },
        { "booking-warn", required_argument, NULL, OPT_BOOKING_WARN },
        { "booking-max-duration", required_argument, NULL, OPT_BOOK_MAX_LEN },
        { "booking-max-gpus", required_argument, NULL, OPT_BOOK_MAX_GPUS },
        { "booking-may-delay-waiting", required_argument, NULL, OPT_BOOK_DELAY },
        { "booking-pending-ttl", required_argument, NULL, OPT_BOOK_PENDING_TTL },
        { "time-limit-warn", required_argument, NULL, OPT_LIMIT_WARN },
        { "rate-limit", required_argument, NULL, OPT_RATE },
        { "rate-burst", required_argument, NULL, OPT_BURST },
        { "user-max-priority", required_argument, NULL, OPT_USER_MAX_PRIO },
        { "max-pending-jobs", required_argument, NULL, OPT_MAX_PENDING },
        { "leak-mib-per-epoch", required_argument, NULL, OPT_LEAK_MIB },
        { "leak-epochs", required_argument, NULL, OPT_LEAK_EPOCHS },
        { "snapshot-keep-last", required_argument, NULL, OPT_SNAP_KEEP },
        { "snapshot-cap", required_argument, NULL, OPT_SNAP_CAP },
        { "snapshot-cap-user", required_argument, NULL, OPT_SNAP_CAP_USER },
        { "log-max", required_argument, NULL, OPT_LOG_MAX },
        { "state-reserve", required_argument, NULL, OPT_STATE_RESERVE },
        { "max-connections-per-user", required_argument, NULL, OPT_MAX_CONNS },
        { "webhook-url", required_argument, NULL, OPT_WEBHOOK_URL },
        { "webhook-events", required_argument, NULL, OPT_WEBHOOK_EVENTS },
        { "debug", no_argument, NULL, OPT_DEBUG },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, OPT_VERSION },
        { "backup-interval", required_argument, NULL, OPT_BACKUP_INTERVAL },
        { "backup-keep", required_argument, NULL, OPT_BACKUP_KEEP },
        { "backend", required_argument, NULL, OPT_BACKEND },
        { "fairshare", required_argument, NULL, OPT_FAIRSHARE },
        { "fairshare-half-life", required_argument, NULL, OPT_FS_HALF_LIFE },
        { "fairshare-weights", required_argument, NULL, OPT_FS_WEIGHTS },
        { "slurm-foreign-jobs", required_argument, NULL, OPT_SLURM_FOREIGN },
        { "max-nodes", required_argument, NULL, OPT_MAX_NODES },
        { "preemption", required_argument, NULL, OPT_PREEMPTION },
        { "preempt-grace", required_argument, NULL, OPT_PREEMPT_GRACE },
        { "preempt-unresumable", required_argument, NULL, OPT_PREEMPT_UNRESUMABLE },
        {},
};

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

/* "URL[,URL...]": each one gw_webhook_url_check takes. */
static int webhook_urls_check(const char *list, char *why, size_t n) {
        char url[GW_WEBHOOK_URL_MAX + 2];
        size_t urls = 0;
        for (const char *p = list; *p;) {
                size_t len = strcspn(p, ", ");
                snprintf(url, sizeof url, "%.*s", (int) (len < sizeof url - 1 ? len : sizeof url - 1), p);
                if (len && gw_webhook_url_check(url, why, n) < 0)
                        return -EINVAL;
                urls += len > 0;
                p += len;
                p += strspn(p, ", ");
        }
        if (*list && !urls) { /* "" turns webhooks off; ",," would do so without a word */
                snprintf(why, n, "no URL in the list '%.40s'", list);
                return -EINVAL;
        }
        return 0;
}

/* Applies one setting, from a flag or the file; name uses dashes.  0 or -EINVAL. */
static int apply(struct gw_config *c, int opt, const char *name, const char *v) {
        long long n;
        gw_usec_t d;
        switch (opt) {
        case OPT_CONFIG: gw_config_set_str(&c->config_file, v); return 0;
        case OPT_STATE_DIR: gw_config_set_str(&c->state_dir, v); return 0;
        case OPT_SOCKET: gw_config_set_str(&c->socket, v); return 0;
        case OPT_LISTEN: gw_config_set_str(&c->listen, strcmp(v, "none") ? v : ""); return 0;
        case OPT_NVML: gw_config_set_str(&c->nvml_lib, v); return 0;
        case OPT_WEB_DIR: gw_config_set_str(&c->web_dir, v); return 0;
        case OPT_ADMINS: gw_config_set_str(&c->admins, v); return 0;
        case OPT_GUESTS: gw_config_set_str(&c->guests, v); return 0;
        case OPT_TCP_ANON:
                if (strcmp(v, "guest") && strcmp(v, "refuse"))
                        break;
                c->tcp_refuse_anonymous = !strcmp(v, "refuse");
                return 0;
        case OPT_CGROUP:
                if (strcmp(v, "auto") && strcmp(v, "v2") && strcmp(v, "v1") && strcmp(v, "none"))
                        break;
                gw_config_set_str(&c->cgroup, v);
                return 0;
        case OPT_ROGUE:
                if (strcmp(v, "report") && strcmp(v, "kill"))
                        break;
                gw_config_set_str(&c->rogue_policy, v);
                return 0;
        case OPT_RETRIES:
                if (gw_parse_int(v, 0, 100, &n) < 0)
                        break;
                c->default_retries = (int) n;
                return 0;
        case OPT_WEBHOOK_URL:
        case OPT_WEBHOOK_EVENTS: {
                char why[200] = "";
                unsigned topics;
                if (opt == OPT_WEBHOOK_EVENTS ? gw_webhook_topics_parse(v, &topics, why, sizeof why) < 0
                                              : webhook_urls_check(v, why, sizeof why) < 0) {
                        gw_config_fail(c, "%s: %s", name, why);
                        return -EINVAL;
                }
                gw_config_set_str(opt == OPT_WEBHOOK_URL ? &c->webhook_url : &c->webhook_events, v);
                return 0;
        }
        case OPT_RETRY_ON: {
                uint32_t mask;
                char why[160];
                if (gw_retry_parse_classes(v, &mask, why, sizeof why) < 0) {
                        gw_config_fail(c, "%s: %s", name, why);
                        return -EINVAL;
                }
                gw_config_set_str(&c->default_retry_on, v);
                return 0;
        }
        case OPT_SIMULATE:
                if (gw_parse_int(v, 0, 64, &n) < 0)
                        break;
                c->simulate_gpus = (int) n;
                return 0;
        case OPT_GRACE:
                if (gw_parse_int(v, 0, 3600, &n) < 0)
                        break;
                c->grace = n * GW_USEC_PER_SEC;
                return 0;
        case OPT_RATE:
        case OPT_BURST:
                if (gw_parse_int(v, 1, 1000000, &n) < 0)
                        break;
                *(opt == OPT_RATE ? &c->rate_per_min : &c->rate_burst) = (int) n;
                return 0;
        case OPT_USER_MAX_PRIO:
                if (gw_parse_int(v, 0, GW_PRIORITY_MAX, &n) < 0) {
                        gw_config_fail(c, "%s: invalid value '%s' (a priority from 0 to %d)", name, v, GW_PRIORITY_MAX);
                        return -EINVAL;
                }
                c->user_max_priority = (int) n;
                return 0;
        case OPT_MAX_PENDING: /* the quota key's range, but never 0: no user could submit */
                if (!strcmp(v, "unlimited"))
                        n = GW_QUOTA_UNLIMITED;
                else if (gw_parse_int(v, 1, 1000000000, &n) < 0) {
                        gw_config_fail(c, "%s: invalid value '%s' (a count from 1, or unlimited)", name, v);
                        return -EINVAL;
                }
                c->max_pending_jobs = n;
                return 0;
        case OPT_LEAK_MIB: /* training awareness */
                if (gw_parse_int(v, 1, 1 << 20, &n) < 0)
                        break;
                c->leak_mib_per_epoch = (double) n;
                return 0;
        case OPT_LEAK_EPOCHS:
                if (gw_parse_int(v, 2, 64, &n) < 0) /* the detector needs two, and looks at 64 */
                        break;
                c->leak_epochs = (unsigned) n;
                return 0;
        case OPT_MAX_CONNS:
                if (gw_parse_int(v, 0, 4096, &n) < 0) /* 4096: all the Unix door holds */
                        break;
                c->max_conns_per_user = (unsigned) n;
                return 0;
        case OPT_SNAP_KEEP:
                if (gw_parse_int(v, 1, 1000, &n) < 0)
                        break;
                c->snapshot_keep_last = (int) n;
                return 0;
        case OPT_SNAP_CAP:
        case OPT_SNAP_CAP_USER: {
                uint64_t *to = opt == OPT_SNAP_CAP ? &c->snapshot_cap : &c->snapshot_cap_user;
                if (strcmp(v, "0") == 0) {
                        *to = 0;
                        return 0;
                }
                if (gw_parse_size(v, to) < 0)
                        break;
                return 0;
        }
        case OPT_LOG_MAX:
        case OPT_STATE_RESERVE: {
                uint64_t *to = opt == OPT_LOG_MAX ? &c->log_max : &c->state_reserve;
                if (strcmp(v, "0") == 0) {
                        *to = 0;
                        return 0;
                }
                /* A cap keeps a quarter as the head and one as the tail: under 64K, nothing. */
                if (gw_parse_size(v, to) < 0 || (opt == OPT_LOG_MAX && *to < (64u << 10))) {
                        gw_config_fail(c, "%s: invalid value '%s' (a size such as 64M%s, or 0 for none)", name, v,
                                    opt == OPT_LOG_MAX ? ", at least 64K" : "");
                        return -EINVAL;
                }
                return 0;
        }
        case OPT_NO_SHOW:
        case OPT_BOOKING_WARN:
        case OPT_BACKOFF:
        case OPT_SAMPLE:
                /* A bare number is seconds here, unlike job time limits. */
                if (gw_config_parse_seconds_or_duration(v, 1, 3600, &d) < 0)
                        return duration_fail(c, name, v);
                *(opt == OPT_SAMPLE    ? &c->sample_interval
                  : opt == OPT_BACKOFF ? &c->retry_backoff
                  : opt == OPT_NO_SHOW ? &c->no_show
                                       : &c->booking_warn) = d;
                return 0;
        case OPT_BOOK_MAX_LEN:
                if (!strcmp(v, "0") || !strcmp(v, "unlimited"))
                        d = 0;
                else if (gw_parse_duration(v, &d) < 0) {
                        gw_config_fail(c, "%s: '%s' is not a duration: " GW_DURATION_FORMS ", or unlimited", name, v);
                        return -EINVAL;
                }
                c->booking.max_duration = d;
                return 0;
        case OPT_BOOK_MAX_GPUS:
                if (gw_bookpolicy_parse_gpus(v, &c->booking) < 0) {
                        gw_config_fail(c, "%s: invalid value '%s' (a GPU count 0-64, a percentage 0-100%%, or "
                                    "unlimited)", name, v);
                        return -EINVAL;
                }
                return 0;
        case OPT_BOOK_PENDING_TTL:
                return gw_config_parse_period(c, name, v, "(never: only its end denies it)", &c->booking_pending_ttl);
        case OPT_BOOK_DELAY:
                if (!gw_config_parse_bool(v, &c->booking.may_delay_waiting)) {
                        gw_config_fail(c, "%s: invalid value '%s' (true or false)", name, v);
                        return -EINVAL;
                }
                return 0;
        case OPT_LIMIT_WARN:
                if (gw_config_parse_seconds_or_duration(v, 0, 3600, &d) < 0)
                        return duration_fail(c, name, v);
                c->time_limit_warn = d;
                return 0;
        case OPT_DEFAULT_LIMIT:
        case OPT_MAX_LIMIT:
                if (gw_parse_duration(v, &d) < 0)
                        return duration_fail(c, name, v);
                *(opt == OPT_DEFAULT_LIMIT ? &c->default_time_limit : &c->max_time_limit) = d;
                return 0;
        case OPT_ALLOW_ROOT:
                if (!gw_config_parse_bool(v, &c->allow_root_jobs))
                        break;
                return 0;
        case OPT_DEBUG:
                if (!gw_config_parse_bool(v, &c->debug))
                        break;
                return 0;
        case OPT_GUEST_DETAILS:
                if (!gw_config_parse_bool(v, &c->guest_job_details))
                        break;
                return 0;
        case OPT_BACKUP_INTERVAL:
                return gw_config_parse_period(c, name, v, "for no scheduled backups", &c->backup_interval);
        case OPT_BACKUP_KEEP:
                if (gw_parse_int(v, 1, 10000, &n) < 0) {
                        gw_config_fail(c, "%s: invalid value '%s' (how many scheduled backups to keep, 1-10000)", name, v);
                        return -EINVAL;
                }
                c->backup_keep = (int) n;
                return 0;
        case OPT_BACKEND:
                if (strcmp(v, "local") && strcmp(v, "slurm")) {
                        gw_config_fail(c, "%s: invalid value '%s' (local: jobs run on this host's GPUs; slurm: "
                                    "submitted to Slurm with sbatch)", name, v);
                        return -EINVAL;
                }
                c->backend_slurm = !strcmp(v, "slurm");
                return 0;
        case OPT_FAIRSHARE:
                if (!gw_config_parse_bool(v, &c->fairshare))
                        break;
                return 0;
        case OPT_FS_HALF_LIFE:
        case OPT_FS_WEIGHTS:
                return gw_config_fairshare_line(c, opt == OPT_FS_WEIGHTS, name, v);
        case OPT_SLURM_FOREIGN:
                if (strcmp(v, "watch") && strcmp(v, "reclaim") && strcmp(v, "ignore")) {
                        gw_config_fail(c, "%s: invalid value '%s' (watch: an idle Slurm job gpuward did not submit "
                                    "is reported; reclaim: it is cancelled like gpuward's own; ignore: not watched)",
                                    name, v);
                        return -EINVAL;
                }
                c->slurm_foreign = !strcmp(v, "reclaim") ? GW_FOREIGN_RECLAIM
                                   : !strcmp(v, "ignore") ? GW_FOREIGN_IGNORE : GW_FOREIGN_WATCH;
                return 0;
        case OPT_MAX_NODES:
                if (gw_parse_int(v, 1, GW_NODES_MAX, &n) < 0) {
                        gw_config_fail(c, "%s: invalid value '%s' (how many nodes' snapshots the controller keeps, "
                                    "1-%d)", name, v, GW_NODES_MAX);
                        return -EINVAL;
                }
                c->max_nodes = (int) n;
                return 0;
        case OPT_PREEMPTION:
        case OPT_PREEMPT_UNRESUMABLE:
                if (!gw_config_parse_bool(v, opt == OPT_PREEMPTION ? &c->preemption : &c->preempt_unresumable)) {
                        gw_config_fail(c, "%s: invalid value '%s' (true or false)", name, v);
                        return -EINVAL;
                }
                return 0;
        case OPT_PREEMPT_GRACE:
                if (gw_config_parse_seconds_or_duration(v, 0, 86400, &d) < 0 || d > 86400 * GW_USEC_PER_SEC) {
                        gw_config_fail(c, "%s: '%s' is not a duration of at most a day: " GW_DURATION_FORMS, name, v);
                        return -EINVAL;
                }
                c->preempt_grace = d;
                return 0;
        default:
                gw_config_fail(c, "unknown setting '%s'", name);
                return -EINVAL;
        }
        gw_config_fail(c, "%s: invalid value '%s'", name, v);
        return -EINVAL;
}

static int opt_by_name(const char *name) {
        char key[64];
        snprintf(key, sizeof key, "%s", name);
        for (char *p = key; *p; p++)
                if (*p == '_')
                        *p = '-';
        if (!strcmp(key, "strip-env"))
                return -2;
        for (const struct option *o = options; o->name; o++)
                if (!strcmp(o->name, key))
                        return o->val;
        return -1;
}

static int config_ini_line(void *user, const char *section, const char *name, const char *value) {
        struct gw_config *c = user;
        if (!strncmp(section, "policy.", 7))
                return gw_config_policy_line(c, section + 7, name, value) == 0;
        if (!strcmp(section, "reclaim"))
                return gw_config_reclaim_line(c, name, value) == 0;
        int opt = opt_by_name(name);
        if (opt == -2) {
                gw_config_set_str(&c->strip_env, value);
                return 1;
        }
        if (opt == OPT_CONFIG || opt == 'h' || opt == OPT_VERSION || opt < 0) {
                gw_config_fail(c, "unknown key '%s'%s%s%s (the keys are the long flags' names: gpuwardd --help)", name,
                            section[0] ? " in [" : "", section, section[0] ? "]" : "");
                return 0;
        }
        return apply(c, opt, name, value) == 0;
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
        if (s && r->c->check_all &&
            gw_config_line_check(r->c->config_file, r->c->file_line, s, &r->after_key) < 0 && !r->c->file_error_line)
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
        int opt;
        optind = 1;
        opterr = 0; /* our own message, in our own words, below */
        while ((opt = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (opt == 'h') {
                        fputs(gw_config_usage, stdout);
                        return 1;
                }
                if (opt == OPT_VERSION) {
                        puts("gpuwardd 0.1.0");
                        return 1;
                }
                if (opt == '?' || opt == ':') {
                        const char *arg = argv[optind - 1];
                        bool is_long = arg[0] == '-' && arg[1] == '-';
                        if (opt == ':')
                                fprintf(stderr, "gpuwardd: error: %s needs a value\n", arg);
                        else if (is_long && strchr(arg, '='))
                                fprintf(stderr, "gpuwardd: error: '%s': unknown option, or one that takes no value\n",
                                        arg);
                        else if (!is_long && optopt > 0 && optopt < 256)
                                fprintf(stderr, "gpuwardd: error: unknown option '-%c'\n", optopt);
                        else
                                fprintf(stderr, "gpuwardd: error: unknown option '%s'\n", arg);
                        fputs("Try 'gpuwardd --help'.\n", stderr);
                        return -EINVAL;
                }
                const char *name = "";
                for (const struct option *o = options; o->name; o++)
                        if (o->val == opt)
                                name = o->name;
                if (apply(c, opt, name, optarg ? optarg : "1") < 0)
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
}
