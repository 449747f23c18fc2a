/*
 * cmd_command — COMMAND: the command table as Redis 7.0 describes it (INFO,
 * LIST, COUNT, DOCS through cmd_docs.c, GETKEYS).
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
static void command_cats(const struct cmd *k, char *out, size_t cap)
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
        {"wait", "@slow @connection"},
        {"command", "@slow @connection"},
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
    command_cats(k, cats, sizeof cats);
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
        command_cats(k, cats, sizeof cats);
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

/* The argument positions that are keys in argv[0..argc) (argv[0] the
 * command's name) for COMMAND GETKEYS, as Redis finds them: the table's
 * range, then a movable command's numkeys keys (SORT's STORE key,
 * GEORADIUS's first STORE and first STOREDIST keys, as its key specs find
 * them; MIGRATE's key or KEYS); the key of OBJECT's and MEMORY USAGE's
 * subcommands. Shard channels are not keys. Returns how many went to pos,
 * -1 when a numkeys is invalid (or MIGRATE's KEYS comes after a key). */
int cmd_getkeys(const struct cmd *k, const struct db_str *argv, size_t argc, size_t *pos)
{
    int n = 0;
    if (!strcmp(k->group, "pubsub"))
        return 0;
    if (k->flags & CMD_CONTAINER) {
        bool keyed = (k->fn == cmd_object && argc == 3) ||
                     (k->fn == cmd_memory && argc >= 3 && argv[1].n == 5 &&
                      !strncasecmp(argv[1].p, "usage", 5));
        if (keyed)
            pos[n++] = 2;
        return n;
    }
    if (k->fn == cmd_migrate) {
        size_t first;
        int m = cmd_migrate_keys(argv, argc, &first);
        for (int i = 0; i < m; i++)
            pos[i] = first + (size_t)i;
        return m;
    }
    size_t at = (k->flags & CMD_BLOCKING) ? 2 : 1;
    if (k->first > 0) {
        size_t last = k->last < 0 ? argc - (size_t)-k->last : (size_t)k->last;
        for (size_t i = (size_t)k->first; i <= last && i < argc; i += (size_t)k->step)
            pos[n++] = i;
        at = last + 1;
    }
    if (!(k->flags & CMD_MOVABLE))
        return n;
    if (k->fn == cmd_sort_ro)
        return n; /* no STORE: as Redis, even where the arguments name one */
    if (k->fn == cmd_sort) {
        size_t store = cmd_sort_store_key(argv, argc);
        if (store)
            pos[n++] = store;
        return n;
    }
    if (k->fn == cmd_georadius || k->fn == cmd_georadiusbymember) {
        static const char *const kw[] = {"store", "storedist"};
        for (int w = 0; w < 2; w++)
            for (size_t i = k->fn == cmd_georadius ? 6 : 5; i + 1 < argc; i++)
                if (argv[i].n == strlen(kw[w]) && !strncasecmp(argv[i].p, kw[w], argv[i].n)) {
                    pos[n++] = i + 1;
                    break;
                }
        return n;
    }
    int64_t nk;
    if (at >= argc || kv_str2ll(argv[at].p, argv[at].n, &nk) || nk < 1 ||
        (uint64_t)nk > argc - at - 1)
        return -1;
    for (size_t i = at + 1; i <= at + (size_t)nk; i++)
        pos[n++] = i;
    return n;
}

static void command_getkeys(struct conn *c)
{
    const struct cmd *k = cmd_lookup(c->argv[2].p, c->argv[2].n);
    size_t argc = c->argc - 2;
    const struct db_str *argv = c->argv + 2;
    if (!k) {
        resp_error(OUT(c), "ERR Invalid command specified");
        return;
    }
    if ((k->arity > 0 && argc != (size_t)k->arity) || (k->arity < 0 && argc < (size_t)-k->arity)) {
        resp_error(OUT(c), "ERR Invalid number of arguments specified for command");
        return;
    }
    bool has_keys =
        (k->first > 0 || (k->flags & CMD_MOVABLE) || k->fn == cmd_object || k->fn == cmd_memory) &&
        strcmp(k->group, "pubsub");
    if (!has_keys) {
        resp_error(OUT(c), "ERR The command has no key arguments");
        return;
    }
    size_t *pos = kv_xmalloc(argc * sizeof *pos);
    int n = cmd_getkeys(k, argv, argc, pos);
    if (n < 0) {
        resp_error(OUT(c), "ERR Invalid arguments specified for command");
    } else {
        resp_array(OUT(c), (size_t)n);
        for (int i = 0; i < n; i++)
            resp_bulk(OUT(c), argv[pos[i]].p, argv[pos[i]].n);
    }
    free(pos);
}

/* COMMAND | COUNT | INFO [name ...] | DOCS [name ...] | LIST | HELP */
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
    } else if (cmd_arg_is(c, 1, "getkeys")) {
        if (c->argc < 4)
            resp_error(OUT(c), "ERR wrong number of arguments for 'command|getkeys' command");
        else
            command_getkeys(c);
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
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else {
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try COMMAND HELP.", (int)c->argv[1].n,
                    c->argv[1].p);
    }
}
