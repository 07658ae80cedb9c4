/* The tag of an attempt in its Slurm job's comment (core/slurm.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/slurm.h"

int gw_slurm_tag_format(int64_t job, int attempt, char *buf, size_t n) {
        if (job <= 0 || attempt < 1 || !buf)
                return -EINVAL;
        int k = snprintf(buf, n, "gpuward:%" PRId64 ":%d", job, attempt);
        return k < 0 || (size_t) k >= n ? -EINVAL : 0;
}

/* A plain decimal number of at most max, from exactly len bytes. */
static int number(const char *p, size_t len, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;
        if (len == 0 || len > 19)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                if (p[i] < '0' || p[i] > '9')
                        return -EINVAL;
                v = v * 10 + (uint64_t) (p[i] - '0');
        }
        if (v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static const char *trim(const char *p, const char *end, size_t *len) {
        while (p < end && *p == ' ')
                p++;
        while (end > p && (end[-1] == ' ' || end[-1] == '\r' || end[-1] == '\n'))
                end--;
        *len = (size_t) (end - p);
        return p;
}

int gw_slurm_tag_parse(const char *line, size_t len, struct gw_slurm_tagged *ret) {
        if (!line || !ret || memchr(line, '\0', len))
                return -EINVAL;
        const char *end = line + len, *bar1 = memchr(line, '|', len);
        const char *bar2 = bar1 ? memchr(bar1 + 1, '|', (size_t) (end - bar1 - 1)) : NULL;
        if (!bar2)
                return -EINVAL;
        size_t l_id, l_uid, l_tag;
        const char *id = trim(line, bar1, &l_id), *uid = trim(bar1 + 1, bar2, &l_uid);
        const char *tag = trim(bar2 + 1, end, &l_tag);
        uint64_t v_id, v_uid, v_job, v_att;
        if (memchr(id, '_', l_id) || memchr(id, '+', l_id))
                return -ENOENT; /* an array task or a heterogeneous job: never gpuward's */
        if (number(id, l_id, UINT32_MAX, &v_id) < 0 || v_id == 0 || number(uid, l_uid, UINT32_MAX, &v_uid) < 0)
                return -EINVAL;
        static const char prefix[] = "gpuward:";
        if (l_tag < sizeof prefix || memcmp(tag, prefix, sizeof prefix - 1))
                return -ENOENT;
        const char *j = tag + sizeof prefix - 1, *tend = tag + l_tag;
        const char *colon = memchr(j, ':', (size_t) (tend - j));
        if (!colon || number(j, (size_t) (colon - j), INT64_MAX, &v_job) < 0 || v_job == 0 ||
            number(colon + 1, (size_t) (tend - colon - 1), INT32_MAX, &v_att) < 0 || v_att == 0)
                return -ENOENT; /* a comment that only looks like ours */
        *ret = (struct gw_slurm_tagged){ .slurm_id = (uint32_t) v_id,
                                         .uid = (uint32_t) v_uid,
                                         .job = (int64_t) v_job,
                                         .attempt = (int) v_att };
        return 0;
}
