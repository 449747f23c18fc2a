/*
 * wb — write-back as the executor drives it: open and close, the commit of
 * a record set (journal record, overlay, back-pressure), housekeeping (the
 * overlay forgets what RocksDB has), drain, write errors and statistics.
 * See stor.h, wb_int.h and docs/writeback.md.
 *
 * Threads: the executor (the daemon's event loop) calls everything here;
 * open starts the flusher, its part helpers, the resolver and the journal
 * file preparer, and close stops them.
 */
#include "stor_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kv_mem.h"

struct wb_test_hooks wb_test_hooks;

/* Applies a record's ops to the overlay (forget false), or forgets them
 * (forget true); hash[] holds each op's hash (wb_rec_build's, from the
 * record set). */
struct to_ov {
    struct wb_ov *ov;
    uint64_t seq;
    bool forget;
    const uint64_t *hash;
};

static void op_to_ov(void *arg, int kind, int cf, const char *k, size_t kn, const char *v,
                     size_t vn)
{
    struct to_ov *t = arg;
    uint64_t h = *t->hash++; /* 0 for a range: housekeeping skips it */
    if (t->forget) {
        if (kind != STOR_OP_DELRANGE)
            wb_ov_forget(t->ov, h, cf, k, kn, t->seq);
        return;
    }
    if (kind == STOR_OP_PUT)
        wb_ov_set(t->ov, h, cf, k, kn, v, vn, t->seq);
    else if (kind == STOR_OP_DEL)
        wb_ov_set(t->ov, h, cf, k, kn, NULL, 0, t->seq);
    else
        wb_ov_set_range(t->ov, cf, k, kn, v, vn, t->seq);
}

/* ---- commit, housekeeping, drain ---- */

/* Where sync points, drains and back-pressure stop: the last record set
 * committed, or inside a group the last one before it (the group's go to
 * the journal and the flusher together, once it ends). */
static uint64_t sync_limit(const struct stor *s)
{
    return s->j.group_depth ? s->j.group_seq0 : s->j.last_seq;
}

/* Waits until the flusher moves, unless it has everything up to upto. */
static void wait_progress(struct stor *s, uint64_t upto)
{
    uint64_t t0 = stor_mono_us();
    pthread_mutex_lock(&s->q.mu);
    uint64_t d = s->q.durable_seq;
    if (s->q.durable_seq < upto) {
        /* A flusher waiting for its batch to fill would keep the writer
         * waiting as long. */
        s->q.flush_now = true;
        pthread_cond_signal(&s->q.work);
    }
    while (s->q.durable_seq == d && s->q.durable_seq < upto) {
        struct timespec until = wb_deadline_in(1000000);
        pthread_cond_timedwait(&s->q.done, &s->q.mu, &until);
        if (s->q.werr)
            break; /* the caller decides whether to wait on */
    }
    pthread_mutex_unlock(&s->q.mu);
    s->j.st.waits++;
    s->j.st.wait_us += stor_mono_us() - t0;
}

static bool flusher_behind(struct stor *s, uint64_t upto)
{
    pthread_mutex_lock(&s->q.mu);
    bool behind = s->q.durable_seq < upto;
    pthread_mutex_unlock(&s->q.mu);
    return behind;
}

static void housekeep_all(struct stor *s);

int wb_commit(struct stor *s, const struct stor_batch *b)
{
    size_t maxov = s->o.overlay_max_bytes ? s->o.overlay_max_bytes : 256u << 20;
    /* Back-pressure: above the limit, first forget all that is already
     * durable (housekeeping's slices are for the loop's latency; this is a
     * stall anyway), and wait for the flusher only if that is not enough.
     * Nothing is dropped. Inside a group it waits at most for what came
     * before the group: the group's own records reach the flusher only
     * once it ends, so the overlay may exceed the limit by one group. */
    while (s->ov.bytes > maxov && s->fl.running) {
        housekeep_all(s);
        uint64_t upto = sync_limit(s);
        if (s->ov.bytes <= maxov || !flusher_behind(s, upto))
            break;
        int rc = stor_sync(s); /* what it waits for must be in the journal */
        if (rc)
            return rc;
        wait_progress(s, upto);
    }
    struct wb_rec *r = wb_rec_build(s, b, s->j.last_seq + 1);
    if (s->j.group_depth) /* the group goes on; stor_group_end marks its last */
        enc_put_u32(r->data, WB_MAGIC_GROUP);
    s->j.last_seq = r->seq;
    if (r->ndefer)
        wb_dq_push(s, r);
    struct to_ov t = {&s->ov, r->seq, false, r->hash};
    wb_payload_walk(r->data + WB_HDR, r->len - WB_HDR, op_to_ov, &t);
    s->j.hk_credit += r->len;
    s->j.ltail->next = r; /* past qtail: the flusher does not look yet */
    s->j.ltail = r;
    s->j.lbytes += r->len;
    if (!s->j.next)
        s->j.next = r;
    return 0;
}

void stor_group_begin(struct stor *s)
{
    if (s->j.group_depth++ == 0)
        s->j.group_seq0 = s->j.last_seq;
}

void stor_group_end(struct stor *s)
{
    if (!s->j.group_depth || --s->j.group_depth)
        return; /* not the outermost end */
    /* The group's last record ends it. Nothing of the group has been
     * journaled or handed to the flusher (stor_sync stopped at its start),
     * and the CRC leaves the magic out. */
    if (s->wb && s->j.last_seq > s->j.group_seq0)
        enc_put_u32(s->j.ltail->data, WB_MAGIC);
}

size_t wb_queued_bytes(struct stor *s)
{
    if (!s->wb)
        return 0;
    pthread_mutex_lock(&s->q.mu);
    size_t n = s->q.bytes;
    pthread_mutex_unlock(&s->q.mu);
    return n + s->j.lbytes; /* and those not yet handed to the flusher */
}

#define HK_SLICE (64u << 10) /* journal bytes forgotten per call, beyond the credit */
#define HK_AHEAD 4           /* records between a prefetch step and the next */

/* Runs a prefetch step over r's ops if r is durable; the record after. */
static struct wb_rec *hk_prefetch(struct stor *s, struct wb_rec *r, uint64_t d, int step)
{
    if (!r || r->seq > d)
        return r;
    for (size_t i = 0; i < r->nops; i++)
        if (r->hash[i])
            wb_ov_prefetch(&s->ov, r->hash[i], step);
    return r->next;
}

void stor_housekeep(struct stor *s)
{
    if (!s->wb)
        return;
    pthread_mutex_lock(&s->q.mu);
    uint64_t d = s->q.durable_seq;
    pthread_mutex_unlock(&s->q.mu);
    /* Forget overlay entries that reached RocksDB, unless written since.
     * A bounded amount per call — a fixed slice plus twice what was
     * committed since the last call, so it keeps pace with any write rate
     * — because after a burst of writes, forgetting all of them at once
     * held the loop for milliseconds. */
    size_t budget = HK_SLICE + 2 * s->j.hk_credit;
    s->j.hk_credit = 0;
    /* Each forget is a hash look-up of a key written a flush ago, two
     * cache misses (slot, node): the records HK_AHEAD and 2 * HK_AHEAD
     * ahead have theirs loading meanwhile, node and slot. */
    struct wb_rec *first = s->j.head.next;
    while (first && first->seq <= s->j.pruned_seq)
        first = first->next;
    struct wb_rec *sa = first, *na = first;
    for (int i = 0; i < 2 * HK_AHEAD; i++)
        sa = hk_prefetch(s, sa, d, 1);
    for (int i = 0; i < HK_AHEAD; i++)
        na = hk_prefetch(s, na, d, 2);
    for (struct wb_rec *r = first; r && r->seq <= d && budget; r = r->next) {
        sa = hk_prefetch(s, sa, d, 1);
        na = hk_prefetch(s, na, d, 2);
        struct to_ov t = {&s->ov, r->seq, true, r->hash};
        wb_payload_walk(r->data + WB_HDR, r->len - WB_HDR, op_to_ov, &t);
        s->j.pruned_seq = r->seq;
        budget = r->len < budget ? budget - r->len : 0;
    }
    /* A durable range delete is RocksDB's to apply from now on: drop it
     * whatever the slice reached. Kept until the slice caught up (as it
     * was), it hid records written after it that the slice had already
     * forgotten and RocksDB now held: LRANGE found elements missing
     * ("corrupt record") and GET a nil, right after a FLUSHALL. */
    wb_ov_forget_ranges(&s->ov, d);
    wb_ov_tide(&s->ov, stor_mono_us() / 1000);
    /* Free record sets older than the flusher's cursor, once journaled. */
    pthread_mutex_lock(&s->q.mu);
    struct wb_rec *r;
    while ((r = s->j.head.next) && r->seq < d && r->seq <= s->j.journaled_seq &&
           r->seq <= s->j.pruned_seq) {
        s->j.head.next = r->next;
        wb_rec_free(s, r);
    }
    pthread_mutex_unlock(&s->q.mu);
}

/* Housekeeping goes a slice at a time: repeat until it stops moving. */
static void housekeep_all(struct stor *s)
{
    for (uint64_t before = UINT64_MAX; before != s->j.pruned_seq;) {
        before = s->j.pruned_seq;
        stor_housekeep(s);
    }
}

int stor_drain(struct stor *s)
{
    if (!s->wb)
        return 0;
    int rc = stor_sync(s);
    if (rc)
        return rc;
    uint64_t upto = sync_limit(s);
    while (s->fl.running && flusher_behind(s, upto)) {
        wait_progress(s, upto);
        int e = __atomic_load_n(&s->q.werr, __ATOMIC_ACQUIRE);
        if (e && flusher_behind(s, upto))
            return e; /* RocksDB cannot take them now; the journal has them */
    }
    housekeep_all(s);
    return 0;
}

int stor_write_error(struct stor *s, char *msg, size_t cap)
{
    if (s->disk.data_low) {
        if (msg && cap)
            snprintf(msg, cap, "writing to RocksDB: %s (free disk space below min-free-disk)",
                     strerror(ENOSPC));
        return KV_ENOSPC;
    }
    if (s->disk.jshm_low) {
        if (msg && cap)
            snprintf(msg, cap, "writing the journal: %s (free space in %s below %u MiB)",
                     strerror(ENOSPC), s->j.dir, STOR_JSHM_FLOOR >> 20);
        return KV_ENOSPC;
    }
    if (!s->wb)
        return 0;
    int e = __atomic_load_n(&s->q.werr, __ATOMIC_ACQUIRE);
    if (e && msg && cap) {
        /* A full disk in Redis's words; anything else in RocksDB's. */
        pthread_mutex_lock(&s->q.mu);
        snprintf(msg, cap, "writing to RocksDB: %s",
                 e == KV_ENOSPC ? strerror(ENOSPC) : s->q.werr_msg);
        pthread_mutex_unlock(&s->q.mu);
    }
    return e;
}

void stor_wb_stats(struct stor *s, struct stor_wb_stats *st)
{
    *st = s->j.st;
    st->last_seq = s->j.last_seq;
    pthread_mutex_lock(&s->q.mu);
    st->durable_seq = s->q.durable_seq;
    st->flush_batches = s->q.batches;
    st->flushed_sets = s->q.sets;
    st->flush_us_total = s->q.us_total;
    st->flush_us_last = s->q.us_last;
    st->flush_us_max = s->q.us_max;
    pthread_mutex_unlock(&s->q.mu);
    st->flusher_threads = s->fl.nload;
    st->flush_batch_bytes = s->fl.batch_max;
    st->overlay_entries = s->ov.count;
    st->overlay_bytes = s->ov.bytes;
    uint64_t jb = s->j.cur.bytes;
    pthread_mutex_lock(&s->q.mu);
    for (size_t i = 0; i < s->q.nsegs; i++)
        jb += s->q.segs[i].bytes;
    pthread_mutex_unlock(&s->q.mu);
    st->journal_bytes = jb;
    st->journal_dir = s->j.dir;
    st->journal_shm = s->j.shm;
}

int wb_open(struct stor *s, const char **errmsg)
{
    s->wb = true;
    pthread_mutex_init(&s->q.mu, NULL);
    pthread_cond_init(&s->q.work, NULL);
    pthread_cond_init(&s->q.done, NULL);
    pthread_cond_init(&s->jp.cv, NULL);
    pthread_cond_init(&s->rs.cv, NULL);
    s->q.tail = s->j.ltail = s->j.jtail = &s->j.head;
    s->q.fcursor = &s->j.head;
    s->j.chunk_bytes = wb_test_hooks.rec_chunk_bytes;
    /* A batch goes whole into one memtable, which it can overrun: at most
     * a quarter of write-buffer-size keeps the memtables near that size
     * (with 4 MiB ones, 16 MiB batches made them 14 MiB). */
    size_t wbs = stor_write_buffer_bytes(&s->o);
    s->fl.batch_max = s->o.flush_batch_bytes ? s->o.flush_batch_bytes : 16u << 20;
    if (s->fl.batch_max > wbs / 4)
        s->fl.batch_max = wbs / 4 > 4096 ? wbs / 4 : 4096;
    int rc = wb_replay(s, errmsg);
    if (rc == 0)
        rc = wb_journal_place(s);
    if (rc == 0) {
        s->q.durable_seq = s->j.head.seq = s->fl.wal_synced_seq = s->j.last_seq;
        wb_spare_open(s);
        rc = wb_seg_open_new(s, s->j.last_seq + 1, true);
    }
    if (rc == 0 && s->jp.zero) {
        if (pthread_create(&s->jp.th, NULL, wb_jprep_main, s) != 0)
            rc = -EAGAIN;
        else
            s->jp.running = true;
    }
    if (rc == 0 && !wb_test_hooks.no_flusher) {
        wb_parts_open(s);
        if (pthread_create(&s->fl.th, NULL, wb_flusher_main, s) != 0)
            rc = -EAGAIN;
        else
            s->fl.running = true;
        if (rc == 0 && pthread_create(&s->rs.th, NULL, wb_resolver_main, s) != 0)
            rc = -EAGAIN;
        else if (rc == 0)
            s->rs.running = true;
    }
    if (rc && !*errmsg) {
        static _Thread_local char msg[256];
        snprintf(msg, sizeof msg, "write-back: %s", kv_strerror(rc));
        *errmsg = msg;
    }
    return rc;
}

void wb_close(struct stor *s, bool drain)
{
    if (!s->wb)
        return;
    bool flusher = s->fl.running;
    bool drained = drain && stor_drain(s) == 0 && flusher;
    if (drain && !drained && flusher) {
        pthread_mutex_lock(&s->q.mu);
        uint64_t left = s->j.last_seq - s->q.durable_seq;
        pthread_mutex_unlock(&s->q.mu);
        fprintf(stderr,
                "shmkv: write-back: RocksDB cannot take the last %" PRIu64
                " record sets now; the journal keeps them for the next start\n",
                left);
    }
    pthread_mutex_lock(&s->q.mu);
    s->q.stop = true;
    /* As a kill would: the batch in flight may land, no more. Also when a
     * drain failed (RocksDB cannot write): the journal keeps the rest. */
    s->q.abandon = !drained;
    pthread_cond_broadcast(&s->q.work);
    pthread_mutex_unlock(&s->q.mu);
    if (s->fl.running)
        pthread_join(s->fl.th, NULL);
    s->fl.running = false;
    pthread_mutex_lock(&s->q.mu);
    s->rs.stop = true;
    pthread_cond_broadcast(&s->rs.cv);
    pthread_mutex_unlock(&s->q.mu);
    if (s->rs.running)
        pthread_join(s->rs.th, NULL);
    s->rs.running = false;
    wb_spare_close(s, drained);
    wb_parts_close(s);
    /* One thread from here on. Drained: everything is in RocksDB, so every
     * journal file can go once RocksDB's WAL is on disk. */
    if (s->j.fd >= 0)
        wb_seg_close(s);
    if (drained && wb_flush_memtables(s) == 0) {
        for (size_t i = 0; i < s->q.nsegs; i++) {
            char path[4096];
            wb_seg_path(s->j.dir, s->q.segs[i].first, path, sizeof path);
            unlink(path);
        }
        s->q.nsegs = 0;
        if (s->j.shm) {
            rmdir(s->j.dir);
            wb_shm_ptr_remove(s);
        }
    }
    free(s->j.dir);
    s->j.dir = NULL;
    s->j.shm = false;
    for (size_t i = 0; i < s->q.nsync_fds; i++)
        close(s->q.sync_fds[i]);
    free(s->q.sync_fds);
    s->q.sync_fds = NULL;
    s->q.nsync_fds = 0;
    struct wb_rec *r = s->j.head.next;
    while (r) {
        struct wb_rec *next = r->next;
        wb_rec_free(s, r);
        r = next;
    }
    s->j.head.next = NULL;
    free(s->rs.dq);
    s->rs.dq = NULL;
    s->rs.dqcap = 0;
    s->rs.dqhead = s->rs.dqtail = 0;
    free(s->j.chunk);
    s->j.chunk = NULL;
    free(s->q.segs);
    s->q.segs = NULL;
    s->q.nsegs = 0;
    free(s->fl.fops);
    s->fl.fops = NULL;
    s->fl.nfops = s->fl.capfops = 0;
    free(s->fl.sitems);
    s->fl.sitems = NULL;
    s->fl.capsitems = 0;
    pthread_cond_destroy(&s->q.work);
    pthread_cond_destroy(&s->q.done);
    pthread_cond_destroy(&s->jp.cv);
    pthread_cond_destroy(&s->rs.cv);
    pthread_mutex_destroy(&s->q.mu);
    s->wb = false;
}
