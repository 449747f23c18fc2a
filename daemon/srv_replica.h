/*
 * srv_replica — replication, as a replica sees it: REPLICAOF, the link to
 * the primary (a non-blocking outgoing connection driven by the event
 * loop), the handshake in Redis's own protocol (PING, AUTH, REPLCONF,
 * PSYNC), the full synchronization (an RDB file received into a temporary
 * file in dir, then loaded into spare databases and switched in whole),
 * and the stream of writes, applied through the same commit point as a
 * client's commands and handed on unchanged to srv_repl (the backlog and
 * our own replicas).
 *
 * The identity (replication ID and offset) belongs to srv_repl.c; this
 * module tells it what happened (srv_repl_adopt, srv_repl_continue_as,
 * srv_repl_promote, srv_repl_set_following, srv_repl_feed_raw).
 *
 * Single-threaded: the event loop owns all of it.
 */
#ifndef SHMKV_SRV_REPLICA_H
#define SHMKV_SRV_REPLICA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "resp.h"

struct conn;
struct cmd;

/* At start, once the listeners are open: follows the primary the
 * `replicaof` directive names, if any. */
void srv_replica_start(void);
/* At exit: closes the link and removes a half-received RDB file. */
void srv_replica_stop(void);

/* Whether the daemon follows a primary (REPLICAOF host port), whatever
 * the link's state. */
bool srv_replica_following(void);
/* Whether the link is up: past its full or partial synchronization. */
bool srv_replica_link_up(void);
/* Whether a full synchronization's file is being loaded: the loop still
 * serves clients the old data meanwhile, but refuses what would change
 * it or the link (cmd_dispatch). */
bool srv_replica_loading(void);

/* An event of the loop on the link while it is not yet a client (the
 * connect, the handshake, the RDB transfer): true when it was the link's
 * and is handled; false for any other connection. */
bool srv_replica_event(struct conn *c, uint32_t events);
/* Once per cron: connects (again) a second after a failure, notices a
 * silent primary (repl-timeout), sends REPLCONF ACK once a second. */
void srv_replica_cron(uint64_t now_ms);

/* The link c (CONN_MASTER) ran one command of the stream, p[0, n), whose
 * replies began at out_before in c's output: those replies are dropped
 * (a primary gets none, but REPLCONF ACK), the bytes go to srv_repl, and
 * the offset advances. */
void srv_replica_applied(struct conn *c, size_t out_before, const char *p, size_t n);
/* REPLCONF GETACK from the primary: an ACK with the offset before this
 * command follows the command. */
void srv_replica_getack(struct conn *c);
/* The link c is being freed: the link is down, and the next cron
 * reconnects. */
void srv_replica_conn_gone(struct conn *c);

/* Whether a command named name (or "name|sub") may run while the link is
 * down and replica-serve-stale-data is no (Redis's "stale" flag). */
bool srv_replica_stale_ok(const char *name);

/* FAILOVER, on the primary handing over: follows host:port, and the
 * PSYNC of the handshake carries FAILOVER, which makes that replica a
 * primary; its answer goes to srv_repl_failover_answered. */
void srv_replica_failover_to(const char *host, int port);
/* REPLICAOF NO ONE's work, without a reply (a failover undone, the
 * target of one): no primary any more, a new replication ID. */
void srv_replica_unfollow(void);

/* INFO replication's replica lines, master_host to replica_announced (only
 * while following). */
void srv_replica_info(struct resp_buf *b);
/* ROLE's reply as a replica. */
void srv_replica_role(struct conn *c);

#endif
