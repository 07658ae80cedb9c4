/* gpuwardd --check-config names every bad line of a config file, but inih returns only the
 * first one's number: the lines it will refuse are found here, by its rules (Debian's libinih
 * defaults: ';' and '#' start a comment line, ';' after a blank an inline comment, an indented
 * line continues the value of the key above it). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/base/config.h"

int gw_config_line_check(const char *file, int line_no, const char *line, bool *after_key) {
        const char *p = line + strspn(line, " \t\r\n");
        if (line_no == 1 && !strncmp(p, "\xEF\xBB\xBF", 3)) /* a byte order mark */
                p += 3;
        if (!*p || *p == ';' || *p == '#' || (p > line && *after_key))
                return 0;
        const char *e = p + strcspn(p, "=:;");
        while (*e == ';' && e > p && e[-1] != ' ' && e[-1] != '\t')
                e += 1 + strcspn(e + 1, "=:;");
        bool ok = *p == '[' ? strchr(p, ']') != NULL : *e == '=' || *e == ':';
        *after_key = ok && *p != '[';
        if (ok)
                return 0;
        fprintf(stderr, "gpuwardd: error: %s line %d: %s\n", file, line_no,
                *p == '[' ? "a [section] without its ']'" : "not a 'key = value' line or a [section]");
        return -EINVAL;
}
