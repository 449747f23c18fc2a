/*
 * scr_int — what the scripting engine (scr.c: the Lua states, redis.call,
 * conversions, running a script) shares with functions (scr_fn.c:
 * FUNCTION's libraries and FCALL). Not for other modules: they use scr.h.
 */
#ifndef SHMKV_SCR_INT_H
#define SHMKV_SCR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lua.h>

struct conn;

/* One Lua state. EVAL's scripts and FUNCTION's libraries each have their
 * own, as in Redis: SCRIPT FLUSH leaves the functions alone, and a
 * library cannot see what a script left behind. */
struct scr_vm {
    lua_State *L;
    size_t used;    /* bytes its allocator holds */
    bool functions; /* FUNCTION's: no KEYS and ARGV; the library API at load */
};
extern struct scr_vm scr_ev, scr_fn;

/* Makes vm's state, sandboxed (scr.c says how), with the redis library
 * a script (or, functions: a function) sees. Aborts when out of memory. */
void scr_vm_open(struct scr_vm *vm, bool functions);
void scr_vm_close(struct scr_vm *vm);

/* A script's flags: the shebang's "flags=" of an EVAL script, or
 * redis.register_function's flags. SCR_COMPAT: an EVAL script without a
 * shebang, which runs as Redis 6 ran scripts. */
enum {
    SCR_NO_WRITES = 1 << 0,
    SCR_ALLOW_OOM = 1 << 1,
    SCR_ALLOW_STALE = 1 << 2,
    SCR_NO_CLUSTER = 1 << 3,
    SCR_ALLOW_CROSS_SLOT = 1 << 4,
    SCR_COMPAT = 1 << 5,
};
#define SCR_NFLAGS 5
/* Their names as Redis spells them; index i is flag 1 << i. */
extern const char *const scr_flag_names[SCR_NFLAGS];
/* The flag named s[0, n), or 0 for a name Redis does not have. */
unsigned scr_flag_parse(const char *s, size_t n);

/* Runs the function on top of vm's stack (below it, nothing of ours;
 * above it, nargs arguments) for c's command, and replies to c: the
 * result converted, or Redis's error text naming the script (name: a
 * SHA-1 or a function's name). eval: SCRIPT KILL may stop it (else
 * FUNCTION KILL). Refuses writes if ro or flags say so. Leaves vm's stack
 * empty. */
void scr_run(struct conn *c, struct scr_vm *vm, const char *name, bool eval, unsigned flags,
             bool ro, int nargs);
/* Whether c may start a script with these flags by an _RO command (ro)
 * or not, as Redis checks before running one that is not SCR_COMPAT; if
 * not, replies why and returns false. */
bool scr_may_start(struct conn *c, unsigned flags, bool ro);

/* The error handler scr_run gives lua_pcall, for loads too: an error
 * becomes {err = "CODE msg", source =, line =}. */
int scr_on_error(lua_State *l);
/* Raises {err = msg}: a Redis error, msg without its '-'. */
int scr_raise(lua_State *l, const char *msg);
/* While a library's code runs at FUNCTION LOAD: vm's time and memory are
 * bounded, and past limit_ms the code stops with "FUNCTION LOAD
 * timeout". on false ends it. */
void scr_load_guard(struct scr_vm *vm, bool on, unsigned limit_ms);
/* Argument 2 of c's EVAL- or FCALL-shaped command as its number of keys:
 * true, or false after Redis's error (bad: the text for one that is not
 * an integer; then too many, then negative). */
bool scr_numkeys(struct conn *c, const char *bad, int64_t *numkeys);
/* Pushes a new Lua array of argv[0, n). */
struct db_str;
void scr_push_array(lua_State *l, const struct db_str *argv, size_t n);
/* The next word of a shebang line, line[0, len), from *at (0 to start):
 * *w and *wn, *at past it; false after the last. */
bool scr_shebang_word(const char *line, size_t len, size_t *at, const char **w, size_t *wn);
/* The 40 hex digits of p[0, n)'s SHA-1, and a NUL. */
void scr_sha1_hex(const char *p, size_t n, char out[41]);

/* Sets redis.log, its levels and REDIS_VERSION(_NUM) in the table on top
 * of l's stack. */
void scr_push_log_api(lua_State *l);
/* Makes the globals a library's code sees while FUNCTION LOAD runs it:
 * only redis, with register_function (register_fn), log and its levels,
 * and the version, as Redis 7.0 has them. */
void scr_fn_api(lua_State *l, lua_CFunction register_fn);
/* Switches l's globals to that (load) or back to the usual ones. */
void scr_globals_for_load(lua_State *l, bool load);

/* FUNCTION's libraries (scr_fn.c): made empty, or loaded from what the
 * daemon stored, at start; freed at exit. */
void scr_fn_start(void);
void scr_fn_stop(void);
/* A function's flags (SCR_*) by name: false if there is none. */
bool scr_fn_flags(const char *name, size_t n, unsigned *flags);

#endif
