/*
 * shmc_r — the reader half of the shared-memory cache (see shmc_r.h and
 * docs/shm.md, "Reading").
 */
#include "shmc_r.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include <ck_pr.h>

#include "kv_crc.h"
#include "shmc_err.h"

/* Every region must lie inside the segment, in order, 8-aligned. */
static const char *hdr_problem(const struct shmc_hdr *h, size_t size, size_t hint_size)
{
    if (h->hdr_size != SHMC_HDR_SIZE || h->seg_size != size)
        return "sizes disagree with the segment";
    if (h->hdr_crc != kv_crc32c(0, h, offsetof(struct shmc_hdr, hdr_crc)))
        return "checksum mismatch";
    uint32_t nb = h->nbuckets;
    if (nb == 0 || (nb & (nb - 1)) || h->index_off != SHMC_HDR_SIZE)
        return "bad index geometry";
    uint64_t index_end = h->index_off + (uint64_t)nb * SHMC_BUCKET_SIZE;
    if (h->log_off < index_end || h->log_size > size || h->log_off > size - h->log_size ||
        (h->log_off | h->log_size | h->small_size) % 8 || h->small_size >= h->log_size)
        return "bad log geometry";
    if (h->max_record < sizeof(struct shmc_rec) || h->max_record > h->small_size)
        return "bad record limit";
    if (hint_size && (h->hint_size != hint_size || hint_size < (uint64_t)nb * SHMC_HINT_STRIDE ||
                      h->ctr_off < (uint64_t)nb * SHMC_HINT_STRIDE || h->ctr_off % 64 ||
                      h->ctr_off > hint_size ||
                      (hint_size - h->ctr_off) / sizeof(struct shmc_ctr) < h->ctr_slots))
        return "bad hint segment";
    return NULL;
}

int shmc_r_attach(struct shmc_r *r, int fd, int hint_fd, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    struct stat st, hst = {0};
    if (fstat(fd, &st) < 0)
        return shmc_fail(err, errlen, errno, "shm cache: %s", strerror(errno));
    if (hint_fd >= 0 && fstat(hint_fd, &hst) < 0)
        return shmc_fail(err, errlen, errno, "shm cache hints: %s", strerror(errno));
    if (st.st_size < (off_t)SHMC_HDR_SIZE)
        return shmc_fail(err, errlen, EBADMSG, "shm cache: segment too small for a header");
    size_t size = (size_t)st.st_size;
    const char *seg = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (seg == MAP_FAILED)
        return shmc_fail(err, errlen, errno, "shm cache: cannot map: %s", strerror(errno));
    madvise((void *)seg, size, MADV_HUGEPAGE); /* see shmc_w.c */
    const struct shmc_hdr *h = (const struct shmc_hdr *)seg;
    int rc = 0;
    const char *why;
    if (h->magic != SHMC_MAGIC) {
        rc = shmc_fail(err, errlen, EBADMSG, "shm cache: not a shmkv segment (bad magic)");
    } else if (h->abi != SHMC_ABI) {
        rc = shmc_fail(err, errlen, EPROTO, "shm cache: ABI version %u, this library reads %u",
                       h->abi, SHMC_ABI);
    } else if ((why = hdr_problem(h, size, hint_fd >= 0 ? (size_t)hst.st_size : 0))) {
        rc = shmc_fail(err, errlen, EBADMSG, "shm cache: corrupt header: %s", why);
    }
    if (rc) {
        munmap((void *)seg, size);
        return rc;
    }
    if (hint_fd >= 0) {
        void *hp = mmap(NULL, (size_t)hst.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, hint_fd, 0);
        if (hp == MAP_FAILED) {
            munmap((void *)seg, size);
            return shmc_fail(err, errlen, errno, "shm cache hints: cannot map: %s",
                             strerror(errno));
        }
        r->hints = hp;
        r->hint_size = (size_t)hst.st_size;
    }
    r->seg = seg;
    r->size = size;
    r->h = h;
    r->bk = (const struct shmc_bucket *)(seg + h->index_off);
    r->nb = h->nbuckets;
    r->max_record = h->max_record;
    r->log_lo = h->log_off;
    r->log_mid = h->log_off + h->small_size;
    r->log_hi = h->log_off + h->log_size;
    r->generation = h->generation;
    return 0;
}

bool shmc_r_dbmap(const struct shmc_r *r, unsigned db, unsigned *group, uint32_t *seq)
{
    *seq = ck_pr_load_32(&r->h->dbmap_seq);
    ck_pr_fence_load();
    *group = ck_pr_load_8(&r->h->dbmap[db & (SHMC_GROUPS - 1)]);
    return !(*seq & 1);
}

bool shmc_r_dbmap_same(const struct shmc_r *r, uint32_t seq)
{
    ck_pr_fence_load();
    return ck_pr_load_32(&r->h->dbmap_seq) == seq;
}

struct shmc_ctr *shmc_r_ctr(const struct shmc_r *r, unsigned slot)
{
    if (!r->hints || slot >= r->h->ctr_slots)
        return NULL;
    return (struct shmc_ctr *)(r->hints + r->h->ctr_off) + slot;
}

void shmc_r_detach(struct shmc_r *r)
{
    if (r->seg)
        munmap((void *)r->seg, r->size);
    if (r->hints)
        munmap(r->hints, r->hint_size);
    memset(r, 0, sizeof *r);
}

bool shmc_r_alive(const struct shmc_r *r, uint64_t now_mono_ms)
{
    return ck_pr_load_32(&r->h->state) == SHMC_STATE_OPEN &&
           now_mono_ms < ck_pr_load_64(&r->h->alive_until_ms);
}

void shmc_rtx_begin(struct shmc_rtx *t, const struct shmc_r *r, unsigned group)
{
    t->r = r;
    t->group = group & 0xff;
    t->gen = ck_pr_load_32(&r->h->group_gen[t->group]);
    t->now_ms = 0;
    t->n = 0;
    t->cap = SHMC_RTX_INLINE;
    t->tb = t->inl;
}

/* Remembers bucket bi at seq; false if the transaction saw it at another. */
static bool note_bucket(struct shmc_rtx *t, uint32_t bi, uint32_t seq)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->tb[i][0] == bi)
            return t->tb[i][1] == seq;
    if (t->n == t->cap) {
        size_t cap = t->cap * 2;
        uint32_t(*nb)[2] = malloc(cap * sizeof *nb);
        if (!nb)
            return false; /* no memory: report a retry, the daemon answers */
        memcpy(nb, t->tb, t->n * sizeof *nb);
        if (t->tb != t->inl)
            free(t->tb);
        t->tb = nb;
        t->cap = cap;
    }
    t->tb[t->n][0] = bi;
    t->tb[t->n][1] = seq;
    t->n++;
    return true;
}

/* Whether a record header at off, as copied, describes bytes inside the
 * log it starts in. */
static bool rec_sane(const struct shmc_r *r, uint64_t off, const struct shmc_rec *h)
{
    uint64_t end = off < r->log_mid ? r->log_mid : r->log_hi;
    return h->size >= sizeof *h && h->size <= r->max_record && h->size <= end - off &&
           (uint64_t)h->klen + h->vlen <= h->size - sizeof *h;
}

static uint64_t expiry_now(void)
{
    static uint64_t res_ms; /* the same for every thread: a benign race */
    if (!res_ms) {
        struct timespec r;
        clock_getres(CLOCK_REALTIME_COARSE, &r);
        res_ms = (uint64_t)r.tv_sec * 1000 + (uint64_t)r.tv_nsec / 1000000 + 1;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + res_ms;
}

int shmc_rtx_peek(struct shmc_rtx *t, const void *key, size_t klen, const char **v, size_t *vlen)
{
    const struct shmc_r *r = t->r;
    uint64_t hash = shmc_hash(key, klen);
    uint32_t bi = shmc_bucket_of(hash, r->nb);
    uint16_t tag = shmc_tag_of(hash);
    const struct shmc_bucket *b = &r->bk[bi];
    uint32_t seq = ck_pr_load_32(&b->seq);
    if ((seq & 1) || !note_bucket(t, bi, seq))
        return SHMC_RETRY;
    ck_pr_fence_load(); /* the sequence before the slots and records */
    for (unsigned i = 0; i < SHMC_SLOTS; i++) {
        uint64_t s = ck_pr_load_64(&b->slot[i]);
        if (!s || SHMC_SLOT_TAG(s) != tag)
            continue;
        uint64_t off = SHMC_SLOT_OFF(s);
        if (off < r->log_lo || off > r->log_hi - sizeof(struct shmc_rec) || off % 8)
            return SHMC_RETRY; /* torn or hostile: the daemon decides */
        struct shmc_rec h;
        memcpy(&h, r->seg + off, sizeof h);
        if (!rec_sane(r, off, &h))
            return SHMC_RETRY;
        if (h.hash != hash || h.klen != klen || h.group != t->group || (h.flags & SHMC_REC_PAD) ||
            memcmp(r->seg + off + sizeof h, key, klen) != 0)
            continue;
        if (h.gen != t->gen)
            return SHMC_MISS;
        if (r->hints) {
            /* Written only when it changes: a hot record's hint is set. */
            uint8_t *hint = &r->hints[(size_t)bi * SHMC_HINT_STRIDE + i];
            if (!ck_pr_load_8(hint))
                ck_pr_store_8(hint, 1);
        }
        if (h.flags & SHMC_REC_NEG)
            return SHMC_NEG;
        if (h.expire_ms) {
            if (!t->now_ms)
                t->now_ms = expiry_now();
            if (h.expire_ms <= t->now_ms)
                return SHMC_MISS;
        }
        *v = r->seg + off + sizeof h + klen;
        *vlen = h.vlen;
        return SHMC_HIT;
    }
    return SHMC_MISS;
}

int shmc_rtx_get(struct shmc_rtx *t, const void *key, size_t klen, struct shmc_buf *out)
{
    const char *v;
    size_t n;
    int rc = shmc_rtx_peek(t, key, klen, &v, &n);
    if (rc != SHMC_HIT)
        return rc;
    if (n > out->cap) {
        char *p = realloc(out->p, n);
        if (!p)
            return SHMC_RETRY;
        out->p = p;
        out->cap = n;
    }
    if (n)
        memcpy(out->p, v, n);
    out->len = n;
    return SHMC_HIT;
}

int shmc_rtx_end(struct shmc_rtx *t)
{
    ck_pr_fence_load(); /* every copy before the sequences are checked again */
    int rc = 0;
    for (size_t i = 0; i < t->n && !rc; i++)
        if (ck_pr_load_32(&t->r->bk[t->tb[i][0]].seq) != t->tb[i][1])
            rc = SHMC_RETRY;
    if (!rc && ck_pr_load_32(&t->r->h->group_gen[t->group]) != t->gen)
        rc = SHMC_RETRY;
    if (t->tb != t->inl)
        free(t->tb);
    t->tb = t->inl;
    t->cap = SHMC_RTX_INLINE;
    t->n = 0;
    return rc;
}
