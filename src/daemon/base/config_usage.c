/* gpuwardd --help and --list-keys, written from the settings' table (config_keys.c); the man
 * pages and contrib/gpuward.conf are checked against them (tests/e2e/test_manpages.py,
 * test_contrib.py). */
#include "daemon/base/config_int.h"
#include "daemon/base/config_keys.h"

#include <stdbool.h>
#include <string.h>

#define HELP_WIDTH 92
#define HELP_TEXT_COL 23

static const char usage_head[] =
        "Usage: gpuwardd [OPTIONS]\n"
        "\n"
        "The gpuward daemon: queues jobs, gives them whole GPUs, runs them, keeps state in SQLite.\n"
        "Runs in the foreground and logs to stderr.  Config keys use the same names as the flags\n"
        "('_' or '-'); every setting is read at start.\n"
        "\n";

static const char usage_actions[] =
        "  --check-config [FILE]  only read FILE (default " GW_CONFIG_DEFAULT_FILE ") as gpuwardd\n"
        "                       would: each bad line with its number, key and why, exit 1; or\n"
        "                       'FILE: ok', exit 0.  Starts nothing; takes no other option\n"
        "  --list-keys          every setting, a line each, tab-separated: key, kind, default,\n"
        "                       values taken, what it does; exit 0\n";

static const char usage_tail[] =
        "  --agent              run as a Slurm compute node's agent instead, reporting its GPUs\n"
        "                       to the controller ('gpuwardd --agent --help')\n"
        "  --help, --version\n"
        "\n"
        "Idle-GPU reclamation profiles (default, hpo, finetune, or new ones) are [policy.NAME]\n"
        "sections of the config file: util_threshold, idle_timeout, warn, grace, protect_max\n"
        "(seconds or durations), enabled, allowed (users, @groups, @admins, *), and\n"
        "leak_mib_per_epoch, leak_epochs for the profile's jobs (else the global ones), and\n"
        "preemptible (its jobs are preemptible as if submitted --preemptible).  [reclaim]\n"
        "validating_patterns and saving_patterns ('|'-separated substrings) add log lines that\n"
        "protect a job to the built-in Ultralytics ones.\n";

/* text from column col on, its words wrapped at HELP_WIDTH onto lines that start at
 * HELP_TEXT_COL. */
static void put_wrapped(FILE *f, int col, const char *text) {
        bool first = true;
        for (const char *p = text; *p; first = false) {
                int len = (int) strcspn(p, " ");
                /* A word that starts with '-' never starts a line: it would read as a flag. */
                int keep = 0;
                for (const char *q = p + len + strspn(p + len, " "); *q == '-'; q += strspn(q, " ")) {
                        int n = (int) strcspn(q, " ");
                        keep += 1 + n;
                        q += n;
                }
                if (!first && *p != '-' && col + 1 + len + keep > HELP_WIDTH) {
                        fprintf(f, "\n%*s", HELP_TEXT_COL, "");
                        col = HELP_TEXT_COL;
                } else if (!first) {
                        fputc(' ', f);
                        col++;
                }
                fprintf(f, "%.*s", len, p);
                col += len;
                p += len;
                p += strspn(p, " ");
        }
        fputc('\n', f);
}

/* "… (default D; NOTE)" as --help ends a key's entry. */
static void default_phrase(const struct gw_config_key *k, char *buf, size_t n) {
        const char *d = k->dflt_doc ? k->dflt_doc : k->dflt && *k->dflt ? k->dflt : NULL;
        if (d && k->note)
                snprintf(buf, n, " (default %s; %s)", d, k->note);
        else if (d)
                snprintf(buf, n, " (default %s)", d);
        else if (k->note)
                snprintf(buf, n, " (%s)", k->note);
        else
                buf[0] = '\0';
}

static void put_key(FILE *f, const struct gw_config_key *k) {
        char head[96], tail[320], text[1024];
        int col = snprintf(head, sizeof head, "  --%s%s%s", k->name, k->arg ? " " : "", k->arg ? k->arg : "");
        fputs(head, f);
        /* The text at its column, or two spaces after a flag too long for that. */
        int pad = col <= HELP_TEXT_COL - 2 ? HELP_TEXT_COL - col : 2;
        fprintf(f, "%*s", pad, "");
        col += pad;
        default_phrase(k, tail, sizeof tail);
        snprintf(text, sizeof text, "%s%s", k->doc, tail);
        put_wrapped(f, col, text);
}

void gw_config_keys_usage(FILE *f) {
        fputs(usage_head, f);
        for (size_t i = 0; i < gw_config_keys_n; i++) {
                if (!gw_config_keys[i].file_only)
                        put_key(f, &gw_config_keys[i]);
                if (!strcmp(gw_config_keys[i].name, "config"))
                        fputs(usage_actions, f);
        }
        fputs(usage_tail, f);
}

static const char *kind_name(enum gw_config_kind kind) {
        static const char *const names[] = {
                [GW_KEY_STRING] = "text",       [GW_KEY_WORDS] = "word",    [GW_KEY_BOOL] = "bool",
                [GW_KEY_INT] = "integer",       [GW_KEY_SIZE] = "size",     [GW_KEY_SECONDS] = "seconds",
                [GW_KEY_DURATION] = "duration", [GW_KEY_PERIOD] = "period", [GW_KEY_CUSTOM] = "text",
        };
        return names[kind];
}

void gw_config_keys_list(FILE *f) {
        for (size_t i = 0; i < gw_config_keys_n; i++) {
                const struct gw_config_key *k = &gw_config_keys[i];
                char key[64], values[200];
                if (k->flag_only)
                        continue;
                snprintf(key, sizeof key, "%s", k->name);
                for (char *p = key; *p; p++)
                        if (*p == '-')
                                *p = '_';
                gw_config_key_values(k, values, sizeof values);
                fprintf(f, "%s\t%s\t%s\t%s\t%s\n", key, kind_name(k->kind),
                        k->dflt && *k->dflt ? k->dflt
                        : k->dflt_doc       ? k->dflt_doc
                                            : "",
                        values, k->doc);
        }
}
