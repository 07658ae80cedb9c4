#include "api/http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/peeruid.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "base/lograte.h"
#include "base/time.h"

/* Connections one uid may hold on each door (gw_http_set_max_per_uid); 0 = no cap. */
static unsigned max_per_uid = GW_HTTP_DEFAULT_MAX_PER_UID;

struct uid_count {
        uid_t uid;
        unsigned n;
        struct gw_lograte refusals; /* connections refused over the cap, for the log */
};

/* A uid over the cap may open thousands of connections a second, each refused: the first
 * refusal is logged, the rest counted and summed up at most once a period. */
#define REFUSAL_LOG_PERIOD (60 * GW_USEC_PER_SEC)

struct gw_http_server {
        struct MHD_Daemon *mhd;
        bool unix_door;
        gw_http_handler handler;
        gw_http_gone gone;
        void *userdata;
        int listen_fd;
        bool wake; /* a connection was resumed: run again without waiting */
        struct gw_http_conn *conns; /* every connection with a request, for gw_http_stop */
        struct uid_count *uids; /* open connections per peer uid, where it is known */
        size_t n_uids, cap_uids;
};

/* A connection's socket context: the counted uid + 1, or REFUSED (answered 429, closing). */
static char refused_marker;
#define REFUSED ((void *) &refused_marker)

struct stream;

struct gw_http_conn {
        struct gw_http_server *srv;
        struct MHD_Connection *mhd_conn;
        char *body;
        size_t len, cap;
        bool began; /* on_access has seen the request's headers */
        bool suspended;
        bool resumed;
        bool has_cred;
        struct ucred cred;
        struct stream *stream; /* a streamed reply in progress */
        struct gw_http_conn *prev, *next;
};

/* A streamed reply: lives as long as its MHD response; detached from the connection when
 * the connection goes first. */
struct stream {
        struct gw_http_conn *c;
        ssize_t (*read)(void *cls, char *buf, size_t max);
        void (*done)(void *cls);
        void *cls;
        bool done_called;
        bool aborted;
};

static void stream_finish(struct stream *s) {
        if (s->c)
                s->c->stream = NULL;
        s->c = NULL;
        if (!s->done_called) {
                s->done_called = true;
                s->done(s->cls);
        }
}

static ssize_t stream_cb(void *cls, uint64_t pos, char *buf, size_t max) {
        struct stream *s = cls;
        if (!s->c || s->aborted)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        ssize_t n = s->read(s->cls, buf, max);
        if (n < 0)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        if (n == 0) {
                /* Nothing to send: wait, suspended, for gw_http_conn_resume (no busy loop). */
                s->c->suspended = true;
                MHD_suspend_connection(s->c->mhd_conn);
        }
        return n;
}

static void stream_free_cb(void *cls) {
        struct stream *s = cls;
        stream_finish(s);
        free(s);
}

static void conn_read_cred(struct gw_http_conn *c) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c->mhd_conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci)
                return;
        socklen_t l = sizeof c->cred;
        if (getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &c->cred, &l) == 0)
                c->has_cred = true;
}

static struct MHD_Response *stream_response(struct gw_http_conn *c, struct gw_http_reply *rep) {
        struct stream *s = gw_xcalloc(1, sizeof *s);
        *s = (struct stream){ .c = c, .read = rep->stream_read, .done = rep->stream_done, .cls = rep->stream_cls };
        struct MHD_Response *r =
                MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_cb, s, stream_free_cb);
        if (!r) {
                stream_finish(s);
                free(s);
                return NULL;
        }
        c->stream = s;
        return r;
}

static enum MHD_Result queue_reply(struct MHD_Connection *conn, struct gw_http_reply *rep, struct gw_http_conn *c) {
        struct MHD_Response *r;
        if (rep->has_file) {
                free(rep->body);
                rep->body = NULL;
                rep->has_file = false;
                r = MHD_create_response_from_fd64(rep->file_size, rep->file_fd); /* closes it */
                if (!r) {
                        (void) close(rep->file_fd);
                        return MHD_NO;
                }
        } else if (rep->stream_read && c) {
                free(rep->body);
                rep->body = NULL;
                r = stream_response(c, rep);
                if (!r)
                        return MHD_NO;
        } else {
                r = MHD_create_response_from_buffer(rep->body_len, rep->body ? rep->body : (char *) "",
                                                    rep->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
                if (!r) {
                        free(rep->body);
                        return MHD_NO;
                }
        }
        rep->body = NULL;
        (void) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                       rep->content_type ? rep->content_type : "application/json");
        (void) MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
        for (size_t i = 0; i < ELEMENTSOF(rep->headers); i++)
                if (rep->headers[i][0][0])
                        (void) MHD_add_response_header(r, rep->headers[i][0], rep->headers[i][1]);
        enum MHD_Result ret = MHD_queue_response(conn, (unsigned) rep->status, r);
        MHD_destroy_response(r);
        return ret;
}

static enum MHD_Result reply_error(struct MHD_Connection *conn, int status, const char *msg) {
        struct gw_http_reply rep = { .status = status };
        char buf[256];
        int n = snprintf(buf, sizeof buf, "{\"error\": \"%s\", \"field\": null}", msg);
        rep.body = gw_xstrdup(buf);
        rep.body_len = (size_t) n;
        return queue_reply(conn, &rep, NULL);
}

static enum MHD_Result dispatch(struct gw_http_conn *c, const char *url, const char *method) {
        struct gw_http_request req = {
                .method = method,
                .path = url,
                .body = c->body ? c->body : "",
                .body_len = c->len,
                .unix_door = c->srv->unix_door,
                .has_cred = c->has_cred,
                .uid = c->cred.uid,
                .gid = c->cred.gid,
                .pid = c->cred.pid,
                .resumed = c->resumed,
                .conn = c,
        };
        struct gw_http_reply rep = { .status = 500 };
        c->srv->handler(c->srv->userdata, &req, &rep);
        if (rep.suspend) {
                free(rep.body);
                c->suspended = true;
                MHD_suspend_connection(c->mhd_conn);
                return MHD_YES;
        }
        return queue_reply(c->mhd_conn, &rep, c);
}

/* Writes a whole small response straight to the socket, for the two cases where
 * libmicrohttpd 0.9.75 cannot queue one: in the middle of an upload (MHD_queue_response
 * refuses while upload data is being delivered, even on a suspended connection) and at
 * accept time.  A fresh or idle socket's send buffer takes ~300 bytes at once; if not, the
 * client just sees the connection close. */
static void send_raw_reply(int fd, const char *status, const char *msg) {
        char body[320], buf[640];
        int bl = snprintf(body, sizeof body, "{\"error\": \"%s\", \"field\": null}", msg);
        if (bl < 0 || (size_t) bl >= sizeof body)
                return;
        int n = snprintf(buf, sizeof buf,
                         "HTTP/1.1 %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
                         "X-Content-Type-Options: nosniff\r\nContent-Length: %d\r\n\r\n%s",
                         status, bl, body);
        if (n > 0 && (size_t) n < sizeof buf)
                (void) !send(fd, buf, (size_t) n, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void) shutdown(fd, SHUT_WR);
}

static int conn_fd_of(struct MHD_Connection *conn) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        return ci ? ci->connect_fd : -1;
}

static bool conn_refused(struct MHD_Connection *conn) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return ci && ci->socket_context == REFUSED;
}

/* A request's context, made when its request line is read (on_request_line): from then on
 * on_mhd_log can find it. */
static struct gw_http_conn *conn_new(struct gw_http_server *srv, struct MHD_Connection *conn) {
        struct gw_http_conn *c = gw_xcalloc(1, sizeof *c);
        c->srv = srv;
        c->mhd_conn = conn;
        c->next = srv->conns;
        if (srv->conns)
                srv->conns->prev = c;
        srv->conns = c;
        return c;
}

static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *conn) {
        (void) uri;
        return conn_new(cls, conn);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size,
                                 void **con_cls) {
        struct gw_http_server *srv = cls;
        struct gw_http_conn *c = *con_cls;
        if (!c) /* on_request_line made it; defensive */
                c = *con_cls = conn_new(srv, conn);
        if (!c->began) {
                c->began = true;
                if (srv->unix_door && conn_refused(conn))
                        return MHD_NO; /* over its uid's cap: already answered 429 */
                if (srv->unix_door)
                        conn_read_cred(c);
                const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (cl && strtoull(cl, NULL, 10) > GW_HTTP_MAX_BODY)
                        return reply_error(conn, 413, "request body larger than 1 MiB");
                return MHD_YES;
        }
        if (*upload_data_size > 0) {
                if (c->len + *upload_data_size > GW_HTTP_MAX_BODY) {
                        /* A chunked body has no size up front: refuse as soon as it passes the
                         * limit, and close rather than read the rest. */
                        int fd = conn_fd_of(conn);
                        if (fd >= 0)
                                send_raw_reply(fd, "413 Content Too Large", "request body larger than 1 MiB");
                        *upload_data_size = 0;
                        return MHD_NO;
                }
                if (c->len + *upload_data_size + 1 > c->cap) {
                        c->cap = (c->len + *upload_data_size + 1) * 2;
                        if (c->cap > GW_HTTP_MAX_BODY + 1)
                                c->cap = GW_HTTP_MAX_BODY + 1;
                        c->body = gw_xrealloc(c->body, c->cap);
                }
                memcpy(c->body + c->len, upload_data, *upload_data_size);
                c->len += *upload_data_size;
                c->body[c->len] = '\0';
                *upload_data_size = 0;
                return MHD_YES;
        }
        return dispatch(c, url, method);
}

/* --- per-uid connection cap (Unix door; TCP from this host) ------------------------------ */

void gw_http_set_max_per_uid(unsigned n) { max_per_uid = n; }

static struct uid_count *uid_slot(struct gw_http_server *srv, uid_t uid) {
        for (size_t i = 0; i < srv->n_uids; i++)
                if (srv->uids[i].uid == uid)
                        return &srv->uids[i];
        if (srv->n_uids == srv->cap_uids) {
                srv->cap_uids = srv->cap_uids ? 2 * srv->cap_uids : 16;
                srv->uids = gw_xrealloc(srv->uids, srv->cap_uids * sizeof *srv->uids);
        }
        srv->uids[srv->n_uids] = (struct uid_count){ .uid = uid };
        return &srv->uids[srv->n_uids++];
}

/* Root and the daemon's own user are not capped: they administer it. */
static bool uid_exempt(uid_t uid) { return uid == 0 || uid == geteuid(); }

/* The uid behind fd: SO_PEERCRED on the Unix door, the kernel's socket table for a loopback
 * TCP peer (api/peeruid.h).  False when it cannot be known (a remote peer, a kernel without
 * inet_diag): such a connection is counted only by libmicrohttpd's per-address cap. */
static bool conn_uid(const struct gw_http_server *srv, int fd, uid_t *ret_uid) {
        if (!srv->unix_door)
                return gw_loopback_peer_uid(fd, ret_uid) == 0;
        struct ucred cred;
        socklen_t l = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &l) < 0)
                return false;
        *ret_uid = cred.uid;
        return true;
}

static const char *door_name(const struct gw_http_server *srv) { return srv->unix_door ? "Unix socket" : "TCP port"; }

static void log_refusal(struct gw_http_server *srv, struct uid_count *u, const char *msg) {
        uint64_t quiet;
        if (!gw_lograte_event(&u->refusals, REFUSAL_LOG_PERIOD, gw_now_mono(), &quiet))
                return;
        char before[96] = "";
        if (quiet)
                snprintf(before, sizeof before, " (%llu more refused before this one)", (unsigned long long) quiet);
        log_warn("refused a connection on the %s: %s%s; more refused connections of uid %u are counted and logged "
                 "at most once a minute",
                 door_name(srv), msg, before, (unsigned) u->uid);
}

/* The counted refusals' summaries that are due (all of them, whatever the time, when the
 * server stops). */
static void log_refusal_summaries(struct gw_http_server *srv, bool all) {
        gw_usec_t now = gw_now_mono();
        for (size_t i = 0; i < srv->n_uids; i++) {
                struct uid_count *u = &srv->uids[i];
                uint64_t quiet;
                gw_usec_t span;
                if (all ? !gw_lograte_take(&u->refusals, now, &quiet, &span)
                        : !gw_lograte_flush(&u->refusals, REFUSAL_LOG_PERIOD, now, &quiet, &span))
                        continue;
                log_warn("uid %u: %llu more connection%s refused on the %s over the cap of %u in the last %lld s",
                         (unsigned) u->uid, (unsigned long long) quiet, quiet == 1 ? "" : "s", door_name(srv),
                         max_per_uid, (long long) ((span + GW_USEC_PER_SEC - 1) / GW_USEC_PER_SEC));
        }
}

static gw_usec_t refusal_summary_due(const struct gw_http_server *srv) {
        gw_usec_t due = GW_USEC_INFINITY;
        for (size_t i = 0; i < srv->n_uids; i++) {
                gw_usec_t t = gw_lograte_due(&srv->uids[i].refusals, REFUSAL_LOG_PERIOD);
                if (t < due)
                        due = t;
        }
        return due;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
        struct gw_http_server *srv = cls;
        if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
                if (*socket_context && *socket_context != REFUSED) {
                        struct uid_count *u = uid_slot(srv, (uid_t) ((uintptr_t) *socket_context - 1));
                        if (u->n > 0)
                                u->n--;
                }
                *socket_context = NULL;
                return;
        }
        int fd = conn_fd_of(conn);
        uid_t uid;
        if (fd < 0 || !max_per_uid || !conn_uid(srv, fd, &uid) || uid_exempt(uid))
                return;
        struct uid_count *u = uid_slot(srv, uid);
        if (u->n >= max_per_uid) {
                char msg[160];
                snprintf(msg, sizeof msg, "uid %u already holds %u connections to gpuwardd (max-connections-per-user)",
                         (unsigned) uid, u->n);
                log_refusal(srv, u, msg);
                send_raw_reply(fd, "429 Too Many Requests", msg);
                /* It is closed at its first request (on_access), or idle after a second. */
                (void) MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned) 1);
                *socket_context = REFUSED;
                return;
        }
        u->n++;
        *socket_context = (void *) ((uintptr_t) uid + 1);
}

/* Decodes %XX in place like libmicrohttpd does, except %00: a NUL would cut the path the
 * route table sees short of the path that was sent. */
static size_t unescape_no_nul(void *cls, struct MHD_Connection *c, char *s) {
        char *w = s;
        for (char *r = s; *r;) {
                if (r[0] == '%' && isxdigit((unsigned char) r[1]) && isxdigit((unsigned char) r[2])) {
                        char hex[3] = { r[1], r[2], '\0' };
                        long v = strtol(hex, NULL, 16);
                        if (v != 0) {
                                *w++ = (char) v;
                                r += 3;
                                continue;
                        }
                }
                *w++ = *r++;
        }
        *w = '\0';
        return (size_t) (w - s);
}

/* The request whose headers libmicrohttpd is judging now: headers read, not yet seen by
 * on_access, no reply queued.  It reads one connection's headers and calls on_access on them
 * with nothing in between, so there is one such request at most; NULL when none or unclear. */
static struct gw_http_conn *conn_judged_now(struct gw_http_server *srv) {
        struct gw_http_conn *found = NULL;
        for (struct gw_http_conn *c = srv->conns; c; c = c->next) {
                if (c->began || !MHD_get_connection_info(c->mhd_conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE) ||
                    MHD_get_connection_info(c->mhd_conn, MHD_CONNECTION_INFO_HTTP_STATUS))
                        continue;
                if (found)
                        return NULL;
                found = c;
        }
        return found;
}

/* libmicrohttpd 0.9.75 (Debian 12's) answers a request whose Content-Length it cannot read
 * (not a number, or past 64 bits) with an error of its own, then goes on as if the headers
 * were fine and queues that reply's status line and headers a second time: the client reads
 * two replies on one request.  It logs the fault before it queues anything, so the reply is
 * sent from here, once, and the socket shut for writing: what libmicrohttpd sends after it
 * fails (EPIPE) and it closes the connection.  Its other messages are not logged: they are
 * about single requests or connections that a client controls, and they are answered. */
__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        struct gw_http_server *srv = cls;
        if (!srv->mhd) { /* still starting: why it cannot */
                char msg[512];
                (void) vsnprintf(msg, sizeof msg, fmt, ap);
                msg[strcspn(msg, "\n")] = '\0';
                log_warn("libmicrohttpd: %s", msg);
                return;
        }
        bool too_large = strstr(fmt, "Too large value of 'Content-Length' header");
        if (!too_large && !strstr(fmt, "Failed to parse `Content-Length' header"))
                return;
        struct gw_http_conn *c = conn_judged_now(srv);
        int fd = c ? conn_fd_of(c->mhd_conn) : -1;
        if (fd < 0)
                return;
        if (too_large)
                send_raw_reply(fd, "413 Content Too Large", "request body larger than 1 MiB");
        else
                send_raw_reply(fd, "400 Bad Request", "Content-Length: not a number of bytes");
        c->began = true; /* answered */
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe) {
        struct gw_http_server *srv = cls;
        struct gw_http_conn *c = *con_cls;
        if (!c)
                return;
        if (c->suspended && srv->gone && !c->stream)
                srv->gone(srv->userdata, c);
        if (c->stream)
                stream_finish(c->stream);
        if (c->prev)
                c->prev->next = c->next;
        else
                srv->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        free(c->body);
        free(c);
        *con_cls = NULL;
}

int gw_http_start(int listen_fd, bool unix_door, gw_http_handler handler, gw_http_gone gone, void *userdata,
                  struct gw_http_server **ret) {
        struct gw_http_server *srv = gw_xcalloc(1, sizeof *srv);
        srv->unix_door = unix_door;
        srv->handler = handler;
        srv->gone = gone;
        srv->userdata = userdata;
        srv->listen_fd = listen_fd;
        /* A connection's memory pool of 32 KiB or less is malloc'ed; above that libmicrohttpd
         * maps and unmaps it for each connection, and the unmap's TLB flush and the faults that
         * follow were a tenth of each `gpuward submit` (one connection each) on a small VM.
         * Bodies do not live there (on_access copies them out), only headers and buffers. */
        srv->mhd = MHD_start_daemon(
                MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_access, srv,
                MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv, MHD_OPTION_URI_LOG_CALLBACK, on_request_line, srv,
                MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) 30, MHD_OPTION_CONNECTION_LIMIT, (unsigned) 4096,
                MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned) (unix_door ? 0 : 512),
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) 32 * 1024, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned) 1024,
                MHD_OPTION_UNESCAPE_CALLBACK, unescape_no_nul, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
                MHD_OPTION_END);
        if (!srv->mhd) {
                free(srv);
                return -EIO;
        }
        *ret = srv;
        return 0;
}

struct gw_http_server *gw_http_stop(struct gw_http_server *srv) {
        if (!srv)
                return NULL;
        /* libmicrohttpd aborts the process when stopped with a connection still suspended (a
         * cancel ?wait=1 in flight, an idle event stream): resume them all, so that it closes
         * them (the gone callback still runs for the waiting ones). */
        for (struct gw_http_conn *c = srv->conns; c; c = c->next)
                if (c->suspended) {
                        if (c->stream)
                                c->stream->aborted = true;
                        MHD_resume_connection(c->mhd_conn);
                }
        MHD_stop_daemon(srv->mhd);
        (void) close(srv->listen_fd);
        log_refusal_summaries(srv, true);
        free(srv->uids);
        free(srv);
        return NULL;
}

int gw_http_fd(struct gw_http_server *srv) {
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_EPOLL_FD);
        return di ? di->epoll_fd : -1;
}

/* Milliseconds until the next refusal summary is due: 0 when it is, -1 when none waits. */
static int summary_timeout_ms(const struct gw_http_server *srv) {
        gw_usec_t due = refusal_summary_due(srv);
        if (due == GW_USEC_INFINITY)
                return -1;
        gw_usec_t now = gw_now_mono();
        return due <= now ? 0 : (int) ((due - now + GW_USEC_PER_MSEC - 1) / GW_USEC_PER_MSEC);
}

int gw_http_timeout_ms(struct gw_http_server *srv) {
        MHD_UNSIGNED_LONG_LONG t;
        if (srv->wake)
                return 0;
        int ms = MHD_get_timeout(srv->mhd, &t) == MHD_YES ? (t > 60000 ? 60000 : (int) t) : -1;
        int summary = summary_timeout_ms(srv);
        if (summary >= 0 && (ms < 0 || summary < ms))
                ms = summary;
        return ms;
}

bool gw_http_due(struct gw_http_server *srv) {
        MHD_UNSIGNED_LONG_LONG t;
        return srv->wake || (MHD_get_timeout(srv->mhd, &t) == MHD_YES && t == 0) || summary_timeout_ms(srv) == 0;
}

void gw_http_run(struct gw_http_server *srv) {
        srv->wake = false;
        (void) MHD_run(srv->mhd);
        log_refusal_summaries(srv, false);
}

const char *gw_http_query(const struct gw_http_request *req, const char *key) {
        return MHD_lookup_connection_value(req->conn->mhd_conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *gw_http_header(const struct gw_http_request *req, const char *key) {
        return MHD_lookup_connection_value(req->conn->mhd_conn, MHD_HEADER_KIND, key);
}

void gw_http_conn_resume(struct gw_http_conn *conn) {
        if (!conn->suspended)
                return;
        conn->suspended = false;
        conn->resumed = !conn->stream;
        conn->srv->wake = true;
        MHD_resume_connection(conn->mhd_conn);
}

static int conn_fd(struct gw_http_conn *conn) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn->mhd_conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        return ci ? ci->connect_fd : -1;
}

void gw_http_conn_abort(struct gw_http_conn *conn) {
        if (conn->stream)
                conn->stream->aborted = true;
        int fd = conn_fd(conn);
        if (fd >= 0)
                (void) shutdown(fd, SHUT_RDWR);
        gw_http_conn_resume(conn);
}

void gw_http_conn_set_sndbuf(struct gw_http_conn *conn, int bytes) {
        int fd = conn_fd(conn);
        if (fd >= 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
}

const char *gw_http_cookie(const struct gw_http_request *req, const char *name) {
        return MHD_lookup_connection_value(req->conn->mhd_conn, MHD_COOKIE_KIND, name);
}

void gw_http_reply_text(struct gw_http_reply *rep, int status, const char *content_type, char *body, size_t len) {
        free(rep->body);
        rep->status = status;
        rep->content_type = content_type;
        rep->body = body;
        rep->body_len = len;
}

void gw_http_reply_header(struct gw_http_reply *rep, const char *name, const char *value) {
        for (size_t i = 0; i < ELEMENTSOF(rep->headers); i++)
                if (!rep->headers[i][0][0]) {
                        snprintf(rep->headers[i][0], sizeof rep->headers[i][0], "%s", name);
                        snprintf(rep->headers[i][1], sizeof rep->headers[i][1], "%s", value);
                        return;
                }
}

int gw_http_listen_unix(const char *path, char *err, size_t errlen) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof sa.sun_path) {
                snprintf(err, errlen, "socket path too long: %s", path);
                return -ENAMETOOLONG;
        }
        memcpy(sa.sun_path, path, strlen(path) + 1);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* A stale socket from a crashed daemon is replaced; a live one is refused (a full
         * backlog, EAGAIN, is a live one too). */
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0 || errno == EAGAIN) {
                snprintf(err, errlen, "another gpuwardd is already listening on %s", path);
                return -EADDRINUSE;
        }
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || chmod(path, 0666) < 0 || listen(fd, 1024) < 0) {
                int e = errno;
                snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(e));
                return -e;
        }
        return TAKE_FD(fd);
}

int gw_http_listen_tcp(const char *hostport, int *ret_port, char *err, size_t errlen) {
        char host[256];
        const char *colon = strrchr(hostport, ':');
        if (!colon || colon == hostport || (size_t) (colon - hostport) >= sizeof host) {
                snprintf(err, errlen, "listen: '%s' is not HOST:PORT", hostport);
                return -EINVAL;
        }
        memcpy(host, hostport, (size_t) (colon - hostport));
        host[colon - hostport] = '\0';
        /* getaddrinfo takes any number and keeps its low 16 bits: 70000 would bind 4464. */
        const char *port = colon + 1;
        size_t digits = strspn(port, "0123456789");
        if (!digits || port[digits] || digits > 5 || strtol(port, NULL, 10) > 65535) {
                snprintf(err, errlen, "listen: port '%s' is not a number from 0 to 65535 (0: any free port)", port);
                return -EINVAL;
        }
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST },
                        *ai = NULL;
        if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai) {
                snprintf(err, errlen, "listen: '%s' is not a numeric address and port", hostport);
                return -EINVAL;
        }
        _cleanup_close_ int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int one = 1, r = 0;
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
            bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1024) < 0) {
                r = -errno;
                snprintf(err, errlen, "cannot listen on %s: %s", hostport, strerror(errno));
        }
        freeaddrinfo(ai);
        if (r < 0)
                return r;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockname(fd, (struct sockaddr *) &ss, &sl) < 0)
                return -errno;
        *ret_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *) &ss)->sin6_port
                                                   : ((struct sockaddr_in *) &ss)->sin_port);
        return TAKE_FD(fd);
}
