/* gpuward eta, gpuward snapshots, gpuward restore: training awareness. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/trainview.h"
#include "cli/verbs.h"

static const char eta_help[] =
        "Usage: gpuward eta [--json] JOB\n"
        "\n"
        "When a running training job will end, and what the estimate rests on: the epochs done\n"
        "and planned (from the run's args.yaml, else epochs= in the command), the smoothed time\n"
        "per epoch (validation included; the first epoch of a process, with its start-up, weighs\n"
        "a quarter), the error bar once three epochs are timed, the recent epochs, and the leak\n"
        "check.  Epochs are read from the run's results.csv (Ultralytics).  A run whose current\n"
        "epoch is well past its usual length (a hung one, most often) is 'overdue by' that much,\n"
        "with the end that was due, instead of an ETA that stays at one epoch.\n"
        "\n"
        "Options:\n"
        "  --json       print the API's JSON\n"
        "  -h, --help   this help\n"
        "\n"
        "Example:\n"
        "  gpuward eta 41\n";

static const char snapshots_help[] =
        "Usage: gpuward snapshots [--all] [--json] JOB\n"
        "\n"
        "The copies gpuwardd kept of a training job's weights/best.pt and last.pt: each time one\n"
        "changed and was complete, with the epoch it holds, that epoch's mAP50-95 and its sha256.\n"
        "Every copy of best.pt is kept, and the newest 3 of last.pt (gpuwardd's\n"
        "--snapshot-keep-last); over --snapshot-cap the oldest last.pt copies go first.\n"
        "N is what 'gpuward restore --snapshot N' takes.\n"
        "\n"
        "Options:\n"
        "  --all        list the copies the retention removed too\n"
        "  --json       print the API's JSON\n"
        "  -h, --help   this help\n"
        "\n"
        "Example:\n"
        "  gpuward snapshots 41\n";

static const char restore_help[] =
        "Usage: gpuward restore JOB --snapshot N --to PATH [--force]\n"
        "\n"
        "Copy snapshot N of a job (see 'gpuward snapshots JOB') to PATH, written as the job's\n"
        "user: a path that user may not write is refused.  The copy is checked against the\n"
        "snapshot's sha256.  Only the job's owner or an admin may restore.\n"
        "\n"
        "Options:\n"
        "  --snapshot N   which snapshot\n"
        "  --to PATH      where to write it (relative to the current directory)\n"
        "  --force        overwrite PATH if it exists\n"
        "  --json         print the API's JSON\n"
        "  -h, --help     this help\n"
        "\n"
        "Example:\n"
        "  gpuward restore 41 --snapshot 3 --to ./weights/best-epoch31.pt\n";

/* GETs target, about job id, and shows the reply: as it came with json, else print's way. */
static int get_and_show(struct cli_ctx *ctx, const char *target, long long id, bool json,
                        int (*print)(const json_t *reply, void *userdata)) {
        char subject[48];
        snprintf(subject, sizeof subject, "job %lld", id);
        struct cli_call call = { .method = "GET", .target = target, .subject = subject };
        return cli_call_and_show(ctx, &call, json, print, &id);
}

/* ---- eta ---- */

/* A queued job: when it should start, and what that rests on. */
/* Prints t under title and frees it; nothing when building it ran out of memory (t NULL). */
static void print_titled(struct cli_table *t, const char *title) {
        if (!t)
                return;
        fputs(title, stdout);
        cli_table_print(t, stdout);
        cli_table_free(t);
}

static void print_prediction(const json_t *o, const json_t *pr, time_t now) {
        long long id = 0;
        char buf[48];
        (void) cli_jint(o, "id", &id);
        printf("Job %lld (%s): not started\n", id, cli_jstr(o, "state") ? cli_jstr(o, "state") : "?");
        cli_show_prediction(pr, now);
        printf("Basis:        the scheduler replayed forward: running jobs end at min(ETA, time limit), each queued\n"
               "              job runs for the median of its user's similar completed jobs, else its time limit\n");
        const json_t *ids = json_object_get(pr, "similar_jobs"), *runs = json_object_get(pr, "similar_runtimes");
        if (json_array_size(ids) == 0)
                return;
        static const char *const cols[] = { "SIMILAR JOB", "RAN" };
        struct cli_table *t = cli_table_new(cols, 2);
        size_t i;
        const json_t *v;
        json_array_foreach (ids, i, v) {
                char jid[32];
                snprintf(jid, sizeof jid, "%lld", (long long) json_integer_value(v));
                const char *cells[] = { jid,
                                        cli_format_secs(json_number_value(json_array_get(runs, i)), buf, sizeof buf) };
                if (t && cli_table_add(t, cells) < 0)
                        break;
        }
        print_titled(t, "\n");
}

static void print_eta(const json_t *o, time_t now) {
        long long id = 0, done, total;
        char buf[64], buf2[64];
        (void) cli_jint(o, "id", &id);
        const char *why = cli_jstr(o, "why_none"), *from = cli_jstr(o, "epochs_from");
        bool has_done = cli_jint(o, "epoch", &done), has_total = cli_jint(o, "epochs", &total);
        printf("Job %lld (%s)", id, cli_jstr(o, "state") ? cli_jstr(o, "state") : "?");
        if (has_done && has_total)
                printf(": epoch %lld/%lld", done, total);
        else if (has_done)
                printf(": epoch %lld/?", done);
        if (has_total && from)
                printf(" (epochs from %s)", from);
        printf("\n");
        double eta = cli_jnum(o, "eta"), err = cli_jnum(o, "error_seconds"), spe = cli_jnum(o, "sec_per_epoch");
        double late = cli_jnum(o, "overdue_seconds");
        if (isfinite(eta) && isfinite(late))
                printf("ETA:          overdue by %s: the run was due to end %s; its current epoch is that far past its "
                       "usual length (hung?)\n",
                       cli_format_secs(late, buf, sizeof buf), cli_format_end(eta, now, buf2, sizeof buf2));
        else if (isfinite(eta)) {
                printf("ETA:          ");
                cli_print_eta_ends(eta, err, now);
                printf("\n");
        } else
                printf("ETA:          none: %s\n", why ? why : "unknown");
        long long timed = 0;
        (void) cli_jint(o, "timed_epochs", &timed);
        if (isfinite(spe)) {
                double sigma = cli_jnum(o, "sigma_seconds");
                printf("Per epoch:    %s, smoothed over %lld timed epoch%s (recent ones weigh more, a process's "
                       "first epoch a quarter)",
                       cli_format_secs(spe, buf, sizeof buf), timed, timed == 1 ? "" : "s");
                if (isfinite(sigma) && sigma >= 1)
                        printf("; jitter \xc2\xb1%s", cli_format_secs(sigma, buf2, sizeof buf2));
                printf("\n");
        }
        if (isfinite(eta) && !isfinite(err))
                printf("Error bar:    after 3 timed epochs\n");
        double since = cli_jnum(o, "since_last_epoch");
        if (isfinite(since))
                printf("Last epoch:   ended %s ago\n", cli_format_secs(since, buf, sizeof buf));
        const char *csv = cli_jstr(o, "results_csv");
        if (csv) {
                _cleanup_free_ char *safe = cli_sanitize(csv);
                printf("Results:      %s\n", safe ? safe : "?");
        }
        const json_t *leak = json_object_get(o, "leak");
        const char *ev = cli_jstr(leak, "evidence");
        if (ev) {
                _cleanup_free_ char *safe = cli_sanitize(ev);
                printf("%s %s\n", json_is_true(json_object_get(leak, "detected")) ? "LEAK:        " : "Leak check:  ",
                       safe ? safe : "?");
        }
        const json_t *recent = json_object_get(o, "recent_epochs");
        if (json_array_size(recent) == 0)
                return;
        static const char *const cols[] = { "EPOCH", "TIME", "ENDED", "NOTE" };
        struct cli_table *t = cli_table_new(cols, 4);
        size_t i;
        const json_t *e;
        json_array_foreach (recent, i, e) {
                char ep[32], secs[32], end[48];
                long long v = 0;
                (void) cli_jint(e, "epoch", &v);
                snprintf(ep, sizeof ep, "%lld", v);
                bool startup = json_is_true(json_object_get(e, "startup")),
                     exact = json_is_true(json_object_get(e, "exact"));
                const char *cells[] = { ep, cli_format_secs(cli_jnum(e, "seconds"), secs, sizeof secs),
                                        cli_format_time(cli_jnum(e, "end"), now, end, sizeof end),
                                        startup ? "includes the start (weighs 1/4)"
                                        : exact ? ""
                                                : "averaged (rows seen together)" };
                if (t && cli_table_add(t, cells) < 0)
                        break;
        }
        print_titled(t, "\nRecent epochs:\n");
}

/* A queued job's reply has a prediction; a running one's an ETA. */
static int print_eta_reply(const json_t *o, void *userdata) {
        const json_t *pr = json_object_get(o, "prediction");
        (void) userdata;
        if (json_is_object(pr))
                print_prediction(o, pr, time(NULL));
        else
                print_eta(o, time(NULL));
        return CLI_EXIT_OK;
}

/* cli_parse_one_job, with a task (17_3) asked for by its own job id. */
static int one_job_or_task(struct cli_ctx *ctx, const struct cli_options *spec, int argc, char **argv, bool *json,
                           long long *id) {
        int r = cli_parse_one_job(ctx, spec, argc, argv, json, id);
        if (r < 0)
                r = cli_resolve_task(ctx, id) ? CLI_EXIT_FAIL : -1;
        return r;
}

int cli_verb_eta(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct cli_options spec = { .verb = "eta", .help = eta_help };
        bool json;
        long long id;
        int r = one_job_or_task(ctx, &spec, argc, argv, &json, &id);
        if (r >= 0)
                return r;
        char target[64];
        snprintf(target, sizeof target, "/api/v1/jobs/%lld/eta", id);
        return get_and_show(ctx, target, id, json, print_eta_reply);
}

/* ---- snapshots ---- */

static int print_snapshots(const json_t *o, void *userdata) {
        long long id = *(const long long *) userdata;
        time_t now = time(NULL);
        const json_t *arr = json_object_get(o, "snapshots");
        if (json_array_size(arr) == 0) {
                printf("Job %lld has no snapshots (none of its weights/best.pt or last.pt was seen complete).\n", id);
                return CLI_EXIT_OK;
        }
        static const char *const cols[] = { "N", "KIND", "EPOCH", "mAP50-95", "SIZE", "TAKEN", "SHA256", "NOTE" };
        struct cli_table *t = cli_table_new(cols, 8);
        if (!t)
                return CLI_EXIT_FAIL;
        size_t i;
        const json_t *s;
        json_array_foreach (arr, i, s) {
                char n[32], epoch[32], metric[32], size[32], taken[48], sha[16];
                long long v;
                snprintf(n, sizeof n, "%lld", cli_jint(s, "seq", &v) ? v : 0);
                if (cli_jint(s, "epoch", &v))
                        snprintf(epoch, sizeof epoch, "%lld", v);
                else
                        snprintf(epoch, sizeof epoch, "-");
                double m = cli_jnum(s, "metric");
                if (isfinite(m))
                        snprintf(metric, sizeof metric, "%.4f", m);
                else
                        snprintf(metric, sizeof metric, "-");
                snprintf(sha, sizeof sha, "%.12s", cli_jstr(s, "sha256") ? cli_jstr(s, "sha256") : "-");
                char kind[16];
                snprintf(kind, sizeof kind, "%s.pt", cli_jstr(s, "kind") ? cli_jstr(s, "kind") : "?");
                const char *cells[] = { n,
                                        kind,
                                        epoch,
                                        metric,
                                        cli_format_bytes(cli_jnum(s, "size"), size, sizeof size),
                                        cli_format_time(cli_jnum(s, "time"), now, taken, sizeof taken),
                                        sha,
                                        json_is_true(json_object_get(s, "pruned")) ? "pruned" : "" };
                if (cli_table_add(t, cells) < 0)
                        break;
        }
        cli_table_print(t, stdout);
        cli_table_free(t);
        return CLI_EXIT_OK;
}

enum { OPT_ALL = 0x100, OPT_SNAPSHOT, OPT_TO, OPT_FORCE };

static int on_all(void *userdata, int opt, const char *arg) {
        (void) opt, (void) arg;
        *(bool *) userdata = true;
        return 0;
}

int cli_verb_snapshots(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct option extra[] = {
                { "all", no_argument, NULL, OPT_ALL },
                { 0 },
        };
        bool json, all = false;
        const struct cli_options spec = {
                .verb = "snapshots",
                .help = snapshots_help,
                .extra = extra,
                .on_option = on_all,
                .userdata = &all,
        };
        long long id;
        int r = one_job_or_task(ctx, &spec, argc, argv, &json, &id);
        if (r >= 0)
                return r;
        char target[80];
        snprintf(target, sizeof target, "/api/v1/jobs/%lld/snapshots%s", id, all ? "?all=1" : "");
        return get_and_show(ctx, target, id, json, print_snapshots);
}

/* ---- restore ---- */

struct restore_opts {
        long long seq;
        const char *to;
        bool force;
};

static int on_restore_option(void *userdata, int opt, const char *arg) {
        struct restore_opts *o = userdata;
        switch (opt) {
        case OPT_SNAPSHOT:
                if (gw_parse_int(arg, 1, INT_MAX, &o->seq) < 0)
                        return cli_usage("restore", "--snapshot: '%s' is not a snapshot number", arg);
                return 0;
        case OPT_TO:
                if (!*arg)
                        return cli_usage("restore", "--to: the path is empty");
                o->to = arg;
                return 0;
        case OPT_FORCE:
                o->force = true;
                return 0;
        }
        return 0;
}

int cli_verb_restore(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct option extra[] = {
                { "snapshot", required_argument, NULL, OPT_SNAPSHOT },
                { "to", required_argument, NULL, OPT_TO },
                { "force", no_argument, NULL, OPT_FORCE },
                { 0 },
        };
        struct restore_opts opt = { 0 };
        const struct cli_options spec = {
                .verb = "restore",
                .help = restore_help,
                .extra = extra,
                .on_option = on_restore_option,
                .userdata = &opt,
        };
        bool json;
        long long id;
        int r = one_job_or_task(ctx, &spec, argc, argv, &json, &id);
        if (r >= 0)
                return r;
        if (!opt.seq)
                return cli_usage("restore", "which snapshot? --snapshot N (gpuward snapshots %lld)", id);
        if (!opt.to)
                return cli_usage("restore", "where to? --to PATH");
        _cleanup_free_ char *abs = cli_absolute_path(opt.to, NULL);
        if (!abs) {
                cli_error("restore: cannot resolve %s: %s", opt.to, strerror(errno));
                return CLI_EXIT_FAIL;
        }
        char target[64], subject[48];
        snprintf(target, sizeof target, "/api/v1/jobs/%lld/restore", id);
        snprintf(subject, sizeof subject, "job %lld", id);
        json_t *body = json_pack("{s:I,s:s,s:b}", "snapshot", (json_int_t) opt.seq, "to", abs, "force", opt.force);
        static const struct cli_field_alias aliases[] = { { "snapshot", "--snapshot" },
                                                          { "to", "--to" },
                                                          { NULL, NULL } };
        /* The daemon answers when the copy is done, which it bounds at 30 minutes. */
        struct cli_call call = { .method = "POST",
                                 .target = target,
                                 .body = body,
                                 .subject = subject,
                                 .aliases = aliases,
                                 .timeout = 31 * 60 * GW_USEC_PER_SEC };
        json_t *o = NULL;
        r = body ? cli_api_json(ctx, &call, &o) : CLI_EXIT_FAIL;
        json_decref(body);
        if (r)
                return r;
        if (json)
                r = cli_print_json(o) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
        else {
                _cleanup_free_ char *msg = cli_sanitize(cli_jstr(o, "message") ? cli_jstr(o, "message") : "restored");
                printf("%s\n", msg ? msg : "restored");
        }
        json_decref(o);
        return r;
}
