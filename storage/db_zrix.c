/*
 * db_zrix — the rank index of a large sorted set (docs/storage.md,
 * "Ranks"): ZRANK, ZRANGE by index, ZCOUNT and ZLEXCOUNT in O(log N)
 * instead of a walk over the score index.
 *
 * One member in 32 is a fence: the low 5 bits of its member's hash are
 * zero, so a set's fences do not depend on the order its members came in
 * and a rebuild, or a replica, finds the same. The rank family holds a
 * record per fence and one for the head (the set's start), each counting
 * the members from its own (the head: from the first) up to the next
 * fence, that one excluded: the counts add up to the set's size. A copy
 * of these records in memory (db_zrm.c) finds the fence before any key
 * and the members before that fence by a binary search and a sum over
 * blocks; the score index then counts on from the fence, 16 records on
 * average. Selecting the member of a rank is the same the other way.
 *
 * Maintenance: an insert adds 1 to the count of the fence before it, or,
 * when the member is a fence, splits that count with the new record; a
 * delete does the reverse. The records are written blind (nothing of the
 * rank family is read back but the copy's load): counts rewritten on
 * every write are what a memtable keeps many versions of, and reading
 * through those versions made a persisted skip list of counts, tried
 * first, slower with every write (a ZADD to an indexed set of 200,000
 * took 170 us and a ZRANK after 20,000 ZADDs 150 us).
 *
 * A command's score-index changes are applied one by one after its own
 * commit (db_zrix_after), each a record set of its own inside one storage
 * group with the command's: a crash keeps all or none. The copy follows
 * each record set once it is committed. Level 0 reads committed records,
 * so a change is counted against the index as the changes before it left
 * it, corrected for the changes still to come.
 *
 * An index exists only once a rank query on a set of at least
 * DB_ZRIX_MIN members wanted one (db_zrix_ready builds it in one walk),
 * so sets never ranked (queues among them) pay nothing on writes. A
 * command that changes a large share of a set drops the index instead of
 * updating it member by member; the next rank query builds it again under
 * a new generation (enc_meta.rank), and the compaction filter drops the
 * records of every generation but the live one. Without write-back there
 * are no atomic groups: a command drops the index of any set it changes.
 */
#include "db_int.h"

#include <stdlib.h>

#define ZRIX_BITS 5  /* one member in 2^5 is a fence */
#define ZRIX_LEVEL 1 /* the records' level byte (room for more levels) */
/* A command changing more than this many members, and more than a
 * 1/ZRIX_BULK_SHARE share of the set, drops the index: per member an
 * update costs a few reads, a rebuild a step over each record. */
#define ZRIX_BULK_MIN 128
#define ZRIX_BULK_SHARE 32

/* Whether a member is a fence: FNV-1a, then a finalizer, so that the low
 * bits of short members spread. */
static bool is_fence(unsigned bits, const char *m, size_t mn)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < mn; i++) {
        h ^= (unsigned char)m[i];
        h *= 1099511628211ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (h & ((1u << bits) - 1)) == 0;
}

/* One set's index while a command reads or updates it. */
struct zx {
    struct db *d;
    const char *pre; /* the score keys' prefix */
    size_t pn;
    struct db_buf k; /* rank prefix (pre | gen), then level | suffix */
    size_t rp;
    struct stor_batch *b;
    unsigned bits; /* ZRIX_BITS, or a test's */
    struct db_zrm *m;
};

static void zx_init(struct zx *z, struct db *d, const char *pre, size_t pn, uint32_t gen)
{
    z->d = d;
    z->pre = pre;
    z->pn = pn;
    dbb_init(&z->k);
    dbb_append(&z->k, pre, pn);
    char g[4];
    enc_put_u32(g, gen & ENC_RANK_GEN);
    dbb_append(&z->k, g, 4);
    z->rp = z->k.n;
    z->b = NULL;
    z->bits = d->zrix_bits ? d->zrix_bits : ZRIX_BITS;
    z->m = NULL;
}

static void zx_free(struct zx *z)
{
    dbb_free(&z->k);
}

/* z->k = the rank key of suffix s (sn 0: the head). */
static void zx_key(struct zx *z, const char *s, size_t sn)
{
    z->k.n = z->rp;
    char l = ZRIX_LEVEL;
    dbb_append(&z->k, &l, 1);
    dbb_append(&z->k, s, sn);
}

static void zx_put(struct zx *z, const char *s, size_t sn, uint64_t count)
{
    char v[8];
    enc_put_u64(v, count);
    zx_key(z, s, sn);
    stor_batch_put(z->b, STOR_CF_RANK, z->k.p, z->k.n, v, 8);
}

/* An iterator over the set's score records from suffix `from` ("": the
 * set's start) up to suffix `to`, excluded (NULL: the set's end). */
static struct stor_it *score_iter(struct zx *z, const char *from, size_t fn, const char *to,
                                  size_t tn)
{
    struct db_buf lo, hi;
    dbb_init(&lo);
    dbb_init(&hi);
    dbb_append(&lo, z->pre, z->pn);
    dbb_append(&lo, from, fn);
    dbb_append(&hi, z->pre, z->pn);
    if (to)
        dbb_append(&hi, to, tn);
    else
        db_prefix_successor(hi.p, hi.n);
    struct stor_it *it = stor_it_create(z->d->s, STOR_CF_SCORE, lo.p, lo.n, hi.p, hi.n);
    dbb_free(&lo);
    dbb_free(&hi);
    return it;
}

/* Score records in [from, to) (suffixes; from "" is the set's start). */
static int count0(struct zx *z, const char *from, size_t fn, const char *to, size_t tn, uint64_t *n)
{
    struct stor_it *it = score_iter(z, from, fn, to, tn);
    *n = 0;
    for (stor_it_first(it); stor_it_valid(it); stor_it_next(it))
        (*n)++;
    int rc = stor_it_status(it);
    stor_it_free(it);
    return rc;
}

/* Reads the set's fence records into a new copy. */
static int load(struct zx *z)
{
    struct db_buf hi;
    dbb_init(&hi);
    zx_key(z, "", 0);
    dbb_append(&hi, z->k.p, z->k.n);
    db_prefix_successor(hi.p, hi.n);
    struct stor_it *it = stor_it_create(z->d->s, STOR_CF_RANK, z->k.p, z->k.n, hi.p, hi.n);
    size_t lead = z->k.n; /* rank prefix | level */
    struct db_zrm *m = NULL;
    int rc = 0;
    for (stor_it_first(it); stor_it_valid(it); stor_it_next(it)) {
        size_t kn, vn;
        const char *k = stor_it_key(it, &kn);
        const char *v = stor_it_value(it, &vn);
        if (vn != 8 || (!m && kn != lead) || (m && kn < lead + 8)) {
            rc = KV_ECORRUPT; /* the head first, then fences */
            break;
        }
        if (!m)
            m = db_zrm_new(z->d, z->k.p, z->rp, enc_get_u64(v));
        else
            db_zrm_append(z->d, m, k + lead, kn - lead, enc_get_u64(v));
    }
    if (rc == 0)
        rc = stor_it_status(it);
    stor_it_free(it);
    dbb_free(&hi);
    if (rc == 0 && !m)
        rc = KV_ECORRUPT; /* no head: the meta record names an index that is not there */
    if (rc) {
        if (m)
            db_zrm_drop(z->d, m);
        return rc;
    }
    z->m = m;
    db_zrm_trim(z->d, m);
    return 0;
}

/* z->m: the set's copy, read from its records if it has none. */
static int zx_open(struct zx *z)
{
    z->m = db_zrm_get(z->d, z->k.p, z->rp);
    return z->m ? 0 : load(z);
}

/* ---- updates ---- */

struct zchange {
    bool ins;
    char *s; /* the score key's suffix: score(8) | member */
    size_t sn;
};

struct db_zrix_set {
    char *pre; /* score prefix */
    size_t pn;
    char *mk; /* meta key */
    size_t mkn;
    uint32_t gen;
    struct zchange *c;
    size_t nc, capc;
};

void db_zrix_touch(struct db *d, struct db_kc *kc, uint64_t n)
{
    if (!(kc->m.rank & ENC_RANK_ON))
        return;
    if (!stor_writeback(d->s) || (n > ZRIX_BULK_MIN && n > kc->m.size / ZRIX_BULK_SHARE)) {
        kc->m.rank &= ENC_RANK_GEN; /* dropped: the caller writes the meta record */
        return;
    }
    size_t pn = kc_prefix_len(kc);
    struct db_zrixes *x = &d->zrix;
    for (size_t i = 0; i < x->n; i++)
        if (x->e[i].pn == pn && memcmp(x->e[i].pre, kc->sk.p, pn) == 0)
            return;
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 4;
        x->e = kv_xrealloc(x->e, x->cap * sizeof *x->e);
    }
    struct db_zrix_set *e = &x->e[x->n++];
    memset(e, 0, sizeof *e);
    e->pre = kv_xmemdup(kc->sk.p, pn);
    e->pn = pn;
    e->mk = kv_xmemdup(kc->mk.p, kc->mk.n);
    e->mkn = kc->mk.n;
    e->gen = kc->m.rank;
}

void db_zrix_clear(struct db *d)
{
    struct db_zrixes *x = &d->zrix;
    for (size_t i = 0; i < x->n; i++) {
        struct db_zrix_set *e = &x->e[i];
        for (size_t j = 0; j < e->nc; j++)
            free(e->c[j].s);
        free(e->c);
        free(e->pre);
        free(e->mk);
    }
    x->n = 0;
}

void db_zrix_destroy(struct db *d)
{
    db_zrix_clear(d);
    free(d->zrix.e);
    d->zrix.e = NULL;
    d->zrix.cap = 0;
    stor_batch_destroy(&d->zrix.rb);
}

bool db_zrix_before(struct db *d)
{
    struct db_zrixes *x = &d->zrix;
    const struct stor_batch *b = &d->b;
    bool any = false;
    for (size_t si = 0; si < x->n; si++) {
        struct db_zrix_set *e = &x->e[si];
        const char *v;
        size_t vn;
        if (stor_batch_lookup(b, STOR_CF_META, e->mk, e->mkn, &v, &vn) == STOR_DELETED)
            continue; /* the set is gone, and its index with it */
        for (size_t i = 0; i < b->nops; i++) {
            const struct stor_op *op = &b->ops[i];
            if (op->cf != STOR_CF_SCORE || op->kind == STOR_OP_DELRANGE || !stor_op_newest(b, i))
                continue;
            const char *k = stor_op_key(b, op);
            if (op->klen < e->pn + 8 || memcmp(k, e->pre, e->pn) != 0)
                continue;
            char *old;
            size_t oldn;
            int rc = stor_get(d->s, STOR_CF_SCORE, k, op->klen, &old, &oldn);
            if (rc == 0)
                free(old);
            bool had = rc == 0, ins = op->kind == STOR_OP_PUT;
            if (had == ins)
                continue; /* no change, or a read error: db_zrix_after checks the total */
            if (e->nc == e->capc) {
                e->capc = e->capc ? 2 * e->capc : 4;
                e->c = kv_xrealloc(e->c, e->capc * sizeof *e->c);
            }
            e->c[e->nc++] =
                (struct zchange){ins, kv_xmemdup(k + e->pn, op->klen - e->pn), op->klen - e->pn};
            any = true;
        }
    }
    return any;
}

/* Applies one change to the records (into z->b) and, once they are
 * committed, to the copy. */
static int apply_one(struct zx *z, const struct zchange *c, const struct zchange *later,
                     size_t nlater)
{
    bool fence = is_fence(z->bits, c->s + 8, c->sn - 8);
    struct db_zrm_pos p;
    struct db_zrm_at at, nx;
    db_zrm_find(z->m, c->s, c->sn, true, &p, &at); /* the span c falls in */
    bool own = db_zrm_next(z->m, &p, &nx) && db_bytes_cmp(nx.s, nx.sn, c->s, c->sn) == 0;
    uint64_t cnt = at.count, s = 0;
    if (own != (fence && !c->ins))
        return KV_ECORRUPT; /* a fence record where none belongs, or none where one does */
    if (c->ins && fence) {
        /* The fence before keeps the members up to c; c's record takes
         * the rest and c. Level 0 holds the changes still to come, the
         * index not yet. */
        int rc = count0(z, at.s, at.sn, c->s, c->sn, &s);
        if (rc)
            return rc;
        for (size_t j = 0; j < nlater; j++)
            if (db_bytes_cmp(later[j].s, later[j].sn, at.s, at.sn) >= 0 &&
                db_bytes_cmp(later[j].s, later[j].sn, c->s, c->sn) < 0)
                s += later[j].ins ? (uint64_t)-1 : 1;
        if (s > cnt)
            return KV_ECORRUPT;
        zx_put(z, at.s, at.sn, s);
        zx_put(z, c->s, c->sn, cnt + 1 - s);
    } else if (c->ins) {
        zx_put(z, at.s, at.sn, cnt + 1);
    } else if (fence) { /* c's record goes; its count joins the one before */
        if (cnt + nx.count < 1)
            return KV_ECORRUPT;
        zx_key(z, c->s, c->sn);
        stor_batch_del(z->b, STOR_CF_RANK, z->k.p, z->k.n);
        zx_put(z, at.s, at.sn, cnt + nx.count - 1);
    } else {
        if (cnt < 1)
            return KV_ECORRUPT;
        zx_put(z, at.s, at.sn, cnt - 1);
    }
    int rc = stor_commit(z->d->s, z->b);
    if (rc)
        return rc;
    if (c->ins && fence) {
        db_zrm_set(z->m, &p, s);
        db_zrm_insert_after(z->d, z->m, &p, c->s, c->sn, cnt + 1 - s);
    } else if (c->ins) {
        db_zrm_set(z->m, &p, cnt + 1);
    } else if (fence) {
        uint64_t merged = cnt + nx.count - 1;
        db_zrm_remove_next(z->d, z->m, &p);
        db_zrm_set(z->m, &p, merged);
    } else {
        db_zrm_set(z->m, &p, cnt - 1);
    }
    return 0;
}

/* Clears the ON bit of the committed meta record of e (its index could
 * not be kept right): the next rank query builds a new generation. */
static void drop_committed(struct db *d, const struct db_zrix_set *e)
{
    char *v;
    size_t vn;
    struct enc_meta m;
    if (stor_get(d->s, STOR_CF_META, e->mk, e->mkn, &v, &vn) != 0)
        return;
    if (enc_meta_value_decode(v, vn, &m) == 0 && m.type == ENC_TYPE_ZSET &&
        (m.rank & ENC_RANK_ON)) {
        m.rank &= ENC_RANK_GEN;
        struct db_buf out;
        dbb_init(&out);
        dbb_reserve(&out, enc_meta_value_len(&m));
        out.n = enc_meta_value(out.p, &m);
        stor_batch_clear(&d->zrix.rb);
        stor_batch_put(&d->zrix.rb, STOR_CF_META, e->mk, e->mkn, out.p, out.n);
        /* Through the commit hook too, or the shm cache keeps the old meta
         * record and the next write puts the ON bit back. */
        if (stor_commit(d->s, &d->zrix.rb) == 0 && d->on_commit)
            d->on_commit(d->on_commit_arg, &d->zrix.rb, DB_COMMIT_TIDY);
        stor_batch_clear(&d->zrix.rb);
        dbb_free(&out);
    }
    free(v);
}

void db_zrix_after(struct db *d)
{
    struct db_zrixes *x = &d->zrix;
    for (size_t si = 0; si < x->n; si++) {
        struct db_zrix_set *e = &x->e[si];
        if (!e->nc)
            continue;
        struct zx z;
        zx_init(&z, d, e->pre, e->pn, e->gen);
        z.b = &x->rb;
        int rc = zx_open(&z);
        for (size_t i = 0; i < e->nc && rc == 0; i++) {
            stor_batch_clear(z.b);
            const struct zchange *c = &e->c[i];
            rc = apply_one(&z, c, c + 1, e->nc - i - 1);
        }
        stor_batch_clear(z.b);
        if (rc) {
            /* The records and the copy may no longer agree: neither is
             * used again (the next rank query builds a new index). */
            if (z.m)
                db_zrm_drop(d, z.m);
            drop_committed(d, e);
        }
        zx_free(&z);
    }
    db_zrix_clear(d);
}

/* ---- reads ---- */

enum { ZRIX_STALE = 1 }; /* the counts do not add up to the set's size */

/* Members before suffix t. */
static int zx_rank(struct zx *z, uint64_t size, const char *t, size_t tn, uint64_t *r)
{
    if (db_zrm_total(z->m) != size)
        return ZRIX_STALE;
    struct db_zrm_pos p;
    struct db_zrm_at at;
    db_zrm_find(z->m, t, tn, false, &p, &at);
    uint64_t n0;
    int rc = count0(z, at.s, at.sn, t, tn, &n0);
    if (rc == 0)
        *r = at.before + n0;
    return rc;
}

/* A score-index iterator at the member of rank r (< size). */
static int zx_select(struct zx *z, uint64_t size, uint64_t r, struct stor_it **out)
{
    struct db_zrm_pos p;
    struct db_zrm_at at;
    if (db_zrm_total(z->m) != size || !db_zrm_select(z->m, r, &p, &at))
        return ZRIX_STALE;
    struct stor_it *s = score_iter(z, at.s, at.sn, NULL, 0);
    stor_it_first(s);
    for (uint64_t i = at.before; i < r && stor_it_valid(s); i++)
        stor_it_next(s);
    int rc = stor_it_valid(s) ? 0 : stor_it_status(s) ? stor_it_status(s) : ZRIX_STALE;
    if (rc)
        stor_it_free(s);
    else
        *out = s;
    return rc;
}

/* ---- building ---- */

/* Writes generation gen of kc's index from one walk of its score index,
 * and the meta record that names it, as one record set; the copy with
 * them. */
static int build(struct db *d, struct db_kc *kc, uint32_t gen)
{
    size_t pn = kc_prefix_len(kc);
    char *pre = kv_xmemdup(kc->sk.p, pn);
    struct zx z;
    zx_init(&z, d, pre, pn, gen);
    db_begin(d);
    z.b = &d->b;
    struct db_buf open;
    dbb_init(&open); /* the last fence, still counting ("": the head) */
    struct stor_it *it = score_iter(&z, "", 0, NULL, 0);
    uint64_t n = 0, cnt = 0;
    for (stor_it_first(it); stor_it_valid(it); stor_it_next(it)) {
        size_t kn;
        const char *k = stor_it_key(it, &kn);
        if (kn < pn + 8)
            continue;
        if (is_fence(z.bits, k + pn + 8, kn - pn - 8)) {
            zx_put(&z, open.p, open.n, cnt);
            open.n = 0;
            dbb_append(&open, k + pn, kn - pn);
            cnt = 0;
        }
        cnt++;
        n++;
    }
    int rc = stor_it_status(it);
    stor_it_free(it);
    if (rc == 0)
        zx_put(&z, open.p, open.n, cnt);
    if (rc == 0 && n != kc->m.size)
        rc = KV_ECORRUPT; /* a size the records do not bear out: no index */
    if (rc == 0) {
        kc->m.rank = ENC_RANK_ON | gen;
        kc_put_meta(d, kc);
        /* The copy, from the record set itself: its rank puts, in order. */
        size_t lead = z.rp + 1;
        struct db_zrm *m = NULL;
        for (size_t i = 0; i < d->b.nops; i++) {
            const struct stor_op *op = &d->b.ops[i];
            if (op->cf != STOR_CF_RANK)
                continue;
            const char *k = stor_op_key(&d->b, op);
            uint64_t c = enc_get_u64(stor_op_value(&d->b, op));
            if (!m)
                m = db_zrm_new(d, k, z.rp, c);
            else
                db_zrm_append(d, m, k + lead, op->klen - lead, c);
        }
        /* Like a tidy: no key changed, for WATCH, tracking or replicas. */
        d->tidying = true;
        rc = db_commit(d);
        d->tidying = false;
        if (rc)
            db_zrm_drop(d, m);
        else
            db_zrm_trim(d, m);
    } else {
        stor_batch_clear(&d->b);
    }
    if (rc)
        kc->m.rank &= ENC_RANK_GEN;
    dbb_free(&open);
    zx_free(&z);
    free(pre);
    return rc;
}

bool db_zrix_large(const struct db *d, const struct db_kc *kc)
{
    return kc->m.type == ENC_TYPE_ZSET && kc->m.coding != ENC_CODING_INLINE &&
           kc->m.size >= (d->zrix_min ? d->zrix_min : DB_ZRIX_MIN);
}

bool db_zrix_ready(struct db *d, struct db_kc *kc)
{
    if (!db_zrix_large(d, kc) || !stor_writeback(d->s))
        return false;
    if (kc->m.rank & ENC_RANK_ON)
        return true;
    /* Built inside a read: only between commands' record sets, and only
     * while writes are accepted. */
    if (d->b.nops || stor_write_error(d->s, NULL, 0))
        return false;
    uint32_t gen = (kc->m.rank & ENC_RANK_GEN) + 1;
    if (gen > ENC_RANK_GEN)
        gen = 1; /* 2^31 rebuilds: generation 1's records are long gone */
    if (build(d, kc, gen) != 0)
        return false;
    d->zrix_built++;
    return true;
}

/* Runs f on kc's index; one whose counts do not add up is built again,
 * once. */
static int with_index(struct db *d, struct db_kc *kc,
                      int (*f)(struct zx *z, uint64_t size, void *arg), void *arg)
{
    for (int tries = 0; tries < 2; tries++) {
        size_t pn = kc_prefix_len(kc);
        struct zx z;
        zx_init(&z, d, kc->sk.p, pn, kc->m.rank);
        int rc = zx_open(&z);
        if (rc == 0)
            rc = f(&z, kc->m.size, arg);
        else if (rc == KV_ECORRUPT)
            rc = ZRIX_STALE;
        if (rc == ZRIX_STALE && z.m)
            db_zrm_drop(d, z.m);
        zx_free(&z);
        if (rc != ZRIX_STALE)
            return rc;
        kc->m.rank &= ENC_RANK_GEN;
        d->zrix_stale++;
        if (!db_zrix_ready(d, kc))
            break;
    }
    return DB_ZRIX_NONE;
}

struct rank_arg {
    const char *t;
    size_t tn;
    uint64_t *r;
    struct stor_it **it;
};

static int rank_f(struct zx *z, uint64_t size, void *arg)
{
    struct rank_arg *a = arg;
    return zx_rank(z, size, a->t, a->tn, a->r);
}

static int select_f(struct zx *z, uint64_t size, void *arg)
{
    struct rank_arg *a = arg;
    return zx_select(z, size, *a->r, a->it);
}

int db_zrix_rank(struct db *d, struct db_kc *kc, const char *t, size_t tn, uint64_t *r)
{
    struct rank_arg a = {t, tn, r, NULL};
    return with_index(d, kc, rank_f, &a);
}

int db_zrix_select(struct db *d, struct db_kc *kc, uint64_t r, struct stor_it **it)
{
    struct rank_arg a = {NULL, 0, &r, it};
    return with_index(d, kc, select_f, &a);
}
