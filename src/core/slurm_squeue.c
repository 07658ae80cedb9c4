/* squeue's lines as the cluster executor asks for them (core/slurm.h), and the wait status
 * an ended Slurm job's attempt carries.  Pure. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/slurm.h"

/* The field of [p, end) up to the next '|' (or end when last), trimmed. */
static const char *field(const char *p, const char *end, bool last, const char **ret_start, size_t *ret_len) {
        const char *bar = last ? end : memchr(p, '|', (size_t) (end - p));
        if (!bar)
                return NULL;
        const char *s = p, *e = bar;
        while (s < e && (*s == ' ' || *s == '\t'))
                s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
                e--;
        *ret_start = s;
        *ret_len = (size_t) (e - s);
        return last ? end : bar + 1;
}

/* Copies a field into buf: 0; -EINVAL when it does not fit and may not be cut. */
static int copy(char *buf, size_t n, const char *s, size_t len, bool cut_ok) {
        if (len >= n && !cut_ok)
                return -EINVAL;
        snprintf(buf, n, "%.*s", (int) (len < n ? len : n - 1), s);
        return 0;
}

int gw_slurm_squeue_parse(const char *line, size_t len, struct gw_slurm_squeue_row *ret) {
        const char *f[5];
        size_t l[5];
        if (!line || memchr(line, '\0', len)) /* a NUL would cut a field short unseen */
                return -EINVAL;
        const char *p = line, *end = line + len;
        for (int i = 0; i < 5; i++)
                if (!(p = field(p, end, i == 4, &f[i], &l[i])))
                        return -EINVAL;
        if (l[0] == 0 || l[0] > 10 || memchr(f[4], '|', l[4]))
                return -EINVAL;
        uint64_t id = 0;
        for (size_t i = 0; i < l[0]; i++) {
                if (f[0][i] < '0' || f[0][i] > '9')
                        return -EINVAL;
                id = id * 10 + (uint64_t) (f[0][i] - '0');
        }
        if (id == 0 || id > UINT32_MAX)
                return -EINVAL;
        struct gw_slurm_squeue_row r = { .job_id = (uint32_t) id };
        if (l[1] == 0 || copy(r.state, sizeof r.state, f[1], l[1], false) < 0 ||
            copy(r.exit_status, sizeof r.exit_status, f[2], l[2], false) < 0)
                return -EINVAL;
        (void) copy(r.nodes, sizeof r.nodes, f[3], l[3], true);
        (void) copy(r.reason, sizeof r.reason, f[4], l[4], true);
        *ret = r;
        return 0;
}

int gw_slurm_end_status(const struct gw_slurm_state *st, const char *exit_status) {
        char *end = NULL;
        long status = exit_status ? strtol(exit_status, &end, 10) : 0;
        bool known = exit_status && end != exit_status && *end == '\0' && status > 0 && status <= 0xffff;
        switch (st->state) {
        case GW_JOB_COMPLETED:
                return 0;
        case GW_JOB_CANCELLED:
                return SIGTERM;
        case GW_JOB_FAILED:
                if (st->cls == GW_FAILURE_USER_ERROR)
                        return known ? (int) status : 1 << 8; /* FAILED says it did not exit 0 */
                return SIGKILL;
        default:
                return SIGKILL;
        }
}
