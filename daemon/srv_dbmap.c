/*
 * srv_dbmap — the SWAPDB map and its file (see srv_dbmap.h).
 */
#include "srv_dbmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kv_crc.h"

#define DBMAP_FILE "db-map"

uint8_t srv_dbmap[SRV_DBMAP_N], srv_dbunmap[SRV_DBMAP_N];

static void set_map(const uint8_t *map)
{
    memcpy(srv_dbmap, map, SRV_DBMAP_N);
    for (unsigned i = 0; i < SRV_DBMAP_N; i++)
        srv_dbunmap[map[i]] = (uint8_t)i;
}

/* map, then its CRC32C (host order: the file never leaves its host), into
 * folder/db-map by way of a synced temporary file and a synced folder. */
static int write_map(const char *folder, const uint8_t *map)
{
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof tmp, "%s/" DBMAP_FILE ".tmp", folder);
    snprintf(path, sizeof path, "%s/" DBMAP_FILE, folder);
    uint8_t rec[SRV_DBMAP_N + 4];
    memcpy(rec, map, SRV_DBMAP_N);
    uint32_t crc = kv_crc32c(0, map, SRV_DBMAP_N);
    memcpy(rec + SRV_DBMAP_N, &crc, 4);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = write(fd, rec, sizeof rec) == (ssize_t)sizeof rec && fsync(fd) == 0 ? 0
             : errno                                                             ? -errno
                                                                                 : -EIO;
    close(fd);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc == 0) {
        int dfd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || fsync(dfd) != 0)
            rc = -errno;
        if (dfd >= 0)
            close(dfd);
    }
    if (rc)
        unlink(tmp);
    return rc;
}

int srv_dbmap_load(const char *dir, char *err, size_t errlen)
{
    uint8_t map[SRV_DBMAP_N];
    for (unsigned i = 0; i < SRV_DBMAP_N; i++)
        map[i] = (uint8_t)i;
    char path[4200];
    snprintf(path, sizeof path, "%s/" DBMAP_FILE, dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            return -1;
        }
        set_map(map);
        return 0;
    }
    uint8_t rec[SRV_DBMAP_N + 5];
    ssize_t n = read(fd, rec, sizeof rec);
    close(fd);
    uint32_t crc = 0;
    if (n == SRV_DBMAP_N + 4)
        memcpy(&crc, rec + SRV_DBMAP_N, 4);
    bool seen[SRV_DBMAP_N] = {false}, perm = n == SRV_DBMAP_N + 4;
    for (unsigned i = 0; perm && i < SRV_DBMAP_N; i++) {
        perm = !seen[rec[i]];
        seen[rec[i]] = true;
    }
    if (!perm || crc != kv_crc32c(0, rec, SRV_DBMAP_N)) {
        snprintf(err, errlen,
                 "%s is damaged: which database each SWAPDB left where is unknown (restore the "
                 "file from a checkpoint, or remove it to start with no database swapped)",
                 path);
        return -1;
    }
    set_map(rec);
    return 0;
}

int srv_dbmap_swap(const char *dir, unsigned a, unsigned b)
{
    uint8_t map[SRV_DBMAP_N];
    memcpy(map, srv_dbmap, sizeof map);
    uint8_t t = map[a];
    map[a] = map[b];
    map[b] = t;
    int rc = write_map(dir, map);
    if (rc == 0)
        set_map(map);
    return rc;
}

int srv_dbmap_set(const char *dir, const uint8_t *map)
{
    int rc = write_map(dir, map);
    if (rc == 0)
        set_map(map);
    return rc;
}

int srv_dbmap_save_to(const char *folder)
{
    return write_map(folder, srv_dbmap);
}
