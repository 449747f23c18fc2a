/*
 * fuzz_rdb — the RDB file reader (daemon/rdb.c, rdb_file_read) that loads
 * a full sync's file and DEBUG RELOAD's: "REDIS0010" and then the input,
 * whose checksum may be 0 (not checked, as Redis allows). Every key and
 * library handed to the callbacks must be readable, and the reader must
 * stop inside the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "rdb.h"

static volatile unsigned sink;

static void touch(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sink += (unsigned char)p[i];
}

static int on_key(void *arg, unsigned db, const char *k, size_t kn, const struct db_value *v)
{
    (void)arg;
    sink += db;
    touch(k, kn);
    for (size_t i = 0; i < v->items.n; i++)
        if (db_vec_len(&v->items, i) != DB_NIL)
            touch(db_vec_ptr(&v->items, i), db_vec_len(&v->items, i));
    return 0;
}

static int on_library(void *arg, const char *code, size_t n)
{
    (void)arg;
    touch(code, n);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char head[] = "REDIS0010";
    size_t n = sizeof head - 1 + size;
    char *p = malloc(n);
    if (!p)
        return 0;
    memcpy(p, head, sizeof head - 1);
    if (size)
        memcpy(p + sizeof head - 1, data, size);
    struct rdb_file_cb cb = {.key = on_key, .library = on_library};
    size_t where = 0;
    rdb_file_read(p, n, &cb, &where);
    if (where > n)
        abort(); /* it stopped past the end */
    free(p);
    return 0;
}
