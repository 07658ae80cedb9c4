/* The training "phase" (training, validating, saving ...) read from the tail of a job's log,
 * for the reclaim decision (core/reclaim.h): a job that validates or saves a checkpoint is not
 * idle.  Pure, as core/progress.h: the caller passes the log's last bytes. */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

enum gw_phase {
        GW_PHASE_UNKNOWN, /* no line in the window says */
        GW_PHASE_TRAINING,
        GW_PHASE_VALIDATING,
        GW_PHASE_SAVING,
        /* A validation pass just ended: its results line ("all  128  929  0.64 ...") is the
         * newest line that says anything.  Protects nothing: Ultralytics is then writing
         * results.csv and the checkpoints (seen from their mtimes), or hung. */
        GW_PHASE_VALIDATED,
        _GW_PHASE_MAX,
        _GW_PHASE_INVALID = -EINVAL,
};
const char *gw_phase_name(enum gw_phase p); /* "validating", "validated"; NULL if out of range */

enum gw_match {
        GW_MATCH_SUBSTR, /* text anywhere in the line (case-sensitive) */
        GW_MATCH_PREFIX, /* the trimmed line starts with text */
        GW_MATCH_EPOCH_FRACTION, /* the trimmed line starts with "N/M " (Ultralytics' epoch
                                       * bar); text unused.  Not expressible as a substring. */
        _GW_MATCH_MAX,
        _GW_MATCH_INVALID = -EINVAL,
};

struct gw_phase_pattern {
        enum gw_phase phase;
        enum gw_match match;
        const char *text;
        /* A summary line: counts (as its own phase) only when an older line in the window, with
         * no TRAINING line between, matched a VALIDATING pattern.  Ultralytics' "all  128  929
         * ..." results line ends a validation pass only under its "Class  Images  Instances"
         * header (a class could be named "all"), and then says the pass is over: VALIDATED. */
        bool needs_header;
};

struct gw_phase_rules {
        const struct gw_phase_pattern *patterns; /* tried in order; the first match decides */
        size_t n_patterns;
        unsigned last_lines; /* K: how many non-empty lines to look at; 0 = 8 */
};

/* Ultralytics' validation ("Class     Images  Instances" with its tqdm bar, "Validating ",
 * "val: "), end of validation ("all " under that header), saving ("Saving", "Optimizer
 * stripped from") and training ("GPU_mem" header, the "N/M" epoch bar) lines.  A daemon
 * adding configured substrings copies these first. */
extern const struct gw_phase_pattern gw_phase_patterns_default[];
extern const size_t gw_phase_patterns_default_n;

#define GW_PHASE_LINE_MAX 160

struct gw_phase_result {
        enum gw_phase phase;
        /* The matching line (escapes stripped, trimmed, truncated), or the newest non-empty line
         * when nothing matched: the evidence a user sees. */
        char line[GW_PHASE_LINE_MAX];
};

/* The phase from the last bytes of a log.  Lines are split on both '\r' and '\n' (tqdm redraws
 * a bar with '\r' even into a file) and ANSI escapes (CSI and OSC) are stripped; the newest
 * line comes first, so the last redraw of a bar decides.  Scanning the last K non-empty lines
 * newest first, the first line matching a pattern gives the phase; a TRAINING line stops the
 * scan, so an old validation summary is not taken for the current phase; a summary line under
 * its header gives the summary's phase (VALIDATED for the defaults' "all"), with the summary
 * as the evidence.  The last line needs
 * no '\n' (it is the bar being redrawn).  rules NULL = the defaults.  0 or -EINVAL. */
int gw_phase_from_log(const char *tail, size_t len, const struct gw_phase_rules *rules, struct gw_phase_result *ret);
