/* One line per event on stderr: time, level, message.  Only edges log (systemd's rule). */
#pragma once
#include <stdarg.h>

enum gw_log_level { GW_LOG_DEBUG, GW_LOG_INFO, GW_LOG_WARN, GW_LOG_ERR };

void gw_log_set_level(enum gw_log_level level);
void gw_log(enum gw_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) gw_log(GW_LOG_DEBUG, __VA_ARGS__)
#define log_info(...) gw_log(GW_LOG_INFO, __VA_ARGS__)
#define log_warn(...) gw_log(GW_LOG_WARN, __VA_ARGS__)
#define log_err(...) gw_log(GW_LOG_ERR, __VA_ARGS__)
