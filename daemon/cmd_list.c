/*
 * cmd_list — list commands, with BLPOP/BRPOP/BLMPOP/BLMOVE/BRPOPLPUSH.
 *
 * A blocking command that finds nothing parks its client (cmd_block); when a
 * commit touches one of its keys, cmd_serve_ready() runs it again with
 * CONN_BLOCKED set, and it replies only if it could pop this time.
 */
#include "cmd.h"

#include <stdio.h>

#include <math.h>
#include <stdlib.h>

/* After a pop from the list in argument i: "lpop"/"rpop", then "del" if it
 * is gone. */
static void notify_pop(struct conn *c, int left, size_t i)
{
    cmd_notify_arg(c, SRV_NOTIFY_LIST, left ? "lpop" : "rpop", i);
    cmd_notify_emptied(c, i);
}

static void push_generic(struct conn *c, int left, int xx)
{
    uint64_t n;
    int rc = db_push(srv.db, c->db, CMD_ARG(1), left, c->argv + 2, c->argc - 2, xx, &n);
    if (rc == 0 && n) /* LPUSHX/RPUSHX on no list: 0, nothing pushed */
        cmd_notify_arg(c, SRV_NOTIFY_LIST, left ? "lpush" : "rpush", 1);
    cmd_reply_int(c, rc, (int64_t)n);
}

void cmd_lpush(struct conn *c)
{
    push_generic(c, 1, 0);
}

void cmd_rpush(struct conn *c)
{
    push_generic(c, 0, 0);
}

void cmd_lpushx(struct conn *c)
{
    push_generic(c, 1, 1);
}

void cmd_rpushx(struct conn *c)
{
    push_generic(c, 0, 1);
}

/* LPOP/RPOP key [count] */
static void pop_generic(struct conn *c, int left)
{
    int64_t count = 1;
    bool hascount = c->argc == 3;
    if (c->argc > 3) {
        cmd_reply_syntax(c);
        return;
    }
    if (hascount && !cmd_arg_count(c, 2, &count))
        return;
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_pop(srv.db, c->db, CMD_ARG(1), left, (uint64_t)count, &v);
    if (rc == 0 && v.n) /* a count of 0 pops nothing */
        notify_pop(c, left, 1);
    if (rc == KV_ENOTFOUND) {
        if (hascount)
            resp_null_array(OUT(c), c->proto);
        else
            resp_null(OUT(c), c->proto);
    } else if (rc) {
        cmd_reply_err(c, rc);
    } else if (!hascount) {
        resp_bulk(OUT(c), db_vec_ptr(&v, 0), db_vec_len(&v, 0));
    } else {
        cmd_reply_vec(c, &v);
    }
    db_vec_destroy(&v);
}

void cmd_lpop(struct conn *c)
{
    pop_generic(c, 1);
}

void cmd_rpop(struct conn *c)
{
    pop_generic(c, 0);
}

/* LLEN key */
void cmd_llen(struct conn *c)
{
    uint64_t n;
    int rc = db_llen(srv.db, c->db, CMD_ARG(1), &n);
    cmd_reply_int(c, rc, (int64_t)n);
}

/* LRANGE key start stop */
void cmd_lrange(struct conn *c)
{
    int64_t s, e;
    if (!cmd_arg_ll(c, 2, &s) || !cmd_arg_ll(c, 3, &e))
        return;
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_lrange(srv.db, c->db, CMD_ARG(1), s, e, &v);
    if (rc)
        cmd_reply_err(c, rc);
    else
        cmd_reply_vec(c, &v);
    db_vec_destroy(&v);
}

/* LINDEX key index */
void cmd_lindex(struct conn *c)
{
    int64_t i;
    if (!cmd_arg_ll(c, 2, &i))
        return;
    char *v;
    size_t vn;
    int rc = db_lindex(srv.db, c->db, CMD_ARG(1), i, &v, &vn);
    cmd_reply_bulk(c, rc, v, vn);
}

/* LSET key index element */
void cmd_lset(struct conn *c)
{
    int64_t i;
    if (!cmd_arg_ll(c, 2, &i))
        return;
    int rc = db_lset(srv.db, c->db, CMD_ARG(1), i, CMD_ARG(3));
    if (rc == 0)
        cmd_notify_arg(c, SRV_NOTIFY_LIST, "lset", 1);
    cmd_reply_ok(c, rc);
}

/* LREM key count element */
void cmd_lrem(struct conn *c)
{
    int64_t count;
    if (!cmd_arg_ll(c, 2, &count))
        return;
    uint64_t n;
    int rc = db_lrem(srv.db, c->db, CMD_ARG(1), count, CMD_ARG(3), &n);
    if (rc == 0 && n) {
        cmd_notify_arg(c, SRV_NOTIFY_LIST, "lrem", 1);
        cmd_notify_emptied(c, 1);
    }
    cmd_reply_int(c, rc, (int64_t)n);
}

/* LINSERT key BEFORE|AFTER pivot element */
void cmd_linsert(struct conn *c)
{
    int before;
    if (cmd_arg_is(c, 2, "before"))
        before = 1;
    else if (cmd_arg_is(c, 2, "after"))
        before = 0;
    else {
        cmd_reply_syntax(c);
        return;
    }
    int64_t n;
    int rc = db_linsert(srv.db, c->db, CMD_ARG(1), before, CMD_ARG(3), CMD_ARG(4), &n);
    if (rc == 0 && n > 0)
        cmd_notify_arg(c, SRV_NOTIFY_LIST, "linsert", 1);
    cmd_reply_int(c, rc, n);
}

/* LTRIM key start stop */
void cmd_ltrim(struct conn *c)
{
    int64_t s, e;
    if (!cmd_arg_ll(c, 2, &s) || !cmd_arg_ll(c, 3, &e))
        return;
    int rc = db_ltrim(srv.db, c->db, CMD_ARG(1), s, e);
    if (rc == 1) {
        cmd_notify_arg(c, SRV_NOTIFY_LIST, "ltrim", 1);
        cmd_notify_emptied(c, 1);
    }
    cmd_reply_ok(c, rc);
}

/* LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len] */
void cmd_lpos(struct conn *c)
{
    int64_t rank = 1, count = -1, maxlen = 0;
    for (size_t i = 3; i < c->argc; i += 2) {
        if (i + 1 >= c->argc) {
            cmd_reply_syntax(c);
            return;
        }
        if (cmd_arg_is(c, i, "rank")) {
            if (!cmd_arg_ll(c, i + 1, &rank))
                return;
            if (rank == 0) {
                resp_error(OUT(c), "ERR RANK can't be zero: use 1 to start from the first "
                                   "match, 2 from the second ... or use negative to start from "
                                   "the end of the list");
                return;
            }
            if (rank == INT64_MIN) {
                resp_error(OUT(c), "ERR value is out of range");
                return;
            }
        } else if (cmd_arg_is(c, i, "count")) {
            if (!cmd_arg_ll(c, i + 1, &count))
                return;
            if (count < 0) {
                resp_error(OUT(c), "ERR COUNT can't be negative");
                return;
            }
        } else if (cmd_arg_is(c, i, "maxlen")) {
            if (!cmd_arg_ll(c, i + 1, &maxlen))
                return;
            if (maxlen < 0) {
                resp_error(OUT(c), "ERR MAXLEN can't be negative");
                return;
            }
        } else {
            cmd_reply_syntax(c);
            return;
        }
    }
    int64_t *pos;
    size_t np;
    int rc = db_lpos(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), rank, count < 0 ? 1 : (uint64_t)count,
                     (uint64_t)maxlen, &pos, &np);
    if (rc) {
        cmd_reply_err(c, rc);
        return;
    }
    if (count < 0) {
        if (np)
            resp_int(OUT(c), pos[0]);
        else
            resp_null(OUT(c), c->proto);
    } else {
        resp_array(OUT(c), np);
        for (size_t i = 0; i < np; i++)
            resp_int(OUT(c), pos[i]);
    }
    free(pos);
}

/* Moves one element; replies it, or nil. Returns false when the source was
 * empty (so a blocking caller may park). */
static bool move_generic(struct conn *c, int from_left, int to_left, bool reply_nil)
{
    char *v;
    size_t vn;
    int rc = db_lmove(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), from_left, to_left, &v, &vn);
    if (rc == KV_ENOTFOUND) {
        if (reply_nil)
            resp_null(OUT(c), c->proto);
        return false;
    }
    if (rc) {
        cmd_reply_err(c, rc);
        return true;
    }
    /* BLMOVE and BRPOPLPUSH go to replicas as the move they made. */
    struct db_str as[5] = {{.p = "LMOVE", .n = 5},
                           c->argv[1],
                           c->argv[2],
                           {.p = from_left ? "LEFT" : "RIGHT", .n = from_left ? 4u : 5u},
                           {.p = to_left ? "LEFT" : "RIGHT", .n = to_left ? 4u : 5u}};
    cmd_propagate_as(as, 5);
    /* Redis's order: the push, then the pop and the source's deletion. */
    cmd_notify_arg(c, SRV_NOTIFY_LIST, to_left ? "lpush" : "rpush", 2);
    notify_pop(c, from_left, 1);
    resp_bulk(OUT(c), v, vn);
    free(v);
    return true;
}

static bool side_arg(struct conn *c, size_t i, int *left)
{
    if (cmd_arg_is(c, i, "left"))
        *left = 1;
    else if (cmd_arg_is(c, i, "right"))
        *left = 0;
    else {
        cmd_reply_syntax(c);
        return false;
    }
    return true;
}

/* RPOPLPUSH source destination */
void cmd_rpoplpush(struct conn *c)
{
    move_generic(c, 0, 1, true);
}

/* LMOVE source destination LEFT|RIGHT LEFT|RIGHT */
void cmd_lmove(struct conn *c)
{
    int from, to;
    if (side_arg(c, 3, &from) && side_arg(c, 4, &to))
        move_generic(c, from, to, true);
}

/* ---- blocking ---- */

/* Pops from the first non-empty list of arguments [first, last] and
 * replies [key, element] (many: [key, [elements]]), or an error; false
 * when every list is empty and nothing was replied. */
static bool pop_first(struct conn *c, size_t first, size_t last, int left, uint64_t count,
                      bool many)
{
    for (size_t i = first; i <= last; i++) {
        struct db_vec v;
        db_vec_init(&v);
        int rc = db_pop(srv.db, c->db, CMD_ARG(i), left, count, &v);
        if (rc == 0) {
            /* Replicas pop the same key, as LPOP/RPOP (Redis's rewrite). */
            char num[24];
            struct db_str as[3] = {{.p = left ? "LPOP" : "RPOP", .n = 4},
                                   c->argv[i],
                                   {.p = num, .n = (size_t)snprintf(num, sizeof num, "%zu", v.n)}};
            cmd_propagate_as(as, many ? 3 : 2);
            notify_pop(c, left, i);
            resp_array(OUT(c), 2);
            resp_bulk(OUT(c), CMD_ARG(i));
            if (many)
                cmd_reply_vec(c, &v);
            else
                resp_bulk(OUT(c), db_vec_ptr(&v, 0), db_vec_len(&v, 0));
        } else if (rc != KV_ENOTFOUND) {
            cmd_reply_err(c, rc);
        }
        db_vec_destroy(&v);
        if (rc != KV_ENOTFOUND)
            return true;
    }
    return false;
}

/* BLPOP/BRPOP key [key ...] timeout */
void cmd_blpop(struct conn *c)
{
    cmd_bpop(c, pop_first, 1);
}

void cmd_brpop(struct conn *c)
{
    cmd_bpop(c, pop_first, 0);
}

/* LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]; BLMPOP has a
 * timeout first. */
void cmd_lmpop(struct conn *c)
{
    cmd_mpop(c, pop_first, false, "left", "right");
}

void cmd_blmpop(struct conn *c)
{
    cmd_mpop(c, pop_first, true, "left", "right");
}

static void bmove_generic(struct conn *c, int from, int to, size_t timeout_i)
{
    uint64_t deadline = 0;
    if (!(c->flags & CONN_BLOCKED) && !cmd_timeout_arg(c, timeout_i, &deadline))
        return;
    if (move_generic(c, from, to, !cmd_may_block(c) && !(c->flags & CONN_BLOCKED)))
        return;
    if (cmd_may_block(c))
        cmd_block(c, deadline);
}

/* BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout */
void cmd_blmove(struct conn *c)
{
    int from, to;
    if (side_arg(c, 3, &from) && side_arg(c, 4, &to))
        bmove_generic(c, from, to, 5);
}

/* BRPOPLPUSH source destination timeout */
void cmd_brpoplpush(struct conn *c)
{
    bmove_generic(c, 0, 1, 3);
}
