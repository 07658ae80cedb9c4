/* The user and group database (NSS), as the daemon sees it: each account and group looked up
 * once and kept for GW_USERDB_TTL.  A job submission needs the caller's name, groups and
 * home; asking NSS each time reads /etc/passwd and /etc/group three or four times (about a
 * quarter of a submission's system calls).  Ten seconds is how long a change to those files
 * (a user added to a group) may take to count.  Unknown ids are kept too, as unknown.
 *
 * Not thread-safe: the daemon's main thread owns it.  A returned pointer is valid until the
 * next call for the same kind (account or group). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/time.h"

#define GW_USERDB_TTL (10 * GW_USEC_PER_SEC)
#define GW_USERDB_MAX_GROUPS 256

struct gw_account {
        uint32_t uid, gid;
        char name[64];
        char home[512];
        char shell[256];
        int n_groups; /* primary group included; only the first GW_USERDB_MAX_GROUPS */
        uint32_t groups[GW_USERDB_MAX_GROUPS];
};

struct gw_group {
        uint32_t gid;
        char name[64];
};

/* The lookups behind the cache: NSS by default, fakes in the unit tests.  Each returns 0,
 * or -ENOENT when there is no such account or group. */
struct gw_userdb_source {
        int (*account_by_uid)(uint32_t uid, struct gw_account *ret);
        int (*account_by_name)(const char *name, struct gw_account *ret);
        int (*group_by_gid)(uint32_t gid, struct gw_group *ret);
        int (*group_by_name)(const char *name, struct gw_group *ret);
};

extern const struct gw_userdb_source gw_userdb_nss;

struct gw_userdb;

struct gw_userdb *gw_userdb_new(const struct gw_userdb_source *src);
void gw_userdb_free(struct gw_userdb *db);

/* The account, or NULL when there is none. */
const struct gw_account *gw_userdb_uid(struct gw_userdb *db, uint32_t uid, gw_usec_t now);
const struct gw_account *gw_userdb_user(struct gw_userdb *db, const char *name, gw_usec_t now);
/* Whether uid is still the account that was named name when something was made for it (a
 * token, a job): a deleted user's uid is given to the next account made, which must not
 * inherit what was the old one's.  0 when it is (also when uid had no name then, name being
 * its number, and has none now); -ENOENT when uid has no account now; -ESTALE when uid is
 * another account's now (*ret_now, if not NULL, is that account); -EIO when the database
 * could not be read (nothing can be said). */
int gw_userdb_same_account(struct gw_userdb *db, uint32_t uid, const char *name, gw_usec_t now,
                           const struct gw_account **ret_now);
const struct gw_group *gw_userdb_gid(struct gw_userdb *db, uint32_t gid, gw_usec_t now);
const struct gw_group *gw_userdb_group(struct gw_userdb *db, const char *name, gw_usec_t now);

bool gw_account_in_group(const struct gw_account *a, uint32_t gid);

/* Whether a role list of the config ("alice, @gpuadmin": names and @groups, apart by commas,
 * spaces or tabs) names user, or a group of the account uid's; gid, the group it acts with
 * (a caller's, a job's), counts as one of its groups.  An entry of 64 bytes or more names no
 * one. */
bool gw_userdb_list_has(struct gw_userdb *db, const char *list, const char *user, uint32_t uid, uint32_t gid,
                        gw_usec_t now);
/* The daemon's one rule for an admin, for every part that asks of an account (the API,
 * submit's checks): root, self (the daemon's own user), or named in admins by
 * gw_userdb_list_has. */
bool gw_userdb_is_admin(struct gw_userdb *db, const char *admins, uint32_t self, uint32_t uid, uint32_t gid,
                        const char *user, gw_usec_t now);
