/*
 * fuzz_lua — a script's result turned into a reply (daemon/scr_conv.c,
 * scr_reply_value), for any Lua value a script can return: the input is a
 * small program that builds one (strings, numbers including NaN and the
 * infinities, booleans, nil, tables nested and holding themselves, and the
 * fields Redis reads: err, ok, double, big_number, map, set,
 * ignore_error_stats_update), converted in RESP2 and RESP3 under either
 * protocol the script chose. The reply must be one well-formed RESP value
 * that ends where the output ends; read back as redis.call would
 * (scr_push_reply) it must convert again.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "scr_conv.h"

/* Skips one RESP value at p; NULL if it is not one (or runs past end). */
static const char *skip_value(const char *p, const char *end, int depth)
{
    if (p >= end || depth > 2000)
        return NULL;
    const char *eol = memchr(p, '\r', (size_t)(end - p));
    if (!eol || eol + 1 >= end || eol[1] != '\n')
        return NULL;
    char type = *p;
    const char *next = eol + 2;
    char num[64];
    size_t ln = (size_t)(eol - p - 1);
    if (ln >= sizeof num)
        ln = sizeof num - 1;
    memcpy(num, p + 1, ln);
    num[ln] = '\0';
    long long n = strtoll(num, NULL, 10);
    switch (type) {
    case '+':
    case '-':
    case ':':
    case '_':
    case '#':
    case ',':
    case '(':
        return next;
    case '$':
    case '=':
        if (n < 0)
            return n == -1 ? next : NULL;
        if ((uint64_t)(end - next) < (uint64_t)n + 2 || next[n] != '\r' || next[n + 1] != '\n')
            return NULL;
        return next + n + 2;
    case '*':
    case '~':
    case '%':
        if (n < 0)
            return n == -1 ? next : NULL;
        for (long long i = 0; i < (type == '%' ? 2 * n : n) && next; i++)
            next = skip_value(next, end, depth + 1);
        return next;
    default:
        return NULL;
    }
}

static const char *const fields[] = {"err",
                                     "ok",
                                     "double",
                                     "big_number",
                                     "map",
                                     "set",
                                     "ignore_error_stats_update",
                                     "verbatim_string"};

/* Builds a value on l's stack from data: one opcode byte at a time. */
static void build(lua_State *l, const uint8_t *d, size_t n)
{
    int base = lua_gettop(l);
    lua_newtable(l); /* the result: a table, or what ends on top of it */
    for (size_t i = 0; i < n && lua_gettop(l) < base + 200;) {
        uint8_t op = d[i++];
        switch (op % 12) {
        case 0: { /* a string of the next byte's length */
            size_t len = i < n ? d[i++] : 0;
            if (len > n - i)
                len = n - i;
            lua_pushlstring(l, (const char *)d + i, len);
            i += len;
            break;
        }
        case 1: { /* a number from 8 bytes */
            double v = 0;
            if (n - i >= 8) {
                memcpy(&v, d + i, 8);
                i += 8;
            }
            lua_pushnumber(l, v);
            break;
        }
        case 2:
            lua_pushnumber(l, (op & 16) ? NAN : (op & 32) ? INFINITY : -INFINITY);
            break;
        case 3:
            lua_pushboolean(l, op & 16);
            break;
        case 4:
            lua_pushnil(l);
            break;
        case 5:
            lua_newtable(l);
            break;
        case 6: /* t[k] = v for the table below the top two, as an array item */
            if (lua_gettop(l) >= base + 2 && lua_istable(l, -2))
                lua_rawseti(l, -2, 1 + (op >> 4) % 8);
            break;
        case 7: /* a field Redis reads, set from the top */
            if (lua_gettop(l) >= base + 2 && lua_istable(l, -2))
                lua_setfield(l, -2, fields[(op >> 4) % 8]);
            break;
        case 8: /* the table within itself */
            if (lua_istable(l, -1)) {
                lua_pushvalue(l, -1);
                lua_rawseti(l, -2, 1 + (op >> 4) % 4);
            }
            break;
        case 9: /* t[top] = true: a key of a map or set */
            if (lua_gettop(l) >= base + 2 && lua_istable(l, -2) && !lua_isnil(l, -1)) {
                lua_pushboolean(l, 1);
                lua_rawset(l, -3);
            }
            break;
        case 10: /* the top into the table below it at the next index */
            if (lua_gettop(l) >= base + 2 && lua_istable(l, -2))
                lua_rawseti(l, -2, (int)lua_objlen(l, -2) + 1);
            break;
        default:
            if (lua_gettop(l) > base + 1)
                lua_pop(l, 1);
        }
    }
    lua_settop(l, base + 1); /* the result */
}

struct job {
    const uint8_t *d;
    size_t n;
};

/* The replies' buffers live outside Lua's protected calls, so that a Lua
 * error (which unwinds with longjmp) leaks nothing; stage says where one
 * came from. */
static struct resp_buf out, again;
static int stage;

static void check(lua_State *l, int proto, int script_resp)
{
    out.off = out.len = 0;
    again.off = again.len = 0;
    size_t budget = 20000; /* the daemon's is 10 million; a table holding itself reaches it */
    stage = 1;             /* the daemon converts outside any protected call: no error may escape */
    scr_reply_value(l, &out, proto, script_resp, 0, &budget);
    stage = 2;
    const char *p = resp_buf_data(&out), *end = p + resp_buf_used(&out);
    if (skip_value(p, end, 0) != end)
        abort(); /* not exactly one well-formed RESP value */
    /* redis.call's side, over what a command could reply. It runs inside
     * the script's protected call, which catches Lua's own errors (a map
     * key that is null: "table index is nil"). */
    bool err = false;
    int top = lua_gettop(l);
    scr_push_reply(l, &p, end, &err);
    if (p != end)
        abort();
    budget = 20000;
    scr_reply_value(l, &again, proto, script_resp, 0, &budget);
    const char *q = resp_buf_data(&again);
    if (skip_value(q, q + resp_buf_used(&again), 0) != q + resp_buf_used(&again))
        abort();
    lua_settop(l, top);
}

static int run(lua_State *l)
{
    struct job *j = lua_touserdata(l, 1);
    lua_settop(l, 0);
    stage = 0;
    build(l, j->d, j->n);
    for (int proto = 2; proto <= 3; proto++)
        for (int sr = 2; sr <= 3; sr++)
            check(l, proto, sr);
    return 0;
}

static lua_State *L;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!L && !(L = luaL_newstate()))
        abort();
    struct job j = {data, size};
    if (lua_cpcall(L, run, &j) != 0 && stage == 1)
        abort(); /* an error out of the conversion the daemon runs unprotected */
    lua_settop(L, 0);
    lua_gc(L, LUA_GCCOLLECT, 0);
    return 0;
}
