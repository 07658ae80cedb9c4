/* The API's entry points the loop and the lifecycle call (handlers.c). */
#pragma once
#include "daemon/daemon.h"

/* handlers.c */
void gw_api_handle(void *userdata, const struct gw_http_request *req, struct gw_http_reply *rep);
void gw_api_conn_gone(void *userdata, struct gw_http_conn *conn);
/* Answers the cancel requests waiting on dj (GW_HOOK_JOB_ENDED); _forget lets go of them
 * unanswered (GW_HOOK_JOB_FREED: a job the daemon lets go at shutdown). */
void gw_api_resume_waiters(struct gw_daemon *d, struct gw_djob *dj);
void gw_api_forget_waiters(struct gw_daemon *d, struct gw_djob *dj);
