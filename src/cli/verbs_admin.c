/* gpuward admin: what only gpuwardd's administrators may do, one subcommand each. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/bookview.h"
#include "cli/format.h"
#include "cli/verbs.h"

/* As docs/API.md; the daemon checks it too, this only saves a round trip. */
#define DRAIN_REASON_MAX 200

static const char admin_help[] = "Usage: gpuward admin COMMAND [OPTIONS] ARGS\n"
                                 "\n"
                                 "Commands for gpuwardd's administrators (root, and the users and @groups of its\n"
                                 "'admins' setting); gpuwardd refuses them to anyone else.\n"
                                 "\n"
                                 "Commands:\n"
                                 "  drain GPU --reason TEXT   place no new job on GPU; the job on it keeps running\n"
                                 "  undrain GPU               let jobs be placed on GPU again\n"
                                 "  set-policy JOB NAME       change the idle policy (reclamation profile) of a job\n"
                                 "  approve ID...             approve bookings that await it (PENDING_APPROVAL)\n"
                                 "  deny ID...                refuse bookings; their GPUs are free for others\n"
                                 "  quota set WHO KEY=VALUE   set limits of WHO: a user, @GROUP or default\n"
                                 "  backup PATH               copy gpuwardd's state to PATH while it runs\n"
                                 "\n"
                                 "Options:\n"
                                 "  -h, --help   this help; 'gpuward admin COMMAND --help' explains a command\n"
                                 "\n"
                                 "Examples:\n"
                                 "  gpuward admin drain 1 --reason 'fan noise, RMA ticket 4411'\n"
                                 "  gpuward admin undrain 1\n"
                                 "  gpuward gpus                # HEALTH 'drained', the reason on the line below\n"
                                 "  gpuward admin set-policy 17 finetune\n"
                                 "  gpuward reservations        # PENDING_APPROVAL, the reason on the line below\n"
                                 "  gpuward admin approve 12\n"
                                 "  gpuward admin quota set @students max_gpus=2 max_booking_hours=4\n";

static const char approve_help[] = "Usage: gpuward admin approve [--json] ID...\n"
                                   "\n"
                                   "Approve bookings that wait for an admin: those longer or larger than their\n"
                                   "owner's max_booking_hours / max_booking_gpus ('gpuward reservations' lists them\n"
                                   "as PENDING_APPROVAL, with the reason below).  While it waits a booking holds\n"
                                   "nothing: others may book the same GPUs and time.  An approval places it again on\n"
                                   "the GPUs free over its window then, and is refused (the booking still waiting)\n"
                                   "when too few are: deny it then.  Once approved, jobs submitted into them start at\n"
                                   "their start.  One no admin answers within booking_pending_ttl (7d) is denied.\n"
                                   "\n"
                                   "Options:\n"
                                   "  --json       print the API's JSON (the booking)\n"
                                   "  -h, --help   this help\n"
                                   "\n"
                                   "Examples:\n"
                                   "  gpuward reservations\n"
                                   "  gpuward admin approve 12\n";

static const char deny_help[] = "Usage: gpuward admin deny [--reason TEXT] [--json] ID...\n"
                                "\n"
                                "Refuse bookings (state DENIED): their GPUs are free for others again and jobs\n"
                                "waiting to run in them will not start.  To take back an approved booking, deny\n"
                                "it or release it with 'gpuward unreserve ID'.  The booking's note reads\n"
                                "'denied by ADMIN: TEXT', for its owner.\n"
                                "\n"
                                "Options:\n"
                                "  --reason TEXT  why, for the booking's owner (1-200 characters, one line)\n"
                                "  --json         print the API's JSON (the booking)\n"
                                "  -h, --help     this help\n"
                                "\n"
                                "Examples:\n"
                                "  gpuward admin deny 12\n"
                                "  gpuward admin deny 12 --reason 'the cluster is down for maintenance then'\n";

static const char drain_help[] = "Usage: gpuward admin drain [--json] GPU --reason TEXT\n"
                                 "\n"
                                 "Stop placing new jobs on a GPU (its index, as 'gpuward gpus' lists it).  The job\n"
                                 "running on it keeps running; 'gpuward gpus' shows the GPU as drained, with TEXT,\n"
                                 "until 'gpuward admin undrain GPU'.  gpuwardd also drains a GPU by itself after a\n"
                                 "hardware error (an Xid such as 79, 'fell off the bus').\n"
                                 "\n"
                                 "Options:\n"
                                 "  --reason TEXT  why, for the others who see it (required, 1-200 characters)\n"
                                 "  --json         print the API's JSON (the GPU)\n"
                                 "  -h, --help     this help\n"
                                 "\n"
                                 "Examples:\n"
                                 "  gpuward admin drain 1 --reason 'fan noise, RMA ticket 4411'\n"
                                 "  gpuward admin drain 3 --reason 'reserved for the demo until 18:00'\n";

static const char undrain_help[] = "Usage: gpuward admin undrain [--json] GPU\n"
                                   "\n"
                                   "Let gpuwardd place jobs on a drained GPU again.  A GPU that is not drained is\n"
                                   "left as it is, and the command says so and exits 1.\n"
                                   "\n"
                                   "Options:\n"
                                   "  --json       print the API's JSON (the GPU)\n"
                                   "  -h, --help   this help\n"
                                   "\n"
                                   "Example:\n"
                                   "  gpuward admin undrain 1\n";

static const char set_policy_help[] =
        "Usage: gpuward admin set-policy [--json] JOB NAME\n"
        "\n"
        "Put a job, pending or running, under another idle policy: one of the profiles of\n"
        "gpuwardd's config that say how long a job may hold GPUs without progress before\n"
        "it is reclaimed (default, hpo, finetune that is never reclaimed, ...).\n"
        "\n"
        "Options:\n"
        "  --json       print the API's JSON (the job)\n"
        "  -h, --help   this help\n"
        "\n"
        "Examples:\n"
        "  gpuward admin set-policy 17 finetune   # a long fine-tune that validates for hours\n"
        "  gpuward show 17                        # Idle policy: finetune\n";

static const char backup_help[] = "Usage: gpuward admin backup [--json] PATH\n"
                                  "\n"
                                  "Copy gpuwardd's state (its database: jobs, bookings, tokens, history) to PATH\n"
                                  "while it runs: a consistent copy, as of the moment the copy began, made by\n"
                                  "gpuwardd itself (as its user) with SQLite's online backup.  PATH must not exist\n"
                                  "and its folder must; a relative PATH is taken from the current directory.  A\n"
                                  "folder others may write in is refused unless it is sticky (like /tmp): the copy\n"
                                  "holds jobs' environments and tokens' hashes.  The copy is mode 0600, owned by\n"
                                  "gpuwardd's user.  The command returns once the copy is complete.\n"
                                  "\n"
                                  "To restore one: stop gpuwardd, copy the file over STATE_DIR/gpuward.db (and\n"
                                  "remove gpuward.db-wal and gpuward.db-shm beside it), start gpuwardd.\n"
                                  "\n"
                                  "With a model store (model_store), its published versions are copied too, to\n"
                                  "PATH.models/ (NAME/vN/ as in the store; the temporary folders of publications\n"
                                  "under way are not), once the database is copied: folders 0700, files with\n"
                                  "their modes, each checked against its manifest's sha256; PATH.models must not\n"
                                  "exist either.  To restore it: stop gpuwardd, copy PATH.models/ as the\n"
                                  "model_store folder (gpuwardd's own, writable by no one else), start gpuwardd.\n"
                                  "\n"
                                  "Options:\n"
                                  "  --json       print the API's JSON (path, bytes, schema, models)\n"
                                  "  -h, --help   this help\n"
                                  "\n"
                                  "Examples:\n"
                                  "  gpuward admin backup /srv/backup/gpuward-$(date +%F).db\n";

enum { OPT_REASON = 0x100 };

struct drain_opts {
        const char *verb; /* "admin drain" */
        bool drain, json;
        const char *reason;
        long long gpu;
};

static int on_reason(void *userdata, int opt, const char *arg) {
        ((struct drain_opts *) userdata)->reason = arg;
        return 0;
}

/* -1 to go on with *o filled, else the exit code. */
static int parse_drain(struct cli_ctx *ctx, int argc, char **argv, struct drain_opts *o) {
        static const struct option reason_opt[] = {
                { "reason", required_argument, NULL, OPT_REASON },
                { 0 },
        };
        /* undrain has no --reason: "unknown option" then names it rather than its value.
         * Permuting: "drain 1 --reason X" reads naturally, and an index never starts with '-'. */
        const struct cli_options spec = {
                .verb = o->verb,
                .help = o->drain ? drain_help : undrain_help,
                .extra = o->drain ? reason_opt : NULL,
                .on_option = on_reason,
                .userdata = o,
        };
        int r = cli_parse_options(ctx, &spec, argc, argv, &o->json);
        if (r >= 0)
                return r;
        if (optind >= argc)
                return cli_usage(o->verb, "which GPU? gpuward %s GPU%s", o->verb, o->drain ? " --reason TEXT" : "");
        if (optind + 1 < argc)
                return cli_usage(o->verb, "one GPU at a time (got '%s' too)", argv[optind + 1]);
        if (gw_parse_int(argv[optind], 0, INT_MAX, &o->gpu) < 0)
                return cli_usage(o->verb, "'%s' is not a GPU index (0, 1, ... as 'gpuward gpus' lists them)",
                                 argv[optind]);
        if (o->drain && !o->reason)
                return cli_usage(o->verb, "--reason is required: say why, for the others who see the GPU drained");
        if (o->drain && !o->reason[strspn(o->reason, " \t")])
                return cli_usage(o->verb, "--reason: the reason is empty");
        if (o->drain && cli_display_width(o->reason) > DRAIN_REASON_MAX)
                return cli_usage(o->verb, "--reason: at most %d characters", DRAIN_REASON_MAX);
        return -1;
}

static int print_drained(const json_t *reply, void *userdata) {
        const struct drain_opts *o = userdata;
        if (!o->drain) {
                printf("GPU %lld undrained: jobs may be placed on it again\n", o->gpu);
                return CLI_EXIT_OK;
        }
        /* The daemon's wording of the reason is the one others will see. */
        const char *why = cli_jstr(reply, "drain_reason");
        _cleanup_free_ char *safe = cli_sanitize(why && *why ? why : o->reason);
        printf("GPU %lld drained: %s\n", o->gpu, safe ? safe : o->reason);
        return CLI_EXIT_OK;
}

static int run_drain(struct cli_ctx *ctx, struct drain_opts *o, int argc, char **argv) {
        int r = parse_drain(ctx, argc, argv, o);
        if (r >= 0)
                return r;
        char target[64], subject[48];
        snprintf(target, sizeof(target), "/api/v1/gpus/%lld/%s", o->gpu, o->drain ? "drain" : "undrain");
        snprintf(subject, sizeof(subject), "GPU %lld", o->gpu);
        json_t *body = o->drain ? json_pack("{s:s}", "reason", o->reason) : NULL;
        if (o->drain && !body) {
                /* jansson refuses strings that are not UTF-8. */
                return cli_usage(o->verb, "--reason: not valid UTF-8 text");
        }
        /* The daemon names its fields; the user typed a GPU and --reason. */
        static const struct cli_field_alias aliases[] = {
                { "index", NULL },
                { "reason", "--reason" },
                { NULL, NULL },
        };
        struct cli_call call = {
                .method = "POST",
                .target = target,
                .body = body,
                .subject = subject,
                .aliases = aliases,
        };
        r = cli_call_and_show(ctx, &call, o->json, print_drained, o);
        json_decref(body);
        return r;
}

struct policy_change {
        long long id;
        const char *name; /* as typed */
};

static int print_policy_set(const json_t *reply, void *userdata) {
        const struct policy_change *c = userdata;
        const char *now = cli_jstr(reply, "idle_policy");
        _cleanup_free_ char *safe = cli_sanitize(now && *now ? now : c->name);
        printf("Job %lld now under idle policy %s\n", c->id, safe ? safe : c->name);
        return CLI_EXIT_OK;
}

static int run_set_policy(struct cli_ctx *ctx, int argc, char **argv) {
        const char *verb = "admin set-policy";
        bool json;
        int r = cli_parse_json_only(ctx, verb, set_policy_help, true, argc, argv, &json);
        if (r >= 0)
                return r;
        if (argc - optind < 2)
                return cli_usage(verb, "which job and which policy? gpuward %s JOB NAME", verb);
        if (argc - optind > 2)
                return cli_usage(verb, "one job and one policy (got '%s' too)", argv[optind + 2]);
        long long id;
        if (cli_parse_job_id(verb, argv[optind], &id) < 0)
                return CLI_EXIT_USAGE;
        const char *name = argv[optind + 1];
        if (!cli_is_policy_name(name))
                return cli_usage(verb, "'%s' is not a policy name (such as default, hpo, finetune)", name);

        char target[64], subject[48];
        snprintf(target, sizeof(target), "/api/v1/jobs/%lld/policy", id);
        snprintf(subject, sizeof(subject), "job %lld", id);
        json_t *body = json_pack("{s:s}", "idle_policy", name);
        if (!body)
                return CLI_EXIT_FAIL;
        /* The user typed the name bare: the daemon's "idle_policy: ..." needs no prefix. */
        static const struct cli_field_alias aliases[] = { { "idle_policy", NULL }, { NULL, NULL } };
        struct cli_call call = {
                .method = "POST",
                .target = target,
                .body = body,
                .subject = subject,
                .aliases = aliases,
        };
        struct policy_change change = { id, name };
        r = cli_call_and_show(ctx, &call, json, print_policy_set, &change);
        json_decref(body);
        return r;
}

static int print_backup(const json_t *reply, void *userdata) {
        (void) userdata;
        long long bytes = 0;
        (void) cli_jint(reply, "bytes", &bytes);
        const char *path = cli_jstr(reply, "path");
        _cleanup_free_ char *safe = cli_sanitize(path ? path : "");
        printf("Backup written to %s (%lld bytes)\n", safe ? safe : "", bytes);
        const json_t *models = json_object_get(reply, "models");
        const char *mpath = cli_jstr(models, "path");
        if (mpath) {
                long long versions = 0, mbytes = 0;
                (void) cli_jint(models, "versions", &versions);
                (void) cli_jint(models, "bytes", &mbytes);
                _cleanup_free_ char *msafe = cli_sanitize(mpath);
                printf("Model store copied to %s (%lld versions, %lld bytes)\n", msafe ? msafe : "", versions, mbytes);
        }
        return CLI_EXIT_OK;
}

static int run_backup(struct cli_ctx *ctx, int argc, char **argv) {
        const char *verb = "admin backup";
        bool json;
        int r = cli_parse_json_only(ctx, verb, backup_help, true, argc, argv, &json);
        if (r >= 0)
                return r;
        if (argc - optind != 1)
                return cli_usage(verb, "one file to write the copy to: gpuward %s PATH", verb);
        const char *arg = argv[optind];
        char path[PATH_MAX], cwd[PATH_MAX];
        if (arg[0] == '/')
                snprintf(path, sizeof path, "%s", arg);
        else if (!getcwd(cwd, sizeof cwd) || (size_t) snprintf(path, sizeof path, "%s/%s", cwd, arg) >= sizeof path)
                return cli_usage(verb, "cannot make '%s' an absolute path; give one", arg);
        json_t *body = json_pack("{s:s}", "path", path);
        if (!body)
                return CLI_EXIT_FAIL;
        /* A large database takes a while to copy: the answer comes when the copy is complete. */
        struct cli_call call = { .method = "POST",
                                 .target = "/api/v1/admin/backup",
                                 .body = body,
                                 .timeout = 30 * 60 * GW_USEC_PER_SEC,
                                 .subject = "backup" };
        r = cli_call_and_show(ctx, &call, json, print_backup, NULL);
        json_decref(body);
        return r;
}

static int run_approve(struct cli_ctx *ctx, int argc, char **argv) {
        return cli_booking_change_run(ctx, CLI_BOOKING_APPROVE, "admin approve", approve_help, argc, argv);
}

static int run_deny(struct cli_ctx *ctx, int argc, char **argv) {
        return cli_booking_change_run(ctx, CLI_BOOKING_DENY, "admin deny", deny_help, argc, argv);
}

static int run_drain_gpu(struct cli_ctx *ctx, int argc, char **argv) {
        struct drain_opts o = { .verb = "admin drain", .drain = true };
        return run_drain(ctx, &o, argc, argv);
}

static int run_undrain_gpu(struct cli_ctx *ctx, int argc, char **argv) {
        struct drain_opts o = { .verb = "admin undrain", .drain = false };
        return run_drain(ctx, &o, argc, argv);
}

int cli_verb_admin(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct cli_command cmds[] = {
                { "drain", run_drain_gpu },
                { "undrain", run_undrain_gpu },
                { "set-policy", run_set_policy },
                { "approve", run_approve },
                { "deny", run_deny },
                { "quota", cli_admin_quota },
                { "backup", run_backup },
                { NULL, NULL },
        };
        return cli_run_command(ctx, "admin", admin_help, cmds, argc, argv);
}
