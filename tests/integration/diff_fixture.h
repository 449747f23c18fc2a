/*
 * diff_fixture — what the differential tests (test_diff, test_diff_values,
 * test_diff_docs, test_diff_conn, test_diff_debug) share: Debian's
 * redis-server and shmkvd started side by side for a program (with extra
 * options where a program needs them), a connection to each, seeded random
 * numbers, replies compared and shown, both servers' keyspace
 * notifications compared as they come, and raw RESP3 exchanges.
 * Header-only, as harness.h.
 */
#ifndef SHMKV_TEST_DIFF_FIXTURE_H
#define SHMKV_TEST_DIFF_FIXTURE_H

#include "harness.h"

#include <stdint.h>

#include "h_client.h"
#include "t_rnd.h"

static struct server R, K; /* redis-server, shmkvd */
static redisContext *cr, *ck;
static redisContext *pr; /* redis-server, for the cache probes */
static shmkv *pk;        /* shmkvd through libshmkv */

/* ---- random generation ---- */

static uint64_t rng;

static inline uint64_t rnd(void)
{
    return t_rnd(&rng);
}

static inline int pick(int n)
{
    return (int)(rnd() % (uint64_t)n);
}

/* ---- comparison ---- */

static inline char *show(const redisReply *r, char *buf, size_t cap)
{
    if (!r) {
        snprintf(buf, cap, "(no reply)");
        return buf;
    }
    switch (r->type) {
    case REDIS_REPLY_STRING:
        snprintf(buf, cap, "\"%.*s\"", (int)r->len, r->str);
        break;
    case REDIS_REPLY_STATUS:
        snprintf(buf, cap, "+%s", r->str);
        break;
    case REDIS_REPLY_ERROR:
        snprintf(buf, cap, "-%s", r->str);
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(buf, cap, ":%lld", r->integer);
        break;
    case REDIS_REPLY_NIL:
        snprintf(buf, cap, "(nil)");
        break;
    case REDIS_REPLY_ARRAY: {
        size_t u = (size_t)snprintf(buf, cap, "[");
        for (size_t i = 0; i < r->elements && u < cap - 8; i++) {
            char sub[512];
            u += (size_t)snprintf(buf + u, cap - u, "%s%s", i ? ", " : "",
                                  show(r->element[i], sub, sizeof sub));
        }
        snprintf(buf + (u < cap ? u : cap - 1), cap - (u < cap ? u : cap - 1), "]");
        break;
    }
    default:
        snprintf(buf, cap, "(type %d)", r->type);
    }
    return buf;
}

static inline bool same(const redisReply *a, const redisReply *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    case REDIS_REPLY_INTEGER:
        return a->integer == b->integer;
    case REDIS_REPLY_ARRAY:
        if (a->elements != b->elements)
            return false;
        for (size_t i = 0; i < a->elements; i++)
            if (!same(a->element[i], b->element[i]))
                return false;
        return true;
    default:
        return true;
    }
}

/* Splits line in place at single spaces into at most max words: av[i]
 * point into line. Returns the count. */
static inline int diff_words(char *line, const char **av, int max)
{
    int ac = 0;
    for (char *save = NULL, *t = strtok_r(line, " ", &save); t && ac < max;
         t = strtok_r(NULL, " ", &save))
        av[ac++] = t;
    return ac;
}

/* Sorts groups of `stride` elements by their first string, for multiset
 * comparison (pairs stay together for HGETALL). */
static inline int cmp_str(const void *x, const void *y)
{
    const redisReply *a = *(redisReply *const *)x, *b = *(redisReply *const *)y;
    if (!a->str || !b->str)
        return (a->str != NULL) - (b->str != NULL);
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->str, b->str, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static inline void sort_groups(redisReply *r, size_t stride)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 || r->elements % stride)
        return;
    size_t n = r->elements / stride;
    redisReply **tmp = malloc(r->elements * sizeof *tmp);
    size_t *idx = malloc(n * sizeof *idx);
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    /* insertion sort on group keys: replies are small */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i;
             j > 0 && cmp_str(&r->element[idx[j - 1] * stride], &r->element[idx[j] * stride]) > 0;
             j--) {
            size_t t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < stride; k++)
            tmp[i * stride + k] = r->element[idx[i] * stride + k];
    memcpy(r->element, tmp, r->elements * sizeof *tmp);
    free(tmp);
    free(idx);
}

/* Starts both servers, each with its extra "--name value" options (NULL-
 * terminated, or NULL), and connects to them. */
static inline int diff_setup(const char *const *redis_extra, const char *const *shmkvd_extra)
{
    if (access(REDIS_SERVER_PATH, X_OK) != 0) {
        fprintf(stderr, "test_diff: %s not found: nothing to compare against\n", REDIS_SERVER_PATH);
        return -1;
    }
    h_start_redis_opts(&R, "redis", redis_extra);
    h_prepare(&K, "diff");
    h_start_shmkvd_opts(&K, shmkvd_extra);
    cr = h_connect_port(R.port);
    ck = h_connect_port(K.port);
    pr = h_connect_port(R.port);
    if (shmkv_open(&pk, K.sock, NULL) != SHMKV_OK || shmkv_cache_error(pk)) {
        fprintf(stderr, "test_diff: libshmkv: %s\n", pk ? shmkv_cache_error(pk) : shmkv_errmsg());
        return -1;
    }
    return cr && ck && pr ? 0 : -1;
}

static inline int group_setup(void **state)
{
    (void)state;
    return diff_setup(NULL, NULL);
}

static inline int group_teardown(void **state)
{
    (void)state;
    redisFree(cr);
    redisFree(ck);
    redisFree(pr);
    shmkv_close(pk);
    int rc = h_stop(&K);
    h_destroy(&K);
    h_destroy(&R);
    return rc == 0 ? 0 : -1;
}

/* ---- keyspace notifications ---- */

/* A subscriber on each server to every __keyspace@*__ and __keyevent@*__
 * channel, and to a sync channel: to compare the events of the commands
 * sent since the last check, each command connection publishes a mark on
 * the sync channel, and each subscriber's messages are read up to it (a
 * server's messages to one subscriber keep their order). */
struct evwatch {
    redisContext *sub[2]; /* redis-server's, shmkvd's */
    redisContext *cmd[2]; /* the connections the commands go through */
    long marks, events, steps;
    char recent[16][256]; /* the last commands, shown on a mismatch */
    size_t nrecent;
};

static inline void ev_start(struct evwatch *w, redisContext *rc, redisContext *kc)
{
    memset(w, 0, sizeof *w);
    w->cmd[0] = rc;
    w->cmd[1] = kc;
    int ports[2] = {R.port, K.port};
    for (int i = 0; i < 2; i++) {
        redisReply *r = redisCommand(w->cmd[i], "CONFIG SET notify-keyspace-events KEAn");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
        w->sub[i] = h_connect_port(ports[i]);
        assert_non_null(w->sub[i]);
        r = redisCommand(w->sub[i], "PSUBSCRIBE __key*@*__:*");
        assert_non_null(r);
        freeReplyObject(r);
        r = redisCommand(w->sub[i], "SUBSCRIBE diff-sync");
        assert_non_null(r);
        freeReplyObject(r);
    }
}

static inline void ev_check(struct evwatch *w, const char *what);

/* After each command (ac words av): remembers it for a mismatch report,
 * and compares the events every 8 commands. */
static inline void ev_step(struct evwatch *w, const char *what, int ac, const char *const *av)
{
    char *line = w->recent[w->nrecent++ % 16];
    size_t u = (size_t)snprintf(line, 256, "%ld:", w->steps);
    for (int j = 0; j < ac && u < 250; j++)
        u += (size_t)snprintf(line + u, 256 - u, " '%s'", av[j]);
    if (++w->steps % 8 == 0)
        ev_check(w, what);
}

/* Reads sub's messages up to the sync mark into buf as "channel message"
 * lines; false if the mark did not come. */
static inline bool ev_collect(redisContext *sub, const char *mark, char *buf, size_t cap, long *n)
{
    size_t u = 0;
    buf[0] = '\0';
    for (;;) {
        redisReply *r;
        if (redisGetReply(sub, (void **)&r) != REDIS_OK || !r)
            return false;
        bool ok = r->type == REDIS_REPLY_ARRAY && r->elements >= 3;
        if (ok && r->elements == 3 && !strcmp(r->element[1]->str, "diff-sync")) {
            bool done = !strcmp(r->element[2]->str, mark);
            freeReplyObject(r);
            if (done)
                return true;
            continue;
        }
        if (ok && r->elements == 4 && u < cap - 1) {
            u += (size_t)snprintf(buf + u, cap - u, "%.*s %.*s\n", (int)r->element[2]->len,
                                  r->element[2]->str, (int)r->element[3]->len, r->element[3]->str);
            (*n)++;
        }
        freeReplyObject(r);
    }
}

/* Compares the events since the last check; fails with both streams and
 * the last commands when they differ. */
static inline void ev_check(struct evwatch *w, const char *what)
{
    static char got[2][16384];
    char mark[32];
    snprintf(mark, sizeof mark, "%ld", ++w->marks);
    long n[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        redisReply *r = redisCommand(w->cmd[i], "PUBLISH diff-sync %s", mark);
        assert_non_null(r);
        freeReplyObject(r);
        if (!ev_collect(w->sub[i], mark, got[i], sizeof got[i], &n[i]))
            fail_msg("%s: %s's keyspace events did not arrive", what,
                     i ? "shmkvd" : "redis-server");
    }
    if (strcmp(got[0], got[1])) {
        printf("%s: keyspace events differ after these commands:\n", what);
        for (size_t j = w->nrecent > 16 ? w->nrecent - 16 : 0; j < w->nrecent; j++)
            printf("  %s\n", w->recent[j % 16]);
        fail_msg("redis-server:\n%sshmkvd:\n%s", got[0], got[1]);
    }
    w->events += n[0];
    w->nrecent = 0;
}

/* Compares what is left, then turns the events off. */
static inline void ev_stop(struct evwatch *w, const char *what)
{
    ev_check(w, what);
    for (int i = 0; i < 2; i++) {
        redisReply *r = redisCommand(w->cmd[i], "CONFIG SET notify-keyspace-events %s", "");
        freeReplyObject(r);
        redisFree(w->sub[i]);
    }
}

static inline void put(char *buf, size_t cap, const char *fmt, const char *s)
{
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, fmt, s ? s : "-");
}

static inline int r3_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* The length of the one whole reply at p[0..n), or 0 if it is not all there. */
static inline size_t r3_reply_len(const char *p, size_t n)
{
    const char *eol = memchr(p, '\n', n);
    if (!eol)
        return 0;
    size_t head = (size_t)(eol - p) + 1;
    long long v = strtoll(p + 1, NULL, 10);
    switch (p[0]) {
    case '$':
    case '=':
    case '!': /* a length, then that many bytes */
        if (v < 0)
            return head;
        return n >= head + (size_t)v + 2 ? head + (size_t)v + 2 : 0;
    case '*':
    case '~':
    case '>':
    case '%': { /* v elements, or v pairs */
        size_t at = head, count = v < 0 ? 0 : (size_t)v * (p[0] == '%' ? 2 : 1);
        for (size_t i = 0; i < count; i++) {
            size_t len = r3_reply_len(p + at, n - at);
            if (!len)
                return 0;
            at += len;
        }
        return at;
    }
    default: /* + - : , # _ ( : one line */
        return head;
    }
}

/* Sends one command, its words split on sep, as a RESP array; the word ""
 * is the empty argument. */
static inline void send_words(int fd, const char *line, const char *sep)
{
    char req[4096], words[2048];
    snprintf(words, sizeof words, "%s", line);
    const char *w[32];
    int nw = 0;
    for (char *t = strtok(words, sep); t && nw < 32; t = strtok(NULL, sep))
        w[nw++] = strcmp(t, "\"\"") ? t : "";
    size_t u = (size_t)snprintf(req, sizeof req, "*%d\r\n", nw);
    for (int i = 0; i < nw; i++)
        u += (size_t)snprintf(req + u, sizeof req - u, "$%zu\r\n%s\r\n", strlen(w[i]), w[i]);
    assert_int_equal(write(fd, req, u), (ssize_t)u);
}

static inline void send_line(int fd, const char *line)
{
    send_words(fd, line, " ");
}

/* Sends one command (words split on sep) and returns its reply's bytes. */
static inline char *r3_call_words(int fd, const char *line, const char *sep, size_t *len)
{
    send_words(fd, line, sep);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (!(*len = r3_reply_len(buf, n))) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r <= 0)
            fail_msg("RESP3 %s: no whole reply (%zu bytes)", line, n);
        n += (size_t)r;
    }
    assert_int_equal(*len, n); /* one command, one reply */
    return buf;
}

/* The same, words split on spaces. */
static inline char *r3_call(int fd, const char *line, size_t *len)
{
    return r3_call_words(fd, line, " ", len);
}

#endif
