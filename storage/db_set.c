/*
 * db_set — Redis sets: one sub record per member, empty value. Members
 * iterate in byte order, so SMEMBERS and the set algebra return sorted
 * results (Redis leaves the order unspecified).
 */
#include "db_int.h"

#include <stdlib.h>
#include <string.h>

int db_sadd(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *m,
            size_t n, uint64_t *added)
{
    struct db_kc kc;
    db_begin(d);
    *added = 0;
    int rc = kc_open_write(d, &kc, dbi, key, klen, ENC_TYPE_SET);
    if (rc)
        goto out;
    rc = kc_put_fields(d, &kc, m, n, false, true, added);
    if (rc == 0)
        rc = db_commit(d);
out:
    kc_free(&kc);
    return rc;
}

int db_srem(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *m,
            size_t n, uint64_t *removed)
{
    return db_remove_members(d, dbi, key, klen, ENC_TYPE_SET, m, n, removed);
}

/* Appends every member of an open set to out. */
static int set_members(struct db *d, struct db_kc *kc, struct db_vec *out)
{
    struct stor_it *it = kc_iter(d, kc, STOR_CF_SUB);
    for (stor_it_first(it); stor_it_valid(it); stor_it_next(it)) {
        size_t kn, mn;
        const char *k = stor_it_key(it, &kn);
        const char *mem = kc_suffix(kc, k, kn, &mn);
        db_vec_push(out, mem, mn, 1.0);
    }
    int rc = stor_it_status(it);
    stor_it_free(it);
    return rc;
}

int db_smembers(struct db *d, unsigned dbi, const char *key, size_t klen, struct db_vec *out)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_SET);
    if (rc == 0)
        rc = set_members(d, &kc, out);
    kc_free(&kc);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

int db_sismember(struct db *d, unsigned dbi, const char *key, size_t klen, const char *m, size_t mn)
{
    return db_has_member(d, dbi, key, klen, ENC_TYPE_SET, m, mn);
}

static void ismember_one(void *arg, size_t i, const char *v, size_t vn)
{
    (void)vn;
    ((unsigned char *)arg)[i] = v != NULL;
}

int db_smismember(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *m,
                  size_t n, unsigned char *is)
{
    struct db_kc kc;
    memset(is, 0, n);
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_SET);
    if (rc == 0)
        rc = kc_read_subs(d, &kc, m, n, true, ismember_one, is);
    kc_free(&kc);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

int db_scard(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t *n)
{
    return db_coll_size(d, dbi, key, klen, ENC_TYPE_SET, n);
}

int db_srandmember(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t count,
                   struct db_vec *out)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_SET);
    if (rc == 0)
        rc = db_pick(d, &kc, count, DB_PICK_KEYS, out);
    if (rc == DB_PICK_READ_ALL) {
        struct db_vec all;
        db_vec_init(&all);
        rc = set_members(d, &kc, &all);
        if (rc == 0)
            db_sample(d, &all, 1, count, out);
        db_vec_destroy(&all);
    }
    kc_free(&kc);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

int db_spop(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t count,
            struct db_vec *out)
{
    struct db_kc kc;
    struct db_vec all;
    db_vec_init(&all);
    db_begin(d);
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_SET);
    if (rc)
        goto out;
    int64_t want = count > INT64_MAX ? INT64_MAX : (int64_t)count;
    rc = db_pick(d, &kc, want, DB_PICK_KEYS, out);
    if (rc == DB_PICK_READ_ALL) {
        if ((rc = set_members(d, &kc, &all)))
            goto out;
        db_sample(d, &all, 1, want, out);
    } else if (rc) {
        goto out;
    }
    for (size_t i = 0; i < out->n; i++) {
        size_t kn;
        const char *k = kc_sub(&kc, db_vec_ptr(out, i), db_vec_len(out, i), &kn);
        db_sub_del(d, STOR_CF_SUB, k, kn);
    }
    kc.m.size -= kc.m.coding == ENC_CODING_BLIND ? 0 : out->n;
    if (all.n && out->n == all.n)
        kc_del_meta(d, &kc); /* popped everything */
    else if ((rc = kc_settle(d, &kc)))
        goto out;
    rc = db_commit(d);
out:
    if (rc)
        db_vec_clear(out);
    db_vec_destroy(&all);
    kc_free(&kc);
    return rc;
}

int db_smove(struct db *d, unsigned dbi, const char *src, size_t srcn, const char *dst, size_t dstn,
             const char *m, size_t mn)
{
    struct db_kc s, t;
    db_begin(d);
    int rc = kc_open(d, &s, dbi, src, srcn, ENC_TYPE_SET);
    int rc2 = kc_open_write(d, &t, dbi, dst, dstn, ENC_TYPE_SET);
    if (rc == KV_ENOTFOUND) {
        rc = 0; /* no source set: nothing moves, whatever dst holds */
        goto out;
    }
    if (rc || (rc = rc2))
        goto out;
    size_t kn;
    const char *k = kc_sub(&s, m, mn, &kn);
    if ((rc = db_rhas(d, STOR_CF_SUB, k, kn, true)) <= 0)
        goto out;
    if (srcn == dstn && memcmp(src, dst, srcn) == 0) {
        rc = 1; /* a member moved onto its own set stays */
        goto out;
    }
    db_sub_del(d, STOR_CF_SUB, k, kn);
    if (s.m.coding != ENC_CODING_BLIND)
        s.m.size--;
    if ((rc = kc_settle(d, &s)))
        goto out;
    k = kc_sub(&t, m, mn, &kn);
    int had = db_rhas(d, STOR_CF_SUB, k, kn, false);
    if (had < 0) {
        rc = had;
        goto out;
    }
    if (!had) {
        db_sub_put(d, STOR_CF_SUB, k, kn, "", 0);
        if (t.m.coding != ENC_CODING_BLIND)
            t.m.size++;
        if (t.created || t.m.coding != ENC_CODING_BLIND)
            kc_put_meta(d, &t);
    }
    rc = db_commit(d);
    if (rc == 0)
        rc = 1;
out:
    kc_free(&s);
    kc_free(&t);
    return rc;
}

/* Opens every key of a set operation: all that exist must be sets. kcs[i]
 * with m.type NONE are absent. */
static int open_all(struct db *d, unsigned dbi, const struct db_str *keys, size_t nkeys,
                    struct db_kc *kcs, int accept_zset)
{
    int rc = 0;
    for (size_t i = 0; i < nkeys; i++) {
        int r = kc_load(d, &kcs[i], dbi, keys[i].p, keys[i].n);
        int t = kcs[i].m.type;
        if (r == 0 && t != ENC_TYPE_NONE && t != ENC_TYPE_SET &&
            !(accept_zset && t == ENC_TYPE_ZSET))
            r = KV_EWRONGTYPE;
        if (r && !rc)
            rc = r;
    }
    return rc;
}

static int member_in(struct db *d, struct db_kc *kc, const char *m, size_t mn)
{
    if (kc->m.type == ENC_TYPE_NONE)
        return 0;
    size_t kn;
    const char *k = kc_sub(kc, m, mn, &kn);
    return db_rhas(d, STOR_CF_SUB, k, kn, true);
}

static int cmp_items(const void *a, const void *b, void *arg)
{
    const struct db_vec *v = arg;
    const struct db_vitem *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(v->buf + x->off, v->buf + y->off, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

void db_vec_sort_unique(struct db_vec *v)
{
    if (v->n < 2)
        return;
    qsort_r(v->items, v->n, sizeof *v->items, cmp_items, v);
    size_t w = 1;
    for (size_t i = 1; i < v->n; i++)
        if (cmp_items(&v->items[w - 1], &v->items[i], v) != 0)
            v->items[w++] = v->items[i];
    v->n = w;
}

static int setop(struct db *d, unsigned dbi, int op, const struct db_str *keys, size_t nkeys,
                 uint64_t limit, struct db_vec *out)
{
    if (nkeys == 0)
        return 0;
    struct db_kc *kcs = kv_xmalloc(nkeys * sizeof *kcs);
    memset(kcs, 0, nkeys * sizeof *kcs);
    int rc = open_all(d, dbi, keys, nkeys, kcs, 0);
    if (rc)
        goto out;
    if (op == DB_SUNION) {
        for (size_t i = 0; i < nkeys && rc == 0; i++)
            if (kcs[i].m.type != ENC_TYPE_NONE)
                rc = set_members(d, &kcs[i], out);
        db_vec_sort_unique(out);
        goto out;
    }
    /* INTER walks its smallest set and probes the rest; DIFF walks the first. */
    size_t base = 0;
    if (op == DB_SINTER) {
        uint64_t best = UINT64_MAX;
        for (size_t i = 0; i < nkeys; i++) {
            uint64_t n = 0;
            if (kcs[i].m.type == ENC_TYPE_NONE)
                goto out; /* an absent key is empty: so is the intersection */
            if ((rc = kc_size(d, &kcs[i], &n)))
                goto out;
            if (n < best) {
                best = n;
                base = i;
            }
        }
    }
    if (kcs[base].m.type == ENC_TYPE_NONE)
        goto out;
    struct db_vec cand;
    db_vec_init(&cand);
    rc = set_members(d, &kcs[base], &cand);
    for (size_t c = 0; c < cand.n && rc == 0; c++) {
        const char *m = db_vec_ptr(&cand, c);
        size_t mn = db_vec_len(&cand, c);
        bool keep = true;
        for (size_t i = 0; i < nkeys && keep; i++) {
            if (i == base || (op == DB_SDIFF && kcs[i].m.type == ENC_TYPE_NONE))
                continue;
            int in = member_in(d, &kcs[i], m, mn);
            if (in < 0) {
                rc = in;
                break;
            }
            keep = op == DB_SINTER ? in : !in;
        }
        if (rc == 0 && keep) {
            db_vec_push(out, m, mn, 1.0);
            if (limit && out->n >= limit)
                break;
        }
    }
    db_vec_destroy(&cand);
out:
    for (size_t i = 0; i < nkeys; i++)
        kc_free(&kcs[i]);
    free(kcs);
    return rc;
}

int db_setop(struct db *d, unsigned dbi, int op, const struct db_str *keys, size_t nkeys,
             uint64_t limit, struct db_vec *out)
{
    int rc = setop(d, dbi, op, keys, nkeys, limit, out);
    if (rc)
        db_vec_clear(out);
    return rc;
}

void db_store_vec(struct db *d, struct db_kc *dst, int type, const struct db_vec *v)
{
    if (v->n == 0) {
        kc_del_meta(d, dst);
        return;
    }
    kc_fresh(d, dst, type);
    if (dst->m.coding == ENC_CODING_BLIND)
        dst->m.coding = ENC_CODING_COUNTED; /* the size is known: keep it */
    for (size_t i = 0; i < v->n; i++) {
        const char *m = db_vec_ptr(v, i);
        size_t mn = db_vec_len(v, i), kn;
        if (type == ENC_TYPE_ZSET) {
            char s8[8];
            double sc = v->items[i].score == 0 ? 0.0 : v->items[i].score; /* stored -0 is 0 */
            enc_score_put(s8, sc);
            const char *k = kc_sub(dst, m, mn, &kn);
            db_sub_put(d, STOR_CF_SUB, k, kn, s8, 8);
            k = kc_score(dst, sc, m, mn, &kn);
            db_sub_put(d, STOR_CF_SCORE, k, kn, "", 0);
        } else {
            const char *k = kc_sub(dst, m, mn, &kn);
            db_sub_put(d, STOR_CF_SUB, k, kn, "", 0);
        }
    }
    dst->m.size = v->n;
    kc_put_meta(d, dst);
}

int db_setop_store(struct db *d, unsigned dbi, int op, const char *dst, size_t dstn,
                   const struct db_str *keys, size_t nkeys, uint64_t *card)
{
    struct db_vec v;
    struct db_kc t;
    db_vec_init(&v);
    db_begin(d);
    int rc = setop(d, dbi, op, keys, nkeys, 0, &v);
    if (rc == 0)
        rc = kc_load(d, &t, dbi, dst, dstn);
    else
        memset(&t, 0, sizeof t);
    if (rc == 0) {
        db_store_vec(d, &t, ENC_TYPE_SET, &v);
        rc = db_commit(d);
        *card = v.n;
    }
    kc_free(&t);
    db_vec_destroy(&v);
    return rc;
}
