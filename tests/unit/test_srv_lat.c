/*
 * test_srv_lat — latency histograms against exact order statistics of
 * seeded random durations (every percentile within the 1.6% the buckets
 * promise, never below the exact value), exact counts at powers of two,
 * and the latency monitor's ring: samples in one second merge, the 161st
 * pushes out the first, RESET forgets. And the command clock, with and
 * without the time-stamp counter, against CLOCK_MONOTONIC.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "srv_lat.h"
#include "t_rnd.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_lat_percentiles(void **state)
{
    (void)state;
    enum { N = 20000 };
    uint64_t *v = malloc(N * sizeof *v), r = 0x6c6174;
    for (int round = 0; round < 4; round++) {
        struct srv_lat_hist *h = NULL;
        assert_int_equal(srv_lat_hist_percentile(h, 50), 0);
        for (int i = 0; i < N; i++) {
            /* Log-uniform from 1 ns to about 17 s: every bucket range. */
            unsigned bits = 1 + (unsigned)(t_rnd(&r) % 34);
            v[i] = (t_rnd(&r) & ((1ull << bits) - 1)) | 1;
            srv_lat_hist_record(&h, v[i]);
        }
        qsort(v, N, sizeof *v, cmp_u64);
        assert_int_equal(h->total, N);
        static const double pcts[] = {0, 1, 50, 90, 99, 99.9, 99.99, 100};
        for (size_t i = 0; i < sizeof pcts / sizeof pcts[0]; i++) {
            size_t rank = (size_t)(pcts[i] / 100 * N + 0.999999);
            if (rank < 1)
                rank = 1;
            uint64_t exact = v[rank - 1], got = srv_lat_hist_percentile(h, pcts[i]);
            if (got < exact || (double)got > (double)exact * 1.016 + 1)
                fail_msg("p%g: %llu, exact %llu", pcts[i], (unsigned long long)got,
                         (unsigned long long)exact);
        }
        for (unsigned k = 0; k < 40; k++) {
            uint64_t below = 0;
            for (int i = 0; i < N; i++)
                below += v[i] < (1ull << k);
            assert_int_equal(srv_lat_hist_below_pow2(h, k), below);
        }
        srv_lat_hist_free(&h);
        assert_null(h);
    }
    free(v);
}

static void test_lat_monitor(void **state)
{
    (void)state;
    assert_int_equal(srv_lat_nevents(), 0);
    srv_lat_add("command", 5, 1000);
    srv_lat_add("command", 9, 1000); /* the same second: raises the sample */
    srv_lat_add("command", 7, 1000);
    srv_lat_add("fast-command", 2, 1001);
    assert_int_equal(srv_lat_nevents(), 2);
    const struct srv_lat_event *e = srv_lat_find("command", 7);
    assert_non_null(e);
    assert_int_equal(e->n, 1);
    assert_int_equal(srv_lat_sample_at(e, 0)->ms, 9);
    assert_int_equal(e->max, 9);
    for (int t = 1; t <= 200; t++)
        srv_lat_add("command", (uint32_t)(t % 50), 1000 + t);
    assert_int_equal(e->n, SRV_LAT_SAMPLES);
    assert_int_equal(srv_lat_sample_at(e, 0)->time, 1000 + 200 - SRV_LAT_SAMPLES + 1);
    assert_int_equal(srv_lat_sample_at(e, SRV_LAT_SAMPLES - 1)->time, 1200);
    assert_int_equal(e->max, 49);
    assert_int_equal(srv_lat_reset("nosuch", 6), 0);
    assert_int_equal(srv_lat_reset("command", 7), 1);
    assert_int_equal(srv_lat_nevents(), 1);
    assert_string_equal(srv_lat_event_at(0)->name, "fast-command");
    srv_lat_add("expire-cycle", 3, 2000);
    assert_int_equal(srv_lat_reset(NULL, 0), 2);
    assert_int_equal(srv_lat_nevents(), 0);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The clock over a 30 ms sleep agrees with CLOCK_MONOTONIC within 1% in
 * one of five tries (a try that is preempted between its two readings
 * reads long), whichever clock init chose; time read backwards is 0. */
static void test_lat_clock(void **state)
{
    (void)state;
    for (int allow = 0; allow < 2; allow++) {
        bool tsc = srv_lat_clock_init(allow);
        assert_true(tsc == srv_lat_clock.tsc);
        if (!allow)
            assert_false(tsc);
        bool close = false;
        for (int t = 0; t < 5 && !close; t++) {
            uint64_t a = srv_lat_clock_now(), ma = mono_ns();
            struct timespec pause = {.tv_sec = 0, .tv_nsec = 30000000};
            nanosleep(&pause, NULL);
            uint64_t b = srv_lat_clock_now(), mb = mono_ns();
            uint64_t got = srv_lat_clock_ns(a, b), want = mb - ma;
            assert_int_equal(srv_lat_clock_ns(b, a), 0);
            uint64_t off = got > want ? got - want : want - got;
            close = want >= 30000000 && off <= want / 100;
        }
        assert_true(close);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lat_percentiles),
        cmocka_unit_test(test_lat_monitor),
        cmocka_unit_test(test_lat_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
