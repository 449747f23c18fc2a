/*
 * shmc_layout — the shared-memory cache segment's ABI, defined once.
 *
 * The daemon (shmc_w.c) writes this layout and every client (shmc_r.c)
 * reads it, possibly built from another version of this file: a change to
 * anything here must bump SHMC_ABI. Everything inside the segment is an
 * offset from its first byte, never a pointer. Integers are in the host's
 * byte order (a segment never leaves its host).
 *
 *   [0, 4096)              struct shmc_hdr
 *   [index_off, +nb*64)    nb buckets of 64 bytes: seq(4) pad(4) slot[7](8 each)
 *   [log_off, +log_size)   the record store: two circular logs, "small" first
 *                          then "main" (S3-FIFO's two queues, docs/shm.md)
 *
 * A slot is 0 (empty) or tag(16) << 48 | (record offset / 8). The tag is
 * the top 16 bits of the key's hash, so most non-matching slots are skipped
 * without touching the record. A bucket's seq is odd while the daemon
 * changes anything its slots reach; a reader takes it before and checks it
 * after copying (docs/shm.md, "Reading").
 *
 * A record: struct shmc_rec, then key bytes, then value bytes, padded to a
 * multiple of 8.
 *
 * The hint segment (a second, read-write mapping) holds one byte per slot,
 * bucket * 8 + slot: a reader sets it to 1 on a hit when it is 0; the daemon
 * folds it into eviction and clears it. It is only ever a hint. After the
 * hint bytes, at ctr_off, come ctr_slots counter slots (struct shmc_ctr):
 * the daemon gives each attached client handle one (SHMKV.ATTACH) and reads
 * them for INFO; the handle alone writes its slot, with plain stores.
 */
#ifndef SHMKV_SHMC_LAYOUT_H
#define SHMKV_SHMC_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SHMC_MAGIC 0x31434b4d48535f5full /* "__SHMKC1" in memory order */
#define SHMC_ABI 5u /* 5: a meta record may carry its collection inline (encoding.md) */
#define SHMC_HDR_SIZE 4096u
#define SHMC_BUCKET_SIZE 64u
#define SHMC_SLOTS 7u       /* slots per bucket */
#define SHMC_HINT_STRIDE 8u /* hint bytes per bucket */
#define SHMC_GROUPS 256u    /* generations: one per Redis database */
#define SHMC_SOCK_MAX 108u
#define SHMC_CTR_SLOTS 1024u /* counter slots: attached handles counted at once */

enum shmc_state {
    SHMC_STATE_OPEN = 1,   /* the daemon serves and keeps the cache coherent */
    SHMC_STATE_CLOSED = 2, /* the daemon is shutting down: read nothing */
};

/* Record flags. */
enum {
    SHMC_REC_NEG = 1 << 0, /* a negative entry: the key is known to be absent */
    SHMC_REC_PAD = 1 << 1, /* filler to the end of a log; holds no key */
};

struct shmc_hdr {
    /* written once, before any client can map the segment */
    uint64_t magic;
    uint32_t abi;
    uint32_t hdr_size;   /* SHMC_HDR_SIZE */
    uint64_t seg_size;   /* bytes of the segment */
    uint64_t generation; /* random, new for every segment */
    uint64_t index_off;
    uint32_t nbuckets;                      /* a power of two */
    uint32_t max_record;                    /* no record is larger than this */
    uint64_t log_off, log_size, small_size; /* small log first, then main */
    uint64_t hint_size;                     /* bytes of the hint segment */
    uint64_t ctr_off;                       /* where the counter slots start in it */
    uint32_t ctr_slots;                     /* how many */
    uint32_t pad_ctr;
    uint32_t daemon_pid; /* for humans only: liveness is the lease below */
    uint32_t lease_ms;   /* how long one heartbeat keeps the cache valid */
    char socket_path[SHMC_SOCK_MAX];
    uint32_t hdr_crc; /* CRC32C of the bytes above it */
    uint32_t pad0;
    /* written while running (own cache lines, so hits never share them with
     * anything written often) */
    char line1[64] __attribute__((aligned(64)));
    uint64_t alive_until_ms; /* CLOCK_MONOTONIC_COARSE; 0 before the first beat */
    uint32_t state;          /* enum shmc_state */
    char pad1[52];
    uint32_t group_gen[SHMC_GROUPS] __attribute__((aligned(64)));
    /* SWAPDB's map from the database a client selects to the group (the
     * stored database) that holds it, under a sequence number that is odd
     * while the map changes: a reader takes it before and checks it after
     * its transaction, as a bucket's. */
    uint32_t dbmap_seq __attribute__((aligned(64)));
    uint8_t dbmap[SHMC_GROUPS];
};

struct shmc_bucket {
    uint32_t seq;
    uint32_t pad;
    uint64_t slot[SHMC_SLOTS];
};

struct shmc_rec {
    uint32_t size; /* bytes of the whole record, header and padding: a multiple of 8 */
    uint32_t klen;
    uint32_t vlen;
    uint8_t flags; /* SHMC_REC_* */
    uint8_t freq;  /* the daemon's eviction counter (0..3); readers ignore it */
    uint8_t group; /* a database: the record is dead when group_gen moved on */
    uint8_t queue; /* the daemon's: which log holds it */
    uint64_t hash;
    uint64_t
        expire_ms; /* absolute Unix ms, 0 for none: a reader treats an expired record as a miss */
    uint32_t gen;  /* group_gen[group] when written */
    uint32_t pad;
};

/* One attached handle's counts of its cache reads, in a cache line of its
 * own: only that handle writes it (a plain store per count, no atomic
 * operation on a hit), the daemon reads it. */
struct shmc_ctr {
    uint64_t hits;       /* commands answered from the segment */
    uint64_t misses;     /* cacheable commands the daemon answered */
    uint64_t retries;    /* reads tried again: the daemon was writing */
    uint64_t key_hits;   /* keys the answered commands found */
    uint64_t key_misses; /* ... and found absent */
    uint64_t pad[3];
};

_Static_assert(sizeof(struct shmc_ctr) == 64, "a counter slot is one cache line");
_Static_assert(sizeof(struct shmc_bucket) == SHMC_BUCKET_SIZE, "bucket is one cache line");
_Static_assert(sizeof(struct shmc_rec) == 40, "record header layout");
_Static_assert(sizeof(struct shmc_hdr) <= SHMC_HDR_SIZE, "header fits its page");
_Static_assert(offsetof(struct shmc_hdr, hdr_crc) % 4 == 0, "crc aligned");

#define SHMC_SLOT_OFF(s) (((s)&0xffffffffffffull) << 3)
#define SHMC_SLOT_TAG(s) ((uint16_t)((s) >> 48))
#define SHMC_SLOT_MAKE(tag, off) (((uint64_t)(tag) << 48) | ((uint64_t)(off) >> 3))

static inline size_t shmc_rec_size(size_t klen, size_t vlen)
{
    return (sizeof(struct shmc_rec) + klen + vlen + 7) & ~(size_t)7;
}

/* The key hash, part of the ABI: reader and writer must agree on every
 * bit. shmc_mix is a multiply-xorshift finalizer (also used by the daemon
 * for its own tables). The hash folds 16 bytes at a time with one 64x64 →
 * 128-bit multiply (high and low halves xored), so a hit's short key costs
 * three dependent multiplies, not one per 8 bytes plus a finalizer each:
 * on a hit whose bucket and record sit in the CPU caches the hash was
 * most of the look-up's time. The tail is read as two possibly
 * overlapping words, the length folded into the seed. ABI 2. */
static inline uint64_t shmc_mix(uint64_t h)
{
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}

static inline uint64_t shmc_fold(uint64_t a, uint64_t b)
{
    unsigned __int128 r = (unsigned __int128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t shmc_hash(const void *key, size_t n)
{
    const unsigned char *p = key;
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ ((uint64_t)n * 0xff51afd7ed558ccdull);
    uint64_t a = 0, b = 0;
    while (n > 16) {
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        seed = shmc_fold(a ^ 0x91d93080f9b439fdull, b ^ seed);
        p += 16;
        n -= 16;
    }
    if (n >= 8) {
        memcpy(&a, p, 8);
        memcpy(&b, p + n - 8, 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, p, 4);
        memcpy(&y, p + n - 4, 4);
        a = (uint64_t)x << 32 | y;
        b = 0;
    } else if (n) {
        a = (uint64_t)p[0] << 16 | (uint64_t)p[n >> 1] << 8 | p[n - 1];
        b = 0;
    } else {
        a = b = 0;
    }
    return shmc_fold(0x3ceaaf308142c8ebull ^ seed, shmc_fold(a ^ 0x627655daa05f1119ull, b ^ seed));
}

/* The bucket of a hash: its low bits. The tag: its top 16 bits, never 0
 * (0 marks an empty slot). */
static inline uint32_t shmc_bucket_of(uint64_t h, uint32_t nbuckets)
{
    return (uint32_t)h & (nbuckets - 1);
}
static inline uint16_t shmc_tag_of(uint64_t h)
{
    uint16_t t = (uint16_t)(h >> 48);
    return t ? t : 1;
}

#endif
