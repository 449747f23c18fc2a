/*
 * srv — shmkvd's server: configuration, the event loop, clients, logging.
 *
 * Layer: top of the daemon. One thread runs the loop, parses every request,
 * executes every command and writes every reply (as Redis does), so it is
 * the single writer of storage and nothing here takes a lock.
 */
#ifndef SHMKV_SRV_H
#define SHMKV_SRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "resp.h"
#include "srv_dbmap.h"
#include "srv_idle.h"

#define SRV_VERSION "7.0.15" /* the Redis version whose behaviour we follow */
#define SHMKV_VERSION "0.1.0"
#define SRV_MAX_BIND 16

enum { LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3 };

/* ---- configuration ---- */

struct srv_conf {
    int port;
    char *bind[SRV_MAX_BIND];
    int nbind;
    char *unixsocket;
    int unixsocketperm;
    char *dir;
    char *requirepass;
    int maxclients;
    int timeout; /* client idle seconds, 0 = never */
    int64_t proto_max_bulk_len;
    int databases;
    int loglevel;
    char *logfile;
    int daemonize;
    int supervised; /* upstart, systemd, auto, no (srv_os.h) */
    char *pidfile;
    int hz;
    int64_t block_cache_bytes;
    int64_t write_buffer_bytes;
    int64_t compaction_io_bytes; /* per second, 0: no limit */
    int hash_coding, set_coding; /* enum enc_coding */
    int appendfsync;             /* 0 no, 1 everysec, 2 always */
    int writeback;               /* journal + overlay + flusher (docs/writeback.md) */
    int64_t flush_batch_bytes;
    int flush_interval_ms;
    int64_t overlay_max_bytes;
    int flusher_threads;     /* 0: by the CPUs (stor.h, stor_opts) */
    int io_threads;          /* reply writers, the loop included (srv_io) */
    int64_t min_free_disk;   /* below it, write commands are refused (MISCONF) */
    char *journal_shm_dir;   /* NULL: the journal stays on disk */
    int64_t shm_cache_bytes; /* 0: no shared-memory cache */
    int64_t shm_max_record;
    int shm_huge_pages; /* try the hugetlb pool for the segment first */
    int64_t slowlog_log_slower_than;
    int slowlog_max_len;
    int latency_tracking;          /* per-command histograms (srv_lat.h) */
    int latency_monitor_threshold; /* ms; 0: the latency monitor is off */
    double latency_pcts[16];       /* latency-tracking-info-percentiles */
    int latency_npcts;
    int64_t tracking_table_max_keys; /* CLIENT TRACKING's table; 0: no limit */
    int notify_keyspace_events;      /* SRV_NOTIFY_* classes */
    /* maxmemory: a bound on the daemon's heap (jemalloc's allocated bytes),
     * 0 for none; over it, commands that may grow memory are refused with
     * OOM (docs/daemon.md, "maxmemory"). The policy picks what key use is
     * tracked: the last use (LRU and the others) or LFU's counter. */
    int64_t maxmemory;
    int maxmemory_policy; /* SRV_POLICY_*: the directive's names, in order */
    int lfu_log_factor, lfu_decay_time;
    int enable_debug_command; /* who may run DEBUG: SRV_PROTECTED_* */
    int64_t busy_reply_ms;    /* busy-reply-threshold (lua-time-limit); 0: scripts never busy */
    int64_t lua_memory_limit; /* bytes a Lua state may hold while a script runs; 0: no bound */
    char *dbfilename;         /* SAVE's RDB file, in dir */
    /* The Redis directives shmkvd keeps without applying them, each as
     * CONFIG GET shows it (srv_conf_redis.h): one string a directive. */
    char **inert;
    bool *inert_named; /* named by the file or the command line */
    bool save_loaded;  /* the file or command line named save: later lines add pairs */
    /* "user name rule ..." lines, in order: each a vector of its words
     * after "user" (users[i][0] the name), nuser_words[i] of them. */
    char ***users;
    size_t *nuser_words;
    size_t nusers;
};

/* Keyspace notification classes (notify-keyspace-events): where events go
 * (K, E) and which kinds are published (g $ l s h z x e t d; A is all of
 * those). */
enum {
    SRV_NOTIFY_KEYSPACE = 1 << 0, /* K: __keyspace@<db>__:<key> gets the event */
    SRV_NOTIFY_KEYEVENT = 1 << 1, /* E: __keyevent@<db>__:<event> gets the key */
    SRV_NOTIFY_GENERIC = 1 << 2,  /* g */
    SRV_NOTIFY_STRING = 1 << 3,   /* $ */
    SRV_NOTIFY_LIST = 1 << 4,     /* l */
    SRV_NOTIFY_SET = 1 << 5,      /* s */
    SRV_NOTIFY_HASH = 1 << 6,     /* h */
    SRV_NOTIFY_ZSET = 1 << 7,     /* z */
    SRV_NOTIFY_EXPIRED = 1 << 8,  /* x */
    SRV_NOTIFY_EVICTED = 1 << 9,  /* e: shmkv never evicts keys */
    SRV_NOTIFY_STREAM = 1 << 10,  /* t: shmkv has no streams */
    SRV_NOTIFY_MODULE = 1 << 11,  /* d: nor modules */
    SRV_NOTIFY_NEW = 1 << 12,     /* n: a key was created (not part of A) */
    SRV_NOTIFY_ALL = 0xffc,
};

enum {
    SRV_POLICY_VOLATILE_LRU,
    SRV_POLICY_VOLATILE_LFU,
    SRV_POLICY_VOLATILE_RANDOM,
    SRV_POLICY_VOLATILE_TTL,
    SRV_POLICY_ALLKEYS_LRU,
    SRV_POLICY_ALLKEYS_LFU,
    SRV_POLICY_ALLKEYS_RANDOM,
    SRV_POLICY_NOEVICTION,
};
#define SRV_LFU_POLICY(p) ((p) == SRV_POLICY_VOLATILE_LFU || (p) == SRV_POLICY_ALLKEYS_LFU)
/* enable-debug-command's values, as Redis 7.0 names them: a protected
 * command runs for nobody, for everybody, or for a client on the Unix
 * socket or a loopback address. */
enum { SRV_PROTECTED_NO = 0, SRV_PROTECTED_YES = 1, SRV_PROTECTED_LOCAL = 2 };

/* Sets the defaults: every field owns its strings (free with srv_conf_free). */
void srv_conf_init(struct srv_conf *c);
void srv_conf_free(struct srv_conf *c);
/* Applies "name value..." as a config file line or a --name value option.
 * Returns 0, or -1 with *err set to a static message. */
int srv_conf_set(struct srv_conf *c, const char *name, const char **argv, int argc,
                 const char **err);
/* Loads a redis.conf-style file: one directive per line, '#' comments,
 * quoting as in redis-cli. Returns 0 or -1 with a message in errbuf. */
int srv_conf_load(struct srv_conf *c, const char *path, char *errbuf, size_t errlen);

/* ---- clients ---- */

/* The pub/sub namespaces: channels, patterns, shard channels. */
enum { CMD_PS_CHANNEL, CMD_PS_PATTERN, CMD_PS_SHARD, CMD_PS_KINDS };
struct ps_chan;
struct srv_repl_peer;

enum {
    CONN_CLOSE_AFTER_REPLY = 1 << 0,
    CONN_MULTI = 1 << 1,
    CONN_DIRTY_CAS = 1 << 2,  /* a watched key changed: EXEC fails */
    CONN_DIRTY_EXEC = 1 << 3, /* a command failed to queue: EXEC fails */
    CONN_BLOCKED = 1 << 4,
    CONN_UNIX = 1 << 5,
    CONN_AUTHED = 1 << 6,
    CONN_PENDING_WRITE = 1 << 7,
    CONN_CLOSE_ASAP = 1 << 8,
    CONN_IN_EXEC = 1 << 9,   /* running EXEC's queue: blocking commands do not block */
    CONN_PASS_FDS = 1 << 10, /* the next write carries the shm cache's memfds */
    CONN_MONITOR = 1 << 11,  /* gets every command run (MONITOR) */
    CONN_NO_EVICT = 1 << 12, /* CLIENT NO-EVICT on: only shown (no client eviction here) */
    /* While a script is busy: neither read nor written until it ends (its
     * caller; those whose replies may acknowledge writes not yet in the
     * journal). */
    CONN_HELD = 1 << 13,
    CONN_REPLY_OFF = 1 << 14,       /* CLIENT REPLY OFF: nothing is sent */
    CONN_REPLY_SKIP_NEXT = 1 << 15, /* CLIENT REPLY SKIP ran: the next command's reply goes */
    CONN_REPLY_SKIP = 1 << 16,      /* this command's reply goes */
    CONN_PAUSED = 1 << 17,          /* its next command waits for CLIENT PAUSE to end */
    CONN_RDB_ONLY = 1 << 18,        /* REPLCONF rdb-only 1: SYNC sends an RDB file, then closes */
    CONN_REPLICA = 1 << 20,         /* a replica of ours, past SYNC or PSYNC (srv_repl.c) */
    CONN_MASTER = 1 << 21,          /* the link to our primary (srv_replica.c) */
};

/* CLIENT TRACKING state (cmd_tracking.c), in conn.tflags. */
enum {
    CONN_TRK_ON = 1 << 0,
    CONN_TRK_BCAST = 1 << 1,
    CONN_TRK_OPTIN = 1 << 2,
    CONN_TRK_OPTOUT = 1 << 3,
    CONN_TRK_NOLOOP = 1 << 4,
    CONN_TRK_CACHING = 1 << 5, /* CLIENT CACHING given for the next command */
    CONN_TRK_BROKEN = 1 << 6,  /* the redirect client is gone */
};

/* One queued MULTI command: its own copy of the arguments. */
struct conn_queued {
    size_t argc;
    struct db_str *argv;
    const struct cmd *cmd;
};

struct acl_user;
struct conn {
    int fd;
    uint64_t id;
    uint32_t flags;
    /* Who it runs as (acl.h): the default user until AUTH or HELLO says
     * otherwise; NULL for internal clients (the primary's link, scripts'),
     * which may run anything. */
    struct acl_user *user;
    /* TLS (srv_tls.h): the session, NULL on a plain connection; whether
     * its handshake is done; whether a read waits for the socket to take a
     * write (the loop then reads again when it is writable), or a write for
     * input (it writes again when the socket is readable). */
    struct ssl_st *ssl;
    bool tls_ready, tls_read_waits, tls_write_waits;
    bool out_armed; /* epoll also watches for output */
    /* Step 1 of the prefetch was issued for the command after the next:
     * pf is what it computed, pf_len that command's length (0: unknown). */
    bool prefetched;
    struct db_pf pf;
    size_t pf_len;
    int proto; /* 2 or 3 */
    unsigned db;
    unsigned shm_slot; /* its shm counter slot + 1 (SHMKV.ATTACH); 0: none */
    struct resp_buf in, out;
    uint64_t out_soft_ms; /* when out passed its class's soft limit; 0: it is under (srv_limit.c) */
    struct resp_req req;
    char name[128];
    char addr[64], laddr[64];
    uint64_t ctime_ms, last_ms;
    const char *lastcmd;
    char lastsub[64]; /* "name|sub" of a container's last subcommand, lastcmd then points here */
    /* the command being executed */
    size_t argc;
    struct db_str *argv;
    size_t argvcap;
    /* MULTI */
    struct conn_queued *mq;
    size_t mqn, mqcap;
    /* WATCH: (db, key) pairs, owned copies */
    struct db_str *watched;
    unsigned *watched_db;
    size_t nwatched, watchcap;
    /* blocking (BLPOP & co.) */
    uint64_t block_deadline_ms; /* 0: forever */
    struct db_str *bargv;       /* the blocked command, owned */
    size_t bargc;
    const struct cmd *bcmd;
    /* pub/sub: what it subscribed to, per kind, in order (cmd_pubsub.c) */
    struct ps_chan **subs[CMD_PS_KINDS];
    size_t nsubs[CMD_PS_KINDS], subscap[CMD_PS_KINDS];
    /* CLIENT TRACKING (cmd_tracking.c): flags, redirect id, BCAST prefixes (owned) */
    uint32_t tflags;
    uint64_t tredir;
    struct db_str *tprefix;
    size_t ntprefix;
    struct srv_repl_peer *repl; /* a replica's state, or a WAIT's (srv_repl.c); NULL */
    uint64_t woff;              /* the replication offset after its last command (WAIT) */
    struct conn *prev, *next;
};

/* ---- the server ---- */

struct srv_slowlog {
    uint64_t id;
    uint64_t time_s, micros;
    size_t argc;
    struct db_str *argv; /* owned, truncated like Redis's */
    char addr[64], name[128];
};

struct srv_stats {
    uint64_t connections, commands, rejected, expired_keys, net_in, net_out, keyspace_hits,
        keyspace_misses, error_replies;
    uint64_t io_threaded_writes;                /* replies written by srv_io's hand-offs */
    int io_threads_active;                      /* the last iteration's replies went through them */
    uint64_t reads_processed, writes_processed; /* socket reads, reply writes */
    uint64_t expire_cap_reached; /* active expiry cycles stopped by their time limit */
    uint64_t expire_cycle_us;    /* time spent in active expiry */
    uint64_t restores;           /* RESTORE payloads checked whole (all of them) */
    /* Committed record sets (write commands that changed something, active
     * expiry's deletes), and their count at the last checkpoint: Redis's
     * "changes since last save". */
    uint64_t dirty, dirty_at_save;
    uint64_t saves;             /* checkpoints made (SAVE, BGSAVE, SHUTDOWN SAVE) */
    int64_t last_save_ms;       /* how long the last one took; -1 before any */
    size_t used_memory_peak;    /* the most jemalloc had allocated, sampled by cron */
    size_t used_memory_startup; /* allocated once the daemon started serving */
    /* Clients closed for passing client-query-buffer-limit and
     * client-output-buffer-limit (srv_limit.c). */
    uint64_t query_limit_closes, output_limit_closes;
};

/* INSTANTANEOUS_*: rates over the last SRV_INST_SAMPLES samples, one per
 * 100 ms (cron), as Redis computes them. */
#define SRV_INST_SAMPLES 16
enum { SRV_INST_OPS, SRV_INST_NET_IN, SRV_INST_NET_OUT, SRV_INST_N };
struct srv_inst {
    uint64_t last_ms, last[SRV_INST_N];
    double rate[SRV_INST_N][SRV_INST_SAMPLES]; /* per second */
    unsigned at;
};

struct shmc_w;

struct srv {
    struct srv_conf conf;
    struct stor *stor;
    struct shmc_w *cache; /* the shared-memory cache, NULL when disabled */
    struct db *db;
    /* Keyspace events' facts, which the type layer gathers into them while
     * a command asks (db_track_events): keys created, keys seen expired. */
    struct db_vec created, expired;
    int epfd;
    int lfd[SRV_MAX_BIND + 1];
    int nlfd;
    int tlsfd[SRV_MAX_BIND + 1]; /* listeners on tls-port */
    int ntlsfd;
    int unixfd;
    struct conn *clients; /* doubly linked */
    size_t nclients;
    size_t nclosing; /* of them, closed by srv_close_async and not yet freed */
    uint64_t next_id;
    uint64_t start_ms;
    uint64_t loop_ms; /* wall time at the start of this loop iteration */
    volatile int shutdown_asap;
    int shutdown_rc;
    /* CLIENT PAUSE: until pause_end_ms, commands (SRV_PAUSE_ALL) or writes
     * (SRV_PAUSE_WRITE) wait; 0 when there is no pause. */
    int pause_type;
    uint64_t pause_end_ms;
    struct srv_stats stats;
    struct srv_inst inst;
    bool over_maxmemory;    /* used memory was above maxmemory at the last look */
    char run_id[41];        /* 40 random hex digits, new at each start */
    bool active_expire_off; /* DEBUG SET-ACTIVE-EXPIRE 0: cron deletes no expired key */
    struct resp_limits limits;
    /* client-output-buffer-limit by class (SRV_OUT_*), and the smallest
     * non-zero soft or hard limit of them: a client's output past it is
     * judged (OUT, srv_limit.c); SIZE_MAX when there is none. */
    struct srv_out_limit {
        uint64_t hard, soft, soft_s;
    } out_limit[3];
    size_t out_watch;
    uint64_t query_limit; /* client-query-buffer-limit */
    uint64_t lastsave_s;
    /* SLOWLOG ring */
    struct srv_slowlog *slowlog;
    size_t slowlog_n, slowlog_head, slowlog_cap;
    uint64_t slowlog_next_id;
    /* SCAN cursors: integer cursor → position key */
    struct srv_cursor *cursors;
    uint64_t cursor_next;
    struct srv_idle idle; /* keys' last use, for OBJECT IDLETIME */
};

extern struct srv srv;

void srv_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t srv_mstime(void);
/* 40 random hex digits and a NUL into out (run_id, replid). */
void srv_random_hex(char out[41]);
/* The average of an instantaneous rate's samples (SRV_INST_*), per second. */
double srv_inst_rate(int which);

/* shmkvd --import file: the RDB file srv_main loads into the empty data
 * set instead of serving (srv_rdb_import); NULL to serve. */
extern const char *srv_import_path;

/* Runs the daemon with a loaded configuration; returns the exit status. */
int srv_main(void);

/* Asks the loop to stop after the current iteration (SHUTDOWN, signals). */
void srv_request_shutdown(int rc);

/* Records a command that took us microseconds (SLOWLOG); bit i of redact
 * set: argument i shows as "(redacted)". */
void srv_slowlog_push(const struct conn *c, uint64_t time_s, uint64_t us, uint64_t redact);
/* Entry i, newest first (i < slowlog_n). */
const struct srv_slowlog *srv_slowlog_at(size_t i);
void srv_slowlog_reset(void);
/* Applies configuration changes to the running server (CONFIG SET). */
void srv_conf_changed(void);
enum { SRV_PAUSE_WRITE = 1, SRV_PAUSE_ALL = 2 };
/* CLIENT PAUSE: pauses commands of the type until end_ms (the stricter
 * type and the later end win over a pause already running). */
void srv_pause(int type, uint64_t end_ms);
/* Ends the pause; the loop then runs the held commands, in the order they
 * were held. */
void srv_unpause(void);
/* c's current command must wait for the pause: c stops reading its
 * commands until then (the command stays in its query buffer). */
void srv_postpone(struct conn *c);
/* c was unparked (its blocking command answered or timed out): the loop
 * goes on with the commands c pipelined behind it, between events, never
 * from inside a command. */
void srv_resume_later(struct conn *c);
/* Called by a script past busy-reply-threshold, often: one round of the
 * loop's events without waiting, its caller left alone, other clients'
 * commands answered (cmd_dispatch refuses most with -BUSY) and replies
 * written, but none that may acknowledge a write the journal does not
 * have yet. */
void srv_events_while_busy(struct conn *caller);
/* The busy script ended: the clients it held are served again. */
void srv_busy_end(void);
/* SHUTDOWN NOSAVE while a script is busy: exits at once, as a killed
 * daemon would, so that none of the script's writes is kept (the journal
 * never got them); the next start replays the journal. */
__attribute__((noreturn)) void srv_exit_busy(void);
/* Queues a reply flush for c (the loop writes it). */
void conn_want_write(struct conn *c);
/* Makes the connected socket fd a client with flags (an accepted
 * client's; the link to our primary, srv_replica.c): watched by the
 * loop, listed by CLIENT LIST, freed by conn_free. */
struct conn *srv_conn_adopt(int fd, uint32_t flags);
/* Runs p[0, n) as if c had sent it: the bytes that came with the end of
 * a replica's handshake are the start of the stream. */
void srv_conn_feed(struct conn *c, const char *p, size_t n);
/* Frees a client at once (closing its socket). */
void conn_free(struct conn *c);
/* Closes c as CLIENT KILL, SHUTDOWN or an output limit asks: its socket is
 * shut at once (the peer sees the close now; nothing more is read or
 * sent) and it counts and lists as gone, but it is freed only once the
 * loop is between events, since another event of the same batch may
 * still name it. */
void srv_close_async(struct conn *c);
/* Builds the TLS contexts again from the tls-* directives (CONFIG SET):
 * 0, or -1 with the reason in err and the old contexts kept. */
int srv_tls_reconfigure(char *err, size_t cap);
/* Whether TLS is in use, so its directives must make contexts: a tls-port,
 * or tls-replication for a link to a primary. */
bool srv_tls_wanted(void);

/* ---- limits on a client's buffers (srv_limit.c) ---- */

/* client-output-buffer-limit's classes. */
enum { SRV_OUT_NORMAL, SRV_OUT_REPLICA, SRV_OUT_PUBSUB };
/* Reads client-output-buffer-limit and client-query-buffer-limit into srv
 * (at start and after CONFIG SET). */
void srv_limit_conf(void);
/* OUT()'s slow path, for a client whose output passed srv.out_watch:
 * closes c if its output passed its class's hard limit, or its soft limit
 * for longer than the soft seconds; returns where the reply goes: c->out,
 * or, once c is closing, a scratch buffer whose bytes are dropped. */
struct resp_buf *srv_out_over(struct conn *c);
/* The same judgment of c's output (plus extra bytes it holds elsewhere: a
 * replica's stream kept during its sync) where bytes are appended without
 * OUT(): true when c is (now) closing. */
bool srv_out_check(struct conn *c, size_t extra);
/* After a read: closes c (true) if its unparsed input passed
 * client-query-buffer-limit. */
bool srv_in_check(struct conn *c);

/* SCAN cursors: remembers where a scan stopped; 0 means "from the start". */
struct srv_cursor {
    uint64_t id;
    unsigned db;
    char *key;
    size_t klen;
};
uint64_t srv_cursor_save(const char *key, size_t klen);
/* The position for cursor id: 0 and *key NULL for a fresh start, or -1 for
 * a cursor we do not know (expired from the table: starts over). */
int srv_cursor_find(uint64_t id, const char **key, size_t *klen);

#endif
