/*
 * srv_rdb — whole RDB files, Redis 7.0's format (version 10), made from
 * the daemon's data: every database's keys with their expiries, and
 * FUNCTION's libraries, as redis-server writes them, so that
 * redis-check-rdb accepts the file and redis-server loads it. SYNC hands
 * one to `redis-cli --rdb`, SAVE writes one (cmd_admin.c), and --import
 * reads one into an empty data set.
 *
 * The file is made on the event loop, key by key through the same reads
 * as DUMP: the data cannot change meanwhile, so the file is one moment's.
 */
#ifndef SHMKV_SRV_RDB_H
#define SHMKV_SRV_RDB_H

#include <stdint.h>

#include "resp.h"

/* Appends the whole file to out. For a replica's full sync, replid names
 * the replication history the file is a point of, at offset (NULL: a
 * backup). 0, or a storage error (KV_*), with out then holding part of a
 * file. */
int srv_rdb_write(struct resp_buf *out, const char *replid, uint64_t offset);

/* SAVE: the whole file into dir/dbfilename, written as temp-<pid>.rdb,
 * synced and renamed over it, the folder synced: a crash leaves the old
 * file or the new one. Streamed, a megabyte at a time. 0 with the file's
 * size in *bytes, or -1 with why in err (the temporary file removed). */
int srv_rdb_save(char *err, size_t errlen, uint64_t *bytes);

/* shmkvd --import: loads the RDB file at path (a redis-server's, or one
 * of shmkvd's) into the data set, which must be empty: every key through
 * RESTORE's path, keys already expired left out, FUNCTION's libraries as
 * FUNCTION LOAD makes them. Reads the file mapped, one key at a time, so
 * memory holds one value at most. 0, or -1 with why in err (nothing is
 * undone: the data set then holds what came before the fault). */
int srv_rdb_import(const char *path, char *err, size_t errlen);

#endif
