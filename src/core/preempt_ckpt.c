/* When a preempted training run may be stopped (preempt_ckpt.h has the rules). */
#include "core/preempt_ckpt.h"

#include <math.h>
#include <string.h>

enum gw_preempt_best gw_preempt_best_expected(double newest, double best_before) {
        /* Ultralytics: "if not self.best_fitness or self.best_fitness < fitness" raises the
         * best, then "if self.best_fitness == self.fitness" writes best.pt. */
        if (isnan(newest))
                return GW_PREEMPT_BEST_MAYBE;
        if (isnan(best_before) || best_before <= 0)
                return GW_PREEMPT_BEST_YES; /* the first row, or no best yet */
        if (newest == best_before)
                return GW_PREEMPT_BEST_MAYBE; /* the file's digits may hide the difference */
        return newest > best_before ? GW_PREEMPT_BEST_YES : GW_PREEMPT_BEST_NO;
}

gw_usec_t gw_preempt_ckpt_counted(const struct gw_preempt_ckpt_look *look) {
        const struct gw_preempt_ckpt_file *f = &look->last;
        return f->seen && f->complete && look->row_mtime > 0 && f->mtime >= look->row_mtime ? f->mtime : 0;
}

/* How long best.pt is waited for after last.pt, by what the row says. */
static gw_usec_t best_wait(enum gw_preempt_best b) {
        return b == GW_PREEMPT_BEST_NO ? 0 : b == GW_PREEMPT_BEST_YES ? GW_PREEMPT_BEST_WAIT : GW_PREEMPT_BEST_QUIET;
}

int gw_preempt_ckpt_judge(const struct gw_preempt_ckpt_look *look, gw_usec_t after, gw_usec_t now,
                          struct gw_preempt_ckpt_verdict *ret) {
        if (!look || !ret)
                return -EINVAL;
        memset(ret, 0, sizeof *ret);
        ret->act = GW_PREEMPT_CKPT_WAIT;
        ret->epoch = look->row_epoch;
        gw_usec_t t = gw_preempt_ckpt_counted(look);
        if (!t || t <= after)
                return 0;
        if (look->total > 0 && look->row_epoch >= look->total) {
                ret->act = GW_PREEMPT_CKPT_FINISHING;
                return 0;
        }
        const struct gw_preempt_ckpt_file *b = &look->best_pt;
        bool best_new = b->seen && b->mtime >= t;
        if (best_new && !b->complete)
                return 0; /* being written: a kill now would tear it */
        if (best_new || look->best == GW_PREEMPT_BEST_NO) {
                ret->act = GW_PREEMPT_CKPT_STOP;
                return 0;
        }
        gw_usec_t until = t + best_wait(look->best);
        if (now >= until)
                ret->act = GW_PREEMPT_CKPT_STOP; /* no best.pt came: none is coming */
        else
                ret->recheck = until;
        return 0;
}
