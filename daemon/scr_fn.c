/*
 * scr_fn — FUNCTION's libraries and FCALL, on the engine of scr.c.
 *
 * A library is Lua code whose first line is "#!lua name=<lib>". FUNCTION
 * LOAD runs the code once in FUNCTION's own Lua state with only a small
 * API in sight (redis.register_function, redis.log, the version), within
 * 500 ms; each function it registers keeps its callback in a table of the
 * library's, held in the registry. FCALL calls a callback with its keys
 * and arguments as two tables.
 *
 * The libraries are stored with the data: after every change, all of
 * them as FUNCTION DUMP's payload (Redis's format) in one record of the
 * daemon's own (db_aux_put), written through the commit path, so the
 * journal makes it crash-safe as it makes a write; at start they are
 * loaded from it again.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "cmd.h"
#include "kv_err.h"
#include "kv_mem.h"
#include "rdb.h"
#include "scr.h"
#include "scr_int.h"

#define LOAD_LIMIT_MS 500      /* a library's code must finish within this, as in Redis */
#define AUX_NAME "functions"   /* the stored record's name (db_aux_put) */
#define PENDING "shmkv.fn.new" /* registry: the callbacks the code being loaded registered */

struct fn_func {
    char *name, *desc; /* desc NULL: none given */
    unsigned flags;    /* SCR_* */
};

struct fn_lib {
    char *name;
    char *code; /* as given, shebang included */
    size_t coden;
    struct fn_func *f;
    size_t nf, fcap;
    int ref; /* registry reference of its table: function name → callback */
};

static struct fn_lib *libs;
static size_t nlibs, libscap;
static struct fn_lib *building; /* the library whose code runs (register_function) */

/* ---- libraries ---- */

static void lib_free(struct fn_lib *lib)
{
    for (size_t i = 0; i < lib->nf; i++) {
        free(lib->f[i].name);
        free(lib->f[i].desc);
    }
    free(lib->f);
    free(lib->name);
    free(lib->code);
    if (scr_fn.L && lib->ref != LUA_NOREF)
        luaL_unref(scr_fn.L, LUA_REGISTRYINDEX, lib->ref);
    memset(lib, 0, sizeof *lib);
    lib->ref = LUA_NOREF;
}

static struct fn_lib *lib_find(const char *name, size_t n)
{
    for (size_t i = 0; i < nlibs; i++)
        if (strlen(libs[i].name) == n && !strncasecmp(libs[i].name, name, n))
            return &libs[i];
    return NULL;
}

/* A function by name (as Redis, any case), and its library. */
static const struct fn_func *func_find(const char *name, size_t n, const struct fn_lib **lib)
{
    for (size_t i = 0; i < nlibs; i++)
        for (size_t j = 0; j < libs[i].nf; j++)
            if (strlen(libs[i].f[j].name) == n && !strncasecmp(libs[i].f[j].name, name, n)) {
                if (lib)
                    *lib = &libs[i];
                return &libs[i].f[j];
            }
    return NULL;
}

/* Letters, digits and underscores, at least one: library and function
 * names alike. */
static bool name_ok(const char *s, size_t n)
{
    if (!n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return false;
    return true;
}

#define NAME_RULE                                                                                  \
    "Library names can only contain letters, numbers, or underscores(_) and must be at least "     \
    "one character long"

/* redis.register_function(name, callback) or
 * redis.register_function{function_name=, callback=, flags=, description=} */
static int l_register(lua_State *l)
{
    if (!building)
        return scr_raise(l, "ERR redis.register_function can only be called on FUNCTION LOAD "
                            "command");
    int argc = lua_gettop(l);
    const char *name = NULL, *desc = NULL;
    size_t nn = 0, dn = 0;
    unsigned flags = 0;
    int cb = 0;
    if (argc == 1) {
        if (!lua_istable(l, 1))
            return scr_raise(l, "ERR calling redis.register_function with a single argument is "
                                "only applicable to Lua table (representing named arguments).");
        for (lua_pushnil(l); lua_next(l, 1); lua_pop(l, 1)) {
            const char *k = lua_type(l, -2) == LUA_TSTRING ? lua_tostring(l, -2) : "";
            if (!strcmp(k, "function_name")) {
                if (!lua_isstring(l, -1))
                    return scr_raise(l, "ERR function_name argument given to "
                                        "redis.register_function must be a string");
                name = lua_tolstring(l, -1, &nn);
            } else if (!strcmp(k, "description")) {
                if (!lua_isstring(l, -1))
                    return scr_raise(l, "ERR description argument given to "
                                        "redis.register_function must be a string");
                desc = lua_tolstring(l, -1, &dn);
            } else if (!strcmp(k, "callback")) {
                if (!lua_isfunction(l, -1))
                    return scr_raise(l, "ERR callback argument given to redis.register_function "
                                        "must be a function");
                cb = 1;
            } else if (!strcmp(k, "flags")) {
                if (!lua_istable(l, -1))
                    return scr_raise(l, "ERR flags argument to redis.register_function must be a "
                                        "table representing function flags");
                for (int i = 1;; i++) {
                    lua_rawgeti(l, -1, i);
                    if (lua_isnil(l, -1)) {
                        lua_pop(l, 1);
                        break;
                    }
                    size_t fl;
                    const char *f = lua_isstring(l, -1) ? lua_tolstring(l, -1, &fl) : NULL;
                    unsigned one = f ? scr_flag_parse(f, fl) : 0;
                    if (!one)
                        return scr_raise(l, "ERR unknown flag given");
                    flags |= one;
                    lua_pop(l, 1);
                }
            } else {
                return scr_raise(l, "ERR unknown argument given to redis.register_function");
            }
        }
        if (!name)
            return scr_raise(l, "ERR redis.register_function must get a function name argument");
        if (!cb)
            return scr_raise(l, "ERR redis.register_function must get a callback argument");
        lua_getfield(l, 1, "callback");
    } else if (argc == 2) {
        if (!lua_isstring(l, 1))
            return scr_raise(l, "ERR first argument to redis.register_function must be a string");
        if (!lua_isfunction(l, 2))
            return scr_raise(l,
                             "ERR second argument to redis.register_function must be a function");
        name = lua_tolstring(l, 1, &nn);
        lua_pushvalue(l, 2);
    } else {
        return scr_raise(l, "ERR wrong number of arguments to redis.register_function");
    }
    /* The callback is on top. */
    if (!name_ok(name, nn))
        return scr_raise(l, "ERR " NAME_RULE);
    struct fn_lib *b = building;
    for (size_t i = 0; i < b->nf; i++)
        if (strlen(b->f[i].name) == nn && !strncasecmp(b->f[i].name, name, nn))
            return scr_raise(l, "ERR Function already exists in the library");
    lua_getfield(l, LUA_REGISTRYINDEX, PENDING);
    lua_pushlstring(l, name, nn);
    lua_pushvalue(l, -3);
    lua_rawset(l, -3);
    if (b->nf == b->fcap) {
        b->fcap = b->fcap ? 2 * b->fcap : 4;
        b->f = kv_xrealloc(b->f, b->fcap * sizeof *b->f);
    }
    b->f[b->nf++] = (struct fn_func){.name = kv_xmemdup(name, nn + 1),
                                     .desc = desc ? kv_xmemdup(desc, dn + 1) : NULL,
                                     .flags = flags};
    return 0;
}

/* The "#!<engine> name=<lib>" line that starts a library, as Redis 7.0
 * reads it: *name and *nn get the name (in code), *skip the line's
 * length. 0, or -1 with Redis's error in err. */
static int lib_shebang(const char *code, size_t n, const char **name, size_t *nn, size_t *skip,
                       char *err, size_t errlen)
{
    if (n < 2 || memcmp(code, "#!", 2)) {
        snprintf(err, errlen, "ERR Missing library metadata");
        return -1;
    }
    const char *eol = memchr(code, '\n', n);
    size_t len = eol ? (size_t)(eol - code) : n;
    *skip = len;
    *name = NULL;
    const char *w;
    size_t at = 0, wn;
    for (int part = 0; scr_shebang_word(code, len, &at, &w, &wn); part++) {
        if (part == 0) {
            if (wn != 5 || strncasecmp(w + 2, "lua", 3)) {
                snprintf(err, errlen, "ERR Engine '%.*s' not found", (int)(wn - 2), w + 2);
                return -1;
            }
        } else if (wn >= 5 && !strncasecmp(w, "name=", 5)) {
            if (*name) {
                snprintf(err, errlen,
                         "ERR Invalid metadata value, name argument was given multiple times");
                return -1;
            }
            *name = w + 5;
            *nn = wn - 5;
        } else {
            snprintf(err, errlen, "ERR Invalid metadata value given: %.*s", (int)wn, w);
            return -1;
        }
    }
    if (!*name) {
        snprintf(err, errlen, "ERR Library name was not given");
        return -1;
    }
    if (!name_ok(*name, *nn)) {
        snprintf(err, errlen, "ERR " NAME_RULE);
        return -1;
    }
    return 0;
}

/* Runs a library's code and makes *out of what it registers. 0, or -1
 * with Redis's error in err (out then holds nothing). */
static int lib_build(const char *code, size_t n, const char *name, size_t nn, size_t skip,
                     struct fn_lib *out, char *err, size_t errlen)
{
    lua_State *l = scr_fn.L;
    memset(out, 0, sizeof *out);
    out->ref = LUA_NOREF;
    if (luaL_loadbuffer(l, code + skip, n - skip, "@user_function")) {
        snprintf(err, errlen, "ERR Error compiling function: %s", lua_tostring(l, -1));
        lua_settop(l, 0);
        return -1;
    }
    lua_newtable(l);
    lua_setfield(l, LUA_REGISTRYINDEX, PENDING);
    lua_pushcfunction(l, scr_on_error);
    lua_insert(l, -2);
    building = out;
    scr_globals_for_load(l, true);
    scr_load_guard(&scr_fn, true, LOAD_LIMIT_MS);
    int rc = lua_pcall(l, 0, 0, -2);
    scr_load_guard(&scr_fn, false, 0);
    scr_globals_for_load(l, false);
    building = NULL;
    if (rc) {
        const char *e = NULL;
        if (lua_istable(l, -1)) {
            lua_getfield(l, -1, "err");
            e = lua_tostring(l, -1);
        } else {
            e = lua_tostring(l, -1);
        }
        snprintf(err, errlen, "ERR Error registering functions: %s", e ? e : "?");
    } else if (!out->nf) {
        snprintf(err, errlen, "ERR No functions registered");
        rc = -1;
    }
    lua_settop(l, 0);
    if (rc) {
        lib_free(out);
        lua_gc(l, LUA_GCCOLLECT, 0);
        return -1;
    }
    lua_getfield(l, LUA_REGISTRYINDEX, PENDING);
    out->ref = luaL_ref(l, LUA_REGISTRYINDEX);
    lua_pushnil(l);
    lua_setfield(l, LUA_REGISTRYINDEX, PENDING);
    /* Copies with a NUL of their own: code need not be followed by one
     * (a library read from an RDB file ends where its buffer does). */
    out->name = kv_xmalloc(nn + 1);
    memcpy(out->name, name, nn);
    out->name[nn] = '\0';
    out->code = kv_xmalloc(n + 1);
    memcpy(out->code, code, n);
    out->code[n] = '\0';
    out->coden = n;
    return 0;
}

/* Parses and builds code as a library. */
static int lib_make(const char *code, size_t n, struct fn_lib *out, char *err, size_t errlen)
{
    const char *name;
    size_t nn, skip;
    if (lib_shebang(code, n, &name, &nn, &skip, err, errlen))
        return -1;
    return lib_build(code, n, name, nn, skip, out, err, errlen);
}

static void lib_add(struct fn_lib *lib)
{
    if (nlibs == libscap) {
        libscap = libscap ? 2 * libscap : 8;
        libs = kv_xrealloc(libs, libscap * sizeof *libs);
    }
    libs[nlibs++] = *lib;
}

static void lib_remove(struct fn_lib *lib)
{
    lib_free(lib);
    *lib = libs[--nlibs];
}

/* ---- stored with the data ---- */

/* FUNCTION DUMP's payload: each library's code as an RDB function record. */
static char *dump(size_t *n)
{
    struct db_str *codes = kv_xmalloc((nlibs ? nlibs : 1) * sizeof *codes);
    for (size_t i = 0; i < nlibs; i++)
        codes[i] = (struct db_str){libs[i].code, libs[i].coden};
    char *p = rdb_dump_functions(codes, nlibs, n);
    free(codes);
    return p;
}

/* Stores every library (none: the record goes). A failure is logged: the
 * libraries stay loaded, and the next change stores them all. */
static void store(void)
{
    size_t n = 0;
    char *p = nlibs ? dump(&n) : NULL;
    int rc = db_aux_put(srv.db, AUX_NAME, p, n);
    if (rc)
        srv_log(LOG_WARNING, "Cannot store the function libraries: %s %s", kv_strerror(rc),
                stor_errmsg());
    free(p);
}

static int functions_count(void)
{
    size_t n = 0;
    for (size_t i = 0; i < nlibs; i++)
        n += libs[i].nf;
    return (int)n;
}

void scr_fn_start(void)
{
    scr_vm_open(&scr_fn, true);
    scr_fn_api(scr_fn.L, l_register);
    char *p;
    size_t n;
    int rc = srv.db ? db_aux_get(srv.db, AUX_NAME, &p, &n) : KV_ENOTFOUND;
    if (rc == KV_ENOTFOUND)
        return;
    if (rc) {
        srv_log(LOG_WARNING, "Cannot read the function libraries: %s %s", kv_strerror(rc),
                stor_errmsg());
        return;
    }
    struct db_vec codes;
    db_vec_init(&codes);
    if (rdb_load_functions(p, n, &codes) != RDB_OK)
        srv_log(LOG_WARNING, "The stored function libraries do not decode: none loaded");
    for (size_t i = 0; i < codes.n; i++) {
        struct fn_lib lib;
        char err[1024];
        if (lib_make(db_vec_ptr(&codes, i), db_vec_len(&codes, i), &lib, err, sizeof err))
            srv_log(LOG_WARNING, "A stored function library does not load: %s", err);
        else
            lib_add(&lib);
    }
    db_vec_destroy(&codes);
    free(p);
    srv_log(LOG_NOTICE, "Function libraries loaded: %zu, with %d functions", nlibs,
            functions_count());
}

void scr_fn_stop(void)
{
    while (nlibs)
        lib_remove(&libs[nlibs - 1]);
    free(libs);
    libs = NULL;
    libscap = 0;
    scr_vm_close(&scr_fn);
}

size_t scr_fn_libraries(void)
{
    return nlibs;
}

size_t scr_fn_functions(void)
{
    return (size_t)functions_count();
}

size_t scr_fn_vm_bytes(void)
{
    return scr_fn.used;
}

size_t scr_fn_bytes(void)
{
    size_t b = 0;
    for (size_t i = 0; i < nlibs; i++) {
        b += sizeof libs[i] + strlen(libs[i].name) + libs[i].coden;
        for (size_t j = 0; j < libs[i].nf; j++)
            b += sizeof libs[i].f[j] + strlen(libs[i].f[j].name) +
                 (libs[i].f[j].desc ? strlen(libs[i].f[j].desc) : 0);
    }
    return b;
}

void scr_fn_each(void (*each)(void *arg, const char *code, size_t n), void *arg)
{
    for (size_t i = 0; i < nlibs; i++)
        each(arg, libs[i].code, libs[i].coden);
}

/* ---- FCALL ---- */

bool scr_fn_flags(const char *name, size_t n, unsigned *flags)
{
    const struct fn_func *f = func_find(name, n, NULL);
    if (f)
        *flags = f->flags;
    return f != NULL;
}

void scr_fcall(struct conn *c, bool ro)
{
    const struct fn_lib *lib;
    const struct fn_func *f = func_find(c->argv[1].p, c->argv[1].n, &lib);
    if (!f) {
        resp_error(OUT(c), "ERR Function not found");
        return;
    }
    int64_t numkeys;
    if (!scr_numkeys(c, "ERR Bad number of keys provided", &numkeys))
        return;
    if (!scr_may_start(c, f->flags, ro))
        return;
    lua_State *l = scr_fn.L;
    lua_rawgeti(l, LUA_REGISTRYINDEX, lib->ref);
    lua_getfield(l, -1, f->name);
    lua_remove(l, -2);
    scr_push_array(l, c->argv + 3, (size_t)numkeys);
    scr_push_array(l, c->argv + 3 + numkeys, c->argc - 3 - (size_t)numkeys);
    scr_run(c, &scr_fn, f->name, false, f->flags, ro, 2);
}

/* ---- FUNCTION ---- */

/* A function name clash between libraries: the name, or NULL. */
static const char *clash(void)
{
    for (size_t i = 0; i < nlibs; i++)
        for (size_t j = 0; j < libs[i].nf; j++)
            for (size_t k = i + 1; k < nlibs; k++)
                for (size_t m = 0; m < libs[k].nf; m++)
                    if (!strcasecmp(libs[i].f[j].name, libs[k].f[m].name))
                        return libs[i].f[j].name;
    return NULL;
}

int scr_fn_add(const char *code, size_t n, char *err, size_t errlen)
{
    struct fn_lib lib;
    if (lib_make(code, n, &lib, err, errlen))
        return -1;
    if (lib_find(lib.name, strlen(lib.name))) {
        snprintf(err, errlen, "ERR Library '%s' already exists", lib.name);
        lib_free(&lib);
        return -1;
    }
    for (size_t i = 0; i < lib.nf; i++)
        if (func_find(lib.f[i].name, strlen(lib.f[i].name), NULL)) {
            snprintf(err, errlen, "ERR Function %s already exists", lib.f[i].name);
            lib_free(&lib);
            return -1;
        }
    lib_add(&lib);
    store();
    return 0;
}

/* FUNCTION LOAD [REPLACE] code */
static void fn_load(struct conn *c)
{
    bool replace = false;
    size_t at = 2;
    if (c->argc > 3 && cmd_arg_is(c, 2, "replace")) {
        replace = true;
        at = 3;
    }
    if (c->argc != at + 1) {
        resp_errorf(OUT(c), "ERR Unknown option given: %.*s", (int)c->argv[2].n, c->argv[2].p);
        return;
    }
    const char *code = c->argv[at].p, *name;
    size_t n = c->argv[at].n, nn, skip;
    char err[1024];
    if (lib_shebang(code, n, &name, &nn, &skip, err, sizeof err)) {
        resp_error(OUT(c), err);
        return;
    }
    struct fn_lib *old = lib_find(name, nn);
    if (old && !replace) {
        resp_errorf(OUT(c), "ERR Library '%.*s' already exists", (int)nn, name);
        return;
    }
    struct fn_lib lib;
    if (lib_build(code, n, name, nn, skip, &lib, err, sizeof err)) {
        resp_error(OUT(c), err);
        return;
    }
    for (size_t i = 0; i < lib.nf; i++) {
        const struct fn_lib *owner;
        if (func_find(lib.f[i].name, strlen(lib.f[i].name), &owner) && owner != old) {
            resp_errorf(OUT(c), "ERR Function %s already exists", lib.f[i].name);
            lib_free(&lib);
            return;
        }
    }
    if (old)
        lib_remove(old);
    lib_add(&lib);
    store();
    resp_bulk(OUT(c), libs[nlibs - 1].name, nn);
}

/* FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE] */
static void fn_list(struct conn *c)
{
    bool code = false;
    const struct db_str *pat = NULL;
    for (size_t i = 2; i < c->argc; i++) {
        if (!code && cmd_arg_is(c, i, "withcode")) {
            code = true;
        } else if (!pat && cmd_arg_is(c, i, "libraryname")) {
            if (++i == c->argc) {
                resp_error(OUT(c), "ERR library name argument was not given");
                return;
            }
            pat = &c->argv[i];
        } else {
            resp_errorf(OUT(c), "ERR Unknown argument %.*s", (int)c->argv[i].n, c->argv[i].p);
            return;
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < nlibs; i++)
        n += !pat || db_glob_match(pat->p, pat->n, libs[i].name, strlen(libs[i].name), 1);
    resp_array(OUT(c), n);
    for (size_t i = 0; i < nlibs; i++) {
        const struct fn_lib *lib = &libs[i];
        if (pat && !db_glob_match(pat->p, pat->n, lib->name, strlen(lib->name), 1))
            continue;
        resp_map(OUT(c), code ? 4 : 3, c->proto);
        resp_bulk(OUT(c), "library_name", 12);
        resp_bulk(OUT(c), lib->name, strlen(lib->name));
        resp_bulk(OUT(c), "engine", 6);
        resp_bulk(OUT(c), "LUA", 3);
        resp_bulk(OUT(c), "functions", 9);
        resp_array(OUT(c), lib->nf);
        for (size_t j = 0; j < lib->nf; j++) {
            const struct fn_func *f = &lib->f[j];
            resp_map(OUT(c), 3, c->proto);
            resp_bulk(OUT(c), "name", 4);
            resp_bulk(OUT(c), f->name, strlen(f->name));
            resp_bulk(OUT(c), "description", 11);
            if (f->desc)
                resp_bulk(OUT(c), f->desc, strlen(f->desc));
            else
                resp_null(OUT(c), c->proto);
            resp_bulk(OUT(c), "flags", 5);
            size_t nf = 0;
            for (unsigned b = 0; b < SCR_NFLAGS; b++)
                nf += (f->flags >> b) & 1;
            resp_set(OUT(c), nf, c->proto);
            for (unsigned b = 0; b < SCR_NFLAGS; b++)
                if ((f->flags >> b) & 1)
                    resp_simple(OUT(c), scr_flag_names[b]);
        }
        if (code) {
            resp_bulk(OUT(c), "library_code", 12);
            resp_bulk(OUT(c), lib->code, lib->coden);
        }
    }
}

/* FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE] */
static void fn_restore(struct conn *c)
{
    enum { APPEND, REPLACE, FLUSH } policy = APPEND;
    if (c->argc > 4) {
        resp_errorf(OUT(c),
                    "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try "
                    "FUNCTION HELP.",
                    (int)c->argv[1].n, c->argv[1].p);
        return;
    }
    if (c->argc == 4) {
        if (cmd_arg_is(c, 3, "append"))
            policy = APPEND;
        else if (cmd_arg_is(c, 3, "replace"))
            policy = REPLACE;
        else if (cmd_arg_is(c, 3, "flush"))
            policy = FLUSH;
        else {
            resp_error(OUT(c), "ERR Wrong restore policy given, value should be either FLUSH, "
                               "APPEND or REPLACE.");
            return;
        }
    }
    struct db_vec codes;
    db_vec_init(&codes);
    int rc = rdb_load_functions(c->argv[2].p, c->argv[2].n, &codes);
    if (rc) {
        resp_error(OUT(c), rc == RDB_EVERSION ? "ERR DUMP payload version or checksum are wrong"
                                              : "ERR given type is not a function");
        db_vec_destroy(&codes);
        return;
    }
    /* Every library of the payload first, on their own: one that fails,
     * or two of one name, and nothing changes. */
    struct fn_lib *fresh = kv_xcalloc(codes.n ? codes.n : 1, sizeof *fresh);
    size_t nfresh = 0;
    char err[1024];
    const char *why = NULL;
    for (size_t i = 0; i < codes.n && !why; i++) {
        if (lib_make(db_vec_ptr(&codes, i), db_vec_len(&codes, i), &fresh[nfresh], err,
                     sizeof err)) {
            why = err;
            break;
        }
        nfresh++;
        for (size_t j = 0; j + 1 < nfresh && !why; j++)
            if (!strcasecmp(fresh[j].name, fresh[nfresh - 1].name)) {
                snprintf(err, sizeof err, "ERR Library '%s' already exists",
                         fresh[nfresh - 1].name);
                why = err;
            }
    }
    db_vec_destroy(&codes);
    if (!why && policy == APPEND)
        for (size_t i = 0; i < nfresh && !why; i++)
            if (lib_find(fresh[i].name, strlen(fresh[i].name))) {
                snprintf(err, sizeof err, "ERR Library %s already exists", fresh[i].name);
                why = err;
            }
    if (why) {
        for (size_t i = 0; i < nfresh; i++)
            lib_free(&fresh[i]);
        free(fresh);
        resp_error(OUT(c), why);
        return;
    }
    /* The new set: the old one (FLUSH: nothing of it; REPLACE: but the
     * libraries the payload names), then the payload's. A function name
     * in two libraries undoes it. */
    struct fn_lib *old = libs;
    size_t nold = nlibs;
    bool *kept = kv_xcalloc(nold ? nold : 1, sizeof *kept);
    libs = NULL;
    nlibs = libscap = 0;
    for (size_t i = 0; i < nold; i++) {
        kept[i] = policy != FLUSH;
        for (size_t j = 0; j < nfresh && kept[i]; j++)
            if (!strcasecmp(old[i].name, fresh[j].name))
                kept[i] = false;
        if (kept[i])
            lib_add(&old[i]);
    }
    for (size_t j = 0; j < nfresh; j++)
        lib_add(&fresh[j]);
    const char *dup = clash();
    if (dup) {
        resp_errorf(OUT(c), "ERR Function %s already exists", dup);
        for (size_t j = 0; j < nfresh; j++)
            lib_free(&fresh[j]);
        free(libs);
        libs = old;
        nlibs = libscap = nold;
    } else {
        for (size_t i = 0; i < nold; i++)
            if (!kept[i])
                lib_free(&old[i]);
        free(old);
        store();
        resp_simple(OUT(c), "OK");
    }
    free(kept);
    free(fresh);
}

void scr_function(struct conn *c)
{
    if (cmd_arg_is(c, 1, "load")) {
        fn_load(c);
    } else if (cmd_arg_is(c, 1, "delete")) {
        struct fn_lib *lib = lib_find(c->argv[2].p, c->argv[2].n);
        if (!lib) {
            resp_error(OUT(c), "ERR Library not found");
            return;
        }
        lib_remove(lib);
        store();
        resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "flush")) {
        if (c->argc > 3) {
            resp_errorf(OUT(c),
                        "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try "
                        "FUNCTION HELP.",
                        (int)c->argv[1].n, c->argv[1].p);
            return;
        }
        if (c->argc == 3 && !cmd_arg_is(c, 2, "async") && !cmd_arg_is(c, 2, "sync")) {
            resp_error(OUT(c), "ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
            return;
        }
        /* Both ways at once: the libraries are small beside the data. */
        while (nlibs)
            lib_remove(&libs[nlibs - 1]);
        store();
        lua_gc(scr_fn.L, LUA_GCCOLLECT, 0);
        resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "list")) {
        fn_list(c);
    } else if (cmd_arg_is(c, 1, "dump")) {
        size_t n;
        char *p = dump(&n);
        resp_bulk(OUT(c), p, n);
        free(p);
    } else if (cmd_arg_is(c, 1, "restore")) {
        fn_restore(c);
    }
}
