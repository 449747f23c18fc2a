/*
 * shmkvd — entry point. Like redis-server:
 *
 *   shmkvd [config-file] [--name value ...]
 *   shmkvd [config-file] [--name value ...] --import dump.rdb
 *
 * Embedded defaults, then the file, then the command-line options. With
 * --import, it loads an RDB file into the empty data set and exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"
#include "srv_conf.h"

static void usage(FILE *f)
{
    fprintf(f, "Usage: shmkvd [/path/to/shmkv.conf] [--name value ...]\n"
               "       shmkvd [/path/to/shmkv.conf] [--name value ...] --import dump.rdb\n"
               "       shmkvd -v | --version\n"
               "       shmkvd -h | --help\n\n"
               "Examples:\n"
               "       shmkvd                        (embedded defaults: port 6380, ./data)\n"
               "       shmkvd /etc/shmkv.conf\n"
               "       shmkvd --port 7777 --dir /var/lib/shmkv\n");
}

int main(int argc, char **argv)
{
    srv_conf_init(&srv.conf);
    int i = 1;
    if (argc > 1 && (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--version"))) {
        printf("shmkvd v=%s (Redis %s compatible)\n", SHMKV_VERSION, SRV_VERSION);
        return 0;
    }
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    if (argc > 1 && strncmp(argv[1], "--", 2) != 0) {
        char err[512];
        if (srv_conf_load(&srv.conf, argv[1], err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        /* Absolute, as Redis keeps it: INFO shows it, CONFIG REWRITE writes it. */
        char *abs = realpath(argv[1], NULL);
        srv_conf_file = abs ? abs : argv[1];
        i = 2;
    }
    /* --name value [value ...]: values run to the next --option. */
    while (i < argc) {
        if (!strcmp(argv[i], "--import") && i + 1 < argc) {
            srv_import_path = argv[i + 1]; /* not a directive: what this run does */
            i += 2;
            continue;
        }
        if (strncmp(argv[i], "--", 2) != 0 || !argv[i][2]) {
            fprintf(stderr, "shmkvd: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 1;
        }
        const char *name = argv[i] + 2;
        int j = i + 1;
        while (j < argc && strncmp(argv[j], "--", 2) != 0)
            j++;
        const char *err;
        if (srv_conf_set(&srv.conf, name, (const char **)argv + i + 1, j - i - 1, &err)) {
            fprintf(stderr, "shmkvd: --%s: %s\n", name, err);
            return 1;
        }
        i = j;
    }
    int rc = srv_main();
    srv_conf_free(&srv.conf);
    return rc;
}
