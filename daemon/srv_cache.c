/*
 * srv_cache — coherence between storage/ and shm/ (see srv_cache.h).
 *
 * A cached record's key is cf(1) | the encoded RocksDB key, so meta and sub
 * records never collide; its group is the database (the encoded key's first
 * byte), which FLUSHDB drops at once. The score index is not cached: no
 * local read needs it.
 */
#include "srv_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <ck_pr.h>

#include "shmc_w.h"
#include "srv.h"
#include "kv_mem.h"

static struct {
    pthread_t beat;
    bool beating;
    int stop;
    char *key; /* scratch for cf | key */
    size_t keycap;
    uint64_t fills, fills_absent, applied_sets;
} cs;

/* The counter slots' owners. A freed slot goes to the back of a FIFO, so
 * a handle whose connection dropped and that still counts into its old
 * slot for a moment (until it re-attaches) does not count into a new
 * owner's. base: the counts at the owner's start or the last RESETSTAT. */
static struct {
    struct owner {
        bool used;
        int pid;
        uint64_t conn_id, since_ms;
        struct shmc_ctr base;
    } o[SHMC_CTR_SLOTS];
    unsigned fifo[SHMC_CTR_SLOTS], head, nfree;
    struct shmc_ctr departed; /* the counts of handles gone since start or RESETSTAT */
} sl;

static uint64_t mono_coarse_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The lease is kept by its own thread, so a long command on the loop does
 * not make every client fall back to the socket. It dies with the process,
 * which is the point. */
static void *beat_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "shmkv-lease");
    struct timespec pause = {.tv_nsec = SRV_CACHE_LEASE_MS / 10 * 1000000L};
    while (!ck_pr_load_int(&cs.stop)) {
        shmc_w_beat(srv.cache, mono_coarse_ms());
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static const char *cache_key(int cf, const char *k, size_t kn, size_t *n)
{
    if (kn + 1 > cs.keycap) {
        cs.keycap = kn + 64;
        cs.key = kv_xrealloc(cs.key, cs.keycap);
    }
    cs.key[0] = (char)(cf == STOR_CF_META ? ENC_CACHE_META : ENC_CACHE_SUB);
    memcpy(cs.key + 1, k, kn);
    *n = kn + 1;
    return cs.key;
}

/* A look-up as db.cache_get (count: an access, in the statistics) or
 * db.cache_peek wants it. */
static int lookup(int cf, const char *k, size_t kn, const char **v, size_t *vn, bool count)
{
    if (!kn)
        return DB_CACHE_MISS;
    size_t n;
    const char *ck = cache_key(cf, k, kn, &n);
    unsigned g = (unsigned char)k[0];
    switch (count ? shmc_w_get(srv.cache, g, ck, n, v, vn)
                  : shmc_w_peek(srv.cache, g, ck, n, v, vn)) {
    case SHMC_W_HIT:
        return DB_CACHE_HIT;
    case SHMC_W_NEG:
        return DB_CACHE_ABSENT;
    default:
        return DB_CACHE_MISS;
    }
}

static int hook_get(void *arg, int cf, const char *k, size_t kn, const char **v, size_t *vn)
{
    (void)arg;
    return lookup(cf, k, kn, v, vn, true);
}

static int hook_peek(void *arg, int cf, const char *k, size_t kn, const char **v, size_t *vn)
{
    (void)arg;
    return lookup(cf, k, kn, v, vn, false);
}

static uint64_t hook_prefetch1(void *arg, int cf, const char *k, size_t kn, size_t *ckn)
{
    (void)arg;
    const char *ck = cache_key(cf, k, kn, ckn);
    return shmc_w_prefetch(srv.cache, ck, *ckn);
}

static int hook_prefetch2(void *arg, uint64_t hash, size_t ckn)
{
    (void)arg;
    return shmc_w_prefetch_rec(srv.cache, hash, ckn);
}

static uint64_t expiry_of(int cf, const char *v, size_t vn)
{
    uint8_t type;
    uint64_t exp = 0;
    if (cf == STOR_CF_META && enc_meta_peek(v, vn, &type, &exp) != 0)
        exp = 0;
    return exp;
}

static void hook_fill(void *arg, int cf, const char *k, size_t kn, const char *v, size_t vn)
{
    (void)arg;
    if (!kn)
        return;
    size_t n;
    const char *ck = cache_key(cf, k, kn, &n);
    unsigned g = (unsigned char)k[0];
    shmc_w_begin(srv.cache);
    if (v) {
        shmc_w_put(srv.cache, g, ck, n, v, vn, expiry_of(cf, v, vn));
        cs.fills++;
    } else {
        shmc_w_put_neg(srv.cache, g, ck, n);
        cs.fills_absent++;
    }
    shmc_w_end(srv.cache);
}

void srv_cache_apply(const struct stor_batch *b)
{
    if (!srv.cache)
        return;
    shmc_w_begin(srv.cache);
    for (size_t i = 0; i < b->nops; i++) {
        const struct stor_op *op = &b->ops[i];
        const char *k = stor_op_key(b, op);
        if (op->cf == STOR_CF_EXPIRY)
            continue; /* an index, never read by the shm readers */
        if (op->kind == STOR_OP_DELRANGE) {
            /* FLUSHDB / FLUSHALL: [lo db, hi db] by their first bytes. */
            unsigned lo = (unsigned char)k[0];
            unsigned hi = op->vlen ? (unsigned char)stor_op_value(b, op)[0] : lo;
            for (unsigned g = lo; g <= hi && g < SHMC_GROUPS; g++)
                shmc_w_drop_group(srv.cache, g);
            continue;
        }
        if ((op->cf != STOR_CF_META && op->cf != STOR_CF_SUB) || !op->klen)
            continue; /* the score and rank indexes are not cached */
        if (op->cf == STOR_CF_META && op->klen >= 3 && (unsigned char)k[1] == 0xff)
            continue; /* the daemon's own record (db_aux_put): slot ffff, no user key's */
        size_t n;
        const char *ck = cache_key(op->cf, k, op->klen, &n);
        unsigned g = (unsigned char)k[0];
        if (op->kind == STOR_OP_PUT) {
            const char *v = stor_op_value(b, op);
            uint64_t exp = expiry_of(op->cf, v, op->vlen);
            if (op->cold)
                shmc_w_refresh(srv.cache, g, ck, n, v, op->vlen, exp);
            else
                shmc_w_put(srv.cache, g, ck, n, v, op->vlen, exp);
        } else {
            shmc_w_deleted(srv.cache, g, ck, n);
        }
    }
    cs.applied_sets++;
    shmc_w_end(srv.cache);
}

int srv_cache_open(void)
{
    /* Storage is open, so its lock is ours and any previous daemon is
     * dead; its heartbeat stopped at the latest now. */
    struct timespec wait = {.tv_nsec = SRV_CACHE_LEASE_MS * 1000000L};
    nanosleep(&wait, NULL);
    if (srv.conf.shm_cache_bytes <= 0)
        return 0;
    struct shmc_w_opts o = {.size = (size_t)srv.conf.shm_cache_bytes,
                            .max_record = (size_t)srv.conf.shm_max_record,
                            .socket_path = srv.conf.unixsocket,
                            .lease_ms = SRV_CACHE_LEASE_MS,
                            .huge_pages = srv.conf.shm_huge_pages != 0};
    char err[256];
    if (shmc_w_create(&srv.cache, &o, err, sizeof err) != 0) {
        srv_log(LOG_WARNING, "%s", err);
        return -1;
    }
    shmc_w_beat(srv.cache, mono_coarse_ms());
    cs.stop = 0;
    if (pthread_create(&cs.beat, NULL, beat_main, NULL) != 0) {
        srv_log(LOG_WARNING, "cannot start the shm cache heartbeat");
        shmc_w_destroy(srv.cache);
        srv.cache = NULL;
        return -1;
    }
    cs.beating = true;
    sl.head = 0;
    sl.nfree = SHMC_CTR_SLOTS;
    for (unsigned i = 0; i < SHMC_CTR_SLOTS; i++)
        sl.fifo[i] = i;
    static const struct db_cache_ops hooks = {.get = hook_get,
                                              .peek = hook_peek,
                                              .fill = hook_fill,
                                              .prefetch1 = hook_prefetch1,
                                              .prefetch2 = hook_prefetch2};
    shmc_w_dbmap(srv.cache, srv_dbmap);
    db_set_cache(srv.db, &hooks, NULL);
    const struct shmc_hdr *h = shmc_w_hdr(srv.cache);
    srv_log(LOG_NOTICE, "shm cache: %llu bytes, %u buckets, records up to %u bytes",
            (unsigned long long)h->seg_size, h->nbuckets, h->max_record);
    return 0;
}

void srv_cache_close(void)
{
    if (srv.cache)
        shmc_w_close(srv.cache);
}

void srv_cache_destroy(void)
{
    if (cs.beating) {
        ck_pr_store_int(&cs.stop, 1);
        pthread_join(cs.beat, NULL);
        cs.beating = false;
    }
    if (srv.db)
        db_set_cache(srv.db, NULL, NULL);
    shmc_w_destroy(srv.cache);
    srv.cache = NULL;
    free(cs.key);
    cs.key = NULL;
    cs.keycap = 0;
}

void srv_cache_dbmap(void)
{
    if (srv.cache)
        shmc_w_dbmap(srv.cache, srv_dbmap);
}

void srv_cache_begin(void)
{
    if (srv.cache)
        shmc_w_begin(srv.cache);
}

void srv_cache_end(void)
{
    if (srv.cache)
        shmc_w_end(srv.cache);
}

void srv_cache_resetstat(void)
{
    cs.fills = cs.fills_absent = cs.applied_sets = 0;
    if (!srv.cache)
        return;
    shmc_w_stats_reset(srv.cache);
    memset(&sl.departed, 0, sizeof sl.departed);
    for (unsigned i = 0; i < SHMC_CTR_SLOTS; i++)
        if (sl.o[i].used)
            shmc_w_ctr_read(srv.cache, i, &sl.o[i].base);
}

/* ---- local reads' counters ---- */

/* Slot i's counts since its base, added to *sum. */
static void slot_add(unsigned i, struct shmc_ctr *sum)
{
    struct shmc_ctr c;
    const struct shmc_ctr *b = &sl.o[i].base;
    shmc_w_ctr_read(srv.cache, i, &c);
    sum->hits += c.hits - b->hits;
    sum->misses += c.misses - b->misses;
    sum->retries += c.retries - b->retries;
    sum->key_hits += c.key_hits - b->key_hits;
    sum->key_misses += c.key_misses - b->key_misses;
}

int srv_cache_claim(struct conn *c)
{
    srv_cache_release(c);
    if (!srv.cache || !sl.nfree)
        return -1;
    unsigned i = sl.fifo[sl.head];
    sl.head = (sl.head + 1) % SHMC_CTR_SLOTS;
    sl.nfree--;
    shmc_w_ctr_clear(srv.cache, i);
    struct ucred cred = {0};
    socklen_t len = sizeof cred;
    if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        cred.pid = 0;
    sl.o[i] = (struct owner){
        .used = true, .pid = (int)cred.pid, .conn_id = c->id, .since_ms = srv_mstime()};
    c->shm_slot = i + 1;
    return (int)i;
}

void srv_cache_release(struct conn *c)
{
    if (!c->shm_slot || !srv.cache)
        return;
    unsigned i = c->shm_slot - 1;
    c->shm_slot = 0;
    slot_add(i, &sl.departed);
    sl.o[i].used = false;
    sl.fifo[(sl.head + sl.nfree) % SHMC_CTR_SLOTS] = i;
    sl.nfree++;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void srv_cache_local(struct srv_cache_local *out)
{
    memset(out, 0, sizeof *out);
    if (!srv.cache)
        return;
    struct shmc_ctr sum = sl.departed;
    int pids[SHMC_CTR_SLOTS];
    for (unsigned i = 0; i < SHMC_CTR_SLOTS; i++) {
        if (!sl.o[i].used)
            continue;
        slot_add(i, &sum);
        pids[out->handles++] = sl.o[i].pid;
    }
    qsort(pids, out->handles, sizeof *pids, cmp_int);
    for (size_t i = 0; i < out->handles; i++)
        out->processes += i == 0 || pids[i] != pids[i - 1];
    out->hits = sum.hits;
    out->misses = sum.misses;
    out->retries = sum.retries;
    out->key_hits = sum.key_hits;
    out->key_misses = sum.key_misses;
}

void srv_cache_local_info(struct resp_buf *out)
{
    struct srv_cache_local l;
    srv_cache_local(&l);
    resp_buf_printf(out, "shm_attached_processes:%zu\r\n", l.processes);
    resp_buf_printf(out, "shm_attached_handles:%zu\r\n", l.handles);
    resp_buf_printf(out, "shm_local_hits:%llu\r\n", (unsigned long long)l.hits);
    resp_buf_printf(out, "shm_local_misses:%llu\r\n", (unsigned long long)l.misses);
    resp_buf_printf(out, "shm_local_retries:%llu\r\n", (unsigned long long)l.retries);
    resp_buf_printf(out, "shm_local_keyspace_hits:%llu\r\n", (unsigned long long)l.key_hits);
    resp_buf_printf(out, "shm_local_keyspace_misses:%llu\r\n", (unsigned long long)l.key_misses);
}

void srv_cache_clients(struct resp_buf *b)
{
    uint64_t now = srv_mstime();
    for (unsigned i = 0; srv.cache && i < SHMC_CTR_SLOTS; i++) {
        if (!sl.o[i].used)
            continue;
        struct shmc_ctr n = {0};
        slot_add(i, &n);
        resp_buf_printf(b,
                        "slot=%u id=%llu pid=%d age=%llu hits=%llu misses=%llu retries=%llu "
                        "keyspace_hits=%llu keyspace_misses=%llu\n",
                        i, (unsigned long long)sl.o[i].conn_id, sl.o[i].pid,
                        (unsigned long long)(now - sl.o[i].since_ms) / 1000,
                        (unsigned long long)n.hits, (unsigned long long)n.misses,
                        (unsigned long long)n.retries, (unsigned long long)n.key_hits,
                        (unsigned long long)n.key_misses);
    }
}

void srv_cache_info(struct resp_buf *out)
{
    resp_buf_printf(out, "cache_enabled:%d\r\n", srv.cache != NULL);
    if (!srv.cache)
        return;
    struct shmc_w_stats st;
    shmc_w_stats(srv.cache, &st);
    const struct shmc_hdr *h = shmc_w_hdr(srv.cache);
    unsigned long long looks = st.lookups, hits = st.hits + st.neg_hits;
    resp_buf_printf(out, "cache_segment_bytes:%llu\r\n", (unsigned long long)h->seg_size);
    resp_buf_printf(out, "cache_huge_pages:%d\r\n", shmc_w_huge(srv.cache));
    resp_buf_printf(out, "cache_log_bytes:%llu\r\n", (unsigned long long)st.size);
    resp_buf_printf(out, "cache_used_bytes:%llu\r\n", (unsigned long long)st.used);
    resp_buf_printf(out, "cache_max_record:%u\r\n", h->max_record);
    resp_buf_printf(out, "cache_records:%llu\r\n", (unsigned long long)st.records);
    resp_buf_printf(out, "cache_negative_entries:%llu\r\n", (unsigned long long)st.negatives);
    resp_buf_printf(out, "cache_fills:%llu\r\n", (unsigned long long)cs.fills);
    resp_buf_printf(out, "cache_negative_fills:%llu\r\n", (unsigned long long)cs.fills_absent);
    resp_buf_printf(out, "cache_inserts:%llu\r\n", (unsigned long long)st.inserts);
    resp_buf_printf(out, "cache_updates:%llu\r\n", (unsigned long long)st.updates);
    resp_buf_printf(out, "cache_refused:%llu\r\n", (unsigned long long)st.refused);
    resp_buf_printf(out, "cache_evictions:%llu\r\n", (unsigned long long)st.evictions);
    resp_buf_printf(out, "cache_index_evictions:%llu\r\n", (unsigned long long)st.index_evictions);
    resp_buf_printf(out, "cache_promotions:%llu\r\n", (unsigned long long)st.promotions);
    resp_buf_printf(out, "cache_reinserts:%llu\r\n", (unsigned long long)st.reinserts);
    resp_buf_printf(out, "cache_ghost_hits:%llu\r\n", (unsigned long long)st.ghost_hits);
    resp_buf_printf(out, "cache_lookups:%llu\r\n", looks);
    resp_buf_printf(out, "cache_hits:%llu\r\n", hits);
    resp_buf_printf(out, "cache_negative_hits:%llu\r\n", (unsigned long long)st.neg_hits);
    resp_buf_printf(out, "cache_hit_ratio:%.4f\r\n", looks ? (double)hits / (double)looks : 0.0);
    resp_buf_printf(out, "cache_applied_sets:%llu\r\n", (unsigned long long)cs.applied_sets);
    resp_buf_printf(out, "cache_generation:%016llx\r\n", (unsigned long long)h->generation);
    resp_buf_printf(out, "cache_lease_ms:%u\r\n", h->lease_ms);
}
