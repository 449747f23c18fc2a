/*
 * cmd_string — string commands: parse, call one db_ function, reply.
 */
#include "cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_mem.h"

/* Turns an expiry argument into absolute ms. unit_ms: 1000 for seconds;
 * absolute: EXAT/PXAT. Replies "invalid expire time in '<cmd>'" when the
 * value is not positive or overflows. */
static bool expire_arg(struct conn *c, size_t i, int64_t unit_ms, bool absolute, uint64_t *out,
                       const char *cmdname)
{
    int64_t v;
    if (!cmd_arg_ll(c, i, &v))
        return false;
    if (v <= 0 || v > INT64_MAX / unit_ms)
        goto bad;
    v *= unit_ms;
    if (!absolute) {
        int64_t now = (int64_t)srv_mstime();
        if (v > INT64_MAX - now)
            goto bad;
        v += now;
    }
    *out = (uint64_t)v;
    return true;
bad:
    resp_errorf(OUT(c), "ERR invalid expire time in '%s' command", cmdname);
    return false;
}

static void reply_old(struct conn *c, char *old, size_t oldn)
{
    if (old)
        resp_bulk(OUT(c), old, oldn);
    else
        resp_null(OUT(c), c->proto);
    free(old);
}

/* The events of a string written whole: "set", then "expire" if it got a
 * time to live. */
static void notify_set(struct conn *c, bool expire)
{
    cmd_notify_arg(c, SRV_NOTIFY_STRING, "set", 1);
    if (expire)
        cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "expire", 1);
}

/* GET key */
void cmd_get(struct conn *c)
{
    char *v;
    size_t vn;
    int rc = db_get(srv.db, c->db, CMD_ARG(1), &v, &vn);
    if (rc == KV_ENOTFOUND) {
        resp_null(OUT(c), c->proto);
    } else if (rc) {
        cmd_reply_err(c, rc);
    } else {
        resp_bulk(OUT(c), v, vn);
        free(v);
    }
}

/* SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL] */
void cmd_set(struct conn *c)
{
    int flags = 0;
    uint64_t exp = 0;
    bool have_exp = false, exp_secs = false, exp_abs = false;
    size_t exp_at = 0;
    for (size_t i = 3; i < c->argc; i++) {
        bool more = i + 1 < c->argc;
        if (cmd_arg_is(c, i, "nx") && !(flags & DB_SET_XX)) {
            flags |= DB_SET_NX;
        } else if (cmd_arg_is(c, i, "xx") && !(flags & DB_SET_NX)) {
            flags |= DB_SET_XX;
        } else if (cmd_arg_is(c, i, "get")) {
            flags |= DB_SET_GET;
        } else if (cmd_arg_is(c, i, "keepttl") && !have_exp) {
            flags |= DB_SET_KEEPTTL;
        } else if (more && !have_exp && !(flags & DB_SET_KEEPTTL) &&
                   (cmd_arg_is(c, i, "ex") || cmd_arg_is(c, i, "px") || cmd_arg_is(c, i, "exat") ||
                    cmd_arg_is(c, i, "pxat"))) {
            exp_secs = cmd_arg_is(c, i, "ex") || cmd_arg_is(c, i, "exat");
            exp_abs = cmd_arg_is(c, i, "exat") || cmd_arg_is(c, i, "pxat");
            have_exp = true;
            exp_at = ++i;
        } else {
            cmd_reply_syntax(c);
            return;
        }
    }
    /* Like Redis: every option is checked before the expiry's value. */
    if (have_exp && !expire_arg(c, exp_at, exp_secs ? 1000 : 1, exp_abs, &exp, "set"))
        return;
    char *old = NULL;
    size_t oldn = 0;
    int rc = db_set(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), exp, flags, &old, &oldn);
    if (rc == 1)
        notify_set(c, have_exp);
    if (rc < 0)
        cmd_reply_err(c, rc);
    else if (flags & DB_SET_GET)
        reply_old(c, old, oldn);
    else if (rc == 1)
        resp_simple(OUT(c), "OK");
    else
        resp_null(OUT(c), c->proto);
}

/* SETNX key value */
void cmd_setnx(struct conn *c)
{
    int rc = db_set(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), 0, DB_SET_NX, NULL, NULL);
    if (rc == 1)
        notify_set(c, false);
    cmd_reply_int(c, rc, rc);
}

static void setex_generic(struct conn *c, int64_t unit, const char *name)
{
    uint64_t exp;
    if (!expire_arg(c, 2, unit, false, &exp, name))
        return;
    int rc = db_set(srv.db, c->db, CMD_ARG(1), CMD_ARG(3), exp, 0, NULL, NULL);
    if (rc == 1)
        notify_set(c, true);
    cmd_reply_ok(c, rc);
}

/* SETEX key seconds value */
void cmd_setex(struct conn *c)
{
    setex_generic(c, 1000, "setex");
}

/* PSETEX key milliseconds value */
void cmd_psetex(struct conn *c)
{
    setex_generic(c, 1, "psetex");
}

static void mget_one(void *arg, const char *v, size_t vn)
{
    struct conn *c = arg;
    if (v)
        resp_bulk(OUT(c), v, vn);
    else
        resp_null(OUT(c), c->proto); /* absent or another type */
}

/* MGET key [key ...] */
void cmd_mget(struct conn *c)
{
    /* The reply goes out as the keys are read; a read that fails takes
     * it back (nothing leaves before the command ends) for GET's error. */
    size_t mark = resp_buf_used(&c->out); /* c->out itself: OUT() may turn to a scratch buffer */
    resp_array(OUT(c), c->argc - 1);
    int rc = db_mget(srv.db, c->db, c->argv + 1, c->argc - 1, CMD_KEYS_AHEAD, mget_one, c);
    if (rc) {
        if (resp_buf_used(&c->out) > mark)
            c->out.len = c->out.off + mark;
        cmd_reply_err(c, rc);
    }
}

static void mset_generic(struct conn *c, int nx)
{
    if (c->argc % 2 == 0) {
        resp_errorf(OUT(c), "ERR wrong number of arguments for '%s' command",
                    nx ? "msetnx" : "mset");
        return;
    }
    int rc = db_mset(srv.db, c->db, c->argv + 1, (c->argc - 1) / 2, nx);
    for (size_t i = 1; rc == 1 && i < c->argc; i += 2)
        cmd_notify_arg(c, SRV_NOTIFY_STRING, "set", i);
    if (rc < 0)
        cmd_reply_err(c, rc);
    else if (nx)
        resp_int(OUT(c), rc);
    else
        resp_simple(OUT(c), "OK");
}

/* MSET key value [key value ...] */
void cmd_mset(struct conn *c)
{
    mset_generic(c, 0);
}

/* MSETNX key value [key value ...] */
void cmd_msetnx(struct conn *c)
{
    mset_generic(c, 1);
}

/* GETSET key value */
void cmd_getset(struct conn *c)
{
    char *old = NULL;
    size_t oldn = 0;
    int rc = db_set(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), 0, DB_SET_GET, &old, &oldn);
    if (rc == 1)
        notify_set(c, false);
    if (rc < 0)
        cmd_reply_err(c, rc);
    else
        reply_old(c, old, oldn);
}

/* GETDEL key */
void cmd_getdel(struct conn *c)
{
    char *v;
    size_t vn;
    int rc = db_getdel(srv.db, c->db, CMD_ARG(1), &v, &vn);
    if (rc == 0)
        cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "del", 1);
    cmd_reply_bulk(c, rc, v, vn);
}

/* GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST] */
void cmd_getex(struct conn *c)
{
    int mode = DB_GETEX_KEEP;
    uint64_t exp = 0;
    bool exp_secs = false, exp_abs = false;
    size_t exp_at = 0;
    for (size_t i = 2; i < c->argc; i++) {
        bool more = i + 1 < c->argc;
        if (cmd_arg_is(c, i, "persist") && mode == DB_GETEX_KEEP) {
            mode = DB_GETEX_PERSIST;
        } else if (more && mode == DB_GETEX_KEEP &&
                   (cmd_arg_is(c, i, "ex") || cmd_arg_is(c, i, "px") || cmd_arg_is(c, i, "exat") ||
                    cmd_arg_is(c, i, "pxat"))) {
            exp_secs = cmd_arg_is(c, i, "ex") || cmd_arg_is(c, i, "exat");
            exp_abs = cmd_arg_is(c, i, "exat") || cmd_arg_is(c, i, "pxat");
            exp_at = ++i;
            mode = DB_GETEX_SET;
        } else {
            cmd_reply_syntax(c);
            return;
        }
    }
    if (mode == DB_GETEX_SET && !expire_arg(c, exp_at, exp_secs ? 1000 : 1, exp_abs, &exp, "getex"))
        return;
    char *v;
    size_t vn;
    int rc = db_getex(srv.db, c->db, CMD_ARG(1), mode, exp, &v, &vn);
    if (rc > 0) /* a time to live was set or removed, or a past one deleted the key */
        cmd_notify_arg(c, SRV_NOTIFY_GENERIC,
                       mode == DB_GETEX_PERSIST ? "persist"
                       : rc == 2                ? "del"
                                                : "expire",
                       1);
    cmd_reply_bulk(c, rc > 0 ? 0 : rc, v, vn);
}

/* APPEND key value */
void cmd_append(struct conn *c)
{
    uint64_t n;
    int rc = db_append(srv.db, c->db, CMD_ARG(1), CMD_ARG(2), &n);
    if (rc == 0)
        cmd_notify_arg(c, SRV_NOTIFY_STRING, "append", 1);
    cmd_reply_int(c, rc, (int64_t)n);
}

/* STRLEN key */
void cmd_strlen(struct conn *c)
{
    uint64_t n;
    int rc = db_strlen(srv.db, c->db, CMD_ARG(1), &n);
    cmd_reply_int(c, rc, (int64_t)n);
}

static void incr_generic(struct conn *c, int64_t delta)
{
    int64_t v;
    int rc = db_incrby(srv.db, c->db, CMD_ARG(1), delta, &v);
    if (rc == 0)
        cmd_notify_arg(c, SRV_NOTIFY_STRING, "incrby", 1);
    cmd_reply_int(c, rc, v);
}

/* INCR key */
void cmd_incr(struct conn *c)
{
    incr_generic(c, 1);
}

/* DECR key */
void cmd_decr(struct conn *c)
{
    incr_generic(c, -1);
}

/* INCRBY key increment */
void cmd_incrby(struct conn *c)
{
    int64_t d;
    if (cmd_arg_ll(c, 2, &d))
        incr_generic(c, d);
}

/* DECRBY key decrement */
void cmd_decrby(struct conn *c)
{
    int64_t d;
    if (!cmd_arg_ll(c, 2, &d))
        return;
    if (d == INT64_MIN) {
        resp_error(OUT(c), "ERR decrement would overflow");
        return;
    }
    incr_generic(c, -d);
}

/* INCRBYFLOAT key increment */
void cmd_incrbyfloat(struct conn *c)
{
    long double d;
    if (kv_str2ld(c->argv[2].p, c->argv[2].n, &d)) {
        /* Redis checks the key's type before the increment. */
        int rc = cmd_key_type(c, 1, ENC_TYPE_STRING, NULL);
        cmd_reply_err(c, rc ? rc : KV_ENOTFLOAT);
        return;
    }
    char out[KV_LDSTR_MAX];
    size_t n;
    int rc = db_incrbyfloat(srv.db, c->db, CMD_ARG(1), d, out, &n);
    if (rc) {
        cmd_reply_err(c, rc);
        return;
    }
    /* Replicas set the value computed here, whatever their rounding. */
    struct db_str as[4] = {
        {.p = "SET", .n = 3}, c->argv[1], {.p = out, .n = n}, {.p = "KEEPTTL", .n = 7}};
    cmd_propagate_as(as, 4);
    cmd_notify_arg(c, SRV_NOTIFY_STRING, "incrbyfloat", 1);
    resp_bulk(OUT(c), out, n);
}

/* GETRANGE key start end (also SUBSTR) */
void cmd_getrange(struct conn *c)
{
    int64_t s, e;
    if (!cmd_arg_ll(c, 2, &s) || !cmd_arg_ll(c, 3, &e))
        return;
    char *v;
    size_t vn;
    int rc = db_getrange(srv.db, c->db, CMD_ARG(1), s, e, &v, &vn);
    if (rc) {
        cmd_reply_err(c, rc);
        return;
    }
    resp_bulk(OUT(c), v, vn);
    free(v);
}

/* SETRANGE key offset value */
void cmd_setrange(struct conn *c)
{
    int64_t off;
    if (!cmd_arg_ll(c, 2, &off))
        return;
    if (off < 0) {
        resp_error(OUT(c), "ERR offset is out of range");
        return;
    }
    uint64_t n;
    int rc = db_setrange(srv.db, c->db, CMD_ARG(1), (uint64_t)off, CMD_ARG(3), &n);
    if (rc == 0 && c->argv[3].n) /* an empty value changes nothing */
        cmd_notify_arg(c, SRV_NOTIFY_STRING, "setrange", 1);
    cmd_reply_int(c, rc, (int64_t)n);
}

/* ---- LCS ---- */

/* One key's string for LCS: "" when absent. 0, or 1 after replying. */
static int lcs_value(struct conn *c, size_t i, char **v, size_t *vn)
{
    int rc = db_get(srv.db, c->db, CMD_ARG(i), v, vn);
    if (rc == KV_ENOTFOUND) {
        *v = NULL;
        *vn = 0;
        return 0;
    }
    if (rc == KV_EWRONGTYPE)
        resp_error(OUT(c), "ERR The specified keys must contain string values");
    else if (rc)
        cmd_reply_err(c, rc);
    return rc ? 1 : 0;
}

/* Walks the table t of prefix LCS lengths ((an + 1) x (bn + 1)) back from
 * the ends and replies the subsequence, or with IDX its runs (contiguous
 * in both strings), last first. On a tie it steps back in b, which picks
 * the subsequence and runs that redis-server picks. The runs are counted
 * in a first pass: the reply needs their number before them. */
static void lcs_reply(struct conn *c, const char *a, size_t an, const char *b, size_t bn,
                      const uint32_t *t, bool idx, bool withlen, uint64_t minlen)
{
    size_t cols = bn + 1;
    uint32_t total = t[an * cols + bn];
    char *seq = kv_xmalloc((size_t)total + 1);
    size_t nruns = 0;
    for (int pass = 0; pass < (idx ? 2 : 1); pass++) {
        if (pass == 1) {
            resp_map(OUT(c), 2, c->proto);
            resp_bulk_cstr(OUT(c), "matches");
            resp_array(OUT(c), nruns);
        }
        size_t i = an, j = bn, k = total, run = 0; /* run: bytes of the current run */
        for (;;) {
            bool more = i > 0 && j > 0;
            bool match = more && a[i - 1] == b[j - 1];
            if (run && !match) {
                /* The run a[i, i + run) = b[j, j + run) ends here. */
                if (run >= minlen) {
                    if (pass == 1) {
                        resp_array(OUT(c), withlen ? 3 : 2);
                        resp_array(OUT(c), 2);
                        resp_int(OUT(c), (int64_t)i);
                        resp_int(OUT(c), (int64_t)(i + run - 1));
                        resp_array(OUT(c), 2);
                        resp_int(OUT(c), (int64_t)j);
                        resp_int(OUT(c), (int64_t)(j + run - 1));
                        if (withlen)
                            resp_int(OUT(c), (int64_t)run);
                    } else {
                        nruns++;
                    }
                }
                run = 0;
            }
            if (!more)
                break;
            if (match) {
                seq[--k] = a[i - 1];
                run++;
                i--;
                j--;
            } else if (t[(i - 1) * cols + j] > t[i * cols + j - 1]) {
                i--;
            } else {
                j--;
            }
        }
    }
    if (idx) {
        resp_bulk_cstr(OUT(c), "len");
        resp_int(OUT(c), total);
    } else {
        resp_bulk(OUT(c), seq, total);
    }
    free(seq);
}

/* LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the longest
 * common subsequence by the classic table of prefix lengths, O(N*M) time
 * and memory; a table larger than proto-max-bulk-len is refused, as Redis
 * refuses it. */
void cmd_lcs(struct conn *c)
{
    bool len = false, idx = false, withlen = false;
    int64_t minlen = 0;
    for (size_t i = 3; i < c->argc; i++) {
        if (cmd_arg_is(c, i, "len")) {
            len = true;
        } else if (cmd_arg_is(c, i, "idx")) {
            idx = true;
        } else if (cmd_arg_is(c, i, "withmatchlen")) {
            withlen = true;
        } else if (cmd_arg_is(c, i, "minmatchlen") && i + 1 < c->argc) {
            if (!cmd_arg_ll(c, ++i, &minlen))
                return;
        } else {
            cmd_reply_syntax(c);
            return;
        }
    }
    if (len && idx) {
        resp_error(OUT(c), "ERR If you want both the length and indexes, please just use IDX.");
        return;
    }
    char *a, *b;
    size_t an, bn;
    if (lcs_value(c, 1, &a, &an))
        return;
    if (lcs_value(c, 2, &b, &bn)) {
        free(a);
        return;
    }
    size_t cols = bn + 1;
    uint64_t cells = (uint64_t)(an + 1) * cols; /* values are far below 2^32 bytes */
    uint32_t *t = NULL;
    if (cells > UINT64_MAX / 4 || cells * 4 > (uint64_t)srv.conf.proto_max_bulk_len)
        resp_error(OUT(c),
                   "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    else if (!(t = malloc((size_t)cells * sizeof *t)))
        resp_error(OUT(c), "ERR Insufficient memory, failed allocating transient memory for LCS");
    if (t) {
        for (size_t j = 0; j <= bn; j++)
            t[j] = 0;
        for (size_t i = 1; i <= an; i++) {
            uint32_t *row = t + i * cols;
            const uint32_t *up = row - cols;
            row[0] = 0;
            for (size_t j = 1; j <= bn; j++)
                row[j] = a[i - 1] == b[j - 1] ? up[j - 1] + 1
                         : up[j] > row[j - 1] ? up[j]
                                              : row[j - 1];
        }
        if (len)
            resp_int(OUT(c), t[an * cols + bn]);
        else
            lcs_reply(c, a, an, b, bn, t, idx, withlen, minlen < 0 ? 0 : (uint64_t)minlen);
    }
    free(t);
    free(a);
    free(b);
}
