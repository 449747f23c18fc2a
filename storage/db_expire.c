/*
 * db_expire — expiry: the expiry index (one entry per key with a TTL, in db
 * then time order) and its floor, EXPIRE, PERSIST and EXPIRETIME, and
 * active expiry (db_reap), which deletes the keys that fall due.
 * See docs/encoding.md, "The expiry index".
 */
#include "db_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

static void efloor_reset(struct db *d, unsigned dbi, uint64_t exp);

void db_put_expiry(struct db *d, unsigned dbi, uint64_t exp, uint16_t slot, const char *key,
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
int db_expiry_index_check(struct db *d)
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
            db_put_expiry(d, dbi, exp, slot, uk, ukn);
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

int db_expire(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t when_ms, int flags)
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
    bool gone = when_ms <= db_expiry_clock(d);
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
                db_note_prior(d, mexp);
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
    /* From db 0 on; past the marker "" (db_expiry_index_check). In each db the
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
