/*
 * srv_lat — latency measurements, as Redis 7 offers them:
 *
 *   - per-command histograms of call durations (latency-tracking), read by
 *     INFO latencystats (chosen percentiles) and LATENCY HISTOGRAM
 *     (cumulative counts at powers of two);
 *   - the latency monitor (latency-monitor-threshold): for each event class
 *     ("command", "fast-command", and the loop's own stages: "expire-cycle",
 *     "journal-write", "writeback-housekeeping", "keyf-rebuild"), the last
 *     160 seconds in which something took at least the threshold, read by
 *     LATENCY LATEST, HISTORY, GRAPH and DOCTOR.
 *
 * A histogram is log-linear: exact below 128 ns, then 64 buckets per power
 * of two, so a percentile is within 1.6% (Redis's HdrHistogram keeps two
 * significant digits). Recording is an index computation and an increment.
 * No locks: the event loop alone calls these.
 *
 * And the clock that times each command: two readings per command, so it
 * must cost little. Where the kernel itself keeps time by the CPU's
 * invariant time-stamp counter, a reading is one RDTSC (under 20 ns on
 * the 2-CPU VM against about 50 for clock_gettime: docs/daemon.md);
 * elsewhere it is CLOCK_MONOTONIC.
 */
#ifndef SHMKV_SRV_LAT_H
#define SHMKV_SRV_LAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* ---- the command clock ---- */

struct srv_lat_clock {
    bool tsc;      /* readings are time-stamp counter ticks, not ns */
    uint64_t mult; /* ns per tick, times 2^32 */
};
extern struct srv_lat_clock srv_lat_clock;

/* Chooses the clock: the time-stamp counter when allow_tsc is set, the
 * machine is x86-64, /proc/cpuinfo names constant_tsc and nonstop_tsc,
 * and the kernel's clocksource is "tsc" (it found the counters in step
 * across CPUs); its rate is measured against CLOCK_MONOTONIC over about
 * 5 ms, once. Returns whether the counter is in use. */
bool srv_lat_clock_init(bool allow_tsc);

/* A reading, in the clock's own unit. */
static inline uint64_t srv_lat_clock_now(void)
{
#if defined(__x86_64__)
    if (srv_lat_clock.tsc)
        return __rdtsc();
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The ns from reading a to the later reading b; 0 if b reads earlier,
 * as counters of two CPUs a few ticks apart may. */
static inline uint64_t srv_lat_clock_ns(uint64_t a, uint64_t b)
{
    if (b <= a)
        return 0;
    if (!srv_lat_clock.tsc)
        return b - a;
    return (uint64_t)(((unsigned __int128)(b - a) * srv_lat_clock.mult) >> 32);
}

/* ---- histograms ---- */

#define SRV_LAT_BUCKETS (128 + 33 * 64) /* up to 2^40 ns, about 18 minutes */

struct srv_lat_hist {
    uint64_t total;
    uint64_t count[SRV_LAT_BUCKETS];
};

/* Counts one duration in ns into *h, allocating the histogram on first
 * use (it is owned by *h; srv_lat_hist_free releases it). */
void srv_lat_hist_record(struct srv_lat_hist **h, uint64_t ns);
void srv_lat_hist_free(struct srv_lat_hist **h);
/* The duration in ns at or below which pct percent of the recorded ones
 * lie: the top of the bucket that reaches them. 0 for an empty one. */
uint64_t srv_lat_hist_percentile(const struct srv_lat_hist *h, double pct);
/* How many durations were under 2^k ns. */
uint64_t srv_lat_hist_below_pow2(const struct srv_lat_hist *h, unsigned k);

/* ---- the latency monitor ---- */

#define SRV_LAT_SAMPLES 160

struct srv_lat_sample {
    int64_t time; /* unix seconds */
    uint32_t ms;
};

struct srv_lat_event {
    char name[32];
    struct srv_lat_sample s[SRV_LAT_SAMPLES];
    unsigned next, n; /* ring: the next slot, how many are filled */
    uint32_t max;     /* the highest since the event was reset */
};

/* Records that event took ms at time now (unix seconds): a sample in the
 * same second as the previous one raises it instead. At most 16 events. */
void srv_lat_add(const char *event, uint32_t ms, int64_t now);
/* The events with samples, in the order they first happened. */
size_t srv_lat_nevents(void);
const struct srv_lat_event *srv_lat_event_at(size_t i);
const struct srv_lat_event *srv_lat_find(const char *event, size_t n);
/* The i-th sample of e, oldest first. */
const struct srv_lat_sample *srv_lat_sample_at(const struct srv_lat_event *e, size_t i);
/* Forgets one event's samples (1 if it had any) or, with NULL, all
 * events' (their number). */
size_t srv_lat_reset(const char *event, size_t n);

#endif
