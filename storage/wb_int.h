/*
 * wb_int — write-back's internals: the journal record, and the parts of
 * struct stor that write-back keeps, one struct per thread or part that
 * owns them. Shared by wb.c (the executor's side), wb_journal.c, wb_flush.c,
 * wb_resolve.c and wb_replay.c, and by stor.c, which reads the overlay and
 * the journal's counters. Not an API: see stor.h.
 *
 * Owners, and how they meet:
 *   struct wb_journal   the executor's alone (the thread that commits)
 *   struct wb_queue     the executor and the flusher, under its mu
 *   struct wb_flusher   the flusher thread and its part helpers (pmu)
 *   struct wb_jprep     the journal-file preparer; its state under wb_queue.mu
 *   struct wb_resolver  the resolver thread, the flusher and the executor,
 *                       under its mu
 */
#ifndef SHMKV_WB_INT_H
#define SHMKV_WB_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <rocksdb/c.h>

#include "stor.h"
#include "wb_ov.h"

struct stor;

/* A committed record set: a journal record, header and payload, exactly as
 * it is written to the journal file and read back on replay.
 *   magic(4) seq(8) len(4) crc32c(4) | payload(len)
 *   payload = ops: kind(1) cf(1) klen(4) vlen(4) key value
 * Each record of a group (stor_group_begin) but its last carries
 * WB_MAGIC_GROUP: the group goes on with the next record. The CRC leaves
 * the magic out, so stor_group_end can turn the last one back to WB_MAGIC
 * in memory: no sync point journals a record of an open group. */
#define WB_MAGIC 0x534b4a31u       /* "SKJ1" */
#define WB_MAGIC_GROUP 0x534b4a47u /* "SKJG" */
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
     * same allocation past hash; rdone of them resolved so far (under the
     * resolver's mu). */
    uint32_t *doff;
    uint32_t ndefer, rdone;
    char data[];
};

/* A journal file: the sequence numbers of the records it holds. */
struct wb_seg {
    uint64_t first, last;
    uint64_t bytes;
};

/* The file in the data folder naming the journal's shared-memory folder. */
#define WB_JSHM_PTR "journal-shm"
/* dir/journal-acked: the durable high-water mark of a shared-memory
 * journal (wb_acked_write), so that a start whose journal a reboot wiped
 * can tell that acknowledged writes were lost. */
#define WB_ACKED "journal-acked"

/* The room a shared-memory journal keeps free in its tmpfs: at start it
 * must have the overlay's limit plus this, and below it write commands are
 * refused (stor_disk_check), since an append the tmpfs refuses stops the
 * daemon (nothing unjournaled may be acknowledged). */
#define STOR_JSHM_FLOOR (32u << 20)

/* The executor's: record sets from commit to the journal file, and the
 * queue's head, which it frees as the flusher passes. */
struct wb_journal {
    /* Where the journal files are: dir/journal, or a folder in shared
     * memory (shm), named in dir/journal-shm. With shm the flusher writes
     * RocksDB's WAL, the disk log; without, the journal is the disk log. */
    bool shm;
    char *dir;
    uint64_t last_seq;      /* the last sequence number given out */
    uint64_t pruned_seq;    /* overlay entries up to here are forgotten */
    uint64_t journaled_seq; /* written to the journal up to here */
    size_t hk_credit;       /* journal bytes committed since the last housekeeping */
    struct wb_rec head;     /* the queue of record sets: head.next oldest */
    /* The queue's newest record, and the bytes committed since stor_sync
     * last handed records to the flusher (moving the queue's tail to
     * ltail): one lock per sync point, not one per commit. The executor
     * links records past the queue's tail without the lock, so the flusher
     * never reads beyond it. */
    struct wb_rec *ltail;
    size_t lbytes;
    struct wb_rec *next; /* first record not yet in the journal */
    /* The last record in the journal, and the bytes journaled since
     * stor_sync last handed records to the flusher: it hands over only
     * what the journal has whole. */
    struct wb_rec *jtail;
    size_t jbytes;
    /* An open group (stor_group_begin): its depth, and the last sequence
     * number before it, where sync points, drains and back-pressure stop
     * while it is open. */
    unsigned group_depth;
    uint64_t group_seq0;
    struct wb_chunk *chunk;  /* where the next record is cut from (wb_journal.c) */
    size_t chunk_bytes;      /* the size of those chunks */
    int fd;                  /* the journal file being appended */
    struct wb_seg cur;       /* what that file holds */
    struct stor_wb_stats st; /* waits, replayed sets */
};

/* The executor's and the flusher's, under mu. */
struct wb_queue {
    pthread_mutex_t mu;
    pthread_cond_t work;    /* the flusher waits for record sets */
    pthread_cond_t done;    /* the executor waits for progress */
    struct wb_rec *fcursor; /* the last record set the flusher applied */
    struct wb_rec *tail;    /* the last one handed to it (written by the executor) */
    uint64_t durable_seq;   /* = fcursor->seq */
    size_t bytes;           /* queued beyond fcursor, not yet in RocksDB */
    uint64_t batches, sets, us_total, us_last, us_max; /* the flusher's, for INFO */
    bool stop, abandon;
    bool flusher_idle;    /* waiting for work: a sync point wakes it */
    bool flusher_filling; /* waiting for a batch to fill: a full batch wakes it */
    bool flush_now;       /* a writer waits for the flusher: no waiting to fill */
    /* Journal files, for the flusher: it deletes closed ones once durable
     * and does appendfsync everysec's fsync, so neither stalls the executor. */
    struct wb_seg *segs; /* closed journal files, oldest first */
    size_t nsegs, capsegs;
    int *sync_fds; /* dups of journal files to fsync; the last is current */
    size_t nsync_fds;
    bool dir_unsynced; /* a journal file was made since the folder's last fsync */
    /* The flusher's last RocksDB write failed (a full disk): its error
     * code, read without the lock by stor_write_error, and RocksDB's text. */
    int werr;
    char werr_msg[256];
};

/* A part of a split flush batch: its WriteBatch and the helper thread that
 * writes it (parts[0] is the flusher's own). */
struct wb_part {
    struct stor *s;
    rocksdb_writebatch_t *wb;
    char *err; /* RocksDB's, from the last write */
    pthread_t th;
};

/* The flusher thread's own, and its part helpers'. */
struct wb_flusher {
    pthread_t th;
    bool running;
    size_t batch_max; /* bytes a batch takes at most (set at open) */
    uint64_t last_fsync_ms;
    uint64_t wal_synced_seq; /* with a shared-memory journal, RocksDB's WAL is synced up to here */
    uint64_t acked_mark;     /* ... and dir/journal-acked holds this sequence number, */
    uint64_t acked_ms;       /* written then */
    /* a batch's ops, sorted before they go to RocksDB */
    struct wb_fop *fops;
    size_t nfops, capfops;
    struct wb_sitem *sitems; /* the sort's */
    size_t capsitems;
    /* A batch's writes, split by user key over up to nparts WriteBatches
     * that the flusher and nparts - 1 helper threads write at once (RocksDB
     * inserts them into its memtables in parallel): over nload of them
     * while writes keep coming, over all once they stop (wb_parts_open). */
    int nparts, nload;
    struct wb_part *parts;
    pthread_mutex_t pmu; /* over the four below */
    pthread_cond_t pgo, pdone;
    uint64_t pgen; /* a new batch (or the stop) for the helpers */
    int pndone;    /* helpers done with this one */
    bool pstop;
};

/* The journal-file preparer (appendfsync always with the journal on disk,
 * zero): journal files are written whole with zeros before use, and this
 * thread makes the next one, the spare, while the current one fills
 * (wb_journal.c, "journal files"). spare is one of enum wb_spare, under
 * wb_queue.mu. */
struct wb_jprep {
    bool zero, stop, running;
    int spare;
    pthread_cond_t cv;
    pthread_t th;
};

/* Deferred prior states (stor_batch_defer). mu orders the resolver's
 * calls, from the flusher and the executor. dq is a ring of the record
 * sets with deferred ops not all resolved, in order: the executor appends
 * (dqtail, atomic; it grows dq only under mu), the resolver takes from
 * dqhead (under mu, atomic for the executor's fullness test). A record set
 * in it is never freed: the flusher resolves a batch before writing it. So
 * a walk touches only record sets with work, not every one committed since
 * the last. The resolver thread: stop under wb_queue.mu, cv wakes it to
 * stop. */
struct wb_resolver {
    pthread_mutex_t mu;
    stor_resolve_fn fn;
    void *arg;
    struct wb_rec **dq;
    size_t dqcap; /* a power of two, or 0 */
    uint64_t dqhead, dqtail;
    pthread_t th;
    pthread_cond_t cv;
    bool stop, running;
};

/* One write of a flush batch: its op, pointing into a journal record, and
 * its place in the batch. */
struct wb_fop {
    const char *k, *v;
    uint32_t kn, vn;
    uint32_t ord;
    uint8_t kind, cf;
};

/* A flush batch's sort item: f[i], a chunk of its key (wb_flush.c), and
 * WB_SITEM_DUP where a later write of the same key follows it. */
struct wb_sitem {
    uint64_t d;
    uint32_t i;
    uint32_t flags;
};
#define WB_SITEM_DUP 1u

/* ---- wb.c: the executor's side ---- */

int wb_open(struct stor *s, const char **errmsg);
void wb_close(struct stor *s, bool drain);
int wb_commit(struct stor *s, const struct stor_batch *b);
/* Journal bytes accepted and not yet in RocksDB (0 without write-back);
 * the executor's. */
size_t wb_queued_bytes(struct stor *s);

/* ---- wb_journal.c ---- */

/* The checksum of a journal record: its sequence number and payload. */
uint32_t wb_rec_crc(const char *hdr, const char *payload, size_t n);
/* Builds the journal record of record set b with sequence number seq. */
struct wb_rec *wb_rec_build(struct stor *s, const struct stor_batch *b, uint64_t seq);
void wb_rec_free(struct stor *s, struct wb_rec *r);
/* Walks the ops of a payload: fn(arg, kind, cf, k, kn, v, vn). Returns 0,
 * or KV_ECORRUPT if an op runs past the payload. Inline, so that each
 * caller's fn is inlined into the walk: the commit and housekeeping walk
 * every record set. */
typedef void (*wb_op_fn)(void *arg, int kind, int cf, const char *k, size_t kn, const char *v,
                         size_t vn);
static inline int wb_payload_walk(const char *p, size_t n, wb_op_fn fn, void *arg)
{
    size_t off = 0;
    while (off < n) {
        if (n - off < 10)
            return KV_ECORRUPT;
        int kind = (unsigned char)p[off], cf = (unsigned char)p[off + 1];
        uint32_t kn = enc_get_u32(p + off + 2), vn = enc_get_u32(p + off + 6);
        if (kind < STOR_OP_PUT || kind > STOR_OP_DELRANGE || cf >= STOR_CF_COUNT ||
            kn > n - off - 10 || vn > n - off - 10 - kn)
            return KV_ECORRUPT;
        fn(arg, kind, cf, p + off + 10, kn, p + off + 10 + kn, vn);
        off += 10 + kn + vn;
    }
    return 0;
}

/* A wb_op_fn that appends each op to t's WriteBatch. */
struct wb_to_batch {
    struct stor *s;
    rocksdb_writebatch_t *wb;
};
void wb_op_to_batch(void *arg, int kind, int cf, const char *k, size_t kn, const char *v,
                    size_t vn);
/* Appends the ops of a journal payload to a RocksDB WriteBatch. */
int wb_payload_to_batch(struct stor *s, const char *p, size_t n, rocksdb_writebatch_t *wb);
/* The path of the journal file whose records start at first, in dir. */
void wb_seg_path(const char *dir, uint64_t first, char *out, size_t cap);
/* Opens the journal file whose records start at first (see wb_journal.c). */
int wb_seg_open_new(struct stor *s, uint64_t first, bool at_start);
/* Closes the journal file being appended, handing it to the flusher. */
void wb_seg_close(struct stor *s);
void wb_spare_open(struct stor *s);
void wb_spare_close(struct stor *s, bool clean);
void *wb_jprep_main(void *arg);
/* fsync of the file or folder at path. 0 or -errno. */
int wb_fsync_path(const char *path);
/* Reads a whole file into *buf (the caller frees it). 0 or -errno. */
int wb_read_file(const char *path, char **buf, size_t *n);
/* Chooses where this run's journal lives, sets s->j.dir and s->j.shm, and
 * makes the folder on disk if that is where. 0 or -errno. */
int wb_journal_place(struct stor *s);
/* The shared-memory folder dir/journal-shm names, in out; 0 if it names one
 * (it may be gone: a reboot empties a tmpfs), -ENOENT if there is none. */
int wb_shm_ptr_read(const struct stor *s, char *out, size_t cap);
void wb_shm_ptr_remove(const struct stor *s);
/* dir/journal-acked: writes seq there durably (8 bytes and their CRC32C,
 * in place: one sector), or reads it: 0, -ENOENT when there is none, or
 * KV_ECORRUPT. */
int wb_acked_write(const struct stor *s, uint64_t seq);
int wb_acked_read(const struct stor *s, uint64_t *seq);

/* ---- wb_flush.c ---- */

void *wb_flusher_main(void *arg);
/* Starts and stops the part helpers (see wb_flush.c). */
void wb_parts_open(struct stor *s);
void wb_parts_close(struct stor *s);
/* Adds the applied sequence number seq to wb, in every column family. */
void wb_put_applied(struct stor *s, rocksdb_writebatch_t *wb, uint64_t seq);
/* Syncs RocksDB's WAL (not while the flusher's writes fail). */
int wb_sync_wal(struct stor *s);
/* Flushes every column family's memtable and waits for it. */
int wb_flush_memtables(struct stor *s);
/* The CLOCK_REALTIME time us microseconds from now: a deadline for
 * pthread_cond_timedwait. */
struct timespec wb_deadline_in(uint64_t us);
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

/* ---- wb_resolve.c ---- */

/* Resolves the deferred ops of the record sets in the ring up to upto.
 * Under s->rs.mu. NULL, or RocksDB's error (the caller frees it). */
char *wb_resolve_upto(struct stor *s, const struct wb_rec *upto);
/* Appends r, which has deferred ops, to the ring (the executor's). */
void wb_dq_push(struct stor *s, struct wb_rec *r);
void *wb_resolver_main(void *arg);

/* ---- wb_replay.c ---- */

/* Replays every record set beyond RocksDB's applied sequence number, then
 * removes the journal files (see wb_replay.c): at every open, write-back
 * on or not. 0, or an error with *errmsg naming the file and offset where
 * a record is bad. */
int wb_replay(struct stor *s, const char **errmsg);

/* ---- tests only ---- */

/* Knobs for the write-back tests (test_wb_flush, test_wb_journal), never set by the daemon.
 * no_flusher and rec_chunk_bytes are read by wb_open: no flusher thread
 * (nothing reaches RocksDB but by replay), and journal records cut from
 * chunks of this size (0: the default). While hold is set, the flusher
 * holds its own part of a split batch after the helpers have theirs, and
 * sets held (both atomic). */
struct wb_test_hooks {
    int no_flusher;
    size_t rec_chunk_bytes;
    int hold, held;
};
extern struct wb_test_hooks wb_test_hooks;

#endif
