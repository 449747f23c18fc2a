/*
 * stor — RocksDB underneath the Redis types. See stor.h.
 */
#include "stor.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "stor_int.h"
#include "kv_mem.h"

static const char *const cf_names[STOR_CF_COUNT] = {"metadata", "default", "zset_score", "expiry"};

const char *stor_cf_name(int cf)
{
    return cf >= 0 && cf < STOR_CF_COUNT ? cf_names[cf] : "?";
}

/* ---- errors ---- */

static _Thread_local char errbuf[512];

const char *stor_errmsg(void)
{
    return errbuf;
}

/* Turns a RocksDB error string (malloc'd by RocksDB) into a code, keeps its
 * text for stor_errmsg() and frees it. */
int stor_take_err(char *err)
{
    snprintf(errbuf, sizeof errbuf, "%s", err);
    int rc = KV_ESTORAGE;
    if (strstr(err, "No space left") || strstr(err, "NoSpace"))
        rc = KV_ENOSPC;
    else if (strstr(err, "Corruption"))
        rc = KV_ECORRUPT;
    rocksdb_free(err);
    return rc;
}

/* ---- free disk space ---- */

/* Low below min, and once low until 1.5 times min (0: never low). */
static bool below(bool was_low, uint64_t avail, uint64_t min)
{
    return min && (was_low ? avail < min + min / 2 : avail < min);
}

/* Measures, and sets disk_low with the hysteresis stor.h describes. Until
 * the next measurement, writes may take a quarter of the room left above
 * the minimum: each byte committed can sit on disk up to about four times
 * at once (the WAL or journal, an L0 file, a compaction's input and
 * output). So a fast writer gets measured often near the limit, and a
 * timer alone (the daemon's 100 ms) would not do: in tests, 20 MB went by
 * between two ticks. For the same reason, the room counted is the file
 * system's free space less four times the bytes write-back has accepted
 * and not yet written to RocksDB: a flush batch (up to 16 MiB) lands at
 * once (test_disk ran out of room without this while batches could be
 * larger than its memtables: storage.md). */
static void disk_measure(struct stor *s)
{
    struct statvfs v;
    uint64_t min = s->disk.min_free, budget = UINT64_MAX;
    if (statvfs(s->dir, &v) == 0) { /* else cannot tell: leave the state as it is */
        uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize;
        uint64_t owed = min ? 4 * (uint64_t)wb_queued_bytes(s) : 0;
        s->disk.free = avail;
        avail = avail > owed ? avail - owed : 0;
        s->disk.data_low = below(s->disk.data_low, avail, min);
        if (min && !s->disk.data_low)
            budget = (avail - min) / 4;
    }
    /* The journal's tmpfs, where it has one: journal appends use it 1:1. */
    uint64_t jmin = min ? STOR_JSHM_FLOOR : 0;
    if (s->wb && s->j.shm && s->j.dir && statvfs(s->j.dir, &v) == 0) {
        uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize;
        s->disk.jshm_low = below(s->disk.jshm_low, avail, jmin);
        if (jmin && !s->disk.jshm_low && avail - jmin < budget)
            budget = avail - jmin;
    }
    s->disk.low = s->disk.data_low || s->disk.jshm_low;
    s->disk.budget = !min || s->disk.low ? 0 : budget;
}

int stor_disk_check(struct stor *s, uint64_t min_free, uint64_t *free_out)
{
    s->disk.min_free = min_free;
    disk_measure(s);
    if (free_out)
        *free_out = s->disk.free;
    if (s->disk.low == s->disk.low_told)
        return 0;
    s->disk.low_told = s->disk.low;
    return s->disk.low ? 1 : -1;
}

/* Counts a commit's bytes against the budget; measures once it is spent. */
static void disk_account(struct stor *s, size_t bytes)
{
    if (!s->disk.min_free || s->disk.low)
        return;
    if (bytes < s->disk.budget) {
        s->disk.budget -= bytes;
        return;
    }
    disk_measure(s);
}

/* ---- clock ---- */

uint64_t stor_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t stor_clock_override;

uint64_t stor_now_ms(void)
{
    uint64_t o = __atomic_load_n(&stor_clock_override, __ATOMIC_RELAXED);
    if (o)
        return o;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- record sets ---- */

void stor_batch_init(struct stor_batch *b)
{
    memset(b, 0, sizeof *b);
}

void stor_batch_destroy(struct stor_batch *b)
{
    free(b->ops);
    free(b->arena);
    free(b->index);
    memset(b, 0, sizeof *b);
}

/* What a clear keeps, whatever the record set just cleared used. */
#define BATCH_KEEP_OPS 1024
#define BATCH_KEEP_ARENA (64u << 10)
#define BATCH_KEEP_INDEX 4096

void stor_batch_clear(struct stor_batch *b)
{
    /* Clearing costs what the record set held, not what the largest one
     * ever did: the event loop clears before and after every command, and
     * zeroing the whole index, which one HSET of 300,000 fields had grown
     * to a million slots, held every later SET to 2,700/s. Each op knows
     * its slot; only those are emptied. Beyond the sizes above, memory
     * more than 8 times what the set used is given back (after a large
     * command, at the next command's clear); the next large set grows it
     * again in proportion to itself. */
    if (b->index)
        for (size_t i = 0; i < b->nops; i++)
            if (b->ops[i].kind != STOR_OP_DELRANGE)
                b->index[b->ops[i].islot] = 0;
    if (b->capindex > BATCH_KEEP_INDEX && b->capindex > 8 * 2 * b->nops) {
        free(b->index);
        b->index = NULL;
        b->capindex = 0;
    }
    if (b->capops > BATCH_KEEP_OPS && b->capops > 8 * b->nops) {
        free(b->ops);
        b->ops = NULL;
        b->capops = 0;
    }
    if (b->caparena > BATCH_KEEP_ARENA && b->caparena > 8 * b->used) {
        free(b->arena);
        b->arena = NULL;
        b->caparena = 0;
    }
    b->nops = 0;
    b->used = 0;
    b->nranges = 0;
}

static size_t arena_add(struct stor_batch *b, const char *p, size_t n)
{
    if (b->used + n > b->caparena) {
        size_t cap = b->caparena ? b->caparena : 1024;
        while (cap < b->used + n)
            cap *= 2;
        b->arena = kv_xrealloc(b->arena, cap);
        b->caparena = cap;
    }
    size_t off = b->used;
    if (n)
        memcpy(b->arena + off, p, n);
    b->used += n;
    return off;
}

static bool op_is(const struct stor_batch *b, const struct stor_op *op, int cf, const char *k,
                  size_t kn)
{
    return op->cf == cf && op->klen == kn && memcmp(b->arena + op->koff, k, kn) == 0;
}

/* Points the index slot of the op's key at op number i (the newest wins),
 * and notes the slot in the op, for stor_batch_clear. */
static void index_set(struct stor_batch *b, size_t i)
{
    struct stor_op *op = &b->ops[i];
    size_t mask = b->capindex - 1;
    for (size_t h = op->hash & mask;; h = (h + 1) & mask) {
        uint32_t e = b->index[h];
        if (e == 0 || op_is(b, &b->ops[e - 1], op->cf, b->arena + op->koff, op->klen)) {
            b->index[h] = (uint32_t)(i + 1);
            op->islot = (uint32_t)h;
            return;
        }
    }
}

static void index_grow(struct stor_batch *b)
{
    size_t cap = b->capindex ? b->capindex * 2 : 64;
    free(b->index);
    b->index = kv_xmalloc(cap * sizeof *b->index);
    memset(b->index, 0, cap * sizeof *b->index);
    b->capindex = cap;
    for (size_t i = 0; i < b->nops; i++)
        if (b->ops[i].kind != STOR_OP_DELRANGE)
            index_set(b, i);
}

static void batch_add(struct stor_batch *b, int kind, int cf, const char *k, size_t kn,
                      const char *v, size_t vn)
{
    if (b->nops == b->capops) {
        b->capops = b->capops ? b->capops * 2 : 16;
        b->ops = kv_xrealloc(b->ops, b->capops * sizeof *b->ops);
    }
    struct stor_op *op = &b->ops[b->nops];
    op->kind = (uint8_t)kind;
    op->cf = (uint8_t)cf;
    op->defer = false;
    op->cold = false;
    op->koff = arena_add(b, k, kn);
    op->klen = kn;
    op->voff = arena_add(b, v, vn);
    op->vlen = vn;
    op->hash = kind == STOR_OP_DELRANGE ? 0 : wb_ov_key_hash(cf, k, kn);
    b->nops++;
    if (kind == STOR_OP_DELRANGE) {
        b->nranges++;
        return;
    }
    /* Keep the index at most half full. */
    if (b->nops * 2 > b->capindex)
        index_grow(b);
    else
        index_set(b, b->nops - 1);
}

void stor_batch_put(struct stor_batch *b, int cf, const char *k, size_t kn, const char *v,
                    size_t vn)
{
    batch_add(b, STOR_OP_PUT, cf, k, kn, v, vn);
}

void stor_batch_put_cold(struct stor_batch *b, int cf, const char *k, size_t kn, const char *v,
                         size_t vn)
{
    batch_add(b, STOR_OP_PUT, cf, k, kn, v, vn);
    b->ops[b->nops - 1].cold = true;
}

void stor_batch_del(struct stor_batch *b, int cf, const char *k, size_t kn)
{
    batch_add(b, STOR_OP_DEL, cf, k, kn, NULL, 0);
}

void stor_batch_del_range(struct stor_batch *b, int cf, const char *lo, size_t lon,
                          const char *hi, size_t hin)
{
    batch_add(b, STOR_OP_DELRANGE, cf, lo, lon, hi, hin);
}

void stor_batch_defer(struct stor_batch *b, size_t i)
{
    b->ops[i].defer = true;
}

static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

int stor_batch_lookup(const struct stor_batch *b, int cf, const char *k, size_t kn,
                      const char **v, size_t *vn)
{
    size_t found = 0; /* op number + 1 */
    if (!b->nops)
        return STOR_ABSENT; /* a command's first look-up, mostly: no hash */
    if (b->capindex) {
        size_t mask = b->capindex - 1;
        for (size_t h = wb_ov_key_hash(cf, k, kn) & mask;; h = (h + 1) & mask) {
            uint32_t e = b->index[h];
            if (e == 0)
                break;
            if (op_is(b, &b->ops[e - 1], cf, k, kn)) {
                found = e;
                break;
            }
        }
    }
    /* A range delete queued after the newest write of k hides it. */
    for (size_t i = b->nops; b->nranges && i > found; i--) {
        const struct stor_op *op = &b->ops[i - 1];
        if (op->kind == STOR_OP_DELRANGE && op->cf == cf &&
            bytes_cmp(k, kn, b->arena + op->koff, op->klen) >= 0 &&
            bytes_cmp(k, kn, b->arena + op->voff, op->vlen) < 0)
            return STOR_DELETED;
    }
    if (!found)
        return STOR_ABSENT;
    const struct stor_op *op = &b->ops[found - 1];
    if (op->kind == STOR_OP_DEL)
        return STOR_DELETED;
    *v = b->arena + op->voff;
    *vn = op->vlen;
    return STOR_PUT;
}

/* A range delete that shares a memtable with the records it covers costs
 * every iterator that meets them: RocksDB 7.8's merging iterator steps
 * over such records one at a time, past the iterator's upper bound, until
 * it finds one the range does not cover. After a FLUSHALL every walk whose
 * range came before older records paid for all of them: HGETALL of a
 * new 10-field hash took 5-8 ms instead of 7 us, until the memtable was
 * flushed, which at a low write rate could be hours. A flush drops the
 * covered records from the memtable it writes, and records in older files
 * are passed by a seek; so the memtables are flushed at once, in the
 * background (a range delete comes from FLUSHDB and FLUSHALL only). */
void stor_flush_ranged(struct stor *s, unsigned cfmask)
{
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 0);
    for (int cf = 0; cf < STOR_CF_COUNT; cf++) {
        if (!(cfmask & 1u << cf))
            continue;
        char *err = NULL;
        rocksdb_flush_cf(s->db, fo, s->cf[cf], &err);
        if (err)
            rocksdb_free(err); /* only the walks stay slower; the write stands */
    }
    rocksdb_flushoptions_destroy(fo);
}

int stor_commit(struct stor *s, const struct stor_batch *b)
{
    if (b->nops == 0)
        return 0;
    disk_account(s, b->used);
    if (s->wb)
        return wb_commit(s, b);
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    unsigned ranged = 0; /* the families that range deletes write */
    for (size_t i = 0; i < b->nops; i++) {
        const struct stor_op *op = &b->ops[i];
        rocksdb_column_family_handle_t *cf = s->cf[op->cf];
        const char *k = b->arena + op->koff, *v = b->arena + op->voff;
        switch (op->kind) {
        case STOR_OP_PUT:
            rocksdb_writebatch_put_cf(wb, cf, k, op->klen, v, op->vlen);
            break;
        case STOR_OP_DEL:
            rocksdb_writebatch_delete_cf(wb, cf, k, op->klen);
            break;
        case STOR_OP_DELRANGE:
            rocksdb_writebatch_delete_range_cf(wb, cf, k, op->klen, v, op->vlen);
            ranged |= 1u << op->cf;
            break;
        }
    }
    char *err = NULL;
    rocksdb_write(s->db, s->wopts, wb, &err);
    rocksdb_writebatch_destroy(wb);
    if (err)
        return stor_take_err(err);
    if (ranged)
        stor_flush_ranged(s, ranged);
    return 0;
}

/* ---- compaction filters ---- */

/* One filter instance lives for one compaction. It remembers the last meta
 * record it looked up: sub records of one collection are adjacent, so a
 * million-field hash costs one meta read, not a million. Caching is safe in
 * both directions: a version that died never comes back, and keeping a
 * record one compaction too long only delays its collection. */
struct gc_filter {
    struct stor *s;
    int cf;
    char *mkey;
    size_t mkeylen, mkeycap;
    bool cached; /* mkey holds the last key looked up */
    bool known;  /* the look-up decided; false: keep everything (any doubt) */
    bool alive;  /* known: the meta record exists and is a collection */
    uint8_t type;
    uint64_t version;
};

static void gc_filter_free(void *state)
{
    struct gc_filter *f = state;
    free(f->mkey);
    free(f);
}

static const char *gc_filter_name(void *state)
{
    (void)state;
    return "shmkv.gc";
}

/* Looks up the meta record for the sub key's user key, through the cache. */
static void gc_lookup_meta(struct gc_filter *f, const struct enc_sub *sk)
{
    size_t need = enc_meta_key_len(sk->klen);
    if (f->cached && f->mkeylen == need && (uint8_t)f->mkey[0] == sk->db &&
        enc_get_u16(f->mkey + 1) == sk->slot && memcmp(f->mkey + 3, sk->key, sk->klen) == 0)
        return;
    if (need > f->mkeycap) {
        f->mkey = kv_xrealloc(f->mkey, need);
        f->mkeycap = need;
    }
    f->mkeylen = enc_meta_key(f->mkey, sk->db, sk->slot, sk->key, sk->klen);
    f->cached = true;
    f->known = false; /* until the look-up decides, nothing is dropped */
    struct stor *s = f->s;
    pthread_mutex_lock(&s->gc_mu);
    if (!s->gc_open) {
        pthread_mutex_unlock(&s->gc_mu);
        return;
    }
    char *err = NULL;
    size_t vn = 0;
    char *v = rocksdb_get_cf(s->db, s->ropts, s->cf[STOR_CF_META], f->mkey, f->mkeylen, &vn, &err);
    pthread_mutex_unlock(&s->gc_mu);
    if (err) {
        rocksdb_free(err);
        f->cached = false; /* a transient error: ask again next record */
        return;
    }
    if (!v) {
        f->known = true;
        f->alive = false;
        return;
    }
    struct enc_meta m;
    if (enc_meta_value_decode(v, vn, &m) == 0) { /* a corrupt record decides nothing */
        f->known = true;
        f->type = m.type;
        f->version = m.version;
        f->alive = m.type != ENC_TYPE_STRING;
    }
    rocksdb_free(v);
}

static unsigned char gc_filter_sub(void *state, int level, const char *key, size_t klen,
                                   const char *val, size_t vlen, char **newv, size_t *newvlen,
                                   unsigned char *changed)
{
    (void)level, (void)val, (void)vlen, (void)newv, (void)newvlen;
    struct gc_filter *f = state;
    *changed = 0;
    struct enc_sub sk;
    if (enc_sub_decode(key, klen, &sk))
        return 0; /* not ours to judge */
    gc_lookup_meta(f, &sk);
    if (!f->known)
        return 0; /* not open yet (compactions start during open), an error, or corruption */
    if (!f->alive)
        return 1;
    if (f->version != sk.version)
        return 1;
    if (f->cf == STOR_CF_SCORE && f->type != ENC_TYPE_ZSET)
        return 1;
    /* Not expiry: RocksDB may lag the overlay (a PERSIST not yet flushed),
     * so "expired in RocksDB" does not mean expired. Expired keys are
     * deleted through the write path (db_reap); their records go then. */
    return 0;
}

static rocksdb_compactionfilter_t *gc_filter_create(void *state,
                                                    rocksdb_compactionfiltercontext_t *ctx)
{
    (void)ctx;
    struct gc_filter *fs = kv_xmalloc(sizeof *fs);
    memset(fs, 0, sizeof *fs);
    const struct gc_filter *proto = state; /* s and cf of this column family */
    fs->s = proto->s;
    fs->cf = proto->cf;
    return rocksdb_compactionfilter_create(fs, gc_filter_free, gc_filter_sub, gc_filter_name);
}

static void gc_factory_free(void *state)
{
    free(state);
}

static const char *gc_factory_name(void *state)
{
    (void)state;
    return "shmkv.gc.factory";
}

/* ---- open / close ---- */

static int mkdir_p(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path)
        return -ENAMETOOLONG;
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        char c = path[i];
        path[i] = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return -errno;
        path[i] = c;
    }
    return 0;
}

size_t stor_write_buffer_bytes(const struct stor_opts *o)
{
    return o->write_buffer_bytes ? o->write_buffer_bytes : 64u << 20;
}

static rocksdb_options_t *cf_options(struct stor *s, int cf, const struct stor_opts *o,
                                     rocksdb_cache_t *cache)
{
    rocksdb_options_t *opt = rocksdb_options_create();
    rocksdb_options_set_write_buffer_size(opt, stor_write_buffer_bytes(o));
    rocksdb_options_set_max_write_buffer_number(opt, 4);
    rocksdb_options_set_level_compaction_dynamic_level_bytes(opt, 1);
    rocksdb_options_set_target_file_size_base(opt, 64u << 20);
    rocksdb_options_set_max_bytes_for_level_base(opt, 256u << 20);
    if (o->compression) {
        rocksdb_options_set_compression(opt, rocksdb_lz4_compression);
        rocksdb_options_set_bottommost_compression(opt, rocksdb_zstd_compression);
    } else {
        rocksdb_options_set_compression(opt, rocksdb_no_compression);
    }

    rocksdb_block_based_table_options_t *t = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(t, cache);
    rocksdb_block_based_options_set_block_size(t, 16 * 1024);
    rocksdb_block_based_options_set_format_version(t, 5);
    rocksdb_block_based_options_set_cache_index_and_filter_blocks(t, 1);
    rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(t, 1);
    /* Point reads hit the meta CF (every command) and the sub CF (HGET,
     * SISMEMBER, ZSCORE, LINDEX); the score and expiry indexes are scanned. */
    if (cf == STOR_CF_META || cf == STOR_CF_SUB) {
        rocksdb_block_based_options_set_filter_policy(t, rocksdb_filterpolicy_create_bloom_full(10));
        /* Most look-ups before a write miss (a new key, field or member): a
         * memtable bloom filter answers those without a skiplist search,
         * which profiling showed to be the dominant cost. */
        rocksdb_options_set_memtable_prefix_bloom_size_ratio(opt, 0.05);
        rocksdb_options_set_memtable_whole_key_filtering(opt, 1);
        /* A point read finds its key's restart interval in a block by a
         * small hash table instead of a binary search over the block's
         * keys, which profiling put first in a cold key's read. */
        rocksdb_block_based_options_set_data_block_index_type(
            t, rocksdb_block_based_table_data_block_index_type_binary_search_and_hash);
        rocksdb_block_based_options_set_data_block_hash_ratio(t, 0.75);
    }
    rocksdb_options_set_block_based_table_factory(opt, t);
    rocksdb_block_based_options_destroy(t);

    /* Sub and score records die with their meta record. The expiry index
     * needs no filter: active expiry deletes each entry when its time
     * comes, whether or not the key still has that expiry. */
    if (cf == STOR_CF_SUB || cf == STOR_CF_SCORE) {
        struct gc_filter *proto = kv_xmalloc(sizeof *proto);
        memset(proto, 0, sizeof *proto);
        proto->s = s;
        proto->cf = cf;
        rocksdb_compactionfilterfactory_t *fac = rocksdb_compactionfilterfactory_create(
            proto, gc_factory_free, gc_filter_create, gc_factory_name);
        rocksdb_options_set_compaction_filter_factory(opt, fac); /* options own it */
    }
    return opt;
}

void stor_thread_quiet(void)
{
    /* RocksDB counts into a thread's perf context on every operation by
     * default (kEnableCount); nothing here reads it. */
    rocksdb_set_perf_level(rocksdb_disable);
}

int stor_open(struct stor **out, const struct stor_opts *o, const char **errmsg)
{
    *out = NULL;
    int rc = mkdir_p(o->dir);
    if (rc) {
        snprintf(errbuf, sizeof errbuf, "cannot create %s: %s", o->dir, strerror(-rc));
        if (errmsg)
            *errmsg = errbuf;
        return rc;
    }
    struct stor *s = kv_xmalloc(sizeof *s);
    memset(s, 0, sizeof *s);
    s->o = *o;
    s->dir = kv_xmemdup(o->dir, strlen(o->dir) + 1);
    stor_thread_quiet(); /* the opener's thread is the executor */
    pthread_mutex_init(&s->gc_mu, NULL);
    pthread_mutex_init(&s->cmp.mu, NULL);
    pthread_cond_init(&s->cmp.cv, NULL);
    pthread_mutex_init(&s->rs.mu, NULL);
    s->j.fd = -1;
    wb_ov_init(&s->ov);

    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int jobs = o->background_jobs ? o->background_jobs : (ncpu > 2 ? (int)ncpu : 2);
    s->dbopts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(s->dbopts, 1);
    rocksdb_options_set_create_missing_column_families(s->dbopts, 1);
    rocksdb_options_increase_parallelism(s->dbopts, jobs);
    rocksdb_options_set_max_background_jobs(s->dbopts, jobs);
    rocksdb_options_set_bytes_per_sync(s->dbopts, 1u << 20);
    rocksdb_options_set_max_total_wal_size(s->dbopts, 512u << 20);
    rocksdb_options_set_keep_log_file_num(s->dbopts, 4);
    /* With write-back only the flusher writes, in sorted batches, and
     * nothing reads RocksDB for a key the overlay still holds, so what
     * unordered writes give up (snapshots that no concurrent write lands
     * in later) is never used. What they give: every batch takes RocksDB's
     * concurrent memtable path, the one that keeps an insert hint per
     * batch, so each insert starts from the last one's place instead of
     * the skiplist's top (the flusher's CPU per SET about a fifth lower;
     * docs/writeback.md). */
    if (o->writeback)
        rocksdb_options_set_unordered_write(s->dbopts, 1);
    rocksdb_options_set_max_log_file_size(s->dbopts, 16u << 20);
    if (o->compaction_io_bytes) {
        /* 100 ms refills, RocksDB's default; the options keep their own
         * reference to the limiter. */
        rocksdb_ratelimiter_t *rl =
            rocksdb_ratelimiter_create((int64_t)o->compaction_io_bytes, 100 * 1000, 10);
        rocksdb_options_set_ratelimiter(s->dbopts, rl);
        rocksdb_ratelimiter_destroy(rl);
    }

    rocksdb_cache_t *cache =
        rocksdb_cache_create_lru(o->block_cache_bytes ? o->block_cache_bytes : 256u << 20);
    for (int i = 0; i < STOR_CF_COUNT; i++)
        s->cfopts[i] = cf_options(s, i, o, cache);
    rocksdb_cache_destroy(cache); /* the table factories hold their references */

    s->ropts = rocksdb_readoptions_create();
    s->wopts = rocksdb_writeoptions_create();
    /* Without write-back, appendfsync always syncs RocksDB's WAL per commit;
     * with it, the journal is what gets synced before a reply. */
    rocksdb_writeoptions_set_sync(s->wopts, !o->writeback && o->fsync == STOR_FSYNC_ALWAYS);
    s->wopts_nowal = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(s->wopts_nowal, 1);
    /* The hint applies on RocksDB's concurrent memtable path (unordered
     * writes, or parallel flusher parts), to batches in key order. Never
     * to one holding a range delete: RocksDB 7.8 keeps one hint per
     * memtable for both of its skiplists, points and ranges, and the next
     * insert walks the wrong list (an assertion in Debian's build). */
    s->wopts_hint = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_memtable_insert_hint_per_batch(s->wopts_hint, 1);
    s->wopts_nowal_hint = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(s->wopts_nowal_hint, 1);
    rocksdb_writeoptions_set_memtable_insert_hint_per_batch(s->wopts_nowal_hint, 1);

    char *err = NULL;
    rocksdb_t *db = rocksdb_open_column_families(
        s->dbopts, o->dir, STOR_CF_COUNT, (const char *const *)cf_names,
        (const rocksdb_options_t *const *)s->cfopts, s->cf, &err);
    if (err) {
        rc = stor_take_err(err);
        if (errmsg)
            *errmsg = errbuf;
        stor_close(s);
        return rc;
    }
    pthread_mutex_lock(&s->gc_mu);
    s->db = db;
    s->gc_open = true;
    pthread_mutex_unlock(&s->gc_mu);
    if (o->writeback && (rc = wb_open(s, errmsg)) != 0) {
        stor_close_abandon(s);
        return rc;
    }
    *out = s;
    return 0;
}

static void compact_stop(struct stor *s);

static void close_all(struct stor *s, bool clean)
{
    if (!s)
        return;
    if (s->db)
        compact_stop(s);
    wb_close(s, clean);
    if (s->db && clean) {
        /* Flush the memtables so the next open has no WAL to replay. */
        rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
        rocksdb_flushoptions_set_wait(fo, 1);
        for (int i = 0; i < STOR_CF_COUNT; i++) {
            char *err = NULL;
            rocksdb_flush_cf(s->db, fo, s->cf[i], &err);
            if (err)
                rocksdb_free(err); /* the WAL still has it: only the next open is slower */
        }
        rocksdb_flushoptions_destroy(fo);
    }
    if (s->db) {
        rocksdb_cancel_all_background_work(s->db, 1);
        pthread_mutex_lock(&s->gc_mu); /* no filter look-up runs past here */
        s->gc_open = false;
        pthread_mutex_unlock(&s->gc_mu);
        for (int i = 0; i < STOR_CF_COUNT; i++)
            if (s->cf[i])
                rocksdb_column_family_handle_destroy(s->cf[i]);
        rocksdb_close(s->db);
    }
    for (int i = 0; i < STOR_CF_COUNT; i++)
        if (s->cfopts[i])
            rocksdb_options_destroy(s->cfopts[i]);
    if (s->dbopts)
        rocksdb_options_destroy(s->dbopts);
    if (s->ropts)
        rocksdb_readoptions_destroy(s->ropts);
    if (s->wopts)
        rocksdb_writeoptions_destroy(s->wopts);
    if (s->wopts_nowal)
        rocksdb_writeoptions_destroy(s->wopts_nowal);
    if (s->wopts_hint)
        rocksdb_writeoptions_destroy(s->wopts_hint);
    if (s->wopts_nowal_hint)
        rocksdb_writeoptions_destroy(s->wopts_nowal_hint);
    wb_ov_destroy(&s->ov);
    pthread_mutex_destroy(&s->gc_mu);
    pthread_mutex_destroy(&s->cmp.mu);
    pthread_cond_destroy(&s->cmp.cv);
    pthread_mutex_destroy(&s->rs.mu);
    free(s->dir);
    free(s);
}

void stor_close(struct stor *s)
{
    close_all(s, true);
}

void stor_close_abandon(struct stor *s)
{
    close_all(s, false);
}

/* ---- reads ---- */

uint64_t stor_prefetch_slot(const struct stor *s, int cf, const char *k, size_t kn)
{
    if (!s->wb)
        return 0;
    uint64_t h = wb_ov_key_hash(cf, k, kn);
    wb_ov_prefetch(&s->ov, h, 1);
    return h;
}

void stor_prefetch_node(const struct stor *s, uint64_t hash)
{
    if (s->wb)
        wb_ov_prefetch(&s->ov, hash, 2);
}

uint64_t stor_key_hash(int cf, const char *k, size_t kn)
{
    return wb_ov_key_hash(cf, k, kn);
}

int stor_peek(const struct stor *s, uint64_t h, int cf, const char *k, size_t kn, const char **v,
              size_t *vn)
{
    const struct wb_ov_node *on = wb_ov_find_h(&s->ov, h, cf, k, kn);
    if (on) {
        if (!on->val)
            return STOR_DELETED;
        *v = on->val;
        *vn = on->vlen;
        return STOR_PUT;
    }
    if (s->ov.nranges && wb_ov_range_covers(&s->ov, cf, k, kn))
        return STOR_DELETED;
    return STOR_ABSENT;
}

/* The overlay's answer to a point read, where RocksDB's would be stale: it
 * holds every write RocksDB does not have yet, and the range deletes still
 * pending. True with *rc (and *v, *vn on 0) when it answers. */
static inline bool ov_get(struct stor *s, int cf, const char *k, size_t kn, char **v,
                          size_t *vn, int *rc)
{
    const struct wb_ov_node *on = wb_ov_find(&s->ov, cf, k, kn);
    if (on) {
        *rc = on->val ? 0 : KV_ENOTFOUND;
        if (on->val) {
            *v = kv_xmemdup(on->val, on->vlen);
            *vn = on->vlen;
        }
        return true;
    }
    if (s->ov.nranges && wb_ov_range_covers(&s->ov, cf, k, kn)) {
        *rc = KV_ENOTFOUND;
        return true;
    }
    return false;
}

int stor_get(struct stor *s, int cf, const char *k, size_t kn, char **v, size_t *vn)
{
    int rc;
    if (ov_get(s, cf, k, kn, v, vn, &rc))
        return rc;
    char *err = NULL;
    size_t n = 0;
    /* A pinned slice points into the block cache or memtable: one copy into
     * our own buffer, and the caller's free() pairs with our allocator. */
    rocksdb_pinnableslice_t *ps = rocksdb_get_pinned_cf(s->db, s->ropts, s->cf[cf], k, kn, &err);
    if (err)
        return stor_take_err(err);
    if (!ps)
        return KV_ENOTFOUND;
    const char *r = rocksdb_pinnableslice_value(ps, &n);
    *v = kv_xmemdup(r, n);
    *vn = n;
    rocksdb_pinnableslice_destroy(ps);
    return 0;
}

#define GET_MANY_CHUNK 64 /* keys per MultiGet: its arrays on the stack */

void stor_get_many(struct stor *s, int cf, size_t n, const char *const *k, const size_t *kn,
                   char **v, size_t *vn, int *rc)
{
    const char *keys[GET_MANY_CHUNK];
    size_t kns[GET_MANY_CHUNK], at[GET_MANY_CHUNK];
    rocksdb_pinnableslice_t *vals[GET_MANY_CHUNK];
    char *errs[GET_MANY_CHUNK];
    size_t i = 0;
    while (i < n) {
        size_t m = 0;
        for (; i < n && m < GET_MANY_CHUNK; i++) {
            if (ov_get(s, cf, k[i], kn[i], &v[i], &vn[i], &rc[i]))
                continue;
            keys[m] = k[i];
            kns[m] = kn[i];
            at[m++] = i;
        }
        if (!m)
            continue;
        rocksdb_batched_multi_get_cf(s->db, s->ropts, s->cf[cf], m, keys, kns, vals, errs, false);
        for (size_t j = 0; j < m; j++) {
            size_t x = at[j];
            if (errs[j]) {
                rc[x] = stor_take_err(errs[j]);
            } else if (!vals[j]) {
                rc[x] = KV_ENOTFOUND;
            } else {
                size_t vlen = 0;
                const char *r = rocksdb_pinnableslice_value(vals[j], &vlen);
                v[x] = kv_xmemdup(r, vlen);
                vn[x] = vlen;
                rc[x] = 0;
            }
            rocksdb_pinnableslice_destroy(vals[j]);
        }
    }
}

/* An iterator merging RocksDB (r) with the overlay (o) over [lo, hi) of one
 * column family. The overlay wins on equal keys and its tombstones hide;
 * pending range deletes hide RocksDB records. `cur` says which side holds
 * the current entry; `dir` the direction of travel (+1 or -1). */
enum { IT_NONE = 0, IT_R = 1, IT_O = 2, IT_BOTH = 3, IT_SNAP = 4 };

struct stor_it {
    struct stor *s;
    int cf;
    rocksdb_iterator_t *it;
    rocksdb_readoptions_t *ro;
    char *lo, *hi; /* the bounds must outlive the RocksDB iterator */
    size_t lon, hin;
    const struct wb_ov_node *o;
    int cur, dir;
    char *save; /* the current key, kept across a change of direction */
    size_t savecap;
    bool raw; /* RocksDB alone: the overlay's pending writes not merged */
    bool limited; /* a skip limit: where it lands says nothing of what it passed */
    stor_it_edge_fn edge; /* stor_it_on_edge */
    void *edge_arg;
    struct stor_snap *snap; /* a snapshot iterator's records; it->it is NULL */
    size_t pos;             /* its current record (cur IT_SNAP) */
};

struct stor_it *stor_it_create(struct stor *s, int cf, const char *lo, size_t lon,
                               const char *hi, size_t hin)
{
    return stor_it_create_limited(s, cf, lo, lon, hi, hin, 0);
}

struct stor_it *stor_it_create_limited(struct stor *s, int cf, const char *lo, size_t lon,
                                       const char *hi, size_t hin, uint64_t max_skip)
{
    struct stor_it *it = kv_xmalloc(sizeof *it);
    memset(it, 0, sizeof *it);
    it->s = s;
    it->cf = cf;
    it->ro = rocksdb_readoptions_create();
    it->lo = lo ? kv_xmemdup(lo, lon) : NULL;
    it->hi = hi ? kv_xmemdup(hi, hin) : NULL;
    it->lon = lon;
    it->hin = hin;
    if (lo)
        rocksdb_readoptions_set_iterate_lower_bound(it->ro, it->lo, lon);
    if (hi)
        rocksdb_readoptions_set_iterate_upper_bound(it->ro, it->hi, hin);
    it->limited = max_skip != 0;
    if (max_skip)
        rocksdb_readoptions_set_max_skippable_internal_keys(it->ro, max_skip);
    it->it = rocksdb_create_iterator_cf(s->db, it->ro, s->cf[cf]);
    return it;
}

struct stor_it *stor_it_create_raw(struct stor *s, int cf, const char *lo, size_t lon,
                                   const char *hi, size_t hin)
{
    struct stor_it *it = stor_it_create(s, cf, lo, lon, hi, hin);
    it->raw = true;
    return it;
}

/* Whether overlay node n lies inside the iterator's column family and range. */
static bool o_inside(const struct stor_it *it, const struct wb_ov_node *n)
{
    if (!n || n->cf != it->cf)
        return false;
    if (it->lo && wb_ov_cmp(n->cf, n->key, n->klen, it->cf, it->lo, it->lon) < 0)
        return false;
    if (it->hi && wb_ov_cmp(n->cf, n->key, n->klen, it->cf, it->hi, it->hin) >= 0)
        return false;
    return true;
}

static void r_step(struct stor_it *it, int dir)
{
    if (dir > 0)
        rocksdb_iter_next(it->it);
    else
        rocksdb_iter_prev(it->it);
}

/* Links the overlay's waiting nodes that the iterator's range may hold
 * (wb_ov_order): at every seek, as writes may have come since the last. */
static void o_order(struct stor_it *it)
{
    if (!it->raw)
        wb_ov_order(&it->s->ov, it->cf, it->lo, it->lon, it->hi, it->hin);
}

static void o_step(struct stor_it *it, int dir)
{
    it->o = dir > 0 ? wb_ov_next(it->o) : wb_ov_prev(&it->s->ov, it->o);
}

static __thread uint64_t ov_skips;   /* the overlay's deletes stepped over */
static __thread uint64_t it_moves;   /* moves of storage iterators (stor_moves) */
static __thread bool skips_on;
static __thread rocksdb_perfcontext_t *perf; /* the thread's, for its life */

/* Makes the current entry the first visible one in direction dir. */
static void settle(struct stor_it *it, int dir)
{
    it->dir = dir;
    struct wb_ov *ov = &it->s->ov;
    for (;;) {
        bool rv = rocksdb_iter_valid(it->it);
        size_t rn = 0;
        const char *rk = rv ? rocksdb_iter_key(it->it, &rn) : NULL;
        if (rv && !it->raw && ov->nranges && wb_ov_range_covers(ov, it->cf, rk, rn)) {
            r_step(it, dir);
            ov_skips++;
            continue;
        }
        bool ovld = o_inside(it, it->o);
        if (!rv && !ovld) {
            it->cur = IT_NONE;
            return;
        }
        int c = !rv ? 1 : !ovld ? -1 : wb_ov_cmp(it->cf, rk, rn, it->cf, it->o->key, it->o->klen);
        if (!rv || !ovld)
            c *= dir; /* one side only: "first" whatever the direction */
        if (c == 0) {
            if (it->o->val) {
                it->cur = IT_BOTH;
                return;
            }
            r_step(it, dir); /* a tombstone hides both */
            o_step(it, dir);
            ov_skips++;
            continue;
        }
        bool r_first = dir > 0 ? c < 0 : c > 0;
        if (r_first) {
            it->cur = IT_R;
            return;
        }
        if (it->o->val) {
            it->cur = IT_O;
            return;
        }
        o_step(it, dir); /* a tombstone with nothing under it */
        ov_skips++;
    }
}

void stor_skips_watch(bool on)
{
    if (on == skips_on)
        return;
    skips_on = on;
    rocksdb_set_perf_level(on ? rocksdb_enable_count : rocksdb_disable);
}

uint64_t stor_moves(void)
{
    return it_moves;
}

size_t stor_waiting(const struct stor *s, int cf)
{
    return wb_ov_waiting(&s->ov, cf);
}

uint64_t stor_skips(void)
{
    if (!skips_on)
        return ov_skips;
    if (!perf)
        perf = rocksdb_perfcontext_create();
    return ov_skips + rocksdb_perfcontext_metric(perf, rocksdb_internal_delete_skipped_count);
}

void stor_it_on_edge(struct stor_it *it, stor_it_edge_fn fn, void *arg)
{
    it->edge = fn;
    it->edge_arg = arg;
}

/* After a move to the range's edge in direction dir: where it landed. */
static void edge_note(struct stor_it *it, int dir)
{
    if (it->edge && !it->limited && it->cur != IT_NONE) {
        size_t kn;
        const char *k = stor_it_key(it, &kn);
        it->edge(it->edge_arg, dir, k, kn);
    }
}

/* ---- snapshot iterators ---- */

struct stor_snap *stor_snap_new(size_t n, size_t bytes)
{
    struct stor_snap *sn = kv_xmalloc(sizeof *sn);
    sn->n = 0;
    sn->cap = n;
    sn->used = 0;
    sn->room = bytes;
    sn->refs = 1;
    sn->rec = kv_xmalloc((n ? n : 1) * sizeof *sn->rec);
    sn->data = kv_xmalloc(bytes ? bytes : 1);
    return sn;
}

void stor_snap_add(struct stor_snap *sn, const char *k, size_t kn, const char *v, size_t vn)
{
    if (sn->n == sn->cap) {
        sn->cap = sn->cap ? 2 * sn->cap : 8;
        sn->rec = kv_xrealloc(sn->rec, sn->cap * sizeof *sn->rec);
    }
    if (sn->room - sn->used < kn + vn) {
        sn->room = 2 * sn->room > sn->used + kn + vn ? 2 * sn->room : sn->used + kn + vn;
        sn->data = kv_xrealloc(sn->data, sn->room);
    }
    struct stor_snap_rec *r = &sn->rec[sn->n++];
    r->koff = sn->used;
    r->kn = kn;
    memcpy(sn->data + sn->used, k, kn);
    sn->used += kn;
    r->voff = sn->used;
    r->vn = vn;
    if (vn)
        memcpy(sn->data + sn->used, v, vn);
    sn->used += vn;
}

void stor_snap_unref(struct stor_snap *sn)
{
    if (!sn || --sn->refs)
        return;
    free(sn->rec);
    free(sn->data);
    free(sn);
}

struct stor_it *stor_it_create_snap(struct stor_snap *sn)
{
    struct stor_it *it = kv_xmalloc(sizeof *it);
    memset(it, 0, sizeof *it);
    it->snap = sn;
    sn->refs++;
    return it;
}

static void snap_at(struct stor_it *it, size_t pos)
{
    it->pos = pos;
    it->cur = pos < it->snap->n ? IT_SNAP : IT_NONE;
}

/* The first record whose key is at least k (after: greater than k). */
static size_t snap_bound(const struct stor_snap *sn, const char *k, size_t kn, bool after)
{
    size_t lo = 0, hi = sn->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct stor_snap_rec *r = &sn->rec[mid];
        size_t m = r->kn < kn ? r->kn : kn;
        int c = memcmp(sn->data + r->koff, k, m);
        if (!c)
            c = (r->kn > kn) - (r->kn < kn);
        if (after ? c <= 0 : c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void stor_it_seek(struct stor_it *it, const char *k, size_t kn)
{
    if (it->snap) {
        snap_at(it, snap_bound(it->snap, k, kn, false));
        return;
    }
    it_moves++;
    rocksdb_iter_seek(it->it, k, kn);
    bool edge = it->lo ? wb_ov_cmp(it->cf, k, kn, it->cf, it->lo, it->lon) <= 0 : kn == 0;
    if (it->lo && edge)
        k = it->lo, kn = it->lon;
    o_order(it);
    it->o = it->raw ? NULL : wb_ov_seek(&it->s->ov, it->cf, k, kn);
    settle(it, 1);
    if (edge)
        edge_note(it, 1);
}

void stor_it_seek_prev(struct stor_it *it, const char *k, size_t kn)
{
    if (it->snap) {
        size_t b = snap_bound(it->snap, k, kn, true);
        snap_at(it, b ? b - 1 : it->snap->n);
        return;
    }
    it_moves++;
    rocksdb_iter_seek_for_prev(it->it, k, kn);
    bool edge = it->hi && wb_ov_cmp(it->cf, k, kn, it->cf, it->hi, it->hin) >= 0;
    o_order(it);
    if (it->raw)
        it->o = NULL;
    else if (edge)
        it->o = wb_ov_seek_before(&it->s->ov, it->cf, it->hi, it->hin);
    else
        it->o = wb_ov_seek_prev(&it->s->ov, it->cf, k, kn);
    settle(it, -1);
    if (edge)
        edge_note(it, -1);
}

void stor_it_first(struct stor_it *it)
{
    if (it->snap) {
        snap_at(it, 0);
        return;
    }
    it_moves++;
    rocksdb_iter_seek_to_first(it->it);
    o_order(it);
    it->o = it->raw ? NULL : wb_ov_seek(&it->s->ov, it->cf, it->lo ? it->lo : "", it->lo ? it->lon : 0);
    settle(it, 1);
    edge_note(it, 1);
}

void stor_it_last(struct stor_it *it)
{
    if (it->snap) {
        snap_at(it, it->snap->n ? it->snap->n - 1 : 0);
        return;
    }
    it_moves++;
    rocksdb_iter_seek_to_last(it->it);
    o_order(it);
    if (it->raw)
        it->o = NULL;
    else if (it->hi)
        it->o = wb_ov_seek_before(&it->s->ov, it->cf, it->hi, it->hin);
    else
        it->o = wb_ov_seek_before(&it->s->ov, it->cf + 1, "", 0);
    settle(it, -1);
    edge_note(it, -1);
}

/* Turning around: both sides are placed just past the current key in the new
 * direction, which a RocksDB iterator cannot do by stepping alone. */
static void turn(struct stor_it *it, int dir)
{
    size_t kn;
    const char *k = stor_it_key(it, &kn);
    if (kn > it->savecap) {
        it->save = kv_xrealloc(it->save, kn);
        it->savecap = kn;
    }
    memcpy(it->save, k, kn);
    struct wb_ov *ov = &it->s->ov;
    o_order(it);
    if (dir < 0) {
        rocksdb_iter_seek_for_prev(it->it, it->save, kn);
        if (rocksdb_iter_valid(it->it)) {
            size_t rn;
            const char *rk = rocksdb_iter_key(it->it, &rn);
            if (rn == kn && memcmp(rk, it->save, kn) == 0)
                rocksdb_iter_prev(it->it);
        }
        it->o = it->raw ? NULL : wb_ov_seek_before(ov, it->cf, it->save, kn);
    } else {
        rocksdb_iter_seek(it->it, it->save, kn);
        if (rocksdb_iter_valid(it->it)) {
            size_t rn;
            const char *rk = rocksdb_iter_key(it->it, &rn);
            if (rn == kn && memcmp(rk, it->save, kn) == 0)
                rocksdb_iter_next(it->it);
        }
        it->o = it->raw ? NULL : wb_ov_seek(ov, it->cf, it->save, kn);
        if (it->o && wb_ov_cmp(it->o->cf, it->o->key, it->o->klen, it->cf, it->save, kn) == 0)
            it->o = wb_ov_next(it->o);
    }
    settle(it, dir);
}

static void step(struct stor_it *it, int dir)
{
    if (it->cur == IT_NONE)
        return;
    if (dir != it->dir) {
        turn(it, dir);
        return;
    }
    if (it->cur & IT_R)
        r_step(it, dir);
    if (it->cur & IT_O)
        o_step(it, dir);
    settle(it, dir);
}

void stor_it_next(struct stor_it *it)
{
    if (it->snap) {
        snap_at(it, it->pos + 1);
    } else {
        it_moves++;
        step(it, 1);
    }
}

void stor_it_prev(struct stor_it *it)
{
    if (it->snap) {
        snap_at(it, it->pos ? it->pos - 1 : it->snap->n);
    } else {
        it_moves++;
        step(it, -1);
    }
}

int stor_it_valid(const struct stor_it *it)
{
    return it->cur != IT_NONE;
}

const char *stor_it_key(const struct stor_it *it, size_t *n)
{
    if (it->cur == IT_SNAP) {
        *n = it->snap->rec[it->pos].kn;
        return it->snap->data + it->snap->rec[it->pos].koff;
    }
    if (it->cur == IT_R)
        return rocksdb_iter_key(it->it, n);
    *n = it->o->klen;
    return it->o->key;
}

const char *stor_it_value(const struct stor_it *it, size_t *n)
{
    if (it->cur == IT_SNAP) {
        *n = it->snap->rec[it->pos].vn;
        return it->snap->data + it->snap->rec[it->pos].voff;
    }
    if (it->cur == IT_R)
        return rocksdb_iter_value(it->it, n);
    *n = it->o->vlen;
    return it->o->val;
}

/* RocksDB's Status::Incomplete, as its message begins: what an iterator
 * that passed its max_skippable_internal_keys reports. */
static bool incomplete(const char *err)
{
    return !strncmp(err, "Result incomplete", 17);
}

int stor_it_status(const struct stor_it *it)
{
    if (it->snap)
        return 0;
    char *err = NULL;
    rocksdb_iter_get_error(it->it, &err);
    if (err && incomplete(err)) {
        rocksdb_free(err);
        return 0;
    }
    return err ? stor_take_err(err) : 0;
}

bool stor_it_stopped(const struct stor_it *it)
{
    if (it->snap)
        return false;
    char *err = NULL;
    rocksdb_iter_get_error(it->it, &err);
    bool stopped = err && incomplete(err);
    rocksdb_free(err);
    return stopped;
}

void stor_it_free(struct stor_it *it)
{
    if (!it)
        return;
    if (it->snap) {
        stor_snap_unref(it->snap);
        free(it);
        return;
    }
    rocksdb_iter_destroy(it->it);
    rocksdb_readoptions_destroy(it->ro);
    free(it->lo);
    free(it->hi);
    free(it->save);
    free(it);
}

/* ---- maintenance ---- */

int stor_compact(struct stor *s, int cf)
{
    int rc = stor_drain(s); /* compaction can only collect what RocksDB has */
    if (rc)
        return rc;
    stor_housekeep(s);
    char *err = NULL;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(fo, 1);
    rocksdb_flush_cf(s->db, fo, s->cf[cf], &err);
    rocksdb_flushoptions_destroy(fo);
    if (err)
        return stor_take_err(err);
    /* Bottommost level too: otherwise a record already at the last level is
     * never shown to the filter. */
    rocksdb_compactoptions_t *co = rocksdb_compactoptions_create();
    rocksdb_compactoptions_set_bottommost_level_compaction(co, 1 /* kForce */);
    rocksdb_compactoptions_set_exclusive_manual_compaction(co, 0);
    rocksdb_compact_range_cf_opt(s->db, s->cf[cf], co, NULL, 0, NULL, 0);
    rocksdb_compactoptions_destroy(co);
    return 0;
}

static void *compact_main(void *arg)
{
    struct stor *s = arg;
    pthread_setname_np(pthread_self(), "shmkv-compact");
    stor_thread_quiet();
    rocksdb_compactoptions_t *co = rocksdb_compactoptions_create();
    rocksdb_compactoptions_set_bottommost_level_compaction(co, 1 /* kForce */);
    rocksdb_compactoptions_set_exclusive_manual_compaction(co, 0);
    pthread_mutex_lock(&s->cmp.mu);
    for (;;) {
        while (!s->cmp.stop && !s->cmp.nreq)
            pthread_cond_wait(&s->cmp.cv, &s->cmp.mu);
        if (s->cmp.stop)
            break;
        struct stor_range r[STOR_COMPACT_RANGES];
        size_t n = s->cmp.nreq;
        memcpy(r, s->cmp.req, n * sizeof *r);
        s->cmp.nreq = 0;
        pthread_mutex_unlock(&s->cmp.mu);
        for (size_t i = 0; i < n; i++) {
            rocksdb_compact_range_cf_opt(s->db, s->cf[r[i].cf], co, r[i].lo, r[i].lon, r[i].hi,
                                         r[i].hin);
            free(r[i].lo);
            free(r[i].hi);
        }
        pthread_mutex_lock(&s->cmp.mu);
        s->cmp.done++;
    }
    pthread_mutex_unlock(&s->cmp.mu);
    rocksdb_compactoptions_destroy(co);
    return NULL;
}

bool stor_compact_async(struct stor *s, const struct stor_range *r, size_t n)
{
    /* A compaction writes its output before it drops its input: not while
     * the disk is short of room (stor_disk_check, the executor's, as this). */
    if (n == 0 || n > STOR_COMPACT_RANGES || s->disk.low)
        return false;
    uint64_t now = stor_mono_us();
    pthread_mutex_lock(&s->cmp.mu);
    bool take = !s->cmp.stop && !s->cmp.nreq && (!s->cmp.asked || now - s->cmp.last_us >= STOR_COMPACT_GAP_US);
    if (take && !s->cmp.started) {
        if (pthread_create(&s->cmp.th, NULL, compact_main, s) == 0)
            s->cmp.started = true;
        else
            take = false;
    }
    if (take) {
        for (size_t i = 0; i < n; i++) {
            s->cmp.req[i] = r[i];
            s->cmp.req[i].lo = r[i].lo ? kv_xmemdup(r[i].lo, r[i].lon) : NULL;
            s->cmp.req[i].hi = r[i].hi ? kv_xmemdup(r[i].hi, r[i].hin) : NULL;
        }
        s->cmp.nreq = n;
        s->cmp.last_us = now;
        s->cmp.asked++;
        pthread_cond_signal(&s->cmp.cv);
    }
    pthread_mutex_unlock(&s->cmp.mu);
    return take;
}

void stor_compact_async_stats(struct stor *s, uint64_t *asked, uint64_t *done)
{
    pthread_mutex_lock(&s->cmp.mu);
    *asked = s->cmp.asked;
    *done = s->cmp.done;
    pthread_mutex_unlock(&s->cmp.mu);
}

/* Stops the range compactions: the one running gives up (RocksDB's manual
 * compactions are switched off for the rest of the engine's life), the one
 * waiting is dropped. */
static void compact_stop(struct stor *s)
{
    pthread_mutex_lock(&s->cmp.mu);
    s->cmp.stop = true;
    pthread_cond_signal(&s->cmp.cv);
    bool started = s->cmp.started;
    pthread_mutex_unlock(&s->cmp.mu);
    if (!started)
        return;
    rocksdb_disable_manual_compaction(s->db);
    pthread_join(s->cmp.th, NULL);
    for (size_t i = 0; i < s->cmp.nreq; i++) {
        free(s->cmp.req[i].lo);
        free(s->cmp.req[i].hi);
    }
    s->cmp.nreq = 0;
}

int stor_checkpoint(struct stor *s, const char *dir)
{
    char *err = NULL;
    rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(s->db, &err);
    if (err)
        return stor_take_err(err);
    rocksdb_checkpoint_create(cp, dir, 0, &err);
    rocksdb_checkpoint_object_destroy(cp);
    return err ? stor_take_err(err) : 0;
}

bool stor_ov_each(struct stor *s, int cf, size_t max_slots, void (*fn)(void *arg, uint64_t hash),
                  void *arg)
{
    if (!s->wb)
        return true;
    const struct wb_ov *o = &s->ov;
    if (o->tab && o->tabmask >= max_slots)
        return false;
    for (size_t i = 0; o->tab && i <= o->tabmask; i++) {
        const struct wb_ov_node *n = o->tab[i].n;
        if (n && n->cf == cf && n->val)
            fn(arg, n->hash);
    }
    return true;
}

uint64_t stor_latest_seq(struct stor *s)
{
    return rocksdb_get_latest_sequence_number(s->db);
}

const char *stor_dir(const struct stor *s)
{
    return s->dir;
}

int stor_property(struct stor *s, int cf, const char *name, uint64_t *out)
{
    return rocksdb_property_int_cf(s->db, s->cf[cf], name, out) == 0 ? 0 : KV_EINVAL;
}

int stor_approx_size(struct stor *s, int cf, const char *lo, size_t lon, const char *hi,
                     size_t hin, uint64_t *out)
{
    char *err = NULL;
    rocksdb_approximate_sizes_cf(s->db, s->cf[cf], 1, &lo, &lon, &hi, &hin, out, &err);
    return err ? stor_take_err(err) : 0;
}

int stor_count(struct stor *s, int cf, const char *lo, size_t lon, const char *hi, size_t hin,
               uint64_t *out)
{
    struct stor_it *it = stor_it_create(s, cf, lo, lon, hi, hin);
    uint64_t n = 0;
    for (stor_it_first(it); stor_it_valid(it); stor_it_next(it))
        n++;
    int rc = stor_it_status(it);
    stor_it_free(it);
    *out = n;
    return rc;
}
