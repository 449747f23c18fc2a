/*
 * cmd_latency — LATENCY: the latency monitor's events (LATEST, HISTORY,
 * RESET, GRAPH, DOCTOR) and the per-command histograms (HISTOGRAM).
 */
#include "cmd.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kv_mem.h"
#include "srv_lat.h"

/* ---- LATENCY ---- */

static void latency_doctor(struct conn *c)
{
    struct resp_buf b;
    resp_buf_init(&b);
    char line[512];
    int n;
    if (!srv.conf.latency_monitor_threshold) {
        n = snprintf(line, sizeof line,
                     "The latency monitor is off (latency-monitor-threshold is 0), so there is "
                     "nothing to analyse. CONFIG SET latency-monitor-threshold <milliseconds> "
                     "turns it on: every command, and every active expiry cycle, that takes at "
                     "least that long is then recorded.\n");
        resp_buf_append(&b, line, (size_t)n);
    } else if (!srv_lat_nevents()) {
        n = snprintf(line, sizeof line,
                     "Nothing took %d ms or more since the latency monitor was turned on or "
                     "reset.\n",
                     srv.conf.latency_monitor_threshold);
        resp_buf_append(&b, line, (size_t)n);
    } else {
        n = snprintf(line, sizeof line, "Latency spikes of %d ms or more, by event:\n\n",
                     srv.conf.latency_monitor_threshold);
        resp_buf_append(&b, line, (size_t)n);
        for (size_t i = 0; i < srv_lat_nevents(); i++) {
            const struct srv_lat_event *e = srv_lat_event_at(i);
            uint64_t sum = 0;
            uint32_t hi = 0;
            for (size_t j = 0; j < e->n; j++) {
                const struct srv_lat_sample *x = srv_lat_sample_at(e, j);
                sum += x->ms;
                if (x->ms > hi)
                    hi = x->ms;
            }
            n = snprintf(line, sizeof line,
                         "%s: %u seconds with a spike in the last %d recorded, average %llu ms, "
                         "highest %u ms (highest since reset %u ms).\n",
                         e->name, e->n, SRV_LAT_SAMPLES,
                         (unsigned long long)(sum / (e->n ? e->n : 1)), hi, e->max);
            resp_buf_append(&b, line, (size_t)n);
            const char *advice =
                !strcmp(e->name, "command")
                    ? "  Slow commands: SLOWLOG GET names them. Commands over large collections "
                      "(KEYS, SMEMBERS, LRANGE 0 -1, SORT) take time in proportion to them.\n"
                : !strcmp(e->name, "fast-command")
                    ? "  Commands that take constant time were slow: the host was short of CPU "
                      "(other processes, RocksDB's compactions on the same cores) or memory was "
                      "paged out.\n"
                    : "  Many keys expired at once: spread expiry times (EXPIRE with some "
                      "randomness) to spread the work.\n";
            resp_buf_append(&b, advice, strlen(advice));
        }
    }
    resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
    resp_buf_free(&b);
}

/* An event's samples as a chart: one column per sample, oldest first, as
 * tall as its latency against the highest shown. */
static void latency_graph(struct conn *c, const struct srv_lat_event *e)
{
    enum { ROWS = 6 };
    struct resp_buf b;
    resp_buf_init(&b);
    uint32_t hi = 0, lo = UINT32_MAX;
    for (size_t j = 0; j < e->n; j++) {
        uint32_t ms = srv_lat_sample_at(e, j)->ms;
        hi = ms > hi ? ms : hi;
        lo = ms < lo ? ms : lo;
    }
    char line[SRV_LAT_SAMPLES + 128];
    int n = snprintf(line, sizeof line, "%s - high %u ms, low %u ms (all time high %u ms)\n",
                     e->name, hi, lo, e->max);
    resp_buf_append(&b, line, (size_t)n);
    memset(line, '-', e->n);
    line[e->n] = '\n';
    resp_buf_append(&b, line, e->n + 1);
    for (int row = ROWS; row >= 1; row--) {
        for (size_t j = 0; j < e->n; j++) {
            uint32_t ms = srv_lat_sample_at(e, j)->ms;
            unsigned h = hi ? (unsigned)(((uint64_t)ms * ROWS + hi - 1) / hi) : 0;
            line[j] = h >= (unsigned)row ? '#' : row == 1 ? '_' : ' ';
        }
        line[e->n] = '\n';
        resp_buf_append(&b, line, e->n + 1);
    }
    int64_t now = (int64_t)(srv_mstime() / 1000);
    n = snprintf(line, sizeof line, "oldest %llds ago, newest %llds ago\n",
                 (long long)(now - srv_lat_sample_at(e, 0)->time),
                 (long long)(now - srv_lat_sample_at(e, e->n - 1)->time));
    resp_buf_append(&b, line, (size_t)n);
    resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
    resp_buf_free(&b);
}

/* LATENCY LATEST | HISTORY event | RESET [event ...] | GRAPH event |
 * DOCTOR | HISTOGRAM [command ...] | HELP */
void cmd_latency(struct conn *c)
{
    static const struct cmd_subcommand subs[] = {{"latest", 2}, {"history", 3}, {"reset", -2},
                                                 {"graph", 3},  {"doctor", 2},  {"histogram", -2},
                                                 {"help", 2},   {NULL, 0}};
    int i = cmd_subcommand(c, subs, "latency");
    if (i < 0)
        return;
    const struct srv_lat_event *e = c->argc > 2 ? srv_lat_find(c->argv[2].p, c->argv[2].n) : NULL;
    switch (i) {
    case 0: /* LATEST */
        resp_array(OUT(c), srv_lat_nevents());
        for (size_t j = 0; j < srv_lat_nevents(); j++) {
            const struct srv_lat_event *x = srv_lat_event_at(j);
            const struct srv_lat_sample *last = srv_lat_sample_at(x, x->n - 1);
            resp_array(OUT(c), 4);
            resp_bulk_cstr(OUT(c), x->name);
            resp_int(OUT(c), last->time);
            resp_int(OUT(c), last->ms);
            resp_int(OUT(c), x->max);
        }
        break;
    case 1: /* HISTORY */
        resp_array(OUT(c), e ? e->n : 0);
        for (size_t j = 0; e && j < e->n; j++) {
            resp_array(OUT(c), 2);
            resp_int(OUT(c), srv_lat_sample_at(e, j)->time);
            resp_int(OUT(c), srv_lat_sample_at(e, j)->ms);
        }
        break;
    case 2: { /* RESET */
        size_t n = 0;
        if (c->argc == 2)
            n = srv_lat_reset(NULL, 0);
        for (size_t j = 2; j < c->argc; j++)
            n += srv_lat_reset(c->argv[j].p, c->argv[j].n);
        resp_int(OUT(c), (int64_t)n);
        break;
    }
    case 3: /* GRAPH */
        if (!e)
            resp_errorf(OUT(c), "ERR No samples available for event '%.*s'",
                        (int)(c->argv[2].n < 128 ? c->argv[2].n : 128), c->argv[2].p);
        else
            latency_graph(c, e);
        break;
    case 4:
        latency_doctor(c);
        break;
    case 5:
        cmd_latency_histogram(c, c->argv + 2, c->argc - 2);
        break;
    default: {
        static const char *const lines[] = {
            "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    A report on the latency spikes recorded, with advice.",
            "GRAPH <event>",
            "    A chart of an event's latency spikes.",
            "HISTORY <event>",
            "    An event's latency spikes: [unix time, milliseconds] pairs, oldest first.",
            "LATEST",
            "    Each event's latest spike: [event, unix time, milliseconds, highest].",
            "RESET [<event> ...]",
            "    Forget the spikes of these events (default: of all).",
            "HISTOGRAM [COMMAND ...]",
            "    Cumulative counts of the commands' durations at powers of two of",
            "    microseconds (default: every command called).",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    }
    }
}
