/*
 * scr — the Lua scripting engine behind EVAL (see scr.h): the sandbox,
 * the redis library, the conversions between Lua values and replies, and
 * running a script with Redis 7.0's error texts.
 *
 * Sandbox, as Redis 7.0 has it: the base, table, string and math
 * libraries, cjson, bit, cmsgpack and struct; no os, io, package, debug, print, dofile,
 * loadfile, require, module, setfenv, getfenv or newproxy; loadstring and
 * load refuse bytecode. Stock Lua 5.1 has no read-only tables, so the
 * globals and every library table are read through proxies whose
 * __newindex refuses, and rawset refuses a proxy: a script cannot leave
 * state behind for the next one. Reading an unset global is an error.
 */
#include "scr.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <lua-bitop.h>
#include <lua-cjson.h>

#include "cmd.h"
#include "kv_mem.h"
#include "kv_num.h"
#include "kv_sha1.h"
#include "scr_libs.h"

static lua_State *L;
static struct conn *sc; /* the scripts' client: redis.call runs commands as it */
static size_t nscripts, script_bytes;
static struct run {
    struct conn *caller;
    bool ro;
    int resp; /* redis.setresp */
} run;

#define PROXIES "shmkv.proxies" /* registry: proxy → true, for rawset */

/* ---- the sandbox ---- */

static int ro_newindex(lua_State *l)
{
    return luaL_error(l, "Attempt to modify a readonly table");
}

static int globals_index(lua_State *l)
{
    /* (proxy, key): the real globals are the metatable's __real */
    lua_getmetatable(l, 1);
    lua_getfield(l, -1, "__real");
    lua_pushvalue(l, 2);
    lua_rawget(l, -2);
    if (lua_isnil(l, -1)) {
        const char *k = lua_tostring(l, 2);
        return luaL_error(l, "Script attempted to access nonexistent global variable '%s'",
                          k ? k : "?");
    }
    return 1;
}

/* Replaces the table on top of the stack by a read-only proxy of it. For
 * the globals, reading a missing name is an error too. */
static void make_proxy(bool globals)
{
    int real = lua_gettop(L);
    lua_newtable(L); /* the proxy */
    lua_newtable(L); /* its metatable */
    lua_pushvalue(L, real);
    lua_setfield(L, -2, "__real");
    if (globals) {
        lua_pushcfunction(L, globals_index);
    } else {
        lua_pushvalue(L, real);
    }
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, ro_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable"); /* getmetatable cannot reach the real table */
    lua_setmetatable(L, -2);
    lua_getfield(L, LUA_REGISTRYINDEX, PROXIES);
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    lua_replace(L, real);
}

static int sandbox_rawset(lua_State *l)
{
    luaL_checktype(l, 1, LUA_TTABLE);
    lua_getfield(l, LUA_REGISTRYINDEX, PROXIES);
    lua_pushvalue(l, 1);
    lua_rawget(l, -2);
    if (lua_toboolean(l, -1)) {
        lua_pushstring(l, "Attempt to modify a readonly table"); /* no position, as Redis's */
        return lua_error(l);
    }
    lua_pop(l, 2);
    luaL_checkany(l, 2);
    luaL_checkany(l, 3);
    lua_settop(l, 3);
    lua_rawset(l, 1);
    return 1;
}

/* loadstring and load without bytecode: Redis 7.0's Lua reads a binary
 * chunk as text, which fails on its first byte. */
static int sandbox_loadstring(lua_State *l)
{
    size_t n;
    const char *s = luaL_checklstring(l, 1, &n);
    if (n && s[0] == LUA_SIGNATURE[0]) {
        lua_pushnil(l);
        lua_pushstring(l, "[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'");
        return 2;
    }
    const char *name = luaL_optstring(l, 2, s);
    if (luaL_loadbuffer(l, s, n, name) == 0)
        return 1;
    lua_pushnil(l);
    lua_insert(l, -2);
    return 2;
}

/* ---- replies → Lua ---- */

static void push_error_table(lua_State *l, const char *e, size_t n);

/* Pushes the reply at *p (RESP2 or RESP3, as the daemon writes it) as Lua
 * values convert it in Redis 7.0, and moves *p past it. An error reply is
 * pushed as {err = "CODE msg"}; *err tells the caller. */
static void push_reply(lua_State *l, const char **p, const char *end, bool *err)
{
    const char *s = *p, *eol = memchr(s, '\r', (size_t)(end - s));
    if (!eol) {
        lua_pushnil(l);
        *p = end;
        return;
    }
    const char *line = s + 1;
    size_t ln = (size_t)(eol - line);
    *p = eol + 2;
    long long n = 0;
    switch (*s) {
    case '+':
        lua_newtable(l);
        lua_pushlstring(l, line, ln);
        lua_setfield(l, -2, "ok");
        return;
    case '-':
        push_error_table(l, line, ln);
        /* Counted when the command replied it: not again when the script
         * passes it on (Redis's field, which scripts see too). */
        lua_pushboolean(l, 1);
        lua_setfield(l, -2, "ignore_error_stats_update");
        *err = true;
        return;
    case ':':
        n = strtoll(line, NULL, 10);
        lua_pushnumber(l, (lua_Number)n);
        return;
    case '_': /* RESP3 null */
        lua_pushnil(l);
        return;
    case '#':
        lua_pushboolean(l, *line == 't');
        return;
    case ',': {
        lua_newtable(l);
        char buf[64];
        snprintf(buf, sizeof buf, "%.*s", (int)(ln < 63 ? ln : 63), line);
        lua_pushnumber(l, (lua_Number)strtod(buf, NULL));
        lua_setfield(l, -2, "double");
        return;
    }
    case '(':
        lua_newtable(l);
        lua_pushlstring(l, line, ln);
        lua_setfield(l, -2, "big_number");
        return;
    case '$':
    case '=': {
        n = strtoll(line, NULL, 10);
        if (n < 0) {
            lua_pushboolean(l, 0);
            return;
        }
        const char *d = *p;
        *p = d + n + 2;
        if (*s == '$') {
            lua_pushlstring(l, d, (size_t)n);
            return;
        }
        lua_newtable(l); /* verbatim: {verbatim_string = {format = "txt", string = ...}} */
        lua_newtable(l);
        lua_pushlstring(l, d, n >= 3 ? 3 : (size_t)n);
        lua_setfield(l, -2, "format");
        lua_pushlstring(l, n >= 4 ? d + 4 : d, n >= 4 ? (size_t)n - 4 : 0);
        lua_setfield(l, -2, "string");
        lua_setfield(l, -2, "verbatim_string");
        return;
    }
    case '*':
    case '~':
    case '%': {
        n = strtoll(line, NULL, 10);
        if (n < 0) {
            lua_pushboolean(l, 0);
            return;
        }
        luaL_checkstack(l, 4, "reply nesting");
        lua_newtable(l);
        if (*s != '*')
            lua_newtable(l); /* the map's or set's own table */
        for (long long i = 0; i < n; i++) {
            if (*s == '%') {
                push_reply(l, p, end, err);
                push_reply(l, p, end, err);
                lua_rawset(l, -3);
            } else if (*s == '~') {
                push_reply(l, p, end, err);
                lua_pushboolean(l, 1);
                lua_rawset(l, -3);
            } else {
                push_reply(l, p, end, err);
                lua_rawseti(l, -2, (int)i + 1);
            }
        }
        if (*s != '*')
            lua_setfield(l, -2, *s == '%' ? "map" : "set");
        *err = false; /* only a top-level error reply raises */
        return;
    }
    default:
        lua_pushnil(l);
        *p = end;
    }
}

/* {err = "CODE msg"} from an error reply's text "CODE msg" or "msg" (then
 * ERR), as Redis 7.0's luaPushErrorBuff forms it. */
static void push_error_table(lua_State *l, const char *e, size_t n)
{
    while (n && (e[n - 1] == '\r' || e[n - 1] == '\n'))
        n--;
    luaL_Buffer b;
    lua_newtable(l);
    luaL_buffinit(l, &b);
    const char *sp = memchr(e, ' ', n);
    if (!sp) { /* one word: it is the message, the code ERR */
        luaL_addstring(&b, "ERR ");
        luaL_addlstring(&b, e, n);
    } else {
        luaL_addlstring(&b, e, n);
    }
    luaL_pushresult(&b);
    lua_setfield(l, -2, "err");
}

/* ---- redis.call ---- */

/* Redis 7.0's commands a script may not run. */
static bool noscript(const char *name)
{
    static const char *const deny[] = {
        "eval",       "evalsha",      "eval_ro",      "evalsha_ro",   "script",    "multi",
        "exec",       "discard",      "watch",        "unwatch",      "subscribe", "psubscribe",
        "ssubscribe", "unsubscribe",  "punsubscribe", "sunsubscribe", "blpop",     "brpop",
        "blmove",     "brpoplpush",   "bzpopmin",     "bzpopmax",     "wait",      "monitor",
        "hello",      "auth",         "quit",         "reset",        "client",    "config",
        "latency",    "module",       "debug",        "save",         "bgsave",    "shutdown",
        "role",       "cluster|reset"};
    for (size_t i = 0; i < sizeof deny / sizeof deny[0]; i++)
        if (!strcasecmp(name, deny[i]))
            return true;
    return false;
}

/* Raises {err = msg} (a Redis error without its '-'). */
static int raise_error(lua_State *l, const char *msg)
{
    push_error_table(l, msg, strlen(msg));
    return lua_error(l);
}

static int call_common(lua_State *l, bool protect)
{
    int argc = lua_gettop(l);
    if (argc == 0)
        return raise_error(l, "ERR Please specify at least one argument for this redis lib call");
    struct db_str *argv = kv_xmalloc((size_t)argc * sizeof *argv);
    char num[64];
    for (int i = 0; i < argc; i++) {
        int t = lua_type(l, i + 1);
        if (t == LUA_TNUMBER) {
            /* Not lua_tolstring: its "%.14g" loses precision. */
            snprintf(num, sizeof num, "%.17g", (double)lua_tonumber(l, i + 1));
            lua_pushstring(l, num);
            lua_replace(l, i + 1);
        } else if (t != LUA_TSTRING) {
            free(argv);
            return raise_error(l,
                               "ERR Lua redis lib command arguments must be strings or integers");
        }
        argv[i].p = lua_tolstring(l, i + 1, &argv[i].n);
    }
    const char *why = NULL;
    const struct cmd *cmd = cmd_lookup(argv[0].p, argv[0].n);
    if (!cmd) {
        why = "ERR Unknown Redis command called from script";
    } else if ((cmd->arity > 0 && argc != cmd->arity) || (cmd->arity < 0 && argc < -cmd->arity)) {
        why = "ERR Wrong number of args calling Redis command from script";
    } else {
        char full[80];
        snprintf(full, sizeof full, "%s|%.*s", cmd->name, argc > 1 ? (int)argv[1].n : 0,
                 argc > 1 ? argv[1].p : "");
        if (noscript(cmd->name) || noscript(full))
            why = "ERR This Redis command is not allowed from script";
        else if (run.ro && (cmd->flags & CMD_WRITE))
            why = "ERR Write commands are not allowed from read-only scripts.";
    }
    if (!why)
        why = cmd_script_refusal(cmd);
    if (why) {
        free(argv);
        if (protect) {
            push_error_table(l, why, strlen(why));
            return 1;
        }
        return raise_error(l, why);
    }
    sc->db = run.caller->db;
    sc->proto = run.resp;
    sc->argv = argv;
    sc->argc = (size_t)argc;
    resp_buf_consume(&sc->out, resp_buf_used(&sc->out));
    cmd_call(sc, cmd);
    sc->argv = NULL;
    sc->argc = 0;
    free(argv);
    const char *p = resp_buf_data(&sc->out), *end = p + resp_buf_used(&sc->out);
    bool err = false;
    if (p == end) {
        lua_pushboolean(l, 0); /* no reply (cannot happen): as a nil bulk */
        return 1;
    }
    push_reply(l, &p, end, &err);
    if (err && !protect)
        return lua_error(l);
    return 1;
}

static int l_call(lua_State *l)
{
    return call_common(l, false);
}

static int l_pcall(lua_State *l)
{
    return call_common(l, true);
}

/* redis.error_reply(msg): {err = msg}, given a code when it has none. */
static int l_error_reply(lua_State *l)
{
    if (lua_gettop(l) != 1 || lua_type(l, 1) != LUA_TSTRING)
        return luaL_error(l, "wrong number or type of arguments");
    size_t n;
    const char *s = lua_tolstring(l, 1, &n);
    if (n && s[0] == '-') {
        s++;
        n--;
    }
    push_error_table(l, s, n);
    return 1;
}

static int l_status_reply(lua_State *l)
{
    if (lua_gettop(l) != 1 || lua_type(l, 1) != LUA_TSTRING)
        return luaL_error(l, "wrong number or type of arguments");
    lua_newtable(l);
    lua_pushvalue(l, 1);
    lua_setfield(l, -2, "ok");
    return 1;
}

static void sha1_hex(const char *p, size_t n, char out[41])
{
    unsigned char d[KV_SHA1_LEN];
    kv_sha1(p, n, d);
    for (int i = 0; i < KV_SHA1_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static int l_sha1hex(lua_State *l)
{
    if (lua_gettop(l) != 1)
        return luaL_error(l, "wrong number of arguments");
    size_t n;
    const char *s = lua_tolstring(l, 1, &n);
    char hex[41];
    sha1_hex(s ? s : "", s ? n : 0, hex);
    lua_pushstring(l, hex);
    return 1;
}

static int l_log(lua_State *l)
{
    int argc = lua_gettop(l);
    if (argc < 2)
        return luaL_error(l, "redis.log() requires two arguments or more.");
    if (!lua_isnumber(l, 1))
        return luaL_error(l, "First argument must be a number (log level).");
    int level = (int)lua_tonumber(l, 1);
    if (level < LOG_DEBUG || level > LOG_WARNING)
        return luaL_error(l, "Invalid debug level.");
    luaL_Buffer b;
    luaL_buffinit(l, &b);
    for (int i = 2; i <= argc; i++) {
        size_t n;
        const char *s = lua_tolstring(l, i, &n);
        if (i > 2)
            luaL_addchar(&b, ' ');
        if (s)
            luaL_addlstring(&b, s, n);
    }
    luaL_pushresult(&b);
    srv_log(level, "%s", lua_tostring(l, -1));
    return 0;
}

static int l_setresp(lua_State *l)
{
    if (lua_gettop(l) != 1)
        return raise_error(l, "ERR redis.setresp() requires one argument.");
    int v = (int)lua_tonumber(l, 1);
    if (v != 2 && v != 3)
        return raise_error(l, "ERR RESP version must be 2 or 3.");
    run.resp = v;
    return 0;
}

/* set_repl, replicate_commands, breakpoint, debug: accepted; they matter
 * once there is replication, or a debugger. */
static int l_true(lua_State *l)
{
    lua_pushboolean(l, 1);
    return 1;
}

static int l_nothing(lua_State *l)
{
    (void)l;
    return 0;
}

static void open_redis(void)
{
    static const luaL_Reg fns[] = {{"call", l_call},
                                   {"pcall", l_pcall},
                                   {"error_reply", l_error_reply},
                                   {"status_reply", l_status_reply},
                                   {"sha1hex", l_sha1hex},
                                   {"log", l_log},
                                   {"setresp", l_setresp},
                                   {"set_repl", l_nothing},
                                   {"replicate_commands", l_true},
                                   {"breakpoint", l_nothing},
                                   {"debug", l_nothing},
                                   {NULL, NULL}};
    lua_newtable(L);
    luaL_register(L, NULL, fns);
    static const struct {
        const char *name;
        int v;
    } nums[] = {{"LOG_DEBUG", LOG_DEBUG},
                {"LOG_VERBOSE", LOG_VERBOSE},
                {"LOG_NOTICE", LOG_NOTICE},
                {"LOG_WARNING", LOG_WARNING},
                {"REPL_NONE", 0},
                {"REPL_AOF", 1},
                {"REPL_SLAVE", 2},
                {"REPL_REPLICA", 2},
                {"REPL_ALL", 3}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        lua_pushnumber(L, nums[i].v);
        lua_setfield(L, -2, nums[i].name);
    }
    lua_pushstring(L, SRV_VERSION);
    lua_setfield(L, -2, "REDIS_VERSION");
    int maj = 0, min = 0, patch = 0;
    sscanf(SRV_VERSION, "%d.%d.%d", &maj, &min, &patch);
    lua_pushnumber(L, (maj << 16) | (min << 8) | patch);
    lua_setfield(L, -2, "REDIS_VERSION_NUM");
    lua_setglobal(L, "redis");
}

/* ---- the state ---- */

void scr_init(void)
{
    L = luaL_newstate();
    if (!L)
        kv_oom(0);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, PROXIES);
    static const lua_CFunction libs[] = {luaopen_base, luaopen_table, luaopen_string, luaopen_math,
                                         luaopen_bit};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        lua_pushcfunction(L, libs[i]);
        lua_call(L, 0, 0);
    }
    lua_pushcfunction(L, luaopen_cjson); /* returns its table, sets no global */
    lua_call(L, 0, 1);
    lua_setglobal(L, "cjson");
    lua_pushcfunction(L, scr_open_cmsgpack);
    lua_call(L, 0, 0);
    lua_pushcfunction(L, scr_open_struct);
    lua_call(L, 0, 0);
    lua_settop(L, 0);
    open_redis();
    static const char *const gone[] = {"print",  "dofile",  "loadfile", "require",
                                       "module", "setfenv", "getfenv",  "newproxy"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        lua_pushnil(L);
        lua_setglobal(L, gone[i]);
    }
    lua_pushcfunction(L, sandbox_rawset);
    lua_setglobal(L, "rawset");
    lua_pushcfunction(L, sandbox_loadstring);
    lua_setglobal(L, "loadstring");
    lua_pushcfunction(L, sandbox_loadstring);
    lua_setglobal(L, "load");
    /* Library tables, then the globals, behind read-only proxies. */
    static const char *const tables[] = {"string", "table",    "math",      "bit",  "cjson",
                                         "struct", "cmsgpack", "coroutine", "redis"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        lua_getglobal(L, tables[i]);
        if (lua_istable(L, -1)) {
            make_proxy(false);
            lua_setglobal(L, tables[i]);
        } else {
            lua_pop(L, 1);
        }
    }
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "shmkv.globals"); /* KEYS and ARGV go here */
    make_proxy(true);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "shmkv.G");
    lua_getfield(L, LUA_REGISTRYINDEX, "shmkv.globals");
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "_G"); /* _G is the proxy */
    lua_pop(L, 1);
    lua_replace(L, LUA_GLOBALSINDEX);
    nscripts = script_bytes = 0;
    if (!sc) {
        sc = kv_xcalloc(1, sizeof *sc);
        sc->fd = -1;
        sc->flags = CONN_AUTHED | CONN_IN_EXEC; /* nothing it runs may block */
        snprintf(sc->addr, sizeof sc->addr, "lua");
        snprintf(sc->name, sizeof sc->name, "lua");
        resp_buf_init(&sc->in);
        resp_buf_init(&sc->out);
    }
}

void scr_free(void)
{
    if (L)
        lua_close(L);
    L = NULL;
    nscripts = script_bytes = 0;
}

void scr_destroy(void)
{
    scr_free();
    if (sc) {
        resp_buf_free(&sc->in);
        resp_buf_free(&sc->out);
        free(sc);
        sc = NULL;
    }
}

size_t scr_count(void)
{
    return nscripts;
}

size_t scr_vm_bytes(void)
{
    return L ? (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0) : 0;
}

size_t scr_scripts_bytes(void)
{
    return script_bytes;
}

/* The registry key of a script: "f_" and its SHA-1 in lowercase. */
static void func_name(const char *sha, size_t n, char out[43])
{
    out[0] = 'f';
    out[1] = '_';
    for (size_t i = 0; i < 40; i++)
        out[2 + i] = i < n ? (char)tolower((unsigned char)sha[i]) : '0';
    out[42] = '\0';
}

bool scr_exists(const char *sha, size_t n)
{
    if (n != 40)
        return false;
    char fn[43];
    func_name(sha, n, fn);
    lua_getfield(L, LUA_REGISTRYINDEX, fn);
    bool found = lua_isfunction(L, -1);
    lua_pop(L, 1);
    return found;
}

int scr_load(const char *body, size_t n, char sha[41], char *err, size_t errlen)
{
    sha1_hex(body, n, sha);
    if (scr_exists(sha, 40))
        return 0;
    if (luaL_loadbuffer(L, body, n, "@user_script")) {
        snprintf(err, errlen, "ERR Error compiling script (new function): %s", lua_tostring(L, -1));
        lua_pop(L, 1);
        return -1;
    }
    char fn[43];
    func_name(sha, 40, fn);
    lua_setfield(L, LUA_REGISTRYINDEX, fn);
    nscripts++;
    script_bytes += n + 43 + 64; /* the body, its name, and about a table entry */
    return 0;
}

/* ---- running a script ---- */

/* The error handler: an error becomes {err = ...} with where the script
 * was when it was raised, as Redis 7.0's __redis__err__handler makes it. */
static int on_error(lua_State *l)
{
    if (!lua_istable(l, 1)) {
        lua_newtable(l);
        lua_pushstring(l, "ERR ");
        const char *s = lua_tostring(l, 1);
        lua_pushstring(l, s ? s : "(error object is not a string)");
        lua_concat(l, 2);
        lua_setfield(l, -2, "err");
        lua_replace(l, 1);
    }
    lua_Debug ar;
    int level = 1;
    if (lua_getstack(l, level, &ar) && lua_getinfo(l, "Sl", &ar) && !strcmp(ar.what, "C"))
        level = 2;
    if (lua_getstack(l, level, &ar) && lua_getinfo(l, "Sl", &ar) && strcmp(ar.what, "C")) {
        lua_pushstring(l, ar.source);
        lua_setfield(l, 1, "source");
        lua_pushnumber(l, ar.currentline);
        lua_setfield(l, 1, "line");
    }
    lua_settop(l, 1);
    return 1;
}

/* Pushes t[name] of the table on top and returns true if it has that
 * type; else pushes nothing and returns false. */
static bool field(const char *name, int type)
{
    lua_pushstring(L, name);
    lua_rawget(L, -2);
    if (lua_type(L, -1) == type)
        return true;
    lua_pop(L, 1);
    return false;
}

/* The string on top as one line (CR and LF as spaces), malloc'd: a status
 * or an error reply must not break the protocol. */
static char *one_line(void)
{
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    char *line = kv_xmemdup(s, n + 1);
    for (size_t i = 0; i < n; i++)
        if (line[i] == '\r' || line[i] == '\n')
            line[i] = ' ';
    return line;
}

/* Writes the Lua value at the top of the stack to out as Redis 7.0 turns
 * a script's result into a reply, in protocol proto. */
static void reply_value(struct resp_buf *out, int proto, int depth)
{
    int t = lua_type(L, -1);
    switch (t) {
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        resp_bulk(out, s, n);
        break;
    }
    case LUA_TBOOLEAN:
        if (run.resp == 3) /* the script's protocol (redis.setresp), not the caller's */
            resp_bool(out, lua_toboolean(L, -1), proto);
        else if (lua_toboolean(L, -1))
            resp_int(out, 1);
        else
            resp_null(out, proto);
        break;
    case LUA_TNUMBER: {
        /* Truncated toward zero, as Redis casts it; what the cast cannot
         * hold (NaN, beyond 2^63) reads as the x86 conversion gives it. */
        double d = lua_tonumber(L, -1);
        resp_int(out, d == d && d < 9223372036854775808.0 && d >= -9223372036854775808.0
                          ? (int64_t)d
                          : INT64_MIN);
        break;
    }
    case LUA_TTABLE: {
        if (depth > 1000) { /* a table within itself */
            resp_error(out, "ERR reached lua stack limit");
            break;
        }
        luaL_checkstack(L, 4, "reply nesting");
        if (field("err", LUA_TSTRING)) {
            char *msg = one_line();
            lua_pop(L, 1);
            bool counted = false;
            if (field("ignore_error_stats_update", LUA_TBOOLEAN)) {
                counted = lua_toboolean(L, -1);
                lua_pop(L, 1);
            }
            (counted ? resp_error_uncounted : resp_error)(out, msg);
            free(msg);
            break;
        }
        if (field("ok", LUA_TSTRING)) {
            char *msg = one_line();
            lua_pop(L, 1);
            resp_simple(out, msg);
            free(msg);
            break;
        }
        if (field("double", LUA_TNUMBER)) {
            resp_double(out, lua_tonumber(L, -1), proto);
            lua_pop(L, 1);
            break;
        }
        if (field("big_number", LUA_TSTRING)) {
            size_t n;
            const char *s = lua_tolstring(L, -1, &n);
            if (proto == 3)
                resp_buf_printf(out, "(%.*s\r\n", (int)n, s);
            else
                resp_bulk(out, s, n);
            lua_pop(L, 1);
            break;
        }
        bool map = field("map", LUA_TTABLE);
        if (map || field("set", LUA_TTABLE)) {
            size_t n = 0;
            for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1))
                n++;
            (map ? resp_map : resp_set)(out, n, proto);
            for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) {
                lua_pushvalue(L, -2);
                reply_value(out, proto, depth + 1); /* the key, or the set's member */
                lua_pop(L, 1);
                if (map)
                    reply_value(out, proto, depth + 1);
            }
            lua_pop(L, 1);
            break;
        }
        /* An array: t[1], t[2] ... up to the first nil. */
        size_t n = 0;
        for (;; n++) {
            lua_rawgeti(L, -1, (int)n + 1);
            bool nil = lua_isnil(L, -1);
            lua_pop(L, 1);
            if (nil)
                break;
        }
        resp_array(out, n);
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, -1, (int)i + 1);
            reply_value(out, proto, depth + 1);
            lua_pop(L, 1);
        }
        break;
    }
    default:
        resp_null(out, proto);
    }
}

/* KEYS or ARGV: a new array of argv[from..from+n) in the real globals. */
static void set_array(const char *name, const struct db_str *argv, size_t n)
{
    lua_getfield(L, LUA_REGISTRYINDEX, "shmkv.globals");
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushlstring(L, argv[i].p, argv[i].n);
        lua_rawseti(L, -2, (int)i + 1);
    }
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

void scr_eval(struct conn *c, bool by_sha, bool ro)
{
    int64_t numkeys;
    if (kv_str2ll(c->argv[2].p, c->argv[2].n, &numkeys)) {
        resp_error(OUT(c), "ERR value is not an integer or out of range");
        return;
    }
    if (numkeys > (int64_t)c->argc - 3) {
        resp_error(OUT(c), "ERR Number of keys can't be greater than number of args");
        return;
    }
    if (numkeys < 0) {
        resp_error(OUT(c), "ERR Number of keys can't be negative");
        return;
    }
    char sha[41], fn[43];
    if (by_sha) {
        if (!scr_exists(c->argv[1].p, c->argv[1].n)) {
            resp_error(OUT(c), "NOSCRIPT No matching script. Please use EVAL.");
            return;
        }
        func_name(c->argv[1].p, 40, fn);
        memcpy(sha, fn + 2, 41);
    } else {
        char err[1024];
        if (scr_load(c->argv[1].p, c->argv[1].n, sha, err, sizeof err)) {
            resp_error(OUT(c), err);
            return;
        }
        func_name(sha, 40, fn);
    }
    set_array("KEYS", c->argv + 3, (size_t)numkeys);
    set_array("ARGV", c->argv + 3 + numkeys, c->argc - 3 - (size_t)numkeys);
    run = (struct run){.caller = c, .ro = ro, .resp = 2};
    lua_pushcfunction(L, on_error);
    lua_getfield(L, LUA_REGISTRYINDEX, fn);
    int rc = lua_pcall(L, 0, 1, -2);
    if (rc == 0) {
        reply_value(OUT(c), c->proto, 0);
    } else if (lua_istable(L, -1)) {
        lua_getfield(L, -1, "ignore_error_stats_update");
        bool counted = lua_toboolean(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, -1, "err");
        lua_getfield(L, -2, "source");
        lua_getfield(L, -3, "line");
        const char *e = lua_tostring(L, -3), *src = lua_tostring(L, -2);
        if (!e)
            e = "ERR";
        size_t cap = strlen(e) + (src ? strlen(src) : 0) + 96;
        char *msg = kv_xmalloc(cap);
        if (src && lua_isnumber(L, -1))
            snprintf(msg, cap, "%s script: %s, on %s:%d.", e, sha, src, (int)lua_tonumber(L, -1));
        else
            snprintf(msg, cap, "%s", e);
        for (char *q = msg; *q; q++)
            if (*q == '\r' || *q == '\n')
                *q = ' ';
        (counted ? resp_error_uncounted : resp_error)(OUT(c), msg);
        free(msg);
        lua_pop(L, 3);
    } else {
        resp_errorf(OUT(c), "ERR Error running script (call to %s): @user_script: %s", fn,
                    lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
    }
    lua_settop(L, 0);
    run.caller = NULL;
    lua_gc(L, LUA_GCSTEP, 1);
}
