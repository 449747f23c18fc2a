/*
 * scr_conv — the conversions between RESP and Lua values that scripts see
 * (scr_conv.h): a command's reply as redis.call returns it, and a script's
 * result as the reply. Lua 5.1's C API and the reply writers only, so the
 * fuzz target tests/fuzz/fuzz_lua.c links them alone.
 */
#include "scr_conv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "kv_mem.h"

/* ---- replies → Lua ---- */

/* Pushes the reply at *p (RESP2 or RESP3, as the daemon writes it) as Lua
 * values convert it in Redis 7.0, and moves *p past it. An error reply is
 * pushed as {err = "CODE msg"}; *err tells the caller. */
void scr_push_reply(lua_State *l, const char **p, const char *end, bool *err)
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
        scr_push_error(l, line, ln);
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
                scr_push_reply(l, p, end, err);
                scr_push_reply(l, p, end, err);
                lua_rawset(l, -3);
            } else if (*s == '~') {
                scr_push_reply(l, p, end, err);
                lua_pushboolean(l, 1);
                lua_rawset(l, -3);
            } else {
                scr_push_reply(l, p, end, err);
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
void scr_push_error(lua_State *l, const char *e, size_t n)
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

/* ---- results → replies ---- */

/* Pushes t[name] of the table on top and returns true if it has that
 * type; else pushes nothing and returns false. */
static bool field(lua_State *l, const char *name, int type)
{
    lua_pushstring(l, name);
    lua_rawget(l, -2);
    if (lua_type(l, -1) == type)
        return true;
    lua_pop(l, 1);
    return false;
}

/* The string on top as one line (CR and LF as spaces), malloc'd: a status
 * or an error reply must not break the protocol. */
static char *one_line(lua_State *l)
{
    size_t n;
    const char *s = lua_tolstring(l, -1, &n);
    char *line = kv_xmemdup(s, n + 1);
    for (size_t i = 0; i < n; i++)
        if (line[i] == '\r' || line[i] == '\n')
            line[i] = ' ';
    return line;
}

/* Writes the Lua value at the top of the stack to out as Redis 7.0 turns
 * a script's result into a reply, in protocol proto. */
void scr_reply_value(lua_State *l, struct resp_buf *out, int proto, int script_resp, int depth,
                     size_t *budget)
{
    /* A table that holds itself twice doubles the values at each level:
     * past the budget each value is one error, written without looking
     * inside it, so the reply stays whole and its size bounded. */
    if (*budget == 0) {
        resp_error(out, "ERR reached the limit of values in a script's reply");
        return;
    }
    --*budget;
    int t = lua_type(l, -1);
    switch (t) {
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(l, -1, &n);
        resp_bulk(out, s, n);
        break;
    }
    case LUA_TBOOLEAN:
        if (script_resp == 3) /* the script's protocol (redis.setresp), not the caller's */
            resp_bool(out, lua_toboolean(l, -1), proto);
        else if (lua_toboolean(l, -1))
            resp_int(out, 1);
        else
            resp_null(out, proto);
        break;
    case LUA_TNUMBER: {
        /* Truncated toward zero, as Redis casts it; what the cast cannot
         * hold (NaN, beyond 2^63) reads as the x86 conversion gives it. */
        double d = lua_tonumber(l, -1);
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
        luaL_checkstack(l, 4, "reply nesting");
        if (field(l, "err", LUA_TSTRING)) {
            char *msg = one_line(l);
            lua_pop(l, 1);
            bool counted = false;
            if (field(l, "ignore_error_stats_update", LUA_TBOOLEAN)) {
                counted = lua_toboolean(l, -1);
                lua_pop(l, 1);
            }
            (counted ? resp_error_uncounted : resp_error)(out, msg);
            free(msg);
            break;
        }
        if (field(l, "ok", LUA_TSTRING)) {
            char *msg = one_line(l);
            lua_pop(l, 1);
            resp_simple(out, msg);
            free(msg);
            break;
        }
        if (field(l, "double", LUA_TNUMBER)) {
            resp_double(out, lua_tonumber(l, -1), proto);
            lua_pop(l, 1);
            break;
        }
        if (field(l, "big_number", LUA_TSTRING)) {
            size_t n;
            const char *s = lua_tolstring(l, -1, &n);
            if (proto == 3)
                resp_buf_printf(out, "(%.*s\r\n", (int)n, s);
            else
                resp_bulk(out, s, n);
            lua_pop(l, 1);
            break;
        }
        bool map = field(l, "map", LUA_TTABLE);
        if (map || field(l, "set", LUA_TTABLE)) {
            size_t n = 0;
            for (lua_pushnil(l); lua_next(l, -2); lua_pop(l, 1))
                n++;
            (map ? resp_map : resp_set)(out, n, proto);
            for (lua_pushnil(l); lua_next(l, -2); lua_pop(l, 1)) {
                lua_pushvalue(l, -2);
                scr_reply_value(l, out, proto, script_resp, depth + 1,
                                budget); /* the key, or the set's member */
                lua_pop(l, 1);
                if (map)
                    scr_reply_value(l, out, proto, script_resp, depth + 1, budget);
            }
            lua_pop(l, 1);
            break;
        }
        /* An array: t[1], t[2] ... up to the first nil. */
        size_t n = 0;
        for (;; n++) {
            lua_rawgeti(l, -1, (int)n + 1);
            bool nil = lua_isnil(l, -1);
            lua_pop(l, 1);
            if (nil)
                break;
        }
        resp_array(out, n);
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(l, -1, (int)i + 1);
            scr_reply_value(l, out, proto, script_resp, depth + 1, budget);
            lua_pop(l, 1);
        }
        break;
    }
    default:
        resp_null(out, proto);
    }
}
