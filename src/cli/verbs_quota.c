/* gpuward quota and gpuward admin quota set: per-user limits and what was used of them. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/verbs.h"
#include "core/quota.h"

static const char quota_help[] = "Usage: gpuward quota [--user NAME] [--json]\n"
                                 "\n"
                                 "Show your limits on this server and what you use of them.  Each limit comes from\n"
                                 "a setting for you (FROM user), for one of your Unix groups (group: the most\n"
                                 "generous of them), the default, your role (role: the daemon's user_max_priority\n"
                                 "and max_pending_jobs for users; admins may use any priority), the built-in\n"
                                 "default (built-in: 30d for booking_horizon_hours), or nowhere (unlimited):\n"
                                 "  max_gpus               GPUs your jobs may hold at once (more wait: Quota)\n"
                                 "  max_pending_jobs       jobs you may have waiting, an array's tasks\n"
                                 "                         one each (more are refused)\n"
                                 "  max_time_limit         the longest --time a job may ask for\n"
                                 "  max_gpu_hours_7d       GPU-hours in the last 7 days (beyond: jobs wait, Quota)\n"
                                 "  max_booking_hours      the longest booking approved without an admin\n"
                                 "                         (booking_max_duration, 1d unless set, too)\n"
                                 "  max_booking_gpus       the most GPUs booked at once without an admin\n"
                                 "  booking_horizon_hours  how far ahead a booking may start\n"
                                 "                         (30d unless set)\n"
                                 "  max_priority           the highest --priority you may give a job\n"
                                 "                         (higher is refused; a profile may grant more)\n"
                                 "\n"
                                 "Options:\n"
                                 "  --user NAME  someone else's limits and usage\n" CLI_HELP_JSON CLI_HELP_HELP "\n"
                                 "Examples:\n"
                                 "  gpuward quota\n"
                                 "  gpuward quota --user alice\n"
                                 "  gpuward quota --json | jq .usage.gpu_hours_7d\n";

static const char quota_set_help[] =
        "Usage: gpuward admin quota set [--json] USER|@GROUP|default KEY=VALUE...\n"
        "\n"
        "Set limits for a user, for the members of a Unix group (@GROUP), or the default\n"
        "for everyone without their own.  All settings are checked before any is stored.\n"
        "Keys ('gpuward quota --help' says what each limits):\n"
        "  max_gpus, max_pending_jobs, max_booking_gpus  a count (0 forbids)\n"
        "  max_time_limit                                a duration: 2d, 90m, 1-12:00:00\n"
        "  max_booking_hours, booking_horizon_hours      hours or a duration: 4, 90m, 2d\n"
        "  max_gpu_hours_7d                              GPU-hours: 100\n"
        "  max_priority                                  a priority, 0 to 1000\n"
        "Any key also takes 'unlimited', or 'unset' to fall back to the groups and the\n"
        "default.\n"
        "\n"
        "Options:\n" CLI_HELP_JSON CLI_HELP_HELP "\n"
        "Examples:\n"
        "  gpuward admin quota set alice max_gpus=4 max_time_limit=2d\n"
        "  gpuward admin quota set @students max_gpus=2 max_booking_hours=4\n"
        "  gpuward admin quota set default max_gpu_hours_7d=200 booking_horizon_hours=168\n"
        "  gpuward admin quota set alice max_gpus=unset\n"
        "  gpuward admin quota set @lab max_priority=10  # up to 10\n"
        "  gpuward quota --user alice      # what alice gets now\n";

/* The limits in the order the docs list them, then any key this CLI does not know. */
static int add_limit_rows(struct cli_table *t, const json_t *limits) {
        for (int k = 0; k < _GW_QUOTA_KEY_MAX; k++) {
                const char *key = gw_quota_key_name(k);
                const json_t *l = json_object_get(limits, key);
                const char *cells[] = { key, cli_jstr(l, "value"), cli_jstr(l, "from") };
                if (l && cli_table_add(t, cells) < 0)
                        return -ENOMEM;
        }
        const char *key;
        const json_t *l;
        json_object_foreach ((json_t *) limits, key, l) {
                const char *cells[] = { key, cli_jstr(l, "value"), cli_jstr(l, "from") };
                if (gw_quota_key_from_name(key) < 0 && cli_table_add(t, cells) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int print_quota(const json_t *reply) {
        static const char *const cols[] = { "KEY", "VALUE", "FROM" };
        const json_t *limits = json_object_get(reply, "limits");
        const json_t *usage = json_object_get(reply, "usage");
        if (!json_is_object(limits)) {
                cli_error("gpuwardd's reply has no \"limits\"");
                return CLI_EXIT_FAIL;
        }
        struct cli_table *t = cli_table_new(cols, ELEMENTSOF(cols));
        if (!t || add_limit_rows(t, limits) < 0) {
                cli_table_free(t);
                cli_error("out of memory");
                return CLI_EXIT_FAIL;
        }
        const char *user = cli_jstr(reply, "user");
        _cleanup_free_ char *suser = user ? cli_sanitize(user) : NULL;
        if (suser)
                printf("Quota of %s\n", suser);
        cli_table_print(t, stdout);
        cli_table_free(t);
        long long v;
        double h = cli_jnum(usage, "gpu_hours_7d");
        putchar('\n');
        if (cli_jint(usage, "gpus_running", &v))
                printf("GPUs running: %lld\n", v);
        if (cli_jint(usage, "pending_jobs", &v))
                printf("Pending jobs: %lld\n", v);
        if (isfinite(h))
                printf("GPU-hours in 7 days: %.1f\n", h);
        return CLI_EXIT_OK;
}

static int take_user(const char *arg, char **ret) {
        if (!*arg)
                return cli_usage("quota", "--user: the user name is empty");
        *ret = strdup(arg);
        return *ret ? 0 : cli_oom();
}

int cli_verb_quota(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct cli_get_verb v = {
                .verb = "quota",
                .help = quota_help,
                .target = "/api/v1/quota",
                .print = print_quota,
                .option = "user",
                .take = take_user,
        };
        return cli_run_get_verb(ctx, &v, argc, argv);
}

/* USER, @GROUP or default: what gpuwardd takes as a subject (it checks the rest). */
static bool subject_ok(const char *s) {
        const char *name = s[0] == '@' ? s + 1 : s;
        return *name && strlen(s) <= 64 && !strpbrk(s, " \t\r\n=:/") && strspn(name, "@") == 0;
}

/* What the admin typed: the subject, then the settings. */
struct typed_words {
        char **v;
        int n;
};

/* "Quota of alice set: max_gpus=2 max_time_limit=2d". */
static int print_quota_set(const json_t *reply, void *userdata) {
        const struct typed_words *said = userdata;
        _cleanup_free_ char *ssubj = cli_sanitize(said->v[0]);
        printf("Quota of %s set:", ssubj ? ssubj : "?");
        for (int i = 1; i < said->n; i++) {
                _cleanup_free_ char *s = cli_sanitize(said->v[i]);
                printf(" %s", s ? s : "?");
        }
        putchar('\n');
        return CLI_EXIT_OK;
}

static int run_quota_set(struct cli_ctx *ctx, int argc, char **argv) {
        const char *verb = "admin quota set";
        bool json;
        /* Not permuting: a value such as max_gpus=-1 is an argument, not an option. */
        int r = cli_parse_json_only(ctx, verb, quota_set_help, false, argc, argv, &json);
        if (r >= 0)
                return r;
        if (argc - optind < 2)
                return cli_usage(verb, "whose quota, and what? gpuward %s USER|@GROUP|default KEY=VALUE...", verb);
        const char *subject = argv[optind];
        if (!subject_ok(subject))
                return cli_usage(verb, "'%s' is not a user name, @GROUP or 'default'", subject);
        json_t *settings = json_array();
        json_t *body = json_pack("{s:s,s:o}", "subject", subject, "settings", settings);
        if (!body)
                return cli_usage(verb, "'%s': not valid UTF-8 text", subject);
        /* The daemon's own parser: every setting checked before anything is sent. */
        struct gw_quota scratch;
        gw_quota_init(&scratch);
        for (int i = optind + 1; i < argc; i++) {
                char msg[GW_QUOTA_MSG_SIZE];
                json_t *s = json_string(argv[i]);
                if (!s || gw_quota_parse_setting(&scratch, argv[i], msg, sizeof(msg)) < 0) {
                        json_decref(s);
                        json_decref(body);
                        _cleanup_free_ char *safe = cli_sanitize(s ? msg : "a setting is not valid UTF-8 text");
                        return cli_usage(verb, "%s", safe ? safe : "bad setting");
                }
                (void) json_array_append_new(settings, s);
        }
        static const struct cli_field_alias aliases[] = { { "subject", NULL }, { "settings", NULL }, { NULL, NULL } };
        struct cli_call call = { .method = "POST", .target = "/api/v1/quota", .body = body, .aliases = aliases };
        struct typed_words said = { argv + optind, argc - optind };
        r = cli_call_and_show(ctx, &call, json, print_quota_set, &said);
        json_decref(body);
        return r;
}

int cli_admin_quota(struct cli_ctx *ctx, int argc, char **argv) {
        /* argv[0] is "quota"; only "set" so far, named so that "show" can join it. */
        if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
                fputs(quota_set_help, stdout);
                return CLI_EXIT_OK;
        }
        if (argc < 2)
                return cli_usage("admin quota set", "which command? gpuward admin quota set USER KEY=VALUE... "
                                                    "('gpuward quota --user USER' shows a user's quota)");
        if (strcmp(argv[1], "set") != 0)
                return cli_usage("admin quota set", "unknown quota command '%s' (set; 'gpuward quota' shows)", argv[1]);
        return run_quota_set(ctx, argc - 1, argv + 1);
}
