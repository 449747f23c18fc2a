/*
 * cmd_bitmap — bit operations on strings: SETBIT, GETBIT, BITCOUNT, BITPOS,
 * BITOP, BITFIELD. Bit 0 is the first byte's most significant bit, as in
 * Redis.
 */
#include "cmd.h"

#include <stdlib.h>

#include "kv_mem.h"

/* A bit offset within the longest string allowed (proto-max-bulk-len). */
static bool offset_arg(struct conn *c, size_t i, uint64_t *off)
{
    int64_t v;
    if (kv_str2ll(c->argv[i].p, c->argv[i].n, &v) || v < 0 ||
        ((uint64_t)v >> 3) >= (uint64_t)srv.conf.proto_max_bulk_len) {
        resp_error(OUT(c), "ERR bit offset is not an integer or out of range");
        return false;
    }
    *off = (uint64_t)v;
    return true;
}

/* SETBIT key offset value */
void cmd_setbit(struct conn *c)
{
    uint64_t off;
    int64_t on;
    if (!offset_arg(c, 2, &off))
        return;
    if (kv_str2ll(c->argv[3].p, c->argv[3].n, &on) || (on != 0 && on != 1)) {
        resp_error(OUT(c), "ERR bit is not an integer or out of range");
        return;
    }
    int old = 0;
    int rc = db_setbit(srv.db, c->db, CMD_ARG(1), off, (int)on, &old);
    if (rc == 1) /* not when the bit already had that value, as in Redis */
        cmd_notify_arg(c, SRV_NOTIFY_STRING, "setbit", 1);
    cmd_reply_int(c, rc, old);
}

/* Reads key's string into *v (absent: *v NULL, rc 0). Replies and returns
 * false on an error (WRONGTYPE). */
static bool read_string(struct conn *c, char **v, size_t *vn)
{
    int rc = db_get(srv.db, c->db, CMD_ARG(1), v, vn);
    if (rc == KV_ENOTFOUND) {
        *v = NULL;
        *vn = 0;
        return true;
    }
    if (rc) {
        cmd_reply_err(c, rc);
        return false;
    }
    return true;
}

/* GETBIT key offset */
void cmd_getbit(struct conn *c)
{
    uint64_t off;
    char *v;
    size_t vn;
    if (!offset_arg(c, 2, &off) || !read_string(c, &v, &vn))
        return;
    uint64_t byte = off >> 3;
    resp_int(OUT(c), byte < vn && ((unsigned char)v[byte] & (0x80u >> (off & 7))));
    free(v);
}

/* The bits of byte i that lie in [s, e] (bit numbers), as a mask. */
static unsigned in_range(uint64_t i, uint64_t s, uint64_t e)
{
    unsigned m = 0xffu;
    if (i == s >> 3)
        m &= 0xffu >> (s & 7);
    if (i == e >> 3)
        m &= (0xff00u >> ((e & 7) + 1)) & 0xffu;
    return m;
}

static uint64_t count_bits(const unsigned char *p, uint64_t s, uint64_t e)
{
    uint64_t i = s >> 3, last = e >> 3, n = 0;
    n += (uint64_t)__builtin_popcount(p[i] & in_range(i, s, e));
    if (i == last)
        return n;
    for (i++; i + 8 <= last; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        n += (uint64_t)__builtin_popcountll(w);
    }
    for (; i < last; i++)
        n += (uint64_t)__builtin_popcount(p[i]);
    return n + (uint64_t)__builtin_popcount(p[last] & in_range(last, s, e));
}

/* The first bit equal to `bit` in [s, e], or -1. */
static int64_t find_bit(const unsigned char *p, uint64_t s, uint64_t e, int bit)
{
    uint64_t skip = bit ? 0 : ~(uint64_t)0; /* a word with no such bit */
    for (uint64_t i = s >> 3, last = e >> 3; i <= last; i++) {
        if (i > s >> 3 && i + 8 <= last) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w == skip) {
                i += 7;
                continue;
            }
        }
        unsigned b = (bit ? p[i] : (unsigned char)~p[i]) & in_range(i, s, e);
        if (b)
            return (int64_t)(i * 8) + __builtin_clz(b) - 24;
    }
    return -1;
}

/* BITCOUNT's and BITPOS's range: negative indexes count from the end, then
 * both are clamped into [0, total); false if nothing is left. */
static bool clamp_range(int64_t *start, int64_t *end, int64_t total)
{
    if (*start < 0)
        *start += total;
    if (*end < 0)
        *end += total;
    if (*start < 0)
        *start = 0;
    if (*end < 0)
        *end = 0;
    if (*end >= total)
        *end = total - 1;
    return total > 0 && *start <= *end;
}

/* BYTE|BIT at argument i: *bits = 1 for BIT. Replies on error. */
static bool unit_arg(struct conn *c, size_t i, bool *bits)
{
    if (cmd_arg_is(c, i, "byte") || cmd_arg_is(c, i, "bit")) {
        *bits = cmd_arg_is(c, i, "bit");
        return true;
    }
    cmd_reply_syntax(c);
    return false;
}

/* BITCOUNT key [start end [BYTE|BIT]]: the key is looked at first, so an
 * absent key answers 0 whatever follows, as in Redis. */
void cmd_bitcount(struct conn *c)
{
    char *v;
    size_t vn;
    if (!read_string(c, &v, &vn))
        return;
    int64_t start = 0, end = -1;
    bool bits = false;
    if (!v) {
        resp_int(OUT(c), 0);
        return;
    }
    if (c->argc == 4 || c->argc == 5) {
        if (!cmd_arg_ll(c, 2, &start) || !cmd_arg_ll(c, 3, &end) ||
            (c->argc == 5 && !unit_arg(c, 4, &bits)))
            goto out;
    } else if (c->argc != 2) {
        cmd_reply_syntax(c);
        goto out;
    }
    uint64_t n = 0;
    /* Both from the end and crossed is empty before any clamping (BITPOS
     * has no such rule: there they clamp to [0, 0]). */
    bool crossed = start < 0 && end < 0 && start > end;
    if (!crossed && clamp_range(&start, &end, bits ? (int64_t)vn * 8 : (int64_t)vn))
        n = count_bits((const unsigned char *)v, bits ? (uint64_t)start : (uint64_t)start * 8,
                       bits ? (uint64_t)end : (uint64_t)end * 8 + 7);
    resp_int(OUT(c), (int64_t)n);
out:
    free(v);
}

/* BITPOS key bit [start [end [BYTE|BIT]]] */
void cmd_bitpos(struct conn *c)
{
    int64_t bit;
    if (!cmd_arg_ll(c, 2, &bit))
        return;
    if (bit != 0 && bit != 1) {
        resp_error(OUT(c), "ERR The bit argument must be 1 or 0.");
        return;
    }
    char *v;
    size_t vn;
    if (!read_string(c, &v, &vn))
        return;
    if (!v) {
        resp_int(OUT(c), bit ? -1 : 0); /* all zeros, however long */
        return;
    }
    int64_t start = 0, end = -1;
    bool bits = false, end_given = c->argc >= 5;
    if (c->argc >= 4 && c->argc <= 6) {
        if (!cmd_arg_ll(c, 3, &start) || (end_given && !cmd_arg_ll(c, 4, &end)) ||
            (c->argc == 6 && !unit_arg(c, 5, &bits)))
            goto out;
    } else if (c->argc != 3) {
        cmd_reply_syntax(c);
        goto out;
    }
    int64_t pos = -1;
    if (clamp_range(&start, &end, bits ? (int64_t)vn * 8 : (int64_t)vn)) {
        uint64_t s = bits ? (uint64_t)start : (uint64_t)start * 8;
        uint64_t e = bits ? (uint64_t)end : (uint64_t)end * 8 + 7;
        pos = find_bit((const unsigned char *)v, s, e, (int)bit);
        /* Without an end, the string reads as padded with zeros. */
        if (pos < 0 && bit == 0 && !end_given)
            pos = (int64_t)e + 1;
    }
    resp_int(OUT(c), pos);
out:
    free(v);
}

/* BITOP AND|OR|XOR|NOT destkey key [key ...] */
void cmd_bitop(struct conn *c)
{
    static const char *const ops[] = {"and", "or", "xor", "not"};
    int op = 0;
    for (int i = 0; i < 4; i++)
        if (cmd_arg_is(c, 1, ops[i]))
            op = i + 1; /* DB_BITOP_AND .. DB_BITOP_NOT */
    if (!op) {
        cmd_reply_syntax(c);
        return;
    }
    if (op == DB_BITOP_NOT && c->argc != 4) {
        resp_error(OUT(c), "ERR BITOP NOT must be called with a single source key.");
        return;
    }
    uint64_t len = 0;
    bool had = cmd_notify_had(c, &c->argv[2]);
    int rc = db_bitop(srv.db, c->db, op, CMD_ARG(2), c->argv + 3, c->argc - 3, &len);
    if (rc == 0)
        cmd_notify_store(c, SRV_NOTIFY_STRING, "set", &c->argv[2], len, had);
    cmd_reply_int(c, rc, (int64_t)len);
}

/* iN (N 1-64) or uN (N 1-63). */
static bool bf_type_arg(struct conn *c, size_t i, struct db_bfop *o)
{
    const char *p = c->argv[i].p;
    size_t n = c->argv[i].n;
    int64_t bits;
    bool ok = n >= 2 && strchr("iIuU", p[0]) != NULL;
    o->sign = ok && (p[0] == 'i' || p[0] == 'I');
    if (!ok || kv_str2ll(p + 1, n - 1, &bits) || bits < 1 || bits > (o->sign ? 64 : 63)) {
        resp_error(OUT(c), "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 "
                           "is not supported but i64 is.");
        return false;
    }
    o->bits = (uint8_t)bits;
    return true;
}

/* A bit offset, or "#k": the k-th field of this type's width. */
static bool bf_offset_arg(struct conn *c, size_t i, struct db_bfop *o)
{
    const char *p = c->argv[i].p;
    size_t n = c->argv[i].n;
    bool fields = n > 1 && p[0] == '#';
    int64_t v;
    if (kv_str2ll(p + fields, n - fields, &v) || v < 0 || (fields && v > INT64_MAX / o->bits) ||
        (((uint64_t)v * (fields ? o->bits : 1)) >> 3) >= (uint64_t)srv.conf.proto_max_bulk_len) {
        resp_error(OUT(c), "ERR bit offset is not an integer or out of range");
        return false;
    }
    o->offset = (uint64_t)v * (fields ? o->bits : 1);
    return true;
}

/* BITFIELD key [GET type offset | [OVERFLOW WRAP|SAT|FAIL] SET type offset
 * value | [OVERFLOW ...] INCRBY type offset increment] ...; BITFIELD_RO
 * takes GETs only. Every operation is checked before any runs. */
static void bitfield_generic(struct conn *c, bool readonly)
{
    struct db_bfop *ops = kv_xmalloc(c->argc * sizeof *ops);
    size_t n = 0;
    uint8_t overflow = DB_BF_WRAP;
    for (size_t j = 2; j < c->argc; j++) {
        size_t left = c->argc - j - 1;
        struct db_bfop *o = &ops[n];
        if (cmd_arg_is(c, j, "get") && left >= 2) {
            o->op = DB_BF_GET;
        } else if (cmd_arg_is(c, j, "set") && left >= 3) {
            o->op = DB_BF_SET;
        } else if (cmd_arg_is(c, j, "incrby") && left >= 3) {
            o->op = DB_BF_INCRBY;
        } else if (cmd_arg_is(c, j, "overflow") && left >= 1) {
            j++;
            if (cmd_arg_is(c, j, "wrap")) {
                overflow = DB_BF_WRAP;
            } else if (cmd_arg_is(c, j, "sat")) {
                overflow = DB_BF_SAT;
            } else if (cmd_arg_is(c, j, "fail")) {
                overflow = DB_BF_FAIL;
            } else {
                resp_error(OUT(c), "ERR Invalid OVERFLOW type specified");
                goto out;
            }
            continue;
        } else {
            cmd_reply_syntax(c);
            goto out;
        }
        o->overflow = overflow;
        if (!bf_type_arg(c, j + 1, o) || !bf_offset_arg(c, j + 2, o))
            goto out;
        if (o->op != DB_BF_GET) {
            if (!cmd_arg_ll(c, j + 3, &o->value))
                goto out;
            if (readonly) {
                resp_error(OUT(c), "ERR BITFIELD_RO only supports the GET subcommand");
                goto out;
            }
        }
        j += o->op == DB_BF_GET ? 2 : 3;
        n++;
    }
    int64_t *res = kv_xmalloc((n ? n : 1) * sizeof *res);
    bool *nil = kv_xmalloc((n ? n : 1) * sizeof *nil);
    int rc = db_bitfield(srv.db, c->db, CMD_ARG(1), ops, n, res, nil);
    if (rc == 1)
        cmd_notify_arg(c, SRV_NOTIFY_STRING, "setbit", 1);
    if (rc < 0) {
        cmd_reply_err(c, rc);
    } else {
        resp_array(OUT(c), n);
        for (size_t i = 0; i < n; i++) {
            if (nil[i])
                resp_null(OUT(c), c->proto);
            else
                resp_int(OUT(c), res[i]);
        }
    }
    free(res);
    free(nil);
out:
    free(ops);
}

void cmd_bitfield(struct conn *c)
{
    bitfield_generic(c, false);
}

void cmd_bitfield_ro(struct conn *c)
{
    bitfield_generic(c, true);
}
