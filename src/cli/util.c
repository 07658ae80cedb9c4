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

int cli_bad_option(const char *verb, char **argv, int optind_now, int ret, int optopt_now) {
        /* getopt leaves optopt set for short options only; the word itself is more useful
         * for long ones ("--gpu" typed for "--gpus"). */
        const char *word = optind_now > 0 ? argv[optind_now - 1] : "?";
        char shortopt[3] = { '-', (char) optopt_now, '\0' };
        if (optopt_now > 0 && optopt_now < 128 && !(word[0] == '-' && word[1] == '-'))
                word = shortopt;
        if (ret == ':')
                return cli_usage(verb, "option '%s' needs a value", word);
        return cli_usage(verb, "unknown option '%s'", word);
}

int cli_parse_job_id(const char *verb, const char *s, long long *ret_id) {
        long long id;
        if (gw_parse_int(s, 1, INT64_MAX, &id) < 0) {
                cli_usage(verb, "'%s' is not a job id (a positive number, e.g. 17)", s);
                return -EINVAL;
        }
        *ret_id = id;
        return 0;
}

bool cli_is_policy_name(const char *s) {
        size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-");
        return n > 0 && !s[n];
}

char *cli_current_dir(void) {
        return get_current_dir_name();
}

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

int cli_write_all(int fd, const void *buf, size_t n) {
        const char *p = buf;
        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

void cli_sleep_usec(gw_usec_t usec) {
        struct timespec ts = {
                .tv_sec = (time_t) (usec / GW_USEC_PER_SEC),
                .tv_nsec = (long) (usec % GW_USEC_PER_SEC) * 1000L,
        };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int cli_parse_json_only(struct cli_ctx *ctx, const char *verb, const char *help, bool permute, int argc, char **argv,
                        bool *ret_json) {
        static const struct option opts[] = {
                { "json", no_argument, NULL, 0x7f00 },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        bool json = ctx->json;
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, permute ? ":h" : "+:h", opts, NULL)) != -1) {
                if (c == 'h') {
                        fputs(help, stdout);
                        return CLI_EXIT_OK;
                }
                if (c != 0x7f00)
                        return cli_bad_option(verb, argv, optind, c, optopt);
                json = true;
        }
        *ret_json = json;
        return -1;
}
