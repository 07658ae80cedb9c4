/* libFuzzer target: the launch request datagram (src/shim/shim.h), as the resident launcher
 * reads it from the daemon's socket and the daemon reads its own requests back after a
 * launcher died.  Whatever the bytes, the two counts must bound the split, every pointer must
 * land inside the datagram on a NUL-terminated string, and the strings must tile it: a
 * request that splits is exactly its header and its strings, nothing read past the end. */
#include "../../src/shim/shim.h"

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > SHIM_REQUEST_MAX)
                return 0;
        char *buf = fuzz_memdup(data, size);

        uint32_t argc, envc;
        if (shim_request_counts(buf, size, &argc, &envc) == 0) {
                FUZZ_CHECK(size > SHIM_HEADER_LEN && (uint64_t) argc + envc <= size - SHIM_HEADER_LEN);
                char **argv = calloc((size_t) argc + 1, sizeof(char *));
                char **envp = calloc((size_t) envc + 1, sizeof(char *));
                if (!argv || !envp)
                        abort();
                if (shim_request_split(buf, size, argc, envc, argv, envp) == 0) {
                        FUZZ_CHECK(argv[argc] == NULL && envp[envc] == NULL);
                        const char *expect = buf + SHIM_HEADER_LEN;
                        for (uint32_t i = 0; i < argc + envc; i++) {
                                const char *s = i < argc ? argv[i] : envp[i - argc];
                                FUZZ_CHECK(s == expect);
                                FUZZ_CHECK(s >= buf + SHIM_HEADER_LEN && s < buf + size);
                                expect = s + strlen(s) + 1;
                                FUZZ_CHECK(expect <= buf + size);
                        }
                }
                free(argv);
                free(envp);
        }
        free(buf);
        return 0;
}
