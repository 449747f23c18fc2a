/*
 * kv_mem — allocation wrappers for every module of the daemon (header-only,
 * part of the common base, kv_). Running out of memory aborts,
 * as in Redis: a half-applied command is worse than a crash the journal
 * recovers from. Every other failure is returned as a value.
 */
#ifndef SHMKV_KV_MEM_H
#define SHMKV_KV_MEM_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void kv_oom(size_t n)
{
    fprintf(stderr, "shmkv: out of memory allocating %zu bytes\n", n);
    abort();
}

static inline void *kv_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        kv_oom(n);
    return p;
}

static inline void *kv_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        kv_oom(n * size);
    return p;
}

static inline void *kv_xrealloc(void *old, size_t n)
{
    void *p = realloc(old, n ? n : 1);
    if (!p)
        kv_oom(n);
    return p;
}

static inline void *kv_xmemdup(const void *src, size_t n)
{
    void *p = kv_xmalloc(n);
    if (n)
        memcpy(p, src, n);
    return p;
}

#endif
