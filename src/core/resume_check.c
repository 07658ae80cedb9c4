#include "core/resume_check.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/text.h"

static const char *last_part(const char *path) {
        const char *slash = path ? strrchr(path, '/') : NULL;
        return slash ? slash + 1 : path ? path : "";
}

static const char *offer_said(enum gw_resume_offer o) {
        switch (o) {
        case GW_RESUME_BY_ARG:
                return "resume= was added to its command";
        case GW_RESUME_BY_CMD:
                return "its --resume-cmd ran";
        default:
                return "GPUWARD_RESUME_FROM was set";
        }
}

/* What would make the next retry resume: a command that ignored the offer needs one. */
static const char *fix_for(enum gw_resume_offer o) {
        switch (o) {
        case GW_RESUME_BY_ARG:
                return "Ultralytics did not take resume= (was the checkpoint a finished run's?)";
        case GW_RESUME_BY_CMD:
                return "its --resume-cmd must pass \"$GPUWARD_RESUME_FROM\" to the trainer";
        default:
                return "its command does not read it: give the job --resume-cmd (e.g. 'python3 train.py --resume "
                       "\"$GPUWARD_RESUME_FROM\"'), or read it in the script (README: two lines for "
                       "model.train())";
        }
}

enum gw_resume_verdict gw_resume_judge(const struct gw_resume_seen *s, char *msg, size_t n) {
        bool same = s->given_run && s->run && !strcmp(s->given_run, s->run);
        /* A run folder's name is in the job's directory: for its owner and admins only. */
        char run[300];
        gw_text_private_wrap(run, sizeof run, last_part(s->run));
        /* The checkpoint's own epoch when it was read; what the attempt before reached is
         * said too where it differs, not in its place. */
        char reached[96] = "";
        if (s->ckpt_epoch > 0 && s->reached > s->ckpt_epoch)
                snprintf(reached, sizeof reached, " of epoch %ld (the attempt before reached epoch %lld)",
                         s->ckpt_epoch, (long long) s->reached);
        else if (s->ckpt_epoch > 0)
                snprintf(reached, sizeof reached, " of epoch %ld", s->ckpt_epoch);
        else if (s->reached >= 0)
                snprintf(reached, sizeof reached, " (epoch %lld by the attempt before)", (long long) s->reached);
        if (same && s->epoch > 1) {
                snprintf(msg, n, "continued from its checkpoint%s: epoch %ld written in its run %s", reached, s->epoch,
                         run);
                return GW_RESUME_CONTINUED;
        }
        snprintf(msg, n,
                 "started over, not resumed: epoch %ld written in %s%s, not continued from its checkpoint%s; "
                 "%s, but %s",
                 s->epoch, same ? "its run " : "another run, ", run, reached, offer_said(s->offer), fix_for(s->offer));
        return GW_RESUME_STARTED_OVER;
}
