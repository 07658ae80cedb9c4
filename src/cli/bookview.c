/* Bookings in the CLI (see bookview.h). */
#include "cli/bookview.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/format.h"

#define WEEK_SECS (7 * 24 * 3600)
#define DENY_REASON_MAX 200 /* characters, as gpuwardd takes */

static bool local_tm(double unix_s, struct tm *tm) {
        if (!isfinite(unix_s) || unix_s <= 0 || unix_s > 1e15)
                return false;
        time_t t = (time_t) unix_s;
        return localtime_r(&t, tm) != NULL;
}

char *cli_format_when(double unix_s, time_t now, char *buf, size_t n) {
        struct tm tm, tm_now;
        time_t now_day = now;
        if (!local_tm(unix_s, &tm) || !localtime_r(&now_day, &tm_now)) {
                snprintf(buf, n, "-");
                return buf;
        }
        /* The weekday alone is clear from today up to six days ahead. */
        double midnight = (double) now - (tm_now.tm_hour * 3600 + tm_now.tm_min * 60 + tm_now.tm_sec);
        size_t k;
        if (unix_s >= midnight && unix_s < midnight + WEEK_SECS - 3600)
                k = strftime(buf, n, "%a %H:%M", &tm);
        else if (tm.tm_year == tm_now.tm_year)
                k = strftime(buf, n, "%a %m-%d %H:%M", &tm);
        else
                k = strftime(buf, n, "%Y-%m-%d %H:%M", &tm);
        if (k == 0)
                snprintf(buf, n, "-");
        return buf;
}

char *cli_booking_span(const json_t *booking, time_t now, char *buf, size_t n) {
        double start = cli_jnum(booking, "start"), end = cli_jnum(booking, "end");
        char a[48], b[48];
        struct tm ts, te;
        cli_format_when(start, now, a, sizeof(a));
        if (local_tm(start, &ts) && local_tm(end, &te) && ts.tm_year == te.tm_year && ts.tm_yday == te.tm_yday) {
                if (strftime(b, sizeof(b), "%H:%M", &te) == 0)
                        snprintf(b, sizeof(b), "-");
        } else {
                cli_format_when(end, now, b, sizeof(b));
        }
        snprintf(buf, n, "%s-%s", a, b);
        return buf;
}

int cli_parse_booking_id(const char *verb, const char *s, long long *ret_id) {
        long long id;
        if (gw_parse_int(s, 1, INT64_MAX, &id) < 0) {
                cli_usage(verb, "'%s' is not a booking id (a positive number, as 'gpuward reservations' lists them)",
                          s);
                return -EINVAL;
        }
        *ret_id = id;
        return 0;
}

static const struct {
        const char *method;
        const char *suffix; /* after /api/v1/bookings/ID */
        const char *done; /* "Released booking 12" */
} changes[] = {
        [CLI_BOOKING_RELEASE] = { "DELETE", "", "Released" },
        [CLI_BOOKING_APPROVE] = { "POST", "/approve", "Approved" },
        [CLI_BOOKING_DENY] = { "POST", "/deny", "Denied" },
};

static int change_one(struct cli_ctx *ctx, enum cli_booking_change change, long long id, const json_t *body, bool json,
                      json_t *out) {
        char target[96], subject[48];
        snprintf(target, sizeof(target), "/api/v1/bookings/%lld%s", id, changes[change].suffix);
        snprintf(subject, sizeof(subject), "booking %lld", id);
        static const struct cli_field_alias aliases[] = { { "reason", "--reason" }, { NULL, NULL } };
        struct cli_call call = { .method = changes[change].method,
                                 .target = target,
                                 .subject = subject,
                                 .body = body,
                                 .aliases = aliases };
        json_t *reply = NULL;
        int r = cli_api_json(ctx, &call, &reply);
        if (r)
                return r;
        if (json) {
                (void) json_array_append(out, reply);
        } else {
                char span[112];
                const char *name = cli_jstr(reply, "name");
                _cleanup_free_ char *safe = name && *name ? cli_sanitize(name) : NULL;
                printf("%s booking %lld%s%s%s (%s)\n", changes[change].done, id, safe ? " '" : "", safe ? safe : "",
                       safe ? "'" : "", cli_booking_span(reply, time(NULL), span, sizeof(span)));
        }
        json_decref(reply);
        return CLI_EXIT_OK;
}

static int on_reason(void *userdata, int opt, const char *arg) {
        (void) opt;
        *(const char **) userdata = arg;
        return 0;
}

/* --reason's text as a deny's body; NULL, or exit code in *ret_exit, when it is bad. */
static json_t *deny_body(const char *verb, const char *reason, int *ret_exit) {
        *ret_exit = CLI_EXIT_OK;
        if (!reason)
                return NULL;
        if (!reason[strspn(reason, " \t")] || strpbrk(reason, "\n\r")) {
                *ret_exit = cli_usage(verb, "--reason: say why on one line (it is empty or has a line break)");
                return NULL;
        }
        if (cli_display_width(reason) > DENY_REASON_MAX) {
                *ret_exit = cli_usage(verb, "--reason: at most %d characters", DENY_REASON_MAX);
                return NULL;
        }
        json_t *body = json_pack("{s:s}", "reason", reason);
        if (!body)
                *ret_exit = cli_usage(verb, "--reason: not valid UTF-8 text");
        return body;
}

int cli_booking_change_run(struct cli_ctx *ctx, enum cli_booking_change change, const char *verb, const char *help,
                           int argc, char **argv) {
        enum { OPT_REASON = 0x100 };
        static const struct option reason_opt[] = {
                { "reason", required_argument, NULL, OPT_REASON },
                { 0 },
        };
        const char *reason = NULL;
        /* Only a deny takes a reason: elsewhere "unknown option" names it. */
        const struct cli_options spec = {
                .verb = verb,
                .help = help,
                .extra = change == CLI_BOOKING_DENY ? reason_opt : NULL,
                .on_option = on_reason,
                .userdata = &reason,
        };
        bool json;
        int early = cli_parse_options(ctx, &spec, argc, argv, &json);
        if (early >= 0)
                return early;
        if (optind >= argc)
                return cli_usage(verb, "which booking? gpuward %s ID... ('gpuward reservations' lists them)", verb);
        int n = argc - optind;
        _cleanup_free_ long long *ids = calloc((size_t) n, sizeof(long long));
        if (!ids)
                return CLI_EXIT_FAIL;
        /* Every id first: a typo must not leave half the work done. */
        for (int i = 0; i < n; i++)
                if (cli_parse_booking_id(verb, argv[optind + i], &ids[i]) < 0)
                        return CLI_EXIT_USAGE;
        int status;
        json_t *body = deny_body(verb, reason, &status);
        if (status != CLI_EXIT_OK)
                return status;
        json_t *out = json_array();
        for (int i = 0; i < n; i++)
                if (change_one(ctx, change, ids[i], body, json, out) != CLI_EXIT_OK)
                        status = CLI_EXIT_FAIL;
        if (json && json_array_size(out) > 0 && cli_print_json(n == 1 ? json_array_get(out, 0) : out) < 0)
                status = CLI_EXIT_FAIL;
        json_decref(out);
        json_decref(body);
        return status;
}
