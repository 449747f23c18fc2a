/*
 * wb_ov — the write-back overlay: a skiplist with a hash index beside it.
 * See wb_ov.h.
 */
#include "wb_ov.h"

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kv_mem.h"
#include "kv_radix.h"

int wb_ov_cmp(int acf, const char *a, size_t an, int bcf, const char *b, size_t bn)
{
    if (acf != bcf)
        return acf < bcf ? -1 : 1;
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static int node_cmp(const struct wb_ov_node *n, int cf, const char *k, size_t kn)
{
    return wb_ov_cmp(n->cf, n->key, n->klen, cf, k, kn);
}

/* Backward link of level l (level 0 is n->prev). */
static struct wb_ov_node **prevp(struct wb_ov_node *n, int l)
{
    return l == 0 ? &n->prev : &n->next[n->level + l - 1];
}

static size_t node_links(int level)
{
    return (size_t)(2 * level - 1) * sizeof(struct wb_ov_node *);
}

/* A value of up to OV_VROOM_MAX bytes is kept in the node, after the key,
 * in room sized by the node's first value: no allocation of its own, and
 * it lies on the lines the prefetch loads (wb_ov_prefetch), where a copy on
 * the heap would be one more cache miss per write. A longer value, or one
 * that outgrows the room, goes on the heap. */
#define OV_VROOM_MAX 64

static struct wb_ov_node *node_new(int level, int cf, const char *k, size_t kn, size_t vroom)
{
    size_t links = node_links(level);
    struct wb_ov_node *n = kv_xmalloc(sizeof *n + links + kn + vroom);
    memset(n, 0, sizeof *n + links);
    n->level = (uint8_t)level;
    n->cf = (uint8_t)cf;
    n->vroom = (uint8_t)vroom;
    n->key = (char *)n->next + links;
    if (kn)
        memcpy(n->key, k, kn);
    n->klen = kn;
    return n;
}

static char *node_room(const struct wb_ov_node *n)
{
    return n->key + n->klen;
}

static bool val_on_heap(const struct wb_ov_node *n)
{
    return n->val && n->val != node_room(n);
}

static void node_free(struct wb_ov_node *n)
{
    if (val_on_heap(n))
        free(n->val);
    free(n);
}

/* Replaces n's value with v[0, vn) (NULL: a tombstone). */
static void node_set_val(struct wb_ov_node *n, const char *v, size_t vn)
{
    if (val_on_heap(n))
        free(n->val);
    if (!v) {
        n->val = NULL;
        vn = 0;
    } else if (vn <= n->vroom) {
        n->val = node_room(n);
        if (vn)
            memcpy(n->val, v, vn);
    } else {
        n->val = kv_xmemdup(v, vn);
    }
    n->vlen = vn;
}

static size_t node_bytes(const struct wb_ov_node *n)
{
    return sizeof *n + node_links(n->level) + n->klen + n->vroom + (val_on_heap(n) ? n->vlen : 0);
}

/* ---- the hash index ---- */

#define OV_TAB_MIN 1024

static uint64_t mix(uint64_t h)
{
    h ^= h >> 31;
    h *= 0x7fb5d329728ea185ull;
    h ^= h >> 27;
    h *= 0x81dadef4bc2dd44dull;
    return h ^ (h >> 33);
}

uint64_t wb_ov_key_hash(int cf, const char *k, size_t kn)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)kn << 8) ^ (uint64_t)(cf & 0xff);
    size_t i = 0;
    for (; i + 8 <= kn; i += 8) {
        uint64_t w;
        memcpy(&w, k + i, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    if (i < kn)
        memcpy(&w, k + i, kn - i);
    return mix(h ^ w);
}

static size_t tab_slot(const struct wb_ov *o, uint64_t h, int cf, const char *k, size_t kn)
{
    size_t i = h & o->tabmask;
    for (;; i = (i + 1) & o->tabmask) {
        const struct wb_ov_slot *t = &o->tab[i];
        if (!t->n ||
            (t->hash == h && t->n->cf == cf && t->n->klen == kn && memcmp(t->n->key, k, kn) == 0))
            return i;
    }
}

static struct wb_ov_slot *tab_new(size_t cap)
{
    struct wb_ov_slot *t = calloc(cap, sizeof *t);
    if (!t)
        kv_oom(cap * sizeof *t);
    return t;
}

static void tab_resize(struct wb_ov *o, size_t cap)
{
    struct wb_ov_slot *old = o->tab;
    size_t oldcap = o->tabmask + 1;
    o->tab = tab_new(cap);
    o->tabmask = cap - 1;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].n)
            continue;
        size_t j = old[i].hash & o->tabmask;
        while (o->tab[j].n)
            j = (j + 1) & o->tabmask;
        o->tab[j] = old[i];
    }
    free(old);
}

/* Removes node x from the index and shifts back the run after it, so
 * probes never need tombstones. */
static void tab_delete(struct wb_ov *o, const struct wb_ov_node *x)
{
    size_t i = x->hash & o->tabmask, j;
    while (o->tab[i].n != x)
        i = (i + 1) & o->tabmask;
    j = i;
    for (;;) {
        o->tab[i].n = NULL;
        for (;;) {
            j = (j + 1) & o->tabmask;
            if (!o->tab[j].n)
                return;
            size_t home = o->tab[j].hash & o->tabmask;
            /* Move j back to i unless its home lies cyclically in (i, j]. */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        o->tab[i] = o->tab[j];
        i = j;
    }
}

void wb_ov_tide(struct wb_ov *o, uint64_t now_ms)
{
    size_t cap = o->tabmask + 1;
    if (cap <= o->tabkeep || o->count * 8 >= cap) {
        o->tide_ms = now_ms;
        o->low_peak = 0;
        return;
    }
    if (!o->tide_ms)
        o->tide_ms = now_ms; /* the first call: the clock starts now */
    if (o->count > o->low_peak)
        o->low_peak = o->count;
    if (now_ms - o->tide_ms < WB_OV_SHRINK_MS)
        return;
    size_t want = o->tabkeep; /* low_peak < cap / 8: want <= cap / 2 */
    while (want < 4 * o->low_peak)
        want *= 2;
    tab_resize(o, want);
    o->tide_ms = now_ms;
    o->low_peak = 0;
}

/* ---- the list ---- */

void wb_ov_init(struct wb_ov *o)
{
    memset(o, 0, sizeof *o);
    o->head = node_new(WB_OV_MAXLEVEL, -1, NULL, 0, 0);
    o->level = 1;
    o->rng = 0x2545f4914f6cdd1dull;
    o->tab = tab_new(OV_TAB_MIN);
    o->tabmask = OV_TAB_MIN - 1;
    o->tabkeep = 65536;
    o->grp = calloc(WB_OV_GROUPS, sizeof *o->grp);
    if (!o->grp)
        kv_oom(WB_OV_GROUPS * sizeof *o->grp);
}

void wb_ov_destroy(struct wb_ov *o)
{
    struct wb_ov_node *n = o->head;
    while (n) {
        struct wb_ov_node *next = n->next[0];
        node_free(n);
        n = next;
    }
    for (int cf = 0; cf < WB_OV_CFS; cf++)
        for (int b = 0; b < WB_OV_BANDS; b++) {
            for (size_t i = 0; i < o->pend[cf][b].n; i++)
                node_free(o->pend[cf][b].v[i]);
            free(o->pend[cf][b].v);
        }
    free(o->grp);
    for (size_t i = 0; i < o->nranges; i++) {
        free(o->ranges[i].lo);
        free(o->ranges[i].hi);
    }
    free(o->ranges);
    free(o->tab);
    memset(o, 0, sizeof *o);
}

/* For each level, the last node before (cf, k). */
static struct wb_ov_node *find_preds(const struct wb_ov *o, int cf, const char *k, size_t kn,
                                     struct wb_ov_node **preds)
{
    struct wb_ov_node *x = o->head;
    for (int l = o->level - 1; l >= 0; l--) {
        while (x->next[l] && node_cmp(x->next[l], cf, k, kn) < 0)
            x = x->next[l];
        if (preds)
            preds[l] = x;
    }
    return x;
}

static int random_level(struct wb_ov *o)
{
    int l = 1;
    while (l < WB_OV_MAXLEVEL) {
        o->rng ^= o->rng << 13;
        o->rng ^= o->rng >> 7;
        o->rng ^= o->rng << 17;
        if ((o->rng & 3) != 0) /* p = 1/4 */
            break;
        l++;
    }
    return l;
}

/* ---- nodes waiting for the order ---- */

/* The counter of (cf, k)'s group in ov.grp. */
static size_t grp_index(int cf, const char *k, size_t kn)
{
    _Static_assert(WB_OV_GROUP_BYTES == 3 && WB_OV_GROUPS == 1 << 14,
                   "grp_index packs 3 bytes, 14 bits");
    const unsigned char *b = (const unsigned char *)k;
    uint32_t v = (uint32_t)cf << 24;
    if (kn >= 3) /* byte by byte: a memcpy of a variable length is a call */
        v |= (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
    else
        for (size_t i = 0; i < kn; i++)
            v |= (uint32_t)b[i] << (16 - 8 * i);
    return (v * 0x9e3779b1u) >> (32 - 14);
}

static unsigned band_of(const char *k, size_t kn)
{
    return kn >= 2 ? (unsigned char)k[1] % WB_OV_BANDS : 0;
}

static struct wb_ov_pend *pend_of(struct wb_ov *o, const struct wb_ov_node *x)
{
    return &o->pend[x->cf][band_of(x->key, x->klen)];
}

static void pend_add(struct wb_ov *o, struct wb_ov_node *x)
{
    struct wb_ov_pend *p = pend_of(o, x);
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 256;
        p->v = kv_xrealloc(p->v, p->cap * sizeof *p->v);
    }
    x->pidx = (uint32_t)p->n;
    p->v[p->n++] = x;
    o->npend[x->cf]++;
    o->grp[grp_index(x->cf, x->key, x->klen)]++;
}

static void pend_remove(struct wb_ov *o, struct wb_ov_node *x)
{
    struct wb_ov_pend *p = pend_of(o, x);
    struct wb_ov_node *last = p->v[--p->n];
    p->v[x->pidx] = last;
    last->pidx = x->pidx;
    o->npend[x->cf]--;
    o->grp[grp_index(x->cf, x->key, x->klen)]--;
}

/* The waiting nodes' sort. A comparison sort of the node pointers (glibc's
 * qsort, each comparison a call and a memcmp of two keys on lines all over
 * the heap) held the loop for the first walk after a burst of writes.
 * Instead each node's string cf || key gives 24 bytes at a time as three
 * big-endian words, zero-padded, which order as wb_ov_cmp does wherever they
 * differ: a radix sort by the first word (on the bytes that differ at all:
 * for meta keys the slot and the key's first bytes), long runs of equal
 * words by the next, runs alike in all 24 bytes by the next 24 (one hash's
 * fields share their first 20 or more), and short runs, or strings that
 * end alike ("a", "a\0"), by comparing. */
struct pend_item {
    uint64_t d[3];
    struct wb_ov_node *n;
};

#define PEND_RADIX_MIN 256 /* shorter runs are sorted by comparing */
#define PEND_INSERT_MAX 24 /* and shorter still by insertion */
#define PEND_OFF_MAX 240   /* bytes deep: past that, by comparing */

/* The words of bytes [off, off + 24) of its node's cf || key. */
static void pend_item_fill(struct pend_item *it, size_t off)
{
    const struct wb_ov_node *x = it->n;
    unsigned char b[24] = {0};
    if (off == 0) {
        b[0] = x->cf;
        memcpy(b + 1, x->key, x->klen < 23 ? x->klen : 23);
    } else if (off - 1 < x->klen) {
        size_t have = x->klen - (off - 1);
        memcpy(b, x->key + off - 1, have < 24 ? have : 24);
    }
    for (int j = 0; j < 3; j++) {
        uint64_t w;
        memcpy(&w, b + 8 * j, 8);
        it->d[j] = __builtin_bswap64(w);
    }
}

/* Fills the words of a[0..n) from bytes off.. of their nodes' strings,
 * loading each node's header 16 items ahead and its bytes 8 ahead: in
 * pending or sorted order the nodes lie all over the heap, and each would
 * be a cache miss. */
static void pend_fill(struct pend_item *a, size_t n, size_t off)
{
    for (size_t i = 0; i < n; i++) {
        if (i + 16 < n)
            __builtin_prefetch(a[i + 16].n);
        if (i + 8 < n)
            __builtin_prefetch(a[i + 8].n->key + (off ? off - 1 : 0));
        pend_item_fill(&a[i], off);
    }
}

/* Orders items alike before the words they hold. */
static int pend_item_cmp(const void *pa, const void *pb)
{
    const struct pend_item *a = pa, *b = pb;
    for (int j = 0; j < 3; j++)
        if (a->d[j] != b->d[j])
            return a->d[j] < b->d[j] ? -1 : 1;
    return wb_ov_cmp(a->n->cf, a->n->key, a->n->klen, b->n->cf, b->n->key, b->n->klen);
}

static void pend_sort(struct pend_item *a, struct pend_item *b, size_t n, int w, size_t off);

/* Sorts a run of items alike in every word they hold. */
static void pend_sort_run(struct pend_item *a, struct pend_item *b, size_t n, int w, size_t off)
{
    if (n <= PEND_INSERT_MAX) {
        for (size_t i = 1; i < n; i++) {
            struct pend_item x = a[i];
            size_t j = i;
            for (; j > 0 && pend_item_cmp(&a[j - 1], &x) > 0; j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    if (n > PEND_RADIX_MIN && w < 2) {
        pend_sort(a, b, n, w + 1, off);
        return;
    }
    bool longer = false; /* does any string go on past these 24 bytes? */
    for (size_t i = 0; i < n && !longer; i++)
        longer = 1 + a[i].n->klen > off + 24;
    if (n <= PEND_RADIX_MIN || !longer || off + 24 > PEND_OFF_MAX) {
        qsort(a, n, sizeof *a, pend_item_cmp);
        return;
    }
    pend_fill(a, n, off + 24);
    pend_sort(a, b, n, 0, off + 24);
}

/* Sorts a[0..n), whose items are alike before their word d[w] (words
 * holding bytes off.. of their strings), by d[w], then each run of equal
 * d[w]. b is scratch of n. */
static void pend_sort(struct pend_item *a, struct pend_item *b, size_t n, int w, size_t off)
{
    kv_radix64(a, b, n, sizeof *a, offsetof(struct pend_item, d) + (size_t)w * sizeof a->d[0]);
    for (size_t lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo + 1; hi < n && a[hi].d[w] == a[lo].d[w]; hi++)
            ;
        if (hi - lo > 1)
            pend_sort_run(a + lo, b + lo, hi - lo, w, off);
    }
}

/* Links the waiting nodes of cf in the bands from band b0 on, nb of them
 * (wrapping), into the skiplist: sorted first, so each search starts on
 * every level from the previous node's position there, whenever that is
 * further on than where the level above left off. */
static void order_bands(struct wb_ov *o, int cf, unsigned b0, unsigned nb)
{
    size_t n = 0;
    for (unsigned j = 0; j < nb; j++)
        n += o->pend[cf][(b0 + j) % WB_OV_BANDS].n;
    if (!n)
        return;
    struct pend_item *it = kv_xmalloc(2 * n * sizeof *it);
    size_t w = 0;
    for (unsigned j = 0; j < nb; j++) {
        struct wb_ov_pend *pd = &o->pend[cf][(b0 + j) % WB_OV_BANDS];
        for (size_t i = 0; i < pd->n; i++)
            it[w++].n = pd->v[i];
        pd->n = 0;
    }
    o->npend[cf] -= n;
    pend_fill(it, n, 0);
    pend_sort(it, it + n, n, 0, 0);
    struct wb_ov_node *preds[WB_OV_MAXLEVEL];
    for (int l = 0; l < WB_OV_MAXLEVEL; l++)
        preds[l] = o->head;
    for (size_t i = 0; i < n; i++) {
        struct wb_ov_node *x = it[i].n;
        if (i + 8 < n) { /* in key order the nodes lie all over the heap */
            __builtin_prefetch(it[i + 8].n, 1);
            __builtin_prefetch((char *)it[i + 8].n + 64, 1); /* next[] */
        }
        if (x->level > o->level)
            o->level = x->level;
        struct wb_ov_node *p = o->head;
        for (int l = o->level - 1; l >= 0; l--) {
            if (preds[l] != o->head &&
                (p == o->head || wb_ov_cmp(preds[l]->cf, preds[l]->key, preds[l]->klen, p->cf,
                                           p->key, p->klen) > 0))
                p = preds[l];
            while (p->next[l] && node_cmp(p->next[l], x->cf, x->key, x->klen) < 0)
                p = p->next[l];
            preds[l] = p;
        }
        for (int l = 0; l < x->level; l++) {
            struct wb_ov_node *nx = preds[l]->next[l];
            x->next[l] = nx;
            preds[l]->next[l] = x;
            *prevp(x, l) = preds[l] == o->head ? NULL : preds[l];
            if (nx)
                *prevp(nx, l) = x;
            preds[l] = x;
        }
        x->linked = true;
        o->grp[grp_index(x->cf, x->key, x->klen)]--;
    }
    free(it);
}

void wb_ov_order(struct wb_ov *o, int cf, const char *lo, size_t lon, const char *hi, size_t hin)
{
    if (!o->npend[cf])
        return;
    /* Every key in [lo, hi) has the group lo and hi share: a key shorter
     * than the group's bytes, or one whose differ, falls outside. */
    if (lo && hi && lon >= WB_OV_GROUP_BYTES && hin >= WB_OV_GROUP_BYTES &&
        memcmp(lo, hi, WB_OV_GROUP_BYTES) == 0 && !o->grp[grp_index(cf, lo, lon)])
        return;
    /* Where lo and hi share their first byte, every key in [lo, hi) has
     * that byte and a second in [lo[1], hi[1]] (a shorter key sorts below
     * lo): the bands of those values. */
    if (lo && hi && lon >= 2 && hin >= 2 && lo[0] == hi[0]) {
        unsigned a = (unsigned char)lo[1], z = (unsigned char)hi[1];
        if (z >= a && z - a < WB_OV_BANDS) {
            order_bands(o, cf, a % WB_OV_BANDS, z - a + 1);
            return;
        }
    }
    order_bands(o, cf, 0, WB_OV_BANDS);
}

void wb_ov_set(struct wb_ov *o, uint64_t h, int cf, const char *k, size_t kn, const char *v,
               size_t vn, uint64_t seq)
{
    size_t slot = tab_slot(o, h, cf, k, kn);
    struct wb_ov_node *x = o->tab[slot].n;
    if (!x) {
        size_t vroom = v && vn <= OV_VROOM_MAX ? (vn + 7) & ~(size_t)7 : 0;
        assert(cf >= 0 && cf < WB_OV_CFS);
        x = node_new(random_level(o), cf, k, kn, vroom);
        x->hash = h;
        pend_add(o, x);
        o->tab[slot] = (struct wb_ov_slot){h, x};
        o->count++;
        if (o->count * 2 > o->tabmask + 1) {
            tab_resize(o, (o->tabmask + 1) * 2);
            o->tide_ms = 0; /* just half full: wb_ov_tide's clock starts again */
        }
    } else {
        o->bytes -= node_bytes(x);
    }
    node_set_val(x, v, vn);
    x->seq = seq;
    o->bytes += node_bytes(x);
}

/* Takes x out of the list (or the waiting nodes) and the index, and frees
 * it. */
static void unlink_node(struct wb_ov *o, struct wb_ov_node *x)
{
    if (!x->linked) {
        pend_remove(o, x);
    } else {
        for (int l = 0; l < x->level; l++) {
            struct wb_ov_node *p = *prevp(x, l), *nx = x->next[l];
            (p ? p : o->head)->next[l] = nx;
            if (nx)
                *prevp(nx, l) = p;
        }
        while (o->level > 1 && !o->head->next[o->level - 1])
            o->level--;
    }
    tab_delete(o, x);
    o->bytes -= node_bytes(x);
    o->count--;
    node_free(x);
}

void wb_ov_forget(struct wb_ov *o, uint64_t h, int cf, const char *k, size_t kn, uint64_t seq)
{
    struct wb_ov_node *x = o->tab[tab_slot(o, h, cf, k, kn)].n;
    if (x && x->seq == seq)
        unlink_node(o, x);
}

void wb_ov_set_range(struct wb_ov *o, int cf, const char *lo, size_t lon, const char *hi,
                     size_t hin, uint64_t seq)
{
    /* Nodes inside the range are superseded by it: one seek, then a walk
     * (a node leaves through its own back links). */
    wb_ov_order(o, cf, lo, lon, hi, hin);
    struct wb_ov_node *x = find_preds(o, cf, lo, lon, NULL)->next[0];
    while (x && node_cmp(x, cf, hi, hin) < 0) {
        struct wb_ov_node *next = x->next[0];
        unlink_node(o, x);
        x = next;
    }
    if (o->nranges == o->capranges) {
        o->capranges = o->capranges ? o->capranges * 2 : 4;
        o->ranges = kv_xrealloc(o->ranges, o->capranges * sizeof *o->ranges);
    }
    struct wb_ov_range *r = &o->ranges[o->nranges++];
    r->cf = (uint8_t)cf;
    r->seq = seq;
    r->lo = kv_xmemdup(lo, lon);
    r->lon = lon;
    r->hi = kv_xmemdup(hi, hin);
    r->hin = hin;
}

void wb_ov_forget_ranges(struct wb_ov *o, uint64_t durable)
{
    size_t w = 0;
    for (size_t i = 0; i < o->nranges; i++) {
        if (o->ranges[i].seq <= durable) {
            free(o->ranges[i].lo);
            free(o->ranges[i].hi);
        } else {
            o->ranges[w++] = o->ranges[i];
        }
    }
    o->nranges = w;
}

int wb_ov_range_covers(const struct wb_ov *o, int cf, const char *k, size_t kn)
{
    for (size_t i = 0; i < o->nranges; i++) {
        const struct wb_ov_range *r = &o->ranges[i];
        if (wb_ov_cmp(cf, k, kn, r->cf, r->lo, r->lon) >= 0 &&
            wb_ov_cmp(cf, k, kn, r->cf, r->hi, r->hin) < 0)
            return 1;
    }
    return 0;
}

void wb_ov_prefetch(const struct wb_ov *o, uint64_t h, int step)
{
    const struct wb_ov_slot *t = &o->tab[h & o->tabmask];
    if (step == 1)
        __builtin_prefetch(t);
    else if (t->n) {
        /* The header takes a line; the key, and a short value after it
         * (node_set_val), lie past the links: over two lines or three, as
         * the allocation falls. */
        const char *n = (const char *)t->n;
        __builtin_prefetch(n, 1);
        __builtin_prefetch(n + 63, 1);
        __builtin_prefetch(n + 127, 1);
    }
}

struct wb_ov_node *wb_ov_find(const struct wb_ov *o, int cf, const char *k, size_t kn)
{
    return wb_ov_find_h(o, wb_ov_key_hash(cf, k, kn), cf, k, kn);
}

struct wb_ov_node *wb_ov_find_h(const struct wb_ov *o, uint64_t h, int cf, const char *k, size_t kn)
{
    return o->tab[tab_slot(o, h, cf, k, kn)].n;
}

struct wb_ov_node *wb_ov_seek(struct wb_ov *o, int cf, const char *k, size_t kn)
{
    return find_preds(o, cf, k, kn, NULL)->next[0];
}

struct wb_ov_node *wb_ov_seek_before(struct wb_ov *o, int cf, const char *k, size_t kn)
{
    struct wb_ov_node *x = find_preds(o, cf, k, kn, NULL);
    return x == o->head ? NULL : x;
}

struct wb_ov_node *wb_ov_seek_prev(struct wb_ov *o, int cf, const char *k, size_t kn)
{
    struct wb_ov_node *x = find_preds(o, cf, k, kn, NULL);
    struct wb_ov_node *n = x->next[0];
    if (n && node_cmp(n, cf, k, kn) == 0)
        return n;
    return x == o->head ? NULL : x;
}

struct wb_ov_node *wb_ov_prev(const struct wb_ov *o, const struct wb_ov_node *n)
{
    (void)o;
    return n->prev;
}

int wb_ov_check(const struct wb_ov *o)
{
    size_t n = 0, bytes = 0;
    for (int l = 0; l < o->level; l++) {
        const struct wb_ov_node *p = NULL;
        for (struct wb_ov_node *x = o->head->next[l]; x; p = x, x = x->next[l]) {
            if (x->level <= l)
                return 1; /* on a level above its own */
            if (*prevp(x, l) != p)
                return 2; /* backward link */
            if (p && node_cmp(p, x->cf, x->key, x->klen) >= 0)
                return 3; /* order */
            if (l == 0) {
                if (!x->linked)
                    return 7; /* listed but marked waiting */
                n++;
                bytes += node_bytes(x);
                if (x->hash != wb_ov_key_hash(x->cf, x->key, x->klen) ||
                    o->tab[tab_slot(o, x->hash, x->cf, x->key, x->klen)].n != x)
                    return 4; /* the index */
            }
        }
    }
    for (int l = o->level; l < WB_OV_MAXLEVEL; l++)
        if (o->head->next[l])
            return 5; /* a level above o->level */
    uint32_t *grp = calloc(WB_OV_GROUPS, sizeof *grp);
    if (!grp)
        kv_oom(WB_OV_GROUPS * sizeof *grp);
    for (int cf = 0; cf < WB_OV_CFS; cf++) {
        size_t waiting = 0;
        for (unsigned b = 0; b < WB_OV_BANDS; b++) {
            for (size_t i = 0; i < o->pend[cf][b].n; i++) {
                const struct wb_ov_node *x = o->pend[cf][b].v[i];
                if (x->linked || x->cf != cf || band_of(x->key, x->klen) != b || x->pidx != i ||
                    x->hash != wb_ov_key_hash(x->cf, x->key, x->klen) ||
                    o->tab[tab_slot(o, x->hash, x->cf, x->key, x->klen)].n != x) {
                    free(grp);
                    return 8; /* a waiting node */
                }
                grp[grp_index(x->cf, x->key, x->klen)]++;
                n++;
                waiting++;
                bytes += node_bytes(x);
            }
        }
        if (waiting != o->npend[cf]) {
            free(grp);
            return 10; /* a column family's count of waiting nodes */
        }
    }
    int same = memcmp(grp, o->grp, WB_OV_GROUPS * sizeof *grp) == 0;
    free(grp);
    if (!same)
        return 9; /* a group's count of waiting nodes */
    size_t used = 0;
    for (size_t i = 0; i <= o->tabmask; i++)
        used += o->tab[i].n != NULL && o->tab[i].hash == o->tab[i].n->hash;
    if (n != o->count || used != n || bytes != o->bytes)
        return 6;
    return 0;
}
