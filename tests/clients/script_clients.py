#!/usr/bin/python3
"""script_clients — programs that run Lua scripts, against a real shmkvd.

redis-py's Lock (acquire, blocking acquire, extend, reacquire, release,
a release by a non-owner), redis-cli --eval, and Debian's
prometheus-redis-exporter with --script and --check-key-groups, which
EVAL on every scrape. Starts its own shmkvd (argv[1]) on a free loopback
port in a temporary folder, and stops it by its PID.

Run with Debian's /usr/bin/python3 (python3-redis).
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import redis
from redis.exceptions import LockNotOwnedError
from t_ports import free_port


def wait_for(check, what, seconds=20):
    end = time.time() + seconds
    while time.time() < end:
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.05)
    raise RuntimeError("timed out waiting for " + what)


def check_lock(r):
    a = r.lock("res", timeout=5)
    assert a.acquire(blocking=False)
    assert a.owned() and a.locked()
    b = r.lock("res", timeout=5, thread_local=False)  # acquired in a thread, released here
    assert not b.acquire(blocking=False), "a held lock was acquired again"
    assert not b.acquire(blocking=True, blocking_timeout=0.2)
    # extend (a script): the TTL grows by the time asked
    assert a.extend(10)
    assert r.pttl("res") > 10000, r.pttl("res")
    assert a.extend(3, replace_ttl=True)
    assert r.pttl("res") <= 3000
    assert a.reacquire()
    assert 4000 < r.pttl("res") <= 5000
    # a blocking acquire waits for the release
    got = []
    t = threading.Thread(
        target=lambda: got.append(b.acquire(blocking=True, blocking_timeout=5)))
    t.start()
    time.sleep(0.3)
    assert not got, "acquired while held"
    a.release()
    t.join()
    assert got == [True], got
    # release (a script) by a non-owner, and of a lock that expired, are refused
    other = r.lock("res", timeout=5)
    other.local.token = b"not-the-owner"
    try:
        other.release()
        raise AssertionError("a non-owner released the lock")
    except LockNotOwnedError:
        pass
    assert r.exists("res") == 1
    b.release()
    assert r.exists("res") == 0
    c = r.lock("short", timeout=0.1)
    assert c.acquire(blocking=False)
    time.sleep(0.25)
    try:
        c.release()
        raise AssertionError("an expired lock was released")
    except LockNotOwnedError:
        pass
    print("redis-py Lock: acquire, blocking acquire, extend, reacquire, release: ok")


def check_cli_eval(port, tmp):
    path = os.path.join(tmp, "echo.lua")
    with open(path, "w") as f:
        f.write("redis.call('SET', KEYS[1], ARGV[1])\n"
                "return {KEYS[1], KEYS[2], ARGV[1], redis.call('GET', KEYS[1])}\n")
    out = subprocess.run(["redis-cli", "-p", str(port), "--eval", path, "k1", "k2", ",",
                          "v1"], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["k1", "k2", "v1", "v1"], out
    print("redis-cli --eval: ok")


def check_exporter(port, tmp):
    exporter = shutil.which("prometheus-redis-exporter")
    if not exporter:
        print("prometheus-redis-exporter: not installed, skipped")
        return
    script = os.path.join(tmp, "metrics.lua")
    with open(script, "w") as f:
        # The exporter runs it after the key-group pass has SELECTed
        # another database (redis-server answers alike): no keys here.
        f.write("local pong = redis.call('PING')\n"
                "return {'pong', pong['ok'] == 'PONG' and '1' or '0', 'answer', '42'}\n")
    r = redis.Redis(port=port)
    for i in range(5):
        r.set("user:%d" % i, "x" * 10)
    for i in range(3):
        r.set("session:%d" % i, "y")
    web = free_port()
    log = open(os.path.join(tmp, "exporter.log"), "w")
    p = subprocess.Popen([exporter, "-redis.addr", "redis://127.0.0.1:%d" % port,
                          "-web.listen-address", "127.0.0.1:%d" % web, "-script", script,
                          "-check-key-groups", "^(user):,^(session):"],
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        url = "http://127.0.0.1:%d/metrics" % web
        wait_for(lambda: urllib.request.urlopen(url, timeout=2).status == 200, "the exporter")
        text = ""
        for _ in range(2):  # two scrapes: the second runs the scripts by EVALSHA or EVAL again
            text = urllib.request.urlopen(url, timeout=10).read().decode()
        lines = [l for l in text.splitlines() if not l.startswith("#")]

        def value(prefix):
            hits = [l for l in lines if l.startswith(prefix)]
            assert hits, "no %s in the exporter's metrics" % prefix
            return float(hits[0].split()[-1])

        assert value("redis_up") == 1
        assert value('redis_script_values{key="pong"}') == 1
        assert value('redis_script_values{key="answer"}') == 42
        assert value('redis_key_group_count{db="db0",key_group="user"}') == 5
        assert value('redis_key_group_count{db="db0",key_group="session"}') == 3
        assert value("redis_last_key_groups_scrape_duration_milliseconds") >= 0
        errors = [l for l in lines if l.startswith("redis_exporter_last_scrape_error")]
        assert errors and all(l.split()[-1] == "0" for l in errors), errors
        print("prometheus-redis-exporter --script, --check-key-groups: ok")
    finally:
        p.terminate()
        p.wait(timeout=10)
        log.close()


def main():
    shmkvd = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="shmkv-clients-")
    port = free_port()
    log = open(os.path.join(tmp, "shmkvd.log"), "w")
    d = subprocess.Popen([shmkvd, "--port", str(port), "--bind", "127.0.0.1", "--dir",
                          os.path.join(tmp, "data"), "--unixsocket",
                          os.path.join(tmp, "shmkv.sock")],
                         stdout=log, stderr=subprocess.STDOUT)
    ok = False
    try:
        r = redis.Redis(port=port)
        wait_for(r.ping, "shmkvd")
        check_lock(r)
        check_cli_eval(port, tmp)
        check_exporter(port, tmp)
        ok = True
    finally:
        d.send_signal(signal.SIGTERM)
        try:
            d.wait(timeout=20)
        except subprocess.TimeoutExpired:
            d.kill()
            d.wait()
        log.close()
        if ok:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("left for a look: " + tmp)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
