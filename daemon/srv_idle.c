/*
 * srv_idle — the last-use clock behind OBJECT IDLETIME (see srv_idle.h).
 *
 * Open addressing with linear probing over 8-byte slots: a 40-bit key
 * fingerprint (never 0, so a used slot is never 0) and the second of the
 * last use, 24 bits counted from the generation's start. The table is
 * indexed by the fingerprint's low bits, so growing rehashes from what the
 * slots keep; the bits above the index tell keys apart, 20 of them in a
 * full generation: two keys share a clock about once in a million probes,
 * an error of the order of Redis's own approximation. A generation whose
 * clock would pass 24 bits (194 days) is switched out like a full one.
 */
#include "srv_idle.h"

#include <stdbool.h>
#include <stdlib.h>

#include "shmc_layout.h" /* shmc_hash, shmc_mix: the project's key hash */
#include "kv_mem.h"

#define FIRST_CAP 1024u /* slots of the first generation's first table */
#define REL_BITS 24
#define REL_MAX ((1u << REL_BITS) - 1)

static uint64_t fp_of(unsigned db, const char *key, size_t klen)
{
    uint64_t h = shmc_mix(shmc_hash(key, klen) ^ ((uint64_t)db + 1) * 0x9e3779b97f4a7c15ull);
    return h >> REL_BITS ? h >> REL_BITS : 1;
}

static void gen_alloc(struct srv_idle_gen *g, size_t cap, uint64_t since_s)
{
    /* calloc of a large table maps zero pages: untouched parts cost nothing. */
    g->slot = calloc(cap, sizeof *g->slot);
    if (!g->slot)
        kv_oom(cap * sizeof *g->slot);
    g->cap = cap;
    g->n = 0;
    g->since_s = since_s;
}

/* The slot holding fp, or the empty slot where it would go. */
static size_t probe(const struct srv_idle_gen *g, uint64_t fp)
{
    size_t m = g->cap - 1, i = (size_t)fp & m;
    while (g->slot[i] && g->slot[i] >> REL_BITS != fp)
        i = (i + 1) & m;
    return i;
}

static void grow(struct srv_idle_gen *g)
{
    struct srv_idle_gen old = *g;
    gen_alloc(g, old.cap * 2, old.since_s);
    for (size_t i = 0; i < old.cap; i++)
        if (old.slot[i]) {
            g->slot[probe(g, old.slot[i] >> REL_BITS)] = old.slot[i];
            g->n++;
        }
    free(old.slot);
}

void srv_idle_init(struct srv_idle *t, size_t gen_keys, uint64_t now_ms)
{
    memset(t, 0, sizeof *t);
    t->gen_keys = gen_keys < 16 ? 16 : gen_keys > (1u << 30) ? (1u << 30) : gen_keys;
    gen_alloc(&t->cur, FIRST_CAP, now_ms / 1000); /* grows as keys come */
}

void srv_idle_free(struct srv_idle *t)
{
    free(t->cur.slot);
    free(t->prev.slot);
    memset(t, 0, sizeof *t);
}

/* The current generation becomes the previous one, the previous one goes:
 * every key used since the current one began stays known. Later
 * generations are allocated whole: the key churn has shown itself. */
static void switch_gen(struct srv_idle *t, uint64_t now_s)
{
    size_t cap = FIRST_CAP;
    while (cap < 2 * t->gen_keys)
        cap *= 2;
    free(t->prev.slot);
    t->prev = t->cur;
    gen_alloc(&t->cur, cap, now_s);
    t->switches++;
}

uint64_t srv_idle_key(const struct srv_idle *t, unsigned db, const char *key, size_t klen)
{
    uint64_t fp = fp_of(db, key, klen);
    __builtin_prefetch(&t->cur.slot[fp & (t->cur.cap - 1)], 1);
    return fp;
}

void srv_idle_touch(struct srv_idle *t, unsigned db, const char *key, size_t klen, uint64_t now_ms)
{
    srv_idle_touch_key(t, fp_of(db, key, klen), now_ms);
}

/* fp's slot in the current generation, taken for it if it has none (which
 * may switch generations first). */
static size_t slot_for(struct srv_idle *t, uint64_t fp, uint64_t now_s)
{
    size_t i = probe(&t->cur, fp);
    if (!t->cur.slot[i]) { /* a new key */
        if (t->cur.n == t->gen_keys)
            switch_gen(t, now_s);
        else if (2 * (t->cur.n + 1) > t->cur.cap)
            grow(&t->cur);
        i = probe(&t->cur, fp);
        t->cur.n++;
    }
    return i;
}

void srv_idle_touch_key(struct srv_idle *t, uint64_t fp, uint64_t now_ms)
{
    uint64_t now_s = now_ms / 1000;
    if (now_s < t->cur.since_s)
        now_s = t->cur.since_s; /* the wall clock went back: hold it */
    if (now_s - t->cur.since_s > REL_MAX)
        switch_gen(t, now_s);
    size_t i = slot_for(t, fp, now_s);
    t->cur.slot[i] = fp << REL_BITS | (now_s - t->cur.since_s);
}

/* Whether g has fp, and then the second of its last use. */
static bool last_in(const struct srv_idle_gen *g, uint64_t fp, uint64_t *last)
{
    uint64_t s = g->slot ? g->slot[probe(g, fp)] : 0;
    if (s)
        *last = g->since_s + (s & REL_MAX);
    return s != 0;
}

uint64_t srv_idle_seconds(const struct srv_idle *t, unsigned db, const char *key, size_t klen,
                          uint64_t now_ms)
{
    uint64_t fp = fp_of(db, key, klen), last;
    if (!last_in(&t->cur, fp, &last) && !last_in(&t->prev, fp, &last))
        last = t->prev.slot ? t->prev.since_s : t->cur.since_s; /* the floor */
    uint64_t now_s = now_ms / 1000;
    return now_s > last ? now_s - last : 0;
}

/* ---- LFU ---- */

static unsigned lfu_minutes(uint64_t now_ms)
{
    return (unsigned)(now_ms / 60000) & 0xffff;
}

/* The counter of word w, less one per decay_min minutes since its stamp. */
static unsigned lfu_decayed(uint64_t w, uint64_t now_ms, int decay_min)
{
    unsigned ldt = (unsigned)(w >> 8) & 0xffff, counter = (unsigned)w & 0xff,
             now = lfu_minutes(now_ms);
    unsigned elapsed = now >= ldt ? now - ldt : 65535 - ldt + now;
    unsigned periods = decay_min > 0 ? elapsed / (unsigned)decay_min : 0;
    return periods > counter ? 0 : counter - periods;
}

/* The word kept for fp in g, if any. */
static bool word_in(const struct srv_idle_gen *g, uint64_t fp, uint64_t *w)
{
    uint64_t s = g->slot ? g->slot[probe(g, fp)] : 0;
    if (s)
        *w = s & REL_MAX;
    return s != 0;
}

void srv_idle_touch_lfu(struct srv_idle *t, uint64_t fp, uint64_t now_ms, int log_factor,
                        int decay_min)
{
    uint64_t w;
    unsigned counter = SRV_LFU_INIT; /* first seen: as a key is created, uncounted */
    bool known = word_in(&t->cur, fp, &w) || word_in(&t->prev, fp, &w);
    if (known)
        counter = lfu_decayed(w, now_ms, decay_min);
    if (known && counter < 255) {
        t->rng ^= t->rng << 13;
        t->rng ^= t->rng >> 7;
        t->rng ^= t->rng << 17;
        if (!t->rng)
            t->rng = 0x9e3779b97f4a7c15ull;
        double r = (double)(t->rng >> 11) / (double)(1ull << 53);
        double base = counter > SRV_LFU_INIT ? counter - SRV_LFU_INIT : 0;
        if (r < 1.0 / (base * log_factor + 1))
            counter++;
    }
    uint64_t now_s = now_ms / 1000;
    if (now_s < t->cur.since_s)
        now_s = t->cur.since_s;
    size_t i = slot_for(t, fp, now_s);
    t->cur.slot[i] = fp << REL_BITS | (uint64_t)lfu_minutes(now_ms) << 8 | counter;
}

void srv_idle_set_lfu(struct srv_idle *t, unsigned db, const char *key, size_t klen,
                      unsigned counter, uint64_t now_ms)
{
    uint64_t fp = fp_of(db, key, klen), now_s = now_ms / 1000;
    if (now_s < t->cur.since_s)
        now_s = t->cur.since_s;
    size_t i = slot_for(t, fp, now_s);
    t->cur.slot[i] = fp << REL_BITS | (uint64_t)lfu_minutes(now_ms) << 8 | (counter & 0xff);
}

unsigned srv_idle_freq(const struct srv_idle *t, unsigned db, const char *key, size_t klen,
                       uint64_t now_ms, int decay_min)
{
    uint64_t fp = fp_of(db, key, klen), w;
    if (!word_in(&t->cur, fp, &w) && !word_in(&t->prev, fp, &w))
        return 0;
    return lfu_decayed(w, now_ms, decay_min);
}
