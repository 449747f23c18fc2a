/*
 * cmd_migrate — MIGRATE: serializes keys as DUMP does, sends them to
 * another server as RESTORE commands over a TCP connection of its own, and
 * deletes them here once the target has accepted them (unless COPY).
 *
 * As in Redis, it runs on the event loop and waits for the target, each
 * step (connect, the write, each reply) bounded by the timeout argument.
 * Unlike Redis, which keeps its connection to a target for 10 s for the
 * next MIGRATE, it connects anew every time: a loopback or LAN connect is
 * a small part of moving a value, and no socket outlives the command.
 */
#include "cmd.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdb.h"
#include "kv_mem.h"

/* Milliseconds left until deadline (at least 0). */
static int left_ms(uint64_t deadline)
{
    uint64_t now = srv_mstime();
    return now >= deadline ? 0 : (int)(deadline - now < INT32_MAX ? deadline - now : INT32_MAX);
}

/* Waits for fd to be ready for ev until deadline: 1 ready, 0 not. */
static int wait_fd(int fd, short ev, uint64_t deadline)
{
    struct pollfd p = {.fd = fd, .events = ev};
    int rc;
    while ((rc = poll(&p, 1, left_ms(deadline))) < 0 && errno == EINTR)
        ;
    return rc == 1 && !(p.revents & POLLNVAL);
}

/* A non-blocking TCP connection to host:port, started on the first of
 * host's addresses that takes a connect() and waited for until it is
 * writable or timeout_ms pass; -1 when none does. A refused or unfinished
 * connection is returned all the same: the write that follows fails, and
 * MIGRATE says so as Redis does ("writing to target instance"). */
static int connect_to(const char *host, int port, int64_t timeout_ms)
{
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, service, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd >= 0)
        wait_fd(fd, POLLOUT, srv_mstime() + (uint64_t)timeout_ms);
    return fd;
}

/* Writes all of b within timeout_ms. */
static bool write_all(int fd, const struct resp_buf *b, int64_t timeout_ms)
{
    uint64_t deadline = srv_mstime() + (uint64_t)timeout_ms;
    const char *p = resp_buf_data(b);
    size_t n = resp_buf_used(b);
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_fd(fd, POLLOUT, deadline))
                return false;
        } else {
            return false;
        }
    }
    return true;
}

/* The target's replies, one line each (+OK or -ERR ...), read as they come. */
struct lines {
    int fd;
    char buf[4096];
    size_t used;
};

/* The next reply line, without its CR LF, into out (cut to cap - 1 bytes),
 * within timeout_ms; false on a timeout, an error or the target closing. */
static bool read_line(struct lines *l, char *out, size_t cap, int64_t timeout_ms)
{
    uint64_t deadline = srv_mstime() + (uint64_t)timeout_ms;
    for (;;) {
        char *nl = memchr(l->buf, '\n', l->used);
        if (nl) {
            size_t n = (size_t)(nl - l->buf), keep = n;
            if (keep && l->buf[keep - 1] == '\r')
                keep--;
            snprintf(out, cap, "%.*s", (int)keep, l->buf);
            l->used -= n + 1;
            memmove(l->buf, nl + 1, l->used);
            return true;
        }
        if (l->used == sizeof l->buf)
            l->used = 0; /* a line longer than any reply we read: keep its end */
        ssize_t r = recv(l->fd, l->buf + l->used, sizeof l->buf - l->used, 0);
        if (r > 0)
            l->used += (size_t)r;
        else if (r == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
            return false; /* closed, or failed */
        else if (errno != EINTR && !wait_fd(l->fd, POLLIN, deadline))
            return false;
    }
}

int cmd_migrate_keys(const struct db_str *argv, size_t argc, size_t *first)
{
    *first = 3;
    size_t n = argc > 3;
    for (size_t i = 6; i < argc; i++) {
        if (argv[i].n == 4 && !strncasecmp(argv[i].p, "keys", 4)) {
            if (argv[3].n)
                return -1;
            *first = i + 1;
            n = argc - *first;
            break;
        }
    }
    return (int)n;
}

/* MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
 * [AUTH password | AUTH2 username password] [KEYS key [key ...]].
 * Checks and replies in Redis's order and words: options, the timeout and
 * the database, then +NOKEY when no key is here, then the connection. */
void cmd_migrate(struct conn *c)
{
    bool copy = false, replace = false;
    size_t first = 3, nkeys = 1, user = 0, pass = 0;
    for (size_t j = 6; j < c->argc; j++) {
        size_t more = c->argc - 1 - j;
        if (cmd_arg_is(c, j, "copy")) {
            copy = true;
        } else if (cmd_arg_is(c, j, "replace")) {
            replace = true;
        } else if (cmd_arg_is(c, j, "auth") && more >= 1) {
            pass = ++j;
        } else if (cmd_arg_is(c, j, "auth2") && more >= 2) {
            user = ++j;
            pass = ++j;
        } else if (cmd_arg_is(c, j, "keys")) {
            if (c->argv[3].n) {
                resp_error(OUT(c), "ERR When using MIGRATE KEYS option, the key argument must "
                                   "be set to the empty string");
                return;
            }
            first = j + 1;
            nkeys = c->argc - j - 1;
            break;
        } else {
            cmd_reply_syntax(c);
            return;
        }
    }
    int64_t timeout, dbid;
    if (!cmd_arg_ll(c, 5, &timeout) || !cmd_arg_ll(c, 4, &dbid))
        return;
    if (timeout <= 0)
        timeout = 1000;

    /* The keys that are here, each serialized with its time to live. */
    struct resp_buf out;
    resp_buf_init(&out);
    size_t *which = kv_xmalloc((nkeys ? nkeys : 1) * sizeof *which), found = 0;
    struct db_value v;
    db_vec_init(&v.items);
    for (size_t i = first; i < first + nkeys; i++) {
        db_vec_clear(&v.items);
        int rc = db_dump(srv.db, c->db, CMD_ARG(i), &v);
        if (rc == KV_ENOTFOUND)
            continue;
        if (rc < 0) {
            cmd_reply_err(c, rc);
            goto done;
        }
        uint64_t now = srv_mstime();
        char ttl[24];
        snprintf(ttl, sizeof ttl, "%llu",
                 (unsigned long long)(!v.expire_ms        ? 0
                                      : v.expire_ms > now ? v.expire_ms - now
                                                          : 1));
        size_t n;
        char *p = rdb_dump(&v, &n);
        resp_array(&out, replace ? 5 : 4);
        resp_bulk_cstr(&out, "RESTORE");
        resp_bulk(&out, CMD_ARG(i));
        resp_bulk_cstr(&out, ttl);
        resp_bulk(&out, p, n);
        if (replace)
            resp_bulk_cstr(&out, "REPLACE");
        free(p);
        which[found++] = i;
    }
    if (!found) {
        resp_simple(OUT(c), "NOKEY");
        goto done;
    }
    /* AUTH and SELECT go first, in front of the RESTOREs. */
    struct resp_buf head;
    resp_buf_init(&head);
    if (pass) {
        resp_array(&head, user ? 3 : 2);
        resp_bulk_cstr(&head, "AUTH");
        if (user)
            resp_bulk(&head, CMD_ARG(user));
        resp_bulk(&head, CMD_ARG(pass));
    }
    char db[24];
    snprintf(db, sizeof db, "%lld", (long long)dbid);
    resp_array(&head, 2);
    resp_bulk_cstr(&head, "SELECT");
    resp_bulk_cstr(&head, db);

    char host[256], port[16]; /* the port as atoi() reads it, as in Redis */
    snprintf(host, sizeof host, "%.*s", (int)c->argv[1].n, c->argv[1].p);
    snprintf(port, sizeof port, "%.*s", (int)(c->argv[2].n < 15 ? c->argv[2].n : 15), c->argv[2].p);
    struct lines l = {.fd = connect_to(host, atoi(port), timeout)};
    if (l.fd < 0) {
        resp_error(OUT(c), "IOERR error or timeout connecting to the client");
        resp_buf_free(&head);
        goto done;
    }
    if (!write_all(l.fd, &head, timeout) || !write_all(l.fd, &out, timeout)) {
        resp_error(OUT(c), "IOERR error or timeout writing to target instance");
        goto closed;
    }
    /* Replies: AUTH's, SELECT's, then one per RESTORE. The first error
     * (AUTH's before SELECT's before a RESTORE's) is the one reported; a
     * key the target took is deleted here unless COPY. */
    char auth_line[256] = "", select_line[256], line[256], err[256] = "";
    if ((pass && !read_line(&l, auth_line, sizeof auth_line, timeout)) ||
        !read_line(&l, select_line, sizeof select_line, timeout)) {
        resp_error(OUT(c), "IOERR error or timeout reading to target instance");
        goto closed;
    }
    /* Replicas delete what moved: never a MIGRATE of their own. */
    struct db_str *dels = kv_xmalloc((found + 1) * sizeof *dels);
    size_t ndels = 1;
    dels[0] = (struct db_str){.p = "DEL", .n = 3};
    for (size_t k = 0; k < found; k++) {
        if (!read_line(&l, line, sizeof line, timeout)) {
            resp_error(OUT(c), "IOERR error or timeout reading to target instance");
            if (ndels > 1)
                cmd_propagate_as(dels, ndels);
            free(dels);
            goto closed;
        }
        const char *bad = auth_line[0] == '-'     ? auth_line
                          : select_line[0] == '-' ? select_line
                          : line[0] == '-'        ? line
                                                  : NULL;
        if (bad) {
            if (!err[0])
                snprintf(err, sizeof err, "%s", bad + 1);
        } else if (!copy && db_del(srv.db, c->db, CMD_ARG(which[k])) == 1) {
            cmd_notify_arg(c, SRV_NOTIFY_GENERIC, "del", which[k]);
            dels[ndels++] = c->argv[which[k]];
        }
    }
    if (ndels > 1)
        cmd_propagate_as(dels, ndels);
    free(dels);
    if (err[0])
        resp_errorf(OUT(c), "ERR Target instance replied with error: %s", err);
    else
        resp_simple(OUT(c), "OK");
closed:
    close(l.fd);
    resp_buf_free(&head);
done:
    db_vec_destroy(&v.items);
    free(which);
    resp_buf_free(&out);
}
