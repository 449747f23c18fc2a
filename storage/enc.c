/*
 * enc — byte layouts of shmkv's RocksDB records. See enc.h.
 */
#include "enc.h"

#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

/* CRC16-CCITT, polynomial 0x1021, initial value 0, no reflection. Every
 * command computes its keys' slots, and a shm cache hit does little else,
 * so it goes eight bytes a step. tab[k][x] is the CRC of byte x followed
 * by k zero bytes: the CRC is linear and only 16 bits wide, so after two
 * bytes the old state has been shifted out entirely and each byte's
 * effect is one look-up, independent of the others. (Built at first use;
 * a racing double build writes the same values.) The byte-at-a-time loop
 * was 11% of a cache hit in the profile, four bytes a step 9%; eight
 * halve the dependent steps for a 16-byte key again (4 KiB of tables). */
static uint16_t crc16_tab[8][256];
static int crc16_ready;

static void crc16_build(void)
{
    for (unsigned i = 0; i < 256; i++) {
        uint16_t crc = (uint16_t)(i << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
        crc16_tab[0][i] = crc;
    }
    for (int k = 1; k < 8; k++)
        for (unsigned i = 0; i < 256; i++) {
            uint16_t c = crc16_tab[k - 1][i];
            crc16_tab[k][i] = (uint16_t)((c << 8) ^ crc16_tab[0][c >> 8]);
        }
    __atomic_store_n(&crc16_ready, 1, __ATOMIC_RELEASE);
}

uint16_t enc_crc16(const char *p, size_t n)
{
    if (!__atomic_load_n(&crc16_ready, __ATOMIC_ACQUIRE))
        crc16_build();
    const unsigned char *b = (const unsigned char *)p;
    uint16_t crc = 0;
    for (; n >= 8; n -= 8, b += 8)
        crc = crc16_tab[7][(crc >> 8) ^ b[0]] ^ crc16_tab[6][(crc & 0xff) ^ b[1]] ^
              crc16_tab[5][b[2]] ^ crc16_tab[4][b[3]] ^ crc16_tab[3][b[4]] ^ crc16_tab[2][b[5]] ^
              crc16_tab[1][b[6]] ^ crc16_tab[0][b[7]];
    if (n >= 4) {
        crc = crc16_tab[3][(crc >> 8) ^ b[0]] ^ crc16_tab[2][(crc & 0xff) ^ b[1]] ^
              crc16_tab[1][b[2]] ^ crc16_tab[0][b[3]];
        n -= 4;
        b += 4;
    }
    for (; n; n--, b++)
        crc = (uint16_t)((crc << 8) ^ crc16_tab[0][(crc >> 8) ^ *b]);
    return crc;
}

uint16_t enc_slot(const char *key, size_t n)
{
    const char *open = memchr(key, '{', n);
    if (open) {
        size_t rest = n - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return enc_crc16(open + 1, (size_t)(close - open - 1)) & (ENC_SLOTS - 1);
    }
    return enc_crc16(key, n) & (ENC_SLOTS - 1);
}

/* IEEE-754 bits, then: negative numbers flip every bit (so larger magnitude
 * sorts lower), non-negative ones flip the sign bit (so they sort above all
 * negatives). */
int enc_score_put(char *out8, double d)
{
    if (isnan(d))
        return KV_EINVAL;
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    u = (u >> 63) ? ~u : (u ^ (1ull << 63));
    enc_put_u64(out8, u);
    return 0;
}

double enc_score_get(const char *p8)
{
    uint64_t u = enc_get_u64(p8);
    u = (u >> 63) ? (u ^ (1ull << 63)) : ~u;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

size_t enc_meta_key(char *out, unsigned db, uint16_t slot, const char *key, size_t klen)
{
    out[0] = (char)db;
    enc_put_u16(out + 1, slot);
    if (klen)
        memcpy(out + 3, key, klen);
    return 3 + klen;
}

int enc_meta_key_decode(const char *p, size_t n, unsigned *db, uint16_t *slot, const char **key,
                        size_t *klen)
{
    if (n < 3)
        return KV_ECORRUPT;
    *db = (unsigned char)p[0];
    *slot = enc_get_u16(p + 1);
    if (*slot >= ENC_SLOTS)
        return KV_ECORRUPT;
    *key = p + 3;
    *klen = n - 3;
    return 0;
}

size_t enc_expiry_key(char *out, unsigned db, uint64_t expire_ms, uint16_t slot, const char *key,
                      size_t klen)
{
    out[0] = (char)db;
    enc_put_u64(out + 1, expire_ms);
    enc_put_u16(out + 9, slot);
    if (klen)
        memcpy(out + 11, key, klen);
    return 11 + klen;
}

int enc_expiry_key_decode(const char *p, size_t n, unsigned *db, uint64_t *expire_ms, char *meta,
                          size_t *metan)
{
    if (n < 11 || enc_get_u16(p + 9) >= ENC_SLOTS)
        return KV_ECORRUPT;
    *db = (unsigned char)p[0];
    *expire_ms = enc_get_u64(p + 1);
    meta[0] = p[0];
    memcpy(meta + 1, p + 9, n - 9);
    *metan = n - 8;
    return 0;
}

size_t enc_sub_prefix(char *out, unsigned db, uint16_t slot, const char *key, size_t klen,
                      uint64_t version)
{
    out[0] = (char)db;
    enc_put_u16(out + 1, slot);
    enc_put_u32(out + 3, (uint32_t)klen);
    if (klen)
        memcpy(out + 7, key, klen);
    enc_put_u64(out + 7 + klen, version);
    return 7 + klen + 8;
}

int enc_sub_decode(const char *p, size_t n, struct enc_sub *out)
{
    if (n < 7 + 8)
        return KV_ECORRUPT;
    out->db = (unsigned char)p[0];
    out->slot = enc_get_u16(p + 1);
    uint32_t klen = enc_get_u32(p + 3);
    if (out->slot >= ENC_SLOTS || klen > n - 15)
        return KV_ECORRUPT;
    out->key = p + 7;
    out->klen = klen;
    out->version = enc_get_u64(p + 7 + klen);
    out->field = p + 15 + klen;
    out->flen = n - 15 - klen;
    return 0;
}

static size_t meta_tail_len(uint8_t type)
{
    switch (type) {
    case ENC_TYPE_HASH:
    case ENC_TYPE_SET:
    case ENC_TYPE_ZSET:
        return 16;
    case ENC_TYPE_LIST:
        return 32;
    default:
        return 0;
    }
}

size_t enc_varint_len(uint32_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t enc_varint_put(char *out, uint32_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (char)(0x80 | (v & 0x7f));
        v >>= 7;
    }
    out[n++] = (char)v;
    return n;
}

static int varint_get(const char *p, size_t n, size_t *off, size_t *v)
{
    uint64_t r = 0;
    for (unsigned i = 0; i < 5; i++) {
        if (*off >= n)
            return KV_ECORRUPT;
        unsigned char b = (unsigned char)p[(*off)++];
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if (r > UINT32_MAX)
                return KV_ECORRUPT;
            *v = (size_t)r;
            return 0;
        }
    }
    return KV_ECORRUPT;
}

int enc_inline_next(const char *p, size_t n, size_t *off, const char **f, size_t *fn,
                    const char **v, size_t *vn)
{
    if (*off >= n)
        return 0;
    size_t o = *off;
    if (varint_get(p, n, &o, fn) || *fn > n - o)
        return KV_ECORRUPT;
    *f = p + o;
    o += *fn;
    if (varint_get(p, n, &o, vn) || *vn > n - o)
        return KV_ECORRUPT;
    *v = p + o;
    *off = o + *vn;
    return 1;
}

int enc_inline_find(const char *p, size_t n, const char *f, size_t fn, const char **v, size_t *vn)
{
    size_t off = 0, rn;
    const char *r;
    int rc;
    while ((rc = enc_inline_next(p, n, &off, &r, &rn, v, vn)) == 1) {
        int c = memcmp(r, f, rn < fn ? rn : fn);
        if (c == 0)
            c = (rn > fn) - (rn < fn);
        if (c == 0)
            return 1;
        if (c > 0)
            return 0;
    }
    return rc;
}

static bool has_inline(const struct enc_meta *m)
{
    return m->coding == ENC_CODING_INLINE && m->type >= ENC_TYPE_HASH && m->type <= ENC_TYPE_LIST;
}

size_t enc_meta_value_len(const struct enc_meta *m)
{
    if (m->type == ENC_TYPE_STRING)
        return ENC_META_HDR + m->vlen;
    if (has_inline(m))
        return ENC_META_HDR + meta_tail_len(m->type) + m->inln;
    return ENC_META_HDR + meta_tail_len(m->type) + (m->type == ENC_TYPE_ZSET && m->rank ? 4 : 0);
}

size_t enc_meta_value(char *out, const struct enc_meta *m)
{
    out[0] = (char)((m->coding << 4) | (m->type & 0x0f));
    enc_put_u64(out + 1, m->expire_ms);
    char *p = out + ENC_META_HDR;
    if (m->type == ENC_TYPE_STRING) {
        if (m->vlen)
            memcpy(p, m->value, m->vlen);
        return ENC_META_HDR + m->vlen;
    }
    enc_put_u64(p, m->version);
    enc_put_u64(p + 8, m->size);
    if (m->type == ENC_TYPE_LIST) {
        enc_put_u64(p + 16, m->head);
        enc_put_u64(p + 24, m->tail);
    }
    if (has_inline(m)) {
        size_t tail = meta_tail_len(m->type);
        if (m->inln)
            memcpy(p + tail, m->inl, m->inln);
        return ENC_META_HDR + tail + m->inln;
    }
    if (m->type == ENC_TYPE_ZSET && m->rank) {
        enc_put_u32(p + 16, m->rank);
        return ENC_META_HDR + 20;
    }
    return ENC_META_HDR + meta_tail_len(m->type);
}

int enc_meta_peek(const char *p, size_t n, uint8_t *type, uint64_t *expire_ms)
{
    if (n < ENC_META_HDR)
        return KV_ECORRUPT;
    uint8_t t = (uint8_t)p[0] & 0x0f, c = (uint8_t)p[0] >> 4;
    if (t < ENC_TYPE_STRING || t > ENC_TYPE_LIST || c > ENC_CODING_INLINE ||
        (c == ENC_CODING_INLINE && t == ENC_TYPE_STRING))
        return KV_ECORRUPT;
    *type = t;
    *expire_ms = enc_get_u64(p + 1);
    return 0;
}

int enc_meta_value_decode(const char *p, size_t n, struct enc_meta *m)
{
    memset(m, 0, sizeof *m);
    int rc = enc_meta_peek(p, n, &m->type, &m->expire_ms);
    if (rc)
        return rc;
    m->coding = (uint8_t)p[0] >> 4;
    const char *t = p + ENC_META_HDR;
    if (m->type == ENC_TYPE_STRING) {
        m->value = t;
        m->vlen = n - ENC_META_HDR;
        return 0;
    }
    size_t tail = meta_tail_len(m->type);
    if (m->coding == ENC_CODING_INLINE) {
        if (n < ENC_META_HDR + tail)
            return KV_ECORRUPT;
        m->inl = t + tail;
        m->inln = n - ENC_META_HDR - tail;
    } else if (m->type == ENC_TYPE_ZSET && n == ENC_META_HDR + tail + 4) {
        m->rank = enc_get_u32(t + 16);
        if (!m->rank)
            return KV_ECORRUPT; /* 0 is written as no field */
    } else if (n != ENC_META_HDR + tail) {
        return KV_ECORRUPT;
    }
    m->version = enc_get_u64(t);
    m->size = enc_get_u64(t + 8);
    if (m->type == ENC_TYPE_LIST) {
        m->head = enc_get_u64(t + 16);
        m->tail = enc_get_u64(t + 24);
        if (m->tail < m->head || m->tail - m->head != m->size)
            return KV_ECORRUPT;
    }
    return 0;
}
