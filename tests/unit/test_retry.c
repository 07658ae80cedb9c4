#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/retry.h"

#define SEC GW_USEC_PER_SEC
#define NOW ((gw_usec_t) 1700000000 * SEC)

static struct gw_retry_decision decide_p(const struct gw_retry_policy *p, unsigned attempts,
                                         enum gw_failure_class cls) {
        struct gw_retry_state s = { .attempts = attempts };
        struct gw_failure_verdict v = { .cls = cls, .gpu = -1 };
        struct gw_retry_decision d;

        memset(&d, 0x5a, sizeof(d));
        assert_int_equal(gw_retry_decide(p, &s, &v, NOW, &d), 0);
        return d;
}

static struct gw_retry_decision decide(unsigned attempts, enum gw_failure_class cls) {
        struct gw_retry_policy p;

        gw_retry_policy_default(&p);
        return decide_p(&p, attempts, cls);
}

static void expect_stop(const struct gw_retry_decision *d, enum gw_retry_why why, const char *reason) {
        assert_false(d->retry);
        assert_string_equal(gw_retry_why_name(d->why), gw_retry_why_name(why));
        assert_string_equal(d->reason, reason);
        assert_int_equal(d->backoff, 0);
        assert_int_equal(d->not_before, 0);
        assert_int_equal(d->retry_no, 0);
}

static void backoff_doubles_then_caps(void **state) {
        struct gw_retry_policy p;
        const long want[] = { 10, 20, 40, 80, 160, 320, 600, 600, 600, 600 };

        gw_retry_policy_default(&p);
        p.max_retries = 10;
        for (unsigned a = 1; a <= 10; a++) {
                struct gw_retry_decision d = decide_p(&p, a, GW_FAILURE_CUDA_ERROR);

                assert_true(d.retry);
                assert_int_equal(d.why, GW_RETRY_WHY_RETRY);
                assert_int_equal(d.retry_no, a);
                assert_int_equal(d.backoff, want[a - 1] * SEC);
                assert_int_equal(d.not_before, NOW + want[a - 1] * SEC);
        }
        /* No overflow however many retries the doubling would reach. */
        p.max_retries = GW_RETRY_MAX_RETRIES;
        p.backoff_cap = INT64_MAX / 4;
        struct gw_retry_decision d = decide_p(&p, GW_RETRY_MAX_RETRIES, GW_FAILURE_LOST);
        assert_true(d.retry);
        assert_int_equal(d.backoff, INT64_MAX / 4);
}

static void default_classes_are_retried(void **state) {
        struct gw_retry_decision d = decide(1, GW_FAILURE_CUDA_ERROR);

        assert_string_equal(d.reason, "retry 1/3 in 10s after cuda_error");
        d = decide(2, GW_FAILURE_GPU_FAULT);
        assert_string_equal(d.reason, "retry 2/3 in 20s after gpu_fault");
        d = decide(3, GW_FAILURE_NCCL_ERROR);
        assert_string_equal(d.reason, "retry 3/3 in 40s after nccl_error");
        d = decide(1, GW_FAILURE_LOST);
        assert_true(d.retry);
}

static void exhausted(void **state) {
        struct gw_retry_decision d = decide(4, GW_FAILURE_CUDA_ERROR);
        struct gw_retry_policy p;

        expect_stop(&d, GW_RETRY_WHY_EXHAUSTED, "retries exhausted (3/3): last cuda_error");
        gw_retry_policy_default(&p);
        p.max_retries = 0;
        d = decide_p(&p, 1, GW_FAILURE_GPU_FAULT);
        expect_stop(&d, GW_RETRY_WHY_EXHAUSTED, "retries exhausted (0/0): last gpu_fault");
}

static void never_retried(void **state) {
        struct gw_retry_policy p;
        struct gw_retry_decision d = decide(1, GW_FAILURE_USER_ERROR);

        expect_stop(&d, GW_RETRY_WHY_NEVER, "user_error is not retried");
        d = decide(1, GW_FAILURE_CANCELLED);
        expect_stop(&d, GW_RETRY_WHY_NEVER, "cancelled is not retried");
        d = decide(1, GW_FAILURE_TIMEOUT);
        expect_stop(&d, GW_RETRY_WHY_NEVER, "timeout is not retried");
        d = decide(1, GW_FAILURE_OK);
        expect_stop(&d, GW_RETRY_WHY_OK, "the attempt succeeded: nothing to retry");

        /* Even with every class that may be named, and retries to spare. */
        gw_retry_policy_default(&p);
        p.max_retries = 50;
        assert_int_equal(gw_retry_parse_classes("gpu_fault,cuda_error,nccl_error,oom,host_oom,lost,reclaimed",
                                                &p.retry_on, NULL, 0),
                         0);
        d = decide_p(&p, 1, GW_FAILURE_USER_ERROR);
        assert_false(d.retry);
}

static void oom_needs_a_cause(void **state) {
        struct gw_retry_policy p;
        struct gw_retry_state s = { .attempts = 1 };
        struct gw_failure_verdict v = { .cls = GW_FAILURE_OOM };
        struct gw_retry_decision d;

        gw_retry_policy_default(&p);
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        expect_stop(&d, GW_RETRY_WHY_OOM,
                    "oom is retried only when a memory leak was detected or other processes took GPU memory");

        s.oom_explained = true;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        assert_true(d.retry);
        assert_string_equal(d.reason, "retry 1/3 in 10s after oom");
        /* The limit still applies. */
        s.attempts = 4;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        assert_int_equal(d.why, GW_RETRY_WHY_EXHAUSTED);

        /* Naming oom retries it without a known cause. */
        s = (struct gw_retry_state){ .attempts = 1 };
        p.retry_on |= GW_FAILURE_BIT(GW_FAILURE_OOM);
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        assert_true(d.retry);
}

static void reclaimed_and_host_oom_only_when_named(void **state) {
        struct gw_retry_policy p;
        struct gw_retry_decision d = decide(1, GW_FAILURE_RECLAIMED);

        expect_stop(&d, GW_RETRY_WHY_NOT_LISTED,
                    "reclaimed is not retried unless --retry-on names it (now: gpu_fault,cuda_error,nccl_error,lost)");
        d = decide(1, GW_FAILURE_HOST_OOM);
        assert_int_equal(d.why, GW_RETRY_WHY_NOT_LISTED);

        gw_retry_policy_default(&p);
        assert_int_equal(gw_retry_parse_classes("gpu_fault,reclaimed,host_oom", &p.retry_on, NULL, 0), 0);
        d = decide_p(&p, 1, GW_FAILURE_RECLAIMED);
        assert_true(d.retry);
        d = decide_p(&p, 1, GW_FAILURE_HOST_OOM);
        assert_true(d.retry);
        assert_string_equal(d.reason, "retry 1/3 in 10s after host_oom (killed by the kernel OOM killer: the job "
                                      "may need a larger --mem)");
        /* And what is not named any more is not retried. */
        d = decide_p(&p, 1, GW_FAILURE_CUDA_ERROR);
        expect_stop(&d, GW_RETRY_WHY_NOT_LISTED,
                    "cuda_error is not retried unless --retry-on names it (now: gpu_fault,host_oom,reclaimed)");
}

static void crash_loop(void **state) {
        struct gw_retry_policy p;
        struct gw_retry_state s = {
                .attempts = 3,
                .prev = { .valid = true, .epoch = 7, .ckpt = "1712345678000000:52428800" },
                .last = { .valid = true, .epoch = 7, .ckpt = "1712345678000000:52428800" },
        };
        struct gw_failure_verdict v = { .cls = GW_FAILURE_CUDA_ERROR };
        struct gw_retry_decision d;

        gw_retry_policy_default(&p);
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        expect_stop(&d, GW_RETRY_WHY_CRASH_LOOP,
                    "crash loop: attempts 2 and 3 both failed during epoch 8 with no new checkpoint");
        assert_string_equal(gw_retry_why_name(d.why), "crash_loop");

        /* Reported as a crash loop rather than as exhausted retries. */
        s.attempts = 4;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        assert_int_equal(d.why, GW_RETRY_WHY_CRASH_LOOP);
        s.attempts = 3;

        /* A new checkpoint in between: progress, retry. */
        snprintf(s.last.ckpt, sizeof(s.last.ckpt), "1712349999000000:52428800");
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        assert_true(d.retry);
        /* A later epoch: progress, retry. */
        snprintf(s.last.ckpt, sizeof(s.last.ckpt), "%s", s.prev.ckpt);
        s.last.epoch = 8;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        assert_true(d.retry);
        /* Unknown epochs or an unknown earlier attempt: no judgement. */
        s.last.epoch = s.prev.epoch = -1;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        assert_true(d.retry);
        s.last.epoch = s.prev.epoch = 7;
        s.prev.valid = false;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        assert_true(d.retry);

        /* No checkpoint ever, dying in the first epoch twice. */
        s = (struct gw_retry_state){ .attempts = 2,
                                     .prev = { .valid = true, .epoch = 0 },
                                     .last = { .valid = true, .epoch = 0 } };
        v.cls = GW_FAILURE_NCCL_ERROR;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        expect_stop(&d, GW_RETRY_WHY_CRASH_LOOP,
                    "crash loop: attempts 1 and 2 both failed during epoch 1 with no new checkpoint");
        /* Started over (a script that ignores the checkpoint it is given) and failed where the
         * previous attempt did: a loop, though its own run left a checkpoint of another identity. */
        s = (struct gw_retry_state){ .attempts = 2,
                                     .prev = { .valid = true, .epoch = 2, .ckpt = "100:5" },
                                     .last = { .valid = true, .epoch = 2, .ckpt = "200:5", .fresh = true } };
        v.cls = GW_FAILURE_CUDA_ERROR;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        expect_stop(
                &d, GW_RETRY_WHY_CRASH_LOOP,
                "crash loop: attempts 1 and 2 both failed during epoch 3 (the second started over instead of resuming)");
        /* The same after resuming: the new checkpoint is progress within the epoch. */
        s.last.fresh = false;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        assert_true(d.retry);
        /* The first attempt has no predecessor. */
        s.attempts = 1;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), 0);
        assert_true(d.retry);
}

static void parse_classes(void **state) {
        uint32_t m = 0xdead;
        char why[256], buf[128];
        struct gw_retry_policy p;

        assert_int_equal(gw_retry_parse_classes("gpu_fault,lost", &m, why, sizeof(why)), 0);
        assert_int_equal(m, GW_FAILURE_BIT(GW_FAILURE_GPU_FAULT) | GW_FAILURE_BIT(GW_FAILURE_LOST));
        assert_int_equal(gw_retry_parse_classes(" GPU_Fault ,\tcuda_error , lost,lost", &m, why, sizeof(why)), 0);
        assert_int_equal(m, GW_FAILURE_BIT(GW_FAILURE_GPU_FAULT) | GW_FAILURE_BIT(GW_FAILURE_CUDA_ERROR) |
                                    GW_FAILURE_BIT(GW_FAILURE_LOST));
        assert_int_equal(gw_retry_parse_classes("none", &m, why, sizeof(why)), 0);
        assert_int_equal(m, 0);
        gw_retry_policy_default(&p);
        assert_int_equal(gw_retry_parse_classes(GW_RETRY_DEFAULT_CLASSES, &m, why, sizeof(why)), 0);
        assert_int_equal(m, p.retry_on);
        assert_string_equal(gw_retry_format_classes(m, buf, sizeof(buf)), GW_RETRY_DEFAULT_CLASSES);
        assert_string_equal(gw_retry_format_classes(0, buf, sizeof(buf)), "none");

        m = 0xdead;
        assert_int_equal(gw_retry_parse_classes("gpu_falt", &m, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "unknown failure class 'gpu_falt' (known: gpu_fault, cuda_error, nccl_error, oom, "
                                 "host_oom, lost, killed, reclaimed)");
        assert_int_equal(m, 0xdead);
        assert_int_equal(gw_retry_parse_classes("lost,a_class_name_far_too_long_to_be_real", &m, why, sizeof(why)),
                         -EINVAL);
        assert_non_null(strstr(why, "unknown failure class 'a_class_name_far_too_long_to_be_real'"));
        assert_int_equal(gw_retry_parse_classes("gpu_fault,user_error", &m, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "user_error is never retried");
        assert_int_equal(gw_retry_parse_classes("timeout", &m, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "timeout is never retried");
        assert_int_equal(gw_retry_parse_classes("", &m, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "empty class list (use 'none' to retry nothing)");
        assert_int_equal(gw_retry_parse_classes("  ", &m, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "empty class list (use 'none' to retry nothing)");
        assert_int_equal(gw_retry_parse_classes(NULL, &m, why, sizeof(why)), -EINVAL);
        assert_int_equal(gw_retry_parse_classes("gpu_fault,,lost", &m, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "empty class name in 'gpu_fault,,lost'");
        assert_int_equal(gw_retry_parse_classes("lost,", &m, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "empty class name in 'lost,'");
        assert_int_equal(gw_retry_parse_classes("none,lost", &m, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "'none' cannot be combined with class names");
        assert_int_equal(m, 0xdead);
        /* A NULL message buffer is allowed. */
        assert_int_equal(gw_retry_parse_classes("nope", &m, NULL, 0), -EINVAL);
}

static void bad_policy_and_state(void **state) {
        struct gw_retry_policy p;
        struct gw_retry_state s = { .attempts = 1 };
        struct gw_failure_verdict v = { .cls = GW_FAILURE_CUDA_ERROR };
        struct gw_retry_decision d = { .reason = "untouched" };
        char why[128];

        gw_retry_policy_default(&p);
        assert_int_equal(gw_retry_policy_check(&p, why, sizeof(why)), 0);
        p.backoff_base = 0;
        assert_int_equal(gw_retry_policy_check(&p, why, sizeof(why)), -EINVAL);
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), -EINVAL);
        assert_string_equal(d.reason, "untouched");
        gw_retry_policy_default(&p);
        p.backoff_cap = 5 * SEC;
        assert_int_equal(gw_retry_policy_check(&p, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "the retry backoff cap is below its base");
        gw_retry_policy_default(&p);
        p.max_retries = GW_RETRY_MAX_RETRIES + 1;
        assert_int_equal(gw_retry_policy_check(&p, why, sizeof(why)), -EINVAL);
        gw_retry_policy_default(&p);
        p.retry_on |= GW_FAILURE_BIT(GW_FAILURE_TIMEOUT);
        assert_int_equal(gw_retry_policy_check(&p, why, sizeof(why)), -EINVAL);
        assert_string_equal(why, "timeout is never retried");
        gw_retry_policy_default(&p);
        p.retry_on |= UINT32_C(1) << 30;
        assert_int_equal(gw_retry_policy_check(&p, why, sizeof(why)), -EINVAL);

        gw_retry_policy_default(&p);
        s.attempts = 0;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), -EINVAL);
        s.attempts = 1;
        v.cls = _GW_FAILURE_CLASS_MAX;
        assert_int_equal(gw_retry_decide(&p, &s, &v, NOW, &d), -EINVAL);
        assert_string_equal(d.reason, "untouched");

        for (int w = 0; w < _GW_RETRY_WHY_MAX; w++)
                assert_non_null(gw_retry_why_name((enum gw_retry_why) w));
        assert_null(gw_retry_why_name(_GW_RETRY_WHY_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(backoff_doubles_then_caps),
                cmocka_unit_test(default_classes_are_retried),
                cmocka_unit_test(exhausted),
                cmocka_unit_test(never_retried),
                cmocka_unit_test(oom_needs_a_cause),
                cmocka_unit_test(reclaimed_and_host_oom_only_when_named),
                cmocka_unit_test(crash_loop),
                cmocka_unit_test(parse_classes),
                cmocka_unit_test(bad_policy_and_state),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
