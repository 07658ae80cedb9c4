/* One API client for the submission benchmark: N POST /api/v1/jobs over one keep-alive
 * connection on the Unix socket, one at a time, each answered before the next is sent.
 * Written in C so the client is not what is measured.
 *
 *   gw-bench-apiload SOCKET N JSON_BODY   → prints "N SECONDS" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Reads one response; returns its status, or -1.  Handles Content-Length bodies only (the
 * daemon always sends them). */
static int read_response(int fd, char *buf, size_t cap) {
        size_t len = 0;
        for (;;) {
                ssize_t n = read(fd, buf + len, cap - len - 1);
                if (n <= 0)
                        return -1;
                len += (size_t) n;
                buf[len] = '\0';
                char *hdr_end = strstr(buf, "\r\n\r\n");
                if (!hdr_end)
                        continue;
                char *cl = strcasestr(buf, "\r\nContent-Length:");
                size_t body = cl && cl < hdr_end ? strtoul(cl + 17, NULL, 10) : 0;
                if (len >= (size_t) (hdr_end + 4 - buf) + body)
                        return (int) strtol(buf + 9, NULL, 10);
        }
}

int main(int argc, char **argv) {
        if (argc != 4) {
                fprintf(stderr, "usage: gw-bench-apiload SOCKET N JSON_BODY\n");
                return 2;
        }
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", argv[1]);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                perror("connect");
                return 1;
        }
        long n = strtol(argv[2], NULL, 10);
        size_t blen = strlen(argv[3]);
        char req[65536], resp[65536];
        int rl = snprintf(req, sizeof req,
                          "POST /api/v1/jobs HTTP/1.1\r\nHost: gpuward\r\nContent-Type: application/json\r\n"
                          "Content-Length: %zu\r\n\r\n%s",
                          blen, argv[3]);
        double t0 = now();
        for (long i = 0; i < n; i++) {
                if (write(fd, req, (size_t) rl) != rl || read_response(fd, resp, sizeof resp) != 201) {
                        fprintf(stderr, "request %ld failed: %.200s\n", i, resp);
                        return 1;
                }
        }
        printf("%ld %.6f\n", n, now() - t0);
        return 0;
}
