/* The cluster's GPU types as scontrol shows them, and the Slurm type of a MIG slice
 * (core/slurm.h).  Pure: the executor runs scontrol and hands in its output.
 *
 * Facts relied on (Slurm 22.05, seen on the test cluster of tests/cluster):
 *   - scontrol show node --oneliner prints each node on one line, its GPUs as
 *     "Gres=gpu:a100_1g.10gb:7" (typed), "Gres=gpu:4" (no type), several items comma-
 *     separated, an item followed by "(S:0-1)" where gres.conf binds it to sockets, and
 *     "Gres=(null)" for a node without any.  GresUsed= and GresDrain= are other fields.
 *   - A job's --gres=gpu:N takes GPUs of any type, slices included: a whole-GPU job is
 *     placed on a slice node unless kept off it. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "core/migplace.h"
#include "core/slurm.h"

void gw_slurm_gpus_clear(struct gw_slurm_gpus *g) {
        if (!g)
                return;
        for (size_t i = 0; i < g->n_slice_only; i++)
                free(g->slice_only[i]);
        free(g->slice_only);
        *g = (struct gw_slurm_gpus){ 0 };
}

/* "Ng.Mgb": digits, "g.", digits, "gb", nothing else (s[0..n-1]). */
static bool is_profile(const char *s, size_t n) {
        size_t i = 0, d = 0;
        while (i < n && isdigit((unsigned char) s[i]))
                i++, d++;
        if (!d || i + 2 > n || strncasecmp(s + i, "g.", 2) != 0)
                return false;
        i += 2;
        for (d = 0; i < n && isdigit((unsigned char) s[i]); i++)
                d++;
        return d && n - i == 2 && !strncasecmp(s + i, "gb", 2);
}

const char *gw_slurm_type_profile(const char *type) {
        if (!type)
                return NULL;
        const char *us = strrchr(type, '_');
        const char *tail = us ? us + 1 : type;
        return is_profile(tail, strlen(tail)) ? tail : NULL;
}

/* The value of field `name` ("Gres=") on line[0..n-1], where it starts a word: its start,
 * and its length in *len. */
static const char *field(const char *line, size_t n, const char *name, size_t *len) {
        size_t k = strlen(name);
        for (size_t i = 0; i + k <= n; i++) {
                if ((i > 0 && line[i - 1] != ' ') || memcmp(line + i, name, k) != 0)
                        continue;
                const char *v = line + i + k;
                size_t m = 0;
                while (v + m < line + n && v[m] != ' ')
                        m++;
                *len = m;
                return v;
        }
        return NULL;
}

static struct gw_slurm_gpu_type *type_of(struct gw_slurm_gpus *g, const char *name, size_t n) {
        for (size_t i = 0; i < g->n_types; i++)
                if (strlen(g->types[i].name) == n && !memcmp(g->types[i].name, name, n))
                        return &g->types[i];
        if (n == 0 || n >= GW_SLURM_TYPE_MAX || g->n_types == GW_SLURM_GPU_TYPES_MAX) {
                g->n_dropped++;
                return NULL;
        }
        struct gw_slurm_gpu_type *t = &g->types[g->n_types++];
        memcpy(t->name, name, n);
        t->name[n] = '\0';
        return t;
}

/* A node's GPUs, as gres items ("gpu:a100_1g.10gb:7(S:0)"): whether they are all slices. */
struct node_seen {
        bool whole, slices;
        struct gw_slurm_gpu_type *counted[GW_SLURM_GPU_TYPES_MAX]; /* its types, once each */
        size_t n_counted;
};

static void count_item(struct gw_slurm_gpus *g, const char *it, size_t n, struct node_seen *ns) {
        if (n < 4 || memcmp(it, "gpu:", 4) != 0)
                return; /* "gpu" alone counts nothing; other gres are not GPUs */
        it += 4, n -= 4;
        const char *colon = memchr(it, ':', n);
        const char *num = colon ? colon + 1 : it;
        size_t numlen = n - (size_t) (num - it);
        if (numlen == 0 || numlen > 6 || strspn(num, "0123456789") < numlen)
                return;
        unsigned count = (unsigned) strtoul(num, NULL, 10);
        if (!colon) {
                g->untyped += count;
                ns->whole |= count > 0;
                return;
        }
        size_t tn = (size_t) (colon - it);
        char name[GW_SLURM_TYPE_MAX];
        bool slice = false;
        if (tn < sizeof name) {
                memcpy(name, it, tn);
                name[tn] = '\0';
                slice = gw_slurm_type_profile(name) != NULL;
        }
        if (slice)
                ns->slices |= count > 0;
        else
                ns->whole |= count > 0; /* a type too long to keep is taken for whole GPUs */
        struct gw_slurm_gpu_type *t = type_of(g, it, tn);
        if (!t)
                return;
        t->count += count;
        for (size_t i = 0; i < ns->n_counted; i++)
                if (ns->counted[i] == t)
                        return;
        ns->counted[ns->n_counted++] = t;
        t->nodes++;
}

static void parse_line(struct gw_slurm_gpus *g, const char *line, size_t n) {
        size_t nlen, glen;
        const char *node = field(line, n, "NodeName=", &nlen);
        const char *gres = field(line, n, "Gres=", &glen);
        if (!node || !nlen || !gres)
                return;
        struct node_seen ns = { 0 };
        /* Items split at commas outside "(S:0,1)". */
        for (size_t i = 0, start = 0, depth = 0; i <= glen; i++) {
                char c = i < glen ? gres[i] : ',';
                if (c == '(')
                        depth++;
                else if (c == ')' && depth)
                        depth--;
                if (c != ',' || depth)
                        continue;
                size_t end = start;
                while (end < i && gres[end] != '(')
                        end++;
                count_item(g, gres + start, end - start, &ns);
                start = i + 1;
        }
        if (ns.slices && !ns.whole && nlen < GW_SLURM_NODE_MAX && g->n_slice_only < GW_SLURM_SLICE_NODES_MAX) {
                g->slice_only = gw_xrealloc(g->slice_only, (g->n_slice_only + 1) * sizeof *g->slice_only);
                char *s = gw_xmalloc(nlen + 1);
                memcpy(s, node, nlen);
                s[nlen] = '\0';
                g->slice_only[g->n_slice_only++] = s;
        }
}

int gw_slurm_gpus_parse(const char *text, size_t len, struct gw_slurm_gpus *ret) {
        if (!text || !ret || memchr(text, '\0', len))
                return -EINVAL;
        for (size_t i = 0; i < len;) {
                const char *nl = memchr(text + i, '\n', len - i);
                size_t n = nl ? (size_t) (nl - text) - i : len - i;
                parse_line(ret, text + i, n);
                i += n + 1;
        }
        return 0;
}

int gw_slurm_mig_type(const struct gw_slurm_gpus *g, const char *profile, const char **ret) {
        if (!g || !ret || !gw_mig_profile_valid(profile))
                return -EINVAL;
        const struct gw_slurm_gpu_type *best = NULL;
        for (size_t i = 0; i < g->n_types; i++) {
                const struct gw_slurm_gpu_type *t = &g->types[i];
                const char *p = gw_slurm_type_profile(t->name);
                if (!p || strcasecmp(p, profile) != 0)
                        continue;
                if (!best || t->count > best->count || (t->count == best->count && strcmp(t->name, best->name) < 0))
                        best = t;
        }
        if (!best)
                return -ENOENT;
        *ret = best->name;
        return 0;
}

const char *gw_slurm_gpus_words(const struct gw_slurm_gpus *g, char *buf, size_t n) {
        size_t len = 0;
        if (n == 0)
                return buf;
        buf[0] = '\0';
        for (size_t i = 0; i <= g->n_types; i++) {
                char one[GW_SLURM_TYPE_MAX + 64];
                if (i < g->n_types)
                        snprintf(one, sizeof one, "%s (%u on %u node%s)", g->types[i].name, g->types[i].count,
                                 g->types[i].nodes, g->types[i].nodes == 1 ? "" : "s");
                else if (g->untyped)
                        snprintf(one, sizeof one, "%u GPU%s of no type", g->untyped, g->untyped == 1 ? "" : "s");
                else
                        break;
                int r = snprintf(buf + len, n - len, "%s%s", len ? ", " : "", one);
                if (r < 0 || (size_t) r >= n - len) {
                        if (n > 4)
                                memcpy(buf + n - 4, "...", 4);
                        return buf;
                }
                len += (size_t) r;
        }
        if (!len)
                snprintf(buf, n, "no GPUs");
        return buf;
}
