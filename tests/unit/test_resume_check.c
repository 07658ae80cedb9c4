#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/resume_check.h"

static void continued_in_the_same_run(void **state) {
        (void) state;
        char msg[GW_RESUME_CHECK_MAX];
        struct gw_resume_seen s = { .given_run = "/w/runs/detect/train",
                                    .run = "/w/runs/detect/train",
                                    .epoch = 4,
                                    .reached = 3,
                                    .offer = GW_RESUME_BY_ARG };
        assert_int_equal(gw_resume_judge(&s, msg, sizeof msg), GW_RESUME_CONTINUED);
        assert_string_equal(msg, "continued from its checkpoint (epoch 3 by the attempt before): epoch 4 written in "
                                 "its run \x1etrain\x1f");
}

/* Killed between epoch 2's row and its last.pt: the checkpoint holds epoch 1, and that is
 * what is said; what the attempt before reached is said beside it. */
static void the_checkpoints_own_epoch_is_said(void **state) {
        (void) state;
        char msg[GW_RESUME_CHECK_MAX];
        struct gw_resume_seen s = { .given_run = "/w/runs/detect/train",
                                    .run = "/w/runs/detect/train",
                                    .epoch = 2,
                                    .reached = 2,
                                    .ckpt_epoch = 1,
                                    .offer = GW_RESUME_BY_ARG };
        assert_int_equal(gw_resume_judge(&s, msg, sizeof msg), GW_RESUME_CONTINUED);
        assert_string_equal(msg, "continued from its checkpoint of epoch 1 (the attempt before reached epoch 2): "
                                 "epoch 2 written in its run \x1etrain\x1f");
        s.reached = 1;
        assert_int_equal(gw_resume_judge(&s, msg, sizeof msg), GW_RESUME_CONTINUED);
        assert_string_equal(msg, "continued from its checkpoint of epoch 1: epoch 2 written in its run \x1etrain\x1f");
        s.run = "/w/runs/detect/train2";
        s.epoch = 1;
        assert_int_equal(gw_resume_judge(&s, msg, sizeof msg), GW_RESUME_STARTED_OVER);
        assert_non_null(strstr(msg, "not continued from its checkpoint of epoch 1;"));
}

static void a_new_folder_is_a_new_run(void **state) {
        (void) state;
        char msg[GW_RESUME_CHECK_MAX];
        struct gw_resume_seen s = { .given_run = "/w/runs/detect/train",
                                    .run = "/w/runs/detect/train3",
                                    .epoch = 1,
                                    .reached = 3,
                                    .offer = GW_RESUME_BY_ENV };
        assert_int_equal(gw_resume_judge(&s, msg, sizeof msg), GW_RESUME_STARTED_OVER);
        assert_non_null(strstr(msg, "started over, not resumed: epoch 1 written in another run, \x1etrain3\x1f"));
        assert_non_null(strstr(msg, "GPUWARD_RESUME_FROM was set, but its command does not read it"));
        assert_non_null(strstr(msg, "--resume-cmd"));
        /* A later first look (epoch 2 already) in another folder is still a new run. */
        s.epoch = 2;
        assert_int_equal(gw_resume_judge(&s, msg, sizeof msg), GW_RESUME_STARTED_OVER);
}

static void epoch_one_again_in_the_same_folder(void **state) {
        (void) state;
        char msg[GW_RESUME_CHECK_MAX];
        struct gw_resume_seen s = { .given_run = "/w/runs/detect/x",
                                    .run = "/w/runs/detect/x",
                                    .epoch = 1,
                                    .reached = -1,
                                    .offer = GW_RESUME_BY_CMD };
        assert_int_equal(gw_resume_judge(&s, msg, sizeof msg), GW_RESUME_STARTED_OVER);
        assert_non_null(strstr(msg, "epoch 1 written in its run \x1ex\x1f, not continued from its checkpoint;"));
        assert_non_null(strstr(msg, "its --resume-cmd ran, but"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(continued_in_the_same_run),
                cmocka_unit_test(the_checkpoints_own_epoch_is_said),
                cmocka_unit_test(a_new_folder_is_a_new_run),
                cmocka_unit_test(epoch_one_again_in_the_same_folder),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
