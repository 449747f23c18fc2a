/*
 * test_limits — the limits on a client, against Debian's redis-server: the
 * same client does the same thing to both servers and must meet the same
 * end (closed, or still served, or the same error):
 *
 *   client-output-buffer-limit, normal class: HGETALL of a 200,000-field
 *     hash (about 17 MB of reply) from a client that never reads, closed
 *     at a 1 MB hard limit and kept without one; closed after a soft limit
 *     held longer than its seconds;
 *   the pubsub class: a subscriber that never reads, under a flood;
 *   the replica class (shmkvd: Redis shares its replicas' buffer
 *     differently): a replica that asked for a sync and never reads;
 *   client-query-buffer-limit: a bulk argument that never ends;
 *   proto-max-bulk-len: a bulk argument longer than it;
 *   maxclients: the connection past it.
 *
 * The clients that never read are raw sockets with a small receive
 * buffer, so the kernel cannot take the replies for them. shmkvd's INFO
 * counts each closing (client_*_buffer_limit_disconnections).
 */
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static struct server R, K; /* redis-server, shmkvd */
static redisContext *cr, *ck;

static int setup(void **state)
{
    (void)state;
    h_start_redis_opts(&R, "limits-r", A("--repl-diskless-sync-delay", "0"));
    h_prepare(&K, "limits-k");
    h_start_shmkvd_opts(&K, A("--repl-diskless-sync-delay", "0"));
    cr = h_connect_port(R.port);
    ck = h_connect_port(K.port);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    redisFree(cr);
    redisFree(ck);
    int rc = h_stop(&K);
    h_destroy(&K);
    h_destroy(&R);
    return rc == 0 ? 0 : -1;
}

/* The same command on both servers, which must both say OK. */
static void both_ok(const char *fmt, const char *arg)
{
    h_expect_status(cr, "OK", fmt, arg);
    h_expect_status(ck, "OK", fmt, arg);
}

/* A raw connection to port with a 4 KiB receive buffer, named name. */
static int dial(int port, const char *name)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    char line[128];
    int n = snprintf(line, sizeof line, "CLIENT SETNAME %s\r\n", name);
    assert_int_equal(write(fd, line, (size_t)n), n);
    char ok[5] = "";
    assert_int_equal(read(fd, ok, 5), 5);
    assert_memory_equal(ok, "+OK\r\n", 5);
    return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return; /* the server closed it: what the test looks at */
        p += w;
        n -= (size_t)w;
    }
}

/* The same raw client on both servers (redis-server's first). */
struct pair {
    int fd[2];
};

static struct pair pair_dial(const char *name)
{
    return (struct pair){{dial(R.port, name), dial(K.port, name)}};
}

static void pair_send(struct pair p, const char *bytes, size_t n)
{
    send_all(p.fd[0], bytes, n);
    send_all(p.fd[1], bytes, n);
}

static void pair_close(struct pair p)
{
    close(p.fd[0]);
    close(p.fd[1]);
}

/* Whether a client named name is in CLIENT LIST of c. */
static bool listed(redisContext *c, const char *name)
{
    redisReply *r = H_CMD(c, "CLIENT LIST");
    char want[140];
    snprintf(want, sizeof want, "name=%s ", name);
    bool in = r && r->type == REDIS_REPLY_STRING && strstr(r->str, want) != NULL;
    freeReplyObject(r);
    return in;
}

/* Waits up to ms for the named client to be gone (want_gone) from c's
 * list, or checks it is still there after ms. */
static bool gone_within(redisContext *c, const char *name, int ms)
{
    for (int t = 0; t < ms; t += 50) {
        if (!listed(c, name))
            return true;
        usleep(50 * 1000);
    }
    return !listed(c, name);
}

/* Each server's client named name: closed (want_closed) or still there. */
static void expect_both(const char *name, bool want_closed, const char *what)
{
    bool r = gone_within(cr, name, want_closed ? 5000 : 1000),
         k = gone_within(ck, name, want_closed ? 5000 : 1000);
    if (r != want_closed || k != want_closed)
        fail_msg("%s: redis-server %s it, shmkvd %s it (want it %s)", what, r ? "closed" : "kept",
                 k ? "closed" : "kept", want_closed ? "closed" : "kept");
}

static void load_big_hash(redisContext *c)
{
    freeReplyObject(H_CMD(c, "DEL big"));
    char val[64];
    memset(val, 'v', sizeof val - 1);
    val[sizeof val - 1] = '\0';
    for (int b = 0; b < 200; b++) {
        const char *argv[2 + 2 * 1000];
        char fields[1000][16];
        argv[0] = "HSET";
        argv[1] = "big";
        for (int i = 0; i < 1000; i++) {
            snprintf(fields[i], sizeof fields[i], "f%d", b * 1000 + i);
            argv[2 + 2 * i] = fields[i];
            argv[3 + 2 * i] = val;
        }
        redisReply *r = redisCommandArgv(c, 2 + 2 * 1000, argv, NULL);
        assert_true(r && r->type == REDIS_REPLY_INTEGER);
        freeReplyObject(r);
    }
}

static void test_output_normal(void **state)
{
    (void)state;
    load_big_hash(cr);
    load_big_hash(ck);
    static const char hgetall[] = "*2\r\n$7\r\nHGETALL\r\n$3\r\nbig\r\n";
    /* No limit (the normal class's default): the client is kept. */
    both_ok("CONFIG SET client-output-buffer-limit %s", "normal 0 0 0");
    struct pair v = pair_dial("nolimit");
    pair_send(v, hgetall, sizeof hgetall - 1);
    expect_both("nolimit", false, "normal class, no limit");
    pair_close(v);
    /* A 1 MB hard limit: closed. */
    both_ok("CONFIG SET client-output-buffer-limit %s", "normal 1mb 0 0");
    v = pair_dial("hard");
    pair_send(v, hgetall, sizeof hgetall - 1);
    expect_both("hard", true, "normal class, 1mb hard limit");
    pair_close(v);
    /* A soft limit: kept while under its seconds, closed past them at
     * the next reply. */
    /* 4 seconds: the reply alone may take a loaded machine a second or
     * two to write, and must not outlast them. */
    both_ok("CONFIG SET client-output-buffer-limit %s", "normal 0 1mb 4");
    v = pair_dial("soft");
    pair_send(v, hgetall, sizeof hgetall - 1);
    expect_both("soft", false, "normal class, soft limit, before its seconds");
    sleep(4);
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    pair_send(v, ping, sizeof ping - 1);
    expect_both("soft", true, "normal class, soft limit, past its seconds");
    pair_close(v);
    both_ok("CONFIG SET client-output-buffer-limit %s", "normal 0 0 0");
    freeReplyObject(H_CMD(cr, "DEL big"));
    freeReplyObject(H_CMD(ck, "DEL big"));
    assert_int_equal(h_info_num(ck, "client_output_buffer_limit_disconnections"), 2);
    printf("test_limits: normal class closed at its hard and soft limits, as redis-server\n");
}

/* A blocked client closed while its output is past the limits' watch
 * (here by CLIENT KILL in the same batch as a push): it is not served, and
 * the pushed elements stay. */
static void test_blocked_closing(void **state)
{
    (void)state;
    load_big_hash(cr);
    load_big_hash(ck);
    redisContext *cs[2] = {cr, ck};
    int ports[2] = {R.port, K.port};
    for (int s = 0; s < 2; s++) {
        freeReplyObject(H_CMD(cs[s], "DEL q"));
        int fd = dial(ports[s], "blocked");
        static const char cmds[] = "*2\r\n$7\r\nHGETALL\r\n$3\r\nbig\r\n"
                                   "*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n";
        send_all(fd, cmds, sizeof cmds - 1);
        long long id = -1;
        for (int t = 0; t < 100 && id < 0; t++) {
            redisReply *r = H_CMD(cs[s], "CLIENT LIST");
            const char *at = r && r->str ? strstr(r->str, "name=blocked ") : NULL;
            const char *line = at;
            while (line && line > r->str && line[-1] != '\n')
                line--;
            if (at && strstr(line, "cmd=blpop"))
                id = strtoll(line + 3, NULL, 10); /* "id=" */
            freeReplyObject(r);
            if (id < 0)
                usleep(50 * 1000);
        }
        assert_true(id >= 0);
        redisAppendCommand(cs[s], "CLIENT KILL ID %lld", id);
        redisAppendCommand(cs[s], "RPUSH q 1 2 3");
        redisReply *r;
        for (int i = 0; i < 2; i++) {
            assert_int_equal(redisGetReply(cs[s], (void **)&r), REDIS_OK);
            freeReplyObject(r);
        }
        h_expect_int(cs[s], 3, "LLEN q");
        close(fd);
        freeReplyObject(H_CMD(cs[s], "DEL q big"));
    }
}

static void test_output_pubsub(void **state)
{
    (void)state;
    both_ok("CONFIG SET client-output-buffer-limit %s", "pubsub 256kb 0 0");
    struct pair v = pair_dial("sub");
    static const char sub[] = "*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n";
    pair_send(v, sub, sizeof sub - 1);
    usleep(100 * 1000);
    char msg[1024];
    memset(msg, 'm', sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    for (int i = 0; i < 4000; i++) {
        freeReplyObject(H_CMD(cr, "PUBLISH ch %s", msg));
        freeReplyObject(H_CMD(ck, "PUBLISH ch %s", msg));
    }
    expect_both("sub", true, "pubsub class, 256kb hard limit");
    pair_close(v);
    both_ok("CONFIG SET client-output-buffer-limit %s", "pubsub 32mb 8mb 60");
    assert_int_equal(h_info_num(ck, "client_output_buffer_limit_disconnections"), 3);
}

static void test_output_replica(void **state)
{
    (void)state;
    h_expect_status(ck, "OK", "CONFIG SET client-output-buffer-limit %s", "replica 1mb 0 0");
    int fk = dial(K.port, "rep");
    static const char psync[] = "*3\r\n$8\r\nREPLCONF\r\n$14\r\nlistening-port\r\n$4\r\n9999\r\n"
                                "*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n";
    send_all(fk, psync, sizeof psync - 1);
    /* Until its file is on the way the stream is not kept for it (it
     * starts at the file's moment): the writes come after that. */
    bool sending = false;
    for (int t = 0; t < 200 && !sending; t++) {
        redisReply *r = H_CMD(ck, "INFO replication");
        sending =
            r && r->str && (strstr(r->str, "state=send_bulk") || strstr(r->str, "state=online"));
        freeReplyObject(r);
        if (!sending)
            usleep(50 * 1000);
    }
    assert_true(sending);
    char val[256 * 1024];
    memset(val, 'r', sizeof val - 1);
    val[sizeof val - 1] = '\0';
    for (int i = 0; i < 64 && listed(ck, "rep"); i++)
        freeReplyObject(H_CMD(ck, "SET rk%d %s", i, val));
    if (!gone_within(ck, "rep", 5000))
        fail_msg("a replica that never reads was kept past its 1mb limit");
    close(fk);
    h_expect_status(ck, "OK", "CONFIG SET client-output-buffer-limit %s", "replica 256mb 64mb 60");
    assert_int_equal(h_info_num(ck, "client_output_buffer_limit_disconnections"), 4);
    freeReplyObject(H_CMD(ck, "FLUSHALL"));
}

static void test_query_limits(void **state)
{
    (void)state;
    /* client-query-buffer-limit: a bulk argument that never ends. */
    both_ok("CONFIG SET client-query-buffer-limit %s", "1mb");
    struct pair v = pair_dial("query");
    static const char head[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4000000\r\n";
    static char body[2 << 20];
    memset(body, 'q', sizeof body);
    pair_send(v, head, sizeof head - 1);
    pair_send(v, body, sizeof body);
    expect_both("query", true, "client-query-buffer-limit 1mb");
    pair_close(v);
    both_ok("CONFIG SET client-query-buffer-limit %s", "1gb");
    assert_int_equal(h_info_num(ck, "client_query_buffer_limit_disconnections"), 1);

    /* proto-max-bulk-len: the same error, then the close. */
    both_ok("CONFIG SET proto-max-bulk-len %s", "1mb");
    static const char big[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n";
    char got[2][128];
    int fds[2] = {dial(R.port, "bulk"), dial(K.port, "bulk")};
    for (int i = 0; i < 2; i++) {
        send_all(fds[i], big, sizeof big - 1);
        ssize_t n = 0, r;
        while (n < (ssize_t)sizeof got[i] - 1 && (r = read(fds[i], got[i] + n, 1)) == 1 &&
               got[i][n] != '\n')
            n++;
        got[i][n] = '\0';
        char more;
        assert_int_equal(read(fds[i], &more, 1), 0); /* then closed */
        close(fds[i]);
    }
    assert_string_equal(got[0], got[1]);
    both_ok("CONFIG SET proto-max-bulk-len %s", "512mb");
    printf("test_limits: query buffer and bulk length limits as redis-server (%s)\n", got[1]);
}

static void test_maxclients(void **state)
{
    (void)state;
    redisContext *cs[2] = {cr, ck};
    int ports[2] = {R.port, K.port};
    char got[2][128];
    for (int s = 0; s < 2; s++) {
        long long now = h_info_num(cs[s], "connected_clients");
        char n[24];
        snprintf(n, sizeof n, "%lld", now + 1);
        h_expect_status(cs[s], "OK", "CONFIG SET maxclients %s", n);
        int one = dial(ports[s], "last");
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)ports[s]),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        ssize_t k = 0, r;
        while (k < (ssize_t)sizeof got[s] - 1 && (r = read(fd, got[s] + k, 1)) == 1 &&
               got[s][k] != '\n')
            k++;
        got[s][k > 0 && got[s][k - 1] == '\r' ? k - 1 : k] = '\0';
        close(fd);
        close(one);
        h_expect_status(cs[s], "OK", "CONFIG SET maxclients %s", "10000");
    }
    assert_string_equal(got[0], got[1]);
    printf("test_limits: the client past maxclients gets %s\n", got[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_normal), cmocka_unit_test(test_blocked_closing),
        cmocka_unit_test(test_output_pubsub), cmocka_unit_test(test_output_replica),
        cmocka_unit_test(test_query_limits),  cmocka_unit_test(test_maxclients),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
