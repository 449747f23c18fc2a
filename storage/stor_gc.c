/*
 * stor_gc — reclaiming what deletes and expiries leave: the compaction
 * filters that drop the sub and score records of a dead collection
 * version, range compactions on a thread of their own, and checkpoints.
 * See stor.h and docs/encoding.md, "Garbage collection".
 *
 * Threads: the filters run on RocksDB's compaction threads and read meta
 * records under gc_mu; the range compactor runs on its own thread (cmp);
 * the rest on the caller's.
 */
#include "stor_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv_mem.h"

/* ---- compaction filters ---- */

/* One filter instance lives for one compaction. It remembers the last meta
 * record it looked up: sub records of one collection are adjacent, so a
 * million-field hash costs one meta read, not a million. Caching is safe in
 * both directions: a version that died never comes back, and keeping a
 * record one compaction too long only delays its collection. */
struct gc_filter {
    struct stor *s;
    int cf;
    char *mkey;
    size_t mkeylen, mkeycap;
    bool cached; /* mkey holds the last key looked up */
    bool known;  /* the look-up decided; false: keep everything (any doubt) */
    bool alive;  /* known: the meta record exists and is a collection */
    uint8_t type;
    uint64_t version;
    uint32_t rank; /* a sorted set's: enc_meta.rank */
};

static void gc_filter_free(void *state)
{
    struct gc_filter *f = state;
    free(f->mkey);
    free(f);
}

static const char *gc_filter_name(void *state)
{
    (void)state;
    return "shmkv.gc";
}

/* Looks up the meta record for the sub key's user key, through the cache. */
static void gc_lookup_meta(struct gc_filter *f, const struct enc_sub *sk)
{
    size_t need = enc_meta_key_len(sk->klen);
    if (f->cached && f->mkeylen == need && (uint8_t)f->mkey[0] == sk->db &&
        enc_get_u16(f->mkey + 1) == sk->slot && memcmp(f->mkey + 3, sk->key, sk->klen) == 0)
        return;
    if (need > f->mkeycap) {
        f->mkey = kv_xrealloc(f->mkey, need);
        f->mkeycap = need;
    }
    f->mkeylen = enc_meta_key(f->mkey, sk->db, sk->slot, sk->key, sk->klen);
    f->cached = true;
    f->known = false; /* until the look-up decides, nothing is dropped */
    struct stor *s = f->s;
    pthread_mutex_lock(&s->gc_mu);
    if (!s->gc_open) {
        pthread_mutex_unlock(&s->gc_mu);
        return;
    }
    char *err = NULL;
    size_t vn = 0;
    char *v = rocksdb_get_cf(s->db, s->ropts, s->cf[STOR_CF_META], f->mkey, f->mkeylen, &vn, &err);
    pthread_mutex_unlock(&s->gc_mu);
    if (err) {
        rocksdb_free(err);
        f->cached = false; /* a transient error: ask again next record */
        return;
    }
    if (!v) {
        f->known = true;
        f->alive = false;
        return;
    }
    struct enc_meta m;
    if (enc_meta_value_decode(v, vn, &m) == 0) { /* a corrupt record decides nothing */
        f->known = true;
        f->type = m.type;
        f->version = m.version;
        f->rank = m.rank;
        /* An inline collection keeps none: no record of its version is
         * live. */
        f->alive = m.type != ENC_TYPE_STRING && m.coding != ENC_CODING_INLINE;
    }
    rocksdb_free(v);
}

static unsigned char gc_filter_sub(void *state, int level, const char *key, size_t klen,
                                   const char *val, size_t vlen, char **newv, size_t *newvlen,
                                   unsigned char *changed)
{
    (void)level, (void)val, (void)vlen, (void)newv, (void)newvlen;
    struct gc_filter *f = state;
    *changed = 0;
    struct enc_sub sk;
    if (enc_sub_decode(key, klen, &sk))
        return 0; /* not ours to judge */
    gc_lookup_meta(f, &sk);
    if (!f->known)
        return 0; /* not open yet (compactions start during open), an error, or corruption */
    if (!f->alive)
        return 1;
    if (f->version != sk.version)
        return 1;
    if ((f->cf == STOR_CF_SCORE || f->cf == STOR_CF_RANK) && f->type != ENC_TYPE_ZSET)
        return 1;
    /* A rank record lives while its generation is the set's index. */
    if (f->cf == STOR_CF_RANK && (sk.flen < 4 || !(f->rank & ENC_RANK_ON) ||
                                  enc_get_u32(sk.field) != (f->rank & ENC_RANK_GEN)))
        return 1;
    /* Not expiry: RocksDB may lag the overlay (a PERSIST not yet flushed),
     * so "expired in RocksDB" does not mean expired. Expired keys are
     * deleted through the write path (db_reap); their records go then. */
    return 0;
}

static rocksdb_compactionfilter_t *gc_filter_create(void *state,
                                                    rocksdb_compactionfiltercontext_t *ctx)
{
    (void)ctx;
    struct gc_filter *fs = kv_xmalloc(sizeof *fs);
    memset(fs, 0, sizeof *fs);
    const struct gc_filter *proto = state; /* s and cf of this column family */
    fs->s = proto->s;
    fs->cf = proto->cf;
    return rocksdb_compactionfilter_create(fs, gc_filter_free, gc_filter_sub, gc_filter_name);
}

static void gc_factory_free(void *state)
{
    free(state);
}

static const char *gc_factory_name(void *state)
{
    (void)state;
    return "shmkv.gc.factory";
}

void stor_gc_attach(struct stor *s, int cf, rocksdb_options_t *opt)
{
    struct gc_filter *proto = kv_xmalloc(sizeof *proto);
    memset(proto, 0, sizeof *proto);
    proto->s = s;
    proto->cf = cf;
    rocksdb_compactionfilterfactory_t *fac = rocksdb_compactionfilterfactory_create(
        proto, gc_factory_free, gc_filter_create, gc_factory_name);
    rocksdb_options_set_compaction_filter_factory(opt, fac); /* options own it */
}

/* ---- maintenance ---- */

int stor_compact(struct stor *s, int cf)
{
    int rc = stor_drain(s); /* compaction can only collect what RocksDB has */
    if (rc)
        return rc;
    stor_housekeep(s);
    char *err = NULL;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    rocksdb_flush_cf(s->db, fo, s->cf[cf], &err);
    rocksdb_flushoptions_destroy(fo);
    if (err)
        return stor_take_err(err);
    /* Bottommost level too: otherwise a record already at the last level is
     * never shown to the filter. */
    rocksdb_compactoptions_t *co = rocksdb_compactoptions_create();
    rocksdb_compactoptions_set_bottommost_level_compaction(co, 1 /* kForce */);
    rocksdb_compactoptions_set_exclusive_manual_compaction(co, 0);
    rocksdb_compact_range_cf_opt(s->db, s->cf[cf], co, NULL, 0, NULL, 0);
    rocksdb_compactoptions_destroy(co);
    return 0;
}

static void *compact_main(void *arg)
{
    struct stor *s = arg;
    pthread_setname_np(pthread_self(), "shmkv-compact");
    stor_thread_quiet();
    rocksdb_compactoptions_t *co = rocksdb_compactoptions_create();
    rocksdb_compactoptions_set_bottommost_level_compaction(co, 1 /* kForce */);
    rocksdb_compactoptions_set_exclusive_manual_compaction(co, 0);
    pthread_mutex_lock(&s->cmp.mu);
    for (;;) {
        while (!s->cmp.stop && !s->cmp.nreq)
            pthread_cond_wait(&s->cmp.cv, &s->cmp.mu);
        if (s->cmp.stop)
            break;
        struct stor_range r[STOR_COMPACT_RANGES];
        size_t n = s->cmp.nreq;
        memcpy(r, s->cmp.req, n * sizeof *r);
        s->cmp.nreq = 0;
        pthread_mutex_unlock(&s->cmp.mu);
        for (size_t i = 0; i < n; i++) {
            rocksdb_compact_range_cf_opt(s->db, s->cf[r[i].cf], co, r[i].lo, r[i].lon, r[i].hi,
                                         r[i].hin);
            free(r[i].lo);
            free(r[i].hi);
        }
        pthread_mutex_lock(&s->cmp.mu);
        s->cmp.done++;
    }
    pthread_mutex_unlock(&s->cmp.mu);
    rocksdb_compactoptions_destroy(co);
    return NULL;
}

bool stor_compact_async(struct stor *s, const struct stor_range *r, size_t n)
{
    /* A compaction writes its output before it drops its input: not while
     * the disk is short of room (stor_disk_check, the executor's, as this). */
    if (n == 0 || n > STOR_COMPACT_RANGES || s->disk.low)
        return false;
    uint64_t now = stor_mono_us();
    pthread_mutex_lock(&s->cmp.mu);
    bool take = !s->cmp.stop && !s->cmp.nreq &&
                (!s->cmp.asked || now - s->cmp.last_us >= STOR_COMPACT_GAP_US);
    if (take && !s->cmp.started) {
        if (pthread_create(&s->cmp.th, NULL, compact_main, s) == 0)
            s->cmp.started = true;
        else
            take = false;
    }
    if (take) {
        for (size_t i = 0; i < n; i++) {
            s->cmp.req[i] = r[i];
            s->cmp.req[i].lo = r[i].lo ? kv_xmemdup(r[i].lo, r[i].lon) : NULL;
            s->cmp.req[i].hi = r[i].hi ? kv_xmemdup(r[i].hi, r[i].hin) : NULL;
        }
        s->cmp.nreq = n;
        s->cmp.last_us = now;
        s->cmp.asked++;
        pthread_cond_signal(&s->cmp.cv);
    }
    pthread_mutex_unlock(&s->cmp.mu);
    return take;
}

void stor_compact_async_stats(struct stor *s, uint64_t *asked, uint64_t *done)
{
    pthread_mutex_lock(&s->cmp.mu);
    *asked = s->cmp.asked;
    *done = s->cmp.done;
    pthread_mutex_unlock(&s->cmp.mu);
}

/* Stops the range compactions: the one running gives up (RocksDB's manual
 * compactions are switched off for the rest of the engine's life), the one
 * waiting is dropped. */
void stor_compact_stop(struct stor *s)
{
    pthread_mutex_lock(&s->cmp.mu);
    s->cmp.stop = true;
    pthread_cond_signal(&s->cmp.cv);
    bool started = s->cmp.started;
    pthread_mutex_unlock(&s->cmp.mu);
    if (!started)
        return;
    rocksdb_disable_manual_compaction(s->db);
    pthread_join(s->cmp.th, NULL);
    for (size_t i = 0; i < s->cmp.nreq; i++) {
        free(s->cmp.req[i].lo);
        free(s->cmp.req[i].hi);
    }
    s->cmp.nreq = 0;
}

int stor_flush_memtables(struct stor *s)
{
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    char *err = NULL;
    for (int cf = 0; cf < STOR_CF_COUNT && !err; cf++)
        rocksdb_flush_cf(s->db, fo, s->cf[cf], &err);
    rocksdb_flushoptions_destroy(fo);
    return err ? stor_take_err(err) : 0;
}

int stor_checkpoint(struct stor *s, const char *dir)
{
    char *err = NULL;
    rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(s->db, &err);
    if (err)
        return stor_take_err(err);
    rocksdb_checkpoint_create(cp, dir, 0, &err);
    rocksdb_checkpoint_object_destroy(cp);
    return err ? stor_take_err(err) : 0;
}
