/*
 * wb_flush — write-back's flusher thread: it takes the record sets the
 * executor hands over, orders each batch by key, writes it to RocksDB
 * (split over helper threads, the parts, where it can), publishes how far
 * it got, and does the journal files' duties off the event loop (deleting
 * durable files, everysec's fsync). See wb_int.h and docs/writeback.md.
 *
 * Threads: the flusher and its part helpers. They read queued record sets,
 * which are immutable once handed over, and share the queue's cursor and
 * durable_seq with the executor under the queue's lock. The executor frees
 * only record sets strictly older than durable_seq, so the flusher never
 * reads freed memory.
 */
#include "stor_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stddef.h>
#include <time.h>

#include "kv_mem.h"
#include "kv_radix.h"

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
    if (s->fl.nfops == s->fl.capfops) {
        s->fl.capfops = s->fl.capfops ? s->fl.capfops * 2 : 1024;
        s->fl.fops = kv_xrealloc(s->fl.fops, s->fl.capfops * sizeof *s->fl.fops);
    }
    s->fl.fops[s->fl.nfops] = (struct wb_fop){
        k, v, (uint32_t)kn, (uint32_t)vn, (uint32_t)s->fl.nfops, (uint8_t)kind, (uint8_t)cf};
    s->fl.nfops++;
}

void wb_put_applied(struct stor *s, rocksdb_writebatch_t *wb, uint64_t seq);

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
    const struct wb_sitem *o = wb_fops_order(f, n, &s->fl.sitems, &s->fl.capsitems);
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
        struct wb_to_batch t = {s, s->fl.parts[nparts > 1 ? part_of(x, nparts) : 0].wb};
        wb_op_to_batch(&t, x->kind, x->cf, x->k, x->kn, x->v, x->vn);
    }
}

/* Builds the WriteBatches of the queued record sets from first on, up to
 * tail or until they hold flush_batch_max bytes and end a group (a group
 * can make a batch that much larger); *last is the last taken,
 * *bytes their size. Returns how many parts it used. A range delete orders
 * everything around it, so a batch with one goes whole into parts[0]
 * (*ranged names the families of range deletes, a bit each). The records
 * up to tail were handed over under the lock and stay until the flusher
 * passes them: no lock to read them, and one walk over them, each a cache
 * miss. */
static int flush_batch_build(struct stor *s, struct wb_rec *first, struct wb_rec *tail,
                             struct wb_rec **last, size_t *bytes, unsigned *ranged, int nparts)
{
    s->fl.nfops = 0;
    *bytes = 0;
    for (struct wb_rec *r = first;; r = r->next) {
        if (r != tail)
            __builtin_prefetch(r->next);
        wb_payload_walk(r->data + WB_HDR, r->len - WB_HDR, op_to_fops, s); /* built by us */
        *bytes += r->len;
        *last = r;
        /* Full only at a group's end (the tail is one): RocksDB then holds
         * whole groups after every batch, which is what a journal lost to
         * a reboot leaves. */
        if (r == tail || (*bytes >= s->fl.batch_max && enc_get_u32(r->data) != WB_MAGIC_GROUP))
            break;
    }
    for (int i = 0; i < s->fl.nparts; i++)
        rocksdb_writebatch_clear(s->fl.parts[i].wb);
    *ranged = 0;
    for (size_t i = 0; i < s->fl.nfops; i++)
        if (s->fl.fops[i].kind == STOR_OP_DELRANGE)
            *ranged |= 1u << s->fl.fops[i].cf, nparts = 1;
    size_t run = 0;
    for (size_t i = 0; i < s->fl.nfops; i++) {
        if (s->fl.fops[i].kind != STOR_OP_DELRANGE)
            continue;
        fops_emit(s, s->fl.fops + run, i - run, 1);
        struct wb_to_batch t = {s, s->fl.parts[0].wb};
        wb_op_to_batch(&t, STOR_OP_DELRANGE, s->fl.fops[i].cf, s->fl.fops[i].k, s->fl.fops[i].kn,
                       s->fl.fops[i].v, s->fl.fops[i].vn);
        run = i + 1;
    }
    fops_emit(s, s->fl.fops + run, s->fl.nfops - run, nparts);
    return nparts;
}

/* RocksDB's WAL unless the journal is on disk; the memtable insert hint
 * unless the batch holds a range delete (stor.c says why). */
static rocksdb_writeoptions_t *flush_wopts(const struct stor *s, bool ranged)
{
    if (ranged)
        return s->j.shm ? s->wopts : s->wopts_nowal;
    return s->j.shm ? s->wopts_hint : s->wopts_nowal_hint;
}

static void *part_main(void *arg)
{
    struct wb_part *p = arg;
    struct stor *s = p->s;
    uint64_t seen = 0;
    pthread_setname_np(pthread_self(), "shmkv-flushpart");
    stor_thread_quiet();
    pthread_mutex_lock(&s->fl.pmu);
    for (;;) {
        while (s->fl.pgen == seen && !s->fl.pstop)
            pthread_cond_wait(&s->fl.pgo, &s->fl.pmu);
        if (s->fl.pstop)
            break;
        seen = s->fl.pgen;
        pthread_mutex_unlock(&s->fl.pmu);
        p->err = NULL;
        if (rocksdb_writebatch_count(p->wb)) /* split: no range delete */
            rocksdb_write(s->db, flush_wopts(s, false), p->wb, &p->err);
        pthread_mutex_lock(&s->fl.pmu);
        if (++s->fl.pndone == s->fl.nparts - 1)
            pthread_cond_signal(&s->fl.pdone);
    }
    pthread_mutex_unlock(&s->fl.pmu);
    return NULL;
}

/* A part's WriteBatch keeps its capacity from batch to batch; one that
 * grew past twice the batch size (a record larger than a batch: a 100 MB
 * SET) is given back once written, where it used to stay for the
 * process's life. Only while no helper is writing. */
static void parts_shed(struct stor *s)
{
    for (int i = 0; i < s->fl.nparts; i++) {
        size_t n;
        rocksdb_writebatch_data(s->fl.parts[i].wb, &n);
        if (n > 2 * s->fl.batch_max) {
            rocksdb_writebatch_destroy(s->fl.parts[i].wb);
            s->fl.parts[i].wb = rocksdb_writebatch_create();
        }
    }
}

/* The CLOCK_REALTIME time us microseconds from now: a deadline for
 * pthread_cond_timedwait. */
struct timespec wb_deadline_in(uint64_t us)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += (long)(us % 1000000u) * 1000L;
    t.tv_sec += (time_t)(us / 1000000u) + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
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
    pthread_mutex_lock(&s->rs.mu);
    char *rerr = wb_resolve_upto(s, tail);
    pthread_mutex_unlock(&s->rs.mu);
    if (rerr)
        return rerr;
    unsigned ranged; /* the families range deletes write, a bit each */
    int n = flush_batch_build(s, first, tail, lastp, bytes, &ranged, nparts);
    const struct wb_rec *last = *lastp;
    char *err = NULL;
    if (n == 1) {
        wb_put_applied(s, s->fl.parts[0].wb, last->seq);
        rocksdb_write(s->db, flush_wopts(s, ranged != 0), s->fl.parts[0].wb, &err);
        parts_shed(s);
        if (ranged && !err)
            stor_flush_ranged(s, ranged);
        return err;
    }
    pthread_mutex_lock(&s->fl.pmu);
    s->fl.pndone = 0;
    s->fl.pgen++;
    pthread_cond_broadcast(&s->fl.pgo);
    pthread_mutex_unlock(&s->fl.pmu);
    while (__atomic_load_n(&wb_test_hooks.hold, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&wb_test_hooks.held, 1, __ATOMIC_RELEASE);
        usleep(1000);
    }
    rocksdb_write(s->db, flush_wopts(s, false), s->fl.parts[0].wb, &err);
    pthread_mutex_lock(&s->fl.pmu);
    while (s->fl.pndone < s->fl.nparts - 1)
        pthread_cond_wait(&s->fl.pdone, &s->fl.pmu);
    pthread_mutex_unlock(&s->fl.pmu);
    for (int i = 1; i < s->fl.nparts; i++) {
        if (s->fl.parts[i].err && !err)
            err = s->fl.parts[i].err;
        else if (s->fl.parts[i].err)
            rocksdb_free(s->fl.parts[i].err);
        s->fl.parts[i].err = NULL;
    }
    parts_shed(s); /* the helpers are done */
    if (err)
        return err;
    /* parts[0] is written: it carries the marker now (the next batch's
     * build clears it anyway). */
    rocksdb_writebatch_clear(s->fl.parts[0].wb);
    wb_put_applied(s, s->fl.parts[0].wb, last->seq);
    rocksdb_write(s->db, flush_wopts(s, false), s->fl.parts[0].wb, &err);
    return err;
}

/* Starts the helpers: as many as it can of those asked. By default a batch
 * goes to one part per 4 CPUs while writes keep coming, and to one per CPU
 * (8 at most) once they have stopped: then the catch-up is the daemon's
 * only work, and the event loop's core is free. Local readers may want
 * the others; they lose no more CPU time than before, only sooner. */
void wb_parts_open(struct stor *s)
{
    int n = s->o.flusher_threads, load = n;
    if (n <= 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        load = ncpu >= 16 ? 4 : ncpu >= 8 ? 2 : 1;
        n = ncpu > 8 ? 8 : ncpu > load ? (int)ncpu : load;
    }
    s->fl.parts = kv_xmalloc((size_t)n * sizeof *s->fl.parts);
    pthread_mutex_init(&s->fl.pmu, NULL);
    pthread_cond_init(&s->fl.pgo, NULL);
    pthread_cond_init(&s->fl.pdone, NULL);
    s->fl.parts[0] = (struct wb_part){.s = s, .wb = rocksdb_writebatch_create()};
    s->fl.nparts = 1;
    for (int i = 1; i < n; i++) {
        s->fl.parts[i] = (struct wb_part){.s = s, .wb = rocksdb_writebatch_create()};
        if (pthread_create(&s->fl.parts[i].th, NULL, part_main, &s->fl.parts[i]) != 0) {
            rocksdb_writebatch_destroy(s->fl.parts[i].wb);
            break;
        }
        s->fl.nparts = i + 1; /* no batch is split before the flusher starts */
    }
    s->fl.nload = load < s->fl.nparts ? load : s->fl.nparts;
}

/* Stops the helpers; the flusher has stopped. */
void wb_parts_close(struct stor *s)
{
    if (!s->fl.parts)
        return;
    pthread_mutex_lock(&s->fl.pmu);
    s->fl.pstop = true;
    pthread_cond_broadcast(&s->fl.pgo);
    pthread_mutex_unlock(&s->fl.pmu);
    for (int i = 1; i < s->fl.nparts; i++)
        pthread_join(s->fl.parts[i].th, NULL);
    for (int i = 0; i < s->fl.nparts; i++)
        rocksdb_writebatch_destroy(s->fl.parts[i].wb);
    pthread_cond_destroy(&s->fl.pgo);
    pthread_cond_destroy(&s->fl.pdone);
    pthread_mutex_destroy(&s->fl.pmu);
    free(s->fl.parts);
    s->fl.parts = NULL;
    s->fl.nparts = s->fl.nload = 0;
}

/* With the journal on disk, the flusher writes RocksDB without its WAL (the
 * journal is the log, and writing both doubled the disk traffic). A crash
 * then leaves each column family at its last flush, each a prefix of its
 * own history but not all at the same point: so every family records how
 * far it got, and wb_replay starts from the smallest. Re-applying record sets
 * in order is harmless. */
void wb_put_applied(struct stor *s, rocksdb_writebatch_t *wb, uint64_t seq)
{
    char v[8];
    enc_put_u64(v, seq);
    for (int cf = 0; cf < STOR_CF_COUNT; cf++)
        rocksdb_writebatch_put_cf(wb, s->cf[cf], STOR_APPLIED_KEY, STOR_APPLIED_KEYLEN, v, 8);
}

/* Not while the flusher's writes fail: RocksDB (7.8, as Debian builds it)
 * asserts when its WAL is synced after a failed append, and there is
 * nothing new to make durable anyway. */
int wb_sync_wal(struct stor *s)
{
    if (__atomic_load_n(&s->q.werr, __ATOMIC_ACQUIRE))
        return KV_ESTORAGE;
    char *err = NULL;
    rocksdb_flush_wal(s->db, 1, &err);
    return err ? stor_take_err(err) : 0;
}

/* Makes everything RocksDB holds so far durable without a WAL: every
 * column family's memtable goes to an SST file (RocksDB syncs those). */
int wb_flush_memtables(struct stor *s)
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

/* Deletes the closed journal files whose records are all up to upto; s->q.mu
 * held, dropped around each unlink. */
static void segs_drop_upto(struct stor *s, uint64_t upto)
{
    while (s->q.nsegs && s->q.segs[0].last <= upto) {
        char path[4096];
        wb_seg_path(s->j.dir, s->q.segs[0].first, path, sizeof path);
        memmove(s->q.segs, s->q.segs + 1, (s->q.nsegs - 1) * sizeof *s->q.segs);
        s->q.nsegs--;
        pthread_mutex_unlock(&s->q.mu);
        unlink(path);
        pthread_mutex_lock(&s->q.mu);
    }
}

/* The flusher's file duties with the journal in shared memory: a journal
 * file goes once RocksDB has all its records (in its WAL, which a killed
 * process does not lose), and under appendfsync everysec RocksDB's WAL is
 * synced once a second, off the executor. */
static void flusher_files_shm(struct stor *s)
{
    segs_drop_upto(s, s->q.durable_seq);
    uint64_t now = stor_mono_us() / 1000;
    if (s->o.fsync == STOR_FSYNC_EVERYSEC && s->q.durable_seq > s->fl.wal_synced_seq &&
        now - s->fl.last_fsync_ms >= 1000) {
        uint64_t upto = s->q.durable_seq;
        pthread_mutex_unlock(&s->q.mu);
        int rc = wb_sync_wal(s);
        pthread_mutex_lock(&s->q.mu);
        if (rc == 0)
            s->fl.wal_synced_seq = upto;
        s->fl.last_fsync_ms = now;
    }
    /* Once a second, the journal's high-water mark on disk: what reached
     * the journal, and so may have been acknowledged. A reboot empties the
     * tmpfs; the next open compares the mark with what it finds. */
    uint64_t acked = s->q.tail->seq > s->q.durable_seq ? s->q.tail->seq : s->q.durable_seq;
    if (acked > s->fl.acked_mark && now - s->fl.acked_ms >= 1000) {
        pthread_mutex_unlock(&s->q.mu);
        int rc = wb_acked_write(s, acked);
        pthread_mutex_lock(&s->q.mu);
        if (rc == 0)
            s->fl.acked_mark = acked;
        s->fl.acked_ms = now;
    }
}

/* The flusher's file duties, with s->q.mu held on entry and exit (dropped
 * around every system call): delete journal files whose records are all in
 * RocksDB's SST files (after a memtable flush: the flusher writes no WAL);
 * fsync the journal once a second under appendfsync everysec. */
static void flusher_files(struct stor *s)
{
    if (s->j.shm) {
        flusher_files_shm(s);
        return;
    }
    if (s->q.nsegs && s->q.segs[0].last <= s->q.durable_seq) {
        uint64_t upto = s->q.durable_seq;
        pthread_mutex_unlock(&s->q.mu);
        int rc = wb_flush_memtables(s);
        pthread_mutex_lock(&s->q.mu);
        if (rc == 0)
            segs_drop_upto(s, upto);
    }
    uint64_t now = stor_mono_us() / 1000;
    if (s->q.nsync_fds && now - s->fl.last_fsync_ms >= 1000) {
        if (s->q.dir_unsynced) { /* a new file's name, before its records */
            s->q.dir_unsynced = false;
            pthread_mutex_unlock(&s->q.mu);
            (void)wb_fsync_path(s->j.dir);
            pthread_mutex_lock(&s->q.mu);
        }
        /* Retired files get their last fsync and are closed; the current
         * one stays for the next second. */
        size_t n = s->q.nsync_fds;
        int *fds = kv_xmemdup(s->q.sync_fds, n * sizeof *fds);
        s->q.sync_fds[0] = s->q.sync_fds[n - 1];
        s->q.nsync_fds = 1;
        pthread_mutex_unlock(&s->q.mu);
        for (size_t i = 0; i < n; i++) {
            fdatasync(fds[i]);
            if (i + 1 < n)
                close(fds[i]);
        }
        free(fds);
        pthread_mutex_lock(&s->q.mu);
        s->fl.last_fsync_ms = now;
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

void *wb_flusher_main(void *arg)
{
    struct stor *s = arg;
    pthread_setname_np(pthread_self(), "shmkv-flusher");
    stor_thread_quiet();
    pthread_mutex_lock(&s->q.mu);
    for (;;) {
        flusher_files(s);
        while (s->q.fcursor == s->q.tail && !s->q.stop) {
            s->q.flusher_idle = true;
            /* At least once a second: everysec's fsync is due then. */
            struct timespec until = wb_deadline_in(1000000);
            int w = pthread_cond_timedwait(&s->q.work, &s->q.mu, &until);
            s->q.flusher_idle = false;
            if (w != 0)
                flusher_files(s);
        }
        if (s->q.fcursor == s->q.tail || s->q.abandon)
            break; /* stopping with nothing left, or abandoned */
        /* Every part once the writers have gone quiet, or wait on the
         * flusher (back-pressure, a drain, the stop): the daemon has
         * nothing else to do (wb_parts_open). */
        bool quiet = false;
        if (s->o.flush_interval_ms > 0) {
            /* Let a batch fill: until the interval passes or a whole batch
             * waits (the commit that passes it signals; a spurious wake-up
             * waits again), but only while writes keep coming: after
             * WB_QUIET_MS without one, there is no batch to wait for. */
            uint64_t end = stor_mono_us() + (uint64_t)s->o.flush_interval_ms * 1000;
            size_t seen = s->q.bytes;
            s->q.flusher_filling = true;
            while (!s->q.stop && !s->q.flush_now && s->q.bytes < s->fl.batch_max) {
                uint64_t now = stor_mono_us();
                if (now >= end)
                    break;
                uint64_t step = end - now < WB_QUIET_MS * 1000 ? end - now : WB_QUIET_MS * 1000;
                struct timespec until = wb_deadline_in(step);
                if (pthread_cond_timedwait(&s->q.work, &s->q.mu, &until) == 0)
                    continue;
                if (s->q.bytes == seen) {
                    quiet = true; /* the writers went quiet */
                    break;
                }
                seen = s->q.bytes;
            }
            s->q.flusher_filling = false;
        }
        int nparts = quiet || s->q.flush_now || s->q.stop ? s->fl.nparts : s->fl.nload;
        s->q.flush_now = false;
        struct wb_rec *first = s->q.fcursor->next, *tail = s->q.tail, *last;
        size_t bytes;
        pthread_mutex_unlock(&s->q.mu);

        uint64_t t0 = stor_mono_us();
        char *err = flush_batch_write(s, first, tail, &last, &bytes, nparts);
        uint64_t us = stor_mono_us() - t0;

        if (err) {
            /* Nothing is dropped: the same records are tried again, every
             * 100 ms, until RocksDB takes them (after a full disk, once
             * RocksDB's own recovery has resumed it). Meanwhile the daemon
             * refuses new writes (stor_write_error). */
            int rc = stor_take_err(err);
            pthread_mutex_lock(&s->q.mu);
            if (!s->q.werr)
                fprintf(stderr, "shmkv: flusher: RocksDB write failed, retrying: %s\n",
                        stor_errmsg());
            snprintf(s->q.werr_msg, sizeof s->q.werr_msg, "%s", stor_errmsg());
            __atomic_store_n(&s->q.werr, rc, __ATOMIC_RELEASE);
            pthread_cond_broadcast(&s->q.done); /* a drain waiting on it gives up */
            if (s->q.stop) {
                s->q.abandon = true; /* the journal keeps the rest for the next start */
                break;
            }
            pthread_mutex_unlock(&s->q.mu);
            usleep(100 * 1000);
            pthread_mutex_lock(&s->q.mu);
            continue;
        }
        pthread_mutex_lock(&s->q.mu);
        if (s->q.werr) {
            fprintf(stderr, "shmkv: flusher: RocksDB writes again\n");
            __atomic_store_n(&s->q.werr, 0, __ATOMIC_RELEASE);
        }
        uint64_t n = last->seq - s->q.durable_seq;
        s->q.bytes -= bytes;
        s->q.fcursor = last;
        s->q.durable_seq = last->seq;
        s->q.batches++;
        s->q.sets += n;
        s->q.us_total += us;
        s->q.us_last = us;
        if (us > s->q.us_max)
            s->q.us_max = us;
        pthread_cond_broadcast(&s->q.done);
    }
    pthread_mutex_unlock(&s->q.mu);
    return NULL;
}
