/*
 * cmd_client — a connection's own commands: PING, ECHO, AUTH, HELLO, QUIT,
 * RESET and CLIENT (LIST, INFO, KILL, PAUSE, UNBLOCK, NO-EVICT, REPLY, ...).
 */
#include "acl.h"
#include "cmd.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kv_mem.h"

/* PING [message] */
void cmd_ping(struct conn *c)
{
    if (c->argc > 2) {
        resp_error(OUT(c), "ERR wrong number of arguments for 'ping' command");
        return;
    }
    if (c->proto == 2 && cmd_pubsub_subscribed(c)) {
        /* Among a subscriber's messages, PING answers in their shape. */
        resp_array(OUT(c), 2);
        resp_bulk_cstr(OUT(c), "pong");
        resp_bulk(OUT(c), c->argc == 2 ? c->argv[1].p : "", c->argc == 2 ? c->argv[1].n : 0);
    } else if (c->argc == 2) {
        resp_bulk(OUT(c), CMD_ARG(1));
    } else {
        resp_simple(OUT(c), "PONG");
    }
}

/* ECHO message */
void cmd_echo(struct conn *c)
{
    resp_bulk(OUT(c), CMD_ARG(1));
}

/* Authenticates c as user (NULL: the default user) with pass; replies the
 * failure itself and logs it. */
static bool check_auth(struct conn *c, const struct db_str *user, const struct db_str *pass)
{
    const char *un = user ? user->p : "default";
    size_t unn = user ? user->n : 7;
    struct acl_user *u = acl_authenticate(un, unn, pass->p, pass->n);
    if (!u) {
        cmd_acl_log(c, ACL_DENIED_AUTH, (c->flags & CONN_MULTI) ? "multi" : "toplevel",
                    c->argv[0].p, c->argv[0].n, un, unn);
        resp_error(OUT(c), "WRONGPASS invalid username-password pair or user is disabled.");
        return false;
    }
    c->user = u;
    c->flags |= CONN_AUTHED;
    return true;
}

/* AUTH [username] password */
void cmd_auth(struct conn *c)
{
    if (c->argc > 3) {
        cmd_reply_syntax(c);
        return;
    }
    if (c->argc == 2 && acl_default_nopass()) {
        resp_error(OUT(c), "ERR AUTH <password> called without any password configured for "
                           "the default user. Are you sure your configuration is correct?");
        return;
    }
    if (check_auth(c, c->argc == 3 ? &c->argv[1] : NULL, &c->argv[c->argc - 1]))
        resp_simple(OUT(c), "OK");
}

static bool valid_client_name(const struct db_str *n)
{
    for (size_t i = 0; i < n->n; i++)
        if (n->p[i] < '!' || n->p[i] > '~')
            return false;
    return true;
}

/* HELLO [protover [AUTH username password] [SETNAME clientname]] */
void cmd_hello(struct conn *c)
{
    int64_t ver = 0;
    size_t i = 1;
    if (c->argc >= 2) {
        if (kv_str2ll(c->argv[1].p, c->argv[1].n, &ver)) {
            resp_error(OUT(c), "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (ver < 2 || ver > 3) {
            resp_error(OUT(c), "NOPROTO unsupported protocol version");
            return;
        }
        i = 2;
    }
    const struct db_str *name = NULL;
    bool authed_here = false;
    /* AUTH runs as it comes, before later options are checked, as in
     * Redis 7.0 (test_diff_acl): a bad option after it leaves the
     * connection authenticated. */
    for (; i < c->argc; i++) {
        if (cmd_arg_is(c, i, "auth") && i + 2 < c->argc) {
            if (!check_auth(c, &c->argv[i + 1], &c->argv[i + 2]))
                return;
            authed_here = true;
            i += 2;
        } else if (cmd_arg_is(c, i, "setname") && i + 1 < c->argc) {
            name = &c->argv[++i];
            if (!valid_client_name(name)) {
                resp_error(OUT(c), "ERR Client names cannot contain spaces, newlines or special "
                                   "characters.");
                return;
            }
        } else {
            resp_errorf(OUT(c), "ERR Syntax error in HELLO option '%.*s'", (int)c->argv[i].n,
                        c->argv[i].p);
            return;
        }
    }
    if (acl_auth_required() && !(c->flags & CONN_AUTHED) && !authed_here) {
        resp_error(OUT(c), "NOAUTH HELLO must be called with the client already authenticated, "
                           "otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
                           "authenticate the client and select the RESP protocol version at the "
                           "same time");
        return;
    }
    if (ver)
        c->proto = (int)ver;
    if (name)
        snprintf(c->name, sizeof c->name, "%.*s", (int)name->n, name->p);
    resp_map(OUT(c), 7, c->proto);
    resp_bulk_cstr(OUT(c), "server");
    resp_bulk_cstr(OUT(c), "redis");
    resp_bulk_cstr(OUT(c), "version");
    resp_bulk_cstr(OUT(c), SRV_VERSION);
    resp_bulk_cstr(OUT(c), "proto");
    resp_int(OUT(c), c->proto);
    resp_bulk_cstr(OUT(c), "id");
    resp_int(OUT(c), (int64_t)c->id);
    resp_bulk_cstr(OUT(c), "mode");
    resp_bulk_cstr(OUT(c), "standalone");
    resp_bulk_cstr(OUT(c), "role");
    resp_bulk_cstr(OUT(c), "master");
    resp_bulk_cstr(OUT(c), "modules");
    resp_array(OUT(c), 0);
}

/* QUIT */
void cmd_quit(struct conn *c)
{
    resp_simple(OUT(c), "OK");
    c->flags |= CONN_CLOSE_AFTER_REPLY;
}

/* RESET */
void cmd_reset(struct conn *c)
{
    cmd_conn_release(c);
    c->db = srv_dbmap[0];
    c->proto = 2;
    c->name[0] = '\0';
    c->flags &=
        ~(uint32_t)(CONN_REPLY_OFF | CONN_REPLY_SKIP | CONN_REPLY_SKIP_NEXT | CONN_NO_EVICT);
    c->user = acl_default();
    if (acl_auth_required())
        c->flags &= ~(uint32_t)CONN_AUTHED;
    else
        c->flags |= CONN_AUTHED;
    resp_simple(OUT(c), "RESET");
}

/* ---- CLIENT ---- */

/* One CLIENT LIST line for c, without the newline. */
int cmd_client_line(const struct conn *c, char *buf, size_t cap)
{
    uint64_t now = srv_mstime();
    /* Every flag that applies, in Redis's order; N for none. */
    char flags[16], *f = flags;
    if (c->flags & CONN_REPLICA)
        *f++ = 'S';
    if (c->flags & CONN_MONITOR)
        *f++ = 'O';
    if (c->flags & CONN_MASTER)
        *f++ = 'M';
    if (cmd_pubsub_subscribed(c))
        *f++ = 'P';
    if (c->flags & CONN_MULTI)
        *f++ = 'x';
    if (c->flags & CONN_BLOCKED)
        *f++ = 'b';
    if (c->tflags & CONN_TRK_ON)
        *f++ = 't';
    if (c->tflags & CONN_TRK_BROKEN)
        *f++ = 'R';
    if (c->tflags & CONN_TRK_BCAST)
        *f++ = 'B';
    if (c->flags & CONN_DIRTY_CAS)
        *f++ = 'd';
    if (c->flags & CONN_UNIX)
        *f++ = 'U';
    if (c->flags & CONN_NO_EVICT)
        *f++ = 'e';
    if (f == flags)
        *f++ = 'N';
    *f = '\0';
    long long redir = (c->tflags & CONN_TRK_ON) ? (long long)c->tredir : -1;
    int n = snprintf(
        buf, cap,
        "id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu flags=%s db=%u "
        "sub=%zu psub=%zu ssub=%zu multi=%d qbuf=%zu qbuf-free=%zu argv-mem=0 multi-mem=0 "
        "rbs=%zu rbp=0 obl=0 oll=0 omem=%zu tot-mem=%zu events=r cmd=%s user=%s "
        "redir=%lld resp=%d",
        (unsigned long long)c->id, c->addr, c->laddr, c->fd, c->name,
        (unsigned long long)((now - c->ctime_ms) / 1000),
        (unsigned long long)((now - c->last_ms) / 1000), flags, srv_dbunmap[c->db],
        cmd_pubsub_subscriptions(c, CMD_PS_CHANNEL), cmd_pubsub_subscriptions(c, CMD_PS_PATTERN),
        cmd_pubsub_subscriptions(c, CMD_PS_SHARD), (c->flags & CONN_MULTI) ? (int)c->mqn : -1,
        resp_buf_used(&c->in), c->in.cap - c->in.len, c->in.cap, resp_buf_used(&c->out),
        c->in.cap + c->out.cap, c->lastcmd ? c->lastcmd : "NULL",
        c->user ? acl_name(c->user) : "default", redir, c->proto);
    /* A long name is cut: the line never runs past buf. */
    return n < 0 ? 0 : (size_t)n >= cap ? (int)cap - 1 : n;
}

/* Client types, as CLIENT LIST and KILL filter them: our replicas, the
 * link to our primary, a client with subscriptions ("pubsub"), and every
 * other ("normal"). */
enum { CLIENT_NORMAL, CLIENT_PUBSUB, CLIENT_REPLICA, CLIENT_MASTER };

/* Argument i as a client type, or -1 after Redis's error. */
static int client_type_arg(struct conn *c, size_t i)
{
    if (cmd_arg_is(c, i, "normal"))
        return CLIENT_NORMAL;
    if (cmd_arg_is(c, i, "pubsub"))
        return CLIENT_PUBSUB;
    if (cmd_arg_is(c, i, "master"))
        return CLIENT_MASTER;
    if (cmd_arg_is(c, i, "replica") || cmd_arg_is(c, i, "slave"))
        return CLIENT_REPLICA;
    resp_errorf(OUT(c), "ERR Unknown client type '%.*s'", (int)c->argv[i].n, c->argv[i].p);
    return -1;
}

static bool client_is(const struct conn *o, int type)
{
    int is = (o->flags & CONN_REPLICA)  ? CLIENT_REPLICA
             : (o->flags & CONN_MASTER) ? CLIENT_MASTER
             : cmd_pubsub_subscribed(o) ? CLIENT_PUBSUB
                                        : CLIENT_NORMAL;
    return type == is;
}

static void client_list(struct conn *c)
{
    int type = -1;
    size_t nids = 0;
    int64_t *ids = NULL;
    if (c->argc == 4 && cmd_arg_is(c, 2, "type")) {
        if ((type = client_type_arg(c, 3)) < 0)
            return;
    } else if (c->argc >= 4 && cmd_arg_is(c, 2, "id")) {
        nids = c->argc - 3;
        ids = kv_xmalloc(nids * sizeof *ids);
        for (size_t i = 0; i < nids; i++) {
            if (kv_str2ll(c->argv[i + 3].p, c->argv[i + 3].n, &ids[i]) != 0) {
                free(ids);
                resp_error(OUT(c), "ERR Invalid client ID");
                return;
            }
        }
    } else if (c->argc != 2) {
        resp_error(OUT(c), "ERR syntax error");
        return;
    }
    struct resp_buf b;
    resp_buf_init(&b);
    char line[1024];
    /* Oldest first, as Redis lists them: new clients join the list's head. */
    struct conn *o = srv.clients;
    while (o && o->next)
        o = o->next;
    for (; o; o = o->prev) {
        if (o->flags & CONN_CLOSE_ASAP)
            continue; /* closed: Redis would have freed it by now */
        if (type >= 0 && !client_is(o, type))
            continue;
        bool listed = !ids;
        for (size_t i = 0; i < nids && !listed; i++)
            listed = ids[i] > 0 && (uint64_t)ids[i] == o->id;
        if (!listed)
            continue;
        int n = cmd_client_line(o, line, sizeof line);
        resp_buf_append(&b, line, (size_t)n);
        resp_buf_append(&b, "\n", 1);
    }
    free(ids);
    resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
    resp_buf_free(&b);
}

/* CLIENT UNBLOCK id [TIMEOUT|ERROR]: ends another client's blocking
 * command as its timeout would, or with Redis's UNBLOCKED error. 1 if that
 * client was blocked. */
static void client_unblock(struct conn *c)
{
    int64_t id;
    if (!cmd_arg_ll(c, 2, &id))
        return;
    bool error = false;
    if (c->argc == 4) {
        if (cmd_arg_is(c, 3, "error")) {
            error = true;
        } else if (!cmd_arg_is(c, 3, "timeout")) {
            resp_error(OUT(c), "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
            return;
        }
    }
    for (struct conn *o = srv.clients; o; o = o->next) {
        if ((int64_t)o->id != id || !(o->flags & CONN_BLOCKED))
            continue;
        cmd_unblock_answer(o, error ? "UNBLOCKED client unblocked via CLIENT UNBLOCK" : NULL);
        resp_int(OUT(c), 1);
        return;
    }
    resp_int(OUT(c), 0);
}

/* CLIENT KILL addr | KILL [ID id] [ADDR addr] [LADDR addr] [SKIPME yes|no] */
/* Closes o for CLIENT KILL from c: at once, so that a CLIENT LIST or INFO
 * right after no longer counts it, as Redis frees it; c itself after its
 * reply. */
static void kill_one(struct conn *c, struct conn *o)
{
    if (o == c)
        c->flags |= CONN_CLOSE_AFTER_REPLY;
    else
        srv_close_async(o);
}

void cmd_client_kill_user(const struct acl_user *u, struct conn *self)
{
    for (struct conn *o = srv.clients; o; o = o->next) {
        if (o->user != u)
            continue;
        o->user = acl_nobody();
        if (!(o->flags & CONN_CLOSE_ASAP))
            kill_one(self, o);
    }
}

static void client_kill(struct conn *c)
{
    if (c->argc == 3) {
        for (struct conn *o = srv.clients; o; o = o->next) {
            if (!(o->flags & CONN_CLOSE_ASAP) && strlen(o->addr) == c->argv[2].n &&
                memcmp(o->addr, c->argv[2].p, c->argv[2].n) == 0) {
                resp_simple(OUT(c), "OK");
                kill_one(c, o);
                return;
            }
        }
        resp_error(OUT(c), "ERR No such client");
        return;
    }
    int64_t id = -1;
    const struct db_str *addr = NULL, *laddr = NULL;
    const struct acl_user *user = NULL;
    bool skipme = true;
    int type = -1;
    if (c->argc % 2) {
        cmd_reply_syntax(c);
        return;
    }
    for (size_t i = 2; i + 1 < c->argc; i += 2) {
        if (cmd_arg_is(c, i, "id")) {
            if (kv_str2ll(c->argv[i + 1].p, c->argv[i + 1].n, &id) || id <= 0) {
                resp_error(OUT(c), "ERR client-id should be greater than 0");
                return;
            }
        } else if (cmd_arg_is(c, i, "type")) {
            if ((type = client_type_arg(c, i + 1)) < 0)
                return;
        } else if (cmd_arg_is(c, i, "user")) {
            if (!(user = acl_find(c->argv[i + 1].p, c->argv[i + 1].n))) {
                resp_errorf(OUT(c), "ERR No such user '%.*s'", (int)c->argv[i + 1].n,
                            c->argv[i + 1].p);
                return;
            }
        } else if (cmd_arg_is(c, i, "addr")) {
            addr = &c->argv[i + 1];
        } else if (cmd_arg_is(c, i, "laddr")) {
            laddr = &c->argv[i + 1];
        } else if (cmd_arg_is(c, i, "skipme")) {
            if (cmd_arg_is(c, i + 1, "yes"))
                skipme = true;
            else if (cmd_arg_is(c, i + 1, "no"))
                skipme = false;
            else {
                cmd_reply_syntax(c);
                return;
            }
        } else {
            cmd_reply_syntax(c);
            return;
        }
    }
    int64_t killed = 0;
    for (struct conn *o = srv.clients; o; o = o->next) {
        if (id > 0 && o->id != (uint64_t)id)
            continue;
        if (o->flags & CONN_CLOSE_ASAP)
            continue; /* killed already: Redis would have freed it by now */
        if (type >= 0 && !client_is(o, type))
            continue;
        if (user && o->user != user)
            continue;
        if (addr && !(strlen(o->addr) == addr->n && memcmp(o->addr, addr->p, addr->n) == 0))
            continue;
        if (laddr && !(strlen(o->laddr) == laddr->n && memcmp(o->laddr, laddr->p, laddr->n) == 0))
            continue;
        if (o == c && skipme)
            continue;
        kill_one(c, o);
        killed++;
    }
    resp_int(OUT(c), killed);
}

/* CLIENT ID|SETNAME|GETNAME|LIST|KILL|INFO|HELP */
void cmd_client(struct conn *c)
{
    if (cmd_arg_is(c, 1, "id") && c->argc == 2) {
        resp_int(OUT(c), (int64_t)c->id);
    } else if (cmd_arg_is(c, 1, "setname") && c->argc == 3) {
        if (!valid_client_name(&c->argv[2])) {
            resp_error(OUT(c), "ERR Client names cannot contain spaces, newlines or special "
                               "characters.");
            return;
        }
        snprintf(c->name, sizeof c->name, "%.*s", (int)c->argv[2].n, c->argv[2].p);
        resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "getname") && c->argc == 2) {
        if (c->name[0])
            resp_bulk_cstr(OUT(c), c->name);
        else
            resp_null(OUT(c), c->proto);
    } else if (cmd_arg_is(c, 1, "list")) {
        client_list(c);
    } else if (cmd_arg_is(c, 1, "info") && c->argc == 2) {
        char line[1024];
        int n = cmd_client_line(c, line, sizeof line - 1);
        line[n++] = '\n';
        resp_verbatim(OUT(c), line, (size_t)n, c->proto);
    } else if (cmd_arg_is(c, 1, "kill") && c->argc >= 3) {
        client_kill(c);
    } else if (cmd_arg_is(c, 1, "unblock") && (c->argc == 3 || c->argc == 4)) {
        client_unblock(c);
    } else if (cmd_arg_is(c, 1, "reply") && c->argc == 3) {
        /* OFF: no reply from now on, this one included; SKIP: none for
         * the next command (none for itself either); ON: replies again. */
        if (cmd_arg_is(c, 2, "on")) {
            c->flags &= ~(uint32_t)(CONN_REPLY_OFF | CONN_REPLY_SKIP | CONN_REPLY_SKIP_NEXT);
            resp_simple(OUT(c), "OK");
        } else if (cmd_arg_is(c, 2, "off")) {
            c->flags |= CONN_REPLY_OFF;
        } else if (cmd_arg_is(c, 2, "skip")) {
            if (!(c->flags & CONN_REPLY_OFF))
                c->flags |= CONN_REPLY_SKIP_NEXT;
        } else {
            cmd_reply_syntax(c);
        }
    } else if (cmd_arg_is(c, 1, "pause") && (c->argc == 3 || c->argc == 4)) {
        uint64_t end;
        if (!cmd_arg_timeout_ms(c, 2, &end))
            return;
        int type = SRV_PAUSE_ALL;
        if (c->argc == 4) {
            if (cmd_arg_is(c, 3, "write")) {
                type = SRV_PAUSE_WRITE;
            } else if (!cmd_arg_is(c, 3, "all")) {
                resp_error(OUT(c), "ERR CLIENT PAUSE mode must be WRITE or ALL");
                return;
            }
        }
        srv_pause(type, end ? end : srv_mstime()); /* 0 ms: a pause that is already over */
        resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "pause") && c->argc > 4) {
        resp_error(OUT(c), "ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try "
                           "CLIENT HELP.");
    } else if (cmd_arg_is(c, 1, "unpause") && c->argc == 2) {
        srv_unpause();
        resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "no-evict") && c->argc == 3) {
        /* shmkvd never evicts clients for memory; the flag is kept and
         * shown, as Redis shows it with maxmemory-clients 0. */
        if (cmd_arg_is(c, 2, "on"))
            c->flags |= CONN_NO_EVICT;
        else if (cmd_arg_is(c, 2, "off"))
            c->flags &= ~(uint32_t)CONN_NO_EVICT;
        else {
            cmd_reply_syntax(c);
            return;
        }
        resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "tracking") && c->argc >= 3) {
        cmd_client_tracking(c);
    } else if (cmd_arg_is(c, 1, "caching") && c->argc == 3) {
        cmd_client_caching(c);
    } else if (cmd_arg_is(c, 1, "getredir") && c->argc == 2) {
        cmd_client_getredir(c);
    } else if (cmd_arg_is(c, 1, "trackinginfo") && c->argc == 2) {
        cmd_client_trackinginfo(c);
    } else if (cmd_arg_is(c, 1, "help") && c->argc == 2) {
        static const char *const lines[] = {
            "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CACHING (YES|NO)",
            "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
            "GETREDIR",
            "    Return the client ID we are redirecting to when tracking is enabled.",
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are:",
            "    * ADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made from the specified address",
            "    * LADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made to specified local address",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Kill connections by type.",
            "    * USER <username>",
            "      Kill connections authenticated by <username>.",
            "    * SKIPME (YES|NO)",
            "      Skip killing current connection (default: yes).",
            "    * ID <client-id>",
            "      Kill connections by client id.",
            "LIST [TYPE <type>] [ID <id> [<id> ...]]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "    * ID <id> [<id> ...]",
            "      Return clients with the given IDs.",
            "NO-EVICT (ON|OFF)",
            "    Mark the connection as one to keep if clients were evicted (shmkvd never",
            "    evicts clients).",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Hold every command, or only writes, for <timeout> milliseconds.",
            "UNPAUSE",
            "    End a pause: the held commands run.",
            "REPLY (ON|OFF|SKIP)",
            "    Turn replies to this connection on or off, or skip the next one.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Control server assisted client side caching.",
            "TRACKINGINFO",
            "    Report tracking status for the current connection.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    End a client's blocking command as its timeout would, or with an error.",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else if (c->lastcmd == c->lastsub && cmd_doc_exists(c->lastsub, strlen(c->lastsub))) {
        resp_errorf(OUT(c), "ERR wrong number of arguments for '%s' command", c->lastsub);
    } else {
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try CLIENT HELP.", (int)c->argv[1].n,
                    c->argv[1].p);
    }
}
