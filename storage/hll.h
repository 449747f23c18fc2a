/*
 * hll — HyperLogLog sketches in Redis's string layout, so a sketch moves
 * between shmkvd and redis-server as a plain string (GET, SET) and counts
 * the same: 16,384 six-bit registers, MurmurHash64A, the estimator of
 * Ertl's "New cardinality estimation algorithms for HyperLogLog sketches"
 * (2017), as Redis 5+ counts.
 *
 * The string: "HYLL", an encoding byte (0 dense, 1 sparse), 3 unused
 * bytes, an 8-byte little-endian cached cardinality (its top bit set when
 * stale), then the registers: dense, 6 bits each, least significant bits
 * first; or sparse, runs of opcodes (ZERO 00xxxxxx: 1-64 zero registers;
 * XZERO 01xxxxxx yyyyyyyy: 1-16384 zero registers; VAL 1vvvvvxx: 1-4
 * registers of value 1-32).
 *
 * Pure functions on buffers: the caller reads and writes the string.
 */
#ifndef SHMKV_HLL_H
#define SHMKV_HLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HLL_P 14
#define HLL_REGS (1u << HLL_P)
#define HLL_HDR 16
#define HLL_DENSE_SIZE (HLL_HDR + (HLL_REGS * 6 + 7) / 8)
/* A sparse sketch longer than this (header included) turns dense, as with
 * Redis's default hll-sparse-max-bytes. */
#define HLL_SPARSE_MAX 3000

enum { HLL_OK = 0, HLL_NOTHLL = -1, HLL_CORRUPT = -2 };

/* Whether v has a sketch's header and, if dense, its size: HLL_OK or
 * HLL_NOTHLL (Redis's "not a valid HyperLogLog string value"). *dense
 * receives the encoding. */
int hll_check(const char *v, size_t n, bool *dense);
/* The registers of a checked sketch into regs[HLL_REGS]: HLL_OK, or
 * HLL_CORRUPT for sparse opcodes that do not cover the registers exactly. */
int hll_decode(const char *v, size_t n, uint8_t *regs);
/* The cached cardinality, if the header holds a valid one. */
bool hll_cached(const char *v, size_t n, uint64_t *card);
/* Writes card into the header of a checked sketch, as valid. */
void hll_set_cached(char *v, uint64_t card);

/* Adds an element to regs: whether its register grew. */
bool hll_add(uint8_t *regs, const char *e, size_t n);
/* Adds an element to a checked dense sketch in place (no decoding): whether
 * its register grew; the caller then marks the cached count stale
 * (hll_set_stale). */
bool hll_dense_add(char *v, const char *e, size_t n);
void hll_set_stale(char *v);
/* The estimated number of distinct elements added to regs. */
uint64_t hll_count(const uint8_t *regs);

/* A sparse sketch as maximal runs of equal registers, for PFADD: each add
 * costs the number of runs, not the 16,384 registers. */
struct hll_runs;
/* The runs of a checked sparse sketch: HLL_OK (*out to free with
 * hll_runs_free), or HLL_CORRUPT. */
int hll_runs_decode(const char *v, size_t n, struct hll_runs **out);
struct hll_runs *hll_runs_empty(void); /* a new sketch's: every register 0 */
bool hll_runs_add(struct hll_runs *r, const char *e, size_t n); /* as hll_add */
/* As hll_encode, from runs (sparse when it can be). */
char *hll_runs_encode(const struct hll_runs *r, const char *old, size_t *n);
void hll_runs_free(struct hll_runs *r);

/* Encodes regs as a sketch (malloc'd, *n bytes): sparse when dense is
 * false, every register is at most 32 and the result fits HLL_SPARSE_MAX;
 * dense otherwise. The cached cardinality is marked stale; its other bits
 * are old's (the sketch it replaces, or NULL), as Redis leaves them. */
char *hll_encode(const uint8_t *regs, bool dense, const char *old, size_t *n);

/* MurmurHash64A (Austin Appleby's, public domain), the sketch's hash. */
uint64_t hll_hash(const void *key, size_t n, uint64_t seed);

#endif
