/*
 * cmd_info — INFO: the one place its reply is built, section by section;
 * the sections other modules keep (commandstats, errorstats, latencystats,
 * the shm cache's) append their lines to the same buffer.
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
#include <jemalloc/jemalloc.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>

#include "srv_cache.h"
#include "srv_conf.h"
#include "srv_lat.h"

/* ---- INFO ---- */

static size_t mallctl_size(const char *name)
{
    size_t v = 0, len = sizeof v;
    if (mallctl(name, &v, &len, NULL, 0) != 0)
        return 0;
    return v;
}

static void human_bytes(char *out, size_t cap, double n)
{
    const char *units = "BKMGTP";
    int u = 0;
    while (n >= 1024 && u < 5) {
        n /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, cap, "%.0fB", n);
    else
        snprintf(out, cap, "%.2f%c", n, units[u]);
}

static bool want_section(const struct conn *c, const char *name, bool dflt)
{
    if (c->argc == 1)
        return dflt;
    for (size_t i = 1; i < c->argc; i++) {
        if (cmd_arg_is(c, i, name) || cmd_arg_is(c, i, "all") || cmd_arg_is(c, i, "everything"))
            return true;
        if (cmd_arg_is(c, i, "default") && dflt)
            return true;
    }
    return false;
}

#define INFO(...) resp_buf_printf(&b, __VA_ARGS__)

/* INFO [section ...] */
void cmd_info(struct conn *c)
{
    struct resp_buf b;
    resp_buf_init(&b);
    uint64_t now = srv_mstime();
    bool first = true;
#define SECTION(title)                                                                             \
    do {                                                                                           \
        if (!first)                                                                                \
            resp_buf_append(&b, "\r\n", 2);                                                        \
        first = false;                                                                             \
        INFO("# %s\r\n", title);                                                                   \
    } while (0)

    if (want_section(c, "server", true)) {
        struct utsname u;
        uname(&u);
        SECTION("Server");
        INFO("redis_version:%s\r\n", SRV_VERSION);
        INFO("shmkv_version:%s\r\n", SHMKV_VERSION);
        INFO("redis_mode:standalone\r\n");
        INFO("os:%s %s %s\r\n", u.sysname, u.release, u.machine);
        INFO("arch_bits:%d\r\n", (int)(sizeof(void *) * 8));
        INFO("multiplexing_api:epoll\r\n");
        if (srv_lat_clock.tsc) /* the command clock (srv_lat.h), as Redis names its own */
            INFO("monotonic_clock:X86 TSC @ %llu ticks/us\r\n",
                 (unsigned long long)(((1ull << 32) * 1000 + srv_lat_clock.mult / 2) /
                                      srv_lat_clock.mult));
        else
            INFO("monotonic_clock:POSIX clock_gettime\r\n");
        INFO("process_id:%d\r\n", (int)getpid());
        INFO("tcp_port:%d\r\n", srv.conf.port);
        INFO("server_time_usec:%llu\r\n", (unsigned long long)now * 1000);
        INFO("uptime_in_seconds:%llu\r\n", (unsigned long long)(now - srv.start_ms) / 1000);
        INFO("uptime_in_days:%llu\r\n", (unsigned long long)(now - srv.start_ms) / 86400000);
        INFO("hz:%d\r\n", srv.conf.hz);
        INFO("config_file:%s\r\n", srv_conf_file ? srv_conf_file : "");
    }
    if (want_section(c, "clients", true)) {
        size_t blocked = 0;
        for (struct conn *o = srv.clients; o; o = o->next)
            blocked += (o->flags & CONN_BLOCKED) != 0;
        SECTION("Clients");
        INFO("connected_clients:%zu\r\n", srv.nclients - srv.nclosing);
        INFO("maxclients:%d\r\n", srv.conf.maxclients);
        INFO("blocked_clients:%zu\r\n", blocked);
        size_t tc, tk, ti, tp;
        cmd_tracking_info(&tc, &tk, &ti, &tp);
        INFO("tracking_clients:%zu\r\n", tc);
    }
    if (want_section(c, "memory", true)) {
        uint64_t epoch = 1;
        size_t sz = sizeof epoch;
        mallctl("epoch", &epoch, &sz, &epoch, sz); /* refresh jemalloc's statistics */
        size_t allocated = mallctl_size("stats.allocated"), active = mallctl_size("stats.active"),
               resident = mallctl_size("stats.resident");
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        char h[32];
        SECTION("Memory");
        INFO("used_memory:%zu\r\n", allocated);
        human_bytes(h, sizeof h, (double)allocated);
        INFO("used_memory_human:%s\r\n", h);
        INFO("used_memory_rss:%zu\r\n", resident);
        INFO("used_memory_peak_rss_kb:%ld\r\n", ru.ru_maxrss);
        INFO("allocator_allocated:%zu\r\n", allocated);
        INFO("allocator_active:%zu\r\n", active);
        INFO("allocator_resident:%zu\r\n", resident);
        const char *ver = NULL;
        size_t vl = sizeof ver;
        mallctl("version", &ver, &vl, NULL, 0);
        INFO("mem_allocator:jemalloc-%.5s\r\n", ver ? ver : "?");
        INFO("maxmemory:0\r\n");
        INFO("maxmemory_policy:noeviction\r\n");
    }
    if (want_section(c, "persistence", true)) {
        SECTION("Persistence");
        INFO("loading:0\r\n");
        INFO("rdb_bgsave_in_progress:0\r\n");
        INFO("rdb_last_save_time:%llu\r\n", (unsigned long long)srv.lastsave_s);
        INFO("rdb_last_bgsave_status:ok\r\n");
        INFO("aof_enabled:0\r\n");
        char why[300] = "";
        int werr = stor_write_error(srv.stor, why, sizeof why);
        /* Redis's name for "writes are refused for a disk error" (MISCONF). */
        INFO("aof_last_write_status:%s\r\n", werr ? "err" : "ok");
        INFO("writeback_write_error:%s\r\n", why);
        INFO("storage_engine:rocksdb\r\n");
        INFO("appendfsync:%s\r\n", srv.conf.appendfsync == 2   ? "always"
                                   : srv.conf.appendfsync == 1 ? "everysec"
                                                               : "no");
        struct stor_wb_stats w;
        stor_wb_stats(srv.stor, &w);
        INFO("writeback_enabled:%d\r\n", srv.conf.writeback);
        INFO("writeback_last_seq:%llu\r\n", (unsigned long long)w.last_seq);
        INFO("writeback_flushed_seq:%llu\r\n", (unsigned long long)w.durable_seq);
        INFO("writeback_pending_sets:%llu\r\n", (unsigned long long)(w.last_seq - w.durable_seq));
        INFO("writeback_journal_bytes:%llu\r\n", (unsigned long long)w.journal_bytes);
        INFO("writeback_journal_dir:%s\r\n", w.journal_dir ? w.journal_dir : "");
        INFO("writeback_journal_shm:%d\r\n", w.journal_shm);
        INFO("writeback_overlay_entries:%llu\r\n", (unsigned long long)w.overlay_entries);
        INFO("writeback_overlay_bytes:%llu\r\n", (unsigned long long)w.overlay_bytes);
        INFO("writeback_flush_batches:%llu\r\n", (unsigned long long)w.flush_batches);
        INFO("writeback_flushed_sets:%llu\r\n", (unsigned long long)w.flushed_sets);
        INFO("writeback_flush_avg_us:%llu\r\n",
             (unsigned long long)(w.flush_batches ? w.flush_us_total / w.flush_batches : 0));
        INFO("writeback_flush_last_us:%llu\r\n", (unsigned long long)w.flush_us_last);
        INFO("writeback_flush_max_us:%llu\r\n", (unsigned long long)w.flush_us_max);
        INFO("writeback_flusher_batch_size:%llu\r\n", (unsigned long long)w.flush_batch_bytes);
        INFO("writeback_flusher_interval_ms:%d\r\n", srv.conf.flush_interval_ms);
        INFO("writeback_flusher_threads:%d\r\n", w.flusher_threads);
        INFO("writeback_backpressure_waits:%llu\r\n", (unsigned long long)w.waits);
        INFO("writeback_backpressure_wait_us:%llu\r\n", (unsigned long long)w.wait_us);
        INFO("writeback_replayed_sets:%llu\r\n", (unsigned long long)w.replayed_sets);
    }
    if (want_section(c, "stats", true)) {
        SECTION("Stats");
        INFO("total_connections_received:%llu\r\n", (unsigned long long)srv.stats.connections);
        INFO("total_commands_processed:%llu\r\n", (unsigned long long)srv.stats.commands);
        INFO("total_net_input_bytes:%llu\r\n", (unsigned long long)srv.stats.net_in);
        INFO("total_net_output_bytes:%llu\r\n", (unsigned long long)srv.stats.net_out);
        INFO("io_threads_active:%d\r\n", srv.stats.io_threads_active);
        INFO("io_threaded_reads_processed:0\r\n");
        INFO("io_threaded_writes_processed:%llu\r\n",
             (unsigned long long)srv.stats.io_threaded_writes);
        INFO("rejected_connections:%llu\r\n", (unsigned long long)srv.stats.rejected);
        INFO("expired_keys:%llu\r\n", (unsigned long long)srv.stats.expired_keys);
        INFO("keyspace_hits:%llu\r\n", (unsigned long long)srv.stats.keyspace_hits);
        INFO("keyspace_misses:%llu\r\n", (unsigned long long)srv.stats.keyspace_misses);
        size_t tc, tk, ti, tp;
        cmd_tracking_info(&tc, &tk, &ti, &tp);
        INFO("tracking_total_keys:%zu\r\n", tk);
        INFO("tracking_total_items:%zu\r\n", ti);
        INFO("tracking_total_prefixes:%zu\r\n", tp);
        INFO("total_error_replies:%llu\r\n", (unsigned long long)srv.stats.error_replies);
        INFO("pubsub_channels:%zu\r\n", cmd_pubsub_names(CMD_PS_CHANNEL));
        INFO("pubsub_patterns:%zu\r\n", cmd_pubsub_names(CMD_PS_PATTERN));
        INFO("pubsubshard_channels:%zu\r\n", cmd_pubsub_names(CMD_PS_SHARD));
    }
    if (want_section(c, "replication", true)) {
        SECTION("Replication");
        INFO("role:master\r\n");
        INFO("connected_slaves:0\r\n");
    }
    if (want_section(c, "cpu", true)) {
        struct rusage self, children, thread;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &children);
        getrusage(RUSAGE_THREAD, &thread); /* INFO runs on the event loop's thread */
        SECTION("CPU");
#define TV(t) (long)(t).tv_sec, (long)(t).tv_usec
        INFO("used_cpu_sys:%ld.%06ld\r\n", TV(self.ru_stime));
        INFO("used_cpu_user:%ld.%06ld\r\n", TV(self.ru_utime));
        INFO("used_cpu_sys_children:%ld.%06ld\r\n", TV(children.ru_stime));
        INFO("used_cpu_user_children:%ld.%06ld\r\n", TV(children.ru_utime));
        INFO("used_cpu_sys_main_thread:%ld.%06ld\r\n", TV(thread.ru_stime));
        INFO("used_cpu_user_main_thread:%ld.%06ld\r\n", TV(thread.ru_utime));
#undef TV
    }
    if (want_section(c, "modules", true))
        SECTION("Modules"); /* none: shmkvd loads no modules */
    if (want_section(c, "commandstats", false)) {
        SECTION("Commandstats");
        cmd_info_commandstats(&b);
    }
    if (want_section(c, "errorstats", true)) {
        SECTION("Errorstats");
        cmd_info_errorstats(&b);
    }
    if (want_section(c, "latencystats", false)) {
        SECTION("Latencystats");
        cmd_info_latencystats(&b);
    }
    if (want_section(c, "cluster", true)) {
        SECTION("Cluster");
        INFO("cluster_enabled:0\r\n");
    }
    if (want_section(c, "storage", true)) {
        SECTION("Storage");
        INFO("storage_dir:%s\r\n", srv.conf.dir);
        struct db_info di;
        db_info(srv.db, &di);
        INFO("key_filter:filters=%u,bytes=%llu,keys_added=%llu\r\n", di.key_filters,
             (unsigned long long)di.key_filter_bytes, (unsigned long long)di.key_filter_keys);
        INFO("pick_indexes:collections=%u,bytes=%zu\r\n", di.pick_indexes, di.pick_bytes);
        INFO("key_counts_from:%s\r\n", di.counts_loaded ? "shutdown" : "scan");
        INFO("key_filter_rebuild:in_progress=%d,done=%llu\r\n", di.key_filter_building,
             (unsigned long long)di.key_filter_rebuilds);
        INFO("collections_rewritten:%llu\r\n", (unsigned long long)di.tidied);
        INFO("small_collections_cached:collections=%u,bytes=%zu,hits=%llu,fills=%llu\r\n",
             di.scache_collections, di.scache_bytes, (unsigned long long)di.scache_hits,
             (unsigned long long)di.scache_fills);
        uint64_t casked, cdone;
        stor_compact_async_stats(srv.stor, &casked, &cdone);
        INFO("range_compactions:asked=%llu,done=%llu\r\n", (unsigned long long)casked,
             (unsigned long long)cdone);
        INFO("key_counts_deferred:outstanding=%llu,total=%llu\r\n",
             (unsigned long long)di.defer_outstanding, (unsigned long long)di.defer_total);
        for (int cf = 0; cf < STOR_CF_COUNT; cf++) {
            uint64_t keys = 0, sst = 0, mem = 0;
            stor_property(srv.stor, cf, "rocksdb.estimate-num-keys", &keys);
            stor_property(srv.stor, cf, "rocksdb.total-sst-files-size", &sst);
            stor_property(srv.stor, cf, "rocksdb.cur-size-all-mem-tables", &mem);
            INFO("cf_%s:estimated_keys=%llu,sst_bytes=%llu,memtable_bytes=%llu\r\n",
                 stor_cf_name(cf), (unsigned long long)keys, (unsigned long long)sst,
                 (unsigned long long)mem);
        }
    }
    if (want_section(c, "cache", true)) {
        SECTION("Cache");
        srv_cache_info(&b);
    }
    if (want_section(c, "keyspace", true)) {
        SECTION("Keyspace");
        for (int d = 0; d < srv.conf.databases; d++) {
            uint64_t keys, expires;
            /* After a read error the writes not yet resolved are left out. */
            (void)db_keycount(srv.db, (unsigned)d, &keys, &expires);
            if (keys)
                INFO("db%d:keys=%llu,expires=%llu,avg_ttl=0\r\n", d, (unsigned long long)keys,
                     (unsigned long long)expires);
        }
    }
#undef SECTION
    resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
    resp_buf_free(&b);
}
