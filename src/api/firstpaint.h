/* The dashboard's first paint: the page gpuwardd serves at / carries the state the reader
 * would fetch first (the replies of GET /api/v1/gpus, /api/v1/jobs and /api/v1/session), as
 * JSON for the page's script and as plain HTML for a reader without JavaScript (a screenshot
 * of a headless browser, curl, a script).  What goes in is what the API gave that reader:
 * this file only writes it out, escaped, and decides nothing about who may see what. */
#pragma once
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "base/time.h"

/* Where the page's template (web/index.html) takes what is rendered: */
#define GW_FIRSTPAINT_STATE "<!--gw:state-->" /* <script type="application/json" id="gw-state"> */
#define GW_FIRSTPAINT_HTML "<!--gw:firstpaint-->" /* <section id="firstpaint">: the tables */
#define GW_FIRSTPAINT_WHO "<!--gw:whoami-->" /* who the reader is, as text */

/* The page: html (len bytes, the template) with each marker above replaced, once, by what
 * state renders to.  state is {"gpus": GET /api/v1/gpus's reply, "jobs": GET /api/v1/jobs's,
 * "session": GET /api/v1/session's}, any of them absent when the API refused it (the page
 * then says the part is not available).  now labels the tables ("as of ...", UTC).
 * Returns a malloc'ed, NUL-terminated page the caller frees, its length in *ret_len; a
 * template without a marker is copied as it is.  Never fails (allocation failure aborts). */
char *gw_firstpaint_render(const char *html, size_t len, const json_t *state, gw_usec_t now, size_t *ret_len);
