/*
 * rdb — DUMP and RESTORE payloads (see rdb.h). Every read is checked
 * against the bytes left before it is made, so a payload is either decoded
 * whole or refused; a count read from a payload is never trusted for an
 * allocation, since every element it announces must still be read.
 */
#include "rdb.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmc_layout.h" /* shmc_hash */
#include "kv_mem.h"

/* Object types, as the RDB format numbers them. */
enum {
    T_STRING = 0,
    T_LIST = 1,
    T_SET = 2,
    T_ZSET = 3, /* scores as text */
    T_HASH = 4,
    T_ZSET2 = 5, /* scores as 8-byte doubles */
    T_LIST_ZIPLIST = 10,
    T_SET_INTSET = 11,
    T_ZSET_ZIPLIST = 12,
    T_HASH_ZIPLIST = 13,
    T_LIST_QUICKLIST = 14, /* nodes are ziplists */
    T_HASH_LISTPACK = 16,
    T_ZSET_LISTPACK = 17,
    T_LIST_QUICKLIST2 = 18, /* nodes are listpacks or single plain elements */
};

/* The version written: every type the encoder uses (0, 1, 2, 4, 5) is
 * known to readers of version 8 on, so Redis 5.0 and later restore it. */
#define WRITE_VERSION 9

/* A string decoded from LZF may not exceed this, whatever its header says
 * (Redis's own limit on a string value). */
#define LZF_MAX ((size_t)512 << 20)

/* ---- CRC-64 ---- */

#define CRC_POLY 0x95ac9329ac4bc9b5ULL /* Jones, bit-reflected */
static uint64_t crc_tab[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (unsigned i = 0; i < 256; i++) {
        uint64_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC_POLY : c >> 1;
        crc_tab[i] = c;
    }
}

uint64_t rdb_crc64(uint64_t crc, const void *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const unsigned char *s = p;
    while (n--)
        crc = crc_tab[(crc ^ *s++) & 0xff] ^ (crc >> 8);
    return crc;
}

/* ---- little helpers ---- */

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* n bytes little-endian, sign-extended from 8n bits. */
static int64_t le_signed(const unsigned char *p, int n)
{
    uint64_t v = le(p, n);
    if (n < 8 && (v >> (8 * n - 1)) & 1)
        v |= ~(uint64_t)0 << (8 * n);
    return (int64_t)v;
}

static void push_int(struct db_vec *out, int64_t v)
{
    char b[24];
    int n = snprintf(b, sizeof b, "%lld", (long long)v);
    db_vec_push(out, b, (size_t)n, 0);
}

/* ---- decoding ---- */

struct rd {
    const unsigned char *p, *end;
    unsigned char *tmp; /* an LZF string's expansion, valid until the next string */
    size_t tmpcap;
    char num[24]; /* an integer-encoded string's text */
};

static bool rd_need(const struct rd *r, uint64_t n)
{
    return (uint64_t)(r->end - r->p) >= n;
}

static bool rd_u8(struct rd *r, unsigned *v)
{
    if (!rd_need(r, 1))
        return false;
    *v = *r->p++;
    return true;
}

static bool rd_be(struct rd *r, int n, uint64_t *v)
{
    if (!rd_need(r, (uint64_t)n))
        return false;
    *v = 0;
    for (int i = 0; i < n; i++)
        *v = *v << 8 | *r->p++;
    return true;
}

/* A length; or, where its first two bits are 11, the form of an encoded
 * string in *form (-1 for a plain length). */
static bool rd_len(struct rd *r, uint64_t *len, int *form)
{
    unsigned b, b2;
    *form = -1;
    if (!rd_u8(r, &b))
        return false;
    switch (b >> 6) {
    case 0:
        *len = b & 0x3f;
        return true;
    case 1:
        if (!rd_u8(r, &b2))
            return false;
        *len = (uint64_t)(b & 0x3f) << 8 | b2;
        return true;
    case 2:
        return (b == 0x80 && rd_be(r, 4, len)) || (b == 0x81 && rd_be(r, 8, len));
    default:
        *form = b & 0x3f;
        *len = 0;
        return true;
    }
}

static bool rd_count(struct rd *r, uint64_t *n)
{
    int form;
    return rd_len(r, n, &form) && form < 0;
}

/* LZF: a literal run (control byte < 32: that many bytes plus one), or a
 * copy of earlier output (length in the top 3 bits, 7 meaning "plus the
 * next byte", then the distance). Succeeds only if out is filled exactly. */
static bool lzf_expand(const unsigned char *in, size_t inn, unsigned char *out, size_t outn)
{
    const unsigned char *ie = in + inn;
    unsigned char *o = out, *oe = out + outn;
    while (in < ie) {
        unsigned ctrl = *in++;
        if (ctrl < 32) {
            size_t len = ctrl + 1;
            if ((size_t)(ie - in) < len || (size_t)(oe - o) < len)
                return false;
            memcpy(o, in, len);
            o += len;
            in += len;
            continue;
        }
        size_t len = ctrl >> 5;
        if (len == 7) {
            if (in == ie)
                return false;
            len += *in++;
        }
        if (in == ie)
            return false;
        size_t back = ((size_t)(ctrl & 0x1f) << 8) + *in++ + 1;
        len += 2;
        if ((size_t)(o - out) < back || (size_t)(oe - o) < len)
            return false;
        for (const unsigned char *ref = o - back; len; len--) /* may overlap: bytewise */
            *o++ = *ref++;
    }
    return o == oe;
}

/* A string: plain, an integer in 1, 2 or 4 bytes, or LZF-compressed.
 * *s points into the payload, r->num or r->tmp. */
static bool rd_str(struct rd *r, const unsigned char **s, size_t *n)
{
    uint64_t len, clen;
    int form;
    if (!rd_len(r, &len, &form))
        return false;
    if (form < 0) {
        if (!rd_need(r, len))
            return false;
        *s = r->p;
        *n = (size_t)len;
        r->p += len;
        return true;
    }
    if (form <= 2) { /* int8, int16, int32, little-endian */
        int w = 1 << form;
        if (!rd_need(r, (uint64_t)w))
            return false;
        int64_t v = le_signed(r->p, w);
        r->p += w;
        *n = (size_t)snprintf(r->num, sizeof r->num, "%lld", (long long)v);
        *s = (const unsigned char *)r->num;
        return true;
    }
    if (form != 3 || !rd_count(r, &clen) || !rd_count(r, &len) || !rd_need(r, clen))
        return false;
    /* A copy of up to 264 bytes costs 3: no stream expands more than 88x. */
    if (len > LZF_MAX || len > clen * 88 || len == 0)
        return false;
    if (r->tmpcap < len) {
        free(r->tmp);
        r->tmp = malloc((size_t)len);
        r->tmpcap = r->tmp ? (size_t)len : 0;
        if (!r->tmp)
            return false;
    }
    if (!lzf_expand(r->p, (size_t)clen, r->tmp, (size_t)len))
        return false;
    r->p += clen;
    *s = r->tmp;
    *n = (size_t)len;
    return true;
}

/* A ziplist: 4-byte size, 4-byte tail offset, 2-byte count, entries, 0xff.
 * Each entry: the previous entry's size (1 byte, or 0xfe and 4), then a
 * string (6-, 14- or 32-bit length) or an integer (16, 32, 64, 24 or 8
 * bits, or 0..12 in the encoding byte itself). */
static bool zl_each(const unsigned char *z, size_t n, struct db_vec *out)
{
    if (n < 11 || le(z, 4) != n || z[n - 1] != 0xff)
        return false;
    const unsigned char *p = z + 10, *e = z + n - 1;
    while (p < e) {
        if (*p == 0xff)
            return false;
        p += *p == 0xfe ? 5 : 1;
        if (p >= e)
            return false;
        size_t left = (size_t)(e - p), hdr, sl = 0;
        unsigned b = *p;
        int iw = 0; /* integer width in bytes; 0: a string */
        if (b >> 6 == 0) {
            hdr = 1;
            sl = b & 0x3f;
        } else if (b >> 6 == 1) {
            hdr = 2;
            if (left < 2)
                return false;
            sl = (size_t)(b & 0x3f) << 8 | p[1];
        } else if (b == 0x80) {
            hdr = 5;
            if (left < 5)
                return false;
            sl = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
        } else if (b >= 0xf1 && b <= 0xfd) {
            push_int(out, (int64_t)(b & 0x0f) - 1);
            p++;
            continue;
        } else {
            switch (b) {
            case 0xc0:
                iw = 2;
                break;
            case 0xd0:
                iw = 4;
                break;
            case 0xe0:
                iw = 8;
                break;
            case 0xf0:
                iw = 3;
                break;
            case 0xfe:
                iw = 1;
                break;
            default:
                return false;
            }
            hdr = 1;
        }
        if (iw) {
            if (left < 1 + (size_t)iw)
                return false;
            push_int(out, le_signed(p + 1, iw));
            p += 1 + iw;
            continue;
        }
        if (left < hdr || left - hdr < sl)
            return false;
        db_vec_push(out, (const char *)p + hdr, sl, 0);
        p += hdr + sl;
    }
    return true;
}

/* A listpack: 4-byte size, 2-byte count, entries, 0xff. Each entry: its
 * encoding and data, then their size again (1 to 5 bytes, read backwards),
 * which a forward reader only skips. */
static bool lp_each(const unsigned char *l, size_t n, struct db_vec *out)
{
    if (n < 7 || le(l, 4) != n || l[n - 1] != 0xff)
        return false;
    const unsigned char *p = l + 6, *e = l + n - 1;
    while (p < e) {
        size_t left = (size_t)(e - p), hdr, sl = 0;
        unsigned b = *p;
        int64_t v = 0;
        bool num = true;
        if (b < 0x80) { /* 7-bit unsigned */
            hdr = 1;
            v = b;
        } else if ((b & 0xc0) == 0x80) { /* string, 6-bit length */
            hdr = 1;
            sl = b & 0x3f;
            num = false;
        } else if ((b & 0xe0) == 0xc0) { /* 13-bit signed */
            hdr = 2;
            if (left < 2)
                return false;
            v = (int64_t)((b & 0x1f) << 8 | p[1]);
            if (v >= 4096)
                v -= 8192;
        } else if ((b & 0xf0) == 0xe0) { /* string, 12-bit length */
            hdr = 2;
            if (left < 2)
                return false;
            sl = (size_t)(b & 0x0f) << 8 | p[1];
            num = false;
        } else if (b == 0xf0) { /* string, 32-bit length */
            hdr = 5;
            if (left < 5)
                return false;
            sl = (size_t)le(p + 1, 4);
            num = false;
        } else if (b >= 0xf1 && b <= 0xf4) { /* 16, 24, 32, 64-bit signed */
            static const int width[] = {2, 3, 4, 8};
            int w = width[b - 0xf1];
            hdr = 1 + (size_t)w;
            if (left < hdr)
                return false;
            v = le_signed(p + 1, w);
        } else {
            return false;
        }
        if (left < hdr || left - hdr < sl)
            return false;
        size_t ent = hdr + sl;
        size_t bl = ent <= 127 ? 1 : ent < 16383 ? 2 : ent < 2097151 ? 3 : ent < 268435455 ? 4 : 5;
        if (left - ent < bl)
            return false;
        if (num)
            push_int(out, v);
        else
            db_vec_push(out, (const char *)p + hdr, sl, 0);
        p += ent + bl;
    }
    return true;
}

/* An intset: 4-byte width (2, 4 or 8), 4-byte count, the integers. */
static bool is_each(const unsigned char *s, size_t n, struct db_vec *out)
{
    if (n < 8)
        return false;
    uint64_t w = le(s, 4), cnt = le(s + 4, 4);
    if ((w != 2 && w != 4 && w != 8) || n - 8 != w * cnt)
        return false;
    for (uint64_t i = 0; i < cnt; i++)
        push_int(out, le_signed(s + 8 + i * w, (int)w));
    return true;
}

/* A score written as text: strtod's reading of it, as Redis reads it. */
static bool score_text(const char *s, size_t n, double *d)
{
    char b[256];
    if (n >= sizeof b)
        return false;
    memcpy(b, s, n);
    b[n] = '\0';
    char *end;
    *d = strtod(b, &end);
    return end != b;
}

/* member, score pairs as strings (a ziplist's or listpack's) into out. */
static bool zset_pairs(const struct db_vec *pairs, struct db_vec *out)
{
    if (pairs->n % 2)
        return false;
    for (size_t i = 0; i < pairs->n; i += 2) {
        double d;
        if (!score_text(db_vec_ptr(pairs, i + 1), db_vec_len(pairs, i + 1), &d) || isnan(d))
            return false;
        db_vec_push(out, db_vec_ptr(pairs, i), db_vec_len(pairs, i), d);
    }
    return true;
}

static bool rd_score(struct rd *r, int t, double *d)
{
    if (t == T_ZSET2) {
        if (!rd_need(r, 8))
            return false;
        uint64_t u = le(r->p, 8);
        r->p += 8;
        memcpy(d, &u, sizeof *d);
        return true;
    }
    unsigned n;
    if (!rd_u8(r, &n))
        return false;
    if (n >= 253) {
        *d = n == 253 ? NAN : n == 254 ? INFINITY : -INFINITY;
        return true;
    }
    if (!rd_need(r, n) || !score_text((const char *)r->p, n, d))
        return false;
    r->p += n;
    return true;
}

/* A list kept as a quicklist: a count of nodes, each a ziplist (type 14),
 * or a container kind (1 one plain element, 2 a listpack) and the node
 * (type 18). Empty nodes are skipped, as Redis skips them. */
static bool rd_quicklist(struct rd *r, int t, struct db_vec *out)
{
    uint64_t nodes;
    if (!rd_count(r, &nodes))
        return false;
    for (uint64_t i = 0; i < nodes; i++) {
        uint64_t kind = 2;
        const unsigned char *s;
        size_t n;
        if ((t == T_LIST_QUICKLIST2 && (!rd_count(r, &kind) || kind < 1 || kind > 2)) ||
            !rd_str(r, &s, &n))
            return false;
        if (t == T_LIST_QUICKLIST) {
            if (!zl_each(s, n, out))
                return false;
        } else if (kind == 2) {
            if (!lp_each(s, n, out))
                return false;
        } else {
            db_vec_push(out, (const char *)s, n, 0);
        }
    }
    return true;
}

/* A value of RDB type t (the type already read). */
static bool rd_value(struct rd *r, unsigned t, struct db_value *v)
{
    struct db_vec *out = &v->items;
    uint64_t cnt;
    const unsigned char *s;
    size_t n;
    double d;
    switch (t) {
    case T_STRING:
        v->type = ENC_TYPE_STRING;
        if (!rd_str(r, &s, &n))
            return false;
        db_vec_push(out, (const char *)s, n, 0);
        return true;
    case T_LIST:
    case T_SET:
    case T_HASH:
        v->type = t == T_LIST ? ENC_TYPE_LIST : t == T_SET ? ENC_TYPE_SET : ENC_TYPE_HASH;
        if (!rd_count(r, &cnt))
            return false;
        if (t == T_HASH && cnt > UINT64_MAX / 2)
            return false;
        for (uint64_t i = 0, m = t == T_HASH ? 2 * cnt : cnt; i < m; i++) {
            if (!rd_str(r, &s, &n))
                return false;
            db_vec_push(out, (const char *)s, n, 0);
        }
        return true;
    case T_ZSET:
    case T_ZSET2:
        v->type = ENC_TYPE_ZSET;
        if (!rd_count(r, &cnt))
            return false;
        for (uint64_t i = 0; i < cnt; i++) {
            /* The member goes in first: rd_score does not touch r->num or r->tmp. */
            if (!rd_str(r, &s, &n))
                return false;
            db_vec_push(out, (const char *)s, n, 0);
            if (!rd_score(r, (int)t, &d) || isnan(d))
                return false;
            out->items[out->n - 1].score = d;
        }
        return true;
    case T_LIST_QUICKLIST:
    case T_LIST_QUICKLIST2:
        v->type = ENC_TYPE_LIST;
        return rd_quicklist(r, (int)t, out);
    case T_LIST_ZIPLIST:
    case T_SET_INTSET:
    case T_HASH_ZIPLIST:
    case T_HASH_LISTPACK:
        if (!rd_str(r, &s, &n))
            return false;
        if (t == T_SET_INTSET) {
            v->type = ENC_TYPE_SET;
            return is_each(s, n, out);
        }
        v->type = t == T_LIST_ZIPLIST ? ENC_TYPE_LIST : ENC_TYPE_HASH;
        return t == T_HASH_LISTPACK ? lp_each(s, n, out) : zl_each(s, n, out);
    case T_ZSET_ZIPLIST:
    case T_ZSET_LISTPACK: {
        v->type = ENC_TYPE_ZSET;
        if (!rd_str(r, &s, &n))
            return false;
        struct db_vec pairs;
        db_vec_init(&pairs);
        bool ok = (t == T_ZSET_LISTPACK ? lp_each(s, n, &pairs) : zl_each(s, n, &pairs)) &&
                  zset_pairs(&pairs, out);
        db_vec_destroy(&pairs);
        return ok;
    }
    default: /* streams, modules, zipmaps: kinds shmkvd does not keep */
        return false;
    }
}

static bool rd_object(struct rd *r, struct db_value *v)
{
    unsigned t;
    return rd_u8(r, &t) && rd_value(r, t, v);
}

static bool same_item(const struct db_vec *v, size_t i, size_t j)
{
    return db_vec_len(v, i) == db_vec_len(v, j) &&
           memcmp(db_vec_ptr(v, i), db_vec_ptr(v, j), db_vec_len(v, i)) == 0;
}

/* Whether the items at 0, stride, 2 * stride, ... are all different: one
 * pass over an open-addressed table of their indexes (sorting them was a
 * third of a million-field RESTORE's time). */
static bool distinct(const struct db_vec *v, size_t stride)
{
    size_t m = v->n / stride, cap = 16;
    if (m < 2)
        return true;
    while (cap < 2 * m)
        cap *= 2;
    size_t *slot = kv_xcalloc(cap, sizeof *slot); /* index + 1; 0: empty */
    bool ok = true;
    for (size_t i = 0; i < v->n && ok; i += stride) {
        size_t h = (size_t)shmc_hash(db_vec_ptr(v, i), db_vec_len(v, i)) & (cap - 1);
        for (; slot[h] && ok; h = (h + 1) & (cap - 1))
            ok = !same_item(v, slot[h] - 1, i);
        slot[h] = i + 1;
    }
    free(slot);
    return ok;
}

int rdb_load(const char *p, size_t n, struct db_value *v)
{
    if (n < 10)
        return RDB_EVERSION;
    const unsigned char *foot = (const unsigned char *)p + n - 10;
    if (le(foot, 2) > RDB_VERSION || rdb_crc64(0, p, n - 8) != le(foot + 2, 8))
        return RDB_EVERSION;
    /* Bytes left between the object and the footer are ignored, as Redis
     * ignores them. */
    struct rd r = {.p = (const unsigned char *)p, .end = foot};
    bool ok = rd_object(&r, v);
    free(r.tmp);
    if (ok && v->type != ENC_TYPE_STRING)
        ok = v->items.n > 0 &&
             (v->type == ENC_TYPE_LIST ||
              (v->type == ENC_TYPE_HASH ? v->items.n % 2 == 0 && distinct(&v->items, 2)
                                        : distinct(&v->items, 1)));
    return ok ? RDB_OK : RDB_EFORMAT;
}

/* ---- encoding ---- */

struct wr {
    char *p;
    size_t n, cap;
};

static void wr_bytes(struct wr *w, const void *s, size_t n)
{
    if (w->cap - w->n < n) {
        size_t cap = w->cap ? w->cap : 64;
        while (cap - w->n < n)
            cap *= 2;
        w->p = kv_xrealloc(w->p, cap);
        w->cap = cap;
    }
    memcpy(w->p + w->n, s, n);
    w->n += n;
}

static void wr_le(struct wr *w, uint64_t v, int n)
{
    unsigned char b[8];
    for (int i = 0; i < n; i++, v >>= 8)
        b[i] = (unsigned char)v;
    wr_bytes(w, b, (size_t)n);
}

size_t rdb_len_encode(uint64_t len, unsigned char b[9])
{
    if (len < 64) {
        b[0] = (unsigned char)len;
        return 1;
    }
    if (len < 16384) {
        b[0] = (unsigned char)(0x40 | len >> 8);
        b[1] = (unsigned char)len;
        return 2;
    }
    int w8 = len <= UINT32_MAX ? 4 : 8;
    b[0] = w8 == 4 ? 0x80 : 0x81;
    for (int i = 0; i < w8; i++)
        b[1 + i] = (unsigned char)(len >> (8 * (w8 - 1 - i)));
    return 1 + (size_t)w8;
}

/* A length: 6 bits, 14 bits, or 0x80/0x81 and 32 or 64 bits big-endian. */
static void wr_len(struct wr *w, uint64_t len)
{
    unsigned char b[9];
    wr_bytes(w, b, rdb_len_encode(len, b));
}

static void wr_str(struct wr *w, const char *s, size_t n)
{
    wr_len(w, n);
    wr_bytes(w, s, n);
}

/* The bytes wr_len writes for len. */
static size_t len_size(uint64_t len)
{
    return len < 64 ? 1 : len < 16384 ? 2 : len <= UINT32_MAX ? 5 : 9;
}

char *rdb_dump(const struct db_value *v, size_t *n)
{
    const struct db_vec *it = &v->items;
    /* Sized exactly first: a value of many megabytes is then copied once,
     * with no reallocation on the way. */
    size_t size = 1 + len_size(it->n) + 10;
    for (size_t i = 0; i < it->n; i++)
        size +=
            len_size(db_vec_len(it, i)) + db_vec_len(it, i) + (v->type == ENC_TYPE_ZSET ? 8 : 0);
    struct wr w = {kv_xmalloc(size), 0, size};
    static const unsigned char kind[] = {
        [ENC_TYPE_STRING] = T_STRING, [ENC_TYPE_HASH] = T_HASH, [ENC_TYPE_SET] = T_SET,
        [ENC_TYPE_ZSET] = T_ZSET2,    [ENC_TYPE_LIST] = T_LIST,
    };
    wr_bytes(&w, &kind[v->type], 1);
    if (v->type != ENC_TYPE_STRING)
        wr_len(&w, v->type == ENC_TYPE_HASH ? it->n / 2 : it->n);
    for (size_t i = 0; i < it->n; i++) {
        wr_str(&w, db_vec_ptr(it, i), db_vec_len(it, i));
        if (v->type == ENC_TYPE_ZSET) {
            uint64_t u;
            memcpy(&u, &it->items[i].score, sizeof u);
            wr_le(&w, u, 8);
        }
    }
    wr_le(&w, WRITE_VERSION, 2);
    wr_le(&w, rdb_crc64(0, w.p, w.n), 8);
    assert(w.n <= size);
    *n = w.n;
    return w.p;
}

/* ---- function libraries ---- */

#define T_FUNCTION2 245 /* RDB_OPCODE_FUNCTION2: a library's code */

char *rdb_dump_functions(const struct db_str *codes, size_t n, size_t *len)
{
    struct wr w = {0};
    for (size_t i = 0; i < n; i++) {
        unsigned char t = T_FUNCTION2;
        wr_bytes(&w, &t, 1);
        wr_str(&w, codes[i].p, codes[i].n);
    }
    wr_le(&w, RDB_VERSION, 2); /* the record exists from version 10 */
    wr_le(&w, rdb_crc64(0, w.p, w.n), 8);
    *len = w.n;
    return w.p;
}

int rdb_load_functions(const char *p, size_t n, struct db_vec *codes)
{
    if (n < 10)
        return RDB_EVERSION;
    const unsigned char *foot = (const unsigned char *)p + n - 10;
    if (le(foot, 2) > RDB_VERSION || rdb_crc64(0, p, n - 8) != le(foot + 2, 8))
        return RDB_EVERSION;
    struct rd r = {.p = (const unsigned char *)p, .end = foot};
    int rc = RDB_OK;
    while (rc == RDB_OK && r.p < r.end) {
        unsigned t;
        const unsigned char *s;
        size_t sn;
        if (!rd_u8(&r, &t) || t != T_FUNCTION2)
            rc = RDB_EFORMAT;
        else if (!rd_str(&r, &s, &sn))
            rc = RDB_ESTRING;
        else
            db_vec_push(codes, (const char *)s, sn, 0);
    }
    free(r.tmp);
    return rc;
}

/* ---- whole files ---- */

enum {
    OP_FUNCTION_PRE_GA = 0xf6,
    OP_MODULE_AUX = 0xf7,
    OP_IDLE = 0xf8,
    OP_FREQ = 0xf9,
    OP_AUX = 0xfa,
    OP_RESIZEDB = 0xfb,
    OP_EXPIRETIME_MS = 0xfc,
    OP_EXPIRETIME = 0xfd,
    OP_SELECTDB = 0xfe,
    OP_EOF = 0xff,
};

int rdb_file_read(const char *p, size_t n, const struct rdb_file_cb *cb, size_t *where)
{
    struct rd r = {.p = (const unsigned char *)p, .end = (const unsigned char *)p + n};
    int rc = RDB_OK;
    unsigned db = 0;
    uint64_t expire = 0;
    char *key = NULL;
    /* "REDIS" and four digits of version. Read as four digits, never with
     * atoi: the file need not go on after them (nor end in a NUL). */
    int version = 0;
    for (int i = 5; i < 9 && n >= 9; i++)
        version = p[i] >= '0' && p[i] <= '9' ? version * 10 + (p[i] - '0') : -1000000;
    if (n < 9 || memcmp(p, "REDIS", 5) || version < 1 || version > RDB_VERSION) {
        rc = RDB_EVERSION;
        goto done;
    }
    r.p += 9;
    /* The checksum goes along with the reading, a slice at a time, so a
     * caller may let go of what is behind (progress). */
    uint64_t crc = 0;
    const unsigned char *summed = (const unsigned char *)p;
    for (;;) {
        unsigned t;
        uint64_t a, b;
        const unsigned char *s;
        size_t sn;
        if ((size_t)(r.p - summed) >= RDB_PROGRESS_STEP) {
            crc = rdb_crc64(crc, summed, (size_t)(r.p - summed));
            summed = r.p;
            if (cb->progress)
                cb->progress(cb->arg, (size_t)(r.p - (const unsigned char *)p));
        }
        if (!rd_u8(&r, &t)) {
            rc = RDB_EFORMAT; /* no EOF */
            break;
        }
        if (t == OP_EOF) {
            /* An all-zero checksum: written with rdbchecksum no. */
            crc = rdb_crc64(crc, summed, (size_t)(r.p - summed));
            if (rd_need(&r, 8) && le(r.p, 8) && le(r.p, 8) != crc)
                rc = RDB_EVERSION;
            break;
        }
        if (t == OP_AUX) {
            if (!rd_str(&r, &s, &sn) || !rd_str(&r, &s, &sn))
                rc = RDB_EFORMAT;
        } else if (t == OP_SELECTDB) {
            if (!rd_count(&r, &a) || a > 255)
                rc = RDB_EFORMAT;
            db = (unsigned)a;
        } else if (t == OP_RESIZEDB) {
            if (!rd_count(&r, &a) || !rd_count(&r, &b))
                rc = RDB_EFORMAT;
        } else if (t == OP_EXPIRETIME_MS || t == OP_EXPIRETIME) {
            int w = t == OP_EXPIRETIME_MS ? 8 : 4;
            if (!rd_need(&r, (uint64_t)w)) {
                rc = RDB_EFORMAT;
            } else {
                expire = le(r.p, w) * (t == OP_EXPIRETIME ? 1000 : 1);
                r.p += w;
            }
        } else if (t == OP_IDLE) {
            if (!rd_count(&r, &a))
                rc = RDB_EFORMAT;
        } else if (t == OP_FREQ) {
            if (!rd_u8(&r, &t))
                rc = RDB_EFORMAT;
        } else if (t == T_FUNCTION2) {
            if (!rd_str(&r, &s, &sn))
                rc = RDB_EFORMAT;
            else if (cb->library(cb->arg, (const char *)s, sn))
                rc = RDB_ECALLBACK;
        } else if (t == OP_FUNCTION_PRE_GA || t == OP_MODULE_AUX) {
            rc = RDB_EFORMAT;
        } else {
            /* A key: type, name, value. The name is copied: the value's
             * strings may use the buffers it came through. */
            if (!rd_str(&r, &s, &sn)) {
                rc = RDB_EFORMAT;
                break;
            }
            key = kv_xrealloc(key, sn ? sn : 1);
            memcpy(key, s, sn);
            struct db_value v = {.expire_ms = expire};
            db_vec_init(&v.items);
            if (!rd_value(&r, t, &v))
                rc = RDB_EFORMAT;
            else if (cb->key(cb->arg, db, key, sn, &v))
                rc = RDB_ECALLBACK;
            db_vec_destroy(&v.items);
            expire = 0;
        }
        if (rc)
            break;
    }
done:
    if (where)
        *where = (size_t)(r.p - (const unsigned char *)p);
    free(key);
    free(r.tmp);
    return rc;
}
