/*
 * srv_dbmap — which stored database each database number a client selects
 * is (SWAPDB).
 *
 * Every record in storage carries its database's index, so SWAPDB cannot
 * move data in O(1); it swaps two entries of a map from the numbers
 * clients use (logical) to the indexes records carry (physical). The
 * daemon translates at its edges: SELECT, MOVE and COPY's targets, INFO
 * keyspace, CLIENT LIST, MONITOR and keyspace notifications; everything in
 * between (a connection's db, storage, the shm cache's groups) is
 * physical. The map is saved in dir/db-map (256 bytes and their CRC32C),
 * written and synced before SWAPDB replies; without the file it is the
 * identity. Single-threaded: the event loop owns it.
 */
#ifndef SHMKV_SRV_DBMAP_H
#define SHMKV_SRV_DBMAP_H

#include <stddef.h>
#include <stdint.h>

#define SRV_DBMAP_N 256

/* logical → physical, and back */
extern uint8_t srv_dbmap[SRV_DBMAP_N], srv_dbunmap[SRV_DBMAP_N];

/* Reads dir/db-map, or sets the identity when there is none. 0, or -1 with
 * why in err (a damaged file: the daemon must not guess). */
int srv_dbmap_load(const char *dir, char *err, size_t errlen);
/* Swaps logical databases a and b, durably: the file first, then the map.
 * 0, or -errno with nothing changed. */
int srv_dbmap_swap(const char *dir, unsigned a, unsigned b);
/* Replaces the whole map with map (a permutation of 0..255), durably, in
 * one write: a replica's switch to the databases its full
 * synchronization loaded (srv_replica.c). 0, or -errno with nothing
 * changed. */
int srv_dbmap_set(const char *dir, const uint8_t *map);
/* Writes the current map into folder (a checkpoint), synced. 0 or -errno. */
int srv_dbmap_save_to(const char *folder);

#endif
