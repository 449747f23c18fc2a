/*
 * shmc_w — the daemon's half of the shared-memory cache (see shmc_w.h and
 * docs/shm.md).
 *
 * The one rule every function here keeps: before a byte that a slot may
 * reach is overwritten, that slot's bucket is odd (touched in the current
 * transaction), and the store making it odd is ordered before the
 * overwrite. A reader that copied anything from a record being replaced
 * then sees its bucket's sequence changed and throws the copy away.
 */
#include "shmc_w.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <ck_pr.h>

#include "kv_crc.h"
#include "shmc_err.h"

enum { Q_SMALL = 0, Q_MAIN = 1 };

/* A circular log: positions grow forever; byte offset = base + pos % size. */
struct wlog {
    uint64_t base, size, head, tail;
};

struct shmc_w {
    char *seg;
    size_t size;
    int fd, hfd;
    uint8_t *hints;
    size_t hint_size;
    struct shmc_ctr *ctr; /* in the hint segment: SHMC_CTR_SLOTS of them */
    struct shmc_hdr *h;
    struct shmc_bucket *bk;
    uint32_t nb;
    struct wlog q[2];
    size_t max_record;
    bool huge;       /* the segment is on 2 MiB hugetlb pages */
    uint32_t *ghost; /* S3-FIFO's ghost queue, lossy: one fingerprint per cell */
    uint32_t ghost_mask;
    uint32_t *touched; /* buckets made odd in this transaction */
    size_t ntouched, captouched;
    int depth;
    char *tmp;             /* a record being given another round */
    bool main_filled;      /* the main log has once had no room */
    uint64_t slot_changes; /* any slot set: a slot found before may have moved */
    /* The slot the last shmc_w_get or shmc_w_peek found its key in: the
     * daemon peeks at a key it is about to write (the key counts) and then
     * puts it, and the put starts from here instead of hashing and
     * searching the bucket again. */
    struct {
        uint32_t bi;
        unsigned si;
        bool set;
    } last;
    struct shmc_w_stats st;
};

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q && n)
        abort(); /* as the rest of the daemon: out of memory is fatal */
    return q;
}

/* ---- creation ---- */

/* The segment's seals: its size is fixed, and no mapping made from now on
 * may write (the daemon's own, made before, still does). */
#define SEG_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL)
#define SHMC_HUGE_PAGE ((size_t)2 << 20)

/* Two MiB pages from the kernel's hugetlb pool, where it was given one
 * (vm.nr_hugepages) with room for the whole segment: a uniform random hit
 * then costs no TLB miss. The memfd is sealed at once, the daemon's own
 * mapping being made already, so that a kernel which cannot seal hugetlb
 * files falls back here rather than failing later. Returns the mapping
 * (*fd set, *size rounded down to whole pages), or NULL. */
static char *seg_map_huge(size_t *size, int *fd)
{
    size_t hsize = *size & ~(SHMC_HUGE_PAGE - 1);
    if (hsize == 0)
        return NULL; /* below one huge page */
    int f = memfd_create("shmkv-cache", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
    if (f < 0)
        return NULL;
    char *p = MAP_FAILED;
    if (ftruncate(f, (off_t)hsize) == 0)
        p = mmap(NULL, hsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, f, 0);
    if (p != MAP_FAILED && fcntl(f, F_ADD_SEALS, SEG_SEALS) == 0) {
        *size = hsize;
        *fd = f;
        return p;
    }
    if (p != MAP_FAILED)
        munmap(p, hsize);
    close(f);
    return NULL;
}

int shmc_w_create(struct shmc_w **out, const struct shmc_w_opts *o, char *err, size_t errlen)
{
    *out = NULL;
    size_t size = o->size & ~(size_t)4095;
    if (size < (1u << 20))
        return shmc_fail(err, errlen, EINVAL, "shm cache size %zu is below 1 MiB", o->size);

    struct shmc_w *w = calloc(1, sizeof *w);
    if (!w)
        abort();
    w->fd = w->hfd = -1;
    if (o->huge_pages)
        w->seg = seg_map_huge(&size, &w->fd);
    w->huge = w->seg != NULL;
    if (!w->huge)
        w->fd = memfd_create("shmkv-cache", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    w->size = size;

    /* An eighth for the index, at about one slot per 64 bytes of log. */
    uint32_t nb = 64;
    while ((uint64_t)nb * 2 * SHMC_BUCKET_SIZE <= size / 8 && nb < (1u << 30))
        nb *= 2;
    uint64_t index_off = SHMC_HDR_SIZE;
    uint64_t log_off = index_off + (uint64_t)nb * SHMC_BUCKET_SIZE;
    uint64_t log_size = (size - log_off) & ~(uint64_t)7;
    uint64_t small = (log_size / 10) & ~(uint64_t)7;
    size_t maxrec = o->max_record ? o->max_record : (1u << 20);
    if (maxrec > small / 4)
        maxrec = (small / 4) & ~(size_t)7;

    w->hfd = memfd_create("shmkv-cache-hints", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    size_t ctr_off = ((size_t)nb * SHMC_HINT_STRIDE + 63) & ~(size_t)63;
    w->hint_size = (ctr_off + SHMC_CTR_SLOTS * sizeof(struct shmc_ctr) + 4095) & ~(size_t)4095;
    int e = 0;
    if (w->fd < 0 || w->hfd < 0 || (!w->huge && ftruncate(w->fd, (off_t)size) < 0) ||
        ftruncate(w->hfd, (off_t)w->hint_size) < 0) {
        e = errno;
        shmc_w_destroy(w);
        return shmc_fail(err, errlen, e, "cannot create the shm cache: %s", strerror(e));
    }
    if (!w->huge)
        w->seg = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
    w->hints = mmap(NULL, w->hint_size, PROT_READ | PROT_WRITE, MAP_SHARED, w->hfd, 0);
    if (w->seg == MAP_FAILED || w->hints == MAP_FAILED) {
        e = errno;
        if (w->seg == MAP_FAILED)
            w->seg = NULL;
        if (w->hints == MAP_FAILED)
            w->hints = NULL;
        shmc_w_destroy(w);
        return shmc_fail(err, errlen, e, "cannot map the shm cache: %s", strerror(e));
    }
    /* Random hits cost a TLB miss each on 4 KiB pages; where the kernel
     * allows huge pages for shared memory on request, ask. */
    if (!w->huge)
        madvise(w->seg, size, MADV_HUGEPAGE);
    w->nb = nb;
    w->h = (struct shmc_hdr *)w->seg;
    w->bk = (struct shmc_bucket *)(w->seg + index_off);
    w->q[Q_SMALL] = (struct wlog){.base = log_off, .size = small};
    w->q[Q_MAIN] = (struct wlog){.base = log_off + small, .size = log_size - small};
    w->max_record = maxrec;
    uint32_t gn = 1;
    while (gn < nb * SHMC_SLOTS)
        gn *= 2;
    w->ghost = calloc(gn, sizeof *w->ghost);
    w->tmp = malloc(maxrec);
    if (!w->ghost || !w->tmp)
        abort();
    w->ghost_mask = gn - 1;

    struct shmc_hdr *h = w->h;
    h->magic = SHMC_MAGIC;
    h->abi = SHMC_ABI;
    h->hdr_size = SHMC_HDR_SIZE;
    h->seg_size = size;
    if (getrandom(&h->generation, sizeof h->generation, 0) != (ssize_t)sizeof h->generation)
        h->generation = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)w;
    h->index_off = index_off;
    h->nbuckets = nb;
    h->max_record = (uint32_t)maxrec;
    h->log_off = log_off;
    h->log_size = log_size;
    h->small_size = small;
    h->hint_size = w->hint_size;
    h->ctr_off = ctr_off;
    h->ctr_slots = SHMC_CTR_SLOTS;
    w->ctr = (struct shmc_ctr *)(w->hints + ctr_off);
    h->daemon_pid = (uint32_t)getpid();
    h->lease_ms = o->lease_ms ? o->lease_ms : 500;
    if (o->socket_path)
        snprintf(h->socket_path, sizeof h->socket_path, "%s", o->socket_path);
    h->hdr_crc = kv_crc32c(0, h, offsetof(struct shmc_hdr, hdr_crc));
    for (unsigned i = 0; i < SHMC_GROUPS; i++)
        h->dbmap[i] = (uint8_t)i;
    h->state = SHMC_STATE_OPEN;
    /* Clients may map it from now on: read-only, at this size, forever. */
    if ((!w->huge && fcntl(w->fd, F_ADD_SEALS, SEG_SEALS) < 0) ||
        fcntl(w->hfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
        e = errno;
        shmc_w_destroy(w);
        return shmc_fail(err, errlen, e, "cannot seal the shm cache: %s", strerror(e));
    }
    w->st.size = log_size;
    *out = w;
    return 0;
}

void shmc_w_close(struct shmc_w *w)
{
    if (w && w->h)
        ck_pr_store_32(&w->h->state, SHMC_STATE_CLOSED);
}

void shmc_w_destroy(struct shmc_w *w)
{
    if (!w)
        return;
    shmc_w_close(w);
    if (w->seg)
        munmap(w->seg, w->size);
    if (w->hints)
        munmap(w->hints, w->hint_size);
    if (w->fd >= 0)
        close(w->fd);
    if (w->hfd >= 0)
        close(w->hfd);
    free(w->ghost);
    free(w->touched);
    free(w->tmp);
    free(w);
}

int shmc_w_fd(const struct shmc_w *w)
{
    return w->fd;
}

bool shmc_w_huge(const struct shmc_w *w)
{
    return w->huge;
}

void shmc_w_dbmap(struct shmc_w *w, const uint8_t map[SHMC_GROUPS])
{
    struct shmc_hdr *h = w->h;
    ck_pr_store_32(&h->dbmap_seq, h->dbmap_seq + 1); /* odd: changing */
    ck_pr_fence_store();
    for (unsigned i = 0; i < SHMC_GROUPS; i++)
        ck_pr_store_8(&h->dbmap[i], map[i]);
    ck_pr_fence_store();
    ck_pr_store_32(&h->dbmap_seq, h->dbmap_seq + 1);
}

void shmc_w_ctr_read(const struct shmc_w *w, unsigned slot, struct shmc_ctr *out)
{
    const struct shmc_ctr *c = &w->ctr[slot];
    out->hits = ck_pr_load_64(&c->hits);
    out->misses = ck_pr_load_64(&c->misses);
    out->retries = ck_pr_load_64(&c->retries);
    out->key_hits = ck_pr_load_64(&c->key_hits);
    out->key_misses = ck_pr_load_64(&c->key_misses);
}

void shmc_w_ctr_clear(struct shmc_w *w, unsigned slot)
{
    struct shmc_ctr *c = &w->ctr[slot];
    ck_pr_store_64(&c->hits, 0);
    ck_pr_store_64(&c->misses, 0);
    ck_pr_store_64(&c->retries, 0);
    ck_pr_store_64(&c->key_hits, 0);
    ck_pr_store_64(&c->key_misses, 0);
}

int shmc_w_hint_fd(const struct shmc_w *w)
{
    return w->hfd;
}

const struct shmc_hdr *shmc_w_hdr(const struct shmc_w *w)
{
    return w->h;
}

void shmc_w_beat(struct shmc_w *w, uint64_t now_ms)
{
    ck_pr_store_64(&w->h->alive_until_ms, now_ms + w->h->lease_ms);
}

/* ---- transactions ---- */

static void touch(struct shmc_w *w, uint32_t bi)
{
    struct shmc_bucket *b = &w->bk[bi];
    if (b->seq & 1)
        return; /* already odd in this transaction */
    ck_pr_store_32(&b->seq, b->seq + 1);
    ck_pr_fence_store(); /* odd before anything it guards changes */
    if (w->ntouched == w->captouched) {
        w->captouched = w->captouched ? w->captouched * 2 : 64;
        w->touched = xrealloc(w->touched, w->captouched * sizeof *w->touched);
    }
    w->touched[w->ntouched++] = bi;
}

void shmc_w_begin(struct shmc_w *w)
{
    w->depth++;
}

void shmc_w_end(struct shmc_w *w)
{
    if (--w->depth > 0)
        return;
    ck_pr_fence_store(); /* every change before the buckets turn even */
    for (size_t i = 0; i < w->ntouched; i++) {
        struct shmc_bucket *b = &w->bk[w->touched[i]];
        ck_pr_store_32(&b->seq, b->seq + 1);
    }
    w->ntouched = 0;
}

/* ---- index ---- */

static inline struct shmc_rec *rec_at(const struct shmc_w *w, uint64_t off)
{
    return (struct shmc_rec *)(w->seg + off);
}

static inline const char *rec_key(const struct shmc_rec *r)
{
    return (const char *)(r + 1);
}

static bool rec_live(const struct shmc_w *w, const struct shmc_rec *r)
{
    return r->gen == w->h->group_gen[r->group];
}

/* The slot holding (group, key), or -1. */
static int find(const struct shmc_w *w, uint64_t hash, unsigned group, const void *key, size_t klen,
                uint32_t *bi)
{
    *bi = shmc_bucket_of(hash, w->nb);
    const struct shmc_bucket *b = &w->bk[*bi];
    uint16_t tag = shmc_tag_of(hash);
    for (unsigned i = 0; i < SHMC_SLOTS; i++) {
        uint64_t s = b->slot[i];
        if (!s || SHMC_SLOT_TAG(s) != tag)
            continue;
        const struct shmc_rec *r = rec_at(w, SHMC_SLOT_OFF(s));
        if (r->hash == hash && r->group == group && r->klen == klen &&
            memcmp(rec_key(r), key, klen) == 0)
            return (int)i;
    }
    return -1;
}

/* find() for a look-up, which notes where it found the key (w->last). */
static int find_noted(struct shmc_w *w, uint64_t hash, unsigned group, const void *key, size_t klen,
                      uint32_t *bi)
{
    int si = find(w, hash, group, key, klen, bi);
    w->last.set = si >= 0;
    if (si >= 0) {
        w->last.bi = *bi;
        w->last.si = (unsigned)si;
    }
    return si;
}

/* Whether the slot w->last noted holds (group, key) now: then *hash, *bi
 * and *si are what hashing and find() would give, since a key's record sits
 * in the bucket of its hash and the index holds one per key. The compare
 * reads lines the look-up loaded; a slot changed since, or a look-up of
 * another key, fails it and the caller searches. */
static bool last_holds(const struct shmc_w *w, unsigned group, const void *key, size_t klen,
                       uint64_t *hash, uint32_t *bi, int *si)
{
    if (!w->last.set)
        return false;
    uint64_t s = w->bk[w->last.bi].slot[w->last.si];
    if (!s)
        return false;
    const struct shmc_rec *r = rec_at(w, SHMC_SLOT_OFF(s));
    if (r->group != group || r->klen != klen || memcmp(rec_key(r), key, klen) != 0)
        return false;
    *hash = r->hash;
    *bi = w->last.bi;
    *si = (int)w->last.si;
    return true;
}

static void count(struct shmc_w *w, uint64_t s, int d)
{
    if (!s)
        return;
    w->st.records += (uint64_t)(int64_t)d;
    if (rec_at(w, SHMC_SLOT_OFF(s))->flags & SHMC_REC_NEG)
        w->st.negatives += (uint64_t)(int64_t)d;
}

static void slot_set(struct shmc_w *w, uint32_t bi, unsigned i, uint64_t v)
{
    w->slot_changes++;
    touch(w, bi);
    struct shmc_bucket *b = &w->bk[bi];
    count(w, b->slot[i], -1);
    ck_pr_store_64(&b->slot[i], v);
    count(w, v, +1);
    /* A new occupant's access hint starts clean. */
    uint8_t *hint = &w->hints[(size_t)bi * SHMC_HINT_STRIDE + i];
    if (*hint)
        ck_pr_store_8(hint, 0);
}

/* Puts v into a free slot of bucket bi, or over a victim when it is full:
 * the index is a cache too. */
static void slot_insert(struct shmc_w *w, uint32_t bi, uint64_t v, uint64_t hash)
{
    struct shmc_bucket *b = &w->bk[bi];
    for (unsigned i = 0; i < SHMC_SLOTS; i++)
        if (!b->slot[i]) {
            slot_set(w, bi, i, v);
            return;
        }
    /* Full: prefer a dead record, else one from the small log (not yet
     * proven useful), else any. */
    int victim = -1;
    for (unsigned i = 0; i < SHMC_SLOTS && victim < 0; i++)
        if (!rec_live(w, rec_at(w, SHMC_SLOT_OFF(b->slot[i]))))
            victim = (int)i;
    for (unsigned i = 0; i < SHMC_SLOTS && victim < 0; i++)
        if (rec_at(w, SHMC_SLOT_OFF(b->slot[i]))->queue == Q_SMALL)
            victim = (int)i;
    if (victim < 0)
        victim = (int)((hash >> 20) % SHMC_SLOTS);
    w->st.index_evictions++;
    slot_set(w, bi, (unsigned)victim, v);
}

/* The slot referencing the record at off, or -1: records nothing reaches
 * (replaced, dropped from a full bucket) are garbage. */
static int referenced(const struct shmc_w *w, const struct shmc_rec *r, uint64_t off, uint32_t *bi)
{
    *bi = shmc_bucket_of(r->hash, w->nb);
    const struct shmc_bucket *b = &w->bk[*bi];
    for (unsigned i = 0; i < SHMC_SLOTS; i++)
        if (b->slot[i] && SHMC_SLOT_OFF(b->slot[i]) == off)
            return (int)i;
    return -1;
}

static unsigned take_hint(struct shmc_w *w, uint32_t bi, unsigned i)
{
    uint8_t *hint = &w->hints[(size_t)bi * SHMC_HINT_STRIDE + i];
    uint8_t v = ck_pr_load_8(hint);
    if (!v)
        return 0;
    ck_pr_store_8(hint, 0);
    return 1; /* any value a client wrote means "read once"; trust no more */
}

/* ---- ghost ---- */

static void ghost_add(struct shmc_w *w, uint64_t hash)
{
    w->ghost[(hash >> 16) & w->ghost_mask] = (uint32_t)(hash >> 32) | 1;
}

static bool ghost_take(struct shmc_w *w, uint64_t hash)
{
    uint32_t *g = &w->ghost[(hash >> 16) & w->ghost_mask];
    if (*g != ((uint32_t)(hash >> 32) | 1))
        return false;
    *g = 0;
    return true;
}

/* ---- logs ---- */

static void evict_head(struct shmc_w *w, int qi);

/* Room for r more bytes at the tail without wrapping inside a record: how
 * many bytes that takes (r, or the rest of the log plus r), and whether the
 * log has them free. */
static bool log_fits(const struct wlog *L, uint64_t r)
{
    uint64_t to_end = L->size - L->tail % L->size;
    uint64_t need = r <= to_end ? r : to_end + r;
    return L->size - (L->tail - L->head) >= need;
}

/* Takes r bytes at the tail (evicting from the head as needed) and returns
 * their segment offset. Only free bytes are written here: nothing reaches
 * them. */
static uint64_t log_alloc(struct shmc_w *w, int qi, uint64_t r)
{
    struct wlog *L = &w->q[qi];
    while (!log_fits(L, r)) {
        if (qi == Q_MAIN)
            w->main_filled = true;
        if (L->head == L->tail) {
            /* Empty, but the rest before the end is too short: wrap. */
            L->tail += L->size - L->tail % L->size;
            L->head = L->tail;
            continue;
        }
        evict_head(w, qi);
    }
    uint64_t pt = L->tail % L->size, to_end = L->size - pt;
    if (r > to_end) {
        if (to_end >= sizeof(struct shmc_rec)) {
            struct shmc_rec *pad = rec_at(w, L->base + pt);
            memset(pad, 0, sizeof *pad);
            pad->size = (uint32_t)to_end;
            pad->flags = SHMC_REC_PAD;
        }
        L->tail += to_end;
        pt = 0;
    }
    L->tail += r;
    return L->base + pt;
}

/* Frees the record at the head of log qi: garbage is skipped; a live record
 * is promoted, given another round, or evicted, as S3-FIFO says. */
static void evict_head(struct shmc_w *w, int qi)
{
    struct wlog *L = &w->q[qi];
    uint64_t ph = L->head % L->size, to_end = L->size - ph;
    if (to_end < sizeof(struct shmc_rec)) {
        L->head += to_end; /* too short for a record: implicit padding */
        return;
    }
    uint64_t off = L->base + ph;
    struct shmc_rec *r = rec_at(w, off);
    uint32_t size = r->size;
    uint32_t bi;
    int si = (r->flags & SHMC_REC_PAD) ? -1 : referenced(w, r, off, &bi);
    if (si < 0) {
        L->head += size;
        return;
    }
    unsigned f = r->freq + take_hint(w, bi, (unsigned)si);
    uint16_t tag = shmc_tag_of(r->hash);
    if (!rec_live(w, r)) {
        slot_set(w, bi, (unsigned)si, 0);
        L->head += size;
        return;
    }
    if (qi == Q_SMALL) {
        /* Read since it came in, or not but the main log has room (it has
         * never been full): into the main log. S3-FIFO evicts only from
         * a full cache; without this, a cache large enough for every key
         * kept a tenth of them after a fill, the rest waiting to come back
         * through the ghost table one miss each. Main's evictions never
         * touch the small log, so r stays valid. */
        bool used = f >= 1, move = used;
        if (!move && !w->main_filled) {
            move = log_fits(&w->q[Q_MAIN], size);
            w->main_filled = !move;
        }
        if (move) {
            uint64_t off2 = log_alloc(w, Q_MAIN, size);
            memcpy(rec_at(w, off2), r, size);
            rec_at(w, off2)->freq = 0;
            rec_at(w, off2)->queue = Q_MAIN;
            slot_set(w, bi, (unsigned)si, SHMC_SLOT_MAKE(tag, off2));
            w->st.promotions += used;
        } else {
            ghost_add(w, r->hash);
            slot_set(w, bi, (unsigned)si, 0);
            w->st.evictions++;
        }
        L->head += size;
        return;
    }
    if (f == 0) {
        slot_set(w, bi, (unsigned)si, 0);
        L->head += size;
        w->st.evictions++;
        return;
    }
    /* Another round at the tail of main, with one access less. The copy
     * may land on its own old bytes: keep it aside, and unlink it (its
     * bucket odd) before the first byte is written. */
    memcpy(w->tmp, r, size);
    ((struct shmc_rec *)w->tmp)->freq = (uint8_t)((f > 3 ? 3 : f) - 1);
    slot_set(w, bi, (unsigned)si, 0);
    L->head += size;
    if (!log_fits(L, size)) {
        w->st.evictions++;
        return;
    }
    uint64_t off2 = log_alloc(w, Q_MAIN, size); /* fits: evicts nothing */
    memcpy(rec_at(w, off2), w->tmp, size);
    slot_set(w, bi, (unsigned)si, SHMC_SLOT_MAKE(tag, off2));
    w->st.reinserts++;
}

/* ---- records ---- */

/* Writes key's record; with only_cached, only over one already cached. */
static void put_rec(struct shmc_w *w, unsigned group, const void *key, size_t klen, const void *val,
                    size_t vlen, uint64_t expire_ms, uint8_t flags, bool only_cached)
{
    uint64_t hash;
    size_t r = shmc_rec_size(klen, vlen);
    uint32_t bi;
    int si;
    if (!last_holds(w, group, key, klen, &hash, &bi, &si)) {
        hash = shmc_hash(key, klen);
        si = find(w, hash, group, key, klen, &bi);
    }
    if (si < 0 && only_cached)
        return;
    if (r > w->max_record) {
        if (si >= 0)
            slot_set(w, bi, (unsigned)si, 0);
        w->st.refused++;
        return;
    }
    int qi = Q_SMALL;
    uint8_t freq = 0;
    if (si >= 0) {
        struct shmc_rec *old = rec_at(w, SHMC_SLOT_OFF(w->bk[bi].slot[si]));
        w->st.updates++;
        if (old->size == r) {
            /* Same size (a counter, a fixed-size value): rewritten where it
             * is, under its bucket's odd sequence like any change, so a
             * reader copying it meanwhile fails validation. It keeps its
             * place in its queue; no log space is taken, nothing evicted. */
            touch(w, bi);
            if (old->freq < 3)
                old->freq++;
            w->st.negatives += (uint64_t)((flags & SHMC_REC_NEG) != 0) -
                               (uint64_t)((old->flags & SHMC_REC_NEG) != 0);
            old->vlen = (uint32_t)vlen;
            old->flags = flags;
            old->expire_ms = expire_ms;
            old->gen = w->h->group_gen[group & 0xff];
            if (vlen)
                memcpy((char *)(old + 1) + klen, val, vlen);
            return;
        }
        qi = old->queue;
        freq = (uint8_t)(old->freq < 3 ? old->freq + 1 : 3);
    } else {
        if (ghost_take(w, hash)) {
            qi = Q_MAIN;
            w->st.ghost_hits++;
        }
        w->st.inserts++;
    }
    uint64_t changes = w->slot_changes;
    uint64_t off = log_alloc(w, qi, r);
    struct shmc_rec *n = rec_at(w, off);
    n->size = (uint32_t)r;
    n->klen = (uint32_t)klen;
    n->vlen = (uint32_t)vlen;
    n->flags = flags;
    n->freq = freq;
    n->group = (uint8_t)group;
    n->queue = (uint8_t)qi;
    n->hash = hash;
    n->expire_ms = expire_ms;
    n->gen = w->h->group_gen[group & 0xff];
    n->pad = 0;
    memcpy((char *)(n + 1), key, klen);
    if (vlen)
        memcpy((char *)(n + 1) + klen, val, vlen);
    /* The allocation may have moved or dropped the old record: if it
     * changed any slot, look again. */
    uint64_t s = SHMC_SLOT_MAKE(shmc_tag_of(hash), off);
    if (w->slot_changes != changes)
        si = find(w, hash, group, key, klen, &bi);
    if (si >= 0)
        slot_set(w, bi, (unsigned)si, s);
    else
        slot_insert(w, bi, s, hash);
}

void shmc_w_put(struct shmc_w *w, unsigned group, const void *key, size_t klen, const void *val,
                size_t vlen, uint64_t expire_ms)
{
    shmc_w_begin(w);
    put_rec(w, group, key, klen, val, vlen, expire_ms, 0, false);
    shmc_w_end(w);
}

void shmc_w_refresh(struct shmc_w *w, unsigned group, const void *key, size_t klen, const void *val,
                    size_t vlen, uint64_t expire_ms)
{
    shmc_w_begin(w);
    put_rec(w, group, key, klen, val, vlen, expire_ms, 0, true);
    shmc_w_end(w);
}

void shmc_w_put_neg(struct shmc_w *w, unsigned group, const void *key, size_t klen)
{
    shmc_w_begin(w);
    put_rec(w, group, key, klen, NULL, 0, 0, SHMC_REC_NEG, false);
    shmc_w_end(w);
}

void shmc_w_deleted(struct shmc_w *w, unsigned group, const void *key, size_t klen)
{
    shmc_w_begin(w);
    put_rec(w, group, key, klen, NULL, 0, 0, SHMC_REC_NEG, true);
    shmc_w_end(w);
}

void shmc_w_remove(struct shmc_w *w, unsigned group, const void *key, size_t klen)
{
    uint32_t bi;
    int si = find(w, shmc_hash(key, klen), group, key, klen, &bi);
    if (si < 0)
        return;
    shmc_w_begin(w);
    slot_set(w, bi, (unsigned)si, 0);
    w->st.removes++;
    shmc_w_end(w);
}

uint64_t shmc_w_prefetch(const struct shmc_w *w, const void *key, size_t klen)
{
    uint64_t hash = shmc_hash(key, klen);
    const char *b = (const char *)&w->bk[shmc_bucket_of(hash, w->nb)];
    __builtin_prefetch(b);
    __builtin_prefetch(b + sizeof(struct shmc_bucket) - 1); /* 72 bytes may span two lines */
    return hash;
}

int shmc_w_prefetch_rec(const struct shmc_w *w, uint64_t hash, size_t klen)
{
    const struct shmc_bucket *b = &w->bk[shmc_bucket_of(hash, w->nb)];
    uint16_t tag = shmc_tag_of(hash);
    int n = 0;
    for (unsigned i = 0; i < SHMC_SLOTS; i++) {
        uint64_t s = b->slot[i];
        if (s && SHMC_SLOT_TAG(s) == tag) {
            /* Records are 8-aligned, so the key's end is often a line on. */
            const char *r = (const char *)rec_at(w, SHMC_SLOT_OFF(s));
            __builtin_prefetch(r, 1);
            __builtin_prefetch(r + sizeof(struct shmc_rec) + klen - 1, 1);
            n++;
        }
    }
    return n;
}

void shmc_w_drop_group(struct shmc_w *w, unsigned group)
{
    uint32_t *g = &w->h->group_gen[group & 0xff];
    ck_pr_store_32(g, *g + 1);
}

int shmc_w_get(struct shmc_w *w, unsigned group, const void *key, size_t klen, const char **val,
               size_t *vlen)
{
    w->st.lookups++;
    uint32_t bi;
    int si = find_noted(w, shmc_hash(key, klen), group, key, klen, &bi);
    if (si < 0)
        return SHMC_W_MISS;
    struct shmc_rec *r = rec_at(w, SHMC_SLOT_OFF(w->bk[bi].slot[si]));
    if (!rec_live(w, r))
        return SHMC_W_MISS;
    /* The counter is the daemon's alone; readers never look at it, so
     * changing it in place breaks nothing they rely on. */
    if (r->freq < 3)
        r->freq++;
    if (r->flags & SHMC_REC_NEG) {
        w->st.neg_hits++;
        return SHMC_W_NEG;
    }
    w->st.hits++;
    *val = rec_key(r) + r->klen;
    *vlen = r->vlen;
    return SHMC_W_HIT;
}

int shmc_w_peek(struct shmc_w *w, unsigned group, const void *key, size_t klen, const char **val,
                size_t *vlen)
{
    uint32_t bi;
    int si = find_noted(w, shmc_hash(key, klen), group, key, klen, &bi);
    if (si < 0)
        return SHMC_W_MISS;
    const struct shmc_rec *r = rec_at(w, SHMC_SLOT_OFF(w->bk[bi].slot[si]));
    if (!rec_live(w, r))
        return SHMC_W_MISS;
    if (r->flags & SHMC_REC_NEG)
        return SHMC_W_NEG;
    *val = rec_key(r) + r->klen;
    *vlen = r->vlen;
    return SHMC_W_HIT;
}

void shmc_w_stats(const struct shmc_w *w, struct shmc_w_stats *st)
{
    *st = w->st;
    st->used = (w->q[0].tail - w->q[0].head) + (w->q[1].tail - w->q[1].head);
}

void shmc_w_stats_reset(struct shmc_w *w)
{
    struct shmc_w_stats keep = w->st;
    memset(&w->st, 0, sizeof w->st);
    w->st.size = keep.size;
    w->st.records = keep.records;
    w->st.negatives = keep.negatives;
}

/* ---- checks ---- */

static bool in_log(const struct wlog *L, uint64_t off)
{
    if (off < L->base || off >= L->base + L->size)
        return false;
    uint64_t p = off - L->base;
    uint64_t hp = L->head % L->size;
    uint64_t dist = (p + L->size - hp) % L->size;
    uint64_t used = L->tail - L->head;
    return used == L->size ? true : dist < used;
}

const char *shmc_w_check(const struct shmc_w *w)
{
    static char msg[160];
    uint64_t recs = 0, negs = 0;
    for (uint32_t bi = 0; bi < w->nb; bi++) {
        const struct shmc_bucket *b = &w->bk[bi];
        if (b->seq & 1) {
            snprintf(msg, sizeof msg, "bucket %u odd outside a transaction", bi);
            return msg;
        }
        for (unsigned i = 0; i < SHMC_SLOTS; i++) {
            uint64_t s = b->slot[i];
            if (!s)
                continue;
            uint64_t off = SHMC_SLOT_OFF(s);
            const struct shmc_rec *r = rec_at(w, off);
            int qi = in_log(&w->q[Q_SMALL], off)  ? Q_SMALL
                     : in_log(&w->q[Q_MAIN], off) ? Q_MAIN
                                                  : -1;
            if (qi < 0 || r->queue != qi) {
                snprintf(msg, sizeof msg, "bucket %u slot %u: offset %llu outside its log", bi, i,
                         (unsigned long long)off);
                return msg;
            }
            if (shmc_bucket_of(r->hash, w->nb) != bi || shmc_tag_of(r->hash) != SHMC_SLOT_TAG(s) ||
                shmc_hash(rec_key(r), r->klen) != r->hash ||
                r->size != shmc_rec_size(r->klen, r->vlen) || (r->flags & SHMC_REC_PAD)) {
                snprintf(msg, sizeof msg, "bucket %u slot %u: bad record", bi, i);
                return msg;
            }
            for (unsigned j = i + 1; j < SHMC_SLOTS; j++)
                if (b->slot[j] && SHMC_SLOT_OFF(b->slot[j]) == off) {
                    snprintf(msg, sizeof msg, "bucket %u: two slots reach one record", bi);
                    return msg;
                }
            recs++;
            negs += (r->flags & SHMC_REC_NEG) != 0;
        }
    }
    if (recs != w->st.records || negs != w->st.negatives) {
        snprintf(msg, sizeof msg, "counted %llu records %llu negative, stats say %llu/%llu",
                 (unsigned long long)recs, (unsigned long long)negs,
                 (unsigned long long)w->st.records, (unsigned long long)w->st.negatives);
        return msg;
    }
    for (int qi = 0; qi < 2; qi++) {
        const struct wlog *L = &w->q[qi];
        if (L->tail - L->head > L->size)
            return "a log holds more than its size";
        uint64_t p = L->head;
        while (p < L->tail) {
            uint64_t ph = p % L->size, to_end = L->size - ph;
            if (to_end < sizeof(struct shmc_rec)) {
                p += to_end;
                continue;
            }
            const struct shmc_rec *r = rec_at(w, L->base + ph);
            if (r->size == 0 || r->size % 8 || r->size > to_end) {
                snprintf(msg, sizeof msg, "log %d: bad record size %u at %llu", qi, r->size,
                         (unsigned long long)p);
                return msg;
            }
            p += r->size;
        }
        if (p != L->tail)
            return "a log's records do not end at its tail";
    }
    return NULL;
}
