/*
 * cmd_tracking — CLIENT TRACKING: server-assisted client-side caching, as
 * Redis 6+ offers it to remote clients (local ones read the shm cache).
 *
 * Default mode: the keys a tracking client reads (read-only commands, as
 * COMMAND GETKEYS finds them) go into one table, key name → client ids,
 * across databases as in Redis. When a key is modified — any commit that
 * touches its records, expiry included — each client that read it gets one
 * invalidation message and the entry goes: it is re-added on the next
 * read. FLUSHDB/FLUSHALL invalidate everything (a null key list).
 * BCAST mode: no table; every key modified under a client's prefix is
 * collected and sent once per loop iteration, sorted, per prefix.
 *
 * A message goes to the client itself (RESP3 push `invalidate`), or to
 * its REDIRECT client (a RESP3 push, or a RESP2 client subscribed to
 * `__redis__:invalidate`). Messages for the client whose command made the
 * change wait until that command's reply is written, as in Redis 7.
 */
#include "cmd.h"
#include "kv_mem.h"

#include <stdlib.h>

/* ---- the table: key name → ids of the clients that read it ---- */

struct tkey {
    struct tkey *next;
    uint64_t hash;
    uint64_t *ids;
    size_t nids, capids;
    size_t kn;
    char k[];
};

static struct tkey **tab;
static size_t tabcap, nkeys, nitems;
static size_t ntracking; /* clients with tracking on */

static uint64_t key_hash(const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h;
}

static struct tkey **slot(const char *k, size_t kn, uint64_t h)
{
    struct tkey **p = &tab[h & (tabcap - 1)];
    while (*p && !((*p)->hash == h && (*p)->kn == kn && !memcmp((*p)->k, k, kn)))
        p = &(*p)->next;
    return p;
}

static void remember(const char *k, size_t kn, uint64_t id)
{
    if (nkeys >= tabcap / 2 * 3 || !tabcap) {
        size_t cap = tabcap ? tabcap * 2 : 1024;
        struct tkey **t = kv_xmalloc(cap * sizeof *t);
        memset(t, 0, cap * sizeof *t);
        for (size_t i = 0; i < tabcap; i++)
            for (struct tkey *e = tab[i], *next; e; e = next) {
                next = e->next;
                e->next = t[e->hash & (cap - 1)];
                t[e->hash & (cap - 1)] = e;
            }
        free(tab);
        tab = t;
        tabcap = cap;
    }
    uint64_t h = key_hash(k, kn);
    struct tkey **p = slot(k, kn, h), *e = *p;
    if (!e) {
        e = kv_xmalloc(sizeof *e + kn);
        memset(e, 0, sizeof *e);
        e->hash = h;
        e->kn = kn;
        memcpy(e->k, k, kn);
        *p = e;
        nkeys++;
    }
    for (size_t i = 0; i < e->nids; i++)
        if (e->ids[i] == id)
            return;
    if (e->nids == e->capids) {
        e->capids = e->capids ? 2 * e->capids : 2;
        e->ids = kv_xrealloc(e->ids, e->capids * sizeof *e->ids);
    }
    e->ids[e->nids++] = id;
    nitems++;
}

static void drop_key(struct tkey **p)
{
    struct tkey *e = *p;
    *p = e->next;
    nitems -= e->nids;
    nkeys--;
    free(e->ids);
    free(e);
}

static void drop_all(void)
{
    for (size_t i = 0; i < tabcap; i++)
        while (tab[i])
            drop_key(&tab[i]);
}

/* ---- messages ---- */

static struct conn *client_by_id(uint64_t id)
{
    for (struct conn *c = srv.clients; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

/* Sends one invalidation: of keys[0..n) (n keys in one array), or of
 * everything (keys NULL). */
static void send_message(struct conn *c, const struct db_str *keys, size_t n)
{
    struct conn *to = c;
    if (c->tredir) {
        to = client_by_id(c->tredir);
        if (!to) {
            c->tflags |= CONN_TRK_BROKEN;
            if (c->proto >= 3) {
                resp_push(OUT(c), 2, c->proto);
                resp_bulk_cstr(OUT(c), "tracking-redir-broken");
                resp_int(OUT(c), (int64_t)c->tredir);
                conn_want_write(c);
            }
            return;
        }
    }
    if (to->proto >= 3) {
        resp_push(OUT(to), 2, to->proto);
        resp_bulk_cstr(OUT(to), "invalidate");
    } else if (to != c && cmd_pubsub_subscribed(to)) {
        resp_push(OUT(to), 3, to->proto);
        resp_bulk_cstr(OUT(to), "message");
        resp_bulk_cstr(OUT(to), "__redis__:invalidate");
    } else {
        return; /* RESP2 has no way to tell the client itself */
    }
    if (!keys) {
        /* The null of the tracking client's protocol, as Redis writes it. */
        if (c->proto >= 3)
            resp_buf_append(OUT(to), "_\r\n", 3);
        else
            resp_buf_append(OUT(to), "$-1\r\n", 5);
    } else {
        resp_array(OUT(to), n);
        for (size_t i = 0; i < n; i++)
            resp_bulk(OUT(to), keys[i].p, keys[i].n);
    }
    conn_want_write(to);
}

/* Invalidations for the client running a command wait for its reply. */
static struct conn *running;
static int depth;
static struct db_str *pend; /* owned copies; p NULL: everything */
static size_t npend, cappend;

static void pend_add(const char *k, size_t kn)
{
    if (npend == cappend) {
        cappend = cappend ? 2 * cappend : 8;
        pend = kv_xrealloc(pend, cappend * sizeof *pend);
    }
    pend[npend].p = k ? kv_xmemdup(k, kn) : NULL;
    pend[npend++].n = kn;
}

void cmd_tracking_begin(struct conn *c)
{
    if (depth++ == 0)
        running = c;
}

void cmd_tracking_end(struct conn *c)
{
    if (--depth > 0)
        return;
    running = NULL;
    for (size_t i = 0; i < npend; i++) {
        if (c->tflags & CONN_TRK_ON)
            send_message(c, pend[i].p ? &pend[i] : NULL, 1);
        free((void *)pend[i].p);
    }
    npend = 0;
}

/* ---- broadcast mode ---- */

/* One prefix that BCAST clients asked for, with the keys modified under
 * it since the last broadcast and who modified each (for NOLOOP). */
struct bprefix {
    struct db_str p; /* owned */
    uint64_t *clients;
    size_t nclients;
    struct db_str *keys; /* owned */
    uint64_t *by;
    size_t nkeys, capkeys;
};

static struct bprefix *bps;
static size_t nbps;

static struct bprefix *bprefix_find(const char *p, size_t n)
{
    for (size_t i = 0; i < nbps; i++)
        if (bps[i].p.n == n && !memcmp(bps[i].p.p, p, n))
            return &bps[i];
    return NULL;
}

static void bcast_join(struct conn *c, const struct db_str *p)
{
    struct bprefix *b = bprefix_find(p->p, p->n);
    if (!b) {
        bps = kv_xrealloc(bps, (nbps + 1) * sizeof *bps);
        b = &bps[nbps++];
        memset(b, 0, sizeof *b);
        b->p.p = kv_xmemdup(p->p, p->n ? p->n : 1);
        b->p.n = p->n;
    }
    b->clients = kv_xrealloc(b->clients, (b->nclients + 1) * sizeof *b->clients);
    b->clients[b->nclients++] = c->id;
}

static void bprefix_clear_keys(struct bprefix *b)
{
    for (size_t i = 0; i < b->nkeys; i++)
        free((void *)b->keys[i].p);
    b->nkeys = 0;
}

static void bcast_leave(struct conn *c)
{
    for (size_t i = 0; i < nbps;) {
        struct bprefix *b = &bps[i];
        for (size_t j = 0; j < b->nclients; j++)
            if (b->clients[j] == c->id)
                b->clients[j--] = b->clients[--b->nclients];
        if (b->nclients) {
            i++;
            continue;
        }
        bprefix_clear_keys(b);
        free(b->keys);
        free(b->by);
        free(b->clients);
        free((void *)b->p.p);
        bps[i] = bps[--nbps];
    }
}

static int cmp_str(const void *a, const void *b)
{
    const struct db_str *x = a, *y = b;
    int r = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
    return r ? r : (x->n > y->n) - (x->n < y->n);
}

static int cmp_prefix(const void *a, const void *b)
{
    return cmp_str(&((const struct bprefix *)a)->p, &((const struct bprefix *)b)->p);
}

void cmd_tracking_broadcast(void)
{
    bool any = false;
    for (size_t i = 0; i < nbps && !any; i++)
        any = bps[i].nkeys > 0;
    if (!any)
        return;
    qsort(bps, nbps, sizeof *bps, cmp_prefix); /* prefix by prefix, in byte order */
    for (size_t i = 0; i < nbps; i++) {
        struct bprefix *b = &bps[i];
        if (!b->nkeys)
            continue;
        /* Each client gets the keys sorted and once each; with NOLOOP,
         * not those it modified itself. */
        struct db_str *ks = kv_xmalloc(b->nkeys * sizeof *ks);
        for (size_t j = 0; j < b->nclients; j++) {
            struct conn *c = client_by_id(b->clients[j]);
            if (!c)
                continue;
            size_t n = 0;
            for (size_t k = 0; k < b->nkeys; k++)
                if (!((c->tflags & CONN_TRK_NOLOOP) && b->by[k] == c->id))
                    ks[n++] = b->keys[k];
            qsort(ks, n, sizeof *ks, cmp_str);
            size_t u = 0;
            for (size_t k = 0; k < n; k++)
                if (!u || cmp_str(&ks[u - 1], &ks[k]))
                    ks[u++] = ks[k];
            if (u)
                send_message(c, ks, u);
        }
        free(ks);
        bprefix_clear_keys(b);
    }
}

/* ---- what the rest of the daemon calls ---- */

void cmd_tracking_key_modified(const char *k, size_t kn)
{
    for (size_t i = 0; i < nbps; i++) {
        struct bprefix *b = &bps[i];
        if (b->p.n > kn || memcmp(b->p.p, k, b->p.n))
            continue;
        if (b->nkeys == b->capkeys) {
            b->capkeys = b->capkeys ? 2 * b->capkeys : 16;
            b->keys = kv_xrealloc(b->keys, b->capkeys * sizeof *b->keys);
            b->by = kv_xrealloc(b->by, b->capkeys * sizeof *b->by);
        }
        b->keys[b->nkeys].p = kv_xmemdup(k, kn ? kn : 1);
        b->keys[b->nkeys].n = kn;
        b->by[b->nkeys++] = running ? running->id : 0;
    }
    if (!nkeys)
        return;
    struct tkey **p = slot(k, kn, key_hash(k, kn)), *e = *p;
    if (!e)
        return;
    for (size_t i = 0; i < e->nids; i++) {
        struct conn *t = client_by_id(e->ids[i]);
        if (!t || !(t->tflags & CONN_TRK_ON) || (t->tflags & CONN_TRK_BCAST))
            continue;
        if ((t->tflags & CONN_TRK_NOLOOP) && t == running)
            continue;
        if (t == running) {
            pend_add(k, kn);
        } else {
            struct db_str key = {k, kn};
            send_message(t, &key, 1);
        }
    }
    drop_key(p);
}

/* Invalidates the key entry *p for the clients that read it, as a change
 * made by no client would. */
static void evict(struct tkey **p)
{
    struct tkey *e = *p;
    for (size_t i = 0; i < e->nids; i++) {
        struct conn *t = client_by_id(e->ids[i]);
        if (t && (t->tflags & CONN_TRK_ON) && !(t->tflags & CONN_TRK_BCAST)) {
            struct db_str key = {e->k, e->kn};
            send_message(t, &key, 1);
        }
    }
    drop_key(p);
}

void cmd_tracking_cron(size_t max_keys)
{
    /* Over the limit, keys go as if changed, up to 1,000 per tick, taken
     * bucket by bucket from where the last tick stopped: the clients drop
     * those keys from their caches and the table's memory stays bounded. */
    static size_t cursor;
    for (int budget = 1000; max_keys && nkeys > max_keys && budget > 0; budget--) {
        while (!tab[cursor & (tabcap - 1)])
            cursor++;
        evict(&tab[cursor & (tabcap - 1)]);
    }
}

void cmd_tracking_flush(void)
{
    for (struct conn *c = srv.clients; c; c = c->next) {
        if (!(c->tflags & CONN_TRK_ON))
            continue;
        if (c == running)
            pend_add(NULL, 0);
        else
            send_message(c, NULL, 0);
    }
    drop_all();
}

void cmd_tracking_read(struct conn *c, const struct cmd *cmd)
{
    uint32_t f = c->tflags;
    bool caching = f & CONN_TRK_CACHING;
    if (!(f & CONN_TRK_ON) || (f & CONN_TRK_BCAST) || !(cmd->flags & CMD_READONLY) ||
        ((f & CONN_TRK_OPTIN) && !caching) || ((f & CONN_TRK_OPTOUT) && caching))
        return;
    size_t *pos = kv_xmalloc(c->argc * CMD_KEYSPECS_MAX * sizeof *pos);
    int n = cmd_getkeys(cmd, c->argv, c->argc, pos);
    for (int i = 0; i < n; i++)
        remember(c->argv[pos[i]].p, c->argv[pos[i]].n, c->id);
    free(pos);
}

static void tracking_off(struct conn *c)
{
    if (c->tflags & CONN_TRK_ON)
        ntracking--;
    if (c->tflags & CONN_TRK_BCAST)
        bcast_leave(c);
    for (size_t i = 0; i < c->ntprefix; i++)
        free((void *)c->tprefix[i].p);
    free(c->tprefix);
    c->tprefix = NULL;
    c->ntprefix = 0;
    c->tflags = 0;
    c->tredir = 0;
}

void cmd_tracking_release(struct conn *c)
{
    tracking_off(c);
}

bool cmd_tracking_active(void)
{
    return nkeys || nbps || ntracking;
}

void cmd_tracking_info(size_t *clients, size_t *keys, size_t *items, size_t *prefixes)
{
    *clients = ntracking;
    *keys = nkeys;
    *items = nitems;
    *prefixes = nbps;
}

/* ---- CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO ---- */

/* Two prefixes overlap when one starts the other. */
static bool overlap(const struct db_str *a, const struct db_str *b)
{
    size_t n = a->n < b->n ? a->n : b->n;
    return !memcmp(a->p, b->p, n);
}

void cmd_client_tracking(struct conn *c)
{
    int64_t redir = 0;
    uint32_t opt = 0;
    size_t np = 0;
    struct db_str *pfx = kv_xmalloc(c->argc * sizeof *pfx);
    for (size_t j = 3; j < c->argc; j++) {
        bool more = j + 1 < c->argc;
        if (cmd_arg_is(c, j, "redirect") && more) {
            j++;
            if (redir) {
                resp_error(OUT(c), "ERR A client can only redirect to a single other client");
                goto out;
            }
            if (!cmd_arg_ll(c, j, &redir))
                goto out;
            if (!client_by_id((uint64_t)redir)) {
                resp_error(OUT(c), "ERR The client ID you want redirect to does not exist");
                goto out;
            }
        } else if (cmd_arg_is(c, j, "bcast")) {
            opt |= CONN_TRK_BCAST;
        } else if (cmd_arg_is(c, j, "optin")) {
            opt |= CONN_TRK_OPTIN;
        } else if (cmd_arg_is(c, j, "optout")) {
            opt |= CONN_TRK_OPTOUT;
        } else if (cmd_arg_is(c, j, "noloop")) {
            opt |= CONN_TRK_NOLOOP;
        } else if (cmd_arg_is(c, j, "prefix") && more) {
            pfx[np++] = c->argv[++j];
        } else {
            cmd_reply_syntax(c);
            goto out;
        }
    }
    if (cmd_arg_is(c, 2, "on")) {
        uint32_t f = c->tflags;
        if (!(opt & CONN_TRK_BCAST) && np) {
            resp_error(OUT(c), "ERR PREFIX option requires BCAST mode to be enabled");
            goto out;
        }
        if ((f & CONN_TRK_ON) && !!(f & CONN_TRK_BCAST) != !!(opt & CONN_TRK_BCAST)) {
            resp_error(OUT(c), "ERR You can't switch BCAST mode on/off before disabling tracking "
                               "for this client, and then re-enabling it with a different mode.");
            goto out;
        }
        if ((opt & CONN_TRK_BCAST) && (opt & (CONN_TRK_OPTIN | CONN_TRK_OPTOUT))) {
            resp_error(OUT(c), "ERR OPTIN and OPTOUT are not compatible with BCAST");
            goto out;
        }
        if ((opt & CONN_TRK_OPTIN) && (opt & CONN_TRK_OPTOUT)) {
            resp_error(OUT(c), "ERR You can't use both OPTIN and OPTOUT");
            goto out;
        }
        if (((opt & CONN_TRK_OPTIN) && (f & CONN_TRK_OPTOUT)) ||
            ((opt & CONN_TRK_OPTOUT) && (f & CONN_TRK_OPTIN))) {
            resp_error(OUT(c), "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking "
                               "for this client, and then re-enabling it with a different mode.");
            goto out;
        }
        if (opt & CONN_TRK_BCAST) {
            /* New prefixes may not overlap those held or each other (a
             * prefix overlaps another that starts it, or equals it). */
            for (size_t i = 0; i < np; i++) {
                for (size_t j = 0; j < c->ntprefix; j++)
                    if (overlap(&c->tprefix[j], &pfx[i])) {
                        resp_errorf(OUT(c),
                                    "ERR Prefix '%.*s' overlaps with an existing prefix '%.*s'. "
                                    "Prefixes for a single client must not overlap.",
                                    (int)pfx[i].n, pfx[i].p, (int)c->tprefix[j].n, c->tprefix[j].p);
                        goto out;
                    }
                for (size_t j = i + 1; j < np; j++)
                    if (overlap(&pfx[i], &pfx[j])) {
                        resp_errorf(OUT(c),
                                    "ERR Prefix '%.*s' overlaps with another provided prefix "
                                    "'%.*s'. Prefixes for a single client must not overlap.",
                                    (int)pfx[i].n, pfx[i].p, (int)pfx[j].n, pfx[j].p);
                        goto out;
                    }
            }
        }
        /* On: the options join those held (prefixes add up). */
        if (!(c->tflags & CONN_TRK_ON))
            ntracking++;
        c->tflags |= CONN_TRK_ON | opt;
        c->tflags &= ~(uint32_t)CONN_TRK_BROKEN;
        c->tredir = (uint64_t)redir;
        if (opt & CONN_TRK_BCAST) {
            if (!np && !c->ntprefix) {
                pfx[np].p = "";
                pfx[np++].n = 0;
            }
            for (size_t i = 0; i < np; i++) {
                c->tprefix = kv_xrealloc(c->tprefix, (c->ntprefix + 1) * sizeof *c->tprefix);
                c->tprefix[c->ntprefix].p = kv_xmemdup(pfx[i].p, pfx[i].n ? pfx[i].n : 1);
                c->tprefix[c->ntprefix++].n = pfx[i].n;
                bcast_join(c, &pfx[i]);
            }
            qsort(c->tprefix, c->ntprefix, sizeof *c->tprefix, cmp_str); /* as listed */
        }
    } else if (cmd_arg_is(c, 2, "off")) {
        tracking_off(c);
    } else {
        cmd_reply_syntax(c);
        goto out;
    }
    resp_simple(OUT(c), "OK");
out:
    free(pfx);
}

void cmd_client_caching(struct conn *c)
{
    uint32_t f = c->tflags;
    if (!(f & CONN_TRK_ON) || !(f & (CONN_TRK_OPTIN | CONN_TRK_OPTOUT))) {
        resp_error(OUT(c), "ERR CLIENT CACHING can be called only when the client is in tracking "
                           "mode with OPTIN or OPTOUT mode enabled");
        return;
    }
    if (cmd_arg_is(c, 2, "yes") && (f & CONN_TRK_OPTIN)) {
        c->tflags |= CONN_TRK_CACHING;
    } else if (cmd_arg_is(c, 2, "no") && (f & CONN_TRK_OPTOUT)) {
        c->tflags |= CONN_TRK_CACHING;
    } else if (cmd_arg_is(c, 2, "yes") || cmd_arg_is(c, 2, "no")) {
        resp_error(OUT(c), cmd_arg_is(c, 2, "yes")
                               ? "ERR CLIENT CACHING YES is only valid when tracking is enabled in "
                                 "OPTIN mode."
                               : "ERR CLIENT CACHING NO is only valid when tracking is enabled in "
                                 "OPTOUT mode.");
        return;
    } else {
        cmd_reply_syntax(c);
        return;
    }
    resp_simple(OUT(c), "OK");
}

void cmd_client_getredir(struct conn *c)
{
    resp_int(OUT(c), (c->tflags & CONN_TRK_ON) ? (int64_t)c->tredir : -1);
}

void cmd_client_trackinginfo(struct conn *c)
{
    uint32_t f = c->tflags;
    const char *flags[8];
    size_t n = 0;
    if (!(f & CONN_TRK_ON)) {
        flags[n++] = "off";
    } else {
        flags[n++] = "on";
        if (f & CONN_TRK_BCAST)
            flags[n++] = "bcast";
        if (f & CONN_TRK_OPTIN) {
            flags[n++] = "optin";
            if (f & CONN_TRK_CACHING)
                flags[n++] = "caching-yes";
        }
        if (f & CONN_TRK_OPTOUT) {
            flags[n++] = "optout";
            if (f & CONN_TRK_CACHING)
                flags[n++] = "caching-no";
        }
        if (f & CONN_TRK_NOLOOP)
            flags[n++] = "noloop";
        if (f & CONN_TRK_BROKEN)
            flags[n++] = "broken_redirect";
    }
    resp_map(OUT(c), 3, c->proto);
    resp_bulk_cstr(OUT(c), "flags");
    resp_set(OUT(c), n, c->proto);
    for (size_t i = 0; i < n; i++)
        resp_bulk_cstr(OUT(c), flags[i]);
    resp_bulk_cstr(OUT(c), "redirect");
    resp_int(OUT(c), (f & CONN_TRK_ON) ? (int64_t)c->tredir : -1);
    resp_bulk_cstr(OUT(c), "prefixes");
    resp_array(OUT(c), c->ntprefix);
    for (size_t i = 0; i < c->ntprefix; i++)
        resp_bulk(OUT(c), c->tprefix[i].p, c->tprefix[i].n);
}
