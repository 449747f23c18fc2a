/*
 * stor_int — the engine's internals: struct stor, shared by stor.c (open,
 * close, options, disk space), stor_batch.c, stor_it.c, stor_gc.c and
 * write-back (wb_*.c, whose parts of it wb_int.h declares). Not an API.
 */
#ifndef SHMKV_STOR_INT_H
#define SHMKV_STOR_INT_H

#include <pthread.h>
#include <stdbool.h>

#include <rocksdb/c.h>

#include "stor.h"
#include "wb_int.h"
#include "wb_ov.h"

/* The reserved key holding the last record set RocksDB applied, written to
 * every column family with each flusher batch: db 255, slot 0xffff, beyond
 * every user key (slots stay below 0x4000) and not a valid sub key. */
#define STOR_APPLIED_KEY                                                                           \
    "\xff\xff\xff"                                                                                 \
    "applied"
#define STOR_APPLIED_KEYLEN 10

/* The range compactor (stor_compact_async): at most one set of ranges
 * waits (req, nreq) while one runs on th, all under mu. */
struct stor_compactor {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    bool started, stop;
    struct stor_range req[STOR_COMPACT_RANGES];
    size_t nreq;
    uint64_t last_us, asked, done;
};

/* Free disk space (stor_disk_check): the executor's own. low is data_low
 * or jshm_low: the data folder's file system, or the tmpfs of a
 * shared-memory journal, is short of room. */
struct stor_disk {
    bool low, low_told, data_low, jshm_low;
    uint64_t min_free, free, budget;
};

/* One open engine. Its parts are grouped by the thread or part that owns
 * them; the RocksDB handles and options at the top are set at open and
 * only read after. */
struct stor {
    rocksdb_t *db;
    rocksdb_column_family_handle_t *cf[STOR_CF_COUNT];
    rocksdb_options_t *dbopts;
    rocksdb_options_t *cfopts[STOR_CF_COUNT];
    rocksdb_readoptions_t *ropts;
    rocksdb_writeoptions_t *wopts;
    rocksdb_writeoptions_t *wopts_nowal; /* the flusher's with a disk journal: it is the log */
    /* The same two with RocksDB's memtable insert hint, for the flusher's
     * batches that hold no range delete (wb_flush.c, flush_wopts). */
    rocksdb_writeoptions_t *wopts_hint, *wopts_nowal_hint;
    struct stor_opts o;
    char *dir;

    /* Compaction filters (RocksDB's threads) read meta records through
     * db; gc_mu orders those reads before close frees anything, and
     * gc_open says whether they may run at all. */
    pthread_mutex_t gc_mu;
    bool gc_open;
    struct stor_compactor cmp;
    struct stor_disk disk;

    /* Write-back (wb_int.h), when wb is set. The overlay is the
     * executor's. */
    bool wb;
    struct wb_ov ov;
    struct wb_journal j;
    struct wb_queue q;
    struct wb_flusher fl;
    struct wb_jprep jp;
    struct wb_resolver rs;
};

/* stor.c */
int stor_take_err(char *err);
/* stor_gc.c: gives cf's options the compaction filter that drops a dead
 * collection version's records (sub and score families). */
void stor_gc_attach(struct stor *s, int cf, rocksdb_options_t *opt);
/* stor_gc.c: stops the range compactor thread, if it runs. */
void stor_compact_stop(struct stor *s);
/* After a write with range deletes (FLUSHDB, FLUSHALL) in the column
 * families of cfmask (bit per family): starts a flush of their memtables
 * and returns without waiting for it. See stor.c. */
void stor_flush_ranged(struct stor *s, unsigned cfmask);
/* Turns RocksDB's per-operation perf counters off for the calling thread
 * (each thread of ours that calls RocksDB). */
void stor_thread_quiet(void);
/* The memtable size in force: o's, or the default. RocksDB is given it,
 * and the flusher caps its batches by it. */
size_t stor_write_buffer_bytes(const struct stor_opts *o);

#endif
