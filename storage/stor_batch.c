/*
 * stor_batch — record sets: the puts, deletes and range deletes one
 * operation writes, kept in order with a hash index so the operation reads
 * its own writes (stor_batch_lookup) before they are committed. See stor.h.
 *
 * Threads: a record set belongs to the thread that builds it.
 */
#include "stor_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_mem.h"

/* ---- record sets ---- */

void stor_batch_init(struct stor_batch *b)
{
    memset(b, 0, sizeof *b);
}

void stor_batch_destroy(struct stor_batch *b)
{
    free(b->ops);
    free(b->arena);
    free(b->index);
    memset(b, 0, sizeof *b);
}

/* What a clear keeps, whatever the record set just cleared used. */
#define BATCH_KEEP_OPS 1024
#define BATCH_KEEP_ARENA (64u << 10)
#define BATCH_KEEP_INDEX 4096

void stor_batch_clear(struct stor_batch *b)
{
    /* Clearing costs what the record set held, not what the largest one
     * ever did: the event loop clears before and after every command, and
     * zeroing the whole index, which one HSET of 300,000 fields had grown
     * to a million slots, held every later SET to 2,700/s. Each op knows
     * its slot; only those are emptied. Beyond the sizes above, memory
     * more than 8 times what the set used is given back (after a large
     * command, at the next command's clear); the next large set grows it
     * again in proportion to itself. */
    if (b->index)
        for (size_t i = 0; i < b->nops; i++)
            if (b->ops[i].kind != STOR_OP_DELRANGE)
                b->index[b->ops[i].islot] = 0;
    if (b->capindex > BATCH_KEEP_INDEX && b->capindex > 8 * 2 * b->nops) {
        free(b->index);
        b->index = NULL;
        b->capindex = 0;
    }
    if (b->capops > BATCH_KEEP_OPS && b->capops > 8 * b->nops) {
        free(b->ops);
        b->ops = NULL;
        b->capops = 0;
    }
    if (b->caparena > BATCH_KEEP_ARENA && b->caparena > 8 * b->used) {
        free(b->arena);
        b->arena = NULL;
        b->caparena = 0;
    }
    b->nops = 0;
    b->used = 0;
    b->nranges = 0;
}

static size_t arena_add(struct stor_batch *b, const char *p, size_t n)
{
    if (b->used + n > b->caparena) {
        size_t cap = b->caparena ? b->caparena : 1024;
        while (cap < b->used + n)
            cap *= 2;
        b->arena = kv_xrealloc(b->arena, cap);
        b->caparena = cap;
    }
    size_t off = b->used;
    if (n)
        memcpy(b->arena + off, p, n);
    b->used += n;
    return off;
}

static bool op_is(const struct stor_batch *b, const struct stor_op *op, int cf, const char *k,
                  size_t kn)
{
    return op->cf == cf && op->klen == kn && memcmp(b->arena + op->koff, k, kn) == 0;
}

/* Points the index slot of the op's key at op number i (the newest wins),
 * and notes the slot in the op, for stor_batch_clear. */
static void index_set(struct stor_batch *b, size_t i)
{
    struct stor_op *op = &b->ops[i];
    size_t mask = b->capindex - 1;
    for (size_t h = op->hash & mask;; h = (h + 1) & mask) {
        uint32_t e = b->index[h];
        if (e == 0 || op_is(b, &b->ops[e - 1], op->cf, b->arena + op->koff, op->klen)) {
            b->index[h] = (uint32_t)(i + 1);
            op->islot = (uint32_t)h;
            return;
        }
    }
}

static void index_grow(struct stor_batch *b)
{
    size_t cap = b->capindex ? b->capindex * 2 : 64;
    free(b->index);
    b->index = kv_xmalloc(cap * sizeof *b->index);
    memset(b->index, 0, cap * sizeof *b->index);
    b->capindex = cap;
    for (size_t i = 0; i < b->nops; i++)
        if (b->ops[i].kind != STOR_OP_DELRANGE)
            index_set(b, i);
}

static void batch_add(struct stor_batch *b, int kind, int cf, const char *k, size_t kn,
                      const char *v, size_t vn)
{
    if (b->nops == b->capops) {
        b->capops = b->capops ? b->capops * 2 : 16;
        b->ops = kv_xrealloc(b->ops, b->capops * sizeof *b->ops);
    }
    struct stor_op *op = &b->ops[b->nops];
    op->kind = (uint8_t)kind;
    op->cf = (uint8_t)cf;
    op->defer = false;
    op->cold = false;
    op->koff = arena_add(b, k, kn);
    op->klen = kn;
    op->voff = arena_add(b, v, vn);
    op->vlen = vn;
    op->hash = kind == STOR_OP_DELRANGE ? 0 : wb_ov_key_hash(cf, k, kn);
    b->nops++;
    if (kind == STOR_OP_DELRANGE) {
        b->nranges++;
        return;
    }
    /* Keep the index at most half full. */
    if (b->nops * 2 > b->capindex)
        index_grow(b);
    else
        index_set(b, b->nops - 1);
}

void stor_batch_put(struct stor_batch *b, int cf, const char *k, size_t kn, const char *v,
                    size_t vn)
{
    batch_add(b, STOR_OP_PUT, cf, k, kn, v, vn);
}

void stor_batch_put_cold(struct stor_batch *b, int cf, const char *k, size_t kn, const char *v,
                         size_t vn)
{
    batch_add(b, STOR_OP_PUT, cf, k, kn, v, vn);
    b->ops[b->nops - 1].cold = true;
}

void stor_batch_del(struct stor_batch *b, int cf, const char *k, size_t kn)
{
    batch_add(b, STOR_OP_DEL, cf, k, kn, NULL, 0);
}

void stor_batch_del_range(struct stor_batch *b, int cf, const char *lo, size_t lon, const char *hi,
                          size_t hin)
{
    batch_add(b, STOR_OP_DELRANGE, cf, lo, lon, hi, hin);
}

void stor_batch_defer(struct stor_batch *b, size_t i)
{
    b->ops[i].defer = true;
}

static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

int stor_batch_lookup(const struct stor_batch *b, int cf, const char *k, size_t kn, const char **v,
                      size_t *vn)
{
    size_t found = 0; /* op number + 1 */
    if (!b->nops)
        return STOR_ABSENT; /* a command's first look-up, mostly: no hash */
    if (b->capindex) {
        size_t mask = b->capindex - 1;
        for (size_t h = wb_ov_key_hash(cf, k, kn) & mask;; h = (h + 1) & mask) {
            uint32_t e = b->index[h];
            if (e == 0)
                break;
            if (op_is(b, &b->ops[e - 1], cf, k, kn)) {
                found = e;
                break;
            }
        }
    }
    /* A range delete queued after the newest write of k hides it. */
    for (size_t i = b->nops; b->nranges && i > found; i--) {
        const struct stor_op *op = &b->ops[i - 1];
        if (op->kind == STOR_OP_DELRANGE && op->cf == cf &&
            bytes_cmp(k, kn, b->arena + op->koff, op->klen) >= 0 &&
            bytes_cmp(k, kn, b->arena + op->voff, op->vlen) < 0)
            return STOR_DELETED;
    }
    if (!found)
        return STOR_ABSENT;
    const struct stor_op *op = &b->ops[found - 1];
    if (op->kind == STOR_OP_DEL)
        return STOR_DELETED;
    *v = b->arena + op->voff;
    *vn = op->vlen;
    return STOR_PUT;
}
