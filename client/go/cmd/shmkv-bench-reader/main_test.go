package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"shmkv/internal/resp"
	"shmkv/internal/testd"
)

var line = regexp.MustCompile(`^ops=(\d+) p50_ns=(\d+) p99_ns=(\d+) secs=[0-9.]+ clock_ns=(\d+) hits=(\d+)\n$`)

// loadKeys writes n keys of 100 bytes, pipelined.
func loadKeys(t *testing.T, sock string, n int) {
	p, err := resp.Dial(sock, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	val := strings.Repeat("v", 100)
	for i := 0; i < n; i++ {
		if err := p.Send("SET", key(uint64(i)), val); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if v, err := p.Receive(); err != nil || v != "OK" {
			t.Fatalf("SET: %v %v", v, err)
		}
	}
}

func trial(t *testing.T, args ...string) []string {
	t.Helper()
	var out, errb bytes.Buffer
	if rc := run(args, &out, &errb); rc != 0 {
		t.Fatalf("%v: exit %d: %s", args, rc, errb.String())
	}
	m := line.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("%v: bad output %q", args, out.String())
	}
	return m
}

func TestReader(t *testing.T) {
	if testd.Bin() == "" {
		t.Skip("SHMKVD is not set (run client/go/test.sh BUILD_DIR)")
	}
	d, err := testd.Start(testd.Bin())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	loadKeys(t, d.Sock, 2000)
	for _, hot := range []string{"0", "100"} {
		m := trial(t, "--sock", d.Sock, "--mode", "shm", "--keys", "2000", "--hot", hot,
			"--ops", "5000", "--seed", "7")
		if hits, _ := strconv.Atoi(m[5]); hits == 0 {
			t.Fatalf("shm mode: no local hits: %s", m[0])
		}
		m = trial(t, "--sock", d.Sock, "--mode", "plain", "--keys", "2000", "--hot", hot,
			"--ops", "2000", "--seed", "7")
		if m[5] != "0" {
			t.Fatalf("plain mode counted hits: %s", m[0])
		}
	}
	// A key that is not loaded fails the run.
	var out, errb bytes.Buffer
	if rc := run([]string{"--sock", d.Sock, "--mode", "shm", "--keys", "3000", "--ops", "3000"},
		&out, &errb); rc == 0 {
		t.Fatal("a run over absent keys succeeded")
	}
}

// The plain mode against redis-server, as the harness runs it.
func TestReaderRedisServer(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "r.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "",
		"--daemonize", "no", "--dir", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := resp.Dial(sock, time.Second); err == nil {
			_, err = c.Do("PING")
			c.Close()
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not answer PING within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	loadKeys(t, sock, 500)
	trial(t, "--sock", sock, "--mode", "plain", "--keys", "500", "--ops", "1000", "--seed", "3")
}
