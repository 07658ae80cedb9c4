#include "api/peeruid.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"

static bool is_loopback(const struct sockaddr_storage *a) {
        if (a->ss_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *) a)->sin_addr.s_addr) >> 24) == 127;
        if (a->ss_family != AF_INET6)
                return false;
        const struct in6_addr *x = &((const struct sockaddr_in6 *) a)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(x) || (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
}

/* The address bytes and port of a, in inet_diag's form (network order). */
static void diag_end(const struct sockaddr_storage *a, __be16 *port, __be32 addr[4]) {
        if (a->ss_family == AF_INET) {
                const struct sockaddr_in *v4 = (const struct sockaddr_in *) a;
                *port = v4->sin_port;
                memcpy(addr, &v4->sin_addr, sizeof v4->sin_addr);
        } else {
                const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *) a;
                *port = v6->sin6_port;
                memcpy(addr, &v6->sin6_addr, sizeof v6->sin6_addr);
        }
}

int gw_loopback_peer_uid(int fd, uid_t *ret_uid) {
        struct sockaddr_storage here, peer;
        socklen_t lh = sizeof here, lp = sizeof peer;
        if (getsockname(fd, (struct sockaddr *) &here, &lh) < 0 || getpeername(fd, (struct sockaddr *) &peer, &lp) < 0)
                return -errno;
        if (!is_loopback(&peer))
                return -ENOENT;
        struct {
                struct nlmsghdr nh;
                struct inet_diag_req_v2 req;
        } msg = {
                .nh = { .nlmsg_len = sizeof msg, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST },
                .req = { .sdiag_family = (__u8) peer.ss_family,
                         .sdiag_protocol = IPPROTO_TCP,
                         .idiag_states = ~0u,
                         .id.idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE } },
        };
        /* The peer's socket seen from its side: its address is the source, ours the destination. */
        diag_end(&peer, &msg.req.id.idiag_sport, msg.req.id.idiag_src);
        diag_end(&here, &msg.req.id.idiag_dport, msg.req.id.idiag_dst);

        _cleanup_close_ int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
        if (nl < 0)
                return -errno;
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        if (sendto(nl, &msg, sizeof msg, 0, (struct sockaddr *) &kernel, sizeof kernel) < 0)
                return -errno;
        union {
                struct nlmsghdr nh;
                char buf[1024];
        } reply;
        ssize_t n = recv(nl, &reply, sizeof reply, 0);
        if (n < 0)
                return -errno;
        if (!NLMSG_OK(&reply.nh, (size_t) n))
                return -EBADMSG;
        if (reply.nh.nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(&reply.nh);
                return reply.nh.nlmsg_len >= NLMSG_LENGTH(sizeof *e) && e->error ? e->error : -EBADMSG;
        }
        if (reply.nh.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
            reply.nh.nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
                return -EBADMSG;
        *ret_uid = ((const struct inet_diag_msg *) NLMSG_DATA(&reply.nh))->idiag_uid;
        return 0;
}
