#include "core/jobrec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/directive.h"

struct gw_job *gw_job_free(struct gw_job *j) {
        if (!j)
                return NULL;
        free(j->name);
        free(j->user);
        free(j->end_reason);
        gw_strv_free(j->argv);
        gw_strv_free(j->env);
        gw_strv_free(j->env_extra);
        free(j->cwd);
        free(j->output);
        free(j->log_path);
        free(j->cgroup);
        free(j->telemetry);
        free(j->retry_on);
        free(j->checkpoint);
        free(j->resume_cmd);
        free(j->resume_from);
        free(j->idle_policy);
        free(j->leak_policy);
        free(j->progress_file);
        free(j->health_url);
        free(j->stop_reason);
        free(j->tty_socket);
        free(j->array_spec);
        free(j->dataset);
        free(j->scratch_name);
        free(j->wait_detail);
        free(j->preempted_by);
        free(j->publish);
        free(j->publish_metric);
        free(j->mig_profile);
        free(j->mig_slices);
        free(j->mig_wait);
        free(j);
        return NULL;
}

enum gw_job_reason gw_job_reason_shown(const struct gw_job *j) {
        if (j->state != GW_JOB_PENDING || !j->queue_first || j->booking_id > 0)
                return j->wait_reason;
        switch (j->wait_reason) {
        case GW_REASON_RESOURCES:
        case GW_REASON_PRIORITY:
        case GW_REASON_RESERVATION:
                return GW_REASON_PREEMPTED;
        default:
                return j->wait_reason;
        }
}

void gw_job_text_set(char **field, const char *text) {
        if (!text || !*text) {
                free(*field);
                *field = NULL;
        } else if (!*field || strcmp(*field, text)) {
                free(*field);
                *field = gw_xstrdup(text);
        }
}

void gw_job_events_free(struct gw_job_event *ev, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(ev[i].kind);
                free(ev[i].message);
        }
        free(ev);
}

void gw_job_attempts_free(struct gw_job_attempt *a, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(a[i].class_name);
                free(a[i].evidence);
                free(a[i].resumed_from);
                free(a[i].log_path);
                free(a[i].ckpt_id);
        }
        free(a);
}

size_t gw_strv_length(char *const *v) {
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

char **gw_strv_copy(char *const *v) {
        if (!v)
                return NULL;
        size_t n = gw_strv_length(v);
        char **r = gw_xcalloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++)
                r[i] = gw_xstrdup(v[i]);
        return r;
}

char *gw_strv_pack(char *const *v, size_t *ret_len) {
        size_t len = 0, n = gw_strv_length(v);
        for (size_t i = 0; i < n; i++)
                len += strlen(v[i]) + 1;
        char *buf = gw_xmalloc(len), *p = buf;
        for (size_t i = 0; i < n; i++) {
                size_t l = strlen(v[i]) + 1;
                memcpy(p, v[i], l);
                p += l;
        }
        *ret_len = len;
        return buf;
}

char **gw_strv_unpack(const void *blob, size_t len) {
        if (!blob)
                return NULL;
        const char *b = blob;
        size_t n = 0;
        for (size_t i = 0; i < len; i++)
                n += b[i] == '\0';
        char **r = gw_xcalloc(n + 1, sizeof(char *));
        size_t k = 0, start = 0;
        for (size_t i = 0; i < len && k < n; i++)
                if (b[i] == '\0') {
                        r[k++] = gw_xstrdup(b + start);
                        start = i + 1;
                }
        return r;
}

char *gw_gpu_mask_format(uint64_t mask, char *buf, size_t n) {
        size_t used = 0;
        buf[0] = '\0';
        for (int i = 0; i < 64 && used < n; i++)
                if (mask & (UINT64_C(1) << i)) {
                        int w = snprintf(buf + used, n - used, "%s%d", used ? "," : "", i);
                        if (w < 0)
                                break;
                        used += (size_t) w;
                }
        return buf;
}
