/*
 * scr_conv — RESP replies to Lua values and Lua values to replies, as Redis
 * 7.0 converts them for scripts (docs/daemon.md, "Scripting"). Lua 5.1's C
 * API and the reply writers (resp.h) only.
 */
#ifndef SHMKV_SCR_CONV_H
#define SHMKV_SCR_CONV_H

#include <stdbool.h>
#include <stddef.h>

#include <lua.h>

#include "resp.h"

/* Pushes the reply at *p (RESP2 or RESP3, as the daemon writes it: whole
 * and well formed) as the Lua value redis.call returns, and moves *p past
 * it. An error reply is pushed as {err = "CODE msg"} and sets *err. */
void scr_push_reply(lua_State *l, const char **p, const char *end, bool *err);
/* Pushes {err = "CODE msg"} from an error's text "CODE msg" (or "msg":
 * then the code is ERR). */
void scr_push_error(lua_State *l, const char *e, size_t n);
/* Writes the Lua value on top of the stack (left there) to out as the
 * reply to a script's caller in protocol proto; script_resp is the
 * protocol the script chose (redis.setresp), which decides booleans.
 * depth: 0 (a table nested past 1,000 levels replies an error). *budget:
 * the values it may write (SCR_REPLY_VALUES), counted down; each one past
 * it is an error reply, so a table holding itself more than once cannot
 * make a reply of 2^1000 values. */
void scr_reply_value(lua_State *l, struct resp_buf *out, int proto, int script_resp, int depth,
                     size_t *budget);
#define SCR_REPLY_VALUES (10u * 1000 * 1000)

#endif
