/*
 * cmd — the command table, dispatch, shared helpers, and the commit hook
 * that drives WATCH and blocked clients. See cmd.h.
 */
#include "acl.h"
#include "cmd.h"

#include "srv_repl.h"

#include "scr.h"
#include "srv_lat.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "srv_cache.h"
#include "srv_conf.h"
#include "srv_replica.h"
#include "kv_mem.h"

static const struct cmd table[] = {
#define CMD_ENTRY(name, fn, arity, flags, first, last, step, group)                                \
    {name, cmd_##fn, arity, flags, first, last, step, group},
    CMD_TABLE(CMD_ENTRY)
#undef CMD_ENTRY
};
#define NCMDS (sizeof table / sizeof table[0])

/* ---- CLIENT REPLY ---- */

static void reply_truncate(struct conn *c, size_t used_before)
{
    if (resp_buf_used(&c->out) > used_before)
        c->out.len = c->out.off + used_before; /* nothing was sent meanwhile */
}

void cmd_reply_settle(struct conn *c, size_t used_before)
{
    if (!(c->flags & (CONN_REPLY_OFF | CONN_REPLY_SKIP | CONN_REPLY_SKIP_NEXT)))
        return;
    if (c->flags & (CONN_REPLY_OFF | CONN_REPLY_SKIP)) {
        /* (P|S)(UN)SUBSCRIBE's notices are pushes, which Redis sends
         * whatever CLIENT REPLY says, as it sends messages. */
        const struct cmd *k = c->argc ? cmd_lookup(c->argv[0].p, c->argv[0].n) : NULL;
        if (!k || !(k->flags & CMD_SUBCTX) || strcmp(k->group, "pubsub"))
            reply_truncate(c, used_before);
    }
    c->flags &= ~(uint32_t)CONN_REPLY_SKIP;
    if (c->flags & CONN_REPLY_SKIP_NEXT) {
        c->flags &= ~(uint32_t)CONN_REPLY_SKIP_NEXT;
        c->flags |= CONN_REPLY_SKIP;
    }
}

void cmd_reply_drop_if_off(struct conn *c, size_t used_before)
{
    if (c->flags & CONN_REPLY_OFF)
        reply_truncate(c, used_before);
}

/* ---- INFO commandstats and errorstats ---- */

struct cmd_stat {
    uint64_t calls, usec, rejected, failed;
    struct srv_lat_hist *hist; /* call durations, while latency-tracking is on */
};
static struct cmd_stat stats[NCMDS];
/* Containers' documented subcommands, found by name (a few dozen at most). */
static struct {
    char name[64];
    struct cmd_stat st;
} substats[96];
static size_t nsubstats;
/* Error codes, as Redis keeps them: at most 128 distinct ones. */
static struct {
    char code[32];
    uint64_t count;
} errstats[128];
static size_t nerrstats;
/* srv.stats.error_replies when the last command ended (or began): what a
 * command added past it makes it a failed call. EXEC's own check then
 * covers only what came after its last queued command, as in Redis. */
static uint64_t errors_seen;

/* A documented subcommand's entry ("client|list"), made on first use; NULL
 * for a subcommand that does not exist, which Redis counts under no
 * command. */
static struct cmd_stat *sub_stat(const char *name)
{
    for (size_t i = 0; i < nsubstats; i++)
        if (!strcmp(substats[i].name, name))
            return &substats[i].st;
    if (!cmd_doc_exists(name, strlen(name)) || nsubstats == sizeof substats / sizeof substats[0])
        return NULL;
    snprintf(substats[nsubstats].name, sizeof substats[0].name, "%s", name);
    return &substats[nsubstats++].st;
}

/* Where a call of cmd counts: its own entry, or its subcommand's. */
static struct cmd_stat *stat_of(const struct conn *c, const struct cmd *cmd)
{
    if (c->lastcmd == c->lastsub && (cmd->flags & CMD_CONTAINER))
        return sub_stat(c->lastsub);
    return &stats[cmd - table];
}

/* "name|sub" of a container's subcommand argument, lower case (at most 32
 * bytes of the subcommand, as Redis reports it). */
static void sub_name(const struct conn *c, const struct cmd *cmd, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s|%.*s", cmd->name, (int)(c->argv[1].n < 32 ? c->argv[1].n : 32),
                     c->argv[1].p);
    for (int i = (int)strlen(cmd->name) + 1; i < n && i < (int)cap; i++)
        out[i] = (char)tolower((unsigned char)out[i]);
}

void cmd_count_error(const char *s, size_t n)
{
    srv.stats.error_replies++;
    size_t k = 0;
    while (k < n && k < sizeof errstats[0].code - 1 && s[k] != ' ')
        k++;
    for (size_t i = 0; i < nerrstats; i++) {
        if (strlen(errstats[i].code) == k && !memcmp(errstats[i].code, s, k)) {
            errstats[i].count++;
            return;
        }
    }
    if (nerrstats < sizeof errstats / sizeof errstats[0]) {
        memcpy(errstats[nerrstats].code, s, k);
        errstats[nerrstats].code[k] = 0;
        errstats[nerrstats++].count = 1;
    }
}

static void stat_line(struct resp_buf *b, const char *name, const struct cmd_stat *st)
{
    if (!st->calls && !st->rejected && !st->failed)
        return;
    resp_buf_printf(b,
                    "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,"
                    "failed_calls=%llu\r\n",
                    name, (unsigned long long)st->calls, (unsigned long long)st->usec,
                    st->calls ? (double)st->usec / (double)st->calls : 0.0,
                    (unsigned long long)st->rejected, (unsigned long long)st->failed);
}

void cmd_info_commandstats(struct resp_buf *b)
{
    for (size_t i = 0; i < NCMDS; i++)
        stat_line(b, table[i].name, &stats[i]);
    for (size_t i = 0; i < nsubstats; i++)
        stat_line(b, substats[i].name, &substats[i].st);
}

void cmd_info_errorstats(struct resp_buf *b)
{
    for (size_t i = 0; i < nerrstats; i++)
        resp_buf_printf(b, "errorstat_%s:count=%llu\r\n", errstats[i].code,
                        (unsigned long long)errstats[i].count);
}

/* "p99.9=1.234" for each configured percentile, in microseconds. */
static void latency_line(struct resp_buf *b, const char *name, const struct cmd_stat *st)
{
    if (!st->hist || !st->hist->total)
        return;
    resp_buf_printf(b, "latency_percentiles_usec_%s:", name);
    for (int i = 0; i < srv.conf.latency_npcts; i++) {
        double p = srv.conf.latency_pcts[i];
        resp_buf_printf(b, "%sp%g=%.3f", i ? "," : "", p,
                        (double)srv_lat_hist_percentile(st->hist, p) / 1000.0);
    }
    resp_buf_printf(b, "\r\n");
}

void cmd_info_latencystats(struct resp_buf *b)
{
    for (size_t i = 0; i < NCMDS; i++)
        latency_line(b, table[i].name, &stats[i]);
    for (size_t i = 0; i < nsubstats; i++)
        latency_line(b, substats[i].name, &substats[i].st);
}

/* One command's histogram for LATENCY HISTOGRAM: its calls and, at each
 * power of two of nanoseconds (named in microseconds) from 1,024 on, how
 * many calls took less; from the first such count above zero to the first
 * that holds them all. */
static void histogram_reply(struct conn *c, const char *name, const struct srv_lat_hist *h)
{
    unsigned first = 10, last = 10;
    while (first < 40 && !srv_lat_hist_below_pow2(h, first))
        first++;
    last = first;
    while (last < 40 && srv_lat_hist_below_pow2(h, last) < h->total)
        last++;
    resp_bulk_cstr(OUT(c), name);
    resp_map(OUT(c), 2, c->proto);
    resp_bulk_cstr(OUT(c), "calls");
    resp_int(OUT(c), (int64_t)h->total);
    resp_bulk_cstr(OUT(c), "histogram_usec");
    resp_map(OUT(c), last - first + 1, c->proto);
    for (unsigned k = first; k <= last; k++) {
        resp_int(OUT(c), (int64_t)(((1ull << k) + 500) / 1000));
        resp_int(OUT(c), (int64_t)srv_lat_hist_below_pow2(h, k));
    }
}

void cmd_latency_histogram(struct conn *c, const struct db_str *names, size_t n)
{
    /* Every command with calls, or those named: a container's name takes
     * in its subcommands, as in Redis. */
    const char *pick[NCMDS + sizeof substats / sizeof substats[0]];
    const struct srv_lat_hist *hist[NCMDS + sizeof substats / sizeof substats[0]];
    size_t m = 0;
    for (size_t i = 0; i < NCMDS + nsubstats; i++) {
        const char *name = i < NCMDS ? table[i].name : substats[i - NCMDS].name;
        const struct srv_lat_hist *h = i < NCMDS ? stats[i].hist : substats[i - NCMDS].st.hist;
        if (!h || !h->total)
            continue;
        bool want = n == 0;
        for (size_t j = 0; j < n && !want; j++) {
            size_t len = strcspn(name, "|");
            want = (names[j].n == strlen(name) && !strncasecmp(names[j].p, name, names[j].n)) ||
                   (i >= NCMDS && names[j].n == len && !strncasecmp(names[j].p, name, len));
        }
        if (want) {
            pick[m] = name;
            hist[m++] = h;
        }
    }
    resp_map(OUT(c), m, c->proto);
    for (size_t i = 0; i < m; i++)
        histogram_reply(c, pick[i], hist[i]);
}

void cmd_stats_reset(void)
{
    for (size_t i = 0; i < NCMDS; i++)
        srv_lat_hist_free(&stats[i].hist);
    for (size_t i = 0; i < nsubstats; i++)
        srv_lat_hist_free(&substats[i].st.hist);
    memset(stats, 0, sizeof stats);
    memset(substats, 0, sizeof substats);
    nsubstats = 0;
    nerrstats = 0;
}

size_t cmd_count(void)
{
    return NCMDS;
}

const struct cmd *cmd_at(size_t i)
{
    return i < NCMDS ? &table[i] : NULL;
}

/* An open-addressing index over the table, built on first use. */
static uint16_t index_slots[512];

static uint32_t name_hash(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint32_t)tolower((unsigned char)p[i])) * 16777619u;
    return h;
}

const struct cmd *cmd_lookup(const char *name, size_t n)
{
    static int built;
    if (!built) {
        for (size_t i = 0; i < NCMDS; i++) {
            uint32_t h = name_hash(table[i].name, strlen(table[i].name)) & 511;
            while (index_slots[h])
                h = (h + 1) & 511;
            index_slots[h] = (uint16_t)(i + 1);
        }
        built = 1;
    }
    if (n == 0 || n > 32)
        return NULL;
    for (uint32_t h = name_hash(name, n) & 511; index_slots[h]; h = (h + 1) & 511) {
        const struct cmd *c = &table[index_slots[h] - 1];
        if (strlen(c->name) == n && strncasecmp(c->name, name, n) == 0)
            return c;
    }
    return NULL;
}

/* ---- helpers ---- */

void cmd_reply_err(struct conn *c, int rc)
{
    switch (rc) {
    case KV_EWRONGTYPE:
        resp_error(OUT(c), kv_strerror(rc));
        return;
    case KV_ENOTHLL:
    case KV_EHLLCORRUPT:
        resp_error(OUT(c), kv_strerror(rc)); /* their own prefixes */
        return;
    case KV_ENOSPC:
        /* As Redis answers when its disk is full. */
        srv_log(LOG_WARNING, "storage error: %s: %s", kv_strerror(rc), stor_errmsg());
        resp_error(OUT(c), "MISCONF Errors writing to RocksDB: No space left on device");
        return;
    case KV_ESTORAGE:
    case KV_ECORRUPT:
        srv_log(LOG_WARNING, "storage error: %s: %s", kv_strerror(rc), stor_errmsg());
        resp_errorf(OUT(c), "ERR %s: %s", kv_strerror(rc), stor_errmsg());
        return;
    default:
        resp_errorf(OUT(c), "ERR %s", kv_strerror(rc));
    }
}

void cmd_reply_syntax(struct conn *c)
{
    resp_error(OUT(c), "ERR syntax error");
}

void cmd_reply_lines(struct conn *c, const char *const *lines, size_t n)
{
    resp_array(OUT(c), n);
    for (size_t i = 0; i < n; i++)
        resp_simple(OUT(c), lines[i]);
}

/* A timeout in milliseconds, as WAIT and CLIENT PAUSE take it: *end_ms is
 * now plus it (saturating), or 0 for a timeout of 0. Replies Redis's
 * errors and returns false on a bad one. */
bool cmd_arg_timeout_ms(struct conn *c, size_t i, uint64_t *end_ms)
{
    int64_t ms;
    if (kv_str2ll(c->argv[i].p, c->argv[i].n, &ms)) {
        resp_error(OUT(c), "ERR timeout is not an integer or out of range");
        return false;
    }
    if (ms < 0) {
        resp_error(OUT(c), "ERR timeout is negative");
        return false;
    }
    uint64_t now = srv_mstime();
    *end_ms = ms == 0 ? 0 : (uint64_t)ms > UINT64_MAX - now ? UINT64_MAX : now + (uint64_t)ms;
    return true;
}

/* The index in list (ended by a NULL name) of argument 1, or -1 after
 * Redis's error for an unknown subcommand or a wrong argument count. */
int cmd_subcommand(struct conn *c, const struct cmd_subcommand *list, const char *container)
{
    int i = 0;
    while (list[i].name && !cmd_arg_is(c, 1, list[i].name))
        i++;
    if (!list[i].name) {
        char upper[32];
        size_t n = 0;
        for (; container[n] && n < sizeof upper - 1; n++)
            upper[n] = (char)toupper((unsigned char)container[n]);
        upper[n] = '\0';
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try %s HELP.",
                    (int)(c->argv[1].n < 128 ? c->argv[1].n : 128), c->argv[1].p, upper);
        return -1;
    }
    if ((list[i].arity > 0 && c->argc != (size_t)list[i].arity) ||
        (list[i].arity < 0 && c->argc < (size_t)-list[i].arity)) {
        resp_errorf(OUT(c), "ERR wrong number of arguments for '%s|%s' command", container,
                    list[i].name);
        return -1;
    }
    return i;
}

bool cmd_arg_is(const struct conn *c, size_t i, const char *lit)
{
    size_t n = strlen(lit);
    return i < c->argc && c->argv[i].n == n && strncasecmp(c->argv[i].p, lit, n) == 0;
}

bool cmd_arg_ll(struct conn *c, size_t i, int64_t *v)
{
    if (kv_str2ll(c->argv[i].p, c->argv[i].n, v) == 0)
        return true;
    resp_error(OUT(c), "ERR value is not an integer or out of range");
    return false;
}

bool cmd_arg_count(struct conn *c, size_t i, int64_t *v)
{
    if (kv_str2ll(c->argv[i].p, c->argv[i].n, v) == 0 && *v >= 0)
        return true;
    resp_error(OUT(c), "ERR value is out of range, must be positive");
    return false;
}

bool cmd_arg_double_or(struct conn *c, size_t i, double *v, const char *err)
{
    if (kv_str2d(c->argv[i].p, c->argv[i].n, v) == 0)
        return true;
    resp_error(OUT(c), err);
    return false;
}

int cmd_key_type(struct conn *c, size_t i, int want, bool *exists)
{
    int t = ENC_TYPE_NONE;
    int rc = db_type(srv.db, c->db, c->argv[i].p, c->argv[i].n, &t);
    if (rc == 0 && t != ENC_TYPE_NONE && t != want)
        rc = KV_EWRONGTYPE;
    if (exists)
        *exists = rc == 0 && t == want;
    return rc;
}

bool cmd_arg_double(struct conn *c, size_t i, double *v)
{
    return cmd_arg_double_or(c, i, v, "ERR value is not a valid float");
}

bool cmd_arg_ld(struct conn *c, size_t i, long double *v)
{
    if (kv_str2ld(c->argv[i].p, c->argv[i].n, v) == 0)
        return true;
    resp_error(OUT(c), "ERR value is not a valid float");
    return false;
}

void cmd_reply_vec(struct conn *c, const struct db_vec *v)
{
    resp_array(OUT(c), v->n);
    for (size_t i = 0; i < v->n; i++) {
        if (db_vec_len(v, i) == DB_NIL)
            resp_null(OUT(c), c->proto);
        else
            resp_bulk(OUT(c), db_vec_ptr(v, i), db_vec_len(v, i));
    }
}

void cmd_reply_int(struct conn *c, int rc, int64_t v)
{
    if (rc < 0)
        cmd_reply_err(c, rc);
    else
        resp_int(OUT(c), v);
}

void cmd_reply_ok(struct conn *c, int rc)
{
    if (rc < 0)
        cmd_reply_err(c, rc);
    else
        resp_simple(OUT(c), "OK");
}

void cmd_reply_bulk(struct conn *c, int rc, char *v, size_t vn)
{
    if (rc == KV_ENOTFOUND) {
        resp_null(OUT(c), c->proto);
    } else if (rc < 0) {
        cmd_reply_err(c, rc);
    } else {
        resp_bulk(OUT(c), v, vn);
        free(v);
    }
}

/* ---- dispatch ---- */

/* Arguments are not NUL-terminated: every %s of one is bounded by its length. */
static int arglen(const struct db_str *a, size_t max)
{
    return (int)(a->n < max ? a->n : max);
}

static void reply_unknown(struct conn *c)
{
    /* Redis's text: up to 128 bytes of quoted arguments, each followed by a space. */
    char args[200] = "";
    size_t used = 0;
    for (size_t i = 1; i < c->argc && used < 128; i++) {
        int n = snprintf(args + used, sizeof args - used, "'%.*s' ",
                         arglen(&c->argv[i], 128 - used), c->argv[i].p);
        if (n < 0)
            break;
        used += (size_t)n < sizeof args - used ? (size_t)n : sizeof args - used - 1;
    }
    resp_errorf(OUT(c), "ERR unknown command '%.*s', with args beginning with: %s",
                arglen(&c->argv[0], 128), c->argv[0].p, args);
}

/* Copies c's current arguments into owned storage (MULTI queue, blocking). */
static struct db_str *copy_argv(const struct conn *c)
{
    struct db_str *v = kv_xmalloc(c->argc * sizeof *v);
    for (size_t i = 0; i < c->argc; i++) {
        v[i].p = kv_xmemdup(c->argv[i].p, c->argv[i].n);
        v[i].n = c->argv[i].n;
    }
    return v;
}

static void free_argv(struct db_str *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free((void *)v[i].p);
    free(v);
}

/* The keys c names, for OBJECT IDLETIME: each argument index goes to fn,
 * unless cmd only looks at its keys (CMD_NOTOUCH). A movable command's
 * keys follow its numkeys argument, which comes after its fixed keys, or
 * is the first argument, or the second after a blocking one's timeout;
 * GEORADIUS's is its STORE key, MIGRATE's its key or those after KEYS. */
static void each_key(const struct conn *c, const struct cmd *cmd,
                     void (*fn)(const struct conn *, size_t, void *), void *arg)
{
    if (cmd->flags & CMD_NOTOUCH)
        return;
    size_t argc = c->argc, at = (cmd->flags & CMD_BLOCKING) ? 2 : 1;
    if (cmd->fn == cmd_migrate) {
        size_t first;
        int n = cmd_migrate_keys(c->argv, argc, &first);
        for (int i = 0; i < n; i++)
            fn(c, first + (size_t)i, arg);
        return;
    }
    if (cmd->first > 0) {
        size_t last = cmd->last < 0 ? argc - (size_t)-cmd->last : (size_t)cmd->last;
        for (size_t i = (size_t)cmd->first; i <= last && i < argc; i += (size_t)cmd->step)
            fn(c, i, arg);
        at = last + 1;
    }
    if (cmd->fn == cmd_georadius || cmd->fn == cmd_georadiusbymember || cmd->fn == cmd_sort) {
        size_t store = cmd->fn == cmd_sort ? cmd_sort_store_key(c->argv, argc)
                                           : cmd_geo_store_key(c->argv, argc);
        if (store)
            fn(c, store, arg);
        return;
    }
    if (cmd->fn == cmd_sort_ro)
        return;
    int64_t nk;
    if ((cmd->flags & CMD_MOVABLE) && at < argc &&
        kv_str2ll(c->argv[at].p, c->argv[at].n, &nk) == 0 && nk > 0 && (uint64_t)nk < argc - at)
        for (size_t i = at + 1; i <= at + (size_t)nk; i++)
            fn(c, i, arg);
}

/* A command's keys are hashed, and their clock slots prefetched, before it
 * runs, and marked used after: the table's cache misses overlap the
 * command's own work. Up to TOUCH_AHEAD keys are carried across. */
#define TOUCH_AHEAD 8
struct touch_set {
    uint64_t k[TOUCH_AHEAD];
    size_t n, seen;
    size_t arg[CMD_KEYS_AHEAD], nargs;
};

static void touch_prepare(const struct conn *c, size_t i, void *arg)
{
    struct touch_set *t = arg;
    if (t->n < TOUCH_AHEAD)
        t->k[t->n++] = srv_idle_key(&srv.idle, c->db, c->argv[i].p, c->argv[i].n);
    if (t->nargs < CMD_KEYS_AHEAD)
        t->arg[t->nargs++] = i;
}

/* A command of several keys (MSET, MGET, DEL ...) looks them up one after
 * another, each a chain of cache misses (overlay index, overlay node, shm
 * bucket, shm record) that the pipelined prefetch, which loads only the
 * next command's first key (srv.c), does not cover: start every key's
 * index entries loading, then every key's records, so that their misses
 * overlap. (MSET of 10 keys at pipeline 1: the shm cache's look-up alone
 * was a quarter of the loop's samples, waiting on memory.) */
static void keys_prefetch(const struct conn *c, const struct touch_set *t)
{
    if (t->nargs < 2)
        return; /* a lone key was prefetched with its command, if at all */
    struct db_pf pf[CMD_KEYS_AHEAD];
    for (size_t j = 0; j < t->nargs; j++)
        db_prefetch1(srv.db, (unsigned)c->db, c->argv[t->arg[j]].p, c->argv[t->arg[j]].n, &pf[j]);
    for (size_t j = 0; j < t->nargs; j++)
        db_prefetch2(srv.db, &pf[j]);
}

static void touch_commit(const struct conn *c, size_t i, void *arg)
{
    struct touch_set *t = arg;
    uint64_t k =
        t->seen < t->n ? t->k[t->seen] : srv_idle_key(&srv.idle, c->db, c->argv[i].p, c->argv[i].n);
    if (SRV_LFU_POLICY(srv.conf.maxmemory_policy))
        srv_idle_touch_lfu(&srv.idle, k, srv.loop_ms, srv.conf.lfu_log_factor,
                           srv.conf.lfu_decay_time);
    else
        srv_idle_touch_key(&srv.idle, k, srv.loop_ms);
    t->seen++;
}

static int call_depth; /* cmd_calls under way: the stream is flushed at 0 */

void cmd_call(struct conn *c, const struct cmd *cmd)
{
    uint64_t a = srv_lat_clock_now();
    c->lastcmd = cmd->name;
    if ((cmd->flags & CMD_CONTAINER) && c->argc > 1) {
        sub_name(c, cmd, c->lastsub, sizeof c->lastsub);
        c->lastcmd = c->lastsub;
    }
    struct touch_set touch; /* its arrays are read only up to the counts: not zeroed per command */
    touch.n = touch.seen = touch.nargs = 0;
    uint64_t errors_at_start = errors_seen = srv.stats.error_replies;
    each_key(c, cmd, touch_prepare, &touch);
    keys_prefetch(c, &touch);
    srv_cache_begin(); /* local readers see the command all or nothing */
    cmd_tracking_begin(c);
    /* "new" and "expired" events: the storage layer notes the keys this
     * command creates and the expired ones it replaces or deletes. */
    bool events = cmd_notify_on(SRV_NOTIFY_NEW) || cmd_notify_on(SRV_NOTIFY_EXPIRED);
    if (events)
        db_track_events(srv.db, cmd_notify_on(SRV_NOTIFY_NEW) ? &srv.created : NULL,
                        cmd_notify_on(SRV_NOTIFY_EXPIRED) ? &srv.expired : NULL);
    bool stream = srv_repl_active() && !srv_repl_following();
    if (stream && !call_depth)
        cmd_repl_track(true);
    db_vec_clear(&srv.created);
    uint64_t found0, missing0, found1, missing1;
    db_lookups(srv.db, &found0, &missing0);
    /* A script is shown before the commands it runs, as Redis shows it. */
    bool script = cmd->flags & CMD_SCRIPTING;
    if (script && cmd_nmonitors)
        cmd_monitor_feed(c, cmd);
    /* Its writes survive a crash all together or not at all (stor.h). */
    bool group = script || cmd->fn == cmd_exec;
    if (group)
        db_group_begin(srv.db);
    uint64_t dirty0 = srv.stats.dirty;
    cmd_repl_begin();
    /* The primary's commands see keys as present until its DEL comes,
     * whatever this replica's clock says (Redis's replicas do the same). */
    bool from_primary = (c->flags & CONN_MASTER) && !call_depth;
    if (from_primary)
        db_pause_expiry(srv.db, true);
    call_depth++;
    cmd->fn(c);
    call_depth--;
    if (from_primary)
        db_pause_expiry(srv.db, false);
    if (stream)
        cmd_repl_after(c, cmd, srv.stats.dirty != dirty0);
    if (group)
        db_group_end(srv.db);
    if (script) /* its commands' errors make it a failed call too, as in Redis */
        errors_seen = errors_at_start;
    /* A read command's key look-ups are Redis's keyspace hits and misses
     * (a write's are not counted, as Redis's lookupKeyWrite). */
    bool reads = (cmd->flags & CMD_READONLY) && !(cmd->flags & CMD_SCRIPTING);
    if (!reads && (cmd->flags & CMD_CONTAINER) && c->argc > 1) { /* OBJECT ENCODING */
        const struct cmd_sub *sub = cmd_sub_lookup(c->lastsub, strlen(c->lastsub));
        reads = sub && (sub->flags & CMD_READONLY);
    }
    if (reads) {
        db_lookups(srv.db, &found1, &missing1);
        srv.stats.keyspace_hits += found1 - found0;
        srv.stats.keyspace_misses += missing1 - missing0;
    }
    if (events)
        db_track_events(srv.db, NULL, NULL);
    db_tidy(srv.db); /* inside the cache transaction: it may commit */
    cmd_notify_new_rest();
    db_vec_clear(&srv.expired); /* a failed commit's */
    srv_cache_end();
    if (!call_depth) {
        cmd_repl_track(false);
        srv_repl_flush();
        c->woff = srv_repl_offset();
    }
    if (c->tflags) {
        cmd_tracking_read(c, cmd);
        /* CLIENT CACHING lasts for the next command: not past it, nor
         * past the commands run by EXEC. */
        if (cmd->fn != cmd_client && !(c->flags & CONN_IN_EXEC))
            c->tflags &= ~(uint32_t)CONN_TRK_CACHING;
    }
    cmd_tracking_end(c); /* after the reply: its invalidations */
    each_key(c, cmd, touch_commit, &touch);
    uint64_t ns = srv_lat_clock_ns(a, srv_lat_clock_now());
    uint64_t us = ns / 1000;
    srv.stats.commands++;
    struct cmd_stat *st = stat_of(c, cmd);
    if (st) {
        st->calls++;
        st->usec += us;
        if (srv.stats.error_replies > errors_seen)
            st->failed++;
        /* A blocking command's time counts when it runs, not while it
         * waits: Redis's histograms leave the wait out too. */
        if (srv.conf.latency_tracking)
            srv_lat_hist_record(&st->hist, ns);
    }
    if (srv.conf.latency_monitor_threshold &&
        us / 1000 >= (uint64_t)srv.conf.latency_monitor_threshold)
        srv_lat_add(cmd->flags & CMD_FAST ? "fast-command" : "command", (uint32_t)(us / 1000),
                    (int64_t)(srv_mstime() / 1000));
    errors_seen = srv.stats.error_replies;
    if (cmd_nmonitors && !script)
        cmd_monitor_feed(c, cmd);
    int64_t slower = srv.conf.slowlog_log_slower_than;
    if (slower >= 0 && us >= (uint64_t)slower && !(cmd->flags & CMD_BLOCKING)) {
        uint64_t redact = 0;
        for (size_t i = 0; i < c->argc && i < 64; i++)
            redact |= (uint64_t)cmd_arg_redacted(c, cmd, i) << i;
        srv_slowlog_push(c, srv_mstime() / 1000, us, redact); /* wall time only when logging */
    }
}

static void multi_clear(struct conn *c);
static void unwatch_all(struct conn *c);

/* Refuses cmd before it runs, as Redis's rejectCommand does: inside MULTI
 * the transaction is flagged so EXEC discards it; a refused EXEC itself
 * discards the transaction at once (if any) and says why with EXECABORT,
 * the message's "ERR " dropped. */
static void __attribute__((format(printf, 3, 4)))
reject(struct conn *c, const struct cmd *cmd, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* A subcommand's refusal counts under it, as Redis counts it. */
    struct cmd_stat *st = &stats[cmd - table];
    if ((cmd->flags & CMD_CONTAINER) && c->argc > 1) {
        char name[64];
        sub_name(c, cmd, name, sizeof name);
        st = sub_stat(name);
    }
    if (st)
        st->rejected++;
    if (cmd->fn == cmd_exec) {
        multi_clear(c);
        unwatch_all(c);
        resp_errorf(OUT(c), "EXECABORT Transaction discarded because of: %s",
                    strncmp(msg, "ERR ", 4) ? msg : msg + 4);
        return;
    }
    resp_error(OUT(c), msg);
    if (c->flags & CONN_MULTI)
        c->flags |= CONN_DIRTY_EXEC;
}

/* Redis's denyoom: a write that may make what is stored grow. These only
 * remove, shrink or move what is stored, and run over maxmemory, as in
 * Redis. */
static bool may_grow(const struct cmd *cmd)
{
    static const char *const shrink[] = {"blmpop",
                                         "blpop",
                                         "brpop",
                                         "bzmpop",
                                         "bzpopmax",
                                         "bzpopmin",
                                         "del",
                                         "expire",
                                         "expireat",
                                         "flushall",
                                         "flushdb",
                                         "getdel",
                                         "getex",
                                         "hdel",
                                         "lmpop",
                                         "lpop",
                                         "lrem",
                                         "ltrim",
                                         "migrate",
                                         "move",
                                         "persist",
                                         "pexpire",
                                         "pexpireat",
                                         "rename",
                                         "renamenx",
                                         "rpop",
                                         "smove",
                                         "spop",
                                         "srem",
                                         "swapdb",
                                         "unlink",
                                         "zmpop",
                                         "zpopmax",
                                         "zpopmin",
                                         "zrem",
                                         "zremrangebylex",
                                         "zremrangebyrank",
                                         "zremrangebyscore"};
    if (!(cmd->flags & CMD_WRITE))
        return false;
    for (size_t i = 0; i < sizeof shrink / sizeof shrink[0]; i++)
        if (!strcmp(cmd->name, shrink[i]))
            return false;
    return true;
}

#define OOM_ERROR "OOM command not allowed when used memory > 'maxmemory'."

/* Redis's MISCONF error while writes cannot be made durable, else NULL;
 * valid until the next call. */
const char *cmd_misconf(void)
{
    static char why[400];
    char cause[300];
    if (!stor_write_error(srv.stor, cause, sizeof cause))
        return NULL;
    snprintf(why, sizeof why, "MISCONF Errors %s", cause);
    return why;
}

/* The primary's stream is running (cmd_dispatch): a script it runs may
 * write on a read-only replica. */
static bool master_running;

const char *cmd_script_refusal(const struct cmd *cmd, bool oom)
{
    if (oom && srv.over_maxmemory && srv.conf.maxmemory && may_grow(cmd))
        return OOM_ERROR;
    if ((cmd->flags & CMD_WRITE) && srv_replica_loading())
        return "LOADING Redis is loading the dataset in memory";
    if ((cmd->flags & CMD_WRITE) && !master_running && srv_replica_following() &&
        srv_conf_kept_num(&srv.conf, "replica-read-only"))
        return "READONLY You can't write against a read only replica.";
    return cmd->flags & CMD_WRITE ? cmd_misconf() : NULL;
}

/* Over maxmemory (srv.over_maxmemory, sampled every 100 ms), a command that
 * may grow what is stored is refused with Redis's OOM error, under every
 * policy: the data lives on disk, so removing keys would not give memory
 * back (docs/daemon.md, "maxmemory"). Inside MULTI, queuing takes memory
 * too: everything but EXEC, DISCARD, QUIT and RESET is refused, and an
 * EXEC whose queue has such a command. True if it replied. */
static bool oom_refused(struct conn *c, const struct cmd *cmd)
{
    if (!srv.over_maxmemory || !srv.conf.maxmemory)
        return false;
    bool refuse = may_grow(cmd), write;
    scr_cmd_flags(c, cmd, &write, &refuse); /* a script's own flags, where it has them */
    if (cmd->fn == cmd_exec && (c->flags & CONN_MULTI))
        for (size_t i = 0; i < c->mqn && !refuse; i++)
            refuse = may_grow(c->mq[i].cmd);
    if ((c->flags & CONN_MULTI) && cmd->fn != cmd_exec && cmd->fn != cmd_discard &&
        cmd->fn != cmd_quit && cmd->fn != cmd_reset)
        refuse = true;
    if (!refuse)
        return false;
    reject(c, cmd, "%s", OOM_ERROR);
    return true;
}

/* While writes cannot be made durable (a full disk: the flusher cannot write
 * RocksDB), write commands are refused as Redis refuses them when it cannot
 * write its AOF: MISCONF, also for PING (a health check should see it) and
 * for an EXEC with writes queued, which discards the transaction. Reads go
 * on. Accepting writes would only grow the overlay until back-pressure
 * holds every client. True if it replied. */
static bool write_refused(struct conn *c, const struct cmd *cmd)
{
    bool writes = cmd->flags & CMD_WRITE, denyoom;
    scr_cmd_flags(c, cmd, &writes, &denyoom);
    if (cmd->fn == cmd_exec && (c->flags & CONN_MULTI))
        for (size_t i = 0; i < c->mqn && !writes; i++)
            writes = c->mq[i].cmd->flags & CMD_WRITE;
    if (!writes && cmd->fn != cmd_ping)
        return false;
    const char *why = cmd_misconf();
    if (!why && writes && !(c->flags & CONN_MASTER))
        why = srv_repl_write_refusal(); /* min-replicas-to-write */
    if (!why)
        return false;
    reject(c, cmd, "%s", why);
    return true;
}

/* A replica with replica-read-only (the default) refuses its clients'
 * writes, as Redis does; its primary's stream is exempt (the caller). */
static bool readonly_refused(struct conn *c, const struct cmd *cmd)
{
    if (!srv_replica_following())
        return false;
    bool writes = cmd->flags & CMD_WRITE, denyoom;
    scr_cmd_flags(c, cmd, &writes, &denyoom);
    if (cmd->fn == cmd_exec && (c->flags & CONN_MULTI))
        for (size_t i = 0; i < c->mqn && !writes; i++)
            writes = c->mq[i].cmd->flags & CMD_WRITE;
    /* While a full sync's file loads, clients read the old data; what
     * would change the data, the link, or the loop's state under the load
     * waits for its end, as Redis answers while it loads. A reply then
     * leaves before the journal's sync, which is safe for reads only. */
    if (srv_replica_loading() &&
        (writes || cmd->fn == cmd_replicaof || cmd->fn == cmd_slaveof || cmd->fn == cmd_debug ||
         cmd->fn == cmd_function || cmd->fn == cmd_script || cmd->fn == cmd_save ||
         cmd->fn == cmd_bgsave || cmd->fn == cmd_shmkv_checkpoint)) {
        reject(c, cmd, "LOADING Redis is loading the dataset in memory");
        return true;
    }
    if (!writes || !srv_conf_kept_num(&srv.conf, "replica-read-only"))
        return false;
    reject(c, cmd, "READONLY You can't write against a read only replica.");
    return true;
}

/* A replica whose link is down, with replica-serve-stale-data no, refuses
 * what Redis does not mark "stale" (everything touching data, and EXEC
 * with such a command queued). */
static bool stale_refused(struct conn *c, const struct cmd *cmd)
{
    if (!srv_replica_following() || srv_replica_link_up() ||
        srv_conf_kept_num(&srv.conf, "replica-serve-stale-data"))
        return false;
    char name[64];
    if ((cmd->flags & CMD_CONTAINER) && c->argc > 1)
        sub_name(c, cmd, name, sizeof name);
    else
        snprintf(name, sizeof name, "%s", cmd->name);
    bool ok = srv_replica_stale_ok(name);
    if (ok && cmd->fn == cmd_exec && (c->flags & CONN_MULTI))
        for (size_t i = 0; i < c->mqn && ok; i++)
            ok = srv_replica_stale_ok(c->mq[i].cmd->name);
    if (ok)
        return false;
    reject(c, cmd,
           "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.");
    return true;
}

/* Whether CLIENT PAUSE holds cmd back: every command under ALL; under
 * WRITE the writes and what Redis marks may-replicate (PUBLISH, SPUBLISH,
 * PFCOUNT, which may rewrite a sketch's cached count), and an EXEC with
 * writes queued. */
static bool paused_by_pause(const struct conn *c, const struct cmd *cmd)
{
    if (srv.pause_type == SRV_PAUSE_ALL)
        return true;
    bool write = false, denyoom;
    if ((cmd->flags & CMD_WRITE) || cmd->fn == cmd_publish || cmd->fn == cmd_spublish ||
        cmd->fn == cmd_pfcount || (scr_cmd_flags(c, cmd, &write, &denyoom) && write))
        return true;
    if (cmd->fn == cmd_exec && (c->flags & CONN_MULTI))
        for (size_t i = 0; i < c->mqn; i++)
            if (c->mq[i].cmd->flags & CMD_WRITE)
                return true;
    return false;
}

/* What a client may run while a script is busy, as Redis 7.0 marks them
 * allow-busy: the connection's own state, transactions' bookkeeping,
 * SHUTDOWN (it refuses but NOSAVE itself), and stopping or watching the
 * script. */
static bool allowed_busy(const struct conn *c, const struct cmd *cmd)
{
    static const char *const any[] = {"auth",    "hello", "multi", "discard", "watch",
                                      "unwatch", "reset", "quit",  "shutdown"};
    for (size_t i = 0; i < sizeof any / sizeof any[0]; i++)
        if (!strcmp(cmd->name, any[i]))
            return true;
    if (c->argc < 2)
        return false;
    if (cmd->fn == cmd_script)
        return cmd_arg_is(c, 1, "kill");
    if (cmd->fn == cmd_function)
        return cmd_arg_is(c, 1, "kill") || cmd_arg_is(c, 1, "stats");
    return false;
}

void cmd_dispatch(struct conn *c)
{
    const struct cmd *cmd = cmd_lookup(c->argv[0].p, c->argv[0].n);
    if (!cmd) {
        reply_unknown(c);
        if (c->flags & CONN_MULTI)
            c->flags |= CONN_DIRTY_EXEC;
        return;
    }
    if ((cmd->arity > 0 && c->argc != (size_t)cmd->arity) ||
        (cmd->arity < 0 && c->argc < (size_t)-cmd->arity)) {
        reject(c, cmd, "ERR wrong number of arguments for '%s' command", cmd->name);
        return;
    }
    if ((cmd->flags & CMD_CONTAINER) && c->argc > 1) {
        char name[64];
        sub_name(c, cmd, name, sizeof name);
        const struct cmd_sub *sub = cmd_sub_lookup(name, strlen(name));
        int a = sub ? sub->arity : 0;
        if ((a > 0 && c->argc != (size_t)a) || (a < 0 && c->argc < (size_t)-a)) {
            reject(c, cmd, "ERR wrong number of arguments for '%s' command", name);
            return;
        }
    }
    if ((cmd->flags & CMD_PROTECTED) && !cmd_protected_allowed(c, srv.conf.enable_debug_command)) {
        /* Before AUTH, as in Redis 7.0's processCommand. */
        reject(c, cmd,
               "ERR DEBUG command not allowed. If the enable-debug-command option is set to "
               "\"local\", you can run it from a local connection, otherwise you need to set "
               "this option in the configuration file, and then restart the server.");
        return;
    }
    if (!(c->flags & CONN_AUTHED) && !(cmd->flags & CMD_NOAUTH) && acl_auth_required()) {
        reject(c, cmd, "NOAUTH Authentication required.");
        return;
    }
    if (c->user) {
        char name[96];
        int rc = cmd_acl_check(c, cmd, c->argv, c->argc, c->user,
                               (c->flags & CONN_MULTI) ? "multi" : "toplevel", name, sizeof name);
        if (rc != ACL_OK) {
            if (rc == ACL_DENIED_CMD)
                reject(c, cmd, "NOPERM this user has no permissions to run the '%s' command", name);
            else
                reject(c, cmd,
                       "NOPERM this user has no permissions to access one of the %s used "
                       "as arguments",
                       rc == ACL_DENIED_KEY ? "keys" : "channels");
            return;
        }
    }
    /* The primary's stream is applied whatever the state: its writes
     * were accepted where they were made. */
    bool master = c->flags & CONN_MASTER;
    if (!master && (oom_refused(c, cmd) || write_refused(c, cmd) || readonly_refused(c, cmd)))
        return;
    if ((c->flags & CONN_MONITOR) && (cmd->flags & (CMD_WRITE | CMD_READONLY))) {
        /* Redis marks a monitor as a replica, which may not. */
        reject(c, cmd, "ERR Replica can't interact with the keyspace");
        return;
    }
    if (c->proto == 2 && !(cmd->flags & CMD_SUBCTX) && cmd_pubsub_subscribed(c)) {
        /* A RESP2 connection with subscriptions carries their messages: a
         * reply could not be told from them. */
        char sub[64] = "";
        if ((cmd->flags & CMD_CONTAINER) && c->argc > 1) {
            snprintf(sub, sizeof sub, "|%.*s", (int)(c->argv[1].n < 60 ? c->argv[1].n : 60),
                     c->argv[1].p);
            for (char *p = sub; *p; p++)
                *p = (char)tolower((unsigned char)*p);
        }
        reject(c, cmd,
               "ERR Can't execute '%s%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
               "QUIT / RESET are allowed in this context",
               cmd->name, sub);
        return;
    }
    if (!master && stale_refused(c, cmd))
        return;
    if (scr_busy() && !allowed_busy(c, cmd)) {
        reject(c, cmd, "%s", scr_busy_error());
        return;
    }
    if ((c->flags & CONN_MULTI) && (cmd->flags & CMD_NOMULTI)) {
        reject(c, cmd, "ERR Command not allowed inside a transaction");
        return;
    }
    if (srv.pause_type && paused_by_pause(c, cmd)) {
        srv_postpone(c); /* runs, or queues, when the pause ends */
        return;
    }
    if ((c->flags & CONN_MULTI) && !(cmd->flags & CMD_NOQUEUE)) {
        if (c->mqn == c->mqcap) {
            c->mqcap = c->mqcap ? c->mqcap * 2 : 8;
            c->mq = kv_xrealloc(c->mq, c->mqcap * sizeof *c->mq);
        }
        c->mq[c->mqn].argc = c->argc;
        c->mq[c->mqn].argv = copy_argv(c);
        c->mq[c->mqn].cmd = cmd;
        c->mqn++;
        resp_simple(OUT(c), "QUEUED");
        return;
    }
    master_running = master;
    cmd_call(c, cmd);
    master_running = false;
}

/* ---- MULTI / EXEC / WATCH ---- */

static void multi_clear(struct conn *c)
{
    for (size_t i = 0; i < c->mqn; i++)
        free_argv(c->mq[i].argv, c->mq[i].argc);
    c->mqn = 0;
    c->flags &= ~(uint32_t)(CONN_MULTI | CONN_DIRTY_EXEC);
}

static size_t nwatching; /* clients with at least one watched key */

static void unwatch_all(struct conn *c)
{
    if (c->nwatched)
        nwatching--;
    free_argv(c->watched, c->nwatched);
    free(c->watched_db);
    c->watched = NULL;
    c->watched_db = NULL;
    c->nwatched = c->watchcap = 0;
    c->flags &= ~(uint32_t)CONN_DIRTY_CAS;
}

/* MULTI */
void cmd_multi(struct conn *c)
{
    if (c->flags & CONN_MULTI) {
        resp_error(OUT(c), "ERR MULTI calls can not be nested");
        return;
    }
    c->flags |= CONN_MULTI;
    resp_simple(OUT(c), "OK");
}

/* DISCARD */
void cmd_discard(struct conn *c)
{
    if (!(c->flags & CONN_MULTI)) {
        resp_error(OUT(c), "ERR DISCARD without MULTI");
        return;
    }
    multi_clear(c);
    unwatch_all(c);
    resp_simple(OUT(c), "OK");
}

/* EXEC */
void cmd_exec(struct conn *c)
{
    if (!(c->flags & CONN_MULTI)) {
        resp_error(OUT(c), "ERR EXEC without MULTI");
        return;
    }
    if (c->flags & CONN_DIRTY_EXEC) {
        resp_error(OUT(c), "EXECABORT Transaction discarded because of previous errors.");
    } else if (c->flags & CONN_DIRTY_CAS) {
        resp_null_array(OUT(c), c->proto);
    } else {
        /* The queue leaves c: commands run with c's argv pointing at copies. */
        struct conn_queued *q = c->mq;
        size_t n = c->mqn;
        c->mq = NULL;
        c->mqn = c->mqcap = 0;
        c->flags &= ~(uint32_t)CONN_MULTI;
        unwatch_all(c);
        struct db_str *saved = c->argv;
        size_t savedc = c->argc;
        resp_array(OUT(c), n);
        c->flags |= CONN_IN_EXEC;
        for (size_t i = 0; i < n; i++) {
            c->argv = q[i].argv;
            c->argc = q[i].argc;
            /* The rules may have changed since the command was queued. */
            char name[96];
            int rc = c->user ? cmd_acl_check(c, q[i].cmd, c->argv, c->argc, c->user, "multi", name,
                                             sizeof name)
                             : ACL_OK;
            if (rc != ACL_OK)
                resp_errorf(OUT(c),
                            "NOPERM ACLs rules changed between the moment the transaction was "
                            "accumulated and the EXEC call. This command is no longer allowed "
                            "for the following reason: %s",
                            rc == ACL_DENIED_CMD   ? "no permission to execute the command or "
                                                     "subcommand"
                            : rc == ACL_DENIED_KEY ? "no permission to touch the specified keys"
                                                   : "no permission to access one of the "
                                                     "channels used as arguments");
            else
                cmd_call(c, q[i].cmd);
            free_argv(q[i].argv, q[i].argc);
        }
        c->flags &= ~(uint32_t)CONN_IN_EXEC;
        free(q);
        c->argv = saved;
        c->argc = savedc;
        return;
    }
    multi_clear(c);
    unwatch_all(c);
}

/* WATCH key [key ...] */
void cmd_watch(struct conn *c)
{
    if (c->flags & CONN_MULTI) {
        resp_error(OUT(c), "ERR WATCH inside MULTI is not allowed");
        return;
    }
    if (!c->nwatched)
        nwatching++;
    for (size_t i = 1; i < c->argc; i++) {
        if (c->nwatched == c->watchcap) {
            c->watchcap = c->watchcap ? c->watchcap * 2 : 4;
            c->watched = kv_xrealloc(c->watched, c->watchcap * sizeof *c->watched);
            c->watched_db = kv_xrealloc(c->watched_db, c->watchcap * sizeof *c->watched_db);
        }
        c->watched[c->nwatched].p = kv_xmemdup(c->argv[i].p, c->argv[i].n);
        c->watched[c->nwatched].n = c->argv[i].n;
        c->watched_db[c->nwatched] = c->db;
        c->nwatched++;
    }
    resp_simple(OUT(c), "OK");
}

/* UNWATCH */
void cmd_unwatch(struct conn *c)
{
    unwatch_all(c);
    resp_simple(OUT(c), "OK");
}

/* ---- blocked clients ---- */

static bool key_eq(const struct db_str *a, const char *k, size_t kn)
{
    return a->n == kn && memcmp(a->p, k, kn) == 0;
}

/* The arguments [*first, *last] of a parked command that a push can serve,
 * by its shape in the table: BLMOVE/BRPOPLPUSH (fixed keys) wait on their
 * source only; BLMPOP/BZMPOP (movable) on the keys after "timeout
 * numkeys"; BLPOP, BRPOP, BZPOPMIN, BZPOPMAX on all but the timeout. */
static void blocking_keys(const struct conn *c, size_t *first, size_t *last)
{
    *first = 1;
    if (c->bcmd->fn == cmd_wait) { /* no key: its timeout ends it */
        *last = 0;
    } else if (c->bcmd->flags & CMD_MOVABLE) {
        int64_t nk = 0;
        kv_str2ll(c->bargv[2].p, c->bargv[2].n, &nk); /* checked before it parked */
        *first = 3;
        *last = 2 + (size_t)nk;
    } else if (c->bcmd->last > 0) {
        *last = 1;
    } else {
        *last = c->bargc - 2;
    }
}

/* Blocked clients in the order they blocked; a key change sets `ready`. */
static struct conn **blocked;
static size_t nblocked, blockedcap;
static bool ready;
/* No later than the earliest deadline of a parked client, 0 for none. */
static uint64_t next_deadline;

void cmd_block(struct conn *c, uint64_t deadline_ms)
{
    c->flags |= CONN_BLOCKED;
    c->block_deadline_ms = deadline_ms;
    if (deadline_ms && (!next_deadline || deadline_ms < next_deadline))
        next_deadline = deadline_ms;
    c->bargv = copy_argv(c);
    c->bargc = c->argc;
    c->bcmd = cmd_lookup(c->argv[0].p, c->argv[0].n);
    if (nblocked == blockedcap) {
        blockedcap = blockedcap ? blockedcap * 2 : 16;
        blocked = kv_xrealloc(blocked, blockedcap * sizeof *blocked);
    }
    blocked[nblocked++] = c;
}

void cmd_unblock(struct conn *c)
{
    if (!(c->flags & CONN_BLOCKED))
        return;
    for (size_t i = 0; i < nblocked; i++) {
        if (blocked[i] == c) {
            memmove(&blocked[i], &blocked[i + 1], (nblocked - i - 1) * sizeof *blocked);
            nblocked--;
            break;
        }
    }
    free_argv(c->bargv, c->bargc);
    c->bargv = NULL;
    c->bargc = 0;
    c->flags &= ~(uint32_t)CONN_BLOCKED;
    conn_want_write(c);
    if (resp_buf_used(&c->in))
        srv_resume_later(c); /* commands pipelined behind the blocking one */
}

/* Is c blocked on (dbi, k)? */
static bool blocked_on(const struct conn *c, unsigned dbi, const char *k, size_t kn)
{
    if (c->db != dbi)
        return false;
    size_t first, last;
    blocking_keys(c, &first, &last);
    for (size_t i = first; i <= last; i++)
        if (key_eq(&c->bargv[i], k, kn))
            return true;
    return false;
}

void cmd_on_commit(void *arg, const struct stor_batch *b, int flags)
{
    (void)arg;
    srv_cache_apply(b); /* before anything can be acknowledged */
    if (flags & DB_COMMIT_TIDY)
        return; /* a collection rewritten as it was: nobody's key changed */
    srv.stats.dirty++;
    /* "expired": keys seen for the last time after their expiry, whether
     * active expiry deleted them or a command replaced them first. */
    struct db_vec *ex = &srv.expired;
    for (size_t i = 0; i < ex->n; i++)
        cmd_notify_publish(SRV_NOTIFY_EXPIRED, "expired", (unsigned)ex->items[i].score,
                           db_vec_ptr(ex, i), db_vec_len(ex, i));
    db_vec_clear(ex);
    cmd_repl_committed(b); /* active expiry's deletes, as DELs */
    if (cmd_tracking_active()) {
        bool flushed = false; /* a flush's range deletes: one per column family */
        for (size_t i = 0; i < b->nops; i++) {
            const struct stor_op *op = &b->ops[i];
            unsigned dbi;
            const char *k;
            size_t kn;
            if (op->kind == STOR_OP_DELRANGE) {
                if (!flushed)
                    cmd_tracking_flush();
                flushed = true;
            } else if (!db_record_key(b, op, &dbi, &k, &kn)) {
                cmd_tracking_key_modified(k, kn);
            }
        }
    }
    /* Blocked clients re-try after this command if it touched their keys. */
    for (size_t i = 0; i < b->nops && nblocked && !ready; i++) {
        const struct stor_op *op = &b->ops[i];
        unsigned dbi;
        const char *k;
        size_t kn;
        if (op->kind == STOR_OP_DELRANGE || db_record_key(b, op, &dbi, &k, &kn))
            continue;
        for (size_t j = 0; j < nblocked && !ready; j++)
            ready = blocked_on(blocked[j], dbi, k, kn);
    }
    if (!nwatching)
        return;
    for (struct conn *w = srv.clients; w; w = w->next) {
        if (!w->nwatched || (w->flags & CONN_DIRTY_CAS))
            continue;
        for (size_t i = 0; i < b->nops && !(w->flags & CONN_DIRTY_CAS); i++) {
            const struct stor_op *op = &b->ops[i];
            if (op->kind == STOR_OP_DELRANGE) {
                /* FLUSHDB/FLUSHALL: [db|.., hi): every watched key of those dbs. */
                unsigned lo = (unsigned char)stor_op_key(b, op)[0];
                unsigned hi = (unsigned char)stor_op_value(b, op)[0];
                for (size_t j = 0; j < w->nwatched; j++)
                    if (w->watched_db[j] >= lo && w->watched_db[j] <= hi)
                        w->flags |= CONN_DIRTY_CAS;
                continue;
            }
            unsigned dbi;
            const char *k;
            size_t kn;
            if (db_record_key(b, op, &dbi, &k, &kn))
                continue;
            for (size_t j = 0; j < w->nwatched; j++)
                if (w->watched_db[j] == dbi && key_eq(&w->watched[j], k, kn))
                    w->flags |= CONN_DIRTY_CAS;
        }
    }
}

void cmd_swapped(unsigned pa, unsigned pb)
{
    scr_swapped(pa, pb); /* the scripts' client is not among srv.clients */
    for (struct conn *c = srv.clients; c; c = c->next) {
        /* Each client stays on its database number, as in Redis. */
        if (c->db == pa || c->db == pb)
            c->db = c->db == pa ? pb : pa;
        /* So do its watches; a watched key in either database, before or
         * after, is touched (Redis's touchAllWatchedKeysInDb). */
        for (size_t j = 0; j < c->nwatched; j++) {
            if (c->watched_db[j] != pa && c->watched_db[j] != pb)
                continue;
            c->watched_db[j] = c->watched_db[j] == pa ? pb : pa;
            const struct db_str *k = &c->watched[j];
            if (db_exists(srv.db, pa, k->p, k->n) != 0 || db_exists(srv.db, pb, k->p, k->n) != 0)
                c->flags |= CONN_DIRTY_CAS;
        }
    }
    /* A blocked client of either may find its keys now: each tries again. */
    for (size_t i = 0; i < nblocked; i++)
        if (blocked[i]->db == pa || blocked[i]->db == pb)
            ready = true;
}

void cmd_serve_ready(void)
{
    if (scr_busy())
        return; /* not in the middle of a script: after it, as its other effects */
    /* Re-run each blocked command in blocking order until a pass changes
     * nothing: a served BLMOVE may push where another client waits. */
    while (ready) {
        ready = false;
        for (size_t i = 0; i < nblocked; i++) {
            struct conn *c = blocked[i];
            /* A closing client is not served: its reply would be dropped
             * (srv_out_over), so nothing would say it was, and it would
             * pop again and again. */
            if (c->flags & CONN_CLOSE_ASAP)
                continue;
            struct db_str *saved = c->argv;
            size_t savedc = c->argc;
            c->argv = c->bargv;
            c->argc = c->bargc;
            size_t before = resp_buf_used(&c->out);
            srv_cache_begin();
            bool stream = srv_repl_active() && !srv_repl_following();
            if (stream)
                cmd_repl_track(true);
            uint64_t dirty0 = srv.stats.dirty;
            cmd_repl_begin();
            c->bcmd->fn(c); /* replies only if it could pop */
            if (stream) {
                cmd_repl_track(false);
                cmd_repl_after(c, c->bcmd, srv.stats.dirty != dirty0);
            }
            db_tidy(srv.db);
            srv_cache_end();
            srv_repl_flush();
            bool served = resp_buf_used(&c->out) != before;
            cmd_reply_drop_if_off(c, before);
            if (served)
                each_key(c, c->bcmd, touch_commit, &(struct touch_set){.n = 0});
            c->argv = saved;
            c->argc = savedc;
            if (served) {
                cmd_unblock(c);
                i--;
            }
        }
    }
}

uint64_t cmd_blocked_deadline(void)
{
    return next_deadline;
}

void cmd_unblock_answer(struct conn *c, const char *error)
{
    size_t before = resp_buf_used(&c->out);
    if (error)
        resp_error(OUT(c), error);
    else if (c->bcmd->fn == cmd_wait) /* the replicas that acknowledged by now */
        resp_int(OUT(c), srv_repl_wait_count(c));
    else if (c->bcmd->last > 0) /* BLMOVE, BRPOPLPUSH answer a value */
        resp_null(OUT(c), c->proto);
    else
        resp_null_array(OUT(c), c->proto);
    cmd_reply_drop_if_off(c, before);
    cmd_unblock(c);
}

void cmd_blocked_cron(uint64_t now_ms)
{
    next_deadline = 0;
    for (size_t i = 0; i < nblocked; i++) {
        struct conn *c = blocked[i];
        uint64_t d = c->block_deadline_ms;
        if (d && d <= now_ms) {
            cmd_unblock_answer(c, NULL);
            i--;
        } else if (d && (!next_deadline || d < next_deadline)) {
            next_deadline = d;
        }
    }
}

void cmd_conn_release(struct conn *c)
{
    cmd_unblock(c);
    cmd_pubsub_release(c);
    cmd_monitor_release(c);
    cmd_tracking_release(c);
    multi_clear(c);
    free(c->mq);
    c->mq = NULL;
    c->mqcap = 0;
    unwatch_all(c);
}
