/*
 * kv_sha1 — SHA-1. See kv_sha1.h.
 *
 * The plain form of the algorithm: 80 rounds over each 64-byte block, the
 * message padded with a 1 bit, zeros and its length in bits (big-endian).
 * DEBUG DIGEST hashes every key and element of the data set a few times
 * over, so this is a debugging tool's speed, not a hot path's.
 */
#include "kv_sha1.h"

#include <string.h>

static uint32_t rol(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

/* Hashes one 64-byte block into s->h. */
static void sha1_block(struct kv_sha1 *s, const unsigned char *b)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
               (uint32_t)b[4 * i + 2] << 8 | (uint32_t)b[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = s->h[0], bb = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (bb & c) | (~bb & d);
            k = 0x5a827999u;
        } else if (i < 40) {
            f = bb ^ c ^ d;
            k = 0x6ed9eba1u;
        } else if (i < 60) {
            f = (bb & c) | (bb & d) | (c & d);
            k = 0x8f1bbcdcu;
        } else {
            f = bb ^ c ^ d;
            k = 0xca62c1d6u;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(bb, 30);
        bb = a;
        a = t;
    }
    s->h[0] += a;
    s->h[1] += bb;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
}

void kv_sha1_init(struct kv_sha1 *s)
{
    s->h[0] = 0x67452301u;
    s->h[1] = 0xefcdab89u;
    s->h[2] = 0x98badcfeu;
    s->h[3] = 0x10325476u;
    s->h[4] = 0xc3d2e1f0u;
    s->len = 0;
}

void kv_sha1_update(struct kv_sha1 *s, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t have = (size_t)(s->len % 64);
    s->len += n;
    if (have) { /* fill the block begun by an earlier call */
        size_t take = 64 - have < n ? 64 - have : n;
        memcpy(s->block + have, b, take);
        b += take;
        n -= take;
        if (have + take < 64)
            return;
        sha1_block(s, s->block);
    }
    for (; n >= 64; b += 64, n -= 64)
        sha1_block(s, b);
    memcpy(s->block, b, n);
}

void kv_sha1_final(struct kv_sha1 *s, unsigned char out[KV_SHA1_LEN])
{
    uint64_t bits = s->len * 8;
    unsigned char pad[72] = {0x80};
    /* 0x80, zeros up to 56 bytes into a block, then the 8-byte length. */
    size_t padn = 1 + (119 - (size_t)(s->len % 64)) % 64;
    kv_sha1_update(s, pad, padn);
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    kv_sha1_update(s, len, 8);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)s->h[i];
    }
}

void kv_sha1(const void *p, size_t n, unsigned char out[KV_SHA1_LEN])
{
    struct kv_sha1 s;
    kv_sha1_init(&s);
    kv_sha1_update(&s, p, n);
    kv_sha1_final(&s, out);
}
