/*
 * test_crash — kill -9 loses no acknowledged write, and no command is ever
 * half-applied.
 *
 * A writer sends SET / HSET (two fields) / ZADD / LPUSH (two elements) /
 * MSET (two keys) / DEL / INCR to shmkvd, one at a time; every command
 * shmkvd acknowledges is replayed to a reference redis-server, the model. A
 * killer thread sends SIGKILL to shmkvd at a random moment. After each
 * restart, shmkvd's whole key space must equal the reference's, or equal it
 * once the one command in flight at the kill (sent, never acknowledged) is
 * applied too. Anything else is a lost write or a half-applied command.
 *
 * Scripts and transactions likewise: a writer runs an EVAL that SETs 1,000
 * keys to one value, and a MULTI/EXEC of 8 SETs, each run with a new value,
 * while shmkvd is killed; after each restart all of a script's keys hold
 * the last acknowledged run's value, or all the run's in flight, and so do
 * the transaction's. A libshmkv reader meanwhile reads some of them from
 * the shared-memory cache and must never see two runs at once.
 *
 *   SHMKV_CRASH_CYCLES=n (default 20), SHMKV_CRASH_SEED=n
 */
#include "harness.h"

#include <pthread.h>

#include "h_client.h"

static struct server K, R;
static uint64_t rng;

static uint64_t rnd(void)
{
    return t_rnd(&rng);
}

/* One command, as argv. */
struct cmd {
    int argc;
    char argv[8][32];
    const char *pv[8];
    size_t lv[8];
};

/* Points pv/lv at this cmd's own argv (after building or copying it). */
static void cmd_fix(struct cmd *c)
{
    for (int i = 0; i < c->argc; i++) {
        c->pv[i] = c->argv[i];
        c->lv[i] = strlen(c->argv[i]);
    }
}

static void gen(struct cmd *c, uint64_t n)
{
    int k = (int)(rnd() % 16);
    switch (rnd() % 7) {
    case 0:
        c->argc = 3;
        snprintf(c->argv[0], 32, "SET");
        snprintf(c->argv[1], 32, "s%d", k);
        snprintf(c->argv[2], 32, "v%llu", (unsigned long long)n);
        break;
    case 1: /* two fields: both or neither */
        c->argc = 6;
        snprintf(c->argv[0], 32, "HSET");
        snprintf(c->argv[1], 32, "h%d", k % 4);
        snprintf(c->argv[2], 32, "f%d", k);
        snprintf(c->argv[3], 32, "%llu", (unsigned long long)n);
        snprintf(c->argv[4], 32, "g%d", k);
        snprintf(c->argv[5], 32, "%llu", (unsigned long long)n);
        break;
    case 2:
        c->argc = 4;
        snprintf(c->argv[0], 32, "ZADD");
        snprintf(c->argv[1], 32, "z%d", k % 4);
        snprintf(c->argv[2], 32, "%llu", (unsigned long long)n);
        snprintf(c->argv[3], 32, "m%d", k);
        break;
    case 3: /* two elements: both or neither */
        c->argc = 4;
        snprintf(c->argv[0], 32, "LPUSH");
        snprintf(c->argv[1], 32, "l%d", k % 4);
        snprintf(c->argv[2], 32, "a%llu", (unsigned long long)n);
        snprintf(c->argv[3], 32, "b%llu", (unsigned long long)n);
        break;
    case 4: /* two keys: both or neither */
        c->argc = 5;
        snprintf(c->argv[0], 32, "MSET");
        snprintf(c->argv[1], 32, "s%d", k);
        snprintf(c->argv[2], 32, "m%llu", (unsigned long long)n);
        snprintf(c->argv[3], 32, "s%d", (k + 1) % 16);
        snprintf(c->argv[4], 32, "m%llu", (unsigned long long)n);
        break;
    case 5:
        c->argc = 2;
        snprintf(c->argv[0], 32, rnd() % 4 ? "INCR" : "DEL");
        snprintf(c->argv[1], 32, "c%d", k % 4);
        break;
    default:
        c->argc = 2;
        snprintf(c->argv[0], 32, "DEL");
        snprintf(c->argv[1], 32, rnd() % 2 ? "s%d" : "h%d", k % 4);
        break;
    }
    cmd_fix(c);
}

/* The whole key space as one string: keys sorted, each with its type and
 * contents in a canonical order. Returns malloc'd text. */
static char *dump(redisContext *c)
{
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    out[0] = '\0';
#define APPEND(...)                                                                                \
    do {                                                                                           \
        int n_ = snprintf(NULL, 0, __VA_ARGS__);                                                   \
        while (len + (size_t)n_ + 1 > cap)                                                         \
            out = realloc(out, cap *= 2);                                                          \
        len += (size_t)snprintf(out + len, cap - len, __VA_ARGS__);                                \
    } while (0)
    /* The kept key count too: counted again at each start, after the
     * journal's replay (docs/storage.md, "Key counts"). */
    redisReply *dbsize = H_CMD(c, "DBSIZE");
    assert_non_null(dbsize);
    APPEND("dbsize=%lld;", dbsize->integer);
    freeReplyObject(dbsize);
    redisReply *keys = H_CMD(c, "KEYS *");
    assert_non_null(keys);
    /* sort key names */
    for (size_t i = 1; i < keys->elements; i++)
        for (size_t j = i; j > 0 && strcmp(keys->element[j - 1]->str, keys->element[j]->str) > 0;
             j--) {
            redisReply *t = keys->element[j];
            keys->element[j] = keys->element[j - 1];
            keys->element[j - 1] = t;
        }
    for (size_t i = 0; i < keys->elements; i++) {
        const char *k = keys->element[i]->str;
        redisReply *t = H_CMD(c, "TYPE %s", k), *e = H_CMD(c, "OBJECT ENCODING %s", k);
        APPEND("%s:%s:%s=", k, t->str, e->str); /* inline or not, as redis-server */
        freeReplyObject(e);
        redisReply *v = NULL;
        if (!strcmp(t->str, "string"))
            v = H_CMD(c, "GET %s", k);
        else if (!strcmp(t->str, "hash"))
            v = H_CMD(c, "HGETALL %s", k);
        else if (!strcmp(t->str, "list"))
            v = H_CMD(c, "LRANGE %s 0 -1", k);
        else if (!strcmp(t->str, "zset"))
            v = H_CMD(c, "ZRANGE %s 0 -1 WITHSCORES", k);
        if (v && v->type == REDIS_REPLY_STRING) {
            APPEND("%s", v->str);
        } else if (v && v->type == REDIS_REPLY_ARRAY) {
            /* HGETALL order differs between servers: sort the pairs. */
            size_t stride = !strcmp(t->str, "hash") ? 2 : 1;
            char **items = calloc(v->elements / stride + 1, sizeof *items);
            for (size_t j = 0; j < v->elements / stride; j++) {
                size_t n = strlen(v->element[j * stride]->str) + 40;
                items[j] = malloc(n);
                snprintf(items[j], n, "%s%s%s", v->element[j * stride]->str,
                         stride == 2 ? "->" : "", stride == 2 ? v->element[j * 2 + 1]->str : "");
            }
            size_t m = v->elements / stride;
            if (stride == 2)
                for (size_t a = 1; a < m; a++)
                    for (size_t b = a; b > 0 && strcmp(items[b - 1], items[b]) > 0; b--) {
                        char *x = items[b];
                        items[b] = items[b - 1];
                        items[b - 1] = x;
                    }
            for (size_t j = 0; j < m; j++) {
                APPEND("%s,", items[j]);
                free(items[j]);
            }
            free(items);
        }
        APPEND(";");
        freeReplyObject(v);
        freeReplyObject(t);
    }
    freeReplyObject(keys);
    return out;
}

struct killer {
    pid_t pid;
    int after_ms;
};

static void *killer_main(void *arg)
{
    struct killer *k = arg;
    struct timespec ts = {k->after_ms / 1000, (long)(k->after_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    kill(k->pid, SIGKILL);
    return NULL;
}

/* Every other start splits each flush batch over four flusher threads, so
 * a kill lands between their writes too, and a replay follows either. */
/* Limits low enough that hashes (up to 8 fields) and sorted sets (up to 4
 * members) turn from inline into records, and back by DEL, again and again
 * between kills: a conversion is one record set with the command's. */
#define SMALL_LIMITS "--hash-max-listpack-entries", "5", "--zset-max-listpack-entries", "2"

static void start_shmkvd(const char *fsync)
{
    static int starts;
    const char *opts[] = {"--appendfsync",          fsync,        "--flusher-threads",
                          starts++ % 2 ? "4" : "1", SMALL_LIMITS, NULL};
    h_start_shmkvd_opts(&K, opts);
}

static void run_cycles(const char *fsync)
{
    const char *sc = getenv("SHMKV_CRASH_CYCLES"), *ss = getenv("SHMKV_CRASH_SEED");
    int cycles = sc ? atoi(sc) : 20;
    rng = (ss ? strtoull(ss, NULL, 10) : 7) * 0x9e3779b97f4a7c15ull + 1;
    h_prepare(&K, "crash");
    h_start_redis_opts(&R, "crashref", (const char *const[]){SMALL_LIMITS, NULL});
    redisContext *ref = h_connect_port(R.port);
    start_shmkvd(fsync);
    struct cmd inflight;
    bool have_inflight = false;
    uint64_t n = 0, acked = 0, ambiguous_applied = 0, conversions = 0;
    for (int cycle = 0; cycle < cycles; cycle++) {
        redisContext *c = h_connect_port(K.port);
        assert_non_null(c);
        /* Verify: acknowledged state, or that plus the command in flight. */
        char *got = dump(c), *want = dump(ref);
        if (strcmp(got, want) != 0) {
            if (!have_inflight)
                fail_msg("cycle %d: state differs after restart\n shmkvd: %s\n model:  %s", cycle,
                         got, want);
            redisReply *r = redisCommandArgv(ref, inflight.argc, inflight.pv, inflight.lv);
            freeReplyObject(r);
            free(want);
            want = dump(ref);
            if (strcmp(got, want) != 0) {
                /* Show the first key that differs, not kilobytes of state. */
                size_t at = 0;
                while (got[at] && got[at] == want[at])
                    at++;
                size_t from = at;
                while (from > 0 && got[from - 1] != ';')
                    from--;
                fail_msg("cycle %d: state is neither before nor after the command in flight "
                         "(%s %s)\n shmkvd: %.300s\n model:  %.300s",
                         cycle, inflight.argv[0], inflight.argv[1], got + from, want + from);
            }
            ambiguous_applied++;
        }
        free(got);
        free(want);
        have_inflight = false;
        /* Write until killed. */
        struct killer k = {K.pid, 30 + (int)(rnd() % 250)};
        pthread_t th;
        pthread_create(&th, NULL, killer_main, &k);
        uint64_t conv_now = 0;
        for (;;) {
            if (n % 64 == 0) { /* conversions so far, this process (none in flight) */
                redisReply *i = redisCommand(c, "INFO storage");
                if (!i)
                    break;
                const char *p = strstr(i->str, "inline_conversions:");
                if (p)
                    conv_now = strtoull(p + strlen("inline_conversions:"), NULL, 10);
                freeReplyObject(i);
            }
            struct cmd cmd;
            gen(&cmd, ++n);
            redisReply *r = redisCommandArgv(c, cmd.argc, cmd.pv, cmd.lv);
            if (!r) { /* the server died: this command may or may not have landed */
                inflight = cmd;
                cmd_fix(&inflight); /* its pointers must not lead back into cmd */
                have_inflight = true;
                break;
            }
            if (r->type == REDIS_REPLY_ERROR)
                fail_msg("cycle %d: %s %s: -%s", cycle, cmd.argv[0], cmd.argv[1], r->str);
            freeReplyObject(r);
            acked++;
            r = redisCommandArgv(ref, cmd.argc, cmd.pv, cmd.lv);
            freeReplyObject(r);
        }
        conversions += conv_now;
        pthread_join(th, NULL);
        redisFree(c);
        int st;
        waitpid(K.pid, &st, 0);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        K.pid = 0;
        start_shmkvd(fsync); /* replays the journal */
    }
    /* The last restart is verified too. */
    redisContext *c = h_connect_port(K.port);
    char *got = dump(c), *want = dump(ref);
    if (strcmp(got, want) != 0 && have_inflight) {
        redisReply *r = redisCommandArgv(ref, inflight.argc, inflight.pv, inflight.lv);
        freeReplyObject(r);
        free(want);
        want = dump(ref);
    }
    assert_string_equal(got, want);
    free(got);
    free(want);
    redisFree(c);
    redisFree(ref);
    printf("test_crash (appendfsync %s): %d kill -9 cycles, %llu acknowledged writes, none "
           "lost; %llu in-flight commands landed whole, the rest not at all; at least %llu "
           "inline collections turned into records between kills\n",
           fsync, cycles, (unsigned long long)acked, (unsigned long long)ambiguous_applied,
           (unsigned long long)conversions);
    assert_true(conversions > 0);
    assert_int_equal(h_stop(&K), 0);
    h_destroy(&K);
    h_destroy(&R);
}

static void test_crash_everysec(void **state)
{
    (void)state;
    run_cycles("everysec");
}

static void test_crash_always(void **state)
{
    (void)state;
    run_cycles("always");
}

/* ---- scripts and transactions: all of a run or none ---- */

#define GROUP_KEYS 1000
#define TXN_KEYS 8
#define RUN_BYTES 1024 /* a script's run: about a megabyte of journal */
static const char group_script[] =
    "for i = 1, 1000 do redis.call('SET', KEYS[1] .. i, ARGV[1]) end return 1";
_Static_assert(GROUP_KEYS == 1000, "the script's loop count");

/* Run n's value: its number, then padding. */
static void run_value(uint64_t n, char *v)
{
    memset(v, 'x', RUN_BYTES);
    int k = snprintf(v, RUN_BYTES, "%llu:", (unsigned long long)n);
    v[k] = 'x';
}

/* The run a value names; 0 for a nil, UINT64_MAX for a value no run
 * wrote. */
static uint64_t run_of(const redisReply *e)
{
    if (e->type == REDIS_REPLY_NIL)
        return 0;
    if (e->type != REDIS_REPLY_STRING || e->len != RUN_BYTES)
        return UINT64_MAX;
    char want[RUN_BYTES];
    uint64_t n = strtoull(e->str, NULL, 10);
    run_value(n, want);
    return memcmp(want, e->str, RUN_BYTES) ? UINT64_MAX : n;
}

/* The run that every one of the n keys prefix1..prefixn holds; fails
 * naming two keys whose runs differ. */
static uint64_t whole_run(redisContext *c, const char *prefix, int n, int cycle)
{
    const char *argv[GROUP_KEYS + 1];
    char names[GROUP_KEYS][16];
    argv[0] = "MGET";
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%s%d", prefix, i + 1);
        argv[i + 1] = names[i];
    }
    redisReply *r = redisCommandArgv(c, n + 1, argv, NULL);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, (size_t)n);
    uint64_t first = run_of(r->element[0]);
    for (int i = 1; i < n; i++) {
        uint64_t x = run_of(r->element[i]);
        if (x != first)
            fail_msg("cycle %d: %s1 holds run %llu, %s%d run %llu: a run applied in part", cycle,
                     prefix, (unsigned long long)first, prefix, i + 1, (unsigned long long)x);
    }
    freeReplyObject(r);
    return first;
}

/* The reader: MGET of a script's first, middle and last keys and of the
 * transaction's first and last, through libshmkv (served from the cache
 * once filled), over and over; each set must name one run. */
static struct reader {
    pthread_t th;
    bool running;
    int stop; /* atomic */
    char bad[300];
    uint64_t reads, hits;
} rdr;

static void *reader_main(void *arg)
{
    (void)arg;
    shmkv *h = NULL;
    while (!__atomic_load_n(&rdr.stop, __ATOMIC_ACQUIRE)) {
        if (!h && shmkv_open(&h, K.sock, NULL) != SHMKV_OK) {
            h = NULL; /* between a kill and the restart */
            usleep(20 * 1000);
            continue;
        }
        const char *argv[] = {"MGET", "g:1", "g:500", "g:1000", "t:1", "t:8"};
        shmkv_reply *r;
        if (shmkv_command(h, &r, 6, argv, NULL) != SHMKV_OK) {
            usleep(5 * 1000); /* the next call reconnects */
            continue;
        }
        rdr.reads++;
        const char *why = NULL;
        if (r->type != SHMKV_REPLY_ARRAY || r->elements != 5)
            why = "not a five-element array";
        for (size_t i = 0; !why && i < 5; i++) {
            size_t j = i < 3 ? 0 : 3; /* compared with the first of its run */
            const shmkv_reply *a = r->element[j], *b = r->element[i];
            if (a->type != b->type || (a->type == SHMKV_REPLY_STRING &&
                                       (a->len != b->len || memcmp(a->str, b->str, a->len))))
                why =
                    i < 3 ? "a script's keys from two runs" : "a transaction's keys from two runs";
        }
        if (why) {
            snprintf(rdr.bad, sizeof rdr.bad, "reader: %s", why);
            shmkv_reply_free(r);
            break;
        }
        shmkv_reply_free(r);
        usleep(100); /* thousands a second, without taking a CPU from the daemon */
    }
    if (h) {
        rdr.hits = h_lib_hits(h);
        shmkv_close(h);
    }
    return NULL;
}

static void reader_stop(void)
{
    if (!rdr.running)
        return;
    __atomic_store_n(&rdr.stop, 1, __ATOMIC_RELEASE);
    pthread_join(rdr.th, NULL);
    rdr.running = false;
}

/* One MULTI/EXEC of TXN_KEYS SETs to run n's value; false if the server
 * died on the way (then it may or may not have run). */
static bool txn_run(redisContext *c, uint64_t n)
{
    char v[RUN_BYTES];
    run_value(n, v);
    redisAppendCommand(c, "MULTI");
    for (int i = 1; i <= TXN_KEYS; i++)
        redisAppendCommand(c, "SET t:%d %b", i, v, (size_t)RUN_BYTES);
    redisAppendCommand(c, "EXEC");
    for (int i = 0; i < TXN_KEYS + 2; i++) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || !r)
            return false;
        assert_true(r->type != REDIS_REPLY_ERROR);
        if (i == TXN_KEYS + 1)
            assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        freeReplyObject(r);
    }
    return true;
}

static void test_crash_script_and_exec(void **state)
{
    (void)state;
    const char *sc = getenv("SHMKV_CRASH_CYCLES"), *ss = getenv("SHMKV_CRASH_SEED");
    int cycles = sc ? atoi(sc) : 20;
    rng = (ss ? strtoull(ss, NULL, 10) : 7) * 0x9e3779b97f4a7c15ull + 2;
    h_prepare(&K, "crashgrp");
    /* Every other start under appendfsync always: the journal then goes
     * to a file on disk, else to shared memory. */
    start_shmkvd("everysec");
    memset(&rdr, 0, sizeof rdr);
    assert_int_equal(pthread_create(&rdr.th, NULL, reader_main, NULL), 0);
    rdr.running = true;
    uint64_t n = 0, acked_g = 0, acked_t = 0, inflight_g = 0, inflight_t = 0, runs = 0;
    uint64_t landed = 0;
    for (int cycle = 0; cycle <= cycles; cycle++) {
        redisContext *c = h_connect_port(K.port);
        assert_non_null(c);
        uint64_t g = whole_run(c, "g:", GROUP_KEYS, cycle);
        uint64_t t = whole_run(c, "t:", TXN_KEYS, cycle);
        if (g != acked_g && g != inflight_g)
            fail_msg("cycle %d: the script's keys hold run %llu; acknowledged %llu, in flight %llu",
                     cycle, (unsigned long long)g, (unsigned long long)acked_g,
                     (unsigned long long)inflight_g);
        if (t != acked_t && t != inflight_t)
            fail_msg("cycle %d: the transaction's keys hold run %llu; acknowledged %llu, in "
                     "flight %llu",
                     cycle, (unsigned long long)t, (unsigned long long)acked_t,
                     (unsigned long long)inflight_t);
        landed += (g != acked_g) + (t != acked_t);
        acked_g = g;
        acked_t = t;
        inflight_g = inflight_t = 0;
        if (cycle == cycles) {
            redisFree(c);
            break;
        }
        struct killer k = {K.pid, 30 + (int)(rnd() % 250)};
        pthread_t th;
        pthread_create(&th, NULL, killer_main, &k);
        for (;;) {
            n++;
            if (n % 2) {
                char v[RUN_BYTES];
                run_value(n, v);
                redisReply *r =
                    redisCommand(c, "EVAL %s 1 g: %b", group_script, v, (size_t)RUN_BYTES);
                if (!r) {
                    inflight_g = n;
                    break;
                }
                assert_true(r->type != REDIS_REPLY_ERROR);
                freeReplyObject(r);
                acked_g = n;
            } else {
                if (!txn_run(c, n)) {
                    inflight_t = n;
                    break;
                }
                acked_t = n;
            }
            runs++;
        }
        pthread_join(th, NULL);
        redisFree(c);
        int st;
        waitpid(K.pid, &st, 0);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        K.pid = 0;
        start_shmkvd(cycle % 2 ? "everysec" : "always"); /* replays the journal */
    }
    reader_stop();
    if (rdr.bad[0])
        fail_msg("%s (after %llu reads)", rdr.bad, (unsigned long long)rdr.reads);
    printf("test_crash (scripts and transactions): %d kill -9 cycles, %llu acknowledged runs, "
           "each whole; %llu in-flight runs landed whole; the reader's %llu MGETs (%llu from "
           "the cache) each saw one run\n",
           cycles, (unsigned long long)runs, (unsigned long long)landed,
           (unsigned long long)rdr.reads, (unsigned long long)rdr.hits);
    assert_true(rdr.reads > 0);
    assert_int_equal(h_stop(&K), 0);
    h_destroy(&K);
}

/* A failed assertion leaves run_cycles early: stop both servers by PID and
 * remove their folders here too (a no-op after a passing run). */
static int crash_teardown(void **state)
{
    (void)state;
    reader_stop();
    if (K.dir[0])
        h_destroy(&K);
    if (R.dir[0])
        h_destroy(&R);
    memset(&K, 0, sizeof K);
    memset(&R, 0, sizeof R);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_crash_everysec, crash_teardown),
        cmocka_unit_test_teardown(test_crash_always, crash_teardown),
        cmocka_unit_test_teardown(test_crash_script_and_exec, crash_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
