/*
 * test_stress — the shm cache under concurrent processes, bounded in time.
 *
 * One daemon with a small cache (so eviction churns), 2 writer processes
 * and 4 reader processes, all through libshmkv. Every value carries its
 * writer, key, a sequence number and a checksum. Writers publish each
 * acknowledged sequence number in a shared table; readers check every read:
 *   - no torn or corrupt value (checksum, writer and key match);
 *   - read-your-writes across processes: never older than a sequence
 *     number acknowledged before the read began;
 *   - monotonic reads: never older than one this reader already saw;
 *   - all-or-nothing: MSET's two keys and HSET's meta+field agree.
 * The second test kills reader processes with SIGKILL mid-read, over and
 * over, while a writer and a checking reader carry on.
 */
#include "harness.h"

#include <sys/mman.h>

#include "shmkv.h"

enum { NW = 2, NR = 4, NK = 48, PAYLOAD = 300 };

struct shared {
    uint64_t acked[NW][NK]; /* the last acknowledged sequence number */
    uint64_t reads[NR + 1], hits[NR + 1], violations[NR + 1];
    char why[NR + 1][160];
    int stop;
};

static struct server S;
static struct shared *SH;

static int group_setup(void **state)
{
    (void)state;
    h_prepare(&S, "stress");
    const char *opts[] = {"--shm-cache-size", "2mb", NULL};
    h_start_shmkvd_opts(&S, opts);
    SH = mmap(NULL, sizeof *SH, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return SH == MAP_FAILED ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    munmap(SH, sizeof *SH);
    return h_group_stop(&S);
}

static uint64_t fnv(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* value = seq(8) writer(4) key(4) payload(n) fnv(8) */
static size_t make_value(char *v, uint64_t seq, uint32_t w, uint32_t k, uint64_t *rng)
{
    size_t n = 16 + t_rnd(rng) % PAYLOAD;
    memcpy(v, &seq, 8);
    memcpy(v + 8, &w, 4);
    memcpy(v + 12, &k, 4);
    for (size_t i = 16; i < n; i++)
        v[i] = (char)t_rnd(rng);
    uint64_t s = fnv(v, n);
    memcpy(v + n, &s, 8);
    return n + 8;
}

/* The sequence number of a well-formed value for (w, k), or 0 (bad). */
static uint64_t check_value(const char *v, size_t n, uint32_t w, uint32_t k)
{
    uint64_t seq, s;
    uint32_t vw, vk;
    if (n < 24)
        return 0;
    memcpy(&s, v + n - 8, 8);
    if (s != fnv(v, n - 8))
        return 0;
    memcpy(&seq, v, 8);
    memcpy(&vw, v + 8, 4);
    memcpy(&vk, v + 12, 4);
    return vw == w && vk == k ? seq : 0;
}

static shmkv *client(void)
{
    shmkv *h = NULL;
    if (shmkv_open(&h, S.sock, NULL) != SHMKV_OK || shmkv_cache_error(h))
        _exit(90);
    return h;
}

static void cmd_ok(shmkv *h, int argc, const char **argv, const size_t *lens)
{
    shmkv_reply *r;
    if (shmkv_command(h, &r, argc, argv, lens) != SHMKV_OK || r->type == SHMKV_REPLY_ERROR)
        _exit(91);
    shmkv_reply_free(r);
}

/* Writer w: for key k, in turn SET s:w:k, HSET h:w:k f, MSET a:w:k b:w:k. */
static void writer(int w, uint64_t seed)
{
    shmkv *h = client();
    uint64_t rng = seed, seqs[NK] = {0};
    char v[PAYLOAD + 40], ka[32], kb[32], kh[32];
    while (!__atomic_load_n(&SH->stop, __ATOMIC_ACQUIRE)) {
        uint32_t k = (uint32_t)(t_rnd(&rng) % NK);
        uint64_t seq = ++seqs[k];
        size_t n = make_value(v, seq, (uint32_t)w, k, &rng);
        snprintf(ka, sizeof ka, "s:%d:%u", w, k);
        snprintf(kh, sizeof kh, "h:%d:%u", w, k);
        const char *set[] = {"SET", ka, v};
        size_t setl[] = {3, strlen(ka), n};
        cmd_ok(h, 3, set, setl);
        const char *hs[] = {"HSET", kh, "f", v};
        size_t hsl[] = {4, strlen(kh), 1, n};
        cmd_ok(h, 4, hs, hsl);
        snprintf(ka, sizeof ka, "a:%d:%u", w, k);
        snprintf(kb, sizeof kb, "b:%d:%u", w, k);
        const char *ms[] = {"MSET", ka, v, kb, v};
        size_t msl[] = {4, strlen(ka), n, strlen(kb), n};
        cmd_ok(h, 5, ms, msl);
        /* Acknowledged, all three: every reader must see seq from now on. */
        __atomic_store_n(&SH->acked[w][k], seq, __ATOMIC_RELEASE);
    }
    shmkv_close(h);
    _exit(0);
}

static void violation(int id, const char *fmt, ...)
{
    if (SH->violations[id]++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(SH->why[id], sizeof SH->why[id], fmt, ap);
        va_end(ap);
    }
}

/* Reader id: random reads of every shape, each checked. */
static void reader(int id, uint64_t seed)
{
    shmkv *h = client();
    uint64_t rng = seed, seen[NW][NK][3] = {{{0}}};
    char ka[32], kb[32];
    while (!__atomic_load_n(&SH->stop, __ATOMIC_ACQUIRE)) {
        uint32_t w = (uint32_t)(t_rnd(&rng) % NW), k = (uint32_t)(t_rnd(&rng) % NK);
        int shape = (int)(t_rnd(&rng) % 3);
        uint64_t acked = __atomic_load_n(&SH->acked[w][k], __ATOMIC_ACQUIRE);
        shmkv_reply *r;
        uint64_t seq = 0;
        if (shape == 0) {
            snprintf(ka, sizeof ka, "s:%u:%u", w, k);
            const char *a[] = {"GET", ka};
            if (shmkv_command(h, &r, 2, a, NULL) != SHMKV_OK)
                _exit(92);
            if (r->type == SHMKV_REPLY_STRING && !(seq = check_value(r->str, r->len, w, k)))
                violation(id, "GET %s: corrupt value", ka);
        } else if (shape == 1) {
            snprintf(ka, sizeof ka, "h:%u:%u", w, k);
            const char *a[] = {"HGET", ka, "f"};
            if (shmkv_command(h, &r, 3, a, NULL) != SHMKV_OK)
                _exit(92);
            if (r->type == SHMKV_REPLY_STRING && !(seq = check_value(r->str, r->len, w, k)))
                violation(id, "HGET %s: corrupt value", ka);
        } else {
            snprintf(ka, sizeof ka, "a:%u:%u", w, k);
            snprintf(kb, sizeof kb, "b:%u:%u", w, k);
            const char *a[] = {"MGET", ka, kb};
            if (shmkv_command(h, &r, 3, a, NULL) != SHMKV_OK || r->type != SHMKV_REPLY_ARRAY ||
                r->elements != 2)
                _exit(92);
            const shmkv_reply *x = r->element[0], *y = r->element[1];
            if (x->type != y->type) {
                violation(id, "MGET %s %s: one set, one not", ka, kb);
            } else if (x->type == SHMKV_REPLY_STRING) {
                seq = check_value(x->str, x->len, w, k);
                uint64_t seq2 = check_value(y->str, y->len, w, k);
                if (!seq || seq != seq2)
                    violation(id, "MGET %s %s: seqs %llu and %llu", ka, kb, (unsigned long long)seq,
                              (unsigned long long)seq2);
            }
        }
        shmkv_reply_free(r);
        if (seq < acked)
            violation(id, "shape %d key %u:%u: read seq %llu after %llu was acknowledged", shape, w,
                      k, (unsigned long long)seq, (unsigned long long)acked);
        if (seq < seen[w][k][shape])
            violation(id, "shape %d key %u:%u: seq went back from %llu to %llu", shape, w, k,
                      (unsigned long long)seen[w][k][shape], (unsigned long long)seq);
        else
            seen[w][k][shape] = seq;
        SH->reads[id]++;
    }
    struct shmkv_stats st;
    shmkv_stats(h, &st);
    SH->hits[id] = st.hits;
    shmkv_close(h);
    _exit(0);
}

static pid_t spawn(void (*fn)(int, uint64_t), int id, uint64_t seed)
{
    pid_t p = fork();
    if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        fn(id, seed);
    }
    assert_true(p > 0);
    return p;
}

static void wait_ok(pid_t p, const char *what)
{
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("%s exited with status %d", what, st);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int seconds(void)
{
    const char *e = getenv("SHMKV_STRESS_SECONDS");
    return e ? atoi(e) : 4;
}

/* Sequence numbers start again at 1: so must the data. */
static void fresh(void)
{
    memset(SH, 0, sizeof *SH);
    redisContext *c = h_connect_port(S.port);
    assert_non_null(c);
    h_expect_status(c, "OK", "FLUSHALL");
    redisFree(c);
}

static void test_readers_and_writers(void **state)
{
    (void)state;
    fresh();
    pid_t ws[NW], rs[NR];
    for (int i = 0; i < NW; i++)
        ws[i] = spawn(writer, i, 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));
    for (int i = 0; i < NR; i++)
        rs[i] = spawn(reader, i, 0xc2b2ae3d27d4eb4full * (uint64_t)(i + 1));
    sleep_ms(seconds() * 1000L);
    __atomic_store_n(&SH->stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < NW; i++)
        wait_ok(ws[i], "writer");
    uint64_t reads = 0, hits = 0;
    for (int i = 0; i < NR; i++) {
        wait_ok(rs[i], "reader");
        if (SH->violations[i])
            fail_msg("reader %d: %llu violations, first: %s", i,
                     (unsigned long long)SH->violations[i], SH->why[i]);
        reads += SH->reads[i];
        hits += SH->hits[i];
    }
    uint64_t acked = 0;
    for (int w = 0; w < NW; w++)
        for (int k = 0; k < NK; k++)
            acked += SH->acked[w][k];
    print_message("stress: %llu reads (%llu from shm), %llu acknowledged write rounds, 0 "
                  "violations\n",
                  (unsigned long long)reads, (unsigned long long)hits, (unsigned long long)acked);
    assert_true(hits > 0 && acked > 0);
}

/* A reader that dies mid-read harms nobody: kill one every few ms while a
 * writer writes and a checking reader reads. */
static void victim(int id, uint64_t seed)
{
    (void)id;
    shmkv *h = client();
    uint64_t rng = seed;
    for (;;) {
        char k[32];
        snprintf(k, sizeof k, "s:0:%u", (unsigned)(t_rnd(&rng) % NK));
        char *v;
        size_t n;
        if (shmkv_get(h, k, strlen(k), &v, &n) == SHMKV_OK)
            free(v);
    }
}

static void test_readers_killed(void **state)
{
    (void)state;
    fresh();
    pid_t w = spawn(writer, 0, 7), r = spawn(reader, NR, 11);
    uint64_t rng = 5;
    int kills = 0;
    for (long end_ms = seconds() * 1000L, t = 0; t < end_ms; kills++) {
        pid_t v = spawn(victim, 0, t_rnd(&rng));
        long ms = 5 + (long)(t_rnd(&rng) % 40);
        sleep_ms(ms);
        kill(v, SIGKILL);
        waitpid(v, NULL, 0);
        t += ms + 5;
    }
    __atomic_store_n(&SH->stop, 1, __ATOMIC_RELEASE);
    wait_ok(w, "writer");
    wait_ok(r, "reader");
    if (SH->violations[NR])
        fail_msg("checking reader: %s", SH->why[NR]);
    assert_true(SH->reads[NR] > 0);
    /* The daemon is unharmed and still answers. */
    redisContext *c = h_connect_port(S.port);
    assert_non_null(c);
    h_expect_status(c, "PONG", "PING");
    redisFree(c);
    print_message("killed %d readers mid-read; %llu checked reads meanwhile\n", kills,
                  (unsigned long long)SH->reads[NR]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readers_and_writers),
        cmocka_unit_test(test_readers_killed),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
