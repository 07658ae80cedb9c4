/* The floor under the dispatch gap: runs the stamp N times one after another with nothing
 * between one job's exit and the next start but a wait, a vfork and an exec.  What gpuward's
 * 1-GPU gap adds to this is the scheduler's and the supervisor's own cost; what this takes
 * is the machine's (process exit, exec, page faults).
 *
 *   gw-bench-execloop N STAMP STAMPFILE */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
        if (argc != 4) {
                fprintf(stderr, "usage: gw-bench-execloop N STAMP STAMPFILE\n");
                return 2;
        }
        long n = strtol(argv[1], NULL, 10);
        char *job[] = { argv[2], argv[3], NULL };
        for (long i = 0; i < n; i++) {
                pid_t pid = vfork();
                if (pid == 0) {
                        execv(job[0], job);
                        _exit(127);
                }
                int status;
                if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0) {
                        perror("gw-bench-execloop: the stamp failed");
                        return 1;
                }
        }
        return 0;
}
