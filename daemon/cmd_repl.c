/*
 * cmd_repl — what a command puts into the replication stream (srv_repl.h):
 * its own arguments, or the form a handler gave (cmd_propagate_as), or,
 * for the commands that set expiries, the absolute time read back; the
 * DELs of keys a command found expired; active expiry's DELs.
 * replication.md, "The stream", has the table of rewrites.
 */
#include "cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kv_err.h"
#include "kv_mem.h"
#include "srv_repl.h"

/* Keys a command found expired (db_track_seen_expired): replicas, whose
 * primary's commands see keys as present, get a DEL of each before the
 * command, as Redis's lookups send one. */
static struct db_vec seen_expired;
static bool reaping; /* active expiry is committing: its deletes are DELs */

void cmd_reaping(bool on)
{
    reaping = on && srv_repl_active() && !srv_repl_following();
}

static void propagate_seen_expired(void)
{
    for (size_t i = 0; i < seen_expired.n; i++) {
        struct db_str del[2] = {
            {.p = "DEL", .n = 3},
            {.p = db_vec_ptr(&seen_expired, i), .n = db_vec_len(&seen_expired, i)}};
        srv_repl_propagate((unsigned)seen_expired.items[i].score, del, 2);
    }
    db_vec_clear(&seen_expired);
}
/* The running command's own form for the stream (cmd_propagate_as). */
static struct db_vec prop_as;
static bool prop_as_set;

void cmd_propagate_as(const struct db_str *argv, size_t argc)
{
    db_vec_clear(&prop_as);
    for (size_t i = 0; i < argc; i++)
        db_vec_push(&prop_as, argv[i].p, argv[i].n, 0);
    prop_as_set = true;
}

/* Whether an option word of SET names a relative or absolute expiry. */
static bool set_expiry_word(const struct db_str *a)
{
    static const char *const w[] = {"ex", "px", "exat", "pxat"};
    for (size_t i = 0; i < 4; i++)
        if (a->n == strlen(w[i]) && !strncasecmp(a->p, w[i], a->n))
            return true;
    return false;
}

/* The stream's form of a command whose expiry Redis sends as an absolute
 * time: whatever the command set, read back (a key it left absent is a
 * DEL). false for the other commands. */
static bool propagate_expiry(const struct conn *c, const struct cmd *cmd)
{
    const char *n = cmd->name;
    bool expire = !strcmp(n, "expire") || !strcmp(n, "pexpire") || !strcmp(n, "expireat") ||
                  !strcmp(n, "pexpireat") || !strcmp(n, "getex");
    bool setex = !strcmp(n, "setex") || !strcmp(n, "psetex");
    bool set = !strcmp(n, "set"), restore = !strcmp(n, "restore");
    if (set) {
        set = false;
        for (size_t i = 3; i < c->argc && !set; i++)
            set = set_expiry_word(&c->argv[i]);
    }
    if (restore)
        restore = !(c->argv[2].n == 1 && c->argv[2].p[0] == '0');
    if (!expire && !setex && !set && !restore)
        return false;
    uint64_t ms = 0;
    const struct db_str *key = &c->argv[1];
    int rc = db_expiretime(srv.db, c->db, key->p, key->n, &ms);
    char num[24];
    struct db_str msarg = {.p = num,
                           .n = (size_t)snprintf(num, sizeof num, "%llu", (unsigned long long)ms)};
    if (rc == KV_ENOTFOUND) {
        struct db_str del[2] = {{.p = "DEL", .n = 3}, *key};
        srv_repl_propagate(c->db, del, 2);
    } else if (rc) {
        return false; /* unreadable: sent as it came */
    } else if (expire && !ms) {
        struct db_str v[2] = {{.p = "PERSIST", .n = 7}, *key};
        srv_repl_propagate(c->db, v, 2);
    } else if (expire) {
        struct db_str v[3] = {{.p = "PEXPIREAT", .n = 9}, *key, msarg};
        srv_repl_propagate(c->db, v, 3);
    } else if (setex || set) {
        const struct db_str *val = setex ? &c->argv[3] : &c->argv[2];
        struct db_str v[5] = {{.p = "SET", .n = 3}, *key, *val, {.p = "PXAT", .n = 4}, msarg};
        srv_repl_propagate(c->db, v, 5);
    } else { /* RESTORE key ttl payload [options]: the time made absolute */
        struct db_str v[16];
        size_t k = 0;
        for (size_t i = 0; i < c->argc && k < 15; i++)
            if (!(i > 3 && c->argv[i].n == 6 && !strncasecmp(c->argv[i].p, "absttl", 6)))
                v[k++] = i == 2 ? msarg : c->argv[i];
        v[k++] = (struct db_str){.p = "ABSTTL", .n = 6};
        srv_repl_propagate(c->db, v, k);
    }
    return true;
}

/* A command that changed data, into the stream: its own form if it gave
 * one, else as it came, expiries made absolute. A script's and EXEC's
 * commands are each propagated by their own call; DEBUG's changes never
 * are, as in Redis. */
static void propagate_call(const struct conn *c, const struct cmd *cmd)
{
    if (prop_as_set) {
        struct db_str *argv = kv_xmalloc((prop_as.n + 1) * sizeof *argv);
        for (size_t i = 0; i < prop_as.n; i++)
            argv[i] = (struct db_str){.p = db_vec_ptr(&prop_as, i), .n = db_vec_len(&prop_as, i)};
        srv_repl_propagate(c->db, argv, prop_as.n);
        free(argv);
        return;
    }
    if ((cmd->flags & (CMD_SCRIPTING | CMD_PROTECTED)) || cmd->fn == cmd_exec ||
        cmd->fn == cmd_migrate) /* MIGRATE's deletions come as its own form */
        return;
    if (!propagate_expiry(c, cmd))
        srv_repl_propagate(c->db, c->argv, c->argc);
}

void cmd_repl_track(bool on)
{
    db_track_seen_expired(srv.db, on ? &seen_expired : NULL);
}

void cmd_repl_begin(void)
{
    prop_as_set = false;
}

void cmd_repl_after(const struct conn *c, const struct cmd *cmd, bool changed)
{
    propagate_seen_expired();
    if (changed)
        propagate_call(c, cmd);
    prop_as_set = false;
}

void cmd_repl_committed(const struct stor_batch *b)
{
    if (!reaping)
        return;
    for (size_t i = 0; i < b->nops; i++) {
        const struct stor_op *op = &b->ops[i];
        unsigned dbi;
        struct db_str del[2] = {{.p = "DEL", .n = 3}};
        if (op->kind == STOR_OP_DEL && op->cf == STOR_CF_META &&
            !db_record_key(b, op, &dbi, &del[1].p, &del[1].n))
            srv_repl_propagate(dbi, del, 2);
    }
}
