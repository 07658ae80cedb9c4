/* The command line of gpuload (tests/gpu/gpuload.c), apart so that a unit test can check it
 * without libcuda.  Pure: no I/O, no allocation. */
#pragma once
#include <stddef.h>

enum gpuload_mode {
        GPULOAD_BUSY, /* kernels at --duty percent of each second, for --seconds */
        GPULOAD_IDLE, /* memory held, no kernels, silent: a hung trainer */
        GPULOAD_LEAK, /* busy, and --leak-mib more memory every epoch, with epoch lines */
        GPULOAD_BURST, /* busy for --busy-seconds, then idle (silent) until --seconds */
        _GPULOAD_MODE_MAX,
        _GPULOAD_MODE_INVALID = -22,
};

struct gpuload_args {
        enum gpuload_mode mode;
        unsigned long mib; /* allocated at the start */
        double seconds; /* how long the whole run lasts */
        unsigned duty; /* percent of each second with a kernel running (busy, leak, burst) */
        unsigned long leak_mib; /* leak: added each epoch */
        double epoch_seconds; /* leak: one epoch */
        double busy_seconds; /* burst: the busy part (default: half of --seconds) */
        const char *run_dir; /* leak: where results.csv goes (points into argv) */
};

/* The usage text, for --help and errors. */
extern const char gpuload_usage[];

/* "busy" -> GPULOAD_BUSY ...; _GPULOAD_MODE_INVALID for anything else. */
enum gpuload_mode gpuload_mode_from_string(const char *s);
const char *gpuload_mode_to_string(enum gpuload_mode m);

/* Parses argv[1..argc-1] (MODE first, then options).  0 and *ret written; 1 when --help was
 * asked (nothing written); -EINVAL with a message naming the option and why in err (always
 * NUL-terminated, err_len > 0).  Strings in *ret point into argv. */
int gpuload_args_parse(int argc, char *const *argv, struct gpuload_args *ret, char *err, size_t err_len);
