/*
 * h_client — helpers for tests that use libshmkv beside hiredis.
 */
#ifndef SHMKV_TEST_H_CLIENT_H
#define SHMKV_TEST_H_CLIENT_H

#include <stdbool.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "shmkv.h"

/* Whether a libshmkv reply says exactly what a hiredis reply says. */
static inline bool h_same_reply(const shmkv_reply *a, const redisReply *b)
{
    static const int map[] = {
        [REDIS_REPLY_STRING] = SHMKV_REPLY_STRING,   [REDIS_REPLY_ARRAY] = SHMKV_REPLY_ARRAY,
        [REDIS_REPLY_INTEGER] = SHMKV_REPLY_INTEGER, [REDIS_REPLY_NIL] = SHMKV_REPLY_NIL,
        [REDIS_REPLY_STATUS] = SHMKV_REPLY_STATUS,   [REDIS_REPLY_ERROR] = SHMKV_REPLY_ERROR};
    if (b->type < 1 || b->type > 6 || a->type != map[b->type])
        return false;
    switch (a->type) {
    case SHMKV_REPLY_INTEGER:
        return a->integer == b->integer;
    case SHMKV_REPLY_ARRAY:
        if (a->elements != b->elements)
            return false;
        for (size_t i = 0; i < a->elements; i++)
            if (!h_same_reply(a->element[i], b->element[i]))
                return false;
        return true;
    case SHMKV_REPLY_NIL:
        return true;
    default:
        return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    }
}

static inline uint64_t h_lib_hits(shmkv *h)
{
    struct shmkv_stats st;
    shmkv_stats(h, &st);
    return st.hits;
}

#endif
