/*
 * test_fuzz — malformed RESP thrown at a running shmkvd: binary garbage,
 * bad and negative lengths, oversized bulks, half frames then a vanished
 * client, unbalanced inline quotes, garbage after valid commands. The server
 * must answer with Redis's protocol errors (then close that client) or keep
 * waiting for the rest of a frame, and keep serving everyone else; at the
 * end no client may linger and it must exit cleanly (under ASan: no leak).
 *
 *   SHMKV_FUZZ_SEED=n, SHMKV_FUZZ_ROUNDS=n (default 1, 400)
 */
#include "harness.h"

#include <poll.h>

static struct server S;
static uint64_t rng;

static uint64_t rnd(void)
{
    return t_rnd(&rng);
}

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

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)S.port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* Builds one hostile input of a random kind into buf; returns its length.
 * *expect_error: the input must end in a protocol error and a close. */
static size_t hostile(char *buf, size_t cap, bool *expect_error)
{
    static const char *const bad_headers[] = {
        "*-5\r\n$3\r\nGET\r\n", /* negative count is "empty", then a stray $ line */
        "*abc\r\n",
        "*99999999999999\r\n",
        "*1\r\n$-1\r\n",
        "*1\r\n$abc\r\n",
        "*2\r\n$3\r\nGET\r\n:1\r\n",
        "*1\r\n$600000000\r\n", /* over proto-max-bulk-len */
        "GET \"a\r\n",
        "SET k 'b'c\r\n",
    };
    /* The first is not a protocol error: *-5 is an empty command, and the
     * lines after it are inline commands, as redis-server reads them. */
    static const bool bad_is_error[] = {false, true, true, true, true, true, true, true, true};
    size_t n = 0;
    *expect_error = false;
    switch (rnd() % 6) {
    case 0: /* binary garbage */
        n = 1 + rnd() % (cap < 4096 ? cap : 4096);
        for (size_t i = 0; i < n; i++)
            buf[i] = (char)rnd();
        break;
    case 1: { /* a bad header */
        size_t i = rnd() % (sizeof bad_headers / sizeof bad_headers[0]);
        n = strlen(bad_headers[i]);
        memcpy(buf, bad_headers[i], n);
        *expect_error = bad_is_error[i];
        break;
    }
    case 2: { /* a valid command cut short: the client then vanishes */
        const char full[] = "*3\r\n$3\r\nSET\r\n$4\r\nfuzz\r\n$10\r\n0123456789\r\n";
        n = 1 + rnd() % (sizeof full - 2);
        memcpy(buf, full, n);
        break;
    }
    case 3: { /* many arguments announced, few sent */
        n = (size_t)snprintf(buf, cap, "*%llu\r\n$4\r\nMSET\r\n",
                             (unsigned long long)(1000 + rnd() % 1000000));
        break;
    }
    case 4: { /* valid commands, then a bad header */
        n = (size_t)snprintf(buf, cap, "PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$%d\r\n",
                             -(int)(rnd() % 100) - 1);
        *expect_error = true;
        break;
    }
    default: /* a mutated valid command: one byte flipped */
        n = (size_t)snprintf(buf, cap, "*3\r\n$3\r\nSET\r\n$1\r\nm\r\n$3\r\nabc\r\n");
        buf[rnd() % n] = (char)rnd();
        break;
    }
    return n;
}

/* Reads until EOF or timeout; returns bytes read, *eof set on EOF. */
static size_t drain(int fd, char *buf, size_t cap, int ms, bool *eof)
{
    size_t got = 0;
    *eof = false;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, ms) <= 0)
            return got;
        ssize_t r = read(fd, buf + got, cap - got - 1);
        if (r <= 0) {
            *eof = true;
            return got;
        }
        got += (size_t)r;
        buf[got] = '\0';
        if (got >= cap - 1)
            return got;
    }
}

static void test_fuzz_malformed_resp(void **state)
{
    (void)state;
    const char *s = getenv("SHMKV_FUZZ_SEED"), *r = getenv("SHMKV_FUZZ_ROUNDS");
    rng = (s ? strtoull(s, NULL, 10) : 1) * 0x9e3779b97f4a7c15ull + 1;
    long rounds = r ? atol(r) : 400;
    redisContext *ctl = h_connect_port(S.port);
    assert_non_null(ctl);
    static char in[8192], out[65536];
    long errors_seen = 0;
    for (long i = 0; i < rounds; i++) {
        bool expect_error;
        size_t n = hostile(in, sizeof in, &expect_error);
        int fd = dial();
        ssize_t w = write(fd, in, n);
        assert_true(w == (ssize_t)n);
        if (rnd() % 3 == 0) {
            close(fd); /* vanish without reading a byte */
            continue;
        }
        bool eof;
        drain(fd, out, sizeof out, expect_error ? 2000 : 50, &eof);
        if (expect_error) {
            /* Redis's protocol error, then the server closes the connection. */
            if (!strstr(out, "-ERR Protocol error: ") || !eof)
                fail_msg("round %ld: want a protocol error then EOF, got %s'%.200s'", i,
                         eof ? "" : "(open) ", out);
            errors_seen++;
        }
        close(fd);
        if (i % 20 == 0) {
            char v[32];
            snprintf(v, sizeof v, "alive-%ld", i);
            h_expect_status(ctl, "OK", "SET control %s", v);
            h_expect_bulk(ctl, v, "GET control");
        }
    }
    assert_true(errors_seen > rounds / 20);
    /* Every hostile client is gone: only the control connection remains. */
    long clients = -1;
    for (int tries = 0; tries < 50 && clients != 1; tries++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        redisReply *rep = H_CMD(ctl, "INFO clients");
        const char *p = strstr(rep->str, "connected_clients:");
        clients = p ? atol(p + 18) : -1;
        freeReplyObject(rep);
    }
    assert_int_equal(clients, 1);
    printf("test_fuzz: %ld hostile inputs, %ld protocol errors checked\n", rounds, errors_seen);
    redisFree(ctl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fuzz_malformed_resp),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
