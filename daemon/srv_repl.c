/*
 * srv_repl — replication, the primary's side (srv_repl.h).
 *
 * The offset counts every byte of stream ever made under the current
 * history; the backlog is a ring holding its last repl-backlog-size
 * bytes, so byte number o (offsets count from 1, as Redis's do) is in it
 * while first <= o <= offset, first = offset - histlen + 1. A replica
 * asking PSYNC id o continues when id is our ID (or our second ID and o
 * is within its validity) and o is in that window or just past it.
 */
#include "srv_repl.h"

#include <errno.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "kv_err.h"
#include "kv_mem.h"
#include "kv_num.h"
#include "srv.h"
#include "srv_conf.h"
#include "srv_dbmap.h"
#include "srv_rdb.h"
#include "srv_replica.h"
#include "stor.h"

#define BACKLOG_MIN 16384

/* A replica's way through a full sync: it waits for the next file job
 * (NEXT: the running one's moment has passed), for the running job's
 * moment (WAIT), for its file (FILE: +FULLRESYNC sent), gets the file
 * (SEND), after a diskless file waits for its first ACK (ACKWAIT: as in
 * Redis, nothing may follow the EOF mark until the replica says it has
 * the file, since it cannot tell where a file of unknown length ends
 * otherwise), then gets the stream (ONLINE). From FILE on, the stream
 * made since the file's moment gathers in pend until ONLINE. */
enum { R_NEXT, R_WAIT, R_FILE, R_SEND, R_ACKWAIT, R_ONLINE };
static const char *const state_names[] = {"wait_bgsave", "wait_bgsave", "wait_bgsave",
                                          "send_bulk",   "online",      "online"};

struct srv_repl_peer {
    bool replica;  /* past SYNC/PSYNC */
    int state;     /* R_*, for a replica */
    bool psync;    /* it asked with PSYNC: it gets +FULLRESYNC */
    bool rdb_only; /* REPLCONF rdb-only 1 (redis-cli --rdb): the file, then goodbye */
    bool capa_eof; /* REPLCONF capa eof: it reads a file between EOF marks (diskless) */
    struct resp_buf pend;
    int fd; /* SEND: the file */
    uint64_t fpos, fsize;
    bool acked;        /* it has sent REPLCONF ACK: it can be timed out */
    uint64_t ack_off;  /* what it said it applied */
    uint64_t ack_ms;   /* when it last said so */
    int port;          /* REPLCONF listening-port */
    char ip[64];       /* REPLCONF ip-address, or "" for the socket's */
    uint64_t wait_off; /* WAIT: the offset to be acknowledged */
    int64_t wait_n;    /* WAIT: by how many */
};

/* One queued command of the current call: its bytes in pend. */
struct pend_op {
    unsigned db; /* physical */
    size_t off, len;
};

static struct {
    char id[41], id2[41];
    uint64_t off;
    int64_t second_off; /* id2 is good for PSYNC offsets up to here; -1: no id2 */
    char *bl;           /* the backlog ring, NULL: none */
    size_t blsize, blidx, histlen;
    int seldb; /* the logical database the stream last selected; -1: none */
    struct resp_buf pend;
    struct pend_op *ops;
    size_t nops, opcap;
    bool following;
    struct conn **replicas;
    size_t nreplicas, repcap;
    struct conn **waiters;
    size_t nwaiters, waitcap;
    bool getack;             /* a WAIT needs fresh acknowledgements */
    uint64_t alone_ms;       /* when the last replica left (backlog TTL) */
    uint64_t ping_ms;        /* the last PING into the stream */
    unsigned good;           /* replicas acknowledging within min-replicas-max-lag */
    struct srv_rdb_job *job; /* the file for full syncs being made */
    bool job_moment;         /* its checkpoint is made: later replicas wait for the next */
    char job_path[4200];
    unsigned job_seq;
    bool job_diskless;   /* the file goes through a pipe, straight to the replicas */
    uint64_t job_due_ms; /* a diskless job starts then (repl-diskless-sync-delay) */
    int pipefd;          /* a diskless job's pipe, our end; -1: none */
    bool pipe_armed;     /* the loop watches it */
    bool pipe_eof;       /* the whole file came through it */
    char mark[41];       /* its EOF mark */
    uint64_t sync_full, sync_ok, sync_err;
} R;

static const char zero_id[41] = "0000000000000000000000000000000000000000";

void srv_repl_init(void)
{
    memset(&R, 0, sizeof R);
    srv_random_hex(R.id);
    memcpy(R.id2, zero_id, sizeof R.id2);
    R.second_off = -1;
    R.seldb = -1;
    R.pipefd = -1;
    resp_buf_init(&R.pend);
}

static void pipe_close(void);

void srv_repl_free(void)
{
    pipe_close(); /* a diskless job's writes then fail: it ends */
    if (R.job) {
        srv_rdb_job_free(R.job); /* stopped between keys, its file removed */
        unlink(R.job_path);
    }
    free(R.bl);
    resp_buf_free(&R.pend);
    free(R.ops);
    free(R.replicas);
    free(R.waiters);
    memset(&R, 0, sizeof R);
}

/* ---- identity ---- */

const char *srv_repl_id(void)
{
    return R.id;
}

uint64_t srv_repl_offset(void)
{
    return R.off;
}

void srv_repl_set_following(bool on)
{
    R.following = on;
}

bool srv_repl_following(void)
{
    return R.following;
}

static size_t backlog_size(void)
{
    int64_t v = srv_conf_kept_num(&srv.conf, "repl-backlog-size");
    return v < BACKLOG_MIN ? BACKLOG_MIN : (size_t)v;
}

static void backlog_create(void)
{
    R.blsize = backlog_size();
    R.bl = kv_xmalloc(R.blsize);
    R.blidx = R.histlen = 0;
    R.alone_ms = srv_mstime(); /* its TTL runs from now while no replica uses it */
}

static void backlog_free(void)
{
    free(R.bl);
    R.bl = NULL;
    R.blsize = R.blidx = R.histlen = 0;
}

static void forget(struct conn *c);

/* Our replicas follow a history we left: each must sync again. */
static void drop_replicas(const char *why)
{
    while (R.nreplicas) {
        struct conn *c = R.replicas[R.nreplicas - 1];
        srv_log(LOG_NOTICE, "Dropping replica %s: %s", c->addr, why);
        srv_close_async(c);
        forget(c);
    }
}

void srv_repl_adopt(const char *replid, uint64_t offset)
{
    memcpy(R.id, replid, 40);
    R.id[40] = '\0';
    memcpy(R.id2, zero_id, sizeof R.id2);
    R.second_off = -1;
    R.off = offset;
    R.seldb = -1;
    if (!R.bl)
        backlog_create();
    R.blidx = R.histlen = 0;
    drop_replicas("a full sync from our primary started a new history");
}

void srv_repl_continue_as(const char *replid)
{
    memcpy(R.id2, R.id, sizeof R.id2);
    R.second_off = (int64_t)R.off + 1;
    memcpy(R.id, replid, 40);
    R.id[40] = '\0';
    drop_replicas("our primary's history has a new ID");
}

void srv_repl_new_id(void)
{
    srv_random_hex(R.id);
    memcpy(R.id2, zero_id, sizeof R.id2);
    R.second_off = -1;
}

void srv_repl_promote(void)
{
    memcpy(R.id2, R.id, sizeof R.id2);
    R.second_off = (int64_t)R.off + 1;
    srv_random_hex(R.id);
    R.seldb = -1;
    /* They learn the new ID by reconnecting: a partial resync. */
    drop_replicas("this server was promoted: its ID changed");
}

int srv_repl_save(const char *dir)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/repl-state", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -errno;
    fprintf(f, "%s %llu\n", R.id, (unsigned long long)R.off);
    int rc = fflush(f) || fsync(fileno(f)) ? -errno : 0;
    fclose(f);
    if (!rc && rename(tmp, path))
        rc = -errno;
    if (rc)
        unlink(tmp);
    return rc;
}

void srv_repl_load(const char *dir)
{
    char path[4200], id[64];
    unsigned long long off;
    snprintf(path, sizeof path, "%s/repl-state", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    int n = fscanf(f, "%63s %llu", id, &off);
    fclose(f);
    unlink(path);
    if (n != 2 || strlen(id) != 40 || strspn(id, "0123456789abcdef") != 40) {
        srv_log(LOG_WARNING, "%s is damaged: a new replication ID is taken", path);
        return;
    }
    memcpy(R.id, id, 41);
    R.off = off;
    backlog_create();
    srv_log(LOG_NOTICE, "Replication ID %s and offset %llu kept from the last shutdown", R.id, off);
}

/* ---- the stream ---- */

bool srv_repl_active(void)
{
    return R.bl || R.nreplicas;
}

static void backlog_put(const char *p, size_t n)
{
    if (!R.bl)
        return;
    R.histlen = R.histlen + n > R.blsize ? R.blsize : R.histlen + n;
    if (n > R.blsize) { /* only the last blsize bytes can stay */
        p += n - R.blsize;
        n = R.blsize;
    }
    while (n) {
        size_t room = R.blsize - R.blidx, k = n < room ? n : room;
        memcpy(R.bl + R.blidx, p, k);
        R.blidx = (R.blidx + k) % R.blsize;
        p += k;
        n -= k;
    }
}

/* Bytes of stream: the offset, the backlog, every replica. */
static void feed(const char *p, size_t n)
{
    R.off += n;
    backlog_put(p, n);
    for (size_t i = 0; i < R.nreplicas; i++) {
        struct conn *c = R.replicas[i];
        if (c->flags & (CONN_CLOSE_ASAP | CONN_CLOSE_AFTER_REPLY))
            continue;
        struct srv_repl_peer *rp = c->repl;
        if (rp->state <= R_WAIT || rp->rdb_only)
            continue; /* its file's moment is still to come, or it takes no stream */
        struct resp_buf *to = rp->state == R_ONLINE ? &c->out : &rp->pend;
        resp_buf_append(to, p, n);
        /* The replica class's output limit counts the stream kept while
         * its file is made or sent too, as Redis's does: one past it must
         * sync again. */
        if (srv_out_check(c, resp_buf_used(&rp->pend)))
            continue;
        conn_want_write(c);
    }
}

void srv_repl_feed_raw(const char *p, size_t n)
{
    feed(p, n);
}

static void put_command(struct resp_buf *b, const struct db_str *argv, size_t argc)
{
    resp_array(b, argc);
    for (size_t i = 0; i < argc; i++)
        resp_bulk(b, argv[i].p, argv[i].n);
}

void srv_repl_propagate(unsigned dbi, const struct db_str *argv, size_t argc)
{
    if (R.following || !srv_repl_active())
        return;
    if (R.nops == R.opcap) {
        R.opcap = R.opcap ? R.opcap * 2 : 16;
        R.ops = kv_xrealloc(R.ops, R.opcap * sizeof *R.ops);
    }
    size_t at = resp_buf_used(&R.pend);
    put_command(&R.pend, argv, argc);
    R.ops[R.nops++] = (struct pend_op){.db = dbi, .off = at, .len = resp_buf_used(&R.pend) - at};
}

void srv_repl_propagate_strs(unsigned dbi, const char *const *argv, size_t argc)
{
    struct db_str v[8];
    if (argc > 8)
        return; /* the rewrites use few arguments */
    for (size_t i = 0; i < argc; i++)
        v[i] = (struct db_str){.p = argv[i], .n = strlen(argv[i])};
    srv_repl_propagate(dbi, v, argc);
}

static void feed_select(unsigned logical)
{
    if (R.seldb == (int)logical)
        return;
    char num[16];
    int n = snprintf(num, sizeof num, "%u", logical);
    struct resp_buf b;
    resp_buf_init(&b);
    struct db_str argv[2] = {{.p = "SELECT", .n = 6}, {.p = num, .n = (size_t)n}};
    put_command(&b, argv, 2);
    feed(resp_buf_data(&b), resp_buf_used(&b));
    resp_buf_free(&b);
    R.seldb = (int)logical;
}

static void flush_ops(bool atomic)
{
    if (!R.nops)
        return;
    static const char multi[] = "*1\r\n$5\r\nMULTI\r\n", exec[] = "*1\r\n$4\r\nEXEC\r\n";
    bool wrap = atomic && R.nops > 1;
    if (wrap)
        feed(multi, sizeof multi - 1);
    const char *base = resp_buf_data(&R.pend);
    for (size_t i = 0; i < R.nops; i++) {
        feed_select(srv_dbunmap[R.ops[i].db]);
        feed(base + R.ops[i].off, R.ops[i].len);
    }
    if (wrap)
        feed(exec, sizeof exec - 1);
    R.nops = 0;
    resp_buf_consume(&R.pend, resp_buf_used(&R.pend));
}

void srv_repl_flush(void)
{
    flush_ops(true);
}

void srv_repl_flush_each(void)
{
    flush_ops(false);
}

/* ---- replicas ---- */

static struct srv_repl_peer *peer_of(struct conn *c)
{
    if (!c->repl) {
        c->repl = kv_xcalloc(1, sizeof *c->repl);
        c->repl->fd = -1;
        resp_buf_init(&c->repl->pend);
    }
    return c->repl;
}

static void list_add(struct conn ***v, size_t *n, size_t *cap, struct conn *c)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i] == c)
            return;
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        *v = kv_xrealloc(*v, *cap * sizeof **v);
    }
    (*v)[(*n)++] = c;
}

static void list_del(struct conn **v, size_t *n, struct conn *c)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i] == c) {
            memmove(&v[i], &v[i + 1], (*n - i - 1) * sizeof *v);
            (*n)--;
            return;
        }
}

/* c is no replica or waiter any more (its state stays with it). */
static void forget(struct conn *c)
{
    bool was = c->repl->replica;
    resp_buf_free(&c->repl->pend);
    if (c->repl->fd >= 0)
        close(c->repl->fd);
    c->repl->fd = -1;
    list_del(R.replicas, &R.nreplicas, c);
    list_del(R.waiters, &R.nwaiters, c);
    c->repl->replica = false;
    c->flags &= ~(uint32_t)CONN_REPLICA;
    if (was && !R.nreplicas)
        R.alone_ms = srv_mstime();
}

void srv_repl_conn_gone(struct conn *c)
{
    if (!c->repl)
        return;
    forget(c);
    free(c->repl);
    c->repl = NULL;
}

void srv_repl_set_port(struct conn *c, int port)
{
    peer_of(c)->port = port;
}

void srv_repl_set_capa(struct conn *c, const char *capa, size_t n)
{
    if (n == 3 && !strncasecmp(capa, "eof", 3))
        peer_of(c)->capa_eof = true;
}

void srv_repl_set_ip(struct conn *c, const char *ip, size_t n)
{
    struct srv_repl_peer *p = peer_of(c);
    if (n >= sizeof p->ip)
        n = sizeof p->ip - 1;
    memcpy(p->ip, ip, n);
    p->ip[n] = '\0';
}

/* The address a replica is known by: the one it announced, else its
 * socket's, without the port. */
static void peer_ip(const struct conn *c, char *out, size_t cap)
{
    if (c->repl && c->repl->ip[0]) {
        snprintf(out, cap, "%s", c->repl->ip);
        return;
    }
    const char *colon = strrchr(c->addr, ':');
    size_t n = colon ? (size_t)(colon - c->addr) : strlen(c->addr);
    const char *p = c->addr;
    if (n >= 2 && p[0] == '[' && p[n - 1] == ']') { /* [v6]:port */
        p++;
        n -= 2;
    }
    snprintf(out, cap, "%.*s", (int)n, p);
}

unsigned srv_repl_online(void)
{
    unsigned n = 0;
    for (size_t i = 0; i < R.nreplicas; i++)
        n += R.replicas[i]->repl->state == R_ONLINE;
    return n;
}

/* PSYNC id offset: continues from the backlog when it can. */
static bool try_partial(struct conn *c, const struct db_str *id, const struct db_str *offarg)
{
    int64_t want;
    if (kv_str2ll(offarg->p, offarg->n, &want))
        return false;
    bool ours = id->n == 40 && !memcmp(id->p, R.id, 40);
    bool second = id->n == 40 && !memcmp(id->p, R.id2, 40) && R.second_off >= 0 &&
                  want <= R.second_off && memcmp(R.id2, zero_id, 40);
    if (!ours && !second)
        return false;
    uint64_t first = R.off - R.histlen + 1;
    if (!R.bl || want < (int64_t)first || (uint64_t)want > R.off + 1)
        return false;
    struct srv_repl_peer *p = peer_of(c);
    resp_buf_printf(&c->out, "+CONTINUE %s\r\n", R.id);
    /* The backlog from want on: the ring's last (off - want + 1) bytes. */
    size_t n = (size_t)(R.off + 1 - (uint64_t)want);
    size_t start = (R.blidx + R.blsize - n) % R.blsize;
    size_t k = n < R.blsize - start ? n : R.blsize - start;
    resp_buf_append(&c->out, R.bl + start, k);
    resp_buf_append(&c->out, R.bl, n - k);
    p->replica = true;
    p->state = R_ONLINE;
    p->ack_off = (uint64_t)want - 1;
    p->ack_ms = srv_mstime();
    c->flags |= CONN_REPLICA;
    list_add(&R.replicas, &R.nreplicas, &R.repcap, c);
    R.sync_ok++;
    srv_log(LOG_NOTICE,
            "Partial resynchronization request from %s accepted: %zu bytes of backlog sent, "
            "from offset %lld",
            c->addr, n, (long long)want);
    return true;
}

/* Drops a replica whose full sync cannot go on; it retries, as after any
 * failed sync. */
static void sync_failed(struct conn *c, const char *why)
{
    srv_log(LOG_WARNING, "Cannot make an RDB file for replica %s: %s", c->addr, why);
    srv_close_async(c);
    forget(c);
}

/* A replica has its whole file: the stream gathered since the file's
 * moment follows, and it is online; after rdb-only, goodbye instead. */
static void sync_done(struct conn *c)
{
    struct srv_repl_peer *p = c->repl;
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    if (p->rdb_only) {
        srv_log(LOG_NOTICE, "RDB file sent to %s (rdb-only): closing", c->addr);
        c->flags |= CONN_CLOSE_AFTER_REPLY;
        forget(c);
    } else {
        resp_buf_append(&c->out, resp_buf_data(&p->pend), resp_buf_used(&p->pend));
        resp_buf_free(&p->pend);
        p->state = R_ONLINE;
        p->ack_ms = srv_mstime();
        srv_log(LOG_NOTICE, "Synchronization with replica %s succeeded", c->addr);
    }
    conn_want_write(c);
}

/* The pipe of a diskless job, as the loop's epoll sees it. */
static struct conn pipe_conn = {.flags = CONN_REPLICA, .fd = -1};

static void pipe_close(void)
{
    if (R.pipefd >= 0) {
        epoll_ctl(srv.epfd, EPOLL_CTL_DEL, R.pipefd, NULL);
        close(R.pipefd);
    }
    R.pipefd = pipe_conn.fd = -1;
    R.pipe_armed = false;
}

/* Whether the next file goes to the replicas as it is made (diskless):
 * repl-diskless-sync says so, and every replica waiting for it reads a
 * file between EOF marks. */
static bool diskless_wanted(void)
{
    if (!srv_conf_kept_num(&srv.conf, "repl-diskless-sync"))
        return false;
    for (size_t i = 0; i < R.nreplicas; i++) {
        struct srv_repl_peer *p = R.replicas[i]->repl;
        if (p->state == R_NEXT && !p->capa_eof)
            return false;
    }
    return true;
}

/* Starts a file job for the replicas waiting for the next one. */
static void job_start(void)
{
    char err[9000];
    R.job_diskless = diskless_wanted();
    R.job_moment = false;
    R.pipe_eof = false;
    if (R.job_diskless) {
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) != 0) {
            snprintf(err, sizeof err, "cannot make a pipe: %s", strerror(errno));
            R.job = NULL;
        } else {
            fcntl(pfd[0], F_SETFL, O_NONBLOCK);
            fcntl(pfd[1], F_SETPIPE_SZ,
                  1 << 20); /* fewer wake-ups; the default is kept if refused */
            R.pipefd = pipe_conn.fd = pfd[0];
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &pipe_conn};
            epoll_ctl(srv.epfd, EPOLL_CTL_ADD, R.pipefd, &ev);
            R.pipe_armed = true;
            R.job = srv_rdb_job_start_fd(NULL, pfd[1], err, sizeof err);
            if (!R.job)
                pipe_close();
        }
    } else {
        snprintf(R.job_path, sizeof R.job_path, "%s/temp-repl-%d-%u.rdb", srv.conf.dir,
                 (int)getpid(), R.job_seq++);
        R.job = srv_rdb_job_start(R.job_path, err, sizeof err);
    }
    for (size_t i = 0; i < R.nreplicas; i++) {
        struct conn *c = R.replicas[i];
        if (c->repl->state != R_NEXT)
            continue;
        if (R.job) {
            c->repl->state = R_WAIT;
        } else {
            sync_failed(c, err);
            i--;
        }
    }
}

/* The job's moment: the checkpoint, at the current offset, which the
 * replicas waiting for it get with +FULLRESYNC; a diskless file starts
 * to flow at once, between EOF marks. */
static void job_moment(void)
{
    srv_repl_flush(); /* nothing half-queued may straddle the moment */
    char err[9000];
    int rc = srv_rdb_job_checkpoint(R.job, R.id, R.off, err, sizeof err);
    R.job_moment = true;
    if (R.job_diskless)
        srv_random_hex(R.mark);
    for (size_t i = 0; i < R.nreplicas; i++) {
        struct conn *c = R.replicas[i];
        if (c->repl->state != R_WAIT)
            continue;
        if (rc) {
            sync_failed(c, err);
            i--;
            continue;
        }
        c->repl->state = R_FILE;
        if (c->repl->psync)
            resp_buf_printf(&c->out, "+FULLRESYNC %s %llu\r\n", R.id, (unsigned long long)R.off);
        if (R.job_diskless) {
            resp_buf_printf(&c->out, "$EOF:%s\r\n", R.mark);
            c->repl->state = R_SEND;
        }
        conn_want_write(c);
    }
    R.seldb = -1; /* the stream after the file starts with a SELECT */
}

/* Starts the next job when one is wanted and due: a diskless one waits
 * repl-diskless-sync-delay seconds from the first replica's request, for
 * others to share it, or until repl-diskless-sync-max-replicas wait. */
static void job_due(void)
{
    size_t waiting = 0;
    for (size_t i = 0; i < R.nreplicas; i++)
        waiting += R.replicas[i]->repl->state == R_NEXT;
    if (R.job || !waiting)
        return;
    int64_t max = srv_conf_kept_num(&srv.conf, "repl-diskless-sync-max-replicas");
    if (srv_mstime() >= R.job_due_ms || !diskless_wanted() || (max > 0 && waiting >= (size_t)max))
        job_start();
}

void srv_repl_psync(struct conn *c, bool psync)
{
    if (c->flags & CONN_REPLICA)
        return; /* already one: Redis ignores it too */
    if (psync && c->argc > 3 && c->argv[3].n == 8 && !strncasecmp(c->argv[3].p, "failover", 8)) {
        /* Our primary hands over to us (its FAILOVER): we lead from now
         * on, and it continues from us as a replica. */
        if (c->argv[1].n != 40 || memcmp(c->argv[1].p, R.id, 40)) {
            resp_error(OUT(c), "ERR PSYNC FAILOVER replid must match my replid.");
            return;
        }
        srv_log(LOG_NOTICE, "Failover request received for replid %s.", R.id);
        srv_replica_unfollow();
    }
    if (psync && try_partial(c, &c->argv[1], &c->argv[2]))
        return;
    if (psync && !(c->argv[1].n == 1 && c->argv[1].p[0] == '?'))
        R.sync_err++;
    if (!R.bl) { /* a new history: nothing before it can be continued */
        srv_random_hex(R.id);
        memcpy(R.id2, zero_id, sizeof R.id2);
        R.second_off = -1;
        backlog_create();
    }
    struct srv_repl_peer *p = peer_of(c);
    p->replica = true;
    p->psync = psync;
    p->rdb_only = c->flags & CONN_RDB_ONLY;
    p->acked = false;
    p->ack_ms = srv_mstime();
    c->flags |= CONN_REPLICA;
    list_add(&R.replicas, &R.nreplicas, &R.repcap, c);
    R.sync_full++;
    srv_log(LOG_NOTICE, "Replica %s asks for synchronization: a full one", c->addr);
    /* The running job serves it if its moment is still to come; else it
     * waits for the next. */
    p->state = R.job && !R.job_moment ? R_WAIT : R_NEXT;
    if (p->state == R_NEXT && !R.job) {
        bool first = true;
        for (size_t i = 0; i < R.nreplicas; i++)
            first &= R.replicas[i] == c || R.replicas[i]->repl->state != R_NEXT;
        if (first)
            R.job_due_ms =
                srv_mstime() +
                (uint64_t)srv_conf_kept_num(&srv.conf, "repl-diskless-sync-delay") * 1000;
        job_due();
    }
}

/* A diskless job's bytes, from its pipe to every replica receiving them,
 * as long as none holds 4 MiB unsent: the job's thread waits for the
 * slowest reader. The pipe is watched only while there is room. */
static void pipe_pump(void)
{
    static char chunk[1 << 20];
    bool room = true;
    size_t readers = 0;
    while (room && R.pipefd >= 0 && !R.pipe_eof) {
        for (size_t i = 0; i < R.nreplicas; i++) {
            struct conn *c = R.replicas[i];
            if (c->repl->state == R_SEND) {
                readers++;
                room &= resp_buf_used(&c->out) < (4u << 20);
            }
        }
        if (!room || !readers)
            break;
        ssize_t r = read(R.pipefd, chunk, sizeof chunk);
        if (r == 0) {
            R.pipe_eof = true;
        } else if (r < 0) {
            break; /* EAGAIN: more later; an error shows as the job's */
        } else {
            for (size_t i = 0; i < R.nreplicas; i++) {
                struct conn *c = R.replicas[i];
                if (c->repl->state == R_SEND) {
                    resp_buf_append(&c->out, chunk, (size_t)r);
                    conn_want_write(c);
                }
            }
        }
        readers = 0;
    }
    if (R.pipefd >= 0 && !R.pipe_eof && room != R.pipe_armed) {
        struct epoll_event ev = {.events = room ? EPOLLIN : 0, .data.ptr = &pipe_conn};
        epoll_ctl(srv.epfd, EPOLL_CTL_MOD, R.pipefd, &ev);
        R.pipe_armed = room;
    }
}

bool srv_repl_event(struct conn *c, uint32_t events)
{
    (void)events;
    return c == &pipe_conn; /* read by the loop's next srv_repl_before_sleep */
}

/* A finished diskless job: its receivers get the end mark, or, when it
 * failed, are dropped. */
static void diskless_end(int st, const char *err)
{
    size_t n = R.nreplicas;
    struct conn **v = kv_xmalloc((n ? n : 1) * sizeof *v); /* the list changes meanwhile */
    memcpy(v, R.replicas, n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        struct conn *c = v[i];
        int s = c->repl->state;
        if (s == R_SEND && st == SRV_RDB_JOB_DONE) {
            resp_buf_append(&c->out, R.mark, 40);
            if (c->repl->rdb_only) {
                sync_done(c);
            } else {
                c->repl->state = R_ACKWAIT; /* the stream after its first ACK */
                c->repl->ack_ms = srv_mstime();
                conn_want_write(c);
            }
        } else if (s >= R_WAIT && s <= R_SEND) {
            sync_failed(c, st == SRV_RDB_JOB_DONE ? "the file went without it" : err);
        }
    }
    free(v);
}

/* The file job's steps: its moment when it is ready for it; a diskless
 * file's bytes as they come; a file on disk, once whole, to the replicas
 * that have it coming, a slice at a time (as much as keeps 4 MiB in a
 * replica's output); then the next job for those that came too late. */
static void sync_progress(void)
{
    char err[9000];
    uint64_t bytes = 0;
    int st = R.job ? srv_rdb_job_poll(R.job, err, sizeof err, &bytes) : SRV_RDB_JOB_BUSY;
    if (st == SRV_RDB_JOB_READY && !R.job_moment)
        job_moment();
    if (R.job && R.job_diskless) {
        pipe_pump();
        bool readers = false;
        for (size_t i = 0; i < R.nreplicas && !readers; i++)
            readers = R.replicas[i]->repl->state >= R_WAIT && R.replicas[i]->repl->state <= R_SEND;
        if (!readers && R.job_moment) { /* they all left: the job has no one to write to */
            pipe_close();
            srv_rdb_job_free(R.job);
            R.job = NULL;
        } else if (st == SRV_RDB_JOB_FAILED || (st == SRV_RDB_JOB_DONE && R.pipe_eof)) {
            srv_log(LOG_NOTICE, "Diskless RDB file %s the replicas after %llu ms",
                    st == SRV_RDB_JOB_DONE ? "sent to" : "failed for",
                    (unsigned long long)(srv_mstime() - srv_rdb_job_started(R.job)));
            pipe_close();
            srv_rdb_job_free(R.job);
            R.job = NULL;
            diskless_end(st, err);
        }
    } else if (st == SRV_RDB_JOB_DONE || st == SRV_RDB_JOB_FAILED) {
        uint64_t ms = srv_mstime() - srv_rdb_job_started(R.job);
        int fd = st == SRV_RDB_JOB_DONE ? open(R.job_path, O_RDONLY | O_CLOEXEC) : -1;
        if (st == SRV_RDB_JOB_DONE && fd < 0)
            snprintf(err, sizeof err, "cannot open %s: %s", R.job_path, strerror(errno));
        unlink(R.job_path); /* the replicas' descriptors keep it */
        srv_rdb_job_free(R.job);
        R.job = NULL;
        if (fd >= 0)
            srv_log(LOG_NOTICE, "RDB file of %llu bytes for the replicas made in %llu ms",
                    (unsigned long long)bytes, (unsigned long long)ms);
        for (size_t i = 0; i < R.nreplicas; i++) {
            struct conn *c = R.replicas[i];
            struct srv_repl_peer *p = c->repl;
            if (p->state != R_FILE && p->state != R_WAIT)
                continue;
            if (fd < 0) {
                sync_failed(c, err);
                i--;
                continue;
            }
            p->fd = dup(fd);
            p->fpos = 0;
            p->fsize = bytes;
            p->state = R_SEND;
            resp_buf_printf(&c->out, "$%llu\r\n", (unsigned long long)bytes);
        }
        if (fd >= 0)
            close(fd);
    }
    if (!R.job) {
        job_due();
    }
    for (size_t i = 0; i < R.nreplicas; i++) {
        struct conn *c = R.replicas[i];
        struct srv_repl_peer *p = c->repl;
        if (p->state != R_SEND || p->fd < 0 ||
            (c->flags & (CONN_CLOSE_ASAP | CONN_CLOSE_AFTER_REPLY)))
            continue;
        bool failed = false;
        while (p->fpos < p->fsize && resp_buf_used(&c->out) < (4u << 20)) {
            size_t want = p->fsize - p->fpos < (1u << 20) ? (size_t)(p->fsize - p->fpos) : 1u << 20;
            char *dst = resp_buf_reserve(&c->out, want);
            ssize_t r = pread(p->fd, dst, want, (off_t)p->fpos);
            if (r <= 0) {
                srv_log(LOG_WARNING, "Reading the RDB file for replica %s: %s", c->addr,
                        r < 0 ? strerror(errno) : "cut short");
                failed = true;
                break;
            }
            c->out.len += (size_t)r;
            p->fpos += (uint64_t)r;
        }
        if (failed) {
            srv_close_async(c);
            forget(c);
            i--;
            continue;
        }
        if (p->fpos == p->fsize) {
            bool stays = !p->rdb_only;
            sync_done(c);
            if (!stays)
                i--;
            continue;
        }
        conn_want_write(c);
    }
}

void srv_repl_ack(struct conn *c, uint64_t offset)
{
    struct srv_repl_peer *p = c->repl;
    if (!p || !p->replica)
        return;
    if (offset > p->ack_off)
        p->ack_off = offset;
    p->ack_ms = srv_mstime();
    p->acked = true;
    if (p->state == R_ACKWAIT) /* it has the diskless file whole: the stream may follow */
        sync_done(c);
}

size_t srv_repl_buffers(void)
{
    size_t n = 0;
    for (size_t i = 0; i < R.nreplicas; i++)
        n += resp_buf_used(&R.replicas[i]->out);
    return n;
}

void srv_repl_sync_stats(uint64_t *full, uint64_t *ok, uint64_t *err)
{
    *full = R.sync_full;
    *ok = R.sync_ok;
    *err = R.sync_err;
}

/* ---- FAILOVER ---- */

/* Redis 7.0's coordinated failover: writes pause; once the target (or
 * any replica) has acknowledged everything, this server follows it with
 * a PSYNC that says FAILOVER, and the target promotes itself. */
enum { FO_NONE, FO_WAITING, FO_IN_PROGRESS };
static const char *const fo_names[] = {"no-failover", "waiting-for-sync", "failover-in-progress"};

static struct {
    int state;
    char host[256]; /* TO host port: the target; "" for any replica */
    int port;
    bool force;
    uint64_t end_ms;    /* TIMEOUT's end (0: none); in progress, when to give up */
    uint64_t getack_ms; /* the last GETACK asked while waiting */
} F;

static void failover_end(const char *why)
{
    if (why)
        srv_log(LOG_WARNING, "FAILOVER aborted: %s", why);
    F.state = FO_NONE;
    srv_unpause();
}

/* This server hands over to host:port. */
static void failover_go(const char *host, int port)
{
    srv_log(LOG_NOTICE, "FAILOVER: the replica at %s:%d takes over", host, port);
    if (host != F.host) /* FAILOVER TO names it already: no copy onto itself */
        snprintf(F.host, sizeof F.host, "%s", host);
    F.port = port;
    F.state = FO_IN_PROGRESS;
    F.end_ms = srv_mstime() + 10000; /* its answer, or the failover is undone */
    srv_replica_failover_to(host, port);
}

void srv_repl_failover_answered(bool took, const char *reply)
{
    if (F.state != FO_IN_PROGRESS)
        return;
    if (took) {
        srv_log(LOG_NOTICE, "FAILOVER done: %s:%d leads, this server follows it", F.host, F.port);
        failover_end(NULL);
        return;
    }
    char why[600];
    snprintf(why, sizeof why, "the target refused: %.500s", reply);
    srv_replica_unfollow();
    failover_end(why);
}

/* An online replica at host:port, or NULL. */
static struct conn *replica_at(const char *host, int port)
{
    for (size_t i = 0; i < R.nreplicas; i++) {
        struct conn *c = R.replicas[i];
        char ip[64];
        peer_ip(c, ip, sizeof ip);
        if (c->repl->state == R_ONLINE && c->repl->port == port && !strcmp(ip, host))
            return c;
    }
    return NULL;
}

/* From the loop, before it sleeps: a target that caught up gets the
 * lead; a timeout ends the wait (FORCE: hands over all the same). */
static void failover_progress(void)
{
    uint64_t now = srv_mstime();
    if (F.state == FO_IN_PROGRESS) {
        if (now > F.end_ms) {
            srv_replica_unfollow();
            failover_end("the target did not answer the hand-over in time");
        }
        return;
    }
    if (F.state != FO_WAITING)
        return;
    struct conn *t = NULL;
    for (size_t i = 0; i < R.nreplicas && !t; i++) {
        struct conn *c = R.replicas[i];
        if (F.host[0] ? c == replica_at(F.host, F.port)
                      : c->repl->state == R_ONLINE && c->repl->ack_off == R.off)
            t = c;
    }
    if (t && t->repl->ack_off == R.off) {
        char ip[64];
        peer_ip(t, ip, sizeof ip);
        failover_go(ip, t->repl->port);
        return;
    }
    if (F.end_ms && now > F.end_ms) {
        if (F.force && F.host[0])
            failover_go(F.host, F.port);
        else
            failover_end("the replica never caught up before the timeout");
        return;
    }
    if (now - F.getack_ms >= 100) { /* how far the replicas are */
        static const char getack[] = "*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";
        feed(getack, sizeof getack - 1);
        F.getack_ms = now;
    }
}

void srv_repl_failover(struct conn *c)
{
    bool abort = false, force = false, to = false;
    int64_t timeout = 0, port = 0;
    char host[256] = "";
    for (size_t i = 1; i < c->argc; i++) {
        if (cmd_arg_is(c, i, "to") && !to && i + 2 < c->argc) {
            to = true;
            snprintf(host, sizeof host, "%.*s",
                     (int)(c->argv[i + 1].n < 255 ? c->argv[i + 1].n : 255), c->argv[i + 1].p);
            if (!cmd_arg_ll(c, i + 2, &port))
                return;
            i += 2;
            if (i + 1 < c->argc && cmd_arg_is(c, i + 1, "force")) {
                force = true;
                i++;
            }
        } else if (cmd_arg_is(c, i, "timeout") && i + 1 < c->argc && !timeout) {
            if (!cmd_arg_ll(c, ++i, &timeout))
                return;
            if (timeout <= 0) {
                resp_error(OUT(c), "ERR FAILOVER timeout must be greater than 0");
                return;
            }
        } else if (cmd_arg_is(c, i, "abort") && !abort) {
            abort = true;
        } else {
            cmd_reply_syntax(c);
            return;
        }
    }
    if (abort) {
        if (to || timeout || force) {
            cmd_reply_syntax(c);
            return;
        }
        if (F.state == FO_NONE) {
            resp_error(OUT(c), "ERR No failover in progress.");
            return;
        }
        if (F.state == FO_IN_PROGRESS)
            srv_replica_unfollow();
        failover_end("FAILOVER ABORT");
        resp_simple(OUT(c), "OK");
        return;
    }
    if (R.following) {
        resp_error(OUT(c), "ERR FAILOVER is not valid when server is a replica.");
        return;
    }
    if (!srv_repl_online()) {
        resp_error(OUT(c), "ERR FAILOVER requires connected replicas.");
        return;
    }
    if (F.state != FO_NONE) {
        resp_error(OUT(c), "ERR FAILOVER already in progress.");
        return;
    }
    if (force && (!timeout || !to)) {
        resp_error(OUT(c), "ERR FAILOVER with force option requires both a timeout and target "
                           "HOST and IP.");
        return;
    }
    if (to && !replica_at(host, (int)port)) {
        resp_error(OUT(c), "ERR FAILOVER target HOST and PORT is not a replica.");
        return;
    }
    memset(&F, 0, sizeof F);
    snprintf(F.host, sizeof F.host, "%s", host);
    F.port = (int)port;
    F.force = force;
    F.end_ms = timeout ? srv_mstime() + (uint64_t)timeout : 0;
    F.state = FO_WAITING;
    srv_pause(SRV_PAUSE_WRITE, UINT64_MAX); /* until it ends, one way or the other */
    srv_log(LOG_NOTICE, "FAILOVER requested to %s:%lld (timeout %lld ms)",
            to ? host : "any replica", (long long)port, (long long)timeout);
    resp_simple(OUT(c), "OK");
}

/* ---- WAIT ---- */

static unsigned acked_at(uint64_t off)
{
    unsigned n = 0;
    for (size_t i = 0; i < R.nreplicas; i++)
        if (R.replicas[i]->repl->state == R_ONLINE && R.replicas[i]->repl->ack_off >= off)
            n++;
    return n;
}

void srv_repl_wait(struct conn *c)
{
    if (c->flags & CONN_BLOCKED)
        return; /* parked: acknowledgements or its timeout answer it */
    if (R.following) {
        resp_error(OUT(c), "ERR WAIT cannot be used with replica instances. Please also note that "
                           "since Redis 4.0 if a replica is configured to be writable (which is "
                           "not the default) writes to replicas are just local and are not "
                           "propagated.");
        return;
    }
    int64_t n;
    uint64_t end;
    if (kv_str2ll(c->argv[1].p, c->argv[1].n, &n)) {
        resp_error(OUT(c), "ERR value is not an integer or out of range");
        return;
    }
    if (!cmd_arg_timeout_ms(c, 2, &end))
        return;
    unsigned have = acked_at(c->woff);
    if (n <= (int64_t)have || !cmd_may_block(c)) {
        resp_int(OUT(c), have);
        return;
    }
    struct srv_repl_peer *p = peer_of(c);
    p->wait_off = c->woff;
    p->wait_n = n;
    cmd_block(c, end); /* 0: for ever */
    list_add(&R.waiters, &R.nwaiters, &R.waitcap, c);
    R.getack = true;
}

int64_t srv_repl_wait_count(const struct conn *c)
{
    return c->repl ? acked_at(c->repl->wait_off) : 0;
}

void srv_repl_before_sleep(void)
{
    if (R.job || R.nreplicas)
        sync_progress();
    if (F.state != FO_NONE)
        failover_progress();
    /* Waiters a timeout or a kill already answered leave the list. */
    for (size_t i = 0; i < R.nwaiters; i++) {
        struct conn *c = R.waiters[i];
        if (!(c->flags & CONN_BLOCKED) || c->bcmd->fn != cmd_wait) {
            list_del(R.waiters, &R.nwaiters, c);
            i--;
        }
    }
    if (!R.nwaiters) {
        R.getack = false;
        return;
    }
    if (R.getack && R.nreplicas) {
        static const char getack[] = "*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n";
        feed(getack, sizeof getack - 1);
    }
    R.getack = false;
    for (size_t i = 0; i < R.nwaiters; i++) {
        struct conn *c = R.waiters[i];
        unsigned have = acked_at(c->repl->wait_off);
        if ((int64_t)have < c->repl->wait_n)
            continue;
        size_t before = resp_buf_used(&c->out);
        resp_int(OUT(c), have);
        cmd_reply_drop_if_off(c, before);
        cmd_unblock(c);
        list_del(R.waiters, &R.nwaiters, c);
        i--;
    }
}

/* ---- cron ---- */

static void count_good(uint64_t now_ms)
{
    int64_t lag = srv_conf_kept_num(&srv.conf, "min-replicas-max-lag");
    unsigned good = 0;
    for (size_t i = 0; i < R.nreplicas; i++)
        if (R.replicas[i]->repl->state == R_ONLINE &&
            now_ms - R.replicas[i]->repl->ack_ms <= (uint64_t)lag * 1000)
            good++;
    R.good = good;
}

const char *srv_repl_write_refusal(void)
{
    int64_t min = srv_conf_kept_num(&srv.conf, "min-replicas-to-write");
    if (R.following || min <= 0)
        return NULL;
    count_good(srv_mstime());
    return R.good < (uint64_t)min ? "NOREPLICAS Not enough good replicas to write." : NULL;
}

void srv_repl_cron(uint64_t now_ms)
{
    int64_t period = srv_conf_kept_num(&srv.conf, "repl-ping-replica-period");
    if (R.nreplicas && !R.following && now_ms - R.ping_ms >= (uint64_t)period * 1000) {
        static const char ping[] = "*1\r\n$4\r\nPING\r\n";
        feed(ping, sizeof ping - 1);
        R.ping_ms = now_ms;
    }
    int64_t timeout = srv_conf_kept_num(&srv.conf, "repl-timeout");
    for (size_t i = 0; i < R.nreplicas; i++) {
        struct conn *c = R.replicas[i];
        if ((c->repl->acked || c->repl->state == R_ACKWAIT) &&
            now_ms - c->repl->ack_ms > (uint64_t)timeout * 1000) {
            srv_log(LOG_WARNING, "Disconnecting timedout replica %s", c->addr);
            srv_close_async(c);
            forget(c);
            i--;
        }
    }
    int64_t ttl = srv_conf_kept_num(&srv.conf, "repl-backlog-ttl");
    if (R.bl && !R.nreplicas && !R.following && ttl > 0 &&
        now_ms - R.alone_ms > (uint64_t)ttl * 1000) {
        /* Nobody can continue from it any more: a new history starts. */
        srv_random_hex(R.id);
        memcpy(R.id2, zero_id, sizeof R.id2);
        R.second_off = -1;
        backlog_free();
        srv_log(LOG_NOTICE, "Replication backlog freed after %lld seconds without replicas",
                (long long)ttl);
    }
    /* A bigger backlog keeps what it holds; a smaller one its newest part. */
    if (R.bl && backlog_size() != R.blsize) {
        size_t nsize = backlog_size(), keep = R.histlen < nsize ? R.histlen : nsize;
        char *nb = kv_xmalloc(nsize);
        size_t start = (R.blidx + R.blsize - keep) % R.blsize;
        size_t k = keep < R.blsize - start ? keep : R.blsize - start;
        memcpy(nb, R.bl + start, k);
        memcpy(nb + k, R.bl, keep - k);
        free(R.bl);
        R.bl = nb;
        R.blsize = nsize;
        R.histlen = keep;
        R.blidx = keep % nsize;
    }
    count_good(now_ms);
}

/* ---- INFO, ROLE ---- */

void srv_repl_info(struct resp_buf *b)
{
    uint64_t now = srv_mstime();
    resp_buf_printf(b, "connected_slaves:%zu\r\n", R.nreplicas);
    int64_t min = srv_conf_kept_num(&srv.conf, "min-replicas-to-write");
    if (min > 0 && !R.following)
        resp_buf_printf(b, "min_slaves_good_slaves:%u\r\n", R.good);
    for (size_t i = 0; i < R.nreplicas; i++) {
        struct conn *c = R.replicas[i];
        char ip[64];
        peer_ip(c, ip, sizeof ip);
        resp_buf_printf(b, "slave%zu:ip=%s,port=%d,state=%s,offset=%llu,lag=%llu\r\n", i, ip,
                        c->repl->port, state_names[c->repl->state],
                        (unsigned long long)c->repl->ack_off,
                        (unsigned long long)((now - c->repl->ack_ms) / 1000));
    }
    resp_buf_printf(b, "master_failover_state:%s\r\n", fo_names[F.state]);
    resp_buf_printf(b, "master_replid:%s\r\n", R.id);
    resp_buf_printf(b, "master_replid2:%s\r\n", R.id2);
    resp_buf_printf(b, "master_repl_offset:%llu\r\n", (unsigned long long)R.off);
    resp_buf_printf(b, "second_repl_offset:%lld\r\n", (long long)R.second_off);
    resp_buf_printf(b, "repl_backlog_active:%d\r\n", R.bl != NULL);
    resp_buf_printf(b, "repl_backlog_size:%zu\r\n", R.bl ? R.blsize : backlog_size());
    resp_buf_printf(b, "repl_backlog_first_byte_offset:%llu\r\n",
                    (unsigned long long)(R.bl ? R.off - R.histlen + 1 : 0));
    resp_buf_printf(b, "repl_backlog_histlen:%zu\r\n", R.histlen);
}

void srv_repl_role(struct conn *c)
{
    resp_array(OUT(c), 3);
    resp_bulk_cstr(OUT(c), "master");
    resp_int(OUT(c), (int64_t)R.off);
    resp_array(OUT(c), R.nreplicas);
    for (size_t i = 0; i < R.nreplicas; i++) {
        struct conn *r = R.replicas[i];
        char ip[64];
        peer_ip(r, ip, sizeof ip);
        resp_array(OUT(c), 3);
        resp_bulk_cstr(OUT(c), ip);
        resp_bulk_int(OUT(c), r->repl->port);
        resp_bulk_int(OUT(c), (int64_t)r->repl->ack_off);
    }
}
