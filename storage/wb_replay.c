/*
 * wb_replay — replay at start: every journal record set beyond what RocksDB
 * applied goes into RocksDB, from the journal files on disk and in the
 * shared-memory folder a previous run named, before the daemon serves.
 * See docs/writeback.md, "Replay at start".
 *
 * Threads: the opening thread only, before the flusher starts.
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
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "kv_mem.h"

/* ---- wb_replay and open ---- */

struct jfile {
    uint64_t first;
    int where; /* index into the wb_replay's folders */
};

static int cmp_jfile(const void *a, const void *b)
{
    uint64_t x = ((const struct jfile *)a)->first, y = ((const struct jfile *)b)->first;
    return (x > y) - (x < y);
}

/* Adds the journal files in folder to *out. A missing folder holds none. */
static int list_segments(const char *folder, int where, struct jfile **out, size_t *n, size_t *cap)
{
    DIR *d = opendir(folder);
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strlen(e->d_name) != 16 || strspn(e->d_name, "0123456789abcdef") != 16)
            continue;
        if (*n == *cap)
            *out = kv_xrealloc(*out, (*cap = *cap ? *cap * 2 : 8) * sizeof **out);
        (*out)[(*n)++] = (struct jfile){strtoull(e->d_name, NULL, 16), where};
    }
    closedir(d);
    return 0;
}

static _Thread_local char wb_errbuf[4200]; /* room for a path */

static bool all_zero(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* Replays every record set beyond RocksDB's applied sequence number, from
 * the journal files on disk and in the shared-memory folder a previous run
 * named (both, in sequence order: the configuration may have changed since),
 * then removes them. A record cut short at the very end of the last file is
 * a write the crash interrupted (never acknowledged): it is dropped, and so
 * is a group left open there, every record of it. Any other bad record, or
 * a group open at the end of another file, is corruption: the open fails,
 * naming file and offset. */
int wb_replay(struct stor *s, const char **errmsg)
{
    /* The smallest of the column families' applied sequence numbers: each
     * family may have reached a different point before the crash. */
    uint64_t applied = UINT64_MAX;
    int rc = 0;
    for (int cf = 0; cf < STOR_CF_COUNT; cf++) {
        char *v;
        size_t vn;
        uint64_t a = 0;
        rc = stor_get(s, cf, STOR_APPLIED_KEY, STOR_APPLIED_KEYLEN, &v, &vn);
        if (rc == 0) {
            if (vn == 8)
                a = enc_get_u64(v);
            free(v);
        } else if (rc != KV_ENOTFOUND) {
            return rc;
        }
        if (a < applied)
            applied = a;
    }
    char dirs[2][4096];
    snprintf(dirs[0], sizeof dirs[0], "%s/journal", s->dir);
    rc = wb_shm_ptr_read(s, dirs[1], sizeof dirs[1]);
    bool had_shm = rc == 0;
    if (rc == KV_ECORRUPT) {
        snprintf(wb_errbuf, sizeof wb_errbuf, "%s/" WB_JSHM_PTR ": not a folder's path", s->dir);
        *errmsg = wb_errbuf;
        return rc;
    }
    if (rc && rc != -ENOENT)
        return rc;
    struct jfile *segs = NULL;
    size_t nsegs = 0, cap = 0;
    rc = list_segments(dirs[0], 0, &segs, &nsegs, &cap);
    if (rc == 0 && had_shm)
        rc = list_segments(dirs[1], 1, &segs, &nsegs, &cap);
    if (rc) {
        free(segs);
        return rc;
    }
    if (nsegs)
        qsort(segs, nsegs, sizeof *segs, cmp_jfile);
    /* last: the last record set replayed (or RocksDB's); rd: the last
     * whole record read, which may lie in a group not yet closed. */
    uint64_t last = applied, rd = applied, replayed = 0;
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    size_t pending = 0;
    for (size_t i = 0; i < nsegs && rc == 0; i++) {
        char path[4096], *buf = NULL;
        size_t n = 0;
        wb_seg_path(dirs[segs[i].where], segs[i].first, path, sizeof path);
        if ((rc = wb_read_file(path, &buf, &n)))
            break;
        size_t off = 0, cut = SIZE_MAX;
        /* An open group starts at gstart; its records go to RocksDB once
         * its last one is read. A sync point journals a group whole, in
         * one file, so one open at the end of the last file was cut by
         * the crash (never acknowledged), and anywhere else is damage. */
        bool gopen = false;
        size_t gstart = 0;
        while (off < n) {
            uint32_t magic = n - off >= WB_HDR ? enc_get_u32(buf + off) : 0;
            bool ok = magic == WB_MAGIC || magic == WB_MAGIC_GROUP;
            size_t len = ok ? enc_get_u32(buf + off + 12) : 0;
            bool whole = ok && len <= n - off - WB_HDR;
            ok = whole &&
                 enc_get_u32(buf + off + 16) == wb_rec_crc(buf + off, buf + off + WB_HDR, len);
            uint64_t seq = ok ? enc_get_u64(buf + off + 4) : 0;
            if (ok && seq != rd + 1 && seq > applied)
                ok = false; /* a gap: something is missing */
            if (!ok) {
                if (all_zero(buf + off, n - off))
                    break; /* the unwritten end of a preallocated file */
                size_t end = whole ? off + WB_HDR + len : n;
                bool torn = i == nsegs - 1 && (!whole || all_zero(buf + end, n - end));
                if (torn) {
                    cut = off; /* cut the torn tail so appending starts clean */
                    break;
                }
                snprintf(wb_errbuf, sizeof wb_errbuf,
                         "journal %s: bad record at offset %zu (after sequence %" PRIu64 ")", path,
                         off, rd);
                *errmsg = wb_errbuf;
                rc = KV_ECORRUPT;
                break;
            }
            if (seq > applied)
                rd = seq;
            if (magic == WB_MAGIC_GROUP && !gopen) {
                gopen = true;
                gstart = off;
            }
            off += WB_HDR + len;
            if (magic == WB_MAGIC_GROUP)
                continue; /* the group goes on */
            /* A record set alone, or the one that closes the open group:
             * everything from the group's start goes in one write. */
            for (size_t at = gopen ? gstart : off - WB_HDR - len; at < off && rc == 0;) {
                size_t alen = enc_get_u32(buf + at + 12);
                if (enc_get_u64(buf + at + 4) > applied) {
                    rc = wb_payload_to_batch(s, buf + at + WB_HDR, alen, wb);
                    if (rc) {
                        snprintf(wb_errbuf, sizeof wb_errbuf,
                                 "journal %s: bad payload at offset %zu", path, at);
                        *errmsg = wb_errbuf;
                    }
                    replayed++;
                    pending += alen;
                }
                at += WB_HDR + alen;
            }
            if (rc)
                break;
            gopen = false;
            last = rd;
            if (pending >= (4u << 20)) {
                wb_put_applied(s, wb, last);
                char *err = NULL;
                rocksdb_write(s->db, s->wopts, wb, &err);
                if (err) {
                    rc = stor_take_err(err);
                    break;
                }
                rocksdb_writebatch_clear(wb);
                pending = 0;
            }
        }
        if (rc == 0 && gopen) {
            if (i == nsegs - 1) { /* dropped whole; its numbers are given again */
                cut = gstart;
                rd = last;
            } else {
                snprintf(wb_errbuf, sizeof wb_errbuf,
                         "journal %s: group open at the end of the file, from offset %zu "
                         "(after sequence %" PRIu64 ")",
                         path, gstart, last);
                *errmsg = wb_errbuf;
                rc = KV_ECORRUPT;
            }
        }
        if (rc == 0 && cut != SIZE_MAX && truncate(path, (off_t)cut) != 0)
            rc = -errno;
        free(buf);
    }
    if (rc == 0 && pending) {
        wb_put_applied(s, wb, last);
        char *err = NULL;
        rocksdb_write(s->db, s->wopts, wb, &err);
        if (err)
            rc = stor_take_err(err);
    }
    rocksdb_writebatch_destroy(wb);
    /* Everything is in RocksDB: make its WAL durable, then drop the files. */
    if (rc == 0 && (rc = wb_sync_wal(s)) == 0) {
        for (size_t i = 0; i < nsegs; i++) {
            char path[4096];
            wb_seg_path(dirs[segs[i].where], segs[i].first, path, sizeof path);
            unlink(path);
        }
        if (had_shm) {
            rmdir(dirs[1]);
            wb_shm_ptr_remove(s);
        }
    }
    free(segs);
    /* A shared-memory journal's high-water mark beyond what replay found:
     * a reboot emptied the tmpfs before RocksDB had those writes. Said
     * once (the stats), then the mark starts over from here. */
    uint64_t mark;
    if (rc == 0 && wb_acked_read(s, &mark) == 0 && mark > last) {
        s->j.st.lost_sets = mark - last;
        s->j.st.lost_upto = mark;
    }
    if (rc == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/" WB_ACKED, s->dir);
        unlink(path);
    }
    s->fl.acked_mark = last;
    s->j.last_seq = s->j.journaled_seq = s->j.pruned_seq = last;
    s->j.st.replayed_sets = replayed;
    return rc;
}
