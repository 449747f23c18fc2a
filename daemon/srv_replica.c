/*
 * srv_replica — the replica side of replication (see srv_replica.h).
 *
 * The link goes through these states, which ROLE names as Redis does:
 *
 *   connect     a primary is set, no connection: the cron tries once a second
 *   connecting  a non-blocking connect is under way, then with
 *               tls-replication the TLS handshake
 *   handshake   PING, AUTH, REPLCONF, PSYNC, one reply awaited at a time
 *   sync        the RDB file arrives into dir/temp-sync-<pid>.rdb
 *   connected   the link is a client (CONN_MASTER) running the stream
 *
 * Until it is connected the link is a bare socket of this module's, which
 * the loop hands here (srv_replica_event) through a placeholder conn that
 * carries CONN_MASTER; once synchronized the socket becomes a client of
 * srv.c's (srv_conn_adopt), so the stream's commands take the same path
 * as any client's: parser, cmd_dispatch, cmd_call, the commit point.
 *
 * A full synchronization loads the file into spare databases and only
 * then switches to them (full_load): until the last key is in, clients,
 * RESP and libshmkv alike, read the old data; after it they read the new,
 * never a mix.
 */
#include "srv_replica.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmd.h"
#include "kv_err.h"
#include "kv_mem.h"
#include "kv_num.h"
#include "scr.h"
#include "srv.h"
#include "srv_cache.h"
#include "srv_conf.h"
#include "srv_dbmap.h"
#include "srv_rdb.h"
#include "srv_repl.h"
#include "srv_tls.h"
#include "stor.h"

enum {
    ST_NONE,       /* not a replica */
    ST_CONNECT,    /* to connect (again) */
    ST_CONNECTING, /* connect() under way */
    ST_TLS,        /* the TLS handshake under way (tls-replication) */
    ST_HANDSHAKE,  /* a reply to one of the handshake's commands awaited */
    ST_TRANSFER,   /* the RDB file arriving */
    ST_CONNECTED,  /* the stream: rs.link runs it */
};

/* The handshake's steps: which reply is awaited. */
enum { HS_PONG, HS_AUTH, HS_PORT, HS_IP, HS_CAPA, HS_PSYNC };

#define LINE_MAX_LEN 4096       /* a handshake reply longer than this is garbage */
#define XFER_CHUNK (256 * 1024) /* read from the socket, written to the file, at a time */

static struct {
    int state, hs;
    char *host;
    int port;
    int fd;             /* the bare socket before it becomes rs.link; -1: none */
    SSL *ssl;           /* its TLS session (tls-replication); NULL: none */
    struct conn *link;  /* the primary as a client, while connected */
    struct resp_buf in; /* bytes read before the link became a client */
    uint64_t try_ms;    /* the last connect attempt */
    uint64_t io_ms;     /* the last byte read on the bare socket */
    uint64_t down_ms;   /* when the link last went down; 0: it never was up */
    uint64_t ack_ms;    /* the last REPLCONF ACK sent */
    bool synced;        /* the offset continues a primary's history: PSYNC can ask */
    unsigned stream_db; /* the database the stream last selected (logical) */
    bool loading;       /* a full sync's file is being loaded */
    uint64_t tick_ms;   /* the last round of events during the load */
    /* the transfer */
    char fullid[41];
    uint64_t fulloff;
    int64_t size; /* the file's length; -1 while unknown (before "$"), -2: EOF-marked */
    uint64_t got; /* bytes of it received */
    char mark[40], last[40];
    int tmpfd;
    char tmppath[4200];
    /* REPLCONF GETACK: an ACK of ack_off follows the command */
    bool ack_pending;
    uint64_t ack_off;
    bool failover; /* FAILOVER: the PSYNC asks the primary-to-be to take over */
} rs = {.fd = -1, .tmpfd = -1};

/* The placeholder the loop sees for the bare socket (srv_replica_event). */
static struct conn bare = {.flags = CONN_MASTER, .fd = -1};

static void link_down(const char *why);

/* ---- settings ---- */

static int64_t kept_num(const char *name)
{
    return srv_conf_kept_num(&srv.conf, name);
}

static const char *kept_str(const char *name)
{
    const char *v = srv_conf_kept(&srv.conf, name);
    return v ? v : "";
}

bool srv_replica_following(void)
{
    return rs.state != ST_NONE;
}

bool srv_replica_link_up(void)
{
    return rs.state == ST_CONNECTED;
}

/* ---- the bare socket ---- */

static void bare_close(void)
{
    srv_tls_close(rs.ssl);
    rs.ssl = NULL;
    if (rs.fd >= 0) {
        epoll_ctl(srv.epfd, EPOLL_CTL_DEL, rs.fd, NULL);
        close(rs.fd);
        rs.fd = -1;
    }
    if (rs.tmpfd >= 0) {
        close(rs.tmpfd);
        rs.tmpfd = -1;
    }
    if (rs.tmppath[0]) {
        unlink(rs.tmppath);
        rs.tmppath[0] = '\0';
    }
    resp_buf_free(&rs.in);
    resp_buf_init(&rs.in);
}

static void bare_watch(uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = &bare};
    epoll_ctl(srv.epfd, EPOLL_CTL_MOD, rs.fd, &ev);
}

/* As read(2) on the bare socket, through its TLS session if it has one. */
static ssize_t bare_io_read(void *buf, size_t n)
{
    bool want_write;
    if (rs.ssl)
        return srv_tls_read(rs.ssl, buf, n, &want_write);
    ssize_t r;
    while ((r = read(rs.fd, buf, n)) < 0 && errno == EINTR)
        ;
    return r;
}

/* Sends a command (its words) on the bare socket, whole: a handshake's
 * commands are small, so a socket that cannot take one at once is broken. */
static bool bare_send(const char *const *argv, int argc)
{
    struct resp_buf b;
    resp_buf_init(&b);
    resp_array(&b, (size_t)argc);
    for (int i = 0; i < argc; i++)
        resp_bulk_cstr(&b, argv[i]);
    ssize_t w;
    bool want_write;
    if (rs.ssl)
        w = srv_tls_write(rs.ssl, resp_buf_data(&b), resp_buf_used(&b), &want_write);
    else
        while ((w = write(rs.fd, resp_buf_data(&b), resp_buf_used(&b))) < 0 && errno == EINTR)
            ;
    bool ok = w == (ssize_t)resp_buf_used(&b);
    resp_buf_free(&b);
    if (!ok)
        link_down("cannot write to the MASTER");
    return ok;
}

/* Reads what the socket has into rs.in: 1 bytes came, 0 none yet, -1 the
 * link is gone (already handled). */
static int bare_read(void)
{
    char *dst = resp_buf_reserve(&rs.in, 16384);
    ssize_t r = bare_io_read(dst, 16384);
    if (r > 0) {
        rs.in.len += (size_t)r;
        srv.stats.net_in += (uint64_t)r;
        rs.io_ms = srv_mstime();
        return 1;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    link_down(r == 0 ? "the MASTER closed the connection" : strerror(errno));
    return -1;
}

/* Takes one line from rs.in into line (without its CRLF): true when one
 * was complete. A line too long for a handshake reply ends the link. */
static bool take_line(char *line, size_t cap)
{
    size_t n = resp_buf_used(&rs.in);
    if (!n)
        return false;
    const char *p = resp_buf_data(&rs.in);
    const char *nl = memchr(p, '\n', n);
    if (!nl) {
        if (n > LINE_MAX_LEN)
            link_down("a reply line from the MASTER is too long");
        return false;
    }
    size_t len = (size_t)(nl - p);
    if (len && p[len - 1] == '\r')
        len--;
    if (len >= cap)
        len = cap - 1;
    memcpy(line, p, len);
    line[len] = '\0';
    resp_buf_consume(&rs.in, (size_t)(nl - p) + 1);
    return true;
}

/* ---- connecting ---- */

static void connect_now(void)
{
    rs.try_ms = srv_mstime();
    srv_log(LOG_NOTICE, "Connecting to MASTER %s:%d", rs.host, rs.port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", rs.port);
    int rc = getaddrinfo(rs.host, ps, &hints, &res);
    if (rc) {
        srv_log(LOG_WARNING, "Unable to connect to MASTER: %s", gai_strerror(rc));
        return;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        srv_log(LOG_WARNING, "Unable to connect to MASTER: %s", strerror(err));
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    rs.fd = fd;
    rs.io_ms = rs.try_ms;
    rs.state = ST_CONNECTING;
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = &bare};
    epoll_ctl(srv.epfd, EPOLL_CTL_ADD, fd, &ev);
    srv_log(LOG_NOTICE, "MASTER <-> REPLICA sync started");
}

/* The link is down (or never came up): the socket or client goes, a
 * half-received file goes, and the cron tries again in a second. */
static void link_down(const char *why)
{
    if (why)
        srv_log(LOG_WARNING, "Replication with MASTER %s:%d stopped: %s. Retrying in a second.",
                rs.host ? rs.host : "?", rs.port, why);
    bare_close();
    if (rs.link) {
        struct conn *c = rs.link;
        rs.stream_db = srv_dbunmap[c->db];
        rs.link = NULL;     /* srv_replica_conn_gone then knows it is ours, done */
        srv_close_async(c); /* freed between events: the loop's batch may name it */
    }
    if (rs.state == ST_CONNECTED)
        rs.down_ms = srv_mstime();
    if (rs.state != ST_NONE)
        rs.state = ST_CONNECT;
    rs.ack_pending = false;
}

/* ---- the handshake ---- */

static void send_port(void)
{
    char port[16];
    int64_t announce = kept_num("replica-announce-port");
    snprintf(port, sizeof port, "%d", announce ? (int)announce : srv.conf.port);
    const char *argv[] = {"REPLCONF", "listening-port", port};
    if (bare_send(argv, 3))
        rs.hs = HS_PORT;
}

static void send_capa(void)
{
    const char *argv[] = {"REPLCONF", "capa", "eof", "capa", "psync2"};
    if (bare_send(argv, 5))
        rs.hs = HS_CAPA;
}

static void send_psync(void)
{
    char off[32];
    const char *argv[] = {"PSYNC", "?", "-1", "FAILOVER"};
    if (rs.synced || srv_repl_offset() > 0 || rs.failover) {
        snprintf(off, sizeof off, "%llu", (unsigned long long)srv_repl_offset() + 1);
        argv[1] = srv_repl_id();
        argv[2] = off;
        srv_log(LOG_NOTICE, "Trying a partial resynchronization (request %s:%s).", argv[1], off);
    } else {
        srv_log(LOG_NOTICE, "Partial resynchronization not possible (no cached master)");
    }
    if (bare_send(argv, rs.failover ? 4 : 3))
        rs.hs = HS_PSYNC;
}

/* The link becomes a client: what is left in rs.in is the stream's start. */
static void link_adopt(void)
{
    /* Decrypted bytes the session holds are the stream's too. */
    while (rs.ssl && srv_tls_pending(rs.ssl) && bare_read() > 0)
        ;
    if (rs.fd < 0)
        return; /* the link went down meanwhile */
    epoll_ctl(srv.epfd, EPOLL_CTL_DEL, rs.fd, NULL);
    int fd = rs.fd;
    SSL *ssl = rs.ssl;
    rs.fd = -1;
    rs.ssl = NULL;
    rs.state = ST_CONNECTED;
    rs.synced = true;
    rs.ack_ms = 0; /* the first ACK goes at once: a diskless primary waits for it */
    struct resp_buf pre = rs.in;
    resp_buf_init(&rs.in);
    rs.link = srv_conn_adopt(fd, CONN_MASTER | CONN_AUTHED);
    rs.link->ssl = ssl;
    rs.link->tls_ready = ssl != NULL;
    /* A partial resynchronization goes on in the database the stream had
     * selected (the primary sends no SELECT for it again); after a full
     * one the primary selects before its first command. */
    rs.link->db = srv_dbmap[rs.stream_db];
    srv_replica_cron(srv_mstime()); /* the ACK */
    srv_conn_feed(rs.link, resp_buf_data(&pre), resp_buf_used(&pre));
    resp_buf_free(&pre);
}

static bool starts(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

static void start_transfer(void)
{
    snprintf(rs.tmppath, sizeof rs.tmppath, "%s/temp-sync-%d.rdb", srv.conf.dir, (int)getpid());
    rs.tmpfd = open(rs.tmppath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (rs.tmpfd < 0) {
        char why[4400];
        snprintf(why, sizeof why, "cannot open %s for the RDB file: %s", rs.tmppath,
                 strerror(errno));
        rs.tmppath[0] = '\0';
        link_down(why);
        return;
    }
    rs.state = ST_TRANSFER;
    rs.size = -1;
    rs.got = 0;
}

/* One reply of the handshake, line. */
static void handshake_reply(const char *line)
{
    switch (rs.hs) {
    case HS_PONG:
        /* An error that means "authenticate first" is as good as PONG. */
        if (line[0] == '-' && !starts(line, "-NOAUTH") && !starts(line, "-NOPERM") &&
            !starts(line, "-ERR operation not permitted")) {
            char why[LINE_MAX_LEN + 64];
            snprintf(why, sizeof why, "error reply to PING from master: '%s'", line + 1);
            link_down(why);
            return;
        }
        srv_log(LOG_NOTICE, "Master replied to PING, replication can continue...");
        if (*kept_str("masterauth")) {
            const char *user = kept_str("masteruser");
            const char *argv[] = {"AUTH", user, kept_str("masterauth")};
            bool ok = *user ? bare_send(argv, 3) : bare_send((const char *[]){"AUTH", argv[2]}, 2);
            if (ok)
                rs.hs = HS_AUTH;
        } else {
            send_port();
        }
        return;
    case HS_AUTH:
        if (line[0] == '-') {
            char why[LINE_MAX_LEN + 64];
            snprintf(why, sizeof why, "unable to AUTH to MASTER: %s", line + 1);
            link_down(why);
            return;
        }
        send_port();
        return;
    case HS_PORT:
        if (line[0] == '-')
            srv_log(LOG_NOTICE,
                    "(Non critical) Master does not understand REPLCONF listening-port: %s",
                    line + 1);
        if (*kept_str("replica-announce-ip")) {
            const char *argv[] = {"REPLCONF", "ip-address", kept_str("replica-announce-ip")};
            if (bare_send(argv, 3))
                rs.hs = HS_IP;
        } else {
            send_capa();
        }
        return;
    case HS_IP:
        if (line[0] == '-')
            srv_log(LOG_NOTICE, "(Non critical) Master does not understand REPLCONF ip-address: %s",
                    line + 1);
        send_capa();
        return;
    case HS_CAPA:
        if (line[0] == '-')
            srv_log(LOG_NOTICE, "(Non critical) Master does not understand REPLCONF capa: %s",
                    line + 1);
        send_psync();
        return;
    case HS_PSYNC:
        if (!line[0])
            return;        /* a newline: the primary is alive, the answer still to come */
        if (rs.failover) { /* the target answered the hand-over */
            rs.failover = false;
            bool took = starts(line, "+FULLRESYNC") || starts(line, "+CONTINUE");
            srv_repl_failover_answered(took, line);
            if (!took)
                return; /* the failover is undone: this server leads again */
        }
        if (starts(line, "+FULLRESYNC")) {
            char id[64] = "";
            unsigned long long off = 0;
            if (sscanf(line, "+FULLRESYNC %63s %llu", id, &off) != 2 || strlen(id) != 40) {
                link_down("a +FULLRESYNC reply without a replication ID and offset");
                return;
            }
            memcpy(rs.fullid, id, 41);
            rs.fulloff = off;
            srv_log(LOG_NOTICE, "Full resync from master: %s:%llu", id, off);
            start_transfer();
        } else if (starts(line, "+CONTINUE")) {
            const char *id = line + strlen("+CONTINUE");
            while (*id == ' ')
                id++;
            if (strlen(id) == 40 && strcmp(id, srv_repl_id()) != 0) {
                srv_log(LOG_NOTICE, "Master replication ID changed to %s", id);
                srv_repl_continue_as(id);
            }
            srv_log(LOG_NOTICE, "Successful partial resynchronization with master.");
            srv_log(LOG_NOTICE,
                    "MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.");
            link_adopt();
        } else if (starts(line, "-NOMASTERLINK") || starts(line, "-LOADING")) {
            char why[LINE_MAX_LEN + 80];
            snprintf(why, sizeof why,
                     "master is currently unable to PSYNC but should be in the "
                     "future: %s",
                     line + 1);
            link_down(why);
        } else {
            char why[LINE_MAX_LEN + 64];
            snprintf(why, sizeof why, "unexpected reply to PSYNC from master: %s", line);
            link_down(why);
        }
        return;
    }
}

/* ---- the transfer and the load ---- */

/* Spare physical databases for the databases clients see: logical number
 * databases + l's, for each l. They exist only while twice databases fit
 * in the 256 the storage knows. */
static bool have_spares(void)
{
    return 2 * srv.conf.databases <= SRV_DBMAP_N;
}

/* Between two keys of a load into spare databases, every 20 ms: one
 * round of the loop's events, so clients are served the old data (their
 * writes are refused with LOADING, cmd.c) while the new goes in. The
 * machinery is a busy script's (srv_events_while_busy): the link's own
 * socket is held (the placeholder is the "caller"), replies waiting from
 * before the load stay held until it ends, and a client freed meanwhile
 * is freed only after the loop's current batch of events. */
static void load_tick(void *arg)
{
    (void)arg;
    uint64_t now = srv_mstime();
    if (now - rs.tick_ms < 20)
        return;
    rs.tick_ms = now;
    srv_events_while_busy(&bare);
}

bool srv_replica_loading(void)
{
    return rs.loading;
}

/* Loads the received file and switches to it. 0, or -1 with the old data
 * as it was. */
/* dir/repl-loading exists while a load into the spare databases is under
 * way: a run killed meanwhile leaves keys there (the new data, or the old
 * after the switch) that no number reaches, and the next start drops
 * them (srv_replica_start). */
static void loading_mark(bool on)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/repl-loading", srv.conf.dir);
    if (!on) {
        /* Only once the journal has the range deletes that emptied the
         * spares: a crash before that replays the keys without them. */
        (void)stor_sync(srv.stor);
        unlink(path);
        return;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

/* At start: drops what a killed load left in the spare databases. */
static void drop_killed_load(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/repl-loading", srv.conf.dir);
    if (access(path, F_OK) != 0)
        return;
    int nd = srv.conf.databases;
    for (int l = 0; have_spares() && l < nd; l++)
        db_flushdb(srv.db, srv_dbmap[nd + l]);
    srv_log(LOG_NOTICE, "A full sync's load was cut short by the last run: what it left in the "
                        "spare databases is dropped");
    unlink(path);
}

static int full_load(void)
{
    int nd = srv.conf.databases;
    uint8_t target[SRV_DBMAP_N];
    bool spares = have_spares();
    uint64_t t0 = srv_mstime();
    char why[1024];
    for (int l = 0; l < nd; l++) {
        target[l] = spares ? srv_dbmap[nd + l] : srv_dbmap[l];
        /* Empty first: an aborted load may have left keys there. */
        int rc = spares ? db_flushdb(srv.db, target[l]) : 0;
        if (rc) {
            srv_log(LOG_WARNING, "MASTER <-> REPLICA sync: cannot empty a spare database: %s %s",
                    kv_strerror(rc), stor_errmsg());
            return -1;
        }
    }
    if (!spares) {
        /* No room beside the data (databases above 128): the old data
         * goes first, and RESP clients, held while the load runs, never
         * see the gap; libshmkv readers may. */
        srv_log(LOG_WARNING,
                "MASTER <-> REPLICA sync: databases %d leaves no spare databases: "
                "flushing the old data before loading",
                nd);
        db_flushall(srv.db);
    }
    uint64_t keys = 0;
    struct db_vec libs;
    db_vec_init(&libs);
    srv_log(LOG_NOTICE, "MASTER <-> REPLICA sync: Loading DB in memory");
    if (spares)
        loading_mark(true);
    /* Into spare databases, clients go on reading the old data while the
     * keys go in (load_tick); without spares they wait. */
    rs.loading = true;
    rs.tick_ms = srv_mstime();
    int lrc = srv_rdb_load_into(rs.tmppath, target, &libs, spares ? load_tick : NULL, NULL, &keys,
                                why, sizeof why);
    rs.loading = false;
    if (spares) {
        bare.flags &= ~(uint32_t)CONN_HELD;
        srv_busy_end();
    }
    if (lrc) {
        srv_log(LOG_WARNING,
                "Failed trying to load the MASTER synchronization DB from disk: %s. The old data "
                "stays.",
                why);
        for (int l = 0; spares && l < nd; l++)
            db_flushdb(srv.db, target[l]);
        if (spares)
            loading_mark(false);
        db_vec_destroy(&libs);
        return -1;
    }
    if (spares) {
        uint8_t map[SRV_DBMAP_N];
        memcpy(map, srv_dbmap, sizeof map);
        for (int l = 0; l < nd; l++) {
            map[l] = srv_dbmap[nd + l];
            map[nd + l] = srv_dbmap[l];
        }
        int rc = srv_dbmap_set(srv.conf.dir, map);
        if (rc) {
            srv_log(LOG_WARNING,
                    "MASTER <-> REPLICA sync: cannot save the database map: %s. The old data "
                    "stays.",
                    strerror(-rc));
            for (int l = 0; l < nd; l++)
                db_flushdb(srv.db, target[l]);
            loading_mark(false);
            db_vec_destroy(&libs);
            return -1;
        }
        srv_cache_dbmap(); /* libshmkv readers switch with the map, all at once */
        for (int l = 0; l < nd; l++) {
            cmd_swapped(map[nd + l], map[l]); /* clients stay on their numbers */
            db_flushdb(srv.db, map[nd + l]);  /* the old data: a range delete */
        }
        loading_mark(false);
    }
    /* FUNCTION's libraries: the primary's join ours (one of a name we
     * have already is left as ours, and the log says so). */
    for (size_t i = 0; i < libs.n; i++) {
        char err[1024];
        if (scr_fn_add(db_vec_ptr(&libs, i), db_vec_len(&libs, i), err, sizeof err))
            srv_log(LOG_WARNING, "MASTER <-> REPLICA sync: a library of the master's: %s", err);
    }
    db_vec_destroy(&libs);
    srv_log(LOG_NOTICE, "MASTER <-> REPLICA sync: Finished with success (%llu keys, %llu ms)",
            (unsigned long long)keys, (unsigned long long)(srv_mstime() - t0));
    return 0;
}

/* The file is whole: load it, then the link carries the stream. */
static void transfer_done(void)
{
    /* No fsync: the file is read back at once, from the page cache, and
     * a crash before the switch only means another full sync. Syncing
     * gigabytes would hold the loop for nothing. */
    if (close(rs.tmpfd) != 0) {
        rs.tmpfd = -1;
        link_down("cannot write the RDB file to disk");
        return;
    }
    rs.tmpfd = -1;
    srv_log(LOG_NOTICE, "MASTER <-> REPLICA sync: received %llu bytes of RDB",
            (unsigned long long)rs.got);
    if (full_load() != 0) {
        link_down("the RDB file could not be loaded");
        return;
    }
    unlink(rs.tmppath);
    rs.tmppath[0] = '\0';
    rs.stream_db = 0;
    srv_repl_adopt(rs.fullid, rs.fulloff);
    link_adopt();
}

/* Appends p[0, n) of the file; in the EOF-marked form, watches for the
 * mark at the end of what came. */
static bool transfer_write(const char *p, size_t n)
{
    if (!n)
        return true;
    if (write(rs.tmpfd, p, n) != (ssize_t)n) {
        char why[128];
        snprintf(why, sizeof why, "writing the RDB file: %s", strerror(errno));
        link_down(why);
        return false;
    }
    if (rs.size == -2) { /* the last 40 bytes seen, for the mark */
        if (n >= 40) {
            memcpy(rs.last, p + n - 40, 40);
        } else {
            memmove(rs.last, rs.last + n, 40 - n);
            memcpy(rs.last + 40 - n, p, n);
        }
    }
    rs.got += n;
    return true;
}

static void transfer_step(void)
{
    if (rs.size == -1) { /* the header: "$len" or "$EOF:mark", after keep-alive newlines */
        while (resp_buf_used(&rs.in) && resp_buf_data(&rs.in)[0] == '\n')
            resp_buf_consume(&rs.in, 1);
        char line[LINE_MAX_LEN];
        if (!take_line(line, sizeof line))
            return;
        if (line[0] == '-') {
            char why[LINE_MAX_LEN + 64];
            snprintf(why, sizeof why, "MASTER aborted replication with an error: %s", line + 1);
            link_down(why);
            return;
        }
        int64_t len;
        if (starts(line, "$EOF:") && strlen(line) == 5 + 40) {
            memcpy(rs.mark, line + 5, 40);
            rs.size = -2;
            srv_log(LOG_NOTICE, "MASTER <-> REPLICA sync: receiving streamed RDB from master "
                                "with EOF to disk");
        } else if (line[0] == '$' && !kv_str2ll(line + 1, strlen(line + 1), &len) && len >= 0) {
            rs.size = len;
            srv_log(LOG_NOTICE, "MASTER <-> REPLICA sync: receiving %lld bytes from master to disk",
                    (long long)len);
        } else {
            char why[LINE_MAX_LEN + 64];
            snprintf(why, sizeof why, "bad protocol from MASTER, the first byte is not '$': %s",
                     line);
            link_down(why);
            return;
        }
    }
    /* What the buffer holds of the file; with a length, what follows it
     * is the stream's start and stays. */
    size_t have = resp_buf_used(&rs.in);
    if (rs.size >= 0 && (uint64_t)have > (uint64_t)rs.size - rs.got)
        have = (size_t)((uint64_t)rs.size - rs.got);
    if (!transfer_write(resp_buf_data(&rs.in), have))
        return;
    resp_buf_consume(&rs.in, have);
    bool done =
        rs.size >= 0 ? rs.got == (uint64_t)rs.size : rs.got >= 40 && !memcmp(rs.last, rs.mark, 40);
    if (!done)
        return;
    if (rs.size == -2) {
        rs.got -= 40;
        if (ftruncate(rs.tmpfd, (off_t)rs.got) != 0) {
            link_down("cannot cut the EOF mark off the RDB file");
            return;
        }
    }
    transfer_done();
}

/* ---- the loop's events ---- */

/* The connection is up (and its TLS handshake done): the replication
 * handshake starts. */
static void handshake_start(void)
{
    bare_watch(EPOLLIN);
    rs.state = ST_HANDSHAKE;
    const char *argv[] = {"PING"};
    if (bare_send(argv, 1))
        rs.hs = HS_PONG;
}

/* One step of the TLS handshake with the primary. */
static void tls_step(void)
{
    bool want_write;
    char err[512];
    int r = srv_tls_handshake(rs.ssl, &want_write, err, sizeof err);
    if (r < 0) {
        char why[600];
        snprintf(why, sizeof why, "the TLS handshake with the MASTER failed: %s", err);
        link_down(why);
    } else if (r == 0) {
        bare_watch(want_write ? EPOLLOUT : EPOLLIN);
    } else {
        rs.io_ms = srv_mstime();
        handshake_start();
    }
}

static void bare_input(void);

bool srv_replica_event(struct conn *c, uint32_t events)
{
    if (c != &bare)
        return false;
    if (rs.fd < 0)
        return true; /* a late event of a socket already closed */
    if (rs.state == ST_CONNECTING) {
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(rs.fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
            err = errno;
        if (err || (events & (EPOLLERR | EPOLLHUP))) {
            char why[128];
            snprintf(why, sizeof why, "error condition on socket for SYNC: %s",
                     strerror(err ? err : ECONNREFUSED));
            link_down(why);
            return true;
        }
        srv_log(LOG_NOTICE, "Non blocking connect for SYNC fired the event.");
        if (srv_conf_kept_num(&srv.conf, "tls-replication")) {
            if (!(rs.ssl = srv_tls_connect(rs.fd))) {
                link_down("TLS is not configured for the link (tls-cert-file, tls-key-file)");
                return true;
            }
            rs.state = ST_TLS;
            tls_step();
        } else {
            handshake_start();
        }
        return true;
    }
    if (rs.state == ST_TLS) {
        tls_step();
        return true;
    }
    /* Decrypted bytes a TLS record left in the session announce no socket
     * event: they are taken now. */
    do
        bare_input();
    while (rs.fd >= 0 && rs.ssl && srv_tls_pending(rs.ssl));
    return true;
}

/* What came on the bare socket after the connection is up. */
static void bare_input(void)
{
    if (rs.state == ST_TRANSFER && rs.size != -1) {
        /* Large reads while the file arrives; never past its end with a length. */
        size_t want = XFER_CHUNK;
        if (rs.size >= 0 && (uint64_t)rs.size - rs.got < want)
            want = (size_t)((uint64_t)rs.size - rs.got);
        static char chunk[XFER_CHUNK];
        ssize_t r = bare_io_read(chunk, want);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (r <= 0) {
            link_down(r == 0 ? "the MASTER closed the connection during the transfer"
                             : strerror(errno));
            return;
        }
        srv.stats.net_in += (uint64_t)r;
        rs.io_ms = srv_mstime();
        resp_buf_append(&rs.in, chunk, (size_t)r);
        transfer_step();
        return;
    }
    if (bare_read() <= 0)
        return;
    while (rs.fd >= 0 && resp_buf_used(&rs.in)) {
        if (rs.state == ST_TRANSFER) {
            transfer_step();
            break;
        }
        char line[LINE_MAX_LEN];
        if (!take_line(line, sizeof line))
            break;
        handshake_reply(line);
    }
}

/* ---- the stream ---- */

static void send_ack(struct conn *c, uint64_t off)
{
    char num[32];
    int n = snprintf(num, sizeof num, "%llu", (unsigned long long)off);
    resp_buf_printf(&c->out, "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$%d\r\n%s\r\n", n, num);
    conn_want_write(c);
}

void srv_replica_applied(struct conn *c, size_t out_before, const char *p, size_t n)
{
    if (resp_buf_used(&c->out) > out_before)
        c->out.len = c->out.off + out_before; /* a primary gets no replies */
    srv_repl_feed_raw(p, n);
    if (rs.ack_pending) {
        rs.ack_pending = false;
        send_ack(c, rs.ack_off);
    }
}

void srv_replica_getack(struct conn *c)
{
    (void)c;
    rs.ack_pending = true;
    rs.ack_off = srv_repl_offset(); /* this command's bytes are not in it yet */
}

void srv_replica_conn_gone(struct conn *c)
{
    if (c != rs.link)
        return; /* a link this module already let go */
    rs.stream_db = srv_dbunmap[c->db];
    rs.link = NULL;
    srv_log(LOG_NOTICE, "Connection with master lost.");
    link_down(NULL);
}

void srv_replica_cron(uint64_t now_ms)
{
    uint64_t timeout_ms = (uint64_t)kept_num("repl-timeout") * 1000;
    switch (rs.state) {
    case ST_CONNECT:
        if (now_ms - rs.try_ms >= 1000)
            connect_now();
        break;
    case ST_CONNECTING:
    case ST_TLS:
    case ST_HANDSHAKE:
    case ST_TRANSFER:
        if (now_ms - rs.io_ms > timeout_ms)
            link_down(rs.state == ST_TRANSFER
                          ? "timeout receiving bulk data from MASTER (repl-timeout)"
                          : "timeout connecting to the MASTER (repl-timeout)");
        break;
    case ST_CONNECTED:
        if (now_ms - rs.link->last_ms > timeout_ms) {
            link_down("MASTER timeout: no data nor PING received (repl-timeout)");
            break;
        }
        if (now_ms - rs.ack_ms >= 1000) {
            rs.ack_ms = now_ms;
            send_ack(rs.link, srv_repl_offset());
        }
        break;
    }
}

/* ---- REPLICAOF ---- */

/* Follows host:port from now on (REPLICAOF host port, the directive). */
static void set_master(const char *host, int port)
{
    bool was = rs.state != ST_NONE;
    if (was)
        link_down(NULL);
    else
        srv_repl_set_following(true);
    free(rs.host);
    rs.host = kv_xmemdup(host, strlen(host) + 1);
    rs.port = port;
    srv_conf_set_replicaof(&srv.conf, host, port);
    rs.state = ST_CONNECT;
    connect_now();
}

/* REPLICAOF NO ONE: the link goes, the data stays, and the daemon takes a
 * new history of its own (srv_repl_promote). */
static void unset_master(void);

void srv_replica_failover_to(const char *host, int port)
{
    set_master(host, port);
    rs.failover = true;
}

void srv_replica_unfollow(void)
{
    if (rs.state != ST_NONE)
        unset_master();
}

static void unset_master(void)
{
    rs.failover = false;
    link_down(NULL);
    rs.state = ST_NONE;
    rs.down_ms = 0;
    free(rs.host);
    rs.host = NULL;
    srv_repl_set_following(false);
    srv_repl_promote();
    srv_conf_set_replicaof(&srv.conf, NULL, 0);
}

/* REPLICAOF host port | NO ONE (and SLAVEOF, the same) */
void cmd_replicaof(struct conn *c)
{
    if (cmd_arg_is(c, 1, "no") && cmd_arg_is(c, 2, "one")) {
        if (rs.state != ST_NONE) {
            unset_master();
            srv_log(LOG_NOTICE, "MASTER MODE enabled (user request from 'id=%llu addr=%s')",
                    (unsigned long long)c->id, c->addr);
        }
        resp_simple(OUT(c), "OK");
        return;
    }
    if (c->flags & CONN_REPLICA) {
        resp_error(OUT(c), "ERR Command is not valid when client is a replica.");
        return;
    }
    int64_t port;
    if (kv_str2ll(c->argv[2].p, c->argv[2].n, &port) || port < 0 || port > 65535) {
        resp_error(OUT(c), "ERR Invalid master port");
        return;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(c->argv[1].n < 255 ? c->argv[1].n : 255),
             c->argv[1].p);
    if (rs.state != ST_NONE && !strcasecmp(host, rs.host) && port == rs.port) {
        srv_log(LOG_NOTICE, "REPLICAOF would result into synchronization with the master we are "
                            "already connected with. No operation performed.");
        resp_simple(OUT(c), "OK Already connected to specified master");
        return;
    }
    set_master(host, (int)port);
    srv_log(LOG_NOTICE, "REPLICAOF %s:%d enabled (user request from 'id=%llu addr=%s')", host,
            (int)port, (unsigned long long)c->id, c->addr);
    resp_simple(OUT(c), "OK");
}

void cmd_slaveof(struct conn *c)
{
    cmd_replicaof(c);
}

void srv_replica_start(void)
{
    resp_buf_init(&rs.in);
    drop_killed_load();
    const char *v = kept_str("replicaof");
    char host[256];
    int port;
    if (!*v || sscanf(v, "%255s %d", host, &port) != 2)
        return;
    set_master(host, port);
}

void srv_replica_stop(void)
{
    link_down(NULL);
    rs.state = ST_NONE;
    free(rs.host);
    rs.host = NULL;
    resp_buf_free(&rs.in);
}

/* ---- stale data ---- */

bool srv_replica_stale_ok(const char *name)
{
    /* Redis 7.0's commands and subcommands flagged "stale" that shmkvd
     * has: the connection's own state, transactions, pub/sub, the
     * server's introspection and configuration. */
    static const char *const ok[] = {
        "auth",         "command",     "debug",         "discard",     "echo",
        "eval",         "eval_ro",     "evalsha",       "evalsha_ro",  "exec",
        "failover",     "fcall",       "fcall_ro",      "hello",       "info",
        "lastsave",     "monitor",     "multi",         "psubscribe",  "publish",
        "punsubscribe", "quit",        "readonly",      "readwrite",   "replconf",
        "replicaof",    "reset",       "role",          "select",      "shutdown",
        "slaveof",      "spublish",    "ssubscribe",    "subscribe",   "sunsubscribe",
        "time",         "unsubscribe", "unwatch",       "watch",       "client|",
        "cluster|",     "command|",    "config|",       "latency|",    "slowlog|",
        "pubsub|",      "acl|",        "function|help", "memory|help", "module|help",
        "object|help",  "script|help", "script|load",   "xgroup|help", "xinfo|help",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t n = strlen(ok[i]);
        if (ok[i][n - 1] == '|' ? !strncmp(name, ok[i], n) : !strcmp(name, ok[i]))
            return true;
    }
    return false;
}

/* ---- INFO and ROLE ---- */

static const char *state_word(void)
{
    static const char *const w[] = {"none",      "connect", "connecting", "connecting",
                                    "handshake", "sync",    "connected"};
    return w[rs.state];
}

void srv_replica_info(struct resp_buf *b)
{
    if (rs.state == ST_NONE)
        return;
    uint64_t now = srv_mstime();
    long long off = rs.synced || srv_repl_offset() > 0 ? (long long)srv_repl_offset() : 1;
    long long read_off = off + (rs.link ? (long long)resp_buf_used(&rs.link->in) : 0);
    resp_buf_printf(b, "master_host:%s\r\n", rs.host);
    resp_buf_printf(b, "master_port:%d\r\n", rs.port);
    resp_buf_printf(b, "master_link_status:%s\r\n", rs.state == ST_CONNECTED ? "up" : "down");
    resp_buf_printf(b, "master_last_io_seconds_ago:%d\r\n",
                    rs.link ? (int)((now - rs.link->last_ms) / 1000) : -1);
    resp_buf_printf(b, "master_sync_in_progress:%d\r\n", rs.state == ST_TRANSFER);
    resp_buf_printf(b, "slave_read_repl_offset:%lld\r\n", read_off);
    resp_buf_printf(b, "slave_repl_offset:%lld\r\n", off);
    if (rs.state == ST_TRANSFER) {
        long long total = rs.size >= 0 ? (long long)rs.size : -1;
        resp_buf_printf(b, "master_sync_total_bytes:%lld\r\n", total);
        resp_buf_printf(b, "master_sync_read_bytes:%lld\r\n", (long long)rs.got);
        resp_buf_printf(b, "master_sync_left_bytes:%lld\r\n", total - (long long)rs.got);
        resp_buf_printf(b, "master_sync_perc:%.2f\r\n",
                        total > 0 ? (double)rs.got * 100 / (double)total : 0.0);
        resp_buf_printf(b, "master_sync_last_io_seconds_ago:%d\r\n",
                        (int)((now - rs.io_ms) / 1000));
    }
    if (rs.state != ST_CONNECTED)
        resp_buf_printf(b, "master_link_down_since_seconds:%lld\r\n",
                        rs.down_ms ? (long long)((now - rs.down_ms) / 1000) : -1LL);
    resp_buf_printf(b, "slave_priority:%lld\r\n", (long long)kept_num("replica-priority"));
    resp_buf_printf(b, "slave_read_only:%d\r\n", kept_num("replica-read-only") ? 1 : 0);
    resp_buf_printf(b, "replica_announced:%d\r\n", kept_num("replica-announced") ? 1 : 0);
}

void srv_replica_role(struct conn *c)
{
    resp_array(OUT(c), 5);
    resp_bulk_cstr(OUT(c), "slave");
    resp_bulk_cstr(OUT(c), rs.host);
    resp_int(OUT(c), rs.port);
    resp_bulk_cstr(OUT(c), state_word());
    resp_int(OUT(c), rs.link ? (int64_t)srv_repl_offset() : -1);
}
