/*
 * stor_ov — the write-back overlay, a skiplist. See stor_ov.h.
 */
#include "stor_ov.h"

#include <string.h>

#include "stor_mem.h"

int ov_cmp(int acf, const char *a, size_t an, int bcf, const char *b, size_t bn)
{
    if (acf != bcf)
        return acf < bcf ? -1 : 1;
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static int node_cmp(const struct ov_node *n, int cf, const char *k, size_t kn)
{
    return ov_cmp(n->cf, n->key, n->klen, cf, k, kn);
}

static struct ov_node *node_new(int level, int cf, const char *k, size_t kn)
{
    struct ov_node *n =
        stor_xmalloc(sizeof *n + (size_t)level * sizeof(struct ov_node *) + kn);
    memset(n, 0, sizeof *n + (size_t)level * sizeof(struct ov_node *));
    n->level = (uint8_t)level;
    n->cf = (uint8_t)cf;
    n->key = (char *)(n->next + level);
    if (kn)
        memcpy(n->key, k, kn);
    n->klen = kn;
    return n;
}

static size_t node_bytes(const struct ov_node *n)
{
    return sizeof *n + n->level * sizeof(struct ov_node *) + n->klen + n->vlen;
}

void ov_init(struct ov *o)
{
    memset(o, 0, sizeof *o);
    o->head = node_new(OV_MAXLEVEL, -1, NULL, 0);
    o->level = 1;
    o->rng = 0x2545f4914f6cdd1dull;
}

void ov_destroy(struct ov *o)
{
    struct ov_node *n = o->head;
    while (n) {
        struct ov_node *next = n->next[0];
        free(n->val);
        free(n);
        n = next;
    }
    for (size_t i = 0; i < o->nranges; i++) {
        free(o->ranges[i].lo);
        free(o->ranges[i].hi);
    }
    free(o->ranges);
    memset(o, 0, sizeof *o);
}

/* For each level, the last node before (cf, k). */
static struct ov_node *find_preds(const struct ov *o, int cf, const char *k, size_t kn,
                                  struct ov_node **preds)
{
    struct ov_node *x = o->head;
    for (int l = o->level - 1; l >= 0; l--) {
        while (x->next[l] && node_cmp(x->next[l], cf, k, kn) < 0)
            x = x->next[l];
        if (preds)
            preds[l] = x;
    }
    return x;
}

static int random_level(struct ov *o)
{
    int l = 1;
    while (l < OV_MAXLEVEL) {
        o->rng ^= o->rng << 13;
        o->rng ^= o->rng >> 7;
        o->rng ^= o->rng << 17;
        if ((o->rng & 3) != 0) /* p = 1/4 */
            break;
        l++;
    }
    return l;
}

void ov_set(struct ov *o, int cf, const char *k, size_t kn, const char *v, size_t vn,
            uint64_t seq)
{
    struct ov_node *preds[OV_MAXLEVEL];
    struct ov_node *x = find_preds(o, cf, k, kn, preds)->next[0];
    if (!x || node_cmp(x, cf, k, kn) != 0) {
        int level = random_level(o);
        for (int l = o->level; l < level; l++)
            preds[l] = o->head;
        if (level > o->level)
            o->level = level;
        x = node_new(level, cf, k, kn);
        for (int l = 0; l < level; l++) {
            x->next[l] = preds[l]->next[l];
            preds[l]->next[l] = x;
        }
        x->prev = preds[0] == o->head ? NULL : preds[0];
        if (x->next[0])
            x->next[0]->prev = x;
        o->count++;
    } else {
        o->bytes -= node_bytes(x);
        free(x->val);
    }
    x->val = v ? stor_xmemdup(v, vn) : NULL;
    x->vlen = v ? vn : 0;
    x->seq = seq;
    o->bytes += node_bytes(x);
}

static void unlink_node(struct ov *o, struct ov_node *x, struct ov_node **preds)
{
    for (int l = 0; l < x->level; l++)
        preds[l]->next[l] = x->next[l];
    if (x->next[0])
        x->next[0]->prev = x->prev;
    while (o->level > 1 && !o->head->next[o->level - 1])
        o->level--;
    o->bytes -= node_bytes(x);
    o->count--;
    free(x->val);
    free(x);
}

void ov_forget(struct ov *o, int cf, const char *k, size_t kn, uint64_t seq)
{
    struct ov_node *preds[OV_MAXLEVEL];
    struct ov_node *x = find_preds(o, cf, k, kn, preds)->next[0];
    if (x && node_cmp(x, cf, k, kn) == 0 && x->seq == seq)
        unlink_node(o, x, preds);
}

void ov_set_range(struct ov *o, int cf, const char *lo, size_t lon, const char *hi, size_t hin,
                  uint64_t seq)
{
    /* Nodes inside the range are superseded by it. */
    for (;;) {
        struct ov_node *preds[OV_MAXLEVEL];
        struct ov_node *x = find_preds(o, cf, lo, lon, preds)->next[0];
        if (!x || node_cmp(x, cf, hi, hin) >= 0)
            break;
        unlink_node(o, x, preds);
    }
    if (o->nranges == o->capranges) {
        o->capranges = o->capranges ? o->capranges * 2 : 4;
        o->ranges = stor_xrealloc(o->ranges, o->capranges * sizeof *o->ranges);
    }
    struct ov_range *r = &o->ranges[o->nranges++];
    r->cf = (uint8_t)cf;
    r->seq = seq;
    r->lo = stor_xmemdup(lo, lon);
    r->lon = lon;
    r->hi = stor_xmemdup(hi, hin);
    r->hin = hin;
}

void ov_forget_ranges(struct ov *o, uint64_t durable)
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

int ov_range_covers(const struct ov *o, int cf, const char *k, size_t kn)
{
    for (size_t i = 0; i < o->nranges; i++) {
        const struct ov_range *r = &o->ranges[i];
        if (ov_cmp(cf, k, kn, r->cf, r->lo, r->lon) >= 0 &&
            ov_cmp(cf, k, kn, r->cf, r->hi, r->hin) < 0)
            return 1;
    }
    return 0;
}

struct ov_node *ov_find(const struct ov *o, int cf, const char *k, size_t kn)
{
    struct ov_node *x = find_preds(o, cf, k, kn, NULL)->next[0];
    return x && node_cmp(x, cf, k, kn) == 0 ? x : NULL;
}

struct ov_node *ov_seek(const struct ov *o, int cf, const char *k, size_t kn)
{
    return find_preds(o, cf, k, kn, NULL)->next[0];
}

struct ov_node *ov_seek_before(const struct ov *o, int cf, const char *k, size_t kn)
{
    struct ov_node *x = find_preds(o, cf, k, kn, NULL);
    return x == o->head ? NULL : x;
}

struct ov_node *ov_seek_prev(const struct ov *o, int cf, const char *k, size_t kn)
{
    struct ov_node *x = find_preds(o, cf, k, kn, NULL);
    struct ov_node *n = x->next[0];
    if (n && node_cmp(n, cf, k, kn) == 0)
        return n;
    return x == o->head ? NULL : x;
}

struct ov_node *ov_prev(const struct ov *o, const struct ov_node *n)
{
    (void)o;
    return n->prev;
}
