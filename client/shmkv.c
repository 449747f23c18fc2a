/*
 * libshmkv — see shmkv.h. The shared-memory path decodes the storage
 * records with the dependency-free encoding (storage/enc.h) and answers as
 * the daemon would; anything it cannot answer exactly goes to the daemon.
 */
#include "shmkv.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "enc.h"
#include "kv_num.h"
#include "shmc_r.h"

#define RETRIES 8 /* cache reads tried before the daemon answers instead */
#define VIEW_OFF (1u << 31)

struct seg {
    struct shmc_r r;
    struct shmc_ctr *ctr; /* this handle's counter slot in it, or NULL */
    struct seg *next;
};

struct shmkv {
    pthread_mutex_t mu; /* the socket and the attach state */
    char *path, *password, *user;
    int no_cache, timeout_ms;
    unsigned db;
    bool db_unknown; /* a SELECT ran inside EXEC: the cache is not used */
    bool in_multi, queued_select;
    /* What the lock-free cache path needs of the above, in one word:
     * db, or VIEW_OFF when the cache must not answer (set under mu). */
    unsigned view;
    redisContext *ctx;   /* NULL: reconnect on the next call */
    struct seg *seg;     /* the current segment (read without the lock) */
    struct seg *retired; /* older segments, unmapped at close */
    char cache_err[256];
    struct shmkv_stats st;
};

static __thread char tl_err[256];

static int err(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_err, sizeof tl_err, fmt, ap);
    va_end(ap);
    return code;
}

const char *shmkv_errmsg(void)
{
    return tl_err;
}

const char *shmkv_strerror(int code)
{
    switch (code) {
    case SHMKV_OK:
        return "ok";
    case SHMKV_NIL:
        return "no such key or value";
    case SHMKV_EINVAL:
        return "invalid argument";
    case SHMKV_ENOMEM:
        return "out of memory";
    case SHMKV_EIO:
        return "connection failed";
    case SHMKV_EPROTO:
        return "protocol error";
    case SHMKV_EREPLY:
        return "error reply";
    case SHMKV_ECONNECT:
        return "cannot connect";
    default:
        return "unknown error";
    }
}

/* Per-handle counters: a relaxed load and store, not a locked add, so a
 * hit pays a few cycles for them. Threads sharing a handle may lose an
 * increment now and then (shmkv.h says the figures are approximate). */
#define COUNT(h, f)                                                                                \
    __atomic_store_n(&(h)->st.f, __atomic_load_n(&(h)->st.f, __ATOMIC_RELAXED) + 1,                \
                     __ATOMIC_RELAXED)
/* The same into the handle's slot in the segment, for the daemon's INFO
 * (a plain store: the slot has one writer, this handle). */
#define SLOT_ADD(s, f, n)                                                                          \
    do {                                                                                           \
        if ((s) && (s)->ctr)                                                                       \
            __atomic_store_n(&(s)->ctr->f, __atomic_load_n(&(s)->ctr->f, __ATOMIC_RELAXED) + (n),  \
                             __ATOMIC_RELAXED);                                                    \
    } while (0)

/* ---- replies ---- */

static shmkv_reply *r_new(int type)
{
    shmkv_reply *r = calloc(1, sizeof *r);
    if (r)
        r->type = type;
    return r;
}

static shmkv_reply *r_str(int type, const char *p, size_t n)
{
    shmkv_reply *r = r_new(type);
    if (r && !(r->str = malloc(n + 1))) {
        free(r);
        return NULL;
    }
    if (r) {
        if (n)
            memcpy(r->str, p, n);
        r->str[n] = 0;
        r->len = n;
    }
    return r;
}

static shmkv_reply *r_int(long long v)
{
    shmkv_reply *r = r_new(SHMKV_REPLY_INTEGER);
    if (r)
        r->integer = v;
    return r;
}

static shmkv_reply *r_array(size_t n)
{
    shmkv_reply *r = r_new(SHMKV_REPLY_ARRAY);
    if (r && n && !(r->element = calloc(n, sizeof *r->element))) {
        free(r);
        return NULL;
    }
    if (r)
        r->elements = n;
    return r;
}

void shmkv_reply_free(shmkv_reply *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->elements; i++)
        shmkv_reply_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

static shmkv_reply *from_hiredis(const redisReply *x)
{
    switch (x->type) {
    case REDIS_REPLY_STRING:
        return r_str(SHMKV_REPLY_STRING, x->str, x->len);
    case REDIS_REPLY_STATUS:
        return r_str(SHMKV_REPLY_STATUS, x->str, x->len);
    case REDIS_REPLY_ERROR:
        return r_str(SHMKV_REPLY_ERROR, x->str, x->len);
    case REDIS_REPLY_INTEGER:
        return r_int(x->integer);
    case REDIS_REPLY_ARRAY: {
        shmkv_reply *r = r_array(x->elements);
        for (size_t i = 0; r && i < x->elements; i++)
            if (!(r->element[i] = from_hiredis(x->element[i]))) {
                shmkv_reply_free(r);
                return NULL;
            }
        return r;
    }
    default:
        return r_new(SHMKV_REPLY_NIL);
    }
}

/* ---- connecting ---- */

/* One request and its reply on a raw socket, collecting any descriptors
 * that come with the reply (SHMKV.ATTACH). Before hiredis owns the socket:
 * hiredis reads with read(), which would drop them. */
static int raw_cmd(int fd, int argc, const char **argv, redisReply **out, int *fds, int *nfds)
{
    char *cmd;
    int n = redisFormatCommandArgv(&cmd, argc, argv, NULL);
    if (n < 0)
        return err(SHMKV_ENOMEM, "out of memory");
    for (int off = 0; off < n;) {
        ssize_t w = send(fd, cmd + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            redisFreeCommand(cmd);
            return err(SHMKV_ECONNECT, "send: %s", strerror(errno));
        }
        off += (int)w;
    }
    redisFreeCommand(cmd);
    redisReader *rd = redisReaderCreate();
    if (!rd)
        return err(SHMKV_ENOMEM, "out of memory");
    int rc = SHMKV_OK;
    void *reply = NULL;
    while (!reply) {
        char buf[4096];
        union {
            char c[CMSG_SPACE(4 * sizeof(int))];
            struct cmsghdr align;
        } u;
        struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
        struct msghdr m = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.c, .msg_controllen = sizeof u.c};
        ssize_t r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = err(SHMKV_ECONNECT, "the daemon closed the connection%s%s", r ? ": " : "",
                     r ? strerror(errno) : "");
            break;
        }
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k; i++) {
                int f;
                memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
                if (fds && *nfds < 2)
                    fds[(*nfds)++] = f;
                else
                    close(f);
            }
        }
        if (redisReaderFeed(rd, buf, (size_t)r) != REDIS_OK ||
            redisReaderGetReply(rd, &reply) != REDIS_OK) {
            rc = err(SHMKV_EPROTO, "protocol error from the daemon");
            break;
        }
    }
    redisReaderFree(rd);
    *out = reply;
    return rc;
}

/* After any change to db, db_unknown or in_multi (under mu). */
static void publish_view(shmkv *h)
{
    unsigned v = h->db | (h->db_unknown || h->in_multi ? VIEW_OFF : 0);
    __atomic_store_n(&h->view, v, __ATOMIC_RELEASE);
}

static void publish_seg(shmkv *h, struct seg *s)
{
    struct seg *old = h->seg;
    __atomic_store_n(&h->seg, s, __ATOMIC_RELEASE);
    if (old) {
        /* Another thread may still be copying from it. */
        old->next = h->retired;
        h->retired = old;
    }
}

/* Maps the daemon's cache, or records why not (never fatal). */
static void attach_locked(shmkv *h, int fd)
{
    const char *argv[] = {"SHMKV.ATTACH"};
    redisReply *r = NULL;
    int fds[2] = {-1, -1}, nfds = 0;
    publish_seg(h, NULL);
    int rc = raw_cmd(fd, 1, argv, &r, fds, &nfds);
    if (rc == SHMKV_OK && r->type == REDIS_REPLY_ERROR) {
        snprintf(h->cache_err, sizeof h->cache_err, "%s", r->str);
    } else if (rc != SHMKV_OK || r->type != REDIS_REPLY_ARRAY || r->elements < 4 || nfds != 2) {
        snprintf(h->cache_err, sizeof h->cache_err, "the daemon did not hand over its cache");
    } else {
        struct seg *s = calloc(1, sizeof *s);
        if (!s) {
            snprintf(h->cache_err, sizeof h->cache_err, "out of memory");
        } else if (shmc_r_attach(&s->r, fds[0], fds[1], h->cache_err, sizeof h->cache_err)) {
            free(s);
        } else {
            h->cache_err[0] = 0;
            const redisReply *slot = r->element[3];
            if (slot->type == REDIS_REPLY_INTEGER && slot->integer >= 0)
                s->ctr = shmc_r_ctr(&s->r, (unsigned)slot->integer);
            publish_seg(h, s);
            COUNT(h, attaches);
        }
    }
    for (int i = 0; i < nfds; i++)
        close(fds[i]); /* the mappings keep the memory */
    if (r)
        freeReplyObject(r);
}

static int connect_locked(shmkv *h)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(h->path) >= sizeof sa.sun_path)
        return err(SHMKV_EINVAL, "socket path too long: %s", h->path);
    strcpy(sa.sun_path, h->path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return err(SHMKV_ECONNECT, "connect %s: %s", h->path, strerror(e));
    }
    if (h->timeout_ms > 0) {
        struct timeval tv = {.tv_sec = h->timeout_ms / 1000,
                             .tv_usec = (h->timeout_ms % 1000) * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    char dbs[16];
    snprintf(dbs, sizeof dbs, "%u", h->db);
    const char *auth[] = {"AUTH", h->password}, *sel[] = {"SELECT", dbs};
    const char *auth_user[] = {"AUTH", h->user, h->password};
    const char *const *steps[] = {h->password ? (h->user ? auth_user : auth) : NULL,
                                  h->db ? sel : NULL};
    for (int i = 0; i < 2; i++) {
        if (!steps[i])
            continue;
        redisReply *r = NULL;
        int rc =
            raw_cmd(fd, steps[i] == auth_user ? 3 : 2, (const char **)steps[i], &r, NULL, NULL);
        if (rc == SHMKV_OK && r->type == REDIS_REPLY_ERROR)
            rc = err(SHMKV_ECONNECT, "%s", r->str);
        if (r)
            freeReplyObject(r);
        if (rc) {
            close(fd);
            return rc;
        }
    }
    if (!h->no_cache)
        attach_locked(h, fd);
    h->ctx = redisConnectFd(fd);
    if (!h->ctx || h->ctx->err) {
        int rc = err(SHMKV_ECONNECT, "hiredis: %s", h->ctx ? h->ctx->errstr : "out of memory");
        redisFree(h->ctx);
        h->ctx = NULL;
        return rc;
    }
    h->db_unknown = h->in_multi = h->queued_select = false;
    publish_view(h);
    return SHMKV_OK;
}

int shmkv_open(shmkv **out, const char *socket_path, const struct shmkv_opts *o)
{
    *out = NULL;
    if (!socket_path)
        return err(SHMKV_EINVAL, "no socket path");
    if (o && o->user && !o->password)
        return err(SHMKV_EINVAL, "a user needs a password (AUTH user password)");
    shmkv *h = calloc(1, sizeof *h);
    if (!h || !(h->path = strdup(socket_path)) ||
        (o && o->password && !(h->password = strdup(o->password))) ||
        (o && o->user && !(h->user = strdup(o->user)))) {
        shmkv_close(h);
        return err(SHMKV_ENOMEM, "out of memory");
    }
    if (o) {
        h->db = o->db;
        h->no_cache = o->no_cache;
        h->timeout_ms = o->timeout_ms;
    }
    if (h->no_cache)
        snprintf(h->cache_err, sizeof h->cache_err, "disabled by the caller");
    pthread_mutex_init(&h->mu, NULL);
    int rc = connect_locked(h);
    if (rc) {
        shmkv_close(h);
        return rc;
    }
    *out = h;
    return SHMKV_OK;
}

void shmkv_close(shmkv *h)
{
    if (!h)
        return;
    if (h->ctx)
        redisFree(h->ctx);
    publish_seg(h, NULL);
    for (struct seg *s = h->retired, *n; s; s = n) {
        n = s->next;
        shmc_r_detach(&s->r);
        free(s);
    }
    pthread_mutex_destroy(&h->mu);
    free(h->path);
    free(h->password);
    free(h->user);
    free(h);
}

void shmkv_stats(const shmkv *h, struct shmkv_stats *st)
{
    st->hits = __atomic_load_n(&h->st.hits, __ATOMIC_RELAXED);
    st->misses = __atomic_load_n(&h->st.misses, __ATOMIC_RELAXED);
    st->retries = __atomic_load_n(&h->st.retries, __ATOMIC_RELAXED);
    st->commands = __atomic_load_n(&h->st.commands, __ATOMIC_RELAXED);
    st->attaches = __atomic_load_n(&h->st.attaches, __ATOMIC_RELAXED);
}

const char *shmkv_cache_error(const shmkv *h)
{
    return h->cache_err[0] ? h->cache_err : NULL;
}

/* ---- the shared-memory path ---- */

/* Tables laid out by hand. */
/* clang-format off */
enum op {
    OP_GET, OP_MGET, OP_EXISTS, OP_TYPE, OP_TTL, OP_PTTL, OP_STRLEN,
    OP_HGET, OP_HMGET, OP_HEXISTS, OP_HLEN,
    OP_SISMEMBER, OP_SMISMEMBER, OP_SCARD,
    OP_ZSCORE, OP_ZMSCORE, OP_ZCARD,
    OP_LLEN, OP_LINDEX,
    OP_HGETALL, OP_HKEYS, OP_HVALS, OP_SMEMBERS, OP_LRANGE, OP_ZRANGE,
};

static const struct {
    const char *name;
    int op, arity, type; /* arity as Redis's: -N is at least N */
} OPS[] = {
    {"get", OP_GET, 2, ENC_TYPE_STRING},        {"mget", OP_MGET, -2, 0},
    {"exists", OP_EXISTS, -2, 0},               {"type", OP_TYPE, 2, 0},
    {"ttl", OP_TTL, 2, 0},                      {"pttl", OP_PTTL, 2, 0},
    {"strlen", OP_STRLEN, 2, ENC_TYPE_STRING},  {"hget", OP_HGET, 3, ENC_TYPE_HASH},
    {"hmget", OP_HMGET, -3, ENC_TYPE_HASH},     {"hexists", OP_HEXISTS, 3, ENC_TYPE_HASH},
    {"hlen", OP_HLEN, 2, ENC_TYPE_HASH},        {"sismember", OP_SISMEMBER, 3, ENC_TYPE_SET},
    {"smismember", OP_SMISMEMBER, -3, ENC_TYPE_SET}, {"scard", OP_SCARD, 2, ENC_TYPE_SET},
    {"zscore", OP_ZSCORE, 3, ENC_TYPE_ZSET},    {"zmscore", OP_ZMSCORE, -3, ENC_TYPE_ZSET},
    {"zcard", OP_ZCARD, 2, ENC_TYPE_ZSET},      {"llen", OP_LLEN, 2, ENC_TYPE_LIST},
    {"lindex", OP_LINDEX, 3, ENC_TYPE_LIST},
    {"hgetall", OP_HGETALL, 2, ENC_TYPE_HASH}, {"hkeys", OP_HKEYS, 2, ENC_TYPE_HASH},
    {"hvals", OP_HVALS, 2, ENC_TYPE_HASH},      {"smembers", OP_SMEMBERS, 2, ENC_TYPE_SET},
    {"lrange", OP_LRANGE, 4, ENC_TYPE_LIST},    {"zrange", OP_ZRANGE, -4, ENC_TYPE_ZSET},
};
/* clang-format on */
#define NOPS (sizeof OPS / sizeof OPS[0])

static int find_op(int argc, const char **argv, const size_t *lens)
{
    for (size_t i = 0; i < NOPS; i++) {
        if (strlen(OPS[i].name) != lens[0] || strncasecmp(OPS[i].name, argv[0], lens[0]))
            continue;
        int a = OPS[i].arity;
        return (a > 0 ? argc == a : argc >= -a) ? (int)i : -1;
    }
    return -1;
}

static uint64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One command's look-ups: the cache key being built, the key's meta record
 * and the last sub record. Values point into the segment (shmc_rtx_peek):
 * they are copied into the reply, and the reply counts only if the read
 * transaction validates. */
struct rd {
    struct shmc_rtx t;
    unsigned db;
    unsigned found, absent; /* keys get_meta found, and found absent, this attempt */
    char *key;
    size_t keycap;
    char kin[256];
    struct enc_meta m;
    const char *ukey;
    size_t uklen;
    uint16_t slot;
    const char *val;
    size_t vlen;
};

static void rd_init(struct rd *rd, unsigned db)
{
    rd->db = db;
    rd->key = rd->kin;
    rd->keycap = sizeof rd->kin;
}

static void rd_free(struct rd *rd)
{
    if (rd->key != rd->kin)
        free(rd->key);
}

static bool key_room(struct rd *rd, size_t n)
{
    if (n <= rd->keycap)
        return true;
    char *p = rd->key == rd->kin ? malloc(n) : realloc(rd->key, n);
    if (!p)
        return false;
    rd->key = p;
    rd->keycap = n;
    return true;
}

/* Looks up key's meta record into rd->m: SHMC_HIT (present, unexpired),
 * SHMC_NEG (absent), SHMC_MISS or SHMC_RETRY. */
static int get_meta(struct rd *rd, const char *key, size_t klen)
{
    size_t n = 1 + enc_meta_key_len(klen);
    if (!key_room(rd, n))
        return SHMC_RETRY;
    rd->ukey = key;
    rd->uklen = klen;
    rd->slot = enc_slot(key, klen);
    rd->key[0] = ENC_CACHE_META;
    enc_meta_key(rd->key + 1, rd->db, rd->slot, key, klen);
    const char *v;
    size_t vn;
    int rc = shmc_rtx_peek(&rd->t, rd->key, n, &v, &vn);
    if (rc == SHMC_HIT && enc_meta_value_decode(v, vn, &rd->m) != 0)
        return SHMC_RETRY; /* torn: validation would fail anyway */
    rd->found += rc == SHMC_HIT;
    rd->absent += rc == SHMC_NEG;
    return rc;
}

/* Looks up a sub record (field) of the key get_meta() found. */
static int get_sub(struct rd *rd, const char *f, size_t fn)
{
    if (rd->m.coding == ENC_CODING_INLINE) { /* every field is in the meta record */
        int rc = enc_inline_find(rd->m.inl, rd->m.inln, f, fn, &rd->val, &rd->vlen);
        return rc == 1 ? SHMC_HIT : rc == 0 ? SHMC_NEG : SHMC_RETRY;
    }
    size_t plen = enc_sub_prefix_len(rd->uklen), n = 1 + plen + fn;
    if (!key_room(rd, n))
        return SHMC_RETRY;
    rd->key[0] = ENC_CACHE_SUB;
    enc_sub_prefix(rd->key + 1, rd->db, rd->slot, rd->ukey, rd->uklen, rd->m.version);
    if (fn)
        memcpy(rd->key + 1 + plen, f, fn);
    return shmc_rtx_peek(&rd->t, rd->key, n, &rd->val, &rd->vlen);
}

static const char *type_name(int t)
{
    static const char *const names[] = {"none", "string", "hash", "set", "zset", "list"};
    return t >= 0 && t <= ENC_TYPE_LIST ? names[t] : "none";
}

/* A field's reply for HGET/HMGET/SISMEMBER/SMISMEMBER/ZSCORE/ZMSCORE/
 * HEXISTS; NULL with *miss set when the daemon must answer. */
static shmkv_reply *field_reply(struct rd *rd, int op, const char *f, size_t fn, bool *miss,
                                bool *retry)
{
    int rc = get_sub(rd, f, fn);
    if (rc == SHMC_RETRY || rc == SHMC_MISS) {
        *retry = rc == SHMC_RETRY;
        *miss = rc == SHMC_MISS;
        return NULL;
    }
    bool hit = rc == SHMC_HIT;
    switch (op) {
    case OP_HGET:
    case OP_HMGET:
        return hit ? r_str(SHMKV_REPLY_STRING, rd->val, rd->vlen) : r_new(SHMKV_REPLY_NIL);
    case OP_ZSCORE:
    case OP_ZMSCORE: {
        if (!hit)
            return r_new(SHMKV_REPLY_NIL);
        if (rd->vlen != 8) {
            *retry = true;
            return NULL;
        }
        char s[KV_DSTR_MAX];
        size_t n = kv_d2str(s, sizeof s, enc_score_get(rd->val));
        return r_str(SHMKV_REPLY_STRING, s, n);
    }
    default: /* HEXISTS, SISMEMBER, SMISMEMBER */
        return r_int(hit);
    }
}

/* Redis's range of a collection of n elements from start and stop (either
 * may count from the end): false when it is empty, else [*lo, *hi]. */
static bool index_range(int64_t start, int64_t stop, uint64_t n, uint64_t *lo, uint64_t *hi)
{
    int64_t len = (int64_t)n;
    if (start < 0)
        start += len;
    if (stop < 0)
        stop += len;
    if (start < 0)
        start = 0;
    if (start > stop || start >= len)
        return false;
    if (stop >= len)
        stop = len - 1;
    *lo = (uint64_t)start;
    *hi = (uint64_t)stop;
    return true;
}

/* A sorted-set member of an inline set, for ZRANGE's order. */
struct zm {
    double score;
    const char *m;
    size_t n;
};

static int zm_cmp(const void *x, const void *y)
{
    const struct zm *a = x, *b = y;
    if (a->score != b->score)
        return a->score < b->score ? -1 : 1;
    int c = memcmp(a->m, b->m, a->n < b->n ? a->n : b->n);
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

/* ZRANGE's reply over the members of an inline set (members and their
 * scores in zm[0, n)), from lo to hi by (score, member). */
static shmkv_reply *zrange_reply(struct zm *zm, size_t n, uint64_t lo, uint64_t hi, bool scores)
{
    qsort(zm, n, sizeof *zm, zm_cmp);
    size_t k = (size_t)(hi - lo + 1);
    shmkv_reply *r = r_array(scores ? 2 * k : k);
    for (size_t i = 0, j = 0; r && i < k; i++) {
        const struct zm *z = &zm[lo + i];
        if (!(r->element[j++] = r_str(SHMKV_REPLY_STRING, z->m, z->n)))
            goto fail;
        if (scores) {
            char d[KV_DSTR_MAX];
            size_t dn = kv_d2str(d, sizeof d, z->score);
            if (!(r->element[j++] = r_str(SHMKV_REPLY_STRING, d, dn)))
                goto fail;
        }
    }
    return r;
fail:
    shmkv_reply_free(r);
    return NULL;
}

/* HGETALL, HKEYS, HVALS, SMEMBERS, LRANGE, ZRANGE (by index) of the key
 * get_meta() found, from its inline record: 1 with *out, 0 when the daemon
 * must answer (a collection stored per element, an option served only
 * there), -1 to try again (a record that does not parse: torn). Elements
 * come in the order the daemon gives them: sub-key order, which is a list's
 * order, and (score, member) for ZRANGE. */
static int whole_reply(struct rd *rd, int op, bool absent, int argc, const char **argv,
                       const size_t *lens, shmkv_reply **out)
{
    int64_t start = 0, stop = -1;
    bool scores = false;
    if (op == OP_LRANGE || op == OP_ZRANGE) {
        if (kv_str2ll(argv[2], lens[2], &start) || kv_str2ll(argv[3], lens[3], &stop))
            return 0; /* not integers: the daemon's error */
        if (op == OP_ZRANGE && argc > 4) {
            scores = argc == 5 && lens[4] == 10 && !strncasecmp(argv[4], "withscores", 10);
            if (!scores)
                return 0; /* BYSCORE, BYLEX, REV, LIMIT */
        }
    }
    /* Stored per element (a blind collection's size is not even kept):
     * the daemon answers. */
    if (!absent && rd->m.coding != ENC_CODING_INLINE)
        return 0;
    uint64_t n = absent ? 0 : rd->m.size, lo = 0, hi = 0;
    bool ranged = op == OP_LRANGE || op == OP_ZRANGE;
    if (absent || (ranged && !index_range(start, stop, n, &lo, &hi)) || n == 0) {
        *out = r_array(0);
        return *out ? 1 : 0;
    }
    if (n > rd->m.inln)
        return -1; /* more elements than bytes: a torn size */
    if (!ranged) {
        lo = 0;
        hi = n - 1;
    }
    size_t per = op == OP_HGETALL ? 2 : 1;
    struct zm *zm = NULL;
    /* ZRANGE sorts: it works on a private copy of the record, so that
     * the comparisons see bytes no writer changes meanwhile (qsort needs
     * a consistent order); the copy is validated with the rest. */
    const char *inl = rd->m.inl;
    char *copy = NULL;
    if (op == OP_ZRANGE) {
        zm = malloc((size_t)n * sizeof *zm);
        copy = malloc(rd->m.inln);
        if (!zm || !copy) {
            free(zm);
            free(copy);
            return 0;
        }
        memcpy(copy, rd->m.inl, rd->m.inln);
        inl = copy;
    }
    shmkv_reply *r = op == OP_ZRANGE ? NULL : r_array((size_t)(hi - lo + 1) * per);
    size_t off = 0, j = 0;
    uint64_t i = 0;
    const char *f, *v;
    size_t fn, vn;
    int rc = 0;
    bool torn = false;
    while ((op == OP_ZRANGE || r) &&
           (rc = enc_inline_next(inl, rd->m.inln, &off, &f, &fn, &v, &vn)) == 1) {
        if (i >= n || (op == OP_ZRANGE && (vn != 8 || isnan(enc_score_get(v))))) {
            torn = true; /* more records than the size says, a score that is not one */
            break;
        }
        if (op == OP_ZRANGE) {
            zm[i++] = (struct zm){enc_score_get(v), f, fn};
            continue;
        }
        if (i < lo || i > hi) {
            i++;
            continue;
        }
        i++;
        bool ok = true;
        if (op != OP_HVALS && op != OP_LRANGE)
            ok = (r->element[j++] = r_str(SHMKV_REPLY_STRING, f, fn)) != NULL;
        if (ok && (op == OP_HGETALL || op == OP_HVALS || op == OP_LRANGE))
            ok = (r->element[j++] = r_str(SHMKV_REPLY_STRING, v, vn)) != NULL;
        if (!ok) {
            shmkv_reply_free(r);
            return 0; /* not ZRANGE: nothing else to free */
        }
    }
    if (torn || rc < 0 || i != n || (op != OP_ZRANGE && (!r || j != r->elements))) {
        int again = r || op == OP_ZRANGE ? -1 : 0; /* torn, or out of memory */
        shmkv_reply_free(r);
        free(zm);
        free(copy);
        return again;
    }
    if (op == OP_ZRANGE)
        r = zrange_reply(zm, (size_t)n, lo, hi, scores);
    free(zm);
    free(copy);
    *out = r;
    return r ? 1 : 0;
}

/* Answers one cacheable command from the cache: 1 with *out, 0 when the
 * daemon must answer (a miss, another type, an argument to check), -1 to
 * try again. */
static int cached_once(struct rd *rd, int op, int want, int argc, const char **argv,
                       const size_t *lens, shmkv_reply **out)
{
    shmkv_reply *r = NULL;
    bool miss = false, retry = false;
    int rc;
    switch (op) {
    case OP_MGET:
    case OP_EXISTS: {
        long long found = 0;
        if (op == OP_MGET && !(r = r_array((size_t)argc - 1)))
            miss = true;
        for (int i = 1; i < argc && !miss && !retry; i++) {
            rc = get_meta(rd, argv[i], lens[i]);
            miss = rc == SHMC_MISS;
            retry = rc == SHMC_RETRY;
            if (miss || retry)
                break;
            found += rc == SHMC_HIT;
            if (op == OP_MGET) {
                bool str = rc == SHMC_HIT && rd->m.type == ENC_TYPE_STRING;
                r->element[i - 1] = str ? r_str(SHMKV_REPLY_STRING, rd->m.value, rd->m.vlen)
                                        : r_new(SHMKV_REPLY_NIL);
                miss = !r->element[i - 1];
            }
        }
        if (op == OP_EXISTS)
            r = r_int(found);
        break;
    }
    default:
        rc = get_meta(rd, argv[1], lens[1]);
        if (rc == SHMC_MISS || rc == SHMC_RETRY) {
            miss = rc == SHMC_MISS;
            retry = rc == SHMC_RETRY;
            break;
        }
        bool absent = rc == SHMC_NEG;
        if (!absent && want && rd->m.type != want) {
            miss = true; /* WRONGTYPE: the daemon words it */
            break;
        }
        if (!absent && (op == OP_HLEN || op == OP_SCARD) && rd->m.coding == ENC_CODING_BLIND) {
            miss = true; /* a blind collection is counted by scan */
            break;
        }
        switch (op) {
        case OP_GET:
            r = absent ? r_new(SHMKV_REPLY_NIL)
                       : r_str(SHMKV_REPLY_STRING, rd->m.value, rd->m.vlen);
            break;
        case OP_STRLEN:
            r = r_int(absent ? 0 : (long long)rd->m.vlen);
            break;
        case OP_TYPE: {
            const char *t = type_name(absent ? 0 : rd->m.type);
            r = r_str(SHMKV_REPLY_STATUS, t, strlen(t));
            break;
        }
        case OP_TTL:
        case OP_PTTL: {
            long long v = absent ? -2 : -1;
            if (!absent && rd->m.expire_ms) {
                long long left = (long long)rd->m.expire_ms - (long long)clock_ms(CLOCK_REALTIME);
                if (left < 0)
                    left = 0;
                v = op == OP_PTTL ? left : (left + 500) / 1000;
            }
            r = r_int(v);
            break;
        }
        case OP_HLEN:
        case OP_SCARD:
        case OP_ZCARD:
        case OP_LLEN:
            r = r_int(absent ? 0 : (long long)rd->m.size);
            break;
        case OP_LINDEX: {
            int64_t idx;
            if (kv_str2ll(argv[2], lens[2], &idx) != 0) {
                miss = true; /* not an integer: the daemon's error */
                break;
            }
            if (absent) {
                r = r_new(SHMKV_REPLY_NIL);
                break;
            }
            if (idx < 0)
                idx += (int64_t)rd->m.size;
            if (idx < 0 || (uint64_t)idx >= rd->m.size) {
                r = r_new(SHMKV_REPLY_NIL);
                break;
            }
            char pos[8];
            enc_put_u64(pos, rd->m.head + (uint64_t)idx);
            rc = get_sub(rd, pos, 8);
            if (rc == SHMC_HIT)
                r = r_str(SHMKV_REPLY_STRING, rd->val, rd->vlen);
            else if (rc == SHMC_RETRY)
                retry = true;
            else
                miss = true;
            break;
        }
        case OP_HGETALL:
        case OP_HKEYS:
        case OP_HVALS:
        case OP_SMEMBERS:
        case OP_LRANGE:
        case OP_ZRANGE:
            rc = whole_reply(rd, op, absent, argc, argv, lens, &r);
            miss = rc == 0;
            retry = rc < 0;
            break;
        case OP_HGET:
        case OP_HEXISTS:
        case OP_SISMEMBER:
        case OP_ZSCORE:
            r = absent ? (op == OP_HGET || op == OP_ZSCORE ? r_new(SHMKV_REPLY_NIL) : r_int(0))
                       : field_reply(rd, op, argv[2], lens[2], &miss, &retry);
            break;
        default: { /* HMGET, SMISMEMBER, ZMSCORE */
            if (!(r = r_array((size_t)argc - 2)))
                break;
            for (int i = 2; i < argc && !miss && !retry; i++) {
                shmkv_reply *e = absent ? (op == OP_SMISMEMBER ? r_int(0) : r_new(SHMKV_REPLY_NIL))
                                        : field_reply(rd, op, argv[i], lens[i], &miss, &retry);
                r->element[i - 2] = e;
                if (!e && !retry)
                    miss = true;
            }
        }
        }
    }
    if (shmc_rtx_end(&rd->t) != 0)
        retry = true;
    if (miss || retry || !r) {
        shmkv_reply_free(r);
        return retry ? -1 : 0;
    }
    *out = r;
    return 1;
}

/* The segment to read and the database to read it in, or NULL. */
static struct seg *live_seg(shmkv *h, unsigned *db)
{
    unsigned v = __atomic_load_n(&h->view, __ATOMIC_ACQUIRE);
    if (v & VIEW_OFF)
        return NULL;
    *db = v;
    struct seg *s = __atomic_load_n(&h->seg, __ATOMIC_ACQUIRE);
    if (!s || !shmc_r_alive(&s->r, clock_ms(CLOCK_MONOTONIC_COARSE)))
        return NULL;
    return s;
}

static int try_cached(shmkv *h, int i, int argc, const char **argv, const size_t *lens,
                      shmkv_reply **out)
{
    unsigned db, group;
    uint32_t mapseq;
    struct seg *s = live_seg(h, &db);
    if (!s)
        return 0;
    struct rd rd;
    rd_init(&rd, db);
    int rc = 0;
    for (int attempt = 0; attempt < RETRIES; attempt++) {
        /* The stored database the selected one is (SWAPDB), unchanged
         * from before the transaction to after it. */
        if (!shmc_r_dbmap(&s->r, db, &group, &mapseq)) {
            rc = -1;
        } else {
            rd.db = group;
            shmc_rtx_begin(&rd.t, &s->r, group);
            rd.found = rd.absent = 0;
            rc = cached_once(&rd, OPS[i].op, OPS[i].type, argc, argv, lens, out);
            if (rc == 1 && !shmc_r_dbmap_same(&s->r, mapseq)) {
                shmkv_reply_free(*out);
                *out = NULL;
                rc = -1;
            }
        }
        if (rc >= 0)
            break;
        COUNT(h, retries);
        SLOT_ADD(s, retries, 1);
        rc = 0;
    }
    rd_free(&rd);
    if (rc == 1) {
        SLOT_ADD(s, hits, 1);
        SLOT_ADD(s, key_hits, rd.found);
        SLOT_ADD(s, key_misses, rd.absent);
    } else {
        SLOT_ADD(s, misses, 1);
    }
    return rc;
}

/* ---- the socket path ---- */

static bool is_cmd(const char *a, size_t n, const char *name)
{
    return strlen(name) == n && strncasecmp(a, name, n) == 0;
}

/* Keeps the handle's view of the connection (database, MULTI) in step with
 * what the daemon just did. */
static void track(shmkv *h, int argc, const char **argv, const size_t *lens, const redisReply *r)
{
    bool ok = r->type != REDIS_REPLY_ERROR;
    const char *c = argv[0];
    size_t n = lens[0];
    if (is_cmd(c, n, "multi") && ok) {
        h->in_multi = true;
    } else if (is_cmd(c, n, "exec") || is_cmd(c, n, "discard")) {
        if (h->queued_select && is_cmd(c, n, "exec") && r->type == REDIS_REPLY_ARRAY)
            h->db_unknown = true;
        h->in_multi = h->queued_select = false;
    } else if (is_cmd(c, n, "select") && argc == 2) {
        if (h->in_multi) {
            h->queued_select = true;
        } else if (ok) {
            int64_t v;
            if (kv_str2ll(argv[1], lens[1], &v) == 0 && v >= 0) {
                h->db = (unsigned)v;
                h->db_unknown = false;
            }
        }
    } else if (is_cmd(c, n, "reset") && ok) {
        h->db = 0;
        h->db_unknown = h->in_multi = h->queued_select = false;
    }
    publish_view(h);
}

/* hiredis writes with write(): a daemon gone away would raise SIGPIPE and
 * kill the caller's process. Block it around the call and take back one
 * it raised, leaving one that was already pending alone. */
struct nopipe {
    sigset_t old;
    bool pending;
};

static void nopipe_begin(struct nopipe *np)
{
    sigset_t set, pend;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigpending(&pend);
    np->pending = sigismember(&pend, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &np->old);
}

static void nopipe_end(struct nopipe *np)
{
    sigset_t set, pend;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigpending(&pend);
    if (!np->pending && sigismember(&pend, SIGPIPE)) {
        struct timespec zero = {0, 0};
        sigtimedwait(&set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &np->old, NULL);
}

static int via_socket(shmkv *h, int argc, const char **argv, const size_t *lens, bool retry_safe,
                      shmkv_reply **out)
{
    pthread_mutex_lock(&h->mu);
    int rc = SHMKV_OK;
    for (int attempt = 0;; attempt++) {
        if (!h->ctx && (rc = connect_locked(h)) != SHMKV_OK)
            break;
        struct nopipe np;
        nopipe_begin(&np);
        redisReply *r = redisCommandArgv(h->ctx, argc, argv, lens);
        nopipe_end(&np);
        COUNT(h, commands);
        if (r) {
            track(h, argc, argv, lens, r);
            *out = from_hiredis(r);
            freeReplyObject(r);
            rc = *out ? SHMKV_OK : err(SHMKV_ENOMEM, "out of memory");
            break;
        }
        rc = err(SHMKV_EIO, "%s", h->ctx->errstr[0] ? h->ctx->errstr : "connection lost");
        redisFree(h->ctx);
        h->ctx = NULL;
        /* A read can be sent again on a new connection (a restarted
         * daemon); a write might have run, so its caller decides. */
        if (!retry_safe || attempt == 1)
            break;
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int shmkv_command(shmkv *h, shmkv_reply **out, int argc, const char **argv, const size_t *argvlen)
{
    *out = NULL;
    if (!h || argc < 1 || !argv)
        return err(SHMKV_EINVAL, "no command");
    size_t stack[16], *lens = stack;
    if (!argvlen) {
        if (argc > 16 && !(lens = malloc((size_t)argc * sizeof *lens)))
            return err(SHMKV_ENOMEM, "out of memory");
        for (int i = 0; i < argc; i++)
            lens[i] = strlen(argv[i]);
    } else {
        lens = (size_t *)argvlen;
    }
    int i = find_op(argc, argv, lens), rc;
    if (i >= 0 && try_cached(h, i, argc, argv, lens, out) == 1) {
        COUNT(h, hits);
        rc = SHMKV_OK;
    } else {
        if (i >= 0)
            COUNT(h, misses);
        rc = via_socket(h, argc, argv, lens, i >= 0, out);
    }
    if (lens != stack && lens != argvlen)
        free(lens);
    return rc;
}

/* GET from the cache straight into the caller's buffer, no reply object:
 * 1 (*val set, or NULL for a missing key), or 0 for the daemon. */
static int get_cached(shmkv *h, const char *key, size_t klen, char **val, size_t *vlen)
{
    unsigned db;
    struct seg *s = live_seg(h, &db);
    if (!s)
        return 0;
    struct rd rd;
    rd_init(&rd, db);
    int served = 0;
    for (int attempt = 0; attempt < RETRIES && !served; attempt++) {
        unsigned group;
        uint32_t mapseq;
        if (!shmc_r_dbmap(&s->r, db, &group, &mapseq)) { /* SWAPDB under way */
            COUNT(h, retries);
            SLOT_ADD(s, retries, 1);
            continue;
        }
        rd.db = group;
        shmc_rtx_begin(&rd.t, &s->r, group);
        rd.found = rd.absent = 0;
        int rc = get_meta(&rd, key, klen);
        char *v = NULL;
        if (rc == SHMC_HIT && rd.m.type == ENC_TYPE_STRING) {
            if (!(v = malloc(rd.m.vlen + 1))) {
                shmc_rtx_end(&rd.t);
                break;
            }
            memcpy(v, rd.m.value, rd.m.vlen);
            v[rd.m.vlen] = 0;
        }
        bool valid =
            shmc_rtx_end(&rd.t) == 0 && rc != SHMC_RETRY && shmc_r_dbmap_same(&s->r, mapseq);
        if (valid && (rc == SHMC_NEG || v)) {
            *val = v;
            *vlen = v ? rd.m.vlen : 0;
            served = 1;
        } else {
            free(v);
            if (valid)
                break; /* a miss, or another type: the daemon answers */
            COUNT(h, retries);
            SLOT_ADD(s, retries, 1);
        }
    }
    rd_free(&rd);
    if (served) { /* a miss is counted by shmkv_command, which GET then goes through */
        SLOT_ADD(s, hits, 1);
        SLOT_ADD(s, key_hits, rd.found);
        SLOT_ADD(s, key_misses, rd.absent);
    }
    return served;
}

int shmkv_get(shmkv *h, const void *key, size_t klen, char **val, size_t *vlen)
{
    *val = NULL;
    *vlen = 0;
    if (h && get_cached(h, key, klen, val, vlen)) {
        COUNT(h, hits);
        return *val ? SHMKV_OK : SHMKV_NIL;
    }
    const char *argv[2] = {"GET", key};
    size_t lens[2] = {3, klen};
    shmkv_reply *r;
    int rc = shmkv_command(h, &r, 2, argv, lens);
    if (rc)
        return rc;
    switch (r->type) {
    case SHMKV_REPLY_STRING:
        *val = r->str; /* hand the buffer over: no second copy */
        *vlen = r->len;
        r->str = NULL;
        break;
    case SHMKV_REPLY_NIL:
        rc = SHMKV_NIL;
        break;
    case SHMKV_REPLY_ERROR:
        rc = err(SHMKV_EREPLY, "%s", r->str);
        break;
    default:
        rc = err(SHMKV_EPROTO, "unexpected reply to GET");
    }
    shmkv_reply_free(r);
    return rc;
}
