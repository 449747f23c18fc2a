/*
 * srv_lat — latency histograms and the latency monitor. See srv_lat.h.
 */
#include "srv_lat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_mem.h"

/* ---- the command clock ---- */

struct srv_lat_clock srv_lat_clock;

#if defined(__x86_64__)
/* Whether the first line of path that starts with key holds every word
 * of words (NULL-terminated), each as a whole word. */
static bool file_has_words(const char *path, const char *key, const char *const *words)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[8192];
    bool found = false, all = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, strlen(key)) != 0)
            continue;
        found = all = true;
        for (const char *const *w = words; *w && all; w++) {
            size_t n = strlen(*w);
            const char *p = line;
            bool hit = false;
            while (!hit && (p = strstr(p, *w))) {
                bool starts = p == line || p[-1] == ' ' || p[-1] == '\t';
                bool ends = p[n] == ' ' || p[n] == '\n' || p[n] == '\t' || p[n] == '\0';
                hit = starts && ends;
                p += n;
            }
            all = hit;
        }
    }
    fclose(f);
    return all;
}

/* A CLOCK_MONOTONIC reading and the counter at that moment: the middle of
 * two counter readings around it, taken again while those lie far apart
 * (the thread was preempted between them). False if they always did. */
static bool clock_pair(uint64_t *ticks, uint64_t *ns)
{
    for (int i = 0; i < 16; i++) {
        struct timespec ts;
        uint64_t t0 = __rdtsc();
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t t1 = __rdtsc();
        if (t1 > t0 && t1 - t0 < 20000) { /* under 10 µs at 2 GHz */
            *ticks = t0 + (t1 - t0) / 2;
            *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
            return true;
        }
    }
    return false;
}
#endif

bool srv_lat_clock_init(bool allow_tsc)
{
    srv_lat_clock.tsc = false;
    srv_lat_clock.mult = 0;
#if defined(__x86_64__)
    static const char *const flags[] = {"constant_tsc", "nonstop_tsc", NULL};
    static const char *const source[] = {"tsc", NULL};
    if (!allow_tsc || !file_has_words("/proc/cpuinfo", "flags", flags) ||
        !file_has_words("/sys/devices/system/clocksource/clocksource0/current_clocksource", "",
                        source))
        return false;
    /* The rate over 5 ms, between two pairs each known to within a few µs:
     * off by a tenth of a percent at most. A counter outside 100 MHz to
     * 20 GHz is not one to trust. */
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 5000000};
    uint64_t ta, na, tb, nb;
    if (!clock_pair(&ta, &na))
        return false;
    nanosleep(&pause, NULL);
    if (!clock_pair(&tb, &nb) || tb <= ta || nb <= na)
        return false;
    double ghz = (double)(tb - ta) / (double)(nb - na);
    if (ghz < 0.1 || ghz > 20)
        return false;
    srv_lat_clock.mult = (uint64_t)((double)(1ull << 32) / ghz);
    srv_lat_clock.tsc = true;
    return true;
#else
    (void)allow_tsc;
    return false;
#endif
}

/* ---- histograms ---- */

/* Bucket of v: v itself below 128; above, 64 per power of two. */
static size_t bucket_of(uint64_t v)
{
    if (v < 128)
        return (size_t)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* 2^e <= v */
    if (e > 39)
        return SRV_LAT_BUCKETS - 1;
    return 128 + (size_t)(e - 7) * 64 + (size_t)((v >> (e - 6)) & 63);
}

/* The largest value bucket b holds. */
static uint64_t bucket_top(size_t b)
{
    if (b < 128)
        return b;
    unsigned e = 7 + (unsigned)((b - 128) / 64);
    uint64_t sub = (b - 128) % 64;
    return ((64 + sub + 1) << (e - 6)) - 1;
}

void srv_lat_hist_record(struct srv_lat_hist **h, uint64_t ns)
{
    if (!*h) {
        *h = kv_xmalloc(sizeof **h);
        memset(*h, 0, sizeof **h);
    }
    (*h)->count[bucket_of(ns)]++;
    (*h)->total++;
}

void srv_lat_hist_free(struct srv_lat_hist **h)
{
    free(*h);
    *h = NULL;
}

uint64_t srv_lat_hist_percentile(const struct srv_lat_hist *h, double pct)
{
    if (!h || !h->total)
        return 0;
    /* The rank of the value asked for, 1-based: at least the first. */
    double want = pct / 100.0 * (double)h->total;
    uint64_t rank = (uint64_t)want;
    if ((double)rank < want)
        rank++;
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t b = 0; b < SRV_LAT_BUCKETS; b++) {
        seen += h->count[b];
        if (seen >= rank)
            return bucket_top(b);
    }
    return bucket_top(SRV_LAT_BUCKETS - 1);
}

uint64_t srv_lat_hist_below_pow2(const struct srv_lat_hist *h, unsigned k)
{
    if (!h)
        return 0;
    if (k >= 40)
        return h->total;
    /* 2^k starts a bucket for every k, so the count is exact. */
    size_t end = bucket_of(1ull << k);
    uint64_t n = 0;
    for (size_t b = 0; b < end; b++)
        n += h->count[b];
    return n;
}

/* ---- the latency monitor ---- */

#define MAX_EVENTS 16
static struct srv_lat_event events[MAX_EVENTS];
static size_t nevents;

const struct srv_lat_event *srv_lat_find(const char *event, size_t n)
{
    for (size_t i = 0; i < nevents; i++)
        if (strlen(events[i].name) == n && !memcmp(events[i].name, event, n))
            return &events[i];
    return NULL;
}

void srv_lat_add(const char *event, uint32_t ms, int64_t now)
{
    struct srv_lat_event *e = (struct srv_lat_event *)srv_lat_find(event, strlen(event));
    if (!e) {
        if (nevents == MAX_EVENTS)
            return;
        e = &events[nevents++];
        memset(e, 0, sizeof *e);
        strncpy(e->name, event, sizeof e->name - 1);
    }
    if (ms > e->max)
        e->max = ms;
    struct srv_lat_sample *prev =
        e->n ? &e->s[(e->next + SRV_LAT_SAMPLES - 1) % SRV_LAT_SAMPLES] : NULL;
    if (prev && prev->time == now) {
        if (ms > prev->ms)
            prev->ms = ms;
        return;
    }
    e->s[e->next] = (struct srv_lat_sample){now, ms};
    e->next = (e->next + 1) % SRV_LAT_SAMPLES;
    if (e->n < SRV_LAT_SAMPLES)
        e->n++;
}

size_t srv_lat_nevents(void)
{
    return nevents;
}

const struct srv_lat_event *srv_lat_event_at(size_t i)
{
    return i < nevents ? &events[i] : NULL;
}

const struct srv_lat_sample *srv_lat_sample_at(const struct srv_lat_event *e, size_t i)
{
    size_t first = (e->next + SRV_LAT_SAMPLES - e->n) % SRV_LAT_SAMPLES;
    return &e->s[(first + i) % SRV_LAT_SAMPLES];
}

size_t srv_lat_reset(const char *event, size_t n)
{
    if (!event) {
        size_t had = nevents;
        nevents = 0;
        return had;
    }
    const struct srv_lat_event *e = srv_lat_find(event, n);
    if (!e)
        return 0;
    size_t i = (size_t)(e - events);
    memmove(&events[i], &events[i + 1], (nevents - i - 1) * sizeof events[0]);
    nevents--;
    return 1;
}
