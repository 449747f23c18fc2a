/*
 * fuzz_resp — the RESP request parser (daemon/resp.c) over any bytes, as a
 * client's stream: every command parsed must lie inside the input, and the
 * same stream fed a piece at a time (as reads deliver it) must parse into
 * the same commands as fed whole. Also the inline splitter config files use
 * (resp_split), line by line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

#define MAX_CMDS 256

/* What one parse of the stream gave: each command's arguments, hashed. */
struct trace {
    size_t n;
    uint64_t h[MAX_CMDS];
    int end; /* the last result: RESP_AGAIN or RESP_PROTO */
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Parses data[0, n) fed in pieces of step bytes (0: whole), into t. */
static void parse(const char *data, size_t n, size_t step, struct trace *t)
{
    static const struct resp_limits lim = {
        .max_bulk = 1 << 20, .max_args = 1 << 16, .max_inline = 64 << 10};
    struct resp_req r;
    resp_req_init(&r);
    size_t start = 0, avail = step ? (step < n ? step : n) : n;
    t->n = 0;
    t->end = RESP_AGAIN;
    while (t->n < MAX_CMDS) {
        const char *err = NULL;
        int rc = resp_req_parse(&r, data + start, avail - start, &lim, &err);
        if (rc == RESP_AGAIN) {
            if (avail == n)
                break;
            avail = avail + step < n ? avail + step : n; /* the next read's bytes */
            continue;
        }
        if (rc == RESP_PROTO) {
            if (!err)
                abort(); /* a protocol error always says why */
            t->end = RESP_PROTO;
            break;
        }
        if (r.pos == 0 || r.pos > avail - start)
            abort(); /* a command is consumed, and lies within what was given */
        uint64_t h = 0xcbf29ce484222325ull ^ (rc == RESP_EMPTY);
        for (size_t i = 0; rc == RESP_DONE && i < r.argc; i++) {
            size_t an;
            const char *a = resp_req_arg(&r, data + start, i, &an);
            if (!r.is_inline && (a < data + start || a + an > data + start + r.pos))
                abort(); /* an argument outside its command */
            h = mix(h, a, an);
            h = mix(h, &an, sizeof an);
        }
        t->h[t->n++] = h;
        start += r.pos;
        resp_req_reset(&r);
    }
    resp_req_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = 1 + data[0] % 16; /* how the stream is cut into reads */
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    struct trace whole, pieces;
    parse(p, n, 0, &whole);
    parse(p, n, step, &pieces);
    if (whole.n != pieces.n || memcmp(whole.h, pieces.h, whole.n * sizeof whole.h[0]))
        abort(); /* the commands must not depend on how the bytes arrive */
    if (whole.n < MAX_CMDS && whole.end != pieces.end)
        abort();

    /* The config files' splitter, one line at a time. */
    struct resp_req r;
    resp_req_init(&r);
    for (size_t at = 0; at < n;) {
        const char *nl = memchr(p + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (p + at)) : n - at;
        if (resp_split(&r, p + at, len) == 0)
            for (size_t i = 0; i < r.argc; i++) {
                size_t an;
                const char *a = resp_req_arg(&r, NULL, i, &an);
                if (an && !a)
                    abort();
                volatile char c = an ? a[an - 1] : 0; /* the bytes are readable */
                (void)c;
            }
        resp_req_reset(&r);
        at += len + 1;
    }
    resp_req_free(&r);
    return 0;
}
