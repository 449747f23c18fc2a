/*
 * srv_cache — the daemon's side of the shared-memory cache: it creates the
 * segment, keeps it coherent with storage, keeps its lease alive, and hands
 * it to local clients.
 *
 * Coherence has one choke point: srv_cache_apply(), called with every
 * committed record set (db.on_commit) before anything is acknowledged.
 * Reads fill the cache through db.cache_get/cache_fill. Command code never
 * touches the cache. Every command runs inside one cache transaction
 * (srv_cache_begin/end around it), so a local reader sees a command — a
 * whole MULTI/EXEC included — all or nothing.
 */
#ifndef SHMKV_SRV_CACHE_H
#define SHMKV_SRV_CACHE_H

#include <stdint.h>

#include "resp.h"
#include "stor.h"

struct conn;

/* A heartbeat keeps a segment valid this long; a new daemon waits as long
 * after opening storage, so no client of a dead daemon's segment can read
 * past a write the new one acknowledges. */
#define SRV_CACHE_LEASE_MS 250

/* Waits out the lease of any previous daemon on this data folder (call
 * after storage is open: its lock says the previous daemon is gone), then
 * creates the segment when shm-cache-size is not 0 and hooks it into
 * srv.db. 0, or -1 after logging why. */
int srv_cache_open(void);
/* Shutdown begins: clients stop reading the segment at once. */
void srv_cache_close(void);
/* Frees the segment and stops the heartbeat. */
void srv_cache_destroy(void);

void srv_cache_begin(void);
void srv_cache_end(void);
/* Publishes SWAPDB's map (srv_dbmap.h) to local readers. */
void srv_cache_dbmap(void);
/* Applies a committed record set (the on_commit hook calls it). */
void srv_cache_apply(const struct stor_batch *b);
/* The INFO cache section's lines. */
void srv_cache_info(struct resp_buf *out);
void srv_cache_resetstat(void);

/* Local reads. Each client handle that attaches (SHMKV.ATTACH) gets a
 * counter slot in the segment, where it counts the commands it answers
 * from shared memory; the daemon sums them. */
/* Gives c a slot, freeing one it held, and returns its index, or -1 when
 * every slot is taken (the client then reads uncounted). */
int srv_cache_claim(struct conn *c);
/* c is going away: its slot's counts join the departed handles' totals. */
void srv_cache_release(struct conn *c);
/* Totals over every handle since start (or CONFIG RESETSTAT), and how many
 * handles and distinct processes are attached now. */
struct srv_cache_local {
    uint64_t hits, misses, retries, key_hits, key_misses;
    size_t handles, processes;
};
void srv_cache_local(struct srv_cache_local *out);
/* The INFO Shmcache section's lines. */
void srv_cache_local_info(struct resp_buf *out);
/* SHMKV.CLIENTS' text: one line per attached handle, as CLIENT LIST's. */
void srv_cache_clients(struct resp_buf *out);

#endif
