/*
 * scr — Lua scripting (EVAL and its family, SCRIPT): one Lua 5.1 state,
 * sandboxed as Redis 7.0's, holding every script loaded since start or the
 * last SCRIPT FLUSH, and redis.call running commands through the daemon's
 * own dispatch on a client of the script's, so a script is atomic by
 * construction: the event loop runs nothing else meanwhile, and local
 * readers see all of its writes or none (one cache transaction).
 *
 * Single-threaded: the event loop owns it.
 */
#ifndef SHMKV_SCR_H
#define SHMKV_SCR_H

#include <stdbool.h>
#include <stddef.h>

struct conn;

/* Makes the Lua state (again, after scr_free). Aborts when out of memory,
 * as the daemon's allocations do. */
void scr_init(void);
void scr_free(void);
/* scr_free, and the scripts' client too: at shutdown. */
void scr_destroy(void);

/* SCRIPT LOAD: compiles body and keeps it under its SHA-1, which goes to
 * sha (40 hex digits and a NUL). 0, or -1 with Redis's error text in err
 * (a compile error). */
int scr_load(const char *body, size_t n, char sha[41], char *err, size_t errlen);
/* Whether a script with this SHA-1 (any case) is loaded. */
bool scr_exists(const char *sha, size_t n);
/* How many scripts are loaded (INFO's number_of_cached_scripts), the Lua
 * state's memory, and what the loaded scripts take: their bodies and their
 * entries (INFO's used_memory_scripts_eval). */
size_t scr_count(void);
size_t scr_vm_bytes(void);
size_t scr_scripts_bytes(void);

/* EVAL/EVALSHA and their _RO forms for c, its arguments as the command
 * gave them (script or SHA-1, numkeys, keys, args): replies to c. by_sha:
 * argv[1] is a SHA-1. ro: write commands are refused inside. */
void scr_eval(struct conn *c, bool by_sha, bool ro);

#endif
