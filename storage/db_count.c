/*
 * db_count — key counts (DBSIZE, INFO keyspace): counted once at start or
 * loaded from the file a clean shutdown left, then kept by every commit,
 * which learns whether each key it writes existed (overlay, cache, key
 * filter, or a read deferred to write-back's resolver); the key filter's
 * rebuild; and what a commit notes for keyspace events.
 * See docs/storage.md, "Key counts".
 */
#include "db_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

/* Counts every db's meta records in one pass (O(keys), once per start),
 * and puts each key in the key filter: what db_commit keeps from then on. */
int db_count_all(struct db *d)
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
        if (enc_meta_peek(v, vn, &t, &exp) == 0 && exp) {
            d->nexpires[dbi]++;
            d->expsum[dbi] += (int64_t)(exp / 1000);
        }
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
#define COUNTS_MAGIC "SHMKVKC2"
#define COUNTS_PROBE "shmkv key filter probe"

struct counts_head {
    char magic[8];
    uint64_t seq;   /* RocksDB's latest sequence number when saved */
    uint64_t probe; /* the key hash of COUNTS_PROBE: the filter's bits need the same hash */
    uint64_t nkeys[ENC_DB_MAX + 1], nexpires[ENC_DB_MAX + 1];
    int64_t expsum[ENC_DB_MAX + 1];
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

void db_keyf_rebuild_stop(struct db *d)
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
bool db_surely_empty(const struct db *d, unsigned dbi)
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
        db_keyf_rebuild_stop(d);
        return rc;
    }
    if (d->keyf_db <= ENC_DB_MAX) {
        *more = true;
        return 0;
    }
    db_keyf_destroy(&d->keyf);
    d->keyf = d->keyf_next;
    memset(&d->keyf_next, 0, sizeof d->keyf_next);
    db_keyf_rebuild_stop(d);
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
    memcpy(h.expsum, d->expsum, sizeof h.expsum);
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
bool db_counts_load(struct db *d)
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
              db_read_all(fd, &sum, sizeof sum, &ignored) == 0 && sum == crc &&
              read(fd, &extra, 1) == 0;
    close(fd);
    if (!ok) {
        db_keyf_destroy(&d->keyf);
        return false;
    }
    memcpy(d->nkeys, h.nkeys, sizeof d->nkeys);
    memcpy(d->nexpires, h.nexpires, sizeof d->nexpires);
    memcpy(d->expsum, h.expsum, sizeof d->expsum);
    return true;
}

static void counts_fold(void *arg);

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
 * key and expiry counts and expiry sum (seconds), given whether the key had
 * a record (was) and that record's expiry. The one rule for db_count_keys
 * and db_counts_resolve. */
static void count_delta(bool is, const char *v, size_t vn, bool was, uint64_t wexp, int64_t *dk,
                        int64_t *de, int64_t *ds)
{
    uint64_t iexp = is ? meta_expiry(v, vn) : 0;
    *dk = (int64_t)is - (int64_t)was;
    *de = (int64_t)(is && iexp) - (int64_t)(was && wexp);
    *ds = (int64_t)((is ? iexp : 0) / 1000) - (int64_t)((was ? wexp : 0) / 1000);
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
        int hit = d->cache.peek ? d->cache.peek(d->cache_arg, STOR_CF_META, mk, kn, &cv, &vn)
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
            if (fill && d->cache.fill && (rc == 0 || rc == KV_ENOTFOUND))
                d->cache.fill(d->cache_arg, STOR_CF_META, mk, kn, rc ? NULL : v, rc ? 0 : vn);
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

/* Fills *d->created and *d->expired (as asked) from the committed meta
 * records of the keys whose meta record b writes or deletes, each key
 * looked up once, in the order of its first write; whether it is created
 * depends on its last (MSET may name a key twice, RENAME deletes and
 * writes its destination). */
void db_note_keys(struct db *d, const struct stor_batch *b)
{
    uint64_t now = db_expiry_clock(d);
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
        if (seen[s] != i + 1 || (!put && !d->expired) || db_record_key(b, op, &dbi, &k, &kn))
            continue;
        bool was;
        uint64_t exp;
        int rc = committed_meta(d, stor_op_key(b, op), op->klen, op->hash, true, &was, &exp, NULL);
        bool expired = rc == 0 && was && exp && exp <= now;
        if (expired && d->expired)
            db_vec_push(d->expired, k, kn, dbi);
        if (put && d->created && rc == 0 && (!was || expired))
            db_vec_push(d->created, k, kn, dbi);
    }
    if (seen != small) {
        free(seen);
        free(lastput);
    }
}

/* At most this many writes wait for their prior state (db_int.h, defer_out):
 * what a settle may have to read in the event loop, about 10 ms of MultiGet
 * here. Past it, writes read at once, as they did before. */
#define DB_DEFER_MAX 4096

static unsigned kc_entry(struct db_key_counts *kc, unsigned dbi)
{
    unsigned j = 0;
    while (j < kc->n && kc->e[j].dbi != dbi)
        j++;
    if (j == kc->n) {
        kc->e[j].dbi = dbi;
        kc->e[j].keys = kc->e[j].expires = kc->e[j].expsum = 0;
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
int db_count_keys(struct db *d, struct stor_batch *b, struct db_key_counts *kc)
{
    kc->n = 0;
    /* Keyspace events need to know now (db_note_keys has looked already). */
    if (d->defer_total >= DB_DEFER_MAX) /* take in what was resolved, if it costs no wait */
        stor_resolve_fold_try(d->s, counts_fold, d);
    bool may_defer =
        !d->created && !d->expired && d->defer_total < DB_DEFER_MAX && stor_can_defer(d->s);
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
        int64_t dk, de, ds;
        count_delta(is, stor_op_value(b, op), op->vlen, was, wexp, &dk, &de, &ds);
        if (!dk && !de && !ds)
            continue;
        unsigned j = kc_entry(kc, (unsigned char)mk[0]);
        kc->e[j].keys += dk;
        kc->e[j].expires += de;
        kc->e[j].expsum += ds;
    }
    return 0;
}

/* stor's resolver (db_init): a deferred write and the record RocksDB held
 * before it. Under stor's resolver lock, on the flusher's thread or ours. */
void db_counts_resolve(void *arg, int kind, const char *k, size_t kn, const char *v, size_t vn,
                       const char *old, size_t oldn, bool had)
{
    struct db *d = arg;
    int64_t dk, de, ds;
    count_delta(kind == STOR_OP_PUT, v, vn, had, had ? meta_expiry(old, oldn) : 0, &dk, &de, &ds);
    unsigned dbi = kn ? (unsigned char)k[0] : 0;
    d->res_keys[dbi] += dk;
    d->res_exp[dbi] += de;
    d->res_expsum[dbi] += ds;
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
        d->expsum[i] += d->res_expsum[i];
        d->defer_out[i] -= d->res_done[i];
        d->defer_total -= d->res_done[i];
        d->res_keys[i] = d->res_exp[i] = d->res_expsum[i] = 0;
        d->res_done[i] = 0;
    }
    d->res_any = false;
}

int db_counts_settle(struct db *d, bool resolve)
{
    return stor_resolve_settle(d->s, resolve, counts_fold, d);
}

uint64_t db_avg_ttl(const struct db *d, unsigned dbi, uint64_t now_ms)
{
    if (!d->nexpires[dbi])
        return 0;
    int64_t avg_ms = d->expsum[dbi] / (int64_t)d->nexpires[dbi] * 1000 - (int64_t)now_ms;
    return avg_ms > 0 ? (uint64_t)avg_ms : 0;
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
