/*
 * srv_repl — replication, as the primary sees it: the replication ID and
 * offset, the stream of writes in Redis's own form, the backlog that
 * serves partial resynchronizations, the replicas' connections (SYNC,
 * PSYNC, REPLCONF), and WAIT.
 *
 * The stream is what Redis 7.0 sends: each command that changed data, as
 * a RESP array, after a SELECT when its database differs from the last
 * one sent; a script's or a transaction's commands between MULTI and
 * EXEC when there are more than one; expiries as absolute times (the
 * commands that set relative ones are rewritten); a key found expired as
 * a DEL before the command that found it; active expiry's deletions as
 * DELs. Every byte of it advances the replication offset and goes into
 * the backlog (a ring of repl-backlog-size bytes) and to every replica
 * past its full sync.
 *
 * A replica (srv_replica.c) applies its primary's stream through the same
 * commit point as client writes, and feeds what it applied, unchanged,
 * to its own backlog and replicas (srv_repl_feed_raw): the offsets of a
 * chain agree, and a promoted replica serves PSYNC for what it had.
 * While the daemon is a replica nothing it executes is propagated by
 * srv_repl_propagate: its stream is its primary's.
 *
 * Single-threaded: the event loop owns all of it.
 */
#ifndef SHMKV_SRV_REPL_H
#define SHMKV_SRV_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "resp.h"

struct conn;

/* A fresh identity (a random replication ID, offset 0, no backlog). */
void srv_repl_init(void);
/* Frees the backlog and every replica's state. */
void srv_repl_free(void);

/* ---- identity ---- */

/* The replication ID (40 hex digits) and the offset: the bytes of stream
 * made or applied so far. */
const char *srv_repl_id(void);
uint64_t srv_repl_offset(void);
/* After a full sync from a primary: its ID and offset become ours, the
 * backlog restarts empty at that offset (what it held is another
 * history), and our own replicas are dropped to sync again. */
void srv_repl_adopt(const char *replid, uint64_t offset);
/* A replica's primary switched histories: after its PSYNC was answered
 * +CONTINUE with a new ID, that ID becomes ours, and the old one our
 * second ID, good up to the current offset. */
void srv_repl_continue_as(const char *replid);
/* DEBUG CHANGE-REPL-ID: a new random ID, no second one. */
void srv_repl_new_id(void);
/* Promotion (REPLICAOF NO ONE, FAILOVER): the current ID becomes the
 * second one, valid for offsets up to the current one, and a new random
 * ID is taken, as Redis's PSYNC2 does, so that the old primary's other
 * replicas can continue from us. Our own replicas are dropped: they
 * reconnect and continue under the new ID. */
void srv_repl_promote(void);

/* Whether the daemon follows a primary; srv_replica.c says so. While it
 * does, nothing it executes is propagated: its stream is its primary's. */
void srv_repl_set_following(bool on);
bool srv_repl_following(void);

/* A clean shutdown leaves dir/repl-state ("<ID> <offset>"): the data
 * then is exactly the stream up to offset, so the next start takes both
 * back, with an empty backlog, and a replica that had everything
 * continues with PSYNC instead of a full sync (Redis keeps them in its
 * RDB file for the same reason). The file is removed once read: after a
 * crash the start takes a new ID. 0 or -errno. */
int srv_repl_save(const char *dir);
void srv_repl_load(const char *dir);

/* ---- the stream ---- */

/* Whether a backlog or a replica takes the stream: without either,
 * propagation costs nothing and the offset stays. */
bool srv_repl_active(void);
/* Queues one command that changed data in physical database dbi, for the
 * end of the outermost call (srv_repl_flush). argv is copied. Nothing
 * while the daemon is a replica or when the stream is not active. */
void srv_repl_propagate(unsigned dbi, const struct db_str *argv, size_t argc);
/* The same, from NUL-terminated strings. */
void srv_repl_propagate_strs(unsigned dbi, const char *const *argv, size_t argc);
/* Sends what the outermost call queued: one command as it is, more than
 * one between MULTI and EXEC. Called by cmd_call at depth 0 and after
 * active expiry. */
void srv_repl_flush(void);
/* The same, each command on its own: active expiry's DELs, which Redis
 * sends one by one. */
void srv_repl_flush_each(void);
/* Bytes of a primary's stream that this replica applied: into the
 * backlog and to our replicas as they are, advancing the offset. */
void srv_repl_feed_raw(const char *p, size_t n);

/* ---- replicas' connections ---- */

/* SYNC [and PSYNC replid offset]: c becomes a replica, with a partial
 * resynchronization from the backlog when it can continue, else a full
 * one (an RDB file, then the stream). */
void srv_repl_psync(struct conn *c, bool psync);
/* REPLCONF ACK offset from replica c: how far it applied. */
void srv_repl_ack(struct conn *c, uint64_t offset);
/* REPLCONF listening-port / ip-address, kept for INFO, ROLE and Sentinel. */
void srv_repl_set_port(struct conn *c, int port);
void srv_repl_set_ip(struct conn *c, const char *ip, size_t n);
/* REPLCONF capa: eof (the replica reads a file between EOF marks, so a
 * diskless sync may serve it) is kept; others are accepted. */
void srv_repl_set_capa(struct conn *c, const char *capa, size_t n);
/* An event of the loop on one of ours that is not a client (a diskless
 * sync's pipe): true when handled (the loop's next srv_repl_before_sleep
 * reads it); false for a connection. */
bool srv_repl_event(struct conn *c, uint32_t events);
/* c is being freed: forget it as a replica or a waiter. */
void srv_repl_conn_gone(struct conn *c);
/* How many replicas are past their full sync. */
unsigned srv_repl_online(void);
/* Once per cron: PINGs into the stream every repl-ping-replica-period,
 * WAIT's timeouts, replicas that stopped acknowledging, the backlog freed
 * repl-backlog-ttl after the last replica left. */
void srv_repl_cron(uint64_t now_ms);
/* Before the loop sleeps: GETACK to the replicas when a WAIT is waiting,
 * WAIT's answers. */
void srv_repl_before_sleep(void);

/* ---- commands and INFO ---- */

/* FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]: Redis 7.0's
 * coordinated failover (replication.md, "FAILOVER"). */
void srv_repl_failover(struct conn *c);
/* The hand-over's PSYNC was answered (srv_replica.c): took, the target
 * leads and this server follows it; else the failover is undone. */
void srv_repl_failover_answered(bool took, const char *reply);

/* WAIT numreplicas timeout. */
void srv_repl_wait(struct conn *c);
/* What a parked WAIT answers at its timeout: the replicas that
 * acknowledged its offset by then. */
int64_t srv_repl_wait_count(const struct conn *c);
/* min-replicas-to-write: Redis's -NOREPLICAS error when fewer replicas
 * than it asks acknowledged within min-replicas-max-lag, else NULL. */
const char *srv_repl_write_refusal(void);
/* INFO stats' sync_full, sync_partial_ok, sync_partial_err. */
void srv_repl_sync_stats(uint64_t *full, uint64_t *ok, uint64_t *err);
/* The primary's lines of INFO replication (connected_slaves, the slaveN
 * lines, the IDs, the offsets, the backlog). */
void srv_repl_info(struct resp_buf *b);
/* ROLE's reply as a primary. */
void srv_repl_role(struct conn *c);
/* Bytes the replicas' output buffers hold (INFO mem_clients_slaves). */
size_t srv_repl_buffers(void);

#endif
