/*
 * db_hash — Redis hashes: one sub record per field (value = field value),
 * under the hash's current version. COUNTED hashes keep their size in the
 * meta record; BLIND ones never read before HSET and count by scan.
 */
#include "db_int.h"

#include <math.h>
#include <stdio.h>

int db_hset(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *fv,
            size_t npairs, int nx, uint64_t *added)
{
    struct db_kc kc;
    db_begin(d);
    *added = 0;
    int rc = kc_open_write(d, &kc, dbi, key, klen, ENC_TYPE_HASH);
    if (rc)
        goto out;
    rc = kc_put_fields(d, &kc, fv, npairs, true, nx, added);
    if (rc == 0)
        rc = db_commit(d);
out:
    kc_free(&kc);
    return rc;
}

int db_hget(struct db *d, unsigned dbi, const char *key, size_t klen, const char *f, size_t fn,
            char **v, size_t *vn)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_HASH);
    if (rc == 0) {
        size_t kn;
        const char *k = kc_sub(&kc, f, fn, &kn);
        rc = db_rget(d, STOR_CF_SUB, k, kn, v, vn);
    }
    kc_free(&kc);
    return rc;
}

static void hmget_one(void *arg, size_t i, const char *v, size_t vn)
{
    (void)i;
    if (v)
        db_vec_push(arg, v, vn, 0);
    else
        db_vec_push_nil(arg);
}

int db_hmget(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *f,
             size_t n, struct db_vec *out)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_HASH);
    if (rc == KV_ENOTFOUND) {
        for (size_t i = 0; i < n; i++)
            db_vec_push_nil(out);
        rc = 0;
    } else if (rc == 0) {
        rc = kc_read_subs(d, &kc, f, n, true, hmget_one, out);
    }
    kc_free(&kc);
    return rc;
}

struct remove_arg {
    struct db *d;
    struct db_kc *kc;
    const struct db_str *f;
    uint64_t *removed;
    int rc;
};

/* Deletes field i's sub record if it was read (v) and this command has
 * not deleted it already; a sorted set's member takes its score record
 * with it, the score read from v. */
static void remove_one(void *arg, size_t i, const char *v, size_t vn)
{
    struct remove_arg *a = arg;
    const struct db_str *f = &a->f[i];
    if (!v || kc_sub_written(a->d, a->kc, f->p, f->n)) /* absent, or named twice */
        return;
    size_t kn;
    const char *k;
    if (a->kc->m.type == ENC_TYPE_ZSET) {
        if (vn != 8) {
            if (a->rc == 0)
                a->rc = KV_ECORRUPT;
            return;
        }
        k = kc_score(a->kc, enc_score_get(v), f->p, f->n, &kn);
        db_sub_del(a->d, STOR_CF_SCORE, k, kn);
    }
    k = kc_sub(a->kc, f->p, f->n, &kn);
    db_sub_del(a->d, STOR_CF_SUB, k, kn);
    (*a->removed)++;
    a->kc->m.size--;
}

int db_remove_members(struct db *d, unsigned dbi, const char *key, size_t klen, int type,
                      const struct db_str *f, size_t n, uint64_t *removed)
{
    struct db_kc kc;
    db_begin(d);
    *removed = 0;
    int rc = kc_open(d, &kc, dbi, key, klen, type);
    if (rc == KV_ENOTFOUND) {
        rc = 0;
        goto out;
    }
    if (rc == 0) {
        if (type == ENC_TYPE_ZSET)
            db_zrix_touch(d, &kc, n);
        struct remove_arg a = {d, &kc, f, removed, 0};
        rc = kc_read_subs(d, &kc, f, n, false, remove_one, &a);
        if (rc == 0)
            rc = a.rc;
    }
    if (rc == 0 && *removed) {
        rc = kc_settle(d, &kc);
        if (rc == 0)
            rc = db_commit(d);
    }
out:
    kc_free(&kc);
    return rc;
}

int db_hdel(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *f,
            size_t n, uint64_t *removed)
{
    return db_remove_members(d, dbi, key, klen, ENC_TYPE_HASH, f, n, removed);
}

int db_coll_size(struct db *d, unsigned dbi, const char *key, size_t klen, int type, uint64_t *n)
{
    struct db_kc kc;
    *n = 0;
    int rc = kc_open(d, &kc, dbi, key, klen, type);
    if (rc == 0)
        rc = kc_size(d, &kc, n);
    kc_free(&kc);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

int db_hlen(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t *n)
{
    return db_coll_size(d, dbi, key, klen, ENC_TYPE_HASH, n);
}

int db_has_member(struct db *d, unsigned dbi, const char *key, size_t klen, int type, const char *f,
                  size_t fn)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, type);
    if (rc == 0) {
        size_t kn;
        const char *k = kc_sub(&kc, f, fn, &kn);
        rc = db_rhas(d, STOR_CF_SUB, k, kn, true);
    }
    kc_free(&kc);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

int db_hexists(struct db *d, unsigned dbi, const char *key, size_t klen, const char *f, size_t fn)
{
    return db_has_member(d, dbi, key, klen, ENC_TYPE_HASH, f, fn);
}

int db_hstrlen(struct db *d, unsigned dbi, const char *key, size_t klen, const char *f, size_t fn,
               uint64_t *n)
{
    char *v;
    size_t vn;
    *n = 0;
    int rc = db_hget(d, dbi, key, klen, f, fn, &v, &vn);
    if (rc == 0) {
        *n = vn;
        free(v);
    }
    return rc == KV_ENOTFOUND ? 0 : rc;
}

int db_hgetall(struct db *d, unsigned dbi, const char *key, size_t klen, int what,
               struct db_vec *out)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_HASH);
    if (rc == 0) {
        struct stor_it *it = kc_iter(d, &kc, STOR_CF_SUB);
        for (stor_it_first(it); stor_it_valid(it); stor_it_next(it)) {
            size_t kn, vn, fn;
            const char *k = stor_it_key(it, &kn);
            const char *v = stor_it_value(it, &vn);
            const char *f = kc_suffix(&kc, k, kn, &fn);
            if (what & DB_H_FIELDS)
                db_vec_push(out, f, fn, 0);
            if (what & DB_H_VALUES)
                db_vec_push(out, v, vn, 0);
        }
        rc = stor_it_status(it);
        stor_it_free(it);
    }
    kc_free(&kc);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

/* Shared read-modify-write of one hash field for HINCRBY/HINCRBYFLOAT: loads
 * the field (absent reads as "0") and stages fn(value). */
static int hash_field_rmw(struct db *d, struct db_kc *kc, unsigned dbi, const char *key,
                          size_t klen, const char *f, size_t fn, char **v, size_t *vn, bool *had)
{
    int rc = kc_open_write(d, kc, dbi, key, klen, ENC_TYPE_HASH);
    if (rc)
        return rc;
    size_t kn;
    const char *k = kc_sub(kc, f, fn, &kn);
    rc = db_rget(d, STOR_CF_SUB, k, kn, v, vn);
    *had = rc == 0;
    if (rc == KV_ENOTFOUND) {
        *v = NULL;
        *vn = 0;
        rc = 0;
    }
    return rc;
}

static int hash_field_store(struct db *d, struct db_kc *kc, const char *f, size_t fn, const char *v,
                            size_t vn, bool had)
{
    size_t kn;
    const char *k = kc_sub(kc, f, fn, &kn);
    db_sub_put(d, STOR_CF_SUB, k, kn, v, vn);
    bool counted = kc->m.coding != ENC_CODING_BLIND;
    if (!had && counted)
        kc->m.size++;
    if (kc->created || (!had && counted))
        kc_put_meta(d, kc);
    return db_commit(d);
}

int db_hincrby(struct db *d, unsigned dbi, const char *key, size_t klen, const char *f, size_t fn,
               int64_t delta, int64_t *out)
{
    struct db_kc kc;
    char *v = NULL;
    size_t vn;
    bool had;
    db_begin(d);
    int rc = hash_field_rmw(d, &kc, dbi, key, klen, f, fn, &v, &vn, &had);
    if (rc)
        goto out;
    int64_t cur = 0;
    if (had && kv_str2ll(v, vn, &cur)) {
        rc = KV_EHASHINT;
        goto out;
    }
    if ((rc = kv_add_ll(&cur, delta)))
        goto out;
    char buf[KV_LLSTR_MAX];
    rc = hash_field_store(d, &kc, f, fn, buf, kv_ll2str(buf, cur), had);
    *out = cur;
out:
    free(v);
    kc_free(&kc);
    return rc;
}

int db_hincrbyfloat(struct db *d, unsigned dbi, const char *key, size_t klen, const char *f,
                    size_t fn, long double delta, char *out, size_t *outn)
{
    struct db_kc kc;
    char *v = NULL;
    size_t vn;
    bool had;
    db_begin(d);
    int rc = hash_field_rmw(d, &kc, dbi, key, klen, f, fn, &v, &vn, &had);
    if (rc)
        goto out;
    long double cur = 0;
    if (had && kv_str2ld(v, vn, &cur)) {
        rc = KV_EHASHFLOAT;
        goto out;
    }
    cur += delta;
    if (isnan(cur) || isinf(cur)) {
        rc = KV_ENANINF;
        goto out;
    }
    *outn = kv_ld2str(out, KV_LDSTR_MAX, cur);
    rc = hash_field_store(d, &kc, f, fn, out, *outn, had);
out:
    free(v);
    kc_free(&kc);
    return rc;
}

int db_hrandfield(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t count,
                  int withvalues, struct db_vec *out)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_HASH);
    if (rc == 0)
        rc = db_pick(d, &kc, count, withvalues ? DB_PICK_PAIRS : DB_PICK_KEYS, out);
    kc_free(&kc);
    if (rc == DB_PICK_READ_ALL) {
        struct db_vec all;
        db_vec_init(&all);
        uint64_t found = d->looked_found, missing = d->looked_missing;
        rc = db_hgetall(d, dbi, key, klen, withvalues ? DB_H_BOTH : DB_H_FIELDS, &all);
        db_lookups_rewind(d, found, missing); /* the same key, read whole */
        if (rc == 0)
            db_sample(d, &all, withvalues ? 2 : 1, count, out);
        db_vec_destroy(&all);
    }
    return rc == KV_ENOTFOUND ? 0 : rc;
}
