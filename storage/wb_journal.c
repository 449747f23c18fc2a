/*
 * wb_journal — write-back's journal: record sets as journal records (their
 * layout, checksum and memory), the journal files they are appended to at
 * each sync point, the spare files the preparer thread makes for
 * appendfsync always, and where the journal lives (disk or shared memory).
 * See wb_int.h and docs/writeback.md.
 *
 * Threads: the executor builds records, appends and syncs them; the
 * preparer (jprep) makes spare files. They share the spare's state under
 * the queue's lock.
 */
#include "stor_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <stddef.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>

#include "kv_crc.h"
#include "kv_mem.h"

#define JSHM_SEG_MAX (8u << 20) /* smaller files: memory comes back sooner */

/* The checksum covers the sequence number and the payload. */
uint32_t wb_rec_crc(const char *hdr, const char *payload, size_t n)
{
    return kv_crc32c(kv_crc32c(0, hdr + 4, 8), payload, n);
}

/* ---- record memory ----
 *
 * Records are freed in the order they were made (housekeeping frees the
 * queue from its head), so they are cut in order from large chunks, each
 * freed with its last record, instead of one malloc each. Consecutive
 * records then lie side by side: wb_rec_build writes, and housekeeping and
 * the flusher read, memory in sequence, which the CPU's prefetchers
 * follow, where records scattered over the heap cost a cache miss each.
 * Only the executor allocates and frees. */
#define WB_CHUNK (256u << 10)
struct wb_chunk {
    size_t used, live; /* bytes cut from mem, records not yet freed */
    _Alignas(16) char mem[];
};
_Static_assert(sizeof(struct wb_chunk) == offsetof(struct wb_chunk, mem), "mem ends the chunk");

static struct wb_rec *rec_alloc(struct stor *s, size_t size)
{
    size_t chunk = s->j.chunk_bytes ? s->j.chunk_bytes : WB_CHUNK;
    size = (size + 15) & ~(size_t)15;
    struct wb_rec *r;
    if (size > chunk / 8) {
        r = kv_xmalloc(size);
        r->chunk = NULL;
        return r;
    }
    struct wb_chunk *c = s->j.chunk;
    if (!c || c->used + size > chunk - sizeof *c) {
        /* The full one goes with its last record (wb_rec_free). */
        c = kv_xmalloc(chunk);
        c->used = c->live = 0;
        s->j.chunk = c;
    }
    r = (struct wb_rec *)(void *)(c->mem + c->used);
    c->used += size;
    c->live++;
    r->chunk = c;
    return r;
}

void wb_rec_free(struct stor *s, struct wb_rec *r)
{
    struct wb_chunk *c = r->chunk;
    if (!c) {
        free(r);
    } else if (--c->live == 0) {
        if (c == s->j.chunk)
            c->used = 0; /* all freed: start again from its head */
        else
            free(c);
    }
}

/* ---- record sets ---- */

struct wb_rec *wb_rec_build(struct stor *s, const struct stor_batch *b, uint64_t seq)
{
    size_t n = 0, nd = 0;
    for (size_t i = 0; i < b->nops; i++) {
        n += 10 + b->ops[i].klen + b->ops[i].vlen;
        nd += b->ops[i].defer;
    }
    _Static_assert(offsetof(struct wb_rec, data) % 8 == 0, "hash[] past data must align");
    size_t hoff = (WB_HDR + n + 7) & ~(size_t)7;
    struct wb_rec *r =
        rec_alloc(s, sizeof *r + hoff + b->nops * sizeof *r->hash + nd * sizeof *r->doff);
    r->hash = (uint64_t *)(void *)(r->data + hoff);
    r->doff = (uint32_t *)(void *)(r->hash + b->nops);
    r->ndefer = r->rdone = 0;
    r->nops = b->nops;
    r->next = NULL;
    r->seq = seq;
    r->len = WB_HDR + n;
    char *p = r->data + WB_HDR;
    for (size_t i = 0; i < b->nops; i++) {
        const struct stor_op *op = &b->ops[i];
        if (op->defer)
            r->doff[r->ndefer++] = (uint32_t)(p - r->data);
        p[0] = (char)op->kind;
        p[1] = (char)op->cf;
        enc_put_u32(p + 2, (uint32_t)op->klen);
        enc_put_u32(p + 6, (uint32_t)op->vlen);
        memcpy(p + 10, stor_op_key(b, op), op->klen);
        memcpy(p + 10 + op->klen, stor_op_value(b, op), op->vlen);
        p += 10 + op->klen + op->vlen;
        r->hash[i] = op->hash;
    }
    enc_put_u32(r->data, WB_MAGIC);
    enc_put_u64(r->data + 4, seq);
    enc_put_u32(r->data + 12, (uint32_t)n);
    enc_put_u32(r->data + 16, wb_rec_crc(r->data, r->data + WB_HDR, n));
    return r;
}

void wb_op_to_batch(void *arg, int kind, int cf, const char *k, size_t kn, const char *v, size_t vn)
{
    struct wb_to_batch *t = arg;
    rocksdb_column_family_handle_t *h = t->s->cf[cf];
    if (kind == STOR_OP_PUT)
        rocksdb_writebatch_put_cf(t->wb, h, k, kn, v, vn);
    else if (kind == STOR_OP_DEL)
        rocksdb_writebatch_delete_cf(t->wb, h, k, kn);
    else
        rocksdb_writebatch_delete_range_cf(t->wb, h, k, kn, v, vn);
}

int wb_payload_to_batch(struct stor *s, const char *p, size_t n, rocksdb_writebatch_t *wb)
{
    struct wb_to_batch t = {s, wb};
    return wb_payload_walk(p, n, wb_op_to_batch, &t);
}

void wb_seg_path(const char *dir, uint64_t first, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%016" PRIx64, dir, first);
}

/* ---- journal files ----
 *
 * A journal file on disk is allocated at its full size when it is made and
 * written in place: fdatasync after an append must also commit the file's
 * new size to the file system's journal, after an overwrite only the data.
 * Under appendfsync always, where every group of replies waits for an
 * fdatasync, the file is written whole with zeros first: a range that is
 * only allocated (fallocate) is "unwritten" until written, and turning it
 * written is a metadata change, which that fdatasync must commit too, and
 * with it whatever else the file system's journal holds (RocksDB's new
 * files). On this machine's ext4, a 2 KiB write + fdatasync beside a
 * process writing and syncing 4 MiB files took 151-165 us (median) appended,
 * 115-129 us allocated, 78-86 us written with zeros, and SET under always
 * with 50 clients gained 1-14% (docs/writeback.md, "Zeroed journal files").
 * The zeros cost a second write of the journal's bytes, made ahead on the
 * jprep thread. Replay reads an all-zero tail as the end of a file's
 * records, and a file is cut to its records when it is closed. */

enum wb_spare { SPARE_NONE, SPARE_WANTED, SPARE_MAKING, SPARE_READY };

static size_t seg_max(const struct stor *s)
{
    size_t segmax = s->o.journal_segment_bytes ? s->o.journal_segment_bytes : 64u << 20;
    return s->j.shm && segmax > JSHM_SEG_MAX ? JSHM_SEG_MAX : segmax;
}

static void spare_path(const struct stor *s, bool tmp, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", s->j.dir, tmp ? "spare.tmp" : "spare");
}

/* Writes n bytes of zeros over fd from its start and makes them durable,
 * a megabyte and an fdatasync at a time: a longer burst would sit in the
 * disk's queue ahead of the executor's fdatasync. stop (may be NULL), read
 * between writes, gives up early. Returns 0 or -errno (-ECANCELED). */
static int zero_fill(int fd, size_t n, const bool *stop)
{
    static char zeros[1u << 20]; /* never written: not const, so not in the file */
    for (size_t off = 0; off < n;) {
        if (stop && __atomic_load_n(stop, __ATOMIC_RELAXED))
            return -ECANCELED;
        size_t len = n - off < sizeof zeros ? n - off : sizeof zeros;
        ssize_t w = pwrite(fd, zeros, len, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -ENOSPC;
        off += (size_t)w;
        if (fdatasync(fd) != 0)
            return -errno;
    }
    return 0;
}

/* The jprep thread: makes dir/journal/spare, a journal file's worth of
 * durable zeros, whenever the executor has taken the last one. It is
 * written as spare.tmp and renamed, so a file named spare is always whole
 * (wb_replay ignores both names). A failure (a full disk) leaves no spare:
 * files are then allocated, not written, until a later roll asks again. */
void *wb_jprep_main(void *arg)
{
    struct stor *s = arg;
    char tmp[4096], done[4096];
    pthread_setname_np(pthread_self(), "shmkv-jprep");
    spare_path(s, true, tmp, sizeof tmp);
    spare_path(s, false, done, sizeof done);
    pthread_mutex_lock(&s->q.mu);
    for (;;) {
        while (!s->jp.stop && s->jp.spare != SPARE_WANTED)
            pthread_cond_wait(&s->jp.cv, &s->q.mu);
        if (s->jp.stop)
            break;
        s->jp.spare = SPARE_MAKING;
        pthread_mutex_unlock(&s->q.mu);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        int rc = fd < 0 ? -errno : 0;
        if (fd >= 0) {
            rc = zero_fill(fd, seg_max(s), &s->jp.stop);
            close(fd);
            if (rc == 0 && rename(tmp, done) != 0)
                rc = -errno;
            if (rc)
                unlink(tmp);
        }
        pthread_mutex_lock(&s->q.mu);
        s->jp.spare = rc == 0 ? SPARE_READY : SPARE_NONE;
    }
    pthread_mutex_unlock(&s->q.mu);
    return NULL;
}

/* Renames the spare, if one is ready, to path (a new journal file), makes
 * the name durable and asks jprep for the next one. Returns the file's
 * descriptor, or -1 where there was none or it would not move. */
static int spare_take(struct stor *s, const char *path)
{
    pthread_mutex_lock(&s->q.mu);
    bool ready = s->jp.spare == SPARE_READY;
    pthread_mutex_unlock(&s->q.mu);
    char from[4096];
    spare_path(s, false, from, sizeof from);
    /* Moved before jprep is asked for the next: a small spare made at once
     * would otherwise be renamed over this one first, and the name found
     * missing at the next roll. */
    bool moved = ready && rename(from, path) == 0;
    pthread_mutex_lock(&s->q.mu);
    if (s->jp.spare == SPARE_READY || s->jp.spare == SPARE_NONE) {
        s->jp.spare = SPARE_WANTED; /* the next one */
        pthread_cond_signal(&s->jp.cv);
    }
    pthread_mutex_unlock(&s->q.mu);
    if (!moved)
        return -1;
    /* Records are acknowledged once their file is synced, and that file must
     * be found under its new name after a power loss. */
    int dfd = open(s->j.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = dfd >= 0 && fsync(dfd) == 0 ? open(path, O_WRONLY | O_CLOEXEC) : -1;
    if (dfd >= 0)
        close(dfd);
    if (fd < 0)
        unlink(path);
    return fd;
}

/* At open: whether a whole spare was left by a killed run (a partly made
 * one, spare.tmp, goes), and whether this run makes them at all. */
void wb_spare_open(struct stor *s)
{
    s->jp.zero = !s->j.shm && s->o.fsync == STOR_FSYNC_ALWAYS;
    s->jp.spare = SPARE_NONE;
    for (int tmp = 1; tmp >= 0; tmp--) {
        char path[4096];
        snprintf(path, sizeof path, "%s/journal/%s", s->dir, tmp ? "spare.tmp" : "spare");
        struct stat st;
        if (!tmp && s->jp.zero && stat(path, &st) == 0 && (size_t)st.st_size == seg_max(s) &&
            (uint64_t)st.st_blocks * 512 >= (uint64_t)st.st_size)
            s->jp.spare = SPARE_READY;
        else
            unlink(path);
    }
}

/* Stops jprep (a spare half made is given up); a clean close removes the
 * spare, a kill's leaves it to the next start. */
void wb_spare_close(struct stor *s, bool clean)
{
    if (s->jp.running) {
        pthread_mutex_lock(&s->q.mu);
        __atomic_store_n(&s->jp.stop, true, __ATOMIC_RELAXED);
        pthread_cond_broadcast(&s->jp.cv);
        pthread_mutex_unlock(&s->q.mu);
        pthread_join(s->jp.th, NULL);
        s->jp.running = false;
    }
    if (s->jp.zero) {
        char path[4096];
        spare_path(s, true, path, sizeof path);
        unlink(path);
        spare_path(s, false, path, sizeof path);
        if (clean)
            unlink(path);
    }
}

int wb_fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

/* Opens the journal file whose records start at first. at_start: the
 * daemon is not serving yet, so with jzero and no spare the file is
 * written with zeros here rather than only allocated. */
int wb_seg_open_new(struct stor *s, uint64_t first, bool at_start)
{
    char path[4096];
    wb_seg_path(s->j.dir, first, path, sizeof path);
    int fd = s->jp.zero ? spare_take(s, path) : -1;
    if (fd < 0) {
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
            return -errno;
        /* Not in shared memory: there it would only take memory sooner. A
         * file system that cannot preallocate is appended to as before. */
        bool zeroed = s->jp.zero && at_start && zero_fill(fd, seg_max(s), NULL) == 0;
        if (!zeroed && !s->j.shm)
            (void)fallocate(fd, 0, 0, (off_t)seg_max(s));
        /* The file's name must outlive a power loss as its records do:
         * under always before any of them is acknowledged, under everysec
         * within the second, by the flusher (a spare's rename was made
         * durable already). A shared-memory journal outlives no reboot. */
        int rc = 0;
        if (!s->j.shm && s->o.fsync == STOR_FSYNC_ALWAYS)
            rc = wb_fsync_path(s->j.dir);
        if (rc) {
            close(fd);
            unlink(path);
            return rc;
        }
    }
    s->j.fd = fd;
    s->j.cur.first = first;
    s->j.cur.last = first - 1;
    s->j.cur.bytes = 0;
    if (s->o.fsync == STOR_FSYNC_EVERYSEC && !s->j.shm) {
        /* The flusher fsyncs its own descriptor: the executor may close
         * and replace j.fd whenever it likes. */
        int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        pthread_mutex_lock(&s->q.mu);
        if (d >= 0) {
            s->q.sync_fds =
                kv_xrealloc(s->q.sync_fds, (s->q.nsync_fds + 1) * sizeof *s->q.sync_fds);
            s->q.sync_fds[s->q.nsync_fds++] = d;
        }
        s->q.dir_unsynced = true; /* the new name, with the next fsync */
        pthread_mutex_unlock(&s->q.mu);
    }
    return 0;
}

void wb_seg_close(struct stor *s)
{
    if (s->j.fd < 0)
        return;
    if (!s->j.shm)
        (void)ftruncate(s->j.fd, (off_t)s->j.cur.bytes); /* give back what it did not use */
    close(s->j.fd);
    s->j.fd = -1;
    pthread_mutex_lock(&s->q.mu);
    if (s->q.nsegs == s->q.capsegs) {
        s->q.capsegs = s->q.capsegs ? s->q.capsegs * 2 : 8;
        s->q.segs = kv_xrealloc(s->q.segs, s->q.capsegs * sizeof *s->q.segs);
    }
    s->q.segs[s->q.nsegs++] = s->j.cur;
    pthread_mutex_unlock(&s->q.mu);
}

/* Hands the records journaled since the last call to the flusher. */
static void wb_publish(struct stor *s)
{
    pthread_mutex_lock(&s->q.mu);
    s->q.tail = s->j.jtail;
    s->q.bytes += s->j.jbytes;
    s->j.lbytes -= s->j.jbytes;
    s->j.jbytes = 0;
    /* A busy flusher finds them when it looks again, and one filling a
     * batch wants waking only once the batch is full: no wake-up (a futex
     * call) per sync point. */
    if (s->q.flusher_idle || (s->q.flusher_filling && s->q.bytes >= s->fl.batch_max))
        pthread_cond_signal(&s->q.work);
    pthread_mutex_unlock(&s->q.mu);
}

int stor_sync(struct stor *s)
{
    /* Inside a group, only what was committed before it: the group's
     * records go to the journal at one sync point after its end, its last
     * one closing it, so that a kill part way leaves a group open, which
     * replay drops. */
    uint64_t upto = s->j.group_depth ? s->j.group_seq0 : UINT64_MAX;
    if (!s->wb || !s->j.next || s->j.next->seq > upto)
        return 0; /* nothing committed since the last call: nothing to hand on */
    size_t segmax = seg_max(s);
    while (s->j.next && s->j.next->seq <= upto) {
        /* One record set per vector, as many as the kernel takes in one
         * call: a pipelined iteration commits hundreds (SET at pipeline
         * 16 over 50 clients: about 500), and 64 to a call made that
         * eight system calls. */
        struct iovec iov[IOV_MAX];
        int n = 0;
        size_t bytes = 0;
        struct wb_rec *r = s->j.next, *last = NULL;
        for (; r && n < IOV_MAX && r->seq <= upto; r = r->next) {
            iov[n].iov_base = r->data;
            iov[n].iov_len = r->len;
            bytes += r->len;
            n++;
            last = r;
        }
        /* A short write of a regular file only happens when the disk is
         * full; then no reply may go out, and the caller must stop. */
        size_t done = 0;
        while (done < bytes) {
            ssize_t w = pwritev(s->j.fd, iov, n, (off_t)(s->j.cur.bytes + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return w < 0 ? -errno : -ENOSPC;
            done += (size_t)w;
            /* Skip what was written, resume inside the iovec. */
            size_t skip = (size_t)w;
            int i = 0;
            while (i < n && skip >= iov[i].iov_len)
                skip -= iov[i++].iov_len;
            memmove(iov, iov + i, (size_t)(n - i) * sizeof *iov);
            n -= i;
            if (n) {
                iov[0].iov_base = (char *)iov[0].iov_base + skip;
                iov[0].iov_len -= skip;
            }
        }
        s->j.cur.last = last->seq;
        s->j.cur.bytes += bytes;
        s->j.journaled_seq = last->seq;
        s->j.next = last->next;
        s->j.jtail = last;
        s->j.jbytes += bytes;
    }
    if (s->o.fsync == STOR_FSYNC_ALWAYS && fdatasync(s->j.fd) != 0)
        return -errno;
    /* Only now to the flusher: a kill can stop a pwritev part way, and
     * RocksDB must never get a record the journal does not have whole
     * (replay could not tell it was ever written, nor a group complete
     * it). What a failed call journaled goes with the next one's. */
    wb_publish(s);
    if (s->j.cur.bytes >= segmax) {
        wb_seg_close(s);
        int rc = wb_seg_open_new(s, s->j.journaled_seq + 1, false);
        if (rc)
            return rc;
    }
    return 0;
}

int wb_read_file(const char *path, char **buf, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    *n = (size_t)st.st_size;
    *buf = kv_xmalloc(*n ? *n : 1);
    size_t got = 0;
    while (got < *n) {
        ssize_t r = read(fd, *buf + got, *n - got);
        if (r <= 0) {
            int e = r < 0 ? -errno : -EIO;
            close(fd);
            free(*buf);
            return e;
        }
        got += (size_t)r;
    }
    close(fd);
    return 0;
}

/* ---- where the journal lives ----
 *
 * On disk, in dir/journal; or, under appendfsync everysec and no, in a
 * folder of its own in shared memory (a tmpfs), where appending never waits
 * on a file system's journal or dirty-page throttling: the flusher writes
 * RocksDB's WAL instead. The folder gets a random name, written to
 * dir/journal-shm before any record goes into it, so a restart finds it
 * whatever the configuration says by then, and a data folder deleted and
 * made again can never pick up another's records. */

/* The shared-memory folder dir/journal-shm names, in out; 0 if it names one
 * (it may be gone: a reboot empties a tmpfs), -ENOENT if there is none. */
int wb_shm_ptr_read(const struct stor *s, char *out, size_t cap)
{
    char path[4096], *buf;
    size_t n;
    snprintf(path, sizeof path, "%s/" WB_JSHM_PTR, s->dir);
    int rc = wb_read_file(path, &buf, &n);
    if (rc)
        return rc;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
        n--;
    rc = n && n < cap && buf[0] == '/' && !memchr(buf, '\0', n) ? 0 : KV_ECORRUPT;
    if (rc == 0) {
        memcpy(out, buf, n);
        out[n] = '\0';
    }
    free(buf);
    return rc;
}

/* Writes dir/journal-shm naming folder, durably (it must outlive a power
 * loss no less than the records in RocksDB do). */
static int shm_ptr_write(const struct stor *s, const char *folder)
{
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/" WB_JSHM_PTR ".tmp", s->dir);
    snprintf(path, sizeof path, "%s/" WB_JSHM_PTR, s->dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    size_t n = strlen(folder);
    int rc = 0;
    if (write(fd, folder, n) != (ssize_t)n || write(fd, "\n", 1) != 1 || fdatasync(fd) != 0)
        rc = errno ? -errno : -EIO;
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc == 0)
        rc = wb_fsync_path(s->dir);
    if (rc)
        unlink(tmp);
    return rc;
}

void wb_shm_ptr_remove(const struct stor *s)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" WB_JSHM_PTR, s->dir);
    unlink(path);
}

int wb_acked_write(const struct stor *s, uint64_t seq)
{
    char path[4096], rec[12];
    snprintf(path, sizeof path, "%s/" WB_ACKED, s->dir);
    enc_put_u64(rec, seq);
    enc_put_u32(rec + 8, kv_crc32c(0, rec, 8));
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = pwrite(fd, rec, sizeof rec, 0) == (ssize_t)sizeof rec && fdatasync(fd) == 0 ? 0 : -EIO;
    close(fd);
    return rc;
}

int wb_acked_read(const struct stor *s, uint64_t *seq)
{
    char path[4096], *buf;
    size_t n;
    snprintf(path, sizeof path, "%s/" WB_ACKED, s->dir);
    int rc = wb_read_file(path, &buf, &n);
    if (rc)
        return rc;
    rc = n == 12 && enc_get_u32(buf + 8) == kv_crc32c(0, buf, 8) ? 0 : KV_ECORRUPT;
    if (rc == 0)
        *seq = enc_get_u64(buf);
    free(buf);
    return rc;
}

/* Makes a new shared-memory folder for the journal when the options ask for
 * one and the tmpfs has room for everything that may be pending; otherwise
 * the journal stays on disk. Sets s->j.dir. */
int wb_journal_place(struct stor *s)
{
    const char *shm = s->o.journal_shm_dir;
    size_t ovmax = s->o.overlay_max_bytes ? s->o.overlay_max_bytes : 256u << 20;
    struct statvfs vf;
    if (shm && *shm && s->o.fsync != STOR_FSYNC_ALWAYS && statvfs(shm, &vf) == 0 &&
        (uint64_t)vf.f_bavail * vf.f_frsize >= (uint64_t)ovmax + STOR_JSHM_FLOOR) {
        for (int tries = 0; tries < 16; tries++) {
            uint64_t id;
            if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id)
                break;
            char path[4096];
            snprintf(path, sizeof path, "%s/shmkv-journal-%016" PRIx64, shm, id);
            if (mkdir(path, 0700) != 0) {
                if (errno == EEXIST)
                    continue;
                break;
            }
            if (shm_ptr_write(s, path) != 0) {
                rmdir(path);
                break;
            }
            s->j.shm = true;
            s->j.dir = kv_xmemdup(path, strlen(path) + 1);
            return 0;
        }
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/journal", s->dir);
    s->j.dir = kv_xmemdup(path, strlen(path) + 1);
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -errno;
}
