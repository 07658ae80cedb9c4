/* Which Slurm job and step a process is in, from the text of /proc/PID/cgroup.  Pure. */
#include "core/slurm.h"

#include <string.h>

#include "base/nametable.h"

static const char *const step_kind_names[_GW_SLURM_STEP_KIND_MAX] = {
        [GW_SLURM_STEP_NONE] = "none",     [GW_SLURM_STEP_NUMBERED] = "numbered",       [GW_SLURM_STEP_BATCH] = "batch",
        [GW_SLURM_STEP_EXTERN] = "extern", [GW_SLURM_STEP_INTERACTIVE] = "interactive", [GW_SLURM_STEP_OTHER] = "other",
};

const char *gw_slurm_step_kind_name(enum gw_slurm_step_kind k) { return GW_NAMETABLE_NAME(step_kind_names, k); }

/* A piece of the text: not NUL-terminated. */
struct span {
        const char *p;
        size_t n;
};

static bool span_is(struct span s, const char *lit) {
        size_t l = strlen(lit);
        return s.n == l && memcmp(s.p, lit, l) == 0;
}

static bool span_starts(struct span s, const char *lit) {
        size_t l = strlen(lit);
        return s.n >= l && memcmp(s.p, lit, l) == 0;
}

static bool span_ends(struct span s, const char *lit) {
        size_t l = strlen(lit);
        return s.n >= l && memcmp(s.p + s.n - l, lit, l) == 0;
}

/* Decimal digits only (no sign, no spaces), at most 2^32-1. */
static int span_u32(struct span s, uint32_t *ret) {
        uint64_t v = 0;
        if (s.n == 0 || s.n > 10)
                return -EINVAL;
        for (size_t i = 0; i < s.n; i++) {
                if (s.p[i] < '0' || s.p[i] > '9')
                        return -EINVAL;
                v = v * 10 + (uint64_t) (s.p[i] - '0');
        }
        if (v > UINT32_MAX)
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

/* The next '/'-separated segment of path from *pos; empty segments (a doubled '/') are
 * skipped.  False at the end. */
static bool next_segment(struct span path, size_t *pos, struct span *seg) {
        while (*pos < path.n && path.p[*pos] == '/')
                (*pos)++;
        if (*pos >= path.n)
                return false;
        size_t start = *pos;
        while (*pos < path.n && path.p[*pos] != '/')
                (*pos)++;
        *seg = (struct span){ path.p + start, *pos - start };
        return true;
}

static int copy_node(struct span node, char out[GW_SLURM_NODE_MAX]) {
        if (node.n >= GW_SLURM_NODE_MAX)
                return -EINVAL;
        memcpy(out, node.p, node.n);
        out[node.n] = '\0';
        return 0;
}

static void parse_step(struct span seg, struct gw_slurm_proc *p) {
        struct span name = { seg.p + 5, seg.n - 5 }; /* after "step_" */
        if (span_is(name, "batch"))
                p->step_kind = GW_SLURM_STEP_BATCH;
        else if (span_is(name, "extern"))
                p->step_kind = GW_SLURM_STEP_EXTERN;
        else if (span_is(name, "interactive"))
                p->step_kind = GW_SLURM_STEP_INTERACTIVE;
        else if (span_u32(name, &p->step) == 0)
                p->step_kind = GW_SLURM_STEP_NUMBERED;
        else
                p->step_kind = GW_SLURM_STEP_OTHER;
}

/* After the anchor directory: [uid_U/]job_J[/step_S[/...]].  1 when found, -EINVAL when it
 * does not parse, 0 when the anchor was not a job's (v2's "slurmstepd.scope/system"). */
static int parse_after_anchor(struct span path, size_t pos, bool want_uid, struct gw_slurm_proc *p) {
        struct span seg;
        if (want_uid) {
                if (!next_segment(path, &pos, &seg) || !span_starts(seg, "uid_"))
                        return 0;
                if (span_u32((struct span){ seg.p + 4, seg.n - 4 }, &p->uid) < 0)
                        return -EINVAL;
                p->has_uid = true;
        }
        if (!next_segment(path, &pos, &seg) || !span_starts(seg, "job_"))
                return 0;
        if (span_u32((struct span){ seg.p + 4, seg.n - 4 }, &p->job_id) < 0 || p->job_id == 0)
                return -EINVAL;
        p->step_kind = GW_SLURM_STEP_NONE;
        if (next_segment(path, &pos, &seg) && span_starts(seg, "step_"))
                parse_step(seg, p);
        return 1;
}

/* One cgroup path: 1 and *p when it is a Slurm job's, 0 when not, -EINVAL when it does not
 * parse.  The anchor is the last directory Slurm names after itself, so that a prefix
 * (a container's cgroup, a systemd slice) does not matter. */
static int parse_path(struct span path, bool v2, struct gw_slurm_proc *p) {
        struct span seg;
        size_t pos = 0;
        while (next_segment(path, &pos, &seg)) {
                struct span node = { seg.p, 0 };
                bool anchor = false;
                if (v2 && span_is(seg, "slurmstepd.scope"))
                        anchor = true;
                else if (v2 && span_ends(seg, "_slurmstepd.scope")) {
                        anchor = true;
                        node.n = seg.n - strlen("_slurmstepd.scope");
                } else if (!v2 && span_is(seg, "slurm"))
                        anchor = true;
                else if (!v2 && span_starts(seg, "slurm_")) {
                        anchor = true;
                        node = (struct span){ seg.p + 6, seg.n - 6 };
                }
                if (!anchor)
                        continue;
                *p = (struct gw_slurm_proc){ .v2 = v2 };
                int r = parse_after_anchor(path, pos, !v2, p);
                if (r <= 0)
                        return r;
                return copy_node(node, p->node) < 0 ? -EINVAL : 1;
        }
        return 0;
}

/* "ID:CONTROLLERS:PATH": the path after the second ':'; v2 is the line with no controllers
 * ("0::/..."). */
static bool split_line(struct span line, struct span *path, bool *v2) {
        const char *c1 = memchr(line.p, ':', line.n);
        if (!c1)
                return false;
        size_t rest = line.n - (size_t) (c1 + 1 - line.p);
        const char *c2 = memchr(c1 + 1, ':', rest);
        if (!c2)
                return false;
        *v2 = c2 == c1 + 1;
        *path = (struct span){ c2 + 1, line.n - (size_t) (c2 + 1 - line.p) };
        return true;
}

int gw_slurm_proc_from_cgroup(const char *text, size_t len, struct gw_slurm_proc *ret) {
        struct gw_slurm_proc best = { 0 }, cur;
        bool found = false;
        size_t i = 0;
        if (!text)
                return -EINVAL;
        while (i < len) {
                const char *nl = memchr(text + i, '\n', len - i);
                size_t end = nl ? (size_t) (nl - text) : len;
                struct span line = { text + i, end - i }, path;
                bool v2;
                i = end + 1;
                if (!split_line(line, &path, &v2))
                        continue;
                int r = parse_path(path, v2, &cur);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                if (found && cur.job_id != best.job_id)
                        return -EINVAL;
                if (!found || (best.step_kind == GW_SLURM_STEP_NONE && cur.step_kind != GW_SLURM_STEP_NONE))
                        best = cur;
                found = true;
        }
        if (!found)
                return -ENOENT;
        *ret = best;
        return 0;
}
