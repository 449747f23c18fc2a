/*
 * fuzz_conf — the configuration parser (daemon/srv_conf.c): the input as a
 * redis.conf file (srv_conf_load), then each of its lines split into words
 * and applied as CONFIG SET's name/value pairs (srv_conf_runtime_set), on
 * a configuration with the defaults. Either may refuse; neither may crash,
 * read out of bounds or leak.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "resp.h"
#include "srv_conf.h"

/* The parts of srv.c the parser calls: the log (nowhere here) and the hook
 * that applies a change to a running server (none here). */
void srv_log(int level, const char *fmt, ...)
{
    (void)level;
    (void)fmt;
}

void srv_conf_changed(void) {}

static int memfd = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (memfd < 0 && (memfd = memfd_create("fuzz-conf", MFD_CLOEXEC)) < 0)
        abort();
    if (ftruncate(memfd, 0) != 0 || pwrite(memfd, data, size, 0) != (ssize_t)size)
        abort();
    char path[64], err[1024];
    snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);

    struct srv_conf c;
    srv_conf_init(&c);
    srv_conf_load(&c, path, err, sizeof err);
    srv_conf_free(&c);

    srv_conf_init(&c);
    struct resp_req r;
    resp_req_init(&r);
    const char *p = (const char *)data;
    for (size_t at = 0; at < size;) {
        const char *nl = memchr(p + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (p + at)) : size - at;
        if (resp_split(&r, p + at, len) == 0 && r.argc >= 2 && r.argc % 2 == 0 && r.argc <= 64) {
            /* Each argument in a block of its own size, without a NUL, as
             * a RESP argument is: a read past its end is caught. */
            struct db_str args[64];
            for (size_t i = 0; i < r.argc; i++) {
                const char *a = resp_req_arg(&r, NULL, i, &args[i].n);
                char *copy = malloc(args[i].n ? args[i].n : 1);
                if (!copy)
                    abort();
                memcpy(copy, a, args[i].n);
                args[i].p = copy;
            }
            srv_conf_runtime_set(&c, args, r.argc, err, sizeof err);
            for (size_t i = 0; i < r.argc; i++)
                free((char *)args[i].p);
        }
        resp_req_reset(&r);
        at += len + 1;
    }
    resp_req_free(&r);
    srv_conf_free(&c);
    return 0;
}
