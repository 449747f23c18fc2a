/*
 * test_resp — the protocol module: requests fed whole, byte by byte and
 * pipelined; inline quoting; every protocol error; reply bytes in RESP2/3.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "resp.h"

static const struct resp_limits lim = {.max_bulk = 1000, .max_args = 100, .max_inline = 200};

/* Parses all of s; returns the status and leaves r holding the result. */
static int parse_all(struct resp_req *r, const char *s, size_t n, const char **err)
{
    resp_req_reset(r);
    return resp_req_parse(r, s, n, &lim, err);
}

static void assert_arg(const struct resp_req *r, const char *data, size_t i, const char *want,
                       size_t wn)
{
    size_t n;
    const char *a = resp_req_arg(r, data, i, &n);
    assert_int_equal(n, wn);
    assert_memory_equal(a, want, wn);
}
#define ARG(r, d, i, lit) assert_arg((r), (d), (i), (lit), sizeof(lit) - 1)

static void test_resp_multibulk(void **state)
{
    (void)state;
    struct resp_req r;
    resp_req_init(&r);
    const char *err = NULL;
    const char m[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n";
    assert_int_equal(parse_all(&r, m, sizeof m - 1, &err), RESP_DONE);
    assert_int_equal(r.argc, 3);
    assert_int_equal(r.pos, sizeof m - 1);
    ARG(&r, m, 0, "SET");
    ARG(&r, m, 2, "a\r\nb"); /* binary-safe: CRLF inside a bulk */
    /* An empty bulk. */
    const char e[] = "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n";
    assert_int_equal(parse_all(&r, e, sizeof e - 1, &err), RESP_DONE);
    ARG(&r, e, 1, "");
    resp_req_free(&r);
}

static void test_resp_byte_by_byte(void **state)
{
    (void)state;
    struct resp_req r;
    resp_req_init(&r);
    const char *err;
    const char m[] = "*2\r\n$3\r\nGET\r\n$5\r\nhello\r\n";
    size_t n = sizeof m - 1;
    for (size_t i = 1; i < n; i++)
        assert_int_equal(resp_req_parse(&r, m, i, &lim, &err), RESP_AGAIN);
    assert_int_equal(resp_req_parse(&r, m, n, &lim, &err), RESP_DONE);
    ARG(&r, m, 1, "hello");
    /* Lengths of two and three digits, and 0, cut at every byte. */
    resp_req_reset(&r);
    char big[1024]; /* 700 bytes of frame */
    int bn = snprintf(big, sizeof big, "*12\r\n$0\r\n\r\n");
    for (int i = 1; i < 12; i++)
        bn += snprintf(big + bn, sizeof big - (size_t)bn, "$%d\r\n%0*d\r\n", i * 9, i * 9, 7);
    for (size_t i = 1; i < (size_t)bn; i++)
        assert_int_equal(resp_req_parse(&r, big, i, &lim, &err), RESP_AGAIN);
    assert_int_equal(resp_req_parse(&r, big, (size_t)bn, &lim, &err), RESP_DONE);
    assert_int_equal(r.argc, 12);
    assert_int_equal(r.pos, (size_t)bn);
    ARG(&r, big, 0, "");
    size_t an;
    const char *a = resp_req_arg(&r, big, 11, &an);
    assert_int_equal(an, 99);
    assert_true(a[0] == '0' && a[98] == '7');
    resp_req_free(&r);
}

static void test_resp_pipeline(void **state)
{
    (void)state;
    struct resp_req r;
    resp_req_init(&r);
    const char *err;
    const char m[] = "*1\r\n$4\r\nPING\r\nPING inline\r\n*1\r\n$4\r\nQUIT\r\n";
    size_t n = sizeof m - 1, at = 0;
    const char *want[] = {"PING", "PING", "QUIT"};
    size_t wantc[] = {1, 2, 1};
    for (int i = 0; i < 3; i++) {
        resp_req_reset(&r);
        assert_int_equal(resp_req_parse(&r, m + at, n - at, &lim, &err), RESP_DONE);
        assert_int_equal(r.argc, wantc[i]);
        assert_arg(&r, m + at, 0, want[i], 4);
        at += r.pos;
    }
    assert_int_equal(at, n);
    resp_req_free(&r);
}

static void test_resp_inline(void **state)
{
    (void)state;
    struct resp_req r;
    resp_req_init(&r);
    const char *err;
    const char a[] = "set  k \"a b\\x41\\n\" 'it\\'s'\r\n";
    assert_int_equal(parse_all(&r, a, sizeof a - 1, &err), RESP_DONE);
    assert_int_equal(r.argc, 4);
    ARG(&r, a, 0, "set");
    ARG(&r, a, 2, "a bA\n");
    ARG(&r, a, 3, "it's");
    /* A bare \n ends a line too; blank lines are skipped without a reply. */
    const char b[] = "ping\n";
    assert_int_equal(parse_all(&r, b, sizeof b - 1, &err), RESP_DONE);
    assert_int_equal(r.argc, 1);
    const char c[] = "   \r\n";
    assert_int_equal(parse_all(&r, c, sizeof c - 1, &err), RESP_EMPTY);
    assert_int_equal(r.pos, sizeof c - 1);
    /* Unterminated or glued quotes. */
    const char d[] = "set k \"abc\r\n";
    assert_int_equal(parse_all(&r, d, sizeof d - 1, &err), RESP_PROTO);
    assert_string_equal(err, "ERR Protocol error: unbalanced quotes in request");
    const char e[] = "set k \"abc\"x\r\n";
    assert_int_equal(parse_all(&r, e, sizeof e - 1, &err), RESP_PROTO);
    /* No newline yet: wait, until the line is too long to be a command. */
    const char f[] = "get k";
    assert_int_equal(parse_all(&r, f, sizeof f - 1, &err), RESP_AGAIN);
    char big[300];
    memset(big, 'a', sizeof big);
    assert_int_equal(parse_all(&r, big, sizeof big, &err), RESP_PROTO);
    assert_string_equal(err, "ERR Protocol error: too big inline request");
    resp_req_free(&r);
}

static void test_resp_protocol_errors(void **state)
{
    (void)state;
    struct resp_req r;
    resp_req_init(&r);
    const char *err;
    struct {
        const char *in, *err;
    } c[] = {
        {"*abc\r\n", "ERR Protocol error: invalid multibulk length"},
        {"*101\r\n", "ERR Protocol error: invalid multibulk length"},
        {"*99999999999999999999999\r\n", "ERR Protocol error: invalid multibulk length"},
        {"*2\r\n:1\r\n", "ERR Protocol error: expected '$', got ':'"},
        {"*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length"},
        {"*1\r\n$1001\r\n", "ERR Protocol error: invalid bulk length"},
        {"*1\r\n$1x\r\n", "ERR Protocol error: invalid bulk length"},
        {"*1\r\n$\r\n", "ERR Protocol error: invalid bulk length"},
        /* Redis parses lengths strictly: no leading zeros, no "-0", no '+'. */
        {"*02\r\n", "ERR Protocol error: invalid multibulk length"},
        {"*-0\r\n", "ERR Protocol error: invalid multibulk length"},
        {"*+1\r\n", "ERR Protocol error: invalid multibulk length"},
        {"*1\r\n$02\r\n", "ERR Protocol error: invalid bulk length"},
        {"*1\r\n$-0\r\n", "ERR Protocol error: invalid bulk length"},
        /* Past the in-place reading of 1-9 digits (header_num): ten, and
         * a CR that no LF follows. */
        {"*1\r\n$1000000000\r\n", "ERR Protocol error: invalid bulk length"},
        {"*1\r\r\n", "ERR Protocol error: invalid multibulk length"},
        {"*1\r\n$3\r\r\nabc\r\n", "ERR Protocol error: invalid bulk length"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        assert_int_equal(parse_all(&r, c[i].in, strlen(c[i].in), &err), RESP_PROTO);
        assert_string_equal(err, c[i].err);
    }
    /* Counts of zero or less are empty commands, not errors. */
    assert_int_equal(parse_all(&r, "*0\r\n", 4, &err), RESP_EMPTY);
    assert_int_equal(parse_all(&r, "*-1\r\n", 5, &err), RESP_EMPTY);
    /* A header line that never ends. */
    static char longhdr[70000];
    longhdr[0] = '*';
    memset(longhdr + 1, '1', sizeof longhdr - 1);
    assert_int_equal(parse_all(&r, longhdr, sizeof longhdr, &err), RESP_PROTO);
    assert_string_equal(err, "ERR Protocol error: too big mbulk count string");
    /* A bulk announced but not all there is not an error yet. */
    assert_int_equal(parse_all(&r, "*1\r\n$10\r\nabc", 12, &err), RESP_AGAIN);
    /* The two bytes after a bulk are skipped unchecked, as Redis skips them:
     * the length alone delimits the data. */
    const char g[] = "*2\r\n$1\r\naXY$1\r\nb\r\n";
    assert_int_equal(parse_all(&r, g, sizeof g - 1, &err), RESP_DONE);
    ARG(&r, g, 0, "a");
    ARG(&r, g, 1, "b");
    resp_req_free(&r);
}

static void assert_buf(struct resp_buf *b, const char *want)
{
    assert_int_equal(resp_buf_used(b), strlen(want));
    assert_memory_equal(resp_buf_data(b), want, strlen(want));
    resp_buf_consume(b, resp_buf_used(b));
}

static void test_resp_replies(void **state)
{
    (void)state;
    struct resp_buf b;
    resp_buf_init(&b);
    resp_simple(&b, "OK");
    assert_buf(&b, "+OK\r\n");
    resp_error(&b, "ERR bad\r\ninjected");
    assert_buf(&b, "-ERR bad\r\n");
    resp_errorf(&b, "ERR unknown command '%s'", "foo");
    assert_buf(&b, "-ERR unknown command 'foo'\r\n");
    resp_int(&b, -42);
    assert_buf(&b, ":-42\r\n");
    resp_int(&b, 0);
    assert_buf(&b, ":0\r\n");
    resp_int(&b, INT64_MIN);
    assert_buf(&b, ":-9223372036854775808\r\n");
    resp_int(&b, INT64_MAX);
    assert_buf(&b, ":9223372036854775807\r\n");
    resp_bulk_int(&b, -1234567);
    assert_buf(&b, "$8\r\n-1234567\r\n");
    resp_bulk(&b, "a\0b", 3);
    assert_int_equal(resp_buf_used(&b), 9);
    assert_memory_equal(resp_buf_data(&b), "$3\r\na\0b\r\n", 9);
    resp_buf_consume(&b, 9);
    resp_bulk_int(&b, 7);
    assert_buf(&b, "$1\r\n7\r\n");
    resp_null(&b, 2);
    assert_buf(&b, "$-1\r\n");
    resp_null(&b, 3);
    assert_buf(&b, "_\r\n");
    resp_null_array(&b, 2);
    assert_buf(&b, "*-1\r\n");
    resp_map(&b, 2, 2);
    assert_buf(&b, "*4\r\n");
    resp_map(&b, 2, 3);
    assert_buf(&b, "%2\r\n");
    resp_set(&b, 3, 3);
    assert_buf(&b, "~3\r\n");
    resp_push(&b, 3, 2);
    assert_buf(&b, "*3\r\n");
    resp_push(&b, 4, 3);
    assert_buf(&b, ">4\r\n");
    resp_double(&b, 1.5, 2);
    assert_buf(&b, "$3\r\n1.5\r\n");
    resp_double(&b, -INFINITY, 3);
    assert_buf(&b, ",-inf\r\n");
    resp_bool(&b, 1, 2);
    assert_buf(&b, ":1\r\n");
    resp_bool(&b, 0, 3);
    assert_buf(&b, "#f\r\n");
    resp_verbatim(&b, "x", 1, 3);
    assert_buf(&b, "=5\r\ntxt:x\r\n");
    /* Growth keeps earlier bytes. */
    for (int i = 0; i < 1000; i++)
        resp_int(&b, i);
    assert_memory_equal(resp_buf_data(&b), ":0\r\n:1\r\n", 8);
    resp_buf_free(&b);
}

/* The key hint for a pipelined command: only a whole multibulk header
 * with the key's bytes present gives one. */
static void test_resp_peek_arg1(void **state)
{
    (void)state;
    const char m[] = "*3\r\n$3\r\nSET\r\n$5\r\nmy\r\nk\r\n$1\r\nv\r\n";
    const char *key = strstr(m, "my");
    const char *a;
    size_t an;
    for (size_t n = 0; n < sizeof m; n++) {
        int want = m + n >= key + 5;
        assert_int_equal(resp_peek_arg1(m, n, &a, &an, NULL), want);
        size_t len;
        assert_int_equal(resp_peek_arg1(m, n, &a, &an, &len), want); /* the walk goes on */
        assert_int_equal(len, n == sizeof m - 1 ? n : 0);
        if (want) {
            assert_ptr_equal(a, key);
            assert_int_equal(an, 5); /* binary-safe: "my\r\nk" */
        }
    }
    const char *no[] = {
        "*1\r\n$4\r\nPING\r\n",                     /* no second argument */
        "GET k\r\n",                                /* inline */
        "*2\r\n$3\r\nGET\r\n$-1\r\n",               /* a negative length */
        "*2\r\n$3\r\nGET\r\n$x\r\nk\r\n",           /* not a number */
        "*2\r\n$3\r\nGET\r\n$99999999999\r\nk\r\n", /* eleven digits */
        "*2\r\n$3\r\nGET\r\n$4\nkkkk\r\n",          /* a bare \n */
        "*2\r\n$3\r\nGETX\r\n$1\r\nk\r\n",          /* wrong first length: lands off a '$' */
        "*-1\r\n",
    };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        assert_int_equal(resp_peek_arg1(no[i], strlen(no[i]), &a, &an, NULL), 0);
}

/* The key and the field after it (HSET key field value): the field only
 * once its bytes are there, and only after the key. */
static void test_resp_peek_arg2(void **state)
{
    (void)state;
    const char m[] = "*4\r\n$4\r\nHSET\r\n$1\r\nh\r\n$3\r\nf\r\n\r\n$1\r\nv\r\n";
    const char *key = strstr(m, "$1\r\nh") + 4, *field = strstr(m, "$3") + 4;
    const char *a, *b;
    size_t an, bn;
    for (size_t n = 0; n < sizeof m; n++) {
        int want = (m + n >= key + 1) + (m + n >= field + 3);
        b = NULL;
        assert_int_equal(resp_peek_arg2(m, n, &a, &an, &b, &bn, NULL), want);
        size_t len;
        assert_int_equal(resp_peek_arg2(m, n, &a, &an, &b, &bn, &len), want);
        assert_int_equal(len, n == sizeof m - 1 ? n : 0);
        if (want >= 1)
            assert_true(a == key && an == 1);
        if (want == 2)
            assert_true(b == field && bn == 3); /* binary-safe: "f\r\n" */
        else
            assert_null(b);
    }
    assert_int_equal(resp_peek_arg2("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 20, &a, &an, &b, &bn, NULL),
                     1);
    assert_int_equal(
        resp_peek_arg2("*3\r\n$3\r\nSET\r\n$-1\r\n$1\r\nv\r\n", 25, &a, &an, &b, &bn, NULL), 0);
}

/* The whole command's length, as resp_peek_arg1 gives it with len. */
static size_t peek_len_of(const char *p, size_t n)
{
    const char *a;
    size_t an, len = 12345;
    resp_peek_arg1(p, n, &a, &an, &len);
    return len;
}

/* Where the command after a pipelined one starts: only once all of the
 * command's bytes are there, and never past them. */
static void test_resp_peek_len(void **state)
{
    (void)state;
    const char m[] = "*3\r\n$3\r\nSET\r\n$5\r\nmy\r\nk\r\n$1\r\nv\r\n*1\r\n$4\r\nPING\r\n";
    size_t first = (size_t)(strstr(m, "*1") - m), all = sizeof m - 1;
    for (size_t n = 0; n <= all; n++) {
        assert_int_equal(peek_len_of(m, n), n >= first ? first : 0);
        if (n > first)
            assert_int_equal(peek_len_of(m + first, n - first), n == all ? all - first : 0);
    }
    const char *no[] = {
        "GET k\r\n", /* inline */
        "*0\r\n",    /* no arguments */
        "*-1\r\n",
        "*2\r\n$3\r\nGET\r\n$-1\r\n",      /* a negative length */
        "*2\r\n$3\r\nGET\r\n$1\r\nkk\r\n", /* the length is short of the bytes */
        "*2\r\n$3\r\nGET\r\n:1\r\n",       /* not a bulk string */
    };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        assert_int_equal(peek_len_of(no[i], strlen(no[i])), 0);
}

/* resp_buf_printf: short lines into the room there is, a long one past
 * it, and after data consumed from the front (the buffer may compact). */
static void test_resp_buf_printf(void **state)
{
    (void)state;
    struct resp_buf b;
    resp_buf_init(&b);
    resp_buf_printf(&b, "a:%d\r\n", 1);
    resp_buf_printf(&b, "%s", "");
    assert_int_equal(resp_buf_used(&b), 5);
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    resp_buf_printf(&b, "b:%s\r\n", big);
    assert_int_equal(resp_buf_used(&b), 5 + 2 + 999 + 2);
    assert_memory_equal(resp_buf_data(&b), "a:1\r\nb:xxx", 9);
    resp_buf_consume(&b, resp_buf_used(&b) - 2);
    for (int i = 0; i < 200; i++)
        resp_buf_printf(&b, "%03d", i);
    assert_int_equal(resp_buf_used(&b), 2 + 600);
    assert_memory_equal(resp_buf_data(&b), "\r\n000001002", 11);
    assert_memory_equal(resp_buf_data(&b) + 2 + 597, "199", 3);
    resp_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resp_buf_printf),   cmocka_unit_test(test_resp_multibulk),
        cmocka_unit_test(test_resp_byte_by_byte), cmocka_unit_test(test_resp_pipeline),
        cmocka_unit_test(test_resp_inline),       cmocka_unit_test(test_resp_protocol_errors),
        cmocka_unit_test(test_resp_replies),      cmocka_unit_test(test_resp_peek_arg1),
        cmocka_unit_test(test_resp_peek_arg2),    cmocka_unit_test(test_resp_peek_len),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
