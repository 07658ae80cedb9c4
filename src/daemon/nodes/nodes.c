/* The nodes' snapshots (nodes.h): checked strictly, since an agent's token is all that
 * stands between a node and the controller's memory, and kept one per node. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/token.h"
#include "daemon/agent/agent.h"
#include "daemon/nodes/nodes.h"

struct check {
        char *field, *why;
        size_t field_len, why_len;
        size_t procs; /* processes so far, all GPUs together */
};

__attribute__((format(printf, 3, 4))) static int fail(struct check *c, const char *field, const char *fmt, ...) {
        snprintf(c->field, c->field_len, "%s", field);
        va_list ap;
        va_start(ap, fmt);
        int n = snprintf(c->why, c->why_len, "%s: ", field);
        if (n >= 0 && (size_t) n < c->why_len)
                vsnprintf(c->why + n, c->why_len - (size_t) n, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* Only the keys in known: a key the agent does not send is a mistake or a probe. */
static int only_keys(struct check *c, const json_t *o, const char *prefix, const char *const *known, size_t n) {
        const char *k;
        json_t *v;
        json_object_foreach ((json_t *) o, k, v) {
                size_t i = 0;
                while (i < n && strcmp(k, known[i]))
                        i++;
                if (i == n) {
                        char f[128];
                        snprintf(f, sizeof f, "%s%.64s", prefix, k[0] ? k : "\"\""); /* an empty key named too */
                        return fail(c, f, "not a field of a node's snapshot");
                }
        }
        return 0;
}

/* An integer from lo to hi, or null where nullable, copied into dst under key. */
static int get_int(struct check *c, const json_t *o, const char *key, const char *prefix, json_int_t lo, json_int_t hi,
                   bool nullable, json_t *dst) {
        char f[128];
        snprintf(f, sizeof f, "%s%s", prefix, key);
        const json_t *v = json_object_get(o, key);
        if (nullable && (!v || json_is_null(v))) {
                json_object_set_new(dst, key, json_null());
                return 0;
        }
        if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
                return fail(c, f, "%s a whole number from %lld to %lld", v ? "must be" : "required:", (long long) lo,
                            (long long) hi);
        json_object_set_new(dst, key, json_integer(json_integer_value(v)));
        return 0;
}

/* A string of at most max bytes without control characters, copied into dst under key; absent
 * or null reads as "" where optional. */
static int get_str(struct check *c, const json_t *o, const char *key, const char *prefix, size_t max, bool optional,
                   json_t *dst) {
        char f[128];
        snprintf(f, sizeof f, "%s%s", prefix, key);
        const json_t *v = json_object_get(o, key);
        if (optional && (!v || json_is_null(v))) {
                json_object_set_new(dst, key, json_string(""));
                return 0;
        }
        const char *s = json_string_value(v);
        if (!s || json_string_length(v) > max || strlen(s) != json_string_length(v))
                return fail(c, f, "%s a string of at most %zu bytes", v ? "must be" : "required:", max);
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return fail(c, f, "no control characters");
        json_object_set_new(dst, key, json_string(s));
        return 0;
}

static int check_proc(struct check *c, const json_t *p, const char *prefix, json_t *dst) {
        static const char *const known[] = { "pid", "mem", "job", "step", "uid", "user" };
        if (!json_is_object(p))
                return fail(c, prefix, "must be an object");
        char pre[96];
        snprintf(pre, sizeof pre, "%s.", prefix);
        int r = only_keys(c, p, pre, known, ELEMENTSOF(known));
        if (!r)
                r = get_int(c, p, "pid", pre, 1, INT32_MAX, false, dst);
        if (!r)
                r = get_int(c, p, "mem", pre, 0, INT64_MAX, true, dst);
        if (!r)
                r = get_int(c, p, "job", pre, 1, UINT32_MAX, true, dst);
        if (!r)
                r = get_str(c, p, "step", pre, 16, true, dst);
        if (!r)
                r = get_int(c, p, "uid", pre, 0, UINT32_MAX, true, dst);
        if (!r)
                r = get_str(c, p, "user", pre, 64, true, dst);
        return r;
}

static int check_procs(struct check *c, const json_t *g, const char *prefix, json_t *dst) {
        char f[96];
        snprintf(f, sizeof f, "%sprocs", prefix);
        const json_t *procs = json_object_get(g, "procs");
        if (!json_is_array(procs) || json_array_size(procs) > GW_AGENT_MAX_PROCS)
                return fail(c, f, "must be an array of at most %d processes", GW_AGENT_MAX_PROCS);
        /* Per GPU alone would let one snapshot carry GW_AGENT_MAX_GPUS times as many. */
        c->procs += json_array_size(procs);
        if (c->procs > GW_AGENT_MAX_PROCS_TOTAL)
                return fail(c, f,
                            "at most %d processes in one snapshot, all GPUs together (count the rest "
                            "in procs_total)",
                            GW_AGENT_MAX_PROCS_TOTAL);
        json_t *out = json_array();
        json_object_set_new(dst, "procs", out);
        for (size_t i = 0; i < json_array_size(procs); i++) {
                char pf[96];
                snprintf(pf, sizeof pf, "%s[%zu]", f, i);
                json_t *p = json_object();
                json_array_append_new(out, p);
                int r = check_proc(c, json_array_get(procs, i), pf, p);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int check_gpu(struct check *c, const json_t *g, size_t i, json_t *dst) {
        static const char *const known[] = { "index", "name",   "uuid",  "mem_total",  "mem_used",
                                             "util",  "health", "procs", "procs_total" };
        char pre[48];
        snprintf(pre, sizeof pre, "gpus[%zu].", i);
        if (!json_is_object(g))
                return fail(c, "gpus", "each GPU must be an object");
        int r = only_keys(c, g, pre, known, ELEMENTSOF(known));
        if (!r && json_integer_value(json_object_get(g, "index")) != (json_int_t) i)
                return fail(c, strcat(pre, "index"), "must be %zu: the GPUs in index order", i);
        if (!r)
                r = get_int(c, g, "index", pre, 0, GW_AGENT_MAX_GPUS - 1, false, dst);
        if (!r)
                r = get_str(c, g, "name", pre, 95, false, dst);
        if (!r)
                r = get_str(c, g, "uuid", pre, 95, true, dst);
        if (!r)
                r = get_int(c, g, "mem_total", pre, 0, INT64_MAX, false, dst);
        if (!r)
                r = get_int(c, g, "mem_used", pre, 0, INT64_MAX, true, dst);
        if (!r)
                r = get_int(c, g, "util", pre, 0, 100, true, dst);
        if (!r)
                r = get_int(c, g, "procs_total", pre, 0, INT32_MAX, true, dst);
        if (!r)
                r = get_str(c, g, "health", pre, 16, false, dst);
        const char *h = json_string_value(json_object_get(dst, "health"));
        if (!r && strcmp(h, "ok") && strcmp(h, "lost") && strcmp(h, "unavailable"))
                return fail(c, strcat(pre, "health"), "must be ok, lost or unavailable");
        return r ? r : check_procs(c, g, pre, dst);
}

/* The Xids NVML told since the agent's last delivered snapshot (optional):
 * [{"gpu": INDEX, "xid": N}], at most GW_AGENT_MAX_XIDS, each on one of the node's GPUs. */
static const char *const xid_keys[] = { "gpu", "xid" };
static const char *const staged_keys[] = { "job", "ms", "ok", "hit", "bytes" };

/* One record of an array, its fields checked into o; pre is "KEY[i]." for the messages. */
typedef int (*check_record_fn)(struct check *c, const json_t *x, const char *pre, size_t n_gpus, json_t *o);

/* An optional array of at most max objects with only the known keys, each checked by fn. */
static int check_records(struct check *c, const json_t *arr_in, const char *key, size_t max, const char *what,
                         const char *const *known, size_t n_known, check_record_fn fn, size_t n_gpus, json_t *dst) {
        if (!arr_in)
                return 0;
        if (!json_is_array(arr_in) || json_array_size(arr_in) > max)
                return fail(c, key, "an array of at most %zu %s", max, what);
        json_t *arr = json_array();
        json_object_set_new(dst, key, arr);
        for (size_t i = 0; i < json_array_size(arr_in); i++) {
                const json_t *x = json_array_get(arr_in, i);
                char pre[32];
                snprintf(pre, sizeof pre, "%s[%zu].", key, i);
                if (!json_is_object(x))
                        return fail(c, key, "each record must be an object");
                json_t *o = json_object();
                json_array_append_new(arr, o);
                int r = only_keys(c, x, pre, known, n_known);
                if (!r)
                        r = fn(c, x, pre, n_gpus, o);
                if (r)
                        return r;
        }
        return 0;
}

static int check_xid(struct check *c, const json_t *x, const char *pre, size_t n_gpus, json_t *o) {
        char f[48];
        snprintf(f, sizeof f, "%sgpu", pre);
        if (n_gpus == 0)
                return fail(c, f, "the node reports no GPU");
        int r = get_int(c, x, "gpu", pre, 0, (json_int_t) n_gpus - 1, false, o);
        return r ? r : get_int(c, x, "xid", pre, 0, 1000000, false, o);
}

static int get_bool(struct check *c, const json_t *o, const char *key, const char *prefix, json_t *dst) {
        char f[128];
        snprintf(f, sizeof f, "%s%s", prefix, key);
        const json_t *v = json_object_get(o, key);
        if (!json_is_boolean(v))
                return fail(c, f, "%s true or false", v ? "must be" : "required:");
        json_object_set_new(dst, key, json_boolean(json_is_true(v)));
        return 0;
}

/* A dataset the node's stager answered since the agent's last delivered snapshot:
 * {"job": SLURM_ID, "ms": WAITED, "ok", "hit", "bytes"}. */
static int check_staged(struct check *c, const json_t *x, const char *pre, size_t n_gpus, json_t *o) {
        (void) n_gpus;
        int r = get_int(c, x, "job", pre, 1, UINT32_MAX, false, o);
        if (!r)
                r = get_int(c, x, "ms", pre, 0, GW_AGENT_MAX_STAGE_MS, false, o);
        if (!r)
                r = get_bool(c, x, "ok", pre, o);
        if (!r)
                r = get_bool(c, x, "hit", pre, o);
        return r ? r : get_int(c, x, "bytes", pre, 0, INT64_MAX, false, o);
}

int gw_node_snapshot_check(const json_t *body, json_t **ret, char *field, size_t field_len, char *why, size_t why_len) {
        static const char *const known[] = { "node", "interval", "driver", "gpus", "xids", "staged" };
        struct check c = { field, why, field_len, why_len, 0 };
        json_t *out = json_object();
        int r = only_keys(&c, body, "", known, ELEMENTSOF(known));
        const char *node = json_string_value(json_object_get(body, "node"));
        if (!r && !gw_token_node_name_valid(node))
                r = fail(&c, "node", "required: the node's Slurm name, 1-64 letters, digits, '.', '-' or '_'");
        if (!r)
                json_object_set_new(out, "node", json_string(node));
        if (!r)
                r = get_int(&c, body, "interval", "", 1, 3600, false, out);
        if (!r)
                r = get_str(&c, body, "driver", "", 80, true, out);
        const json_t *gpus = json_object_get(body, "gpus");
        if (!r && (!json_is_array(gpus) || json_array_size(gpus) > GW_AGENT_MAX_GPUS))
                r = fail(&c, "gpus", "required: an array of at most %d GPUs", GW_AGENT_MAX_GPUS);
        json_t *arr = json_array();
        json_object_set_new(out, "gpus", arr);
        for (size_t i = 0; !r && i < json_array_size(gpus); i++) {
                json_t *g = json_object();
                json_array_append_new(arr, g);
                r = check_gpu(&c, json_array_get(gpus, i), i, g);
        }
        if (!r)
                r = check_records(&c, json_object_get(body, "xids"), "xids", (size_t) GW_AGENT_MAX_XIDS,
                                  "{\"gpu\", \"xid\"}", xid_keys, ELEMENTSOF(xid_keys), check_xid,
                                  json_array_size(gpus), out);
        if (!r)
                r = check_records(&c, json_object_get(body, "staged"), "staged", (size_t) GW_AGENT_MAX_STAGED,
                                  "{\"job\", \"ms\", \"ok\", \"hit\", \"bytes\"}", staged_keys, ELEMENTSOF(staged_keys),
                                  check_staged, 0, out);
        if (r < 0) {
                json_decref(out);
                return r;
        }
        *ret = out;
        return 0;
}

const json_t *gw_nodes_snapshot(const struct gw_nodes *t, const char *name) {
        for (size_t i = 0; t && i < t->n; i++)
                if (!strcmp(t->v[i].name, name))
                        return t->v[i].snapshot;
        return NULL;
}

size_t gw_node_gpu_jobs(const json_t *snap, unsigned gpu, uint32_t *jobs, size_t n, size_t max) {
        size_t k;
        const json_t *p;
        json_array_foreach (json_object_get(json_array_get(json_object_get(snap, "gpus"), gpu), "procs"), k, p) {
                json_int_t id = json_integer_value(json_object_get(p, "job"));
                size_t i = 0;
                while (i < n && jobs[i] != (uint32_t) id)
                        i++;
                if (id > 0 && id <= UINT32_MAX && i == n && n < max)
                        jobs[n++] = (uint32_t) id;
        }
        return n;
}

bool gw_nodes_told_due(struct gw_nodes_told *t, gw_usec_t now, unsigned *ret_n) {
        t->n++;
        if (t->next && now < t->next)
                return false;
        *ret_n = t->n;
        t->n = 0;
        t->next = now + GW_NODES_TELL_EVERY;
        return true;
}

int gw_node_token_check(int64_t id, const char *bound, const char *node, char *why, size_t why_len) {
        if (!bound || !bound[0]) {
                snprintf(why, why_len,
                         "token %lld is a node agent's token bound to no node (made before agents' "
                         "tokens were bound to their node): an admin makes one for each node with 'gpuward token "
                         "create --scope agent --node NODE' and revokes this one",
                         (long long) id);
                return -EPERM;
        }
        if (strcmp(bound, node)) {
                snprintf(why, why_len, "token %lld is node %s's agent token: it may not post node %.64s's snapshot",
                         (long long) id, bound, node);
                return -EACCES;
        }
        return 0;
}

static size_t node_find(const struct gw_nodes *t, const char *name) {
        size_t i = 0;
        while (t && i < t->n && strcmp(t->v[i].name, name))
                i++;
        return i;
}

bool gw_nodes_has_room(const struct gw_nodes *t, const char *node, size_t max) {
        size_t n = t ? t->n : 0;
        return node_find(t, node) < n || n < max;
}

int gw_nodes_put(struct gw_nodes *t, json_t *snap, gw_usec_t now, gw_usec_t now_wall, size_t max) {
        const char *name = json_string_value(json_object_get(snap, "node"));
        size_t i = node_find(t, name);
        if (i == t->n) {
                if (t->n >= max || t->n >= GW_NODES_MAX) {
                        json_decref(snap);
                        return -ENOSPC;
                }
                /* Kept sorted by name: the listing is read far more often than a node is added. */
                t->v = gw_xrealloc(t->v, (t->n + 1) * sizeof *t->v);
                i = 0;
                while (i < t->n && strcmp(t->v[i].name, name) < 0)
                        i++;
                memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof *t->v);
                t->n++;
                t->v[i] = (struct gw_node){ .snapshot = NULL };
                snprintf(t->v[i].name, sizeof t->v[i].name, "%s", name);
        }
        struct gw_node *n = &t->v[i];
        json_decref(n->snapshot);
        n->snapshot = snap;
        n->received = now;
        n->received_wall = now_wall;
        n->interval = json_integer_value(json_object_get(snap, "interval")) * GW_USEC_PER_SEC;
        return 0;
}

/* A node's GPUs as shown: each process's "rogue" (no Slurm job), and the GPU's Slurm jobs
 * with their users, so that a reader need not walk the processes. */
/* What the idle watch knows of a Slurm job on a GPU (nodes_watch.c): gpuward's job, or how
 * long a job gpuward did not submit has been idle and what was done about it. */
static void job_watched(const struct gw_nodes *t, json_t *entry) {
        const struct gw_slurm_seen *s =
                gw_nodes_seen_find(t, (uint32_t) json_integer_value(json_object_get(entry, "id")));
        bool foreign = s && !s->job;
        json_object_set_new(entry, "gpuward_job", s && s->job ? json_integer(s->job) : json_null());
        json_object_set_new(entry, "foreign", json_boolean(foreign));
        json_object_set_new(entry, "idle_for",
                            foreign && s->idle_for ? json_real((double) s->idle_for / GW_USEC_PER_SEC) : json_null());
        json_object_set_new(entry, "idle_action", foreign && s->action ? json_string(s->action) : json_null());
}

static json_t *gpus_shown(const struct gw_nodes *t, const json_t *gpus, bool details, int *rogues) {
        json_t *arr = json_deep_copy(gpus);
        size_t i, k;
        json_t *g, *p;
        json_array_foreach (arr, i, g) {
                json_t *jobs = json_array();
                json_array_foreach (json_object_get(g, "procs"), k, p) {
                        json_t *job = json_object_get(p, "job");
                        bool rogue = json_is_null(job);
                        json_object_set_new(p, "rogue", json_boolean(rogue));
                        *rogues += rogue;
                        if (!details) {
                                json_object_set_new(p, "user", json_null());
                                json_object_set_new(p, "uid", json_null());
                        }
                        size_t m;
                        json_t *seen;
                        bool dup = rogue;
                        json_array_foreach (jobs, m, seen)
                                dup = dup || json_equal(json_object_get(seen, "id"), job);
                        if (!dup) {
                                json_t *e = json_pack("{s:O,s:O}", "id", job, "user", json_object_get(p, "user"));
                                job_watched(t, e);
                                json_array_append_new(jobs, e);
                        }
                }
                json_object_set_new(g, "slurm_jobs", jobs);
        }
        return arr;
}

json_t *gw_nodes_json(const struct gw_nodes *t, gw_usec_t now, bool details, const struct gw_nodes_page *page,
                      const char **ret_next) {
        json_t *arr = json_array();
        size_t i = 0, end;
        /* The table is sorted by name: the page starts past every name up to after. */
        while (t && page->after && i < t->n && strcmp(t->v[i].name, page->after) <= 0)
                i++;
        end = t && t->n - i > page->limit ? i + page->limit : t ? t->n : 0;
        *ret_next = t && end < t->n && end > 0 ? t->v[end - 1].name : NULL;
        for (; t && i < end; i++) {
                const struct gw_node *n = &t->v[i];
                int rogues = 0;
                json_t *gpus = gpus_shown(t, json_object_get(n->snapshot, "gpus"), details, &rogues);
                gw_usec_t age = now - n->received;
                json_array_append_new(arr, json_pack("{s:s,s:b,s:f,s:f,s:I,s:O,s:o,s:i}", "node", n->name, "stale",
                                                     age > GW_NODE_STALE_ROUNDS * n->interval, "received",
                                                     (double) n->received_wall / GW_USEC_PER_SEC, "age",
                                                     (double) age / GW_USEC_PER_SEC, "interval",
                                                     (json_int_t) (n->interval / GW_USEC_PER_SEC), "driver",
                                                     json_object_get(n->snapshot, "driver"), "gpus", gpus,
                                                     "rogue_processes", rogues));
        }
        return arr;
}

unsigned gw_nodes_gpu_count(const struct gw_nodes *t) {
        size_t n = 0;
        for (size_t i = 0; t && i < t->n; i++)
                n += json_array_size(json_object_get(t->v[i].snapshot, "gpus"));
        return (unsigned) n;
}

const struct gw_slurm_seen *gw_nodes_seen_find(const struct gw_nodes *t, uint32_t slurm_id) {
        for (size_t i = 0; t && i < t->n_seen; i++)
                if (t->seen[i].slurm_id == slurm_id)
                        return &t->seen[i];
        return NULL;
}

/* ---- a Slurm job's GPUs, for the idle watch (nodes_watch.c) ---- */

static void add_node_name(struct gw_nodes_job_gpus *out, const char *name) {
        size_t l = strlen(out->nodes);
        if (!strstr(out->nodes, name) && l + strlen(name) + 2 < sizeof out->nodes)
                snprintf(out->nodes + l, sizeof out->nodes - l, "%s%s", l ? "," : "", name);
}

/* One GPU of a snapshot, when a process of slurm_id runs on it. */
static bool gpu_of_job(const json_t *g, uint32_t slurm_id, struct gw_reclaim_gpu *r, char *user, size_t user_len) {
        bool mine = false, other = false;
        size_t k;
        const json_t *p;
        json_array_foreach (json_object_get(g, "procs"), k, p) {
                const json_t *job = json_object_get(p, "job"), *mem = json_object_get(p, "mem");
                if (json_is_integer(job) && json_integer_value(job) == (json_int_t) slurm_id) {
                        if (!mine)
                                snprintf(user, user_len, "%s", json_string_value(json_object_get(p, "user")) ?: "");
                        mine = true;
                } else {
                        /* Memory unknown counts as held: never reclaim a job beside an unknown. */
                        other |= !json_is_integer(mem) || json_integer_value(mem) > 0;
                }
        }
        if (!mine)
                return false;
        const json_t *util = json_object_get(g, "util");
        const char *health = json_string_value(json_object_get(g, "health"));
        *r = (struct gw_reclaim_gpu){ .index = (int) json_integer_value(json_object_get(g, "index")),
                                      .other_busy = other };
        /* The agent sends the device's utilisation: per process it is not known, and another
         * process on the GPU already counts as busy. */
        if (json_is_integer(util) && health && !strcmp(health, "ok")) {
                r->util_valid = true;
                r->util = (unsigned) json_integer_value(util);
        }
        return true;
}

void gw_nodes_job_gpus(const struct gw_nodes *t, uint32_t slurm_id, gw_usec_t now, int fresh_rounds,
                       struct gw_nodes_job_gpus *out) {
        *out = (struct gw_nodes_job_gpus){ .n = 0 };
        for (size_t i = 0; t && i < t->n; i++) {
                const struct gw_node *n = &t->v[i];
                gw_usec_t age = now - n->received;
                bool fresh = age <= fresh_rounds * n->interval;
                size_t k;
                const json_t *g;
                json_array_foreach (json_object_get(n->snapshot, "gpus"), k, g) {
                        struct gw_reclaim_gpu r;
                        if (!gpu_of_job(g, slurm_id, &r, out->user, sizeof out->user))
                                continue;
                        if (!fresh) {
                                out->stale = n;
                                out->stale_age = age;
                        } else if (out->n < ELEMENTSOF(out->gpus)) {
                                out->gpus[out->n++] = r;
                                add_node_name(out, n->name);
                        }
                }
        }
}

struct gw_nodes *gw_nodes_free(struct gw_nodes *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n; i++)
                json_decref(t->v[i].snapshot);
        free(t->v);
        free(t->seen);
        free(t);
        return NULL;
}
