/*
 * db_zrm — a sorted set's rank fences in memory (db_int.h, "Rank fences
 * in memory"), the copy of its fence records that db_zrix.c reads.
 *
 * A set's fences, in score order, sit in blocks of at most blockmax, each
 * block with the sum of its counts: finding the fence before a key is a
 * binary search over the blocks' first fences and one within a block; the
 * members before it, the head's count, the sums of the blocks before and
 * the counts before it in its block. An insert or a removal moves at most
 * a block's entries. The copies of all sets share a byte budget; the least
 * recently used goes first, and comes back by a read of its records.
 */
#include <stdlib.h>

#include "db_int.h"

struct zrm_fence {
    char *s; /* the score key's suffix: score(8) | member */
    uint32_t sn;
    uint64_t count;
};

struct zrm_block {
    struct zrm_fence *f;
    uint32_t n, cap; /* cap grows to blockmax */
    uint64_t sum;
};

struct db_zrm {
    uint64_t h; /* of key: the cache's look-ups compare it first */
    char *key;  /* rank prefix: score prefix | gen */
    size_t keyn;
    uint64_t head;
    struct zrm_block *b;
    size_t nb, capb;
    size_t bytes;
    uint64_t used; /* the cache's tick when last used */
    unsigned blockmax;
};

/* A fence's suffix copy, with malloc's share (its entry is its block's). */
static size_t fence_bytes(size_t sn)
{
    return sn + 16;
}

/* ---- the cache ---- */

static void zrm_free(struct db_zrm *m)
{
    for (size_t i = 0; i < m->nb; i++) {
        for (uint32_t j = 0; j < m->b[i].n; j++)
            free(m->b[i].f[j].s);
        free(m->b[i].f);
    }
    free(m->b);
    free(m->key);
    free(m);
}

static void cache_remove(struct db_zrms *c, size_t i)
{
    c->bytes -= c->m[i]->bytes;
    zrm_free(c->m[i]);
    c->m[i] = c->m[--c->n];
}

static uint64_t key_hash(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h;
}

struct db_zrm *db_zrm_get(struct db *d, const char *key, size_t keyn)
{
    struct db_zrms *c = &d->zrms;
    uint64_t h = key_hash(key, keyn);
    for (size_t i = 0; i < c->n; i++) {
        struct db_zrm *m = c->m[i];
        if (m->h == h && m->keyn == keyn && memcmp(m->key, key, keyn) == 0) {
            m->used = ++c->tick;
            return m;
        }
    }
    return NULL;
}

struct db_zrm *db_zrm_new(struct db *d, const char *key, size_t keyn, uint64_t head)
{
    struct db_zrms *c = &d->zrms;
    struct db_zrm *old = db_zrm_get(d, key, keyn);
    if (old)
        db_zrm_drop(d, old);
    struct db_zrm *m = kv_xmalloc(sizeof *m);
    memset(m, 0, sizeof *m);
    m->h = key_hash(key, keyn);
    m->key = kv_xmemdup(key, keyn);
    m->keyn = keyn;
    m->head = head;
    m->blockmax = d->zrm_block ? d->zrm_block : DB_ZRM_BLOCK;
    m->bytes = sizeof *m + keyn;
    m->used = ++c->tick;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->m = kv_xrealloc(c->m, c->cap * sizeof *c->m);
    }
    c->m[c->n++] = m;
    c->bytes += m->bytes;
    return m;
}

void db_zrm_drop(struct db *d, struct db_zrm *m)
{
    struct db_zrms *c = &d->zrms;
    for (size_t i = 0; i < c->n; i++)
        if (c->m[i] == m) {
            cache_remove(c, i);
            return;
        }
}

void db_zrm_trim(struct db *d, const struct db_zrm *keep)
{
    struct db_zrms *c = &d->zrms;
    size_t max = d->zrm_max_bytes ? d->zrm_max_bytes : DB_ZRM_BYTES;
    while ((c->bytes > max || c->n > DB_ZRM_SETS) && c->n > 1) {
        size_t lru = SIZE_MAX;
        for (size_t i = 0; i < c->n; i++)
            if (c->m[i] != keep && (lru == SIZE_MAX || c->m[i]->used < c->m[lru]->used))
                lru = i;
        if (lru == SIZE_MAX)
            return;
        cache_remove(c, lru);
        c->evicted++;
    }
}

void db_zrm_reset(struct db *d)
{
    struct db_zrms *c = &d->zrms;
    while (c->n)
        cache_remove(c, c->n - 1);
    free(c->m);
    c->m = NULL;
    c->cap = 0;
}

/* ---- blocks ---- */

static void grow(struct db *d, struct db_zrm *m, long delta)
{
    m->bytes = (size_t)((long)m->bytes + delta);
    d->zrms.bytes = (size_t)((long)d->zrms.bytes + delta);
}

/* A new empty block at index i. */
static void block_insert(struct db *d, struct db_zrm *m, size_t i)
{
    if (m->nb == m->capb) {
        m->capb = m->capb ? 2 * m->capb : 4;
        m->b = kv_xrealloc(m->b, m->capb * sizeof *m->b);
    }
    memmove(&m->b[i + 1], &m->b[i], (m->nb - i) * sizeof *m->b);
    uint32_t cap = m->blockmax < 8 ? m->blockmax : 8;
    m->b[i] = (struct zrm_block){kv_xmalloc(cap * sizeof(struct zrm_fence)), 0, cap, 0};
    m->nb++;
    grow(d, m, (long)(sizeof *m->b + cap * sizeof(struct zrm_fence)));
}

/* Room in block i for need fences (at most blockmax). */
static void block_reserve(struct db *d, struct db_zrm *m, size_t i, uint32_t need)
{
    struct zrm_block *b = &m->b[i];
    if (need <= b->cap)
        return;
    uint32_t cap = b->cap;
    while (cap < need)
        cap *= 2;
    if (cap > m->blockmax)
        cap = m->blockmax;
    b->f = kv_xrealloc(b->f, cap * sizeof *b->f);
    grow(d, m, (long)((cap - b->cap) * sizeof *b->f));
    b->cap = cap;
}

static void block_remove(struct db *d, struct db_zrm *m, size_t i)
{
    long freed = (long)(sizeof *m->b + m->b[i].cap * sizeof(struct zrm_fence));
    free(m->b[i].f);
    memmove(&m->b[i], &m->b[i + 1], (m->nb - i - 1) * sizeof *m->b);
    m->nb--;
    grow(d, m, -freed);
}

void db_zrm_append(struct db *d, struct db_zrm *m, const char *s, size_t sn, uint64_t count)
{
    /* Blocks filled to three quarters: room for inserts before a split. */
    if (!m->nb || m->b[m->nb - 1].n >= m->blockmax - m->blockmax / 4)
        block_insert(d, m, m->nb);
    block_reserve(d, m, m->nb - 1, m->b[m->nb - 1].n + 1);
    struct zrm_block *b = &m->b[m->nb - 1];
    b->f[b->n++] = (struct zrm_fence){kv_xmemdup(s, sn), (uint32_t)sn, count};
    b->sum += count;
    grow(d, m, (long)fence_bytes(sn));
}

uint64_t db_zrm_total(const struct db_zrm *m)
{
    uint64_t t = m->head;
    for (size_t i = 0; i < m->nb; i++)
        t += m->b[i].sum;
    return t;
}

static int fcmp(const struct zrm_fence *f, const char *t, size_t tn)
{
    return db_bytes_cmp(f->s, f->sn, t, tn);
}

/* Whether fence f is before t (strict: f < t; else f <= t). */
static bool before_t(const struct zrm_fence *f, const char *t, size_t tn, bool strict)
{
    int c = fcmp(f, t, tn);
    return strict ? c < 0 : c <= 0;
}

static void pos_out(const struct db_zrm *m, const struct db_zrm_pos *p, struct db_zrm_at *at)
{
    if (p->b < 0) {
        at->s = "";
        at->sn = 0;
        at->count = m->head;
    } else {
        const struct zrm_fence *f = &m->b[p->b].f[p->e];
        at->s = f->s;
        at->sn = f->sn;
        at->count = f->count;
    }
}

void db_zrm_find(const struct db_zrm *m, const char *t, size_t tn, bool strict,
                 struct db_zrm_pos *p, struct db_zrm_at *at)
{
    /* The last block whose first fence is before t. */
    size_t lo = 0, hi = m->nb;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (before_t(&m->b[mid].f[0], t, tn, strict))
            lo = mid + 1;
        else
            hi = mid;
    }
    at->before = 0;
    if (lo == 0) {
        *p = (struct db_zrm_pos){-1, 0};
        pos_out(m, p, at);
        return;
    }
    size_t bi = lo - 1;
    const struct zrm_block *b = &m->b[bi];
    uint32_t l = 1, h = b->n; /* f[0] is before t */
    while (l < h) {
        uint32_t mid = (l + h) / 2;
        if (before_t(&b->f[mid], t, tn, strict))
            l = mid + 1;
        else
            h = mid;
    }
    uint64_t base = m->head;
    for (size_t i = 0; i < bi; i++)
        base += m->b[i].sum;
    for (uint32_t j = 0; j + 1 < l; j++)
        base += b->f[j].count;
    *p = (struct db_zrm_pos){(long)bi, l - 1};
    pos_out(m, p, at);
    at->before = base;
}

bool db_zrm_select(const struct db_zrm *m, uint64_t r, struct db_zrm_pos *p, struct db_zrm_at *at)
{
    uint64_t base = m->head;
    if (r < base) {
        *p = (struct db_zrm_pos){-1, 0};
        pos_out(m, p, at);
        at->before = 0;
        return true;
    }
    for (size_t i = 0; i < m->nb; i++) {
        const struct zrm_block *b = &m->b[i];
        if (base + b->sum <= r) {
            base += b->sum;
            continue;
        }
        for (uint32_t j = 0; j < b->n; j++) {
            if (base + b->f[j].count > r) {
                *p = (struct db_zrm_pos){(long)i, j};
                pos_out(m, p, at);
                at->before = base;
                return true;
            }
            base += b->f[j].count;
        }
        return false; /* a block's sum that its counts do not add up to */
    }
    return false; /* r is past the total */
}

bool db_zrm_next(const struct db_zrm *m, const struct db_zrm_pos *p, struct db_zrm_at *at)
{
    struct db_zrm_pos n = *p;
    if (n.b < 0) {
        n.b = 0;
        n.e = 0;
    } else if (++n.e >= m->b[n.b].n) {
        n.b++;
        n.e = 0;
    }
    if ((size_t)n.b >= m->nb)
        return false;
    pos_out(m, &n, at);
    return true;
}

void db_zrm_set(struct db_zrm *m, const struct db_zrm_pos *p, uint64_t count)
{
    if (p->b < 0) {
        m->head = count;
        return;
    }
    struct zrm_block *b = &m->b[p->b];
    b->sum = b->sum - b->f[p->e].count + count;
    b->f[p->e].count = count;
}

void db_zrm_insert_after(struct db *d, struct db_zrm *m, const struct db_zrm_pos *p, const char *s,
                         size_t sn, uint64_t count)
{
    size_t bi;
    uint32_t at;
    if (p->b < 0) { /* first of all */
        if (!m->nb)
            block_insert(d, m, 0);
        bi = 0;
        at = 0;
    } else {
        bi = (size_t)p->b;
        at = p->e + 1;
    }
    struct zrm_block *b = &m->b[bi];
    if (b->n == m->blockmax) { /* split in halves */
        block_insert(d, m, bi + 1);
        b = &m->b[bi];
        struct zrm_block *nb = &m->b[bi + 1];
        uint32_t keep = b->n / 2;
        block_reserve(d, m, bi + 1, b->n - keep);
        nb->n = b->n - keep;
        memcpy(nb->f, b->f + keep, nb->n * sizeof *nb->f);
        nb->sum = 0;
        for (uint32_t j = 0; j < nb->n; j++)
            nb->sum += nb->f[j].count;
        b->n = keep;
        b->sum -= nb->sum;
        if (at > keep) {
            at -= keep;
            b = nb;
        }
    }
    block_reserve(d, m, (size_t)(b - m->b), b->n + 1);
    memmove(&b->f[at + 1], &b->f[at], (b->n - at) * sizeof *b->f);
    b->f[at] = (struct zrm_fence){kv_xmemdup(s, sn), (uint32_t)sn, count};
    b->n++;
    b->sum += count;
    grow(d, m, (long)fence_bytes(sn));
}

void db_zrm_remove_next(struct db *d, struct db_zrm *m, const struct db_zrm_pos *p)
{
    size_t bi = p->b < 0 ? 0 : (size_t)p->b;
    uint32_t at = p->b < 0 ? 0 : p->e + 1;
    if (bi < m->nb && at >= m->b[bi].n) {
        bi++;
        at = 0;
    }
    if (bi >= m->nb)
        return;
    struct zrm_block *b = &m->b[bi];
    grow(d, m, -(long)fence_bytes(b->f[at].sn));
    b->sum -= b->f[at].count;
    free(b->f[at].s);
    memmove(&b->f[at], &b->f[at + 1], (b->n - at - 1) * sizeof *b->f);
    if (--b->n == 0)
        block_remove(d, m, bi);
}

size_t db_zrm_fences(const struct db_zrm *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->nb; i++)
        n += m->b[i].n;
    return n;
}
