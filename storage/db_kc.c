/*
 * db_kc — key contexts: a user key's meta record loaded, checked and
 * written back, the sub and score keys of its fields and members, and the
 * prefetch hints that let a command's key look-ups overlap. Every type's
 * operations go through them; only they and enc_ know record layouts.
 */
#include "db_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

/* ---- key contexts ---- */

void db_prefetch1(const struct db *d, unsigned dbi, const char *key, size_t klen, struct db_pf *pf)
{
    char mk[128];
    *pf = (struct db_pf){.set = false};
    if (enc_meta_key_len(klen) > sizeof mk)
        return; /* long keys: the hash dwarfs the miss */
    size_t n = enc_meta_key(mk, dbi, enc_slot(key, klen), key, klen);
    pf->ov_hash = stor_prefetch_slot(d->s, STOR_CF_META, mk, n);
    if (d->cache.prefetch1)
        pf->cache_hash = d->cache.prefetch1(d->cache_arg, STOR_CF_META, mk, n, &pf->cache_klen);
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
    if (d->cache.prefetch1)
        pf->sub_cache_hash =
            d->cache.prefetch1(d->cache_arg, STOR_CF_SUB, sk, n, &pf->sub_cache_klen);
    pf->sub_set = true;
}

void db_prefetch2(const struct db *d, const struct db_pf *pf)
{
    if (!pf->set)
        return;
    stor_prefetch_node(d->s, pf->ov_hash);
    /* A key the cache surely lacks (no tag matches) may be new: a write
     * of it asks the key filter (db_count_keys). */
    if (!d->cache.prefetch2 || !d->cache.prefetch2(d->cache_arg, pf->cache_hash, pf->cache_klen))
        db_keyf_prefetch(&d->keyf, pf->ov_hash);
    if (!pf->sub_set)
        return;
    stor_prefetch_node(d->s, pf->sub_ov_hash);
    if (d->cache.prefetch2)
        d->cache.prefetch2(d->cache_arg, pf->sub_cache_hash, pf->sub_cache_klen);
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
    if (d->inls.n)
        db_inl_sync(d, kc->mk.p, kc->mk.n);
    int rc = db_rget_with(d, STOR_CF_META, kc->mk.p, kc->mk.n, &kc->raw, &kc->rawn, SIZE_MAX, fill,
                          fill_absent);
    if (rc == KV_ENOTFOUND) {
        d->looked_missing++;
        return 0;
    }
    if (rc)
        return rc;
    rc = enc_meta_value_decode(kc->raw, kc->rawn, &kc->m);
    if (rc)
        return rc;
    if (kc->m.expire_ms && kc->m.expire_ms <= db_expiry_clock(d)) {
        memset(&kc->m, 0, sizeof kc->m); /* expired reads as absent */
        if (d->seen_expired)
            db_vec_push(d->seen_expired, key, klen, dbi);
    }
    if (kc->m.type == ENC_TYPE_NONE)
        d->looked_missing++;
    else
        d->looked_found++;
    if (kc->m.coding == ENC_CODING_INLINE && kc->m.type != ENC_TYPE_NONE &&
        (rc = db_inl_open(d, kc)) != 0)
        return rc;
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
    if (kc->inl)
        db_inl_close(kc);
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

int kc_open(struct db *d, struct db_kc *kc, unsigned dbi, const char *key, size_t klen, int type)
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
    if (type != ENC_TYPE_STRING)
        db_inl_fresh(d, kc);
    else if (kc->inl)
        db_inl_close(kc);
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

int kc_put_fields(struct db *d, struct db_kc *kc, const struct db_str *items, size_t n, bool pairs,
                  bool nx, uint64_t *added)
{
    bool blind = kc->m.coding == ENC_CODING_BLIND;
    /* A blind collection reads nothing before a write, but where the write
     * depends on what is there: HSETNX must not replace a value. A set
     * member written again changes nothing, so SADD never reads. Unread,
     * a field counts as new unless this command already wrote it. */
    bool read = !blind || (nx && pairs);
    for (size_t i = 0; i < n; i++) {
        const struct db_str *f = &items[pairs ? 2 * i : i];
        size_t kn;
        const char *k = kc_sub(kc, f->p, f->n, &kn);
        int had;
        if (!read) {
            const char *bv;
            size_t bn;
            had = stor_batch_lookup(&d->b, STOR_CF_SUB, k, kn, &bv, &bn) == STOR_PUT;
        } else if ((had = db_rhas(d, STOR_CF_SUB, k, kn, false)) < 0) {
            return had;
        }
        if (had && nx)
            continue;
        if (!had) {
            (*added)++;
            kc->m.size++;
        }
        if (pairs)
            db_sub_put(d, STOR_CF_SUB, k, kn, f[1].p, f[1].n);
        else
            db_sub_put(d, STOR_CF_SUB, k, kn, "", 0);
    }
    if (blind)
        kc->m.size = 0; /* a blind collection keeps no size */
    if (kc->created || (!blind && *added))
        kc_put_meta(d, kc);
    return 0;
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
        db_put_expiry(d, kc->dbi, exp, kc->slot, kc->key, kc->klen);
}

void kc_put_meta(struct db *d, struct db_kc *kc)
{
    char small[64];
    if (kc->inl && (kc->m.type == ENC_TYPE_STRING || kc->m.coding != ENC_CODING_INLINE))
        db_inl_close(kc); /* the key became a string (SET ... GET over it): no copy */
    if (kc->inl)          /* the copy as it is now, after the fixed fields */
        kc->m.inln = db_inl_payload_len(kc);
    size_t n = enc_meta_value_len(&kc->m);
    char *buf = n <= sizeof small ? small : kv_xmalloc(n);
    if (kc->inl) {
        kc->m.inln = 0; /* enc_meta_value writes the fixed fields alone */
        db_inl_payload(kc, buf + enc_meta_value(buf, &kc->m));
        db_inl_written(kc);
    } else {
        enc_meta_value(buf, &kc->m);
    }
    stor_batch_put(&d->b, STOR_CF_META, kc->mk.p, kc->mk.n, buf, n);
    if (buf != small)
        free(buf);
    reindex_expiry(d, kc, kc->m.expire_ms);
}

void kc_del_meta(struct db *d, struct db_kc *kc)
{
    if (kc->inl)
        db_inl_dead(kc);
    stor_batch_del(&d->b, STOR_CF_META, kc->mk.p, kc->mk.n);
    reindex_expiry(d, kc, 0);
}

/* Notes that the record set's next op deletes the meta record of a key
 * that had one carrying expiry exp, as a read found it with nothing for
 * the key in the record set yet: the key counts take it (db.priors). */
void db_note_prior(struct db *d, uint64_t exp)
{
    if (d->npriors == d->cappriors) {
        d->cappriors = d->cappriors ? 2 * d->cappriors : 64;
        d->priors = kv_xrealloc(d->priors, d->cappriors * sizeof *d->priors);
    }
    d->priors[d->npriors++] = (struct db_prior){d->b.nops, exp};
}

void kc_del_read(struct db *d, struct db_kc *kc)
{
    db_note_prior(d, kc->m.expire_ms); /* kc_del_meta's first op deletes the meta record */
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
    if (kc->inl) /* the copy holds no trace of a put: only a delete shows */
        return !db_inl_has(kc, f, fn);
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
    if (kc->inl)
        return db_inl_iter(kc, cf);
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
        db_sub_put(d, cf, dk, dkn, v, vn);
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
    dst->m.rank = 0; /* the copy has no index until a query builds one */
    dst->m.inl = NULL;
    dst->m.inln = 0;
    dst->plen = 0;
    if (dst->inl)
        db_inl_close(dst); /* what dst held before */
    if (src->inl) {
        /* The copy keeps the source's encoding, as Redis's does, whatever
         * the thresholds say now: its meta record carries the same records. */
        char *p = kv_xmalloc(db_inl_payload_len(src) + 1);
        dst->m.inln = db_inl_payload_len(src);
        db_inl_payload(src, p);
        dst->m.inl = p;
        kc_put_meta(d, dst);
        dst->m.inl = NULL;
        dst->m.inln = 0;
        free(p);
        return;
    }
    copy_cf(d, src, dst, STOR_CF_SUB, rc);
    if (src->m.type == ENC_TYPE_ZSET)
        copy_cf(d, src, dst, STOR_CF_SCORE, rc);
    kc_put_meta(d, dst);
}
