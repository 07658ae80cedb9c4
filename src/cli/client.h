/* A minimal HTTP/1.1 client over an AF_UNIX stream socket, or TCP to a daemon named by
 * GPUWARD_URL: one request per connection (Connection: close), the whole reply read into
 * memory under a cap, every wait bounded. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

#include "base/time.h"
#include "cli/http.h"

struct cli_http_request {
        const char *method; /* "GET", "POST", "DELETE" */
        const char *target; /* "/api/v1/jobs?state=RUNNING", already escaped */
        const char *content_type; /* NULL when there is no body */
        const char *body; /* borrowed; may be NULL */
        size_t body_len;
        const char *host; /* the Host header; NULL: localhost */
        const char *token; /* sent as "Authorization: Bearer TOKEN"; NULL: none */
};

struct cli_remote;

/* Connects to the daemon of r (GPUWARD_URL) within timeout, trying each address its host
 * resolves to.  Returns a non-blocking, close-on-exec descriptor the caller owns, or -errno:
 * -EACCES when r carries a token and an address is not loopback, unless r->insecure (a
 * token over plain http can be read by anyone on the path); -EHOSTUNREACH when the name
 * does not resolve; -ETIMEDOUT; -ECONNREFUSED. */
int cli_tcp_connect(const struct cli_remote *r, gw_usec_t timeout);

/* Connects to the socket at path within timeout.  Returns a non-blocking, close-on-exec
 * descriptor the caller owns, or -errno (-ENAMETOOLONG for paths that do not fit a
 * sockaddr_un, -ETIMEDOUT when the daemon does not accept in time, -EPERM when the process
 * serving it runs neither as root nor as the caller: its uid in *ret_peer_uid). */
int cli_unix_connect(const char *path, gw_usec_t timeout, uid_t *ret_peer_uid);

/* Sends req on fd and reads the reply until it is whole, by the monotonic deadline.
 * Returns 0 and fills *ret (caller releases it with cli_http_response_done), or -errno:
 * -ETIMEDOUT, -EBADMSG (not HTTP), -EFBIG (over the caps of http.h), -EPIPE/-ECONNRESET
 * (the peer went away). */
int cli_http_exchange(int fd, const struct cli_http_request *req, gw_usec_t deadline, struct cli_http_response *ret);
