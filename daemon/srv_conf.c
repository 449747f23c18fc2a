/*
 * srv_conf — the configuration table. See srv_conf.h.
 */
#include "srv_conf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kv_mem.h"

const char *srv_conf_file;

enum ptype { P_INT, P_MEM, P_STR, P_BOOL, P_ENUM, P_OCTAL, P_BIND, P_CONST, P_PCTS, P_NOTIFY };

struct param {
    const char *name;
    enum ptype type;
    size_t off;               /* into struct srv_conf (int, int64_t or char *) */
    bool runtime;             /* CONFIG SET may change it */
    int64_t min, max;         /* P_INT / P_MEM bounds */
    const char *const *names; /* P_ENUM values, index = stored int */
    const char *constval;     /* P_CONST: what CONFIG GET reports */
};

static const char *const loglevels[] = {"debug", "verbose", "notice", "warning", NULL};
static const char *const codings[] = {"counted", "blind", NULL};
static const char *const fsyncs[] = {"no", "everysec", "always", NULL};

#define OFF(f) offsetof(struct srv_conf, f)
static const struct param params[] = {
    {"port", P_INT, OFF(port), false, 0, 65535, NULL, NULL},
    {"bind", P_BIND, 0, false, 0, 0, NULL, NULL},
    {"unixsocket", P_STR, OFF(unixsocket), false, 0, 0, NULL, NULL},
    {"unixsocketperm", P_OCTAL, OFF(unixsocketperm), false, 0, 0777, NULL, NULL},
    {"dir", P_STR, OFF(dir), false, 0, 0, NULL, NULL},
    {"requirepass", P_STR, OFF(requirepass), true, 0, 0, NULL, NULL},
    {"maxclients", P_INT, OFF(maxclients), true, 1, 1000000, NULL, NULL},
    {"timeout", P_INT, OFF(timeout), true, 0, INT32_MAX, NULL, NULL},
    {"proto-max-bulk-len", P_MEM, OFF(proto_max_bulk_len), true, 1024 * 1024, INT64_MAX, NULL,
     NULL},
    {"databases", P_INT, OFF(databases), false, 1, 256, NULL, NULL},
    {"loglevel", P_ENUM, OFF(loglevel), true, 0, 0, loglevels, NULL},
    {"logfile", P_STR, OFF(logfile), false, 0, 0, NULL, NULL},
    {"daemonize", P_BOOL, OFF(daemonize), false, 0, 1, NULL, NULL},
    {"pidfile", P_STR, OFF(pidfile), false, 0, 0, NULL, NULL},
    {"hz", P_INT, OFF(hz), true, 1, 500, NULL, NULL},
    {"block-cache-size", P_MEM, OFF(block_cache_bytes), false, 1024 * 1024, INT64_MAX, NULL, NULL},
    {"write-buffer-size", P_MEM, OFF(write_buffer_bytes), false, 1024 * 1024, INT64_MAX, NULL,
     NULL},
    {"compaction-io-limit", P_MEM, OFF(compaction_io_bytes), false, 0, INT64_MAX, NULL, NULL},
    {"hash-encoding", P_ENUM, OFF(hash_coding), true, 0, 0, codings, NULL},
    {"set-encoding", P_ENUM, OFF(set_coding), true, 0, 0, codings, NULL},
    {"appendfsync", P_ENUM, OFF(appendfsync), false, 0, 0, fsyncs, NULL},
    {"write-back", P_BOOL, OFF(writeback), false, 0, 1, NULL, NULL},
    {"flusher-batch-size", P_MEM, OFF(flush_batch_bytes), false, 4096, INT64_MAX, NULL, NULL},
    {"flusher-interval", P_INT, OFF(flush_interval_ms), false, 0, 10000, NULL, NULL},
    {"flusher-threads", P_INT, OFF(flusher_threads), false, 0, 64, NULL, NULL},
    {"io-threads", P_INT, OFF(io_threads), false, 1, 16, NULL, NULL},
    {"journal-shm-dir", P_STR, OFF(journal_shm_dir), false, 0, 0, NULL, NULL},
    {"overlay-max-memory", P_MEM, OFF(overlay_max_bytes), false, 1024 * 1024, INT64_MAX, NULL,
     NULL},
    {"min-free-disk", P_MEM, OFF(min_free_disk), true, 0, INT64_MAX, NULL, NULL},
    {"shm-cache-size", P_MEM, OFF(shm_cache_bytes), false, 0, INT64_MAX, NULL, NULL},
    {"shm-cache-huge-pages", P_BOOL, OFF(shm_huge_pages), false, 0, 1, NULL, NULL},
    {"shm-cache-max-record", P_MEM, OFF(shm_max_record), false, 64, INT64_MAX, NULL, NULL},
    {"slowlog-log-slower-than", P_MEM, OFF(slowlog_log_slower_than), true, -1, INT64_MAX, NULL,
     NULL},
    {"slowlog-max-len", P_INT, OFF(slowlog_max_len), true, 0, INT32_MAX, NULL, NULL},
    {"latency-tracking", P_BOOL, OFF(latency_tracking), true, 0, 1, NULL, NULL},
    {"latency-monitor-threshold", P_INT, OFF(latency_monitor_threshold), true, 0, INT32_MAX, NULL,
     NULL},
    {"latency-tracking-info-percentiles", P_PCTS, 0, true, 0, 0, NULL, NULL},
    {"notify-keyspace-events", P_NOTIFY, 0, true, 0, 0, NULL, NULL},
    {"tracking-table-max-keys", P_MEM, OFF(tracking_table_max_keys), true, 0, INT64_MAX, NULL,
     NULL},
    /* Redis parameters tools ask about: shmkv persists through RocksDB, not
     * RDB snapshots or an AOF. */
    {"save", P_CONST, 0, false, 0, 0, NULL, ""},
    {"appendonly", P_CONST, 0, false, 0, 0, NULL, "no"},
    {"maxmemory", P_CONST, 0, false, 0, 0, NULL, "0"},
    /* io-threads write replies only (srv_io.h): reads stay on the loop. */
    {"io-threads-do-reads", P_CONST, 0, false, 0, 0, NULL, "no"},
};
#define NPARAMS (sizeof params / sizeof params[0])

static char *xstrdup(const char *s)
{
    return kv_xmemdup(s, strlen(s) + 1);
}

static void set_str(char **slot, const char *v)
{
    free(*slot);
    *slot = v && *v ? xstrdup(v) : NULL;
}

void srv_conf_init(struct srv_conf *c)
{
    memset(c, 0, sizeof *c);
    c->port = 6380;
    c->bind[0] = xstrdup("127.0.0.1");
    c->bind[1] = xstrdup("-::1"); /* '-': skipped if IPv6 is not available */
    c->nbind = 2;
    c->unixsocketperm = 0700;
    c->dir = xstrdup("./data");
    c->maxclients = 10000;
    c->proto_max_bulk_len = 512ll << 20;
    c->databases = 16;
    c->loglevel = LOG_NOTICE;
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
}

void srv_conf_free(struct srv_conf *c)
{
    for (int i = 0; i < c->nbind; i++)
        free(c->bind[i]);
    free(c->unixsocket);
    free(c->dir);
    free(c->requirepass);
    free(c->logfile);
    free(c->pidfile);
    free(c->journal_shm_dir);
    memset(c, 0, sizeof *c);
}

static const struct param *find(const char *name, size_t n)
{
    for (size_t i = 0; i < NPARAMS; i++)
        if (strlen(params[i].name) == n && strncasecmp(params[i].name, name, n) == 0)
            return &params[i];
    return NULL;
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

/* Applies one value; 0 or -1 with *err. */
static int apply(struct srv_conf *c, const struct param *p, const char **argv, int argc,
                 const char **err)
{
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
    case P_MEM: {
        int64_t x;
        if (!parse_mem(v, &x) || (p->type == P_INT && strspn(v, "-0123456789") != strlen(v))) {
            *err = "argument couldn't be parsed into an integer";
            return -1;
        }
        if (x < p->min || x > p->max) {
            *err = "argument must be between the limits";
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
        *err = "argument(s) must be one of the following values";
        return -1;
    case P_CONST:
        if (!strcmp(v, p->constval))
            return 0;
        *err = "shmkv persists through RocksDB: this Redis parameter has one value";
        return -1;
    default:
        *err = "unsupported parameter type";
        return -1;
    }
}

int srv_conf_set(struct srv_conf *c, const char *name, const char **argv, int argc,
                 const char **err)
{
    const struct param *p = find(name, strlen(name));
    if (!p) {
        *err = "Bad directive or wrong number of arguments";
        return -1;
    }
    return apply(c, p, argv, argc, err);
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
            const char *argv[SRV_MAX_BIND + 1];
            char *owned[SRV_MAX_BIND + 2];
            int argc = 0;
            for (size_t i = 0; i < r.argc && i < SRV_MAX_BIND + 2; i++) {
                size_t an;
                const char *a = resp_req_arg(&r, NULL, i, &an);
                owned[i] = kv_xmalloc(an + 1);
                memcpy(owned[i], a, an);
                owned[i][an] = '\0';
                argc++;
            }
            for (int i = 1; i < argc && i <= SRV_MAX_BIND; i++)
                argv[i - 1] = owned[i];
            int ok = argc > SRV_MAX_BIND + 1 ? -1 : srv_conf_set(c, owned[0], argv, argc - 1, &err);
            if (argc > SRV_MAX_BIND + 1)
                err = "too many arguments";
            for (int i = 0; i < argc; i++)
                free(owned[i]);
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
    switch (p->type) {
    case P_INT:
        snprintf(out, cap, "%d", *(const int *)(base + p->off));
        break;
    case P_MEM:
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
    case P_CONST:
        snprintf(out, cap, "%s", p->constval);
        break;
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
    }
}

size_t srv_conf_get(const struct srv_conf *c, const struct db_str *pats, size_t npats,
                    struct resp_buf *out, int proto)
{
    (void)proto;
    size_t n = 0;
    for (size_t i = 0; i < NPARAMS; i++) {
        const struct param *p = &params[i];
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
    int rc = apply(c, p, argv, 1, why);
    free(z);
    return rc;
}

int srv_conf_runtime_set(struct srv_conf *c, const struct db_str *args, size_t n, char *err,
                         size_t errlen)
{
    /* All or nothing, as Redis 7: every name is checked before any value
     * is applied, and a value that fails puts the earlier ones back. */
    const struct param **ps = kv_xmalloc((n / 2 + 1) * sizeof *ps);
    char(*old)[1024] = kv_xmalloc((n / 2 + 1) * sizeof *old);
    int rc = 0;
    size_t k = 0;
    for (size_t i = 0; i + 1 < n && rc == 0; i += 2, k++) {
        const struct param *p = ps[k] = find(args[i].p, args[i].n);
        if (!p) {
            snprintf(err, errlen,
                     "ERR Unknown option or number of arguments for CONFIG SET - '%.*s'",
                     (int)args[i].n, args[i].p);
            rc = -1;
        } else if (!p->runtime && p->type != P_CONST) {
            snprintf(err, errlen,
                     "ERR CONFIG SET failed (possibly related to argument '%s') - can't set "
                     "immutable config",
                     p->name);
            rc = -1;
        }
        for (size_t j = 0; j < k && rc == 0; j++) {
            if (ps[j] == p) {
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
    }
    if (rc) {
        while (done-- > 0) { /* back to what they were, newest first */
            const char *why;
            apply_bytes(c, ps[done], old[done], strlen(old[done]), &why);
        }
    } else {
        srv_conf_changed();
    }
    free(ps);
    free(old);
    return rc;
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

/* "name value..." for p, as the file should say it now. */
static void put_param(struct resp_buf *b, const struct srv_conf *c, const struct param *p)
{
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

int srv_conf_rewrite(const struct srv_conf *c, char *err, size_t errlen)
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
    bool seen[NPARAMS] = {false};
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
        size_t lead = strspn(line, " \t");
        if (lead < len && line[lead] != '#' && resp_split(&r, line, len) == 0 && r.argc > 0) {
            size_t an;
            const char *a = resp_req_arg(&r, NULL, 0, &an);
            p = find(a, an);
        }
        if (!p || p->type == P_CONST) {
            resp_buf_append(&out, line, len);
            resp_buf_append(&out, "\n", 1);
        } else if (!seen[p - params]) {
            seen[p - params] = true;
            put_param(&out, c, p);
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
        const struct param *p = &params[i];
        if (seen[i] || p->type == P_CONST)
            continue;
        char now[1024], was[1024];
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
