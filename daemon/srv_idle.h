/*
 * srv_idle — when each key was last used, for OBJECT IDLETIME.
 *
 * Redis keeps an access clock in every object; shmkv's values live in
 * RocksDB, and writing a record per read is not an option. The daemon keeps
 * the clock in memory instead, bounded: two generations of a hash table of
 * (key fingerprint, second of last access). Touches go to the current
 * generation; when it holds gen_keys keys, the previous one is dropped and
 * the current one becomes the previous. Every key used since the previous
 * generation began is in one of the two, with its exact second; of any
 * other key it is only known that its last use came before that moment
 * (the floor), so its idle time is reported as the time since the floor,
 * a lower bound. Until the first generation fills, the floor is the
 * tracker's start, which matches Redis after a restart: a key loaded from
 * disk and not used since is idle since the server started.
 *
 * Times are wall-clock seconds, compared as Redis compares its LRU clock
 * (both ends truncated to the second). Memory: 16 bytes per key of a
 * generation at most (8-byte slots, at most half full), so 16 MiB for two
 * full generations of the default size; the first generation grows from
 * 8 KiB, later ones are allocated whole.
 *
 * Single-threaded: the event loop owns it.
 */
#ifndef SHMKV_SRV_IDLE_H
#define SHMKV_SRV_IDLE_H

#include <stddef.h>
#include <stdint.h>

struct srv_idle_gen {
    uint64_t *slot; /* fingerprint << 24 | seconds since since_s; 0: empty */
    size_t cap;     /* a power of two */
    size_t n;
    uint64_t since_s; /* when this generation began taking touches */
};

struct srv_idle {
    struct srv_idle_gen cur, prev; /* prev.slot NULL until the first switch */
    size_t gen_keys;
    uint64_t switches;
    uint64_t rng; /* LFU's coin */
};

/* The default generation size: 512k keys, 8 MiB a generation. */
#define SRV_IDLE_GEN_KEYS (512u * 1024)

/* Starts an empty tracker at now_ms whose generations hold gen_keys keys
 * (at least 16). Aborts when out of memory, as the daemon's allocations do. */
void srv_idle_init(struct srv_idle *t, size_t gen_keys, uint64_t now_ms);
void srv_idle_free(struct srv_idle *t);

/* Records a use of (db, key) at now_ms. */
void srv_idle_touch(struct srv_idle *t, unsigned db, const char *key, size_t klen, uint64_t now_ms);
/* The same in two steps, so that the table's cache miss overlaps other
 * work: srv_idle_key() hashes the key and prefetches its slot,
 * srv_idle_touch_key() records the use of what it returned. */
uint64_t srv_idle_key(const struct srv_idle *t, unsigned db, const char *key, size_t klen);
void srv_idle_touch_key(struct srv_idle *t, uint64_t k, uint64_t now_ms);

/* Seconds since the last use of (db, key) as of now_ms: exact for a key
 * used after the floor, the time since the floor for any other. */
uint64_t srv_idle_seconds(const struct srv_idle *t, unsigned db, const char *key, size_t klen,
                          uint64_t now_ms);

/* Under an LFU maxmemory policy the same table keeps, in place of the
 * second of last use, Redis's LFU word: the minute of the last decrement
 * (16 bits) and a logarithmic access counter (8 bits), so that OBJECT
 * FREQ answers as Redis's does. A switch of policy reads the other kind
 * of word for a while, as Redis's objects do. */
#define SRV_LFU_INIT 5 /* a key's counter when first seen, as Redis's LFU_INIT_VAL */
/* Counts a use of what srv_idle_key returned: the counter decays by one
 * per decay_min minutes since its last decrement (0: never), then grows
 * by one with probability 1 / ((counter - SRV_LFU_INIT) * log_factor + 1).
 * A key first seen starts at SRV_LFU_INIT, as a key Redis creates. */
void srv_idle_touch_lfu(struct srv_idle *t, uint64_t k, uint64_t now_ms, int log_factor,
                        int decay_min);
/* Sets (db, key)'s LFU counter to counter (0..255) as of now_ms: RESTORE's
 * FREQ. */
void srv_idle_set_lfu(struct srv_idle *t, unsigned db, const char *key, size_t klen,
                      unsigned counter, uint64_t now_ms);
/* The decayed counter of (db, key): Redis's OBJECT FREQ. 0 for a key not
 * used since the tracker's floor. */
unsigned srv_idle_freq(const struct srv_idle *t, unsigned db, const char *key, size_t klen,
                       uint64_t now_ms, int decay_min);

#endif
