/*
 * enc_err — shmkv's own error codes, one X-macro table.
 *
 * Functions across shmkv return 0 on success, a negative errno for system
 * errors, or one of these codes, which sit in a reserved negative range so
 * they never collide with -errno. The messages are the text Redis puts after
 * "ERR " (or the whole reply, for WRONGTYPE), so the server maps a code to a
 * reply without a second table.
 */
#ifndef SHMKV_ENC_ERR_H
#define SHMKV_ENC_ERR_H

#define ENC_ERR_BASE (-30800)

/* X(name, offset, message) */
#define ENC_ERRORS(X)                                                                          \
    X(ENC_ENOTFOUND, 1, "no such key")                                                         \
    X(ENC_EWRONGTYPE, 2, "WRONGTYPE Operation against a key holding the wrong kind of value")  \
    X(ENC_ENOTINT, 3, "value is not an integer or out of range")                               \
    X(ENC_EOVERFLOW, 4, "increment or decrement would overflow")                               \
    X(ENC_ENOTFLOAT, 5, "value is not a valid float")                                          \
    X(ENC_ENANINF, 6, "increment would produce NaN or Infinity")                               \
    X(ENC_EZNAN, 7, "resulting score is not a number (NaN)")                                   \
    X(ENC_ERANGE, 8, "index out of range")                                                     \
    X(ENC_ETOOBIG, 9, "string exceeds maximum allowed size (proto-max-bulk-len)")              \
    X(ENC_ECORRUPT, 10, "corrupt record")                                                      \
    X(ENC_ESTORAGE, 11, "storage engine error")                                                \
    X(ENC_EINVAL, 12, "invalid argument")                                                      \
    X(ENC_ENOSPC, 13, "no space left on device")                                              \
    X(ENC_EHASHINT, 14, "hash value is not an integer")                                        \
    X(ENC_EHASHFLOAT, 15, "hash value is not a float")                                         \
    X(ENC_ENOTHLL, 16, "WRONGTYPE Key is not a valid HyperLogLog string value.")               \
    X(ENC_EHLLCORRUPT, 17, "INVALIDOBJ Corrupted HLL object detected")

enum enc_err {
#define ENC_ERR_ENUM(name, off, msg) name = ENC_ERR_BASE - (off),
    ENC_ERRORS(ENC_ERR_ENUM)
#undef ENC_ERR_ENUM
};

/* A static message for any code: ours, or -errno. Never NULL. */
const char *enc_strerror(int err);

#endif
