#include "core/yolo_run.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/progress.h"

static const char *const tasks[] = { "detect", "segment", "classify", "pose", "obb" };

const char *gw_yolo_arg(const char *const *argv, size_t argc, const char *key, bool *ret_bare) {
        size_t kl = strlen(key);
        const char *v = NULL;
        bool bare = false;

        for (size_t i = 1; argv && i < argc; i++) {
                const char *a = argv[i];
                bool dashes = a && !strncmp(a, "--", 2);

                if (!a)
                        continue;
                if (dashes)
                        a += 2;
                if (strncmp(a, key, kl))
                        continue;
                if (a[kl] == '=') {
                        v = a + kl + 1;
                        bare = false;
                } else if (dashes && !a[kl]) {
                        v = i + 1 < argc && argv[i + 1] ? argv[i + 1] : "";
                        bare = true;
                }
        }
        if (ret_bare)
                *ret_bare = bare;
        return v;
}

bool gw_yolo_has_word(const char *const *argv, size_t argc, const char *word) {
        for (size_t i = 1; argv && i < argc; i++)
                if (argv[i] && !strcmp(argv[i], word))
                        return true;
        return false;
}

bool gw_yolo_name_matches(const char *entry, const char *name) {
        size_t l = strlen(name);

        if (!l)
                return entry[0] != '\0' && entry[0] != '.';
        return !strncmp(entry, name, l) && strspn(entry + l, "0123456789") == strlen(entry + l);
}

/* Copies s (n bytes) without terminal escapes (ESC [ ... final byte) nor blanks at either end. */
static int copy_plain(const char *s, size_t n, char *buf, size_t size) {
        size_t k = 0;

        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\x1b') {
                        if (i + 1 < n && s[i + 1] == '[') {
                                i += 2;
                                while (i < n && !(s[i] >= '@' && s[i] <= '~'))
                                        i++;
                        }
                        continue;
                }
                if (s[i] == '\r' || s[i] == '\0')
                        continue;
                if (k + 1 >= size)
                        return -ENAMETOOLONG;
                buf[k++] = s[i];
        }
        while (k > 0 && (buf[k - 1] == ' ' || buf[k - 1] == '\t'))
                k--;
        buf[k] = '\0';
        return 0;
}

int gw_yolo_log_save_dir(const char *log, size_t len, char *buf, size_t n) {
        static const char lead[] = "Logging results to ";
        const size_t ll = sizeof lead - 1;
        const char *found = NULL;
        size_t found_n = 0;

        if (!buf || !n || (!log && len))
                return -EINVAL;
        for (size_t i = 0; i < len;) {
                const char *s = log + i, *nl = memchr(s, '\n', len - i);
                size_t l = nl ? (size_t) (nl - s) : len - i;
                const char *hit = l >= ll ? memmem(s, l, lead, ll) : NULL;

                /* A last line without '\n' may be half written: only whole lines count. */
                if (hit && nl) {
                        found = hit + ll;
                        found_n = l - (size_t) (found - s);
                }
                i += l + 1;
        }
        if (!found)
                return -ENOENT;
        return copy_plain(found, found_n, buf, n) < 0 ? -ENAMETOOLONG : (buf[0] ? 0 : -ENOENT);
}

/* cwd/p (p when absolute or cwd NULL), without "./" parts, doubled or trailing slashes. */
static int join(char *buf, size_t n, const char *cwd, const char *p) {
        char tmp[GW_YOLO_PATH_MAX];
        size_t k = 0;
        int r = p[0] == '/' || !cwd ? snprintf(tmp, sizeof tmp, "%s", p) : snprintf(tmp, sizeof tmp, "%s/%s", cwd, p);

        if (r < 0 || (size_t) r >= sizeof tmp || (size_t) r >= n)
                return -ENAMETOOLONG;
        for (size_t i = 0; tmp[i]; i++) {
                if (tmp[i] == '/' && k > 0 && buf[k - 1] == '/')
                        continue;
                if (tmp[i] == '.' && (k == 0 || buf[k - 1] == '/') && (tmp[i + 1] == '/' || !tmp[i + 1]) && k > 0) {
                        i += tmp[i + 1] == '/';
                        continue;
                }
                buf[k++] = tmp[i];
        }
        while (k > 1 && buf[k - 1] == '/')
                k--;
        buf[k] = '\0';
        return 0;
}

static bool truthy(const char *v) { return v && (!strcasecmp(v, "true") || !strcmp(v, "1")); }

static bool falsy(const char *v) {
        return !v || !*v || !strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "none");
}

/* The task from the model's file name: yolo11n-seg.pt is segment (Ultralytics guesses it the
 * same way, guess_model_task); a plain yolo*.pt or .yaml is detect; others are not known. */
static const char *task_of_model(const char *model) {
        static const struct {
                const char *suffix, *task;
        } sfx[] = {
                { "-seg", "segment" },
                { "-cls", "classify" },
                { "-pose", "pose" },
                { "-obb", "obb" },
        };
        const char *base = strrchr(model, '/'), *dot;

        base = base ? base + 1 : model;
        dot = strrchr(base, '.');
        if (!dot || strncasecmp(base, "yolo", 4))
                return NULL;
        for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
                size_t l = strlen(sfx[i].suffix);
                if ((size_t) (dot - base) > l && !strncmp(dot - l, sfx[i].suffix, l))
                        return sfx[i].task;
        }
        return "detect";
}

static const char *task_of(const struct gw_yolo_input *in) {
        const char *t = gw_yolo_arg(in->argv, in->argc, "task", NULL), *model;
        const char *prog = in->argc && in->argv[0] ? strrchr(in->argv[0], '/') : NULL;
        bool cli = in->argc && in->argv[0] && !strcmp(prog ? prog + 1 : in->argv[0], "yolo");

        for (size_t k = 0; !t && k < sizeof tasks / sizeof tasks[0]; k++)
                if (gw_yolo_has_word(in->argv, in->argc, tasks[k]))
                        t = tasks[k];
        if (t) {
                for (size_t k = 0; k < sizeof tasks / sizeof tasks[0]; k++)
                        if (!strcmp(t, tasks[k]))
                                return tasks[k];
                return NULL;
        }
        model = gw_yolo_arg(in->argv, in->argc, "model", NULL);
        if (model && *model)
                return task_of_model(model);
        return cli ? "detect" : NULL; /* the CLI's default model is a detection model */
}

/* The resumed checkpoint: resume=PATH, or with a bare "resume" / resume=True the model= (the
 * CLI's documented form); the daemon's own retry checkpoint before either. */
static void resume_of(const struct gw_yolo_input *in, struct gw_yolo_run *r, const char **ret_ckpt) {
        const char *v = gw_yolo_arg(in->argv, in->argc, "resume", NULL);
        bool word = gw_yolo_has_word(in->argv, in->argc, "resume");

        *ret_ckpt = NULL;
        r->resumed = word || !falsy(v) || in->resume_from;
        if (in->resume_from && *in->resume_from)
                *ret_ckpt = in->resume_from;
        else if (v && !falsy(v) && !truthy(v))
                *ret_ckpt = v;
        else if (r->resumed)
                *ret_ckpt = gw_yolo_arg(in->argv, in->argc, "model", NULL);
        if (*ret_ckpt && !**ret_ckpt)
                *ret_ckpt = NULL;
}

/* RUN of RUN/weights/NAME.pt; the file's folder for a checkpoint elsewhere. */
static void run_of_ckpt(const char *ckpt, char *buf) {
        char *w;

        snprintf(buf, GW_YOLO_PATH_MAX, "%s", ckpt);
        w = strstr(buf, "/weights/");
        if (!w)
                w = strrchr(buf, '/');
        if (w && w > buf)
                *w = '\0';
}

int gw_yolo_resolve(const struct gw_yolo_input *in, struct gw_yolo_run *ret) {
        struct gw_yolo_run r = { .evidence = GW_YOLO_NONE };
        const char *project, *name, *task, *ckpt;
        char logdir[GW_YOLO_PATH_MAX];

        if (!in || !ret || (!in->argv && in->argc) || (!in->log && in->log_len))
                return -EINVAL;
        r.training = gw_run_is_training(in->argv, in->argc, in->yolo);
        r.exist_ok = gw_run_reuses_dir(in->argv, in->argc);
        task = task_of(in);
        snprintf(r.task, sizeof r.task, "%s", task ? task : "");
        project = gw_yolo_arg(in->argv, in->argc, "project", NULL);
        name = gw_yolo_arg(in->argv, in->argc, "name", NULL);
        if (project && !*project)
                project = NULL;
        if (name && (strlen(name) >= sizeof r.name || strchr(name, '/')))
                name = NULL; /* not a folder name Ultralytics would make */
        snprintf(r.name, sizeof r.name, "%s", name ? name : "");
        if (join(r.base, sizeof r.base, in->cwd, project ? project : "runs") < 0)
                return -ENAMETOOLONG;
        if (!project && task) {
                size_t l = strlen(r.base);
                if (l + 1 + strlen(task) >= sizeof r.base)
                        return -ENAMETOOLONG;
                snprintf(r.base + l, sizeof r.base - l, "/%s", task);
        }
        r.any_task = !project && !task;
        r.named = project || r.name[0];
        if (r.named)
                r.evidence = GW_YOLO_NAMED;
        resume_of(in, &r, &ckpt);
        if (ckpt) {
                char run[GW_YOLO_PATH_MAX];
                if (join(r.ckpt, sizeof r.ckpt, in->cwd, ckpt) < 0)
                        return -ENAMETOOLONG;
                run_of_ckpt(r.ckpt, run);
                snprintf(r.run_dir, sizeof r.run_dir, "%s", run);
                r.evidence = GW_YOLO_CHECKPOINT;
        }
        /* Its own log saying where it saves is training, whatever runs it: `sh -c 'yolo ...'`,
         * a script, a Python program calling model.train(). */
        if (in->log && gw_yolo_log_save_dir(in->log, in->log_len, logdir, sizeof logdir) == 0 &&
            join(r.run_dir, sizeof r.run_dir, in->cwd, logdir) == 0) {
                r.evidence = GW_YOLO_LOG;
                r.training = true;
        }
        *ret = r;
        return 0;
}

bool gw_yolo_could_own(const struct gw_yolo_run *r, const char *dir) {
        const char *slash;
        size_t bl;

        if (!r || !dir)
                return false;
        if (r->evidence == GW_YOLO_LOG || r->evidence == GW_YOLO_CHECKPOINT)
                return !strcmp(dir, r->run_dir);
        bl = strlen(r->base);
        if (strncmp(dir, r->base, bl) || dir[bl] != '/')
                return false;
        dir += bl + 1;
        slash = strchr(dir, '/');
        if (r->any_task) {
                if (!slash || slash == dir)
                        return false;
                dir = slash + 1;
                slash = strchr(dir, '/');
        }
        return !slash && gw_yolo_name_matches(dir, r->name);
}

int gw_yolo_own_dir(const struct gw_yolo_run *r, char *buf, size_t n) {
        int w;
        if (!r || !buf || !n)
                return -EINVAL;
        buf[0] = '\0';
        if (!r->training)
                return -ENOENT;
        if (r->evidence == GW_YOLO_LOG || r->evidence == GW_YOLO_CHECKPOINT)
                w = snprintf(buf, n, "%s", r->run_dir);
        else if (r->evidence == GW_YOLO_NAMED && r->exist_ok && !r->any_task && r->name[0])
                w = snprintf(buf, n, "%s/%s", r->base, r->name);
        else
                return -ENOENT;
        return w < 0 || (size_t) w >= n ? -ENAMETOOLONG : 0;
}
