/*
 * fuzz_journal — write-back's journal replay (storage/wb_replay.c) over a
 * damaged journal folder. A store is made once, with write-back and no
 * flusher, holding 40 committed record sets of two records each only in
 * its journal (as a kill -9 leaves it). Each input is a list of damages
 * laid over a copy of that folder's journal files: bytes overwritten, a
 * file cut short, bytes appended. The store is then opened, which replays
 * the journal: it may refuse with an error naming the file and offset, or
 * open; nothing may crash or hang. Where the damages only cut files short
 * (what a crash in the middle of a write leaves), an open store must also
 * hold each record set whole or not at all, with its own values, and the
 * sets it holds must be the first ones committed. Bytes written into the
 * journal could, with coverage-guided luck, form a record whose checksum
 * holds; replaying it is then right, so those inputs check only the rest.
 *
 * A damage: file (1 byte, modulo the journal's files), offset (4 bytes,
 * little-endian, modulo the file's size + 1), kind and length (1 byte: the
 * top two bits say overwrite, cut or append; the rest, a length), bytes.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stor.h"
#include "stor_int.h"
#include "t_tmp.h"

#define SETS 40

static char tpl[512]; /* the template store's folder */

static struct stor *open_store(const char *dir, int *rc, const char **err)
{
    struct stor_opts o = {.dir = dir,
                          .block_cache_bytes = 4u << 20,
                          .write_buffer_bytes = 2u << 20,
                          .background_jobs = 2,
                          .writeback = 1};
    struct stor *s = NULL;
    *err = NULL;
    *rc = stor_open(&s, &o, err);
    return *rc ? NULL : s;
}

static void drop_template(void)
{
    t_tmp_rmrf(tpl);
}

static void make_template(void)
{
    if (t_tmp_make(tpl, sizeof tpl, "fuzzj") != 0)
        abort();
    atexit(drop_template);
    wb_test_hooks = (struct wb_test_hooks){.no_flusher = 1};
    int rc;
    const char *err;
    struct stor *s = open_store(tpl, &rc, &err);
    if (!s) {
        fprintf(stderr, "fuzz_journal: stor_open: %d %s\n", rc, err ? err : "");
        abort();
    }
    struct stor_batch b;
    stor_batch_init(&b);
    for (int i = 0; i < SETS; i++) {
        char k[16], v[64];
        snprintf(k, sizeof k, "r%05d", i);
        snprintf(v, sizeof v, "value-%d-%.*s", i, i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        stor_batch_clear(&b);
        stor_batch_put(&b, STOR_CF_META, k, strlen(k), v, strlen(v));
        stor_batch_put(&b, STOR_CF_SUB, k, strlen(k), v, strlen(v));
        if (stor_commit(s, &b) != 0)
            abort();
    }
    stor_batch_destroy(&b);
    stor_close_abandon(s); /* as kill -9: only the journal has them */
    wb_test_hooks = (struct wb_test_hooks){0};
}

static void copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char buf[65536];
    ssize_t n;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            abort();
    if (in < 0 || out < 0)
        abort();
    close(in);
    close(out);
}

/* Copies folder from into to, and its subfolders one level down. */
static void copy_dir(const char *from, const char *to, int depth)
{
    DIR *d = opendir(from);
    if (!d)
        abort();
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char a[1024], b[1024];
        snprintf(a, sizeof a, "%s/%s", from, e->d_name);
        snprintf(b, sizeof b, "%s/%s", to, e->d_name);
        struct stat st;
        if (stat(a, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode) && depth > 0) {
            mkdir(b, 0700);
            copy_dir(a, b, depth - 1);
        } else if (S_ISREG(st.st_mode)) {
            copy_file(a, b);
        }
    }
    closedir(d);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The journal's files in dir, sorted by name; n of them. */
static char **journal_files(const char *dir, size_t *n)
{
    char jd[1024];
    snprintf(jd, sizeof jd, "%s/journal", dir);
    DIR *d = opendir(jd);
    char **names = NULL;
    *n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        names = realloc(names, (*n + 1) * sizeof *names);
        names[*n] = malloc(strlen(jd) + strlen(e->d_name) + 2);
        sprintf(names[*n], "%s/%s", jd, e->d_name);
        (*n)++;
    }
    if (d)
        closedir(d);
    if (*n)
        qsort(names, *n, sizeof *names, cmp_names);
    return names;
}

/* Lays the damages of data over the files; returns whether any wrote
 * bytes (rather than only cutting). */
static bool damage(char **files, size_t nf, const uint8_t *data, size_t size)
{
    bool wrote = false;
    for (size_t at = 0; nf && at + 6 <= size;) {
        const char *f = files[data[at] % nf];
        uint32_t off = (uint32_t)data[at + 1] | (uint32_t)data[at + 2] << 8 |
                       (uint32_t)data[at + 3] << 16 | (uint32_t)data[at + 4] << 24;
        unsigned kind = data[at + 5] >> 6;
        size_t len = data[at + 5] & 63;
        at += 6;
        if (len > size - at)
            len = size - at;
        struct stat st;
        int fd = open(f, O_RDWR | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) != 0)
            abort();
        off_t where = (off_t)(off % ((uint64_t)st.st_size + 1));
        int ok = 0;
        wrote |= kind != 1;
        if (kind == 1)
            ok = ftruncate(fd, where);
        else if (kind == 2)
            ok = pwrite(fd, data + at, len, st.st_size) == (ssize_t)len ? 0 : -1;
        else
            ok = pwrite(fd, data + at, len, where) == (ssize_t)len ? 0 : -1;
        if (ok != 0)
            abort();
        close(fd);
        if (kind != 1)
            at += len;
    }
    return wrote;
}

/* After a replay that succeeded over a journal only cut short: each
 * record set whole or absent, with its own value, and those present the
 * first ones committed. */
static void check(struct stor *s)
{
    bool gap = false;
    for (int i = 0; i < SETS; i++) {
        char k[16], *a = NULL, *b = NULL;
        size_t an = 0, bn = 0;
        snprintf(k, sizeof k, "r%05d", i);
        int ra = stor_get(s, STOR_CF_META, k, strlen(k), &a, &an);
        int rb = stor_get(s, STOR_CF_SUB, k, strlen(k), &b, &bn);
        if ((ra == 0) != (rb == 0))
            abort(); /* half a record set */
        if (ra == 0 && gap)
            abort(); /* a set replayed after one that was not */
        gap |= ra != 0;
        if (ra == 0) {
            char want[64];
            int wn = snprintf(want, sizeof want, "value-%d-%.*s", i, i,
                              "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
            if (an != (size_t)wn || bn != an || memcmp(a, want, an) || memcmp(b, want, bn))
                abort(); /* a value that was never written */
        }
        free(a);
        free(b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!tpl[0])
        make_template();
    char dir[512];
    if (t_tmp_make(dir, sizeof dir, "fuzzj") != 0)
        abort();
    copy_dir(tpl, dir, 1);
    size_t nf;
    char **files = journal_files(dir, &nf);
    bool wrote = damage(files, nf, data, size);
    for (size_t i = 0; i < nf; i++)
        free(files[i]);
    free(files);
    int rc;
    const char *err;
    struct stor *s = open_store(dir, &rc, &err);
    if (s) {
        if (!wrote)
            check(s);
        stor_close(s);
    }
    t_tmp_rmrf(dir);
    return 0;
}
