/* Per-user accounting over a window (see accounting.h). */
#include "core/accounting.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

static struct gw_acct_user *user_of(struct gw_acct *a, uint32_t uid, const char *name) {
        for (size_t i = 0; i < a->n; i++)
                if (a->users[i].uid == uid)
                        return &a->users[i];
        if (a->n == a->cap) {
                a->cap = a->cap ? a->cap * 2 : 16;
                a->users = gw_xrealloc(a->users, a->cap * sizeof *a->users);
        }
        struct gw_acct_user *u = &a->users[a->n++];
        *u = (struct gw_acct_user){ .uid = uid };
        snprintf(u->user, sizeof u->user, "%s", name && *name ? name : "?");
        return u;
}

void gw_acct_add(struct gw_acct *a, const struct gw_acct_job *j) {
        gw_usec_t end = j->end ? j->end : a->until;
        gw_usec_t from = j->start > a->since ? j->start : a->since, to = end < a->until ? end : a->until;
        if (j->start <= 0 || to < from || (unsigned) j->state >= _GW_JOB_STATE_MAX)
                return;
        struct gw_acct_user *u = user_of(a, j->uid, j->user);
        double hours = (double) (to - from) / 3.6e9 * (j->share > 0 ? j->share : (double) j->ngpus);
        u->jobs++;
        u->by_state[j->state]++;
        u->gpu_hours += hours;
        if (j->util_mean >= 0) {
                u->measured_gpu_hours += hours;
                u->util_weighted += hours * j->util_mean;
        }
        if (j->state == GW_JOB_RECLAIMED)
                u->reclaimed_gpu_hours += hours;
}

static int by_hours(const void *x, const void *y) {
        const struct gw_acct_user *a = x, *b = y;
        if (a->gpu_hours != b->gpu_hours)
                return a->gpu_hours < b->gpu_hours ? 1 : -1;
        return strcmp(a->user, b->user);
}

void gw_acct_sort(struct gw_acct *a) {
        if (a->n > 1)
                qsort(a->users, a->n, sizeof *a->users, by_hours);
}

double gw_acct_util(const struct gw_acct_user *u) {
        return u->measured_gpu_hours > 0 ? u->util_weighted / u->measured_gpu_hours : -1;
}

void gw_acct_free(struct gw_acct *a) {
        free(a->users);
        a->users = NULL;
        a->n = a->cap = 0;
}
