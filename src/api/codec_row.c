/* The direct writers of gw_codec_job_row_write (codec.c). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/codec_table.h"
#include "api/jsonout.h"
#include "core/jobrec.h"

/* Direct writers for the fields a long listing asks for, so that a row is written without a
 * JSON value allocated, dumped and freed per field: 1 written, 0 when the value needs jansson
 * (text to check or escape, a real that is not finite), then the caller
 * encodes it the usual way.  What they write is byte for byte what json_dumpb writes; numbers
 * as jsonout.c writes them. */
static int put_int(FILE *out, long long v) {
        char num[GW_JSON_NUMBER_SIZE];
        fwrite(num, 1, gw_json_int_text(v, num), out);
        return 1;
}

/* The last few reals written and their text.  A long queue repeats the same few (a user's
 * fair-share factor is every one of that user's queued jobs'), and "%.17g" is about 1.7 us a
 * call: with 10,000 queued jobs of one user that was a third of the daemon's reply.  Compared
 * bit for bit, so that only the very same value reuses a text.  Per thread: the API has one. */
#define REAL_MEMO 8

static _Thread_local struct real_memo {
        uint64_t bits[REAL_MEMO];
        char text[REAL_MEMO][GW_JSON_NUMBER_SIZE];
        size_t len[REAL_MEMO];
        unsigned n, next;
} memo;

static size_t real_text(double v, const char **ret) {
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        for (unsigned i = 0; i < memo.n; i++)
                if (memo.bits[i] == bits) {
                        *ret = memo.text[i];
                        return memo.len[i];
                }
        unsigned k = memo.next;
        memo.next = (memo.next + 1) % REAL_MEMO;
        if (memo.n < REAL_MEMO)
                memo.n++;
        memo.bits[k] = bits;
        memo.len[k] = gw_json_real_text(v, 0, memo.text[k]);
        *ret = memo.text[k];
        return memo.len[k];
}

static int put_real(FILE *out, double v) {
        if (!isfinite(v))
                return 0; /* jansson holds no such real: the field's own encoder says what it is */
        const char *text;
        size_t n = real_text(v, &text);
        fwrite(text, 1, n, out);
        return 1;
}

static int put_time(FILE *out, gw_usec_t t) {
        if (t <= 0) {
                fputs("null", out);
                return 1;
        }
        return put_real(out, (double) t / 1e6);
}

/* Printable ASCII without '"' or '\\' is written as it is; anything else goes through
 * gw_json_text (its UTF-8 repair) and jansson's escaping. */
static int put_plain(FILE *out, const char *s) {
        if (!s)
                s = "";
        for (const char *c = s; *c; c++)
                if ((unsigned char) *c < 0x20 || (unsigned char) *c > 0x7e || *c == '"' || *c == '\\')
                        return 0;
        fputc('"', out);
        fputs(s, out);
        fputc('"', out);
        return 1;
}

static int put_null(FILE *out) {
        fputs("null", out);
        return 1;
}

static bool predicted(const struct gw_job *j) {
        return j->state == GW_JOB_PENDING && j->predicted_attempt == j->attempt;
}

int gw_codec_row_put(FILE *out, const char *name, const struct gw_job *j) {
        switch (name[0]) {
        case 'a':
                if (!strcmp(name, "array"))
                        return j->array_spec ? put_plain(out, j->array_spec) : put_null(out);
                if (!strcmp(name, "array_waiting") && !(j->array_view && j->array_view->waiting))
                        return put_null(out);
                if (!strcmp(name, "array_job_id") || !strcmp(name, "array_index"))
                        return j->array_job > 0 ? put_int(out, name[6] == 'j' ? j->array_job : j->array_index)
                                                : put_null(out);
                return 0;
        case 'e':
                if (!strcmp(name, "end_time"))
                        return put_time(out, j->end_time);
                if (!strcmp(name, "eta"))
                        return j->state == GW_JOB_RUNNING ? put_time(out, j->eta) : put_null(out);
                if (!strcmp(name, "eta_overdue"))
                        return j->state == GW_JOB_RUNNING && j->eta && j->eta_overdue > 0
                                       ? put_real(out, (double) j->eta_overdue / 1e6)
                                       : put_null(out);
                return 0;
        case 'f':
                if (!strcmp(name, "fairshare"))
                        return (j->state == GW_JOB_PENDING || j->state == GW_JOB_HELD) && j->fairshare > 0
                                       ? put_real(out, j->fairshare)
                                       : put_null(out);
                return 0;
        case 'g':
                if (!strcmp(name, "gpus") && !j->gpu_mask) {
                        fputs("[]", out);
                        return 1;
                }
                return 0;
        case 'i':
                return !strcmp(name, "id") ? put_int(out, j->id) : 0;
        case 'l':
                return !strcmp(name, "latest_start") ? predicted(j) ? put_time(out, j->latest_start) : put_null(out)
                                                     : 0;
        case 'n':
                if (!strcmp(name, "node") && !(j->node_view && *j->node_view))
                        return put_null(out);
                if (!strcmp(name, "ngpus"))
                        return put_int(out, j->ngpus);
                return !strcmp(name, "name") ? put_plain(out, j->name) : 0;
        case 'p':
                if (!strcmp(name, "priority"))
                        return put_int(out, j->priority);
                if (!strcmp(name, "predicted_start"))
                        return predicted(j) ? put_time(out, j->predicted_start) : put_null(out);
                return 0;
        case 's':
                if (!strcmp(name, "start_time"))
                        return put_time(out, j->start_time);
                if (!strcmp(name, "submit_time"))
                        return put_time(out, j->submit_time);
                return !strcmp(name, "state") ? put_plain(out, gw_job_state_name(j->state)) : 0;
        case 't':
                return !strcmp(name, "time_limit") ? put_int(out, j->time_limit / GW_USEC_PER_SEC) : 0;
        case 'u':
                return !strcmp(name, "user") ? put_plain(out, j->user) : 0;
        default:
                return 0;
        }
}
