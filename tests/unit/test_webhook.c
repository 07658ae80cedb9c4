/* Webhook topics, URLs and texts (core/webhook.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>

#include "core/webhook.h"

static void topics(void **state) {
        (void) state;
        unsigned m = 0;
        char why[160];
        assert_int_equal(gw_webhook_topics_parse("end,retry", &m, why, sizeof why), 0);
        assert_int_equal(m, (1u << GW_HOOK_END) | (1u << GW_HOOK_RETRY));
        assert_int_equal(gw_webhook_topics_parse("all", &m, why, sizeof why), 0);
        assert_int_equal(m, (1u << _GW_HOOK_MAX) - 1);
        assert_int_equal(gw_webhook_topics_parse(GW_WEBHOOK_DEFAULT_TOPICS, &m, why, sizeof why), 0);
        assert_int_equal(gw_webhook_topics_parse("end,ends", &m, why, sizeof why), -EINVAL);
        assert_string_equal(why, "'ends' is not one of start, end, retry, warn, leak, gpu, model.published, all");
        assert_int_equal(gw_webhook_topics_parse("end,model.published", &m, why, sizeof why), 0);
        assert_int_equal(m, (1u << GW_HOOK_END) | (1u << GW_HOOK_MODEL));
        assert_int_equal(gw_webhook_topics_parse("", &m, why, sizeof why), -EINVAL);
        assert_int_equal(gw_webhook_topics_parse("end,", &m, why, sizeof why), 0);
        assert_int_equal(gw_webhook_topics_parse(",end", &m, why, sizeof why), -EINVAL);
}

/* Which job events go out: an end whatever its kind, never a later note on a finished job. */
static void topic_of_events(void **state) {
        (void) state;
        assert_int_equal(gw_webhook_topic_of("start", false), GW_HOOK_START);
        assert_int_equal(gw_webhook_topic_of("end", true), GW_HOOK_END);
        assert_int_equal(gw_webhook_topic_of("lost", true), GW_HOOK_END);
        assert_int_equal(gw_webhook_topic_of("cancel", true), GW_HOOK_END);
        assert_int_equal(gw_webhook_topic_of("restore", true), -1);
        assert_int_equal(gw_webhook_topic_of("end", false), -1);
        assert_int_equal(gw_webhook_topic_of("retry", false), GW_HOOK_RETRY);
        assert_int_equal(gw_webhook_topic_of("warn", false), GW_HOOK_WARN);
        assert_int_equal(gw_webhook_topic_of("leak", false), GW_HOOK_LEAK);
        assert_int_equal(gw_webhook_topic_of("xid", false), GW_HOOK_GPU);
        /* A model published from a completed job: an event after its end, with a topic of its own. */
        assert_int_equal(gw_webhook_topic_of("published", true), GW_HOOK_MODEL);
        assert_int_equal(gw_webhook_topic_of("not_published", true), -1);
        assert_string_equal(gw_webhook_topic_name(GW_HOOK_MODEL), "model.published");
        assert_int_equal(gw_webhook_topic_of("stray", false), GW_HOOK_GPU);
        assert_int_equal(gw_webhook_topic_of("submit", false), -1);
        assert_int_equal(gw_webhook_topic_of(NULL, true), -1);
        for (int t = 0; t < _GW_HOOK_MAX; t++)
                assert_non_null(gw_webhook_topic_name(t));
        assert_null(gw_webhook_topic_name(_GW_HOOK_MAX));
}

static void urls(void **state) {
        (void) state;
        char why[160];
        assert_int_equal(gw_webhook_url_check("https://hooks.example.org/services/T0/B0/x", why, sizeof why), 0);
        assert_int_equal(gw_webhook_url_check("http://127.0.0.1:9000/hook", why, sizeof why), 0);
        assert_int_equal(gw_webhook_url_check("ftp://example.org/", why, sizeof why), -EINVAL);
        assert_int_equal(gw_webhook_url_check("example.org/hook", why, sizeof why), -EINVAL);
        assert_int_equal(gw_webhook_url_check("http://", why, sizeof why), -EINVAL);
        assert_string_equal(why, "'http://' has no host");
        assert_int_equal(gw_webhook_url_check("http:///x", why, sizeof why), -EINVAL);
        assert_int_equal(gw_webhook_url_check("http://a b/", why, sizeof why), -EINVAL);
        assert_int_equal(gw_webhook_url_check("http://a/\x01", why, sizeof why), -EINVAL);
        char big[GW_WEBHOOK_URL_MAX + 16] = "http://h/";
        memset(big + 9, 'a', sizeof big - 10);
        big[sizeof big - 1] = '\0';
        assert_int_equal(gw_webhook_url_check(big, why, sizeof why), -EINVAL);
}

static void texts(void **state) {
        (void) state;
        char buf[200];
        gw_webhook_text(buf, sizeof buf, "lab1", 17, "smoke", "alice", "COMPLETED", "exit 0");
        assert_string_equal(buf, "gpuward@lab1: job 17 (smoke, alice) COMPLETED: exit 0");
        gw_webhook_text(buf, sizeof buf, "lab1", 18, NULL, NULL, "RUNNING", "");
        assert_string_equal(buf, "gpuward@lab1: job 18 RUNNING");
        gw_webhook_text(buf, sizeof buf, NULL, 19, NULL, "bob", NULL, NULL);
        assert_string_equal(buf, "gpuward@?: job 19 (bob) ?");
        gw_webhook_text(buf, 12, "lab1", 17, "smoke", "alice", "COMPLETED", "exit 0");
        assert_int_equal(strlen(buf), 11);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(topics),
                cmocka_unit_test(topic_of_events),
                cmocka_unit_test(urls),
                cmocka_unit_test(texts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
