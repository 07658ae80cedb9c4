/* The controller's side of the node agents (src/daemon/nodes/nodes.c): a snapshot checked field by
 * field and rebuilt, the newest kept per node, a silent node stale after 3 of its intervals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/token.h"
#include "daemon/agent/agent.h"
#include "daemon/nodes/nodes.h"

#define SEC GW_USEC_PER_SEC

static const char GOOD[] =
        "{\"node\": \"gpu2\", \"interval\": 2, \"driver\": \"550.54\", \"gpus\": ["
        "{\"index\": 0, \"name\": \"A100\", \"uuid\": \"GPU-1\", \"mem_total\": 100, \"mem_used\": 40,"
        " \"util\": 50, \"health\": \"ok\", \"procs_total\": 2, \"procs\": ["
        "  {\"pid\": 10, \"mem\": 30, \"job\": 42, \"step\": \"batch\", \"uid\": 1000, \"user\": \"alice\"},"
        "  {\"pid\": 11, \"mem\": null, \"job\": null, \"step\": null, \"uid\": 0, \"user\": \"root\"}]},"
        "{\"index\": 1, \"name\": \"A100\", \"mem_total\": 100, \"mem_used\": null, \"util\": null,"
        " \"health\": \"lost\", \"procs\": []}]}";

/* The field a body is refused for ("" when it passes). */
static const char *refused(const char *text) {
        static char field[128], why[256];
        json_t *body = json_loads(text, 0, NULL), *snap = NULL;
        assert_non_null(body);
        field[0] = '\0';
        int r = gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why);
        json_decref(body);
        json_decref(snap);
        if (r == 0)
                return "";
        assert_int_equal(r, -EINVAL);
        assert_true(strncmp(why, field, strlen(field)) == 0); /* the message starts with the field */
        return field;
}

static json_t *good(const char *node) {
        json_t *body = json_loads(GOOD, 0, NULL), *snap = NULL;
        json_object_set_new(body, "node", json_string(node));
        char field[128], why[256];
        assert_int_equal(gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why), 0);
        json_decref(body);
        return snap;
}

static void test_a_good_snapshot_passes_whole(void **state) {
        (void) state;
        assert_string_equal(refused(GOOD), "");
        json_t *snap = good("gpu2");
        json_t *p = json_array_get(json_object_get(json_array_get(json_object_get(snap, "gpus"), 0), "procs"), 0);
        assert_int_equal(json_integer_value(json_object_get(p, "job")), 42);
        assert_string_equal(json_string_value(json_object_get(p, "user")), "alice");
        assert_string_equal(
                json_string_value(json_object_get(json_array_get(json_object_get(snap, "gpus"), 1), "uuid")), "");
        json_decref(snap);
}

static void test_bad_fields_are_named(void **state) {
        (void) state;
        assert_string_equal(refused("{\"interval\": 2, \"gpus\": []}"), "node");
        assert_string_equal(refused("{\"node\": \"a b\", \"interval\": 2, \"gpus\": []}"), "node");
        assert_string_equal(refused("{\"node\": \"n\", \"interval\": 0, \"gpus\": []}"), "interval");
        assert_string_equal(refused("{\"node\": \"n\", \"interval\": 2, \"gpus\": {}}"), "gpus");
        assert_string_equal(refused("{\"node\": \"n\", \"interval\": 2, \"gpus\": [], \"x\": 1}"), "x");
        assert_string_equal(refused("{\"\": 1, \"node\": \"n\", \"interval\": 2, \"gpus\": []}"), "\"\"");
        assert_string_equal(refused("{\"node\": \"n\", \"interval\": 2, \"gpus\": [{\"index\": 1}]}"), "gpus[0].index");
        assert_string_equal(refused("{\"node\": \"n\", \"interval\": 2, \"gpus\": [{\"index\": 0, \"name\": \"A\","
                                    " \"mem_total\": 1, \"health\": \"fine\", \"procs\": []}]}"),
                            "gpus[0].health");
        assert_string_equal(refused("{\"node\": \"n\", \"interval\": 2, \"gpus\": [{\"index\": 0, \"name\": \"A\","
                                    " \"mem_total\": 1, \"util\": 101, \"health\": \"ok\", \"procs\": []}]}"),
                            "gpus[0].util");
        assert_string_equal(refused("{\"node\": \"n\", \"interval\": 2, \"gpus\": [{\"index\": 0, \"name\": \"A\","
                                    " \"mem_total\": 1, \"health\": \"ok\", \"procs\": [{\"pid\": 0}]}]}"),
                            "gpus[0].procs[0].pid");
        assert_string_equal(refused("{\"node\": \"n\", \"interval\": 2, \"gpus\": [{\"index\": 0, \"name\": \"A\","
                                    " \"mem_total\": 1, \"health\": \"ok\", \"procs\": [{\"pid\": 5,"
                                    " \"user\": \"a\\u001bb\"}]}]}"),
                            "gpus[0].procs[0].user");
}

static void test_size_is_bounded(void **state) {
        (void) state;
        json_t *body = json_loads(GOOD, 0, NULL), *snap = NULL;
        json_t *procs = json_object_get(json_array_get(json_object_get(body, "gpus"), 1), "procs");
        for (int i = 0; i <= GW_AGENT_MAX_PROCS; i++)
                json_array_append_new(procs, json_pack("{s:i}", "pid", i + 1));
        char field[128], why[256];
        assert_int_equal(gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why), -EINVAL);
        assert_string_equal(field, "gpus[1].procs");
        json_decref(body);
        body = json_loads(GOOD, 0, NULL);
        /* GW_AGENT_MAX_PROCS on each GPU passes per GPU, but not the snapshot's total. */
        json_t *gpus = json_array();
        for (int g = 0; g * GW_AGENT_MAX_PROCS <= GW_AGENT_MAX_PROCS_TOTAL; g++) {
                json_t *gpu = json_deep_copy(json_array_get(json_object_get(body, "gpus"), 0)), *p = json_array();
                json_object_set_new(gpu, "index", json_integer(g));
                for (int i = 0; i < GW_AGENT_MAX_PROCS; i++)
                        json_array_append_new(p, json_pack("{s:i}", "pid", i + 1));
                json_object_set_new(gpu, "procs", p);
                json_array_append_new(gpus, gpu);
        }
        json_object_set_new(body, "gpus", gpus);
        assert_int_equal(gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why), -EINVAL);
        char total[32];
        snprintf(total, sizeof total, "gpus[%d].procs", GW_AGENT_MAX_PROCS_TOTAL / GW_AGENT_MAX_PROCS);
        assert_string_equal(field, total);
        assert_non_null(strstr(why, "in one snapshot"));
        /* One process fewer in all passes. */
        json_array_remove(json_object_get(json_array_get(gpus, json_array_size(gpus) - 1), "procs"), 0);
        json_array_remove(gpus, json_array_size(gpus) - 1);
        assert_int_equal(gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why), 0);
        json_decref(snap);
        gpus = json_array();
        for (int i = 0; i <= GW_AGENT_MAX_GPUS; i++)
                json_array_append(gpus, json_array_get(json_object_get(body, "gpus"), 0));
        json_object_set_new(body, "gpus", gpus);
        assert_int_equal(gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why), -EINVAL);
        assert_string_equal(field, "gpus");
        json_decref(body);
}

/* GOOD with "xids": X added. */
static const char *with_xids(const char *xids) {
        static char text[sizeof GOOD + 512];
        snprintf(text, sizeof text, "%.*s, \"xids\": %s}", (int) strlen(GOOD) - 1, GOOD, xids);
        return text;
}

static void test_xids_checked_and_kept(void **state) {
        (void) state;
        assert_string_equal(refused(with_xids("[]")), "");
        assert_string_equal(refused(with_xids("[{\"gpu\": 1, \"xid\": 79}]")), "");
        assert_string_equal(refused(with_xids("{}")), "xids");
        assert_string_equal(refused(with_xids("[5]")), "xids");
        assert_string_equal(refused(with_xids("[{\"gpu\": 2, \"xid\": 79}]")), "xids[0].gpu"); /* 2 GPUs */
        assert_string_equal(refused(with_xids("[{\"gpu\": 0, \"xid\": -1}]")), "xids[0].xid");
        assert_string_equal(refused(with_xids("[{\"gpu\": 0, \"xid\": 79, \"pid\": 3}]")), "xids[0].pid");
        json_t *body = json_loads(with_xids("[{\"gpu\": 1, \"xid\": 79}]"), 0, NULL), *snap = NULL;
        char field[128], why[256];
        assert_int_equal(gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why), 0);
        json_t *x = json_array_get(json_object_get(snap, "xids"), 0);
        assert_int_equal(json_integer_value(json_object_get(x, "gpu")), 1);
        assert_int_equal(json_integer_value(json_object_get(x, "xid")), 79);
        json_decref(body);
        json_decref(snap);
}

/* GOOD with "staged": X added. */
static const char *with_staged(const char *staged) {
        static char text[sizeof GOOD + 4096];
        snprintf(text, sizeof text, "%.*s, \"staged\": %s}", (int) strlen(GOOD) - 1, GOOD, staged);
        return text;
}

#define STAGED(job, ms, ok) "[{\"job\": " job ", \"ms\": " ms ", \"ok\": " ok ", \"hit\": false, \"bytes\": 10}]"

static void test_staged_checked_and_kept(void **state) {
        (void) state;
        assert_string_equal(refused(with_staged("[]")), "");
        assert_string_equal(refused(with_staged(STAGED("42", "3200", "true"))), "");
        assert_string_equal(refused(with_staged("{}")), "staged");
        assert_string_equal(refused(with_staged("[7]")), "staged");
        assert_string_equal(refused(with_staged(STAGED("0", "3200", "true"))), "staged[0].job");
        assert_string_equal(refused(with_staged(STAGED("4294967296", "3200", "true"))), "staged[0].job");
        assert_string_equal(refused(with_staged(STAGED("42", "-1", "true"))), "staged[0].ms");
        assert_string_equal(refused(with_staged(STAGED("42", "604800001", "true"))), "staged[0].ms");
        assert_string_equal(refused(with_staged(STAGED("42", "3200", "1"))), "staged[0].ok");
        assert_string_equal(
                refused(with_staged(
                        "[{\"job\": 42, \"ms\": 1, \"ok\": true, \"hit\": true, \"bytes\": 0, \"gpus\": 8}]")),
                "staged[0].gpus"); /* the controller counts the GPUs, not the node */
        char many[4096] = "[";
        for (int i = 0; i <= GW_AGENT_MAX_STAGED; i++)
                snprintf(many + strlen(many), sizeof many - strlen(many),
                         "%s{\"job\": %d, \"ms\": 1, \"ok\": true, "
                         "\"hit\": false, \"bytes\": 0}",
                         i ? "," : "", i + 1);
        strcat(many, "]");
        assert_string_equal(refused(with_staged(many)), "staged");
        json_t *body = json_loads(with_staged(STAGED("42", "3200", "true")), 0, NULL), *snap = NULL;
        char field[128], why[256];
        assert_int_equal(gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why), 0);
        json_t *x = json_array_get(json_object_get(snap, "staged"), 0);
        assert_int_equal(json_integer_value(json_object_get(x, "job")), 42);
        assert_int_equal(json_integer_value(json_object_get(x, "ms")), 3200);
        assert_true(json_is_true(json_object_get(x, "ok")));
        json_decref(body);
        json_decref(snap);
}

static void test_gpu_jobs_each_once(void **state) {
        (void) state;
        json_t *snap = good("gpu2");
        uint32_t jobs[4];
        size_t n = gw_node_gpu_jobs(snap, 0, jobs, 0, 4);
        assert_int_equal(n, 1); /* the rogue (job null) is no job */
        assert_int_equal(jobs[0], 42);
        assert_int_equal(gw_node_gpu_jobs(snap, 0, jobs, n, 4), 1); /* 42 again: once */
        assert_int_equal(gw_node_gpu_jobs(snap, 1, jobs, n, 4), 1);
        assert_int_equal(gw_node_gpu_jobs(snap, 7, jobs, n, 4), 1); /* no such GPU */
        assert_int_equal(gw_node_gpu_jobs(NULL, 0, jobs, 0, 4), 0);
        json_decref(snap);
}

static const struct gw_nodes_page ALL = { .limit = 100 };

static void test_newest_per_node_and_stale(void **state) {
        (void) state;
        const char *next = "x";
        struct gw_nodes *t = calloc(1, sizeof *t);
        assert_int_equal(gw_nodes_put(t, good("gpu2"), 10 * SEC, 1000 * SEC, 8), 0);
        assert_int_equal(gw_nodes_put(t, good("gpu1"), 11 * SEC, 1001 * SEC, 8), 0);
        assert_int_equal(gw_nodes_put(t, good("gpu2"), 12 * SEC, 1002 * SEC, 8), 0);
        assert_int_equal(t->n, 2);
        /* Two GPUs a node, a node counted once however often it reported. */
        assert_int_equal(gw_nodes_gpu_count(t), 4);
        assert_int_equal(gw_nodes_gpu_count(NULL), 0);
        /* At 17 s: gpu1 heard 6 s ago (3 intervals of 2 s: not yet stale), gpu2 5 s ago. */
        json_t *v = gw_nodes_json(t, 17 * SEC, true, &ALL, &next);
        assert_int_equal(json_array_size(v), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "node")), "gpu1");
        assert_false(json_is_true(json_object_get(json_array_get(v, 0), "stale")));
        json_t *g0 = json_array_get(json_object_get(json_array_get(v, 1), "gpus"), 0);
        assert_int_equal(
                json_integer_value(json_object_get(json_array_get(json_object_get(g0, "slurm_jobs"), 0), "id")), 42);
        assert_int_equal(json_array_size(json_object_get(g0, "slurm_jobs")), 1);
        assert_true(json_is_true(json_object_get(json_array_get(json_object_get(g0, "procs"), 1), "rogue")));
        assert_int_equal(json_integer_value(json_object_get(json_array_get(v, 1), "rogue_processes")), 1);
        json_decref(v);
        /* At 18 s gpu1 is stale, gpu2 not; without details no process's user is shown. */
        v = gw_nodes_json(t, 18 * SEC, false, &ALL, &next);
        assert_true(json_is_true(json_object_get(json_array_get(v, 0), "stale")));
        assert_false(json_is_true(json_object_get(json_array_get(v, 1), "stale")));
        g0 = json_array_get(json_object_get(json_array_get(v, 1), "gpus"), 0);
        assert_true(json_is_null(json_object_get(json_array_get(json_object_get(g0, "procs"), 0), "user")));
        assert_true(json_is_null(json_object_get(json_array_get(json_object_get(g0, "procs"), 0), "uid")));
        json_decref(v);
        gw_nodes_free(t);
        v = gw_nodes_json(NULL, 0, true, &ALL, &next);
        assert_int_equal(json_array_size(v), 0);
        assert_null(next);
        json_decref(v);
}

/* A snapshot of node with job 7's processes on GPU 0 (util 0, alone) and GPU 1 (lost). */
static json_t *job7(const char *node) {
        static const char text[] =
                "{\"node\": \"n\", \"interval\": 2, \"gpus\": ["
                "{\"index\": 0, \"name\": \"A\", \"mem_total\": 100, \"util\": 0, \"health\": \"ok\", \"procs\": ["
                "  {\"pid\": 20, \"mem\": 30, \"job\": 7, \"user\": \"bob\"},"
                "  {\"pid\": 21, \"mem\": 0, \"job\": 8, \"user\": \"eve\"}]},"
                "{\"index\": 1, \"name\": \"A\", \"mem_total\": 100, \"util\": 3, \"health\": \"lost\", \"procs\": ["
                "  {\"pid\": 22, \"mem\": 30, \"job\": 7, \"user\": \"bob\"}]}]}";
        json_t *body = json_loads(text, 0, NULL), *snap = NULL;
        json_object_set_new(body, "node", json_string(node));
        char field[128], why[256];
        assert_int_equal(gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why), 0);
        json_decref(body);
        return snap;
}

static void test_a_slurm_jobs_gpus(void **state) {
        (void) state;
        struct gw_nodes *t = calloc(1, sizeof *t);
        struct gw_nodes_job_gpus g;
        gw_nodes_job_gpus(NULL, 42, 0, 2, &g);
        assert_int_equal(g.n, 0);
        assert_null(g.stale);
        assert_int_equal(gw_nodes_put(t, good("gpu2"), 10 * SEC, 1000 * SEC, 8), 0);
        assert_int_equal(gw_nodes_put(t, job7("gpu1"), 11 * SEC, 1001 * SEC, 8), 0);
        /* Job 42 on gpu2's GPU 0 at 50%, beside a process of no job whose memory is unknown:
         * held, so busy whatever the utilisation. */
        gw_nodes_job_gpus(t, 42, 14 * SEC, 2, &g);
        assert_int_equal(g.n, 1);
        assert_int_equal(g.gpus[0].index, 0);
        assert_true(g.gpus[0].util_valid);
        assert_int_equal(g.gpus[0].util, 50);
        assert_true(g.gpus[0].other_busy);
        assert_string_equal(g.nodes, "gpu2");
        assert_string_equal(g.user, "alice");
        assert_null(g.stale);
        /* Job 7 on gpu1: GPU 0 at 0% beside a process that holds no memory (not busy), GPU 1
         * lost (its utilisation unknown, so busy for the decision). */
        gw_nodes_job_gpus(t, 7, 15 * SEC, 2, &g);
        assert_int_equal(g.n, 2);
        assert_true(g.gpus[0].util_valid);
        assert_int_equal(g.gpus[0].util, 0);
        assert_false(g.gpus[0].other_busy);
        assert_int_equal(g.gpus[1].index, 1);
        assert_false(g.gpus[1].util_valid);
        assert_string_equal(g.user, "bob");
        /* Two intervals of 2 s and a microsecond after it came, gpu2's snapshot is stale: no
         * GPU of job 42 is given, its node is named instead. */
        gw_nodes_job_gpus(t, 42, 14 * SEC + 1, 2, &g);
        assert_int_equal(g.n, 0);
        assert_non_null(g.stale);
        assert_string_equal(g.stale->name, "gpu2");
        assert_int_equal(g.stale_age, 4 * SEC + 1);
        /* A job no snapshot lists. */
        gw_nodes_job_gpus(t, 9, 14 * SEC, 2, &g);
        assert_int_equal(g.n, 0);
        assert_null(g.stale);
        gw_nodes_free(t);
}

/* Nodes by name, limit at a time, each page from past the last one's last node. */
static void test_the_listing_is_paged(void **state) {
        (void) state;
        struct gw_nodes *t = calloc(1, sizeof *t);
        static const char *const names[] = { "n3", "n1", "n5", "n2", "n4" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                assert_int_equal(gw_nodes_put(t, good(names[i]), 1 * SEC, 1 * SEC, 16), 0);
        static const char *const sorted[] = { "n1", "n2", "n3", "n4", "n5" };
        const char *next = NULL;
        size_t n = 0;
        struct gw_nodes_page page = { .limit = 2 };
        int pages = 0;
        do {
                json_t *v = gw_nodes_json(t, 1 * SEC, false, &page, &next);
                assert_true(json_array_size(v) >= 1 && json_array_size(v) <= 2);
                size_t i;
                json_t *o;
                json_array_foreach (v, i, o) {
                        assert_true(n < ELEMENTSOF(sorted));
                        assert_string_equal(json_string_value(json_object_get(o, "node")), sorted[n]);
                        n++;
                }
                if (next)
                        assert_string_equal(next, sorted[n - 1]);
                json_decref(v);
                page.after = next;
                pages++;
        } while (next && pages < 10);
        assert_int_equal(pages, 3); /* 2 + 2 + 1 */
        assert_int_equal(n, 5);
        /* Past a name that is not kept: from the next one by name; past the last: none. */
        page = (struct gw_nodes_page){ .after = "n2a", .limit = 64 };
        json_t *v = gw_nodes_json(t, 1 * SEC, false, &page, &next);
        assert_int_equal(json_array_size(v), 3);
        assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "node")), "n3");
        assert_null(next);
        json_decref(v);
        page.after = "n5";
        v = gw_nodes_json(t, 1 * SEC, false, &page, &next);
        assert_int_equal(json_array_size(v), 0);
        assert_null(next);
        json_decref(v);
        gw_nodes_free(t);
}

/* max nodes are kept: one more is refused (its snapshot freed); a node kept still reports. */
static void test_the_node_count_is_bounded(void **state) {
        (void) state;
        struct gw_nodes *t = calloc(1, sizeof *t);
        assert_true(gw_nodes_has_room(NULL, "a", 1));
        assert_int_equal(gw_nodes_put(t, good("a"), 1 * SEC, 1 * SEC, 2), 0);
        assert_int_equal(gw_nodes_put(t, good("b"), 1 * SEC, 1 * SEC, 2), 0);
        assert_false(gw_nodes_has_room(t, "c", 2));
        assert_true(gw_nodes_has_room(t, "b", 2));
        assert_true(gw_nodes_has_room(t, "c", 3));
        assert_int_equal(gw_nodes_put(t, good("c"), 2 * SEC, 2 * SEC, 2), -ENOSPC);
        assert_int_equal(gw_nodes_put(t, good("b"), 2 * SEC, 2 * SEC, 2), 0);
        assert_int_equal(t->n, 2);
        assert_null(gw_nodes_snapshot(t, "c"));
        gw_nodes_free(t);
}

/* A refusal is logged at once, then not again for a minute, then with the count it stands for. */
static void test_refusals_are_told_once_a_minute(void **state) {
        (void) state;
        struct gw_nodes_told told = { 0 };
        unsigned n = 0;
        assert_true(gw_nodes_told_due(&told, 5 * SEC, &n));
        assert_int_equal(n, 1);
        for (int i = 0; i < 100; i++)
                assert_false(gw_nodes_told_due(&told, 5 * SEC + i * SEC / 2, &n));
        assert_false(gw_nodes_told_due(&told, 5 * SEC + GW_NODES_TELL_EVERY - 1, &n));
        assert_true(gw_nodes_told_due(&told, 5 * SEC + GW_NODES_TELL_EVERY, &n));
        assert_int_equal(n, 102);
        assert_true(gw_nodes_told_due(&told, 5 * SEC + 3 * GW_NODES_TELL_EVERY, &n));
        assert_int_equal(n, 1);
}

/* An agent's token posts its own node's snapshots only; one bound to no node, none. */
static void test_a_token_posts_for_its_node(void **state) {
        (void) state;
        char why[400];
        assert_int_equal(gw_node_token_check(3, "gpu1", "gpu1", why, sizeof why), 0);
        assert_int_equal(gw_node_token_check(3, "gpu1", "gpu2", why, sizeof why), -EACCES);
        assert_string_equal(why, "token 3 is node gpu1's agent token: it may not post node gpu2's snapshot");
        assert_int_equal(gw_node_token_check(3, "gpu1", "gpu10", why, sizeof why), -EACCES);
        assert_int_equal(gw_node_token_check(3, "gpu1", "GPU1", why, sizeof why), -EACCES);
        assert_int_equal(gw_node_token_check(4, "", "gpu1", why, sizeof why), -EPERM);
        assert_non_null(strstr(why, "token 4 is a node agent's token bound to no node"));
        assert_non_null(strstr(why, "gpuward token create --scope agent --node NODE"));
        assert_int_equal(gw_node_token_check(4, NULL, "gpu1", why, sizeof why), -EPERM);
}

static void test_node_names(void **state) {
        (void) state;
        static const char *const good_names[] = { "gpu1", "a", "node-1.rack_2", "A" };
        static const char *const bad_names[] = { "", "a b", "a/b", "a:1", "gpu1\n", "é" };
        char longest[65], too_long[66];
        memset(longest, 'x', 64), longest[64] = '\0';
        memset(too_long, 'x', 65), too_long[65] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(good_names); i++)
                assert_true(gw_token_node_name_valid(good_names[i]));
        for (size_t i = 0; i < ELEMENTSOF(bad_names); i++)
                assert_false(gw_token_node_name_valid(bad_names[i]));
        assert_true(gw_token_node_name_valid(longest));
        assert_false(gw_token_node_name_valid(too_long));
        assert_false(gw_token_node_name_valid(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_good_snapshot_passes_whole),
                cmocka_unit_test(test_bad_fields_are_named),
                cmocka_unit_test(test_size_is_bounded),
                cmocka_unit_test(test_xids_checked_and_kept),
                cmocka_unit_test(test_staged_checked_and_kept),
                cmocka_unit_test(test_gpu_jobs_each_once),
                cmocka_unit_test(test_newest_per_node_and_stale),
                cmocka_unit_test(test_a_slurm_jobs_gpus),
                cmocka_unit_test(test_the_listing_is_paged),
                cmocka_unit_test(test_the_node_count_is_bounded),
                cmocka_unit_test(test_refusals_are_told_once_a_minute),
                cmocka_unit_test(test_a_token_posts_for_its_node),
                cmocka_unit_test(test_node_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
