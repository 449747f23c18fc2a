/*
 * wb_ov — the write-back overlay: records committed but not yet in
 * RocksDB, as an ordered map (column family, key) → value or tombstone, plus
 * pending range deletes. Reads consult it before RocksDB; iterators merge it.
 *
 * Every node is in a hash index. A new node joins the ordered skiplist only
 * when something needs the order (wb_ov_order before a walk, a range delete):
 * most records reach RocksDB and are forgotten before any iterator asks,
 * and then they never cost a skiplist search. Ordering links the waiting
 * nodes that a walk's range may hold, of its column family and the bands
 * (below) it spans, in one sorted pass, each search resuming from the one
 * before; a walk inside one key group with nothing of that group waiting
 * links nothing at all.
 *
 * Layer: write-back (wb_), inside the engine. Single-threaded: only the
 * thread that commits (the daemon's executor) touches it. Node pointers
 * stay valid until the node is removed; removal happens only between
 * operations (stor_housekeep), never while an iterator is open.
 */
#ifndef SHMKV_WB_OV_H
#define SHMKV_WB_OV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WB_OV_MAXLEVEL 24
#define WB_OV_CFS 8 /* column families 0 .. WB_OV_CFS - 1 */
/* A key's group is its first WB_OV_GROUP_BYTES bytes (zero-padded): the
 * database and slot of shmkv's keys (docs/encoding.md), so one user key's
 * records and each sorted set's scores share one. The overlay counts the
 * waiting nodes per (cf, group), hashed into WB_OV_GROUPS counters. */
#define WB_OV_GROUP_BYTES 3
#define WB_OV_GROUPS 16384
/* And it keeps them in bands by the low six bits of the key's second byte
 * (0 for a shorter key): the high byte of the slot, so a walk over a few
 * slots, SCAN's, orders one or two sixty-fourths of them. */
#define WB_OV_BANDS 64

struct wb_ov_node {
    uint64_t seq;  /* the record set that last wrote it */
    uint64_t hash; /* of (cf, key): its slot in the hash index */
    char *val;     /* NULL: a tombstone; the node's own room, or the heap */
    size_t vlen, klen;
    uint8_t cf;
    uint8_t level;
    bool linked;             /* in the skiplist; else waiting in ov.pend[cf][band] */
    uint8_t vroom;           /* bytes for a value after the key, in the node */
    uint32_t pidx;           /* its index there while waiting */
    struct wb_ov_node *prev; /* level 0, backwards */
    char *key;               /* points into the node allocation */
    /* next[0 .. level-1], then the backward links of levels 1 .. level-1:
     * with a link back on every level a node leaves in O(level), no search. */
    struct wb_ov_node *next[];
};

/* A hash index slot: the hash beside the node, so a probe reads no node
 * until the hashes match. n == NULL: empty. */
struct wb_ov_slot {
    uint64_t hash;
    struct wb_ov_node *n;
};

struct wb_ov_range {
    uint8_t cf;
    uint64_t seq;
    char *lo, *hi;
    size_t lon, hin;
};

struct wb_ov {
    struct wb_ov_node *head; /* sentinel, compares below everything */
    /* Hash index over the nodes, open addressing with linear probing: point
     * reads, rewrites of a pending key and wb_ov_forget never walk the list. */
    struct wb_ov_slot *tab;
    size_t tabmask;
    /* The index shrinks only from above this many slots (wb_ov_init: 65536,
     * 1 MiB): the overlay fills and empties with every flush, and shrinking
     * at each low tide grew it again at the next high one, a rehash of
     * thousands of slots every few batches (3% of the loop under SET at
     * pipeline 16). Tests lower it. */
    size_t tabkeep;
    /* Above tabkeep the index shrinks only once it has stayed under an
     * eighth full for WB_OV_SHRINK_MS (wb_ov_tide): when it was last seen
     * fuller, and the most nodes it held since. */
    uint64_t tide_ms;
    size_t low_peak;
    /* Nodes not yet in the skiplist, per column family and band, in no
     * order; how many each column family has, and how many each group
     * (hashed, grp_index) has. */
    struct wb_ov_pend {
        struct wb_ov_node **v;
        size_t n, cap;
    } pend[WB_OV_CFS][WB_OV_BANDS];
    size_t npend[WB_OV_CFS];
    uint32_t *grp;
    int level;
    size_t count;
    size_t bytes; /* keys, values and nodes: what the overlay limit counts */
    uint64_t rng;
    struct wb_ov_range *ranges;
    size_t nranges, capranges;
};

void wb_ov_init(struct wb_ov *o);
void wb_ov_destroy(struct wb_ov *o);

/* Compares (cf, key) pairs. */
int wb_ov_cmp(int acf, const char *a, size_t an, int bcf, const char *b, size_t bn);

/* The hash the index files (cf, k) under. */
uint64_t wb_ov_key_hash(int cf, const char *k, size_t kn);
/* Writes a value (v != NULL) or a tombstone (v == NULL) for (cf, k),
 * whose hash h = wb_ov_key_hash(cf, k, kn) the caller has: the record set
 * computed it when the op was added, and the write-back keeps it beside
 * the journal record for wb_ov_forget and wb_ov_prefetch, so no step hashes the
 * key again. */
void wb_ov_set(struct wb_ov *o, uint64_t h, int cf, const char *k, size_t kn, const char *v,
               size_t vn, uint64_t seq);
/* A range delete [lo, hi) of cf: drops the nodes it covers and remembers the
 * range until it is durable, to hide RocksDB's older records. */
void wb_ov_set_range(struct wb_ov *o, int cf, const char *lo, size_t lon, const char *hi,
                     size_t hin, uint64_t seq);
/* Removes (cf, k) if its node was last written by record set seq; h is
 * the hash wb_ov_set returned for (cf, k). */
void wb_ov_forget(struct wb_ov *o, uint64_t h, int cf, const char *k, size_t kn, uint64_t seq);
/* Drops range deletes with seq <= durable. */
void wb_ov_forget_ranges(struct wb_ov *o, uint64_t durable);
/* Shrinks the index if it has held under an eighth of its slots for
 * WB_OV_SHRINK_MS by now_ms (any steady clock in ms; housekeeping calls it),
 * to a size that held the most it had meanwhile at a quarter. A fixed low
 * water mark was crossed on every flush where the overlay fills and
 * empties with each batch: at 100,000 keys the index went 256K, 128K,
 * 64K slots and back, 7 rehashes and 2,500 page faults per million SETs,
 * each rehash a stall of milliseconds. */
#define WB_OV_SHRINK_MS 1000
void wb_ov_tide(struct wb_ov *o, uint64_t now_ms);

/* Starts loading into the CPU cache what a look-up, write or forget of
 * the key whose hash is h (wb_ov_key_hash) reads: step 1 its hash slot;
 * step 2, once the slot has had time to arrive, the node in that slot,
 * which a look-up compares with the key. Changes nothing. */
void wb_ov_prefetch(const struct wb_ov *o, uint64_t h, int step);
/* The node for (cf, k), or NULL. */
struct wb_ov_node *wb_ov_find(const struct wb_ov *o, int cf, const char *k, size_t kn);
/* The same, given h = wb_ov_key_hash(cf, k, kn). */
struct wb_ov_node *wb_ov_find_h(const struct wb_ov *o, uint64_t h, int cf, const char *k,
                                size_t kn);
/* Whether a pending range delete covers (cf, k). */
int wb_ov_range_covers(const struct wb_ov *o, int cf, const char *k, size_t kn);
/* Links the waiting nodes of cf that the range [lo, hi) of cf may hold
 * (lo NULL: from cf's start; hi NULL: to its end): if lo and hi share
 * their group, and none of that group waits, none; else those of the bands
 * the range spans, where its keys share their first byte and their second
 * spans under 64 values; else all of cf's. Seeks and walks see linked
 * nodes only: a walk of a range starts with wb_ov_order of it, and sees
 * everything written in it before that. */
void wb_ov_order(struct wb_ov *o, int cf, const char *lo, size_t lon, const char *hi, size_t hin);
/* How many nodes of cf wait for the order. */
static inline size_t wb_ov_waiting(const struct wb_ov *o, int cf)
{
    return o->npend[cf];
}
/* First node >= (cf, k); last node <= (cf, k); NULL past the ends. A NULL k
 * with kn 0 means the start of cf. Linked nodes only (wb_ov_order). */
struct wb_ov_node *wb_ov_seek(struct wb_ov *o, int cf, const char *k, size_t kn);
struct wb_ov_node *wb_ov_seek_prev(struct wb_ov *o, int cf, const char *k, size_t kn);
/* Last node < (cf, k). */
struct wb_ov_node *wb_ov_seek_before(struct wb_ov *o, int cf, const char *k, size_t kn);
static inline struct wb_ov_node *wb_ov_next(const struct wb_ov_node *n)
{
    return n->next[0];
}
/* The previous node, NULL before the first. */
struct wb_ov_node *wb_ov_prev(const struct wb_ov *o, const struct wb_ov_node *n);

/* Checks every invariant (order, links both ways on every level, the hash
 * index, the waiting nodes and their group counts, count and bytes): 0,
 * or the number of the first that failed. For tests; O(n). */
int wb_ov_check(const struct wb_ov *o);

#endif
