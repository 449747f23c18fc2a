/*
 * srv_conf — the configuration table. See srv_conf.h.
 */
#include "srv_conf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kv_mem.h"
#include "srv_os.h"

const char *srv_conf_file;

enum ptype {
    P_INT,
    P_MEM, /* bytes, with Redis's units (k, kb, m, mb, g, gb) */
    P_I64, /* a 64-bit integer */
    P_STR,
    P_BOOL,
    P_ENUM,
    P_OCTAL,
    P_BIND,
    P_PCTS,
    P_NOTIFY,
    /* Only Redis directives kept without being applied (srv_conf_redis.h). */
    P_SAVE,      /* save: seconds changes pairs */
    P_COBL,      /* client-output-buffer-limit: class hard soft seconds */
    P_OOMV,      /* oom-score-adj-values: three values */
    P_REPLICAOF, /* replicaof host port | no one */
    P_MEMPCT,    /* a memory value or a percentage */
    P_HOST,      /* a hostname */
    P_TITLE,     /* proc-title-template */
};

struct param {
    const char *name;
    enum ptype type;
    size_t off;               /* into struct srv_conf (int, int64_t or char *) */
    bool runtime;             /* CONFIG SET may change it */
    int64_t min, max;         /* P_INT / P_MEM / P_I64 bounds */
    const char *const *names; /* P_ENUM values, index = stored int */
    /* Set for a Redis directive shmkvd keeps without applying: its default,
     * as CONFIG GET shows it; the value lives in srv_conf.inert. */
    const char *dflt;
    const char *alias; /* another name of the directive named here */
    bool protect;      /* CONFIG SET only with enable-protected-configs */
    bool used;         /* a kept directive its module reads (srv_conf_kept): not inert */
};

static const char *const loglevels[] = {"debug", "verbose", "notice", "warning", NULL};
static const char *const codings[] = {"counted", "blind", NULL};
static const char *const fsyncs[] = {"no", "everysec", "always", NULL};
static const char *const supervisions[] = {"upstart", "systemd", "auto", "no", NULL};
const char *const srv_conf_policies[] = {"volatile-lru",   "volatile-lfu", "volatile-random",
                                         "volatile-ttl",   "allkeys-lru",  "allkeys-lfu",
                                         "allkeys-random", "noeviction",   NULL};
/* Redis's values for who may run a protected command (srv.h, SRV_PROTECTED_*). */
static const char *const protected_actions[] = {"no", "yes", "local", NULL};

#define OFF(f) offsetof(struct srv_conf, f)
static const struct param params[] = {
    {"port", P_INT, OFF(port), false, 0, 65535, NULL, NULL, NULL, false, false},
    {"bind", P_BIND, 0, false, 0, 0, NULL, NULL, NULL, false, false},
    {"unixsocket", P_STR, OFF(unixsocket), false, 0, 0, NULL, NULL, NULL, false, false},
    {"unixsocketperm", P_OCTAL, OFF(unixsocketperm), false, 0, 0777, NULL, NULL, NULL, false,
     false},
    {"dir", P_STR, OFF(dir), false, 0, 0, NULL, NULL, NULL, false, false},
    {"requirepass", P_STR, OFF(requirepass), true, 0, 0, NULL, NULL, NULL, false, false},
    {"maxclients", P_INT, OFF(maxclients), true, 1, 1000000, NULL, NULL, NULL, false, false},
    {"timeout", P_INT, OFF(timeout), true, 0, INT32_MAX, NULL, NULL, NULL, false, false},
    {"proto-max-bulk-len", P_MEM, OFF(proto_max_bulk_len), true, 1024 * 1024, INT64_MAX, NULL, NULL,
     NULL, false, false},
    {"databases", P_INT, OFF(databases), false, 1, 256, NULL, NULL, NULL, false, false},
    {"loglevel", P_ENUM, OFF(loglevel), true, 0, 0, loglevels, NULL, NULL, false, false},
    {"logfile", P_STR, OFF(logfile), false, 0, 0, NULL, NULL, NULL, false, false},
    {"daemonize", P_BOOL, OFF(daemonize), false, 0, 1, NULL, NULL, NULL, false, false},
    {"pidfile", P_STR, OFF(pidfile), false, 0, 0, NULL, NULL, NULL, false, false},
    {"supervised", P_ENUM, OFF(supervised), false, 0, 0, supervisions, NULL, NULL, false, false},
    {"hz", P_INT, OFF(hz), true, 1, 500, NULL, NULL, NULL, false, false},
    {"block-cache-size", P_MEM, OFF(block_cache_bytes), false, 1024 * 1024, INT64_MAX, NULL, NULL,
     NULL, false, false},
    {"write-buffer-size", P_MEM, OFF(write_buffer_bytes), false, 1024 * 1024, INT64_MAX, NULL, NULL,
     NULL, false, false},
    {"compaction-io-limit", P_MEM, OFF(compaction_io_bytes), false, 0, INT64_MAX, NULL, NULL, NULL,
     false, false},
    {"hash-encoding", P_ENUM, OFF(hash_coding), true, 0, 0, codings, NULL, NULL, false, false},
    {"set-encoding", P_ENUM, OFF(set_coding), true, 0, 0, codings, NULL, NULL, false, false},
    {"appendfsync", P_ENUM, OFF(appendfsync), false, 0, 0, fsyncs, NULL, NULL, false, false},
    {"write-back", P_BOOL, OFF(writeback), false, 0, 1, NULL, NULL, NULL, false, false},
    {"flusher-batch-size", P_MEM, OFF(flush_batch_bytes), false, 4096, INT64_MAX, NULL, NULL, NULL,
     false, false},
    {"flusher-interval", P_INT, OFF(flush_interval_ms), false, 0, 10000, NULL, NULL, NULL, false,
     false},
    {"flusher-threads", P_INT, OFF(flusher_threads), false, 0, 64, NULL, NULL, NULL, false, false},
    {"io-threads", P_INT, OFF(io_threads), false, 1, 16, NULL, NULL, NULL, false, false},
    {"journal-shm-dir", P_STR, OFF(journal_shm_dir), false, 0, 0, NULL, NULL, NULL, false, false},
    {"overlay-max-memory", P_MEM, OFF(overlay_max_bytes), false, 1024 * 1024, INT64_MAX, NULL, NULL,
     NULL, false, false},
    {"min-free-disk", P_MEM, OFF(min_free_disk), true, 0, INT64_MAX, NULL, NULL, NULL, false,
     false},
    {"shm-cache-size", P_MEM, OFF(shm_cache_bytes), false, 0, INT64_MAX, NULL, NULL, NULL, false,
     false},
    {"shm-cache-huge-pages", P_BOOL, OFF(shm_huge_pages), false, 0, 1, NULL, NULL, NULL, false,
     false},
    {"shm-cache-max-record", P_MEM, OFF(shm_max_record), false, 64, INT64_MAX, NULL, NULL, NULL,
     false, false},
    {"slowlog-log-slower-than", P_I64, OFF(slowlog_log_slower_than), true, -1, INT64_MAX, NULL,
     NULL, NULL, false, false},
    {"slowlog-max-len", P_INT, OFF(slowlog_max_len), true, 0, INT32_MAX, NULL, NULL, NULL, false,
     false},
    {"latency-tracking", P_BOOL, OFF(latency_tracking), true, 0, 1, NULL, NULL, NULL, false, false},
    {"latency-monitor-threshold", P_INT, OFF(latency_monitor_threshold), true, 0, INT32_MAX, NULL,
     NULL, NULL, false, false},
    {"latency-tracking-info-percentiles", P_PCTS, 0, true, 0, 0, NULL, NULL, NULL, false, false},
    {"notify-keyspace-events", P_NOTIFY, 0, true, 0, 0, NULL, NULL, NULL, false, false},
    {"maxmemory", P_MEM, OFF(maxmemory), true, 0, INT64_MAX, NULL, NULL, NULL, false, false},
    {"maxmemory-policy", P_ENUM, OFF(maxmemory_policy), true, 0, 0, srv_conf_policies, NULL, NULL,
     false, false},
    {"lfu-log-factor", P_INT, OFF(lfu_log_factor), true, 0, INT32_MAX, NULL, NULL, NULL, false,
     false},
    {"lfu-decay-time", P_INT, OFF(lfu_decay_time), true, 0, INT32_MAX, NULL, NULL, NULL, false,
     false},
    {"tracking-table-max-keys", P_I64, OFF(tracking_table_max_keys), true, 0, INT64_MAX, NULL, NULL,
     NULL, false, false},
    {"enable-debug-command", P_ENUM, OFF(enable_debug_command), false, 0, 0, protected_actions,
     NULL, NULL, false, false},
    {"busy-reply-threshold", P_I64, OFF(busy_reply_ms), true, 0, INT64_MAX, NULL, NULL, NULL, false,
     false},
    {"lua-time-limit", P_I64, OFF(busy_reply_ms), true, 0, INT64_MAX, NULL, NULL,
     "busy-reply-threshold", false, false},
    {"lua-memory-limit", P_MEM, OFF(lua_memory_limit), true, 0, INT64_MAX, NULL, NULL, NULL, false,
     false},
    {"dbfilename", P_STR, OFF(dbfilename), true, 0, 0, NULL, NULL, NULL, true, false},
};
#define NAPPLIED (sizeof params / sizeof params[0])

#include "srv_conf_redis.h"
#define NINERT (sizeof inert_params / sizeof inert_params[0])
#define NPARAMS (NAPPLIED + NINERT)

/* Every parameter, the applied ones first: CONFIG GET *'s order. */
static const struct param *param_at(size_t i)
{
    return i < NAPPLIED ? &params[i] : &inert_params[i - NAPPLIED];
}

static char *xstrdup(const char *s)
{
    return kv_xmemdup(s, strlen(s) + 1);
}

static void set_str(char **slot, const char *v)
{
    free(*slot);
    *slot = v && *v ? xstrdup(v) : NULL;
}

static void find_build(void);

void srv_conf_init(struct srv_conf *c)
{
    find_build();
    memset(c, 0, sizeof *c);
    c->port = 6380;
    c->bind[0] = xstrdup("127.0.0.1");
    c->bind[1] = xstrdup("-::1"); /* '-': skipped if IPv6 is not available */
    c->nbind = 2;
    c->unixsocketperm = 0700;
    c->dir = xstrdup("./data");
    c->dbfilename = xstrdup("dump.rdb");
    c->maxclients = 10000;
    c->maxmemory_policy = SRV_POLICY_NOEVICTION;
    c->lfu_log_factor = 10;
    c->lfu_decay_time = 1;
    c->proto_max_bulk_len = 512ll << 20;
    c->databases = 16;
    c->loglevel = LOG_NOTICE;
    c->supervised = 3; /* no */
    c->hz = 10;
    c->block_cache_bytes = 256ll << 20;
    c->write_buffer_bytes = 64ll << 20;
    c->appendfsync = 1;
    c->writeback = 1;
    c->flush_batch_bytes = 16ll << 20;
    c->flush_interval_ms = 250;
    c->io_threads = 1; /* as Redis: the helpers spin under load (srv_io.c) */
    c->overlay_max_bytes = 256ll << 20;
    c->min_free_disk = 1ll << 30;
    c->journal_shm_dir = xstrdup("/dev/shm");
    c->shm_huge_pages = 1;
    c->shm_cache_bytes = 64ll << 20;
    c->shm_max_record = 1ll << 20;
    c->slowlog_log_slower_than = 10000;
    c->slowlog_max_len = 128;
    c->latency_tracking = 1;
    c->latency_pcts[0] = 50;
    c->latency_pcts[1] = 99;
    c->latency_pcts[2] = 99.9;
    c->latency_npcts = 3;
    c->tracking_table_max_keys = 1000000;
    c->busy_reply_ms = 5000;
    c->lua_memory_limit = 1024LL * 1024 * 1024;
    c->inert = kv_xcalloc(NINERT, sizeof *c->inert);
    c->inert_named = kv_xcalloc(NINERT, sizeof *c->inert_named);
    for (size_t i = 0; i < NINERT; i++)
        if (!inert_params[i].alias)
            c->inert[i] = xstrdup(inert_params[i].dflt);
}

void srv_conf_free(struct srv_conf *c)
{
    for (size_t i = 0; i < c->nusers; i++) {
        for (size_t j = 0; j < c->nuser_words[i]; j++)
            free(c->users[i][j]);
        free(c->users[i]);
    }
    free(c->users);
    free(c->nuser_words);
    c->users = NULL;
    c->nuser_words = NULL;
    c->nusers = 0;
    for (int i = 0; i < c->nbind; i++)
        free(c->bind[i]);
    free(c->unixsocket);
    free(c->dir);
    free(c->requirepass);
    free(c->logfile);
    free(c->pidfile);
    free(c->dbfilename);
    free(c->journal_shm_dir);
    for (size_t i = 0; c->inert && i < NINERT; i++)
        free(c->inert[i]);
    free(c->inert);
    free(c->inert_named);
    memset(c, 0, sizeof *c);
}

/* The directive that gates CONFIG SET of the protected ones. */
#define PROTECT_SWITCH "enable-protected-configs"

/* The directives by name, hashed without case, built at the first look-up
 * (srv_conf_defaults, before any thread): writes look one up on every
 * command (min-replicas-to-write), and a walk of every name with strlen
 * was 17% of the event loop's time under HSET at pipeline 16. */
#define FIND_SLOTS 2048u
static uint16_t find_tab[FIND_SLOTS]; /* param_at index + 1; 0: empty */

static uint32_t name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint32_t)(tolower((unsigned char)s[i]))) * 16777619u;
    return h;
}

static void find_build(void)
{
    _Static_assert(NPARAMS < FIND_SLOTS / 2, "the directive table is too small");
    static bool built;
    if (built)
        return;
    built = true;
    for (size_t i = 0; i < NPARAMS; i++) {
        const char *pn = param_at(i)->name;
        size_t len = strlen(pn);
        uint32_t h = name_hash(pn, len) & (FIND_SLOTS - 1);
        bool dup = false;
        for (; find_tab[h]; h = (h + 1) & (FIND_SLOTS - 1)) {
            const char *o = param_at(find_tab[h] - 1u)->name;
            dup = dup || (strlen(o) == len && strncasecmp(o, pn, len) == 0);
        }
        if (!dup) /* the first of a name wins, as a walk in order had it */
            find_tab[h] = (uint16_t)(i + 1);
    }
}

static const struct param *find(const char *name, size_t n)
{
    find_build();
    for (uint32_t h = name_hash(name, n) & (FIND_SLOTS - 1); find_tab[h];
         h = (h + 1) & (FIND_SLOTS - 1)) {
        const struct param *p = param_at(find_tab[h] - 1u);
        if (strlen(p->name) == n && strncasecmp(p->name, name, n) == 0)
            return p;
    }
    return NULL;
}

/* p's place in param_at's order. */
static size_t param_index(const struct param *p)
{
    return p >= params && p < params + NAPPLIED ? (size_t)(p - params)
                                                : NAPPLIED + (size_t)(p - inert_params);
}

/* The directive an alias names (itself for any other). */
static const struct param *canonical(const struct param *p)
{
    return p->alias ? find(p->alias, strlen(p->alias)) : p;
}

/* Where a kept Redis directive's value lives in c->inert. */
static char **inert_value(const struct srv_conf *c, const struct param *p)
{
    return &c->inert[canonical(p) - inert_params];
}

const char *srv_conf_kept(const struct srv_conf *c, const char *name)
{
    const struct param *p = find(name, strlen(name));
    if (!p || !(p >= inert_params && p < inert_params + NINERT))
        return NULL;
    return *inert_value(c, p);
}

void srv_conf_set_replicaof(struct srv_conf *c, const char *host, int port)
{
    char **slot = inert_value(c, find("replicaof", 9));
    char v[512] = "";
    if (host)
        snprintf(v, sizeof v, "%s %d", host, port);
    free(*slot);
    *slot = xstrdup(v);
}

int64_t srv_conf_kept_num(const struct srv_conf *c, const char *name)
{
    const char *v = srv_conf_kept(c, name);
    if (!v)
        return 0;
    if (!strcmp(v, "yes"))
        return 1;
    return strtoll(v, NULL, 10); /* "no" and "" are 0 */
}

/* Redis's memory units: k/m/g are powers of 1000, kb/mb/gb of 1024. */
static bool parse_mem(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno)
        return false;
    int64_t mul = 1;
    if (!strcasecmp(end, "k"))
        mul = 1000;
    else if (!strcasecmp(end, "kb"))
        mul = 1024;
    else if (!strcasecmp(end, "m"))
        mul = 1000 * 1000;
    else if (!strcasecmp(end, "mb"))
        mul = 1024 * 1024;
    else if (!strcasecmp(end, "g"))
        mul = 1000ll * 1000 * 1000;
    else if (!strcasecmp(end, "gb"))
        mul = 1024ll * 1024 * 1024;
    else if (*end)
        return false;
    if (v > INT64_MAX / mul || v < INT64_MIN / mul)
        return false;
    *out = v * mul;
    return true;
}

/* The notify-keyspace-events classes, in the order CONFIG GET lists them
 * (A stands for the first ten; as in Redis 7.0, n is not listed with A). */
static const char NOTIFY_CHARS[] = "g$lshzxetdn";

/* notify-keyspace-events: each character a class, as Redis reads it; 0 or
 * -1 with *err. Redis's m (a read missed) is refused rather than accepted
 * and never sent. */
static int notify_parse(const char *v, int *flags, const char **err)
{
    int f = 0;
    for (; *v; v++) {
        const char *k = strchr(NOTIFY_CHARS, *v);
        if (k)
            f |= SRV_NOTIFY_GENERIC << (k - NOTIFY_CHARS);
        else if (*v == 'A')
            f |= SRV_NOTIFY_ALL;
        else if (*v == 'K')
            f |= SRV_NOTIFY_KEYSPACE;
        else if (*v == 'E')
            f |= SRV_NOTIFY_KEYEVENT;
        else if (*v == 'm') {
            *err = "shmkv does not send key-miss (m) events";
            return -1;
        } else {
            *err = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
            return -1;
        }
    }
    *flags = f;
    return 0;
}

/* ---- the Redis directives kept without being applied ---- */

/* The arguments as words: a file line's or a command line's arguments are
 * words already, CONFIG SET's one value is split at spaces. At most cap;
 * -1 past it. The words point into buf (of bufcap bytes). */
static int words(const char **argv, int argc, char *buf, size_t bufcap, const char **w, int cap)
{
    size_t used = 0;
    int n = 0;
    for (int i = 0; i < argc; i++) {
        size_t len = strlen(argv[i]);
        if (used + len + 1 > bufcap)
            return -1;
        char *s = buf + used;
        memcpy(s, argv[i], len + 1);
        used += len + 1;
        for (char *tok = strtok(s, " "); tok; tok = strtok(NULL, " ")) {
            if (n == cap)
                return -1;
            w[n++] = tok;
        }
    }
    return n;
}

static bool int_word(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    int64_t v;
    if (kv_str2ll(s, strlen(s), &v) || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* client-output-buffer-limit: updates the classes words name in cur (the
 * three of them, as CONFIG GET shows them) into out. */
static int cobl_apply(const char *cur, const char **w, int n, char *out, size_t cap,
                      const char **err)
{
    static const char *const classes[] = {"normal", "slave", "pubsub"};
    long long v[3][3] = {{0}};
    if (sscanf(cur, "normal %lld %lld %lld slave %lld %lld %lld pubsub %lld %lld %lld", &v[0][0],
               &v[0][1], &v[0][2], &v[1][0], &v[1][1], &v[1][2], &v[2][0], &v[2][1],
               &v[2][2]) != 9) {
        *err = "corrupt client-output-buffer-limit";
        return -1;
    }
    if (n % 4) { /* none at all changes nothing, as in Redis */
        *err = "Wrong number of arguments in buffer limit configuration.";
        return -1;
    }
    for (int i = 0; i < n; i += 4) {
        int k = !strcasecmp(w[i], "normal")                                  ? 0
                : !strcasecmp(w[i], "replica") || !strcasecmp(w[i], "slave") ? 1
                : !strcasecmp(w[i], "pubsub")                                ? 2
                                                                             : -1;
        if (k < 0) {
            *err = "Invalid client class specified in buffer limit configuration.";
            return -1;
        }
        int64_t hard, soft, secs;
        if (!parse_mem(w[i + 1], &hard) || !parse_mem(w[i + 2], &soft) ||
            !int_word(w[i + 3], 0, INT64_MAX, &secs) || hard < 0 || soft < 0) {
            *err = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
            return -1;
        }
        v[k][0] = hard;
        v[k][1] = soft;
        v[k][2] = secs;
    }
    size_t used = 0;
    for (int k = 0; k < 3; k++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s %lld %lld %lld", k ? " " : "",
                                 classes[k], v[k][0], v[k][1], v[k][2]);
    return 0;
}

/* proc-title-template as Redis checks it: {{ and }} stand for braces, {name}
 * for a known variable, and what the template gives with an empty title
 * must hold more than spaces. */
static bool title_ok(const struct srv_conf *c, const char *t)
{
    static const char *const vars[] = {"title",    "listen-addr", "server-mode", "port",
                                       "tls-port", "unixsocket",  "config-file", NULL};
    bool text = false;
    for (const char *q = t; *q; q++) {
        if ((q[0] == '{' && q[1] == '{') || (q[0] == '}' && q[1] == '}')) {
            text = true;
            q++;
        } else if (*q == '{') {
            const char *end = strchr(q, '}');
            if (!end)
                return false;
            size_t n = (size_t)(end - q - 1);
            int i = 0;
            while (vars[i] && (strlen(vars[i]) != n || strncmp(vars[i], q + 1, n)))
                i++;
            if (!vars[i])
                return false;
            /* What each gives here: the title and the server mode nothing
             * (a standalone server); the socket and file what is set. */
            text |= i == 1 || i == 3 || i == 4 || (i == 5 && c->unixsocket) ||
                    (i == 6 && srv_conf_file);
            q = end;
        } else if (*q != ' ') {
            text = true;
        }
    }
    return text;
}

/* Redis's error for a value that is none of an enum's names. */
static const char *enum_err(const struct param *p)
{
    static _Thread_local char msg[256];
    size_t used = (size_t)snprintf(msg, sizeof msg, "argument(s) must be one of the following: ");
    for (int j = 0; p->names[j] && used < sizeof msg; j++)
        used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s", j ? ", " : "", p->names[j]);
    return msg;
}

/* A kept Redis directive's new value, validated as redis-server 7.0
 * validates it, in the form CONFIG GET shows; replaces *slot. more: a
 * later save line of a file, which adds its pairs to the earlier ones. */
static int apply_inert(struct srv_conf *c, const struct param *p, const char **argv, int argc,
                       bool more, const char **err)
{
    char **slot = inert_value(c, p);
    char buf[2048], out[2048];
    const char *w[64];
    out[0] = '\0';
    if (p->type == P_SAVE || p->type == P_COBL || p->type == P_OOMV || p->type == P_REPLICAOF) {
        int n = words(argv, argc, buf, sizeof buf, w, 64);
        if (n < 0) {
            *err = "too many arguments";
            return -1;
        }
        if (p->type == P_SAVE) {
            size_t used = more && **slot ? (size_t)snprintf(out, sizeof out, "%s", *slot) : 0;
            if (n % 2) {
                *err = "Invalid save parameters";
                return -1;
            }
            for (int i = 0; i < n; i++) {
                int64_t x;
                if (!int_word(w[i], 0, INT64_MAX, &x)) {
                    *err = "Invalid save parameters";
                    return -1;
                }
                used += (size_t)snprintf(out + used, sizeof out - used, "%s%lld", used ? " " : "",
                                         (long long)x);
            }
        } else if (p->type == P_COBL) {
            if (cobl_apply(*slot, w, n, out, sizeof out, err))
                return -1;
        } else if (p->type == P_OOMV) {
            int64_t x[3];
            if (n != 3) {
                *err = "wrong number of arguments";
                return -1;
            }
            for (int i = 0; i < 3; i++)
                if (!int_word(w[i], -2000, 2000, &x[i])) {
                    *err = "Invalid oom-score-adj-values, elements must be between -2000 and 2000.";
                    return -1;
                }
            snprintf(out, sizeof out, "%lld %lld %lld", (long long)x[0], (long long)x[1],
                     (long long)x[2]);
        } else { /* P_REPLICAOF */
            int64_t port;
            if (n == 2 && !strcasecmp(w[0], "no") && !strcasecmp(w[1], "one"))
                out[0] = '\0';
            else if (n == 2 && int_word(w[1], 0, 65535, &port))
                snprintf(out, sizeof out, "%s %lld", w[0], (long long)port);
            else {
                *err = "wrong number of arguments";
                return -1;
            }
        }
    } else if (argc != 1) {
        *err = "wrong number of arguments";
        return -1;
    } else {
        const char *v = argv[0];
        int64_t x;
        switch (p->type) {
        case P_BOOL:
            if (strcasecmp(v, "yes") && strcasecmp(v, "no")) {
                *err = "argument must be 'yes' or 'no'";
                return -1;
            }
            snprintf(out, sizeof out, "%s", strcasecmp(v, "yes") ? "no" : "yes");
            break;
        case P_INT:
        case P_MEM:
        case P_MEMPCT:
            if (p->type == P_MEMPCT && *v && v[strlen(v) - 1] == '%') {
                if (!int_word(strndupa(v, strlen(v) - 1), 0, INT32_MAX, &x)) {
                    *err = "argument must be a memory or percent value";
                    return -1;
                }
                snprintf(out, sizeof out, "%lld%%", (long long)x);
                break;
            }
            /* Redis reads an empty memory value as 0. */
            bool bad = p->type == P_INT ? kv_str2ll(v, strlen(v), &x) != 0
                       : *v             ? !parse_mem(v, &x) || x < 0
                                        : (x = 0, false);
            if (bad) {
                *err = p->type == P_INT      ? "argument couldn't be parsed into an integer"
                       : p->type == P_MEMPCT ? "argument must be a memory or percent value"
                                             : "argument must be a memory value";
                return -1;
            }
            if (p->type != P_MEMPCT && (x < p->min || x > p->max)) {
                static _Thread_local char msg[96];
                snprintf(msg, sizeof msg, "argument must be between %lld and %lld inclusive",
                         (long long)p->min, (long long)p->max);
                *err = msg;
                return -1;
            }
            if (!strcmp(p->name, "repl-backlog-size") && x < 16384)
                x = 16384; /* Redis raises a smaller backlog to its least */
            snprintf(out, sizeof out, "%lld", (long long)x);
            break;
        case P_ENUM: {
            int i = 0;
            while (p->names[i] && strcasecmp(v, p->names[i]))
                i++;
            if (!p->names[i]) {
                *err = enum_err(p);
                return -1;
            }
            snprintf(out, sizeof out, "%s", p->names[i]);
            break;
        }
        case P_HOST:
            for (const char *q = v; *q; q++)
                if (!(isalnum((unsigned char)*q) || *q == '-' || *q == '.')) {
                    *err = "Hostnames may only contain alphanumeric characters, hyphens or dots";
                    return -1;
                }
            snprintf(out, sizeof out, "%s", v);
            break;
        case P_TITLE:
            if (!title_ok(c, v)) {
                *err = "template format is invalid or contains unknown variables";
                return -1;
            }
            snprintf(out, sizeof out, "%s", v);
            break;
        default: /* P_STR */
            if (strlen(v) >= sizeof out) {
                *err = "argument is too long";
                return -1;
            }
            snprintf(out, sizeof out, "%s", v);
            break;
        }
    }
    free(*slot);
    *slot = xstrdup(out);
    return 0;
}

/* Applies one value; 0 or -1 with *err. more: see apply_inert. */
static int apply(struct srv_conf *c, const struct param *p, const char **argv, int argc, bool more,
                 const char **err)
{
    if (p->dflt)
        return apply_inert(c, p, argv, argc, more, err);
    char *base = (char *)c;
    if (p->type == P_BIND) {
        if (argc < 1 || argc > SRV_MAX_BIND) {
            *err = "wrong number of arguments";
            return -1;
        }
        for (int i = 0; i < c->nbind; i++)
            free(c->bind[i]);
        for (int i = 0; i < argc; i++)
            c->bind[i] = xstrdup(argv[i]);
        c->nbind = argc;
        return 0;
    }
    if (p->type == P_PCTS) {
        /* Several arguments in a file; one, split at spaces, from CONFIG
         * SET. Each a percentile, 0 to 100; none at all is allowed. */
        double v[16];
        int n = 0;
        for (int i = 0; i < argc; i++) {
            for (const char *q = argv[i]; *q;) {
                while (*q == ' ')
                    q++;
                if (!*q)
                    break;
                char *end;
                double x = strtod(q, &end);
                if (end == q || (*end && *end != ' ') || n == 16) {
                    *err = "Invalid latency-tracking-info-percentiles parameters";
                    return -1;
                }
                if (!(x >= 0 && x <= 100)) {
                    *err = "latency-tracking-info-percentiles parameters should sit between "
                           "[0.0,100.0]";
                    return -1;
                }
                v[n++] = x;
                q = end;
            }
        }
        memcpy(c->latency_pcts, v, (size_t)n * sizeof v[0]);
        c->latency_npcts = n;
        return 0;
    }
    if (argc != 1) {
        *err = "wrong number of arguments";
        return -1;
    }
    const char *v = argv[0];
    switch (p->type) {
    case P_NOTIFY:
        return notify_parse(v, &c->notify_keyspace_events, err);
    case P_INT:
    case P_I64:
    case P_MEM: {
        int64_t x;
        /* As Redis reads them: a memory value takes units and reads an
         * empty string as 0; an integer is only digits. */
        if (p->type == P_MEM) {
            if (*v ? !parse_mem(v, &x) || x < 0 : (x = 0, false)) {
                *err = "argument must be a memory value";
                return -1;
            }
        } else if (kv_str2ll(v, strlen(v), &x) != 0) {
            *err = "argument couldn't be parsed into an integer";
            return -1;
        }
        if (x < p->min || x > p->max) {
            static _Thread_local char msg[96];
            snprintf(msg, sizeof msg, "argument must be between %lld and %lld inclusive",
                     (long long)p->min, (long long)p->max);
            *err = msg;
            return -1;
        }
        if (p->type == P_INT)
            *(int *)(base + p->off) = (int)x;
        else
            *(int64_t *)(base + p->off) = x;
        return 0;
    }
    case P_OCTAL: {
        char *end;
        long x = strtol(v, &end, 8);
        if (*end || end == v || x < 0 || x > p->max) {
            *err = "argument couldn't be parsed as octal permissions";
            return -1;
        }
        *(int *)(base + p->off) = (int)x;
        return 0;
    }
    case P_STR:
        set_str((char **)(base + p->off), v);
        return 0;
    case P_BOOL:
        if (!strcasecmp(v, "yes") || !strcasecmp(v, "no")) {
            *(int *)(base + p->off) = !strcasecmp(v, "yes");
            return 0;
        }
        *err = "argument must be 'yes' or 'no'";
        return -1;
    case P_ENUM:
        for (int i = 0; p->names[i]; i++) {
            if (!strcasecmp(v, p->names[i])) {
                *(int *)(base + p->off) = i;
                return 0;
            }
        }
        *err = enum_err(p);
        return -1;
    default:
        *err = "unsupported parameter type";
        return -1;
    }
}

int srv_conf_set(struct srv_conf *c, const char *name, const char **argv, int argc,
                 const char **err)
{
    if (!strcasecmp(name, "user")) {
        /* An ACL user (acl.h), made at start-up in the order given. */
        if (argc < 1) {
            *err = "Bad directive or wrong number of arguments";
            return -1;
        }
        c->users = kv_xrealloc(c->users, (c->nusers + 1) * sizeof *c->users);
        c->nuser_words = kv_xrealloc(c->nuser_words, (c->nusers + 1) * sizeof *c->nuser_words);
        c->users[c->nusers] = kv_xmalloc((size_t)argc * sizeof **c->users);
        for (int i = 0; i < argc; i++)
            c->users[c->nusers][i] = strdup(argv[i]);
        c->nuser_words[c->nusers++] = (size_t)argc;
        return 0;
    }
    const struct param *p = find(name, strlen(name));
    if (!p) {
        *err = "Bad directive or wrong number of arguments";
        return -1;
    }
    /* save lines add up, the first replacing the default (save "" empties). */
    bool more = p->type == P_SAVE && c->save_loaded;
    int rc = apply(c, p, argv, argc, more, err);
    if (rc == 0 && p->type == P_SAVE)
        c->save_loaded = true;
    if (rc == 0 && p->dflt)
        c->inert_named[canonical(p) - inert_params] = true;
    return rc;
}

int srv_conf_load(struct srv_conf *c, const char *path, char *errbuf, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(errbuf, errlen, "Fatal error, can't open config file '%s': %s", path,
                 strerror(errno));
        return -1;
    }
    struct resp_req r;
    resp_req_init(&r);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, rc = 0;
    while ((n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        size_t lead = strspn(line, " \t");
        if (line[lead] == '#' || line[lead] == '\0')
            continue;
        const char *err = "unbalanced quotes";
        if (resp_split(&r, line, (size_t)n) == 0 && r.argc > 0) {
            const char **argv = kv_xmalloc(r.argc * sizeof *argv);
            char **owned = kv_xmalloc(r.argc * sizeof *owned);
            int argc = 0;
            for (size_t i = 0; i < r.argc; i++) {
                size_t an;
                const char *a = resp_req_arg(&r, NULL, i, &an);
                owned[i] = kv_xmalloc(an + 1);
                memcpy(owned[i], a, an);
                owned[i][an] = '\0';
                argc++;
            }
            for (int i = 1; i < argc; i++)
                argv[i - 1] = owned[i];
            /* Only a user line may be longer than bind's. */
            bool many = argc > SRV_MAX_BIND + 1 && strcasecmp(owned[0], "user");
            int ok = many ? -1 : srv_conf_set(c, owned[0], argv, argc - 1, &err);
            if (many)
                err = "too many arguments";
            for (int i = 0; i < argc; i++)
                free(owned[i]);
            free(owned);
            free(argv);
            if (ok == 0)
                continue;
        }
        snprintf(errbuf, errlen, "*** FATAL CONFIG FILE ERROR ***\nline %d: '%s'\n%s", lineno, line,
                 err);
        rc = -1;
        break;
    }
    free(line);
    resp_req_free(&r);
    fclose(f);
    return rc;
}

/* The value of p as CONFIG GET shows it. */
static void format(const struct srv_conf *c, const struct param *p, char *out, size_t cap)
{
    const char *base = (const char *)c;
    if (p->dflt) {
        snprintf(out, cap, "%s", *inert_value(c, p));
        return;
    }
    switch (p->type) {
    case P_INT:
        snprintf(out, cap, "%d", *(const int *)(base + p->off));
        break;
    case P_MEM:
    case P_I64:
        snprintf(out, cap, "%lld", (long long)*(const int64_t *)(base + p->off));
        break;
    case P_OCTAL:
        snprintf(out, cap, "%o", *(const int *)(base + p->off));
        break;
    case P_STR: {
        const char *s = *(char *const *)(base + p->off);
        snprintf(out, cap, "%s", s ? s : "");
        break;
    }
    case P_BOOL:
        snprintf(out, cap, "%s", *(const int *)(base + p->off) ? "yes" : "no");
        break;
    case P_ENUM:
        snprintf(out, cap, "%s", p->names[*(const int *)(base + p->off)]);
        break;
    case P_BIND: {
        size_t used = 0;
        out[0] = '\0';
        for (int i = 0; i < c->nbind && used < cap; i++)
            used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? " " : "", c->bind[i]);
        break;
    }
    case P_NOTIFY: {
        int f = c->notify_keyspace_events;
        size_t n = 0;
        if ((f & SRV_NOTIFY_ALL) == SRV_NOTIFY_ALL)
            out[n++] = 'A';
        for (int i = 0; NOTIFY_CHARS[i] && (f & SRV_NOTIFY_ALL) != SRV_NOTIFY_ALL; i++)
            if (f & (SRV_NOTIFY_GENERIC << i))
                out[n++] = NOTIFY_CHARS[i];
        if (f & SRV_NOTIFY_KEYSPACE)
            out[n++] = 'K';
        if (f & SRV_NOTIFY_KEYEVENT)
            out[n++] = 'E';
        out[n] = '\0';
        break;
    }
    case P_PCTS: {
        size_t used = 0;
        out[0] = '\0';
        for (int i = 0; i < c->latency_npcts && used < cap; i++)
            used +=
                (size_t)snprintf(out + used, cap - used, "%s%g", i ? " " : "", c->latency_pcts[i]);
        break;
    }
    default: /* the kept Redis directives' types, answered above */
        out[0] = '\0';
        break;
    }
}

size_t srv_conf_get(const struct srv_conf *c, const struct db_str *pats, size_t npats,
                    struct resp_buf *out, int proto)
{
    (void)proto;
    size_t n = 0;
    for (size_t i = 0; i < NPARAMS; i++) {
        const struct param *p = param_at(i);
        bool match = false;
        for (size_t j = 0; j < npats && !match; j++)
            match = db_glob_match(pats[j].p, pats[j].n, p->name, strlen(p->name), 1);
        if (!match)
            continue;
        char v[1024];
        format(c, p, v, sizeof v);
        resp_bulk_cstr(out, p->name);
        resp_bulk_cstr(out, v);
        n++;
    }
    return n;
}

/* Applies one value given as bytes; 0, or -1 with *why. */
static int apply_bytes(struct srv_conf *c, const struct param *p, const char *v, size_t n,
                       const char **why)
{
    char *z = kv_xmalloc(n + 1);
    memcpy(z, v, n);
    z[n] = '\0';
    const char *argv[1] = {z};
    int rc = apply(c, p, argv, 1, false, why);
    free(z);
    return rc;
}

/* Each kept Redis directive CONFIG SET changed, so that the log names it
 * once as having no effect. */
static bool said_inert[NINERT];

int srv_conf_runtime_set(struct srv_conf *c, const struct db_str *args, size_t n, char *err,
                         size_t errlen)
{
    /* All or nothing, as Redis 7: every name is checked before any value
     * is applied, and a value that fails puts the earlier ones back. */
    const struct param **ps = kv_xmalloc((n / 2 + 1) * sizeof *ps);
    char(*old)[2048] = kv_xmalloc((n / 2 + 1) * sizeof *old);
    int rc = 0;
    size_t k = 0;
    for (size_t i = 0; i + 1 < n && rc == 0; i += 2, k++) {
        const struct param *p = ps[k] = find(args[i].p, args[i].n);
        if (!p) {
            snprintf(err, errlen,
                     "ERR Unknown option or number of arguments for CONFIG SET - '%.*s'",
                     (int)args[i].n, args[i].p);
            rc = -1;
        } else if (!p->runtime) {
            snprintf(err, errlen,
                     "ERR CONFIG SET failed (possibly related to argument '%s') - can't set "
                     "immutable config",
                     p->name);
            rc = -1;
        } else if (p->protect &&
                   !strcmp(*inert_value(c, find(PROTECT_SWITCH, strlen(PROTECT_SWITCH))), "no")) {
            snprintf(err, errlen,
                     "ERR CONFIG SET failed (possibly related to argument '%s') - can't set "
                     "protected config",
                     p->name);
            rc = -1;
        }
        for (size_t j = 0; j < k && rc == 0; j++) {
            if (canonical(ps[j]) == canonical(p)) {
                snprintf(err, errlen,
                         "ERR CONFIG SET failed (possibly related to argument '%s') - duplicate "
                         "parameter",
                         p->name);
                rc = -1;
            }
        }
    }
    size_t done = 0;
    for (; rc == 0 && done < k; done++) {
        const char *why;
        format(c, ps[done], old[done], sizeof old[done]);
        if (apply_bytes(c, ps[done], args[2 * done + 1].p, args[2 * done + 1].n, &why)) {
            snprintf(err, errlen, "ERR CONFIG SET failed (possibly related to argument '%s') - %s",
                     ps[done]->name, why);
            rc = -1;
            break;
        }
        int most;
        if (!strcmp(ps[done]->name, "maxclients") && !srv_os_maxclients_fit(c->maxclients, &most)) {
            snprintf(err, errlen,
                     "ERR CONFIG SET failed (possibly related to argument 'maxclients') - The "
                     "operating system is not able to handle the specified number of clients, "
                     "try with %d",
                     most);
            done++; /* it is applied: put back with the rest */
            rc = -1;
            break;
        }
    }
    if (rc) {
        while (done-- > 0) { /* back to what they were, newest first */
            const char *why;
            apply_bytes(c, ps[done], old[done], strlen(old[done]), &why);
        }
    } else {
        for (size_t j = 0; j < k; j++) {
            const struct param *q = ps[j]->dflt ? canonical(ps[j]) : NULL;
            if (q && !q->used && !said_inert[q - inert_params]) {
                said_inert[q - inert_params] = true;
                srv_log(LOG_NOTICE, "CONFIG SET %s: kept, with no effect in shmkvd", ps[j]->name);
            }
        }
        srv_conf_changed();
    }
    free(ps);
    free(old);
    return rc;
}

void srv_conf_report_inert(const struct srv_conf *c)
{
    char names[4096];
    size_t used = 0;
    for (size_t i = 0; i < NINERT; i++) {
        const struct param *p = &inert_params[i];
        if (!c->inert_named[i] || p->used)
            continue;
        said_inert[i] = true;
        used += (size_t)snprintf(names + used, used < sizeof names ? sizeof names - used : 0,
                                 "%s%s", used ? ", " : "", p->name);
    }
    if (used)
        srv_log(LOG_NOTICE, "Redis directives accepted and kept, with no effect in shmkvd: %.*s",
                (int)sizeof names, names);
}

/* ---- CONFIG REWRITE ---- */

/* Appends v to b as one config-file argument: bare when it is a plain
 * word, else double-quoted with the escapes resp_split() reads back. */
static void put_arg(struct resp_buf *b, const char *v)
{
    bool bare = *v != '\0';
    for (const char *q = v; *q && bare; q++)
        bare = *q > ' ' && *q < 0x7f && *q != '"' && *q != '\'' && *q != '\\';
    if (bare) {
        resp_buf_append(b, v, strlen(v));
        return;
    }
    resp_buf_append(b, "\"", 1);
    for (const unsigned char *q = (const unsigned char *)v; *q; q++) {
        char esc[8];
        if (*q == '"' || *q == '\\')
            snprintf(esc, sizeof esc, "\\%c", *q);
        else if (*q < ' ' || *q >= 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", *q);
        else
            snprintf(esc, sizeof esc, "%c", *q);
        resp_buf_append(b, esc, strlen(esc));
    }
    resp_buf_append(b, "\"", 1);
}

/* "name value..." for p, as the file should say it now: one line, or
 * one line per client class, or none for replicaof no one. */
static void put_param(struct resp_buf *b, const struct srv_conf *c, const struct param *p)
{
    if (p->type == P_COBL || p->type == P_SAVE || p->type == P_OOMV || p->type == P_REPLICAOF) {
        char v[2048];
        format(c, p, v, sizeof v);
        if (p->type == P_REPLICAOF && !*v)
            return;
        const char *w[64];
        char buf[2048];
        const char *vp = v;
        int n = words(&vp, 1, buf, sizeof buf, w, 64);
        int per = p->type == P_COBL ? 4 : n > 0 ? n : 1;
        for (int i = 0; i == 0 || i < n; i += per) {
            resp_buf_append(b, p->name, strlen(p->name));
            if (n <= 0)
                resp_buf_append(b, " \"\"", 3); /* save "": no snapshots */
            for (int j = i; j < i + per && j < n; j++) {
                resp_buf_append(b, " ", 1);
                put_arg(b, w[j]);
            }
            resp_buf_append(b, "\n", 1);
        }
        return;
    }
    resp_buf_append(b, p->name, strlen(p->name));
    if (p->type == P_BIND) {
        for (int i = 0; i < c->nbind; i++) {
            resp_buf_append(b, " ", 1);
            put_arg(b, c->bind[i]);
        }
    } else {
        char v[1024];
        format(c, p, v, sizeof v);
        resp_buf_append(b, " ", 1);
        put_arg(b, v);
    }
    resp_buf_append(b, "\n", 1);
}

int srv_conf_rewrite(const struct srv_conf *c, char *const *users, size_t nusers, char *err,
                     size_t errlen)
{
    if (!srv_conf_file) {
        snprintf(err, errlen, "ERR The server is running without a config file");
        return -1;
    }
    FILE *f = fopen(srv_conf_file, "r");
    if (!f && errno != ENOENT) {
        snprintf(err, errlen, "ERR Rewriting config file: %s", strerror(errno));
        return -1;
    }
    bool seen[NPARAMS] = {false}, users_done = false;
    struct resp_buf out;
    resp_buf_init(&out);
    struct resp_req r;
    resp_req_init(&r);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while (f && (n = getline(&line, &cap, f)) >= 0) {
        size_t len = (size_t)n;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        const struct param *p = NULL;
        bool user = false;
        size_t lead = strspn(line, " \t");
        if (lead < len && line[lead] != '#' && resp_split(&r, line, len) == 0 && r.argc > 0) {
            size_t an;
            const char *a = resp_req_arg(&r, NULL, 0, &an);
            p = find(a, an);
            user = an == 4 && !strncasecmp(a, "user", 4);
        }
        if (user) {
            for (size_t i = 0; i < nusers && !users_done; i++) {
                resp_buf_append(&out, users[i], strlen(users[i]));
                resp_buf_append(&out, "\n", 1);
            }
            users_done = true; /* later user lines go */
        } else if (!p) {
            resp_buf_append(&out, line, len);
            resp_buf_append(&out, "\n", 1);
        } else if (!seen[param_index(canonical(p))]) { /* an alias's line: its directive's */
            seen[param_index(canonical(p))] = true;
            put_param(&out, c, canonical(p));
        } /* a later line of the same parameter goes */
    }
    free(line);
    resp_req_free(&r);
    if (f)
        fclose(f);
    struct srv_conf dflt;
    srv_conf_init(&dflt);
    bool header = false;
    for (size_t i = 0; i < NPARAMS; i++) {
        const struct param *p = param_at(i);
        if (seen[i] || p->alias)
            continue;
        char now[2048], was[2048];
        format(c, p, now, sizeof now);
        format(&dflt, p, was, sizeof was);
        if (!strcmp(now, was))
            continue;
        if (!header) {
            static const char h[] = "# Generated by CONFIG REWRITE\n";
            resp_buf_append(&out, h, sizeof h - 1);
            header = true;
        }
        put_param(&out, c, p);
    }
    for (size_t i = 0; i < nusers && !users_done; i++) {
        if (!header) {
            static const char h[] = "# Generated by CONFIG REWRITE\n";
            resp_buf_append(&out, h, sizeof h - 1);
            header = true;
        }
        resp_buf_append(&out, users[i], strlen(users[i]));
        resp_buf_append(&out, "\n", 1);
    }
    srv_conf_free(&dflt);
    /* A temporary file beside the original, synced, renamed over it: a
     * crash leaves the old file or the new one, never half of one. */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.rewrite.%d", srv_conf_file, (int)getpid());
    int rc = -1;
    /* The new file keeps the old one's mode: it may hold requirepass. */
    struct stat st;
    mode_t mode = stat(srv_conf_file, &st) == 0 ? st.st_mode & 07777 : 0644;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    FILE *w = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && !w)
        close(fd);
    if (w && fchmod(fileno(w), mode) == 0 &&
        fwrite(resp_buf_data(&out), 1, resp_buf_used(&out), w) == resp_buf_used(&out) &&
        fflush(w) == 0 && fsync(fileno(w)) == 0) {
        if (fclose(w) == 0 && rename(tmp, srv_conf_file) == 0)
            rc = 0;
        w = NULL;
    }
    if (rc) {
        snprintf(err, errlen, "ERR Rewriting config file: %s", strerror(errno));
        if (w)
            fclose(w);
        unlink(tmp);
    }
    resp_buf_free(&out);
    return rc;
}
