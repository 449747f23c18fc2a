/*
 * test_diff_script — Lua scripting against Debian's redis-server: EVAL and
 * its family, SCRIPT, the sandbox, the redis library, and the conversions
 * between Lua values and replies in RESP2 and RESP3, reply for reply.
 */
#include "diff_fixture.h"

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
        "FLUSHALL", "SCRIPT FLUSH", "SET s x", "HSET h f v", "ZADD z 1.5 a 2 b", "SADD st m",
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

static void test_diff_eval(void **state)
{
    (void)state;
    both_setup();
    char fails[8192] = "";
    size_t fu = 0;
    for (size_t i = 0; i < sizeof EVALS / sizeof EVALS[0]; i++) {
        redisReply *a = run_words(cr, EVALS[i]), *b = run_words(ck, EVALS[i]);
        char ta[1024], tb[1024];
        if (!same(a, b) && fu < sizeof fails - 2200) {
            char shown[200];
            snprintf(shown, sizeof shown, "%s", EVALS[i]);
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
    printf("test_diff: %zu scripting commands answered as redis-server answers them\n",
           sizeof EVALS / sizeof EVALS[0]);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff_eval),
        cmocka_unit_test(test_diff_eval_resp3),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
