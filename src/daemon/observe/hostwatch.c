/* The host beside its GPUs, for the dashboard: CPU and memory from /proc, the disks of the
 * state dir and of /, and each GPU process's CPU use.  Read at every GPU sample on the loop's
 * thread: a few small /proc files, no NVML.  The parsing is base/hoststat.c's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/hoststat.h"
#include "daemon/base/config.h"
#include "daemon/daemon.h"
#include "daemon/observe/hostwatch.h"

/* The whole of a small /proc file into buf (NUL-terminated); its length or -errno. */
static ssize_t read_proc(const char *path, char *buf, size_t n) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        size_t used = 0;
        while (used < n - 1) {
                ssize_t r = read(fd, buf + used, n - 1 - used);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r == 0)
                        break;
                used += (size_t) r;
        }
        buf[used] = '\0';
        return (ssize_t) used;
}

static void read_disk(const char *path, struct gw_hostdisk *ret) {
        struct statvfs sv;
        if (!path || statvfs(path, &sv) < 0) {
                ret->have = false;
                return;
        }
        *ret = (struct gw_hostdisk){ .have = true,
                                     .total = (uint64_t) sv.f_blocks * sv.f_frsize,
                                     .avail = (uint64_t) sv.f_bavail * sv.f_frsize };
}

void gw_hostwatch_sample(struct gw_daemon *d) {
        struct gw_hostload *l = &d->host.load;
        /* /proc/stat has a line per CPU and per interrupt source: 64 KiB holds the "cpu" lines
         * first, which is all that is read. */
        static char buf[64 * 1024];
        struct gw_cpu_ticks cur;
        unsigned ncpu = 0;
        if (read_proc("/proc/stat", buf, sizeof buf) > 0 && gw_hoststat_parse_cpu(buf, &cur, &ncpu) == 0) {
                struct gw_cpu_ticks prev = { l->cpu_busy, l->cpu_total };
                l->cpu_percent = l->have_cpu ? gw_hoststat_cpu_percent(&prev, &cur) : -1;
                l->cpu_busy = cur.busy;
                l->cpu_total = cur.total;
                l->ncpu = ncpu;
                l->have_cpu = true;
        } else
                l->have_cpu = false;
        l->have_mem = read_proc("/proc/meminfo", buf, sizeof buf) > 0 &&
                      gw_hoststat_parse_meminfo(buf, &l->mem_total, &l->mem_available) == 0;
        read_disk(d->cfg->state_dir, &l->disk_state);
        read_disk("/", &l->disk_root);
        l->read_at = d->now_wall;
}

void gw_hostwatch_proc_cpu(struct gw_daemon *d, struct gw_dproc *p) {
        char path[64], line[1024];
        uint64_t ticks;
        snprintf(path, sizeof path, "/proc/%u/stat", p->pid);
        if (read_proc(path, line, sizeof line) <= 0 || gw_hoststat_parse_pid_ticks(line, &ticks) < 0) {
                p->cpu = -1;
                p->cpu_at = 0;
                return;
        }
        static long hz;
        if (!hz)
                hz = sysconf(_SC_CLK_TCK);
        p->cpu = p->cpu_at ? gw_hoststat_proc_percent(p->cpu_ticks, ticks, hz, d->now - p->cpu_at) : -1;
        p->cpu_ticks = ticks;
        p->cpu_at = d->now;
}

static json_t *disk_json(const char *name, const struct gw_hostdisk *k) {
        if (!k->have)
                return json_pack("{s:s,s:n,s:n}", "name", name, "total", "avail");
        return json_pack("{s:s,s:I,s:I}", "name", name, "total", (json_int_t) k->total, "avail", (json_int_t) k->avail);
}

json_t *gw_hostwatch_json(const struct gw_daemon *d) {
        const struct gw_hostload *l = &d->host.load;
        json_t *o = json_object();
        json_object_set_new(o, "cpu_percent",
                            l->have_cpu && l->cpu_percent >= 0 ? json_integer((json_int_t) (l->cpu_percent + 0.5))
                                                               : json_null());
        json_object_set_new(o, "cpus", l->have_cpu ? json_integer(l->ncpu) : json_null());
        json_object_set_new(o, "mem_total", l->have_mem ? json_integer((json_int_t) l->mem_total) : json_null());
        json_object_set_new(o, "mem_available",
                            l->have_mem ? json_integer((json_int_t) l->mem_available) : json_null());
        json_object_set_new(o, "disks",
                            json_pack("[o,o]", disk_json("state_dir", &l->disk_state), disk_json("/", &l->disk_root)));
        json_object_set_new(o, "sampled_at",
                            l->read_at ? json_real((double) l->read_at / GW_USEC_PER_SEC) : json_null());
        return o;
}
