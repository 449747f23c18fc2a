/*
 * cmd_set — set commands.
 */
#include "cmd.h"
#include "kv_mem.h"

#include <stdlib.h>

static void reply_set(struct conn *c, const struct db_vec *v)
{
    resp_set(OUT(c), v->n, c->proto);
    for (size_t i = 0; i < v->n; i++)
        resp_bulk(OUT(c), db_vec_ptr(v, i), db_vec_len(v, i));
}

/* SADD key member [member ...] */
void cmd_sadd(struct conn *c)
{
    uint64_t n;
    int rc = db_sadd(srv.db, c->db, CMD_ARG(1), c->argv + 2, c->argc - 2, &n);
    if (rc == 0 && n)
        cmd_notify_arg(c, SRV_NOTIFY_SET, "sadd", 1);
    cmd_reply_int(c, rc, (int64_t)n);
}

/* SREM key member [member ...] */
void cmd_srem(struct conn *c)
{
    uint64_t n;
    int rc = db_srem(srv.db, c->db, CMD_ARG(1), c->argv + 2, c->argc - 2, &n);
    if (rc == 0 && n) {
        cmd_notify_arg(c, SRV_NOTIFY_SET, "srem", 1);
        cmd_notify_emptied(c, 1);
    }
    cmd_reply_int(c, rc, (int64_t)n);
}

/* SMEMBERS key */
void cmd_smembers(struct conn *c)
{
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_smembers(srv.db, c->db, CMD_ARG(1), &v);
    if (rc)
        cmd_reply_err(c, rc);
    else
        reply_set(c, &v);
    db_vec_destroy(&v);
}

/* SISMEMBER key member */
void cmd_sismember(struct conn *c)
{
    int rc = db_sismember(srv.db, c->db, CMD_ARG(1), CMD_ARG(2));
    cmd_reply_int(c, rc, rc);
}

/* SMISMEMBER key member [member ...] */
void cmd_smismember(struct conn *c)
{
    size_t n = c->argc - 2;
    unsigned char *is = kv_xmalloc(n);
    int rc = db_smismember(srv.db, c->db, CMD_ARG(1), c->argv + 2, n, is);
    if (rc) {
        cmd_reply_err(c, rc);
    } else {
        resp_array(OUT(c), n);
        for (size_t i = 0; i < n; i++)
            resp_int(OUT(c), is[i]);
    }
    free(is);
}

/* SCARD key */
void cmd_scard(struct conn *c)
{
    uint64_t n;
    int rc = db_scard(srv.db, c->db, CMD_ARG(1), &n);
    cmd_reply_int(c, rc, (int64_t)n);
}

/* SPOP key [count] */
void cmd_spop(struct conn *c)
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
    int rc = count ? db_spop(srv.db, c->db, CMD_ARG(1), (uint64_t)count, &v) : 0;
    if (rc == 0 && count == 0) {
        /* SPOP k 0 still checks the type. */
        rc = cmd_key_type(c, 1, ENC_TYPE_SET, NULL);
    } else if (rc == 0 && v.n) {
        /* Replicas remove the members drawn here (Redis's SREM rewrite). */
        struct db_str *as = kv_xmalloc((v.n + 2) * sizeof *as);
        as[0] = (struct db_str){.p = "SREM", .n = 4};
        as[1] = c->argv[1];
        for (size_t i = 0; i < v.n; i++)
            as[i + 2] = (struct db_str){.p = db_vec_ptr(&v, i), .n = db_vec_len(&v, i)};
        cmd_propagate_as(as, v.n + 2);
        free(as);
        cmd_notify_arg(c, SRV_NOTIFY_SET, "spop", 1);
        cmd_notify_emptied(c, 1);
    }
    if (rc == KV_ENOTFOUND) {
        if (c->argc == 2)
            resp_null(OUT(c), c->proto);
        else
            reply_set(c, &v);
    } else if (rc) {
        cmd_reply_err(c, rc);
    } else if (c->argc == 2) {
        resp_bulk(OUT(c), db_vec_ptr(&v, 0), db_vec_len(&v, 0));
    } else {
        reply_set(c, &v);
    }
    db_vec_destroy(&v);
}

/* SRANDMEMBER key [count] */
void cmd_srandmember(struct conn *c)
{
    int64_t count = 1;
    if (c->argc > 3) {
        cmd_reply_syntax(c);
        return;
    }
    if (c->argc == 3 && !cmd_rand_count(c, 2, &count))
        return;
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_srandmember(srv.db, c->db, CMD_ARG(1), count, &v);
    if (rc) {
        cmd_reply_err(c, rc);
    } else if (c->argc == 2) {
        if (v.n)
            resp_bulk(OUT(c), db_vec_ptr(&v, 0), db_vec_len(&v, 0));
        else
            resp_null(OUT(c), c->proto);
    } else {
        cmd_reply_vec(c, &v);
    }
    db_vec_destroy(&v);
}

/* SMOVE source destination member */
void cmd_smove(struct conn *c)
{
    bool same =
        c->argv[1].n == c->argv[2].n && memcmp(c->argv[1].p, c->argv[2].p, c->argv[1].n) == 0;
    /* "sadd" only if the destination did not have the member */
    bool had = !same && cmd_notify_on(SRV_NOTIFY_SET) &&
               db_sismember(srv.db, c->db, CMD_ARG(2), CMD_ARG(3)) == 1;
    int rc = db_smove(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), CMD_ARG(3));
    if (rc == 1 && !same) {
        cmd_notify_arg(c, SRV_NOTIFY_SET, "srem", 1);
        cmd_notify_emptied(c, 1);
        if (!had)
            cmd_notify_arg(c, SRV_NOTIFY_SET, "sadd", 2);
    }
    cmd_reply_int(c, rc, rc);
}

static void setop_generic(struct conn *c, int op)
{
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_setop(srv.db, c->db, op, c->argv + 1, c->argc - 1, 0, &v);
    if (rc)
        cmd_reply_err(c, rc);
    else
        reply_set(c, &v);
    db_vec_destroy(&v);
}

static void setop_store_generic(struct conn *c, int op)
{
    uint64_t n;
    bool had = cmd_notify_had(c, &c->argv[1]);
    int rc = db_setop_store(srv.db, c->db, op, CMD_ARG(1), c->argv + 2, c->argc - 2, &n);
    if (rc == 0)
        cmd_notify_store(c, SRV_NOTIFY_SET,
                         op == DB_SINTER   ? "sinterstore"
                         : op == DB_SUNION ? "sunionstore"
                                           : "sdiffstore",
                         &c->argv[1], n, had);
    cmd_reply_int(c, rc, (int64_t)n);
}

void cmd_sinter(struct conn *c)
{
    setop_generic(c, DB_SINTER);
}

void cmd_sunion(struct conn *c)
{
    setop_generic(c, DB_SUNION);
}

void cmd_sdiff(struct conn *c)
{
    setop_generic(c, DB_SDIFF);
}

void cmd_sinterstore(struct conn *c)
{
    setop_store_generic(c, DB_SINTER);
}

void cmd_sunionstore(struct conn *c)
{
    setop_store_generic(c, DB_SUNION);
}

void cmd_sdiffstore(struct conn *c)
{
    setop_store_generic(c, DB_SDIFF);
}

/* Parses "numkeys key [key ...]" at argument 1; replies on error. */
bool cmd_numkeys(struct conn *c, size_t at, int64_t *numkeys)
{
    if (kv_str2ll(c->argv[at].p, c->argv[at].n, numkeys) || *numkeys <= 0) {
        resp_error(OUT(c), "ERR numkeys should be greater than 0");
        return false;
    }
    if ((uint64_t)*numkeys > c->argc - at - 1) {
        resp_error(OUT(c), "ERR Number of keys can't be greater than number of args");
        return false;
    }
    return true;
}

/* SINTERCARD numkeys key [key ...] [LIMIT limit] */
void cmd_sintercard(struct conn *c)
{
    int64_t nk, limit = 0;
    if (!cmd_numkeys(c, 1, &nk))
        return;
    for (size_t i = 2 + (size_t)nk; i < c->argc; i += 2) {
        if (cmd_arg_is(c, i, "limit") && i + 1 < c->argc) {
            if (kv_str2ll(c->argv[i + 1].p, c->argv[i + 1].n, &limit) || limit < 0) {
                resp_error(OUT(c), "ERR LIMIT can't be negative");
                return;
            }
        } else {
            cmd_reply_syntax(c);
            return;
        }
    }
    struct db_vec v;
    db_vec_init(&v);
    int rc = db_setop(srv.db, c->db, DB_SINTER, c->argv + 2, (size_t)nk, (uint64_t)limit, &v);
    cmd_reply_int(c, rc, (int64_t)v.n);
    db_vec_destroy(&v);
}

/* SSCAN key cursor [MATCH pattern] [COUNT count] */
void cmd_sscan(struct conn *c)
{
    cmd_cscan_generic(c, ENC_TYPE_SET);
}
