/* Helper threads (see thread.h). */
#include "base/thread.h"

#include <signal.h>
#include <time.h>

int gw_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name) {
        /* A thread that left a signal open would take it for the whole process: SIGTERM would
         * kill the daemon, a SIGCHLD would be lost to the loop. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        int r = pthread_create(t, NULL, fn, arg);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r == 0)
                (void) pthread_setname_np(*t, name);
        return r;
}

void gw_cond_init_monotonic(pthread_cond_t *c) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(c, &ca);
        pthread_condattr_destroy(&ca);
}
