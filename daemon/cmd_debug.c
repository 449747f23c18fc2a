/*
 * cmd_debug — DEBUG, Redis's command for testing and looking inside the
 * server, with the subcommands that mean something for shmkvd. Dispatch
 * runs it only as enable-debug-command allows (cmd_protected_allowed).
 *
 * Layer: a command handler. DIGEST walks every key of every database
 * through the type layer's scan and reads each value whole (db_dump); the
 * rest call one db_ or stor_ function, jemalloc, or nothing.
 */
#include "cmd.h"
#include "srv_repl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jemalloc/jemalloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "kv_mem.h"
#include "kv_sha1.h"
#include "rdb.h"

bool cmd_protected_allowed(const struct conn *c, int setting)
{
    if (setting == SRV_PROTECTED_YES)
        return true;
    if (setting != SRV_PROTECTED_LOCAL)
        return false;
    if (c->flags & CONN_UNIX)
        return true;
    /* c->addr is "host:port"; Redis compares the host as written. */
    const char *colon = strrchr(c->addr, ':');
    size_t n = colon ? (size_t)(colon - c->addr) : strlen(c->addr);
    return (n == 9 && !memcmp(c->addr, "127.0.0.1", 9)) || (n == 3 && !memcmp(c->addr, "::1", 3));
}

/* Argument i as a NUL-terminated copy, for the C library's parsers and
 * jemalloc's names; free() it. */
static char *arg_z(const struct conn *c, size_t i)
{
    char *z = kv_xmalloc(c->argv[i].n + 1);
    memcpy(z, c->argv[i].p, c->argv[i].n);
    z[c->argv[i].n] = '\0';
    return z;
}

/* ---- DIGEST and DIGEST-VALUE ---- */

/* Redis's two ways of adding data to a 20-byte digest (debug.c). xor:
 * d ^= SHA1(data), which does not depend on order (a set's members, a
 * data set's keys). mix: the same, then d = SHA1(d), which does (a list's
 * elements, a key before its value). */
static void digest_xor(unsigned char d[KV_SHA1_LEN], const void *p, size_t n)
{
    unsigned char h[KV_SHA1_LEN];
    kv_sha1(p, n, h);
    for (int i = 0; i < KV_SHA1_LEN; i++)
        d[i] ^= h[i];
}

static void digest_mix(unsigned char d[KV_SHA1_LEN], const void *p, size_t n)
{
    digest_xor(d, p, n);
    kv_sha1(d, KV_SHA1_LEN, d);
}

/* Adds a value to d as Redis's xorObjectDigest does: the type's number
 * (Redis's OBJ_STRING 0, LIST 1, SET 2, ZSET 3, HASH 4, big-endian), then
 * the string, the list's elements in order, each set member, each hash
 * field with its value and each sorted-set member with its score as
 * "%.17g" writes it (an element's own digest for those two), and a fixed
 * mark when the key has an expiry: the expiry time itself is not part of
 * it, so the same data loaded later digests alike. */
static void digest_value(unsigned char d[KV_SHA1_LEN], const struct db_value *v)
{
    static const uint32_t code[] = {[ENC_TYPE_STRING] = 0,
                                    [ENC_TYPE_LIST] = 1,
                                    [ENC_TYPE_SET] = 2,
                                    [ENC_TYPE_ZSET] = 3,
                                    [ENC_TYPE_HASH] = 4};
    uint32_t aux = htonl(code[v->type]);
    digest_mix(d, &aux, sizeof aux);
    const struct db_vec *it = &v->items;
    for (size_t i = 0; i < it->n; i++) {
        const char *p = db_vec_ptr(it, i);
        size_t n = db_vec_len(it, i);
        unsigned char e[KV_SHA1_LEN] = {0};
        switch (v->type) {
        case ENC_TYPE_STRING:
        case ENC_TYPE_LIST:
            digest_mix(d, p, n);
            break;
        case ENC_TYPE_SET:
            digest_xor(d, p, n);
            break;
        case ENC_TYPE_ZSET: {
            char score[64];
            int sn = snprintf(score, sizeof score, "%.17g", it->items[i].score);
            digest_mix(e, p, n);
            digest_mix(e, score, (size_t)sn);
            digest_xor(d, e, sizeof e);
            break;
        }
        case ENC_TYPE_HASH: /* field, value pairs */
            digest_mix(e, p, n);
            i++;
            digest_mix(e, db_vec_ptr(it, i), db_vec_len(it, i));
            digest_xor(d, e, sizeof e);
            break;
        }
    }
    if (v->expire_ms)
        digest_xor(d, "!!expire!!", 10);
}

static void reply_hex(struct conn *c, const unsigned char d[KV_SHA1_LEN])
{
    char hex[2 * KV_SHA1_LEN + 1];
    for (int i = 0; i < KV_SHA1_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    resp_simple(OUT(c), hex);
}

/* The digest of key's value in db dbi into d (zeros when absent). 0 or a
 * storage error. */
static int value_digest(unsigned dbi, const char *key, size_t klen, unsigned char d[KV_SHA1_LEN])
{
    struct db_value v = {0};
    db_vec_init(&v.items);
    memset(d, 0, KV_SHA1_LEN);
    int rc = db_dump(srv.db, dbi, key, klen, &v);
    if (rc == 0)
        digest_value(d, &v);
    db_vec_destroy(&v.items);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

/* The whole data set's digest, as Redis's computeDatasetDigest builds it:
 * for each database that has keys, in order, its number is mixed in, then
 * each key's digest (its name mixed, then its value added) is xored in, so
 * the order of the keys within a database does not matter. An empty data
 * set gives 20 zero bytes. 0 or a storage error. */
static int dataset_digest(unsigned char final[KV_SHA1_LEN])
{
    memset(final, 0, KV_SHA1_LEN);
    struct db_vec keys;
    db_vec_init(&keys);
    int rc = 0;
    for (unsigned dbi = 0; rc == 0 && dbi < (unsigned)srv.conf.databases; dbi++) {
        unsigned char keys_xor[KV_SHA1_LEN] = {0};
        bool any = false;
        char *cur = NULL;
        size_t curn = 0;
        do {
            char *next = NULL;
            size_t nextn = 0;
            db_vec_clear(&keys);
            rc = db_scan(srv.db, srv_dbmap[dbi], cur, curn, NULL, 0, 0, 1000, &keys, &next, &nextn);
            free(cur);
            cur = next;
            curn = nextn;
            for (size_t i = 0; rc == 0 && i < keys.n; i++) {
                struct db_value v = {0};
                db_vec_init(&v.items);
                const char *k = db_vec_ptr(&keys, i);
                size_t kn = db_vec_len(&keys, i);
                int r = db_dump(srv.db, srv_dbmap[dbi], k, kn, &v);
                if (r == 0) { /* not a key that expired since the scan saw it */
                    unsigned char d[KV_SHA1_LEN] = {0};
                    digest_mix(d, k, kn);
                    digest_value(d, &v);
                    digest_xor(keys_xor, d, sizeof d);
                    any = true;
                } else if (r != KV_ENOTFOUND) {
                    rc = r;
                }
                db_vec_destroy(&v.items);
            }
        } while (rc == 0 && cur);
        free(cur);
        if (rc == 0 && any) {
            uint32_t aux = htonl(dbi);
            digest_mix(final, &aux, sizeof aux);
            for (int i = 0; i < KV_SHA1_LEN; i++)
                final[i] ^= keys_xor[i];
        }
    }
    db_vec_destroy(&keys);
    return rc;
}

static void debug_digest(struct conn *c)
{
    unsigned char d[KV_SHA1_LEN];
    int rc = dataset_digest(d);
    if (rc)
        cmd_reply_err(c, rc);
    else
        reply_hex(c, d);
}

/* DIGEST-VALUE key [key ...]: each value's digest, without its key's
 * name; an absent key's is 40 zeros. */
static void debug_digest_value(struct conn *c)
{
    size_t n = c->argc - 2;
    unsigned char(*d)[KV_SHA1_LEN] = kv_xmalloc((n ? n : 1) * sizeof *d);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = value_digest(c->db, CMD_ARG(i + 2), d[i]);
    if (rc) {
        cmd_reply_err(c, rc);
    } else {
        resp_array(OUT(c), n);
        for (size_t i = 0; i < n; i++)
            reply_hex(c, d[i]);
    }
    free(d);
}

/* ---- OBJECT, LISTPACK, QUICKLIST ---- */

/* Looks up the key in argument 2 for OBJECT, LISTPACK and QUICKLIST: true
 * with *ki, or false after Redis's "no such key" or a storage error. */
static bool key_or_reply(struct conn *c, struct db_keyinfo *ki)
{
    int rc = db_keyinfo(srv.db, c->db, CMD_ARG(2), ki);
    if (rc == KV_ENOTFOUND)
        resp_error(OUT(c), "ERR no such key");
    else if (rc)
        cmd_reply_err(c, rc);
    return rc == 0;
}

/* OBJECT key: Redis's line. There is no object in memory, so "at" is the
 * key's hash (as the idle clock hashes it) and refcount is 1, as OBJECT
 * REFCOUNT says; the encoding is OBJECT ENCODING's, serializedlength the
 * length of DUMP's payload without its type byte and footer (Redis's
 * rdbSavedObjectLen, but of shmkvd's uncompressed plain forms), and lru
 * and lru_seconds_idle come from the idle clock (OBJECT IDLETIME). */
static void debug_object(struct conn *c)
{
    struct db_keyinfo ki;
    if (!key_or_reply(c, &ki))
        return;
    const char *enc = cmd_object_encoding(&ki, c->db, &c->argv[2]);
    struct db_value v = {0};
    db_vec_init(&v.items);
    int rc = db_dump(srv.db, c->db, CMD_ARG(2), &v);
    size_t len = 0;
    if (rc == 0) {
        char *p = rdb_dump(&v, &len);
        free(p);
        len -= 11; /* the type byte, the version (2) and the CRC-64 (8) */
    }
    db_vec_destroy(&v.items);
    if (rc) {
        if (rc == KV_ENOTFOUND) /* expired between the two reads */
            resp_error(OUT(c), "ERR no such key");
        else
            cmd_reply_err(c, rc);
        return;
    }
    uint64_t idle = srv_idle_seconds(&srv.idle, c->db, CMD_ARG(2), srv.loop_ms);
    uint64_t lru = (srv.loop_ms / 1000 - idle) & ((1u << 24) - 1); /* Redis's 24-bit LRU clock */
    uint64_t at = srv_idle_key(&srv.idle, c->db, CMD_ARG(2)) & 0xffffffffffffull;
    resp_buf_printf(OUT(c),
                    "+Value at:0x%llx refcount:1 encoding:%s serializedlength:%zu lru:%llu "
                    "lru_seconds_idle:%llu\r\n",
                    (unsigned long long)at, enc, len, (unsigned long long)lru,
                    (unsigned long long)idle);
}

/* Logs each element of the key in argument 2 (a hash's fields and values,
 * a set's, sorted set's or list's members), at most 64 bytes of each. */
static void log_elements(struct conn *c)
{
    struct db_value v = {0};
    db_vec_init(&v.items);
    if (db_dump(srv.db, c->db, CMD_ARG(2), &v) == 0) {
        for (size_t i = 0; i < v.items.n; i++) {
            size_t n = db_vec_len(&v.items, i);
            srv_log(LOG_NOTICE, "  [%zu] %zu bytes: %.*s", i, n, (int)(n < 64 ? n : 64),
                    db_vec_ptr(&v.items, i));
        }
    }
    db_vec_destroy(&v.items);
}

/* LISTPACK key and QUICKLIST key [0|1]: Redis prints the key's listpack or
 * quicklist to its standard output. shmkvd has neither; for a key whose
 * OBJECT ENCODING names that encoding it logs the elements the structure
 * would hold (QUICKLIST only with a detail level other than 0), and
 * answers as Redis does. */
static void debug_layout(struct conn *c, const char *want, const char *what)
{
    struct db_keyinfo ki;
    if (!key_or_reply(c, &ki))
        return;
    if (strcmp(cmd_object_encoding(&ki, c->db, &c->argv[2]), want) != 0) {
        resp_errorf(OUT(c), "ERR Not a %s encoded object.", want);
        return;
    }
    srv_log(LOG_NOTICE, "DEBUG %s '%.*s': size %llu, each element a record of its own", what,
            (int)(c->argv[2].n < 128 ? c->argv[2].n : 128), c->argv[2].p,
            (unsigned long long)ki.size);
    bool full = true;
    if (c->argc == 4) {
        char *z = arg_z(c, 3);
        full = atoi(z) != 0;
        free(z);
    } else if (!strcmp(want, "quicklist")) {
        full = false;
    }
    if (full)
        log_elements(c);
    resp_simple(OUT(c), !strcmp(want, "listpack") ? "Listpack structure printed on stdout"
                                                  : "Quicklist structure printed on stdout");
}

static void debug_listpack(struct conn *c)
{
    debug_layout(c, "listpack", "LISTPACK");
}

static void debug_quicklist(struct conn *c)
{
    debug_layout(c, "quicklist", "QUICKLIST");
}

/* ---- the server ---- */

/* SLEEP seconds: blocks the whole server, as in Redis; a fraction is
 * allowed and text that is no number sleeps 0 (strtod's reading). A
 * signal (SIGTERM) ends the sleep early. */
static void debug_sleep(struct conn *c)
{
    char *z = arg_z(c, 2);
    double s = strtod(z, NULL);
    free(z);
    if (s > 0 && !isinf(s)) { /* Redis's conversion makes infinity no sleep */
        double us = s * 1e6 < 9e18 ? s * 1e6 : 9e18;
        long long u = (long long)us;
        struct timespec ts = {.tv_sec = u / 1000000, .tv_nsec = (u % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    resp_simple(OUT(c), "OK");
}

/* RELOAD [MERGE|NOFLUSH|NOSAVE ...]: Redis saves its RDB and loads it
 * back. shmkvd's data already lives in RocksDB, so there is nothing to
 * load: it writes everything write-back holds into RocksDB (as SHMKV.COMPACT
 * does first), so the data is then all on disk, and answers OK. */
static void debug_reload(struct conn *c)
{
    for (size_t i = 2; i < c->argc; i++) {
        if (!cmd_arg_is(c, i, "merge") && !cmd_arg_is(c, i, "noflush") &&
            !cmd_arg_is(c, i, "nosave")) {
            resp_error(OUT(c), "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE "
                               "options.");
            return;
        }
    }
    int rc = stor_drain(srv.stor);
    if (rc) {
        cmd_reply_err(c, rc);
        return;
    }
    srv_log(LOG_NOTICE, "DEBUG RELOAD: write-back drained, RocksDB holds every write");
    resp_simple(OUT(c), "OK");
}

/* SET-ACTIVE-EXPIRE 0|1: cron's deletion of expired keys off or on (any
 * text atoi reads as nonzero is on, as in Redis). Expired keys read as
 * absent either way. */
static void debug_set_active_expire(struct conn *c)
{
    char *z = arg_z(c, 2);
    srv.active_expire_off = atoi(z) == 0;
    free(z);
    resp_simple(OUT(c), "OK");
}

/* CHANGE-REPL-ID: a new random master_replid (INFO replication). */
static void debug_change_repl_id(struct conn *c)
{
    srv_log(LOG_NOTICE, "Changing replication IDs after receiving DEBUG change-repl-id");
    srv_repl_new_id();
    resp_simple(OUT(c), "OK");
}

/* QUICKLIST-PACKED-THRESHOLD size: checked as Redis checks it (a memory
 * value, with Redis's units, below 4 GB less 1 MB; 0 for the default) and
 * accepted with no effect: a list here keeps each element in a record of
 * its own, large or not. */
static void debug_quicklist_threshold(struct conn *c)
{
    char *z = arg_z(c, 2);
    /* Redis's memtoull: digits, then b, k, kb, m, mb, g or gb, any case. */
    size_t digits = strspn(z, "0123456789");
    const char *unit = z + digits;
    unsigned long long mul = 0;
    static const struct {
        const char *name;
        unsigned long long mul;
    } units[] = {{"", 1},        {"b", 1},           {"k", 1000},          {"kb", 1024},
                 {"m", 1000000}, {"mb", 1ull << 20}, {"g", 1000000000ull}, {"gb", 1ull << 30}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcasecmp(unit, units[i].name))
            mul = units[i].mul;
    unsigned long long v = digits ? strtoull(z, NULL, 10) : 0;
    free(z);
    if (!mul || digits >= 128 || v * mul > (1ull << 32) - (1u << 20))
        resp_error(OUT(c),
                   "ERR argument must be a memory value bigger than 1 and smaller than 4gb");
    else
        resp_simple(OUT(c), "OK");
}

/* STRINGMATCH-TEST: Redis's fuzz of its glob matcher, here of shmkvd's
 * (db_glob_match): a million random patterns against random strings, both
 * of up to 31 bytes of 7-bit characters; what counts is not crashing.
 * Redis runs ten million, which its matcher takes seconds over. */
static void debug_stringmatch_test(struct conn *c)
{
    uint64_t r = srv_mstime() | 1;
    char s[32], p[32];
    unsigned long matches = 0;
    for (int cycle = 0; cycle < 1000000; cycle++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17; /* xorshift64 */
        size_t sn = r % sizeof s, pn = (r >> 8) % sizeof p;
        for (size_t j = 0; j < sn; j++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            s[j] = (char)(r % 128);
        }
        for (size_t j = 0; j < pn; j++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            p[j] = (char)(r % 128);
        }
        matches += (unsigned long)db_glob_match(p, pn, s, sn, 0);
    }
    srv_log(LOG_VERBOSE, "DEBUG STRINGMATCH-TEST: %lu matches", matches);
    resp_simple(OUT(c), "Apparently Redis did not crash: test passed");
}

/* ---- jemalloc ---- */

/* MALLCTL name [value]: an integer setting of jemalloc, read, or written
 * and its old value read, as Redis tries it: 8 bytes first, then the size
 * jemalloc answers halved, down to none (EINVAL). A setting that may only
 * be written is written and answers OK. */
static void debug_mallctl(struct conn *c)
{
    int64_t old = 0, val = 0;
    bool set = c->argc > 3;
    if (set && !cmd_arg_ll(c, 3, &val))
        return;
    char *name = arg_z(c, 2);
    size_t sz = sizeof old;
    int ret = EINVAL;
    while (sz > 0) {
        ret = mallctl(name, &old, &sz, set ? &val : NULL, set ? sz : 0);
        if (ret == 0) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            old >>= 64 - 8 * sz;
#endif
            resp_int(OUT(c), old);
            free(name);
            return;
        }
        if (ret == EPERM && set) {
            ret = mallctl(name, NULL, NULL, &val, sz);
            if (ret == 0) {
                resp_simple(OUT(c), "OK");
                free(name);
                return;
            }
        }
        if (ret != EINVAL)
            break;
        sz /= 2; /* jemalloc set sz to the setting's size: try a smaller one */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        val <<= 8 * sz;
#endif
    }
    free(name);
    resp_errorf(OUT(c), "ERR %s", strerror(ret));
}

/* Copies the C string at p into out (cap bytes), true when p points at
 * readable memory holding a NUL within cap bytes. jemalloc cannot say
 * whether a setting is a string: MALLCTL-STR on an 8-byte integer setting
 * reads that integer as a pointer, which redis-server then reads and
 * crashes on. The bytes go through a pipe, whose write fails with EFAULT
 * on memory that cannot be read, instead of faulting. */
static bool readable_cstr(const char *p, char *out, size_t cap)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
        return false;
    bool ok = false;
    size_t have = 0;
    while (have < cap && !ok) {
        size_t chunk = cap - have < 64 ? cap - have : 64;
        /* Not across a page end: the next page may be unmapped. */
        uintptr_t to_page = 4096 - ((uintptr_t)(p + have) & 4095);
        if (chunk > to_page)
            chunk = to_page;
        ssize_t w = write(fds[1], p + have, chunk);
        if (w <= 0 || read(fds[0], out + have, (size_t)w) != w)
            break;
        ok = memchr(out + have, '\0', (size_t)w) != NULL;
        have += (size_t)w;
    }
    close(fds[0]);
    close(fds[1]);
    return ok;
}

/* MALLCTL-STR name [value]: a string setting of jemalloc, read (and
 * written when a value is given; "VOID" writes nothing but the call). The
 * old value is the answer when it can be read. */
static void debug_mallctl_str(struct conn *c)
{
    char *name = arg_z(c, 2), *val = c->argc > 3 ? arg_z(c, 3) : NULL;
    const char *old = NULL;
    size_t sz = sizeof old;
    int rret = mallctl(name, &old, &sz, NULL, 0), wret = 0;
    if (rret && !(rret == EPERM && val)) {
        resp_errorf(OUT(c), "ERR %s", strerror(rret));
        goto out;
    }
    if (val) {
        char **ref = &val;
        size_t vsz = sizeof val;
        if (!strcmp(val, "VOID"))
            ref = NULL, vsz = 0;
        wret = mallctl(name, NULL, NULL, ref, vsz);
    }
    char text[4096];
    if (!rret && !old)
        resp_null(OUT(c), c->proto); /* a setting with no string */
    else if (!rret && !readable_cstr(old, text, sizeof text))
        resp_errorf(OUT(c), "ERR %s", strerror(EINVAL)); /* not a string setting */
    else if (!rret)
        resp_bulk_cstr(OUT(c), text);
    else if (wret)
        resp_errorf(OUT(c), "ERR %s", strerror(wret));
    else
        resp_simple(OUT(c), "OK");
out:
    free(name);
    free(val);
}

/* ---- for clients' and tests' use ---- */

/* LOG message: the message in the log, at warning level as in Redis. */
static void debug_log(struct conn *c)
{
    srv_log(LOG_WARNING, "DEBUG LOG: %.*s", (int)c->argv[2].n, c->argv[2].p);
    resp_simple(OUT(c), "OK");
}

/* ERROR text: the text as an error reply, as it is (no "ERR"), line breaks
 * made spaces. Like Redis's, it counts as no error in INFO's statistics. */
static void debug_error(struct conn *c)
{
    char *t = arg_z(c, 2);
    for (size_t i = 0; i < c->argv[2].n; i++)
        if (t[i] == '\r' || t[i] == '\n')
            t[i] = ' ';
    resp_buf_append(OUT(c), "-", 1);
    resp_buf_append(OUT(c), t, c->argv[2].n);
    resp_buf_append(OUT(c), "\r\n", 2);
    free(t);
}

/* PROTOCOL type: a fixed reply of each RESP type, Redis's test values. */
static void debug_protocol(struct conn *c)
{
    struct resp_buf *b = OUT(c);
    int proto = c->proto;
    if (cmd_arg_is(c, 2, "string")) {
        resp_bulk_cstr(b, "Hello World");
    } else if (cmd_arg_is(c, 2, "integer")) {
        resp_int(b, 12345);
    } else if (cmd_arg_is(c, 2, "double")) {
        resp_double(b, 3.141, proto);
    } else if (cmd_arg_is(c, 2, "bignum")) {
        static const char big[] = "1234567999999999999999999999999999999";
        if (proto == 3)
            resp_buf_printf(b, "(%s\r\n", big);
        else
            resp_bulk_cstr(b, big);
    } else if (cmd_arg_is(c, 2, "null")) {
        resp_null(b, proto);
    } else if (cmd_arg_is(c, 2, "array") || cmd_arg_is(c, 2, "set")) {
        if (cmd_arg_is(c, 2, "set"))
            resp_set(b, 3, proto);
        else
            resp_array(b, 3);
        for (int j = 0; j < 3; j++)
            resp_int(b, j);
    } else if (cmd_arg_is(c, 2, "map")) {
        resp_map(b, 3, proto);
        for (int j = 0; j < 3; j++) {
            resp_int(b, j);
            resp_bool(b, j == 1, proto);
        }
    } else if (cmd_arg_is(c, 2, "attrib")) {
        if (proto == 3) {
            resp_buf_printf(b, "|1\r\n");
            resp_bulk_cstr(b, "key-popularity");
            resp_array(b, 2);
            resp_bulk_cstr(b, "key:123");
            resp_int(b, 90);
        }
        resp_bulk_cstr(b, "Some real reply following the attribute");
    } else if (cmd_arg_is(c, 2, "push")) {
        if (proto < 3) {
            resp_error(b, "ERR RESP2 is not supported by this command");
            return;
        }
        resp_push(b, 2, proto);
        resp_bulk_cstr(b, "server-cpu-usage");
        resp_int(b, 42);
        resp_bulk_cstr(b, "Some real reply following the push reply");
    } else if (cmd_arg_is(c, 2, "true") || cmd_arg_is(c, 2, "false")) {
        resp_bool(b, cmd_arg_is(c, 2, "true"), proto);
    } else if (cmd_arg_is(c, 2, "verbatim")) {
        resp_verbatim(b, "This is a verbatim\nstring", 25, proto);
    } else {
        resp_error(b, "ERR Wrong protocol type name. Please use one of the following: "
                      "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|"
                      "true|false");
    }
}

/* POPULATE count [prefix] [size]: count string keys prefix:N (key:N)
 * holding "value:N" (cut or padded with zero bytes to size, when given),
 * each made only where the key is absent. Redis fills its hash table
 * directly; here each key is a SET ... NX of its own. */
static void debug_populate(struct conn *c)
{
    int64_t count, size = 0;
    if (!cmd_arg_count(c, 2, &count))
        return;
    if (c->argc == 5 && !cmd_arg_count(c, 4, &size))
        return;
    char *prefix = c->argc >= 4 ? arg_z(c, 3) : NULL;
    char key[128], val[128];
    char *big = size > 0 ? kv_xcalloc(1, (size_t)size) : NULL;
    int rc = 0;
    for (int64_t j = 0; rc >= 0 && j < count; j++) {
        int kn =
            snprintf(key, sizeof key, "%s:%llu", prefix ? prefix : "key", (unsigned long long)j);
        size_t klen = (size_t)kn < sizeof key ? (size_t)kn : sizeof key - 1;
        int vn = snprintf(val, sizeof val, "value:%llu", (unsigned long long)j);
        const char *v = val;
        size_t vlen = (size_t)vn;
        if (big) {
            memset(big, 0, (size_t)size);
            memcpy(big, val, (size_t)size < vlen ? (size_t)size : vlen);
            v = big;
            vlen = (size_t)size;
        }
        rc = db_set(srv.db, c->db, key, klen, v, vlen, 0, DB_SET_NX, NULL, NULL);
    }
    free(big);
    free(prefix);
    cmd_reply_ok(c, rc < 0 ? rc : 0);
}

/* ---- DEBUG ---- */

static void debug_help(struct conn *c);

/* The subcommands: name, the argument counts each takes (DEBUG's own
 * counted; max 0: no limit), handler. */
static const struct {
    const char *name;
    size_t min, max;
    void (*fn)(struct conn *c);
} SUBS[] = {
    {"help", 2, 2, debug_help},
    {"sleep", 3, 3, debug_sleep},
    {"object", 3, 3, debug_object},
    {"digest", 2, 2, debug_digest},
    {"digest-value", 2, 0, debug_digest_value},
    {"reload", 2, 0, debug_reload},
    {"set-active-expire", 3, 3, debug_set_active_expire},
    {"change-repl-id", 2, 2, debug_change_repl_id},
    {"quicklist-packed-threshold", 3, 3, debug_quicklist_threshold},
    {"listpack", 3, 3, debug_listpack},
    {"quicklist", 3, 4, debug_quicklist},
    {"stringmatch-test", 2, 2, debug_stringmatch_test},
    {"mallctl", 3, 0, debug_mallctl},
    {"mallctl-str", 3, 0, debug_mallctl_str},
    {"log", 3, 3, debug_log},
    {"error", 3, 3, debug_error},
    {"protocol", 3, 3, debug_protocol},
    {"populate", 3, 5, debug_populate},
};

/* HELP: Redis's text for the subcommands shmkvd has, adapted where
 * shmkvd's meaning differs. */
static void debug_help(struct conn *c)
{
    static const char *const lines[] = {
        "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANGE-REPL-ID",
        "    Change the replication ID of the instance (INFO's master_replid).",
        "DIGEST",
        "    Output a hex signature representing the current DB content.",
        "DIGEST-VALUE <key> [<key> ...]",
        "    Output a hex signature of the values of all the specified keys.",
        "ERROR <string>",
        "    Return a Redis protocol error with <string> as message. Useful for clients",
        "    unit tests to simulate Redis errors.",
        "LOG <message>",
        "    Write <message> to the server log.",
        "MALLCTL <key> [<val>]",
        "    Get or set a malloc tuning integer.",
        "MALLCTL-STR <key> [<val>]",
        "    Get or set a malloc tuning string.",
        "OBJECT <key>",
        "    Show low level info about `key` and associated value.",
        "POPULATE <count> [<prefix>] [<size>]",
        "    Create <count> string keys named key:<num>. If <prefix> is specified then",
        "    it is used instead of the 'key' prefix.",
        "PROTOCOL <type>",
        "    Reply with a test value of the specified type. <type> can be: string,",
        "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
        "    true, false.",
        "RELOAD [option ...]",
        "    Write everything write-back holds into RocksDB; there is no RDB to load.",
        "    The options MERGE, NOFLUSH and NOSAVE are accepted and change nothing.",
        "SET-ACTIVE-EXPIRE <0|1>",
        "    Setting it to 0 disables expiring keys in background when they are not",
        "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
        "    default.",
        "QUICKLIST-PACKED-THRESHOLD <size>",
        "    Accepted as Redis checks it, with no effect: every list element is a",
        "    record of its own.",
        "SLEEP <seconds>",
        "    Stop the server for <seconds>. Decimals allowed.",
        "STRINGMATCH-TEST",
        "    Run a fuzz tester against the glob-style pattern matcher.",
        "LISTPACK <key>",
        "    Log the elements of a key whose OBJECT ENCODING is listpack.",
        "QUICKLIST <key> [<0|1>]",
        "    Log a list key's length; with 1, its elements too.",
        "HELP",
        "    Prints this help.",
    };
    cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
}

/* DEBUG subcommand [argument ...] */
void cmd_debug(struct conn *c)
{
    for (size_t i = 0; i < sizeof SUBS / sizeof SUBS[0]; i++) {
        if (cmd_arg_is(c, 1, SUBS[i].name) && c->argc >= SUBS[i].min &&
            (!SUBS[i].max || c->argc <= SUBS[i].max)) {
            SUBS[i].fn(c);
            return;
        }
    }
    resp_errorf(OUT(c),
                "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try DEBUG HELP.",
                (int)(c->argv[1].n < 128 ? c->argv[1].n : 128), c->argv[1].p);
}
