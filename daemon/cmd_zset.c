/*
 * cmd_zset — sorted-set commands. The ZRANGE family shares one parser that
 * fills a struct db_zspec, as ZRANGE's own options unify the old commands.
 */
#include "cmd.h"
#include "kv_mem.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Members with scores: flat in RESP2, [member, score] pairs in RESP3. */
static void reply_scored(struct conn *c, const struct db_vec *v, bool withscores)
{
    if (!withscores) {
        cmd_reply_vec(c, v);
        return;
    }
    if (c->proto >= 3) {
        resp_array(OUT(c), v->n);
        for (size_t i = 0; i < v->n; i++) {
            resp_array(OUT(c), 2);
            resp_bulk(OUT(c), db_vec_ptr(v, i), db_vec_len(v, i));
            resp_double(OUT(c), v->items[i].score, 3);
        }
        return;
    }
    resp_array(OUT(c), 2 * v->n);
    for (size_t i = 0; i < v->n; i++) {
        resp_bulk(OUT(c), db_vec_ptr(v, i), db_vec_len(v, i));
        resp_double(OUT(c), v->items[i].score, 2);
    }
}

/* ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...] */
static void zadd_generic(struct conn *c, int flags, size_t at)
{
    for (; at < c->argc; at++) {
        if (cmd_arg_is(c, at, "nx"))
            flags |= DB_ZADD_NX;
        else if (cmd_arg_is(c, at, "xx"))
            flags |= DB_ZADD_XX;
        else if (cmd_arg_is(c, at, "gt"))
            flags |= DB_ZADD_GT;
        else if (cmd_arg_is(c, at, "lt"))
            flags |= DB_ZADD_LT;
        else if (cmd_arg_is(c, at, "ch"))
            flags |= DB_ZADD_CH;
        else if (cmd_arg_is(c, at, "incr"))
            flags |= DB_ZADD_INCR;
        else
            break;
    }
    size_t nel = c->argc - at;
    if (nel == 0 || nel % 2) {
        cmd_reply_syntax(c);
        return;
    }
    if ((flags & DB_ZADD_NX) && (flags & DB_ZADD_XX)) {
        resp_error(OUT(c), "ERR XX and NX options at the same time are not compatible");
        return;
    }
    if (((flags & DB_ZADD_GT) && (flags & DB_ZADD_LT)) ||
        ((flags & DB_ZADD_NX) && (flags & (DB_ZADD_GT | DB_ZADD_LT)))) {
        resp_error(OUT(c), "ERR GT, LT, and/or NX options at the same time are not compatible");
        return;
    }
    if ((flags & DB_ZADD_INCR) && nel > 2) {
        resp_error(OUT(c), "ERR INCR option supports a single increment-element pair");
        return;
    }
    size_t n = nel / 2;
    double *scores = malloc(n * sizeof *scores);
    struct db_str *m = malloc(n * sizeof *m);
    if (!scores || !m)
        abort();
    for (size_t i = 0; i < n; i++) {
        if (!cmd_arg_double(c, at + 2 * i, &scores[i]))
            goto out;
        m[i] = c->argv[at + 2 * i + 1];
    }
    uint64_t count;
    double incr;
    int rc = db_zadd(srv.db, c->db, CMD_ARG(1), scores, m, n, flags, &count, &incr);
    /* db_zadd commits on every path that gets this far: an empty record
     * set means no member was added and no score changed (no event). */
    if (rc >= 0 && db_last_commit_ops(srv.db))
        cmd_notify_arg(c, SRV_NOTIFY_ZSET, (flags & DB_ZADD_INCR) ? "zincr" : "zadd", 1);
    if (rc < 0)
        cmd_reply_err(c, rc);
    else if (!(flags & DB_ZADD_INCR))
        resp_int(OUT(c), (int64_t)count);
    else if (rc)
        resp_double(OUT(c), incr, c->proto);
    else
        resp_null(OUT(c), c->proto);
out:
    free(scores);
    free(m);
}

void cmd_zadd(struct conn *c)
{
    zadd_generic(c, 0, 2);
}

/* ZINCRBY key increment member */
void cmd_zincrby(struct conn *c)
{
    zadd_generic(c, DB_ZADD_INCR, 2);
}

/* ZREM key member [member ...] */
void cmd_zrem(struct conn *c)
{
    uint64_t n;
    int rc = db_zrem(srv.db, c->db, CMD_ARG(1), c->argv + 2, c->argc - 2, &n);
    if (rc == 0 && n) {
        cmd_notify_arg(c, SRV_NOTIFY_ZSET, "zrem", 1);
        cmd_notify_emptied(c, 1);
    }
    cmd_reply_int(c, rc, (int64_t)n);
}

/* ZSCORE key member */
void cmd_zscore(struct conn *c)
{
    double s;
    int rc = db_zscore(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), &s);
    if (rc == KV_ENOTFOUND)
        resp_null(OUT(c), c->proto);
    else if (rc)
        cmd_reply_err(c, rc);
    else
        resp_double(OUT(c), s, c->proto);
}

/* ZMSCORE key member [member ...] */
void cmd_zmscore(struct conn *c)
{
    size_t n = c->argc - 2;
    double *s = kv_xmalloc(n * sizeof *s);
    int rc = db_zmscore(srv.db, c->db, CMD_ARG(1), c->argv + 2, n, s);
    if (rc) {
        cmd_reply_err(c, rc);
    } else {
        resp_array(OUT(c), n);
        for (size_t i = 0; i < n; i++) {
            if (isnan(s[i]))
                resp_null(OUT(c), c->proto);
            else
                resp_double(OUT(c), s[i], c->proto);
        }
    }
    free(s);
}

/* ZCARD key */
void cmd_zcard(struct conn *c)
{
    uint64_t n;
    int rc = db_zcard(srv.db, c->db, CMD_ARG(1), &n);
    cmd_reply_int(c, rc, (int64_t)n);
}

/* ---- range arguments ---- */

/* "(1.5", "-inf", "3": one end of a score range. */
static bool score_bound(const struct db_str *a, double *v, int *ex)
{
    char buf[128];
    size_t off = a->n && a->p[0] == '(';
    size_t n = a->n - off;
    *ex = (int)off;
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, a->p + off, n);
    buf[n] = '\0';
    char *end;
    *v = strtod(buf, &end);
    return end == buf + n && !isnan(*v) && !isspace((unsigned char)buf[0]);
}

/* "-", "+", "[a", "(a": one end of a lex range. */
static bool lex_bound(const struct db_str *a, struct db_lexb *b)
{
    memset(b, 0, sizeof *b);
    if (a->n == 1 && (a->p[0] == '-' || a->p[0] == '+')) {
        b->inf = a->p[0] == '-' ? -1 : 1;
        return true;
    }
    if (a->n >= 1 && (a->p[0] == '(' || a->p[0] == '[')) {
        b->ex = a->p[0] == '(';
        b->v.p = a->p + 1;
        b->v.n = a->n - 1;
        return true;
    }
    return false;
}

/* Fills sp's range from the two arguments at lo_i, hi_i (already swapped
 * for REV forms by the caller). Replies on error. */
static bool range_args(struct conn *c, struct db_zspec *sp, size_t lo_i, size_t hi_i)
{
    if (sp->by == DB_ZBY_SCORE) {
        if (!score_bound(&c->argv[lo_i], &sp->min, &sp->minex) ||
            !score_bound(&c->argv[hi_i], &sp->max, &sp->maxex)) {
            resp_error(OUT(c), "ERR min or max is not a float");
            return false;
        }
    } else if (sp->by == DB_ZBY_LEX) {
        if (!lex_bound(&c->argv[lo_i], &sp->lmin) || !lex_bound(&c->argv[hi_i], &sp->lmax)) {
            resp_error(OUT(c), "ERR min or max not valid string range item");
            return false;
        }
    } else {
        if (!cmd_arg_ll(c, lo_i, &sp->start) || !cmd_arg_ll(c, hi_i, &sp->stop))
            return false;
    }
    return true;
}

/* The ZRANGE grammar from argument `at` (after key, min, max): BYSCORE,
 * BYLEX, REV, LIMIT, WITHSCORES. store: ZRANGESTORE (no WITHSCORES). */
static bool zrange_opts(struct conn *c, size_t at, struct db_zspec *sp, bool *withscores,
                        bool store)
{
    bool limit = false;
    *withscores = false;
    for (size_t i = at; i < c->argc; i++) {
        if (!store && cmd_arg_is(c, i, "withscores")) {
            *withscores = true;
        } else if (cmd_arg_is(c, i, "byscore") && sp->by == DB_ZBY_RANK) {
            sp->by = DB_ZBY_SCORE;
        } else if (cmd_arg_is(c, i, "bylex") && sp->by == DB_ZBY_RANK) {
            sp->by = DB_ZBY_LEX;
        } else if (cmd_arg_is(c, i, "rev")) {
            sp->rev = 1;
        } else if (cmd_arg_is(c, i, "limit") && i + 2 < c->argc) {
            if (!cmd_arg_ll(c, i + 1, &sp->offset) || !cmd_arg_ll(c, i + 2, &sp->limit))
                return false;
            limit = true;
            i += 2;
        } else {
            cmd_reply_syntax(c);
            return false;
        }
    }
    if (limit && sp->by == DB_ZBY_RANK) {
        resp_error(OUT(c), "ERR syntax error, LIMIT is only supported in combination with "
                           "either BYSCORE or BYLEX");
        return false;
    }
    if (*withscores && sp->by == DB_ZBY_LEX) {
        resp_error(OUT(c), "ERR syntax error, WITHSCORES not supported in combination with BYLEX");
        return false;
    }
    return true;
}

static void zspec_init(struct db_zspec *sp, int by, int rev)
{
    memset(sp, 0, sizeof *sp);
    sp->by = by;
    sp->rev = rev;
    sp->limit = -1;
}

static void run_range(struct conn *c, size_t keyi, struct db_zspec *sp, bool withscores)
{
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_zrange(srv.db, c->db, CMD_ARG(keyi), sp, &v);
    if (rc)
        cmd_reply_err(c, rc);
    else
        reply_scored(c, &v, withscores);
    db_vec_destroy(&v);
}

/* ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES] */
void cmd_zrange(struct conn *c)
{
    struct db_zspec sp;
    bool ws;
    zspec_init(&sp, DB_ZBY_RANK, 0);
    if (!zrange_opts(c, 4, &sp, &ws, false))
        return;
    /* With REV, score and lex ranges are given high end first. */
    bool swap = sp.rev && sp.by != DB_ZBY_RANK;
    if (range_args(c, &sp, swap ? 3 : 2, swap ? 2 : 3))
        run_range(c, 1, &sp, ws);
}

/* ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count] */
void cmd_zrangestore(struct conn *c)
{
    struct db_zspec sp;
    bool ws;
    zspec_init(&sp, DB_ZBY_RANK, 0);
    if (!zrange_opts(c, 5, &sp, &ws, true))
        return;
    bool swap = sp.rev && sp.by != DB_ZBY_RANK;
    if (!range_args(c, &sp, swap ? 4 : 3, swap ? 3 : 4))
        return;
    uint64_t n;
    bool had = cmd_notify_had(c, &c->argv[1]);
    int rc = db_zrangestore(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), &sp, &n);
    if (rc == 0)
        cmd_notify_store(c, SRV_NOTIFY_ZSET, "zrangestore", &c->argv[1], n, had);
    cmd_reply_int(c, rc, (int64_t)n);
}

/* The pre-6.2 range commands: [WITHSCORES] [LIMIT offset count]. */
static void old_range(struct conn *c, int by, int rev)
{
    struct db_zspec sp;
    zspec_init(&sp, by, rev);
    bool ws = false;
    for (size_t i = 4; i < c->argc; i++) {
        if (by != DB_ZBY_LEX && cmd_arg_is(c, i, "withscores")) {
            ws = true;
        } else if (by != DB_ZBY_RANK && cmd_arg_is(c, i, "limit") && i + 2 < c->argc) {
            if (!cmd_arg_ll(c, i + 1, &sp.offset) || !cmd_arg_ll(c, i + 2, &sp.limit))
                return;
            i += 2;
        } else {
            cmd_reply_syntax(c);
            return;
        }
    }
    bool swap = rev && by != DB_ZBY_RANK;
    if (range_args(c, &sp, swap ? 3 : 2, swap ? 2 : 3))
        run_range(c, 1, &sp, ws);
}

void cmd_zrangebyscore(struct conn *c)
{
    old_range(c, DB_ZBY_SCORE, 0);
}

void cmd_zrevrangebyscore(struct conn *c)
{
    old_range(c, DB_ZBY_SCORE, 1);
}

void cmd_zrangebylex(struct conn *c)
{
    old_range(c, DB_ZBY_LEX, 0);
}

void cmd_zrevrangebylex(struct conn *c)
{
    old_range(c, DB_ZBY_LEX, 1);
}

void cmd_zrevrange(struct conn *c)
{
    old_range(c, DB_ZBY_RANK, 1);
}

static void count_generic(struct conn *c, int by)
{
    struct db_zspec sp;
    zspec_init(&sp, by, 0);
    if (!range_args(c, &sp, 2, 3))
        return;
    uint64_t n;
    int rc = db_zcount(srv.db, c->db, CMD_ARG(1), &sp, &n);
    cmd_reply_int(c, rc, (int64_t)n);
}

/* ZCOUNT key min max */
void cmd_zcount(struct conn *c)
{
    count_generic(c, DB_ZBY_SCORE);
}

/* ZLEXCOUNT key min max */
void cmd_zlexcount(struct conn *c)
{
    count_generic(c, DB_ZBY_LEX);
}

static void rank_generic(struct conn *c, int rev)
{
    uint64_t r;
    int rc = db_zrank(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), rev, &r);
    if (rc == KV_ENOTFOUND)
        resp_null(OUT(c), c->proto);
    else if (rc)
        cmd_reply_err(c, rc);
    else
        resp_int(OUT(c), (int64_t)r);
}

void cmd_zrank(struct conn *c)
{
    rank_generic(c, 0);
}

void cmd_zrevrank(struct conn *c)
{
    rank_generic(c, 1);
}

static void remrange_generic(struct conn *c, int by)
{
    struct db_zspec sp;
    zspec_init(&sp, by, 0);
    if (!range_args(c, &sp, 2, 3))
        return;
    uint64_t n;
    int rc = db_zremrange(srv.db, c->db, CMD_ARG(1), &sp, &n);
    if (rc == 0 && n) {
        cmd_notify_arg(c, SRV_NOTIFY_ZSET,
                       by == DB_ZBY_RANK    ? "zremrangebyrank"
                       : by == DB_ZBY_SCORE ? "zremrangebyscore"
                                            : "zremrangebylex",
                       1);
        cmd_notify_emptied(c, 1);
    }
    cmd_reply_int(c, rc, (int64_t)n);
}

void cmd_zremrangebyrank(struct conn *c)
{
    remrange_generic(c, DB_ZBY_RANK);
}

void cmd_zremrangebyscore(struct conn *c)
{
    remrange_generic(c, DB_ZBY_SCORE);
}

void cmd_zremrangebylex(struct conn *c)
{
    remrange_generic(c, DB_ZBY_LEX);
}

/* After a pop from the sorted set in argument i: "zpopmin"/"zpopmax", then
 * "del" if it is gone. */
static void notify_zpop(struct conn *c, int max, size_t i)
{
    cmd_notify_arg(c, SRV_NOTIFY_ZSET, max ? "zpopmax" : "zpopmin", i);
    cmd_notify_emptied(c, i);
}

/* ZPOPMIN/ZPOPMAX key [count] */
static void pop_generic(struct conn *c, int max)
{
    int64_t count = 1;
    if (c->argc > 3) {
        cmd_reply_syntax(c);
        return;
    }
    if (c->argc == 3 && !cmd_arg_count(c, 2, &count))
        return;
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_zpop(srv.db, c->db, CMD_ARG(1), max, (uint64_t)count, &v);
    if (rc == 0 && v.n)
        notify_zpop(c, max, 1);
    if (rc) {
        cmd_reply_err(c, rc);
    } else if (c->argc == 2 || c->proto < 3) {
        /* Without a count, even RESP3 gets the flat [member, score]. */
        resp_array(OUT(c), 2 * v.n);
        for (size_t i = 0; i < v.n; i++) {
            resp_bulk(OUT(c), db_vec_ptr(&v, i), db_vec_len(&v, i));
            resp_double(OUT(c), v.items[i].score, c->proto);
        }
    } else {
        reply_scored(c, &v, true);
    }
    db_vec_destroy(&v);
}

void cmd_zpopmin(struct conn *c)
{
    pop_generic(c, 0);
}

void cmd_zpopmax(struct conn *c)
{
    pop_generic(c, 1);
}

/* Pops from the first non-empty sorted set of argv[first..last]: replies
 * and returns true, or returns false having replied nothing when all are
 * empty. mpop: ZMPOP's [key, [[member, score] ...]]; else BZPOPMIN's flat
 * [key, member, score]. */
static bool pop_first(struct conn *c, size_t first, size_t last, int max, uint64_t count, bool mpop)
{
    for (size_t i = first; i <= last; i++) {
        struct db_vec v;
        db_vec_init(&v);
        int rc = db_zpop(srv.db, c->db, CMD_ARG(i), max, count, &v);
        bool done = rc != 0 || v.n > 0;
        if (rc == 0 && v.n) {
            char num[24];
            struct db_str as[3] = {{.p = max ? "ZPOPMAX" : "ZPOPMIN", .n = 7},
                                   c->argv[i],
                                   {.p = num, .n = (size_t)snprintf(num, sizeof num, "%zu", v.n)}};
            cmd_propagate_as(as, mpop ? 3 : 2);
            notify_zpop(c, max, i);
        }
        if (rc) {
            cmd_reply_err(c, rc);
        } else if (v.n && mpop) {
            resp_array(OUT(c), 2);
            resp_bulk(OUT(c), CMD_ARG(i));
            resp_array(OUT(c), v.n);
            for (size_t j = 0; j < v.n; j++) {
                resp_array(OUT(c), 2);
                resp_bulk(OUT(c), db_vec_ptr(&v, j), db_vec_len(&v, j));
                resp_double(OUT(c), v.items[j].score, c->proto);
            }
        } else if (v.n) {
            resp_array(OUT(c), 3);
            resp_bulk(OUT(c), CMD_ARG(i));
            resp_bulk(OUT(c), db_vec_ptr(&v, 0), db_vec_len(&v, 0));
            resp_double(OUT(c), v.items[0].score, c->proto);
        }
        db_vec_destroy(&v);
        if (done)
            return true;
    }
    return false;
}

/* BZPOPMIN/BZPOPMAX key [key ...] timeout */
void cmd_bzpopmin(struct conn *c)
{
    cmd_bpop(c, pop_first, 0);
}

void cmd_bzpopmax(struct conn *c)
{
    cmd_bpop(c, pop_first, 1);
}

/* ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]; BZMPOP has a timeout
 * first. */
void cmd_zmpop(struct conn *c)
{
    cmd_mpop(c, pop_first, false, "max", "min");
}

void cmd_bzmpop(struct conn *c)
{
    cmd_mpop(c, pop_first, true, "max", "min");
}

/* ZRANDMEMBER key [count [WITHSCORES]] */
void cmd_zrandmember(struct conn *c)
{
    int64_t count = 1;
    bool single = c->argc == 2;
    if (c->argc > 4 || (c->argc == 4 && !cmd_arg_is(c, 3, "withscores"))) {
        cmd_reply_syntax(c);
        return;
    }
    if (!single && !cmd_rand_count(c, 2, &count))
        return;
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_zrandmember(srv.db, c->db, CMD_ARG(1), count, &v);
    if (rc) {
        cmd_reply_err(c, rc);
    } else if (single) {
        if (v.n)
            resp_bulk(OUT(c), db_vec_ptr(&v, 0), db_vec_len(&v, 0));
        else
            resp_null(OUT(c), c->proto);
    } else {
        reply_scored(c, &v, c->argc == 4);
    }
    db_vec_destroy(&v);
}

/* ---- ZUNION / ZINTER / ZDIFF and their STORE forms ---- */

/* Parses numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
 * starting at argument `at` (numkeys). */
static void setop_generic(struct conn *c, int op, bool store)
{
    size_t at = store ? 2 : 1;
    int64_t nk;
    if (!cmd_arg_ll(c, at, &nk))
        return;
    if (nk < 1) {
        resp_errorf(OUT(c), "ERR at least 1 input key is needed for '%s' command",
                    cmd_lookup(c->argv[0].p, c->argv[0].n)->name);
        return;
    }
    if ((uint64_t)nk > c->argc - at - 1) {
        cmd_reply_syntax(c);
        return;
    }
    double *weights = NULL;
    int agg = DB_AGG_SUM;
    bool ws = false;
    for (size_t i = at + 1 + (size_t)nk; i < c->argc; i++) {
        if (op != DB_ZDIFF && cmd_arg_is(c, i, "weights") && i + (size_t)nk < c->argc) {
            free(weights);
            weights = malloc((size_t)nk * sizeof *weights);
            if (!weights)
                abort();
            for (int64_t j = 0; j < nk; j++) {
                if (!cmd_arg_double_or(c, i + 1 + (size_t)j, &weights[j],
                                       "ERR weight value is not a float")) {
                    free(weights);
                    return;
                }
            }
            i += (size_t)nk;
        } else if (op != DB_ZDIFF && cmd_arg_is(c, i, "aggregate") && i + 1 < c->argc) {
            i++;
            if (cmd_arg_is(c, i, "sum"))
                agg = DB_AGG_SUM;
            else if (cmd_arg_is(c, i, "min"))
                agg = DB_AGG_MIN;
            else if (cmd_arg_is(c, i, "max"))
                agg = DB_AGG_MAX;
            else {
                cmd_reply_syntax(c);
                free(weights);
                return;
            }
        } else if (!store && cmd_arg_is(c, i, "withscores")) {
            ws = true;
        } else {
            cmd_reply_syntax(c);
            free(weights);
            return;
        }
    }
    const struct db_str *keys = c->argv + at + 1;
    if (store) {
        uint64_t n;
        bool had = cmd_notify_had(c, &c->argv[1]);
        int rc = db_zsetop_store(srv.db, c->db, op, CMD_ARG(1), keys, (size_t)nk, weights, agg, &n);
        if (rc) {
            cmd_reply_err(c, rc);
        } else {
            cmd_notify_store(c, SRV_NOTIFY_ZSET,
                             op == DB_ZUNION   ? "zunionstore"
                             : op == DB_ZINTER ? "zinterstore"
                                               : "zdiffstore",
                             &c->argv[1], n, had);
            resp_int(OUT(c), (int64_t)n);
        }
    } else {
        struct db_vec v;
        db_vec_init(&v);
        int rc = db_zsetop(srv.db, c->db, op, keys, (size_t)nk, weights, agg, &v);
        if (rc)
            cmd_reply_err(c, rc);
        else
            reply_scored(c, &v, ws);
        db_vec_destroy(&v);
    }
    free(weights);
}

void cmd_zunionstore(struct conn *c)
{
    setop_generic(c, DB_ZUNION, true);
}

void cmd_zinterstore(struct conn *c)
{
    setop_generic(c, DB_ZINTER, true);
}

void cmd_zdiffstore(struct conn *c)
{
    setop_generic(c, DB_ZDIFF, true);
}

void cmd_zunion(struct conn *c)
{
    setop_generic(c, DB_ZUNION, false);
}

void cmd_zinter(struct conn *c)
{
    setop_generic(c, DB_ZINTER, false);
}

void cmd_zdiff(struct conn *c)
{
    setop_generic(c, DB_ZDIFF, false);
}

/* ZINTERCARD numkeys key [key ...] [LIMIT limit] */
void cmd_zintercard(struct conn *c)
{
    int64_t nk, limit = 0;
    if (!cmd_arg_ll(c, 1, &nk))
        return;
    if (nk < 1) {
        resp_error(OUT(c), "ERR at least 1 input key is needed for 'zintercard' command");
        return;
    }
    if ((uint64_t)nk > c->argc - 2) {
        cmd_reply_syntax(c);
        return;
    }
    for (size_t i = 2 + (size_t)nk; i < c->argc; i += 2) {
        if (!cmd_arg_is(c, i, "limit") || i + 1 >= c->argc) {
            cmd_reply_syntax(c);
            return;
        }
        if (kv_str2ll(c->argv[i + 1].p, c->argv[i + 1].n, &limit) || limit < 0) {
            resp_error(OUT(c), "ERR LIMIT can't be negative");
            return;
        }
    }
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_zsetop(srv.db, c->db, DB_ZINTER, c->argv + 2, (size_t)nk, NULL, DB_AGG_SUM, &v);
    cmd_reply_int(c, rc, limit && v.n > (uint64_t)limit ? limit : (int64_t)v.n);
    db_vec_destroy(&v);
}

/* ZSCAN key cursor [MATCH pattern] [COUNT count] */
void cmd_zscan(struct conn *c)
{
    cmd_cscan_generic(c, ENC_TYPE_ZSET);
}
