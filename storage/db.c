/*
 * db — the type layer's handle: result vectors, open and close, collection
 * versions, the record set of the operation in progress and its commit, and
 * the point reads every type uses (the pending record set, the shm cache,
 * then the engine). Key contexts are in db_kc.c, key counts in db_count.c,
 * expiry in db_expire.c, the key-space commands in db_keys.c and db_scan.c.
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

int db_init(struct db *d, struct stor *s, const struct db_opts *o)
{
    memset(d, 0, sizeof *d);
    d->s = s;
    stor_set_resolver(s, db_counts_resolve, d);
    if (o)
        d->o = *o;
    if (!d->o.max_string)
        d->o.max_string = 512ull << 20;
    stor_batch_init(&d->b);
    stor_batch_init(&d->zrix.rb);
    d->scache_max = DB_SCACHE_MEMBERS;
    /* Seed the version counter and the sampler from the kernel: versions
     * from two runs within one millisecond must still differ. */
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed)
        seed = stor_now_ms() * 0x9e3779b97f4a7c15ull;
    d->counter = (uint32_t)(seed & 0x7ff);
    d->rng = seed | 1;
    d->counts_loaded = db_counts_load(d);
    int rc = d->counts_loaded ? 0 : db_count_all(d);
    return rc ? rc : db_expiry_index_check(d);
}

void db_destroy(struct db *d)
{
    db_pick_reset(&d->picks);
    db_zedge_reset(&d->zedges);
    db_zrix_destroy(d);
    db_zrm_reset(d);
    db_scache_reset(&d->scache);
    for (unsigned i = 0; i < d->ntidy; i++)
        free(d->tidy[i].key);
    for (unsigned i = 0; i < 256; i++)
        free(d->efloor[i].key);
    if (d->watching)
        stor_skips_watch(false);
    db_keyf_rebuild_stop(d);
    db_keyf_destroy(&d->keyf);
    stor_batch_destroy(&d->b);
    free(d->priors);
    free(d->inls.e); /* the copies go with their key contexts */
    d->priors = NULL;
    d->npriors = d->cappriors = 0;
}

int db_create(struct db **out, struct stor *s, const struct db_opts *o)
{
    struct db *d = kv_xmalloc(sizeof *d);
    int rc = db_init(d, s, o);
    if (rc) {
        db_destroy(d);
        free(d);
        d = NULL;
    }
    *out = d;
    return rc;
}

void db_free(struct db *d)
{
    if (!d)
        return;
    db_destroy(d);
    free(d);
}

void db_set_opts(struct db *d, const struct db_opts *o)
{
    d->o = *o;
    if (!d->o.max_string)
        d->o.max_string = 512ull << 20;
}

void db_set_cache(struct db *d, const struct db_cache_ops *ops, void *arg)
{
    d->cache = ops ? *ops : (struct db_cache_ops){0};
    d->cache_arg = arg;
}

void db_set_on_commit(struct db *d, void (*fn)(void *arg, const struct stor_batch *b, int flags),
                      void *arg)
{
    d->on_commit = fn;
    d->on_commit_arg = arg;
}

void db_track_events(struct db *d, struct db_vec *created, struct db_vec *expired)
{
    d->created = created;
    d->expired = expired;
}

void db_track_seen_expired(struct db *d, struct db_vec *seen)
{
    d->seen_expired = seen;
}

void db_pause_expiry(struct db *d, bool on)
{
    d->expiry_paused = on;
}

void db_group_begin(struct db *d)
{
    stor_group_begin(d->s);
}

void db_group_end(struct db *d)
{
    stor_group_end(d->s);
}

uint64_t db_last_commit_ops(const struct db *d)
{
    return d->last_commit_ops;
}

bool db_coll_hint(const struct db *d)
{
    return d->last_coll.set;
}

void db_lookups(const struct db *d, uint64_t *found, uint64_t *missing)
{
    *found = d->looked_found;
    *missing = d->looked_missing;
}

void db_lookups_rewind(struct db *d, uint64_t found, uint64_t missing)
{
    d->looked_found = found;
    d->looked_missing = missing;
}

void db_info(const struct db *d, struct db_info *out)
{
    *out = (struct db_info){
        .key_filters = d->keyf.n,
        .key_filter_building = d->keyf_building,
        .key_filter_rebuilds = d->keyf_rebuilds,
        .counts_loaded = d->counts_loaded,
        .defer_outstanding = d->defer_total,
        .defer_total = d->defer_done,
        .pick_indexes = d->picks.n,
        .pick_bytes = d->picks.bytes,
        .tidied = d->tidied,
        .inline_converted = d->inl_converted,
        .zrank_built = d->zrix_built,
        .zrank_copies = d->zrms.n,
        .zrank_copy_bytes = d->zrms.bytes,
        .zrank_copies_evicted = d->zrms.evicted,
        .scache_collections = d->scache.n,
        .scache_bytes = d->scache.bytes,
        .scache_hits = d->scache.hits,
        .scache_fills = d->scache.fills,
    };
    db_keyf_usage(&d->keyf, &out->key_filter_bytes, &out->key_filter_keys);
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
    if (d->zrix.n)
        db_zrix_clear(d);
}

int db_commit(struct db *d)
{
    if (d->inls.n)
        db_inl_flush(d);
    if (d->created || d->expired)
        db_note_keys(d, &d->b);
    d->last_commit_ops = d->b.nops;
    struct db_key_counts kc;
    int rc = db_count_keys(d, &d->b, &kc);
    d->npriors = 0;
    if (rc) {
        stor_batch_clear(&d->b);
        db_zrix_clear(d);
        return rc;
    }
    /* Rank indexes follow in record sets of their own, grouped with this
     * one (db_zrix.c). */
    bool ranked = d->zrix.n && db_zrix_before(d);
    if (ranked)
        stor_group_begin(d->s);
    rc = stor_commit(d->s, &d->b);
    if (rc == 0 && d->b.nranges && d->zrms.n)
        db_zrm_reset(d); /* a flush: the copies' records are gone */
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
            d->expsum[kc.e[j].dbi] += kc.e[j].expsum;
            d->defer_out[kc.e[j].dbi] += kc.e[j].defers;
            d->defer_total += kc.e[j].defers;
            d->defer_done += kc.e[j].defers;
        }
    if (rc == 0 && d->b.nops && d->on_commit)
        d->on_commit(d->on_commit_arg, &d->b, d->tidying ? DB_COMMIT_TIDY : 0);
    /* After the hook: a rank index dropped here (a meta record written by
     * db_zrix_after) must reach the shm cache after this record set's. */
    if (ranked) {
        if (rc == 0)
            db_zrix_after(d);
        stor_group_end(d->s);
    }
    if (d->zrix.n)
        db_zrix_clear(d);
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
    if (c == STOR_ABSENT && d->inls.n && cf != STOR_CF_META)
        c = db_inl_get(d, cf, k, kn, &bv, &bn);
    if (c == STOR_ABSENT && d->cache.get && cf != STOR_CF_SCORE) {
        c = d->cache.get(d->cache_arg, cf, k, kn, &bv, &bn);
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
static void fill_cache(struct db *d, int cf, const char *k, size_t kn, int rc, char *const *v,
                       const size_t *vn)
{
    if (!d->cache.get || cf == STOR_CF_SCORE)
        return;
    if (rc == 0)
        d->cache.fill(d->cache_arg, cf, k, kn, *v, *vn);
    else if (rc == KV_ENOTFOUND)
        d->cache.fill(d->cache_arg, cf, k, kn, NULL, 0);
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
int db_rget_with(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn, size_t cap,
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
    return db_rget_with(d, cf, k, kn, v, vn, SIZE_MAX, true, true);
}

int db_rtake(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn)
{
    return db_rget_with(d, cf, k, kn, v, vn, SIZE_MAX, false, false);
}

int db_rget_adding(struct db *d, int cf, const char *k, size_t kn, char **v, size_t *vn)
{
    return db_rget_with(d, cf, k, kn, v, vn, SIZE_MAX, true, false);
}

#define RGET_AHEAD 8 /* keys whose first lines load while one is looked up */

void db_prefetch_key(const struct db *d, int cf, const char *k, size_t kn)
{
    size_t ckn;
    stor_prefetch_slot(d->s, cf, k, kn);
    if (d->cache.prefetch1 && cf != STOR_CF_SCORE)
        d->cache.prefetch1(d->cache_arg, cf, k, kn, &ckn);
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
    int rc = db_rget_with(d, cf, k, kn, &v, &vn, 0, true, fill_absent);
    if (rc == KV_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    free(v);
    return 1;
}
