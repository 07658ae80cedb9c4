/* Published models (core/model.h): the names and metrics a user may give, version folders,
 * the row best.pt holds, and --publish-if-better's comparison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/model.h"

static void names(void **state) {
        (void) state;
        char why[200];
        static const char *const good[] = { "yolo-det", "a", "coco_v8.n", "A1-b_2.c" };
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
                assert_int_equal(gw_model_name_check(good[i], why, sizeof why), 0);
        char max[GW_MODEL_NAME_MAX + 2];
        memset(max, 'x', GW_MODEL_NAME_MAX);
        max[GW_MODEL_NAME_MAX] = '\0';
        assert_int_equal(gw_model_name_check(max, why, sizeof why), 0);
        max[GW_MODEL_NAME_MAX] = 'x';
        max[GW_MODEL_NAME_MAX + 1] = '\0';
        assert_int_equal(gw_model_name_check(max, why, sizeof why), -EINVAL);
        assert_non_null(strstr(why, "publish: "));
        static const char *const bad[] = { "", ".", "..", ".hidden", "a/b", "a b", "ü", "a\nb", "../x" };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                assert_int_equal(gw_model_name_check(bad[i], why, sizeof why), -EINVAL);
        assert_int_equal(gw_model_name_check(NULL, why, sizeof why), -EINVAL);
}

static void metrics(void **state) {
        (void) state;
        char why[200];
        assert_int_equal(gw_model_metric_check("metrics/mAP50-95(B)", why, sizeof why), 0);
        assert_int_equal(gw_model_metric_check("val/box_loss", why, sizeof why), 0);
        assert_int_equal(gw_model_metric_check("", why, sizeof why), -EINVAL);
        assert_int_equal(gw_model_metric_check("a b", why, sizeof why), -EINVAL);
        assert_int_equal(gw_model_metric_check("a,b", why, sizeof why), -EINVAL);
        assert_non_null(strstr(why, "publish_if_better"));
        char long_[GW_MODEL_METRIC_MAX + 2];
        memset(long_, 'm', sizeof long_ - 1);
        long_[sizeof long_ - 1] = '\0';
        assert_int_equal(gw_model_metric_check(long_, why, sizeof why), -EINVAL);
}

static void versions(void **state) {
        (void) state;
        assert_int_equal(gw_model_version_of("v1"), 1);
        assert_int_equal(gw_model_version_of("v42"), 42);
        assert_int_equal(gw_model_version_of("v1000000"), 1000000);
        assert_int_equal(gw_model_version_of("v1000001"), -1);
        assert_int_equal(gw_model_version_of("v0"), -1);
        assert_int_equal(gw_model_version_of("v01"), -1);
        assert_int_equal(gw_model_version_of("v"), -1);
        assert_int_equal(gw_model_version_of("v3x"), -1);
        assert_int_equal(gw_model_version_of(".tmp-1"), -1);
        assert_int_equal(gw_model_version_of(NULL), -1);
}

static const char detect_csv[] = "epoch,train/box_loss,metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss\n"
                                 "1,1.5,0.30,0.20,1.4\n"
                                 "2,1.2,0.50,0.40,1.1\n"
                                 "3,1.0,0.60,0.40,1.0\n" /* fitness 0.42 > 0.41: best */
                                 "4,0.9,0.60,0.40,0.9\n" /* a tie keeps the earlier */
                                 "5,0.8,0.40,0.30,0.8\n";

static void best_row_by_fitness(void **state) {
        (void) state;
        struct gw_results r;
        assert_int_equal(gw_results_parse(detect_csv, strlen(detect_csv), &r), 0);
        assert_int_equal(gw_model_best_row(&r), 2);
        long col = gw_model_metric_col(&r, "metrics/mAP50-95(B)");
        assert_int_equal(col, 3);
        assert_true(fabs(gw_results_value(&r, 2, (size_t) col) - 0.40) < 1e-9);
        assert_int_equal(gw_model_metric_col(&r, "metrics/nope"), -1);
        gw_results_free(&r);
        /* No fitness columns: the last row. */
        static const char plain[] = "epoch,train/loss\n1,2.0\n2,1.0\n";
        assert_int_equal(gw_results_parse(plain, strlen(plain), &r), 0);
        assert_int_equal(gw_model_best_row(&r), 1);
        gw_results_free(&r);
        static const char header_only[] = "epoch,train/loss\n";
        assert_int_equal(gw_results_parse(header_only, strlen(header_only), &r), 0);
        assert_int_equal(gw_model_best_row(&r), -1);
        gw_results_free(&r);
}

static void compare(void **state) {
        (void) state;
        const char *m = "metrics/mAP50-95(B)";
        assert_int_equal(gw_model_compare(m, 0.5, false, NAN), GW_MODEL_FIRST);
        assert_int_equal(gw_model_compare(m, 0.5, true, 0.4), GW_MODEL_BETTER);
        assert_int_equal(gw_model_compare(m, 0.4, true, 0.4), GW_MODEL_NOT_BETTER);
        assert_int_equal(gw_model_compare(m, 0.3, true, 0.4), GW_MODEL_NOT_BETTER);
        assert_int_equal(gw_model_compare(m, NAN, true, 0.4), GW_MODEL_NO_VALUE);
        /* A loss is better when lower. */
        assert_true(gw_model_lower_is_better("val/box_loss"));
        assert_false(gw_model_lower_is_better(m));
        assert_int_equal(gw_model_compare("val/box_loss", 0.8, true, 0.9), GW_MODEL_BETTER);
        assert_int_equal(gw_model_compare("val/box_loss", 1.0, true, 0.9), GW_MODEL_NOT_BETTER);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(names),    cmocka_unit_test(metrics),
                cmocka_unit_test(versions), cmocka_unit_test(best_row_by_fitness),
                cmocka_unit_test(compare),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
