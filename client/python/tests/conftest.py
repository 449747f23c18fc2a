"""A real shmkvd for the tests: SHMKVD names the binary; each test module
gets its own daemon in a temp folder, on its Unix socket and a free
loopback port, stopped by its PID at the end."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest
import redis


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, binary):
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix="shmkv-py-")
        self.sock = os.path.join(self.dir, "shmkv.sock")
        self.port = _free_port()
        self.proc = None

    def start(self):
        log = open(os.path.join(self.dir, "server.log"), "a")
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", os.path.join(self.dir, "data"), "--unixsocket", self.sock,
             "--save", ""],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"shmkvd exited: {self.proc.returncode}")
            try:
                if redis.Redis(unix_socket_path=self.sock).ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("shmkvd did not answer")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def destroy(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def daemon():
    binary = os.environ.get("SHMKVD")
    if not binary:
        pytest.skip("SHMKVD (the shmkvd binary) is not set")
    d = Daemon(binary)
    d.start()
    yield d
    d.destroy()
