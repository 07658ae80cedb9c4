/* Who is at the other end of a loopback TCP connection.  Every local user comes from
 * 127.0.0.1, so a cap per address is one cap for all of them; the kernel knows which uid made
 * the peer's socket (sock_diag, the exact lookup `ss -e` prints as uid:), and that uid is what
 * the TCP door counts connections by, as the Unix door counts SO_PEERCRED's.  Accounting only,
 * never identity: rights come from tokens on TCP. */
#pragma once
#include <sys/types.h>

/* The uid owning the peer socket of connected TCP socket fd, when the peer is on this host
 * (127.0.0.0/8, ::1, ::ffff:127.x).  0 and *ret_uid, -ENOENT when the peer is elsewhere or
 * gone, or -errno (-EPROTONOSUPPORT: a kernel without inet_diag). */
int gw_loopback_peer_uid(int fd, uid_t *ret_uid);
