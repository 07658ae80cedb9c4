/* Helpers in their own image (helper.h). */
#include "daemon/base/helper.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"

#define PREFIX "GW_HELPER_"
#define FLAG "--helper"

static void env_push(struct gw_helper_args *a, char *entry) {
        a->env = gw_xrealloc(a->env, (a->n + 2) * sizeof *a->env);
        a->env[a->n++] = entry;
        a->env[a->n] = NULL;
}

/* The daemon's own environment comes first: a sanitizer's options, a preloaded library. */
static void env_start(struct gw_helper_args *a) {
        extern char **environ;
        if (a->env)
                return;
        env_push(a, gw_xstrdup(PREFIX "VERSION=1"));
        for (char **e = environ; e && *e; e++)
                if (strncmp(*e, PREFIX, strlen(PREFIX)))
                        env_push(a, gw_xstrdup(*e));
}

void gw_helper_arg(struct gw_helper_args *a, const char *name, const char *fmt, ...) {
        env_start(a);
        va_list ap;
        va_start(ap, fmt);
        char *value, *entry;
        if (vasprintf(&value, fmt, ap) < 0 || asprintf(&entry, PREFIX "%s=%s", name, value) < 0)
                abort();
        va_end(ap);
        free(value);
        env_push(a, entry);
}

void gw_helper_arg_user(struct gw_helper_args *a, uid_t uid, gid_t gid, const uint32_t *groups, int n_groups) {
        char list[4096] = "";
        size_t at = 0;
        for (int i = 0; i < n_groups && at < sizeof list - 12; i++)
                at += (size_t) snprintf(list + at, sizeof list - at, "%s%u", i ? "," : "", groups[i]);
        gw_helper_arg(a, "USER", "%u:%u:%s", (unsigned) uid, (unsigned) gid, list);
}

static void args_free(struct gw_helper_args *a) {
        for (size_t i = 0; i < a->n; i++)
                free(a->env[i]);
        free(a->env);
        *a = (struct gw_helper_args){ 0 };
}

/* In the child, before exec: async-signal-safe calls only. */
static void keep_only(const int *keep, size_t n) {
        for (int fd = 3; fd < 1024; fd++) {
                bool k = false;
                for (size_t i = 0; i < n; i++)
                        k |= keep[i] == fd;
                if (!k)
                        (void) close(fd);
                else
                        (void) fcntl(fd, F_SETFD, 0);
        }
        (void) close_range(1024, ~0U, 0);
}

pid_t gw_helper_spawn(const char *kind, struct gw_helper_args *a, const int *keep, size_t n_keep) {
        env_start(a);
        char self[] = "/proc/self/exe", flag[] = FLAG, *k = gw_xstrdup(kind);
        char *argv[] = { self, flag, k, NULL };
        pid_t pid = fork();
        if (pid == 0) {
                (void) setpgid(0, 0);
                sigset_t none;
                sigemptyset(&none);
                (void) sigprocmask(SIG_SETMASK, &none, NULL); /* the daemon's signalfd's, not its */
                keep_only(keep, n_keep);
                execve(self, argv, a->env);
                _exit(127);
        }
        int e = errno;
        free(k);
        args_free(a);
        return pid < 0 ? -e : pid;
}

const char *gw_helper_kind(int argc, char **argv) { return argc == 3 && !strcmp(argv[1], FLAG) ? argv[2] : NULL; }

const char *gw_helper_get(const char *name) {
        char key[64];
        snprintf(key, sizeof key, PREFIX "%s", name);
        const char *v = getenv(key);
        return v && *v ? v : NULL;
}

int gw_helper_get_fd(const char *name) {
        const char *v = gw_helper_get(name);
        char *end;
        long fd = v ? strtol(v, &end, 10) : -1;
        return v && !*end && fd >= 0 && fd < 1024 ? (int) fd : -1;
}

int gw_helper_get_user(const char *name, uid_t *uid, gid_t *gid, uint32_t *groups, int max, int *n_groups) {
        const char *v = gw_helper_get(name);
        unsigned u, g;
        int at = 0;
        if (!v || sscanf(v, "%u:%u:%n", &u, &g, &at) != 2 || !at)
                return -EINVAL;
        *uid = u;
        *gid = g;
        *n_groups = 0;
        for (const char *p = v + at; *p && *n_groups < max;) {
                char *end;
                groups[(*n_groups)++] = (uint32_t) strtoul(p, &end, 10);
                if (end == p)
                        return -EINVAL;
                p = end + (*end == ',');
        }
        return 0;
}
