/*
 * srv_rdb — whole RDB files made from the data (srv_rdb.h).
 *
 * Layout, as redis-server 7.0 writes it: "REDIS0010"; auxiliary fields
 * (0xfa name value: redis-ver, redis-bits, ctime, used-mem, for a replica
 * repl-stream-db, repl-id and repl-offset, then aof-base);
 * each library of FUNCTION (0xf5 and its code); for each database that
 * has keys, 0xfe and its number, 0xfb and its key and expiry counts, then
 * each key: 0xfc and the expiry in ms (little-endian) if it has one, the
 * value's type, the key, the value (rdb.c, as DUMP writes it); 0xff and
 * the CRC-64 of everything before, little-endian.
 */
#include "srv_rdb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "kv_err.h"
#include "rdb.h"
#include "scr.h"
#include "srv_dbmap.h"
#include "stor.h"
#include "kv_mem.h"

enum {
    OP_FUNCTION2 = 0xf5,
    OP_AUX = 0xfa,
    OP_RESIZEDB = 0xfb,
    OP_EXPIRETIME_MS = 0xfc,
    OP_SELECTDB = 0xfe,
    OP_EOF = 0xff,
};

/* What a file is made of: a type layer (the daemon's own, or one opened
 * on a checkpoint by a job's thread), its databases' numbers, FUNCTION's
 * libraries, and the facts of the moment for the auxiliary fields. */
struct source {
    struct db *db;
    int databases;
    const uint8_t *dbmap; /* logical -> physical */
    const struct db_vec *libs;
    size_t used_mem;
    const char *replid; /* a replica's full sync: repl-id and repl-offset too */
    uint64_t repl_offset;
    const atomic_int *stop; /* set: give up between keys (NULL: never) */
};

struct sink {
    struct resp_buf *out;
    const struct source *src;
    uint64_t crc;
    int fd;  /* >= 0: out is written to it whenever it holds FLUSH_AT */
    int err; /* the first write error (errno) */
};

#define FLUSH_AT (1u << 20)

static void sink_flush(struct sink *s)
{
    while (s->fd >= 0 && !s->err && resp_buf_used(s->out)) {
        ssize_t w = write(s->fd, resp_buf_data(s->out), resp_buf_used(s->out));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            s->err = w < 0 ? errno : EIO;
            break;
        }
        resp_buf_consume(s->out, (size_t)w);
    }
}

static void put(struct sink *s, const void *p, size_t n)
{
    if (s->err)
        return; /* the file is lost already: do not gather the rest in memory */
    s->crc = rdb_crc64(s->crc, p, n);
    resp_buf_append(s->out, p, n);
    if (s->fd >= 0 && resp_buf_used(s->out) >= FLUSH_AT)
        sink_flush(s);
}

static void put_u8(struct sink *s, unsigned v)
{
    unsigned char b = (unsigned char)v;
    put(s, &b, 1);
}

static void le64(unsigned char b[8], uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        b[i] = (unsigned char)v;
}

static void put_le64(struct sink *s, uint64_t v)
{
    unsigned char b[8];
    le64(b, v);
    put(s, b, 8);
}

static void put_len(struct sink *s, uint64_t len)
{
    unsigned char b[9];
    put(s, b, rdb_len_encode(len, b));
}

static void put_str(struct sink *s, const char *p, size_t n)
{
    put_len(s, n);
    put(s, p, n);
}

static void put_aux(struct sink *s, const char *name, const char *value)
{
    put_u8(s, OP_AUX);
    put_str(s, name, strlen(name));
    put_str(s, value, strlen(value));
}

static void push_library(void *arg, const char *code, size_t n)
{
    db_vec_push(arg, code, n, 0);
}

/* One key of a database's walk into the file. */
static int put_key(void *arg, const char *k, size_t kn, const struct db_value *v)
{
    struct sink *s = arg;
    if (s->src->stop && atomic_load(s->src->stop))
        return KV_EINVAL; /* stopped */
    size_t bn;
    char *body = rdb_dump(v, &bn); /* type, value, then a 10-byte footer */
    if (v->expire_ms) {
        put_u8(s, OP_EXPIRETIME_MS);
        put_le64(s, v->expire_ms);
    }
    put(s, body, 1);
    put_str(s, k, kn);
    put(s, body + 1, bn - 11);
    free(body);
    return 0;
}

/* One database's keys (physical index phys), under number logical: one
 * walk of its key space (a look-up per key made a 10M-key file in 47 s,
 * against 12 s for the walk). */
static int put_db(struct sink *s, unsigned logical, unsigned phys)
{
    struct db *db = s->src->db;
    uint64_t keys, expires;
    int rc = db_keycount(db, phys, &keys, &expires);
    if (rc || keys == 0)
        return rc;
    put_u8(s, OP_SELECTDB);
    put_len(s, logical);
    put_u8(s, OP_RESIZEDB);
    put_len(s, keys);
    put_len(s, expires);
    return db_dump_each(db, phys, put_key, s);
}

/* The whole file into s. */
static int write_all(struct sink *s);

/* The daemon's data as it is now. */
static void source_now(struct source *src, struct db_vec *libs)
{
    db_vec_init(libs);
    scr_fn_each(push_library, libs);
    struct cmd_mem m;
    cmd_mem_read(&m);
    *src = (struct source){.db = srv.db,
                           .databases = srv.conf.databases,
                           .dbmap = srv_dbmap,
                           .libs = libs,
                           .used_mem = m.allocated};
}

int srv_rdb_save(char *err, size_t errlen, uint64_t *bytes)
{
    *err = '\0';
    if (strchr(srv.conf.dbfilename, '/')) {
        snprintf(err, errlen, "dbfilename can't be a path, just a filename");
        return -1;
    }
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof tmp, "%s/temp-%d.rdb", srv.conf.dir, (int)getpid());
    snprintf(path, sizeof path, "%s/%s", srv.conf.dir, srv.conf.dbfilename);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    struct resp_buf out;
    resp_buf_init(&out);
    struct db_vec libs;
    struct source src;
    source_now(&src, &libs);
    struct sink s = {.out = &out, .src = &src, .crc = 0, .fd = fd};
    int rc = write_all(&s);
    sink_flush(&s);
    resp_buf_free(&out);
    db_vec_destroy(&libs);
    off_t size = lseek(fd, 0, SEEK_CUR);
    if (rc)
        snprintf(err, errlen, "reading the data: %s %s", kv_strerror(rc), stor_errmsg());
    else if (s.err || fsync(fd) != 0)
        snprintf(err, errlen, "writing %s: %s", tmp, strerror(s.err ? s.err : errno));
    else if (rename(tmp, path) != 0)
        snprintf(err, errlen, "renaming %s to %s: %s", tmp, path, strerror(errno));
    close(fd);
    if (rc || s.err || *err) {
        unlink(tmp);
        return -1;
    }
    int dfd = open(srv.conf.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { /* the new name, durable as the data */
        fsync(dfd);
        close(dfd);
    }
    *bytes = (uint64_t)size;
    return 0;
}

static int write_all(struct sink *s_)
{
    struct sink s = *s_;
    const struct source *src = s.src;
    char num[32];
    put(&s, "REDIS0010", 9);
    put_aux(&s, "redis-ver", SRV_VERSION);
    put_aux(&s, "redis-bits", "64");
    snprintf(num, sizeof num, "%llu", (unsigned long long)(srv_mstime() / 1000));
    put_aux(&s, "ctime", num);
    snprintf(num, sizeof num, "%zu", src->used_mem);
    put_aux(&s, "used-mem", num);
    if (src->replid) { /* where the stream that follows the file starts */
        put_aux(&s, "repl-stream-db", "0");
        put_aux(&s, "repl-id", src->replid);
        snprintf(num, sizeof num, "%llu", (unsigned long long)src->repl_offset);
        put_aux(&s, "repl-offset", num);
    }
    put_aux(&s, "aof-base", "0");
    for (size_t i = 0; i < src->libs->n; i++) {
        put_u8(&s, OP_FUNCTION2);
        put_str(&s, db_vec_ptr(src->libs, i), db_vec_len(src->libs, i));
    }
    int rc = 0;
    for (int logical = 0; rc == 0 && logical < src->databases; logical++)
        rc = put_db(&s, (unsigned)logical, src->dbmap[logical]);
    if (rc)
        return rc;
    put_u8(&s, OP_EOF);
    unsigned char b[8];
    le64(b, s.crc);
    resp_buf_append(s.out, b, 8); /* the checksum is not part of what it sums */
    *s_ = s;
    return 0;
}

/* ---- files made by a thread ---- */

/* A job's phases: the thread flushes the memtables (FLUSHING), the loop
 * then makes the checkpoint (READY: srv_rdb_job_checkpoint), the thread
 * writes the file (WRITING), and it ends DONE or FAILED. */
enum { J_FLUSHING, J_READY, J_WRITING, J_DONE, J_FAILED };

struct srv_rdb_job {
    pthread_t th;
    char ckpt[4200], path[4200];
    char replid[41];
    struct source src;
    uint8_t dbmap[SRV_DBMAP_N];
    struct db_vec libs;
    atomic_int stop;
    atomic_int phase;
    sem_t go;  /* the loop made the checkpoint (or gave up: stop) */
    int outfd; /* >= 0: the file goes into it (a pipe), not to path */
    char err[9000];
    uint64_t bytes, t0;
};

/* Removes a checkpoint folder and what it holds (files, and the empty
 * journal folder a store opened on it may have made). */
static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(p); /* best effort: what stays is named in no file, and the next start sweeps it */
    return 0;
}

static void rm_tree(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The file from the checkpoint, on the job's thread. */
static int job_write(struct srv_rdb_job *j)
{
    struct stor_opts o = {.dir = j->ckpt,
                          .block_cache_bytes = 256u << 20,
                          .write_buffer_bytes = 4u << 20,
                          .background_jobs = 1,
                          .compression = 1,
                          .max_open_files = 256};
    struct stor *s = NULL;
    struct db *d = NULL;
    const char *msg = NULL;
    int rc = stor_open(&s, &o, &msg);
    if (rc) {
        snprintf(j->err, sizeof j->err, "opening the checkpoint %s: %s %s", j->ckpt,
                 kv_strerror(rc), msg ? msg : "");
        goto out;
    }
    rc = db_create(&d, s, NULL);
    if (rc) {
        snprintf(j->err, sizeof j->err, "opening the checkpoint's key space: %s %s",
                 kv_strerror(rc), stor_errmsg());
        goto out;
    }
    int fd =
        j->outfd >= 0 ? j->outfd : open(j->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(j->err, sizeof j->err, "cannot create %s: %s", j->path, strerror(errno));
        rc = -1;
        goto out;
    }
    struct resp_buf buf;
    resp_buf_init(&buf);
    j->src.db = d;
    struct sink k = {.out = &buf, .src = &j->src, .crc = 0, .fd = fd};
    rc = write_all(&k);
    sink_flush(&k);
    resp_buf_free(&buf);
    bool piped = j->outfd >= 0;
    off_t size = piped ? 0 : lseek(fd, 0, SEEK_CUR);
    if (rc && atomic_load(&j->stop))
        snprintf(j->err, sizeof j->err, "stopped");
    else if (rc)
        snprintf(j->err, sizeof j->err, "reading the checkpoint: %s %s", kv_strerror(rc),
                 stor_errmsg());
    else if (k.err || (!piped && fsync(fd) != 0))
        snprintf(j->err, sizeof j->err, "writing %s: %s", piped ? "to the replicas" : j->path,
                 strerror(k.err ? k.err : errno));
    if (!piped)
        close(fd); /* a pipe's end is closed by job_main, before the job says it is done */
    if (!rc && j->err[0])
        rc = -1;
    if (rc && !piped)
        unlink(j->path);
    j->bytes = size > 0 ? (uint64_t)size : 0;
out:
    db_free(d);
    stor_close(s);
    return rc;
}

/* A piped job's end of the pipe, closed once: its reader then sees EOF. */
static void job_close_out(struct srv_rdb_job *j)
{
    if (j->outfd >= 0)
        close(j->outfd);
    j->outfd = -1;
}

static void *job_main(void *arg)
{
    struct srv_rdb_job *j = arg;
    /* What the memtables hold goes to table files now, off the loop: the
     * checkpoint's own flush then has only what came since. */
    int rc = stor_flush_memtables(srv.stor);
    if (rc) {
        snprintf(j->err, sizeof j->err, "flushing the memtables: %s %s", kv_strerror(rc),
                 stor_errmsg());
        job_close_out(j);
        atomic_store(&j->phase, J_FAILED);
        return NULL;
    }
    atomic_store(&j->phase, J_READY);
    while (sem_wait(&j->go) != 0 && errno == EINTR)
        ;
    if (atomic_load(&j->stop)) { /* no checkpoint came */
        snprintf(j->err, sizeof j->err, "stopped");
        job_close_out(j);
        atomic_store(&j->phase, J_FAILED);
        return NULL;
    }
    rc = job_write(j);
    stor_thread_end();
    rm_tree(j->ckpt);
    job_close_out(j); /* the reader sees the end of the file, then the job's end */
    atomic_store(&j->phase, rc ? J_FAILED : J_DONE);
    return NULL;
}

/* Whether name is one a job leaves in dir: a checkpoint's folder or a
 * temporary file. */
static bool job_leftover(const char *name)
{
    size_t n = strlen(name);
    return !strncmp(name, "rdb-checkpoint-", 15) ||
           (!strncmp(name, "temp-", 5) && n > 4 && !strcmp(name + n - 4, ".rdb"));
}

void srv_rdb_sweep(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!job_leftover(e->d_name))
            continue;
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        rm_tree(p);
        srv_log(LOG_NOTICE, "Removed %s, left by an RDB file being made when shmkvd stopped", p);
    }
    closedir(d);
}

struct srv_rdb_job *srv_rdb_job_start(const char *path, char *err, size_t errlen)
{
    return srv_rdb_job_start_fd(path, -1, err, errlen);
}

struct srv_rdb_job *srv_rdb_job_start_fd(const char *path, int fd, char *err, size_t errlen)
{
    static unsigned seq;
    struct srv_rdb_job *j = kv_xcalloc(1, sizeof *j);
    j->t0 = srv_mstime();
    j->outfd = fd;
    snprintf(j->path, sizeof j->path, "%s", path ? path : "");
    snprintf(j->ckpt, sizeof j->ckpt, "%s/rdb-checkpoint-%d-%u", srv.conf.dir, (int)getpid(),
             seq++);
    db_vec_init(&j->libs);
    sem_init(&j->go, 0, 0);
    rdb_crc64(0, "", 0); /* its table is made before the thread uses it */
    if (pthread_create(&j->th, NULL, job_main, j) != 0) {
        snprintf(err, errlen, "cannot start a thread: %s", strerror(errno));
        job_close_out(j);
        sem_destroy(&j->go);
        free(j);
        return NULL;
    }
    return j;
}

int srv_rdb_job_poll(struct srv_rdb_job *j, char *err, size_t errlen, uint64_t *bytes)
{
    int ph = atomic_load(&j->phase);
    if (ph == J_FAILED) {
        snprintf(err, errlen, "%s", j->err);
        return SRV_RDB_JOB_FAILED;
    }
    if (ph == J_DONE) {
        *bytes = j->bytes;
        return SRV_RDB_JOB_DONE;
    }
    return ph == J_READY ? SRV_RDB_JOB_READY : SRV_RDB_JOB_BUSY;
}

int srv_rdb_job_checkpoint(struct srv_rdb_job *j, const char *replid, uint64_t offset, char *err,
                           size_t errlen)
{
    uint64_t t0 = srv_mstime();
    rm_tree(j->ckpt); /* a crashed run's */
    /* Every acknowledged write into RocksDB, then a checkpoint: the data
     * as of now, which the thread reads while the loop goes on. */
    int rc = stor_drain(srv.stor);
    if (!rc)
        rc = stor_checkpoint(srv.stor, j->ckpt);
    if (rc) {
        snprintf(err, errlen, "checkpoint %s: %s %s", j->ckpt, kv_strerror(rc), stor_errmsg());
        snprintf(j->err, sizeof j->err, "%s", err);
        rm_tree(j->ckpt);
        atomic_store(&j->stop, 1);
        sem_post(&j->go);
        return -1;
    }
    srv_log(LOG_NOTICE, "Checkpoint %s made in %llu ms for an RDB file", j->ckpt,
            (unsigned long long)(srv_mstime() - t0));
    source_now(&j->src, &j->libs);
    memcpy(j->dbmap, srv_dbmap, sizeof j->dbmap);
    j->src.dbmap = j->dbmap;
    j->src.libs = &j->libs;
    j->src.stop = &j->stop;
    if (replid) {
        snprintf(j->replid, sizeof j->replid, "%s", replid);
        j->src.replid = j->replid;
        j->src.repl_offset = offset;
    }
    atomic_store(&j->phase, J_WRITING);
    sem_post(&j->go);
    return 0;
}

uint64_t srv_rdb_job_started(const struct srv_rdb_job *j)
{
    return j->t0;
}

void srv_rdb_job_free(struct srv_rdb_job *j)
{
    if (!j)
        return;
    atomic_store(&j->stop, 1);
    if (atomic_load(&j->phase) <= J_READY)
        sem_post(&j->go); /* a thread waiting for a checkpoint that will not come */
    pthread_join(j->th, NULL);
    if (atomic_load(&j->phase) == J_FAILED && j->path[0])
        unlink(j->path);
    rm_tree(j->ckpt);
    sem_destroy(&j->go);
    db_vec_destroy(&j->libs);
    free(j);
}

/* ---- import ---- */

struct import {
    uint64_t now_ms, keys, expired, libraries;
    char *err;
    size_t errlen;
};

static int import_key(void *arg, unsigned db, const char *k, size_t kn, const struct db_value *v)
{
    struct import *im = arg;
    if (db >= (unsigned)srv.conf.databases) {
        snprintf(im->err, im->errlen, "a key of database %u, past databases %d", db,
                 srv.conf.databases);
        return -1;
    }
    if (v->expire_ms && v->expire_ms <= im->now_ms) {
        im->expired++; /* as redis-server leaves them out when it loads */
        return 0;
    }
    int rc = db_restore(srv.db, srv_dbmap[db], k, kn, v, 1);
    if (rc < 0) {
        snprintf(im->err, im->errlen, "storing key '%.*s': %s %s", (int)(kn < 64 ? kn : 64), k,
                 kv_strerror(rc), stor_errmsg());
        return -1;
    }
    im->keys++;
    return 0;
}

static int import_library(void *arg, const char *code, size_t n)
{
    struct import *im = arg;
    char why[1024];
    if (scr_fn_add(code, n, why, sizeof why)) {
        snprintf(im->err, im->errlen, "a library: %s", why);
        return -1;
    }
    im->libraries++;
    return 0;
}

/* A mapped file read through a caller's callbacks: the pages behind the
 * reader are let go as it goes, so a 10M-key file (268 MB) is not all
 * resident by the end of its load. */
struct mapped {
    const struct rdb_file_cb *cb;
    const char *base;
    size_t dropped;
};

static int mapped_key(void *arg, unsigned db, const char *k, size_t kn, const struct db_value *v)
{
    const struct mapped *m = arg;
    return m->cb->key(m->cb->arg, db, k, kn, v);
}

static int mapped_library(void *arg, const char *code, size_t n)
{
    const struct mapped *m = arg;
    return m->cb->library(m->cb->arg, code, n);
}

static void mapped_progress(void *arg, size_t done)
{
    struct mapped *m = arg;
    size_t upto = done & ~((size_t)sysconf(_SC_PAGESIZE) - 1);
    if (upto > m->dropped) {
        madvise((void *)(m->base + m->dropped), upto - m->dropped, MADV_DONTNEED);
        m->dropped = upto;
    }
    if (m->cb->progress)
        m->cb->progress(m->cb->arg, done);
}

/* Reads the RDB file at path, mapped, through cb (rdb_file_read): 0, or
 * -1 with why in err (a callback's own reason when it stopped). */
static int read_mapped(const char *path, const struct rdb_file_cb *cb, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t n = (size_t)st.st_size;
    const char *p = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : "";
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, errlen, "cannot map %s: %s", path, strerror(errno));
        return -1;
    }
    if (n)
        madvise((void *)p, n, MADV_SEQUENTIAL);
    size_t where = 0;
    *err = '\0';
    struct mapped m = {.cb = cb, .base = p};
    struct rdb_file_cb wrap = {.arg = &m,
                               .key = mapped_key,
                               .library = mapped_library,
                               .progress = n ? mapped_progress : NULL};
    int rc = rdb_file_read(p, n, &wrap, &where);
    if (n)
        munmap((void *)p, n);
    if (rc == RDB_EVERSION)
        snprintf(err, errlen, "not an RDB file of version 10 or older, or its checksum is wrong");
    else if (rc == RDB_EFORMAT)
        snprintf(err, errlen,
                 "at byte %zu of %zu: what is there shmkvd does not keep (a stream, a module's "
                 "data) or cannot read (the file is damaged or cut short)",
                 where, n);
    return rc ? -1 : 0;
}

int srv_rdb_import(const char *path, char *err, size_t errlen)
{
    if (db_keycount_total(srv.db) || scr_fn_libraries()) {
        snprintf(err, errlen, "the data set in %s is not empty: import into an empty one",
                 srv.conf.dir);
        return -1;
    }
    uint64_t t0 = srv_mstime();
    struct import im = {.now_ms = t0, .err = err, .errlen = errlen};
    struct rdb_file_cb cb = {.arg = &im, .key = import_key, .library = import_library};
    if (read_mapped(path, &cb, err, errlen))
        return -1;
    srv_log(LOG_NOTICE,
            "Imported %s: %llu keys (%llu already expired left out), %llu libraries, in %llu ms",
            path, (unsigned long long)im.keys, (unsigned long long)im.expired,
            (unsigned long long)im.libraries, (unsigned long long)(srv_mstime() - t0));
    return 0;
}

/* ---- a replica's full synchronization ---- */

struct load_into {
    void (*tick)(void *arg);
    void *tick_arg;
    const uint8_t *phys;
    struct db_vec *libs;
    uint64_t keys;
    char *err;
    size_t errlen;
};

static int load_into_key(void *arg, unsigned db, const char *k, size_t kn, const struct db_value *v)
{
    struct load_into *li = arg;
    if (db >= (unsigned)srv.conf.databases) {
        snprintf(li->err, li->errlen, "a key of database %u, past databases %d", db,
                 srv.conf.databases);
        return -1;
    }
    /* A key past its expiry stays, as on a Redis replica: the primary
     * deletes it, and its DEL will come through the stream. Reads skip it
     * meanwhile. */
    int rc = db_restore(srv.db, li->phys[db], k, kn, v, 1);
    if (rc < 0) {
        snprintf(li->err, li->errlen, "storing key '%.*s': %s %s", (int)(kn < 64 ? kn : 64), k,
                 kv_strerror(rc), stor_errmsg());
        return -1;
    }
    /* The journal's sync point every so many keys, as the loop's would
     * be: the record sets waiting for it do not pile up in memory. */
    if (++li->keys % 1024 == 0 && (rc = stor_sync(srv.stor)) != 0) {
        snprintf(li->err, li->errlen, "writing the journal: %s", kv_strerror(rc));
        return -1;
    }
    if (li->keys % 64 == 0 && li->tick)
        li->tick(li->tick_arg);
    return 0;
}

static int load_into_library(void *arg, const char *code, size_t n)
{
    struct load_into *li = arg;
    db_vec_push(li->libs, code, n, 0);
    return 0;
}

int srv_rdb_load_into(const char *path, const uint8_t *phys, struct db_vec *libs,
                      void (*tick)(void *arg), void *tick_arg, uint64_t *keys, char *err,
                      size_t errlen)
{
    struct load_into li = {.tick = tick,
                           .tick_arg = tick_arg,
                           .phys = phys,
                           .libs = libs,
                           .err = err,
                           .errlen = errlen};
    struct rdb_file_cb cb = {.arg = &li, .key = load_into_key, .library = load_into_library};
    int rc = read_mapped(path, &cb, err, errlen);
    *keys = li.keys;
    if (rc == 0 && (rc = stor_sync(srv.stor)) != 0)
        snprintf(err, errlen, "writing the journal: %s", kv_strerror(rc));
    return rc ? -1 : 0;
}
