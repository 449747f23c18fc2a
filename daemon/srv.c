/*
 * srv — the event loop, listeners, clients, logging, SLOWLOG, cursors and
 * the periodic work (idle timeouts, blocked-client deadlines, active
 * expiry). See srv.h.
 */
#include "srv.h"
#include "srv_lat.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#include "acl.h"
#include "srv_net.h"
#include "srv_tls.h"
#include "cmd.h"
#include "shmc_w.h"
#include "srv_cache.h"
#include "srv_io.h"
#include "srv_conf.h"
#include "srv_os.h"
#include "scr.h"
#include "srv_rdb.h"
#include "srv_repl.h"
#include "srv_replica.h"
#include "kv_mem.h"

struct srv srv;
const char *srv_import_path;

#define READ_CHUNK (16 * 1024)
#define READ_BULK_MAX (64u * 1024 * 1024) /* the most one read takes */
#define BUF_KEEP_MAX (1024u * 1024)       /* larger query or reply buffers go back once empty */
#define CURSOR_SLOTS 4096
#define EXPIRE_BUDGET 100 /* expiry index entries per record set of active expiry */

/* ---- time and logging ---- */

uint64_t srv_mstime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void srv_log(int level, const char *fmt, ...)
{
    if (level < srv.conf.loglevel)
        return;
    FILE *f = stdout;
    if (srv.conf.logfile && !(f = fopen(srv.conf.logfile, "a")))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char when[64];
    size_t n = strftime(when, sizeof when, "%d %b %Y %H:%M:%S", &tm);
    snprintf(when + n, sizeof when - n, ".%03ld", ts.tv_nsec / 1000000);
    static const char marks[] = ".-*#";
    /* The role, as Redis marks it: M a primary, S a replica. */
    fprintf(f, "%d:%c %s %c %s\n", (int)getpid(), srv_replica_following() ? 'S' : 'M', when,
            marks[level & 3], msg);
    if (f == stdout)
        fflush(f);
    else
        fclose(f);
}

/* ---- SLOWLOG ---- */

#define SLOWLOG_ARGS 32
#define SLOWLOG_ARGLEN 128

void srv_slowlog_push(const struct conn *c, uint64_t time_s, uint64_t us, uint64_t redact)
{
    size_t max = srv.slowlog_cap;
    if (max == 0)
        return;
    if (!srv.slowlog) {
        srv.slowlog = kv_xmalloc(max * sizeof *srv.slowlog);
        memset(srv.slowlog, 0, max * sizeof *srv.slowlog);
    }
    /* The ring holds max entries, newest at slowlog_head - 1. */
    struct srv_slowlog *e = &srv.slowlog[srv.slowlog_head];
    for (size_t i = 0; i < e->argc; i++)
        free((void *)e->argv[i].p);
    free(e->argv);
    e->id = srv.slowlog_next_id++;
    e->time_s = time_s;
    e->micros = us;
    e->argc = c->argc > SLOWLOG_ARGS ? SLOWLOG_ARGS : c->argc;
    e->argv = kv_xmalloc(e->argc * sizeof *e->argv);
    for (size_t i = 0; i < e->argc; i++) {
        char buf[SLOWLOG_ARGLEN + 64];
        size_t n;
        if (i == SLOWLOG_ARGS - 1 && c->argc > SLOWLOG_ARGS) {
            n = (size_t)snprintf(buf, sizeof buf, "... (%zu more arguments)",
                                 c->argc - SLOWLOG_ARGS + 1);
        } else if (redact >> i & 1) {
            n = (size_t)snprintf(buf, sizeof buf, "(redacted)");
        } else if (c->argv[i].n > SLOWLOG_ARGLEN) {
            memcpy(buf, c->argv[i].p, SLOWLOG_ARGLEN);
            n = SLOWLOG_ARGLEN + (size_t)snprintf(buf + SLOWLOG_ARGLEN, 64, "... (%zu more bytes)",
                                                  c->argv[i].n - SLOWLOG_ARGLEN);
        } else {
            n = c->argv[i].n;
            memcpy(buf, c->argv[i].p, n);
        }
        e->argv[i].p = kv_xmemdup(buf, n);
        e->argv[i].n = n;
    }
    snprintf(e->addr, sizeof e->addr, "%s", c->addr);
    snprintf(e->name, sizeof e->name, "%s", c->name);
    srv.slowlog_head = (srv.slowlog_head + 1) % max;
    if (srv.slowlog_n < max)
        srv.slowlog_n++;
}

const struct srv_slowlog *srv_slowlog_at(size_t i)
{
    size_t max = srv.slowlog_cap;
    return &srv.slowlog[(srv.slowlog_head + max - 1 - i) % max];
}

void srv_slowlog_reset(void)
{
    for (size_t i = 0; srv.slowlog && i < srv.slowlog_cap; i++) {
        for (size_t j = 0; j < srv.slowlog[i].argc; j++)
            free((void *)srv.slowlog[i].argv[j].p);
        free(srv.slowlog[i].argv);
    }
    free(srv.slowlog);
    srv.slowlog = NULL;
    srv.slowlog_n = srv.slowlog_head = 0;
}

/* ---- SCAN cursors ---- */

uint64_t srv_cursor_save(const char *key, size_t klen)
{
    if (!srv.cursors) {
        srv.cursors = kv_xmalloc(CURSOR_SLOTS * sizeof *srv.cursors);
        memset(srv.cursors, 0, CURSOR_SLOTS * sizeof *srv.cursors);
    }
    uint64_t id = ++srv.cursor_next;
    struct srv_cursor *e = &srv.cursors[id % CURSOR_SLOTS];
    free(e->key);
    e->id = id;
    e->key = kv_xmemdup(key, klen);
    e->klen = klen;
    return id;
}

int srv_cursor_find(uint64_t id, const char **key, size_t *klen)
{
    *key = NULL;
    *klen = 0;
    if (id == 0)
        return 0;
    struct srv_cursor *e = srv.cursors ? &srv.cursors[id % CURSOR_SLOTS] : NULL;
    if (!e || e->id != id)
        return -1; /* forgotten: the scan starts over, which SCAN's contract allows */
    *key = e->key;
    *klen = e->klen;
    return 0;
}

/* ---- clients ---- */

/* Watches c for output too, or not; a system call only on a change (this
 * runs after every reply). */
static void ev_set(struct conn *c, bool want_out)
{
    if (c->out_armed == want_out)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(srv.epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->out_armed = want_out;
}

/* The users of the configuration (user lines, or aclfile; not both, as
 * Redis refuses): 0, or -1 after logging why. */
static int acl_configure(void)
{
    const char *file = srv_conf_kept(&srv.conf, "aclfile");
    char err[2048];
    if (file && *file && srv.conf.nusers) {
        srv_log(LOG_WARNING,
                "Configuring Redis with users defined in redis.conf and at the same setting an "
                "ACL file path is invalid. This setup is very likely to lead to configuration "
                "errors and security holes, please define either an ACL file or declare users "
                "directly in your redis.conf, but not both.");
        return -1;
    }
    if (acl_apply_lines(srv.conf.users, srv.conf.nuser_words, srv.conf.nusers, err, sizeof err)) {
        srv_log(LOG_WARNING, "%s", err);
        return -1;
    }
    if (file && *file && acl_load_file(file, NULL, NULL, err, sizeof err)) {
        srv_log(LOG_WARNING, "Aborting Redis startup because of ACL errors: %s", err);
        return -1;
    }
    return 0;
}

struct conn *srv_conn_adopt(int fd, uint32_t flags)
{
    struct conn *c = kv_xmalloc(sizeof *c);
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->id = ++srv.next_id;
    c->db = srv_dbmap[0];
    c->proto = 2;
    c->flags = flags;
    c->user = (flags & CONN_MASTER) ? NULL : acl_default();
    c->ctime_ms = c->last_ms = srv_mstime();
    resp_buf_init(&c->in);
    resp_buf_init(&c->out);
    resp_req_init(&c->req);
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    bool unix_sock = flags & CONN_UNIX;
    if (getpeername(fd, (struct sockaddr *)&sa, &sl) == 0)
        srv_sockaddr_str(&sa, c->addr, sizeof c->addr, unix_sock);
    sl = sizeof sa;
    if (getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
        srv_sockaddr_str(&sa, c->laddr, sizeof c->laddr, unix_sock);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(srv.epfd, EPOLL_CTL_ADD, fd, &ev);
    c->next = srv.clients;
    if (srv.clients)
        srv.clients->prev = c;
    srv.clients = c;
    srv.nclients++;
    srv.stats.connections++;
    return c;
}

static int busy_depth; /* >0: srv_events_while_busy is handling events */

/* Clients whose replies wait to be written at the end of the iteration. */
static struct conn **pending;
static size_t npending, pendingcap;
/* TLS clients with decrypted input still in their session, which no
 * socket event announces: the loop reads them again. */
static struct conn **tls_more;
static size_t ntls_more, tls_more_cap;

void conn_want_write(struct conn *c)
{
    if (c->flags & CONN_PENDING_WRITE)
        return;
    c->flags |= CONN_PENDING_WRITE;
    if (npending == pendingcap) {
        pendingcap = pendingcap ? pendingcap * 2 : 64;
        pending = kv_xrealloc(pending, pendingcap * sizeof *pending);
    }
    pending[npending++] = c;
}

/* Clients whose command waits for CLIENT PAUSE to end, in pausing order;
 * and the list srv_unpause() is running through. */
static struct conn **paused, **unpausing;
static size_t npaused, pausedcap, unpausing_n;

void srv_postpone(struct conn *c)
{
    c->flags |= CONN_PAUSED;
    if (npaused == pausedcap) {
        pausedcap = pausedcap ? pausedcap * 2 : 16;
        paused = kv_xrealloc(paused, pausedcap * sizeof *paused);
    }
    paused[npaused++] = c;
}

void srv_pause(int type, uint64_t end_ms)
{
    if (type > srv.pause_type)
        srv.pause_type = type;
    if (end_ms > srv.pause_end_ms)
        srv.pause_end_ms = end_ms;
}

static void conn_process(struct conn *c);

/* Clients unparked since the loop last looked: their pipelined commands
 * wait for no new bytes. NULL where a client was freed meanwhile. */
static struct conn **resumed;
static size_t nresumed, resumedcap;

void srv_resume_later(struct conn *c)
{
    if (nresumed == resumedcap) {
        resumedcap = resumedcap ? resumedcap * 2 : 16;
        resumed = kv_xrealloc(resumed, resumedcap * sizeof *resumed);
    }
    resumed[nresumed++] = c;
}

/* Runs what the unparked clients pipelined (which may unpark others). */
static void resume_unblocked(void)
{
    for (size_t i = 0; i < nresumed; i++) {
        struct conn *c = resumed[i];
        if (c && !(c->flags & (CONN_BLOCKED | CONN_PAUSED)))
            conn_process(c);
    }
    nresumed = 0;
}

void srv_unpause(void)
{
    srv.pause_type = 0;
    srv.pause_end_ms = 0;
}

/* After a pause: the held clients run their commands, in pausing order.
 * The loop calls it between events, never from inside a command.
 * conn_free() clears a freed client's place in the list walked here. */
static void resume_paused(void)
{
    struct conn **list = paused;
    size_t n = npaused;
    paused = NULL; /* a command run here may pause again: a new list */
    npaused = pausedcap = 0;
    unpausing = list;
    unpausing_n = n;
    for (size_t i = 0; i < n; i++) {
        struct conn *c = list[i];
        if (!c)
            continue;
        c->flags &= ~(uint32_t)CONN_PAUSED;
        conn_process(c);
    }
    unpausing = NULL;
    unpausing_n = 0;
    free(list);
}

/* Connections srv_close_async closed, to free between events. */
static struct conn **closing;
static size_t nclosing_slots, closingcap;

void srv_close_async(struct conn *c)
{
    if (c->flags & CONN_CLOSE_ASAP)
        return;
    c->flags |= CONN_CLOSE_ASAP;
    shutdown(c->fd, SHUT_RDWR);
    if (nclosing_slots == closingcap) {
        closingcap = closingcap ? 2 * closingcap : 16;
        closing = kv_xrealloc(closing, closingcap * sizeof *closing);
    }
    closing[nclosing_slots++] = c;
    srv.nclosing++;
}

/* Frees what srv_close_async closed: between events. */
static void free_closing(void)
{
    for (size_t i = 0; i < nclosing_slots; i++)
        if (closing[i])
            conn_free(closing[i]); /* clears its own slot */
    nclosing_slots = 0;
}

void conn_free(struct conn *c)
{
    if (busy_depth) {
        /* Inside a script, under the loop's own iteration, whose batch of
         * events may still name c: freed once that iteration is done. */
        srv_close_async(c);
        return;
    }
    if (c->flags & CONN_MASTER)
        srv_replica_conn_gone(c);
    cmd_conn_release(c);
    srv_repl_conn_gone(c);
    srv_cache_release(c);
    for (size_t i = 0; i < nclosing_slots; i++)
        if (closing[i] == c) {
            closing[i] = NULL;
            srv.nclosing--;
        }
    for (size_t i = 0; i < npaused; i++)
        if (paused[i] == c)
            paused[i] = NULL;
    for (size_t i = 0; i < unpausing_n && unpausing; i++)
        if (unpausing[i] == c)
            unpausing[i] = NULL;
    for (size_t i = 0; i < nresumed; i++)
        if (resumed[i] == c)
            resumed[i] = NULL;
    for (size_t i = 0; i < npending; i++)
        if (pending[i] == c)
            pending[i] = NULL;
    for (size_t i = 0; i < ntls_more; i++)
        if (tls_more[i] == c)
            tls_more[i] = NULL;
    srv_tls_close(c->ssl);
    c->ssl = NULL;
    epoll_ctl(srv.epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv.clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv.nclients--;
    resp_buf_free(&c->in);
    resp_buf_free(&c->out);
    resp_req_free(&c->req);
    free(c->argv);
    free(c);
}

static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The latency monitor's start time for a stage of the loop, 0 while the
 * monitor is off; lat_stage records the stage (from this or any other
 * monotonic start) if the monitor is on and it took the threshold. */
static uint64_t lat_start(void)
{
    return srv.conf.latency_monitor_threshold ? mono_us() : 0;
}

static void lat_stage(const char *event, uint64_t t0)
{
    if (!t0 || !srv.conf.latency_monitor_threshold)
        return;
    uint64_t ms = (mono_us() - t0) / 1000;
    if (ms >= (uint64_t)srv.conf.latency_monitor_threshold)
        srv_lat_add(event, (uint32_t)ms, (int64_t)(srv_mstime() / 1000));
}

/* Nothing is acknowledged before it is crash-safe: every reply leaves
 * through here, after the journal has the writes it answers. A journal that
 * cannot be written means no reply may go out: the daemon stops, and the
 * next start replays what the journal has. */
static void sync_before_reply(void)
{
    if (busy_depth)
        return; /* nothing written in a busy round may be acknowledged: HELD */
    uint64_t t0 = lat_start();
    int rc = stor_sync(srv.stor);
    if (rc) {
        srv_log(LOG_WARNING, "cannot write the journal: %s. Exiting without acknowledging.",
                kv_strerror(rc));
        exit(1);
    }
    lat_stage("journal-write", t0); /* Redis's aof-write; with always, the fsync too */
}

/* Writes the output buffer's first bytes with the shm cache's two memfds
 * attached (SHMKV.ATTACH), once. */
static ssize_t send_fds(struct conn *c)
{
    int fds[2] = {shmc_w_fd(srv.cache), shmc_w_hint_fd(srv.cache)};
    union {
        char buf[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = (void *)resp_buf_data(&c->out),
                        .iov_len = resp_buf_used(&c->out)};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(cm), fds, sizeof fds);
    ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL);
    if (w > 0)
        c->flags &= ~(uint32_t)CONN_PASS_FDS;
    return w;
}

/* After a write of c's output that sent done bytes and stopped on err (0:
 * all sent; EAGAIN: the socket is full; else the peer is gone): consumes
 * what went and settles c. Returns false if c was freed. */
static bool conn_wrote(struct conn *c, size_t done, int err)
{
    srv.stats.net_out += done;
    resp_buf_consume(&c->out, done);
    if (err == EAGAIN || err == EWOULDBLOCK) {
        ev_set(c, true);
        return true;
    }
    if (err) {
        conn_free(c);
        return false;
    }
    /* Everything sent: drop a large idle buffer, stop watching for output;
     * a soft output limit's clock starts again (srv_limit.c). */
    if (c->out.cap > BUF_KEEP_MAX)
        resp_buf_free(&c->out);
    /* A replica's stream kept during its sync counts too: its clock is
     * for srv_out_check, which sees that part. */
    if (!(c->flags & CONN_REPLICA))
        c->out_soft_ms = 0;
    ev_set(c, false);
    if (c->flags & (CONN_CLOSE_AFTER_REPLY | CONN_CLOSE_ASAP)) {
        conn_free(c);
        return false;
    }
    return true;
}

static bool tls_step(struct conn *c);
static void conn_read(struct conn *c);

/* Writes what it can; returns false if c was freed. */
static bool conn_flush(struct conn *c)
{
    if (c->ssl && !c->tls_ready)
        return tls_step(c) && conn_flush(c);
    if (c->ssl && c->tls_read_waits) {
        /* A read waited for this: it goes first (it may free c). */
        c->tls_read_waits = false;
        uint64_t id = c->id;
        conn_read(c);
        bool alive = false;
        for (struct conn *o = srv.clients; o && !alive; o = o->next)
            alive = o == c && o->id == id;
        if (!alive)
            return false;
    }
    if (resp_buf_used(&c->out))
        sync_before_reply();
    size_t done = 0;
    srv.stats.writes_processed += resp_buf_used(&c->out) > 0;
    while (resp_buf_used(&c->out) > done) {
        bool ww = false;
        ssize_t w =
            (c->flags & CONN_PASS_FDS) ? send_fds(c)
            : c->ssl                   ? srv_tls_write(c->ssl, resp_buf_data(&c->out) + done,
                                                       resp_buf_used(&c->out) - done, &ww)
                     : write(c->fd, resp_buf_data(&c->out) + done, resp_buf_used(&c->out) - done);
        if (w > 0) {
            if (c->flags & CONN_PASS_FDS) { /* sent alone: the rest goes by write */
                srv.stats.net_out += (uint64_t)w;
                resp_buf_consume(&c->out, (size_t)w);
            } else {
                done += (size_t)w;
            }
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && c->ssl && errno == EAGAIN && !ww) {
            /* The TLS write waits for input (a key update): conn_read
             * writes again once the socket is readable. */
            c->tls_write_waits = true;
            srv.stats.net_out += done;
            resp_buf_consume(&c->out, done);
            ev_set(c, false);
            return true;
        }
        return conn_wrote(c, done, w < 0 ? errno : EPIPE);
    }
    bool alive = conn_wrote(c, done, 0);
    if (alive && c->ssl && c->tls_read_waits)
        ev_set(c, true); /* the read still waits to write */
    return alive;
}

/* Moves c's TLS handshake on. True when it is done (c may read and
 * write); false when it waits (the loop watches what for) or failed (c is
 * freed). A client protected mode refuses gets Redis's text, encrypted,
 * and is closed after it. */
static bool tls_step(struct conn *c)
{
    bool ww = false;
    char err[300];
    int r = srv_tls_handshake(c->ssl, &ww, err, sizeof err);
    if (r == 0) {
        ev_set(c, ww);
        return false;
    }
    if (r < 0) {
        srv_log(LOG_VERBOSE, "Error accepting a client connection: %s (addr=%s)", err, c->addr);
        conn_free(c);
        return false;
    }
    c->tls_ready = true;
    ev_set(c, false);
    if (srv_protected_denied(c->fd)) {
        srv.stats.rejected++;
        resp_buf_append(&c->out, srv_protected_msg, strlen(srv_protected_msg));
        c->flags |= CONN_CLOSE_AFTER_REPLY;
        conn_flush(c);
        return false;
    }
    return true;
}

/* The iteration's replies, pending[0, npending): written by srv_io's
 * threads beside the loop when there are enough of them to share (Redis's
 * rule: at least two per thread), else one by one. The journal already has
 * what they acknowledge. */
static void flush_pending(void)
{
    static struct srv_io_job *jobs;
    static size_t *at, jobscap;
    int nt = srv_io_threads();
    size_t nj = 0;
    srv.stats.io_threads_active = 0;
    if (nt > 1 && npending >= 2 * (size_t)nt) {
        /* First what goes the usual way: it may free clients, which
         * clears their pending entries. */
        for (size_t i = 0; i < npending; i++) {
            struct conn *c = pending[i];
            if (c && ((c->flags & CONN_PASS_FDS) || c->ssl || !resp_buf_used(&c->out))) {
                pending[i] = NULL;
                c->flags &= ~(uint32_t)CONN_PENDING_WRITE;
                conn_flush(c);
            }
        }
        if (npending > jobscap) {
            jobscap = npending;
            jobs = kv_xrealloc(jobs, jobscap * sizeof *jobs);
            at = kv_xrealloc(at, jobscap * sizeof *at);
        }
        for (size_t i = 0; i < npending; i++) {
            struct conn *c = pending[i];
            if (!c)
                continue;
            jobs[nj] = (struct srv_io_job){
                .fd = c->fd, .buf = resp_buf_data(&c->out), .len = resp_buf_used(&c->out)};
            at[nj++] = i;
        }
        srv_io_write(jobs, nj);
        srv.stats.io_threads_active = 1;
        srv.stats.io_threaded_writes += nj;
        srv.stats.writes_processed += nj;
        /* Settling one client can free another (its pending entry is then
         * cleared) or add a reply to the list (after these: the loop below
         * writes it). */
        for (size_t j = 0; j < nj; j++) {
            struct conn *c = pending[at[j]];
            if (!c)
                continue;
            pending[at[j]] = NULL;
            c->flags &= ~(uint32_t)CONN_PENDING_WRITE;
            conn_wrote(c, jobs[j].done, jobs[j].err);
        }
    }
    for (size_t i = 0; i < npending; i++) {
        struct conn *c = pending[i];
        if (!c)
            continue;
        c->flags &= ~(uint32_t)CONN_PENDING_WRITE;
        conn_flush(c);
    }
    npending = 0;
}

/* ---- while a script is busy ---- */

static void conn_read(struct conn *c);

static bool held;           /* CONN_HELD is set where it should be */
static size_t held_pending; /* pending[0, held_pending): replies held until the script ends */

void srv_events_while_busy(struct conn *caller)
{
    if (busy_depth)
        return;
    busy_depth++;
    if (!held) {
        /* Replies already waiting may acknowledge writes of this iteration,
         * which reach the journal only after the script. */
        held_pending = npending;
        for (size_t i = 0; i < npending; i++)
            if (pending[i])
                pending[i]->flags |= CONN_HELD;
        caller->flags |= CONN_HELD;
        held = true;
    }
    struct epoll_event evs[64];
    int n = epoll_wait(srv.epfd, evs, 64, 0);
    for (int i = 0; i < n; i++) {
        uint64_t tag = evs[i].data.u64;
        if (tag & LISTENER_TAG) {
            int fd = (int)(tag & ~(LISTENER_TAG | TLS_TAG));
            srv_conn_accept(fd, fd == srv.unixfd, (tag & TLS_TAG) != 0);
            continue;
        }
        struct conn *c = evs[i].data.ptr;
        if (c->flags & (CONN_HELD | CONN_CLOSE_ASAP))
            continue;
        if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
            conn_read(c);
        else if (evs[i].events & EPOLLOUT)
            conn_flush(c);
    }
    for (size_t i = held_pending; i < npending; i++) {
        struct conn *c = pending[i];
        if (!c)
            continue;
        pending[i] = NULL;
        c->flags &= ~(uint32_t)CONN_PENDING_WRITE;
        conn_flush(c);
    }
    npending = held_pending;
    busy_depth--;
}

void srv_busy_end(void)
{
    for (struct conn *c = srv.clients; c; c = c->next)
        c->flags &= ~(uint32_t)CONN_HELD;
    held = false;
}

void srv_exit_busy(void)
{
    srv_log(LOG_WARNING, "Exiting while a script runs: none of its writes is kept");
    srv_os_notify("STOPPING=1");
    srv_cache_close(); /* local readers turn to the socket, which closes */
    if (srv.unixfd >= 0)
        unlink(srv.conf.unixsocket);
    if (srv.conf.pidfile)
        unlink(srv.conf.pidfile);
    srv_log(LOG_WARNING, "shmkvd is now ready to exit, bye bye...");
    _exit(0);
}

/* Pipelined commands behind the one about to run, p[0, n): start loading
 * their keys' index entries and records now, so that the cache misses
 * overlap this command's work (SET at pipeline 16: the misses were a third
 * of the loop's time outside system calls). Two steps, two commands
 * ahead: the next command's key gets its records loaded, found through
 * the index entries its step 1 loaded while the previous command ran, and
 * the one after gets step 1. Loading a record in the same breath as its
 * index entry would wait for the entry. */
static void prefetch_next(struct conn *c, const char *p, size_t n)
{
    const char *k;
    size_t kn, len = 0;
    bool had_step1 = c->prefetched;
    c->prefetched = false;
    if (!n)
        return;
    /* Step 1 carried what the next command's key hashes to, and where the
     * command after it starts: neither is computed twice. */
    if (had_step1) {
        db_prefetch2(srv.db, &c->pf);
        len = c->pf_len;
    }
    if (!len || len >= n) {
        struct db_pf now, next;
        if (!resp_peek_arg1(p, n, &k, &kn, &len))
            return;
        if (!had_step1) {
            /* The first command of a read had nothing ahead of it: both
             * steps now, for it and the next, so that at least their
             * misses overlap each other. */
            db_prefetch1(srv.db, (unsigned)c->db, k, kn, &next);
            if (c->argc >= 2) {
                db_prefetch1(srv.db, (unsigned)c->db, c->argv[1].p, c->argv[1].n, &now);
                db_prefetch2(srv.db, &now);
            }
            db_prefetch2(srv.db, &next);
        }
    }
    if (!len || len >= n)
        return;
    if (db_coll_hint(srv.db)) {
        /* A hash, set or sorted set is in use: its field's record too. */
        const char *f;
        size_t fn;
        int got = resp_peek_arg2(p + len, n - len, &k, &kn, &f, &fn, &c->pf_len);
        if (got == 2)
            db_prefetch1f(srv.db, (unsigned)c->db, k, kn, f, fn, &c->pf);
        else if (got == 1)
            db_prefetch1(srv.db, (unsigned)c->db, k, kn, &c->pf);
        c->prefetched = got > 0;
    } else if (resp_peek_arg1(p + len, n - len, &k, &kn, &c->pf_len)) {
        db_prefetch1(srv.db, (unsigned)c->db, k, kn, &c->pf);
        c->prefetched = true;
    }
}

/* Parses and runs every complete command in c's query buffer. */
static void conn_process(struct conn *c)
{
    while (!(c->flags & (CONN_BLOCKED | CONN_CLOSE_AFTER_REPLY | CONN_CLOSE_ASAP | CONN_PAUSED)) &&
           resp_buf_used(&c->in)) {
        const char *data = resp_buf_data(&c->in);
        const char *err = NULL;
        int st = resp_req_parse(&c->req, data, resp_buf_used(&c->in), &srv.limits, &err);
        if (st == RESP_AGAIN)
            break;
        if (st == RESP_PROTO) {
            if (!(c->flags & CONN_MASTER)) /* our primary gets no replies: it is closed */
                resp_error(&c->out, err);
            c->flags |= CONN_CLOSE_AFTER_REPLY;
            srv_log(LOG_VERBOSE, "Protocol error (%s) from client: id=%llu addr=%s", err,
                    (unsigned long long)c->id, c->addr);
            break;
        }
        if (st == RESP_DONE) {
            if (c->req.argc > c->argvcap) {
                c->argvcap = c->req.argc;
                c->argv = kv_xrealloc(c->argv, c->argvcap * sizeof *c->argv);
            }
            for (size_t i = 0; i < c->req.argc; i++)
                c->argv[i].p = resp_req_arg(&c->req, data, i, &c->argv[i].n);
            c->argc = c->req.argc;
            c->last_ms = srv.loop_ms; /* the idle clock needs no better than the loop's */
            prefetch_next(c, data + c->req.pos, resp_buf_used(&c->in) - c->req.pos);
            size_t before = resp_buf_used(&c->out);
            cmd_dispatch(c);
            if (c->flags & CONN_PAUSED) {
                /* The command waits in the query buffer; it is parsed
                 * again when the pause ends. */
                c->argc = 0;
                resp_req_reset(&c->req);
                break;
            }
            if (c->flags & CONN_MASTER) /* the stream: no replies, the bytes passed on */
                srv_replica_applied(c, before, data, c->req.pos);
            else
                cmd_reply_settle(c, before); /* reads c's argv */
            /* The whole reply judged too: one large write (a GET of a big
             * value) passes OUT()'s check, which looks before it. */
            if (resp_buf_used(&c->out) > srv.out_watch)
                srv_out_check(c, 0);
            cmd_serve_ready();
            c->argc = 0;
        }
        resp_buf_consume(&c->in, c->req.pos);
        resp_req_reset(&c->req);
    }
    /* Everything parsed: a large query buffer goes back, as a sent
     * reply's does (conn_wrote). A 100 MB SET used to leave its 256 MiB
     * with the client for the connection's life. */
    if (!resp_buf_used(&c->in) && c->in.cap > BUF_KEEP_MAX)
        resp_buf_free(&c->in);
    if (resp_buf_used(&c->out) || (c->flags & (CONN_CLOSE_AFTER_REPLY | CONN_CLOSE_ASAP)))
        conn_want_write(c);
}

/* One read per readiness event, as Redis reads: epoll is level-triggered,
 * so whatever is left is reported again next iteration, after every other
 * ready client had its turn. Reading a client dry first let one that
 * pipelines hundreds of large writes hold the loop for milliseconds while
 * everyone else's commands waited. A large bulk being received is read in
 * one go up to its length, so big values do not cost an iteration per
 * 16 KiB. */
static void conn_read(struct conn *c)
{
    size_t want = READ_CHUNK;
    if (c->req.bulk > (int64_t)READ_CHUNK)
        want = (size_t)c->req.bulk < READ_BULK_MAX ? (size_t)c->req.bulk + 2 : READ_BULK_MAX;
    if (c->ssl && !c->tls_ready && !tls_step(c))
        return;
    if (c->ssl && c->tls_write_waits) {
        c->tls_write_waits = false;
        if (!conn_flush(c))
            return;
    }
    char *dst = resp_buf_reserve(&c->in, want);
    ssize_t r;
    bool ww = false;
    srv.stats.reads_processed++;
    while ((r = c->ssl ? srv_tls_read(c->ssl, dst, want, &ww) : read(c->fd, dst, want)) < 0 &&
           errno == EINTR)
        ;
    if (r < 0 && ww) {
        c->tls_read_waits = true; /* conn_flush reads again */
        ev_set(c, true);
        return;
    }
    if (r > 0) {
        c->in.len += (size_t)r;
        srv.stats.net_in += (uint64_t)r;
        if (srv_in_check(c))
            return; /* past client-query-buffer-limit: closing */
    } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        conn_free(c); /* EOF or error: a client that vanishes mid-command loses nothing */
        return;
    }
    if (c->ssl && r > 0 && srv_tls_pending(c->ssl)) {
        if (ntls_more == tls_more_cap) {
            tls_more_cap = tls_more_cap ? 2 * tls_more_cap : 16;
            tls_more = kv_xrealloc(tls_more, tls_more_cap * sizeof *tls_more);
        }
        tls_more[ntls_more++] = c;
    }
    conn_process(c);
}

/* The TLS clients whose sessions hold input no event announces. */
static void read_tls_more(void)
{
    size_t n = ntls_more;
    if (n == 0)
        return;
    for (size_t i = 0; i < n; i++) {
        struct conn *c = tls_more[i];
        tls_more[i] = NULL;
        if (c && !(c->flags & CONN_CLOSE_ASAP))
            conn_read(c); /* may add to the list: after n */
    }
    memmove(tls_more, tls_more + n, (ntls_more - n) * sizeof *tls_more);
    ntls_more -= n;
}

void srv_conn_feed(struct conn *c, const char *p, size_t n)
{
    if (!n)
        return;
    resp_buf_append(&c->in, p, n);
    conn_process(c);
}

/* ---- periodic work ---- */

static void active_expire(void)
{
    /* Keys with an expiry are removed in the background, not only when read:
     * the expiry index gives the due ones in time order (nothing is read
     * while none is due). A mass expiry is spread over ticks: record sets
     * of EXPIRE_BUDGET keys, for at most a quarter of the tick period, as
     * Redis's slow cycle takes (it took 1/25: 300,000 keys due at once
     * then took about 55 s to go, where redis-server took 2 s). */
    uint64_t t0 = mono_us(), limit = 1000000 / (uint64_t)srv.conf.hz / 4;
    bool more = true;
    while (more && mono_us() - t0 < limit) {
        uint64_t reaped = 0;
        /* "expired" events */
        /* "expired" events, and replicas' DELs */
        db_track_events(srv.db, NULL, cmd_notify_on(SRV_NOTIFY_EXPIRED) ? &srv.expired : NULL);
        cmd_reaping(true);
        int rc = db_reap(srv.db, EXPIRE_BUDGET, &reaped, &more);
        cmd_reaping(false);
        db_track_events(srv.db, NULL, NULL);
        db_vec_clear(&srv.expired);
        srv_repl_flush_each(); /* one DEL a key, as Redis sends them */
        if (rc) {
            srv_log(LOG_WARNING, "active expiry: %s %s", kv_strerror(rc), stor_errmsg());
            return;
        }
        srv.stats.expired_keys += reaped;
    }
    srv.stats.expire_cap_reached += more;
    srv.stats.expire_cycle_us += mono_us() - t0;
    lat_stage("expire-cycle", t0);
}

/* Once the key filter holds mostly deleted keys, builds it again from the
 * live ones, in slices of at most 1/50 of the tick period (docs/storage.md,
 * "Key counts"): deleted keys never leave it, and a key space that keeps
 * turning over (keys with a TTL) would otherwise grow it without end. */
static void keyf_rebuild(void)
{
    uint64_t t0 = mono_us(), limit = 1000000 / (uint64_t)srv.conf.hz / 50;
    bool more = true;
    while (more && mono_us() - t0 < limit) {
        int rc = db_keyf_rebuild_step(srv.db, 1024, &more);
        if (rc) {
            srv_log(LOG_WARNING, "key filter rebuild: %s %s", kv_strerror(rc), stor_errmsg());
            return;
        }
    }
    lat_stage("keyf-rebuild", t0);
}

/* Refuses writes (MISCONF) before the disk, or the journal's tmpfs, is full
 * rather than after: what was accepted still has room (stor_disk_check). */
static void disk_check(void)
{
    uint64_t avail = 0;
    int d = stor_disk_check(srv.stor, (uint64_t)srv.conf.min_free_disk, &avail);
    if (d > 0) {
        char why[512] = "";
        stor_write_error(srv.stor, why, sizeof why);
        srv_log(LOG_WARNING,
                "Errors %s: write commands are refused (MISCONF) until there is 1.5 times the "
                "minimum (%s: %llu bytes free, min-free-disk %lld)",
                why, srv.conf.dir, (unsigned long long)avail, (long long)srv.conf.min_free_disk);
    } else if (d < 0) {
        srv_log(LOG_WARNING, "Free disk space for %s is %llu bytes: write commands accepted again",
                srv.conf.dir, (unsigned long long)avail);
    }
}

void srv_random_hex(char out[41])
{
    unsigned char r[20];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) /* does not fail for 20 bytes */
        memset(r, 0, sizeof r);
    for (size_t i = 0; i < sizeof r; i++)
        snprintf(out + 2 * i, 3, "%02x", r[i]);
}

/* jemalloc's bytes allocated, its statistics refreshed first. */
static size_t allocated_now(void)
{
    uint64_t epoch = 1;
    size_t v = 0, sz = sizeof epoch;
    mallctl("epoch", &epoch, &sz, &epoch, sz);
    sz = sizeof v;
    return mallctl("stats.allocated", &v, &sz, NULL, 0) == 0 ? v : 0;
}

double srv_inst_rate(int which)
{
    double sum = 0;
    for (int i = 0; i < SRV_INST_SAMPLES; i++)
        sum += srv.inst.rate[which][i];
    return sum / SRV_INST_SAMPLES;
}

/* One sample of each instantaneous rate every 100 ms, whatever hz is, and
 * the memory peak. */
static void sample_stats(uint64_t now)
{
    struct srv_inst *in = &srv.inst;
    if (now - in->last_ms < 100)
        return;
    uint64_t cur[SRV_INST_N] = {srv.stats.commands, srv.stats.net_in, srv.stats.net_out};
    for (int k = 0; k < SRV_INST_N; k++) {
        if (in->last_ms)
            in->rate[k][in->at] =
                (double)(cur[k] - in->last[k]) * 1000 / (double)(now - in->last_ms);
        in->last[k] = cur[k];
    }
    in->at = (in->at + 1) % SRV_INST_SAMPLES;
    in->last_ms = now;
    size_t used = allocated_now();
    if (used > srv.stats.used_memory_peak)
        srv.stats.used_memory_peak = used;
    srv.over_maxmemory = srv.conf.maxmemory && used > (uint64_t)srv.conf.maxmemory;
}

static void cron(void)
{
    uint64_t now = srv_mstime();
    sample_stats(now);
    for (struct conn *c = srv.clients, *next; c; c = next) {
        next = c->next;
        if (c->flags & CONN_CLOSE_ASAP) {
            conn_free(c);
            continue;
        }
        if (srv.conf.timeout &&
            !(c->flags & (CONN_BLOCKED | CONN_PAUSED | CONN_REPLICA | CONN_MASTER)) &&
            now - c->last_ms > (uint64_t)srv.conf.timeout * 1000) {
            srv_log(LOG_VERBOSE, "Closing idle client id=%llu", (unsigned long long)c->id);
            conn_free(c);
        }
    }
    cmd_blocked_cron(now);
    srv_repl_cron(now);
    srv_replica_cron(now);
    cmd_bgsave_cron();
    cmd_tracking_cron((size_t)srv.conf.tracking_table_max_keys);
    disk_check();
    /* A pause keeps the data as it is, as Redis's does; DEBUG
     * SET-ACTIVE-EXPIRE 0 leaves expired keys for reads to skip; so does
     * a replica, whose primary's DELs remove them. */
    if (!srv.pause_type && !srv.active_expire_off && !srv_replica_following())
        active_expire();
    /* The counts take in what the flusher resolved (no reads): the key
     * filter's rebuild and RANDOMKEY's empty-db test read them as they are. */
    (void)db_counts_settle(srv.db, false);
    keyf_rebuild();
}

/* ---- signals, configuration changes, shutdown ---- */

static void on_signal(int sig)
{
    (void)sig;
    srv.shutdown_asap = 1;
}

void srv_request_shutdown(int rc)
{
    srv.shutdown_asap = 1;
    srv.shutdown_rc = rc;
}

void srv_conf_changed(void)
{
    if (srv.db) {
        const struct srv_conf *k = &srv.conf;
        db_set_opts(
            srv.db,
            &(struct db_opts){
                .hash_coding = (uint8_t)k->hash_coding,
                .set_coding = (uint8_t)k->set_coding,
                .max_string = (uint64_t)k->proto_max_bulk_len,
                .hash_max_entries = (uint64_t)srv_conf_kept_num(k, "hash-max-listpack-entries"),
                .hash_max_value = (uint64_t)srv_conf_kept_num(k, "hash-max-listpack-value"),
                .set_max_intset = (uint64_t)srv_conf_kept_num(k, "set-max-intset-entries"),
                .zset_max_entries = (uint64_t)srv_conf_kept_num(k, "zset-max-listpack-entries"),
                .zset_max_value = (uint64_t)srv_conf_kept_num(k, "zset-max-listpack-value"),
                .list_max_size = srv_conf_kept_num(k, "list-max-listpack-size")});
    }
    srv.limits.max_bulk = srv.conf.proto_max_bulk_len;
    srv_limit_conf();
    if (srv.slowlog && (size_t)srv.conf.slowlog_max_len != srv.slowlog_cap)
        srv_slowlog_reset(); /* a resized ring starts empty */
    srv.slowlog_cap = (size_t)srv.conf.slowlog_max_len;
    acl_requirepass(srv.conf.requirepass);
    const char *pubsub = srv_conf_kept(&srv.conf, "acl-pubsub-default");
    acl_set_pubsub_default(pubsub && !strcmp(pubsub, "allchannels"));
    if (srv.stor)
        disk_check(); /* a new min-free-disk applies from the next command */
    /* A new maxmemory applies from the next command too. */
    size_t used = allocated_now();
    bool over = srv.conf.maxmemory && used > (uint64_t)srv.conf.maxmemory;
    if (over && !srv.over_maxmemory)
        srv_log(LOG_WARNING,
                "maxmemory %lld is below the memory in use (%zu bytes): commands that may grow "
                "what is stored are refused (OOM) until it is not",
                (long long)srv.conf.maxmemory, used);
    srv.over_maxmemory = over;
}

static void write_pidfile(void)
{
    if (!srv.conf.pidfile)
        return;
    FILE *f = fopen(srv.conf.pidfile, "w");
    if (!f) {
        srv_log(LOG_WARNING, "cannot write pidfile %s: %s", srv.conf.pidfile, strerror(errno));
        return;
    }
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
}

static void daemonize(void)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid > 0)
        _exit(0);
    setsid();
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2)
            close(fd);
    }
}

int srv_main(void)
{
    srv.epfd = srv.unixfd = -1; /* none yet: a start that fails closes nothing of another's */
    if (srv.conf.daemonize)
        daemonize(); /* before RocksDB starts its threads */
    /* jemalloc returns freed pages to the system only while something
     * allocates, unless its background thread does it: an idle daemon
     * kept the write-back overlay's peak resident (10M strings loaded:
     * 650 MiB of RSS for 35 MiB in use). Redis turns it on by default too. */
    bool bg = true;
    mallctl("background_thread", NULL, NULL, &bg, sizeof bg);
    srv.start_ms = srv_mstime();
    srv_lat_clock_init(true);
    srv.lastsave_s = srv.start_ms / 1000;
    srv.stats.last_save_ms = -1;
    srv_random_hex(srv.run_id);
    srv_repl_init();
    resp_error_hook = cmd_count_error; /* INFO errorstats */
    srv_idle_init(&srv.idle, SRV_IDLE_GEN_KEYS, srv.start_ms);
    srv.limits.max_args = INT32_MAX;
    srv.limits.max_inline = 64 * 1024;
    srv_conf_report_inert(&srv.conf);
    srv_os_supervise(srv.conf.supervised);
    int table_files;
    if (srv_os_fd_limit(&srv.conf.maxclients, &table_files))
        return 1;
    srv_os_notify("STATUS=Opening storage (a killed run's journal is replayed first)");

    struct stor_opts so = {.dir = srv.conf.dir,
                           .block_cache_bytes = (size_t)srv.conf.block_cache_bytes,
                           .write_buffer_bytes = (size_t)srv.conf.write_buffer_bytes,
                           .compaction_io_bytes = (size_t)srv.conf.compaction_io_bytes,
                           .fsync = srv.conf.appendfsync,
                           .writeback = srv.conf.writeback,
                           .flush_batch_bytes = (size_t)srv.conf.flush_batch_bytes,
                           .flush_interval_ms = srv.conf.flush_interval_ms,
                           .flusher_threads = srv.conf.flusher_threads,
                           .overlay_max_bytes = (size_t)srv.conf.overlay_max_bytes,
                           .journal_shm_dir = srv.conf.journal_shm_dir,
                           .max_open_files = table_files,
                           .compression = 1};
    const char *err = NULL;
    int rc = stor_open(&srv.stor, &so, &err);
    if (rc) {
        srv_log(LOG_WARNING, "cannot open storage in %s: %s", srv.conf.dir, err ? err : "");
        return 1;
    }
    struct stor_wb_stats w;
    stor_wb_stats(srv.stor, &w);
    if (w.replayed_sets) /* a killed run's journal, with write-back on or off now */
        srv_log(LOG_NOTICE, "write-back journal replayed: %llu record sets",
                (unsigned long long)w.replayed_sets);
    if (w.lost_sets)
        srv_log(LOG_WARNING,
                "WRITES LOST: the write-back journal in shared memory is gone (a reboot empties "
                "it) while RocksDB lacked at least %llu acknowledged record sets (up to sequence "
                "%llu). The data is as it was before them. INFO persistence: "
                "writeback_lost_sets.",
                (unsigned long long)w.lost_sets, (unsigned long long)w.lost_upto);
    if (srv.conf.writeback)
        srv_log(LOG_NOTICE, "write-back journal in %s (%s)", w.journal_dir,
                w.journal_shm ? "shared memory; RocksDB's WAL is the disk log" : "on disk");
    if (!srv.conf.unixsocket) {
        /* Local clients (libshmkv) reach the cache through a Unix socket:
         * by default one inside the data folder, private to this daemon. */
        char p[sizeof((struct sockaddr_un *)0)->sun_path];
        int n = snprintf(p, sizeof p, "%s/shmkv.sock", srv.conf.dir);
        if (n > 0 && (size_t)n < sizeof p)
            srv.conf.unixsocket = kv_xmemdup(p, (size_t)n + 1);
        else
            srv_log(LOG_NOTICE, "no Unix socket: %s/shmkv.sock is too long a path", srv.conf.dir);
    }
    char mapwhy[4400];
    if (srv_dbmap_load(srv.conf.dir, mapwhy, sizeof mapwhy) != 0) {
        srv_log(LOG_WARNING, "Cannot start: %s", mapwhy);
        goto fail;
    }
    uint64_t t_count = srv_mstime();
    int dbrc = db_create(&srv.db, srv.stor, NULL);
    if (dbrc) {
        srv_log(LOG_WARNING, "Cannot open the key space: %s %s", kv_strerror(dbrc), stor_errmsg());
        goto fail;
    }
    srv_repl_load(srv.conf.dir);
    srv_rdb_sweep(srv.conf.dir);
    struct db_info di;
    db_info(srv.db, &di);
    srv_log(LOG_NOTICE, "Key space open: %llu keys, counted %s in %llu ms",
            (unsigned long long)db_keycount_total(srv.db),
            di.counts_loaded ? "at the last shutdown" : "by a scan",
            (unsigned long long)(srv_mstime() - t_count));
    db_set_on_commit(srv.db, cmd_on_commit, NULL);
    db_vec_init(&srv.created);
    db_vec_init(&srv.expired);
    acl_init();
    srv_conf_changed(); /* requirepass first: a user default line replaces it, as in Redis */
    if (acl_configure() != 0)
        goto fail;
    if (srv_cache_open() != 0)
        goto fail;
    scr_init();
    if (srv_import_path) {
        /* shmkvd --import file: loads an RDB file into the empty data set,
         * then stops as SHUTDOWN would, without serving. */
        char why[512];
        srv.shutdown_rc = srv_rdb_import(srv_import_path, why, sizeof why) ? 1 : 0;
        if (srv.shutdown_rc)
            srv_log(LOG_WARNING, "Import of %s failed: %s", srv_import_path, why);
        goto stop;
    }

    srv.epfd = epoll_create1(EPOLL_CLOEXEC);
    /* port 0: no plain TCP listener (a TLS-only or socket-only server). */
    for (int i = 0; i < srv.conf.nbind && srv.conf.port > 0; i++) {
        int fd = srv_listen_tcp(srv.conf.bind[i], srv.conf.port);
        if (fd == -2)
            continue;
        if (fd < 0)
            goto fail;
        srv.lfd[srv.nlfd++] = fd;
        srv_add_listener(fd, false);
    }
    int tls_port = (int)srv_conf_kept_num(&srv.conf, "tls-port");
    char why[1024];
    if (srv_tls_wanted() && srv_tls_reconfigure(why, sizeof why)) {
        srv_log(LOG_WARNING, "Failed to configure TLS. Check logs for more info. %s", why);
        goto fail;
    }
    if (tls_port > 0) {
        for (int i = 0; i < srv.conf.nbind; i++) {
            int fd = srv_listen_tcp(srv.conf.bind[i], tls_port);
            if (fd == -2)
                continue;
            if (fd < 0)
                goto fail;
            srv.tlsfd[srv.ntlsfd++] = fd;
            srv_add_listener(fd, true);
        }
    }
    srv.unixfd = -1;
    if (srv.conf.unixsocket) {
        if ((srv.unixfd = srv_listen_unix(srv.conf.unixsocket, srv.conf.unixsocketperm)) < 0)
            goto fail;
        srv_add_listener(srv.unixfd, false);
    }
    if (srv.nlfd == 0 && srv.ntlsfd == 0 && srv.unixfd < 0) {
        srv_log(LOG_WARNING, "no address to listen on");
        goto fail;
    }
    int want_io = srv.conf.io_threads;
    srv.conf.io_threads = srv_io_start(want_io);
    if (srv.conf.io_threads < want_io)
        srv_log(LOG_WARNING, "cannot start the I/O threads: replies are written by the loop alone");
    write_pidfile();
    srv_os_signals(on_signal);
    srv_os_reserve_fd();
    srv_log(LOG_NOTICE, "shmkvd %s (Redis %s compatible) ready, port %d, data in %s", SHMKV_VERSION,
            SRV_VERSION, srv.conf.port, srv.conf.dir);
    srv.stats.used_memory_startup = srv.stats.used_memory_peak = allocated_now();
    srv_replica_start(); /* the replicaof directive */
    srv_os_ready();

    uint64_t next_cron = srv_mstime();
    struct epoll_event evs[256];
    while (!srv.shutdown_asap) {
        int period = 1000 / srv.conf.hz;
        /* Sleep until the next cron, or a parked client's timeout if that
         * comes first (BLPOP k 0.05 answers after 50 ms, not a tick); not at
         * all while replies wait to be sent (a timeout's nil). */
        uint64_t wake = next_cron, bd = cmd_blocked_deadline(), t0 = srv_mstime();
        if (bd && bd < wake)
            wake = bd;
        if (srv.pause_type && srv.pause_end_ms < wake)
            wake = srv.pause_end_ms;
        int n = epoll_wait(srv.epfd, evs, 256,
                           npending || nresumed || ntls_more || wake <= t0 ? 0 : (int)(wake - t0));
        srv.loop_ms = srv_mstime();
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag & LISTENER_TAG) {
                int fd = (int)(tag & ~(LISTENER_TAG | TLS_TAG));
                srv_conn_accept(fd, fd == srv.unixfd, (tag & TLS_TAG) != 0);
                continue;
            }
            struct conn *c = evs[i].data.ptr;
            if ((c->flags & CONN_MASTER) && srv_replica_event(c, evs[i].events))
                continue; /* the link to our primary, not yet a client */
            if ((c->flags & CONN_REPLICA) && srv_repl_event(c, evs[i].events))
                continue; /* a diskless sync's pipe */
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
                conn_read(c); /* may free c: it is not used after */
                continue;
            }
            if (evs[i].events & EPOLLOUT)
                conn_flush(c);
        }
        read_tls_more();
        if (srv.pause_type && srv_mstime() >= srv.pause_end_ms)
            srv_unpause();
        if (!srv.pause_type && npaused)
            resume_paused();
        resume_unblocked();
        cmd_serve_ready();
        cmd_tracking_broadcast(); /* BCAST clients: this iteration's changes at once */
        srv_repl_before_sleep();  /* WAIT: GETACK to the replicas, answers */
        sync_before_reply();      /* one journal write (and fsync) for the whole iteration */
        flush_pending();
        uint64_t hk = lat_start();
        stor_housekeep(srv.stor);
        lat_stage("writeback-housekeeping", hk);
        uint64_t now = srv_mstime();
        if (now >= next_cron) {
            cron();
            next_cron = now + (uint64_t)period;
        } else if (bd && now >= bd) {
            cmd_blocked_cron(now);
        }
        free_closing();
    }

stop:
    srv_os_notify("STOPPING=1");
    srv_cache_close(); /* local readers stop using the segment at once */
    rc = srv.shutdown_rc;
    if (rc == 0) {
        /* Every write is in: the next start can take the key counts from
         * a file instead of counting (db_save_counts). */
        int src = db_save_counts(srv.db);
        if (src < 0)
            srv_log(LOG_WARNING, "Key counts not saved (the next start counts): %s %s",
                    kv_strerror(src), stor_errmsg());
        else if (src > 0)
            srv_log(LOG_NOTICE, "Key counts not saved: the key filter is mostly deleted keys, "
                                "and the next start rebuilds it");
        int rrc = srv_repl_save(srv.conf.dir);
        if (rrc)
            srv_log(LOG_WARNING, "Replication offset not saved (replicas sync in full): %s",
                    strerror(-rrc));
    }
    srv_log(LOG_WARNING, "shmkvd is now ready to exit, bye bye...");
    goto out;
fail:
    rc = 1;
out:
    srv_io_stop();
    if (srv.epfd >= 0)
        srv_replica_stop();
    while (srv.clients)
        conn_free(srv.clients);
    for (int i = 0; i < srv.nlfd; i++)
        close(srv.lfd[i]);
    for (int i = 0; i < srv.ntlsfd; i++)
        close(srv.tlsfd[i]);
    srv_tls_free();
    free(tls_more);
    tls_more = NULL;
    ntls_more = tls_more_cap = 0;
    if (srv.unixfd >= 0) {
        close(srv.unixfd);
        unlink(srv.conf.unixsocket);
    }
    close(srv.epfd);
    srv_cache_destroy();
    cmd_bgsave_stop();
    scr_destroy();
    acl_destroy();
    cmd_acl_reset();
    db_free(srv.db);
    srv.db = NULL;
    db_vec_destroy(&srv.created);
    db_vec_destroy(&srv.expired);
    srv_repl_free();
    stor_close(srv.stor); /* every commit is in the WAL: closing is all it takes */
    srv_slowlog_reset();
    for (size_t i = 0; srv.cursors && i < CURSOR_SLOTS; i++)
        free(srv.cursors[i].key);
    free(srv.cursors);
    srv_idle_free(&srv.idle);
    free(pending);
    if (srv.conf.pidfile && rc == 0)
        unlink(srv.conf.pidfile);
    return rc;
}
