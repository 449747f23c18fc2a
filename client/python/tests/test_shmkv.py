"""shmkv.Redis against redis-py's own client on the same shmkvd: every
served read gives the same result (or the same exception), with and
without decode_responses, for present and absent keys, wrong types, expiry
and a daemon restart; the reads really come from shared memory (the
handle's hits, and INFO's shm_local_hits); forked children and threads
read correctly."""
import multiprocessing
import threading
import time

import pytest
import redis

import shmkv

BIG = 1000


def _load(p):
    p.flushall()
    p.set("s1", "hello")
    p.set("n1", 42)
    p.set("empty", "")
    p.set("bin", b"\xff\xfe raw")
    p.set("ttlkey", "soon", ex=100)
    p.hset("h", mapping={"f1": "v1", "f2": "v2", "num": 7})
    p.hset("bigh", mapping={f"f{i}": f"v{i}" for i in range(BIG)})
    p.sadd("st", "m1", "m2", "3")
    p.sadd("ist", 30, -1, 2)
    p.sadd("bigs", *[f"m{i}" for i in range(BIG)])
    p.zadd("z", {"m1": 1.5, "m2": -2, "m3": 1e300})
    p.zadd("bigz", {f"m{i}": i / 7 for i in range(BIG)})
    p.rpush("l", "a", "b", "c")
    p.rpush("bigl", *[f"e{i}" for i in range(BIG)])


KEYS = ["s1", "n1", "empty", "bin", "h", "bigh", "st", "bigs", "z", "bigz", "l", "bigl",
        "nosuch"]

# (method, args): each read a user makes, over present, absent and
# wrong-type keys.
READS = (
    [("get", (k,)) for k in KEYS]
    + [("strlen", (k,)) for k in KEYS]
    + [("type", (k,)) for k in KEYS]
    + [("ttl", (k,)) for k in KEYS]
    + [("exists", tuple(KEYS)), ("exists", ("s1", "s1", "nosuch")), ("exists", ("nosuch",))]
    + [("mget", (KEYS,)), ("mget", (["s1"],)), ("mget", ("s1", "n1", "h"))]
    + [("hget", (k, f)) for k in ("h", "bigh", "s1", "nosuch") for f in ("f1", "f999", "x")]
    + [("hmget", (k, ["f1", "x", "num", "f500"])) for k in ("h", "bigh", "s1", "nosuch")]
    + [("hexists", (k, f)) for k in ("h", "bigh", "st", "nosuch") for f in ("f1", "x")]
    + [("hlen", (k,)) for k in ("h", "bigh", "l", "nosuch")]
    + [("sismember", (k, m)) for k in ("st", "bigs", "h", "nosuch") for m in ("m1", "3", "x")]
    + [("smismember", (k, ["m1", "x", "3", "m999"])) for k in ("st", "bigs", "z", "nosuch")]
    + [("scard", (k,)) for k in ("st", "bigs", "s1", "nosuch")]
    + [("zscore", (k, m)) for k in ("z", "bigz", "st", "nosuch") for m in ("m1", "m3", "x")]
    + [("zmscore", (k, ["m1", "x", "m3", "m999"])) for k in ("z", "bigz", "l", "nosuch")]
    + [("zcard", (k,)) for k in ("z", "bigz", "h", "nosuch")]
    + [("llen", (k,)) for k in ("l", "bigl", "z", "nosuch")]
    + [("lindex", (k, i)) for k in ("l", "bigl", "h", "nosuch") for i in (0, -1, 2, 500, -1001, 5000)]
    + [("lindex", ("l", "x"))]
    + [("hgetall", (k,)) for k in ("h", "bigh", "s1", "nosuch")]
    + [("hkeys", (k,)) for k in ("h", "bigh", "nosuch")]
    + [("hvals", (k,)) for k in ("h", "nosuch")]
    + [("smembers", (k,)) for k in ("st", "ist", "bigs", "h", "nosuch")]
    + [("lrange", (k, a, b)) for k in ("l", "bigl", "nosuch") for a, b in ((0, -1), (-2, 10), (3, 1))]
    + [("zrange", ("z", 0, -1)), ("zrange", ("z", 0, -1, False, True)), ("zrange", ("z", 1, 9)),
       ("zrange", ("bigz", 5, 9, False, True)), ("zrange", ("nosuch", 0, -1)),
       ("zrange", ("z", 0, -1, True)), ("zrange", ("z", 0, -1, False, True, int))]
)


def _outcome(client, method, args):
    try:
        return ("ok", getattr(client, method)(*args))
    except Exception as e:  # the same class and text, or it differs
        return ("raised", type(e).__name__, str(e))


@pytest.fixture(scope="module")
def loaded(daemon):
    _load(redis.Redis(unix_socket_path=daemon.sock))
    return daemon


@pytest.mark.parametrize("decode", [False, True])
def test_reads_match_redis_py(loaded, decode):
    plain = redis.Redis(unix_socket_path=loaded.sock, decode_responses=decode)
    r = shmkv.Redis(unix_socket_path=loaded.sock, decode_responses=decode)
    for _ in range(2):  # the first round fills the cache, the second hits
        for method, args in READS:
            want = _outcome(plain, method, args)
            got = _outcome(r, method, args)
            assert got == want, f"{method}{args}"
    st = r.shm_stats()
    assert st["cache_error"] is None
    assert st["hits"] >= len(READS) // 2, st
    # A small collection whole, from shared memory.
    before = r.shm_stats()["hits"]
    assert r.hgetall("h") == plain.hgetall("h") and r.smembers("ist") == plain.smembers("ist")
    assert r.zrange("z", 0, -1, withscores=True) == plain.zrange("z", 0, -1, withscores=True)
    assert r.shm_stats()["hits"] == before + 3


def test_local_hits_counted_by_daemon(loaded):
    plain = redis.Redis(unix_socket_path=loaded.sock)
    r = shmkv.Redis(unix_socket_path=loaded.sock)
    r.get("s1")
    before = plain.info("shmcache")["shm_local_hits"]
    for _ in range(1000):
        assert r.get("s1") == b"hello"
        assert r.hget("h", "f1") == b"v1"
    deadline = time.monotonic() + 5
    while plain.info("shmcache")["shm_local_hits"] < before + 2000:
        assert time.monotonic() < deadline, "shm_local_hits did not move"
        time.sleep(0.05)


def test_expiry(loaded):
    plain = redis.Redis(unix_socket_path=loaded.sock)
    r = shmkv.Redis(unix_socket_path=loaded.sock)
    plain.set("short", "v")
    plain.hset("shorth", "f", "v")
    plain.pexpire("short", 300)
    plain.pexpire("shorth", 300)
    assert r.get("short") == b"v" and r.get("short") == b"v"
    assert r.hget("shorth", "f") == b"v"
    assert 0 < r.pttl("short") <= 300
    time.sleep(0.4)
    for method, args in [("get", ("short",)), ("hget", ("shorth", "f")), ("ttl", ("short",)),
                         ("pttl", ("short",)), ("exists", ("short", "shorth")),
                         ("type", ("short",))]:
        assert _outcome(r, method, args) == _outcome(plain, method, args), method
    assert r.get("short") is None


def test_pipeline_and_transaction_go_to_the_socket(loaded):
    plain = redis.Redis(unix_socket_path=loaded.sock)
    r = shmkv.Redis(unix_socket_path=loaded.sock)
    for transaction in (False, True):
        results = []
        for c in (plain, r):
            with c.pipeline(transaction=transaction) as p:
                p.get("s1").hget("h", "f1").zscore("z", "m1").smismember("st", ["m1", "x"])
                results.append(p.execute())
        assert results[0] == results[1]
    assert r.set("written", "x") and plain.get("written") == b"x"


def test_select_and_db(loaded):
    redis.Redis(unix_socket_path=loaded.sock, db=3).set("indb3", "three")
    r = shmkv.Redis(unix_socket_path=loaded.sock, db=3)
    assert r.get("indb3") == b"three" and r.get("indb3") == b"three"
    assert shmkv.Redis(unix_socket_path=loaded.sock).get("indb3") is None
    assert r.mget(["indb3", "s1"]) == [b"three", None]


def _child(r, q):
    try:
        q.put((r.get("s1"), r.hget("h", "f2"), r.shm_stats()["hits"] >= 2))
    except Exception as e:  # reported to the parent, which fails
        q.put(repr(e))


def test_fork(loaded):
    r = shmkv.Redis(unix_socket_path=loaded.sock)
    assert r.get("s1") == b"hello"  # the parent's handle exists before the fork
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(r, q)) for _ in range(3)]
    for p in procs:
        p.start()
    got = [q.get(timeout=20) for _ in procs]
    for p in procs:
        p.join(20)
        assert p.exitcode == 0
    assert got == [(b"hello", b"v2", True)] * 3
    assert r.get("s1") == b"hello"  # the parent's handle still works


def test_threads(loaded):
    r = shmkv.Redis(unix_socket_path=loaded.sock)
    errors = []

    def reader(n):
        try:
            for i in range(2000):
                f = f"f{(i * 7 + n) % BIG}"
                assert r.hget("bigh", f) == f"v{f[1:]}".encode()
                assert r.get("s1") == b"hello"
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:3]


def test_daemon_restart(loaded):
    plain = redis.Redis(unix_socket_path=loaded.sock)
    r = shmkv.Redis(unix_socket_path=loaded.sock)
    assert r.get("s1") == b"hello"
    before = r.shm_stats()["attaches"]
    loaded.stop()
    loaded.start()
    plain.set("after", "restart")
    # The next call finds the old socket closed, reconnects, maps the new
    # daemon's segment and answers.
    assert r.get("s1") == b"hello"
    assert r.get("after") == b"restart"
    for method, args in READS[:40]:
        assert _outcome(r, method, args) == _outcome(plain, method, args), f"{method}{args}"
    assert r.shm_stats()["attaches"] > before
