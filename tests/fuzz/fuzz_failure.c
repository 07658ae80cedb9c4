/* libFuzzer target: the failure classifier (gw_failure_classify, src/core/failure.h), whose
 * main input is the raw tail of a job's log.
 *
 * Input layout (so that seeds stay readable log files after a 4-byte header):
 *   byte 0   how it ended: byte % 7 - 1 (-1 and 5 are out of range: -EINVAL expected)
 *   byte 1   status, as a signed byte (exit code or signal number)
 *   byte 2   flags: 1 lost, 2 oom_killed, 4 oom_kills = 3 (and host_oom_kills = 2), 8 own
 *            pattern table (with bad rows the classifier must ignore), 16 own drain-Xid list,
 *            32 no tail at all, 64 oom_counted, 128 host_oom_counted
 *   byte 3   number of GPU events, byte % 8; then 3 bytes each: kind (% 4, 3 is out of
 *            range), GPU (a signed byte: negative and >= 64 happen), Xid
 *   rest     the log tail: exact size, not NUL-terminated */
#include <signal.h>

#include "core/failure.h"
#include "fuzz_common.h"

static const struct gw_failure_pattern own_patterns[] = {
        { GW_FAILURE_OOM, "Killed" },        { GW_FAILURE_OK, "ok" }, /* not a log class: ignored */
        { GW_FAILURE_USER_ERROR, "" }, /* empty: ignored */
        { GW_FAILURE_NCCL_ERROR, NULL }, /* no text: ignored */
        { (enum gw_failure_class) 42, "x" }, /* out of range: ignored */
        { GW_FAILURE_GPU_FAULT, "Xid" },     { GW_FAILURE_USER_ERROR, "Error" },
};
static const unsigned own_xids[] = { 13, 79 };

/* Whether s[0..n) is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF). */
static bool utf8_valid(const unsigned char *s, size_t n) {
        for (size_t i = 0; i < n;) {
                unsigned char c = s[i];
                size_t len = c < 0x80             ? 1
                             : (c & 0xe0) == 0xc0 ? 2
                             : (c & 0xf0) == 0xe0 ? 3
                             : (c & 0xf8) == 0xf0 ? 4
                                                  : 0;
                if (!len || i + len > n || (len == 2 && c < 0xc2) || c > 0xf4)
                        return false;
                for (size_t k = 1; k < len; k++)
                        if ((s[i + k] & 0xc0) != 0x80)
                                return false;
                if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0) ||
                    (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90))
                        return false;
                i += len;
        }
        return true;
}

static bool class_from_log(enum gw_failure_class c) {
        return c == GW_FAILURE_GPU_FAULT || c == GW_FAILURE_CUDA_ERROR || c == GW_FAILURE_NCCL_ERROR ||
               c == GW_FAILURE_OOM || c == GW_FAILURE_HOST_OOM || c == GW_FAILURE_USER_ERROR;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 4 || size > 512 * 1024)
                return 0;
        struct gw_failure_input in = { 0 };
        in.end = (enum gw_attempt_end)(data[0] % 7 - 1);
        in.status = (int8_t) data[1];
        unsigned flags = data[2];
        in.lost = flags & 1;
        in.oom_killed = flags & 2;
        in.oom_kills = flags & 4 ? 3 : 0;
        in.oom_counted = flags & 64;
        in.host_oom_counted = flags & 128;
        in.host_oom_kills = in.host_oom_counted && (flags & 4) ? 2 : 0;
        if (flags & 8) {
                in.patterns = own_patterns;
                in.n_patterns = sizeof own_patterns / sizeof own_patterns[0];
                char why[128];
                FUZZ_CHECK(gw_failure_patterns_check(own_patterns, in.n_patterns, why, sizeof why) == -EINVAL);
        }
        if (flags & 16) {
                in.drain_xids = own_xids;
                in.n_drain_xids = sizeof own_xids / sizeof own_xids[0];
        }
        size_t n_ev = data[3] % 8, pos = 4;
        struct gw_gpu_event ev[8];
        for (size_t i = 0; i < n_ev; i++, pos += 3) {
                if (pos + 3 > size) {
                        n_ev = i;
                        break;
                }
                ev[i] = (struct gw_gpu_event){ .kind = (enum gw_gpu_event_kind)(data[pos] % 4),
                                               .gpu = (int8_t) data[pos + 1],
                                               .xid = data[pos + 2] };
        }
        in.events = ev;
        in.n_events = n_ev;
        size_t tail_len = pos < size ? size - pos : 0;
        char *tail = malloc(tail_len ? tail_len : 1);
        if (!tail)
                abort();
        if (tail_len)
                memcpy(tail, data + pos, tail_len);
        if (!(flags & 32)) {
                in.tail = tail;
                in.tail_len = tail_len;
        }

        struct gw_failure_verdict v;
        memset(&v, 0x5a, sizeof v);
        int r = gw_failure_classify(&in, &v);
        if ((int) in.end < 0 || in.end >= _GW_ATTEMPT_END_MAX) {
                FUZZ_CHECK(r == -EINVAL);
                FUZZ_CHECK(v.line == 0x5a5a5a5a); /* untouched */
                goto out;
        }
        FUZZ_CHECK(r == 0);
        FUZZ_CHECK(v.cls >= 0 && v.cls < _GW_FAILURE_CLASS_MAX && gw_failure_class_name(v.cls));
        FUZZ_CHECK(gw_failure_class_from_name(gw_failure_class_name(v.cls)) == v.cls);
        size_t elen = strnlen(v.evidence, sizeof v.evidence);
        FUZZ_CHECK(elen > 0 && elen < sizeof v.evidence);

        /* Precedence rules 1 and 2 of failure.h. */
        if (!in.lost && in.end == GW_END_CANCELLED)
                FUZZ_CHECK(v.cls == GW_FAILURE_CANCELLED);
        if (!in.lost && in.end == GW_END_TIMEOUT)
                FUZZ_CHECK(v.cls == GW_FAILURE_TIMEOUT);
        if (!in.lost && in.end == GW_END_RECLAIMED)
                FUZZ_CHECK(v.cls == GW_FAILURE_RECLAIMED);
        if (!in.lost && in.end == GW_END_EXITED && in.status == 0)
                FUZZ_CHECK(v.cls == GW_FAILURE_OK);
        if (v.cls == GW_FAILURE_OK)
                FUZZ_CHECK(!in.lost && in.end == GW_END_EXITED && in.status == 0);
        /* killed: only an unexplained SIGKILL of the main process, with no sign of the OOM killer. */
        if (v.cls == GW_FAILURE_KILLED)
                FUZZ_CHECK(!in.lost && in.end == GW_END_SIGNALED && in.status == SIGKILL && !in.oom_killed &&
                           !in.oom_kills && !in.host_oom_kills);

        /* Evidence from the log points into it. */
        if (v.line > 0) {
                FUZZ_CHECK(in.tail && v.offset < in.tail_len);
                FUZZ_CHECK(class_from_log(v.cls));
                if (!memchr(tail, 0x1b, tail_len) && utf8_valid((const unsigned char *) tail, tail_len))
                        FUZZ_CHECK(utf8_valid((const unsigned char *) v.evidence, elen));
        }

        /* The GPUs it names or drains are the events' GPUs. */
        uint64_t seen = 0;
        bool gpu_seen = v.gpu == -1;
        for (size_t i = 0; i < n_ev; i++) {
                if (ev[i].gpu >= 0 && ev[i].gpu < 64)
                        seen |= UINT64_C(1) << ev[i].gpu;
                gpu_seen |= ev[i].gpu == v.gpu;
        }
        FUZZ_CHECK((v.drain_mask & ~seen) == 0);
        FUZZ_CHECK(gpu_seen);

out:
        free(tail);
        return 0;
}
