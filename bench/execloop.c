/* The floor under the dispatch gap: runs the stamp N times with nothing between one job's
 * exit and the next start but a wait, a vfork and an exec; with LOOPS > 1, that many such
 * loops side by side (as 4 GPUs run 4 jobs), each stamping its number where a job stamps
 * its GPU.  What gpuward's gap adds to this is the scheduler's and the supervisor's own
 * cost; what this takes is the machine's (process exit, exec, page faults, the cores).
 *
 *   gw-bench-execloop N STAMP STAMPFILE [LOOPS] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* One run: 0 when the stamp exited 0.  A function of its own so that nothing of the loop
 * lives across the vfork. */
static int run_once(char **job) {
        pid_t pid = vfork();
        if (pid == 0) {
                execv(job[0], job);
                _exit(127);
        }
        int status;
        return pid > 0 && waitpid(pid, &status, 0) == pid && status == 0 ? 0 : -1;
}

static int run_loop(long n, char *stamp, char *file) {
        char *job[] = { stamp, file, NULL };
        for (long i = 0; i < n; i++)
                if (run_once(job) < 0) {
                        perror("gw-bench-execloop: the stamp failed");
                        return 1;
                }
        return 0;
}

int main(int argc, char **argv) {
        if (argc != 4 && argc != 5) {
                fprintf(stderr, "usage: gw-bench-execloop N STAMP STAMPFILE [LOOPS]\n");
                return 2;
        }
        long n = strtol(argv[1], NULL, 10), loops = argc == 5 ? strtol(argv[4], NULL, 10) : 1;
        if (n < 1 || loops < 1 || loops > 64) {
                fprintf(stderr, "gw-bench-execloop: N >= 1 and 1 <= LOOPS <= 64\n");
                return 2;
        }
        for (long k = 0; k < loops; k++) {
                pid_t pid = fork();
                if (pid < 0) {
                        perror("gw-bench-execloop: fork");
                        return 1;
                }
                if (pid == 0) {
                        char id[24];
                        snprintf(id, sizeof id, "%ld", k);
                        setenv("CUDA_VISIBLE_DEVICES", id, 1);
                        _exit(run_loop(n / loops, argv[2], argv[3]));
                }
        }
        int failed = 0, status;
        while (wait(&status) > 0)
                failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        return failed;
}
