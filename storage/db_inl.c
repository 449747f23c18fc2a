/*
 * db_inl — small collections kept whole in their meta record (INLINE
 * coding, Redis's listpack and intset encodings; docs/storage.md, "Small
 * collections inline").
 *
 * While a command has an inline hash, set or sorted set open (kc_read,
 * kc_fresh), its sub records live here, decoded from the meta record, and
 * every read and write of them that the type code makes through the usual
 * paths (db_rget and friends, db_sub_put/db_sub_del, kc_iter) lands on
 * this copy instead of the record set or the engine. The type code
 * therefore has one form to know. kc_put_meta writes the copy back into
 * the meta record; a write that takes the collection past its thresholds
 * turns it into ordinary records at once, under the same version, and it
 * never turns back (as Redis).
 */
#include "db_int.h"

#include <stdio.h>
#include <stdlib.h>

/* One sub record: the field's bytes, then the value's. */
struct db_inl_rec {
    char *f;
    uint32_t fn, vn;
};

static inline const char *rec_v(const struct db_inl_rec *r)
{
    return r->f + r->fn;
}

struct db_inl {
    struct db *d;
    struct db_kc *kc;
    char *pre; /* the sub prefix of the collection's version */
    size_t pn;
    /* Until a write or a walk needs them decoded (decode), the records
     * are read where they are: the meta record's payload, in kc->raw. */
    const char *raw;
    size_t rawn;
    char *own;        /* raw, when a splice made it ours */
    unsigned spliced; /* writes spliced into raw: the first is, later ones decode */
    bool decoded;
    struct db_inl_rec *r; /* decoded: in field order (db_bytes_cmp) */
    size_t n, cap;
    size_t bytes; /* of the payload, encoded */
    bool dirty;   /* changed since its meta record was last put */
    bool dead;    /* deleted by the command: reads and writes pass by */
    /* The field the last write deleted, until the next put: a sorted set's
     * new score is a delete and a put of the member, which Redis counts as
     * no addition. */
    char *gone;
    size_t gonen;
};

/* ---- the copy ---- */

static size_t rec_bytes(size_t fn, size_t vn)
{
    return enc_varint_len((uint32_t)fn) + fn + enc_varint_len((uint32_t)vn) + vn;
}

/* Writes one record as the payload lays it out: rec_bytes(fn, vn) bytes. */
static size_t rec_put(char *out, const char *f, size_t fn, const char *v, size_t vn)
{
    size_t o = enc_varint_put(out, (uint32_t)fn);
    memcpy(out + o, f, fn);
    o += fn;
    o += enc_varint_put(out + o, (uint32_t)vn);
    if (vn)
        memcpy(out + o, v, vn);
    return o + vn;
}

static void set_prefix(struct db_inl *e)
{
    size_t pl = kc_prefix_len(e->kc);
    free(e->pre);
    e->pre = kv_xmemdup(e->kc->sk.p, pl);
    e->pn = pl;
}

static void clear_recs(struct db_inl *e)
{
    if (e->decoded)
        for (size_t i = 0; i < e->n; i++)
            free(e->r[i].f);
    e->n = 0;
    e->bytes = 0;
    e->decoded = true; /* nothing left in the payload to decode */
}

/* The index of field f, or where it would go (*found false). */
static size_t seek(const struct db_inl *e, const char *f, size_t fn, bool *found)
{
    size_t lo = 0, hi = e->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = db_bytes_cmp(e->r[mid].f, e->r[mid].fn, f, fn);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static void rec_set(struct db_inl *e, size_t at, bool found, const char *f, size_t fn,
                    const char *v, size_t vn)
{
    char *p = kv_xmalloc(fn + vn + 1);
    memcpy(p, f, fn);
    if (vn)
        memcpy(p + fn, v, vn);
    if (found) {
        e->bytes -= rec_bytes(e->r[at].fn, e->r[at].vn);
        free(e->r[at].f);
    } else {
        if (e->n == e->cap) {
            e->cap = e->cap ? 2 * e->cap : 8;
            e->r = kv_xrealloc(e->r, e->cap * sizeof *e->r);
        }
        memmove(e->r + at + 1, e->r + at, (e->n - at) * sizeof *e->r);
        e->n++;
    }
    e->r[at] = (struct db_inl_rec){p, (uint32_t)fn, (uint32_t)vn};
    e->bytes += rec_bytes(fn, vn);
}

static void rec_del(struct db_inl *e, size_t at)
{
    e->bytes -= rec_bytes(e->r[at].fn, e->r[at].vn);
    free(e->r[at].f);
    memmove(e->r + at, e->r + at + 1, (e->n - at - 1) * sizeof *e->r);
    e->n--;
}

/* ---- open and close ---- */

static struct db_inl *attach(struct db *d, struct db_kc *kc)
{
    struct db_inl *e = kv_xcalloc(1, sizeof *e);
    e->d = d;
    e->kc = kc;
    e->decoded = true; /* empty; db_inl_open points it at a payload */
    set_prefix(e);
    struct db_inls *l = &d->inls;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 4;
        l->e = kv_xrealloc(l->e, l->cap * sizeof *l->e);
    }
    l->e[l->n++] = e;
    kc->inl = e;
    return e;
}

int db_inl_open(struct db *d, struct db_kc *kc)
{
    /* Checked whole now, decoded only when needed: a point read (HGET,
     * SISMEMBER) finds its field in the payload itself. */
    const char *p = kc->m.inl, *f, *v, *prev = NULL;
    size_t n = kc->m.inln, off = 0, fn, vn, prevn = 0, count = 0;
    int rc;
    while ((rc = enc_inline_next(p, n, &off, &f, &fn, &v, &vn)) == 1) {
        if (prev && db_bytes_cmp(prev, prevn, f, fn) >= 0)
            return KV_ECORRUPT; /* out of order, or twice */
        prev = f;
        prevn = fn;
        count++;
    }
    if (rc == 0 && count != kc->m.size)
        rc = KV_ECORRUPT;
    if (rc)
        return rc;
    struct db_inl *e = attach(d, kc);
    e->raw = p;
    e->rawn = n;
    e->decoded = false;
    e->n = count; /* the size; the records themselves come with decode */
    e->bytes = n;
    return 0;
}

/* One write of a record to the payload itself, into a new buffer: the
 * common command (HSET of one field, SADD of one member, a push) costs one
 * allocation and a copy, where decoding cost one allocation per record.
 * v NULL: a delete. Returns whether the field was there. */
static bool splice(struct db_inl *e, const char *f, size_t fn, const char *v, size_t vn)
{
    size_t off = 0, at = e->rawn, end = e->rawn, rfn, rvn;
    const char *rf, *rv;
    bool found = false;
    for (;;) {
        size_t start = off;
        if (enc_inline_next(e->raw, e->rawn, &off, &rf, &rfn, &rv, &rvn) != 1)
            break; /* the end (db_inl_open checked the payload) */
        int c = db_bytes_cmp(rf, rfn, f, fn);
        if (c >= 0) {
            at = start;
            found = c == 0;
            end = found ? off : start;
            break;
        }
    }
    if (!v && !found)
        return false;
    size_t add = v ? rec_bytes(fn, vn) : 0, n = at + add + (e->rawn - end);
    char *p = kv_xmalloc(n + 1);
    memcpy(p, e->raw, at);
    if (v)
        rec_put(p + at, f, fn, v, vn);
    memcpy(p + at + add, e->raw + end, e->rawn - end);
    free(e->own);
    e->own = p;
    e->raw = p;
    e->rawn = n;
    e->bytes = n;
    if (v && !found)
        e->n++;
    else if (!v)
        e->n--;
    e->spliced++;
    return found;
}

/* The records, from the payload, into the array. */
static void decode(struct db_inl *e)
{
    if (e->decoded)
        return;
    e->decoded = true;
    size_t off = 0, fn, vn;
    const char *f, *v;
    e->n = 0;
    e->bytes = 0;
    while (enc_inline_next(e->raw, e->rawn, &off, &f, &fn, &v, &vn) == 1)
        rec_set(e, e->n, false, f, fn, v, vn); /* db_inl_open checked them */
}

bool db_inl_fits_new(const struct db *d, int type)
{
    if (type == ENC_TYPE_HASH)
        return d->o.hash_coding == ENC_CODING_COUNTED && d->o.hash_max_entries > 0;
    if (type == ENC_TYPE_SET)
        return d->o.set_coding == ENC_CODING_COUNTED && d->o.set_max_intset > 0;
    if (type == ENC_TYPE_ZSET)
        return d->o.zset_max_entries > 0;
    if (type == ENC_TYPE_LIST)
        return d->o.list_max_size != 0;
    return false;
}

void db_inl_fresh(struct db *d, struct db_kc *kc)
{
    struct db_inl *e = kc->inl;
    if (!db_inl_fits_new(d, kc->m.type)) {
        if (kc->m.coding == ENC_CODING_INLINE)
            kc->m.coding = ENC_CODING_COUNTED;
        if (e)
            db_inl_close(kc);
        return;
    }
    kc->m.coding = ENC_CODING_INLINE;
    if (!e) {
        attach(d, kc);
        return;
    }
    clear_recs(e);
    set_prefix(e);
    free(e->gone);
    e->gone = NULL;
    e->dead = false;
    e->dirty = false; /* as for a new one: its writes, and the caller's meta, follow */
}

void db_inl_close(struct db_kc *kc)
{
    struct db_inl *e = kc->inl;
    struct db_inls *l = &e->d->inls;
    for (size_t i = 0; i < l->n; i++)
        if (l->e[i] == e) { /* in order: owner() prefers the latest opened */
            memmove(l->e + i, l->e + i + 1, (l->n - i - 1) * sizeof *l->e);
            l->n--;
            break;
        }
    clear_recs(e);
    free(e->r);
    free(e->pre);
    free(e->gone);
    free(e->own);
    free(e);
    kc->inl = NULL;
}

void db_inl_dead(struct db_kc *kc)
{
    kc->inl->dead = true;
    kc->inl->dirty = false;
}

/* ---- reads and writes through the usual paths ---- */

/* The open, live collection whose records k (of the sub or score family)
 * would be, or NULL. The latest opened first: a key opened twice in one
 * command has its freshest copy there. */
static struct db_inl *owner(struct db *d, const char *k, size_t kn)
{
    for (size_t i = d->inls.n; i-- > 0;) {
        struct db_inl *e = d->inls.e[i];
        if (!e->dead && kn >= e->pn && memcmp(k, e->pre, e->pn) == 0)
            return e;
    }
    return NULL;
}

int db_inl_get(struct db *d, int cf, const char *k, size_t kn, const char **v, size_t *vn)
{
    struct db_inl *e = owner(d, k, kn);
    if (!e)
        return STOR_ABSENT;
    const char *f = k + e->pn;
    size_t fn = kn - e->pn;
    bool score = cf == STOR_CF_SCORE; /* score(8) | member: there with that score */
    if (score && fn < 8)
        return STOR_DELETED;
    const char *m = score ? f + 8 : f, *mv;
    size_t mn = score ? fn - 8 : fn, mvn;
    if (e->decoded) {
        bool found;
        size_t at = seek(e, m, mn, &found);
        if (!found)
            return STOR_DELETED;
        mv = rec_v(&e->r[at]);
        mvn = e->r[at].vn;
    } else if (enc_inline_find(e->raw, e->rawn, m, mn, &mv, &mvn) != 1) {
        return STOR_DELETED; /* db_inl_open checked the payload */
    }
    if (score) {
        if (mvn != 8 || memcmp(mv, f, 8) != 0)
            return STOR_DELETED;
        mv = "";
        mvn = 0;
    }
    *v = mv;
    *vn = mvn;
    return STOR_PUT;
}

/* Whether e may hold one more record like (f, v) after it took it: Redis's
 * conversion rules (t_hash.c, t_set.c, t_zset.c), by the thresholds. */
static bool fits(const struct db_inl *e, const char *f, size_t fn, size_t vn)
{
    const struct db_opts *o = &e->d->o;
    int64_t ll;
    switch (e->kc->m.type) {
    case ENC_TYPE_HASH:
        return e->n <= o->hash_max_entries && fn <= o->hash_max_value && vn <= o->hash_max_value;
    case ENC_TYPE_SET:
        return e->n <= o->set_max_intset && kv_str2ll(f, fn, &ll) == 0;
    case ENC_TYPE_LIST:
        /* What Redis lets one quicklist node hold: a count, under 8 KiB in
         * all; or 4 KiB << (-size - 1) of elements; past -5, one element. */
        if (o->list_max_size > 0)
            return e->n <= (uint64_t)o->list_max_size && e->bytes <= 8192;
        if (o->list_max_size == 0)
            return false;
        if (o->list_max_size < -5)
            return e->n <= 1;
        return e->bytes <= (size_t)4096 << (-o->list_max_size - 1);
    default:
        return e->n <= o->zset_max_entries && fn <= o->zset_max_value;
    }
}

/* Turns e's collection into ordinary records under its version, in the
 * record set: the sub records, and a sorted set's score records. */
static void convert(struct db_inl *e)
{
    decode(e);
    struct db *d = e->d;
    struct db_kc *kc = e->kc;
    bool zset = kc->m.type == ENC_TYPE_ZSET;
    struct db_buf k;
    dbb_init(&k);
    for (size_t i = 0; i < e->n; i++) {
        const struct db_inl_rec *r = &e->r[i];
        k.n = 0;
        dbb_append(&k, e->pre, e->pn);
        dbb_append(&k, r->f, r->fn);
        stor_batch_put(&d->b, STOR_CF_SUB, k.p, k.n, rec_v(r), r->vn);
        if (zset && r->vn == 8) {
            k.n = e->pn;
            dbb_append(&k, rec_v(r), 8);
            dbb_append(&k, r->f, r->fn);
            stor_batch_put(&d->b, STOR_CF_SCORE, k.p, k.n, "", 0);
        }
    }
    dbb_free(&k);
    kc->m.coding = ENC_CODING_COUNTED;
    d->inl_converted++;
    /* Another context open on the key (none today) must not write its
     * stale copy back over the records. */
    for (size_t i = 0; i < d->inls.n; i++) {
        struct db_inl *o = d->inls.e[i];
        if (o != e && o->pn == e->pn && memcmp(o->pre, e->pre, e->pn) == 0)
            db_inl_dead(o->kc);
    }
    db_inl_close(kc);
    kc_put_meta(d, kc);
}

bool db_inl_put(struct db *d, int cf, const char *k, size_t kn, const char *v, size_t vn)
{
    struct db_inl *e = owner(d, k, kn);
    if (!e)
        return false;
    if (cf == STOR_CF_SCORE)
        return true; /* a sorted set's score order is its sub records' */
    const char *f = k + e->pn;
    size_t fn = kn - e->pn;
    bool found;
    if (fn > UINT32_MAX || vn > UINT32_MAX) { /* past what a payload's lengths hold */
        decode(e);
        convert(e);
        return false; /* the caller puts it among the records */
    }
    bool back = e->gone && db_bytes_cmp(e->gone, e->gonen, f, fn) == 0;
    free(e->gone);
    e->gone = NULL;
    if (!e->decoded && !e->spliced) {
        found = splice(e, f, fn, v, vn);
    } else {
        decode(e);
        size_t at = seek(e, f, fn, &found);
        rec_set(e, at, found, f, fn, v, vn);
    }
    found = found || back;
    e->dirty = true;
    /* Redis checks a hash after every write of a field, a list after
     * every write of an element, a set or sorted set only when one is
     * added (a new score moves a member in place). */
    int t = e->kc->m.type;
    if ((!found || t == ENC_TYPE_HASH || t == ENC_TYPE_LIST) && !fits(e, f, fn, vn))
        convert(e);
    return true;
}

bool db_inl_del(struct db *d, int cf, const char *k, size_t kn)
{
    struct db_inl *e = owner(d, k, kn);
    if (!e)
        return false;
    if (cf == STOR_CF_SCORE)
        return true;
    bool found;
    if (!e->decoded && !e->spliced) {
        found = splice(e, k + e->pn, kn - e->pn, NULL, 0);
    } else {
        decode(e);
        size_t at = seek(e, k + e->pn, kn - e->pn, &found);
        if (found)
            rec_del(e, at);
    }
    if (found) {
        e->dirty = true;
        free(e->gone);
        e->gone = kv_xmemdup(k + e->pn, kn - e->pn);
        e->gonen = kn - e->pn;
    }
    return true;
}

bool db_inl_has(const struct db_kc *kc, const char *f, size_t fn)
{
    const struct db_inl *e = kc->inl;
    const char *v;
    size_t vn;
    bool found;
    if (!e->decoded)
        return enc_inline_find(e->raw, e->rawn, f, fn, &v, &vn) == 1;
    seek(e, f, fn, &found);
    return found;
}

/* ---- the meta record ---- */

size_t db_inl_payload_len(const struct db_kc *kc)
{
    return kc->inl->bytes;
}

void db_inl_payload(struct db_kc *kc, char *out)
{
    struct db_inl *e = kc->inl;
    if (!e->decoded) {
        if (e->rawn)
            memcpy(out, e->raw, e->rawn);
        return;
    }
    size_t o = 0;
    for (size_t i = 0; i < e->n; i++)
        o += rec_put(out + o, e->r[i].f, e->r[i].fn, rec_v(&e->r[i]), e->r[i].vn);
}

void db_inl_written(struct db_kc *kc)
{
    kc->inl->dirty = false;
}

void db_inl_flush(struct db *d)
{
    for (size_t i = 0; i < d->inls.n; i++) {
        struct db_inl *e = d->inls.e[i];
        if (e->dirty && !e->dead)
            kc_put_meta(d, e->kc);
    }
}

void db_inl_sync(struct db *d, const char *mk, size_t mkn)
{
    for (size_t i = 0; i < d->inls.n; i++) {
        struct db_inl *e = d->inls.e[i];
        struct db_kc *kc = e->kc;
        if (e->dirty && !e->dead && kc->mk.n == mkn && memcmp(kc->mk.p, mk, mkn) == 0)
            kc_put_meta(d, kc);
    }
}

/* ---- walks ---- */

/* A record as a walk sees it: pointers into the array or the payload. */
struct view {
    const char *f, *v;
    size_t fn, vn;
};

static int by_score(const void *a, const void *b)
{
    const struct view *x = a, *y = b;
    int c = memcmp(x->v, y->v, 8);
    return c ? c : db_bytes_cmp(x->f, x->fn, y->f, y->fn);
}

struct stor_it *db_inl_iter(struct db_kc *kc, int cf)
{
    return db_inl_iter_range(kc, cf, NULL, 0, NULL, 0);
}

struct stor_it *db_inl_iter_range(struct db_kc *kc, int cf, const char *lo, size_t lon,
                                  const char *hi, size_t hin)
{
    struct db_inl *e = kc->inl;
    /* The records in field order, from wherever they are now: HGETALL of
     * an unwritten hash decodes nothing. */
    struct view *o = kv_xmalloc((e->n ? e->n : 1) * sizeof *o);
    size_t m = 0, bytes = 0, off = 0;
    if (e->decoded) {
        for (size_t i = 0; i < e->n; i++)
            o[m++] = (struct view){e->r[i].f, rec_v(&e->r[i]), e->r[i].fn, e->r[i].vn};
    } else {
        struct view w;
        while (m < e->n && enc_inline_next(e->raw, e->rawn, &off, &w.f, &w.fn, &w.v, &w.vn) == 1)
            o[m++] = w;
    }
    if (lo) {
        size_t z = 0;
        for (size_t i = 0; i < m; i++)
            if (db_bytes_cmp(o[i].f, o[i].fn, lo, lon) >= 0 &&
                db_bytes_cmp(o[i].f, o[i].fn, hi, hin) < 0)
                o[z++] = o[i];
        m = z;
    }
    if (cf == STOR_CF_SCORE) {
        /* score(8) | member order: the records sorted by that key. */
        size_t z = 0;
        for (size_t i = 0; i < m; i++)
            if (o[i].vn == 8)
                o[z++] = o[i];
        m = z;
        qsort(o, m, sizeof *o, by_score);
    }
    for (size_t i = 0; i < m; i++)
        bytes += e->pn + o[i].fn + o[i].vn + 8;
    struct stor_snap *sn = stor_snap_new(m ? m : 1, bytes ? bytes : 1);
    struct db_buf k;
    dbb_init(&k);
    for (size_t i = 0; i < m; i++) {
        k.n = 0;
        dbb_append(&k, e->pre, e->pn);
        if (cf == STOR_CF_SCORE) {
            dbb_append(&k, o[i].v, 8);
            dbb_append(&k, o[i].f, o[i].fn);
            stor_snap_add(sn, k.p, k.n, "", 0);
        } else {
            dbb_append(&k, o[i].f, o[i].fn);
            stor_snap_add(sn, k.p, k.n, o[i].v, o[i].vn);
        }
    }
    dbb_free(&k);
    free(o);
    struct stor_it *it = stor_it_create_snap(sn);
    stor_snap_unref(sn);
    return it;
}
