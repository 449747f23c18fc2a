/*
 * cmd_pop — what the blocking commands share before they park: their
 * timeout argument, whether a client may park, and the shapes of the
 * multi-key pops (BLPOP's "key ... timeout", LMPOP's "numkeys key ... END
 * [COUNT n]"), each type giving its own pop (cmd_pop_fn). Parking and
 * serving are cmd.c's (cmd_block, cmd_serve_ready).
 */
#include "cmd.h"

#include <math.h>

#include "kv_num.h"

bool cmd_timeout_arg(struct conn *c, size_t i, uint64_t *deadline)
{
    long double t;
    if (kv_str2ld(c->argv[i].p, c->argv[i].n, &t) || isinf(t) || t > 1e15L) {
        resp_error(OUT(c), "ERR timeout is not a float or out of range");
        return false;
    }
    if (t < 0) {
        resp_error(OUT(c), "ERR timeout is negative");
        return false;
    }
    uint64_t ms = (uint64_t)(t * 1000.0L + 0.5L);
    *deadline = ms ? srv_mstime() + ms : 0;
    return true;
}

bool cmd_may_block(const struct conn *c)
{
    /* Our primary's stream must never stall behind a parked command. */
    return !(c->flags & (CONN_IN_EXEC | CONN_BLOCKED | CONN_MASTER));
}

/* What a pop that found nothing does: a blocking one parks when it may,
 * else (unless already parked) it answers a null array. */
static void pop_none(struct conn *c, bool blocking, uint64_t deadline)
{
    if (blocking && cmd_may_block(c))
        cmd_block(c, deadline);
    else if (!(c->flags & CONN_BLOCKED))
        resp_null_array(OUT(c), c->proto);
}

void cmd_bpop(struct conn *c, cmd_pop_fn pop, int end)
{
    uint64_t deadline = 0;
    if (!(c->flags & CONN_BLOCKED) && !cmd_timeout_arg(c, c->argc - 1, &deadline))
        return;
    if (!pop(c, 1, c->argc - 2, end, 1, false))
        pop_none(c, true, deadline);
}

/* [B]LMPOP/[B]ZMPOP's "[timeout] numkeys key [key ...] END [COUNT count]",
 * the timeout only when blocking; END one of the two words: *end is 1 for
 * end1, 0 for end0. *count is 1 without COUNT; *deadline as
 * cmd_timeout_arg's (left alone when not blocking or already parked).
 * Replies Redis's error on failure. */
static bool mpop_args(struct conn *c, bool blocking, const char *end1, const char *end0,
                      int64_t *nk, int *end, int64_t *count, uint64_t *deadline)
{
    size_t at = blocking ? 2 : 1;
    if (kv_str2ll(c->argv[at].p, c->argv[at].n, nk) || *nk <= 0) {
        resp_error(OUT(c), "ERR numkeys should be greater than 0");
        return false;
    }
    size_t w = at + 1 + (size_t)*nk;
    if ((uint64_t)*nk >= c->argc - at - 1 || !(cmd_arg_is(c, w, end1) || cmd_arg_is(c, w, end0))) {
        cmd_reply_syntax(c);
        return false;
    }
    *end = cmd_arg_is(c, w, end1);
    *count = -1;
    for (size_t i = w + 1; i < c->argc; i += 2) {
        if (*count != -1 || !cmd_arg_is(c, i, "count") || i + 1 >= c->argc) {
            cmd_reply_syntax(c);
            return false;
        }
        if (kv_str2ll(c->argv[i + 1].p, c->argv[i + 1].n, count) || *count <= 0) {
            resp_error(OUT(c), "ERR count should be greater than 0");
            return false;
        }
    }
    if (*count == -1)
        *count = 1;
    /* The timeout is read after the rest, as Redis reads it. */
    return !blocking || (c->flags & CONN_BLOCKED) || cmd_timeout_arg(c, 1, deadline);
}

void cmd_mpop(struct conn *c, cmd_pop_fn pop, bool blocking, const char *end1, const char *end0)
{
    size_t at = blocking ? 2 : 1;
    int64_t nk, count;
    int end;
    uint64_t deadline = 0;
    if (!mpop_args(c, blocking, end1, end0, &nk, &end, &count, &deadline))
        return;
    if (!pop(c, at + 1, at + (size_t)nk, end, (uint64_t)count, true))
        pop_none(c, blocking, deadline);
}
