/* The page at / with its first paint (api/firstpaint.h): the GPUs, the queue and who the
 * reader is, rendered into the page as it is served, so that a screenshot taken as it loads,
 * a browser without JavaScript and curl see the data, not "Loading...".
 *
 * What goes in is what the API answers this very request's reader: each part is the reply of
 * an API call made through gw_api_handle with the request's own credentials (its peer on the
 * Unix socket, its Authorization header or session cookie on TCP), so the route table's
 * rules and the API's views decide, as for the page's own fetches, and there is no second
 * copy of them here.  A part the API refuses (an anonymous reader on a door that answers
 * tokens only) is left out. */
#include <stdlib.h>
#include <string.h>

#include "api/firstpaint.h"
#include "daemon/http/web.h"
#include "daemon/http/api.h"

/* The reply of GET path for the reader of req, decoded; NULL unless it is a 200 with JSON. */
static json_t *api_get(void *userdata, const struct gw_http_request *req, const char *path) {
        struct gw_http_request sub = *req;
        sub.method = "GET";
        sub.path = path;
        sub.body = "";
        sub.body_len = 0;
        struct gw_http_reply rep = { .status = 0 };
        gw_api_handle(userdata, &sub, &rep);
        json_t *o = NULL;
        if (rep.status == 200 && rep.body && !rep.suspend && !rep.stream_read)
                o = json_loadb(rep.body, rep.body_len, 0, NULL);
        free(rep.body);
        return o;
}

char *gw_web_first_paint(void *userdata, const struct gw_http_request *req, const char *html, size_t len,
                         size_t *ret_len) {
        static const struct {
                const char *key, *path;
        } parts[] = {
                { "gpus", "/api/v1/gpus" },
                { "jobs", "/api/v1/jobs" },
                { "session", "/api/v1/session" },
        };
        json_t *state = json_object();
        for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
                json_t *o = api_get(userdata, req, parts[i].path);
                if (o)
                        json_object_set_new(state, parts[i].key, o);
        }
        char *page = gw_firstpaint_render(html, len, state, gw_the_daemon(userdata)->now_wall, ret_len);
        json_decref(state);
        return page;
}
