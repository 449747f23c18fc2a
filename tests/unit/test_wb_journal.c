/*
 * test_wb_journal — write-back's journal: replay (clean, unsynced, torn
 * last record, preallocated tail, bad checksum), the zero-filled files
 * appendfsync always uses, and the journal in a shared-memory folder
 * (replayed from wherever the last run kept it; dropped once RocksDB's WAL
 * has it; gone after a reboot; never under appendfsync always), and groups
 * (a script's record sets: replayed whole or not at all).
 */
#include "wb_fixture.h"
#include "t_rnd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <signal.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_wb_journal_replay_clean_and_unsynced(void **state)
{
    struct fx *f = *state;
    struct stor_opts x = {0};
    struct wb_test_hooks h = {.no_flusher = 1};
    struct stor *s = wb_open_hooked(f->dir, &x, &h);
    commit_n(s, 0, 100);
    assert_int_equal(stor_sync(s), 0);
    commit_n(s, 100, 5); /* committed, never synced: never acknowledged */
    assert_int_equal(count_present(s, 105), 105);
    fx_abandon(s); /* as kill -9: nothing reached RocksDB */
    s = wb_open_ok(f->dir, NULL);
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_int_equal(st.replayed_sets, 100);
    assert_int_equal(count_present(s, 105), 100);
    /* Sequence numbers continue after the replayed ones. */
    commit_n(s, 200, 1);
    stor_wb_stats(s, &st);
    assert_int_equal(st.last_seq, 101);
    fx_close(s);
    /* An empty journal (a clean close removes it) replays nothing. */
    s = wb_open_ok(f->dir, NULL);
    stor_wb_stats(s, &st);
    assert_int_equal(st.replayed_sets, 0);
    assert_int_equal(count_present(s, 105), 100);
    fx_close(s);
}

/* Leaves a journal of 50 synced record sets that never reached RocksDB, as
 * a killed daemon would; *path receives the journal file. */
static void journal_of_50(const char *dir, char *path, size_t cap)
{
    struct stor_opts x = {0};
    struct wb_test_hooks h = {.no_flusher = 1};
    struct stor *s = wb_open_hooked(dir, &x, &h);
    commit_n(s, 0, 50);
    assert_int_equal(stor_sync(s), 0);
    fx_abandon(s);
    journal_file(dir, path, cap);
}

static void test_wb_journal_replay_torn_last_record(void **state)
{
    struct fx *f = *state;
    char path[400];
    journal_of_50(f->dir, path, sizeof path);
    struct stat st0;
    assert_int_equal(stat(path, &st0), 0);
    assert_int_equal(truncate(path, st0.st_size - 3), 0); /* a write cut short */
    struct stor *s = wb_open_ok(f->dir, NULL);
    assert_int_equal(count_present(s, 50), 49);
    fx_close(s);
}

/* A journal left by a killed run is replayed at the next start even when
 * that start has write-back off (its records were acknowledged), and only
 * once: a later start with write-back on finds nothing to replay. */
static void test_wb_journal_replayed_without_writeback(void **state)
{
    struct fx *f = *state;
    char path[400];
    journal_of_50(f->dir, path, sizeof path);
    struct stor *s = open_without_wb(f->dir);
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_int_equal(st.replayed_sets, 50);
    assert_int_equal(count_present(s, 50), 50);
    assert_int_not_equal(access(path, F_OK), 0); /* the journal is gone */
    commit_n(s, 50, 1);                          /* written straight to RocksDB */
    fx_close(s);
    s = wb_open_ok(f->dir, NULL);
    stor_wb_stats(s, &st);
    assert_int_equal(st.replayed_sets, 0);
    assert_int_equal(count_present(s, 51), 51);
    fx_close(s);
}

/* fsync, wrapped (tests/CMakeLists.txt): counts the calls on the folder
 * synced_dir names, from any thread. */
int __real_fsync(int fd);
int __wrap_fsync(int fd);
static char synced_dir[400];
static int dir_syncs;

int __wrap_fsync(int fd)
{
    char link[64], path[400];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n > 0 && (path[n] = '\0', strcmp(path, synced_dir) == 0))
        __atomic_add_fetch(&dir_syncs, 1, __ATOMIC_RELAXED);
    return __real_fsync(fd);
}

/* A journal file's name outlives a power loss as its records do: the
 * folder is synced when a file is made, under always before anything in
 * it can be acknowledged, under everysec by the flusher within a second. */
static void test_wb_journal_folder_synced(void **state)
{
    struct fx *f = *state;
    char real[300];
    /* /proc names the resolved path; set before any flusher reads it. */
    assert_non_null(realpath(f->dir, real));
    snprintf(synced_dir, sizeof synced_dir, "%s/journal", real);
    for (int always = 1; always >= 0; always--) {
        __atomic_store_n(&dir_syncs, 0, __ATOMIC_RELAXED);
        struct stor_opts x = {.fsync = always ? STOR_FSYNC_ALWAYS : STOR_FSYNC_EVERYSEC,
                              .journal_segment_bytes = 4096};
        struct stor *s = wb_open_ok(f->dir, &x);
        if (always) /* the first file, made at the open */
            assert_true(__atomic_load_n(&dir_syncs, __ATOMIC_RELAXED) >= 1);
        commit_puts(s, "big", 100, "0123456789abcdef0123456789abcdef0123456789abcdef", 48);
        assert_int_equal(stor_sync(s), 0); /* past 4 KiB: a new file */
        for (int t = 0; t < 300 && !__atomic_load_n(&dir_syncs, __ATOMIC_RELAXED); t++)
            usleep(10 * 1000);
        assert_true(__atomic_load_n(&dir_syncs, __ATOMIC_RELAXED) >= 1);
        fx_close(s);
    }
}

/* A journal file on disk is preallocated; a killed daemon leaves its
 * unwritten end as zeros, which is the end of its records, and a record cut
 * short before them is a torn write like any other. */
static void test_wb_journal_replay_preallocated_tail(void **state)
{
    struct fx *f = *state;
    struct stor_opts x = {.fsync = STOR_FSYNC_ALWAYS, .journal_segment_bytes = 1u << 20};
    struct wb_test_hooks h = {.no_flusher = 1};
    struct stor *s = wb_open_hooked(f->dir, &x, &h);
    char path[400];
    journal_file(f->dir, path, sizeof path);
    struct stat st0;
    assert_int_equal(stat(path, &st0), 0);
    assert_int_equal(st0.st_size, 1u << 20); /* allocated whole at the start */
    commit_n(s, 0, 50);
    assert_int_equal(stor_sync(s), 0);
    fx_abandon(s); /* cuts the file to its records: put the zeros back */
    assert_int_equal(stat(path, &st0), 0);
    assert_true(st0.st_size > 0 && st0.st_size < (1 << 20));
    assert_int_equal(truncate(path, 1 << 20), 0);
    s = wb_open_ok(f->dir, NULL);
    assert_int_equal(count_present(s, 50), 50);
    fx_close(s);

    t_tmp_rmrf(f->dir);
    assert_int_equal(mkdir(f->dir, 0700), 0);
    journal_of_50(f->dir, path, sizeof path);
    assert_int_equal(stat(path, &st0), 0);
    assert_int_equal(truncate(path, st0.st_size - 3), 0);    /* the last record cut short */
    assert_int_equal(truncate(path, st0.st_size + 4096), 0); /* then zeros */
    s = wb_open_ok(f->dir, NULL);
    assert_int_equal(count_present(s, 50), 49);
    fx_close(s);

    /* Zeros at the end of a file that is not the last one: a daemon killed
     * between filling a file and cutting it. */
    t_tmp_rmrf(f->dir);
    assert_int_equal(mkdir(f->dir, 0700), 0);
    x.journal_segment_bytes = 2048;
    s = wb_open_hooked(f->dir, &x, &h);
    for (int i = 0; i < 100; i++) {
        commit_n(s, i, 1);
        assert_int_equal(stor_sync(s), 0); /* files roll after a sync */
    }
    fx_abandon(s);
    char jd[400], first[700] = "";
    snprintf(jd, sizeof jd, "%s/journal", f->dir);
    DIR *d = opendir(jd);
    assert_non_null(d);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d)))
        if (strlen(e->d_name) == 16) {
            files++;
            if (!first[0] || strcmp(e->d_name, strrchr(first, '/') + 1) < 0)
                snprintf(first, sizeof first, "%s/%s", jd, e->d_name);
        }
    closedir(d);
    assert_true(files > 2);
    assert_int_equal(truncate(first, 1 << 16), 0);
    s = wb_open_ok(f->dir, NULL);
    assert_int_equal(count_present(s, 100), 100);
    fx_close(s);
}

/* How many of path's extents are allocated but unwritten; -1 where the file
 * system cannot say (FIEMAP: tmpfs, say). */
static int unwritten_extents(const char *path)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    size_t max = 256;
    struct fiemap *fm = calloc(1, sizeof *fm + max * sizeof fm->fm_extents[0]);
    fm->fm_length = FIEMAP_MAX_OFFSET;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = (unsigned)max;
    int n = -1;
    if (ioctl(fd, FS_IOC_FIEMAP, fm) == 0) {
        n = 0;
        for (unsigned i = 0; i < fm->fm_mapped_extents; i++)
            n += (fm->fm_extents[i].fe_flags & FIEMAP_EXTENT_UNWRITTEN) != 0;
    }
    free(fm);
    close(fd);
    return n;
}

static bool journal_has(const char *dir, const char *name)
{
    char path[400];
    snprintf(path, sizeof path, "%s/journal/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* Journal files in folder; -1 if the folder does not exist. */
/* Journal files in folder; -1 where there is no such folder. */
static int count_files(const char *folder)
{
    DIR *d = opendir(folder);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strlen(e->d_name) == 16;
    closedir(d);
    return n;
}

/* Waits up to 10 s for jprep's spare. */
static void spare_wait(const char *dir)
{
    for (int i = 0; i < 1000 && !journal_has(dir, "spare"); i++)
        usleep(10000);
    assert_true(journal_has(dir, "spare"));
}

/* Under appendfsync always a journal file is written whole with zeros
 * before use (the first by the open, the rest ahead by the jprep thread as
 * the spare), so the fdatasync of each group commit has no extent to turn
 * written. A spare left by a kill serves the next start; a clean close
 * removes it; everysec makes none. */
static void test_wb_journal_always_zeroed_files(void **state)
{
    struct fx *f = *state;
    size_t seg = 64u << 10;
    struct stor_opts x = {.fsync = STOR_FSYNC_ALWAYS, .journal_segment_bytes = seg};
    struct wb_test_hooks h = {.no_flusher = 1};
    struct stor *s = wb_open_hooked(f->dir, &x, &h);
    spare_wait(f->dir);
    char v[1000];
    memset(v, 'z', sizeof v);
    /* A roll is counted by the new file, not by the spare's absence: jprep
     * can make a 64 KiB spare before the sync that took the last returns. */
    char jd[300];
    snprintf(jd, sizeof jd, "%s/journal", f->dir);
    int rolls = 0, nfiles = count_files(jd);
    for (int i = 0; rolls < 4; i++) {
        char pfx[16];
        snprintf(pfx, sizeof pfx, "z%d-", i);
        commit_puts(s, pfx, 8, v, sizeof v);
        assert_int_equal(stor_sync(s), 0);
        int n = count_files(jd);
        if (n != nfiles) { /* the spare was taken: wait for the next */
            assert_int_equal(n, nfiles + 1);
            nfiles = n;
            rolls++;
            spare_wait(f->dir);
        }
    }
    commit_n(s, 0, 50);
    assert_int_equal(stor_sync(s), 0);
    DIR *d = opendir(jd);
    assert_non_null(d);
    struct dirent *e;
    int files = 0, checked = 0;
    while ((e = readdir(d))) {
        if (strlen(e->d_name) != 16)
            continue;
        char path[700];
        snprintf(path, sizeof path, "%s/%s", jd, e->d_name);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        files++;
        int u = unwritten_extents(path);
        if (u >= 0) {
            assert_int_equal(u, 0);
            checked++;
        }
    }
    closedir(d);
    assert_int_equal(files, 5);
    if (checked) { /* the check can fail: an allocated file has such extents */
        char path[400];
        snprintf(path, sizeof path, "%s/allocated", f->dir);
        int fd = open(path, O_WRONLY | O_CREAT, 0600);
        assert_true(fd >= 0);
        assert_int_equal(fallocate(fd, 0, 0, (off_t)seg), 0);
        close(fd);
        assert_true(unwritten_extents(path) > 0);
        unlink(path);
    }
    print_message("journal files without unwritten extents: %d of %d (FIEMAP %s)\n", checked, files,
                  checked ? "answered" : "not supported here");
    fx_abandon(s); /* as kill -9: the spare stays */
    assert_true(journal_has(f->dir, "spare"));
    h.no_flusher = 0; /* a close drains only with the flusher */
    s = wb_open_hooked(f->dir, &x, &h);
    assert_int_equal(count_present(s, 50), 50); /* replayed, on a start that took the spare */
    spare_wait(f->dir);
    fx_close(s);
    assert_false(journal_has(f->dir, "spare"));
    assert_false(journal_has(f->dir, "spare.tmp"));
    struct stor_opts y = {.journal_segment_bytes = seg};
    s = wb_open_ok(f->dir, &y); /* everysec */
    commit_n(s, 0, 10);
    assert_int_equal(stor_sync(s), 0);
    usleep(100000);
    assert_false(journal_has(f->dir, "spare"));
    fx_close(s);
}

static void test_wb_journal_replay_bad_checksum_refuses(void **state)
{
    struct fx *f = *state;
    char path[400];
    journal_of_50(f->dir, path, sizeof path);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    char c;
    assert_int_equal(pread(fd, &c, 1, 30), 1); /* inside the first record's payload */
    c ^= 0x40;
    assert_int_equal(pwrite(fd, &c, 1, 30), 1);
    close(fd);
    int rc;
    const char *err;
    struct stor *s = wb_open_dir(f->dir, NULL, NULL, &rc, &err);
    assert_int_equal(rc, KV_ECORRUPT);
    assert_null(s);
    assert_non_null(err);
    assert_non_null(strstr(err, "bad record at offset 0"));
}

static void shm_opts(struct fx *f, char *shm, size_t cap, struct stor_opts *x)
{
    snprintf(shm, cap, "%s/shm", f->dir);
    if (mkdir(shm, 0700) != 0 && errno != EEXIST)
        fail_msg("mkdir %s: %s", shm, strerror(errno));
    x->journal_shm_dir = shm;
    x->overlay_max_bytes = 8u << 20; /* what the tmpfs must have room for, and more */
}

/* The folder the data folder's journal-shm names, or "" if there is none. */
static void shm_ptr(const char *dir, char *out, size_t cap)
{
    char p[400];
    snprintf(p, sizeof p, "%s/journal-shm", dir);
    out[0] = '\0';
    FILE *fp = fopen(p, "r");
    if (!fp)
        return;
    if (!fgets(out, (int)cap, fp))
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    fclose(fp);
}

static void test_wb_journal_shm_journal_replays_anywhere(void **state)
{
    struct fx *f = *state;
    char shm[300], folder[400], disk[400];
    struct stor_opts x = {0};
    struct wb_test_hooks h = {.no_flusher = 1};
    shm_opts(f, shm, sizeof shm, &x);
    struct stor *s = wb_open_hooked(f->dir, &x, &h);
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_int_equal(st.journal_shm, 1);
    shm_ptr(f->dir, folder, sizeof folder);
    assert_string_equal(st.journal_dir, folder);
    assert_true(strncmp(folder, shm, strlen(shm)) == 0);
    assert_non_null(strstr(folder, "/shmkv-journal-"));
    commit_n(s, 0, 100);
    assert_int_equal(stor_sync(s), 0);
    commit_n(s, 100, 5); /* never synced: never acknowledged */
    fx_abandon(s);
    snprintf(disk, sizeof disk, "%s/journal", f->dir);
    assert_int_equal(count_files(folder), 1);
    assert_int_equal(count_files(disk), -1); /* no folder on disk: the journal is in shm */
    /* Opened again with the journal on disk: the shared-memory folder the
     * last run named is still replayed, then removed with its name. */
    s = wb_open_ok(f->dir, NULL);
    stor_wb_stats(s, &st);
    assert_int_equal(st.journal_shm, 0);
    assert_int_equal(st.replayed_sets, 100);
    assert_int_equal(count_present(s, 105), 100);
    assert_int_equal(count_files(folder), -1);
    char left[400];
    shm_ptr(f->dir, left, sizeof left);
    assert_string_equal(left, "");
    /* Records on disk, then in a new shared-memory folder: both replayed,
     * in order. */
    commit_n(s, 200, 10);
    assert_int_equal(stor_sync(s), 0);
    fx_abandon(s); /* the flusher ran: some may be in RocksDB already */
    s = wb_open_hooked(f->dir, &x, &h);
    commit_n(s, 300, 10);
    assert_int_equal(stor_sync(s), 0);
    fx_abandon(s);
    s = wb_open_ok(f->dir, NULL);
    int found = 0;
    for (int i = 200; i < 310; i++) {
        char k[16], *v;
        size_t vn;
        snprintf(k, sizeof k, "r%05d", i);
        if (stor_get(s, STOR_CF_META, k, strlen(k), &v, &vn) == 0) {
            found++;
            free(v);
        }
    }
    assert_int_equal(found, 20);
    fx_close(s);
}

/* The child of the next test: writes 2000 record sets, waits until the
 * flusher has dropped every closed journal file, says so on fd, and waits
 * to be killed. Exit codes name what went wrong. */
static void wal_child(const char *dir, const struct stor_opts *x, int fd)
{
    int rc;
    const char *err;
    struct stor *s = wb_open_dir(dir, x, NULL, &rc, &err);
    if (rc)
        _exit(2);
    char folder[400];
    shm_ptr(dir, folder, sizeof folder);
    commit_n(s, 0, 2000);
    if (stor_sync(s) != 0 || stor_drain(s) != 0)
        _exit(3);
    int n = 0;
    for (int i = 0; i < 300 && (n = count_files(folder)) > 1; i++)
        usleep(10 * 1000);
    if (n != 1)
        _exit(4);
    if (write(fd, "k", 1) != 1)
        _exit(5);
    for (;;)
        pause();
}

static void test_wb_journal_shm_journal_dropped_once_in_wal(void **state)
{
    struct fx *f = *state;
    char shm[300], folder[400];
    struct stor_opts x = {.journal_segment_bytes = 4096};
    shm_opts(f, shm, sizeof shm, &x);
    int p[2];
    assert_int_equal(pipe(p), 0);
    /* A fresh process (this program again): RocksDB's thread pools outlive
     * a close, and forking a threaded process is not something to test. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        char fd[16];
        snprintf(fd, sizeof fd, "%d", p[1]);
        execl("/proc/self/exe", "test_wb_journal", "--wal-child", f->dir, shm, fd, (char *)NULL);
        _exit(6);
    }
    close(p[1]);
    char c;
    ssize_t got = read(p[0], &c, 1);
    close(p[0]);
    /* Killed with the records only in RocksDB's WAL and memtables. */
    kill(pid, SIGKILL);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (got != 1)
        fail_msg("child exited with %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    shm_ptr(f->dir, folder, sizeof folder);
    assert_int_equal(count_files(folder), 1); /* the current file only */
    struct stor *s = wb_open_ok(f->dir, &x);
    assert_int_equal(count_present(s, 2000), 2000);
    assert_int_equal(count_files(folder), -1); /* replayed and removed */
    char now[400];
    shm_ptr(f->dir, now, sizeof now);
    assert_true(now[0] && strcmp(now, folder) != 0); /* a new folder each run */
    /* A clean close removes the folder and its name. */
    fx_close(s);
    assert_int_equal(count_files(now), -1);
    shm_ptr(f->dir, now, sizeof now);
    assert_string_equal(now, "");
}

static void test_wb_journal_shm_journal_gone_after_reboot(void **state)
{
    struct fx *f = *state;
    char shm[300], folder[400];
    struct stor_opts x = {0};
    shm_opts(f, shm, sizeof shm, &x);
    struct stor *s = wb_open_ok(f->dir, &x);
    shm_ptr(f->dir, folder, sizeof folder);
    commit_n(s, 0, 100);
    assert_int_equal(stor_drain(s), 0);
    fx_abandon(s);
    /* A reboot empties the tmpfs; RocksDB keeps what its WAL has. */
    t_tmp_rmrf(folder);
    s = wb_open_ok(f->dir, &x);
    assert_int_equal(count_present(s, 100), 100);
    fx_close(s);
}

/* A shared-memory journal keeps a high-water mark on disk (journal-acked):
 * the flusher writes it; a start whose journal a reboot wiped while
 * RocksDB lacked acknowledged record sets reports how many, once. */
static void test_wb_journal_shm_journal_loss_reported(void **state)
{
    struct fx *f = *state;
    char shm[300], folder[400], mark[400];
    struct stor_opts x = {0};
    shm_opts(f, shm, sizeof shm, &x);
    snprintf(mark, sizeof mark, "%s/journal-acked", f->dir);
    struct stor *s = wb_open_ok(f->dir, &x);
    commit_n(s, 0, 100);
    assert_int_equal(stor_sync(s), 0);
    uint64_t seq = 0;
    for (int i = 0; i < 300 && (wb_acked_read(s, &seq) != 0 || seq < 100); i++)
        usleep(10 * 1000);
    assert_true(seq >= 100); /* the flusher wrote it */
    assert_int_equal(stor_drain(s), 0);
    fx_abandon(s);
    shm_ptr(f->dir, folder, sizeof folder);
    t_tmp_rmrf(folder); /* everything was in RocksDB: nothing lost */
    s = wb_open_ok(f->dir, &x);
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_int_equal(st.lost_sets, 0);
    assert_int_equal(access(mark, F_OK), -1); /* the mark starts over */
    fx_close(s);

    /* Acknowledged, marked, never in RocksDB, and the tmpfs emptied. */
    struct wb_test_hooks h = {.no_flusher = 1};
    s = wb_open_hooked(f->dir, &x, &h);
    stor_wb_stats(s, &st);
    uint64_t base = st.last_seq;
    commit_n(s, 200, 30);
    assert_int_equal(stor_sync(s), 0);
    assert_int_equal(wb_acked_write(s, base + 30), 0); /* as the flusher would */
    fx_abandon(s);
    shm_ptr(f->dir, folder, sizeof folder);
    t_tmp_rmrf(folder);
    s = wb_open_ok(f->dir, &x);
    stor_wb_stats(s, &st);
    assert_int_equal(st.lost_sets, 30);
    assert_int_equal(st.lost_upto, base + 30);
    assert_int_equal(count_present(s, 100), 100);
    fx_close(s);
    s = wb_open_ok(f->dir, &x); /* said once */
    stor_wb_stats(s, &st);
    assert_int_equal(st.lost_sets, 0);
    fx_close(s);
}

static void test_wb_journal_shm_journal_not_under_always(void **state)
{
    struct fx *f = *state;
    char shm[300], folder[400];
    struct stor_opts x = {.fsync = STOR_FSYNC_ALWAYS};
    shm_opts(f, shm, sizeof shm, &x);
    struct stor *s = wb_open_ok(f->dir, &x);
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_int_equal(st.journal_shm, 0);
    shm_ptr(f->dir, folder, sizeof folder);
    assert_string_equal(folder, "");
    fx_close(s);
}

/* ---- groups: a script's or a transaction's record sets ---- */

/* The magics of the records in journal file path, in order, as a string
 * of '1' (SKJ1) and 'G' (SKJG), into out. */
static void journal_magics(const char *path, char *out, size_t cap)
{
    char *buf;
    size_t n, k = 0;
    assert_int_equal(wb_read_file(path, &buf, &n), 0);
    for (size_t off = 0; off + WB_HDR <= n && k + 1 < cap;) {
        uint32_t m = enc_get_u32(buf + off);
        if (m != WB_MAGIC && m != WB_MAGIC_GROUP)
            break;
        out[k++] = m == WB_MAGIC ? '1' : 'G';
        off += WB_HDR + enc_get_u32(buf + off + 12);
    }
    out[k] = '\0';
    free(buf);
}

/* A group's record sets carry SKJG but the last; record sets outside
 * groups are as they always were; a group, whole, replays, with the
 * record sets before and after it. */
static void test_wb_journal_group_replayed_whole(void **state)
{
    struct fx *f = *state;
    struct wb_test_hooks h = {.no_flusher = 1};
    struct stor *s = wb_open_hooked(f->dir, NULL, &h);
    commit_n(s, 0, 3);
    stor_group_begin(s);
    commit_n(s, 3, 4);
    stor_group_end(s);
    commit_n(s, 7, 2);
    stor_group_begin(s); /* a group of one is a plain record */
    commit_n(s, 9, 1);
    stor_group_end(s);
    stor_group_begin(s); /* an empty group journals nothing */
    stor_group_end(s);
    assert_int_equal(stor_sync(s), 0);
    fx_abandon(s);
    char path[400], magics[64];
    journal_file(f->dir, path, sizeof path);
    journal_magics(path, magics, sizeof magics);
    assert_string_equal(magics, "111GGG1111");
    s = wb_open_ok(f->dir, NULL);
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_int_equal(st.replayed_sets, 10);
    assert_int_equal(st.last_seq, 10);
    assert_int_equal(count_present(s, 10), 10);
    fx_close(s);
}

/* Groups nest: only the outermost end closes one, and nothing of it is
 * journaled before. A sync point inside a group journals what came before
 * the group; a drain waits for that much only. */
static void test_wb_journal_group_nested_and_synced_inside(void **state)
{
    struct fx *f = *state;
    struct stor *s = wb_open_ok(f->dir, NULL);
    struct stor_wb_stats st;
    commit_n(s, 0, 2);
    stor_group_begin(s);
    commit_n(s, 2, 1);
    assert_int_equal(stor_sync(s), 0); /* the two before the group only */
    stor_wb_stats(s, &st);
    uint64_t before = st.journal_bytes;
    assert_true(before > 0);
    stor_group_begin(s);
    commit_n(s, 3, 2);
    stor_group_end(s); /* the inner end: still open */
    assert_int_equal(stor_sync(s), 0);
    assert_int_equal(stor_drain(s), 0); /* returns: waits for the two only */
    stor_wb_stats(s, &st);
    assert_int_equal(st.journal_bytes, before);
    assert_true(st.durable_seq >= 2);
    assert_int_equal(st.last_seq, 5);
    commit_n(s, 5, 1);
    stor_group_end(s);
    assert_int_equal(stor_sync(s), 0);
    stor_wb_stats(s, &st);
    assert_true(st.journal_bytes > before);
    fx_abandon(s);
    char path[400], magics[64];
    journal_file(f->dir, path, sizeof path);
    journal_magics(path, magics, sizeof magics);
    assert_string_equal(magics, "11GGG1");
    s = wb_open_ok(f->dir, NULL);
    assert_int_equal(count_present(s, 6), 6);
    fx_close(s);
}

/* Whether key r<i> is present (both families, as count_present checks). */
static bool present(struct stor *s, int i)
{
    char k[16], *v;
    size_t vn;
    snprintf(k, sizeof k, "r%05d", i);
    if (stor_get(s, STOR_CF_META, k, strlen(k), &v, &vn) != 0)
        return false;
    free(v);
    return true;
}

/* A crash can stop the journal's write of a group anywhere: cut at every
 * byte of its records (the file's end there, or zeros after it, as a
 * preallocated file leaves), replay keeps every record set before the group and none
 * of the group; sequence numbers then go on from before the group. A
 * complete group followed by a torn record set keeps the group. */
static void test_wb_journal_group_torn_anywhere(void **state)
{
    struct fx *f = *state;
    struct wb_test_hooks h = {.no_flusher = 1};
    struct stor *s = wb_open_hooked(f->dir, NULL, &h);
    commit_n(s, 0, 2);
    stor_group_begin(s);
    commit_n(s, 2, 3);
    stor_group_end(s);
    commit_n(s, 5, 1);
    assert_int_equal(stor_sync(s), 0);
    fx_abandon(s);
    char path[400], *buf;
    size_t n;
    journal_file(f->dir, path, sizeof path);
    assert_int_equal(wb_read_file(path, &buf, &n), 0);
    size_t rec[7] = {0}; /* where each record starts, and the end */
    for (int i = 0; i < 6; i++)
        rec[i + 1] = rec[i] + WB_HDR + enc_get_u32(buf + rec[i] + 12);
    assert_int_equal(rec[6], n);
    const char *name = strrchr(path, '/') + 1;
    for (size_t cut = rec[2]; cut <= n; cut++) {
        for (int zeros = 0; zeros < 2; zeros++) {
            /* Zeros after: at each record's start, and every 7th byte
             * (each open costs RocksDB's). */
            bool boundary = false;
            for (int i = 2; i < 6; i++)
                boundary |= cut == rec[i];
            if (zeros && (cut == n || (!boundary && cut % 7)))
                continue;
            char dir[400], jd[450], file[480];
            snprintf(dir, sizeof dir, "%s/cut", f->dir);
            snprintf(jd, sizeof jd, "%s/journal", dir);
            snprintf(file, sizeof file, "%s/%s", jd, name);
            assert_int_equal(mkdir(dir, 0700), 0);
            assert_int_equal(mkdir(jd, 0700), 0);
            int fd = open(file, O_WRONLY | O_CREAT, 0600);
            assert_true(fd >= 0);
            assert_int_equal(write(fd, buf, cut), (ssize_t)cut);
            if (zeros)
                assert_int_equal(ftruncate(fd, (off_t)(cut + 4096)), 0);
            close(fd);
            s = wb_open_hooked(dir, NULL, &h);
            int want = cut == n ? 6 : cut >= rec[5] ? 5 : 2;
            for (int i = 0; i < 6; i++)
                if (present(s, i) != (i < want))
                    fail_msg("cut at %zu of %zu%s: r%05d %s", cut, n, zeros ? ", zeros after" : "",
                             i, i < want ? "missing" : "present");
            struct stor_wb_stats st;
            stor_wb_stats(s, &st);
            assert_int_equal(st.last_seq, (uint64_t)want);
            assert_int_equal(st.replayed_sets, (uint64_t)want);
            fx_close(s);
            t_tmp_rmrf(dir);
        }
    }
    free(buf);
}

/* One journal record made by hand: magic, seq, one put of key = value in
 * the metadata family, the CRC; appended at buf + *n. */
static void hand_record(char *buf, size_t *n, uint32_t magic, uint64_t seq, const char *key,
                        const char *value)
{
    char *r = buf + *n, *p = r + WB_HDR;
    size_t kn = strlen(key), vn = strlen(value);
    p[0] = STOR_OP_PUT;
    p[1] = STOR_CF_META;
    enc_put_u32(p + 2, (uint32_t)kn);
    enc_put_u32(p + 6, (uint32_t)vn);
    memcpy(p + 10, key, kn);
    memcpy(p + 10 + kn, value, vn);
    enc_put_u32(r, magic);
    enc_put_u64(r + 4, seq);
    enc_put_u32(r + 12, (uint32_t)(10 + kn + vn));
    enc_put_u32(r + 16, wb_rec_crc(r, p, 10 + kn + vn));
    *n += WB_HDR + 10 + kn + vn;
}

static void write_journal(const char *dir, uint64_t first, const char *buf, size_t n)
{
    char jd[400], file[450];
    snprintf(jd, sizeof jd, "%s/journal", dir);
    if (mkdir(jd, 0700) != 0 && errno != EEXIST)
        fail_msg("mkdir %s: %s", jd, strerror(errno));
    snprintf(file, sizeof file, "%s/%016llx", jd, (unsigned long long)first);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, n), (ssize_t)n);
    close(fd);
}

static bool meta_is(struct stor *s, const char *key, const char *want)
{
    char *v;
    size_t vn;
    if (stor_get(s, STOR_CF_META, key, strlen(key), &v, &vn) != 0)
        return want == NULL;
    bool same = want && vn == strlen(want) && memcmp(v, want, vn) == 0;
    free(v);
    return same;
}

/* Journals written by hand, byte for byte: the format without groups (as
 * every journal was before them) replays; an SKJG run closed by an SKJ1
 * record replays; one left open at the end of the last file is dropped;
 * one open at the end of an earlier file is damage. */
static void test_wb_journal_group_hand_made(void **state)
{
    struct fx *f = *state;
    char buf[1024];
    size_t n = 0;
    hand_record(buf, &n, WB_MAGIC, 1, "a", "1");
    hand_record(buf, &n, WB_MAGIC, 2, "b", "2");
    hand_record(buf, &n, WB_MAGIC, 3, "c", "3");
    const unsigned char golden[] = {'S', 'K', 'J', '1', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 12};
    assert_memory_equal(buf, golden, sizeof golden); /* the format of every earlier journal */
    write_journal(f->dir, 1, buf, n);
    struct stor *s = wb_open_ok(f->dir, NULL);
    assert_true(meta_is(s, "a", "1") && meta_is(s, "b", "2") && meta_is(s, "c", "3"));
    fx_close(s);

    /* Replay starts after RocksDB's 3: a closed group, then an open one. */
    n = 0;
    hand_record(buf, &n, WB_MAGIC_GROUP, 4, "a", "4");
    hand_record(buf, &n, WB_MAGIC, 5, "b", "5");
    hand_record(buf, &n, WB_MAGIC_GROUP, 6, "a", "6");
    hand_record(buf, &n, WB_MAGIC_GROUP, 7, "c", "7");
    write_journal(f->dir, 4, buf, n);
    s = wb_open_ok(f->dir, NULL);
    assert_true(meta_is(s, "a", "4") && meta_is(s, "b", "5") && meta_is(s, "c", "3"));
    struct stor_wb_stats st;
    stor_wb_stats(s, &st);
    assert_int_equal(st.last_seq, 5);
    fx_close(s);

    /* The same open group, then another file: not a crash's tail. */
    write_journal(f->dir, 6, buf + n / 2, n - n / 2); /* 6 and 7, both SKJG */
    size_t m = 0;
    char next[128];
    hand_record(next, &m, WB_MAGIC, 8, "d", "8");
    write_journal(f->dir, 8, next, m);
    int rc;
    const char *err;
    s = wb_open_dir(f->dir, NULL, NULL, &rc, &err);
    assert_int_equal(rc, KV_ECORRUPT);
    assert_null(s);
    assert_non_null(err);
    assert_non_null(strstr(err, "group open at the end of the file"));
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--wal-child") == 0) {
        struct stor_opts x = {.journal_segment_bytes = 4096,
                              .journal_shm_dir = argv[3],
                              .overlay_max_bytes = 8u << 20};
        wal_child(argv[2], &x, atoi(argv[4]));
    }
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_dir, teardown_dir)
    const struct CMUnitTest tests[] = {
        T(test_wb_journal_replay_clean_and_unsynced),
        T(test_wb_journal_replay_torn_last_record),
        T(test_wb_journal_replayed_without_writeback),
        T(test_wb_journal_folder_synced),
        T(test_wb_journal_replay_preallocated_tail),
        T(test_wb_journal_replay_bad_checksum_refuses),
        T(test_wb_journal_always_zeroed_files),
        T(test_wb_journal_shm_journal_replays_anywhere),
        T(test_wb_journal_shm_journal_dropped_once_in_wal),
        T(test_wb_journal_shm_journal_gone_after_reboot),
        T(test_wb_journal_shm_journal_loss_reported),
        T(test_wb_journal_shm_journal_not_under_always),
        T(test_wb_journal_group_replayed_whole),
        T(test_wb_journal_group_nested_and_synced_inside),
        T(test_wb_journal_group_torn_anywhere),
        T(test_wb_journal_group_hand_made),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
