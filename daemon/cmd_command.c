/*
 * cmd_command — COMMAND: the command table as Redis 7.0 describes it (INFO,
 * LIST, COUNT, DOCS through cmd_docs.c, GETKEYS and GETKEYSANDFLAGS through
 * the key specs of cmd_keyspecs.c).
 */
#include "cmd.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kv_mem.h"

/* ---- COMMAND ---- */

static void command_flags(struct conn *c, uint32_t flags)
{
    const char *f[8];
    size_t n = 0;
    if (flags & CMD_WRITE)
        f[n++] = "write";
    if (flags & CMD_READONLY)
        f[n++] = "readonly";
    if (flags & CMD_ADMIN)
        f[n++] = "admin";
    if (flags & CMD_NOAUTH)
        f[n++] = "no_auth";
    if (flags & CMD_FAST)
        f[n++] = "fast";
    if (flags & CMD_BLOCKING)
        f[n++] = "blocking";
    if (flags & CMD_NOMULTI)
        f[n++] = "no_multi";
    if (flags & CMD_MOVABLE)
        f[n++] = "movablekeys";
    resp_set(OUT(c), n, c->proto);
    for (size_t i = 0; i < n; i++)
        resp_simple(OUT(c), f[i]);
}

/* The ACL category of a command group: Redis names three differently,
 * and server commands have none of their own. */
static const char *acl_category(const char *group)
{
    static const char *const map[][2] = {
        {"string", "@string"},
        {"generic", "@keyspace"},
        {"hash", "@hash"},
        {"set", "@set"},
        {"sorted-set", "@sortedset"},
        {"list", "@list"},
        {"transactions", "@transaction"},
        {"connection", "@connection"},
        {"bitmap", "@bitmap"},
        {"pubsub", "@pubsub"},
        {"hyperloglog", "@hyperloglog"},
        {"geo", "@geo"},
        {"scripting", "@scripting"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i][0], group))
            return map[i][1];
    return NULL;
}

/* k's ACL categories, space-separated, in the order of Redis's category
 * bits: keyspace, read/write, the data types and pubsub, admin, fast/slow,
 * blocking, dangerous, connection and transaction. A container's own are
 * just its speed's. */
void cmd_cats(const struct cmd *k, char *out, size_t cap)
{
    /* Commands whose categories their group and flags do not give. */
    static const char *const own[][2] = {
        {"sort", "@write @set @sortedset @list @slow @dangerous"},
        {"sort_ro", "@read @set @sortedset @list @slow @dangerous"},
        {"keys", "@keyspace @read @slow @dangerous"},
        {"dbsize", "@keyspace @read @fast"},
        {"flushdb", "@keyspace @write @slow @dangerous"},
        {"flushall", "@keyspace @write @slow @dangerous"},
        {"restore", "@keyspace @write @slow @dangerous"},
        {"migrate", "@keyspace @write @slow @dangerous"},
        {"info", "@slow @dangerous"},
        {"lastsave", "@admin @fast @dangerous"},
        {"role", "@admin @fast @dangerous"},
        {"failover", "@admin @slow @dangerous"},
        {"wait", "@slow @connection"},
        {"command", "@slow @connection"},
        {"readonly", "@fast @connection"},
        {"readwrite", "@fast @connection"},
        {"asking", "@fast @connection"},
        {"swapdb", "@keyspace @write @fast @dangerous"},
        {"eval", "@slow @scripting"},
        {"evalsha", "@slow @scripting"},
        {"eval_ro", "@slow @scripting"},
        {"evalsha_ro", "@slow @scripting"},
        {"fcall", "@slow @scripting"},
        {"fcall_ro", "@slow @scripting"},
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        if (!strcmp(own[i][0], k->name)) {
            snprintf(out, cap, "%s", own[i][1]);
            return;
        }
    }
    const char *group = k->flags & CMD_CONTAINER ? NULL : acl_category(k->group);
    bool late = group && (!strcmp(group, "@connection") || !strcmp(group, "@transaction"));
    const char *cats[8];
    size_t ncats = 0;
    if (group && !strcmp(group, "@keyspace"))
        cats[ncats++] = group;
    if (k->flags & (CMD_WRITE | CMD_READONLY))
        cats[ncats++] = (k->flags & CMD_WRITE) ? "@write" : "@read";
    if (group && !late && strcmp(group, "@keyspace"))
        cats[ncats++] = group;
    if (k->flags & CMD_ADMIN)
        cats[ncats++] = "@admin";
    cats[ncats++] = (k->flags & CMD_FAST) ? "@fast" : "@slow";
    if (k->flags & CMD_BLOCKING)
        cats[ncats++] = "@blocking";
    if (k->flags & CMD_ADMIN)
        cats[ncats++] = "@dangerous";
    if (late)
        cats[ncats++] = group;
    size_t u = 0;
    out[0] = '\0';
    for (size_t i = 0; i < ncats && u < cap; i++)
        u += (size_t)snprintf(out + u, cap - u, "%s%s", i ? " " : "", cats[i]);
}

/* One COMMAND INFO entry but its last field (the subcommands' entries):
 * name, arity, flags, key positions, categories (space-separated, sent as
 * a set), tips (shmkvd gives none) and key specs. */
static void info_entry(struct conn *c, const char *name, int arity, uint32_t flags, int first,
                       int last, int step, const char *cats)
{
    resp_array(OUT(c), 10);
    resp_bulk_cstr(OUT(c), name);
    resp_int(OUT(c), arity);
    command_flags(c, flags);
    resp_int(OUT(c), first);
    resp_int(OUT(c), last);
    resp_int(OUT(c), step);
    size_t n = *cats ? 1 : 0;
    for (const char *p = cats; *p; p++)
        n += *p == ' ';
    resp_set(OUT(c), n, c->proto);
    for (const char *p = cats, *e; *p; p = *e ? e + 1 : e) {
        e = strchr(p, ' ');
        if (!e)
            e = p + strlen(p);
        resp_buf_append(OUT(c), "+", 1);
        resp_buf_append(OUT(c), p, (size_t)(e - p));
        resp_buf_append(OUT(c), "\r\n", 2);
    }
    resp_set(OUT(c), 0, c->proto); /* tips */
    cmd_keyspecs_reply(c, cmd_keyspecs_find(name, strlen(name)));
}

/* Whether subcommand s belongs to container k. */
static bool sub_of(const struct cmd_sub *s, const struct cmd *k)
{
    size_t n = strlen(k->name);
    return !strncmp(s->name, k->name, n) && s->name[n] == '|';
}

static void sub_info(struct conn *c, const struct cmd_sub *s)
{
    info_entry(c, s->name, s->arity, s->flags, s->first, s->last, s->step, s->cats);
    resp_set(OUT(c), 0, c->proto); /* no subcommands: an empty set, as in Redis */
}

static void command_info(struct conn *c, const struct cmd *k)
{
    char cats[160];
    cmd_cats(k, cats, sizeof cats);
    info_entry(c, k->name, k->arity, k->flags, k->first, k->last, k->step, cats);
    size_t n = 0;
    for (size_t i = 0; i < cmd_sub_count(); i++)
        n += sub_of(cmd_sub_at(i), k);
    if (n)
        resp_array(OUT(c), n); /* subcommands */
    else
        resp_set(OUT(c), 0, c->proto);
    for (size_t i = 0; i < cmd_sub_count() && n; i++)
        if (sub_of(cmd_sub_at(i), k))
            sub_info(c, cmd_sub_at(i));
}

/* COMMAND LIST's FILTERBY: whether a command or subcommand (its full
 * name, its categories) passes. by: 'a' ACLCAT, 'p' PATTERN, 'm' MODULE
 * (shmkvd's commands come from none), 0 none. */
static bool list_match(int by, const struct db_str *arg, const char *name, const char *cats)
{
    if (by == 'm')
        return false;
    if (by == 'p')
        return db_glob_match(arg->p, arg->n, name, strlen(name), 1);
    if (by == 'a') {
        for (const char *p = cats, *e; *p; p = *e ? e + 1 : e) {
            e = strchr(p, ' ');
            if (!e)
                e = p + strlen(p);
            if ((size_t)(e - p) == arg->n + 1 && !strncasecmp(p + 1, arg->p, arg->n))
                return true;
        }
        return false;
    }
    return true;
}

/* COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]:
 * every command's name and every subcommand's ("config|get"). */
static void command_list(struct conn *c)
{
    int by = 0;
    if (c->argc == 5 && cmd_arg_is(c, 2, "filterby")) {
        by = cmd_arg_is(c, 3, "module")    ? 'm'
             : cmd_arg_is(c, 3, "aclcat")  ? 'a'
             : cmd_arg_is(c, 3, "pattern") ? 'p'
                                           : 0;
    }
    if (c->argc != 2 && !by) {
        cmd_reply_syntax(c);
        return;
    }
    const struct db_str *arg = by ? &c->argv[4] : NULL;
    struct db_vec v;
    db_vec_init(&v);
    char cats[160];
    for (size_t i = 0; i < cmd_count(); i++) {
        const struct cmd *k = cmd_at(i);
        cmd_cats(k, cats, sizeof cats);
        if (list_match(by, arg, k->name, cats))
            db_vec_push(&v, k->name, strlen(k->name), 0);
        for (size_t j = 0; j < cmd_sub_count(); j++) {
            const struct cmd_sub *s = cmd_sub_at(j);
            if (sub_of(s, k) && list_match(by, arg, s->name, s->cats))
                db_vec_push(&v, s->name, strlen(s->name), 0);
        }
    }
    cmd_reply_vec(c, &v);
    db_vec_destroy(&v);
}

/* The key specs (*ks, NULL for none) and arity of what the command line
 * argv[0..argc) runs: command k, or the subcommand argv[1] of container k.
 * False when k has no such subcommand. */
static bool line_specs(const struct cmd *k, const struct db_str *argv, size_t argc,
                       const struct cmd_keyspecs **ks, int *arity)
{
    *ks = cmd_keyspecs_of(k);
    *arity = k->arity;
    if (!(k->flags & CMD_CONTAINER) || argc < 2)
        return true;
    const struct cmd_sub *sub = cmd_sub_of(k, argv, argc);
    if (!sub)
        return false;
    *ks = cmd_keyspecs_find(sub->name, strlen(sub->name));
    *arity = sub->arity;
    return true;
}

int cmd_getkeyrefs(const struct cmd *k, const struct db_str *argv, size_t argc,
                   struct cmd_keyref *out)
{
    const struct cmd_keyspecs *ks;
    int arity;
    if (!line_specs(k, argv, argc, &ks, &arity))
        return 0;
    return cmd_keyspecs_keys(ks, argv, argc, out);
}

int cmd_getkeys(const struct cmd *k, const struct db_str *argv, size_t argc, size_t *pos)
{
    const struct cmd_keyspecs *ks;
    int arity;
    if (!line_specs(k, argv, argc, &ks, &arity))
        return 0;
    struct cmd_keyref *keys = kv_xmalloc(argc * CMD_KEYSPECS_MAX * sizeof *keys);
    int n = cmd_keyspecs_keys(ks, argv, argc, keys);
    for (int i = 0; i < n; i++)
        pos[i] = keys[i].pos;
    free(keys);
    return n;
}

/* COMMAND GETKEYS and GETKEYSANDFLAGS command [arg ...]: the keys as
 * cmd_keyspecs_keys() finds them, each with its flags for the second.
 * Refusals in Redis's order: a command (or a container's subcommand)
 * shmkvd lacks, one without keys, then a wrong argument count. */
static void command_getkeys(struct conn *c, bool with_flags)
{
    size_t argc = c->argc - 2;
    const struct db_str *argv = c->argv + 2;
    const struct cmd *k = cmd_lookup(argv[0].p, argv[0].n);
    const struct cmd_keyspecs *ks;
    int arity;
    if (!k || !line_specs(k, argv, argc, &ks, &arity)) {
        resp_error(OUT(c), "ERR Invalid command specified");
        return;
    }
    if (!cmd_keyspecs_has_keys(ks)) {
        resp_error(OUT(c), "ERR The command has no key arguments");
        return;
    }
    if ((arity > 0 && argc != (size_t)arity) || (arity < 0 && argc < (size_t)-arity)) {
        resp_error(OUT(c), "ERR Invalid number of arguments specified for command");
        return;
    }
    struct cmd_keyref *keys = kv_xmalloc(argc * CMD_KEYSPECS_MAX * sizeof *keys);
    int n = cmd_keyspecs_keys(ks, argv, argc, keys);
    if (n == 0 && !(k->flags & CMD_SCRIPTING)) { /* a script's keys are optional */
        resp_error(OUT(c), "ERR Invalid arguments specified for command");
    } else {
        resp_array(OUT(c), (size_t)n);
        for (int i = 0; i < n; i++) {
            if (with_flags)
                resp_array(OUT(c), 2);
            resp_bulk(OUT(c), argv[keys[i].pos].p, argv[keys[i].pos].n);
            if (with_flags)
                cmd_keyflags_reply(c, keys[i].flags);
        }
    }
    free(keys);
}

/* COMMAND | COUNT | INFO [name ...] | DOCS [name ...] | LIST [FILTERBY ...] |
 * GETKEYS command [arg ...] | GETKEYSANDFLAGS command [arg ...] | HELP */
void cmd_command(struct conn *c)
{
    if (c->argc == 1) {
        resp_array(OUT(c), cmd_count());
        for (size_t i = 0; i < cmd_count(); i++)
            command_info(c, cmd_at(i));
    } else if (cmd_arg_is(c, 1, "count") && c->argc == 2) {
        resp_int(OUT(c), (int64_t)cmd_count());
    } else if (cmd_arg_is(c, 1, "info")) {
        size_t n = c->argc == 2 ? cmd_count() : c->argc - 2;
        resp_array(OUT(c), n);
        for (size_t i = 0; i < n; i++) {
            const struct cmd *k =
                c->argc == 2 ? cmd_at(i) : cmd_lookup(c->argv[i + 2].p, c->argv[i + 2].n);
            const struct cmd_sub *sub =
                k ? NULL : cmd_sub_lookup(c->argv[i + 2].p, c->argv[i + 2].n);
            if (k)
                command_info(c, k);
            else if (sub)
                sub_info(c, sub);
            else
                resp_null(OUT(c), c->proto);
        }
    } else if (cmd_arg_is(c, 1, "docs")) {
        cmd_command_docs(c);
    } else if (cmd_arg_is(c, 1, "getkeys") || cmd_arg_is(c, 1, "getkeysandflags")) {
        /* At least one argument after the subcommand: dispatch checks. */
        command_getkeys(c, cmd_arg_is(c, 1, "getkeysandflags"));
    } else if (cmd_arg_is(c, 1, "list")) {
        command_list(c);
    } else if (cmd_arg_is(c, 1, "help") && c->argc == 2) {
        static const char *const lines[] = {
            "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    The keys named by a whole command (its name and arguments).",
            "GETKEYSANDFLAGS <full-command>",
            "    The same keys, each with the flags that say how the command uses it.",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else {
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try COMMAND HELP.", (int)c->argv[1].n,
                    c->argv[1].p);
    }
}
