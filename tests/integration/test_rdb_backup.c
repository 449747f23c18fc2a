/*
 * test_rdb_backup — `redis-cli --rdb` takes an RDB file from shmkvd (SYNC
 * after REPLCONF rdb-only), redis-check-rdb accepts it, and redis-server
 * loads the same data: DEBUG DIGEST over every database (values, types
 * and expiries) and FUNCTION's libraries agree. The data: all five types,
 * small and large, binary keys and values, expiries, several databases
 * (one of them swapped by SWAPDB) and a library of functions.
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

/* SYNC sends a file only to a client that asked for one; REPLCONF checks
 * its options as Redis does. An empty data set makes a valid file too. */
static void test_sync_replconf(void **state)
{
    (void)state;
    h_prepare(&K, "rdb");
    h_start_shmkvd_opts(&K, NULL);
    redisContext *c = h_connect_port(K.port);
    h_expect_err(c, "ERR SYNC without REPLCONF rdb-only 1", "SYNC");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rdb_backup),
        cmocka_unit_test(test_sync_replconf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
