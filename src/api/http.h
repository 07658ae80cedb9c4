/* HTTP server glue over libmicrohttpd: one server per door (Unix socket, TCP), driven from
 * the daemon's own epoll loop (no MHD threads), caller identity from SO_PEERCRED. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GW_HTTP_MAX_BODY (1u << 20)
/* Connections one peer uid may hold open on the Unix socket (root and the daemon's own user
 * are not capped); more are answered 429 and closed. */
#define GW_HTTP_DEFAULT_MAX_PER_UID 64u

struct gw_http_server;
struct gw_http_conn; /* one request in flight */

struct gw_http_request {
        const char *method;
        const char *path; /* without the query string */
        const char *body; /* NUL-terminated, body_len bytes */
        size_t body_len;
        bool unix_door; /* came over the Unix socket */
        bool has_cred; /* uid/gid/pid from SO_PEERCRED */
        uid_t uid;
        gid_t gid;
        pid_t pid;
        bool resumed; /* called again after gw_http_conn_resume */
        struct gw_http_conn *conn;
};

struct gw_http_reply {
        int status;
        char *body; /* malloc'ed, taken over by the server */
        size_t body_len;
        const char *content_type; /* static; default application/json */
        char headers[8][2][256]; /* extra headers, name/value; empty name = unused */
        bool suspend; /* handler wants to answer later: see gw_http_conn_resume */
        /* A streamed reply (server-sent events) instead of body: stream_read is called whenever
         * the client can take more; it copies at most max bytes to buf and returns how many, 0
         * when it has nothing now (the connection then waits, suspended, until
         * gw_http_conn_resume), or -1 to end the reply and close the connection.  stream_done
         * is called exactly once when the reply is over, however it ends; the request's conn
         * is not to be used after it. */
        ssize_t (*stream_read)(void *cls, char *buf, size_t max);
        void (*stream_done)(void *cls);
        void *stream_cls;
        /* A regular file instead of body (a published model's weights): the server takes
         * file_fd over and sends file_size bytes of it from offset 0, a piece at a time as the
         * client takes them, and closes it. */
        bool has_file;
        int file_fd;
        uint64_t file_size;
};

/* Called once per complete request.  Fill rep (or set rep->suspend and keep req->conn). */
typedef void (*gw_http_handler)(void *userdata, const struct gw_http_request *req, struct gw_http_reply *rep);
/* Called when a suspended connection goes away without being resumed, so the owner drops it. */
typedef void (*gw_http_gone)(void *userdata, struct gw_http_conn *conn);

/* Starts a server on an already listening socket fd (taken over). */
int gw_http_start(int listen_fd, bool unix_door, gw_http_handler handler, gw_http_gone gone, void *userdata,
                  struct gw_http_server **ret);
struct gw_http_server *gw_http_stop(struct gw_http_server *srv);

/* The fd to watch for readability in the caller's epoll, and how long it may wait (ms, -1). */
int gw_http_fd(struct gw_http_server *srv);
int gw_http_timeout_ms(struct gw_http_server *srv);
/* Runs whatever is ready; never blocks. */
void gw_http_run(struct gw_http_server *srv);
/* Whether a run is due although the server's own fd did not fire: a connection was resumed,
 * or a connection timeout has passed. */
bool gw_http_due(struct gw_http_server *srv);

/* Query argument of the request, NULL if absent. */
const char *gw_http_query(const struct gw_http_request *req, const char *key);
/* A request header, NULL if absent. */
const char *gw_http_header(const struct gw_http_request *req, const char *key);

/* Re-invokes the handler for a suspended request (req->resumed = true), or, for a streamed
 * reply, asks stream_read again. */
void gw_http_conn_resume(struct gw_http_conn *conn);
/* Ends a connection from outside (a stream reader too slow to keep): its socket is shut down
 * and the server closes it at its next run. */
void gw_http_conn_abort(struct gw_http_conn *conn);
/* Caps the kernel send buffer of the connection's socket, so that a reader that stops reading
 * holds little kernel memory and is noticed soon. */
void gw_http_conn_set_sndbuf(struct gw_http_conn *conn, int bytes);
/* A request cookie's value, NULL if absent. */
const char *gw_http_cookie(const struct gw_http_request *req, const char *name);

/* Helpers to fill a reply. */
void gw_http_reply_text(struct gw_http_reply *rep, int status, const char *content_type, char *body, size_t len);
void gw_http_reply_header(struct gw_http_reply *rep, const char *name, const char *value);

/* Sets the per-uid cap of each door (0 = no cap): peers on the Unix socket, and TCP peers on
 * this host (api/peeruid.h); counts from the next connection. */
void gw_http_set_max_per_uid(unsigned n);

/* Sockets. */
int gw_http_listen_unix(const char *path, char *err, size_t errlen);
/* host:port; port 0 picks a free one; *ret_port gets the bound port. */
int gw_http_listen_tcp(const char *hostport, int *ret_port, char *err, size_t errlen);
