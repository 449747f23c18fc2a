/*
 * kv_crc — CRC-32C (Castagnoli), the one checksum of shmkv's own formats:
 * the write-back journal's records, the key-count file and the shared-memory
 * segment's header.
 *
 * Layer: the common base (kv_), below every module; libc only.
 */
#ifndef SHMKV_KV_CRC_H
#define SHMKV_KV_CRC_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of p[0..n) continuing from crc (0 to start), so a checksum may
 * be taken over pieces: kv_crc32c(kv_crc32c(0, a, an), b, bn) is the CRC
 * of a followed by b. Uses the CPU's crc32 instruction where it has one
 * (chosen once, at load time). */
uint32_t kv_crc32c(uint32_t crc, const void *p, size_t n);
/* The same, always from the portable table: for tests that compare the two. */
uint32_t kv_crc32c_table(uint32_t crc, const void *p, size_t n);

#endif
