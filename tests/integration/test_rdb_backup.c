/*
 * test_rdb_backup — `redis-cli --rdb` takes an RDB file from shmkvd (SYNC
 * after REPLCONF rdb-only), redis-check-rdb accepts it, and redis-server
 * loads the same data: DEBUG DIGEST over every database (values, types
 * and expiries) and FUNCTION's libraries agree. The data: all five types,
 * small and large, binary keys and values, expiries, several databases
 * (one of them swapped by SWAPDB) and a library of functions. The other
 * way: redis-server's own file (its compact encodings: listpacks,
 * intsets, quicklists, LZF strings) imported with `shmkvd --import` gives
 * the same digest; a damaged file, a stream, or a data set that is not
 * empty make the import fail with a reason.
 */
#include "harness.h"

static struct server K, R;

/* Runs a shell command line, bounded in time; its exit status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void load(redisContext *c)
{
    static const char bin[] = "k\0\r\nbin";
    h_expect_status(c, "OK", "SET s plain");
    h_expect_status(c, "OK", "SET n 12345");
    h_expect_status(c, "OK", "SET neg -7");
    h_expect_status(c, "OK", "SET empty %s", "");
    h_expect_status(c, "OK", "SET %b %b", bin, sizeof bin - 1, bin, sizeof bin - 1);
    h_expect_status(c, "OK", "SET ttl v PX 600000");
    h_expect_int(c, 2, "HSET h a 1 b 2");
    h_expect_int(c, 3, "SADD si 1 2 3");
    h_expect_int(c, 3, "SADD ss x y z");
    h_expect_int(c, 4, "ZADD z 1.5 a 2 b -inf lo inf hi");
    h_expect_int(c, 3, "RPUSH l x y z");
    h_expect_int(c, 1, "PEXPIRE h 700000");
    /* large: past every compact encoding's thresholds */
    for (int i = 0; i < 300; i++) {
        freeReplyObject(H_CMD(c, "HSET hbig f%d %d", i, i * 7));
        freeReplyObject(H_CMD(c, "SADD sbig m%d", i));
        freeReplyObject(H_CMD(c, "ZADD zbig %d.25 m%d", i, i));
        freeReplyObject(H_CMD(c, "RPUSH lbig e%d", i));
    }
    char *big = malloc(100000);
    memset(big, 'v', 100000);
    h_expect_status(c, "OK", "SET bigstr %b", big, (size_t)100000);
    free(big);
    h_expect_status(c, "OK", "SELECT 2");
    h_expect_status(c, "OK", "SET in2 two");
    h_expect_status(c, "OK", "SELECT 9");
    h_expect_int(c, 1, "LPUSH in9 nine");
    h_expect_status(c, "OK", "SELECT 0");
    h_expect_status(c, "OK", "SWAPDB 2 5"); /* in2 is now db 5's, on both sides */
    h_expect_bulk(c, "lib", "FUNCTION LOAD %s",
                  "#!lua name=lib\nredis.register_function('f', function(keys, args) return "
                  "{keys[1], args[1]} end)");
}

static void test_rdb_backup(void **state)
{
    (void)state;
    h_prepare(&K, "rdb");
    h_start_shmkvd_opts(&K, A("--enable-debug-command", "yes"));
    redisContext *c = h_connect_port(K.port);
    load(c);
    char file[512];
    snprintf(file, sizeof file, "%s/dump.rdb", K.dir);
    if (sh("timeout 60 redis-cli -p %d --rdb %s >%s/cli.log 2>&1", K.port, file, K.dir))
        fail_msg("redis-cli --rdb failed (see %s/cli.log)", K.dir);
    if (sh("timeout 60 redis-check-rdb %s >%s/check.log 2>&1", file, K.dir))
        fail_msg("redis-check-rdb refused the file (see %s/check.log)", K.dir);
    /* SAVE's file is the same data in the same format. */
    h_expect_status(c, "OK", "SAVE");
    if (sh("timeout 60 redis-check-rdb %s/data/dump.rdb >%s/check2.log 2>&1", K.dir, K.dir))
        fail_msg("redis-check-rdb refused SAVE's file (see %s/check2.log)", K.dir);
    /* redis-server loads it from shmkvd's folder, and saves nothing there. */
    h_start_redis_opts(
        &R, "rdb-r",
        A("--dir", K.dir, "--dbfilename", "dump.rdb", "--enable-debug-command", "yes"));
    redisContext *r = h_connect_port(R.port);
    redisReply *a = H_CMD(c, "DEBUG DIGEST"), *b = H_CMD(r, "DEBUG DIGEST");
    assert_int_equal(a->type, REDIS_REPLY_STATUS);
    if (strcmp(a->str, b->str))
        fail_msg("DEBUG DIGEST: shmkvd %s, redis-server from its RDB %s", a->str, b->str);
    assert_string_not_equal(a->str, "0000000000000000000000000000000000000000");
    freeReplyObject(a);
    freeReplyObject(b);
    h_expect_bulk(r, "two", "EVAL %s 0", "redis.call('select', 5) return redis.call('get', 'in2')");
    redisReply *f = H_CMD(r, "FCALL f 1 k a");
    assert_int_equal(f->elements, 2);
    assert_string_equal(f->element[1]->str, "a");
    freeReplyObject(f);
    redisFree(r);
    h_destroy(&R);
    redisFree(c);
    h_destroy(&K);
}

/* REPLCONF checks its options as Redis does. An empty data set makes a
 * valid file too. */
static void test_sync_replconf(void **state)
{
    (void)state;
    h_prepare(&K, "rdb");
    h_start_shmkvd_opts(&K, NULL);
    redisContext *c = h_connect_port(K.port);
    h_expect_err(c, "ERR syntax error", "REPLCONF capa");
    h_expect_err(c, "ERR Unrecognized REPLCONF option: bogus", "REPLCONF bogus 1");
    h_expect_err(c, "ERR value is out of range", "REPLCONF rdb-only 2");
    h_expect_status(c, "OK", "REPLCONF listening-port 6380 capa eof capa psync2");
    h_expect_status(c, "OK", "MULTI");
    h_expect_err(c, "ERR Command not allowed inside a transaction", "SYNC");
    h_expect_err(c, "EXECABORT", "EXEC");
    char file[512];
    snprintf(file, sizeof file, "%s/empty.rdb", K.dir);
    if (sh("timeout 60 redis-cli -p %d --rdb %s >/dev/null 2>&1", K.port, file))
        fail_msg("redis-cli --rdb of an empty data set failed");
    if (sh("timeout 60 redis-check-rdb %s >/dev/null 2>&1", file))
        fail_msg("redis-check-rdb refused the empty data set's file");
    h_expect_status(c, "PONG", "PING");
    redisFree(c);
    h_destroy(&K);
}

/* shmkvd --import file into the folder of K (the harness's options), as
 * a run of its own; its exit status. */
static int import(const char *file)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "timeout 120 %s --dir %s/data --port %d --bind 127.0.0.1 --import %s >>%s/import.log "
             "2>&1",
             SHMKVD_PATH, K.dir, K.port, file, K.dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_rdb_import(void **state)
{
    (void)state;
    h_start_redis_opts(&R, "rdb-src", A("--enable-debug-command", "yes"));
    redisContext *r = h_connect_port(R.port);
    load(r);
    /* compact encodings, LZF strings, and an expiry in the past by the time
     * of the import (left out, as redis-server leaves it out) */
    char *rep = malloc(5000);
    memset(rep, 'a', 5000);
    h_expect_status(r, "OK", "SET lzf %b", rep, (size_t)5000);
    free(rep);
    h_expect_status(r, "OK", "SET gone v PX 300");
    char file[512];
    snprintf(file, sizeof file, "%s/redis.rdb", R.dir);
    if (sh("timeout 60 redis-cli -p %d --rdb %s >/dev/null 2>&1", R.port, file))
        fail_msg("redis-cli --rdb from redis-server failed");
    struct timespec ts = {0, 400 * 1000 * 1000};
    nanosleep(&ts, NULL);
    /* Its expiry passed; DEL makes sure redis-server's digest leaves it out too. */
    freeReplyObject(H_CMD(r, "DEL gone"));
    h_prepare(&K, "rdb-imp");
    assert_int_equal(import(file), 0);
    h_start_shmkvd_opts(&K, A("--enable-debug-command", "yes"));
    redisContext *c = h_connect_port(K.port);
    redisReply *a = H_CMD(r, "DEBUG DIGEST"), *b = H_CMD(c, "DEBUG DIGEST");
    if (strcmp(a->str, b->str))
        fail_msg("DEBUG DIGEST: redis-server %s, shmkvd after --import %s", a->str, b->str);
    freeReplyObject(a);
    freeReplyObject(b);
    h_expect_int(c, 0, "EXISTS gone");
    redisReply *f = H_CMD(c, "FCALL f 1 k a");
    assert_int_equal(f->elements, 2);
    freeReplyObject(f);
    /* a data set that is not empty is not imported into */
    redisFree(c);
    assert_int_equal(h_stop(&K), 0);
    assert_int_equal(import(file), 1);
    char log[8192];
    char path[600];
    snprintf(path, sizeof path, "%s/import.log", K.dir);
    h_read_file(path, log, sizeof log);
    assert_non_null(strstr(log, "is not empty"));
    h_destroy(&K);
    /* a file cut short, and one with a stream */
    h_prepare(&K, "rdb-imp");
    char cut[600];
    snprintf(cut, sizeof cut, "%s/cut.rdb", R.dir);
    assert_int_equal(sh("head -c 300 %s > %s", file, cut), 0);
    assert_int_equal(import(cut), 1);
    h_expect_status(r, "OK", "FLUSHALL");
    h_expect_status(r, "OK", "FUNCTION FLUSH");
    freeReplyObject(H_CMD(r, "XADD st * f v"));
    if (sh("timeout 60 redis-cli -p %d --rdb %s >/dev/null 2>&1", R.port, file))
        fail_msg("redis-cli --rdb from redis-server failed");
    assert_int_equal(import(file), 1);
    snprintf(path, sizeof path, "%s/import.log", K.dir);
    h_read_file(path, log, sizeof log);
    assert_non_null(strstr(log, "damaged or cut short"));
    assert_non_null(strstr(log, "a stream"));
    h_destroy(&K);
    redisFree(r);
    h_destroy(&R);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rdb_backup),
        cmocka_unit_test(test_sync_replconf),
        cmocka_unit_test(test_rdb_import),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
