/*
 * cmd_server — connection and server commands: PING ECHO AUTH HELLO QUIT
 * RESET CLIENT INFO CONFIG COMMAND TIME SLOWLOG LASTSAVE BGSAVE SHUTDOWN.
 */
#include "cmd.h"

#include <ctype.h>
#include "srv_lat.h"

#include <errno.h>
#include <jemalloc/jemalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "shmc_w.h"
#include "srv_cache.h"
#include "srv_conf.h"
#include "kv_mem.h"

#define KEY(i) c->argv[i].p, c->argv[i].n

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
        resp_bulk(OUT(c), KEY(1));
    } else {
        resp_simple(OUT(c), "PONG");
    }
}

/* ECHO message */
void cmd_echo(struct conn *c)
{
    resp_bulk(OUT(c), KEY(1));
}

/* Checks a password against requirepass; replies the failure itself. */
static bool check_auth(struct conn *c, const struct db_str *user, const struct db_str *pass)
{
    const char *want = srv.conf.requirepass;
    if (user && !(user->n == 7 && memcmp(user->p, "default", 7) == 0))
        goto wrong;
    if (!want) {
        if (user)
            goto wrong;
        resp_error(OUT(c), "ERR AUTH <password> called without any password configured for "
                           "the default user. Are you sure your configuration is correct?");
        return false;
    }
    if (pass->n != strlen(want) || memcmp(pass->p, want, pass->n) != 0)
        goto wrong;
    c->flags |= CONN_AUTHED;
    return true;
wrong:
    resp_error(OUT(c), "WRONGPASS invalid username-password pair or user is disabled.");
    return false;
}

/* AUTH [username] password */
void cmd_auth(struct conn *c)
{
    if (c->argc > 3) {
        cmd_reply_syntax(c);
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
    if (srv.conf.requirepass && !(c->flags & CONN_AUTHED) && !authed_here) {
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
    c->db = 0;
    c->proto = 2;
    c->name[0] = '\0';
    c->flags &= ~(uint32_t)(CONN_REPLY_OFF | CONN_REPLY_SKIP | CONN_REPLY_SKIP_NEXT |
                            CONN_NO_EVICT);
    if (srv.conf.requirepass)
        c->flags &= ~(uint32_t)CONN_AUTHED;
    resp_simple(OUT(c), "RESET");
}

/* ---- CLIENT ---- */

/* One CLIENT LIST line for c, without the newline. */
static int client_line(const struct conn *c, char *buf, size_t cap)
{
    uint64_t now = srv_mstime();
    /* Every flag that applies, in Redis's order; N for none. */
    char flags[16], *f = flags;
    if (c->flags & CONN_MONITOR)
        *f++ = 'O';
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
    return snprintf(buf, cap,
                    "id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu flags=%s db=%u "
                    "sub=%zu psub=%zu ssub=%zu multi=%d qbuf=%zu qbuf-free=%zu argv-mem=0 multi-mem=0 "
                    "rbs=%zu rbp=0 obl=0 oll=0 omem=%zu tot-mem=%zu events=r cmd=%s user=default "
                    "redir=%lld resp=%d",
                    (unsigned long long)c->id, c->addr, c->laddr, c->fd, c->name,
                    (unsigned long long)((now - c->ctime_ms) / 1000),
                    (unsigned long long)((now - c->last_ms) / 1000), flags, c->db,
                    cmd_pubsub_subscriptions(c, CMD_PS_CHANNEL),
                    cmd_pubsub_subscriptions(c, CMD_PS_PATTERN),
                    cmd_pubsub_subscriptions(c, CMD_PS_SHARD), (c->flags & CONN_MULTI) ? (int)c->mqn : -1, resp_buf_used(&c->in),
                    c->in.cap - c->in.len, c->in.cap, resp_buf_used(&c->out),
                    c->in.cap + c->out.cap, c->lastcmd ? c->lastcmd : "NULL", redir, c->proto);
}

/* CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]: one
 * filter or none, as Redis 7.0 parses it. Every client here is "normal". */
/* Client types, as CLIENT LIST and KILL filter them: a client with
 * subscriptions is "pubsub", any other "normal"; there are no replicas or
 * masters here. */
enum { CLIENT_NORMAL, CLIENT_PUBSUB, CLIENT_REPLICATION };

/* Argument i as a client type, or -1 after Redis's error. */
static int client_type_arg(struct conn *c, size_t i)
{
    if (cmd_arg_is(c, i, "normal"))
        return CLIENT_NORMAL;
    if (cmd_arg_is(c, i, "pubsub"))
        return CLIENT_PUBSUB;
    if (cmd_arg_is(c, i, "master") || cmd_arg_is(c, i, "replica") || cmd_arg_is(c, i, "slave"))
        return CLIENT_REPLICATION;
    resp_errorf(OUT(c), "ERR Unknown client type '%.*s'", (int)c->argv[i].n, c->argv[i].p);
    return -1;
}

static bool client_is(const struct conn *o, int type)
{
    return type == (cmd_pubsub_subscribed(o) ? CLIENT_PUBSUB : CLIENT_NORMAL);
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
        if (type >= 0 && !client_is(o, type))
            continue;
        bool listed = !ids;
        for (size_t i = 0; i < nids && !listed; i++)
            listed = ids[i] > 0 && (uint64_t)ids[i] == o->id;
        if (!listed)
            continue;
        int n = client_line(o, line, sizeof line);
        resp_buf_append(&b, line, (size_t)n);
        resp_buf_append(&b, "\n", 1);
    }
    free(ids);
    resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
    resp_buf_free(&b);
}

/* A timeout in milliseconds, as WAIT and CLIENT PAUSE take it: *end_ms is
 * now plus it (saturating), or 0 for a timeout of 0. Replies Redis's
 * errors and returns false on a bad one. */
static bool timeout_ms_arg(struct conn *c, size_t i, uint64_t *end_ms)
{
    int64_t ms;
    if (kv_str2ll(c->argv[i].p, c->argv[i].n, &ms)) {
        resp_error(OUT(c), "ERR timeout is not an integer or out of range");
        return false;
    }
    if (ms < 0) {
        resp_error(OUT(c), "ERR timeout is negative");
        return false;
    }
    uint64_t now = srv_mstime();
    *end_ms = ms == 0 ? 0 : (uint64_t)ms > UINT64_MAX - now ? UINT64_MAX : now + (uint64_t)ms;
    return true;
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
static void client_kill(struct conn *c)
{
    if (c->argc == 3) {
        for (struct conn *o = srv.clients; o; o = o->next) {
            if (!(o->flags & CONN_CLOSE_ASAP) && strlen(o->addr) == c->argv[2].n &&
                memcmp(o->addr, c->argv[2].p, c->argv[2].n) == 0) {
                o->flags |= CONN_CLOSE_ASAP;
                resp_simple(OUT(c), "OK");
                return;
            }
        }
        resp_error(OUT(c), "ERR No such client");
        return;
    }
    int64_t id = -1;
    const struct db_str *addr = NULL, *laddr = NULL;
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
            /* Every connection is the default user's: no ACL users here. */
            if (!cmd_arg_is(c, i + 1, "default")) {
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
        if (addr && !(strlen(o->addr) == addr->n && memcmp(o->addr, addr->p, addr->n) == 0))
            continue;
        if (laddr && !(strlen(o->laddr) == laddr->n && memcmp(o->laddr, laddr->p, laddr->n) == 0))
            continue;
        if (o == c && skipme)
            continue;
        o->flags |= CONN_CLOSE_ASAP;
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
        int n = client_line(c, line, sizeof line - 1);
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
        if (!timeout_ms_arg(c, 2, &end))
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
            "GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
            "GETNAME", "    Return the name of the current connection.",
            "ID", "    Return the ID of the current connection.",
            "INFO", "    Return information about the current client connection.",
            "KILL <ip:port>", "    Kill connection made from <ip:port>.",
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
            "UNPAUSE", "    End a pause: the held commands run.",
            "REPLY (ON|OFF|SKIP)",
            "    Turn replies to this connection on or off, or skip the next one.",
            "SETNAME <name>", "    Assign the name <name> to the current connection.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Control server assisted client side caching.",
            "TRACKINGINFO", "    Report tracking status for the current connection.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    End a client's blocking command as its timeout would, or with an error.",
            "HELP", "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else if (c->lastcmd == c->lastsub && cmd_doc_exists(c->lastsub, strlen(c->lastsub))) {
        resp_errorf(OUT(c), "ERR wrong number of arguments for '%s' command", c->lastsub);
    } else {
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try CLIENT HELP.", (int)c->argv[1].n,
                    c->argv[1].p);
    }
}

/* ---- INFO ---- */

static size_t mallctl_size(const char *name)
{
    size_t v = 0, len = sizeof v;
    if (mallctl(name, &v, &len, NULL, 0) != 0)
        return 0;
    return v;
}

static void human_bytes(char *out, size_t cap, double n)
{
    const char *units = "BKMGTP";
    int u = 0;
    while (n >= 1024 && u < 5) {
        n /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, cap, "%.0fB", n);
    else
        snprintf(out, cap, "%.2f%c", n, units[u]);
}

static bool want_section(const struct conn *c, const char *name, bool dflt)
{
    if (c->argc == 1)
        return dflt;
    for (size_t i = 1; i < c->argc; i++) {
        if (cmd_arg_is(c, i, name) || cmd_arg_is(c, i, "all") || cmd_arg_is(c, i, "everything"))
            return true;
        if (cmd_arg_is(c, i, "default") && dflt)
            return true;
    }
    return false;
}

#define INFO(...) (n = snprintf(line, sizeof line, __VA_ARGS__), resp_buf_append(&b, line, (size_t)n))

/* INFO [section ...] */
void cmd_info(struct conn *c)
{
    struct resp_buf b;
    resp_buf_init(&b);
    char line[512];
    int n;
    uint64_t now = srv_mstime();
    bool first = true;
#define SECTION(title)                                                                         \
    do {                                                                                       \
        if (!first)                                                                            \
            resp_buf_append(&b, "\r\n", 2);                                                    \
        first = false;                                                                         \
        INFO("# %s\r\n", title);                                                               \
    } while (0)

    if (want_section(c, "server", true)) {
        struct utsname u;
        uname(&u);
        SECTION("Server");
        INFO("redis_version:%s\r\n", SRV_VERSION);
        INFO("shmkv_version:%s\r\n", SHMKV_VERSION);
        INFO("redis_mode:standalone\r\n");
        INFO("os:%s %s %s\r\n", u.sysname, u.release, u.machine);
        INFO("arch_bits:%d\r\n", (int)(sizeof(void *) * 8));
        INFO("multiplexing_api:epoll\r\n");
        if (srv_lat_clock.tsc) /* the command clock (srv_lat.h), as Redis names its own */
            INFO("monotonic_clock:X86 TSC @ %llu ticks/us\r\n",
                 (unsigned long long)(((1ull << 32) * 1000 + srv_lat_clock.mult / 2) / srv_lat_clock.mult));
        else
            INFO("monotonic_clock:POSIX clock_gettime\r\n");
        INFO("process_id:%d\r\n", (int)getpid());
        INFO("tcp_port:%d\r\n", srv.conf.port);
        INFO("server_time_usec:%llu\r\n", (unsigned long long)now * 1000);
        INFO("uptime_in_seconds:%llu\r\n", (unsigned long long)(now - srv.start_ms) / 1000);
        INFO("uptime_in_days:%llu\r\n", (unsigned long long)(now - srv.start_ms) / 86400000);
        INFO("hz:%d\r\n", srv.conf.hz);
        INFO("config_file:%s\r\n", srv_conf_file ? srv_conf_file : "");
    }
    if (want_section(c, "clients", true)) {
        size_t blocked = 0;
        for (struct conn *o = srv.clients; o; o = o->next)
            blocked += (o->flags & CONN_BLOCKED) != 0;
        SECTION("Clients");
        INFO("connected_clients:%zu\r\n", srv.nclients);
        INFO("maxclients:%d\r\n", srv.conf.maxclients);
        INFO("blocked_clients:%zu\r\n", blocked);
        size_t tc, tk, ti, tp;
        cmd_tracking_info(&tc, &tk, &ti, &tp);
        INFO("tracking_clients:%zu\r\n", tc);
    }
    if (want_section(c, "memory", true)) {
        uint64_t epoch = 1;
        size_t sz = sizeof epoch;
        mallctl("epoch", &epoch, &sz, &epoch, sz); /* refresh jemalloc's statistics */
        size_t allocated = mallctl_size("stats.allocated"),
               active = mallctl_size("stats.active"), resident = mallctl_size("stats.resident");
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        char h[32];
        SECTION("Memory");
        INFO("used_memory:%zu\r\n", allocated);
        human_bytes(h, sizeof h, (double)allocated);
        INFO("used_memory_human:%s\r\n", h);
        INFO("used_memory_rss:%zu\r\n", resident);
        INFO("used_memory_peak_rss_kb:%ld\r\n", ru.ru_maxrss);
        INFO("allocator_allocated:%zu\r\n", allocated);
        INFO("allocator_active:%zu\r\n", active);
        INFO("allocator_resident:%zu\r\n", resident);
        const char *ver = NULL;
        size_t vl = sizeof ver;
        mallctl("version", &ver, &vl, NULL, 0);
        INFO("mem_allocator:jemalloc-%.5s\r\n", ver ? ver : "?");
        INFO("maxmemory:0\r\n");
        INFO("maxmemory_policy:noeviction\r\n");
    }
    if (want_section(c, "persistence", true)) {
        SECTION("Persistence");
        INFO("loading:0\r\n");
        INFO("rdb_bgsave_in_progress:0\r\n");
        INFO("rdb_last_save_time:%llu\r\n", (unsigned long long)srv.lastsave_s);
        INFO("rdb_last_bgsave_status:ok\r\n");
        INFO("aof_enabled:0\r\n");
        char why[300] = "";
        int werr = stor_write_error(srv.stor, why, sizeof why);
        /* Redis's name for "writes are refused for a disk error" (MISCONF). */
        INFO("aof_last_write_status:%s\r\n", werr ? "err" : "ok");
        INFO("writeback_write_error:%s\r\n", why);
        INFO("storage_engine:rocksdb\r\n");
        INFO("appendfsync:%s\r\n", srv.conf.appendfsync == 2   ? "always"
                                   : srv.conf.appendfsync == 1 ? "everysec"
                                                               : "no");
        struct stor_wb_stats w;
        stor_wb_stats(srv.stor, &w);
        INFO("writeback_enabled:%d\r\n", srv.conf.writeback);
        INFO("writeback_last_seq:%llu\r\n", (unsigned long long)w.last_seq);
        INFO("writeback_flushed_seq:%llu\r\n", (unsigned long long)w.durable_seq);
        INFO("writeback_pending_sets:%llu\r\n", (unsigned long long)(w.last_seq - w.durable_seq));
        INFO("writeback_journal_bytes:%llu\r\n", (unsigned long long)w.journal_bytes);
        INFO("writeback_journal_dir:%s\r\n", w.journal_dir ? w.journal_dir : "");
        INFO("writeback_journal_shm:%d\r\n", w.journal_shm);
        INFO("writeback_overlay_entries:%llu\r\n", (unsigned long long)w.overlay_entries);
        INFO("writeback_overlay_bytes:%llu\r\n", (unsigned long long)w.overlay_bytes);
        INFO("writeback_flush_batches:%llu\r\n", (unsigned long long)w.flush_batches);
        INFO("writeback_flushed_sets:%llu\r\n", (unsigned long long)w.flushed_sets);
        INFO("writeback_flush_avg_us:%llu\r\n",
             (unsigned long long)(w.flush_batches ? w.flush_us_total / w.flush_batches : 0));
        INFO("writeback_flush_last_us:%llu\r\n", (unsigned long long)w.flush_us_last);
        INFO("writeback_flush_max_us:%llu\r\n", (unsigned long long)w.flush_us_max);
        INFO("writeback_flusher_batch_size:%llu\r\n", (unsigned long long)w.flush_batch_bytes);
        INFO("writeback_flusher_interval_ms:%d\r\n", srv.conf.flush_interval_ms);
        INFO("writeback_flusher_threads:%d\r\n", w.flusher_threads);
        INFO("writeback_backpressure_waits:%llu\r\n", (unsigned long long)w.waits);
        INFO("writeback_backpressure_wait_us:%llu\r\n", (unsigned long long)w.wait_us);
        INFO("writeback_replayed_sets:%llu\r\n", (unsigned long long)w.replayed_sets);
    }
    if (want_section(c, "stats", true)) {
        SECTION("Stats");
        INFO("total_connections_received:%llu\r\n", (unsigned long long)srv.stats.connections);
        INFO("total_commands_processed:%llu\r\n", (unsigned long long)srv.stats.commands);
        INFO("total_net_input_bytes:%llu\r\n", (unsigned long long)srv.stats.net_in);
        INFO("total_net_output_bytes:%llu\r\n", (unsigned long long)srv.stats.net_out);
        INFO("io_threads_active:%d\r\n", srv.stats.io_threads_active);
        INFO("io_threaded_reads_processed:0\r\n");
        INFO("io_threaded_writes_processed:%llu\r\n",
             (unsigned long long)srv.stats.io_threaded_writes);
        INFO("rejected_connections:%llu\r\n", (unsigned long long)srv.stats.rejected);
        INFO("expired_keys:%llu\r\n", (unsigned long long)srv.stats.expired_keys);
        INFO("keyspace_hits:%llu\r\n", (unsigned long long)srv.stats.keyspace_hits);
        INFO("keyspace_misses:%llu\r\n", (unsigned long long)srv.stats.keyspace_misses);
        size_t tc, tk, ti, tp;
        cmd_tracking_info(&tc, &tk, &ti, &tp);
        INFO("tracking_total_keys:%zu\r\n", tk);
        INFO("tracking_total_items:%zu\r\n", ti);
        INFO("tracking_total_prefixes:%zu\r\n", tp);
        INFO("total_error_replies:%llu\r\n", (unsigned long long)srv.stats.error_replies);
        INFO("pubsub_channels:%zu\r\n", cmd_pubsub_names(CMD_PS_CHANNEL));
        INFO("pubsub_patterns:%zu\r\n", cmd_pubsub_names(CMD_PS_PATTERN));
        INFO("pubsubshard_channels:%zu\r\n", cmd_pubsub_names(CMD_PS_SHARD));
    }
    if (want_section(c, "replication", true)) {
        SECTION("Replication");
        INFO("role:master\r\n");
        INFO("connected_slaves:0\r\n");
    }
    if (want_section(c, "cpu", true)) {
        struct rusage self, children, thread;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &children);
        getrusage(RUSAGE_THREAD, &thread); /* INFO runs on the event loop's thread */
        SECTION("CPU");
#define TV(t) (long)(t).tv_sec, (long)(t).tv_usec
        INFO("used_cpu_sys:%ld.%06ld\r\n", TV(self.ru_stime));
        INFO("used_cpu_user:%ld.%06ld\r\n", TV(self.ru_utime));
        INFO("used_cpu_sys_children:%ld.%06ld\r\n", TV(children.ru_stime));
        INFO("used_cpu_user_children:%ld.%06ld\r\n", TV(children.ru_utime));
        INFO("used_cpu_sys_main_thread:%ld.%06ld\r\n", TV(thread.ru_stime));
        INFO("used_cpu_user_main_thread:%ld.%06ld\r\n", TV(thread.ru_utime));
#undef TV
    }
    if (want_section(c, "modules", true))
        SECTION("Modules"); /* none: shmkvd loads no modules */
    if (want_section(c, "commandstats", false)) {
        SECTION("Commandstats");
        cmd_info_commandstats(&b);
    }
    if (want_section(c, "errorstats", true)) {
        SECTION("Errorstats");
        cmd_info_errorstats(&b);
    }
    if (want_section(c, "latencystats", false)) {
        SECTION("Latencystats");
        cmd_info_latencystats(&b);
    }
    if (want_section(c, "cluster", true)) {
        SECTION("Cluster");
        INFO("cluster_enabled:0\r\n");
    }
    if (want_section(c, "storage", true)) {
        SECTION("Storage");
        INFO("storage_dir:%s\r\n", srv.conf.dir);
        struct db_info di;
        db_info(srv.db, &di);
        INFO("key_filter:filters=%u,bytes=%llu,keys_added=%llu\r\n", di.key_filters,
             (unsigned long long)di.key_filter_bytes, (unsigned long long)di.key_filter_keys);
        INFO("pick_indexes:collections=%u,bytes=%zu\r\n", di.pick_indexes, di.pick_bytes);
        INFO("key_counts_from:%s\r\n", di.counts_loaded ? "shutdown" : "scan");
        INFO("key_filter_rebuild:in_progress=%d,done=%llu\r\n", di.key_filter_building,
             (unsigned long long)di.key_filter_rebuilds);
        INFO("collections_rewritten:%llu\r\n", (unsigned long long)di.tidied);
        INFO("small_collections_cached:collections=%u,bytes=%zu,hits=%llu,fills=%llu\r\n",
             di.scache_collections, di.scache_bytes, (unsigned long long)di.scache_hits,
             (unsigned long long)di.scache_fills);
        uint64_t casked, cdone;
        stor_compact_async_stats(srv.stor, &casked, &cdone);
        INFO("range_compactions:asked=%llu,done=%llu\r\n", (unsigned long long)casked,
             (unsigned long long)cdone);
        INFO("key_counts_deferred:outstanding=%llu,total=%llu\r\n",
             (unsigned long long)di.defer_outstanding, (unsigned long long)di.defer_total);
        for (int cf = 0; cf < STOR_CF_COUNT; cf++) {
            uint64_t keys = 0, sst = 0, mem = 0;
            stor_property(srv.stor, cf, "rocksdb.estimate-num-keys", &keys);
            stor_property(srv.stor, cf, "rocksdb.total-sst-files-size", &sst);
            stor_property(srv.stor, cf, "rocksdb.cur-size-all-mem-tables", &mem);
            INFO("cf_%s:estimated_keys=%llu,sst_bytes=%llu,memtable_bytes=%llu\r\n", stor_cf_name(cf),
                 (unsigned long long)keys, (unsigned long long)sst, (unsigned long long)mem);
        }
    }
    if (want_section(c, "cache", true)) {
        SECTION("Cache");
        srv_cache_info(&b);
    }
    if (want_section(c, "keyspace", true)) {
        SECTION("Keyspace");
        for (int d = 0; d < srv.conf.databases; d++) {
            uint64_t keys, expires;
            /* After a read error the writes not yet resolved are left out. */
            (void)db_keycount(srv.db, (unsigned)d, &keys, &expires);
            if (keys)
                INFO("db%d:keys=%llu,expires=%llu,avg_ttl=0\r\n", d, (unsigned long long)keys,
                     (unsigned long long)expires);
        }
    }
#undef SECTION
    resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
    resp_buf_free(&b);
}

/* ---- CONFIG ---- */

/* CONFIG GET parameter [parameter ...] | SET parameter value [...] | RESETSTAT | HELP */
void cmd_config(struct conn *c)
{
    if (cmd_arg_is(c, 1, "get") && c->argc >= 3) {
        struct resp_buf b;
        resp_buf_init(&b);
        size_t pairs = srv_conf_get(&srv.conf, c->argv + 2, c->argc - 2, &b, c->proto);
        resp_map(OUT(c), pairs, c->proto);
        resp_buf_append(OUT(c), resp_buf_data(&b), resp_buf_used(&b));
        resp_buf_free(&b);
    } else if (cmd_arg_is(c, 1, "set") && c->argc >= 4 && c->argc % 2 == 0) {
        char err[512];
        if (srv_conf_runtime_set(&srv.conf, c->argv + 2, c->argc - 2, err, sizeof err))
            resp_error(OUT(c), err);
        else
            resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "rewrite") && c->argc == 2) {
        char err[600];
        if (srv_conf_rewrite(&srv.conf, err, sizeof err))
            resp_error(OUT(c), err);
        else
            resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "resetstat") && c->argc == 2) {
        memset(&srv.stats, 0, sizeof srv.stats);
        srv_cache_resetstat();
        cmd_stats_reset();
        resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "help") && c->argc == 2) {
        static const char *const lines[] = {
            "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>", "    Set the configuration <directive> to <value>.",
            "RESETSTAT", "    Reset statistics reported by the INFO command.",
            "REWRITE", "    Write the current configuration back to the config file.",
            "HELP", "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else if (cmd_arg_is(c, 1, "get") || cmd_arg_is(c, 1, "set") ||
               cmd_arg_is(c, 1, "resetstat") || cmd_arg_is(c, 1, "rewrite") ||
               cmd_arg_is(c, 1, "help")) {
        resp_errorf(OUT(c), "ERR wrong number of arguments for 'config|%.*s' command",
                    (int)c->argv[1].n, c->argv[1].p);
    } else {
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try CONFIG HELP.",
                    (int)c->argv[1].n, c->argv[1].p);
    }
}

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
        {"string", "@string"},         {"generic", "@keyspace"}, {"hash", "@hash"},
        {"set", "@set"},               {"sorted-set", "@sortedset"}, {"list", "@list"},
        {"transactions", "@transaction"}, {"connection", "@connection"}, {"bitmap", "@bitmap"},
        {"pubsub", "@pubsub"},         {"hyperloglog", "@hyperloglog"}, {"geo", "@geo"},
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

/* One COMMAND INFO entry: name, arity, flags, key positions, categories
 * (space-separated, sent as a set), then tips and key specs (shmkvd gives
 * none) and the subcommands' entries. */
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
    resp_array(OUT(c), 0);         /* key specs */
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
    resp_array(OUT(c), 0); /* subcommands */
}

static void command_info(struct conn *c, const struct cmd *k)
{
    char cats[160];
    command_cats(k, cats, sizeof cats);
    info_entry(c, k->name, k->arity, k->flags, k->first, k->last, k->step, cats);
    size_t n = 0;
    for (size_t i = 0; i < cmd_sub_count(); i++)
        n += sub_of(cmd_sub_at(i), k);
    resp_array(OUT(c), n); /* subcommands */
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
        by = cmd_arg_is(c, 3, "module")   ? 'm'
             : cmd_arg_is(c, 3, "aclcat") ? 'a'
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
    bool has_keys = (k->first > 0 || (k->flags & CMD_MOVABLE) || k->fn == cmd_object ||
                     k->fn == cmd_memory) && strcmp(k->group, "pubsub");
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
            "(no subcommand)", "    Return details about all Redis commands.",
            "COUNT", "    Return the total number of commands in this Redis server.",
            "LIST", "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    The keys named by a whole command (its name and arguments).",
            "HELP", "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else {
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try COMMAND HELP.",
                    (int)c->argv[1].n, c->argv[1].p);
    }
}

/* TIME */
void cmd_time(struct conn *c)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    resp_array(OUT(c), 2);
    resp_bulk_int(OUT(c), tv.tv_sec);
    resp_bulk_int(OUT(c), tv.tv_usec);
}

/* ---- SLOWLOG ---- */

void cmd_slowlog(struct conn *c)
{
    if (cmd_arg_is(c, 1, "len") && c->argc == 2) {
        resp_int(OUT(c), (int64_t)srv.slowlog_n);
    } else if (cmd_arg_is(c, 1, "reset") && c->argc == 2) {
        srv_slowlog_reset();
        resp_simple(OUT(c), "OK");
    } else if (cmd_arg_is(c, 1, "get") && c->argc <= 3) {
        int64_t want = 10;
        if (c->argc == 3) {
            if (kv_str2ll(c->argv[2].p, c->argv[2].n, &want) || want < -1) {
                resp_error(OUT(c), "ERR count should be greater than or equal to -1");
                return;
            }
        }
        size_t n = want < 0 || (uint64_t)want > srv.slowlog_n ? srv.slowlog_n : (size_t)want;
        resp_array(OUT(c), n);
        for (size_t i = 0; i < n; i++) {
            const struct srv_slowlog *e = srv_slowlog_at(i);
            resp_array(OUT(c), 6);
            resp_int(OUT(c), (int64_t)e->id);
            resp_int(OUT(c), (int64_t)e->time_s);
            resp_int(OUT(c), (int64_t)e->micros);
            resp_array(OUT(c), e->argc);
            for (size_t j = 0; j < e->argc; j++)
                resp_bulk(OUT(c), e->argv[j].p, e->argv[j].n);
            resp_bulk_cstr(OUT(c), e->addr);
            resp_bulk_cstr(OUT(c), e->name);
        }
    } else if (cmd_arg_is(c, 1, "help") && c->argc == 2) {
        static const char *const lines[] = {
            "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "LEN", "    Return the length of the slowlog.",
            "RESET", "    Reset the slowlog.",
            "HELP", "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    } else {
        resp_errorf(OUT(c), "ERR unknown subcommand or wrong number of arguments for '%.*s'. "
                            "Try SLOWLOG HELP.",
                    (int)c->argv[1].n, c->argv[1].p);
    }
}

/* LASTSAVE */
/* SHMKV.ATTACH: hands a local client the shm cache — the sealed segment
 * and its hint area, two memfds passed with SCM_RIGHTS along with this
 * reply — after AUTH like any command. Unix socket only: a descriptor
 * cannot travel over TCP. Replies [abi, segment bytes, generation]. */
void cmd_shmkv_attach(struct conn *c)
{
    if (!srv.cache) {
        resp_error(OUT(c), "ERR the shm cache is disabled (shm-cache-size is 0)");
        return;
    }
    if (!(c->flags & CONN_UNIX)) {
        resp_error(OUT(c), "ERR SHMKV.ATTACH needs a Unix socket connection");
        return;
    }
    const struct shmc_hdr *h = shmc_w_hdr(srv.cache);
    char gen[24];
    int n = snprintf(gen, sizeof gen, "%016llx", (unsigned long long)h->generation);
    resp_array(OUT(c), 3);
    resp_int(OUT(c), h->abi);
    resp_int(OUT(c), (int64_t)h->seg_size);
    resp_bulk(OUT(c), gen, (size_t)n);
    c->flags |= CONN_PASS_FDS;
}

void cmd_lastsave(struct conn *c)
{
    resp_int(OUT(c), (int64_t)srv.lastsave_s);
}

/* A RocksDB checkpoint (hard links) under dir/checkpoints; true when made,
 * else it replied the error. */
static bool checkpoint(struct conn *c)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoints", srv.conf.dir);
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        resp_errorf(OUT(c), "ERR cannot create %s: %s", path, strerror(errno));
        return false;
    }
    uint64_t now = srv_mstime();
    snprintf(path, sizeof path, "%s/checkpoints/%llu", srv.conf.dir, (unsigned long long)now);
    int rc = stor_checkpoint(srv.stor, path);
    if (rc) {
        cmd_reply_err(c, rc);
        return false;
    }
    srv.lastsave_s = now / 1000;
    srv_log(LOG_NOTICE, "Checkpoint written to %s", path);
    return true;
}

/* BGSAVE [SCHEDULE]: the checkpoint completes before the reply, so there is
 * never one "in progress". */
void cmd_bgsave(struct conn *c)
{
    if (c->argc > 2 || (c->argc == 2 && !cmd_arg_is(c, 1, "schedule"))) {
        cmd_reply_syntax(c);
        return;
    }
    if (checkpoint(c))
        resp_simple(OUT(c), "Background saving started");
}

/* SAVE: the same checkpoint, with SAVE's reply. */
void cmd_save(struct conn *c)
{
    if (checkpoint(c))
        resp_simple(OUT(c), "OK");
}

/* ROLE: a primary without replicas, at replication offset 0. */
void cmd_role(struct conn *c)
{
    resp_array(OUT(c), 3);
    resp_bulk_cstr(OUT(c), "master");
    resp_int(OUT(c), 0);
    resp_array(OUT(c), 0);
}

/* WAIT numreplicas timeout: shmkvd has no replicas, so no write is ever
 * acknowledged by one. As on a Redis master without any: 0 at once when
 * fewer than one is asked for or inside EXEC, else the client waits out
 * its timeout (milliseconds, 0 for ever) and gets 0 (cmd_blocked_cron). */
void cmd_wait(struct conn *c)
{
    if (c->flags & CONN_BLOCKED)
        return; /* parked: only its timeout answers it */
    int64_t n;
    uint64_t end;
    if (kv_str2ll(c->argv[1].p, c->argv[1].n, &n)) {
        resp_error(OUT(c), "ERR value is not an integer or out of range");
        return;
    }
    if (!timeout_ms_arg(c, 2, &end))
        return;
    if (n <= 0 || !cmd_may_block(c)) {
        resp_int(OUT(c), 0);
        return;
    }
    cmd_block(c, end); /* 0: for ever */
}

/* ---- MEMORY ---- */

static void stats_write(void *arg, const char *text)
{
    resp_buf_append(arg, text, strlen(text));
}

struct subcommand {
    const char *name;
    int arity; /* with the container's name: N exactly, -N at least */
};

/* The index in subs (ended by a NULL name) of argument 1, or -1 after
 * Redis's error for an unknown subcommand or a wrong argument count. */
static int subcommand(struct conn *c, const struct subcommand *subs, const char *container)
{
    int i = 0;
    while (subs[i].name && !cmd_arg_is(c, 1, subs[i].name))
        i++;
    if (!subs[i].name) {
        char upper[32];
        size_t n = 0;
        for (; container[n] && n < sizeof upper - 1; n++)
            upper[n] = (char)toupper((unsigned char)container[n]);
        upper[n] = '\0';
        resp_errorf(OUT(c), "ERR unknown subcommand '%.*s'. Try %s HELP.",
                    (int)(c->argv[1].n < 128 ? c->argv[1].n : 128), c->argv[1].p, upper);
        return -1;
    }
    if ((subs[i].arity > 0 && c->argc != (size_t)subs[i].arity) ||
        (subs[i].arity < 0 && c->argc < (size_t)-subs[i].arity)) {
        resp_errorf(OUT(c), "ERR wrong number of arguments for '%s|%s' command", container,
                    subs[i].name);
        return -1;
    }
    return i;
}

/* MEMORY USAGE key [SAMPLES n] | MALLOC-STATS | PURGE | HELP. USAGE counts
 * the key's records as stored (db_usage), since its data lives in RocksDB,
 * not in the daemon's heap; the other two are jemalloc's. STATS and
 * DOCTOR, which describe Redis's own memory layout, are not offered. */
void cmd_memory(struct conn *c)
{
    static const struct subcommand subs[] = {
        {"usage", -3}, {"malloc-stats", 2}, {"purge", 2}, {"help", 2}, {NULL, 0}};
    int i = subcommand(c, subs, "memory");
    if (i < 0)
        return;
    if (i == 0) {
        int64_t samples = 5; /* Redis's default */
        for (size_t j = 3; j < c->argc; j += 2) {
            if (!cmd_arg_is(c, j, "samples") || j + 1 >= c->argc) {
                cmd_reply_syntax(c);
                return;
            }
            if (kv_str2ll(c->argv[j + 1].p, c->argv[j + 1].n, &samples)) {
                resp_error(OUT(c), "ERR value is not an integer or out of range");
                return;
            }
            if (samples < 0) {
                cmd_reply_syntax(c);
                return;
            }
        }
        uint64_t bytes;
        int rc = db_usage(srv.db, c->db, c->argv[2].p, c->argv[2].n, (uint64_t)samples, &bytes);
        if (rc == KV_ENOTFOUND)
            resp_null(OUT(c), c->proto);
        else if (rc)
            cmd_reply_err(c, rc);
        else
            resp_int(OUT(c), (int64_t)bytes);
    } else if (i == 1) {
        struct resp_buf b;
        resp_buf_init(&b);
        malloc_stats_print(stats_write, &b, NULL);
        resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
        resp_buf_free(&b);
    } else if (i == 2) {
        char name[64];
        snprintf(name, sizeof name, "arena.%u.purge", (unsigned)MALLCTL_ARENAS_ALL);
        mallctl(name, NULL, NULL, NULL, 0); /* gives unused dirty pages back to the system */
        resp_simple(OUT(c), "OK");
    } else {
        static const char *const lines[] = {
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "USAGE <key> [SAMPLES <count>]",
            "    Bytes the key's records take in storage, keys and values as encoded; a",
            "    collection is sampled (default 5 elements, 0 for all) and its size",
            "    extrapolated.",
            "MALLOC-STATS",
            "    The memory allocator's (jemalloc's) statistics.",
            "PURGE",
            "    Ask the allocator to return unused memory to the system.",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    }
}

/* ---- MONITOR ---- */

size_t cmd_nmonitors;
static struct conn **monitors;
static size_t monitorcap;

/* Like the pub/sub limit: a monitor that stopped reading is closed rather
 * than let the daemon grow without bound (Redis leaves "normal" clients,
 * monitors among them, unlimited by default). */
#define MONITOR_OUT_MAX (32u << 20)

/* MONITOR: from now on c gets, as a simple string, every command the
 * server runs (after it ran), as redis-server 7.0 writes them. */
void cmd_monitor(struct conn *c)
{
    if (c->flags & CONN_IN_EXEC) {
        resp_error(OUT(c), "ERR MONITOR isn't allowed for DENY BLOCKING client");
        return;
    }
    if (c->flags & CONN_MONITOR)
        return; /* Redis ignores a second MONITOR, without a reply */
    if (cmd_nmonitors == monitorcap) {
        monitorcap = monitorcap ? monitorcap * 2 : 4;
        monitors = kv_xrealloc(monitors, monitorcap * sizeof *monitors);
    }
    monitors[cmd_nmonitors++] = c;
    c->flags |= CONN_MONITOR;
    resp_simple(OUT(c), "OK");
}

void cmd_monitor_release(struct conn *c)
{
    if (!(c->flags & CONN_MONITOR))
        return;
    for (size_t i = 0; i < cmd_nmonitors; i++) {
        if (monitors[i] == c) {
            monitors[i] = monitors[--cmd_nmonitors];
            break;
        }
    }
    c->flags &= ~(uint32_t)CONN_MONITOR;
}

/* Administrative commands are not shown, as in Redis 7.0: those flagged
 * admin, and the admin subcommands of CONFIG, SLOWLOG and CLIENT. */
static bool monitor_hides(const struct conn *c, const struct cmd *cmd)
{
    if (cmd->flags & CMD_ADMIN)
        return true;
    if (!(cmd->flags & CMD_CONTAINER) || c->argc < 2)
        return false;
    if (cmd->fn == cmd_config || cmd->fn == cmd_slowlog)
        return !cmd_arg_is(c, 1, "help");
    if (cmd->fn == cmd_client)
        return cmd_arg_is(c, 1, "kill") || cmd_arg_is(c, 1, "list");
    return false;
}

bool cmd_arg_redacted(const struct conn *c, const struct cmd *cmd, size_t i)
{
    if (cmd->fn == cmd_auth)
        return i >= 1;
    if (cmd->fn == cmd_migrate) {
        for (size_t j = 6; j < i; j++) {
            if (cmd_arg_is(c, j, "keys"))
                return false;
            size_t takes = cmd_arg_is(c, j, "auth") ? 1 : cmd_arg_is(c, j, "auth2") ? 2 : 0;
            if (takes && i - j <= takes && j + takes < c->argc)
                return true;
            j += takes;
        }
        return false;
    }
    if (cmd->fn != cmd_hello)
        return false;
    for (size_t j = 2; j < c->argc; j++) {
        if (cmd_arg_is(c, j, "auth") && j + 2 < c->argc) {
            if (i == j + 1 || i == j + 2)
                return true;
            j += 2;
        } else if (cmd_arg_is(c, j, "setname") && j + 1 < c->argc) {
            j++;
        } else {
            break;
        }
    }
    return false;
}

/* Appends "..." with Redis's escapes (sdscatrepr's rules). */
static void repr_append(struct resp_buf *b, const char *p, size_t n)
{
    char tmp[8];
    resp_buf_append(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        const char *esc = NULL;
        switch (ch) {
        case '\\': esc = "\\\\"; break;
        case '"': esc = "\\\""; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\a': esc = "\\a"; break;
        case '\b': esc = "\\b"; break;
        }
        if (esc) {
            resp_buf_append(b, esc, 2);
        } else if (ch >= 0x20 && ch < 0x7f) {
            resp_buf_append(b, &p[i], 1);
        } else {
            snprintf(tmp, sizeof tmp, "\\x%02x", ch);
            resp_buf_append(b, tmp, 4);
        }
    }
    resp_buf_append(b, "\"", 1);
}

void cmd_monitor_feed(const struct conn *c, const struct cmd *cmd)
{
    if (monitor_hides(c, cmd))
        return;
    static struct resp_buf line;
    resp_buf_consume(&line, resp_buf_used(&line)); /* empties it, keeps its memory */
    struct timeval tv;
    gettimeofday(&tv, NULL);
    char head[200];
    int n;
    if (c->flags & CONN_UNIX)
        n = snprintf(head, sizeof head, "+%ld.%06ld [%u unix:%s]", (long)tv.tv_sec,
                     (long)tv.tv_usec, c->db, srv.conf.unixsocket ? srv.conf.unixsocket : "");
    else
        n = snprintf(head, sizeof head, "+%ld.%06ld [%u %s]", (long)tv.tv_sec,
                     (long)tv.tv_usec, c->db, c->addr);
    resp_buf_append(&line, head, (size_t)n < sizeof head ? (size_t)n : sizeof head - 1);
    for (size_t i = 0; i < c->argc; i++) {
        resp_buf_append(&line, " ", 1);
        if (cmd_arg_redacted(c, cmd, i))
            resp_buf_append(&line, "\"(redacted)\"", 12);
        else
            repr_append(&line, c->argv[i].p, c->argv[i].n);
    }
    resp_buf_append(&line, "\r\n", 2);
    for (size_t i = 0; i < cmd_nmonitors; i++) {
        struct conn *m = monitors[i];
        if (m->flags & (CONN_CLOSE_ASAP | CONN_CLOSE_AFTER_REPLY | CONN_REPLY_OFF))
            continue;
        resp_buf_append(OUT(m), resp_buf_data(&line), resp_buf_used(&line));
        conn_want_write(m);
        if (resp_buf_used(&m->out) > MONITOR_OUT_MAX) {
            srv_log(LOG_WARNING,
                    "Client id=%llu addr=%s closed for overcoming the monitor output limit",
                    (unsigned long long)m->id, m->addr);
            m->flags |= CONN_CLOSE_ASAP;
        }
    }
}

/* SHMKV.COMPACT: writes everything pending to RocksDB and compacts every
 * column family, running the garbage-collecting filters over all of it.
 * It blocks the server meanwhile (as SAVE does Redis): an operator's and a
 * benchmark's tool, for "bytes on disk after compaction". */
void cmd_shmkv_compact(struct conn *c)
{
    int rc = stor_drain(srv.stor);
    for (int cf = 0; rc == 0 && cf < STOR_CF_COUNT; cf++)
        rc = stor_compact(srv.stor, cf);
    if (rc) {
        cmd_reply_err(c, rc);
        return;
    }
    srv_log(LOG_NOTICE, "SHMKV.COMPACT: every column family compacted");
    resp_simple(OUT(c), "OK");
}

/* SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: every write is already
 * durable in RocksDB, so SAVE and NOSAVE end the same way. */
void cmd_shutdown(struct conn *c)
{
    for (size_t i = 1; i < c->argc; i++) {
        if (!cmd_arg_is(c, i, "nosave") && !cmd_arg_is(c, i, "save") && !cmd_arg_is(c, i, "now") &&
            !cmd_arg_is(c, i, "force")) {
            if (cmd_arg_is(c, i, "abort"))
                resp_error(OUT(c), "ERR No shutdown in progress.");
            else
                cmd_reply_syntax(c);
            return;
        }
    }
    srv_log(LOG_WARNING, "User requested shutdown...");
    srv_request_shutdown(0);
    c->flags |= CONN_CLOSE_ASAP; /* like Redis: no reply, the connection just closes */
}

/* ---- LATENCY ---- */

static void latency_doctor(struct conn *c)
{
    struct resp_buf b;
    resp_buf_init(&b);
    char line[512];
    int n;
    if (!srv.conf.latency_monitor_threshold) {
        n = snprintf(line, sizeof line,
                     "The latency monitor is off (latency-monitor-threshold is 0), so there is "
                     "nothing to analyse. CONFIG SET latency-monitor-threshold <milliseconds> "
                     "turns it on: every command, and every active expiry cycle, that takes at "
                     "least that long is then recorded.\n");
        resp_buf_append(&b, line, (size_t)n);
    } else if (!srv_lat_nevents()) {
        n = snprintf(line, sizeof line,
                     "Nothing took %d ms or more since the latency monitor was turned on or "
                     "reset.\n",
                     srv.conf.latency_monitor_threshold);
        resp_buf_append(&b, line, (size_t)n);
    } else {
        n = snprintf(line, sizeof line, "Latency spikes of %d ms or more, by event:\n\n",
                     srv.conf.latency_monitor_threshold);
        resp_buf_append(&b, line, (size_t)n);
        for (size_t i = 0; i < srv_lat_nevents(); i++) {
            const struct srv_lat_event *e = srv_lat_event_at(i);
            uint64_t sum = 0;
            uint32_t hi = 0;
            for (size_t j = 0; j < e->n; j++) {
                const struct srv_lat_sample *x = srv_lat_sample_at(e, j);
                sum += x->ms;
                if (x->ms > hi)
                    hi = x->ms;
            }
            n = snprintf(line, sizeof line,
                         "%s: %u seconds with a spike in the last %d recorded, average %llu ms, "
                         "highest %u ms (highest since reset %u ms).\n",
                         e->name, e->n, SRV_LAT_SAMPLES,
                         (unsigned long long)(sum / (e->n ? e->n : 1)), hi, e->max);
            resp_buf_append(&b, line, (size_t)n);
            const char *advice =
                !strcmp(e->name, "command")
                    ? "  Slow commands: SLOWLOG GET names them. Commands over large collections "
                      "(KEYS, SMEMBERS, LRANGE 0 -1, SORT) take time in proportion to them.\n"
                : !strcmp(e->name, "fast-command")
                    ? "  Commands that take constant time were slow: the host was short of CPU "
                      "(other processes, RocksDB's compactions on the same cores) or memory was "
                      "paged out.\n"
                    : "  Many keys expired at once: spread expiry times (EXPIRE with some "
                      "randomness) to spread the work.\n";
            resp_buf_append(&b, advice, strlen(advice));
        }
    }
    resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
    resp_buf_free(&b);
}

/* An event's samples as a chart: one column per sample, oldest first, as
 * tall as its latency against the highest shown. */
static void latency_graph(struct conn *c, const struct srv_lat_event *e)
{
    enum { ROWS = 6 };
    struct resp_buf b;
    resp_buf_init(&b);
    uint32_t hi = 0, lo = UINT32_MAX;
    for (size_t j = 0; j < e->n; j++) {
        uint32_t ms = srv_lat_sample_at(e, j)->ms;
        hi = ms > hi ? ms : hi;
        lo = ms < lo ? ms : lo;
    }
    char line[SRV_LAT_SAMPLES + 128];
    int n = snprintf(line, sizeof line,
                     "%s - high %u ms, low %u ms (all time high %u ms)\n", e->name, hi, lo, e->max);
    resp_buf_append(&b, line, (size_t)n);
    memset(line, '-', e->n);
    line[e->n] = '\n';
    resp_buf_append(&b, line, e->n + 1);
    for (int row = ROWS; row >= 1; row--) {
        for (size_t j = 0; j < e->n; j++) {
            uint32_t ms = srv_lat_sample_at(e, j)->ms;
            unsigned h = hi ? (unsigned)(((uint64_t)ms * ROWS + hi - 1) / hi) : 0;
            line[j] = h >= (unsigned)row ? '#' : row == 1 ? '_' : ' ';
        }
        line[e->n] = '\n';
        resp_buf_append(&b, line, e->n + 1);
    }
    int64_t now = (int64_t)(srv_mstime() / 1000);
    n = snprintf(line, sizeof line, "oldest %llds ago, newest %llds ago\n",
                 (long long)(now - srv_lat_sample_at(e, 0)->time),
                 (long long)(now - srv_lat_sample_at(e, e->n - 1)->time));
    resp_buf_append(&b, line, (size_t)n);
    resp_verbatim(OUT(c), resp_buf_data(&b), resp_buf_used(&b), c->proto);
    resp_buf_free(&b);
}

/* LATENCY LATEST | HISTORY event | RESET [event ...] | GRAPH event |
 * DOCTOR | HISTOGRAM [command ...] | HELP */
void cmd_latency(struct conn *c)
{
    static const struct subcommand subs[] = {
        {"latest", 2}, {"history", 3}, {"reset", -2}, {"graph", 3}, {"doctor", 2},
        {"histogram", -2}, {"help", 2}, {NULL, 0}};
    int i = subcommand(c, subs, "latency");
    if (i < 0)
        return;
    const struct srv_lat_event *e =
        c->argc > 2 ? srv_lat_find(c->argv[2].p, c->argv[2].n) : NULL;
    switch (i) {
    case 0: /* LATEST */
        resp_array(OUT(c), srv_lat_nevents());
        for (size_t j = 0; j < srv_lat_nevents(); j++) {
            const struct srv_lat_event *x = srv_lat_event_at(j);
            const struct srv_lat_sample *last = srv_lat_sample_at(x, x->n - 1);
            resp_array(OUT(c), 4);
            resp_bulk_cstr(OUT(c), x->name);
            resp_int(OUT(c), last->time);
            resp_int(OUT(c), last->ms);
            resp_int(OUT(c), x->max);
        }
        break;
    case 1: /* HISTORY */
        resp_array(OUT(c), e ? e->n : 0);
        for (size_t j = 0; e && j < e->n; j++) {
            resp_array(OUT(c), 2);
            resp_int(OUT(c), srv_lat_sample_at(e, j)->time);
            resp_int(OUT(c), srv_lat_sample_at(e, j)->ms);
        }
        break;
    case 2: { /* RESET */
        size_t n = 0;
        if (c->argc == 2)
            n = srv_lat_reset(NULL, 0);
        for (size_t j = 2; j < c->argc; j++)
            n += srv_lat_reset(c->argv[j].p, c->argv[j].n);
        resp_int(OUT(c), (int64_t)n);
        break;
    }
    case 3: /* GRAPH */
        if (!e)
            resp_errorf(OUT(c), "ERR No samples available for event '%.*s'",
                        (int)(c->argv[2].n < 128 ? c->argv[2].n : 128), c->argv[2].p);
        else
            latency_graph(c, e);
        break;
    case 4:
        latency_doctor(c);
        break;
    case 5:
        cmd_latency_histogram(c, c->argv + 2, c->argc - 2);
        break;
    default: {
        static const char *const lines[] = {
            "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    A report on the latency spikes recorded, with advice.",
            "GRAPH <event>",
            "    A chart of an event's latency spikes.",
            "HISTORY <event>",
            "    An event's latency spikes: [unix time, milliseconds] pairs, oldest first.",
            "LATEST",
            "    Each event's latest spike: [event, unix time, milliseconds, highest].",
            "RESET [<event> ...]",
            "    Forget the spikes of these events (default: of all).",
            "HISTOGRAM [COMMAND ...]",
            "    Cumulative counts of the commands' durations at powers of two of",
            "    microseconds (default: every command called).",
            "HELP",
            "    Print this help.",
        };
        cmd_reply_lines(c, lines, sizeof lines / sizeof lines[0]);
    }
    }
}
