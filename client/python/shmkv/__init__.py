"""shmkv: redis-py's client, with the reads libshmkv serves taken from
shmkvd's shared-memory cache.

    import shmkv
    r = shmkv.Redis(unix_socket_path="/run/shmkv/shmkv.sock")
    r.set("user:42", "ada")       # redis-py over the Unix socket
    r.get("user:42")              # b'ada', from shared memory when cached

shmkv.Redis is a redis.Redis. The reads in SERVED go through libshmkv,
which answers them from the segment on a hit and from the daemon on a
miss; their results are what redis-py returns for the same reply
(decode_responses, response callbacks and error classes included).
Everything else, pipelines and transactions included, is redis-py's own
path over the socket.
"""
import os
import threading

import redis
from redis.client import EMPTY_RESPONSE, NEVER_DECODE
from redis.connection import BaseParser, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as _ConnError
from redis.exceptions import RedisError, ResponseError

from ._shmkv import ffi as _ffi
from ._shmkv import lib as _lib

_unpack, _get = _ffi.unpack, _lib.shmkvpy_get

__all__ = ["Redis", "SERVED"]

# The commands libshmkv can answer from shared memory (shmkv.h).
SERVED = frozenset(
    "GET MGET EXISTS TYPE TTL PTTL STRLEN HGET HMGET HEXISTS HLEN "
    "SISMEMBER SMISMEMBER SCARD ZSCORE ZMSCORE ZCARD LLEN LINDEX "
    "HGETALL HKEYS HVALS SMEMBERS LRANGE ZRANGE".split()
)

_OK, _NIL, _EIO, _EREPLY, _ECONNECT = 0, 1, -3, -5, -6
_STRING, _ARRAY, _INTEGER, _NILR, _STATUS, _ERROR = 1, 2, 3, 4, 5, 6

# A forked child must not use its parent's handle (they would share the
# socket): fork bumps the generation and each Redis opens a new handle
# when it sees a generation other than its handle's.
_generation = 0


def _forked():
    global _generation
    _generation += 1


os.register_at_fork(after_in_child=_forked)

_parser = BaseParser()  # redis-py's mapping of error texts to classes


def _error(msg):
    """The exception redis-py raises for an error reply's text."""
    return _parser.parse_error(msg)


def _failure(rc):
    msg = _ffi.string(_lib.shmkv_errmsg()).decode("utf-8", "replace")
    if rc == _EREPLY:
        return _error(msg)
    if rc in (_EIO, _ECONNECT):
        return _ConnError(f"shmkv: {msg}")
    return RedisError(f"shmkv: {msg}")


class _Handle:
    """One libshmkv handle; closed when the last reference goes."""

    __slots__ = ("ptr", "generation")

    def __init__(self, path, password, username, db):
        keep = []  # the C strings live until shmkv_open has copied them

        def cstr(v):
            if v is None:
                return _ffi.NULL
            keep.append(_ffi.new("char[]", v.encode() if isinstance(v, str) else v))
            return keep[-1]

        opts = _ffi.new("struct shmkv_opts *")
        opts.password = cstr(password)
        opts.user = cstr(username if password is not None else None)
        opts.db = int(db or 0)
        hp = _ffi.new("shmkv **")
        rc = _lib.shmkv_open(hp, path.encode(), opts)
        if rc != _OK:
            raise _failure(rc)
        self.ptr = hp[0]
        self.generation = _generation

    def __del__(self):
        # Only the process that opened it closes it: in a forked child the
        # socket is the parent's.
        if getattr(self, "ptr", None) is not None and self.generation == _generation:
            _lib.shmkv_close(self.ptr)
            self.ptr = None


class Redis(redis.Redis):
    """redis.Redis over shmkvd's Unix socket, with local reads.

    Takes redis.Redis's arguments; unix_socket_path (or a pool of Unix
    socket connections) must name shmkvd's socket. Over TCP it is plain
    redis.Redis: the segment is only handed over the Unix socket."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        pool = self.connection_pool
        ck = pool.connection_kwargs
        self._shm_path = (
            ck.get("path") if pool.connection_class is UnixDomainSocketConnection else None
        )
        self._shm_auth = (ck.get("password"), ck.get("username"))
        self._shm_db = ck.get("db", 0) or 0
        enc = pool.get_encoder()
        self._shm_encoder = enc
        self._shm_decode = enc.decode_responses
        self._shm_encoding = enc.encoding
        self._shm_errors = enc.encoding_errors
        self._shm_lock = threading.Lock()
        self._shm_h = None

    # ---- the handle ----

    def _shm_handle(self):
        """This process's handle (opened on first use), or None over TCP."""
        h = self._shm_h
        if h is not None and h.generation == _generation:
            return h.ptr
        if self._shm_path is None:
            return None
        with self._shm_lock:
            h = self._shm_h
            if h is None or h.generation != _generation:
                h = self._shm_h = _Handle(self._shm_path, *self._shm_auth, self._shm_db)
        return h.ptr

    def shm_stats(self):
        """This process's libshmkv counters: hits, misses, retries,
        commands, attaches (a dict), and why the cache is not used, if so."""
        h = self._shm_handle()
        if h is None:
            return None
        st = _ffi.new("struct shmkv_stats *")
        _lib.shmkv_stats(h, st)
        why = _lib.shmkv_cache_error(h)
        return {
            "hits": st.hits,
            "misses": st.misses,
            "retries": st.retries,
            "commands": st.commands,
            "attaches": st.attaches,
            "cache_error": _ffi.string(why).decode() if why != _ffi.NULL else None,
        }

    def close(self):
        self._shm_h = None
        super().close()

    # ---- reads ----

    def _shm_key(self, v):
        t = type(v)
        if t is bytes:
            return v
        if t is str:
            return v.encode(self._shm_encoding, self._shm_errors)
        return bytes(self._shm_encoder.encode(v))

    def get(self, name):
        # GET's own path: no argument list, no reply tree (the hot case).
        h = self._shm_h
        if h is None or h.generation != _generation:
            if self._shm_path is None:
                return super().get(name)
            self._shm_handle()
            h = self._shm_h
        key = name if type(name) is bytes else self._shm_key(name)
        r = _get(h.ptr, key, len(key))
        if r.rc == 0:
            v = _unpack(r.p, r.len)
            return v.decode(self._shm_encoding, self._shm_errors) if self._shm_decode else v
        if r.rc == 1:
            return None
        raise _failure(r.rc)

    def execute_command(self, *args, **options):
        name = args[0]
        if (name in SERVED or str(name).upper() in SERVED) and NEVER_DECODE not in options:
            h = self._shm_handle()
            if h is not None:
                return self._shm_execute(h, name, args, options)
        elif str(name).upper() == "SELECT" and self._shm_path is not None:
            # The handle follows the database the client selects.
            rv = super().execute_command(*args, **options)
            self._shm_db = int(args[1])
            self._shm_h = None
            return rv
        return super().execute_command(*args, **options)

    def _shm_execute(self, h, name, args, options):
        enc = self._shm_key
        n = len(args)
        if n <= 3:
            w0 = enc(args[0])
            w1 = enc(args[1]) if n > 1 else b""
            w2 = enc(args[2]) if n > 2 else b""
            res = _lib.shmkvpy_command3(h, n, w0, len(w0), w1, len(w1), w2, len(w2))
        else:
            words = [enc(a) for a in args]
            lens = _ffi.new("size_t[]", [len(w) for w in words])
            res = _lib.shmkvpy_command(h, n, b"".join(words), lens)
        if res.rc != 0:
            raise _failure(res.rc)
        try:
            response = self._shm_convert(res.r)
        finally:
            _lib.shmkv_reply_free(res.r)
        # As redis-py's parse_response: an error reply raises (or gives the
        # command's empty response), then the command's callback.
        if type(response) is not list and isinstance(response, ResponseError):
            if EMPTY_RESPONSE in options:
                return options[EMPTY_RESPONSE]
            raise response
        cb = self.response_callbacks.get(name)
        return cb(response, **options) if cb else response

    def _shm_convert(self, r):
        t = r.type
        if t == _STRING or t == _STATUS:
            v = _unpack(r.str, r.len)
            return v.decode(self._shm_encoding, self._shm_errors) if self._shm_decode else v
        if t == _INTEGER:
            return r.integer
        if t == _NILR:
            return None
        if t == _ARRAY:
            el = r.element
            return [self._shm_convert(el[i]) for i in range(r.elements)]
        return _error(_ffi.unpack(r.str, r.len).decode("utf-8", "replace"))
