"""cffi (API mode) builder for shmkv._shmkv: compiles a small C module
against the installed libshmkv, found with pkg-config."""
import shlex
import subprocess

from cffi import FFI

ffibuilder = FFI()

# The part of shmkv.h the binding calls, and two helpers of its own.
ffibuilder.cdef(
    """
typedef struct shmkv shmkv;
typedef struct shmkv_reply {
    int type;
    long long integer;
    size_t len;
    char *str;
    size_t elements;
    struct shmkv_reply **element;
} shmkv_reply;
struct shmkv_stats {
    uint64_t hits, misses, retries, commands, attaches;
};
struct shmkv_opts {
    const char *password;
    unsigned db;
    int no_cache;
    int timeout_ms;
    const char *user;
};
int shmkv_open(shmkv **h, const char *socket_path, const struct shmkv_opts *opts);
void shmkv_close(shmkv *h);
void shmkv_reply_free(shmkv_reply *r);
void shmkv_stats(const shmkv *h, struct shmkv_stats *st);
const char *shmkv_cache_error(const shmkv *h);
const char *shmkv_errmsg(void);
void free(void *);

struct shmkvpy_val { int rc; size_t len; char *p; };
struct shmkvpy_val shmkvpy_get(shmkv *h, const char *key, size_t klen);
struct shmkvpy_res { int rc; shmkv_reply *r; };
struct shmkvpy_res shmkvpy_command(shmkv *h, int argc, const char *buf, const size_t *lens);
struct shmkvpy_res shmkvpy_command3(shmkv *h, int argc, const char *a0, size_t n0,
                                    const char *a1, size_t n1, const char *a2, size_t n2);
"""
)

# Results come back as structs by value, so a call allocates no
# out-parameters in Python. A command's arguments arrive as one buffer and
# their lengths, or, for the served reads of up to three words (most of
# them), as three separate arguments: Python then builds no array at all.
SOURCE = r"""
#include <pthread.h>
#include <shmkv.h>
#include <stdlib.h>
#include <string.h>

struct shmkvpy_val { int rc; size_t len; char *p; };

/* The value lands in a buffer of the calling thread's, valid until its
 * next GET: Python copies it out at once and frees nothing. The buffer
 * goes when its thread ends. */
static __thread char *get_buf;
static __thread size_t get_cap;
static pthread_key_t get_key;
static pthread_once_t get_once = PTHREAD_ONCE_INIT;

static void get_key_make(void)
{
    pthread_key_create(&get_key, free);
}

static struct shmkvpy_val shmkvpy_get(shmkv *h, const char *key, size_t klen)
{
    struct shmkvpy_val r = {0, 0, NULL};
    char *v;
    r.rc = shmkv_get(h, key, klen, &v, &r.len);
    if (r.rc != SHMKV_OK)
        return r;
    if (r.len > get_cap) {
        char *b = realloc(get_buf, r.len);
        if (!b) {
            free(v);
            r.rc = SHMKV_ENOMEM;
            return r;
        }
        get_buf = b;
        get_cap = r.len;
        pthread_once(&get_once, get_key_make);
        pthread_setspecific(get_key, b);
    }
    if (r.len)
        memcpy(get_buf, v, r.len);
    free(v);
    r.p = get_buf;
    return r;
}

struct shmkvpy_res { int rc; shmkv_reply *r; };

static struct shmkvpy_res shmkvpy_command(shmkv *h, int argc, const char *buf,
                                          const size_t *lens)
{
    struct shmkvpy_res res = {SHMKV_ENOMEM, NULL};
    const char *small[16];
    const char **argv = argc <= 16 ? small : malloc((size_t)argc * sizeof *argv);
    if (!argv)
        return res;
    for (int i = 0; i < argc; i++) {
        argv[i] = buf;
        buf += lens[i];
    }
    res.rc = shmkv_command(h, &res.r, argc, argv, lens);
    if (argv != small)
        free(argv);
    return res;
}

static struct shmkvpy_res shmkvpy_command3(shmkv *h, int argc, const char *a0, size_t n0,
                                           const char *a1, size_t n1, const char *a2, size_t n2)
{
    struct shmkvpy_res res = {0, NULL};
    const char *argv[3] = {a0, a1, a2};
    size_t lens[3] = {n0, n1, n2};
    res.rc = shmkv_command(h, &res.r, argc, argv, lens);
    return res;
}
"""


def _pkg_config(*args):
    out = subprocess.check_output(["pkg-config", *args, "shmkv"], text=True)
    return shlex.split(out)


def _build_args():
    try:
        cflags = _pkg_config("--cflags")
        libs = _pkg_config("--libs")
        libdir = _pkg_config("--variable=libdir")[0]
    except (OSError, subprocess.CalledProcessError, IndexError) as e:
        raise SystemExit(
            "shmkv: pkg-config cannot find libshmkv (install it, or set "
            f"PKG_CONFIG_PATH to the folder holding shmkv.pc): {e}"
        )
    # The rpath lets the module find libshmkv where pkg-config found it,
    # also outside the loader's default folders.
    return cflags, libs + [f"-Wl,-rpath,{libdir}"]


_cflags, _ldflags = _build_args()
ffibuilder.set_source(
    "shmkv._shmkv", SOURCE, extra_compile_args=_cflags, extra_link_args=_ldflags
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=False)
