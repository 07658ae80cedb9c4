/* What every part of the gpuward command shares: the context, exit codes, error output. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

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

struct cli_ctx {
        const char *socket_path; /* resolved once in main; borrowed */
        bool json;               /* --json before the verb; verbs may also set it */
};

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

/* getopt_long's '?' / ':' cases, worded like the rest of our errors. */
int cli_bad_option(const char *verb, char **argv, int optind_now, int ret, int optopt_now);
/* Options of a verb that takes only --json and --help: -1 to go on (*ret_json set, optind at
 * the first argument), else the exit code (help printed, or a usage error).  permute lets
 * options follow arguments ("show 17 --json"). */
int cli_parse_json_only(struct cli_ctx *ctx, const char *verb, const char *help, bool permute, int argc, char **argv,
                        bool *ret_json);

/* A job id as typed by a user: a positive decimal.  Prints a usage error on failure. */
int cli_parse_job_id(const char *verb, const char *s, long long *ret_id);

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

/* Writes all of buf to fd, retrying on EINTR and short writes.  0 or -errno. */
int cli_write_all(int fd, const void *buf, size_t n);

/* Sleeps for usec, resuming after signals. */
void cli_sleep_usec(gw_usec_t usec);
