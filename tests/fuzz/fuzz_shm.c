/*
 * fuzz_shm — libshmkv's reading half (shm/shmc_r.c, and the meta-record
 * decoders of storage/enc.c it applies to what it reads) over a segment
 * whose bytes are arbitrary. A real segment is made once, by the writer,
 * holding strings, inline hashes and negative entries; each input is a list
 * of patches laid over a copy of it (header, index, logs, anything), then
 * read as libshmkv reads: attach, and for each key a read transaction that
 * looks it up, decodes its meta record and walks an inline collection. The
 * reader may refuse the segment or miss; it must never read outside the
 * mapping or its hint file, loop forever, or crash.
 *
 * A patch: offset (4 bytes, little-endian, taken modulo the segment's size
 * or, with the top bit, the hint file's), length (1 byte), the bytes.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "enc.h"
#include "shmc_r.h"
#include "shmc_w.h"

#define NKEYS 48

static char *seg_tpl, *hint_tpl;
static size_t seg_size, hint_size;
static int seg_fd = -1, hint_fd = -1;

/* The cache key of user key k, as libshmkv builds it (database 0). */
static size_t cache_key(char *out, const char *k)
{
    size_t kn = strlen(k);
    out[0] = ENC_CACHE_META;
    return 1 + enc_meta_key(out + 1, 0, enc_slot(k, kn), k, kn);
}

static void key_name(char *out, size_t cap, int i)
{
    snprintf(out, cap, "%c%d", "shn"[i % 3], i);
}

/* An inline hash's payload of n fields: varint(len) field varint(len) value. */
static size_t inline_hash(char *out, int n)
{
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        char f[16], v[16];
        int fn = snprintf(f, sizeof f, "f%02d", i), vn = snprintf(v, sizeof v, "value-%d", i);
        o += enc_varint_put(out + o, (uint32_t)fn);
        memcpy(out + o, f, (size_t)fn);
        o += (size_t)fn;
        o += enc_varint_put(out + o, (uint32_t)vn);
        memcpy(out + o, v, (size_t)vn);
        o += (size_t)vn;
    }
    return o;
}

static void make_template(void)
{
    struct shmc_w_opts o = {.size = 1u << 20, .socket_path = "/fuzz.sock"};
    struct shmc_w *w;
    char err[256];
    if (shmc_w_create(&w, &o, err, sizeof err)) {
        fprintf(stderr, "fuzz_shm: %s\n", err);
        abort();
    }
    shmc_w_beat(w, 0);
    shmc_w_begin(w);
    for (int i = 0; i < NKEYS; i++) {
        char k[16], ck[64], val[1024], inl[512];
        key_name(k, sizeof k, i);
        size_t ckn = cache_key(ck, k);
        struct enc_meta m = {.version = 1 + (uint64_t)i};
        if (k[0] == 'n') {
            shmc_w_put_neg(w, 0, ck, ckn);
            continue;
        }
        if (k[0] == 's') {
            m.type = ENC_TYPE_STRING;
            m.value = "a string value of some length";
            m.vlen = strlen(m.value);
        } else {
            m.type = ENC_TYPE_HASH;
            m.coding = ENC_CODING_INLINE;
            m.size = 1 + (uint64_t)i % 9;
            m.inl = inl;
            m.inln = inline_hash(inl, (int)m.size);
        }
        size_t vn = enc_meta_value(val, &m);
        shmc_w_put(w, 0, ck, ckn, val, vn, 0);
    }
    shmc_w_end(w);
    struct stat st, hst;
    if (fstat(shmc_w_fd(w), &st) || fstat(shmc_w_hint_fd(w), &hst))
        abort();
    seg_size = (size_t)st.st_size;
    hint_size = (size_t)hst.st_size;
    seg_tpl = malloc(seg_size);
    hint_tpl = malloc(hint_size ? hint_size : 1);
    if (!seg_tpl || !hint_tpl || pread(shmc_w_fd(w), seg_tpl, seg_size, 0) != (ssize_t)seg_size ||
        (hint_size && pread(shmc_w_hint_fd(w), hint_tpl, hint_size, 0) != (ssize_t)hint_size))
        abort();
    shmc_w_destroy(w);
    seg_fd = memfd_create("fuzz-seg", MFD_CLOEXEC);
    hint_fd = memfd_create("fuzz-hints", MFD_CLOEXEC);
    if (seg_fd < 0 || hint_fd < 0)
        abort();
}

static volatile unsigned sink;

/* One key as libshmkv reads it: look-up, meta record, inline fields. */
static void read_key(struct shmc_r *r, const char *k, struct shmc_buf *buf)
{
    char ck[64];
    size_t ckn = cache_key(ck, k);
    struct shmc_rtx t;
    shmc_rtx_begin(&t, r, 0);
    const char *v;
    size_t vn;
    if (shmc_rtx_peek(&t, ck, ckn, &v, &vn) == SHMC_HIT) {
        struct enc_meta m;
        if (enc_meta_value_decode(v, vn, &m) == 0) {
            for (size_t i = 0; m.type == ENC_TYPE_STRING && i < m.vlen; i++)
                sink += (unsigned char)m.value[i];
            if (m.coding == ENC_CODING_INLINE) {
                size_t off = 0, fn, xn;
                const char *f, *x;
                while (enc_inline_next(m.inl, m.inln, &off, &f, &fn, &x, &xn) == 1)
                    sink += (unsigned)fn + (unsigned)xn + (fn ? (unsigned char)f[fn - 1] : 0) +
                            (xn ? (unsigned char)x[xn - 1] : 0);
                enc_inline_find(m.inl, m.inln, "f03", 3, &x, &xn);
            }
        }
    }
    shmc_rtx_get(&t, ck, ckn, buf);
    shmc_rtx_end(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!seg_tpl)
        make_template();
    char *seg = malloc(seg_size), *hints = malloc(hint_size ? hint_size : 1);
    if (!seg || !hints)
        abort();
    memcpy(seg, seg_tpl, seg_size);
    memcpy(hints, hint_tpl, hint_size);
    for (size_t at = 0; at + 5 <= size;) {
        uint32_t off = (uint32_t)data[at] | (uint32_t)data[at + 1] << 8 |
                       (uint32_t)data[at + 2] << 16 | (uint32_t)data[at + 3] << 24;
        size_t len = data[at + 4];
        at += 5;
        if (len > size - at)
            len = size - at;
        bool in_hints = off >> 31;
        char *dst = in_hints ? hints : seg;
        size_t cap = in_hints ? hint_size : seg_size;
        for (size_t i = 0; cap && i < len; i++)
            dst[((off & 0x7fffffff) + i) % cap] = (char)data[at + i];
        at += len;
    }
    if (ftruncate(seg_fd, 0) || ftruncate(seg_fd, (off_t)seg_size) ||
        pwrite(seg_fd, seg, seg_size, 0) != (ssize_t)seg_size || ftruncate(hint_fd, 0) ||
        ftruncate(hint_fd, (off_t)hint_size) ||
        (hint_size && pwrite(hint_fd, hints, hint_size, 0) != (ssize_t)hint_size))
        abort();
    free(seg);
    free(hints);

    struct shmc_r r;
    char err[256];
    if (shmc_r_attach(&r, seg_fd, hint_fd, err, sizeof err) != 0)
        return 0; /* refused: a corrupt header, as it should be */
    sink += shmc_r_alive(&r, 1);
    unsigned group;
    uint32_t seq;
    if (shmc_r_dbmap(&r, (unsigned)(size ? data[0] : 0), &group, &seq))
        sink += group + shmc_r_dbmap_same(&r, seq);
    struct shmc_buf buf = {0};
    for (int i = 0; i < NKEYS + 4; i++) {
        char k[16];
        key_name(k, sizeof k, i); /* the last few were never cached */
        read_key(&r, k, &buf);
    }
    free(buf.p);
    shmc_r_detach(&r);
    return 0;
}
