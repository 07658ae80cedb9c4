/* The dashboard's first paint (api/firstpaint.h): every string of the API's replies is escaped
 * in the HTML, the JSON cannot end its <script> element, each marker is replaced once, and a
 * part the API refused says so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>

#include "api/firstpaint.h"

#define SEC GW_USEC_PER_SEC
#define NOW ((gw_usec_t) 1795000000 * SEC) /* 2026-11-18 11:06:40 UTC */

static const char tmpl[] = "<p id=\"who\"><!--gw:whoami--></p><main><!--gw:firstpaint--><!--gw:state--></main>"
                           "<!--gw:state-->";

static char *render(const char *state_json) {
        json_t *state = json_loads(state_json, 0, NULL);
        assert_non_null(state);
        size_t len;
        char *page = gw_firstpaint_render(tmpl, strlen(tmpl), state, NOW, &len);
        json_decref(state);
        assert_int_equal(strlen(page), len);
        return page;
}

static void escapes_user_text(void **state) {
        (void) state;
        char *page = render(
                "{\"gpus\": {\"gpus\": [{\"index\": 0, \"name\": \"A100 <i>\", \"health\": \"ok\", \"util\": 77, "
                "\"mem_used\": 1610612736, \"mem_total\": 85899345920, \"temp\": 40, \"job_info\": {\"id\": 3, "
                "\"name\": \"<script>alert(1)</script>\", \"user\": \"o'neil\"}}]},"
                " \"jobs\": {\"jobs\": [{\"id\": 3, \"name\": \"<script>alert(1)</script>\", \"user\": \"o'neil\", "
                "\"state\": \"RUNNING\", \"reason\": \"a & b \\\"c\\\"\\u0007\", \"gpus\": [0], \"ngpus\": 1, "
                "\"submit_time\": 1795000000.5}]},"
                " \"session\": {\"user\": \"x<y\", \"role\": \"admin\", \"signed_in\": true, \"csrf\": \"abc123\"}}");
        assert_null(strstr(page, "<script>alert"));
        assert_null(strstr(page, "<i>"));
        assert_non_null(strstr(page, "<p id=\"who\">x&lt;y (admin)</p>"));
        assert_non_null(strstr(page, "<tr data-job=\"3\"><td>3</td><td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"
                                     "<td>o&#39;neil</td><td>RUNNING</td><td>a &amp; b &quot;c&quot;</td><td>0</td>"
                                     "<td>2026-11-18 11:06</td></tr>"));
        assert_non_null(strstr(page, "<td class=\"num\">77%</td><td class=\"num\">1.5 GiB of 80 GiB</td>"));
        assert_non_null(strstr(page, "job 3 &lt;script&gt;alert(1)&lt;/script&gt; (o&#39;neil)"));
        assert_non_null(strstr(page, "as of 2026-11-18 11:06 UTC, for x&lt;y (admin)"));
        /* The JSON: '<' escaped, so one </script> ends it; no CSRF value in the page. */
        const char *js = strstr(page, "<script type=\"application/json\" id=\"gw-state\">");
        assert_non_null(js);
        const char *end = strstr(js, "</script>");
        assert_non_null(end);
        assert_null(memchr(js + 1, '<', (size_t) (end - js - 1)));
        assert_non_null(strstr(js, "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e"));
        assert_null(strstr(page, "abc123"));
        /* Each marker once: the second <!--gw:state--> stays as it is. */
        assert_non_null(strstr(page, "</main><!--gw:state-->"));
        free(page);
}

static void refused_and_empty_parts(void **state) {
        (void) state;
        char *page = render("{\"session\": {\"user\": \"\", \"role\": \"guest\", \"signed_in\": false}}");
        assert_non_null(strstr(page, "The GPUs are not available to this reader."));
        assert_non_null(strstr(page, "The queue is not available to this reader."));
        assert_non_null(strstr(page, "<p id=\"who\">guest (read-only)</p>"));
        free(page);
        page = render("{\"gpus\": {\"gpus\": []}, \"jobs\": {\"jobs\": []}}");
        assert_non_null(strstr(page, "No GPUs: the daemon found no NVIDIA GPU"));
        assert_non_null(strstr(page, "No jobs waiting or running."));
        free(page);
}

static void template_without_markers(void **state) {
        (void) state;
        json_t *st = json_object();
        size_t len;
        char *page = gw_firstpaint_render("<p>plain</p>", 12, st, NOW, &len);
        assert_string_equal(page, "<p>plain</p>");
        assert_int_equal(len, 12);
        free(page);
        json_decref(st);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(escapes_user_text),
                cmocka_unit_test(refused_and_empty_parts),
                cmocka_unit_test(template_without_markers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
