/*
 * t_tmp — the tests' temp folders, $TMPDIR/shmkv-TAG-PID-XXXXXX, and their
 * removal. A test process that a signal ends (ctest's timeout, an abort in
 * the code under test) runs no teardown and leaves its folders; so the
 * first folder a process makes is preceded by a sweep that removes the
 * folders of processes that no longer run. Header-only.
 */
#ifndef SHMKV_T_TMP_H
#define SHMKV_T_TMP_H

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A folder holding this file is kept by the sweep (SHMKV_TEST_KEEP). */
#define T_TMP_KEPT "kept-for-a-look"

static inline const char *t_tmp_root(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

static int t_tmp_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

/* Removes the shared-memory journal folder that sub/journal-shm under dir
 * names, if it has a name shmkvd makes: a daemon or an engine that was
 * killed leaves it (docs/writeback.md, "Where the journal lives"). */
static inline void t_tmp_rm_journal(const char *dir, const char *sub)
{
    char path[4096], folder[4096] = "";
    snprintf(path, sizeof path, "%s%s%s/journal-shm", dir, *sub ? "/" : "", sub);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(folder, sizeof folder, f))
        folder[strcspn(folder, "\n")] = '\0';
    fclose(f);
    const char *base = strrchr(folder, '/');
    if (base && strncmp(base + 1, "shmkv-journal-", 14) == 0)
        nftw(folder, t_tmp_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Removes dir and all under it, after the journal folder its data folder
 * (dir itself for an engine, dir/data for a daemon) names. */
static inline void t_tmp_rmrf(const char *dir)
{
    t_tmp_rm_journal(dir, "");
    t_tmp_rm_journal(dir, "data");
    nftw(dir, t_tmp_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The process id in a folder name shmkv-TAG-PID-XXXXXX, or 0 if the name
 * has not that form. */
static inline long t_tmp_owner(const char *n)
{
    size_t len = strlen(n);
    if (strncmp(n, "shmkv-", 6) != 0 || len < 6 + 2 + 2 + 6 || n[len - 7] != '-')
        return 0;
    const char *end = n + len - 7, *p = end;
    while (p > n + 6 && p[-1] >= '0' && p[-1] <= '9')
        p--;
    if (p == end || end - p > 9 || p[-1] != '-' || p - 1 == n + 5)
        return 0; /* no digits, too many, or no tag before them */
    return strtol(p, NULL, 10);
}

/* Removes the folders under root whose process no longer runs, unless
 * kept. A process of another user (EPERM) or one that runs is left alone;
 * a reused process id only keeps a folder until a later sweep. */
static inline void t_tmp_sweep(const char *root)
{
    DIR *d = opendir(root);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = t_tmp_owner(e->d_name);
        if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char dir[600], kept[700];
        snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
        snprintf(kept, sizeof kept, "%s/" T_TMP_KEPT, dir);
        struct stat st;
        if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && access(kept, F_OK) != 0)
            t_tmp_rmrf(dir);
    }
    closedir(d);
}

/* Makes a new folder $TMPDIR/shmkv-tag-PID-XXXXXX into out (cap bytes);
 * returns 0, or -1 with errno set. The caller removes it (t_tmp_rmrf). */
static inline int t_tmp_make(char *out, size_t cap, const char *tag)
{
    static bool swept;
    const char *root = t_tmp_root();
    if (!swept) {
        swept = true;
        t_tmp_sweep(root);
    }
    int n = snprintf(out, cap, "%s/shmkv-%s-%ld-XXXXXX", root, tag, (long)getpid());
    if (n < 0 || (size_t)n >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return mkdtemp(out) ? 0 : -1;
}

/* Marks dir as kept for a look: no sweep removes it. */
static inline void t_tmp_keep(const char *dir)
{
    char kept[700];
    snprintf(kept, sizeof kept, "%s/" T_TMP_KEPT, dir);
    FILE *f = fopen(kept, "w");
    if (f)
        fclose(f);
}

#endif
