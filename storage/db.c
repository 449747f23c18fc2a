/*
 * db — handle, result vectors, key contexts and the key-space commands
 * (TYPE, DEL, EXPIRE, RENAME, COPY, SCAN, DBSIZE, FLUSHDB, ...).
 */
#include "db_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

/* ---- result vectors ---- */

void db_vec_init(struct db_vec *v)
{
    memset(v, 0, sizeof *v);
}

void db_vec_destroy(struct db_vec *v)
{
    free(v->items);
    free(v->buf);
    memset(v, 0, sizeof *v);
}

void db_vec_clear(struct db_vec *v)
{
    v->n = 0;
    v->used = 0;
}

static struct db_vitem *vec_item(struct db_vec *v)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 16;
        v->items = kv_xrealloc(v->items, v->cap * sizeof *v->items);
    }
    return &v->items[v->n++];
}

void db_vec_push(struct db_vec *v, const char *p, size_t n, double score)
{
    if (v->used + n > v->capbuf) {
        size_t cap = v->capbuf ? v->capbuf : 256;
        while (cap < v->used + n)
            cap *= 2;
        v->buf = kv_xrealloc(v->buf, cap);
        v->capbuf = cap;
    }
    struct db_vitem *it = vec_item(v);
    it->off = v->used;
    it->len = n;
    it->score = score;
    if (n)
        memcpy(v->buf + v->used, p, n);
    v->used += n;
}

void db_vec_push_nil(struct db_vec *v)
{
    struct db_vitem *it = vec_item(v);
    it->off = 0;
    it->len = DB_NIL;
    it->score = 0;
}

/* ---- handle ---- */

static void efloor_reset(struct db *d, unsigned dbi, uint64_t exp);

static void put_expiry(struct db *d, unsigned dbi, uint64_t exp, uint16_t slot, const char *key,
                       size_t klen)
{
    struct db_buf ek;
    dbb_init(&ek);
    dbb_reserve(&ek, enc_expiry_key_len(klen));
    ek.n = enc_expiry_key(ek.p, dbi, exp, slot, key, klen);
    stor_batch_put(&d->b, STOR_CF_EXPIRY, ek.p, ek.n, "", 0);
    dbb_free(&ek);
    if (exp < d->expiry_next)
        d->expiry_next = exp;
    if (exp <= d->efloor[dbi].exp) /* at or below the floor: the floor drops to its time */
        efloor_reset(d, dbi, exp);
}

static void efloor_reset(struct db *d, unsigned dbi, uint64_t exp)
{
    struct db_efloor *f = &d->efloor[dbi];
    f->exp = exp;
    f->kn = 0; /* the key's buffer stays, for the next raise */
}

/* Entry k (of db dbi) was deleted, and every entry of the db before it. */
static void efloor_raise(struct db *d, unsigned dbi, const char *k, size_t kn)
{
    struct db_efloor *f = &d->efloor[dbi];
    if (kn > f->cap) {
        f->key = kv_xrealloc(f->key, kn);
        f->cap = kn;
    }
    memcpy(f->key, k, kn);
    f->kn = kn;
    f->exp = enc_get_u64(k + 1);
}

/* Seeks it to db dbi's floor (d->efloor). */
static void efloor_seek(struct db *d, struct stor_it *it, unsigned dbi)
{
    const struct db_efloor *f = &d->efloor[dbi];
    char k[11];
    if (f->kn)
        stor_it_seek(it, f->key, f->kn);
    else
        stor_it_seek(it, k, enc_expiry_key(k, dbi, f->exp, 0, NULL, 0));
}

/* The expiry index holds the marker "" once it is complete. A data folder
 * from before the index (or a build cut short) lacks it: index every meta
 * record with an expiry, then write the marker, in record sets of bounded
 * size. Entries written twice are the same entry. */
static int expiry_index_check(struct db *d)
{
    char *v;
    size_t vn;
    int rc = stor_get(d->s, STOR_CF_EXPIRY, "", 0, &v, &vn);
    if (rc == 0)
        free(v);
    if (rc != KV_ENOTFOUND)
        return rc;
    rc = 0;
    struct stor_it *it = stor_it_create(d->s, STOR_CF_META, NULL, 0, NULL, 0);
    db_begin(d);
    for (stor_it_first(it); rc == 0 && stor_it_valid(it); stor_it_next(it)) {
        size_t kn, vn2, ukn;
        const char *k = stor_it_key(it, &kn), *uk;
        const char *mv = stor_it_value(it, &vn2);
        unsigned dbi;
        uint16_t slot;
        uint8_t t;
        uint64_t exp;
        if (enc_meta_key_decode(k, kn, &dbi, &slot, &uk, &ukn) == 0 &&
            enc_meta_peek(mv, vn2, &t, &exp) == 0 && exp)
            put_expiry(d, dbi, exp, slot, uk, ukn);
        if (d->b.nops >= 1024)
            rc = db_commit(d);
    }
    if (rc == 0)
        rc = stor_it_status(it);
    stor_it_free(it);
    if (rc == 0) {
        stor_batch_put(&d->b, STOR_CF_EXPIRY, "", 0, "1", 1);
        rc = db_commit(d);
    }
    if (rc == 0)
        rc = stor_sync(d->s);
    stor_batch_clear(&d->b);
    return rc;
}

/* Counts every db's meta records in one pass (O(keys), once per start),
 * and puts each key in the key filter: what db_commit keeps from then on. */
static int count_all(struct db *d)
{
    const char lo[3] = {0, 0, 0}, hi[3] = {(char)ENC_DB_MAX, (char)(ENC_SLOTS >> 8), 0};
    uint64_t est = 0;
    if (stor_property(d->s, STOR_CF_META, "rocksdb.estimate-num-keys", &est) != 0)
        est = 0;
    est += est / 4; /* room to grow before a second filter is needed */
    db_keyf_init(&d->keyf, est > DB_KEYF_FIRST ? est : DB_KEYF_FIRST);
    /* Each key goes into the filter 16 keys after its block was
     * prefetched: a random line each, and these misses were most of the
     * pass's time. */
    enum { AHEAD = 16 };
    uint64_t ring[AHEAD];
    size_t n = 0;
    struct stor_it *it = stor_it_create(d->s, STOR_CF_META, lo, 3, hi, 3);
    for (stor_it_first(it); stor_it_valid(it); stor_it_next(it), n++) {
        size_t kn, vn;
        const char *k = stor_it_key(it, &kn);
        const char *v = stor_it_value(it, &vn);
        uint8_t t;
        uint64_t exp, h = stor_key_hash(STOR_CF_META, k, kn);
        unsigned dbi = (unsigned char)k[0];
        d->nkeys[dbi]++;
        d->nexpires[dbi] += enc_meta_peek(v, vn, &t, &exp) == 0 && exp;
        if (n >= AHEAD)
            db_keyf_add(&d->keyf, ring[n % AHEAD]);
        db_keyf_prefetch(&d->keyf, h);
        ring[n % AHEAD] = h;
    }
    for (size_t i = n > AHEAD ? n - AHEAD : 0; i < n; i++)
        db_keyf_add(&d->keyf, ring[i % AHEAD]);
    int rc = stor_it_status(it);
    stor_it_free(it);
    return rc;
}

/* ---- the counts, kept across a clean shutdown ----
 *
 * dir/key-counts: the counts and the key filter as a clean shutdown left
 * them (db_save_counts), so that the next start need not count every key.
 * It describes the database only while nothing has been written since, so
 * it carries RocksDB's latest sequence number then, and is used only if
 * that is still the number and the journal replayed nothing; it is deleted
 * at every start, before anything can be written. A power loss that
 * undoes the deletion also undoes the writes after it: what survives is
 * either the state the file describes (the sequence number agrees) or
 * newer (it does not). */

#define COUNTS_FILE "/key-counts"
#define COUNTS_MAGIC "SHMKVKC1"
#define COUNTS_PROBE "shmkv key filter probe"

struct counts_head {
    char magic[8];
    uint64_t seq;   /* RocksDB's latest sequence number when saved */
    uint64_t probe; /* the key hash of COUNTS_PROBE: the filter's bits need the same hash */
    uint64_t nkeys[ENC_DB_MAX + 1], nexpires[ENC_DB_MAX + 1];
};

static char *counts_path(const struct db *d, const char *suffix)
{
    const char *dir = stor_dir(d->s);
    size_t n = strlen(dir) + sizeof COUNTS_FILE + strlen(suffix);
    char *p = kv_xmalloc(n);
    snprintf(p, n, "%s%s%s", dir, COUNTS_FILE, suffix);
    return p;
}

static uint64_t counts_probe(void)
{
    return stor_key_hash(STOR_CF_META, COUNTS_PROBE, sizeof COUNTS_PROBE - 1);
}

/* Whether the filter holds mostly deleted keys (they never leave it). */
static bool keyf_mostly_dead(const struct db *d)
{
    uint64_t bytes, added, slack = d->keyf_dead_slack ? d->keyf_dead_slack : DB_KEYF_FIRST;
    db_keyf_usage(&d->keyf, &bytes, &added);
    return added > 2 * db_keycount_total(d) + slack;
}

static void keyf_rebuild_stop(struct db *d)
{
    db_keyf_destroy(&d->keyf_next);
    free(d->keyf_cursor);
    d->keyf_cursor = NULL;
    d->keyf_cursorn = 0;
    d->keyf_building = false;
}

static void keyf_next_add(void *arg, uint64_t hash)
{
    struct db *d = arg;
    db_keyf_add(&d->keyf_next, hash);
}

/* Whether db dbi surely holds no key: its count is zero and no write of
 * it waits for its prior state. */
static bool db_surely_empty(const struct db *d, unsigned dbi)
{
    return !d->nkeys[dbi] && !d->defer_out[dbi];
}


/* Slots a slice's iterator covers at most: it skips no more deleted keys
 * than these slots hold. One iterator from the start of the meta family
 * skipped every record 2.5M deletes in key order had left (1.15 s once). */
#define KEYF_SLOTS_A_RANGE 16u
/* The largest overlay index (slots) the rebuild's start walks: 4 MiB. */
#define KEYF_OV_SLOTS (1u << 18)

int db_keyf_rebuild_step(struct db *d, uint64_t budget, bool *more)
{
    *more = false;
    budget = budget ? budget : 1;
    if (!d->keyf_building) {
        if (!keyf_mostly_dead(d))
            return 0;
        uint64_t live = db_keycount_total(d);
        live += live / 4;
        db_keyf_init(&d->keyf_next, live > DB_KEYF_FIRST ? live : DB_KEYF_FIRST);
        /* The keys whose records still wait in the overlay, now: the
         * slices read RocksDB alone, since a merged iterator's first seek
         * after a write burst sorts the whole overlay. Keys created from
         * here on go in as commits create them. While a burst has left
         * the overlay's index large, its walk would hold the loop (68 ms
         * after 2.5M deletes): the rebuild waits, as it can. */
        if (!stor_ov_each(d->s, STOR_CF_META, KEYF_OV_SLOTS, keyf_next_add, d)) {
            db_keyf_destroy(&d->keyf_next);
            return 0;
        }
        d->keyf_building = true;
        d->keyf_db = d->keyf_slot = 0;
    }
    uint64_t n = 0;
    int rc = 0;
    /* At most budget keys a call, and budget / 16 ranges: an iterator's
     * making and first seek cost about what 16 keys do. */
    for (uint64_t ranges = 0; n < budget && ranges <= budget / 16 && d->keyf_db <= ENC_DB_MAX;
         ranges++) {
        if (db_surely_empty(d, d->keyf_db)) { /* no live key now: later ones go in as made */
            d->keyf_db++;
            d->keyf_slot = 0;
            continue;
        }
        /* [from just past the cursor, or the range's first slot; the
         * range's end): a key followed by a zero byte is the first key
         * after it. A fresh iterator each range: one kept open would pin
         * RocksDB's memtables and files for the whole rebuild. */
        unsigned end = d->keyf_slot + KEYF_SLOTS_A_RANGE;
        char lo0[3] = {(char)d->keyf_db, (char)(d->keyf_slot >> 8), (char)d->keyf_slot};
        char hi[3] = {(char)d->keyf_db, (char)(end >> 8), (char)end};
        size_t lon = d->keyf_cursor ? d->keyf_cursorn + 1 : sizeof lo0;
        char *lo = d->keyf_cursor ? d->keyf_cursor : lo0;
        struct stor_it *it = stor_it_create_raw(d->s, STOR_CF_META, lo, lon, hi, sizeof hi);
        bool full = false;
        for (stor_it_first(it); stor_it_valid(it); stor_it_next(it)) {
            size_t kn;
            const char *k = stor_it_key(it, &kn);
            db_keyf_add(&d->keyf_next, stor_key_hash(STOR_CF_META, k, kn));
            if (++n == budget) {
                /* The cursor keeps a zero byte of room after the key, for
                 * lo; copied before the iterator moves off its buffer. */
                char *c = kv_xmalloc(kn + 1);
                memcpy(c, k, kn);
                c[kn] = 0;
                free(d->keyf_cursor);
                d->keyf_cursor = c;
                d->keyf_cursorn = kn;
                full = true;
                break;
            }
        }
        rc = stor_it_status(it);
        stor_it_free(it);
        if (rc || full)
            break;
        free(d->keyf_cursor); /* the range is done */
        d->keyf_cursor = NULL;
        if ((d->keyf_slot = end) >= ENC_SLOTS) {
            d->keyf_slot = 0;
            d->keyf_db++;
        }
    }
    if (rc) {
        keyf_rebuild_stop(d);
        return rc;
    }
    if (d->keyf_db <= ENC_DB_MAX) {
        *more = true;
        return 0;
    }
    db_keyf_destroy(&d->keyf);
    d->keyf = d->keyf_next;
    memset(&d->keyf_next, 0, sizeof d->keyf_next);
    keyf_rebuild_stop(d);
    d->keyf_rebuilds++;
    return 0;
}

int db_save_counts(struct db *d)
{
    int rc = stor_drain(d->s);
    if (!rc)
        rc = db_counts_settle(d, true); /* the flusher has resolved them all */
    if (rc)
        return rc;
    /* A filter mostly of deleted keys is better built afresh from the live
     * keys by the next start's count. */
    if (keyf_mostly_dead(d))
        return 1;
    struct counts_head h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, COUNTS_MAGIC, sizeof h.magic);
    h.seq = stor_latest_seq(d->s);
    h.probe = counts_probe();
    memcpy(h.nkeys, d->nkeys, sizeof h.nkeys);
    memcpy(h.nexpires, d->nexpires, sizeof h.nexpires);
    char *tmp = counts_path(d, ".tmp"), *path = counts_path(d, "");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    uint32_t crc = 0;
    rc = fd < 0 ? -errno : db_write_all(fd, &h, sizeof h, &crc);
    if (!rc)
        rc = db_keyf_save(&d->keyf, fd, &crc);
    uint32_t sum = crc;
    if (!rc)
        rc = db_write_all(fd, &sum, sizeof sum, &crc);
    if (!rc && fsync(fd) != 0)
        rc = -errno;
    if (fd >= 0 && close(fd) != 0 && !rc)
        rc = -errno;
    if (!rc && rename(tmp, path) != 0)
        rc = -errno;
    if (rc)
        unlink(tmp);
    free(tmp);
    free(path);
    return rc;
}

/* Takes the counts and the filter from the file a clean shutdown saved, if
 * it still describes the database, and deletes it either way. */
static bool counts_load(struct db *d)
{
    char *path = counts_path(d, ""), *tmp = counts_path(d, ".tmp");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    unlink(path);
    unlink(tmp); /* a save cut short by a crash */
    free(path);
    free(tmp);
    if (fd < 0)
        return false;
    struct stor_wb_stats st;
    stor_wb_stats(d->s, &st);
    struct counts_head h;
    uint32_t crc = 0, sum, ignored = 0;
    char extra;
    bool ok = db_read_all(fd, &h, sizeof h, &crc) == 0 &&
              memcmp(h.magic, COUNTS_MAGIC, sizeof h.magic) == 0 && h.probe == counts_probe() &&
              h.seq == stor_latest_seq(d->s) && st.replayed_sets == 0 &&
              db_keyf_load(&d->keyf, fd, &crc) == 0 &&
              db_read_all(fd, &sum, sizeof sum, &ignored) == 0 &&
              sum == crc && read(fd, &extra, 1) == 0;
    close(fd);
    if (!ok) {
        db_keyf_destroy(&d->keyf);
        return false;
    }
    memcpy(d->nkeys, h.nkeys, sizeof d->nkeys);
    memcpy(d->nexpires, h.nexpires, sizeof d->nexpires);
    return true;
}

static void counts_resolve(void *arg, int kind, const char *k, size_t kn, const char *v,
                           size_t vn, const char *old, size_t oldn, bool had);
static void counts_fold(void *arg);

int db_init(struct db *d, struct stor *s, const struct db_opts *o)
{
    memset(d, 0, sizeof *d);
    d->s = s;
    stor_set_resolver(s, counts_resolve, d);
    if (o)
        d->o = *o;
    if (!d->o.max_string)
        d->o.max_string = 512ull << 20;
    stor_batch_init(&d->b);
    d->scache_max = DB_SCACHE_MEMBERS;
    db_vec_init(&d->created);
    db_vec_init(&d->expired);
    /* Seed the version counter and the sampler from the kernel: versions
     * from two runs within one millisecond must still differ. */
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
        seed = stor_now_ms() * 0x9e3779b97f4a7c15ull;
    d->counter = (uint32_t)(seed & 0x7ff);
    d->rng = seed | 1;
    d->counts_loaded = counts_load(d);
    int rc = d->counts_loaded ? 0 : count_all(d);
    return rc ? rc : expiry_index_check(d);
}

void db_destroy(struct db *d)
{
    db_pick_reset(&d->picks);
    db_zedge_reset(&d->zedges);
    db_scache_reset(&d->scache);
    for (unsigned i = 0; i < d->ntidy; i++)
        free(d->tidy[i].key);
    for (unsigned i = 0; i < 256; i++)
        free(d->efloor[i].key);
    if (d->watching)
        stor_skips_watch(false);
    keyf_rebuild_stop(d);
    db_keyf_destroy(&d->keyf);
    stor_batch_destroy(&d->b);
    free(d->priors);
    d->priors = NULL;
    d->npriors = d->cappriors = 0;
    db_vec_destroy(&d->created);
    db_vec_destroy(&d->expired);
}

uint64_t db_version_next(struct db *d)
{
    uint64_t v = enc_version_make(stor_now_ms(), d->counter++);
    if (v <= d->last_version)
        v = d->last_version + 1;
    d->last_version = v;
    return v;
}

uint64_t db_rand(struct db *d)
{
    uint64_t x = d->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    d->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* ---- operations and reads ---- */

void db_begin(struct db *d)
{
    stor_batch_clear(&d->b);
    d->npriors = 0;
}

/* The slot of op i's key in seen, an open addressing table of op indexes
 * + 1 (mask + 1 slots, at least twice the ops) hashed by key bytes: the
 * slot holding the first op on that key, or the empty one to put it in. */
static size_t key_slot(const struct stor_batch *b, size_t i, const uint32_t *seen, size_t mask)
{
    const struct stor_op *op = &b->ops[i];
    const unsigned char *k = (const unsigned char *)stor_op_key(b, op);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t j = 0; j < op->klen; j++)
        h = (h ^ k[j]) * 0x100000001b3ull;
    for (size_t s = (size_t)(h ^ (h >> 29)) & mask;; s = (s + 1) & mask) {
        if (!seen[s])
            return s;
        const struct stor_op *o = &b->ops[seen[s] - 1];
        if (o->klen == op->klen && !memcmp(stor_op_key(b, o), k, op->klen))
            return s;
    }
}

/* Whether the committed meta record mk (hash h, stor_key_hash) exists, and
 * its expiry (0: none or not a meta value): read in place from the
 * overlay or the cache, else known absent from the key filter, else read
 * from storage. fill: tell the cache what storage answered (not for a
 * record this commit is about to write, which would put it in twice).
 * 0 or a storage error. */
/* The expiry a meta record carries, 0 for none or a record it cannot read. */
static uint64_t meta_expiry(const char *v, size_t vn)
{
    uint64_t exp;
    uint8_t t;
    return enc_meta_peek(v, vn, &t, &exp) == 0 ? exp : 0;
}

/* What a meta write (is: a put of v; else a delete) changes in its db's
 * key and expiry counts, given whether the key had a record (was) and that
 * record's expiry. The one rule for count_keys and counts_resolve. */
static void count_delta(bool is, const char *v, size_t vn, bool was, uint64_t wexp, int64_t *dk,
                        int64_t *de)
{
    uint64_t iexp = is ? meta_expiry(v, vn) : 0;
    *dk = (int64_t)is - (int64_t)was;
    *de = (int64_t)(is && iexp) - (int64_t)(was && wexp);
}

/* Whether (mk, kn) has a committed meta record (*exists), and its expiry.
 * With deferred non-NULL, a look-up that only RocksDB could answer is not
 * made: *deferred says so, and *exists means nothing. */
static int committed_meta(struct db *d, const char *mk, size_t kn, uint64_t h, bool fill,
                          bool *exists, uint64_t *exp, bool *deferred)
{
    const char *cv = NULL;
    char *v = NULL;
    size_t vn = 0;
    int rc = 0;
    *exp = 0;
    /* The overlay first: the op's hash finds its node with no hashing, and
     * the prefetch loaded it (db_prefetch2). */
    int ov = stor_peek(d->s, h, STOR_CF_META, mk, kn, &cv, &vn);
    if (ov != STOR_ABSENT) {
        *exists = ov == STOR_PUT;
    } else {
        int hit = d->cache_peek ? d->cache_peek(d->cache_arg, STOR_CF_META, mk, kn, &cv, &vn)
                                : DB_CACHE_MISS;
        if (hit != DB_CACHE_MISS) {
            *exists = hit == DB_CACHE_HIT;
        } else if (!db_keyf_may(&d->keyf, h)) {
            *exists = false; /* never written: a new key, without a storage read */
        } else if (deferred) {
            *deferred = true;
            *exists = false;
            return 0;
        } else {
            rc = stor_get(d->s, STOR_CF_META, mk, kn, &v, &vn);
            if (fill && d->cache_fill && (rc == 0 || rc == KV_ENOTFOUND))
                d->cache_fill(d->cache_arg, STOR_CF_META, mk, kn, rc ? NULL : v, rc ? 0 : vn);
            *exists = rc == 0;
            cv = v;
            if (rc == KV_ENOTFOUND)
                rc = 0;
        }
    }
    *exp = *exists ? meta_expiry(cv, vn) : 0;
    if (v) /* only a storage read allocates; jemalloc's free(NULL) costs 40 instructions */
        free(v);
    return rc;
}

static bool meta_write(const struct stor_op *op)
{
    return op->cf == STOR_CF_META && (op->kind == STOR_OP_PUT || op->kind == STOR_OP_DEL);
}

/* Fills d->created and d->expired (as asked) from the committed meta
 * records of the keys whose meta record b writes or deletes, each key
 * looked up once, in the order of its first write; whether it is created
 * depends on its last (MSET may name a key twice, RENAME deletes and
 * writes its destination). */
static void note_keys(struct db *d, const struct stor_batch *b)
{
    uint64_t now = stor_now_ms();
    size_t cap = 16;
    while (cap < 2 * b->nops)
        cap *= 2;
    uint32_t small[16], *seen = cap == 16 ? small : kv_xmalloc(cap * sizeof *seen);
    bool smallput[16], *lastput = cap == 16 ? smallput : kv_xmalloc(cap * sizeof *lastput);
    memset(seen, 0, cap * sizeof *seen);
    for (size_t i = 0; i < b->nops; i++) {
        if (!meta_write(&b->ops[i]))
            continue;
        size_t s = key_slot(b, i, seen, cap - 1);
        if (!seen[s])
            seen[s] = (uint32_t)i + 1;
        lastput[s] = b->ops[i].kind == STOR_OP_PUT;
    }
    for (size_t i = 0; i < b->nops; i++) {
        const struct stor_op *op = &b->ops[i];
        unsigned dbi;
        const char *k;
        size_t kn;
        if (!meta_write(op))
            continue;
        size_t s = key_slot(b, i, seen, cap - 1);
        bool put = lastput[s];
        if (seen[s] != i + 1 || (!put && !d->track_expired) || db_record_key(b, op, &dbi, &k, &kn))
            continue;
        bool was;
        uint64_t exp;
        int rc = committed_meta(d, stor_op_key(b, op), op->klen, op->hash, true, &was, &exp, NULL);
        bool expired = rc == 0 && was && exp && exp <= now;
        if (expired && d->track_expired)
            db_vec_push(&d->expired, k, kn, dbi);
        if (put && d->track_new && rc == 0 && (!was || expired))
            db_vec_push(&d->created, k, kn, dbi);
    }
    if (seen != small) {
        free(seen);
        free(lastput);
    }
}

/* At most this many writes wait for their prior state (db.h, defer_out):
 * what a settle may have to read in the event loop, about 10 ms of MultiGet
 * here. Past it, writes read at once, as they did before. */
#define DB_DEFER_MAX 4096

/* What one record set changes in the key and expiry counts of the dbs it
 * writes: few entries (mostly one), found by a linear search. */
struct key_counts {
    unsigned n;
    struct {
        unsigned dbi;
        int64_t keys, expires;
        uint64_t defers; /* writes left to resolve */
    } e[ENC_DB_MAX + 1];
};

static unsigned kc_entry(struct key_counts *kc, unsigned dbi)
{
    unsigned j = 0;
    while (j < kc->n && kc->e[j].dbi != dbi)
        j++;
    if (j == kc->n) {
        kc->e[j].dbi = dbi;
        kc->e[j].keys = kc->e[j].expires = 0;
        kc->e[j].defers = 0;
        kc->n++;
    }
    return j;
}

/* Fills kc from b's meta writes: for each key, its newest write in b
 * against its committed record (committed_meta). Every write learns here
 * whether its key existed, the blind ones (a plain SET) included: a hot
 * key is in the overlay or the cache, a new one is not in the key filter.
 * 0 or a storage error, since a count that missed a key would stay
 * wrong. */
static int count_keys(struct db *d, struct stor_batch *b, struct key_counts *kc)
{
    kc->n = 0;
    /* Keyspace events need to know now (note_keys has looked already). */
    if (d->defer_total >= DB_DEFER_MAX) /* take in what was resolved, if it costs no wait */
        stor_resolve_fold_try(d->s, counts_fold, d);
    bool may_defer = !d->track_new && !d->track_expired &&
                     d->defer_total < DB_DEFER_MAX && stor_can_defer(d->s);
    size_t pc = 0; /* the next prior, by op */
    for (size_t i = 0; i < b->nops; i++) {
        const struct stor_op *op = &b->ops[i];
        if (!meta_write(op) || !stor_op_newest(b, i))
            continue;
        const char *mk = stor_op_key(b, op);
        bool was, is = op->kind == STOR_OP_PUT, deferred = false;
        uint64_t wexp;
        while (pc < d->npriors && d->priors[pc].op < i)
            pc++;
        if (pc < d->npriors && d->priors[pc].op == i) {
            was = true;
            wexp = d->priors[pc].exp;
        } else {
            int rc = committed_meta(d, mk, op->klen, op->hash, false, &was, &wexp,
                                    may_defer ? &deferred : NULL);
            if (rc)
                return rc;
        }
        if (deferred) {
            /* A new key among them goes into the rebuilt filter now; the
             * current one may hold it already (that is why it is here). */
            if (is && d->keyf_building)
                db_keyf_add(&d->keyf_next, op->hash);
            stor_batch_defer(b, i);
            kc->e[kc_entry(kc, (unsigned char)mk[0])].defers++;
            continue;
        }
        if (is && !was) {
            db_keyf_add(&d->keyf, op->hash); /* kept even if the commit fails */
            if (d->keyf_building)
                db_keyf_add(&d->keyf_next, op->hash);
        }
        int64_t dk, de;
        count_delta(is, stor_op_value(b, op), op->vlen, was, wexp, &dk, &de);
        if (!dk && !de)
            continue;
        unsigned j = kc_entry(kc, (unsigned char)mk[0]);
        kc->e[j].keys += dk;
        kc->e[j].expires += de;
    }
    return 0;
}

int db_commit(struct db *d)
{
    if (d->track_new || d->track_expired)
        note_keys(d, &d->b);
    d->last_commit_ops = d->b.nops;
    struct key_counts kc;
    int rc = count_keys(d, &d->b, &kc);
    d->npriors = 0;
    if (rc) {
        stor_batch_clear(&d->b);
        return rc;
    }
    rc = stor_commit(d->s, &d->b);
    if (rc == 0 && d->picks.n)
        db_pick_note(d, &d->b);
    if (rc == 0 && d->zedges.n)
        db_zedge_note(d, &d->b);
    if (rc == 0 && d->scache.n)
        db_scache_note(d, &d->b);
    if (rc == 0)
        for (unsigned j = 0; j < kc.n; j++) {
            d->nkeys[kc.e[j].dbi] += (uint64_t)kc.e[j].keys;
            d->nexpires[kc.e[j].dbi] += (uint64_t)kc.e[j].expires;
            d->defer_out[kc.e[j].dbi] += kc.e[j].defers;
            d->defer_total += kc.e[j].defers;
            d->defer_done += kc.e[j].defers;
        }
    if (rc == 0 && d->b.nops && d->on_commit)
        d->on_commit(d->on_commit_arg, &d->b);
    stor_batch_clear(&d->b);
    return rc;
}

int db_record_key(const struct stor_batch *b, const struct stor_op *op, unsigned *dbi,
                  const char **key, size_t *klen)
{
    const char *k = stor_op_key(b, op);
    if (op->cf == STOR_CF_EXPIRY)
        return KV_EINVAL; /* an index entry: its key's meta record is in the set too */
    if (op->cf == STOR_CF_META) {
        uint16_t slot;
        return enc_meta_key_decode(k, op->klen, dbi, &slot, key, klen);
    }
    struct enc_sub sk;
    int rc = enc_sub_decode(k, op->klen, &sk);
    if (rc == 0) {
        *dbi = sk.db;
        *key = sk.key;
        *klen = sk.klen;
    }
    return rc;
}

/* The answers no engine read is needed for: the pending record set's, then
 * the cache's. True with *rc set (and *v, *vn on 0) when one answered; at
 * most cap bytes of the value are copied. */
static inline bool near_get(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn,
                            int *rc, size_t cap)
{
    const char *bv;
    size_t bn;
    int c = stor_batch_lookup(&d->b, cf, k, kn, &bv, &bn);
    if (c == STOR_ABSENT && d->cache_get && cf != STOR_CF_SCORE) {
        c = d->cache_get(d->cache_arg, cf, k, kn, &bv, &bn);
        c = c == DB_CACHE_HIT ? STOR_PUT : c == DB_CACHE_ABSENT ? STOR_DELETED : STOR_ABSENT;
    }
    if (c == STOR_PUT) {
        if (bn > cap)
            bn = cap;
        *v = kv_xmemdup(bv, bn);
        *vn = bn;
        *rc = 0;
        return true;
    }
    if (c == STOR_DELETED) {
        *rc = KV_ENOTFOUND;
        return true;
    }
    return false;
}

/* Puts the engine's answer to a read of (cf, k) in the cache: rc, and on 0
 * *v, *vn. */
static void fill_cache(struct db *d, int cf, const char *k, size_t kn, int rc,
                       char *const *v, const size_t *vn)
{
    if (!d->cache_get || cf == STOR_CF_SCORE)
        return;
    if (rc == 0)
        d->cache_fill(d->cache_arg, cf, k, kn, *v, *vn);
    else if (rc == KV_ENOTFOUND)
        d->cache_fill(d->cache_arg, cf, k, kn, NULL, 0);
}

/* Whether the key count at the commit of a write of this absent meta
 * record would read RocksDB for it (committed_meta): the key filter says
 * the key may have been written. Its absence is cached then even for a
 * write that puts the key, for the count to find it there. */
static bool absence_counted(const struct db *d, int cf, const char *k, size_t kn)
{
    return cf == STOR_CF_META && db_keyf_may(&d->keyf, stor_key_hash(cf, k, kn));
}

/* A point read: near_get's answer (copying at most cap bytes), else the
 * engine's, which fills the cache if fill, an absence only if fill_absent
 * too (or absence_counted). */
static int rget(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn, size_t cap,
                bool fill, bool fill_absent)
{
    int rc;
    if (near_get(d, cf, k, kn, v, vn, &rc, cap))
        return rc;
    rc = stor_get(d->s, cf, k, kn, v, vn);
    if (fill && (rc != KV_ENOTFOUND || fill_absent || absence_counted(d, cf, k, kn)))
        fill_cache(d, cf, k, kn, rc, v, vn);
    return rc;
}

int db_rget(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn)
{
    return rget(d, cf, k, kn, v, vn, SIZE_MAX, true, true);
}

int db_rtake(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn)
{
    return rget(d, cf, k, kn, v, vn, SIZE_MAX, false, false);
}

int db_rget_adding(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn)
{
    return rget(d, cf, k, kn, v, vn, SIZE_MAX, true, false);
}

#define RGET_AHEAD 8 /* keys whose first lines load while one is looked up */

void db_prefetch_key(const struct db *d, int cf, const char *k, size_t kn)
{
    size_t ckn;
    stor_prefetch_slot(d->s, cf, k, kn);
    if (d->cache_prefetch1 && cf != STOR_CF_SCORE)
        d->cache_prefetch1(d->cache_arg, cf, k, kn, &ckn);
}

void db_rget_many(struct db *d, int cf, struct db_many *r, size_t n, bool fill, size_t ahead,
                  size_t cap)
{
    /* Those neither pending nor cached go to the engine together, packed
     * at the front of e (their index in r kept in at[]). */
    struct db_many e;
    size_t m = 0, at[DB_MANY];
    for (size_t j = ahead; j < n && j < RGET_AHEAD; j++)
        db_prefetch_key(d, cf, r->k[j], r->kn[j]);
    for (size_t i = 0; i < n; i++) {
        size_t j = i + RGET_AHEAD;
        if (j >= ahead && j < n)
            db_prefetch_key(d, cf, r->k[j], r->kn[j]);
        if (near_get(d, cf, r->k[i], r->kn[i], &r->v[i], &r->vn[i], &r->rc[i], cap))
            continue;
        e.k[m] = r->k[i];
        e.kn[m] = r->kn[i];
        at[m++] = i;
    }
    if (!m)
        return;
    stor_get_many(d->s, cf, m, e.k, e.kn, e.v, e.vn, e.rc);
    for (size_t j = 0; j < m; j++) {
        size_t i = at[j];
        r->rc[i] = e.rc[j];
        if (e.rc[j] == 0) {
            r->v[i] = e.v[j];
            r->vn[i] = e.vn[j];
        }
        if (fill)
            fill_cache(d, cf, e.k[j], e.kn[j], e.rc[j], &e.v[j], &e.vn[j]);
    }
}

int db_rhas(struct db *d, int cf, const char *k, size_t kn, bool fill_absent)
{
    char *v;
    size_t vn;
    int rc = rget(d, cf, k, kn, &v, &vn, 0, true, fill_absent);
    if (rc == KV_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    free(v);
    return 1;
}

/* ---- key contexts ---- */

void db_prefetch1(const struct db *d, unsigned dbi, const char *key, size_t klen,
                  struct db_pf *pf)
{
    char mk[128];
    *pf = (struct db_pf){.set = false};
    if (enc_meta_key_len(klen) > sizeof mk)
        return; /* long keys: the hash dwarfs the miss */
    size_t n = enc_meta_key(mk, dbi, enc_slot(key, klen), key, klen);
    pf->ov_hash = stor_prefetch_slot(d->s, STOR_CF_META, mk, n);
    if (d->cache_prefetch1)
        pf->cache_hash = d->cache_prefetch1(d->cache_arg, STOR_CF_META, mk, n, &pf->cache_klen);
    pf->set = true;
}

void db_prefetch1f(const struct db *d, unsigned dbi, const char *key, size_t klen,
                   const char *field, size_t flen, struct db_pf *pf)
{
    db_prefetch1(d, dbi, key, klen, pf);
    char sk[160];
    if (!d->last_coll.set || d->last_coll.dbi != dbi || d->last_coll.klen != klen ||
        memcmp(d->last_coll.key, key, klen) != 0 || enc_sub_prefix_len(klen) + flen > sizeof sk)
        return;
    size_t n = enc_sub_prefix(sk, dbi, d->last_coll.slot, key, klen, d->last_coll.version);
    memcpy(sk + n, field, flen);
    n += flen;
    pf->sub_ov_hash = stor_prefetch_slot(d->s, STOR_CF_SUB, sk, n);
    if (d->cache_prefetch1)
        pf->sub_cache_hash = d->cache_prefetch1(d->cache_arg, STOR_CF_SUB, sk, n, &pf->sub_cache_klen);
    pf->sub_set = true;
}

void db_prefetch2(const struct db *d, const struct db_pf *pf)
{
    if (!pf->set)
        return;
    stor_prefetch_node(d->s, pf->ov_hash);
    /* A key the cache surely lacks (no tag matches) may be new: a write
     * of it asks the key filter (count_keys). */
    if (!d->cache_prefetch2 || !d->cache_prefetch2(d->cache_arg, pf->cache_hash, pf->cache_klen))
        db_keyf_prefetch(&d->keyf, pf->ov_hash);
    if (!pf->sub_set)
        return;
    stor_prefetch_node(d->s, pf->sub_ov_hash);
    if (d->cache_prefetch2)
        d->cache_prefetch2(d->cache_arg, pf->sub_cache_hash, pf->sub_cache_klen);
}

void kc_blank(struct db_kc *kc, unsigned dbi, const char *key, size_t klen)
{
    /* Every field zeroed but the two buffers' inline bytes (224 of the
     * struct's), which dbb_init makes unused: once per command. */
    memset(kc, 0, offsetof(struct db_kc, mk));
    memset(&kc->plen, 0, sizeof *kc - offsetof(struct db_kc, plen));
    dbb_init(&kc->mk);
    dbb_init(&kc->sk);
    kc->dbi = dbi;
    kc->key = key;
    kc->klen = klen;
    kc->slot = enc_slot(key, klen);
    dbb_reserve(&kc->mk, enc_meta_key_len(klen));
    kc->mk.n = enc_meta_key(kc->mk.p, dbi, kc->slot, key, klen);
}

static int kc_read(struct db *d, struct db_kc *kc, unsigned dbi, const char *key, size_t klen,
                   bool fill, bool fill_absent)
{
    kc_blank(kc, dbi, key, klen);
    int rc = rget(d, STOR_CF_META, kc->mk.p, kc->mk.n, &kc->raw, &kc->rawn, SIZE_MAX, fill,
                  fill_absent);
    if (rc == KV_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    rc = enc_meta_value_decode(kc->raw, kc->rawn, &kc->m);
    if (rc)
        return rc;
    if (kc->m.expire_ms && kc->m.expire_ms <= stor_now_ms())
        memset(&kc->m, 0, sizeof kc->m); /* expired reads as absent */
    int t = kc->m.type;
    if ((t == ENC_TYPE_HASH || t == ENC_TYPE_SET || t == ENC_TYPE_ZSET) &&
        klen <= sizeof d->last_coll.key) {
        d->last_coll.dbi = dbi;
        d->last_coll.slot = kc->slot;
        d->last_coll.version = kc->m.version;
        d->last_coll.klen = (uint8_t)klen;
        memcpy(d->last_coll.key, key, klen);
        d->last_coll.set = true;
    }
    return 0;
}

int kc_load(struct db *d, struct db_kc *kc, unsigned dbi, const char *key, size_t klen)
{
    return kc_read(d, kc, dbi, key, klen, true, true);
}

int kc_take(struct db *d, struct db_kc *kc, unsigned dbi, const char *key, size_t klen)
{
    return kc_read(d, kc, dbi, key, klen, false, false);
}

void kc_free(struct db_kc *kc)
{
    if (kc->wd)
        db_walk_end(kc);
    if (kc->sd)
        db_scache_walked(kc);
    dbb_free(&kc->mk);
    dbb_free(&kc->sk);
    if (kc->raw) { /* only a load allocates it; as in committed_meta, no free(NULL) */
        free(kc->raw);
        kc->raw = NULL;
    }
}

int kc_want(const struct db_kc *kc, int type)
{
    if (kc->m.type == ENC_TYPE_NONE)
        return KV_ENOTFOUND;
    return kc->m.type == type ? 0 : KV_EWRONGTYPE;
}

int kc_open(struct db *d, struct db_kc *kc, unsigned dbi, const char *key, size_t klen,
            int type)
{
    int rc = kc_load(d, kc, dbi, key, klen);
    return rc ? rc : kc_want(kc, type);
}

void kc_fresh(struct db *d, struct db_kc *kc, int type)
{
    memset(&kc->m, 0, sizeof kc->m);
    kc->m.type = (uint8_t)type;
    if (type == ENC_TYPE_HASH)
        kc->m.coding = d->o.hash_coding;
    else if (type == ENC_TYPE_SET)
        kc->m.coding = d->o.set_coding;
    if (type != ENC_TYPE_STRING)
        kc->m.version = db_version_next(d);
    kc->m.head = kc->m.tail = ENC_LIST_MID;
    kc->plen = 0;
}

int kc_open_write(struct db *d, struct db_kc *kc, unsigned dbi, const char *key, size_t klen,
                  int type)
{
    /* An absent key is created, its meta record put at the commit: no
     * negative entry for it first (db_rget_adding). */
    int rc = kc_read(d, kc, dbi, key, klen, true, false);
    if (rc)
        return rc;
    if (kc->m.type == ENC_TYPE_NONE) {
        kc_fresh(d, kc, type);
        kc->created = true;
        return 0;
    }
    return kc->m.type == type ? 0 : KV_EWRONGTYPE;
}

/* Keeps the expiry index in step with a meta record kc->raw held (if it was
 * read) being replaced by one with expiry exp (0: none, or deleted): the
 * new expiry gets an entry unless the old record had the same (every write
 * of an expiry made one); the old one's entry goes. A record replaced
 * without being read (a plain SET) leaves its entry to active expiry,
 * which drops entries that no longer match. */
static void reindex_expiry(struct db *d, struct db_kc *kc, uint64_t exp)
{
    uint64_t old = 0;
    uint8_t t;
    if (kc->raw && enc_meta_peek(kc->raw, kc->rawn, &t, &old) != 0)
        old = 0;
    if (old == exp)
        return;
    if (old) {
        struct db_buf ek;
        dbb_init(&ek);
        dbb_reserve(&ek, enc_expiry_key_len(kc->klen));
        ek.n = enc_expiry_key(ek.p, kc->dbi, old, kc->slot, kc->key, kc->klen);
        stor_batch_del(&d->b, STOR_CF_EXPIRY, ek.p, ek.n);
        dbb_free(&ek);
    }
    if (exp)
        put_expiry(d, kc->dbi, exp, kc->slot, kc->key, kc->klen);
}

void kc_put_meta(struct db *d, struct db_kc *kc)
{
    char small[64];
    size_t n = enc_meta_value_len(&kc->m);
    char *buf = n <= sizeof small ? small : kv_xmalloc(n);
    enc_meta_value(buf, &kc->m);
    stor_batch_put(&d->b, STOR_CF_META, kc->mk.p, kc->mk.n, buf, n);
    if (buf != small)
        free(buf);
    reindex_expiry(d, kc, kc->m.expire_ms);
}

void kc_del_meta(struct db *d, struct db_kc *kc)
{
    stor_batch_del(&d->b, STOR_CF_META, kc->mk.p, kc->mk.n);
    reindex_expiry(d, kc, 0);
}

/* Notes that the record set's next op deletes the meta record of a key
 * that had one carrying expiry exp, as a read found it with nothing for
 * the key in the record set yet: the key counts take it (db.priors). */
static void note_prior(struct db *d, uint64_t exp)
{
    if (d->npriors == d->cappriors) {
        d->cappriors = d->cappriors ? 2 * d->cappriors : 64;
        d->priors = kv_xrealloc(d->priors, d->cappriors * sizeof *d->priors);
    }
    d->priors[d->npriors++] = (struct db_prior){d->b.nops, exp};
}

void kc_del_read(struct db *d, struct db_kc *kc)
{
    note_prior(d, kc->m.expire_ms); /* kc_del_meta's first op deletes the meta record */
    kc_del_meta(d, kc);
}

size_t kc_prefix_len(struct db_kc *kc)
{
    if (!kc->plen) {
        kc->plen = enc_sub_prefix_len(kc->klen);
        dbb_reserve(&kc->sk, kc->plen);
        enc_sub_prefix(kc->sk.p, kc->dbi, kc->slot, kc->key, kc->klen, kc->m.version);
    }
    return kc->plen;
}

const char *kc_sub(struct db_kc *kc, const char *f, size_t fn, size_t *kn)
{
    kc->sk.n = kc_prefix_len(kc);
    dbb_append(&kc->sk, f, fn);
    *kn = kc->sk.n;
    return kc->sk.p;
}

void kc_subs(struct db_kc *kc, const struct db_str *f, size_t n, struct db_buf *buf,
             struct db_many *r)
{
    size_t pl = kc_prefix_len(kc), total = 0;
    for (size_t i = 0; i < n; i++)
        total += pl + f[i].n;
    buf->n = 0;
    dbb_reserve(buf, total);
    for (size_t i = 0; i < n; i++) {
        char *p = buf->p + buf->n;
        memcpy(p, kc->sk.p, pl);
        if (f[i].n)
            memcpy(p + pl, f[i].p, f[i].n);
        r->k[i] = p;
        r->kn[i] = pl + f[i].n;
        buf->n += r->kn[i];
    }
}

bool kc_sub_written(struct db *d, struct db_kc *kc, const char *f, size_t fn)
{
    size_t kn, pn;
    const char *pv, *k = kc_sub(kc, f, fn, &kn);
    return stor_batch_lookup(&d->b, STOR_CF_SUB, k, kn, &pv, &pn) != STOR_ABSENT;
}

int kc_read_subs(struct db *d, struct db_kc *kc, const struct db_str *f, size_t n, bool fill,
                 void (*each)(void *arg, size_t i, const char *v, size_t vn), void *arg)
{
    struct db_many r;
    struct db_buf buf;
    int rc = 0;
    dbb_init(&buf);
    for (size_t at = 0; at < n; at += DB_MANY) {
        size_t m = n - at < DB_MANY ? n - at : DB_MANY;
        kc_subs(kc, f + at, m, &buf, &r);
        db_rget_many(d, STOR_CF_SUB, &r, m, fill, at == 0, SIZE_MAX);
        for (size_t i = 0; i < m; i++) {
            each(arg, at + i, r.rc[i] == 0 ? r.v[i] : NULL, r.rc[i] == 0 ? r.vn[i] : 0);
            if (r.rc[i] == 0)
                free(r.v[i]);
            else if (r.rc[i] != KV_ENOTFOUND && rc == 0)
                rc = r.rc[i];
        }
    }
    dbb_free(&buf);
    return rc;
}

const char *kc_score(struct db_kc *kc, double score, const char *m, size_t mn, size_t *kn)
{
    char s8[8];
    enc_score_put(s8, score);
    kc->sk.n = kc_prefix_len(kc);
    dbb_append(&kc->sk, s8, 8);
    dbb_append(&kc->sk, m, mn);
    *kn = kc->sk.n;
    return kc->sk.p;
}

/* The prefix ends with the 8-byte version, so adding one to it (with
 * carry) is enough. */
void db_prefix_successor(char *p, size_t n)
{
    for (size_t i = n; i-- > 0;) {
        if ((unsigned char)p[i] != 0xff) {
            p[i]++;
            return;
        }
        p[i] = 0;
    }
}

struct stor_it *kc_iter(struct db *d, struct db_kc *kc, int cf)
{
    size_t pl = kc_prefix_len(kc);
    char small[160];
    char *hi = pl <= sizeof small ? small : kv_xmalloc(pl);
    memcpy(hi, kc->sk.p, pl);
    db_prefix_successor(hi, pl);
    struct stor_it *it = db_scache_iter(d, kc, cf, kc->sk.p, pl, hi, pl);
    if (!it) {
        db_walk_start(d, kc);
        it = cf == STOR_CF_SCORE ? db_zedge_iter(d, kc->sk.p, pl, hi)
                                 : stor_it_create(d->s, cf, kc->sk.p, pl, hi, pl);
    }
    if (hi != small)
        free(hi);
    return it;
}

/* Counts live records of a BLIND collection, skipping those this operation
 * has deleted already. stop_at_one: only tell empty from non-empty. */
static int blind_count(struct db *d, struct db_kc *kc, bool stop_at_one, uint64_t *n)
{
    struct stor_it *it = kc_iter(d, kc, STOR_CF_SUB);
    uint64_t c = 0;
    for (stor_it_first(it); stor_it_valid(it); stor_it_next(it)) {
        size_t kn;
        const char *k = stor_it_key(it, &kn);
        const char *bv;
        size_t bn;
        if (stor_batch_lookup(&d->b, STOR_CF_SUB, k, kn, &bv, &bn) == STOR_DELETED)
            continue;
        c++;
        if (stop_at_one)
            break;
    }
    int rc = stor_it_status(it);
    stor_it_free(it);
    *n = c;
    return rc;
}

int kc_size(struct db *d, struct db_kc *kc, uint64_t *n)
{
    if (kc->m.type == ENC_TYPE_NONE) {
        *n = 0;
        return 0;
    }
    if (kc->m.coding == ENC_CODING_BLIND)
        return blind_count(d, kc, false, n);
    *n = kc->m.size;
    return 0;
}

int kc_settle(struct db *d, struct db_kc *kc)
{
    if (kc->m.coding == ENC_CODING_BLIND) {
        uint64_t n;
        int rc = blind_count(d, kc, true, &n);
        if (rc)
            return rc;
        if (n == 0)
            kc_del_meta(d, kc);
        return 0; /* a blind meta record has nothing to update */
    }
    if (kc->m.size == 0)
        kc_del_meta(d, kc);
    else
        kc_put_meta(d, kc);
    return 0;
}

/* ---- copying collections (RENAME, COPY) ---- */

static void copy_cf(struct db *d, struct db_kc *src, struct db_kc *dst, int cf, int *rc)
{
    struct stor_it *it = kc_iter(d, src, cf);
    for (stor_it_first(it); stor_it_valid(it); stor_it_next(it)) {
        size_t kn, vn, sn;
        const char *k = stor_it_key(it, &kn);
        const char *v = stor_it_value(it, &vn);
        const char *suffix = kc_suffix(src, k, kn, &sn);
        size_t dkn;
        const char *dk = kc_sub(dst, suffix, sn, &dkn);
        stor_batch_put(&d->b, cf, dk, dkn, v, vn);
    }
    if (!*rc)
        *rc = stor_it_status(it);
    stor_it_free(it);
}

void db_copy_records(struct db *d, struct db_kc *src, struct db_kc *dst, int *rc)
{
    *rc = 0;
    dst->m = src->m;
    dst->m.value = NULL;
    dst->m.vlen = 0;
    if (src->m.type == ENC_TYPE_STRING) {
        /* The string value lives in src's raw meta bytes: write it now. */
        dst->m.value = src->m.value;
        dst->m.vlen = src->m.vlen;
        kc_put_meta(d, dst);
        return;
    }
    dst->m.version = db_version_next(d);
    dst->plen = 0;
    copy_cf(d, src, dst, STOR_CF_SUB, rc);
    if (src->m.type == ENC_TYPE_ZSET)
        copy_cf(d, src, dst, STOR_CF_SCORE, rc);
    kc_put_meta(d, dst);
}

/* ---- key space ---- */

int db_type(struct db *d, unsigned dbi, const char *key, size_t klen, int *type)
{
    struct db_kc kc;
    int rc = kc_load(d, &kc, dbi, key, klen);
    *type = kc.m.type;
    kc_free(&kc);
    return rc;
}

int db_exists(struct db *d, unsigned dbi, const char *key, size_t klen)
{
    int type = 0;
    int rc = db_type(d, dbi, key, klen, &type);
    return rc ? rc : type != ENC_TYPE_NONE;
}

/* The meta keys of keys[0..m) (m at most DB_MANY) of db dbi, laid one
 * after another in buf (which it empties first), named by r->k[], r->kn[]. */
static void meta_keys(struct db_buf *buf, unsigned dbi, const struct db_str *keys, size_t m,
                      struct db_many *r)
{
    size_t total = 0;
    for (size_t i = 0; i < m; i++)
        total += enc_meta_key_len(keys[i].n);
    buf->n = 0;
    dbb_reserve(buf, total); /* once, so that the keys laid in it stay put */
    for (size_t i = 0; i < m; i++) {
        r->k[i] = buf->p + buf->n;
        r->kn[i] = enc_meta_key(buf->p + buf->n, dbi, enc_slot(keys[i].p, keys[i].n),
                                keys[i].p, keys[i].n);
        buf->n += r->kn[i];
    }
}

int db_metas(struct db *d, unsigned dbi, const struct db_str *keys, size_t n,
             size_t prefetched, bool peek,
             void (*each)(void *arg, size_t i, const struct enc_meta *m), void *arg)
{
    struct db_many r;
    struct db_buf buf;
    int rc = 0;
    dbb_init(&buf);
    uint64_t now = stor_now_ms();
    for (size_t at = 0; at < n; at += DB_MANY) {
        size_t m = n - at < DB_MANY ? n - at : DB_MANY;
        meta_keys(&buf, dbi, keys + at, m, &r);
        db_rget_many(d, STOR_CF_META, &r, m, true, prefetched > at ? prefetched - at : 0,
                     peek ? ENC_META_HDR : SIZE_MAX);
        for (size_t i = 0; i < m; i++) {
            struct enc_meta meta;
            int e = r.rc[i];
            if (e == 0) {
                if (peek) {
                    memset(&meta, 0, sizeof meta);
                    e = enc_meta_peek(r.v[i], r.vn[i], &meta.type, &meta.expire_ms);
                } else {
                    e = enc_meta_value_decode(r.v[i], r.vn[i], &meta);
                }
                each(arg, at + i,
                     e == 0 && !(meta.expire_ms && meta.expire_ms <= now) ? &meta : NULL);
                free(r.v[i]);
            } else {
                each(arg, at + i, NULL);
            }
            if (e && e != KV_ENOTFOUND && rc == 0)
                rc = e;
        }
    }
    dbb_free(&buf);
    return rc;
}

static void exists_one(void *arg, size_t i, const struct enc_meta *m)
{
    (void)i;
    *(uint64_t *)arg += m != NULL;
}

int db_exists_many(struct db *d, unsigned dbi, const struct db_str *keys, size_t n,
                   size_t prefetched, uint64_t *count)
{
    *count = 0;
    return db_metas(d, dbi, keys, n, prefetched, true, exists_one, count);
}

int db_del_many(struct db *d, unsigned dbi, const struct db_str *keys, size_t n,
                size_t prefetched, unsigned char *deleted)
{
    struct db_many r;
    struct db_buf buf;
    int rc = 0;
    bool any = false;
    uint64_t now = stor_now_ms();
    db_begin(d);
    memset(deleted, 0, n);
    dbb_init(&buf);
    for (size_t at = 0; at < n && rc == 0; at += DB_MANY) {
        size_t m = n - at < DB_MANY ? n - at : DB_MANY;
        meta_keys(&buf, dbi, keys + at, m, &r);
        /* No fill: the delete would only turn a filled entry into a
         * negative one (kc_take). A key an earlier chunk deleted reads as
         * absent from the record set. */
        db_rget_many(d, STOR_CF_META, &r, m, false, prefetched > at ? prefetched - at : 0,
                     SIZE_MAX);
        for (size_t i = 0; i < m; i++) {
            struct enc_meta meta;
            const char *pv;
            size_t pn;
            int e = r.rc[i];
            if (e == 0) {
                e = enc_meta_value_decode(r.v[i], r.vn[i], &meta);
                /* Live, and not deleted already by this command (a key named
                 * twice in one chunk): what was read is the committed record,
                 * which the key counts take from the note. */
                if (e == 0 && !(meta.expire_ms && meta.expire_ms <= now) &&
                    stor_batch_lookup(&d->b, STOR_CF_META, r.k[i], r.kn[i], &pv, &pn) ==
                        STOR_ABSENT) {
                    struct db_kc kc;
                    kc_blank(&kc, dbi, keys[at + i].p, keys[at + i].n);
                    kc.m = meta;
                    kc.raw = r.v[i]; /* lent: reindex_expiry reads the old expiry */
                    kc.rawn = r.vn[i];
                    kc_del_read(d, &kc);
                    kc.raw = NULL;
                    kc_free(&kc);
                    deleted[at + i] = 1;
                    any = true;
                }
                free(r.v[i]);
            }
            if (e && e != KV_ENOTFOUND && rc == 0)
                rc = e;
        }
    }
    dbb_free(&buf);
    if (rc == 0 && any)
        rc = db_commit(d);
    if (rc) {
        db_begin(d); /* nothing deleted */
        memset(deleted, 0, n);
    }
    return rc;
}

int db_del(struct db *d, unsigned dbi, const char *key, size_t klen)
{
    struct db_str k = {key, klen};
    unsigned char deleted;
    int rc = db_del_many(d, dbi, &k, 1, 0, &deleted);
    return rc ? rc : deleted;
}

int db_expire(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t when_ms,
              int flags)
{
    struct db_kc kc;
    db_begin(d);
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc || kc.m.type == ENC_TYPE_NONE)
        goto out;
    uint64_t cur = kc.m.expire_ms;
    /* No expiry is an infinite TTL: GT never beats it, LT always does. */
    if ((flags & DB_EXP_NX) && cur)
        goto out;
    if ((flags & DB_EXP_XX) && !cur)
        goto out;
    if ((flags & DB_EXP_GT) && (!cur || when_ms <= cur))
        goto out;
    if ((flags & DB_EXP_LT) && cur && when_ms >= cur)
        goto out;
    bool gone = when_ms <= stor_now_ms();
    if (gone) {
        kc_del_meta(d, &kc);
    } else {
        kc.m.expire_ms = when_ms;
        kc_put_meta(d, &kc);
    }
    rc = db_commit(d);
    if (rc == 0)
        rc = gone ? 2 : 1;
out:
    kc_free(&kc);
    return rc;
}

int db_persist(struct db *d, unsigned dbi, const char *key, size_t klen)
{
    struct db_kc kc;
    db_begin(d);
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc == 0 && kc.m.type != ENC_TYPE_NONE && kc.m.expire_ms) {
        kc.m.expire_ms = 0;
        kc_put_meta(d, &kc);
        rc = db_commit(d);
        if (rc == 0)
            rc = 1;
    }
    kc_free(&kc);
    return rc;
}

int db_expiretime(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t *expire_ms)
{
    struct db_kc kc;
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc == 0 && kc.m.type == ENC_TYPE_NONE)
        rc = KV_ENOTFOUND;
    *expire_ms = kc.m.expire_ms;
    kc_free(&kc);
    return rc;
}

/* Shared by RENAME and COPY: src → dst, optionally keeping dst. */
static int move_key(struct db *d, unsigned sdb, const char *src, size_t srcn, unsigned ddb,
                    const char *dst, size_t dstn, int keep_dst, int delete_src)
{
    struct db_kc s, t;
    db_begin(d);
    int rc = delete_src ? kc_take(d, &s, sdb, src, srcn) : kc_load(d, &s, sdb, src, srcn);
    int rc2 = kc_load(d, &t, ddb, dst, dstn);
    if (rc || (rc = rc2))
        goto out;
    if (s.m.type == ENC_TYPE_NONE) {
        rc = KV_ENOTFOUND;
        goto out;
    }
    if (sdb == ddb && srcn == dstn && memcmp(src, dst, srcn) == 0) {
        rc = keep_dst ? 0 : 1; /* RENAME k k: nothing to do */
        goto out;
    }
    if (keep_dst && t.m.type != ENC_TYPE_NONE) {
        rc = 0;
        goto out;
    }
    db_copy_records(d, &s, &t, &rc);
    if (rc)
        goto out;
    if (delete_src)
        kc_del_read(d, &s); /* read first, with nothing in the record set */
    rc = db_commit(d);
    if (rc == 0)
        rc = 1;
out:
    kc_free(&s);
    kc_free(&t);
    return rc;
}

int db_rename(struct db *d, unsigned dbi, const char *src, size_t srcn, const char *dst,
              size_t dstn, int nx)
{
    return move_key(d, dbi, src, srcn, dbi, dst, dstn, nx, 1);
}

int db_copy(struct db *d, unsigned sdb, const char *src, size_t srcn, unsigned ddb,
            const char *dst, size_t dstn, int replace)
{
    return move_key(d, sdb, src, srcn, ddb, dst, dstn, !replace, 0);
}

int db_move(struct db *d, unsigned sdb, unsigned ddb, const char *key, size_t klen)
{
    return move_key(d, sdb, key, klen, ddb, key, klen, 1, 1);
}

int db_dump(struct db *d, unsigned dbi, const char *key, size_t klen, struct db_value *v)
{
    struct db_kc kc;
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc == 0 && kc.m.type == ENC_TYPE_NONE)
        rc = KV_ENOTFOUND;
    if (rc)
        goto out;
    v->type = kc.m.type;
    v->expire_ms = kc.m.expire_ms;
    if (kc.m.type == ENC_TYPE_STRING) {
        db_vec_push(&v->items, kc.m.value, kc.m.vlen, 0);
        goto out;
    }
    /* Sub records sort by field: a list's positions are big-endian, so
     * its elements come in order too. */
    struct stor_it *it = kc_iter(d, &kc, STOR_CF_SUB);
    for (stor_it_first(it); rc == 0 && stor_it_valid(it); stor_it_next(it)) {
        size_t kn, vn, fn;
        const char *k = stor_it_key(it, &kn), *val = stor_it_value(it, &vn);
        const char *f = kc_suffix(&kc, k, kn, &fn);
        switch (kc.m.type) {
        case ENC_TYPE_HASH:
            db_vec_push(&v->items, f, fn, 0);
            db_vec_push(&v->items, val, vn, 0);
            break;
        case ENC_TYPE_SET:
            db_vec_push(&v->items, f, fn, 0);
            break;
        case ENC_TYPE_ZSET:
            if (vn != 8) {
                rc = KV_ECORRUPT;
                break;
            }
            db_vec_push(&v->items, f, fn, enc_score_get(val));
            break;
        default:
            db_vec_push(&v->items, val, vn, 0);
        }
    }
    if (rc == 0)
        rc = stor_it_status(it);
    stor_it_free(it);
out:
    kc_free(&kc);
    return rc;
}

int db_restore(struct db *d, unsigned dbi, const char *key, size_t klen,
               const struct db_value *v, int replace)
{
    struct db_kc kc;
    db_begin(d);
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc || (kc.m.type != ENC_TYPE_NONE && !replace))
        goto out;
    const struct db_vec *it = &v->items;
    kc_fresh(d, &kc, v->type);
    if (v->type == ENC_TYPE_STRING) {
        kc.m.value = db_vec_ptr(it, 0);
        kc.m.vlen = db_vec_len(it, 0);
    } else {
        kc.m.coding = ENC_CODING_COUNTED; /* the size is known: keep it */
        size_t stride = v->type == ENC_TYPE_HASH ? 2 : 1;
        for (size_t i = 0; i < it->n; i += stride) {
            size_t kn, fn = db_vec_len(it, i);
            const char *k, *f = db_vec_ptr(it, i);
            char b8[8];
            switch (v->type) {
            case ENC_TYPE_HASH:
                k = kc_sub(&kc, f, fn, &kn);
                stor_batch_put(&d->b, STOR_CF_SUB, k, kn, db_vec_ptr(it, i + 1),
                               db_vec_len(it, i + 1));
                break;
            case ENC_TYPE_SET:
                k = kc_sub(&kc, f, fn, &kn);
                stor_batch_put(&d->b, STOR_CF_SUB, k, kn, "", 0);
                break;
            case ENC_TYPE_ZSET: {
                double sc = it->items[i].score == 0 ? 0.0 : it->items[i].score; /* no -0 */
                enc_score_put(b8, sc);
                k = kc_sub(&kc, f, fn, &kn);
                stor_batch_put(&d->b, STOR_CF_SUB, k, kn, b8, 8);
                k = kc_score(&kc, sc, f, fn, &kn);
                stor_batch_put(&d->b, STOR_CF_SCORE, k, kn, "", 0);
                break;
            }
            default: /* a list */
                enc_put_u64(b8, kc.m.tail++);
                k = kc_sub(&kc, b8, 8, &kn);
                stor_batch_put(&d->b, STOR_CF_SUB, k, kn, f, fn);
            }
        }
        kc.m.size = it->n / stride;
    }
    kc.m.expire_ms = v->expire_ms;
    kc_put_meta(d, &kc);
    rc = db_commit(d);
    if (rc == 0)
        rc = 1;
out:
    kc_free(&kc);
    return rc;
}

/* [db|0000, db|4000): every record of one database in every column family,
 * since slots stay below 0x4000. */
static void db_range(unsigned dbi, char lo[3], char hi[3])
{
    lo[0] = (char)dbi;
    lo[1] = lo[2] = 0;
    hi[0] = (char)dbi;
    hi[1] = (char)(ENC_SLOTS >> 8);
    hi[2] = 0;
}

/* SCAN's work per call is bounded, as Redis bounds it (ten empty buckets
 * per key asked for): RocksDB keeps a deleted key's tombstone, and older
 * versions of rewritten ones, until compaction, and one iterator step
 * passes all of them in a row. After 950,000 DELs, SCAN 0 COUNT 10 walked
 * them all in one call: 340-480 ms with every client waiting. So a call
 * walks ranges of slots, each with RocksDB allowed SCAN_SKIP unseen
 * entries; a range that needs more is walked again, an eighth as wide
 * (down to one slot, which is walked whole: only keys sharing a hash tag
 * put that many in one slot). Each range that fits sets the next one's
 * width from its own time, aiming at SCAN_RANGE_US. A call starts no
 * range after SCAN_CALL_US once it has finished one, and ends at count
 * keys; its cursor then holds where to go on and the width, so the next
 * call does not learn it again. A call may return fewer keys than count,
 * or none, with a cursor that goes on, as Redis's may. */
#define SCAN_SKIP 1024
#define SCAN_RANGE_US 250
#define SCAN_CALL_US 1000
/* A new scan's first range is all slots, unless more meta records than
 * this wait in the write-back for their order: a walk of all slots would
 * order them all at once (SCAN right after 300,000 SETs: 17-67 ms with
 * every client waiting), where one of SCAN_FIRST_NARROW slots orders one
 * of their 64 bands (stor_waiting), and each range after it one or two. */
#define SCAN_WAITING_MAX 4096
#define SCAN_FIRST_NARROW 128

/* The user key, slot, type and expiry of the meta record it stands on;
 * false for one that does not decode, which walks pass over. */
static bool meta_at(struct stor_it *it, const char **uk, size_t *ukn, uint16_t *slot,
                    uint8_t *type, uint64_t *exp)
{
    size_t kn, vn;
    const char *k = stor_it_key(it, &kn);
    const char *v = stor_it_value(it, &vn);
    unsigned kdb;
    return enc_meta_key_decode(k, kn, &kdb, slot, uk, ukn) == 0 &&
           enc_meta_peek(v, vn, type, exp) == 0;
}

/* The position a SCAN cursor holds: the range width to go on with (its
 * log2, so that the next call does not learn it again), slot(2), then the
 * key to start at, inclusive (empty: the slot's start). */
static char *scan_pos(unsigned span, uint16_t slot, const char *k, size_t kn, bool after,
                      size_t *n)
{
    *n = 3 + kn + after;
    char *p = kv_xmalloc(*n);
    unsigned lg = 0;
    while ((1u << lg) < span)
        lg++;
    p[0] = (char)lg;
    enc_put_u16(p + 1, slot);
    if (kn)
        memcpy(p + 3, k, kn);
    if (after)
        p[3 + kn] = 0; /* the next key up, in bytewise order */
    return p;
}

int db_scan(struct db *d, unsigned dbi, const char *cursor, size_t cn, const char *pat,
            size_t patn, int type, uint64_t count, struct db_vec *out, char **next,
            size_t *nextn)
{
    *next = NULL;
    *nextn = 0;
    if (db_surely_empty(d, dbi))
        return 0; /* as db_randomkey: no walk over what deletes left */
    if (count == 0)
        count = 10;
    unsigned slot = 0;
    unsigned span = stor_waiting(d->s, STOR_CF_META) > SCAN_WAITING_MAX ? SCAN_FIRST_NARROW
                                                                          : ENC_SLOTS;
    const char *from = "";
    size_t fromn = 0;
    if (cursor && cn >= 3 && (unsigned char)cursor[0] <= 14) {
        span = 1u << (unsigned char)cursor[0];
        slot = enc_get_u16(cursor + 1);
        from = cursor + 3;
        fromn = cn - 3;
    }
    if (slot >= ENC_SLOTS)
        return 0;
    uint64_t now = stor_now_ms(), seen = 0;
    struct db_buf start;
    dbb_init(&start);
    int rc = 0;
    uint64_t t0 = stor_mono_us(), tr = t0;
    bool progress = false;
    while (slot < ENC_SLOTS && !(progress && tr - t0 >= SCAN_CALL_US)) {
        unsigned end = span < ENC_SLOTS - slot ? slot + span : ENC_SLOTS;
        char lo[3], hi[3];
        lo[0] = hi[0] = (char)dbi;
        enc_put_u16(lo + 1, (uint16_t)slot);
        enc_put_u16(hi + 1, (uint16_t)end);
        struct stor_it *it =
            stor_it_create_limited(d->s, STOR_CF_META, lo, 3, hi, 3, span > 1 ? SCAN_SKIP : 0);
        dbb_reserve(&start, 3 + fromn);
        memcpy(start.p, lo, 3);
        memcpy(start.p + 3, from, fromn);
        start.n = 3 + fromn;
        stor_it_seek(it, start.p, start.n);
        size_t mark = out->n, mark_used = out->used;
        uint64_t seen0 = seen;
        bool full = false, stopped = false;
        for (; stor_it_valid(it); stor_it_next(it)) {
            const char *uk;
            size_t ukn;
            uint16_t ks;
            uint8_t t;
            uint64_t exp;
            if (!meta_at(it, &uk, &ukn, &ks, &t, &exp))
                continue;
            bool live = !exp || exp > now;
            if (live && (!type || t == type) && (!pat || db_glob_match(pat, patn, uk, ukn, 0)))
                db_vec_push(out, uk, ukn, 0);
            if (++seen >= count) {
                /* Every key up to here is sound unless RocksDB's side
                 * stopped before it: the keys given after that came from
                 * the overlay alone. */
                stopped = stor_it_stopped(it);
                full = true;
                if (!stopped) {
                    char *pos = scan_pos(span, ks, uk, ukn, true, nextn); /* uk dies with the move */
                    stor_it_next(it);
                    if (stor_it_valid(it) || stor_it_stopped(it) || end < ENC_SLOTS)
                        *next = pos;
                    else
                        free(pos); /* nothing after it: the scan is complete */
                }
                break;
            }
        }
        if (!full)
            stopped = stor_it_stopped(it);
        rc = stor_it_status(it);
        stor_it_free(it);
        if (rc) {
            free(*next);
            *next = NULL;
            break;
        }
        if (stopped) {
            /* Too many unseen entries for one walk: this range again,
             * narrower; what it gave may have passed keys over. */
            out->n = mark;
            out->used = mark_used;
            seen = seen0;
            span = span / 8 ? span / 8 : 1;
            tr = stor_mono_us();
            continue;
        }
        if (full)
            break;
        slot = end; /* the range is done */
        from = "";
        fromn = 0;
        progress = true;
        uint64_t now_us = stor_mono_us(), took = now_us - tr + 1;
        tr = now_us;
        /* As wide as SCAN_RANGE_US would take at this range's pace, at
         * most twice and at least a quarter of this one. */
        uint64_t w = (uint64_t)span * SCAN_RANGE_US / took;
        w = w > 2ull * span ? 2ull * span : w < span / 4 ? span / 4 : w;
        span = w < 1 ? 1 : w > ENC_SLOTS ? ENC_SLOTS : (unsigned)w;
    }
    dbb_free(&start);
    if (!rc && !*next && slot < ENC_SLOTS && seen < count) /* out of ranges: on from here */
        *next = scan_pos(span, (uint16_t)slot, from, fromn, false, nextn);
    return rc;
}

int db_randomkey(struct db *d, unsigned dbi, char **key, size_t *klen)
{
    /* An emptied db may still hold tombstones until compaction, which the
     * walk below would step over one by one. */
    if (db_surely_empty(d, dbi))
        return KV_ENOTFOUND;
    char lo[3], hi[3];
    db_range(dbi, lo, hi);
    struct stor_it *it = stor_it_create(d->s, STOR_CF_META, lo, 3, hi, 3);
    db_watch_skips(d);
    uint64_t skip0 = stor_skips();
    char start[3];
    start[0] = (char)dbi;
    enc_put_u16(start + 1, (uint16_t)(db_rand(d) % ENC_SLOTS));
    stor_it_seek(it, start, 3);
    uint64_t now = stor_now_ms();
    int rc = KV_ENOTFOUND;
    /* From a random slot forward, wrapping once; skip expired records. */
    for (int pass = 0; pass < 2 && rc == KV_ENOTFOUND; pass++) {
        if (pass == 1)
            stor_it_first(it);
        for (; stor_it_valid(it); stor_it_next(it)) {
            const char *uk;
            size_t ukn;
            uint16_t slot;
            uint8_t t;
            uint64_t exp;
            if (!meta_at(it, &uk, &ukn, &slot, &t, &exp) || (exp && exp <= now))
                continue;
            *key = kv_xmemdup(uk, ukn);
            *klen = ukn;
            rc = 0;
            break;
        }
    }
    int st = stor_it_status(it);
    stor_it_free(it);
    /* A few keys among many deleted ones: every call walks the tombstones
     * between a random slot and the next live key, until compaction drops
     * them. One that stepped over at least DB_TIDY_MIN, and four times as
     * many as the db holds keys, asks for that compaction now, of the db's
     * meta records: what it rewrites is then mostly what it drops. */
    uint64_t dead = stor_skips() - skip0;
    if (dead >= DB_TIDY_MIN && dead / 4 >= d->nkeys[dbi]) {
        struct stor_range r = {STOR_CF_META, lo, hi, 3, 3};
        stor_compact_async(d->s, &r, 1);
    }
    if (st && rc == 0) {
        free(*key);
        *key = NULL;
    }
    return st ? st : rc;
}

/* stor's resolver (db_init): a deferred write and the record RocksDB held
 * before it. Under stor's resolver lock, on the flusher's thread or ours. */
static void counts_resolve(void *arg, int kind, const char *k, size_t kn, const char *v,
                           size_t vn, const char *old, size_t oldn, bool had)
{
    struct db *d = arg;
    int64_t dk, de;
    count_delta(kind == STOR_OP_PUT, v, vn, had, had ? meta_expiry(old, oldn) : 0, &dk, &de);
    unsigned dbi = kn ? (unsigned char)k[0] : 0;
    d->res_keys[dbi] += dk;
    d->res_exp[dbi] += de;
    d->res_done[dbi]++;
    d->res_any = true;
}

/* Under the resolver lock (stor_resolve_settle). */
static void counts_fold(void *arg)
{
    struct db *d = arg;
    if (!d->res_any)
        return;
    for (unsigned i = 0; i <= ENC_DB_MAX; i++) {
        if (!d->res_done[i])
            continue;
        d->nkeys[i] += (uint64_t)d->res_keys[i];
        d->nexpires[i] += (uint64_t)d->res_exp[i];
        d->defer_out[i] -= d->res_done[i];
        d->defer_total -= d->res_done[i];
        d->res_keys[i] = d->res_exp[i] = 0;
        d->res_done[i] = 0;
    }
    d->res_any = false;
}

int db_counts_settle(struct db *d, bool resolve)
{
    return stor_resolve_settle(d->s, resolve, counts_fold, d);
}

int db_keycount(struct db *d, unsigned dbi, uint64_t *keys, uint64_t *expires)
{
    int rc = d->defer_total ? db_counts_settle(d, true) : 0;
    *keys = d->nkeys[dbi];
    *expires = d->nexpires[dbi];
    return rc;
}

uint64_t db_keycount_total(const struct db *d)
{
    uint64_t n = 0;
    for (unsigned i = 0; i <= ENC_DB_MAX; i++)
        n += d->nkeys[i];
    return n;
}

int db_keycount_scan(struct db *d, unsigned dbi, uint64_t *keys, uint64_t *expires)
{
    char lo[3], hi[3];
    db_range(dbi, lo, hi);
    struct stor_it *it = stor_it_create(d->s, STOR_CF_META, lo, 3, hi, 3);
    stor_it_first(it);
    uint64_t c = 0, e = 0;
    for (; stor_it_valid(it); stor_it_next(it)) {
        size_t vn;
        const char *v = stor_it_value(it, &vn);
        uint8_t t;
        uint64_t exp;
        c++;
        e += enc_meta_peek(v, vn, &t, &exp) == 0 && exp;
    }
    int rc = stor_it_status(it);
    stor_it_free(it);
    *keys = c;
    *expires = e;
    return rc;
}

/* Due expiry entries gathered for one batched read of their keys' meta
 * records: each entry's index key and meta key lie in buf at offsets. */
struct reap_set {
    struct db_buf buf;
    size_t n;
    struct reap_item {
        size_t ko, kn, mko, mkn;
        unsigned dbi;
        uint64_t exp;
    } e[DB_MANY];
};

/* Deletes the gathered entries, and each key whose meta record still
 * carries its entry's time (a blind SET may have replaced the record since,
 * or an earlier entry of this pass deleted it); raises their dbs' floors.
 * 0, or a read's error (nothing then is deleted, and the caller drops the
 * record set). Most keys read here are deleted next: a miss fills no cache. */
static int reap_set_apply(struct db *d, struct reap_set *r, uint64_t *reaped, uint64_t touched[4])
{
    struct db_many g;
    int err = 0;
    for (size_t i = 0; i < r->n; i++) {
        g.k[i] = r->buf.p + r->e[i].mko;
        g.kn[i] = r->e[i].mkn;
    }
    db_rget_many(d, STOR_CF_META, &g, r->n, false, 0, ENC_META_HDR);
    for (size_t i = 0; i < r->n; i++) {
        if (g.rc[i] == 0) {
            uint8_t t;
            uint64_t mexp;
            if (enc_meta_peek(g.v[i], g.vn[i], &t, &mexp) == 0 && mexp == r->e[i].exp) {
                /* The pass only deletes, and a key it deleted reads absent:
                 * what was read is the committed record. */
                note_prior(d, mexp);
                stor_batch_del(&d->b, STOR_CF_META, g.k[i], g.kn[i]);
                (*reaped)++;
            }
            free(g.v[i]);
        } else if (g.rc[i] != KV_ENOTFOUND && !err) {
            err = g.rc[i];
        }
    }
    for (size_t i = 0; !err && i < r->n; i++) {
        const struct reap_item *e = &r->e[i];
        stor_batch_del(&d->b, STOR_CF_EXPIRY, r->buf.p + e->ko, e->kn);
        efloor_raise(d, e->dbi, r->buf.p + e->ko, e->kn);
        touched[e->dbi / 64] |= 1ull << (e->dbi % 64);
    }
    r->n = 0;
    r->buf.n = 0;
    return err;
}

int db_reap(struct db *d, uint64_t budget, uint64_t *reaped, bool *more)
{
    uint64_t now = stor_now_ms(), seen = 0, next = UINT64_MAX;
    *reaped = 0;
    *more = false;
    if (now < d->expiry_next)
        return 0;
    /* From db 0 on; past the marker "" (expiry_index_check). In each db the
     * entries are in time order: from the db's floor, gather the due ones,
     * then seek to the next db's floor. The gathered ones are deleted (and
     * become their db's floor) before any seek, which starts from a floor;
     * should the commit fail, those floors start again at 0. */
    struct stor_it *it = stor_it_create(d->s, STOR_CF_EXPIRY, "\0", 1, NULL, 0);
    struct reap_set *r = kv_xmalloc(sizeof *r);
    uint64_t touched[4] = {0, 0, 0, 0}; /* dbs whose floor this pass raised */
    dbb_init(&r->buf);
    r->n = 0;
    db_begin(d);
    int rc = 0;
    efloor_seek(d, it, 0);
    while (rc == 0 && stor_it_valid(it)) {
        size_t kn;
        const char *k = stor_it_key(it, &kn);
        unsigned dbi;
        uint64_t exp;
        size_t ko = r->buf.n, mko = ko + kn, mkn;
        dbb_reserve(&r->buf, mko + kn);
        if (enc_expiry_key_decode(k, kn, &dbi, &exp, r->buf.p + mko, &mkn) != 0) {
            /* Not an index entry, so not ours to delete: the storage
             * layer keeps a record of its own in every family (stor_int.h,
             * STOR_APPLIED_KEY), and deleting it here lost the family's
             * place in the journal after a crash. */
            stor_it_next(it);
            continue;
        }
        const struct db_efloor *f = &d->efloor[dbi];
        if (exp < f->exp || (exp == f->exp && f->kn && db_bytes_cmp(k, kn, f->key, f->kn) < 0)) {
            /* Stepped into a db below its floor. */
            if (r->n && (rc = reap_set_apply(d, r, reaped, touched)))
                break;
            efloor_seek(d, it, dbi);
            continue;
        }
        if (exp > now) {
            next = exp < next ? exp : next;
            if (r->n && (rc = reap_set_apply(d, r, reaped, touched)))
                break;
            if (dbi == ENC_DB_MAX)
                break;
            efloor_seek(d, it, dbi + 1);
            continue;
        }
        if (seen++ == budget) {
            *more = true;
            break;
        }
        memcpy(r->buf.p + ko, k, kn);
        r->buf.n = mko + mkn;
        r->e[r->n++] = (struct reap_item){ko, kn, mko, mkn, dbi, exp};
        if (r->n == DB_MANY)
            rc = reap_set_apply(d, r, reaped, touched);
        stor_it_next(it);
    }
    if (rc == 0 && r->n)
        rc = reap_set_apply(d, r, reaped, touched);
    if (rc == 0)
        rc = stor_it_status(it);
    stor_it_free(it);
    dbb_free(&r->buf);
    free(r);
    if (rc == 0)
        rc = db_commit(d);
    if (rc) {
        /* The entries stay: their dbs' floors go back to the start. */
        for (unsigned i = 0; i < 256; i++)
            if (touched[i / 64] & 1ull << (i % 64))
                efloor_reset(d, i, 0);

        *reaped = 0;
        *more = false;
        db_begin(d); /* the record set and its notes */
        return rc;
    }
    if (!*more)
        d->expiry_next = next;
    return 0;
}

static int flush_range(struct db *d, unsigned lodb, unsigned hidb)
{
    /* The counts are zeroed below: no resolution may land on them later. */
    int src = db_counts_settle(d, true);
    if (src)
        return src;
    char lo[3], hi[3], unused[3];
    db_range(lodb, lo, unused);
    db_range(hidb, unused, hi);
    db_begin(d);
    for (int cf = 0; cf < STOR_CF_COUNT; cf++) {
        if (cf != STOR_CF_EXPIRY) {
            stor_batch_del_range(&d->b, cf, lo, 3, hi, 3);
            continue;
        }
        /* Expiry keys are db | time | ...: [lodb, hidb | ff ff ...) takes
         * every time (and leaves the marker "", which sorts first). */
        char ehi[10];
        memset(ehi, 0xff, sizeof ehi);
        ehi[0] = (char)hidb;
        stor_batch_del_range(&d->b, cf, lo, 1, ehi, sizeof ehi);
    }
    int rc = db_commit(d);
    db_pick_reset(&d->picks); /* their collections are gone, or soon will be */
    /* The range deletes are the set's only writes: those dbs are empty. */
    for (unsigned dbi = lodb; rc == 0 && dbi <= hidb; dbi++)
        d->nkeys[dbi] = d->nexpires[dbi] = 0;
    if (rc == 0 && lodb == 0 && hidb == ENC_DB_MAX) {
        db_keyf_init(&d->keyf, d->keyf.first_cap); /* no key is left */
        keyf_rebuild_stop(d);
    }
    return rc;
}

int db_flushdb(struct db *d, unsigned dbi)
{
    return flush_range(d, dbi, dbi);
}

int db_flushall(struct db *d)
{
    return flush_range(d, 0, ENC_DB_MAX);
}

int db_keyinfo(struct db *d, unsigned dbi, const char *key, size_t klen, struct db_keyinfo *ki)
{
    struct db_kc kc;
    memset(ki, 0, sizeof *ki);
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc == 0 && kc.m.type == ENC_TYPE_NONE)
        rc = KV_ENOTFOUND;
    if (rc == 0) {
        ki->type = kc.m.type;
        ki->coding = kc.m.coding;
        ki->expire_ms = kc.m.expire_ms;
        if (kc.m.type == ENC_TYPE_STRING)
            ki->size = kc.m.vlen;
        else
            rc = kc_size(d, &kc, &ki->size);
    }
    kc_free(&kc);
    return rc;
}

/* Bytes of up to `limit` records (0: all) of kc's current version in cf,
 * keys and values as encoded; *seen counts them. */
static int usage_cf(struct db *d, struct db_kc *kc, int cf, uint64_t limit, uint64_t *bytes,
                    uint64_t *seen)
{
    struct stor_it *it = kc_iter(d, kc, cf);
    *bytes = *seen = 0;
    for (stor_it_first(it); stor_it_valid(it) && (!limit || *seen < limit); stor_it_next(it)) {
        size_t kn, vn;
        stor_it_key(it, &kn);
        stor_it_value(it, &vn);
        *bytes += kn + vn;
        (*seen)++;
    }
    int rc = stor_it_status(it);
    stor_it_free(it);
    return rc;
}

int db_usage(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t samples,
             uint64_t *bytes)
{
    struct db_kc kc;
    *bytes = 0;
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc == 0 && kc.m.type == ENC_TYPE_NONE)
        rc = KV_ENOTFOUND;
    if (rc) {
        kc_free(&kc);
        return rc;
    }
    uint64_t total = kc.mk.n + kc.rawn;
    if (kc.m.expire_ms)
        total += 1 + 8 + 2 + klen; /* its expiry index record */
    uint64_t n = 0;
    if (kc.m.type != ENC_TYPE_STRING)
        rc = kc_size(d, &kc, &n);
    for (int pass = 0; pass < 2 && n && !rc; pass++) {
        int cf = pass ? STOR_CF_SCORE : STOR_CF_SUB;
        if (pass && kc.m.type != ENC_TYPE_ZSET)
            break;
        uint64_t sum, seen;
        rc = usage_cf(d, &kc, cf, samples, &sum, &seen);
        if (!rc && seen)
            total += seen >= n ? sum : (uint64_t)((double)sum / (double)seen * (double)n + 0.5);
    }
    kc_free(&kc);
    *bytes = total;
    return rc;
}

/* ---- sampling ---- */

void db_sample(struct db *d, const struct db_vec *all, size_t stride, int64_t count,
               struct db_vec *out)
{
    size_t n = all->n / stride;
    if (n == 0 || count == 0)
        return;
    if (count < 0) {
        /* With repetition: |count| independent picks. */
        uint64_t want = count == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-count;
        for (uint64_t i = 0; i < want; i++) {
            size_t e = (size_t)(db_rand(d) % n) * stride;
            for (size_t j = 0; j < stride; j++)
                db_vec_push(out, db_vec_ptr(all, e + j), db_vec_len(all, e + j),
                            all->items[e + j].score);
        }
        return;
    }
    /* Distinct: a partial Fisher-Yates shuffle over element indexes. */
    size_t want = (uint64_t)count < n ? (size_t)count : n;
    size_t *idx = kv_xmalloc(n * sizeof *idx);
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    for (size_t i = 0; i < want; i++) {
        size_t j = i + (size_t)(db_rand(d) % (n - i));
        size_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        size_t e = idx[i] * stride;
        for (size_t k = 0; k < stride; k++)
            db_vec_push(out, db_vec_ptr(all, e + k), db_vec_len(all, e + k),
                        all->items[e + k].score);
    }
    free(idx);
}

/* ---- HSCAN / SSCAN / ZSCAN ---- */

int db_cscan(struct db *d, unsigned dbi, const char *key, size_t klen, int type,
             const char *cursor, size_t cn, const char *pat, size_t patn, uint64_t count,
             struct db_vec *out, char **next, size_t *nextn)
{
    struct db_kc kc;
    *next = NULL;
    *nextn = 0;
    int rc = kc_open(d, &kc, dbi, key, klen, type);
    if (rc) {
        kc_free(&kc);
        return rc == KV_ENOTFOUND ? 0 : rc;
    }
    struct stor_it *it = kc_iter(d, &kc, STOR_CF_SUB);
    if (cursor) {
        size_t kn;
        const char *k = kc_sub(&kc, cursor, cn, &kn);
        stor_it_seek(it, k, kn);
        size_t ikn;
        if (stor_it_valid(it)) {
            const char *ik = stor_it_key(it, &ikn);
            if (ikn == kn && memcmp(ik, k, kn) == 0)
                stor_it_next(it);
        }
    } else {
        stor_it_first(it);
    }
    if (count == 0)
        count = 10;
    uint64_t seen = 0;
    for (; stor_it_valid(it); stor_it_next(it)) {
        size_t kn, vn, fn;
        const char *k = stor_it_key(it, &kn);
        const char *v = stor_it_value(it, &vn);
        const char *f = kc_suffix(&kc, k, kn, &fn);
        if (!pat || db_glob_match(pat, patn, f, fn, 0)) {
            db_vec_push(out, f, fn, 0);
            if (type == ENC_TYPE_HASH) {
                db_vec_push(out, v, vn, 0);
            } else if (type == ENC_TYPE_ZSET && vn == 8) {
                char sbuf[64];
                double sc = enc_score_get(v);
                db_vec_push(out, sbuf, kv_d2str(sbuf, sizeof sbuf, sc), sc);
            }
        }
        if (++seen >= count) {
            char *last = kv_xmemdup(f, fn); /* f dies with the next move */
            stor_it_next(it);
            if (stor_it_valid(it)) {
                *next = last;
                *nextn = fn;
            } else {
                free(last);
            }
            break;
        }
    }
    rc = stor_it_status(it);
    stor_it_free(it);
    kc_free(&kc);
    if (rc) {
        free(*next);
        *next = NULL;
    }
    return rc;
}
