/*
 * cmd_pubsub — publish/subscribe: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their
 * UNSUBSCRIBEs, PUBLISH, SPUBLISH and PUBSUB.
 *
 * Three registries map a name to its subscribers, in subscription order:
 * channels, patterns and shard channels (one shard here: they behave as a
 * namespace of their own). Each client lists what it subscribed to, in the
 * same order, for its counts and for leaving everything at once. PUBLISH
 * walks the channel's subscribers, then every pattern (as Redis does).
 * Nothing is stored: a message reaches whoever is subscribed now.
 */
#include "cmd.h"

#include <stdlib.h>

#include "kv_mem.h"

struct ps_chan {
    struct ps_chan *next; /* hash chain */
    struct conn **subs;
    size_t nsubs, cap;
    size_t n;
    char name[];
};

static struct ps_table {
    struct ps_chan **b;
    size_t mask, count;
} tabs[CMD_PS_KINDS];

static uint64_t name_hash(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static struct ps_chan **slot_of(struct ps_table *t, const char *p, size_t n)
{
    if (!t->b)
        return NULL;
    struct ps_chan **s = &t->b[name_hash(p, n) & t->mask];
    while (*s && !((*s)->n == n && memcmp((*s)->name, p, n) == 0))
        s = &(*s)->next;
    return s;
}

static struct ps_chan *find(int kind, const char *p, size_t n)
{
    struct ps_chan **s = slot_of(&tabs[kind], p, n);
    return s ? *s : NULL;
}

static void grow(struct ps_table *t)
{
    size_t cap = t->b ? (t->mask + 1) * 2 : 16;
    struct ps_chan **b = calloc(cap, sizeof *b);
    if (!b)
        kv_oom(cap * sizeof *b);
    for (size_t i = 0; t->b && i <= t->mask; i++) {
        for (struct ps_chan *e = t->b[i], *next; e; e = next) {
            next = e->next;
            size_t j = name_hash(e->name, e->n) & (cap - 1);
            e->next = b[j];
            b[j] = e;
        }
    }
    free(t->b);
    t->b = b;
    t->mask = cap - 1;
}

static struct ps_chan *find_or_add(int kind, const char *p, size_t n)
{
    struct ps_table *t = &tabs[kind];
    struct ps_chan *e = find(kind, p, n);
    if (e)
        return e;
    if (!t->b || t->count > t->mask)
        grow(t);
    e = kv_xmalloc(sizeof *e + n);
    memset(e, 0, sizeof *e);
    memcpy(e->name, p, n);
    e->n = n;
    struct ps_chan **head = &t->b[name_hash(p, n) & t->mask];
    e->next = *head;
    *head = e;
    t->count++;
    return e;
}

static void drop(int kind, struct ps_chan *e)
{
    struct ps_chan **s = slot_of(&tabs[kind], e->name, e->n);
    *s = e->next;
    tabs[kind].count--;
    free(e->subs);
    free(e);
}

/* ---- one client's subscriptions ---- */

static const char *const SUB_WORD[CMD_PS_KINDS] = {"subscribe", "psubscribe", "ssubscribe"};
static const char *const UNSUB_WORD[CMD_PS_KINDS] = {"unsubscribe", "punsubscribe", "sunsubscribe"};

/* What a (un)subscribe reply counts: channels and patterns together, or
 * shard channels alone. */
static size_t sub_count(const struct conn *c, int kind)
{
    return kind == CMD_PS_SHARD ? c->nsubs[CMD_PS_SHARD]
                                : c->nsubs[CMD_PS_CHANNEL] + c->nsubs[CMD_PS_PATTERN];
}

bool cmd_pubsub_all(const struct conn *c,
                    bool (*ok)(const char *p, size_t n, bool pattern, void *arg), void *arg)
{
    for (int k = 0; k < CMD_PS_KINDS; k++)
        for (size_t i = 0; i < c->nsubs[k]; i++)
            if (!ok(c->subs[k][i]->name, c->subs[k][i]->n, k == CMD_PS_PATTERN, arg))
                return false;
    return true;
}

size_t cmd_pubsub_subscriptions(const struct conn *c, int kind)
{
    return c->nsubs[kind];
}

bool cmd_pubsub_subscribed(const struct conn *c)
{
    return c->nsubs[0] + c->nsubs[1] + c->nsubs[2] > 0;
}

size_t cmd_pubsub_names(int kind)
{
    return tabs[kind].count;
}

/* [word, name or nil, count]: a push in RESP3. */
static void notice(struct conn *c, const char *word, const char *p, size_t n, int kind)
{
    resp_push(OUT(c), 3, c->proto);
    resp_bulk_cstr(OUT(c), word);
    if (p)
        resp_bulk(OUT(c), p, n);
    else
        resp_null(OUT(c), c->proto);
    resp_int(OUT(c), (int64_t)sub_count(c, kind));
}

static void subscribe(struct conn *c, int kind, const char *p, size_t n)
{
    struct ps_chan *e = find_or_add(kind, p, n);
    bool have = false;
    for (size_t i = 0; i < e->nsubs && !have; i++)
        have = e->subs[i] == c;
    if (!have) {
        if (e->nsubs == e->cap) {
            e->cap = e->cap ? e->cap * 2 : 4;
            e->subs = kv_xrealloc(e->subs, e->cap * sizeof *e->subs);
        }
        e->subs[e->nsubs++] = c;
        if (c->nsubs[kind] == c->subscap[kind]) {
            c->subscap[kind] = c->subscap[kind] ? c->subscap[kind] * 2 : 4;
            c->subs[kind] = kv_xrealloc(c->subs[kind], c->subscap[kind] * sizeof **c->subs);
        }
        c->subs[kind][c->nsubs[kind]++] = e;
    }
    notice(c, SUB_WORD[kind], p, n, kind);
}

/* Removes c from e (which it is subscribed to), keeping both orders. */
static void leave(struct conn *c, int kind, struct ps_chan *e)
{
    for (size_t i = 0; i < e->nsubs; i++) {
        if (e->subs[i] == c) {
            memmove(&e->subs[i], &e->subs[i + 1], (e->nsubs - i - 1) * sizeof *e->subs);
            e->nsubs--;
            break;
        }
    }
    struct ps_chan **mine = c->subs[kind];
    for (size_t i = 0; i < c->nsubs[kind]; i++) {
        if (mine[i] == e) {
            memmove(&mine[i], &mine[i + 1], (c->nsubs[kind] - i - 1) * sizeof *mine);
            c->nsubs[kind]--;
            break;
        }
    }
    if (!e->nsubs)
        drop(kind, e);
}

static void unsubscribe(struct conn *c, int kind, const char *p, size_t n)
{
    struct ps_chan *e = find(kind, p, n);
    for (size_t i = 0; e && i < c->nsubs[kind]; i++) {
        if (c->subs[kind][i] == e) {
            leave(c, kind, e);
            break;
        }
    }
    notice(c, UNSUB_WORD[kind], p, n, kind);
}

/* (P|S)UNSUBSCRIBE with no names: everything of that kind, in order; with
 * nothing to leave, one notice with a nil name. */
static void unsubscribe_all(struct conn *c, int kind)
{
    if (!c->nsubs[kind]) {
        notice(c, UNSUB_WORD[kind], NULL, 0, kind);
        return;
    }
    while (c->nsubs[kind]) {
        struct ps_chan *e = c->subs[kind][0];
        /* The name outlives leave() only in a copy: leave may free e. */
        char *name = kv_xmemdup(e->name, e->n);
        size_t n = e->n;
        leave(c, kind, e);
        notice(c, UNSUB_WORD[kind], name, n, kind);
        free(name);
    }
}

void cmd_pubsub_release(struct conn *c)
{
    for (int kind = 0; kind < CMD_PS_KINDS; kind++) {
        while (c->nsubs[kind])
            leave(c, kind, c->subs[kind][0]);
        free(c->subs[kind]);
        c->subs[kind] = NULL;
        c->subscap[kind] = 0;
    }
}

static void subscribe_generic(struct conn *c, int kind)
{
    for (size_t i = 1; i < c->argc; i++)
        subscribe(c, kind, c->argv[i].p, c->argv[i].n);
}

static void unsubscribe_generic(struct conn *c, int kind)
{
    if (c->argc == 1)
        unsubscribe_all(c, kind);
    for (size_t i = 1; i < c->argc; i++)
        unsubscribe(c, kind, c->argv[i].p, c->argv[i].n);
}

void cmd_subscribe(struct conn *c)
{
    subscribe_generic(c, CMD_PS_CHANNEL);
}

void cmd_psubscribe(struct conn *c)
{
    subscribe_generic(c, CMD_PS_PATTERN);
}

void cmd_ssubscribe(struct conn *c)
{
    subscribe_generic(c, CMD_PS_SHARD);
}

void cmd_unsubscribe(struct conn *c)
{
    unsubscribe_generic(c, CMD_PS_CHANNEL);
}

void cmd_punsubscribe(struct conn *c)
{
    unsubscribe_generic(c, CMD_PS_PATTERN);
}

void cmd_sunsubscribe(struct conn *c)
{
    unsubscribe_generic(c, CMD_PS_SHARD);
}

/* ---- publishing ---- */

static void deliver(struct conn *to, const char *kind, const struct ps_chan *pat,
                    const struct db_str *ch, const struct db_str *msg)
{
    if (to->flags & CONN_CLOSE_ASAP)
        return; /* CLIENT REPLY OFF does not stop messages: Redis sends them too */
    resp_push(OUT(to), pat ? 4 : 3, to->proto);
    resp_bulk_cstr(OUT(to), kind);
    if (pat)
        resp_bulk(OUT(to), pat->name, pat->n);
    resp_bulk(OUT(to), ch->p, ch->n);
    resp_bulk(OUT(to), msg->p, msg->n);
    conn_want_write(to);
    /* Judged after the message too: a subscriber that stopped reading is
     * closed at the pubsub class's limit (srv_limit.c). */
    if (resp_buf_used(&to->out) > srv.out_watch)
        srv_out_check(to, 0);
}

static size_t publish(int kind, const struct db_str *ch, const struct db_str *msg)
{
    size_t n = 0;
    const struct ps_chan *e = find(kind, ch->p, ch->n);
    for (size_t i = 0; e && i < e->nsubs; i++, n++)
        deliver(e->subs[i], kind == CMD_PS_SHARD ? "smessage" : "message", NULL, ch, msg);
    const struct ps_table *t = &tabs[CMD_PS_PATTERN];
    for (size_t b = 0; kind == CMD_PS_CHANNEL && t->b && b <= t->mask; b++) {
        for (const struct ps_chan *p = t->b[b]; p; p = p->next) {
            if (!db_glob_match(p->name, p->n, ch->p, ch->n, 0))
                continue;
            for (size_t i = 0; i < p->nsubs; i++, n++)
                deliver(p->subs[i], "pmessage", p, ch, msg);
        }
    }
    return n;
}

void cmd_notify_publish(int cls, const char *event, unsigned dbi, const char *key, size_t klen)
{
    if (!cmd_notify_on(cls))
        return;
    int f = srv.conf.notify_keyspace_events;
    dbi = srv_dbunmap[dbi & (SRV_DBMAP_N - 1)]; /* the number clients know it by */
    size_t en = strlen(event), cap = klen + en + 32;
    char small[256];
    char *buf = cap <= sizeof small ? small : kv_xmalloc(cap);
    struct db_str ev = {event, en}, k = {key, klen};
    if (f & SRV_NOTIFY_KEYSPACE) {
        int n = snprintf(buf, cap, "__keyspace@%u__:", dbi);
        memcpy(buf + n, key, klen);
        struct db_str ch = {buf, (size_t)n + klen};
        publish(CMD_PS_CHANNEL, &ch, &ev);
    }
    if (f & SRV_NOTIFY_KEYEVENT) {
        int n = snprintf(buf, cap, "__keyevent@%u__:%s", dbi, event);
        struct db_str ch = {buf, (size_t)n};
        publish(CMD_PS_CHANNEL, &ch, &k);
    }
    if (buf != small)
        free(buf);
}

void cmd_notify_new(unsigned dbi, const char *key, size_t klen, bool always)
{
    struct db_vec *v = &srv.created;
    for (size_t j = 0; j < v->n; j++) {
        if (v->items[j].score == (double)dbi && db_vec_len(v, j) == klen &&
            !memcmp(db_vec_ptr(v, j), key, klen)) {
            v->items[j].score = -1; /* said */
            always = true;
            break;
        }
    }
    if (always)
        cmd_notify_publish(SRV_NOTIFY_NEW, "new", dbi, key, klen);
}

void cmd_notify_new_rest(void)
{
    struct db_vec *v = &srv.created;
    for (size_t j = 0; j < v->n; j++)
        if (v->items[j].score >= 0)
            cmd_notify_publish(SRV_NOTIFY_NEW, "new", (unsigned)v->items[j].score, db_vec_ptr(v, j),
                               db_vec_len(v, j));
    db_vec_clear(v);
}

void cmd_notify_emptied(struct conn *c, size_t i)
{
    if (cmd_notify_on(SRV_NOTIFY_GENERIC) &&
        db_exists(srv.db, c->db, c->argv[i].p, c->argv[i].n) == 0)
        cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "del", i);
}

bool cmd_notify_had(struct conn *c, const struct db_str *key)
{
    return cmd_notify_on(SRV_NOTIFY_GENERIC) && db_exists(srv.db, c->db, key->p, key->n) == 1;
}

void cmd_notify_store(struct conn *c, int cls, const char *event, const struct db_str *key,
                      uint64_t n, bool had)
{
    if (n)
        cmd_notify(cls, event, c->db, key->p, key->n);
    else if (had)
        cmd_notify(SRV_NOTIFY_GENERIC, "del", c->db, key->p, key->n);
}

/* PUBLISH channel message */
void cmd_publish(struct conn *c)
{
    resp_int(OUT(c), (int64_t)publish(CMD_PS_CHANNEL, &c->argv[1], &c->argv[2]));
}

/* SPUBLISH shardchannel message */
void cmd_spublish(struct conn *c)
{
    resp_int(OUT(c), (int64_t)publish(CMD_PS_SHARD, &c->argv[1], &c->argv[2]));
}

/* ---- PUBSUB ---- */

/* PUBSUB CHANNELS|SHARDCHANNELS [pattern]: the names with a subscriber. */
static void list_names(struct conn *c, int kind)
{
    const struct ps_table *t = &tabs[kind];
    const struct db_str *pat = c->argc == 3 ? &c->argv[2] : NULL;
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass)
            resp_array(OUT(c), n);
        for (size_t b = 0; t->b && b <= t->mask; b++) {
            for (const struct ps_chan *e = t->b[b]; e; e = e->next) {
                if (pat && !db_glob_match(pat->p, pat->n, e->name, e->n, 0))
                    continue;
                if (pass)
                    resp_bulk(OUT(c), e->name, e->n);
                else
                    n++;
            }
        }
    }
}

/* PUBSUB NUMSUB|SHARDNUMSUB [name ...]: [name, subscribers, ...]. */
static void count_subs(struct conn *c, int kind)
{
    resp_array(OUT(c), 2 * (c->argc - 2));
    for (size_t i = 2; i < c->argc; i++) {
        const struct ps_chan *e = find(kind, c->argv[i].p, c->argv[i].n);
        resp_bulk(OUT(c), c->argv[i].p, c->argv[i].n);
        resp_int(OUT(c), e ? (int64_t)e->nsubs : 0);
    }
}

void cmd_pubsub(struct conn *c)
{
    if ((cmd_arg_is(c, 1, "channels") || cmd_arg_is(c, 1, "shardchannels")) && c->argc <= 3) {
        list_names(c, cmd_arg_is(c, 1, "channels") ? CMD_PS_CHANNEL : CMD_PS_SHARD);
    } else if (cmd_arg_is(c, 1, "numsub") || cmd_arg_is(c, 1, "shardnumsub")) {
        count_subs(c, cmd_arg_is(c, 1, "numsub") ? CMD_PS_CHANNEL : CMD_PS_SHARD);
    } else if (cmd_arg_is(c, 1, "numpat") && c->argc == 2) {
        resp_int(OUT(c), (int64_t)tabs[CMD_PS_PATTERN].count);
    } else if (cmd_arg_is(c, 1, "numpat") || (cmd_arg_is(c, 1, "help") && c->argc > 2)) {
        resp_errorf(OUT(c), "ERR wrong number of arguments for 'pubsub|%s' command",
                    cmd_arg_is(c, 1, "help") ? "help" : "numpat");
    } else if (cmd_arg_is(c, 1, "help")) {
        static const char *const lines[] = {
            "PUBSUB <subcommand> [<arg> ...]. Subcommands are:",
            "CHANNELS [<pattern>]",
            "    The channels with at least one subscriber, those matching <pattern> if given.",
            "NUMPAT",
            "    How many distinct patterns have subscribers.",
            "NUMSUB [<channel> ...]",
            "    Each channel's subscriber count (pattern subscriptions not counted).",
            "SHARDCHANNELS [<pattern>]",
            "    CHANNELS for shard channels.",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    NUMSUB for shard channels.",
            "HELP",
            "    This help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else if (cmd_arg_is(c, 1, "channels") || cmd_arg_is(c, 1, "shardchannels")) {
        resp_errorf(OUT(c),
                    "ERR unknown subcommand or wrong number of arguments for '%.*s'. "
                    "Try PUBSUB HELP.",
                    (int)c->argv[1].n, c->argv[1].p);
    } else {
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try PUBSUB HELP.", (int)c->argv[1].n,
                    c->argv[1].p);
    }
}
