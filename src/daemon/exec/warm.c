#include "daemon/exec/warm.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fdpass.h"

static void drop_oldest(struct gw_warm *w, size_t k) {
        for (size_t i = 0; i < k; i++)
                (void) close(w->v[i].chan);
        memmove(w->v, w->v + k, (w->n - k) * sizeof *w->v);
        w->n -= k;
}

void gw_warm_put(struct gw_warm *w, int chan, pid_t pid, uint64_t start, int64_t now) {
        if (chan < 0)
                return;
        if (w->n == GW_WARM_MAX)
                drop_oldest(w, 1);
        w->v[w->n++] = (struct gw_warm_one){ chan, pid, start, now };
}

bool gw_warm_send(struct gw_warm *w, const char *request, size_t len, int report_fd, struct gw_warm_one *ret) {
        while (w->n > 0) {
                /* The most recently idle: its memory is the likeliest to be in cache. */
                struct gw_warm_one one = w->v[--w->n];
                union gw_fdpass_ctl ctl;
                struct iovec iov = { (void *) request, len };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
                gw_fdpass_attach(&mh, &ctl, report_fd);
                /* An idle supervisor's channel is empty: a full one, or a closed one (EPIPE: it
                 * ended), is not one to use. */
                ssize_t n = sendmsg(one.chan, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n == (ssize_t) len) {
                        *ret = one;
                        return true;
                }
                if (n >= 0 || (errno != EPIPE && errno != ECONNRESET && errno != ECONNREFUSED)) {
                        /* Not the supervisor's doing (a request too large for the socket, no
                         * memory): it stays, and the start goes the other way. */
                        w->n++;
                        return false;
                }
                (void) close(one.chan);
        }
        return false;
}

int64_t gw_warm_tick(struct gw_warm *w, int64_t now) {
        size_t old = 0;
        while (old < w->n && now - w->v[old].since >= GW_WARM_SECONDS)
                old++;
        drop_oldest(w, old);
        return w->n ? w->v[0].since + GW_WARM_SECONDS : INT64_MAX;
}

void gw_warm_close(struct gw_warm *w) { drop_oldest(w, w->n); }
