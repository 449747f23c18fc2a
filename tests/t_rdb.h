/*
 * t_rdb — the tests' own writer of DUMP payloads in the encodings shmkvd
 * only reads: ziplists (Redis 6 and older), listpacks, intsets, quicklists
 * and integer-encoded strings. Written apart from daemon/rdb.c, from the
 * format's description, so that the decoder is checked against a second
 * reading of it; test_diff restores these payloads into redis-server too,
 * which shows this writer agrees with Redis's reader. It computes the
 * CRC-64 its own way too (a bit at a time).
 */
#ifndef SHMKV_T_RDB_H
#define SHMKV_T_RDB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct t_buf {
    unsigned char *p;
    size_t n, cap;
};

static inline void tb_put(struct t_buf *b, const void *s, size_t n)
{
    if (!n)
        return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static inline void tb_byte(struct t_buf *b, unsigned v)
{
    unsigned char c = (unsigned char)v;
    tb_put(b, &c, 1);
}

static inline void tb_le(struct t_buf *b, uint64_t v, int w)
{
    for (int i = 0; i < w; i++)
        tb_byte(b, (unsigned)(v >> (8 * i)) & 0xff);
}

static inline void tb_set_le(struct t_buf *b, size_t at, uint64_t v, int w)
{
    for (int i = 0; i < w; i++)
        b->p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

/* An RDB length: 6 bits, 14 bits, or 0x80 and 32 bits big-endian. */
static inline void tb_len(struct t_buf *b, uint64_t n)
{
    if (n < 64) {
        tb_byte(b, (unsigned)n);
    } else if (n < 16384) {
        tb_byte(b, 0x40 | (unsigned)(n >> 8));
        tb_byte(b, (unsigned)n & 0xff);
    } else {
        tb_byte(b, 0x80);
        for (int i = 3; i >= 0; i--)
            tb_byte(b, (unsigned)(n >> (8 * i)) & 0xff);
    }
}

static inline void tb_str(struct t_buf *b, const void *s, size_t n)
{
    tb_len(b, n);
    tb_put(b, s, n);
}

/* A string as an integer: 0xc0 int8, 0xc1 int16, 0xc2 int32. */
static inline void tb_intstr(struct t_buf *b, int64_t v)
{
    int w = v >= INT8_MIN && v <= INT8_MAX ? 0 : v >= INT16_MIN && v <= INT16_MAX ? 1 : 2;
    tb_byte(b, 0xc0 | (unsigned)w);
    tb_le(b, (uint64_t)v, 1 << w);
}

/* CRC-64/Jones, reflected, no final inversion: one bit at a time. */
static inline uint64_t t_crc64(const unsigned char *p, size_t n)
{
    uint64_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (crc & 1 ? 0x95ac9329ac4bc9b5ULL : 0);
    }
    return crc;
}

/* Version and CRC: the payload is complete. */
static inline void tb_footer(struct t_buf *b, unsigned version)
{
    tb_le(b, version, 2);
    tb_le(b, t_crc64(b->p, b->n), 8);
}

/* ---- ziplists ---- */

struct t_zl {
    struct t_buf b;
    size_t count, prev, last; /* entries; the last entry's size and offset */
};

static inline void tz_begin(struct t_zl *z)
{
    memset(z, 0, sizeof *z);
    tb_le(&z->b, 0, 8); /* size, tail offset, then the count: set by tz_end */
    tb_le(&z->b, 0, 2);
}

static inline void tz_entry(struct t_zl *z, const unsigned char *enc, size_t encn, const void *data,
                            size_t n)
{
    size_t start = z->b.n;
    if (z->prev < 254) {
        tb_byte(&z->b, (unsigned)z->prev);
    } else {
        tb_byte(&z->b, 0xfe);
        tb_le(&z->b, z->prev, 4);
    }
    tb_put(&z->b, enc, encn);
    tb_put(&z->b, data, n);
    z->last = start;
    z->prev = z->b.n - start;
    z->count++;
}

static inline void tz_str(struct t_zl *z, const void *s, size_t n)
{
    unsigned char e[5];
    size_t en;
    if (n < 64) {
        e[0] = (unsigned char)n;
        en = 1;
    } else if (n < 16384) {
        e[0] = (unsigned char)(0x40 | n >> 8);
        e[1] = (unsigned char)n;
        en = 2;
    } else {
        e[0] = 0x80;
        for (int i = 0; i < 4; i++)
            e[1 + i] = (unsigned char)(n >> (8 * (3 - i)));
        en = 5;
    }
    tz_entry(z, e, en, s, n);
}

static inline void tz_int(struct t_zl *z, int64_t v)
{
    unsigned char e[1], d[8];
    int w;
    if (v >= 0 && v <= 12) {
        e[0] = (unsigned char)(0xf1 + v);
        w = 0;
    } else if (v >= INT8_MIN && v <= INT8_MAX) {
        e[0] = 0xfe;
        w = 1;
    } else if (v >= INT16_MIN && v <= INT16_MAX) {
        e[0] = 0xc0;
        w = 2;
    } else if (v >= -(1 << 23) && v < (1 << 23)) {
        e[0] = 0xf0;
        w = 3;
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        e[0] = 0xd0;
        w = 4;
    } else {
        e[0] = 0xe0;
        w = 8;
    }
    for (int i = 0; i < w; i++)
        d[i] = (unsigned char)((uint64_t)v >> (8 * i));
    tz_entry(z, e, 1, d, (size_t)w);
}

static inline void tz_end(struct t_zl *z)
{
    tb_byte(&z->b, 0xff);
    tb_set_le(&z->b, 0, z->b.n, 4);
    tb_set_le(&z->b, 4, z->count ? z->last : 10, 4);
    tb_set_le(&z->b, 8, z->count < 65535 ? z->count : 65535, 2);
}

/* ---- listpacks ---- */

struct t_lp {
    struct t_buf b;
    size_t count;
};

static inline void tl_begin(struct t_lp *l)
{
    memset(l, 0, sizeof *l);
    tb_le(&l->b, 0, 6); /* size, count: set by tl_end */
}

/* An entry (encoding and data: size bytes at its start), then that size
 * again in 1 to 5 bytes of 7 bits, its most significant group first, every
 * byte but that first one marked with the high bit. The byte count steps
 * up one short of each power of 128, as Redis's writer does. */
static inline void tl_backlen(struct t_lp *l, size_t size)
{
    int n = size <= 127 ? 1 : size < 16383 ? 2 : size < 2097151 ? 3 : size < 268435455 ? 4 : 5;
    for (int i = 0; i < n; i++)
        tb_byte(&l->b, ((unsigned)(size >> (7 * (n - 1 - i))) & 127) | (i ? 128u : 0u));
    l->count++;
}

static inline void tl_str(struct t_lp *l, const void *s, size_t n)
{
    size_t start = l->b.n;
    if (n < 64) {
        tb_byte(&l->b, 0x80 | (unsigned)n);
    } else if (n < 4096) {
        tb_byte(&l->b, 0xe0 | (unsigned)(n >> 8));
        tb_byte(&l->b, (unsigned)n & 0xff);
    } else {
        tb_byte(&l->b, 0xf0);
        tb_le(&l->b, n, 4);
    }
    tb_put(&l->b, s, n);
    tl_backlen(l, l->b.n - start);
}

static inline void tl_int(struct t_lp *l, int64_t v)
{
    size_t start = l->b.n;
    if (v >= 0 && v <= 127) {
        tb_byte(&l->b, (unsigned)v);
    } else if (v >= -4096 && v <= 4095) {
        uint64_t u = (uint64_t)v & 0x1fff;
        tb_byte(&l->b, 0xc0 | (unsigned)(u >> 8));
        tb_byte(&l->b, (unsigned)u & 0xff);
    } else if (v >= INT16_MIN && v <= INT16_MAX) {
        tb_byte(&l->b, 0xf1);
        tb_le(&l->b, (uint64_t)v, 2);
    } else if (v >= -(1 << 23) && v < (1 << 23)) {
        tb_byte(&l->b, 0xf2);
        tb_le(&l->b, (uint64_t)v, 3);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        tb_byte(&l->b, 0xf3);
        tb_le(&l->b, (uint64_t)v, 4);
    } else {
        tb_byte(&l->b, 0xf4);
        tb_le(&l->b, (uint64_t)v, 8);
    }
    tl_backlen(l, l->b.n - start);
}

static inline void tl_end(struct t_lp *l)
{
    tb_byte(&l->b, 0xff);
    tb_set_le(&l->b, 0, l->b.n, 4);
    tb_set_le(&l->b, 4, l->count < 65535 ? l->count : 65535, 2);
}

/* ---- intsets ---- */

/* n sorted, distinct integers of width w (2, 4 or 8 bytes). */
static inline void ti_build(struct t_buf *b, const int64_t *v, size_t n, int w)
{
    tb_le(b, (uint64_t)w, 4);
    tb_le(b, n, 4);
    for (size_t i = 0; i < n; i++)
        tb_le(b, (uint64_t)v[i], w);
}

#endif
