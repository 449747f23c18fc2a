/*
 * test_srv_service — shmkvd as a service: systemd's notify protocol
 * (supervised systemd), SIGHUP survived, and the open-file limit: under
 * ulimit -n 64 maxclients is lowered to what fits, clients beyond it are
 * refused with Redis's error, and the loop never spins.
 */
#include "harness.h"

#include "enc.h"
#include "kv_crc.h"

#include <sys/socket.h>
#include <sys/un.h>

/* The process's CPU time so far, in clock ticks. */
static long cpu_ticks(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* past the command's name */
    long utime = 0, stime = 0;
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime, &stime) != 2)
        return -1;
    return utime + stime;
}

/* supervised systemd: STATUS while it opens its storage, then READY=1
 * once it serves, and STOPPING=1 when SIGTERM stops it, each a datagram
 * to NOTIFY_SOCKET. */
static void test_srv_service_notify(void **state)
{
    (void)state;
    struct server t;
    h_prepare(&t, "notify");
    char path[300];
    snprintf(path, sizeof path, "%s/notify", t.dir);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof sa.sun_path);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setenv("NOTIFY_SOCKET", path, 1);
    h_start_shmkvd_opts(&t, A("--supervised", "systemd"));
    unsetenv("NOTIFY_SOCKET");
    char got[4096] = "";
    size_t used = 0;
    while (!strstr(got, "READY=1")) {
        ssize_t n = recv(fd, got + used, sizeof got - used - 2, 0);
        if (n <= 0)
            fail_msg("no READY=1 from shmkvd; got:\n%s", got);
        used += (size_t)n;
        got[used++] = '\n';
        got[used] = '\0';
    }
    assert_non_null(strstr(got, "STATUS=Opening storage"));
    assert_true(strstr(got, "STATUS=Opening storage") < strstr(got, "READY=1"));
    redisContext *c = h_connect_port(t.port);
    h_expect_status(c, "PONG", "PING");
    h_expect_array(c, A("supervised", "systemd"), "CONFIG GET supervised");
    redisFree(c);
    assert_int_equal(h_stop(&t), 0);
    char last[256];
    ssize_t n = recv(fd, last, sizeof last - 1, 0);
    assert_true(n > 0);
    last[n] = '\0';
    assert_string_equal(last, "STOPPING=1");
    close(fd);
    h_destroy(&t);
}

/* SIGHUP does not stop the daemon (Redis ignores it too). */
static void test_srv_service_sighup(void **state)
{
    (void)state;
    struct server t;
    h_start_shmkvd(&t);
    kill(t.pid, SIGHUP);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    redisContext *c = h_connect_port(t.port);
    assert_non_null(c);
    h_expect_status(c, "PONG", "PING");
    redisFree(c);
    assert_int_equal(h_stop(&t), 0);
    h_destroy(&t);
}

/* A start whose shared-memory journal is gone while the durable mark says
 * acknowledged writes were in it: the log says so, and INFO. The lost
 * writes are staged by writing the mark past what the last run made. */
static void test_srv_service_journal_loss(void **state)
{
    (void)state;
    struct server t;
    h_start_shmkvd(&t);
    redisContext *c = h_connect_port(t.port);
    assert_non_null(c);
    assert_true(h_info_num(c, "writeback_journal_shm") == 1);
    for (int i = 0; i < 5; i++)
        freeReplyObject(redisCommand(c, "SET jl:%d v", i));
    long long last = h_info_num(c, "writeback_last_seq");
    assert_true(last >= 5);
    assert_int_equal(h_info_num(c, "writeback_lost_sets"), 0);
    redisFree(c);
    assert_int_equal(h_stop(&t), 0);
    char rec[12], path[400];
    enc_put_u64(rec, (uint64_t)last + 7);
    enc_put_u32(rec + 8, kv_crc32c(0, rec, 8));
    snprintf(path, sizeof path, "%s/data/journal-acked", t.dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(rec, 1, sizeof rec, f), sizeof rec);
    fclose(f);
    h_start_shmkvd_opts(&t, NULL);
    c = h_connect_port(t.port);
    assert_non_null(c);
    assert_int_equal(h_info_num(c, "writeback_lost_sets"), 7);
    h_expect_bulk(c, "v", "GET jl:4"); /* what RocksDB had is there */
    char log[8192];
    snprintf(path, sizeof path, "%s/server.log", t.dir);
    h_read_file(path, log, sizeof log);
    assert_non_null(strstr(log, "WRITES LOST"));
    redisFree(c);
    assert_int_equal(h_stop(&t), 0);
    h_destroy(&t);
}

/* Under ulimit -n 64, maxclients is lowered to what fits beside the
 * daemon's own files; 60 clients at once get PONG up to it and Redis's
 * error beyond it; the loop uses almost no CPU meanwhile and after; and
 * CONFIG SET maxclients past the limit is refused with Redis's text. */
static void test_srv_service_fd_limit(void **state)
{
    (void)state;
    struct server t;
    h_prepare(&t, "fdlimit");
    char port[16], data[300];
    snprintf(port, sizeof port, "%d", t.port);
    snprintf(data, sizeof data, "%s/data", t.dir);
    char *const argv[] = {"/bin/sh",   "-c",           "ulimit -n 64 && exec \"$0\" \"$@\"",
                          SHMKVD_PATH, "--port",       port,
                          "--bind",    "127.0.0.1",    "--dir",
                          data,        "--unixsocket", t.sock,
                          NULL};
    h_spawn(&t, argv);
    redisContext *c = h_connect_port(t.port);
    redisReply *r = H_CMD(c, "CONFIG GET maxclients");
    long maxclients = atol(r->element[1]->str);
    freeReplyObject(r);
    assert_true(maxclients >= 1 && maxclients < 64);
    long before = cpu_ticks(t.pid);
    enum { N = 60 };
    int fds[N], pong = 0, refused = 0;
    for (int i = 0; i < N; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in in = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)t.port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        assert_int_equal(connect(fds[i], (struct sockaddr *)&in, sizeof in), 0);
        assert_int_equal(write(fds[i], "PING\r\n", 6), 6);
    }
    for (int i = 0; i < N; i++) {
        struct timeval tv = {5, 0};
        setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char buf[128];
        ssize_t n = read(fds[i], buf, sizeof buf - 1);
        buf[n > 0 ? n : 0] = '\0';
        pong += strcmp(buf, "+PONG\r\n") == 0;
        refused += strcmp(buf, "-ERR max number of clients reached\r\n") == 0;
    }
    assert_int_equal(pong + refused, N);
    assert_int_equal(pong, maxclients - 1); /* c is a client too */
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL); /* the 60 still open, most of them closed by the daemon */
    long after = cpu_ticks(t.pid);
    assert_true(before >= 0 && after - before < 50); /* under half a second, not a spin */
    for (int i = 0; i < N; i++)
        close(fds[i]);
    h_expect_err(c,
                 "ERR CONFIG SET failed (possibly related to argument 'maxclients') - The "
                 "operating system is not able to handle the specified number of clients",
                 "CONFIG SET maxclients 10000");
    h_expect_array(c, A("port", port), "CONFIG GET port"); /* still serving */
    redisFree(c);
    assert_int_equal(h_stop(&t), 0);
    char log[300], text[8192];
    snprintf(log, sizeof log, "%s/server.log", t.dir);
    h_read_file(log, text, sizeof text);
    assert_non_null(strstr(text, "maxclients is lowered to"));
    h_destroy(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_srv_service_notify),
        cmocka_unit_test(test_srv_service_sighup),
        cmocka_unit_test(test_srv_service_fd_limit),
        cmocka_unit_test(test_srv_service_journal_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
