/*
 * stor — RocksDB underneath the Redis types: open and close with the
 * options each column family gets, errors, free disk space, the commit of
 * a record set (straight to RocksDB, or through write-back) and point
 * reads. Record sets are in stor_batch.c, iterators in stor_it.c, garbage
 * collection and compactions in stor_gc.c, write-back in wb*.c. See stor.h.
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

static const char *const cf_names[STOR_CF_COUNT] = {"metadata", "default", "zset_score", "expiry",
                                                    "zset_rank"};

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

bool stor_writeback(const struct stor *s)
{
    return s->wb;
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
    /* Index and filter in 4 KiB partitions under a small pinned top level.
     * Whole, a 64 MiB file's filter is ~9 MiB: more than one shard of the
     * block cache holds (256 MiB in 64 shards), so it was never kept and
     * every point read past about 5M keys read it from the file again
     * (DEBUG POPULATE 10000000: over 15 minutes, against 54 s with a 1 GiB
     * cache). Partitions are cached, and evicted, one at a time. */
    rocksdb_block_based_options_set_index_type(
        t, rocksdb_block_based_table_index_type_two_level_index_search);
    rocksdb_block_based_options_set_partition_filters(t, 1);
    rocksdb_block_based_options_set_metadata_block_size(t, 4096);
    rocksdb_block_based_options_set_pin_top_level_index_and_filter(t, 1);
    rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(t, 1);
    /* Point reads hit the meta CF (every command) and the sub CF (HGET,
     * SISMEMBER, ZSCORE, LINDEX); the score and expiry indexes are scanned. */
    if (cf == STOR_CF_META || cf == STOR_CF_SUB) {
        rocksdb_block_based_options_set_filter_policy(t,
                                                      rocksdb_filterpolicy_create_bloom_full(10));
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

    /* Sub, score and rank records die with their meta record. The expiry index
     * needs no filter: active expiry deletes each entry when its time
     * comes, whether or not the key still has that expiry. */
    if (cf == STOR_CF_SUB || cf == STOR_CF_SCORE || cf == STOR_CF_RANK)
        stor_gc_attach(s, cf, opt);
    /* A table file with 32Ki deletes within any 128Ki entries is compacted
     * soon: a queue's pops and pushes meet there and both go, where they
     * otherwise piled up level after level and every seek grew (ZADD +
     * ZPOPMIN at a length of 1,000, 4M cycles: the pop's p50 36 -> 45 us
     * from the first to the last 500,000, 37 -> 38 with it). */
    if (cf == STOR_CF_SUB || cf == STOR_CF_SCORE)
        rocksdb_options_add_compact_on_deletion_collector_factory(opt, 128 * 1024, 32 * 1024);
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
    if (o->max_open_files > 0)
        rocksdb_options_set_max_open_files(s->dbopts, o->max_open_files);
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
    /* Without write-back, a journal an earlier run left (it ran with
     * write-back and was killed) is still replayed first: its records
     * were acknowledged. */
    rc = o->writeback ? wb_open(s, errmsg) : wb_replay(s, errmsg);
    if (rc) {
        stor_close_abandon(s);
        return rc;
    }
    *out = s;
    return 0;
}

static void close_all(struct stor *s, bool clean)
{
    if (!s)
        return;
    if (s->db)
        stor_compact_stop(s);
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
static inline bool ov_get(struct stor *s, int cf, const char *k, size_t kn, char **v, size_t *vn,
                          int *rc)
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

int stor_approx_size(struct stor *s, int cf, const char *lo, size_t lon, const char *hi, size_t hin,
                     uint64_t *out)
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
