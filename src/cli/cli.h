/* What every part of the gpuward command shares: the context, exit codes, error output. */
#pragma once
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "base/time.h"

#ifndef GW_VERSION
#define GW_VERSION "0.1.0"
#endif

/* Exit codes are the contract with scripts: 2 means "you typed it wrong", 1 "it failed". */
enum {
        CLI_EXIT_OK = 0,
        CLI_EXIT_FAIL = 1,
        CLI_EXIT_USAGE = 2,
};

struct cli_call; /* cli/api.h */
struct cli_table; /* cli/format.h */

struct cli_remote; /* cli/remote.h */

struct cli_ctx {
        const char *socket_path; /* resolved in main, replaced by a verb's --socket; borrowed */
        const struct cli_remote *remote; /* GPUWARD_URL's daemon over TCP, unless --socket
                                          * names a socket; NULL: the Unix socket.  Borrowed */
        bool json; /* --json before the verb; verbs may also set it */
};

/* --socket is global but may follow the verb as well ("gpuward queue --socket PATH"):
 * every verb's option table holds CLI_SOCKET_OPTION, and cli_take_socket() takes its
 * value.  Returns 0, or the usage error's exit code for an empty path. */
enum { CLI_OPT_SOCKET = 0x7e00 };
#define CLI_SOCKET_OPTION \
        { "socket", required_argument, NULL, CLI_OPT_SOCKET }
/* The end of the option table of a verb that runs getopt itself: -h/--help, --socket and
 * the terminator. */
#define CLI_OPTIONS_END \
        { "help", no_argument, NULL, 'h' }, CLI_SOCKET_OPTION, { 0 }
int cli_take_socket(struct cli_ctx *ctx, const char *verb, const char *path);

/* "gpuward: error: ..." on stderr.  The CLI is the edge, so this is where failures are told. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Sends what cli_error and cli_warn print to f instead (NULL: back to stderr), so that
 * `top` can show an error inside its screen rather than scribble over it.  Borrows f;
 * returns the previous stream. */
FILE *cli_set_error_stream(FILE *f);

/* A usage error: the message, then a hint to the verb's help.  Returns CLI_EXIT_USAGE so
 * callers can `return cli_usage(...)`. */
int cli_usage(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Says "out of memory" as cli_error does; returns CLI_EXIT_FAIL. */
int cli_oom(void);

/* getopt_long's '?' / ':' cases, worded like the rest of our errors. */
int cli_bad_option(const char *verb, char **argv, int optind_now, int ret, int optopt_now);
/* The same, with "did you mean" the nearest of opts (NULL-name-terminated) for an unknown
 * long option, and gpuward's word for sbatch's own on submit. */
struct option;
int cli_bad_option_in(const char *verb, char **argv, int optind_now, int ret, int optopt_now,
                      const struct option *opts);
/* A verb's options: --json and --help, and its own (extra) beside them. */
#define CLI_OPTIONS_MAX 12
struct cli_options {
        const char *verb; /* "token create": named in errors and the help hint */
        const char *help; /* printed on stdout for -h / --help */
        const struct option *extra; /* the verb's own long options, up to CLI_OPTIONS_MAX,
                                      * { 0 }-terminated; val >= 0x100 or a short letter.
                                      * May be NULL. */
        const char *shortopts; /* their short letters for getopt ("q"); may be NULL */
        bool no_permute; /* stop at the first argument: "max_gpus=-1" and a
                                      * command's own options stay arguments */
        bool no_arguments; /* any argument is a usage error */
        /* Called for each extra option with its value (or NULL): 0 to go on, else the exit
         * code to return (cli_usage's).  NULL: there are no extra options. */
        int (*on_option)(void *userdata, int opt, const char *arg);
        void *userdata;
};

/* Parses argv (argv[0] is the verb) with getopt_long: -1 to go on (*ret_json set, from
 * ctx->json or --json; optind at the first argument), else the exit code: help printed
 * (0), or a usage error (2) worded like the rest. */
int cli_parse_options(struct cli_ctx *ctx, const struct cli_options *o, int argc, char **argv, bool *ret_json);

/* Options of a verb that takes only --json and --help: as cli_parse_options().  permute
 * lets options follow arguments ("show 17 --json"). */
int cli_parse_json_only(struct cli_ctx *ctx, const char *verb, const char *help, bool permute, int argc, char **argv,
                        bool *ret_json);
/* cli_parse_options, then the verb's one argument, a job id ("show 17", "eta 17"): -1 to go
 * on with *ret_json and *ret_id set, else the exit code. */
int cli_parse_one_job(struct cli_ctx *ctx, const struct cli_options *spec, int argc, char **argv, bool *ret_json,
                      long long *ret_id);
/* The same for a verb that takes no arguments either ("reservations", "token list"). */
int cli_parse_no_arguments(struct cli_ctx *ctx, const char *verb, const char *help, int argc, char **argv,
                           bool *ret_json);

/* A verb made of commands ("token create", "admin drain"): NULL-name terminated. */
struct cli_command {
        const char *name;
        int (*run)(struct cli_ctx *ctx, int argc, char **argv); /* argv[0] is the command */
};
/* `VERB [-h] COMMAND ...`: prints help for -h, help on stderr (exit 2) with no command,
 * else runs the command named; an unknown one is a usage error listing the others. */
int cli_run_command(struct cli_ctx *ctx, const char *verb, const char *help, const struct cli_command *cmds, int argc,
                    char **argv);

/* cli_print_json() as an exit code. */
int cli_show_json(const json_t *reply);

/* Makes call and shows its reply: the JSON as it came with json, else print(reply,
 * userdata).  Does not take call->body.  Returns the exit code. */
int cli_call_and_show(struct cli_ctx *ctx, const struct cli_call *call, bool json,
                      int (*print)(const json_t *reply, void *userdata), void *userdata);

/* Makes call (a GET) and shows its reply: the JSON as it came with json, else print() of
 * the reply's array named array_key (an error when it is not one), or of the whole reply
 * when array_key is NULL.  Returns the exit code. */
int cli_fetch_and_show(struct cli_ctx *ctx, const struct cli_call *call, bool json, const char *array_key,
                       int (*print)(const json_t *what));

/* A verb that takes no arguments and shows one GET ("reservations", "token list"), with at
 * most one option of its own that the GET takes as its query ("schedule --hours N"). */
struct cli_get_verb {
        const char *verb, *help;
        const char *target; /* the API path it GETs */
        const char *array_key; /* as cli_fetch_and_show's */
        int (*print)(const json_t *what);
        /* The option --NAME VALUE, sent as ?NAME=VALUE and named so in the reply's errors
         * about the field NAME; NULL: none.  take checks VALUE: 0 with the text to send in
         * *ret (malloc'ed), or the exit code of a usage error (cli_usage's). */
        const char *option;
        int (*take)(const char *arg, char **ret);
        const char *value_default; /* sent without the option; NULL: nothing */
};
/* Parses argv as cli_parse_no_arguments (and v's option), then cli_fetch_and_show.  Returns
 * the exit code. */
int cli_run_get_verb(struct cli_ctx *ctx, const struct cli_get_verb *v, int argc, char **argv);

/* A table of API objects, one row each (add_row may add lines under its row). */
struct cli_rows {
        const char *const *cols;
        size_t ncols;
        size_t narrow_col, max_width; /* cells of column narrow_col cut at max_width (0: none) */
        int (*add_row)(struct cli_table *t, const json_t *item, time_t now); /* 0 or -ENOMEM */
};
/* Prints items (a JSON array) as that table on stdout.  Returns the exit code; "out of
 * memory" is told. */
int cli_print_rows(const struct cli_rows *spec, const json_t *items);

/* Help text lines most verbs share. */
#define CLI_HELP_JSON "  --json       print the API's JSON\n"
#define CLI_HELP_HELP "  -h, --help   this help\n"
/* The options paragraph of a verb that takes only --json and --help, blank lines around. */
#define CLI_HELP_JSON_OPTIONS "\nOptions:\n" CLI_HELP_JSON CLI_HELP_HELP "\n"

/* A job id as typed by a user: a positive decimal, or a job array's task as Slurm names it,
 * "17_3", which is returned negative: -(17 << CLI_TASK_SHIFT | 3) (cli_job_ref writes it
 * back, for the API's paths and for messages).  Prints a usage error on failure. */
#define CLI_TASK_SHIFT 20
int cli_parse_job_id(const char *verb, const char *s, long long *ret_id);
/* "17" or "17_3" for an id from cli_parse_job_id, in buf (32 bytes at least); returns buf. */
const char *cli_job_ref(long long id, char *buf, size_t size);

/* Job ids in the order given, from words such as "17" and "17-40".  A range is for "the sweep
 * I just submitted", not the whole history: more than CLI_ID_RANGE_MAX ids is taken for a typo
 * (17-4000 for 17-40).  Returns 0, or the exit code after telling why. */
#define CLI_ID_RANGE_MAX 10000
struct cli_id_list {
        long long *v; /* malloc'ed */
        size_t n, cap;
};
int cli_id_push(struct cli_id_list *ids, long long id);
int cli_parse_job_ids(const char *verb, char **words, int n, struct cli_id_list *ids);

/* Whether s can name an idle policy of gpuwardd's config ("default", "hpo", "finetune"):
 * lower-case letters, digits, '_' and '-'.  The daemon says whether it exists. */
bool cli_is_policy_name(const char *s);

/* An absolute version of path, relative ones taken against base (NULL: the process's
 * cwd).  Does not touch the disk beyond reading the cwd.  Returns a malloc'ed string the
 * caller frees, or NULL with errno set. */
char *cli_absolute_path(const char *path, const char *base);

/* The caller's current directory, as the shell shows it when $PWD is accurate.
 * malloc'ed; NULL with errno set. */
char *cli_current_dir(void);

/* Sleeps for usec, resuming after signals. */
void cli_sleep_usec(gw_usec_t usec);
