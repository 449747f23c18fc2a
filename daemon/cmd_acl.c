/*
 * cmd_acl — the ACL command, the log of denials, and the check dispatch,
 * EXEC and scripts make before a command runs (acl.h; docs/security.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "acl.h"
#include "cmd.h"
#include "kv_mem.h"
#include "kv_num.h"
#include "srv_conf.h"

/* ---- the log ---- */

struct log_entry {
    int reason;
    const char *ctx;
    char *object, *user, *info;
    uint64_t ms; /* the last time it happened */
    uint64_t count;
};

static struct log_entry *acl_log; /* newest first */
static size_t nlog;

static void entry_free(struct log_entry *e)
{
    free(e->object);
    free(e->user);
    free(e->info);
}

static void log_trim(size_t max)
{
    while (nlog > max)
        entry_free(&acl_log[--nlog]);
}

static char *dupn(const char *p, size_t n)
{
    char *s = kv_xmalloc(n + 1);
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

void cmd_acl_log(struct conn *c, int reason, const char *ctx, const char *obj, size_t on,
                 const char *user, size_t un)
{
    uint64_t now = srv_mstime();
    char info[1024];
    cmd_client_line(c, info, sizeof info);
    size_t max = (size_t)srv_conf_kept_num(&srv.conf, "acllog-max-len");
    /* The same denial within a minute counts on its entry, which moves to
     * the front. */
    for (size_t i = 0; i < nlog; i++) {
        struct log_entry *e = &acl_log[i];
        if (e->reason == reason && !strcmp(e->ctx, ctx) && strlen(e->object) == on &&
            !memcmp(e->object, obj, on) && strlen(e->user) == un && !memcmp(e->user, user, un) &&
            now - e->ms < 60000) {
            struct log_entry t = *e;
            t.count++;
            t.ms = now;
            free(t.info);
            t.info = strdup(info);
            memmove(acl_log + 1, acl_log, i * sizeof *acl_log);
            acl_log[0] = t;
            return;
        }
    }
    if (max == 0)
        return;
    acl_log = kv_xrealloc(acl_log, (nlog + 1) * sizeof *acl_log);
    memmove(acl_log + 1, acl_log, nlog * sizeof *acl_log);
    acl_log[0] =
        (struct log_entry){reason, ctx, dupn(obj, on), dupn(user, un), strdup(info), now, 1};
    nlog++;
    log_trim(max);
}

/* ---- the check ---- */

/* The table index of the subcommand the line runs, or -1 (*unknown: a
 * container's subcommand shmkvd lacks). */
static long sub_index(const struct cmd *cmd, const struct db_str *argv, size_t argc, bool *unknown)
{
    *unknown = false;
    if (!(cmd->flags & CMD_CONTAINER) || argc < 2)
        return -1;
    const struct cmd_sub *s = cmd_sub_of(cmd, argv, argc);
    if (!s) {
        *unknown = true;
        return -1;
    }
    return (long)(s - cmd_sub_at(0));
}

int cmd_acl_check(struct conn *c, const struct cmd *cmd, const struct db_str *argv, size_t argc,
                  const struct acl_user *u, const char *ctx, char *name, size_t cap)
{
    bool unknown;
    long sub = sub_index(cmd, argv, argc, &unknown);
    if (unknown)
        return ACL_OK; /* the command itself says the subcommand is unknown */
    size_t pos = 0;
    int rc = acl_check(u, cmd, sub, argv, argc, &pos);
    if (rc == ACL_OK)
        return rc;
    snprintf(name, cap, "%s", sub >= 0 ? cmd_sub_at((size_t)sub)->name : cmd->name);
    const char *un = acl_name(u);
    if (rc == ACL_DENIED_CMD)
        cmd_acl_log(c, rc, ctx, name, strlen(name), un, strlen(un));
    else
        cmd_acl_log(c, rc, ctx, argv[pos].p, argv[pos].n, un, strlen(un));
    return rc;
}

bool cmd_acl_allowed(const struct cmd *cmd, const struct db_str *argv, size_t argc,
                     const struct acl_user *u)
{
    bool unknown;
    long sub = sub_index(cmd, argv, argc, &unknown);
    size_t pos;
    return unknown || acl_check(u, cmd, sub, argv, argc, &pos) == ACL_OK;
}

static bool channel_ok(const char *p, size_t n, bool pattern, void *arg)
{
    return acl_channel_allowed(arg, p, n, pattern);
}

void cmd_acl_channels_changed(const struct acl_user *u)
{
    for (struct conn *o = srv.clients; o; o = o->next)
        if (o->user == u && !(o->flags & CONN_CLOSE_ASAP) && cmd_pubsub_subscribed(o) &&
            !cmd_pubsub_all(o, channel_ok, (void *)u))
            srv_close_async(o);
}

/* ---- ACL ---- */

static void reply_user(struct conn *c, const struct acl_user *u)
{
    resp_map(OUT(c), 6, c->proto);
    const char *f[4];
    size_t nf = acl_flags(u, f);
    resp_bulk_cstr(OUT(c), "flags");
    resp_set(OUT(c), nf, c->proto);
    for (size_t i = 0; i < nf; i++)
        resp_bulk_cstr(OUT(c), f[i]);
    resp_bulk_cstr(OUT(c), "passwords");
    resp_array(OUT(c), acl_npasswords(u));
    for (size_t i = 0; i < acl_npasswords(u); i++)
        resp_bulk_cstr(OUT(c), acl_password(u, i));
    for (size_t i = 0; i < acl_nselectors(u); i++) {
        if (i == 1) {
            resp_bulk_cstr(OUT(c), "selectors");
            resp_array(OUT(c), acl_nselectors(u) - 1);
        }
        if (i >= 1)
            resp_map(OUT(c), 3, c->proto);
        char *parts[3] = {acl_sel_commands(u, i), acl_sel_keys(u, i), acl_sel_channels(u, i)};
        static const char *const names[3] = {"commands", "keys", "channels"};
        for (int j = 0; j < 3; j++) {
            resp_bulk_cstr(OUT(c), names[j]);
            resp_bulk_cstr(OUT(c), parts[j]);
            free(parts[j]);
        }
    }
    if (acl_nselectors(u) == 1) {
        resp_bulk_cstr(OUT(c), "selectors");
        resp_array(OUT(c), 0);
    }
}

static void acl_getuser(struct conn *c)
{
    const struct acl_user *u = acl_find(c->argv[2].p, c->argv[2].n);
    if (!u) {
        resp_null(OUT(c), c->proto);
        return;
    }
    reply_user(c, u);
}

static void acl_list(struct conn *c, bool names_only)
{
    size_t n;
    const struct acl_user **us = acl_users(&n);
    resp_array(OUT(c), n);
    for (size_t i = 0; i < n; i++) {
        if (names_only) {
            resp_bulk_cstr(OUT(c), acl_name(us[i]));
            continue;
        }
        char *line = acl_user_line(us[i]);
        resp_bulk_cstr(OUT(c), line);
        free(line);
    }
}

static void acl_setuser_cmd(struct conn *c)
{
    char err[512];
    if (acl_setuser(c->argv[2].p, c->argv[2].n, c->argv + 3, c->argc - 3, err, sizeof err)) {
        resp_error(OUT(c), err);
        return;
    }
    resp_simple(OUT(c), "OK");
    cmd_acl_channels_changed(acl_find(c->argv[2].p, c->argv[2].n));
}

static void acl_deluser_cmd(struct conn *c)
{
    int64_t n = 0;
    for (size_t i = 2; i < c->argc; i++) {
        if (c->argv[i].n == 7 && !memcmp(c->argv[i].p, "default", 7)) {
            resp_error(OUT(c), "ERR The 'default' user cannot be removed");
            return;
        }
    }
    for (size_t i = 2; i < c->argc; i++) {
        struct acl_user *u = acl_find(c->argv[i].p, c->argv[i].n);
        if (!u)
            continue;
        /* Its connections go first: they point at it. */
        cmd_client_kill_user(u, c);
        n += acl_deluser(c->argv[i].p, c->argv[i].n);
    }
    resp_int(OUT(c), n);
}

static void acl_cat(struct conn *c)
{
    if (c->argc == 2) {
        resp_array(OUT(c), acl_ncats());
        for (size_t i = 0; i < acl_ncats(); i++)
            resp_bulk_cstr(OUT(c), acl_cat_name(i));
        return;
    }
    if (c->argc != 3) {
        cmd_reply_syntax(c);
        return;
    }
    int cat = acl_cat_find(c->argv[2].p, c->argv[2].n);
    if (cat < 0) {
        resp_errorf(OUT(c), "ERR Unknown category '%.*s'", (int)c->argv[2].n, c->argv[2].p);
        return;
    }
    size_t n = 0;
    for (size_t id = 0; id < acl_ncmds(); id++)
        n += acl_cmd_in(id, (size_t)cat);
    resp_array(OUT(c), n);
    for (size_t id = 0; id < acl_ncmds(); id++)
        if (acl_cmd_in(id, (size_t)cat))
            resp_bulk_cstr(OUT(c), acl_cmd_name(id));
}

static void acl_genpass(struct conn *c)
{
    int64_t bits = 256;
    if (c->argc > 3) {
        cmd_reply_syntax(c);
        return;
    }
    if (c->argc == 3 &&
        (kv_str2ll(c->argv[2].p, c->argv[2].n, &bits) || bits <= 0 || bits > 4096)) {
        resp_error(OUT(c), "ERR ACL GENPASS argument must be the number of bits for the output "
                           "password, a positive number up to 4096");
        return;
    }
    size_t chars = (size_t)(bits + 3) / 4, bytes = (chars + 1) / 2;
    unsigned char r[512];
    size_t got = 0;
    while (got < bytes) {
        ssize_t k = getrandom(r + got, bytes - got, 0);
        if (k > 0)
            got += (size_t)k;
    }
    char hex[1025];
    for (size_t i = 0; i < bytes; i++)
        snprintf(hex + 2 * i, 3, "%02x", r[i]);
    resp_bulk(OUT(c), hex, chars);
}

static void acl_dryrun(struct conn *c)
{
    const struct acl_user *u = acl_find(c->argv[2].p, c->argv[2].n);
    if (!u) {
        resp_errorf(OUT(c), "ERR User '%.*s' not found", (int)c->argv[2].n, c->argv[2].p);
        return;
    }
    const struct db_str *argv = c->argv + 3;
    size_t argc = c->argc - 3;
    const struct cmd *k = cmd_lookup(argv[0].p, argv[0].n);
    bool unknown = false;
    long sub = k ? sub_index(k, argv, argc, &unknown) : -1;
    if (!k || unknown) {
        resp_errorf(OUT(c), "ERR Command '%.*s' not found", (int)argv[0].n, argv[0].p);
        return;
    }
    int arity = sub >= 0 ? cmd_sub_at((size_t)sub)->arity : k->arity;
    if ((arity > 0 && argc != (size_t)arity) || (arity < 0 && argc < (size_t)-arity)) {
        resp_errorf(OUT(c), "ERR wrong number of arguments for '%s' command",
                    sub >= 0 ? cmd_sub_at((size_t)sub)->name : k->name);
        return;
    }
    size_t pos = 0;
    int rc = acl_check(u, k, sub, argv, argc, &pos);
    char msg[512];
    if (rc == ACL_OK) {
        resp_simple(OUT(c), "OK");
        return;
    }
    if (rc == ACL_DENIED_CMD)
        snprintf(msg, sizeof msg, "This user has no permissions to run the '%s' command",
                 sub >= 0 ? cmd_sub_at((size_t)sub)->name : k->name);
    else
        snprintf(msg, sizeof msg, "This user has no permissions to access the '%.*s' %s",
                 (int)(argv[pos].n < 256 ? argv[pos].n : 256), argv[pos].p,
                 rc == ACL_DENIED_KEY ? "key" : "channel");
    resp_bulk_cstr(OUT(c), msg);
}

static const char *reason_name(int r)
{
    switch (r) {
    case ACL_DENIED_CMD:
        return "command";
    case ACL_DENIED_KEY:
        return "key";
    case ACL_DENIED_CHANNEL:
        return "channel";
    default:
        return "auth";
    }
}

static void acl_log_cmd(struct conn *c)
{
    int64_t count = 10;
    if (c->argc == 3) {
        if (cmd_arg_is(c, 2, "reset")) {
            log_trim(0);
            resp_simple(OUT(c), "OK");
            return;
        }
        if (kv_str2ll(c->argv[2].p, c->argv[2].n, &count) || count < 0) {
            resp_error(OUT(c), "ERR value is out of range, must be positive");
            return;
        }
    } else if (c->argc > 3) {
        cmd_reply_syntax(c);
        return;
    }
    size_t n = (size_t)count < nlog ? (size_t)count : nlog;
    uint64_t now = srv_mstime();
    resp_array(OUT(c), n);
    for (size_t i = 0; i < n; i++) {
        const struct log_entry *e = &acl_log[i];
        resp_map(OUT(c), 7, c->proto);
        resp_bulk_cstr(OUT(c), "count");
        resp_int(OUT(c), (int64_t)e->count);
        resp_bulk_cstr(OUT(c), "reason");
        resp_bulk_cstr(OUT(c), reason_name(e->reason));
        resp_bulk_cstr(OUT(c), "context");
        resp_bulk_cstr(OUT(c), e->ctx);
        resp_bulk_cstr(OUT(c), "object");
        resp_bulk_cstr(OUT(c), e->object);
        resp_bulk_cstr(OUT(c), "username");
        resp_bulk_cstr(OUT(c), e->user);
        resp_bulk_cstr(OUT(c), "age-seconds");
        resp_double(OUT(c), (double)(now - e->ms) / 1000.0, c->proto);
        resp_bulk_cstr(OUT(c), "client-info");
        resp_bulk_cstr(OUT(c), e->info);
    }
}

static void acl_help(struct conn *c)
{
    static const char *const lines[] = {
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the "
        "command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Print this help.",
    };
    resp_array(OUT(c), sizeof lines / sizeof lines[0]);
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        resp_simple(OUT(c), lines[i]);
}

static void drop_user(struct acl_user *u, void *arg)
{
    cmd_client_kill_user(u, arg);
}

static const char *acl_file(struct conn *c)
{
    const char *f = srv_conf_kept(&srv.conf, "aclfile");
    if (f && *f)
        return f;
    resp_error(OUT(c), "ERR This Redis instance is not configured to use an ACL file. You may "
                       "want to specify users via the ACL SETUSER command and then issue a "
                       "CONFIG REWRITE (assuming you have a Redis configuration file set) in "
                       "order to store users in the Redis configuration.");
    return NULL;
}

static void acl_load(struct conn *c)
{
    const char *f = acl_file(c);
    char err[4096];
    if (!f)
        return;
    if (acl_load_file(f, drop_user, c, err, sizeof err))
        resp_errorf(OUT(c), "ERR %s", err);
    else
        resp_simple(OUT(c), "OK");
}

static void acl_save(struct conn *c)
{
    const char *f = acl_file(c);
    char err[4096];
    if (!f)
        return;
    if (acl_save_file(f, err, sizeof err)) {
        srv_log(LOG_WARNING, "ACL SAVE: %s", err);
        resp_error(OUT(c), "ERR There was an error trying to save the ACLs. Please check the "
                           "server logs for more information");
    } else {
        resp_simple(OUT(c), "OK");
    }
}

/* ACL CAT | DELUSER | DRYRUN | GENPASS | GETUSER | LIST | LOAD | LOG | SAVE |
 * SETUSER | USERS | WHOAMI | HELP */
void cmd_acl(struct conn *c)
{
    if (cmd_arg_is(c, 1, "setuser"))
        acl_setuser_cmd(c);
    else if (cmd_arg_is(c, 1, "getuser"))
        acl_getuser(c);
    else if (cmd_arg_is(c, 1, "deluser"))
        acl_deluser_cmd(c);
    else if (cmd_arg_is(c, 1, "list"))
        acl_list(c, false);
    else if (cmd_arg_is(c, 1, "users"))
        acl_list(c, true);
    else if (cmd_arg_is(c, 1, "whoami"))
        resp_bulk_cstr(OUT(c), c->user ? acl_name(c->user) : "default");
    else if (cmd_arg_is(c, 1, "cat"))
        acl_cat(c);
    else if (cmd_arg_is(c, 1, "genpass"))
        acl_genpass(c);
    else if (cmd_arg_is(c, 1, "dryrun"))
        acl_dryrun(c);
    else if (cmd_arg_is(c, 1, "log"))
        acl_log_cmd(c);
    else if (cmd_arg_is(c, 1, "help"))
        acl_help(c);
    else if (cmd_arg_is(c, 1, "load"))
        acl_load(c);
    else if (cmd_arg_is(c, 1, "save"))
        acl_save(c);
    else
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try ACL HELP.",
                    (int)(c->argv[1].n < 128 ? c->argv[1].n : 128), c->argv[1].p);
}

void cmd_acl_reset(void)
{
    log_trim(0);
    free(acl_log);
    acl_log = NULL;
}
