/* One file descriptor passed along with a datagram (SCM_RIGHTS).  Shared by gpuwardd and the
 * static gpuward-shim, so header-only and libc-only. */
#pragma once

#include <string.h>
#include <sys/socket.h>

union gw_fdpass_ctl {
        struct cmsghdr align;
        char space[CMSG_SPACE(sizeof(int))];
};

/* Points mh's control data at ctl, carrying fd.  ctl is zeroed first: its padding is sent to
 * the kernel too (valgrind reads it as uninitialised otherwise). */
static inline void gw_fdpass_attach(struct msghdr *mh, union gw_fdpass_ctl *ctl, int fd) {
        memset(ctl, 0, sizeof *ctl);
        mh->msg_control = ctl->space;
        mh->msg_controllen = sizeof ctl->space;
        struct cmsghdr *c = CMSG_FIRSTHDR(mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
}

/* Prepares mh to receive at most one descriptor into ctl. */
static inline void gw_fdpass_expect(struct msghdr *mh, union gw_fdpass_ctl *ctl) {
        mh->msg_control = ctl->space;
        mh->msg_controllen = sizeof ctl->space;
}

/* The descriptor a received message carried, or -1. */
static inline int gw_fdpass_take(struct msghdr *mh) {
        int fd = -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        return fd;
}
