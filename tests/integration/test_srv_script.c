/*
 * test_srv_script — scripting's behaviour over time and across restarts,
 * which a reply-by-reply comparison with redis-server cannot show: busy
 * scripts (-BUSY to others, SCRIPT KILL, FUNCTION KILL, -UNKILLABLE,
 * SHUTDOWN NOSAVE), the sandbox's escape routes and memory bombs, and
 * function libraries surviving a restart and kill -9 while the script
 * cache does not. The error texts are redis-server 7.0.15's.
 */
#include "srv_fixture.h"

#define BUSY_EVAL                                                                                  \
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
#define BUSY_FUNCTION                                                                              \
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
#define SPIN_LIB                                                                                   \
    "#!lua name=busy\n"                                                                            \
    "redis.register_function('spin', function(keys, args) local i = 0 while true do i = i + 1 "    \
    "end end)"

/* Sends a command on c without waiting for its reply. */
static void send_only(redisContext *c, int argc, const char **argv)
{
    assert_int_equal(redisAppendCommandArgv(c, argc, argv, NULL), REDIS_OK);
    int done = 0;
    while (!done)
        assert_int_equal(redisBufferWrite(c, &done), REDIS_OK);
}

/* Waits (up to 10 s) until the daemon answers PING on a new connection
 * with want; returns that connection. */
static redisContext *await_busy(const char *want)
{
    for (int i = 0; i < 500; i++) {
        redisContext *b = h_connect_port(S.port);
        assert_non_null(b);
        redisReply *r = H_CMD(b, "PING");
        bool busy = r && r->type == REDIS_REPLY_ERROR && !strcmp(r->str, want);
        freeReplyObject(r);
        if (busy)
            return b;
        redisFree(b);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("the script never went busy");
    return NULL;
}

static void expect_reply_err(redisContext *c, const char *want)
{
    redisReply *r;
    assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
    if (r->type != REDIS_REPLY_ERROR || strcmp(r->str, want))
        fail_msg("want -%s, got type %d '%s'", want, r->type, r->str ? r->str : "");
    freeReplyObject(r);
}

/* A script looping past busy-reply-threshold: other clients, new ones
 * too, get -BUSY, but for what Redis allows then; SCRIPT KILL stops it;
 * a transaction opened meanwhile is aborted. */
static void test_script_busy_kill(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "CONFIG SET busy-reply-threshold 100");
    /* A client with its replies off keeps them off across the busy time. */
    redisContext *quiet = h_connect_port(S.port);
    const char *off[] = {"CLIENT", "REPLY", "OFF"};
    send_only(quiet, 3, off);
    redisContext *a = h_connect_port(S.port);
    const char *argv[] = {"EVAL", "local i=0 while true do i=i+1 end", "0"};
    send_only(a, 3, argv);
    redisContext *b = await_busy(BUSY_EVAL);
    h_expect_err(b, BUSY_EVAL, "GET x");
    h_expect_err(b, BUSY_EVAL, "FUNCTION STATS");
    h_expect_err(b, BUSY_EVAL, "FUNCTION KILL");
    h_expect_err(b, BUSY_EVAL, "CONFIG SET busy-reply-threshold 0");
    redisContext *m = h_connect_port(S.port);
    h_expect_status(m, "OK", "MULTI");
    h_expect_err(m, BUSY_EVAL, "SET x 1");
    h_expect_status(b, "OK", "SCRIPT KILL");
    expect_reply_err(a, "ERR Script killed by user with SCRIPT KILL... script: "
                        "653db1ceb7ef061910af88dc7ebf80737358169d, on @user_script:1.");
    h_expect_err(m, "EXECABORT", "EXEC");
    redisFree(m);
    h_expect_err(b, "NOTBUSY No scripts in execution right now.", "SCRIPT KILL");
    h_expect_nil(a, "GET x");
    h_expect_int(a, 1, "EVAL %s 0", "return 1");
    const char *get[] = {"GET", "nokey"};
    send_only(quiet, 2, get);
    h_expect_status(quiet, "OK", "CLIENT REPLY ON"); /* the first reply it gets */
    redisFree(quiet);
    redisFree(a);
    redisFree(b);
    h_expect_status(c, "OK", "CONFIG SET busy-reply-threshold 5000");
}

/* A busy script that wrote cannot be killed; SHUTDOWN NOSAVE stops the
 * daemon, and none of the script's writes is there after a restart while
 * what was acknowledged before it is. */
static void test_script_unkillable_shutdown_nosave(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "CONFIG SET busy-reply-threshold 100");
    h_expect_status(c, "OK", "SET before 1");
    redisContext *a = h_connect_port(S.port);
    const char *argv[] = {"EVAL", "redis.call('set', 'w', '1') while true do end", "0"};
    send_only(a, 3, argv);
    redisContext *b = await_busy(BUSY_EVAL);
    h_expect_err(b,
                 "UNKILLABLE Sorry the script already executed write commands against the "
                 "dataset. You can either wait the script termination or kill the server in a "
                 "hard way using the SHUTDOWN NOSAVE command.",
                 "SCRIPT KILL");
    h_expect_err(b, BUSY_EVAL, "SHUTDOWN");
    h_expect_err(b, BUSY_EVAL, "SHUTDOWN SAVE");
    assert_null(H_CMD(b, "SHUTDOWN NOSAVE"));
    int st;
    assert_int_equal(waitpid(S.pid, &st, 0), S.pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    S.pid = 0;
    redisFree(a);
    redisFree(b);
    h_start_shmkvd_opts(&S, NULL);
    redisContext *d = h_connect_port(S.port);
    h_expect_bulk(d, "1", "GET before");
    h_expect_int(d, 0, "EXISTS w");
    redisFree(d);
    /* The fixture's connection went with the old daemon. */
    redisFree(c);
    *state = h_connect_port(S.port);
}

/* FUNCTION KILL stops a busy function, SCRIPT KILL does not; FUNCTION
 * STATS shows it meanwhile. */
static void test_function_busy_kill(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "FUNCTION FLUSH");
    h_expect_bulk(c, "busy", "FUNCTION LOAD %s", SPIN_LIB);
    h_expect_status(c, "OK", "CONFIG SET busy-reply-threshold 100");
    redisContext *a = h_connect_port(S.port);
    const char *argv[] = {"FCALL", "spin", "0"};
    send_only(a, 3, argv);
    redisContext *b = await_busy(BUSY_FUNCTION);
    redisReply *r = H_CMD(b, "FUNCTION STATS");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 4);
    assert_string_equal(r->element[0]->str, "running_script");
    redisReply *run = r->element[1];
    assert_int_equal(run->elements, 6);
    assert_string_equal(run->element[1]->str, "spin");
    assert_int_equal(run->element[3]->elements, 3);
    assert_string_equal(run->element[3]->element[0]->str, "FCALL");
    assert_true(run->element[5]->integer >= 100);
    freeReplyObject(r);
    h_expect_err(b, BUSY_FUNCTION, "SCRIPT KILL");
    h_expect_status(b, "OK", "FUNCTION KILL");
    expect_reply_err(a, "ERR Script killed by user with SCRIPT KILL... script: spin, on "
                        "@user_function:2.");
    h_expect_err(b, "NOTBUSY No scripts in execution right now.", "FUNCTION KILL");
    redisFree(a);
    redisFree(b);
    h_expect_status(c, "OK", "CONFIG SET busy-reply-threshold 5000");
    h_expect_status(c, "OK", "FUNCTION FLUSH");
}

/* Each known way out of the sandbox is refused, memory bombs fail their
 * script, and the next script finds everything as it was. */
static void test_script_sandbox(void **state)
{
    redisContext *c = *state;
    static const char *const refused[][2] = {
        {"return loadstring(string.dump(function() return 1 end))()", "attempt to call a nil"},
        {"return debug.getinfo(1)", "nonexistent global variable 'debug'"},
        {"return os.exit(1)", "nonexistent global variable 'os'"},
        {"return io.popen('id')", "nonexistent global variable 'io'"},
        {"return require('os')", "nonexistent global variable 'require'"},
        {"return dofile('/etc/passwd')", "nonexistent global variable 'dofile'"},
        {"redis = nil", "Attempt to modify a readonly table"},
        {"redis.call = function() return 1 end", "Attempt to modify a readonly table"},
        {"rawset(redis, 'call', nil)", "Attempt to modify a readonly table"},
        {"_G.string = nil", "Attempt to modify a readonly table"},
        {"setmetatable(_G, nil)", "Attempt to modify a readonly table"},
        {"getmetatable('').__index = nil", "Attempt to modify a readonly table"},
        {"getmetatable('').__index.upper = nil", "Attempt to modify a readonly table"},
        {"string.rep = nil", "Attempt to modify a readonly table"},
        {"cjson.encode = nil", "Attempt to modify a readonly table"},
        {"leak = 1", "Attempt to modify a readonly table"},
        {"return undeclared", "nonexistent global variable 'undeclared'"},
        {"return #string.rep('x', 100 * 1024 * 1024)", "not enough memory"},
        {"local t = {} for i = 1, 1e8 do t[i] = i end", "not enough memory"},
        {"local s = 'x' while true do s = s .. s end", "not enough memory"},
    };
    h_expect_status(c, "OK", "CONFIG SET lua-memory-limit 64mb");
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        redisReply *r = H_CMD(c, "EVAL %s 0", refused[i][0]);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_ERROR || !strstr(r->str, refused[i][1]))
            fail_msg("%s: want an error with '%s', got type %d '%s'", refused[i][0], refused[i][1],
                     r->type, r->str ? r->str : "");
        freeReplyObject(r);
    }
    /* Caught by pcall, a bomb still fails only its own allocation. */
    h_expect_bulk(c, "false", "EVAL %s 0",
                  "return tostring(pcall(string.rep, 'x', 100 * 1024 * 1024))");
    /* Everything as it was for the next script. */
    h_expect_bulk(c, "X", "EVAL %s 0", "return ('x'):upper()");
    h_expect_bulk(c, "aaa", "EVAL %s 0", "return string.rep('a', 3)");
    h_expect_bulk(c, "function", "EVAL %s 0", "return type(redis.call)");
    h_expect_bulk(c, "{\"a\":1}", "EVAL %s 0", "return cjson.encode({a = 1})");
    h_expect_int(c, 15, "EVAL %s 0",
                 "local n = 0 for k in pairs(string) do n = n + 1 end return n");
    /* A result that holds itself twice would be a reply of 2^1000 values
     * (fuzz_lua found it): past ten million each value is an error, and
     * the reply comes, whole, in bounded size. */
    {
        /* Read raw: hiredis takes no reply nested this deep. */
        redisContext *raw = h_connect_port(S.port);
        const char *argv[] = {"EVAL", "local t = {} t[1] = t t[2] = t return t", "0"};
        send_only(raw, 3, argv);
        size_t got = 0;
        char buf[65536], last[2] = "";
        /* The reply is made whole before its first byte goes (a while on
         * a loaded machine), then it streams: its end is a pause. */
        struct timeval first = {.tv_sec = 60}, then = {.tv_sec = 2};
        setsockopt(raw->fd, SOL_SOCKET, SO_RCVTIMEO, &first, sizeof first);
        ssize_t n;
        while ((n = read(raw->fd, buf, sizeof buf)) > 0) {
            if (!got)
                setsockopt(raw->fd, SOL_SOCKET, SO_RCVTIMEO, &then, sizeof then);
            got += (size_t)n;
            memcpy(last, n >= 2 ? buf + n - 2 : buf, n >= 2 ? 2 : 1);
        }
        if (got < 2 || got > (512u << 20) || memcmp(last, "\r\n", 2))
            fail_msg("a self-holding result: %zu bytes of reply", got);
        redisFree(raw);
        printf("test_srv_script: a result holding itself twice replied %zu bytes\n", got);
    }
    h_expect_bulk(c, "X", "EVAL %s 0", "return ('x'):upper()");
    /* The garbage of the bombs is gone. */
    assert_true(h_info_num(c, "used_memory_lua") < 16 * 1024 * 1024);
    h_expect_status(c, "OK", "CONFIG SET lua-memory-limit 1gb");
}

/* Libraries survive a restart and kill -9, deletions too; EVAL's script
 * cache does not survive (Redis's semantics). */
static void test_function_persistence(void **state)
{
    redisContext *c = *state;
    h_expect_status(c, "OK", "FUNCTION FLUSH");
    h_expect_bulk(c, "one", "FUNCTION LOAD %s",
                  "#!lua name=one\nredis.register_function('f1', function() return 1 end)");
    redisReply *r = H_CMD(c, "SCRIPT LOAD %s", "return 7");
    char sha[41];
    snprintf(sha, sizeof sha, "%s", r->str);
    freeReplyObject(r);
    redisFree(c);
    assert_int_equal(h_stop(&S), 0);
    h_start_shmkvd_opts(&S, NULL);
    c = h_connect_port(S.port);
    h_expect_int(c, 1, "FCALL f1 0");
    h_expect_err(c, "NOSCRIPT", "EVALSHA %s 0", sha);
    /* A load and a delete, each acknowledged, then kill -9. */
    h_expect_bulk(c, "two", "FUNCTION LOAD %s",
                  "#!lua name=two\nredis.register_function('f2', function() return 2 end)");
    h_expect_status(c, "OK", "FUNCTION DELETE one");
    kill(S.pid, SIGKILL);
    int st;
    waitpid(S.pid, &st, 0);
    S.pid = 0;
    redisFree(c);
    h_start_shmkvd_opts(&S, NULL);
    c = h_connect_port(S.port);
    h_expect_int(c, 2, "FCALL f2 0");
    h_expect_err(c, "ERR Function not found", "FCALL f1 0");
    r = H_CMD(c, "FUNCTION LIST");
    assert_int_equal(r->elements, 1);
    freeReplyObject(r);
    assert_int_equal(h_info_num(c, "number_of_libraries"), 1);
    assert_int_equal(h_info_num(c, "number_of_functions"), 1);
    /* The record is not a key: no database counts it. */
    h_expect_int(c, 0, "DBSIZE");
    h_expect_status(c, "OK", "FUNCTION FLUSH");
    kill(S.pid, SIGKILL);
    waitpid(S.pid, &st, 0);
    S.pid = 0;
    redisFree(c);
    h_start_shmkvd_opts(&S, NULL);
    c = h_connect_port(S.port);
    h_expect_err(c, "ERR Function not found", "FCALL f2 0");
    *state = c;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_script_busy_kill, each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(test_script_unkillable_shutdown_nosave, each_setup,
                                        each_teardown),
        cmocka_unit_test_setup_teardown(test_function_busy_kill, each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(test_script_sandbox, each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(test_function_persistence, each_setup, each_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
