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
#include "srv_repl.h"
#include "srv_replica.h"
#include <jemalloc/jemalloc.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>

#include "srv_cache.h"
#include "srv_conf.h"
#include "srv_lat.h"
#include "scr.h"
#include "srv_os.h"
#include "srv_repl.h"

/* ---- INFO ---- */

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

static const char *executable(void)
{
    static char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    path[n > 0 ? n : 0] = '\0';
    return path;
}

/* What names this build: a hash of the version and the compiler's. */
static const char *build_id(void)
{
    static char id[17];
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (const char *p = SHMKV_VERSION " " __VERSION__; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    snprintf(id, sizeof id, "%016llx", (unsigned long long)h);
    return id;
}

static double ratio(size_t a, size_t b)
{
    return b ? (double)a / (double)b : 0;
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
        INFO("redis_git_sha1:00000000\r\n");
        INFO("redis_git_dirty:0\r\n");
        INFO("redis_build_id:%s\r\n", build_id());
        INFO("redis_mode:standalone\r\n");
        INFO("os:%s %s %s\r\n", u.sysname, u.release, u.machine);
        INFO("arch_bits:%d\r\n", (int)(sizeof(void *) * 8));
        INFO("multiplexing_api:epoll\r\n");
        INFO("atomicvar_api:c11-builtin\r\n");
        INFO("gcc_version:%d.%d.%d\r\n", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
        if (srv_lat_clock.tsc) /* the command clock (srv_lat.h), as Redis names its own */
            INFO("monotonic_clock:X86 TSC @ %llu ticks/us\r\n",
                 (unsigned long long)(((1ull << 32) * 1000 + srv_lat_clock.mult / 2) /
                                      srv_lat_clock.mult));
        else
            INFO("monotonic_clock:POSIX clock_gettime\r\n");
        INFO("process_id:%d\r\n", (int)getpid());
        INFO("process_supervised:%s\r\n", srv_os_supervisor());
        INFO("run_id:%s\r\n", srv.run_id);
        INFO("tcp_port:%d\r\n", srv.conf.port);
        INFO("server_time_usec:%llu\r\n", (unsigned long long)now * 1000);
        INFO("uptime_in_seconds:%llu\r\n", (unsigned long long)(now - srv.start_ms) / 1000);
        INFO("uptime_in_days:%llu\r\n", (unsigned long long)(now - srv.start_ms) / 86400000);
        INFO("hz:%d\r\n", srv.conf.hz);
        INFO("configured_hz:%d\r\n", srv.conf.hz);
        INFO("lru_clock:%llu\r\n", (unsigned long long)(now / 1000) & ((1u << 24) - 1));
        INFO("executable:%s\r\n", executable());
        INFO("config_file:%s\r\n", srv_conf_file ? srv_conf_file : "");
    }
    if (want_section(c, "clients", true)) {
        size_t blocked = 0, timed = 0, max_in = 0, max_out = 0;
        for (struct conn *o = srv.clients; o; o = o->next) {
            blocked += (o->flags & CONN_BLOCKED) != 0;
            timed += (o->flags & CONN_BLOCKED) && o->block_deadline_ms;
            if (o->in.cap > max_in)
                max_in = o->in.cap;
            if (o->out.cap > max_out)
                max_out = o->out.cap;
        }
        SECTION("Clients");
        INFO("connected_clients:%zu\r\n", srv.nclients - srv.nclosing);
        INFO("cluster_connections:0\r\n");
        INFO("maxclients:%d\r\n", srv.conf.maxclients);
        INFO("client_recent_max_input_buffer:%zu\r\n", max_in);
        INFO("client_recent_max_output_buffer:%zu\r\n", max_out);
        INFO("blocked_clients:%zu\r\n", blocked);
        size_t tc, tk, ti, tp;
        cmd_tracking_info(&tc, &tk, &ti, &tp);
        INFO("tracking_clients:%zu\r\n", tc);
        INFO("clients_in_timeout_table:%zu\r\n", timed);
    }
    if (want_section(c, "memory", true)) {
        struct cmd_mem m;
        cmd_mem_read(&m);
        size_t allocated = m.allocated, active = m.active, resident = m.resident, rss = m.rss,
               peak = m.peak, clients = m.clients;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        char h[32];
        SECTION("Memory");
        INFO("used_memory:%zu\r\n", allocated);
        human_bytes(h, sizeof h, (double)allocated);
        INFO("used_memory_human:%s\r\n", h);
        INFO("used_memory_rss:%zu\r\n", rss);
        human_bytes(h, sizeof h, (double)rss);
        INFO("used_memory_rss_human:%s\r\n", h);
        INFO("used_memory_peak:%zu\r\n", peak);
        human_bytes(h, sizeof h, (double)peak);
        INFO("used_memory_peak_human:%s\r\n", h);
        INFO("used_memory_peak_perc:%.2f%%\r\n", 100 * ratio(allocated, peak));
        INFO("used_memory_peak_rss_kb:%ld\r\n", ru.ru_maxrss);
        INFO("used_memory_startup:%zu\r\n", m.startup);
        long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
        size_t total = pages > 0 && psize > 0 ? (size_t)pages * (size_t)psize : 0;
        INFO("total_system_memory:%zu\r\n", total);
        human_bytes(h, sizeof h, (double)total);
        INFO("total_system_memory_human:%s\r\n", h);
        INFO("allocator_allocated:%zu\r\n", allocated);
        INFO("allocator_active:%zu\r\n", active);
        INFO("allocator_resident:%zu\r\n", resident);
        INFO("allocator_frag_ratio:%.2f\r\n", ratio(active, allocated));
        INFO("allocator_frag_bytes:%lld\r\n", (long long)active - (long long)allocated);
        INFO("allocator_rss_ratio:%.2f\r\n", ratio(resident, active));
        INFO("allocator_rss_bytes:%lld\r\n", (long long)resident - (long long)active);
        INFO("rss_overhead_ratio:%.2f\r\n", ratio(rss, resident));
        INFO("rss_overhead_bytes:%lld\r\n", (long long)rss - (long long)resident);
        INFO("mem_fragmentation_ratio:%.2f\r\n", ratio(rss, allocated));
        INFO("mem_fragmentation_bytes:%lld\r\n", (long long)rss - (long long)allocated);
        INFO("used_memory_overhead:%zu\r\n", m.overhead);
        INFO("used_memory_dataset:%zu\r\n", m.dataset);
        INFO("used_memory_dataset_perc:%.2f%%\r\n",
             100 * ratio(m.dataset, allocated > m.startup ? allocated - m.startup : 0));
        size_t lua = scr_vm_bytes(), scripts = scr_scripts_bytes();
        INFO("used_memory_lua:%zu\r\n", lua);
        INFO("used_memory_vm_eval:%zu\r\n", lua);
        human_bytes(h, sizeof h, (double)lua);
        INFO("used_memory_lua_human:%s\r\n", h);
        INFO("used_memory_scripts_eval:%zu\r\n", scripts);
        INFO("number_of_cached_scripts:%zu\r\n", scr_count());
        size_t fvm = scr_fn_vm_bytes(), fb = scr_fn_bytes();
        INFO("number_of_functions:%zu\r\n", scr_fn_functions());
        INFO("number_of_libraries:%zu\r\n", scr_fn_libraries());
        INFO("used_memory_vm_functions:%zu\r\n", fvm);
        INFO("used_memory_vm_total:%zu\r\n", lua + fvm);
        human_bytes(h, sizeof h, (double)(lua + fvm));
        INFO("used_memory_vm_total_human:%s\r\n", h);
        INFO("used_memory_functions:%zu\r\n", fb);
        INFO("used_memory_scripts:%zu\r\n", scripts + fb);
        human_bytes(h, sizeof h, (double)(scripts + fb));
        INFO("used_memory_scripts_human:%s\r\n", h);
        INFO("mem_not_counted_for_evict:0\r\n");
        INFO("mem_clients_slaves:%zu\r\n", srv_repl_buffers());
        INFO("mem_clients_normal:%zu\r\n", clients);
        INFO("lazyfree_pending_objects:0\r\n");
        const char *ver = NULL;
        size_t vl = sizeof ver;
        mallctl("version", &ver, &vl, NULL, 0);
        INFO("mem_allocator:jemalloc-%.5s\r\n", ver ? ver : "?");
        INFO("maxmemory:%lld\r\n", (long long)srv.conf.maxmemory);
        human_bytes(h, sizeof h, (double)srv.conf.maxmemory);
        INFO("maxmemory_human:%s\r\n", h);
        INFO("maxmemory_policy:%s\r\n", srv_conf_policies[srv.conf.maxmemory_policy]);
    }
    if (want_section(c, "persistence", true)) {
        SECTION("Persistence");
        INFO("loading:0\r\n");
        INFO("async_loading:0\r\n");
        INFO("rdb_changes_since_last_save:%llu\r\n",
             (unsigned long long)(srv.stats.dirty - srv.stats.dirty_at_save));
        bool bg_running, bg_failed;
        int64_t bg_sec;
        cmd_bgsave_state(&bg_running, &bg_failed, &bg_sec);
        INFO("rdb_bgsave_in_progress:%d\r\n", bg_running);
        INFO("rdb_last_save_time:%llu\r\n", (unsigned long long)srv.lastsave_s);
        INFO("rdb_last_bgsave_status:%s\r\n", bg_failed ? "err" : "ok");
        INFO("rdb_last_bgsave_time_sec:%lld\r\n",
             srv.stats.last_save_ms < 0 ? -1LL : (long long)(srv.stats.last_save_ms + 500) / 1000);
        INFO("rdb_current_bgsave_time_sec:%lld\r\n", (long long)bg_sec);
        INFO("rdb_saves:%llu\r\n", (unsigned long long)srv.stats.saves);
        INFO("rdb_last_cow_size:0\r\n"); /* a thread reads a checkpoint: no fork, no copy */
        INFO("aof_enabled:0\r\n");
        INFO("aof_rewrite_in_progress:0\r\n");
        INFO("aof_rewrite_scheduled:0\r\n");
        INFO("aof_last_rewrite_time_sec:-1\r\n");
        INFO("aof_current_rewrite_time_sec:-1\r\n");
        INFO("aof_last_bgrewrite_status:ok\r\n");
        INFO("aof_rewrites:0\r\n");
        INFO("aof_rewrites_consecutive_failures:0\r\n");
        INFO("aof_last_cow_size:0\r\n");
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
        INFO("writeback_lost_sets:%llu\r\n", (unsigned long long)w.lost_sets);
    }
    if (want_section(c, "stats", true)) {
        SECTION("Stats");
        INFO("total_connections_received:%llu\r\n", (unsigned long long)srv.stats.connections);
        INFO("total_commands_processed:%llu\r\n", (unsigned long long)srv.stats.commands);
        INFO("total_net_input_bytes:%llu\r\n", (unsigned long long)srv.stats.net_in);
        INFO("total_net_output_bytes:%llu\r\n", (unsigned long long)srv.stats.net_out);
        INFO("instantaneous_ops_per_sec:%.0f\r\n", srv_inst_rate(SRV_INST_OPS));
        INFO("instantaneous_input_kbps:%.2f\r\n", srv_inst_rate(SRV_INST_NET_IN) / 1024);
        INFO("instantaneous_output_kbps:%.2f\r\n", srv_inst_rate(SRV_INST_NET_OUT) / 1024);
        INFO("total_reads_processed:%llu\r\n", (unsigned long long)srv.stats.reads_processed);
        INFO("total_writes_processed:%llu\r\n", (unsigned long long)srv.stats.writes_processed);
        INFO("io_threads_active:%d\r\n", srv.stats.io_threads_active);
        INFO("io_threaded_reads_processed:0\r\n");
        INFO("io_threaded_writes_processed:%llu\r\n",
             (unsigned long long)srv.stats.io_threaded_writes);
        INFO("rejected_connections:%llu\r\n", (unsigned long long)srv.stats.rejected);
        /* As Redis 7.2 counts them (srv_limit.c). */
        INFO("client_query_buffer_limit_disconnections:%llu\r\n",
             (unsigned long long)srv.stats.query_limit_closes);
        INFO("client_output_buffer_limit_disconnections:%llu\r\n",
             (unsigned long long)srv.stats.output_limit_closes);
        INFO("expired_keys:%llu\r\n", (unsigned long long)srv.stats.expired_keys);
        /* The data lives on disk: no policy ever removes a key for memory. */
        INFO("evicted_keys:0\r\n");
        INFO("expire_cycle_cpu_milliseconds:%llu\r\n",
             (unsigned long long)srv.stats.expire_cycle_us / 1000);
        INFO("expired_time_cap_reached_count:%llu\r\n",
             (unsigned long long)srv.stats.expire_cap_reached);
        INFO("total_forks:0\r\n"); /* shmkvd never forks */
        INFO("latest_fork_usec:0\r\n");
        INFO("migrate_cached_sockets:0\r\n"); /* MIGRATE connects each time */
        INFO("slave_expires_tracked_keys:0\r\n");
        uint64_t full, ok, err;
        srv_repl_sync_stats(&full, &ok, &err);
        INFO("sync_full:%llu\r\n", (unsigned long long)full);
        INFO("sync_partial_ok:%llu\r\n", (unsigned long long)ok);
        INFO("sync_partial_err:%llu\r\n", (unsigned long long)err);
        struct srv_cache_local local; /* reads answered from shared memory count too */
        srv_cache_local(&local);
        INFO("keyspace_hits:%llu\r\n",
             (unsigned long long)(srv.stats.keyspace_hits + local.key_hits));
        INFO("keyspace_misses:%llu\r\n",
             (unsigned long long)(srv.stats.keyspace_misses + local.key_misses));
        size_t tc, tk, ti, tp;
        cmd_tracking_info(&tc, &tk, &ti, &tp);
        INFO("tracking_total_keys:%zu\r\n", tk);
        INFO("tracking_total_items:%zu\r\n", ti);
        INFO("tracking_total_prefixes:%zu\r\n", tp);
        INFO("total_error_replies:%llu\r\n", (unsigned long long)srv.stats.error_replies);
        INFO(
            "unexpected_error_replies:0\r\n"); /* errors from a primary: none without replication */
        INFO("dump_payload_sanitizations:%llu\r\n", (unsigned long long)srv.stats.restores);
        INFO("pubsub_channels:%zu\r\n", cmd_pubsub_names(CMD_PS_CHANNEL));
        INFO("pubsub_patterns:%zu\r\n", cmd_pubsub_names(CMD_PS_PATTERN));
        INFO("pubsubshard_channels:%zu\r\n", cmd_pubsub_names(CMD_PS_SHARD));
    }
    if (want_section(c, "replication", true)) {
        SECTION("Replication");
        INFO("role:%s\r\n", srv_repl_following() ? "slave" : "master");
        srv_replica_info(&b); /* a replica's lines, before the primary's */
        srv_repl_info(&b);
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
        INFO("inline_conversions:%llu\r\n", (unsigned long long)di.inline_converted);
        INFO("zset_rank_indexes_built:%llu\r\n", (unsigned long long)di.zrank_built);
        INFO("zset_rank_fences:sets=%zu,bytes=%zu,evicted=%llu\r\n", di.zrank_copies,
             di.zrank_copy_bytes, (unsigned long long)di.zrank_copies_evicted);
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
    if (want_section(c, "shmcache", true)) {
        SECTION("Shmcache");
        srv_cache_local_info(&b);
    }
    if (want_section(c, "keyspace", true)) {
        SECTION("Keyspace");
        for (int d = 0; d < srv.conf.databases; d++) {
            uint64_t keys, expires;
            /* After a read error the writes not yet resolved are left out. */
            unsigned p = srv_dbmap[d]; /* the stored database number d names (SWAPDB) */
            (void)db_keycount(srv.db, p, &keys, &expires);
            if (keys)
                INFO("db%d:keys=%llu,expires=%llu,avg_ttl=%llu\r\n", d, (unsigned long long)keys,
                     (unsigned long long)expires,
                     (unsigned long long)db_avg_ttl(srv.db, p, srv_mstime()));
        }
    }
#undef SECTION
    resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
    resp_buf_free(&b);
}
