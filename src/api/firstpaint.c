/* The dashboard's first paint (firstpaint.h): the API's replies for one reader, written into
 * the page as JSON for its script and as HTML tables for readers without one.  Every string
 * comes from users (job names, user names, reasons, GPU names from the driver) and is
 * escaped; the JSON cannot end its <script> element early. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/firstpaint.h"
#include "api/jsonout.h"
#include "base/text.h"

/* At most this many jobs as HTML rows: a queue of thousands still makes a page of a bounded
 * size (the script shows them all once it runs). */
#define MAX_ROWS 500

/* open_memstream fails only for want of memory, which the daemon does not survive. */
static void no_memory(void) {
        fputs("gpuward: out of memory rendering the page\n", stderr);
        abort();
}

/* o as JSON with '<', '>' and '&' written as \u escapes: they occur only inside strings, where
 * the escape means the same, and "</script>" or "<!--" in a job's name cannot end or change
 * the element that holds it. */
static void put_json(FILE *f, const json_t *o) {
        char *s = gw_json_compact(o, 0, NULL);
        for (const char *p = s ? s : "{}"; *p; p++) {
                if (*p == '<')
                        fputs("\\u003c", f);
                else if (*p == '>')
                        fputs("\\u003e", f);
                else if (*p == '&')
                        fputs("\\u0026", f);
                else
                        fputc(*p, f);
        }
        free(s);
}

static const char *str_of(const json_t *o, const char *key) {
        const char *s = json_string_value(json_object_get(o, key));
        return s ? s : "";
}

/* "2026-11-27 14:02" (UTC) of Unix seconds. */
static void put_utc(FILE *f, time_t t) {
        struct tm tm;
        char buf[32];
        if (!gmtime_r(&t, &tm) || !strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm))
                fputs("-", f);
        else
                fputs(buf, f);
}

/* The same of a reply's Unix seconds, "-" when null. */
static void put_time(FILE *f, const json_t *v) {
        if (json_is_number(v))
                put_utc(f, (time_t) json_number_value(v));
        else
                fputs("-", f);
}

/* Bytes as the page writes them: "1.5 GiB", "80 GiB", "512 MiB". */
static void put_bytes(FILE *f, const json_t *v) {
        if (!json_is_number(v)) {
                fputs("n/a", f);
                return;
        }
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        double b = json_number_value(v);
        size_t i = 0;
        while (b >= 1024 && i + 1 < sizeof units / sizeof *units)
                b /= 1024, i++;
        fprintf(f, i && b < 10 ? "%.1f %s" : "%.0f %s", b, units[i]);
}

static void put_int_or(FILE *f, const json_t *v, const char *suffix, const char *none) {
        if (json_is_number(v))
                fprintf(f, "%lld%s", (long long) llround(json_number_value(v)), suffix);
        else
                fputs(none, f);
}

static void gpu_row(FILE *f, const json_t *g) {
        const char *health = str_of(g, "health");
        long long index = (long long) json_integer_value(json_object_get(g, "index"));
        fprintf(f, "<tr data-gpu=\"%lld\"><td>GPU %lld</td><td>", index, index);
        gw_text_put_markup(f, str_of(g, "name"));
        fputs("</td><td>", f);
        gw_text_put_markup(f, !strcmp(health, "ok") ? "healthy" : health);
        const char *drain = json_string_value(json_object_get(g, "drain_reason"));
        if (drain) {
                fputs(": ", f);
                gw_text_put_markup(f, drain);
        }
        fputs("</td><td class=\"num\">", f);
        put_int_or(f, json_object_get(g, "util"), "%", "n/a");
        fputs("</td><td class=\"num\">", f);
        put_bytes(f, json_object_get(g, "mem_used"));
        fputs(" of ", f);
        put_bytes(f, json_object_get(g, "mem_total"));
        fputs("</td><td class=\"num\">", f);
        put_int_or(f, json_object_get(g, "temp"), " °C", "n/a");
        fputs("</td><td>", f);
        const json_t *ji = json_object_get(g, "job_info");
        if (json_is_object(ji)) {
                fprintf(f, "job %lld ", (long long) json_integer_value(json_object_get(ji, "id")));
                gw_text_put_markup(f, str_of(ji, "name"));
                fputs(" (", f);
                gw_text_put_markup(f, str_of(ji, "user"));
                fputs(")", f);
        } else
                fputs(!strcmp(health, "ok") ? "free" : "no job", f);
        fputs("</td></tr>\n", f);
}

/* A section's heading, then the line that stands for its table when the reader may not see
 * reply's list key (hidden) or the list is empty (empty).  Returns the list when its table
 * is to follow, else NULL. */
static const json_t *put_list_head(FILE *f, const char *title, const json_t *reply, const char *key, const char *hidden,
                                   const char *empty) {
        const json_t *list = json_object_get(reply, key);
        fprintf(f, "<h2>%s</h2>\n", title);
        if (json_is_array(list) && json_array_size(list))
                return list;
        fprintf(f, "<p class=\"empty\">%s</p>\n", json_is_array(list) ? empty : hidden);
        return NULL;
}

/* A table's opening up to its body: attrs inside <table>, then a scoped heading cell for each
 * of the NULL-terminated cols (this file's own words, written as they are). */
static void put_table_head(FILE *f, const char *attrs, const char *const *cols) {
        fprintf(f, "<div class=\"table-wrap\"><table %s><thead><tr>", attrs);
        for (; *cols; cols++)
                fprintf(f, "<th scope=\"col\">%s</th>", *cols);
        fputs("</tr></thead><tbody>\n", f);
}

static void put_gpus(FILE *f, const json_t *reply) {
        const json_t *gpus = put_list_head(f, "GPUs", reply, "gpus", "The GPUs are not available to this reader.",
                                           "No GPUs: the daemon found no NVIDIA GPU on this host (its log says why).");
        if (!gpus)
                return;
        static const char *const cols[] = { "GPU",    "Model",       "Health", "Utilisation",
                                            "Memory", "Temperature", "Job",    NULL };
        put_table_head(f, "id=\"fp-gpus\"", cols);
        size_t i;
        const json_t *g;
        json_array_foreach (gpus, i, g)
                gpu_row(f, g);
        fputs("</tbody></table></div>\n", f);
}

static void job_row(FILE *f, const json_t *j) {
        long long id = (long long) json_integer_value(json_object_get(j, "id"));
        fprintf(f, "<tr data-job=\"%lld\"><td>%lld</td><td>", id, id);
        gw_text_put_markup(f, str_of(j, "name"));
        fputs("</td><td>", f);
        gw_text_put_markup(f, str_of(j, "user"));
        fputs("</td><td>", f);
        gw_text_put_markup(f, str_of(j, "state"));
        fputs("</td><td>", f);
        gw_text_put_markup(f, str_of(j, "reason"));
        fputs("</td><td>", f);
        const json_t *gpus = json_object_get(j, "gpus");
        if (json_array_size(gpus)) {
                size_t i;
                const json_t *v;
                json_array_foreach (gpus, i, v)
                        fprintf(f, "%s%lld", i ? "," : "", (long long) json_integer_value(v));
        } else
                fprintf(f, "%lld wanted", (long long) json_integer_value(json_object_get(j, "ngpus")));
        fputs("</td><td>", f);
        put_time(f, json_object_get(j, "submit_time"));
        fputs("</td></tr>\n", f);
}

static void put_jobs(FILE *f, const json_t *reply) {
        const json_t *jobs = put_list_head(f, "Queue", reply, "jobs", "The queue is not available to this reader.",
                                           "No jobs waiting or running.");
        if (!jobs)
                return;
        static const char *const cols[] = { "Job", "Name", "User", "State", "Why", "GPUs", "Submitted (UTC)", NULL };
        put_table_head(f, "id=\"fp-jobs\" class=\"jobs\"", cols);
        size_t i, n = json_array_size(jobs);
        for (i = 0; i < n && i < MAX_ROWS; i++)
                job_row(f, json_array_get(jobs, i));
        fputs("</tbody></table></div>\n", f);
        if (n > MAX_ROWS)
                fprintf(f,
                        "<p class=\"sub\">and %zu more jobs (the page shows all of them with JavaScript, "
                        "as does gpuward queue)</p>\n",
                        n - MAX_ROWS);
}

/* "alice", "root (admin)", "guest (read-only)": as the page's script writes it. */
static void put_who(FILE *f, const json_t *session) {
        if (!json_is_true(json_object_get(session, "signed_in")) && strcmp(str_of(session, "role"), "admin") &&
            !strcmp(str_of(session, "user"), "")) {
                fputs("guest (read-only)", f);
                return;
        }
        gw_text_put_markup(f, str_of(session, "user"));
        if (!strcmp(str_of(session, "role"), "admin"))
                fputs(" (admin)", f);
        else if (!strcmp(str_of(session, "role"), "guest"))
                fputs(" (guest, read-only)", f);
}

static void put_section(FILE *f, const json_t *state, gw_usec_t now) {
        fputs("<section id=\"firstpaint\" class=\"firstpaint\" aria-labelledby=\"h-firstpaint\">\n"
              "<h1 id=\"h-firstpaint\">GPUs and queue <span class=\"sub\">as of ",
              f);
        put_utc(f, (time_t) (now / GW_USEC_PER_SEC));
        fputs(" UTC, for ", f);
        put_who(f, json_object_get(state, "session"));
        fputs("; reload for newer</span></h1>\n", f);
        put_gpus(f, json_object_get(state, "gpus"));
        put_jobs(f, json_object_get(state, "jobs"));
        fputs("</section>", f);
}

/* The state for the script: the session without its CSRF value, which the script asks for
 * itself (the page then holds nothing that acts for the reader). */
static void put_state(FILE *f, const json_t *state) {
        json_t *copy = json_deep_copy(state);
        json_object_del(json_object_get(copy, "session"), "csrf");
        fputs("<script type=\"application/json\" id=\"gw-state\">", f);
        put_json(f, copy);
        fputs("</script>", f);
        json_decref(copy);
}

static const char *const markers[] = { GW_FIRSTPAINT_STATE, GW_FIRSTPAINT_HTML, GW_FIRSTPAINT_WHO };
#define N_MARKERS (sizeof markers / sizeof *markers)

/* Which marker not yet done starts p (n bytes left); N_MARKERS for none. */
static size_t marker_at(const char *p, size_t n, const bool done[N_MARKERS]) {
        for (size_t k = 0; k < N_MARKERS; k++)
                if (!done[k] && n >= strlen(markers[k]) && !memcmp(p, markers[k], strlen(markers[k])))
                        return k;
        return N_MARKERS;
}

char *gw_firstpaint_render(const char *html, size_t len, const json_t *state, gw_usec_t now, size_t *ret_len) {
        bool done[N_MARKERS] = { false };
        char *out = NULL;
        size_t out_len = 0;
        FILE *f = open_memstream(&out, &out_len);
        if (!f)
                no_memory();
        for (size_t i = 0; i < len;) {
                size_t k = marker_at(html + i, len - i, done);
                if (k == N_MARKERS) {
                        fputc(html[i++], f);
                        continue;
                }
                if (k == 0)
                        put_state(f, state);
                else if (k == 1)
                        put_section(f, state, now);
                else
                        put_who(f, json_object_get(state, "session"));
                done[k] = true;
                i += strlen(markers[k]);
        }
        if (fclose(f) != 0 || !out)
                no_memory();
        *ret_len = out_len;
        return out;
}
