/*
 * shmkv.h — libshmkv, the client library of shmkv.
 *
 * A handle talks to one local shmkvd over its Unix socket and, when the
 * daemon offers it, reads hot records straight from the daemon's
 * shared-memory cache: a hit costs no system call and no round trip.
 *
 *   shmkv *h;
 *   if (shmkv_open(&h, "/run/shmkv/shmkv.sock", NULL) != SHMKV_OK) {
 *       fprintf(stderr, "shmkv: %s\n", shmkv_errmsg());
 *       exit(1);
 *   }
 *   char *v; size_t n;
 *   int rc = shmkv_get(h, "user:42", 7, &v, &n);   // from shm when cached
 *   if (rc == SHMKV_OK) { fwrite(v, 1, n, stdout); free(v); }
 *   const char *argv[] = {"SET", "user:42", "ada"};
 *   shmkv_reply *r;
 *   if (shmkv_command(h, &r, 3, argv, NULL) == SHMKV_OK) shmkv_reply_free(r);
 *   shmkv_close(h);
 *
 * Reads served from the cache when they hit: GET MGET EXISTS TYPE TTL PTTL
 * STRLEN, HGET HMGET HEXISTS HLEN, SISMEMBER SMISMEMBER SCARD, ZSCORE
 * ZMSCORE ZCARD, LLEN LINDEX — through shmkv_command() (and shmkv_get());
 * and of a collection small enough to be stored inline, the whole of it:
 * HGETALL HKEYS HVALS, SMEMBERS, LRANGE, ZRANGE by index (with or without
 * WITHSCORES).
 * Everything else, and every miss, goes to the daemon, which fills the
 * cache so the next read hits. Replies are exactly what the daemon would
 * have sent (RESP2, as Redis answers a client that did not say HELLO 3).
 *
 * Consistency: a write is acknowledged only once every reader can see it,
 * so after shmkv_command() returns a write's reply, every handle in every
 * process reads the new value. A read served from the cache sees each
 * command all or nothing, MGET's keys and a hash's field with its key at
 * one moment between commands.
 *
 * Ownership: the caller owns every reply and value the library returns
 * (free values with free(), replies with shmkv_reply_free()); the library
 * never returns a pointer into shared memory.
 *
 * Threads: a handle may be shared by threads. Cache hits take no lock; the
 * socket is used by one thread at a time (a mutex); so threads that mostly
 * miss or write do better with a handle each.
 *
 * Errors: functions return SHMKV_OK (0), SHMKV_NIL (1, "no such value",
 * where it applies) or a negative SHMKV_E* code; shmkv_errmsg() then says
 * what happened, for the calling thread. After SHMKV_EIO the next call
 * reconnects (a command that failed with EIO may or may not have run); a
 * cacheable read is sent once more on a new connection by itself. A
 * closed socket never raises SIGPIPE in the caller.
 *
 * The daemon restarting: a segment whose daemon stopped renewing its lease
 * (a few hundred ms) is not read; the next call finds the socket closed,
 * reconnects and maps the new daemon's segment. An old segment stays mapped
 * until shmkv_close() (another thread may still be reading it).
 *
 * Security: the segment is handed over the socket (SCM_RIGHTS), after AUTH
 * when the daemon has requirepass, and is mapped read-only. A segment with
 * another ABI version or a corrupt header is refused (shmkv_cache_error()
 * says why) and the handle works through the socket alone.
 */
#ifndef SHMKV_H
#define SHMKV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library exports only these functions. */
#define SHMKV_API __attribute__((visibility("default")))

#define SHMKV_VERSION_MAJOR 0
#define SHMKV_VERSION_MINOR 1

enum {
    SHMKV_OK = 0,
    SHMKV_NIL = 1,     /* no such key or value */
    SHMKV_EINVAL = -1, /* a bad argument */
    SHMKV_ENOMEM = -2,
    SHMKV_EIO = -3,      /* the connection failed; the next call reconnects */
    SHMKV_EPROTO = -4,   /* the daemon sent something unexpected */
    SHMKV_EREPLY = -5,   /* the daemon replied an error (shmkv_errmsg() has it) */
    SHMKV_ECONNECT = -6, /* cannot connect or authenticate */
};

typedef struct shmkv shmkv;

enum shmkv_reply_type {
    SHMKV_REPLY_STRING = 1,
    SHMKV_REPLY_ARRAY = 2,
    SHMKV_REPLY_INTEGER = 3,
    SHMKV_REPLY_NIL = 4,
    SHMKV_REPLY_STATUS = 5,
    SHMKV_REPLY_ERROR = 6,
};

/* A reply, as RESP2 has them. str is NUL-terminated (len excludes it). */
typedef struct shmkv_reply {
    int type;          /* enum shmkv_reply_type */
    long long integer; /* INTEGER */
    size_t len;        /* STRING, STATUS, ERROR */
    char *str;
    size_t elements; /* ARRAY */
    struct shmkv_reply **element;
} shmkv_reply;

struct shmkv_stats {
    uint64_t hits;     /* commands answered from shared memory */
    uint64_t misses;   /* cacheable reads the daemon answered */
    uint64_t retries;  /* cache reads tried again: the daemon was writing */
    uint64_t commands; /* commands sent to the daemon, misses included */
    uint64_t attaches; /* segments mapped (1 + re-attaches after restarts) */
};

struct shmkv_opts {
    const char *password; /* AUTH before anything (NULL: none) */
    unsigned db;          /* SELECT this database */
    int no_cache;         /* 1: never map the cache (the socket only) */
    int timeout_ms;       /* socket send/receive timeout (0: none) */
    const char *user;     /* the ACL user AUTH names, with password (NULL: default) */
};

/* Connects to the daemon at socket_path, authenticates, selects the
 * database and maps the cache. On SHMKV_OK, *h is the caller's until
 * shmkv_close(). A cache that cannot be mapped is not an error (see
 * shmkv_cache_error()). opts may be NULL. */
SHMKV_API int shmkv_open(shmkv **h, const char *socket_path, const struct shmkv_opts *opts);
/* Closes the connection and unmaps every segment. Accepts NULL. */
SHMKV_API void shmkv_close(shmkv *h);

/* GET key. SHMKV_OK with *val (malloc'd, NUL-terminated, *vlen bytes),
 * SHMKV_NIL when the key does not exist, or an error (SHMKV_EREPLY for
 * WRONGTYPE). */
SHMKV_API int shmkv_get(shmkv *h, const void *key, size_t klen, char **val, size_t *vlen);

/* Runs any command; argvlen may be NULL for NUL-terminated arguments. The
 * cacheable reads above are answered from the cache when every record they
 * need is there. On SHMKV_OK, *reply is the caller's (an error reply is a
 * reply: type SHMKV_REPLY_ERROR). SELECT changes the handle's database;
 * between MULTI and EXEC/DISCARD every command goes to the daemon. */
SHMKV_API int shmkv_command(shmkv *h, shmkv_reply **reply, int argc, const char **argv,
                            const size_t *argvlen);
SHMKV_API void shmkv_reply_free(shmkv_reply *r);

/* This handle's counters (approximate while other threads use it). */
SHMKV_API void shmkv_stats(const shmkv *h, struct shmkv_stats *st);
/* Why the cache is not used, or NULL when it is. Valid until the next call
 * on h. */
SHMKV_API const char *shmkv_cache_error(const shmkv *h);

/* The message of this thread's last error. */
SHMKV_API const char *shmkv_errmsg(void);
SHMKV_API const char *shmkv_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif
