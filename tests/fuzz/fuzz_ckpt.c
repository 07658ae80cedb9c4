/* libFuzzer target: a checkpoint's own epoch (src/core/ckpt.h): the zip's central directory
 * and local header, then the pickle's opcodes.  The input is used twice: as a whole .pt file
 * (gw_ckpt_epoch), and as data.pkl alone (gw_ckpt_pickle_epoch), whose walk is where most of
 * the branches are.  Each is an exact-size heap copy, so a read past the end is caught. */
#include <errno.h>

#include "core/ckpt.h"
#include "fuzz_common.h"

static void check(int r, long e, char *why) {
        FUZZ_CHECK(r == 0 || r == -ENOENT || r == -ENODATA || r == -EBADMSG || r == -ERANGE);
        FUZZ_CHECK(r == 0 ? e >= -1 && e <= 100000000L : e == -7);
        FUZZ_CHECK(memchr(why, '\0', 200) != NULL && why[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 1024 * 1024)
                return 0;
        uint8_t *copy = (uint8_t *) fuzz_memdup(data, size);
        char why[200];
        long e = -7;

        int r = gw_ckpt_pickle_epoch(copy, size, &e, why, sizeof why);
        check(r, e, why);
        /* A prefix never settles what the whole left open (only SETITEMS settles it). */
        if (r == -ENODATA && size > 0) {
                long e2 = -7;
                FUZZ_CHECK(gw_ckpt_pickle_epoch(copy, size - 1, &e2, why, sizeof why) == -ENODATA);
        }

        e = -7;
        r = gw_ckpt_epoch(copy, size, &e, why, sizeof why);
        check(r, e, why);
        free(copy);
        return 0;
}
