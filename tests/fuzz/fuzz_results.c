/* libFuzzer target: the training-progress file parsers (src/core/progress.h): Ultralytics'
 * results.csv, a declared progress file, args.yaml and epochs on a command line.  The input is
 * handed over as the daemon hands a file it read: an exact-size buffer, not NUL-terminated. */
#include <math.h>

#include "core/progress.h"
#include "fuzz_common.h"

static void check_results(const struct gw_results *r) {
        FUZZ_CHECK(r->n_cols >= 1 && r->n_cols <= GW_RESULTS_MAX_COLS);
        FUZZ_CHECK(r->epoch_col < r->n_cols && r->cols[r->epoch_col].kind == GW_RESULTS_COL_EPOCH);
        FUZZ_CHECK(r->map50_col < (int) r->n_cols && r->map50_95_col < (int) r->n_cols);
        FUZZ_CHECK(r->n_loss_cols <= r->n_cols);
        for (size_t i = 0; i < r->n_cols; i++)
                FUZZ_CHECK(memchr(r->cols[i].name, '\0', sizeof r->cols[i].name));
        FUZZ_CHECK(r->n_rows <= r->n_lines && r->n_rows <= GW_RESULTS_MAX_ROWS);
        FUZZ_CHECK(r->last_epoch == (r->n_rows ? r->epochs[r->n_rows - 1] : -1));
        for (size_t i = 0; i < r->n_rows; i++) {
                FUZZ_CHECK(r->epochs[i] >= 0 && r->epochs[i] <= 1000000000L);
                FUZZ_CHECK(i == 0 || r->epochs[i] > r->epochs[i - 1]); /* distinct, ascending */
                FUZZ_CHECK(gw_results_value(r, i, r->epoch_col) == (double) r->epochs[i]);
                double losses[GW_RESULTS_MAX_COLS];
                FUZZ_CHECK(gw_results_losses(r, i, losses, GW_RESULTS_MAX_COLS) == r->n_loss_cols);
                (void) gw_results_map50(r, i);
                (void) gw_results_map50_95(r, i);
        }
        FUZZ_CHECK(isnan(gw_results_value(r, r->n_rows, 0)));
}

/* The text up to and including its last '\n': what a reader sees before the writer finishes
 * the current line.  Parsers ignore a torn last line, so both must read the same. */
static size_t complete_len(const char *text, size_t len) {
        while (len > 0 && text[len - 1] != '\n')
                len--;
        return len;
}

static void fuzz_argv(const char *text, size_t len) {
        /* Lines as arguments; argv[0] is the program and is skipped. */
        const char *argv[64];
        char *copy = fuzz_strndup((const uint8_t *) text, len);
        size_t argc = 0;
        for (char *p = copy, *nl; argc < 64 && p; p = nl ? nl + 1 : NULL) {
                nl = strchr(p, '\n');
                if (nl)
                        *nl = '\0';
                argv[argc++] = p;
        }
        long v = -12345;
        int r = gw_argv_epochs(argv, argc, &v);
        FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL || r == -ERANGE || r == -ENODATA); /* ENODATA: time=H */
        if (r < 0)
                FUZZ_CHECK(v == -12345);
        free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 1024 * 1024)
                return 0;
        char *text = fuzz_memdup(data, size);

        struct gw_results r, rc;
        int k = gw_results_parse(text, size, &r);
        FUZZ_CHECK(k == 0 || k == -ENODATA || k == -EBADMSG || k == -E2BIG);
        int kc = gw_results_parse(text, complete_len(text, size), &rc);
        FUZZ_CHECK(kc == k);
        if (k == 0) {
                check_results(&r);
                FUZZ_CHECK(rc.n_rows == r.n_rows && rc.n_lines == r.n_lines && rc.last_epoch == r.last_epoch);
                gw_results_free(&r);
                gw_results_free(&r); /* leaves it empty: safe twice */
                gw_results_free(&rc);
        }

        struct gw_progress p = { .epoch = -7, .total = -7 };
        k = gw_progress_parse(text, size, &p);
        FUZZ_CHECK(k == 0 || k == -ENODATA);
        if (k == 0)
                FUZZ_CHECK(p.epoch >= 0 && p.total >= -1);
        else
                FUZZ_CHECK(p.epoch == -7 && p.total == -7);

        long epochs = -12345;
        k = gw_args_yaml_epochs(text, size, &epochs);
        FUZZ_CHECK(k == 0 || k == -ENOENT || k == -EINVAL || k == -ERANGE || k == -ENODATA); /* ENODATA: "time: H" */
        if (k < 0)
                FUZZ_CHECK(epochs == -12345);

        fuzz_argv(text, size);
        free(text);
        return 0;
}
