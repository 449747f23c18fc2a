/*
 * shm_bench — local read latency: a libshmkv cache hit against a GET round
 * trip through hiredis over a Unix socket (to shmkvd or redis-server).
 *
 *   shm_bench load    SOCK KEYS                  SET KEYS keys (16-byte keys, 100-byte values)
 *   shm_bench shm     SOCK KEYS OPS PROCS DIST [CDF]  timed shmkv_get() from PROCS processes
 *   shm_bench hiredis SOCK KEYS OPS PROCS DIST [CDF]  timed GET round trips
 *   shm_bench chase   MIB [huge]                 one dependent load from memory
 *
 * DIST is uniform or zipf (0.99, ranks scattered over the keys). Each
 * process times every operation with the TSC (calibrated against
 * CLOCK_MONOTONIC; the timer's own ~10 ns are included) and the samples of
 * all processes are pooled. Prints one line:
 *   p50_ns p99_ns p999_ns reads_per_s hit_ratio
 * reads_per_s is the sum over processes; hit_ratio is libshmkv's (shm) or 1.
 * CDF, if given, is a file that gets the latency distribution: lines of
 * "ns fraction" at 1,000 evenly spaced ranks (for the report's plot).
 *
 * chase is the machine's floor under a uniform read: a pointer chase over
 * MIB MiB of 64-byte lines linked in random order, so each load waits for
 * the one before, as a look-up's record read waits for its bucket. It
 * prints the median, over 101 batches of 20,000 loads, of the batch's ns
 * per load (timer cost spread over the batch). "huge" maps the buffer on
 * 2 MiB hugetlb pages (falling back to 4 KiB ones when the pool has no
 * room), as the daemon maps its segment when it can.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "shmkv.h"
#include "zipf.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t ticks(void)
{
    return __rdtsc();
}
#else
static inline uint64_t ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Nanoseconds per tick, measured over 200 ms. */
static double ns_per_tick(void)
{
    double t0 = now_s();
    uint64_t k0 = ticks();
    while (now_s() - t0 < 0.2)
        ;
    return (now_s() - t0) * 1e9 / (double)(ticks() - k0);
}

static void die(const char *what)
{
    fprintf(stderr, "shm_bench: %s\n", what);
    exit(1);
}

static void key_of(char *k, uint32_t i)
{
    char tmp[20];
    snprintf(tmp, sizeof tmp, "key:%012u", i);
    memcpy(k, tmp, 16);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

/* The key sequence one process reads. */
static uint32_t *sequence(uint32_t keys, size_t ops, bool zipf)
{
    if (zipf)
        return zipf_sequence(keys, ops, 0.99, &rng);
    uint32_t *seq = malloc(ops * sizeof *seq);
    if (!seq)
        die("out of memory");
    for (size_t i = 0; i < ops; i++)
        seq[i] = (uint32_t)(zipf_rnd(&rng) % keys);
    return seq;
}

static redisContext *hconnect(const char *sock)
{
    redisContext *c = redisConnectUnix(sock);
    if (!c || c->err)
        die("cannot connect to the Unix socket");
    return c;
}

static void load(const char *sock, uint32_t keys)
{
    redisContext *c = hconnect(sock);
    char k[16], v[100];
    uint32_t pending = 0;
    uint64_t vr = 7;
    for (uint32_t i = 0; i < keys; i++) {
        key_of(k, i);
        /* Random letters: the footprint figures must not ride on values
         * that compress to nothing. */
        for (size_t j = 0; j < sizeof v; j++)
            v[j] = (char)('a' + zipf_rnd(&vr) % 26);
        redisAppendCommand(c, "SET %b %b", k, sizeof k, v, sizeof v);
        if (++pending == 1000 || i + 1 == keys) {
            while (pending--) {
                redisReply *r;
                if (redisGetReply(c, (void **)&r) != REDIS_OK)
                    die("SET failed");
                freeReplyObject(r);
            }
            pending = 0;
        }
    }
    redisFree(c);
}

struct shared {
    double rate[64];
    uint64_t hits[64], misses[64];
    uint32_t ns[]; /* PROCS * OPS samples */
};

/* One reader process: ops timed reads into its part of the samples. */
static void reader(int id, bool shm, const char *sock, uint32_t keys, size_t ops, bool zipf,
                   struct shared *sh, double npt)
{
    rng += (uint64_t)id * 0x9e3779b97f4a7c15ull;
    uint32_t *seq = sequence(keys, ops, zipf);
    uint32_t *out = sh->ns + (size_t)id * ops;
    char k[16];
    shmkv *h = NULL;
    redisContext *c = NULL;
    if (shm && shmkv_open(&h, sock, NULL) != SHMKV_OK)
        die(shmkv_errmsg());
    if (shm && shmkv_cache_error(h))
        die(shmkv_cache_error(h));
    if (!shm)
        c = hconnect(sock);
    double t0 = now_s();
    for (size_t i = 0; i < ops; i++) {
        key_of(k, seq[i]);
        uint64_t a = ticks();
        if (shm) {
            char *v;
            size_t n;
            if (shmkv_get(h, k, sizeof k, &v, &n) != SHMKV_OK)
                die("GET failed");
            free(v);
        } else {
            redisReply *r = redisCommand(c, "GET %b", k, sizeof k);
            if (!r || r->type != REDIS_REPLY_STRING)
                die("GET failed");
            freeReplyObject(r);
        }
        out[i] = (uint32_t)((double)(ticks() - a) * npt);
    }
    sh->rate[id] = (double)ops / (now_s() - t0);
    if (shm) {
        struct shmkv_stats st;
        shmkv_stats(h, &st);
        sh->hits[id] = st.hits;
        sh->misses[id] = st.misses;
        shmkv_close(h);
    } else {
        sh->hits[id] = ops;
        redisFree(c);
    }
    free(seq);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void chase(size_t mib, bool huge, double npt)
{
    size_t bytes = mib << 20, n = bytes / 64;
    if (n < 2)
        die("chase: at least 1 MiB");
    char *m = MAP_FAILED;
    if (huge)
        m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1,
                 0);
    bool got_huge = m != MAP_FAILED;
    if (!got_huge)
        m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        die("chase: mmap");
    /* One random cycle through every line (Sattolo's shuffle). */
    uint32_t *order = malloc(n * sizeof *order);
    if (!order)
        die("out of memory");
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = zipf_rnd(&rng) % i;
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        *(char **)(m + (size_t)order[i] * 64) = m + (size_t)order[(i + 1) % n] * 64;
    free(order);
    char *p = m;
    for (size_t i = 0; i < n; i++) /* warm: every page mapped and walked once */
        p = *(char **)p;
    enum { BATCHES = 101, LOADS = 20000 };
    double per[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        uint64_t a = ticks();
        for (int i = 0; i < LOADS; i++)
            p = *(char **)p;
        per[b] = (double)(ticks() - a) * npt / LOADS;
    }
    qsort(per, BATCHES, sizeof per[0], cmp_dbl);
    /* p is printed so the chase cannot be optimized away. */
    printf("%.0f %s %d\n", per[BATCHES / 2], got_huge ? "hugetlb" : "4k", p == NULL);
    munmap(m, bytes);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "load")) {
        load(argv[2], (uint32_t)atol(argv[3]));
        return 0;
    }
    if ((argc == 3 || argc == 4) && !strcmp(argv[1], "chase")) {
        chase((size_t)atol(argv[2]), argc == 4 && !strcmp(argv[3], "huge"), ns_per_tick());
        return 0;
    }
    if ((argc != 7 && argc != 8) || (strcmp(argv[1], "shm") && strcmp(argv[1], "hiredis"))) {
        fprintf(stderr, "usage: shm_bench load SOCK KEYS\n"
                        "       shm_bench shm|hiredis SOCK KEYS OPS PROCS uniform|zipf [CDF]\n"
                        "       shm_bench chase MIB [huge]\n");
        return 2;
    }
    bool shm = !strcmp(argv[1], "shm"), zipf = !strcmp(argv[6], "zipf");
    uint32_t keys = (uint32_t)atol(argv[3]);
    size_t ops = (size_t)atoll(argv[4]);
    int procs = atoi(argv[5]);
    if (!keys || !ops || procs < 1 || procs > 64)
        die("bad arguments");
    size_t bytes = sizeof(struct shared) + (size_t)procs * ops * sizeof(uint32_t);
    struct shared *sh =
        mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        die("mmap");
    double npt = ns_per_tick();
    pid_t pids[64];
    for (int i = 0; i < procs; i++) {
        if ((pids[i] = fork()) == 0) {
            reader(i, shm, argv[2], keys, ops, zipf, sh, npt);
            _exit(0);
        }
    }
    for (int i = 0; i < procs; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            die("a reader failed");
    }
    size_t n = (size_t)procs * ops;
    qsort(sh->ns, n, sizeof(uint32_t), cmp_u32);
    double rate = 0, hits = 0, all = 0;
    for (int i = 0; i < procs; i++) {
        rate += sh->rate[i];
        hits += (double)sh->hits[i];
        all += (double)(sh->hits[i] + sh->misses[i]);
    }
    if (argc == 8) {
        FILE *f = fopen(argv[7], "w");
        if (!f)
            die("cannot write the CDF file");
        for (size_t i = 0; i < 1000; i++)
            fprintf(f, "%u %.4f\n", sh->ns[i * (n - 1) / 999], (double)i / 999);
        fclose(f);
    }
    printf("%u %u %u %.0f %.4f\n", sh->ns[n / 2], sh->ns[n * 99 / 100], sh->ns[n * 999 / 1000],
           rate, all ? hits / all : 0);
    munmap(sh, bytes);
    return 0;
}
