/*
 * acl — users and the rules every command is checked against, as Redis
 * 7.0's ACL has them (docs/security.md): passwords, command rules by name,
 * subcommand, first argument and category, key patterns with read and
 * write permissions, channel patterns, and selectors (alternative rule
 * sets, any one of which may allow a command).
 *
 * Layer: cmd. The module owns every user; a connection points at its user
 * (struct conn's user), which stays valid until acl_deluser() drops it
 * (the caller closes that user's connections first).
 */
#ifndef SHMKV_ACL_H
#define SHMKV_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"

struct cmd;
struct acl_user;

/* Creates the default user ("on nopass ~* &* +@all"); once, at start-up. */
void acl_init(void);
void acl_destroy(void);

struct acl_user *acl_default(void);
/* The user of that name, or NULL. */
struct acl_user *acl_find(const char *name, size_t n);
const char *acl_name(const struct acl_user *u);
/* Whether the default user takes any password (AUTH with one argument is
 * then refused). */
bool acl_default_nopass(void);
/* A user allowed nothing, for connections whose user ACL DELUSER dropped
 * while they wait to be closed. */
struct acl_user *acl_nobody(void);
/* Whether a new connection must authenticate: the default user is off or
 * has passwords. */
bool acl_auth_required(void);
/* Applies requirepass to the default user when it changed since the last
 * call (NULL or "": nopass), as Redis does: resetpass, then >password.
 * Setting the same value again changes nothing, in Redis too, even after
 * ACL SETUSER changed the default user's passwords. */
void acl_requirepass(const char *pass);

/* The user that name and password authenticate (enabled, and nopass or a
 * matching password), or NULL. */
struct acl_user *acl_authenticate(const char *name, size_t nn, const char *pass, size_t pn);

/* ACL SETUSER name op...: applies every op to a copy of the user (a new
 * one if none has the name) and keeps it only if all succeed. 0, or -1
 * with Redis's error text ("ERR Error in ACL SETUSER modifier ...") in
 * err. */
int acl_setuser(const char *name, size_t nn, const struct db_str *ops, size_t nops, char *err,
                size_t cap);
/* ACL LOAD and aclfile: reads path, every non-blank line "user name rule
 * ...". All or nothing: 0 with every user replaced (the default user keeps
 * its identity and takes the file's rules, or a new default user's; each
 * other old user goes to drop first, which closes its connections), or -1
 * with Redis's error text (no "ERR ") in err. */
int acl_load_file(const char *path, void (*drop)(struct acl_user *u, void *arg), void *arg,
                  char *err, size_t cap);
/* ACL SAVE: every user as ACL LIST gives it, written to a temporary file
 * renamed over path. 0, or -1 with the reason in err. */
int acl_save_file(const char *path, char *err, size_t cap);
/* The configuration's "user name rule ..." lines (lines[i][0] the name,
 * argcs[i] words with it): applied in order, as ACL SETUSER. 0, or -1
 * with Redis's start-up error in err. */
int acl_apply_lines(char ***lines, const size_t *argcs, size_t n, char *err, size_t cap);
/* Drops the user (never the default one): true when there was one. */
bool acl_deluser(const char *name, size_t nn);

/* What a check found: Redis's order, which picks the error to report. */
enum { ACL_OK = 0, ACL_DENIED_CMD, ACL_DENIED_KEY, ACL_DENIED_AUTH, ACL_DENIED_CHANNEL };
/* Whether u may run cmd (sub: the subcommand's table index, or -1) with
 * argv[0..argc): ACL_OK, or why not with *errpos the argument at fault
 * (a key's or channel's position). u NULL: an internal client, allowed. */
int acl_check(const struct acl_user *u, const struct cmd *cmd, long sub, const struct db_str *argv,
              size_t argc, size_t *errpos);

/* Whether some rule set of u allows channel ch (pattern: a PSUBSCRIBE
 * pattern, which must be one of the patterns literally). */
bool acl_channel_allowed(const struct acl_user *u, const char *ch, size_t n, bool pattern);
/* acl-pubsub-default: whether a new user, and reset, allow every channel. */
void acl_set_pubsub_default(bool all);
/* Whether u may read every key with each of the commands names[0..n)
 * (lower case): some rule set of u allows the command and reads all keys
 * (allkeys, ~* or %R~*). What SHMKV.ATTACH asks of a user before handing
 * it the shared-memory segment, which holds every cached record. */
bool acl_reads_everything(const struct acl_user *u, const char *const *names, size_t n);

/* Whether some rule set of u allows the command line and reads every key
 * (allkeys, ~* or %R~*): SORT's BY and GET read keys no spec names, and
 * need it, as in Redis. u NULL: yes. */
bool acl_unrestricted_read(const struct acl_user *u, const struct cmd *cmd, long sub,
                           const struct db_str *argv, size_t argc);

/* Descriptions, in Redis's words. */
/* "user name rules": u as ACL LIST, ACL SAVE and CONFIG REWRITE write it,
 * malloc'd. */
char *acl_user_line(const struct acl_user *u);
/* The users' names in order, for ACL USERS and ACL LIST; *n set. */
const struct acl_user **acl_users(size_t *n);

/* ACL GETUSER's parts. */
size_t acl_flags(const struct acl_user *u, const char **out); /* up to 4 */
size_t acl_npasswords(const struct acl_user *u);
const char *acl_password(const struct acl_user *u, size_t i); /* 64 hex digits */
size_t acl_nselectors(const struct acl_user *u);              /* the root one included */
/* Selector i's commands, keys and channels as GETUSER gives them,
 * malloc'd. */
char *acl_sel_commands(const struct acl_user *u, size_t i);
char *acl_sel_keys(const struct acl_user *u, size_t i);
char *acl_sel_channels(const struct acl_user *u, size_t i);

/* The categories, in ACL CAT's order; the number of them. */
size_t acl_ncats(void);
const char *acl_cat_name(size_t i);
/* The category index of a name (no '@'), or -1. */
int acl_cat_find(const char *name, size_t n);
/* Whether command id (acl_cmd_*) is in category i; ids number the table's
 * commands, then its subcommands. */
size_t acl_ncmds(void);
const char *acl_cmd_name(size_t id);
bool acl_cmd_in(size_t id, size_t cat);

#endif
