/*
 * db_pick — random members of a large collection without reading it all
 * (SRANDMEMBER, SPOP, HRANDFIELD, ZRANDMEMBER; see db_int.h, "Pick indexes").
 *
 * A collection's members lie in one ordered range of the sub family, and
 * nothing there says which member has which rank. A pick index cuts that
 * range into buckets at pivot members (every DB_PICK_B-th when built) and
 * keeps for each bucket a bound no smaller than its member count (ub). One
 * pick draws a bucket i and a position r < DB_PICK_BMAX, both uniformly:
 * r >= ub[i] is rejected at once; otherwise the iterator seeks the bucket's
 * start and steps r members, and reaching the bucket's end first rejects
 * too (and makes ub[i] exact). Every member is then drawn with the same
 * probability, 1 / (k * BMAX), provided no bucket holds more than BMAX
 * members, which the bounds ensure: each commit that writes a sub record
 * of an indexed collection raises its bucket's bound (db_pick_note), and a
 * bucket whose bound passes BMAX is counted, and split if it must be,
 * before the next pick. Deletes only lower counts, which rejection absorbs;
 * a run of rejections builds the index again.
 */
#include <stdlib.h>

#include "db_int.h"

#define PICK_REJECTS 64 /* in a row: the index is built again */

/* The member the iterator stands on. */
static const char *member_at(const struct db_kc *kc, struct stor_it *it, size_t *mn)
{
    size_t kn;
    const char *k = stor_it_key(it, &kn);
    return kc_suffix(kc, k, kn, mn);
}

static size_t limit_of(const struct db_picks *p)
{
    return p->limit ? p->limit : DB_PICK_BYTES;
}

static void ix_free(struct db_pick_ix *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->k; i++)
        free(ix->piv[i]);
    free(ix->piv);
    free(ix->pivn);
    free(ix->ub);
    free(ix->key);
    free(ix);
}

static size_t ix_bytes(const struct db_pick_ix *ix)
{
    return sizeof *ix + ix->klen + ix->cap * (sizeof *ix->piv + sizeof *ix->pivn + sizeof *ix->ub) +
           ix->pivbytes;
}

void db_pick_reset(struct db_picks *p)
{
    for (unsigned i = 0; i < p->n; i++)
        ix_free(p->ix[i]);
    p->n = 0;
    p->bytes = 0;
}

/* Drops index j from the table. */
static void drop(struct db_picks *p, unsigned j)
{
    p->bytes -= ix_bytes(p->ix[j]);
    ix_free(p->ix[j]);
    p->ix[j] = p->ix[--p->n];
}

static struct db_pick_ix *find(const struct db_picks *p, unsigned dbi, const char *key, size_t klen,
                               uint64_t version, unsigned *at)
{
    for (unsigned j = 0; j < p->n; j++) {
        const struct db_pick_ix *ix = p->ix[j];
        if (ix->version == version && ix->dbi == dbi && ix->klen == klen &&
            memcmp(ix->key, key, klen) == 0) {
            if (at)
                *at = j;
            return p->ix[j];
        }
    }
    return NULL;
}

/* Makes room for bucket entries up to need. */
static void reserve(struct db_pick_ix *ix, size_t need)
{
    if (need <= ix->cap)
        return;
    size_t cap = ix->cap ? ix->cap : 64;
    while (cap < need)
        cap *= 2;
    ix->piv = kv_xrealloc(ix->piv, cap * sizeof *ix->piv);
    ix->pivn = kv_xrealloc(ix->pivn, cap * sizeof *ix->pivn);
    ix->ub = kv_xrealloc(ix->ub, cap * sizeof *ix->ub);
    ix->cap = cap;
}

/* Inserts a bucket starting at member m before bucket at. */
static void insert_bucket(struct db_pick_ix *ix, size_t at, const char *m, size_t mn, uint32_t ub)
{
    reserve(ix, ix->k + 1);
    memmove(ix->piv + at + 1, ix->piv + at, (ix->k - at) * sizeof *ix->piv);
    memmove(ix->pivn + at + 1, ix->pivn + at, (ix->k - at) * sizeof *ix->pivn);
    memmove(ix->ub + at + 1, ix->ub + at, (ix->k - at) * sizeof *ix->ub);
    ix->piv[at] = kv_xmemdup(m, mn);
    ix->pivn[at] = (uint32_t)mn;
    ix->ub[at] = ub;
    ix->pivbytes += mn;
    ix->k++;
}

/* The bucket member m falls in: the last whose pivot is <= m (bucket 0
 * has none: it starts where the collection does). */
static size_t bucket_of(const struct db_pick_ix *ix, const char *m, size_t mn)
{
    size_t lo = 1, hi = ix->k; /* the answer is lo - 1 once lo == hi */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (db_bytes_cmp(ix->piv[mid], ix->pivn[mid], m, mn) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

/* Puts it at bucket i's start: 0 or a storage error. */
static int seek_bucket(struct db_kc *kc, struct stor_it *it, const struct db_pick_ix *ix, size_t i)
{
    if (i == 0) {
        stor_it_first(it);
    } else {
        size_t kn;
        const char *k = kc_sub(kc, ix->piv[i], ix->pivn[i], &kn);
        stor_it_seek(it, k, kn);
    }
    return stor_it_status(it);
}

/* Whether it stands on a member of bucket i. */
static bool in_bucket(struct db_kc *kc, struct stor_it *it, const struct db_pick_ix *ix, size_t i)
{
    if (!stor_it_valid(it))
        return false;
    if (i + 1 == ix->k)
        return true;
    size_t mn;
    const char *m = member_at(kc, it, &mn);
    return db_bytes_cmp(m, mn, ix->piv[i + 1], ix->pivn[i + 1]) < 0;
}

/* Counts bucket i and, past DB_PICK_BMAX members, cuts it into buckets of
 * DB_PICK_B: 0 or a storage error. */
static int settle_bucket(struct db_kc *kc, struct stor_it *it, struct db_pick_ix *ix, size_t i)
{
    int rc = seek_bucket(kc, it, ix, i);
    uint32_t c = 0;
    for (; !rc && c <= DB_PICK_BMAX && in_bucket(kc, it, ix, i); stor_it_next(it))
        c++;
    if ((rc = rc ? rc : stor_it_status(it)))
        return rc;
    if (c <= DB_PICK_BMAX) {
        ix->ub[i] = c;
        return 0;
    }
    /* A second pass cuts it every DB_PICK_B members. The new buckets go in
     * after the one being filled, and the old end moves up with them. */
    if ((rc = seek_bucket(kc, it, ix, i)))
        return rc;
    size_t cur = i, end = i + 1;
    uint32_t n = 0;
    for (; stor_it_valid(it); stor_it_next(it)) {
        size_t mn;
        const char *m = member_at(kc, it, &mn);
        if (end < ix->k && db_bytes_cmp(m, mn, ix->piv[end], ix->pivn[end]) >= 0)
            break;
        if (n == DB_PICK_B) {
            ix->ub[cur] = n;
            insert_bucket(ix, end, m, mn, 0);
            cur = end++;
            n = 0;
        }
        n++;
    }
    ix->ub[cur] = n;
    return stor_it_status(it);
}

/* Builds the index of an open collection: one pass over its members.
 * 0, a storage error, or DB_PICK_READ_ALL when the pivots alone would
 * pass limit (with the default, members of a megabyte or more). */
static int build(struct db_kc *kc, struct stor_it *it, struct db_pick_ix *ix, size_t limit)
{
    uint32_t c = 0;
    stor_it_first(it);
    for (; stor_it_valid(it); stor_it_next(it)) {
        if (c == DB_PICK_B) {
            size_t mn;
            const char *m = member_at(kc, it, &mn);
            if (ix->pivbytes + mn > limit)
                return DB_PICK_READ_ALL;
            ix->ub[ix->k - 1] = c;
            insert_bucket(ix, ix->k, m, mn, 0);
            c = 0;
        }
        c++;
    }
    ix->ub[ix->k - 1] = c;
    return stor_it_status(it);
}

/* A fresh index of kc's collection, or NULL with *rc set: a storage
 * error, or DB_PICK_READ_ALL (smaller than DB_PICK_MIN after all, or too
 * large an index). */
static struct db_pick_ix *make(struct db_kc *kc, struct stor_it *it, size_t limit, int *rc)
{
    struct db_pick_ix *ix = kv_xmalloc(sizeof *ix);
    memset(ix, 0, sizeof *ix);
    ix->dbi = kc->dbi;
    ix->key = kv_xmemdup(kc->key, kc->klen);
    ix->klen = kc->klen;
    ix->version = kc->m.version;
    reserve(ix, 1);
    ix->piv[0] = NULL;
    ix->pivn[0] = 0;
    ix->k = 1;
    *rc = build(kc, it, ix, limit);
    uint64_t n = 0;
    for (size_t i = 0; i < ix->k; i++)
        n += ix->ub[i];
    if (*rc == 0 && n < DB_PICK_MIN)
        *rc = DB_PICK_READ_ALL;
    if (*rc) {
        ix_free(ix);
        return NULL;
    }
    return ix;
}

/* Keeps ix in the table, dropping the least recently used indexes while
 * there are too many or they take too much memory; one that alone takes
 * too much (splits grew it) goes itself. */
static void keep(struct db_picks *p, struct db_pick_ix *ix)
{
    ix->used = ++p->tick;
    size_t b = ix_bytes(ix);
    if (b > limit_of(p)) {
        ix_free(ix);
        return;
    }
    while (p->n && (p->n == DB_PICK_MAX || p->bytes + b > limit_of(p))) {
        unsigned old = 0;
        for (unsigned j = 1; j < p->n; j++)
            if (p->ix[j]->used < p->ix[old]->used)
                old = j;
        drop(p, old);
    }
    p->ix[p->n++] = ix;
    p->bytes += b;
}

/* A small set of the members picked so far (distinct picks): slot values
 * are pick numbers + 1, pick j being out's items from base + j * stride. */
struct seen {
    uint32_t *slot;
    size_t mask, base, stride;
};

/* Whether m is in seen already; if not, it is noted as pick number j,
 * which the caller pushes next. */
static bool seen_add(struct seen *s, const struct db_vec *out, const char *m, size_t mn, uint64_t j)
{
    for (size_t i = stor_key_hash(STOR_CF_SUB, m, mn) & s->mask;; i = (i + 1) & s->mask) {
        if (!s->slot[i]) {
            s->slot[i] = (uint32_t)j + 1;
            return false;
        }
        size_t e = s->base + (size_t)(s->slot[i] - 1) * s->stride;
        if (db_vec_len(out, e) == mn && memcmp(db_vec_ptr(out, e), m, mn) == 0)
            return true;
    }
}

/* Pushes the member it stands on, as how asks. */
static int push_pick(struct db_kc *kc, struct stor_it *it, int how, struct db_vec *out)
{
    size_t mn, vn;
    const char *m = member_at(kc, it, &mn);
    const char *v = stor_it_value(it, &vn);
    double score = 1.0;
    if (how == DB_PICK_SCORES) {
        if (vn != 8)
            return KV_ECORRUPT;
        score = enc_score_get(v);
    }
    db_vec_push(out, m, mn, score);
    if (how == DB_PICK_PAIRS)
        db_vec_push(out, v, vn, 1.0);
    return 0;
}

int db_pick(struct db *d, struct db_kc *kc, int64_t count, int how, struct db_vec *out)
{
    /* An inline collection is in memory whole already, and its writes
     * never reach the record set that keeps an index's bounds. */
    if (kc->m.coding != ENC_CODING_COUNTED || kc->m.size < DB_PICK_MIN || count == 0)
        return DB_PICK_READ_ALL;
    uint64_t n = kc->m.size;
    uint64_t want = count > 0            ? (uint64_t)count
                    : count == INT64_MIN ? UINT64_MAX
                                         : (uint64_t)-count;
    /* A pick costs a seek and up to BMAX steps: past n / BMAX picks, one
     * pass over every member is cheaper. */
    if (want > n / DB_PICK_BMAX)
        return DB_PICK_READ_ALL;

    struct db_picks *p = &d->picks;
    unsigned at;
    struct db_pick_ix *ix = find(p, kc->dbi, kc->key, kc->klen, kc->m.version, &at);
    if (ix) {
        p->bytes -= ix_bytes(ix); /* out of the table while it changes */
        p->ix[at] = p->ix[--p->n];
    }
    struct stor_it *it = kc_iter(d, kc, STOR_CF_SUB);
    int rc = 0, builds = 0;
    if (!ix) {
        ix = make(kc, it, limit_of(p), &rc);
        builds++;
        if (!ix)
            goto out;
    }
    size_t stride = how == DB_PICK_PAIRS ? 2 : 1, first = out->n, first_used = out->used;
    struct seen s = {NULL, 0, first, stride};
    if (count > 0) {
        size_t cap = 16;
        while (cap < 2 * want)
            cap *= 2;
        s.slot = kv_xmalloc(cap * sizeof *s.slot);
        memset(s.slot, 0, cap * sizeof *s.slot);
        s.mask = cap - 1;
    }
    unsigned rejects = 0;
    uint64_t dups = 0;
    for (uint64_t got = 0; got < want && !rc;) {
        if (ix->over) {
            for (size_t i = 0; i < ix->k && !rc; i++)
                if (ix->ub[i] > DB_PICK_BMAX)
                    rc = settle_bucket(kc, it, ix, i);
            ix->over = false;
            continue;
        }
        if (rejects == PICK_REJECTS) {
            /* Most buckets have emptied since the build: build again, once
             * per call; after that, read everything. */
            ix_free(ix);
            ix = NULL;
            if (builds++) {
                rc = DB_PICK_READ_ALL;
                break;
            }
            if (!(ix = make(kc, it, limit_of(p), &rc)))
                break;
            rejects = 0;
            continue;
        }
        size_t i = (size_t)(db_rand(d) % ix->k);
        uint32_t r = (uint32_t)(db_rand(d) % DB_PICK_BMAX);
        if (r >= ix->ub[i]) {
            rejects++;
            continue;
        }
        if ((rc = seek_bucket(kc, it, ix, i)))
            break;
        uint32_t step = 0;
        while (step < r && in_bucket(kc, it, ix, i)) {
            stor_it_next(it);
            step++;
        }
        if ((rc = stor_it_status(it)))
            break;
        if (!in_bucket(kc, it, ix, i)) {
            ix->ub[i] = step; /* the bucket ended after step members */
            rejects++;
            continue;
        }
        rejects = 0;
        if (s.slot) {
            size_t mn;
            const char *m = member_at(kc, it, &mn);
            if (seen_add(&s, out, m, mn, got)) {
                /* Picked already: draw again. With want <= n / BMAX a
                 * repeat comes once in BMAX picks at most; many more mean
                 * the size in the meta record is wrong, and reading
                 * everything gives the right answer. */
                if (++dups > 4 * want + 64)
                    rc = DB_PICK_READ_ALL;
                continue;
            }
        }
        if ((rc = push_pick(kc, it, how, out)))
            break;
        got++;
    }
    free(s.slot);
    if (rc) {
        /* Nothing half done: the caller reads everything, or fails. */
        out->n = first;
        out->used = first_used;
    }
    if (ix && rc < 0) {
        ix_free(ix); /* a storage error may have cut a split short */
        ix = NULL;
    }
    if (ix)
        keep(p, ix);
out:
    stor_it_free(it);
    return rc;
}

void db_pick_note(struct db *d, const struct stor_batch *b)
{
    struct db_picks *p = &d->picks;
    for (size_t i = 0; i < b->nops && p->n; i++) {
        const struct stor_op *op = &b->ops[i];
        if (op->cf != STOR_CF_SUB || op->kind != STOR_OP_PUT)
            continue;
        struct enc_sub sk;
        if (enc_sub_decode(stor_op_key(b, op), op->klen, &sk) != 0)
            continue;
        struct db_pick_ix *ix = find(p, sk.db, sk.key, sk.klen, sk.version, NULL);
        if (!ix)
            continue;
        /* A write of a member already there raises the bound too: it stays
         * a bound, and the next settle makes it exact. */
        size_t j = bucket_of(ix, sk.field, sk.flen);
        if (++ix->ub[j] > DB_PICK_BMAX)
            ix->over = true;
    }
}
