/* HTTP over the daemon's Unix socket, or over TCP (see client.h). */
#include "cli/client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/time.h"
#include "cli/cli.h"
#include "cli/remote.h"

/* Raw bytes we accept: the body cap plus headers plus room for chunk framing. */
#define RAW_MAX ((size_t) CLI_HTTP_MAX_BODY_BYTES + CLI_HTTP_MAX_HEADER_BYTES + 1024u * 1024u)
#define READ_STEP (64u * 1024u)

/* Fills sa with path.  Paths past sun_path's 108 bytes (deep temporary directories) are
 * reached through the directory's descriptor: /proc/self/fd/N/NAME.  *ret_dirfd is that
 * descriptor (or -1), to be closed after connect. */
static int socket_address(const char *path, struct sockaddr_un *sa, int *ret_dirfd) {
        size_t n = strlen(path);
        *ret_dirfd = -1;
        if (n == 0)
                return -EINVAL;
        if (n < sizeof(sa->sun_path)) {
                memcpy(sa->sun_path, path, n + 1);
                return 0;
        }
        const char *slash = strrchr(path, '/');
        if (!slash || !slash[1])
                return -ENAMETOOLONG;
        _cleanup_free_ char *dir = slash == path ? strdup("/") : strndup(path, (size_t) (slash - path));
        if (!dir)
                return -ENOMEM;
        int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        int k = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", dfd, slash + 1);
        if (k < 0 || (size_t) k >= sizeof(sa->sun_path)) {
                (void) close(dfd);
                return -ENAMETOOLONG;
        }
        *ret_dirfd = dfd;
        return 0;
}

int cli_unix_connect(const char *path, gw_usec_t timeout, uid_t *ret_peer_uid) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int dirfd = -1;
        int r = socket_address(path, &sa, &dirfd);
        if (r < 0)
                return r;

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* A blocking AF_UNIX connect waits while the listen backlog is full; the send
         * timeout bounds that wait (the kernel applies it to connect). */
        struct timeval tv = {
                .tv_sec = (time_t) (timeout / GW_USEC_PER_SEC),
                .tv_usec = (suseconds_t) (timeout % GW_USEC_PER_SEC),
        };
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        while (connect(fd, (const struct sockaddr *) &sa, sizeof(sa)) < 0) {
                if (errno == EINTR)
                        continue;
                if (errno == EISCONN)
                        break;
                return errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT : -errno;
        }
        /* The request carries the caller's environment (a job's secrets, often): only a daemon
         * of root's or the caller's own may have it, not whoever made a socket at that path. */
        struct ucred peer;
        socklen_t len = sizeof peer;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0)
                return -errno;
        *ret_peer_uid = peer.uid;
        if (peer.uid != 0 && peer.uid != geteuid())
                return -EPERM;
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static int wait_fd(int fd, short events, gw_usec_t deadline);

static bool addr_is_loopback(const struct addrinfo *ai) {
        if (ai->ai_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *) ai->ai_addr)->sin_addr.s_addr) >> 24) == 127;
        if (ai->ai_family == AF_INET6)
                return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *) ai->ai_addr)->sin6_addr);
        return false;
}

/* One non-blocking connect to ai by deadline: the descriptor, or -errno. */
static int tcp_connect_one(const struct addrinfo *ai, gw_usec_t deadline) {
        _cleanup_close_ int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
                if (errno != EINPROGRESS && errno != EINTR)
                        return -errno;
                int r = wait_fd(fd, POLLOUT, deadline);
                if (r < 0)
                        return r;
                int err = 0;
                socklen_t len = sizeof err;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                        return -errno;
                if (err)
                        return -err;
        }
        int one = 1;
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return TAKE_FD(fd);
}

int cli_tcp_connect(const struct cli_remote *r, gw_usec_t timeout) {
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
        struct addrinfo *res = NULL;
        int k = getaddrinfo(r->host, r->port, &hints, &res);
        if (k != 0)
                return k == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
        gw_usec_t deadline = gw_clock_mono() + timeout;
        int err = -EHOSTUNREACH;
        for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
                /* Refused before a byte is sent: the token is in the request's first packet. */
                if (r->token[0] && !r->insecure && !addr_is_loopback(ai)) {
                        err = -EACCES;
                        break;
                }
                int fd = tcp_connect_one(ai, deadline);
                if (fd >= 0) {
                        freeaddrinfo(res);
                        return fd;
                }
                err = fd;
                if (err == -ETIMEDOUT)
                        break;
        }
        freeaddrinfo(res);
        return err;
}

/* Waits until fd is ready for events or the deadline passes. */
static int wait_fd(int fd, short events, gw_usec_t deadline) {
        for (;;) {
                gw_usec_t now = gw_clock_mono();
                if (now >= deadline)
                        return -ETIMEDOUT;
                gw_usec_t ms = (deadline - now + 999) / 1000;
                struct pollfd p = { .fd = fd, .events = events };
                int k = poll(&p, 1, ms > INT_MAX ? INT_MAX : (int) ms);
                if (k > 0)
                        return 0; /* errors and hang-ups surface in the next send/recv */
                if (k < 0 && errno != EINTR)
                        return -errno;
        }
}

static int send_all(int fd, const char *p, size_t n, gw_usec_t deadline) {
        while (n > 0) {
                /* MSG_NOSIGNAL: a daemon that hangs up must not kill us with SIGPIPE. */
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN && errno != EWOULDBLOCK)
                                return -errno;
                        int r = wait_fd(fd, POLLOUT, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

static int send_request(int fd, const struct cli_http_request *req, gw_usec_t deadline) {
        _cleanup_free_ char *head = NULL, *body_head = NULL;
        int n;
        if (req->body && asprintf(&body_head, "Content-Type: %s\r\nContent-Length: %zu\r\n",
                                  req->content_type ? req->content_type : "application/json", req->body_len) < 0) {
                body_head = NULL;
                return -ENOMEM;
        }
        n = asprintf(&head,
                     "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: gpuward/%s\r\n"
                     "Accept: application/json\r\nConnection: close\r\n%s%s%s%s\r\n",
                     req->method, req->target, req->host ? req->host : "localhost", GW_VERSION,
                     req->token ? "Authorization: Bearer " : "", req->token ? req->token : "", req->token ? "\r\n" : "",
                     body_head ? body_head : "");
        if (n < 0) {
                head = NULL;
                return -ENOMEM;
        }
        int r = send_all(fd, head, (size_t) n, deadline);
        explicit_bzero(head, (size_t) n); /* it holds the token */
        if (r >= 0 && req->body && req->body_len > 0)
                r = send_all(fd, req->body, req->body_len, deadline);
        return r;
}

/* Room to read into, a byte kept for the NUL that ends a body read in place. */
static int grow(char **buf, size_t *cap, size_t len) {
        if (*cap - len > READ_STEP / 4)
                return 0;
        if (*cap >= RAW_MAX)
                return -EFBIG;
        size_t ncap = *cap ? *cap * 2 : READ_STEP;
        if (ncap > RAW_MAX)
                ncap = RAW_MAX;
        char *p = realloc(*buf, ncap);
        if (!p)
                return -ENOMEM;
        *buf = p;
        *cap = ncap;
        return 0;
}

/* Once its head tells the reply's size (Content-Length), the buffer is made that size at once
 * and the reply parsed once, when it is all in: a long list (megabytes) was read into a buffer
 * that doubled, copied out of it, and its head parsed again after every read. */
static int read_reply(int fd, gw_usec_t deadline, struct cli_http_response *ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0, size = 0;
        bool sized = false; /* the head is in: size is the reply's, 0 when the head does not say */
        for (;;) {
                int r = size ? 0 : grow(&buf, &cap, len);
                if (r < 0)
                        return r;
                bool eof = false;
                ssize_t k = recv(fd, buf + len, cap - len - 1, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK) {
                                r = wait_fd(fd, POLLIN, deadline);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        if (errno != ECONNRESET || len == 0)
                                return -errno;
                        eof = true; /* what arrived before the reset may be a whole reply */
                } else if (k == 0) {
                        if (len == 0)
                                return -ECONNRESET; /* hung up without a word */
                        eof = true;
                } else {
                        len += (size_t) k;
                }
                if (!sized && !eof) {
                        r = cli_http_reply_size(buf, len, &size);
                        if (r < 0)
                                return r;
                        sized = r > 0;
                        if (size >= cap) {
                                char *p = realloc(buf, size + 1);
                                if (!p)
                                        return -ENOMEM;
                                buf = p;
                                cap = size + 1;
                        }
                }
                if (size && len < size && !eof)
                        continue;
                r = cli_http_parse_take(buf, len, eof, ret);
                if (r > 0) {
                        buf = NULL; /* the response's now */
                        return 0;
                }
                if (r < 0)
                        return r;
                if (eof) /* unreachable: parse answers every eof */
                        return -EBADMSG;
        }
}

int cli_http_exchange(int fd, const struct cli_http_request *req, gw_usec_t deadline, struct cli_http_response *ret) {
        int r = send_request(fd, req, deadline);
        /* A daemon that refuses a request (413) may answer and close before reading it
         * all; its answer is still the best error message we can show. */
        if (r < 0 && r != -EPIPE && r != -ECONNRESET)
                return r;
        int k = read_reply(fd, deadline, ret);
        if (k < 0 && r < 0)
                return r;
        return k;
}
