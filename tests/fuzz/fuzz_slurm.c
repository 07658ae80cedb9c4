/* libFuzzer target: the Slurm translations (src/core/slurm.h).  The input is read as
 * /proc/PID/cgroup text and as a line of squeue (by length, not NUL-terminated), as a state
 * and a pending reason,
 * and, split at NULs, as a job's command line for sbatch, whose --wrap text is then read
 * back as /bin/sh would read single-quoted words: it must give the same words. */
#include <errno.h>

#include "core/directive.h"
#include "core/jobrec.h"
#include "core/slurm.h"
#include "fuzz_common.h"

static void cgroup(const uint8_t *data, size_t size) {
        char *text = fuzz_memdup(data, size);
        struct gw_slurm_proc p;
        int r = gw_slurm_proc_from_cgroup(text, size, &p);
        FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL);
        if (r == 0) {
                FUZZ_CHECK(p.job_id != 0);
                FUZZ_CHECK(gw_slurm_step_kind_name(p.step_kind) != NULL);
                FUZZ_CHECK(memchr(p.node, '\0', sizeof p.node) != NULL);
                FUZZ_CHECK(p.step_kind == GW_SLURM_STEP_NUMBERED || p.step == 0);
        }
        free(text);
}

static void squeue(const uint8_t *data, size_t size) {
        char *text = fuzz_memdup(data, size);
        struct gw_slurm_squeue_row row;
        int r = gw_slurm_squeue_parse(text, size, &row);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r == 0) {
                FUZZ_CHECK(row.job_id != 0 && row.state[0]);
                FUZZ_CHECK(memchr(row.nodes, '\0', sizeof row.nodes) && memchr(row.reason, '\0', sizeof row.reason));
                struct gw_slurm_state st;
                if (gw_slurm_state_parse(row.state, &st) == 0 && gw_job_state_is_final(st.state)) {
                        int status = gw_slurm_end_status(&st, row.exit_status);
                        FUZZ_CHECK(status >= 0 && status <= 0xffff);
                        FUZZ_CHECK((status == 0) == (st.state == GW_JOB_COMPLETED));
                }
        }
        free(text);
}

static void words(const uint8_t *data, size_t size) {
        char *text = fuzz_strndup(data, size);
        struct gw_slurm_state s;
        struct gw_slurm_reason r;
        if (gw_slurm_state_parse(text, &s) == 0)
                FUZZ_CHECK(s.what && gw_job_state_name(s.state));
        int ret = gw_slurm_reason_parse(text, &r);
        FUZZ_CHECK(ret == 0 || ret == 1 || ret == -EINVAL);
        if (ret >= 0)
                FUZZ_CHECK(r.what && gw_job_reason_name(r.reason));
        free(text);
}

/* Reads "exec 'w1' 'w2'..." back into words; each must equal argv's. */
static void check_wrap(const char *wrap, char **argv) {
        const char *p = wrap;
        FUZZ_CHECK(strncmp(p, "exec", 4) == 0);
        p += 4;
        for (size_t i = 0; argv[i]; i++) {
                FUZZ_CHECK(p[0] == ' ' && p[1] == '\'');
                p += 2;
                size_t n = 0, len = strlen(argv[i]);
                for (;;) {
                        if (p[0] == '\'' && strncmp(p, "'\\''", 4) == 0) {
                                FUZZ_CHECK(n < len && argv[i][n] == '\'');
                                n++;
                                p += 4;
                        } else if (p[0] == '\'') {
                                p++;
                                break;
                        } else {
                                FUZZ_CHECK(*p && n < len && argv[i][n] == *p);
                                n++;
                                p++;
                        }
                }
                FUZZ_CHECK(n == len);
        }
        FUZZ_CHECK(*p == '\0');
}

static void sbatch(const uint8_t *data, size_t size) {
        char *buf = fuzz_strndup(data, size); /* with embedded NULs kept: split at them */
        char *argv[9] = { 0 }, *end;
        size_t n = 0;
        for (char *p = buf; n < 8 && p <= buf + size; p = end + 1) {
                end = memchr(p, '\0', (size_t) (buf + size - p) + 1);
                argv[n++] = p;
        }
        /* The first piece also serves as the name and the output path. */
        struct gw_job j = { .id = 7,
                            .name = argv[0],
                            .output = argv[0],
                            .argv = argv + 1,
                            .ngpus = size ? data[0] % 20 : 0,
                            .time_limit = (gw_usec_t) size * 7919 };
        struct gw_sbatch_opts o = { .gpus_per_node = 4, .max_nodes = 2 };
        char **v = NULL, why[128];
        if (gw_slurm_sbatch_argv(&j, &o, &v, why, sizeof why) == 0) {
                size_t k = gw_strv_length(v);
                FUZZ_CHECK(k >= 4 && strcmp(v[0], "sbatch") == 0);
                FUZZ_CHECK(strncmp(v[k - 1], "--wrap=", 7) == 0);
                check_wrap(v[k - 1] + 7, argv + 1);
                gw_strv_free(v);
        } else
                FUZZ_CHECK(v == NULL && why[0]);
        free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 64 * 1024)
                return 0;
        cgroup(data, size);
        squeue(data, size);
        words(data, size);
        sbatch(data, size);
        return 0;
}
