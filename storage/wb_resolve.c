/*
 * wb_resolve — deferred prior states (stor_batch_defer): the RocksDB reads a
 * commit left for later, resolved in batches by the resolver thread, or by
 * the flusher before it writes a batch, or by the executor when it settles.
 * See stor.h and docs/writeback.md.
 *
 * Threads: the executor appends record sets with deferred ops to a ring;
 * the resolver and the flusher take from its head under the resolver's
 * lock.
 */
#include "stor_int.h"

#include <stdlib.h>
#include <string.h>

#include "kv_mem.h"

/* ---- deferred prior states (stor.h, stor_batch_defer) ---- */

bool stor_can_defer(const struct stor *s)
{
    return s->wb && s->rs.fn;
}

void stor_set_resolver(struct stor *s, stor_resolve_fn fn, void *arg)
{
    pthread_mutex_lock(&s->rs.mu); /* the resolver thread may be running */
    s->rs.fn = fn;
    s->rs.arg = arg;
    pthread_mutex_unlock(&s->rs.mu);
}

/* Resolves the deferred ops of the record sets in s->rs.dq up to upto (a
 * record set the caller may read: the flusher's handed-over ones, or any
 * for the executor), RES_CHUNK at a time through one MultiGet, which costs
 * the flusher about half what as many point reads do. Under rs.mu. NULL, or
 * RocksDB's error (the caller frees it): what was resolved stays so, the
 * rest is tried again. */
#define RES_CHUNK 256

char *wb_resolve_upto(struct stor *s, const struct wb_rec *upto)
{
    const char *keys[RES_CHUNK];
    size_t kns[RES_CHUNK];
    const char *ops[RES_CHUNK];
    rocksdb_pinnableslice_t *vals[RES_CHUNK];
    char *errs[RES_CHUNK];
    uint64_t tail = __atomic_load_n(&s->rs.dqtail, __ATOMIC_ACQUIRE);
    size_t mask = s->rs.dqcap - 1;
    for (;;) {
        /* Gather a chunk of one column family from the ring's head: record
         * sets wholly taken, and at most one partly (its rdone moves by part). */
        size_t n = 0;
        int cf = -1;
        uint64_t h = s->rs.dqhead;
        struct wb_rec *part = NULL;
        uint32_t part_to = 0;
        while (n < RES_CHUNK && h < tail) {
            struct wb_rec *x = s->rs.dq[h & mask];
            if (x->seq > upto->seq)
                break;
            uint32_t j = x->rdone;
            for (; j < x->ndefer && n < RES_CHUNK; j++) {
                const char *p = x->data + x->doff[j]; /* built by us */
                if (cf >= 0 && (unsigned char)p[1] != cf)
                    break;
                cf = (unsigned char)p[1];
                ops[n] = p;
                keys[n] = p + 10;
                kns[n] = enc_get_u32(p + 2);
                n++;
            }
            if (j < x->ndefer) {
                part = x;
                part_to = j;
                break;
            }
            h++;
        }
        if (!n)
            return NULL;
        rocksdb_batched_multi_get_cf(s->db, s->ropts, s->cf[cf], n, keys, kns, vals, errs, false);
        char *err = NULL;
        for (size_t i = 0; i < n; i++)
            if (errs[i] && !err)
                err = errs[i];
            else if (errs[i])
                rocksdb_free(errs[i]);
        for (size_t i = 0; i < n; i++) {
            if (!err) {
                const char *p = ops[i];
                uint32_t kn = enc_get_u32(p + 2), vn = enc_get_u32(p + 6);
                size_t on = 0;
                const char *old = vals[i] ? rocksdb_pinnableslice_value(vals[i], &on) : NULL;
                s->rs.fn(s->rs.arg, (unsigned char)p[0], p + 10, kn, p + 10 + kn, vn, old, on,
                         vals[i] != NULL);
            }
            rocksdb_pinnableslice_destroy(vals[i]);
        }
        if (err)
            return err;
        __atomic_store_n(&s->rs.dqhead, h, __ATOMIC_RELEASE);
        if (part)
            part->rdone = part_to;
    }
}

/* Appends r, which has deferred ops, to the ring (the executor's). */
void wb_dq_push(struct stor *s, struct wb_rec *r)
{
    uint64_t t = s->rs.dqtail; /* only we write it */
    if (t - __atomic_load_n(&s->rs.dqhead, __ATOMIC_ACQUIRE) == s->rs.dqcap) {
        /* Full: twice the room, under rs.mu so that no resolver reads it
         * meanwhile. The database's cap on outstanding deferrals keeps it
         * from growing far. */
        pthread_mutex_lock(&s->rs.mu);
        size_t cap = s->rs.dqcap ? 2 * s->rs.dqcap : 256;
        struct wb_rec **q = kv_xmalloc(cap * sizeof *q);
        for (uint64_t i = s->rs.dqhead; i < t; i++)
            q[i & (cap - 1)] = s->rs.dq[i & (s->rs.dqcap - 1)];
        free(s->rs.dq);
        s->rs.dq = q;
        s->rs.dqcap = cap;
        pthread_mutex_unlock(&s->rs.mu);
    }
    s->rs.dq[t & (s->rs.dqcap - 1)] = r;
    __atomic_store_n(&s->rs.dqtail, t + 1, __ATOMIC_RELEASE);
}

bool stor_resolve_fold_try(struct stor *s, void (*fold)(void *arg), void *arg)
{
    if (pthread_mutex_trylock(&s->rs.mu) != 0)
        return false;
    fold(arg);
    pthread_mutex_unlock(&s->rs.mu);
    return true;
}

int stor_resolve_settle(struct stor *s, bool resolve, void (*fold)(void *arg), void *arg)
{
    int rc = 0;
    pthread_mutex_lock(&s->rs.mu);
    if (resolve && s->wb) {
        char *err = wb_resolve_upto(s, s->j.ltail);
        if (err)
            rc = stor_take_err(err);
    }
    fold(arg);
    pthread_mutex_unlock(&s->rs.mu);
    return rc;
}

/* The resolver thread: every few ms, the deferred writes handed to the
 * flusher so far, so that neither a batch (the flusher waits on nothing
 * of its own then) nor a settle (DBSIZE, in the event loop) finds many
 * left; under a steady load of cold writes the backlog stays at about
 * WB_RESOLVE_MS of them. Sleeps longer while there is nothing to do. */
#define WB_RESOLVE_MS 2

void *wb_resolver_main(void *arg)
{
    struct stor *s = arg;
    pthread_setname_np(pthread_self(), "shmkv-resolve");
    stor_thread_quiet();
    unsigned ms = WB_RESOLVE_MS;
    pthread_mutex_lock(&s->q.mu);
    while (!s->rs.stop) {
        struct timespec until = wb_deadline_in((uint64_t)ms * 1000);
        pthread_cond_timedwait(&s->rs.cv, &s->q.mu, &until);
        if (s->rs.stop)
            break;
        struct wb_rec *t = s->q.tail;
        pthread_mutex_unlock(&s->q.mu);
        pthread_mutex_lock(&s->rs.mu);
        bool some = __atomic_load_n(&s->rs.dqtail, __ATOMIC_ACQUIRE) != s->rs.dqhead;
        char *err = s->rs.fn ? wb_resolve_upto(s, t) : NULL;
        pthread_mutex_unlock(&s->rs.mu);
        if (err)
            rocksdb_free(err); /* the flusher's batch tries again, and reports */
        ms = some ? WB_RESOLVE_MS : 50;
        pthread_mutex_lock(&s->q.mu);
    }
    pthread_mutex_unlock(&s->q.mu);
    return NULL;
}
