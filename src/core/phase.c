/* The phase of a training from its log's tail (see phase.h). */
#include "core/phase.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"

#include "base/nametable.h"

const struct gw_phase_pattern gw_phase_patterns_default[] = {
        { GW_PHASE_VALIDATING, GW_MATCH_PREFIX, "Class     Images  Instances", false },
        /* ClassificationValidator.get_desc(): ("%22s" + "%11s" * 2) % ("classes", "top1_acc",
         * "top5_acc"); its results line also starts with "all". */
        { GW_PHASE_VALIDATING, GW_MATCH_PREFIX, "classes   top1_acc   top5_acc", false },
        /* Ultralytics' validator prints its results line once the pass is done (while it runs,
         * the newest line is the header's tqdm bar): validation over, nothing to protect. */
        { GW_PHASE_VALIDATED, GW_MATCH_PREFIX, "all ", true },
        { GW_PHASE_VALIDATING, GW_MATCH_SUBSTR, "Validating ", false },
        { GW_PHASE_VALIDATING, GW_MATCH_SUBSTR, "val: ", false },
        { GW_PHASE_SAVING, GW_MATCH_SUBSTR, "Saving", false },
        { GW_PHASE_SAVING, GW_MATCH_SUBSTR, "Optimizer stripped from", false },
        /* Training lines end the scan: without them a loader hung at the start of an epoch
         * would still show the previous epoch's validation summary a few lines up and be
         * protected for ever. */
        { GW_PHASE_TRAINING, GW_MATCH_SUBSTR, "GPU_mem", false },
        { GW_PHASE_TRAINING, GW_MATCH_EPOCH_FRACTION, NULL, false },
};
const size_t gw_phase_patterns_default_n = ELEMENTSOF(gw_phase_patterns_default);

static const struct gw_phase_rules default_rules = {
        .patterns = gw_phase_patterns_default,
        .n_patterns = ELEMENTSOF(gw_phase_patterns_default),
        .last_lines = 0,
};

/* Length of the well-formed UTF-8 sequence at s (n bytes there), 0 when it is not one.  Log
 * lines end up in evidence that the API sends as JSON, and jansson refuses invalid UTF-8
 * (overlong forms and surrogates included): a junk byte must not cost the whole evidence. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
        size_t len;
        unsigned char lo = 0x80, hi = 0xbf;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                len = 2;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                len = 3;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                len = 4;
        else
                return 0;
        if (s[0] == 0xe0)
                lo = 0xa0;
        else if (s[0] == 0xed)
                hi = 0x9f;
        else if (s[0] == 0xf0)
                lo = 0x90;
        else if (s[0] == 0xf4)
                hi = 0x8f;
        if (n < len || s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 2; i < len; i++)
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
        return len;
}

#define PHASE_DEFAULT_LINES 8
#define PHASE_MAX_LINES 1000 /* bounds the work on a tail of blank-ish redraws */
#define PHASE_SCAN_MAX 512 /* a line is matched on its first 511 visible bytes */

const char *gw_phase_name(enum gw_phase p) {
        static const char *const names[_GW_PHASE_MAX] = {
                [GW_PHASE_UNKNOWN] = "unknown",       [GW_PHASE_TRAINING] = "training",
                [GW_PHASE_VALIDATING] = "validating", [GW_PHASE_SAVING] = "saving",
                [GW_PHASE_VALIDATED] = "validated",
        };
        return GW_NAMETABLE_NAME(names, p);
}

/* Copies the visible text of one segment: ANSI escapes dropped (CSI "ESC [ params final",
 * OSC "ESC ] ... BEL|ESC \", other two-byte escapes), other control bytes dropped, tabs as
 * blanks, bytes that are not UTF-8 as '?', then trimmed.  Returns the length written to out
 * (NUL-terminated). */
static size_t strip_visible(const char *s, size_t n, char *out, size_t cap) {
        size_t i = 0, k = 0, b = 0;

        while (i < n) {
                unsigned char c = (unsigned char) s[i];

                if (c == 0x1b && i + 1 < n && s[i + 1] == '[') {
                        i += 2;
                        /* Parameter (0x30-0x3f) and intermediate (0x20-0x2f) bytes, then
                         * one final byte.  A byte outside those ranges ends a malformed
                         * sequence without being eaten, so a torn escape cannot swallow the
                         * text after it. */
                        while (i < n && s[i] >= 0x20 && s[i] <= 0x3f)
                                i++;
                        if (i < n && s[i] >= 0x40 && s[i] <= 0x7e)
                                i++;
                        continue;
                }
                if (c == 0x1b && i + 1 < n && s[i + 1] == ']') {
                        for (i += 2; i < n; i++) {
                                if (s[i] == 0x07) {
                                        i++;
                                        break;
                                }
                                if (s[i] == 0x1b && i + 1 < n && s[i + 1] == '\\') {
                                        i += 2;
                                        break;
                                }
                        }
                        continue;
                }
                if (c == 0x1b) {
                        i += i + 1 < n ? 2 : 1;
                        continue;
                }
                if (c >= 0x80) {
                        size_t l = utf8_seq((const unsigned char *) s + i, n - i);
                        /* A whole character or nothing: a cut one would be invalid. */
                        if (l > 0 && k + l < cap) {
                                memcpy(out + k, s + i, l);
                                b = k += l;
                        } else if (l == 0 && k + 1 < cap) {
                                out[k++] = '?';
                                b = k;
                        }
                        i += l ? l : 1;
                        continue;
                }
                i++;
                if (c == '\t')
                        c = ' ';
                else if (c < 0x20 || c == 0x7f)
                        continue;
                if (c == ' ' && k == 0)
                        continue; /* leading blanks */
                if (k + 1 < cap) {
                        out[k++] = (char) c;
                        if (c != ' ')
                                b = k;
                }
        }
        out[b] = '\0'; /* trailing blanks */
        return b;
}

static bool epoch_fraction(const char *l) {
        const char *p = l;

        if (*p < '0' || *p > '9')
                return false;
        while (*p >= '0' && *p <= '9')
                p++;
        if (*p++ != '/' || *p < '0' || *p > '9')
                return false;
        while (*p >= '0' && *p <= '9')
                p++;
        return *p == ' ' || *p == '\0';
}

static const struct gw_phase_pattern *match_line(const struct gw_phase_rules *rules, const char *l) {
        for (size_t i = 0; i < rules->n_patterns; i++) {
                const struct gw_phase_pattern *pt = &rules->patterns[i];

                if (pt->phase <= GW_PHASE_UNKNOWN || pt->phase >= _GW_PHASE_MAX)
                        continue;
                switch (pt->match) {
                case GW_MATCH_SUBSTR:
                        /* An empty pattern would match every line: ignored as a config slip. */
                        if (pt->text && *pt->text && strstr(l, pt->text))
                                return pt;
                        break;
                case GW_MATCH_PREFIX:
                        if (pt->text && *pt->text && strncmp(l, pt->text, strlen(pt->text)) == 0)
                                return pt;
                        break;
                case GW_MATCH_EPOCH_FRACTION:
                        if (epoch_fraction(l))
                                return pt;
                        break;
                default:
                        break;
                }
        }
        return NULL;
}

/* Copies a line for the evidence, cut at a character boundary (src is valid UTF-8) and
 * trimmed again, since the cut may land just after a blank. */
static void set_line(char *dst, const char *src) {
        size_t m = strlen(src);

        if (m >= GW_PHASE_LINE_MAX) {
                m = GW_PHASE_LINE_MAX - 1;
                while (m > 0 && ((unsigned char) src[m] & 0xc0) == 0x80)
                        m--;
                while (m > 0 && src[m - 1] == ' ')
                        m--;
        }
        memcpy(dst, src, m);
        dst[m] = '\0';
}

int gw_phase_from_log(const char *tail, size_t len, const struct gw_phase_rules *rules, struct gw_phase_result *ret) {
        struct gw_phase_result res = { .phase = GW_PHASE_UNKNOWN };
        char l[PHASE_SCAN_MAX], pending[GW_PHASE_LINE_MAX] = "";
        bool have_newest = false, have_pending = false;
        enum gw_phase pending_phase = GW_PHASE_UNKNOWN;
        unsigned k, seen = 0;
        size_t end = len;

        if (!ret || (!tail && len))
                return -EINVAL;
        if (!rules)
                rules = &default_rules;
        if (rules->n_patterns && !rules->patterns)
                return -EINVAL;
        k = rules->last_lines ? rules->last_lines : PHASE_DEFAULT_LINES;
        if (k > PHASE_MAX_LINES)
                k = PHASE_MAX_LINES;

        /* Newest segment first: walk back from the end to the previous '\r' or '\n'. */
        while (end > 0 && seen < k) {
                const struct gw_phase_pattern *m;
                size_t start = end;

                while (start > 0 && tail[start - 1] != '\r' && tail[start - 1] != '\n')
                        start--;
                size_t vis = strip_visible(tail + start, end - start, l, sizeof(l));
                end = start > 0 ? start - 1 : 0;
                if (vis == 0)
                        continue;
                seen++;
                if (!have_newest) {
                        set_line(res.line, l);
                        have_newest = true;
                }
                m = match_line(rules, l);
                if (!m)
                        continue;
                if (m->phase == GW_PHASE_TRAINING) {
                        res.phase = GW_PHASE_TRAINING;
                        set_line(res.line, l);
                        break;
                }
                if (m->needs_header) {
                        if (!have_pending) {
                                set_line(pending, l);
                                pending_phase = m->phase;
                                have_pending = true;
                        }
                        continue;
                }
                /* A header-less line; it confirms a pending summary when it is a validation
                 * line, and then the summary (the newer line) decides and is the evidence. */
                if (have_pending && m->phase != GW_PHASE_VALIDATING)
                        have_pending = false; /* e.g. "Saving" above "all": not its header */
                res.phase = have_pending ? pending_phase : m->phase;
                set_line(res.line, have_pending ? pending : l);
                break;
        }
        *ret = res;
        return 0;
}
