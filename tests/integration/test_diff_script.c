/*
 * test_diff_script — Lua scripting against Debian's redis-server: EVAL and
 * its family, SCRIPT, the sandbox, the redis library, and the conversions
 * between Lua values and replies in RESP2 and RESP3; FUNCTION's libraries
 * and FCALL, and FUNCTION DUMP's payloads restored across the two
 * servers; reply for reply.
 */
#include "diff_fixture.h"

#include <stdarg.h>

/* A command line: words separated by '\x1f' (scripts hold spaces). */
static redisReply *run_words(redisContext *c, const char *line)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", line);
    const char *argv[32];
    size_t lens[32];
    int argc = 0;
    for (char *p = buf, *q; p && argc < 32; p = q) {
        q = strchr(p, '\x1f');
        if (q)
            *q++ = '\0';
        argv[argc] = p;
        lens[argc++] = strlen(p);
    }
    return redisCommandArgv(c, argc, argv, lens);
}

#define W "\x1f"

/* The same data, and no script loaded, on both servers. */
static void both_setup(void)
{
    static const char *const setup[] = {
        "FLUSHALL",   "SCRIPT FLUSH",     "FUNCTION FLUSH", "SET s x",
        "HSET h f v", "ZADD z 1.5 a 2 b", "SADD st m",
    };
    for (size_t i = 0; i < sizeof setup / sizeof setup[0]; i++) {
        freeReplyObject(redisCommand(cr, setup[i]));
        freeReplyObject(redisCommand(ck, setup[i]));
    }
}

/* EVAL lines: every reply of redis-server's and shmkvd's the same. */
static const char *const EVALS[] = {
    /* Lua → reply */
    "EVAL" W "return 1" W "0",
    "EVAL" W "return 1.9" W "0",
    "EVAL" W "return -2.5" W "0",
    "EVAL" W "return 'a'" W "0",
    "EVAL" W "return true" W "0",
    "EVAL" W "return false" W "0",
    "EVAL" W "return nil" W "0",
    "EVAL" W "return {1,2,{3,'x'},nil,5}" W "0",
    "EVAL" W "return {ok='fine'}" W "0",
    "EVAL" W "return {err='bad thing'}" W "0",
    "EVAL" W "return {err='-E bad'}" W "0",
    "EVAL" W "return {1.5, 2.7}" W "0",
    "EVAL" W "local t = {} t[1]=1 t[3]=3 return t" W "0",
    "EVAL" W "return {double=3.5}" W "0",
    "EVAL" W "return {map={a=1}}" W "0",
    "EVAL" W "return {set={a=true}}" W "0",
    "EVAL" W "return {big_number='123456789012345678901234567890'}" W "0",
    "EVAL" W "return 2^70" W "0",
    "EVAL" W "return -2^70" W "0",
    "EVAL" W "return 0/0" W "0",
    "EVAL" W "return {ok='a\r\nb'}" W "0",
    /* replies → Lua */
    "EVAL" W "return redis.call('get',KEYS[1])" W "1" W "s",
    "EVAL" W "return redis.call('get','nokey')" W "0",
    "EVAL" W "return {1,redis.call('get','nokey'),3}" W "0",
    "EVAL" W "return type(redis.call('get','nokey'))" W "0",
    "EVAL" W "return redis.call('hgetall','h')" W "0",
    "EVAL" W "return redis.call('hgetall','nokey')" W "0",
    "EVAL" W "return redis.call('ping')" W "0",
    "EVAL" W "return redis.call('ping').ok" W "0",
    "EVAL" W "return redis.call('incrby','n',5)" W "0",
    "EVAL" W "return redis.call('set','f',0.1)" W "0",
    "EVAL" W "return redis.call('get','f')" W "0",
    "EVAL" W "return redis.call('set','f',3)" W "0",
    "EVAL" W "return redis.call('get','f')" W "0",
    "EVAL" W "return redis.call('zrange','z',0,-1,'withscores')" W "0",
    "EVAL" W "return redis.pcall('incr','s')" W "0",
    "EVAL" W "local r = redis.pcall('incr','s') return r.err" W "0",
    "EVAL" W "redis.setresp(3) return redis.call('hgetall','h')" W "0",
    "EVAL" W "redis.setresp(3) local r = redis.call('hgetall','h') return r.map.f" W "0",
    "EVAL" W "redis.setresp(3) return redis.call('zscore','z','a')" W "0",
    "EVAL" W "redis.setresp(3) return type(redis.call('get','nokey'))" W "0",
    "EVAL" W "redis.setresp(3) return redis.call('smembers','st')" W "0",
    /* errors */
    "EVAL" W "return redis.call('incr','s')" W "0",
    "EVAL" W "return redis.call('nosuch')" W "0",
    "EVAL" W "return redis.pcall('nosuch')" W "0",
    "EVAL" W "return redis.call('get')" W "0",
    "EVAL" W "return redis.call()" W "0",
    "EVAL" W "return redis.call(1)" W "0",
    "EVAL" W "return redis.call('set','a',{})" W "0",
    "EVAL" W "return redis.call('multi')" W "0",
    "EVAL" W "return redis.call('blpop','q',0)" W "0",
    "EVAL" W "return redis.call('eval','return 1',0)" W "0",
    "EVAL" W "return redis.call('client','list')" W "0",
    "EVAL" W "error('boom')" W "0",
    "EVAL" W "error({err='X boom'})" W "0",
    "EVAL" W "\n\nerror('on line three')" W "0",
    "EVAL" W "local x = nil + 1" W "0",
    "EVAL" W "return 'x' .. " W "0",
    "EVAL" W "return redis.error_reply('E1 custom')" W "0",
    "EVAL" W "return redis.error_reply('custom')" W "0",
    "EVAL" W "return redis.error_reply('-E2 dash')" W "0",
    "EVAL" W "return redis.status_reply('PONG2')" W "0",
    "EVAL" W "return redis.setresp(4)" W "0",
    /* the sandbox */
    "EVAL" W "return x" W "0",
    "EVAL" W "y = 1" W "0",
    "EVAL" W "rawset(_G, 'x', 1) return 1" W "0",
    "EVAL" W "string.x = 1" W "0",
    "EVAL" W "return _G.nosuch" W "0",
    "EVAL" W "return os" W "0",
    "EVAL" W "return type(io)" W "0",
    "EVAL" W "return type(print)" W "0",
    "EVAL" W "return type(setfenv)" W "0",
    "EVAL" W "return type(loadstring)" W "0",
    "EVAL" W "return loadstring('return 1')()" W "0",
    "EVAL" W "return loadstring(string.dump(function() return 1 end))" W "0",
    "EVAL" W "local f, e = loadstring(string.dump(function() return 1 end)) return e" W "0",
    "EVAL" W "return _VERSION" W "0",
    "EVAL" W "return tostring(1/3)" W "0",
    /* libraries */
    "EVAL" W "return cjson.encode({1,2,{a=3}})" W "0",
    "EVAL" W "return cjson.decode('[1,2,{\"a\":3}]')[3].a" W "0",
    "EVAL" W "return bit.band(7,3)" W "0",
    "EVAL" W "return bit.tohex(255)" W "0",
    "EVAL" W "return cmsgpack.pack({1,2,3}, 'a', 1.5)" W "0",
    "EVAL" W "return cmsgpack.unpack(cmsgpack.pack({1,{a=2}}))[2].a" W "0",
    "EVAL" W "return struct.pack('>I2', 258)" W "0",
    "EVAL" W "return struct.unpack('<i4', struct.pack('<i4', -5))" W "0",
    "EVAL" W "cmsgpack.x = 1" W "0",
    "EVAL" W "return redis.sha1hex('')" W "0",
    "EVAL" W "return redis.sha1hex('abc')" W "0",
    "EVAL" W "return tostring(redis.REDIS_VERSION_NUM)" W "0",
    "EVAL" W "return redis.REDIS_VERSION" W "0",
    "EVAL" W "return redis.LOG_WARNING" W "0",
    "EVAL" W "return redis.REPL_ALL" W "0",
    "EVAL" W "return redis.log(redis.LOG_WARNING,'from a script')" W "0",
    "EVAL" W "redis.set_repl(redis.REPL_ALL) return 1" W "0",
    "EVAL" W "return redis.replicate_commands()" W "0",
    "EVAL" W "return table.getn({1,2})" W "0",
    "EVAL" W "return string.format('%.3f', 1/3)" W "0",
    "EVAL" W "return table.concat({'a','b'}, '-')" W "0",
    /* KEYS, ARGV, numkeys */
    "EVAL" W "return {KEYS[1], ARGV[1], #KEYS, #ARGV}" W "2" W "a" W "b" W "c",
    "EVAL" W "return #KEYS" W "0",
    "EVAL" W "return 1" W "-1",
    "EVAL" W "return 1" W "3" W "a",
    "EVAL" W "return 1" W "x",
    "EVAL" W "return 1",
    /* writes and read-only scripts */
    "EVAL" W "redis.call('set',KEYS[1],ARGV[1]) return redis.call('get',KEYS[1])" W "1" W "w" W "v",
    "EVAL_RO" W "return redis.call('get','s')" W "0",
    "EVAL_RO" W "return redis.call('set','a',1)" W "0",
    "EVAL_RO" W "return redis.pcall('set','a',1)" W "0",
    /* SELECT holds for the script's later calls, not for its caller */
    "EVAL" W
    "redis.call('select','2') redis.call('set','sel','in2') return redis.call('get','sel')" W "0",
    "GET" W "sel",
    "EVAL" W "return redis.call('get','sel')" W "0",
    "EVAL" W "redis.call('select','2') return redis.call('get','sel')" W "0",
    "EVAL" W "redis.call('select','2') redis.call('select','0') return redis.call('get','sel')" W
    "0",
    "EVAL" W "redis.call('select','2') return redis.call('del','sel')" W "0",
    /* ... and a script's SWAPDB leaves it on its number, with the other data */
    "EVAL" W "redis.call('select','3') redis.call('set','sw','in3') return 1" W "0",
    "EVAL" W "redis.call('select','4') redis.call('swapdb','3','4') return redis.call('get','sw')" W
    "0",
    "EVAL" W "redis.call('select','4') redis.call('swapdb','3','4') return redis.call('get','sw')" W
    "0",
    "EVAL" W "redis.call('select','3') return redis.call('del','sw')" W "0",
    /* the cache */
    "EVALSHA" W "ffffffffffffffffffffffffffffffffffffffff" W "0",
    "EVALSHA" W "abc" W "0",
    "SCRIPT" W "LOAD" W "return 'loaded'",
    "EVALSHA" W "b534286061d4b9e4026607613b95c06c06015ae8" W "0",
    "EVALSHA" W "B534286061D4B9E4026607613B95C06C06015AE8" W "0",
    "EVALSHA_RO" W "b534286061d4b9e4026607613b95c06c06015ae8" W "0",
    "SCRIPT" W "EXISTS" W "b534286061d4b9e4026607613b95c06c06015ae8" W "ffff",
    "SCRIPT" W "LOAD" W "return 'x' ..",
    "SCRIPT" W "FLUSH" W "x",
    "SCRIPT" W "FLUSH" W "ASYNC",
    "SCRIPT" W "EXISTS" W "b534286061d4b9e4026607613b95c06c06015ae8",
    "EVALSHA" W "b534286061d4b9e4026607613b95c06c06015ae8" W "0",
    "SCRIPT" W "FLUSH",
    "SCRIPT" W "NOSUCH",
    "SCRIPT",
    /* a transaction around a script, and a script's effects */
    "MULTI",
    "EVAL" W "return redis.call('incr','cnt')" W "0",
    "EVAL" W "return redis.call('incr','cnt')" W "0",
    "EXEC",
    "GET" W "cnt",
    "EVAL" W "redis.call('del','cnt') return redis.call('exists','cnt')" W "0",
};

/* Runs lines on both servers, in order; fails on the first replies that
 * differ, naming them all. */
static void run_both(const char *const *lines, size_t n)
{
    char fails[8192] = "";
    size_t fu = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *a = run_words(cr, lines[i]), *b = run_words(ck, lines[i]);
        char ta[1024], tb[1024];
        if (!same(a, b) && fu < sizeof fails - 2200) {
            char shown[200];
            snprintf(shown, sizeof shown, "%s", lines[i]);
            for (char *p = shown; *p; p++)
                if (*p == '\x1f')
                    *p = ' ';
                else if (*p == '\n')
                    *p = '|';
            fu += (size_t)snprintf(fails + fu, sizeof fails - fu, "\n  %s: redis %s, shmkvd %s",
                                   shown, show(a, ta, sizeof ta), show(b, tb, sizeof tb));
        }
        freeReplyObject(a);
        freeReplyObject(b);
    }
    if (fu)
        fail_msg("replies differ:%s", fails);
}

static void test_diff_eval(void **state)
{
    (void)state;
    both_setup();
    run_both(EVALS, sizeof EVALS / sizeof EVALS[0]);
    printf("test_diff: %zu scripting commands answered as redis-server answers them\n",
           sizeof EVALS / sizeof EVALS[0]);
}

#define LIB(name) "#!lua name=" name "\n"

/* FUNCTION and FCALL lines, in order: each library's functions are one,
 * or FUNCTION LIST would list them in each server's own hash order. */
static const char *const FUNCS[] = {
    /* the preamble */
    "FUNCTION" W "LOAD" W "return 1",
    "FUNCTION" W "LOAD" W "#!lua\nreturn 1",
    "FUNCTION" W "LOAD" W LIB("x") "return 1",
    "FUNCTION" W "LOAD" W "#!py name=x\n",
    "FUNCTION" W "LOAD" W "#!lua name=x foo=bar\n",
    "FUNCTION" W "LOAD" W "#!lua name=x name=y\n",
    "FUNCTION" W "LOAD" W "#!lua name=a-b\n",
    "FUNCTION" W "LOAD" W "#!LUA NAME=up\nredis.register_function('up', function() return 1 end)",
    /* register_function's forms and errors */
    "FUNCTION" W "LOAD" W LIB("lw") "redis.register_function('set1', function(keys, args) return "
                                    "redis.call('set', keys[1], "
                                    "args[1]) end)",
    "FUNCTION" W "LOAD" W LIB(
        "lr") "redis.register_function{function_name='get1', callback=function(keys, args) return "
              "redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads a key'}",
    "FUNCTION" W "LOAD" W LIB("lw") "redis.register_function('x', function() return 1 end)",
    "FUNCTION" W "LOAD" W LIB("lz") "redis.register_function('set1', function() return 1 end)",
    "FUNCTION" W "LOAD" W LIB("e1") "redis.register_function('f-1', function() return 1 end)",
    "FUNCTION" W "LOAD" W LIB("e1") "redis.register_function('g', function() end) "
                                    "redis.register_function('g', function() end)",
    "FUNCTION" W "LOAD" W LIB(
        "e1") "redis.register_function{function_name='g', callback=function() end, flags={'bad'}}",
    "FUNCTION" W
    "LOAD" W LIB("e1") "redis.register_function{function_name='g', callback=function() end, foo=1}",
    "FUNCTION" W "LOAD" W LIB("e1") "redis.register_function{'g', function() end}",
    "FUNCTION" W "LOAD" W LIB("e1") "redis.register_function()",
    "FUNCTION" W "LOAD" W LIB("e1") "redis.register_function('g')",
    "FUNCTION" W "LOAD" W LIB("e1") "redis.register_function('g', 1)",
    "FUNCTION" W "LOAD" W LIB("e1") "redis.register_function('g', function() end, 3)",
    "FUNCTION" W "LOAD" W LIB("e1") "redis.register_function{callback=function() end}",
    "FUNCTION" W "LOAD" W LIB("e1") "redis.register_function{function_name='g'}",
    "FUNCTION" W "LOAD" W LIB("e1") "redis.register_function{function_name='g', callback=1}",
    "FUNCTION" W "LOAD" W LIB(
        "e1") "redis.register_function{function_name='g', callback=function() end, flags=1}",
    /* what a library's code sees: only its API */
    "FUNCTION" W "LOAD" W LIB("e1") "redis.call('ping')",
    "FUNCTION" W "LOAD" W LIB("e1") "x = 1",
    "FUNCTION" W "LOAD" W LIB("e1") "local t = type",
    "FUNCTION" W "LOAD" W LIB("e1") "local t = string",
    "FUNCTION" W "LOAD" W LIB("e1") "error('boom')",
    "FUNCTION" W "LOAD" W LIB("e1") "local x = ",
    "FUNCTION" W "LOAD" W LIB("e1") "while true do end",
    "FUNCTION" W "LOAD" W LIB("e1") "local x = 1",
    "FUNCTION" W "LOAD" W LIB(
        "lg") "redis.log(redis.LOG_NOTICE, 'loading', redis.REDIS_VERSION) "
              "redis.register_function('ver', function() return redis.REDIS_VERSION_NUM end)",
    /* calls */
    "FCALL" W "set1" W "1" W "k" W "v",
    "FCALL" W "get1" W "1" W "k",
    "FCALL" W "GET1" W "1" W "k",
    "FCALL_RO" W "set1" W "1" W "k" W "v",
    "FCALL_RO" W "get1" W "1" W "k",
    "FCALL" W "nope" W "0",
    "FCALL" W "get1" W "x",
    "FCALL" W "get1" W "5" W "k",
    "FCALL" W "get1" W "-1",
    "FCALL" W "ver" W "0",
    "FUNCTION" W "LOAD" W "REPLACE" W LIB(
        "lw") "redis.register_function{function_name='w2', callback=function(keys) return "
              "redis.call('set', keys[1], 'x') end, flags={'no-writes', 'allow-oom'}}",
    "FCALL" W "w2" W "1" W "k",
    "FCALL" W "set1" W "1" W "k" W "v",
    "FUNCTION" W "LOAD" W LIB("rt") "redis.register_function('rt', function(keys, args) "
                                    "return {#keys, #args, keys[1], args[2], type(KEYS)} end)",
    "FCALL" W "rt" W "2" W "a" W "b" W "c" W "d",
    "FUNCTION" W "LOAD" W LIB(
        "gl") "redis.register_function('gl', function() local r = {} for k in pairs(_G) do "
              "r[#r + 1] = k end table.sort(r) return r end)",
    "FCALL" W "gl" W "0",
    "FUNCTION" W "LOAD" W LIB("wr") "redis.register_function('wr', function() y = 1 end)",
    "FCALL" W "wr" W "0",
    "FUNCTION" W
    "LOAD" W LIB("er") "redis.register_function('er', function() return redis.call('nosuch') end)",
    "FCALL" W "er" W "0",
    "FUNCTION" W "LOAD" W LIB(
        "pe") "redis.register_function('pe', function() return redis.pcall('incr', 's') end)",
    "FCALL" W "pe" W "0",
    /* the libraries */
    "FUNCTION" W "LIST" W "LIBRARYNAME" W "lr",
    "FUNCTION" W "LIST" W "WITHCODE" W "LIBRARYNAME" W "l[w]",
    "FUNCTION" W "LIST" W "LIBRARYNAME",
    "FUNCTION" W "LIST" W "foo",
    "FUNCTION" W "LIST" W "WITHCODE" W "WITHCODE",
    "FUNCTION" W "LIST" W "LIBRARYNAME" W "a" W "LIBRARYNAME" W "b",
    "FUNCTION" W "STATS",
    "FUNCTION" W "KILL",
    "SCRIPT" W "KILL",
    "FUNCTION" W "DELETE" W "nope",
    "FUNCTION" W "DELETE" W "gl",
    "FCALL" W "gl" W "0",
    "FUNCTION" W "FLUSH" W "x",
    "FUNCTION" W "FLUSH" W "ASYNC" W "x",
    "FUNCTION" W "RESTORE" W "abc",
    "FUNCTION" W "RESTORE" W "abc" W "bogus",
    "FUNCTION" W "RESTORE" W "abc" W "FLUSH" W "x",
    "FUNCTION" W "STATS",
    "FUNCTION" W "FLUSH" W "SYNC",
    "FUNCTION" W "LIST",
    "FUNCTION" W "STATS",
    /* EVAL's shebang */
    "EVAL" W "#!lua flags=no-writes\nreturn redis.call('set','a','b')" W "0",
    "EVAL" W "#!lua\nreturn 1" W "0",
    "EVAL" W "#!lua flags=bad\nreturn 1" W "0",
    "EVAL" W "#!lua x=1\nreturn 1" W "0",
    "EVAL" W "#!py\nreturn 1" W "0",
    "EVAL" W "#!LUA\nreturn 1" W "0",
    "EVAL" W "#!lua name=x\nreturn 1" W "0",
    "EVAL" W "#!lua flags=\nreturn 2" W "0",
    "EVAL" W "#!lua flags=no-writes,\nreturn 2" W "0",
    "EVAL" W "#!lua flags=no-writes,allow-oom\nreturn KEYS[1]" W "1" W "k",
    "EVAL" W "#!lua\nreturn error('x')" W "0",
    "EVAL_RO" W "#!lua\nreturn 1" W "0",
    "EVAL_RO" W "#!lua flags=no-writes\nreturn 1" W "0",
    "EVAL_RO" W "return 1" W "0", /* no shebang, among scripts with one */
    "EVAL" W "return redis.call('fcall', 'get1', '0')" W "0",
    "EVAL" W "return redis.call('function', 'list')" W "0",
    "EVAL" W "return redis.call('function', 'help')[1]" W "0",
    "EVAL" W "return redis.call('script', 'help')[1]" W "0",
    "EVAL" W "return redis.call('script', 'load', 'return 1')" W "0",
    "EVAL" W "return getmetatable('').__index.upper == nil" W "0",
    "EVAL" W "getmetatable('').__index = nil" W "0",
    "EVAL" W "local n = 0 for k in pairs(redis) do n = n + 1 end return n > 10" W "0",
    "EVAL" W "return rawget(_G, 'KEYS')[1]" W "1" W "k",
};

static void test_diff_function(void **state)
{
    (void)state;
    both_setup();
    run_both(FUNCS, sizeof FUNCS / sizeof FUNCS[0]);
    printf("test_diff: %zu FUNCTION, FCALL and shebang lines answered as redis-server answers\n",
           sizeof FUNCS / sizeof FUNCS[0]);
}

/* FUNCTION DUMP of one server restored into the other, both ways, under
 * each policy: the same functions answer on both. */
static void test_diff_function_dump_restore(void **state)
{
    (void)state;
    both_setup();
    static const char *const libs[] = {
        LIB("da") "redis.register_function('fa', function(keys, args) return {keys[1], "
                  "args[1], 'a'} end)",
        /* long enough for redis-server to compress it (LZF) */
        LIB("db") "redis.register_function{function_name='fb', callback=function(keys, args) "
                  "local t = {} for i = 1, 10 do t[i] = 'padding padding padding ' .. i end "
                  "return #table.concat(t) end, flags={'no-writes'}, description='bbbbbbbbbbbb'}",
    };
    for (int way = 0; way < 2; way++) {
        redisContext *from = way ? ck : cr, *to = way ? cr : ck;
        freeReplyObject(redisCommand(from, "FUNCTION FLUSH"));
        freeReplyObject(redisCommand(to, "FUNCTION FLUSH"));
        for (size_t i = 0; i < 2; i++)
            freeReplyObject(redisCommand(from, "FUNCTION LOAD %s", libs[i]));
        redisReply *d = redisCommand(from, "FUNCTION DUMP");
        assert_int_equal(d->type, REDIS_REPLY_STRING);
        h_expect_status(to, "OK", "FUNCTION RESTORE %b", d->str, d->len);
        h_expect_err(to, "ERR Library", "FUNCTION RESTORE %b APPEND", d->str, d->len);
        h_expect_status(to, "OK", "FUNCTION RESTORE %b REPLACE", d->str, d->len);
        h_expect_status(to, "OK", "FUNCTION RESTORE %b FLUSH", d->str, d->len);
        /* a payload cut or changed: its checksum says so */
        h_expect_err(to, "ERR DUMP payload version or checksum are wrong", "FUNCTION RESTORE %b",
                     d->str, d->len - 1);
        freeReplyObject(d);
        static const char *const calls[] = {
            "FCALL" W "fa" W "1" W "k" W "v", "FCALL_RO" W "fb" W "0",
            "FUNCTION" W "LIST" W "LIBRARYNAME" W "db",
            "FUNCTION" W "LIST" W "WITHCODE" W "LIBRARYNAME" W "da", "FUNCTION" W "STATS"};
        run_both(calls, sizeof calls / sizeof calls[0]);
    }
}

/* The same conversions to a RESP3 client, byte for byte. */
static void test_diff_eval_resp3(void **state)
{
    (void)state;
    both_setup();
    static const char *const lines[] = {
        "EVAL" W "return true" W "0",
        "EVAL" W "return false" W "0",
        "EVAL" W "return nil" W "0",
        "EVAL" W "return {double=3.5}" W "0",
        "EVAL" W "return {map={a=1}}" W "0",
        "EVAL" W "return {set={a=true}}" W "0",
        "EVAL" W "return {big_number='123456789012345678901234567890'}" W "0",
        "EVAL" W "redis.setresp(3) return redis.call('hgetall','h')" W "0",
        "EVAL" W "redis.setresp(3) return redis.call('smembers','st')" W "0",
        "EVAL" W "redis.setresp(3) return redis.call('zscore','z','a')" W "0",
        "EVAL" W "redis.setresp(3) return redis.call('get','nokey')" W "0",
        "EVAL" W "return redis.call('get','nokey')" W "0",
        "EVAL" W "return redis.call('hgetall','h')" W "0",
        "EVAL" W "return {1,2,{ok='x'}}" W "0",
    };
    int fr = r3_connect(R.port), fk = r3_connect(K.port);
    size_t n;
    free(r3_call_words(fr, "HELLO" W "3", W, &n));
    free(r3_call_words(fk, "HELLO" W "3", W, &n));
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        size_t na, nb;
        char *a = r3_call_words(fr, lines[i], W, &na), *b = r3_call_words(fk, lines[i], W, &nb);
        if (na != nb || memcmp(a, b, na))
            fail_msg("RESP3 %s: redis %.*s, shmkvd %.*s", lines[i], (int)na, a, (int)nb, b);
        free(a);
        free(b);
    }
    close(fr);
    close(fk);
}

/* Over maxmemory, a script is refused or runs by its flags, as Redis
 * decides before running it (no-writes implies allow-oom), and one
 * without a shebang by each command it runs. */
static void test_diff_script_oom(void **state)
{
    (void)state;
    both_setup();
    static const char *const load[] = {
        "FUNCTION" W "LOAD" W LIB(
            "m") "redis.register_function('w', function() return redis.call('set', 'a', 'b') end)\n"
                 "redis.register_function{function_name='r', callback=function() return 1 end, "
                 "flags={'no-writes'}}\n"
                 "redis.register_function{function_name='o', callback=function() return "
                 "redis.call('set', 'a', 'c') end, flags={'allow-oom'}}",
        "CONFIG" W "SET" W "maxmemory" W "1",
    };
    run_both(load, 2);
    struct timespec ts = {0, 300 * 1000 * 1000}; /* shmkvd samples its memory every 100 ms */
    nanosleep(&ts, NULL);
    static const char *const lines[] = {
        "FCALL" W "w" W "0",
        "FCALL" W "r" W "0",
        "FCALL" W "o" W "0",
        "EVAL" W "#!lua\nreturn 1" W "0",
        "EVAL" W "#!lua flags=no-writes\nreturn 1" W "0",
        "EVAL" W "#!lua flags=allow-oom\nreturn redis.call('set', 'x', 'y')" W "0",
        "EVAL" W "return redis.call('set', 'x', 'y')" W "0",
        "EVAL" W "return 1" W "0",
        "MULTI",
        "FCALL" W "w" W "0",
        "EXEC",
        "CONFIG" W "SET" W "maxmemory" W "0",
    };
    run_both(lines, sizeof lines / sizeof lines[0]);
}

/* ---- random scripts ---- */

struct gen {
    char *p;
    size_t n, cap;
};

static void __attribute__((format(printf, 2, 3))) gen_put(struct gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(g->p + g->n, g->cap - g->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        g->n = g->n + (size_t)k < g->cap ? g->n + (size_t)k : g->cap - 1;
}

/* A Lua expression for a value of every kind a script may return or pass
 * on: numbers whole and not (negative, huge, NaN-free), strings, booleans,
 * nil, arrays with holes, the reply tables (ok, err, double, map, set,
 * big_number), replies of redis.call and redis.pcall (errors among them),
 * and the libraries' results. depth bounds the nesting. */
static void gen_value(struct gen *g, int depth)
{
    static const char *const words[] = {"", "a", "x y", "0", "12", "-3", "1.5", "OK", "nil"};
    static const char *const keys[] = {"s", "h", "z", "st", "l", "n", "nokey"};
    switch (pick(depth > 2 ? 12 : 17)) {
    case 0:
        gen_put(g, "%lld", (long long)(rnd() % 2000001) - 1000000);
        break;
    case 1:
        gen_put(g, "%.3f", ((double)(rnd() % 200001) - 100000) / 64);
        break;
    case 2:
        gen_put(g, "'%s'", words[pick(9)]);
        break;
    case 3:
        gen_put(g, "%s", pick(2) ? "true" : "false");
        break;
    case 4:
        gen_put(g, "nil");
        break;
    case 5:
        gen_put(g, "%s(%lld)", pick(2) ? "2^" : "-2^", (long long)(rnd() % 70));
        break;
    case 6:
        gen_put(g, "redis.call('%s', '%s')", pick(2) ? "get" : "type", keys[pick(7)]);
        break;
    case 7:
        gen_put(g, "redis.pcall('%s', '%s')", pick(2) ? "incr" : "hgetall", keys[pick(7)]);
        break;
    case 8:
        gen_put(g, "redis.call('echo', '%s')", words[pick(9)]);
        break;
    case 9:
        gen_put(g, "tonumber('%s')", words[pick(9)]);
        break;
    case 10:
        gen_put(g, "{%s='%s'}", pick(2) ? "ok" : "err", words[1 + pick(8)]);
        break;
    case 11:
        gen_put(g, "redis.call('%s', '%s')", pick(2) ? "zrange" : "smembers", pick(2) ? "z" : "st");
        if (g->p[g->n - 2] == 'z')
            g->n--, gen_put(g, ", 0, -1)");
        break;
    default: { /* a table: an array, maybe with holes, or a reply table */
        int kind = pick(6);
        if (kind == 1) {
            gen_put(g, "{double=%.2f}", ((double)(rnd() % 20001) - 10000) / 8);
            break;
        }
        if (kind == 2) {
            gen_put(g, "{big_number='%llu%llu'}", (unsigned long long)rnd() % 1000000,
                    (unsigned long long)rnd());
            break;
        }
        if (kind == 3) {
            gen_put(g, "{map={k=");
            gen_value(g, depth + 1);
            gen_put(g, "}}");
            break;
        }
        if (kind == 4) {
            gen_put(g, "{set={['%s']=true}}", words[1 + pick(8)]);
            break;
        }
        gen_put(g, "{");
        int n = pick(5);
        for (int i = 0; i < n; i++) {
            if (i)
                gen_put(g, ", ");
            gen_value(g, depth + 1);
        }
        gen_put(g, "}");
    }
    }
}

/* A script: a few statements (a write, a pcall'd error, an error raised),
 * then a returned value, maybe through redis.setresp(3). */
static void gen_script(struct gen *g)
{
    g->n = 0;
    g->p[0] = '\0';
    int pre = pick(4);
    for (int i = 0; i < pre; i++) {
        switch (pick(5)) {
        case 0:
            gen_put(g, "redis.call('set', 'n', '%d') ", pick(100));
            break;
        case 1:
            gen_put(g, "redis.call('incrby', 'n', %d) ", pick(10));
            break;
        case 2:
            gen_put(g, "local ok%d = redis.pcall('lpush', 's', 'x') ", i);
            break;
        case 3:
            gen_put(g, "redis.setresp(%d) ", 2 + pick(2));
            break;
        default:
            gen_put(g, "local v%d = ", i);
            gen_value(g, 1);
            gen_put(g, " ");
        }
    }
    switch (pick(12)) {
    case 0:
        /* A string or an error table: redis-server 7.0.15 itself crashes on
         * error() of another table ({big_number=...}). */
        if (pick(2))
            gen_put(g, "error('%s')", pick(2) ? "boom" : "E odd");
        else
            gen_put(g, "error({err='%s'})", pick(2) ? "E typed" : "plain");
        break;
    case 1:
        gen_put(g, "return redis.call('%s')", pick(2) ? "nosuchcommand" : "get");
        break;
    default:
        gen_put(g, "return ");
        gen_value(g, 0);
    }
}

/* Random scripts, each run by EVAL on both servers, replies compared.
 * SHMKV_SCRIPT_GEN=n scripts (default 400), SHMKV_SCRIPT_SEED=n; a run by
 * hand at scale: SHMKV_SCRIPT_GEN=100000. */
static void test_diff_script_random(void **state)
{
    (void)state;
    both_setup();
    const char *e = getenv("SHMKV_SCRIPT_GEN");
    long total = e ? atol(e) : 400;
    e = getenv("SHMKV_SCRIPT_SEED");
    uint64_t seed = e ? strtoull(e, NULL, 10) : 53;
    rng = seed * 0x9e3779b97f4a7c15ull + 1;
    char buf[4096];
    struct gen g = {buf, 0, sizeof buf};
    long errors = 0;
    for (long i = 0; i < total; i++) {
        gen_script(&g);
        redisReply *a = redisCommand(cr, "EVAL %s 0", buf), *b = redisCommand(ck, "EVAL %s 0", buf);
        char ta[1024], tb[1024];
        if (!a || !b)
            fail_msg("script %ld (seed %llu): %s\n  no reply from %s", i, (unsigned long long)seed,
                     buf, a ? "shmkvd" : "redis-server");
        if (!same(a, b))
            fail_msg("script %ld (seed %llu): %s\n  redis %s\n  shmkvd %s", i,
                     (unsigned long long)seed, buf, show(a, ta, sizeof ta), show(b, tb, sizeof tb));
        errors += a && a->type == REDIS_REPLY_ERROR;
        freeReplyObject(a);
        freeReplyObject(b);
        if (i % 1000 == 999) { /* the script caches stay small */
            freeReplyObject(redisCommand(cr, "SCRIPT FLUSH"));
            freeReplyObject(redisCommand(ck, "SCRIPT FLUSH"));
        }
    }
    printf("test_diff: %ld random scripts (seed %llu, %ld of them errors) answered alike\n", total,
           (unsigned long long)seed, errors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_eval),       cmocka_unit_test(test_diff_eval_resp3),
        cmocka_unit_test(test_diff_function),   cmocka_unit_test(test_diff_function_dump_restore),
        cmocka_unit_test(test_diff_script_oom), cmocka_unit_test(test_diff_script_random),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
