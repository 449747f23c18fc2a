/*
 * kv_sha1 — SHA-1 (FIPS 180-4), for DEBUG DIGEST and DIGEST-VALUE, whose
 * answers must equal redis-server's for the same data. Not for anything
 * that needs a secure hash.
 *
 * Layer: the common base (kv_), below every module; libc only.
 */
#ifndef SHMKV_KV_SHA1_H
#define SHMKV_KV_SHA1_H

#include <stddef.h>
#include <stdint.h>

#define KV_SHA1_LEN 20

/* A hash in progress: the caller owns it (on the stack, as a rule). */
struct kv_sha1 {
    uint32_t h[5];
    uint64_t len;            /* bytes taken so far */
    unsigned char block[64]; /* the part of a block not hashed yet */
};

void kv_sha1_init(struct kv_sha1 *s);
/* Takes p[0..n) in; pieces add up: init, update(a), update(b) hashes a
 * followed by b. */
void kv_sha1_update(struct kv_sha1 *s, const void *p, size_t n);
/* Writes the 20-byte digest to out; s must be initialised again before
 * another use. */
void kv_sha1_final(struct kv_sha1 *s, unsigned char out[KV_SHA1_LEN]);
/* The digest of p[0..n) in one call. */
void kv_sha1(const void *p, size_t n, unsigned char out[KV_SHA1_LEN]);

#endif
