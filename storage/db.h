/*
 * db — the five Redis types on the storage engine.
 *
 * Layer: above stor_ and enc_, below the daemon's commands. A command handler
 * parses its arguments, calls one function here, and builds its reply from
 * the result; it never builds a storage key.
 *
 * Every operation reads through stor_get()/stor_it and its own pending writes,
 * collects its writes in one record set and commits it once: an operation is
 * all or nothing. A struct db is used by one thread at a time (the daemon's
 * executor); it holds that record set.
 *
 * Conventions
 *  - Keys are (dbi, key, klen): database number 0..255 and the user key bytes.
 *  - Return values: 0 or a positive count/flag as documented, KV_ENOTFOUND
 *    (key or field absent, when that is not a normal answer), KV_EWRONGTYPE,
 *    the number errors of kv_err.h, or a storage error (KV_ESTORAGE,
 *    KV_ENOSPC, KV_ECORRUPT; text in stor_errmsg()).
 *  - Returned single values (char **v) are malloc'd; the caller free()s them.
 *    Multi-value results go into a caller-initialised struct db_vec.
 *  - Expiry times are absolute Unix milliseconds; 0 means none. Expired keys
 *    read as absent everywhere.
 *  - Empty collections never exist: removing the last element removes the key.
 */
#ifndef SHMKV_DB_H
#define SHMKV_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "enc.h"
#include "kv_num.h"
#include "stor.h"

/* A byte string argument. */
struct db_str {
    const char *p;
    size_t n;
};

/* A growable list of byte strings, each with an optional score; the result
 * type of every multi-value read. An item may be nil (HMGET of an absent
 * field). Strings live in one arena: pointers from db_vec_ptr() stay valid
 * until the vec changes. */
struct db_vitem {
    size_t off, len; /* len == DB_NIL: a nil item */
    double score;
};
struct db_vec {
    struct db_vitem *items;
    size_t n, cap;
    char *buf;
    size_t used, capbuf;
};
#define DB_NIL ((size_t)-1)

void db_vec_init(struct db_vec *v);
void db_vec_destroy(struct db_vec *v); /* frees; v may be re-inited */
void db_vec_clear(struct db_vec *v);
void db_vec_push(struct db_vec *v, const char *p, size_t n, double score);
void db_vec_push_nil(struct db_vec *v);
static inline const char *db_vec_ptr(const struct db_vec *v, size_t i)
{
    return v->buf ? v->buf + v->items[i].off : ""; /* never NULL, even for "" */
}
static inline size_t db_vec_len(const struct db_vec *v, size_t i)
{
    return v->items[i].len;
}

/* ---- handle ---- */

struct db_opts {
    uint8_t hash_coding; /* enum enc_coding for new hashes */
    uint8_t set_coding;  /* enum enc_coding for new sets */
    uint64_t max_string; /* APPEND/SETRANGE limit (0: 512 MiB, Redis's default) */
    /* When a small collection lives inline in its meta record (Redis's
     * listpack and intset thresholds, same names): a hash while it has at
     * most hash_max_entries fields, none longer than hash_max_value, nor
     * any value; a set of integers while it has at most set_max_intset; a
     * sorted set while it has at most zset_max_entries members, none
     * longer than zset_max_value. 0 entries: never inline. New and growing
     * collections follow the values in force; none converts back. */
    uint64_t hash_max_entries, hash_max_value;
    uint64_t set_max_intset;
    uint64_t zset_max_entries, zset_max_value;
    /* A list while it would fit one quicklist node: list_max_size > 0
     * elements at most; -1 to -5, at most 4 KiB to 64 KiB of elements
     * (their bytes and lengths, as the meta record holds them); 0: never. */
    int64_t list_max_size;
};

/* The type layer over one open engine; opaque (db_int.h). */
struct db;

/* The hooks of a read-through cache of committed records (the daemon's shm
 * cache), consulted by every point read of the meta and sub families. get
 * returns DB_CACHE_MISS, or DB_CACHE_HIT with *v and *vn pointing at the
 * cached bytes until the cache next changes, or DB_CACHE_ABSENT. fill is
 * told what storage answered on a miss (v NULL: absent). peek is get's
 * answer without counting a read (the commit's own look-up of the keys it
 * writes: key counts, keyspace events). prefetch1 and prefetch2 (optional)
 * start loading what a look-up of (cf, k) reads, in two steps
 * (db_prefetch1, db_prefetch2): the first returns the cache's hash of its
 * key and that key's length, which the second is given; the second returns
 * 0 when the look-up will surely miss. Coherence is the on_commit hook's
 * job (db_set_on_commit). */
enum { DB_CACHE_MISS = 0, DB_CACHE_HIT = 1, DB_CACHE_ABSENT = 2 };
struct db_cache_ops {
    int (*get)(void *arg, int cf, const char *k, size_t kn, const char **v, size_t *vn);
    void (*fill)(void *arg, int cf, const char *k, size_t kn, const char *v, size_t vn);
    int (*peek)(void *arg, int cf, const char *k, size_t kn, const char **v, size_t *vn);
    uint64_t (*prefetch1)(void *arg, int cf, const char *k, size_t kn, size_t *ckn);
    int (*prefetch2)(void *arg, uint64_t hash, size_t ckn);
};

/* The type layer's own figures, for INFO storage. */
struct db_info {
    unsigned key_filters; /* Bloom filters in the key filter */
    uint64_t key_filter_bytes, key_filter_keys;
    bool key_filter_building; /* a rebuild is under way */
    uint64_t key_filter_rebuilds;
    bool counts_loaded;         /* the key counts came from the last shutdown's file */
    uint64_t defer_outstanding; /* writes whose prior state write-back still reads */
    uint64_t defer_total;       /* writes deferred so, since the start */
    unsigned pick_indexes;      /* collections with a random-pick index */
    size_t pick_bytes;
    uint64_t tidied;                       /* collections rewritten without their deletes */
    uint64_t inline_converted;             /* inline collections turned into records */
    uint64_t zrank_built;                  /* sorted-set rank indexes built */
    size_t zrank_copies, zrank_copy_bytes; /* their fences in memory */
    uint64_t zrank_copies_evicted;
    unsigned scache_collections; /* small collections kept for walks */
    size_t scache_bytes;
    uint64_t scache_hits, scache_fills;
};

/* For an on_commit hook: the (db, user key) a committed record belongs to.
 * 0, KV_ECORRUPT for a key of no known layout, or KV_EINVAL for an
 * expiry index entry (its meta record is in the same set). Range deletes
 * have no single key: check op->kind first. */
int db_record_key(const struct stor_batch *b, const struct stor_op *op, unsigned *dbi,
                  const char **key, size_t *klen);

/* Opens a type layer on an open engine, into *out (freed with db_free).
 * The caller keeps ownership of s, which must outlive it. A data folder
 * written before the expiry index existed gets its index built here, once
 * (a scan of every meta record). The key counts come from the file
 * db_save_counts left, if it still describes the data, else from a scan of
 * every meta record. 0 or a storage error (*out NULL). */
int db_create(struct db **out, struct stor *s, const struct db_opts *o);
void db_free(struct db *d); /* d may be NULL */
/* New options for the writes from now on (CONFIG SET). */
void db_set_opts(struct db *d, const struct db_opts *o);
/* Installs the cache's hooks (ops NULL: none); ops must outlive d. */
void db_set_cache(struct db *d, const struct db_cache_ops *ops, void *arg);
/* fn(arg, b, flags) is called after every successful commit with the
 * record set just applied: the one place that sees every change (WATCH,
 * blocked clients, caches). flags: DB_COMMIT_TIDY for db_tidy's rewrite,
 * which changes nothing a reply or a reader sees. */
enum { DB_COMMIT_TIDY = 1 };
void db_set_on_commit(struct db *d, void (*fn)(void *arg, const struct stor_batch *b, int flags),
                      void *arg);
/* Facts for keyspace events, gathered only when asked, into vectors the
 * caller owns (NULL: not asked; they must outlive the asking): each commit
 * then first looks up the committed meta record of every key whose meta
 * record it writes or deletes. created gets the keys a write finds absent
 * or expired; expired the keys whose committed record had expired, seen
 * for the last time (this commit replaces or deletes it). User key bytes,
 * the db index in the item's score; the caller empties them. */
void db_track_events(struct db *d, struct db_vec *created, struct db_vec *expired);
/* Keys whose meta record an operation read and found expired, gathered
 * while asked into seen (NULL: not asked; it must outlive the asking):
 * user key bytes, the db index in the score; the caller empties it. No
 * read of its own, unlike db_track_events: a replication stream's DELs
 * for the keys a command's result may depend on (a blind overwrite, which
 * reads nothing, needs none). */
void db_track_seen_expired(struct db *d, struct db_vec *seen);
/* While on, no key counts as expired to the operations (reads of keys,
 * writes that read them, EXPIRE and GETEX with a time already past,
 * which set it instead of deleting): a replica applying its primary's
 * commands sees keys as present until the primary's DEL, as Redis's
 * replicas do, whatever its own clock says. */
void db_pause_expiry(struct db *d, bool on);
/* A script's or a transaction's commits: those between db_group_begin and
 * the matching db_group_end survive a crash all together or not at all
 * (stor_group_begin; they nest). The caller sends no reply in between:
 * the group reaches the journal only at the first sync point after its
 * end. Without write-back, each commit writes RocksDB at once. */
void db_group_begin(struct db *d);
void db_group_end(struct db *d);
/* Records in the last committed record set (0: the last write changed
 * nothing). */
uint64_t db_last_commit_ops(const struct db *d);
/* Whether the last key a key context loaded was a hash, set or sorted set
 * (a hint: db_prefetch1f then pays off). */
bool db_coll_hint(const struct db *d);
void db_info(const struct db *d, struct db_info *out);
/* Running totals of key look-ups: a key's meta record read on a command's
 * behalf that found the key live (of any type), and that found it absent
 * or expired. The caller takes differences around a command: a read
 * command's are Redis's keyspace hits and misses. */
void db_lookups(const struct db *d, uint64_t *found, uint64_t *missing);
/* Sets the totals back to what db_lookups gave: a command that reads a key
 * again (a check of its type, then its records) looks it up once. */
void db_lookups_rewind(struct db *d, uint64_t found, uint64_t missing);
/* Called after each command, outside any record set: rewrites each hash,
 * set or sorted set that the command's walks noted (see DB_TIDY_MIN)
 * under a fresh version, in a record set of its own, so that later walks
 * step over none of those deletes; the old version's records go as a
 * DEL's do (the compaction filter drops them). Nothing a reader sees
 * changes, and the commit hook gets DB_COMMIT_TIDY. Also ends the command's
 * count of deletes stepped over. A failed rewrite (a full disk) is
 * dropped: the collection reads as before. */
void db_tidy(struct db *d);
/* At a clean shutdown, after the last write: waits until RocksDB has every
 * write, then saves the key counts and the key filter beside the data
 * (dir/key-counts), so that the next db_init need not count. 0, 1 when it
 * saved nothing because the filter is mostly deleted keys (better rebuilt),
 * or an error (nothing saved: the next start counts). */
int db_save_counts(struct db *d);
/* Builds the key filter again from the live keys, a slice of at most
 * budget meta records a call, once it holds mostly deleted ones (see
 * keyf_dead_slack): the daemon's cron calls it. *more: a slice is left.
 * 0 or a storage error (the rebuild then starts over later). */
int db_keyf_rebuild_step(struct db *d, uint64_t budget, bool *more);

/* A fresh collection version: (ms << 11) | counter, strictly increasing for
 * this handle even when the clock stalls or steps back. */
uint64_t db_version_next(struct db *d);

/* ---- keys ---- */

/* A hint that key's meta record is read or written soon: db_prefetch1
 * starts loading the cache's and the overlay's index entries for it into
 * the CPU cache, so their misses overlap other work, and keeps in *pf the
 * hashes it computed; db_prefetch2, given *pf a while later, what those
 * entries point at (the cache's record, the overlay's node). Change
 * nothing; any key, and any *pf, will do. */
struct db_pf {
    uint64_t ov_hash, cache_hash;
    size_t cache_klen;
    bool set; /* false: the key was too long to bother */
    /* db_prefetch1f's: the sub record of field, the same two steps */
    uint64_t sub_ov_hash, sub_cache_hash;
    size_t sub_cache_klen;
    bool sub_set;
};
void db_prefetch1(const struct db *d, unsigned dbi, const char *key, size_t klen, struct db_pf *pf);
/* db_prefetch1, and when key is the hash, set or sorted set kc_load last
 * found, the sub record of field in it too (HSET key field ..., SADD key
 * member, HGET, SISMEMBER ...). */
void db_prefetch1f(const struct db *d, unsigned dbi, const char *key, size_t klen,
                   const char *field, size_t flen, struct db_pf *pf);
void db_prefetch2(const struct db *d, const struct db_pf *pf);

/* *type = enum enc_type, ENC_TYPE_NONE when absent. */
int db_type(struct db *d, unsigned dbi, const char *key, size_t klen, int *type);
/* 1 present, 0 absent. */
int db_exists(struct db *d, unsigned dbi, const char *key, size_t klen);
/* EXISTS: how many of keys[0..n) are present, a key named twice counting
 * twice. Records neither cached nor pending are read from the engine a
 * batch at a time; the first `prefetched` keys were prefetched
 * (db_prefetch1). 0 or the first read error. */
int db_exists_many(struct db *d, unsigned dbi, const struct db_str *keys, size_t n,
                   size_t prefetched, uint64_t *count);
/* DEL: deletes those of keys[0..n) that are present, any type, each in
 * O(1), in one record set; deleted[i] = 1 where keys[i] was (a key named
 * twice is deleted once). Their records are read a batch at a time and fill
 * no cache; the first `prefetched` keys were prefetched (db_prefetch1).
 * 0, or an error and nothing deleted. */
int db_del_many(struct db *d, unsigned dbi, const struct db_str *keys, size_t n, size_t prefetched,
                unsigned char *deleted);
/* Deletes any type in O(1). 1 deleted, 0 absent. */
int db_del(struct db *d, unsigned dbi, const char *key, size_t klen);

enum { DB_EXP_NX = 1, DB_EXP_XX = 2, DB_EXP_GT = 4, DB_EXP_LT = 8 };
/* Sets the expiry to when_ms, subject to NX/XX/GT/LT (a key without expiry
 * counts as infinite TTL). A time not in the future deletes the key.
 * 1 applied, 2 applied by deleting the key, 0 not (absent key or condition
 * false). */
int db_expire(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t when_ms,
              int flags);
/* 1 removed an expiry, 0 key absent or had none. */
int db_persist(struct db *d, unsigned dbi, const char *key, size_t klen);
/* *expire_ms = absolute expiry or 0 for none; KV_ENOTFOUND when absent. */
int db_expiretime(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t *expire_ms);
/* Moves src to dst (replacing dst unless nx), keeping the expiry. 1 done,
 * 0 nx and dst exists, KV_ENOTFOUND src absent. O(size of src). */
int db_rename(struct db *d, unsigned dbi, const char *src, size_t srcn, const char *dst,
              size_t dstn, int nx);
/* Copies src (db sdb) to dst (db ddb). 1 copied, 0 dst exists and !replace,
 * KV_ENOTFOUND src absent. */
int db_copy(struct db *d, unsigned sdb, const char *src, size_t srcn, unsigned ddb, const char *dst,
            size_t dstn, int replace);
/* MOVE: key from db sdb to db ddb (sdb != ddb), keeping its expiry. 1 moved,
 * 0 already in ddb, KV_ENOTFOUND absent from sdb. O(size of the value). */
int db_move(struct db *d, unsigned sdb, unsigned ddb, const char *key, size_t klen);

/* DUMP's and RESTORE's view of a whole value. items: a string's value
 * (one item); a hash's field, value pairs; a set's members; a sorted set's
 * members, each with its score; a list's elements in order. */
struct db_value {
    int type; /* enum enc_type */
    uint64_t expire_ms;
    struct db_vec items;
};
/* Reads key's whole value into v (whose items the caller has inited and
 * destroys). 0, or KV_ENOTFOUND when absent. */
int db_dump(struct db *d, unsigned dbi, const char *key, size_t klen, struct db_value *v);
/* Every live key of database dbi with its value, as db_dump reads it, in
 * one walk of the key space instead of a look-up per key: fn(arg, key,
 * value) for each, the value valid only during the call. 0, fn's non-zero
 * return (which stops the walk), or a storage error. */
typedef int (*db_dump_fn)(void *arg, const char *key, size_t klen, const struct db_value *v);
int db_dump_each(struct db *d, unsigned dbi, db_dump_fn fn, void *arg);
/* Makes key hold v (a new version: whatever was there is garbage), with
 * v->expire_ms, in one record set. v is not empty, a hash's fields and a
 * set's or sorted set's members are distinct. 1 done, 0 key exists and
 * !replace. */
int db_restore(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_value *v,
               int replace);

/* One step of a cursor scan over db dbi's keys, in (slot, key) order.
 * cursor/cn: a position an earlier step returned (opaque bytes; NULL to
 * start). pattern may be NULL; type filters by enum enc_type (0: any).
 * Looks at about count keys, appends matches to out, and returns in *next
 * (malloc'd) the position to go on from, or NULL when the scan is
 * complete. A step's work is bounded (db.c, SCAN_CALL_US): over a key
 * space RocksDB still holds many tombstones of, it may return fewer keys
 * than count, or none, and a position that goes on. */
int db_scan(struct db *d, unsigned dbi, const char *cursor, size_t cn, const char *pat, size_t patn,
            int type, uint64_t count, struct db_vec *out, char **next, size_t *nextn);
/* A key chosen at random (not uniformly), KV_ENOTFOUND if db is empty. */
int db_randomkey(struct db *d, unsigned dbi, char **key, size_t *klen);
/* The keys of one db, and how many of them have an expiry, from the counts
 * each commit keeps: O(1). A key that expired counts until active expiry
 * (db_reap) or a write deletes it, as in Redis. */
/* Exact: resolves the writes whose prior state is still unknown first
 * (db_counts_settle). 0, or a storage error (the counts then leave those
 * writes out). */
int db_keycount(struct db *d, unsigned dbi, uint64_t *keys, uint64_t *expires);
/* Folds in the deferred writes the flusher resolved; with resolve, first
 * reads RocksDB for those it has not (O(their number)). 0 or a storage
 * error. */
int db_counts_settle(struct db *d, bool resolve);
/* The average time to live of db dbi's keys that have one, in ms as of
 * now_ms (0 when none does), from the sum of their expiries each commit
 * keeps beside the counts (seconds: within a second of exact). A key past
 * its expiry counts until it is reaped, as in the counts; the average is
 * never below 0. After db_keycount, which settles the counts. */
uint64_t db_avg_ttl(const struct db *d, unsigned dbi, uint64_t now_ms);
/* The keys of every db together, from the same counts. */
uint64_t db_keycount_total(const struct db *d);
/* The same counted by a scan of db dbi's meta records, O(keys): what the
 * kept counts must equal (for tests and checks). 0 or a storage error. */
int db_keycount_scan(struct db *d, unsigned dbi, uint64_t *keys, uint64_t *expires);
/* Active expiry: reads up to budget entries of the expiry index that are
 * due, in every db, and deletes in one record set each key whose expiry
 * they are (*reaped counts them) and the entries themselves (an entry whose
 * key was since deleted, persisted or given another expiry only goes).
 * *more: the budget ran out first. Costs nothing until an entry can be due
 * (d->expiry_next). */
int db_reap(struct db *d, uint64_t budget, uint64_t *reaped, bool *more);
/* O(1) range deletes of every record of db dbi, or of all dbs. */
int db_flushdb(struct db *d, unsigned dbi);
int db_flushall(struct db *d);

/* What OBJECT and INFO want to know about one key. */
struct db_keyinfo {
    int type;      /* enum enc_type */
    int coding;    /* enum enc_coding */
    uint64_t size; /* string length, or collection size (counted by scan if blind) */
    uint64_t expire_ms;
};
int db_keyinfo(struct db *d, unsigned dbi, const char *key, size_t klen, struct db_keyinfo *ki);

/* MEMORY USAGE: *bytes is what the key's records take as encoded (keys
 * and values of its meta record, expiry index entry, sub and score
 * records), before RocksDB's compression. Up to `samples` sub records (0:
 * all) are read per column family and the rest counted at their average,
 * as Redis samples a collection's elements. KV_ENOTFOUND when absent. */
int db_usage(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t samples,
             uint64_t *bytes);

/* ---- strings ---- */

int db_get(struct db *d, unsigned dbi, const char *key, size_t klen, char **v, size_t *vn);
/* MGET: db_get of each of keys[0..n), in order, each answer given to
 * each(arg, v, vn) (v NULL for a key that is absent or not a string, or
 * whose read failed; v is ours, valid during the call). Records neither
 * cached nor pending are read from the engine a batch at a time. The first
 * `prefetched` keys were prefetched (db_prefetch1/2); the others are a few
 * keys ahead of their look-ups. 0, or the first read error (each is still
 * called for every key). */
int db_mget(struct db *d, unsigned dbi, const struct db_str *keys, size_t n, size_t prefetched,
            void (*each)(void *arg, const char *v, size_t vn), void *arg);
/* SETBIT: sets (on = 1) or clears bit `bit` (0 is the first byte's most
 * significant) of a string, growing it with zero bytes; the expiry stays.
 * *old: the bit before. 1 written; 0 when the bit already had that value
 * (nothing written). KV_ETOOBIG past max_string bytes. */
int db_setbit(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t bit, int on,
              int *old);
enum { DB_BF_GET, DB_BF_SET, DB_BF_INCRBY };
enum { DB_BF_WRAP, DB_BF_SAT, DB_BF_FAIL };
/* One BITFIELD operation on a field of `bits` bits at bit `offset`. */
struct db_bfop {
    uint8_t op, sign, bits, overflow; /* DB_BF_GET.., 1 for iN, 1-64, DB_BF_WRAP.. */
    uint64_t offset;
    int64_t value; /* SET's value, INCRBY's increment */
};
/* BITFIELD: runs ops in order on key's string. out[i]: GET's value, SET's
 * old value, INCRBY's new one; nil[i] where FAIL refused a write. With any
 * SET or INCRBY the string first grows to hold the farthest field written
 * (created if absent); with GETs only nothing is written and an absent key
 * reads as zeros. 1 when a write grew the string or changed a field's value
 * (Redis's condition for its "setbit" event), else 0. */
int db_bitfield(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_bfop *ops,
                size_t n, int64_t *out, bool *nil);
enum { DB_BITOP_AND = 1, DB_BITOP_OR = 2, DB_BITOP_XOR = 3, DB_BITOP_NOT = 4 };
/* BITOP: dst = op over the strings of keys (absent ones are empty, shorter
 * ones zero-padded; NOT takes keys[0] only), with no expiry. An empty
 * result deletes dst. *len: the result's length. */
int db_bitop(struct db *d, unsigned dbi, int op, const char *dst, size_t dstn,
             const struct db_str *keys, size_t nkeys, uint64_t *len);

/* HyperLogLog sketches are strings in Redis's layout (hll.h). A string
 * that is not one is KV_ENOTHLL; a sparse one whose opcodes do not add
 * up, KV_EHLLCORRUPT. PFADD: adds the elements to key's sketch, made
 * empty when absent; *changed is 1 if it was made or a register grew (only
 * then is it written). */
int db_pfadd(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *elems,
             size_t n, int *changed);
/* PFCOUNT: the estimated number of distinct elements in the union of the
 * sketches at keys (absent keys are empty). One key's estimate is cached in
 * its header, written back when it was stale, as Redis does. */
int db_pfcount(struct db *d, unsigned dbi, const struct db_str *keys, size_t n, uint64_t *card);
/* PFMERGE: dst becomes the union of itself and srcs, dense if any of them
 * was; its expiry stays. */
int db_pfmerge(struct db *d, unsigned dbi, const char *dst, size_t dstn, const struct db_str *srcs,
               size_t n);

enum { DB_SET_NX = 1, DB_SET_XX = 2, DB_SET_KEEPTTL = 4, DB_SET_GET = 8 };
/* SET with its options. expire_ms applies unless KEEPTTL. With GET, *old
 * receives the previous value (NULL if none) and a non-string key is
 * KV_EWRONGTYPE with nothing written; without GET, any type is replaced.
 * 1 written, 0 NX/XX refused. */
int db_set(struct db *d, unsigned dbi, const char *key, size_t klen, const char *v, size_t vn,
           uint64_t expire_ms, int flags, char **old, size_t *oldn);
int db_getdel(struct db *d, unsigned dbi, const char *key, size_t klen, char **v, size_t *vn);
enum { DB_GETEX_KEEP = 0, DB_GETEX_SET = 1, DB_GETEX_PERSIST = 2 };
/* GETEX: *v is the value (malloc'd). 0: the expiry is unchanged; 1: it was
 * set (SET) or removed (PERSIST); 2: a time not in the future deleted the
 * key. */
int db_getex(struct db *d, unsigned dbi, const char *key, size_t klen, int mode, uint64_t expire_ms,
             char **v, size_t *vn);
/* kv: 2*npairs strings, key then value. nx: MSETNX (all or none).
 * 1 written, 0 nx and some key existed. */
int db_mset(struct db *d, unsigned dbi, const struct db_str *kv, size_t npairs, int nx);
int db_append(struct db *d, unsigned dbi, const char *key, size_t klen, const char *v, size_t vn,
              uint64_t *newlen);
/* 0 with *len = 0 when absent. */
int db_strlen(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t *len);
int db_incrby(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t delta,
              int64_t *out);
/* The new value is written as Redis does (%.17Lf, trailing zeros cut) into
 * out (at least KV_LDSTR_MAX bytes); *outn its length. */
int db_incrbyfloat(struct db *d, unsigned dbi, const char *key, size_t klen, long double delta,
                   char *out, size_t *outn);
/* Redis GETRANGE: inclusive, negative offsets from the end. An empty result
 * is *v = malloc'd empty string. */
int db_getrange(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t start,
                int64_t end, char **v, size_t *vn);
int db_setrange(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t off,
                const char *v, size_t vn, uint64_t *newlen);

/* ---- hashes ---- */

/* fv: 2*npairs strings. nx: HSETNX semantics (set only absent fields).
 * *added: fields created (BLIND hashes: fields given, deduplicated). */
int db_hset(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *fv,
            size_t npairs, int nx, uint64_t *added);
/* KV_ENOTFOUND when the key or field is absent. */
int db_hget(struct db *d, unsigned dbi, const char *key, size_t klen, const char *f, size_t fn,
            char **v, size_t *vn);
/* One item per field, nil where absent (all nil for an absent key). */
int db_hmget(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *f,
             size_t n, struct db_vec *out);
int db_hdel(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *f,
            size_t n, uint64_t *removed);
int db_hlen(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t *n);
int db_hexists(struct db *d, unsigned dbi, const char *key, size_t klen, const char *f, size_t fn);
int db_hstrlen(struct db *d, unsigned dbi, const char *key, size_t klen, const char *f, size_t fn,
               uint64_t *n);
enum { DB_H_FIELDS = 1, DB_H_VALUES = 2, DB_H_BOTH = 3 };
/* Fields and/or values in field byte order (pairs when DB_H_BOTH). */
int db_hgetall(struct db *d, unsigned dbi, const char *key, size_t klen, int what,
               struct db_vec *out);
int db_hincrby(struct db *d, unsigned dbi, const char *key, size_t klen, const char *f, size_t fn,
               int64_t delta, int64_t *out);
int db_hincrbyfloat(struct db *d, unsigned dbi, const char *key, size_t klen, const char *f,
                    size_t fn, long double delta, char *out, size_t *outn);
/* HRANDFIELD with a count: count > 0 distinct fields (at most all), count < 0
 * |count| fields with repetition. Pairs when withvalues. */
int db_hrandfield(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t count,
                  int withvalues, struct db_vec *out);

/* HSCAN/SSCAN/ZSCAN: like db_scan, over one collection. Items: field,value
 * pairs (hash), members (set), member,score-string pairs (zset). */
int db_cscan(struct db *d, unsigned dbi, const char *key, size_t klen, int type, const char *cursor,
             size_t cn, const char *pat, size_t patn, uint64_t count, struct db_vec *out,
             char **next, size_t *nextn);

/* ---- sets ---- */

int db_sadd(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *m,
            size_t n, uint64_t *added);
int db_srem(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *m,
            size_t n, uint64_t *removed);
int db_smembers(struct db *d, unsigned dbi, const char *key, size_t klen, struct db_vec *out);
int db_sismember(struct db *d, unsigned dbi, const char *key, size_t klen, const char *m,
                 size_t mn);
/* SMISMEMBER: is[i] = 1 where m[i] is a member, else 0 (all 0 for an
 * absent key). Records neither cached nor pending are read from the engine
 * a batch at a time. 0, KV_EWRONGTYPE or the first read error. */
int db_smismember(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *m,
                  size_t n, unsigned char *is);
int db_scard(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t *n);
/* Removes and returns up to count random members. */
int db_spop(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t count,
            struct db_vec *out);
/* count > 0 distinct, count < 0 with repetition (as HRANDFIELD). */
int db_srandmember(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t count,
                   struct db_vec *out);
/* 1 moved, 0 not a member of src. */
int db_smove(struct db *d, unsigned dbi, const char *src, size_t srcn, const char *dst, size_t dstn,
             const char *m, size_t mn);
enum { DB_SINTER = 1, DB_SUNION = 2, DB_SDIFF = 3 };
/* Set algebra over keys (absent keys are empty sets). limit: stop after that
 * many results (0: no limit; SINTERCARD). Results in byte order. */
int db_setop(struct db *d, unsigned dbi, int op, const struct db_str *keys, size_t nkeys,
             uint64_t limit, struct db_vec *out);
/* The same, stored into dst (replacing it; an empty result deletes dst). */
int db_setop_store(struct db *d, unsigned dbi, int op, const char *dst, size_t dstn,
                   const struct db_str *keys, size_t nkeys, uint64_t *card);

/* ---- sorted sets ---- */

enum {
    DB_ZADD_NX = 1,
    DB_ZADD_XX = 2,
    DB_ZADD_GT = 4,
    DB_ZADD_LT = 8,
    DB_ZADD_CH = 16,
    DB_ZADD_INCR = 32,
};
/* ZADD. *count: added members (or added+changed with CH). With INCR (n must
 * be 1): *incr_out receives the new score and the return is 1, or 0 when
 * NX/XX/GT/LT refused (Redis replies nil). KV_EZNAN when INCR makes NaN. */
int db_zadd(struct db *d, unsigned dbi, const char *key, size_t klen, const double *scores,
            const struct db_str *m, size_t n, int flags, uint64_t *count, double *incr_out);
int db_zrem(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *m,
            size_t n, uint64_t *removed);
/* KV_ENOTFOUND when key or member is absent. */
int db_zscore(struct db *d, unsigned dbi, const char *key, size_t klen, const char *m, size_t mn,
              double *score);
/* ZMSCORE: score[i] = m[i]'s score, or NaN where it is not a member (a
 * stored score is never NaN; all NaN for an absent key). Batched as
 * db_smismember. 0, KV_EWRONGTYPE or the first read error. */
int db_zmscore(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *m,
               size_t n, double *score);
int db_zcard(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t *n);

enum { DB_ZBY_RANK = 0, DB_ZBY_SCORE = 1, DB_ZBY_LEX = 2 };
/* A lex bound: inf = -1 for "-", +1 for "+", 0 for a member (ex: exclusive). */
struct db_lexb {
    int inf, ex;
    struct db_str v;
};
/* A range over a sorted set, as the ZRANGE family spells it. For every kind
 * min/max (score, lex) are the low and high ends, whatever rev says; rank
 * start/stop index the result order (reversed when rev). */
struct db_zspec {
    int by, rev;
    int64_t start, stop;
    double min, max;
    int minex, maxex;
    struct db_lexb lmin, lmax;
    int64_t offset, limit; /* LIMIT; limit < 0: no limit */
};
/* Members in range, each with its score. */
int db_zrange(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_zspec *sp,
              struct db_vec *out);
/* ZRANGESTORE: the range of src stored into dst; *n its size. */
int db_zrangestore(struct db *d, unsigned dbi, const char *dst, size_t dstn, const char *src,
                   size_t srcn, const struct db_zspec *sp, uint64_t *n);
/* ZCOUNT (BY_SCORE) / ZLEXCOUNT (BY_LEX). */
int db_zcount(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_zspec *sp,
              uint64_t *n);
/* Calls fn for each member scored in each range [ranges[2i], ranges[2i+1])
 * of n, range by range, in score order (ties by member) within a range,
 * until fn returns nonzero; m is valid during the call only. An absent key
 * calls nothing; another type is KV_EWRONGTYPE. */
typedef int db_zeach_fn(const char *m, size_t mn, double score, void *arg);
int db_zeach_score(struct db *d, unsigned dbi, const char *key, size_t klen, const double *ranges,
                   size_t n, db_zeach_fn *fn, void *arg);
/* Replaces dst with the members and scores of v (distinct members); an
 * empty v deletes dst. */
int db_zstore(struct db *d, unsigned dbi, const char *dst, size_t dstn, const struct db_vec *v);
/* KV_ENOTFOUND when key or member is absent. */
int db_zrank(struct db *d, unsigned dbi, const char *key, size_t klen, const char *m, size_t mn,
             int rev, uint64_t *rank);
/* ZREMRANGEBYRANK/SCORE/LEX. */
int db_zremrange(struct db *d, unsigned dbi, const char *key, size_t klen,
                 const struct db_zspec *sp, uint64_t *removed);
/* ZPOPMIN (max = 0) / ZPOPMAX: up to count members with scores. */
int db_zpop(struct db *d, unsigned dbi, const char *key, size_t klen, int max, uint64_t count,
            struct db_vec *out);
int db_zrandmember(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t count,
                   struct db_vec *out);
enum { DB_ZUNION = 1, DB_ZINTER = 2, DB_ZDIFF = 3 };
enum { DB_AGG_SUM = 0, DB_AGG_MIN = 1, DB_AGG_MAX = 2 };
/* ZUNION/ZINTER/ZDIFF over sorted sets and sets (a set member scores 1).
 * weights may be NULL (all 1). Result ordered by score, then member. */
int db_zsetop(struct db *d, unsigned dbi, int op, const struct db_str *keys, size_t nkeys,
              const double *weights, int agg, struct db_vec *out);
int db_zsetop_store(struct db *d, unsigned dbi, int op, const char *dst, size_t dstn,
                    const struct db_str *keys, size_t nkeys, const double *weights, int agg,
                    uint64_t *card);

/* ---- lists ---- */

/* LPUSH/RPUSH (left = 1/0); xx: LPUSHX/RPUSHX. *len: the new length (0 when
 * xx and absent). */
int db_push(struct db *d, unsigned dbi, const char *key, size_t klen, int left,
            const struct db_str *v, size_t n, int xx, uint64_t *len);
/* Pops up to count elements from one end. KV_ENOTFOUND when absent. */
int db_pop(struct db *d, unsigned dbi, const char *key, size_t klen, int left, uint64_t count,
           struct db_vec *out);
int db_llen(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t *n);
/* SORT ... STORE: dst becomes a list of v's items (nil as ""), with no
 * expiry, whatever it held; an empty v deletes dst. */
int db_lstore(struct db *d, unsigned dbi, const char *dst, size_t dstn, const struct db_vec *v);
int db_lrange(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t start, int64_t stop,
              struct db_vec *out);
/* KV_ENOTFOUND when absent or out of range. */
int db_lindex(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t idx, char **v,
              size_t *vn);
/* KV_ENOTFOUND: no such key; KV_ERANGE: index out of range. */
int db_lset(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t idx, const char *v,
            size_t vn);
int db_lrem(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t count, const char *v,
            size_t vn, uint64_t *removed);
/* *len: new length, -1 pivot not found, 0 key absent. */
int db_linsert(struct db *d, unsigned dbi, const char *key, size_t klen, int before,
               const char *pivot, size_t pn, const char *v, size_t vn, int64_t *len);
/* 1 trimmed (the key goes if nothing is left), 0 key absent. */
int db_ltrim(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t start, int64_t stop);
/* LPOS: positions of elem. rank != 0 (negative: from the tail), count 0 =
 * all, maxlen 0 = whole list. *pos is malloc'd (NULL when none). */
int db_lpos(struct db *d, unsigned dbi, const char *key, size_t klen, const char *e, size_t en,
            int64_t rank, uint64_t count, uint64_t maxlen, int64_t **pos, size_t *npos);
/* LMOVE/RPOPLPUSH. KV_ENOTFOUND when src is absent. */
int db_lmove(struct db *d, unsigned dbi, const char *src, size_t srcn, const char *dst, size_t dstn,
             int from_left, int to_left, char **v, size_t *vn);

/* ---- the daemon's own records ---- */

/* A record of the daemon's beside the data (FUNCTION's libraries), by a
 * short name: the meta family's key ff ff ff | name, which no user key's
 * record has (its slot would be ffff) and no flush reaches. Written
 * through the commit path, so journaled and replayed as data is. get: 0
 * with a malloc'd *v, or KV_ENOTFOUND. put with v NULL deletes it. */
int db_aux_get(struct db *d, const char *name, char **v, size_t *vn);
int db_aux_put(struct db *d, const char *name, const char *v, size_t vn);

/* ---- helpers shared with the daemon ---- */

/* Redis glob matching (*, ?, [abc], [^a-z], \x), optionally case-folded. */
int db_glob_match(const char *pat, size_t patn, const char *s, size_t sn, int nocase);

#endif
