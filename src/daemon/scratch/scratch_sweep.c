/* The node agent's sweep of dead steps' scratch folders (scratch.h, gw_scratch_sweep).
 *
 * A step (scratch_step.c) removes its folder when its command ends; a node that died, or a
 * step killed outright (SIGKILL, the OOM killer), leaves it, checkpoints and all, on the
 * node's disk.  Such a folder is known by its name (core/scratch.h gw_scratch_name_parse) and
 * by having no step: a step's command line names its folder from its exec, before it makes
 * it, so a folder listed before /proc is read and no process's command line names it then
 * has no step and never will again.
 *
 * scratch_dir is the users' (mode 1777): every folder there may be a user's trap for root.
 * The agent only lists it and lstats, then empties a folder as the folder's owner with the
 * copying helper (which follows no link below it), and removes the emptied folder relative
 * to scratch_dir's descriptor once it is still the same directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/time.h"
#include "core/scratch.h"
#include "daemon/scratch/scratch.h"
#include "daemon/scratch/scratch_int.h"

/* Folders of steps' names looked at in one sweep, and the time one sweep may take: the
 * agent's loop waits for it, and a node whose snapshots stop for 3 sample intervals turns
 * stale.  A folder not emptied in time (millions of files) is emptied further by the next. */
#define LIST_MAX 1024
#define SWEEP_TIME (4 * GW_USEC_PER_SEC)
/* The head of a command line read: a step's is "gpuwardd --scratch-run DIR ...", DIR under
 * PATH_MAX; a longer one is cut, never overrun. */
#define CMDLINE_MAX (PATH_MAX + 256)
#define STEP_FLAG "--scratch-run"

struct candidate {
        char name[64];
        dev_t dev;
        ino_t ino;
        uid_t uid;
        gid_t gid;
        bool live;
};

/* The folders of dead steps' names under dir_fd, each a real directory (lstat): at most max. */
static size_t list_candidates(int dir_fd, struct candidate *c, size_t max) {
        int dup_fd = dup(dir_fd);
        DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
        if (!d) {
                if (dup_fd >= 0)
                        (void) close(dup_fd);
                return 0;
        }
        size_t n = 0;
        struct dirent *de;
        struct stat st;
        while (n < max && (de = readdir(d))) {
                if (strlen(de->d_name) >= sizeof c->name || gw_scratch_name_parse(de->d_name, NULL, NULL) < 0)
                        continue;
                /* A link or a file of that name is a user's, not a step's: left alone. */
                if (fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                c[n] = (struct candidate){ .dev = st.st_dev, .ino = st.st_ino, .uid = st.st_uid, .gid = st.st_gid };
                memcpy(c[n].name, de->d_name, strlen(de->d_name) + 1);
                n++;
        }
        closedir(d);
        return n;
}

/* The last component of path ("/s/5-1-ab/" is "5-1-ab"), into buf (n bytes). */
static void last_component(const char *path, char *buf, size_t n) {
        size_t l = strlen(path);
        while (l > 1 && path[l - 1] == '/')
                l--;
        size_t s = l;
        while (s > 0 && path[s - 1] != '/')
                s--;
        snprintf(buf, n, "%.*s", (int) (l - s), path + s);
}

/* Marks the candidates that a step's command line (NUL-separated, len bytes) names. */
static void mark_live(const char *cmd, size_t len, struct candidate *c, size_t n) {
        const char *end = cmd + len;
        for (const char *a = cmd; a < end;) {
                size_t al = strnlen(a, (size_t) (end - a));
                const char *next = a + al + 1;
                /* The last argument may be cut (no NUL): compared within the bytes read. */
                if (al != sizeof STEP_FLAG - 1 || memcmp(a, STEP_FLAG, al) || next >= end) {
                        a = next;
                        continue;
                }
                /* By the folder's name, not its whole path: the controller's scratch_dir may be
                 * spelled otherwise than --scratch-dir (a trailing slash, a link to it), and a
                 * name is one job's attempt's.  Keeping a dead folder costs disk until the step
                 * is gone; removing a live one costs the job. */
                char name[sizeof c->name];
                if (strnlen(next, (size_t) (end - next)) < (size_t) (end - next)) {
                        last_component(next, name, sizeof name);
                        for (size_t i = 0; i < n; i++)
                                if (!strcmp(c[i].name, name))
                                        c[i].live = true;
                }
                a = next;
        }
}

/* Reads /proc after the listing: each process's command line, its head at most.  A process
 * that ends meanwhile is skipped (its folder, if any, is dead now).  -errno when /proc cannot
 * be read: then nothing is swept. */
static int scan_steps(struct candidate *c, size_t n) {
        DIR *proc = opendir("/proc");
        if (!proc)
                return -errno;
        static char cmd[CMDLINE_MAX];
        struct dirent *de;
        while ((de = readdir(proc))) {
                if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
                    strspn(de->d_name, "0123456789") != strlen(de->d_name))
                        continue;
                char path[64];
                snprintf(path, sizeof path, "/proc/%.20s/cmdline", de->d_name);
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0)
                        continue;
                size_t len = 0;
                ssize_t r;
                while (len < sizeof cmd && (r = read(fd, cmd + len, sizeof cmd - len)) > 0)
                        len += (size_t) r;
                mark_live(cmd, len, c, n);
        }
        closedir(proc);
        return 0;
}

/* The owner's groups as the helper takes them: its passwd entry's, else its gid alone. */
static int owner_groups(uid_t uid, gid_t gid, uint32_t *out, int max) {
        struct passwd pw, *pp = NULL;
        char buf[4096];
        gid_t g[GW_SCRATCH_MAX_GROUPS];
        int ng = GW_SCRATCH_MAX_GROUPS;
        out[0] = gid;
        if (getpwuid_r(uid, &pw, buf, sizeof buf, &pp) != 0 || !pp || getgrouplist(pp->pw_name, pp->pw_gid, g, &ng) < 0)
                return 1;
        ng = ng < max ? ng : max;
        for (int i = 0; i < ng; i++)
                out[i] = g[i];
        return ng;
}

/* Empties c (as its owner, following no link) and removes it: 0, or -errno with why. */
static int remove_dead(int dir_fd, const char *dir, const struct candidate *c, gw_usec_t max, char *why, size_t n) {
        struct stat st;
        char path[PATH_MAX], report[1024];
        if (snprintf(path, sizeof path, "%s/%s", dir, c->name) >= (int) sizeof path)
                return snprintf(why, n, "its path is too long"), -ENAMETOOLONG;
        /* Still the directory listed before /proc was read, else a new one: its step may live.
         * One gone meanwhile (its owner removed it) is nothing to say. */
        if (fstatat(dir_fd, c->name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
                return -ENOENT;
        if (fstatat(dir_fd, c->name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != c->dev || st.st_ino != c->ino)
                return snprintf(why, n, "it changed while its step was looked for"), -ESTALE;
        static uint32_t groups[GW_SCRATCH_MAX_GROUPS];
        struct gw_scratch_copy cp = { .mode = GW_SCRATCH_SYNC, .src = path, .uid = st.st_uid, .gid = st.st_gid };
        cp.groups = groups;
        cp.n_groups = owner_groups(st.st_uid, st.st_gid, groups, GW_SCRATCH_MAX_GROUPS);
        int r = gw_scratch_copy_run(&cp, max, report, sizeof report);
        int e;
        if (r < 0 && sscanf(report, "E %d", &e) == 1)
                return snprintf(why, n, "cannot empty it as its owner: %s", strerror(e)), -EIO;
        if (fstatat(dir_fd, c->name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != c->dev || st.st_ino != c->ino)
                return snprintf(why, n, "it changed while it was emptied"), -ESTALE;
        if (unlinkat(dir_fd, c->name, AT_REMOVEDIR) < 0) {
                e = errno;
                /* The helper stopped (killed at the sweep's deadline), or a file its owner may not
                 * remove (another's folder inside): the rest stays, for the next sweep or an
                 * admin. */
                snprintf(why, n, "%s%s", strerror(e),
                         e != ENOTEMPTY ? ""
                         : r < 0        ? " (its emptying stopped: the next sweep goes on)"
                                        : " (what its owner may not remove stays)");
                return -e;
        }
        return 0;
}

int gw_scratch_sweep(const char *dir) {
        _cleanup_close_ int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir_fd < 0) {
                int e = errno;
                log_warn("scratch: cannot open %s: %s: no folder swept", dir, strerror(e));
                return -e;
        }
        _cleanup_free_ struct candidate *c = calloc(LIST_MAX, sizeof *c);
        if (!c)
                return -ENOMEM;
        size_t n = list_candidates(dir_fd, c, LIST_MAX);
        if (n == 0)
                return 0;
        int r = scan_steps(c, n);
        if (r < 0) {
                log_warn("scratch: cannot read /proc: %s: no folder swept", strerror(-r));
                return r;
        }
        int removed = 0;
        gw_usec_t deadline = gw_clock_mono() + SWEEP_TIME;
        for (size_t i = 0; i < n; i++) {
                gw_usec_t left = deadline - gw_clock_mono();
                if (c[i].live || left <= 0)
                        continue;
                char why[256];
                r = remove_dead(dir_fd, dir, &c[i], left, why, sizeof why);
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        log_warn("scratch: cannot remove %s/%s (uid %u): %s", dir, c[i].name, (unsigned) c[i].uid, why);
                else {
                        log_info("scratch: removed %s/%s (uid %u): no step of it runs on this node", dir, c[i].name,
                                 (unsigned) c[i].uid);
                        removed++;
                }
        }
        return removed;
}
