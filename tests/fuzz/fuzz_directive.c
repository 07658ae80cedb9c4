/* libFuzzer target: the #GPUWARD directive parser (src/core/directive.h), on a whole
 * script, then again appending to what the first call returned. */
#include <errno.h>

#include "core/directive.h"
#include "core/jobrec.h"
#include "fuzz_common.h"

static void check_vec(char **argv, int argc) {
        FUZZ_CHECK(argc >= 0 && argc <= 256);
        FUZZ_CHECK(argv && argv[argc] == NULL);
        FUZZ_CHECK(gw_strv_length(argv) == (size_t) argc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 64 * 1024)
                return 0;
        char *text = fuzz_strndup(data, size);
        char **argv = NULL;
        int argc = 0, line = 0;

        int r = gw_directives_parse(text, &argv, &argc, &line);
        FUZZ_CHECK(r >= 0 || r == -EINVAL || r == -E2BIG);
        if (r < 0) {
                FUZZ_CHECK(argv == NULL && argc == 0);
                FUZZ_CHECK(line >= 1);
        } else {
                check_vec(argv, argc);
                int before = argc;
                r = gw_directives_parse(text, &argv, &argc, &line);
                if (r >= 0) {
                        check_vec(argv, argc);
                        FUZZ_CHECK(argc == 2 * before);
                } else
                        FUZZ_CHECK(argc == before); /* a failed append leaves the vector alone */
                check_vec(argv, argc);
        }
        gw_strv_free(argv);
        free(text);
        return 0;
}
