/*
 * cmd_hash — hash commands.
 */
#include "cmd.h"

#include <math.h>
#include <stdlib.h>

static void hset_generic(struct conn *c, bool ok_reply)
{
    if (c->argc % 2 != 0) {
        resp_errorf(OUT(c), "ERR wrong number of arguments for '%s' command",
                    ok_reply ? "hmset" : "hset");
        return;
    }
    uint64_t added;
    int rc = db_hset(srv.db, c->db, CMD_ARG(1), c->argv + 2, (c->argc - 2) / 2, 0, &added);
    if (rc == 0)
        cmd_notify_arg(c, SRV_NOTIFY_HASH, "hset", 1);
    if (rc)
        cmd_reply_err(c, rc);
    else if (ok_reply)
        resp_simple(OUT(c), "OK");
    else
        resp_int(OUT(c), (int64_t)added);
}

/* HSET key field value [field value ...] */
void cmd_hset(struct conn *c)
{
    hset_generic(c, false);
}

/* HMSET key field value [field value ...] */
void cmd_hmset(struct conn *c)
{
    hset_generic(c, true);
}

/* HSETNX key field value */
void cmd_hsetnx(struct conn *c)
{
    uint64_t added;
    int rc = db_hset(srv.db, c->db, CMD_ARG(1), c->argv + 2, 1, 1, &added);
    if (rc == 0 && added)
        cmd_notify_arg(c, SRV_NOTIFY_HASH, "hset", 1);
    cmd_reply_int(c, rc, (int64_t)added);
}

/* HGET key field */
void cmd_hget(struct conn *c)
{
    char *v;
    size_t vn;
    int rc = db_hget(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), &v, &vn);
    cmd_reply_bulk(c, rc, v, vn);
}

/* HMGET key field [field ...] */
void cmd_hmget(struct conn *c)
{
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_hmget(srv.db, c->db, CMD_ARG(1), c->argv + 2, c->argc - 2, &v);
    if (rc)
        cmd_reply_err(c, rc);
    else
        cmd_reply_vec(c, &v);
    db_vec_destroy(&v);
}

static void hgetall_generic(struct conn *c, int what)
{
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_hgetall(srv.db, c->db, CMD_ARG(1), what, &v);
    if (rc) {
        cmd_reply_err(c, rc);
    } else if (what == DB_H_BOTH) {
        resp_map(OUT(c), v.n / 2, c->proto);
        for (size_t i = 0; i < v.n; i++)
            resp_bulk(OUT(c), db_vec_ptr(&v, i), db_vec_len(&v, i));
    } else {
        cmd_reply_vec(c, &v);
    }
    db_vec_destroy(&v);
}

/* HGETALL key */
void cmd_hgetall(struct conn *c)
{
    hgetall_generic(c, DB_H_BOTH);
}

/* HKEYS key */
void cmd_hkeys(struct conn *c)
{
    hgetall_generic(c, DB_H_FIELDS);
}

/* HVALS key */
void cmd_hvals(struct conn *c)
{
    hgetall_generic(c, DB_H_VALUES);
}

/* HDEL key field [field ...] */
void cmd_hdel(struct conn *c)
{
    uint64_t n;
    int rc = db_hdel(srv.db, c->db, CMD_ARG(1), c->argv + 2, c->argc - 2, &n);
    if (rc == 0 && n) {
        cmd_notify_arg(c, SRV_NOTIFY_HASH, "hdel", 1);
        cmd_notify_emptied(c, 1);
    }
    cmd_reply_int(c, rc, (int64_t)n);
}

/* HLEN key */
void cmd_hlen(struct conn *c)
{
    uint64_t n;
    int rc = db_hlen(srv.db, c->db, CMD_ARG(1), &n);
    cmd_reply_int(c, rc, (int64_t)n);
}

/* HEXISTS key field */
void cmd_hexists(struct conn *c)
{
    int rc = db_hexists(srv.db, c->db, CMD_ARG(1), CMD_ARG(2));
    cmd_reply_int(c, rc, rc);
}

/* HSTRLEN key field */
void cmd_hstrlen(struct conn *c)
{
    uint64_t n;
    int rc = db_hstrlen(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), &n);
    cmd_reply_int(c, rc, (int64_t)n);
}

/* HINCRBY key field increment */
void cmd_hincrby(struct conn *c)
{
    int64_t d, v;
    if (!cmd_arg_ll(c, 3, &d))
        return;
    int rc = db_hincrby(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), d, &v);
    if (rc == 0)
        cmd_notify_arg(c, SRV_NOTIFY_HASH, "hincrby", 1);
    cmd_reply_int(c, rc, v);
}

/* HINCRBYFLOAT key field increment */
void cmd_hincrbyfloat(struct conn *c)
{
    long double d;
    if (!cmd_arg_ld(c, 3, &d))
        return;
    if (isnan(d) || isinf(d)) {
        resp_error(OUT(c), "ERR value is NaN or Infinity");
        return;
    }
    char out[KV_LDSTR_MAX];
    size_t n;
    int rc = db_hincrbyfloat(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), d, out, &n);
    if (rc) {
        cmd_reply_err(c, rc);
        return;
    }
    struct db_str as[4] = {{.p = "HSET", .n = 4}, c->argv[1], c->argv[2], {.p = out, .n = n}};
    cmd_propagate_as(as, 4);
    cmd_notify_arg(c, SRV_NOTIFY_HASH, "hincrbyfloat", 1);
    resp_bulk(OUT(c), out, n);
}

/* Parses the count of HRANDFIELD/SRANDMEMBER/ZRANDMEMBER; replies on error.
 * A count so negative that the reply could not be built is refused. */
bool cmd_rand_count(struct conn *c, size_t i, int64_t *count)
{
    if (!cmd_arg_ll(c, i, count))
        return false;
    if (*count == INT64_MIN) { /* Redis reads it in [-LONG_MAX, LONG_MAX] */
        resp_error(OUT(c), "ERR value is out of range, value must between -9223372036854775807 "
                           "and 9223372036854775807");
        return false;
    }
    if (*count < -(INT64_MAX / 2)) {
        resp_error(OUT(c), "ERR value is out of range");
        return false;
    }
    return true;
}

/* HRANDFIELD key [count [WITHVALUES]] */
void cmd_hrandfield(struct conn *c)
{
    int64_t count = 1;
    bool withvalues = false, single = c->argc == 2;
    if (c->argc > 4 || (c->argc == 4 && !cmd_arg_is(c, 3, "withvalues"))) {
        cmd_reply_syntax(c);
        return;
    }
    withvalues = c->argc == 4;
    if (!single && !cmd_rand_count(c, 2, &count))
        return;
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_hrandfield(srv.db, c->db, CMD_ARG(1), count, withvalues, &v);
    if (rc) {
        cmd_reply_err(c, rc);
    } else if (single) {
        if (v.n)
            resp_bulk(OUT(c), db_vec_ptr(&v, 0), db_vec_len(&v, 0));
        else
            resp_null(OUT(c), c->proto);
    } else if (withvalues && c->proto >= 3) {
        resp_array(OUT(c), v.n / 2);
        for (size_t i = 0; i < v.n; i += 2) {
            resp_array(OUT(c), 2);
            resp_bulk(OUT(c), db_vec_ptr(&v, i), db_vec_len(&v, i));
            resp_bulk(OUT(c), db_vec_ptr(&v, i + 1), db_vec_len(&v, i + 1));
        }
    } else {
        cmd_reply_vec(c, &v);
    }
    db_vec_destroy(&v);
}

/* HSCAN key cursor [MATCH pattern] [COUNT count] */
void cmd_hscan(struct conn *c)
{
    cmd_cscan_generic(c, ENC_TYPE_HASH);
}
