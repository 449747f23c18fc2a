/*
 * srv_conf — shmkvd's configuration table: defaults, the config file,
 * --name value overrides, CONFIG GET and CONFIG SET all read one table.
 */
#ifndef SHMKV_SRV_CONF_H
#define SHMKV_SRV_CONF_H

#include "srv.h"

/* maxmemory-policy's names, by SRV_POLICY_* (srv.h), NULL-terminated. */
extern const char *const srv_conf_policies[];

/* The config file shmkvd was started with, or NULL. */
extern const char *srv_conf_file;

/* Appends name/value bulk pairs for every parameter matching one of the
 * glob patterns; returns how many pairs. */
size_t srv_conf_get(const struct srv_conf *c, const struct db_str *pats, size_t npats,
                    struct resp_buf *out, int proto);
/* CONFIG SET name value [name value ...] at run time (args: the n
 * names and values), all or nothing: 0, or -1 with Redis's error and no
 * parameter changed. */
int srv_conf_runtime_set(struct srv_conf *c, const struct db_str *args, size_t n, char *err,
                         size_t errlen);

/* The value, as CONFIG GET gives it, of a Redis directive shmkvd keeps
 * without applying (srv_conf_redis.h); NULL for any other name. */
const char *srv_conf_kept(const struct srv_conf *c, const char *name);
/* The same as a number: an integer or byte count as CONFIG GET shows it,
 * 1 for yes and 0 for no; 0 for a name not kept. */
int64_t srv_conf_kept_num(const struct srv_conf *c, const char *name);

/* REPLICAOF's effect on the kept replicaof value (CONFIG GET, CONFIG
 * REWRITE): "host port", or none for host NULL (REPLICAOF NO ONE). */
void srv_conf_set_replicaof(struct srv_conf *c, const char *host, int port);

/* Names, in one log line, the Redis directives the file or the command
 * line set that shmkvd keeps without applying them (srv_conf_redis.h). */
void srv_conf_report_inert(const struct srv_conf *c);

/* CONFIG REWRITE: rewrites srv_conf_file to hold c's settings. Each
 * parameter's first line in the file gets its current value and its later
 * lines go; comments and unknown lines stay; parameters the file lacks are
 * appended when they differ from the defaults. Written to a temporary
 * file, synced, then renamed over the original. user lines are replaced by
 * users[0..nusers) ("user name rule ..." each; none, as with an aclfile,
 * drops them all), where the first one was or else at the end. 0, or -1
 * with Redis's error text in err. */
int srv_conf_rewrite(const struct srv_conf *c, char *const *users, size_t nusers, char *err,
                     size_t errlen);

#endif
