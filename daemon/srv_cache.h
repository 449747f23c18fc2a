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
/* Applies a committed record set (the on_commit hook calls it). */
void srv_cache_apply(const struct stor_batch *b);
/* The INFO cache section's lines. */
void srv_cache_info(struct resp_buf *out);
void srv_cache_resetstat(void);

#endif
