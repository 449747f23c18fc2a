/*
 * kv_err — shmkv's own error codes, one X-macro table.
 *
 * Layer: the common base (kv_), below every module; libc only.
 *
 * Functions across shmkv return 0 on success, a negative errno for system
 * errors, or one of these codes, which sit in a reserved negative range so
 * they never collide with -errno. The messages are the text Redis puts after
 * "ERR " (or the whole reply, for WRONGTYPE), so the server maps a code to a
 * reply without a second table.
 */
#ifndef SHMKV_KV_ERR_H
#define SHMKV_KV_ERR_H

#define KV_ERR_BASE (-30800)

/* X(name, offset, message) */
#define KV_ERRORS(X)                                                                               \
    X(KV_ENOTFOUND, 1, "no such key")                                                              \
    X(KV_EWRONGTYPE, 2, "WRONGTYPE Operation against a key holding the wrong kind of value")       \
    X(KV_ENOTINT, 3, "value is not an integer or out of range")                                    \
    X(KV_EOVERFLOW, 4, "increment or decrement would overflow")                                    \
    X(KV_ENOTFLOAT, 5, "value is not a valid float")                                               \
    X(KV_ENANINF, 6, "increment would produce NaN or Infinity")                                    \
    X(KV_EZNAN, 7, "resulting score is not a number (NaN)")                                        \
    X(KV_ERANGE, 8, "index out of range")                                                          \
    X(KV_ETOOBIG, 9, "string exceeds maximum allowed size (proto-max-bulk-len)")                   \
    X(KV_ECORRUPT, 10, "corrupt record")                                                           \
    X(KV_ESTORAGE, 11, "storage engine error")                                                     \
    X(KV_EINVAL, 12, "invalid argument")                                                           \
    X(KV_ENOSPC, 13, "no space left on device")                                                    \
    X(KV_EHASHINT, 14, "hash value is not an integer")                                             \
    X(KV_EHASHFLOAT, 15, "hash value is not a float")                                              \
    X(KV_ENOTHLL, 16, "WRONGTYPE Key is not a valid HyperLogLog string value.")                    \
    X(KV_EHLLCORRUPT, 17, "INVALIDOBJ Corrupted HLL object detected")

enum kv_err {
#define KV_ERR_ENUM(name, off, msg) name = KV_ERR_BASE - (off),
    KV_ERRORS(KV_ERR_ENUM)
#undef KV_ERR_ENUM
};

/* A static message for any code: ours, or -errno. Never NULL. */
const char *kv_strerror(int err);

#endif
