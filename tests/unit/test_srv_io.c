/*
 * test_srv_io — the reply-writing helpers: every job's bytes reach its
 * socket, in order, over many hand-offs of 1 to 40 jobs with 4 threads,
 * with pauses between some so the helpers sleep and must be woken; a full
 * socket reports EAGAIN and how much went; a closed peer EPIPE, a bad
 * descriptor EBADF; fewer jobs than threads; stopping and starting again.
 * A lost wake-up hangs, so an alarm fails the test instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "srv_io.h"
#include "t_rnd.h"

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
}

/* Reads exactly n bytes from fd (blocking). */
static void read_all(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        assert_true(r > 0);
        got += (size_t)r;
    }
}

static void test_io_writes_all(void **state)
{
    (void)state;
    assert_int_equal(srv_io_start(4), 4);
    assert_int_equal(srv_io_threads(), 4);
    enum { MAXJ = 40, MAXLEN = 4096 };
    uint64_t r = 0x696f;
    static char bufs[MAXJ][MAXLEN], back[MAXLEN];
    struct srv_io_job jobs[MAXJ];
    int sv[MAXJ][2];
    for (int round = 0; round < 300; round++) {
        size_t n = 1 + t_rnd(&r) % MAXJ;
        for (size_t i = 0; i < n; i++) {
            pair(sv[i]);
            size_t len = 1 + t_rnd(&r) % MAXLEN;
            for (size_t b = 0; b < len; b++)
                bufs[i][b] = (char)t_rnd(&r);
            jobs[i] = (struct srv_io_job){
                .fd = sv[i][0], .buf = bufs[i], .len = len, .done = 12345, .err = 99};
        }
        srv_io_write(jobs, n);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(jobs[i].err, 0);
            assert_int_equal(jobs[i].done, jobs[i].len);
            read_all(sv[i][1], back, jobs[i].len);
            assert_memory_equal(back, bufs[i], jobs[i].len);
            close(sv[i][0]);
            close(sv[i][1]);
        }
        if (round % 10 == 0) /* past the helpers' spin: they sleep */
            nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
    srv_io_stop();
    assert_int_equal(srv_io_threads(), 1);
}

static void test_io_errors(void **state)
{
    (void)state;
    assert_int_equal(srv_io_start(3), 3);
    int full[2], gone[2], fine[2];
    pair(full);
    pair(gone);
    pair(fine);
    close(gone[1]);
    size_t big = 8 << 20;
    char *buf = malloc(big);
    memset(buf, 'x', big);
    struct srv_io_job jobs[4] = {
        {.fd = full[0], .buf = buf, .len = big},
        {.fd = gone[0], .buf = buf, .len = 10},
        {.fd = -1, .buf = buf, .len = 10},
        {.fd = fine[0], .buf = "+OK\r\n", .len = 5},
    };
    srv_io_write(jobs, 4);
    assert_int_equal(jobs[0].err, EAGAIN);
    assert_true(jobs[0].done > 0 && jobs[0].done < big);
    assert_int_equal(jobs[1].err, EPIPE);
    assert_int_equal(jobs[1].done, 0);
    assert_int_equal(jobs[2].err, EBADF);
    assert_int_equal(jobs[3].err, 0);
    assert_int_equal(jobs[3].done, 5);
    char back[5];
    read_all(fine[1], back, 5);
    assert_memory_equal(back, "+OK\r\n", 5);

    /* Fewer jobs than threads: the idle helpers' shares are empty. (One
     * socket per job: jobs run at once, so two on one socket could land
     * in either order.) */
    int other[2];
    pair(other);
    struct srv_io_job two[2] = {{.fd = fine[0], .buf = "ab", .len = 2},
                                {.fd = other[0], .buf = "cd", .len = 2}};
    srv_io_write(two, 2);
    read_all(fine[1], back, 2);
    assert_memory_equal(back, "ab", 2);
    read_all(other[1], back, 2);
    assert_memory_equal(back, "cd", 2);
    srv_io_stop();

    /* Alone, and started again: the new helpers take the next hand-off. */
    struct srv_io_job one = {.fd = fine[0], .buf = "ef", .len = 2};
    srv_io_write(&one, 1);
    assert_int_equal(one.done, 2);
    assert_int_equal(srv_io_start(2), 2);
    srv_io_write(two, 2);
    assert_int_equal(two[0].done + two[1].done, 4);
    read_all(fine[1], back, 4);
    assert_memory_equal(back, "efab", 4);
    read_all(other[1], back, 2);
    assert_memory_equal(back, "cd", 2);
    close(other[0]);
    close(other[1]);
    srv_io_stop();
    free(buf);
    for (int i = 0; i < 2; i++) {
        close(full[i]);
        close(fine[i]);
    }
    close(gone[0]);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    alarm(120); /* a lost wake-up hangs srv_io_write */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_io_writes_all),
        cmocka_unit_test(test_io_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
