/*
 * harness — start a real shmkvd (or redis-server) on a free loopback port
 * in a private temp folder, talk to it with hiredis, stop it by its PID and
 * remove the folder. Header-only so each test program stays one file.
 */
#ifndef SHMKV_TEST_HARNESS_H
#define SHMKV_TEST_HARNESS_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "t_rnd.h"
#include "t_tmp.h"

struct server {
    pid_t pid;
    int port;
    char dir[256];
    char sock[300];
};

/* Claims port for this process's lifetime among all test processes: an
 * abstract Unix socket named after it, which the kernel drops when the
 * process exits (no file to clean up). A test that kills a server and
 * restarts it on the same port leaves the port free in between; without
 * the claim, a test running beside it could pick that port for a server or
 * a fake primary of its own, and each would then talk to the other's. */
static inline bool h_port_claim(int port)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return true; /* cannot claim: the bind test below still applies */
    struct sockaddr_un su = {.sun_family = AF_UNIX};
    int n = snprintf(su.sun_path + 1, sizeof su.sun_path - 1, "shmkv-test-port-%d", port);
    if (bind(fd, (struct sockaddr *)&su,
             (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n))) {
        close(fd);
        return false;
    }
    return true; /* fd stays open until exit: that is the claim */
}

/* A port nothing listens on right now, below the kernel's ephemeral range,
 * and claimed by no other test process (h_port_claim).
 * A port from that range (bind(0)'s choice) can be taken between a kill and
 * a restart by any outgoing connection, the harness's own start-up polls
 * included: a connect to a loopback port nobody listens on, given that same
 * port as its local one, connects to itself (TCP simultaneous open; here
 * about one in 3,500 tries on an even port), and the restarted server's
 * bind then fails. Outside the range only a listener can hold the port. */
static inline int h_free_port(void)
{
    int lo = 32768; /* the range's first port */
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d", &lo) != 1)
            lo = 32768;
        fclose(f);
    }
    int base = 10000, span = lo - base;
    static uint64_t rs;
    if (!rs) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        rs = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ 0x9e3779b97f4a7c15ull;
    }
    for (int i = 0; i < 1000; i++) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t sl = sizeof sa;
        if (span >= 1000) {
            rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17; /* xorshift64 */
            sa.sin_port = htons((uint16_t)(base + (int)(rs % (uint64_t)span)));
        } /* else a range reaching down to 11000: the kernel picks (port 0) */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            return -1;
        /* No SO_REUSEADDR: a port with connections in TIME_WAIT is passed
         * over too. */
        int ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
                 getsockname(fd, (struct sockaddr *)&sa, &sl) == 0;
        close(fd);
        if (ok && h_port_claim(ntohs(sa.sin_port)))
            return ntohs(sa.sin_port);
    }
    return -1;
}

static inline redisContext *h_connect_port(int port)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c && c->err) {
        redisFree(c);
        return NULL;
    }
    if (c)
        redisSetTimeout(c, tv);
    return c;
}

/* Starts argv (NULL-terminated; the harness appends nothing) and waits up to
 * 20 s for the port to answer PING. */
static inline void h_spawn(struct server *s, char *const argv[])
{
    pid_t parent = getpid();
    char log[300];
    snprintf(log, sizeof log, "%s/server.log", s->dir);
    s->pid = fork();
    if (s->pid == 0) {
        /* If the test process dies (a failed assertion, a sanitizer abort),
         * its servers die with it instead of lingering. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        FILE *f = freopen(log, "w", stdout);
        (void)f;
        dup2(1, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    for (int i = 0; i < 400; i++) {
        redisContext *c = h_connect_port(s->port);
        if (c) {
            redisReply *r = redisCommand(c, "PING");
            /* NOAUTH is an answer too: a server with requirepass. */
            bool ok = r && (r->type == REDIS_REPLY_STATUS ||
                            (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOAUTH", 6) == 0));
            freeReplyObject(r);
            redisFree(c);
            if (ok)
                return;
        }
        int st;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            /* The folder goes with the test's teardown: show the log's end. */
            char tail[2048];
            FILE *f = fopen(log, "r");
            size_t n = 0;
            if (f) {
                if (fseek(f, -(long)(sizeof tail - 1), SEEK_END) != 0)
                    rewind(f);
                n = fread(tail, 1, sizeof tail - 1, f);
                fclose(f);
            }
            tail[n] = '\0';
            fail_msg("server %s exited during start (status %d), see %s; its log ends:\n%s",
                     argv[0], st, s->dir, tail);
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("server %s did not answer on port %d", argv[0], s->port);
}

/* Makes the temp folder and picks a port; the folder holds data and log. */
static inline void h_prepare(struct server *s, const char *tag)
{
    memset(s, 0, sizeof *s);
    if (t_tmp_make(s->dir, sizeof s->dir, tag) != 0)
        fail_msg("mkdtemp: %s", strerror(errno));
    s->port = h_free_port();
    snprintf(s->sock, sizeof s->sock, "%s/shmkv.sock", s->dir);
}

/* Starts shmkvd with the given extra "--name value" options. */
static inline void h_start_shmkvd_opts(struct server *s, const char *const *extra)
{
    char port[16], data[300];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(data, sizeof data, "%s/data", s->dir);
    const char *argv[64] = {SHMKVD_PATH, "--port",     port,     "--bind",
                            "127.0.0.1", "--dir",      data,     "--unixsocket",
                            s->sock,     "--loglevel", "verbose"};
    int n = 11;
    for (int i = 0; extra && extra[i] && n < 62; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    h_spawn(s, (char *const *)argv);
}

static inline void h_start_shmkvd(struct server *s)
{
    h_prepare(s, "it");
    h_start_shmkvd_opts(s, NULL);
}

/* Starts the reference redis-server, without persistence, in a fresh folder
 * named after tag, with the given extra "--name value" options (NULL-
 * terminated; NULL for none). */
static inline void h_start_redis_opts(struct server *s, const char *tag, const char *const *extra)
{
    h_prepare(s, tag);
    char port[16];
    snprintf(port, sizeof port, "%d", s->port);
    const char *argv[32] = {
        REDIS_SERVER_PATH, "--port", port,    "--bind", "127.0.0.1", "--save", "",
        "--appendonly",    "no",     "--dir", s->dir};
    int n = 11;
    for (int i = 0; extra && extra[i] && n < 30; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    /* SORT ... ALPHA compares with the server's locale; shmkvd compares
     * bytes, as the C locale does. */
    setenv("LC_ALL", "C", 1);
    h_spawn(s, (char *const *)argv);
}

static inline void h_start_redis(struct server *s, const char *tag)
{
    h_start_redis_opts(s, tag, NULL);
}

/* Stops the server: SIGTERM, then SIGKILL after 20 s. Returns the exit
 * status (or -1 if it had to be killed). Keeps the folder. */
static inline int h_stop(struct server *s)
{
    if (s->pid <= 0)
        return 0;
    kill(s->pid, SIGTERM);
    int st = 0;
    for (int i = 0; i < 400; i++) {
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            s->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &st, 0);
    s->pid = 0;
    return -1;
}

/* The whole of a small file (a server's log, a config file), NUL-
 * terminated, into text (cap bytes); what does not fit is left out. */
static inline void h_read_file(const char *path, char *text, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot read %s: %s", path, strerror(errno));
    size_t n = fread(text, 1, cap - 1, f);
    text[n] = '\0';
    fclose(f);
}

/* A file in s's folder named name, holding text; its path in path. */
static inline void h_write_file(const struct server *s, const char *name, const char *text,
                                char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", s->dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0)
        fail_msg("cannot write %s: %s", path, strerror(errno));
    fclose(f);
}

/* SHMKV_TEST_KEEP=1 keeps the folders (and a killed daemon's journal) for
 * a look after a failure; the servers are stopped all the same. */
static inline void h_destroy(struct server *s)
{
    h_stop(s);
    if (getenv("SHMKV_TEST_KEEP"))
        t_tmp_keep(s->dir); /* and no later test's sweep removes it */
    else
        t_tmp_rmrf(s->dir); /* with a killed daemon's journal folder */
}

/* For a group teardown: stops the server, removes its folder, and fails
 * unless it exited cleanly on SIGTERM (under ASan: no leak, no error). */
static inline int h_group_stop(struct server *s)
{
    int rc = h_stop(s);
    h_destroy(s);
    return rc == 0 ? 0 : -1;
}

/* ---- reply assertions ---- */

#define H_CMD(c, ...) ((redisReply *)redisCommand((c), __VA_ARGS__))

static inline void h_expect_status(redisContext *c, const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, want) != 0)
        fail_msg("%s: want +%s, got type %d '%s'", fmt, want, r->type, r->str ? r->str : "");
    freeReplyObject(r);
}

static inline void h_expect_int(redisContext *c, long long want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_INTEGER || r->integer != want)
        fail_msg("%s: want :%lld, got type %d %lld '%s'", fmt, want, r->type, r->integer,
                 r->str ? r->str : "");
    freeReplyObject(r);
}

static inline void h_expect_bulk(redisContext *c, const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_STRING || r->len != strlen(want) || memcmp(r->str, want, r->len))
        fail_msg("%s: want $'%s', got type %d '%s'", fmt, want, r->type, r->str ? r->str : "");
    freeReplyObject(r);
}

static inline void h_expect_nil(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_NIL)
        fail_msg("%s: want nil, got type %d '%s'", fmt, r->type, r->str ? r->str : "");
    freeReplyObject(r);
}

/* An error reply starting with prefix. */
static inline void h_expect_err(redisContext *c, const char *prefix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    if (r->type != REDIS_REPLY_ERROR || strncmp(r->str, prefix, strlen(prefix)) != 0)
        fail_msg("%s: want -%s..., got type %d '%s'", fmt, prefix, r->type, r->str ? r->str : "");
    freeReplyObject(r);
}

/* An array whose elements are the given strings, in order (NULL-terminated). */
static inline void h_expect_array(redisContext *c, const char *const *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    size_t n = 0;
    while (want[n])
        n++;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n)
        fail_msg("%s: want an array of %zu, got type %d with %zu", fmt, n, r->type, r->elements);
    for (size_t i = 0; i < n; i++) {
        redisReply *e = r->element[i];
        if (e->type == REDIS_REPLY_NIL && strcmp(want[i], "(nil)") == 0)
            continue;
        char num[32];
        const char *got = e->str;
        if (e->type == REDIS_REPLY_INTEGER) {
            snprintf(num, sizeof num, "%lld", e->integer);
            got = num;
        }
        if (!got || strcmp(got, want[i]) != 0)
            fail_msg("%s: element %zu: want '%s', got type %d '%s'", fmt, i, want[i], e->type,
                     e->str ? e->str : "");
    }
    freeReplyObject(r);
}
#define A(...) ((const char *const[]){__VA_ARGS__, NULL})

/* An INFO field (any section) as a number; -1 when absent. */
static inline long long h_info_num(redisContext *c, const char *field)
{
    redisReply *r = redisCommand(c, "INFO everything");
    if (!r || r->type != REDIS_REPLY_STRING)
        fail_msg("INFO: no text reply");
    long long v = -1;
    size_t fl = strlen(field);
    for (const char *p = r->str; p; p = strchr(p, '\n')) {
        p += *p == '\n';
        if (!strncmp(p, field, fl) && p[fl] == ':') {
            v = atoll(p + fl + 1);
            break;
        }
    }
    freeReplyObject(r);
    return v;
}

#endif
