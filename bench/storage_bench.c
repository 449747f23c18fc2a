/*
 * storage_bench — the typed storage layer against raw RocksDB, same run,
 * same machine, reported as ratios (the machine is shared and noisy).
 *
 *   storage_bench [--quick] [--records N] [--rounds R] [--dir D] [--out FILE]
 *
 * Each operation runs R rounds of N/R operations; the table gives the median
 * ops/s with min–max, and for single-record operations the ratio to raw
 * RocksDB (raw put vs SET/HSET/ZADD/LPUSH, raw get vs GET/HGET). Then a
 * 1M-field hash (scaled down with --quick) is deleted: the DEL time, and the
 * space the compaction filter reclaims.
 *
 * Raw RocksDB is opened through the C API with the block cache, bloom filters,
 * compression and memtable settings stor_ uses, WAL on, no fsync per write —
 * the same durability as the typed layer.
 */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rocksdb/c.h>

#include "db.h"
#include "stor.h"

#define VALLEN 100

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static char datadir[512]; /* the data folder, removed on every exit path */

static void die(const char *what, int rc)
{
    fprintf(stderr, "storage_bench: %s failed: %d %s %s\n", what, rc, kv_strerror(rc),
            stor_errmsg());
    if (datadir[0])
        nftw(datadir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    exit(1);
}

/* ---- results ---- */

struct result {
    const char *name;
    double med, min, max; /* ops/s */
    const char *peer;     /* raw op it is compared with, or NULL */
    const char *calls;    /* the RocksDB work one operation does */
};
static struct result results[32];
static int nresults;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void record(const char *name, const double *rates, int rounds, const char *peer,
                   const char *calls)
{
    double s[64];
    memcpy(s, rates, (size_t)rounds * sizeof *s);
    qsort(s, (size_t)rounds, sizeof *s, cmp_double);
    struct result *r = &results[nresults++];
    r->name = name;
    r->min = s[0];
    r->max = s[rounds - 1];
    r->med = rounds % 2 ? s[rounds / 2] : (s[rounds / 2 - 1] + s[rounds / 2]) / 2;
    r->peer = peer;
    r->calls = calls;
    fprintf(stderr, "  %-22s %12.0f ops/s\n", name, r->med);
}

static const struct result *find(const char *name)
{
    for (int i = 0; i < nresults; i++)
        if (strcmp(results[i].name, name) == 0)
            return &results[i];
    return NULL;
}

/* ---- workloads ---- */

struct ctx {
    struct db *d;
    struct stor *s;
    rocksdb_t *raw;
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
    uint64_t n;      /* records per workload */
    uint64_t groups; /* collections for HSET/ZADD/LPUSH (n / groups members each) */
    char val[VALLEN];
};

typedef void (*op_fn)(struct ctx *c, uint64_t i);

/* Runs op for i in [0, n) split into rounds; returns per-round rates. */
static void run(struct ctx *c, const char *name, op_fn op, int rounds, const char *peer,
                const char *calls)
{
    double rates[64];
    uint64_t per = c->n / (uint64_t)rounds;
    for (int r = 0; r < rounds; r++) {
        uint64_t t0 = now_ns();
        for (uint64_t i = (uint64_t)r * per; i < (uint64_t)(r + 1) * per; i++)
            op(c, i);
        rates[r] = (double)per * 1e9 / (double)(now_ns() - t0);
    }
    record(name, rates, rounds, peer, calls);
}

/* Writes visit record numbers in a scrambled order: shmkv keys start with
 * their hash slot, so its inserts land at random places in the memtable;
 * sorted raw keys would get RocksDB's sequential-insert fast path and make
 * the comparison about key order rather than encoding. (i * odd prime) mod n
 * is a bijection on [0, n) whenever the prime does not divide n. */
static uint64_t scramble(const struct ctx *c, uint64_t i)
{
    return (i * 2654435761ull) % c->n;
}

static int keyf(char *buf, const char *prefix, uint64_t i)
{
    return snprintf(buf, 32, "%s%010llu", prefix, (unsigned long long)i);
}

static void op_raw_put(struct ctx *c, uint64_t i)
{
    char k[32];
    int kn = keyf(k, "raw:", scramble(c, i));
    char *err = NULL;
    rocksdb_put(c->raw, c->wo, k, (size_t)kn, c->val, VALLEN, &err);
    if (err)
        die(err, -1);
}

static void op_raw_get(struct ctx *c, uint64_t i)
{
    (void)i;
    char k[32];
    int kn = keyf(k, "raw:", rnd() % c->n);
    char *err = NULL;
    size_t vn;
    char *v = rocksdb_get(c->raw, c->ro, k, (size_t)kn, &vn, &err);
    if (err || !v)
        die("raw get", -1);
    rocksdb_free(v);
}

static void op_set(struct ctx *c, uint64_t i)
{
    char k[32];
    int kn = keyf(k, "str:", scramble(c, i));
    int rc = db_set(c->d, 0, k, (size_t)kn, c->val, VALLEN, 0, 0, NULL, NULL);
    if (rc != 1)
        die("SET", rc);
}

static void op_get(struct ctx *c, uint64_t i)
{
    (void)i;
    char k[32], *v;
    size_t vn;
    int kn = keyf(k, "str:", rnd() % c->n);
    int rc = db_get(c->d, 0, k, (size_t)kn, &v, &vn);
    if (rc)
        die("GET", rc);
    free(v);
}

/* Collection workloads spread n members over `groups` keys. */
static void member_of(struct ctx *c, uint64_t i, char *k, int *kn, char *m, int *mn)
{
    *kn = keyf(k, "coll:", i % c->groups);
    *mn = keyf(m, "m:", i / c->groups);
}

static void op_hset(struct ctx *c, uint64_t i)
{
    char k[32], f[32];
    int kn, fn;
    member_of(c, scramble(c, i), k, &kn, f, &fn);
    struct db_str fv[2] = {{f, (size_t)fn}, {c->val, VALLEN}};
    uint64_t added;
    int rc = db_hset(c->d, 0, k, (size_t)kn, fv, 1, 0, &added);
    if (rc)
        die("HSET", rc);
}

static void op_hget(struct ctx *c, uint64_t i)
{
    (void)i;
    char k[32], f[32], *v;
    int kn, fn;
    size_t vn;
    member_of(c, rnd() % c->n, k, &kn, f, &fn);
    int rc = db_hget(c->d, 0, k, (size_t)kn, f, (size_t)fn, &v, &vn);
    if (rc)
        die("HGET", rc);
    free(v);
}

static void op_zadd(struct ctx *c, uint64_t i)
{
    char k[32], m[32];
    int kn, mn;
    i = scramble(c, i);
    member_of(c, i, k, &kn, m, &mn);
    kn = keyf(k, "zset:", i % c->groups);
    struct db_str mem = {m, (size_t)mn};
    double score = (double)(rnd() % 1000000);
    uint64_t added;
    int rc = db_zadd(c->d, 0, k, (size_t)kn, &score, &mem, 1, 0, &added, NULL);
    if (rc)
        die("ZADD", rc);
}

static void op_zrangebyscore(struct ctx *c, uint64_t i)
{
    (void)i;
    char k[32];
    int kn = keyf(k, "zset:", rnd() % c->groups);
    struct db_zspec sp = {
        .by = DB_ZBY_SCORE, .min = (double)(rnd() % 1000000), .max = 1e9, .limit = 10};
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_zrange(c->d, 0, k, (size_t)kn, &sp, &v);
    if (rc)
        die("ZRANGEBYSCORE", rc);
    db_vec_destroy(&v);
}

static void op_lpush(struct ctx *c, uint64_t i)
{
    char k[32];
    int kn = keyf(k, "list:", scramble(c, i) % c->groups);
    struct db_str e = {c->val, VALLEN};
    uint64_t len;
    int rc = db_push(c->d, 0, k, (size_t)kn, 1, &e, 1, 0, &len);
    if (rc)
        die("LPUSH", rc);
}

static void op_lrange(struct ctx *c, uint64_t i)
{
    (void)i;
    char k[32];
    int kn = keyf(k, "list:", rnd() % c->groups);
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_lrange(c->d, 0, k, (size_t)kn, 0, 99, &v);
    if (rc || v.n != 100)
        die("LRANGE", rc);
    db_vec_destroy(&v);
}

/* ---- raw RocksDB with stor_'s table settings ---- */

static rocksdb_t *raw_open(const char *dir, rocksdb_options_t **optsp)
{
    rocksdb_options_t *o = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(o, 1);
    rocksdb_options_increase_parallelism(o, 2);
    rocksdb_options_set_max_background_jobs(o, 2);
    rocksdb_options_set_write_buffer_size(o, 64u << 20);
    rocksdb_options_set_max_write_buffer_number(o, 4);
    rocksdb_options_set_level_compaction_dynamic_level_bytes(o, 1);
    rocksdb_options_set_compression(o, rocksdb_lz4_compression);
    rocksdb_options_set_bottommost_compression(o, rocksdb_zstd_compression);
    rocksdb_options_set_memtable_prefix_bloom_size_ratio(o, 0.05);
    rocksdb_options_set_memtable_whole_key_filtering(o, 1);
    rocksdb_block_based_table_options_t *t = rocksdb_block_based_options_create();
    rocksdb_cache_t *cache = rocksdb_cache_create_lru(256u << 20);
    rocksdb_block_based_options_set_block_cache(t, cache);
    rocksdb_block_based_options_set_block_size(t, 16 * 1024);
    rocksdb_block_based_options_set_format_version(t, 5);
    rocksdb_block_based_options_set_cache_index_and_filter_blocks(t, 1);
    rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(t, 1);
    rocksdb_block_based_options_set_filter_policy(t, rocksdb_filterpolicy_create_bloom_full(10));
    rocksdb_options_set_block_based_table_factory(o, t);
    rocksdb_block_based_options_destroy(t);
    rocksdb_cache_destroy(cache);
    char *err = NULL;
    rocksdb_t *db = rocksdb_open(o, dir, &err);
    if (err)
        die(err, -1);
    *optsp = o;
    return db;
}

/* ---- the big delete ---- */

static void big_delete(struct ctx *c, uint64_t fields, FILE *out)
{
    char f[32];
    struct db_str *fv = malloc(2 * 1000 * sizeof *fv);
    char(*fb)[32] = malloc(1000 * sizeof *fb);
    for (uint64_t base = 0; base < fields; base += 1000) {
        uint64_t m = fields - base < 1000 ? fields - base : 1000;
        for (uint64_t j = 0; j < m; j++) {
            int fn = keyf(fb[j], "field:", base + j);
            fv[2 * j] = (struct db_str){fb[j], (size_t)fn};
            fv[2 * j + 1] = (struct db_str){c->val, 16};
        }
        uint64_t added;
        int rc = db_hset(c->d, 0, "bighash", 7, fv, m, 0, &added);
        if (rc)
            die("HSET big", rc);
    }
    free(fv);
    free(fb);
    (void)f;
    struct stor *s = c->s;
    int rc = stor_compact(s, STOR_CF_SUB);
    if (rc)
        die("compact", rc);
    /* The hash's own records, every version: db | slot | key_len | key. */
    char lo[16], hi[16];
    size_t pl = enc_sub_prefix(lo, 0, enc_slot("bighash", 7), "bighash", 7, 0) - 8;
    memcpy(hi, lo, pl);
    hi[pl - 1]++; /* the key's last byte + 1: past every version */
    uint64_t before_n, before_b, after_n, after_b;
    stor_count(s, STOR_CF_SUB, lo, pl, hi, pl, &before_n);
    stor_approx_size(s, STOR_CF_SUB, lo, pl, hi, pl, &before_b);

    uint64_t t0 = now_ns();
    rc = db_del(c->d, 0, "bighash", 7);
    double del_us = (double)(now_ns() - t0) / 1e3;
    if (rc != 1)
        die("DEL big", rc);
    uint64_t ops = db_last_commit_ops(c->d);

    t0 = now_ns();
    if ((rc = stor_compact(s, STOR_CF_SUB)))
        die("compact", rc);
    double comp_s = (double)(now_ns() - t0) / 1e9;
    stor_count(s, STOR_CF_SUB, lo, pl, hi, pl, &after_n);
    stor_approx_size(s, STOR_CF_SUB, lo, pl, hi, pl, &after_b);

    fprintf(out, "\n### DEL of a %llu-field hash\n\n", (unsigned long long)fields);
    fprintf(out, "| measure | value |\n|---|---|\n");
    fprintf(out, "| DEL latency | %.1f µs |\n", del_us);
    fprintf(out, "| records written by the DEL | %llu |\n", (unsigned long long)ops);
    fprintf(out, "| its sub records before (flushed, compacted) | %llu records, %.2f MiB |\n",
            (unsigned long long)before_n, (double)before_b / 1048576.0);
    fprintf(out, "| its sub records after DEL + full compaction | %llu records, %.2f MiB |\n",
            (unsigned long long)after_n, (double)after_b / 1048576.0);
    fprintf(out, "| full compaction time | %.2f s |\n", comp_s);
}

int main(int argc, char **argv)
{
    uint64_t n = 1000000, groups = 1000, bigfields = 1000000;
    int rounds = 5;
    const char *dir = NULL, *outpath = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            n = 20000;
            groups = 100;
            bigfields = 20000;
            rounds = 3;
        } else if (!strcmp(argv[i], "--records") && i + 1 < argc) {
            n = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--big") && i + 1 < argc) {
            bigfields = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            outpath = argv[++i];
        } else {
            fprintf(stderr, "usage: storage_bench [--quick] [--records N] [--rounds R] [--big F] "
                            "[--dir D] [--out FILE]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > 64 || n < (uint64_t)rounds || groups > n)
        return fprintf(stderr, "storage_bench: bad sizes\n"), 2;
    n -= n % (uint64_t)rounds; /* every written record is one a read may pick */
    /* LRANGE 0 99 needs lists of at least 100 elements. */
    while (groups > 1 && n / groups < 100)
        groups /= 2;
    if (n / groups < 100)
        return fprintf(stderr, "storage_bench: --records must be at least 100\n"), 2;

    const char *tmp = getenv("TMPDIR");
    snprintf(datadir, sizeof datadir, "%s/shmkv-bench-XXXXXX",
             dir ? dir : (tmp && *tmp ? tmp : "/tmp"));
    if (!mkdtemp(datadir))
        return perror("mkdtemp"), 1;
    char typed_dir[600], raw_dir[600];
    snprintf(typed_dir, sizeof typed_dir, "%s/typed", datadir);
    snprintf(raw_dir, sizeof raw_dir, "%s/raw", datadir);

    struct stor *s;
    struct stor_opts so = {.dir = typed_dir, .compression = 1};
    const char *err;
    int rc = stor_open(&s, &so, &err);
    if (rc)
        die(err, rc);
    struct db *d;
    if ((rc = db_create(&d, s, NULL)) != 0)
        die(stor_errmsg(), rc);
    rocksdb_options_t *ro_opts;
    struct ctx c = {.d = d, .s = s, .n = n, .groups = groups};
    c.raw = raw_open(raw_dir, &ro_opts);
    c.wo = rocksdb_writeoptions_create();
    c.ro = rocksdb_readoptions_create();
    for (int i = 0; i < VALLEN; i++)
        c.val[i] = (char)('a' + i % 26);

    fprintf(stderr, "storage_bench: %llu records, %d rounds, in %s\n", (unsigned long long)n,
            rounds, datadir);
    run(&c, "raw RocksDB put", op_raw_put, rounds, NULL, "1 put");
    run(&c, "raw RocksDB get", op_raw_get, rounds, NULL, "1 get");
    run(&c, "SET", op_set, rounds, "raw RocksDB put", "1 put");
    run(&c, "GET", op_get, rounds, "raw RocksDB get", "1 get");
    run(&c, "HSET (1 new field)", op_hset, rounds, "raw RocksDB put",
        "2 gets (meta, field) + 1 batch of 2");
    run(&c, "HGET", op_hget, rounds, "raw RocksDB get", "2 gets (meta, field)");
    run(&c, "ZADD (1 new member)", op_zadd, rounds, "raw RocksDB put",
        "2 gets (meta, member) + 1 batch of 3");
    run(&c, "ZRANGEBYSCORE LIMIT 10", op_zrangebyscore, rounds, NULL, "1 get + 1 seek, 10 nexts");
    run(&c, "LPUSH (1 element)", op_lpush, rounds, "raw RocksDB put", "1 get + 1 batch of 2");
    run(&c, "LRANGE 0 99", op_lrange, rounds, NULL, "1 get + 1 seek, 100 nexts");

    FILE *out = stdout;
    if (outpath && !(out = fopen(outpath, "w")))
        return perror(outpath), 1;
    char host[128] = "?";
    gethostname(host, sizeof host);
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    fprintf(out, "## storage_bench — %s, %ld CPUs, %llu records, %d rounds\n\n", date,
            sysconf(_SC_NPROCESSORS_ONLN), (unsigned long long)n, rounds);
    fprintf(out, "| operation | RocksDB work | median ops/s | min–max ops/s | "
                 "raw RocksDB / typed |\n");
    fprintf(out, "|---|---|---:|---:|---:|\n");
    for (int i = 0; i < nresults; i++) {
        const struct result *r = &results[i];
        const struct result *p = r->peer ? find(r->peer) : NULL;
        char ratio[32] = "";
        if (p)
            snprintf(ratio, sizeof ratio, "%.2fx", p->med / r->med);
        fprintf(out, "| %s | %s | %.0f | %.0f–%.0f | %s |\n", r->name, r->calls, r->med, r->min,
                r->max, ratio);
    }
    big_delete(&c, bigfields, out);
    if (out != stdout)
        fclose(out);

    rocksdb_writeoptions_destroy(c.wo);
    rocksdb_readoptions_destroy(c.ro);
    rocksdb_close(c.raw);
    rocksdb_options_destroy(ro_opts);
    db_free(d);
    stor_close(s);
    nftw(datadir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
