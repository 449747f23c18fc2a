/*
 * cmd — the command table, dispatch, and the helpers handlers share.
 *
 * Layer: between srv (clients, loop) and db (storage). A handler checks its
 * arguments, calls one db_ function, and builds the reply; helpers whose
 * names end in the reply they send on failure (…OrReply in Redis) let it
 * simply return.
 */
#ifndef SHMKV_CMD_H
#define SHMKV_CMD_H

#include <string.h>
#include <strings.h>

#include "srv.h"

enum {
    CMD_WRITE = 1 << 0,
    CMD_READONLY = 1 << 1,
    CMD_ADMIN = 1 << 2,
    CMD_NOAUTH = 1 << 3,  /* allowed before AUTH */
    CMD_NOQUEUE = 1 << 4, /* runs at once inside MULTI (EXEC, DISCARD, ...) */
    CMD_FAST = 1 << 5,
    CMD_BLOCKING = 1 << 6,
    CMD_MOVABLE = 1 << 7,    /* key positions come from a numkeys argument */
    CMD_NOTOUCH = 1 << 8,    /* looks at keys without counting as a use (OBJECT IDLETIME) */
    CMD_SUBCTX = 1 << 9,     /* allowed to a RESP2 client with subscriptions */
    CMD_CONTAINER = 1 << 10, /* has subcommands (CLIENT INFO is "client|info") */
    CMD_NOMULTI = 1 << 11,   /* refused inside MULTI, which it then aborts */
    CMD_PROTECTED = 1 << 12, /* runs only as enable-debug-command allows (DEBUG) */
    /* EVAL's family: runs other commands, which count for themselves; and
     * has no mandatory keys (Redis's no_mandatory_keys) */
    CMD_SCRIPTING = 1 << 13,
};

struct cmd {
    const char *name;
    void (*fn)(struct conn *c);
    int arity; /* N: exactly N arguments with the name; -N: at least N */
    uint32_t flags;
    int first, last, step; /* key positions, as COMMAND reports them */
    const char *group;
};

/* X(name, handler, arity, flags, first, last, step, group) */
/* Short names for the table's flags column. */
#define CMD_W CMD_WRITE
#define CMD_R CMD_READONLY
#define CMD_F CMD_FAST
#define CMD_TABLE(X)                                                                               \
    /* strings */                                                                                  \
    X("get", get, 2, CMD_R | CMD_F, 1, 1, 1, "string")                                             \
    X("set", set, -3, CMD_W, 1, 1, 1, "string")                                                    \
    X("setnx", setnx, 3, CMD_W | CMD_F, 1, 1, 1, "string")                                         \
    X("setex", setex, 4, CMD_W, 1, 1, 1, "string")                                                 \
    X("psetex", psetex, 4, CMD_W, 1, 1, 1, "string")                                               \
    X("mget", mget, -2, CMD_R | CMD_F, 1, -1, 1, "string")                                         \
    X("mset", mset, -3, CMD_W, 1, -1, 2, "string")                                                 \
    X("msetnx", msetnx, -3, CMD_W, 1, -1, 2, "string")                                             \
    X("getset", getset, 3, CMD_W | CMD_F, 1, 1, 1, "string")                                       \
    X("getdel", getdel, 2, CMD_W | CMD_F, 1, 1, 1, "string")                                       \
    X("getex", getex, -2, CMD_W | CMD_F, 1, 1, 1, "string")                                        \
    X("append", append, 3, CMD_W | CMD_F, 1, 1, 1, "string")                                       \
    X("strlen", strlen, 2, CMD_R | CMD_F, 1, 1, 1, "string")                                       \
    X("incr", incr, 2, CMD_W | CMD_F, 1, 1, 1, "string")                                           \
    X("decr", decr, 2, CMD_W | CMD_F, 1, 1, 1, "string")                                           \
    X("incrby", incrby, 3, CMD_W | CMD_F, 1, 1, 1, "string")                                       \
    X("decrby", decrby, 3, CMD_W | CMD_F, 1, 1, 1, "string")                                       \
    X("incrbyfloat", incrbyfloat, 3, CMD_W | CMD_F, 1, 1, 1, "string")                             \
    X("getrange", getrange, 4, CMD_R, 1, 1, 1, "string")                                           \
    X("lcs", lcs, -3, CMD_R, 1, 2, 1, "string")                                                    \
    X("substr", getrange, 4, CMD_R, 1, 1, 1, "string")                                             \
    X("setrange", setrange, 4, CMD_W, 1, 1, 1, "string")                                           \
    /* bitmaps: bit operations on strings */                                                       \
    X("setbit", setbit, 4, CMD_W, 1, 1, 1, "bitmap")                                               \
    X("getbit", getbit, 3, CMD_R | CMD_F, 1, 1, 1, "bitmap")                                       \
    X("bitcount", bitcount, -2, CMD_R, 1, 1, 1, "bitmap")                                          \
    X("bitpos", bitpos, -3, CMD_R, 1, 1, 1, "bitmap")                                              \
    X("bitop", bitop, -4, CMD_W, 2, -1, 1, "bitmap")                                               \
    X("bitfield", bitfield, -2, CMD_W, 1, 1, 1, "bitmap")                                          \
    X("bitfield_ro", bitfield_ro, -2, CMD_R | CMD_F, 1, 1, 1, "bitmap")                            \
    /* HyperLogLog: sketches stored as strings */                                                  \
    X("pfadd", pfadd, -2, CMD_W | CMD_F, 1, 1, 1, "hyperloglog")                                   \
    X("pfcount", pfcount, -2, CMD_R, 1, -1, 1, "hyperloglog")                                      \
    X("pfmerge", pfmerge, -2, CMD_W, 1, -1, 1, "hyperloglog")                                      \
    /* geo */                                                                                      \
    X("geoadd", geoadd, -5, CMD_W, 1, 1, 1, "geo")                                                 \
    X("geodist", geodist, -4, CMD_R, 1, 1, 1, "geo")                                               \
    X("geohash", geohash, -2, CMD_R, 1, 1, 1, "geo")                                               \
    X("geopos", geopos, -2, CMD_R, 1, 1, 1, "geo")                                                 \
    X("georadius", georadius, -6, CMD_W | CMD_MOVABLE, 1, 1, 1, "geo")                             \
    X("georadius_ro", georadius_ro, -6, CMD_R, 1, 1, 1, "geo")                                     \
    X("georadiusbymember", georadiusbymember, -5, CMD_W | CMD_MOVABLE, 1, 1, 1, "geo")             \
    X("georadiusbymember_ro", georadiusbymember_ro, -5, CMD_R, 1, 1, 1, "geo")                     \
    X("geosearch", geosearch, -7, CMD_R, 1, 1, 1, "geo")                                           \
    X("geosearchstore", geosearchstore, -8, CMD_W, 1, 2, 1, "geo")                                 \
    /* keys */                                                                                     \
    X("del", del, -2, CMD_W, 1, -1, 1, "generic")                                                  \
    X("unlink", del, -2, CMD_W | CMD_F, 1, -1, 1, "generic")                                       \
    X("exists", exists, -2, CMD_R | CMD_F | CMD_NOTOUCH, 1, -1, 1, "generic")                      \
    X("touch", touch, -2, CMD_R | CMD_F, 1, -1, 1, "generic")                                      \
    X("type", type, 2, CMD_R | CMD_F | CMD_NOTOUCH, 1, 1, 1, "generic")                            \
    X("expire", expire, -3, CMD_W | CMD_F, 1, 1, 1, "generic")                                     \
    X("pexpire", pexpire, -3, CMD_W | CMD_F, 1, 1, 1, "generic")                                   \
    X("expireat", expireat, -3, CMD_W | CMD_F, 1, 1, 1, "generic")                                 \
    X("pexpireat", pexpireat, -3, CMD_W | CMD_F, 1, 1, 1, "generic")                               \
    X("expiretime", expiretime, 2, CMD_R | CMD_F | CMD_NOTOUCH, 1, 1, 1, "generic")                \
    X("pexpiretime", pexpiretime, 2, CMD_R | CMD_F | CMD_NOTOUCH, 1, 1, 1, "generic")              \
    X("ttl", ttl, 2, CMD_R | CMD_F | CMD_NOTOUCH, 1, 1, 1, "generic")                              \
    X("pttl", pttl, 2, CMD_R | CMD_F | CMD_NOTOUCH, 1, 1, 1, "generic")                            \
    X("persist", persist, 2, CMD_W | CMD_F, 1, 1, 1, "generic")                                    \
    X("rename", rename, 3, CMD_W, 1, 2, 1, "generic")                                              \
    X("renamenx", renamenx, 3, CMD_W | CMD_F, 1, 2, 1, "generic")                                  \
    X("copy", copy, -3, CMD_W, 1, 2, 1, "generic")                                                 \
    X("move", move, 3, CMD_W | CMD_F, 1, 1, 1, "generic")                                          \
    X("dump", dump, 2, CMD_R, 1, 1, 1, "generic")                                                  \
    X("restore", restore, -4, CMD_W | CMD_NOTOUCH, 1, 1, 1, "generic")                             \
    X("migrate", migrate, -6, CMD_W | CMD_MOVABLE, 3, 3, 1, "generic")                             \
    X("sort", sort, -2, CMD_W | CMD_MOVABLE, 1, 1, 1, "generic")                                   \
    X("sort_ro", sort_ro, -2, CMD_R | CMD_MOVABLE, 1, 1, 1, "generic")                             \
    X("keys", keys, 2, CMD_R, 0, 0, 0, "generic")                                                  \
    X("scan", scan, -2, CMD_R, 0, 0, 0, "generic")                                                 \
    X("randomkey", randomkey, 1, CMD_R, 0, 0, 0, "generic")                                        \
    X("dbsize", dbsize, 1, CMD_R | CMD_F, 0, 0, 0, "server")                                       \
    X("select", select, 2, CMD_F, 0, 0, 0, "connection")                                           \
    X("flushdb", flushdb, -1, CMD_W, 0, 0, 0, "server")                                            \
    X("flushall", flushall, -1, CMD_W, 0, 0, 0, "server")                                          \
    X("object", object, -2, CMD_CONTAINER, 0, 0, 0, "generic")                                     \
    /* hashes */                                                                                   \
    X("hset", hset, -4, CMD_W | CMD_F, 1, 1, 1, "hash")                                            \
    X("hmset", hmset, -4, CMD_W | CMD_F, 1, 1, 1, "hash")                                          \
    X("hsetnx", hsetnx, 4, CMD_W | CMD_F, 1, 1, 1, "hash")                                         \
    X("hget", hget, 3, CMD_R | CMD_F, 1, 1, 1, "hash")                                             \
    X("hmget", hmget, -3, CMD_R | CMD_F, 1, 1, 1, "hash")                                          \
    X("hgetall", hgetall, 2, CMD_R, 1, 1, 1, "hash")                                               \
    X("hkeys", hkeys, 2, CMD_R, 1, 1, 1, "hash")                                                   \
    X("hvals", hvals, 2, CMD_R, 1, 1, 1, "hash")                                                   \
    X("hdel", hdel, -3, CMD_W | CMD_F, 1, 1, 1, "hash")                                            \
    X("hlen", hlen, 2, CMD_R | CMD_F, 1, 1, 1, "hash")                                             \
    X("hexists", hexists, 3, CMD_R | CMD_F, 1, 1, 1, "hash")                                       \
    X("hstrlen", hstrlen, 3, CMD_R | CMD_F, 1, 1, 1, "hash")                                       \
    X("hincrby", hincrby, 4, CMD_W | CMD_F, 1, 1, 1, "hash")                                       \
    X("hincrbyfloat", hincrbyfloat, 4, CMD_W | CMD_F, 1, 1, 1, "hash")                             \
    X("hrandfield", hrandfield, -2, CMD_R, 1, 1, 1, "hash")                                        \
    X("hscan", hscan, -3, CMD_R, 1, 1, 1, "hash")                                                  \
    /* sets */                                                                                     \
    X("sadd", sadd, -3, CMD_W | CMD_F, 1, 1, 1, "set")                                             \
    X("srem", srem, -3, CMD_W | CMD_F, 1, 1, 1, "set")                                             \
    X("smembers", smembers, 2, CMD_R, 1, 1, 1, "set")                                              \
    X("sismember", sismember, 3, CMD_R | CMD_F, 1, 1, 1, "set")                                    \
    X("smismember", smismember, -3, CMD_R | CMD_F, 1, 1, 1, "set")                                 \
    X("scard", scard, 2, CMD_R | CMD_F, 1, 1, 1, "set")                                            \
    X("spop", spop, -2, CMD_W | CMD_F, 1, 1, 1, "set")                                             \
    X("srandmember", srandmember, -2, CMD_R, 1, 1, 1, "set")                                       \
    X("smove", smove, 4, CMD_W | CMD_F, 1, 2, 1, "set")                                            \
    X("sinter", sinter, -2, CMD_R, 1, -1, 1, "set")                                                \
    X("sintercard", sintercard, -3, CMD_R | CMD_MOVABLE, 0, 0, 0, "set")                           \
    X("sinterstore", sinterstore, -3, CMD_W, 1, -1, 1, "set")                                      \
    X("sunion", sunion, -2, CMD_R, 1, -1, 1, "set")                                                \
    X("sunionstore", sunionstore, -3, CMD_W, 1, -1, 1, "set")                                      \
    X("sdiff", sdiff, -2, CMD_R, 1, -1, 1, "set")                                                  \
    X("sdiffstore", sdiffstore, -3, CMD_W, 1, -1, 1, "set")                                        \
    X("sscan", sscan, -3, CMD_R, 1, 1, 1, "set")                                                   \
    /* sorted sets */                                                                              \
    X("zadd", zadd, -4, CMD_W | CMD_F, 1, 1, 1, "sorted-set")                                      \
    X("zincrby", zincrby, 4, CMD_W | CMD_F, 1, 1, 1, "sorted-set")                                 \
    X("zrem", zrem, -3, CMD_W | CMD_F, 1, 1, 1, "sorted-set")                                      \
    X("zscore", zscore, 3, CMD_R | CMD_F, 1, 1, 1, "sorted-set")                                   \
    X("zmscore", zmscore, -3, CMD_R | CMD_F, 1, 1, 1, "sorted-set")                                \
    X("zcard", zcard, 2, CMD_R | CMD_F, 1, 1, 1, "sorted-set")                                     \
    X("zcount", zcount, 4, CMD_R | CMD_F, 1, 1, 1, "sorted-set")                                   \
    X("zlexcount", zlexcount, 4, CMD_R | CMD_F, 1, 1, 1, "sorted-set")                             \
    X("zrange", zrange, -4, CMD_R, 1, 1, 1, "sorted-set")                                          \
    X("zrangestore", zrangestore, -5, CMD_W, 1, 2, 1, "sorted-set")                                \
    X("zrangebyscore", zrangebyscore, -4, CMD_R, 1, 1, 1, "sorted-set")                            \
    X("zrevrangebyscore", zrevrangebyscore, -4, CMD_R, 1, 1, 1, "sorted-set")                      \
    X("zrangebylex", zrangebylex, -4, CMD_R, 1, 1, 1, "sorted-set")                                \
    X("zrevrangebylex", zrevrangebylex, -4, CMD_R, 1, 1, 1, "sorted-set")                          \
    X("zrevrange", zrevrange, -4, CMD_R, 1, 1, 1, "sorted-set")                                    \
    X("zrank", zrank, 3, CMD_R | CMD_F, 1, 1, 1, "sorted-set")                                     \
    X("zrevrank", zrevrank, 3, CMD_R | CMD_F, 1, 1, 1, "sorted-set")                               \
    X("zremrangebyrank", zremrangebyrank, 4, CMD_W, 1, 1, 1, "sorted-set")                         \
    X("zremrangebyscore", zremrangebyscore, 4, CMD_W, 1, 1, 1, "sorted-set")                       \
    X("zremrangebylex", zremrangebylex, 4, CMD_W, 1, 1, 1, "sorted-set")                           \
    X("zpopmin", zpopmin, -2, CMD_W | CMD_F, 1, 1, 1, "sorted-set")                                \
    X("zpopmax", zpopmax, -2, CMD_W | CMD_F, 1, 1, 1, "sorted-set")                                \
    X("zrandmember", zrandmember, -2, CMD_R, 1, 1, 1, "sorted-set")                                \
    X("zunionstore", zunionstore, -4, CMD_W | CMD_MOVABLE, 1, 1, 1, "sorted-set")                  \
    X("zinterstore", zinterstore, -4, CMD_W | CMD_MOVABLE, 1, 1, 1, "sorted-set")                  \
    X("zdiffstore", zdiffstore, -4, CMD_W | CMD_MOVABLE, 1, 1, 1, "sorted-set")                    \
    X("zunion", zunion, -3, CMD_R | CMD_MOVABLE, 0, 0, 0, "sorted-set")                            \
    X("zinter", zinter, -3, CMD_R | CMD_MOVABLE, 0, 0, 0, "sorted-set")                            \
    X("zdiff", zdiff, -3, CMD_R | CMD_MOVABLE, 0, 0, 0, "sorted-set")                              \
    X("zintercard", zintercard, -3, CMD_R | CMD_MOVABLE, 0, 0, 0, "sorted-set")                    \
    X("zmpop", zmpop, -4, CMD_W | CMD_MOVABLE, 0, 0, 0, "sorted-set")                              \
    X("bzmpop", bzmpop, -5, CMD_W | CMD_BLOCKING | CMD_MOVABLE, 0, 0, 0, "sorted-set")             \
    X("bzpopmin", bzpopmin, -3, CMD_W | CMD_F | CMD_BLOCKING, 1, -2, 1, "sorted-set")              \
    X("bzpopmax", bzpopmax, -3, CMD_W | CMD_F | CMD_BLOCKING, 1, -2, 1, "sorted-set")              \
    X("zscan", zscan, -3, CMD_R, 1, 1, 1, "sorted-set")                                            \
    /* lists */                                                                                    \
    X("lpush", lpush, -3, CMD_W | CMD_F, 1, 1, 1, "list")                                          \
    X("rpush", rpush, -3, CMD_W | CMD_F, 1, 1, 1, "list")                                          \
    X("lpushx", lpushx, -3, CMD_W | CMD_F, 1, 1, 1, "list")                                        \
    X("rpushx", rpushx, -3, CMD_W | CMD_F, 1, 1, 1, "list")                                        \
    X("lpop", lpop, -2, CMD_W | CMD_F, 1, 1, 1, "list")                                            \
    X("rpop", rpop, -2, CMD_W | CMD_F, 1, 1, 1, "list")                                            \
    X("llen", llen, 2, CMD_R | CMD_F, 1, 1, 1, "list")                                             \
    X("lrange", lrange, 4, CMD_R, 1, 1, 1, "list")                                                 \
    X("lindex", lindex, 3, CMD_R, 1, 1, 1, "list")                                                 \
    X("lset", lset, 4, CMD_W, 1, 1, 1, "list")                                                     \
    X("lrem", lrem, 4, CMD_W, 1, 1, 1, "list")                                                     \
    X("linsert", linsert, 5, CMD_W, 1, 1, 1, "list")                                               \
    X("ltrim", ltrim, 4, CMD_W, 1, 1, 1, "list")                                                   \
    X("lpos", lpos, -3, CMD_R, 1, 1, 1, "list")                                                    \
    X("rpoplpush", rpoplpush, 3, CMD_W, 1, 2, 1, "list")                                           \
    X("lmove", lmove, 5, CMD_W, 1, 2, 1, "list")                                                   \
    X("blpop", blpop, -3, CMD_W | CMD_BLOCKING, 1, -2, 1, "list")                                  \
    X("brpop", brpop, -3, CMD_W | CMD_BLOCKING, 1, -2, 1, "list")                                  \
    X("blmove", blmove, 6, CMD_W | CMD_BLOCKING, 1, 2, 1, "list")                                  \
    X("brpoplpush", brpoplpush, 4, CMD_W | CMD_BLOCKING, 1, 2, 1, "list")                          \
    X("lmpop", lmpop, -4, CMD_W | CMD_MOVABLE, 0, 0, 0, "list")                                    \
    X("blmpop", blmpop, -5, CMD_W | CMD_BLOCKING | CMD_MOVABLE, 0, 0, 0, "list")                   \
    /* transactions */                                                                             \
    X("multi", multi, 1, CMD_NOQUEUE | CMD_F, 0, 0, 0, "transactions")                             \
    X("exec", exec, 1, CMD_NOQUEUE, 0, 0, 0, "transactions")                                       \
    X("discard", discard, 1, CMD_NOQUEUE | CMD_F, 0, 0, 0, "transactions")                         \
    X("watch", watch, -2, CMD_NOQUEUE | CMD_F | CMD_NOTOUCH, 1, -1, 1, "transactions")             \
    X("unwatch", unwatch, 1, CMD_F, 0, 0, 0, "transactions")                                       \
    /* pub/sub */                                                                                  \
    X("subscribe", subscribe, -2, CMD_SUBCTX, 0, 0, 0, "pubsub")                                   \
    X("unsubscribe", unsubscribe, -1, CMD_SUBCTX, 0, 0, 0, "pubsub")                               \
    X("psubscribe", psubscribe, -2, CMD_SUBCTX, 0, 0, 0, "pubsub")                                 \
    X("punsubscribe", punsubscribe, -1, CMD_SUBCTX, 0, 0, 0, "pubsub")                             \
    X("ssubscribe", ssubscribe, -2, CMD_SUBCTX | CMD_NOTOUCH, 1, -1, 1, "pubsub")                  \
    X("sunsubscribe", sunsubscribe, -1, CMD_SUBCTX | CMD_NOTOUCH, 1, -1, 1, "pubsub")              \
    X("publish", publish, 3, CMD_F, 0, 0, 0, "pubsub")                                             \
    X("spublish", spublish, 3, CMD_F | CMD_NOTOUCH, 1, 1, 1, "pubsub")                             \
    X("pubsub", pubsub, -2, CMD_CONTAINER, 0, 0, 0, "pubsub")                                      \
    /* connection and server */                                                                    \
    X("ping", ping, -1, CMD_F | CMD_SUBCTX, 0, 0, 0, "connection")                                 \
    X("echo", echo, 2, CMD_F, 0, 0, 0, "connection")                                               \
    X("auth", auth, -2, CMD_NOAUTH | CMD_F, 0, 0, 0, "connection")                                 \
    X("hello", hello, -1, CMD_NOAUTH | CMD_F, 0, 0, 0, "connection")                               \
    X("quit", quit, -1, CMD_NOAUTH | CMD_NOQUEUE | CMD_F | CMD_SUBCTX, 0, 0, 0, "connection")      \
    X("reset", reset, 1, CMD_NOAUTH | CMD_NOQUEUE | CMD_F | CMD_SUBCTX, 0, 0, 0, "connection")     \
    X("client", client, -2, CMD_CONTAINER, 0, 0, 0, "connection")                                  \
    X("info", info, -1, 0, 0, 0, 0, "server")                                                      \
    X("config", config, -2, CMD_CONTAINER, 0, 0, 0, "server")                                      \
    X("command", command, -1, CMD_CONTAINER, 0, 0, 0, "server")                                    \
    X("time", time, 1, CMD_F, 0, 0, 0, "server")                                                   \
    X("slowlog", slowlog, -2, CMD_CONTAINER, 0, 0, 0, "server")                                    \
    X("lastsave", lastsave, 1, CMD_F, 0, 0, 0, "server")                                           \
    X("bgsave", bgsave, -1, CMD_ADMIN, 0, 0, 0, "server")                                          \
    X("save", save, 1, CMD_ADMIN | CMD_NOMULTI, 0, 0, 0, "server")                                 \
    X("role", role, 1, CMD_F, 0, 0, 0, "server")                                                   \
    X("replconf", replconf, -1, CMD_ADMIN, 0, 0, 0, "server")                                      \
    X("sync", sync, 1, CMD_ADMIN | CMD_NOMULTI, 0, 0, 0, "server")                                 \
    X("psync", psync, -3, CMD_ADMIN | CMD_NOMULTI, 0, 0, 0, "server")                              \
    X("replicaof", replicaof, 3, CMD_ADMIN, 0, 0, 0, "server")                                     \
    X("slaveof", slaveof, 3, CMD_ADMIN, 0, 0, 0, "server")                                         \
    X("failover", failover, -1, CMD_ADMIN, 0, 0, 0, "server")                                      \
    X("wait", wait, 3, 0, 0, 0, 0, "generic")                                                      \
    X("monitor", monitor, 1, CMD_ADMIN, 0, 0, 0, "server")                                         \
    X("memory", memory, -2, CMD_CONTAINER, 0, 0, 0, "server")                                      \
    X("swapdb", swapdb, 3, CMD_W | CMD_F, 0, 0, 0, "server")                                       \
    X("eval", eval, -3, CMD_MOVABLE | CMD_SCRIPTING, 0, 0, 0, "scripting")                         \
    X("evalsha", evalsha, -3, CMD_MOVABLE | CMD_SCRIPTING, 0, 0, 0, "scripting")                   \
    X("eval_ro", eval_ro, -3, CMD_R | CMD_MOVABLE | CMD_SCRIPTING, 0, 0, 0, "scripting")           \
    X("evalsha_ro", evalsha_ro, -3, CMD_R | CMD_MOVABLE | CMD_SCRIPTING, 0, 0, 0, "scripting")     \
    X("script", script, -2, CMD_CONTAINER, 0, 0, 0, "scripting")                                   \
    X("fcall", fcall, -3, CMD_MOVABLE | CMD_SCRIPTING, 0, 0, 0, "scripting")                       \
    X("fcall_ro", fcall_ro, -3, CMD_R | CMD_MOVABLE | CMD_SCRIPTING, 0, 0, 0, "scripting")         \
    X("function", function, -2, CMD_CONTAINER, 0, 0, 0, "scripting")                               \
    X("module", module, -2, CMD_CONTAINER, 0, 0, 0, "server")                                      \
    X("cluster", cluster, -2, CMD_CONTAINER, 0, 0, 0, "cluster")                                   \
    X("readonly", readonly, 1, CMD_F, 0, 0, 0, "cluster")                                          \
    X("readwrite", readwrite, 1, CMD_F, 0, 0, 0, "cluster")                                        \
    X("asking", asking, 1, CMD_F, 0, 0, 0, "cluster")                                              \
    X("lolwut", lolwut, -1, CMD_R | CMD_F, 0, 0, 0, "server")                                      \
    X("latency", latency, -2, CMD_CONTAINER, 0, 0, 0, "server")                                    \
    X("acl", acl, -2, CMD_CONTAINER, 0, 0, 0, "server")                                            \
    X("shmkv.attach", shmkv_attach, 1, 0, 0, 0, 0, "server")                                       \
    X("shmkv.compact", shmkv_compact, 1, CMD_ADMIN, 0, 0, 0, "server")                             \
    X("shmkv.checkpoint", shmkv_checkpoint, 1, CMD_ADMIN | CMD_NOMULTI, 0, 0, 0, "server")         \
    X("shmkv.clients", shmkv_clients, 1, CMD_ADMIN, 0, 0, 0, "server")                             \
    X("debug", debug, -2, CMD_ADMIN | CMD_PROTECTED, 0, 0, 0, "server")                            \
    X("shutdown", shutdown, -1, CMD_ADMIN | CMD_NOMULTI, 0, 0, 0, "server")

#define CMD_PROTO(name, fn, ...) void cmd_##fn(struct conn *c);
CMD_TABLE(CMD_PROTO)
#undef CMD_PROTO

/* ---- CLIENT TRACKING (cmd_tracking.c) ---- */
/* Around a command: invalidations for the client running it wait until
 * its reply is written (nested calls, EXEC's, count as one). */
void cmd_tracking_begin(struct conn *c);
void cmd_tracking_end(struct conn *c);
/* After a read-only command: remembers its keys for a tracking client. */
void cmd_tracking_read(struct conn *c, const struct cmd *cmd);
/* A key's records changed (any database), or every key (a flush). */
void cmd_tracking_key_modified(const char *k, size_t kn);
void cmd_tracking_flush(void);
/* Whether anything is tracked: the commit hook skips the work when not. */
bool cmd_tracking_active(void);
/* Sends the BCAST clients what changed since the last call: once per loop
 * iteration. */
void cmd_tracking_broadcast(void);
/* Once per cron tick: keeps the table within tracking-table-max-keys (0:
 * no limit) by invalidating keys beyond it. */
void cmd_tracking_cron(size_t max_keys);
/* A client goes: its tracking state with it. */
void cmd_tracking_release(struct conn *c);
/* INFO's figures. */
void cmd_tracking_info(size_t *clients, size_t *keys, size_t *items, size_t *prefixes);
void cmd_client_tracking(struct conn *c);
void cmd_client_caching(struct conn *c);
void cmd_client_getredir(struct conn *c);
void cmd_client_trackinginfo(struct conn *c);
/* The argument positions of cmd's keys in argv[0..argc), argc within its
 * arity (a container's: those of the subcommand argv[1] names), found as
 * COMMAND GETKEYS finds them; pos holds argc * CMD_KEYSPECS_MAX. Returns
 * how many went to pos: 0 when the arguments name none. */
int cmd_getkeys(const struct cmd *k, const struct db_str *argv, size_t argc, size_t *pos);

struct cmd_keyref;
/* The same with each key's CMD_KEY_* flags: out holds argc *
 * CMD_KEYSPECS_MAX. */
int cmd_getkeyrefs(const struct cmd *k, const struct db_str *argv, size_t argc,
                   struct cmd_keyref *out);
/* k's ACL categories as COMMAND INFO gives them, space-separated. */
void cmd_cats(const struct cmd *k, char *out, size_t cap);

/* ---- ACL (cmd_acl.c) ---- */
struct acl_user;
/* Whether user u may run cmd with argv[0..argc) (acl_check): ACL_OK, or
 * why not, logged (ctx: "toplevel", "multi", "lua") with the command's
 * full name in name. */
int cmd_acl_check(struct conn *c, const struct cmd *cmd, const struct db_str *argv, size_t argc,
                  const struct acl_user *u, const char *ctx, char *name, size_t cap);
/* Whether u may run cmd with argv[0..argc), logging nothing. */
bool cmd_acl_allowed(const struct cmd *cmd, const struct db_str *argv, size_t argc,
                     const struct acl_user *u);
/* After a change to u's rules: closes its connections subscribed to a
 * channel or pattern the rules no longer allow, as Redis does. */
void cmd_acl_channels_changed(const struct acl_user *u);
/* Whether every subscription of c passes ok (pattern: a PSUBSCRIBE
 * pattern). */
bool cmd_pubsub_all(const struct conn *c,
                    bool (*ok)(const char *p, size_t n, bool pattern, void *arg), void *arg);
/* Adds a denial to ACL LOG: reason (ACL_DENIED_*), context, object and
 * user name, with c's CLIENT LIST line. */
void cmd_acl_log(struct conn *c, int reason, const char *ctx, const char *obj, size_t on,
                 const char *user, size_t un);
/* Empties ACL LOG (at exit). */
void cmd_acl_reset(void);
/* Closes every connection of user u (ACL DELUSER), self after its reply;
 * they run as no one meanwhile. */
void cmd_client_kill_user(const struct acl_user *u, struct conn *self);
/* c's CLIENT LIST line, without the newline. */
int cmd_client_line(const struct conn *c, char *buf, size_t cap);

/* ---- key specs (cmd_keyspecs.c) ---- */

/* How a command uses a key, as Redis 7.0 flags its key specs; bit i is the
 * i-th of the names COMMAND INFO gives them, in Redis's order. */
enum {
    CMD_KEY_RO = 1 << 0,             /* read */
    CMD_KEY_RW = 1 << 1,             /* read and written */
    CMD_KEY_OW = 1 << 2,             /* overwritten: the old value is not read */
    CMD_KEY_RM = 1 << 3,             /* removed */
    CMD_KEY_ACCESS = 1 << 4,         /* the value, or part of it, is returned or copied */
    CMD_KEY_UPDATE = 1 << 5,         /* the value changes */
    CMD_KEY_INSERT = 1 << 6,         /* data is added */
    CMD_KEY_DELETE = 1 << 7,         /* data is removed */
    CMD_KEY_NOT_KEY = 1 << 8,        /* not a key (a shard channel) */
    CMD_KEY_INCOMPLETE = 1 << 9,     /* the spec may miss keys */
    CMD_KEY_VARIABLE_FLAGS = 1 << 10 /* the flags depend on the arguments */
};
/* The most specs a command has (SORT and GEORADIUS have three). */
#define CMD_KEYSPECS_MAX 3
/* A command's or subcommand's key specs. */
struct cmd_keyspecs;
/* A key argument of a command line: its position and CMD_KEY_* flags. */
struct cmd_keyref {
    size_t pos;
    uint32_t flags;
};
/* The specs of a command or subcommand ("object|encoding"), any case, or
 * of table entry k; NULL for one that has no keys. Static: never freed. */
const struct cmd_keyspecs *cmd_keyspecs_find(const char *name, size_t n);
const struct cmd_keyspecs *cmd_keyspecs_of(const struct cmd *k);
/* Whether the specs name keys (shard channels are not), so that COMMAND
 * GETKEYS does not answer "The command has no key arguments". */
bool cmd_keyspecs_has_keys(const struct cmd_keyspecs *ks);
/* The keys of the command line argv[0..argc), argc within the command's
 * arity, as Redis 7.0 finds them (getKeysFromCommandWithSpecs): by the
 * specs, or the command's own procedure where they cannot tell or their
 * flags vary. out holds argc * CMD_KEYSPECS_MAX. Returns how many went to
 * out; 0 when the arguments name none (an invalid numkeys ...). */
int cmd_keyspecs_keys(const struct cmd_keyspecs *ks, const struct db_str *argv, size_t argc,
                      struct cmd_keyref *out);
/* COMMAND INFO's key-specs field (empty for NULL), in Redis's layout. */
void cmd_keyspecs_reply(struct conn *c, const struct cmd_keyspecs *ks);
/* CMD_KEY_* flags by name, as a set (an array in RESP2). */
void cmd_keyflags_reply(struct conn *c, uint32_t flags);

/* INFO latencystats: each command's configured percentiles. */
void cmd_info_latencystats(struct resp_buf *b);
/* LATENCY HISTOGRAM [name ...]: the histograms of those commands (or of
 * all that were called). */
void cmd_latency_histogram(struct conn *c, const struct db_str *names, size_t n);

/* The key GEORADIUS[BYMEMBER] stores into (its last STORE or STOREDIST
 * option), or 0: GEORADIUS's movable key. */
size_t cmd_geo_store_key(const struct db_str *argv, size_t argc);
/* The position of the key SORT stores into (its last STORE option, read as
 * SORT reads its options), or 0: SORT's movable key. SORT_RO has none. */
size_t cmd_sort_store_key(const struct db_str *argv, size_t argc);

/* Looks a command up by name, case-insensitively. NULL if unknown. */
const struct cmd *cmd_lookup(const char *name, size_t n);
size_t cmd_count(void);
const struct cmd *cmd_at(size_t i);

/* A container's subcommand ("client|list"), as COMMAND INFO describes it. */
struct cmd_sub {
    const char *name;
    int arity;      /* the container's name counted */
    uint32_t flags; /* CMD_ADMIN, CMD_READONLY */
    int first, last, step;
    const char *cats; /* ACL categories, in Redis's order, space-separated */
};
size_t cmd_sub_count(void);
const struct cmd_sub *cmd_sub_at(size_t i);
/* By full name ("config|get"), case-insensitively; NULL if shmkvd has none. */
const struct cmd_sub *cmd_sub_lookup(const char *name, size_t n);
/* The subcommand argv[1] of container k names, or NULL (k no container,
 * no argv[1], or a subcommand shmkvd lacks). */
const struct cmd_sub *cmd_sub_of(const struct cmd *k, const struct db_str *argv, size_t argc);

/* Runs c->argv: AUTH gate, lookup, arity, MULTI queueing, execution, stats. */
void cmd_dispatch(struct conn *c);
/* Executes a resolved command now (EXEC, blocked clients). Before it runs,
 * a command's first CMD_KEYS_AHEAD keys are prefetched (db_prefetch1/2). */
void cmd_call(struct conn *c, const struct cmd *cmd);
#define CMD_KEYS_AHEAD 16

/* ---- helpers for handlers ---- */

/* The client's reply buffer. Past the smallest output-buffer limit the
 * slow path judges it (srv_out_over): a client over its limit is closed
 * and what is written for it after that is dropped, so a client that
 * stops reading cannot grow the daemon. */
static inline struct resp_buf *OUT(struct conn *c)
{
    if (__builtin_expect(resp_buf_used(&c->out) > srv.out_watch, 0))
        return srv_out_over(c);
    return &c->out;
}
/* Argument i of the handler's client c as the (pointer, length) pair that
 * the storage layer's functions and the reply writers take. */
#define CMD_ARG(i) c->argv[i].p, c->argv[i].n
/* Replies the Redis error for a db_/enc_ code. */
void cmd_reply_err(struct conn *c, int rc);
/* Argument i equals lit, case-insensitively. */
bool cmd_arg_is(const struct conn *c, size_t i, const char *lit);
/* A timeout in milliseconds, as WAIT and CLIENT PAUSE take it: *end_ms is
 * now plus it (saturating), or 0 for a timeout of 0. Replies Redis's
 * errors and returns false on a bad one. */
bool cmd_arg_timeout_ms(struct conn *c, size_t i, uint64_t *end_ms);
/* A container command's subcommands (MEMORY, LATENCY), ended by a NULL
 * name; arity counts the container's name: N exactly, -N at least. */
struct cmd_subcommand {
    const char *name;
    int arity;
};
/* The index in list of argument 1, or -1 after Redis's error for an
 * unknown subcommand or a wrong argument count. */
int cmd_subcommand(struct conn *c, const struct cmd_subcommand *list, const char *container);
/* Parse argument i; on failure reply Redis's error and return false. */
bool cmd_arg_ll(struct conn *c, size_t i, int64_t *v);
bool cmd_arg_double(struct conn *c, size_t i, double *v);
/* 0 when key argument i is absent or of type want (enum enc_type), else
 * KV_EWRONGTYPE or a storage error: the type check a command makes
 * before it reads a key member by member. *exists (if not NULL) says
 * whether the key is there. */
int cmd_key_type(struct conn *c, size_t i, int want, bool *exists);
/* The same, replying err (with its prefix) on failure. */
bool cmd_arg_double_or(struct conn *c, size_t i, double *v, const char *err);
bool cmd_arg_ld(struct conn *c, size_t i, long double *v);
/* A positive integer (COUNT of SPOP, ...): "value is out of range, must be positive". */
bool cmd_arg_count(struct conn *c, size_t i, int64_t *v);
/* The count of HRANDFIELD/SRANDMEMBER/ZRANDMEMBER (negative: repeats). */
bool cmd_rand_count(struct conn *c, size_t i, int64_t *count);
/* "numkeys key [key ...]" with numkeys at argument `at`. */
bool cmd_numkeys(struct conn *c, size_t at, int64_t *numkeys);
/* Parses a blocking command's timeout (seconds, a float) into an absolute
 * deadline in ms, 0 for none. Replies Redis's error on failure. */
bool cmd_timeout_arg(struct conn *c, size_t i, uint64_t *deadline);
/* Whether a blocking command that found nothing parks its client: not
 * inside EXEC (it answers nil there), and not when already parked. */
bool cmd_may_block(const struct conn *c);
/* A type's pop for the multi-key and blocking pops: from the first
 * non-empty key of arguments [first, last], it replies [key, popped] (many:
 * as [LZ]MPOP, else as BLPOP/BZPOPMIN) or an error, and returns true; or it
 * replies nothing and returns false. end picks the side: 1 is the left of
 * a list, the highest scores of a sorted set. */
typedef bool (*cmd_pop_fn)(struct conn *c, size_t first, size_t last, int end, uint64_t count,
                           bool many);
/* The running command's form in the replication stream, when it changes
 * data and its own arguments would not do the same on a replica (SPOP's
 * random members, INCRBYFLOAT's rounding, a blocking pop's key): copied,
 * used once, by the cmd_call running it. */
void cmd_propagate_as(const struct db_str *argv, size_t argc);
/* Active expiry's commits (srv.c): while on, each key they delete goes
 * to replicas as a DEL. */
void cmd_reaping(bool on);
/* BGSAVE's job (cmd_admin.c): the cron's look at it (the file renamed
 * into place once whole), its state for INFO, and its end at shutdown. */
void cmd_bgsave_cron(void);
void cmd_bgsave_state(bool *running, bool *failed, int64_t *seconds);
void cmd_bgsave_stop(void);
/* cmd_call's part in the stream (cmd_repl.c): track notes the keys the
 * outermost call finds expired; begin comes before a command runs;
 * after, once it ran, queues those keys' DELs, then the command itself
 * when it changed data; committed, from the commit hook, active
 * expiry's deletes. */
void cmd_repl_track(bool on);
void cmd_repl_begin(void);
void cmd_repl_after(const struct conn *c, const struct cmd *cmd, bool changed);
void cmd_repl_committed(const struct stor_batch *b);
/* BLPOP-shaped: "key [key ...] timeout", one element from side end. */
void cmd_bpop(struct conn *c, cmd_pop_fn pop, int end);
/* LMPOP-shaped: "[timeout] numkeys key [key ...] END [COUNT count]", END
 * one of end1 (pop's end 1) and end0; the timeout only when blocking. */
void cmd_mpop(struct conn *c, cmd_pop_fn pop, bool blocking, const char *end1, const char *end0);
void cmd_reply_vec(struct conn *c, const struct db_vec *v); /* array of bulks/nils */
/* The common reply tails: rc < 0 is an error reply, else the value. */
void cmd_reply_int(struct conn *c, int rc, int64_t v);
void cmd_reply_ok(struct conn *c, int rc);
/* KV_ENOTFOUND → nil; other rc < 0 → error; else the bulk v, then free(v). */
void cmd_reply_bulk(struct conn *c, int rc, char *v, size_t vn);
void cmd_reply_syntax(struct conn *c); /* ERR syntax error */
/* A HELP reply: the lines as an array of simple strings. */
void cmd_reply_lines(struct conn *c, const char *const *lines, size_t n);

/* The daemon's memory, as INFO memory and MEMORY STATS give it (bytes):
 * jemalloc's allocated, active and resident, the process's resident set,
 * the peak and start-up allocations, client buffers, overhead (start-up
 * plus clients), the rest ("dataset"), and the write-back overlay. */
struct cmd_mem {
    size_t allocated, active, resident, rss, peak, startup, clients, overhead, dataset;
    uint64_t overlay;
};
void cmd_mem_read(struct cmd_mem *m);
/* HSCAN/SSCAN/ZSCAN over a collection of type (enum enc_type). */
void cmd_cscan_generic(struct conn *c, int type);
/* Parks c on its blocking command until deadline_ms (0: forever). */
void cmd_block(struct conn *c, uint64_t deadline_ms);
void cmd_unblock(struct conn *c);
/* Answers a parked client with error (text without '-'), or as its
 * timeout would when error is NULL, and unparks it. */
void cmd_unblock_answer(struct conn *c, const char *error);
/* Marks watched keys dirty and wakes blocked clients for a committed set. */
void cmd_on_commit(void *arg, const struct stor_batch *b, int flags);
/* COMMAND DOCS [name ...] (cmd_docs.c). */
void cmd_command_docs(struct conn *c);
/* Answers the parked clients whose timeout has come (nil), and works out
 * the next deadline. The loop calls it by that deadline and on every cron. */
void cmd_blocked_cron(uint64_t now_ms);
/* No later than the earliest deadline of a parked client; 0 for none. */
uint64_t cmd_blocked_deadline(void);
void cmd_serve_ready(void);
/* Why a script may not run cmd now (redis.call, after its own checks):
 * over maxmemory (if oom), a command that may grow what is stored; a
 * write while writes cannot be made durable. NULL when it may; else
 * Redis's error, without '-', valid until the next call. */
const char *cmd_script_refusal(const struct cmd *cmd, bool oom);
/* Redis's MISCONF error while writes cannot be made durable, else NULL;
 * valid until the next call. */
const char *cmd_misconf(void);
/* SWAPDB swapped the stored databases pa and pb under their numbers: the
 * connections, watches and blocked clients on either follow their
 * numbers; watched keys in either are touched; blocked ones try again. */
void cmd_swapped(unsigned pa, unsigned pb);
/* Releases what a client holds in cmd's structures (watch, block, multi,
 * subscriptions, monitoring). */
void cmd_conn_release(struct conn *c);

/* ---- CLIENT REPLY (cmd.c) ---- */

/* After a command of c ran, with used_before bytes of c's output there
 * before it: drops what it added while replies are off or skipped, and
 * moves CLIENT REPLY SKIP on to the next command. */
void cmd_reply_settle(struct conn *c, size_t used_before);
/* Output added to c since used_before goes if c's replies are off (a
 * parked command answered later, a message from another client). */
void cmd_reply_drop_if_off(struct conn *c, size_t used_before);

/* ---- INFO commandstats and errorstats (cmd.c) ---- */

/* Counts one error reply under its code (the text's first word): set as
 * resp_error_hook at start. */
void cmd_count_error(const char *s, size_t n);
/* Appends INFO's "cmdstat_NAME:calls=...,..." lines (commands that ran or
 * were refused; a container's documented subcommands as "name|sub"). */
void cmd_info_commandstats(struct resp_buf *b);
/* Appends INFO's "errorstat_CODE:count=N" lines. */
void cmd_info_errorstats(struct resp_buf *b);
/* CONFIG RESETSTAT: forgets both. */
void cmd_stats_reset(void);
/* A documented subcommand ("client|list", any case): cmd_docs.c. */
bool cmd_doc_exists(const char *name, size_t n);

/* ---- OBJECT and DEBUG ---- */

/* The encoding OBJECT ENCODING names for the key ki describes (k in db
 * dbi): Redis 7.0's for a key of that type and size (cmd_key.c). */
const char *cmd_object_encoding(const struct db_keyinfo *ki, unsigned dbi, const struct db_str *k);
/* Whether c may run a protected command under setting (SRV_PROTECTED_*:
 * enable-debug-command's, enable-module-command's): yes, no, or local
 * (the Unix socket, or TCP from 127.0.0.1 or ::1, as Redis 7.0 tells a
 * local client). cmd_debug.c. */
bool cmd_protected_allowed(const struct conn *c, int setting);

/* ---- MONITOR (cmd_monitor.c) ---- */

/* Clients in MONITOR mode; cmd_call() feeds them only when there are any. */
extern size_t cmd_nmonitors;
/* Sends every monitor the line for the command c just ran. */
void cmd_monitor_feed(const struct conn *c, const struct cmd *cmd);
/* c stops monitoring (no-op if it was not). */
void cmd_monitor_release(struct conn *c);

/* ---- pub/sub (cmd_pubsub.c) ---- */

/* Leaves every channel, pattern and shard channel, sending nothing. */
void cmd_pubsub_release(struct conn *c);
/* c has any subscription (RESP2 clients are then in the subscribed context). */
bool cmd_pubsub_subscribed(const struct conn *c);
/* c's subscriptions of one kind (CMD_PS_*). */
size_t cmd_pubsub_subscriptions(const struct conn *c, int kind);
/* How many channels (patterns, shard channels) have subscribers. */
size_t cmd_pubsub_names(int kind);

/* Whether MONITOR and SLOWLOG show c's argument i as "(redacted)", as
 * Redis does: AUTH's, HELLO's after AUTH, MIGRATE's after AUTH and AUTH2. */
bool cmd_arg_redacted(const struct conn *c, const struct cmd *cmd, size_t i);

/* MIGRATE's keys in argv[0..argc), as Redis finds them: its key (the
 * empty one too), or the arguments after KEYS when that comes. Returns how
 * many, from argument *first on; -1 if KEYS comes after a key that is not
 * empty. */
int cmd_migrate_keys(const struct db_str *argv, size_t argc, size_t *first);

/* ---- keyspace notifications (notify-keyspace-events) ---- */

/* Publishes event (class cls, a SRV_NOTIFY_* bit) on key of db dbi to
 * __keyspace@<db>__:<key> and __keyevent@<db>__:<event>, as enabled. */
void cmd_notify_publish(int cls, const char *event, unsigned dbi, const char *key, size_t klen);

/* Events of class cls are published (a handler may read more to tell
 * which to send only when this is true). */
static inline bool cmd_notify_on(int cls)
{
    int f = srv.conf.notify_keyspace_events;
    return (f & cls) && (f & (SRV_NOTIFY_KEYSPACE | SRV_NOTIFY_KEYEVENT));
}

/* "new" for key if this command created it (srv.db.created) and that was
 * not said yet; with always, even if it was not created (RENAME, COPY and
 * MOVE recreate their destination, and Redis says "new" for it). */
void cmd_notify_new(unsigned dbi, const char *key, size_t klen, bool always);
/* After a command: "new" for the keys it created without an event of
 * their own (BITFIELD's OVERFLOW FAIL still creates its key). */
void cmd_notify_new_rest(void);

/* Handlers call this after each change, with Redis's event name; nothing
 * is built unless the class and a destination are enabled. A key's first
 * event in a command that created it comes after its "new". */
static inline void cmd_notify(int cls, const char *event, unsigned dbi, const char *key,
                              size_t klen)
{
    if (srv.created.n)
        cmd_notify_new(dbi, key, klen, false);
    if (cmd_notify_on(cls))
        cmd_notify_publish(cls, event, dbi, key, klen);
}

/* The same for the key in c's argument i, in c's database. */
static inline void cmd_notify_arg(struct conn *c, int cls, const char *event, size_t i)
{
    cmd_notify(cls, event, c->db, c->argv[i].p, c->argv[i].n);
}

/* After a command removed elements from the key in c's argument i: "del"
 * if that left it empty (gone), as Redis deletes an emptied container. */
void cmd_notify_emptied(struct conn *c, size_t i);

/* Whether key exists in c's database, asked before a *STORE command
 * replaces it, only when "del" events are on (false otherwise). */
bool cmd_notify_had(struct conn *c, const struct db_str *key);

/* After a *STORE command wrote n elements to key: event (class cls) when
 * n > 0; "del" when the empty result deleted a key that had existed (had,
 * from cmd_notify_had). */
void cmd_notify_store(struct conn *c, int cls, const char *event, const struct db_str *key,
                      uint64_t n, bool had);

#endif
