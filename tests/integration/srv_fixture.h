/*
 * srv_fixture — what the server's integration tests (test_srv,
 * test_srv_admin, test_srv_keys) share: one shmkvd a program, started
 * before its tests and stopped after, a connection per test with every
 * database flushed, and the key counts checked. Header-only, as harness.h.
 */
#ifndef SHMKV_TEST_SRV_FIXTURE_H
#define SHMKV_TEST_SRV_FIXTURE_H

#include "harness.h"

/* The daemon every test of a program talks to, started once. */
static struct server S;

static inline int group_setup(void **state)
{
    (void)state;
    h_start_shmkvd(&S);
    return 0;
}

static inline int group_teardown(void **state)
{
    (void)state;
    return h_group_stop(&S);
}

static inline int each_setup(void **state)
{
    redisContext *c = h_connect_port(S.port);
    assert_non_null(c);
    h_expect_status(c, "OK", "FLUSHALL");
    *state = c;
    return 0;
}

static inline int each_teardown(void **state)
{
    redisFree(*state);
    return 0;
}

/* DBSIZE, INFO keyspace's line for db 0, and a full SCAN agree on n keys,
 * e of them with an expiry. */
/* SHUTDOWN closes the connection without a reply and the server exits 0. */
static inline void shutdown_and_wait(redisContext *c, struct server *s)
{
    assert_null(H_CMD(c, "SHUTDOWN"));
    int st;
    assert_int_equal(waitpid(s->pid, &st, 0), s->pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    s->pid = 0;
}

static inline void expect_keys(redisContext *c, long long n, long long e)
{
    h_expect_int(c, n, "DBSIZE");
    redisReply *r = H_CMD(c, "INFO keyspace");
    assert_non_null(r);
    char want[64];
    snprintf(want, sizeof want, "db0:keys=%lld,expires=%lld,", n, e);
    if (n && !strstr(r->str, want))
        fail_msg("want %s in %s", want, r->str);
    if (!n)
        assert_null(strstr(r->str, "db0:"));
    freeReplyObject(r);
    long long seen = 0;
    char cur[32] = "0";
    do {
        r = H_CMD(c, "SCAN %s COUNT 100", cur);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        snprintf(cur, sizeof cur, "%s", r->element[0]->str);
        seen += (long long)r->element[1]->elements;
        freeReplyObject(r);
    } while (strcmp(cur, "0"));
    assert_int_equal(seen, n);
}

#endif
