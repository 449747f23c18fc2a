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
 * A larger family, of up to DB_SCACHE_LARGE members and
 * DB_SCACHE_LARGE_BYTES, is read into a snapshot only once walks of that
 * version, unwritten meanwhile, have read as many records as it holds
 * (stor_moves, credited at kc_free by db_scache_walked): a collection
 * written between its walks, or read a few members a walk (ZRANGE 0 9 of
 * a leaderboard), is not read whole for each; one read whole each time
 * (HGETALL of 100 fields) is kept from its second walk.
 *
 * A list keeps a window instead (db_scache_list): the elements from the
 * end nearer an LRANGE through the far end of its range, up to
 * DB_SCACHE_LIST_MAX elements and DB_SCACHE_LIST_BYTES bytes, and not
 * much more than the range itself. Lists grow past any member limit, and
 * their reads are by position from an end ("the latest 100").
 *
 * Direct-mapped by (db, key); an entry is for one version of its key, and
 * a look-up of another version refills it. A family found larger than the
 * limits (values of a kilobyte, say) is marked so in its entry and read
 * from storage until a write drops the entry. Memory: at most
 * DB_SCACHE_TOTAL bytes; a fill beyond it first drops entries in slot
 * order from a rotating hand, as a clock would without its second chance.
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

/* Lets go of e's snapshot i, if it holds one. */
static void unkeep(struct db_scache *c, struct db_scache_e *e, int i)
{
    if (!e->snap[i])
        return;
    c->bytes -= stor_snap_bytes(e->snap[i]);
    stor_snap_unref(e->snap[i]);
    e->snap[i] = NULL;
}

static void drop(struct db_scache *c, struct db_scache_e *e)
{
    if (!e->key)
        return;
    unkeep(c, e, 0);
    unkeep(c, e, 1);
    c->bytes -= e->klen;
    c->n--;
    free(e->key);
    e->key = NULL;
}

/* Drops entries other than keep, from the hand on, until need more bytes
 * fit within DB_SCACHE_TOTAL; false if they cannot. */
static bool make_room(struct db_scache *c, const struct db_scache_e *keep, size_t need)
{
    if (need > DB_SCACHE_TOTAL)
        return false;
    for (unsigned i = 0; i < DB_SCACHE_SLOTS && c->bytes + need > DB_SCACHE_TOTAL; i++) {
        struct db_scache_e *e = &c->e[c->hand++ & (DB_SCACHE_SLOTS - 1)];
        if (e != keep)
            drop(c, e);
    }
    return c->bytes + need <= DB_SCACHE_TOTAL;
}

/* Keeps sn as e's snapshot i (which must hold none), taking the caller's
 * reference; false, and the reference dropped, when it cannot fit within
 * DB_SCACHE_TOTAL. */
static bool keep(struct db_scache *c, struct db_scache_e *e, int i, struct stor_snap *sn)
{
    if (!make_room(c, e, stor_snap_bytes(sn))) {
        stor_snap_unref(sn);
        return false;
    }
    e->snap[i] = sn;
    c->bytes += stor_snap_bytes(sn);
    c->fills++;
    return true;
}

/* kc's walk, about to go to storage, counts toward a copy of family ci
 * (credited at kc_free by db_scache_walked). */
static void count_walk(struct db *d, struct db_kc *kc, int ci)
{
    kc->sd = d;
    kc->sci = ci;
    kc->move0 = stor_moves();
}

/* The entry of kc's slot, taken over for kc's version if it held another
 * key or version. *same: it was kc's already. */
static struct db_scache_e *entry(struct db_scache *c, const struct db_kc *kc, bool *same)
{
    if (!c->e)
        c->e = kv_xcalloc(DB_SCACHE_SLOTS, sizeof *c->e);
    struct db_scache_e *e = &c->e[slot_of(kc->dbi, kc->key, kc->klen)];
    *same = e->key && e->dbi == kc->dbi && e->version == kc->m.version && e->klen == kc->klen &&
            memcmp(e->key, kc->key, kc->klen) == 0;
    return e;
}

/* Makes e kc's entry, empty. */
static void take(struct db_scache *c, struct db_scache_e *e, const struct db_kc *kc)
{
    drop(c, e);
    e->dbi = kc->dbi;
    e->version = kc->m.version;
    e->key = kv_xmemdup(kc->key, kc->klen);
    e->klen = kc->klen;
    e->big = 0;
    e->lazy = 0;
    e->wlo = 0;
    e->walked[0] = e->walked[1] = 0;
    c->n++;
    c->bytes += kc->klen;
}

void db_scache_reset(struct db_scache *c)
{
    if (c->e)
        for (size_t i = 0; i < DB_SCACHE_SLOTS; i++)
            drop(c, &c->e[i]);
    free(c->e);
    c->e = NULL;
}

struct stor_it *db_scache_iter(struct db *d, struct db_kc *kc, int cf, const char *lo, size_t lon,
                               const char *hi, size_t hin)
{
    const struct enc_meta *m = &kc->m;
    if ((cf != STOR_CF_SUB && cf != STOR_CF_SCORE) || !db_counted_coll(m) || !d->scache_max ||
        m->size > DB_SCACHE_LARGE)
        return NULL;
    int ci = cf == STOR_CF_SCORE;
    unsigned bit = 1u << ci;
    struct db_scache *c = &d->scache;
    bool same;
    struct db_scache_e *e = entry(c, kc, &same);
    if (same && e->snap[ci]) {
        c->hits++;
        return stor_it_create_snap(e->snap[ci]);
    }
    if (same && (e->big & bit))
        return NULL; /* found too large before: not read again */
    /* A small family is read at its first walk. A larger one only once
     * walks of this version have read as many records as it holds, so that
     * a collection written between its walks, or walked a few members at a
     * time, does not pay a whole read for each walk: at most twice what
     * its walks cost without the copy. */
    bool now = m->size <= d->scache_max && !(same && (e->lazy & bit));
    if (!now && !(same && e->walked[ci] >= m->size)) {
        if (!same)
            take(c, e, kc);
        count_walk(d, kc, ci);
        return NULL;
    }
    size_t limit = now ? DB_SCACHE_BYTES : DB_SCACHE_LARGE_BYTES;
    /* Read it whole, once. The read steps over what deletes left there,
     * which db_tidy.c counts; reads of the copy step over nothing. */
    db_walk_start(d, kc);
    struct stor_it *it = stor_it_create(d->s, cf, lo, lon, hi, hin);
    struct stor_snap *sn = stor_snap_new(m->size, 64 * m->size);
    size_t bytes = 0;
    for (stor_it_first(it); stor_it_valid(it) && sn->n <= DB_SCACHE_LARGE; stor_it_next(it)) {
        size_t kn, vn;
        const char *k = stor_it_key(it, &kn), *v = stor_it_value(it, &vn);
        bytes += kn + vn;
        if (bytes > limit)
            break;
        stor_snap_add(sn, k, kn, v, vn);
    }
    bool over = stor_it_valid(it); /* more records than DB_SCACHE_LARGE, or bytes */
    int rc = stor_it_status(it);
    stor_it_free(it);
    if (rc) {
        stor_snap_unref(sn);
        return NULL;
    }
    if (!same)
        take(c, e, kc);
    if (over) { /* the entry remembers it, so that later walks do not read it twice */
        stor_snap_unref(sn);
        if (!now) {
            e->big |= bit;
            return NULL;
        }
        e->lazy |= bit; /* a large one, then: the caller's walk counts */
        count_walk(d, kc, ci);
        return NULL;
    }
    struct stor_it *sit = stor_it_create_snap(sn);
    keep(c, e, ci, sn); /* if it does not fit, the iterator still holds it */
    return sit;
}

void db_scache_walked(struct db_kc *kc)
{
    struct db *d = kc->sd;
    kc->sd = NULL;
    struct db_scache *c = &d->scache;
    bool same;
    if (!c->e)
        return;
    struct db_scache_e *e = entry(c, kc, &same);
    if (same) /* not dropped by a write meanwhile */
        e->walked[kc->sci] += stor_moves() - kc->move0;
}

const struct stor_snap *db_scache_list(struct db *d, struct db_kc *kc, uint64_t at, uint64_t count,
                                       size_t *first)
{
    const struct enc_meta *m = &kc->m;
    if (!d->scache_max || m->type != ENC_TYPE_LIST || !count || kc->inl)
        return NULL; /* an inline list is one record already */
    struct db_scache *c = &d->scache;
    bool same;
    struct db_scache_e *e = entry(c, kc, &same);
    if (same && e->snap[0] && e->wlo <= at && at + count <= e->wlo + e->snap[0]->n) {
        c->hits++;
        *first = at - e->wlo;
        return e->snap[0];
    }
    if (same && (e->big & 1))
        return NULL; /* a window of this version was over the bytes */
    /* The window: from the end nearer the range through its far end, if
     * that reads at most about twice the range (a list written between its
     * reads is read again each time). */
    uint64_t lo = m->head, hi = at + count;
    if (m->tail - at < hi - lo) {
        lo = at;
        hi = m->tail;
    }
    if (hi - lo > DB_SCACHE_LIST_MAX || hi - lo > 2 * count + 64)
        return NULL;
    struct stor_it *it = db_list_iter(d, kc, lo, hi);
    struct stor_snap *sn = stor_snap_new(hi - lo, 32 * (hi - lo));
    for (stor_it_first(it); stor_it_valid(it) && sn->used <= DB_SCACHE_LIST_BYTES;
         stor_it_next(it)) {
        size_t kn, vn;
        const char *k = stor_it_key(it, &kn);
        const char *v = stor_it_value(it, &vn);
        stor_snap_add(sn, k, kn, v, vn);
    }
    int rc = stor_it_status(it);
    stor_it_free(it);
    bool big = sn->used > DB_SCACHE_LIST_BYTES;
    if (rc || (!big && sn->n != hi - lo)) {
        stor_snap_unref(sn); /* the caller reads storage, and meets any error itself */
        return NULL;
    }
    if (!same)
        take(c, e, kc);
    if (big) { /* large values: this version's ranges are read from storage */
        e->big |= 1;
        stor_snap_unref(sn);
        return NULL;
    }
    unkeep(c, e, 0); /* the window it had did not hold this range */
    if (!keep(c, e, 0, sn))
        return NULL;
    e->wlo = lo;
    *first = at - lo;
    return sn;
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
