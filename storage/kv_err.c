/*
 * kv_err — the messages of shmkv's error codes. See kv_err.h.
 */
#include "kv_err.h"

#include <string.h>

const char *kv_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define KV_ERR_CASE(name, off, msg)                                                                \
    case name:                                                                                     \
        return msg;
        KV_ERRORS(KV_ERR_CASE)
#undef KV_ERR_CASE
    default:
        break;
    }
    if (err < 0 && err > -4096)
        return strerror(-err);
    return "unknown error";
}
