/* Whether a retry that was offered a checkpoint continued from it or started over, judged
 * from what its run shows at its first epoch: the claim "resumed from CKPT (epoch 3)" is
 * made only when the new attempt wrote epoch 4 into the checkpoint's own run.  Pure. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define GW_RESUME_CHECK_MAX 512

/* How the attempt was offered the checkpoint. */
enum gw_resume_offer {
        GW_RESUME_BY_ARG, /* resume=CKPT added to an Ultralytics command (--yolo) */
        GW_RESUME_BY_CMD, /* its --resume-cmd ran instead of its command */
        GW_RESUME_BY_ENV, /* GPUWARD_RESUME_FROM set: the command must read it */
};

struct gw_resume_seen {
        const char *given_run; /* the checkpoint's run folder (RUN of RUN/weights/last.pt) */
        const char *run; /* the folder the attempt writes its results.csv in */
        long epoch; /* the epoch of its newest results.csv row (1-based) */
        int64_t reached; /* epochs the attempt before finished; < 0 unknown */
        long ckpt_epoch; /* epochs the checkpoint holds, read from it (fewer than reached
                                  * when the attempt was killed between a row and its
                                  * checkpoint); <= 0 unknown */
        enum gw_resume_offer offer;
};

enum gw_resume_verdict { GW_RESUME_CONTINUED, GW_RESUME_STARTED_OVER };

/* The verdict, and in msg the event's one line (run folders by their last component only,
 * marked private: base/text.h).
 * Started over: a new run folder, or epoch 1 again in the same one. */
enum gw_resume_verdict gw_resume_judge(const struct gw_resume_seen *s, char *msg, size_t n);
