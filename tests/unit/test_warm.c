/* The pool of idle supervisors (src/daemon/exec/warm.c), with socketpairs standing in for their
 * channels: the peer end is what the supervisor would read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fdpass.h"
#include "daemon/exec/warm.h"

/* A channel: the daemon's end goes into the pool, the supervisor's end is returned. */
static int channel(int *ret_daemon_end) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        *ret_daemon_end = sv[0];
        return sv[1];
}

/* What the supervisor end has: 1 a request (its descriptor closed), 0 EOF, -1 nothing yet. */
static int peer_reads(int fd) {
        char buf[64];
        union gw_fdpass_ctl ctl;
        struct iovec iov = { buf, sizeof buf };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        gw_fdpass_expect(&mh, &ctl);
        ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return -1;
        int passed = gw_fdpass_take(&mh);
        if (n > 0) {
                assert_true(passed >= 0);
                assert_memory_equal(buf, "GWS3", 4);
                (void) close(passed);
        }
        return n > 0 ? 1 : 0;
}

static void send_to_idle_one(struct gw_warm *w, bool expect, struct gw_warm_one *one) {
        int pfd[2];
        assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
        assert_int_equal(gw_warm_send(w, "GWS3 request", 13, pfd[1], one), expect);
        (void) close(pfd[0]);
        (void) close(pfd[1]);
}

/* Two idle supervisors, pids 101 (idle since 1000) and 102 (since 1001): their channel ends. */
static void two_idle(struct gw_warm *w, int *s1, int *s2) {
        int d1, d2;
        *s1 = channel(&d1);
        *s2 = channel(&d2);
        gw_warm_put(w, d1, 101, 11, 1000);
        gw_warm_put(w, d2, 102, 12, 1001);
}

static void test_most_recently_idle_first(void **state) {
        (void) state;
        struct gw_warm w = { 0 };
        int s1, s2;
        two_idle(&w, &s1, &s2);
        struct gw_warm_one one;
        send_to_idle_one(&w, true, &one);
        assert_int_equal(one.pid, 102);
        assert_int_equal(one.start, 12);
        assert_true(one.chan >= 0);
        assert_int_equal(peer_reads(s2), 1);
        assert_int_equal(peer_reads(s1), -1);
        assert_int_equal(w.n, 1);
        (void) close(one.chan); /* the caller's now, as a running job's */
        gw_warm_close(&w);
        assert_int_equal(peer_reads(s1), 0); /* closing the pool ends the idle ones */
        (void) close(s1);
        (void) close(s2);
}

static void test_a_supervisor_gone_is_skipped(void **state) {
        (void) state;
        struct gw_warm w = { 0 };
        int s1, s2;
        two_idle(&w, &s1, &s2);
        (void) close(s2); /* it died while idle */
        struct gw_warm_one one;
        send_to_idle_one(&w, true, &one);
        assert_int_equal(one.pid, 101);
        assert_int_equal(peer_reads(s1), 1);
        assert_int_equal(w.n, 0);
        (void) close(one.chan);
        send_to_idle_one(&w, false, &one);
        (void) close(s1);
}

static void test_full_pool_ends_the_oldest(void **state) {
        (void) state;
        struct gw_warm w = { 0 };
        int peers[GW_WARM_MAX + 1];
        for (int i = 0; i <= GW_WARM_MAX; i++) {
                int d;
                peers[i] = channel(&d);
                gw_warm_put(&w, d, 100 + i, 0, 1000 + i);
        }
        assert_int_equal(w.n, GW_WARM_MAX);
        assert_int_equal(peer_reads(peers[0]), 0);
        assert_int_equal(peer_reads(peers[1]), -1);
        gw_warm_close(&w);
        for (int i = 0; i <= GW_WARM_MAX; i++)
                (void) close(peers[i]);
}

static void test_unused_ones_end_after_a_while(void **state) {
        (void) state;
        struct gw_warm w = { 0 };
        int d1, d2, s1 = channel(&d1), s2 = channel(&d2);
        gw_warm_put(&w, d1, 101, 0, 1000);
        gw_warm_put(&w, d2, 102, 0, 1030);
        assert_int_equal(gw_warm_tick(&w, 1000 + GW_WARM_SECONDS - 1), 1000 + GW_WARM_SECONDS);
        assert_int_equal(w.n, 2);
        assert_int_equal(gw_warm_tick(&w, 1000 + GW_WARM_SECONDS), 1030 + GW_WARM_SECONDS);
        assert_int_equal(w.n, 1);
        assert_int_equal(peer_reads(s1), 0);
        assert_int_equal(peer_reads(s2), -1);
        assert_int_equal(gw_warm_tick(&w, 1030 + GW_WARM_SECONDS), INT64_MAX);
        assert_int_equal(peer_reads(s2), 0);
        (void) close(s1);
        (void) close(s2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_most_recently_idle_first),
                cmocka_unit_test(test_a_supervisor_gone_is_skipped),
                cmocka_unit_test(test_full_pool_ends_the_oldest),
                cmocka_unit_test(test_unused_ones_end_after_a_while),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
