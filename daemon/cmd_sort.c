/*
 * cmd_sort — SORT and SORT_RO: the elements of a list, set or sorted set,
 * ordered as numbers or as bytes (ALPHA), by themselves or by values that a
 * BY pattern names, then each one's values through GET patterns, returned
 * or stored as a list (STORE).
 *
 * A pattern names a key by its first '*', replaced with the element, and a
 * hash field by what follows a "->" after it ("weight_*->f"); "#" in GET is
 * the element itself. ALPHA compares bytes, as Redis does in the C locale.
 */
#include "acl.h"
#include "cmd.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>

#include "kv_mem.h"

struct sort_item {
    const char *p; /* the element, in the loaded vec */
    size_t n;
    double score; /* numeric order */
    char *by;     /* ALPHA with BY: the value compared; NULL when none */
    size_t byn;
};

static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* qsort has no context argument: the order being applied. */
static struct {
    bool desc, alpha, by;
} order;

/* Numbers, ties broken by the elements' bytes; or bytes of the BY values
 * (none first) or of the elements. */
static int item_cmp(const void *x, const void *y)
{
    const struct sort_item *a = x, *b = y;
    int c;
    if (!order.alpha)
        c = a->score > b->score ? 1 : a->score < b->score ? -1 : bytes_cmp(a->p, a->n, b->p, b->n);
    else if (order.by)
        c = !a->by || !b->by ? (a->by != NULL) - (b->by != NULL)
                             : bytes_cmp(a->by, a->byn, b->by, b->byn);
    else
        c = bytes_cmp(a->p, a->n, b->p, b->n);
    return order.desc ? -c : c;
}

/* The value pattern names for element e, malloc'd into *v; false when it
 * names none (no '*', an absent key, a key of another type, a missing
 * field). */
static bool lookup(struct conn *c, const struct db_str *pat, const char *e, size_t en, char **v,
                   size_t *vn)
{
    if (pat->n == 1 && pat->p[0] == '#') {
        *v = kv_xmemdup(e, en);
        *vn = en;
        return true;
    }
    const char *star = memchr(pat->p, '*', pat->n), *end = pat->p + pat->n, *arrow = NULL;
    if (!star)
        return false;
    for (const char *q = star + 1; q + 1 < end && !arrow; q++)
        if (q[0] == '-' && q[1] == '>')
            arrow = q;
    if (arrow && arrow + 2 == end)
        arrow = NULL; /* "->" with no field name is part of the key */
    const char *post_end = arrow ? arrow : end;
    size_t pre = (size_t)(star - pat->p), post = (size_t)(post_end - star - 1);
    char *key = kv_xmalloc(pre + en + post + 1);
    memcpy(key, pat->p, pre);
    memcpy(key + pre, e, en);
    memcpy(key + pre + en, star + 1, post);
    size_t kn = pre + en + post;
    int rc = arrow ? db_hget(srv.db, c->db, key, kn, arrow + 2, (size_t)(end - arrow - 2), v, vn)
                   : db_get(srv.db, c->db, key, kn, v, vn);
    free(key);
    return rc == 0;
}

/* A weight as Redis reads one: strtod over the whole text (up to a NUL);
 * "" is 0. False if it is not a number. */
static bool weight(const char *p, size_t n, double *out)
{
    char *s = kv_xmalloc(n + 1), *endp;
    memcpy(s, p, n);
    s[n] = 0;
    errno = 0;
    *out = strtod(s, &endp);
    bool ok = *endp == 0 && errno != ERANGE && !isnan(*out);
    free(s);
    return ok;
}

size_t cmd_sort_store_key(const struct db_str *argv, size_t argc)
{
    size_t key = 0;
    for (size_t i = 2; i < argc; i++) {
        const struct db_str *a = &argv[i];
        if (a->n == 5 && !strncasecmp(a->p, "limit", 5))
            i += 2;
        else if ((a->n == 3 && !strncasecmp(a->p, "get", 3)) ||
                 (a->n == 2 && !strncasecmp(a->p, "by", 2)))
            i += 1;
        else if (a->n == 5 && !strncasecmp(a->p, "store", 5) && i + 1 < argc)
            key = ++i; /* the last STORE counts */
    }
    return key;
}

/* SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
 *      [ALPHA] [STORE destination]; SORT_RO has no STORE. */
static void sort_generic(struct conn *c, bool readonly)
{
    bool desc = false, alpha = false, dontsort = false;
    int64_t lstart = 0, lcount = -1;
    const struct db_str *by = NULL, *store = NULL;
    const struct db_str **gets = kv_xmalloc(c->argc * sizeof *gets);
    size_t ngets = 0;
    /* BY and GET read keys that no key spec names: only for a user who may
     * read every key. */
    const struct cmd *self = cmd_lookup(c->argv[0].p, c->argv[0].n);
    bool all_keys = acl_unrestricted_read(c->user, self, -1, c->argv, c->argc);
    for (size_t j = 2; j < c->argc; j++) {
        size_t left = c->argc - j - 1;
        if (cmd_arg_is(c, j, "asc")) {
            desc = false;
        } else if (cmd_arg_is(c, j, "desc")) {
            desc = true;
        } else if (cmd_arg_is(c, j, "alpha")) {
            alpha = true;
        } else if (cmd_arg_is(c, j, "limit") && left >= 2) {
            if (!cmd_arg_ll(c, j + 1, &lstart) || !cmd_arg_ll(c, j + 2, &lcount))
                goto out;
            j += 2;
        } else if (cmd_arg_is(c, j, "store") && left >= 1 && !readonly) {
            store = &c->argv[++j];
        } else if (cmd_arg_is(c, j, "by") && left >= 1) {
            by = &c->argv[++j];
            dontsort = memchr(by->p, '*', by->n) == NULL; /* a constant: no order */
            if (!dontsort && !all_keys) {
                resp_error(OUT(c), "ERR BY option of SORT denied due to insufficient ACL "
                                   "permissions.");
                goto out;
            }
        } else if (cmd_arg_is(c, j, "get") && left >= 1) {
            if (!all_keys) {
                resp_error(OUT(c), "ERR GET option of SORT denied due to insufficient ACL "
                                   "permissions.");
                goto out;
            }
            gets[ngets++] = &c->argv[++j];
        } else {
            cmd_reply_syntax(c);
            goto out;
        }
    }
    int type;
    int rc = db_type(srv.db, c->db, CMD_ARG(1), &type);
    if (rc == 0 && type != ENC_TYPE_NONE && type != ENC_TYPE_LIST && type != ENC_TYPE_SET &&
        type != ENC_TYPE_ZSET)
        rc = KV_EWRONGTYPE;
    if (rc) {
        cmd_reply_err(c, rc);
        goto out;
    }
    /* A stored set is sorted even without an order, so what is stored does
     * not depend on how the set happens to be kept. */
    if (dontsort && type == ENC_TYPE_SET && store) {
        dontsort = false;
        alpha = true;
        by = NULL;
    }
    struct db_vec v;
    db_vec_init(&v);
    uint64_t f, m; /* the key was looked up once, by db_type */
    db_lookups(srv.db, &f, &m);
    if (type == ENC_TYPE_LIST) {
        rc = db_lrange(srv.db, c->db, CMD_ARG(1), 0, -1, &v);
    } else if (type == ENC_TYPE_SET) {
        rc = db_smembers(srv.db, c->db, CMD_ARG(1), &v);
    } else if (type == ENC_TYPE_ZSET) {
        struct db_zspec sp;
        memset(&sp, 0, sizeof sp);
        sp.by = DB_ZBY_RANK;
        sp.stop = -1;
        sp.limit = -1;
        rc = db_zrange(srv.db, c->db, CMD_ARG(1), &sp, &v);
    }
    db_lookups_rewind(srv.db, f, m);
    if (rc) {
        cmd_reply_err(c, rc);
        db_vec_destroy(&v);
        goto out;
    }
    size_t n = v.n;
    struct sort_item *it = calloc(n ? n : 1, sizeof *it);
    if (!it)
        kv_oom(n * sizeof *it);
    bool bad = false;
    for (size_t i = 0; i < n; i++) {
        it[i].p = db_vec_ptr(&v, i);
        it[i].n = db_vec_len(&v, i);
        if (dontsort)
            continue;
        char *w = NULL;
        size_t wn = 0;
        bool have = by ? lookup(c, by, it[i].p, it[i].n, &w, &wn) : false;
        if (alpha && have) {
            it[i].by = w;
            it[i].byn = wn;
            continue;
        }
        if (!alpha && (by ? have : true) &&
            !weight(by ? w : it[i].p, by ? wn : it[i].n, &it[i].score))
            bad = true;
        free(w);
    }
    if (dontsort && desc && type != ENC_TYPE_SET) {
        /* Unsorted, a list or sorted set still comes in reverse. */
        for (size_t i = 0; i < n / 2; i++) {
            struct sort_item t = it[i];
            it[i] = it[n - 1 - i];
            it[n - 1 - i] = t;
        }
    }
    if (bad) {
        resp_error(OUT(c), "ERR One or more scores can't be converted into double");
    } else {
        if (!dontsort) {
            order.desc = desc;
            order.alpha = alpha;
            order.by = by != NULL;
            qsort(it, n, sizeof *it, item_cmp);
        }
        /* LIMIT as Redis clamps it. */
        int64_t len = (int64_t)n, start = lstart < 0 ? 0 : lstart;
        int64_t end = lcount < 0 || lcount > len ? len - 1 : start + lcount - 1;
        if (start >= len) {
            start = len - 1;
            end = len - 2;
        }
        if (end >= len)
            end = len - 1;
        size_t outn = end >= start ? (size_t)(end - start + 1) : 0;
        size_t per = ngets ? ngets : 1;
        struct db_vec out;
        db_vec_init(&out);
        for (size_t i = 0; i < outn; i++) {
            const struct sort_item *e = &it[(size_t)start + i];
            if (!ngets)
                db_vec_push(&out, e->p, e->n, 0);
            for (size_t g = 0; g < ngets; g++) {
                char *gv;
                size_t gvn;
                if (lookup(c, gets[g], e->p, e->n, &gv, &gvn)) {
                    db_vec_push(&out, gv, gvn, 0);
                    free(gv);
                } else if (store) {
                    db_vec_push(&out, "", 0, 0); /* a list holds no nil */
                } else {
                    db_vec_push_nil(&out);
                }
            }
        }
        if (store) {
            bool had = cmd_notify_had(c, store);
            rc = db_lstore(srv.db, c->db, store->p, store->n, &out);
            if (rc == 0)
                cmd_notify_store(c, SRV_NOTIFY_LIST, "sortstore", store, outn * per, had);
            cmd_reply_int(c, rc, (int64_t)(outn * per));
        } else {
            cmd_reply_vec(c, &out);
        }
        db_vec_destroy(&out);
    }
    for (size_t i = 0; i < n; i++)
        free(it[i].by);
    free(it);
    db_vec_destroy(&v);
out:
    free(gets);
}

void cmd_sort(struct conn *c)
{
    sort_generic(c, false);
}

void cmd_sort_ro(struct conn *c)
{
    sort_generic(c, true);
}
