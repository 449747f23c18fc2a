/*
 * enc — the byte layouts of shmkv's RocksDB records (docs/encoding.md).
 *
 * Layer: above the common base (kv_) only, so the client library can
 * compile it too. Only this module knows how keys and values are laid out;
 * everything above builds and parses records through these functions.
 *
 *   meta key   = db(1) | slot(2) | user_key
 *   sub key    = db(1) | slot(2) | key_len(4) | user_key | version(8) | field
 *   score key  = db(1) | slot(2) | key_len(4) | user_key | version(8) | score(8) | member
 *   rank key   = db(1) | slot(2) | key_len(4) | user_key | version(8) | gen(4) | level(1)
 *                | score(8) | member                          (value: count(8))
 *   expiry key = db(1) | expire_ms(8) | slot(2) | user_key      (value empty)
 *   meta value = flags(1) | expire_ms(8) | type-specific tail
 *
 * All integers are big-endian, so byte order is numeric order. Encoders write
 * into a caller buffer sized with the matching _len() function and return the
 * number of bytes written; they cannot fail. Decoders never trust their input:
 * they return 0 or KV_ECORRUPT and never read past the given length.
 */
#ifndef SHMKV_ENC_H
#define SHMKV_ENC_H

#include <stddef.h>
#include <stdint.h>

#include "kv_err.h"

/* The shared-memory cache keys a record by this byte, then the encoded
 * key: the daemon writes and libshmkv reads the same bytes. (The score
 * index is not cached.) */
enum { ENC_CACHE_META = 0, ENC_CACHE_SUB = 1 };

/* Redis types, the low 4 bits of a meta value's flags. 0 means "no key". */
enum enc_type {
    ENC_TYPE_NONE = 0,
    ENC_TYPE_STRING = 1,
    ENC_TYPE_HASH = 2,
    ENC_TYPE_SET = 3,
    ENC_TYPE_ZSET = 4,
    ENC_TYPE_LIST = 5,
};

/* Collection encodings, the high 4 bits of flags. COUNTED keeps the size in
 * the meta record (exact replies); BLIND keeps none and never reads before a
 * write (HSET/SADD replies count arguments, HLEN/SCARD count by scan). */
enum enc_coding {
    ENC_CODING_COUNTED = 0,
    ENC_CODING_BLIND = 1,
    /* A small hash, set, sorted set or list whose sub records all live in
     * its meta record (enc_meta.inl): Redis's listpack and intset
     * encodings (and a quicklist's one node). */
    ENC_CODING_INLINE = 2,
};

#define ENC_SLOTS 16384u
#define ENC_DB_MAX 255            /* db is one byte */
#define ENC_META_HDR 9            /* flags + expire_ms */
#define ENC_LIST_MID (1ull << 63) /* initial head and tail of a new list */

/* Big-endian load/store. p need not be aligned. Inline: every record key
 * and journal header goes through them, and out of line each cost a call
 * and a byte loop (about 250 instructions per SET together). */
static inline void enc_put_u16(char *p, uint16_t v)
{
    p[0] = (char)(v >> 8);
    p[1] = (char)v;
}

static inline void enc_put_u32(char *p, uint32_t v)
{
    p[0] = (char)(v >> 24);
    p[1] = (char)(v >> 16);
    p[2] = (char)(v >> 8);
    p[3] = (char)v;
}

static inline void enc_put_u64(char *p, uint64_t v)
{
    enc_put_u32(p, (uint32_t)(v >> 32));
    enc_put_u32(p + 4, (uint32_t)v);
}

static inline uint16_t enc_get_u16(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint16_t)((u[0] << 8) | u[1]);
}

static inline uint32_t enc_get_u32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return ((uint32_t)u[0] << 24) | ((uint32_t)u[1] << 16) | ((uint32_t)u[2] << 8) | u[3];
}

static inline uint64_t enc_get_u64(const char *p)
{
    return ((uint64_t)enc_get_u32(p) << 32) | enc_get_u32(p + 4);
}

/* CRC16-CCITT (XModem), the Redis Cluster key hash. */
uint16_t enc_crc16(const char *p, size_t n);

/* The Redis Cluster slot of a key: CRC16 of the hashtag — the bytes between
 * the first '{' and the first '}' after it, when that is non-empty — or of the
 * whole key otherwise, modulo 16384. */
uint16_t enc_slot(const char *key, size_t n);

/* A collection version: (ms << 11) | counter, counter in 0..2047. */
static inline uint64_t enc_version_make(uint64_t ms, uint32_t counter)
{
    return (ms << 11) | (counter & 0x7ffu);
}

/* Order-preserving encoding of a double: the big-endian bytes compare as the
 * numbers do (-inf < ... < -0.0 < +0.0 < ... < +inf). NaN has no place in
 * that order and is refused with KV_EINVAL. */
int enc_score_put(char *out8, double d);
double enc_score_get(const char *p8);

/* Meta key. */
static inline size_t enc_meta_key_len(size_t klen)
{
    return 3 + klen;
}
size_t enc_meta_key(char *out, unsigned db, uint16_t slot, const char *key, size_t klen);
/* Splits a meta key; *key points into p. */
int enc_meta_key_decode(const char *p, size_t n, unsigned *db, uint16_t *slot, const char **key,
                        size_t *klen);

/* Expiry index key: one per meta record written with an expiry, ordered by
 * db, then time, so active expiry reads only what is due. The tail after
 * expire_ms is the meta key's tail (slot | user_key). */
static inline size_t enc_expiry_key_len(size_t klen)
{
    return 1 + 8 + 2 + klen;
}
size_t enc_expiry_key(char *out, unsigned db, uint64_t expire_ms, uint16_t slot, const char *key,
                      size_t klen);
/* Splits an expiry key and rebuilds its meta key into meta (room for
 * n - 8 bytes); *metan is its length. */
int enc_expiry_key_decode(const char *p, size_t n, unsigned *db, uint64_t *expire_ms, char *meta,
                          size_t *metan);

/* The prefix every sub and score key of one collection version shares. A sub
 * key is this prefix followed by the field; a score key is this prefix
 * followed by score(8) and the member. */
static inline size_t enc_sub_prefix_len(size_t klen)
{
    return 3 + 4 + klen + 8;
}
size_t enc_sub_prefix(char *out, unsigned db, uint16_t slot, const char *key, size_t klen,
                      uint64_t version);

/* A parsed sub or score key. Pointers point into the decoded buffer. */
struct enc_sub {
    unsigned db;
    uint16_t slot;
    const char *key;
    size_t klen;
    uint64_t version;
    const char *field; /* the rest: field, or score(8)|member for score keys */
    size_t flen;
};
int enc_sub_decode(const char *p, size_t n, struct enc_sub *out);

/* A decoded meta value. For strings, value/vlen point into the decoded
 * buffer; for collections version and size (and head/tail for lists) are
 * set. size is 0 and meaningless for BLIND collections. */
struct enc_meta {
    uint8_t type;   /* enum enc_type */
    uint8_t coding; /* enum enc_coding */
    uint64_t expire_ms;
    uint64_t version;
    uint64_t size;
    uint64_t head, tail; /* lists: element positions [head, tail) */
    /* Sorted sets: the rank index (db_zrix.c). ENC_RANK_ON | generation
     * while the set has one; the last generation, the bit clear, once it
     * was dropped; 0 (and no bytes in the record) if it never had one. */
    uint32_t rank;
    const char *value; /* strings */
    size_t vlen;
    /* INLINE collections: the sub records, as enc_inline_* lay them out. */
    const char *inl;
    size_t inln;
};

#define ENC_RANK_ON 0x80000000u
#define ENC_RANK_GEN 0x7fffffffu

/* The prefix every rank key of one index generation shares: a sub prefix,
 * then gen(4). A level's keys add level(1); its first key, the level's
 * head, ends there, and the others add the score key's tail
 * (score(8) | member) of the member they stand for. */
static inline size_t enc_rank_prefix_len(size_t klen)
{
    return 3 + 4 + klen + 8 + 4;
}

/* An INLINE collection's sub records, in its meta value after its fixed
 * tail (version and size; a list's head and tail too): for each, in
 * sub-key order (the field's bytes, db_bytes_cmp),
 *   varint(field_len) | field | varint(value_len) | value
 * with the field and value its sub record would have (a hash field's
 * value, nothing for a set member, a sorted-set member's score(8), a list
 * element's position(8) and the element).
 * varint: LEB128, 7 bits a byte, low first, at most 5 bytes. */
size_t enc_varint_len(uint32_t v);
size_t enc_varint_put(char *out, uint32_t v);
/* The record at *off of an inline payload p (n bytes), advancing *off:
 * 1 with f, v pointing into p; 0 at the end; KV_ECORRUPT for bytes that
 * do not parse (a length past the end, a varint too long). */
int enc_inline_next(const char *p, size_t n, size_t *off, const char **f, size_t *fn,
                    const char **v, size_t *vn);
/* Finds field f in payload p: 1 with *v, *vn; 0 when absent;
 * KV_ECORRUPT. The records must be in order (it stops past f). */
int enc_inline_find(const char *p, size_t n, const char *f, size_t fn, const char **v, size_t *vn);

size_t enc_meta_value_len(const struct enc_meta *m);
size_t enc_meta_value(char *out, const struct enc_meta *m);
int enc_meta_value_decode(const char *p, size_t n, struct enc_meta *m);

/* Reads only flags and expiry: what a compaction filter or a shm reader needs
 * to decide liveness without decoding the rest. */
int enc_meta_peek(const char *p, size_t n, uint8_t *type, uint64_t *expire_ms);

#endif
