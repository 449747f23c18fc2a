/*
 * resp — the Redis protocol, both directions, with no I/O.
 *
 * Layer: bottom of the daemon; depends on nothing else of ours.
 *
 * Requests: a resumable parser over a client's query buffer. Feed it the
 * bytes received so far; it returns one complete command (argument offsets
 * into the buffer), "need more", or a protocol error with Redis's message.
 * Every length is checked against the limits before anything is allocated
 * or skipped. Parsing state survives between calls, so a command arriving in
 * many reads is scanned once.
 *
 * Replies: append-only writers into a growable byte buffer, in RESP2 or RESP3
 * as the client negotiated (HELLO).
 */
#ifndef SHMKV_RESP_H
#define SHMKV_RESP_H

#include <stddef.h>
#include <stdint.h>

/* ---- byte buffers ---- */

/* A growable buffer; data lives in [off, len). Aborts on OOM. */
struct resp_buf {
    char *p;
    size_t off, len, cap;
};

void resp_buf_init(struct resp_buf *b);
void resp_buf_free(struct resp_buf *b);
/* Makes room for n more bytes at the end; returns where they go. */
char *resp_buf_reserve(struct resp_buf *b, size_t n);
void resp_buf_append(struct resp_buf *b, const void *p, size_t n);
/* Appends printf's output for fmt, however long: INFO's lines. */
void resp_buf_printf(struct resp_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Drops n bytes from the front (after they were written or parsed). */
void resp_buf_consume(struct resp_buf *b, size_t n);
/* Moves data to the start so the buffer does not creep forward. */
void resp_buf_compact(struct resp_buf *b);
static inline size_t resp_buf_used(const struct resp_buf *b)
{
    return b->len - b->off;
}
static inline const char *resp_buf_data(const struct resp_buf *b)
{
    return b->p + b->off;
}

/* ---- requests ---- */

struct resp_limits {
    int64_t max_bulk;  /* proto-max-bulk-len */
    int64_t max_args;  /* most arguments in one multibulk */
    size_t max_inline; /* longest inline command line */
};

/* The parse state of one client. argv offsets are relative to the data
 * start the parser was given (resp_buf_data()), which must not move while a
 * command is half parsed. */
struct resp_req {
    size_t pos;   /* bytes consumed so far for this command */
    int64_t want; /* multibulk arguments announced, -1 before '*N' */
    int64_t bulk; /* length of the bulk being read, -1 before '$N' */
    size_t argc, cap;
    size_t *off, *len; /* argument i: bytes [off[i], off[i] + len[i]) */
    int is_inline;     /* then offsets point into scratch, not the data */
    char *scratch;     /* unquoted inline arguments */
    size_t scratchcap;
};

enum {
    RESP_AGAIN = 0,  /* need more bytes */
    RESP_DONE = 1,   /* one command parsed: argc/off/len, r->pos bytes long */
    RESP_EMPTY = 2,  /* an empty command (blank line, *0): consume r->pos, no reply */
    RESP_PROTO = -1, /* protocol error: reply *err and close the client */
};

void resp_req_init(struct resp_req *r);
void resp_req_free(struct resp_req *r);
/* Forgets the parsed command (keeps memory); call after consuming r->pos. */
void resp_req_reset(struct resp_req *r);
/* Parses from data[r->pos] on. On RESP_PROTO, *err is Redis's message
 * (static text, without the leading '-'). Inline arguments are unquoted into
 * r's own scratch space: use resp_req_arg() to read any argument. */
int resp_req_parse(struct resp_req *r, const char *data, size_t n, const struct resp_limits *lim,
                   const char **err);
/* Splits one text line into arguments with the inline rules (bare words,
 * "..." with escapes, '...'), as config files need. 0, or -1 on unbalanced
 * quotes. Read the arguments with resp_req_arg(r, NULL, i, &n). */
int resp_split(struct resp_req *r, const char *line, size_t n);
/* The second argument (most commands' key) of the multibulk command at the
 * start of p[0, n), when its bytes are all there: 1 and *a, *an; else 0.
 * With len, one walk also gives the whole command's length when all of it
 * is there (any argument count), else 0: where the command after it
 * starts. Checks bounds only, as a hint needs (resp_req_parse judges the
 * command). */
int resp_peek_arg1(const char *p, size_t n, const char **a, size_t *an, size_t *len);
/* resp_peek_arg1, and the third argument (a field or member) too: 2 with
 * both, 1 with the second only, 0 without it. */
int resp_peek_arg2(const char *p, size_t n, const char **a, size_t *an, const char **b, size_t *bn,
                   size_t *len);
/* Argument i of a parsed command. */
const char *resp_req_arg(const struct resp_req *r, const char *data, size_t i, size_t *n);

/* ---- replies ---- */

/* Called with each error reply's text (without the '-') as it is written:
 * the daemon counts them (INFO errorstats). NULL calls nothing. */
extern void (*resp_error_hook)(const char *s, size_t n);

void resp_simple(struct resp_buf *b, const char *s); /* +s */
void resp_error(struct resp_buf *b, const char *s);  /* -s (s without '-') */
/* As resp_error, without resp_error_hook: an error already counted where
 * it arose (a script passing on the error a command replied). */
void resp_error_uncounted(struct resp_buf *b, const char *s);
void resp_errorf(struct resp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void resp_int(struct resp_buf *b, int64_t v);                /* :v */
void resp_bulk(struct resp_buf *b, const char *p, size_t n); /* $n p */
void resp_bulk_cstr(struct resp_buf *b, const char *s);
void resp_bulk_int(struct resp_buf *b, int64_t v);         /* an integer as a bulk */
void resp_null(struct resp_buf *b, int proto);             /* $-1 / _ */
void resp_null_array(struct resp_buf *b, int proto);       /* *-1 / _ */
void resp_array(struct resp_buf *b, size_t n);             /* *n */
void resp_push(struct resp_buf *b, size_t n, int proto);   /* >n / *n (pub/sub) */
void resp_map(struct resp_buf *b, size_t n, int proto);    /* %n / *2n */
void resp_set(struct resp_buf *b, size_t n, int proto);    /* ~n / *n */
void resp_double(struct resp_buf *b, double d, int proto); /* ,d / bulk %.17g */
void resp_bool(struct resp_buf *b, int v, int proto);      /* #t / :1 */
void resp_verbatim(struct resp_buf *b, const char *p, size_t n, int proto); /* =txt: / bulk */

#endif
