/*
 * test_disk — a full disk. Write commands get Redis's MISCONF error while
 * reads go on, nothing acknowledged is lost, and writes resume by
 * themselves once there is room again.
 *
 * The data folder is a small tmpfs mounted in a mount namespace of this
 * process's own, so the mount goes away with the process whatever happens;
 * without the privilege to make one (not root), or where its mounts cannot
 * be made private (a chroot), the tests are skipped, and
 * say so. A ballast file takes part of the tmpfs: deleting it is the
 * operator freeing space. Values are random bytes, so RocksDB's compression
 * cannot make room.
 */
#include "harness.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#define VLEN 4000
#define MAX_WRITES 20000 /* 80 MB: more than any tmpfs here holds */

static struct server S;
static char data[400], ballast[420];
static char jshm[400]; /* a second tmpfs, for the journal (test_journal_tmpfs_low) */
static bool mounted;
static const char *writeback = "yes"; /* shmkvd's --write-back */

/* Key i's value: random bytes from seed i, so nothing needs keeping. */
static void value_of(int i, char *v)
{
    uint64_t st = 0x9e3779b97f4a7c15ull ^ (uint64_t)(i + 1) * 0xbf58476d1ce4e5b9ull;
    for (int j = 0; j < VLEN; j += 8) {
        uint64_t x = t_rnd(&st);
        memcpy(v + j, &x, VLEN - j < 8 ? (size_t)(VLEN - j) : 8);
    }
}

/* A folder of tag's with a tmpfs of mb MiB as its data folder, ballast_mb
 * of it taken by the ballast. Skips the test if no mount namespace can be
 * had. */
static void disk_prepare(const char *tag, int mb, int ballast_mb)
{
    static bool in_ns;
    if (!in_ns) {
        if (unshare(CLONE_NEWNS) != 0) {
            print_message("test_disk: no mount namespace (%s): skipped\n", strerror(errno));
            skip();
        }
        /* Nothing mounted here may reach the host's namespace: where the
         * mounts cannot be made private (in a chroot "/" is no mount
         * point: EINVAL), nothing is mounted and the test is skipped. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
            print_message("test_disk: cannot make the mounts private (mount --make-rprivate /: "
                          "%s): skipped\n",
                          strerror(errno));
            skip();
        }
        in_ns = true;
    }
    h_prepare(&S, tag);
    snprintf(data, sizeof data, "%s/data", S.dir);
    snprintf(ballast, sizeof ballast, "%s/ballast", data);
    assert_int_equal(mkdir(data, 0700), 0);
    char opts[32];
    snprintf(opts, sizeof opts, "size=%dm", mb);
    if (mount("shmkv-test", data, "tmpfs", 0, opts) != 0) {
        if (errno != EPERM)
            fail_msg("mount tmpfs: %s", strerror(errno));
        print_message("test_disk: no tmpfs may be mounted here (%s): skipped\n", strerror(errno));
        skip();
    }
    mounted = true;
    int fd = open(ballast, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(fallocate(fd, 0, 0, (off_t)ballast_mb << 20), 0);
    close(fd);
}

static int disk_teardown(void **state)
{
    (void)state;
    writeback = "yes";
    h_stop(&S);
    if (mounted) {
        t_tmp_rm_journal(S.dir, "data"); /* a daemon that aborted leaves it */
        umount2(data, MNT_DETACH);
        mounted = false;
    }
    if (jshm[0]) {
        umount2(jshm, MNT_DETACH);
        jshm[0] = '\0';
    }
    if (S.dir[0])
        t_tmp_rmrf(S.dir);
    memset(&S, 0, sizeof S);
    return 0;
}

static void start(const char *min_free)
{
    const char *extra[] = {
        "--min-free-disk", min_free, "--write-buffer-size", "1mb", "--write-back", writeback, NULL};
    h_start_shmkvd_opts(&S, extra);
}

/* SETs k0, k1, ... until a reply is not +OK or the connection fails.
 * Returns how many were acknowledged; *last gets the reply that stopped
 * it (NULL: the connection failed), the caller frees it. */
static int fill(redisContext *c, redisReply **last)
{
    char *v = malloc(VLEN);
    *last = NULL;
    int i = 0;
    for (; i < MAX_WRITES; i++) {
        value_of(i, v);
        redisReply *r = H_CMD(c, "SET k%d %b", i, v, (size_t)VLEN);
        if (!r)
            break;
        if (r->type != REDIS_REPLY_STATUS) {
            *last = r;
            break;
        }
        freeReplyObject(r);
    }
    free(v);
    return i;
}

/* Every one of the n acknowledged values reads back. */
static void check_all(redisContext *c, int n)
{
    char *v = malloc(VLEN);
    for (int i = 0; i < n; i++) {
        value_of(i, v);
        redisReply *r = H_CMD(c, "GET k%d", i);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STRING || r->len != VLEN || memcmp(r->str, v, VLEN) != 0)
            fail_msg("k%d of %d acknowledged: lost or wrong (reply type %d)", i, n, r->type);
        freeReplyObject(r);
    }
    free(v);
}

static long long free_mb(void)
{
    struct statvfs v;
    return statvfs(data, &v) == 0 ? (long long)(v.f_bavail * v.f_frsize >> 20) : -1;
}

/* The end of the daemon's log, for a failure's message. */
static void print_log_tail(void)
{
    char path[300], buf[4096];
    snprintf(path, sizeof path, "%s/server.log", S.dir);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    ssize_t n = pread(fd, buf, sizeof buf - 1,
                      end > (off_t)sizeof buf - 1 ? end - (off_t)sizeof buf + 1 : 0);
    close(fd);
    if (n > 0) {
        buf[n] = '\0';
        print_message("--- server.log (end) ---\n%s\n", buf);
    }
}

static bool info_has(redisContext *c, const char *line)
{
    redisReply *r = H_CMD(c, "INFO persistence");
    assert_non_null(r);
    bool has = r->type == REDIS_REPLY_STRING && strstr(r->str, line) != NULL;
    freeReplyObject(r);
    return has;
}

/* A tmpfs of mb MiB (ballast_mb of it ballast), shmkvd on it with
 * min_free, and SETs until one is refused or the connection fails: the
 * connection, *n acknowledged, *last as fill() gives it. */
static redisContext *start_and_fill(const char *tag, int mb, int ballast_mb, const char *min_free,
                                    int *n, redisReply **last)
{
    disk_prepare(tag, mb, ballast_mb);
    start(min_free);
    redisContext *c = h_connect_port(S.port);
    assert_non_null(c);
    *n = fill(c, last);
    return c;
}

/* Whether SETs are taken again within tries polls, ms apart; false also
 * when the connection fails (the daemon stopped). */
static bool writes_resume(redisContext *c, int tries, int ms)
{
    for (int t = 0; t < tries; t++) {
        redisReply *r = H_CMD(c, "SET probe ok");
        if (!r)
            return false;
        bool ok = r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (ok)
            return true;
        usleep((useconds_t)ms * 1000);
    }
    return false;
}

/* Below min-free-disk, writes are refused before RocksDB meets the full
 * disk; deleting the ballast brings them back, with nothing lost, and a
 * clean shutdown and restart keep everything. */
static void test_min_free_disk(void **state)
{
    (void)state;
    redisReply *last;
    int n;
    redisContext *c = start_and_fill("disk-min", 96, 32, "32mb", &n, &last);
    if (!last) {
        print_log_tail();
        fail_msg("after %d writes: the connection failed (%s)", n, c->errstr);
    }
    if (last->type != REDIS_REPLY_ERROR ||
        strncmp(last->str, "MISCONF Errors writing to RocksDB: No space left on device", 58) != 0)
        fail_msg("after %d writes: want MISCONF, got type %d '%s'", n, last->type,
                 last->str ? last->str : "");
    freeReplyObject(last);
    assert_true(n > 100 && n < MAX_WRITES);
    print_message("test_disk: %d writes acknowledged before MISCONF, %lld MiB free\n", n,
                  free_mb());

    /* As Redis: PING too; a write queued in MULTI aborts the EXEC. */
    h_expect_err(c, "MISCONF", "PING");
    h_expect_status(c, "OK", "MULTI");
    h_expect_err(c, "MISCONF", "SET x y");
    h_expect_status(c, "QUEUED", "GET k0");
    h_expect_err(c, "EXECABORT", "EXEC");
    assert_true(info_has(c, "aof_last_write_status:err"));
    check_all(c, n); /* reads go on */

    assert_int_equal(unlink(ballast), 0);
    bool back = writes_resume(c, 100, 50);
    if (!back) {
        print_log_tail();
        fail_msg("writes refused 5 s after the ballast went: %lld MiB free", free_mb());
    }
    assert_true(info_has(c, "aof_last_write_status:ok"));
    h_expect_status(c, "PONG", "PING");
    check_all(c, n);
    redisFree(c);

    assert_int_equal(h_stop(&S), 0);
    start("32mb");
    c = h_connect_port(S.port);
    assert_non_null(c);
    check_all(c, n);
    h_expect_bulk(c, "ok", "GET probe");
    redisFree(c);
}

/* The same without write-back: commands write RocksDB themselves. */
static void test_min_free_disk_direct(void **state)
{
    writeback = "no";
    test_min_free_disk(state);
}

/* With the check off, RocksDB itself meets the full disk. The flusher's
 * writes fail and write commands get MISCONF, or the daemon stops (Debian's
 * RocksDB asserts when it logs to a file that failed a write:
 * docs/storage.md). Either way, once there is room, a restart has every
 * acknowledged write: the journal kept them. */
static void test_full_disk_loses_nothing(void **state)
{
    (void)state;
    redisReply *last;
    int n;
    redisContext *c = start_and_fill("disk-full", 24, 8, "0", &n, &last);
    assert_true(n > 100 && n < MAX_WRITES);
    if (last) {
        if (last->type != REDIS_REPLY_ERROR || strncmp(last->str, "MISCONF", 7) != 0)
            fail_msg("after %d writes: want MISCONF, got type %d '%s'", n, last->type,
                     last->str ? last->str : "");
        freeReplyObject(last);
    }
    print_message("test_disk: %d writes acknowledged, then %s\n", n,
                  last ? "MISCONF" : "the connection closed");
    assert_int_equal(unlink(ballast), 0);
    if (last) {
        /* RocksDB resumes by itself once it finds room (its file manager
         * looks every 5 s), and so do writes. */
        bool back = writes_resume(c, 150, 100); /* false too if it asserted after all */
        print_message("test_disk: writes %s once the ballast went\n",
                      back ? "resumed" : "did not resume (the daemon stopped)");
        if (back)
            check_all(c, n);
    }
    redisFree(c);
    h_stop(&S); /* a clean exit is not required: RocksDB may assert on the way */
    start("0");
    c = h_connect_port(S.port);
    assert_non_null(c);
    check_all(c, n);
    h_expect_status(c, "OK", "SET probe ok");
    redisFree(c);
}

/* The journal in a tmpfs of its own (journal-shm-dir) that others fill:
 * below 32 MiB free, writes are refused as for a full disk, rather than the
 * daemon stopping when an append fails; they resume once there is room. */
static void test_journal_tmpfs_low(void **state)
{
    (void)state;
    disk_prepare("disk-jshm", 256, 1);
    snprintf(jshm, sizeof jshm, "%s/jshm", S.dir);
    assert_int_equal(mkdir(jshm, 0700), 0);
    if (mount("shmkv-test-jshm", jshm, "tmpfs", 0, "size=80m") != 0)
        fail_msg("mount tmpfs: %s", strerror(errno));
    char b1[420], b2[420];
    snprintf(b1, sizeof b1, "%s/ballast1", jshm);
    snprintf(b2, sizeof b2, "%s/ballast2", jshm);
    int fd = open(b1, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0 && fallocate(fd, 0, 0, 16 << 20) == 0);
    close(fd);
    /* 64 MiB free: room for an 8 MiB overlay and the 32 MiB floor. */
    const char *extra[] = {
        "--min-free-disk", "8mb", "--journal-shm-dir", jshm, "--overlay-max-memory", "8mb", NULL};
    h_start_shmkvd_opts(&S, extra);
    redisContext *c = h_connect_port(S.port);
    assert_non_null(c);
    assert_true(info_has(c, "writeback_journal_shm:1"));
    h_expect_status(c, "OK", "SET before ok");

    fd = open(b2, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0 && fallocate(fd, 0, 0, 40 << 20) == 0);
    close(fd);
    redisReply *last;
    int n = fill(c, &last);
    if (!last) {
        print_log_tail();
        fail_msg("after %d writes: %s", n, n == MAX_WRITES ? "no MISCONF" : c->errstr);
    }
    if (last->type != REDIS_REPLY_ERROR ||
        strncmp(last->str, "MISCONF Errors writing the journal: No space left on device", 59) != 0)
        fail_msg("after %d writes: want MISCONF, got type %d '%s'", n, last->type,
                 last->str ? last->str : "");
    freeReplyObject(last);
    print_message("test_disk: journal tmpfs: %d writes acknowledged before MISCONF\n", n);
    check_all(c, n); /* reads go on */

    assert_int_equal(unlink(b2), 0);
    if (!writes_resume(c, 100, 50)) {
        print_log_tail();
        fail_msg("writes refused 5 s after the journal's tmpfs had room again");
    }
    check_all(c, n);
    redisFree(c);
    assert_int_equal(h_stop(&S), 0);
    h_start_shmkvd_opts(&S, extra);
    c = h_connect_port(S.port);
    assert_non_null(c);
    check_all(c, n);
    h_expect_bulk(c, "ok", "GET probe");
    redisFree(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_min_free_disk, disk_teardown),
        cmocka_unit_test_teardown(test_min_free_disk_direct, disk_teardown),
        cmocka_unit_test_teardown(test_full_disk_loses_nothing, disk_teardown),
        cmocka_unit_test_teardown(test_journal_tmpfs_low, disk_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
