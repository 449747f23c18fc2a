// Command shmkv-bench-reader times GETs of pre-loaded keys, through the
// binding's shared-memory path or through a plain RESP client:
//
//	shmkv-bench-reader --sock PATH --mode shm|plain --keys N --hot H --ops M --seed S
//
// Keys are "key:" and the index zero-padded to 12 digits (bench/shm_bench.c's);
// the harness loads them (100-byte values) beforehand. It prints one line:
//
//	ops=M p50_ns=X p99_ns=Y secs=T clock_ns=C hits=K
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
	_ "unsafe" // go:linkname

	"shmkv"
	"shmkv/internal/resp"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// xorshift64* : a fixed-seed generator of our own, so every language's
// reader can draw the same kind of sequence.
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = rng(x)
	return x * 2685821657736338717
}

func key(i uint64) string { return fmt.Sprintf("key:%012d", i) }

// getter is one GET: the value, or an error (absent keys included).
type getter func(string) ([]byte, error)

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shmkv-bench-reader", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("sock", "", "the daemon's Unix socket")
	mode := fs.String("mode", "shm", "shm (the binding) or plain (a RESP client)")
	nkeys := fs.Uint64("keys", 0, "keys loaded: key:000000000000 .. N-1")
	hot := fs.Uint64("hot", 0, "draw from the first H keys only (0: all N)")
	ops := fs.Int("ops", 0, "timed GETs")
	seed := fs.Uint64("seed", 1, "seed of the key sequence")
	vlen := fs.Int("value-size", 100, "the length every value must have")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *sock == "" || *nkeys == 0 || *ops <= 0 || (*mode != "shm" && *mode != "plain") {
		fmt.Fprintln(stderr, "usage: shmkv-bench-reader --sock PATH --mode shm|plain --keys N --hot H --ops M --seed S")
		return 2
	}
	span := *nkeys
	if *hot > 0 && *hot < span {
		span = *hot
	}

	// The whole key sequence (warm-up, then timed) exists before timing:
	// formatted outright when shorter than the key range, else as indexes
	// into the range formatted once.
	warm := *ops / 10
	total := warm + *ops
	r := rng(*seed*0x9E3779B97F4A7C15 | 1)
	seq := make([]string, total)
	if uint64(total) <= span {
		for i := range seq {
			seq[i] = key(r.next() % span)
		}
	} else {
		table := make([]string, span)
		for i := range table {
			table[i] = key(uint64(i))
		}
		for i := range seq {
			seq[i] = table[r.next()%span]
		}
	}

	var get getter
	hits := func() uint64 { return 0 }
	switch *mode {
	case "shm":
		c, err := shmkv.Open(*sock, nil)
		if err != nil {
			fmt.Fprintln(stderr, "shmkv-bench-reader:", err)
			return 1
		}
		defer c.Close()
		if e := c.CacheError(); e != "" {
			fmt.Fprintln(stderr, "shmkv-bench-reader: warning: no shared-memory cache:", e)
		}
		get = c.Get // the call a user makes
		hits = func() uint64 { return c.Stats().Hits }
	case "plain":
		p, err := resp.Dial(*sock, 0)
		if err != nil {
			fmt.Fprintln(stderr, "shmkv-bench-reader:", err)
			return 1
		}
		defer p.Close()
		get = func(k string) ([]byte, error) {
			v, err := p.Get(k)
			if err == nil && v == nil {
				err = errors.New("absent")
			}
			return v, err
		}
	}

	check := func(k string, v []byte, err error) bool {
		if err != nil || len(v) != *vlen {
			fmt.Fprintf(stderr, "shmkv-bench-reader: GET %s: %d bytes, %v\n", k, len(v), err)
			return false
		}
		return true
	}
	for _, k := range seq[:warm] {
		if v, err := get(k); !check(k, v, err) {
			return 1
		}
	}

	lat := make([]int64, *ops)
	h0 := hits()
	start := time.Now()
	for i, k := range seq[warm:] {
		t0 := nanotime()
		v, err := get(k)
		lat[i] = nanotime() - t0
		if !check(k, v, err) {
			return 1
		}
	}
	secs := time.Since(start).Seconds()
	h := hits() - h0

	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Fprintf(stdout, "ops=%d p50_ns=%d p99_ns=%d secs=%.3f clock_ns=%d hits=%d\n",
		*ops, lat[len(lat)/2], lat[len(lat)*99/100], secs, clockCost(), h)
	return 0
}

// nanotime is the runtime's monotonic clock: time.Now reads the wall
// clock too, which would double what timing adds to each GET.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// clockCost is the median cost, in ns, of one pair of clock reads: the
// part of each timed GET that is the timing itself.
func clockCost() int64 {
	const pairs, rounds = 1000, 51
	costs := make([]int64, rounds)
	var sink int64
	for r := range costs {
		start := time.Now()
		for i := 0; i < pairs; i++ {
			t0 := nanotime()
			sink += nanotime() - t0
		}
		costs[r] = int64(time.Since(start)) / pairs
	}
	if sink < 0 {
		fmt.Fprint(io.Discard, sink)
	}
	sort.Slice(costs, func(i, j int) bool { return costs[i] < costs[j] })
	return costs[rounds/2]
}
