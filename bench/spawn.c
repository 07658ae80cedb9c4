/* Separate processes, as many at a time as LANES: runs COMMAND N times in all and prints
 * "N SECONDS".  It is what `xargs -P LANES` does, with vfork (as posix_spawn) instead of fork,
 * and no shell or interpreter in between, so that what a run of `gpuward submit` costs is
 * measured against what a run of `true` costs, not against the harness.  Each run's output
 * goes to /dev/null; any run that fails ends the whole with its status.
 *
 *   gw-bench-spawn N LANES COMMAND [ARGS...] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A function of its own so that nothing of the caller lives across the vfork. */
static pid_t start(char **cmd, int devnull) {
        pid_t pid = vfork();
        if (pid == 0) {
                if (dup2(devnull, 1) < 0)
                        _exit(126);
                execvp(cmd[0], cmd);
                _exit(127);
        }
        return pid;
}

static double mono(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
        if (argc < 4) {
                fprintf(stderr, "usage: gw-bench-spawn N LANES COMMAND [ARGS...]\n");
                return 2;
        }
        char *end1, *end2;
        long n = strtol(argv[1], &end1, 10), lanes = strtol(argv[2], &end2, 10);
        if (*end1 || *end2 || n < 1 || lanes < 1 || lanes > 64) {
                fprintf(stderr, "gw-bench-spawn: N >= 1 and 1 <= LANES <= 64\n");
                return 2;
        }
        int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (devnull < 0) {
                perror("gw-bench-spawn: /dev/null");
                return 1;
        }
        double t0 = mono();
        long started = 0, done = 0, running = 0;
        while (done < n) {
                while (running < lanes && started < n) {
                        if (start(argv + 3, devnull) < 0) {
                                perror("gw-bench-spawn: vfork");
                                while (running-- > 0)
                                        (void) wait(NULL);
                                return 1;
                        }
                        started++, running++;
                }
                int status;
                if (wait(&status) < 0) {
                        perror("gw-bench-spawn: wait");
                        return 1;
                }
                running--, done++;
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        fprintf(stderr, "gw-bench-spawn: run %ld of %s failed (status 0x%x)\n", done, argv[3], status);
                        while (running-- > 0)
                                (void) wait(NULL);
                        return 1;
                }
        }
        printf("%ld %.6f\n", n, mono() - t0);
        return 0;
}
