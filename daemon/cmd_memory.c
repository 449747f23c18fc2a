/*
 * cmd_memory — MEMORY, and the daemon's memory figures that it and INFO
 * share (cmd_mem_read). The data lives in RocksDB: the daemon's heap holds
 * what serves it (client buffers, the write-back overlay, RocksDB's
 * memtables and caches), and MEMORY describes that.
 */
#include "cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kv_mem.h"
#include "kv_num.h"
#include <jemalloc/jemalloc.h>

static size_t mallctl_size(const char *name)
{
    size_t v = 0, len = sizeof v;
    if (mallctl(name, &v, &len, NULL, 0) != 0)
        return 0;
    return v;
}

/* The process's resident set, as the kernel counts it (shared memory it
 * touched included). */
static size_t process_rss(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%llu %llu", &size, &res) != 2)
            res = 0;
        fclose(f);
    }
    return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

void cmd_mem_read(struct cmd_mem *m)
{
    uint64_t epoch = 1;
    size_t sz = sizeof epoch;
    mallctl("epoch", &epoch, &sz, &epoch, sz); /* refresh jemalloc's statistics */
    memset(m, 0, sizeof *m);
    m->allocated = mallctl_size("stats.allocated");
    m->active = mallctl_size("stats.active");
    m->resident = mallctl_size("stats.resident");
    m->rss = process_rss();
    if (m->allocated > srv.stats.used_memory_peak)
        srv.stats.used_memory_peak = m->allocated;
    m->peak = srv.stats.used_memory_peak;
    m->startup = srv.stats.used_memory_startup;
    for (struct conn *o = srv.clients; o; o = o->next)
        m->clients += o->in.cap + o->out.cap;
    /* Overhead: what the daemon holds to serve at all (its start-up
     * allocation, client buffers); the rest holds data on its way to or
     * from RocksDB (the write-back overlay, memtables, caches). */
    m->overhead = m->startup + m->clients;
    m->dataset = m->allocated > m->overhead ? m->allocated - m->overhead : 0;
    struct stor_wb_stats w;
    stor_wb_stats(srv.stor, &w);
    m->overlay = w.overlay_bytes;
}

static double ratio(size_t a, size_t b)
{
    return b ? (double)a / (double)b : 0;
}

/* MEMORY STATS: Redis 7.0's fields, in its order, with the figures INFO
 * memory gives. Per database, Redis's hash-table overheads are 0: keys
 * live in RocksDB, not in tables in the heap. */
static void memory_stats(struct conn *c)
{
    struct cmd_mem m;
    cmd_mem_read(&m);
    uint64_t keys = 0;
    int dbs = 0;
    for (int d = 0; d < srv.conf.databases; d++) {
        uint64_t k, e;
        (void)db_keycount(srv.db, (unsigned)d, &k, &e);
        keys += k;
        dbs += k > 0;
    }
    size_t net = m.allocated > m.startup ? m.allocated - m.startup : 0;
    resp_map(OUT(c), 27 + (size_t)dbs, c->proto);
#define FIELD_INT(name, v)                                                                         \
    do {                                                                                           \
        resp_bulk_cstr(OUT(c), name);                                                              \
        resp_int(OUT(c), (int64_t)(v));                                                            \
    } while (0)
#define FIELD_DBL(name, v)                                                                         \
    do {                                                                                           \
        resp_bulk_cstr(OUT(c), name);                                                              \
        resp_double(OUT(c), (double)(v), c->proto);                                                \
    } while (0)
    FIELD_INT("peak.allocated", m.peak);
    FIELD_INT("total.allocated", m.allocated);
    FIELD_INT("startup.allocated", m.startup);
    FIELD_INT("replication.backlog", 0);
    FIELD_INT("clients.slaves", 0);
    FIELD_INT("clients.normal", m.clients);
    FIELD_INT("cluster.links", 0);
    FIELD_INT("aof.buffer", 0);
    FIELD_INT("lua.caches", 0);
    FIELD_INT("functions.caches", 0);
    for (int d = 0; d < srv.conf.databases; d++) {
        uint64_t k, e;
        (void)db_keycount(srv.db, (unsigned)d, &k, &e);
        if (!k)
            continue;
        char name[16];
        snprintf(name, sizeof name, "db.%d", d);
        resp_bulk_cstr(OUT(c), name);
        resp_map(OUT(c), 3, c->proto);
        FIELD_INT("overhead.hashtable.main", 0);
        FIELD_INT("overhead.hashtable.expires", 0);
        FIELD_INT("overhead.hashtable.slot-to-keys", 0);
    }
    FIELD_INT("overhead.total", m.overhead);
    FIELD_INT("keys.count", keys);
    FIELD_INT("keys.bytes-per-key", keys ? net / keys : 0);
    FIELD_INT("dataset.bytes", m.dataset);
    FIELD_DBL("dataset.percentage", 100 * ratio(m.dataset, net));
    FIELD_DBL("peak.percentage", 100 * ratio(m.allocated, m.peak));
    FIELD_INT("allocator.allocated", m.allocated);
    FIELD_INT("allocator.active", m.active);
    FIELD_INT("allocator.resident", m.resident);
    FIELD_DBL("allocator-fragmentation.ratio", ratio(m.active, m.allocated));
    FIELD_INT("allocator-fragmentation.bytes", (int64_t)m.active - (int64_t)m.allocated);
    FIELD_DBL("allocator-rss.ratio", ratio(m.resident, m.active));
    FIELD_INT("allocator-rss.bytes", (int64_t)m.resident - (int64_t)m.active);
    FIELD_DBL("rss-overhead.ratio", ratio(m.rss, m.resident));
    FIELD_INT("rss-overhead.bytes", (int64_t)m.rss - (int64_t)m.resident);
    FIELD_DBL("fragmentation", ratio(m.rss, m.allocated));
    FIELD_INT("fragmentation.bytes", (int64_t)m.rss - (int64_t)m.allocated);
#undef FIELD_INT
#undef FIELD_DBL
}

/* MEMORY DOCTOR: what in the figures deserves a look, in plain words. */
static void memory_doctor(struct conn *c)
{
    struct cmd_mem m;
    cmd_mem_read(&m);
    struct resp_buf b;
    resp_buf_init(&b);
    if (m.allocated < 5u << 20) {
        resp_buf_printf(&b, "The daemon uses less than 5 MB of memory: there is nothing to "
                            "diagnose.\n");
    } else {
        size_t found = 0;
        if (m.peak > m.allocated * 3 / 2) {
            resp_buf_printf(&b,
                            "* Peak: the daemon once used %zu bytes, over 150%% of what it uses "
                            "now (%zu). A burst of writes waiting for RocksDB, or clients with "
                            "large replies, can cause that; fragmentation figures are then less "
                            "meaningful.\n\n",
                            m.peak, m.allocated);
            found++;
        }
        if (m.rss > 10u << 20 && ratio(m.rss, m.allocated) > 1.4) {
            resp_buf_printf(&b,
                            "* Fragmentation: the process holds %.2f times the memory it has "
                            "allocated (resident %zu, allocated %zu). Pages touched in the shm "
                            "cache count as resident; beyond them, MEMORY PURGE asks the "
                            "allocator to give unused pages back.\n\n",
                            ratio(m.rss, m.allocated), m.rss, m.allocated);
            found++;
        }
        size_t nc = srv.nclients - srv.nclosing;
        if (nc && m.clients / nc > 200u << 10) {
            resp_buf_printf(&b,
                            "* Clients: their buffers average %zu bytes each (%zu clients). "
                            "Large replies not yet read, or large pipelines, keep them big; "
                            "CLIENT LIST shows which.\n\n",
                            m.clients / nc, nc);
            found++;
        }
        if (m.overlay > m.allocated / 2) {
            resp_buf_printf(&b,
                            "* Write-back: %llu bytes of acknowledged writes wait for RocksDB, "
                            "over half the daemon's memory. The flusher is behind the write "
                            "rate: INFO persistence's writeback_* figures show how far.\n\n",
                            (unsigned long long)m.overlay);
            found++;
        }
        if (!found)
            resp_buf_printf(&b, "No memory problems found.\n");
    }
    resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
    resp_buf_free(&b);
}

static void stats_write(void *arg, const char *text)
{
    resp_buf_append(arg, text, strlen(text));
}

/* MEMORY USAGE key [SAMPLES n] | STATS | DOCTOR | MALLOC-STATS | PURGE |
 * HELP. USAGE counts the key's records as stored (db_usage), since its
 * data lives in RocksDB, not in the daemon's heap; MALLOC-STATS and PURGE
 * are jemalloc's. */
void cmd_memory(struct conn *c)
{
    static const struct cmd_subcommand subs[] = {{"usage", -3}, {"malloc-stats", 2}, {"purge", 2},
                                                 {"help", 2},   {"stats", 2},        {"doctor", 2},
                                                 {NULL, 0}};
    int i = cmd_subcommand(c, subs, "memory");
    if (i < 0)
        return;
    if (i == 0) {
        int64_t samples = 5; /* Redis's default */
        for (size_t j = 3; j < c->argc; j += 2) {
            if (!cmd_arg_is(c, j, "samples") || j + 1 >= c->argc) {
                cmd_reply_syntax(c);
                return;
            }
            if (kv_str2ll(c->argv[j + 1].p, c->argv[j + 1].n, &samples)) {
                resp_error(OUT(c), "ERR value is not an integer or out of range");
                return;
            }
            if (samples < 0) {
                cmd_reply_syntax(c);
                return;
            }
        }
        uint64_t bytes;
        int rc = db_usage(srv.db, c->db, c->argv[2].p, c->argv[2].n, (uint64_t)samples, &bytes);
        if (rc == KV_ENOTFOUND)
            resp_null(OUT(c), c->proto);
        else if (rc)
            cmd_reply_err(c, rc);
        else
            resp_int(OUT(c), (int64_t)bytes);
    } else if (i == 1) {
        struct resp_buf b;
        resp_buf_init(&b);
        malloc_stats_print(stats_write, &b, NULL);
        resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
        resp_buf_free(&b);
    } else if (i == 2) {
        char name[64];
        snprintf(name, sizeof name, "arena.%u.purge", (unsigned)MALLCTL_ARENAS_ALL);
        mallctl(name, NULL, NULL, NULL, 0); /* gives unused dirty pages back to the system */
        resp_simple(OUT(c), "OK");
    } else if (i == 3) {
        static const char *const lines[] = {
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "USAGE <key> [SAMPLES <count>]",
            "    Bytes the key's records take in storage, keys and values as encoded; a",
            "    collection is sampled (default 5 elements, 0 for all) and its size",
            "    extrapolated.",
            "STATS",
            "    The daemon's memory, part by part.",
            "DOCTOR",
            "    Advice on the daemon's memory.",
            "MALLOC-STATS",
            "    The memory allocator's (jemalloc's) statistics.",
            "PURGE",
            "    Ask the allocator to return unused memory to the system.",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else if (i == 4) {
        memory_stats(c);
    } else {
        memory_doctor(c);
    }
}
