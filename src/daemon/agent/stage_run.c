/* gpuwardd --stage-run SOCKET DATASET COMMAND [ARG...] (agent.h): what a Slurm batch job of a
 * job submitted with --dataset runs on the node Slurm picked (gw_slurm_sbatch_argv wraps the
 * command in it).  It asks the node's agent on SOCKET ("%n": this node's name) for DATASET,
 * prints the copy's progress into the job's output, and execs the command with
 * GPUWARD_DATASET_DIR (and GPUWARD_DATA_YAML) set.  The connection stays open in the command
 * (the descriptor is inherited): the agent keeps the copy pinned until it closes, which is when
 * the command's processes end.  A mode of gpuwardd, as the agent is, so that the batch script
 * names one binary whose path the controller knows. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/time.h"
#include "core/failure.h"
#include "core/slurm.h"
#include "daemon/agent/agent.h"

/* What the job ends with when it could not start: the backend sees them as the job's exit. */
#define EXIT_DATA 65 /* the dataset: not allowed, unreadable, not a dataset (EX_DATAERR) */
#define EXIT_NODE GW_FAILURE_NODE_EXIT /* no stager on this node, or it failed (EX_UNAVAILABLE) */

/* The node's failure, told in the job's output on the line the failure classifier reads as
 * such (core/failure.h): the attempt is lost and retried elsewhere, not the user's error. */
__attribute__((format(printf, 1, 2))) static int node_failed(const char *fmt, ...) {
        va_list ap;
        fflush(stdout);
        fputs(GW_FAILURE_NODE_MARK, stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return EXIT_NODE;
}

int gw_agent_stage_path(const char *pattern, const char *node, char *buf, size_t n) {
        size_t o = 0;
        for (const char *p = pattern; *p; p++) {
                const char *add = p;
                size_t l = 1;
                if (*p == '%') {
                        if (p[1] == 'n')
                                add = node, l = strlen(node);
                        else if (p[1] != '%')
                                return -EINVAL;
                        p++;
                }
                if (o + l >= n)
                        return -ENAMETOOLONG;
                memcpy(buf + o, add, l);
                o += l;
        }
        buf[o] = '\0';
        return 0;
}

static int stage_connect(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        /* Not close-on-exec: the command inherits it, and the pin lasts as long as it runs. */
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                int e = errno;
                if (fd >= 0)
                        (void) close(fd);
                return -e;
        }
        return fd;
}

/* The stager's answer, line by line, until OK or ERR; the progress printed as it comes. */
static int await(int fd, const char *dataset, char *dir, size_t dn, char *yaml, size_t yn) {
        char buf[8192];
        size_t len = 0;
        FILE *s = fdopen(dup(fd), "r");
        if (!s)
                return node_failed("dataset %s: cannot read this node's agent's answer: %s", dataset, strerror(errno));
        int r = EXIT_NODE;
        bool answered = false;
        while (fgets(buf, sizeof buf, s)) {
                len = strcspn(buf, "\n");
                buf[len] = '\0';
                unsigned long long done, total;
                if (sscanf(buf, "P %llu %llu", &done, &total) == 2) {
                        printf("staging dataset: %.1f of %.1f MB, %d%%\n", (double) done / 1e6, (double) total / 1e6,
                               total ? (int) (done * 100 / total) : 100);
                        fflush(stdout);
                } else if (!strncmp(buf, "Y /", 3))
                        snprintf(yaml, yn, "%s", buf + 2);
                else if (!strncmp(buf, "OK /", 4)) {
                        snprintf(dir, dn, "%s", buf + 3);
                        r = 0;
                        answered = true;
                        break;
                } else if (!strncmp(buf, "ERR node ", 9)) {
                        r = node_failed("dataset %s could not be staged on this node: %s", dataset, buf + 9);
                        answered = true;
                        break;
                } else if (!strncmp(buf, "ERR ", 4)) {
                        const char *why = strncmp(buf, "ERR data ", 9) ? buf + 4 : buf + 9;
                        fprintf(stderr, "gpuward: dataset %s could not be staged on this node: %s\n", dataset, why);
                        r = EXIT_DATA;
                        answered = true;
                        break;
                }
        }
        if (!answered)
                (void) node_failed("dataset %s: this node's agent closed the connection without an answer", dataset);
        fclose(s);
        return r;
}

int gw_stage_run_main(int argc, char **argv) {
        if (argc < 2 || strcmp(argv[1], "--stage-run"))
                return -1;
        if (argc < 5) {
                fputs("Usage: gpuwardd --stage-run SOCKET DATASET COMMAND [ARG...]\n"
                      "(the batch script of a Slurm job with --dataset runs it; see docs/CLUSTER.md)\n",
                      stderr);
                return 2;
        }
        const char *dataset = argv[3];
        char node[GW_SLURM_NODE_MAX] = "", path[512];
        const char *env = getenv("SLURMD_NODENAME");
        if (env && strlen(env) < sizeof node)
                snprintf(node, sizeof node, "%s", env);
        else if (gethostname(node, sizeof node - 1) == 0)
                node[strcspn(node, ".")] = '\0';
        if (gw_agent_stage_path(argv[2], node, path, sizeof path) < 0 || strchr(dataset, '\n')) {
                fprintf(stderr, "gpuward: --stage-run: bad socket path %s or dataset\n", argv[2]);
                return 2;
        }
        int fd = stage_connect(path);
        if (fd < 0) {
                return node_failed("no dataset stager listening at %s (%s): is gpuwardd --agent running on %s with "
                                   "--cache-dir? (dataset %s)",
                                   path, strerror(-fd), node, dataset);
        }
        gw_usec_t t0 = gw_clock_mono();
        char req[4200];
        int l = snprintf(req, sizeof req, "STAGE %s\n", dataset);
        if (l <= 0 || (size_t) l >= sizeof req || send(fd, req, (size_t) l, MSG_NOSIGNAL) != l) {
                return node_failed("dataset %s: cannot ask node %s's agent: %s", dataset, node,
                                   strerror(errno ? errno : EINVAL));
        }
        printf("staging dataset: %s on %s\n", dataset, node);
        fflush(stdout);
        char dir[4200] = "", yaml[4200] = "";
        int r = await(fd, dataset, dir, sizeof dir, yaml, sizeof yaml);
        if (r)
                return r;
        printf("staging dataset: ready in %.1f s: %s\n", (double) (gw_clock_mono() - t0) / 1e6, dir);
        fflush(stdout);
        if (setenv("GPUWARD_DATASET_DIR", dir, 1) < 0 || (yaml[0] && setenv("GPUWARD_DATA_YAML", yaml, 1) < 0))
                return node_failed("dataset %s: cannot set its environment: %s", dataset, strerror(errno));
        execvp(argv[4], argv + 4);
        fprintf(stderr, "gpuward: cannot run %s: %s\n", argv[4], strerror(errno));
        return 127;
}
