/*
 * db_util — Redis's glob patterns (KEYS, SCAN MATCH, PUBSUB CHANNELS, ...),
 * written from its documented behaviour, and whole reads and writes of a
 * file with a running CRC-32C (the counts file a clean shutdown saves).
 * Redis's number formats are the base's (kv_num.h).
 */
#include "db_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

static int fold(int c, int nocase)
{
    return nocase ? tolower(c) : c;
}

/* Matches one non-'*' pattern element at pat[*pi] against c and advances *pi
 * past it. */
static bool glob_one(const char *pat, size_t patn, size_t *pi, unsigned char c, int nocase)
{
    size_t i = *pi;
    unsigned char p = (unsigned char)pat[i];
    if (p == '?') {
        *pi = i + 1;
        return true;
    }
    if (p == '\\' && i + 1 < patn) {
        *pi = i + 2;
        return fold((unsigned char)pat[i + 1], nocase) == fold(c, nocase);
    }
    if (p != '[') {
        *pi = i + 1;
        return fold(p, nocase) == fold(c, nocase);
    }
    /* A set: [abc], [^abc], [a-z], \] escapes; unterminated runs to the end. */
    i++;
    bool neg = i < patn && pat[i] == '^';
    if (neg)
        i++;
    bool match = false;
    while (i < patn && pat[i] != ']') {
        if (pat[i] == '\\' && i + 1 < patn) {
            if (fold((unsigned char)pat[i + 1], nocase) == fold(c, nocase))
                match = true;
            i += 2;
        } else if (i + 2 < patn && pat[i + 1] == '-' && pat[i + 2] != ']') {
            int lo = fold((unsigned char)pat[i], nocase),
                hi = fold((unsigned char)pat[i + 2], nocase);
            if (lo > hi) {
                int t = lo;
                lo = hi;
                hi = t;
            }
            int cc = fold(c, nocase);
            if (cc >= lo && cc <= hi)
                match = true;
            i += 3;
        } else {
            if (fold((unsigned char)pat[i], nocase) == fold(c, nocase))
                match = true;
            i++;
        }
    }
    *pi = i < patn ? i + 1 : i;
    return neg ? !match : match;
}

int db_glob_match(const char *pat, size_t patn, const char *s, size_t sn, int nocase)
{
    /* Greedy matching with one backtrack point: the last '*' seen. Linear
     * in practice and never recursive, so a hostile pattern cannot blow the
     * stack. */
    size_t pi = 0, si = 0, star_pi = (size_t)-1, star_si = 0;
    while (si < sn) {
        if (pi < patn && pat[pi] == '*') {
            while (pi < patn && pat[pi] == '*')
                pi++;
            if (pi == patn)
                return 1;
            star_pi = pi;
            star_si = si;
            continue;
        }
        size_t next = pi;
        if (pi < patn && glob_one(pat, patn, &next, (unsigned char)s[si], nocase)) {
            pi = next;
            si++;
            continue;
        }
        if (star_pi == (size_t)-1)
            return 0;
        pi = star_pi;
        si = ++star_si;
    }
    while (pi < patn && pat[pi] == '*')
        pi++;
    return pi == patn;
}

/* ---- whole reads and writes ---- */

int db_write_all(int fd, const void *p, size_t n, uint32_t *crc)
{
    *crc = kv_crc32c(*crc, p, n);
    for (const char *b = p; n;) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

int db_read_all(int fd, void *p, size_t n, uint32_t *crc)
{
    for (char *b = p; n;) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -EIO; /* 0: the file ends early */
        *crc = kv_crc32c(*crc, b, (size_t)r);
        b += r;
        n -= (size_t)r;
    }
    return 0;
}
