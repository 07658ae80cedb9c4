/* gpuward reserve, reservations, unreserve, schedule: GPUs booked ahead of time. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "base/text.h"
#include "base/when.h"
#include "cli/api.h"
#include "cli/bookview.h"
#include "cli/format.h"
#include "cli/jobview.h"
#include "cli/verbs.h"

#define NAME_MAX_COLS 24
/* As gpuwardd stores it (a NUL ends its 128 bytes); longer would be cut silently. */
#define BOOKING_NAME_MAX 127
/* As GET /api/v1/schedule accepts: two weeks. */
#define SCHEDULE_HOURS_MAX (24 * 14)

static const char reserve_help[] = "Usage: gpuward reserve --gpus N --start WHEN --duration DURATION\n"
                                   "                       [--name NAME] [--json]\n"
                                   "\n"
                                   "Book GPUs for a window of time, so that they are yours then.  gpuwardd picks the\n"
                                   "GPUs (and may pick others before the start if one is drained).  A booking within\n"
                                   "your quota and the host's booking policy is approved at once; one that is longer\n"
                                   "(1 day by default) or larger (half the GPUs), or that would delay jobs already\n"
                                   "waiting, waits for an admin, and gpuward says which ('gpuward reservations'\n"
                                   "shows its state, 'gpuward quota' your limits).  Until an admin approves it, it\n"
                                   "holds nothing: others may book the same GPUs and time, and the approval is\n"
                                   "refused if it no longer fits.  A booking may start at most 30 days ahead unless\n"
                                   "your quota says otherwise (booking_horizon_hours).  When the\n"
                                   "GPUs are not free for the whole window, nothing is booked and gpuward names the\n"
                                   "nearest window that fits.\n"
                                   "\n"
                                   "Run jobs in it with 'gpuward submit --reservation ID': they wait until it\n"
                                   "starts, run on its GPUs, are warned before it ends and get SIGTERM at its end.\n"
                                   "A booking with no job running some minutes after its start (15 by default) is\n"
                                   "released.\n"
                                   "\n"
                                   "Options:\n"
                                   "  --gpus N             GPUs to book (required)\n"
                                   "  --start WHEN         when it starts (required): now+2h, +90m, 14:00 (the\n"
                                   "                       next one), 'tomorrow 09:00', 'today 18:30',\n"
                                   "                       '2026-11-22 09:00', 2026-11-22T09:00:00Z, or Unix\n"
                                   "                       seconds; local times are read in gpuwardd's time zone\n"
                                   "  --duration DURATION  how long (required): 4h, 90m, 1d, 1h30m, 04:00:00 (bare\n"
                                   "                       number: minutes)\n"
                                   "  --name NAME          a name shown by 'gpuward reservations'\n"
                                   "  --json               print the API's JSON: the booking, or the refusal with\n"
                                   "                       the nearest window in \"nearest\"\n"
                                   "  -h, --help           this help\n"
                                   "\n"
                                   "Examples:\n"
                                   "  gpuward reserve --gpus 2 --start 'tomorrow 09:00' --duration 4h --name yolo-ft\n"
                                   "  gpuward reserve --gpus 1 --start now+2h --duration 90m\n"
                                   "  ID=$(gpuward reserve --json --gpus 2 --start 14:00 --duration 2h | jq .id)\n"
                                   "  gpuward submit --reservation \"$ID\" --gpus 2 -- yolo train model=yolov8l.pt\n"
                                   "  gpuward unreserve \"$ID\"     # give the GPUs back\n";

static const char reservations_help[] =
        "Usage: gpuward reservations [--json]\n"
        "\n"
        "List the open bookings of everyone: awaiting an admin's approval\n"
        "(PENDING_APPROVAL), APPROVED, or ACTIVE (started).  GPUS is the count, then the\n"
        "GPUs gpuwardd picked; a line under a booking gives its note (why it awaits\n"
        "approval, who approved it).  'gpuward schedule' draws them with the jobs.\n" CLI_HELP_JSON_OPTIONS
        "Examples:\n"
        "  gpuward reservations\n"
        "  gpuward reservations --json | jq '.bookings[] | select(.user == \"alice\")'\n";

static const char unreserve_help[] = "Usage: gpuward unreserve [--json] ID...\n"
                                     "\n"
                                     "Release bookings: their GPUs are free for others again, and jobs waiting to run\n"
                                     "in them will not start.  You may release your own bookings; admins any.\n"
                                     "\n"
                                     "Options:\n"
                                     "  --json       print the API's JSON (the released booking)\n" CLI_HELP_HELP "\n"
                                     "Examples:\n"
                                     "  gpuward unreserve 12\n"
                                     "  gpuward unreserve 12 13\n";

static const char schedule_help[] =
        "Usage: gpuward schedule [--hours H] [--json]\n"
        "\n"
        "Draw the coming hours as a text chart, one row per GPU: running jobs until their\n"
        "predicted end, the predicted starts of waiting jobs, bookings (approved or\n"
        "awaiting approval) and drained GPUs.  One column is an hour (ten minutes for 12\n"
        "hours or less); the legend under the chart says what each mark means.  Use it to\n"
        "pick a --start for 'gpuward reserve'.\n"
        "\n"
        "Options:\n"
        "  --hours H    how far ahead, 1-336 (default 72)\n"
        "  --json       print the API's JSON: the segments behind the chart\n" CLI_HELP_HELP "\n"
        "Examples:\n"
        "  gpuward schedule\n"
        "  gpuward schedule --hours 12\n"
        "  gpuward schedule --json | jq '.segments[] | select(.kind == \"booking\")'\n";

enum { OPT_GPUS = 0x100, OPT_START, OPT_DURATION, OPT_NAME };

struct reserve_opts {
        long long ngpus;
        const char *start;
        gw_usec_t duration;
        const char *name;
};

static int on_reserve_option(void *userdata, int opt, const char *arg) {
        static const char verb[] = "reserve";
        struct reserve_opts *o = userdata;
        gw_usec_t when;
        long long secs;
        switch (opt) {
        case OPT_GPUS:
                if (gw_parse_int(arg, 1, INT_MAX, &o->ngpus) < 0)
                        return cli_usage(verb, "--gpus: '%s' is not a number of GPUs (1 or more)", arg);
                return 0;
        case OPT_START:
                /* Sent as typed (a plain number: Unix seconds): gpuwardd reads it against its
                 * clock.  Checked here with the same parser so that a typo is a usage error. */
                if (!*arg ||
                    (gw_parse_int(arg, 0, LLONG_MAX, &secs) < 0 && gw_parse_when(arg, gw_now_wall(), &when) < 0))
                        return cli_usage(verb,
                                         "--start: '%s' is not a time (examples: now+2h, 14:00, "
                                         "'tomorrow 09:00', 2026-11-22T09:00:00Z)",
                                         arg);
                o->start = arg;
                return 0;
        case OPT_DURATION:
                if (arg[0] == '-' || gw_parse_duration(arg, &o->duration) < 0)
                        return cli_usage(verb, "--duration: '%s' is not a duration: " GW_DURATION_FORMS, arg);
                return 0;
        default: /* OPT_NAME */
                if (!*arg)
                        return cli_usage(verb, "--name: the name is empty");
                if (strlen(arg) > BOOKING_NAME_MAX)
                        return cli_usage(verb, "--name: at most %d bytes", BOOKING_NAME_MAX);
                o->name = arg;
                return 0;
        }
}

static int parse_reserve(struct cli_ctx *ctx, int argc, char **argv, struct reserve_opts *o, bool *ret_json) {
        static const struct option extra[] = {
                { "gpus", required_argument, NULL, OPT_GPUS },
                { "start", required_argument, NULL, OPT_START },
                { "duration", required_argument, NULL, OPT_DURATION },
                { "name", required_argument, NULL, OPT_NAME },
                { 0 },
        };
        const struct cli_options spec = {
                .verb = "reserve",
                .help = reserve_help,
                .extra = extra,
                .no_arguments = true,
                .on_option = on_reserve_option,
                .userdata = o,
        };
        int r = cli_parse_options(ctx, &spec, argc, argv, ret_json);
        if (r >= 0)
                return r;
        if (!o->ngpus || !o->start || !o->duration)
                return cli_usage("reserve", "%s is required: gpuward reserve --gpus N --start WHEN --duration DURATION",
                                 !o->ngpus   ? "--gpus"
                                 : !o->start ? "--start"
                                             : "--duration");
        return -1;
}

/* {"ngpus", "start", "duration", "name"}: a plain number for start is Unix seconds. */
static int reserve_body(const struct reserve_opts *o, json_t **ret) {
        long long secs;
        json_t *start = gw_parse_int(o->start, 0, LLONG_MAX, &secs) == 0 ? json_integer(secs) : json_string(o->start);
        gw_usec_t dur = (o->duration + GW_USEC_PER_SEC - 1) / GW_USEC_PER_SEC;
        json_t *body = json_pack("{s:I,s:o,s:I}", "ngpus", (json_int_t) o->ngpus, "start", start, "duration",
                                 (json_int_t) dur);
        if (!body)
                return cli_usage("reserve", "--start: not valid UTF-8 text");
        if (o->name) {
                json_t *name = json_string(o->name);
                if (!name) {
                        json_decref(body);
                        return cli_usage("reserve", "--name: not valid UTF-8 text");
                }
                (void) json_object_set_new(body, "name", name);
        }
        *ret = body;
        return 0;
}

static void print_booked(const json_t *b) {
        char span[112];
        long long id = 0, n = 0;
        (void) cli_jint(b, "id", &id);
        (void) cli_jint(b, "ngpus", &n);
        const char *state = cli_jstr(b, "state");
        const char *note = cli_jstr(b, "note");
        _cleanup_free_ char *gpus = cli_job_gpu_list(b);
        _cleanup_free_ char *snote = note && *note ? cli_sanitize(note) : NULL;
        cli_booking_span(b, time(NULL), span, sizeof(span));
        if (state && strcmp(state, "PENDING_APPROVAL") == 0) {
                /* gpuwardd's note may say it too: "needs an admin's approval: max_...". */
                static const char said[] = "needs an admin's approval: ";
                if (snote && strncmp(snote, said, strlen(said)) == 0 && snote[strlen(said)])
                        memmove(snote, snote + strlen(said), strlen(snote + strlen(said)) + 1);
                if (snote)
                        printf("booking %lld awaits an admin's approval: %s\n", id, snote);
                else
                        printf("booking %lld awaits an admin's approval: %lld GPU%s, %s\n", id, n, n == 1 ? "" : "s",
                               span);
                return;
        }
        _cleanup_free_ char *sstate = cli_sanitize(state && strcmp(state, "APPROVED") ? state : "approved");
        printf("booking %lld %s: %lld GPU%s (%s), %s\n", id, sstate ? sstate : "?", n, n == 1 ? "" : "s",
               gpus ? gpus : "-", span);
}

int cli_verb_reserve(struct cli_ctx *ctx, int argc, char **argv) {
        struct reserve_opts o = { 0 };
        bool json;
        int r = parse_reserve(ctx, argc, argv, &o, &json);
        if (r >= 0)
                return r;
        json_t *body = NULL;
        r = reserve_body(&o, &body);
        if (r)
                return r;
        static const struct cli_field_alias aliases[] = {
                { "ngpus", "--gpus" }, { "start", "--start" }, { "duration", "--duration" },
                { "name", "--name" },  { NULL, NULL },
        };
        /* 409: it does not fit; the reply names the nearest window that does. */
        struct cli_call call = {
                .method = "POST",
                .target = "/api/v1/bookings",
                .body = body,
                .aliases = aliases,
                .accept_status = 409,
        };
        json_t *reply = NULL;
        int status = 0;
        r = cli_api_json_status(ctx, &call, &reply, &status);
        json_decref(body);
        if (r)
                return r;
        if (json)
                r = cli_show_json(reply);
        if (status == 409) {
                const char *why = cli_jstr(reply, "error");
                _cleanup_free_ char *safe = cli_sanitize(why ? why : "the GPUs are not free then");
                /* Also with --json: stderr says why, stdout carries "nearest" for scripts. */
                cli_error("refused: %s", safe ? safe : "?");
                r = CLI_EXIT_FAIL;
        } else if (!json) {
                print_booked(reply);
        }
        json_decref(reply);
        return r;
}

static int add_booking_row(struct cli_table *t, const json_t *b, time_t now) {
        char id[32], gpus[96], start[48], end[48], ubuf[32];
        long long v = 0;
        snprintf(id, sizeof(id), "%lld", cli_jint(b, "id", &v) ? v : 0);
        _cleanup_free_ char *list = cli_job_gpu_list(b);
        if (!cli_jint(b, "ngpus", &v))
                v = (long long) json_array_size(json_object_get(b, "gpus"));
        if (list && strcmp(list, "-"))
                snprintf(gpus, sizeof(gpus), "%lld (%s)", v, list);
        else
                snprintf(gpus, sizeof(gpus), "%lld", v);
        const char *cells[] = {
                id,
                cli_job_user(b, ubuf, sizeof(ubuf)),
                cli_jstr(b, "name") && *cli_jstr(b, "name") ? cli_jstr(b, "name") : NULL,
                gpus,
                cli_format_when(cli_jnum(b, "start"), now, start, sizeof(start)),
                cli_format_when(cli_jnum(b, "end"), now, end, sizeof(end)),
                cli_jstr(b, "state"),
        };
        if (cli_table_add(t, cells) < 0)
                return -ENOMEM;
        const char *note = cli_jstr(b, "note");
        if (!note || !*note)
                return 0;
        _cleanup_free_ char *line = NULL;
        if (asprintf(&line, "    %s", note) < 0)
                return -ENOMEM;
        return cli_table_add_line(t, line);
}

static int print_bookings(const json_t *bookings) {
        static const char *const cols[] = { "ID", "USER", "NAME", "GPUS", "START", "END", "STATE" };
        static const struct cli_rows rows = {
                .cols = cols,
                .ncols = ELEMENTSOF(cols),
                .narrow_col = 2,
                .max_width = NAME_MAX_COLS,
                .add_row = add_booking_row,
        };
        return cli_print_rows(&rows, bookings);
}

int cli_verb_reservations(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct cli_get_verb v = {
                .verb = "reservations",
                .help = reservations_help,
                .target = "/api/v1/bookings",
                .array_key = "bookings",
                .print = print_bookings,
        };
        return cli_run_get_verb(ctx, &v, argc, argv);
}

int cli_verb_unreserve(struct cli_ctx *ctx, int argc, char **argv) {
        return cli_booking_change_run(ctx, CLI_BOOKING_RELEASE, "unreserve", unreserve_help, argc, argv);
}

/* The chart as gpuwardd drew it, each line neutralised (an older gpuwardd left names raw). */
static int print_chart(const json_t *reply) {
        const char *text = cli_jstr(reply, "text");
        if (!text) {
                cli_error("gpuwardd's schedule has no \"text\" chart");
                return CLI_EXIT_FAIL;
        }
        _cleanup_free_ char *copy = gw_xstrdup(text);
        for (char *line = copy, *nl; line; line = nl) {
                nl = strchr(line, '\n');
                if (nl)
                        *nl++ = '\0';
                (void) gw_text_neutralize(line);
                if (*line || nl)
                        printf("%s\n", line);
        }
        return CLI_EXIT_OK;
}

static int take_hours(const char *arg, char **ret) {
        long long hours;
        if (gw_parse_int(arg, 1, SCHEDULE_HOURS_MAX, &hours) < 0)
                return cli_usage("schedule", "--hours: '%s' is not a number of hours from 1 to %d", arg,
                                 SCHEDULE_HOURS_MAX);
        return asprintf(ret, "%lld", hours) < 0 ? cli_oom() : 0;
}

int cli_verb_schedule(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct cli_get_verb v = {
                .verb = "schedule",
                .help = schedule_help,
                .target = "/api/v1/schedule",
                .print = print_chart,
                .option = "hours",
                .take = take_hours,
        };
        return cli_run_get_verb(ctx, &v, argc, argv);
}
