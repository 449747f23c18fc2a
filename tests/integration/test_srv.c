/*
 * test_srv — shmkvd as a server: protocol handling, connections, AUTH,
 * HELLO, SELECT, transactions, blocking commands and their timeouts, MOVE, CLIENT, CONFIG, INFO,
 * SLOWLOG, COMMAND, BGSAVE, limits, persistence across SHUTDOWN, and the
 * names of its threads.
 */
#include "enc.h"
#include "harness.h"
#include "stor.h"

#include <dirent.h>
#include <sys/stat.h>

static struct server S;

static int group_setup(void **state)
{
    (void)state;
    h_start_shmkvd(&S);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return h_group_stop(&S);
}

static int each_setup(void **state)
{
    redisContext *c = h_connect_port(S.port);
    assert_non_null(c);
    h_expect_status(c, "OK", "FLUSHALL");
    *state = c;
    return 0;
}

static int each_teardown(void **state)
{
    redisFree(*state);
    return 0;
}

/* Sends raw bytes on a fresh TCP connection and returns what came back
 * within the timeout (NUL-terminated, malloc'd). */
static char *raw(const char *bytes, size_t n, int wait_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)S.port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    if (n)
        assert_int_equal(write(fd, bytes, n), (ssize_t)n);
    struct timeval tv = {0, wait_ms * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t cap = 4096, len = 0;
    char *out = malloc(cap + 1);
    for (;;) {
        ssize_t r = read(fd, out + len, cap - len);
        if (r <= 0)
            break;
        len += (size_t)r;
        if (len == cap)
            out = realloc(out, (cap *= 2) + 1);
    }
    out[len] = '\0';
    close(fd);
    return out;
}

static void test_srv_ping_echo_errors(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "PONG", "PING");
    h_expect_bulk(c, "hi", "PING hi");
    h_expect_err(c, "ERR wrong number of arguments for 'ping' command", "PING a b");
    h_expect_bulk(c, "hello world", "ECHO %s", "hello world");
    /* The name comes back as it was sent. */
    h_expect_err(c, "ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' ",
                 "NOSUCH a b");
    h_expect_err(c, "ERR wrong number of arguments for 'get' command", "GET");
    h_expect_err(c, "ERR wrong number of arguments for 'set' command", "SET k");
    h_expect_err(c, "ERR syntax error", "SET k v NX XX");
    h_expect_status(c, "OK", "set K v"); /* names are case-insensitive */
}

/* A client that pipelines a lot does not hold the loop: the daemon reads
 * one chunk per client per turn, as Redis does, so another client's
 * command waits for a chunk of the pipeline, not for all of it that the
 * socket holds. The pipeline starts with a PUBLISH, whose message reaches
 * a subscriber at the end of the loop turn that ran it; a GET sent then
 * shows how much of the pipeline ran before it. Each pair in the pipeline
 * (INCR, then an LRANGE of 100) costs the loop tens of microseconds, so a
 * chunk takes milliseconds, and the test's own scheduling delays stay
 * small beside it. */
static void test_srv_pipeline_does_not_starve_others(void **state)
{
    redisContext *c = *state;
    enum { PAIRS = 5000 };
    const char *argv[2 + 100] = {"RPUSH", "fair:list"};
    for (int i = 0; i < 100; i++)
        argv[2 + i] = "element-of-the-list";
    freeReplyObject(redisCommandArgv(c, 102, argv, NULL));

    int fds[2]; /* [0] subscribes, [1] pipelines */
    for (int i = 0; i < 2; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)S.port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        assert_int_equal(connect(fds[i], (struct sockaddr *)&sa, sizeof sa), 0);
        /* A reply short of what is counted below fails, not hangs. */
        struct timeval tv = {.tv_sec = 30};
        setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    static const char sub[] = "*2\r\n$9\r\nSUBSCRIBE\r\n$7\r\nfair:go\r\n";
    static const char go[] = "*3\r\n$7\r\nPUBLISH\r\n$7\r\nfair:go\r\n$1\r\nx\r\n";
    static const char pair[] = "*2\r\n$4\r\nINCR\r\n$6\r\nfair:n\r\n"
                               "*4\r\n$6\r\nLRANGE\r\n$9\r\nfair:list\r\n$1\r\n0\r\n$2\r\n99\r\n";
    char buf[65536];
    assert_int_equal(write(fds[0], sub, sizeof sub - 1), (ssize_t)(sizeof sub - 1));
    assert_true(read(fds[0], buf, sizeof buf) > 0); /* subscribed */

    size_t one = sizeof pair - 1, total = sizeof go - 1 + one * PAIRS, sent = 0;
    char *pipe = malloc(total);
    memcpy(pipe, go, sizeof go - 1);
    for (int i = 0; i < PAIRS; i++)
        memcpy(pipe + sizeof go - 1 + (size_t)i * one, pair, one);
    int big = 4 << 20;
    setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    ssize_t w = send(fds[1], pipe, total, MSG_DONTWAIT);
    if (w > 0)
        sent = (size_t)w;
    assert_true(read(fds[0], buf, sizeof buf) > 0); /* the message: PUBLISH ran */
    redisReply *r = redisCommand(c, "GET fair:n");
    long long seen = r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
    freeReplyObject(r);
    /* A 16 KiB chunk holds 238 pairs: allow five chunks. Reading the
     * pipeline dry first ran everything the socket held before GET. */
    long long most = 5 * (16384 / (long long)one + 1);
    if (seen > most)
        fail_msg("GET ran after %lld of the pipeline's %d pairs (at most %lld expected)", seen,
                 PAIRS, most);
    while (sent < total) {
        w = write(fds[1], pipe + sent, total - sent);
        assert_true(w > 0);
        sent += (size_t)w;
    }
    /* Every command is answered, in order: PUBLISH's 1, then the pairs. */
    size_t want = 4, got = 0, lr = 6; /* ":1\r\n"; "*100\r\n" */
    for (int i = 0; i < 100; i++)
        lr += 5 + strlen(argv[2]) + 2; /* "$19\r\n" element "\r\n" */
    for (int i = 1; i <= PAIRS; i++)
        want += (size_t)snprintf(NULL, 0, ":%d\r\n", i) + lr;
    while (got < want) {
        ssize_t n = read(fds[1], buf, sizeof buf);
        assert_true(n > 0);
        got += (size_t)n;
    }
    assert_int_equal(got, want);
    h_expect_bulk(c, "5000", "GET fair:n");
    for (int i = 0; i < 2; i++)
        close(fds[i]);
    free(pipe);
}

static void test_srv_pipelining_and_inline(void **state)
{
    (void)state;
    const char req[] = "*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n"
                       "INCR a\r\n"
                       "*2\r\n$3\r\nGET\r\n$1\r\na\r\n"
                       "ECHO \"x y\"\r\n";
    char *out = raw(req, sizeof req - 1, 300);
    assert_string_equal(out, "+OK\r\n:2\r\n$1\r\n2\r\n$3\r\nx y\r\n");
    free(out);
}

static void test_srv_protocol_errors_close(void **state)
{
    redisContext *c = *state;
    struct {
        const char *in, *want;
    } cases[] = {
        {"*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
        {"*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
        {"*2\r\n+ok\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"},
        {"GET \"unterminated\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
        {"*1\r\n$99999999999\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = raw(cases[i].in, strlen(cases[i].in), 300);
        assert_string_equal(out, cases[i].want);
        free(out);
    }
    /* A half frame and a vanished client lose nothing; the server serves on. */
    const char half[] = "*3\r\n$3\r\nSET\r\n$1\r\nz\r\n$5\r\nab";
    char *out = raw(half, sizeof half - 1, 100);
    free(out);
    h_expect_nil(c, "GET z");
    h_expect_status(c, "PONG", "PING");
}

static void test_srv_select_and_dbs(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "SET k db0");
    h_expect_status(c, "OK", "SELECT 5");
    h_expect_nil(c, "GET k");
    h_expect_status(c, "OK", "SET k db5");
    h_expect_int(c, 1, "DBSIZE");
    h_expect_err(c, "ERR DB index is out of range", "SELECT 16");
    h_expect_err(c, "ERR value is not an integer or out of range", "SELECT x");
    h_expect_status(c, "OK", "FLUSHDB");
    h_expect_int(c, 0, "DBSIZE");
    h_expect_status(c, "OK", "SELECT 0");
    h_expect_bulk(c, "db0", "GET k");
    h_expect_int(c, 1, "COPY k k2 DB 7");
    h_expect_status(c, "OK", "SELECT 7");
    h_expect_bulk(c, "db0", "GET k2");
    h_expect_err(c, "ERR syntax error", "FLUSHDB now");
}

static void test_srv_multi_exec_watch(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "SET a 1");
    h_expect_status(c, "QUEUED", "INCR a");
    h_expect_err(c, "ERR MULTI calls can not be nested", "MULTI");
    redisReply *r = H_CMD(c, "EXEC");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_int_equal(r->element[1]->integer, 2);
    freeReplyObject(r);
    h_expect_err(c, "ERR EXEC without MULTI", "EXEC");
    h_expect_err(c, "ERR DISCARD without MULTI", "DISCARD");
    /* A command that fails to queue aborts the transaction. */
    h_expect_status(c, "OK", "MULTI");
    h_expect_err(c, "ERR unknown command", "NOPE");
    h_expect_err(c, "EXECABORT Transaction discarded because of previous errors.", "EXEC");
    /* Runtime errors do not abort: the other commands run. */
    h_expect_status(c, "OK", "SET s str");
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "LPUSH s x");
    h_expect_status(c, "QUEUED", "SET t 1");
    r = H_CMD(c, "EXEC");
    assert_int_equal(r->element[0]->type, REDIS_REPLY_ERROR);
    assert_int_equal(r->element[1]->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    /* WATCH: a change by another client makes EXEC return nil. */
    redisContext *other = h_connect_port(S.port);
    h_expect_status(c, "OK", "WATCH w");
    h_expect_err(c, "", "PING x y"); /* errors outside MULTI do not matter */
    h_expect_status(other, "OK", "SET w changed");
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "SET w mine");
    h_expect_nil(c, "EXEC");
    h_expect_bulk(c, "changed", "GET w");
    /* Untouched watched keys let EXEC run; UNWATCH and DISCARD forget them. */
    h_expect_status(c, "OK", "WATCH w2");
    h_expect_status(other, "OK", "SET unrelated 1");
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "SET w2 mine");
    r = H_CMD(c, "EXEC");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    h_expect_status(c, "OK", "WATCH w3");
    h_expect_status(other, "OK", "SET w3 x");
    h_expect_status(c, "OK", "UNWATCH");
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "GET w3");
    r = H_CMD(c, "EXEC");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    /* A FLUSHALL touches every watched key. */
    h_expect_status(c, "OK", "WATCH w4");
    h_expect_status(other, "OK", "FLUSHALL");
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "PING");
    h_expect_nil(c, "EXEC");
    h_expect_status(c, "OK", "MULTI");
    h_expect_err(c, "ERR WATCH inside MULTI is not allowed", "WATCH x");
    h_expect_status(c, "OK", "DISCARD");
    redisFree(other);
}

static void test_srv_blocking_pops(void **state)
{
    redisContext *c = *state;
    /* Data already there: no blocking. */
    h_expect_int(c, 2, "RPUSH q a b");
    h_expect_array(c, A("q", "a"), "BLPOP q 1");
    h_expect_array(c, A("q", "b"), "BRPOP nothing q 1");
    /* A timeout answers nil (a null array). */
    redisReply *r = H_CMD(c, "BLPOP q 0.1");
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    h_expect_err(c, "ERR timeout is negative", "BLPOP q -1");
    h_expect_err(c, "ERR timeout is not a float or out of range", "BLPOP q abc");
    /* A push from another client wakes the waiting one. */
    redisContext *other = h_connect_port(S.port);
    redisAppendCommand(c, "BLPOP q2 q3 5");
    redisBufferWrite(c, &(int){0});
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    h_expect_int(other, 1, "RPUSH q3 woken");
    void *rep;
    assert_int_equal(redisGetReply(c, &rep), REDIS_OK);
    r = rep;
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_string_equal(r->element[0]->str, "q3");
    assert_string_equal(r->element[1]->str, "woken");
    freeReplyObject(r);
    h_expect_int(other, 0, "EXISTS q3"); /* the woken client took it */
    /* BLMOVE waits too, and moves what arrives. */
    redisAppendCommand(c, "BLMOVE src dst LEFT RIGHT 5");
    redisBufferWrite(c, &(int){0});
    nanosleep(&ts, NULL);
    h_expect_int(other, 1, "LPUSH src m");
    assert_int_equal(redisGetReply(c, &rep), REDIS_OK);
    r = rep;
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "m");
    freeReplyObject(r);
    h_expect_array(other, A("m"), "LRANGE dst 0 -1");
    r = H_CMD(c, "BRPOPLPUSH empty dst 0.05");
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    /* Commands pipelined behind a blocking pop run once it is answered,
     * by its timeout or by a push, without waiting for more bytes. */
    redisAppendCommand(c, "BLPOP nothing 0.05");
    redisAppendCommand(c, "PING");
    redisAppendCommand(c, "BLPOP q4 5");
    redisAppendCommand(c, "ECHO after");
    redisBufferWrite(c, &(int){0});
    nanosleep(&ts, NULL);
    h_expect_int(other, 1, "RPUSH q4 v");
    const int want_types[] = {REDIS_REPLY_NIL, REDIS_REPLY_STATUS, REDIS_REPLY_ARRAY,
                              REDIS_REPLY_STRING};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(redisGetReply(c, &rep), REDIS_OK); /* within the read timeout */
        assert_int_equal(((redisReply *)rep)->type, want_types[i]);
        freeReplyObject(rep);
    }
    /* Inside MULTI a blocking pop does not block. */
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "BLPOP nothing 0");
    r = H_CMD(c, "EXEC");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    redisFree(other);
}

static double now_s(void);

/* WAIT: no replica ever acknowledges. 0 at once for numreplicas <= 0 and
 * inside MULTI; otherwise the client is parked until its timeout (a push to
 * a key named like its arguments does not wake it) and then gets 0. */
static void test_srv_wait(void **state)
{
    redisContext *c = *state, *other = h_connect_port(S.port);
    h_expect_int(c, 0, "WAIT 0 0");
    h_expect_int(c, 0, "WAIT -1 0");
    h_expect_err(c, "ERR value is not an integer or out of range", "WAIT x 0");
    h_expect_err(c, "ERR timeout is not an integer or out of range", "WAIT 1 1.5");
    h_expect_err(c, "ERR timeout is negative", "WAIT 1 -1");
    h_expect_err(c, "ERR wrong number of arguments for 'wait' command", "WAIT 1");
    double t0 = now_s();
    h_expect_int(c, 0, "WAIT 1 150");
    double took = now_s() - t0;
    if (took < 0.14 || took > 5)
        fail_msg("WAIT 1 150 answered after %.3f s", took);
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "WAIT 1 0");
    redisReply *r = H_CMD(c, "EXEC");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->integer, 0);
    freeReplyObject(r);
    /* Parked for ever: a write to "1" or "0" does not wake it. */
    redisContext *w = h_connect_port(S.port);
    redisAppendCommand(w, "WAIT 1 0");
    redisBufferWrite(w, &(int){0});
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    h_expect_int(other, 1, "RPUSH 1 x");
    h_expect_int(other, 1, "RPUSH 0 x");
    nanosleep(&ts, NULL);
    r = H_CMD(other, "INFO clients");
    assert_non_null(strstr(r->str, "blocked_clients:1\r\n"));
    freeReplyObject(r);
    redisFree(w); /* hangs up while parked */
    for (int i = 0; i < 50; i++) {
        r = H_CMD(other, "INFO clients");
        bool gone = strstr(r->str, "blocked_clients:0\r\n") != NULL;
        freeReplyObject(r);
        if (gone)
            break;
        assert_true(i < 49);
        nanosleep(&ts, NULL);
    }
    h_expect_int(other, 2, "DEL 0 1");
    redisFree(other);
}

/* CLIENT UNBLOCK ends a parked BLPOP or WAIT as its timeout would, or
 * with Redis's UNBLOCKED error; CLIENT NO-EVICT only marks the client. */
static void test_srv_client_unblock(void **state)
{
    redisContext *c = *state, *w = h_connect_port(S.port);
    redisReply *r = H_CMD(w, "CLIENT ID");
    long long id = r->integer;
    freeReplyObject(r);
    struct timespec ts = {0, 100 * 1000 * 1000};
    const char *parks[] = {"BLPOP unb 0", "BLPOP unb 0", "WAIT 1 0"};
    for (int k = 0; k < 3; k++) {
        redisAppendCommand(w, parks[k]);
        redisBufferWrite(w, &(int){0});
        nanosleep(&ts, NULL);
        h_expect_int(c, 1, "CLIENT UNBLOCK %lld %s", id, k == 1 ? "ERROR" : "TIMEOUT");
        void *rep;
        assert_int_equal(redisGetReply(w, &rep), REDIS_OK);
        r = rep;
        if (k == 0) {
            assert_int_equal(r->type, REDIS_REPLY_NIL);
        } else if (k == 1) {
            assert_int_equal(r->type, REDIS_REPLY_ERROR);
            assert_string_equal(r->str, "UNBLOCKED client unblocked via CLIENT UNBLOCK");
        } else {
            assert_int_equal(r->type, REDIS_REPLY_INTEGER);
            assert_int_equal(r->integer, 0);
        }
        freeReplyObject(r);
    }
    h_expect_int(c, 0, "CLIENT UNBLOCK %lld", id); /* not blocked now */
    h_expect_int(c, 0, "CLIENT UNBLOCK 999999");
    h_expect_err(c, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR", "CLIENT UNBLOCK 1 X");
    h_expect_err(c, "ERR value is not an integer or out of range", "CLIENT UNBLOCK x");
    /* The client still works after being unblocked. */
    h_expect_status(w, "PONG", "PING");
    h_expect_status(w, "OK", "CLIENT NO-EVICT on");
    r = H_CMD(w, "CLIENT INFO");
    assert_non_null(strstr(r->str, " flags=e "));
    freeReplyObject(r);
    h_expect_status(w, "OK", "CLIENT NO-EVICT off");
    r = H_CMD(w, "CLIENT INFO");
    assert_non_null(strstr(r->str, " flags=N "));
    freeReplyObject(r);
    h_expect_err(w, "ERR syntax error", "CLIENT NO-EVICT maybe");
    redisFree(w);
}

/* CLIENT PAUSE: under WRITE, reads run and writes wait (in the order they
 * came) until the pause ends or CLIENT UNPAUSE; under ALL every command
 * waits. The replies' errors are compared with redis-server's by test_diff. */
static void test_srv_client_pause(void **state)
{
    redisContext *c = *state, *b = h_connect_port(S.port), *d = h_connect_port(S.port);
    h_expect_status(c, "OK", "CLIENT PAUSE 300 WRITE");
    double t0 = now_s();
    h_expect_nil(b, "GET pz");
    assert_true(now_s() - t0 < 0.25); /* reads are not held */
    redisAppendCommand(b, "SET pz 1");
    redisBufferWrite(b, &(int){0});
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    redisAppendCommand(d, "SET pz 2");
    redisBufferWrite(d, &(int){0});
    void *rep;
    assert_int_equal(redisGetReply(d, &rep), REDIS_OK);
    freeReplyObject(rep);
    assert_int_equal(redisGetReply(b, &rep), REDIS_OK);
    freeReplyObject(rep);
    double held = now_s() - t0;
    if (held < 0.25 || held > 5)
        fail_msg("writes held %.3f s by a 300 ms pause", held);
    h_expect_bulk(c, "2", "GET pz"); /* b's SET ran first, d's after it */
    /* UNPAUSE lets a held write run at once. */
    h_expect_status(c, "OK", "CLIENT PAUSE 100000 WRITE");
    redisAppendCommand(b, "INCR pz");
    redisBufferWrite(b, &(int){0});
    nanosleep(&ts, NULL);
    t0 = now_s();
    h_expect_status(c, "OK", "CLIENT UNPAUSE");
    assert_int_equal(redisGetReply(b, &rep), REDIS_OK);
    assert_int_equal(((redisReply *)rep)->integer, 3);
    freeReplyObject(rep);
    assert_true(now_s() - t0 < 1);
    /* ALL holds reads too. */
    h_expect_status(c, "OK", "CLIENT PAUSE 200 ALL");
    t0 = now_s();
    h_expect_status(b, "PONG", "PING");
    assert_true(now_s() - t0 >= 0.15);
    h_expect_int(c, 1, "DEL pz");
    redisFree(b);
    redisFree(d);
}

/* Starts shmkvd on conf (its first argument, as redis-server takes it). */
static void start_with_conf(struct server *t, const char *conf)
{
    char port[16], data[300];
    snprintf(port, sizeof port, "%d", t->port);
    snprintf(data, sizeof data, "%s/data", t->dir);
    char *const argv[] = {SHMKVD_PATH, (char *)conf, "--port",       port,    "--bind", "127.0.0.1",
                          "--dir",     data,         "--unixsocket", t->sock, NULL};
    h_spawn(t, argv);
}

/* CONFIG REWRITE: refused without a config file; with one, each set
 * parameter's first line gets its value, its later lines go, comments
 * stay, what the file lacked and differs from the defaults is appended
 * (a password with a space, a quote and a backslash quoted), and a
 * restart on the file has the same settings. */
static void test_srv_config_rewrite(void **state)
{
    h_expect_err(*state, "ERR The server is running without a config file", "CONFIG REWRITE");
    struct server t;
    h_prepare(&t, "rewrite");
    char conf[400];
    snprintf(conf, sizeof conf, "%s/s.conf", t.dir);
    FILE *f = fopen(conf, "w");
    assert_non_null(f);
    fputs("# kept comment\ntimeout 0\nhz 10\ntimeout 5\nsave \"\"\n", f);
    fclose(f);
    chmod(conf, 0600);
    start_with_conf(&t, conf);
    redisContext *c = h_connect_port(t.port);
    h_expect_status(c, "OK", "CONFIG SET timeout 7");
    h_expect_status(c, "OK", "CONFIG SET hz 20");
    redisReply *r = redisCommand(c, "CONFIG SET requirepass %s", "p w\"\\");
    freeReplyObject(r);
    h_expect_status(c, "OK", "AUTH %s", "p w\"\\");
    h_expect_status(c, "OK", "CONFIG REWRITE");
    redisFree(c);
    f = fopen(conf, "r");
    char text[4096] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    const char *want =
        "# kept comment\ntimeout 7\nhz 20\nsave \"\"\n# Generated by CONFIG REWRITE\n";
    if (strncmp(text, want, strlen(want)) != 0)
        fail_msg("rewritten file:\n%s", text);
    assert_non_null(strstr(text, "\nrequirepass \"p w\\\"\\\\\"\n"));
    assert_null(strstr(text, "timeout 5"));
    struct stat st;
    assert_int_equal(stat(conf, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600); /* it holds the password: still private */
    assert_int_equal(h_stop(&t), 0);
    start_with_conf(&t, conf);
    c = h_connect_port(t.port);
    h_expect_err(c, "NOAUTH", "GET x");
    h_expect_status(c, "OK", "AUTH %s", "p w\"\\");
    h_expect_array(c, A("timeout", "7"), "CONFIG GET timeout");
    h_expect_array(c, A("hz", "20"), "CONFIG GET hz");
    redisFree(c);
    h_destroy(&t);
}

/* MONITOR over the Unix socket names it as Redis does ("unix:PATH"); a
 * monitor shows as flags=O in CLIENT LIST; one that stops reading is
 * closed once 32 MiB wait for it, and the daemon serves on. (What is shown
 * and how is compared with redis-server's stream by test_diff.) */
static void test_srv_monitor(void **state)
{
    redisContext *c = *state;
    redisContext *u = redisConnectUnix(S.sock);
    assert_true(u && !u->err);
    h_expect_status(u, "OK", "MONITOR");
    redisContext *u2 = redisConnectUnix(S.sock); /* the line names who ran it */
    assert_true(u2 && !u2->err);
    h_expect_status(u2, "OK", "SET mon 1");
    redisFree(u2);
    void *rep;
    assert_int_equal(redisGetReply(u, &rep), REDIS_OK);
    redisReply *r = rep;
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    char want[400];
    snprintf(want, sizeof want, " [0 unix:%s] \"SET\" \"mon\" \"1\"", S.sock);
    const char *at = strchr(r->str, ' ');
    assert_non_null(at);
    assert_string_equal(at, want);
    freeReplyObject(r);
    r = H_CMD(c, "CLIENT LIST");
    assert_non_null(strstr(r->str, "flags=O"));
    assert_non_null(strstr(r->str, "cmd=monitor"));
    freeReplyObject(r);
    /* u reads no more; 40 SETs of 1 MiB give it more than 32 MiB. */
    size_t big = 1 << 20;
    char *v = malloc(big);
    memset(v, 'm', big);
    for (int i = 0; i < 40; i++)
        freeReplyObject(redisCommand(c, "SET mon %b", v, big));
    free(v);
    h_expect_int(c, 1, "DEL mon");
    /* Its socket ends: read what was sent until EOF, bounded in time. */
    int fd = u->fd;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    static char buf[1 << 16];
    size_t got = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        got += (size_t)n;
    assert_int_equal(n, 0); /* closed, not timed out */
    assert_true(got < (size_t)40 << 20);
    r = H_CMD(c, "CLIENT LIST");
    assert_null(strstr(r->str, "flags=O"));
    freeReplyObject(r);
    redisFree(u);
}

/* Sends cmd on c without reading, waits 100 ms (so it parks), lets `other`
 * run wake, and returns c's reply. */
static redisReply *parked_then(redisContext *c, const char *cmd, redisContext *other,
                               const char *wake)
{
    redisAppendCommand(c, cmd);
    redisBufferWrite(c, &(int){0});
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    freeReplyObject(H_CMD(other, wake));
    void *rep;
    assert_int_equal(redisGetReply(c, &rep), REDIS_OK);
    return rep;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* LMPOP, ZMPOP, their blocking forms, BZPOPMIN/BZPOPMAX; when a timeout
 * answers; MOVE. The replies' shapes and errors are compared with
 * redis-server's by test_diff. */
static void test_srv_multi_key_pops_and_move(void **state)
{
    redisContext *c = *state, *other = h_connect_port(S.port);
    h_expect_int(c, 3, "RPUSH l a b c");
    redisReply *r = H_CMD(c, "LMPOP 2 nokey l RIGHT COUNT 2");
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[0]->str, "l");
    assert_int_equal(r->element[1]->elements, 2);
    assert_string_equal(r->element[1]->element[0]->str, "c");
    assert_string_equal(r->element[1]->element[1]->str, "b");
    freeReplyObject(r);
    h_expect_nil(c, "LMPOP 1 nokey LEFT");
    h_expect_err(c, "ERR count should be greater than 0", "LMPOP 1 l LEFT COUNT 0");
    h_expect_err(c, "ERR numkeys should be greater than 0", "ZMPOP x l MIN");
    h_expect_int(c, 3, "ZADD z 1 a 2 b 3 c");
    r = H_CMD(c, "ZMPOP 1 z MAX COUNT 2");
    assert_string_equal(r->element[0]->str, "z");
    assert_int_equal(r->element[1]->elements, 2);
    assert_string_equal(r->element[1]->element[0]->element[0]->str, "c");
    assert_string_equal(r->element[1]->element[0]->element[1]->str, "3");
    freeReplyObject(r);
    h_expect_array(c, A("z", "a", "1"), "BZPOPMIN nokey z 1");
    h_expect_int(c, 0, "EXISTS z");

    /* Each blocking form parks, and a write to one of its keys by another
     * client serves it. */
    r = parked_then(c, "BZPOPMAX q1 q2 5", other, "ZADD q2 7 m 8 n");
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, "q2");
    assert_string_equal(r->element[1]->str, "n");
    assert_string_equal(r->element[2]->str, "8");
    freeReplyObject(r);
    r = parked_then(c, "BZMPOP 5 2 q0 q3 MIN COUNT 9", other, "ZADD q0 1 x");
    assert_string_equal(r->element[0]->str, "q0");
    assert_int_equal(r->element[1]->elements, 1);
    freeReplyObject(r);
    r = parked_then(c, "BLMPOP 5 2 p1 p2 LEFT COUNT 2", other, "RPUSH p2 u v w");
    assert_string_equal(r->element[0]->str, "p2");
    assert_int_equal(r->element[1]->elements, 2);
    assert_string_equal(r->element[1]->element[1]->str, "v");
    freeReplyObject(r);
    h_expect_array(other, A("w"), "LRANGE p2 0 -1");
    /* Inside MULTI they answer at once. */
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "BLMPOP 0 1 nothing LEFT");
    h_expect_status(c, "QUEUED", "BZPOPMIN nothing 0");
    r = H_CMD(c, "EXEC");
    assert_int_equal(r->element[0]->type, REDIS_REPLY_NIL);
    assert_int_equal(r->element[1]->type, REDIS_REPLY_NIL);
    freeReplyObject(r);

    /* A timeout answers nil when it is due, not at the next 100 ms tick:
     * the best of five 30 ms waits, so a slow machine does not fail it. */
    double best = 1e9;
    for (int i = 0; i < 5; i++) {
        double t0 = now_s();
        r = H_CMD(c, i % 2 ? "BZMPOP 0.03 1 nothing MIN" : "BLPOP nothing 0.03");
        assert_int_equal(r->type, REDIS_REPLY_NIL);
        freeReplyObject(r);
        double dt = now_s() - t0;
        assert_true(dt >= 0.029);
        if (dt < best)
            best = dt;
    }
    assert_true(best < 0.08);

    /* MOVE: the whole value with its TTL, refused when the target db has
     * the key. */
    h_expect_int(c, 2, "HSET h f 1 g 2");
    h_expect_int(c, 1, "EXPIRE h 1000");
    h_expect_int(c, 1, "MOVE h 3");
    h_expect_int(c, 0, "EXISTS h");
    h_expect_int(c, 0, "MOVE h 3");
    h_expect_int(c, 0, "MOVE nokey 3");
    h_expect_err(c, "ERR source and destination objects are the same", "MOVE h 0");
    h_expect_err(c, "ERR DB index is out of range", "MOVE h 16");
    h_expect_status(c, "OK", "SET h other");
    h_expect_int(c, 0, "MOVE h 3");
    h_expect_bulk(c, "other", "GET h");
    h_expect_status(c, "OK", "SELECT 3");
    h_expect_bulk(c, "2", "HGET h g");
    r = H_CMD(c, "TTL h");
    assert_true(r->integer > 990 && r->integer <= 1000);
    freeReplyObject(r);
    h_expect_status(c, "OK", "FLUSHDB");
    h_expect_status(c, "OK", "SELECT 0");
    redisFree(other);
}

/* Pub/sub beyond what test_diff compares with redis-server: what a
 * subscriber's connection shows, cleanup when it goes, and a subscriber
 * that stops reading being closed at the output limit (32 MiB). */
static void test_srv_pubsub(void **state)
{
    redisContext *c = *state, *sub = h_connect_port(S.port);
    redisReply *r = H_CMD(sub, "SUBSCRIBE ch1 ch2");
    freeReplyObject(r);
    void *rep;
    assert_int_equal(redisGetReply(sub, &rep), REDIS_OK); /* ch2's notice */
    freeReplyObject(rep);
    redisAppendCommand(sub, "PSUBSCRIBE p*");
    assert_int_equal(redisGetReply(sub, &rep), REDIS_OK);
    freeReplyObject(rep);
    r = H_CMD(c, "CLIENT LIST");
    assert_non_null(strstr(r->str, "flags=P db=0 sub=2 psub=1 ssub=0"));
    freeReplyObject(r);
    r = H_CMD(c, "INFO stats");
    assert_non_null(strstr(r->str, "pubsub_channels:2\r\npubsub_patterns:1\r\n"));
    freeReplyObject(r);
    h_expect_int(c, 1, "PUBLISH p1 x"); /* the pattern only */
    h_expect_int(c, 1, "PUBLISH ch1 hello");
    assert_int_equal(redisGetReply(sub, &rep), REDIS_OK);
    r = rep;
    assert_string_equal(r->element[0]->str, "pmessage");
    freeReplyObject(r);
    assert_int_equal(redisGetReply(sub, &rep), REDIS_OK);
    r = rep;
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[2]->str, "hello");
    freeReplyObject(r);
    /* A subscriber that goes away leaves nothing behind. */
    redisFree(sub);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    h_expect_int(c, 0, "PUBLISH ch1 anyone");
    h_expect_int(c, 0, "PUBSUB NUMPAT");
    r = H_CMD(c, "PUBSUB CHANNELS");
    assert_int_equal(r->elements, 0);
    freeReplyObject(r);

    /* One that stops reading is closed once 32 MiB wait for it; the
     * publisher and the daemon carry on. */
    sub = h_connect_port(S.port);
    r = H_CMD(sub, "SUBSCRIBE flood");
    freeReplyObject(r);
    size_t big = 1 << 20;
    char *msg = malloc(big);
    memset(msg, 'm', big);
    long long got = 1;
    int sent = 0;
    for (; sent < 200 && got == 1; sent++) {
        r = H_CMD(c, "PUBLISH flood %b", msg, big);
        got = r->integer;
        freeReplyObject(r);
        if (sent > 30)
            nanosleep(&ts, NULL); /* let the cron close it */
    }
    free(msg);
    assert_int_equal(got, 0);
    assert_true(sent > 32); /* not before 32 MiB */
    h_expect_status(c, "PONG", "PING");
    redisFree(sub);
}

/* The tot-mem CLIENT LIST gives for the client named name, or -1. */
static long long client_tot_mem(redisContext *c, const char *name)
{
    redisReply *r = H_CMD(c, "CLIENT LIST");
    char want[64];
    snprintf(want, sizeof want, "name=%s ", name);
    const char *line = strstr(r->str, want), *t = line ? strstr(line, " tot-mem=") : NULL;
    long long v = t ? atoll(t + 9) : -1;
    freeReplyObject(r);
    return v;
}

/* A client's buffers go back once a large request and its reply are
 * through: a 4 MiB SET and a GET of it left 8 MiB with the client for its
 * life (its query buffer was never given back). */
static void test_srv_client_buffers_given_back(void **state)
{
    redisContext *c = *state;
    redisContext *big = h_connect_port(S.port);
    h_expect_status(big, "OK", "CLIENT SETNAME big");
    size_t n = 4u << 20;
    char *v = malloc(n);
    memset(v, 'v', n);
    h_expect_status(big, "OK", "SET bigval %b", v, n);
    redisReply *r = H_CMD(big, "GET bigval");
    assert_int_equal(r->len, n);
    freeReplyObject(r);
    long long mem = client_tot_mem(c, "big");
    assert_true(mem >= 0 && mem < (1 << 20));
    /* And the connection goes on as before. */
    h_expect_status(big, "OK", "SET bigval %b", v, n);
    h_expect_int(big, (long long)n, "STRLEN bigval");
    free(v);
    redisFree(big);
}

static void test_srv_client_commands(void **state)
{
    redisContext *c = *state;
    redisReply *r = H_CMD(c, "CLIENT ID");
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long id = r->integer;
    freeReplyObject(r);
    h_expect_nil(c, "CLIENT GETNAME");
    h_expect_status(c, "OK", "CLIENT SETNAME tester");
    h_expect_bulk(c, "tester", "CLIENT GETNAME");
    h_expect_err(c, "ERR Client names cannot contain spaces", "CLIENT SETNAME %s", "a b");
    r = H_CMD(c, "CLIENT LIST");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_non_null(strstr(r->str, "name=tester"));
    freeReplyObject(r);
    /* Filters: every client here is a normal one. */
    r = H_CMD(c, "CLIENT LIST TYPE normal");
    assert_non_null(strstr(r->str, "name=tester"));
    freeReplyObject(r);
    h_expect_bulk(c, "", "CLIENT LIST TYPE replica");
    r = H_CMD(c, "CLIENT LIST ID 0 %lld", id);
    assert_non_null(strstr(r->str, "name=tester"));
    assert_ptr_equal(strchr(r->str, '\n'), r->str + r->len - 1); /* one line */
    freeReplyObject(r);
    h_expect_bulk(c, "", "CLIENT LIST ID %lld", id + 1000);
    h_expect_err(c, "ERR Unknown client type 'x'", "CLIENT LIST TYPE x");
    h_expect_err(c, "ERR Invalid client ID", "CLIENT LIST ID 1 x");
    h_expect_err(c, "ERR syntax error", "CLIENT LIST ID");
    h_expect_err(c, "ERR syntax error", "CLIENT LIST TYPE normal ID 1");
    r = H_CMD(c, "CLIENT INFO");
    char want[64];
    snprintf(want, sizeof want, "id=%lld ", id);
    assert_true(strncmp(r->str, want, strlen(want)) == 0);
    freeReplyObject(r);
    redisContext *victim = h_connect_port(S.port);
    r = H_CMD(victim, "CLIENT ID");
    long long vid = r->integer;
    freeReplyObject(r);
    h_expect_int(c, 1, "CLIENT KILL ID %lld", vid);
    h_expect_int(c, 0, "CLIENT KILL ID %lld", id); /* SKIPME yes by default */
    h_expect_err(c, "ERR No such client", "CLIENT KILL 1.2.3.4:5");
    h_expect_err(c, "ERR unknown subcommand 'nope'. Try CLIENT HELP.", "CLIENT nope");
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    r = H_CMD(victim, "PING");
    assert_true(r == NULL || r->type == REDIS_REPLY_ERROR);
    freeReplyObject(r);
    redisFree(victim);
}

static void test_srv_hello_resp3(void **state)
{
    (void)state;
    const char req[] = "HELLO 3\r\nHGETALL none\r\nGET none\r\nZSCORE none x\r\n"
                       "ZADD z 1.5 a\r\nZSCORE z a\r\nHSET h f v\r\nHGETALL h\r\n";
    char *out = raw(req, sizeof req - 1, 300);
    assert_non_null(strstr(out, "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"));
    assert_non_null(strstr(out, "$5\r\nproto\r\n:3\r\n"));
    /* RESP3 types: an empty map, nulls, a double, a one-pair map. */
    assert_non_null(
        strstr(out, "%0\r\n_\r\n_\r\n:1\r\n,1.5\r\n:1\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n"));
    free(out);
    out = raw("HELLO 4\r\n", strlen("HELLO 4\r\n"), 200);
    assert_string_equal(out, "-NOPROTO unsupported protocol version\r\n");
    free(out);
}

static void test_srv_config_info_command(void **state)
{
    redisContext *c = *state;
    redisReply *r = H_CMD(c, "CONFIG GET port");
    assert_int_equal(r->elements, 2);
    assert_int_equal(atoi(r->element[1]->str), S.port);
    freeReplyObject(r);
    r = H_CMD(c, "CONFIG GET *max*");
    assert_true(r->elements >= 4);
    freeReplyObject(r);
    h_expect_array(c, A("save", ""), "CONFIG GET save");
    /* Redis's defaults and immutability; the helpers write only. */
    h_expect_array(c, A("io-threads", "1"), "CONFIG GET io-threads");
    h_expect_array(c, A("io-threads-do-reads", "no"), "CONFIG GET io-threads-do-reads");
    h_expect_err(c,
                 "ERR CONFIG SET failed (possibly related to argument 'io-threads') - can't "
                 "set immutable config",
                 "CONFIG SET io-threads 4");
    h_expect_status(c, "OK", "CONFIG SET timeout 100");
    h_expect_array(c, A("timeout", "100"), "CONFIG GET timeout");
    h_expect_status(c, "OK", "CONFIG SET timeout 0");
    h_expect_err(c,
                 "ERR CONFIG SET failed (possibly related to argument 'port') - can't set "
                 "immutable config",
                 "CONFIG SET port 1");
    h_expect_err(c, "ERR Unknown option or number of arguments for CONFIG SET - 'nope'",
                 "CONFIG SET nope 1");
    h_expect_err(c, "ERR CONFIG SET failed (possibly related to argument 'maxclients')",
                 "CONFIG SET maxclients abc");
    h_expect_status(c, "OK", "CONFIG RESETSTAT");
    r = H_CMD(c, "INFO");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_non_null(strstr(r->str, "# Server\r\nredis_version:"));
    assert_non_null(strstr(r->str, "mem_allocator:jemalloc-"));
    assert_non_null(strstr(r->str, "# Keyspace"));
    /* Redis's default sections, commandstats not among them. */
    assert_non_null(strstr(r->str, "# CPU\r\nused_cpu_sys:"));
    assert_non_null(strstr(r->str, "used_cpu_user_main_thread:"));
    assert_non_null(strstr(r->str, "# Modules\r\n\r\n# Errorstats\r\n"));
    assert_non_null(strstr(r->str, "# Cluster\r\ncluster_enabled:0\r\n"));
    assert_null(strstr(r->str, "# Commandstats"));
    freeReplyObject(r);
    r = H_CMD(c, "INFO all");
    assert_non_null(strstr(r->str, "cmdstat_config|resetstat:calls=1,"));
    freeReplyObject(r);
    h_expect_status(c, "OK", "SET k v");
    r = H_CMD(c, "INFO keyspace");
    assert_non_null(strstr(r->str, "db0:keys=1,expires=0"));
    assert_null(strstr(r->str, "# Server"));
    freeReplyObject(r);
    r = H_CMD(c, "COMMAND COUNT");
    assert_true(r->integer > 140);
    long long count = r->integer;
    freeReplyObject(r);
    r = H_CMD(c, "COMMAND INFO get nosuch");
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[0]->element[0]->str, "get");
    assert_int_equal(r->element[0]->element[1]->integer, 2);
    assert_int_equal(r->element[1]->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    /* ACL categories by Redis's names, in Redis's order; a server command
     * has no group's. test_diff compares every command's. */
    static const struct {
        const char *cmd, *cats;
    } acl[] = {
        {"zadd", "@write @sortedset @fast"},
        {"multi", "@fast @transaction"},
        {"bzpopmin", "@write @sortedset @fast @blocking"},
        {"type", "@keyspace @read @fast"},
        {"bgsave", "@admin @slow @dangerous"},
    };
    for (size_t i = 0; i < sizeof acl / sizeof acl[0]; i++) {
        r = H_CMD(c, "COMMAND INFO %s", acl[i].cmd);
        const redisReply *cats = r->element[0]->element[6];
        char got[128] = "";
        for (size_t j = 0; j < cats->elements; j++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", j ? " " : "",
                     cats->element[j]->str);
        assert_string_equal(got, acl[i].cats);
        freeReplyObject(r);
    }
    r = H_CMD(c, "COMMAND");
    assert_int_equal((long long)r->elements, count);
    freeReplyObject(r);
    r = H_CMD(c, "TIME");
    assert_int_equal(r->elements, 2);
    assert_true(atoll(r->element[0]->str) > 1700000000);
    freeReplyObject(r);
}

static void test_srv_slowlog(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "SLOWLOG RESET");
    h_expect_status(c, "OK", "CONFIG SET slowlog-log-slower-than 0");
    h_expect_status(c, "OK", "SET slow value");
    redisReply *r = H_CMD(c, "SLOWLOG GET 10");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_true(r->elements >= 2);
    /* Newest first: [id, time, micros, [args], addr, name]. */
    redisReply *e = r->element[0];
    assert_int_equal(e->elements, 6);
    assert_string_equal(e->element[3]->element[0]->str, "SET");
    freeReplyObject(r);
    /* Passwords show as "(redacted)", as in Redis (test_diff compares
     * MONITOR's): AUTH's, HELLO's after AUTH, MIGRATE's after AUTH2. */
    freeReplyObject(H_CMD(c, "AUTH secret1"));
    freeReplyObject(H_CMD(c, "HELLO 2 AUTH default secret2"));
    freeReplyObject(H_CMD(c, "MIGRATE 127.0.0.1 1 nokey 0 10 AUTH2 user secret3"));
    r = H_CMD(c, "SLOWLOG GET 3");
    assert_int_equal(r->elements, 3);
    static const size_t nargs[3] = {9, 5, 2}; /* newest first: MIGRATE, HELLO, AUTH */
    for (size_t i = 0; i < 3; i++) {
        const redisReply *args = r->element[i]->element[3];
        assert_int_equal(args->elements, nargs[i]);
        for (size_t j = 0; j < args->elements; j++) {
            if (strstr(args->element[j]->str, "secret"))
                fail_msg("SLOWLOG shows a password: %s", args->element[j]->str);
            if (j + 1 == args->elements)
                assert_string_equal(args->element[j]->str, "(redacted)");
        }
    }
    freeReplyObject(r);
    h_expect_status(c, "OK", "CONFIG SET slowlog-log-slower-than 10000");
    r = H_CMD(c, "SLOWLOG LEN");
    assert_true(r->integer >= 2);
    freeReplyObject(r);
    h_expect_status(c, "OK", "SLOWLOG RESET");
    h_expect_int(c, 0, "SLOWLOG LEN");
}

/* CLIENT TRACKING over RESP2, redirected to a subscribed client (what
 * hiredis reads): a key that expires is invalidated, the table's limit
 * invalidates the keys beyond it, and a redirect client that goes is
 * reported as a broken redirect. test_diff compares the messages
 * themselves with redis-server's. */
static redisReply *next_message(redisContext *sub)
{
    redisReply *m;
    assert_int_equal(redisGetReply(sub, (void **)&m), REDIS_OK);
    assert_int_equal(m->type, REDIS_REPLY_ARRAY);
    assert_int_equal(m->elements, 3);
    assert_string_equal(m->element[0]->str, "message");
    assert_string_equal(m->element[1]->str, "__redis__:invalidate");
    return m;
}

static void expect_notify_conf(redisContext *c, const char *want)
{
    redisReply *r = H_CMD(c, "CONFIG GET notify-keyspace-events");
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[1]->str, want);
    freeReplyObject(r);
}

/* Keyspace notifications beyond what test_diff compares with redis-server:
 * "expired" events from active expiry (their timing differs between the
 * servers), the class filter, the configuration's spelling, and the
 * classes shmkv refuses. */
static void test_srv_keyspace_expired(void **state)
{
    redisContext *c = *state, *sub = h_connect_port(S.port);
    assert_non_null(sub);
    h_expect_status(c, "OK", "CONFIG SET notify-keyspace-events Ex");
    expect_notify_conf(c, "xE");
    redisReply *r = H_CMD(c, "CONFIG SET notify-keyspace-events KEAm");
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "key-miss (m)"));
    freeReplyObject(r);
    r = H_CMD(c, "CONFIG SET notify-keyspace-events Kq");
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "Invalid event class character"));
    freeReplyObject(r);
    expect_notify_conf(c, "xE"); /* unchanged */
    freeReplyObject(H_CMD(sub, "PSUBSCRIBE __keyevent@*__:*"));
    /* Only the x class is on: the SET and DEL send nothing. */
    h_expect_status(c, "OK", "SET ks:plain v");
    h_expect_int(c, 1, "DEL ks:plain");
    h_expect_status(c, "OK", "SET ks:e v PX 50");
    h_expect_status(c, "OK", "SELECT 3");
    h_expect_status(c, "OK", "SET ks:f v PX 80");
    h_expect_status(c, "OK", "SELECT 0");
    const char *want[][2] = {{"__keyevent@0__:expired", "ks:e"},
                             {"__keyevent@3__:expired", "ks:f"}};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 4);
        assert_string_equal(r->element[0]->str, "pmessage");
        assert_string_equal(r->element[2]->str, want[i][0]);
        assert_string_equal(r->element[3]->str, want[i][1]);
        freeReplyObject(r);
    }
    /* A key replaced after its expiry but before active expiry reached it
     * gets its "expired" too, once, before the new key's events: the
     * sequence is the same whichever comes first. */
    h_expect_status(c, "OK", "CONFIG SET notify-keyspace-events E$xn");
    expect_notify_conf(c, "$xnE");
    /* hz 2: active expiry rarely runs in the 60 ms, so the SET usually
     * finds the key expired itself (the path this checks) */
    h_expect_status(c, "OK", "CONFIG SET hz 2");
    h_expect_status(c, "OK", "SET ks:o v PX 30");
    usleep(60 * 1000);
    h_expect_status(c, "OK", "SET ks:o w");
    h_expect_status(c, "OK", "CONFIG SET hz 10");
    usleep(300 * 1000); /* a second "expired" would come by now */
    h_expect_status(c, "OK", "SET ks:end x");
    const char *seq[][2] = {{"new", "ks:o"},  {"set", "ks:o"}, {"expired", "ks:o"},
                            {"new", "ks:o"},  {"set", "ks:o"}, {"new", "ks:end"},
                            {"set", "ks:end"}};
    for (int i = 0; i < 7; i++) {
        char ch[64];
        snprintf(ch, sizeof ch, "__keyevent@0__:%s", seq[i][0]);
        assert_int_equal(redisGetReply(sub, (void **)&r), REDIS_OK);
        assert_string_equal(r->element[2]->str, ch);
        assert_string_equal(r->element[3]->str, seq[i][1]);
        freeReplyObject(r);
    }
    h_expect_int(c, 2, "DEL ks:o ks:end");
    h_expect_status(c, "OK", "CONFIG SET notify-keyspace-events A");
    expect_notify_conf(c, "A");
    h_expect_status(c, "OK", "CONFIG SET notify-keyspace-events %s", "");
    redisFree(sub);
    /* SETBIT of a bit that already has the value changes nothing: a
     * WATCH on the key survives it, as in Redis 7.0. */
    redisContext *o = h_connect_port(S.port);
    h_expect_int(c, 0, "SETBIT ks:b 9 1");
    /* the same bit again: EXEC runs; the other value: EXEC fails */
    const struct {
        int bit, old, exec_type;
    } steps[] = {{1, 1, REDIS_REPLY_ARRAY}, {0, 1, REDIS_REPLY_NIL}};
    for (int i = 0; i < 2; i++) {
        h_expect_status(c, "OK", "WATCH ks:b");
        h_expect_int(o, steps[i].old, "SETBIT ks:b 9 %d", steps[i].bit);
        h_expect_status(c, "OK", "MULTI");
        h_expect_status(c, "QUEUED", "PING");
        r = H_CMD(c, "EXEC");
        assert_int_equal(r->type, steps[i].exec_type);
        freeReplyObject(r);
    }
    h_expect_int(c, 1, "DEL ks:b");
    redisFree(o);
}

static void test_srv_tracking_lifecycle(void **state)
{
    redisContext *c = *state, *sub = h_connect_port(S.port);
    assert_non_null(sub);
    redisReply *r = H_CMD(sub, "CLIENT ID");
    long long subid = r->integer;
    freeReplyObject(r);
    freeReplyObject(H_CMD(sub, "SUBSCRIBE __redis__:invalidate"));
    /* A subscribed client is of type pubsub for CLIENT LIST (and KILL). */
    r = H_CMD(c, "CLIENT LIST TYPE pubsub");
    char want[64];
    snprintf(want, sizeof want, "id=%lld ", subid);
    assert_non_null(strstr(r->str, want));
    assert_non_null(strstr(r->str, " flags=P "));
    assert_null(strchr(strchr(r->str, '\n') + 1, '\n')); /* one line */
    freeReplyObject(r);
    r = H_CMD(c, "CLIENT LIST TYPE normal");
    assert_null(strstr(r->str, want));
    freeReplyObject(r);
    r = H_CMD(c, "CLIENT TRACKING on REDIRECT %lld", subid);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    /* Expiry: the active cycle removes the key and says so. (A second:
     * a GET after the expiry would find nothing to track, as in Redis,
     * and under TSan on a slow machine SET to GET once took over 100 ms.) */
    h_expect_status(c, "OK", "SET trk:e v PX 1000");
    freeReplyObject(H_CMD(c, "GET trk:e"));
    r = next_message(sub);
    assert_int_equal(r->element[2]->elements, 1);
    assert_string_equal(r->element[2]->element[0]->str, "trk:e");
    freeReplyObject(r);
    /* The table's limit: five keys read, two kept. */
    h_expect_status(c, "OK", "CONFIG SET tracking-table-max-keys 2");
    for (int i = 0; i < 5; i++)
        freeReplyObject(H_CMD(c, "GET trk:%d", i));
    for (int i = 0; i < 3; i++)
        freeReplyObject(next_message(sub));
    r = H_CMD(c, "INFO stats");
    assert_non_null(strstr(r->str, "tracking_total_keys:2\r\n"));
    freeReplyObject(r);
    r = H_CMD(c, "INFO clients");
    assert_non_null(strstr(r->str, "tracking_clients:1\r\n"));
    freeReplyObject(r);
    h_expect_status(c, "OK", "CONFIG SET tracking-table-max-keys 1000000");
    /* The redirect client goes: the next message cannot be delivered. */
    redisFree(sub);
    usleep(100 * 1000);
    freeReplyObject(H_CMD(c, "GET trk:x"));
    h_expect_status(c, "OK", "SET trk:x changed");
    r = H_CMD(c, "CLIENT TRACKINGINFO");
    bool broken = false;
    for (size_t i = 0; i < r->element[1]->elements; i++)
        broken |= !strcmp(r->element[1]->element[i]->str, "broken_redirect");
    assert_true(broken);
    freeReplyObject(r);
    r = H_CMD(c, "CLIENT INFO");
    assert_non_null(strstr(r->str, " flags=tR "));
    freeReplyObject(r);
    h_expect_status(c, "OK", "CLIENT TRACKING off");
    r = H_CMD(c, "INFO clients");
    assert_non_null(strstr(r->str, "tracking_clients:0\r\n"));
    freeReplyObject(r);
}

/* Latency tracking and the latency monitor: a SORT of 60,000 strings
 * takes milliseconds, so with a 1 ms threshold it is a "command" spike;
 * its duration shows in INFO latencystats and LATENCY HISTOGRAM. */
static void test_srv_latency(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "CONFIG RESETSTAT");
    h_expect_int(c, 0, "LATENCY RESET");
    freeReplyObject(H_CMD(c, "DEL biglist"));
    for (int i = 0; i < 60; i++) {
        char cmd[16 * 1024] = "RPUSH biglist";
        size_t n = strlen(cmd);
        for (int j = 0; j < 1000; j++)
            n += (size_t)snprintf(cmd + n, sizeof cmd - n, " e%07d",
                                  (i * 7919 + j * 104729) % 9999991);
        redisAppendCommand(c, cmd);
    }
    for (int i = 0; i < 60; i++) {
        redisReply *r;
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    /* The monitor is off by default: nothing recorded. */
    freeReplyObject(H_CMD(c, "SORT biglist ALPHA LIMIT 0 1"));
    redisReply *r = H_CMD(c, "LATENCY LATEST");
    assert_int_equal(r->elements, 0);
    freeReplyObject(r);
    h_expect_status(c, "OK", "CONFIG SET latency-monitor-threshold 1");
    for (int i = 0; i < 3; i++)
        freeReplyObject(H_CMD(c, "SORT biglist ALPHA LIMIT 0 1"));
    r = H_CMD(c, "LATENCY LATEST");
    /* "command", and perhaps a stage of the loop that took a millisecond
     * in a slow build (writeback-housekeeping forgetting the RPUSHes). */
    const redisReply *e = NULL;
    for (size_t i = 0; i < r->elements; i++)
        if (!strcmp(r->element[i]->element[0]->str, "command"))
            e = r->element[i];
    assert_non_null(e);
    assert_true(e->element[1]->integer > 1700000000);
    assert_true(e->element[2]->integer >= 1);
    assert_true(e->element[3]->integer >= e->element[2]->integer);
    freeReplyObject(r);
    r = H_CMD(c, "LATENCY HISTORY command");
    assert_true(r->elements >= 1 && r->elements <= 4); /* one per second at most */
    assert_true(r->element[0]->element[1]->integer >= 1);
    freeReplyObject(r);
    r = H_CMD(c, "LATENCY GRAPH command");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_non_null(strstr(r->str, "command - high "));
    assert_non_null(strchr(r->str, '#'));
    freeReplyObject(r);
    r = H_CMD(c, "LATENCY DOCTOR");
    assert_non_null(strstr(r->str, "command: "));
    assert_non_null(strstr(r->str, "SLOWLOG"));
    freeReplyObject(r);
    /* Four SORTs tracked, each over a millisecond; the percentiles say so. */
    r = H_CMD(c, "INFO latencystats");
    const char *line = strstr(r->str, "latency_percentiles_usec_sort:p50=");
    assert_non_null(line);
    assert_true(strtod(line + strlen("latency_percentiles_usec_sort:p50="), NULL) >= 1000);
    assert_non_null(strstr(line, ",p99="));
    assert_non_null(strstr(line, ",p99.9="));
    freeReplyObject(r);
    r = H_CMD(c, "LATENCY HISTOGRAM sort nosuch");
    assert_int_equal(r->elements, 2); /* RESP2: name, details */
    assert_string_equal(r->element[0]->str, "sort");
    const redisReply *d = r->element[1];
    assert_string_equal(d->element[0]->str, "calls");
    assert_int_equal(d->element[1]->integer, 4);
    const redisReply *hist = d->element[3];
    assert_true(hist->elements >= 2 && hist->elements % 2 == 0);
    assert_true(hist->element[0]->integer >= 1024); /* nothing under about a millisecond */
    assert_int_equal(hist->element[hist->elements - 1]->integer, 4); /* cumulative */
    freeReplyObject(r);
    /* Off: calls are no longer recorded. RESETSTAT clears the histograms,
     * LATENCY RESET the monitor. */
    h_expect_status(c, "OK", "CONFIG SET latency-tracking no");
    freeReplyObject(H_CMD(c, "SORT biglist ALPHA LIMIT 0 1"));
    r = H_CMD(c, "LATENCY HISTOGRAM sort");
    assert_int_equal(r->element[1]->element[1]->integer, 4);
    freeReplyObject(r);
    h_expect_status(c, "OK", "CONFIG SET latency-tracking yes latency-monitor-threshold 0");
    h_expect_status(c, "OK", "CONFIG RESETSTAT");
    r = H_CMD(c, "LATENCY HISTOGRAM sort");
    assert_int_equal(r->elements, 0);
    freeReplyObject(r);
    /* RESET answers how many events it cleared: "command", and any stage of
     * the loop a slow build recorded. The monitor is off, so none is added
     * between the look and the reset. */
    r = H_CMD(c, "LATENCY LATEST");
    long long events = (long long)r->elements;
    freeReplyObject(r);
    assert_true(events >= 1);
    h_expect_int(c, events, "LATENCY RESET");
    r = H_CMD(c, "LATENCY LATEST");
    assert_int_equal(r->elements, 0);
    freeReplyObject(r);
    freeReplyObject(H_CMD(c, "DEL biglist"));
}

/* The loop's own stages are latency events too, as Redis's aof-write is:
 * a 64 MiB value takes milliseconds to append to the journal. */
static void test_srv_latency_journal(void **state)
{
    redisContext *c = *state;
    h_expect_int(c, 0, "LATENCY RESET");
    h_expect_status(c, "OK", "CONFIG SET latency-monitor-threshold 1");
    size_t n = 64u << 20;
    char *v = malloc(n);
    assert_non_null(v);
    memset(v, 'j', n);
    /* 64 MiB take 6-9 s under TSan on a slow 2-CPU machine: past the
     * harness's 5 s read timeout, which is for replies that never come. */
    struct timeval slow = {60, 0}, usual = {5, 0};
    redisSetTimeout(c, slow);
    h_expect_status(c, "OK", "SET bigjournal %b", v, n);
    redisSetTimeout(c, usual);
    free(v);
    redisReply *r = H_CMD(c, "LATENCY HISTORY journal-write");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_true(r->elements >= 1);
    assert_true(r->element[0]->element[1]->integer >= 1);
    freeReplyObject(r);
    h_expect_status(c, "OK", "CONFIG SET latency-monitor-threshold 0");
    h_expect_int(c, 1, "DEL bigjournal");
    freeReplyObject(H_CMD(c, "LATENCY RESET"));
}

static void test_srv_bgsave_lastsave(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "SET saved 1");
    h_expect_status(c, "Background saving started", "BGSAVE");
    redisReply *r = H_CMD(c, "LASTSAVE");
    assert_true(r->integer > 1700000000);
    freeReplyObject(r);
    char path[400];
    snprintf(path, sizeof path, "%s/data/checkpoints", S.dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    h_expect_status(c, "OK", "SAVE");
    r = H_CMD(c, "ROLE");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, "master");
    assert_int_equal(r->element[1]->integer, 0);
    assert_int_equal(r->element[2]->elements, 0);
    freeReplyObject(r);
    /* Inside MULTI, SAVE and SHUTDOWN are refused and doom the EXEC (the
     * daemon must still be up after it); AUTH and HELLO are queued. */
    h_expect_status(c, "OK", "MULTI");
    h_expect_err(c, "ERR Command not allowed inside a transaction", "SHUTDOWN NOSAVE");
    h_expect_err(c, "ERR Command not allowed inside a transaction", "SAVE");
    h_expect_status(c, "QUEUED", "PING");
    h_expect_err(c, "EXECABORT Transaction discarded because of previous errors.", "EXEC");
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "AUTH nopass");
    h_expect_status(c, "QUEUED", "HELLO 2");
    r = H_CMD(c, "EXEC");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_int_equal(r->element[0]->type, REDIS_REPLY_ERROR);
    assert_int_equal(r->element[1]->type, REDIS_REPLY_ARRAY); /* HELLO's map, in RESP2 */
    freeReplyObject(r);
    h_expect_status(c, "PONG", "PING");
}

/* SHMKV.COMPACT: everything pending reaches RocksDB and is compacted; a
 * deleted hash's fields are gone from disk, live data stays. */
static void test_srv_compact(void **state)
{
    redisContext *c = *state;
    for (int i = 0; i < 200; i++)
        h_expect_int(c, 1, "HSET gone f%d %d", i, i);
    h_expect_status(c, "OK", "SET kept yes");
    h_expect_int(c, 1, "DEL gone");
    h_expect_status(c, "OK", "SHMKV.COMPACT");
    h_expect_bulk(c, "yes", "GET kept");
    h_expect_int(c, 0, "EXISTS gone");
    redisReply *r = H_CMD(c, "INFO storage");
    /* One record left in the sub-key CF: write-back's "applied" marker. */
    if (!strstr(r->str, "cf_default:estimated_keys=1,"))
        fail_msg("%s", r->str);
    freeReplyObject(r);
    h_expect_err(c, "ERR wrong number", "SHMKV.COMPACT now");
}

static void test_srv_unix_socket(void **state)
{
    (void)state;
    redisContext *u = redisConnectUnix(S.sock);
    assert_non_null(u);
    assert_int_equal(u->err, 0);
    h_expect_status(u, "OK", "SET viaunix 1");
    h_expect_bulk(u, "1", "GET viaunix");
    redisFree(u);
}

static void test_srv_auth_and_limits(void **state)
{
    (void)state;
    struct server a;
    h_prepare(&a, "auth");
    const char *opts[] = {"--requirepass", "s3cret", "--maxclients", "2", "--timeout", "1", NULL};
    /* The harness PINGs without AUTH: NOAUTH is an error, not a status. */
    char port[16], data[300];
    snprintf(port, sizeof port, "%d", a.port);
    snprintf(data, sizeof data, "%s/data", a.dir);
    pid_t parent = getpid();
    a.pid = fork();
    if (a.pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* as h_spawn: die with the test */
        if (getppid() != parent)
            _exit(1);
        char log[300];
        snprintf(log, sizeof log, "%s/server.log", a.dir);
        FILE *f = freopen(log, "w", stdout);
        (void)f;
        execl(SHMKVD_PATH, SHMKVD_PATH, "--port", port, "--bind", "127.0.0.1", "--dir", data,
              opts[0], opts[1], opts[2], opts[3], opts[4], opts[5], (char *)NULL);
        _exit(127);
    }
    redisContext *c = NULL;
    for (int i = 0; i < 200 && !c; i++) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        c = h_connect_port(a.port);
    }
    assert_non_null(c);
    h_expect_err(c, "NOAUTH Authentication required.", "GET k");
    h_expect_err(c, "WRONGPASS invalid username-password pair or user is disabled.", "AUTH bad");
    h_expect_err(c, "WRONGPASS", "AUTH someone s3cret");
    h_expect_status(c, "OK", "AUTH s3cret");
    h_expect_status(c, "OK", "AUTH default s3cret");
    h_expect_nil(c, "GET k");
    /* maxclients 2: the third connection is refused with Redis's error. */
    redisContext *c2 = h_connect_port(a.port);
    h_expect_err(c2, "NOAUTH", "PING");
    redisContext *c3 = h_connect_port(a.port);
    if (c3) {
        redisReply *r = H_CMD(c3, "PING");
        assert_true(r == NULL || (r->type == REDIS_REPLY_ERROR &&
                                  strcmp(r->str, "ERR max number of clients reached") == 0));
        freeReplyObject(r);
        redisFree(c3);
    }
    /* timeout 1: an idle client is closed. */
    struct timespec ts = {2, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    redisReply *r = H_CMD(c2, "PING");
    assert_null(r);
    redisFree(c2);
    redisFree(c);
    h_destroy(&a);
}

/* The number after field (its name and ':') in INFO section, or -1. */
static long long info_field(redisContext *c, const char *section, const char *field)
{
    redisReply *r = H_CMD(c, "INFO %s", section);
    assert_non_null(r);
    const char *p = strstr(r->str, field);
    long long v = p ? strtoll(p + strlen(field), NULL, 10) : -1;
    freeReplyObject(r);
    return v;
}

/* Until the flusher has written every write so far and the overlay has
 * forgotten them (5 s at most): reads then come from RocksDB. */
static void wait_overlay_forgot(redisContext *c)
{
    for (int i = 0; i < 500 && (info_field(c, "persistence", "writeback_pending_sets:") ||
                                info_field(c, "persistence", "writeback_overlay_entries:"));
         i++)
        usleep(10000);
    assert_int_equal(info_field(c, "persistence", "writeback_overlay_entries:"), 0);
}

static unsigned long long info_stat(redisContext *c, const char *field)
{
    char f[64];
    snprintf(f, sizeof f, "%s:", field);
    long long v = info_field(c, "stats", f);
    assert_true(v >= 0);
    return (unsigned long long)v;
}

/* Keys with a TTL go away in the background, unread: also once the walk
 * has gone to sleep after a pass that met no key with an expiry. */
static void test_srv_active_expiry(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "CONFIG SET hz 100");
    for (int i = 0; i < 100; i++)
        h_expect_status(c, "OK", "SET plain:%d v", i);
    struct timespec ts = {0, 0};
    unsigned long long before = info_stat(c, "expired_keys");
    for (int i = 0; i < 20; i++)
        h_expect_status(c, "OK", "SET vol:%d v PX 30", i);
    h_expect_int(c, 1, "HSET volh f v");
    h_expect_int(c, 1, "PEXPIRE volh 30");
    unsigned long long now = before;
    for (int i = 0; i < 100 && now < before + 21; i++) {
        ts.tv_nsec = 50 * 1000 * 1000;
        nanosleep(&ts, NULL);
        now = info_stat(c, "expired_keys");
    }
    assert_int_equal(now, before + 21);
    h_expect_int(c, 100, "DBSIZE");
    h_expect_status(c, "OK", "CONFIG SET hz 10");
}

/* DBSIZE, INFO keyspace's line for db 0, and a full SCAN agree on n keys,
 * e of them with an expiry. */
/* SHUTDOWN closes the connection without a reply and the server exits 0. */
static void shutdown_and_wait(redisContext *c, struct server *s)
{
    assert_null(H_CMD(c, "SHUTDOWN"));
    int st;
    assert_int_equal(waitpid(s->pid, &st, 0), s->pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    s->pid = 0;
}

static void expect_keys(redisContext *c, long long n, long long e)
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

/* DBSIZE and INFO keyspace come from counts every write keeps, not a
 * scan: checked against SCAN after writes that create, replace, retype,
 * rename, move and delete keys, blind SETs over cached and uncached keys
 * among them. */
static void test_srv_key_counts(void **state)
{
    redisContext *c = *state;
    expect_keys(c, 0, 0);
    h_expect_status(c, "OK", "SET a 1");
    h_expect_status(c, "OK", "SET a 2"); /* replaces: still one */
    expect_keys(c, 1, 0);
    h_expect_int(c, 1, "HSET h f v");
    h_expect_status(c, "OK", "SET h now-a-string"); /* a blind SET over a hash */
    expect_keys(c, 2, 0);
    h_expect_status(c, "OK", "SET t v EX 1000");
    h_expect_status(c, "OK", "MSET m1 x m2 y m1 z");
    expect_keys(c, 5, 1);
    h_expect_status(c, "OK", "SET t v"); /* a plain SET drops the expiry */
    h_expect_int(c, 1, "EXPIRE a 1000");
    expect_keys(c, 5, 1);
    h_expect_status(c, "OK", "RENAME a m1");
    expect_keys(c, 4, 1);
    h_expect_int(c, 1, "PERSIST m1");
    h_expect_int(c, 1, "MOVE m2 1");
    h_expect_int(c, 1, "COPY t t2");
    expect_keys(c, 4, 0);
    h_expect_int(c, 2, "RPUSH l a b");
    h_expect_array(c, A("b", "a"), "RPOP l 2");
    h_expect_int(c, 1, "SADD s a");
    h_expect_int(c, 1, "SMOVE s s2 a"); /* s goes, s2 comes */
    h_expect_bulk(c, "v", "GETDEL t");
    expect_keys(c, 4, 0);
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "SET x 1 PX 100000");
    h_expect_status(c, "QUEUED", "DEL x");
    h_expect_status(c, "QUEUED", "SET y 1 PX 100000");
    redisReply *r = H_CMD(c, "EXEC");
    assert_int_equal(r->elements, 3);
    freeReplyObject(r);
    expect_keys(c, 5, 1);
    /* Many new keys at once, then each one over again: the second round
     * finds every key present (the shm cache, the overlay or RocksDB). */
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3000; i++)
            redisAppendCommand(c, "SET bulk:%d %d", i, round);
        for (int i = 0; i < 3000; i++) {
            assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
            freeReplyObject(r);
        }
        expect_keys(c, 3005, 1);
    }
    /* Every key created since the fixture's FLUSHALL went into the key
     * filter; a FLUSHALL empties it and gives its memory back. */
    r = H_CMD(c, "INFO storage");
    const char *kf = strstr(r->str, "key_filter:filters=1,bytes=");
    assert_non_null(kf);
    kf = strstr(kf, "keys_added=");
    assert_non_null(kf);
    assert_true(strtoull(kf + 11, NULL, 10) >= 3005);
    freeReplyObject(r);
    h_expect_status(c, "OK", "SELECT 1");
    h_expect_int(c, 1, "DBSIZE");
    h_expect_status(c, "OK", "FLUSHDB");
    h_expect_int(c, 0, "DBSIZE");
    h_expect_status(c, "OK", "SELECT 0");
    h_expect_status(c, "OK", "FLUSHALL");
    expect_keys(c, 0, 0);
    r = H_CMD(c, "INFO storage");
    if (!strstr(r->str, "key_filter:filters=0,bytes=0,keys_added=0\r\n") ||
        !strstr(r->str, "key_filter_rebuild:in_progress=0,done=0\r\n"))
        fail_msg("%s", r->str);
    freeReplyObject(r);
}

/* SRANDMEMBER, SPOP, HRANDFIELD and ZRANDMEMBER on collections large
 * enough for a pick index (db_pick.c): replies shaped as Redis's, popped
 * members gone for every reader (the shm cache too), values and scores
 * paired with their own members. */
static void test_srv_random_picks(void **state)
{
    redisContext *c = *state;
    redisReply *r;
    for (int i = 0; i < 3000; i++) {
        redisAppendCommand(c, "SADD big m%d", i);
        redisAppendCommand(c, "HSET bigh f%d v%d", i, i);
        redisAppendCommand(c, "ZADD bigz %d z%d", i, i);
    }
    for (int i = 0; i < 3 * 3000; i++) {
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    r = H_CMD(c, "SRANDMEMBER big");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_true(r->str[0] == 'm');
    freeReplyObject(r);
    r = H_CMD(c, "SRANDMEMBER big 20");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 20);
    for (size_t i = 0; i < r->elements; i++)
        for (size_t j = i + 1; j < r->elements; j++)
            assert_string_not_equal(r->element[i]->str, r->element[j]->str);
    freeReplyObject(r);
    r = H_CMD(c, "SRANDMEMBER big -20");
    assert_int_equal(r->elements, 20);
    freeReplyObject(r);
    for (int i = 0; i < 100; i++) {
        r = H_CMD(c, "SPOP big");
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        h_expect_int(c, 0, "SISMEMBER big %s", r->str);
        freeReplyObject(r);
    }
    r = H_CMD(c, "SPOP big 7");
    assert_int_equal(r->elements, 7);
    for (size_t i = 0; i < r->elements; i++)
        h_expect_int(c, 0, "SISMEMBER big %s", r->element[i]->str);
    freeReplyObject(r);
    h_expect_int(c, 3000 - 107, "SCARD big");
    r = H_CMD(c, "HRANDFIELD bigh 5 WITHVALUES");
    assert_int_equal(r->elements, 10);
    for (size_t i = 0; i < r->elements; i += 2)
        assert_string_equal(r->element[i]->str + 1, r->element[i + 1]->str + 1);
    freeReplyObject(r);
    r = H_CMD(c, "ZRANDMEMBER bigz 5 WITHSCORES");
    assert_int_equal(r->elements, 10);
    for (size_t i = 0; i < r->elements; i += 2)
        assert_string_equal(r->element[i]->str + 1, r->element[i + 1]->str);
    freeReplyObject(r);
    h_expect_err(c, "WRONGTYPE", "SRANDMEMBER bigh");
    r = H_CMD(c, "INFO storage");
    if (!strstr(r->str, "pick_indexes:collections=3,bytes="))
        fail_msg("%s", r->str);
    freeReplyObject(r);
    h_expect_int(c, 3, "DEL big bigh bigz");
    h_expect_nil(c, "SRANDMEMBER big");
    h_expect_status(c, "OK", "FLUSHALL");
    r = H_CMD(c, "INFO storage");
    if (!strstr(r->str, "pick_indexes:collections=0,bytes=0\r\n"))
        fail_msg("%s", r->str);
    freeReplyObject(r);
}

static long long idletime(redisContext *c, const char *key)
{
    redisReply *r = H_CMD(c, "OBJECT IDLETIME %s", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* OBJECT IDLETIME: seconds since a command last used the key, as Redis
 * counts them — reads and writes count, TYPE, EXISTS, the TTL family,
 * WATCH and OBJECT itself do not; TOUCH does. */
/* MEMORY USAGE counts a key's records as encoded (docs/encoding.md): a
 * string's meta record is db(1) slot(2) key | flags(1) expiry(8) value, a
 * TTL adds its expiry index record, db(1) expiry(8) slot(2) key. A
 * collection's sub records are sampled (default 5) or all read (SAMPLES
 * 0); a sorted set also has its score index. */
static void test_srv_memory(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "SET mu hello");
    h_expect_int(c, 3 + 2 + 9 + 5, "MEMORY USAGE mu");
    h_expect_int(c, 1, "EXPIRE mu 100");
    h_expect_int(c, 3 + 2 + 9 + 5 + 11 + 2, "MEMORY USAGE mu");
    h_expect_nil(c, "MEMORY USAGE nokey");
    /* A hash of 200 fields "fNNN" -> "vNNN": each sub record is
     * db slot len(4) "mh" version(8) | field, and the value. */
    for (int i = 100; i < 300; i++)
        h_expect_int(c, 1, "HSET mh f%d v%d", i, i);
    long long meta = 3 + 2 + 1 + 8 + 8 + 8, sub = 3 + 4 + 2 + 8 + 4 + 4;
    h_expect_int(c, meta + 200 * sub, "MEMORY USAGE mh SAMPLES 0");
    h_expect_int(c, meta + 200 * sub, "MEMORY USAGE mh"); /* equal records: exact anyway */
    /* A sorted set: the member's sub record (score as value) and its score record. */
    for (int i = 100; i < 300; i++)
        h_expect_int(c, 1, "ZADD mz %d m%d", i, i);
    long long zsub = 3 + 4 + 2 + 8 + 4 + 8, zscore = 3 + 4 + 2 + 8 + 8 + 4;
    h_expect_int(c, meta + 200 * (zsub + zscore), "MEMORY USAGE mz SAMPLES 0");
    /* Sampling extrapolates: one long field among short ones. */
    h_expect_int(c, 1, "HSET mh zlong %0100d", 0);
    redisReply *all = H_CMD(c, "MEMORY USAGE mh SAMPLES 0"), *some = H_CMD(c, "MEMORY USAGE mh");
    assert_int_equal(all->integer, meta + 200 * sub + 3 + 4 + 2 + 8 + 5 + 100);
    assert_int_equal(some->integer, meta + 201 * sub); /* the first five are all short */
    freeReplyObject(all);
    freeReplyObject(some);
    h_expect_err(c, "ERR syntax error", "MEMORY USAGE mh SAMPLES -1");
    h_expect_err(c, "ERR syntax error", "MEMORY USAGE mh FOO 1");
    h_expect_err(c, "ERR value is not an integer or out of range", "MEMORY USAGE mh SAMPLES x");
    h_expect_err(c, "ERR wrong number of arguments for 'memory|usage' command", "MEMORY USAGE");
    h_expect_err(c, "ERR unknown subcommand 'STATS'. Try MEMORY HELP.", "MEMORY STATS");
    redisReply *r = H_CMD(c, "MEMORY MALLOC-STATS");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_non_null(strstr(r->str, "jemalloc"));
    freeReplyObject(r);
    h_expect_status(c, "OK", "MEMORY PURGE");
    r = H_CMD(c, "MEMORY HELP");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_true(r->elements > 4);
    freeReplyObject(r);
    h_expect_int(c, 3, "DEL mu mh mz");
}

/* MIGRATE with a million keys after KEYS: nothing per key lives on the
 * stack (the idle clock's touches once took an array of them there, 8 MiB
 * for this command), and the reply is the target's: the port is closed. */
static void test_srv_migrate_many_keys(void **state)
{
    /* A connection of its own that waits longer than the harness's 5 s:
     * a sanitizer build takes that long to look up a million keys. */
    (void)state;
    redisContext *c = h_connect_port(S.port);
    assert_non_null(c);
    struct timeval tv = {120, 0};
    redisSetTimeout(c, tv);
    enum { N = 1100000, HEAD = 7 };
    const char **av = malloc((N + HEAD) * sizeof *av);
    size_t *al = malloc((N + HEAD) * sizeof *al);
    char(*names)[12] = malloc((size_t)N * sizeof *names);
    char port[16];
    snprintf(port, sizeof port, "%d", h_free_port());
    const char *head[HEAD] = {"MIGRATE", "127.0.0.1", port, "", "0", "100", "KEYS"};
    for (int i = 0; i < HEAD; i++)
        av[i] = head[i];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "mk%d", i);
        av[HEAD + i] = names[i];
    }
    for (int i = 0; i < N + HEAD; i++)
        al[i] = strlen(av[i]);
    h_expect_status(c, "OK", "SET mk7 v");
    redisReply *r = redisCommandArgv(c, N + HEAD, av, al);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_string_equal(r->str, "IOERR error or timeout writing to target instance");
    freeReplyObject(r);
    h_expect_int(c, 1, "DEL mk7"); /* not moved: still here */
    redisFree(c);
    free(av);
    free(al);
    free(names);
}

/* LCS's table is (N + 1) x (M + 1) 4-byte cells: past proto-max-bulk-len
 * it is refused, as redis-server refuses it, and the daemon goes on.
 * (Replies are compared with redis-server's by test_diff.) */
static void test_srv_lcs_limit(void **state)
{
    redisContext *c = *state;
    char v[601];
    memset(v, 'a', 600);
    v[600] = 0;
    h_expect_status(c, "OK", "SET la %s", v);
    h_expect_status(c, "OK", "SET lb %s", v);
    h_expect_int(c, 600, "LCS la lb LEN");
    h_expect_status(c, "OK", "CONFIG SET proto-max-bulk-len 1mb"); /* 601 * 601 * 4 > 1 MiB */
    h_expect_err(c, "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
                 "LCS la lb LEN");
    h_expect_status(c, "OK", "CONFIG SET proto-max-bulk-len 512mb");
    h_expect_int(c, 600, "LCS la lb LEN");
    h_expect_int(c, 2, "DEL la lb");
}

static void test_srv_object_idletime(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "MSET a 1 b 2 m1 x m2 y t 1");
    h_expect_int(c, 1, "HSET h f v");
    h_expect_int(c, 1, "ZADD z 1 m");
    h_expect_int(c, 1, "SADD s1 e");
    h_expect_int(c, 1, "SADD s2 e");
    h_expect_int(c, 1, "SADD s3 e");
    h_expect_int(c, 3, "RPUSH sl 3 1 2");
    h_expect_status(c, "OK", "SET sd x");
    h_expect_int(c, 1, "GEOADD g 13.361389 38.115556 Palermo");
    h_expect_status(c, "OK", "SET gd x");
    /* Just written: 0, or 1 if a second boundary passed meanwhile (the
     * idle clock counts whole seconds; CI's ASan build is slow). */
    assert_true(idletime(c, "a") <= 1);
    h_expect_nil(c, "OBJECT IDLETIME nokey");
    /* Past two second boundaries: every key above is 2 or 3 s idle. */
    struct timespec ts = {2, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    /* Looking does not count. */
    h_expect_status(c, "string", "TYPE a");
    h_expect_int(c, 1, "EXISTS a");
    h_expect_int(c, -1, "TTL a");
    h_expect_int(c, -1, "PTTL a");
    h_expect_int(c, -1, "EXPIRETIME a");
    h_expect_int(c, -1, "PEXPIRETIME a");
    h_expect_status(c, "OK", "WATCH a");
    h_expect_status(c, "OK", "UNWATCH");
    h_expect_bulk(c, "int", "OBJECT ENCODING a");
    long long a = idletime(c, "a");
    assert_true(a >= 2 && a <= 3);
    /* Using does, reads and writes alike, in every position a command
     * takes keys: a step of 2, a MULTI, a numkeys argument, a failed type
     * check. */
    h_expect_bulk(c, "1", "GET a");
    h_expect_int(c, 1, "TOUCH b nokey");
    redisReply *r;
    r = H_CMD(c, "MGET m2 nokey");
    assert_int_equal(r->elements, 2);
    freeReplyObject(r);
    h_expect_status(c, "OK", "MSET t 2 nokey2 3");
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "HGET h f");
    r = H_CMD(c, "EXEC");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    h_expect_int(c, 1, "ZUNIONSTORE dst 1 z");
    h_expect_int(c, 1, "SINTERCARD 1 s1");
    /* Movable keys found by parsing options: SORT's STORE, GEORADIUS's
     * STOREDIST (a key written anew, as Redis makes a new object). */
    h_expect_int(c, 3, "SORT sl LIMIT 0 5 STORE sd");
    h_expect_int(c, 1, "GEORADIUS g 15 37 200 km STOREDIST gd");
    r = H_CMD(c, "LLEN s3");
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    /* 0, or 1 where a second boundary passed between the use and the look
     * (the TSan build once took that long); a key not used reads 2 or 3. */
    static const char *const used[] = {"a",  "b",  "m2", "t",  "h", "dst", "z",
                                       "s1", "s3", "sl", "sd", "g", "gd"};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        if (idletime(c, used[i]) > 1)
            fail_msg("OBJECT IDLETIME %s: want 0 (or 1) after a use", used[i]);
    /* Untouched keys stay idle, beside used ones and when a key of the same
     * name is used in another database. */
    h_expect_status(c, "OK", "SELECT 1");
    h_expect_status(c, "OK", "SET m1 other");
    h_expect_status(c, "OK", "SELECT 0");
    static const char *const kept[] = {"m1", "s2"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        long long v = idletime(c, kept[i]);
        if (v < 2 || v > 3)
            fail_msg("OBJECT IDLETIME %s: %lld, want 2 or 3", kept[i], v);
    }
    /* RESTORE makes its key used now, or IDLETIME seconds ago as far back
     * as the clock's floor (here the daemon's start: an older last use
     * reads as that, as for any key not used since). */
    r = H_CMD(c, "DUMP a");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    h_expect_status(c, "OK", "RESTORE ra 0 %b IDLETIME 1", r->str, r->len);
    h_expect_status(c, "OK", "RESTORE rb 0 %b IDLETIME 1000000", r->str, r->len);
    h_expect_status(c, "OK", "RESTORE rc 0 %b FREQ 7", r->str, r->len);
    freeReplyObject(r);
    long long ra = idletime(c, "ra"), rb = idletime(c, "rb"), s2 = idletime(c, "s2");
    if (ra < 1 || ra > 2 || rb < s2 || rb >= 1000000 || idletime(c, "rc") > 1)
        fail_msg("OBJECT IDLETIME after RESTORE: %lld, %lld (s2 %lld), want 1, the floor", ra, rb,
                 s2);
    h_expect_int(c, 3, "DEL ra rb rc");
}

/* Restarts the daemon on its data with opts (h_start_shmkvd_opts), so that
 * its shm cache holds nothing; the new client goes to *state, for the
 * teardown, and is returned. */
static redisContext *restart_uncached(void **state, const char *const *opts)
{
    redisContext *c = *state;
    shutdown_and_wait(c, &S);
    redisFree(c);
    h_start_shmkvd_opts(&S, opts);
    c = h_connect_port(S.port);
    *state = c;
    return c;
}

/* Active expiry reads each due key's record before it deletes the key: a
 * key the shm cache does not hold (here: all, after a restart) is read
 * past the cache, not into it, where 300,000 keys due at once had filled
 * it with doomed records and evicted the readers' hot ones. */
static void test_srv_active_expiry_fills_no_cache(void **state)
{
    redisContext *c = *state;
    for (int i = 0; i < 50; i++)
        h_expect_status(c, "OK", "SET doomed:%d v PX 1500", i);
    h_expect_status(c, "OK", "SET kept v");
    const char *hz[] = {"--hz", "100", NULL};
    c = restart_uncached(state, hz);
    long long fills = info_field(c, "cache", "cache_fills:");
    assert_true(fills >= 0);
    struct timespec ts = {0, 50 * 1000 * 1000};
    for (int i = 0; i < 200 && info_stat(c, "expired_keys") < 50; i++)
        nanosleep(&ts, NULL);
    assert_int_equal(info_stat(c, "expired_keys"), 50);
    assert_int_equal(info_field(c, "cache", "cache_fills:"), fills);
    h_expect_int(c, 1, "DBSIZE");
}

/* A meta record that cannot be decoded (type 9), planted past the daemon
 * as a damaged disk would leave it: every command that reads it replies an
 * error, commands of many keys included, and a DEL of many deletes none.
 * MGET's reply, begun before the read failed, is taken back whole, so the
 * replies after it stay in step. */
static void test_srv_corrupt_record_errors(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "SET good v");
    shutdown_and_wait(c, &S);
    redisFree(c);
    char data[300], mk[64];
    snprintf(data, sizeof data, "%s/data", S.dir);
    struct stor_opts so = {.dir = data, .block_cache_bytes = 8u << 20, .background_jobs = 2};
    struct stor *st;
    const char *err = NULL;
    assert_int_equal(stor_open(&st, &so, &err), 0);
    struct stor_batch b;
    stor_batch_init(&b);
    size_t mkn = enc_meta_key(mk, 0, enc_slot("bad", 3), "bad", 3);
    stor_batch_put(&b, STOR_CF_META, mk, mkn, "\x09\0\0\0\0\0\0\0\0", 9);
    assert_int_equal(stor_commit(st, &b), 0);
    stor_batch_destroy(&b);
    stor_close(st);
    h_start_shmkvd_opts(&S, NULL);
    c = h_connect_port(S.port);
    *state = c;
    h_expect_err(c, "ERR", "GET bad");
    h_expect_err(c, "ERR", "MGET good bad good");
    h_expect_status(c, "PONG", "PING");
    h_expect_err(c, "ERR", "EXISTS good bad");
    h_expect_err(c, "ERR", "DEL good bad");
    h_expect_err(c, "ERR", "SMISMEMBER bad a b");
    h_expect_bulk(c, "v", "GET good");
    h_expect_int(c, 1, "DEL good");
}

/* A key about to be deleted is read past the shm cache: filling it would
 * only have the delete turn the entry negative, evicting others for it. */
static void test_srv_delete_fills_no_cache(void **state)
{
    redisContext *c = *state;
    for (int i = 0; i < 50; i++)
        h_expect_status(c, "OK", "SET gone:%d v", i);
    h_expect_status(c, "OK", "SET gd v");
    h_expect_status(c, "OK", "SET rn v");
    h_expect_int(c, 2, "HSET wrong a 1 b 2");
    c = restart_uncached(state, NULL);
    long long fills = info_field(c, "cache", "cache_fills:");
    assert_true(fills >= 0);
    for (int i = 0; i < 50; i++)
        h_expect_int(c, 1, "DEL gone:%d", i);
    h_expect_int(c, 0, "DEL never-was");
    h_expect_bulk(c, "v", "GETDEL gd");
    h_expect_err(c, "WRONGTYPE", "GETDEL wrong");
    h_expect_status(c, "OK", "RENAME rn rn2");
    assert_int_equal(info_field(c, "cache", "cache_fills:"), fills);
    h_expect_nil(c, "GET gone:7");
    h_expect_nil(c, "GET gd");
    h_expect_nil(c, "GET rn");
    h_expect_bulk(c, "v", "GET rn2");
    h_expect_int(c, 2, "DBSIZE");
}

/* A key, field or member a write adds is read first, to know it is new
 * and to count it: the absence found then is not cached, since the
 * write's own put fills the entry at its commit (a negative entry first
 * would only be replaced). A read still caches an absence. */
static void test_srv_added_fields_fill_no_negative(void **state)
{
    redisContext *c = *state;
    long long neg = info_field(c, "cache", "cache_negative_fills:");
    assert_true(neg >= 0);
    h_expect_int(c, 1, "HSET nf:h seed 1");
    h_expect_int(c, 1, "SADD nf:s seed");
    h_expect_int(c, 1, "SADD nf:t seed");
    h_expect_int(c, 1, "ZADD nf:z 1 seed");
    h_expect_int(c, 1, "LPUSH nf:l seed");
    for (int i = 0; i < 20; i++) {
        h_expect_int(c, 1, "HSET nf:h f%d v%d", i, i);
        h_expect_int(c, 1, "SADD nf:s m%d", i);
        h_expect_int(c, 1, "ZADD nf:z %d m%d", i, i);
        h_expect_int(c, i + 2, "RPUSH nf:l e%d", i);
    }
    h_expect_int(c, 0, "HSETNX nf:h f3 other");
    h_expect_int(c, 1, "SMOVE nf:s nf:t m0");
    h_expect_bulk(c, "1", "ZINCRBY nf:z 1 new");
    assert_int_equal(info_field(c, "cache", "cache_negative_fills:"), neg);
    h_expect_bulk(c, "v7", "HGET nf:h f7");
    h_expect_bulk(c, "v3", "HGET nf:h f3");
    h_expect_int(c, 1, "SISMEMBER nf:s m7");
    h_expect_int(c, 0, "SISMEMBER nf:s m0");
    h_expect_int(c, 1, "SISMEMBER nf:t m0");
    h_expect_bulk(c, "7", "ZSCORE nf:z m7");
    h_expect_bulk(c, "e19", "LINDEX nf:l -1");
    h_expect_int(c, 21, "HLEN nf:h");
    h_expect_int(c, 20, "SCARD nf:s");
    h_expect_int(c, 22, "ZCARD nf:z");
    h_expect_int(c, 0, "HEXISTS nf:h nosuch");
    h_expect_nil(c, "ZSCORE nf:z nosuch");
    h_expect_nil(c, "GET nf:nosuch");
    assert_int_equal(info_field(c, "cache", "cache_negative_fills:"), neg + 3);
}

/* A key written once, deleted and flushed since, that the cache lacks: the
 * key filter says it may exist, so the commit's key count would read it
 * from RocksDB (deferring the count to the resolver) unless the cache
 * knows. Its re-creation therefore still caches the absence it read. */
static void test_srv_recreated_key_counted_from_cache(void **state)
{
    redisContext *c = *state;
    for (int i = 0; i < 20; i++)
        h_expect_int(c, 1, "SADD rc:%d m", i);
    c = restart_uncached(state, NULL);
    for (int i = 0; i < 20; i++)
        h_expect_int(c, 1, "DEL rc:%d", i);
    wait_overlay_forgot(c); /* the deletes too */
    long long neg = info_field(c, "cache", "cache_negative_fills:");
    long long deferred = info_field(c, "storage", "key_counts_deferred:outstanding=0,total=");
    long long keys = info_field(c, "keyspace", "db0:keys=");
    if (keys < 0)
        keys = 0; /* no db0 line: the keyspace is empty */
    assert_true(neg >= 0 && deferred >= 0);
    for (int i = 0; i < 20; i++)
        h_expect_int(c, 1, "SADD rc:%d m2", i);
    assert_int_equal(info_field(c, "cache", "cache_negative_fills:"), neg + 20);
    assert_int_equal(info_field(c, "storage", "key_counts_deferred:outstanding=0,total="),
                     deferred);
    assert_int_equal(info_field(c, "keyspace", "db0:keys="), keys + 20);
    h_expect_int(c, 0, "SISMEMBER rc:7 m");
    h_expect_int(c, 1, "SISMEMBER rc:7 m2");
}

static void test_srv_persistence_across_shutdown(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "SET ps v");
    h_expect_int(c, 2, "HSET ph a 1 b 2");
    h_expect_int(c, 2, "ZADD pz 1 a 2 b");
    h_expect_int(c, 3, "RPUSH pl x y z");
    h_expect_int(c, 1, "SADD pset m");
    h_expect_int(c, 1, "PEXPIRE ps 100000000");
    h_expect_status(c, "OK", "SELECT 3");
    h_expect_status(c, "OK", "SET indb3 yes");
    h_expect_status(c, "OK", "SELECT 0");
    expect_keys(c, 5, 1);
    shutdown_and_wait(c, &S);
    h_start_shmkvd_opts(&S, NULL);
    redisContext *d = h_connect_port(S.port);
    h_expect_bulk(d, "v", "GET ps");
    redisReply *r = H_CMD(d, "PTTL ps");
    assert_true(r->integer > 99000000);
    freeReplyObject(r);
    h_expect_array(d, A("a", "1", "b", "2"), "HGETALL ph");
    h_expect_array(d, A("a", "b"), "ZRANGE pz 0 -1");
    h_expect_array(d, A("x", "y", "z"), "LRANGE pl 0 -1");
    h_expect_int(d, 1, "SISMEMBER pset m");
    expect_keys(d, 5, 1); /* as the shutdown saved them */
    r = H_CMD(d, "INFO storage");
    if (!strstr(r->str, "key_counts_from:shutdown\r\n"))
        fail_msg("%s", r->str);
    freeReplyObject(r);
    h_expect_status(d, "OK", "SELECT 3");
    h_expect_bulk(d, "yes", "GET indb3");
    h_expect_int(d, 1, "DBSIZE");
    h_expect_status(d, "OK", "SET after-start 1"); /* counted from the loaded figures */
    h_expect_status(d, "OK", "SET indb3 again");   /* and the loaded filter knows indb3 */
    h_expect_int(d, 2, "DBSIZE");
    h_expect_status(d, "OK", "SELECT 0");
    redisFree(d);
    /* The fixture's client was closed by SHUTDOWN: give teardown a live one. */
    redisFree(c);
    *state = h_connect_port(S.port);
}

/* The daemon's own threads carry names (top -H, perf, /proc): the event
 * loop keeps the process's, the write-back flusher is shmkv-flusher. */
/* Counts pid's threads named name (/proc/<pid>/task/<tid>/comm); sets
 * *main_named if the main thread is one of them. */
static int threads_named(pid_t pid, const char *name, bool *main_named)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    *main_named = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        char p2[384], comm[32] = "";
        snprintf(p2, sizeof p2, "%s/%s/comm", path, e->d_name);
        FILE *f = fopen(p2, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
        if (strcmp(comm, name) == 0) {
            n++;
            if (atoi(e->d_name) == (int)pid)
                *main_named = true;
        }
    }
    closedir(d);
    return n;
}

static void test_srv_thread_names(void **state)
{
    (void)state;
    bool main_named, unused;
    threads_named(S.pid, "shmkvd", &main_named);
    assert_true(main_named);
    assert_int_equal(threads_named(S.pid, "shmkv-flusher", &unused), 1);
}

/* With the shm cache off, a write of a key the overlay has forgotten (the
 * flusher wrote it) learns whether the key existed only from RocksDB: the
 * write-back resolves that off the event loop (storage.md, "Writes of cold
 * keys"), and DBSIZE, INFO keyspace and SCAN still agree. */
static void test_srv_key_counts_cold(void **state)
{
    (void)state;
    struct server t;
    h_prepare(&t, "cold");
    const char *opts[] = {"--shm-cache-size", "0", "--flusher-interval", "5", NULL};
    h_start_shmkvd_opts(&t, opts);
    redisContext *c = h_connect_port(t.port);
    assert_non_null(c);
    redisReply *r;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 2000; i++)
            if (round == 0 && i % 4 == 0)
                redisAppendCommand(c, "SET cold:%d %d EX 1000", i, round);
            else if (round == 2 && i % 10 == 0)
                redisAppendCommand(c, "DEL cold:%d", i);
            else
                redisAppendCommand(c, "SET cold:%d %d", i, round);
        for (int i = 0; i < 2000; i++) {
            assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
            assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
            freeReplyObject(r);
        }
        wait_overlay_forgot(c);
    }
    expect_keys(c, 1800, 0); /* the second round dropped the expiries */
    /* DBSIZE settled them all; both later rounds were deferred. */
    assert_true(info_field(c, "storage", "key_counts_deferred:outstanding=0,total=") >= 3800);
    /* Once more, the deleted tenth coming back (a maybe in the key filter,
     * absent in RocksDB), and straight to SHUTDOWN: the saved counts must
     * take in what the shutdown's drain resolved (as much as the cron has
     * not folded by then). */
    for (int i = 0; i < 2000; i++)
        redisAppendCommand(c, "SET cold:%d again", i);
    for (int i = 0; i < 2000; i++) {
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    shutdown_and_wait(c, &t);
    redisFree(c);
    h_start_shmkvd_opts(&t, opts);
    c = h_connect_port(t.port);
    assert_non_null(c);
    r = H_CMD(c, "INFO storage");
    if (!strstr(r->str, "key_counts_from:shutdown\r\n"))
        fail_msg("%s", r->str);
    freeReplyObject(r);
    expect_keys(c, 2000, 0);
    h_expect_status(c, "OK", "FLUSHALL");
    expect_keys(c, 0, 0);
    redisFree(c);
    h_destroy(&t);
}

/* io-threads 4: replies of many pipelining clients are written by the
 * helpers (INFO counts them), every reply arrives whole and in order,
 * including large ones that fill the socket (the rest goes when it drains),
 * and a client that vanishes with replies owed is dropped while the others
 * go on. Thread names and CONFIG GET show the helpers. */
static void test_srv_io_threads(void **state)
{
    (void)state;
    struct server t;
    h_prepare(&t, "io");
    const char *opts[] = {"--io-threads", "4", NULL};
    h_start_shmkvd_opts(&t, opts);
    enum { NC = 24, ROUNDS = 12, PER = 20 };
    redisContext *cs[NC];
    for (int i = 0; i < NC; i++) {
        cs[i] = h_connect_port(t.port);
        assert_non_null(cs[i]);
    }
    size_t bign = 300 * 1024;
    char *big = malloc(bign), val[128];
    memset(big, 'b', bign);
    h_expect_status(cs[0], "OK", "SET io:big %b", big, bign);

    /* A client that asks for 20 large replies and goes away unread. */
    int gone = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)t.port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(gone, (struct sockaddr *)&sa, sizeof sa), 0);
    static const char get_big[] = "*2\r\n$3\r\nGET\r\n$6\r\nio:big\r\n";
    for (int i = 0; i < 20; i++)
        assert_int_equal(write(gone, get_big, sizeof get_big - 1), (ssize_t)(sizeof get_big - 1));

    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < NC; i++) {
            for (int j = 0; j < PER; j++) {
                int n = snprintf(val, sizeof val, "v-%d-%d-%d", round, i, j);
                redisAppendCommand(cs[i], "SET io:%d:%d %b", i, j, val, (size_t)n);
                redisAppendCommand(cs[i], "GET io:%d:%d", i, j);
            }
            if (i % 4 == 0)
                redisAppendCommand(cs[i], "GET io:big");
        }
        /* Send every client's pipeline before reading any reply, so that
         * one iteration of the loop owes replies to many clients. */
        for (int i = 0; i < NC; i++) {
            int done = 0;
            while (!done)
                assert_int_equal(redisBufferWrite(cs[i], &done), REDIS_OK);
        }
        if (round == 2)
            close(gone);
        for (int i = 0; i < NC; i++) {
            for (int j = 0; j < PER; j++) {
                int n = snprintf(val, sizeof val, "v-%d-%d-%d", round, i, j);
                redisReply *r;
                assert_int_equal(redisGetReply(cs[i], (void **)&r), REDIS_OK);
                assert_int_equal(r->type, REDIS_REPLY_STATUS);
                freeReplyObject(r);
                assert_int_equal(redisGetReply(cs[i], (void **)&r), REDIS_OK);
                assert_int_equal(r->type, REDIS_REPLY_STRING);
                assert_int_equal(r->len, n);
                assert_memory_equal(r->str, val, (size_t)n);
                freeReplyObject(r);
            }
            if (i % 4 == 0) {
                redisReply *r;
                assert_int_equal(redisGetReply(cs[i], (void **)&r), REDIS_OK);
                assert_int_equal(r->type, REDIS_REPLY_STRING);
                assert_int_equal((size_t)r->len, bign);
                assert_memory_equal(r->str, big, bign);
                freeReplyObject(r);
            }
        }
    }
    redisReply *r = H_CMD(cs[0], "INFO stats");
    const char *p = strstr(r->str, "io_threaded_writes_processed:");
    assert_non_null(p);
    assert_true(strtoull(p + 29, NULL, 10) > 0);
    freeReplyObject(r);
    r = H_CMD(cs[0], "CONFIG GET io-threads");
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[1]->str, "4");
    freeReplyObject(r);
    for (int i = 0; i < NC; i++)
        redisFree(cs[i]);
    free(big);

    bool unused;
    assert_int_equal(threads_named(t.pid, "shmkv-io", &unused), 3);
    assert_int_equal(h_stop(&t), 0); /* clean exit: the helpers joined (ASan: no leak) */
    h_destroy(&t);
}

/* A hash left with a few fields among thousands deleted is rewritten under
 * a new version after the walk that met the deletes (storage/db_tidy.c):
 * its replies and TTL stay, and a WATCH on it is not disturbed. */
static void test_srv_tidy(void **state)
{
    redisContext *c = *state;
    redisReply *r;
    for (int i = 0; i < 3000; i++)
        redisAppendCommand(c, "HSET th f%d v%d", i, i);
    for (int i = 0; i < 3000; i++)
        if (i % 1000)
            redisAppendCommand(c, "HDEL th f%d", i);
    for (int i = 0; i < 3000 + 2997; i++) {
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        freeReplyObject(r);
    }
    h_expect_int(c, 1, "EXPIRE th 1000");
    long long before = info_field(c, "storage", "collections_rewritten:");
    assert_true(before >= 0);
    h_expect_status(c, "OK", "WATCH th");
    const char *want[] = {"f0", "v0", "f1000", "v1000", "f2000", "v2000", NULL};
    h_expect_array(c, want, "HGETALL th");
    assert_int_equal(info_field(c, "storage", "collections_rewritten:"), before + 1);
    h_expect_status(c, "OK", "MULTI");
    h_expect_status(c, "QUEUED", "HSET th f1 x");
    r = H_CMD(c, "EXEC");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY); /* not nil: nobody changed th */
    freeReplyObject(r);
    const char *want2[] = {"f0", "v0", "f1", "x", "f1000", "v1000", "f2000", "v2000", NULL};
    h_expect_array(c, want2, "HGETALL th");
    r = H_CMD(c, "TTL th");
    assert_true(r->type == REDIS_REPLY_INTEGER && r->integer > 990 && r->integer <= 1000);
    freeReplyObject(r);
    h_expect_int(c, 4, "HLEN th");
    assert_int_equal(info_field(c, "storage", "collections_rewritten:"), before + 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, each_setup, each_teardown)
    const struct CMUnitTest tests[] = {
        T(test_srv_ping_echo_errors),
        T(test_srv_pipelining_and_inline),
        T(test_srv_thread_names),
        T(test_srv_io_threads),
        T(test_srv_pipeline_does_not_starve_others),
        T(test_srv_protocol_errors_close),
        T(test_srv_select_and_dbs),
        T(test_srv_multi_exec_watch),
        T(test_srv_blocking_pops),
        T(test_srv_wait),
        T(test_srv_monitor),
        T(test_srv_client_unblock),
        T(test_srv_client_pause),
        T(test_srv_config_rewrite),
        T(test_srv_multi_key_pops_and_move),
        T(test_srv_pubsub),
        T(test_srv_client_commands),
        T(test_srv_client_buffers_given_back),
        T(test_srv_hello_resp3),
        T(test_srv_config_info_command),
        T(test_srv_slowlog),
        T(test_srv_latency),
        T(test_srv_latency_journal),
        T(test_srv_tracking_lifecycle),
        T(test_srv_keyspace_expired),
        T(test_srv_bgsave_lastsave),
        T(test_srv_compact),
        T(test_srv_unix_socket),
        T(test_srv_active_expiry),
        T(test_srv_key_counts),
        cmocka_unit_test(test_srv_key_counts_cold),
        T(test_srv_random_picks),
        T(test_srv_tidy),
        T(test_srv_auth_and_limits),
        T(test_srv_object_idletime),
        T(test_srv_memory),
        T(test_srv_lcs_limit),
        T(test_srv_migrate_many_keys),
        T(test_srv_persistence_across_shutdown),
        T(test_srv_active_expiry_fills_no_cache),
        T(test_srv_delete_fills_no_cache),
        T(test_srv_added_fields_fill_no_negative),
        T(test_srv_recreated_key_counted_from_cache),
        T(test_srv_corrupt_record_errors),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
