/* Calls to gpuwardd's HTTP API with the CLI's error reporting (see api.h). */
#include "cli/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/client.h"
#include "cli/remote.h"
#include "cli/format.h"
#include "cli/jsonfast.h"

static void report_connect_error(const char *socket_path, int err, gw_usec_t timeout, uid_t peer) {
        char d[32];
        switch (err) {
        case -EPERM:
                cli_error("the socket %s is served by a process of uid %u, neither root nor you: nothing was "
                          "sent to it (is GPUWARD_SOCKET or --socket the right path?)",
                          socket_path, (unsigned) peer);
                break;
        case -ENOENT:
        case -ECONNREFUSED:
        case -ENOTDIR:
        case -ENOTSOCK:
                cli_error("cannot reach gpuwardd at %s: is it running?", socket_path);
                break;
        case -ETIMEDOUT:
                cli_error("cannot reach gpuwardd at %s: it did not accept the connection within %s", socket_path,
                          gw_format_duration(timeout, d, sizeof(d)));
                break;
        case -ENAMETOOLONG:
                cli_error("cannot reach gpuwardd at %s: the socket path is too long (at most 107 bytes)", socket_path);
                break;
        case -EACCES: /* the TCP door only (cli_tcp_connect) */
                cli_error("not sending GPUWARD_TOKEN to %s over plain http: the host is not this machine's "
                          "loopback, and anyone on the path could read the token; reach gpuwardd through a "
                          "tunnel or TLS proxy on this host (ssh -L, stunnel) and set GPUWARD_URL to its end, or "
                          "set GPUWARD_INSECURE=1 to send it anyway",
                          socket_path);
                break;
        case -EHOSTUNREACH:
                cli_error("cannot reach gpuwardd at %s: the host name does not resolve to an address (is "
                          "GPUWARD_URL right?)",
                          socket_path);
                break;
        default:
                cli_error("cannot reach gpuwardd at %s: %s", socket_path, strerror(-err));
        }
}

static void report_exchange_error(const char *socket_path, int err, gw_usec_t timeout) {
        char d[32];
        switch (err) {
        case -ETIMEDOUT:
                cli_error("gpuwardd at %s did not answer within %s", socket_path,
                          gw_format_duration(timeout, d, sizeof(d)));
                break;
        case -EBADMSG:
                cli_error("gpuwardd at %s sent a malformed HTTP reply", socket_path);
                break;
        case -EFBIG:
                cli_error("the reply from gpuwardd at %s is larger than %u MiB", socket_path,
                          CLI_HTTP_MAX_BODY_BYTES / (1024u * 1024u));
                break;
        case -EPIPE:
        case -ECONNRESET:
                cli_error("gpuwardd at %s closed the connection without answering", socket_path);
                break;
        default:
                cli_error("talking to gpuwardd at %s: %s", socket_path, strerror(-err));
        }
}

/* The name to show for an API field: the option the user typed when the verb knows
 * one, nothing for "id" (the job id the user typed is in the message anyway). */
static const char *alias_of(const struct cli_field_alias *aliases, const char *field) {
        for (; aliases && aliases->api; aliases++)
                if (strcmp(aliases->api, field) == 0)
                        return aliases->cli;
        return strcmp(field, "id") == 0 ? NULL : field;
}

/* The daemon may already start its message with "field: "; say the field once. */
static const char *strip_field(const char *msg, const char *field) {
        size_t n = field ? strlen(field) : 0;
        if (msg && n > 0 && strncmp(msg, field, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
                return msg + n + 2;
        return msg;
}

/* The API's {"error": ..., "field": ...} as one line: "SUBJECT: FIELD: error". */
static void report_api_error(const struct cli_call *call, const struct cli_http_response *r) {
        json_t *j = json_loadb(r->body, r->body_len, 0, NULL);
        const char *msg = cli_jstr(j, "error");
        const char *field = cli_jstr(j, "field");
        const char *shown = field ? alias_of(call->aliases, field) : NULL;
        _cleanup_free_ char *smsg = cli_sanitize(msg ? strip_field(msg, field) : r->reason);
        _cleanup_free_ char *sfield = shown ? cli_sanitize(shown) : NULL;
        /* "job 17: job 17 already ended" would say it twice. */
        const char *subject = call->subject && !(msg && strcasestr(msg, call->subject)) ? call->subject : NULL;
        const char *retry = r->status == 429 ? cli_http_header(r, "Retry-After") : NULL;
        _cleanup_free_ char *sretry = retry ? cli_sanitize(retry) : NULL;
        _cleanup_free_ char *head = NULL, *tail = NULL;

        if (asprintf(&head, "%s%s%s%s", subject ? subject : "", subject ? ": " : "", sfield ? sfield : "",
                     sfield ? ": " : "") < 0)
                head = NULL;
        if (sretry && asprintf(&tail, " (retry after %s%s)", sretry,
                               strspn(sretry, "0123456789") == strlen(sretry) ? " s" : "") < 0)
                tail = NULL;
        if (msg)
                cli_error("%s%s%s", head ? head : "", smsg ? smsg : "", tail ? tail : "");
        else
                cli_error("%sgpuwardd answered HTTP %d %s%s", head ? head : "", r->status, smsg ? smsg : "",
                          tail ? tail : "");
        json_decref(j);
}

/* Like sbatch when slurmctld is busy: a request the rate limit refused (429 with a
 * Retry-After in seconds: nothing was done) is sent again after that wait, up to
 * RATE_WAIT_MAX in all, so that a loop of submissions slows down instead of failing
 * half-way.  Returns the seconds to wait, or 0 when the refusal stands. */
enum { RATE_WAIT_ONE_MAX = 60, RATE_WAIT_MAX = 300 };
static long long rate_wait(const struct cli_http_response *r, long long waited) {
        const char *after = r->status == 429 ? cli_http_header(r, "Retry-After") : NULL;
        long long s;
        if (!after || gw_parse_int(after, 1, RATE_WAIT_ONE_MAX, &s) < 0 || waited + s > RATE_WAIT_MAX)
                return 0;
        return s;
}

static void tell_rate_wait(const struct cli_http_response *r, long long secs) {
        json_t *j = json_loadb(r->body, r->body_len, 0, NULL);
        _cleanup_free_ char *msg = cli_sanitize(cli_jstr(j, "error") ? cli_jstr(j, "error") : "rate limit");
        cli_warn("%s: waiting %lld s, then trying again", msg ? msg : "rate limit", secs);
        json_decref(j);
}

/* One connection, one request; CLI_EXIT_OK with *ret filled whatever the status. */
static int exchange_once(const struct cli_ctx *ctx, const struct cli_call *call, const struct cli_http_request *req,
                         gw_usec_t timeout, struct cli_http_response *ret) {
        gw_usec_t deadline = gw_clock_mono() + timeout;
        uid_t peer = 0;
        const struct cli_remote *remote = ctx->remote;
        const char *where = remote ? remote->url : ctx->socket_path;
        _cleanup_close_ int fd =
                remote ? cli_tcp_connect(remote, timeout) : cli_unix_connect(ctx->socket_path, timeout, &peer);
        if (fd < 0) {
                report_connect_error(where, fd, timeout, peer);
                return CLI_EXIT_FAIL;
        }
        struct cli_http_request r = *req;
        if (remote) {
                r.host = remote->hostport;
                r.token = remote->token[0] ? remote->token : NULL;
        }
        int k = cli_http_exchange(fd, &r, deadline, ret);
        if (k < 0) {
                report_exchange_error(where, k, timeout);
                if (call->if_dropped && (k == -EPIPE || k == -ECONNRESET || k == -ETIMEDOUT))
                        fprintf(stderr, "%s\n", call->if_dropped);
                return CLI_EXIT_FAIL;
        }
        return CLI_EXIT_OK;
}

int cli_api_call(const struct cli_ctx *ctx, const struct cli_call *call, struct cli_http_response *ret) {
        gw_usec_t timeout = call->timeout > 0 ? call->timeout : CLI_API_TIMEOUT;
        _cleanup_free_ char *body = NULL;
        if (call->body) {
                body = json_dumps(call->body, JSON_COMPACT | JSON_ENCODE_ANY);
                if (!body) {
                        cli_error("out of memory encoding the request");
                        return CLI_EXIT_FAIL;
                }
        }
        struct cli_http_request req = {
                .method = call->method,
                .target = call->target,
                .content_type = body ? "application/json" : NULL,
                .body = body,
                .body_len = body ? strlen(body) : 0,
        };

        struct cli_http_response r;
        long long waited = 0, wait;
        for (;;) {
                r = (struct cli_http_response){ 0 };
                int k = exchange_once(ctx, call, &req, timeout, &r);
                if (k != CLI_EXIT_OK)
                        return k;
                if ((wait = rate_wait(&r, waited)) == 0)
                        break;
                tell_rate_wait(&r, wait);
                cli_http_response_done(&r);
                cli_sleep_usec(wait * GW_USEC_PER_SEC);
                waited += wait;
        }
        if ((r.status < 200 || r.status >= 300) && !(call->accept_status && r.status == call->accept_status)) {
                report_api_error(call, &r);
                cli_http_response_done(&r);
                return CLI_EXIT_FAIL;
        }
        *ret = r;
        return CLI_EXIT_OK;
}

int cli_api_decode(const struct cli_call *call, const struct cli_http_response *r, json_t **ret_json) {
        json_error_t err;
        json_t *j = call->long_reply ? cli_json_load_fast(r->body, r->body_len) : NULL;
        if (!j)
                j = json_loadb(r->body, r->body_len, 0, &err);
        if (!json_is_object(j)) {
                cli_error("gpuwardd sent a reply that is not a JSON object (%s)", j ? "wrong type" : err.text);
                json_decref(j);
                return CLI_EXIT_FAIL;
        }
        *ret_json = j;
        return CLI_EXIT_OK;
}

int cli_api_json_status(const struct cli_ctx *ctx, const struct cli_call *call, json_t **ret_json, int *ret_status) {
        struct cli_http_response r;
        int k = cli_api_call(ctx, call, &r);
        if (k != CLI_EXIT_OK)
                return k;
        k = cli_api_decode(call, &r, ret_json);
        if (k == CLI_EXIT_OK && ret_status)
                *ret_status = r.status;
        cli_http_response_done(&r);
        return k;
}

int cli_api_json(const struct cli_ctx *ctx, const struct cli_call *call, json_t **ret_json) {
        return cli_api_json_status(ctx, call, ret_json, NULL);
}

char *cli_url_escape(const char *s) {
        static const char hex[] = "0123456789ABCDEF";
        size_t n = strlen(s);
        char *out = malloc(n * 3 + 1);
        if (!out)
                return NULL;
        char *o = out;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("-._~,", *p)) {
                        *o++ = (char) *p;
                } else {
                        *o++ = '%';
                        *o++ = hex[*p >> 4];
                        *o++ = hex[*p & 15];
                }
        }
        *o = '\0';
        return out;
}

int cli_query_add(char **target, const char *key, const char *value) {
        _cleanup_free_ char *v = cli_url_escape(value);
        if (!v)
                return -ENOMEM;
        char *out = NULL;
        if (asprintf(&out, "%s%c%s=%s", *target, strchr(*target, '?') ? '&' : '?', key, v) < 0)
                return -ENOMEM;
        free(*target);
        *target = out;
        return 0;
}

int cli_job_fetch(const struct cli_ctx *ctx, long long id, json_t **ret_job) {
        char target[64], subject[48], ref[32];
        snprintf(target, sizeof target, "/api/v1/jobs/%s", cli_job_ref(id, ref, sizeof ref));
        snprintf(subject, sizeof subject, "job %s", ref);
        struct cli_call call = { .method = "GET", .target = target, .subject = subject };
        *ret_job = NULL;
        return cli_api_json(ctx, &call, ret_job);
}

json_t *cli_job_get(const struct cli_ctx *ctx, long long id) {
        json_t *job;
        return cli_job_fetch(ctx, id, &job) == CLI_EXIT_OK ? job : NULL;
}

int cli_resolve_task(const struct cli_ctx *ctx, long long *id) {
        if (*id >= 0)
                return 0;
        json_t *job = cli_job_get(ctx, *id);
        long long real;
        bool ok = job && cli_jint(job, "id", &real);
        json_decref(job);
        if (!ok)
                return CLI_EXIT_FAIL;
        *id = real;
        return 0;
}
