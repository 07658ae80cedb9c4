/* gpuwardd's settings: embedded defaults, then the INI file, then flags. */
#pragma once
#include <stdbool.h>

#include "base/time.h"
#include "core/bookpolicy.h"
#include "core/reclaim.h"

/* An idle-reclamation profile ([policy.NAME] in the INI file) and who may choose it. */
struct gw_policy_conf {
        struct gw_reclaim_policy p;
        /* Comma list of user names, @group, @admins, or *; NULL = everyone while the profile
         * reclaims, admins only when it is off (opting out of reclamation is an admin's call). */
        char *allowed;
        /* Leak thresholds for the profile's jobs; 0 = the global leak_mib_per_epoch/leak_epochs.
         * Not copied into a new profile from "default". */
        double leak_mib_per_epoch;
        unsigned leak_epochs;
        /* preemptible = true: the profile's jobs are preemptible as if submitted so. */
        bool preemptible;
        /* max_priority = N: the profile's jobs may have a priority up to N, whoever submits
         * them (who may choose the profile is `allowed`'s business); -1 = it grants none.
         * Not copied into a new profile from "default". */
        int max_priority;
};

struct gw_config {
        char *config_file;
        bool in_file; /* reading config_file: errors wait for their line number */
        bool check_all; /* --check-config: print every bad line, not the first only */
        char file_error[400]; /* the first one */
        int file_line, file_error_line; /* lines read so far; file_error's */
        char *state_dir;
        char *socket;
        char *listen; /* HOST:PORT, "" = no TCP door */
        char *web_dir; /* dashboard files from here instead of the embedded copy */
        int simulate_gpus; /* > 0: load the fake NVML with that many GPUs */
        char *nvml_lib;
        gw_usec_t grace; /* SIGTERM → SIGKILL */
        gw_usec_t default_time_limit;
        gw_usec_t max_time_limit;
        gw_usec_t sample_interval;
        bool allow_root_jobs;
        char *admins; /* comma list of user names and @groups; root is always admin */
        char *webhook_url; /* comma list of http(s) URLs job events are POSTed to; "" none */
        char *webhook_events; /* comma list of topics (core/webhook.h) */
        char *guests; /* comma list of user names and @groups: read-only */
        bool tcp_refuse_anonymous; /* TCP callers without a token: 401 rather than guests */
        bool guest_job_details; /* guests see others' command lines, cwd, log paths too */
        char *admin_group;
        char *strip_env; /* comma list of variables never passed to jobs */
        char *cgroup; /* auto | v2 | v1 | none */
        char *rogue_policy; /* report | kill */
        int default_retries; /* for jobs submitted without --retries */
        char *default_retry_on; /* failure classes retried by default */
        gw_usec_t retry_backoff; /* delay before the first retry; doubles, capped at 10 min */
        gw_usec_t no_show; /* release a started booking unused this long */
        gw_usec_t booking_warn; /* tell a booking's jobs this long before its end */
        struct gw_bookpolicy booking; /* which users' bookings wait for an admin */
        gw_usec_t booking_pending_ttl; /* deny one unanswered this long; 0 = never */
        gw_usec_t time_limit_warn; /* tell a job this long before its time limit; 0: never */
        int rate_per_min, rate_burst; /* submissions and bookings per user */
        int user_max_priority; /* users' max_priority where no quota sets one (admins: any) */
        int64_t max_pending_jobs; /* users' max_pending_jobs where no quota sets one (admins:
                                     * unlimited); GW_QUOTA_UNLIMITED = none */
        double leak_mib_per_epoch; /* training awareness: leak threshold (core/leak.h) */
        unsigned leak_epochs; /* rising epochs in a row before a leak is flagged */
        int snapshot_keep_last; /* last.pt snapshots kept per job (every best.pt is kept) */
        uint64_t snapshot_cap; /* bytes on disk of all snapshots; 0 = no cap */
        char *cache_dir; /* the node's dataset cache (cache.c); "" = none, --dataset refused */
        uint64_t cache_size; /* bytes the cache's entries may take */
        char *cache_sources; /* comma list of roots a --dataset may be under */
        int cache_copies; /* dataset copies at once; more jobs wait for a slot */
        char *stage_socket; /* --backend slurm: the nodes' agents' staging socket ("%n": node) */
        char *scratch_dir; /* node-local work folders of --scratch jobs; "" = none, refused */
        gw_usec_t scratch_interval; /* between two looks for new checkpoints in one */
        uint64_t snapshot_cap_user; /* bytes on disk of each user's snapshots; 0 = no cap */
        uint64_t log_max; /* bytes of a job's log under the state dir; 0 = no cap */
        uint64_t state_reserve; /* free bytes job logs leave on the state dir's disk; 0 = none */
        unsigned max_conns_per_user; /* Unix socket connections per uid; 0 = no cap */
        bool debug;
        gw_usec_t backup_interval; /* scheduled online backups into STATE_DIR/backups; 0 = none */
        int backup_keep; /* scheduled backups kept there */
        char *model_store; /* where submit --publish puts models (publish.c); "" = none:
                                     * publishing is refused */
        /* backend =: which backend table runs the jobs, read only where it is opened
         * (exec_backend.c); everything else asks the table (executor.h).  In the order of its
         * words in config_keys.c, whose index is stored. */
        enum { GW_BACKEND_LOCAL, GW_BACKEND_SLURM, GW_BACKEND_TEST } backend;
        bool fairshare; /* order the queue by fair share too (daemon/base/fairshare.c) */
        gw_usec_t fairshare_half_life; /* usage halves over this; 0 = never decays */
        char *fairshare_weights; /* "alice=2,bob=1": shares; "" = equal */
        /* backend slurm: the idle watch of Slurm jobs gpuward did not submit (nodes_watch.c) */
        enum { GW_FOREIGN_WATCH, GW_FOREIGN_RECLAIM, GW_FOREIGN_IGNORE } slurm_foreign;
        int max_nodes; /* backend slurm: nodes whose snapshots are kept (nodes.h) */
        bool preemption; /* preemptible jobs may be stopped for higher ones (preempt.c) */
        gw_usec_t preempt_grace; /* how long a victim has to reach its checkpoint or exit */
        bool preempt_unresumable; /* a preemptible job that cannot resume may be a victim too */
        /* Idle reclamation: the built-in profiles (core/reclaim.h) with the INI's [policy.*]
         * applied, and extra log-tail substrings ([reclaim] validating_patterns,
         * saving_patterns: '|'-separated) added after the built-in Ultralytics patterns. */
        struct gw_policy_conf *policies;
        size_t n_policies;
        char *validating_patterns;
        char *saving_patterns;
};

struct gw_job;
/* Whether j may be preempted at all: submitted --preemptible, or of a profile whose jobs are
 * ([policy.NAME] preemptible); never a terminal session, which cannot be resumed behind its
 * user's back.  Whether preemption is on is the caller's to ask (c->preemption). */
bool gw_config_job_preemptible(const struct gw_config *c, const struct gw_job *j);
/* The profile j runs under ([policy.NAME], "default" when it names none); NULL when it names
 * one that is not configured (the submission's checks refuse it). */
const struct gw_policy_conf *gw_config_job_policy(const struct gw_config *c, const struct gw_job *j);
/* Whether its next attempt resumes (--yolo, --checkpoint, --resume-cmd), or preempt_unresumable
 * lets it be preempted anyway. */
bool gw_config_job_preempt_resumes(const struct gw_config *c, const struct gw_job *j);

/* Parses argv (and the config file it names or the default one).  Returns 0, 1 when it
 * printed --help or --version (exit 0), or -EINVAL after printing a usage error. */
int gw_config_load(struct gw_config *c, int argc, char **argv);
void gw_config_done(struct gw_config *c);

/* gpuwardd --check-config [FILE]: reads FILE (NULL: the default path) as the daemon would,
 * prints each bad line with its number, key and why on stderr, or "FILE: ok" on stdout.
 * Starts nothing, opens no socket, touches no state.  Returns the exit status: 0 or 1. */
int gw_config_check(const char *file);

/* config_check.c: whether inih will take one line of a config file, by its rules (a [section],
 * key = value or key: value, a comment, a blank line, or an indented line continuing the
 * last key's value when *after_key).  Says why on stderr with file and line_no and returns
 * -EINVAL for a line it will refuse; 0 otherwise.  Updates *after_key. */
int gw_config_line_check(const char *file, int line_no, const char *line, bool *after_key);
