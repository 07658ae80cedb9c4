/* gpuward token create|list|revoke: bearer tokens that give scripts your identity over TCP; and
 * gpuward whoami: the identity the daemon sees. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/bookview.h"
#include "cli/format.h"
#include "cli/jobview.h"
#include "cli/verbs.h"
#include "core/token.h"

/* As gpuwardd checks it. */
#define TOKEN_NAME_MAX 64

static const char token_help[] = "Usage: gpuward token COMMAND [OPTIONS] [ARGS]\n"
                                 "\n"
                                 "Over its Unix socket gpuwardd knows who you are; over TCP (the web page, scripts\n"
                                 "on other machines through a tunnel, CI) a request is a guest's, read-only,\n"
                                 "unless it carries one of your tokens: 'Authorization: Bearer gw_...'.\n"
                                 "\n"
                                 "Commands:\n"
                                 "  create [--name NAME] [--expires DURATION] [--scope ci|models|agent --node NODE]\n"
                                 "                         make a token; it is printed once and never again\n"
                                 "  list                   your tokens (admins: everyone's), without their secret\n"
                                 "  revoke ID...           make tokens useless at once\n"
                                 "\n"
                                 "Options:\n"
                                 "  --json       print the API's JSON\n"
                                 "  -h, --help   this help; 'gpuward token COMMAND --help' explains a command\n"
                                 "\n"
                                 "Examples:\n"
                                 "  gpuward token create --name ci\n"
                                 "  TOKEN=$(gpuward token create --name laptop -q)\n"
                                 "  curl -H \"Authorization: Bearer $TOKEN\" http://127.0.0.1:8470/api/v1/jobs\n"
                                 "  gpuward token create --scope agent --node gpu1 --expires never -q\n"
                                 "  gpuward token list\n"
                                 "  gpuward token revoke 3\n";

static const char create_help[] = "Usage: gpuward token create [--name NAME] [--expires DURATION] [-q] [--json]\n"
                                  "                 [--scope ci|models | --scope agent --node NODE]\n"
                                  "\n"
                                  "Make a token that acts as you over gpuwardd's TCP door.  It is printed once:\n"
                                  "gpuwardd keeps only a hash of it, so copy it now into where it is used (a CI\n"
                                  "secret, a file only you can read).  Anyone holding it can act as you until\n"
                                  "'gpuward token revoke ID'.  Tokens are made over the Unix socket only.\n"
                                  "\n"
                                  "Options:\n"
                                  "  --name NAME  what it is for, shown by 'gpuward token list' (at most 64 bytes)\n"
                                  "  --expires DURATION\n"
                                  "               how long it works: 30d, 12h, 90m, up to 3650d, or never\n"
                                  "               (default never); then requests carrying it get 401\n"
                                  "  --scope ci   a CI runner's token: it may submit jobs and read its own jobs\n"
                                  "               (state, log, results), and gets 403 anywhere else, even when\n"
                                  "               you are an admin; for GPUWARD_TOKEN in a CI system's secrets;\n"
                                  "               it may read the published models too (gpuward models)\n"
                                  "  --scope models\n"
                                  "               a reader of published models: it may list them and download\n"
                                  "               their files (GET /api/v1/models...), and gets 403 anywhere else\n"
                                  "  --scope agent\n"
                                  "               a node agent's token (gpuwardd --agent, admins only): it may\n"
                                  "               only post node snapshots to a cluster's controller, and gets\n"
                                  "               403 anywhere else; without --scope a token has all your rights\n"
                                  "  --node NODE  with --scope agent, required: the node (its Slurm name) whose\n"
                                  "               snapshots alone the token may post; make one token per node,\n"
                                  "               so that a node's token cannot report the others\n"
                                  "  -q, --quiet  print only the token, for TOKEN=$(...)\n"
                                  "  --json       print the API's JSON (with the token)\n"
                                  "  -h, --help   this help\n"
                                  "\n"
                                  "Examples:\n"
                                  "  gpuward token create --name ci --scope ci --expires 90d\n"
                                  "  TOKEN=$(gpuward token create --name laptop -q)\n"
                                  "  curl -H \"Authorization: Bearer $TOKEN\" http://127.0.0.1:8470/api/v1/jobs\n"
                                  "  gpuward token create --scope agent --node gpu1 --expires never -q\n";

static const char list_help[] =
        "Usage: gpuward token list [--json]\n"
        "\n"
        "List your tokens (admins: everyone's): id, owner, name, scope ('agent' for a node\n"
        "agent's token, which may only post node snapshots; 'ci' for a CI runner's, which\n"
        "may only submit and read its own jobs; '-' for one with all its\n"
        "owner's rights), node (the node an agent's token may post for; '-' none: an\n"
        "agent's token made before tokens were bound to nodes is refused), when it was\n"
        "made, last used and expires ('expired' once it has).  The tokens themselves are not stored and cannot be shown again.\n"
        "A token whose user has left (no longer in the password database) is not listed.\n" CLI_HELP_JSON_OPTIONS
        "Example:\n"
        "  gpuward token list\n";

static const char revoke_help[] =
        "Usage: gpuward token revoke [--json] ID...\n"
        "\n"
        "Revoke tokens (their ids as 'gpuward token list' shows them): requests carrying\n"
        "them get 401 from then on.  You may revoke your own tokens; admins any.\n" CLI_HELP_JSON_OPTIONS "Example:\n"
        "  gpuward token revoke 3\n";

enum { OPT_NAME = 0x100, OPT_EXPIRES, OPT_SCOPE, OPT_NODE };

/* What token create takes beside --json. */
struct create_opts {
        const char *name;
        const char *expires; /* as typed, checked */
        const char *scope; /* NULL, GW_TOKEN_SCOPE_CI, _MODELS or _AGENT */
        const char *node; /* NULL or a node name (checked) */
        bool quiet;
};

static int on_create_option(void *userdata, int opt, const char *arg) {
        static const char verb[] = "token create";
        struct create_opts *o = userdata;
        char msg[GW_TOKEN_MSG_SIZE];
        gw_usec_t life;
        switch (opt) {
        case 'q':
                o->quiet = true;
                return 0;
        case OPT_NAME:
                if (!*arg)
                        return cli_usage(verb, "--name: the name is empty");
                if (strlen(arg) > TOKEN_NAME_MAX || strpbrk(arg, "\r\n\t"))
                        return cli_usage(verb, "--name: at most %d bytes, on one line", TOKEN_NAME_MAX);
                o->name = arg;
                return 0;
        case OPT_SCOPE:
                if (!strcmp(arg, GW_TOKEN_SCOPE_CI) || !strcmp(arg, GW_TOKEN_SCOPE_MODELS)) {
                        o->scope = !strcmp(arg, GW_TOKEN_SCOPE_CI) ? GW_TOKEN_SCOPE_CI : GW_TOKEN_SCOPE_MODELS;
                        return 0;
                }
                if (strcmp(arg, GW_TOKEN_SCOPE_AGENT))
                        return cli_usage(verb,
                                         "--scope: '%s' (a CI runner's token), '%s' (a reader of published "
                                         "models) or '%s' (a node agent's token); without --scope a token has "
                                         "all your rights",
                                         GW_TOKEN_SCOPE_CI, GW_TOKEN_SCOPE_MODELS, GW_TOKEN_SCOPE_AGENT);
                o->scope = GW_TOKEN_SCOPE_AGENT;
                return 0;
        case OPT_NODE:
                if (!gw_token_node_name_valid(arg))
                        return cli_usage(verb,
                                         "--node: '%.80s' is not a node's Slurm name (1-64 letters, digits, "
                                         "'.', '-' or '_')",
                                         arg);
                o->node = arg;
                return 0;
        default: /* OPT_EXPIRES: the daemon's own parser, so a typo never reaches it */
                if (gw_token_parse_lifetime(arg, &life, msg, sizeof(msg)) < 0) {
                        _cleanup_free_ char *safe = cli_sanitize(msg);
                        return cli_usage(verb, "--expires: %s", safe ? safe : "not a lifetime");
                }
                o->expires = arg;
                return 0;
        }
}

static void print_created(const json_t *reply, const char *token) {
        long long id = 0;
        (void) cli_jint(reply, "id", &id);
        const char *name = cli_jstr(reply, "name");
        _cleanup_free_ char *sname = name && *name ? cli_sanitize(name) : NULL;
        printf("Token %lld%s%s%s:\n\n    %s\n\n", id, sname ? " (" : "", sname ? sname : "", sname ? ")" : "", token);
        const char *scope = cli_jstr(reply, "scope");
        if (scope && !strcmp(scope, GW_TOKEN_SCOPE_AGENT)) {
                _cleanup_free_ char *node = cli_sanitize(cli_jstr(reply, "node") ?: "?");
                printf("Copy it now: it will not be shown again (gpuwardd keeps only its hash).\n"
                       "It is node %s's agent token: give it to 'gpuwardd --agent' on that node\n"
                       "(--token-file); it may only post that node's snapshots.\n",
                       node ? node : "?");
                printf("Revoke it with 'gpuward token revoke %lld'.\n", id);
                return;
        }
        if (scope && !strcmp(scope, GW_TOKEN_SCOPE_CI))
                printf("It is a CI runner's token: it may submit jobs and read its own jobs (and the\n"
                       "published models), nothing else.  In the CI job: GPUWARD_URL=http://HOST:8470\n"
                       "GPUWARD_TOKEN=<it> gpuward submit ...\n");
        if (scope && !strcmp(scope, GW_TOKEN_SCOPE_MODELS))
                printf("It is a models reader's token: it may list the published models and download\n"
                       "their files (GPUWARD_TOKEN=<it> gpuward models), nothing else.\n");
        printf("Copy it now: it will not be shown again (gpuwardd keeps only its hash).\n"
               "Use it over TCP as a bearer token, with TOKEN set to it:\n"
               "    curl -H \"Authorization: Bearer $TOKEN\" http://127.0.0.1:8470/api/v1/jobs\n"
               "(8470 is gpuwardd's default port; its --listen option may name another.)\n");
        double expires = cli_jnum(reply, "expires");
        char when[48];
        if (isfinite(expires))
                printf("It expires %s.\n", cli_format_when(expires, time(NULL), when, sizeof(when)));
        printf("Revoke it with 'gpuward token revoke %lld'.\n", id);
}

static int run_create(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct option extra[] = {
                { "name", required_argument, NULL, OPT_NAME },
                { "expires", required_argument, NULL, OPT_EXPIRES },
                { "scope", required_argument, NULL, OPT_SCOPE },
                { "node", required_argument, NULL, OPT_NODE },
                { "quiet", no_argument, NULL, 'q' },
                { 0 },
        };
        const char *verb = "token create";
        struct create_opts o = { 0 };
        const struct cli_options spec = {
                .verb = verb,
                .help = create_help,
                .extra = extra,
                .shortopts = "q",
                .on_option = on_create_option,
                .userdata = &o,
        };
        bool json;
        int r = cli_parse_options(ctx, &spec, argc, argv, &json);
        if (r >= 0)
                return r;
        if (optind < argc)
                return cli_usage(verb, "unexpected argument '%s' (name the token with --name)", argv[optind]);
        bool agent = o.scope && !strcmp(o.scope, GW_TOKEN_SCOPE_AGENT);
        if (agent && !o.node)
                return cli_usage(verb, "--scope agent: give --node NODE, the node whose snapshots the token may "
                                       "post (one token per node)");
        if (o.node && !agent)
                return cli_usage(verb, "--node: only a node agent's token (--scope agent) is bound to a node");
        json_t *body = o.name ? json_pack("{s:s}", "name", o.name) : json_object();
        if (!body)
                return cli_usage(verb, "--name: not valid UTF-8 text");
        if (o.expires)
                (void) json_object_set_new(body, "expires", json_string(o.expires));
        if (o.scope)
                (void) json_object_set_new(body, "scope", json_string(o.scope));
        if (o.node)
                (void) json_object_set_new(body, "node", json_string(o.node));
        static const struct cli_field_alias aliases[] = {
                { "name", "--name" }, { "expires", "--expires" }, { "scope", "--scope" }, { "node", "--node" },
                { NULL, NULL },
        };
        struct cli_call call = { .method = "POST", .target = "/api/v1/tokens", .body = body, .aliases = aliases };
        json_t *reply = NULL;
        r = cli_api_json(ctx, &call, &reply);
        json_decref(body);
        if (r)
                return r;
        const char *token = cli_jstr(reply, "token");
        /* A token is "gw_" and hex; anything else would be a daemon bug, not to be echoed raw. */
        if (!token || strncmp(token, "gw_", 3) != 0 || strspn(token + 3, "0123456789abcdef") != strlen(token + 3)) {
                cli_error("gpuwardd made a token but sent it in a form this gpuward does not know");
                r = CLI_EXIT_FAIL;
        } else if (json) {
                r = cli_show_json(reply);
        } else if (o.quiet) {
                printf("%s\n", token);
        } else {
                print_created(reply, token);
        }
        json_decref(reply);
        return r;
}

/* "never", when it will expire, or "expired Mon 09:00". */
static const char *expires_cell(const json_t *tok, time_t now, char *buf, size_t n) {
        double at = cli_jnum(tok, "expires");
        char when[48];
        if (!isfinite(at))
                return "never";
        cli_format_when(at, now, when, sizeof(when));
        snprintf(buf, n, "%s%s", json_is_true(json_object_get(tok, "expired")) ? "expired " : "", when);
        return buf;
}

static int add_token_row(struct cli_table *t, const json_t *tok, time_t now) {
        char id[32], created[48], used[48], ubuf[32], expires[64];
        long long v = 0;
        const char *name = cli_jstr(tok, "name");
        snprintf(id, sizeof(id), "%lld", cli_jint(tok, "id", &v) ? v : 0);
        const char *cells[] = {
                id,
                cli_job_user(tok, ubuf, sizeof(ubuf)),
                name && *name ? name : NULL,
                cli_jstr(tok, "scope"),
                cli_jstr(tok, "node"),
                cli_format_time(cli_jnum(tok, "created"), now, created, sizeof(created)),
                json_is_number(json_object_get(tok, "last_used"))
                        ? cli_format_time(cli_jnum(tok, "last_used"), now, used, sizeof(used))
                        : "never",
                expires_cell(tok, now, expires, sizeof(expires)),
        };
        return cli_table_add(t, cells);
}

static int print_tokens(const json_t *tokens) {
        static const char *const cols[] = { "ID", "USER", "NAME", "SCOPE", "NODE", "CREATED", "LAST_USED", "EXPIRES" };
        static const struct cli_rows rows = {
                .cols = cols,
                .ncols = ELEMENTSOF(cols),
                .narrow_col = 2,
                .max_width = 32,
                .add_row = add_token_row,
        };
        return cli_print_rows(&rows, tokens);
}

static int run_list(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct cli_get_verb v = {
                .verb = "token list",
                .help = list_help,
                .target = "/api/v1/tokens",
                .array_key = "tokens",
                .print = print_tokens,
        };
        return cli_run_get_verb(ctx, &v, argc, argv);
}

static int run_revoke(struct cli_ctx *ctx, int argc, char **argv) {
        const char *verb = "token revoke";
        bool json;
        int r = cli_parse_json_only(ctx, verb, revoke_help, true, argc, argv, &json);
        if (r >= 0)
                return r;
        if (optind >= argc)
                return cli_usage(verb, "which token? gpuward token revoke ID... ('gpuward token list' shows them)");
        int n = argc - optind;
        _cleanup_free_ long long *ids = calloc((size_t) n, sizeof(long long));
        if (!ids)
                return CLI_EXIT_FAIL;
        for (int i = 0; i < n; i++)
                if (gw_parse_int(argv[optind + i], 1, INT64_MAX, &ids[i]) < 0)
                        return cli_usage(verb,
                                         "'%s' is not a token id (a positive number, as 'gpuward token "
                                         "list' shows them)",
                                         argv[optind + i]);
        json_t *out = json_array();
        int status = CLI_EXIT_OK;
        for (int i = 0; i < n; i++) {
                char target[64], subject[48];
                snprintf(target, sizeof(target), "/api/v1/tokens/%lld", ids[i]);
                snprintf(subject, sizeof(subject), "token %lld", ids[i]);
                struct cli_call call = { .method = "DELETE", .target = target, .subject = subject };
                json_t *reply = NULL;
                if (cli_api_json(ctx, &call, &reply) != CLI_EXIT_OK) {
                        status = CLI_EXIT_FAIL;
                        continue;
                }
                if (json)
                        (void) json_array_append(out, reply);
                else
                        printf("Revoked token %lld\n", ids[i]);
                json_decref(reply);
        }
        if (json && json_array_size(out) > 0 && cli_print_json(n == 1 ? json_array_get(out, 0) : out) < 0)
                status = CLI_EXIT_FAIL;
        json_decref(out);
        return status;
}

int cli_verb_token(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct cli_command cmds[] = {
                { "create", run_create },
                { "list", run_list },
                { "revoke", run_revoke },
                { NULL, NULL },
        };
        return cli_run_command(ctx, "token", token_help, cmds, argc, argv);
}

static const char whoami_help[] = "Usage: gpuward whoami [--json]\n"
                                  "\n"
                                  "Who gpuwardd takes you for: your user name, uid and role (admin, user or guest),\n"
                                  "and how it told who you are: unix-socket (your process's uid, on the local\n"
                                  "socket), token (a bearer token, over TCP), session (the web page's sign-in) or\n"
                                  "none (an anonymous guest).\n"
                                  "\n"
                                  "Options:\n"
                                  "  --json       print the API's JSON: {\"user\", \"uid\", \"role\", \"auth\"}\n"
                                  "  -h, --help   this help\n"
                                  "\n"
                                  "Example:\n"
                                  "  gpuward whoami     # alice (uid 1000), user, by unix-socket\n";

static int print_whoami(const json_t *me) {
        const char *user = cli_jstr(me, "user"), *role = cli_jstr(me, "role"), *auth = cli_jstr(me, "auth");
        long long uid;
        _cleanup_free_ char *safe = cli_sanitize(user && *user ? user : "nobody known");
        char ubuf[40] = "";
        if (cli_jint(me, "uid", &uid))
                snprintf(ubuf, sizeof(ubuf), " (uid %lld)", uid);
        printf("%s%s, %s, by %s\n", safe ? safe : "?", ubuf, role ? role : "?", auth ? auth : "?");
        return CLI_EXIT_OK;
}

int cli_verb_whoami(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct cli_get_verb v = {
                .verb = "whoami",
                .help = whoami_help,
                .target = "/api/v1/whoami",
                .print = print_whoami,
        };
        return cli_run_get_verb(ctx, &v, argc, argv);
}
