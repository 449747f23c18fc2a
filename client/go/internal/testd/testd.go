// Package testd starts and stops a real shmkvd for the tests: in a
// temporary directory, listening on a Unix socket only, with every wait
// bounded.
package testd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"shmkv/internal/resp"
)

// Daemon is one shmkvd process (restartable on the same directory).
type Daemon struct {
	Bin  string // the shmkvd binary
	Dir  string // its temporary directory (data, socket, log)
	Sock string // its Unix socket
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

// Bin is the shmkvd the tests run, from $SHMKVD (test.sh sets it).
func Bin() string { return os.Getenv("SHMKVD") }

// Start runs bin in a new temporary directory with extra arguments (any
// redis.conf directive as --name value) and waits until it answers PING.
func Start(bin string, extra ...string) (*Daemon, error) {
	dir, err := os.MkdirTemp("", "shmkv-go-")
	if err != nil {
		return nil, err
	}
	d := &Daemon{Bin: bin, Dir: dir, Sock: filepath.Join(dir, "shmkv.sock")}
	// Port 0: no TCP listener at all, so no port can clash.
	d.args = append([]string{"--port", "0", "--dir", filepath.Join(dir, "data"),
		"--unixsocket", d.Sock, "--save", "", "--shm-cache-size", "64mb"}, extra...)
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := d.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return d, nil
}

func (d *Daemon) start() error {
	log, err := os.OpenFile(filepath.Join(d.Dir, "shmkvd.log"),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	d.cmd = exec.Command(d.Bin, d.args...)
	d.cmd.Stdout, d.cmd.Stderr = log, log
	// A test binary killed by its timeout still stops its daemon.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := d.cmd.Start(); err != nil {
		return err
	}
	d.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) {
		c.Wait()
		close(done)
	}(d.cmd, d.done)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-d.done:
			return fmt.Errorf("shmkvd exited at start; log: %s", d.Log())
		default:
		}
		if c, err := resp.Dial(d.Sock, time.Second); err == nil {
			_, err = c.Do("PING")
			c.Close()
			var re resp.Error // NOAUTH: the daemon is up, and wants a password
			if err == nil || errors.As(err, &re) {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.kill()
	return errors.New("shmkvd did not answer PING within 15 s")
}

// Log returns the end of the daemon's log, for failure messages.
func (d *Daemon) Log() string {
	b, _ := os.ReadFile(filepath.Join(d.Dir, "shmkvd.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Term stops the daemon with SIGTERM (a clean shutdown), waiting at most
// 15 s before it kills it.
func (d *Daemon) Term() error {
	if d.cmd == nil {
		return nil
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		d.cmd = nil
		return nil
	case <-time.After(15 * time.Second):
		d.kill()
		return errors.New("shmkvd did not exit within 15 s of SIGTERM")
	}
}

func (d *Daemon) kill() {
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Kill()
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
	}
	d.cmd = nil
}

// Restart stops the daemon with SIGTERM and starts it again on the same
// directory and socket.
func (d *Daemon) Restart() error {
	if err := d.Term(); err != nil {
		return err
	}
	return d.start()
}

// Stop stops the daemon and removes its directory, and the write-back
// journal folder its data names (under /dev/shm; a clean shutdown removes
// it, a killed daemon leaves it).
func (d *Daemon) Stop() error {
	err := d.Term()
	if b, rerr := os.ReadFile(filepath.Join(d.Dir, "data", "journal-shm")); rerr == nil {
		j := strings.TrimSpace(string(b))
		if strings.HasPrefix(filepath.Base(j), "shmkv-journal-") {
			os.RemoveAll(j)
		}
	}
	os.RemoveAll(d.Dir)
	return err
}
