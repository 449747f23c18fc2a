/*
 * shmc_w — the writer half of the shared-memory cache: the daemon's.
 *
 * One process, one thread writes a segment: no CAS anywhere. The segment is
 * a sealed memfd (clients can map it read-only, never writable, and cannot
 * resize it) plus a small read-write hint memfd. Records are byte strings
 * keyed by byte strings, each in a group (a database) whose generation can
 * be bumped to drop the whole group at once; shm/ knows nothing of RocksDB
 * or RESP.
 *
 * Visibility: every change happens inside a write transaction. The first
 * change to a bucket makes its sequence odd; shmc_w_end() makes every
 * touched bucket even again. A reader never accepts what it read from an
 * odd or changed bucket, so it sees a transaction's changes all or nothing.
 *
 * Eviction is S3-FIFO over two circular logs (docs/shm.md): new records
 * enter the small log; at its head a record read since it came in moves to
 * the main log, one that was not leaves a ghost; the main log gives records
 * with a non-zero counter another round. Copy-on-write throughout: a record
 * is never changed in place while a slot reaches it.
 */
#ifndef SHMKV_SHMC_W_H
#define SHMKV_SHMC_W_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shmc_layout.h"

struct shmc_w_opts {
    size_t size;             /* bytes of the segment (at least 1 MiB) */
    size_t max_record;       /* largest record kept (0: 1 MiB; capped by the small log) */
    const char *socket_path; /* advertised in the header (may be NULL) */
    uint32_t lease_ms;       /* one heartbeat's validity (0: 500) */
    bool huge_pages;         /* 2 MiB pages from the hugetlb pool where it has room (the
                              * size is then rounded down to whole ones); else 4 KiB
                              * pages, advised to become huge where the kernel allows */
};

struct shmc_w_stats {
    uint64_t size, used;         /* log bytes, and bytes between heads and tails */
    uint64_t records, negatives; /* live slots, and how many of them are negative */
    uint64_t inserts, updates, removes, refused;
    uint64_t evictions;       /* records dropped at a log head */
    uint64_t index_evictions; /* records dropped because their bucket was full */
    uint64_t promotions;      /* small → main */
    uint64_t reinserts;       /* main → main, another round */
    uint64_t ghost_hits;
    uint64_t lookups, hits, neg_hits; /* the daemon's own look-ups */
};

enum shmc_w_result {
    SHMC_W_MISS = 0,
    SHMC_W_HIT = 1,
    SHMC_W_NEG = 2, /* cached as absent */
};

struct shmc_w;

/* Creates a segment. 0, or -errno with a message in err. *out owns both
 * memfds and the mapping; free with shmc_w_destroy(). */
int shmc_w_create(struct shmc_w **out, const struct shmc_w_opts *o, char *err, size_t errlen);
/* Marks the segment closed (readers stop using it at once), unmaps it and
 * closes the memfds; clients keep their own mappings until they re-attach.
 * Accepts NULL. */
void shmc_w_destroy(struct shmc_w *w);
/* Marks the segment closed without freeing it (shutdown begins). */
void shmc_w_close(struct shmc_w *w);

/* The memfds to hand to a client (the caller keeps ownership). */
int shmc_w_fd(const struct shmc_w *w);
int shmc_w_hint_fd(const struct shmc_w *w);
const struct shmc_hdr *shmc_w_hdr(const struct shmc_w *w);
/* Counter slot `slot` (below SHMC_CTR_SLOTS) as its client last wrote it;
 * and zeroing one before the daemon hands it to a client. */
void shmc_w_ctr_read(const struct shmc_w *w, unsigned slot, struct shmc_ctr *out);
void shmc_w_ctr_clear(struct shmc_w *w, unsigned slot);
/* Whether the segment got hugetlb pages (shmc_w_opts.huge_pages). */
bool shmc_w_huge(const struct shmc_w *w);

/* Publishes SWAPDB's map (logical database → group), which readers use
 * from their next transaction on. The identity until then. */
void shmc_w_dbmap(struct shmc_w *w, const uint8_t map[SHMC_GROUPS]);

/* Extends the lease to now_ms + lease_ms (CLOCK_MONOTONIC_COARSE ms).
 * Safe from another thread than the writer's: it writes one word. */
void shmc_w_beat(struct shmc_w *w, uint64_t now_ms);

/* Write transactions. They nest: only the outermost end publishes. */
void shmc_w_begin(struct shmc_w *w);
void shmc_w_end(struct shmc_w *w);

/* Inside a transaction. Each copies what it is given. */
/* Caches key → value (a fill or a refresh). A refresh counts as an access
 * for eviction, as shmc_w_get does. A record larger than max_record is
 * refused: whatever was cached for key is removed. */
void shmc_w_put(struct shmc_w *w, unsigned group, const void *key, size_t klen, const void *val,
                size_t vlen, uint64_t expire_ms);
/* As shmc_w_put where key is cached, a record or a negative entry; an
 * uncached key stays uncached. */
void shmc_w_refresh(struct shmc_w *w, unsigned group, const void *key, size_t klen, const void *val,
                    size_t vlen, uint64_t expire_ms);
/* Caches key as absent (a negative entry). */
void shmc_w_put_neg(struct shmc_w *w, unsigned group, const void *key, size_t klen);
/* The key was deleted: a cached record becomes a negative entry; an
 * uncached key stays uncached. */
void shmc_w_deleted(struct shmc_w *w, unsigned group, const void *key, size_t klen);
/* Drops whatever is cached for key. */
void shmc_w_remove(struct shmc_w *w, unsigned group, const void *key, size_t klen);
/* Drops every record of group (FLUSHDB), lazily: their generation is old. */
void shmc_w_drop_group(struct shmc_w *w, unsigned group);

/* The daemon's own look-up (counts as an access for eviction). On HIT,
 * *val and *vlen point into the segment until the next change. Expiry is not
 * judged here: the caller decides what an expired record means. */
int shmc_w_get(struct shmc_w *w, unsigned group, const void *key, size_t klen, const char **val,
               size_t *vlen);
/* The same answer without counting as an access or in the statistics: for
 * the daemon's bookkeeping (does a key it is about to write exist?). Both
 * note where they found the key, and a put of that key before any slot
 * changes starts there instead of searching again. */
int shmc_w_peek(struct shmc_w *w, unsigned group, const void *key, size_t klen, const char **val,
                size_t *vlen);

void shmc_w_stats(const struct shmc_w *w, struct shmc_w_stats *st);
/* Zeroes the event counters (not size, used, records, negatives). */
void shmc_w_stats_reset(struct shmc_w *w);

/* Starts loading key's bucket into the CPU cache, for a look-up or write
 * of it soon: the daemon issues it for the next pipelined command while
 * it runs this one, so the index's cache miss overlaps work. Returns key's
 * hash, for the second step. Reads nothing, changes nothing. */
uint64_t shmc_w_prefetch(const struct shmc_w *w, const void *key, size_t klen);
/* The second step, once the bucket has had time to arrive: starts loading
 * the records whose tags match the key's (its hash from the first step,
 * its length), which a look-up compares with it. Reads the bucket,
 * changes nothing; any hash will do. Returns how many it started loading:
 * 0 when the key is surely not cached. */
int shmc_w_prefetch_rec(const struct shmc_w *w, uint64_t hash, size_t klen);

/* Tests: checks every invariant of index and logs; 0 or a description. */
const char *shmc_w_check(const struct shmc_w *w);

#endif
