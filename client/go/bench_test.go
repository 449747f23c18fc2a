package shmkv

import "testing"

// The cost of one call, with test.sh's environment:
// go test -run XXX -bench . -benchtime 100000x
func BenchmarkGet(b *testing.B) {
	p := plain(b, daemon.Sock)
	must(b, p, "SET", "bench:k", string(make([]byte, 100)))
	c := open(b, daemon.Sock, nil)
	c.Get("bench:k")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Get("bench:k"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDoGet(b *testing.B) {
	p := plain(b, daemon.Sock)
	must(b, p, "SET", "bench:k", string(make([]byte, 100)))
	c := open(b, daemon.Sock, nil)
	c.Get("bench:k")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Do("GET", "bench:k"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMGet10(b *testing.B) {
	p := plain(b, daemon.Sock)
	must(b, p, "SET", "bench:k", string(make([]byte, 100)))
	c := open(b, daemon.Sock, nil)
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = "bench:k"
	}
	c.MGet(keys...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.MGet(keys...); err != nil {
			b.Fatal(err)
		}
	}
}
