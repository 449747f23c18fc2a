/*
 * stor_int — the engine's internals, shared by stor.c (RocksDB, reads,
 * iterators) and stor_wb.c (journal, flusher, replay). Not an API.
 */
#ifndef SHMKV_STOR_INT_H
#define SHMKV_STOR_INT_H

#include <pthread.h>
#include <stdbool.h>

#include <rocksdb/c.h>

#include "stor.h"
#include "wb_ov.h"

/* The reserved key holding the last record set RocksDB applied, written to
 * every column family with each flusher batch: db 255, slot 0xffff, beyond
 * every user key (slots stay below 0x4000) and not a valid sub key. */
#define STOR_APPLIED_KEY "\xff\xff\xff" "applied"
#define STOR_APPLIED_KEYLEN 10

/* A committed record set: a journal record, header and payload, exactly as
 * it is written to the journal file and read back on replay.
 *   magic(4) seq(8) len(4) crc32c(4) | payload(len)
 *   payload = ops: kind(1) cf(1) klen(4) vlen(4) key value */
#define WB_MAGIC 0x534b4a31u /* "SKJ1" */
#define WB_HDR 20
struct wb_chunk;
struct wb_rec {
    struct wb_rec *next;
    struct wb_chunk *chunk; /* the chunk it was cut from; NULL: a malloc of its own */
    uint64_t seq;
    size_t len; /* of data, header included */
    /* Each op's overlay hash, in payload order, copied from the record
     * set (stor_op.hash): the overlay's writes and housekeeping's
     * prefetches and forgets then hash nothing. Lies in the same
     * allocation, past data; never journaled. */
    uint64_t *hash;
    size_t nops;
    /* The payload offsets of its deferred ops (stor_batch_defer), in the
     * same allocation past hash; rdone of them resolved so far (under rmu). */
    uint32_t *doff;
    uint32_t ndefer, rdone;
    char data[];
};

struct wb_seg {
    uint64_t first, last; /* sequence numbers it holds */
    uint64_t bytes;
};

/* The room a shared-memory journal keeps free in its tmpfs: at start it
 * must have the overlay's limit plus this, and below it write commands are
 * refused (stor_disk_check), since an append the tmpfs refuses stops the
 * daemon (nothing unjournaled may be acknowledged). */
#define STOR_JSHM_FLOOR (32u << 20)

struct stor {
    rocksdb_t *db;
    /* Compaction filters (RocksDB's threads) read meta records through
     * s->db; gc_mu orders those reads before close frees anything, and
     * gc_open says whether they may run at all. */
    pthread_mutex_t gc_mu;
    bool gc_open;
    /* Range compactions that stor_compact_async asked for: at most one
     * set waits (creq, ncreq) while one runs on cth, all under cmu. */
    pthread_mutex_t cmu;
    pthread_cond_t ccv;
    pthread_t cth;
    bool cth_started, cstop;
    struct stor_range creq[STOR_COMPACT_RANGES];
    size_t ncreq;
    uint64_t clast_us, c_asked, c_done;
    rocksdb_column_family_handle_t *cf[STOR_CF_COUNT];
    rocksdb_options_t *dbopts;
    rocksdb_options_t *cfopts[STOR_CF_COUNT];
    rocksdb_readoptions_t *ropts;
    rocksdb_writeoptions_t *wopts;
    rocksdb_writeoptions_t *wopts_nowal; /* the flusher's with a disk journal: it is the log */
    /* The same two with RocksDB's memtable insert hint, for the flusher's
     * batches that hold no range delete (stor_wb.c, flush_wopts). */
    rocksdb_writeoptions_t *wopts_hint, *wopts_nowal_hint;
    struct stor_opts o;
    char *dir;

    /* ---- write-back; the executor's unless said otherwise ---- */
    bool wb;
    /* Where the journal files are: dir/journal, or a folder in shared memory
     * (jshm), named in dir/journal-shm. With jshm the flusher writes
     * RocksDB's WAL, the disk log; without, the journal is the disk log. */
    bool jshm;
    char *jdir;
    /* Free disk space (stor_disk_check): the executor's own. disk_low is
     * data_low or jshm_low: the data folder's file system, or the tmpfs of
     * a shared-memory journal, is short of room. */
    bool disk_low, disk_low_told, data_low, jshm_low;
    uint64_t disk_min_free, disk_free, disk_budget;
    struct wb_ov ov;
    uint64_t last_seq;       /* the last sequence number given out */
    uint64_t pruned_seq;     /* overlay entries up to here are forgotten */
    uint64_t journaled_seq;  /* written to the journal up to here */
    size_t hk_credit;        /* journal bytes committed since the last housekeeping */
    struct wb_rec qsentinel; /* the queue of record sets: qsentinel.next oldest */
    /* The queue's newest record, and the bytes committed since stor_sync
     * last handed records to the flusher (moving qtail to ltail): one lock
     * per sync point, not one per commit. The executor links records past
     * qtail without the lock, so the flusher never reads beyond qtail. */
    struct wb_rec *ltail;
    size_t lbytes;
    struct wb_rec *jnext;    /* first record not yet in the journal */
    struct wb_chunk *rchunk; /* where the next record is cut from (rec_alloc) */
    int jfd;                 /* the journal file being appended */
    struct wb_seg jcur;      /* what that file holds */
    struct stor_wb_stats st;

    /* shared with the flusher, under mu */
    pthread_mutex_t mu;
    pthread_cond_t work;     /* the flusher waits for record sets */
    pthread_cond_t done;     /* the executor waits for progress */
    struct wb_rec *fcursor;  /* the last record set the flusher applied */
    struct wb_rec *qtail;    /* the last one handed to it (written by the executor) */
    uint64_t durable_seq;    /* = fcursor->seq */
    size_t qbytes;           /* queued beyond fcursor, not yet in RocksDB */
    uint64_t fl_batches, fl_sets, fl_us_total, fl_us_last, fl_us_max;
    bool stop, abandon, flusher_running;
    /* Journal files, for the flusher: it deletes closed ones once durable
     * and does appendfsync everysec's fsync, so neither stalls the executor. */
    struct wb_seg *segs;     /* closed journal files, oldest first */
    size_t nsegs, capsegs;
    /* appendfsync always with the journal on disk (jzero): journal files
     * are written whole with zeros before use, and a thread of their own
     * (jprep) makes the next one, the spare, while the current one fills
     * (stor_wb.c, "journal files"). spare is one of enum wb_spare. */
    bool jzero, jprep_stop, jprep_running;
    int spare;
    pthread_cond_t jprep_cv;
    pthread_t jprep;
    int *sync_fds;           /* dups of journal files to fsync; the last is current */
    size_t nsync_fds;
    uint64_t last_fsync_ms;  /* the flusher's */
    uint64_t wal_synced_seq; /* the flusher's: with jshm, RocksDB's WAL is synced up to here */
    bool flusher_idle;       /* waiting for work: a commit wakes it */
    /* The flusher's last RocksDB write failed (a full disk): its error
     * code, read without the lock by stor_write_error, and RocksDB's text. */
    int werr_flush;
    char werr_msg[256];
    bool flusher_filling;    /* waiting for a batch to fill: a full batch wakes it */
    bool flush_now;          /* a writer waits for the flusher: no waiting to fill */
    size_t flush_batch_max;
    pthread_t flusher;
    /* the flusher's own: a batch's ops, sorted before they go to RocksDB */
    struct wb_fop *fops;
    size_t nfops, capfops;
    struct wb_sitem *sitems; /* the sort's */
    size_t capsitems;
    /* A batch's writes, split by user key over up to nparts WriteBatches
     * that the flusher and nparts - 1 helper threads write at once (RocksDB
     * inserts them into its memtables in parallel): over nload of them
     * while writes keep coming, over all once they stop (parts_open).
     * parts[0] is the flusher's. */
    int nparts, nload;
    struct wb_part *parts;
    pthread_mutex_t pmu;        /* over the four below */
    pthread_cond_t pgo, pdone;
    uint64_t pgen;              /* a new batch (or the stop) for the helpers */
    int pndone;                 /* helpers done with this one */
    bool pstop;
    /* Deferred prior states (stor_batch_defer). rmu orders the resolver's
     * calls, from the flusher and the executor. dq is a ring of the record
     * sets with deferred ops not all resolved, in order: the executor
     * appends (dqtail, atomic; it grows dq only under rmu), the resolver
     * takes from dqhead (under rmu, atomic for the executor's fullness
     * test). A record set in it is never freed: the flusher resolves a
     * batch before writing it. So a walk touches only record sets with
     * work, not every one committed since the last. */
    pthread_mutex_t rmu;
    stor_resolve_fn rfn;
    void *rarg;
    struct wb_rec **dq;
    size_t dqcap; /* a power of two, or 0 */
    uint64_t dqhead, dqtail;
    /* The resolver thread (resolver_main): rstop under mu, rcv wakes it
     * to stop. */
    pthread_t resolver;
    pthread_cond_t rcv;
    bool rstop, rrunning;
    /* Tests only (test_stor_wb): while test_hold is set, the flusher holds
     * its own part of a split batch after the helpers have theirs, and sets
     * test_held. Atomic. */
    int test_hold, test_held;
};

/* One write of a flush batch: its op, pointing into a journal record, and
 * its place in the batch. */
struct wb_fop {
    const char *k, *v;
    uint32_t kn, vn;
    uint32_t ord;
    uint8_t kind, cf;
};

/* A flush batch's sort item: f[i], a chunk of its key (stor_wb.c), and
 * WB_SITEM_DUP where a later write of the same key follows it. */
struct wb_sitem {
    uint64_t d;
    uint32_t i;
    uint32_t flags;
};
#define WB_SITEM_DUP 1u

struct wb_part {
    struct stor *s;
    rocksdb_writebatch_t *wb;
    char *err; /* RocksDB's, from the last write */
    pthread_t th;
};

/* stor.c */
int stor_take_err(char *err);
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

/* stor_wb.c */
int wb_open(struct stor *s, const char **errmsg);
void wb_close(struct stor *s, bool drain);
int wb_commit(struct stor *s, const struct stor_batch *b);
/* Journal bytes accepted and not yet in RocksDB (0 without write-back);
 * the executor's. */
size_t wb_queued_bytes(struct stor *s);
/* Which user key (db, slot) a record of column family cf belongs to: the
 * parallel flusher keeps each user key's records in one part. */
uint32_t wb_route(int cf, const char *k, size_t kn);
/* Orders the writes f[0..n) by (cf, key), those of one key by ord, as a
 * comparison of (cf, key, ord) would: the j-th is f[result[j].i], flagged
 * WB_SITEM_DUP if the next is of the same key. *buf
 * (*cap items) is scratch the caller keeps between calls and frees; the
 * result lies in it. */
const struct wb_sitem *wb_fops_order(const struct wb_fop *f, size_t n, struct wb_sitem **buf,
                                     size_t *cap);
/* Appends the ops of a journal payload to a RocksDB WriteBatch. */
int wb_payload_to_batch(struct stor *s, const char *p, size_t n, rocksdb_writebatch_t *wb);

#endif
