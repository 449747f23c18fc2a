#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets into corpus/<target>/:
RESP streams, redis.conf lines, segment and journal damages, and, from a
redis-server started here (Debian's, 7.0), DUMP payloads of every type in
each of its encodings and an RDB file. Run again only to change the seeds;
they are committed.

    tests/fuzz/make_seeds.py        (needs redis-server and python3-redis)
"""
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def resp_seeds():
    put("fuzz_resp", "set_get", b"\x03" + resp("SET", "k", "v") + resp("GET", "k"))
    put("fuzz_resp", "inline", b"\x01" + b'PING\r\nSET "a b" \'c\\x41\'\r\n\r\nGET a\n')
    put("fuzz_resp", "pipeline", b"\x07" + b"".join(resp("HSET", "h", f"f{i}", "x" * i) for i in range(12)))
    put("fuzz_resp", "empty_and_big", b"\x02" + b"*0\r\n*1\r\n$0\r\n\r\n" + resp("SET", "k", "v" * 3000))
    put("fuzz_resp", "bad_len", b"\x05*2\r\n$3\r\nGET\r\n$-7\r\n")
    put("fuzz_resp", "binary", b"\x0b" + resp("SET", b"\x00\xff\r\n", b"\r\n\x00"))


def conf_seeds():
    put("fuzz_conf", "basic", b"port 6380\nbind 127.0.0.1 -::1\nsave 900 1 300 10\n"
        b"maxmemory 1gb\nmaxmemory-policy allkeys-lru\nappendfsync always\n")
    put("fuzz_conf", "quoted", b'requirepass "p a\\x20ss"\ndir \'/tmp/x\'\n# comment\n'
        b"  loglevel verbose\nuser alice on >pw ~k* +get\n")
    put("fuzz_conf", "set_pairs", b"hash-max-listpack-entries 64 zset-max-listpack-value 32\n"
        b"shm-cache-size 32mb overlay-max-memory 128mb\nclient-output-buffer-limit "
        b'"normal 0 0 0 replica 256mb 64mb 60"\nnotify-keyspace-events KEA\n')
    put("fuzz_conf", "bad", b'port 99999\nbind "unbalanced\nunknown-directive 1\nsave x\n')


def patch(off, data):
    return struct.pack("<IB", off, len(data)) + data


def shm_seeds():
    put("fuzz_shm", "none", b"")
    put("fuzz_shm", "header_byte", patch(8, b"\x01"))
    put("fuzz_shm", "index", patch(4096, b"\xff" * 16) + patch(8192, b"\x00" * 8))
    put("fuzz_shm", "logs", patch(300000, b"\xde\xad\xbe\xef" * 8) + patch(700000, b"\x7f" * 40))
    put("fuzz_shm", "hints", patch(0x80000010, b"\x01\x02\x03"))


def journal_seeds():
    def dmg(f, off, kind, data=b"", length=None):
        n = len(data) if length is None else length
        return struct.pack("<BIB", f, off, (kind << 6) | n) + data

    put("fuzz_journal", "none", b"")
    put("fuzz_journal", "flip", dmg(0, 100, 0, b"\x5a"))
    put("fuzz_journal", "cut", dmg(0, 777, 1, length=0))
    put("fuzz_journal", "tail", dmg(0, 0, 2, b"\x00" * 24))
    put("fuzz_journal", "zeros", dmg(0, 40, 0, b"\x00" * 60) + dmg(0, 1500, 1, length=0))


def lua_seeds():
    # fuzz_lua's opcodes (op % 12): 0 string, 1 number, 2 NaN/inf, 3 bool,
    # 4 nil, 5 table, 6 array item, 7 field, 8 itself, 9 set key, 10 append.
    def string(b):
        return bytes([0, len(b)]) + b
    put("fuzz_lua", "array", string(b"a") + bytes([10]) + string(b"bc") + bytes([10, 3 | 16, 10]))
    put("fuzz_lua", "err", string(b"ERR x") + bytes([7]))  # field 0: err
    put("fuzz_lua", "ok", string(b"FINE") + bytes([7 | 16]))  # field 1: ok
    put("fuzz_lua", "double", bytes([1]) + struct.pack("<d", 3.25) + bytes([7 | 32]))
    put("fuzz_lua", "map", bytes([5]) + string(b"k") + string(b"v") + bytes([9, 11]) +
        bytes([7 | 64]))  # field 4: map
    put("fuzz_lua", "nested", bytes([5, 5, 8, 10, 10, 2 | 16, 10]))
    put("fuzz_lua", "self_twice", bytes([8, 8 | 16]))


def redis_seeds():
    tmp = tempfile.mkdtemp(prefix="shmkv-seeds-")
    sock = os.path.join(tmp, "r.sock")
    p = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--dir", tmp,
                          "--save", "", "--appendonly", "no"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = None
        for _ in range(100):
            try:
                r = redis.Redis(unix_socket_path=sock)
                r.ping()
                break
            except (redis.ConnectionError, FileNotFoundError):
                time.sleep(0.05)
        r.set("str", "hello")
        r.set("int", 12345)
        r.set("long", "x" * 300)
        r.hset("hl", mapping={"a": 1, "b": "two"})  # listpack
        r.hset("hh", mapping={f"f{i}": "y" * 80 for i in range(200)})  # hashtable
        r.sadd("si", 1, 2, 300000, -5)  # intset
        r.sadd("sh", "a", "b", "c")  # hashtable
        r.zadd("zl", {"a": 1.5, "b": -2})  # listpack
        r.zadd("zs", {f"m{i}": i / 3 for i in range(200)})  # skiplist
        r.rpush("l", "a", 1, "c" * 70)  # quicklist of listpacks
        r.rpush("lb", *["e" * 50 for _ in range(300)])
        for k in r.keys():
            k = k.decode()
            put("fuzz_restore", k, r.dump(k)[:-10])  # the harness adds the footer
        r.execute_command("FUNCTION", "LOAD", "#!lua name=seedlib\n"
                          "redis.register_function('f', function() return 1 end)")
        r.expire("str", 100000)
        r.select(3)
        r.set("in3", "three")
        r.save()
        with open(os.path.join(tmp, "dump.rdb"), "rb") as f:
            rdb = f.read()
        body = rdb[9:-8] + b"\x00" * 8  # without "REDIS0010"; checksum 0: not checked
        put("fuzz_rdb", "all_types", body)
        put("fuzz_rdb", "empty", b"\xff" + b"\x00" * 8)
        # Found by fuzz_rdb: the header alone, where atoi read past the end.
        put("fuzz_rdb", "regress-header-only", b"")
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    shutil.rmtree(os.path.join(HERE, "corpus"), ignore_errors=True)
    resp_seeds()
    conf_seeds()
    shm_seeds()
    journal_seeds()
    lua_seeds()
    redis_seeds()
