"""The soak (run by bench/soak.sh): a shmkvd under mixed load for a long
time, killed and restarted at random moments, while a checker records
every acknowledged write and every shared-memory read.

    soak.py SHMKVD WORKDIR MINUTES OUT [kills]

(kills: every chaos event is a kill -9, every 1.5 to 4 s, for the kill
cycles under each fsync policy.)

* Writers (2 processes) SET their own 1,000 keys each to values carrying
  the key's sequence number and a CRC32, over the Unix socket, and record
  each sequence number once its OK came back (acknowledged).
* Readers (2 processes) GET those keys through shmkv.Redis (shared memory
  when cached): a value whose CRC does not match is a torn read, and a
  key's sequence number going down within one run of the daemon is a read
  that went backwards.
* redis-benchmark adds SET, GET, INCR, LPUSH, HSET, SADD and ZADD load on
  other keys.
* The chaos loop, every 3 to 10 s: kill -9 (most of the time) or SIGTERM,
  then a restart; or BGSAVE; or CONFIG SET of a limit; or a full disk for
  two seconds (min-free-disk above the free space: writes get MISCONF,
  reads go on). The first half runs under appendfsync everysec, the second
  under always.
* After every restart, each writer key must hold at least its last
  acknowledged sequence number: anything less is a lost write.
* The daemon's RSS is sampled every 0.5 s.

Prints the figures as Markdown to OUT; exits 1 if anything was lost, torn
or went backwards, or RSS passed its bound.
"""
import multiprocessing as mp
import os
import random
import signal
import subprocess
import sys
import time
import zlib

import redis

import shmkv

KEYS = 1000
WRITERS = 2
READERS = 2
RSS_BOUND_MB = 1024  # the budgets below (64 + 64 + 64 + 2 x 16 MB) and the rest, with room


def value(key, seq):
    body = f"{key}:{seq}:" + "p" * (seq % 97)
    return f"{body}:{zlib.crc32(body.encode()):08x}"


def parse(v):
    """(seq, intact) of a writer's value: soak:W:I:SEQ:PAD:CRC."""
    body, _, crc = v.rpartition(":")
    ok = crc == f"{zlib.crc32(body.encode()):08x}"
    try:
        seq = int(body.split(":")[3])
    except (IndexError, ValueError):
        return -1, False
    return seq, ok


def writer(w, sock, acked, stop, ops):
    rnd = random.Random(w)
    seqs = [0] * KEYS
    r = None
    while not stop.is_set():
        try:
            if r is None:
                r = redis.Redis(unix_socket_path=sock, socket_timeout=5, decode_responses=True)
            i = rnd.randrange(KEYS)
            key = f"soak:{w}:{i}"
            seq = seqs[i] + 1
            if r.set(key, value(key, seq)):
                seqs[i] = seq
                acked[w * KEYS + i] = seq
                ops.value += 1
        except (redis.ConnectionError, redis.TimeoutError, FileNotFoundError, OSError):
            r = None
            time.sleep(0.05)
        except redis.ResponseError:
            time.sleep(0.01)  # MISCONF while the disk reads as full: not acknowledged


def reader(n, sock, epoch, stop, ops, torn, backwards):
    rnd = random.Random(100 + n)
    r = None
    last = {}
    seen_epoch = epoch.value
    while not stop.is_set():
        try:
            if r is None:
                r = shmkv.Redis(unix_socket_path=sock, socket_timeout=5, decode_responses=True)
            e0 = epoch.value
            key = f"soak:{rnd.randrange(WRITERS)}:{rnd.randrange(KEYS)}"
            v = r.get(key)
            if epoch.value != e0:
                continue  # a stop or start in between: which run answered is unknown
            if e0 != seen_epoch:
                last.clear()  # a new run: writes it never acknowledged may be gone
                seen_epoch = e0
            if e0 % 2:
                continue  # odd: between a stop and the next start, old and new runs mix
            ops.value += 1
            if v is None:
                continue
            seq, ok = parse(v)
            if not ok:
                torn.value += 1
                continue
            if seq < last.get(key, 0):
                backwards.value += 1
                print(f"soak: BACKWARDS {key}: {last[key]} then {seq} (run {e0 // 2}, "
                      f"{time.monotonic():.3f})", file=sys.stderr)
            last[key] = seq
        except (redis.ConnectionError, redis.TimeoutError, FileNotFoundError, OSError):
            r = None
            time.sleep(0.05)
        except redis.ResponseError:
            time.sleep(0.01)


class Daemon:
    def __init__(self, binary, work):
        self.binary, self.work = binary, work
        self.sock = os.path.join(work, "shmkv.sock")
        self.proc = None
        self.fsync = "everysec"

    def start(self):
        log = open(os.path.join(self.work, "server.log"), "a")
        self.proc = subprocess.Popen(
            [self.binary, "--port", "0", "--dir", os.path.join(self.work, "data"),
             "--unixsocket", self.sock, "--appendfsync", self.fsync, "--save", "",
             "--shm-cache-size", "64mb", "--overlay-max-memory", "64mb",
             "--block-cache-size", "64mb", "--write-buffer-size", "16mb"],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"shmkvd exited: {self.proc.returncode}")
            try:
                if redis.Redis(unix_socket_path=self.sock, socket_timeout=5).ping():
                    return
            except (redis.ConnectionError, FileNotFoundError, redis.TimeoutError):
                time.sleep(0.05)
        raise RuntimeError("shmkvd did not answer")

    def stop(self, sig):
        self.proc.send_signal(sig)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def rss_mb(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return None


def check_acked(sock, acked):
    """Keys checked and lost: each must hold at least its acknowledged seq."""
    snap = list(acked)
    r = redis.Redis(unix_socket_path=sock, socket_timeout=10, decode_responses=True)
    keys = [f"soak:{w}:{i}" for w in range(WRITERS) for i in range(KEYS)]
    lost = checked = 0
    for at in range(0, len(keys), 500):
        vals = r.mget(keys[at:at + 500])
        for j, v in enumerate(vals):
            want = snap[at + j]
            if want == 0:
                continue
            checked += 1
            seq = parse(v)[0] if v else 0
            if seq < want:
                lost += 1
                print(f"soak: LOST {keys[at + j]}: holds {seq}, {want} was acknowledged",
                      file=sys.stderr)
    return checked, lost


def main():
    binary, work, minutes, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    kills_only = len(sys.argv) > 5 and sys.argv[5] == "kills"
    pace = (1.5, 4) if kills_only else (3, 10)
    d = Daemon(binary, work)
    d.start()
    acked = mp.Array("q", WRITERS * KEYS, lock=False)
    epoch = mp.Value("q", 0, lock=False)
    wops = [mp.Value("q", 0, lock=False) for _ in range(WRITERS)]
    rops = [mp.Value("q", 0, lock=False) for _ in range(READERS)]
    torn = [mp.Value("q", 0, lock=False) for _ in range(READERS)]
    back = [mp.Value("q", 0, lock=False) for _ in range(READERS)]
    stop = mp.Event()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=writer, args=(w, d.sock, acked, stop, wops[w]))
             for w in range(WRITERS)]
    procs += [ctx.Process(target=reader, args=(n, d.sock, epoch, stop, rops[n], torn[n], back[n]))
              for n in range(READERS)]
    for p in procs:
        p.start()
    bench = None
    stats = dict(kill9={"everysec": 0, "always": 0}, sigterm=0, bgsave=0, config=0,
                 fulldisk=0, checks=0, checked=0, lost=0, bench_rounds=0)
    rss = []
    t0 = time.monotonic()
    end = t0 + minutes * 60
    next_event = t0 + random.uniform(*pace)
    rnd = random.Random(7)
    try:
        while time.monotonic() < end:
            if bench is None or bench.poll() is not None:
                stats["bench_rounds"] += bench is not None
                bench = subprocess.Popen(
                    ["redis-benchmark", "-s", d.sock, "-q", "-c", "4", "-n", "200000",
                     "-r", "100000", "-t", "set,get,incr,lpush,hset,sadd,zadd"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            m = d.rss_mb()
            if m:
                rss.append(m)
            time.sleep(0.5)
            if time.monotonic() < next_event:
                continue
            next_event = time.monotonic() + rnd.uniform(*pace)
            d.fsync = "everysec" if time.monotonic() < t0 + minutes * 30 else "always"
            roll = 0.0 if kills_only else rnd.random()
            c = redis.Redis(unix_socket_path=d.sock, socket_timeout=10)
            try:
                if roll < 0.70 or roll >= 0.95:
                    sig = signal.SIGKILL if roll < 0.70 else signal.SIGTERM
                    epoch.value += 1  # odd until the next run answers
                    d.stop(sig)
                    if sig == signal.SIGKILL:
                        stats["kill9"][d.fsync] += 1
                    else:
                        stats["sigterm"] += 1
                    d.start()
                    epoch.value += 1  # even: one run's reads again
                    checked, lost = check_acked(d.sock, acked)
                    stats["checks"] += 1
                    stats["checked"] += checked
                    stats["lost"] += lost
                elif roll < 0.78:
                    c.bgsave()
                    stats["bgsave"] += 1
                elif roll < 0.88:
                    limit = rnd.choice(["normal 0 0 0", "normal 64mb 16mb 10",
                                        "pubsub 16mb 4mb 30", "replica 128mb 32mb 60"])
                    c.config_set("client-output-buffer-limit", limit)
                    c.config_set("client-query-buffer-limit", rnd.choice(["64mb", "1gb"]))
                    stats["config"] += 1
                else:
                    c.config_set("min-free-disk", str(1 << 60))  # the disk reads as full
                    time.sleep(2)
                    c.config_set("min-free-disk", "1gb")
                    stats["fulldisk"] += 1
            except redis.RedisError as e:
                print(f"soak: chaos step: {e}", file=sys.stderr)
    finally:
        stop.set()
        if bench and bench.poll() is None:
            bench.kill()
            bench.wait()
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
        checked, lost = check_acked(d.sock, acked)
        stats["checks"] += 1
        stats["checked"] += checked
        stats["lost"] += lost
        d.stop(signal.SIGTERM)
    secs = time.monotonic() - t0
    tot_torn = sum(t.value for t in torn)
    tot_back = sum(b.value for b in back)
    acked_writes = sum(w.value for w in wops)
    reads = sum(r.value for r in rops)
    ok = stats["lost"] == 0 and tot_torn == 0 and tot_back == 0 and max(rss) < RSS_BOUND_MB
    rows = [
        ("duration", f"{secs / 60:.1f} min"),
        ("acknowledged writes (2 writers, 2,000 keys)", f"{acked_writes}"),
        ("reads through shm (2 readers)", f"{reads}"),
        ("redis-benchmark rounds (200,000 requests each, 7 commands)", f"{stats['bench_rounds']}"),
        ("kill -9 under appendfsync everysec", f"{stats['kill9']['everysec']}"),
        ("kill -9 under appendfsync always", f"{stats['kill9']['always']}"),
        ("SIGTERM restarts", f"{stats['sigterm']}"),
        ("BGSAVE", f"{stats['bgsave']}"),
        ("CONFIG SET of buffer limits", f"{stats['config']}"),
        ("full-disk episodes (min-free-disk above the free space, 2 s)", f"{stats['fulldisk']}"),
        ("checks of every acknowledged key (after each restart, and at the end)",
         f"{stats['checks']}"),
        ("acknowledged values checked", f"{stats['checked']}"),
        ("lost", f"{stats['lost']}"),
        ("torn reads", f"{tot_torn}"),
        ("reads that went backwards", f"{tot_back}"),
        ("RSS min / max (MB), bound", f"{min(rss):.0f} / {max(rss):.0f}, {RSS_BOUND_MB}"),
        ("result", "pass" if ok else "FAIL"),
    ]
    with open(out, "w") as f:
        f.write("| | |\n|---|---:|\n")
        for k, v in rows:
            f.write(f"| {k} | {v} |\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
