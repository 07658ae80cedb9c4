/* The benchmark job: records when it was exec'ed and when it exits, and on which GPU, with
 * one O_APPEND write (atomic for lines this short), so the dispatch gap can be measured
 * from the jobs' own clocks. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
        double t0 = now();
        const char *out = argc > 1 ? argv[1] : getenv("GW_STAMP_FILE");
        if (!out)
                return 2;
        const char *gpus = getenv("CUDA_VISIBLE_DEVICES");
        char line[256];
        int n = snprintf(line, sizeof line, "%s %.6f %.6f\n", gpus ? gpus : "-", t0, now());
        int fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, line, (size_t) n) != n)
                return 1;
        return close(fd) < 0;
}
