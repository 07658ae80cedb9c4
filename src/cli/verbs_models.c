/* gpuward models [NAME]: the models published from completed jobs (submit --publish). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/verbs.h"
#include "core/model.h"

static const char models_help[] = "Usage: gpuward models [--json] [NAME]\n"
                                  "\n"
                                  "The models published from completed jobs (gpuward submit --publish NAME) into the\n"
                                  "admin's model store: without NAME each model with its number of versions and its\n"
                                  "latest; with NAME every version: its number, the job and user it came from, the\n"
                                  "metric it is listed by (--publish-if-better's, else the run's mAP50-95) at its\n"
                                  "best epoch, and when it was published.  A version's files (best.pt, results.csv,\n"
                                  "args.yaml, manifest.json) are downloaded from the API:\n"
                                  "GET /api/v1/models/NAME/vN/FILE (docs/API.md).\n"
                                  "\n"
                                  "Options:\n" CLI_HELP_JSON "  -h, --help   this help\n"
                                  "\n"
                                  "Examples:\n"
                                  "  gpuward models\n"
                                  "  gpuward models yolo-det\n";

static const char *const version_cols[] = { "VERSION", "JOB", "USER", "METRIC", "VALUE", "EPOCH", "PUBLISHED" };
static const char *const model_cols[] = {
        "MODEL", "VERSIONS", "LATEST", "JOB", "USER", "METRIC", "VALUE", "PUBLISHED"
};

/* The cells a version's summary gives from its number on: version, job, user, metric, value,
 * (epoch,) time; written into bufs. */
static void version_cells(const json_t *v, time_t now, bool epoch, const char **cells, char bufs[7][80]) {
        long long n = 0, job = 0, ep = 0;
        (void) cli_jint(v, "version", &n);
        (void) cli_jint(v, "job", &job);
        snprintf(bufs[0], sizeof bufs[0], "v%lld", n);
        snprintf(bufs[1], sizeof bufs[1], "%lld", job);
        const json_t *m = json_object_get(v, "metric");
        const char *mname = cli_jstr(m, "name");
        double mval = cli_jnum(m, "value");
        snprintf(bufs[2], sizeof bufs[2], "%s", mname ? mname : "-");
        if (isnan(mval))
                snprintf(bufs[3], sizeof bufs[3], "-");
        else
                snprintf(bufs[3], sizeof bufs[3], "%.4f", mval);
        if (cli_jint(v, "best_epoch", &ep))
                snprintf(bufs[4], sizeof bufs[4], "%lld", ep);
        else
                snprintf(bufs[4], sizeof bufs[4], "-");
        (void) cli_format_time(cli_jnum(v, "time"), now, bufs[5], sizeof bufs[5]);
        size_t k = 0;
        cells[k++] = bufs[0];
        cells[k++] = bufs[1];
        cells[k++] = cli_jstr(v, "user") ? cli_jstr(v, "user") : "?";
        cells[k++] = bufs[2];
        cells[k++] = bufs[3];
        if (epoch)
                cells[k++] = bufs[4];
        cells[k++] = bufs[5];
}

static int version_row(struct cli_table *t, const json_t *v, time_t now) {
        const char *cells[ELEMENTSOF(version_cols)];
        char bufs[7][80];
        version_cells(v, now, true, cells, bufs);
        return cli_table_add(t, cells);
}

static int model_row(struct cli_table *t, const json_t *m, time_t now) {
        const char *cells[ELEMENTSOF(model_cols)] = { cli_jstr(m, "name") ? cli_jstr(m, "name") : "?" };
        char bufs[7][80], count[24];
        long long n = 0;
        (void) cli_jint(m, "versions", &n);
        snprintf(count, sizeof count, "%lld", n);
        cells[1] = count;
        const json_t *latest = json_object_get(m, "latest");
        if (json_is_object(latest))
                version_cells(latest, now, false, cells + 2, bufs);
        else
                for (size_t k = 2; k < ELEMENTSOF(model_cols); k++)
                        cells[k] = "-";
        return cli_table_add(t, cells);
}

static int print_versions(const json_t *reply) {
        static const struct cli_rows rows = { version_cols, ELEMENTSOF(version_cols), 0, 0, version_row };
        const json_t *list = json_object_get(reply, "versions");
        if (!json_array_size(list)) {
                printf("No version of %s yet.\n", cli_jstr(reply, "name") ? cli_jstr(reply, "name") : "it");
                return CLI_EXIT_OK;
        }
        return cli_print_rows(&rows, list);
}

static int print_models(const json_t *reply) {
        static const struct cli_rows rows = { model_cols, ELEMENTSOF(model_cols), 0, 0, model_row };
        const json_t *list = json_object_get(reply, "models");
        if (!json_array_size(list)) {
                printf("No model published yet (gpuward submit --publish NAME).\n");
                return CLI_EXIT_OK;
        }
        return cli_print_rows(&rows, list);
}

int cli_verb_models(struct cli_ctx *ctx, int argc, char **argv) {
        bool json;
        int r = cli_parse_json_only(ctx, "models", models_help, true, argc, argv, &json);
        if (r >= 0)
                return r;
        if (optind + 1 < argc)
                return cli_usage("models", "one model at a time (got '%s' too)", argv[optind + 1]);
        const char *name = optind < argc ? argv[optind] : NULL;
        char why[200], target[128], subject[96];
        if (name && gw_model_name_check(name, why, sizeof why) < 0)
                return cli_usage("models", "%s", why + strlen("publish: "));
        snprintf(target, sizeof target, "/api/v1/models%s%s", name ? "/" : "", name ? name : "");
        snprintf(subject, sizeof subject, "model %s", name ? name : "list");
        const struct cli_call call = { .method = "GET", .target = target, .subject = name ? subject : NULL };
        return cli_fetch_and_show(ctx, &call, json, NULL, name ? print_versions : print_models);
}
