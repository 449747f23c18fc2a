/*
 * db_int — internals shared by the db_*.c type files; not part of the API.
 *
 * A type operation runs as: db_begin() → load the key's meta record into a
 * key context (struct db_kc) → read sub records and stage writes in d->b →
 * db_commit(). Reads go through db_rget(), which sees the operation's own
 * staged writes first, so composite operations (LMOVE, SMOVE, RENAME) can be
 * built from smaller ones inside one record set.
 */
#ifndef SHMKV_DB_INT_H
#define SHMKV_DB_INT_H

#include <stdbool.h>
#include <string.h>

#include "db.h"
#include "kv_crc.h"
#include "kv_mem.h"

/* A byte buffer with inline room for typical keys. */
struct db_buf {
    char *p;
    size_t n, cap;
    char inl[112];
};

static inline void dbb_init(struct db_buf *b)
{
    b->p = b->inl;
    b->n = 0;
    b->cap = sizeof b->inl;
}

static inline void dbb_free(struct db_buf *b)
{
    if (b->p != b->inl)
        free(b->p);
    dbb_init(b);
}

static inline void dbb_reserve(struct db_buf *b, size_t need)
{
    if (need <= b->cap)
        return;
    size_t cap = b->cap * 2 > need ? b->cap * 2 : need;
    if (b->p == b->inl) {
        char *p = kv_xmalloc(cap);
        memcpy(p, b->inl, b->n);
        b->p = p;
    } else {
        b->p = kv_xrealloc(b->p, cap);
    }
    b->cap = cap;
}

static inline void dbb_append(struct db_buf *b, const void *p, size_t n)
{
    dbb_reserve(b, b->n + n);
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

/* A Bloom filter over every meta key that may exist (db_keyf.c): a commit
 * asks it whether a blind write's key is new before it asks storage. It
 * never forgets a key, and grows by adding filters of twice the size.
 * DB_KEYF_K bits are set per key; the first filter db_init makes holds at
 * least DB_KEYF_FIRST keys (2 MiB). */
enum { DB_KEYF_MAX = 24, DB_KEYF_K = 7, DB_KEYF_FIRST = 1 << 20 };
struct db_keyf_one {
    uint64_t *bits; /* blocks of 512 bits, each a cache line */
    uint64_t blocks, cap, keys;
};
struct db_keyf {
    unsigned n;
    uint64_t first_cap;
    struct db_keyf_one f[DB_KEYF_MAX];
};
/* Empties kf; its first filter will hold about cap keys. */
void db_keyf_init(struct db_keyf *kf, uint64_t cap);
void db_keyf_destroy(struct db_keyf *kf); /* frees; kf may be re-inited */
/* h: the key's wb_ov_key_hash (stor_op.hash for a record set's op). */
void db_keyf_add(struct db_keyf *kf, uint64_t h);
/* false: the key was never added; true: it may have been. */
bool db_keyf_may(const struct db_keyf *kf, uint64_t h);
/* Its memory, and how many keys were added (INFO storage). */
void db_keyf_usage(const struct db_keyf *kf, uint64_t *bytes, uint64_t *keys);
/* Starts loading the blocks db_keyf_may(kf, h) reads. */
void db_keyf_prefetch(const struct db_keyf *kf, uint64_t h);
/* Writes kf's shape and bits to fd, continuing *crc (kv_crc32c) over the
 * bytes written: 0 or -errno. */
int db_keyf_save(const struct db_keyf *kf, int fd, uint32_t *crc);
/* Reads what db_keyf_save wrote into kf, emptied first, continuing *crc:
 * 0, or -1 when fd does not hold a filter this build can use (kf empty). */
int db_keyf_load(struct db_keyf *kf, int fd, uint32_t *crc);

/* Pick indexes (db_pick.c): for a few large collections that random
 * picks were asked of, pivot members cutting the members into buckets of
 * at most DB_PICK_BMAX, so that SRANDMEMBER, SPOP, HRANDFIELD and
 * ZRANDMEMBER read O(BMAX) members a pick instead of all of them. Memory
 * only; kept for at most DB_PICK_MAX collections and DB_PICK_BYTES. */
enum {
    DB_PICK_MIN = 1024, /* smaller collections are read whole */
    DB_PICK_B = 64,     /* members per bucket when cut */
    DB_PICK_BMAX = 128, /* the most a bucket may hold at a pick */
    DB_PICK_MAX = 16,
    DB_PICK_BYTES = 64 << 20
};
struct db_pick_ix {
    unsigned dbi;
    char *key;
    size_t klen;
    uint64_t version; /* the collection's: a new one is another collection */
    size_t k, cap;    /* buckets, and room for them */
    char **piv;       /* piv[i]: bucket i's first member bound (piv[0] unused) */
    uint32_t *pivn;
    uint32_t *ub; /* ub[i] >= the members in bucket i */
    size_t pivbytes;
    bool over;     /* some ub[i] > DB_PICK_BMAX */
    uint64_t used; /* for dropping the least recently used */
};
struct db_picks {
    struct db_pick_ix *ix[DB_PICK_MAX];
    unsigned n;
    uint64_t tick;
    size_t bytes;
    size_t limit; /* what they may take; 0: DB_PICK_BYTES (tests lower it) */
};

/* Score-index edges (db_zedge.c): for a sorted set whose score records an
 * iteration walked from either end, the first and last live record it met.
 * Nothing before the first or after the last is alive, only what removed
 * and popped members left, which RocksDB keeps until compaction; so the
 * next walk starts at them instead of stepping over all of that again
 * (ZPOPMIN as a job queue's pop). Every commit that writes a score record
 * outside them moves them out to it. */
#define DB_ZEDGE_N 64
struct db_zedge {
    uint64_t h;          /* the collection prefix's hash; 0: an empty entry */
    char *pre, *lo, *hi; /* lo, hi: NULL until learned */
    size_t pn, lon, hin;
};
struct db_zedges {
    struct db_zedge e[DB_ZEDGE_N];
    unsigned n; /* entries in use: 0 spares commits the look-up */
};

/* Rank indexes (db_zrix.c) of the sorted sets the record set in progress
 * changes: their score prefixes, and the changes db_zrix_before found. */
struct db_zrix_set;
struct db_zrixes {
    struct db_zrix_set *e;
    size_t n, cap;
    struct stor_batch rb; /* one change's records at a time */
};

/* Rank fences in memory (db_zrm.c): for each sorted set whose rank index
 * was read lately, its fence records, the truth being RocksDB's. */
struct db_zrm;
struct db_zrms {
    struct db_zrm **m;
    size_t n, cap;
    size_t bytes;
    uint64_t tick, evicted;
};
#define DB_ZRM_BLOCK 512         /* fences a block holds */
#define DB_ZRM_BYTES (64u << 20) /* what all sets' fences may take */
#define DB_ZRM_SETS 1024         /* ... and how many sets (looked up in turn) */

/* db_scache.c: small collections' records kept for walks. */
#define DB_SCACHE_SLOTS 2048u /* a power of two */
#define DB_SCACHE_MEMBERS 64  /* kept when first walked */
#define DB_SCACHE_BYTES 4096  /* ... their key and value bytes, a family */
#define DB_SCACHE_LARGE 1024  /* kept once walks have read as many */
#define DB_SCACHE_LARGE_BYTES 65536
#define DB_SCACHE_LIST_MAX 1024     /* elements in a list's window */
#define DB_SCACHE_LIST_BYTES 65536  /* their key and value bytes */
#define DB_SCACHE_TOTAL (16u << 20) /* bytes of all entries together */
struct stor_snap;
struct db_scache {
    struct db_scache_e {
        unsigned dbi;
        uint64_t version;
        char *key;
        size_t klen;
        struct stor_snap *snap[2]; /* its sub and score records, each once walked;
                                    * a list's window in snap[0] */
        uint64_t wlo;              /* a list window's first position */
        uint64_t walked[2];        /* records read by walks of each family meanwhile */
        unsigned big;              /* bit per family: found over the limits */
        unsigned lazy;             /* bit per family: over DB_SCACHE_BYTES, kept as a large one */
    } * e;                         /* DB_SCACHE_SLOTS of them, from the first use; key NULL: free */
    unsigned n;                    /* slots in use */
    unsigned hand;                 /* the next slot to drop when over DB_SCACHE_TOTAL */
    size_t bytes;
    uint64_t hits, fills;
};

/* db_inl.c: the INLINE collections the command in progress has open. */
struct db_inl;
struct db_inls {
    struct db_inl **e;
    size_t n, cap;
};

/* db_tidy.c: how many collections one command may note for a rewrite. */
#define DB_TIDY_NOTES 4
/* A walk notes its collection once it stepped over at least this many
 * deletes, and DB_TIDY_RATIO times as many as the collection holds, if it
 * holds no more than DB_TIDY_MAX_SIZE (one record set copies them all). */
#define DB_TIDY_MIN 1024
#define DB_TIDY_RATIO 4
#define DB_TIDY_MAX_SIZE 16384
/* A larger one whose walks in one command stepped over this many, and a
 * quarter of its size, has its records' range compacted instead. */
#define DB_COMPACT_MIN 65536

struct db {
    struct stor *s;
    struct db_opts o;
    struct stor_batch b; /* the record set of the operation in progress */
    uint64_t last_version;
    uint32_t counter;
    uint64_t rng;
    uint64_t last_commit_ops; /* records in the last committed record set */
    /* Key look-ups (a meta record read for a command, kc_read and
     * db_metas) that found a live key, and that found none (db_lookups). */
    uint64_t looked_found, looked_missing;
    /* No expiry index entry is due before this time (ms): active expiry
     * has nothing to read until then. Lowered by every indexed write. */
    uint64_t expiry_next;
    /* Per db: no live expiry index entry lies below this one, so active
     * expiry starts there rather than at the db's first entry, where the
     * tombstones of every entry it deleted lie until compaction: the key
     * of the last entry it deleted (kn bytes), or when kn is 0 the first
     * entry of time exp. Raised by db_reap, lowered by every indexed write
     * at or below its time. */
    struct db_efloor {
        uint64_t exp;
        char *key;
        size_t kn, cap;
    } efloor[256];
    /* Called after every successful commit with the record set just applied:
     * the one place that sees every change (WATCH, blocked clients, caches). */
    void (*on_commit)(void *arg, const struct stor_batch *b, int flags);
    void *on_commit_arg;
    /* The read-through cache's hooks (db_set_cache; all NULL: none),
     * copied in: a read tests d->cache.get with no pointer to chase. */
    struct db_cache_ops cache;
    void *cache_arg;
    /* Where keyspace events' facts go (db_track_events): NULL, not asked. */
    struct db_vec *created, *expired;
    struct db_vec *seen_expired; /* db_track_seen_expired */
    bool expiry_paused;          /* db_pause_expiry */
    /* Meta records in each db, and how many of them carry an expiry:
     * counted by one scan in db_init, then kept by every commit. A key
     * counts until its record is deleted, expired or not, as Redis counts
     * one until it is reaped (DBSIZE, INFO keyspace). */
    uint64_t nkeys[ENC_DB_MAX + 1], nexpires[ENC_DB_MAX + 1];
    /* The sum of those expiries, in seconds (INFO keyspace's avg_ttl). */
    int64_t expsum[ENC_DB_MAX + 1];
    /* A write that would need a RocksDB read to learn whether its key
     * existed (not in the overlay nor the cache, maybe in the key filter)
     * leaves that to the write-back instead (stor_batch_defer): its
     * resolver thread or the flusher reads RocksDB before the record set
     * is written, off the event loop. defer_out: such writes of each db
     * not yet folded into nkeys, defer_total their sum (the executor's).
     * res_*: what resolution found, under stor's resolver lock;
     * db_counts_settle folds them in. */
    uint64_t defer_out[ENC_DB_MAX + 1], defer_total;
    /* What the key counts would read again: the committed records a delete
     * of many keys read itself (db_del_many), each a live record that op
     * `op` of the record set deletes, in op order. Emptied by db_begin and
     * by every commit. */
    struct db_prior {
        size_t op;
        uint64_t exp;
    } * priors;
    size_t npriors, cappriors;
    uint64_t defer_done; /* writes deferred since db_init (INFO storage) */
    int64_t res_keys[ENC_DB_MAX + 1], res_exp[ENC_DB_MAX + 1], res_expsum[ENC_DB_MAX + 1];
    uint64_t res_done[ENC_DB_MAX + 1];
    bool res_any;
    struct db_keyf keyf; /* every meta key of every db that may exist */
    bool counts_loaded;  /* db_init took them from a clean shutdown's file */
    /* A filter with more than 2 × live keys + this many added is mostly
     * deleted keys: db_save_counts does not save it, db_keyf_rebuild_step
     * builds it again (0: DB_KEYF_FIRST; tests lower it). */
    uint64_t keyf_dead_slack;
    /* The filter being built again from the live keys while keyf_building:
     * the keys before the position below are in it, and every key a
     * commit creates meanwhile goes into both. */
    struct db_keyf keyf_next;
    bool keyf_building;
    unsigned keyf_db, keyf_slot; /* the db, and the first slot of the range, being read */
    char *keyf_cursor;           /* the last key taken within that range, or NULL */
    size_t keyf_cursorn;
    uint64_t keyf_rebuilds; /* completed, for INFO storage */
    /* The last hash, set or sorted set kc_load found (a short key only):
     * db_prefetch1f builds the sub key of a field of it from these without
     * a look-up. Only a hint: stale after any write to that key. */
    struct {
        unsigned dbi;
        uint16_t slot;
        uint8_t klen;
        bool set;
        uint64_t version;
        char key[64];
    } last_coll;
    struct db_picks picks;
    struct db_zedges zedges;
    struct db_zrixes zrix;
    struct db_zrms zrms;
    unsigned zrm_block;   /* 0: DB_ZRM_BLOCK (tests lower it) */
    size_t zrm_max_bytes; /* 0: DB_ZRM_BYTES */
    uint64_t zrix_built;  /* indexes built, for INFO storage */
    uint64_t zrix_stale;  /* ... of them because counts did not add up */
    /* The smallest set given an index, and the shortest walk of a rank
     * range that uses one (0: DB_ZRIX_MIN, DB_ZRIX_WALK; tests lower them). */
    uint64_t zrix_min, zrix_walk;
    unsigned zrix_bits; /* a level per this many hash bits (0: 5; tests lower it) */
    struct db_inls inls;
    uint64_t inl_converted; /* inline collections turned into records (INFO storage) */
    struct db_scache scache;
    uint64_t scache_max; /* members a collection kept when first walked may have
                          * (DB_SCACHE_MEMBERS; 0: nothing is kept) */
    /* db_tidy.c: collections whose walks stepped over far more deletes
     * than they hold members. watching: RocksDB counts for this command's
     * walks (stor_skips_watch). tidying: db_tidy's own walks and commit,
     * whose record set changes no reply (on_commit may tell). */
    bool watching, tidying;
    unsigned ntidy;
    struct db_tidy_note {
        unsigned dbi;
        uint64_t version;
        char *key;
        size_t klen;
    } tidy[DB_TIDY_NOTES];
    uint64_t tidied; /* collections rewritten, for INFO storage */
};

/* Binds a type layer to an open engine in d, which the caller provides
 * (db_create allocates it; tests embed one). As db_create otherwise. */
int db_init(struct db *d, struct stor *s, const struct db_opts *o);
void db_destroy(struct db *d);

/* A key being operated on: its encoded meta key, and its meta record as read
 * (m.type == ENC_TYPE_NONE when absent or expired). */
struct db_kc {
    unsigned dbi;
    const char *key;
    size_t klen;
    uint16_t slot;
    struct db_buf mk; /* meta key */
    struct db_buf sk; /* scratch: sub/score keys of the current version */
    size_t plen;      /* length of the sub-key prefix in sk (0: not built) */
    char *raw;        /* the meta value bytes m points into */
    size_t rawn;
    struct enc_meta m;
    bool created;       /* kc_open_write made a fresh key: its meta must be written */
    struct db *wd;      /* set once kc_iter walks it: kc_free ends the walk's count */
    uint64_t skip0;     /* stor_skips() when the count began */
    struct db_inl *inl; /* an INLINE collection's records (db_inl.c), while open */
    struct db *sd;      /* set when its walk counts toward a copy (db_scache_walked) */
    int sci;            /* ... of that family (0 sub, 1 score) */
    uint64_t move0;     /* stor_moves() when that count began */
};

void db_begin(struct db *d);
int db_commit(struct db *d);

/* Point read through the pending record set, then the engine. *v is malloc'd. */
int db_rget(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn);
/* As db_rget, for a record the caller is about to delete (a popped list
 * element): a cache miss fills nothing. */
int db_rtake(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn);
/* As db_rget, for a record the caller puts if it is absent (a member ZADD
 * adds): an absence is not cached, since the put fills the cache at the
 * commit. */
int db_rget_adding(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn);
/* Up to DB_MANY point reads of one family at once (db_rget_many): the
 * caller sets k[], kn[]; the answers come in rc[] (0, KV_ENOTFOUND or an
 * error) and, on 0, v[] (malloc'd) and vn[]. */
#define DB_MANY 64
struct db_many {
    const char *k[DB_MANY];
    size_t kn[DB_MANY], vn[DB_MANY];
    char *v[DB_MANY];
    int rc[DB_MANY];
};
/* The n (at most DB_MANY) reads of r: db_rget each (db_rtake each unless
 * fill), with what neither the pending set nor the cache holds read from
 * the engine in one batch (stor_get_many). Keys from index ahead on were
 * not prefetched (db_prefetch1): their look-ups' first lines are asked for
 * a few keys ahead. Keys may repeat. At most cap bytes of a pending or
 * cached value are copied (r->vn says how many), for a caller that reads
 * only a meta record's header (ENC_META_HDR); the engine's come whole. */
void db_rget_many(struct db *d, int cf, struct db_many *r, size_t n, bool fill, size_t ahead,
                  size_t cap);
/* Starts loading the first lines of a look-up or write of (cf, k): the
 * overlay's hash slot, the shm cache's bucket. Changes nothing. */
void db_prefetch_key(const struct db *d, int cf, const char *k, size_t kn);
/* Reads the meta records of keys[0..n) of db dbi, DB_MANY at a time
 * through db_rget_many (filling the cache), and calls each(arg, i, m) for
 * every key in order: m is its record, valid during the call, or NULL where
 * the key is absent, expired or its read failed. The first `prefetched`
 * keys were prefetched (db_prefetch1). peek: m holds only the header's
 * type and expiry (enc_meta_peek), for a caller that asks only which keys
 * are live; a cached value is then not copied past its header. Returns 0
 * or the first error. */
int db_metas(struct db *d, unsigned dbi, const struct db_str *keys, size_t n, size_t prefetched,
             bool peek, void (*each)(void *arg, size_t i, const struct enc_meta *m), void *arg);
/* 1 if present, 0 if absent, <0 error; no copy kept. What the engine
 * answers fills the cache, an absence only if fill_absent: a write path
 * that puts the key when it is absent passes false (as db_rget_adding). */
int db_rhas(struct db *d, int cf, const char *k, size_t kn, bool fill_absent);

/* Puts fields into the open hash or set kc, opened with kc_open_write:
 * items holds n field, value pairs (pairs: HSET) or n members (a set's
 * records hold no value). A field present is replaced, or with nx left
 * alone (HSETNX; SADD passes nx). *added counts the new ones (for a blind
 * collection, those this command had not written yet); the meta record is
 * put when the key is new or its size changed. 0 or a read error. */
int kc_put_fields(struct db *d, struct db_kc *kc, const struct db_str *items, size_t n, bool pairs,
                  bool nx, uint64_t *added);
/* Sets kc up for key without reading anything (m.type = NONE). */
void kc_blank(struct db_kc *kc, unsigned dbi, const char *key, size_t klen);
/* Loads a key's meta record. 0 (m.type tells presence) or an error. */
int kc_load(struct db *d, struct db_kc *kc, unsigned dbi, const char *key, size_t klen);
/* As kc_load, for a key the caller is about to delete (DEL, GETDEL, a
 * RENAME's source): a cache miss fills nothing, since the delete would
 * only turn the filled entry into a negative one, evicting others for it. */
int kc_take(struct db *d, struct db_kc *kc, unsigned dbi, const char *key, size_t klen);
void kc_free(struct db_kc *kc);
/* 0 if the key holds type, KV_ENOTFOUND if absent, KV_EWRONGTYPE. */
int kc_want(const struct db_kc *kc, int type);
/* Loads and checks in one step: 0, KV_ENOTFOUND, KV_EWRONGTYPE or error. */
int kc_open(struct db *d, struct db_kc *kc, unsigned dbi, const char *key, size_t klen, int type);
/* Loads for a write: 0 if the key holds type or is absent (then m is set up
 * as a fresh empty collection with a new version), KV_EWRONGTYPE otherwise.
 * An absence is not cached, the write putting the meta record, unless the
 * key filter says the key may have been written (the commit's key count
 * then finds the absence in the cache). */
int kc_open_write(struct db *d, struct db_kc *kc, unsigned dbi, const char *key, size_t klen,
                  int type);
/* Turns kc into a fresh, empty key of type with a new version. */
void kc_fresh(struct db *d, struct db_kc *kc, int type);
/* Stages the meta record as it is in kc->m (string value from m.value). */
void kc_put_meta(struct db *d, struct db_kc *kc);
void kc_del_meta(struct db *d, struct db_kc *kc);
/* As kc_del_meta, for a live key whose record kc read (kc_take, kc_load)
 * while the record set in progress held nothing for it: the key counts
 * take its prior state from that read (db.priors) instead of looking it up
 * again, which for a key neither the overlay nor the cache holds is a
 * RocksDB read, or one deferred to the write-back's resolver. */
void kc_del_read(struct db *d, struct db_kc *kc);

/* db_inl.c. An INLINE collection's records while a command has it open:
 * point reads (near_get), writes (db_sub_put, db_sub_del) and walks
 * (kc_iter) of its sub and score keys land on a copy that kc_put_meta
 * writes back into its meta record. A write that takes it past its
 * thresholds (struct db_opts) turns it into records in the record set. */
/* kc_read: kc's record is INLINE; copies its records (KV_ECORRUPT for a
 * payload that does not decode or disagrees with its size). */
int db_inl_open(struct db *d, struct db_kc *kc);
/* Whether a new collection of type starts INLINE. */
bool db_inl_fits_new(const struct db *d, int type);
/* kc_fresh: kc became a new, empty collection: INLINE (with an empty
 * copy) when db_inl_fits_new, else without a copy. */
void db_inl_fresh(struct db *d, struct db_kc *kc);
/* kc_free (kc->inl set): drops the copy. */
void db_inl_close(struct db_kc *kc);
/* kc_del_meta (kc->inl set): the command deleted the collection. */
void db_inl_dead(struct db_kc *kc);
/* A read of (cf, k): STOR_ABSENT when no open INLINE collection owns k,
 * else STOR_PUT (*v valid until the next write) or STOR_DELETED. */
int db_inl_get(struct db *d, int cf, const char *k, size_t kn, const char **v, size_t *vn);
/* A write of (cf, k): false when no open INLINE collection owns k (the
 * caller puts it in the record set), true when one took it. */
bool db_inl_put(struct db *d, int cf, const char *k, size_t kn, const char *v, size_t vn);
bool db_inl_del(struct db *d, int cf, const char *k, size_t kn);
/* Whether kc's copy holds field f now. */
bool db_inl_has(const struct db_kc *kc, const char *f, size_t fn);
/* The copy, encoded as the meta record carries it (enc_inline_next). */
size_t db_inl_payload_len(const struct db_kc *kc);
void db_inl_payload(struct db_kc *kc, char *out);
/* kc_put_meta put the copy as it is now. */
void db_inl_written(struct db_kc *kc);
/* db_commit: puts the meta record of every copy changed since its last. */
void db_inl_flush(struct db *d);
/* kc_read: before the meta record mk is read, puts it if an open copy of
 * it changed since (a key opened twice in one command). */
void db_inl_sync(struct db *d, const char *mk, size_t mkn);
/* A snapshot iterator over kc's copy, in cf's key order; _range: only
 * the records whose field lies in [lo, hi). */
struct stor_it *db_inl_iter(struct db_kc *kc, int cf);
struct stor_it *db_inl_iter_range(struct db_kc *kc, int cf, const char *lo, size_t lon,
                                  const char *hi, size_t hin);

/* The type code's writes of sub and score records: an open INLINE
 * collection's go to its copy, the rest to the record set. */
static inline void db_sub_put(struct db *d, int cf, const char *k, size_t kn, const char *v,
                              size_t vn)
{
    if (!d->inls.n || !db_inl_put(d, cf, k, kn, v, vn))
        stor_batch_put(&d->b, cf, k, kn, v, vn);
}
static inline void db_sub_del(struct db *d, int cf, const char *k, size_t kn)
{
    if (!d->inls.n || !db_inl_del(d, cf, k, kn))
        stor_batch_del(&d->b, cf, k, kn);
}

/* Sub key (prefix | field) of the current version, in kc->sk. */
const char *kc_sub(struct db_kc *kc, const char *f, size_t fn, size_t *kn);
/* The sub keys of fields f[0..n) (n at most DB_MANY), laid one after
 * another in buf (which it empties first); r->k[i], r->kn[i] name them
 * until buf next changes. */
void kc_subs(struct db_kc *kc, const struct db_str *f, size_t n, struct db_buf *buf,
             struct db_many *r);
/* Reads the sub records of fields f[0..n) of the open collection kc,
 * DB_MANY at a time through db_rget_many (filling the cache on a miss if
 * fill; a caller about to delete them passes false, as kc_take), and calls
 * each(arg, i, v, vn) for every field in order: v is the record's value,
 * valid during the call, or NULL where the field is absent or its read
 * failed. The event loop prefetched the first field (db_prefetch1f).
 * Returns 0 or the first read error. each may write the record set: a
 * field of a later batch reads what it wrote, one of the same batch does
 * not (kc_sub_written tells). */
int kc_read_subs(struct db *d, struct db_kc *kc, const struct db_str *f, size_t n, bool fill,
                 void (*each)(void *arg, size_t i, const char *v, size_t vn), void *arg);
/* Whether the record set in progress writes or deletes field f's sub record. */
bool kc_sub_written(struct db *d, struct db_kc *kc, const char *f, size_t fn);
/* Score key (prefix | score | member). */
const char *kc_score(struct db_kc *kc, double score, const char *m, size_t mn, size_t *kn);
/* Turns the collection prefix p (n bytes) into the smallest key above
 * every key that starts with it: the upper bound of its records. */
void db_prefix_successor(char *p, size_t n);
/* An iterator over the current version's records in cf. */
struct stor_it *kc_iter(struct db *d, struct db_kc *kc, int cf);
/* Bytes after the prefix of an iterated key. */
static inline const char *kc_suffix(const struct db_kc *kc, const char *k, size_t kn, size_t *sn)
{
    *sn = kn - kc->plen;
    return k + kc->plen;
}
size_t kc_prefix_len(struct db_kc *kc);

/* A hash, set or sorted set that keeps its size (COUNTED coding): what
 * db_tidy.c and db_scache.c may copy. */
static inline bool db_counted_coll(const struct enc_meta *m)
{
    return (m->type == ENC_TYPE_HASH || m->type == ENC_TYPE_SET || m->type == ENC_TYPE_ZSET) &&
           m->coding == ENC_CODING_COUNTED;
}

/* db_scache.c. A snapshot iterator over kc's records [lo, hi) of cf (sub
 * or score), from the cache of small collections (filled from storage on
 * a miss, a walk db_walk_start counts), or NULL when kc is not one: a
 * blind or larger collection, or a read error. */
struct stor_it *db_scache_iter(struct db *d, struct db_kc *kc, int cf, const char *lo, size_t lon,
                               const char *hi, size_t hin);
/* db_list.c. A storage iterator over the open list kc's positions
 * [lo, hi) alone (not the tombstones of popped elements past its ends). */
struct stor_it *db_list_iter(struct db *d, struct db_kc *kc, uint64_t lo, uint64_t hi);
/* db_scache.c. The cached window of the open list kc that holds its
 * positions [at, at + count), filled from storage on a miss; *first is the
 * index of position at in it. NULL when the range is too far from both
 * ends, the window too large, or on a read error (the caller then reads
 * storage itself). Owned by the cache: valid until the next commit or
 * fill. */
const struct stor_snap *db_scache_list(struct db *d, struct db_kc *kc, uint64_t at, uint64_t count,
                                       size_t *first);
/* kc_free: credits the records kc's walk read to its cache entry. */
void db_scache_walked(struct db_kc *kc);
/* After a commit while anything is cached: drops the collections whose
 * records or meta record b writes (everything for a range delete). */
void db_scache_note(struct db *d, const struct stor_batch *b);
/* Drops every entry and the table (db_destroy). */
void db_scache_reset(struct db_scache *c);

/* db_tidy.c. kc_iter starts counting the deletes walks of kc step over;
 * kc_free ends it, and notes kc for db_tidy if they were many. */
void db_walk_start(struct db *d, struct db_kc *kc);
void db_walk_end(struct db_kc *kc);
/* Has RocksDB count the deletes stepped over (stor_skips) until db_tidy,
 * after the command. */
void db_watch_skips(struct db *d);

/* Collection size: meta size when counted, a scan when blind. */
int kc_size(struct db *d, struct db_kc *kc, uint64_t *n);
/* After removals: deletes the key if it is now empty, else writes meta.
 * removed: how many elements this operation removed (counted coding). */
int kc_settle(struct db *d, struct db_kc *kc);

/* Random members of an open collection through its pick index (built on
 * first use; db_pick.c): count > 0 asks for min(count, size) distinct
 * members, count < 0 for -count with repetition. Pushes each pick to out:
 * DB_PICK_KEYS the member, DB_PICK_PAIRS field then value, DB_PICK_SCORES
 * the member with the score its sub record holds. 0, DB_PICK_READ_ALL when
 * reading every member is the better way (or the only one: a blind
 * coding, a small collection, a count near its size), out then unchanged,
 * or a storage error. */
enum { DB_PICK_KEYS, DB_PICK_PAIRS, DB_PICK_SCORES };
#define DB_PICK_READ_ALL 1
int db_pick(struct db *d, struct db_kc *kc, int64_t count, int how, struct db_vec *out);
/* After a commit: raises the bucket bounds of indexed collections that b
 * writes members of. */
void db_pick_note(struct db *d, const struct stor_batch *b);
/* Drops every pick index (FLUSHDB, FLUSHALL, db_destroy). */
void db_pick_reset(struct db_picks *p);

/* db_zedge.c. An iterator over the score records of the sorted set whose
 * prefix is pre (pn bytes; succ: the prefix's successor, as long),
 * bounded by its known edges: kc_iter's, for the score family. */
struct stor_it *db_zedge_iter(struct db *d, const char *pre, size_t pn, const char *succ);
/* Moves the edges of the sorted sets b writes score records of outside
 * them out to those records; after every commit while any edge is known. */
void db_zedge_note(struct db *d, const struct stor_batch *b);
void db_zedge_reset(struct db_zedges *z);

/* db_zrix.c. Rank indexes of sorted sets of at least DB_ZRIX_MIN members:
 * built by the first query that wants one, kept up by every write. */
#define DB_ZRIX_MIN 1024
/* A rank range whose walk from either end passes fewer records than this
 * is walked: the index's look-up costs about as much. */
#define DB_ZRIX_WALK 64
#define DB_ZRIX_NONE 1 /* no index: walk */
/* Before a write changes up to n members of the open sorted set kc: has
 * the commit keep its index, or drops it (clears the ON bit in kc->m;
 * the caller then writes the meta record) when n is a large share of the
 * set or write-back is off. Every write of score records of a set that
 * exists calls it. */
void db_zrix_touch(struct db *d, struct db_kc *kc, uint64_t n);
/* db_commit: before the record set is committed, finds the score-index
 * changes it makes to touched sets (true if any); after, applies them to
 * the indexes (inside the same storage group). */
bool db_zrix_before(struct db *d);
void db_zrix_after(struct db *d);
void db_zrix_clear(struct db *d);
void db_zrix_destroy(struct db *d);
/* Whether kc is a sorted set large enough for an index. */
bool db_zrix_large(const struct db *d, const struct db_kc *kc);
/* Whether kc (an open sorted set) has an index, building it if it is
 * large enough and has none. */
bool db_zrix_ready(struct db *d, struct db_kc *kc);
/* Through a ready index: the members before score-key suffix t (score(8)
 * | member, or any bytes between), and a score-index iterator at the
 * member of rank r (< size; the caller frees it). 0, DB_ZRIX_NONE (walk
 * instead), or a storage error. */
int db_zrix_rank(struct db *d, struct db_kc *kc, const char *t, size_t tn, uint64_t *r);
int db_zrix_select(struct db *d, struct db_kc *kc, uint64_t r, struct stor_it **it);

/* db_zrm.c. A set's fences by its rank prefix (score prefix | gen), or
 * NULL; a new copy (replacing one of that prefix) with the head's count,
 * filled in order by db_zrm_append; db_zrm_trim keeps the copies within
 * their budget, all but keep. */
struct db_zrm *db_zrm_get(struct db *d, const char *key, size_t keyn);
struct db_zrm *db_zrm_new(struct db *d, const char *key, size_t keyn, uint64_t head);
void db_zrm_append(struct db *d, struct db_zrm *m, const char *s, size_t sn, uint64_t count);
void db_zrm_drop(struct db *d, struct db_zrm *m);
void db_zrm_trim(struct db *d, const struct db_zrm *keep);
void db_zrm_reset(struct db *d);
/* A place among the fences: block b (-1: the head), entry e. Valid until
 * the next change. */
struct db_zrm_pos {
    long b;
    uint32_t e;
};
/* What is there: its suffix ("" for the head; valid until the next
 * change), its count, and the members before it. */
struct db_zrm_at {
    const char *s;
    size_t sn;
    uint64_t count, before;
};
uint64_t db_zrm_total(const struct db_zrm *m);
size_t db_zrm_fences(const struct db_zrm *m);
/* The last fence before suffix t (strict: t excluded), or the head. */
void db_zrm_find(const struct db_zrm *m, const char *t, size_t tn, bool strict,
                 struct db_zrm_pos *p, struct db_zrm_at *at);
/* The fence whose members hold rank r; false when r is past them all. */
bool db_zrm_select(const struct db_zrm *m, uint64_t r, struct db_zrm_pos *p, struct db_zrm_at *at);
/* The fence after p (its before is not set); false at the end. */
bool db_zrm_next(const struct db_zrm *m, const struct db_zrm_pos *p, struct db_zrm_at *at);
void db_zrm_set(struct db_zrm *m, const struct db_zrm_pos *p, uint64_t count);
void db_zrm_insert_after(struct db *d, struct db_zrm *m, const struct db_zrm_pos *p, const char *s,
                         size_t sn, uint64_t count);
void db_zrm_remove_next(struct db *d, struct db_zrm *m, const struct db_zrm_pos *p);

/* Byte strings in memcmp order, a prefix before what extends it (member
 * and field order in the sub family). */
static inline int db_bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* Writes or reads n bytes whole, continuing *crc (kv_crc32c) over them:
 * 0, or -errno (-EIO for a file that ends early). */
int db_write_all(int fd, const void *p, size_t n, uint32_t *crc);
int db_read_all(int fd, void *p, size_t n, uint32_t *crc);

/* Random numbers for SPOP/SRANDMEMBER/... (xorshift64*). */
uint64_t db_rand(struct db *d);

/* Copies the records of the collection in src to a fresh version of dst
 * (dst's meta is written; dst may be in another db). */
void db_copy_records(struct db *d, struct db_kc *src, struct db_kc *dst, int *rc);

/* Random sampling shared by HRANDFIELD/SRANDMEMBER/ZRANDMEMBER. all holds
 * every element (with stride items per element); picks as Redis's count rule
 * says into out. */
void db_sample(struct db *d, const struct db_vec *all, size_t stride, int64_t count,
               struct db_vec *out);

/* Shared by hashes and sets (HDEL/SREM, HLEN/SCARD, HEXISTS/SISMEMBER);
 * db_remove_members by sorted sets too (ZREM: a member's score record goes
 * with it). */
int db_remove_members(struct db *d, unsigned dbi, const char *key, size_t klen, int type,
                      const struct db_str *f, size_t n, uint64_t *removed);
/* Size of a collection of type, 0 when absent. */
int db_coll_size(struct db *d, unsigned dbi, const char *key, size_t klen, int type, uint64_t *n);
/* 1 if the hash/set has the field/member, 0 if not or absent. */
int db_has_member(struct db *d, unsigned dbi, const char *key, size_t klen, int type, const char *f,
                  size_t fn);

/* Sorts a vec's items by bytes and drops duplicates. */
void db_vec_sort_unique(struct db_vec *v);
/* Replaces dst with a fresh set or zset holding v's items (zset scores from
 * the items); an empty v deletes dst. */
void db_store_vec(struct db *d, struct db_kc *dst, int type, const struct db_vec *v);

/* What one record set changes in the key and expiry counts of the dbs it
 * writes: few entries (mostly one), found by a linear search. */
struct db_key_counts {
    unsigned n;
    struct {
        unsigned dbi;
        int64_t keys, expires, expsum;
        uint64_t defers; /* writes left to resolve */
    } e[ENC_DB_MAX + 1];
};

/* ---- db.c ---- */

/* A point read: the pending record set's or the cache's answer (copying at
 * most cap bytes of the value), else the engine's, which fills the cache if
 * fill, an absence only if fill_absent too (or the key count would read it,
 * db.c, absence_counted). */
int db_rget_with(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn, size_t cap,
                 bool fill, bool fill_absent);

/* ---- db_count.c ---- */

/* Counts every db's meta records in one pass, filling the key filter. */
int db_count_all(struct db *d);
/* Takes the counts and the key filter from the file a clean shutdown
 * left, if it still describes the data (and deletes it). */
bool db_counts_load(struct db *d);
/* stor's resolver (stor_set_resolver): folds a deferred write's prior
 * state into the counts. Under stor's resolver lock. */
void db_counts_resolve(void *arg, int kind, const char *k, size_t kn, const char *v, size_t vn,
                       const char *old, size_t oldn, bool had);
/* Ends a rebuild of the key filter, dropping what it built. */
void db_keyf_rebuild_stop(struct db *d);
/* Whether db dbi surely holds no key: its count is zero and no write of
 * it waits for its prior state. */
bool db_surely_empty(const struct db *d, unsigned dbi);
/* Fills *d->created and *d->expired (as asked) from the committed records of
 * the keys b writes (keyspace events). */
void db_note_keys(struct db *d, const struct stor_batch *b);
/* Fills kc with what b changes in the key counts, learning for each key
 * it writes whether it existed (or deferring that to the resolver). 0 or
 * a storage error. */
int db_count_keys(struct db *d, struct stor_batch *b, struct db_key_counts *kc);

/* ---- db_expire.c ---- */

/* Adds the expiry index entry of (dbi, slot, key) at exp to the record set. */
void db_put_expiry(struct db *d, unsigned dbi, uint64_t exp, uint16_t slot, const char *key,
                   size_t klen);
/* Builds the expiry index once where a data folder lacks it. */
int db_expiry_index_check(struct db *d);

/* ---- db_kc.c ---- */

/* Notes that the operation deletes a live key whose record it read, with
 * that record's expiry, for the key counts (d->priors). */
void db_note_prior(struct db *d, uint64_t exp);

/* ---- db_scan.c ---- */

/* [db|0000, db|4000): every record of one database in every column
 * family, as range bounds. */
void db_range(unsigned dbi, char lo[3], char hi[3]);

/* The time expiries are checked against: 0, before every expiry, while
 * db_pause_expiry is on. */
static inline uint64_t db_expiry_clock(const struct db *d)
{
    return d->expiry_paused ? 0 : stor_now_ms();
}

#endif
