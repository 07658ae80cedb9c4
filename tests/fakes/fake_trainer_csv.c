/* gw-fake-trainer's metrics per task and its results.csv per Ultralytics release, as read in
 * ultralytics/ultralytics (docs/ULTRALYTICS-FORMATS.md has the sources):
 *   - the columns: "epoch", then (8.3.9 and later) "time", then the task's train losses
 *     (label_loss_items(prefix="train")), its metric keys (DetMetrics, SegmentMetrics,
 *     PoseMetrics, OBBMetrics, ClassifyMetrics .keys), its val losses, lr/pg0..2;
 *   - --ultralytics 8.0 (up to 8.0.159): "%23s" header, "%23.5g" rows, epoch 0-based;
 *     8.1 (8.0.160 to 8.3.8): the same, epoch 1-based; 8.3 and 8.4 (8.3.9 and later): no
 *     padding, "%.6g", and "time", the seconds since this process began training. */
#include "fake_trainer.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

struct task_fmt {
        const char *name;
        const char *losses[5];
        int n_losses;
        const char *groups; /* metric groups: B boxes, M masks, P keypoints; "" for classify */
        const char *val_desc;
};

/* BaseValidator's tqdm description: get_desc() of each task's validator. */
#define DESC_BOX "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95)"
static const struct task_fmt TASKS[] = {
        { "detect", { "box_loss", "cls_loss", "dfl_loss" }, 3, "B", DESC_BOX },
        { "segment",
          { "box_loss", "seg_loss", "cls_loss", "dfl_loss" },
          4,
          "BM",
          DESC_BOX "     Mask(P          R      mAP50  mAP50-95)" },
        { "pose",
          { "box_loss", "pose_loss", "kobj_loss", "cls_loss", "dfl_loss" },
          5,
          "BP",
          DESC_BOX "     Pose(P          R      mAP50  mAP50-95)" },
        { "obb", { "box_loss", "cls_loss", "dfl_loss" }, 3, "B", DESC_BOX },
        { "classify", { "loss" }, 1, "", "               classes   top1_acc   top5_acc" },
};

/* Train and val loss curves, base + amp * exp(-t / tau); detect's are those of the fake's
 * first version (the e2e tests' numbers do not move). */
static const struct {
        const char *name;
        double train[3], val[3];
} LOSS[] = {
        { "box_loss", { 0.75, 0.60, 6 }, { 0.95, 0.50, 6 } },  { "cls_loss", { 0.55, 1.10, 5 }, { 0.70, 0.90, 5 } },
        { "dfl_loss", { 0.95, 0.35, 7 }, { 1.00, 0.30, 7 } },  { "seg_loss", { 1.20, 0.80, 6 }, { 1.30, 0.60, 6 } },
        { "pose_loss", { 2.00, 1.50, 6 }, { 2.20, 1.20, 6 } }, { "kobj_loss", { 0.50, 0.30, 5 }, { 0.55, 0.20, 5 } },
        { "loss", { 1.00, 1.20, 5 }, { 1.10, 1.00, 5 } },
};

static const struct task_fmt *task_of(const char *name) {
        for (size_t i = 0; i < sizeof TASKS / sizeof TASKS[0]; i++)
                if (strcmp(TASKS[i].name, name) == 0)
                        return &TASKS[i];
        return NULL;
}

static const struct task_fmt *fmt(const struct ft_opts *o) {
        const struct task_fmt *f = task_of(o->task);
        return f ? f : &TASKS[0];
}

bool ft_task_known(const char *task) { return task_of(task) != NULL; }

int ft_n_losses(const struct ft_opts *o) { return fmt(o)->n_losses; }

const char *ft_loss_name(const struct ft_opts *o, int i) { return fmt(o)->losses[i]; }

const char *ft_val_desc(const struct ft_opts *o) { return fmt(o)->val_desc; }

static double curve(const double *c, double t) { return c[0] + c[1] * exp(-t / c[2]); }

static const double *loss_curve(const char *name, bool val) {
        for (size_t i = 0; i < sizeof LOSS / sizeof LOSS[0]; i++)
                if (strcmp(LOSS[i].name, name) == 0)
                        return val ? LOSS[i].val : LOSS[i].train;
        return LOSS[0].train;
}

/* Column names after "epoch" (and "time"), in results.csv order; returns how many. */
static int col_names(const struct ft_opts *o, char names[][48]) {
        static const char *const det[] = { "precision", "recall", "mAP50", "mAP50-95" };
        const struct task_fmt *f = fmt(o);
        int n = 0;
        for (int i = 0; i < f->n_losses; i++)
                (void) snprintf(names[n++], 48, "train/%s", f->losses[i]);
        for (const char *g = f->groups; *g; g++)
                for (int k = 0; k < 4; k++)
                        (void) snprintf(names[n++], 48, "metrics/%s(%c)", det[k], *g);
        if (!*f->groups) {
                (void) snprintf(names[n++], 48, "metrics/accuracy_top1");
                (void) snprintf(names[n++], 48, "metrics/accuracy_top5");
        }
        for (int i = 0; i < f->n_losses; i++)
                (void) snprintf(names[n++], 48, "val/%s", f->losses[i]);
        for (int i = 0; i < 3; i++)
                (void) snprintf(names[n++], 48, "lr/pg%d", i);
        return n;
}

struct ft_metrics ft_metrics_at(const struct ft_opts *o, double t, long epochs) {
        const struct task_fmt *f = fmt(o);
        double lr = 0.01 * ((1 - (t - 1) / (double) epochs) * 0.99 + 0.01);
        struct ft_metrics m = { .n = 0 };
        for (int i = 0; i < f->n_losses; i++)
                m.v[m.n++] = curve(loss_curve(f->losses[i], false), t);
        for (int gi = 0; f->groups[gi]; gi++) { /* P, R, mAP50, mAP50-95; masks and poses a bit lower */
                double d = 0.05 * gi;
                m.v[m.n++] = 0.85 - 0.35 * exp(-t / 5) - d;
                m.v[m.n++] = 0.78 - 0.33 * exp(-t / 6) - d;
                m.v[m.n++] = 0.82 - 0.40 * exp(-t / 6) - d;
                m.v[m.n++] = 0.62 - 0.35 * exp(-t / 7) - d;
        }
        if (!*f->groups) { /* top1, top5 */
                m.v[m.n++] = 0.70 - 0.40 * exp(-t / 5);
                m.v[m.n++] = 0.95 - 0.30 * exp(-t / 5);
        }
        for (int i = 0; i < f->n_losses; i++)
                m.v[m.n++] = curve(loss_curve(f->losses[i], true), t);
        m.v[m.n++] = lr;
        m.v[m.n++] = lr;
        m.v[m.n++] = t <= 3 ? 0.1 - (0.1 - lr) * t / 3 : lr;
        return m;
}

/* What picks best.pt: ClassifyMetrics.fitness, or the sum over the groups of Metric.fitness
 * (w = [0, 0, 0.1, 0.9] up to 8.3; [0, 0, 0, 1] in 8.4). */
double ft_fitness(const struct ft_opts *o, const struct ft_metrics *m) {
        const struct task_fmt *f = fmt(o);
        const double *v = m->v + f->n_losses;
        double sum = 0;
        if (!*f->groups)
                return (v[0] + v[1]) / 2;
        for (int gi = 0; f->groups[gi]; gi++)
                sum += o->ul >= 84 ? v[4 * gi + 3] : 0.1 * v[4 * gi + 2] + 0.9 * v[4 * gi + 3];
        return sum;
}

/* print_results(): "all", images, instances, then P R mAP50 mAP50-95 of each group (classify:
 * "all", top1, top5); at the final validation two classes follow (not for classify). */
void ft_val_results(const struct ft_opts *o, const struct ft_metrics *m, bool final) {
        static const struct {
                const char *name;
                int images, instances;
                double d;
        } rows[] = { { "all", 128, 929, 0 }, { "person", 61, 254, 0.05 }, { "car", 12, 46, -0.1 } };
        const struct task_fmt *f = fmt(o);
        const double *v = m->v + f->n_losses;
        if (!*f->groups) {
                ft_out("%22s%11.3g%11.3g\n", "all", v[0], v[1]);
                return;
        }
        for (int r = 0; r < (final ? 3 : 1); r++) {
                char line[512];
                int len = snprintf(line, sizeof line, "%22s%11d%11d", rows[r].name, rows[r].images, rows[r].instances);
                for (int k = 0; k < 4 * (int) strlen(f->groups) && len > 0 && (size_t) len < sizeof line; k++)
                        len += snprintf(line + len, sizeof line - (size_t) len, "%11.3g", v[k] + rows[r].d);
                ft_out("%s\n", line);
        }
}

int ft_csv_append(const struct ft_opts *o, const char *run, long E, double t, const struct ft_metrics *m) {
        char path[PATH_MAX + 16], line[4096], names[FT_MAX_COLS][48];
        size_t len = 0;
        int n = col_names(o, names);
        bool plain = o->ul >= 83;
        (void) snprintf(path, sizeof path, "%s/results.csv", run);
        struct stat st;
        if (stat(path, &st) < 0 || st.st_size == 0) {
                len += (size_t) snprintf(line + len, sizeof line - len, plain ? "epoch,time" : "%23s", "epoch");
                for (int i = 0; i < n; i++)
                        len += (size_t) snprintf(line + len, sizeof line - len, plain ? ",%s" : ",%23s", names[i]);
                len += (size_t) snprintf(line + len, sizeof line - len, "\n");
        }
        /* 8.0 wrote self.epoch, 0-based; 8.0.160 and later self.epoch + 1. */
        double epoch = (double) (o->ul == 80 ? E - 1 : E);
        if (plain)
                len += (size_t) snprintf(line + len, sizeof line - len, "%.6g,%.6g", epoch, t);
        else
                len += (size_t) snprintf(line + len, sizeof line - len, "%23.5g", epoch);
        for (int i = 0; i < m->n && len < sizeof line; i++)
                len += (size_t) snprintf(line + len, sizeof line - len, plain ? ",%.6g" : ",%23.5g", m->v[i]);
        if (len >= sizeof line)
                return -ENAMETOOLONG;
        line[len++] = '\n';
        return ft_write_file(path, line, len, O_APPEND, 0); /* one write: never a torn row */
}
