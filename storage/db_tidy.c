/*
 * db_tidy — a collection whose walks step over far more deletes than it
 * holds members is rewritten under a fresh version.
 *
 * HDEL, SREM and ZREM leave a RocksDB tombstone per member, and each
 * overwritten member an older version, until compaction drops them (a
 * tombstone in a memtable stays until the memtable is flushed, and then
 * until a compaction reaches the bottom level). Every walk of the
 * collection steps over them: HGETALL of a hash with 10 fields left of
 * 300,000 took 70-115 ms a call, every call. A walk counts what it stepped
 * over (stor_skips); when that is at least DB_TIDY_MIN and DB_TIDY_RATIO
 * times the collection's size, db_tidy copies the live members to a new
 * version after the command, as COPY would, and the old version's records
 * become garbage for the compaction filter, as a DEL's do. The copy costs
 * O(size), which the walk that noted it paid for DB_TIDY_RATIO times over;
 * the walks after it step over none of those deletes.
 *
 * Collections over DB_TIDY_MAX_SIZE are not copied: the copy is one
 * record set, made in the event loop (16,384 fields among 65,536 deleted
 * took about 30 ms more than the HGETALL that noted them; 65,536 among
 * 262,144, 400 ms). A walk of one that stepped over at least
 * DB_COMPACT_MIN deletes, and a quarter of its size, asks instead for a
 * compaction of its records' range, which runs on a thread of the
 * engine's and drops the tombstones there (stor_compact_async): a
 * leaderboard whose hot members' old scores left 500,000 tombstones among
 * its top ranks. Blind collections keep no size to weigh either against;
 * lists never walk their deleted positions (db_list_iter).
 */
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "enc.h"

void db_watch_skips(struct db *d)
{
    if (!d->watching) {
        stor_skips_watch(true);
        d->watching = true;
    }
}

void db_walk_start(struct db *d, struct db_kc *kc)
{
    if (kc->wd || d->tidying || !db_counted_coll(&kc->m))
        return;
    db_watch_skips(d);
    kc->wd = d;
    kc->skip0 = stor_skips();
}

/* Asks for a compaction of the collection's records: what deletes left
 * among them goes once it has run (stor_compact_async). */
static void compact_key(struct db *d, struct db_kc *kc)
{
    size_t pl = kc_prefix_len(kc);
    char *hi = kv_xmemdup(kc->sk.p, pl);
    db_prefix_successor(hi, pl); /* the bounds kc_iter walks in */
    struct stor_range r[2];
    size_t n = 0;
    r[n++] = (struct stor_range){STOR_CF_SUB, kc->sk.p, hi, pl, pl};
    if (kc->m.type == ENC_TYPE_ZSET)
        r[n++] = (struct stor_range){STOR_CF_SCORE, kc->sk.p, hi, pl, pl};
    stor_compact_async(d->s, r, n); /* dropped when one waits: a later walk asks again */
    free(hi);
}

void db_walk_end(struct db_kc *kc)
{
    struct db *d = kc->wd;
    kc->wd = NULL;
    /* Another walk nested inside this one counts here too: at worst a
     * collection is copied that needed it less, and the copy's cost is
     * still bounded by what was stepped over. */
    uint64_t dead = stor_skips() - kc->skip0;
    if (dead < DB_TIDY_MIN || !db_counted_coll(&kc->m))
        return;
    if (dead / DB_TIDY_RATIO < kc->m.size || kc->m.size > DB_TIDY_MAX_SIZE) {
        if (dead >= DB_COMPACT_MIN && dead >= kc->m.size / 4)
            compact_key(d, kc);
        return;
    }
    if (d->ntidy == DB_TIDY_NOTES)
        return;
    for (unsigned i = 0; i < d->ntidy; i++) {
        const struct db_tidy_note *t = &d->tidy[i];
        if (t->dbi == kc->dbi && t->version == kc->m.version && t->klen == kc->klen &&
            memcmp(t->key, kc->key, kc->klen) == 0)
            return;
    }
    struct db_tidy_note *t = &d->tidy[d->ntidy++];
    t->dbi = kc->dbi;
    t->version = kc->m.version;
    t->key = kv_xmemdup(kc->key, kc->klen);
    t->klen = kc->klen;
}

void db_tidy(struct db *d)
{
    if (d->watching) {
        stor_skips_watch(false);
        d->watching = false;
    }
    if (!d->ntidy)
        return;
    d->tidying = true;
    while (d->ntidy) {
        struct db_tidy_note t = d->tidy[--d->ntidy];
        struct db_kc src, dst;
        db_begin(d);
        /* Still the collection that was walked: not deleted, replaced or
         * rewritten since (a version is never reused). */
        int rc = kc_load(d, &src, t.dbi, t.key, t.klen);
        if (rc == 0 && src.m.version == t.version && db_counted_coll(&src.m)) {
            kc_blank(&dst, t.dbi, t.key, t.klen);
            db_copy_records(d, &src, &dst, &rc);
            if (rc == 0 && db_commit(d) == 0)
                d->tidied++;
            kc_free(&dst);
        }
        kc_free(&src);
        stor_batch_clear(&d->b);
        free(t.key);
    }
    d->tidying = false;
}
