/*
 * srv_os — what shmkvd asks of the operating system, and tells it: an
 * open-file limit that fits maxclients and the daemon's own files, a
 * listener that never spins once that limit is reached, the signals, and
 * the supervisor's readiness protocols (supervised systemd or upstart).
 *
 * Layer: the daemon's; the event loop's thread calls all of it.
 */
#ifndef SHMKV_SRV_OS_H
#define SHMKV_SRV_OS_H

#include <stdbool.h>

/* Descriptors kept beyond the clients, as Redis keeps 32: listeners, the
 * log, the journal, the shm segment, epoll, RocksDB's logs and manifest. */
#define SRV_OS_RESERVED_FDS 32
/* Table files RocksDB keeps open at most where the limit allows. */
#define SRV_OS_ROCKSDB_FILES 4096

/* Raises the open-file limit to fit *maxclients clients, the reserve and
 * RocksDB's table files. Where the system allows less, RocksDB gets a
 * quarter of what the reserve leaves (at least 16 files) and *maxclients
 * is lowered to the rest, and the log says so, as Redis lowers maxclients.
 * *files receives RocksDB's share. 0, or -1 (logged) where not one client
 * fits. */
int srv_os_fd_limit(int *maxclients, int *files);
/* CONFIG SET maxclients n: true if n clients fit the open-file limit,
 * raised if need be; else false, with *most the most that fit. */
bool srv_os_maxclients_fit(int n, int *most);

/* Holds one descriptor back for srv_os_refuse_waiting. */
void srv_os_reserve_fd(void);
/* accept failed for want of descriptors (EMFILE, ENFILE): gives up the
 * reserved one for as long as it takes to accept the client waiting on
 * lfd, send it Redis's "max number of clients reached" and close it, so
 * that the listener is drained rather than waking the loop again and
 * again. true if a client was refused so. */
bool srv_os_refuse_waiting(int lfd);

/* SIGTERM and SIGINT call on_stop; SIGHUP and SIGPIPE are ignored, as
 * Redis ignores them. */
void srv_os_signals(void (*on_stop)(int));

/* supervised: resolves auto (systemd when NOTIFY_SOCKET is set, upstart
 * when UPSTART_JOB is) and logs what it will do. mode: 0 upstart, 1
 * systemd, 2 auto, 3 no (the directive's names, in order). */
void srv_os_supervise(int mode);
/* What srv_os_supervise settled on: "systemd", "upstart" or "no". */
const char *srv_os_supervisor(void);
/* Tells systemd a state ("READY=1", "STATUS=...", "STOPPING=1") when
 * supervised by it; nothing otherwise. */
void srv_os_notify(const char *state);
/* The daemon serves: READY=1 for systemd, SIGSTOP for upstart. */
void srv_os_ready(void);

#endif
