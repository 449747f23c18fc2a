/*
 * stor_mem — allocation for the storage layer and the daemon (header-only, so
 * the protocol library can use it too). Running out of memory aborts,
 * as in Redis: a half-applied command is worse than a crash the journal
 * recovers from. Every other failure is returned as a value.
 */
#ifndef SHMKV_STOR_MEM_H
#define SHMKV_STOR_MEM_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void stor_oom(size_t n)
{
    fprintf(stderr, "shmkv: out of memory allocating %zu bytes\n", n);
    abort();
}

static inline void *stor_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        stor_oom(n);
    return p;
}

static inline void *stor_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        stor_oom(n * size);
    return p;
}

static inline void *stor_xrealloc(void *old, size_t n)
{
    void *p = realloc(old, n ? n : 1);
    if (!p)
        stor_oom(n);
    return p;
}

static inline void *stor_xmemdup(const void *src, size_t n)
{
    void *p = stor_xmalloc(n);
    if (n)
        memcpy(p, src, n);
    return p;
}

#endif
