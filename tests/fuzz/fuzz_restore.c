/*
 * fuzz_restore — RESTORE's payload decoder (daemon/rdb.c, rdb_load) over
 * any body, for every value type and encoding (listpacks, intsets,
 * ziplists, quicklists, zipmaps included). The input is the body; the
 * harness appends the footer (RDB version 10 and a correct CRC64), so the
 * fuzzer reaches the decoders rather than the checksum. A body that loads
 * must dump and load again to the same value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "rdb.h"

static void same(const struct db_value *a, const struct db_value *b)
{
    if (a->type != b->type || a->items.n != b->items.n)
        abort();
    for (size_t i = 0; i < a->items.n; i++) {
        size_t n = db_vec_len(&a->items, i);
        if (n != db_vec_len(&b->items, i) ||
            (n != DB_NIL && memcmp(db_vec_ptr(&a->items, i), db_vec_ptr(&b->items, i), n)) ||
            memcmp(&a->items.items[i].score, &b->items.items[i].score, sizeof(double)))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *p = malloc(size + 10);
    if (!p)
        return 0;
    if (size)
        memcpy(p, data, size);
    p[size] = RDB_VERSION;
    p[size + 1] = 0;
    uint64_t crc = rdb_crc64(0, p, size + 2);
    for (int i = 0; i < 8; i++)
        p[size + 2 + i] = (char)(crc >> (8 * i));
    struct db_value v = {0}, w = {0};
    db_vec_init(&v.items);
    db_vec_init(&w.items);
    if (rdb_load(p, size + 10, &v) == RDB_OK) {
        size_t n;
        char *d = rdb_dump(&v, &n);
        if (!d || rdb_load(d, n, &w) != RDB_OK)
            abort(); /* what was loaded must dump into a payload that loads */
        same(&v, &w);
        free(d);
    }
    db_vec_destroy(&v.items);
    db_vec_destroy(&w.items);
    free(p);
    return 0;
}
