/*
 * test_tools — Redis's own tools against shmkvd, unchanged: redis-cli
 * --scan, --bigkeys and --memkeys, piped redis-cli input, and redis-benchmark's
 * default suite (small counts: this checks that it completes without
 * errors, not how fast).
 */
#include "harness.h"

static struct server S;

static int group_setup(void **state)
{
    (void)state;
    if (access("/usr/bin/redis-cli", X_OK) || access("/usr/bin/redis-benchmark", X_OK)) {
        fprintf(stderr, "test_tools: redis-tools are not installed\n");
        return -1;
    }
    h_start_shmkvd(&S);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return h_group_stop(&S);
}

/* Runs a shell command line; returns its output (malloc'd) and status. */
static char *run(const char *cmdline, int *status)
{
    FILE *p = popen(cmdline, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    size_t r;
    while ((r = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += r;
        if (len + 1 >= cap)
            out = realloc(out, cap *= 2);
    }
    out[len] = '\0';
    *status = pclose(p);
    return out;
}

static void test_tools_redis_cli(void **state)
{
    (void)state;
    char cmd[512];
    int st;
    snprintf(cmd, sizeof cmd,
             "printf 'SET a 1\\nHSET h f v\\nRPUSH l x y\\nSADD s m\\nZADD z 1 m\\nGET a\\n' | "
             "redis-cli -p %d",
             S.port);
    char *out = run(cmd, &st);
    assert_int_equal(st, 0);
    assert_string_equal(out, "OK\n1\n2\n1\n1\n1\n");
    free(out);

    snprintf(cmd, sizeof cmd, "redis-cli -p %d --scan | sort", S.port);
    out = run(cmd, &st);
    assert_int_equal(st, 0);
    assert_string_equal(out, "a\nh\nl\ns\nz\n");
    free(out);

    snprintf(cmd, sizeof cmd, "redis-cli -p %d --bigkeys 2>&1", S.port);
    out = run(cmd, &st);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "Biggest   list found '\"l\"' has 2 items"));
    assert_non_null(strstr(out, "Biggest   hash found '\"h\"' has 1 fields"));
    assert_non_null(strstr(out, "1 zsets with 1 members"));
    free(out);

    /* --memkeys sizes every key with MEMORY USAGE. */
    snprintf(cmd, sizeof cmd, "redis-cli -p %d --memkeys 2>&1", S.port);
    out = run(cmd, &st);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "Biggest   hash found '\"h\"' has "));
    assert_non_null(strstr(out, "1 zsets with "));
    assert_null(strstr(out, "ERR"));
    free(out);

    /* --hotkeys ranks keys by OBJECT FREQ: refused, as by Redis, without an
     * LFU policy; with one, the key read most comes first. */
    snprintf(cmd, sizeof cmd, "redis-cli -p %d --hotkeys 2>&1", S.port);
    out = run(cmd, &st);
    assert_non_null(strstr(out, "LFU"));
    free(out);
    snprintf(cmd, sizeof cmd,
             "redis-cli -p %d CONFIG SET maxmemory-policy allkeys-lfu >/dev/null && "
             "for i in $(seq 300); do echo 'GET a'; done | redis-cli -p %d >/dev/null && "
             "redis-cli -p %d GET h >/dev/null && redis-cli -p %d --hotkeys 2>&1",
             S.port, S.port, S.port, S.port);
    out = run(cmd, &st);
    assert_int_equal(st, 0);
    const char *first = strstr(out, "hot key found with counter: ");
    const char *eol = first ? strchr(first, '\n') : NULL;
    const char *a = first ? strstr(first, "keyname: \"a\"") : NULL;
    if (!a || !eol || a > eol) /* the first line found names a */
        fail_msg("redis-cli --hotkeys: %s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "redis-cli -p %d CONFIG SET maxmemory-policy noeviction", S.port);
    free(run(cmd, &st));
    assert_int_equal(st, 0);
}

static void test_tools_redis_benchmark_default_suite(void **state)
{
    (void)state;
    char cmd[512];
    int st;
    /* -q prints one line per test: "NAME: N requests per second..." */
    snprintf(cmd, sizeof cmd, "redis-benchmark -p %d -q -n 2000 -c 10 2>&1 | tr '\\r' '\\n'",
             S.port);
    char *out = run(cmd, &st);
    assert_int_equal(st, 0);
    const char *tests[] = {"PING_INLINE:",
                           "PING_MBULK:",
                           "SET:",
                           "GET:",
                           "INCR:",
                           "LPUSH:",
                           "RPUSH:",
                           "LPOP:",
                           "RPOP:",
                           "SADD:",
                           "HSET:",
                           "SPOP:",
                           "ZADD:",
                           "ZPOPMIN:",
                           "LRANGE_100 (first 100 elements):",
                           "LRANGE_600 (first 600 elements):",
                           "MSET (10 keys):"};
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        char want[80];
        snprintf(want, sizeof want, "%s ", tests[i]);
        char *at = strstr(out, want);
        if (!at || !strstr(at, "requests per second"))
            fail_msg("redis-benchmark: no result line for %s in:\n%s", tests[i], out);
    }
    assert_null(strstr(out, "ERR"));
    assert_null(strstr(out, "rror"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tools_redis_cli),
        cmocka_unit_test(test_tools_redis_benchmark_default_suite),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
