/* gpuwardd --agent (agent.h): sample, attribute, post; nothing else.  A mode of gpuwardd
 * rather than a program of its own so that the node runs the very sampler and NVML loader
 * the daemon runs, and one package installs both; it returns from main() before the
 * daemon's config, store or HTTP doors are touched. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/jsonout.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "core/slurm.h"
#include "core/token.h"
#include "daemon/agent/agent.h"
#include "daemon/cache/cache_node.h"
#include "daemon/observe/sampler.h"
#include "daemon/scratch/scratch.h"
#include "gpu/gpu.h"

#define IO_TIMEOUT_SEC 5
/* How often dead steps' scratch folders are swept (--scratch-dir): a folder is left only by a
 * step killed outright or a node that died, so a few a day at most; each sweep reads all of
 * /proc. */
#define SCRATCH_SWEEP_EVERY (10 * 60 * GW_USEC_PER_SEC)

struct agent {
        char host[256], port[16], path[512]; /* of the controller's URL */
        char token[128];
        char node[GW_SLURM_NODE_MAX];
        const char *nvml_lib;
        gw_usec_t interval;
        struct gw_gpu_lib *lib;
        unsigned n_gpus;
        struct gw_gpu_static info[GW_AGENT_MAX_GPUS];
        char last_error[256]; /* said once until it changes */
        /* The owners' names of this round: a node runs hundreds of processes of a few users,
         * and each getpwuid_r reads the whole password file.  Emptied every round, so that a
         * renamed or removed account is seen at the next snapshot. */
        struct {
                uid_t uid;
                char name[64];
        } owners[64];
        unsigned n_owners;
        /* NVML's Xids since the last delivered snapshot (kept until one is delivered). */
        struct agent_xid {
                unsigned gpu, xid;
        } xids[GW_AGENT_MAX_XIDS];
        size_t n_xids;
        bool events; /* NVML delivers events (else the agent only sleeps) */
        /* The node's dataset cache (--cache-dir): its stager, a child, answers the job steps
         * and writes a line per request on stager_fd; the records wait here for a delivery. */
        struct gw_cache_node_cfg stage;
        char stage_socket[512];
        pid_t stager;
        int stager_fd;
        char sbuf[256];
        size_t nsbuf;
        struct gw_cache_staged staged[GW_AGENT_MAX_STAGED];
        size_t n_staged;
        const char *scratch_dir; /* --scratch-dir: its dead steps' folders swept; NULL: none */
        gw_usec_t next_sweep; /* monotonic */
};

static volatile sig_atomic_t stopping;

static void on_stop(int sig) {
        (void) sig;
        stopping = 1;
}

static const char agent_help[] = "Usage: gpuwardd --agent --controller URL --token-file FILE [--node NAME]\n"
                                 "                [--sample-interval SEC] [--nvml-lib PATH]\n"
                                 "                [--cache-dir DIR [--cache-size SIZE] [--cache-sources LIST]\n"
                                 "                 [--cache-copies N] [--stage-socket PATH]]\n"
                                 "                [--scratch-dir DIR]\n"
                                 "\n"
                                 "Run as a Slurm compute node's agent: sample this node's GPUs each interval, tell\n"
                                 "each GPU process's Slurm job from /proc/PID/cgroup, and post the snapshot to the\n"
                                 "controller (gpuwardd --backend slurm) at URL (http://HOST:PORT).  FILE holds a\n"
                                 "node agent's token, made by an admin on the controller for this node (gpuward\n"
                                 "token create --scope agent --node NAME): the controller refuses a snapshot of\n"
                                 "another node from it.  NAME defaults to the host name and must be the node's\n"
                                 "Slurm name.\n"
                                 "\n"
                                 "With --cache-dir, the node's dataset cache: a job submitted with --dataset asks on\n"
                                 "PATH (default " GW_AGENT_STAGE_SOCKET ", %n: the node's name) for its copy,\n"
                                 "made in DIR as the job's user from a source under LIST (a comma list of folders;\n"
                                 "empty: none), at most SIZE bytes (default 100G), least recently used entries\n"
                                 "evicted, N copies at once (1-64, default 4; the next asker waits for a slot);\n"
                                 "how long each job held its GPUs for it goes to the controller.\n"
                                 "\n"
                                 "With --scratch-dir (the controller's scratch_dir, this node's folder), the folders\n"
                                 "there that --scratch jobs' steps left (a node that died, a step killed) are\n"
                                 "removed, at the start and every 10 minutes: a folder named JOB-ATTEMPT[-RANDOM]\n"
                                 "whose step (gpuwardd --scratch-run DIR) no longer runs here, emptied as its owner.\n";

/* "http://HOST:PORT[/PREFIX]" (a bracketed IPv6 HOST too).  0, or -EINVAL with why. */
static int parse_url(struct agent *a, const char *url, char *why, size_t n) {
        if (strncmp(url, "http://", 7)) {
                snprintf(why, n, "--controller: '%s' must start with http:// (https is not supported yet)", url);
                return -EINVAL;
        }
        const char *h = url + 7, *end = h + strcspn(h, "/"), *colon;
        if (*h == '[') {
                const char *rb = memchr(h, ']', (size_t) (end - h));
                colon = rb && rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
        } else
                colon = memchr(h, ':', (size_t) (end - h));
        size_t hl = (size_t) ((colon ? colon : end) - h);
        if (*h == '[' && hl >= 2)
                h++, hl -= 2;
        long long port = 80;
        char pbuf[16] = "";
        if (colon && (size_t) (end - colon - 1) < sizeof pbuf)
                memcpy(pbuf, colon + 1, (size_t) (end - colon - 1));
        if (hl == 0 || hl >= sizeof a->host || (colon && gw_parse_int(pbuf, 1, 65535, &port) < 0) ||
            strlen(end) + strlen(GW_AGENT_PATH) >= sizeof a->path) {
                snprintf(why, n, "--controller: '%s' is not http://HOST:PORT", url);
                return -EINVAL;
        }
        memcpy(a->host, h, hl);
        a->host[hl] = '\0';
        snprintf(a->port, sizeof a->port, "%lld", port);
        size_t pl = strlen(end);
        while (pl && end[pl - 1] == '/')
                pl--;
        snprintf(a->path, sizeof a->path, "%.*s%s", (int) pl, end, GW_AGENT_PATH);
        return 0;
}

/* The token: the file's first line.  A file others may read is refused, as ssh refuses a key. */
static int read_token(struct agent *a, const char *file, char *why, size_t n) {
        _cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                snprintf(why, n, "--token-file: cannot read %s: %s", file, strerror(errno));
                return -errno;
        }
        if (st.st_mode & 077) {
                snprintf(why, n, "--token-file: %s may be read by others (mode %03o): chmod 600 it", file,
                         (unsigned) st.st_mode & 0777);
                return -EPERM;
        }
        ssize_t l = read(fd, a->token, sizeof a->token - 1);
        a->token[l > 0 ? l : 0] = '\0';
        a->token[strcspn(a->token, "\r\n")] = '\0';
        if (!gw_token_is_wellformed(a->token)) {
                snprintf(why, n, "--token-file: %s does not hold a token (gw_ and 64 hex digits)", file);
                return -EINVAL;
        }
        return 0;
}

enum {
        OPT_AGENT = 0x100,
        OPT_CONTROLLER,
        OPT_TOKEN_FILE,
        OPT_NODE,
        OPT_INTERVAL,
        OPT_NVML,
        OPT_CACHE_DIR,
        OPT_CACHE_SIZE,
        OPT_CACHE_SOURCES,
        OPT_CACHE_COPIES,
        OPT_STAGE_SOCKET,
        OPT_SCRATCH_DIR
};

/* The cache's options, bounded as gpuward.conf's cache keys are. */
static int parse_cache_opt(struct agent *a, int c, const char *v, char *why, size_t n) {
        switch (c) {
        case OPT_CACHE_DIR:
                if (v[0] != '/' || strlen(v) > 512)
                        return snprintf(why, n, "--cache-dir: '%.80s' is not an absolute folder of at most 512 bytes",
                                        v),
                               -EINVAL;
                a->stage.dir = v;
                return 0;
        case OPT_CACHE_SIZE:
                if (gw_parse_size(v, &a->stage.size) < 0 || a->stage.size < (1u << 20))
                        return snprintf(why, n, "--cache-size: '%.80s' is not a size of 1M or more (100G, 500M)", v),
                               -EINVAL;
                return 0;
        case OPT_CACHE_SOURCES:
                for (const char *p = v; *p;) {
                        size_t l = strcspn(p, ",");
                        if (p[0] != '/' || l > 1024)
                                return snprintf(why, n, "--cache-sources: a comma list of absolute folders"), -EINVAL;
                        p += l + (p[l] == ',');
                }
                a->stage.sources = v;
                return 0;
        case OPT_CACHE_COPIES: {
                long long c64;
                if (gw_parse_int(v, 1, 64, &c64) < 0)
                        return snprintf(why, n, "--cache-copies: '%.80s' is not a count from 1 to 64", v), -EINVAL;
                a->stage.copies = (unsigned) c64;
                return 0;
        }
        default:
                if (strlen(v) >= sizeof a->stage_socket - GW_SLURM_NODE_MAX || v[0] != '/')
                        return snprintf(why, n, "--stage-socket: '%.80s' is not an absolute path of at most 400 bytes",
                                        v),
                               -EINVAL;
                snprintf(a->stage_socket, sizeof a->stage_socket, "%s", v);
                return 0;
        }
}

/* --scratch-dir: the folder the sweep opens (O_NOFOLLOW: a link to it is not taken, so the
 * refusal comes now rather than at each sweep). */
static int check_scratch_dir(const char *v, char *why, size_t n) {
        if (v[0] != '/' || strlen(v) > 512)
                return snprintf(why, n, "--scratch-dir: '%.80s' is not an absolute folder of at most 512 bytes", v),
                       -EINVAL;
        _cleanup_close_ int fd = open(v, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return snprintf(why, n, "--scratch-dir: cannot open %s as a folder (not a link): %s", v,
                                strerror(errno)),
                       -EINVAL;
        return 0;
}

static int parse_args(struct agent *a, int argc, char **argv, char *why, size_t n) {
        static const struct option opts[] = {
                { "agent", no_argument, NULL, OPT_AGENT },
                { "controller", required_argument, NULL, OPT_CONTROLLER },
                { "token-file", required_argument, NULL, OPT_TOKEN_FILE },
                { "node", required_argument, NULL, OPT_NODE },
                { "sample-interval", required_argument, NULL, OPT_INTERVAL },
                { "nvml-lib", required_argument, NULL, OPT_NVML },
                { "cache-dir", required_argument, NULL, OPT_CACHE_DIR },
                { "cache-size", required_argument, NULL, OPT_CACHE_SIZE },
                { "cache-sources", required_argument, NULL, OPT_CACHE_SOURCES },
                { "cache-copies", required_argument, NULL, OPT_CACHE_COPIES },
                { "stage-socket", required_argument, NULL, OPT_STAGE_SOCKET },
                { "scratch-dir", required_argument, NULL, OPT_SCRATCH_DIR },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        const char *url = NULL, *token_file = NULL;
        long long v;
        int c;
        a->interval = 2 * GW_USEC_PER_SEC;
        a->stage.size = (uint64_t) 100 << 30;
        a->stage.sources = "";
        a->stage.copies = 4; /* more share the source's server and the node's disk, no faster */
        snprintf(a->stage_socket, sizeof a->stage_socket, "%s", GW_AGENT_STAGE_SOCKET);
        optind = 1;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
                switch (c) {
                case OPT_AGENT:
                        break;
                case OPT_CONTROLLER:
                        url = optarg;
                        break;
                case OPT_TOKEN_FILE:
                        token_file = optarg;
                        break;
                case OPT_NVML:
                        a->nvml_lib = optarg;
                        break;
                case OPT_NODE:
                        if (!gw_token_node_name_valid(optarg)) {
                                snprintf(why, n, "--node: '%s' is not a node name (letters, digits, . - _; 1-64)",
                                         optarg);
                                return -EINVAL;
                        }
                        snprintf(a->node, sizeof a->node, "%s", optarg);
                        break;
                case OPT_INTERVAL:
                        if (gw_parse_int(optarg, 1, 3600, &v) < 0) {
                                snprintf(why, n, "--sample-interval: '%s' is not seconds from 1 to 3600", optarg);
                                return -EINVAL;
                        }
                        a->interval = v * GW_USEC_PER_SEC;
                        break;
                case OPT_CACHE_DIR:
                case OPT_CACHE_SIZE:
                case OPT_CACHE_SOURCES:
                case OPT_CACHE_COPIES:
                case OPT_STAGE_SOCKET:
                        if (parse_cache_opt(a, c, optarg, why, n) < 0)
                                return -EINVAL;
                        break;
                case OPT_SCRATCH_DIR:
                        if (check_scratch_dir(optarg, why, n) < 0)
                                return -EINVAL;
                        a->scratch_dir = optarg;
                        break;
                case 'h':
                        fputs(agent_help, stdout);
                        return 1;
                default:
                        snprintf(why, n, "with --agent, only the options of 'gpuwardd --agent --help'");
                        return -EINVAL;
                }
        if (optind < argc || !url || !token_file) {
                snprintf(why, n, optind < argc ? "--agent takes no arguments: '%s'" : "--agent needs %s",
                         optind < argc ? argv[optind]
                         : !url        ? "--controller URL"
                                       : "--token-file FILE");
                return -EINVAL;
        }
        if (!a->node[0] && (gethostname(a->node, sizeof a->node) < 0 || !a->node[0])) {
                snprintf(why, n, "--node: the host name cannot be read; name the node");
                return -EINVAL;
        }
        a->node[strcspn(a->node, ".")] = '\0'; /* Slurm's NodeName is the short name */
        char sock[sizeof a->stage_socket];
        if (gw_agent_stage_path(a->stage_socket, a->node, sock, sizeof sock) < 0) {
                snprintf(why, n, "--stage-socket: '%.80s' is too long with the node's name", a->stage_socket);
                return -EINVAL;
        }
        memcpy(a->stage_socket, sock, sizeof sock);
        a->stage.socket = a->stage_socket;
        int r = parse_url(a, url, why, n);
        return r < 0 ? r : read_token(a, token_file, why, n);
}

static const char *owner_name(struct agent *a, uid_t uid) {
        for (unsigned i = 0; i < a->n_owners; i++)
                if (a->owners[i].uid == uid)
                        return a->owners[i].name;
        struct passwd pw, *pp = NULL;
        char buf[1024];
        const char *name = getpwuid_r(uid, &pw, buf, sizeof buf, &pp) == 0 && pp ? pp->pw_name : "";
        if (a->n_owners == sizeof a->owners / sizeof a->owners[0])
                a->n_owners = 0; /* more owners than slots: start over rather than search a long list */
        a->owners[a->n_owners].uid = uid;
        snprintf(a->owners[a->n_owners].name, sizeof a->owners[0].name, "%s", name);
        return a->owners[a->n_owners++].name;
}

/* What the process is, seen from this node: its Slurm job (none: a rogue) and its owner. */
static json_t *proc_json(struct agent *a, const struct gw_gpu_proc *p) {
        char path[64], text[8192];
        struct stat st;
        struct gw_slurm_proc sp;
        int r = -ENOENT;
        snprintf(path, sizeof path, "/proc/%u/cgroup", p->pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        /* A file of /proc/PID belongs to the process's owner, as its directory does: one
         * open tells both that the process lives and whose it is. */
        bool alive = fd >= 0 && fstat(fd, &st) == 0;
        ssize_t l = alive ? read(fd, text, sizeof text) : -1;
        if (l > 0)
                r = gw_slurm_proc_from_cgroup(text, (size_t) l, &sp);
        const char *user = alive ? owner_name(a, st.st_uid) : "";
        json_t *o = json_pack("{s:I,s:o,s:o,s:o,s:o,s:s}", "pid", (json_int_t) p->pid, "mem",
                              p->mem_used == UINT64_MAX ? json_null() : json_integer((json_int_t) p->mem_used), "job",
                              r == 0 ? json_integer(sp.job_id) : json_null(), "step",
                              r == 0 ? json_string(gw_slurm_step_kind_name(sp.step_kind)) : json_null(), "uid",
                              alive ? json_integer(st.st_uid) : json_null(), "user", user);
        return o;
}

static const char *health_name(enum gw_gpu_health h) {
        return h == GW_GPU_OK ? "ok" : h == GW_GPU_LOST ? "lost" : "unavailable";
}

/* GPU i with at most *budget of its processes listed (the controller's bounds: per GPU and
 * per snapshot); procs_total counts them all. */
static json_t *gpu_json(struct agent *a, const struct gw_gpu_snapshot *g, unsigned i, size_t *budget) {
        const struct gw_gpu_sample *s = &g->sample;
        json_t *procs = json_array();
        for (size_t k = 0; k < g->n_procs && k<GW_AGENT_MAX_PROCS && * budget> 0; k++, (*budget)--)
                json_array_append_new(procs, proc_json(a, &g->procs[k]));
        return json_pack("{s:i,s:s,s:s,s:I,s:o,s:o,s:s,s:o,s:I}", "index", (int) i, "name", a->info[i].name, "uuid",
                         a->info[i].uuid, "mem_total", (json_int_t) a->info[i].mem_total, "mem_used",
                         s->valid & GW_GPU_HAS_MEM ? json_integer((json_int_t) s->mem_used) : json_null(), "util",
                         s->valid & GW_GPU_HAS_UTIL ? json_integer(s->util_gpu) : json_null(), "health",
                         health_name(s->health), "procs", procs, "procs_total", (json_int_t) g->n_procs);
}

static char *snapshot_body(struct agent *a, const struct gw_snapshot *s) {
        json_t *gpus = json_array();
        size_t budget = GW_AGENT_MAX_PROCS_TOTAL;
        a->n_owners = 0;
        for (unsigned i = 0; i < s->n_gpus; i++)
                json_array_append_new(gpus, gpu_json(a, &s->gpu[i], i, &budget));
        json_t *o = json_pack("{s:s,s:I,s:s,s:o}", "node", a->node, "interval",
                              (json_int_t) (a->interval / GW_USEC_PER_SEC), "driver", gw_gpu_driver_version(a->lib),
                              "gpus", gpus);
        if (o && a->n_xids) {
                json_t *xids = json_array();
                for (size_t i = 0; i < a->n_xids; i++)
                        json_array_append_new(
                                xids, json_pack("{s:i,s:i}", "gpu", (int) a->xids[i].gpu, "xid", (int) a->xids[i].xid));
                json_object_set_new(o, "xids", xids);
        }
        if (o && a->n_staged) {
                json_t *st = json_array();
                for (size_t i = 0; i < a->n_staged; i++) {
                        const struct gw_cache_staged *r = &a->staged[i];
                        json_array_append_new(st, json_pack("{s:I,s:I,s:b,s:b,s:I}", "job", (json_int_t) r->slurm_job,
                                                            "ms", (json_int_t) (r->waited / GW_USEC_PER_MSEC), "ok",
                                                            r->ok, "hit", r->hit, "bytes", (json_int_t) r->bytes));
                }
                json_object_set_new(o, "staged", st);
        }
        char *body = gw_json_compact(o, 0, NULL);
        json_decref(o);
        return body;
}

static int connect_controller(const struct agent *a, char *why, size_t n) {
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
        int r = getaddrinfo(a->host, a->port, &hints, &res);
        if (r) {
                snprintf(why, n, "cannot resolve %s: %s", a->host, gai_strerror(r));
                return -EHOSTUNREACH;
        }
        int fd = -1, e = 0;
        struct timeval tv = { .tv_sec = IO_TIMEOUT_SEC };
        for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
                fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
                if (fd < 0)
                        continue;
                (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* bounds connect() too */
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
                        e = errno;
                        (void) close(fd);
                        fd = -1;
                }
        }
        freeaddrinfo(res);
        if (fd < 0)
                snprintf(why, n, "cannot connect to %s:%s: %s", a->host, a->port, strerror(e ? e : EHOSTUNREACH));
        return fd;
}

static int write_all(int fd, const char *p, size_t len) {
        while (len) {
                ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
                if (w <= 0)
                        return w < 0 ? -errno : -EPIPE;
                p += w, len -= (size_t) w;
        }
        return 0;
}

/* One POST, the connection closed after it (one request per interval needs no keep-alive).
 * 0 on a 2xx; else -errno with why (the controller's own message where it gave one). */
static int post(const struct agent *a, const char *body, char *why, size_t n) {
        _cleanup_close_ int fd = connect_controller(a, why, n);
        if (fd < 0)
                return fd;
        _cleanup_free_ char *head = NULL;
        size_t bl = strlen(body);
        bool v6 = strchr(a->host, ':'); /* an IPv6 literal goes in brackets in Host */
        if (asprintf(&head,
                     "POST %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                     a->path, v6 ? "[" : "", a->host, v6 ? "]" : "", a->port, a->token, bl) < 0)
                return -ENOMEM;
        if (write_all(fd, head, strlen(head)) < 0 || write_all(fd, body, bl) < 0) {
                snprintf(why, n, "cannot send to %s:%s: %s", a->host, a->port, strerror(errno));
                return -EIO;
        }
        char reply[4096];
        size_t got = 0;
        ssize_t l;
        while (got < sizeof reply - 1 && (l = recv(fd, reply + got, sizeof reply - 1 - got, 0)) > 0)
                got += (size_t) l;
        reply[got] = '\0';
        int status = 0;
        if (sscanf(reply, "HTTP/1.%*d %d", &status) != 1) {
                snprintf(why, n, "no HTTP answer from %s:%s", a->host, a->port);
                return -EPROTO;
        }
        if (status / 100 == 2)
                return 0;
        const char *msg = strstr(reply, "\r\n\r\n");
        json_t *o = msg ? json_loads(msg + 4, 0, NULL) : NULL;
        const char *text = json_string_value(json_object_get(o, "error"));
        snprintf(why, n, "the controller answered %d: %s", status, text ? text : "(no message)");
        json_decref(o);
        return -EPROTO;
}

static int open_gpus(struct agent *a) {
        char err[512];
        if (gw_gpu_open(a->nvml_lib, &a->lib, err, sizeof err) < 0) {
                log_err("%s", err);
                return -ENODEV;
        }
        a->n_gpus = gw_gpu_count(a->lib);
        if (a->n_gpus > GW_AGENT_MAX_GPUS)
                a->n_gpus = GW_AGENT_MAX_GPUS;
        for (unsigned i = 0; i < a->n_gpus; i++)
                if (gw_gpu_static_info(a->lib, i, &a->info[i]) < 0)
                        a->info[i] = (struct gw_gpu_static){ .index = i };
        a->events = true; /* until NVML says otherwise (wait_xids) */
        return 0;
}

/* One sample posted; a failure is logged when it differs from the last one, and the
 * recovery once, so that a controller down for a day does not fill the log. */
/* The stager's records since the last read (those of no Slurm job are not the controller's);
 * beyond GW_AGENT_MAX_STAGED undelivered, the oldest go.  Whether one came. */
static bool read_staged(struct agent *a) {
        size_t before = a->n_staged;
        while (a->stager_fd >= 0) {
                ssize_t r = read(a->stager_fd, a->sbuf + a->nsbuf, sizeof a->sbuf - 1 - a->nsbuf);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                        log_warn("node %s: the dataset stager stopped: job steps get no datasets here", a->node);
                        (void) close(a->stager_fd);
                        a->stager_fd = -1;
                }
                if (r <= 0)
                        break;
                a->nsbuf += (size_t) r;
                char *nl;
                while ((nl = memchr(a->sbuf, '\n', a->nsbuf))) {
                        *nl = '\0';
                        struct gw_cache_staged st;
                        if (gw_cache_staged_parse(a->sbuf, &st) == 0 && st.slurm_job) {
                                if (a->n_staged == GW_AGENT_MAX_STAGED)
                                        memmove(a->staged, a->staged + 1, --a->n_staged * sizeof *a->staged);
                                a->staged[a->n_staged++] = st;
                        }
                        size_t used = (size_t) (nl - a->sbuf) + 1;
                        memmove(a->sbuf, nl + 1, a->nsbuf - used);
                        a->nsbuf -= used;
                }
                if (a->nsbuf == sizeof a->sbuf - 1)
                        a->nsbuf = 0;
        }
        return a->n_staged != before || (before == GW_AGENT_MAX_STAGED && a->nsbuf);
}

static void one_round(struct agent *a) {
        char why[256] = "";
        (void) read_staged(a);
        struct gw_snapshot *s = gw_snapshot_take(a->lib, a->n_gpus);
        _cleanup_free_ char *body = snapshot_body(a, s);
        gw_snapshot_free(s);
        int r = body ? post(a, body, why, sizeof why) : -ENOMEM;
        if (r == 0)
                a->n_xids = a->n_staged = 0; /* told */
        if (r < 0 && strcmp(why, a->last_error)) {
                log_warn("node %s: snapshot not delivered: %s", a->node, why[0] ? why : strerror(-r));
                snprintf(a->last_error, sizeof a->last_error, "%s", why);
        } else if (r == 0 && a->last_error[0]) {
                log_info("node %s: snapshots delivered again", a->node);
                a->last_error[0] = '\0';
        }
}

static gw_usec_t mono_of(const struct timespec *t) {
        return (gw_usec_t) t->tv_sec * GW_USEC_PER_SEC + t->tv_nsec / 1000;
}

/* Until the next round (next, monotonic): NVML's Xid events, kept for the next snapshot, and
 * the stager's records.  True when one came (the caller posts at once).  Waits in steps of at
 * most half a second so that a stop signal is seen; without either it only sleeps. */
static bool wait_xids(struct agent *a, const struct timespec *next) {
        while (!stopping) {
                gw_usec_t left = mono_of(next) - gw_clock_mono();
                if (left <= 0)
                        return false;
                /* A staging record is posted at once too: its job may end within the interval. */
                if (a->stager_fd >= 0 && !a->events) {
                        struct pollfd p = { .fd = a->stager_fd, .events = POLLIN };
                        unsigned ms = (unsigned) (left / GW_USEC_PER_MSEC) + 1;
                        if (poll(&p, 1, ms > 500 ? 500 : (int) ms) > 0 && read_staged(a))
                                return true;
                        continue;
                }
                if (!a->events) {
                        /* EINTR: a stop signal; a deadline already past: the next round at once. */
                        (void) clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL);
                        return false;
                }
                struct gw_nvml_event ev;
                unsigned ms = (unsigned) (left / GW_USEC_PER_MSEC) + 1;
                int r = gw_gpu_wait_event(a->lib, ms > 500 ? 500 : ms, &ev);
                if (r == -ETIMEDOUT) {
                        if (read_staged(a))
                                return true;
                        continue;
                }
                if (r < 0) {
                        log_warn("node %s: %s: Xids are not reported", a->node,
                                 r == -ENOTSUP ? "NVML delivers no events here" : "NVML's events failed");
                        a->events = false;
                        continue;
                }
                if (!(ev.type & 0x8) || ev.index >= a->n_gpus) /* ECC counts are not Xids */
                        continue;
                log_warn("node %s: Xid %llu on GPU %u", a->node, ev.xid, ev.index);
                if (a->n_xids < GW_AGENT_MAX_XIDS)
                        /* Beyond the controller's bound, NVML's own "unknown Xid" (999): a
                         * refused snapshot would keep the Xid, and be refused, for ever. */
                        a->xids[a->n_xids++] =
                                (struct agent_xid){ ev.index, ev.xid > 1000000 ? 999 : (unsigned) ev.xid };
                return true;
        }
        return false;
}

static bool is_agent(int argc, char **argv) {
        for (int i = 1; i < argc; i++)
                if (!strcmp(argv[i], "--agent"))
                        return true;
        return false;
}

int gw_agent_main(int argc, char **argv) {
        if (!is_agent(argc, argv))
                return -1;
        static struct agent a;
        char why[512];
        int r = parse_args(&a, argc, argv, why, sizeof why);
        if (r != 0) {
                if (r < 0)
                        fprintf(stderr, "gpuwardd: error: %s\nTry 'gpuwardd --agent --help'.\n", why);
                return r > 0 ? 0 : 2;
        }
        gw_log_set_level(GW_LOG_INFO);
        struct sigaction sa = { .sa_handler = on_stop };
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGINT, &sa, NULL);
        (void) signal(SIGPIPE, SIG_IGN);
        if (open_gpus(&a) < 0)
                return 1;
        a.stager_fd = -1;
        if (a.stage.dir) {
                a.stager = gw_cache_node_spawn(&a.stage, &a.stager_fd, why, sizeof why);
                if (a.stager < 0) {
                        log_err("node %s: %s", a.node, why);
                        a.lib = gw_gpu_close(a.lib);
                        return 1;
                }
        }
        bool v6 = strchr(a.host, ':');
        log_info("agent for node %s: %u GPU%s, posting to http://%s%s%s:%s%s every %lld s", a.node, a.n_gpus,
                 a.n_gpus == 1 ? "" : "s", v6 ? "[" : "", a.host, v6 ? "]" : "", a.port, a.path,
                 (long long) (a.interval / GW_USEC_PER_SEC));
        struct timespec next;
        clock_gettime(CLOCK_MONOTONIC, &next);
        while (!stopping) {
                one_round(&a);
                /* After the snapshot, which must not wait for it. */
                if (a.scratch_dir && gw_clock_mono() >= a.next_sweep) {
                        (void) gw_scratch_sweep(a.scratch_dir);
                        a.next_sweep = gw_clock_mono() + SCRATCH_SWEEP_EVERY;
                }
                next.tv_sec += a.interval / GW_USEC_PER_SEC;
                /* An Xid is posted at once rather than at the next round: the controller
                 * drains the node before Slurm places another job there. */
                if (wait_xids(&a, &next))
                        next = (struct timespec){ 0 };
                if (!next.tv_sec)
                        clock_gettime(CLOCK_MONOTONIC, &next);
        }
        log_info("agent for node %s: stopping", a.node);
        if (a.stager > 0) {
                (void) kill(a.stager, SIGTERM);
                /* Its loop sees the stop within a tick; one that does not is not waited for
                 * for ever: the agent's own stop must end. */
                gw_usec_t until = gw_clock_mono() + 5 * GW_USEC_PER_SEC;
                pid_t w;
                while ((w = waitpid(a.stager, NULL, WNOHANG)) == 0 && gw_clock_mono() < until)
                        (void) nanosleep(&(struct timespec){ 0, 20 * 1000 * 1000 }, NULL);
                if (w == 0) {
                        log_warn("node %s: the dataset stager did not stop in 5 s: SIGKILL", a.node);
                        (void) kill(a.stager, SIGKILL);
                        (void) waitpid(a.stager, NULL, 0);
                }
        }
        a.lib = gw_gpu_close(a.lib);
        return 0;
}
