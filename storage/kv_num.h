/*
 * kv_num — numbers as Redis writes and reads them in text: the one strict
 * integer parse that arguments, stored values and the protocol's length
 * lines share, Redis's float parses, and its ways of printing doubles.
 *
 * Layer: the common base (kv_), below every module; libc only. Parsers
 * return 0 or a kv_err code and never read past n bytes.
 */
#ifndef SHMKV_KV_NUM_H
#define SHMKV_KV_NUM_H

#include <stddef.h>
#include <stdint.h>

#include "kv_err.h"

/* Redis's strict decimal integer: no spaces, no '+', no leading zeros, within
 * int64. 0 or KV_ENOTINT. */
int kv_str2ll(const char *s, size_t n, int64_t *out);

/* *v += delta, or KV_EOVERFLOW and *v unchanged where int64 would
 * overflow (INCRBY, HINCRBY). */
int kv_add_ll(int64_t *v, int64_t delta);

/* The longest text kv_ll2str writes, NUL included. */
#define KV_LLSTR_MAX 21

/* v in decimal, NUL-terminated, into out (at least KV_LLSTR_MAX bytes);
 * returns its length. */
size_t kv_ll2str(char *out, int64_t v);

/* Redis's strict double, as its commands read a float argument: the whole
 * text, no leading space, no NaN, and nothing that overflows to infinity or
 * underflows to zero ("1e999", "1e-999"; "inf" itself is fine). 0 or
 * KV_ENOTFLOAT. */
int kv_str2d(const char *s, size_t n, double *out);

/* The longest text kv_str2ld reads and kv_ld2str writes, NUL included. */
#define KV_LDSTR_MAX 5120

/* Redis's long double parse (INCRBYFLOAT, HINCRBYFLOAT): as kv_str2d, but
 * a long double and shorter than KV_LDSTR_MAX. 0 or KV_ENOTFLOAT. */
int kv_str2ld(const char *s, size_t n, long double *out);

/* A long double as Redis prints one for INCRBYFLOAT: %.17Lf without trailing
 * zeros, "inf"/"-inf", never "-0". Writes a NUL-terminated string into out
 * (cap >= KV_LDSTR_MAX); returns its length, 0 if it did not fit. */
size_t kv_ld2str(char *out, size_t cap, long double v);

/* The longest text kv_d2str writes, NUL included. */
#define KV_DSTR_MAX 32

/* A double as Redis 7.0 replies one (scores, RESP3 doubles): "inf", "-inf",
 * or %.17g. Writes a NUL-terminated string into out (cap >= KV_DSTR_MAX);
 * returns its length. */
size_t kv_d2str(char *out, size_t cap, double d);

#endif
