/*
 * srv_rdb — whole RDB files, Redis 7.0's format (version 10), made from
 * the daemon's data: every database's keys with their expiries, and
 * FUNCTION's libraries, as redis-server writes them, so that
 * redis-check-rdb accepts the file and redis-server loads it. SYNC hands
 * one to `redis-cli --rdb`, SAVE writes one (cmd_admin.c), and --import
 * reads one into an empty data set.
 *
 * srv_rdb_save makes the file on the event loop, key by key through the
 * same reads as DUMP: the data cannot change meanwhile, so the file is
 * one moment's. A job (srv_rdb_job_start) makes it on a thread, from a
 * checkpoint of that moment, while the loop serves.
 */
#ifndef SHMKV_SRV_RDB_H
#define SHMKV_SRV_RDB_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "resp.h"

/* SAVE: the whole file into dir/dbfilename, written as temp-<pid>.rdb,
 * synced and renamed over it, the folder synced: a crash leaves the old
 * file or the new one. Streamed, a megabyte at a time. 0 with the file's
 * size in *bytes, or -1 with why in err (the temporary file removed). */
int srv_rdb_save(char *err, size_t errlen, uint64_t *bytes);

/* A file made by a thread while the loop goes on. The thread first
 * flushes RocksDB's memtables (srv_rdb_job_poll then says READY); the
 * loop then calls srv_rdb_job_checkpoint, which drains write-back into
 * RocksDB and makes a checkpoint: the data as of that moment, and the
 * loop's only pause (short: the memtables were just flushed). The thread
 * opens the checkpoint as a store of its own, writes the file into path,
 * synced, and removes the checkpoint. NULL, with why in err, when it
 * cannot start. */
struct srv_rdb_job;
struct srv_rdb_job *srv_rdb_job_start(const char *path, char *err, size_t errlen);
/* The same, the file written into fd instead (a pipe's end, which the
 * job owns and closes once the file is whole or the job failed: the
 * reader sees EOF, then the job's end; no size is known). path is NULL. */
struct srv_rdb_job *srv_rdb_job_start_fd(const char *path, int fd, char *err, size_t errlen);
enum {
    SRV_RDB_JOB_FAILED = -1, /* why in err; the file removed */
    SRV_RDB_JOB_BUSY = 0,
    SRV_RDB_JOB_DONE = 1,  /* the file is whole: its size in *bytes */
    SRV_RDB_JOB_READY = 2, /* waiting for srv_rdb_job_checkpoint */
};
/* Where the job is; never blocks. */
int srv_rdb_job_poll(struct srv_rdb_job *j, char *err, size_t errlen, uint64_t *bytes);
/* On READY: the file's moment. For a replica's full sync, replid names
 * the replication history the file is a point of, at offset (its
 * repl-id and repl-offset fields); NULL for a backup. 0, or -1 with why
 * in err (the job then fails). */
int srv_rdb_job_checkpoint(struct srv_rdb_job *j, const char *replid, uint64_t offset, char *err,
                           size_t errlen);
/* When it started (ms), for the logs. */
uint64_t srv_rdb_job_started(const struct srv_rdb_job *j);
/* Stops it if it still runs (between keys), waits for the thread, and
 * frees it; a failed or stopped job's file is removed, a finished one's
 * is the caller's. j may be NULL. */
void srv_rdb_job_free(struct srv_rdb_job *j);

/* At start: removes what jobs (and SAVE) left in dir when the daemon
 * stopped in the middle of one: rdb-checkpoint-* folders, temp-*.rdb
 * files. */
void srv_rdb_sweep(const char *dir);

/* shmkvd --import: loads the RDB file at path (a redis-server's, or one
 * of shmkvd's) into the data set, which must be empty: every key through
 * RESTORE's path, keys already expired left out, FUNCTION's libraries as
 * FUNCTION LOAD makes them. Reads the file mapped, one key at a time, so
 * memory holds one value at most. 0, or -1 with why in err (nothing is
 * undone: the data set then holds what came before the fault). */
int srv_rdb_import(const char *path, char *err, size_t errlen);

/* A replica's full synchronization (srv_replica.c): loads the RDB file at
 * path, each key of database l (the number clients select) into physical
 * database phys[l], which the caller emptied, through RESTORE's path;
 * keys whose expiry passed are kept, as a Redis replica keeps them (its
 * primary's DEL follows). FUNCTION's libraries are not loaded but pushed,
 * as their code, onto libs (inited by the caller, who destroys it). Reads
 * the file mapped, one key at a time; makes the journal's sync point
 * every 1024 keys, and calls tick(tick_arg), if not NULL, every 64 keys
 * (between two keys: no record set open). 0 with the keys stored in
 * *keys, or -1 with why in err (what was stored stays, for the caller to
 * drop). */
int srv_rdb_load_into(const char *path, const uint8_t *phys, struct db_vec *libs,
                      void (*tick)(void *arg), void *tick_arg, uint64_t *keys, char *err,
                      size_t errlen);

#endif
