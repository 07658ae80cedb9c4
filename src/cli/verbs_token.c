/* gpuward token create|list|revoke: bearer tokens that give scripts your identity over TCP. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/jobview.h"
#include "cli/verbs.h"

/* As gpuwardd checks it. */
#define TOKEN_NAME_MAX 64

static const char token_help[] =
        "Usage: gpuward token COMMAND [OPTIONS] [ARGS]\n"
        "\n"
        "Over its Unix socket gpuwardd knows who you are; over TCP (the web page, scripts\n"
        "on other machines through a tunnel, CI) a request is a guest's, read-only,\n"
        "unless it carries one of your tokens: 'Authorization: Bearer gw_...'.\n"
        "\n"
        "Commands:\n"
        "  create [--name NAME]   make a token; it is printed once and never again\n"
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
        "  gpuward token list\n"
        "  gpuward token revoke 3\n";

static const char create_help[] =
        "Usage: gpuward token create [--name NAME] [-q] [--json]\n"
        "\n"
        "Make a token that acts as you over gpuwardd's TCP door.  It is printed once:\n"
        "gpuwardd keeps only a hash of it, so copy it now into where it is used (a CI\n"
        "secret, a file only you can read).  Anyone holding it can act as you until\n"
        "'gpuward token revoke ID'.  Tokens are made over the Unix socket only.\n"
        "\n"
        "Options:\n"
        "  --name NAME  what it is for, shown by 'gpuward token list' (at most 64 bytes)\n"
        "  -q, --quiet  print only the token, for TOKEN=$(...)\n"
        "  --json       print the API's JSON (with the token)\n"
        "  -h, --help   this help\n"
        "\n"
        "Examples:\n"
        "  gpuward token create --name ci\n"
        "  TOKEN=$(gpuward token create --name laptop -q)\n"
        "  curl -H \"Authorization: Bearer $TOKEN\" http://127.0.0.1:8470/api/v1/jobs\n";

static const char list_help[] =
        "Usage: gpuward token list [--json]\n"
        "\n"
        "List your tokens (admins: everyone's): id, owner, name, when it was made and\n"
        "last used.  The tokens themselves are not stored and cannot be shown again.\n"
        "\n"
        "Options:\n"
        "  --json       print the API's JSON\n"
        "  -h, --help   this help\n"
        "\n"
        "Example:\n"
        "  gpuward token list\n";

static const char revoke_help[] =
        "Usage: gpuward token revoke [--json] ID...\n"
        "\n"
        "Revoke tokens (their ids as 'gpuward token list' shows them): requests carrying\n"
        "them get 401 from then on.  You may revoke your own tokens; admins any.\n"
        "\n"
        "Options:\n"
        "  --json       print the API's JSON\n"
        "  -h, --help   this help\n"
        "\n"
        "Example:\n"
        "  gpuward token revoke 3\n";

enum { OPT_NAME = 0x100, OPT_JSON };

/* Options of the token commands; only create takes --name and -q. */
struct token_opts {
        const char *verb;
        const char *help;
        const char *name;
        bool json, quiet;
};

static int parse_token_opts(const struct cli_ctx *ctx, struct token_opts *o, bool create, int argc, char **argv,
                            bool *ret_help) {
        static const struct option opts[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                { "name", required_argument, NULL, OPT_NAME },
                { "quiet", no_argument, NULL, 'q' },
                { 0 },
        };
        int c;
        o->json = ctx->json;
        optind = 0;
        opterr = 0;
        /* Cutting the table short makes getopt call --name unknown where it does not apply. */
        struct option only[3] = { opts[0], opts[1], { 0 } };
        while ((c = getopt_long(argc, argv, create ? ":hq" : ":h", create ? opts : only, NULL)) != -1) {
                switch (c) {
                case 'h':
                        fputs(o->help, stdout);
                        *ret_help = true;
                        return 0;
                case OPT_JSON:
                        o->json = true;
                        break;
                case 'q':
                        o->quiet = true;
                        break;
                case OPT_NAME:
                        if (!*optarg)
                                return cli_usage(o->verb, "--name: the name is empty");
                        if (strlen(optarg) > TOKEN_NAME_MAX || strpbrk(optarg, "\r\n\t"))
                                return cli_usage(o->verb, "--name: at most %d bytes, on one line", TOKEN_NAME_MAX);
                        o->name = optarg;
                        break;
                default:
                        return cli_bad_option(o->verb, argv, optind, c, optopt);
                }
        }
        return 0;
}

static void print_created(const json_t *reply, const char *token) {
        long long id = 0;
        (void) cli_jint(reply, "id", &id);
        const char *name = cli_jstr(reply, "name");
        _cleanup_free_ char *sname = name && *name ? cli_sanitize(name) : NULL;
        printf("Token %lld%s%s%s:\n\n    %s\n\n", id, sname ? " (" : "", sname ? sname : "", sname ? ")" : "", token);
        printf("Copy it now: it will not be shown again (gpuwardd keeps only its hash).\n"
               "Use it over TCP as a bearer token, with TOKEN set to it:\n"
               "    curl -H \"Authorization: Bearer $TOKEN\" http://127.0.0.1:8470/api/v1/jobs\n"
               "(8470 is gpuwardd's default port; its --listen option may name another.)\n"
               "Revoke it with 'gpuward token revoke %lld'.\n",
               id);
}

static int run_create(struct cli_ctx *ctx, int argc, char **argv) {
        struct token_opts o = { .verb = "token create", .help = create_help };
        bool help = false;
        int r = parse_token_opts(ctx, &o, true, argc, argv, &help);
        if (r || help)
                return r;
        if (optind < argc)
                return cli_usage(o.verb, "unexpected argument '%s' (name the token with --name)", argv[optind]);
        json_t *body = o.name ? json_pack("{s:s}", "name", o.name) : json_object();
        if (!body)
                return cli_usage(o.verb, "--name: not valid UTF-8 text");
        static const struct cli_field_alias aliases[] = { { "name", "--name" }, { NULL, NULL } };
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
        } else if (o.json) {
                r = cli_print_json(reply) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
        } else if (o.quiet) {
                printf("%s\n", token);
        } else {
                print_created(reply, token);
        }
        json_decref(reply);
        return r;
}

static int print_tokens(const json_t *tokens) {
        static const char *const cols[] = { "ID", "USER", "NAME", "CREATED", "LAST_USED" };
        struct cli_table *t = cli_table_new(cols, ELEMENTSOF(cols));
        if (!t)
                return CLI_EXIT_FAIL;
        cli_table_set_max_width(t, 2, 32);
        time_t now = time(NULL);
        size_t i;
        const json_t *tok;
        int r = 0;
        json_array_foreach(tokens, i, tok) {
                char id[32], created[48], used[48], ubuf[32];
                long long v = 0;
                const char *name = cli_jstr(tok, "name");
                snprintf(id, sizeof(id), "%lld", cli_jint(tok, "id", &v) ? v : 0);
                const char *cells[] = {
                        id,
                        cli_job_user(tok, ubuf, sizeof(ubuf)),
                        name && *name ? name : NULL,
                        cli_format_time(cli_jnum(tok, "created"), now, created, sizeof(created)),
                        json_is_number(json_object_get(tok, "last_used"))
                                ? cli_format_time(cli_jnum(tok, "last_used"), now, used, sizeof(used))
                                : "never",
                };
                if ((r = cli_table_add(t, cells)) < 0)
                        break;
        }
        if (r >= 0)
                cli_table_print(t, stdout);
        cli_table_free(t);
        if (r < 0)
                cli_error("out of memory");
        return r < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static int run_list(struct cli_ctx *ctx, int argc, char **argv) {
        struct token_opts o = { .verb = "token list", .help = list_help };
        bool help = false;
        int r = parse_token_opts(ctx, &o, false, argc, argv, &help);
        if (r || help)
                return r;
        if (optind < argc)
                return cli_usage(o.verb, "unexpected argument '%s'", argv[optind]);
        struct cli_call call = { .method = "GET", .target = "/api/v1/tokens" };
        json_t *reply = NULL;
        r = cli_api_json(ctx, &call, &reply);
        if (r)
                return r;
        const json_t *tokens = json_object_get(reply, "tokens");
        if (o.json) {
                r = cli_print_json(reply) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
        } else if (!json_is_array(tokens)) {
                cli_error("gpuwardd's reply has no \"tokens\" array");
                r = CLI_EXIT_FAIL;
        } else {
                r = print_tokens(tokens);
        }
        json_decref(reply);
        return r;
}

static int run_revoke(struct cli_ctx *ctx, int argc, char **argv) {
        struct token_opts o = { .verb = "token revoke", .help = revoke_help };
        bool help = false;
        int r = parse_token_opts(ctx, &o, false, argc, argv, &help);
        if (r || help)
                return r;
        if (optind >= argc)
                return cli_usage(o.verb, "which token? gpuward token revoke ID... ('gpuward token list' shows them)");
        int n = argc - optind;
        _cleanup_free_ long long *ids = calloc((size_t) n, sizeof(long long));
        if (!ids)
                return CLI_EXIT_FAIL;
        for (int i = 0; i < n; i++)
                if (gw_parse_int(argv[optind + i], 1, INT64_MAX, &ids[i]) < 0)
                        return cli_usage(o.verb, "'%s' is not a token id (a positive number, as 'gpuward token "
                                                 "list' shows them)", argv[optind + i]);
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
                if (o.json)
                        (void) json_array_append(out, reply);
                else
                        printf("Revoked token %lld\n", ids[i]);
                json_decref(reply);
        }
        if (o.json && json_array_size(out) > 0 && cli_print_json(n == 1 ? json_array_get(out, 0) : out) < 0)
                status = CLI_EXIT_FAIL;
        json_decref(out);
        return status;
}

int cli_verb_token(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct {
                const char *name;
                int (*run)(struct cli_ctx *ctx, int argc, char **argv);
        } cmds[] = {
                { "create", run_create },
                { "list", run_list },
                { "revoke", run_revoke },
        };
        static const struct option opts[] = {
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                if (c != 'h')
                        return cli_bad_option("token", argv, optind, c, optopt);
                fputs(token_help, stdout);
                return CLI_EXIT_OK;
        }
        if (optind >= argc) {
                fputs(token_help, stderr);
                return CLI_EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(cmds); i++)
                if (strcmp(argv[optind], cmds[i].name) == 0)
                        return cmds[i].run(ctx, argc - optind, argv + optind);
        return cli_usage("token", "unknown token command '%s' (create, list, revoke)", argv[optind]);
}
