/* libFuzzer target: the training phase read from a log's tail (gw_phase_from_log in
 * src/core/progress.h), with the default rules and with rules a config could give: a longer
 * window, an empty pattern, a prefix longer than any line.  The input is an exact-size buffer,
 * not NUL-terminated, as the daemon reads a log's last bytes. */
#include "core/phase.h"
#include "core/progress.h"
#include "fuzz_common.h"

static const struct gw_phase_pattern extra[] = {
        { GW_PHASE_SAVING, GW_MATCH_SUBSTR, "", false },
        { GW_PHASE_SAVING, GW_MATCH_SUBSTR, NULL, false },
        { GW_PHASE_VALIDATING, GW_MATCH_PREFIX, "evaluating", true },
        { GW_PHASE_VALIDATING, GW_MATCH_PREFIX,
          "a prefix longer than a line can be after the escapes are stripped................", false },
        { GW_PHASE_UNKNOWN, GW_MATCH_SUBSTR, "x", false }, /* ignored: not a phase */
        { (enum gw_phase) 99, GW_MATCH_SUBSTR, "x", false }, /* ignored: out of range */
        { GW_PHASE_TRAINING, (enum gw_match) 77, "x", false }, /* ignored: unknown match */
        { GW_PHASE_TRAINING, GW_MATCH_EPOCH_FRACTION, NULL, false },
};

static void check(const char *tail, size_t len, const struct gw_phase_rules *rules) {
        struct gw_phase_result res;
        memset(&res, 0xa5, sizeof res);
        int k = gw_phase_from_log(tail, len, rules, &res);
        FUZZ_CHECK(k == 0);
        FUZZ_CHECK(res.phase >= GW_PHASE_UNKNOWN && res.phase < _GW_PHASE_MAX);
        FUZZ_CHECK(gw_phase_name(res.phase) != NULL);
        size_t n = strnlen(res.line, sizeof res.line);
        FUZZ_CHECK(n < sizeof res.line);
        for (size_t i = 0; i < n; i++) /* escapes and control bytes stripped */
                FUZZ_CHECK((unsigned char) res.line[i] >= 0x20 && res.line[i] != 0x7f);
        /* Trimmed, unless cut to fit (the cut may land on a blank). */
        FUZZ_CHECK(n == 0 || res.line[0] != ' ');
        FUZZ_CHECK(n == 0 || n == sizeof res.line - 1 || res.line[n - 1] != ' ');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 256 * 1024)
                return 0;
        char *tail = fuzz_memdup(data, size);

        check(tail, size, NULL);

        struct gw_phase_pattern pats[32];
        size_t n = 0;
        for (size_t i = 0; i < gw_phase_patterns_default_n && n < 32; i++)
                pats[n++] = gw_phase_patterns_default[i];
        for (size_t i = 0; i < sizeof extra / sizeof extra[0] && n < 32; i++)
                pats[n++] = extra[i];
        struct gw_phase_rules rules = { .patterns = pats, .n_patterns = n, .last_lines = 5000 };
        check(tail, size, &rules);
        rules.last_lines = 1;
        check(tail, size, &rules);
        rules.n_patterns = 0;
        check(tail, size, &rules);

        free(tail);
        return 0;
}
