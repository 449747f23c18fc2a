/*
 * scr_cmsgpack — the scripting environment's `cmsgpack` table: Lua values
 * to MessagePack and back, as Redis 7.0's bundled lua-cmsgpack 0.4.0 does
 * it (scripting layer; Lua's C API only). What a script can see is kept:
 * which encoding each value gets, which bytes decode and which are refused,
 * the error texts, and where the Lua stack overflows.
 *
 * Encoding. A number that is an integer in [-2^63, 2^63) is the smallest
 * MessagePack integer that holds it; any other number is a 32-bit float if
 * that loses nothing, else a 64-bit double. A string is a str (fixstr,
 * str 8/16/32; never bin). A table whose keys are exactly 1..n is an array,
 * any other table a map, in lua_next order. Tables nested 16 deep, and
 * functions, userdata and threads, are nil: the depth limit is what stops a
 * table that contains itself.
 *
 * Decoding knows nil, booleans, every integer and float, str and the
 * array/map families; bin, ext and the never-used byte 0xc1 are "Bad data
 * format in input.", as they are in Redis. Nested containers recurse, and
 * the Lua stack check on every value bounds that recursion (about 8,000
 * slots; see LUAI_MAXCSTACK).
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "scr_libs.h"

/* Tables deeper than this encode as nil (Redis's LUACMSGPACK_MAX_NESTING). */
#define MP_MAX_NESTING 16

/* The first byte of each MessagePack format this module writes or reads. */
enum {
    MP_NIL = 0xc0,
    MP_FALSE = 0xc2,
    MP_TRUE = 0xc3,
    MP_FLOAT32 = 0xca,
    MP_FLOAT64 = 0xcb,
    MP_UINT8 = 0xcc,
    MP_UINT16 = 0xcd,
    MP_UINT32 = 0xce,
    MP_UINT64 = 0xcf,
    MP_INT8 = 0xd0,
    MP_INT16 = 0xd1,
    MP_INT32 = 0xd2,
    MP_INT64 = 0xd3,
    MP_STR8 = 0xd9,
    MP_STR16 = 0xda,
    MP_STR32 = 0xdb,
    MP_ARRAY16 = 0xdc,
    MP_ARRAY32 = 0xdd,
    MP_MAP16 = 0xde,
    MP_MAP32 = 0xdf,
    MP_FIXMAP = 0x80,
    MP_FIXARRAY = 0x90,
    MP_FIXSTR = 0xa0,
};

/* ---------------------------------------------------------------- encoding */

/*
 * The bytes pack is building. The struct is a full userdata on the Lua
 * stack, with a __gc that frees b, so an error thrown half way (a stack
 * overflow, memory running out) leaks nothing: the collector frees the
 * buffer later. b comes from the state's allocator, so the memory a script
 * uses is counted as Lua's.
 *
 * phantom is for the stack checks, see mp_need.
 */
struct mp_buf {
    unsigned char *b;
    size_t len, cap;
    int phantom;
};

/* Frees a buffer's bytes; safe to call again. */
static void mp_buf_release(lua_State *L, struct mp_buf *buf)
{
    void *ud;
    lua_Alloc alloc = lua_getallocf(L, &ud);
    if (buf && buf->b) {
        alloc(ud, buf->b, buf->cap, 0);
        buf->b = NULL;
        buf->len = buf->cap = 0;
    }
}

/* The __gc of struct mp_buf: what frees a buffer an error left behind. */
static int mp_buf_gc(lua_State *L)
{
    mp_buf_release(L, lua_touserdata(L, 1));
    return 0;
}

/* Appends n bytes, growing the buffer to twice what it needs when full.
 * Raises "not enough memory" when the allocator fails. */
static void mp_put(lua_State *L, struct mp_buf *buf, const void *p, size_t n)
{
    if (buf->cap - buf->len < n) {
        void *ud;
        lua_Alloc alloc = lua_getallocf(L, &ud);
        size_t need = buf->len + n;
        if (need < buf->len || need > SIZE_MAX / 2)
            luaL_error(L, "not enough memory");
        size_t cap = need < 32 ? 64 : need * 2;
        unsigned char *nb = alloc(ud, buf->b, buf->cap, cap);
        if (!nb)
            luaL_error(L, "not enough memory");
        buf->b = nb;
        buf->cap = cap;
    }
    memcpy(buf->b + buf->len, p, n);
    buf->len += n;
}

/* Appends the byte tag and then the low n bytes of v, most significant
 * first: every MessagePack length and number is big-endian. */
static void mp_put_tagged(lua_State *L, struct mp_buf *buf, unsigned tag, uint64_t v, int n)
{
    unsigned char b[9];
    b[0] = (unsigned char)tag;
    for (int i = 0; i < n; i++)
        b[1 + i] = (unsigned char)(v >> (8 * (n - 1 - i)));
    mp_put(L, buf, b, (size_t)n + 1);
}

/*
 * Redis's pack keeps each finished argument's bytes on the stack as a
 * string until it joins them at the end, and its stack checks count those
 * strings; this one keeps one buffer instead, in one slot. phantom is how
 * many slots more Redis holds at this moment; adding it to every check
 * makes a pack that overflows the stack (thousands of arguments) fail
 * exactly where Redis's fails, with the same message.
 */
static void mp_need(lua_State *L, const struct mp_buf *buf, int n, const char *what)
{
    if (!lua_checkstack(L, n + buf->phantom))
        luaL_error(L, "stack overflow (%s)", what);
}

static void mp_put_int(lua_State *L, struct mp_buf *buf, int64_t n)
{
    uint64_t u = (uint64_t)n;
    if (n >= 0) {
        if (n <= 0x7f)
            mp_put_tagged(L, buf, (unsigned)n, 0, 0);
        else if (n <= 0xff)
            mp_put_tagged(L, buf, MP_UINT8, u, 1);
        else if (n <= 0xffff)
            mp_put_tagged(L, buf, MP_UINT16, u, 2);
        else if (n <= 0xffffffffLL)
            mp_put_tagged(L, buf, MP_UINT32, u, 4);
        else
            mp_put_tagged(L, buf, MP_UINT64, u, 8);
    } else {
        if (n >= -32)
            mp_put_tagged(L, buf, (unsigned)(u & 0xff), 0, 0);
        else if (n >= INT8_MIN)
            mp_put_tagged(L, buf, MP_INT8, u, 1);
        else if (n >= INT16_MIN)
            mp_put_tagged(L, buf, MP_INT16, u, 2);
        else if (n >= INT32_MIN)
            mp_put_tagged(L, buf, MP_INT32, u, 4);
        else
            mp_put_tagged(L, buf, MP_INT64, u, 8);
    }
}

/* A non-integer: float 32 when converting to float and back gives the same
 * number (1.5, infinities), else float 64 (0.1, NaN). */
static void mp_put_real(lua_State *L, struct mp_buf *buf, double d)
{
    float f = (float)d;
    if ((double)f == d) {
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        mp_put_tagged(L, buf, MP_FLOAT32, bits, 4);
    } else {
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        mp_put_tagged(L, buf, MP_FLOAT64, bits, 8);
    }
}

/* Whether d converts to int64_t and back unchanged. Written as a range
 * test, not as Redis's cast-and-compare, because a cast of an out-of-range
 * double is undefined; the answers agree (NaN and infinities: no). */
static int mp_is_int64(double d)
{
    return d >= -9223372036854775808.0 && d < 9223372036854775808.0 && (double)(int64_t)d == d;
}

static void mp_put_len(lua_State *L, struct mp_buf *buf, unsigned fix, unsigned fixmax,
                       unsigned tag8, unsigned tag16, unsigned tag32, size_t n)
{
    if (n <= fixmax)
        mp_put_tagged(L, buf, fix | (unsigned)n, 0, 0);
    else if (tag8 && n <= 0xff)
        mp_put_tagged(L, buf, tag8, n, 1);
    else if (n <= 0xffff)
        mp_put_tagged(L, buf, tag16, n, 2);
    else
        mp_put_tagged(L, buf, tag32, n, 4);
}

static void mp_encode(lua_State *L, struct mp_buf *buf, int level);

/*
 * Whether the table on top of the stack has exactly the keys 1..n: every
 * key a number, integral, in 1..INT_MAX, and the largest equal to the
 * count (keys are distinct, so then none is missing). The empty table is an
 * array. Leaves the stack as it found it.
 */
static int mp_table_is_array(lua_State *L, const struct mp_buf *buf)
{
    int top = lua_gettop(L), count = 0, max = 0;
    mp_need(L, buf, 2, "in function table_is_an_array");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        double n;
        if (lua_type(L, -1) != LUA_TNUMBER || (n = lua_tonumber(L, -1)) <= 0 || n > INT_MAX ||
            (double)(int)n != n) {
            lua_settop(L, top);
            return 0;
        }
        if ((int)n > max)
            max = (int)n;
        count++;
    }
    lua_settop(L, top);
    return max == count;
}

/* The table on top as an array of lua_objlen elements, read with
 * lua_gettable as Redis does (its keys are all there, so no __index runs). */
static void mp_encode_array(lua_State *L, struct mp_buf *buf, int level)
{
    size_t n = lua_objlen(L, -1);
    mp_put_len(L, buf, MP_FIXARRAY, 15, 0, MP_ARRAY16, MP_ARRAY32, n);
    mp_need(L, buf, 1, "in function mp_encode_lua_table_as_array");
    for (size_t j = 1; j <= n; j++) {
        lua_pushnumber(L, (lua_Number)j);
        lua_gettable(L, -2);
        mp_encode(L, buf, level + 1);
    }
}

/* The table on top as a map: one pass to count its pairs (the header comes
 * first), one to write them, both in lua_next order. */
static void mp_encode_map(lua_State *L, struct mp_buf *buf, int level)
{
    size_t n = 0;
    mp_need(L, buf, 3, "in function mp_encode_lua_table_as_map");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        n++;
    }
    mp_put_len(L, buf, MP_FIXMAP, 15, 0, MP_MAP16, MP_MAP32, n);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pushvalue(L, -2); /* key value key: mp_encode pops the copy */
        mp_encode(L, buf, level + 1);
        mp_encode(L, buf, level + 1);
    }
}

/* Appends the value on top of the stack, level tables deep, and pops it. */
static void mp_encode(lua_State *L, struct mp_buf *buf, int level)
{
    int t = lua_type(L, -1);
    if (t == LUA_TTABLE && level == MP_MAX_NESTING)
        t = LUA_TNIL;
    switch (t) {
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        mp_put_len(L, buf, MP_FIXSTR, 31, MP_STR8, MP_STR16, MP_STR32, n);
        mp_put(L, buf, s, n);
        break;
    }
    case LUA_TBOOLEAN:
        mp_put_tagged(L, buf, lua_toboolean(L, -1) ? MP_TRUE : MP_FALSE, 0, 0);
        break;
    case LUA_TNUMBER: {
        double d = lua_tonumber(L, -1);
        if (mp_is_int64(d))
            mp_put_int(L, buf, (int64_t)d);
        else
            mp_put_real(L, buf, d);
        break;
    }
    case LUA_TTABLE:
        if (mp_table_is_array(L, buf))
            mp_encode_array(L, buf, level);
        else
            mp_encode_map(L, buf, level);
        break;
    default:
        mp_put_tagged(L, buf, MP_NIL, 0, 0);
        break;
    }
    lua_pop(L, 1);
}

/*
 * cmsgpack.pack(v, ...): the encodings of its arguments, one after the
 * other, as one string. No argument is an error, and so are more arguments
 * than the stack holds twice over (Redis reserves a slot for each one's
 * string). Upvalue 1 is the buffers' metatable.
 */
static int mp_pack(lua_State *L)
{
    int nargs = lua_gettop(L);
    if (nargs == 0)
        return luaL_argerror(L, 0, "MessagePack pack needs input.");
    if (!lua_checkstack(L, nargs))
        return luaL_argerror(L, 0, "Too many arguments for MessagePack pack.");
    struct mp_buf *buf = lua_newuserdata(L, sizeof *buf);
    memset(buf, 0, sizeof *buf);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_setmetatable(L, -2);
    for (int i = 1; i <= nargs; i++) {
        /* Redis holds i - 1 strings here, this holds the one buffer. */
        buf->phantom = i - 2;
        mp_need(L, buf, 1, "in function mp_check");
        lua_pushvalue(L, i);
        mp_encode(L, buf, 0);
    }
    lua_pushlstring(L, buf->b ? (const char *)buf->b : "", buf->len);
    mp_buf_release(L, buf); /* now rather than at the next cycle */
    return 1;
}

/* ---------------------------------------------------------------- decoding */

enum { MP_OK, MP_EOF, MP_BADFMT };

/* What is left of the input, and the first error met. */
struct mp_cur {
    const unsigned char *p;
    size_t left;
    int err;
};

static uint64_t mp_be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* v, n bytes wide, as a two's-complement signed number (no
 * implementation-defined conversion involved). */
static int64_t mp_signed(uint64_t v, int n)
{
    uint64_t sign = (uint64_t)1 << (8 * n - 1), mask = sign | (sign - 1);
    if (!(v & sign))
        return (int64_t)v;
    return -(int64_t)(~v & mask) - 1;
}

/* Whether n more bytes are there; sets MP_EOF when not. */
static int mp_has(struct mp_cur *c, size_t n)
{
    if (c->left < n) {
        c->err = MP_EOF;
        return 0;
    }
    return 1;
}

static void mp_skip(struct mp_cur *c, size_t n)
{
    c->p += n;
    c->left -= n;
}

static void mp_decode(lua_State *L, struct mp_cur *c);

/* n elements into a new table at 1..n; stops at the first error, leaving
 * what it pushed (the caller raises). */
static void mp_decode_array(lua_State *L, struct mp_cur *c, size_t n)
{
    lua_newtable(L);
    luaL_checkstack(L, 1, "in function mp_decode_to_lua_array");
    for (int i = 1; n > 0; n--, i++) {
        lua_pushnumber(L, i);
        mp_decode(L, c);
        if (c->err)
            return;
        lua_settable(L, -3);
    }
}

/* n key/value pairs into a new table. A nil or NaN key raises Lua's own
 * "table index is nil/NaN", as in Redis. */
static void mp_decode_map(lua_State *L, struct mp_cur *c, size_t n)
{
    lua_newtable(L);
    for (; n > 0; n--) {
        mp_decode(L, c);
        if (c->err)
            return;
        mp_decode(L, c);
        if (c->err)
            return;
        lua_settable(L, -3);
    }
}

/* A str of hdr header bytes and len bytes of payload. */
static void mp_decode_str(lua_State *L, struct mp_cur *c, size_t hdr, size_t len)
{
    if (!mp_has(c, hdr + len))
        return;
    lua_pushlstring(L, (const char *)c->p + hdr, len);
    mp_skip(c, hdr + len);
}

/*
 * Pushes the value at the cursor and moves past it, or sets c->err and
 * pushes nothing more (a container may be half built). Integers become
 * Lua numbers as Redis's do: through lua_Integer, so a uint 64 of 2^63 or
 * more comes out negative.
 */
static void mp_decode(lua_State *L, struct mp_cur *c)
{
    if (!mp_has(c, 1))
        return;
    /* Every value may be one more result of unpack: the check that keeps
     * the results within the stack, and the recursion bounded. */
    luaL_checkstack(L, 1,
                    "too many return values at once; use unpack_one or unpack_limit instead.");
    unsigned t = c->p[0];
    static const signed char width[32] = {
        /* bytes after the tag for 0xc0..0xdf: -1 is not a fixed-width
         * number (handled below or refused) */
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 4,  8,  1,  2,  4,  8,
        1,  2,  4,  8,  -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    };
    if (t <= 0x7f) {
        lua_pushinteger(L, (lua_Integer)t);
        mp_skip(c, 1);
    } else if (t >= 0xe0) {
        lua_pushinteger(L, (lua_Integer)t - 0x100);
        mp_skip(c, 1);
    } else if ((t & 0xe0) == MP_FIXSTR) {
        mp_decode_str(L, c, 1, t & 0x1f);
    } else if ((t & 0xf0) == MP_FIXARRAY) {
        mp_skip(c, 1);
        mp_decode_array(L, c, t & 0x0f);
    } else if ((t & 0xf0) == MP_FIXMAP) {
        mp_skip(c, 1);
        mp_decode_map(L, c, t & 0x0f);
    } else if (width[t - 0xc0] > 0) {
        int n = width[t - 0xc0];
        if (!mp_has(c, 1 + (size_t)n))
            return;
        uint64_t v = mp_be(c->p + 1, n);
        mp_skip(c, 1 + (size_t)n);
        if (t == MP_FLOAT32) {
            uint32_t bits = (uint32_t)v;
            float f;
            memcpy(&f, &bits, sizeof f);
            lua_pushnumber(L, (lua_Number)f);
        } else if (t == MP_FLOAT64) {
            double d;
            memcpy(&d, &v, sizeof d);
            lua_pushnumber(L, d);
        } else if (t == MP_INT64) {
            lua_pushnumber(L, (lua_Number)mp_signed(v, 8));
        } else if (t >= MP_INT8) {
            lua_pushinteger(L, (lua_Integer)mp_signed(v, n));
        } else {
            /* unsigned: through lua_Integer, wrapping at 2^63 */
            lua_pushinteger(L, (lua_Integer)mp_signed(v, 8));
        }
    } else {
        switch (t) {
        case MP_NIL:
            lua_pushnil(L);
            mp_skip(c, 1);
            break;
        case MP_FALSE:
        case MP_TRUE:
            lua_pushboolean(L, t == MP_TRUE);
            mp_skip(c, 1);
            break;
        case MP_STR8:
        case MP_STR16:
        case MP_STR32:
        case MP_ARRAY16:
        case MP_ARRAY32:
        case MP_MAP16:
        case MP_MAP32: {
            int n = (t == MP_STR8)                                        ? 1
                    : (t == MP_STR16 || t == MP_ARRAY16 || t == MP_MAP16) ? 2
                                                                          : 4;
            if (!mp_has(c, 1 + (size_t)n))
                return;
            size_t len = (size_t)mp_be(c->p + 1, n);
            if (t <= MP_STR32) {
                mp_decode_str(L, c, 1 + (size_t)n, len);
                break;
            }
            mp_skip(c, 1 + (size_t)n);
            if (t <= MP_ARRAY32)
                mp_decode_array(L, c, len);
            else
                mp_decode_map(L, c, len);
            break;
        }
        default: /* 0xc1, bin, ext, fixext */
            c->err = MP_BADFMT;
            break;
        }
    }
}

/*
 * The common body of the three unpacks: decodes from byte offset of
 * argument 1 (a string, or a number as its string) until the input ends or
 * limit values are out. limit == 0 with offset == 0 means everything, and
 * then only the values are returned (so unpack_limit(s, 0) is unpack(s));
 * otherwise the first result is the offset of the next value, -1 when the
 * input is used up. The stack holds only the string below the results.
 */
static int mp_unpack_full(lua_State *L, lua_Integer limit, lua_Integer offset)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    /* The texts, and the int conversions, are Redis's: the first names the
     * input's length where it says limit. */
    if (offset < 0 || limit < 0)
        return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.",
                          (int)offset, (int)len);
    if ((size_t)offset > len)
        return luaL_error(L, "Start offset %d greater than input length %d.", (int)offset,
                          (int)len);
    int all = limit == 0 && offset == 0;
    if (all)
        limit = INT_MAX;
    struct mp_cur c = {(const unsigned char *)s + offset, len - (size_t)offset, MP_OK};
    int cnt;
    for (cnt = 0; c.left > 0 && cnt < limit; cnt++) {
        mp_decode(L, &c);
        if (c.err == MP_EOF)
            return luaL_error(L, "Missing bytes in input.");
        if (c.err == MP_BADFMT)
            return luaL_error(L, "Bad data format in input.");
    }
    if (all)
        return cnt;
    luaL_checkstack(L, 1, "in function mp_unpack_full");
    lua_pushinteger(L, c.left == 0 ? -1 : (lua_Integer)(len - c.left));
    lua_insert(L, 2);
    return cnt + 1;
}

/* cmsgpack.unpack(s): every value in s. */
static int mp_unpack(lua_State *L)
{
    return mp_unpack_full(L, 0, 0);
}

/* Drops the arguments after the first, so the results are all that is
 * above the input; with no argument at all the stack stays empty, and the
 * input is "no value" rather than nil in the error. */
static void mp_keep_first(lua_State *L)
{
    if (lua_gettop(L) > 1)
        lua_settop(L, 1);
}

/* cmsgpack.unpack_one(s [, offset]): next offset, then one value. */
static int mp_unpack_one(lua_State *L)
{
    lua_Integer offset = luaL_optinteger(L, 2, 0);
    mp_keep_first(L);
    return mp_unpack_full(L, 1, offset);
}

/* cmsgpack.unpack_limit(s, limit [, offset]): next offset, then up to
 * limit values. */
static int mp_unpack_limit(lua_State *L)
{
    lua_Integer limit = luaL_checkinteger(L, 2);
    lua_Integer offset = luaL_optinteger(L, 3, 0);
    mp_keep_first(L);
    return mp_unpack_full(L, limit, offset);
}

int scr_open_cmsgpack(lua_State *L)
{
    lua_newtable(L);
    /* pack's buffers' metatable, as pack's upvalue */
    lua_newtable(L);
    lua_pushcfunction(L, mp_buf_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcclosure(L, mp_pack, 1);
    lua_setfield(L, -2, "pack");
    lua_pushcfunction(L, mp_unpack);
    lua_setfield(L, -2, "unpack");
    lua_pushcfunction(L, mp_unpack_one);
    lua_setfield(L, -2, "unpack_one");
    lua_pushcfunction(L, mp_unpack_limit);
    lua_setfield(L, -2, "unpack_limit");
    /* What Redis 7.0.15's table says of itself. */
    lua_pushliteral(L, "cmsgpack");
    lua_setfield(L, -2, "_NAME");
    lua_pushliteral(L, "lua-cmsgpack 0.4.0");
    lua_setfield(L, -2, "_VERSION");
    lua_pushliteral(L, "Copyright (C) 2012, Salvatore Sanfilippo");
    lua_setfield(L, -2, "_COPYRIGHT");
    lua_pushliteral(L, "MessagePack C implementation for Lua");
    lua_setfield(L, -2, "_DESCRIPTION");
    lua_pushvalue(L, -1);
    lua_setglobal(L, "cmsgpack");
    return 1;
}
