#!/usr/bin/python3
"""sentinel_failover — Redis Sentinel fails a shmkvd primary over.

Three shmkvd (argv[1]): a primary and two replicas, each started from a
config file of its own (Sentinel rewrites them), and three of Debian's
redis-sentinel watching the primary with a quorum of 2. A writer, through
redis-py's Sentinel client, SETs numbered keys and asks WAIT 1 after each;
a write WAIT says a replica has is "acknowledged". The primary is killed
with SIGKILL under that load. Then:

* Sentinel promotes one replica, and the other follows it;
* the writer, asking Sentinel again, goes on writing to the new primary;
* the old primary, started again on its folder and file, is turned into a
  replica of the new one by Sentinel, and catches up;
* every acknowledged write is on the new primary, key by key, and on both
  replicas once WAIT 2 says they have all.

Everything listens on loopback ports of its own in one temporary folder;
every process is stopped by its PID and the folder removed.

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

import redis
from redis.sentinel import Sentinel

MASTER = "mymaster"
from t_ports import free_port


def wait_for(check, what, seconds=30):
    end = time.time() + seconds
    last = None
    while time.time() < end:
        try:
            if check():
                return
        except Exception as e:  # a server restarting, a sentinel still learning
            last = e
        time.sleep(0.1)
    raise RuntimeError("timed out waiting for %s (last error: %s)" % (what, last))


class Procs:
    def __init__(self, top):
        self.top = top
        self.procs = {}

    def start(self, name, argv):
        log = open(os.path.join(self.top, name + ".log"), "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                            cwd=self.top)
        log.close()

    def kill(self, name, sig=signal.SIGTERM):
        p = self.procs.pop(name, None)
        if p and p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def stop_all(self):
        for name in list(self.procs):
            self.kill(name)


def shmkvd_conf(top, name, port, primary_port):
    d = os.path.join(top, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "shmkvd.conf")
    with open(path, "w") as f:
        f.write("port %d\nbind 127.0.0.1\ndir %s/data\nshm-cache-size 0\n"
                "repl-ping-replica-period 1\nrepl-diskless-sync-delay 0\n" % (port, d))
        if primary_port:
            f.write("replicaof 127.0.0.1 %d\n" % primary_port)
    return path


def sentinel_conf(top, i, port, primary_port):
    path = os.path.join(top, "sentinel%d.conf" % i)
    # Two seconds of silence before a server counts as down: with one, a
    # sentinel sometimes failed the new primary over again, on two CPUs
    # shared by three servers, three sentinels and the writer.
    with open(path, "w") as f:
        f.write("port %d\nbind 127.0.0.1\ndir %s\n"
                "sentinel monitor %s 127.0.0.1 %d 2\n"
                "sentinel down-after-milliseconds %s 2000\n"
                "sentinel failover-timeout %s 10000\n"
                "sentinel parallel-syncs %s 1\n"
                % (port, top, MASTER, primary_port, MASTER, MASTER, MASTER))
    return path


class Writer(threading.Thread):
    """SETs w:<n> = n through Sentinel's current primary; n is acknowledged
    when WAIT 1 says a replica has it."""

    def __init__(self, sentinel):
        super().__init__(daemon=True)
        self.sentinel = sentinel
        self.acked = []
        self.errors = 0
        self.stop = threading.Event()

    def run(self):
        n = 0
        client = self.sentinel.master_for(MASTER, socket_timeout=0.5, socket_connect_timeout=0.5)
        while not self.stop.is_set():
            n += 1
            try:
                client.set("w:%d" % n, n)
                if client.execute_command("WAIT", 1, 200) >= 1:
                    self.acked.append(n)
            except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError,
                    redis.ResponseError):
                self.errors += 1
                time.sleep(0.05)  # the client asks Sentinel again at the next command


def role(port):
    return redis.Redis(port=port, socket_timeout=1).execute_command("ROLE")


def main():
    shmkvd = sys.argv[1]
    top = tempfile.mkdtemp(prefix="shmkv-sentinel-")
    procs = Procs(top)
    ok = False
    try:
        ports = [free_port() for _ in range(3)]
        confs = [shmkvd_conf(top, "s%d" % i, ports[i], ports[0] if i else 0) for i in range(3)]
        for i in range(3):
            procs.start("s%d" % i, [shmkvd, confs[i]])
        for p in ports:
            wait_for(lambda p=p: redis.Redis(port=p).ping(), "shmkvd on %d" % p)
        prim = redis.Redis(port=ports[0])
        wait_for(lambda: prim.info("replication")["connected_slaves"] == 2
                 and all(prim.info("replication")["slave%d" % i]["state"] == "online"
                         for i in range(2)), "both replicas online")
        sports = [free_port() for _ in range(3)]
        for i in range(3):
            procs.start("sentinel%d" % i,
                        ["redis-sentinel", sentinel_conf(top, i, sports[i], ports[0])])
        for sp in sports:
            s = redis.Redis(port=sp, decode_responses=True)
            wait_for(lambda s=s: len(s.execute_command("SENTINEL", "REPLICAS", MASTER)) == 2
                     and len(s.execute_command("SENTINEL", "SENTINELS", MASTER)) == 2,
                     "sentinel %d to know the replicas and the other sentinels" % s.connection_pool.connection_kwargs["port"])
        sentinel = Sentinel([("127.0.0.1", sp) for sp in sports], socket_timeout=0.5)
        assert sentinel.discover_master(MASTER) == ("127.0.0.1", ports[0])

        writer = Writer(sentinel)
        writer.start()
        wait_for(lambda: len(writer.acked) >= 200, "200 acknowledged writes")
        before = len(writer.acked)
        procs.kill("s0", signal.SIGKILL)
        wait_for(lambda: sentinel.discover_master(MASTER)[1] != ports[0],
                 "Sentinel to promote a replica", 60)
        new = sentinel.discover_master(MASTER)[1]
        other = [p for p in ports[1:] if p != new][0]
        print("sentinel_failover: shmkvd on %d promoted, %d acknowledged writes before the kill"
              % (new, before))
        wait_for(lambda: role(new)[0] == b"master", "the promoted replica to say master")
        wait_for(lambda: role(other)[0] == b"slave" and role(other)[2] == new
                 and role(other)[3] == b"connected", "the other replica to follow it", 60)
        wait_for(lambda: len(writer.acked) >= before + 200, "writes on the new primary", 60)

        # The old primary comes back, on its folder and its file: Sentinel
        # makes it a replica of the new one.
        procs.start("s0", [shmkvd, confs[0]])
        wait_for(lambda: role(ports[0])[0] == b"slave" and role(ports[0])[2] == new
                 and role(ports[0])[3] == b"connected",
                 "the old primary to come back as a replica", 90)
        writer.stop.set()
        writer.join(10)
        np = redis.Redis(port=new)
        assert np.execute_command("WAIT", 2, 20000) == 2, "the replicas did not catch up"
        acked = writer.acked
        for port in (new, other, ports[0]):
            r = redis.Redis(port=port)
            pipe = r.pipeline(transaction=False)
            for n in acked:
                pipe.get("w:%d" % n)
            got = pipe.execute()
            lost = [n for n, v in zip(acked, got) if v != str(n).encode()]
            assert not lost, "port %d lost %d acknowledged writes, the first %s" % (
                port, len(lost), lost[:5])
        print("sentinel_failover: %d acknowledged writes, none lost on the three servers; "
              "%d errors while failing over" % (len(acked), writer.errors))
        ok = True
    finally:
        procs.stop_all()
        if not ok:  # what each server said, for the failure's report
            for name in sorted(os.listdir(top)):
                if name.endswith(".log"):
                    with open(os.path.join(top, name), errors="replace") as f:
                        lines = f.readlines()[-15:]
                    print("--- %s (last lines)\n%s" % (name, "".join(lines)))
        if ok or not os.environ.get("SHMKV_TEST_KEEP"):
            shutil.rmtree(top, ignore_errors=True)
        else:
            print("sentinel_failover: kept " + top)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
