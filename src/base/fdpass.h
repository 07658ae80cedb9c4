/* File descriptors passed along with a datagram (SCM_RIGHTS), at most GW_FDPASS_MAX.  Shared
 * by gpuwardd and the static gpuward-shim, so header-only and libc-only. */
#pragma once

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define GW_FDPASS_MAX 2

union gw_fdpass_ctl {
        struct cmsghdr align;
        char space[CMSG_SPACE(GW_FDPASS_MAX * sizeof(int))];
};

/* Points mh's control data at ctl, carrying the n descriptors fds (n >= 1).  ctl is zeroed
 * first: its padding is sent to the kernel too (valgrind reads it as uninitialised otherwise). */
static inline void gw_fdpass_attach_n(struct msghdr *mh, union gw_fdpass_ctl *ctl, const int *fds, size_t n) {
        memset(ctl, 0, sizeof *ctl);
        mh->msg_control = ctl->space;
        mh->msg_controllen = CMSG_SPACE(n * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n * sizeof(int));
        memcpy(CMSG_DATA(c), fds, n * sizeof(int));
}

static inline void gw_fdpass_attach(struct msghdr *mh, union gw_fdpass_ctl *ctl, int fd) {
        gw_fdpass_attach_n(mh, ctl, &fd, 1);
}

/* Prepares mh to receive at most GW_FDPASS_MAX descriptors into ctl. */
static inline void gw_fdpass_expect(struct msghdr *mh, union gw_fdpass_ctl *ctl) {
        mh->msg_control = ctl->space;
        mh->msg_controllen = sizeof ctl->space;
}

/* The descriptors a received message carried, into fds[0..max) (-1 where none): how many.
 * Any beyond max are closed: the kernel installed them in this process. */
static inline size_t gw_fdpass_take_n(struct msghdr *mh, int *fds, size_t max) {
        size_t got = 0;
        for (size_t i = 0; i < max; i++)
                fds[i] = -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                        for (size_t k = 0; CMSG_LEN((k + 1) * sizeof(int)) <= c->cmsg_len; k++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(int));
                                if (got < max)
                                        fds[got++] = fd;
                                else
                                        (void) close(fd);
                        }
        return got;
}

/* The descriptor a received message carried, or -1. */
static inline int gw_fdpass_take(struct msghdr *mh) {
        int fd;
        return gw_fdpass_take_n(mh, &fd, 1) ? fd : -1;
}
