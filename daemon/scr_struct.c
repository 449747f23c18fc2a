/*
 * scr_struct — the scripting environment's `struct` table: struct.pack,
 * struct.unpack and struct.size over a format string, with the API of
 * Roberto Ierusalimschy's struct library (0.2) as Redis 7.0.15 bundles it,
 * Redis's fixes included (scripting layer; Lua's C API only).
 *
 * The format, one option at a time:
 *   >  <       big / little endian from here on (native at the start)
 *   ![n]       align to at most n bytes (a power of 2; 8 without n)
 *   x          one zero byte of padding
 *   b B h H    signed / unsigned char and short (1 and 2 bytes)
 *   l L T      signed long, unsigned long, size_t (8 bytes each)
 *   i[n] I[n]  signed / unsigned integer of n bytes (4 without n, at most 32)
 *   f d        float, double
 *   s          a zero-terminated string
 *   c[n]       n bytes (1 without n); c0 packs the whole string, and when
 *              unpacking takes its length from the number read before it
 *   ' '        ignored
 * Anything else is "invalid format option" (struct.size skips letters and
 * digits it does not know, as Redis's does).
 *
 * Numbers go through a C double, as everything in Lua 5.1 does. Where
 * Redis's C converts a double that does not fit (NaN, 2^64, -inf), its
 * results are those of x86-64 code; they are reproduced here by arithmetic
 * rather than by those undefined conversions (st_i64, st_u64).
 */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "scr_libs.h"

/* Largest n of i[n] and I[n]. */
#define ST_MAXINTSIZE 32

/* The default of '!': the larger of double's alignment and int's size. */
struct st_align_probe {
    char c;
    double d;
};
#define ST_PADDING (offsetof(struct st_align_probe, d))
#define ST_MAXALIGN ((int)(ST_PADDING > sizeof(int) ? ST_PADDING : sizeof(int)))

/* The state a format string carries from option to option. */
struct st_header {
    int big;   /* big endian */
    int align; /* '!': largest alignment, 1 (none) at the start */
};

static int st_native_big(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 0;
}

static void st_defaults(struct st_header *h)
{
    h->big = st_native_big();
    h->align = 1;
}

static int st_isdigit(int c)
{
    return c >= '0' && c <= '9';
}

static int st_isalnum(int c)
{
    return st_isdigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int st_ispow2(int x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

/*
 * (int64_t)d as x86-64's cvttsd2si computes it: INT64_MIN for NaN and for
 * anything outside [-2^63, 2^63), where C leaves the conversion undefined.
 */
static int64_t st_i64(double d)
{
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0)
        return (int64_t)d;
    return INT64_MIN;
}

/*
 * (uint64_t)d as GCC compiles it for x86-64: below 2^63 (and NaN) the
 * signed conversion, from 2^63 on the signed conversion of d - 2^63 with
 * the top bit flipped, which makes 2^64 and more, and +inf, come out 0.
 */
static uint64_t st_u64(double d)
{
    if (!(d >= 9223372036854775808.0))
        return (uint64_t)st_i64(d);
    return (uint64_t)st_i64(d - 9223372036854775808.0) ^ ((uint64_t)1 << 63);
}

/* v as a two's-complement int64_t, without an implementation-defined
 * conversion. */
static int64_t st_signed(uint64_t v)
{
    if (!(v >> 63))
        return (int64_t)v;
    return -(int64_t)~v - 1;
}

/*
 * The number at *fmt, moving past it, or df when there is none. A number
 * past INT_MAX is "integral size overflow" (Redis's fix for CVE-2020-14147).
 */
static int st_getnum(lua_State *L, const char **fmt, int df)
{
    if (!st_isdigit(**fmt))
        return df;
    int a = 0;
    do {
        int digit = **fmt - '0';
        if (a > INT_MAX / 10 || a * 10 > INT_MAX - digit)
            luaL_error(L, "integral size overflow");
        a = a * 10 + digit;
        (*fmt)++;
    } while (st_isdigit(**fmt));
    return a;
}

/* The bytes option opt takes (its count read from *fmt for c, i and I),
 * 0 for options that are not data, and for s, whose size depends on it. */
static size_t st_optsize(lua_State *L, int opt, const char **fmt)
{
    switch (opt) {
    case 'B':
    case 'b':
    case 'x':
        return 1;
    case 'H':
    case 'h':
        return 2;
    case 'L':
    case 'l':
    case 'T':
    case 'd':
        return 8;
    case 'f':
        return 4;
    case 'c':
        return (size_t)st_getnum(L, fmt, 1);
    case 'i':
    case 'I': {
        int sz = st_getnum(L, fmt, 4);
        if (sz > ST_MAXINTSIZE)
            luaL_error(L, "integral size %d is larger than limit of %d", sz, ST_MAXINTSIZE);
        return (size_t)sz;
    }
    default:
        return 0;
    }
}

/*
 * The padding that puts an item of size bytes at offset len on its
 * alignment: min(size, '!' alignment). c and sizeless options are never
 * padded. A size that is not a power of 2 (i3) goes through the same mask
 * arithmetic as in the original, odd results and all.
 */
static size_t st_toalign(size_t len, const struct st_header *h, int opt, size_t size)
{
    if (size == 0 || opt == 'c')
        return 0;
    if (size > (size_t)h->align)
        size = (size_t)h->align;
    return (size - (len & (size - 1))) & (size - 1);
}

/* Applies an option that is not data (' ', '>', '<', '!'); anything else
 * is an error naming argument 1. */
static void st_control(lua_State *L, int opt, const char **fmt, struct st_header *h)
{
    switch (opt) {
    case ' ':
        return;
    case '>':
        h->big = 1;
        return;
    case '<':
        h->big = 0;
        return;
    case '!': {
        int a = st_getnum(L, fmt, ST_MAXALIGN);
        if (!st_ispow2(a))
            luaL_error(L, "alignment %d is not a power of 2", a);
        h->align = a;
        return;
    }
    default:
        luaL_argerror(L, 1, lua_pushfstring(L, "invalid format option '%c'", opt));
    }
}

/* Writes the low size bytes of v in the header's order into out. Past 8
 * bytes there is nothing left of v: the extra bytes are 0, even for a
 * negative number (as Redis's shifts give). */
static void st_put_bytes(char *out, uint64_t v, size_t size, int big)
{
    for (size_t i = 0; i < size; i++) {
        out[big ? size - 1 - i : i] = (char)(v & 0xff);
        v = i < 7 ? v >> 8 : 0;
    }
}

/* The bytes at p, size of them, in the given order, as one number: only
 * the last 8 read survive. */
static uint64_t st_get_bits(const unsigned char *p, int big, size_t size)
{
    uint64_t l = 0;
    for (size_t i = 0; i < size; i++)
        l = l << 8 | p[big ? i : size - 1 - i];
    return l;
}

/* The integer option's value: a signed one is sign-extended from bit
 * size * 8 - 1 taken modulo 64, as x86's shift counts are, which is what
 * Redis's code does for i0 and for sizes past 8. */
static lua_Number st_get_integer(const unsigned char *p, int big, int issigned, size_t size)
{
    uint64_t l = st_get_bits(p, big, size);
    if (!issigned)
        return (lua_Number)l;
    uint64_t mask = ~(uint64_t)0 << ((size * 8 - 1) & 63);
    if (l & mask)
        l |= mask;
    return (lua_Number)st_signed(l);
}

/*
 * struct.pack(fmt, v...): the values laid out as fmt says. The nil pushed
 * before the buffer is the original's: it keeps the buffer's pieces from
 * being taken for a missing argument (so a missing one reads "got nil"
 * when it is the first past the last argument given).
 */
static int st_pack(lua_State *L)
{
    const char *fmt = luaL_checkstring(L, 1);
    struct st_header h;
    luaL_Buffer b;
    int arg = 2;
    size_t total = 0;
    st_defaults(&h);
    lua_pushnil(L);
    luaL_buffinit(L, &b);
    while (*fmt != '\0') {
        int opt = *fmt++;
        size_t size = st_optsize(L, opt, &fmt);
        size_t pad = st_toalign(total, &h, opt, size);
        total += pad;
        while (pad-- > 0)
            luaL_addchar(&b, '\0');
        switch (opt) {
        case 'b':
        case 'B':
        case 'h':
        case 'H':
        case 'l':
        case 'L':
        case 'T':
        case 'i':
        case 'I': {
            lua_Number n = luaL_checknumber(L, arg++);
            uint64_t v = n < 0 ? (uint64_t)st_i64(n) : st_u64(n);
            char out[ST_MAXINTSIZE];
            st_put_bytes(out, v, size, h.big);
            luaL_addlstring(&b, out, size);
            break;
        }
        case 'x':
            luaL_addchar(&b, '\0');
            break;
        case 'f': {
            float f = (float)luaL_checknumber(L, arg++);
            uint32_t bits;
            char out[4];
            memcpy(&bits, &f, sizeof bits);
            st_put_bytes(out, bits, 4, h.big);
            luaL_addlstring(&b, out, 4);
            break;
        }
        case 'd': {
            double d = luaL_checknumber(L, arg++);
            uint64_t bits;
            char out[8];
            memcpy(&bits, &d, sizeof bits);
            st_put_bytes(out, bits, 8, h.big);
            luaL_addlstring(&b, out, 8);
            break;
        }
        case 'c':
        case 's': {
            size_t l;
            const char *s = luaL_checklstring(L, arg++, &l);
            if (size == 0)
                size = l;
            /* arg has moved on already: the error names the next
             * argument, as the original's does */
            luaL_argcheck(L, l >= size, arg, "string too short");
            luaL_addlstring(&b, s, size);
            if (opt == 's') {
                luaL_addchar(&b, '\0');
                size++;
            }
            break;
        }
        default:
            st_control(L, opt, &fmt, &h);
        }
        total += size;
    }
    luaL_pushresult(&b);
    return 1;
}

/* Whether size bytes from pos are inside a string of ld bytes. Written so
 * that nothing wraps: pos is past the end for a negative offset, and size
 * is huge for a c0 after a negative number (Redis's fixed check is the
 * same). */
static int st_fits(size_t pos, size_t size, size_t ld)
{
    return pos <= ld && size <= ld - pos;
}

/*
 * struct.unpack(fmt, s [, pos]): the values fmt describes in s from
 * position pos (1-based, default 1), then the position after them. c0
 * takes its length from the value just unpacked, and replaces it. The
 * results go above all the arguments, extra ones included, and the stack
 * check counts them: that decides where too many results overflow.
 */
static int st_unpack(lua_State *L)
{
    const char *fmt = luaL_checkstring(L, 1);
    size_t ld;
    const char *data = luaL_checklstring(L, 2, &ld);
    size_t pos = (size_t)luaL_optinteger(L, 3, 1);
    struct st_header h;
    int n = 0; /* results so far, above the arguments */
    luaL_argcheck(L, pos > 0, 3, "offset must be 1 or greater");
    pos--;
    st_defaults(&h);
    while (*fmt) {
        int opt = *fmt++;
        size_t size = st_optsize(L, opt, &fmt);
        pos += st_toalign(pos, &h, opt, size);
        luaL_argcheck(L, st_fits(pos, size, ld), 2, "data string too short");
        /* room for this result and the final position */
        luaL_checkstack(L, 2, "too many results");
        const unsigned char *p = (const unsigned char *)data + pos;
        switch (opt) {
        case 'b':
        case 'B':
        case 'h':
        case 'H':
        case 'l':
        case 'L':
        case 'T':
        case 'i':
        case 'I':
            lua_pushnumber(L, st_get_integer(p, h.big, opt >= 'a', size));
            n++;
            break;
        case 'x':
            break;
        case 'f': {
            uint32_t bits = (uint32_t)st_get_bits(p, h.big, 4);
            float f;
            memcpy(&f, &bits, sizeof f);
            lua_pushnumber(L, (lua_Number)f);
            n++;
            break;
        }
        case 'd': {
            uint64_t bits = st_get_bits(p, h.big, 8);
            double d;
            memcpy(&d, &bits, sizeof d);
            lua_pushnumber(L, d);
            n++;
            break;
        }
        case 'c':
            if (size == 0) {
                /* Only a result counts, never an argument, even one
                 * that reads as a number. */
                if (n == 0 || !lua_isnumber(L, -1))
                    luaL_error(L, "format 'c0' needs a previous size");
                size = (size_t)st_u64(lua_tonumber(L, -1));
                lua_pop(L, 1);
                n--;
                luaL_argcheck(L, st_fits(pos, size, ld), 2, "data string too short");
            }
            lua_pushlstring(L, (const char *)p, size);
            n++;
            break;
        case 's': {
            const char *e = memchr(p, '\0', ld - pos);
            if (e == NULL)
                luaL_error(L, "unfinished string in data");
            size = (size_t)(e - (const char *)p) + 1;
            lua_pushlstring(L, (const char *)p, size - 1);
            n++;
            break;
        }
        default:
            st_control(L, opt, &fmt, &h);
        }
        pos += size;
    }
    lua_pushinteger(L, (lua_Integer)(pos + 1));
    return n + 1;
}

/* struct.size(fmt): the bytes struct.pack(fmt, ...) makes; s and c0 have
 * no fixed size. Letters and digits that are no option count 0 bytes. */
static int st_size(lua_State *L)
{
    const char *fmt = luaL_checkstring(L, 1);
    struct st_header h;
    size_t pos = 0;
    st_defaults(&h);
    while (*fmt) {
        int opt = *fmt++;
        size_t size = st_optsize(L, opt, &fmt);
        pos += st_toalign(pos, &h, opt, size);
        if (opt == 's')
            luaL_argerror(L, 1, "option 's' has no fixed size");
        else if (opt == 'c' && size == 0)
            luaL_argerror(L, 1, "option 'c0' has no fixed size");
        if (!st_isalnum(opt))
            st_control(L, opt, &fmt, &h);
        pos += size;
    }
    lua_pushinteger(L, (lua_Integer)pos);
    return 1;
}

int scr_open_struct(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"pack", st_pack},
        {"unpack", st_unpack},
        {"size", st_size},
        {NULL, NULL},
    };
    luaL_register(L, "struct", fns);
    return 1;
}
