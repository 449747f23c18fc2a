/*
 * scr — the Lua scripting engine (see scr.h): the sandbox, the redis
 * library, the conversions between Lua values and replies, running a
 * script with Redis 7.0's error texts and its busy-script rules, and
 * EVAL's script cache. FUNCTION's libraries are in scr_fn.c.
 *
 * Sandbox, as Redis 7.0 has it: the base, table, string and math
 * libraries, cjson, bit, cmsgpack and struct; no os, io, package, debug, print, dofile,
 * loadfile, require, module, setfenv, getfenv or newproxy; loadstring and
 * load refuse bytecode. Stock Lua 5.1 has no read-only tables, so the
 * globals and every library table are read through proxies whose
 * __newindex refuses, and rawset refuses a proxy: a script cannot leave
 * state behind for the next one. Reading an unset global is an error.
 *
 * A state's heap is bounded while a script (or a library's code at
 * FUNCTION LOAD) runs: past lua-memory-limit an allocation fails, which
 * fails the script with "not enough memory", and the daemon goes on.
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

#include "acl.h"
#include "cmd.h"
#include "kv_mem.h"
#include "kv_num.h"
#include "kv_sha1.h"
#include "scr_conv.h"
#include "scr_int.h"
#include "scr_libs.h"

struct scr_vm scr_ev, scr_fn;
static struct conn *sc; /* the scripts' client: redis.call runs commands as it */
static size_t nscripts, script_bytes;
static size_t nshebang;   /* loaded scripts with a shebang: their flags are in the registry */
static unsigned gc_calls; /* scripts run since the last garbage-collection step */

/* The script that runs (caller set), or the library code FUNCTION LOAD
 * runs (loading set). */
static struct run {
    struct conn *caller;
    struct scr_vm *vm;
    bool ro;        /* write commands are refused */
    bool eval;      /* EVAL's family: SCRIPT KILL stops it, not FUNCTION KILL */
    unsigned flags; /* SCR_* */
    int resp;       /* redis.setresp */
    bool wrote;     /* it ran a write command: it may not be killed */
    bool timedout;  /* past busy-reply-threshold: the loop answers others */
    bool killed;    /* SCRIPT KILL or FUNCTION KILL asked */
    bool loading;
    unsigned load_limit_ms;
    uint64_t start_ms;
    char name[128]; /* a SHA-1, or the function's name */
} run;

#define PROXIES "shmkv.proxies"  /* registry: proxy → true, for rawset */
#define GLOBALS "shmkv.globals"  /* registry: the real globals (KEYS and ARGV go there) */
#define GMETA "shmkv.gmeta"      /* registry: the globals proxy's metatable */
#define SHOWN_MT "shmkv.shownmt" /* registry: what getmetatable of a proxy gives */
#define LOADAPI "shmkv.loadapi"  /* registry: the globals of a library's code (scr_fn_api) */
#define HOOK_EVERY 100000        /* instructions between two looks at the clock, as Redis's */
#define GC_EVERY 50              /* scripts between two garbage-collection steps, as Redis's */
#define ON_ERROR_REF 1           /* registry[1]: scr_on_error, the first reference made */

const char *const scr_flag_names[SCR_NFLAGS] = {"no-writes", "allow-oom", "allow-stale",
                                                "no-cluster", "allow-cross-slot-keys"};

unsigned scr_flag_parse(const char *s, size_t n)
{
    for (unsigned i = 0; i < SCR_NFLAGS; i++)
        if (strlen(scr_flag_names[i]) == n && !memcmp(scr_flag_names[i], s, n))
            return 1u << i;
    return 0;
}

/* ---- the allocator ---- */

/* Lua's allocator, counting what the state holds. Growth fails past the
 * limit only while a script or a library's code runs: anywhere else (our
 * own pushes outside a protected call) a failure would abort the daemon. */
static void *vm_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct scr_vm *vm = ud;
    if (nsize == 0) {
        free(ptr);
        vm->used -= osize;
        return NULL;
    }
    int64_t limit = srv.conf.lua_memory_limit;
    if (nsize > osize && limit > 0 && (run.caller || run.loading) && run.vm == vm &&
        vm->used - osize + nsize > (size_t)limit)
        return NULL;
    void *p = realloc(ptr, nsize);
    if (p)
        vm->used = vm->used - osize + nsize;
    return p;
}

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

enum { PROXY_PLAIN, PROXY_GLOBALS, PROXY_STRICT };

/* Replaces the table on top of the stack by a read-only proxy of it. For
 * the globals (and a strict proxy), reading a missing name is an error
 * too. */
static void make_proxy(lua_State *l, int kind)
{
    bool globals = kind != PROXY_PLAIN;
    int real = lua_gettop(l);
    lua_newtable(l); /* the proxy */
    lua_newtable(l); /* its metatable */
    lua_pushvalue(l, real);
    lua_setfield(l, -2, "__real");
    if (globals) {
        lua_pushcfunction(l, globals_index);
        if (kind == PROXY_GLOBALS) {
            lua_pushvalue(l, -2);
            lua_setfield(l, LUA_REGISTRYINDEX, GMETA);
        }
    } else {
        lua_pushvalue(l, real);
    }
    lua_setfield(l, -2, "__index");
    lua_pushcfunction(l, ro_newindex);
    lua_setfield(l, -2, "__newindex");
    /* getmetatable gets an empty read-only table, not this one: through
     * __real it would reach the real table. */
    lua_getfield(l, LUA_REGISTRYINDEX, SHOWN_MT);
    lua_setfield(l, -2, "__metatable");
    lua_setmetatable(l, -2);
    lua_getfield(l, LUA_REGISTRYINDEX, PROXIES);
    lua_pushvalue(l, -2);
    lua_pushboolean(l, 1);
    lua_rawset(l, -3);
    lua_pop(l, 1);
    lua_replace(l, real);
}

/* Pushes the table a proxy stands for, or the value at idx itself. */
static void push_real(lua_State *l, int idx)
{
    lua_getfield(l, LUA_REGISTRYINDEX, PROXIES);
    lua_pushvalue(l, idx);
    lua_rawget(l, -2);
    bool proxy = lua_toboolean(l, -1);
    lua_pop(l, 2);
    if (proxy && lua_getmetatable(l, idx)) {
        lua_getfield(l, -1, "__real");
        lua_remove(l, -2);
    } else {
        lua_pushvalue(l, idx);
    }
}

/* next, pairs, ipairs and rawget see through a proxy, as they see a
 * read-only table in Redis (pairs(redis) lists its functions), without
 * handing the real table out. */
static int sandbox_next(lua_State *l)
{
    luaL_checktype(l, 1, LUA_TTABLE);
    lua_settop(l, 2);
    push_real(l, 1);
    lua_replace(l, 1);
    if (lua_next(l, 1))
        return 2;
    lua_pushnil(l);
    return 1;
}

static int sandbox_pairs(lua_State *l)
{
    luaL_checktype(l, 1, LUA_TTABLE);
    lua_pushcfunction(l, sandbox_next);
    lua_pushvalue(l, 1);
    lua_pushnil(l);
    return 3;
}

static int ipairs_step(lua_State *l)
{
    int i = luaL_checkint(l, 2) + 1;
    push_real(l, 1);
    lua_pushinteger(l, i);
    lua_rawgeti(l, -2, i);
    return lua_isnil(l, -1) ? 0 : 2;
}

static int sandbox_ipairs(lua_State *l)
{
    luaL_checktype(l, 1, LUA_TTABLE);
    lua_pushcfunction(l, ipairs_step);
    lua_pushvalue(l, 1);
    lua_pushinteger(l, 0);
    return 3;
}

static int sandbox_rawget(lua_State *l)
{
    luaL_checktype(l, 1, LUA_TTABLE);
    luaL_checkany(l, 2);
    push_real(l, 1);
    lua_pushvalue(l, 2);
    lua_rawget(l, -2);
    return 1;
}

/* setmetatable refuses a proxy as Redis refuses a read-only table; the
 * base library's own does the rest. */
static int sandbox_setmetatable(lua_State *l)
{
    lua_getfield(l, LUA_REGISTRYINDEX, PROXIES);
    lua_pushvalue(l, 1);
    lua_rawget(l, -2);
    if (lua_toboolean(l, -1)) {
        lua_pushstring(l, "Attempt to modify a readonly table");
        return lua_error(l);
    }
    lua_pop(l, 2);
    lua_pushvalue(l, lua_upvalueindex(1));
    lua_insert(l, 1);
    lua_call(l, lua_gettop(l) - 1, LUA_MULTRET);
    return lua_gettop(l);
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

/* ---- redis.call ---- */

/* Redis 7.0's commands a script may not run. */
static bool noscript(const char *name)
{
    static const char *const deny[] = {
        "eval", "evalsha", "eval_ro", "evalsha_ro", "multi", "exec", "discard", "watch", "unwatch",
        "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe",
        "blpop", "brpop", "blmove", "brpoplpush", "bzpopmin", "bzpopmax", "wait", "monitor",
        "hello", "auth", "quit", "reset", "client", "config", "latency", "module", "debug", "save",
        "bgsave", "shutdown", "role", "cluster|reset", "fcall", "fcall_ro", "replicaof", "slaveof",
        "failover", "acl|cat", "acl|deluser", "acl|dryrun", "acl|genpass", "acl|getuser",
        "acl|list", "acl|load", "acl|log", "acl|save", "acl|setuser", "acl|users", "acl|whoami",
        /* of SCRIPT and FUNCTION, all but HELP */
        "script|load", "script|exists", "script|flush", "script|kill", "script|debug",
        "function|load", "function|delete", "function|flush", "function|list", "function|dump",
        "function|restore", "function|kill", "function|stats"};
    for (size_t i = 0; i < sizeof deny / sizeof deny[0]; i++)
        if (!strcasecmp(name, deny[i]))
            return true;
    return false;
}

/* Raises {err = msg} (a Redis error without its '-'). */
int scr_raise(lua_State *l, const char *msg)
{
    scr_push_error(l, msg, strlen(msg));
    return lua_error(l);
}

/* A redis lib call's arguments as a command line (*argv malloc'd, its
 * strings on the Lua stack): NULL, or the error to raise (nothing
 * allocated). */
static const char *lua_args(lua_State *l, struct db_str **out, int *n)
{
    int argc = lua_gettop(l);
    if (argc == 0)
        return "ERR Please specify at least one argument for this redis lib call";
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
            return "ERR Lua redis lib command arguments must be strings or integers";
        }
        argv[i].p = lua_tolstring(l, i + 1, &argv[i].n);
    }
    *out = argv;
    *n = argc;
    return NULL;
}

static int call_common(lua_State *l, bool protect)
{
    struct db_str *argv;
    int argc;
    const char *bad = lua_args(l, &argv, &argc);
    if (bad)
        return scr_raise(l, bad);
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
    /* The calling user's rules apply to what the script runs. */
    char name[96];
    int denied = !why && run.caller && run.caller->user
                     ? cmd_acl_check(run.caller, cmd, argv, (size_t)argc, run.caller->user, "lua",
                                     name, sizeof name)
                     : ACL_OK;
    if (denied == ACL_DENIED_CMD)
        why = "ERR The user executing the script can't run this command or subcommand";
    else if (denied == ACL_DENIED_KEY)
        why = "ERR The user executing the script can't access at least one of the keys "
              "mentioned in the command arguments";
    else if (denied == ACL_DENIED_CHANNEL)
        why = "ERR The user executing the script can't publish to the channel mentioned in the "
              "command";
    /* Over maxmemory, a command that may grow the data is refused only
     * while the script has written nothing: it cannot stop half-way. */
    if (!why)
        why = cmd_script_refusal(cmd, !(run.flags & SCR_ALLOW_OOM) && !run.wrote);
    if (why) {
        free(argv);
        if (protect) {
            scr_push_error(l, why, strlen(why));
            return 1;
        }
        return scr_raise(l, why);
    }
    if (cmd->flags & CMD_WRITE)
        run.wrote = true; /* from now on SCRIPT KILL would leave it half done */
    sc->proto = run.resp;
    sc->argv = argv;
    sc->argc = (size_t)argc;
    /* Commands see the caller's user (SORT's BY and GET ask it). */
    sc->user = run.caller ? run.caller->user : NULL;
    resp_buf_consume(&sc->out, resp_buf_used(&sc->out));
    cmd_call(sc, cmd);
    sc->user = NULL;
    sc->argv = NULL;
    sc->argc = 0;
    free(argv);
    const char *p = resp_buf_data(&sc->out), *end = p + resp_buf_used(&sc->out);
    bool err = false;
    if (p == end) {
        lua_pushboolean(l, 0); /* no reply (cannot happen): as a nil bulk */
        return 1;
    }
    scr_push_reply(l, &p, end, &err);
    if (err && !protect)
        return lua_error(l);
    return 1;
}

/* redis.acl_check_cmd(command, arg...): whether the calling user may run
 * that command line (without running it). */
static int l_acl_check_cmd(lua_State *l)
{
    struct db_str *argv;
    int argc;
    const char *why = lua_args(l, &argv, &argc);
    if (why)
        return scr_raise(l, why);
    const struct cmd *cmd = cmd_lookup(argv[0].p, argv[0].n);
    if (!cmd) { /* the arity is not checked, as in Redis */
        free(argv);
        return scr_raise(l, "ERR Invalid command passed to redis.acl_check_cmd()");
    }
    bool ok = true;
    if (run.caller && run.caller->user)
        ok = cmd_acl_allowed(cmd, argv, (size_t)argc, run.caller->user);
    free(argv);
    lua_pushboolean(l, ok);
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
    scr_push_error(l, s, n);
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

void scr_swapped(unsigned pa, unsigned pb)
{
    if (sc && (sc->db == pa || sc->db == pb))
        sc->db = sc->db == pa ? pb : pa;
}

void scr_sha1_hex(const char *p, size_t n, char out[41])
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
    scr_sha1_hex(s ? s : "", s ? n : 0, hex);
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
        return scr_raise(l, "ERR redis.setresp() requires one argument.");
    int v = (int)lua_tonumber(l, 1);
    if (v != 2 && v != 3)
        return scr_raise(l, "ERR RESP version must be 2 or 3.");
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

void scr_push_log_api(lua_State *l)
{
    static const struct {
        const char *name;
        int v;
    } levels[] = {{"LOG_DEBUG", LOG_DEBUG},
                  {"LOG_VERBOSE", LOG_VERBOSE},
                  {"LOG_NOTICE", LOG_NOTICE},
                  {"LOG_WARNING", LOG_WARNING}};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        lua_pushnumber(l, levels[i].v);
        lua_setfield(l, -2, levels[i].name);
    }
    lua_pushcfunction(l, l_log);
    lua_setfield(l, -2, "log");
    lua_pushstring(l, SRV_VERSION);
    lua_setfield(l, -2, "REDIS_VERSION");
    int maj = 0, min = 0, patch = 0;
    sscanf(SRV_VERSION, "%d.%d.%d", &maj, &min, &patch);
    lua_pushnumber(l, (maj << 16) | (min << 8) | patch);
    lua_setfield(l, -2, "REDIS_VERSION_NUM");
}

/* The redis table: a function's lacks the debugger's calls and
 * replicate_commands, as in Redis 7.0. */
static void open_redis(lua_State *l, bool functions)
{
    static const luaL_Reg fns[] = {{"call", l_call},
                                   {"pcall", l_pcall},
                                   {"error_reply", l_error_reply},
                                   {"status_reply", l_status_reply},
                                   {"sha1hex", l_sha1hex},
                                   {"setresp", l_setresp},
                                   {"set_repl", l_nothing},
                                   {"acl_check_cmd", l_acl_check_cmd},
                                   {NULL, NULL}};
    static const luaL_Reg eval_only[] = {{"replicate_commands", l_true},
                                         {"breakpoint", l_nothing},
                                         {"debug", l_nothing},
                                         {NULL, NULL}};
    lua_newtable(l);
    luaL_register(l, NULL, fns);
    if (!functions)
        luaL_register(l, NULL, eval_only);
    scr_push_log_api(l);
    static const struct {
        const char *name;
        int v;
    } repl[] = {
        {"REPL_NONE", 0}, {"REPL_AOF", 1}, {"REPL_SLAVE", 2}, {"REPL_REPLICA", 2}, {"REPL_ALL", 3}};
    for (size_t i = 0; i < sizeof repl / sizeof repl[0]; i++) {
        lua_pushnumber(l, repl[i].v);
        lua_setfield(l, -2, repl[i].name);
    }
    lua_setglobal(l, "redis");
}

/* ---- the states ---- */

void scr_vm_open(struct scr_vm *vm, bool functions)
{
    vm->used = 0;
    vm->functions = functions;
    lua_State *l = vm->L = lua_newstate(vm_alloc, vm);
    if (!l)
        kv_oom(0);
    lua_pushcfunction(l, scr_on_error);
    if (luaL_ref(l, LUA_REGISTRYINDEX) != ON_ERROR_REF)
        abort(); /* a fresh state's first reference is 1 */
    lua_newtable(l);
    lua_setfield(l, LUA_REGISTRYINDEX, PROXIES);
    lua_newtable(l); /* an empty table, read-only: its own proxy metatable refuses writes */
    lua_newtable(l);
    lua_pushcfunction(l, ro_newindex);
    lua_setfield(l, -2, "__newindex");
    lua_pushboolean(l, 0);
    lua_setfield(l, -2, "__metatable");
    lua_setmetatable(l, -2);
    lua_setfield(l, LUA_REGISTRYINDEX, SHOWN_MT);
    static const lua_CFunction libs[] = {luaopen_base, luaopen_table, luaopen_string, luaopen_math,
                                         luaopen_bit};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        lua_pushcfunction(l, libs[i]);
        lua_call(l, 0, 0);
    }
    lua_pushcfunction(l, luaopen_cjson); /* returns its table, sets no global */
    lua_call(l, 0, 1);
    lua_setglobal(l, "cjson");
    lua_pushcfunction(l, scr_open_cmsgpack);
    lua_call(l, 0, 0);
    lua_pushcfunction(l, scr_open_struct);
    lua_call(l, 0, 0);
    lua_settop(l, 0);
    open_redis(l, functions);
    static const char *const gone[] = {"print",  "dofile",  "loadfile", "require",
                                       "module", "setfenv", "getfenv",  "newproxy"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        lua_pushnil(l);
        lua_setglobal(l, gone[i]);
    }
    static const luaL_Reg own[] = {{"rawset", sandbox_rawset}, {"rawget", sandbox_rawget},
                                   {"next", sandbox_next},     {"pairs", sandbox_pairs},
                                   {"ipairs", sandbox_ipairs}, {NULL, NULL}};
    for (const luaL_Reg *r = own; r->name; r++) {
        lua_pushcfunction(l, r->func);
        lua_setglobal(l, r->name);
    }
    lua_getglobal(l, "setmetatable");
    lua_pushcclosure(l, sandbox_setmetatable, 1);
    lua_setglobal(l, "setmetatable");
    lua_pushcfunction(l, sandbox_loadstring);
    lua_setglobal(l, "loadstring");
    lua_pushcfunction(l, sandbox_loadstring);
    lua_setglobal(l, "load");
    /* Library tables, then the globals, behind read-only proxies. */
    static const char *const tables[] = {"string", "table",    "math",      "bit",  "cjson",
                                         "struct", "cmsgpack", "coroutine", "redis"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        lua_getglobal(l, tables[i]);
        if (lua_istable(l, -1)) {
            make_proxy(l, PROXY_PLAIN);
            lua_setglobal(l, tables[i]);
        } else {
            lua_pop(l, 1);
        }
    }
    /* Strings' metatable: its __index the string proxy, and getmetatable('')
     * a read-only proxy of it, so that no script can change how strings
     * behave for the next one. */
    lua_pushliteral(l, "");
    lua_getmetatable(l, -1);
    lua_getglobal(l, "string");
    lua_setfield(l, -2, "__index");
    lua_pushvalue(l, -1);
    make_proxy(l, PROXY_PLAIN);
    lua_setfield(l, -2, "__metatable");
    lua_pop(l, 2);
    lua_pushvalue(l, LUA_GLOBALSINDEX);
    lua_pushvalue(l, -1);
    lua_setfield(l, LUA_REGISTRYINDEX, GLOBALS);
    make_proxy(l, PROXY_GLOBALS);
    lua_getfield(l, LUA_REGISTRYINDEX, GLOBALS);
    lua_pushvalue(l, -2);
    lua_setfield(l, -2, "_G"); /* _G is the proxy */
    lua_pop(l, 1);
    lua_replace(l, LUA_GLOBALSINDEX);
}

void scr_vm_close(struct scr_vm *vm)
{
    if (vm->L)
        lua_close(vm->L);
    vm->L = NULL;
    vm->used = 0;
}

void scr_fn_api(lua_State *l, lua_CFunction register_fn)
{
    lua_newtable(l); /* the globals a library's code sees */
    lua_newtable(l); /* its redis */
    lua_pushcfunction(l, register_fn);
    lua_setfield(l, -2, "register_function");
    scr_push_log_api(l);
    make_proxy(l, PROXY_STRICT); /* redis.call at load: "nonexistent global", as in Redis */
    lua_setfield(l, -2, "redis");
    lua_setfield(l, LUA_REGISTRYINDEX, LOADAPI);
}

void scr_globals_for_load(lua_State *l, bool load)
{
    lua_getfield(l, LUA_REGISTRYINDEX, GMETA);
    lua_getfield(l, LUA_REGISTRYINDEX, load ? LOADAPI : GLOBALS);
    lua_setfield(l, -2, "__real");
    lua_pop(l, 1);
}

void scr_init(void)
{
    scr_vm_open(&scr_ev, false);
    nscripts = script_bytes = nshebang = 0;
    if (!sc) {
        sc = kv_xcalloc(1, sizeof *sc);
        sc->fd = -1;
        sc->flags = CONN_AUTHED | CONN_IN_EXEC; /* nothing it runs may block */
        snprintf(sc->addr, sizeof sc->addr, "lua");
        snprintf(sc->name, sizeof sc->name, "lua");
        resp_buf_init(&sc->in);
        resp_buf_init(&sc->out);
    }
    scr_fn_start();
}

void scr_flush(void)
{
    scr_vm_close(&scr_ev);
    scr_vm_open(&scr_ev, false);
    nscripts = script_bytes = nshebang = 0;
}

void scr_destroy(void)
{
    scr_vm_close(&scr_ev);
    scr_fn_stop();
    nscripts = script_bytes = 0;
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
    return scr_ev.used;
}

size_t scr_scripts_bytes(void)
{
    return script_bytes;
}

/* ---- running a script ---- */

/* The error handler: an error becomes {err = ...} with where the script
 * was when it was raised, as Redis 7.0's __redis__err__handler makes it. */
int scr_on_error(lua_State *l)
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

/* Every HOOK_EVERY instructions of a script or of a library's code: the
 * load's time limit; a script's busy state, the events the loop answers
 * meanwhile, and SCRIPT KILL. Once it stops a script it fires on every
 * line, so that a pcall inside cannot keep it going. */
static void hook(lua_State *l, lua_Debug *ar)
{
    (void)ar;
    uint64_t now = srv_mstime();
    if (run.loading) {
        if (now - run.start_ms >= run.load_limit_ms) {
            lua_sethook(l, hook, LUA_MASKLINE, 0);
            scr_raise(l, "ERR FUNCTION LOAD timeout");
        }
        return;
    }
    if (!run.caller)
        return;
    if (!run.timedout) {
        if (now - run.start_ms < (uint64_t)srv.conf.busy_reply_ms)
            return;
        srv_log(LOG_WARNING,
                "Slow script detected: still in execution after %llu milliseconds. You can try "
                "killing the script using the %s command. Script name is: %s.",
                (unsigned long long)(now - run.start_ms),
                run.eval ? "SCRIPT KILL" : "FUNCTION KILL", run.name);
        run.timedout = true;
    }
    srv_events_while_busy(run.caller);
    if (run.killed) {
        srv_log(LOG_WARNING, "Lua script killed by user with SCRIPT KILL.");
        lua_sethook(l, hook, LUA_MASKLINE, 0);
        scr_raise(l, "ERR Script killed by user with SCRIPT KILL...");
    }
}

void scr_load_guard(struct scr_vm *vm, bool on, unsigned limit_ms)
{
    if (on) {
        run = (struct run){
            .vm = vm, .loading = true, .load_limit_ms = limit_ms, .start_ms = srv_mstime()};
        lua_sethook(vm->L, hook, LUA_MASKCOUNT, HOOK_EVERY);
    } else {
        lua_sethook(vm->L, NULL, 0, 0);
        run = (struct run){0};
    }
}

bool scr_may_start(struct conn *c, unsigned flags, bool ro)
{
    if (flags & SCR_COMPAT)
        return true; /* a script without a shebang: its commands are checked one by one */
    if (!(flags & (SCR_ALLOW_OOM | SCR_NO_WRITES)) && srv.over_maxmemory && srv.conf.maxmemory) {
        resp_error(OUT(c), "OOM allow-oom flag is not set on the script, can not run it when used "
                           "memory > 'maxmemory'");
        return false;
    }
    if (!(flags & SCR_NO_WRITES)) {
        const char *why = cmd_misconf();
        if (why) {
            resp_error(OUT(c), why);
            return false;
        }
        if (ro) {
            resp_error(OUT(c), "ERR Can not execute a script with write flag using *_ro command.");
            return false;
        }
    }
    return true;
}

void scr_run(struct conn *c, struct scr_vm *vm, const char *name, bool eval, unsigned flags,
             bool ro, int nargs)
{
    lua_State *l = vm->L;
    size_t before = vm->used;
    lua_rawgeti(l, LUA_REGISTRYINDEX, ON_ERROR_REF); /* made once: not a closure a call */
    lua_insert(l, -(nargs + 2));
    run = (struct run){.caller = c,
                       .vm = vm,
                       .ro = ro || (flags & SCR_NO_WRITES),
                       .eval = eval,
                       .flags = flags,
                       .resp = 2,
                       .start_ms = srv_mstime()};
    size_t nl = strlen(name);
    if (nl >= sizeof run.name)
        nl = sizeof run.name - 1;
    memcpy(run.name, name, nl); /* not snprintf: it was a tenth of a do-nothing script's time */
    run.name[nl] = '\0';
    /* The script's calls start in the caller's database; a SELECT among
     * them holds for the calls after it, not for the caller (Redis 7). */
    sc->db = c->db;
    if (srv.conf.busy_reply_ms > 0)
        lua_sethook(l, hook, LUA_MASKCOUNT, HOOK_EVERY);
    int rc = lua_pcall(l, nargs, 1, -(nargs + 2));
    lua_sethook(l, NULL, 0, 0);
    if (run.timedout)
        srv_busy_end();
    if (rc == 0) {
        size_t budget = SCR_REPLY_VALUES;
        scr_reply_value(l, OUT(c), c->proto, run.resp, 0, &budget);
    } else if (lua_istable(l, -1)) {
        lua_getfield(l, -1, "ignore_error_stats_update");
        bool counted = lua_toboolean(l, -1);
        lua_pop(l, 1);
        lua_getfield(l, -1, "err");
        lua_getfield(l, -2, "source");
        lua_getfield(l, -3, "line");
        const char *e = lua_tostring(l, -3), *src = lua_tostring(l, -2);
        if (!e)
            e = "ERR";
        size_t cap = strlen(e) + (src ? strlen(src) : 0) + strlen(name) + 64;
        char *msg = kv_xmalloc(cap);
        if (src && lua_isnumber(l, -1))
            snprintf(msg, cap, "%s script: %s, on %s:%d.", e, name, src, (int)lua_tonumber(l, -1));
        else
            snprintf(msg, cap, "%s", e);
        for (char *q = msg; *q; q++)
            if (*q == '\r' || *q == '\n')
                *q = ' ';
        (counted ? resp_error_uncounted : resp_error)(OUT(c), msg);
        free(msg);
    } else {
        /* Not through the handler: out of memory. */
        resp_errorf(OUT(c), "ERR Error running script (call to %s%s): @user_%s: %s",
                    eval ? "f_" : "", name, eval ? "script" : "function",
                    lua_tostring(l, -1) ? lua_tostring(l, -1) : "?");
    }
    run.caller = NULL;
    run.vm = NULL;
    lua_settop(l, 0);
    /* What a script allocated is garbage once it returns (it cannot keep
     * anything): a script that took much gives it back now. */
    if (rc == LUA_ERRMEM || vm->used > 2 * before + (1u << 20)) {
        lua_gc(l, LUA_GCCOLLECT, 0);
        gc_calls = 0;
    } else if (++gc_calls == GC_EVERY) {
        /* As Redis: a step of that size every GC_EVERY scripts, not one a
         * script (a step a call was half of a do-nothing EVALSHA's time). */
        lua_gc(l, LUA_GCSTEP, GC_EVERY);
        gc_calls = 0;
    }
}

/* ---- busy scripts ---- */

bool scr_busy(void)
{
    return run.caller && run.timedout;
}

const char *scr_busy_error(void)
{
    return run.eval ? "BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
                      "SHUTDOWN NOSAVE."
                    : "BUSY Redis is busy running a script. You can only call FUNCTION KILL or "
                      "SHUTDOWN NOSAVE.";
}

void scr_kill(struct conn *c, bool function)
{
    if (!run.caller)
        resp_error(OUT(c), "NOTBUSY No scripts in execution right now.");
    else if (run.wrote)
        resp_error(OUT(c), "UNKILLABLE Sorry the script already executed write commands against "
                           "the dataset. You can either wait the script termination or kill the "
                           "server in a hard way using the SHUTDOWN NOSAVE command.");
    else if (function == run.eval)
        resp_error(OUT(c), scr_busy_error()); /* the other kind's KILL */
    else {
        run.killed = true;
        resp_simple(OUT(c), "OK");
    }
}

void scr_stats(struct conn *c)
{
    if (run.caller && run.eval) {
        resp_error(OUT(c), scr_busy_error());
        return;
    }
    resp_map(OUT(c), 2, c->proto);
    resp_bulk(OUT(c), "running_script", 14);
    if (!run.caller) {
        resp_null(OUT(c), c->proto);
    } else {
        const struct conn *k = run.caller;
        resp_map(OUT(c), 3, c->proto);
        resp_bulk(OUT(c), "name", 4);
        resp_bulk(OUT(c), run.name, strlen(run.name));
        resp_bulk(OUT(c), "command", 7);
        resp_array(OUT(c), k->argc);
        for (size_t i = 0; i < k->argc; i++)
            resp_bulk(OUT(c), k->argv[i].p, k->argv[i].n);
        resp_bulk(OUT(c), "duration_ms", 11);
        resp_int(OUT(c), (int64_t)(srv_mstime() - run.start_ms));
    }
    resp_bulk(OUT(c), "engines", 7);
    resp_map(OUT(c), 1, c->proto);
    resp_bulk(OUT(c), "LUA", 3);
    resp_map(OUT(c), 2, c->proto);
    resp_bulk(OUT(c), "libraries_count", 15);
    resp_int(OUT(c), (int64_t)scr_fn_libraries());
    resp_bulk(OUT(c), "functions_count", 15);
    resp_int(OUT(c), (int64_t)scr_fn_functions());
}

/* ---- EVAL's scripts ---- */

/* A script's registry keys: "f_" and its SHA-1 in lowercase holds its
 * function, "F_" and the same its flags (SCR_*). */
static void func_name(const char *sha, size_t n, char out[43])
{
    out[0] = 'f';
    out[1] = '_';
    for (size_t i = 0; i < 40; i++) {
        char ch = i < n ? sha[i] : '0';
        out[2 + i] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch; /* not the locale's tolower */
    }
    out[42] = '\0';
}

bool scr_exists(const char *sha, size_t n)
{
    if (n != 40)
        return false;
    char fn[43];
    func_name(sha, n, fn);
    lua_getfield(scr_ev.L, LUA_REGISTRYINDEX, fn);
    bool found = lua_isfunction(scr_ev.L, -1);
    lua_pop(scr_ev.L, 1);
    return found;
}

bool scr_shebang_word(const char *line, size_t len, size_t *at, const char **w, size_t *wn)
{
    while (*at < len && isspace((unsigned char)line[*at]))
        (*at)++;
    if (*at == len)
        return false;
    *w = line + *at;
    while (*at < len && !isspace((unsigned char)line[*at]))
        (*at)++;
    *wn = (size_t)(line + *at - *w);
    return true;
}

/* A script's shebang, "#!lua [flags=f1,f2...]" on its first line, as
 * Redis 7.0 reads it: *flags gets its flags (SCR_COMPAT when there is no
 * shebang) and *skip the line's length, which the compiler does not see
 * (its newline it does, so that lines keep their numbers). 0, or -1 with
 * Redis's error in err. */
static int eval_shebang(const char *body, size_t n, unsigned *flags, size_t *skip, char *err,
                        size_t errlen)
{
    *flags = SCR_COMPAT;
    *skip = 0;
    if (n < 2 || memcmp(body, "#!", 2))
        return 0;
    const char *eol = memchr(body, '\n', n);
    size_t len = eol ? (size_t)(eol - body) : n;
    *skip = len;
    *flags = 0;
    const char *w;
    size_t at = 0, ws;
    for (int part = 0; scr_shebang_word(body, len, &at, &w, &ws); part++) {
        int wn = (int)ws;
        if (part == 0) {
            if (wn != 5 || memcmp(w, "#!lua", 5)) {
                snprintf(err, errlen, "ERR Unexpected engine in script shebang: %.*s", wn, w);
                return -1;
            }
        } else if (wn >= 6 && !memcmp(w, "flags=", 6)) {
            for (const char *f = w + 6, *wend = w + wn; f <= wend;) {
                const char *comma = memchr(f, ',', (size_t)(wend - f));
                size_t fl = comma ? (size_t)(comma - f) : (size_t)(wend - f);
                if (!(wn == 6 && !comma)) { /* "flags=" alone: none */
                    unsigned one = scr_flag_parse(f, fl);
                    if (!one) {
                        snprintf(err, errlen, "ERR Unexpected flag in script shebang: %.*s",
                                 (int)fl, f);
                        return -1;
                    }
                    *flags |= one;
                }
                f += fl + 1;
            }
        } else {
            snprintf(err, errlen, "ERR Unknown lua shebang option: %.*s", wn, w);
            return -1;
        }
    }
    return 0;
}

int scr_load(const char *body, size_t n, char sha[41], char *err, size_t errlen)
{
    scr_sha1_hex(body, n, sha);
    if (scr_exists(sha, 40))
        return 0;
    unsigned flags;
    size_t skip;
    if (eval_shebang(body, n, &flags, &skip, err, errlen))
        return -1;
    lua_State *l = scr_ev.L;
    if (luaL_loadbuffer(l, body + skip, n - skip, "@user_script")) {
        snprintf(err, errlen, "ERR Error compiling script (new function): %s", lua_tostring(l, -1));
        lua_pop(l, 1);
        return -1;
    }
    char fn[43];
    func_name(sha, 40, fn);
    lua_setfield(l, LUA_REGISTRYINDEX, fn);
    if (!(flags & SCR_COMPAT)) {
        fn[0] = 'F';
        lua_pushnumber(l, flags);
        lua_setfield(l, LUA_REGISTRYINDEX, fn);
        nshebang++;
    }
    nscripts++;
    script_bytes += n + 43 + 64; /* the body, its name, and about a table entry */
    return 0;
}

void scr_push_array(lua_State *l, const struct db_str *argv, size_t n)
{
    lua_createtable(l, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_pushlstring(l, argv[i].p, argv[i].n);
        lua_rawseti(l, -2, (int)i + 1);
    }
}

bool scr_numkeys(struct conn *c, const char *bad, int64_t *numkeys)
{
    if (kv_str2ll(c->argv[2].p, c->argv[2].n, numkeys))
        resp_error(OUT(c), bad);
    else if (*numkeys > (int64_t)c->argc - 3)
        resp_error(OUT(c), "ERR Number of keys can't be greater than number of args");
    else if (*numkeys < 0)
        resp_error(OUT(c), "ERR Number of keys can't be negative");
    else
        return true;
    return false;
}

/* KEYS or ARGV: a new array of argv[0, n) in the real globals. */
static void set_array(lua_State *l, const char *name, const struct db_str *argv, size_t n)
{
    lua_getfield(l, LUA_REGISTRYINDEX, GLOBALS);
    scr_push_array(l, argv, n);
    lua_setfield(l, -2, name);
    lua_pop(l, 1);
}

void scr_eval(struct conn *c, bool by_sha, bool ro)
{
    int64_t numkeys;
    if (!scr_numkeys(c, "ERR value is not an integer or out of range", &numkeys))
        return;
    char sha[41], fn[43];
    lua_State *l = scr_ev.L;
    if (by_sha) {
        func_name(c->argv[1].p, c->argv[1].n, fn);
        if (c->argv[1].n == 40)
            lua_getfield(l, LUA_REGISTRYINDEX, fn);
        if (c->argv[1].n != 40 || !lua_isfunction(l, -1)) {
            lua_settop(l, 0);
            resp_error(OUT(c), "NOSCRIPT No matching script. Please use EVAL.");
            return;
        }
        memcpy(sha, fn + 2, 41);
    } else {
        char err[1024];
        if (scr_load(c->argv[1].p, c->argv[1].n, sha, err, sizeof err)) {
            resp_error(OUT(c), err);
            return;
        }
        func_name(sha, 40, fn);
        lua_getfield(l, LUA_REGISTRYINDEX, fn);
    }
    /* The script's function is on the stack. Only a script with a
     * shebang has flags of its own: most scripts need no look-up. */
    unsigned flags = SCR_COMPAT;
    if (nshebang) {
        fn[0] = 'F';
        lua_getfield(l, LUA_REGISTRYINDEX, fn);
        if (lua_isnumber(l, -1))
            flags = (unsigned)lua_tonumber(l, -1);
        lua_pop(l, 1);
    }
    if (!scr_may_start(c, flags, ro)) {
        lua_settop(l, 0);
        return;
    }
    set_array(l, "KEYS", c->argv + 3, (size_t)numkeys);
    set_array(l, "ARGV", c->argv + 3 + numkeys, c->argc - 3 - (size_t)numkeys);
    scr_run(c, &scr_ev, sha, true, flags, ro, 0);
}

bool scr_cmd_flags(const struct conn *c, const struct cmd *cmd, bool *write, bool *denyoom)
{
    unsigned flags;
    if (c->argc < 2 || !(cmd->flags & CMD_SCRIPTING))
        return false;
    if (cmd->fn == cmd_fcall || cmd->fn == cmd_fcall_ro) {
        if (!scr_fn_flags(c->argv[1].p, c->argv[1].n, &flags))
            return false;
    } else if (cmd->fn == cmd_evalsha || cmd->fn == cmd_evalsha_ro) {
        if (!nshebang || c->argv[1].n != 40)
            return false;
        char fn[43];
        func_name(c->argv[1].p, 40, fn);
        fn[0] = 'F';
        lua_getfield(scr_ev.L, LUA_REGISTRYINDEX, fn);
        bool has = lua_isnumber(scr_ev.L, -1);
        flags = (unsigned)lua_tonumber(scr_ev.L, -1);
        lua_pop(scr_ev.L, 1);
        if (!has)
            return false;
    } else {
        size_t skip;
        char err[256];
        if (eval_shebang(c->argv[1].p, c->argv[1].n, &flags, &skip, err, sizeof err))
            return false;
    }
    if (flags & SCR_COMPAT)
        return false;
    *write = !(flags & SCR_NO_WRITES);
    *denyoom = !(flags & (SCR_ALLOW_OOM | SCR_NO_WRITES)); /* no-writes implies allow-oom */
    return true;
}
