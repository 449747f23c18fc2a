/*
 * kv_num — numbers in Redis's text forms. See kv_num.h.
 */
#include "kv_num.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kv_str2ll(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 20)
        return KV_ENOTINT;
    if (n == 1 && s[0] == '0') {
        *out = 0;
        return 0;
    }
    size_t i = 0;
    bool neg = false;
    if (s[0] == '-') {
        neg = true;
        if (++i == n)
            return KV_ENOTINT;
    }
    if (s[i] < '1' || s[i] > '9')
        return KV_ENOTINT;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return KV_ENOTINT;
        if (v > (UINT64_MAX - 9) / 10)
            return KV_ENOTINT;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return KV_ENOTINT;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return KV_ENOTINT;
        *out = (int64_t)v;
    }
    return 0;
}

int kv_add_ll(int64_t *v, int64_t delta)
{
    if ((delta > 0 && *v > INT64_MAX - delta) || (delta < 0 && *v < INT64_MIN - delta))
        return KV_EOVERFLOW;
    *v += delta;
    return 0;
}

size_t kv_ll2str(char *out, int64_t v)
{
    return (size_t)snprintf(out, KV_LLSTR_MAX, "%lld", (long long)v);
}

int kv_str2d(const char *s, size_t n, double *out)
{
    char buf[128];
    if (n == 0 || n >= sizeof buf || isspace((unsigned char)s[0]))
        return KV_ENOTFLOAT;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    bool range = errno == ERANGE && (isinf(d) || d == 0);
    if (end != buf + n || isnan(d) || range)
        return KV_ENOTFLOAT;
    *out = d;
    return 0;
}

int kv_str2ld(const char *s, size_t n, long double *out)
{
    char buf[KV_LDSTR_MAX];
    if (n == 0 || n >= sizeof buf)
        return KV_ENOTFLOAT;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (isspace((unsigned char)buf[0]))
        return KV_ENOTFLOAT;
    char *end;
    errno = 0;
    long double v = strtold(buf, &end);
    if ((size_t)(end - buf) != n || isnan(v) || errno == EINVAL)
        return KV_ENOTFLOAT;
    if (errno == ERANGE && (isinf(v) || v == 0))
        return KV_ENOTFLOAT;
    *out = v;
    return 0;
}

size_t kv_ld2str(char *out, size_t cap, long double v)
{
    if (isinf(v))
        return (size_t)snprintf(out, cap, "%s", v > 0 ? "inf" : "-inf");
    int l = snprintf(out, cap, "%.17Lf", v);
    if (l < 0 || (size_t)l >= cap)
        return 0;
    if (memchr(out, '.', (size_t)l)) {
        while (out[l - 1] == '0')
            l--;
        if (out[l - 1] == '.')
            l--;
    }
    if (l == 2 && out[0] == '-' && out[1] == '0') {
        out[0] = '0';
        l = 1;
    }
    out[l] = '\0';
    return (size_t)l;
}

size_t kv_d2str(char *out, size_t cap, double d)
{
    int l;
    if (isinf(d))
        l = snprintf(out, cap, "%s", d > 0 ? "inf" : "-inf");
    else
        l = snprintf(out, cap, "%.17g", d);
    return l < 0 ? 0 : (size_t)l;
}
