#include "base/log.h"

#include <stdio.h>
#include <sys/time.h>
#include <time.h>

static enum gw_log_level min_level = GW_LOG_INFO;

void gw_log_set_level(enum gw_log_level level) { min_level = level; }

void gw_log(enum gw_log_level level, const char *fmt, ...) {
        static const char *const names[] = { "debug", "info", "warn", "error" };
        if (level < min_level)
                return;
        struct timeval tv;
        struct tm tm;
        char stamp[32];
        (void) gettimeofday(&tv, NULL);
        (void) localtime_r(&tv.tv_sec, &tm);
        (void) strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);

        char line[2048];
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(line, sizeof line, fmt, ap);
        va_end(ap);
        fprintf(stderr, "%s.%03ld gpuwardd[%s] %s\n", stamp, (long) (tv.tv_usec / 1000), names[level], line);
}
