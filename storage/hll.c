/*
 * hll — HyperLogLog sketches in Redis's string layout (see hll.h).
 *
 * Every operation decodes the registers into a byte per register, works on
 * that, and encodes the result again: one simple path for both encodings,
 * at the cost of touching 16 KiB per command, small beside a command's
 * round trip.
 */
#include "hll.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HLL_Q (64 - HLL_P) /* hash bits that give a register its value */
#define HLL_SEED 0xadc83b19ull
#define HLL_SPARSE_VAL_MAX 32

static const char MAGIC[4] = {'H', 'Y', 'L', 'L'};

/* A sparse sketch's registers as maximal runs of one value. */
struct hll_runs {
    size_t n, cap;
    uint16_t *len; /* 1..16384 registers (16384 fits: only one run can) */
    uint8_t *val;
};

int hll_check(const char *v, size_t n, bool *dense)
{
    if (n < HLL_HDR || memcmp(v, MAGIC, 4) != 0 || (unsigned char)v[4] > 1)
        return HLL_NOTHLL;
    *dense = v[4] == 0;
    if (*dense && n != HLL_DENSE_SIZE)
        return HLL_NOTHLL;
    return HLL_OK;
}

/* Dense register i: 6 bits at bit 6i, low bits in the lower byte. */
static uint8_t dense_get(const unsigned char *p, size_t i)
{
    size_t bit = i * 6, byte = bit / 8;
    unsigned fb = bit % 8;
    unsigned v = p[byte] >> fb;
    if (fb > 2) /* the register runs into the next byte */
        v |= (unsigned)p[byte + 1] << (8 - fb);
    return (uint8_t)(v & 63);
}

static void dense_set(unsigned char *p, size_t i, uint8_t val)
{
    size_t bit = i * 6, byte = bit / 8;
    unsigned fb = bit % 8;
    p[byte] = (unsigned char)((p[byte] & ~(63u << fb)) | ((unsigned)val << fb));
    if (fb > 2)
        p[byte + 1] =
            (unsigned char)((p[byte + 1] & ~(63u >> (8 - fb))) | ((unsigned)val >> (8 - fb)));
}

int hll_decode(const char *v, size_t n, uint8_t *regs)
{
    if (v[4] == 0) {
        for (size_t i = 0; i < HLL_REGS; i++)
            regs[i] = dense_get((const unsigned char *)v + HLL_HDR, i);
        return HLL_OK;
    }
    struct hll_runs *r;
    if (hll_runs_decode(v, n, &r) != HLL_OK)
        return HLL_CORRUPT;
    for (size_t i = 0, at = 0; i < r->n; at += r->len[i++])
        memset(regs + at, r->val[i], r->len[i]);
    hll_runs_free(r);
    return HLL_OK;
}

bool hll_cached(const char *v, size_t n, uint64_t *card)
{
    (void)n;
    const unsigned char *c = (const unsigned char *)v + 8;
    if (c[7] & 0x80)
        return false;
    *card = 0;
    for (int i = 7; i >= 0; i--)
        *card = *card << 8 | c[i];
    return true;
}

void hll_set_cached(char *v, uint64_t card)
{
    for (int i = 0; i < 8; i++)
        v[8 + i] = (char)(card >> (8 * i));
    v[15] &= 0x7f;
}

uint64_t hll_hash(const void *key, size_t n, uint64_t seed)
{
    const uint64_t m = 0xc6a4a7935bd1e995ull;
    const int r = 47;
    const unsigned char *p = key;
    uint64_t h = seed ^ (n * m);
    size_t blocks = n / 8;
    for (size_t i = 0; i < blocks; i++) {
        uint64_t k = 0;
        for (int j = 7; j >= 0; j--) /* little-endian, as Redis reads it on x86 */
            k = k << 8 | p[i * 8 + (size_t)j];
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    const unsigned char *t = p + blocks * 8;
    size_t rest = n & 7;
    if (rest) {
        for (size_t j = rest; j-- > 0;)
            h ^= (uint64_t)t[j] << (8 * j);
        h *= m;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

/* An element's register, and the value it offers: one more than the
 * number of zero bits above the index bits. */
static uint8_t pattern(const char *e, size_t n, size_t *idx)
{
    uint64_t h = hll_hash(e, n, HLL_SEED);
    *idx = h & (HLL_REGS - 1);
    h >>= HLL_P;
    h |= 1ull << HLL_Q; /* a sentinel: the count stops at HLL_Q + 1 */
    uint8_t count = 1;
    while (!(h & 1)) {
        count++;
        h >>= 1;
    }
    return count;
}

bool hll_add(uint8_t *regs, const char *e, size_t n)
{
    size_t idx;
    uint8_t count = pattern(e, n, &idx);
    if (count <= regs[idx])
        return false;
    regs[idx] = count;
    return true;
}

bool hll_dense_add(char *v, const char *e, size_t n)
{
    size_t idx;
    uint8_t count = pattern(e, n, &idx);
    unsigned char *p = (unsigned char *)v + HLL_HDR;
    if (count <= dense_get(p, idx))
        return false;
    dense_set(p, idx, count);
    return true;
}

void hll_set_stale(char *v)
{
    v[15] |= (char)0x80;
}

/* Ertl's sigma and tau, the corrections for registers at 0 and at Q + 1. */
static double sigma(double x)
{
    if (x == 1.0)
        return INFINITY;
    double y = 1.0, z = x, prev;
    do {
        x *= x;
        prev = z;
        z += x * y;
        y += y;
    } while (prev != z);
    return z;
}

static double tau(double x)
{
    if (x == 0.0 || x == 1.0)
        return 0.0;
    double y = 1.0, z = 1.0 - x, prev;
    do {
        x = sqrt(x);
        prev = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
    } while (prev != z);
    return z / 3.0;
}

uint64_t hll_count(const uint8_t *regs)
{
    double m = HLL_REGS;
    unsigned histo[64] = {0};
    for (size_t i = 0; i < HLL_REGS; i++)
        histo[regs[i] & 63]++;
    double z = m * tau((m - histo[HLL_Q + 1]) / m);
    for (int j = HLL_Q; j >= 1; j--) {
        z += histo[j];
        z *= 0.5;
    }
    z += m * sigma(histo[0] / m);
    const double alpha_inf = 0.5 / log(2.0);
    return (uint64_t)llroundl(alpha_inf * m * m / z);
}

/* ---- runs ---- */

static void runs_room(struct hll_runs *r, size_t want)
{
    if (want <= r->cap)
        return;
    r->cap = want * 2;
    r->len = realloc(r->len, r->cap * sizeof *r->len);
    r->val = realloc(r->val, r->cap);
    if (!r->len || !r->val)
        abort();
}

/* Appends a run, merged into the last one when it has the same value. */
static void runs_push(struct hll_runs *r, size_t len, uint8_t val)
{
    if (r->n && r->val[r->n - 1] == val) {
        r->len[r->n - 1] = (uint16_t)(r->len[r->n - 1] + len);
        return;
    }
    runs_room(r, r->n + 1);
    r->len[r->n] = (uint16_t)len;
    r->val[r->n++] = val;
}

int hll_runs_decode(const char *v, size_t n, struct hll_runs **out)
{
    struct hll_runs *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    const unsigned char *p = (const unsigned char *)v + HLL_HDR;
    size_t left = n - HLL_HDR, at = 0;
    runs_room(r, left + 2); /* a run per opcode at most, and an add's split */
    for (size_t k = 0; k < left; k++) {
        unsigned op = p[k];
        size_t run;
        uint8_t val = 0;
        if ((op & 0xc0) == 0x00) {
            run = (op & 0x3f) + 1;
        } else if ((op & 0xc0) == 0x40) {
            if (++k == left)
                goto corrupt;
            run = (((op & 0x3f) << 8) | p[k]) + 1;
        } else {
            val = (uint8_t)(((op >> 2) & 0x1f) + 1);
            run = (op & 3) + 1;
        }
        if (run > HLL_REGS - at)
            goto corrupt;
        runs_push(r, run, val);
        at += run;
    }
    if (at != HLL_REGS)
        goto corrupt;
    *out = r;
    return HLL_OK;
corrupt:
    hll_runs_free(r);
    return HLL_CORRUPT;
}

struct hll_runs *hll_runs_empty(void)
{
    struct hll_runs *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    runs_room(r, 4);
    runs_push(r, HLL_REGS, 0);
    return r;
}

bool hll_runs_add(struct hll_runs *r, const char *e, size_t n)
{
    size_t idx, i = 0, start = 0;
    uint8_t count = pattern(e, n, &idx);
    while (start + r->len[i] <= idx)
        start += r->len[i++];
    if (count <= r->val[i])
        return false;
    /* Split run i into [left] count [right], then merge equal neighbours. */
    size_t left = idx - start, right = start + r->len[i] - idx - 1;
    uint8_t old = r->val[i];
    size_t add = (left > 0) + (right > 0);
    runs_room(r, r->n + add);
    memmove(r->len + i + 1 + add, r->len + i + 1, (r->n - i - 1) * sizeof *r->len);
    memmove(r->val + i + 1 + add, r->val + i + 1, r->n - i - 1);
    r->n += add;
    size_t m = i;
    if (left) {
        r->len[i] = (uint16_t)left;
        r->val[i] = old;
        m = i + 1;
    }
    r->len[m] = 1;
    r->val[m] = count;
    if (right) {
        r->len[m + 1] = (uint16_t)right;
        r->val[m + 1] = old;
    }
    /* The new run may now equal its neighbours: join them. */
    if (m + 1 < r->n && r->val[m + 1] == count) {
        r->len[m] = (uint16_t)(r->len[m] + r->len[m + 1]);
        memmove(r->len + m + 1, r->len + m + 2, (r->n - m - 2) * sizeof *r->len);
        memmove(r->val + m + 1, r->val + m + 2, r->n - m - 2);
        r->n--;
    }
    if (m > 0 && r->val[m - 1] == count) {
        r->len[m - 1] = (uint16_t)(r->len[m - 1] + r->len[m]);
        memmove(r->len + m, r->len + m + 1, (r->n - m - 1) * sizeof *r->len);
        memmove(r->val + m, r->val + m + 1, r->n - m - 1);
        r->n--;
    }
    return true;
}

void hll_runs_free(struct hll_runs *r)
{
    if (!r)
        return;
    free(r->len);
    free(r->val);
    free(r);
}

/* The sparse opcodes of one maximal run; false when out of room or the
 * value needs the dense layout. */
static bool run_ops(size_t run, uint8_t val, unsigned char *out, size_t room, size_t *u)
{
    if (val > HLL_SPARSE_VAL_MAX)
        return false;
    while (run) {
        size_t take;
        if (val) {
            take = run < 4 ? run : 4;
            if (*u + 1 > room)
                return false;
            out[(*u)++] = (unsigned char)(0x80 | (val - 1) << 2 | (take - 1));
        } else if (run <= 64) {
            take = run;
            if (*u + 1 > room)
                return false;
            out[(*u)++] = (unsigned char)(take - 1);
        } else {
            take = run < HLL_REGS ? run : HLL_REGS;
            if (*u + 2 > room)
                return false;
            out[(*u)++] = (unsigned char)(0x40 | (take - 1) >> 8);
            out[(*u)++] = (unsigned char)((take - 1) & 0xff);
        }
        run -= take;
    }
    return true;
}

char *hll_runs_encode(const struct hll_runs *r, const char *old, size_t *n)
{
    char *v = calloc(1, HLL_SPARSE_MAX);
    if (!v)
        abort();
    size_t u = 0;
    bool fits = true;
    for (size_t i = 0; i < r->n && fits; i++)
        fits = run_ops(r->len[i], r->val[i], (unsigned char *)v + HLL_HDR, HLL_SPARSE_MAX - HLL_HDR,
                       &u);
    if (!fits) {
        free(v);
        uint8_t *regs = malloc(HLL_REGS);
        if (!regs)
            abort();
        for (size_t i = 0, at = 0; i < r->n; at += r->len[i++])
            memset(regs + at, r->val[i], r->len[i]);
        v = hll_encode(regs, true, old, n);
        free(regs);
        return v;
    }
    memcpy(v, MAGIC, 4);
    v[4] = 1;
    if (old)
        memcpy(v + 8, old + 8, 8);
    hll_set_stale(v);
    *n = HLL_HDR + u;
    return v;
}

/* The sparse opcodes for regs into out (room for HLL_SPARSE_MAX bytes past
 * the header): their length, or 0 when they do not fit or a register is
 * too large for a VAL opcode. */
static size_t sparse_encode(const uint8_t *regs, unsigned char *out)
{
    size_t u = 0;
    for (size_t i = 0; i < HLL_REGS;) {
        size_t run = 1;
        if (!regs[i]) /* most registers of a sparse sketch are zero: skip 8 at once */
            for (uint64_t w; i + run + 8 <= HLL_REGS; run += 8) {
                memcpy(&w, regs + i + run, 8);
                if (w)
                    break;
            }
        while (i + run < HLL_REGS && regs[i + run] == regs[i])
            run++;
        if (!run_ops(run, regs[i], out, HLL_SPARSE_MAX - HLL_HDR, &u))
            return 0;
        i += run;
    }
    return u;
}

char *hll_encode(const uint8_t *regs, bool dense, const char *old, size_t *n)
{
    char *v = calloc(1, HLL_DENSE_SIZE > HLL_SPARSE_MAX ? HLL_DENSE_SIZE : HLL_SPARSE_MAX);
    if (!v)
        abort();
    memcpy(v, MAGIC, 4);
    if (old)
        memcpy(v + 8, old + 8, 8);
    hll_set_stale(v);
    size_t u = dense ? 0 : sparse_encode(regs, (unsigned char *)v + HLL_HDR);
    if (u) {
        v[4] = 1;
        *n = HLL_HDR + u;
        return v;
    }
    memset(v + HLL_HDR, 0, HLL_DENSE_SIZE - HLL_HDR);
    for (size_t i = 0; i < HLL_REGS; i++)
        dense_set((unsigned char *)v + HLL_HDR, i, regs[i]);
    *n = HLL_DENSE_SIZE;
    return v;
}
