/*
 * scr_libs — the two C libraries Redis 7.0 puts into every script's
 * environment besides Lua's own: `cmsgpack` (MessagePack) and `struct`
 * (binary packing, the API of Roberto Ierusalimschy's struct library).
 * Debian packages neither, so they are written here, to give what Redis
 * 7.0.15 gives for the same calls, byte for byte, error texts included
 * (tests/unit/test_scr_libs.c holds the facts recorded from it).
 *
 * Part of the scripting layer; of ours it depends on nothing, only on Lua
 * 5.1's C API.
 *
 * No input, however malformed, makes them read outside it: every length
 * and offset is checked before it is used, and decoding nested data is
 * bounded by the Lua stack check on every value.
 */
#ifndef SHMKV_SCR_LIBS_H
#define SHMKV_SCR_LIBS_H

#include <lua.h>

/* Creates the table `cmsgpack` (pack, unpack, unpack_one, unpack_limit and
 * the fields _NAME, _VERSION, _COPYRIGHT, _DESCRIPTION) and sets it as the
 * global of that name. Leaves the table on the stack and returns 1, as a
 * lua_CFunction does, so it can be called directly or through lua_call.
 * Raises a Lua error only when memory runs out. */
int scr_open_cmsgpack(lua_State *L);

/* Creates the table `struct` (pack, unpack, size), sets it as the global
 * of that name, and records it in package.loaded as luaL_register does.
 * Leaves the table on the stack and returns 1; raises a Lua error only
 * when memory runs out. */
int scr_open_struct(lua_State *L);

#endif
