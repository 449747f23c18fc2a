/*
 * rdb — the value serialization of DUMP and RESTORE: an object in Redis's
 * RDB format (versions up to 10, Redis 7.0's), followed by the 2-byte
 * version and a CRC-64 (Jones polynomial, reflected, as Redis computes it).
 *
 * The decoder reads every encoding Redis 7.0 accepts in a payload for the
 * five types shmkvd keeps: plain strings (integer and LZF forms included),
 * lists (linked, ziplist, quicklist of ziplists or of listpacks), sets
 * (plain, intset), sorted sets (string or binary scores, ziplist,
 * listpack) and hashes (plain, ziplist, listpack). Streams, modules and
 * the zipmaps of Redis 2.4 are refused. The encoder writes the plain forms
 * (scores as binary doubles), which every Redis since 5.0 reads back in
 * whatever encodings its configuration asks for.
 */
#ifndef SHMKV_RDB_H
#define SHMKV_RDB_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"

/* The newest version read (Redis 7.0's); newer payloads are refused, as
 * Redis 7.0 refuses them. */
#define RDB_VERSION 10

enum {
    RDB_OK = 0,
    RDB_EVERSION = -1,  /* too short, a newer RDB version, or a checksum mismatch */
    RDB_EFORMAT = -2,   /* a type shmkvd does not keep, or a malformed body */
    RDB_ESTRING = -3,   /* FUNCTION RESTORE: a library's code cut short */
    RDB_ECALLBACK = -4, /* rdb_file_read: a callback asked to stop */
};

/* CRC-64/Jones over n bytes, continuing from crc (0 to start). */
uint64_t rdb_crc64(uint64_t crc, const void *p, size_t n);

/* Serializes v (type and items as db_dump gives them; the expiry is not
 * part of a payload). Returns a malloc'd buffer of *n bytes. */
char *rdb_dump(const struct db_value *v, size_t *n);

/* Checks the footer (version, checksum), then decodes the body into
 * v->type and v->items (inited by the caller, who destroys them). Hash
 * fields and set and sorted-set members must be distinct, and a value
 * must not be empty, as Redis requires. RDB_OK, RDB_EVERSION or
 * RDB_EFORMAT. */
int rdb_load(const char *p, size_t n, struct db_value *v);

/* RDB's length encoding of len (6 or 14 bits, or 0x80/0x81 and 32 or 64
 * bits big-endian) into out; returns its bytes (1 to 9). */
size_t rdb_len_encode(uint64_t len, unsigned char out[9]);

/* FUNCTION DUMP's payload: for each library, the function record of
 * Redis 7.0's RDB (opcode 245) with its code, then the footer. n codes;
 * returns a malloc'd buffer of *len bytes. */
char *rdb_dump_functions(const struct db_str *codes, size_t n, size_t *len);
/* FUNCTION RESTORE's: checks the footer, then appends each library's code
 * to codes (inited by the caller, who destroys it). RDB_OK, RDB_EVERSION,
 * RDB_EFORMAT (a record that is not a library) or RDB_ESTRING. */
int rdb_load_functions(const char *p, size_t n, struct db_vec *codes);

/* What rdb_file_read hands its caller, in the file's order. Each returns
 * 0 to go on, anything else to stop the read (RDB_ECALLBACK). */
struct rdb_file_cb {
    void *arg;
    /* A key of database db (the number clients select), its value and
     * expiry (0: none) in v, valid during the call. */
    int (*key)(void *arg, unsigned db, const char *k, size_t kn, const struct db_value *v);
    /* A library of FUNCTION: its code. */
    int (*library)(void *arg, const char *code, size_t n);
    /* Optional: called between items, each RDB_PROGRESS_STEP bytes or
     * so, with how many bytes from the start are read and summed: the
     * reader looks at none of them again. */
    void (*progress)(void *arg, size_t done);
};
#define RDB_PROGRESS_STEP (8u << 20)
/* Reads a whole RDB file, p[0, n) (versions up to 10, as Redis 7.0
 * writes them): auxiliary fields, databases, expiries in s or ms, the
 * LRU and LFU hints (ignored), libraries, and keys of the five types in
 * every encoding RESTORE reads. RDB_OK; RDB_EVERSION (not an RDB, a newer
 * version, a checksum mismatch); RDB_EFORMAT (a stream, a module's data,
 * pre-GA functions, or a malformed or truncated file); RDB_ECALLBACK.
 * *where (if not NULL): the offset where it stopped. */
int rdb_file_read(const char *p, size_t n, const struct rdb_file_cb *cb, size_t *where);

#endif
