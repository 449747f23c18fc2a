/*
 * kvtool — the report's small measuring clients (bench/report.sh).
 *
 *   kvtool fill HOST PORT KEY TYPE N          a hash (TYPE hash) or sorted set (zset) of N
 *                                             fields, 1,000 per pipelined command
 *   kvtool timecmd HOST PORT CMD [ARG...]     one command's round trip in µs
 *   kvtool timeline HOST PORT CLIENTS SECONDS OUT [RATE [set|hset]]
 *                                             SET (or HSET) from CLIENTS connections for
 *                                             SECONDS, each as fast as it can, or, with
 *                                             RATE, all together at RATE commands/s on a
 *                                             fixed schedule, latency counted from each
 *                                             command's scheduled time (so a stall also
 *                                             counts for the commands it delayed);
 *                                             OUT gets "second p50_us p99_us p999_us ops",
 *                                             OUT.all "p50_us p99_us p999_us max_us ops"
 *                                             over the whole run
 *   kvtool load HOST PORT MBPS SECONDS        SET 4 KiB values at MBPS MiB/s for SECONDS
 *                                             (pipelined, paced every 10 ms): a background
 *                                             load that keeps RocksDB flushing and compacting
 *   kvtool zipfread SOCK KEYS SECONDS INTERVAL_MS OUT
 *                                             libshmkv GETs of Zipf(0.99) keys; OUT gets
 *                                             "t_ms reads_per_s hit_ratio" per interval
 *   kvtool queue HOST PORT list|zset CYCLES LEN WINDOW
 *                                             a queue at a steady length: LEN elements
 *                                             first, then CYCLES of a push (LPUSH, or ZADD
 *                                             of the next score) and a pop (RPOP, ZPOPMIN),
 *                                             each its own round trip; prints the pops'
 *                                             "p50_us p99_us" over the first WINDOW cycles
 *                                             and over the last WINDOW, then the seconds
 *   kvtool zrank HOST PORT KEY N rank|revrank|range|zadd OPS PIPE
 *                                             on a sorted set of members f0..f(N-1) (as fill
 *                                             makes it): OPS commands, PIPE at a time on one
 *                                             connection, each ZRANK / ZREVRANK of a random
 *                                             member, ZRANGE of 10 at a random index, or ZADD
 *                                             of a random member's new score; prints
 *                                             "ops_per_s p50_us p99_us" (latency per batch)
 *
 * Everything is bounded by a count or a time and talks to loopback or a
 * Unix socket only.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "shmkv.h"
#include "zipf.h"

static void die(const char *what)
{
    fprintf(stderr, "kvtool: %s\n", what);
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static redisContext *tcp(const char *host, int port)
{
    struct timeval tv = {60, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err)
        die("cannot connect");
    redisSetTimeout(c, tv);
    return c;
}

static void expect_ok(redisReply *r)
{
    if (!r || r->type == REDIS_REPLY_ERROR)
        die(r ? r->str : "connection lost");
    freeReplyObject(r);
}

/* ---- fill ---- */

static int fill(const char *host, int port, const char *key, const char *type, long n)
{
    redisContext *c = tcp(host, port);
    bool zset = !strcmp(type, "zset");
    enum { PER = 1000 };
    const char **argv = malloc((2 + 2 * PER) * sizeof *argv);
    size_t *lens = malloc((2 + 2 * PER) * sizeof *lens);
    char(*buf)[2][24] = malloc(PER * sizeof *buf);
    if (!argv || !lens || !buf)
        die("out of memory");
    long pending = 0;
    for (long done = 0; done < n;) {
        int k = 2;
        argv[0] = zset ? "ZADD" : "HSET";
        argv[1] = key;
        for (int i = 0; i < PER && done < n; i++, done++) {
            snprintf(buf[i][0], 24, "f%ld", done);
            snprintf(buf[i][1], 24, "%ld", done);
            argv[k++] = zset ? buf[i][1] : buf[i][0];
            argv[k++] = zset ? buf[i][0] : buf[i][1];
        }
        for (int i = 0; i < k; i++)
            lens[i] = strlen(argv[i]);
        redisAppendCommandArgv(c, k, argv, lens);
        if (++pending == 16 || done == n) {
            while (pending--) {
                redisReply *r;
                if (redisGetReply(c, (void **)&r) != REDIS_OK)
                    die("fill failed");
                expect_ok(r);
            }
            pending = 0;
        }
    }
    free(argv);
    free(lens);
    free(buf);
    redisFree(c);
    return 0;
}

/* ---- timecmd ---- */

static int timecmd(const char *host, int port, int argc, const char **argv)
{
    redisContext *c = tcp(host, port);
    double t0 = now_s();
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    double us = (now_s() - t0) * 1e6;
    expect_ok(r);
    printf("%.0f\n", us);
    redisFree(c);
    return 0;
}

/* ---- timeline ---- */

struct tl {
    const char *host;
    int port, id, clients;
    double t0, secs;
    double interval; /* s between this client's commands; 0: back to back */
    bool hset;
    /* per second: latencies in µs */
    uint32_t **lat;
    size_t *n, *cap;
};

static void *tl_main(void *arg)
{
    struct tl *t = arg;
    redisContext *c = tcp(t->host, t->port);
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(t->id + 1);
    char key[24], field[24], val[100];
    memset(val, 'x', sizeof val);
    /* Paced clients start spread over one interval. */
    double due = t->t0 + t->interval * t->id / t->clients;
    for (;;) {
        double a = now_s();
        if (t->interval > 0) {
            if (a < due) {
                struct timespec ts = {0, (long)((due - a) * 1e9)};
                nanosleep(&ts, NULL);
            }
            a = due; /* latency from the schedule, not from when we got to it */
            due += t->interval;
        }
        if (a - t->t0 >= t->secs)
            break;
        unsigned long long k = (unsigned long long)(zipf_rnd(&rng) % 1000000);
        if (t->hset) {
            snprintf(key, sizeof key, "tlh:%llu", k % 1000);
            snprintf(field, sizeof field, "f:%llu", k);
            expect_ok(redisCommand(c, "HSET %s %s %b", key, field, val, sizeof val));
        } else {
            snprintf(key, sizeof key, "tl:%llu", k);
            expect_ok(redisCommand(c, "SET %s %b", key, val, sizeof val));
        }
        double b = now_s();
        size_t s = (size_t)(a - t->t0);
        if (t->n[s] == t->cap[s]) {
            t->cap[s] = t->cap[s] ? t->cap[s] * 2 : 1024;
            t->lat[s] = realloc(t->lat[s], t->cap[s] * sizeof *t->lat[s]);
            if (!t->lat[s])
                die("out of memory");
        }
        t->lat[s][t->n[s]++] = (uint32_t)((b - a) * 1e6);
    }
    redisFree(c);
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int timeline(const char *host, int port, int clients, int secs, const char *out, double rate,
                    bool hset)
{
    if (clients < 1 || clients > 256 || secs < 1 || secs > 3600 || rate < 0)
        die("bad arguments");
    struct tl *t = calloc((size_t)clients, sizeof *t);
    pthread_t *tid = calloc((size_t)clients, sizeof *tid);
    if (!t || !tid)
        die("out of memory");
    double t0 = now_s();
    for (int i = 0; i < clients; i++) {
        t[i] = (struct tl){.host = host,
                           .port = port,
                           .id = i,
                           .clients = clients,
                           .t0 = t0,
                           .secs = secs,
                           .interval = rate > 0 ? clients / rate : 0,
                           .hset = hset};
        t[i].lat = calloc((size_t)secs + 1, sizeof *t[i].lat);
        t[i].n = calloc((size_t)secs + 1, sizeof *t[i].n);
        t[i].cap = calloc((size_t)secs + 1, sizeof *t[i].cap);
        if (!t[i].lat || !t[i].n || !t[i].cap || pthread_create(&tid[i], NULL, tl_main, &t[i]))
            die("cannot start a client");
    }
    for (int i = 0; i < clients; i++)
        pthread_join(tid[i], NULL);
    FILE *f = fopen(out, "w");
    if (!f)
        die("cannot write the output");
    for (int s = 0; s < secs; s++) {
        size_t total = 0;
        for (int i = 0; i < clients; i++)
            total += t[i].n[s];
        if (!total)
            continue;
        uint32_t *all = malloc(total * sizeof *all);
        if (!all)
            die("out of memory");
        size_t k = 0;
        for (int i = 0; i < clients; i++) {
            memcpy(all + k, t[i].lat[s], t[i].n[s] * sizeof *all);
            k += t[i].n[s];
        }
        qsort(all, total, sizeof *all, cmp_u32);
        fprintf(f, "%d %u %u %u %zu\n", s, all[total / 2], all[total * 99 / 100],
                all[total * 999 / 1000], total);
        free(all);
    }
    fclose(f);
    /* The whole run's percentiles too: a stall of one second weighs in them
     * by the commands it held, where a median over the seconds drops it. */
    size_t total = 0;
    for (int i = 0; i < clients; i++)
        for (int s = 0; s <= secs; s++)
            total += t[i].n[s];
    if (total) {
        uint32_t *all = malloc(total * sizeof *all);
        if (!all)
            die("out of memory");
        size_t k = 0;
        for (int i = 0; i < clients; i++)
            for (int s = 0; s <= secs; s++) {
                memcpy(all + k, t[i].lat[s], t[i].n[s] * sizeof *all);
                k += t[i].n[s];
            }
        qsort(all, total, sizeof *all, cmp_u32);
        char path[4096];
        snprintf(path, sizeof path, "%s.all", out);
        FILE *g = fopen(path, "w");
        if (!g)
            die("cannot write the output");
        fprintf(g, "%u %u %u %u %zu\n", all[total / 2], all[total * 99 / 100],
                all[total * 999 / 1000], all[total - 1], total);
        fclose(g);
        free(all);
    }
    for (int i = 0; i < clients; i++) {
        for (int s = 0; s <= secs; s++)
            free(t[i].lat[s]);
        free(t[i].lat);
        free(t[i].n);
        free(t[i].cap);
    }
    free(t);
    free(tid);
    return 0;
}

/* ---- load ---- */

static int load(const char *host, int port, double mbps, int secs)
{
    redisContext *c = tcp(host, port);
    static char val[4096];
    uint64_t rng = 99;
    for (size_t i = 0; i < sizeof val; i++)
        val[i] = (char)('a' + zipf_rnd(&rng) % 26);        /* incompressible enough */
    double per_tick = mbps * 1048576.0 / 100 / sizeof val; /* values per 10 ms */
    double t0 = now_s(), owed = 0;
    uint64_t n = 0;
    while (now_s() - t0 < secs) {
        owed += per_tick;
        int batch = (int)owed;
        owed -= batch;
        for (int i = 0; i < batch; i++) {
            char key[24];
            snprintf(key, sizeof key, "bulk:%llu", (unsigned long long)(n++ % 20000000));
            redisAppendCommand(c, "SET %s %b", key, val, sizeof val);
        }
        for (int i = 0; i < batch; i++) {
            redisReply *r;
            if (redisGetReply(c, (void **)&r) != REDIS_OK)
                die("load failed");
            expect_ok(r);
        }
        double next = t0 + (double)(long)((now_s() - t0) * 100 + 1) / 100;
        while (now_s() < next) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    redisFree(c);
    return 0;
}

/* ---- zipfread ---- */

static int zipfread(const char *sock, uint32_t keys, int secs, int interval_ms, const char *out)
{
    shmkv *h;
    if (shmkv_open(&h, sock, NULL) != SHMKV_OK)
        die(shmkv_errmsg());
    uint64_t rng = 42;
    size_t nseq = 1u << 22;
    uint32_t *seq = zipf_sequence(keys, nseq, 0.99, &rng);
    FILE *f = fopen(out, "w");
    if (!f)
        die("cannot write the output");
    double t0 = now_s(), next = t0 + interval_ms / 1000.0, last_t = t0;
    struct shmkv_stats last = {0}, st;
    size_t i = 0;
    uint64_t reads = 0, last_reads = 0;
    char key[17];
    while (now_s() - t0 < secs) {
        snprintf(key, sizeof key, "key:%012u", seq[i++ & (nseq - 1)]);
        char *v;
        size_t n;
        int rc = shmkv_get(h, key, 16, &v, &n);
        if (rc == SHMKV_OK)
            free(v);
        else if (rc < 0)
            die(shmkv_errmsg());
        reads++;
        if ((reads & 255) == 0 && now_s() >= next) {
            double t = now_s();
            shmkv_stats(h, &st);
            uint64_t hits = st.hits - last.hits, all = hits + (st.misses - last.misses);
            fprintf(f, "%.0f %.0f %.4f\n", (t - t0) * 1000,
                    (double)(reads - last_reads) / (t - last_t),
                    all ? (double)hits / (double)all : 0.0);
            last_t = t;
            last = st;
            last_reads = reads;
            next += interval_ms / 1000.0;
        }
    }
    fclose(f);
    free(seq);
    shmkv_close(h);
    return 0;
}

/* ---- queue ---- */

static uint32_t pct(uint32_t *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, cmp_u32);
    size_t i = (size_t)(p * (double)(n - 1));
    return v[i];
}

/* One push then one pop, each waited for; the pop's round trip in µs. */
static uint32_t queue_cycle(redisContext *c, bool zset, long seq)
{
    char a[24];
    snprintf(a, sizeof a, "%ld", seq);
    redisReply *r =
        zset ? redisCommand(c, "ZADD q %s m%s", a, a) : redisCommand(c, "LPUSH q %s", a);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        die(r && r->type == REDIS_REPLY_ERROR ? r->str : "push failed");
    freeReplyObject(r);
    double t0 = now_s();
    r = zset ? redisCommand(c, "ZPOPMIN q") : redisCommand(c, "RPOP q");
    uint32_t us = (uint32_t)((now_s() - t0) * 1e6);
    if (!r ||
        (zset ? r->type != REDIS_REPLY_ARRAY || r->elements != 2 : r->type != REDIS_REPLY_STRING))
        die(r && r->type == REDIS_REPLY_ERROR ? r->str : "pop found nothing");
    freeReplyObject(r);
    return us;
}

static int queue(const char *host, int port, const char *type, long cycles, long len, long window)
{
    if (window <= 0 || cycles < 2 * window || len < 1)
        die("queue: CYCLES must be at least twice WINDOW, LEN at least 1");
    bool zset = !strcmp(type, "zset");
    redisContext *c = tcp(host, port);
    expect_ok(redisCommand(c, "DEL q"));
    long seq = 0;
    for (; seq < len; seq++) {
        char a[24];
        snprintf(a, sizeof a, "%ld", seq);
        expect_ok(zset ? redisCommand(c, "ZADD q %s m%s", a, a) : redisCommand(c, "LPUSH q %s", a));
    }
    uint32_t *first = malloc((size_t)window * sizeof *first);
    uint32_t *last = malloc((size_t)window * sizeof *last);
    if (!first || !last)
        die("out of memory");
    double t0 = now_s();
    for (long i = 0; i < cycles; i++, seq++) {
        uint32_t us = queue_cycle(c, zset, seq);
        if (i < window)
            first[i] = us;
        else if (i >= cycles - window)
            last[i - (cycles - window)] = us;
    }
    double secs = now_s() - t0;
    printf("%u %u %u %u %.1f\n", pct(first, (size_t)window, 0.5), pct(first, (size_t)window, 0.99),
           pct(last, (size_t)window, 0.5), pct(last, (size_t)window, 0.99), secs);
    free(first);
    free(last);
    redisFree(c);
    return 0;
}

/* ---- zrank ---- */

static int zrank(const char *host, int port, const char *key, long n, const char *kind, long ops,
                 int pipe)
{
    if (n < 10 || ops < 1 || pipe < 1)
        die("zrank: N at least 10, OPS and PIPE at least 1");
    redisContext *c = tcp(host, port);
    uint64_t rng = 0x5a52;
    size_t nb = (size_t)((ops + pipe - 1) / pipe);
    uint32_t *lat = malloc(nb * sizeof *lat);
    if (!lat)
        die("out of memory");
    double t0 = now_s();
    long sent = 0;
    for (size_t b = 0; b < nb; b++) {
        double b0 = now_s();
        int k = 0;
        for (; k < pipe && sent < ops; k++, sent++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            long r = (long)((rng >> 33) % (uint64_t)n);
            char m[24], a[24], z[24];
            snprintf(m, sizeof m, "f%ld", r);
            if (!strcmp(kind, "range")) {
                long at = r > n - 10 ? n - 10 : r;
                snprintf(a, sizeof a, "%ld", at);
                snprintf(z, sizeof z, "%ld", at + 9);
                redisAppendCommand(c, "ZRANGE %s %s %s", key, a, z);
            } else if (!strcmp(kind, "zadd")) {
                snprintf(a, sizeof a, "%ld", (long)((rng >> 13) % (uint64_t)n));
                redisAppendCommand(c, "ZADD %s %s %s", key, a, m);
            } else {
                redisAppendCommand(c, "%s %s %s", !strcmp(kind, "rank") ? "ZRANK" : "ZREVRANK", key,
                                   m);
            }
        }
        for (int i = 0; i < k; i++) {
            redisReply *rep;
            if (redisGetReply(c, (void **)&rep) != REDIS_OK || !rep ||
                rep->type == REDIS_REPLY_ERROR || rep->type == REDIS_REPLY_NIL)
                die(rep && rep->type == REDIS_REPLY_ERROR ? rep->str : "zrank: no answer");
            if (!strcmp(kind, "range") && rep->elements != 10)
                die("zrank: a range of fewer than 10");
            freeReplyObject(rep);
        }
        lat[b] = (uint32_t)((now_s() - b0) * 1e6);
    }
    double secs = now_s() - t0;
    printf("%.0f %u %u\n", (double)ops / secs, pct(lat, nb, 0.5), pct(lat, nb, 0.99));
    free(lat);
    redisFree(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 7 && !strcmp(argv[1], "fill"))
        return fill(argv[2], atoi(argv[3]), argv[4], argv[5], atol(argv[6]));
    if (argc >= 5 && !strcmp(argv[1], "timecmd"))
        return timecmd(argv[2], atoi(argv[3]), argc - 4, (const char **)argv + 4);
    if (argc >= 7 && argc <= 9 && !strcmp(argv[1], "timeline"))
        return timeline(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), argv[6],
                        argc >= 8 ? atof(argv[7]) : 0, argc == 9 && !strcmp(argv[8], "hset"));
    if (argc == 6 && !strcmp(argv[1], "load"))
        return load(argv[2], atoi(argv[3]), atof(argv[4]), atoi(argv[5]));
    if (argc == 7 && !strcmp(argv[1], "zipfread"))
        return zipfread(argv[2], (uint32_t)atol(argv[3]), atoi(argv[4]), atoi(argv[5]), argv[6]);
    if (argc == 8 && !strcmp(argv[1], "queue"))
        return queue(argv[2], atoi(argv[3]), argv[4], atol(argv[5]), atol(argv[6]), atol(argv[7]));
    if (argc == 9 && !strcmp(argv[1], "zrank"))
        return zrank(argv[2], atoi(argv[3]), argv[4], atol(argv[5]), argv[6], atol(argv[7]),
                     atoi(argv[8]));
    fprintf(stderr, "usage: see the top of bench/kvtool.c\n");
    return 2;
}
