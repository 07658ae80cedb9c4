#include "daemon/userfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

bool gw_user_owns(const struct gw_job *j, const struct stat *st) {
        return geteuid() != 0 || j->uid == 0 || st->st_uid == j->uid;
}

int gw_user_file_open(const struct gw_job *j, const char *path, bool user_chosen, int flags, struct stat *st) {
        /* O_PATH opens nothing: the type and owner are known before any real open. */
        int pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (pfd < 0)
                return -errno;
        int r = 0;
        if (fstat(pfd, st) < 0)
                r = -errno;
        else if (!S_ISREG(st->st_mode))
                r = -EINVAL;
        else if (user_chosen && !gw_user_owns(j, st))
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
