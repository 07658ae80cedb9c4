/* libFuzzer target: the job array spec parser and the folded form (src/core/jobarray.h).  A
 * spec that parses folds back to a list that parses to the same tasks; every fold, into any
 * buffer size, ends in a NUL within the buffer. */
#include <errno.h>

#include "core/jobarray.h"
#include "fuzz_common.h"

#define FOLD_MAX (GW_ARRAY_MAX_TASKS * 16 + 64)

static void check_round_trip(const struct gw_array *a, const char *folded) {
        /* "7_[LIST%N]" or "7_ID": the part after "_", without brackets, is a spec again. */
        const char *us = strchr(folded, '_');
        FUZZ_CHECK(us);
        char *spec = strdup(us + 1 + (us[1] == '['));
        FUZZ_CHECK(spec);
        size_t len = strlen(spec);
        if (us[1] == '[') {
                FUZZ_CHECK(len > 0 && spec[len - 1] == ']');
                spec[len - 1] = '\0';
        }
        struct gw_array b;
        char msg[GW_ARRAY_MSG_SIZE];
        FUZZ_CHECK(gw_array_parse(spec, "array", &b, msg, sizeof(msg)) == 0);
        FUZZ_CHECK(b.n == a->n && b.max_running == a->max_running);
        FUZZ_CHECK(memcmp(a->ids, b.ids, a->n * sizeof(uint32_t)) == 0);
        gw_array_done(&b);
        free(spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 4096)
                return 0;
        char *text = fuzz_strndup(data, size);
        struct gw_array a = { 0 };
        char msg[GW_ARRAY_MSG_SIZE];

        int r = gw_array_parse(text, "--array", &a, msg, sizeof(msg));
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r < 0) {
                FUZZ_CHECK(a.ids == NULL && strncmp(msg, "--array: ", 9) == 0);
        } else {
                FUZZ_CHECK(a.n >= 1 && a.n <= GW_ARRAY_MAX_TASKS && a.max_running <= GW_ARRAY_MAX_TASKS);
                for (size_t i = 0; i < a.n; i++)
                        FUZZ_CHECK(a.ids[i] <= GW_ARRAY_MAX_INDEX && (i == 0 || a.ids[i] > a.ids[i - 1]));
                char *out = malloc(FOLD_MAX);
                FUZZ_CHECK(out);
                int n = gw_array_fold(7, a.ids, a.n, a.max_running, out, FOLD_MAX);
                FUZZ_CHECK(n > 0 && (size_t) n == strlen(out));
                check_round_trip(&a, out);
                /* Every size up to the whole: a terminated prefix, never past the buffer. */
                for (size_t cap = 0; cap <= (size_t) n + 1 && cap < 64; cap++) {
                        char *small = malloc(cap ? cap : 1);
                        FUZZ_CHECK(small);
                        int k = gw_array_fold(7, a.ids, a.n, a.max_running, small, cap);
                        FUZZ_CHECK(k == n || k == -ENOBUFS);
                        if (cap)
                                FUZZ_CHECK(memchr(small, '\0', cap) != NULL);
                        free(small);
                }
                free(out);
        }
        gw_array_done(&a);
        free(text);
        return 0;
}
