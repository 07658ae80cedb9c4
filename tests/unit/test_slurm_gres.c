#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "core/slurm.h"

/* scontrol show node --oneliner of the test cluster (Slurm 22.05.8): node 1's GPUs declared
 * as gres.conf Type=a100_1g.10gb (7 slices), node 2's of no type; cut where noted. */
static const char SHOW_NODES[] =
        "NodeName=gw9ea985n1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=1.80 "
        "AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:a100_1g.10gb:7 NodeAddr=10.62.119.2 "
        "NodeHostName=gw9ea985n1 Version=22.05.8 RealMemory=1000 AllocMem=0 State=IDLE Partitions=gpu  "
        "CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a\n"
        "NodeName=gw9ea985n2 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 "
        "AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:4 NodeAddr=10.62.119.3 "
        "NodeHostName=gw9ea985n2 Version=22.05.8 State=IDLE Partitions=gpu  CfgTRES=cpu=2,mem=1000M,billing=2\n";

static int parse(const char *text, struct gw_slurm_gpus *g) {
        *g = (struct gw_slurm_gpus){ 0 };
        return gw_slurm_gpus_parse(text, strlen(text), g);
}

static void test_cluster_text(void **state) {
        (void) state;
        struct gw_slurm_gpus g;
        assert_int_equal(parse(SHOW_NODES, &g), 0);
        assert_int_equal(g.n_types, 1);
        assert_string_equal(g.types[0].name, "a100_1g.10gb");
        assert_int_equal(g.types[0].count, 7);
        assert_int_equal(g.types[0].nodes, 1);
        assert_int_equal(g.untyped, 4);
        assert_int_equal(g.n_slice_only, 1);
        assert_string_equal(g.slice_only[0], "gw9ea985n1");
        const char *t = NULL;
        assert_int_equal(gw_slurm_mig_type(&g, "1g.10gb", &t), 0);
        assert_string_equal(t, "a100_1g.10gb");
        assert_int_equal(gw_slurm_mig_type(&g, "2g.20gb", &t), -ENOENT);
        assert_int_equal(gw_slurm_mig_type(&g, "1g.10gb+me", &t), -ENOENT); /* Slurm names no +me */
        assert_int_equal(gw_slurm_mig_type(&g, "A100", &t), -EINVAL);
        char buf[200];
        assert_string_equal(gw_slurm_gpus_words(&g, buf, sizeof buf), "a100_1g.10gb (7 on 1 node), 4 GPUs of no type");
        gw_slurm_gpus_clear(&g);
        assert_null(g.slice_only);
}

/* Several items (sockets in brackets, other gres), AutoDetect=nvml's names, a mixed node,
 * a node without GPUs; GresUsed= is not Gres=. */
static void test_items(void **state) {
        (void) state;
        struct gw_slurm_gpus g;
        assert_int_equal(parse("NodeName=a Gres=gpu:nvidia_a100_1g.10gb:3(S:0,1),gpu:nvidia_a100_3g.40gb:1(S:0) "
                               "GresUsed=gpu:nvidia_a100_1g.10gb:1(IDX:0)\n"
                               "NodeName=b Gres=gpu:nvidia_h100_1g.10gb:7,shard:8,gpu:a100:1\n"
                               "NodeName=c Gres=(null)\n"
                               "NodeName=d Gres=gpu:h100_1g.10gb:7(S:0-1),bandwidth:lustre:no_consume:4G\n"
                               "no node here Gres=gpu:9\n"
                               "NodeName=e Gres=gpu:1g.10gb:2,gpu:x:1K,gpu\n",
                               &g),
                         0);
        assert_int_equal(g.n_types, 6);
        assert_string_equal(g.types[0].name, "nvidia_a100_1g.10gb");
        assert_int_equal(g.types[0].count, 3);
        assert_string_equal(g.types[1].name, "nvidia_a100_3g.40gb");
        assert_string_equal(g.types[2].name, "nvidia_h100_1g.10gb");
        assert_string_equal(g.types[3].name, "a100");
        assert_int_equal(g.untyped, 0);
        assert_int_equal(g.n_slice_only, 3);
        assert_string_equal(g.slice_only[0], "a");
        assert_string_equal(g.slice_only[1], "d");
        assert_string_equal(g.slice_only[2], "e");
        /* Three types name 1g.10gb: the one with most slices; on a tie the first by name. */
        const char *t = NULL;
        assert_int_equal(gw_slurm_mig_type(&g, "1g.10gb", &t), 0);
        assert_string_equal(t, "h100_1g.10gb");
        assert_int_equal(gw_slurm_mig_type(&g, "3g.40gb", &t), 0);
        assert_string_equal(t, "nvidia_a100_3g.40gb");
        gw_slurm_gpus_clear(&g);
        assert_int_equal(gw_slurm_gpus_parse("NodeName=a\0", 11, &g), -EINVAL);
        gw_slurm_gpus_clear(&g);
        char buf[16];
        assert_int_equal(parse("", &g), 0);
        assert_string_equal(gw_slurm_gpus_words(&g, buf, sizeof buf), "no GPUs");
        assert_int_equal(parse("NodeName=a Gres=gpu:nvidia_a100_1g.10gb:3\n", &g), 0);
        assert_string_equal(gw_slurm_gpus_words(&g, buf, sizeof buf), "nvidia_a100_...");
        gw_slurm_gpus_clear(&g);
}

static void test_type_profile(void **state) {
        (void) state;
        assert_string_equal(gw_slurm_type_profile("a100_1g.10gb"), "1g.10gb");
        assert_string_equal(gw_slurm_type_profile("nvidia_a100_3g.40gb"), "3g.40gb");
        assert_string_equal(gw_slurm_type_profile("1g.5gb"), "1g.5gb");
        assert_null(gw_slurm_type_profile("a100"));
        assert_null(gw_slurm_type_profile("tesla_v100-sxm2-16gb"));
        assert_null(gw_slurm_type_profile("a100_1g.10gb+me"));
        assert_null(gw_slurm_type_profile("a100_g.10gb"));
        assert_null(gw_slurm_type_profile("a100_1g.gb"));
        assert_null(gw_slurm_type_profile(""));
        assert_null(gw_slurm_type_profile(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cluster_text),
                cmocka_unit_test(test_items),
                cmocka_unit_test(test_type_profile),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
