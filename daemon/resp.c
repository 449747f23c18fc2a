/*
 * resp — the Redis protocol without I/O. See resp.h.
 */
#include "resp.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv_num.h"
#include "kv_mem.h"

/* ---- buffers ---- */

void resp_buf_init(struct resp_buf *b)
{
    memset(b, 0, sizeof *b);
}

void resp_buf_free(struct resp_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

char *resp_buf_reserve(struct resp_buf *b, size_t n)
{
    if (b->len + n > b->cap) {
        if (b->off && b->off >= b->cap / 2)
            resp_buf_compact(b);
        if (b->len + n > b->cap) {
            size_t cap = b->cap ? b->cap : 256;
            while (cap < b->len + n)
                cap *= 2;
            b->p = kv_xrealloc(b->p, cap);
            b->cap = cap;
        }
    }
    return b->p + b->len;
}

void resp_buf_append(struct resp_buf *b, const void *p, size_t n)
{
    char *d = resp_buf_reserve(b, n);
    if (n)
        memcpy(d, p, n);
    b->len += n;
}

void resp_buf_printf(struct resp_buf *b, const char *fmt, ...)
{
    size_t room = b->cap - b->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= room) { /* it did not fit: again, with room for it */
        char *d = resp_buf_reserve(b, (size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(d, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

void resp_buf_consume(struct resp_buf *b, size_t n)
{
    b->off += n;
    if (b->off >= b->len)
        b->off = b->len = 0;
}

void resp_buf_compact(struct resp_buf *b)
{
    if (!b->off)
        return;
    memmove(b->p, b->p + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
}

/* ---- request parsing ---- */

void resp_req_init(struct resp_req *r)
{
    memset(r, 0, sizeof *r);
    r->want = -1;
    r->bulk = -1;
}

void resp_req_free(struct resp_req *r)
{
    free(r->off);
    free(r->len);
    free(r->scratch);
    memset(r, 0, sizeof *r);
}

void resp_req_reset(struct resp_req *r)
{
    r->pos = 0;
    r->want = -1;
    r->bulk = -1;
    r->argc = 0;
    r->is_inline = 0;
}

static void push_arg(struct resp_req *r, size_t off, size_t len)
{
    if (r->argc == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        r->off = kv_xrealloc(r->off, cap * sizeof *r->off);
        r->len = kv_xrealloc(r->len, cap * sizeof *r->len);
        r->cap = cap;
    }
    r->off[r->argc] = off;
    r->len[r->argc] = len;
    r->argc++;
}

const char *resp_req_arg(const struct resp_req *r, const char *data, size_t i, size_t *n)
{
    *n = r->len[i];
    return (r->is_inline ? r->scratch : data) + r->off[i];
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Splits one inline line the way redis-cli quoting works: bare words,
 * "double quoted" with \n \r \t \b \a \xHH escapes, 'single quoted' with \'.
 * A closing quote must be followed by a space or the end. */
static int split_inline(struct resp_req *r, const char *line, size_t n)
{
    /* Unquoting only ever shrinks the text: n bytes of scratch suffice. */
    if (r->scratchcap < n) {
        r->scratch = kv_xrealloc(r->scratch, n);
        r->scratchcap = n;
    }
    char *out = r->scratch;
    size_t w = 0, i = 0;
    r->argc = 0;
    for (;;) {
        while (i < n && isspace((unsigned char)line[i]))
            i++;
        if (i == n)
            return 0;
        size_t start = w;
        if (line[i] == '"' || line[i] == '\'') {
            char q = line[i++];
            bool closed = false;
            while (i < n) {
                char c = line[i];
                if (q == '"' && c == '\\' && i + 3 < n && line[i + 1] == 'x' &&
                    hexval((unsigned char)line[i + 2]) >= 0 &&
                    hexval((unsigned char)line[i + 3]) >= 0) {
                    out[w++] = (char)(hexval((unsigned char)line[i + 2]) * 16 +
                                      hexval((unsigned char)line[i + 3]));
                    i += 4;
                } else if (q == '"' && c == '\\' && i + 1 < n) {
                    char e = line[i + 1];
                    out[w++] = e == 'n'   ? '\n'
                               : e == 'r' ? '\r'
                               : e == 't' ? '\t'
                               : e == 'b' ? '\b'
                               : e == 'a' ? '\a'
                                          : e;
                    i += 2;
                } else if (q == '\'' && c == '\\' && i + 1 < n && line[i + 1] == '\'') {
                    out[w++] = '\'';
                    i += 2;
                } else if (c == q) {
                    i++;
                    closed = true;
                    break;
                } else {
                    out[w++] = c;
                    i++;
                }
            }
            if (!closed || (i < n && !isspace((unsigned char)line[i])))
                return -1;
        } else {
            while (i < n && !isspace((unsigned char)line[i]))
                out[w++] = line[i++];
        }
        push_arg(r, start, w - start);
    }
}

int resp_split(struct resp_req *r, const char *line, size_t n)
{
    resp_req_reset(r);
    r->is_inline = 1;
    return split_inline(r, line, n);
}

static int parse_inline(struct resp_req *r, const char *data, size_t n,
                        const struct resp_limits *lim, const char **err)
{
    const char *nl = memchr(data, '\n', n);
    if (!nl) {
        if (n > lim->max_inline) {
            *err = "ERR Protocol error: too big inline request";
            return RESP_PROTO;
        }
        return RESP_AGAIN;
    }
    size_t linelen = (size_t)(nl - data);
    if (linelen > lim->max_inline) {
        *err = "ERR Protocol error: too big inline request";
        return RESP_PROTO;
    }
    r->pos = linelen + 1;
    if (linelen && data[linelen - 1] == '\r')
        linelen--;
    r->is_inline = 1;
    if (split_inline(r, data, linelen) < 0) {
        *err = "ERR Protocol error: unbalanced quotes in request";
        return RESP_PROTO;
    }
    return r->argc ? RESP_DONE : RESP_EMPTY;
}

/* Finds "\r\n" in data[from, n): the header line of '*' or '$'. */
static const char *find_crlf(const char *data, size_t from, size_t n)
{
    const char *p = data + from;
    while ((p = memchr(p, '\r', (size_t)(data + n - p))) != NULL) {
        if (p + 1 >= data + n)
            return NULL;
        if (p[1] == '\n')
            return p;
        p++;
    }
    return NULL;
}

#define HEADER_MAX (64 * 1024) /* the longest '*N' or '$N' line we wait for */

/* header_num's way for any line but the common one. */
static __attribute__((noinline)) int header_num_slow(const char *data, size_t pos, size_t n,
                                                     int64_t *v, size_t *next)
{
    const char *e = find_crlf(data, pos, n);
    if (!e)
        return 0;
    if (kv_str2ll(data + pos + 1, (size_t)(e - data) - pos - 1, v))
        return -1;
    *next = (size_t)(e - data) + 2;
    return 1;
}

/* Reads the number of the '*' or '$' line at data[pos]: 1 with *v and
 * *next (past its CRLF), 0 if the line is not all there yet, -1 if it is
 * no number. The common line, 1 to 9 digits with no leading zero, is read
 * in place; any other goes through find_crlf and kv_str2ll, a call each,
 * which for the four headers of a SET cost about as many instructions as
 * the rest of its parse. */
static inline int header_num(const char *data, size_t pos, size_t n, int64_t *v, size_t *next)
{
    size_t i = pos + 1, end = n - pos > 11 ? pos + 11 : n;
    int64_t x = 0;
    for (; i < end && (unsigned char)(data[i] - '0') <= 9; i++)
        x = x * 10 + (data[i] - '0');
    size_t digits = i - pos - 1;
    if (digits >= 1 && digits <= 9 && (digits == 1 || data[pos + 1] != '0') && i + 1 < n &&
        data[i] == '\r' && data[i + 1] == '\n') {
        *v = x;
        *next = i + 2;
        return 1;
    }
    return header_num_slow(data, pos, n, v, next);
}

/* Reads "<c>digits\r\n" at p[*i]: the number, or -1. */
static int64_t peek_len(const char *p, size_t n, size_t *i, char c)
{
    if (*i >= n || p[*i] != c)
        return -1;
    int64_t v = 0;
    size_t j = *i + 1;
    for (; j < n && j - *i <= 10 && p[j] >= '0' && p[j] <= '9'; j++)
        v = v * 10 + (p[j] - '0');
    if (j == *i + 1 || j + 1 >= n || p[j] != '\r' || p[j + 1] != '\n')
        return -1;
    *i = j + 2;
    return v;
}

/* want: 1 or 2 arguments after the name; inlined into each caller with it
 * constant, so that resp_peek_arg1, on every pipelined command's path,
 * does no more than it ever did. */
static inline __attribute__((always_inline)) int peek_args(const char *p, size_t n, const char **a,
                                                           size_t *an, const char **b, size_t *bn,
                                                           size_t *len, const int want)
{
    size_t i = 0;
    int found = 0;
    if (len)
        *len = 0;
    int64_t argc = peek_len(p, n, &i, '*');
    for (int64_t j = 0; j < argc; j++) {
        int64_t l = peek_len(p, n, &i, '$');
        if (l < 0)
            return found;
        if (j >= 1 && j <= want && found == j - 1 && (uint64_t)l <= n - i) {
            *(j == 1 ? a : b) = p + i;
            *(j == 1 ? an : bn) = (size_t)l;
            found = (int)j;
            if (!len && found == want)
                return found;
        }
        if ((uint64_t)l + 2 > n - i || p[i + (size_t)l] != '\r' || p[i + (size_t)l + 1] != '\n')
            return found;
        i += (size_t)l + 2;
    }
    if (len && argc > 0)
        *len = i;
    return found;
}

int resp_peek_arg1(const char *p, size_t n, const char **a, size_t *an, size_t *len)
{
    return peek_args(p, n, a, an, NULL, NULL, len, 1);
}

int resp_peek_arg2(const char *p, size_t n, const char **a, size_t *an, const char **b, size_t *bn,
                   size_t *len)
{
    return peek_args(p, n, a, an, b, bn, len, 2);
}

int resp_req_parse(struct resp_req *r, const char *data, size_t n, const struct resp_limits *lim,
                   const char **err)
{
    if (r->want < 0) {
        if (r->pos >= n)
            return RESP_AGAIN;
        if (data[r->pos] != '*')
            return parse_inline(r, data, n, lim, err);
        int64_t cnt;
        size_t next;
        int h = header_num(data, r->pos, n, &cnt, &next);
        if (h == 0) {
            if (n - r->pos > HEADER_MAX) {
                *err = "ERR Protocol error: too big mbulk count string";
                return RESP_PROTO;
            }
            return RESP_AGAIN;
        }
        if (h < 0 || cnt > lim->max_args) {
            *err = "ERR Protocol error: invalid multibulk length";
            return RESP_PROTO;
        }
        r->pos = next;
        if (cnt <= 0)
            return RESP_EMPTY;
        r->want = cnt;
        r->argc = 0;
    }
    while ((int64_t)r->argc < r->want) {
        if (r->bulk < 0) {
            if (r->pos >= n)
                return RESP_AGAIN;
            if (data[r->pos] != '$') {
                static _Thread_local char msg[64];
                snprintf(msg, sizeof msg, "ERR Protocol error: expected '$', got '%c'",
                         data[r->pos]);
                *err = msg;
                return RESP_PROTO;
            }
            int64_t len;
            size_t next;
            int h = header_num(data, r->pos, n, &len, &next);
            if (h == 0) {
                if (n - r->pos > HEADER_MAX) {
                    *err = "ERR Protocol error: too big bulk count string";
                    return RESP_PROTO;
                }
                return RESP_AGAIN;
            }
            if (h < 0 || len < 0 || len > lim->max_bulk) {
                *err = "ERR Protocol error: invalid bulk length";
                return RESP_PROTO;
            }
            r->pos = next;
            r->bulk = len;
        }
        /* The bulk and its CRLF must be all there. */
        if (n - r->pos < (size_t)r->bulk + 2)
            return RESP_AGAIN;
        push_arg(r, r->pos, (size_t)r->bulk);
        r->pos += (size_t)r->bulk + 2;
        r->bulk = -1;
    }
    return RESP_DONE;
}

/* ---- replies ---- */

static void put_line(struct resp_buf *b, char type, const char *s, size_t n)
{
    char *d = resp_buf_reserve(b, n + 3);
    d[0] = type;
    memcpy(d + 1, s, n);
    d[n + 1] = '\r';
    d[n + 2] = '\n';
    b->len += n + 3;
}

/* v in decimal, written backwards from end; returns the first byte. Every
 * bulk reply's length goes through here: snprintf was 16% of LRANGE. */
static char *fmt_i64(char *end, int64_t v)
{
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    char *p = end;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    return p;
}

static void put_num(struct resp_buf *b, char type, int64_t v)
{
    char tmp[24];
    char *p = fmt_i64(tmp + sizeof tmp, v);
    put_line(b, type, p, (size_t)(tmp + sizeof tmp - p));
}

void resp_simple(struct resp_buf *b, const char *s)
{
    put_line(b, '+', s, strlen(s));
}

void (*resp_error_hook)(const char *s, size_t n);

void resp_error(struct resp_buf *b, const char *s)
{
    /* An error is one line: a newline inside would desynchronise the client. */
    size_t n = strcspn(s, "\r\n");
    put_line(b, '-', s, n);
    if (resp_error_hook)
        resp_error_hook(s, n);
}

void resp_error_uncounted(struct resp_buf *b, const char *s)
{
    put_line(b, '-', s, strcspn(s, "\r\n"));
}

void resp_errorf(struct resp_buf *b, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    resp_error(b, msg);
}

void resp_int(struct resp_buf *b, int64_t v)
{
    put_num(b, ':', v);
}

void resp_bulk(struct resp_buf *b, const char *p, size_t n)
{
    put_num(b, '$', (int64_t)n);
    char *d = resp_buf_reserve(b, n + 2);
    if (n)
        memcpy(d, p, n);
    d[n] = '\r';
    d[n + 1] = '\n';
    b->len += n + 2;
}

void resp_bulk_cstr(struct resp_buf *b, const char *s)
{
    resp_bulk(b, s, strlen(s));
}

void resp_bulk_int(struct resp_buf *b, int64_t v)
{
    char tmp[24];
    char *p = fmt_i64(tmp + sizeof tmp, v);
    resp_bulk(b, p, (size_t)(tmp + sizeof tmp - p));
}

void resp_null(struct resp_buf *b, int proto)
{
    resp_buf_append(b, proto >= 3 ? "_\r\n" : "$-1\r\n", proto >= 3 ? 3 : 5);
}

void resp_null_array(struct resp_buf *b, int proto)
{
    resp_buf_append(b, proto >= 3 ? "_\r\n" : "*-1\r\n", proto >= 3 ? 3 : 5);
}

void resp_array(struct resp_buf *b, size_t n)
{
    put_num(b, '*', (int64_t)n);
}

void resp_push(struct resp_buf *b, size_t n, int proto)
{
    put_num(b, proto >= 3 ? '>' : '*', (int64_t)n);
}

void resp_map(struct resp_buf *b, size_t n, int proto)
{
    if (proto >= 3)
        put_num(b, '%', (int64_t)n);
    else
        put_num(b, '*', (int64_t)(2 * n));
}

void resp_set(struct resp_buf *b, size_t n, int proto)
{
    put_num(b, proto >= 3 ? '~' : '*', (int64_t)n);
}

void resp_double(struct resp_buf *b, double d, int proto)
{
    char tmp[KV_DSTR_MAX];
    size_t n = kv_d2str(tmp, sizeof tmp, d);
    if (proto >= 3)
        put_line(b, ',', tmp, n);
    else
        resp_bulk(b, tmp, n);
}

void resp_bool(struct resp_buf *b, int v, int proto)
{
    if (proto >= 3)
        resp_buf_append(b, v ? "#t\r\n" : "#f\r\n", 4);
    else
        resp_int(b, v ? 1 : 0);
}

void resp_verbatim(struct resp_buf *b, const char *p, size_t n, int proto)
{
    if (proto < 3) {
        resp_bulk(b, p, n);
        return;
    }
    put_num(b, '=', (int64_t)n + 4);
    resp_buf_append(b, "txt:", 4);
    resp_buf_append(b, p, n);
    resp_buf_append(b, "\r\n", 2);
}
