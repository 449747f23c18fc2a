/*
 * cmd_monitor — MONITOR: the clients that watch every command, and the
 * line each command is fed to them as (arguments quoted as Redis quotes
 * them, secrets redacted).
 */
#include "cmd.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sys/time.h>

#include "kv_mem.h"

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
    /* Any other admin subcommand (ACL SETUSER ...), as Redis flags it. */
    const struct cmd_sub *sub = cmd_sub_of(cmd, c->argv, c->argc);
    return sub && (sub->flags & CMD_ADMIN);
}

bool cmd_arg_redacted(const struct conn *c, const struct cmd *cmd, size_t i)
{
    if (cmd->fn == cmd_auth)
        return i >= 1;
    /* A user's rules hold its passwords: all of them go, as in Redis. */
    if (cmd->fn == cmd_acl)
        return i >= 2 && cmd_arg_is(c, 1, "setuser");
    /* The values of Redis's sensitive directives. */
    if (cmd->fn == cmd_config && i >= 3 && i % 2 == 1 && cmd_arg_is(c, 1, "set")) {
        static const char *const secret[] = {"requirepass", "masterauth", "tls-key-file-pass",
                                             "tls-client-key-file-pass"};
        for (size_t k = 0; k < sizeof secret / sizeof secret[0]; k++)
            if (cmd_arg_is(c, i - 1, secret[k]))
                return true;
        return false;
    }
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
        case '\\':
            esc = "\\\\";
            break;
        case '"':
            esc = "\\\"";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\a':
            esc = "\\a";
            break;
        case '\b':
            esc = "\\b";
            break;
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
                     (long)tv.tv_usec, srv_dbunmap[c->db],
                     srv.conf.unixsocket ? srv.conf.unixsocket : "");
    else
        n = snprintf(head, sizeof head, "+%ld.%06ld [%u %s]", (long)tv.tv_sec, (long)tv.tv_usec,
                     srv_dbunmap[c->db], c->addr);
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
            srv_close_async(m);
        }
    }
}
