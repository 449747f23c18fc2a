/*
 * stor — shmkv's storage engine underneath the Redis types: RocksDB with four
 * column families, one write path and one read path.
 *
 * Layer: below db_ (the types), above enc_ (the layouts). This is the only
 * module that includes <rocksdb/c.h>.
 *
 * Write path: a type operation collects every put and delete it makes into one
 * record set (struct stor_batch) and hands it to stor_commit(), which applies
 * it atomically.
 *
 * With write-back on (docs/writeback.md), stor_commit() gives the record set
 * a sequence number, applies it to the in-memory overlay and queues it; the
 * caller must call stor_sync() before acknowledging anything, which appends
 * the queued record sets to the crash-safe journal (and fsyncs it with
 * appendfsync always; under everysec and no the journal can live in a
 * shared-memory folder, o->journal_shm_dir, with RocksDB's WAL as the disk
 * log). A flusher thread writes them to RocksDB in large batches;
 * stor_housekeep() then drops what became durable from the overlay and the
 * journal. Without write-back, stor_commit() writes RocksDB directly. On
 * every open, write-back or not, whatever a journal holds beyond RocksDB's
 * last applied sequence number is replayed first.
 *
 * Read path: stor_get() for point reads, struct stor_it for ordered ranges;
 * both see the overlay first, so every write is readable at once.
 *
 * Garbage collection: compaction filters drop sub and score records whose
 * meta record is missing, of another type or of another version. Expiry is
 * not a filter rule (with write-back, RocksDB may lag a PERSIST): expired
 * keys are deleted through the write path by active expiry (db_reap).
 *
 * Memory: allocation failure aborts the daemon (as Redis's zmalloc does); all
 * other failures are returned. Thread-safety: one thread (the executor) calls
 * everything here; the flusher thread is internal.
 */
#ifndef SHMKV_STOR_H
#define SHMKV_STOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "enc.h"

/* Column families. */
enum stor_cf {
    STOR_CF_META = 0,   /* "metadata": one record per user key */
    STOR_CF_SUB = 1,    /* "default": hash fields, set members, list elements, zset member->score */
    STOR_CF_SCORE = 2,  /* "zset_score": the score index */
    STOR_CF_EXPIRY = 3, /* "expiry": the expiry index, what active expiry reads */
    STOR_CF_RANK = 4,   /* "zset_rank": counts over the score index (db_zrix.c) */
    STOR_CF_COUNT = 5,
};

enum { STOR_FSYNC_NO = 0, STOR_FSYNC_EVERYSEC = 1, STOR_FSYNC_ALWAYS = 2 };

struct stor_opts {
    const char *dir;           /* data folder; created if missing */
    size_t block_cache_bytes;  /* shared LRU block cache (0: 256 MiB) */
    size_t write_buffer_bytes; /* per column family memtable (0: 64 MiB) */
    /* RocksDB's flush and compaction writes, bytes per second (0: no limit):
     * leaves disk bandwidth to reads and the WAL on a shared or slow disk. */
    size_t compaction_io_bytes;
    int background_jobs; /* flush + compaction threads (0: number of CPUs, at least 2) */
    int fsync;           /* STOR_FSYNC_*: Redis's appendfsync, for journal and WAL */
    int compression;     /* 1: LZ4 on upper levels, ZSTD at the bottom; 0: none */
    /* Table files RocksDB keeps open at most (0: all of them, RocksDB's
     * default): a bound the daemon's open-file budget can count on. */
    int max_open_files;
    /* write-back */
    int writeback;            /* 1: journal + overlay + flusher; 0: RocksDB on every commit */
    size_t flush_batch_bytes; /* the flusher's batch: the most it takes, and the
                               * fill it waits for (0: 16 MiB; at most a quarter
                               * of write_buffer_bytes) */
    int flush_interval_ms;    /* the flusher waits this long to fill a batch (0: none) */
    /* Threads writing a flush batch to RocksDB at once, each a share of its
     * keys (0: while writes keep coming 1 below 8 CPUs, 2 from 8, 4 from 16;
     * once they stop, one per CPU, up to 8): RocksDB's memtable inserts are
     * most of the flusher's work, and they run in parallel. */
    int flusher_threads;
    size_t overlay_max_bytes;     /* back-pressure above this much pending data (0: 256 MiB) */
    size_t journal_segment_bytes; /* journal file size before a new one (0: 64 MiB) */
    /* Under appendfsync everysec and no: keep the journal in a new folder in
     * this tmpfs (it survives a killed daemon, not a power loss) and let the
     * flusher write RocksDB's WAL as the disk log. NULL or "": on disk, in
     * dir/journal, as always under appendfsync always. */
    const char *journal_shm_dir;
};

/* What write-back has done, for INFO persistence. */
struct stor_wb_stats {
    uint64_t last_seq, durable_seq;
    uint64_t journal_bytes; /* live journal files */
    uint64_t overlay_entries, overlay_bytes;
    uint64_t flush_batches, flushed_sets;
    uint64_t flush_us_total, flush_us_last, flush_us_max;
    uint64_t waits, wait_us; /* back-pressure */
    uint64_t replayed_sets;  /* at the last open */
    /* At the last open: acknowledged record sets that neither RocksDB nor
     * the journal held (a shared-memory journal wiped, by a reboot, while
     * they waited for RocksDB), and the highest such sequence number. */
    uint64_t lost_sets, lost_upto;
    int flusher_threads;
    uint64_t flush_batch_bytes; /* flusher-batch-size, at most write-buffer-size / 4 */
    const char *journal_dir;    /* where the journal files are; the handle's */
    int journal_shm;            /* 1: that folder is in shared memory */
};

struct stor;

/* Opens (creating if needed) the database in o->dir. On success *out owns the
 * handle, freed by stor_close(). On failure returns an error code and, if
 * errmsg is not NULL, a static-or-thread-local message in *errmsg. */
int stor_open(struct stor **out, const struct stor_opts *o, const char **errmsg);

/* Drains write-back into RocksDB, flushes the memtables (so the next open
 * replays nothing) and closes. Accepts NULL. */
void stor_close(struct stor *s);
/* Whether commits go through write-back (stor_opts.writeback). */
bool stor_writeback(const struct stor *s);
/* Tests only: stops as a killed process would, leaving the journal as it is
 * and the overlay unflushed. */
void stor_close_abandon(struct stor *s);

/* Makes every committed record set crash-safe: writes the journal (and
 * fsyncs it under appendfsync always), then hands the record sets to the
 * flusher, which sees none before the journal has them whole. Call before
 * acknowledging a write. Inside a group (stor_group_begin) it stops at the
 * group's start: the group's record sets wait for the first call after
 * the group ends, so no reply may go out that answers one of them before
 * that. 0, or -errno when the journal cannot be written (nothing may be
 * acknowledged then). A no-op without write-back. */
int stor_sync(struct stor *s);
/* A group: the record sets committed between stor_group_begin and the
 * matching stor_group_end survive a crash together or not at all (a
 * script's or a transaction's writes, as Redis's AOF drops a MULTI cut
 * short). Groups nest; only the outermost end closes one. While a group
 * is open, stor_sync and stor_drain act only on what was committed before
 * it, and back-pressure waits at most for that: the overlay can exceed
 * overlay_max_bytes by one group's records. Reads see every commit at
 * once, inside a group or not. Without write-back they only count (each
 * commit writes RocksDB at once). */
void stor_group_begin(struct stor *s);
void stor_group_end(struct stor *s);
/* Drops from the overlay and the journal's queue what the flusher made
 * durable, a bounded slice a call (the flusher itself does appendfsync
 * everysec's fsync). Call between operations, often (every loop
 * iteration). */
void stor_housekeep(struct stor *s);
/* Waits until every committed record set is in RocksDB; inside a group,
 * every one committed before the group began. */
int stor_drain(struct stor *s);
void stor_wb_stats(struct stor *s, struct stor_wb_stats *st);
/* Whether writes can be made durable now: 0 if so; otherwise an error code
 * (KV_ENOSPC for a full disk) and, in msg (cap bytes, may be NULL), what
 * failed: the flusher cannot write RocksDB, or the journal cannot grow. It
 * clears by itself once a retry succeeds. Callers refuse new writes
 * meanwhile: what they accept waits in the overlay and, once that is full,
 * holds the executor. Always 0 without write-back, where each write
 * returns its own error. */
int stor_write_error(struct stor *s, char *msg, size_t cap);
/* Measures the free space of the data folder's file system, less four
 * times what write-back has accepted and not yet written to RocksDB, and
 * keeps stor_write_error set (KV_ENOSPC) while it is below min_free
 * bytes, until it is back above min_free * 1.5 (so that a compaction's
 * swings do not flip it every call). 0 disables. Between calls, commits measure again
 * whenever they have written a share of the room left. A journal in a
 * tmpfs (journal-shm-dir) is watched too, against a floor of 32 MiB. The
 * point is to stop accepting writes while RocksDB and the journal still
 * have room for what was accepted: RocksDB's own recovery from a full disk
 * is fragile, and a failed journal append stops the daemon
 * (docs/storage.md). Returns 1
 * when the state turned low since the last call said, -1 when it
 * recovered, 0 otherwise; *free_out gets the free bytes. */
int stor_disk_check(struct stor *s, uint64_t min_free, uint64_t *free_out);

/* The message of this thread's last storage error. */
const char *stor_errmsg(void);

/* ---- record sets ---- */

enum stor_op_kind {
    STOR_OP_PUT = 1,
    STOR_OP_DEL = 2,
    STOR_OP_DELRANGE = 3, /* key = begin (inclusive), value = end (exclusive) */
};

struct stor_op {
    uint8_t kind, cf;
    bool defer;     /* its prior state is resolved later (stor_batch_defer) */
    bool cold;      /* a put that refreshes a cached copy but fills none (stor_batch_put_cold) */
    uint32_t islot; /* the batch's index slot that held it (stor_batch_clear) */
    size_t koff, klen, voff, vlen; /* into the batch's arena */
    /* The key's hash (the write-back overlay's, wb_ov_key_hash), computed
     * once: the batch's index, the overlay's and housekeeping all use it.
     * 0 for a range delete. */
    uint64_t hash;
};

/* A record set: puts and deletes of encoded keys, applied atomically and in
 * order by stor_commit(). It also answers point look-ups of its own pending
 * writes, so one type operation reads its own writes before it commits. */
struct stor_batch {
    struct stor_op *ops;
    size_t nops, capops;
    char *arena;
    size_t used, caparena;
    uint32_t *index; /* open addressing: op number + 1, 0 = empty */
    size_t capindex;
    size_t nranges;
};

void stor_batch_init(struct stor_batch *b);
void stor_batch_destroy(struct stor_batch *b); /* frees memory; b may be re-inited */
/* Empties b in time proportional to what it held, keeping its memory for
 * reuse up to 8 times that (and small initial sizes in any case). */
void stor_batch_clear(struct stor_batch *b);
/* Key and value bytes are copied. */
void stor_batch_put(struct stor_batch *b, int cf, const char *k, size_t kn, const char *v,
                    size_t vn);
/* A put whose record the commit hook's caches should refresh where they
 * hold it, not fill (list elements: a queue's pushes would push the hot
 * records out of the shm cache). */
void stor_batch_put_cold(struct stor_batch *b, int cf, const char *k, size_t kn, const char *v,
                         size_t vn);
void stor_batch_del(struct stor_batch *b, int cf, const char *k, size_t kn);
void stor_batch_del_range(struct stor_batch *b, int cf, const char *lo, size_t lon, const char *hi,
                          size_t hin);

/* ---- prior states resolved later (write-back only) ----
 *
 * A caller that reads what RocksDB held for a key before a write only to
 * keep counts may mark the write instead (stor_batch_defer), when the
 * overlay holds nothing for the key (stor_peek: STOR_ABSENT): RocksDB then
 * has the key's last state, and keeps it until the flusher writes the
 * record set. Before that write, or when the caller settles, the resolver
 * gets the write and that prior record: on the write-back's threads (its
 * resolver, the flusher) or on the caller's, always under one lock, in
 * commit order, once each. */
typedef void (*stor_resolve_fn)(void *arg, int kind, const char *k, size_t kn, const char *v,
                                size_t vn, const char *old, size_t oldn, bool had);
/* Whether writes may be deferred: write-back is on and a resolver is set. */
bool stor_can_defer(const struct stor *s);
/* Sets the resolver (before any deferred write). */
void stor_set_resolver(struct stor *s, stor_resolve_fn fn, void *arg);
/* Marks op i of b (a put or delete) deferred. */
void stor_batch_defer(struct stor_batch *b, size_t i);
/* Resolves every deferred write committed so far, then calls fold(arg)
 * under the resolver's lock, so fold sees every resolution up to now and
 * none runs meanwhile. With resolve false it only folds what the flusher
 * resolved. 0, or the error of a RocksDB read (those writes stay
 * unresolved and are tried again later). The executor's. */
int stor_resolve_settle(struct stor *s, bool resolve, void (*fold)(void *arg), void *arg);
/* fold(arg) under the resolver's lock if it is free now; whether it ran. */
bool stor_resolve_fold_try(struct stor *s, void (*fold)(void *arg), void *arg);

enum stor_lookup {
    STOR_ABSENT = 0, /* the batch says nothing about this key */
    STOR_PUT = 1,    /* *v, *vn: the pending value, valid until the batch changes */
    STOR_DELETED = 2,
};
int stor_batch_lookup(const struct stor_batch *b, int cf, const char *k, size_t kn, const char **v,
                      size_t *vn);

static inline const char *stor_op_key(const struct stor_batch *b, const struct stor_op *op)
{
    return b->arena + op->koff;
}
static inline const char *stor_op_value(const struct stor_batch *b, const struct stor_op *op)
{
    return b->arena + op->voff;
}
/* Whether op i is the newest write of its key in b, from the index slot it
 * took (the index keeps each key's newest op): O(1). Not for range deletes. */
static inline int stor_op_newest(const struct stor_batch *b, size_t i)
{
    return b->index[b->ops[i].islot] == i + 1;
}

/* Applies the record set atomically. Returns 0, KV_ENOSPC, KV_ECORRUPT or
 * KV_ESTORAGE (message in stor_errmsg()). The batch is left as it was. */
int stor_commit(struct stor *s, const struct stor_batch *b);

/* ---- reads ---- */

/* Point read. On 0, *v is a malloc'd copy the caller frees with free() (never
 * NULL, even for an empty value). KV_ENOTFOUND when absent. */
int stor_get(struct stor *s, int cf, const char *k, size_t kn, char **v, size_t *vn);
/* n point reads of one family, as stor_get each: rc[i] is 0 (v[i], vn[i]
 * as stor_get gives them), KV_ENOTFOUND or an error. What the overlay
 * lacks is read from RocksDB in batches (one MultiGet each), which shares
 * the look-ups' work where n point reads each did all of it. Keys may
 * repeat. */
void stor_get_many(struct stor *s, int cf, size_t n, const char *const *k, const size_t *kn,
                   char **v, size_t *vn, int *rc);
/* The hash a record set's op keeps for (cf, k) (stor_op.hash). */
uint64_t stor_key_hash(int cf, const char *k, size_t kn);
/* What the write-back overlay alone knows of committed (cf, k), whose hash
 * is h: STOR_PUT with *v, *vn (valid until the next commit), STOR_DELETED,
 * or STOR_ABSENT when only RocksDB can tell. Reads no RocksDB record. */
int stor_peek(const struct stor *s, uint64_t h, int cf, const char *k, size_t kn, const char **v,
              size_t *vn);

/* A hint that (cf, k) is read or written soon: stor_prefetch_slot() starts
 * loading the overlay's hash slot for it into the CPU cache and returns the
 * key's overlay hash; stor_prefetch_node(), given that hash once the slot
 * has had time to arrive, the node the slot points at. Change nothing;
 * any hash will do. */
uint64_t stor_prefetch_slot(const struct stor *s, int cf, const char *k, size_t kn);
void stor_prefetch_node(const struct stor *s, uint64_t hash);

/* An ordered iterator over cf restricted to [lo, hi). Either bound may be
 * NULL for "unbounded"; both are copied. Never NULL (aborts on OOM). Free
 * with stor_it_free(). key/value pointers stay valid until the next move. */
struct stor_it;
struct stor_it *stor_it_create(struct stor *s, int cf, const char *lo, size_t lon, const char *hi,
                               size_t hin);
/* The same over RocksDB alone, without the overlay's pending writes: a
 * seek never sorts the overlay, whatever a write burst left waiting in it
 * (the key filter's rebuild pairs it with stor_ov_each). */
struct stor_it *stor_it_create_raw(struct stor *s, int cf, const char *lo, size_t lon,
                                   const char *hi, size_t hin);
void stor_it_seek(struct stor_it *it, const char *k, size_t kn);      /* first >= k */
void stor_it_seek_prev(struct stor_it *it, const char *k, size_t kn); /* last <= k */
void stor_it_first(struct stor_it *it);
void stor_it_last(struct stor_it *it);
void stor_it_next(struct stor_it *it);
void stor_it_prev(struct stor_it *it);
int stor_it_valid(const struct stor_it *it);
const char *stor_it_key(const struct stor_it *it, size_t *n);
const char *stor_it_value(const struct stor_it *it, size_t *n);
/* The same, but one move of RocksDB's side passes at most max_skip entries
 * that nothing sees (tombstones, older versions; 0: no limit): past that
 * the RocksDB side stops as if at its end, and stor_it_stopped() says so.
 * What the iterator gave after that point is not to be trusted, as
 * entries before it may have been passed over: a walk bounded so is
 * walked again, shorter or without the limit. */
struct stor_it *stor_it_create_limited(struct stor *s, int cf, const char *lo, size_t lon,
                                       const char *hi, size_t hin, uint64_t max_skip);
/* 0 once the iterator ran off its range cleanly (or stopped at its skip
 * limit), or an error code. */
int stor_it_status(const struct stor_it *it);
/* Whether RocksDB's side stopped at stor_it_create_limited's limit. */
bool stor_it_stopped(const struct stor_it *it);
/* Calls fn(arg, dir, k, kn) each time a move to the range's edge lands on
 * an entry: stor_it_first() or a seek to or below the lower bound (dir 1),
 * stor_it_last() or a seek_prev to or past the upper bound (dir -1).
 * Nothing lies between that edge and k but what no reader sees (deleted or
 * older records). k is valid during the call. Not on a limited iterator. */
typedef void (*stor_it_edge_fn)(void *arg, int dir, const char *k, size_t kn);
void stor_it_on_edge(struct stor_it *it, stor_it_edge_fn fn, void *arg);
void stor_it_free(struct stor_it *it); /* accepts NULL */

/* A frozen run of records in key order, which snapshot iterators read: a
 * copy the caller keeps of a small range (db_scache.c's cache of small
 * collections). Built by stor_snap_new(), room for n records of bytes key
 * and value bytes in all to start with (it grows), then stor_snap_add()
 * of each in key order. Counted references: the maker holds one, each
 * iterator on it another; stor_snap_unref() of the last frees it. */
struct stor_snap {
    size_t n, cap, used, room;
    unsigned refs;
    struct stor_snap_rec {
        size_t koff, kn, voff, vn;
    } * rec;
    char *data;
};
struct stor_snap *stor_snap_new(size_t n, size_t bytes);
void stor_snap_add(struct stor_snap *sn, const char *k, size_t kn, const char *v, size_t vn);
void stor_snap_unref(struct stor_snap *sn); /* accepts NULL */
/* The memory sn holds, for the caller's accounting. */
static inline size_t stor_snap_bytes(const struct stor_snap *sn)
{
    return sizeof *sn + sn->cap * sizeof *sn->rec + sn->room;
}
/* An iterator over sn's records (it takes a reference): every move and
 * read of stor_it works on it; status 0, never stopped, no edge calls. */
struct stor_it *stor_it_create_snap(struct stor_snap *sn);
/* Deletes that iterators on the calling thread stepped over without
 * showing them: a running total, so a walk's count is the difference of
 * two reads. It takes in the overlay's pending deletes always, RocksDB's
 * tombstones only while stor_skips_watch(true) is in force (RocksDB then
 * counts into the thread's perf context, which costs each of its
 * operations a little; stor_thread_quiet() leaves it off). */
void stor_skips_watch(bool on);
uint64_t stor_skips(void);
/* A thread that read storage (a store of its own, opened on a
 * checkpoint) and is about to exit: frees what reads kept for the thread
 * (its perf context). */
void stor_thread_end(void);
/* How many of cf's records wait in the write-back overlay for the order
 * that a walk needs (0 without write-back). A walk orders those of the
 * bands its range spans (wb_ov.h): a walk over a few slots, a few
 * sixty-fourths of them, one over all slots, all. */
size_t stor_waiting(const struct stor *s, int cf);
/* Seeks and steps of storage iterators (not snapshot ones) on the calling
 * thread: a running total, so a walk's count is the difference of two
 * reads (db_scache.c weighs a copy against it). */
uint64_t stor_moves(void);

/* ---- maintenance ---- */

/* A key range of a column family: [lo, hi), hi NULL for no end. */
struct stor_range {
    int cf;
    char *lo, *hi;
    size_t lon, hin;
};
#define STOR_COMPACT_RANGES 2
/* Requests below this far apart (from the last one taken) are dropped. */
#define STOR_COMPACT_GAP_US 1000000u
/* Asks a thread of the engine's own to compact the n ranges (at most
 * STOR_COMPACT_RANGES, copied) down to the last level, the memtables they
 * overlap flushed first, so that what deletes left in them goes, and with
 * it the cost of every walk that steps over it. One set of ranges runs at
 * a time and one may wait; a request that finds one waiting, comes
 * within STOR_COMPACT_GAP_US of the last one taken, or comes while the
 * disk is short of room (stor.h, min-free-disk), is dropped. Returns
 * whether it was taken. Never blocks on a compaction. Executor only. */
bool stor_compact_async(struct stor *s, const struct stor_range *r, size_t n);
/* Sets of ranges taken, and compacted, so far (INFO storage). */
void stor_compact_async_stats(struct stor *s, uint64_t *asked, uint64_t *done);

/* Flushes memtables and compacts the whole column family, running the
 * compaction filters over every record. Blocks until done. */
int stor_compact(struct stor *s, int cf);
/* Flushes every column family's memtables to table files and waits for
 * it. The one call here any thread may make while the executor goes on
 * (RocksDB locks it): a checkpoint made after it has little left to
 * flush, so its pause on the executor is short. */
int stor_flush_memtables(struct stor *s);
/* Writes a consistent checkpoint (hard links where possible) into dir, which
 * must not exist yet. */
int stor_checkpoint(struct stor *s, const char *dir);
/* RocksDB's name of a column family ("metadata", ...). */
const char *stor_cf_name(int cf);
/* A RocksDB integer property of a column family ("rocksdb.estimate-num-keys",
 * "rocksdb.total-sst-files-size", ...). */
int stor_property(struct stor *s, int cf, const char *name, uint64_t *out);
/* Calls fn with the overlay hash (stor_key_hash) of every key of cf the
 * overlay holds a pending value for, in no order: the writes a
 * stor_it_create_raw iterator does not see. O(the overlay's index): false,
 * and nothing called, while that index has more than max_slots slots. */
bool stor_ov_each(struct stor *s, int cf, size_t max_slots, void (*fn)(void *arg, uint64_t hash),
                  void *arg);
/* RocksDB's latest sequence number: every write to the database moves it,
 * so a file saved beside the data can tell whether it still describes it
 * (db's key counts). */
uint64_t stor_latest_seq(struct stor *s);
/* The data folder (stor_opts.dir); the handle's. */
const char *stor_dir(const struct stor *s);
/* RocksDB's estimate of the on-disk bytes of cf in [lo, hi). */
int stor_approx_size(struct stor *s, int cf, const char *lo, size_t lon, const char *hi, size_t hin,
                     uint64_t *out);
/* Counts records of cf in [lo, hi) by iteration (tests and tools). */
int stor_count(struct stor *s, int cf, const char *lo, size_t lon, const char *hi, size_t hin,
               uint64_t *out);

/* Wall-clock time in ms, the clock expiry is judged by. A test may set
 * stor_clock_override to a fixed time (0 restores the real clock). */
uint64_t stor_now_ms(void);
extern uint64_t stor_clock_override;
/* CLOCK_MONOTONIC in µs: for durations. */
uint64_t stor_mono_us(void);

#endif
