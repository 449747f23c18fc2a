/*
 * cmd_key — commands on the key space: DEL, EXISTS, TYPE, the EXPIRE and
 * TTL families, RENAME, COPY, DUMP, RESTORE, KEYS, SCAN, RANDOMKEY, DBSIZE,
 * SELECT, FLUSHDB, FLUSHALL, OBJECT.
 */
#include "cmd.h"
#include "kv_mem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "rdb.h"
#include "srv_cache.h"

/* DEL key [key ...] (also UNLINK: a delete is O(1) either way) */
void cmd_del(struct conn *c)
{
    size_t n = c->argc - 1;
    unsigned char *deleted = kv_xmalloc(n);
    int rc = db_del_many(srv.db, c->db, c->argv + 1, n, CMD_KEYS_AHEAD, deleted);
    if (rc < 0) {
        cmd_reply_err(c, rc);
    } else {
        int64_t count = 0;
        for (size_t i = 0; i < n; i++) {
            if (deleted[i])
                cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "del", i + 1);
            count += deleted[i];
        }
        resp_int(OUT(c), count);
    }
    free(deleted);
}

/* EXISTS key [key ...] */
void cmd_exists(struct conn *c)
{
    uint64_t n;
    int rc = db_exists_many(srv.db, c->db, c->argv + 1, c->argc - 1, CMD_KEYS_AHEAD, &n);
    if (rc < 0)
        cmd_reply_err(c, rc);
    else
        resp_int(OUT(c), (int64_t)n);
}

/* TOUCH counts as EXISTS does; the difference is dispatch's: EXISTS is
 * CMD_NOTOUCH, TOUCH is not, so its keys' last use becomes now. */
void cmd_touch(struct conn *c)
{
    cmd_exists(c);
}

static const char *type_name(int t)
{
    static const char *const names[] = {"none", "string", "hash", "set", "zset", "list"};
    return t >= 0 && t <= ENC_TYPE_LIST ? names[t] : "none";
}

static int type_parse(const struct db_str *s)
{
    for (int t = ENC_TYPE_STRING; t <= ENC_TYPE_LIST; t++)
        if (strlen(type_name(t)) == s->n && strncasecmp(type_name(t), s->p, s->n) == 0)
            return t;
    return -1;
}

/* TYPE key */
void cmd_type(struct conn *c)
{
    int t;
    int rc = db_type(srv.db, c->db, CMD_ARG(1), &t);
    if (rc)
        cmd_reply_err(c, rc);
    else
        resp_simple(OUT(c), type_name(t));
}

/* EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT key time [NX|XX|GT|LT] */
static void expire_generic(struct conn *c, int64_t unit, bool absolute, const char *name)
{
    int flags = 0;
    for (size_t i = 3; i < c->argc; i++) {
        if (cmd_arg_is(c, i, "nx"))
            flags |= DB_EXP_NX;
        else if (cmd_arg_is(c, i, "xx"))
            flags |= DB_EXP_XX;
        else if (cmd_arg_is(c, i, "gt"))
            flags |= DB_EXP_GT;
        else if (cmd_arg_is(c, i, "lt"))
            flags |= DB_EXP_LT;
        else {
            resp_errorf(OUT(c), "ERR Unsupported option %.*s", (int)c->argv[i].n, c->argv[i].p);
            return;
        }
    }
    if ((flags & DB_EXP_NX) && (flags & (DB_EXP_XX | DB_EXP_GT | DB_EXP_LT))) {
        resp_error(OUT(c), "ERR NX and XX, GT or LT options at the same time are not compatible");
        return;
    }
    if ((flags & DB_EXP_GT) && (flags & DB_EXP_LT)) {
        resp_error(OUT(c), "ERR GT and LT options at the same time are not compatible");
        return;
    }
    int64_t v;
    if (!cmd_arg_ll(c, 2, &v))
        return;
    /* In ms, relative times from now; overflow is an error, and anything at
     * or before now deletes the key. */
    int64_t base = absolute ? 0 : (int64_t)srv_mstime();
    if (v > INT64_MAX / unit || v < INT64_MIN / unit || (v *= unit, v > INT64_MAX - base)) {
        resp_errorf(OUT(c), "ERR invalid expire time in '%s' command", name);
        return;
    }
    v += base;
    int rc = db_expire(srv.db, c->db, CMD_ARG(1), v < 1 ? 1 : (uint64_t)v, flags);
    if (rc > 0)
        cmd_notify_arg(c, SRV_NOTIFY_GENERIC, rc == 2 ? "del" : "expire", 1);
    cmd_reply_int(c, rc, rc > 0);
}

void cmd_expire(struct conn *c)
{
    expire_generic(c, 1000, false, "expire");
}

void cmd_pexpire(struct conn *c)
{
    expire_generic(c, 1, false, "pexpire");
}

void cmd_expireat(struct conn *c)
{
    expire_generic(c, 1000, true, "expireat");
}

void cmd_pexpireat(struct conn *c)
{
    expire_generic(c, 1, true, "pexpireat");
}

/* TTL/PTTL/EXPIRETIME/PEXPIRETIME: -2 absent, -1 no expiry. */
static void ttl_generic(struct conn *c, bool ms, bool absolute)
{
    uint64_t e;
    int rc = db_expiretime(srv.db, c->db, CMD_ARG(1), &e);
    if (rc == KV_ENOTFOUND) {
        resp_int(OUT(c), -2);
    } else if (rc) {
        cmd_reply_err(c, rc);
    } else if (e == 0) {
        resp_int(OUT(c), -1);
    } else if (absolute) {
        resp_int(OUT(c), ms ? (int64_t)e : (int64_t)(e / 1000));
    } else {
        int64_t left = (int64_t)e - (int64_t)srv_mstime();
        if (left < 0)
            left = 0;
        resp_int(OUT(c), ms ? left : (left + 500) / 1000);
    }
}

void cmd_ttl(struct conn *c)
{
    ttl_generic(c, false, false);
}

void cmd_pttl(struct conn *c)
{
    ttl_generic(c, true, false);
}

void cmd_expiretime(struct conn *c)
{
    ttl_generic(c, false, true);
}

void cmd_pexpiretime(struct conn *c)
{
    ttl_generic(c, true, true);
}

/* PERSIST key */
void cmd_persist(struct conn *c)
{
    int rc = db_persist(srv.db, c->db, CMD_ARG(1));
    if (rc == 1)
        cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "persist", 1);
    cmd_reply_int(c, rc, rc);
}

static void rename_generic(struct conn *c, int nx)
{
    int rc = db_rename(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), nx);
    bool same =
        c->argv[1].n == c->argv[2].n && memcmp(c->argv[1].p, c->argv[2].p, c->argv[1].n) == 0;
    if (rc == 1 && !same) {
        cmd_notify_new(c->db, CMD_ARG(2), true); /* Redis adds the destination anew */
        cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "rename_from", 1);
        cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "rename_to", 2);
    }
    if (rc == KV_ENOTFOUND)
        resp_error(OUT(c), "ERR no such key");
    else if (rc < 0)
        cmd_reply_err(c, rc);
    else if (nx)
        resp_int(OUT(c), rc);
    else
        resp_simple(OUT(c), "OK");
}

/* RENAME key newkey */
void cmd_rename(struct conn *c)
{
    rename_generic(c, 0);
}

/* RENAMENX key newkey */
void cmd_renamenx(struct conn *c)
{
    rename_generic(c, 1);
}

/* Parses a database number argument into the stored database it names
 * (srv_dbmap.h); replies on failure. */
static bool db_index_arg(struct conn *c, size_t i, unsigned *out)
{
    int64_t v;
    if (!cmd_arg_ll(c, i, &v))
        return false;
    if (v < 0 || v >= srv.conf.databases) {
        resp_error(OUT(c), "ERR DB index is out of range");
        return false;
    }
    *out = srv_dbmap[v];
    return true;
}

/* COPY source destination [DB destination-db] [REPLACE] */
void cmd_copy(struct conn *c)
{
    unsigned ddb = c->db;
    int replace = 0;
    for (size_t i = 3; i < c->argc; i++) {
        if (cmd_arg_is(c, i, "replace")) {
            replace = 1;
        } else if (cmd_arg_is(c, i, "db") && i + 1 < c->argc) {
            if (!db_index_arg(c, ++i, &ddb))
                return;
        } else {
            cmd_reply_syntax(c);
            return;
        }
    }
    if (ddb == c->db && c->argv[1].n == c->argv[2].n &&
        memcmp(c->argv[1].p, c->argv[2].p, c->argv[1].n) == 0) {
        resp_error(OUT(c), "ERR source and destination objects are the same");
        return;
    }
    int rc = db_copy(srv.db, c->db, CMD_ARG(1), ddb, CMD_ARG(2), replace);
    if (rc == KV_ENOTFOUND) /* no source: 0, as a destination that exists */
        rc = 0;
    if (rc == 1) {
        cmd_notify_new(ddb, CMD_ARG(2), true);
        cmd_notify(SRV_NOTIFY_GENERIC, "copy_to", ddb, CMD_ARG(2));
    }
    cmd_reply_int(c, rc, rc);
}

/* MOVE key db */
void cmd_move(struct conn *c)
{
    unsigned ddb;
    if (!db_index_arg(c, 2, &ddb))
        return;
    if (ddb == c->db) {
        resp_error(OUT(c), "ERR source and destination objects are the same");
        return;
    }
    int rc = db_move(srv.db, c->db, ddb, CMD_ARG(1));
    if (rc == KV_ENOTFOUND) /* no source: 0, as a destination that exists */
        rc = 0;
    if (rc == 1) {
        cmd_notify_new(ddb, CMD_ARG(1), true);
        cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "move_from", 1);
        cmd_notify(SRV_NOTIFY_GENERIC, "move_to", ddb, CMD_ARG(1));
    }
    cmd_reply_int(c, rc, rc);
}

/* DUMP key: the value in Redis's RDB serialization (daemon/rdb.h). */
void cmd_dump(struct conn *c)
{
    struct db_value v = {0};
    db_vec_init(&v.items);
    int rc = db_dump(srv.db, c->db, CMD_ARG(1), &v);
    if (rc == KV_ENOTFOUND) {
        resp_null(OUT(c), c->proto);
    } else if (rc < 0) {
        cmd_reply_err(c, rc);
    } else {
        size_t n;
        char *p = rdb_dump(&v, &n);
        resp_bulk(OUT(c), p, n);
        free(p);
    }
    db_vec_destroy(&v.items);
}

/* RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds]
 * [FREQ frequency]. Checks come in Redis's order: options, an existing
 * key, the TTL, the payload's footer, then its body. FREQ is checked and
 * has no effect, as in Redis under a policy other than LFU (shmkvd has no
 * LFU). The key's last use (CMD_NOTOUCH: set here) is now, or IDLETIME
 * seconds ago, which the idle clock keeps exactly back to its current
 * generation's start and as that start before it (srv_idle.h). */
void cmd_restore(struct conn *c)
{
    int replace = 0, absttl = 0;
    int64_t idle = -1, freq = -1, ttl;
    uint64_t used_ms = srv.loop_ms;
    for (size_t i = 4; i < c->argc; i++) {
        bool more = i + 1 < c->argc;
        if (cmd_arg_is(c, i, "replace")) {
            replace = 1;
        } else if (cmd_arg_is(c, i, "absttl")) {
            absttl = 1;
        } else if (cmd_arg_is(c, i, "idletime") && more && freq < 0) {
            if (!cmd_arg_ll(c, ++i, &idle))
                return;
            if (idle < 0) {
                resp_error(OUT(c), "ERR Invalid IDLETIME value, must be >= 0");
                return;
            }
        } else if (cmd_arg_is(c, i, "freq") && more && idle < 0) {
            if (!cmd_arg_ll(c, ++i, &freq))
                return;
            if (freq < 0 || freq > 255) {
                resp_error(OUT(c), "ERR Invalid FREQ value, must be >= 0 and <= 255");
                return;
            }
        } else {
            cmd_reply_syntax(c);
            return;
        }
    }
    struct db_value v = {0};
    db_vec_init(&v.items);
    bool restored = false;
    int rc = replace ? 0 : db_exists(srv.db, c->db, CMD_ARG(1));
    if (rc < 0) {
        cmd_reply_err(c, rc);
    } else if (rc) {
        resp_error(OUT(c), "BUSYKEY Target key name already exists.");
    } else if (!cmd_arg_ll(c, 2, &ttl)) {
        /* replied */
    } else if (ttl < 0) {
        resp_error(OUT(c), "ERR Invalid TTL value, must be >= 0");
    } else if (srv.stats.restores++, /* a payload is always decoded whole */
               (rc = rdb_load(c->argv[3].p, c->argv[3].n, &v)) != RDB_OK) {
        resp_error(OUT(c), rc == RDB_EVERSION ? "ERR DUMP payload version or checksum are wrong"
                                              : "ERR Bad data format");
    } else {
        uint64_t now = srv_mstime();
        /* A relative TTL past the end of time counts as expired: Redis's
         * sum wraps negative there. */
        bool wraps = ttl && !absttl && (uint64_t)ttl > (uint64_t)INT64_MAX - now;
        v.expire_ms = ttl && !absttl ? (uint64_t)ttl + now : (uint64_t)ttl;
        bool expired = wraps || (v.expire_ms && v.expire_ms <= now);
        if (expired) {
            /* Already expired: the value is not kept, and REPLACE still
             * deletes what the key held. */
            rc = replace ? db_del(srv.db, c->db, CMD_ARG(1)) : 0;
            if (rc == 1)
                cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "del", 1);
        } else {
            rc = db_restore(srv.db, c->db, CMD_ARG(1), &v, replace);
            restored = rc == 1;
            if (restored) {
                cmd_notify_new(c->db, CMD_ARG(1), true);
                cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "restore", 1);
                if (idle > 0)
                    used_ms -= (uint64_t)idle < used_ms / 1000 ? (uint64_t)idle * 1000 : used_ms;
            }
        }
        if (rc < 0)
            cmd_reply_err(c, rc);
        else if (rc == 0 && !expired)
            resp_error(OUT(c), "BUSYKEY Target key name already exists.");
        else
            resp_simple(OUT(c), "OK");
    }
    db_vec_destroy(&v.items);
    /* As Redis's objectSetLRUOrLFU: under an LFU policy FREQ sets a restored
     * key's counter (else it starts as a created key's); under any other,
     * IDLETIME sets its last use. A key RESTORE did not replace was looked
     * up, a use as any other. */
    if (!SRV_LFU_POLICY(srv.conf.maxmemory_policy))
        srv_idle_touch(&srv.idle, c->db, CMD_ARG(1), used_ms);
    else if (restored)
        srv_idle_set_lfu(&srv.idle, c->db, CMD_ARG(1), freq >= 0 ? (unsigned)freq : SRV_LFU_INIT,
                         srv.loop_ms);
    else
        srv_idle_touch_lfu(&srv.idle, srv_idle_key(&srv.idle, c->db, CMD_ARG(1)), srv.loop_ms,
                           srv.conf.lfu_log_factor, srv.conf.lfu_decay_time);
}

/* KEYS pattern */
void cmd_keys(struct conn *c)
{
    struct db_vec v;
    db_vec_init(&v);
    char *cur = NULL;
    size_t curn = 0;
    int rc;
    do {
        char *next;
        size_t nextn;
        rc = db_scan(srv.db, c->db, cur, curn, CMD_ARG(1), 0, 1000, &v, &next, &nextn);
        free(cur);
        cur = next;
        curn = nextn;
    } while (rc == 0 && cur);
    free(cur);
    if (rc)
        cmd_reply_err(c, rc);
    else
        cmd_reply_vec(c, &v);
    db_vec_destroy(&v);
}

/* Parses a SCAN-family cursor: an unsigned decimal. */
static bool cursor_arg(struct conn *c, size_t i, uint64_t *out)
{
    const struct db_str *a = &c->argv[i];
    char buf[32];
    if (a->n == 0 || a->n >= sizeof buf)
        goto bad;
    memcpy(buf, a->p, a->n);
    buf[a->n] = '\0';
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (*end || errno || buf[0] == '-')
        goto bad;
    *out = v;
    return true;
bad:
    resp_error(OUT(c), "ERR invalid cursor");
    return false;
}

/* Parses [MATCH pattern] [COUNT n] [TYPE t] from argument i on. type may be
 * NULL where TYPE is not allowed. Replies on error. */
static bool scan_opts(struct conn *c, size_t i, const struct db_str **pat, uint64_t *count,
                      int *type)
{
    *pat = NULL;
    *count = 10;
    if (type)
        *type = 0;
    for (; i < c->argc; i += 2) {
        if (i + 1 >= c->argc) {
            cmd_reply_syntax(c);
            return false;
        }
        if (cmd_arg_is(c, i, "match")) {
            *pat = &c->argv[i + 1];
        } else if (cmd_arg_is(c, i, "count")) {
            int64_t n;
            if (!cmd_arg_ll(c, i + 1, &n))
                return false;
            if (n < 1) {
                cmd_reply_syntax(c);
                return false;
            }
            *count = (uint64_t)n;
        } else if (type && cmd_arg_is(c, i, "type")) {
            *type = type_parse(&c->argv[i + 1]);
        } else {
            cmd_reply_syntax(c);
            return false;
        }
    }
    /* A "*" pattern matches everything: skip the matching. */
    if (*pat && (*pat)->n == 1 && (*pat)->p[0] == '*')
        *pat = NULL;
    return true;
}

/* Replies [next cursor, items] and remembers where the scan stopped. */
static void reply_scan(struct conn *c, const struct db_vec *v, char *next, size_t nextn)
{
    uint64_t id = next ? srv_cursor_save(next, nextn) : 0;
    free(next);
    resp_array(OUT(c), 2);
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)id);
    resp_bulk(OUT(c), buf, (size_t)n);
    cmd_reply_vec(c, v);
}

/* SCAN cursor [MATCH pattern] [COUNT count] [TYPE type] */
void cmd_scan(struct conn *c)
{
    uint64_t cursor, count;
    const struct db_str *pat;
    int type;
    if (!cursor_arg(c, 1, &cursor) || !scan_opts(c, 2, &pat, &count, &type))
        return;
    struct db_vec v;
    db_vec_init(&v);
    if (type < 0) { /* an unknown type matches no key */
        reply_scan(c, &v, NULL, 0);
        return;
    }
    const char *from = NULL;
    size_t fromn = 0;
    if (cursor)
        srv_cursor_find(cursor, &from, &fromn);
    char *next;
    size_t nextn;
    int rc = db_scan(srv.db, c->db, from, fromn, pat ? pat->p : NULL, pat ? pat->n : 0, type, count,
                     &v, &next, &nextn);
    if (rc)
        cmd_reply_err(c, rc);
    else
        reply_scan(c, &v, next, nextn);
    db_vec_destroy(&v);
}

/* HSCAN/SSCAN/ZSCAN key cursor [MATCH pattern] [COUNT count] */
void cmd_cscan_generic(struct conn *c, int type)
{
    uint64_t cursor, count;
    const struct db_str *pat;
    if (!cursor_arg(c, 2, &cursor) || !scan_opts(c, 3, &pat, &count, NULL))
        return;
    const char *from = NULL;
    size_t fromn = 0;
    if (cursor)
        srv_cursor_find(cursor, &from, &fromn);
    struct db_vec v;
    db_vec_init(&v);
    char *next;
    size_t nextn;
    int rc = db_cscan(srv.db, c->db, CMD_ARG(1), type, from, fromn, pat ? pat->p : NULL,
                      pat ? pat->n : 0, count, &v, &next, &nextn);
    if (rc)
        cmd_reply_err(c, rc);
    else
        reply_scan(c, &v, next, nextn);
    db_vec_destroy(&v);
}

/* RANDOMKEY */
void cmd_randomkey(struct conn *c)
{
    char *k;
    size_t kn;
    int rc = db_randomkey(srv.db, c->db, &k, &kn);
    cmd_reply_bulk(c, rc, k, kn);
}

/* DBSIZE */
void cmd_dbsize(struct conn *c)
{
    uint64_t n, e;
    int rc = db_keycount(srv.db, c->db, &n, &e);
    if (rc)
        cmd_reply_err(c, rc);
    else
        cmd_reply_int(c, 0, (int64_t)n);
}

/* SELECT index */
void cmd_select(struct conn *c)
{
    unsigned dbi;
    if (!db_index_arg(c, 1, &dbi))
        return;
    c->db = dbi;
    resp_simple(OUT(c), "OK");
}

/* SWAPDB index1 index2: O(1) in the data, which stays where it is: the map
 * from database numbers to stored databases swaps two entries (saved
 * before the reply), and the connections, watches and blocked clients of
 * the two follow their numbers (cmd_swapped). */
void cmd_swapdb(struct conn *c)
{
    int64_t a, b;
    if (kv_str2ll(c->argv[1].p, c->argv[1].n, &a)) {
        resp_error(OUT(c), "ERR invalid first DB index");
        return;
    }
    if (kv_str2ll(c->argv[2].p, c->argv[2].n, &b)) {
        resp_error(OUT(c), "ERR invalid second DB index");
        return;
    }
    if (a < 0 || a >= srv.conf.databases || b < 0 || b >= srv.conf.databases) {
        resp_error(OUT(c), "ERR DB index is out of range");
        return;
    }
    if (a != b) {
        unsigned pa = srv_dbmap[a], pb = srv_dbmap[b];
        int rc = srv_dbmap_swap(srv.conf.dir, (unsigned)a, (unsigned)b);
        if (rc) {
            resp_errorf(OUT(c), "ERR cannot save the database map: %s", strerror(-rc));
            return;
        }
        srv_cache_dbmap();
        cmd_swapped(pa, pb);
        srv.stats.dirty++;
    }
    resp_simple(OUT(c), "OK");
}

/* FLUSHDB/FLUSHALL [ASYNC|SYNC]: a range delete is O(1) both ways. */
static bool flush_opts(struct conn *c)
{
    if (c->argc > 2 || (c->argc == 2 && !cmd_arg_is(c, 1, "async") && !cmd_arg_is(c, 1, "sync"))) {
        cmd_reply_syntax(c);
        return false;
    }
    return true;
}

void cmd_flushdb(struct conn *c)
{
    if (!flush_opts(c))
        return;
    int rc = db_flushdb(srv.db, c->db);
    cmd_reply_ok(c, rc);
}

void cmd_flushall(struct conn *c)
{
    if (!flush_opts(c))
        return;
    int rc = db_flushall(srv.db);
    cmd_reply_ok(c, rc);
}

/* The Redis 7.0 name of the key's encoding: a string's by its value (as
 * Redis picks one when it stores it), a collection's by its coding: an
 * inline one is a listpack (an intset for a set), the rest are Redis's
 * large forms. Lists are quicklists at every size in Redis 7.0. */
const char *cmd_object_encoding(const struct db_keyinfo *ki, unsigned dbi, const struct db_str *k)
{
    bool inl = ki->coding == ENC_CODING_INLINE;
    switch (ki->type) {
    case ENC_TYPE_STRING: {
        char *v;
        size_t vn;
        int64_t ll;
        const char *name = "raw";
        if (db_get(srv.db, dbi, k->p, k->n, &v, &vn) == 0) {
            if (vn <= 20 && kv_str2ll(v, vn, &ll) == 0)
                name = "int";
            else if (vn <= 44)
                name = "embstr";
            free(v);
        }
        return name;
    }
    case ENC_TYPE_LIST:
        return "quicklist";
    case ENC_TYPE_SET:
        return inl ? "intset" : "hashtable";
    case ENC_TYPE_HASH:
        return inl ? "listpack" : "hashtable";
    case ENC_TYPE_ZSET:
        return inl ? "listpack" : "skiplist";
    default:
        return "none";
    }
}

/* OBJECT ENCODING|REFCOUNT|FREQ|IDLETIME|HELP [key] */
void cmd_object(struct conn *c)
{
    if (cmd_arg_is(c, 1, "help") && c->argc == 2) {
        static const char *const lines[] = {
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
        return;
    }
    if (c->argc != 3) {
        resp_errorf(
            OUT(c),
            "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try OBJECT HELP.",
            (int)c->argv[1].n, c->argv[1].p);
        return;
    }
    struct db_keyinfo ki;
    int rc = db_keyinfo(srv.db, c->db, CMD_ARG(2), &ki);
    if (rc == KV_ENOTFOUND) {
        resp_null(OUT(c), c->proto);
        return;
    }
    if (rc) {
        cmd_reply_err(c, rc);
        return;
    }
    if (cmd_arg_is(c, 1, "encoding")) {
        uint64_t f, m; /* the key was looked up once, by db_keyinfo */
        db_lookups(srv.db, &f, &m);
        const char *name = cmd_object_encoding(&ki, c->db, &c->argv[2]);
        db_lookups_rewind(srv.db, f, m);
        resp_bulk_cstr(OUT(c), name);
    } else if (cmd_arg_is(c, 1, "refcount")) {
        resp_int(OUT(c), 1); /* values are never shared between keys */
    } else if (cmd_arg_is(c, 1, "freq")) {
        if (!SRV_LFU_POLICY(srv.conf.maxmemory_policy))
            resp_error(OUT(c), "ERR An LFU maxmemory policy is not selected, access frequency not "
                               "tracked. Please note that when switching between policies at "
                               "runtime LRU and LFU data will take some time to adjust.");
        else
            resp_int(OUT(c), srv_idle_freq(&srv.idle, c->db, CMD_ARG(2), srv.loop_ms,
                                           srv.conf.lfu_decay_time));
    } else if (cmd_arg_is(c, 1, "idletime")) {
        if (SRV_LFU_POLICY(srv.conf.maxmemory_policy))
            resp_error(OUT(c), "ERR An LFU maxmemory policy is selected, idle time not tracked. "
                               "Please note that when switching between policies at runtime LRU "
                               "and LFU data will take some time to adjust.");
        else
            resp_int(OUT(c), (int64_t)srv_idle_seconds(&srv.idle, c->db, CMD_ARG(2), srv.loop_ms));
    } else {
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try OBJECT HELP.", (int)c->argv[1].n,
                    c->argv[1].p);
    }
}
