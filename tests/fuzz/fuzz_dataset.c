/* libFuzzer target: the dataset cache's readers (src/core/datayaml.h, src/core/cache.h): the
 * input as a data YAML (its root, then rewritten: the copy must have a root again, the new
 * one) and as a manifest line (what parses writes back the same). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/datayaml.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char root[GW_DATAYAML_MAX_PATH], why[512];
        const char *text = (const char *) data;
        int r = gw_datayaml_root(text, size, root, sizeof root, why, sizeof why);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        char *out = NULL;
        int w = gw_datayaml_rewrite(text, size, "/cache/e/k/v1/data", &out, why, sizeof why);
        FUZZ_CHECK(w == 0 || w == -EINVAL);
        FUZZ_CHECK(w < 0 || r == 0);
        if (w == 0) {
                FUZZ_CHECK(gw_datayaml_root(out, strlen(out), root, sizeof root, why, sizeof why) == 0);
                FUZZ_CHECK(!strcmp(root, "/cache/e/k/v1/data"));
        }
        free(out);
        struct gw_cache_file f, g;
        if (size < GW_CACHE_LINE_MAX && gw_cache_manifest_parse(text, size, &f) == 0) {
                char line[GW_CACHE_LINE_MAX];
                size_t n = gw_cache_manifest_line(&f, line, sizeof line);
                FUZZ_CHECK(n > 0 && line[n - 1] == '\n');
                FUZZ_CHECK(gw_cache_manifest_parse(line, n - 1, &g) == 0);
                FUZZ_CHECK(gw_cache_file_same(&f, &g) && !strcmp(f.rel, g.rel));
        }
        return 0;
}
