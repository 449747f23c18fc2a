/*
 * shmc_err — how both halves report a failure: -errno, and a message in
 * the caller's buffer. Internal to shm/.
 */
#ifndef SHMKV_SHMC_ERR_H
#define SHMKV_SHMC_ERR_H

#include <stdarg.h>
#include <stdio.h>

__attribute__((format(printf, 4, 5))) static inline int shmc_fail(char *err, size_t errlen, int e,
                                                                  const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -e;
}

#endif
