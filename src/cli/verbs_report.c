/* gpuward report: GPU-hours, utilisation and outcomes per user over the last days. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/verbs.h"

#define REPORT_DAYS_MAX 90 /* as gpuwardd allows */

static const char report_help[] = "Usage: gpuward report [--days N] [--json]\n"
                                  "\n"
                                  "Who used the GPUs over the last N days, and how well: per user, the jobs that ran\n"
                                  "in that time, their GPU-hours inside it, the GPU-hour weighted mean utilisation of\n"
                                  "their GPUs (low: GPUs held but little used), how the jobs ended, and the GPU-hours\n"
                                  "of jobs that were reclaimed for idling.  Most GPU-hours first.\n"
                                  "\n"
                                  "Options:\n"
                                  "  --days N     the window, 1 to 90 (default 7)\n"
                                  "  --json       print the API's JSON\n"
                                  "  -h, --help   this help\n"
                                  "\n"
                                  "Examples:\n"
                                  "  gpuward report\n"
                                  "  gpuward report --days 30 --json\n";

static long long state_count(const json_t *u, const char *state) {
        long long n = 0;
        return cli_jint(json_object_get(u, "states"), state, &n) ? n : 0;
}

static int add_user_row(struct cli_table *t, const json_t *u, time_t now) {
        (void) now;
        char jobs[24], hours[32], util[16], done[24], failed[24], stopped[24], reclaimed[48], running[24];
        long long n = 0;
        double rh = cli_jnum(u, "reclaimed_gpu_hours"), um = cli_jnum(u, "util_mean");
        snprintf(jobs, sizeof jobs, "%lld", cli_jint(u, "jobs", &n) ? n : 0);
        snprintf(hours, sizeof hours, "%.1f", cli_jnum(u, "gpu_hours"));
        if (isfinite(um))
                snprintf(util, sizeof util, "%.0f%%", um);
        else
                snprintf(util, sizeof util, "-");
        snprintf(done, sizeof done, "%lld", state_count(u, "COMPLETED"));
        snprintf(failed, sizeof failed, "%lld", state_count(u, "FAILED"));
        snprintf(stopped, sizeof stopped, "%lld", state_count(u, "CANCELLED") + state_count(u, "TIMEOUT"));
        snprintf(reclaimed, sizeof reclaimed, "%lld (%.1f GPU-h)", state_count(u, "RECLAIMED"), isfinite(rh) ? rh : 0);
        snprintf(running, sizeof running, "%lld", state_count(u, "RUNNING"));
        const char *user = cli_jstr(u, "user");
        const char *cells[] = { user ? user : "?", jobs, hours, util, done, failed, stopped, reclaimed, running };
        return cli_table_add(t, cells);
}

static int print_report(const json_t *reply) {
        static const char *const cols[] = { "USER",   "JOBS",         "GPU_HOURS", "UTIL",   "COMPLETED",
                                            "FAILED", "CANCELLED/TO", "RECLAIMED", "RUNNING" };
        static const struct cli_rows rows = { .cols = cols, .ncols = ELEMENTSOF(cols), .add_row = add_user_row };
        const json_t *users = json_object_get(reply, "users");
        long long days = 0;
        (void) cli_jint(reply, "days", &days);
        if (json_array_size(users) == 0) {
                printf("No job ran in the last %lld day%s.\n", days, days == 1 ? "" : "s");
                return CLI_EXIT_OK;
        }
        printf("The last %lld day%s:\n", days, days == 1 ? "" : "s");
        return cli_print_rows(&rows, users);
}

static int take_days(const char *arg, char **ret) {
        long long days;
        if (gw_parse_int(arg, 1, REPORT_DAYS_MAX, &days) < 0)
                return cli_usage("report", "--days: '%s' is not a number of days from 1 to %d", arg, REPORT_DAYS_MAX);
        return asprintf(ret, "%lld", days) < 0 ? cli_oom() : 0;
}

int cli_verb_report(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct cli_get_verb v = {
                .verb = "report",
                .help = report_help,
                .target = "/api/v1/usage",
                .print = print_report,
                .option = "days",
                .take = take_days,
                .value_default = "7",
        };
        return cli_run_get_verb(ctx, &v, argc, argv);
}
