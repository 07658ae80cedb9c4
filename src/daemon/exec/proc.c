#include "daemon/exec/proc.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"

#define MAX_TREE 65536

/* Field `field` (1-based, >= 3) of /proc/PID/stat as a number. */
static int stat_field(pid_t pid, int field, unsigned long long *ret) {
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        if (n <= 0)
                return -EIO;
        buf[n] = '\0';
        /* The command name may hold spaces and parentheses: fields start after the last ')'. */
        char *p = strrchr(buf, ')');
        if (!p)
                return -EIO;
        p++;
        for (int f = 3; f < field; f++) {
                p = strchr(p + 1, ' ');
                if (!p)
                        return -EIO;
        }
        char *end;
        unsigned long long v = strtoull(p + 1, &end, 10);
        if (end == p + 1)
                return -EIO;
        *ret = v;
        return 0;
}

int gw_proc_start_time(pid_t pid, uint64_t *ret) {
        unsigned long long v;
        int r = stat_field(pid, 22, &v);
        if (r == 0)
                *ret = v;
        return r;
}

int gw_proc_counter_in(const char *text, const char *key, uint64_t *ret) {
        size_t klen = strlen(key);
        for (const char *l = text; *l;) {
                if (!strncmp(l, key, klen) && l[klen] == ' ') {
                        char *end;
                        errno = 0;
                        unsigned long long v = strtoull(l + klen + 1, &end, 10);
                        if (errno || end == l + klen + 1)
                                return -EIO;
                        *ret = v;
                        return 0;
                }
                const char *nl = strchr(l, '\n');
                if (!nl)
                        break;
                l = nl + 1;
        }
        return -ENOENT;
}

int gw_proc_counter_fd(int fd, const char *key, uint64_t *ret) {
        char buf[16384];
        ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return gw_proc_counter_in(buf, key, ret);
}

int gw_proc_counter(const char *path, const char *key, uint64_t *ret) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        return fd < 0 ? -errno : gw_proc_counter_fd(fd, key, ret);
}

pid_t gw_proc_parent(pid_t pid) {
        unsigned long long v;
        return stat_field(pid, 4, &v) == 0 ? (pid_t) v : 0;
}

bool gw_proc_is(pid_t pid, uint64_t start) {
        uint64_t s;
        return pid > 0 && gw_proc_start_time(pid, &s) == 0 && s == start;
}

/* Appends the children of pid (all its threads') to list. */
static void children_of(pid_t pid, pid_t *list, size_t *n, size_t cap) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        DIR *d = opendir(path);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char cpath[320], buf[8192];
                snprintf(cpath, sizeof cpath, "/proc/%d/task/%s/children", (int) pid, de->d_name);
                _cleanup_close_ int fd = open(cpath, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                ssize_t r = read(fd, buf, sizeof buf - 1);
                if (r <= 0)
                        continue;
                buf[r] = '\0';
                for (char *p = buf; *p && *n < cap;) {
                        char *end;
                        long c = strtol(p, &end, 10);
                        if (end == p)
                                break;
                        if (c > 0)
                                list[(*n)++] = (pid_t) c;
                        p = end;
                }
        }
        closedir(d);
}

int gw_proc_signal_descendants(pid_t root, int sig, pid_t skip_group) {
        _cleanup_free_ pid_t *list = gw_xmalloc(MAX_TREE * sizeof(pid_t));
        size_t n = 0, done = 0;
        children_of(root, list, &n, MAX_TREE);
        /* Breadth first: signal each process before looking at its children. */
        while (done < n) {
                pid_t p = list[done++];
                if (skip_group <= 0 || getpgid(p) != skip_group)
                        (void) kill(p, sig);
                children_of(p, list, &n, MAX_TREE);
        }
        return (int) n;
}

bool gw_proc_has_children(pid_t root) {
        pid_t list[4];
        size_t n = 0;
        children_of(root, list, &n, ELEMENTSOF(list));
        return n > 0;
}

pid_t gw_proc_first_child(pid_t pid) {
        pid_t list[1];
        size_t n = 0;
        children_of(pid, list, &n, 1);
        return n ? list[0] : 0;
}

/* Whether cmdline (NUL-separated, len bytes) is one of this daemon's shims; fills ref. */
static bool parse_shim_cmdline(const char *buf, size_t len, const char *exits, struct gw_shim_ref *ref) {
        const char *argv[7];
        size_t n = 0;
        for (size_t off = 0; off < len && n < ELEMENTSOF(argv); off += strlen(buf + off) + 1)
                argv[n++] = buf + off;
        if (n < 4)
                return false;
        const char *base = strrchr(argv[0], '/');
        base = base ? base + 1 : argv[0];
        if (!strcmp(base, "gpuward-shim") && !strcmp(argv[1], "--idle") && !strcmp(argv[2], "--exits") &&
            !strcmp(argv[3], exits)) {
                ref->job_id = 0; /* between jobs: it runs none */
                ref->attempt = 0;
                return true;
        }
        if (n < 7)
                return false;
        if (strcmp(base, "gpuward-shim") || strcmp(argv[1], "--job") || strcmp(argv[3], "--attempt") ||
            strcmp(argv[5], "--exits") || strcmp(argv[6], exits))
                return false;
        ref->job_id = strtoll(argv[2], NULL, 10);
        ref->attempt = (int) strtol(argv[4], NULL, 10);
        return ref->job_id > 0;
}

void gw_proc_find_shims(const char *exits, struct gw_shim_ref **ret, size_t *ret_n) {
        struct gw_shim_ref *v = NULL;
        size_t n = 0, cap = 0;
        DIR *d = opendir("/proc");
        struct dirent *de;
        while (d && (de = readdir(d))) {
                char *end;
                long pid = strtol(de->d_name, &end, 10);
                if (*end || pid <= 0)
                        continue;
                char path[64], buf[4096];
                snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t r = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
                if (r <= 0)
                        continue;
                buf[r] = '\0';
                struct gw_shim_ref ref = { .pid = (pid_t) pid };
                if (!parse_shim_cmdline(buf, (size_t) r, exits, &ref))
                        continue;
                if (n == cap) {
                        cap = cap ? cap * 2 : 16;
                        v = gw_xrealloc(v, cap * sizeof *v);
                }
                v[n++] = ref;
        }
        if (d)
                closedir(d);
        *ret = v;
        *ret_n = n;
}
