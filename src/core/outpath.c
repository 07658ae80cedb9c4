#include "core/outpath.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Appends s to buf at *len; false once it no longer fits. */
static int append(char *buf, size_t size, size_t *len, const char *s, size_t n) {
        if (*len + n >= size)
                return -ENAMETOOLONG;
        memcpy(buf + *len, s, n);
        *len += n;
        buf[*len] = '\0';
        return 0;
}

int gw_outpath_expand(const char *pattern, const struct gw_outpath_vars *v, char *buf, size_t size) {
        size_t len = 0;
        if (size == 0)
                return -ENAMETOOLONG;
        buf[0] = '\0';
        for (const char *p = pattern; *p; p++) {
                char num[24];
                const char *s = p;
                size_t n = 1;
                if (p[0] == '%' && p[1]) {
                        n = 0;
                        switch (p[1]) {
                        case '%':
                                s = "%";
                                n = 1;
                                break;
                        case 'j':
                                n = (size_t) snprintf(num, sizeof num, "%lld", (long long) v->id);
                                s = num;
                                break;
                        case 'A':
                                n = (size_t) snprintf(num, sizeof num, "%lld", (long long) v->array_id);
                                s = num;
                                break;
                        case 'a':
                                n = (size_t) snprintf(num, sizeof num, "%lld",
                                                      (long long) (v->array_index < 0 ? 0 : v->array_index));
                                s = num;
                                break;
                        case 'x':
                                s = v->name ? v->name : "";
                                n = strlen(s);
                                break;
                        case 'u':
                                s = v->user ? v->user : "";
                                n = strlen(s);
                                break;
                        case 'N':
                                s = v->host ? v->host : "";
                                n = strlen(s);
                                break;
                        default:
                                s = p;
                                n = 1;
                                p--;
                                break; /* kept: the '%' now, its letter next */
                        }
                        p++;
                }
                int r = append(buf, size, &len, s, n);
                if (r < 0)
                        return r;
        }
        return (int) len;
}
