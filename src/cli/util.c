/* Small helpers of the gpuward command: error output, ids, paths, raw writes. */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/format.h"
#include "core/sbatch_words.h"

static FILE *error_stream; /* NULL: stderr */

FILE *cli_set_error_stream(FILE *f) {
        FILE *old = error_stream;
        error_stream = f;
        return old;
}

static void vreport(const char *what, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void vreport(const char *what, const char *fmt, va_list ap) {
        FILE *out = error_stream ? error_stream : stderr;
        /* stdout may be a pipe into `less`; flush it first so messages keep their order. */
        (void) fflush(stdout);
        fprintf(out, "gpuward: %s: ", what);
        vfprintf(out, fmt, ap);
        fputc('\n', out);
}

void cli_error(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vreport("error", fmt, ap);
        va_end(ap);
}

void cli_warn(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vreport("warning", fmt, ap);
        va_end(ap);
}

int cli_usage(const char *verb, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vreport("error", fmt, ap);
        va_end(ap);
        if (verb)
                fprintf(stderr, "Try 'gpuward %s --help'.\n", verb);
        else
                fprintf(stderr, "Try 'gpuward --help'.\n");
        return CLI_EXIT_USAGE;
}

/* The closest of the verb's long options to an unknown one, or NULL: two edits at most, and
 * fewer than half its letters (so that "--x" is no near miss of "--cwd"). */
static const char *nearest_option(const char *name, const struct option *opts) {
        const char *best = NULL;
        int best_d = 3, len = (int) strlen(name);
        for (const struct option *o = opts; o && o->name; o++) {
                int dist = gw_edit_distance(name, o->name, 3);
                if (dist < best_d && dist * 2 < len) {
                        best = o->name;
                        best_d = dist;
                }
        }
        return best;
}

int cli_bad_option_in(const char *verb, char **argv, int optind_now, int ret, int optopt_now,
                      const struct option *opts) {
        /* getopt leaves optopt set for short options only; the word itself is more useful
         * for long ones ("--gpu" typed for "--gpus"). */
        const char *word = optind_now > 0 ? argv[optind_now - 1] : "?";
        char shortopt[3] = { '-', (char) optopt_now, '\0' };
        if (optopt_now > 0 && optopt_now < 128 && !(word[0] == '-' && word[1] == '-'))
                word = shortopt;
        if (ret == ':')
                return cli_usage(verb, "option '%s' needs a value", word);
        if (word[0] == '-' && word[1] == '-' && word[2]) {
                char name[64];
                snprintf(name, sizeof name, "%.*s", (int) strcspn(word + 2, "="), word + 2);
                const char *slurm = verb && !strcmp(verb, "submit") ? gw_sbatch_option_hint(name) : NULL;
                const char *near = nearest_option(name, opts);
                if (slurm)
                        return cli_usage(verb, "unknown option '--%s' (sbatch's): in gpuward, %s", name, slurm);
                if (near)
                        return cli_usage(verb, "unknown option '--%s': did you mean '--%s'?", name, near);
        }
        return cli_usage(verb, "unknown option '%s'", word);
}

int cli_bad_option(const char *verb, char **argv, int optind_now, int ret, int optopt_now) {
        return cli_bad_option_in(verb, argv, optind_now, ret, optopt_now, NULL);
}

int cli_parse_job_id(const char *verb, const char *s, long long *ret_id) {
        long long id, index;
        const char *us = strchr(s, '_');
        if (us) {
                _cleanup_free_ char *array = strndup(s, (size_t) (us - s));
                if (!array || gw_parse_int(array, 1, INT64_MAX >> CLI_TASK_SHIFT, &id) < 0 ||
                    gw_parse_int(us + 1, 0, (1 << CLI_TASK_SHIFT) - 1, &index) < 0) {
                        cli_usage(verb, "'%s' is not a job array's task (ARRAY_INDEX, e.g. 17_3)", s);
                        return -EINVAL;
                }
                *ret_id = -(id << CLI_TASK_SHIFT | index);
                return 0;
        }
        if (gw_parse_int(s, 1, INT64_MAX, &id) < 0) {
                cli_usage(verb, "'%s' is not a job id (a positive number, e.g. 17, or an array's task, 17_3)", s);
                return -EINVAL;
        }
        *ret_id = id;
        return 0;
}

const char *cli_job_ref(long long id, char *buf, size_t size) {
        if (id < 0)
                snprintf(buf, size, "%lld_%lld", -id >> CLI_TASK_SHIFT, -id & ((1 << CLI_TASK_SHIFT) - 1));
        else
                snprintf(buf, size, "%lld", id);
        return buf;
}

int cli_id_push(struct cli_id_list *ids, long long id) {
        if (ids->n == ids->cap) {
                size_t cap = ids->cap ? ids->cap * 2 : 16;
                long long *v = realloc(ids->v, cap * sizeof *v);
                if (!v) {
                        cli_error("out of memory");
                        return CLI_EXIT_FAIL;
                }
                ids->v = v;
                ids->cap = cap;
        }
        ids->v[ids->n++] = id;
        return 0;
}

int cli_parse_job_ids(const char *verb, char **words, int n, struct cli_id_list *ids) {
        for (int i = 0; i < n; i++) {
                const char *dash = strchr(words[i], '-');
                long long a, b;
                if (!dash || dash == words[i]) {
                        if (cli_parse_job_id(verb, words[i], &a) < 0)
                                return CLI_EXIT_USAGE;
                        if (cli_id_push(ids, a))
                                return CLI_EXIT_FAIL;
                        continue;
                }
                _cleanup_free_ char *first = strndup(words[i], (size_t) (dash - words[i]));
                if (!first || gw_parse_int(first, 1, INT64_MAX, &a) < 0 || gw_parse_int(dash + 1, 1, INT64_MAX, &b) < 0)
                        return cli_usage(verb, "'%s' is not a job id or a range of ids (e.g. 17 or 17-40)", words[i]);
                if (b < a || b - a >= CLI_ID_RANGE_MAX)
                        return cli_usage(verb, "'%s': a range goes up, by at most %d ids", words[i], CLI_ID_RANGE_MAX);
                /* By count: "id <= b" never ends when b is INT64_MAX. */
                for (long long k = 0; k <= b - a; k++)
                        if (cli_id_push(ids, a + k))
                                return CLI_EXIT_FAIL;
        }
        return 0;
}

bool cli_is_policy_name(const char *s) {
        size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-");
        return n > 0 && !s[n];
}

char *cli_current_dir(void) { return get_current_dir_name(); }

char *cli_absolute_path(const char *path, const char *base) {
        if (!path || !*path) {
                errno = EINVAL;
                return NULL;
        }
        if (path[0] == '/')
                return strdup(path);

        _cleanup_free_ char *cwd = NULL;
        if (!base) {
                cwd = cli_current_dir();
                if (!cwd)
                        return NULL;
                base = cwd;
        }
        /* "./x" reads better without the "./" once it is absolute. */
        while (path[0] == '.' && path[1] == '/')
                path += 2;
        if (!*path || (path[0] == '.' && !path[1]))
                return strdup(base);
        size_t blen = strlen(base);
        bool slash = blen > 0 && base[blen - 1] == '/';
        char *out = NULL;
        if (asprintf(&out, "%s%s%s", base, slash ? "" : "/", path) < 0)
                return NULL;
        return out;
}

void cli_sleep_usec(gw_usec_t usec) {
        struct timespec ts = {
                .tv_sec = (time_t) (usec / GW_USEC_PER_SEC),
                .tv_nsec = (long) (usec % GW_USEC_PER_SEC) * 1000L,
        };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int cli_take_socket(struct cli_ctx *ctx, const char *verb, const char *path) {
        if (!*path)
                return cli_usage(verb, "--socket: the path is empty");
        ctx->socket_path = path;
        ctx->remote = NULL; /* a socket named on the command line wins over GPUWARD_URL */
        return 0;
}

int cli_parse_options(struct cli_ctx *ctx, const struct cli_options *o, int argc, char **argv, bool *ret_json) {
        enum { OPT_JSON = 0x7f00 };
        struct option opts[CLI_OPTIONS_MAX + 4] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                CLI_SOCKET_OPTION,
        };
        size_t n = 3;
        for (const struct option *e = o->extra; e && e->name && n < CLI_OPTIONS_MAX + 3; e++)
                opts[n++] = *e;
        char shortopts[32];
        snprintf(shortopts, sizeof(shortopts), "%s:h%s", o->no_permute ? "+" : "", o->shortopts ? o->shortopts : "");
        bool json = ctx->json;
        int c, r;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
                if (c == 'h') {
                        fputs(o->help, stdout);
                        return CLI_EXIT_OK;
                }
                if (c == OPT_JSON)
                        json = true;
                else if (c == CLI_OPT_SOCKET && (r = cli_take_socket(ctx, o->verb, optarg)) != 0)
                        return r;
                else if (c == CLI_OPT_SOCKET)
                        continue;
                else if (c == '?' || c == ':' || !o->on_option)
                        return cli_bad_option_in(o->verb, argv, optind, c, optopt, opts);
                else if ((r = o->on_option(o->userdata, c, optarg)) != 0)
                        return r;
        }
        if (o->no_arguments && optind < argc)
                return cli_usage(o->verb, "unexpected argument '%s'", argv[optind]);
        *ret_json = json;
        return -1;
}

int cli_parse_json_only(struct cli_ctx *ctx, const char *verb, const char *help, bool permute, int argc, char **argv,
                        bool *ret_json) {
        const struct cli_options o = { .verb = verb, .help = help, .no_permute = !permute };
        return cli_parse_options(ctx, &o, argc, argv, ret_json);
}

int cli_parse_one_job(struct cli_ctx *ctx, const struct cli_options *spec, int argc, char **argv, bool *ret_json,
                      long long *ret_id) {
        const char *verb = spec->verb;
        int r = cli_parse_options(ctx, spec, argc, argv, ret_json);
        if (r >= 0)
                return r;
        if (optind >= argc)
                return cli_usage(verb, "which job? gpuward %s JOB", verb);
        if (optind + 1 < argc)
                return cli_usage(verb, "one job at a time (got '%s' too)", argv[optind + 1]);
        return cli_parse_job_id(verb, argv[optind], ret_id) < 0 ? CLI_EXIT_USAGE : -1;
}

int cli_parse_no_arguments(struct cli_ctx *ctx, const char *verb, const char *help, int argc, char **argv,
                           bool *ret_json) {
        const struct cli_options o = { .verb = verb, .help = help, .no_arguments = true };
        return cli_parse_options(ctx, &o, argc, argv, ret_json);
}

int cli_run_command(struct cli_ctx *ctx, const char *verb, const char *help, const struct cli_command *cmds, int argc,
                    char **argv) {
        static const struct option opts[] = {
                CLI_OPTIONS_END,
        };
        int c, r;
        optind = 0;
        opterr = 0;
        /* "+": stop at the command; its options are its own. */
        while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                if (c == CLI_OPT_SOCKET && (r = cli_take_socket(ctx, verb, optarg)) != 0)
                        return r;
                if (c == CLI_OPT_SOCKET)
                        continue;
                if (c != 'h')
                        return cli_bad_option_in(verb, argv, optind, c, optopt, opts);
                fputs(help, stdout);
                return CLI_EXIT_OK;
        }
        if (optind >= argc) {
                fputs(help, stderr);
                return CLI_EXIT_USAGE;
        }
        char known[256] = "";
        for (const struct cli_command *cmd = cmds; cmd->name; cmd++) {
                if (strcmp(argv[optind], cmd->name) == 0)
                        return cmd->run(ctx, argc - optind, argv + optind);
                size_t k = strlen(known);
                snprintf(known + k, sizeof(known) - k, "%s%s", k ? ", " : "", cmd->name);
        }
        return cli_usage(verb, "unknown %s command '%s' (%s)", verb, argv[optind], known);
}

int cli_show_json(const json_t *reply) { return cli_print_json(reply) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK; }

int cli_call_and_show(struct cli_ctx *ctx, const struct cli_call *call, bool json,
                      int (*print)(const json_t *reply, void *userdata), void *userdata) {
        json_t *reply = NULL;
        int r = cli_api_json(ctx, call, &reply);
        if (r)
                return r;
        r = json ? cli_show_json(reply) : print(reply, userdata);
        json_decref(reply);
        return r;
}

int cli_fetch_and_show(struct cli_ctx *ctx, const struct cli_call *call, bool json, const char *array_key,
                       int (*print)(const json_t *what)) {
        json_t *reply = NULL;
        int r = cli_api_json(ctx, call, &reply);
        if (r)
                return r;
        const json_t *what = array_key ? json_object_get(reply, array_key) : reply;
        if (json) {
                r = cli_show_json(reply);
        } else if (array_key && !json_is_array(what)) {
                cli_error("gpuwardd's reply has no \"%s\" array", array_key);
                r = CLI_EXIT_FAIL;
        } else {
                r = print(what);
        }
        json_decref(reply);
        return r;
}

int cli_oom(void) {
        cli_error("out of memory");
        return CLI_EXIT_FAIL;
}

struct get_option {
        const struct cli_get_verb *v;
        char *value; /* the last one given wins */
};

static int take_get_option(void *userdata, int opt, const char *arg) {
        struct get_option *g = userdata;
        char *value = NULL;
        (void) opt;
        int r = g->v->take(arg, &value);
        if (r == 0) {
                free(g->value);
                g->value = value;
        }
        return r;
}

static int fetch_with_option(struct cli_ctx *ctx, const struct cli_get_verb *v, bool json, const char *value) {
        _cleanup_free_ char *target = strdup(v->target);
        if (!target || (value && cli_query_add(&target, v->option, value) < 0))
                return cli_oom();
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", v->option ? v->option : "");
        const struct cli_field_alias aliases[] = { { v->option, flag }, { NULL, NULL } };
        struct cli_call call = { .method = "GET", .target = target, .aliases = v->option ? aliases : NULL };
        return cli_fetch_and_show(ctx, &call, json, v->array_key, v->print);
}

int cli_run_get_verb(struct cli_ctx *ctx, const struct cli_get_verb *v, int argc, char **argv) {
        const struct option extra[] = { { v->option, required_argument, NULL, 0x100 }, { 0 } };
        struct get_option g = { .v = v };
        const struct cli_options spec = {
                .verb = v->verb,
                .help = v->help,
                .no_arguments = true,
                .extra = v->option ? extra : NULL,
                .on_option = v->option ? take_get_option : NULL,
                .userdata = &g,
        };
        bool json;
        int r = cli_parse_options(ctx, &spec, argc, argv, &json);
        if (r < 0)
                r = fetch_with_option(ctx, v, json, g.value ? g.value : v->value_default);
        free(g.value);
        return r;
}

int cli_print_rows(const struct cli_rows *spec, const json_t *items) {
        struct cli_table *t = cli_table_new(spec->cols, spec->ncols);
        if (!t)
                return CLI_EXIT_FAIL;
        if (spec->max_width)
                cli_table_set_max_width(t, spec->narrow_col, spec->max_width);
        time_t now = time(NULL);
        size_t i;
        const json_t *item;
        int r = 0;
        json_array_foreach (items, i, item) {
                if ((r = spec->add_row(t, item, now)) < 0)
                        break;
        }
        if (r >= 0)
                cli_table_print(t, stdout);
        cli_table_free(t);
        if (r < 0)
                cli_error("out of memory");
        return r < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
