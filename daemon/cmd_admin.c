/*
 * cmd_admin — the server's administration commands: CONFIG, TIME, SLOWLOG,
 * SHMKV.ATTACH, SHMKV.CLIENTS, LASTSAVE, SAVE and BGSAVE, ROLE, WAIT,
 * SHMKV.COMPACT and SHUTDOWN.
 */
#include "acl.h"
#include "cmd.h"

#include "scr.h"
#include "srv_rdb.h"
#include "srv_repl.h"
#include "srv_replica.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kv_mem.h"
#include <jemalloc/jemalloc.h>
#include <sys/stat.h>
#include <sys/time.h>

#include "shmc_w.h"
#include "srv_cache.h"
#include "srv_conf.h"

/* ---- CONFIG ---- */

/* The value CONFIG GET gives for the parameter name (exact), malloc'd, or
 * NULL. */
static char *config_value(const struct db_str *name)
{
    struct resp_buf b;
    resp_buf_init(&b);
    char *v = NULL;
    if (srv_conf_get(&srv.conf, name, 1, &b, 2) == 1) {
        /* "$n\r\nname\r\n$m\r\nvalue\r\n" */
        const char *p = resp_buf_data(&b), *end = p + resp_buf_used(&b);
        for (int field = 0; field < 2 && p < end; field++) {
            size_t len = (size_t)strtoull(p + 1, NULL, 10);
            p = strchr(p, '\n') + 1;
            if (field == 1 && p + len <= end)
                v = strndup(p, len);
            p += len + 2;
        }
    }
    resp_buf_free(&b);
    return v;
}

/* CONFIG SET name value ...: a change to a tls-* directive builds the TLS
 * contexts again (while TLS is in use, srv_tls_wanted), and one that fails
 * undoes the whole CONFIG SET, as in Redis. */
static void config_set(struct conn *c)
{
    char err[1024];
    const struct db_str *tls_arg = NULL;
    size_t pairs = (c->argc - 2) / 2;
    for (size_t i = 0; i < pairs; i++) {
        const struct db_str *name = &c->argv[2 + 2 * i];
        if (!tls_arg && name->n > 4 && !strncasecmp(name->p, "tls-", 4))
            tls_arg = name;
    }
    bool tls = tls_arg != NULL;
    /* Every old value, to put back if the TLS contexts cannot be built. */
    size_t nold = 0;
    struct db_str *old = tls ? kv_xcalloc(2 * pairs, sizeof *old) : NULL;
    for (size_t i = 0; tls && i < pairs; i++) {
        char *v = config_value(&c->argv[2 + 2 * i]);
        if (!v)
            continue;
        old[nold++] = c->argv[2 + 2 * i];
        old[nold++] = (struct db_str){v, strlen(v)};
    }
    if (srv_conf_runtime_set(&srv.conf, c->argv + 2, c->argc - 2, err, sizeof err)) {
        resp_error(OUT(c), err);
    } else if (tls && srv_tls_wanted() && srv_tls_reconfigure(err, sizeof err)) {
        srv_log(LOG_WARNING, "Failed to update TLS configuration: %s", err);
        char undo[1024];
        if (srv_conf_runtime_set(&srv.conf, old, nold, undo, sizeof undo))
            srv_log(LOG_WARNING, "CONFIG SET could not be undone: %s", undo);
        resp_errorf(OUT(c),
                    "ERR CONFIG SET failed (possibly related to argument '%.*s') - Unable to "
                    "update TLS configuration. Check server logs.",
                    (int)tls_arg->n, tls_arg->p);
    } else {
        resp_simple(OUT(c), "OK");
    }
    for (size_t i = 1; i < nold; i += 2)
        free((char *)old[i].p);
    free(old);
}

/* CONFIG GET parameter [parameter ...] | SET parameter value [...] | RESETSTAT | HELP */
void cmd_config(struct conn *c)
{
    if (cmd_arg_is(c, 1, "get") && c->argc >= 3) {
        struct resp_buf b;
        resp_buf_init(&b);
        size_t pairs = srv_conf_get(&srv.conf, c->argv + 2, c->argc - 2, &b, c->proto);
        resp_map(OUT(c), pairs, c->proto);
        resp_buf_append(OUT(c), resp_buf_data(&b), resp_buf_used(&b));
        resp_buf_free(&b);
    } else if (cmd_arg_is(c, 1, "set") && c->argc >= 4 && c->argc % 2 == 0) {
        config_set(c);
    } else if (cmd_arg_is(c, 1, "rewrite") && c->argc == 2) {
        char err[600];
        /* The users as user lines, unless they live in an aclfile. */
        const char *aclfile = srv_conf_kept(&srv.conf, "aclfile");
        size_t n = 0;
        const struct acl_user **us = acl_users(&n);
        if (aclfile && *aclfile)
            n = 0;
        char **lines = kv_xcalloc(n ? n : 1, sizeof *lines);
        for (size_t i = 0; i < n; i++)
            lines[i] = acl_user_line(us[i]);
        if (srv_conf_rewrite(&srv.conf, lines, n, err, sizeof err))
            resp_error(OUT(c), err);
        else
            resp_simple(OUT(c), "OK");
        for (size_t i = 0; i < n; i++)
            free(lines[i]);
        free(lines);
    } else if (cmd_arg_is(c, 1, "resetstat") && c->argc == 2) {
        /* As Redis: the changes since the last save, the last save's
         * duration and the start-up memory are facts, not counters. */
        struct srv_stats kept = srv.stats;
        memset(&srv.stats, 0, sizeof srv.stats);
        srv.stats.dirty = kept.dirty;
        srv.stats.dirty_at_save = kept.dirty_at_save;
        srv.stats.last_save_ms = kept.last_save_ms;
        srv.stats.used_memory_startup = kept.used_memory_startup;
        srv_cache_resetstat();
        cmd_stats_reset();
        resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "help") && c->argc == 2) {
        static const char *const lines[] = {
            "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Write the current configuration back to the config file.",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else if (cmd_arg_is(c, 1, "get") || cmd_arg_is(c, 1, "set") ||
               cmd_arg_is(c, 1, "resetstat") || cmd_arg_is(c, 1, "rewrite") ||
               cmd_arg_is(c, 1, "help")) {
        resp_errorf(OUT(c), "ERR wrong number of arguments for 'config|%.*s' command",
                    (int)c->argv[1].n, c->argv[1].p);
    } else {
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try CONFIG HELP.", (int)c->argv[1].n,
                    c->argv[1].p);
    }
}

/* TIME */
void cmd_time(struct conn *c)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    resp_array(OUT(c), 2);
    resp_bulk_int(OUT(c), tv.tv_sec);
    resp_bulk_int(OUT(c), tv.tv_usec);
}

/* ---- SLOWLOG ---- */

void cmd_slowlog(struct conn *c)
{
    if (cmd_arg_is(c, 1, "len") && c->argc == 2) {
        resp_int(OUT(c), (int64_t)srv.slowlog_n);
    } else if (cmd_arg_is(c, 1, "reset") && c->argc == 2) {
        srv_slowlog_reset();
        resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "get") && c->argc <= 3) {
        int64_t want = 10;
        if (c->argc == 3) {
            if (kv_str2ll(c->argv[2].p, c->argv[2].n, &want) || want < -1) {
                resp_error(OUT(c), "ERR count should be greater than or equal to -1");
                return;
            }
        }
        size_t n = want < 0 || (uint64_t)want > srv.slowlog_n ? srv.slowlog_n : (size_t)want;
        resp_array(OUT(c), n);
        for (size_t i = 0; i < n; i++) {
            const struct srv_slowlog *e = srv_slowlog_at(i);
            resp_array(OUT(c), 6);
            resp_int(OUT(c), (int64_t)e->id);
            resp_int(OUT(c), (int64_t)e->time_s);
            resp_int(OUT(c), (int64_t)e->micros);
            resp_array(OUT(c), e->argc);
            for (size_t j = 0; j < e->argc; j++)
                resp_bulk(OUT(c), e->argv[j].p, e->argv[j].n);
            resp_bulk_cstr(OUT(c), e->addr);
            resp_bulk_cstr(OUT(c), e->name);
        }
    } else if (cmd_arg_is(c, 1, "help") && c->argc == 2) {
        static const char *const lines[] = {
            "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else {
        resp_errorf(OUT(c),
                    "ERR unknown subcommand or wrong number of arguments for '%.*s'. "
                    "Try SLOWLOG HELP.",
                    (int)c->argv[1].n, c->argv[1].p);
    }
}

/* LASTSAVE */
/* SHMKV.ATTACH: hands a local client the shm cache — the sealed segment
 * and its hint area, two memfds passed with SCM_RIGHTS along with this
 * reply — after AUTH like any command. Unix socket only: a descriptor
 * cannot travel over TCP. Replies [abi, segment bytes, generation,
 * counter slot (-1: none free)]. */
void cmd_shmkv_attach(struct conn *c)
{
    if (!srv.cache) {
        resp_error(OUT(c), "ERR the shm cache is disabled (shm-cache-size is 0)");
        return;
    }
    if (!(c->flags & CONN_UNIX)) {
        resp_error(OUT(c), "ERR SHMKV.ATTACH needs a Unix socket connection");
        return;
    }
    /* The segment holds every cached record of every database, and the
     * process that maps it reads them without asking again: only a user
     * allowed to read every key with every command libshmkv answers from
     * it (client/shmkv.c, OPS) gets it. Others read through the socket. */
    static const char *const served[] = {"get",     "mget",      "exists",     "type",   "ttl",
                                         "pttl",    "strlen",    "hget",       "hmget",  "hexists",
                                         "hlen",    "sismember", "smismember", "scard",  "zscore",
                                         "zmscore", "zcard",     "llen",       "lindex", "hgetall",
                                         "hkeys",   "hvals",     "smembers",   "lrange", "zrange"};
    if (c->user && !acl_reads_everything(c->user, served, sizeof served / sizeof served[0])) {
        resp_error(OUT(c), "NOPERM this user may not map the shared-memory cache: it needs "
                           "to read every key (allkeys or %R~*) with the commands libshmkv "
                           "answers from it");
        return;
    }
    const struct shmc_hdr *h = shmc_w_hdr(srv.cache);
    char gen[24];
    int n = snprintf(gen, sizeof gen, "%016llx", (unsigned long long)h->generation);
    int slot = srv_cache_claim(c);
    resp_array(OUT(c), 4);
    resp_int(OUT(c), h->abi);
    resp_int(OUT(c), (int64_t)h->seg_size);
    resp_bulk(OUT(c), gen, (size_t)n);
    resp_int(OUT(c), slot);
    c->flags |= CONN_PASS_FDS;
}

/* SHMKV.CLIENTS: the client handles attached to the shm cache, one line
 * each (as CLIENT LIST): counter slot, connection id, process, age, and
 * the commands and keys each answered from shared memory. */
void cmd_shmkv_clients(struct conn *c)
{
    struct resp_buf b;
    resp_buf_init(&b);
    srv_cache_clients(&b);
    resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
    resp_buf_free(&b);
}

void cmd_lastsave(struct conn *c)
{
    resp_int(OUT(c), (int64_t)srv.lastsave_s);
}

/* Removes the checkpoints under folder but keep (a name in it). Each is
 * a folder of files (RocksDB's, hard links, and db-map). */
static void prune_checkpoints(const char *folder, const char *keep)
{
    DIR *d = opendir(folder);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, keep))
            continue;
        char sub[4600];
        snprintf(sub, sizeof sub, "%s/%s", folder, e->d_name);
        DIR *s = opendir(sub);
        if (!s)
            continue;
        struct dirent *f;
        while ((f = readdir(s))) {
            char p[4900];
            snprintf(p, sizeof p, "%s/%s", sub, f->d_name);
            if (strcmp(f->d_name, ".") && strcmp(f->d_name, ".."))
                unlink(p);
        }
        closedir(s);
        if (rmdir(sub) != 0)
            srv_log(LOG_WARNING, "Cannot remove the old checkpoint %s: %s", sub, strerror(errno));
    }
    closedir(d);
}

/* A RocksDB checkpoint (hard links) under dir/checkpoints, the one kept
 * there: the previous ones go once it is made. True when made, else it
 * replied the error. Write-back is drained first: the checkpoint holds
 * every write acknowledged before it. */
static bool checkpoint(struct conn *c)
{
    int drc = stor_drain(srv.stor);
    if (drc) {
        cmd_reply_err(c, drc);
        return false;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoints", srv.conf.dir);
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        resp_errorf(OUT(c), "ERR cannot create %s: %s", path, strerror(errno));
        return false;
    }
    uint64_t now = srv_mstime();
    snprintf(path, sizeof path, "%s/checkpoints/%llu", srv.conf.dir, (unsigned long long)now);
    uint64_t dirty = srv.stats.dirty;
    int rc = stor_checkpoint(srv.stor, path);
    if (rc) {
        cmd_reply_err(c, rc);
        return false;
    }
    rc = srv_dbmap_save_to(path); /* the checkpoint's database numbers, as SWAPDB left them */
    if (rc) {
        resp_errorf(OUT(c), "ERR cannot save the database map in %s: %s", path, strerror(-rc));
        return false;
    }
    srv.lastsave_s = now / 1000;
    srv.stats.saves++;
    srv.stats.dirty_at_save = dirty;
    srv.stats.last_save_ms = (int64_t)(srv_mstime() - now);
    char name[32];
    snprintf(name, sizeof name, "%llu", (unsigned long long)now);
    snprintf(path, sizeof path, "%s/checkpoints", srv.conf.dir);
    prune_checkpoints(path, name); /* checkpoints never pile up until the disk fills */
    srv_log(LOG_NOTICE, "Checkpoint written to %s/%s", path, name);
    return true;
}

/* SHMKV.CHECKPOINT: a RocksDB checkpoint in dir/checkpoints, which shmkvd
 * can be started on as its data folder (operations.md, "Backups"). */
void cmd_shmkv_checkpoint(struct conn *c)
{
    if (checkpoint(c))
        resp_simple(OUT(c), "OK");
}

/* The BGSAVE under way, and how the last one ended. */
static struct {
    struct srv_rdb_job *job;
    char tmp[4200];
    uint64_t dirty, started_ms, moment_s;
    bool failed;
} bg;

/* BGSAVE [SCHEDULE]: the RDB file dbfilename in dir, made by a thread
 * from a checkpoint of this moment (srv_rdb.h) and renamed over the old
 * one when whole (cmd_bgsave_cron). */
void cmd_bgsave(struct conn *c)
{
    if (c->argc > 2 || (c->argc == 2 && !cmd_arg_is(c, 1, "schedule"))) {
        cmd_reply_syntax(c);
        return;
    }
    if (bg.job) {
        resp_error(OUT(c), "ERR Background save already in progress");
        return;
    }
    if (strchr(srv.conf.dbfilename, '/')) {
        resp_error(OUT(c), "ERR dbfilename can't be a path, just a filename");
        return;
    }
    char err[9000];
    snprintf(bg.tmp, sizeof bg.tmp, "%s/temp-bg-%d.rdb", srv.conf.dir, (int)getpid());
    bg.started_ms = srv_mstime();
    bg.job = srv_rdb_job_start(bg.tmp, err, sizeof err);
    if (!bg.job) {
        srv_log(LOG_WARNING, "Can't save in background: %s", err);
        bg.failed = true;
        resp_error(OUT(c), "ERR");
        return;
    }
    srv_log(LOG_NOTICE, "Background saving started");
    resp_simple(OUT(c), "Background saving started");
}

void cmd_bgsave_cron(void)
{
    char err[9000];
    uint64_t bytes;
    int st = bg.job ? srv_rdb_job_poll(bg.job, err, sizeof err, &bytes) : SRV_RDB_JOB_BUSY;
    if (st == SRV_RDB_JOB_READY) { /* the file's moment */
        bg.dirty = srv.stats.dirty;
        bg.moment_s = srv_mstime() / 1000;
        srv_rdb_job_checkpoint(bg.job, NULL, 0, err, sizeof err); /* a failure: the next poll */
        return;
    }
    if (st == SRV_RDB_JOB_BUSY)
        return;
    srv_rdb_job_free(bg.job);
    bg.job = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", srv.conf.dir, srv.conf.dbfilename);
    if (st > 0 && rename(bg.tmp, path) != 0) {
        snprintf(err, sizeof err, "renaming %s to %s: %s", bg.tmp, path, strerror(errno));
        unlink(bg.tmp);
        st = -1;
    }
    bg.failed = st < 0;
    if (st < 0) {
        srv_log(LOG_WARNING, "Background saving error: %s", err);
        return;
    }
    int dfd = open(srv.conf.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { /* the new name, durable as the data */
        fsync(dfd);
        close(dfd);
    }
    srv.lastsave_s = bg.moment_s;
    srv.stats.saves++;
    srv.stats.dirty_at_save = bg.dirty;
    srv.stats.last_save_ms = (int64_t)(srv_mstime() - bg.started_ms);
    srv_log(LOG_NOTICE, "Background saving terminated with success: %s, %llu bytes", path,
            (unsigned long long)bytes);
}

void cmd_bgsave_state(bool *running, bool *failed, int64_t *seconds)
{
    *running = bg.job != NULL;
    *failed = bg.failed;
    *seconds = bg.job ? (int64_t)((srv_mstime() - bg.started_ms) / 1000) : -1;
}

void cmd_bgsave_stop(void)
{
    if (bg.job) {
        srv_rdb_job_free(bg.job); /* its file removed */
        unlink(bg.tmp);
        bg.job = NULL;
    }
}

/* SAVE: the RDB file dbfilename in dir, as Redis writes it (srv_rdb.c),
 * the loop holding meanwhile, as SAVE holds Redis. As Redis, a failure is
 * a bare -ERR, its reason in the log. */
void cmd_save(struct conn *c)
{
    if (bg.job) {
        resp_error(OUT(c), "ERR Background save already in progress");
        return;
    }
    uint64_t now = srv_mstime(), dirty = srv.stats.dirty, bytes;
    char err[8500];
    if (srv_rdb_save(err, sizeof err, &bytes)) {
        srv_log(LOG_WARNING, "SAVE failed: %s", err);
        resp_error(OUT(c), "ERR");
        return;
    }
    srv.lastsave_s = now / 1000;
    srv.stats.saves++;
    srv.stats.dirty_at_save = dirty;
    srv.stats.last_save_ms = (int64_t)(srv_mstime() - now);
    srv_log(LOG_NOTICE, "DB saved on disk: %s/%s, %llu bytes", srv.conf.dir, srv.conf.dbfilename,
            (unsigned long long)bytes);
    resp_simple(OUT(c), "OK");
}

/* REPLCONF option value [option value ...]: what a replica, or
 * `redis-cli --rdb`, says of itself before SYNC or PSYNC (listening-port,
 * ip-address, capa, rdb-only), and a replica's ACK of what it applied,
 * which gets no reply. */
void cmd_replconf(struct conn *c)
{
    if (c->argc % 2 == 0) {
        cmd_reply_syntax(c);
        return;
    }
    if ((c->flags & CONN_MASTER) && c->argc == 3 && cmd_arg_is(c, 1, "getack")) {
        srv_replica_getack(c); /* our primary asks how far we are: ACK after this command */
        return;
    }
    for (size_t i = 1; i < c->argc; i += 2) {
        int64_t v;
        if (cmd_arg_is(c, i, "listening-port")) {
            if (!cmd_arg_ll(c, i + 1, &v))
                return;
            srv_repl_set_port(c, (int)v);
        } else if (cmd_arg_is(c, i, "ip-address")) {
            srv_repl_set_ip(c, c->argv[i + 1].p, c->argv[i + 1].n);
        } else if (cmd_arg_is(c, i, "capa")) {
            srv_repl_set_capa(c, c->argv[i + 1].p, c->argv[i + 1].n);
        } else if (cmd_arg_is(c, i, "rdb-only")) {
            if (kv_str2ll(c->argv[i + 1].p, c->argv[i + 1].n, &v) || v < 0 || v > 1) {
                resp_error(OUT(c), "ERR value is out of range, must be positive");
                return;
            }
            if (v)
                c->flags |= CONN_RDB_ONLY;
            else
                c->flags &= ~(uint32_t)CONN_RDB_ONLY;
        } else if (cmd_arg_is(c, i, "ack")) {
            if (!kv_str2ll(c->argv[i + 1].p, c->argv[i + 1].n, &v) && v >= 0)
                srv_repl_ack(c, (uint64_t)v);
            return; /* never answered */
        } else {
            resp_errorf(OUT(c), "ERR Unrecognized REPLCONF option: %.*s", (int)c->argv[i].n,
                        c->argv[i].p);
            return;
        }
    }
    resp_simple(OUT(c), "OK");
}

/* SYNC: a replica of the old protocol (a full sync, then the stream), or,
 * after REPLCONF rdb-only 1, a backup (redis-cli --rdb): the file, then
 * the connection closes (srv_repl.c). */
void cmd_sync(struct conn *c)
{
    srv_repl_psync(c, false);
}

/* PSYNC replicationid offset: a replica continuing from offset, or
 * starting over (srv_repl.c). */
void cmd_psync(struct conn *c)
{
    srv_repl_psync(c, true);
}

/* ROLE: as a primary, its offset and each replica's. */
void cmd_role(struct conn *c)
{
    if (srv_replica_following()) {
        srv_replica_role(c);
        return;
    }
    srv_repl_role(c);
}

/* FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms] (srv_repl.c). */
void cmd_failover(struct conn *c)
{
    srv_repl_failover(c);
}

/* WAIT numreplicas timeout (srv_repl.c). */
void cmd_wait(struct conn *c)
{
    srv_repl_wait(c);
}

/* SHMKV.COMPACT: writes everything pending to RocksDB and compacts every
 * column family, running the garbage-collecting filters over all of it.
 * It blocks the server meanwhile (as SAVE does Redis): an operator's and a
 * benchmark's tool, for "bytes on disk after compaction". */
void cmd_shmkv_compact(struct conn *c)
{
    int rc = stor_drain(srv.stor);
    for (int cf = 0; rc == 0 && cf < STOR_CF_COUNT; cf++)
        rc = stor_compact(srv.stor, cf);
    if (rc) {
        cmd_reply_err(c, rc);
        return;
    }
    srv_log(LOG_NOTICE, "SHMKV.COMPACT: every column family compacted");
    resp_simple(OUT(c), "OK");
}

/* SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: every write is already
 * durable in RocksDB, so SAVE and NOSAVE end the same way. */
void cmd_shutdown(struct conn *c)
{
    for (size_t i = 1; i < c->argc; i++) {
        if (!cmd_arg_is(c, i, "nosave") && !cmd_arg_is(c, i, "save") && !cmd_arg_is(c, i, "now") &&
            !cmd_arg_is(c, i, "force")) {
            if (cmd_arg_is(c, i, "abort"))
                resp_error(OUT(c), "ERR No shutdown in progress.");
            else
                cmd_reply_syntax(c);
            return;
        }
    }
    if (scr_busy()) {
        /* A script past busy-reply-threshold: only NOSAVE stops the daemon,
         * at once and without the script's writes (srv_exit_busy). */
        bool nosave = false;
        for (size_t i = 1; i < c->argc; i++)
            nosave |= cmd_arg_is(c, i, "nosave");
        if (!nosave) {
            resp_error(OUT(c), scr_busy_error());
            return;
        }
        srv_log(LOG_WARNING, "User requested shutdown...");
        srv_exit_busy();
    }
    srv_log(LOG_WARNING, "User requested shutdown...");
    srv_request_shutdown(0);
    c->flags |= CONN_CLOSE_ASAP; /* like Redis: no reply, the connection just closes */
}
