/*
 * db_scache — the records of small hashes, sets and sorted sets, kept in
 * the event loop for the walks that read them.
 *
 * A walk of a collection's sub or score records (HGETALL, SMEMBERS, HSCAN,
 * SINTER, ZRANGE, ZSCAN...) goes through a RocksDB iterator, merged with
 * the overlay: its creation, seek and each step cost about 100 ns a
 * record, so HGETALL of 10 fields at pipeline 16 ran at 137-175k/s against
 * redis-server's 323-374k/s. A counted collection of at most
 * DB_SCACHE_MEMBERS members and DB_SCACHE_BYTES bytes (a family) is read
 * once, each family when first walked, into a snapshot (stor_snap), and
 * kc_iter hands out snapshot iterators on it until a commit writes any of
 * its records or its meta record (db_scache_note, after every commit while
 * anything is cached), or a range delete empties the lot. An iterator
 * holds its snapshot by reference, so one alive across its collection's
 * own commit reads what it began with, as a RocksDB iterator would.
 *
 * Direct-mapped by (db, key); an entry is for one version of its key, and
 * a look-up of another version refills it. A family found larger than the
 * limits (values of a kilobyte, say) is marked so in its entry and read
 * from storage until a write drops the entry. Memory: at most
 * DB_SCACHE_SLOTS entries of two families of DB_SCACHE_BYTES each.
 */
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "enc.h"

static uint64_t slot_of(unsigned dbi, const char *key, size_t klen)
{
    /* FNV-1a over the db and the key */
    uint64_t h = 0xcbf29ce484222325ull ^ dbi;
    for (size_t i = 0; i < klen; i++)
        h = (h ^ (unsigned char)key[i]) * 0x100000001b3ull;
    return h & (DB_SCACHE_SLOTS - 1);
}

static void drop(struct db_scache *c, struct db_scache_e *e)
{
    if (!e->key)
        return;
    for (int i = 0; i < 2; i++)
        if (e->snap[i]) {
            c->bytes -= stor_snap_bytes(e->snap[i]);
            stor_snap_unref(e->snap[i]);
            e->snap[i] = NULL;
        }
    c->bytes -= e->klen;
    c->n--;
    free(e->key);
    e->key = NULL;
}

void db_scache_reset(struct db_scache *c)
{
    if (c->e)
        for (size_t i = 0; i < DB_SCACHE_SLOTS; i++)
            drop(c, &c->e[i]);
    free(c->e);
    c->e = NULL;
}

struct stor_it *db_scache_iter(struct db *d, struct db_kc *kc, int cf, const char *lo,
                               size_t lon, const char *hi, size_t hin)
{
    const struct enc_meta *m = &kc->m;
    if ((cf != STOR_CF_SUB && cf != STOR_CF_SCORE) || !db_counted_coll(m) ||
        m->size > d->scache_max)
        return NULL;
    int ci = cf == STOR_CF_SCORE;
    struct db_scache *c = &d->scache;
    if (!c->e)
        c->e = stor_xcalloc(DB_SCACHE_SLOTS, sizeof *c->e);
    struct db_scache_e *e = &c->e[slot_of(kc->dbi, kc->key, kc->klen)];
    bool same = e->key && e->dbi == kc->dbi && e->version == m->version &&
                e->klen == kc->klen && memcmp(e->key, kc->key, kc->klen) == 0;
    if (same && e->snap[ci]) {
        c->hits++;
        return stor_it_create_snap(e->snap[ci]);
    }
    if (same && (e->big & 1u << ci))
        return NULL; /* found too large before: not read again */
    /* Read it whole, once. The read steps over what deletes left there,
     * which db_tidy.c counts; reads of the copy step over nothing. */
    db_walk_start(d, kc);
    struct stor_it *it = stor_it_create(d->s, cf, lo, lon, hi, hin);
    struct stor_snap *sn = stor_snap_new(m->size, 64 * m->size);
    size_t bytes = 0;
    for (stor_it_first(it); stor_it_valid(it) && sn->n <= d->scache_max; stor_it_next(it)) {
        size_t kn, vn;
        const char *k = stor_it_key(it, &kn), *v = stor_it_value(it, &vn);
        bytes += kn + vn;
        if (bytes > DB_SCACHE_BYTES)
            break;
        stor_snap_add(sn, k, kn, v, vn);
    }
    bool big = stor_it_valid(it); /* more records than DB_SCACHE_MEMBERS or bytes */
    int rc = stor_it_status(it);
    stor_it_free(it);
    if (rc) {
        stor_snap_unref(sn);
        return NULL;
    }
    if (!same) {
        drop(c, e);
        e->dbi = kc->dbi;
        e->version = m->version;
        e->key = stor_xmemdup(kc->key, kc->klen);
        e->klen = kc->klen;
        e->big = 0;
        c->n++;
        c->bytes += kc->klen;
    }
    if (big) { /* the entry remembers it, so that later walks go straight to storage */
        e->big |= 1u << ci;
        stor_snap_unref(sn);
        return NULL;
    }
    e->snap[ci] = sn;
    c->bytes += stor_snap_bytes(sn);
    c->fills++;
    return stor_it_create_snap(sn);
}

/* The entry of (dbi, key), whatever its version: dropped. */
static void drop_key(struct db_scache *c, unsigned dbi, const char *key, size_t klen)
{
    struct db_scache_e *e = &c->e[slot_of(dbi, key, klen)];
    if (e->key && e->dbi == dbi && e->klen == klen && memcmp(e->key, key, klen) == 0)
        drop(c, e);
}

void db_scache_note(struct db *d, const struct stor_batch *b)
{
    struct db_scache *c = &d->scache;
    for (size_t i = 0; i < b->nops && c->n; i++) {
        const struct stor_op *op = &b->ops[i];
        if (op->kind == STOR_OP_DELRANGE) {
            for (size_t j = 0; j < DB_SCACHE_SLOTS; j++)
                drop(c, &c->e[j]);
            return;
        }
        unsigned dbi;
        const char *key;
        size_t klen;
        if (db_record_key(b, op, &dbi, &key, &klen) == 0) /* not for an expiry entry */
            drop_key(c, dbi, key, klen);
    }
}
