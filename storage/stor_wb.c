/*
 * stor_wb — write-back: the journal, the flusher thread, housekeeping and
 * replay. See stor.h and docs/writeback.md.
 *
 * Threads: the executor (the daemon's event loop) commits, syncs and does
 * housekeeping; the flusher only reads queued record sets, writes RocksDB and
 * publishes how far it got. They share the queue's tail, the flusher's cursor
 * and durable_seq, under s->mu. Record sets are immutable once queued, and
 * the executor frees only those strictly older than durable_seq, so the
 * flusher never reads freed memory.
 */
#include "stor_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "kv_crc.h"
#include "kv_mem.h"
#include "kv_radix.h"

/* The file in the data folder naming the journal's shared-memory folder. */
#define JSHM_PTR "journal-shm"
#define JSHM_SEG_MAX (8u << 20) /* smaller files: memory comes back sooner */

/* The checksum covers the sequence number and the payload. */
static uint32_t rec_crc(const char *hdr, const char *payload, size_t n)
{
    return kv_crc32c(kv_crc32c(0, hdr + 4, 8), payload, n);
}

/* ---- record memory ----
 *
 * Records are freed in the order they were made (housekeeping frees the
 * queue from its head), so they are cut in order from large chunks, each
 * freed with its last record, instead of one malloc each. Consecutive
 * records then lie side by side: rec_build writes, and housekeeping and
 * the flusher read, memory in sequence, which the CPU's prefetchers
 * follow, where records scattered over the heap cost a cache miss each.
 * Only the executor allocates and frees. */
#define WB_CHUNK (256u << 10)
struct wb_chunk {
    size_t used, live; /* bytes cut from mem, records not yet freed */
    _Alignas(16) char mem[];
};
_Static_assert(sizeof(struct wb_chunk) == offsetof(struct wb_chunk, mem), "mem ends the chunk");

static struct wb_rec *rec_alloc(struct stor *s, size_t size)
{
    size_t chunk = s->o.test_rec_chunk_bytes ? s->o.test_rec_chunk_bytes : WB_CHUNK;
    size = (size + 15) & ~(size_t)15;
    struct wb_rec *r;
    if (size > chunk / 8) {
        r = kv_xmalloc(size);
        r->chunk = NULL;
        return r;
    }
    struct wb_chunk *c = s->rchunk;
    if (!c || c->used + size > chunk - sizeof *c) {
        /* The full one goes with its last record (rec_free). */
        c = kv_xmalloc(chunk);
        c->used = c->live = 0;
        s->rchunk = c;
    }
    r = (struct wb_rec *)(void *)(c->mem + c->used);
    c->used += size;
    c->live++;
    r->chunk = c;
    return r;
}

static void rec_free(struct stor *s, struct wb_rec *r)
{
    struct wb_chunk *c = r->chunk;
    if (!c) {
        free(r);
    } else if (--c->live == 0) {
        if (c == s->rchunk)
            c->used = 0; /* all freed: start again from its head */
        else
            free(c);
    }
}

/* ---- record sets ---- */

static struct wb_rec *rec_build(struct stor *s, const struct stor_batch *b, uint64_t seq)
{
    size_t n = 0, nd = 0;
    for (size_t i = 0; i < b->nops; i++) {
        n += 10 + b->ops[i].klen + b->ops[i].vlen;
        nd += b->ops[i].defer;
    }
    _Static_assert(offsetof(struct wb_rec, data) % 8 == 0, "hash[] past data must align");
    size_t hoff = (WB_HDR + n + 7) & ~(size_t)7;
    struct wb_rec *r =
        rec_alloc(s, sizeof *r + hoff + b->nops * sizeof *r->hash + nd * sizeof *r->doff);
    r->hash = (uint64_t *)(void *)(r->data + hoff);
    r->doff = (uint32_t *)(void *)(r->hash + b->nops);
    r->ndefer = r->rdone = 0;
    r->nops = b->nops;
    r->next = NULL;
    r->seq = seq;
    r->len = WB_HDR + n;
    char *p = r->data + WB_HDR;
    for (size_t i = 0; i < b->nops; i++) {
        const struct stor_op *op = &b->ops[i];
        if (op->defer)
            r->doff[r->ndefer++] = (uint32_t)(p - r->data);
        p[0] = (char)op->kind;
        p[1] = (char)op->cf;
        enc_put_u32(p + 2, (uint32_t)op->klen);
        enc_put_u32(p + 6, (uint32_t)op->vlen);
        memcpy(p + 10, stor_op_key(b, op), op->klen);
        memcpy(p + 10 + op->klen, stor_op_value(b, op), op->vlen);
        p += 10 + op->klen + op->vlen;
        r->hash[i] = op->hash;
    }
    enc_put_u32(r->data, WB_MAGIC);
    enc_put_u64(r->data + 4, seq);
    enc_put_u32(r->data + 12, (uint32_t)n);
    enc_put_u32(r->data + 16, rec_crc(r->data, r->data + WB_HDR, n));
    return r;
}

/* Walks the ops of a payload: fn(arg, kind, cf, k, kn, v, vn). Returns 0,
 * or KV_ECORRUPT if an op runs past the payload. */
typedef void (*op_fn)(void *arg, int kind, int cf, const char *k, size_t kn, const char *v,
                      size_t vn);
static int payload_walk(const char *p, size_t n, op_fn fn, void *arg)
{
    size_t off = 0;
    while (off < n) {
        if (n - off < 10)
            return KV_ECORRUPT;
        int kind = (unsigned char)p[off], cf = (unsigned char)p[off + 1];
        uint32_t kn = enc_get_u32(p + off + 2), vn = enc_get_u32(p + off + 6);
        if (kind < STOR_OP_PUT || kind > STOR_OP_DELRANGE || cf >= STOR_CF_COUNT ||
            kn > n - off - 10 || vn > n - off - 10 - kn)
            return KV_ECORRUPT;
        fn(arg, kind, cf, p + off + 10, kn, p + off + 10 + kn, vn);
        off += 10 + kn + vn;
    }
    return 0;
}

struct to_batch {
    struct stor *s;
    rocksdb_writebatch_t *wb;
};

static void op_to_batch(void *arg, int kind, int cf, const char *k, size_t kn, const char *v,
                        size_t vn)
{
    struct to_batch *t = arg;
    rocksdb_column_family_handle_t *h = t->s->cf[cf];
    if (kind == STOR_OP_PUT)
        rocksdb_writebatch_put_cf(t->wb, h, k, kn, v, vn);
    else if (kind == STOR_OP_DEL)
        rocksdb_writebatch_delete_cf(t->wb, h, k, kn);
    else
        rocksdb_writebatch_delete_range_cf(t->wb, h, k, kn, v, vn);
}

int wb_payload_to_batch(struct stor *s, const char *p, size_t n, rocksdb_writebatch_t *wb)
{
    struct to_batch t = {s, wb};
    return payload_walk(p, n, op_to_batch, &t);
}

/* Applies a record's ops to the overlay (forget false), or forgets them
 * (forget true); hash[] holds each op's hash (rec_build's, from the
 * record set). */
struct to_ov {
    struct wb_ov *ov;
    uint64_t seq;
    bool forget;
    const uint64_t *hash;
};

static void op_to_ov(void *arg, int kind, int cf, const char *k, size_t kn, const char *v,
                     size_t vn)
{
    struct to_ov *t = arg;
    uint64_t h = *t->hash++; /* 0 for a range: housekeeping skips it */
    if (t->forget) {
        if (kind != STOR_OP_DELRANGE)
            wb_ov_forget(t->ov, h, cf, k, kn, t->seq);
        return;
    }
    if (kind == STOR_OP_PUT)
        wb_ov_set(t->ov, h, cf, k, kn, v, vn, t->seq);
    else if (kind == STOR_OP_DEL)
        wb_ov_set(t->ov, h, cf, k, kn, NULL, 0, t->seq);
    else
        wb_ov_set_range(t->ov, cf, k, kn, v, vn, t->seq);
}

/* ---- a flush batch in key order ----
 *
 * The flusher hands RocksDB each batch sorted by (column family, key), and
 * only the last write of each key in it. Consecutive inserts into RocksDB's
 * memtable skiplist then walk the same upper levels, which stay in the CPU
 * cache, instead of a cache miss per level for each random key: profiled
 * under SET load, the flusher's CPU per record about halved, and it was
 * the busiest thread of a write-heavy daemon on a small machine. Order only
 * matters between writes of one key, which the sort keeps (ties break on
 * the op's position); a range delete is a barrier: ops are sorted only
 * between range deletes. */

static int fop_cmp(const struct wb_fop *a, const struct wb_fop *b)
{
    int c = wb_ov_cmp(a->cf, a->k, a->kn, b->cf, b->k, b->kn);
    return c ? c : (a->ord > b->ord) - (a->ord < b->ord);
}

/* The sort is a radix sort, most significant chunk first: a comparison
 * sort (glibc's qsort) was a quarter of the flusher's CPU under SET, each
 * comparison a call and two loads from journal records all over a 16 MiB
 * batch, where a chunk of every key is read once per level. The digit
 * string is cf || key, 7 bytes a chunk; a chunk's low byte says how many
 * of its 7 are the string's own (8 if it goes on), so that a key ordered
 * before a longer key it begins is ordered so here too, and equal chunks
 * with a low byte under 8 mean equal keys. The sort also marks each write
 * that a later one of the same key replaces (WB_SITEM_DUP), as it finds
 * them, so the emitter compares no keys. */

#define SORT_RADIX_MIN 256 /* fewer items: sorted by comparing chunks */
#define SORT_INSERT_MAX 24 /* fewer still: by insertion */
#define SORT_MAX_CHUNKS 8  /* deeper: a comparison of whole keys (bounds the recursion) */
#define SORT_CACHED 2      /* chunks 1 and 2, read with chunk 0 in batch order */

/* Chunk c of f's digit string. A key of 8 bytes or more is read a word at
 * a time from within itself: bytes gathered in a buffer and loaded from it
 * as a word wait on store forwarding, for every chunk of every item. */
static uint64_t fop_chunk(const struct wb_fop *f, size_t c)
{
    size_t len = (size_t)f->kn + 1, at = 7 * c;
    size_t have = at < len ? len - at : 0;
    if (f->kn >= 8) {
        uint64_t w;
        if (c == 0) {
            memcpy(&w, f->k, 8);
            return (uint64_t)f->cf << 56 | (__builtin_bswap64(w) >> 16) << 8 | 8;
        }
        if (!have)
            return 0;
        if (have > 7) { /* 7 bytes from at - 1, and the key goes on */
            memcpy(&w, f->k + at - 1, 8);
            return (__builtin_bswap64(w) & ~(uint64_t)0xff) | 8;
        }
        memcpy(&w, f->k + f->kn - 8, 8); /* the key's last have bytes */
        return __builtin_bswap64(w) << (64 - 8 * have) | have;
    }
    unsigned char b[8] = {0};
    if (c == 0) {
        b[0] = f->cf;
        memcpy(b + 1, f->k, f->kn < 6 ? f->kn : 6);
    } else {
        memcpy(b, f->k + at - 1, have < 7 ? have : 7);
    }
    uint64_t v;
    memcpy(&v, b, 8);
    return __builtin_bswap64(v) | (have > 7 ? 8 : have); /* b[7], the low byte, is 0 */
}

static int sitem_cmp_keys(const void *pa, const void *pb, void *arg)
{
    const struct wb_fop *f = arg;
    const struct wb_sitem *a = pa, *b = pb;
    return fop_cmp(&f[a->i], &f[b->i]);
}

static int sitem_cmp_chunks(const void *pa, const void *pb)
{
    const struct wb_sitem *a = pa, *b = pb;
    if (a->d != b->d)
        return a->d < b->d ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Stable sort of a[0..n) by .d: LSD radix (kv_radix64), or for few
 * items by comparison. b is scratch of n. */
static void sort_by_chunk(struct wb_sitem *a, struct wb_sitem *b, size_t n)
{
    if (n <= SORT_INSERT_MAX) {
        for (size_t i = 1; i < n; i++) {
            struct wb_sitem x = a[i];
            size_t j = i;
            for (; j > 0 && a[j - 1].d > x.d; j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    if (n < SORT_RADIX_MIN) {
        qsort(a, n, sizeof *a, sitem_cmp_chunks); /* i breaks ties: stable */
        return;
    }
    kv_radix64(a, b, n, sizeof *a, offsetof(struct wb_sitem, d));
}

/* sort_level's own marks: in a run of keys tied so far, and its first */
#define SITEM_IN 2u
#define SITEM_FIRST 4u

/* Where the run starting at a[lo] (SITEM_FIRST) ends. */
static size_t run_end(const struct wb_sitem *a, size_t lo, size_t n)
{
    size_t hi = lo + 1;
    while (hi < n && (a[hi].flags & (SITEM_IN | SITEM_FIRST)) == SITEM_IN)
        hi++;
    return hi;
}

/* Sorts a[0..n) whose keys agree on their first c chunks, whose items are
 * in batch order and hold chunk c; ch[i] holds chunks 1..SORT_CACHED of
 * f[i]'s key. A level takes the next chunk of every key still tied in one
 * pass, loading ahead, before it sorts any run: in sorted order the items
 * lie all over the batch, and a read one run at a time would miss the
 * cache at each. */
static void sort_level(const struct wb_fop *f, const uint64_t (*ch)[SORT_CACHED],
                       struct wb_sitem *a, struct wb_sitem *b, size_t n, size_t c)
{
    if (c >= SORT_MAX_CHUNKS) {
        qsort_r(a, n, sizeof *a, sitem_cmp_keys, (void *)f);
        for (size_t i = 0; i + 1 < n; i++) {
            const struct wb_fop *x = &f[a[i].i], *y = &f[a[i + 1].i];
            if (wb_ov_cmp(x->cf, x->k, x->kn, y->cf, y->k, y->kn) == 0)
                a[i].flags |= WB_SITEM_DUP;
        }
        return;
    }
    sort_by_chunk(a, b, n);
    bool deeper = false;
    for (size_t lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo + 1; hi < n && a[hi].d == a[lo].d;)
            hi++;
        if (hi - lo < 2)
            continue;
        if ((a[lo].d & 0xff) == 8) {
            for (size_t i = lo; i < hi; i++)
                a[i].flags |= SITEM_IN;
            a[lo].flags |= SITEM_FIRST;
            deeper = true;
        } else {
            /* The keys end here: one key, its writes in order, the last
             * of them the one that stands. */
            for (size_t i = lo; i + 1 < hi; i++)
                a[i].flags |= WB_SITEM_DUP;
        }
    }
    if (!deeper)
        return;
    if (c + 1 <= SORT_CACHED) {
        for (size_t i = 0; i < n; i++) {
            if (i + 8 < n && (a[i + 8].flags & SITEM_IN))
                __builtin_prefetch(&ch[a[i + 8].i][c]);
            if (a[i].flags & SITEM_IN)
                a[i].d = ch[a[i].i][c];
        }
    } else {
        size_t at = 7 * (c + 1) - 1; /* where chunk c + 1 starts in the key */
        for (size_t i = 0; i < n; i++) {
            if (i + 16 < n && (a[i + 16].flags & SITEM_IN))
                __builtin_prefetch(&f[a[i + 16].i]);
            if (i + 8 < n && (a[i + 8].flags & SITEM_IN))
                __builtin_prefetch(f[a[i + 8].i].k + at);
            if (a[i].flags & SITEM_IN)
                a[i].d = fop_chunk(&f[a[i].i], c + 1);
        }
    }
    for (size_t lo = 0, hi; lo < n; lo = hi) {
        if (!(a[lo].flags & SITEM_FIRST)) {
            hi = lo + 1;
            continue;
        }
        hi = run_end(a, lo, n);
        for (size_t i = lo; i < hi; i++)
            a[i].flags &= ~(SITEM_IN | SITEM_FIRST);
        sort_level(f, ch, a + lo, b + lo, hi - lo, c + 1);
    }
}

/* The buffer holds the items, their scratch, and the cached chunks, one
 * item's size each (16 bytes): the ops' keys are read here in batch order,
 * which is the order of their records in memory, and not again until a
 * run is still tied after three chunks. */
const struct wb_sitem *wb_fops_order(const struct wb_fop *f, size_t n, struct wb_sitem **buf,
                                     size_t *cap)
{
    _Static_assert(sizeof(uint64_t[SORT_CACHED]) == sizeof(struct wb_sitem), "one item each");
    if (*cap < 3 * n) {
        *cap = 3 * n;
        free(*buf);
        *buf = kv_xmalloc(*cap * sizeof **buf);
    }
    struct wb_sitem *a = *buf;
    uint64_t(*ch)[SORT_CACHED] = (uint64_t(*)[SORT_CACHED])(void *)(a + 2 * n);
    for (size_t i = 0; i < n; i++) {
        if (i + 8 < n)
            __builtin_prefetch(f[i + 8].k);
        a[i] = (struct wb_sitem){fop_chunk(&f[i], 0), (uint32_t)i, 0};
        for (size_t c = 0; c < SORT_CACHED; c++)
            ch[i][c] = fop_chunk(&f[i], c + 1);
    }
    if (n > 1)
        sort_level(f, (const uint64_t(*)[SORT_CACHED])ch, a, a + n, n, 0);
    return a;
}

static void op_to_fops(void *arg, int kind, int cf, const char *k, size_t kn, const char *v,
                       size_t vn)
{
    struct stor *s = arg;
    if (s->nfops == s->capfops) {
        s->capfops = s->capfops ? s->capfops * 2 : 1024;
        s->fops = kv_xrealloc(s->fops, s->capfops * sizeof *s->fops);
    }
    s->fops[s->nfops] = (struct wb_fop){k, v, (uint32_t)kn, (uint32_t)vn, (uint32_t)s->nfops,
                                         (uint8_t)kind, (uint8_t)cf};
    s->nfops++;
}

static void put_applied(struct stor *s, rocksdb_writebatch_t *wb, uint64_t seq);

/* The user key a record belongs to, as (db, slot): every layout starts
 * with db(1) slot(2) except the expiry index's, where the slot follows the
 * 8-byte time (encoding.md). Records of one user key share it. */
uint32_t wb_route(int cf, const char *k, size_t kn)
{
    size_t at = cf == STOR_CF_EXPIRY ? 9 : 1;
    if (kn < at + 2)
        return 0;
    return (uint32_t)(uint8_t)k[0] << 16 | (uint32_t)(uint8_t)k[at] << 8 | (uint8_t)k[at + 1];
}

/* Which of n parts a write goes to: all records of one user key to the
 * same one, so they reach RocksDB in one WriteBatch, in order. Splitting by
 * record would not do: the compaction filter judges a sub record by its
 * meta record, and were a new key's meta and sub records written by two
 * parts, a compaction between the two writes (one stalled, say) would drop
 * the live sub records for good. */
static int part_of(const struct wb_fop *f, int n)
{
    uint32_t h = wb_route(f->cf, f->k, f->kn) * 0x9e3779b1u;
    return (int)((h >> 16) % (uint32_t)n);
}

/* Each part stays in key order: a subsequence of the sorted ops. */
static void fops_emit(struct stor *s, const struct wb_fop *f, size_t n, int nparts)
{
    const struct wb_sitem *o = wb_fops_order(f, n, &s->sitems, &s->capsitems);
    for (size_t i = 0; i < n; i++) {
        /* Taken in key order, the ops and their records lie anywhere in
         * the batch: load them ahead. */
        if (i + 8 < n)
            __builtin_prefetch(&f[o[i + 8].i]);
        if (i + 4 < n)
            __builtin_prefetch(f[o[i + 4].i].k);
        if (o[i].flags & WB_SITEM_DUP)
            continue; /* a later write of this key in the batch replaces it */
        const struct wb_fop *x = &f[o[i].i];
        struct to_batch t = {s, s->parts[nparts > 1 ? part_of(x, nparts) : 0].wb};
        op_to_batch(&t, x->kind, x->cf, x->k, x->kn, x->v, x->vn);
    }
}

/* Builds the WriteBatches of the queued record sets from first on, up to
 * tail or until they hold flush_batch_max bytes; *last is the last taken,
 * *bytes their size. Returns how many parts it used. A range delete orders
 * everything around it, so a batch with one goes whole into parts[0]
 * (*ranged names the families of range deletes, a bit each). The records
 * up to tail were handed over under the lock and stay until the flusher
 * passes them: no lock to read them, and one walk over them, each a cache
 * miss. */
static int flush_batch_build(struct stor *s, struct wb_rec *first, struct wb_rec *tail,
                             struct wb_rec **last, size_t *bytes, unsigned *ranged, int nparts)
{
    s->nfops = 0;
    *bytes = 0;
    for (struct wb_rec *r = first;; r = r->next) {
        if (r != tail)
            __builtin_prefetch(r->next);
        payload_walk(r->data + WB_HDR, r->len - WB_HDR, op_to_fops, s); /* built by us */
        *bytes += r->len;
        *last = r;
        if (r == tail || *bytes >= s->flush_batch_max)
            break;
    }
    for (int i = 0; i < s->nparts; i++)
        rocksdb_writebatch_clear(s->parts[i].wb);
    *ranged = 0;
    for (size_t i = 0; i < s->nfops; i++)
        if (s->fops[i].kind == STOR_OP_DELRANGE)
            *ranged |= 1u << s->fops[i].cf, nparts = 1;
    size_t run = 0;
    for (size_t i = 0; i < s->nfops; i++) {
        if (s->fops[i].kind != STOR_OP_DELRANGE)
            continue;
        fops_emit(s, s->fops + run, i - run, 1);
        struct to_batch t = {s, s->parts[0].wb};
        op_to_batch(&t, STOR_OP_DELRANGE, s->fops[i].cf, s->fops[i].k, s->fops[i].kn,
                    s->fops[i].v, s->fops[i].vn);
        run = i + 1;
    }
    fops_emit(s, s->fops + run, s->nfops - run, nparts);
    return nparts;
}

/* RocksDB's WAL unless the journal is on disk; the memtable insert hint
 * unless the batch holds a range delete (stor.c says why). */
static rocksdb_writeoptions_t *flush_wopts(const struct stor *s, bool ranged)
{
    if (ranged)
        return s->jshm ? s->wopts : s->wopts_nowal;
    return s->jshm ? s->wopts_hint : s->wopts_nowal_hint;
}

static void *part_main(void *arg)
{
    struct wb_part *p = arg;
    struct stor *s = p->s;
    uint64_t seen = 0;
    pthread_setname_np(pthread_self(), "shmkv-flushpart");
    stor_thread_quiet();
    pthread_mutex_lock(&s->pmu);
    for (;;) {
        while (s->pgen == seen && !s->pstop)
            pthread_cond_wait(&s->pgo, &s->pmu);
        if (s->pstop)
            break;
        seen = s->pgen;
        pthread_mutex_unlock(&s->pmu);
        p->err = NULL;
        if (rocksdb_writebatch_count(p->wb)) /* split: no range delete */
            rocksdb_write(s->db, flush_wopts(s, false), p->wb, &p->err);
        pthread_mutex_lock(&s->pmu);
        if (++s->pndone == s->nparts - 1)
            pthread_cond_signal(&s->pdone);
    }
    pthread_mutex_unlock(&s->pmu);
    return NULL;
}

/* A part's WriteBatch keeps its capacity from batch to batch; one that
 * grew past twice the batch size (a record larger than a batch: a 100 MB
 * SET) is given back once written, where it used to stay for the
 * process's life. Only while no helper is writing. */
static void parts_shed(struct stor *s)
{
    for (int i = 0; i < s->nparts; i++) {
        size_t n;
        rocksdb_writebatch_data(s->parts[i].wb, &n);
        if (n > 2 * s->flush_batch_max) {
            rocksdb_writebatch_destroy(s->parts[i].wb);
            s->parts[i].wb = rocksdb_writebatch_create();
        }
    }
}

/* The CLOCK_REALTIME time us microseconds from now: a deadline for
 * pthread_cond_timedwait. */
static struct timespec deadline_in(uint64_t us)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += (long)(us % 1000000u) * 1000L;
    t.tv_sec += (time_t)(us / 1000000u) + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

/* ---- deferred prior states (stor.h, stor_batch_defer) ---- */

bool stor_can_defer(const struct stor *s)
{
    return s->wb && s->rfn;
}

void stor_set_resolver(struct stor *s, stor_resolve_fn fn, void *arg)
{
    pthread_mutex_lock(&s->rmu); /* the resolver thread may be running */
    s->rfn = fn;
    s->rarg = arg;
    pthread_mutex_unlock(&s->rmu);
}

/* Resolves the deferred ops of the record sets in s->dq up to upto (a
 * record set the caller may read: the flusher's handed-over ones, or any
 * for the executor), RES_CHUNK at a time through one MultiGet, which costs
 * the flusher about half what as many point reads do. Under rmu. NULL, or
 * RocksDB's error (the caller frees it): what was resolved stays so, the
 * rest is tried again. */
#define RES_CHUNK 256

static char *resolve_upto(struct stor *s, const struct wb_rec *upto)
{
    const char *keys[RES_CHUNK];
    size_t kns[RES_CHUNK];
    const char *ops[RES_CHUNK];
    rocksdb_pinnableslice_t *vals[RES_CHUNK];
    char *errs[RES_CHUNK];
    uint64_t tail = __atomic_load_n(&s->dqtail, __ATOMIC_ACQUIRE);
    size_t mask = s->dqcap - 1;
    for (;;) {
        /* Gather a chunk of one column family from the ring's head: record
         * sets wholly taken, and at most one partly (its rdone moves by part). */
        size_t n = 0;
        int cf = -1;
        uint64_t h = s->dqhead;
        struct wb_rec *part = NULL;
        uint32_t part_to = 0;
        while (n < RES_CHUNK && h < tail) {
            struct wb_rec *x = s->dq[h & mask];
            if (x->seq > upto->seq)
                break;
            uint32_t j = x->rdone;
            for (; j < x->ndefer && n < RES_CHUNK; j++) {
                const char *p = x->data + x->doff[j]; /* built by us */
                if (cf >= 0 && (unsigned char)p[1] != cf)
                    break;
                cf = (unsigned char)p[1];
                ops[n] = p;
                keys[n] = p + 10;
                kns[n] = enc_get_u32(p + 2);
                n++;
            }
            if (j < x->ndefer) {
                part = x;
                part_to = j;
                break;
            }
            h++;
        }
        if (!n)
            return NULL;
        rocksdb_batched_multi_get_cf(s->db, s->ropts, s->cf[cf], n, keys, kns, vals, errs,
                                     false);
        char *err = NULL;
        for (size_t i = 0; i < n; i++)
            if (errs[i] && !err)
                err = errs[i];
            else if (errs[i])
                rocksdb_free(errs[i]);
        for (size_t i = 0; i < n; i++) {
            if (!err) {
                const char *p = ops[i];
                uint32_t kn = enc_get_u32(p + 2), vn = enc_get_u32(p + 6);
                size_t on = 0;
                const char *old = vals[i] ? rocksdb_pinnableslice_value(vals[i], &on) : NULL;
                s->rfn(s->rarg, (unsigned char)p[0], p + 10, kn, p + 10 + kn, vn, old, on,
                       vals[i] != NULL);
            }
            rocksdb_pinnableslice_destroy(vals[i]);
        }
        if (err)
            return err;
        __atomic_store_n(&s->dqhead, h, __ATOMIC_RELEASE);
        if (part)
            part->rdone = part_to;
    }
}

/* Appends r, which has deferred ops, to the ring (the executor's). */
static void dq_push(struct stor *s, struct wb_rec *r)
{
    uint64_t t = s->dqtail; /* only we write it */
    if (t - __atomic_load_n(&s->dqhead, __ATOMIC_ACQUIRE) == s->dqcap) {
        /* Full: twice the room, under rmu so that no resolver reads it
         * meanwhile. The database's cap on outstanding deferrals keeps it
         * from growing far. */
        pthread_mutex_lock(&s->rmu);
        size_t cap = s->dqcap ? 2 * s->dqcap : 256;
        struct wb_rec **q = kv_xmalloc(cap * sizeof *q);
        for (uint64_t i = s->dqhead; i < t; i++)
            q[i & (cap - 1)] = s->dq[i & (s->dqcap - 1)];
        free(s->dq);
        s->dq = q;
        s->dqcap = cap;
        pthread_mutex_unlock(&s->rmu);
    }
    s->dq[t & (s->dqcap - 1)] = r;
    __atomic_store_n(&s->dqtail, t + 1, __ATOMIC_RELEASE);
}

bool stor_resolve_fold_try(struct stor *s, void (*fold)(void *arg), void *arg)
{
    if (pthread_mutex_trylock(&s->rmu) != 0)
        return false;
    fold(arg);
    pthread_mutex_unlock(&s->rmu);
    return true;
}

int stor_resolve_settle(struct stor *s, bool resolve, void (*fold)(void *arg), void *arg)
{
    int rc = 0;
    pthread_mutex_lock(&s->rmu);
    if (resolve && s->wb) {
        char *err = resolve_upto(s, s->ltail);
        if (err)
            rc = stor_take_err(err);
    }
    fold(arg);
    pthread_mutex_unlock(&s->rmu);
    return rc;
}

/* Writes the record sets first..last to RocksDB, with the applied sequence
 * number last of all: in one WriteBatch, or, split into parts written at
 * once, in a small one after them all. Were the process to die between,
 * the next start replays from the older number, and re-applying record
 * sets in order is harmless. NULL, or RocksDB's error (the caller frees
 * it); on an error nothing says the batch is applied, and it is tried
 * again whole. */
static char *flush_batch_write(struct stor *s, struct wb_rec *first, struct wb_rec *tail,
                               struct wb_rec **lastp, size_t *bytes, int nparts)
{
    /* RocksDB holds the prior state of every deferred write up to tail
     * until this batch is written: resolve them first. */
    pthread_mutex_lock(&s->rmu);
    char *rerr = resolve_upto(s, tail);
    pthread_mutex_unlock(&s->rmu);
    if (rerr)
        return rerr;
    unsigned ranged; /* the families range deletes write, a bit each */
    int n = flush_batch_build(s, first, tail, lastp, bytes, &ranged, nparts);
    const struct wb_rec *last = *lastp;
    char *err = NULL;
    if (n == 1) {
        put_applied(s, s->parts[0].wb, last->seq);
        rocksdb_write(s->db, flush_wopts(s, ranged != 0), s->parts[0].wb, &err);
        parts_shed(s);
        if (ranged && !err)
            stor_flush_ranged(s, ranged);
        return err;
    }
    pthread_mutex_lock(&s->pmu);
    s->pndone = 0;
    s->pgen++;
    pthread_cond_broadcast(&s->pgo);
    pthread_mutex_unlock(&s->pmu);
    while (__atomic_load_n(&s->test_hold, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&s->test_held, 1, __ATOMIC_RELEASE);
        usleep(1000);
    }
    rocksdb_write(s->db, flush_wopts(s, false), s->parts[0].wb, &err);
    pthread_mutex_lock(&s->pmu);
    while (s->pndone < s->nparts - 1)
        pthread_cond_wait(&s->pdone, &s->pmu);
    pthread_mutex_unlock(&s->pmu);
    for (int i = 1; i < s->nparts; i++) {
        if (s->parts[i].err && !err)
            err = s->parts[i].err;
        else if (s->parts[i].err)
            rocksdb_free(s->parts[i].err);
        s->parts[i].err = NULL;
    }
    parts_shed(s); /* the helpers are done */
    if (err)
        return err;
    /* parts[0] is written: it carries the marker now (the next batch's
     * build clears it anyway). */
    rocksdb_writebatch_clear(s->parts[0].wb);
    put_applied(s, s->parts[0].wb, last->seq);
    rocksdb_write(s->db, flush_wopts(s, false), s->parts[0].wb, &err);
    return err;
}

/* Starts the helpers: as many as it can of those asked. By default a batch
 * goes to one part per 4 CPUs while writes keep coming, and to one per CPU
 * (8 at most) once they have stopped: then the catch-up is the daemon's
 * only work, and the event loop's core is free. Local readers may want
 * the others; they lose no more CPU time than before, only sooner. */
static void parts_open(struct stor *s)
{
    int n = s->o.flusher_threads, load = n;
    if (n <= 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        load = ncpu >= 16 ? 4 : ncpu >= 8 ? 2 : 1;
        n = ncpu > 8 ? 8 : ncpu > load ? (int)ncpu : load;
    }
    s->parts = kv_xmalloc((size_t)n * sizeof *s->parts);
    pthread_mutex_init(&s->pmu, NULL);
    pthread_cond_init(&s->pgo, NULL);
    pthread_cond_init(&s->pdone, NULL);
    s->parts[0] = (struct wb_part){.s = s, .wb = rocksdb_writebatch_create()};
    s->nparts = 1;
    for (int i = 1; i < n; i++) {
        s->parts[i] = (struct wb_part){.s = s, .wb = rocksdb_writebatch_create()};
        if (pthread_create(&s->parts[i].th, NULL, part_main, &s->parts[i]) != 0) {
            rocksdb_writebatch_destroy(s->parts[i].wb);
            break;
        }
        s->nparts = i + 1; /* no batch is split before the flusher starts */
    }
    s->nload = load < s->nparts ? load : s->nparts;
}

/* Stops the helpers; the flusher has stopped. */
static void parts_close(struct stor *s)
{
    if (!s->parts)
        return;
    pthread_mutex_lock(&s->pmu);
    s->pstop = true;
    pthread_cond_broadcast(&s->pgo);
    pthread_mutex_unlock(&s->pmu);
    for (int i = 1; i < s->nparts; i++)
        pthread_join(s->parts[i].th, NULL);
    for (int i = 0; i < s->nparts; i++)
        rocksdb_writebatch_destroy(s->parts[i].wb);
    pthread_cond_destroy(&s->pgo);
    pthread_cond_destroy(&s->pdone);
    pthread_mutex_destroy(&s->pmu);
    free(s->parts);
    s->parts = NULL;
    s->nparts = s->nload = 0;
}

/* With the journal on disk, the flusher writes RocksDB without its WAL (the
 * journal is the log, and writing both doubled the disk traffic). A crash
 * then leaves each column family at its last flush, each a prefix of its
 * own history but not all at the same point: so every family records how
 * far it got, and replay starts from the smallest. Re-applying record sets
 * in order is harmless. */
static void put_applied(struct stor *s, rocksdb_writebatch_t *wb, uint64_t seq)
{
    char v[8];
    enc_put_u64(v, seq);
    for (int cf = 0; cf < STOR_CF_COUNT; cf++)
        rocksdb_writebatch_put_cf(wb, s->cf[cf], STOR_APPLIED_KEY, STOR_APPLIED_KEYLEN, v, 8);
}

/* ---- the flusher ---- */

static void seg_path(const char *dir, uint64_t first, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%016" PRIx64, dir, first);
}

/* Not while the flusher's writes fail: RocksDB (7.8, as Debian builds it)
 * asserts when its WAL is synced after a failed append, and there is
 * nothing new to make durable anyway. */
static int sync_rocksdb_wal(struct stor *s)
{
    if (__atomic_load_n(&s->werr_flush, __ATOMIC_ACQUIRE))
        return KV_ESTORAGE;
    char *err = NULL;
    rocksdb_flush_wal(s->db, 1, &err);
    return err ? stor_take_err(err) : 0;
}

/* Makes everything RocksDB holds so far durable without a WAL: every
 * column family's memtable goes to an SST file (RocksDB syncs those). */
static int flush_memtables(struct stor *s)
{
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    int rc = 0;
    for (int cf = 0; cf < STOR_CF_COUNT && rc == 0; cf++) {
        char *err = NULL;
        rocksdb_flush_cf(s->db, fo, s->cf[cf], &err);
        if (err)
            rc = stor_take_err(err);
    }
    rocksdb_flushoptions_destroy(fo);
    return rc;
}

/* Deletes the closed journal files whose records are all up to upto; s->mu
 * held, dropped around each unlink. */
static void segs_drop_upto(struct stor *s, uint64_t upto)
{
    while (s->nsegs && s->segs[0].last <= upto) {
        char path[4096];
        seg_path(s->jdir, s->segs[0].first, path, sizeof path);
        memmove(s->segs, s->segs + 1, (s->nsegs - 1) * sizeof *s->segs);
        s->nsegs--;
        pthread_mutex_unlock(&s->mu);
        unlink(path);
        pthread_mutex_lock(&s->mu);
    }
}

/* The flusher's file duties with the journal in shared memory: a journal
 * file goes once RocksDB has all its records (in its WAL, which a killed
 * process does not lose), and under appendfsync everysec RocksDB's WAL is
 * synced once a second, off the executor. */
static void flusher_files_shm(struct stor *s)
{
    segs_drop_upto(s, s->durable_seq);
    uint64_t now = stor_mono_us() / 1000;
    if (s->o.fsync == STOR_FSYNC_EVERYSEC && s->durable_seq > s->wal_synced_seq &&
        now - s->last_fsync_ms >= 1000) {
        uint64_t upto = s->durable_seq;
        pthread_mutex_unlock(&s->mu);
        int rc = sync_rocksdb_wal(s);
        pthread_mutex_lock(&s->mu);
        if (rc == 0)
            s->wal_synced_seq = upto;
        s->last_fsync_ms = now;
    }
}

/* The flusher's file duties, with s->mu held on entry and exit (dropped
 * around every system call): delete journal files whose records are all in
 * RocksDB's SST files (after a memtable flush: the flusher writes no WAL);
 * fsync the journal once a second under appendfsync everysec. */
static void flusher_files(struct stor *s)
{
    if (s->jshm) {
        flusher_files_shm(s);
        return;
    }
    if (s->nsegs && s->segs[0].last <= s->durable_seq) {
        uint64_t upto = s->durable_seq;
        pthread_mutex_unlock(&s->mu);
        int rc = flush_memtables(s);
        pthread_mutex_lock(&s->mu);
        if (rc == 0)
            segs_drop_upto(s, upto);
    }
    uint64_t now = stor_mono_us() / 1000;
    if (s->nsync_fds && now - s->last_fsync_ms >= 1000) {
        /* Retired files get their last fsync and are closed; the current
         * one stays for the next second. */
        size_t n = s->nsync_fds;
        int *fds = kv_xmemdup(s->sync_fds, n * sizeof *fds);
        s->sync_fds[0] = s->sync_fds[n - 1];
        s->nsync_fds = 1;
        pthread_mutex_unlock(&s->mu);
        for (size_t i = 0; i < n; i++) {
            fdatasync(fds[i]);
            if (i + 1 < n)
                close(fds[i]);
        }
        free(fds);
        pthread_mutex_lock(&s->mu);
        s->last_fsync_ms = now;
    }
}

/* The flusher waits for a batch to fill until flusher-interval passes or
 * flusher-batch-size bytes are queued, whichever is first; a backlog is
 * taken up to that size at once. RocksDB's memtable insert of a random
 * key, most of the flusher's work, costs less in larger sorted batches:
 * each key's skiplist neighbours are nearer the last one's, a key written
 * twice in a batch is inserted once, and the flusher runs less often from
 * colder caches. 250 ms or 16 MiB instead of 100 ms or 1 MiB cut the
 * flusher's CPU per SET at pipeline 16 from 1.9 to 1.0-1.2 us (keys over
 * 100,000) and 1.9 to 1.6 (over 3M) on 2 CPUs; the larger overlay costs the
 * event loop little since it prefetches (writeback.md, "Fill"). */
/* Writes that stop end the wait after this long: a burst's tail then reaches
 * RocksDB as soon as with a short interval, and a drain or a benchmark's
 * catch-up does not wait out the interval. */
#define WB_QUIET_MS 10u

/* The resolver thread: every few ms, the deferred writes handed to the
 * flusher so far, so that neither a batch (the flusher waits on nothing
 * of its own then) nor a settle (DBSIZE, in the event loop) finds many
 * left; under a steady load of cold writes the backlog stays at about
 * WB_RESOLVE_MS of them. Sleeps longer while there is nothing to do. */
#define WB_RESOLVE_MS 2

static void *resolver_main(void *arg)
{
    struct stor *s = arg;
    pthread_setname_np(pthread_self(), "shmkv-resolve");
    stor_thread_quiet();
    unsigned ms = WB_RESOLVE_MS;
    pthread_mutex_lock(&s->mu);
    while (!s->rstop) {
        struct timespec until = deadline_in((uint64_t)ms * 1000);
        pthread_cond_timedwait(&s->rcv, &s->mu, &until);
        if (s->rstop)
            break;
        struct wb_rec *t = s->qtail;
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_lock(&s->rmu);
        bool some = __atomic_load_n(&s->dqtail, __ATOMIC_ACQUIRE) != s->dqhead;
        char *err = s->rfn ? resolve_upto(s, t) : NULL;
        pthread_mutex_unlock(&s->rmu);
        if (err)
            rocksdb_free(err); /* the flusher's batch tries again, and reports */
        ms = some ? WB_RESOLVE_MS : 50;
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void *flusher_main(void *arg)
{
    struct stor *s = arg;
    pthread_setname_np(pthread_self(), "shmkv-flusher");
    stor_thread_quiet();
    pthread_mutex_lock(&s->mu);
    for (;;) {
        flusher_files(s);
        while (s->fcursor == s->qtail && !s->stop) {
            s->flusher_idle = true;
            /* At least once a second: everysec's fsync is due then. */
            struct timespec until = deadline_in(1000000);
            int w = pthread_cond_timedwait(&s->work, &s->mu, &until);
            s->flusher_idle = false;
            if (w != 0)
                flusher_files(s);
        }
        if (s->fcursor == s->qtail || s->abandon)
            break; /* stopping with nothing left, or abandoned */
        /* Every part once the writers have gone quiet, or wait on the
         * flusher (back-pressure, a drain, the stop): the daemon has
         * nothing else to do (parts_open). */
        bool quiet = false;
        if (s->o.flush_interval_ms > 0) {
            /* Let a batch fill: until the interval passes or a whole batch
             * waits (the commit that passes it signals; a spurious wake-up
             * waits again), but only while writes keep coming: after
             * WB_QUIET_MS without one, there is no batch to wait for. */
            uint64_t end = stor_mono_us() + (uint64_t)s->o.flush_interval_ms * 1000;
            size_t seen = s->qbytes;
            s->flusher_filling = true;
            while (!s->stop && !s->flush_now && s->qbytes < s->flush_batch_max) {
                uint64_t now = stor_mono_us();
                if (now >= end)
                    break;
                uint64_t step = end - now < WB_QUIET_MS * 1000 ? end - now : WB_QUIET_MS * 1000;
                struct timespec until = deadline_in(step);
                if (pthread_cond_timedwait(&s->work, &s->mu, &until) == 0)
                    continue;
                if (s->qbytes == seen) {
                    quiet = true; /* the writers went quiet */
                    break;
                }
                seen = s->qbytes;
            }
            s->flusher_filling = false;
        }
        int nparts = quiet || s->flush_now || s->stop ? s->nparts : s->nload;
        s->flush_now = false;
        struct wb_rec *first = s->fcursor->next, *tail = s->qtail, *last;
        size_t bytes;
        pthread_mutex_unlock(&s->mu);

        uint64_t t0 = stor_mono_us();
        char *err = flush_batch_write(s, first, tail, &last, &bytes, nparts);
        uint64_t us = stor_mono_us() - t0;

        if (err) {
            /* Nothing is dropped: the same records are tried again, every
             * 100 ms, until RocksDB takes them (after a full disk, once
             * RocksDB's own recovery has resumed it). Meanwhile the daemon
             * refuses new writes (stor_write_error). */
            int rc = stor_take_err(err);
            pthread_mutex_lock(&s->mu);
            if (!s->werr_flush)
                fprintf(stderr, "shmkv: flusher: RocksDB write failed, retrying: %s\n",
                        stor_errmsg());
            snprintf(s->werr_msg, sizeof s->werr_msg, "%s", stor_errmsg());
            __atomic_store_n(&s->werr_flush, rc, __ATOMIC_RELEASE);
            pthread_cond_broadcast(&s->done); /* a drain waiting on it gives up */
            if (s->stop) {
                s->abandon = true; /* the journal keeps the rest for the next start */
                break;
            }
            pthread_mutex_unlock(&s->mu);
            usleep(100 * 1000);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        pthread_mutex_lock(&s->mu);
        if (s->werr_flush) {
            fprintf(stderr, "shmkv: flusher: RocksDB writes again\n");
            __atomic_store_n(&s->werr_flush, 0, __ATOMIC_RELEASE);
        }
        uint64_t n = last->seq - s->durable_seq;
        s->qbytes -= bytes;
        s->fcursor = last;
        s->durable_seq = last->seq;
        s->fl_batches++;
        s->fl_sets += n;
        s->fl_us_total += us;
        s->fl_us_last = us;
        if (us > s->fl_us_max)
            s->fl_us_max = us;
        pthread_cond_broadcast(&s->done);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- journal files ----
 *
 * A journal file on disk is allocated at its full size when it is made and
 * written in place: fdatasync after an append must also commit the file's
 * new size to the file system's journal, after an overwrite only the data.
 * Under appendfsync always, where every group of replies waits for an
 * fdatasync, the file is written whole with zeros first: a range that is
 * only allocated (fallocate) is "unwritten" until written, and turning it
 * written is a metadata change, which that fdatasync must commit too, and
 * with it whatever else the file system's journal holds (RocksDB's new
 * files). On this machine's ext4, a 2 KiB write + fdatasync beside a
 * process writing and syncing 4 MiB files took 151-165 us (median) appended,
 * 115-129 us allocated, 78-86 us written with zeros, and SET under always
 * with 50 clients gained 1-14% (docs/writeback.md, "Zeroed journal files").
 * The zeros cost a second write of the journal's bytes, made ahead on the
 * jprep thread. Replay reads an all-zero tail as the end of a file's
 * records, and a file is cut to its records when it is closed. */

enum wb_spare { SPARE_NONE, SPARE_WANTED, SPARE_MAKING, SPARE_READY };

static size_t seg_max(const struct stor *s)
{
    size_t segmax = s->o.journal_segment_bytes ? s->o.journal_segment_bytes : 64u << 20;
    return s->jshm && segmax > JSHM_SEG_MAX ? JSHM_SEG_MAX : segmax;
}

static void spare_path(const struct stor *s, bool tmp, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", s->jdir, tmp ? "spare.tmp" : "spare");
}

/* Writes n bytes of zeros over fd from its start and makes them durable,
 * a megabyte and an fdatasync at a time: a longer burst would sit in the
 * disk's queue ahead of the executor's fdatasync. stop (may be NULL), read
 * between writes, gives up early. Returns 0 or -errno (-ECANCELED). */
static int zero_fill(int fd, size_t n, const bool *stop)
{
    static char zeros[1u << 20]; /* never written: not const, so not in the file */
    for (size_t off = 0; off < n;) {
        if (stop && __atomic_load_n(stop, __ATOMIC_RELAXED))
            return -ECANCELED;
        size_t len = n - off < sizeof zeros ? n - off : sizeof zeros;
        ssize_t w = pwrite(fd, zeros, len, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -ENOSPC;
        off += (size_t)w;
        if (fdatasync(fd) != 0)
            return -errno;
    }
    return 0;
}

/* The jprep thread: makes dir/journal/spare, a journal file's worth of
 * durable zeros, whenever the executor has taken the last one. It is
 * written as spare.tmp and renamed, so a file named spare is always whole
 * (replay ignores both names). A failure (a full disk) leaves no spare:
 * files are then allocated, not written, until a later roll asks again. */
static void *jprep_main(void *arg)
{
    struct stor *s = arg;
    char tmp[4096], done[4096];
    pthread_setname_np(pthread_self(), "shmkv-jprep");
    spare_path(s, true, tmp, sizeof tmp);
    spare_path(s, false, done, sizeof done);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->jprep_stop && s->spare != SPARE_WANTED)
            pthread_cond_wait(&s->jprep_cv, &s->mu);
        if (s->jprep_stop)
            break;
        s->spare = SPARE_MAKING;
        pthread_mutex_unlock(&s->mu);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        int rc = fd < 0 ? -errno : 0;
        if (fd >= 0) {
            rc = zero_fill(fd, seg_max(s), &s->jprep_stop);
            close(fd);
            if (rc == 0 && rename(tmp, done) != 0)
                rc = -errno;
            if (rc)
                unlink(tmp);
        }
        pthread_mutex_lock(&s->mu);
        s->spare = rc == 0 ? SPARE_READY : SPARE_NONE;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Renames the spare, if one is ready, to path (a new journal file), makes
 * the name durable and asks jprep for the next one. Returns the file's
 * descriptor, or -1 where there was none or it would not move. */
static int spare_take(struct stor *s, const char *path)
{
    pthread_mutex_lock(&s->mu);
    bool ready = s->spare == SPARE_READY;
    pthread_mutex_unlock(&s->mu);
    char from[4096];
    spare_path(s, false, from, sizeof from);
    /* Moved before jprep is asked for the next: a small spare made at once
     * would otherwise be renamed over this one first, and the name found
     * missing at the next roll. */
    bool moved = ready && rename(from, path) == 0;
    pthread_mutex_lock(&s->mu);
    if (s->spare == SPARE_READY || s->spare == SPARE_NONE) {
        s->spare = SPARE_WANTED; /* the next one */
        pthread_cond_signal(&s->jprep_cv);
    }
    pthread_mutex_unlock(&s->mu);
    if (!moved)
        return -1;
    /* Records are acknowledged once their file is synced, and that file must
     * be found under its new name after a power loss. */
    int dfd = open(s->jdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = dfd >= 0 && fsync(dfd) == 0 ? open(path, O_WRONLY | O_CLOEXEC) : -1;
    if (dfd >= 0)
        close(dfd);
    if (fd < 0)
        unlink(path);
    return fd;
}

/* At open: whether a whole spare was left by a killed run (a partly made
 * one, spare.tmp, goes), and whether this run makes them at all. */
static void spare_open(struct stor *s)
{
    s->jzero = !s->jshm && s->o.fsync == STOR_FSYNC_ALWAYS;
    s->spare = SPARE_NONE;
    for (int tmp = 1; tmp >= 0; tmp--) {
        char path[4096];
        snprintf(path, sizeof path, "%s/journal/%s", s->dir, tmp ? "spare.tmp" : "spare");
        struct stat st;
        if (!tmp && s->jzero && stat(path, &st) == 0 && (size_t)st.st_size == seg_max(s) &&
            (uint64_t)st.st_blocks * 512 >= (uint64_t)st.st_size)
            s->spare = SPARE_READY;
        else
            unlink(path);
    }
}

/* Stops jprep (a spare half made is given up); a clean close removes the
 * spare, a kill's leaves it to the next start. */
static void spare_close(struct stor *s, bool clean)
{
    if (s->jprep_running) {
        pthread_mutex_lock(&s->mu);
        __atomic_store_n(&s->jprep_stop, true, __ATOMIC_RELAXED);
        pthread_cond_broadcast(&s->jprep_cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->jprep, NULL);
        s->jprep_running = false;
    }
    if (s->jzero) {
        char path[4096];
        spare_path(s, true, path, sizeof path);
        unlink(path);
        spare_path(s, false, path, sizeof path);
        if (clean)
            unlink(path);
    }
}

/* Opens the journal file whose records start at first. at_start: the
 * daemon is not serving yet, so with jzero and no spare the file is
 * written with zeros here rather than only allocated. */
static int seg_open_new(struct stor *s, uint64_t first, bool at_start)
{
    char path[4096];
    seg_path(s->jdir, first, path, sizeof path);
    int fd = s->jzero ? spare_take(s, path) : -1;
    if (fd < 0) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
            return -errno;
        /* Not in shared memory: there it would only take memory sooner. A
         * file system that cannot preallocate is appended to as before. */
        bool zeroed = s->jzero && at_start && zero_fill(fd, seg_max(s), NULL) == 0;
        if (!zeroed && !s->jshm)
            (void)fallocate(fd, 0, 0, (off_t)seg_max(s));
    }
    s->jfd = fd;
    s->jcur.first = first;
    s->jcur.last = first - 1;
    s->jcur.bytes = 0;
    if (s->o.fsync == STOR_FSYNC_EVERYSEC && !s->jshm) {
        /* The flusher fsyncs its own descriptor: the executor may close
         * and replace jfd whenever it likes. */
        int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (d >= 0) {
            pthread_mutex_lock(&s->mu);
            s->sync_fds = kv_xrealloc(s->sync_fds, (s->nsync_fds + 1) * sizeof *s->sync_fds);
            s->sync_fds[s->nsync_fds++] = d;
            pthread_mutex_unlock(&s->mu);
        }
    }
    return 0;
}

static void seg_close_current(struct stor *s)
{
    if (s->jfd < 0)
        return;
    if (!s->jshm)
        (void)ftruncate(s->jfd, (off_t)s->jcur.bytes); /* give back what it did not use */
    close(s->jfd);
    s->jfd = -1;
    pthread_mutex_lock(&s->mu);
    if (s->nsegs == s->capsegs) {
        s->capsegs = s->capsegs ? s->capsegs * 2 : 8;
        s->segs = kv_xrealloc(s->segs, s->capsegs * sizeof *s->segs);
    }
    s->segs[s->nsegs++] = s->jcur;
    pthread_mutex_unlock(&s->mu);
}

/* Hands the records committed since the last call to the flusher. */
static void wb_publish(struct stor *s)
{
    pthread_mutex_lock(&s->mu);
    s->qtail = s->ltail;
    s->qbytes += s->lbytes;
    s->lbytes = 0;
    /* A busy flusher finds them when it looks again, and one filling a
     * batch wants waking only once the batch is full: no wake-up (a futex
     * call) per sync point. */
    if (s->flusher_idle || (s->flusher_filling && s->qbytes >= s->flush_batch_max))
        pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
}

int stor_sync(struct stor *s)
{
    if (!s->wb || !s->jnext)
        return 0; /* nothing committed since the last call: nothing to hand on */
    if (s->lbytes)
        wb_publish(s);
    size_t segmax = seg_max(s);
    while (s->jnext) {
        /* One record set per vector, as many as the kernel takes in one
         * call: a pipelined iteration commits hundreds (SET at pipeline
         * 16 over 50 clients: about 500), and 64 to a call made that
         * eight system calls. */
        struct iovec iov[IOV_MAX];
        int n = 0;
        size_t bytes = 0;
        struct wb_rec *r = s->jnext, *last = NULL;
        for (; r && n < IOV_MAX; r = r->next) {
            iov[n].iov_base = r->data;
            iov[n].iov_len = r->len;
            bytes += r->len;
            n++;
            last = r;
        }
        /* A short write of a regular file only happens when the disk is
         * full; then no reply may go out, and the caller must stop. */
        size_t done = 0;
        while (done < bytes) {
            ssize_t w = pwritev(s->jfd, iov, n, (off_t)(s->jcur.bytes + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return w < 0 ? -errno : -ENOSPC;
            done += (size_t)w;
            /* Skip what was written, resume inside the iovec. */
            size_t skip = (size_t)w;
            int i = 0;
            while (i < n && skip >= iov[i].iov_len)
                skip -= iov[i++].iov_len;
            memmove(iov, iov + i, (size_t)(n - i) * sizeof *iov);
            n -= i;
            if (n) {
                iov[0].iov_base = (char *)iov[0].iov_base + skip;
                iov[0].iov_len -= skip;
            }
        }
        s->jcur.last = last->seq;
        s->jcur.bytes += bytes;
        s->journaled_seq = last->seq;
        s->jnext = last->next;
    }
    if (s->o.fsync == STOR_FSYNC_ALWAYS && fdatasync(s->jfd) != 0)
        return -errno;
    if (s->jcur.bytes >= segmax) {
        seg_close_current(s);
        int rc = seg_open_new(s, s->journaled_seq + 1, false);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- commit, housekeeping, drain ---- */

static void wait_progress(struct stor *s)
{
    uint64_t t0 = stor_mono_us();
    pthread_mutex_lock(&s->mu);
    uint64_t d = s->durable_seq;
    if (s->durable_seq < s->last_seq) {
        /* A flusher waiting for its batch to fill would keep the writer
         * waiting as long. */
        s->flush_now = true;
        pthread_cond_signal(&s->work);
    }
    while (s->durable_seq == d && s->durable_seq < s->last_seq) {
        struct timespec until = deadline_in(1000000);
        pthread_cond_timedwait(&s->done, &s->mu, &until);
        if (s->werr_flush)
            break; /* the caller decides whether to wait on */
    }
    pthread_mutex_unlock(&s->mu);
    s->st.waits++;
    s->st.wait_us += stor_mono_us() - t0;
}

static bool flusher_behind(struct stor *s)
{
    pthread_mutex_lock(&s->mu);
    bool behind = s->durable_seq < s->last_seq;
    pthread_mutex_unlock(&s->mu);
    return behind;
}

static void housekeep_all(struct stor *s);

int wb_commit(struct stor *s, const struct stor_batch *b)
{
    size_t maxov = s->o.overlay_max_bytes ? s->o.overlay_max_bytes : 256u << 20;
    /* Back-pressure: above the limit, first forget all that is already
     * durable (housekeeping's slices are for the loop's latency; this is a
     * stall anyway), and wait for the flusher only if that is not enough.
     * Nothing is dropped. */
    while (s->ov.bytes > maxov && !s->o.test_no_flusher) {
        housekeep_all(s);
        if (s->ov.bytes <= maxov || !flusher_behind(s))
            break;
        int rc = stor_sync(s); /* what it waits for must be in the journal */
        if (rc)
            return rc;
        wait_progress(s);
    }
    struct wb_rec *r = rec_build(s, b, s->last_seq + 1);
    s->last_seq = r->seq;
    if (r->ndefer)
        dq_push(s, r);
    struct to_ov t = {&s->ov, r->seq, false, r->hash};
    payload_walk(r->data + WB_HDR, r->len - WB_HDR, op_to_ov, &t);
    s->hk_credit += r->len;
    s->ltail->next = r; /* past qtail: the flusher does not look yet */
    s->ltail = r;
    s->lbytes += r->len;
    if (!s->jnext)
        s->jnext = r;
    return 0;
}

size_t wb_queued_bytes(struct stor *s)
{
    if (!s->wb)
        return 0;
    pthread_mutex_lock(&s->mu);
    size_t n = s->qbytes;
    pthread_mutex_unlock(&s->mu);
    return n + s->lbytes; /* and those not yet handed to the flusher */
}

#define HK_SLICE (64u << 10) /* journal bytes forgotten per call, beyond the credit */
#define HK_AHEAD 4             /* records between a prefetch step and the next */

/* Runs a prefetch step over r's ops if r is durable; the record after. */
static struct wb_rec *hk_prefetch(struct stor *s, struct wb_rec *r, uint64_t d, int step)
{
    if (!r || r->seq > d)
        return r;
    for (size_t i = 0; i < r->nops; i++)
        if (r->hash[i])
            wb_ov_prefetch(&s->ov, r->hash[i], step);
    return r->next;
}

void stor_housekeep(struct stor *s)
{
    if (!s->wb)
        return;
    pthread_mutex_lock(&s->mu);
    uint64_t d = s->durable_seq;
    pthread_mutex_unlock(&s->mu);
    /* Forget overlay entries that reached RocksDB, unless written since.
     * A bounded amount per call — a fixed slice plus twice what was
     * committed since the last call, so it keeps pace with any write rate
     * — because after a burst of writes, forgetting all of them at once
     * held the loop for milliseconds. */
    size_t budget = HK_SLICE + 2 * s->hk_credit;
    s->hk_credit = 0;
    /* Each forget is a hash look-up of a key written a flush ago, two
     * cache misses (slot, node): the records HK_AHEAD and 2 * HK_AHEAD
     * ahead have theirs loading meanwhile, node and slot. */
    struct wb_rec *first = s->qsentinel.next;
    while (first && first->seq <= s->pruned_seq)
        first = first->next;
    struct wb_rec *sa = first, *na = first;
    for (int i = 0; i < 2 * HK_AHEAD; i++)
        sa = hk_prefetch(s, sa, d, 1);
    for (int i = 0; i < HK_AHEAD; i++)
        na = hk_prefetch(s, na, d, 2);
    for (struct wb_rec *r = first; r && r->seq <= d && budget; r = r->next) {
        sa = hk_prefetch(s, sa, d, 1);
        na = hk_prefetch(s, na, d, 2);
        struct to_ov t = {&s->ov, r->seq, true, r->hash};
        payload_walk(r->data + WB_HDR, r->len - WB_HDR, op_to_ov, &t);
        s->pruned_seq = r->seq;
        budget = r->len < budget ? budget - r->len : 0;
    }
    /* A durable range delete is RocksDB's to apply from now on: drop it
     * whatever the slice reached. Kept until the slice caught up (as it
     * was), it hid records written after it that the slice had already
     * forgotten and RocksDB now held: LRANGE found elements missing
     * ("corrupt record") and GET a nil, right after a FLUSHALL. */
    wb_ov_forget_ranges(&s->ov, d);
    wb_ov_tide(&s->ov, stor_mono_us() / 1000);
    /* Free record sets older than the flusher's cursor, once journaled. */
    pthread_mutex_lock(&s->mu);
    struct wb_rec *r;
    while ((r = s->qsentinel.next) && r->seq < d && r->seq <= s->journaled_seq &&
           r->seq <= s->pruned_seq) {
        s->qsentinel.next = r->next;
        rec_free(s, r);
    }
    pthread_mutex_unlock(&s->mu);
}

/* Housekeeping goes a slice at a time: repeat until it stops moving. */
static void housekeep_all(struct stor *s)
{
    for (uint64_t before = UINT64_MAX; before != s->pruned_seq;) {
        before = s->pruned_seq;
        stor_housekeep(s);
    }
}

int stor_drain(struct stor *s)
{
    if (!s->wb)
        return 0;
    int rc = stor_sync(s);
    if (rc)
        return rc;
    while (!s->o.test_no_flusher && flusher_behind(s)) {
        wait_progress(s);
        int e = __atomic_load_n(&s->werr_flush, __ATOMIC_ACQUIRE);
        if (e && flusher_behind(s))
            return e; /* RocksDB cannot take them now; the journal has them */
    }
    housekeep_all(s);
    return 0;
}

int stor_write_error(struct stor *s, char *msg, size_t cap)
{
    if (s->data_low) {
        if (msg && cap)
            snprintf(msg, cap, "writing to RocksDB: %s (free disk space below min-free-disk)",
                     strerror(ENOSPC));
        return KV_ENOSPC;
    }
    if (s->jshm_low) {
        if (msg && cap)
            snprintf(msg, cap, "writing the journal: %s (free space in %s below %u MiB)",
                     strerror(ENOSPC), s->jdir, STOR_JSHM_FLOOR >> 20);
        return KV_ENOSPC;
    }
    if (!s->wb)
        return 0;
    int e = __atomic_load_n(&s->werr_flush, __ATOMIC_ACQUIRE);
    if (e && msg && cap) {
        /* A full disk in Redis's words; anything else in RocksDB's. */
        pthread_mutex_lock(&s->mu);
        snprintf(msg, cap, "writing to RocksDB: %s",
                 e == KV_ENOSPC ? strerror(ENOSPC) : s->werr_msg);
        pthread_mutex_unlock(&s->mu);
    }
    return e;
}

void stor_wb_stats(struct stor *s, struct stor_wb_stats *st)
{
    *st = s->st;
    st->last_seq = s->last_seq;
    pthread_mutex_lock(&s->mu);
    st->durable_seq = s->durable_seq;
    st->flush_batches = s->fl_batches;
    st->flushed_sets = s->fl_sets;
    st->flush_us_total = s->fl_us_total;
    st->flush_us_last = s->fl_us_last;
    st->flush_us_max = s->fl_us_max;
    pthread_mutex_unlock(&s->mu);
    st->flusher_threads = s->nload;
    st->flush_batch_bytes = s->flush_batch_max;
    st->overlay_entries = s->ov.count;
    st->overlay_bytes = s->ov.bytes;
    uint64_t jb = s->jcur.bytes;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nsegs; i++)
        jb += s->segs[i].bytes;
    pthread_mutex_unlock(&s->mu);
    st->journal_bytes = jb;
    st->journal_dir = s->jdir;
    st->journal_shm = s->jshm;
}

static int read_file(const char *path, char **buf, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    *n = (size_t)st.st_size;
    *buf = kv_xmalloc(*n ? *n : 1);
    size_t got = 0;
    while (got < *n) {
        ssize_t r = read(fd, *buf + got, *n - got);
        if (r <= 0) {
            int e = r < 0 ? -errno : -EIO;
            close(fd);
            free(*buf);
            return e;
        }
        got += (size_t)r;
    }
    close(fd);
    return 0;
}

/* ---- where the journal lives ----
 *
 * On disk, in dir/journal; or, under appendfsync everysec and no, in a
 * folder of its own in shared memory (a tmpfs), where appending never waits
 * on a file system's journal or dirty-page throttling: the flusher writes
 * RocksDB's WAL instead. The folder gets a random name, written to
 * dir/journal-shm before any record goes into it, so a restart finds it
 * whatever the configuration says by then, and a data folder deleted and
 * made again can never pick up another's records. */

/* The shared-memory folder dir/journal-shm names, in out; 0 if it names one
 * (it may be gone: a reboot empties a tmpfs), -ENOENT if there is none. */
static int shm_ptr_read(const struct stor *s, char *out, size_t cap)
{
    char path[4096], *buf;
    size_t n;
    snprintf(path, sizeof path, "%s/" JSHM_PTR, s->dir);
    int rc = read_file(path, &buf, &n);
    if (rc)
        return rc;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
        n--;
    rc = n && n < cap && buf[0] == '/' && !memchr(buf, '\0', n) ? 0 : KV_ECORRUPT;
    if (rc == 0) {
        memcpy(out, buf, n);
        out[n] = '\0';
    }
    free(buf);
    return rc;
}

static int fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

/* Writes dir/journal-shm naming folder, durably (it must outlive a power
 * loss no less than the records in RocksDB do). */
static int shm_ptr_write(const struct stor *s, const char *folder)
{
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/" JSHM_PTR ".tmp", s->dir);
    snprintf(path, sizeof path, "%s/" JSHM_PTR, s->dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    size_t n = strlen(folder);
    int rc = 0;
    if (write(fd, folder, n) != (ssize_t)n || write(fd, "\n", 1) != 1 || fdatasync(fd) != 0)
        rc = errno ? -errno : -EIO;
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc == 0)
        rc = fsync_path(s->dir);
    if (rc)
        unlink(tmp);
    return rc;
}

static void shm_ptr_remove(const struct stor *s)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" JSHM_PTR, s->dir);
    unlink(path);
}

/* Makes a new shared-memory folder for the journal when the options ask for
 * one and the tmpfs has room for everything that may be pending; otherwise
 * the journal stays on disk. Sets s->jdir. */
static void journal_place(struct stor *s)
{
    const char *shm = s->o.journal_shm_dir;
    size_t ovmax = s->o.overlay_max_bytes ? s->o.overlay_max_bytes : 256u << 20;
    struct statvfs vf;
    if (shm && *shm && s->o.fsync != STOR_FSYNC_ALWAYS && statvfs(shm, &vf) == 0 &&
        (uint64_t)vf.f_bavail * vf.f_frsize >= (uint64_t)ovmax + STOR_JSHM_FLOOR) {
        for (int tries = 0; tries < 16; tries++) {
            uint64_t id;
            if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id)
                break;
            char path[4096];
            snprintf(path, sizeof path, "%s/shmkv-journal-%016" PRIx64, shm, id);
            if (mkdir(path, 0700) != 0) {
                if (errno == EEXIST)
                    continue;
                break;
            }
            if (shm_ptr_write(s, path) != 0) {
                rmdir(path);
                break;
            }
            s->jshm = true;
            s->jdir = kv_xmemdup(path, strlen(path) + 1);
            return;
        }
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/journal", s->dir);
    s->jdir = kv_xmemdup(path, strlen(path) + 1);
}

/* ---- replay and open ---- */

struct jfile {
    uint64_t first;
    int where; /* index into the replay's folders */
};

static int cmp_jfile(const void *a, const void *b)
{
    uint64_t x = ((const struct jfile *)a)->first, y = ((const struct jfile *)b)->first;
    return (x > y) - (x < y);
}

/* Adds the journal files in folder to *out. A missing folder holds none. */
static int list_segments(const char *folder, int where, struct jfile **out, size_t *n,
                         size_t *cap)
{
    DIR *d = opendir(folder);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strlen(e->d_name) != 16 || strspn(e->d_name, "0123456789abcdef") != 16)
            continue;
        if (*n == *cap)
            *out = kv_xrealloc(*out, (*cap = *cap ? *cap * 2 : 8) * sizeof **out);
        (*out)[(*n)++] = (struct jfile){strtoull(e->d_name, NULL, 16), where};
    }
    closedir(d);
    return 0;
}

static _Thread_local char wb_errbuf[4200]; /* room for a path */

static bool all_zero(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* Replays every record set beyond RocksDB's applied sequence number, from
 * the journal files on disk and in the shared-memory folder a previous run
 * named (both, in sequence order: the configuration may have changed since),
 * then removes them. A record cut short at the very end of the last file is
 * a write the crash interrupted (never acknowledged): it is dropped. Any
 * other bad record is corruption: the open fails, naming file and offset. */
static int replay(struct stor *s, const char **errmsg)
{
    /* The smallest of the column families' applied sequence numbers: each
     * family may have reached a different point before the crash. */
    uint64_t applied = UINT64_MAX;
    int rc = 0;
    for (int cf = 0; cf < STOR_CF_COUNT; cf++) {
        char *v;
        size_t vn;
        uint64_t a = 0;
        rc = stor_get(s, cf, STOR_APPLIED_KEY, STOR_APPLIED_KEYLEN, &v, &vn);
        if (rc == 0) {
            if (vn == 8)
                a = enc_get_u64(v);
            free(v);
        } else if (rc != KV_ENOTFOUND) {
            return rc;
        }
        if (a < applied)
            applied = a;
    }
    char dirs[2][4096];
    snprintf(dirs[0], sizeof dirs[0], "%s/journal", s->dir);
    if (mkdir(dirs[0], 0700) != 0 && errno != EEXIST)
        return -errno;
    rc = shm_ptr_read(s, dirs[1], sizeof dirs[1]);
    bool had_shm = rc == 0;
    if (rc == KV_ECORRUPT) {
        snprintf(wb_errbuf, sizeof wb_errbuf, "%s/" JSHM_PTR ": not a folder's path", s->dir);
        *errmsg = wb_errbuf;
        return rc;
    }
    if (rc && rc != -ENOENT)
        return rc;
    struct jfile *segs = NULL;
    size_t nsegs = 0, cap = 0;
    rc = list_segments(dirs[0], 0, &segs, &nsegs, &cap);
    if (rc == 0 && had_shm)
        rc = list_segments(dirs[1], 1, &segs, &nsegs, &cap);
    if (rc) {
        free(segs);
        return rc;
    }
    if (nsegs)
        qsort(segs, nsegs, sizeof *segs, cmp_jfile);
    uint64_t last = applied, replayed = 0;
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    size_t pending = 0;
    for (size_t i = 0; i < nsegs && rc == 0; i++) {
        char path[4096], *buf = NULL;
        size_t n = 0;
        seg_path(dirs[segs[i].where], segs[i].first, path, sizeof path);
        if ((rc = read_file(path, &buf, &n)))
            break;
        size_t off = 0;
        while (off < n) {
            bool ok = n - off >= WB_HDR && enc_get_u32(buf + off) == WB_MAGIC;
            size_t len = ok ? enc_get_u32(buf + off + 12) : 0;
            bool whole = ok && len <= n - off - WB_HDR;
            ok = whole && enc_get_u32(buf + off + 16) == rec_crc(buf + off, buf + off + WB_HDR, len);
            uint64_t seq = ok ? enc_get_u64(buf + off + 4) : 0;
            if (ok && seq != last + 1 && seq > applied)
                ok = false; /* a gap: something is missing */
            if (!ok) {
                if (all_zero(buf + off, n - off))
                    break; /* the unwritten end of a preallocated file */
                size_t end = whole ? off + WB_HDR + len : n;
                bool torn = i == nsegs - 1 && (!whole || all_zero(buf + end, n - end));
                if (torn) {
                    /* Cut the torn tail so appending starts clean. */
                    if (truncate(path, (off_t)off) != 0)
                        rc = -errno;
                    break;
                }
                snprintf(wb_errbuf, sizeof wb_errbuf,
                         "journal %s: bad record at offset %zu (after sequence %" PRIu64 ")",
                         path, off, last);
                *errmsg = wb_errbuf;
                rc = KV_ECORRUPT;
                break;
            }
            if (seq > applied) {
                rc = wb_payload_to_batch(s, buf + off + WB_HDR, len, wb);
                if (rc) {
                    snprintf(wb_errbuf, sizeof wb_errbuf, "journal %s: bad payload at offset %zu",
                             path, off);
                    *errmsg = wb_errbuf;
                    break;
                }
                last = seq;
                replayed++;
                pending += len;
                if (pending >= (4u << 20)) {
                    put_applied(s, wb, last);
                    char *err = NULL;
                    rocksdb_write(s->db, s->wopts, wb, &err);
                    if (err) {
                        rc = stor_take_err(err);
                        break;
                    }
                    rocksdb_writebatch_clear(wb);
                    pending = 0;
                }
            } else if (seq > last) {
                last = seq;
            }
            off += WB_HDR + len;
        }
        free(buf);
    }
    if (rc == 0 && pending) {
        put_applied(s, wb, last);
        char *err = NULL;
        rocksdb_write(s->db, s->wopts, wb, &err);
        if (err)
            rc = stor_take_err(err);
    }
    rocksdb_writebatch_destroy(wb);
    /* Everything is in RocksDB: make its WAL durable, then drop the files. */
    if (rc == 0 && (rc = sync_rocksdb_wal(s)) == 0) {
        for (size_t i = 0; i < nsegs; i++) {
            char path[4096];
            seg_path(dirs[segs[i].where], segs[i].first, path, sizeof path);
            unlink(path);
        }
        if (had_shm) {
            rmdir(dirs[1]);
            shm_ptr_remove(s);
        }
    }
    free(segs);
    s->last_seq = s->journaled_seq = s->pruned_seq = last;
    s->st.replayed_sets = replayed;
    return rc;
}

int wb_open(struct stor *s, const char **errmsg)
{
    s->wb = true;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->done, NULL);
    pthread_cond_init(&s->jprep_cv, NULL);
    pthread_cond_init(&s->rcv, NULL);
    s->qtail = s->ltail = &s->qsentinel;
    s->fcursor = &s->qsentinel;
    /* A batch goes whole into one memtable, which it can overrun: at most
     * a quarter of write-buffer-size keeps the memtables near that size
     * (with 4 MiB ones, 16 MiB batches made them 14 MiB). */
    size_t wbs = stor_write_buffer_bytes(&s->o);
    s->flush_batch_max = s->o.flush_batch_bytes ? s->o.flush_batch_bytes : 16u << 20;
    if (s->flush_batch_max > wbs / 4)
        s->flush_batch_max = wbs / 4 > 4096 ? wbs / 4 : 4096;
    int rc = replay(s, errmsg);
    if (rc == 0) {
        journal_place(s);
        s->durable_seq = s->qsentinel.seq = s->wal_synced_seq = s->last_seq;
        spare_open(s);
        rc = seg_open_new(s, s->last_seq + 1, true);
    }
    if (rc == 0 && s->jzero) {
        if (pthread_create(&s->jprep, NULL, jprep_main, s) != 0)
            rc = -EAGAIN;
        else
            s->jprep_running = true;
    }
    if (rc == 0 && !s->o.test_no_flusher) {
        parts_open(s);
        if (pthread_create(&s->flusher, NULL, flusher_main, s) != 0)
            rc = -EAGAIN;
        else
            s->flusher_running = true;
        if (rc == 0 && pthread_create(&s->resolver, NULL, resolver_main, s) != 0)
            rc = -EAGAIN;
        else if (rc == 0)
            s->rrunning = true;
    }
    if (rc && !*errmsg) {
        snprintf(wb_errbuf, sizeof wb_errbuf, "write-back: %s", kv_strerror(rc));
        *errmsg = wb_errbuf;
    }
    return rc;
}

void wb_close(struct stor *s, bool drain)
{
    if (!s->wb)
        return;
    bool drained = drain && stor_drain(s) == 0 && !s->o.test_no_flusher;
    if (drain && !drained && !s->o.test_no_flusher) {
        pthread_mutex_lock(&s->mu);
        uint64_t left = s->last_seq - s->durable_seq;
        pthread_mutex_unlock(&s->mu);
        fprintf(stderr,
                "shmkv: write-back: RocksDB cannot take the last %" PRIu64
                " record sets now; the journal keeps them for the next start\n",
                left);
    }
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    /* As a kill would: the batch in flight may land, no more. Also when a
     * drain failed (RocksDB cannot write): the journal keeps the rest. */
    s->abandon = !drained;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->mu);
    if (s->flusher_running)
        pthread_join(s->flusher, NULL);
    s->flusher_running = false;
    pthread_mutex_lock(&s->mu);
    s->rstop = true;
    pthread_cond_broadcast(&s->rcv);
    pthread_mutex_unlock(&s->mu);
    if (s->rrunning)
        pthread_join(s->resolver, NULL);
    s->rrunning = false;
    spare_close(s, drained);
    parts_close(s);
    /* One thread from here on. Drained: everything is in RocksDB, so every
     * journal file can go once RocksDB's WAL is on disk. */
    if (s->jfd >= 0)
        seg_close_current(s);
    if (drained && flush_memtables(s) == 0) {
        for (size_t i = 0; i < s->nsegs; i++) {
            char path[4096];
            seg_path(s->jdir, s->segs[i].first, path, sizeof path);
            unlink(path);
        }
        s->nsegs = 0;
        if (s->jshm) {
            rmdir(s->jdir);
            shm_ptr_remove(s);
        }
    }
    free(s->jdir);
    s->jdir = NULL;
    s->jshm = false;
    for (size_t i = 0; i < s->nsync_fds; i++)
        close(s->sync_fds[i]);
    free(s->sync_fds);
    s->sync_fds = NULL;
    s->nsync_fds = 0;
    struct wb_rec *r = s->qsentinel.next;
    while (r) {
        struct wb_rec *next = r->next;
        rec_free(s, r);
        r = next;
    }
    s->qsentinel.next = NULL;
    free(s->dq);
    s->dq = NULL;
    s->dqcap = 0;
    s->dqhead = s->dqtail = 0;
    free(s->rchunk);
    s->rchunk = NULL;
    free(s->segs);
    s->segs = NULL;
    s->nsegs = 0;
    free(s->fops);
    s->fops = NULL;
    s->nfops = s->capfops = 0;
    free(s->sitems);
    s->sitems = NULL;
    s->capsitems = 0;
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->done);
    pthread_cond_destroy(&s->jprep_cv);
    pthread_cond_destroy(&s->rcv);
    pthread_mutex_destroy(&s->mu);
    s->wb = false;
}
