/*
 * example — libshmkv in a few lines: write through the daemon, read back
 * from shared memory. Built with the project (so it cannot rot) and shown
 * in the README.
 *
 *   example [SOCKET]     default: data/shmkv.sock (scripts/run.sh's daemon)
 */
#include <stdio.h>
#include <stdlib.h>

#include "shmkv.h"

int main(int argc, char **argv)
{
    const char *sock = argc > 1 ? argv[1] : "data/shmkv.sock";
    shmkv *h;
    if (shmkv_open(&h, sock, NULL) != SHMKV_OK) {
        fprintf(stderr, "example: %s\n", shmkv_errmsg());
        return 1;
    }
    if (shmkv_cache_error(h))
        fprintf(stderr, "example: no shm cache (%s): reads go to the daemon\n",
                shmkv_cache_error(h));

    const char *set[] = {"SET", "greeting", "hello from shmkv"};
    shmkv_reply *r;
    if (shmkv_command(h, &r, 3, set, NULL) != SHMKV_OK) {
        fprintf(stderr, "example: %s\n", shmkv_errmsg());
        return 1;
    }
    shmkv_reply_free(r);

    char *v;
    size_t n;
    for (int i = 0; i < 3; i++) {
        int rc = shmkv_get(h, "greeting", 8, &v, &n);
        if (rc == SHMKV_OK) {
            printf("%.*s\n", (int)n, v);
            free(v);
        } else if (rc == SHMKV_NIL) {
            printf("(nil)\n");
        } else {
            fprintf(stderr, "example: %s\n", shmkv_errmsg());
        }
    }
    struct shmkv_stats st;
    shmkv_stats(h, &st);
    printf("hits %llu, misses %llu, commands sent %llu\n", (unsigned long long)st.hits,
           (unsigned long long)st.misses, (unsigned long long)st.commands);
    shmkv_close(h);
    return 0;
}
