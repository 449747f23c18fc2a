/*
 * cmd_docs — COMMAND DOCS: each command's summary, version, complexity and
 * argument tree, in the reply layout of Redis 7.0 (what redis-cli 7.2+
 * builds its hints and HELP from, and what client libraries show).
 *
 * Every command's arguments are written below as one line of a small
 * syntax, parsed on request into the tree the reply describes:
 *
 *   name@T         an argument; T is k key, i integer, d double, p pattern,
 *                  t unix-time, P a pattern naming keys (SORT's BY and GET,
 *                  which share one key spec); no @T: a string
 *   WORD           a pure token (all capitals), named after itself
 *   TOKEN=x        x (an argument or a group) comes after the token TOKEN
 *   ( a b )        a block: the arguments in order
 *   ( a | b )      a oneof: exactly one of them
 *   [ ... ]        optional: the one item inside, or the block or oneof
 *   x#name         names x (groups are named after their members otherwise,
 *                  joined by '_')
 *   #name          a pure token that is the empty string (MIGRATE's "")
 *   x...           x may repeat
 *
 * Keys are numbered in order (key_spec_index). The text is this project's;
 * versions are Redis's facts.
 */
#include "cmd.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "kv_mem.h"

struct doc {
    const char *name, *since, *complexity, *summary, *args;
    const char *deprecated_since, *replaced_by; /* NULL unless deprecated */
};

#define D(n, s, c, sum, a) {n, s, c, sum, a, NULL, NULL},
#define DEP(n, s, c, sum, a, dep, by) {n, s, c, sum, a, dep, by},
#define EXPIRE_COND "[NX|XX|GT|LT]#condition"
#define ZRANGE_LIMIT "[LIMIT=(offset@i count@i)]"
#define GEO_UNIT "M|KM|FT|MI"
#define GEO_COST "O(N + log M): N members in the cells around the area, M in the set"
#define GEO_RADIUS_OPTS                                                                            \
    "[WITHCOORD] [WITHDIST] [WITHHASH] [(COUNT=count@i [ANY])#count] [ASC|DESC]#order"
#define GEO_SEARCH_AREA                                                                            \
    "(FROMMEMBER=member|FROMLONLAT=(longitude@d latitude@d))#from "                                \
    "((BYRADIUS=radius@d (" GEO_UNIT ")#unit)#circle|"                                             \
    "(BYBOX=width@d height@d (" GEO_UNIT ")#unit)#box)#by"
#define ZSTORE_OPTS "[WEIGHTS=weight@d...] [AGGREGATE=(SUM|MIN|MAX)#aggregate]"

/* One entry a command: macro calls the formatter would run together. */
/* clang-format off */
static const struct doc DOCS[] = {
    /* strings */
    D("get", "1.0.0", "O(1)", "Read the string stored at a key", "key@k")
    D("set", "1.0.0", "O(1)", "Store a string at a key, with conditions and an expiry",
      "key@k value [NX|XX]#condition [GET] "
      "[EX=seconds@i|PX=milliseconds@i|EXAT=unix-time-seconds@t|PXAT=unix-time-milliseconds@t|"
      "KEEPTTL]#expiration")
    D("setnx", "1.0.0", "O(1)", "Store a string only where the key does not exist", "key@k value")
    D("setex", "2.0.0", "O(1)", "Store a string with a time to live in seconds",
      "key@k seconds@i value")
    D("psetex", "2.6.0", "O(1)", "Store a string with a time to live in milliseconds",
      "key@k milliseconds@i value")
    D("mget", "1.0.0", "O(N) for N keys", "Read the strings of several keys", "key@k...")
    D("mset", "1.0.1", "O(N) for N keys", "Store several strings at once", "(key@k value)...")
    D("msetnx", "1.0.1", "O(N) for N keys",
      "Store several strings at once, only if none of the keys exists", "(key@k value)...")
    DEP("getset", "1.0.0", "O(1)", "Store a string and return the one it replaced", "key@k value",
        "6.2.0", "SET with GET")
    D("getdel", "6.2.0", "O(1)", "Read a string and delete its key", "key@k")
    D("getex", "6.2.0", "O(1)", "Read a string and change or remove its expiry",
      "key@k [EX=seconds@i|PX=milliseconds@i|EXAT=unix-time-seconds@t|"
      "PXAT=unix-time-milliseconds@t|PERSIST]#expiration")
    D("append", "2.0.0", "O(1) amortized", "Append bytes to a string", "key@k value")
    D("strlen", "2.2.0", "O(1)", "The length of a string", "key@k")
    D("incr", "1.0.0", "O(1)", "Add one to an integer string", "key@k")
    D("decr", "1.0.0", "O(1)", "Subtract one from an integer string", "key@k")
    D("incrby", "1.0.0", "O(1)", "Add to an integer string", "key@k increment@i")
    D("decrby", "1.0.0", "O(1)", "Subtract from an integer string", "key@k decrement@i")
    D("incrbyfloat", "2.6.0", "O(1)", "Add to a floating-point string", "key@k increment@d")
    D("lcs", "7.0.0", "O(N*M) where N and M are the lengths of the two strings",
      "The longest common subsequence of two strings",
      "key1@k key2@k [LEN] [IDX] [MINMATCHLEN=len@i] [WITHMATCHLEN]")
    D("getrange", "2.4.0", "O(N) for N bytes returned", "Read part of a string",
      "key@k start@i end@i")
    DEP("substr", "1.0.0", "O(N) for N bytes returned", "Read part of a string",
        "key@k start@i end@i", "2.0.0", "GETRANGE")
    D("setrange", "2.2.0", "O(1), plus the copy of the value",
      "Overwrite part of a string at an offset", "key@k offset@i value")
    /* bitmaps */
    D("setbit", "2.2.0", "O(1), plus the copy of the value", "Set or clear one bit of a string",
      "key@k offset@i value@i")
    D("getbit", "2.2.0", "O(1), plus the copy of the value", "Read one bit of a string",
      "key@k offset@i")
    D("bitcount", "2.6.0", "O(N) for N bytes", "Count the set bits of a string or a range of it",
      "key@k [(start@i end@i [BYTE|BIT]#index_unit)#index]")
    D("bitpos", "2.8.7", "O(N) for N bytes", "The first set or clear bit of a string or range",
      "key@k bit@i [(start@i [(end@i [BYTE|BIT]#index_unit)#end_index])#index]")
    D("bitop", "2.6.0", "O(N) for the longest string",
      "Store the AND, OR, XOR or NOT of strings", "operation destkey@k key@k...")
    D("bitfield", "3.2.0", "O(1) per operation", "Read, write and add to integer fields of a string",
      "key@k [GET=(encoding offset@i)#encoding_offset|([OVERFLOW=(WRAP|SAT|FAIL)#wrap_sat_fail] "
      "(SET=(encoding offset@i value@i)#encoding_offset_value|"
      "INCRBY=(encoding offset@i increment@i)#encoding_offset_increment)#write_operation)#write]"
      "#operation...")
    D("bitfield_ro", "6.0.0", "O(1) per operation", "Read integer fields of a string",
      "key@k [GET=(encoding offset@i)#encoding_offset...]")
    /* HyperLogLog */
    D("pfadd", "2.8.9", "O(1) per element", "Add elements to a HyperLogLog sketch",
      "key@k [element...]")
    D("pfcount", "2.8.9", "O(1) for one key, its estimate cached; O(N) for N keys",
      "Estimate how many distinct elements one or more HyperLogLog sketches saw", "key@k...")
    D("pfmerge", "2.8.9", "O(N) for N sketches",
      "Merge HyperLogLog sketches into a destination sketch", "destkey@k sourcekey@k...")
    /* geo */
    D("geoadd", "3.2.0", "O(log N) per point for a set of N",
      "Add points (longitude, latitude) to a sorted set used as a geospatial index",
      "key@k [NX|XX]#condition [CH#change] (longitude@d latitude@d member)...")
    D("geodist", "3.2.0", "O(1)", "The distance between two points of a geospatial index",
      "key@k member1 member2 [" GEO_UNIT "]#unit")
    D("geohash", "3.2.0", "O(1) per member",
      "Points as standard 11-character geohash strings", "key@k member...")
    D("geopos", "3.2.0", "O(1) per member", "Points as longitude and latitude",
      "key@k member...")
    DEP("georadius", "3.2.0", GEO_COST, "Points within a radius of a position",
        "key@k longitude@d latitude@d radius@d (" GEO_UNIT ")#unit " GEO_RADIUS_OPTS
        " [STORE=key@k] [STOREDIST=key@k]",
        "6.2.0", "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument")
    DEP("georadius_ro", "3.2.10", GEO_COST, "Points within a radius of a position",
        "key@k longitude@d latitude@d radius@d (" GEO_UNIT ")#unit " GEO_RADIUS_OPTS, "6.2.0",
        "`GEOSEARCH` with the `BYRADIUS` argument")
    DEP("georadiusbymember", "3.2.0", GEO_COST, "Points within a radius of a member",
        "key@k member radius@d (" GEO_UNIT ")#unit " GEO_RADIUS_OPTS
        " [STORE=key@k] [STOREDIST=key@k]",
        "6.2.0", "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments")
    DEP("georadiusbymember_ro", "3.2.10", GEO_COST, "Points within a radius of a member",
        "key@k member radius@d (" GEO_UNIT ")#unit " GEO_RADIUS_OPTS, "6.2.0",
        "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments")
    D("geosearch", "6.2.0", GEO_COST, "Points within a circle or a box",
      "key@k " GEO_SEARCH_AREA " [ASC|DESC]#order [(COUNT=count@i [ANY])#count] [WITHCOORD] "
      "[WITHDIST] [WITHHASH]")
    D("geosearchstore", "6.2.0", GEO_COST, "Store the points within a circle or a box",
      "destination@k source@k " GEO_SEARCH_AREA " [ASC|DESC]#order [(COUNT=count@i [ANY])#count] "
      "[STOREDIST]")
    /* keys */
    D("del", "1.0.0", "O(N) for N keys; O(1) per key of any size here", "Delete keys", "key@k...")
    D("unlink", "4.0.0", "O(N) for N keys", "Delete keys (the same as DEL here)", "key@k...")
    D("exists", "1.0.0", "O(N) for N keys", "Count how many of the keys exist", "key@k...")
    D("touch", "3.2.1", "O(N) for N keys",
      "Count the keys that exist, marking each as used now", "key@k...")
    D("type", "1.0.0", "O(1)", "The type of the value at a key", "key@k")
    D("expire", "1.0.0", "O(1)", "Set a key's time to live in seconds",
      "key@k seconds@i " EXPIRE_COND)
    D("pexpire", "2.6.0", "O(1)", "Set a key's time to live in milliseconds",
      "key@k milliseconds@i " EXPIRE_COND)
    D("expireat", "1.2.0", "O(1)", "Set a key's expiry as a Unix time in seconds",
      "key@k unix-time-seconds@t " EXPIRE_COND)
    D("pexpireat", "2.6.0", "O(1)", "Set a key's expiry as a Unix time in milliseconds",
      "key@k unix-time-milliseconds@t " EXPIRE_COND)
    D("expiretime", "7.0.0", "O(1)", "A key's expiry as a Unix time in seconds", "key@k")
    D("pexpiretime", "7.0.0", "O(1)", "A key's expiry as a Unix time in milliseconds", "key@k")
    D("ttl", "1.0.0", "O(1)", "A key's remaining time to live in seconds", "key@k")
    D("pttl", "2.6.0", "O(1)", "A key's remaining time to live in milliseconds", "key@k")
    D("persist", "2.2.0", "O(1)", "Remove a key's expiry", "key@k")
    D("rename", "1.0.0", "O(1)", "Give a key a new name", "key@k newkey@k")
    D("renamenx", "1.0.0", "O(1)", "Give a key a new name only if that name is free",
      "key@k newkey@k")
    D("copy", "6.2.0", "O(N) for a value of N elements", "Copy a key's value to another key",
      "source@k destination@k [DB=destination-db@i] [REPLACE]")
    D("sort", "1.0.0", "O(N + M log M): N elements, M sorted",
      "The elements of a list, set or sorted set in order, or stored as a list",
      "key@k [BY=pattern@P] [LIMIT=(offset@i count@i)#offset_count] [GET=pattern@P...] "
      "[ASC|DESC]#order [ALPHA#sorting] [STORE=destination@k]")
    D("sort_ro", "7.0.0", "O(N + M log M): N elements, M sorted",
      "The elements of a list, set or sorted set in order",
      "key@k [BY=pattern@P] [LIMIT=(offset@i count@i)#offset_count] [GET=pattern@P...] "
      "[ASC|DESC]#order [ALPHA#sorting]")
    D("move", "1.0.0", "O(N) for a value of N elements", "Move a key to another database",
      "key@k db@i")
    D("dump", "2.6.0", "O(1) to find the key, O(N*M) to serialize N elements of M bytes",
      "A key's value in Redis's serialization format", "key@k")
    D("restore", "2.6.0", "O(1) to create the key, O(N*M) for N elements of M bytes",
      "Create a key from a serialized value",
      "key@k ttl@i serialized-value [REPLACE] [ABSTTL] [IDLETIME=seconds@i] [FREQ=frequency@i]")
    D("migrate", "2.6.0", "O(N) for the values moved, plus their transfer",
      "Move keys to another server",
      "host port@i (key@k|#empty_string)#key_or_empty_string destination-db@i timeout@i [COPY] "
      "[REPLACE] [[AUTH=password]|[AUTH2=(username password)#username_password]]#authentication "
      "[KEYS=key@k...]")
    D("keys", "1.0.0", "O(N) for N keys in the database", "Every key matching a pattern",
      "pattern@p")
    D("scan", "2.8.0", "O(1) a call, O(N) a full iteration", "Iterate over the keys",
      "cursor@i [MATCH=pattern@p] [COUNT=count@i] [TYPE=type]")
    D("randomkey", "1.0.0", "O(1) expected", "A random key of the database", "")
    D("dbsize", "1.0.0", "O(1)", "The number of keys in the database", "")
    D("select", "1.0.0", "O(1)", "Switch the connection to another database", "index@i")
    D("flushdb", "1.0.0", "O(1) here: a range deletion", "Delete every key of the database",
      "[ASYNC|SYNC]#async")
    D("flushall", "1.0.0", "O(1) here: a range deletion", "Delete every key of every database",
      "[ASYNC|SYNC]#async")
    D("object", "2.2.3", "Depends on the subcommand", "Inspect how a value is kept", NULL)
    D("object|encoding", "2.2.3", "O(1)", "The encoding Redis would use for the value",
      "key@k")
    D("object|freq", "4.0.0", "O(1)", "The access frequency (LFU policies only)", "key@k")
    D("object|idletime", "2.2.3", "O(1)", "The time since the key was last used", "key@k")
    D("object|refcount", "2.2.3", "O(1)", "The value's reference count", "key@k")
    D("object|help", "6.2.0", "O(1)", "Describe the OBJECT subcommands", "")
    /* hashes */
    D("hset", "2.0.0", "O(N) for N fields", "Set fields of a hash", "key@k (field value)...")
    D("hsetnx", "2.0.0", "O(1)", "Set a hash field only if it does not exist", "key@k field value")
    DEP("hmset", "2.0.0", "O(N) for N fields", "Set fields of a hash", "key@k (field value)...",
        "4.0.0", "HSET with several field-value pairs")
    D("hget", "2.0.0", "O(1)", "Read a hash field", "key@k field")
    D("hmget", "2.0.0", "O(N) for N fields", "Read several hash fields", "key@k field...")
    D("hgetall", "2.0.0", "O(N) for a hash of N fields", "Every field and value of a hash", "key@k")
    D("hdel", "2.0.0", "O(N) for N fields", "Delete hash fields", "key@k field...")
    D("hlen", "2.0.0", "O(1)", "The number of fields in a hash", "key@k")
    D("hexists", "2.0.0", "O(1)", "Whether a hash field exists", "key@k field")
    D("hkeys", "2.0.0", "O(N) for a hash of N fields", "Every field of a hash", "key@k")
    D("hvals", "2.0.0", "O(N) for a hash of N fields", "Every value of a hash", "key@k")
    D("hincrby", "2.0.0", "O(1)", "Add to an integer hash field", "key@k field increment@i")
    D("hincrbyfloat", "2.6.0", "O(1)", "Add to a floating-point hash field",
      "key@k field increment@d")
    D("hstrlen", "3.2.0", "O(1)", "The length of a hash field's value", "key@k field")
    D("hscan", "2.8.0", "O(1) a call, O(N) a full iteration", "Iterate over a hash's fields",
      "key@k cursor@i [MATCH=pattern@p] [COUNT=count@i]")
    D("hrandfield", "6.2.0", "O(N) for N fields returned", "Random fields of a hash",
      "key@k [count@i [WITHVALUES]]#options")
    /* sets */
    D("sadd", "1.0.0", "O(N) for N members", "Add members to a set", "key@k member...")
    D("srem", "1.0.0", "O(N) for N members", "Remove members from a set", "key@k member...")
    D("smembers", "1.0.0", "O(N) for a set of N members", "Every member of a set", "key@k")
    D("sismember", "1.0.0", "O(1)", "Whether a value is a member of a set", "key@k member")
    D("smismember", "6.2.0", "O(N) for N values", "Whether each value is a member of a set",
      "key@k member...")
    D("scard", "1.0.0", "O(1)", "The number of members in a set", "key@k")
    D("spop", "1.0.0", "O(N) for N members removed", "Remove and return random members",
      "key@k [count@i]")
    D("srandmember", "1.0.0", "O(N) for N members returned", "Random members of a set",
      "key@k [count@i]")
    D("smove", "1.0.0", "O(1)", "Move a member from one set to another",
      "source@k destination@k member")
    D("sinter", "1.0.0", "O(N*M): smallest set N, M sets", "The intersection of sets", "key@k...")
    D("sintercard", "7.0.0", "O(N*M): smallest set N, M sets",
      "The size of the intersection of sets", "numkeys@i key@k... [LIMIT=limit@i]")
    D("sinterstore", "1.0.0", "O(N*M): smallest set N, M sets",
      "Store the intersection of sets", "destination@k key@k...")
    D("sunion", "1.0.0", "O(N) for N members in all", "The union of sets", "key@k...")
    D("sunionstore", "1.0.0", "O(N) for N members in all", "Store the union of sets",
      "destination@k key@k...")
    D("sdiff", "1.0.0", "O(N) for N members in all", "The first set less the others", "key@k...")
    D("sdiffstore", "1.0.0", "O(N) for N members in all", "Store the first set less the others",
      "destination@k key@k...")
    D("sscan", "2.8.0", "O(1) a call, O(N) a full iteration", "Iterate over a set's members",
      "key@k cursor@i [MATCH=pattern@p] [COUNT=count@i]")
    /* sorted sets */
    D("zadd", "1.2.0", "O(log N) per member", "Add members to a sorted set or change scores",
      "key@k [NX|XX]#condition [GT|LT]#comparison [CH#change] [INCR#increment] "
      "(score@d member)...")
    D("zrem", "1.2.0", "O(M log N) for M members", "Remove members from a sorted set",
      "key@k member...")
    D("zscore", "1.2.0", "O(1)", "The score of a member", "key@k member")
    D("zmscore", "6.2.0", "O(N) for N members", "The scores of several members",
      "key@k member...")
    D("zincrby", "1.2.0", "O(log N)", "Add to a member's score", "key@k increment@d member")
    D("zcard", "1.2.0", "O(1)", "The number of members in a sorted set", "key@k")
    D("zcount", "2.0.0", "O(log N)", "Count the members within a score range", "key@k min@d max@d")
    D("zlexcount", "2.8.9", "O(log N)", "Count the members within a lexicographical range",
      "key@k min max")
    D("zrange", "1.2.0", "O(log N + M) for M members returned",
      "Members by rank, score or lexicographical range",
      "key@k start stop [BYSCORE|BYLEX]#sortby [REV] " ZRANGE_LIMIT " [WITHSCORES]")
    D("zrangestore", "6.2.0", "O(log N + M) for M members stored",
      "Store members by rank, score or lexicographical range",
      "dst@k src@k min max [BYSCORE|BYLEX]#sortby [REV] " ZRANGE_LIMIT)
    DEP("zrangebyscore", "1.0.5", "O(log N + M) for M members returned",
        "Members within a score range", "key@k min@d max@d [WITHSCORES] " ZRANGE_LIMIT, "6.2.0",
        "ZRANGE with BYSCORE")
    DEP("zrevrangebyscore", "2.2.0", "O(log N + M) for M members returned",
        "Members within a score range, highest first",
        "key@k max@d min@d [WITHSCORES] " ZRANGE_LIMIT, "6.2.0", "ZRANGE with BYSCORE and REV")
    DEP("zrangebylex", "2.8.9", "O(log N + M) for M members returned",
        "Members within a lexicographical range", "key@k min max " ZRANGE_LIMIT, "6.2.0",
        "ZRANGE with BYLEX")
    DEP("zrevrangebylex", "2.8.9", "O(log N + M) for M members returned",
        "Members within a lexicographical range, highest first", "key@k max min " ZRANGE_LIMIT,
        "6.2.0", "ZRANGE with BYLEX and REV")
    DEP("zrevrange", "1.2.0", "O(log N + M) for M members returned",
        "Members by rank, highest first", "key@k start@i stop@i [WITHSCORES]", "6.2.0",
        "ZRANGE with REV")
    D("zrank", "2.0.0", "O(log N)", "A member's rank, lowest score first", "key@k member")
    D("zrevrank", "2.0.0", "O(log N)", "A member's rank, highest score first", "key@k member")
    D("zremrangebyrank", "2.0.0", "O(log N + M) for M members removed",
      "Remove the members within a rank range", "key@k start@i stop@i")
    D("zremrangebyscore", "1.2.0", "O(log N + M) for M members removed",
      "Remove the members within a score range", "key@k min@d max@d")
    D("zremrangebylex", "2.8.9", "O(log N + M) for M members removed",
      "Remove the members within a lexicographical range", "key@k min max")
    D("zpopmin", "5.0.0", "O(M log N) for M members", "Remove and return the lowest scores",
      "key@k [count@i]")
    D("zpopmax", "5.0.0", "O(M log N) for M members", "Remove and return the highest scores",
      "key@k [count@i]")
    D("zmpop", "7.0.0", "O(K + M log N): K keys, M members popped",
      "Remove and return the lowest or highest scores of the first non-empty sorted set",
      "numkeys@i key@k... (MIN|MAX)#where [COUNT=count@i]")
    D("bzpopmin", "5.0.0", "O(N) for N keys, then O(log M)",
      "Remove and return the lowest score, waiting for one if need be", "key@k... timeout@d")
    D("bzpopmax", "5.0.0", "O(N) for N keys, then O(log M)",
      "Remove and return the highest score, waiting for one if need be", "key@k... timeout@d")
    D("bzmpop", "7.0.0", "O(K + M log N): K keys, M members popped",
      "ZMPOP, waiting for a member if need be",
      "timeout@d numkeys@i key@k... (MIN|MAX)#where [COUNT=count@i]")
    D("zrandmember", "6.2.0", "O(N) for N members returned", "Random members of a sorted set",
      "key@k [count@i [WITHSCORES]]#options")
    D("zunion", "6.2.0", "O(N) + O(M log M): N input members, M in the result",
      "The union of sorted sets", "numkeys@i key@k... " ZSTORE_OPTS " [WITHSCORES]")
    D("zunionstore", "2.0.0", "O(N) + O(M log M): N input members, M in the result",
      "Store the union of sorted sets", "destination@k numkeys@i key@k... " ZSTORE_OPTS)
    D("zinter", "6.2.0", "O(N*K) + O(M log M): smallest set N, K sets, M in the result",
      "The intersection of sorted sets", "numkeys@i key@k... " ZSTORE_OPTS " [WITHSCORES]")
    D("zinterstore", "2.0.0", "O(N*K) + O(M log M): smallest set N, K sets, M in the result",
      "Store the intersection of sorted sets",
      "destination@k numkeys@i key@k... " ZSTORE_OPTS)
    D("zdiff", "6.2.0", "O(L + (N-K) log N): L input members, first set N, K in the result",
      "The first sorted set less the others", "numkeys@i key@k... [WITHSCORES]")
    D("zdiffstore", "6.2.0", "O(L + (N-K) log N): L input members, first set N, K in the result",
      "Store the first sorted set less the others", "destination@k numkeys@i key@k...")
    D("zintercard", "7.0.0", "O(N*K): smallest sorted set N, K sorted sets",
      "The size of the intersection of sorted sets", "numkeys@i key@k... [LIMIT=limit@i]")
    D("zscan", "2.8.0", "O(1) a call, O(N) a full iteration", "Iterate over a sorted set",
      "key@k cursor@i [MATCH=pattern@p] [COUNT=count@i]")
    /* lists */
    D("lpush", "1.0.0", "O(N) for N elements", "Prepend elements to a list", "key@k element...")
    D("rpush", "1.0.0", "O(N) for N elements", "Append elements to a list", "key@k element...")
    D("lpushx", "2.2.0", "O(N) for N elements", "Prepend elements to an existing list",
      "key@k element...")
    D("rpushx", "2.2.0", "O(N) for N elements", "Append elements to an existing list",
      "key@k element...")
    D("lpop", "1.0.0", "O(N) for N elements", "Remove and return the first elements",
      "key@k [count@i]")
    D("rpop", "1.0.0", "O(N) for N elements", "Remove and return the last elements",
      "key@k [count@i]")
    D("llen", "1.0.0", "O(1)", "The length of a list", "key@k")
    D("lrange", "1.0.0", "O(S + N): S the offset, N elements", "A range of a list's elements",
      "key@k start@i stop@i")
    D("lindex", "1.0.0", "O(1)", "The element at an index", "key@k index@i")
    D("lset", "1.0.0", "O(1)", "Replace the element at an index", "key@k index@i element")
    D("lrem", "1.0.0", "O(N) for a list of N elements", "Remove elements equal to a value",
      "key@k count@i element")
    D("linsert", "2.2.0", "O(N) for a list of N elements",
      "Insert an element before or after another", "key@k (BEFORE|AFTER)#where pivot element")
    D("ltrim", "1.0.0", "O(N) for N elements removed", "Keep only a range of a list",
      "key@k start@i stop@i")
    D("lpos", "6.0.6", "O(N) for a list of N elements", "The indexes of elements equal to a value",
      "key@k element [RANK=rank@i] [COUNT=num-matches@i] [MAXLEN=len@i]")
    D("lmove", "6.2.0", "O(1)", "Move an element from one list's end to another's",
      "source@k destination@k (LEFT|RIGHT)#wherefrom (LEFT|RIGHT)#whereto")
    DEP("rpoplpush", "1.2.0", "O(1)", "Move the last element of a list to the head of another",
        "source@k destination@k", "6.2.0", "LMOVE with RIGHT LEFT")
    D("blpop", "2.0.0", "O(N) for N keys", "Remove the first element, waiting for one if need be",
      "key@k... timeout@d")
    D("brpop", "2.0.0", "O(N) for N keys", "Remove the last element, waiting for one if need be",
      "key@k... timeout@d")
    D("blmove", "6.2.0", "O(1)", "LMOVE, waiting for an element if need be",
      "source@k destination@k (LEFT|RIGHT)#wherefrom (LEFT|RIGHT)#whereto timeout@d")
    DEP("brpoplpush", "2.2.0", "O(1)", "RPOPLPUSH, waiting for an element if need be",
        "source@k destination@k timeout@d", "6.2.0", "BLMOVE with RIGHT LEFT")
    D("lmpop", "7.0.0", "O(N + M): N keys, M elements popped",
      "Remove and return elements from one end of the first non-empty list",
      "numkeys@i key@k... (LEFT|RIGHT)#where [COUNT=count@i]")
    D("blmpop", "7.0.0", "O(N + M): N keys, M elements popped",
      "LMPOP, waiting for an element if need be",
      "timeout@d numkeys@i key@k... (LEFT|RIGHT)#where [COUNT=count@i]")
    /* transactions */
    D("multi", "1.2.0", "O(1)", "Start a transaction", "")
    D("exec", "1.2.0", "Those of the queued commands", "Run the transaction's commands", "")
    D("discard", "2.0.0", "O(N) for N queued commands", "Drop the transaction's commands", "")
    D("watch", "2.2.0", "O(1) per key", "Make EXEC fail if the keys change first", "key@k...")
    D("unwatch", "2.2.0", "O(1)", "Stop watching every key", "")
    /* pub/sub */
    D("subscribe", "2.0.0", "O(N) for N channels", "Receive the messages sent to channels",
      "channel...")
    D("unsubscribe", "2.0.0", "O(N) for N channels", "Stop receiving channels' messages",
      "[channel...]")
    D("psubscribe", "2.0.0", "O(N) for N patterns",
      "Receive the messages sent to channels matching patterns", "(pattern@p)...#pattern")
    D("punsubscribe", "2.0.0", "O(N) for N patterns", "Stop receiving by patterns",
      "[pattern@p...]")
    D("ssubscribe", "7.0.0", "O(N) for N shard channels",
      "Receive the messages sent to shard channels", "shardchannel...")
    D("sunsubscribe", "7.0.0", "O(N) for N shard channels",
      "Stop receiving shard channels' messages", "[shardchannel...]")
    D("publish", "2.0.0", "O(N + M): N subscribers, M patterns", "Send a message to a channel",
      "channel message")
    D("spublish", "7.0.0", "O(N) for N subscribers", "Send a message to a shard channel",
      "shardchannel message")
    D("pubsub", "2.8.0", "Depends on the subcommand", "Inspect the pub/sub state", NULL)
    D("pubsub|channels", "2.8.0", "O(N) for N channels", "The channels with subscribers",
      "[pattern@p]")
    D("pubsub|numsub", "2.8.0", "O(N) for N channels", "Subscriber counts of channels",
      "[channel...]")
    D("pubsub|numpat", "2.8.0", "O(1)", "The number of patterns with subscribers", "")
    D("pubsub|shardchannels", "7.0.0", "O(N) for N shard channels",
      "The shard channels with subscribers", "[pattern@p]")
    D("pubsub|shardnumsub", "7.0.0", "O(N) for N shard channels",
      "Subscriber counts of shard channels", "[shardchannel...]")
    D("pubsub|help", "6.2.0", "O(1)", "Describe the PUBSUB subcommands", "")
    /* connection and server */
    D("ping", "1.0.0", "O(1)", "Check that the server answers", "[message]")
    D("echo", "1.0.0", "O(1)", "Reply with the argument", "message")
    D("auth", "1.0.0", "O(N) for N passwords", "Authenticate the connection",
      "[username] password")
    D("hello", "6.0.0", "O(1)", "Choose the protocol version and authenticate",
      "[protover@i [AUTH=(username password)] [SETNAME=clientname]]#arguments")
    D("quit", "1.0.0", "O(1)", "Close the connection", "")
    D("reset", "6.2.0", "O(1)", "Return the connection to its initial state", "")
    D("client", "2.4.0", "Depends on the subcommand", "Inspect and manage connections", NULL)
    D("client|id", "5.0.0", "O(1)", "The connection's id", "")
    D("client|setname", "2.6.9", "O(1)", "Name the connection", "connection-name")
    D("client|getname", "2.6.9", "O(1)", "The connection's name", "")
    D("client|list", "2.4.0", "O(N) for N connections", "Describe the connections",
      "[TYPE=(NORMAL|MASTER|REPLICA|PUBSUB)] [ID=(client-id@i...)#id]")
    D("client|info", "6.2.0", "O(1)", "Describe this connection", "")
    D("client|pause", "2.9.50", "O(1)", "Hold clients' commands for a while",
      "timeout@i [(WRITE|ALL)#mode]")
    D("client|unpause", "6.2.0", "O(N) where N is the number of paused clients",
      "End a pause", "")
    D("client|reply", "3.2.0", "O(1)", "Turn the connection's replies on or off",
      "(ON|OFF|SKIP)#on_off_skip")
    D("client|unblock", "5.0.0", "O(log N) where N is the number of client connections",
      "End a client's blocking command", "client-id@i [(TIMEOUT|ERROR)#timeout_error]")
    D("client|no-evict", "7.0.0", "O(1)", "Mark the connection as one not to evict",
      "(ON|OFF)#enabled")
    D("client|kill", "2.4.0", "O(N) for N connections", "Close connections",
      "(ip:port|([ID=client-id@i]|[TYPE=(NORMAL|MASTER|SLAVE|REPLICA|PUBSUB)#normal_master_slave_pubsub]|"
      "[USER=username]|[ADDR=ip:port]|[LADDR=ip:port]|[SKIPME=yes/no])...#new-format)#filter")
    D("client|help", "5.0.0", "O(1)", "Describe the CLIENT subcommands", "")
    D("client|tracking", "6.0.0", "O(1); O(N) for N prefixes",
      "Turn server-assisted client-side caching on or off",
      "(ON|OFF)#status [REDIRECT=client-id@i] [PREFIX=prefix...] [BCAST] [OPTIN] [OPTOUT] "
      "[NOLOOP]")
    D("client|caching", "6.0.0", "O(1)",
      "Track (OPTIN) or not (OPTOUT) the keys of the next command", "(YES|NO)#mode")
    D("client|getredir", "6.0.0", "O(1)", "The client that tracking messages are redirected to",
      "")
    D("client|trackinginfo", "6.2.0", "O(1)", "This connection's tracking settings", "")
    D("info", "1.0.0", "O(1)", "Server information and statistics", "[section...]")
    D("acl", "6.0.0", "Depends on the subcommand", "Users and what they may run", NULL)
    D("acl|cat", "6.0.0", "O(1)", "The ACL categories, or the commands in one",
      "[categoryname]")
    D("acl|deluser", "6.0.0", "O(1) a user", "Remove users", "username...")
    D("acl|dryrun", "7.0.0", "O(1)", "Whether a user may run a command line",
      "username command [arg...]")
    D("acl|genpass", "6.0.0", "O(1)", "A random password", "[bits@i]")
    D("acl|getuser", "6.0.0", "O(N) for N rules", "One user's rules", "username")
    D("acl|help", "6.0.0", "O(1)", "Describe the ACL subcommands", "")
    D("acl|list", "6.0.0", "O(N) for N users", "Every user's rules, as an ACL file has them", "")
    D("acl|load", "6.0.0", "O(N) for N users", "Replace the users by the ACL file's", "")
    D("acl|log", "6.0.0", "O(N) for N entries", "Recent denials", "[count@i|RESET]#operation")
    D("acl|save", "6.0.0", "O(N) for N users", "Write the users to the ACL file", "")
    D("acl|setuser", "6.0.0", "O(N) for N rules", "Create a user or change its rules",
      "username [rule...]")
    D("acl|users", "6.0.0", "O(N) for N users", "The users' names", "")
    D("acl|whoami", "6.0.0", "O(1)", "The connection's user", "")
    D("config", "2.0.0", "Depends on the subcommand", "Read and change the configuration", NULL)
    D("config|get", "2.0.0", "O(N) for N parameters", "Parameters matching patterns",
      "(parameter)...#parameter")
    D("config|set", "2.0.0", "O(N) for N parameters", "Change parameters at run time",
      "(parameter value)...")
    D("config|resetstat", "2.0.0", "O(1)", "Reset the INFO statistics", "")
    D("config|rewrite", "2.8.0", "O(1)", "Write the configuration back to its file", "")
    D("config|help", "5.0.0", "O(1)", "Describe the CONFIG subcommands", "")
    D("command", "2.8.13", "O(N) for N commands", "Describe the commands", NULL)
    D("command|count", "2.8.13", "O(1)", "The number of commands", "")
    D("command|info", "2.8.13", "O(N) for N commands", "Describe commands",
      "[command-name...]")
    D("command|docs", "7.0.0", "O(N) for N commands", "Document commands", "[command-name...]")
    D("command|getkeys", "2.8.13", "O(N) where N is the number of arguments to the command",
      "The keys of a full command", "")
    D("command|getkeysandflags", "7.0.0", "O(N) where N is the number of arguments to the command",
      "The keys of a full command, each with how the command uses it", "")
    D("command|list", "7.0.0", "O(N) for N commands", "The commands' and subcommands' names",
      "[FILTERBY=(MODULE=module-name|ACLCAT=category|PATTERN=pattern@p)#filterby]")
    D("command|help", "5.0.0", "O(1)", "Describe the COMMAND subcommands", "")
    D("slowlog", "2.2.12", "Depends on the subcommand", "The log of slow commands", NULL)
    D("slowlog|get", "2.2.12", "O(N) for N entries", "The latest slow commands", "[count@i]")
    D("slowlog|len", "2.2.12", "O(1)", "The number of slow log entries", "")
    D("slowlog|reset", "2.2.12", "O(N) for N entries", "Empty the slow log", "")
    D("slowlog|help", "6.2.0", "O(1)", "Describe the SLOWLOG subcommands", "")
    D("time", "2.6.0", "O(1)", "The server's clock", "")
    D("lastsave", "1.0.0", "O(1)", "When the last BGSAVE checkpoint was made", "")
    D("bgsave", "1.0.0", "O(1), plus hard links to the data files",
      "Make a RocksDB checkpoint of the durable data", "[SCHEDULE]")
    D("save", "1.0.0", "O(1), plus hard links to the data files",
      "Make a RocksDB checkpoint of the durable data", "")
    D("wait", "3.0.0", "O(1)",
      "Wait for replicas to acknowledge the connection's writes (shmkvd has none)",
      "numreplicas@i timeout@i")
    D("memory", "4.0.0", "Depends on the subcommand", "Memory usage and the allocator", NULL)
    D("memory|usage", "4.0.0", "O(N) where N is the number of samples",
      "Bytes a key's records take in storage", "key@k [SAMPLES=count@i]")
    D("memory|malloc-stats", "4.0.0", "Depends on how much memory is allocated",
      "The allocator's statistics", "")
    D("memory|purge", "4.0.0", "Depends on how much memory is allocated",
      "Ask the allocator to release memory", "")
    D("memory|help", "4.0.0", "O(1)", "Describe the MEMORY subcommands", "")
    D("memory|stats", "4.0.0", "O(1)", "The daemon's memory, part by part", "")
    D("memory|doctor", "4.0.0", "O(1)", "Advice on the daemon's memory", "")
    D("eval", "2.6.0", "Depends on the script", "Run a Lua script",
      "script numkeys@i [key@k...] [arg...]")
    D("evalsha", "2.6.0", "Depends on the script", "Run a loaded Lua script by its SHA-1",
      "sha1 numkeys@i [key@k...] [arg...]")
    D("eval_ro", "7.0.0", "Depends on the script", "Run a Lua script that writes nothing",
      "script numkeys@i [key@k...] [arg...]")
    D("evalsha_ro", "7.0.0", "Depends on the script",
      "Run a loaded Lua script that writes nothing, by its SHA-1",
      "sha1 numkeys@i [key@k...] [arg...]")
    D("script", "2.6.0", "Depends on the subcommand", "The Lua scripts' cache", NULL)
    D("script|load", "2.6.0", "O(N) for N bytes of script", "Compile and keep a Lua script",
      "script")
    D("script|exists", "2.6.0", "O(N) for N SHA-1s", "Which scripts are loaded", "sha1...")
    D("script|flush", "2.6.0", "O(N) for N scripts", "Forget every loaded script",
      "[ASYNC|SYNC]#async")
    D("script|help", "5.0.0", "O(1)", "Describe the SCRIPT subcommands", "")
    D("script|kill", "2.6.0", "O(1)", "Stop the script that is busy, if it wrote nothing", "")
    D("fcall", "7.0.0", "Depends on the function", "Call a function of a library",
      "function numkeys@i [key@k...] [arg...]")
    D("fcall_ro", "7.0.0", "Depends on the function",
      "Call a function that writes nothing (flagged no-writes)",
      "function numkeys@i [key@k...] [arg...]")
    D("function", "7.0.0", "Depends on the subcommand", "The function libraries", NULL)
    D("function|load", "7.0.0", "O(1), and what the library's code does",
      "Make a library of functions from its code", "[REPLACE]#replace function-code")
    D("function|delete", "7.0.0", "O(1)", "Remove a library", "library-name")
    D("function|flush", "7.0.0", "O(N) for N functions", "Remove every library",
      "[ASYNC|SYNC]#async")
    D("function|list", "7.0.0", "O(N) for N functions", "The libraries and their functions",
      "[LIBRARYNAME=library-name-pattern] [WITHCODE]")
    D("function|dump", "7.0.0", "O(N) for N functions", "Every library as one payload", "")
    D("function|restore", "7.0.0", "O(N) for N functions", "Load the libraries of a payload",
      "serialized-value [FLUSH|APPEND|REPLACE]#policy")
    D("function|kill", "7.0.0", "O(1)", "Stop the function that is busy, if it wrote nothing",
      "")
    D("function|stats", "7.0.0", "O(1)", "The function that runs, and the libraries' counts",
      "")
    D("function|help", "7.0.0", "O(1)", "Describe the FUNCTION subcommands", "")
    D("sync", "1.0.0", "O(N) for N keys",
      "An internal command used in replication: the data set as an RDB file, then the stream",
      "")
    D("psync", "2.8.0", "O(N) for N keys on a full resynchronization",
      "An internal command used in replication: continue from an offset, or a full resync",
      "replicationid offset@i")
    D("replconf", "3.0.0", "O(1)", "An internal command for configuring the replication stream",
      "")
    D("swapdb", "4.0.0", "O(N) for N clients watching or blocked on keys of the two",
      "Swap two databases", "index1@i index2@i")
    D("module", "4.0.0", "Depends on the subcommand", "Modules (shmkvd loads none)", NULL)
    D("module|list", "4.0.0", "O(1)", "The loaded modules: none", "")
    D("module|load", "4.0.0", "O(1)", "Refused: shmkvd cannot load modules", "path [arg...]")
    D("module|loadex", "7.0.0", "O(1)", "Refused: shmkvd cannot load modules",
      "path [CONFIG=(name value)...#configs] [ARGS=(arg)...#args]")
    D("module|unload", "4.0.0", "O(1)", "Unload a module: there is none", "name")
    D("module|help", "5.0.0", "O(1)", "Describe the MODULE subcommands", "")
    D("cluster", "3.0.0", "Depends on the subcommand", "Cluster mode: disabled in shmkvd", NULL)
    D("cluster|addslots", "3.0.0", "O(1)", "Refused: cluster support is disabled", "slot@i...")
    D("cluster|addslotsrange", "7.0.0", "O(1)", "Refused: cluster support is disabled",
      "(start-slot@i end-slot@i)...")
    D("cluster|bumpepoch", "3.0.0", "O(1)", "Refused: cluster support is disabled", "")
    D("cluster|count-failure-reports", "3.0.0", "O(1)", "Refused: cluster support is disabled",
      "node-id")
    D("cluster|countkeysinslot", "3.0.0", "O(1)", "Refused: cluster support is disabled", "slot@i")
    D("cluster|delslots", "3.0.0", "O(1)", "Refused: cluster support is disabled", "slot@i...")
    D("cluster|delslotsrange", "7.0.0", "O(1)", "Refused: cluster support is disabled",
      "(start-slot@i end-slot@i)...")
    D("cluster|failover", "3.0.0", "O(1)", "Refused: cluster support is disabled",
      "[FORCE|TAKEOVER]#options")
    D("cluster|flushslots", "3.0.0", "O(1)", "Refused: cluster support is disabled", "")
    D("cluster|forget", "3.0.0", "O(1)", "Refused: cluster support is disabled", "node-id")
    D("cluster|getkeysinslot", "3.0.0", "O(1)", "Refused: cluster support is disabled",
      "slot@i count@i")
    D("cluster|help", "5.0.0", "O(1)", "Refused: cluster support is disabled", "")
    D("cluster|info", "3.0.0", "O(1)", "Refused: cluster support is disabled", "")
    D("cluster|keyslot", "3.0.0", "O(1)", "Refused: cluster support is disabled", "key")
    D("cluster|links", "7.0.0", "O(1)", "Refused: cluster support is disabled", "")
    D("cluster|meet", "3.0.0", "O(1)", "Refused: cluster support is disabled",
      "ip port@i [cluster_bus_port@i]")
    D("cluster|myid", "3.0.0", "O(1)", "Refused: cluster support is disabled", "")
    D("cluster|nodes", "3.0.0", "O(1)", "Refused: cluster support is disabled", "")
    D("cluster|replicas", "5.0.0", "O(1)", "Refused: cluster support is disabled", "node-id")
    D("cluster|replicate", "3.0.0", "O(1)", "Refused: cluster support is disabled", "node-id")
    D("cluster|reset", "3.0.0", "O(1)", "Refused: cluster support is disabled",
      "[HARD|SOFT]#hard_soft")
    D("cluster|saveconfig", "3.0.0", "O(1)", "Refused: cluster support is disabled", "")
    D("cluster|set-config-epoch", "3.0.0", "O(1)", "Refused: cluster support is disabled",
      "config-epoch@i")
    D("cluster|setslot", "3.0.0", "O(1)", "Refused: cluster support is disabled",
      "slot@i (IMPORTING=node-id|MIGRATING=node-id|NODE=node-id|STABLE)#subcommand")
    D("cluster|shards", "7.0.0", "O(1)", "Refused: cluster support is disabled", "")
    DEP("cluster|slaves", "3.0.0", "O(1)", "Refused: cluster support is disabled", "node-id",
        "5.0.0", "`CLUSTER REPLICAS`")
    DEP("cluster|slots", "3.0.0", "O(1)", "Refused: cluster support is disabled", "", "7.0.0",
        "`CLUSTER SHARDS`")
    D("readonly", "3.0.0", "O(1)", "Refused: cluster support is disabled", "")
    D("readwrite", "3.0.0", "O(1)", "Refused: cluster support is disabled", "")
    D("asking", "3.0.0", "O(1)", "Refused: cluster support is disabled", "")
    D("lolwut", "5.0.0", "O(1)", "The version line", "[VERSION=version@i]")
    D("latency", "2.8.13", "Depends on the subcommand", "Latency measurements", NULL)
    D("latency|latest", "2.8.13", "O(1)", "Each event's latest latency spike", "")
    D("latency|history", "2.8.13", "O(1)", "An event's latency spikes over time", "event")
    D("latency|reset", "2.8.13", "O(1)", "Forget the latency spikes of events", "[event...]")
    D("latency|graph", "2.8.13", "O(1)", "A chart of an event's latency spikes", "event")
    D("latency|doctor", "2.8.13", "O(1)", "A report on the latency spikes, with advice", "")
    D("latency|histogram", "7.0.0", "O(N) for N commands",
      "Cumulative histograms of the commands' durations", "[command...]")
    D("latency|help", "2.8.13", "O(1)", "Describe the LATENCY subcommands", "")
    D("monitor", "1.0.0", "O(1)", "Stream every command the server runs", "")
    D("failover", "6.2.0", "O(1)", "Hand this primary's role over to one of its replicas",
      "[TO=(host port@i [FORCE])#target] [ABORT] [TIMEOUT=milliseconds@i]")
    D("replicaof", "5.0.0", "O(1)", "Follow another server as its replica, or stop following",
      "((host port@i)#host-port|(NO ONE)#no-one)#args")
    DEP("slaveof", "1.0.0", "O(1)", "Follow another server as its replica, or stop following",
        "((host port@i)#host-port|(NO ONE)#no-one)#args", "5.0.0", "`REPLICAOF`")
    D("role", "2.8.12", "O(1)", "Return the role of the instance in the context of replication",
      "")
    D("debug", "1.0.0", "Depends on the subcommand",
      "Inspect and test the server (enable-debug-command must allow it)", "")
    D("shutdown", "1.0.0", "O(1): every write is already durable",
      "Drain write-back, close storage and stop", "[NOSAVE|SAVE] [NOW] [FORCE] [ABORT]")
    D("shmkv.attach", "0.1.0", "O(1)",
      "Pass the shared-memory cache's descriptors over the Unix socket (libshmkv)", "")
    D("shmkv.clients", "0.1.0", "O(N) for N attached handles",
      "List the client handles attached to the shared-memory cache and their local reads", "")
    D("shmkv.compact", "0.1.0", "O(N) for N bytes of data",
      "Compact RocksDB fully, so garbage is reclaimed now", "")
    D("shmkv.checkpoint", "0.1.0", "O(N) for N bytes in the memtables",
      "Write a RocksDB checkpoint (hard links) into dir/checkpoints, replacing the last", "")
};
/* clang-format on */

static const struct doc *doc_find(const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof DOCS / sizeof DOCS[0]; i++)
        if (strlen(DOCS[i].name) == n && strncasecmp(DOCS[i].name, name, n) == 0)
            return &DOCS[i];
    return NULL;
}

bool cmd_doc_exists(const char *name, size_t n)
{
    return doc_find(name, n) != NULL;
}

/* ---- the argument syntax ---- */

enum { A_STRING, A_INTEGER, A_DOUBLE, A_KEY, A_PATTERN, A_UNIXTIME, A_TOKEN, A_ONEOF, A_BLOCK };
static const char *const TYPE_NAMES[] = {"string",    "integer",    "double", "key",  "pattern",
                                         "unix-time", "pure-token", "oneof",  "block"};

#define ARG_MAX 64
#define NAME_MAX_LEN 64

struct arg {
    char name[NAME_MAX_LEN];
    const char *token;
    size_t tokn;
    int type, key_index;
    bool optional, multiple;
    int child, next; /* indexes into the tree, -1 for none */
};

struct tree {
    struct arg a[ARG_MAX];
    int n, keys;
    int pattern_key; /* the key spec of @P arguments, -1 before the first */
    const char *p;   /* parse position */
};

static int node(struct tree *t)
{
    if (t->n == ARG_MAX)
        abort(); /* a table line too long: a programming error */
    struct arg *a = &t->a[t->n];
    memset(a, 0, sizeof *a);
    a->child = a->next = -1;
    a->key_index = -1;
    return t->n++;
}

static bool word_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == ':' || c == '/' || c == '.';
}

static size_t word_len(const char *p)
{
    size_t n = 0;
    /* "..." ends a word: it is the repeat mark */
    while (word_char(p[n]) && strncmp(p + n, "...", 3) != 0)
        n++;
    return n;
}

static bool all_caps(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (islower((unsigned char)p[i]))
            return false;
    return true;
}

static void skip_space(struct tree *t)
{
    while (*t->p == ' ')
        t->p++;
}

static int parse_alts(struct tree *t, char close);

/* The name of a group made of its members' names. */
static void group_name(struct tree *t, int g)
{
    struct arg *a = &t->a[g];
    size_t used = 0;
    for (int c = a->child; c >= 0; c = t->a[c].next) {
        const char *m = t->a[c].name;
        size_t n = strlen(m);
        if (used + (used > 0) + n >= sizeof a->name)
            break;
        if (used)
            a->name[used++] = '_';
        memcpy(a->name + used, m, n);
        used += n;
    }
    a->name[used] = 0;
}

/* #name and ..., in either order, after an item. */
static void parse_suffix(struct tree *t, int x)
{
    for (;;) {
        if (*t->p == '#') {
            size_t n = word_len(++t->p);
            snprintf(t->a[x].name, sizeof t->a[x].name, "%.*s", (int)n, t->p);
            t->p += n;
        } else if (strncmp(t->p, "...", 3) == 0) {
            t->a[x].multiple = true;
            t->p += 3;
        } else {
            return;
        }
    }
}

static int parse_item(struct tree *t)
{
    skip_space(t);
    if (*t->p == '[') {
        t->p++;
        int g = parse_alts(t, ']');
        t->a[g].optional = true;
        parse_suffix(t, g);
        return g;
    }
    const char *token = NULL;
    size_t tokn = 0, n = word_len(t->p);
    if (n && t->p[n] == '=') {
        token = t->p;
        tokn = n;
        t->p += n + 1;
        n = word_len(t->p);
    }
    int x;
    if (*t->p == '(') {
        t->p++;
        x = parse_alts(t, ')');
        if (t->a[x].type != A_ONEOF && t->a[x].type != A_BLOCK) {
            /* "(a)": a block of one, as Redis documents some */
            int g = node(t);
            t->a[g].type = A_BLOCK;
            t->a[g].child = x;
            group_name(t, g);
            x = g;
        }
    } else {
        x = node(t);
        struct arg *a = &t->a[x];
        if (!token && all_caps(t->p, n)) {
            a->type = A_TOKEN;
            token = t->p;
            tokn = n;
            for (size_t i = 0; i < n && i < sizeof a->name - 1; i++)
                a->name[i] = (char)tolower((unsigned char)t->p[i]);
        } else {
            snprintf(a->name, sizeof a->name, "%.*s", (int)n, t->p);
            a->type = A_STRING;
        }
        t->p += n;
        if (*t->p == '@') {
            static const char codes[] = "sidkpt";
            const char *c = strchr(codes, t->p[1]);
            a->type = c ? (int)(c - codes) : A_STRING;
            if (t->p[1] == 'P') {
                a->type = A_PATTERN;
                if (t->pattern_key < 0)
                    t->pattern_key = t->keys++;
                a->key_index = t->pattern_key;
            }
            t->p += 2;
        }
        if (a->type == A_KEY)
            a->key_index = t->keys++;
    }
    if (token) {
        t->a[x].token = token;
        t->a[x].tokn = tokn;
    }
    parse_suffix(t, x);
    return x;
}

/* Items up to '|', close or the end; a single item stands for itself. */
static int parse_seq(struct tree *t, char close)
{
    int first = -1, last = -1, count = 0;
    for (;;) {
        skip_space(t);
        if (!*t->p || *t->p == '|' || *t->p == close)
            break;
        int x = parse_item(t);
        if (first < 0)
            first = x;
        else
            t->a[last].next = x;
        last = x;
        count++;
    }
    if (count == 1)
        return first;
    int g = node(t);
    t->a[g].type = A_BLOCK;
    t->a[g].child = first;
    group_name(t, g);
    return g;
}

/* seq ('|' seq)* then close: one seq stands for itself, several make a oneof. */
static int parse_alts(struct tree *t, char close)
{
    int first = parse_seq(t, close), last = first, count = 1;
    while (*t->p == '|') {
        t->p++;
        int x = parse_seq(t, close);
        t->a[last].next = x;
        last = x;
        count++;
    }
    if (close && *t->p == close)
        t->p++;
    if (count == 1)
        return first;
    int g = node(t);
    t->a[g].type = A_ONEOF;
    t->a[g].child = first;
    group_name(t, g);
    return g;
}

/* Parses a whole line: the top-level arguments, chained by next. */
static int parse_line(struct tree *t, const char *line)
{
    t->n = t->keys = 0;
    t->pattern_key = -1;
    t->p = line;
    int first = -1, last = -1;
    for (;;) {
        skip_space(t);
        if (!*t->p)
            break;
        int x = parse_item(t);
        if (first < 0)
            first = x;
        else
            t->a[last].next = x;
        last = x;
    }
    return first;
}

/* ---- the reply ---- */

static size_t chain_len(const struct tree *t, int x)
{
    size_t n = 0;
    for (; x >= 0; x = t->a[x].next)
        n++;
    return n;
}

static void reply_args(struct conn *c, const struct tree *t, int x)
{
    resp_array(OUT(c), chain_len(t, x));
    for (; x >= 0; x = t->a[x].next) {
        const struct arg *a = &t->a[x];
        bool group = a->type == A_ONEOF || a->type == A_BLOCK;
        size_t fields =
            2 + (a->key_index >= 0) + (a->token != NULL) + (a->optional || a->multiple) + group;
        resp_map(OUT(c), fields, c->proto);
        resp_bulk_cstr(OUT(c), "name");
        resp_bulk_cstr(OUT(c), a->name);
        resp_bulk_cstr(OUT(c), "type");
        resp_bulk_cstr(OUT(c), TYPE_NAMES[a->type]);
        if (a->key_index >= 0) {
            resp_bulk_cstr(OUT(c), "key_spec_index");
            resp_int(OUT(c), a->key_index);
        }
        if (a->token) {
            resp_bulk_cstr(OUT(c), "token");
            resp_bulk(OUT(c), a->token, a->tokn);
        }
        if (a->optional || a->multiple) {
            resp_bulk_cstr(OUT(c), "flags");
            resp_set(OUT(c), (size_t)a->optional + a->multiple, c->proto);
            if (a->optional)
                resp_simple(OUT(c), "optional");
            if (a->multiple)
                resp_simple(OUT(c), "multiple");
        }
        if (group) {
            resp_bulk_cstr(OUT(c), "arguments");
            reply_args(c, t, a->child);
        }
    }
}

static size_t sub_count(const struct doc *d)
{
    size_t n = 0, len = strlen(d->name);
    for (size_t i = 0; i < sizeof DOCS / sizeof DOCS[0]; i++)
        n += strncmp(DOCS[i].name, d->name, len) == 0 && DOCS[i].name[len] == '|';
    return n;
}

static void reply_doc(struct conn *c, const struct doc *d, const char *group)
{
    struct tree t;
    int args = d->args ? parse_line(&t, d->args) : -1;
    size_t subs = d->args ? 0 : sub_count(d);
    size_t fields = 4 + (d->deprecated_since ? 3 : 0) + (args >= 0) + (subs > 0);
    resp_map(OUT(c), fields, c->proto);
    resp_bulk_cstr(OUT(c), "summary");
    resp_bulk_cstr(OUT(c), d->summary);
    resp_bulk_cstr(OUT(c), "since");
    resp_bulk_cstr(OUT(c), d->since);
    resp_bulk_cstr(OUT(c), "group");
    resp_bulk_cstr(OUT(c), group);
    resp_bulk_cstr(OUT(c), "complexity");
    resp_bulk_cstr(OUT(c), d->complexity);
    if (d->deprecated_since) {
        resp_bulk_cstr(OUT(c), "doc_flags");
        resp_set(OUT(c), 1, c->proto);
        resp_simple(OUT(c), "deprecated");
        resp_bulk_cstr(OUT(c), "deprecated_since");
        resp_bulk_cstr(OUT(c), d->deprecated_since);
        resp_bulk_cstr(OUT(c), "replaced_by");
        resp_bulk_cstr(OUT(c), d->replaced_by);
    }
    if (args >= 0) {
        resp_bulk_cstr(OUT(c), "arguments");
        reply_args(c, &t, args);
    }
    if (subs) {
        resp_bulk_cstr(OUT(c), "subcommands");
        resp_map(OUT(c), subs, c->proto);
        size_t len = strlen(d->name);
        for (size_t i = 0; i < sizeof DOCS / sizeof DOCS[0]; i++) {
            if (strncmp(DOCS[i].name, d->name, len) != 0 || DOCS[i].name[len] != '|')
                continue;
            resp_bulk_cstr(OUT(c), DOCS[i].name);
            reply_doc(c, &DOCS[i], group);
        }
    }
}

/* The command table entry a documented name belongs to ("client|list":
 * client's), for its group. */
static const struct cmd *doc_cmd(const struct doc *d)
{
    const char *bar = strchr(d->name, '|');
    return cmd_lookup(d->name, bar ? (size_t)(bar - d->name) : strlen(d->name));
}

/* COMMAND DOCS [name ...]: unknown names are left out, as Redis does. */
void cmd_command_docs(struct conn *c)
{
    const struct doc **found = kv_xmalloc((cmd_count() + c->argc) * sizeof *found);
    size_t n = 0;
    if (c->argc == 2) {
        for (size_t i = 0; i < cmd_count(); i++) {
            const struct doc *d = doc_find(cmd_at(i)->name, strlen(cmd_at(i)->name));
            if (d)
                found[n++] = d;
        }
    } else {
        for (size_t i = 2; i < c->argc; i++) {
            const struct doc *d = doc_find(c->argv[i].p, c->argv[i].n);
            if (d && doc_cmd(d))
                found[n++] = d;
        }
    }
    resp_map(OUT(c), n, c->proto);
    for (size_t i = 0; i < n; i++) {
        resp_bulk_cstr(OUT(c), found[i]->name);
        reply_doc(c, found[i], doc_cmd(found[i])->group);
    }
    free(found);
}
