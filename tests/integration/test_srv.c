/*
 * test_srv — shmkvd as a server: protocol handling and pipelining,
 * connections, AUTH and limits, HELLO, SELECT, transactions, blocking
 * commands and their timeouts, WAIT, CLIENT, MONITOR, publish/subscribe,
 * the Unix socket, io-threads and the names of its threads.
 */
#include "enc.h"
#include "srv_fixture.h"
#include "stor.h"

#include <dirent.h>
#include <sys/stat.h>

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
    r = H_CMD(c, "INFO clients");
    long long before = atoll(strstr(r->str, "connected_clients:") + 18);
    freeReplyObject(r);
    /* Gone once CLIENT KILL replies, as Redis frees it: the next command,
     * pipelined behind it, neither lists nor counts it. */
    redisAppendCommand(c, "CLIENT KILL ID %lld", vid);
    redisAppendCommand(c, "CLIENT LIST");
    redisAppendCommand(c, "INFO clients");
    redisReply *k, *l, *inf;
    assert_int_equal(redisGetReply(c, (void **)&k), REDIS_OK);
    assert_int_equal(redisGetReply(c, (void **)&l), REDIS_OK);
    assert_int_equal(redisGetReply(c, (void **)&inf), REDIS_OK);
    assert_int_equal(k->integer, 1);
    char vline[64];
    snprintf(vline, sizeof vline, "id=%lld ", vid);
    assert_null(strstr(l->str, vline));
    assert_int_equal(atoll(strstr(inf->str, "connected_clients:") + 18), before - 1);
    freeReplyObject(k);
    freeReplyObject(l);
    freeReplyObject(inf);
    h_expect_int(c, 0, "CLIENT KILL ID %lld", vid); /* killed already */
    h_expect_int(c, 0, "CLIENT KILL ID %lld", id);  /* SKIPME yes by default */
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
        T(test_srv_multi_key_pops_and_move),
        T(test_srv_pubsub),
        T(test_srv_client_commands),
        T(test_srv_client_buffers_given_back),
        T(test_srv_hello_resp3),
        T(test_srv_unix_socket),
        T(test_srv_auth_and_limits),
        T(test_srv_lcs_limit),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
