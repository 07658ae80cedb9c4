/* The verbs of the gpuward command.  Each takes its own argv (argv[0] is the verb),
 * parses its options with getopt_long, and returns the process exit code. */
#pragma once
#include "cli/cli.h"

struct cli_verb {
        const char *name;
        int (*run)(struct cli_ctx *ctx, int argc, char **argv);
        const char *summary; /* one line for `gpuward --help` */
};

int cli_verb_submit(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_queue(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_history(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_show(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_cancel(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_hold(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_release(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_logs(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_wait(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_gpus(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_top(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_admin(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_reserve(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_reservations(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_unreserve(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_schedule(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_quota(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_cache(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_token(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_whoami(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_report(struct cli_ctx *ctx, int argc, char **argv);
/* verbs_run.c: an interactive session */
int cli_verb_run(struct cli_ctx *ctx, int argc, char **argv);
/* verbs_train.c: training awareness */
int cli_verb_eta(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_snapshots(struct cli_ctx *ctx, int argc, char **argv);
int cli_verb_restore(struct cli_ctx *ctx, int argc, char **argv);
/* verbs_models.c: published models */
int cli_verb_models(struct cli_ctx *ctx, int argc, char **argv);

/* `gpuward admin quota ...` (argv[0] is "quota"), beside the user-side `quota` verb. */
int cli_admin_quota(struct cli_ctx *ctx, int argc, char **argv);

/* The verb table, terminated by a NULL name. */
extern const struct cli_verb cli_verbs[];
