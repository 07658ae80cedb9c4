/* The calling thread's file-system identity, for a moment, that of a job's user: so that the
 * kernel itself judges what that user may reach (mode bits, ACLs, security modules), not a
 * copy of its rules.  Linux keeps the fs uid and gid and the supplementary groups per thread
 * (glibc's setgroups() would change every thread's; the system call alone changes this one),
 * and a root thread whose fs uid is not 0 loses its file capabilities until it is 0 again.
 *
 * For short checks only (stat, faccessat with AT_EACCESS), and the one bounded write done as a
 * user (resume_epoch.c: a results.csv of at most 16 MiB rewritten before a resume), with
 * nothing between begin and end that another part of the thread relies on.  When the daemon is not root, nothing is
 * switched: its jobs run as itself. */
#pragma once
#include <stdint.h>
#include <sys/types.h>

/* 0, or -errno with the identity unchanged (a root daemon without CAP_SETUID).  groups: the
 * user's, as the job gets them (gid alone when n_groups is 0). */
int gw_as_user_begin(uid_t uid, gid_t gid, const uint32_t *groups, int n_groups);
/* Back to the daemon's own identity; aborts if that cannot be (the thread would go on with
 * the user's rights and without its own). */
void gw_as_user_end(void);
