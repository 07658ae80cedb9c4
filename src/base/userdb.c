/* The cached user and group database (see userdb.h). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "base/userdb.h"

/* Few users submit on one host; the least recently fetched entry makes room. */
#define SLOTS 64

struct slot {
        bool used, found;
        int err; /* the lookup's: -ENOENT (no such entry), -EIO (the lookup failed) */
        gw_usec_t fetched;
        union {
                struct gw_account account;
                struct gw_group group;
        } v;
        char key[64]; /* the name asked for, when asked by name */
};

struct gw_userdb {
        const struct gw_userdb_source *src;
        struct slot accounts[SLOTS], groups[SLOTS];
};

static void account_from(const struct passwd *pw, struct gw_account *a) {
        memset(a, 0, sizeof *a);
        a->uid = pw->pw_uid;
        a->gid = pw->pw_gid;
        snprintf(a->name, sizeof a->name, "%s", pw->pw_name);
        snprintf(a->home, sizeof a->home, "%s", pw->pw_dir ? pw->pw_dir : "/");
        snprintf(a->shell, sizeof a->shell, "%s", pw->pw_shell ? pw->pw_shell : "");
        gid_t groups[GW_USERDB_MAX_GROUPS];
        int n = GW_USERDB_MAX_GROUPS;
        if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &n) < 0)
                n = GW_USERDB_MAX_GROUPS; /* more than fit: the first ones were filled in */
        a->n_groups = n;
        for (int i = 0; i < n; i++)
                a->groups[i] = groups[i];
}

/* getpwuid_r's "not found" (0, or one of these, getpwnam(3)) from a failed lookup (a
 * directory service down, a full file table): an account must not be taken for deleted when
 * it could not be read. */
static int nss_miss(int r) { return r == 0 || r == ENOENT || r == ESRCH || r == EBADF || r == EPERM ? -ENOENT : -EIO; }

static int nss_account_by_uid(uint32_t uid, struct gw_account *ret) {
        struct passwd pw, *pwp = NULL;
        char buf[16384];
        int r = getpwuid_r(uid, &pw, buf, sizeof buf, &pwp);
        if (r != 0 || !pwp)
                return nss_miss(r);
        account_from(pwp, ret);
        return 0;
}

static int nss_account_by_name(const char *name, struct gw_account *ret) {
        struct passwd pw, *pwp = NULL;
        char buf[16384];
        if (getpwnam_r(name, &pw, buf, sizeof buf, &pwp) != 0 || !pwp)
                return -ENOENT;
        account_from(pwp, ret);
        return 0;
}

static int group_from(int r, const struct group *gr, struct gw_group *ret) {
        if (r != 0 || !gr)
                return -ENOENT;
        ret->gid = gr->gr_gid;
        snprintf(ret->name, sizeof ret->name, "%s", gr->gr_name);
        return 0;
}

static int nss_group_by_gid(uint32_t gid, struct gw_group *ret) {
        struct group gr, *grp = NULL;
        char buf[16384];
        int r = getgrgid_r(gid, &gr, buf, sizeof buf, &grp);
        return group_from(r, grp, ret);
}

static int nss_group_by_name(const char *name, struct gw_group *ret) {
        struct group gr, *grp = NULL;
        char buf[16384];
        int r = getgrnam_r(name, &gr, buf, sizeof buf, &grp);
        return group_from(r, grp, ret);
}

const struct gw_userdb_source gw_userdb_nss = {
        nss_account_by_uid,
        nss_account_by_name,
        nss_group_by_gid,
        nss_group_by_name,
};

struct gw_userdb *gw_userdb_new(const struct gw_userdb_source *src) {
        struct gw_userdb *db = calloc(1, sizeof *db);
        if (db)
                db->src = src ? src : &gw_userdb_nss;
        return db;
}

void gw_userdb_free(struct gw_userdb *db) { free(db); }

static bool holds(const struct slot *s, bool account, uint32_t id, const char *key) {
        if (!s->used)
                return false;
        if (key)
                return !strcmp(s->key, key);
        return !s->key[0] && (account ? s->v.account.uid : s->v.group.gid) == id;
}

/* The slot holding id (or key), fresh or not, else a free one, else the oldest. */
static struct slot *slot_for(struct slot *slots, bool account, uint32_t id, const char *key) {
        struct slot *spare = NULL;
        for (size_t i = 0; i < SLOTS; i++) {
                struct slot *s = &slots[i];
                if (holds(s, account, id, key))
                        return s;
                if (!spare || (spare->used && (!s->used || s->fetched < spare->fetched)))
                        spare = s;
        }
        return spare;
}

static struct slot *fetch(struct gw_userdb *db, bool account, uint32_t id, const char *name, gw_usec_t now) {
        if (name && strlen(name) >= sizeof((struct slot *) NULL)->key)
                return NULL; /* longer than any name we keep: not a name of this host */
        struct slot *s = slot_for(account ? db->accounts : db->groups, account, id, name);
        if (holds(s, account, id, name) && now >= s->fetched && now - s->fetched < GW_USERDB_TTL)
                return s->found ? s : NULL;
        memset(s, 0, sizeof *s);
        int r;
        if (account)
                r = name ? db->src->account_by_name(name, &s->v.account) : db->src->account_by_uid(id, &s->v.account);
        else
                r = name ? db->src->group_by_name(name, &s->v.group) : db->src->group_by_gid(id, &s->v.group);
        s->used = true;
        s->found = r == 0;
        s->err = r == 0 ? 0 : r == -ENOENT ? -ENOENT : -EIO;
        s->fetched = now;
        if (name)
                snprintf(s->key, sizeof s->key, "%s", name);
        else if (account)
                s->v.account.uid = id; /* a miss remembers what it was for */
        else
                s->v.group.gid = id;
        return s->found ? s : NULL;
}

const struct gw_account *gw_userdb_uid(struct gw_userdb *db, uint32_t uid, gw_usec_t now) {
        struct slot *s = fetch(db, true, uid, NULL, now);
        return s ? &s->v.account : NULL;
}

int gw_userdb_same_account(struct gw_userdb *db, uint32_t uid, const char *name, gw_usec_t now,
                           const struct gw_account **ret_now) {
        struct slot *s = fetch(db, true, uid, NULL, now);
        if (s) {
                if (name && strcmp(s->v.account.name, name)) {
                        if (ret_now)
                                *ret_now = &s->v.account;
                        return -ESTALE;
                }
                return 0;
        }
        s = slot_for(db->accounts, true, uid, NULL); /* the miss fetch kept */
        if (!holds(s, true, uid, NULL) || s->err != -ENOENT)
                return -EIO;
        char num[16];
        snprintf(num, sizeof num, "%u", (unsigned) uid);
        return name && !strcmp(name, num) ? 0 : -ENOENT; /* a uid that never had a name still has none */
}

const struct gw_account *gw_userdb_user(struct gw_userdb *db, const char *name, gw_usec_t now) {
        struct slot *s = fetch(db, true, 0, name, now);
        return s ? &s->v.account : NULL;
}

const struct gw_group *gw_userdb_gid(struct gw_userdb *db, uint32_t gid, gw_usec_t now) {
        struct slot *s = fetch(db, false, gid, NULL, now);
        return s ? &s->v.group : NULL;
}

const struct gw_group *gw_userdb_group(struct gw_userdb *db, const char *name, gw_usec_t now) {
        struct slot *s = fetch(db, false, 0, name, now);
        return s ? &s->v.group : NULL;
}

bool gw_account_in_group(const struct gw_account *a, uint32_t gid) {
        if (a->gid == gid)
                return true;
        for (int i = 0; i < a->n_groups; i++)
                if (a->groups[i] == gid)
                        return true;
        return false;
}

/* Whether the account uid (acting with gid) is in the group named name. */
static bool in_group(struct gw_userdb *db, const char *name, uint32_t uid, uint32_t gid, gw_usec_t now) {
        const struct gw_group *g = gw_userdb_group(db, name, now);
        if (!g)
                return false;
        if (g->gid == gid)
                return true;
        const struct gw_account *a = gw_userdb_uid(db, uid, now);
        return a && gw_account_in_group(a, g->gid);
}

bool gw_userdb_list_has(struct gw_userdb *db, const char *list, const char *user, uint32_t uid, uint32_t gid,
                        gw_usec_t now) {
        for (const char *p = list; p && *p;) {
                size_t l = strcspn(p, ", \t");
                char item[64];
                if (l > 0 && l < sizeof item) {
                        memcpy(item, p, l);
                        item[l] = '\0';
                        if (item[0] == '@' ? in_group(db, item + 1, uid, gid, now) : !strcmp(item, user ? user : ""))
                                return true;
                }
                p += l;
                p += strspn(p, ", \t");
        }
        return false;
}

bool gw_userdb_is_admin(struct gw_userdb *db, const char *admins, uint32_t self, uint32_t uid, uint32_t gid,
                        const char *user, gw_usec_t now) {
        return uid == 0 || uid == self || gw_userdb_list_has(db, admins, user, uid, gid, now);
}
