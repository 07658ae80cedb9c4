#include "gpuload_args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char gpuload_usage[] = "Usage: gpuload MODE [OPTIONS]\n"
                             "A CUDA load for checking gpuward on a real GPU (loads libcuda.so.1 at run time;\n"
                             "CUDA_VISIBLE_DEVICES chooses the GPU; it uses the first one it sees).\n"
                             "Modes:\n"
                             "  busy    kernels at --duty percent of each second (default 100) for --seconds\n"
                             "  idle    holds the memory, runs no kernel and prints nothing after its first line\n"
                             "  leak    busy, and --leak-mib more memory every epoch, with an epoch line and a\n"
                             "          results.csv row in --run-dir as Ultralytics writes them\n"
                             "  burst   busy for --busy-seconds, then idle and silent until --seconds\n"
                             "Options:\n"
                             "  --mib N            memory allocated at the start (default 1024)\n"
                             "  --seconds S        how long the run lasts (default 60)\n"
                             "  --duty P           1..100 (default 100)\n"
                             "  --leak-mib M       leak: added each epoch (default 256)\n"
                             "  --epoch-seconds S  leak: length of an epoch (default 5)\n"
                             "  --busy-seconds S   burst: the busy part (default half of --seconds)\n"
                             "  --run-dir DIR      leak: the run directory (default runs/detect/gpuload)\n"
                             "Exit: 0 done, 1 a CUDA call failed, 2 usage or no CUDA driver.\n";

static const char *const mode_names[_GPULOAD_MODE_MAX] = {
        [GPULOAD_BUSY] = "busy",
        [GPULOAD_IDLE] = "idle",
        [GPULOAD_LEAK] = "leak",
        [GPULOAD_BURST] = "burst",
};

enum gpuload_mode gpuload_mode_from_string(const char *s) {
        for (int i = 0; i < _GPULOAD_MODE_MAX; i++)
                if (s && !strcmp(s, mode_names[i]))
                        return (enum gpuload_mode) i;
        return _GPULOAD_MODE_INVALID;
}

const char *gpuload_mode_to_string(enum gpuload_mode m) {
        return m >= 0 && m < _GPULOAD_MODE_MAX ? mode_names[m] : NULL;
}

/* A whole decimal number in [min, max]. */
static int parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *ret) {
        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || *end || v < min || v > max)
                return -EINVAL;
        *ret = (unsigned long) v;
        return 0;
}

/* A plain decimal number of seconds in (0, max]: no sign, no exponent, no inf/nan. */
static int parse_seconds(const char *s, double max, double *ret) {
        if (!s || !*s || strspn(s, "0123456789.") != strlen(s))
                return -EINVAL;
        char *end;
        double v = strtod(s, &end);
        if (*end || !isfinite(v) || v <= 0 || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

#define MAX_MIB (1024UL * 1024UL) /* 1 TiB: more than any GPU has */
#define MAX_SECONDS 86400.0

static int fail(char *err, size_t err_len, const char *opt, const char *val, const char *why) {
        (void) snprintf(err, err_len, "%s%s%s: %s", opt, val ? " " : "", val ? val : "", why);
        return -EINVAL;
}

/* One option and its value into a; 0, or -EINVAL with err written. */
static int parse_option(const char *opt, const char *v, struct gpuload_args *a, char *err, size_t err_len) {
        unsigned long u;
        if (!strcmp(opt, "--mib")) {
                if (parse_ulong(v, 1, MAX_MIB, &a->mib) < 0)
                        return fail(err, err_len, opt, v, "a whole number of MiB, 1 to 1048576");
        } else if (!strcmp(opt, "--leak-mib")) {
                if (parse_ulong(v, 1, MAX_MIB, &a->leak_mib) < 0)
                        return fail(err, err_len, opt, v, "a whole number of MiB, 1 to 1048576");
        } else if (!strcmp(opt, "--duty")) {
                if (parse_ulong(v, 1, 100, &u) < 0)
                        return fail(err, err_len, opt, v, "a whole percentage, 1 to 100");
                a->duty = (unsigned) u;
        } else if (!strcmp(opt, "--seconds")) {
                if (parse_seconds(v, MAX_SECONDS, &a->seconds) < 0)
                        return fail(err, err_len, opt, v, "seconds, more than 0 and at most 86400");
        } else if (!strcmp(opt, "--epoch-seconds")) {
                if (parse_seconds(v, MAX_SECONDS, &a->epoch_seconds) < 0)
                        return fail(err, err_len, opt, v, "seconds, more than 0 and at most 86400");
        } else if (!strcmp(opt, "--busy-seconds")) {
                if (parse_seconds(v, MAX_SECONDS, &a->busy_seconds) < 0)
                        return fail(err, err_len, opt, v, "seconds, more than 0 and at most 86400");
        } else if (!strcmp(opt, "--run-dir")) {
                if (!*v)
                        return fail(err, err_len, opt, NULL, "an empty directory name");
                a->run_dir = v;
        } else
                return fail(err, err_len, opt, NULL, "unknown option (--help lists them)");
        return 0;
}

int gpuload_args_parse(int argc, char *const *argv, struct gpuload_args *ret, char *err, size_t err_len) {
        err[0] = '\0';
        for (int i = 1; i < argc; i++)
                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
                        return 1;
        if (argc < 2)
                return fail(err, err_len, "MODE", NULL, "missing: busy, idle, leak or burst");
        struct gpuload_args a = {
                .mode = gpuload_mode_from_string(argv[1]),
                .mib = 1024,
                .seconds = 60,
                .duty = 100,
                .leak_mib = 256,
                .epoch_seconds = 5,
                .busy_seconds = 0,
                .run_dir = "runs/detect/gpuload",
        };
        if (a.mode < 0)
                return fail(err, err_len, "MODE", argv[1], "not a mode: busy, idle, leak or burst");
        for (int i = 2; i < argc; i += 2) {
                if (i + 1 >= argc)
                        return fail(err, err_len, argv[i], NULL, "needs a value");
                int r = parse_option(argv[i], argv[i + 1], &a, err, err_len);
                if (r < 0)
                        return r;
        }
        if (a.mode == GPULOAD_BURST) {
                if (a.busy_seconds == 0)
                        a.busy_seconds = a.seconds / 2;
                if (a.busy_seconds > a.seconds)
                        return fail(err, err_len, "--busy-seconds", NULL, "longer than --seconds");
        }
        *ret = a;
        return 0;
}
