/*
 * scr — Lua scripting: EVAL and its family, SCRIPT, FUNCTION and FCALL.
 * Two Lua 5.1 states, sandboxed as Redis 7.0's: one holds every script
 * loaded since start or the last SCRIPT FLUSH, the other FUNCTION's
 * libraries, which the daemon stores with the data (scr_fn.c). redis.call
 * runs commands through the daemon's own dispatch on a client of the
 * scripts', so a script is atomic by construction: the event loop runs no
 * other client's command meanwhile, and local readers see all of its
 * writes or none (one cache transaction).
 *
 * A script running past busy-reply-threshold lets the loop answer other
 * clients meanwhile: with -BUSY, but for the few commands Redis allows
 * then (SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE, ...).
 *
 * Single-threaded: the event loop owns it.
 */
#ifndef SHMKV_SCR_H
#define SHMKV_SCR_H

#include <stdbool.h>
#include <stddef.h>

struct conn;

/* Makes both Lua states, and loads the stored libraries. Aborts when out
 * of memory, as the daemon's allocations do. */
void scr_init(void);
/* SCRIPT FLUSH: EVAL's state made anew, empty. */
void scr_flush(void);
/* At shutdown: both states, and the scripts' client. */
void scr_destroy(void);

/* SCRIPT LOAD: compiles body and keeps it under its SHA-1, which goes to
 * sha (40 hex digits and a NUL). 0, or -1 with Redis's error text in err
 * (a compile error, a bad shebang). */
int scr_load(const char *body, size_t n, char sha[41], char *err, size_t errlen);
/* Whether a script with this SHA-1 (any case) is loaded. */
bool scr_exists(const char *sha, size_t n);
/* How many scripts are loaded (INFO's number_of_cached_scripts), EVAL's
 * state's memory, and what the loaded scripts take: their bodies and
 * their entries (INFO's used_memory_scripts_eval). */
size_t scr_count(void);
size_t scr_vm_bytes(void);
size_t scr_scripts_bytes(void);
/* FUNCTION's: libraries, functions, its state's memory, and what the
 * libraries take (INFO's number_of_libraries, number_of_functions,
 * used_memory_vm_functions, used_memory_functions). */
size_t scr_fn_libraries(void);
size_t scr_fn_functions(void);
size_t scr_fn_vm_bytes(void);
size_t scr_fn_bytes(void);

/* Calls each(arg, code, n) with every library's code, as FUNCTION DUMP
 * and an RDB file hold it. */
void scr_fn_each(void (*each)(void *arg, const char *code, size_t n), void *arg);

/* Adds the library whose code is code[0, n), as FUNCTION LOAD without
 * REPLACE, and stores the libraries. 0, or -1 with Redis's error in err. */
int scr_fn_add(const char *code, size_t n, char *err, size_t errlen);

/* EVAL/EVALSHA and their _RO forms for c, its arguments as the command
 * gave them (script or SHA-1, numkeys, keys, args): replies to c. by_sha:
 * argv[1] is a SHA-1. ro: write commands are refused inside. */
/* SWAPDB swapped physical databases pa and pb: a running script's calls
 * stay on their database number, as every client's do (cmd_swapped). */
void scr_swapped(unsigned pa, unsigned pb);
void scr_eval(struct conn *c, bool by_sha, bool ro);
/* FCALL/FCALL_RO function numkeys [key ...] [arg ...]: replies to c. */
void scr_fcall(struct conn *c, bool ro);
/* FUNCTION's subcommands (but KILL and STATS), replying to c: argv[1]
 * names the subcommand, whose arity the dispatcher checked. */
void scr_function(struct conn *c);

/* The flags a script command takes from its script, as Redis 7.0 gives
 * them to the dispatcher (a shebang's flags, a function's): *write, it may
 * write (MISCONF, CLIENT PAUSE WRITE); *denyoom, it is refused over
 * maxmemory. False when the command's own flags hold (no script, or one
 * without a shebang, or one not loaded). */
struct cmd;
bool scr_cmd_flags(const struct conn *c, const struct cmd *cmd, bool *write, bool *denyoom);

/* A script is past busy-reply-threshold: other clients get -BUSY. */
bool scr_busy(void);
/* The -BUSY text (without '-') for the script that runs. */
const char *scr_busy_error(void);
/* SCRIPT KILL (function false) or FUNCTION KILL (true): stops the
 * running script if it may be stopped, replying to c. */
void scr_kill(struct conn *c, bool function);
/* FUNCTION STATS, replying to c. */
void scr_stats(struct conn *c);

#endif
