/*
 * cmd_keyspecs — the key specifications of Redis 7.0: for every command and
 * subcommand shmkvd has, where its keys are in a command line and how it
 * uses each. COMMAND INFO reports them (field 8 of each entry, from 0);
 * COMMAND GETKEYS and GETKEYSANDFLAGS, and key tracking, find keys by them
 * as Redis does.
 *
 * Layer: cmd, no storage. A spec is two steps and flags:
 *
 *   begin search   IDX(i)        the search starts at argument i
 *                  KW(w, from)   ... after the keyword w, looked for from
 *                                argument from on (from < 0: backwards
 *                                from argc + from); no keys without it
 *                  BS_UNKNOWN    only the command's own parse can tell
 *   find keys      RANGE(last, step, limit)
 *                                keys from there to there + last (last < 0:
 *                                to argc + last), every step-th; limit > 1
 *                                would take 1/limit of what is left
 *                  KEYNUM(idx, first, step)
 *                                argument there + idx counts the keys,
 *                                which begin at there + first
 *                  FK_UNKNOWN
 *   flags          RO, RW, OW (overwritten), RM (removed); AC (the value,
 *                  or part of it, is returned or copied), UP, IN, DE (the
 *                  value is updated, added to, deleted from);
 *                  NK (not a key: a shard channel), INC (incomplete), VAR
 *                  (the flags depend on the arguments)
 *
 * Where the specs cannot tell (unknown steps, an incomplete spec, variable
 * flags, an invalid numkeys), Redis asks a procedure of the command's own,
 * named in the second column of K entries, and so does shmkvd (GEORADIUS
 * has one in Redis too, which its specs never leave it to). The specs are
 * Redis 7.0.15's, as its COMMAND INFO reports them; the notes are this
 * project's words.
 */
#include "cmd.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "kv_mem.h"
#include "kv_num.h"

enum { BEGIN_INDEX, BEGIN_KEYWORD, BEGIN_UNKNOWN };
enum { FIND_RANGE, FIND_KEYNUM, FIND_UNKNOWN };

/* The procedure Redis falls back on (its getkeys_proc). */
enum {
    GK_NONE,
    GK_NUMKEYS, /* "[destination] numkeys key ...": positions from the keynum spec */
    GK_SORT,
    GK_SORT_RO,
    GK_MIGRATE,
    GK_SET,
    GK_BITFIELD,
};

struct keyspec {
    uint32_t flags; /* CMD_KEY_* */
    uint8_t begin;  /* BEGIN_* */
    int pos;        /* BEGIN_INDEX: the index; BEGIN_KEYWORD: startfrom */
    const char *keyword;
    uint8_t find; /* FIND_* */
    int a, b,
        c; /* FIND_RANGE: lastkey, keystep, limit; FIND_KEYNUM: keynumidx, firstkey, keystep */
    const char *notes;
};

struct cmd_keyspecs {
    const char *name;
    uint8_t getkeys; /* GK_* */
    uint8_t n;
    struct keyspec s[CMD_KEYSPECS_MAX];
};

/* The table's shorthand, as the header describes it. S is a spec, SN one
 * with notes; K an entry of n specs and a procedure, K1 one of a single
 * spec and none. */
/* clang-format off */
#define RO CMD_KEY_RO
#define RW CMD_KEY_RW
#define OW CMD_KEY_OW
#define RM CMD_KEY_RM
#define AC CMD_KEY_ACCESS
#define UP CMD_KEY_UPDATE
#define IN CMD_KEY_INSERT
#define DE CMD_KEY_DELETE
#define NK CMD_KEY_NOT_KEY
#define INC CMD_KEY_INCOMPLETE
#define VAR CMD_KEY_VARIABLE_FLAGS
#define IDX(i) BEGIN_INDEX, i, NULL
#define KW(w, from) BEGIN_KEYWORD, from, w
#define BS_UNKNOWN BEGIN_UNKNOWN, 0, NULL
#define RANGE(last, step, limit) FIND_RANGE, last, step, limit
#define KEYNUM(idx, first, step) FIND_KEYNUM, idx, first, step
#define FK_UNKNOWN FIND_UNKNOWN, 0, 0, 0
#define S(fl, bs, fk) {fl, bs, fk, NULL}
#define SN(fl, bs, fk, notes) {fl, bs, fk, notes}
#define K(name, gk, n, ...) {name, gk, n, {__VA_ARGS__}},
#define K1(name, fl, bs, fk) {name, GK_NONE, 1, {{fl, bs, fk, NULL}}},
/* clang-format on */

#define N_SET "Read as well as written when GET asks for the value it replaces"
#define N_GETEX "Written: the expiry may change"
#define N_BITFIELD "GET reads the string; SET and INCRBY change it"
#define N_PFCOUNT "Written: counting may convert the sketch's encoding and caches its estimate"
#define N_SORT_PATTERN                                                                             \
    "The keys BY and GET name come from the sorted elements, so no position can be given"
#define N_EVAL "A script may read or write its keys any way: the worst is assumed"
#define N_EVAL_RO "A read-only script may read its keys any way: the worst is assumed"
#define N_FCALL "A function may read or write its keys any way: the worst is assumed"
#define N_FCALL_RO "A read-only function may read its keys any way: the worst is assumed"
#define N_SORT_STORE "STORE may come anywhere among the options, so no position can be given"

/* Commands with no keys have no entry. */
/* clang-format off */
static const struct cmd_keyspecs SPECS[] = {
    /* strings */
    K1("get", RO | AC, IDX(1), RANGE(0, 1, 0))
    K("set", GK_SET, 1, SN(RW | AC | UP | VAR, IDX(1), RANGE(0, 1, 0), N_SET))
    K1("setnx", OW | IN, IDX(1), RANGE(0, 1, 0))
    K1("setex", OW | UP, IDX(1), RANGE(0, 1, 0))
    K1("psetex", OW | UP, IDX(1), RANGE(0, 1, 0))
    K1("mget", RO | AC, IDX(1), RANGE(-1, 1, 0))
    K1("mset", OW | UP, IDX(1), RANGE(-1, 2, 0))
    K1("msetnx", OW | IN, IDX(1), RANGE(-1, 2, 0))
    K1("getset", RW | AC | UP, IDX(1), RANGE(0, 1, 0))
    K1("getdel", RW | AC | DE, IDX(1), RANGE(0, 1, 0))
    K("getex", GK_NONE, 1, SN(RW | AC | UP, IDX(1), RANGE(0, 1, 0), N_GETEX))
    K1("append", RW | IN, IDX(1), RANGE(0, 1, 0))
    K1("strlen", RO, IDX(1), RANGE(0, 1, 0))
    K1("incr", RW | AC | UP, IDX(1), RANGE(0, 1, 0))
    K1("decr", RW | AC | UP, IDX(1), RANGE(0, 1, 0))
    K1("incrby", RW | AC | UP, IDX(1), RANGE(0, 1, 0))
    K1("decrby", RW | AC | UP, IDX(1), RANGE(0, 1, 0))
    K1("incrbyfloat", RW | AC | UP, IDX(1), RANGE(0, 1, 0))
    K1("getrange", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("lcs", RO | AC, IDX(1), RANGE(1, 1, 0))
    K1("substr", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("setrange", RW | UP, IDX(1), RANGE(0, 1, 0))
    /* bitmaps: bit operations on strings */
    K1("setbit", RW | AC | UP, IDX(1), RANGE(0, 1, 0))
    K1("getbit", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("bitcount", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("bitpos", RO | AC, IDX(1), RANGE(0, 1, 0))
    K("bitop", GK_NONE, 2,
      S(OW | UP, IDX(2), RANGE(0, 1, 0)),
      S(RO | AC, IDX(3), RANGE(-1, 1, 0)))
    K("bitfield", GK_BITFIELD, 1, SN(RW | AC | UP | VAR, IDX(1), RANGE(0, 1, 0), N_BITFIELD))
    K1("bitfield_ro", RO | AC, IDX(1), RANGE(0, 1, 0))
    /* HyperLogLog: sketches stored as strings */
    K1("pfadd", RW | IN, IDX(1), RANGE(0, 1, 0))
    K("pfcount", GK_NONE, 1, SN(RW | AC, IDX(1), RANGE(-1, 1, 0), N_PFCOUNT))
    K("pfmerge", GK_NONE, 2,
      S(RW | AC | IN, IDX(1), RANGE(0, 1, 0)),
      S(RO | AC, IDX(2), RANGE(-1, 1, 0)))
    /* geo */
    K1("geoadd", RW | UP, IDX(1), RANGE(0, 1, 0))
    K1("geodist", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("geohash", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("geopos", RO | AC, IDX(1), RANGE(0, 1, 0))
    K("georadius", GK_NONE, 3,
      S(RO | AC, IDX(1), RANGE(0, 1, 0)),
      S(OW | UP, KW("STORE", 6), RANGE(0, 1, 0)),
      S(OW | UP, KW("STOREDIST", 6), RANGE(0, 1, 0)))
    K1("georadius_ro", RO | AC, IDX(1), RANGE(0, 1, 0))
    K("georadiusbymember", GK_NONE, 3,
      S(RO | AC, IDX(1), RANGE(0, 1, 0)),
      S(OW | UP, KW("STORE", 5), RANGE(0, 1, 0)),
      S(OW | UP, KW("STOREDIST", 5), RANGE(0, 1, 0)))
    K1("georadiusbymember_ro", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("geosearch", RO | AC, IDX(1), RANGE(0, 1, 0))
    K("geosearchstore", GK_NONE, 2,
      S(OW | UP, IDX(1), RANGE(0, 1, 0)),
      S(RO | AC, IDX(2), RANGE(0, 1, 0)))
    /* keys */
    K1("del", RM | DE, IDX(1), RANGE(-1, 1, 0))
    K1("unlink", RM | DE, IDX(1), RANGE(-1, 1, 0))
    K1("exists", RO, IDX(1), RANGE(-1, 1, 0))
    K1("touch", RO, IDX(1), RANGE(-1, 1, 0))
    K1("type", RO, IDX(1), RANGE(0, 1, 0))
    K1("expire", RW | UP, IDX(1), RANGE(0, 1, 0))
    K1("pexpire", RW | UP, IDX(1), RANGE(0, 1, 0))
    K1("expireat", RW | UP, IDX(1), RANGE(0, 1, 0))
    K1("pexpireat", RW | UP, IDX(1), RANGE(0, 1, 0))
    K1("expiretime", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("pexpiretime", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("ttl", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("pttl", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("persist", RW | UP, IDX(1), RANGE(0, 1, 0))
    K("rename", GK_NONE, 2,
      S(RW | AC | DE, IDX(1), RANGE(0, 1, 0)),
      S(OW | UP, IDX(2), RANGE(0, 1, 0)))
    K("renamenx", GK_NONE, 2,
      S(RW | AC | DE, IDX(1), RANGE(0, 1, 0)),
      S(OW | IN, IDX(2), RANGE(0, 1, 0)))
    K("copy", GK_NONE, 2,
      S(RO | AC, IDX(1), RANGE(0, 1, 0)),
      S(OW | UP, IDX(2), RANGE(0, 1, 0)))
    K1("move", RW | AC | UP, IDX(1), RANGE(0, 1, 0))
    K1("dump", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("restore", OW | UP, IDX(1), RANGE(0, 1, 0))
    K("migrate", GK_MIGRATE, 2,
      S(RW | AC | DE, IDX(3), RANGE(0, 1, 0)),
      S(RW | AC | DE | INC, KW("KEYS", -2), RANGE(-1, 1, 0)))
    K("sort", GK_SORT, 3,
      S(RO | AC, IDX(1), RANGE(0, 1, 0)),
      SN(RO | AC, BS_UNKNOWN, FK_UNKNOWN, N_SORT_PATTERN),
      SN(OW | UP, BS_UNKNOWN, FK_UNKNOWN, N_SORT_STORE))
    K("sort_ro", GK_SORT_RO, 2,
      S(RO | AC, IDX(1), RANGE(0, 1, 0)),
      SN(RO | AC, BS_UNKNOWN, FK_UNKNOWN, N_SORT_PATTERN))
    /* hashes */
    K1("hset", RW | UP, IDX(1), RANGE(0, 1, 0))
    K1("hmset", RW | UP, IDX(1), RANGE(0, 1, 0))
    K1("hsetnx", RW | IN, IDX(1), RANGE(0, 1, 0))
    K1("hget", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("hmget", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("hgetall", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("hkeys", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("hvals", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("hdel", RW | DE, IDX(1), RANGE(0, 1, 0))
    K1("hlen", RO, IDX(1), RANGE(0, 1, 0))
    K1("hexists", RO, IDX(1), RANGE(0, 1, 0))
    K1("hstrlen", RO, IDX(1), RANGE(0, 1, 0))
    K1("hincrby", RW | AC | UP, IDX(1), RANGE(0, 1, 0))
    K1("hincrbyfloat", RW | AC | UP, IDX(1), RANGE(0, 1, 0))
    K1("hrandfield", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("hscan", RO | AC, IDX(1), RANGE(0, 1, 0))
    /* sets */
    K1("sadd", RW | IN, IDX(1), RANGE(0, 1, 0))
    K1("srem", RW | DE, IDX(1), RANGE(0, 1, 0))
    K1("smembers", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("sismember", RO, IDX(1), RANGE(0, 1, 0))
    K1("smismember", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("scard", RO, IDX(1), RANGE(0, 1, 0))
    K1("spop", RW | AC | DE, IDX(1), RANGE(0, 1, 0))
    K1("srandmember", RO | AC, IDX(1), RANGE(0, 1, 0))
    K("smove", GK_NONE, 2,
      S(RW | AC | DE, IDX(1), RANGE(0, 1, 0)),
      S(RW | IN, IDX(2), RANGE(0, 1, 0)))
    K1("sinter", RO | AC, IDX(1), RANGE(-1, 1, 0))
    K("sintercard", GK_NUMKEYS, 1, S(RO | AC, IDX(1), KEYNUM(0, 1, 1)))
    K("eval", GK_NUMKEYS, 1, SN(RW | AC | UP, IDX(2), KEYNUM(0, 1, 1), N_EVAL))
    K("evalsha", GK_NUMKEYS, 1, S(RW | AC | UP, IDX(2), KEYNUM(0, 1, 1)))
    K("eval_ro", GK_NUMKEYS, 1, SN(RO | AC, IDX(2), KEYNUM(0, 1, 1), N_EVAL_RO))
    K("evalsha_ro", GK_NUMKEYS, 1, S(RO | AC, IDX(2), KEYNUM(0, 1, 1)))
    K("fcall", GK_NUMKEYS, 1, SN(RW | AC | UP, IDX(2), KEYNUM(0, 1, 1), N_FCALL))
    K("fcall_ro", GK_NUMKEYS, 1, SN(RO | AC, IDX(2), KEYNUM(0, 1, 1), N_FCALL_RO))
    K("sinterstore", GK_NONE, 2,
      S(RW | UP, IDX(1), RANGE(0, 1, 0)),
      S(RO | AC, IDX(2), RANGE(-1, 1, 0)))
    K1("sunion", RO | AC, IDX(1), RANGE(-1, 1, 0))
    K("sunionstore", GK_NONE, 2,
      S(OW | UP, IDX(1), RANGE(0, 1, 0)),
      S(RO | AC, IDX(2), RANGE(-1, 1, 0)))
    K1("sdiff", RO | AC, IDX(1), RANGE(-1, 1, 0))
    K("sdiffstore", GK_NONE, 2,
      S(OW | UP, IDX(1), RANGE(0, 1, 0)),
      S(RO | AC, IDX(2), RANGE(-1, 1, 0)))
    K1("sscan", RO | AC, IDX(1), RANGE(0, 1, 0))
    /* sorted sets */
    K1("zadd", RW | UP, IDX(1), RANGE(0, 1, 0))
    K1("zincrby", RW | AC | UP, IDX(1), RANGE(0, 1, 0))
    K1("zrem", RW | DE, IDX(1), RANGE(0, 1, 0))
    K1("zscore", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("zmscore", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("zcard", RO, IDX(1), RANGE(0, 1, 0))
    K1("zcount", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("zlexcount", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("zrange", RO | AC, IDX(1), RANGE(0, 1, 0))
    K("zrangestore", GK_NONE, 2,
      S(OW | UP, IDX(1), RANGE(0, 1, 0)),
      S(RO | AC, IDX(2), RANGE(0, 1, 0)))
    K1("zrangebyscore", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("zrevrangebyscore", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("zrangebylex", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("zrevrangebylex", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("zrevrange", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("zrank", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("zrevrank", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("zremrangebyrank", RW | DE, IDX(1), RANGE(0, 1, 0))
    K1("zremrangebyscore", RW | DE, IDX(1), RANGE(0, 1, 0))
    K1("zremrangebylex", RW | DE, IDX(1), RANGE(0, 1, 0))
    K1("zpopmin", RW | AC | DE, IDX(1), RANGE(0, 1, 0))
    K1("zpopmax", RW | AC | DE, IDX(1), RANGE(0, 1, 0))
    K1("zrandmember", RO | AC, IDX(1), RANGE(0, 1, 0))
    K("zunionstore", GK_NUMKEYS, 2,
      S(OW | UP, IDX(1), RANGE(0, 1, 0)),
      S(RO | AC, IDX(2), KEYNUM(0, 1, 1)))
    K("zinterstore", GK_NUMKEYS, 2,
      S(OW | UP, IDX(1), RANGE(0, 1, 0)),
      S(RO | AC, IDX(2), KEYNUM(0, 1, 1)))
    K("zdiffstore", GK_NUMKEYS, 2,
      S(OW | UP, IDX(1), RANGE(0, 1, 0)),
      S(RO | AC, IDX(2), KEYNUM(0, 1, 1)))
    K("zunion", GK_NUMKEYS, 1, S(RO | AC, IDX(1), KEYNUM(0, 1, 1)))
    K("zinter", GK_NUMKEYS, 1, S(RO | AC, IDX(1), KEYNUM(0, 1, 1)))
    K("zdiff", GK_NUMKEYS, 1, S(RO | AC, IDX(1), KEYNUM(0, 1, 1)))
    K("zintercard", GK_NUMKEYS, 1, S(RO | AC, IDX(1), KEYNUM(0, 1, 1)))
    K("zmpop", GK_NUMKEYS, 1, S(RW | AC | DE, IDX(1), KEYNUM(0, 1, 1)))
    K("bzmpop", GK_NUMKEYS, 1, S(RW | AC | DE, IDX(2), KEYNUM(0, 1, 1)))
    K1("bzpopmin", RW | AC | DE, IDX(1), RANGE(-2, 1, 0))
    K1("bzpopmax", RW | AC | DE, IDX(1), RANGE(-2, 1, 0))
    K1("zscan", RO | AC, IDX(1), RANGE(0, 1, 0))
    /* lists */
    K1("lpush", RW | IN, IDX(1), RANGE(0, 1, 0))
    K1("rpush", RW | IN, IDX(1), RANGE(0, 1, 0))
    K1("lpushx", RW | IN, IDX(1), RANGE(0, 1, 0))
    K1("rpushx", RW | IN, IDX(1), RANGE(0, 1, 0))
    K1("lpop", RW | AC | DE, IDX(1), RANGE(0, 1, 0))
    K1("rpop", RW | AC | DE, IDX(1), RANGE(0, 1, 0))
    K1("llen", RO, IDX(1), RANGE(0, 1, 0))
    K1("lrange", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("lindex", RO | AC, IDX(1), RANGE(0, 1, 0))
    K1("lset", RW | UP, IDX(1), RANGE(0, 1, 0))
    K1("lrem", RW | DE, IDX(1), RANGE(0, 1, 0))
    K1("linsert", RW | IN, IDX(1), RANGE(0, 1, 0))
    K1("ltrim", RW | DE, IDX(1), RANGE(0, 1, 0))
    K1("lpos", RO | AC, IDX(1), RANGE(0, 1, 0))
    K("rpoplpush", GK_NONE, 2,
      S(RW | AC | DE, IDX(1), RANGE(0, 1, 0)),
      S(RW | IN, IDX(2), RANGE(0, 1, 0)))
    K("lmove", GK_NONE, 2,
      S(RW | AC | DE, IDX(1), RANGE(0, 1, 0)),
      S(RW | IN, IDX(2), RANGE(0, 1, 0)))
    K1("blpop", RW | AC | DE, IDX(1), RANGE(-2, 1, 0))
    K1("brpop", RW | AC | DE, IDX(1), RANGE(-2, 1, 0))
    K("blmove", GK_NONE, 2,
      S(RW | AC | DE, IDX(1), RANGE(0, 1, 0)),
      S(RW | IN, IDX(2), RANGE(0, 1, 0)))
    K("brpoplpush", GK_NONE, 2,
      S(RW | AC | DE, IDX(1), RANGE(0, 1, 0)),
      S(RW | IN, IDX(2), RANGE(0, 1, 0)))
    K("lmpop", GK_NUMKEYS, 1, S(RW | AC | DE, IDX(1), KEYNUM(0, 1, 1)))
    K("blmpop", GK_NUMKEYS, 1, S(RW | AC | DE, IDX(2), KEYNUM(0, 1, 1)))
    /* transactions */
    K1("watch", RO, IDX(1), RANGE(-1, 1, 0))
    /* pub/sub */
    K1("ssubscribe", NK, IDX(1), RANGE(-1, 1, 0))
    K1("sunsubscribe", NK, IDX(1), RANGE(-1, 1, 0))
    K1("spublish", NK, IDX(1), RANGE(0, 1, 0))
    /* subcommands */
    K1("memory|usage", RO, IDX(2), RANGE(0, 1, 0))
    K1("object|encoding", RO, IDX(2), RANGE(0, 1, 0))
    K1("object|freq", RO, IDX(2), RANGE(0, 1, 0))
    K1("object|idletime", RO, IDX(2), RANGE(0, 1, 0))
    K1("object|refcount", RO, IDX(2), RANGE(0, 1, 0))
};
/* clang-format on */

#undef RO
#undef RW
#undef OW
#undef RM
#undef AC
#undef UP
#undef IN
#undef DE
#undef NK
#undef INC
#undef VAR

#define NSPECS (sizeof SPECS / sizeof SPECS[0])

const struct cmd_keyspecs *cmd_keyspecs_find(const char *name, size_t n)
{
    for (size_t i = 0; i < NSPECS; i++)
        if (strlen(SPECS[i].name) == n && !strncasecmp(SPECS[i].name, name, n))
            return &SPECS[i];
    return NULL;
}

/* The entry of each command of the table, by its index there: made on
 * first use, so that key tracking finds a command's specs at once. */
static const struct cmd_keyspecs **by_cmd;

const struct cmd_keyspecs *cmd_keyspecs_of(const struct cmd *k)
{
    if (!by_cmd) {
        by_cmd = kv_xcalloc(cmd_count(), sizeof *by_cmd);
        for (size_t i = 0; i < cmd_count(); i++)
            by_cmd[i] = cmd_keyspecs_find(cmd_at(i)->name, strlen(cmd_at(i)->name));
    }
    return by_cmd[k - cmd_at(0)];
}

bool cmd_keyspecs_has_keys(const struct cmd_keyspecs *ks)
{
    for (size_t i = 0; ks && i < ks->n; i++)
        if (!(ks->s[i].flags & CMD_KEY_NOT_KEY))
            return true;
    return false;
}

/* Argument a equals the word w, ignoring case, as Redis compares them: as
 * C strings, so up to a's first NUL byte. */
static bool word_is(const struct db_str *a, const char *w)
{
    size_t n = strnlen(a->p, a->n);
    return n == strlen(w) && !strncasecmp(a->p, w, n);
}

/* The int C makes of v (as gcc does: its low 32 bits, two's complement). */
static int low32(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    return u <= INT32_MAX ? (int)u : (int)(u - (uint32_t)INT32_MAX - 1) + INT32_MIN;
}

/* atoi() of argument a as Redis calls it on a C string: leading spaces and
 * a sign, the digits up to the first other byte, saturated to a long, and
 * that cut to an int's 32 bits. */
static int arg_atoi(const struct db_str *a)
{
    size_t i = 0, n = strnlen(a->p, a->n);
    while (i < n && isspace((unsigned char)a->p[i]))
        i++;
    bool neg = i < n && a->p[i] == '-';
    if (i < n && (a->p[i] == '-' || a->p[i] == '+'))
        i++;
    uint64_t mag = 0, cap = (uint64_t)INT64_MAX + 1; /* past cap: saturated */
    for (; i < n && isdigit((unsigned char)a->p[i]); i++) {
        uint64_t d = (uint64_t)(a->p[i] - '0');
        mag = mag > (cap - d) / 10 ? cap + 1 : mag * 10 + d;
    }
    uint64_t v; /* the long, as two's complement */
    if (neg)
        v = mag >= cap ? cap : 0 - mag;
    else
        v = mag >= cap ? (uint64_t)INT64_MAX : mag;
    return low32(v);
}

/* Where keyword spec s begins its keys: after the first argument equal to
 * its keyword, looked for from startfrom on, short of the last argument
 * (from a negative startfrom: backwards, short of the first); 0 when none
 * is. */
static long keyword_find(const struct keyspec *s, const struct db_str *argv, long argc)
{
    long start = s->pos > 0 ? s->pos : argc + s->pos;
    long end = s->pos > 0 ? argc - 1 : 1;
    for (long i = start; i != end; i += start <= end ? 1 : -1) {
        if (i >= argc || i < 1)
            break;
        if (word_is(&argv[i], s->keyword))
            return i + 1;
    }
    return 0;
}

/* The keys by the specs alone, as Redis's getKeysUsingKeySpecs finds them:
 * their count, or -1 when a spec cannot tell (unknown, incomplete, or a
 * numkeys that is not a count within the arguments). Shard channels (not
 * keys) are skipped; a keyword that is not there gives no keys. */
static int by_specs(const struct cmd_keyspecs *ks, const struct db_str *argv, long argc,
                    struct cmd_keyref *out)
{
    int n = 0;
    for (size_t j = 0; j < ks->n; j++) {
        const struct keyspec *s = &ks->s[j];
        if (s->flags & CMD_KEY_NOT_KEY)
            continue;
        long first, last, step;
        if (s->begin == BEGIN_INDEX) {
            first = s->pos;
        } else if (s->begin == BEGIN_KEYWORD) {
            first = keyword_find(s, argv, argc);
            if (!first)
                continue;
        } else {
            return -1;
        }
        if (s->find == FIND_RANGE) {
            step = s->b;
            if (s->a >= 0)
                last = first + s->a;
            else if (!s->c)
                last = argc + s->a;
            else
                last = first + ((argc - first) / s->c + s->a);
        } else if (s->find == FIND_KEYNUM) {
            step = s->c;
            int64_t num;
            if (first + s->a >= argc ||
                kv_str2ll(argv[first + s->a].p, argv[first + s->a].n, &num) || num < 0)
                return -1;
            first += s->b;
            last = first + low32((uint64_t)num) - 1; /* Redis counts in an int */
        } else {
            return -1;
        }
        if (last >= argc || last < first || first >= argc)
            return -1;
        for (long i = first; i <= last; i += step)
            out[n++] = (struct cmd_keyref){(size_t)i, s->flags};
        if (s->flags & CMD_KEY_INCOMPLETE)
            return -1;
    }
    return n;
}

/* "[destination] numkeys key ... [options]" (ZUNIONSTORE, LMPOP, ...),
 * as Redis's procedure reads it: numkeys through atoi(), the keys without
 * flags, the destination last. None when numkeys is below 1 or more than
 * the arguments left. */
static int by_numkeys(const struct cmd_keyspecs *ks, const struct db_str *argv, long argc,
                      struct cmd_keyref *out)
{
    const struct keyspec *s = &ks->s[ks->n - 1]; /* the keynum spec */
    long count = s->pos + s->a, first = s->pos + s->b, step = s->c;
    long store = ks->n > 1 ? ks->s[0].pos : 0;
    int num = arg_atoi(&argv[count]);
    if (num < 1 || num > (argc - first) / step)
        return 0;
    int n = 0;
    for (long i = 0; i < num; i++)
        out[n++] = (struct cmd_keyref){(size_t)(first + i * step), 0};
    if (store)
        out[n++] = (struct cmd_keyref){(size_t)store, 0};
    return n;
}

/* SORT: its key, and the last STORE's, skipping LIMIT's, GET's and BY's
 * arguments as Redis's procedure does (a STORE's own argument is not). */
static int by_sort(const struct db_str *argv, long argc, struct cmd_keyref *out)
{
    long store = 0;
    for (long i = 2; i < argc; i++) {
        if (word_is(&argv[i], "limit"))
            i += 2;
        else if (word_is(&argv[i], "store") && i + 1 < argc)
            store = i + 1;
        else if (word_is(&argv[i], "get") || word_is(&argv[i], "by"))
            i += 1;
    }
    out[0] = (struct cmd_keyref){1, CMD_KEY_RO | CMD_KEY_ACCESS};
    if (!store)
        return 1;
    out[1] = (struct cmd_keyref){(size_t)store, CMD_KEY_OW | CMD_KEY_UPDATE};
    return 2;
}

/* MIGRATE: its key (the empty one too), or those after KEYS, found among
 * the options from the sixth on; none when KEYS follows a key that is not
 * empty (the command's syntax error). */
static int by_migrate(const struct db_str *argv, long argc, struct cmd_keyref *out)
{
    long first = 3, num = 1;
    for (long i = 6; i < argc; i++) {
        if (word_is(&argv[i], "keys")) {
            if (argv[3].n) {
                num = 0;
            } else {
                first = i + 1;
                num = argc - first;
            }
            break;
        }
        if (word_is(&argv[i], "auth"))
            i += 1;
        else if (word_is(&argv[i], "auth2"))
            i += 2;
    }
    for (long i = 0; i < num; i++)
        out[i] =
            (struct cmd_keyref){(size_t)(first + i), CMD_KEY_RW | CMD_KEY_ACCESS | CMD_KEY_DELETE};
    return (int)num;
}

/* SET: read as well when a GET comes among the options. */
static int by_set(const struct db_str *argv, long argc, struct cmd_keyref *out)
{
    uint32_t flags = CMD_KEY_OW | CMD_KEY_UPDATE;
    for (long i = 3; i < argc; i++)
        if (word_is(&argv[i], "get"))
            flags = CMD_KEY_RW | CMD_KEY_ACCESS | CMD_KEY_UPDATE;
    out[0] = (struct cmd_keyref){1, flags};
    return 1;
}

/* BITFIELD: only read while its operations are whole GETs and OVERFLOWs;
 * a SET or INCRBY, or anything else, makes it a write. */
static int by_bitfield(const struct db_str *argv, long argc, struct cmd_keyref *out)
{
    bool readonly = true;
    for (long i = 2; i < argc && readonly; i++) {
        long left = argc - i - 1;
        if (word_is(&argv[i], "get") && left >= 2)
            i += 2;
        else if (word_is(&argv[i], "overflow") && left >= 1)
            i += 1;
        else
            readonly = false;
    }
    out[0] = (struct cmd_keyref){1, readonly ? CMD_KEY_RO | CMD_KEY_ACCESS
                                             : CMD_KEY_RW | CMD_KEY_ACCESS | CMD_KEY_UPDATE};
    return 1;
}

int cmd_keyspecs_keys(const struct cmd_keyspecs *ks, const struct db_str *argv, size_t argc,
                      struct cmd_keyref *out)
{
    if (!ks)
        return 0;
    bool variable = false;
    for (size_t i = 0; i < ks->n; i++)
        variable |= (ks->s[i].flags & CMD_KEY_VARIABLE_FLAGS) != 0;
    long n = (long)argc;
    if (cmd_keyspecs_has_keys(ks) && !variable) {
        int found = by_specs(ks, argv, n, out);
        if (found >= 0)
            return found;
    }
    switch (ks->getkeys) {
    case GK_NUMKEYS:
        return by_numkeys(ks, argv, n, out);
    case GK_SORT:
        return by_sort(argv, n, out);
    case GK_SORT_RO:
        out[0] = (struct cmd_keyref){1, CMD_KEY_RO | CMD_KEY_ACCESS};
        return 1;
    case GK_MIGRATE:
        return by_migrate(argv, n, out);
    case GK_SET:
        return by_set(argv, n, out);
    case GK_BITFIELD:
        return by_bitfield(argv, n, out);
    default:
        return 0;
    }
}

/* ---- COMMAND INFO ---- */

void cmd_keyflags_reply(struct conn *c, uint32_t flags)
{
    static const char *const names[] = {
        "RO",     "RW",     "OW",      "RM",         "access",        "update",
        "insert", "delete", "not_key", "incomplete", "variable_flags"};
    size_t n = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        n += (flags >> i) & 1;
    resp_set(OUT(c), n, c->proto);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((flags >> i) & 1)
            resp_simple(OUT(c), names[i]);
}

/* "name" => int, the fields of a spec's step. */
static void int_field(struct conn *c, const char *name, int v)
{
    resp_bulk_cstr(OUT(c), name);
    resp_int(OUT(c), v);
}

static void reply_spec(struct conn *c, const struct keyspec *s)
{
    resp_map(OUT(c), 3 + (s->notes != NULL), c->proto);
    if (s->notes) {
        resp_bulk_cstr(OUT(c), "notes");
        resp_bulk_cstr(OUT(c), s->notes);
    }
    resp_bulk_cstr(OUT(c), "flags");
    cmd_keyflags_reply(c, s->flags);
    static const char *const bs_types[] = {"index", "keyword", "unknown"};
    resp_bulk_cstr(OUT(c), "begin_search");
    resp_map(OUT(c), 2, c->proto);
    resp_bulk_cstr(OUT(c), "type");
    resp_bulk_cstr(OUT(c), bs_types[s->begin]);
    resp_bulk_cstr(OUT(c), "spec");
    if (s->begin == BEGIN_INDEX) {
        resp_map(OUT(c), 1, c->proto);
        int_field(c, "index", s->pos);
    } else if (s->begin == BEGIN_KEYWORD) {
        resp_map(OUT(c), 2, c->proto);
        resp_bulk_cstr(OUT(c), "keyword");
        resp_bulk_cstr(OUT(c), s->keyword);
        int_field(c, "startfrom", s->pos);
    } else {
        resp_map(OUT(c), 0, c->proto);
    }
    static const char *const fk_types[] = {"range", "keynum", "unknown"};
    resp_bulk_cstr(OUT(c), "find_keys");
    resp_map(OUT(c), 2, c->proto);
    resp_bulk_cstr(OUT(c), "type");
    resp_bulk_cstr(OUT(c), fk_types[s->find]);
    resp_bulk_cstr(OUT(c), "spec");
    if (s->find == FIND_RANGE) {
        resp_map(OUT(c), 3, c->proto);
        int_field(c, "lastkey", s->a);
        int_field(c, "keystep", s->b);
        int_field(c, "limit", s->c);
    } else if (s->find == FIND_KEYNUM) {
        resp_map(OUT(c), 3, c->proto);
        int_field(c, "keynumidx", s->a);
        int_field(c, "firstkey", s->b);
        int_field(c, "keystep", s->c);
    } else {
        resp_map(OUT(c), 0, c->proto);
    }
}

void cmd_keyspecs_reply(struct conn *c, const struct cmd_keyspecs *ks)
{
    size_t n = ks ? ks->n : 0;
    resp_set(OUT(c), n, c->proto);
    for (size_t i = 0; i < n; i++)
        reply_spec(c, &ks->s[i]);
}
