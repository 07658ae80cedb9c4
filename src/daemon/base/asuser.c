#include "daemon/base/asuser.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"

_Static_assert(sizeof(gid_t) == sizeof(uint32_t), "an account's groups are passed as gid_t");

/* The daemon's own supplementary groups, read once: they do not change while it runs. */
static gid_t *own_groups;
static int n_own_groups = -1;
static int switched; /* begin has changed something that end must put back */

static int thread_setgroups(size_t n, const gid_t *groups) {
        return syscall(SYS_setgroups, n, groups) < 0 ? -errno : 0;
}

static int read_own_groups(void) {
        if (n_own_groups >= 0)
                return 0;
        int n = getgroups(0, NULL);
        if (n < 0)
                return -errno;
        own_groups = calloc((size_t) n + 1, sizeof *own_groups);
        if (!own_groups || (n = getgroups(n, own_groups)) < 0) {
                free(own_groups);
                own_groups = NULL;
                return -ENOMEM;
        }
        n_own_groups = n;
        return 0;
}

/* setfsuid and setfsgid report the previous value, never an error: asking again tells. */
static int set_fs_ids(uid_t uid, gid_t gid) {
        (void) setfsgid(gid);
        if ((gid_t) setfsgid((gid_t) -1) != gid)
                return -EPERM;
        (void) setfsuid(uid);
        return (uid_t) setfsuid((uid_t) -1) == uid ? 0 : -EPERM;
}

int gw_as_user_begin(uid_t uid, gid_t gid, const uint32_t *groups, int n_groups) {
        if (geteuid() != 0 || uid == 0) /* a non-root daemon's jobs are its own; root passes */
                return 0;
        int r = read_own_groups();
        if (r < 0)
                return r;
        switched = 1;
        r = n_groups > 0 ? thread_setgroups((size_t) n_groups, groups) : thread_setgroups(1, &gid);
        if (r == 0)
                r = set_fs_ids(uid, gid);
        if (r < 0)
                gw_as_user_end();
        return r;
}

void gw_as_user_end(void) {
        if (!switched)
                return;
        switched = 0;
        if (set_fs_ids(geteuid(), getegid()) < 0 || thread_setgroups((size_t) n_own_groups, own_groups) < 0) {
                log_err("cannot take back the daemon's own file identity after a check as a user: stopping");
                abort();
        }
}
