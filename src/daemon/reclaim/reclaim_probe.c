/* The optional health probe of idle reclamation (submit --health-url): an HTTP GET to the
 * job's own server on loopback.
 *
 * Trade-off: the daemon has one thread, and a probe must never stall it.  Instead of a
 * blocking request with a short timeout, the probe is a small state machine advanced once per
 * GPU sample with zero-timeout calls: connect (non-blocking) -> send -> read the status line.
 * A reply is therefore seen one sample late, and the decision uses the last finished probe.
 * That costs nothing: the probe is evidence only (it never changes the action, see
 * core/reclaim.h).  A probe runs only while the job is otherwise idle, at most every
 * PROBE_EVERY, and one that has no status line after PROBE_TIMEOUT fails as "timeout" (seen at
 * the first sample after that). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/parse.h"
#include "daemon/reclaim/reclaim_watch.h"

#define PROBE_TIMEOUT (2 * GW_USEC_PER_SEC)
#define PROBE_EVERY (5 * GW_USEC_PER_SEC)

void gw_probe_init(struct gw_probe *p) { *p = (struct gw_probe){ .fd = -1, .result = GW_PROBE_NONE }; }

void gw_probe_close(struct gw_probe *p) {
        if (p->fd >= 0)
                (void) close(p->fd);
        p->fd = -1;
}

static void finish(struct gw_probe *p, enum gw_probe_result r, const char *detail) {
        gw_probe_close(p);
        p->result = r;
        snprintf(p->detail, sizeof p->detail, "%s", detail);
}

/* The address and request path of a loopback URL.  The codec admitted only
 * http://127.0.0.1:PORT, http://localhost:PORT and http://[::1]:PORT; "localhost" is not
 * resolved (no resolver call in the loop).  The path must not hold blanks or control
 * characters: it goes into a request line as it is.  0 or -EINVAL. */
static int probe_target(const char *url, struct sockaddr_storage *sa, socklen_t *sa_len, char *path, size_t n) {
        static const char *const v4[] = { "http://127.0.0.1:", "http://localhost:" };
        const char *rest = NULL;
        bool six = false;
        for (size_t i = 0; i < 2; i++)
                if (!strncmp(url, v4[i], strlen(v4[i])))
                        rest = url + strlen(v4[i]);
        if (!rest && !strncmp(url, "http://[::1]:", 13)) {
                rest = url + 13;
                six = true;
        }
        if (!rest)
                return -EINVAL;
        char port_s[8];
        size_t pl = strspn(rest, "0123456789");
        long long port;
        if (pl == 0 || pl >= sizeof port_s)
                return -EINVAL;
        snprintf(port_s, sizeof port_s, "%.*s", (int) pl, rest);
        if (gw_parse_int(port_s, 1, 65535, &port) < 0)
                return -EINVAL;
        rest += pl;
        if (*rest && *rest != '/')
                return -EINVAL;
        for (const char *c = rest; *c; c++)
                if ((unsigned char) *c <= 0x20 || *c == 0x7f)
                        return -EINVAL;
        snprintf(path, n, "%s", *rest ? rest : "/");
        memset(sa, 0, sizeof *sa);
        if (six) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) sa;
                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons((uint16_t) port);
                s6->sin6_addr = in6addr_loopback;
                *sa_len = sizeof *s6;
        } else {
                struct sockaddr_in *s4 = (struct sockaddr_in *) sa;
                s4->sin_family = AF_INET;
                s4->sin_port = htons((uint16_t) port);
                s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                *sa_len = sizeof *s4;
        }
        return 0;
}

/* "HTTP/1.1 200 OK": 2xx passes, anything else fails. */
static void judge(struct gw_probe *p) {
        unsigned status;
        char detail[32];
        p->buf[p->len] = '\0';
        if (sscanf(p->buf, "HTTP/%*u.%*u %3u", &status) != 1)
                return finish(p, GW_PROBE_FAIL, "not an HTTP reply");
        snprintf(detail, sizeof detail, "HTTP %u", status);
        finish(p, status >= 200 && status < 300 ? GW_PROBE_PASS : GW_PROBE_FAIL, detail);
}

static void advance(struct gw_probe *p, const char *url, gw_usec_t now) {
        if (!p->sent) {
                struct pollfd pfd = { .fd = p->fd, .events = POLLOUT };
                if (poll(&pfd, 1, 0) <= 0)
                        goto check_timeout;
                int err = 0;
                socklen_t el = sizeof err;
                if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
                        err = errno;
                if (err)
                        return finish(p, GW_PROBE_FAIL, err == ECONNREFUSED ? "connection refused" : strerror(err));
                struct sockaddr_storage sa;
                socklen_t sl;
                char path[512], req[700];
                if (probe_target(url, &sa, &sl, path, sizeof path) < 0)
                        return finish(p, GW_PROBE_FAIL, "unusable URL");
                int n = snprintf(req, sizeof req,
                                 "GET %s HTTP/1.0\r\nHost: localhost\r\nUser-Agent: gpuward\r\n"
                                 "Connection: close\r\n\r\n",
                                 path);
                /* A few hundred bytes fit any fresh socket's buffer: one send or a failure. */
                if (n < 0 || (size_t) n >= sizeof req || send(p->fd, req, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
                        return finish(p, GW_PROBE_FAIL, "cannot send the request");
                p->sent = true;
        }
        for (;;) {
                char scratch[512];
                bool room = p->len + 1 < sizeof p->buf;
                ssize_t r = recv(p->fd, room ? p->buf + p->len : scratch,
                                 room ? sizeof p->buf - 1 - p->len : sizeof scratch, MSG_DONTWAIT);
                if (r > 0) {
                        if (room)
                                p->len += (size_t) r;
                        if (memchr(p->buf, '\n', p->len) || !room)
                                return judge(p); /* the status line is all we need */
                        continue;
                }
                if (r == 0)
                        return p->len ? judge(p) : finish(p, GW_PROBE_FAIL, "connection closed without a reply");
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                        return finish(p, GW_PROBE_FAIL, strerror(errno));
                break;
        }
check_timeout:
        if (now - p->started >= PROBE_TIMEOUT)
                finish(p, GW_PROBE_FAIL, "timeout");
}

static void start(struct gw_probe *p, const char *url, gw_usec_t now) {
        struct sockaddr_storage sa;
        socklen_t sl;
        char path[512];
        p->next_at = now + PROBE_EVERY;
        if (probe_target(url, &sa, &sl, path, sizeof path) < 0)
                return finish(p, GW_PROBE_FAIL, "unusable URL");
        int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return finish(p, GW_PROBE_FAIL, strerror(errno));
        p->fd = fd;
        p->sent = false;
        p->len = 0;
        p->started = now;
        if (connect(fd, (struct sockaddr *) &sa, sl) < 0 && errno != EINPROGRESS)
                return finish(p, GW_PROBE_FAIL, errno == ECONNREFUSED ? "connection refused" : strerror(errno));
        advance(p, url, now); /* loopback connects at once: send now, read at the next sample */
}

void gw_probe_step(struct gw_probe *p, const char *url, bool want, gw_usec_t now) {
        if (!url) {
                gw_probe_close(p);
                p->result = GW_PROBE_NONE;
                return;
        }
        if (p->fd >= 0)
                advance(p, url, now);
        if (p->fd < 0 && want && now >= p->next_at)
                start(p, url, now);
}
