/* gpuward cache: the node's dataset cache (GET /api/v1/cache). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/verbs.h"

static const char cache_help[] = "Usage: gpuward cache [--json]\n"
                                 "\n"
                                 "The datasets in this host's cache ('gpuward submit --dataset PATH' stages them\n"
                                 "while the job waits): the source, its size, when a job last used it, who used it\n"
                                 "since gpuwardd started, and whether a queued or running job uses it (then it is\n"
                                 "never evicted).  Admins see every entry, others the entries their jobs used.\n"
                                 "\n"
                                 "Options:\n"
                                 "  --json  print the API's JSON\n";

static int print_cache(const json_t *reply) {
        const json_t *entries = json_object_get(reply, "entries");
        static const char *const head[] = { "SOURCE", "SIZE", "FILES", "LAST USE", "USERS", "IN USE" };
        struct cli_table *t = cli_table_new(head, 6);
        if (!t)
                return cli_oom();
        time_t now = time(NULL);
        size_t i;
        const json_t *e;
        json_array_foreach (entries, i, e) {
                char size[32], files[32], when[64], users[256] = "";
                double b = cli_jnum(e, "size");
                cli_format_bytes(isfinite(b) ? b : 0, size, sizeof size);
                long long nf = 0;
                (void) cli_jint(e, "files", &nf);
                snprintf(files, sizeof files, "%lld", nf);
                double lu = cli_jnum(e, "last_use");
                if (isfinite(lu))
                        cli_format_time(lu, now, when, sizeof when);
                else
                        snprintf(when, sizeof when, "-");
                size_t k;
                const json_t *u;
                json_array_foreach (json_object_get(e, "users"), k, u) {
                        size_t l = strlen(users);
                        snprintf(users + l, sizeof users - l, "%s%s", l ? "," : "", json_string_value(u) ?: "?");
                }
                const char *src = cli_jstr(e, "source");
                _cleanup_free_ char *ssrc = cli_sanitize(src ? src : "?");
                _cleanup_free_ char *susers = cli_sanitize(*users ? users : "-");
                const char *use = json_is_true(json_object_get(e, "staging"))  ? "staging"
                                  : json_is_true(json_object_get(e, "in_use")) ? "yes"
                                                                               : "no";
                const char *cells[] = { ssrc ? ssrc : "?", size, files, when, susers ? susers : "?", use };
                if (cli_table_add(t, cells) < 0) {
                        cli_table_free(t);
                        return cli_oom();
                }
        }
        if (!cli_table_rows(t))
                printf("No datasets in the cache.\n");
        else
                cli_table_print(t, stdout);
        cli_table_free(t);
        return CLI_EXIT_OK;
}

int cli_verb_cache(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct cli_get_verb v = {
                .verb = "cache",
                .help = cache_help,
                .target = "/api/v1/cache",
                .print = print_cache,
        };
        return cli_run_get_verb(ctx, &v, argc, argv);
}
