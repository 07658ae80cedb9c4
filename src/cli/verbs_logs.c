/* gpuward logs [-f] JOB: the job's output, fetched by offset; -f polls until it ends. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/verbs.h"
#include "core/job.h"

#define LOG_CHUNK (1024 * 1024) /* the API's maximum per request */
#define FOLLOW_POLL (200 * GW_USEC_PER_MSEC)
#define JSON_LOG_MAX ((size_t) 64 * 1024 * 1024)

static const char logs_help[] =
        "Usage: gpuward logs [-f] [--json] JOB\n"
        "\n"
        "Print what the job wrote to stdout and stderr, byte for byte.  With -f, keep\n"
        "printing new output as it comes and return when the job has ended.\n"
        "\n"
        "Options:\n"
        "  -f, --follow   follow the log until the job ends (Ctrl-C stops watching only)\n"
        "  --json         print {\"id\", \"state\", \"offset\", \"log\"} (not with -f)\n"
        "  -h, --help     this help\n"
        "\n"
        "Examples:\n"
        "  gpuward logs 17\n"
        "  gpuward logs -f 17\n"
        "  gpuward logs 17 | grep -i 'cuda error'\n";

enum { OPT_JSON = 0x100 };

struct log_state {
        long long id;
        long long offset;
        char *job_state; /* from X-Job-State; malloc'ed */
};

/* One GET of the log from st->offset.  *ret is the response (body = the bytes). */
static int fetch_chunk(struct cli_ctx *ctx, struct log_state *st, struct cli_http_response *ret) {
        char target[128];
        snprintf(target, sizeof(target), "/api/v1/jobs/%lld/log?offset=%lld&limit=%d", st->id, st->offset,
                 LOG_CHUNK);
        struct cli_call call = { .method = "GET", .target = target };
        int r = cli_api_call(ctx, &call, ret);
        if (r)
                return r;
        long long next;
        const char *h = cli_http_header(ret, "X-Log-Offset");
        if (h && gw_parse_int(h, 0, LLONG_MAX, &next) == 0)
                st->offset = next;
        else
                st->offset += (long long) ret->body_len;
        h = cli_http_header(ret, "X-Job-State");
        free(st->job_state);
        st->job_state = h ? strdup(h) : NULL;
        return 0;
}

static bool job_ended(const struct log_state *st) {
        if (!st->job_state)
                return true; /* a daemon that does not say cannot be followed forever */
        enum gw_job_state s = gw_job_state_from_name(st->job_state);
        return s >= 0 && gw_job_state_is_final(s);
}

/* Raw bytes to stdout.  A reader that went away (`| head`) ends us quietly. */
static int emit(const char *buf, size_t n, bool *ret_closed) {
        int r = cli_write_all(STDOUT_FILENO, buf, n);
        if (r == -EPIPE) {
                *ret_closed = true;
                return CLI_EXIT_OK;
        }
        if (r < 0) {
                cli_error("writing the log: %s", strerror(-r));
                return CLI_EXIT_FAIL;
        }
        return CLI_EXIT_OK;
}

static int stream_log(struct cli_ctx *ctx, struct log_state *st, bool follow) {
        (void) fflush(stdout);
        for (;;) {
                struct cli_http_response resp;
                int r = fetch_chunk(ctx, st, &resp);
                if (r)
                        return r;
                bool closed = false;
                size_t n = resp.body_len;
                r = emit(resp.body, n, &closed);
                cli_http_response_done(&resp);
                if (r || closed)
                        return r;
                if (n >= LOG_CHUNK)
                        continue; /* more is there already */
                if (!follow || (n == 0 && job_ended(st)))
                        return CLI_EXIT_OK;
                if (n == 0)
                        cli_sleep_usec(FOLLOW_POLL);
        }
}

/* Appends buf to out as valid UTF-8: bytes that are not become U+FFFD, since a log is
 * whatever a program printed and JSON cannot carry raw bytes. */
static void put_utf8(FILE *out, const unsigned char *p, size_t n) {
        size_t i = 0;
        while (i < n) {
                unsigned char c = p[i];
                size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
                bool ok = len > 0 && i + len <= n && !(len == 2 && c < 0xC2);
                for (size_t k = 1; ok && k < len; k++)
                        ok = (p[i + k] & 0xC0) == 0x80;
                if (ok && len == 3)
                        ok = !(c == 0xE0 && p[i + 1] < 0xA0) && !(c == 0xED && p[i + 1] >= 0xA0);
                if (ok && len == 4)
                        ok = c <= 0xF4 && !(c == 0xF0 && p[i + 1] < 0x90) && !(c == 0xF4 && p[i + 1] >= 0x90);
                if (!ok) {
                        fputs("\xef\xbf\xbd", out);
                        i++;
                        continue;
                }
                fwrite(p + i, 1, len, out);
                i += len;
        }
}

static int json_log(struct cli_ctx *ctx, struct log_state *st) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return CLI_EXIT_FAIL;
        int r;
        for (;;) {
                struct cli_http_response resp;
                r = fetch_chunk(ctx, st, &resp);
                if (r)
                        break;
                size_t n = resp.body_len;
                put_utf8(f, (const unsigned char *) resp.body, n);
                cli_http_response_done(&resp);
                if (n < LOG_CHUNK || (size_t) ftell(f) >= JSON_LOG_MAX)
                        break;
        }
        if (fclose(f) != 0 && !r)
                r = CLI_EXIT_FAIL;
        if (!r) {
                json_t *o = json_pack("{s:I, s:s?, s:I, s:s%}", "id", (json_int_t) st->id, "state",
                                      st->job_state, "offset", (json_int_t) st->offset, "log", text ? text : "",
                                      text ? len : (size_t) 0);
                r = o && cli_print_json(o) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
                json_decref(o);
        }
        free(text);
        return r;
}

int cli_verb_logs(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct option opts[] = {
                { "follow", no_argument, NULL, 'f' },
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        bool follow = false, json = ctx->json;
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":fh", opts, NULL)) != -1) {
                if (c == 'h') {
                        fputs(logs_help, stdout);
                        return CLI_EXIT_OK;
                }
                if (c == 'f')
                        follow = true;
                else if (c == OPT_JSON)
                        json = true;
                else
                        return cli_bad_option("logs", argv, optind, c, optopt);
        }
        if (optind >= argc)
                return cli_usage("logs", "which job? gpuward logs [-f] JOB");
        if (optind + 1 < argc)
                return cli_usage("logs", "one job at a time (got '%s' too)", argv[optind + 1]);
        if (follow && json)
                return cli_usage("logs", "--json and -f exclude each other");
        struct log_state st = { 0 };
        if (cli_parse_job_id("logs", argv[optind], &st.id) < 0)
                return CLI_EXIT_USAGE;
        int r = json ? json_log(ctx, &st) : stream_log(ctx, &st, follow);
        free(st.job_state);
        return r;
}
