#include "daemon/base/userfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "base/cleanup.h"

bool gw_user_owns(const struct gw_job *j, const struct stat *st) {
        return geteuid() != 0 || j->uid == 0 || st->st_uid == j->uid;
}

int gw_user_file_open(const struct gw_job *j, const char *path, bool user_chosen, int flags, struct stat *st) {
        if (!user_chosen) {
                /* gpuward's own file (a job log in the state dir): no one else names it. */
                int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
                if (fd < 0)
                        return -errno;
                if (fstat(fd, st) == 0 && S_ISREG(st->st_mode))
                        return fd;
                (void) close(fd);
                return -EINVAL;
        }
        /* O_PATH opens nothing: the type and owner are known before any real open. */
        int pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (pfd < 0)
                return -errno;
        int r = 0;
        if (fstat(pfd, st) < 0)
                r = -errno;
        else if (!S_ISREG(st->st_mode))
                r = -EINVAL;
        else if (!gw_user_owns(j, st))
                r = -EPERM;
        if (r == 0) {
                char self[64];
                snprintf(self, sizeof self, "/proc/self/fd/%d", pfd);
                r = open(self, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (r < 0)
                        r = -errno;
        }
        (void) close(pfd);
        return r;
}

bool gw_user_file_stat(const struct gw_job *j, const char *path, struct stat *st) {
        return lstat(path, st) == 0 && S_ISREG(st->st_mode) && gw_user_owns(j, st);
}

char *gw_user_file_read_end(int fd, const struct stat *st, size_t max, size_t *ret_len) {
        size_t len = (size_t) st->st_size < max ? (size_t) st->st_size : max;
        char *buf = gw_xmalloc(len + 1);
        ssize_t n = pread(fd, buf, len, st->st_size - (off_t) len);
        buf[n > 0 ? n : 0] = '\0';
        *ret_len = n > 0 ? (size_t) n : 0;
        return buf;
}

char *gw_user_file_tail(const struct gw_job *j, const char *path, bool user_chosen, size_t max, struct stat *ret_st,
                        size_t *ret_len) {
        struct stat st;
        int fd = gw_user_file_open(j, path, user_chosen, O_RDONLY, &st);
        if (fd < 0)
                return NULL;
        if (ret_st)
                *ret_st = st;
        char *text = gw_user_file_read_end(fd, &st, max, ret_len);
        (void) close(fd);
        return text;
}

gw_usec_t gw_file_mtime_us(const struct stat *st) {
        return (gw_usec_t) st->st_mtim.tv_sec * GW_USEC_PER_SEC + st->st_mtim.tv_nsec / 1000;
}

gw_usec_t gw_file_birth_us(const char *path) {
        struct statx sx;
        if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) < 0 || !(sx.stx_mask & STATX_BTIME))
                return 0;
        return (gw_usec_t) sx.stx_btime.tv_sec * GW_USEC_PER_SEC + sx.stx_btime.tv_nsec / 1000;
}
