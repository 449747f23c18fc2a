/*
 * shmc_r — the reader half of the shared-memory cache: a client's.
 *
 * A reader maps the segment read-only and trusts nothing in it: every
 * offset and length is bounds-checked before use, a record is copied into
 * the caller's buffer before anything is decided from it, and the copy
 * counts only if the buckets it came from did not change meanwhile. A hit
 * writes nothing shared but, when it is not set yet, one hint byte in the
 * separate hint segment. Nothing here blocks or spins: a bucket being
 * written is reported as SHMC_RETRY, and the caller decides how often to
 * try again before it asks the daemon.
 *
 * A read transaction (struct shmc_rtx) groups look-ups that must agree
 * with each other (MGET's keys, a hash's meta record and its field):
 * shmc_rtx_end() validates them together, so they come from one moment
 * between the daemon's write transactions.
 */
#ifndef SHMKV_SHMC_R_H
#define SHMKV_SHMC_R_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shmc_layout.h"

struct shmc_r {
    const char *seg;
    size_t size;
    uint8_t *hints; /* NULL when attached without them */
    size_t hint_size;
    const struct shmc_hdr *h;
    const struct shmc_bucket *bk;
    uint32_t nb, max_record;
    uint64_t log_lo, log_mid, log_hi; /* small log [lo, mid), main [mid, hi) */
    uint64_t generation;
};

enum shmc_r_result {
    SHMC_MISS = 0,  /* not cached (or expired, or of an old generation) */
    SHMC_HIT = 1,   /* the value is in the caller's buffer */
    SHMC_NEG = 2,   /* cached as absent */
    SHMC_RETRY = 3, /* the daemon was changing it: try again, or ask the daemon */
};

/* A growable byte buffer; the reader reallocs p with realloc(). */
struct shmc_buf {
    char *p;
    size_t len, cap;
};

/* Maps the segment fd (read-only) and the hint fd (read-write; -1 for
 * none) and validates the header: magic, ABI version, checksum, and that
 * every region lies inside the segment. 0, or -errno with a message in
 * err (EPROTO: another ABI; EBADMSG: a corrupt header). The fds stay the
 * caller's. */
int shmc_r_attach(struct shmc_r *r, int fd, int hint_fd, char *err, size_t errlen);
void shmc_r_detach(struct shmc_r *r);
/* The counter slot the daemon gave this client (SHMKV.ATTACH), in the
 * read-write hint mapping; NULL when out of range or attached without
 * hints. The caller alone writes it, until it detaches. */
struct shmc_ctr *shmc_r_ctr(const struct shmc_r *r, unsigned slot);
/* The group holding logical database db (SWAPDB's map), and in *seq the
 * map's sequence number for shmc_r_dbmap_same; false while the map is
 * changing (read from the daemon instead, or try again). */
bool shmc_r_dbmap(const struct shmc_r *r, unsigned db, unsigned *group, uint32_t *seq);
/* Whether the map is still as it was when shmc_r_dbmap gave seq: else what
 * was read in between may belong to another database. */
bool shmc_r_dbmap_same(const struct shmc_r *r, uint32_t seq);

/* Whether the daemon still stands behind the segment: open, and its lease
 * (CLOCK_MONOTONIC_COARSE ms) not run out. */
bool shmc_r_alive(const struct shmc_r *r, uint64_t now_mono_ms);

#define SHMC_RTX_INLINE 16

struct shmc_rtx {
    const struct shmc_r *r;
    unsigned group;
    uint32_t gen;
    /* Records expiring at or before this (Unix ms) read as misses. 0 until
     * a record with an expiry is met: then CLOCK_REALTIME_COARSE moved
     * forward by its resolution, so nothing is served past its expiry (at
     * worst a few ms before it). A caller may set it after begin. */
    uint64_t now_ms;
    size_t n, cap;
    uint32_t (*tb)[2]; /* (bucket, seq) pairs seen */
    uint32_t inl[SHMC_RTX_INLINE][2];
};

/* Starts a read transaction over one group (database). */
void shmc_rtx_begin(struct shmc_rtx *t, const struct shmc_r *r, unsigned group);
/* Looks key up. On SHMC_HIT the value is in out->p[0..out->len). */
int shmc_rtx_get(struct shmc_rtx *t, const void *key, size_t klen, struct shmc_buf *out);
/* Looks key up without copying: on SHMC_HIT *v and *vlen describe the
 * value inside the segment (bounds-checked). The bytes may change under
 * the caller: copy what is needed, decide nothing before shmc_rtx_end()
 * says the copy stands, and never hand the pointer on. */
int shmc_rtx_peek(struct shmc_rtx *t, const void *key, size_t klen, const char **v, size_t *vlen);
/* 0 if every look-up since begin still stands, else SHMC_RETRY. Releases
 * what the transaction allocated; t may be begun again. */
int shmc_rtx_end(struct shmc_rtx *t);

#endif
