"""One reader process of bench/bindings_bench.sh:

    bench_reader.py --sock PATH --mode shm|plain --keys N --hot H --ops M --seed S

GETs of keys key:<12-digit index> (bench/shm_bench.c's) (uniform over the first H keys when
H > 0, else over all N), through shmkv.Redis (shm) or redis-py over the
Unix socket (plain), one at a time. Prints one line:
ops= p50_ns= p99_ns= secs= clock_ns= hits=
"""
import argparse
import sys
import time

import redis

import shmkv


def keys_for(n, hot, ops, seed):
    """The key sequence, made before timing: xorshift64 over the range."""
    span = hot if hot > 0 else n
    x = seed or 88172645463325252
    out = []
    for _ in range(ops):
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        out.append(b"key:%012d" % (x % span))
    return out


def clock_cost(clock):
    samples = []
    for _ in range(10001):
        a = clock()
        b = clock()
        samples.append(b - a)
    samples.sort()
    return samples[len(samples) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sock", required=True)
    ap.add_argument("--mode", choices=("shm", "plain"), required=True)
    ap.add_argument("--keys", type=int, required=True)
    ap.add_argument("--hot", type=int, default=0)
    ap.add_argument("--ops", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    if a.mode == "shm":
        client = shmkv.Redis(unix_socket_path=a.sock)
    else:
        client = redis.Redis(unix_socket_path=a.sock)
    get = client.get
    warm = keys_for(a.keys, a.hot, max(a.ops // 10, 1), a.seed + 1)
    seq = keys_for(a.keys, a.hot, a.ops, a.seed)
    for k in warm:
        get(k)
    hits0 = client.shm_stats()["hits"] if a.mode == "shm" else 0
    clock = time.perf_counter_ns
    lat = [0] * a.ops
    bad = 0
    start = clock()
    for i, k in enumerate(seq):
        t0 = clock()
        v = get(k)
        lat[i] = clock() - t0
        if v is None or len(v) != 100:
            bad += 1
    secs = (clock() - start) / 1e9
    hits = client.shm_stats()["hits"] - hits0 if a.mode == "shm" else 0
    lat.sort()
    print(f"ops={a.ops} p50_ns={lat[a.ops // 2]} p99_ns={lat[a.ops * 99 // 100]} "
          f"secs={secs:.3f} clock_ns={clock_cost(clock)} hits={hits}")
    if bad:
        print(f"bench_reader: {bad} GETs returned no 100-byte value", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
