/*
 * acl — users, their rules and the check (acl.h; docs/security.md, "ACL").
 *
 * Commands are numbered: the table's commands first (cmd_at), then its
 * subcommands (cmd_sub_at). A selector holds one bit per number; a
 * container's bit is its own, and giving or taking a container gives or
 * takes all its subcommands too, as in Redis. Categories are taken from
 * the categories COMMAND INFO reports, so the two always agree.
 *
 * ACL LIST does not keep the rules as they were typed: like Redis 7.0, it
 * derives them from the bits. It starts from +@all (when commands added
 * later would be allowed) or -@all, adds (or takes) the categories that fit
 * best, one at a time, and then names the single commands, subcommands
 * and first arguments that still differ.
 */
#include "acl.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cmd.h"
#include "kv_mem.h"
#include "resp.h"

enum { ACL_R = 1, ACL_W = 2 };

static const char *const cat_names[] = {
    "keyspace", "read",   "write",       "set",       "sortedset",  "list",        "hash",
    "string",   "bitmap", "hyperloglog", "geo",       "stream",     "pubsub",      "admin",
    "fast",     "slow",   "blocking",    "dangerous", "connection", "transaction", "scripting"};
#define NCATS (sizeof cat_names / sizeof cat_names[0])

struct acl_pat {
    char *p;
    size_t n;
    unsigned flags; /* ACL_R | ACL_W: what the pattern grants */
};

struct acl_sel {
    uint64_t *bits; /* allowed command numbers */
    bool future;    /* +@all: commands added later would be allowed */
    bool allcmds;   /* +@all and nothing taken since: no bit is looked at */
    char ***fa;     /* [ncmd]: first arguments allowed of a command without its bit */
    size_t *nfa;    /* [ncmd] */
    struct acl_pat *keys, *chans;
    size_t nkeys, nchans;
    bool allkeys, allchans;
};

struct acl_user {
    char *name;
    size_t nn;
    bool on, nopass, sanitize, skip_sanitize;
    char (*pw)[65];
    size_t npw;
    struct acl_sel *sel; /* sel[0]: the root selector */
    size_t nsel;
};

/* The numbered commands. */
static struct {
    size_t n, ncmd, words;
    const char **name;
    uint32_t *cats;  /* bit per category */
    long *parent;    /* a subcommand's container, or -1 */
    size_t *subfrom; /* [ncmd]: a container's subcommands' numbers, in [subfrom, subto) */
    size_t *subto;
    long attach; /* SHMKV.ATTACH: its handler applies its own, stricter rule */
} U;

static struct acl_user **users;
static size_t nusers;
static struct acl_user *dflt;
static bool pubsub_all; /* acl-pubsub-default allchannels */
static char *last_requirepass;

/* ---- text ---- */

struct sb {
    char *p;
    size_t n, cap;
};

static void sb_add(struct sb *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = kv_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_word(struct sb *b, const char *s)
{
    if (b->n)
        sb_add(b, " ", 1);
    sb_add(b, s, strlen(s));
}

static char *sb_take(struct sb *b)
{
    if (!b->p)
        return strdup("");
    return b->p;
}

/* ---- commands and categories ---- */

size_t acl_ncats(void)
{
    return NCATS;
}

const char *acl_cat_name(size_t i)
{
    return cat_names[i];
}

int acl_cat_find(const char *name, size_t n)
{
    for (size_t i = 0; i < NCATS; i++)
        if (strlen(cat_names[i]) == n && !strncasecmp(cat_names[i], name, n))
            return (int)i;
    return -1;
}

static uint32_t parse_cats(const char *s)
{
    uint32_t m = 0;
    for (const char *p = s, *e; *p; p = *e ? e + 1 : e) {
        e = strchr(p, ' ');
        if (!e)
            e = p + strlen(p);
        if (*p == '@') {
            int c = acl_cat_find(p + 1, (size_t)(e - p - 1));
            if (c >= 0)
                m |= 1u << c;
        }
    }
    return m;
}

static void universe_init(void)
{
    U.ncmd = cmd_count();
    U.n = U.ncmd + cmd_sub_count();
    U.words = (U.n + 63) / 64;
    U.name = kv_xcalloc(U.n, sizeof *U.name);
    U.cats = kv_xcalloc(U.n, sizeof *U.cats);
    U.parent = kv_xcalloc(U.n, sizeof *U.parent);
    U.subfrom = kv_xcalloc(U.ncmd, sizeof *U.subfrom);
    U.subto = kv_xcalloc(U.ncmd, sizeof *U.subto);
    char cats[200];
    for (size_t i = 0; i < U.ncmd; i++) {
        const struct cmd *k = cmd_at(i);
        U.name[i] = k->name;
        cmd_cats(k, cats, sizeof cats);
        U.cats[i] = parse_cats(cats);
        U.parent[i] = -1;
    }
    const struct cmd *attach = cmd_lookup("shmkv.attach", 12);
    U.attach = attach ? (long)(attach - cmd_at(0)) : -1;
    for (size_t j = 0; j < cmd_sub_count(); j++) {
        const struct cmd_sub *s = cmd_sub_at(j);
        size_t id = U.ncmd + j;
        U.name[id] = s->name;
        U.cats[id] = parse_cats(s->cats);
        const char *bar = strchr(s->name, '|');
        const struct cmd *k = bar ? cmd_lookup(s->name, (size_t)(bar - s->name)) : NULL;
        U.parent[id] = -1;
        if (!k)
            continue;
        size_t top = (size_t)(k - cmd_at(0));
        U.parent[id] = (long)top;
        if (U.subto[top] == 0)
            U.subfrom[top] = id;
        U.subto[top] = id + 1; /* a container's subcommands are contiguous in the table */
    }
}

size_t acl_ncmds(void)
{
    return U.n;
}

const char *acl_cmd_name(size_t id)
{
    return U.name[id];
}

bool acl_cmd_in(size_t id, size_t cat)
{
    return U.cats[id] & (1u << cat);
}

static bool is_container(size_t id)
{
    return id < U.ncmd && U.subto[id] > U.subfrom[id];
}

/* The number of a command or subcommand by full name ("config|get"), or -1. */
static long cmd_id(const char *name, size_t n)
{
    const char *bar = memchr(name, '|', n);
    const struct cmd *k = cmd_lookup(name, bar ? (size_t)(bar - name) : n);
    if (!k)
        return -1;
    size_t top = (size_t)(k - cmd_at(0));
    if (!bar)
        return (long)top;
    for (size_t id = U.subfrom[top]; id < U.subto[top]; id++)
        if (strlen(U.name[id]) == n && !strncasecmp(U.name[id], name, n))
            return (long)id;
    return -1;
}

/* ---- selectors ---- */

static bool bit_get(const struct acl_sel *s, size_t id)
{
    return s->bits[id / 64] >> (id % 64) & 1;
}

static void bit_set(struct acl_sel *s, size_t id, bool on)
{
    if (on) {
        s->bits[id / 64] |= 1ull << (id % 64);
    } else {
        s->bits[id / 64] &= ~(1ull << (id % 64));
        s->allcmds = false;
    }
}

static void fa_reset(struct acl_sel *s, size_t id)
{
    if (id >= U.ncmd || !s->nfa[id])
        return;
    for (size_t i = 0; i < s->nfa[id]; i++)
        free(s->fa[id][i]);
    free(s->fa[id]);
    s->fa[id] = NULL;
    s->nfa[id] = 0;
}

/* Gives or takes a command and, for a container, all its subcommands. */
static void change_perm(struct acl_sel *s, size_t id, bool allow)
{
    bit_set(s, id, allow);
    fa_reset(s, id);
    if (id < U.ncmd)
        for (size_t j = U.subfrom[id]; j < U.subto[id]; j++)
            bit_set(s, j, allow);
}

static void set_all(struct acl_sel *s, bool allow)
{
    for (size_t id = 0; id < U.n; id++) {
        bit_set(s, id, allow);
        fa_reset(s, id);
    }
    s->future = allow;
    s->allcmds = allow;
}

static void set_cat(struct acl_sel *s, size_t cat, bool allow)
{
    for (size_t id = 0; id < U.n; id++)
        if (U.cats[id] & (1u << cat))
            change_perm(s, id, allow);
}

static void pats_free(struct acl_pat *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i].p);
    free(p);
}

static void sel_init(struct acl_sel *s)
{
    memset(s, 0, sizeof *s);
    s->bits = kv_xcalloc(U.words, sizeof *s->bits);
    s->fa = kv_xcalloc(U.ncmd, sizeof *s->fa);
    s->nfa = kv_xcalloc(U.ncmd, sizeof *s->nfa);
}

static void sel_free(struct acl_sel *s)
{
    for (size_t id = 0; id < U.ncmd; id++)
        fa_reset(s, id);
    free(s->fa);
    free(s->nfa);
    free(s->bits);
    pats_free(s->keys, s->nkeys);
    pats_free(s->chans, s->nchans);
}

static struct acl_pat *pats_dup(const struct acl_pat *p, size_t n)
{
    struct acl_pat *q = kv_xcalloc(n ? n : 1, sizeof *q);
    for (size_t i = 0; i < n; i++)
        q[i] = (struct acl_pat){kv_xmemdup(p[i].p, p[i].n), p[i].n, p[i].flags};
    return q;
}

static void sel_copy(struct acl_sel *d, const struct acl_sel *s)
{
    sel_init(d);
    memcpy(d->bits, s->bits, U.words * sizeof *d->bits);
    d->future = s->future;
    d->allcmds = s->allcmds;
    for (size_t id = 0; id < U.ncmd; id++) {
        if (!s->nfa[id])
            continue;
        d->fa[id] = kv_xcalloc(s->nfa[id], sizeof *d->fa[id]);
        for (size_t i = 0; i < s->nfa[id]; i++)
            d->fa[id][i] = strdup(s->fa[id][i]);
        d->nfa[id] = s->nfa[id];
    }
    d->keys = pats_dup(s->keys, s->nkeys);
    d->nkeys = s->nkeys;
    d->chans = pats_dup(s->chans, s->nchans);
    d->nchans = s->nchans;
    d->allkeys = s->allkeys;
    d->allchans = s->allchans;
}

static void pat_add(struct acl_pat **p, size_t *n, const char *s, size_t sn, unsigned flags)
{
    for (size_t i = 0; i < *n; i++) {
        if ((*p)[i].n == sn && !memcmp((*p)[i].p, s, sn)) {
            (*p)[i].flags |= flags;
            return;
        }
    }
    *p = kv_xrealloc(*p, (*n + 1) * sizeof **p);
    (*p)[(*n)++] = (struct acl_pat){kv_xmemdup(s, sn), sn, flags};
}

/* Redis refuses spaces and NULs in names and patterns: ACL files and
 * CONFIG REWRITE write them unquoted. */
static bool has_space(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isspace((unsigned char)p[i]) || p[i] == '\0')
            return true;
    return false;
}

static bool op_is(const char *op, size_t n, const char *w)
{
    return strlen(w) == n && !strncasecmp(op, w, n);
}

/* One selector rule; 0, or an errno naming Redis's message. */
static int sel_op(struct acl_sel *s, const char *op, size_t n)
{
    if (op_is(op, n, "allkeys") || (n == 2 && !memcmp(op, "~*", 2))) {
        s->allkeys = true;
        pats_free(s->keys, s->nkeys);
        s->keys = NULL;
        s->nkeys = 0;
    } else if (op_is(op, n, "resetkeys")) {
        s->allkeys = false;
        pats_free(s->keys, s->nkeys);
        s->keys = NULL;
        s->nkeys = 0;
    } else if (op_is(op, n, "allchannels") || (n == 2 && !memcmp(op, "&*", 2))) {
        s->allchans = true;
        pats_free(s->chans, s->nchans);
        s->chans = NULL;
        s->nchans = 0;
    } else if (op_is(op, n, "resetchannels")) {
        s->allchans = false;
        pats_free(s->chans, s->nchans);
        s->chans = NULL;
        s->nchans = 0;
    } else if (op_is(op, n, "allcommands") || op_is(op, n, "+@all")) {
        set_all(s, true);
    } else if (op_is(op, n, "nocommands") || op_is(op, n, "-@all")) {
        set_all(s, false);
    } else if (n && (op[0] == '~' || op[0] == '%')) {
        unsigned flags = 0;
        size_t i = 0;
        if (op[0] == '%') {
            for (i = 1; i < n && op[i] != '~'; i++) {
                char f = (char)toupper((unsigned char)op[i]);
                if (f == 'R' && !(flags & ACL_R))
                    flags |= ACL_R;
                else if (f == 'W' && !(flags & ACL_W))
                    flags |= ACL_W;
                else
                    return EINVAL;
            }
            if (!flags)
                return EINVAL;
        } else {
            flags = ACL_R | ACL_W;
        }
        if (s->allkeys)
            return EEXIST;
        /* "%R" without '~' is Redis's too: the empty pattern. */
        size_t from = i < n ? i + 1 : n;
        if (has_space(op + from, n - from))
            return EINVAL;
        pat_add(&s->keys, &s->nkeys, op + from, n - from, flags);
    } else if (n && op[0] == '&') {
        if (s->allchans)
            return EISDIR;
        if (has_space(op + 1, n - 1))
            return EINVAL;
        pat_add(&s->chans, &s->nchans, op + 1, n - 1, 0);
    } else if (n > 1 && (op[0] == '+' || op[0] == '-') && op[1] == '@') {
        int cat = acl_cat_find(op + 2, n - 2);
        if (cat < 0)
            return ENOENT;
        set_cat(s, (size_t)cat, op[0] == '+');
    } else if (n > 1 && (op[0] == '+' || op[0] == '-')) {
        bool allow = op[0] == '+';
        long id = cmd_id(op + 1, n - 1);
        if (id >= 0) {
            change_perm(s, (size_t)id, allow);
            return 0;
        }
        /* +command|first-arg, for a command without subcommands. */
        const char *bar = memchr(op + 1, '|', n - 1);
        if (!bar)
            return ENOENT;
        long top = cmd_id(op + 1, (size_t)(bar - op - 1));
        size_t an = n - (size_t)(bar + 1 - op);
        if (top < 0 || is_container((size_t)top) || !allow || !an || memchr(bar + 1, '|', an))
            return ENOENT;
        if (bit_get(s, (size_t)top))
            return 0; /* the whole command is allowed already */
        for (size_t i = 0; i < s->nfa[top]; i++)
            if (strlen(s->fa[top][i]) == an && !strncasecmp(s->fa[top][i], bar + 1, an))
                return 0;
        s->fa[top] = kv_xrealloc(s->fa[top], (s->nfa[top] + 1) * sizeof *s->fa[top]);
        char *a = kv_xmalloc(an + 1);
        for (size_t i = 0; i < an; i++)
            a[i] = (char)tolower((unsigned char)bar[1 + i]);
        a[an] = '\0';
        s->fa[top][s->nfa[top]++] = a;
    } else {
        return EINVAL;
    }
    return 0;
}

/* ---- users ---- */

static struct acl_user *user_new(const char *name, size_t nn)
{
    struct acl_user *u = kv_xcalloc(1, sizeof *u);
    u->name = kv_xmalloc(nn + 1);
    memcpy(u->name, name, nn);
    u->name[nn] = '\0';
    u->nn = nn;
    u->sel = kv_xcalloc(1, sizeof *u->sel);
    u->nsel = 1;
    sel_init(&u->sel[0]);
    return u;
}

static void user_free(struct acl_user *u)
{
    if (!u)
        return;
    for (size_t i = 0; i < u->nsel; i++)
        sel_free(&u->sel[i]);
    free(u->sel);
    free(u->pw);
    free(u->name);
    free(u);
}

static struct acl_user *user_dup(const struct acl_user *s)
{
    struct acl_user *u = kv_xcalloc(1, sizeof *u);
    *u = *s;
    u->name = kv_xmemdup(s->name, s->nn + 1);
    u->pw = s->npw ? kv_xmemdup(s->pw, s->npw * sizeof *s->pw) : NULL;
    u->sel = kv_xcalloc(s->nsel, sizeof *u->sel);
    for (size_t i = 0; i < s->nsel; i++)
        sel_copy(&u->sel[i], &s->sel[i]);
    return u;
}

/* Moves everything of src into dst, which keeps its address (connections
 * point at it); src is freed. */
static void user_replace(struct acl_user *dst, struct acl_user *src)
{
    for (size_t i = 0; i < dst->nsel; i++)
        sel_free(&dst->sel[i]);
    free(dst->sel);
    free(dst->pw);
    free(dst->name);
    *dst = *src;
    free(src);
}

static void sha256_hex(const char *p, size_t n, char out[65])
{
    unsigned char md[32];
    unsigned int mn = 0;
    if (!EVP_Digest(p, n, md, &mn, EVP_sha256(), NULL) || mn != 32)
        kv_oom(0); /* libcrypto cannot fail here but by running out of memory */
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static long pw_find(const struct acl_user *u, const char *hex)
{
    for (size_t i = 0; i < u->npw; i++)
        if (!memcmp(u->pw[i], hex, 64))
            return (long)i;
    return -1;
}

static void pw_add(struct acl_user *u, const char *hex)
{
    if (pw_find(u, hex) >= 0)
        return;
    u->pw = kv_xrealloc(u->pw, (u->npw + 1) * sizeof *u->pw);
    memcpy(u->pw[u->npw], hex, 64);
    u->pw[u->npw][64] = '\0';
    u->npw++;
}

static bool pw_del(struct acl_user *u, const char *hex)
{
    long i = pw_find(u, hex);
    if (i < 0)
        return false;
    memmove(u->pw[i], u->pw[i + 1], (u->npw - (size_t)i - 1) * sizeof *u->pw);
    u->npw--;
    return true;
}

static bool valid_hash(const char *p, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

static void clear_selectors(struct acl_user *u)
{
    for (size_t i = 1; i < u->nsel; i++)
        sel_free(&u->sel[i]);
    u->nsel = 1;
}

static int user_op(struct acl_user *u, const char *op, size_t n);

/* "(rule rule ...)": a new selector. */
static int add_selector(struct acl_user *u, const char *op, size_t n)
{
    struct acl_sel s;
    sel_init(&s);
    s.allchans = pubsub_all; /* acl-pubsub-default, as for a new user */
    int rc = 0;
    const char *p = op + 1, *end = op + n - 1;
    while (p < end && !rc) {
        while (p < end && *p == ' ')
            p++;
        const char *e = p;
        while (e < end && *e != ' ')
            e++;
        if (e > p)
            rc = sel_op(&s, p, (size_t)(e - p));
        p = e;
    }
    if (rc) {
        sel_free(&s);
        return rc;
    }
    u->sel = kv_xrealloc(u->sel, (u->nsel + 1) * sizeof *u->sel);
    u->sel[u->nsel++] = s;
    return 0;
}

static int user_op(struct acl_user *u, const char *op, size_t n)
{
    char hex[65];
    if (op_is(op, n, "on")) {
        u->on = true;
    } else if (op_is(op, n, "off")) {
        u->on = false;
    } else if (op_is(op, n, "skip-sanitize-payload")) {
        u->skip_sanitize = true;
        u->sanitize = false;
    } else if (op_is(op, n, "sanitize-payload")) {
        u->sanitize = true;
        u->skip_sanitize = false;
    } else if (op_is(op, n, "nopass")) {
        u->nopass = true;
        u->npw = 0;
    } else if (op_is(op, n, "resetpass")) {
        u->nopass = false;
        u->npw = 0;
    } else if (n && (op[0] == '>' || op[0] == '<')) {
        sha256_hex(op + 1, n - 1, hex);
        if (op[0] == '>') {
            pw_add(u, hex);
            u->nopass = false;
        } else if (!pw_del(u, hex)) {
            return ENODEV;
        }
    } else if (n && (op[0] == '#' || op[0] == '!')) {
        if (!valid_hash(op + 1, n - 1))
            return EBADMSG;
        memcpy(hex, op + 1, 64);
        hex[64] = '\0';
        if (op[0] == '#') {
            pw_add(u, hex);
            u->nopass = false;
        } else if (!pw_del(u, hex)) {
            return ENODEV;
        }
    } else if (n >= 2 && op[0] == '(' && op[n - 1] == ')') {
        return add_selector(u, op, n);
    } else if (op_is(op, n, "clearselectors")) {
        clear_selectors(u);
    } else if (op_is(op, n, "reset")) {
        static const char *const r[] = {"resetpass",      "resetkeys", "resetchannels",   "off",
                                        "clearselectors", "-@all",     "sanitize-payload"};
        for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
            user_op(u, r[i], strlen(r[i]));
        if (pubsub_all)
            user_op(u, "allchannels", 11);
    } else {
        return sel_op(&u->sel[0], op, n);
    }
    return 0;
}

static const char *op_error(int e)
{
    switch (e) {
    case ENOENT:
        return "Unknown command or category name in ACL";
    case EEXIST:
        return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and "
               "does not have any effect. Try 'resetkeys' to start with an empty list of patterns";
    case EISDIR:
        return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid "
               "and does not have any effect. Try 'resetchannels' to start with an empty list of "
               "channels";
    case ENODEV:
        return "The password you are trying to remove from the user does not exist";
    case EBADMSG:
        return "The password hash must be exactly 64 characters and contain only lowercase "
               "hexadecimal characters";
    default:
        return "Syntax error";
    }
}

/* Inserts u into set (n users), kept sorted by name as Redis lists them. */
static void set_insert(struct acl_user ***set, size_t *n, struct acl_user *u)
{
    size_t i = 0;
    while (i < *n) {
        const struct acl_user *v = (*set)[i];
        int c = memcmp(v->name, u->name, v->nn < u->nn ? v->nn : u->nn);
        if (c > 0 || (c == 0 && v->nn > u->nn))
            break;
        i++;
    }
    *set = kv_xrealloc(*set, (*n + 1) * sizeof **set);
    memmove(*set + i + 1, *set + i, (*n - i) * sizeof **set);
    (*set)[i] = u;
    (*n)++;
}

static long set_find(struct acl_user *const *set, size_t n, const char *name, size_t nn)
{
    for (size_t i = 0; i < n; i++)
        if (set[i]->nn == nn && !memcmp(set[i]->name, name, nn))
            return (long)i;
    return -1;
}

static long user_index(const char *name, size_t nn)
{
    return set_find(users, nusers, name, nn);
}

struct acl_user *acl_find(const char *name, size_t n)
{
    long i = user_index(name, n);
    return i < 0 ? NULL : users[i];
}

/* Applies ops to u. 0, or -1 with the reason in err: for SETUSER (file
 * NULL) as its error reply says it, else as ACL LOAD does for line lineno
 * of file. */
static int user_apply(struct acl_user *u, const struct db_str *ops, size_t nops, const char *file,
                      int lineno, char *err, size_t cap)
{
    /* A selector may span arguments: "(+get" "~k*)" is one. */
    char *merged = NULL;
    for (size_t i = 0; i < nops; i++) {
        const char *op = ops[i].p;
        size_t n = ops[i].n;
        size_t j = i;
        if (n && op[0] == '(' && op[n - 1] != ')') {
            size_t len = n;
            while (++j < nops) {
                len += 1 + ops[j].n;
                if (ops[j].n && ops[j].p[ops[j].n - 1] == ')')
                    break;
            }
            if (j == nops) {
                if (file)
                    snprintf(err, cap, "%s:%d: Unmatched parenthesis in selector definition.", file,
                             lineno);
                else
                    snprintf(err, cap,
                             "ERR Unmatched parenthesis in acl selector starting at '%.*s'.",
                             (int)n, op);
                return -1;
            }
            merged = kv_xmalloc(len + 1);
            size_t at = 0;
            for (size_t k = i; k <= j; k++) {
                if (k > i)
                    merged[at++] = ' ';
                memcpy(merged + at, ops[k].p, ops[k].n);
                at += ops[k].n;
            }
            op = merged;
            n = at;
        }
        int e = user_op(u, op, n);
        if (e) {
            if (file)
                snprintf(err, cap, "%s:%d: Error in applying operation '%.*s': %s. ", file, lineno,
                         (int)n, op, op_error(e));
            else
                snprintf(err, cap, "ERR Error in ACL SETUSER modifier '%.*s': %s", (int)n, op,
                         op_error(e));
            free(merged);
            return -1;
        }
        free(merged);
        merged = NULL;
        i = j;
    }
    return 0;
}

/* A user as a new one starts: off, no password, key or channel, -@all. */
static struct acl_user *user_fresh(const char *name, size_t nn)
{
    struct acl_user *u = user_new(name, nn);
    user_op(u, pubsub_all ? "allchannels" : "resetchannels", pubsub_all ? 11 : 13);
    return u;
}

void acl_set_pubsub_default(bool all)
{
    pubsub_all = all;
}

int acl_setuser(const char *name, size_t nn, const struct db_str *ops, size_t nops, char *err,
                size_t cap)
{
    if (has_space(name, nn)) {
        snprintf(err, cap, "ERR Usernames can't contain spaces or null characters");
        return -1;
    }
    struct acl_user *old = acl_find(name, nn);
    struct acl_user *u = old ? user_dup(old) : user_fresh(name, nn);
    if (user_apply(u, ops, nops, NULL, 0, err, cap)) {
        user_free(u);
        return -1;
    }
    if (old)
        user_replace(old, u);
    else
        set_insert(&users, &nusers, u);
    return 0;
}

static void default_rules(struct acl_user *u)
{
    static const char *const r[] = {"on", "nopass", "~*", "&*", "+@all"};
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        user_op(u, r[i], strlen(r[i]));
}

int acl_load_file(const char *path, void (*drop)(struct acl_user *u, void *arg), void *arg,
                  char *err, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, cap, "Error loading ACLs, opening file '%s': %s", path, strerror(errno));
        return -1;
    }
    struct acl_user **set = NULL;
    size_t n = 0;
    struct sb errs = {0};
    struct resp_req r;
    resp_req_init(&r);
    char *line = NULL, msg[1024];
    size_t lcap = 0;
    ssize_t len;
    int lineno = 0;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        char *p = line;
        while (len > 0 && strchr(" \t\r\n", p[len - 1]))
            p[--len] = '\0';
        while (len > 0 && strchr(" \t\r\n", *p)) {
            p++;
            len--;
        }
        if (len == 0)
            continue;
        if (resp_split(&r, p, (size_t)len) != 0) {
            snprintf(msg, sizeof msg, "%s:%d: Syntax error. ", path, lineno);
            sb_add(&errs, msg, strlen(msg));
            continue;
        }
        size_t argc = r.argc;
        struct db_str *av = kv_xmalloc((argc ? argc : 1) * sizeof *av);
        for (size_t i = 0; i < argc; i++)
            av[i].p = resp_req_arg(&r, NULL, i, &av[i].n);
        if (argc < 2 || !(av[0].n == 4 && !memcmp(av[0].p, "user", 4))) {
            snprintf(msg, sizeof msg,
                     "%s:%d should start with user keyword followed by the username. ", path,
                     lineno);
            sb_add(&errs, msg, strlen(msg));
        } else if (set_find(set, n, av[1].p, av[1].n) >= 0) {
            snprintf(msg, sizeof msg, "WARNING: Duplicate user '%.*s' found on line %d. ",
                     (int)av[1].n, av[1].p, lineno);
            sb_add(&errs, msg, strlen(msg));
        } else {
            struct acl_user *u = user_fresh(av[1].p, av[1].n);
            if (user_apply(u, av + 2, argc - 2, path, lineno, msg, sizeof msg)) {
                sb_add(&errs, msg, strlen(msg));
                user_free(u);
            } else {
                set_insert(&set, &n, u);
            }
        }
        free(av);
    }
    free(line);
    resp_req_free(&r);
    if (ferror(f)) { /* not the end: a read failed */
        snprintf(msg, sizeof msg, "Error loading ACLs, reading file '%s': %s. ", path,
                 strerror(errno));
        sb_add(&errs, msg, strlen(msg));
    }
    fclose(f);
    if (errs.n) {
        snprintf(err, cap,
                 "%sWARNING: ACL errors detected, no change to the previously active ACL rules "
                 "was performed",
                 errs.p);
        free(errs.p);
        for (size_t i = 0; i < n; i++)
            user_free(set[i]);
        free(set);
        return -1;
    }
    /* The default user keeps its address (connections point at it) and
     * takes the file's rules, or a new default user's. */
    long d = set_find(set, n, "default", 7);
    if (d < 0) {
        struct acl_user *u = user_new("default", 7);
        default_rules(u);
        set_insert(&set, &n, u);
        d = set_find(set, n, "default", 7);
    }
    user_replace(dflt, set[d]);
    set[d] = dflt;
    /* Every other user goes, with its connections, as in Redis. */
    for (size_t i = 0; i < nusers; i++) {
        if (users[i] == dflt)
            continue;
        if (drop)
            drop(users[i], arg);
        user_free(users[i]);
    }
    free(users);
    users = set;
    nusers = n;
    return 0;
}

int acl_save_file(const char *path, char *err, size_t cap)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    bool ok = f != NULL;
    for (size_t i = 0; ok && i < nusers; i++) {
        char *line = acl_user_line(users[i]);
        ok = fprintf(f, "%s\n", line) > 0;
        free(line);
    }
    if (f) {
        ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
        ok = (fclose(f) == 0) && ok;
    }
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        snprintf(err, cap, "%s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int acl_apply_lines(char ***lines, const size_t *argcs, size_t n, char *err, size_t cap)
{
    for (size_t i = 0; i < n; i++) {
        struct db_str *av = kv_xmalloc(argcs[i] * sizeof *av);
        for (size_t j = 0; j < argcs[i]; j++)
            av[j] = (struct db_str){lines[i][j], strlen(lines[i][j])};
        char msg[1024];
        if (!strcmp(lines[i][0], "default"))
            user_op(dflt, "reset", 5); /* the line says all of it */
        int rc = acl_setuser(av[0].p, av[0].n, av + 1, argcs[i] - 1, msg, sizeof msg);
        free(av);
        if (rc) {
            snprintf(err, cap, "Error in user declaration '%s': %s", lines[i][0],
                     msg + (strncmp(msg, "ERR ", 4) ? 0 : 4));
            return -1;
        }
    }
    return 0;
}

bool acl_deluser(const char *name, size_t nn)
{
    long i = user_index(name, nn);
    if (i < 0 || users[i] == dflt)
        return false;
    user_free(users[i]);
    memmove(users + i, users + i + 1, (nusers - (size_t)i - 1) * sizeof *users);
    nusers--;
    return true;
}

void acl_init(void)
{
    if (!U.n)
        universe_init();
    dflt = user_new("default", 7);
    default_rules(dflt);
    set_insert(&users, &nusers, dflt);
}

void acl_destroy(void)
{
    for (size_t i = 0; i < nusers; i++)
        user_free(users[i]);
    free(users);
    users = NULL;
    nusers = 0;
    dflt = NULL;
    free(last_requirepass);
    last_requirepass = NULL;
}

struct acl_user *acl_default(void)
{
    return dflt;
}

const char *acl_name(const struct acl_user *u)
{
    return u->name;
}

bool acl_default_nopass(void)
{
    return dflt->nopass;
}

struct acl_user *acl_nobody(void)
{
    static struct acl_user *nobody;
    if (!nobody) /* off, no password, no key, no command: allowed nothing */
        nobody = user_new("", 0);
    return nobody;
}

bool acl_auth_required(void)
{
    return !dflt->nopass || !dflt->on;
}

void acl_requirepass(const char *pass)
{
    const char *now = pass ? pass : "";
    if (last_requirepass && !strcmp(last_requirepass, now))
        return;
    free(last_requirepass);
    last_requirepass = strdup(now);
    user_op(dflt, "resetpass", 9);
    if (*now) {
        size_t n = strlen(now);
        char *op = kv_xmalloc(n + 1);
        op[0] = '>';
        memcpy(op + 1, now, n);
        user_op(dflt, op, n + 1);
        free(op);
    } else {
        user_op(dflt, "nopass", 6);
    }
}

struct acl_user *acl_authenticate(const char *name, size_t nn, const char *pass, size_t pn)
{
    struct acl_user *u = acl_find(name, nn);
    if (!u || !u->on)
        return NULL;
    if (u->nopass)
        return u;
    char hex[65];
    sha256_hex(pass, pn, hex);
    /* Every stored hash is compared, whatever matched, so that the time
     * taken says nothing about which. */
    unsigned ok = 0;
    for (size_t i = 0; i < u->npw; i++) {
        unsigned d = 0;
        for (int j = 0; j < 64; j++)
            d |= (unsigned)(u->pw[i][j] ^ hex[j]);
        ok |= d == 0;
    }
    return ok ? u : NULL;
}

/* ---- the check ---- */

static bool pat_match(const struct acl_pat *p, const char *s, size_t n)
{
    return db_glob_match(p->p, p->n, s, n, 0);
}

static int check_key(const struct acl_sel *s, const char *k, size_t kn, uint32_t kflags)
{
    unsigned need = 0;
    if (kflags & CMD_KEY_ACCESS)
        need |= ACL_R;
    if (kflags & (CMD_KEY_INSERT | CMD_KEY_DELETE | CMD_KEY_UPDATE))
        need |= ACL_W;
    for (size_t i = 0; i < s->nkeys; i++)
        if ((s->keys[i].flags & need) == need && pat_match(&s->keys[i], k, kn))
            return ACL_OK;
    return ACL_DENIED_KEY;
}

/* A channel against the selector's patterns: a pattern subscription must
 * name one of them exactly, a channel match one. */
static int check_channel(const struct acl_sel *s, const char *ch, size_t n, bool is_pattern)
{
    for (size_t i = 0; i < s->nchans; i++) {
        const struct acl_pat *p = &s->chans[i];
        if (is_pattern ? (p->n == n && !memcmp(p->p, ch, n)) : pat_match(p, ch, n))
            return ACL_OK;
    }
    return ACL_DENIED_CHANNEL;
}

/* The channels a command publishes to or subscribes to: arguments from
 * *first to *last; pattern: they are patterns. False for none. */
static bool channels_of(const struct cmd *k, size_t argc, size_t *first, size_t *last,
                        bool *pattern)
{
    *pattern = false;
    if (!strcmp(k->name, "publish") || !strcmp(k->name, "spublish")) {
        *first = *last = 1;
        return argc > 1;
    }
    if (!strcmp(k->name, "subscribe") || !strcmp(k->name, "ssubscribe") ||
        !strcmp(k->name, "psubscribe")) {
        *pattern = k->name[0] == 'p';
        *first = 1;
        *last = argc - 1;
        return argc > 1;
    }
    return false;
}

static int check_sel(const struct acl_sel *s, const struct cmd *k, long id,
                     const struct db_str *argv, size_t argc, const struct cmd_keyref *keys,
                     int nkeys, size_t *errpos)
{
    if (!s->allcmds && !(k->flags & CMD_NOAUTH) && id != U.attach && !bit_get(s, (size_t)id)) {
        bool ok = false;
        if (id < (long)U.ncmd && argc > 1)
            for (size_t i = 0; i < s->nfa[id] && !ok; i++)
                ok = strlen(s->fa[id][i]) == argv[1].n &&
                     !strncasecmp(s->fa[id][i], argv[1].p, argv[1].n);
        if (!ok)
            return ACL_DENIED_CMD;
    }
    if (!s->allkeys) {
        for (int i = 0; i < nkeys; i++) {
            const struct db_str *a = &argv[keys[i].pos];
            if (check_key(s, a->p, a->n, keys[i].flags) != ACL_OK) {
                *errpos = keys[i].pos;
                return ACL_DENIED_KEY;
            }
        }
    }
    size_t first, last;
    bool pattern;
    if (!s->allchans && channels_of(k, argc, &first, &last, &pattern)) {
        for (size_t i = first; i <= last; i++) {
            if (check_channel(s, argv[i].p, argv[i].n, pattern) != ACL_OK) {
                *errpos = i;
                return ACL_DENIED_CHANNEL;
            }
        }
    }
    return ACL_OK;
}

/* The keys of a command line (a malloc'd array in *keys); none outside
 * the arity, where key positions mean nothing (redis.acl_check_cmd does
 * not check it). */
static int keys_of(const struct cmd *cmd, long sub, const struct db_str *argv, size_t argc,
                   struct cmd_keyref **keys)
{
    *keys = kv_xmalloc((argc ? argc : 1) * CMD_KEYSPECS_MAX * sizeof **keys);
    int arity = sub >= 0 ? cmd_sub_at((size_t)sub)->arity : cmd->arity;
    bool fits = arity > 0 ? argc == (size_t)arity : argc >= (size_t)-arity;
    int n = fits ? cmd_getkeyrefs(cmd, argv, argc, *keys) : 0, kept = 0;
    for (int k = 0; k < n; k++)
        if ((*keys)[k].pos < argc)
            (*keys)[kept++] = (*keys)[k];
    return kept;
}

static bool sel_reads_all(const struct acl_sel *s);

bool acl_unrestricted_read(const struct acl_user *u, const struct cmd *cmd, long sub,
                           const struct db_str *argv, size_t argc)
{
    if (!u)
        return true;
    long id = sub >= 0 ? (long)U.ncmd + sub : (long)(cmd - cmd_at(0));
    struct cmd_keyref *keys;
    int nkeys = keys_of(cmd, sub, argv, argc, &keys);
    bool ok = false;
    for (size_t i = 0; i < u->nsel && !ok; i++) {
        size_t pos;
        ok = sel_reads_all(&u->sel[i]) &&
             check_sel(&u->sel[i], cmd, id, argv, argc, keys, nkeys, &pos) == ACL_OK;
    }
    free(keys);
    return ok;
}

int acl_check(const struct acl_user *u, const struct cmd *cmd, long sub, const struct db_str *argv,
              size_t argc, size_t *errpos)
{
    if (!u)
        return ACL_OK;
    long id = sub >= 0 ? (long)U.ncmd + sub : (long)(cmd - cmd_at(0));
    struct cmd_keyref *keys = NULL;
    int nkeys = -1;
    int worst = ACL_DENIED_CMD;
    size_t worst_pos = 0;
    int rc = worst;
    for (size_t i = 0; i < u->nsel; i++) {
        const struct acl_sel *s = &u->sel[i];
        if (nkeys < 0 && !s->allkeys)
            nkeys = keys_of(cmd, sub, argv, argc, &keys);
        size_t pos = 0;
        rc = check_sel(s, cmd, id, argv, argc, keys, nkeys < 0 ? 0 : nkeys, &pos);
        if (rc == ACL_OK)
            break;
        /* No selector allows it: report the command if none could run it,
         * else the last key or channel none could match. */
        if (rc > worst || (rc == worst && pos > worst_pos)) {
            worst = rc;
            worst_pos = pos;
        }
    }
    free(keys);
    if (rc == ACL_OK)
        return ACL_OK;
    *errpos = worst_pos;
    return worst;
}

bool acl_channel_allowed(const struct acl_user *u, const char *ch, size_t n, bool pattern)
{
    for (size_t i = 0; i < u->nsel; i++)
        if (u->sel[i].allchans || check_channel(&u->sel[i], ch, n, pattern) == ACL_OK)
            return true;
    return false;
}

static bool sel_reads_all(const struct acl_sel *s)
{
    if (s->allkeys)
        return true;
    for (size_t i = 0; i < s->nkeys; i++)
        if ((s->keys[i].flags & ACL_R) && s->keys[i].n == 1 && s->keys[i].p[0] == '*')
            return true;
    return false;
}

bool acl_reads_everything(const struct acl_user *u, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        long id = cmd_id(names[i], strlen(names[i]));
        bool ok = false;
        for (size_t j = 0; j < u->nsel && !ok; j++) {
            const struct acl_sel *s = &u->sel[j];
            ok = (s->allcmds || (id >= 0 && bit_get(s, (size_t)id))) && sel_reads_all(s);
        }
        if (!ok)
            return false;
    }
    return true;
}

/* ---- descriptions ---- */

/* How many commands of category cat the bits have and lack. */
static void count_cat(const struct acl_sel *s, size_t cat, size_t *on, size_t *off)
{
    *on = *off = 0;
    for (size_t id = 0; id < U.n; id++) {
        if (!(U.cats[id] & (1u << cat)))
            continue;
        if (bit_get(s, id))
            (*on)++;
        else
            (*off)++;
    }
}

static void describe_commands(const struct acl_sel *s, struct sb *b)
{
    struct acl_sel fake, temp;
    sel_init(&fake);
    sel_init(&temp);
    bool additive = !s->future;
    set_all(&fake, !additive);
    sb_word(b, additive ? "-@all" : "+@all");
    /* The categories that fit best, one at a time: the fewest commands in
     * them the user differs on, then the most the user agrees on. */
    memcpy(temp.bits, s->bits, U.words * sizeof *temp.bits);
    bool applied[NCATS] = {false};
    for (;;) {
        long best = -1;
        size_t mindiff = SIZE_MAX, maxsame = 0;
        for (size_t j = 0; j < NCATS; j++) {
            if (applied[j])
                continue;
            size_t on, off;
            count_cat(&temp, j, &on, &off);
            size_t diff = additive ? off : on, same = additive ? on : off;
            if (same > diff && (diff < mindiff || (diff == mindiff && same > maxsame))) {
                best = (long)j;
                mindiff = diff;
                maxsame = same;
            }
        }
        if (best < 0)
            break;
        set_cat(&fake, (size_t)best, additive);
        set_cat(&temp, (size_t)best, !additive);
        char w[32];
        snprintf(w, sizeof w, "%s@%s", additive ? "+" : "-", cat_names[best]);
        sb_word(b, w);
        applied[best] = true;
    }
    /* Then each command, subcommand and first argument that still differs. */
    char w[160];
    for (size_t id = 0; id < U.ncmd; id++) {
        bool ub = bit_get(s, id);
        if (ub != bit_get(&fake, id)) {
            snprintf(w, sizeof w, "%c%s", ub ? '+' : '-', U.name[id]);
            sb_word(b, w);
            change_perm(&fake, id, ub);
        }
        for (size_t j = U.subfrom[id]; j < U.subto[id]; j++) {
            bool sb_ = bit_get(s, j);
            if (sb_ != bit_get(&fake, j)) {
                snprintf(w, sizeof w, "%c%s", sb_ ? '+' : '-', U.name[j]);
                sb_word(b, w);
                bit_set(&fake, j, sb_);
            }
        }
        for (size_t i = 0; i < s->nfa[id]; i++) {
            snprintf(w, sizeof w, "+%s|", U.name[id]);
            sb_word(b, w);
            sb_add(b, s->fa[id][i], strlen(s->fa[id][i])); /* whatever its length */
        }
    }
    sel_free(&fake);
    sel_free(&temp);
}

static void describe_keys(const struct acl_sel *s, struct sb *b)
{
    if (s->allkeys) {
        sb_word(b, "~*");
        return;
    }
    for (size_t i = 0; i < s->nkeys; i++) {
        const struct acl_pat *p = &s->keys[i];
        const char *pre = p->flags == (ACL_R | ACL_W) ? "~" : p->flags == ACL_R ? "%R~" : "%W~";
        if (b->n)
            sb_add(b, " ", 1);
        sb_add(b, pre, strlen(pre));
        sb_add(b, p->p, p->n);
    }
}

static void describe_channels(const struct acl_sel *s, struct sb *b)
{
    if (s->allchans) {
        sb_word(b, "&*");
        return;
    }
    for (size_t i = 0; i < s->nchans; i++) {
        if (b->n)
            sb_add(b, " ", 1);
        sb_add(b, "&", 1);
        sb_add(b, s->chans[i].p, s->chans[i].n);
    }
}

/* A selector as ACL LIST gives it: keys, channels, commands. */
static void describe_sel(const struct acl_sel *s, struct sb *b)
{
    describe_keys(s, b);
    if (!s->allchans)
        sb_word(b, "resetchannels");
    describe_channels(s, b);
    describe_commands(s, b);
}

size_t acl_flags(const struct acl_user *u, const char **out)
{
    size_t n = 0;
    out[n++] = u->on ? "on" : "off";
    if (u->nopass)
        out[n++] = "nopass";
    if (u->skip_sanitize)
        out[n++] = "skip-sanitize-payload";
    if (u->sanitize)
        out[n++] = "sanitize-payload";
    return n;
}

static char *acl_describe(const struct acl_user *u)
{
    struct sb b = {0};
    const char *f[4];
    size_t nf = acl_flags(u, f);
    for (size_t i = 0; i < nf; i++)
        sb_word(&b, f[i]);
    for (size_t i = 0; i < u->npw; i++) {
        char w[66];
        snprintf(w, sizeof w, "#%s", u->pw[i]);
        sb_word(&b, w);
    }
    describe_sel(&u->sel[0], &b);
    for (size_t i = 1; i < u->nsel; i++) {
        struct sb s = {0};
        describe_sel(&u->sel[i], &s);
        char *t = sb_take(&s);
        if (b.n)
            sb_add(&b, " ", 1);
        sb_add(&b, "(", 1);
        sb_add(&b, t, strlen(t));
        sb_add(&b, ")", 1);
        free(t);
    }
    return sb_take(&b);
}

char *acl_user_line(const struct acl_user *u)
{
    char *d = acl_describe(u);
    size_t len = strlen(d) + u->nn + 7;
    char *line = kv_xmalloc(len);
    snprintf(line, len, "user %s %s", u->name, d);
    free(d);
    return line;
}

const struct acl_user **acl_users(size_t *n)
{
    *n = nusers;
    return (const struct acl_user **)users;
}

size_t acl_npasswords(const struct acl_user *u)
{
    return u->npw;
}

const char *acl_password(const struct acl_user *u, size_t i)
{
    return u->pw[i];
}

size_t acl_nselectors(const struct acl_user *u)
{
    return u->nsel;
}

char *acl_sel_commands(const struct acl_user *u, size_t i)
{
    struct sb b = {0};
    describe_commands(&u->sel[i], &b);
    return sb_take(&b);
}

char *acl_sel_keys(const struct acl_user *u, size_t i)
{
    struct sb b = {0};
    describe_keys(&u->sel[i], &b);
    return sb_take(&b);
}

char *acl_sel_channels(const struct acl_user *u, size_t i)
{
    struct sb b = {0};
    describe_channels(&u->sel[i], &b);
    return sb_take(&b);
}
