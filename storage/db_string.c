/*
 * db_string — Redis strings: the value lives inline in the meta record, so
 * every string operation is one point read and at most one put.
 */
#include "db_int.h"
#include "hll.h"

#include <math.h>
#include <stdio.h>

/* Stages kc as a string holding v (expiry from kc->m.expire_ms), or deletes
 * it when that expiry is already past. */
static void put_string(struct db *d, struct db_kc *kc, const char *v, size_t vn)
{
    if (kc->m.expire_ms && kc->m.expire_ms <= db_expiry_clock(d)) {
        kc_del_meta(d, kc);
        return;
    }
    uint64_t exp = kc->m.expire_ms;
    memset(&kc->m, 0, sizeof kc->m);
    kc->m.type = ENC_TYPE_STRING;
    kc->m.expire_ms = exp;
    kc->m.value = v;
    kc->m.vlen = vn;
    kc_put_meta(d, kc);
}

static int commit_or(struct db *d, int rc)
{
    return rc ? rc : db_commit(d);
}

int db_get(struct db *d, unsigned dbi, const char *key, size_t klen, char **v, size_t *vn)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_STRING);
    if (rc == 0) {
        *v = kv_xmemdup(kc.m.value, kc.m.vlen);
        *vn = kc.m.vlen;
    }
    kc_free(&kc);
    return rc;
}

struct mget_arg {
    void (*each)(void *arg, const char *v, size_t vn);
    void *arg;
};

static void mget_one(void *arg, size_t i, const struct enc_meta *m)
{
    struct mget_arg *a = arg;
    (void)i;
    if (m && m->type == ENC_TYPE_STRING)
        a->each(a->arg, m->value, m->vlen);
    else
        a->each(a->arg, NULL, 0);
}

int db_mget(struct db *d, unsigned dbi, const struct db_str *keys, size_t n, size_t prefetched,
            void (*each)(void *arg, const char *v, size_t vn), void *arg)
{
    struct mget_arg a = {each, arg};
    return db_metas(d, dbi, keys, n, prefetched, false, mget_one, &a);
}

int db_set(struct db *d, unsigned dbi, const char *key, size_t klen, const char *v, size_t vn,
           uint64_t expire_ms, int flags, char **old, size_t *oldn)
{
    struct db_kc kc;
    db_begin(d);
    if (flags & DB_SET_GET) {
        *old = NULL;
        *oldn = 0;
    }
    if (!(flags & (DB_SET_NX | DB_SET_XX | DB_SET_GET | DB_SET_KEEPTTL))) {
        /* A plain SET replaces whatever is there without looking: an old
         * collection's records are left to the compaction filter. */
        kc_blank(&kc, dbi, key, klen);
        kc.m.expire_ms = expire_ms;
        put_string(d, &kc, v, vn);
        int rc = db_commit(d);
        kc_free(&kc);
        return rc ? rc : 1;
    }
    int rc = kc_load(d, &kc, dbi, key, klen);
    if (rc)
        goto out;
    bool exists = kc.m.type != ENC_TYPE_NONE;
    if ((flags & DB_SET_GET) && exists) {
        if (kc.m.type != ENC_TYPE_STRING) {
            rc = KV_EWRONGTYPE;
            goto out;
        }
        *old = kv_xmemdup(kc.m.value, kc.m.vlen);
        *oldn = kc.m.vlen;
    }
    if (((flags & DB_SET_NX) && exists) || ((flags & DB_SET_XX) && !exists)) {
        rc = 0;
        goto out;
    }
    if (!(flags & DB_SET_KEEPTTL) || !exists)
        kc.m.expire_ms = (flags & DB_SET_KEEPTTL) ? 0 : expire_ms;
    put_string(d, &kc, v, vn);
    rc = db_commit(d);
    if (rc == 0)
        rc = 1;
out:
    if (rc < 0 && (flags & DB_SET_GET)) {
        free(*old);
        *old = NULL;
    }
    kc_free(&kc);
    return rc;
}

int db_getdel(struct db *d, unsigned dbi, const char *key, size_t klen, char **v, size_t *vn)
{
    struct db_kc kc;
    db_begin(d);
    int rc = kc_take(d, &kc, dbi, key, klen);
    if (rc == 0)
        rc = kc_want(&kc, ENC_TYPE_STRING);
    if (rc == 0) {
        kc_del_read(d, &kc);
        rc = db_commit(d);
        if (rc == 0) {
            *v = kv_xmemdup(kc.m.value, kc.m.vlen);
            *vn = kc.m.vlen;
        }
    }
    kc_free(&kc);
    return rc;
}

int db_getex(struct db *d, unsigned dbi, const char *key, size_t klen, int mode, uint64_t expire_ms,
             char **v, size_t *vn)
{
    struct db_kc kc;
    db_begin(d);
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_STRING);
    if (rc)
        goto out;
    *v = kv_xmemdup(kc.m.value, kc.m.vlen);
    *vn = kc.m.vlen;
    if (mode == DB_GETEX_SET && expire_ms <= db_expiry_clock(d)) {
        kc_del_meta(d, &kc); /* a time already past deletes the key, as in Redis */
        rc = 2;
    } else if (mode == DB_GETEX_SET || (mode == DB_GETEX_PERSIST && kc.m.expire_ms)) {
        kc.m.expire_ms = mode == DB_GETEX_SET ? expire_ms : 0;
        put_string(d, &kc, kc.m.value, kc.m.vlen);
        rc = 1;
    }
    if (rc) {
        int crc = db_commit(d);
        if (crc) {
            free(*v);
            *v = NULL;
            rc = crc;
        }
    }
out:
    kc_free(&kc);
    return rc;
}

int db_mset(struct db *d, unsigned dbi, const struct db_str *kv, size_t npairs, int nx)
{
    db_begin(d);
    int rc = 0;
    if (nx) {
        struct db_str *keys = kv_xmalloc(npairs * sizeof *keys);
        uint64_t present;
        for (size_t i = 0; i < npairs; i++)
            keys[i] = kv[2 * i];
        rc = db_exists_many(d, dbi, keys, npairs, 0, &present);
        free(keys);
        if (rc || present)
            return rc; /* some key exists: MSETNX sets nothing */
    }
    for (size_t i = 0; i < npairs; i++) {
        struct db_kc kc;
        /* No read needed: MSET replaces any type and clears the TTL. */
        kc_blank(&kc, dbi, kv[2 * i].p, kv[2 * i].n);
        put_string(d, &kc, kv[2 * i + 1].p, kv[2 * i + 1].n);
        kc_free(&kc);
    }
    rc = db_commit(d);
    return rc ? rc : 1;
}

/* Loads a string for a read-modify-write: 0 with the key present or absent
 * (kc.m.type tells), KV_EWRONGTYPE otherwise. */
static int open_string_rmw(struct db *d, struct db_kc *kc, unsigned dbi, const char *key,
                           size_t klen)
{
    int rc = kc_load(d, kc, dbi, key, klen);
    if (rc == 0 && kc->m.type != ENC_TYPE_NONE && kc->m.type != ENC_TYPE_STRING)
        rc = KV_EWRONGTYPE;
    return rc;
}

int db_append(struct db *d, unsigned dbi, const char *key, size_t klen, const char *v, size_t vn,
              uint64_t *newlen)
{
    struct db_kc kc;
    db_begin(d);
    int rc = open_string_rmw(d, &kc, dbi, key, klen);
    if (rc)
        goto out;
    size_t oldn = kc.m.type == ENC_TYPE_NONE ? 0 : kc.m.vlen;
    if (oldn + vn > d->o.max_string) {
        rc = KV_ETOOBIG;
        goto out;
    }
    char *nv = kv_xmalloc(oldn + vn);
    if (oldn)
        memcpy(nv, kc.m.value, oldn);
    if (vn)
        memcpy(nv + oldn, v, vn);
    put_string(d, &kc, nv, oldn + vn);
    free(nv);
    rc = commit_or(d, 0);
    *newlen = oldn + vn;
out:
    kc_free(&kc);
    return rc;
}

int db_strlen(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t *len)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_STRING);
    *len = rc == 0 ? kc.m.vlen : 0;
    kc_free(&kc);
    return rc == KV_ENOTFOUND ? 0 : rc;
}

int db_incrby(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t delta, int64_t *out)
{
    struct db_kc kc;
    db_begin(d);
    int rc = open_string_rmw(d, &kc, dbi, key, klen);
    if (rc)
        goto out;
    int64_t cur = 0;
    if (kc.m.type == ENC_TYPE_STRING && (rc = kv_str2ll(kc.m.value, kc.m.vlen, &cur)))
        goto out;
    if ((rc = kv_add_ll(&cur, delta)))
        goto out;
    char buf[KV_LLSTR_MAX];
    put_string(d, &kc, buf, kv_ll2str(buf, cur));
    rc = commit_or(d, 0);
    *out = cur;
out:
    kc_free(&kc);
    return rc;
}

int db_incrbyfloat(struct db *d, unsigned dbi, const char *key, size_t klen, long double delta,
                   char *out, size_t *outn)
{
    struct db_kc kc;
    db_begin(d);
    int rc = open_string_rmw(d, &kc, dbi, key, klen);
    if (rc)
        goto out;
    long double cur = 0;
    if (kc.m.type == ENC_TYPE_STRING && (rc = kv_str2ld(kc.m.value, kc.m.vlen, &cur)))
        goto out;
    cur += delta;
    if (isnan(cur) || isinf(cur)) {
        rc = KV_ENANINF;
        goto out;
    }
    *outn = kv_ld2str(out, KV_LDSTR_MAX, cur);
    put_string(d, &kc, out, *outn);
    rc = commit_or(d, 0);
out:
    kc_free(&kc);
    return rc;
}

int db_getrange(struct db *d, unsigned dbi, const char *key, size_t klen, int64_t start,
                int64_t end, char **v, size_t *vn)
{
    struct db_kc kc;
    int rc = kc_open(d, &kc, dbi, key, klen, ENC_TYPE_STRING);
    *v = NULL;
    *vn = 0;
    if (rc == KV_ENOTFOUND) {
        rc = 0;
    } else if (rc == 0) {
        int64_t len = (int64_t)kc.m.vlen;
        if (!(start < 0 && end < 0 && start > end)) {
            if (start < 0)
                start += len;
            if (end < 0)
                end += len;
            if (start < 0)
                start = 0;
            if (end < 0)
                end = 0;
            if (end >= len)
                end = len - 1;
            if (len > 0 && start <= end) {
                *vn = (size_t)(end - start + 1);
                *v = kv_xmemdup(kc.m.value + start, *vn);
            }
        }
    }
    if (rc == 0 && !*v)
        *v = kv_xmalloc(1);
    kc_free(&kc);
    return rc;
}

int db_setrange(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t off,
                const char *v, size_t vn, uint64_t *newlen)
{
    struct db_kc kc;
    db_begin(d);
    int rc = open_string_rmw(d, &kc, dbi, key, klen);
    if (rc)
        goto out;
    size_t oldn = kc.m.type == ENC_TYPE_NONE ? 0 : kc.m.vlen;
    *newlen = oldn;
    if (vn == 0)
        goto out; /* nothing to write: no key is created, none changes */
    if (off > d->o.max_string || off + vn > d->o.max_string) {
        rc = KV_ETOOBIG;
        goto out;
    }
    size_t nn = off + vn > oldn ? off + vn : oldn;
    char *nv = kv_xmalloc(nn);
    memset(nv, 0, nn);
    if (oldn)
        memcpy(nv, kc.m.value, oldn);
    memcpy(nv + off, v, vn);
    put_string(d, &kc, nv, nn);
    free(nv);
    rc = commit_or(d, 0);
    *newlen = nn;
out:
    kc_free(&kc);
    return rc;
}

int db_setbit(struct db *d, unsigned dbi, const char *key, size_t klen, uint64_t bit, int on,
              int *old)
{
    struct db_kc kc;
    db_begin(d);
    int rc = open_string_rmw(d, &kc, dbi, key, klen);
    if (rc)
        goto out;
    size_t oldn = kc.m.type == ENC_TYPE_NONE ? 0 : kc.m.vlen;
    uint64_t byte = bit >> 3;
    if (byte >= d->o.max_string) {
        rc = KV_ETOOBIG;
        goto out;
    }
    unsigned char mask = (unsigned char)(0x80u >> (bit & 7));
    *old = byte < oldn && ((unsigned char)kc.m.value[byte] & mask);
    /* A bit that already has the value, in a string long enough, is no
     * change: nothing is written (WATCH and events ignore it, as in Redis
     * 7.0). */
    if (byte < oldn && *old == (on != 0))
        goto out;
    size_t nn = byte + 1 > oldn ? (size_t)byte + 1 : oldn;
    unsigned char *nv = kv_xmalloc(nn);
    if (oldn)
        memcpy(nv, kc.m.value, oldn);
    memset(nv + oldn, 0, nn - oldn);
    nv[byte] = on ? (unsigned char)(nv[byte] | mask) : (unsigned char)(nv[byte] & ~mask);
    put_string(d, &kc, (const char *)nv, nn);
    rc = commit_or(d, 0);
    free(nv);
    if (rc == 0)
        rc = 1;
out:
    kc_free(&kc);
    return rc;
}

int db_bitop(struct db *d, unsigned dbi, int op, const char *dst, size_t dstn,
             const struct db_str *keys, size_t nkeys, uint64_t *len)
{
    struct db_kc *src = kv_xmalloc(nkeys * sizeof *src);
    struct db_kc t;
    size_t loaded = 0, maxn = 0;
    unsigned char *out = NULL;
    db_begin(d);
    int rc = 0;
    for (; loaded < nkeys; loaded++) {
        rc = open_string_rmw(d, &src[loaded], dbi, keys[loaded].p, keys[loaded].n);
        if (rc) {
            kc_free(&src[loaded]);
            break;
        }
        if (src[loaded].m.type == ENC_TYPE_NONE)
            src[loaded].m.vlen = 0;
        if (src[loaded].m.vlen > maxn)
            maxn = src[loaded].m.vlen;
    }
    if (rc)
        goto out;
    if ((rc = kc_load(d, &t, dbi, dst, dstn))) {
        kc_free(&t);
        goto out;
    }
    *len = maxn;
    if (maxn == 0) {
        /* An empty result deletes the destination, as in Redis. */
        if (t.m.type != ENC_TYPE_NONE) {
            kc_del_meta(d, &t);
            rc = db_commit(d);
        }
        kc_free(&t);
        goto out;
    }
    out = kv_xmalloc(maxn);
    for (size_t i = 0; i < maxn; i++) {
        /* A shorter source reads as zero bytes past its end. */
        unsigned char acc = i < src[0].m.vlen ? (unsigned char)src[0].m.value[i] : 0;
        if (op == DB_BITOP_NOT)
            acc = (unsigned char)~acc;
        for (size_t j = 1; j < nkeys; j++) {
            unsigned char b = i < src[j].m.vlen ? (unsigned char)src[j].m.value[i] : 0;
            acc = op == DB_BITOP_AND  ? (unsigned char)(acc & b)
                  : op == DB_BITOP_OR ? (unsigned char)(acc | b)
                                      : (unsigned char)(acc ^ b);
        }
        out[i] = acc;
    }
    t.m.expire_ms = 0; /* the destination is a new string: no TTL */
    put_string(d, &t, (const char *)out, maxn);
    rc = db_commit(d);
    kc_free(&t);
out:
    for (size_t i = 0; i < loaded; i++)
        kc_free(&src[i]);
    free(src);
    free(out);
    return rc;
}

/* ---- BITFIELD ---- */

static uint64_t bf_read(const unsigned char *p, size_t len, uint64_t off, unsigned bits)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bits; i++) {
        uint64_t b = off + i;
        unsigned bit = (b >> 3) < len ? (p[b >> 3] >> (7 - (b & 7))) & 1u : 0;
        v = v << 1 | bit;
    }
    return v;
}

static void bf_write(unsigned char *p, uint64_t off, unsigned bits, uint64_t v)
{
    for (unsigned i = 0; i < bits; i++) {
        uint64_t b = off + i;
        unsigned char m = (unsigned char)(0x80u >> (b & 7));
        if ((v >> (bits - 1 - i)) & 1u)
            p[b >> 3] |= m;
        else
            p[b >> 3] &= (unsigned char)~m;
    }
}

/* The field's bits as a number of its type. */
static int64_t bf_value(const struct db_bfop *o, uint64_t raw)
{
    if (o->sign && o->bits < 64 && (raw >> (o->bits - 1)) & 1u)
        raw |= ~(uint64_t)0 << o->bits; /* sign-extend */
    return (int64_t)raw;
}

/* Whether value + incr leaves the field's range: 1 above, -1 below, 0 in.
 * Signed fields follow Redis 7.0's test, including where its int64
 * arithmetic wraps: SET i5 0 -9223372036854775808 counts as above the
 * range, so SAT stores 15. */
static int bf_overflow(const struct db_bfop *o, uint64_t value, int64_t incr)
{
    if (!o->sign) {
        uint64_t max = ((uint64_t)1 << o->bits) - 1;
        if (value > max || (incr > 0 && (uint64_t)incr > max - value))
            return 1;
        return incr < 0 && (uint64_t) - (incr + 1) + 1 > value ? -1 : 0;
    }
    int64_t v = (int64_t)value;
    int64_t max = o->bits == 64 ? INT64_MAX : ((int64_t)1 << (o->bits - 1)) - 1, min = -max - 1;
    int64_t maxincr = (int64_t)((uint64_t)max - value), minincr = (int64_t)((uint64_t)min - value);
    if (v > max || (o->bits != 64 && incr > maxincr) || (v >= 0 && incr > 0 && incr > maxincr))
        return 1;
    if (v < min || (o->bits != 64 && incr < minincr) || (v < 0 && incr < 0 && incr < minincr))
        return -1;
    return 0;
}

/* What a SET (value, incr 0) or INCRBY (the field's value, incr) stores:
 * the sum when the field holds it, else by the overflow rule (WRAP: the
 * sum's low bits). False for FAIL. */
static bool bf_fit(const struct db_bfop *o, uint64_t value, int64_t incr, int64_t *out)
{
    int over = bf_overflow(o, value, incr);
    uint64_t sum = value + (uint64_t)incr;
    if (over && o->overflow == DB_BF_FAIL)
        return false;
    if (over && o->overflow == DB_BF_SAT) {
        int64_t max = o->sign ? (o->bits == 64 ? INT64_MAX : ((int64_t)1 << (o->bits - 1)) - 1)
                              : (int64_t)(((uint64_t)1 << o->bits) - 1);
        *out = over > 0 ? max : o->sign ? -max - 1 : 0;
        return true;
    }
    if (o->bits < 64)
        sum &= ((uint64_t)1 << o->bits) - 1;
    *out = bf_value(o, sum);
    return true;
}

int db_bitfield(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_bfop *ops,
                size_t n, int64_t *out, bool *nil)
{
    struct db_kc kc;
    db_begin(d);
    int rc = open_string_rmw(d, &kc, dbi, key, klen);
    if (rc) {
        kc_free(&kc);
        return rc;
    }
    size_t len = kc.m.type == ENC_TYPE_NONE ? 0 : kc.m.vlen, need = 0;
    for (size_t i = 0; i < n; i++)
        if (ops[i].op != DB_BF_GET && (ops[i].offset + ops[i].bits - 1) / 8 + 1 > need)
            need = (size_t)((ops[i].offset + ops[i].bits - 1) / 8 + 1);
    /* With a write, the string first grows to the farthest field written,
     * whatever the writes then do (Redis's order). */
    size_t nn = need > len ? need : len;
    unsigned char *buf = kv_xmalloc(nn ? nn : 1);
    if (len)
        memcpy(buf, kc.m.value, len);
    memset(buf + len, 0, nn - len);
    bool grown = need > len, changed = grown;
    int changes = 0; /* writes that grew the string or changed a field */
    for (size_t i = 0; i < n; i++) {
        const struct db_bfop *o = &ops[i];
        int64_t cur = bf_value(o, bf_read(buf, nn, o->offset, o->bits)), v;
        nil[i] = false;
        if (o->op == DB_BF_GET) {
            out[i] = cur;
            continue;
        }
        bool set = o->op == DB_BF_SET;
        if (!bf_fit(o, set ? (uint64_t)o->value : (uint64_t)cur, set ? 0 : o->value, &v)) {
            nil[i] = true;
            continue;
        }
        bf_write(buf, o->offset, o->bits, (uint64_t)v);
        out[i] = o->op == DB_BF_SET ? cur : v;
        changed = true;
        changes += grown || v != cur;
    }
    if (changed) {
        put_string(d, &kc, (const char *)buf, nn);
        rc = db_commit(d);
    }
    if (rc == 0 && changes)
        rc = 1;
    free(buf);
    kc_free(&kc);
    return rc;
}

/* ---- HyperLogLog ---- */

/* Loads key for a sketch operation: KV_EWRONGTYPE for another type,
 * KV_ENOTHLL for a string that is not a sketch; a missing key is fine
 * (kc->m.type ENC_TYPE_NONE). */
static int open_hll(struct db *d, struct db_kc *kc, unsigned dbi, const char *key, size_t klen,
                    bool *dense)
{
    int rc = open_string_rmw(d, kc, dbi, key, klen);
    *dense = false;
    if (rc == 0 && kc->m.type == ENC_TYPE_STRING &&
        hll_check(kc->m.value, kc->m.vlen, dense) != HLL_OK)
        rc = KV_ENOTHLL;
    return rc;
}

int db_pfadd(struct db *d, unsigned dbi, const char *key, size_t klen, const struct db_str *elems,
             size_t n, int *changed)
{
    struct db_kc kc;
    bool dense;
    db_begin(d);
    int rc = open_hll(d, &kc, dbi, key, klen, &dense);
    if (rc)
        goto out;
    bool fresh = kc.m.type == ENC_TYPE_NONE;
    if (dense) {
        /* In place: a dense sketch needs no decoding. */
        char *v = kv_xmemdup(kc.m.value, kc.m.vlen);
        bool grew = false;
        for (size_t i = 0; i < n; i++)
            grew |= hll_dense_add(v, elems[i].p, elems[i].n);
        *changed = grew;
        if (grew) {
            hll_set_stale(v);
            put_string(d, &kc, v, kc.m.vlen);
            rc = db_commit(d);
        }
        free(v);
        goto out;
    }
    /* Sparse (a new sketch is): edited as runs of equal registers. */
    struct hll_runs *runs = fresh ? hll_runs_empty() : NULL;
    if (!fresh && hll_runs_decode(kc.m.value, kc.m.vlen, &runs) != HLL_OK) {
        rc = KV_EHLLCORRUPT;
        goto out;
    }
    bool grew = false;
    for (size_t i = 0; i < n; i++)
        grew |= hll_runs_add(runs, elems[i].p, elems[i].n);
    *changed = fresh || grew;
    if (*changed) {
        size_t vn;
        char *v = hll_runs_encode(runs, fresh ? NULL : kc.m.value, &vn);
        put_string(d, &kc, v, vn);
        rc = db_commit(d);
        free(v);
    }
    hll_runs_free(runs);
out:
    kc_free(&kc);
    return rc;
}

/* Folds key's sketch into all (each register the larger), decoding into
 * scratch; a missing key folds nothing. *dense: whether it was dense. */
static int hll_fold(struct db *d, unsigned dbi, const char *key, size_t klen, uint8_t *all,
                    uint8_t *scratch, bool *dense)
{
    struct db_kc kc;
    int rc = open_hll(d, &kc, dbi, key, klen, dense);
    if (rc == 0 && kc.m.type != ENC_TYPE_NONE) {
        if (hll_decode(kc.m.value, kc.m.vlen, scratch) != HLL_OK)
            rc = KV_EHLLCORRUPT;
        for (size_t j = 0; j < HLL_REGS && !rc; j++)
            if (scratch[j] > all[j])
                all[j] = scratch[j];
    }
    kc_free(&kc);
    return rc;
}

/* One key's count: its cached estimate, or one computed and kept in its
 * header, as Redis does, so that the next count is free. */
static int pfcount_one(struct db *d, unsigned dbi, const char *key, size_t klen, uint8_t *regs,
                       uint64_t *card)
{
    struct db_kc kc;
    bool dense;
    *card = 0;
    int rc = open_hll(d, &kc, dbi, key, klen, &dense);
    if (rc == 0 && kc.m.type != ENC_TYPE_NONE && !hll_cached(kc.m.value, kc.m.vlen, card)) {
        if (hll_decode(kc.m.value, kc.m.vlen, regs) != HLL_OK) {
            rc = KV_EHLLCORRUPT;
        } else {
            *card = hll_count(regs);
            char *v = kv_xmemdup(kc.m.value, kc.m.vlen);
            hll_set_cached(v, *card);
            put_string(d, &kc, v, kc.m.vlen);
            db_commit(d); /* only a cache: a count stands without it */
            free(v);
        }
    }
    kc_free(&kc);
    return rc;
}

int db_pfcount(struct db *d, unsigned dbi, const struct db_str *keys, size_t n, uint64_t *card)
{
    uint8_t *all = kv_xmalloc(HLL_REGS), *regs = kv_xmalloc(HLL_REGS);
    memset(all, 0, HLL_REGS);
    db_begin(d);
    int rc = 0;
    bool dense;
    if (n == 1)
        rc = pfcount_one(d, dbi, keys[0].p, keys[0].n, regs, card);
    for (size_t i = 0; n > 1 && i < n && !rc; i++)
        rc = hll_fold(d, dbi, keys[i].p, keys[i].n, all, regs, &dense);
    if (rc == 0 && n > 1)
        *card = hll_count(all);
    free(all);
    free(regs);
    return rc;
}

int db_pfmerge(struct db *d, unsigned dbi, const char *dst, size_t dstn, const struct db_str *srcs,
               size_t n)
{
    uint8_t *all = kv_xmalloc(HLL_REGS), *regs = kv_xmalloc(HLL_REGS);
    memset(all, 0, HLL_REGS);
    bool any_dense = false, dense;
    db_begin(d);
    /* The destination's own registers count too, as in Redis. */
    int rc = hll_fold(d, dbi, dst, dstn, all, regs, &any_dense);
    for (size_t i = 0; i < n && !rc; i++) {
        rc = hll_fold(d, dbi, srcs[i].p, srcs[i].n, all, regs, &dense);
        any_dense |= dense;
    }
    if (rc == 0) {
        struct db_kc t;
        if ((rc = kc_load(d, &t, dbi, dst, dstn)) == 0) {
            size_t vn;
            char *v =
                hll_encode(all, any_dense, t.m.type == ENC_TYPE_STRING ? t.m.value : NULL, &vn);
            put_string(d, &t, v, vn);
            rc = db_commit(d);
            free(v);
        }
        kc_free(&t);
    }
    free(all);
    free(regs);
    return rc;
}
