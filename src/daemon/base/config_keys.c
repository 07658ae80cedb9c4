/* Every setting of gpuwardd once (see config_keys.h): the table, and the one parser that
 * reads a value for any of its rows. */
#include "daemon/base/config_keys.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "core/bookpolicy.h"
#include "core/fairshare.h"
#include "core/quota.h"
#include "core/retry.h"
#include "core/webhook.h"
#include "daemon/base/config_int.h"
#include "daemon/base/fairshare.h"
#include "daemon/nodes/nodes.h"

#define AT(field) .off = offsetof(struct gw_config, field), .size = sizeof(((struct gw_config *) 0)->field)
#define SECS(n) ((long long) (n))

/* "URL[,URL...]": each one gw_webhook_url_check takes. */
static int webhook_urls_check(const char *list, char *why, size_t n) {
        char url[GW_WEBHOOK_URL_MAX + 2];
        size_t urls = 0;
        for (const char *p = list; *p;) {
                size_t len = strcspn(p, ", ");
                snprintf(url, sizeof url, "%.*s", (int) (len < sizeof url - 1 ? len : sizeof url - 1), p);
                if (len && gw_webhook_url_check(url, why, n) < 0)
                        return -EINVAL;
                urls += len > 0;
                p += len;
                p += strspn(p, ", ");
        }
        if (*list && !urls) { /* "" turns webhooks off; ",," would do so without a word */
                snprintf(why, n, "no URL in the list '%.40s'", list);
                return -EINVAL;
        }
        return 0;
}

static int cache_dir_check(const char *v, char *why, size_t n) {
        if (strcmp(v, "none") && (v[0] != '/' || strlen(v) > 512)) {
                snprintf(why, n, "an absolute folder of at most 512 bytes, or none");
                return -EINVAL;
        }
        return 0;
}

static int stage_socket_check(const char *v, char *why, size_t n) {
        if (v[0] != '/' || strlen(v) > 200 || strchr(v, '\'') || strchr(v, '\n')) {
                snprintf(why, n, "an absolute path of at most 200 bytes (%%n: the node's name)");
                return -EINVAL;
        }
        return 0;
}

static int cache_sources_check(const char *v, char *why, size_t n) {
        for (const char *p = v; *p;) {
                size_t l = strcspn(p, ",");
                if (p[0] != '/' || l > 1024) {
                        snprintf(why, n, "a comma list of absolute folders ('%.*s' is not one)",
                                 (int) (l > 64 ? 64 : l), p);
                        return -EINVAL;
                }
                p += l + (p[l] == ',');
        }
        return 0;
}

static int webhook_topics_check(const char *v, char *why, size_t n) {
        unsigned topics;
        return gw_webhook_topics_parse(v, &topics, why, n);
}

static int retry_classes_check(const char *v, char *why, size_t n) {
        uint32_t mask;
        return gw_retry_parse_classes(v, &mask, why, n);
}

static int fair_weights_check(const char *v, char *why, size_t n) {
        return gw_fair_weights_parse(v, NULL, NULL, why, n);
}

/* The model store is written as root and read back as files: a path relative to wherever
 * the daemon was started from would move with it. */
static int model_store_check(const char *v, char *why, size_t n) {
        if (!strcmp(v, "none") || v[0] == '/')
                return 0;
        snprintf(why, n, "'%.200s' is not an absolute path (or none)", v);
        return -EINVAL;
}

static int booking_gpus_parse(struct gw_config *c, const char *name, const char *v) {
        if (gw_bookpolicy_parse_gpus(v, &c->booking) == 0)
                return 0;
        gw_config_fail(c, "%s: invalid value '%s' (a GPU count 0-64, a percentage 0-100%%, or unlimited)", name, v);
        return -EINVAL;
}

/* In --help's order.  A default is text, read by the same parser as a user's value, so the
 * default --help states is the one the daemon runs with. */
const struct gw_config_key gw_config_keys[] = {
        { .name = "config",
          .arg = "FILE",
          .kind = GW_KEY_STRING,
          AT(config_file),
          .flag_only = true,
          .dflt_doc = GW_CONFIG_DEFAULT_FILE " if it exists",
          .doc = "INI file" },
        { .name = "state-dir",
          .arg = "DIR",
          .kind = GW_KEY_STRING,
          AT(state_dir),
          .dflt_doc = "/var/lib/gpuward as root, else $XDG_STATE_HOME/gpuward",
          .doc = "database, logs, run files" },
        { .name = "socket",
          .arg = "PATH",
          .kind = GW_KEY_STRING,
          AT(socket),
          .dflt_doc = "/run/gpuward/gpuward.sock as root, else $XDG_RUNTIME_DIR/gpuward.sock, else "
                      "STATE_DIR/gpuward.sock",
          .doc = "Unix socket for the CLI" },
        { .name = "listen",
          .arg = "HOST:PORT",
          .kind = GW_KEY_STRING,
          AT(listen),
          .none_word = "none",
          .dflt = "127.0.0.1:8470",
          .note = "port 0 picks a free one, written to STATE_DIR/listen.addr; 'none' "
                  "disables TCP",
          .doc = "TCP door for the web page and scripts" },
        { .name = "web-dir",
          .arg = "DIR",
          .kind = GW_KEY_STRING,
          AT(web_dir),
          .doc = "serve the dashboard's files from DIR instead of the copy built into gpuwardd (for working on "
                 "web/)" },
        { .name = "simulate-gpus",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(simulate_gpus),
          .min = 0,
          .max = 64,
          .dflt = "0",
          .note = "0: real GPUs",
          .doc = "run on N simulated GPUs, the project's fake NVML" },
        { .name = "nvml-lib",
          .arg = "PATH",
          .kind = GW_KEY_STRING,
          AT(nvml_lib),
          .dflt_doc = "libnvidia-ml.so.1",
          .note = "env GPUWARD_NVML_LIB",
          .doc = "NVML library to load" },
        { .name = "grace-seconds",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(grace),
          .min = 0,
          .max = 3600,
          .scale = GW_USEC_PER_SEC,
          .dflt = "30",
          .doc = "SIGTERM to SIGKILL delay on cancel and time limit" },
        { .name = "default-time-limit",
          .arg = "DURATION",
          .kind = GW_KEY_DURATION,
          AT(default_time_limit),
          .dflt = "1d",
          .doc = "for jobs submitted without --time" },
        { .name = "max-time-limit",
          .arg = "DURATION",
          .kind = GW_KEY_DURATION,
          AT(max_time_limit),
          .dflt = "7d",
          .doc = "longest --time accepted" },
        { .name = "allow-root-jobs",
          .kind = GW_KEY_BOOL,
          AT(allow_root_jobs),
          .dflt = "false",
          .doc = "let uid 0 submit jobs" },
        { .name = "admins",
          .arg = "LIST",
          .kind = GW_KEY_STRING,
          AT(admins),
          .dflt = "",
          .doc = "comma-separated admin user names and @groups; root always is one" },
        { .name = "guests",
          .arg = "LIST",
          .kind = GW_KEY_STRING,
          AT(guests),
          .dflt = "",
          .doc = "users and @groups who may only read; everyone else is a user" },
        { .name = "tcp-anonymous",
          .arg = "MODE",
          .kind = GW_KEY_WORDS,
          AT(tcp_refuse_anonymous),
          .words = "guest|refuse",
          .index = true,
          .dflt = "guest",
          .doc = "guest | refuse: a TCP caller without a token reads as a guest, or gets 401" },
        { .name = "guest-job-details",
          .arg = "BOOL",
          .kind = GW_KEY_BOOL,
          AT(guest_job_details),
          .dflt = "no",
          .doc = "show guests (callers without a token, --guests) the command line, working directory and log "
                 "path of jobs" },
        { .name = "strip-env",
          .arg = "LIST",
          .kind = GW_KEY_STRING,
          AT(strip_env),
          .file_only = true,
          .dflt = "LD_PRELOAD,LD_AUDIT",
          .doc = "variables never passed to jobs" },
        { .name = "cgroup",
          .arg = "MODE",
          .kind = GW_KEY_WORDS,
          AT(cgroup),
          .words = "auto|v2|v1|none",
          .dflt = "auto",
          .doc = "auto | v2 | v1 | none" },
        { .name = "sample-interval",
          .arg = "S",
          .kind = GW_KEY_SECONDS,
          AT(sample_interval),
          .min = 1,
          .max = 3600,
          .dflt = "2",
          .doc = "seconds between GPU samples" },
        { .name = "rogue-policy",
          .arg = "P",
          .kind = GW_KEY_WORDS,
          AT(rogue_policy),
          .words = "report|kill",
          .dflt = "report",
          .doc = "report | kill: what to do with processes of no job on a GPU that a job holds" },
        { .name = "default-retries",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(default_retries),
          .min = 0,
          .max = 100,
          .dflt = "3",
          .doc = "retries for jobs submitted without --retries" },
        { .name = "default-retry-on",
          .arg = "LIST",
          .kind = GW_KEY_STRING,
          AT(default_retry_on),
          .check = retry_classes_check,
          .dflt = "gpu_fault,cuda_error,nccl_error,lost",
          .doc = "failure classes retried by default" },
        { .name = "retry-backoff",
          .arg = "S",
          .kind = GW_KEY_SECONDS,
          AT(retry_backoff),
          .min = 1,
          .max = 3600,
          .dflt = "10",
          .doc = "delay before a first retry, doubling after each" },
        { .name = "no-show",
          .arg = "DURATION",
          .kind = GW_KEY_SECONDS,
          AT(no_show),
          .min = 1,
          .max = 3600,
          .dflt = "15m",
          .doc = "release a started booking with no job this long" },
        { .name = "booking-warn",
          .arg = "DURATION",
          .kind = GW_KEY_SECONDS,
          AT(booking_warn),
          .min = 1,
          .max = 3600,
          .dflt = "5m",
          .doc = "tell a booking's jobs this long before it ends" },
        { .name = "booking-max-duration",
          .arg = "DURATION",
          .kind = GW_KEY_DURATION,
          AT(booking.max_duration),
          .unlimited = true,
          .dflt = "1d",
          .note = "0 or unlimited: no limit",
          .doc = "a user's booking longer than this waits for an admin's approval" },
        { .name = "booking-max-gpus",
          .arg = "N|P%",
          .kind = GW_KEY_CUSTOM,
          .parse = booking_gpus_parse,
          .dflt = "50%",
          .note = "unlimited: no limit",
          .doc = "one with more GPUs, or more than P% of them, too" },
        { .name = "booking-may-delay-waiting",
          .arg = "BOOL",
          .kind = GW_KEY_BOOL,
          AT(booking.may_delay_waiting),
          .dflt = "false",
          .doc = "false: one that would delay jobs already waiting waits for an admin too" },
        { .name = "booking-pending-ttl",
          .arg = "DURATION",
          .kind = GW_KEY_PERIOD,
          AT(booking_pending_ttl),
          .zero_means = "(never: only its end denies it)",
          .dflt = "7d",
          .note = "0: only at its end",
          .doc = "deny a booking no admin answered this long after it was asked for" },
        { .name = "webhook-url",
          .arg = "URLS",
          .kind = GW_KEY_STRING,
          AT(webhook_url),
          .check = webhook_urls_check,
          .dflt = "",
          .doc = "POST job events as JSON, with a \"text\" field for chat tools, to these comma-separated "
                 "http(s) URLs" },
        { .name = "webhook-events",
          .arg = "LIST",
          .kind = GW_KEY_STRING,
          AT(webhook_events),
          .check = webhook_topics_check,
          .dflt = GW_WEBHOOK_DEFAULT_TOPICS,
          .doc = "which: start, end, retry, warn, leak, gpu, model.published, all" },
        { .name = "time-limit-warn",
          .arg = "DURATION",
          .kind = GW_KEY_SECONDS,
          AT(time_limit_warn),
          .min = 0,
          .max = 3600,
          .dflt = "5m",
          .note = "0: never",
          .doc = "tell a job this long before its time limit, in its events and its log" },
        { .name = "rate-limit",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(rate_per_min),
          .min = 1,
          .max = 1000000,
          .dflt = "20",
          .doc = "submissions and bookings per user a minute; admins are not limited" },
        { .name = "rate-burst",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(rate_burst),
          .min = 1,
          .max = 1000000,
          .dflt = "50",
          .doc = "of them at once" },
        { .name = "user-max-priority",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(user_max_priority),
          .min = 0,
          .max = GW_PRIORITY_MAX,
          .dflt = "0",
          .hint = "a priority from 0 to 1000",
          .doc = "the highest --priority a user may give a job where no quota (max_priority) or profile grants "
                 "more; admins may use any" },
        { .name = "max-pending-jobs",
          .arg = "N|unlimited",
          .kind = GW_KEY_INT,
          AT(max_pending_jobs),
          .min = 1,
          .max = 1000000000,
          .unlimited = true,
          .dflt = "1000",
          .hint = "a count from 1, or unlimited",
          .doc = "jobs a user may have waiting, an array's tasks one each, where no quota (max_pending_jobs) "
                 "says; admins are not limited by it" },
        { .name = "leak-mib-per-epoch",
          .arg = "M",
          .kind = GW_KEY_INT,
          AT(leak_mib_per_epoch),
          .real = true,
          .min = 1,
          .max = 1 << 20,
          .dflt = "256",
          .doc = "GPU memory-leak threshold: baseline growth per epoch" },
        /* The detector needs two epochs, and looks at 64. */
        { .name = "leak-epochs",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(leak_epochs),
          .min = 2,
          .max = 64,
          .dflt = "3",
          .doc = "epochs in a row over it before a leak is flagged" },
        { .name = "snapshot-keep-last",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(snapshot_keep_last),
          .min = 1,
          .max = 1000,
          .dflt = "3",
          .doc = "snapshots of last.pt, and of best.pt, kept per job" },
        { .name = "snapshot-cap",
          .arg = "SIZE",
          .kind = GW_KEY_SIZE,
          AT(snapshot_cap),
          .dflt = "50G",
          .note = "0 = no cap",
          .doc = "all snapshots together, in blocks on disk; the oldest copies go first, each job's newest "
                 "best.pt last" },
        { .name = "snapshot-cap-user",
          .arg = "SIZE",
          .kind = GW_KEY_SIZE,
          AT(snapshot_cap_user),
          .dflt = "20G",
          .note = "0 = none",
          .doc = "the same over each user's snapshots" },
        /* A cap keeps a quarter as the head and one as the tail: under 64K, nothing. */
        { .name = "log-max",
          .arg = "SIZE",
          .kind = GW_KEY_SIZE,
          AT(log_max),
          .min = 64 << 10,
          .dflt = "64M",
          .note = "0 = no cap",
          .doc = "a job's log under the state dir is kept under this: its first quarter, a line saying how "
                 "much was dropped, and its newest output" },
        { .name = "state-reserve",
          .arg = "SIZE",
          .kind = GW_KEY_SIZE,
          AT(state_reserve),
          .dflt = "256M",
          .note = "at most a quarter of that disk; 0 = none",
          .doc = "job logs stop growing while the state dir's disk has less free, so the database can still "
                 "record" },
        /* 4096: all the Unix door holds. */
        { .name = "max-connections-per-user",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(max_conns_per_user),
          .min = 0,
          .max = 4096,
          .dflt = "64",
          .note = "0 = no cap",
          .doc = "connections one user may hold open on the Unix socket; more are refused (root and the "
                 "daemon's own user are not capped); a user's first refusal is logged, the rest counted in "
                 "one line a minute" },
        { .name = "cache-dir",
          .arg = "DIR",
          .kind = GW_KEY_STRING,
          AT(cache_dir),
          .file_only = true,
          .check = cache_dir_check,
          .none_word = "none",
          .dflt = "none",
          .note = "none = no cache",
          .doc = "a node-local folder (an SSD) for the dataset cache: a job's --dataset is copied here while it "
                 "waits, as its user, and reused by later jobs; with none, --dataset is refused" },
        { .name = "cache-size",
          .arg = "SIZE",
          .kind = GW_KEY_SIZE,
          AT(cache_size),
          .file_only = true,
          .min = 1 << 20,
          .dflt = "100G",
          .doc = "bytes the dataset cache may hold; the least recently used entries no queued or running job "
                 "uses are removed to make room" },
        { .name = "cache-sources",
          .arg = "LIST",
          .kind = GW_KEY_STRING,
          AT(cache_sources),
          .file_only = true,
          .check = cache_sources_check,
          .dflt = "",
          .doc = "comma list of absolute folders a --dataset may be under (the shared storage); empty: none" },
        /* 64: far past what one source's server and one node's disk gain from. */
        { .name = "cache-copies",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(cache_copies),
          .file_only = true,
          .min = 1,
          .max = 64,
          .dflt = "2",
          .hint = "dataset copies at once, 1-64",
          .doc = "dataset copies made at once; a job whose copy would be one more waits (Staging: waiting for "
                 "a copy slot), first come first" },
        { .name = "stage-socket",
          .arg = "PATH",
          .kind = GW_KEY_STRING,
          AT(stage_socket),
          .file_only = true,
          .check = stage_socket_check,
          .dflt = "/run/gpuward/stage.sock",
          .doc = "with --backend slurm: where each node's agent (gpuwardd --agent --cache-dir) takes its job steps' "
                 "--dataset requests, %n standing for the node's name; the batch script of a job with --dataset "
                 "asks there before it runs the command" },
        { .name = "scratch-dir",
          .arg = "DIR",
          .kind = GW_KEY_STRING,
          AT(scratch_dir),
          .file_only = true,
          .check = cache_dir_check,
          .none_word = "none",
          .dflt = "none",
          .note = "none = --scratch refused",
          .doc = "a node-local folder (a fast disk) where each attempt of a --scratch job gets a folder of its "
                 "user's; its checkpoints are copied back to the job's working directory as they appear; with "
                 "--backend slurm, a folder every node has (mode 1777), where the job's step does this" },
        { .name = "scratch-interval",
          .arg = "S",
          .kind = GW_KEY_SECONDS,
          AT(scratch_interval),
          .file_only = true,
          .min = 1,
          .max = 3600,
          .dflt = "10",
          .doc = "seconds between two looks for new checkpoints in a --scratch job's folder" },
        { .name = "backup-interval",
          .arg = "DURATION",
          .kind = GW_KEY_PERIOD,
          AT(backup_interval),
          .zero_means = "for no scheduled backups",
          .dflt = "0",
          .note = "0 = never",
          .doc = "copy the database to STATE_DIR/backups/ this often, online; 'gpuward admin backup PATH' "
                 "makes one at once" },
        { .name = "backup-keep",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(backup_keep),
          .min = 1,
          .max = 10000,
          .dflt = "7",
          .hint = "how many scheduled backups to keep, 1-10000",
          .doc = "scheduled backups kept, the oldest removed first" },
        { .name = "model-store",
          .arg = "DIR",
          .kind = GW_KEY_STRING,
          AT(model_store),
          .none_word = "none",
          .check = model_store_check,
          .dflt = "none",
          .note = "none: submit --publish is refused",
          .doc = "where a completed job's run is published (submit --publish NAME) as NAME/vN/: a folder "
                 "owned by gpuwardd's user that no one else may write to; the admin backs it up (gpuward "
                 "admin backup copies the database only)" },
        { .name = "debug", .kind = GW_KEY_BOOL, AT(debug), .dflt = "false", .doc = "verbose log" },
        { .name = "backend",
          .arg = "local|slurm|test",
          .kind = GW_KEY_WORDS,
          AT(backend),
          .words = "local|slurm|test",
          .index = true,
          .dflt = "local",
          .hint = "local: jobs run on this host's GPUs; slurm: submitted to Slurm with sbatch; test: the tests' "
                  "backend",
          .doc = "where jobs run: local on this host's GPUs; slurm: each job is submitted at once with sbatch as "
                 "its user (SLURM_CONF names the cluster), Slurm queues and places it, gpuwardd follows it "
                 "with squeue and stops it with scancel; test: the tests' backend, each job a plain child of "
                 "gpuwardd on this host's GPUs, with no supervisor or cgroup and not kept across a restart (an "
                 "attempt running then is stopped and counted lost)" },
        { .name = "fairshare",
          .arg = "BOOL",
          .kind = GW_KEY_BOOL,
          AT(fairshare),
          .dflt = "true",
          .doc = "order the queue by priority, then by fair share (who used the GPUs least lately), then "
                 "submission" },
        { .name = "fairshare-half-life",
          .arg = "DURATION",
          .kind = GW_KEY_PERIOD,
          AT(fairshare_half_life),
          .zero_means = "for usage that never decays",
          .dflt = "7d",
          .note = "0 = usage never decays",
          .doc = "a GPU-hour counts half after this" },
        { .name = "fairshare-weights",
          .arg = "LIST",
          .kind = GW_KEY_STRING,
          AT(fairshare_weights),
          .check = fair_weights_check,
          .dflt = "",
          .doc = "users' shares, e.g. alice=2,bob=1; unlisted users have 1, and with no list all shares are "
                 "equal" },
        { .name = "slurm-foreign-jobs",
          .arg = "watch|reclaim|ignore",
          .kind = GW_KEY_WORDS,
          AT(slurm_foreign),
          .words = "watch|reclaim|ignore",
          .index = true,
          .dflt = "watch",
          .hint = "watch: an idle Slurm job gpuward did not submit is reported; reclaim: it is cancelled like "
                  "gpuward's own; ignore: not watched",
          .doc = "with --backend slurm, a Slurm job that gpuward did not submit and whose GPUs sit idle: watch "
                 "reports it, reclaim cancels it as gpuward's own, ignore skips it" },
        { .name = "max-nodes",
          .arg = "N",
          .kind = GW_KEY_INT,
          AT(max_nodes),
          .min = 1,
          .max = GW_NODES_MAX,
          .dflt = "1024",
          .hint = "how many nodes' snapshots the controller keeps, 1-4096",
          .doc = "with --backend slurm, the nodes whose agents' snapshots are kept (1-4096); one more node's "
                 "are refused" },
        { .name = "preemption",
          .arg = "BOOL",
          .kind = GW_KEY_BOOL,
          AT(preemption),
          .dflt = "false",
          .doc = "a preemptible job may be stopped for a waiting job of a higher priority or a booking that "
                 "starts, and queued again to resume" },
        { .name = "preempt-grace",
          .arg = "DURATION",
          .kind = GW_KEY_SECONDS,
          AT(preempt_grace),
          .min = 0,
          .max = 86400,
          .dflt = "10m",
          .doc = "how long a preempted job has to reach its next checkpoint (or to exit after its --signal) "
                 "before it is stopped anyway" },
        { .name = "preempt-unresumable",
          .arg = "BOOL",
          .kind = GW_KEY_BOOL,
          AT(preempt_unresumable),
          .dflt = "false",
          .doc = "also preempt preemptible jobs that cannot resume: no --yolo, --checkpoint or --resume-cmd" },
};
const size_t gw_config_keys_n = sizeof gw_config_keys / sizeof gw_config_keys[0];

const struct gw_config_key *gw_config_key_find(const char *name) {
        char key[64];
        if (strlen(name) >= sizeof key)
                return NULL;
        snprintf(key, sizeof key, "%s", name);
        for (char *p = key; *p; p++)
                if (*p == '_')
                        *p = '-';
        for (size_t i = 0; i < gw_config_keys_n; i++)
                if (!strcmp(gw_config_keys[i].name, key))
                        return &gw_config_keys[i];
        return NULL;
}

static void *field(struct gw_config *c, const struct gw_config_key *k) { return (char *) c + k->off; }

/* A whole number into the field, whatever its width (bool, int, unsigned, 64-bit). */
static void store_int(struct gw_config *c, const struct gw_config_key *k, long long v) {
        void *p = field(c, k);
        if (k->size == sizeof(bool)) {
                bool b = v != 0;
                memcpy(p, &b, sizeof b);
        } else if (k->size == sizeof(int32_t)) {
                int32_t n = (int32_t) v;
                memcpy(p, &n, sizeof n);
        } else {
                int64_t n = v;
                memcpy(p, &n, sizeof n);
        }
}

/* The word's index in "a|b|c", or -1. */
static int word_index(const char *words, const char *v) {
        int i = 0;
        for (const char *p = words; *p; i++) {
                size_t len = strcspn(p, "|");
                if (strlen(v) == len && !strncmp(p, v, len))
                        return i;
                p += len + (p[len] == '|');
        }
        return -1;
}

void gw_config_key_values(const struct gw_config_key *k, char *buf, size_t n) {
        if (k->hint) {
                snprintf(buf, n, "%s", k->hint);
                return;
        }
        switch (k->kind) {
        case GW_KEY_BOOL:
                snprintf(buf, n, "true or false");
                break;
        case GW_KEY_INT:
                snprintf(buf, n, "a whole number from %lld to %lld%s", k->min, k->max,
                         k->unlimited ? ", or unlimited" : "");
                break;
        case GW_KEY_WORDS: {
                int w = snprintf(buf, n, "one of");
                for (const char *p = k->words; *p && w >= 0 && (size_t) w < n;) {
                        int len = (int) strcspn(p, "|");
                        w += snprintf(buf + w, n - (size_t) w, "%s %.*s", p == k->words ? "" : ",", len, p);
                        p += len + (p[len] == '|');
                }
                break;
        }
        case GW_KEY_SIZE:
                snprintf(buf, n, "a size such as 64M%s, or 0 for none", k->min ? ", at least 64K" : "");
                break;
        case GW_KEY_SECONDS:
                snprintf(buf, n, "seconds from %lld to %lld, or a duration as long", k->min, k->max);
                break;
        case GW_KEY_DURATION:
        case GW_KEY_PERIOD:
                snprintf(buf, n, "%s", GW_DURATION_FORMS);
                break;
        case GW_KEY_STRING:
        case GW_KEY_CUSTOM:
                snprintf(buf, n, "text");
        }
}

static int refuse(struct gw_config *c, const struct gw_config_key *k, const char *name, const char *v) {
        char values[200];
        gw_config_key_values(k, values, sizeof values);
        gw_config_fail(c, "%s: invalid value '%s' (%s)", name, v, values);
        return -EINVAL;
}

/* range: " from 1s to 1h" or ""; after: ", or unlimited" or "". */
static int refuse_duration(struct gw_config *c, const char *name, const char *v, const char *range, const char *after) {
        gw_config_fail(c, "%s: '%s' is not a duration%s: " GW_DURATION_FORMS "%s", name, v, range, after);
        return -EINVAL;
}

static int apply_int(struct gw_config *c, const struct gw_config_key *k, const char *name, const char *v) {
        long long n;
        if (k->unlimited && !strcmp(v, "unlimited")) {
                store_int(c, k, k->size == sizeof(int32_t) ? INT32_MAX : INT64_MAX);
                return 0;
        }
        if (gw_parse_int(v, k->min, k->max, &n) < 0)
                return refuse(c, k, name, v);
        if (k->real) {
                double x = (double) n;
                memcpy(field(c, k), &x, sizeof x);
        } else
                store_int(c, k, n * (k->scale ? k->scale : 1));
        return 0;
}

static int apply_string(struct gw_config *c, const struct gw_config_key *k, const char *name, const char *v) {
        char why[200] = "";
        if (k->check && k->check(v, why, sizeof why) < 0) {
                gw_config_fail(c, "%s: %s", name, why);
                return -EINVAL;
        }
        gw_config_set_str(field(c, k), k->none_word && !strcmp(v, k->none_word) ? "" : v);
        return 0;
}

static int apply_seconds(struct gw_config *c, const struct gw_config_key *k, const char *name, const char *v) {
        gw_usec_t d;
        if (gw_config_parse_seconds_or_duration(v, k->min, k->max, &d) < 0)
                return refuse_duration(c, name, v, "", "");
        if (d < k->min * GW_USEC_PER_SEC || d > k->max * GW_USEC_PER_SEC) {
                char a[32], b[32], more[96];
                snprintf(more, sizeof more, " from %s to %s", gw_format_duration(k->min * GW_USEC_PER_SEC, a, sizeof a),
                         gw_format_duration(k->max * GW_USEC_PER_SEC, b, sizeof b));
                return refuse_duration(c, name, v, more, "");
        }
        store_int(c, k, d);
        return 0;
}

static int apply_duration(struct gw_config *c, const struct gw_config_key *k, const char *name, const char *v) {
        gw_usec_t d;
        if (k->unlimited && (!strcmp(v, "0") || !strcmp(v, "unlimited")))
                d = 0;
        else if (gw_parse_duration(v, &d) < 0)
                return refuse_duration(c, name, v, "", k->unlimited ? ", or unlimited" : "");
        store_int(c, k, d);
        return 0;
}

int gw_config_key_apply(struct gw_config *c, const struct gw_config_key *k, const char *name, const char *v) {
        switch (k->kind) {
        case GW_KEY_STRING:
                return apply_string(c, k, name, v);
        case GW_KEY_WORDS: {
                int i = word_index(k->words, v);
                if (i < 0)
                        return refuse(c, k, name, v);
                if (k->index)
                        store_int(c, k, i);
                else
                        gw_config_set_str(field(c, k), v);
                return 0;
        }
        case GW_KEY_BOOL: {
                bool b;
                if (!gw_config_parse_bool(v, &b))
                        return refuse(c, k, name, v);
                store_int(c, k, b);
                return 0;
        }
        case GW_KEY_INT:
                return apply_int(c, k, name, v);
        case GW_KEY_SIZE: {
                uint64_t size = 0;
                if (strcmp(v, "0") && (gw_parse_size(v, &size) < 0 || size < (uint64_t) k->min))
                        return refuse(c, k, name, v);
                memcpy(field(c, k), &size, sizeof size);
                return 0;
        }
        case GW_KEY_SECONDS:
                return apply_seconds(c, k, name, v);
        case GW_KEY_DURATION:
                return apply_duration(c, k, name, v);
        case GW_KEY_PERIOD: {
                gw_usec_t d;
                if (gw_config_parse_period(c, name, v, k->zero_means, &d) < 0)
                        return -EINVAL;
                store_int(c, k, d);
                return 0;
        }
        case GW_KEY_CUSTOM:
                return k->parse(c, name, v);
        }
        return refuse(c, k, name, v);
}

int gw_config_keys_set_defaults(struct gw_config *c) {
        for (size_t i = 0; i < gw_config_keys_n; i++) {
                const struct gw_config_key *k = &gw_config_keys[i];
                if (k->dflt && gw_config_key_apply(c, k, k->name, k->dflt) < 0)
                        return -EINVAL;
        }
        return 0;
}
